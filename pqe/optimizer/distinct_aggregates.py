"""Rule: DISTINCT aggregates as a distinct pre-aggregation (no per-group sets).

`SELECT k, count(DISTINCT x) ... GROUP BY k` becomes an aggregate over `GROUP BY k, x`
followed by `count(x) GROUP BY k`: both phases are ordinary two-phase hash aggregates, so
memory stays bounded by the number of (k, x) pairs per partition.
"""

from __future__ import annotations

from ..errors import UnsupportedError
from ..plan import builder as B
from ..plan.expr import AggCall, ColumnRef
from ..plan.logical import Aggregate, LogicalPlan, transform_up


def rewrite_distinct_aggregates(plan: LogicalPlan) -> LogicalPlan:
    return transform_up(plan, _rule)


def _rule(node: LogicalPlan) -> LogicalPlan | None:
    if not isinstance(node, Aggregate) or not any(a.distinct for a in node.aggs):
        return None
    args = {a.args for a in node.aggs}
    if not all(a.distinct for a in node.aggs) or len(args) != 1 or any(
            a.filter is not None for a in node.aggs):
        raise UnsupportedError(
            "DISTINCT aggregates are supported when every aggregate of the query is DISTINCT "
            "over the same argument, without FILTER (for now)")
    (arg_tuple,) = args
    if len(arg_tuple) != 1:
        raise UnsupportedError("DISTINCT aggregates over several arguments are not supported")
    (arg,) = arg_tuple
    inner_group = [(g, f.name) for g, f in zip(node.group, node.group_fields, strict=True)]
    inner = B.aggregate(node.input, inner_group + [(arg, "distinct_arg")], [])
    key_refs = tuple(ColumnRef(f) for f in inner.group_fields[: len(node.group)])
    value = ColumnRef(inner.group_fields[-1])
    aggs = tuple(AggCall(a.fn, (value,), a.dtype, False, None) for a in node.aggs)
    return Aggregate(inner, key_refs, node.group_fields, aggs, node.agg_fields)
