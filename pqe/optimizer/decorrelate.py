"""Rule: turn subquery expressions into joins.

- `[NOT] EXISTS (q)` conjunct        -> semi / anti join; correlated predicates become the
                                        join condition (equalities become hash keys).
- `x [NOT] IN (q)` conjunct          -> semi / anti join on x = q's column; NOT IN with
                                        nullable sides is a null-aware anti join (a NULL
                                        makes the comparison unknown, so the row is dropped).
- scalar `(q)`, uncorrelated         -> left join with the one-row result (checked at run
                                        time to have at most one row).
- scalar `(q)` correlated by equality, q an aggregate
                                     -> left join with q grouped by the correlated columns;
                                        COUNT-like results get their empty-input value when
                                        no group matches (the "count bug").
- any other correlated subquery, and EXISTS / IN used as values (SELECT list, OR, CASE)
                                     -> the domain method: D = the distinct outer values the
                                        subquery depends on; q is evaluated for every d in D
                                        at once (D joined in under q's filters, added to its
                                        GROUP BY; an aggregate without GROUP BY keeps its
                                        empty-input row for every d), and the result is
                                        left-joined back on D.
                                        EXISTS / IN become "mark" columns with SQL's NULL rules.

Runs first: every later rule assumes plans without `SubqueryExpr` and `OuterRef`.
"""

from __future__ import annotations

from .. import types as T
from ..errors import UnsupportedError
from ..plan import builder as B
from ..plan import functions as F
from ..plan.expr import (AggCall, Call, Case, Cast, ColumnRef, Expr, Field, Literal, OuterRef,
                         SortKey, SubqueryExpr, UserCall, WindowCall, and_, column_ids, is_volatile,
                         ZERO_ON_EMPTY, conjuncts, has_outer_ref, has_subquery, may_raise,
                         transform, walk)
from ..plan.logical import (Aggregate, Filter, Join, Limit, LogicalPlan, Project, SingleRow, Union,
                            Sort, Window, transform_up, walk_plan)


def decorrelate(plan: LogicalPlan) -> LogicalPlan:
    return transform_up(plan, _rewrite)


def _rewrite(node: LogicalPlan) -> LogicalPlan | None:
    if isinstance(node, Filter) and has_subquery(node.predicate):
        return _filter(node)
    if isinstance(node, Project) and any(has_subquery(e) for e in node.exprs):
        new_input = node.input
        exprs = []
        done: dict[SubqueryExpr, Expr] = {}
        for e in node.exprs:
            new_input, e = _replace_scalars(new_input, e, done)
            exprs.append(e)
        return Project(new_input, tuple(exprs), node.fields)
    if isinstance(node, Aggregate) and any(has_subquery(e) for e in node.expressions()):
        return _aggregate_inputs(node)
    if isinstance(node, Join) and _plan_has_outer(node.right) and any(
            f.id in set(node.left.column_ids) for f in _outer_refs(node.right)):
        return _lateral(node)
    if isinstance(node, Join) and node.filter is not None and has_subquery(node.filter) \
            and node.kind == "inner":
        # ON (... subquery ...) of an inner join is a filter above the join
        return _rewrite(Filter(Join(node.left, node.right, "inner", node.on, None), node.filter))
    if isinstance(node, Join) and node.filter is not None and has_subquery(node.filter):
        return _outer_join_condition(node)
    for e in node.expressions():
        if has_subquery(e):
            raise UnsupportedError(
                f"subqueries are not supported in {type(node).__name__.lower()} expressions yet")
    return None


def _outer_join_condition(node: Join) -> LogicalPlan:
    """Uncorrelated subqueries in an outer (or semi, anti) join's ON condition: each is a
    column added to the side it reads (a scalar or EXISTS reads neither: the left), one row
    for each of that side's rows as in a SELECT list, and the condition reads the column
    (`LEFT JOIN b ON a.k = b.k AND b.d > (SELECT max(d) FROM c)` was refused). A subquery
    that reads a side's columns (correlated) stays refused: its value depends on the pair."""
    lids, rids = set(node.left.column_ids), set(node.right.column_ids)
    left, right = node.left, node.right
    done: dict[SubqueryExpr, Expr] = {}
    for sub in dict.fromkeys(x for x in walk(node.filter) if isinstance(x, SubqueryExpr)):
        if _plan_has_outer(sub.plan):
            raise UnsupportedError(f"a correlated subquery in the ON condition of a "
                                   f"{node.kind.upper()} JOIN is not supported yet")
        if sub.arg is not None and has_subquery(sub.arg):
            raise UnsupportedError(f"nested subqueries in the ON condition of a "
                                   f"{node.kind.upper()} JOIN are not supported yet")
        reads = column_ids(sub.arg) if sub.arg is not None else set()
        if reads <= lids:
            left = _replace_scalars(left, sub, done)[0]
        elif reads <= rids:
            right = _replace_scalars(right, sub, done)[0]
        else:  # (x IN (...) of both sides' columns)
            raise UnsupportedError(f"a subquery of both sides' columns in the ON condition of "
                                   f"a {node.kind.upper()} JOIN is not supported yet")
    cond = transform(node.filter, lambda x: done.get(x) if isinstance(x, SubqueryExpr) else None)
    joined = Join(left, right, node.kind, node.on, cond, node.null_aware)
    return Project(joined, tuple(ColumnRef(f) for f in node.schema), node.schema)


