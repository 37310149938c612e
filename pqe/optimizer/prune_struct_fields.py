"""Rule: read only the struct children a query uses.

A struct column of a Parquet scan that the query only ever reads through field access
(`s.x`, `s['y']`, STRUCT_EXTRACT, in any expression of any node) is read as those children
alone: the scan records them (`Scan.nested`) and the reader asks pyarrow.dataset for the
nested fields (the Parquet reader decodes no other leaf), then rebuilds the struct with the
other children NULL, so every type stays as it was. Any other use of the column (the whole
struct selected, compared, passed through under a new id, given to a node this rule does not
know) keeps it whole.
"""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa

from ..catalog import ParquetTable
from ..plan.expr import Call, ColumnRef, Expr, Literal, SubqueryExpr, column_ids_all
from ..plan.logical import (
    Aggregate,
    Filter,
    Join,
    Limit,
    LogicalPlan,
    Project,
    Scan,
    Sort,
    transform_up,
)

# nodes whose every use of a column is one of their expressions (or a pass-through)
_KNOWN = (Scan, Project, Filter, Aggregate, Sort, Limit, Join)


def prune_struct_fields(plan: LogicalPlan) -> LogicalPlan:
    candidates: dict[str, pa.DataType] = {}  # struct column id -> its type
    stack = [plan]
    while stack:
        node = stack.pop()
        if not isinstance(node, _KNOWN):
            return plan
        if isinstance(node, Scan) and isinstance(node.provider, ParquetTable):
            read = {f.id for f in node.schema} | column_ids_all(node.filters)
            for f in node.fields:
                if f.id in read and pa.types.is_struct(f.dtype):
                    candidates[f.id] = f.dtype
        stack.extend(node.children())
    if not candidates:
        return plan
    used: dict[str, set[str]] = {i: set() for i in candidates}
    whole: set[str] = {f.id for f in plan.schema}  # the query returns it
    stack = [plan]
    while stack:
        node = stack.pop()
        stack.extend(node.children())
        for e in node.expressions():
            if not _uses(e, used, whole):
                return plan  # a subquery: not looked into
        if isinstance(node, Project):  # a column passed on under a new id is used whole
            for e, f in zip(node.exprs, node.fields, strict=True):
                if isinstance(e, ColumnRef) and e.id != f.id:
                    whole.add(e.id)
    keep = {i: tuple(sorted(kids)) for i, kids in used.items()
            if i not in whole and kids and len(kids) < candidates[i].num_fields}
    if not keep:
        return plan

    def rule(node: LogicalPlan) -> LogicalPlan | None:
        if not isinstance(node, Scan):
            return None
        nested = tuple((f.id, keep[f.id]) for f in node.fields if f.id in keep)
        return replace(node, nested=nested) if nested else None

    return transform_up(plan, rule)


def _uses(e: Expr, used: dict[str, set[str]], whole: set[str]) -> bool:
    """Record how `e` reads the candidate columns: a child name for each field access, the
    column whole for any other reference. False when `e` holds a subquery."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, SubqueryExpr):
            return False
        if isinstance(x, Call) and x.fn == "struct_extract" and isinstance(x.args[0], ColumnRef) \
                and x.args[0].id in used and isinstance(x.args[1], Literal):
            used[x.args[0].id].add(x.args[1].value)
            continue
        if isinstance(x, ColumnRef) and x.id in used:
            whole.add(x.id)
            continue
        stack.extend(x.children())
    return True
