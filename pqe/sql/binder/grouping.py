"""GROUP BY (ALL, ROLLUP, CUBE, GROUPING SETS), aggregate calls, and expressions above an
Aggregate (HAVING, QUALIFY, the select list, ORDER BY)."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import replace

from sqlglot import exp

from ... import types as T
from ...errors import AggregateMisuseError, BindError, Error, UnsupportedError
from ...plan import builder as B
from ...plan import functions as F
from ...plan.expr import (
    AggCall,
    ColumnRef,
    Expr,
    Field,
    Literal,
    OuterRef,
    SubqueryExpr,
    column_ids,
    lit,
    transform,
    walk,
)
from ...plan.logical import LogicalPlan, map_expressions, transform_up
from ...plan.udf import AggregateUDF
from ..parser import PQEDialect, node_position
from .qualification import GROUP_ALIAS, shown_sql, user_function_name
from .scope import AggContext, Scope, at, positioned
from ..walk import find

# sqlglot aggregate classes -> pqe aggregate (arguments: `this`, and `expressions` after it),
# derived from the function registry (pqe.plan.functions)
AGGS: dict[type, str] = {getattr(exp, cls): fd.name
                         for cls, fd in F.sqlglot_bindings(F.AGGREGATE).items()}


def is_grouping_call(node: exp.Expression) -> bool:
    return (isinstance(node, exp.Anonymous) and node.name.lower() in ("grouping", "grouping_id")) \
        or type(node).__name__ == "Grouping"


# the user-defined aggregates (lower-case names) of the catalog the statement being bound on
# this thread sees: set by bind_statement, read by is_agg_node (a module-level predicate)
USER_AGGREGATES: ContextVar[frozenset[str]] = ContextVar("pqe_user_aggregates",
                                                         default=frozenset())


def is_agg_node(node: exp.Expression) -> bool:
    if isinstance(node, exp.Filter):
        return is_agg_node(node.this)
    if is_grouping_call(node):
        return True
    if isinstance(node, exp.Anonymous):
        return F.canonical(node.name) in F.AGGREGATE or node.name.lower() in USER_AGGREGATES.get()
    return isinstance(node, exp.AggFunc) or type(node) in AGGS  # LIST(x) is no AggFunc


def _refuse_nested(sql: str, node: exp.Expression, inner: list[exp.Expression]) -> None:
    """An aggregate inside an aggregate's argument: refused at the inner one."""
    if inner:
        pos = node_position(sql, inner[0])
        raise positioned(AggregateMisuseError(
            f"aggregate function calls cannot be nested: {shown_sql(node, 80)}{at(pos)}"), pos)


def find_aggs(node: exp.Expression) -> list[exp.Expression]:
    """Aggregate calls in an expression, not looking into subqueries or inside other aggs."""
    out: list[exp.Expression] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (exp.Subquery, exp.Select, exp.Exists)):
            continue
        if isinstance(n, exp.Window):
            # the window's own function is not a GROUP BY aggregate, but its arguments,
            # PARTITION BY and ORDER BY may hold some: rank() OVER (ORDER BY sum(x))
            func = n.this
            while isinstance(func, (exp.Filter, exp.IgnoreNulls, exp.RespectNulls)):
                func = func.this
            kids = list(func.iter_expressions()) if isinstance(func, exp.Expression) else []
            kids += list(n.args.get("partition_by") or [])
            if n.args.get("order") is not None:
                kids += [o.this for o in n.args["order"].expressions]
            stack.extend(reversed(kids))
            continue
        if is_agg_node(n):
            out.append(n)
            continue
        stack.extend(reversed(list(n.iter_expressions())))
    return out


