"""Relations: queries and CTEs, set operations, VALUES, FROM items and joins, and samples."""

from __future__ import annotations

import decimal
import random
from collections import Counter

from sqlglot import exp

from ... import types as T
from ...catalog import unreadable_columns
from ...errors import BindError, TypeMismatchError, UnsupportedError
from ...plan import builder as B
from ...plan.expr import ColumnRef, Expr, Literal, OuterRef, SubqueryExpr, column_ids, lit
from ...plan.logical import (
    CTEScan,
    LogicalPlan,
    RecursiveQuery,
    Sample,
    WithCTE,
    WorkTable,
    walk_plan,
)
from ..parser import SAMPLE_BARE_NUMBER, PQEDialect
from .grouping import is_agg_node
from .qualification import relation_keys, unique_names
from .scope import Scope, View
from .supported import describe_node
from ..walk import find_all, walk as walk_tree


class RelationsMixin:
    # ---- queries -------------------------------------------------------------------------------

    def query(self, node: exp.Expression, outer: Scope | None) -> tuple[LogicalPlan, list[str]]:
        with_ = node.args.get("with_")
        if with_ is not None:
            recursive = bool(with_.args.get("recursive"))
            frame: dict[str, tuple[LogicalPlan, list[str]]] = {}
            once: list[tuple[str, LogicalPlan]] = []  # CTEs computed once (WithCTE)
            refs = Counter(t.name for t in find_all(node, exp.Table) if not t.args.get("db"))
            self.ctes.append(frame)
            try:
                names_seen = [c.alias_or_name for c in with_.expressions]
                twice = next((n for n in names_seen if names_seen.count(n) > 1), None)
                if twice is not None:  # (the last one was read, silently)
                    raise BindError(f"WITH names '{twice}' twice")
                for cte in with_.expressions:
                    name = cte.alias_or_name
                    # each CTE is bound once; every reference re-labels the one plan (or,
                    # when it is computed once, reads it through a CTEScan)
                    if recursive and _self_referencing(cte):
                        frame[name] = self._recursive_cte(cte, outer, frame)
                        continue
                    inside = sum(1 for t in find_all(cte.this, exp.Table)
                                 if t.name == name and not t.args.get("db"))
                    if inside and refs[name] - inside > 1:
                        # (its references then shared the shadowed table's column ids: an
                        # InternalError)
                        raise UnsupportedError(f"WITH query {name} reads the table {name} it "
                                               f"shadows and is read {refs[name] - inside} "
                                               f"times: give the WITH query another name")
                    plan, names = self.query(cte.this, outer)
                    if self._compute_once(cte, plan, refs[name], outer):
                        token = B.fresh_id(name)
                        once.append((token, plan))
                        plan = CTEScan(token, plan.schema)  # the template each reference copies
                    frame[name] = (plan, names)
                plan, names = self._query_body(node, outer)
            finally:
                self.ctes.pop()
            if once:
                plan = WithCTE(plan, tuple(t for t, _ in once), tuple(p for _, p in once))
                plan = B.project(plan, [(ColumnRef(f), n)
                                        for f, n in zip(plan.schema, names, strict=True)])
            return plan, names
        return self._query_body(node, outer)

    def _compute_once(self, cte: exp.CTE, plan: LogicalPlan, refs: int,
                      outer: Scope | None) -> bool:
        """Whether a CTE is computed once and read by each reference (a WithCTE) rather than
        inlined at each reference, where filters and projections push into it: when it says
        AS MATERIALIZED, or when it is read more than once and so large that copies would
        multiply the plan (each CTE joining the previous one to itself doubles it). Only an
        uncorrelated CTE of a query that is not itself a subquery expression."""
        materialized = cte.args.get("materialized")
        # read twice, a CTE calling random() or a user function must give both readers the
        # same rows: inlined, each copy would call it again (DuckDB computes it once)
        volatile = refs > 1 and _is_volatile_plan(plan)
        if materialized is False or outer is not None or _has_outer_refs(plan):
            if volatile:
                raise UnsupportedError(
                    f"WITH query {cte.alias_or_name} calls random() or a user function and "
                    f"is read {refs} times"
                    + (" as NOT MATERIALIZED" if materialized is False else
                       " inside a subquery expression or with outer references")
                    + ": each read would compute other values; read it once or compute it "
                      "in a top-level WITH")
            return False
        if materialized or volatile:
            return True
        return refs > 1 and plan_tree_size(plan) >= COMPUTE_ONCE_NODES

    def _recursive_cte(self, cte: exp.CTE, outer, frame) -> tuple[LogicalPlan, list[str]]:
        """WITH RECURSIVE: a RecursiveQuery node whose step reads the previous iteration's
        rows through a WorkTable; the executor runs the iterations."""
        name = cte.alias_or_name
        body = cte.this
        if not isinstance(body, exp.Union):
            raise UnsupportedError(f"recursive CTE {name} must be <anchor> UNION [ALL] <recursive term>")
        for key, word in (("order", "ORDER BY"), ("limit", "LIMIT"), ("offset", "OFFSET")):
            if body.args.get(key) is not None:
                raise UnsupportedError(f"{word} on the body of recursive CTE {name} "
                                       f"is not supported")
        step_ast = body.expression
        if isinstance(step_ast, exp.Select) and (step_ast.args.get("group") is not None or any(
                is_agg_node(n) and n.find_ancestor(exp.Select) is step_ast and
                n.find_ancestor(exp.Window) is None for n in walk_tree(step_ast))):
            # (PostgreSQL refuses it too: an aggregate over each iteration's rows ran until
            # the iteration limit, 10,000 rounds, before failing)
            raise UnsupportedError(f"an aggregate or GROUP BY in the recursive term of {name} "
                                   f"is not supported")
        distinct = bool(body.args.get("distinct"))
        anchor, names = self.query(body.this, outer)
        if distinct:
            anchor = B.distinct(anchor)
        token = B.fresh_id(name)  # "name#k": unique per query, shown as its name
        work_fields = tuple(B.new_field(n, f.dtype) for n, f in zip(names, anchor.schema, strict=True))
        frame[name] = (WorkTable(token, work_fields, "delta"), names)
        step, _ = self.query(body.expression.copy(), outer)
        if len(step.schema) != len(names):
            raise BindError(f"recursive term of {name} has {len(step.schema)} columns, "
                            f"expected {len(names)}")
        items = []
        for f, want in zip(step.schema, anchor.schema, strict=True):
            common = T.common_type(f.dtype, want.dtype) if f.dtype != want.dtype else want.dtype
            if common is None:
                raise TypeMismatchError(
                    f"recursive term of {name}: column {f.name} is {T.type_name(f.dtype)}, "
                    f"the anchor's is {T.type_name(want.dtype)}")
            narrowed = common != want.dtype and not T.is_text(want.dtype) and not (
                T.is_integer(f.dtype) and T.is_integer(want.dtype)) and not (
                T.is_decimal(want.dtype) and (T.is_integer(f.dtype) or T.is_decimal(f.dtype)
                                             and f.dtype.scale <= want.dtype.scale))
            if narrowed:
                # the step's values would be cut to the anchor's type (`select 1 union all
                # select n * 1.5`: 1.5 -> 2, 4.5 -> 5): refused as PostgreSQL refuses it.
                # Digits that fit (an integer step into an integer anchor, as `n + 1` is
                # BIGINT where the anchor `1` is INTEGER; a DECIMAL of no more decimals) are
                # cast checked: a value past the anchor's type is an error, as in DuckDB
                raise TypeMismatchError(
                    f"recursive term of {name}: column {f.name} is {T.type_name(f.dtype)}, "
                    f"wider than the anchor's {T.type_name(want.dtype)}, whose type the CTE "
                    f"keeps: cast the anchor's column to {T.type_name(common)}")
            items.append((B.cast(ColumnRef(f), want.dtype), f.name))
        step = B.project(step, items)
        if distinct:
            seen = WorkTable(token, tuple(B.new_field(n, f.dtype) for n, f in
                                          zip(names, anchor.schema, strict=True)), "all")
            step = B.set_operation("except", step, seen, all_=False)
        for part in (anchor, step):
            if _has_outer_refs(part):
                raise UnsupportedError(f"recursive CTE {name} refers to a column of an outer "
                                       f"query; this is not supported")
        anchor = B.project(anchor, [(ColumnRef(f), n) for f, n in zip(anchor.schema, names, strict=True)])
        fields = tuple(B.new_field(n, f.dtype) for n, f in zip(names, anchor.schema, strict=True))
        plan = RecursiveQuery(token, anchor, step, fields, distinct, self.MAX_RECURSION)
        return plan, names

    def _query_body(self, node, outer):
        if isinstance(node, exp.Select):
            return self.select(node, outer)
        if isinstance(node, exp.Subquery):
            plan, names = self.query(node.this, outer)
            if node.args.get("sample") is not None:
                plan = self.sample(plan, node.args["sample"])
            return self._order_limit_outer(node, plan, names, outer)
        if isinstance(node, exp.SetOperation):
            return self.set_operation(node, outer)
        if isinstance(node, exp.Values):
            plan = self.values(node, outer)
            names = [f.name for f in plan.schema]
            return self._order_limit_outer(node, plan, names, outer)  # VALUES ... ORDER BY
        raise UnsupportedError(f"{describe_node(node, self.sql)} is not supported as a query")

    def set_operation(self, node: exp.SetOperation, outer):
        left, lnames = self.query(node.this, outer)
        right, _ = self.query(node.expression, outer)
        distinct = node.args.get("distinct", True)
        if isinstance(node, exp.Union):
            plan = B.union_all([left, right])
            if distinct:
                plan = B.distinct(plan)
        else:
            kind = "intersect" if isinstance(node, exp.Intersect) else "except"
            plan = B.set_operation(kind, left, right, all_=not distinct)
        plan = B.project(plan, [(ColumnRef(f), n) for f, n in zip(plan.schema, lnames, strict=True)])
        return self._order_limit_outer(node, plan, lnames, outer)

    def values(self, node: exp.Values, outer) -> LogicalPlan:
        scope = Scope(outer)
        rows = []
        for tup in node.expressions:
            items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
            rows.append([self.expr(e, scope) for e in items])
        width = len(rows[0]) if rows else 0
        alias = node.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None and alias.columns else []
        names += [f"col{i}" for i in range(len(names), width)]  # DuckDB: col0, col1, ...
        return B.values(unique_names(names[:width]), rows)

    # ---- FROM ----------------------------------------------------------------------------------

    def from_clause(self, sel: exp.Select, scope: Scope) -> LogicalPlan:
        from_ = sel.args.get("from_")
        if from_ is None:
            if sel.args.get("joins"):
                raise BindError("JOIN without FROM")
            return B.values(["dummy"], [[lit(0)]])
        return self._joins(self.source(from_.this, scope), sel.args.get("joins") or [], scope)

    def _joins(self, first: LogicalPlan, joins: list[exp.Join], scope: Scope) -> LogicalPlan:
        # a comma binds looser than JOIN: `a, b RIGHT JOIN c ON ...` is a x (b RIGHT JOIN c)
        items = [first]
        lateral = False  # an ON read an earlier comma item: the items were joined left-deep
        for j in joins:
            if isinstance(j.this, exp.Lateral):
                items = [self._lateral(_cross_all(items), j, scope)]
                lateral = False
                continue
            if _is_comma(j):
                items.append(self.source(j.this, scope))
                lateral = False
                continue
            right = self.source(j.this, scope)
            jkind, cond = self._join_condition(j, scope)
            left = items[-1]
            if lateral and jkind in ("right", "full"):
                # (DuckDB reads `a, b JOIN c ON a.x = c.k RIGHT JOIN d ...` as a x LATERAL(b
                # JOIN c RIGHT JOIN d): d's rows kept per row of a; joined to the left-deep
                # product, they were kept once, and rows were lost)
                raise UnsupportedError(
                    f"a {jkind.upper()} JOIN after a join whose ON condition refers to a table "
                    f"listed before it with a comma (a lateral reference); write JOIN ... ON "
                    f"instead of the comma")
            if cond is not None and \
                    not column_ids(cond) <= set(left.column_ids) | set(right.column_ids):
                # ON reads an earlier comma item (PostgreSQL rejects this; DuckDB reads it per
                # row, like LATERAL). For inner and left joins, joining left-deep gives that
                # answer; for right and full joins it does not, and pqe has no lateral join;
                # nor inside parentheses, `a, (b JOIN c ON a.x = c.k)`, whose join is bound
                # apart from a (it was an internal error)
                if jkind in ("right", "full") or len(items) == 1:
                    raise UnsupportedError(
                        f"the ON condition of a {'' if jkind == 'inner' else jkind.upper() + ' '}"
                        f"JOIN refers to a table listed before it with a comma (a lateral "
                        f"reference); write JOIN ... ON instead of the comma")
                left = _cross_all(items)
                items = [left]
                lateral = True
            items[-1] = B.join(left, right, jkind, (), cond)
            if jkind != "inner":
                scope.refresh(items[-1].schema)
        return _cross_all(items)

    def _lateral(self, left: LogicalPlan, j: exp.Join, scope: Scope) -> LogicalPlan:
        """`left, LATERAL (subquery) alias` (or CROSS / LEFT JOIN LATERAL ... ON): the subquery
        is bound seeing the columns of every FROM item before it as outer columns, then
        joined to them; decorrelation evaluates it once per distinct value of the columns it
        reads (optimizer.decorrelate)."""
        node = j.this
        sub = node.this
        if not isinstance(sub, exp.Subquery):
            raise UnsupportedError(f"LATERAL {describe_node(sub, self.sql)} is not supported; "
                                   "LATERAL (subquery) is")
        seen = Scope(scope.parent)
        seen.tables = {alias: dict(cols) for alias, cols in scope.tables.items()}
        plan, names = self.query(sub.this, seen)
        alias = node.alias_or_name or sub.alias_or_name
        names = _renamed(node if node.args.get("alias") else sub, names)
        scope.add(alias, [(n, f) for n, f in zip(names, plan.schema, strict=True)])
        jkind, cond = ("inner", None) if _is_comma(j) else self._join_condition(j, scope)
        if jkind in ("right", "full"):
            raise UnsupportedError(f"{jkind.upper()} JOIN LATERAL is not supported")
        out = B.join(left, plan, jkind, (), cond)
        if jkind != "inner":
            scope.refresh(out.schema)
        return out

    def _join_condition(self, j: exp.Join, scope: Scope) -> tuple[str, Expr | None]:
        side = (j.args.get("side") or "").upper()
        kind = (j.args.get("kind") or "").upper()
        if kind in ("SEMI", "ANTI"):
            raise UnsupportedError(f"{kind} JOIN syntax is not supported; use EXISTS")
        if j.args.get("using") or j.args.get("method"):
            raise UnsupportedError(f"JOIN {j.args.get('method') or 'USING'} form is not supported here")
        jkind = {"LEFT": "left", "RIGHT": "right", "FULL": "full"}.get(side, "inner")
        on = j.args.get("on")
        cond = None
        if on is not None:
            cond = self.expr(on, scope, clause="ON")
            if not (T.is_boolean(cond.dtype) or T.is_null(cond.dtype)):
                raise TypeMismatchError(f"JOIN condition must be BOOLEAN, not {T.type_name(cond.dtype)}")
            cond = B.cast(cond, T.BOOLEAN)
        elif jkind != "inner":
            raise BindError(f"{side} JOIN needs an ON condition")
        return jkind, cond

    def source(self, node: exp.Expression, scope: Scope) -> LogicalPlan:
        plan = self._source(node, scope)
        sample = node.args.get("sample")
        if sample is not None:  # FROM t TABLESAMPLE ...: rows of t before any join or WHERE
            plan = self.sample(plan, sample)
        return plan

    def _source(self, node: exp.Expression, scope: Scope) -> LogicalPlan:
        alias = node.alias_or_name
        if isinstance(node, exp.Table) and node.args.get("joins"):
            # a table carrying joins (as sqlglot reads `(a JOIN b)`): bind them, never drop them
            inner = node.copy()
            joins = inner.args.pop("joins")
            return self._joins(self.source(inner, scope), joins, scope)
        if isinstance(node, exp.Table):
            name = node.name
            cte = self._find_cte(name)
            if cte is not None:
                plan, names = cte
                if isinstance(plan, CTEScan):  # computed once: this reference reads it
                    plan = CTEScan(plan.name, tuple(
                        B.new_field(n, f.dtype, f.nullable, alias)
                        for f, n in zip(plan.fields, names, strict=True)))
                else:
                    plan = B.project(plan, [(ColumnRef(f), n)
                                            for f, n in zip(plan.schema, names, strict=True)],
                                     qualifier=alias)
                names = _renamed(node, names)
                scope.add(alias, [(n, f) for n, f in zip(names, plan.schema, strict=True)])
                return plan
            if name in self.adhoc:
                real, entry = name, self.adhoc[name]
            else:
                real, entry = self.catalog.lookup(name, exact=True)
            if isinstance(entry, View):
                plan = self._bind_view(real, entry)
                if self.table_refs.get(real, 0) > 1 and plan_tree_size(plan) >= COMPUTE_ONCE_NODES:
                    # a large view read several times is computed once, as a large CTE is
                    token = self.once_views.setdefault(real, (B.fresh_id(real), plan))[0]
                    plan = CTEScan(token, tuple(B.new_field(f.name, f.dtype, f.nullable, alias)
                                                for f in plan.schema))
                else:
                    plan = B.project(plan, [(ColumnRef(f), f.name) for f in plan.schema],
                                     qualifier=alias)
                keys = _renamed(node, relation_keys([f.name for f in plan.schema]))
                scope.add(alias, list(zip(keys, plan.schema, strict=True)))
                return plan
            plan = B.scan(real, entry, alias)
            why = unreadable_columns([f.name for f in plan.schema], f"table {real}",
                                     "rename them when registering it")
            if why:
                raise UnsupportedError(why)
            keys = _renamed(node, relation_keys([f.name for f in plan.schema]))
            scope.add(alias, list(zip(keys, plan.schema, strict=True)))
            return plan
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Table) \
                and node.this.args.get("joins"):
            # a parenthesized join: FROM (a CROSS JOIN b)
            inner = node.this.copy()
            joins = inner.args.pop("joins")
            return self._joins(self.source(inner, scope), joins, scope)
        if isinstance(node, exp.Subquery):
            plan, names = self.query(node.this, scope.parent)
            names = _renamed(node, names)
            scope.add(alias, [(n, f) for n, f in zip(names, plan.schema, strict=True)])
            return plan
        if isinstance(node, exp.Values):
            plan = self.values(node, scope.parent)
            plan, _ = self._order_limit_outer(node, plan, [f.name for f in plan.schema],
                                              scope.parent)
            scope.add(alias or "values", [(f.name, f) for f in plan.schema])
            return plan
        raise UnsupportedError(f"{describe_node(node, self.sql)} in FROM is not supported yet")

    def _find_cte(self, name: str):
        for frame in reversed(self.ctes):
            if name in frame:
                return frame[name]
        return None

    # ---- TABLESAMPLE / USING SAMPLE ------------------------------------------------------------

    def sample(self, plan: LogicalPlan, node: exp.TableSample) -> LogicalPlan:
        """TABLESAMPLE / USING SAMPLE, as DuckDB reads them: a number alone is a row count
        (reservoir sampling), a percentage samples each row (BERNOULLI) or each block of rows
        (SYSTEM, the default for percentages) with that probability; RESERVOIR with a
        percentage keeps exactly that share of the rows (rounded half up). REPEATABLE (seed)
        makes the choice deterministic; without it a seed is drawn for this statement."""
        shown = node.sql(dialect=PQEDialect)
        method = node.args.get("method")
        method = method.name.lower() if method is not None else None
        percent = node.args.get("percent")
        rows = node.args.get("size") or node.args.get("rows")
        if percent is not None and rows is not None:
            raise BindError(f"sample {shown}: give a percentage or a row count, not both")
        if method not in (None, "bernoulli", "system", "reservoir"):
            raise UnsupportedError(f"sample method {method.upper()} is not supported "
                                   f"(use BERNOULLI, SYSTEM or RESERVOIR)")
        if node.meta.get(SAMPLE_BARE_NUMBER) and rows is not None:
            # the standard's TABLESAMPLE BERNOULLI (10) / SYSTEM (10): a percentage in SQL
            # and PostgreSQL. BERNOULLI's reading is that (DuckDB refuses a row count for
            # it); SYSTEM (10) is 10 rows in DuckDB, so which was meant cannot be known
            if method == "system":
                n = rows.sql(dialect=PQEDialect)
                raise BindError(f"TABLESAMPLE SYSTEM ({n}) is {n} percent in PostgreSQL and "
                                f"{n} rows in DuckDB: write SYSTEM ({n} PERCENT) or SYSTEM "
                                f"({n} ROWS)")
            if method == "bernoulli":
                percent, rows = rows, None
        if percent is not None:
            value = self._sample_number(percent, shown)
            if not 0 <= value <= 100:
                raise BindError(f"sample percentage {value} is out of range (0 to 100)")
            method = method or "system"
            unit, size = "percent", float(value)
        else:
            value = self._sample_number(rows, shown)
            if value < 0:
                raise BindError(f"sample size {value} must not be negative")
            if method == "bernoulli":
                raise BindError("BERNOULLI sampling takes a percentage, not a row count (use "
                                "RESERVOIR for a number of rows)")
            method, unit, size = "reservoir", "rows", int(value)  # DuckDB: SYSTEM(n ROWS) too
        seed_node = node.args.get("seed")
        if seed_node:
            seed = self._sample_number(seed_node, shown)
            if seed != int(seed):
                raise BindError(f"REPEATABLE seed must be an integer, not {seed}")
            seed, repeatable = int(seed) % (1 << 64), True
        else:
            seed, repeatable = random.getrandbits(64), False
        return Sample(plan, method, unit, size, seed, repeatable)

    def _sample_number(self, node: exp.Expression, shown: str):
        e = self.expr(node, Scope(), clause="TABLESAMPLE")
        if isinstance(e, Literal) and isinstance(e.value, (int, float, decimal.Decimal)) \
                and not isinstance(e.value, bool):
            return e.value
        raise BindError(f"sample {shown}: the size and seed must be constant numbers")


