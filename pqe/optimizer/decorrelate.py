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

Runs first: every later rule assumes plans without `SubqueryExpr` and `OuterRef`.
"""

from __future__ import annotations

from .. import types as T
from ..errors import UnsupportedError
from ..plan import builder as B
from ..plan import functions as F
from ..plan.expr import (AggCall, Call, Case, ColumnRef, Expr, Literal, OuterRef,
                         SubqueryExpr, and_, column_ids, conjuncts, has_outer_ref,
                         has_subquery, transform, walk)
from ..plan.logical import (Aggregate, Filter, Join, Limit, LogicalPlan, Project, SingleRow,
                            Sort, transform_up, walk_plan)


def decorrelate(plan: LogicalPlan) -> LogicalPlan:
    return transform_up(plan, _rewrite)


def _rewrite(node: LogicalPlan) -> LogicalPlan | None:
    if isinstance(node, Filter) and has_subquery(node.predicate):
        return _filter(node)
    if isinstance(node, Project) and any(has_subquery(e) for e in node.exprs):
        new_input = node.input
        exprs = []
        for e in node.exprs:
            new_input, e = _replace_scalars(new_input, e)
            exprs.append(e)
        return Project(new_input, tuple(exprs), node.fields)
    for e in node.expressions():
        if has_subquery(e):
            raise UnsupportedError(
                f"subqueries are not supported in {type(node).__name__.lower()} expressions yet")
    return None


def _filter(node: Filter) -> LogicalPlan:
    plan = node.input
    keep: list[Expr] = []
    for c in conjuncts(node.predicate):
        negated = False
        inner = c
        if isinstance(c, Call) and c.fn == "not" and isinstance(c.args[0], SubqueryExpr) \
                and c.args[0].kind in ("exists", "in"):
            negated, inner = True, c.args[0]
        if isinstance(inner, SubqueryExpr) and inner.kind == "exists":
            plan = _exists_join(plan, inner, negated != inner.negated)
        elif isinstance(inner, SubqueryExpr) and inner.kind == "in":
            plan = _in_join(plan, inner, negated != inner.negated)
        elif has_subquery(c):
            plan, c = _replace_scalars(plan, c)
            keep.append(c)
        else:
            keep.append(c)
    pred = and_(keep)
    return Filter(plan, pred) if pred is not None else plan


# ---- correlation pull-up -----------------------------------------------------------------------


def _unouter(e: Expr) -> Expr:
    return transform(e, lambda x: ColumnRef(x.field) if isinstance(x, OuterRef) else None)


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
        if has_outer_ref(plan.filter) if plan.filter is not None else False:
            raise UnsupportedError("outer references in an outer join condition are not supported")
        return Join(left, plan.right, plan.kind, plan.on, plan.filter, plan.null_aware), lp
    raise UnsupportedError(
        f"correlated subquery through {type(plan).__name__.lower()} is not supported yet")


def column_ids_of(exprs: list[Expr]) -> set[str]:
    out: set[str] = set()
    for e in exprs:
        out |= column_ids(e)
    return out


# ---- EXISTS / IN -------------------------------------------------------------------------------


def _strip_project(plan: LogicalPlan) -> LogicalPlan:
    return plan.input if isinstance(plan, Project) else plan


def _exists_join(outer: LogicalPlan, sub: SubqueryExpr, negated: bool) -> LogicalPlan:
    inner = decorrelate(sub.plan)
    inner, corr = _pull(_strip_project(inner))
    cond = and_(_unouter(c) for c in corr)
    return Join(outer, inner, "anti" if negated else "semi", (), cond)


def _in_join(outer: LogicalPlan, sub: SubqueryExpr, negated: bool) -> LogicalPlan:
    inner = decorrelate(sub.plan)
    inner, corr = _pull(inner)
    value = ColumnRef(inner.schema[0])
    arg = sub.arg
    if value.dtype != arg.dtype:
        common = T.common_type(arg.dtype, value.dtype)
        arg, value = B.cast(arg, common), B.cast(value, common)
    eq = B.compare("eq", arg, value)
    corr = [_unouter(c) for c in corr]
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


def _replace_scalars(plan: LogicalPlan, e: Expr) -> tuple[LogicalPlan, Expr]:
    subs = [x for x in walk(e) if isinstance(x, SubqueryExpr)]
    mapping: dict[int, Expr] = {}
    for s in subs:
        if s.kind != "scalar":
            raise UnsupportedError(
                f"{s.kind.upper()} subqueries are only supported as AND-ed WHERE conditions")
        plan, value = _scalar_join(plan, s)
        mapping[id(s)] = value
    return plan, transform(e, lambda x: mapping.get(id(x)))


def _one_row(plan: LogicalPlan) -> bool:
    """True when the plan yields at most one row by construction."""
    p = plan
    while isinstance(p, (Project, Filter, Sort, Limit)):
        if isinstance(p, Limit) and p.fetch is not None and p.fetch <= 1:
            return True
        p = p.input
    return isinstance(p, Aggregate) and not p.group


def _scalar_join(outer: LogicalPlan, sub: SubqueryExpr) -> tuple[LogicalPlan, Expr]:
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
    body, corr = _pull(agg.input)
    pairs: list[tuple[Expr, Expr]] = []
    for c in corr:
        if not (isinstance(c, Call) and c.fn == "eq"):
            raise UnsupportedError(
                "correlated scalar subqueries are supported with equality correlation only")
        a, b = c.args
        if has_outer_ref(a) and not has_outer_ref(b) and not column_ids(a):
            pairs.append((_unouter(a), b))
        elif has_outer_ref(b) and not has_outer_ref(a) and not column_ids(b):
            pairs.append((_unouter(b), a))
        else:
            raise UnsupportedError("correlation predicate mixes inner and outer columns")
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


def _empty_value(value_expr: Expr, agg: Aggregate) -> Expr | None:
    """The subquery's value over no rows, when it is not simply NULL (COUNT gives 0)."""
    counts = {f.id for a, f in zip(agg.aggs, agg.agg_fields, strict=True)
              if a.fn in ("count", "count_star")}
    non_strict = any(isinstance(x, Call) and F.SCALAR[x.fn].nulls != "propagate"
                     for x in walk(value_expr)) or any(isinstance(x, Case) for x in walk(value_expr))
    refs = column_ids(value_expr)
    if not (refs & counts) and not non_strict:
        return None
    mapping = {}
    for a, f in zip(agg.aggs, agg.agg_fields, strict=True):
        mapping[f.id] = Literal(0, f.dtype) if f.id in counts else Literal(None, f.dtype)
    return transform(value_expr, lambda x: mapping.get(x.id) if isinstance(x, ColumnRef) else None)


__all__ = ["decorrelate", "AggCall"]