def subquery_key(node: exp.Expression) -> str | None:
    """The qualified SQL text of an expression holding a subquery (outer parentheses aside),
    by which a GROUP BY key of that form is found again above the aggregate: bound, a
    subquery is a new plan each time, so `a + (SELECT max(x) FROM u)` in the select list
    never equalled the same GROUP BY key, and its column was reported as not grouped.
    None for an expression without a subquery (those are matched by equality)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if not isinstance(node, exp.Expression) or find(node, exp.Query) is None:
        return None
    return node.sql(dialect=PQEDialect)


def map_outer_refs(plan: LogicalPlan, fn: Callable[[OuterRef], Expr | None]) -> LogicalPlan:
    """`plan` with fn applied to every OuterRef, in nested subqueries too (None keeps it)."""
    def on_expr(e: Expr) -> Expr:
        def visit(x: Expr) -> Expr | None:
            if isinstance(x, OuterRef):
                return fn(x)
            if isinstance(x, SubqueryExpr):
                inner = map_outer_refs(x.plan, fn)
                return None if inner is x.plan else replace(x, plan=inner)
            return None
        return transform(e, visit)

    def node(p: LogicalPlan) -> LogicalPlan | None:
        out = map_expressions(p, on_expr)
        return None if out is p else out

    return transform_up(plan, node)


class GroupingMixin:
    def aggregate(self, plan, scope, group, agg_nodes, items=()):
        groups: list[tuple[Expr, Field]] = []
        gitems: list[tuple[Expr, str]] = []
        sets = None
        owners: dict[int, int] = {}
        texts: dict[str, int] = {}
        if group is not None:
            gitems, sets, owners, texts = self._grouping(group, scope, items)
        aitems: list[tuple[AggCall, str]] = []
        positions: dict[int, int] = {}  # id(AST node) -> index into aitems
        for node in agg_nodes:
            if is_grouping_call(node):
                continue
            a = self.agg_call(node, scope)
            refs = [x for arg in a.args for x in walk(arg) if isinstance(x, (ColumnRef, OuterRef))]
            if refs and all(isinstance(x, OuterRef) for x in refs):
                # SQL makes it an aggregate of the outer query (`(SELECT sum(t.x) FROM u)` sums
                # t's rows once); computed per outer row here it gave another answer
                raise UnsupportedError(f"{node.sql(dialect=PQEDialect)[:60]}: an aggregate of "
                                       f"only an outer query's columns inside a subquery is "
                                       f"not supported; compute it in the outer query")
            i = next((k for k, (x, _) in enumerate(aitems) if a == x), None)
            if i is None:
                i = len(aitems)
                aitems.append((a, str(a)))
            positions[id(node)] = i
        if not aitems and (not gitems or (sets is not None and [] in sets)):
            # HAVING without GROUP BY or aggregates still yields one group of all rows;
            # a COUNT(*) nobody reads keeps that row through every layer
            aitems.append((B.aggregate_call("count_star", [], False, None, display="count"), "count(*)"))
        if sets is not None:
            plan, ctx = self._grouping_sets(plan, scope, gitems, aitems, sets)
        else:
            plan = B.aggregate(plan, gitems, aitems)
            groups = [(e, f) for (e, _), f in zip(gitems, plan.group_fields, strict=True)]
            aggs = [(a, f) for (a, _), f in zip(aitems, plan.agg_fields, strict=True)]
            ctx = AggContext(scope, groups, aggs)
        # an aggregate whose argument holds a subquery binds to a new plan each time, so it
        # is found again by its AST node rather than by equality
        ctx.by_node.update({k: ctx.aggs[i][1] for k, i in positions.items()})
        # a select item a key of grouping sets stands for reads that key's column
        ctx.by_node.update({k: ctx.groups[i][1] for k, i in owners.items()})
        # a key holding a subquery is found by its text (the select list, HAVING, ORDER BY)
        ctx.by_text.update(texts)
        return plan, ctx

    def _grouping(self, group: exp.Group, scope: Scope, items=()):
        """GROUP BY items -> unique expressions, the grouping sets (lists of indices into
        them) when ROLLUP / CUBE / GROUPING SETS appear (None for a plain GROUP BY), for
        grouping sets, the select items that stand for a key: id(item's AST node) -> index,
        and the keys holding a subquery by their text (`subquery_key`) -> index (the first
        key of that text).
        GROUP BY ALL groups by every select-list expression without an aggregate (DuckDB).

        With grouping sets a key names a select item (as PostgreSQL's do; DuckDB's by
        position too): by position, or by being written as it (the first one); two items of
        the same expression named apart are two keys (`SELECT 5 AS k, 5 AS k2 ... ROLLUP(k,
        k2)` gives (5, NULL) for the set (k)), and an item named reads its key's column, NULL
        in the sets without it, also a constant (it was the constant in every row)."""
        gitems: list[tuple[Expr, str]] = []
        targets = [it.this if isinstance(it, exp.Alias) else it for it in items]
        aliases = [it.alias if isinstance(it, exp.Alias) else None for it in items]
        expressions = list(group.expressions)
        with_sets = any(isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets))
                        for g in expressions)
        owner_of: list[exp.Expression | None] = []  # per key, the select item it names
        text_of: list[str | None] = []  # per key, its subquery_key

        def index(node) -> int:
            # `(k * 2)` is the key k * 2: written in parentheses inside a set, `GROUPING SETS
            # ((v, (k * 2)), (k * 2))` made two keys, one not owned by the select item (its
            # column was NULL in the first set: a wrong answer)
            while isinstance(node, exp.Paren) and not isinstance(node.this, exp.Literal):
                node = node.this
            target = _position_target(self.sql, node, targets)
            owner = None
            if with_sets:
                named = node.meta.get(GROUP_ALIAS) if target is node else None
                by_alias = [t for t, a in zip(targets, aliases, strict=True)
                            if named is not None and a == named and t == node]
                if len(by_alias) == 1:  # written as the item's alias (ROLLUP(k, k2))
                    owner = by_alias[0]
                else:
                    owner = target if target is not node else next(
                        (t for t in targets if t == node), None)
            node = target
            text = subquery_key(node)
            if text is not None:
                # a subquery binds to a new plan each time: a key written twice (or by
                # position and again in full) is one key by its text
                for i, k in enumerate(text_of):
                    if k == text and owner_of[i] is owner:
                        return i
            e = self.expr(node, scope, clause="GROUP BY")
            for i, (x, _) in enumerate(gitems):
                if x == e and owner_of[i] is owner:
                    return i
            name = node.name if isinstance(node, exp.Column) else str(e)
            gitems.append((e, name))
            owner_of.append(owner)
            text_of.append(text)
            return len(gitems) - 1

        def items_of(node) -> list[int]:
            if isinstance(node, exp.Tuple):
                return [index(x) for x in node.expressions]
            if isinstance(node, exp.Paren):
                return items_of(node.this)
            return [index(node)]

        if group.args.get("all"):
            if expressions:
                raise UnsupportedError("GROUP BY ALL cannot be combined with other GROUP BY items")
            # (a constant select item is no position here: it is grouped by as it is)
            expressions = [_Item(it) for it in targets if not find_aggs(it)]
        def sets_of(g) -> list[list[int]]:
            """The grouping sets of a ROLLUP, CUBE or GROUPING SETS item. Inside GROUPING
            SETS an element may itself be one of these (PostgreSQL): its sets are listed in
            place, `GROUPING SETS ((a), ROLLUP (b))` being (a), (b), (). A ROLLUP's or
            CUBE's elements are expressions or lists of them, as in PostgreSQL."""
            if isinstance(g, exp.Rollup):
                cols = [items_of(x) for x in g.expressions]
                return [sum(cols[:k], []) for k in range(len(cols), -1, -1)]
            if isinstance(g, exp.Cube):
                cols = [items_of(x) for x in g.expressions]
                return [sum((c for k, c in enumerate(cols) if mask >> (len(cols) - 1 - k) & 1), [])
                        for mask in range((1 << len(cols)) - 1, -1, -1)]
            out: list[list[int]] = []
            for x in g.expressions:
                if isinstance(x, (exp.Rollup, exp.Cube, exp.GroupingSets)):
                    out += sets_of(x)
                elif isinstance(x, exp.Tuple) and not x.expressions:
                    out.append([])
                else:
                    out.append(items_of(x))
            return out

        factors: list[list[list[int]]] = []  # cross product of per-item set lists
        has_sets = False
        for g in expressions:
            if isinstance(g, (exp.Rollup, exp.Cube, exp.GroupingSets)):
                has_sets = True
                factors.append(sets_of(g))
            elif isinstance(g, exp.Tuple) and not g.expressions:
                factors.append([[]])  # GROUP BY (): the empty grouping set
            else:
                factors.append([[index(g)]])
        for key in ("rollup", "cube", "grouping_sets"):
            if group.args.get(key):
                raise UnsupportedError(f"GROUP BY {key.upper()} form is not supported")
        texts: dict[str, int] = {}
        for i, k in enumerate(text_of):
            if k is not None:
                texts.setdefault(k, i)
        if not has_sets:
            return gitems, None, {}, texts
        sets: list[list[int]] = [[]]
        for options in factors:
            sets = [a + [i for i in b if i not in a] for a in sets for b in options]
        if group.args.get("all") is False:
            # GROUP BY DISTINCT (PostgreSQL): each grouping set once, sets of the same keys in
            # any order being one (sqlglot reads DISTINCT as all=False; without it a set
            # listed twice gives its groups twice, as PostgreSQL does)
            seen: set[frozenset[int]] = set()
            sets = [x for x in sets if not (frozenset(x) in seen or seen.add(frozenset(x)))]
        owners = {id(o): i for i, o in enumerate(owner_of) if o is not None}
        return gitems, sets, owners, texts

    def _grouping_sets(self, plan, scope, gitems, aitems, sets):
        """One aggregate per grouping set, padded with NULLs for the keys it does not group
        by, tagged with a grouping id (bit k set when key k is not grouped), UNION ALL.

        When one set holds every key (ROLLUP, CUBE) and every aggregate can be combined from
        partial results (`_rollup_base`), that set is aggregated once from the input and the
        others from its groups: the input (TPC-DS Q22: a join of 2.3M rows) is joined and
        aggregated once instead of once per set."""
        n = len(gitems)
        rolled = _rollup_base(plan, gitems, aitems, sets)
        branches = []
        for s_ in sets:
            if rolled is not None:
                node, refs, values = rolled(s_)
            else:
                node = B.aggregate(plan, [gitems[i] for i in s_], aitems)
                refs = {i: ColumnRef(node.group_fields[k]) for k, i in enumerate(s_)}
                values = [ColumnRef(f) for f in node.agg_fields]
            items = []
            for i, (e, name) in enumerate(gitems):
                items.append((refs[i], name) if i in refs else (Literal(None, e.dtype), name))
            gid = sum(1 << (n - 1 - i) for i in range(n) if i not in s_)
            items.append((lit(gid), "grouping_id"))
            items += [(v, name) for v, (_, name) in zip(values, aitems, strict=True)]
            branches.append(B.project(node, items))
        union = B.union_all(branches)
        fields = union.schema
        groups = [(e, f) for (e, _), f in zip(gitems, fields[:n], strict=True)]
        aggs = [(a, f) for (a, _), f in zip(aitems, fields[n + 1:], strict=True)]
        return union, AggContext(scope, groups, aggs, fields[n])

    def agg_call(self, node: exp.Expression, scope: Scope, rec=None) -> AggCall:
        """An aggregate call; arguments bind in `scope` (or through `rec`, for window
        aggregates, whose arguments may hold GROUP BY aggregates: sum(sum(x)) OVER ())."""
        window = rec is not None
        if rec is None:
            rec = lambda n, clause: self.expr(n, scope, clause=clause)  # noqa: E731
        filt = None
        if isinstance(node, exp.Filter):
            filt = rec(node.expression.this, "FILTER")
            node = node.this
        distinct = False
        order: list[exp.Order] = []

        def unwrap(n):
            """`x ORDER BY y` inside the call: the argument, the keys kept aside."""
            if isinstance(n, exp.Order):
                order.append(n)
                return n.this
            return n

        if isinstance(node, exp.Anonymous):
            name = node.name
            shown = node.name
            arg_nodes = [unwrap(a) for a in node.expressions]
            udf = self.catalog.function(name)
            if isinstance(udf, AggregateUDF):
                if order:
                    raise UnsupportedError(f"ORDER BY inside the user-defined aggregate {name} "
                                           f"is not supported")
                if any(isinstance(a, exp.Distinct) for a in arg_nodes):
                    raise UnsupportedError(f"DISTINCT is not supported for the user-defined "
                                           f"aggregate {name}")
                for a in arg_nodes:
                    if not window:
                        _refuse_nested(self.sql, node, find_aggs(a))
                return B.user_aggregate(udf, [rec(a, "aggregate argument") for a in arg_nodes],
                                        False, filt)
            if arg_nodes and isinstance(arg_nodes[0], exp.Distinct):  # bit_xor(DISTINCT x)
                distinct = True
                arg_nodes = list(arg_nodes[0].expressions) + arg_nodes[1:]
        else:
            shown = user_function_name(node, self.sql) or node.sql_name()
            if isinstance(node, exp.ApproxDistinct):
                # answered exactly, as COUNT(DISTINCT x): pqe computes that in two distributed
                # steps (no one task holds every distinct value); an exact count is an
                # approximation of any accuracy
                if node.args.get("accuracy") is not None:
                    raise UnsupportedError(f"{shown} with an accuracy argument is not "
                                           f"supported (it is exact: COUNT(DISTINCT x))")
                node = exp.Count(this=node.this if isinstance(node.this, exp.Distinct)
                                 else exp.Distinct(expressions=[node.this]))
            name = AGGS.get(type(node))
            if name is None:
                raise UnsupportedError(f"aggregate function {shown} is not supported yet")
            this = unwrap(node.this)
            if isinstance(this, exp.Distinct):
                distinct = True
                arg_nodes = list(this.expressions)
            elif isinstance(this, exp.Star):
                if node.args.get("expressions"):  # count(*, x): x was dropped
                    raise BindError(f"{shown}(*) takes no further argument")
                arg_nodes = []
            else:
                arg_nodes = ([this] if this is not None else []) \
                    + [unwrap(a) for a in node.args.get("expressions") or []]
            # the registry's further argument keys, in order (STRING_AGG's separator, ...)
            arg_nodes += [unwrap(node.args[k]) for k in F.AGGREGATE[name].args
                          if k not in ("this", "expressions") and node.args.get(k) is not None]
        key_nodes = [o for ob in order for o in ob.expressions]
        for o in key_nodes:
            item = o.this if isinstance(o, exp.Ordered) else o
            while isinstance(item, exp.Paren):
                item = item.this
            if isinstance(item, (exp.Null, exp.Boolean)) or (
                    isinstance(item, exp.Literal) and item.is_string):
                # `string_agg(b ORDER BY a, '|')` read '|' as a second sort key, a constant,
                # and joined with ',' (DuckDB: "ORDER BY non-integer literal has no effect")
                raise BindError(
                    f"non-integer constant {item.sql(dialect=PQEDialect)[:40]} in the ORDER BY "
                    f"of {shown.upper()}(...): it does not change the order (a separator goes "
                    f"before ORDER BY: string_agg(x, '|' ORDER BY k))")
        if len(order) > 1:
            raise UnsupportedError(f"several ORDER BY inside {shown.upper()}(...) are not supported")
        for a in arg_nodes + [o.this for o in key_nodes]:
            if not window:
                _refuse_nested(self.sql, node, find_aggs(a))
        args = [rec(a, "aggregate argument") for a in arg_nodes]
        keys = [self._sort_key(o, rec(o.this, "ORDER BY inside an aggregate"))
                for o in key_nodes]
        if name == "count" and distinct and len(args) > 1:
            raise UnsupportedError("COUNT(DISTINCT a, b) is not supported")
        return B.aggregate_call(name, args, distinct, filt, display=shown, order_by=keys)

    def _above_aggregate(self, plan: LogicalPlan, agg: AggContext) -> LogicalPlan:
        """A subquery bound in the FROM scope but evaluated above the Aggregate: its outer
        references to GROUP BY columns now read the group's output column; any other column
        of the FROM scope is not available after grouping."""
        grouped = {x.id: f for x, f in agg.groups if isinstance(x, ColumnRef)}
        ungrouped = {f.id for cols in agg.from_scope.tables.values()
                     for fs in cols.values() for f in fs} - grouped.keys()

        def outer(ref: OuterRef) -> Expr | None:
            if ref.id in grouped:
                return OuterRef(grouped[ref.id])
            if ref.id in ungrouped:
                raise AggregateMisuseError(
                    f"column '{ref.field.display}' must appear in the GROUP BY clause or be "
                    f"used in an aggregate function")
            return None

        return map_outer_refs(plan, outer)

    def _post_agg(self, node: exp.Expression, agg: AggContext) -> Expr | None:
        """Above an Aggregate: aggregates and GROUP BY expressions become column references."""
        hit = agg.by_node.get(id(node))
        if hit is not None:  # an aggregate found before, a select item a key stands for
            return ColumnRef(hit)
        if agg.by_text:
            # a GROUP BY key holding a subquery (`a + (SELECT max(x) FROM u)`, `a IN (SELECT
            # ..)`, a correlated one), written again here or named by position or alias
            text = subquery_key(node)
            if text is not None and text in agg.by_text:
                return ColumnRef(agg.groups[agg.by_text[text]][1])
        if is_grouping_call(node):
            return self._grouping_value(node, agg)
        if is_agg_node(node):
            if id(node) in agg.by_node:
                return ColumnRef(agg.by_node[id(node)])
            a = self.agg_call(node, agg.from_scope)
            for x, f in agg.aggs:
                if x == a:
                    return ColumnRef(f)
            raise AggregateMisuseError(f"aggregate {node.sql()} is not available here")
        if isinstance(node, (exp.Subquery, exp.Exists)) or find_aggs(node) or find(node, exp.Window):
            return None
        if isinstance(node, exp.Literal) and agg.grouping_id is None:
            # a constant: when it is a GROUP BY key, its column holds that same constant (with
            # grouping sets, a constant key is read from its column below: NULL in the sets
            # without it, as DuckDB reads it)
            return None
        try:
            e = self.expr(node, agg.from_scope)
        except Error as err:
            # not bindable over the input rows (an unknown function): bound above the
            # aggregate, a column inside it would be reported as not grouped; this error is
            # the one reported then (`_unbound_above`)
            self._failed_above_agg()[id(node)] = (node, err)
            return None
        for x, f in agg.groups:
            if x == e:
                return ColumnRef(f)
        if find(node, exp.Query):
            # a subquery inside (`(select ..) + 1`, `NOT EXISTS (..)`): bound above the
            # aggregate one by one (_above_aggregate), so that its outer references read the
            # group's columns; as a whole it was bound over the rows being grouped, and
            # column_ids does not see the references inside it
            return None
        if not column_ids(e):
            if agg.grouping_id is not None and _compound(node) \
                    and any(not column_ids(x) for x, _ in agg.groups):
                # a constant that may hold a constant key of grouping sets (`k * 2` for `5 AS
                # k`, which sqlglot makes `5 * 2`): its parts are bound one by one, the key
                # reading its column (DuckDB's answer: NULL in the sets without k)
                return None
            return e
        if isinstance(node, exp.Column):
            self._unbound_above(node)
            raise AggregateMisuseError(
                f"column '{node.sql().replace(chr(34), '')}' must appear in the GROUP BY "
                f"clause or be used in an aggregate function")
        return None

    def _failed_above_agg(self) -> dict[int, tuple[exp.Expression, Error]]:
        """id(AST node) -> (node, the error binding it over the input rows raised), for the
        expressions above an aggregate that did not bind there (this statement's)."""
        failed = self.__dict__.get("_pqe_failed_above_agg")
        if failed is None:
            failed = self.__dict__["_pqe_failed_above_agg"] = {}
        return failed

    def _unbound_above(self, node: exp.Expression) -> None:
        """Raise the error of the nearest expression around `node` (a column about to be
        reported as not grouped) that did not bind over the input rows: `no_such_fn(v)` with
        GROUP BY g is an unknown function, as it is without GROUP BY, not "column v must
        appear in the GROUP BY clause" (PostgreSQL and DuckDB say so too)."""
        failed = self._failed_above_agg()
        if not failed:
            return
        parent = node.parent
        while parent is not None:
            hit = failed.get(id(parent))
            if hit is not None and hit[0] is parent:
                raise hit[1]
            parent = parent.parent

    def _grouping_value(self, node: exp.Expression, agg: AggContext) -> Expr:
        """GROUPING(a, b): bit per argument, 1 when that key is not grouped in the row's set."""
        args = node.expressions if isinstance(node, exp.Anonymous) else (
            [node.this] + list(node.expressions) if node.this is not None else list(node.expressions))
        exprs = [g for g, _ in agg.groups]
        out: Expr = lit(0)
        n = len(exprs)
        for k, a in enumerate(args):
            text = subquery_key(a)
            if text is not None and text in agg.by_text:
                pos = agg.by_text[text]  # a key holding a subquery: found by its text
            else:
                e = self.expr(a, agg.from_scope)
                if e not in exprs:
                    raise AggregateMisuseError(
                        f"GROUPING argument {a.sql()} is not a GROUP BY expression")
                pos = exprs.index(e)
            if agg.grouping_id is None:
                continue  # plain GROUP BY: every key is grouped
            bit = B.call("modulo", B.call("divide", ColumnRef(agg.grouping_id), lit(1 << (n - 1 - pos))), lit(2))
            out = B.call("add", out, B.call("multiply", bit, lit(1 << (len(args) - 1 - k))))
        return out


def _compound(node: exp.Expression) -> bool:
    """An expression of parts (an operator, a call, a cast), not one constant (`-5` is one)."""
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return False
    return isinstance(node, (exp.Binary, exp.Unary, exp.Func, exp.Paren, exp.Cast))


class _Item:
    """A select-list item GROUP BY ALL groups by: taken as it is, never as a position."""

    def __init__(self, node: exp.Expression):
        self.node = node


def _position_target(sql: str, node, targets: list[exp.Expression]) -> exp.Expression:
    """A GROUP BY key as written -> the expression it groups by. An integer constant is a
    position in the select list, also inside ROLLUP, CUBE and GROUPING SETS (PostgreSQL,
    DuckDB): `GROUP BY ROLLUP(1, 2)` groups by the first two select items (it grouped by the
    constants 1 and 2, and then refused the select list's columns as not grouped). sqlglot
    expands the positions of a plain GROUP BY, and names of select items anywhere, except
    those of a constant item: it leaves a position there (`SELECT 5 AS k ... GROUP BY
    ROLLUP(k)` comes as ROLLUP(1)), which thus groups by the constant 5."""
    if isinstance(node, _Item):
        return node.node
    neg = isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) \
        and not node.this.is_string
    if not targets or not (neg or (isinstance(node, exp.Literal) and not node.is_string)):
        return node
    text = ("-" if neg else "") + (node.this.this if neg else node.this)
    pos = node_position(sql, node) if sql else None
    if not text.isdigit():
        raise positioned(BindError(f"GROUP BY position {text} is not a position in the select "
                                   f"list (a positive integer){at(pos)}"), pos)
    k = int(text)
    if not 1 <= k <= len(targets):
        raise positioned(BindError(f"GROUP BY position {text} is not in the select list"
                                   f"{at(pos)}"), pos)
    return targets[k - 1]


