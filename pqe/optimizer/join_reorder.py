"""Rule: order inner joins greedily by estimated intermediate size.

A tree of inner joins is flattened into its inputs and conditions; then, like Greedy Operator
Ordering, the pair of inputs connected by a condition whose join is estimated smallest is
joined first, until one input remains. Inputs with no connecting condition are joined (cross
product) only when nothing connected is left, so a query never builds a cross product while
join keys exist. The larger input of each join goes left (the probe side).

Estimates come from `pqe.plan.stats` (Parquet row counts and min/max, filter selectivity).
"""

from __future__ import annotations

from .. import types as T
from ..plan.expr import Call, ColumnRef, Expr, and_, column_ids, conjuncts
from ..plan.logical import Filter, Join, LogicalPlan, Project
from ..plan.stats import Estimator
from .extract_join_keys import _rule as _keys

MAX_GREEDY_INPUTS = 16


def join_reorder(plan: LogicalPlan) -> LogicalPlan:
    return _visit(plan, Estimator())


def _visit(plan: LogicalPlan, est: Estimator) -> LogicalPlan:
    if isinstance(plan, Join) and plan.kind == "inner" and not plan.null_aware:
        leaves: list[LogicalPlan] = []
        conds: list[Expr] = []
        _flatten(plan, leaves, conds)
        leaves = [_visit(leaf, est) for leaf in leaves]
        if len(leaves) > MAX_GREEDY_INPUTS:
            return plan.with_children(tuple(_visit(k, est) for k in plan.children()))
        new = _greedy(leaves, conds, est)
        if new.column_ids != plan.column_ids:
            new = Project(new, tuple(ColumnRef(f) for f in plan.schema), plan.schema)
        return new
    kids = plan.children()
    if not kids:
        return plan
    new_kids = tuple(_visit(k, est) for k in kids)
    if all(a is b for a, b in zip(new_kids, kids, strict=True)):
        return plan
    return plan.with_children(new_kids)


def _flatten(plan: LogicalPlan, leaves: list[LogicalPlan], conds: list[Expr]) -> None:
    if isinstance(plan, Join) and plan.kind == "inner" and not plan.null_aware:
        for a, b in plan.on:
            conds.append(Call("eq", (a, b), T.BOOLEAN, a.nullable or b.nullable))
        conds.extend(conjuncts(plan.filter))
        _flatten(plan.left, leaves, conds)
        _flatten(plan.right, leaves, conds)
    else:
        leaves.append(plan)


def _greedy(leaves: list[LogicalPlan], conds: list[Expr], est: Estimator) -> LogicalPlan:
    items = [(leaf, set(leaf.column_ids)) for leaf in leaves]
    pending = list(conds)
    while len(items) > 1:
        best = None
        for i in range(len(items)):
            for j in range(i + 1, len(items)):
                (pi, ii), (pj, ij) = items[i], items[j]
                union = ii | ij
                usable = [c for c in pending
                          if column_ids(c) <= union and not column_ids(c) <= ii
                          and not column_ids(c) <= ij]
                # probe (left) = larger estimated input
                left, right = (pi, pj) if est.rows(pi) >= est.rows(pj) else (pj, pi)
                cand = Join(left, right, "inner", (), and_(usable))
                keyed = _keys(cand) or cand
                connected = bool(keyed.on)
                score = (not connected, est.rows(keyed), i, j)
                if best is None or score < best[0]:
                    best = (score, i, j, keyed, usable)
        _, i, j, joined, used = best
        pending = [c for c in pending if c not in used]
        items = [it for k, it in enumerate(items) if k not in (i, j)]
        items.append((joined, set(joined.column_ids)))
    plan = items[0][0]
    rest = and_(pending)
    return Filter(plan, rest) if rest is not None else plan