def _lateral(node: Join) -> LogicalPlan:
    """A join whose right input reads the left's columns (FROM t, LATERAL (...)): the right
    input evaluated once per distinct value D of the columns it reads (`_attach`), then
    joined to the left on them (NULL matching NULL), the join's own condition kept."""
    if node.kind not in ("inner", "left"):
        raise UnsupportedError(f"a {node.kind.upper()} JOIN LATERAL is not supported")
    d, mapping, outer_exprs, dfields = _domain(node.left, node.right)
    right = _attach(node.right, d, mapping)
    # (a column of a query further out is one value for all of the left's rows: D carries
    # it, the join needs no key for it)
    pairs = tuple(pair for x, f in zip(outer_exprs, dfields, strict=True)
                  if not isinstance(x, OuterRef) for pair in B.null_safe_key(x, ColumnRef(f)))
    joined = Join(node.left, right, node.kind, pairs + node.on, node.filter, node.null_aware)
    return Project(joined, tuple(ColumnRef(f) for f in node.schema), node.schema)


def _aggregate_inputs(node: Aggregate) -> LogicalPlan:
    """Subqueries in GROUP BY keys or aggregate arguments (count((SELECT ...))) are computed
    in a projection below the Aggregate, which then reads their columns."""
    lifted: list[tuple[Expr, Field]] = []

    def lift(e: Expr) -> Expr:
        if not has_subquery(e):
            return e
        f = B.new_field("agg_arg", e.dtype, e.nullable)
        lifted.append((e, f))
        return ColumnRef(f)

    group = tuple(lift(g) for g in node.group)
    aggs = tuple(a.with_children(tuple(lift(c) for c in a.children())) for a in node.aggs)
    base = node.input.schema
    proj = Project(node.input, tuple(ColumnRef(f) for f in base) + tuple(e for e, _ in lifted),
                   base + tuple(f for _, f in lifted))
    return Aggregate(_rewrite(proj) or proj, group, node.group_fields, aggs, node.agg_fields,
                     node.local)


def _filter(node: Filter) -> LogicalPlan:
    # conjuncts without subqueries filter first: the joins and domains built below then read
    # their result, not the raw FROM list (a comma join is a cross product until filtered)
    plain = [c for c in conjuncts(node.predicate) if not has_subquery(c)]
    if len(plain) == len(conjuncts(node.predicate)):
        return node
    first = and_(plain)  # None when empty or all TRUE
    plan = Filter(node.input, first) if first is not None else node.input
    keep: list[Expr] = []
    done: dict[SubqueryExpr, Expr] = {}
    width = len(plan.schema)
    base = plan  # the outer rows before any mark join: what domains are made of
    # conjuncts that may pre-filter the outer keys a correlated aggregate is computed for
    hints = [c for c in conjuncts(node.predicate) if not has_outer_ref(c) and
             all(not _plan_has_outer(x.plan) for x in walk(c) if isinstance(x, SubqueryExpr))]
    for c in conjuncts(node.predicate):
        if not has_subquery(c):
            continue  # applied above
        negated = False
        inner = c
        if isinstance(c, Call) and c.fn == "not" and isinstance(c.args[0], SubqueryExpr) \
                and c.args[0].kind in ("exists", "in"):
            negated, inner = True, c.args[0]
        joined = None
        if isinstance(inner, SubqueryExpr) and inner.kind in ("exists", "in"):
            try:
                if inner.kind == "exists":
                    joined = _exists_join(plan, inner, negated != inner.negated)
                else:
                    joined = _in_join(plan, inner, negated != inner.negated)
            except UnsupportedError:
                joined = None  # correlation the semi-join form cannot take: use a mark
        if joined is not None:
            plan = joined
        else:
            plan, c = _replace_scalars(plan, c, done, hints, base)
            keep.append(c)
    pred = and_(keep)
    out = Filter(plan, pred) if pred is not None else plan
    if len(out.schema) != width:  # mark joins added columns: keep the node's schema
        out = Project(out, tuple(ColumnRef(f) for f in node.schema), node.schema)
    return out


# ---- correlation pull-up -----------------------------------------------------------------------


def _unouter(e: Expr, available: set[str] | None = None) -> Expr:
    """OuterRefs to columns of `available` (all when None) as plain column references; refs
    to a query further out stay OuterRefs, for the enclosing level to decorrelate."""
    return transform(e, lambda x: ColumnRef(x.field) if isinstance(x, OuterRef)
                     and (available is None or x.id in available) else None)


def _plan_has_outer(plan: LogicalPlan) -> bool:
    return any(has_outer_ref(e) for p in walk_plan(plan) for e in p.expressions())


