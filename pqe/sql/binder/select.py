"""SELECT: FROM, WHERE, GROUP BY / HAVING, windows, QUALIFY, the select list, DISTINCT,
ORDER BY (ALL), and LIMIT / OFFSET / FETCH (WITH TIES, PERCENT)."""

from __future__ import annotations

import decimal
import fractions
import functools
import uuid

import pyarrow as pa
from sqlglot import exp

from ... import types as T
from ...errors import AmbiguousColumnError, BindError, Error, TypeMismatchError, UnsupportedError
from ...kernels.scalars import unnest_column
from ...optimizer.simplify import fold_constant
from ...plan import builder as B
from ...plan import functions as F
from ...plan.expr import ColumnRef, Expr, Literal, SortKey, WindowCall, lit
from ...plan.logical import LogicalPlan, MapBatches, Sort, UserFunction, Window
from ..parser import node_position
from .grouping import find_aggs
from .literals import checked_int
from .qualification import ORDER_ALL, SHOWN_NAME, USER_ALIAS, own_columns
from .scope import Scope, at, positioned
from .windows import find_windows


def _shown_name(item: exp.Expression, target: exp.Expression, name: str, scope: Scope) -> str:
    """The output name of a select item: a column the user did not alias (`SELECT Name`,
    `SELECT *`) is named as its table or subquery spells it (`Name`, as DuckDB names it),
    not by the lower-case key unquoted names are matched with; anything else by `name`."""
    if item.meta.get(SHOWN_NAME):
        return item.meta[SHOWN_NAME]
    if not item.meta.get(USER_ALIAS) and isinstance(target, exp.Coalesce) and all(
            isinstance(c, exp.Column) and c.name == name
            for c in [target.this, *target.expressions]):
        # a USING or NATURAL join's merged key, COALESCE(t.k, u.k) AS k: named as its
        # first table spells it (`USING (Grp)` gave a column grp)
        target = target.this
    if item.meta.get(USER_ALIAS) or not isinstance(target, exp.Column) \
            or not isinstance(target.this, exp.Identifier):
        return name
    try:
        ref = scope.lookup(target.table or None, target.name)
    except Error:
        return name
    f = getattr(ref, "field", None)
    if f is not None and f.name != name and f.name.lower() == name.lower():
        return f.name
    return name


def _is_order_all(order: exp.Order | None) -> exp.Ordered | None:
    if order is None or len(order.expressions) != 1:
        return None
    o = order.expressions[0]
    return o if isinstance(o.this, exp.Var) and o.this.name == ORDER_ALL else None


def _expand_alias_refs(ordered: exp.Ordered, items: list[exp.Expression], scope: Scope,
                       sql: str) -> None:
    """An ORDER BY expression naming a select item's alias (`SELECT a + 1 AS x ... ORDER BY
    -x`): a name no input (or outer) column has, and that exactly one item is aliased to, is a
    copy of that item, as DuckDB reads it. A bare name (`ORDER BY x`) names the output column
    already; a name an input column has stays that column (`SELECT b AS a ... ORDER BY -a`
    sorts on the input a, as DuckDB and PostgreSQL do)."""
    key = ordered.this
    if isinstance(key, (exp.Column, exp.Literal)):
        return
    aliases: dict[str, list[exp.Expression]] = {}
    for it in items:
        if isinstance(it, exp.Alias):
            aliases.setdefault(it.alias, []).append(it.this)
    if not aliases:
        return
    for col in own_columns(key):
        if col.table or col.name not in aliases:
            continue
        try:
            if scope.lookup(None, col.name) is not None:
                continue
        except AmbiguousColumnError:
            continue  # (two input columns: the binder reports it)
        if len(aliases[col.name]) > 1:
            pos = node_position(sql, col)
            raise positioned(AmbiguousColumnError(
                f"column reference '{col.name}' is ambiguous: {len(aliases[col.name])} items "
                f"of the select list are named {col.name}{at(pos)}"), pos)
        col.replace(exp.Paren(this=aliases[col.name][0].copy()))


