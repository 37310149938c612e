"""Rule: push semi and anti joins below inner joins, to the input they filter.

`(A JOIN B) SEMI JOIN S ON A.x = S.y` keeps the rows of A JOIN B whose A-part has a match in S,
which is `(A SEMI JOIN S) JOIN B`: the semi join then filters A before the (usually much
bigger) join with B. The same holds for anti joins. WHERE `x IN (subquery)` and `EXISTS`
become semi joins above the whole FROM clause (TPC-H Q18, Q20, Q21, Q22); this rule moves them
to the table they constrain.
"""

from __future__ import annotations

from ..plan.expr import column_ids, column_ids_all
from ..plan.logical import Join, LogicalPlan, transform_up


def push_down_semi_join(plan: LogicalPlan) -> LogicalPlan:
    return transform_up(plan, _rule)


def _rule(node: LogicalPlan) -> LogicalPlan | None:
    if not (isinstance(node, Join) and node.kind in ("semi", "anti")):
        return None
    pushed = _push(node)
    return pushed if pushed is not node else None


def _left_columns(node: Join) -> set[str]:
    lids = set(node.left.column_ids)
    used = column_ids_all(a for a, _ in node.on)
    if node.filter is not None:
        used |= column_ids(node.filter) & lids
    return used


def _push(node: Join) -> LogicalPlan:
    inner = node.left
    if not (isinstance(inner, Join) and inner.kind == "inner" and not inner.null_aware):
        return node
    used = _left_columns(node)
    if not used:
        return node  # uncorrelated EXISTS: keep it where it is (cheap either way)
    for side in ("left", "right"):
        child = getattr(inner, side)
        if used <= set(child.column_ids):
            moved = _push(Join(child, node.right, node.kind, node.on, node.filter,
                               node.null_aware))
            if side == "left":
                return Join(moved, inner.right, "inner", inner.on, inner.filter)
            return Join(inner.left, moved, "inner", inner.on, inner.filter)
    return node