def _pull(plan: LogicalPlan) -> tuple[LogicalPlan, list[Expr]]:
    """Remove predicates that reference the outer query; return them (still with OuterRefs)."""
    if not _plan_has_outer(plan):
        return plan, []
    if isinstance(plan, Filter):
        inner, preds = _pull(plan.input)
        corr = [c for c in conjuncts(plan.predicate) if has_outer_ref(c)]
        local = [c for c in conjuncts(plan.predicate) if not has_outer_ref(c)]
        rest = and_(local)
        return (Filter(inner, rest) if rest is not None else inner), preds + corr
    if isinstance(plan, Project):
        if any(has_outer_ref(e) for e in plan.exprs):
            raise UnsupportedError("outer column references in a subquery's SELECT list are not supported yet")
        inner, preds = _pull(plan.input)
        have = {f.id for f in plan.fields}
        extra = [inner.field(i) for i in sorted(column_ids_of(preds) - have)
                 if i in set(inner.column_ids)]
        exprs = plan.exprs + tuple(ColumnRef(f) for f in extra)
        return Project(inner, exprs, plan.fields + tuple(extra)), preds
    if isinstance(plan, Join) and plan.kind == "inner":
        left, lp = _pull(plan.left)
        right, rp = _pull(plan.right)
        own = conjuncts(plan.filter)
        corr = [c for c in own if has_outer_ref(c)]
        rest = and_(c for c in own if not has_outer_ref(c))
        if any(has_outer_ref(a) or has_outer_ref(b) for a, b in plan.on):
            raise UnsupportedError("outer references in join keys are not supported")
        return Join(left, right, "inner", plan.on, rest), lp + rp + corr
    if isinstance(plan, Join) and plan.kind in ("left", "semi", "anti") and not _plan_has_outer(plan.right):
        left, lp = _pull(plan.left)
        if (plan.filter is not None and has_outer_ref(plan.filter)) \
                or any(has_outer_ref(a) or has_outer_ref(b) for a, b in plan.on):
            raise UnsupportedError("outer references in an outer join condition are not supported")
        return Join(left, plan.right, plan.kind, plan.on, plan.filter, plan.null_aware), lp
    raise _through(plan)


def _through(plan: LogicalPlan) -> UnsupportedError:
    """The refusal of a correlated subquery reaching `plan`, in the user's words: a Window
    is also how pqe runs ORDER BY ... LIMIT, OFFSET, DISTINCT ON, WITH TIES and INTERSECT /
    EXCEPT ALL (the message named a window no one wrote)."""
    if isinstance(plan, Window):
        return UnsupportedError(
            "a correlated subquery through a window function, or through what pqe runs "
            "with one (ORDER BY ... LIMIT or OFFSET, DISTINCT ON, WITH TIES, INTERSECT ALL "
            "or EXCEPT ALL, inside another correlated subquery or LATERAL), is not "
            "supported yet")
    return UnsupportedError(
        f"correlated subquery through {type(plan).__name__.lower()} is not supported yet")


def column_ids_of(exprs: list[Expr]) -> set[str]:
    out: set[str] = set()
    for e in exprs:
        out |= column_ids(e)
    return out


# ---- EXISTS / IN -------------------------------------------------------------------------------


def _strip_project(plan: LogicalPlan) -> LogicalPlan:
    return plan.input if isinstance(plan, Project) else plan


def _exists_body(plan: LogicalPlan) -> LogicalPlan:
    """What decides EXISTS (q): q without its SELECT list, ORDER BY, or a LIMIT of 1 or more."""
    while True:
        if isinstance(plan, Project) or (isinstance(plan, Sort) and (plan.fetch is None or plan.fetch > 0)):
            plan = plan.input
        elif isinstance(plan, Limit) and plan.offset == 0 and (plan.fetch is None or plan.fetch > 0):
            plan = plan.input
        else:
            return plan


def _exists_join(outer: LogicalPlan, sub: SubqueryExpr, negated: bool) -> LogicalPlan:
    inner = decorrelate(sub.plan)
    inner, corr = _pull(_exists_body(inner))
    available = set(outer.column_ids)
    cond = and_(_unouter(c, available) for c in corr)
    return Join(outer, inner, "anti" if negated else "semi", (), cond)


def _computes(exprs) -> bool:
    """Some expression computes a value that may raise (see `plan.expr.may_raise`)."""
    return any(may_raise(e) for e in exprs)


def _computes_above_correlation(plan: LogicalPlan) -> bool:
    """A Project over the subquery's correlation computes a value that may raise. Pulled up into a join, the
    correlation would no longer restrict the rows it is computed for: every row of the inner
    input, where SQL computes it only for the rows each outer row's subquery reads (an
    overflow for an inner row no outer row matches is then an error the query has not got)."""
    return any(isinstance(p, Project) and _plan_has_outer(p.input) and _computes(p.exprs)
               for p in walk_plan(plan))


def _in_join(outer: LogicalPlan, sub: SubqueryExpr, negated: bool) -> LogicalPlan:
    inner = decorrelate(sub.plan)
    if _computes_above_correlation(inner):
        raise UnsupportedError("correlated IN over a computed value: the domain form")
    inner, corr = _pull(inner)
    value = ColumnRef(inner.schema[0])
    arg = sub.arg
    if value.dtype != arg.dtype:
        common = T.common_type(arg.dtype, value.dtype)
        arg, value = B.cast(arg, common), B.cast(value, common)
    if sub.op != "eq" and not corr:
        # x < ANY (q) as a join would compare every pair: the mark form needs q's min/max
        raise UnsupportedError("uncorrelated comparison with ANY / ALL")
    eq = B.compare(sub.op, arg, value)
    available = set(outer.column_ids)
    corr = [_unouter(c, available) for c in corr]
    if not negated:
        return Join(outer, inner, "semi", (), and_([eq, *corr]))
    nullable = arg.nullable or value.nullable
    if not nullable:
        return Join(outer, inner, "anti", (), and_([eq, *corr]))
    if not corr:
        return Join(outer, inner, "anti", ((arg, value),), None, null_aware=True)
    # correlated NOT IN: a row is dropped when some inner row compares TRUE or UNKNOWN
    maybe = B.not_(B.call("is_false", eq))
    return Join(outer, inner, "anti", (), and_([*corr, maybe]))


# ---- scalar subqueries ---------------------------------------------------------------------------