class SelectMixin:
    def select(self, sel: exp.Select, outer: Scope | None):
        scope = Scope(outer)
        plan = self.from_clause(sel, scope)
        sample = sel.args.get("sample")
        if sample is not None:  # USING SAMPLE: after FROM and its joins, before WHERE
            plan = self.sample(plan, sample)
        where = sel.args.get("where")
        if where is not None:
            pred = self.expr(where.this, scope, clause="WHERE")
            plan = B.filter(plan, pred)

        items = list(sel.expressions)
        having = sel.args.get("having")
        qualify = sel.args.get("qualify")
        order = sel.args.get("order")
        order_all = _is_order_all(order)
        order_items = [] if order is None or order_all is not None else list(order.expressions)
        for o in order_items:
            _expand_alias_refs(o, items, scope, self.sql)
        distinct = sel.args.get("distinct")
        on = distinct.args.get("on") if distinct is not None else None
        on_items = [] if on is None else list(on.expressions if isinstance(on, exp.Tuple) else [on])
        group = sel.args.get("group")
        agg_nodes: list[exp.Expression] = []
        for it in items:
            agg_nodes += find_aggs(it)
        for o in on_items:
            agg_nodes += find_aggs(o)
        for clause in (having, qualify):
            if clause is not None:
                agg_nodes += find_aggs(clause.this)
        for o in order_items:
            agg_nodes += find_aggs(o.this)

        agg_ctx = None
        if group is not None or agg_nodes or having is not None:
            # HAVING alone makes the query grouped too: one group of all rows (PostgreSQL)
            plan, agg_ctx = self.aggregate(plan, scope, group, agg_nodes, items)
            if having is not None:
                pred = self.expr(having.this, scope, agg=agg_ctx, clause="HAVING")
                plan = B.filter(plan, pred)

        # window functions run after GROUP BY / HAVING, before QUALIFY and the SELECT list
        win_nodes: list[exp.Window] = []
        for it in items:
            win_nodes += find_windows(it)
        if qualify is not None:
            win_nodes += find_windows(qualify.this)
        for o in order_items:
            win_nodes += find_windows(o.this)
        for o in on_items:
            win_nodes += find_windows(o)
        if qualify is not None and not win_nodes:
            raise BindError("QUALIFY needs a window function in the SELECT list or the QUALIFY "
                            "clause (use WHERE or HAVING otherwise)")
        if win_nodes:
            plan = self.windows(plan, scope, agg_ctx, win_nodes, sel)
        if qualify is not None:
            pred = self.expr(qualify.this, scope, agg=agg_ctx, clause="QUALIFY")
            plan = B.filter(plan, pred)

        # SELECT list
        if not items:
            raise BindError("the SELECT list is empty: name at least one column")
        bound: list[tuple[Expr, str]] = []
        shown: list[str] = []  # the output names: a column keeps its data's spelling
        unnest_at = self._unnest_item(items, agg_ctx, win_nodes)
        for it in items:
            if isinstance(it, exp.Star) or (isinstance(it, exp.Column) and isinstance(it.this, exp.Star)):
                if sel.args.get("from_") is not None:  # qualify expanded it to nothing
                    raise BindError("the SELECT list is empty after expanding * (no columns "
                                    "are left)")
                raise BindError("SELECT * needs a FROM clause")
            name = it.alias_or_name
            target = it.this if isinstance(it, exp.Alias) else it
            if isinstance(target, exp.Unnest):  # its list; the rows are made below
                name = name if isinstance(it, exp.Alias) else "unnest"
                target = target.expressions[0]
            bound.append((self.expr(target, scope, agg=agg_ctx, clause="SELECT"), name))
            shown.append(_shown_name(it, target, name, scope))

        # ORDER BY: keys may name output columns, or be expressions over the input
        extra: list[tuple[Expr, str]] = []
        keys: list[tuple[exp.Ordered, Expr | int]] = []
        # DISTINCT ON (...): its expressions the same way (positions in the select list and
        # `extra`); the first row of each in the ORDER BY's order (below)
        on_keys = [self._distinct_on_key(o, scope, agg_ctx, bound, extra) for o in on_items]
        if order_all is not None:
            keys = [(order_all, i) for i in range(len(bound))]  # ORDER BY ALL: left to right
        for o in order_items:
            out_names = [n for _, n in bound]
            ref = self._output_index(o.this, out_names, bound)
            if ref is not None:
                keys.append((o, ref))
                continue
            e = self.expr(o.this, scope, agg=agg_ctx, clause="ORDER BY")
            # (not the UNNEST item: its bound expression is the list, its output the elements;
            # `ORDER BY l` beside `unnest(l)` sorted by the elements)
            match = next((i for i, (b, _) in enumerate(bound) if b == e and i != unnest_at),
                         None)
            if match is not None:
                keys.append((o, match))
                continue
            if distinct is not None and not on_items:
                raise BindError("for SELECT DISTINCT, ORDER BY expressions must appear in "
                                "the select list")
            extra.append((e, f"__order{len(extra)}"))
            keys.append((o, len(bound) + len(extra) - 1))

        if unnest_at is not None and on_items:
            raise UnsupportedError("UNNEST with DISTINCT ON is not supported")
        if unnest_at is not None and extra:
            raise UnsupportedError("UNNEST with ORDER BY on an expression that is not in the "
                                   "select list is not supported")
        proj = B.project(plan, [(e, n) for (e, _), n in zip(bound, shown, strict=True)] + extra)
        plan = proj if unnest_at is None else self._unnest(proj, unnest_at, shown)
        if on_items:  # the first row per DISTINCT ON value: row_number() ... = 1
            first = B.window_function(
                "row_number", [], [ColumnRef(plan.schema[i]) for i in on_keys],
                [self._sort_key(o, ColumnRef(plan.schema[i])) for o, i in keys])
            plan = B.window(plan, [first])
            plan = B.filter(plan, B.compare("eq", ColumnRef(plan.schema[-1]), Literal(1, T.INT64)))
        elif distinct is not None:
            plan = B.distinct(plan)
        if keys:
            sort_keys = [self._sort_key(o, ColumnRef(plan.schema[i])) for o, i in keys]
            plan = B.sort(plan, sort_keys)
        plan = self._limit(sel, plan)
        if extra or on_items:
            plan = B.project(plan, [(ColumnRef(f), f.name) for f in plan.schema[: len(bound)]])
        return plan, shown

    def _distinct_on_key(self, node, scope, agg_ctx, bound, extra) -> int:
        """A DISTINCT ON expression's position: a select-list item (by position, output name
        or equal expression), else a hidden column added to `extra`."""
        ref = self._output_index(node, [n for _, n in bound], bound)
        if ref is not None:
            return ref
        e = self.expr(node, scope, agg=agg_ctx, clause="DISTINCT ON")
        match = next((i for i, (b, _) in enumerate(bound + extra) if b == e), None)
        if match is not None:
            return match
        extra.append((e, f"__order{len(extra)}"))
        return len(bound) + len(extra) - 1

    def _unnest_item(self, items, agg_ctx, win_nodes) -> int | None:
        """The position of the select item that is UNNEST(list) (alone or aliased): the only
        form pqe implements, in a SELECT without aggregates or window functions."""
        at = None
        for i, it in enumerate(items):
            target = it.this if isinstance(it, exp.Alias) else it
            if isinstance(target, exp.Unnest):
                if at is not None:
                    raise UnsupportedError("several UNNESTs in one SELECT list are not supported")
                if len(target.expressions) != 1:
                    raise UnsupportedError("UNNEST of several lists is not supported")
                at = i
        if at is not None and (agg_ctx is not None or win_nodes):
            raise UnsupportedError("UNNEST in a SELECT with aggregates or window functions is "
                                   "not supported")
        return at

    def _unnest(self, proj: LogicalPlan, at: int, names: list[str]) -> LogicalPlan:
        """One row per element of column `at`'s list, the other columns repeated (DuckDB's
        UNNEST in the select list): a partition-local MapBatches step
        (kernels.scalars.unnest_column) between the projection and DISTINCT / ORDER BY."""
        lt = proj.schema[at].dtype
        if T.is_null(lt):
            lt = pa.list_(T.INT32)
            proj = B.project(proj, [(B.cast(ColumnRef(f), lt) if i == at else ColumnRef(f), n)
                                    for i, (f, n) in enumerate(zip(proj.schema, names,
                                                                   strict=True))])
        if not F.is_list(lt):
            raise TypeMismatchError(f"UNNEST needs a list, not {T.type_name(lt)}")
        # the function's column names: the select list's (for EXPLAIN), unless two are alike
        inner = names if len(set(names)) == len(names) else [f"c{i}" for i in range(len(names))]
        fields = tuple(B.new_field(inner[i], lt.value_type if i == at else f.dtype)
                       for i, f in enumerate(proj.schema))
        fn = UserFunction(functools.partial(unnest_column, position=at), "unnest",
                          uuid.uuid4().hex)
        node = MapBatches(proj, fn, tuple(inner), fields)
        return B.project(node, [(ColumnRef(f), n) for f, n in zip(fields, names, strict=True)])

    def _order_limit_outer(self, node, plan, names, outer):
        """ORDER BY / LIMIT attached to a parenthesized query or a set operation."""
        order = node.args.get("order")
        if order is not None:
            order_all = _is_order_all(order)
            if order_all is not None:
                keys = [self._sort_key(order_all, ColumnRef(f)) for f in plan.schema]
            else:
                scope = Scope(outer)
                scope.add("", [(n, f) for n, f in zip(names, plan.schema, strict=True)])
                keys = []
                for o in order.expressions:
                    e = self._output_ref(o.this, plan, names)
                    if e is None:
                        e = self.expr(o.this, scope)
                    keys.append(self._sort_key(o, e))
            plan = B.sort(plan, keys)
        plan = self._limit(node, plan)
        return plan, names

    def _output_index(self, node, out_names, bound) -> int | None:
        """ORDER BY 2 / ORDER BY alias -> index into the select list."""
        if isinstance(node, exp.Literal) and not node.is_string:
            try:
                k = int(node.this)
            except ValueError:
                return None
            if not 1 <= k <= len(bound):
                raise BindError(f"ORDER BY position {k} is not in the select list")
            return k - 1
        if isinstance(node, exp.Column) and not node.table:
            hits = [i for i, n in enumerate(out_names) if n == node.name]
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1 and len({bound[i][0] for i in hits}) == 1:
                return hits[0]
            if len(hits) > 1:
                raise AmbiguousColumnError(f"ORDER BY '{node.name}' is ambiguous")
        return None

    def _output_ref(self, node, plan, names) -> Expr | None:
        idx = None
        if isinstance(node, exp.Literal) and not node.is_string:
            idx = int(node.this) - 1
        elif isinstance(node, exp.Column) and not node.table and node.name in names:
            idx = names.index(node.name)
        if idx is None:
            return None
        if not 0 <= idx < len(plan.schema):
            raise BindError(f"ORDER BY position {idx + 1} is not in the select list")
        return ColumnRef(plan.schema[idx])

    def _sort_key(self, o: exp.Ordered, e: Expr) -> SortKey:
        desc = bool(o.args.get("desc"))
        nulls_first = o.args.get("nulls_first")
        if nulls_first is None:
            nulls_first = desc
        return SortKey(e, not desc, bool(nulls_first))

    # ---- LIMIT / OFFSET / FETCH ------------------------------------------------------------

    def _limit(self, node, plan):
        """LIMIT n, LIMIT n PERCENT, OFFSET m, FETCH {FIRST|NEXT} n ROWS {ONLY|WITH TIES}.
        `plan` is the query so far: a Sort when it has an ORDER BY."""
        limit = node.args.get("limit")
        offset = node.args.get("offset")
        if limit is None and offset is None:
            return plan
        skip = self._int_clause(offset.expression if offset is not None else None, "OFFSET") or 0
        percent = ties = False
        what = "LIMIT"
        count = None
        if isinstance(limit, exp.Fetch):
            what = "FETCH"
            count = limit.args.get("count")
            if count is None:
                count = exp.Literal.number(1)  # FETCH FIRST ROW ONLY
        elif limit is not None:
            count = limit.expression
        options = limit.args.get("limit_options") if limit is not None else None
        if options is not None:
            percent = bool(options.args.get("percent"))
            ties = bool(options.args.get("with_ties"))
        if percent and ties:  # (WITH TIES was dropped)
            raise UnsupportedError(f"{what} ... PERCENT WITH TIES is not supported")
        if percent:
            value = self._number_clause(count, f"{what} ... PERCENT")
            if value is not None:
                return self._limit_percent(plan, value, skip, what)
            count = None  # LIMIT NULL PERCENT: no limit
        fetch = self._int_clause(count, what)
        if ties:
            return self._with_ties(plan, fetch, skip)
        if fetch is None and skip == 0:
            return plan

        if isinstance(plan, Sort) and fetch is not None and plan.fetch is None:
            plan = B.sort(plan.input, plan.keys, min(fetch + skip, T.INT64_MAX))
            if skip == 0:
                return plan
        return B.limit(plan, fetch, skip)

    def _ranked(self, plan: LogicalPlan, calls: list[tuple[str, bool]]):
        """`plan` (unsorted) with window columns over its ORDER BY: (fn, ordered) pairs; the
        sort keys (empty without ORDER BY)."""
        keys: tuple[SortKey, ...] = ()
        if isinstance(plan, Sort):
            plan, keys = plan.input, plan.keys
        wcalls = tuple(WindowCall(fn, (), (), keys if ordered else (), None, T.INT64)
                       for fn, ordered in calls)
        fields = tuple(B.new_field(f"__{fn}", T.INT64) for fn, _ in calls)
        return Window(plan, wcalls, fields), fields, keys

    def _finish_ranked(self, filtered: LogicalPlan, width: int, keys) -> LogicalPlan:
        plan = B.sort(filtered, list(keys)) if keys else filtered
        return B.project(plan, [(ColumnRef(f), f.name) for f in plan.schema[:width]])

    def _with_ties(self, plan: LogicalPlan, fetch: int | None, skip: int) -> LogicalPlan:
        """FETCH FIRST n ROWS WITH TIES: the rows after OFFSET m up to position m+n, and every
        row tied with the last of them in the ORDER BY. A row qualifies when its rank (the
        position of its first peer) is at most m+n and its position is past m."""
        if not isinstance(plan, Sort) or plan.fetch is not None:
            raise BindError("FETCH ... WITH TIES needs an ORDER BY")
        if fetch is None:
            return B.limit(plan, None, skip) if skip else plan
        if fetch == 0:
            return B.limit(plan, 0, 0)
        width = len(plan.schema)
        calls = [("rank", True)] + ([("row_number", True)] if skip else [])
        window, fields, keys = self._ranked(plan, calls)
        pred = B.compare("le", ColumnRef(fields[0]), lit(min(fetch + skip, T.INT64_MAX)))
        if skip:
            pred = B.call("and", pred, B.compare("gt", ColumnRef(fields[1]), lit(skip)))
        return self._finish_ranked(B.filter(window, pred), width, keys)

    def _limit_percent(self, plan: LogicalPlan, percent, skip: int, what: str) -> LogicalPlan:
        """LIMIT p PERCENT (DuckDB): floor(p% of all rows); FETCH FIRST p PERCENT ROWS ONLY
        (the SQL standard, Oracle): ceiling(p% of all rows), so a small share of a table
        that has rows is at least one row (it was floor, as for LIMIT: 1 percent of 6 rows
        was none, hunt "ordering"). Taken after OFFSET m."""
        if not 0 <= percent <= 100:
            raise BindError(f"{what} {percent} PERCENT is out of range (0 to 100)")
        width = len(plan.schema)
        window, fields, keys = self._ranked(plan, [("row_number", True), ("count_star", False)])
        rn, cnt = ColumnRef(fields[0]), ColumnRef(fields[1])
        # exactly, p = num / den: the j-th row after OFFSET is kept when j * 100 * den <=
        # cnt * num (floor), or (j - 1) * 100 * den < cnt * num (ceiling), in DECIMAL(38, 0).
        # In DOUBLEs 250 * 64.4 / 100 was 161.00000000000003, whose ceiling kept 162 rows
        # (review). p is exact to 10^-15 percent: past that it is rounded toward fewer rows
        # for the floor and more for the ceiling, so 1e-300 percent of a table is one row
        share = fractions.Fraction(str(percent))
        grain = 10**15
        if share.denominator > grain:
            scaled = share * grain
            share = fractions.Fraction(
                scaled.numerator // scaled.denominator if what == "LIMIT"
                else -(-scaled.numerator // scaled.denominator), grain)
        wide = pa.decimal128(38, 0)
        j = B.call("subtract", rn, lit(skip + (0 if what == "LIMIT" else 1)))
        pred = B.compare(
            "le" if what == "LIMIT" else "lt",
            B.call("multiply", B.cast(j, wide), lit(decimal.Decimal(100 * share.denominator),
                                                    wide)),
            B.call("multiply", B.cast(cnt, wide), lit(decimal.Decimal(share.numerator), wide)))
        if skip:
            pred = B.call("and", B.compare("gt", rn, lit(skip)), pred)
        return self._finish_ranked(B.filter(window, pred), width, keys)

    def _int_clause(self, node, what: str) -> int | None:
        if node is None:
            return None
        e = self.expr(node, Scope(), clause=what)
        e = fold_constant(e) or e  # (`LIMIT 2 * 5`)
        if isinstance(e, Literal) and e.value is None:
            return None
        if isinstance(e, Literal) and isinstance(e.value, decimal.Decimal) \
                and e.value == e.value.to_integral_value() and T.is_decimal(e.dtype) \
                and e.dtype.scale == 0:
            e = Literal(int(e.value), e.dtype)  # an integer beyond BIGINT
        if not (isinstance(e, Literal) and isinstance(e.value, int) and not isinstance(e.value, bool)):
            pos = node_position(self.sql, node)
            raise positioned(BindError(f"{what} must be a constant integer{at(pos)}"), pos)
        if e.value < 0:
            pos = node_position(self.sql, node)
            raise positioned(BindError(f"{what} must not be negative{at(pos)}"), pos)
        return checked_int(e.value, what)

    def _number_clause(self, node, what: str):
        e = self.expr(node, Scope(), clause=what)
        e = fold_constant(e) or e
        if isinstance(e, Literal) and e.value is None:
            return None
        if not (isinstance(e, Literal) and isinstance(e.value, (int, float, decimal.Decimal))
                and not isinstance(e.value, bool)):
            raise BindError(f"{what} must be a constant number")
        return float(e.value)