# ---- helpers -------------------------------------------------------------------------------------

# a CTE read more than once whose plan (as a tree) has this many nodes is computed once
COMPUTE_ONCE_NODES = 1_000


def plan_tree_size(plan: LogicalPlan) -> int:
    """Nodes in `plan` counted as a tree (a shared subplan once per path to it), computed
    over the DAG in linear time."""
    sizes: dict[int, int] = {}
    stack = [(plan, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in sizes:
            continue
        kids = node.children()
        if done or not kids:
            sizes[id(node)] = 1 + sum(sizes[id(k)] for k in kids)
            continue
        stack.append((node, True))
        stack.extend((k, False) for k in kids if id(k) not in sizes)
    return sizes[id(plan)]


def _is_comma(j: exp.Join) -> bool:
    """`FROM a, b`: a join with no kind, side or condition."""
    return not any(j.args.get(k) for k in ("kind", "side", "on", "using", "method"))


def _cross_all(plans: list[LogicalPlan]) -> LogicalPlan:
    out = plans[0]
    for p in plans[1:]:
        out = B.join(out, p, "inner", (), None)
    return out


def _self_referencing(cte: exp.CTE) -> bool:
    name = cte.alias_or_name
    return any(t.name == name for t in find_all(cte.this, exp.Table))


def _is_volatile_plan(plan: LogicalPlan) -> bool:
    """Whether any expression of `plan` (its subqueries included) is volatile."""
    from ...plan.expr import SubqueryExpr, is_volatile, walk

    for node in walk_plan(plan):
        for e in node.expressions():
            if is_volatile(e):
                return True
            for x in walk(e):
                if isinstance(x, SubqueryExpr) and _is_volatile_plan(x.plan):
                    return True
    return False


def _has_outer_refs(plan: LogicalPlan) -> bool:
    """Whether `plan` reads a column of a query outside it (an OuterRef to a column that no
    node inside it, subqueries included, produces)."""
    from ...plan.expr import walk

    defined: set[str] = set()
    refs: set[str] = set()

    def visit(p: LogicalPlan) -> None:
        for node in walk_plan(p):
            defined.update(node.column_ids)
            if hasattr(node, "fields"):
                defined.update(f.id for f in node.fields)
            for e in node.expressions():
                for x in walk(e):
                    if isinstance(x, OuterRef):
                        refs.add(x.id)
                    elif isinstance(x, SubqueryExpr):
                        visit(x.plan)

    visit(plan)
    return bool(refs - defined)


def _renamed(node: exp.Expression, names: list[str]) -> list[str]:
    """The relation's column names under its alias's column list (`FROM t AS z(a, b)`
    renames t's first two columns, in order; it was ignored for tables, views and CTEs,
    so z.a read t's column a wherever it stood)."""
    alias = node.args.get("alias")
    cols = alias.columns if isinstance(alias, exp.TableAlias) else []
    if not cols:
        return names
    if len(cols) > len(names):
        raise BindError(f"{node.alias_or_name} has {len(names)} columns available but "
                        f"{len(cols)} columns specified")
    return [c.name for c in cols] + list(names[len(cols):])