def _replace_scalars(plan: LogicalPlan, e: Expr, done: dict[SubqueryExpr, Expr],
                     hints: list[Expr] = (), base: LogicalPlan | None = None
                     ) -> tuple[LogicalPlan, Expr]:
    """Replace every subquery in `e` by a column of joins added to `plan`. `done` holds the
    subqueries already joined into `plan` (rewrites such as NULLIF, BETWEEN and simple CASE
    repeat an operand): each distinct subquery is joined once and its column reused."""
    for s in dict.fromkeys(x for x in walk(e) if isinstance(x, SubqueryExpr)):
        if s in done:
            continue
        if s.kind == "scalar":
            try:
                plan, value = _scalar_join(plan, s, hints)
            except UnsupportedError:
                plan, value = _domain_scalar(plan, s, base)
        elif s.kind == "exists":
            plan, value = _exists_mark(plan, s, base)
        else:
            plan, value = _in_mark(plan, s, base)
        if s.negated:
            value = B.not_(value)
        done[s] = value
    return plan, transform(e, lambda x: done.get(x) if isinstance(x, SubqueryExpr) else None)


def _one_row(plan: LogicalPlan) -> bool:
    """True when the plan yields at most one row by construction."""
    p = plan
    while isinstance(p, (Project, Filter, Sort, Limit)):
        if isinstance(p, Limit) and p.fetch is not None and p.fetch <= 1:
            return True
        p = p.input
    return isinstance(p, Aggregate) and not p.group


def _scalar_join(outer: LogicalPlan, sub: SubqueryExpr,
                 hints: list[Expr] = ()) -> tuple[LogicalPlan, Expr]:
    inner = decorrelate(sub.plan)
    if not _plan_has_outer(inner):
        right = inner if _one_row(inner) else SingleRow(inner)
        return Join(outer, right, "left", (), None), ColumnRef(right.schema[0])
    # correlated: [Project] over Aggregate (no GROUP BY) over something with the correlation
    top = inner if isinstance(inner, Project) else None
    agg = inner.input if top is not None else inner
    if not isinstance(agg, Aggregate) or agg.group:
        raise UnsupportedError(
            "correlated scalar subqueries must be aggregates without GROUP BY (for now)")
    if top is not None and any(has_outer_ref(x) for x in top.exprs):
        raise UnsupportedError("outer references in a scalar subquery's result expression")
    if any(has_outer_ref(c) for a in agg.aggs for c in a.children()):
        # max(y + a.x), sum(y) FILTER (WHERE y > a.x): the value depends on the outer row,
        # not only the group (left as an OuterRef, it failed to compile): the domain form
        raise UnsupportedError("outer references in a correlated aggregate's arguments")
    body, corr = _pull(agg.input)
    pairs: list[tuple[Expr, Expr]] = []
    available = set(outer.column_ids)
    for c in corr:
        if not (isinstance(c, Call) and c.fn == "eq"):
            raise UnsupportedError(
                "correlated scalar subqueries are supported with equality correlation only")
        a, b = c.args
        # keys referring further out than `outer` stay OuterRefs: the enclosing level
        # decorrelates the join they end up in
        if has_outer_ref(a) and not has_outer_ref(b) and not column_ids(a):
            pairs.append((_unouter(a, available), b))
        elif has_outer_ref(b) and not has_outer_ref(a) and not column_ids(b):
            pairs.append((_unouter(b, available), a))
        else:
            raise UnsupportedError("correlation predicate mixes inner and outer columns")
    # aggregate arguments, or a result expression, that compute a value are computed only for
    # the keys outer rows ask for (a value no outer row reads may overflow): the body reduced
    # to the outer keys, or else the domain form
    computes = (_computes(a for x in agg.aggs for a in x.args)
                or (top is not None and _computes(top.exprs))
                or _computes_above_correlation(agg.input))
    reduced = _reduce_to_outer_keys(body, outer, pairs, hints, force=computes)
    if computes and reduced is body:
        raise UnsupportedError("correlated aggregate of computed values: the domain form")
    body = reduced
    group_fields = tuple(B.new_field("corr_key", k.dtype, k.nullable) for _, k in pairs)
    grouped = Aggregate(body, tuple(k for _, k in pairs), group_fields, agg.aggs, agg.agg_fields)
    keys = tuple(ColumnRef(f) for f in group_fields)
    if top is not None:
        right: LogicalPlan = Project(grouped, top.exprs + keys, top.fields + group_fields)
        value_expr = top.exprs[0]
    else:
        right = grouped
        value_expr = ColumnRef(agg.agg_fields[0])
    joined = Join(outer, right, "left", tuple((o, ColumnRef(f)) for (o, _), f in
                                               zip(pairs, group_fields, strict=True)), None)
    value: Expr = ColumnRef(right.schema[0])
    empty = _empty_value(value_expr, agg)
    if empty is not None:
        matched = B.call("is_not_null", ColumnRef(group_fields[0]))
        value = Case(((matched, value),), B.cast(empty, value.dtype), value.dtype)
    return joined, value