# aggregates whose value over a group is a combination of their partial results over the
# group's parts (AVG from a SUM and a COUNT)
_ROLLUP_FNS = frozenset({"sum", "count", "count_star", "min", "max", "avg"})


def _rollup_base(plan, gitems, aitems, sets):
    """For grouping sets among which one holds every key: the aggregate of that finest set
    over `plan`, with partial aggregates (AVG as SUM and COUNT), and a function giving for
    each set (node, {key index: column}, [value of each aggregate]) where node is that
    aggregate or an aggregate of its groups (SUM of SUMs and of COUNTs, MIN of MINs, MAX of
    MAXs). None when no set holds every key or an aggregate is not combinable (DISTINCT,
    ordered, user-defined, statistical, ...)."""
    finest = sorted(set().union(*(set(s) for s in sets)))
    if len(sets) < 2 or not any(set(s) == set(finest) for s in sets):
        return None
    for a, _ in aitems:
        if a.fn not in _ROLLUP_FNS or a.distinct or a.order_by or a.udf is not None \
                or not B.avg_rebuildable(a):
            return None
        if a.fn in ("sum", "avg") and not (T.is_numeric(a.args[0].dtype)
                                           or T.is_boolean(a.args[0].dtype)):
            return None
    partial: list[AggCall] = []
    positions: list[list[int]] = []
    for a, _ in aitems:
        parts = ([B.aggregate_call("sum", [a.args[0]], filter=a.filter),
                  B.aggregate_call("count", [a.args[0]], filter=a.filter)]
                 if a.fn == "avg" else [a])
        pos = []
        for p in parts:
            if p not in partial:
                partial.append(p)
            pos.append(partial.index(p))
        positions.append(pos)
    base = B.aggregate(plan, [gitems[i] for i in finest], [(p, str(p)) for p in partial])

    def for_set(s_):
        if set(s_) == set(finest):
            node = base
            refs = {i: ColumnRef(base.group_fields[k]) for k, i in enumerate(finest)}
            state = [ColumnRef(f) for f in base.agg_fields]
        else:
            calls = [(B.aggregate_call(B.combining_fn(p.fn), [ColumnRef(f)]), str(p))
                     for p, f in zip(partial, base.agg_fields, strict=True)]
            group = [(ColumnRef(base.group_fields[finest.index(i)]), gitems[i][1]) for i in s_]
            node = B.aggregate(base, group, calls)
            refs = {i: ColumnRef(node.group_fields[k]) for k, i in enumerate(s_)}
            state = [ColumnRef(f) for f in node.agg_fields]
        values = [B.combined_value(a.fn, a.dtype, [state[i] for i in pos])
                  for (a, _), pos in zip(aitems, positions, strict=True)]
        return node, refs, values

    return for_set
