"""Rule: read and carry only the columns a query needs.

Walking down from the root with the set of column ids each node's parent needs: projections
drop unused expressions (and disappear when they become a pass-through), aggregates drop
unused aggregate calls, joins ask each side only for the columns above them plus their keys
and filter, and scans record the surviving columns as their projection, so the Parquet reader
decodes nothing else.
"""

from __future__ import annotations

from ..plan.expr import ColumnRef, Literal, column_ids, column_ids_all, replace_columns
from ..plan.logical import (Aggregate, Filter, Join, Limit, LogicalPlan, Project, Sample, Scan,
                            SingleRow, Sort, Union, Values, Window)


def push_down_projection(plan: LogicalPlan) -> LogicalPlan:
    return _prune(plan, list(plan.column_ids))


def _prune(plan: LogicalPlan, required: list[str]) -> LogicalPlan:
    """Return a plan producing at least `required` (ids, in this order where it matters)."""
    need = set(required)
    if isinstance(plan, Scan):
        keep = [i for i, f in enumerate(plan.fields) if f.id in need]
        if not keep:
            keep = [_narrowest(plan)]
        proj = tuple(keep)
        if proj == plan.projection:
            return plan
        return Scan(plan.table, plan.provider, plan.fields, proj, plan.filters)
    if isinstance(plan, Values):
        keep = [i for i, f in enumerate(plan.fields) if f.id in need]
        if not keep:
            # No column is read: one that cannot fail keeps the row count.
            f = plan.fields[0].with_nullable(True)
            return Values((f,), tuple((Literal(None, f.dtype),) for _ in plan.rows))
        if len(keep) == len(plan.fields):
            return plan
        return Values(tuple(plan.fields[i] for i in keep),
                      tuple(tuple(r[i] for i in keep) for r in plan.rows))
    if isinstance(plan, Project):
        pairs = [(e, f) for e, f in zip(plan.exprs, plan.fields, strict=True) if f.id in need]
        if not pairs:
            pairs = [_placeholder(plan.exprs, plan.fields)]
        child_need = column_ids_all(e for e, _ in pairs)
        child = _prune(plan.input, _ordered(plan.input, child_need))
        if [f.id for _, f in pairs] == list(child.column_ids) and all(
                isinstance(e, ColumnRef) and e.field == f for e, f in pairs):
            return child  # pure pass-through
        if isinstance(child, Project):
            merged = _merge(pairs, child)
            if merged is not None:
                return merged
        return Project(child, tuple(e for e, _ in pairs), tuple(f for _, f in pairs))
    if isinstance(plan, Filter):
        child_need = need | column_ids(plan.predicate)
        child = _prune(plan.input, _ordered(plan.input, child_need))
        return Filter(child, plan.predicate)
    if isinstance(plan, Join):
        cond = column_ids_all([e for pair in plan.on for e in pair])
        if plan.filter is not None:
            cond |= column_ids(plan.filter)
        want = need | cond
        left = _prune(plan.left, _ordered(plan.left, want))
        right = _prune(plan.right, _ordered(plan.right, want))
        return Join(left, right, plan.kind, plan.on, plan.filter, plan.null_aware)
    if isinstance(plan, Aggregate):
        pairs = [(a, f) for a, f in zip(plan.aggs, plan.agg_fields, strict=True) if f.id in need]
        if not pairs and not plan.group and plan.aggs and not plan.local:
            # A global aggregate none of whose values is read is one row, whatever its input;
            # computing an aggregate nobody reads could only fail (SUM overflow).
            f = plan.agg_fields[0].with_nullable(True)
            return Values((f,), ((Literal(None, f.dtype),),))
        exprs = list(plan.group) + [a for a, _ in pairs]
        child = _prune(plan.input, _ordered(plan.input, column_ids_all(exprs)))
        return Aggregate(child, plan.group, plan.group_fields, tuple(a for a, _ in pairs),
                         tuple(f for _, f in pairs), plan.local)
    if isinstance(plan, Window):
        pairs = [(c, f) for c, f in zip(plan.calls, plan.fields, strict=True) if f.id in need]
        in_ids = set(plan.input.column_ids)
        child_need = (need & in_ids) | column_ids_all(c for c, _ in pairs)
        child = _prune(plan.input, _ordered(plan.input, child_need))
        if not pairs:
            return child
        return Window(child, tuple(c for c, _ in pairs), tuple(f for _, f in pairs))
    if isinstance(plan, Sort):
        child_need = need | column_ids_all(k.expr for k in plan.keys)
        return Sort(_prune(plan.input, _ordered(plan.input, child_need)), plan.keys, plan.fetch)
    if isinstance(plan, (Limit, SingleRow, Sample)):  # a sample picks rows by position only
        return plan.with_children((_prune(plan.children()[0], required),))
    if isinstance(plan, Union):
        # rows only: the first column stays, computed as DuckDB does (its overflow is an error)
        positions = [i for i, f in enumerate(plan.fields) if f.id in need] or [0]
        inputs = []
        for child in plan.inputs:
            ids = [child.schema[i].id for i in positions]
            pruned = _prune(child, ids)
            if list(pruned.column_ids) != ids:
                pruned = Project(pruned, tuple(ColumnRef(pruned.field(i)) for i in ids),
                                 tuple(pruned.field(i) for i in ids))
            inputs.append(pruned)
        return Union(tuple(inputs), tuple(plan.fields[i] for i in positions))
    return plan.with_children(tuple(_prune(k, list(k.column_ids)) for k in plan.children()))


def _merge(pairs, child: Project) -> LogicalPlan | None:
    """Project over Project -> one Project, when no computed expression would be duplicated."""
    defs = {f.id: e for e, f in zip(child.exprs, child.fields, strict=True)}
    uses: dict[str, int] = {}
    for e, _ in pairs:
        for i in column_ids(e):
            uses[i] = uses.get(i, 0) + 1
    for i, n in uses.items():
        d = defs[i]
        if n > 1 and not isinstance(d, (ColumnRef, Literal)):
            return None
    exprs = tuple(replace_columns(e, defs) for e, _ in pairs)
    fields = tuple(f for _, f in pairs)
    if [f.id for f in fields] == list(child.input.column_ids) and all(
            isinstance(e, ColumnRef) and e.field == f for e, f in zip(exprs, fields, strict=True)):
        return child.input
    return Project(child.input, exprs, fields)


def _placeholder(exprs, fields):
    """The column a projection keeps when none of its columns is read (so its rows still
    count): a constant, never an expression (or a column computed below) that might fail."""
    for e, f in zip(exprs, fields, strict=True):
        if isinstance(e, Literal):
            return e, f
    f = fields[0].with_nullable(True)
    return Literal(None, f.dtype), f


def _ordered(plan: LogicalPlan, ids: set[str]) -> list[str]:
    return [i for i in plan.column_ids if i in ids]


def _narrowest(scan: Scan) -> int:
    """The column a scan that outputs none of its columns (under COUNT(*)) reads to count its
    rows: a fixed-width one its filters read anyway, else the narrowest. Another column
    was a second column to decode: `SELECT count(*) FROM store_sales WHERE ss_quantity >
    50` read ss_sold_date_sk too (25 -> 16 ms). Not a text column the filters read, which
    is read as a dictionary and would be decoded to text for the rows kept."""
    from .. import types as T
    from ..plan.stats import type_width

    filtered = column_ids_all(scan.filters)
    read = [i for i, f in enumerate(scan.fields)
            if f.id in filtered and T.is_fixed_width(f.dtype)]
    return min(read or range(len(scan.fields)),
               key=lambda i: (type_width(scan.fields[i].dtype), i))