def _reduce_to_outer_keys(body: LogicalPlan, outer: LogicalPlan, pairs, hints,
                          force: bool = False) -> LogicalPlan:
    """Semi-join reduction (a magic set): when the outer keys all come from one table, the
    correlated aggregate needs only body rows whose keys are among that table's keys after
    its own filters (`hints` restricted to it). Done when that is estimated to keep under a
    quarter of the body: Q17 aggregates ~6k lineitem rows instead of 6M. `force`: done
    whenever it can be (values computed only for the keys asked for)."""
    from ..plan.logical import Scan
    from ..plan.stats import Estimator

    ids = column_ids_of([o for o, _ in pairs])
    if not ids or any(has_outer_ref(o) for o, _ in pairs):
        return body
    source = next((p for p in walk_plan(outer) if isinstance(p, Scan)
                   and ids <= {f.id for f in p.schema}), None)
    if source is None:
        return body
    own = {f.id for f in source.schema}
    local = [h for h in hints if column_ids(h) and column_ids(h) <= own]
    keys_plan = Filter(source, and_(local)) if local else source
    keys = B.distinct(B.project(keys_plan, [(o, f"key{i}") for i, (o, _) in enumerate(pairs)]))
    keys = decorrelate(keys)
    on = tuple((inner, ColumnRef(f)) for (_, inner), f in zip(pairs, keys.schema, strict=True))
    reduced = Join(body, keys, "semi", on, None)
    if force:
        return reduced
    est = Estimator.shared()
    return reduced if est.rows(reduced) * 4 < est.rows(body) else body


def _empty_value(value_expr: Expr, agg: Aggregate) -> Expr | None:
    """The subquery's value over no rows, when it is not simply NULL (COUNT gives 0)."""
    counts = {f.id for a, f in zip(agg.aggs, agg.agg_fields, strict=True)
              if a.fn in ZERO_ON_EMPTY}
    non_strict = any(isinstance(x, Call) and F.SCALAR[x.fn].nulls != "propagate"
                     for x in walk(value_expr)) or any(isinstance(x, (Case, UserCall))
                                                       for x in walk(value_expr))
    refs = column_ids(value_expr)
    if not (refs & counts) and not non_strict:
        return None
    mapping = {}
    for f in agg.agg_fields:
        mapping[f.id] = Literal(0, f.dtype) if f.id in counts else Literal(None, f.dtype)
    return transform(value_expr, lambda x: mapping.get(x.id) if isinstance(x, ColumnRef) else None)


# ---- the domain method -------------------------------------------------------------------------


def _outer_refs(plan: LogicalPlan) -> list:
    seen: dict[str, object] = {}
    for p in walk_plan(plan):
        for e in p.expressions():
            for x in walk(e):
                if isinstance(x, OuterRef) and x.id not in seen:
                    seen[x.id] = x.field
    return list(seen.values())


def _domain(outer: LogicalPlan, sub: LogicalPlan, extra: tuple[Expr, ...] = ()):
    """D = DISTINCT (outer columns `sub` refers to, extra outer expressions); returns D, the
    map outer id -> D column, the outer expressions D was made of, and D's fields."""
    refs = _outer_refs(sub)
    available = set(outer.column_ids)
    # a column of a query further out stays an outer reference of `outer` in D (outer is a
    # subquery's body then: decorrelating that subquery takes D's projection with it)
    items = [(ColumnRef(f) if f.id in available else OuterRef(f), f.name) for f in refs]
    # -0.0 and 0.0 are one value to DISTINCT, but not to the subquery (CAST(x AS VARCHAR),
    # atan2(x, -1)): a float's sign of zero is a column of D too, so each has its own d
    items += [(B.call("pqe_negative_zero", x), f"{name}_negative_zero") for x, name in items
              if isinstance(x, ColumnRef) and T.is_floating(x.dtype)]
    items += [(x, f"arg{i}") for i, x in enumerate(extra)]
    if not items:
        items = [(Literal(True, T.BOOLEAN), "one")]
    d = B.distinct(B.project(outer, items))
    mapping = {f.id: ColumnRef(df) for f, df in zip(refs, d.schema, strict=False)}
    return d, mapping, [x for x, _ in items], d.schema


def _subst(e: Expr, mapping) -> Expr:
    return transform(e, lambda x: mapping.get(x.id) if isinstance(x, OuterRef) else None)


