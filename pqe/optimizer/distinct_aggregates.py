"""Rule: DISTINCT aggregates as distinct pre-aggregations (no per-group sets).

`SELECT k, count(DISTINCT x) ... GROUP BY k` becomes an aggregate over `GROUP BY k, x`
followed by `count(x) GROUP BY k`: both are ordinary two-phase hash aggregates, so memory stays
bounded by the number of (k, x) pairs per partition.

With several DISTINCT arguments (or DISTINCT next to plain aggregates), each argument gets its
own pre-aggregation, plain aggregates one more aggregate, and the results are joined back on
the group keys (NULL keys match each other, as GROUP BY puts them in one group). Every branch
groups the same rows by the same keys, so the branches have the same groups and an inner join
on the keys is exact. `agg(DISTINCT x) FILTER (WHERE c)` is `agg(DISTINCT CASE WHEN c THEN x
END)`, since NULLs are ignored.
"""

from __future__ import annotations

from ..plan import builder as B
from ..plan.expr import AggCall, Case, ColumnRef, Expr, Literal
from ..plan.logical import Aggregate, Join, LogicalPlan, Project, transform_up


def rewrite_distinct_aggregates(plan: LogicalPlan) -> LogicalPlan:
    return transform_up(plan, _rule)


def _unfiltered(a: AggCall) -> AggCall:
    if a.filter is None:
        return a
    arg = a.args[0]
    masked = Case(((a.filter, arg),), Literal(None, arg.dtype), arg.dtype)
    return AggCall(a.fn, (masked, *a.args[1:]), a.dtype, a.distinct, None)


def _rule(node: LogicalPlan) -> LogicalPlan | None:
    if not isinstance(node, Aggregate) or not any(a.distinct for a in node.aggs):
        return None
    branches: dict[tuple[Expr, ...], list[int]] = {}
    plain: list[int] = []
    aggs = [(_unfiltered(a) if a.distinct else a) for a in node.aggs]
    for i, a in enumerate(aggs):
        if a.distinct:
            branches.setdefault(a.args, []).append(i)
        else:
            plain.append(i)
    if len(branches) == 1 and plain:
        one = _single_distinct(node, aggs, plain)
        if one is not None:
            return one
    parts: list[Aggregate] = []
    for arg_tuple, idxs in branches.items():
        # the first argument is the one made distinct; the others are constants (the
        # separator of STRING_AGG(DISTINCT x, sep))
        arg, *consts = arg_tuple
        first = not parts
        inner = B.aggregate(node.input, [(g, f.name) for g, f in
                                         zip(node.group, node.group_fields, strict=True)]
                            + [(arg, "distinct_arg")], [])
        keys = tuple(ColumnRef(f) for f in inner.group_fields[: len(node.group)])
        value = ColumnRef(inner.group_fields[-1])
        gfields = node.group_fields if first else tuple(
            B.new_field(f.name, f.dtype, f.nullable) for f in node.group_fields)
        parts.append(Aggregate(inner, keys, gfields,
                               tuple(AggCall(aggs[i].fn, (value, *consts), aggs[i].dtype)
                                     for i in idxs),
                               tuple(node.agg_fields[i] for i in idxs)))
    if plain:
        gfields = node.group_fields if not parts else tuple(
            B.new_field(f.name, f.dtype, f.nullable) for f in node.group_fields)
        parts.append(Aggregate(node.input, node.group, gfields, tuple(aggs[i] for i in plain),
                               tuple(node.agg_fields[i] for i in plain)))
    if len(parts) == 1:
        return parts[0]
    joined: LogicalPlan = parts[0]
    for p in parts[1:]:
        pairs = []
        for lf, rf in zip(parts[0].group_fields, p.group_fields, strict=True):
            pairs += B.null_safe_key(ColumnRef(lf), ColumnRef(rf))
        joined = Join(joined, p, "inner", tuple(pairs), None)
    return Project(joined, tuple(ColumnRef(f) for f in node.schema), node.schema)


# plain aggregates that one group of (keys, distinct value) can compute in part and the
# groups of the keys combine (SUM of SUMs and of COUNTs, MIN of MINs, MAX of MAXs)
_COMBINABLE = frozenset({"sum", "count", "count_star", "min", "max"})
# distinct aggregates that are the plain aggregate over the distinct values
_OVER_DISTINCT = frozenset({"count", "sum"})


def _single_distinct(node: Aggregate, aggs: list[AggCall], plain: list[int]):
    """One DISTINCT argument beside plain aggregates, in one pass over the input:
    `SELECT k, count(DISTINCT x), sum(y) ... GROUP BY k` is `GROUP BY k, x` computing
    sum(y) per pair, then `GROUP BY k` counting the x groups (NULL x's group not counted)
    and summing the sums. The branch-per-aggregate form joined back on the keys computed
    the input once per branch (each branch reads other columns, so the two inputs are not
    one plan): TPC-DS Q16/Q94/Q95 ran their whole join tree twice. None when an aggregate
    does not split so (AVG, STRING_AGG, a user aggregate, ORDER BY inside)."""
    distinct = [i for i in range(len(aggs)) if aggs[i].distinct]
    if any(aggs[i].fn not in _OVER_DISTINCT or len(aggs[i].args) != 1 for i in distinct):
        return None
    if any(aggs[i].fn not in _COMBINABLE or aggs[i].udf is not None or aggs[i].order_by
           for i in plain):
        return None
    arg = aggs[distinct[0]].args[0]
    partial = [aggs[i] for i in plain]  # (each keeps its FILTER: rows it skips add nothing)
    inner = B.aggregate(node.input, [(g, f.name) for g, f in
                                     zip(node.group, node.group_fields, strict=True)]
                        + [(arg, "distinct_arg")],
                        [(p, "partial") for p in partial])
    n = len(node.group)
    keys = tuple(ColumnRef(f) for f in inner.group_fields[:n])
    value = ColumnRef(inner.group_fields[n])
    states = [ColumnRef(f) for f in inner.agg_fields]
    combine: list[AggCall] = []
    where: dict[int, int] = {}
    for i in distinct:
        where[i] = len(combine)
        combine.append(B.aggregate_call(aggs[i].fn, [value]))
    for k, i in enumerate(plain):
        where[i] = len(combine)
        combine.append(B.aggregate_call(B.combining_fn(aggs[i].fn), [states[k]]))
    cfields = tuple(B.new_field("combined", c.dtype, c.nullable) for c in combine)
    top = Aggregate(inner, keys, node.group_fields, tuple(combine), cfields)
    out = [ColumnRef(f) for f in node.group_fields]
    for i, a in enumerate(aggs):
        state = ColumnRef(cfields[where[i]])
        out.append(state if a.distinct and state.dtype == a.dtype
                   else B.combined_value(a.fn, a.dtype, [state]))
    return Project(top, tuple(out), node.schema)
