"""Rule: push semi and anti joins below inner joins, to the input they filter.

`(A JOIN B) SEMI JOIN S ON A.x = S.y` keeps the rows of A JOIN B whose A-part has a match in S,
which is `(A SEMI JOIN S) JOIN B`: the semi join then filters A before the (usually much
bigger) join with B. The same holds for anti joins. WHERE `x IN (subquery)` and `EXISTS`
become semi joins above the whole FROM clause (TPC-H Q18, Q20, Q21, Q22); this rule moves them
to the table they constrain, unless joining B shrinks A (a selective dimension, as in Q21):
then the semi join is cheaper above, on fewer rows, unless the semi join filters A still more.

A semi or anti join asks only whether a match exists, so its right input need not produce
each match once per row of a join inside it: when the columns it reads come from one side of
an inner join there, that join becomes a semi join of that side (`x IN (SELECT a.k FROM a JOIN
b ON ...)` reads `a SEMI JOIN b`), which never produces more rows than `a` has. TPC-DS Q95's
self-join of web_sales on the order number made 6.6M rows out of 0.7M to answer an IN.
"""

from __future__ import annotations

from dataclasses import replace

from ..plan.expr import column_ids, column_ids_all, is_volatile
from ..plan.logical import Filter, Join, LogicalPlan, Project, transform_up
from ..plan.stats import Estimator


def push_down_semi_join(plan: LogicalPlan) -> LogicalPlan:
    est = Estimator.shared()
    return transform_up(plan, lambda node: _rule(node, est))


def _rule(node: LogicalPlan, est: Estimator) -> LogicalPlan | None:
    if not (isinstance(node, Join) and node.kind in ("semi", "anti")):
        return None
    rids = set(node.right.column_ids)
    used = column_ids_all(b for _, b in node.on)
    if node.filter is not None:
        used |= column_ids(node.filter) & rids
    right = _matches_only(node.right, used) if used else None
    if right is not None:
        node = replace(node, right=right)
    pushed = _push(node, est)
    if pushed is not node:
        return pushed
    return node if right is not None else None


def _matches_only(plan: LogicalPlan, used: set[str]) -> LogicalPlan | None:
    """A plan with the same distinct combinations of the `used` columns as `plan` (duplicates
    and the other columns may go), with each inner join whose other side is not read turned
    into a semi join; None when nothing changes."""
    if isinstance(plan, Project):
        pairs = [(e, f) for e, f in zip(plan.exprs, plan.fields, strict=True) if f.id in used]
        if not pairs:
            return None  # nothing read (`IN (SELECT 'b' FROM ...)`): a projection keeps a column
        if any(is_volatile(e) for e, _ in pairs):
            return None
        inner = _matches_only(plan.input, column_ids_all(e for e, _ in pairs))
        if inner is None:
            return None
        return Project(inner, tuple(e for e, _ in pairs), tuple(f for _, f in pairs))
    if isinstance(plan, Filter):
        inner = _matches_only(plan.input, used | column_ids(plan.predicate))
        return None if inner is None else Filter(inner, plan.predicate)
    if not (isinstance(plan, Join) and plan.kind in ("inner", "semi") and not plan.null_aware):
        return None
    lids, rids = set(plan.left.column_ids), set(plan.right.column_ids)
    cond = column_ids_all(e for pair in plan.on for e in pair)
    if plan.filter is not None:
        cond |= column_ids(plan.filter)
    if plan.kind == "semi":
        left = _matches_only(plan.left, (used | cond) & lids)
        right = _matches_only(plan.right, cond & rids)
        if left is None and right is None:
            return None
        return replace(plan, left=left or plan.left, right=right or plan.right)
    if used <= lids:
        keep, other, on = plan.left, plan.right, plan.on
    elif used <= rids:
        keep, other, on = plan.right, plan.left, tuple((b, a) for a, b in plan.on)
    else:
        return None
    kids, oids = set(keep.column_ids), set(other.column_ids)
    keep = _matches_only(keep, (used | cond) & kids) or keep
    other = _matches_only(other, cond & oids) or other
    return Join(keep, other, "semi", on, plan.filter)


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
            below = Join(child, node.right, node.kind, node.on, node.filter, node.null_aware)
            if est.rows(inner) < min(est.rows(child), est.rows(below)):
                # the inner join filters `child` more than the semi join does: semi join
                # after it, on fewer rows (TPC-H Q21's one nation of suppliers). Where the
                # semi join is the sharper filter it goes below: TPC-H Q2's subquery joined
                # all 800k partsupp rows with Asia's suppliers (160k) to keep the 607 of
                # its 752 parts
                return node
            moved = _push(below, est)
            if side == "left":
                return Join(moved, inner.right, "inner", inner.on, inner.filter)
            return Join(inner.left, moved, "inner", inner.on, inner.filter)
    return node