def _attach(plan: LogicalPlan, d: LogicalPlan, mapping) -> LogicalPlan:
    """`plan` evaluated once per row of D, with D's columns added to its output."""
    dfields = d.schema
    if not _plan_has_outer(plan):
        return Join(d, plan, "inner", (), None)
    sub = lambda e: _subst(e, mapping)  # noqa: E731
    if isinstance(plan, Filter):
        return Filter(_attach(plan.input, d, mapping), sub(plan.predicate))
    if isinstance(plan, Project):
        inner = _attach(plan.input, d, mapping)
        return Project(inner, tuple(sub(e) for e in plan.exprs) + tuple(ColumnRef(f) for f in dfields),
                       plan.fields + dfields)
    if isinstance(plan, Aggregate) and not plan.group:
        return _attach_ungrouped(plan, d, mapping)
    if isinstance(plan, Aggregate):
        inner = _attach(plan.input, d, mapping)
        aggs = tuple(a.with_children(tuple(sub(c) for c in a.children())) for a in plan.aggs)
        return Aggregate(inner, tuple(sub(g) for g in plan.group) + tuple(ColumnRef(f) for f in dfields),
                         plan.group_fields + dfields, aggs, plan.agg_fields, plan.local)
    if isinstance(plan, Sort) and plan.fetch is None:
        return Sort(_attach(plan.input, d, mapping), plan.keys, None)
    if isinstance(plan, Sort):
        return _top_n_per_domain(_attach(plan.input, d, mapping), dfields, plan.keys, plan.fetch, 0)
    if isinstance(plan, Limit):
        inner = _attach(plan.input, d, mapping)
        keys: tuple[SortKey, ...] = ()
        if isinstance(inner, Sort):  # ORDER BY ... LIMIT: the order ranks within each d
            inner, keys = inner.input, inner.keys
        return _top_n_per_domain(inner, dfields, keys, plan.fetch, plan.offset)
    if isinstance(plan, Join):
        left_outer, right_outer = _plan_has_outer(plan.left), _plan_has_outer(plan.right)
        # D goes to one side, or to both joined on D's columns too (each d's rows of one side
        # with that d's rows of the other); every row the join keeps must carry D's columns,
        # so a FULL join (both sides' unmatched rows) cannot take it
        cond_outer = (plan.filter is not None and has_outer_ref(plan.filter)) \
            or any(has_outer_ref(a) or has_outer_ref(b) for a, b in plan.on)
        if plan.kind == "full" and (left_outer or right_outer or cond_outer):
            raise UnsupportedError("correlated subquery: outer references in a FULL JOIN are not "
                                   "supported yet")
        filt = sub(plan.filter) if plan.filter is not None else None
        on = tuple((sub(a), sub(b)) for a, b in plan.on)
        if plan.kind == "right" and not left_outer:
            return Join(plan.left, _attach(plan.right, d, mapping), plan.kind, on, filt, plan.null_aware)
        if plan.kind == "inner" and right_outer and not left_outer:
            return Join(plan.left, _attach(plan.right, d, mapping), plan.kind, on, filt, plan.null_aware)
        if not right_outer and plan.kind != "right":
            return Join(_attach(plan.left, d, mapping), plan.right, plan.kind, on, filt, plan.null_aware)
        # both sides: the side whose unmatched rows a RIGHT join keeps takes D itself
        kept, other = (plan.right, plan.left) if plan.kind == "right" else (plan.left, plan.right)
        copy, copy_mapping = _fresh(d, mapping)
        kept, other = _attach(kept, d, mapping), _attach(other, copy, copy_mapping)
        same = tuple(pair for f, g in zip(d.schema, copy.schema, strict=True)
                     for pair in B.null_safe_key(ColumnRef(f), ColumnRef(g)))
        if plan.kind == "right":
            return Join(other, kept, plan.kind, tuple((b, a) for a, b in same) + on, filt,
                        plan.null_aware)
        return Join(kept, other, plan.kind, same + on, filt, plan.null_aware)
    if isinstance(plan, Union):  # each input per d, with D's columns under new names
        inputs = []
        for branch in plan.inputs:
            copy, copy_mapping = _fresh(d, mapping)
            attached = _attach(branch, copy, copy_mapping)
            inputs.append(Project(attached, tuple(ColumnRef(f) for f in branch.schema)
                                  + tuple(ColumnRef(f) for f in copy.schema),
                                  tuple(B.new_field(f.name, f.dtype, f.nullable)
                                        for f in branch.schema + copy.schema)))
        return Union(tuple(inputs), plan.fields + dfields)
    raise _through(plan)


def _fresh(d: LogicalPlan, mapping) -> tuple[LogicalPlan, dict]:
    """D under new column ids (a second copy to join on D, or a UNION input's), and the map
    of outer ids to them."""
    fields = tuple(B.new_field(f.name, f.dtype, f.nullable) for f in d.schema)
    copy = Project(d, tuple(ColumnRef(f) for f in d.schema), fields)
    renamed = {f.id: ColumnRef(g) for f, g in zip(d.schema, fields, strict=True)}
    return copy, {k: renamed.get(v.id, v) for k, v in mapping.items()}


# aggregates whose value over no rows is not NULL


def _attach_ungrouped(plan: Aggregate, d: LogicalPlan, mapping) -> LogicalPlan:
    """An aggregate without GROUP BY, evaluated per row of D: one row for every d, also for a
    d none of whose input rows there are (COUNT 0, SUM NULL: the "COUNT bug"). Grouping the
    input by D alone loses those d: x IN (SELECT COUNT(*) ... correlated) was FALSE for
    x = 0 and EXISTS (SELECT COUNT(*) ...) FALSE, where every d has its row. So: grouped by
    D, marked, and D left-joined to it (NULL-safe), each aggregate its empty-input value
    where no group matched."""
    for a in plan.aggs:
        if a.fn not in F.AGGREGATE:
            raise UnsupportedError(f"correlated subquery: the user aggregate {a.fn} over the "
                                   f"rows of each outer value is not supported yet")
    inner = _attach(plan.input, d, mapping)
    aggs = tuple(a.with_children(tuple(_subst(c, mapping) for c in a.children()))
                 for a in plan.aggs)
    gfields = tuple(B.new_field(f.name, f.dtype, f.nullable) for f in d.schema)
    afields = tuple(B.new_field(f.name, f.dtype, f.nullable) for f in plan.agg_fields)
    grouped, mark = _marked(Aggregate(inner, tuple(ColumnRef(f) for f in d.schema), gfields,
                                      aggs, afields, plan.local))
    on = tuple(pair for f, g in zip(d.schema, gfields, strict=True)
               for pair in B.null_safe_key(ColumnRef(f), ColumnRef(g)))
    joined = Join(d, grouped, "left", on, None)
    exprs = tuple(Case(((ColumnRef(mark), ColumnRef(new)),),
                       Literal(0 if a.fn in ZERO_ON_EMPTY else None, old.dtype), old.dtype)
                  for a, new, old in zip(plan.aggs, afields, plan.agg_fields, strict=True))
    return Project(joined, exprs + tuple(ColumnRef(f) for f in d.schema),
                   plan.agg_fields + d.schema)


