"""Rule: push semi and anti joins below inner joins, to the input they filter.

`(A JOIN B) SEMI JOIN S ON A.x = S.y` keeps the rows of A JOIN B whose A-part has a match in S,
which is `(A SEMI JOIN S) JOIN B`: the semi join then filters A before the (usually much
bigger) join with B. The same holds for anti joins. WHERE `x IN (subquery)` and `EXISTS`
become semi joins above the whole FROM clause (TPC-H Q18, Q20, Q21, Q22); this rule moves them
to the table they constrain, unless joining B shrinks A (a selective dimension, as in Q21):
then the semi join is cheaper above, on fewer rows.
"""

from __future__ import annotations

from ..plan.expr import column_ids, column_ids_all
from ..plan.logical import Join, LogicalPlan, transform_up
from ..plan.stats import Estimator


def push_down_semi_join(plan: LogicalPlan) -> LogicalPlan:
    est = Estimator()
    return transform_up(plan, lambda node: _rule(node, est))


def _rule(node: LogicalPlan, est: Estimator) -> LogicalPlan | None:
    if not (isinstance(node, Join) and node.kind in ("semi", "anti")):
        return None
    pushed = _push(node, est)
    return pushed if pushed is not node else None


def _left_columns(node: Join) -> set[str]:
    lids = set(node.left.column_ids)
    used = column_ids_all(a for a, _ in node.on)
    if node.filter is not None:
        used |= column_ids(node.filter) & lids
    return used


def _push(node: Join, est: Estimator) -> LogicalPlan:
    inner = node.left
    if not (isinstance(inner, Join) and inner.kind == "inner" and not inner.null_aware):
        return node
    used = _left_columns(node)
    if not used:
        return node  # uncorrelated EXISTS: keep it where it is (cheap either way)
    for side in ("left", "right"):
        child = getattr(inner, side)
        if used <= set(child.column_ids):
            if est.rows(inner) < est.rows(child):
                return node  # the inner join filters `child`: semi join after it
            moved = _push(Join(child, node.right, node.kind, node.on, node.filter,
                               node.null_aware), est)
            if side == "left":
                return Join(moved, inner.right, "inner", inner.on, inner.filter)
            return Join(inner.left, moved, "inner", inner.on, inner.filter)
    return node
