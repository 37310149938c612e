"""Rule: a semi or anti join whose condition, beyond its equality keys, compares one
expression of each side answers from the right side's extremes per key.

`EXISTS (SELECT 1 FROM r WHERE r.k = l.k AND r.y <> l.x)` asks whether some row of l's key
group in r has a y other than l.x, which is whether that group's smallest or largest y
differs from l.x; `r.y > l.x` whether its largest y is above l.x. So

    l SEMI JOIN r ON l.k = r.k AND l.x <> r.y
    = l SEMI JOIN (SELECT k, min(y) AS lo, max(y) AS hi FROM r GROUP BY k) g
                  ON l.k = g.k AND (l.x <> g.lo OR l.x <> g.hi)

and the same for an anti join (NOT EXISTS): the grouped side has one row per key, so a left
row meets one row instead of every row of its key. Checking the pairs costs the sum over keys
of (left rows x right rows) of that key: a key held by 20,000 rows of each side made 400M
pairs (2.5 s where DuckDB takes 0.04), and the pattern is common: TPC-H Q21 and TPC-DS Q16,
Q94 and Q95 ask for orders shipped from more than one warehouse or supplier this way.

Why the answers are the same: MIN and MAX skip NULLs, as the comparison does (a NULL y
compares to nothing); a key group without a non-NULL y gets NULL extremes, which compare to
nothing either; a NULL x compares to nothing on both forms. Every right row is in exactly one
group, and a group's rows all have equal keys, so a left row meets a group exactly when it
met its rows. Terms of the condition over the left side only stay in it (they hold or not
for the left row whatever right row it meets).

Only where that reasoning holds: keys and compared values of types whose equality is exact
and whose order MIN/MAX share with the comparison (integers, DECIMALs, text, dates, times,
timestamps, booleans; not floating point, where -0.0 = 0.0 and NaN order differ between
grouping and comparing); a right expression that cannot raise (it is computed for every
right row, where the join computed it for matched pairs only); nothing volatile; not the
null-aware anti join of NOT IN; and a right side not already one row per key. And only where
it pays (LEFT_ROWS_PER_KEY).
"""

from __future__ import annotations

from ..plan import builder as B
from ..plan.expr import ColumnRef, and_, is_volatile, or_
from ..plan.extremes import exact, extremes_shape
from ..plan.logical import Aggregate, Join, LogicalPlan, Project, transform_up
from ..plan.stats import Estimator

# Checking pairs costs about (left rows) x (right rows per key), grouping the right side its
# rows: grouped only when the left side has at least this many rows per right key. A small
# left side meets few right rows (TPC-H Q21's 75k late lines of Argentine suppliers against
# 6M lines in 1.5M orders: 0.23 s as pairs, 0.34 s grouped; TPC-DS Q94's 147 rows against
# 720k in 60k orders: 0.042 -> 0.050 s); a left side as big as the right grouped pays off
# (TPC-DS Q95's 720k rows: 0.124 -> 0.075 s; a key held by 20,000 rows of each side, 2.5 s
# -> 0.04 s). A small left side whose rows crowd onto a key the right side holds many rows
# of is answered from extremes too, per partition of the right side, when the left side is
# the one hashed (execution.lower's build-left semi join)
LEFT_ROWS_PER_KEY = 1.0


def rewrite_semi_join_extremes(plan: LogicalPlan) -> LogicalPlan:
    return transform_up(plan, _rule)


def _rule(node: LogicalPlan) -> LogicalPlan | None:
    if not (isinstance(node, Join) and node.kind in ("semi", "anti") and node.on
            and node.filter is not None and not node.null_aware):
        return None
    if not all(exact(rk.dtype) and not is_volatile(rk) for _, rk in node.on):
        return None
    if _one_row_per_key(node.right, [rk for _, rk in node.on]):
        return None
    shape = extremes_shape(node.filter, set(node.left.column_ids), set(node.right.column_ids))
    if shape is None:
        return None
    grouped = B.aggregate(node.right, [(rk, rk.field.name if isinstance(rk, ColumnRef) else "key")
                                       for _, rk in node.on],
                          [(B.aggregate_call(fn, [shape.y]), fn) for fn in shape.fns])
    est = Estimator.shared()
    if est.rows(node.left) < LEFT_ROWS_PER_KEY * est.rows(grouped):
        return None
    keys = tuple((lk, ColumnRef(f)) for (lk, _), f in zip(node.on, grouped.group_fields,
                                                           strict=True))
    compared = or_(B.compare(shape.op, shape.x, ColumnRef(f)) for f in grouped.agg_fields)
    return Join(node.left, grouped, node.kind, keys, and_([*shape.left_only, compared]),
                node.null_aware)


def _one_row_per_key(plan: LogicalPlan, keys: list[Expr]) -> bool:
    """`plan` is an aggregate (under projections that rename) grouped by exactly `keys`'
    columns: at most one row per key already."""
    wanted = set()
    for k in keys:
        if not isinstance(k, ColumnRef):
            return False
        wanted.add(k.id)
    while isinstance(plan, Project):
        renamed = set()
        for e, f in zip(plan.exprs, plan.fields, strict=True):
            if f.id in wanted:
                if not isinstance(e, ColumnRef):
                    return False
                renamed.add(e.id)
        if len(renamed) != len(wanted):
            return False
        wanted, plan = renamed, plan.input
    return (isinstance(plan, Aggregate) and not plan.local
            and {f.id for f in plan.group_fields} == wanted)


__all__ = ["rewrite_semi_join_extremes"]