def _top_n_per_domain(plan: LogicalPlan, dfields, keys, fetch: int | None,
                      offset: int) -> LogicalPlan:
    """LIMIT / OFFSET applied per row of D: row_number() over (PARTITION BY D ORDER BY keys)."""
    rn = B.new_field("row_number", T.INT64, False)
    call = WindowCall("row_number", (), tuple(ColumnRef(f) for f in dfields), tuple(keys),
                      None, T.INT64)
    ranked = Window(plan, (call,), (rn,))
    conds = [B.compare("gt", ColumnRef(rn), Literal(offset, T.INT64))]
    if fetch is not None:
        conds.append(B.compare("le", ColumnRef(rn), Literal(min(offset + fetch, T.INT64_MAX), T.INT64)))
    kept = Filter(ranked, and_(conds))
    return Project(kept, tuple(ColumnRef(f) for f in plan.schema), plan.schema)


def _domain_join(outer: LogicalPlan, right: LogicalPlan, outer_exprs, dfields) -> LogicalPlan:
    pairs = []
    for x, f in zip(outer_exprs, dfields, strict=True):
        pairs += B.null_safe_key(x, ColumnRef(f))
    return Join(outer, right, "left", tuple(pairs), None)


def _marked(plan: LogicalPlan) -> tuple[LogicalPlan, Field]:
    mark = B.new_field("matched", T.BOOLEAN, False)
    return Project(plan, tuple(ColumnRef(f) for f in plan.schema) + (Literal(True, T.BOOLEAN),),
                   plan.schema + (mark,)), mark


def _domain_scalar(outer: LogicalPlan, sub: SubqueryExpr,
                   base: LogicalPlan | None = None) -> tuple[LogicalPlan, Expr]:
    inner = decorrelate(sub.plan)
    d, mapping, outer_exprs, dfields = _domain(base or outer, inner)
    value_field = inner.schema[0]
    attached = _attach(inner, d, mapping)
    dkeys = tuple(ColumnRef(f) for f in dfields)
    if _one_row(inner):
        # an aggregate without GROUP BY has its row for every d (_attach_ungrouped): a d
        # without one is a d that HAVING (or LIMIT 0) rejected, whose value is NULL
        right = attached
    else:
        # at most one row per outer value: any_value + a count that must not exceed 1,
        # checked where the value is used, on the outer rows the query keeps: a filter on
        # the outer rows (`WHERE a = 1` over a view of the subquery's column) is pushed into
        # them but not into the domain, whose other values may have several rows
        v = B.new_field(value_field.name, value_field.dtype)
        n = B.new_field("rows", T.INT64)
        grouped = Aggregate(attached, dkeys,
                            tuple(B.new_field(f.name, f.dtype, f.nullable) for f in dfields),
                            (AggCall("any_value", (ColumnRef(value_field),), value_field.dtype),
                             AggCall("count_star", (), T.INT64)), (v, n))
        joined = _domain_join(outer, grouped, outer_exprs, grouped.group_fields)
        checked = Case(((B.call("pqe_assert_single_row", ColumnRef(n)), ColumnRef(v)),),
                       Literal(None, v.dtype), v.dtype)
        return joined, checked
    joined = _domain_join(outer, right, outer_exprs, dfields)
    return joined, ColumnRef(value_field)


def _exists_mark(outer: LogicalPlan, sub: SubqueryExpr,
                 base: LogicalPlan | None = None) -> tuple[LogicalPlan, Expr]:
    inner = _exists_body(decorrelate(sub.plan))
    if not _plan_has_outer(inner):
        one = Limit(inner, 1, 0)
        right, mark = _marked(B.project(one, [(Literal(True, T.BOOLEAN), "x")]))
        return Join(outer, right, "left", (), None), B.call("is_not_null", ColumnRef(mark))
    keyed = _exists_mark_by_keys(outer, inner)
    if keyed is not None:
        return keyed
    d, mapping, outer_exprs, dfields = _domain(base or outer, inner)
    attached = _attach(inner, d, mapping)
    hits = B.distinct(B.project(attached, [(ColumnRef(f), f.name) for f in dfields]))
    right, mark = _marked(hits)
    joined = _domain_join(outer, right, outer_exprs, hits.schema)
    return joined, B.call("is_not_null", ColumnRef(mark))


def _exists_mark_by_keys(outer: LogicalPlan,
                         inner: LogicalPlan) -> tuple[LogicalPlan, Expr] | None:
    """EXISTS (q) as a value when q is correlated by equalities alone, `outer expr = q's
    expr`: the distinct values of q's sides, marked and left-joined to the outer rows on
    the equalities (a NULL on either side matches nothing, as `=` finds no row). No domain
    of outer values is computed: the domain joined the outer plan a second time only to
    narrow q's rows to the keys asked for (TPC-DS Q35's `exists (...) or exists (...)` joined
    1.9M customer_demographics rows again for each: 0.95 -> 0.74 CPU-seconds with Q10,
    whose ORs are alike). DuckDB's deliminator drops its duplicate-eliminated join for the
    same correlations. None otherwise (the
    domain method then): another correlation, a reference further out, or a value computed
    above the correlation (computed here for rows no outer row asks for)."""
    if _computes_above_correlation(inner):
        return None
    try:
        body, corr = _pull(inner)
    except UnsupportedError:
        return None
    if not corr or _plan_has_outer(body) or any(
            is_volatile(e) for p in walk_plan(body) for e in p.expressions()):
        return None  # (random() in q: the domain method draws it per outer value)
    available = set(outer.column_ids)
    pairs: list[tuple[Expr, Expr]] = []
    for c in corr:
        if not (isinstance(c, Call) and c.fn == "eq" and len(c.args) == 2):
            return None
        a, b = c.args
        if has_outer_ref(b):
            a, b = b, a
        if has_outer_ref(b) or column_ids(a) or is_volatile(a) or is_volatile(b):
            return None
        a = _unouter(a, available)
        if has_outer_ref(a):
            return None  # a column of a query further out: the domain carries it
        if a.dtype != b.dtype:
            common = T.common_type(a.dtype, b.dtype)
            a, b = B.cast(a, common), B.cast(b, common)
        pairs.append((a, b))
    hits = B.distinct(B.project(body, [(b, f"key{i}") for i, (_, b) in enumerate(pairs)]))
    right, mark = _marked(hits)
    on = tuple((a, ColumnRef(f)) for (a, _), f in zip(pairs, hits.schema, strict=True))
    return Join(outer, right, "left", on, None), B.call("is_not_null", ColumnRef(mark))


def _in_mark(outer: LogicalPlan, sub: SubqueryExpr,
             base: LogicalPlan | None = None) -> tuple[LogicalPlan, Expr]:
    """x IN (q) as a value: TRUE on a match; else NULL if x is NULL or q has a NULL (and q is
    not empty); else FALSE."""
    inner = decorrelate(sub.plan)
    arg = sub.arg
    y = inner.schema[0]
    if not _plan_has_outer(inner) and sub.op != "eq":
        return _compare_any_mark(outer, inner, arg, sub.op)
    if not _plan_has_outer(inner):
        values = B.distinct(B.project(inner, [(ColumnRef(y), y.name)]))
        right, mark = _marked(values)
        common = T.common_type(arg.dtype, y.dtype)
        joined = Join(outer, right, "left", ((B.cast(arg, common), B.cast(ColumnRef(right.schema[0]), common)),), None)
        stats = B.aggregate(inner, [], [(AggCall("count_star", (), T.INT64), "rows"),
                                        (AggCall("count", (ColumnRef(y),), T.INT64), "values")])
        joined = Join(joined, stats, "left", (), None)
        rows, vals = (ColumnRef(f) for f in stats.schema)
        unknown = B.call("or", B.call("is_null", arg), B.compare("gt", rows, vals))
        value = B.case([(B.call("is_not_null", ColumnRef(mark)), Literal(True, T.BOOLEAN)),
                        (B.compare("eq", rows, Literal(0, T.INT64)), Literal(False, T.BOOLEAN)),
                        (unknown, Literal(None, T.BOOLEAN))], Literal(False, T.BOOLEAN))
        return joined, value
    d, mapping, outer_exprs, dfields = _domain(base or outer, inner, (arg,))
    attached = _attach(inner, d, mapping)
    xd = ColumnRef(dfields[-1])
    cmp = B.compare(sub.op, xd, ColumnRef(y))
    one = Literal(1, T.INT64)
    hit = AggCall("count", (Case(((B.call("is_true", cmp), one),), Literal(None, T.INT64), T.INT64),), T.INT64)
    unk = AggCall("count", (Case(((B.call("is_null", cmp), one),), Literal(None, T.INT64), T.INT64),), T.INT64)
    counts = Aggregate(attached, tuple(ColumnRef(f) for f in dfields),
                       tuple(B.new_field(f.name, f.dtype, f.nullable) for f in dfields), (hit, unk),
                       (B.new_field("hits", T.INT64, False), B.new_field("unknown", T.INT64, False)))
    joined = _domain_join(outer, counts, outer_exprs, counts.group_fields)
    h, u = (ColumnRef(f) for f in counts.agg_fields)
    zero = Literal(0, T.INT64)
    value = B.case([(B.compare("gt", h, zero), Literal(True, T.BOOLEAN)),
                    (B.compare("gt", u, zero), Literal(None, T.BOOLEAN))], Literal(False, T.BOOLEAN))
    return joined, value


def _compare_any_mark(outer: LogicalPlan, inner: LogicalPlan, arg: Expr,
                      op: str) -> tuple[LogicalPlan, Expr]:
    """Uncorrelated `x op ANY (q)`, op not '=', from one row of q's statistics: TRUE when x
    compares TRUE with q's min (for > and >=), max (for < and <=) or either (for <>); else
    FALSE for an empty q; else NULL when x or some value of q is NULL; else FALSE."""
    y = ColumnRef(inner.schema[0])
    stats = B.aggregate(inner, [], [(AggCall("min", (y,), y.dtype), "min"),
                                    (AggCall("max", (y,), y.dtype), "max"),
                                    (AggCall("count_star", (), T.INT64), "rows"),
                                    (AggCall("count", (y,), T.INT64), "values")])
    lo, hi, rows, vals = (B.cast(ColumnRef(f), arg.dtype) if i < 2 else ColumnRef(f)
                          for i, f in enumerate(stats.schema))
    if op in ("gt", "ge"):
        hit = B.compare(op, arg, lo)
    elif op in ("lt", "le"):
        hit = B.compare(op, arg, hi)
    else:
        hit = B.call("or", B.compare("ne", arg, lo), B.compare("ne", arg, hi))
    unknown = B.call("or", B.call("is_null", arg), B.compare("gt", rows, vals))
    value = B.case([(B.compare("eq", rows, Literal(0, T.INT64)), Literal(False, T.BOOLEAN)),
                    (B.call("is_true", hit), Literal(True, T.BOOLEAN)),
                    (unknown, Literal(None, T.BOOLEAN))], Literal(False, T.BOOLEAN))
    return Join(outer, stats, "left", (), None), value


__all__ = ["decorrelate", "AggCall"]
