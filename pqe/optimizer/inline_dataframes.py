"""Rule: a scan of a DataFrame registered by name (`Context.register_dataframe`, a
`PlanTable`) becomes the DataFrame's plan, under the scan's column ids.

It runs first, so every later rule sees the DataFrame's own nodes: filters written in SQL
over the registered name reach the DataFrame's scans, unused columns are pruned, and a
registered DataFrame read twice is one shared subplan (like a CTE). Subquery plans inside
expressions are rewritten too (decorrelation runs after this rule).
"""

from __future__ import annotations

from dataclasses import replace

from ..plan.expr import ColumnRef, SubqueryExpr, and_, has_subquery, transform, walk
from ..plan.logical import (Filter, LogicalPlan, Project, Scan, map_expressions, transform_up,
                            walk_plan)
from ..plan.tables import PlanTable


def inline_dataframes(plan: LogicalPlan) -> LogicalPlan:
    if not _reads_a_dataframe(plan):
        return plan  # (most queries: a walk, not a rewrite that fingerprints every node)
    return transform_up(plan, _node)


def _reads_a_dataframe(plan: LogicalPlan) -> bool:
    """Whether a scan of a registered DataFrame is in `plan` or a subquery plan inside it."""
    for node in walk_plan(plan):
        if isinstance(node, Scan) and isinstance(node.provider, PlanTable):
            return True
        if any(isinstance(x, SubqueryExpr) and _reads_a_dataframe(x.plan)
               for e in node.expressions() if has_subquery(e) for x in walk(e)):
            return True
    return False


def _node(node: LogicalPlan) -> LogicalPlan | None:
    if isinstance(node, Scan) and isinstance(node.provider, PlanTable):
        return _inline(node)
    if not any(has_subquery(e) for e in node.expressions()):
        return None  # nothing to rewrite: the node stays the same object
    out = map_expressions(node, _subqueries)
    return None if out is node else out


def _subqueries(e):
    def fn(x):
        if isinstance(x, SubqueryExpr):
            inner = inline_dataframes(x.plan)
            return None if inner is x.plan else replace(x, plan=inner)
        return None

    return transform(e, fn)


def _inline(scan: Scan) -> LogicalPlan:
    inner = inline_dataframes(scan.provider.plan)
    # the scan's fields are the DataFrame's columns in order, under ids of this use
    by_id = {f.id: ColumnRef(g) for f, g in zip(scan.fields, inner.schema, strict=True)}
    current: LogicalPlan = inner
    if scan.filters:
        from ..plan.expr import replace_columns

        current = Filter(current, and_([replace_columns(p, by_id) for p in scan.filters]))
    return Project(current, tuple(by_id[f.id] for f in scan.schema), scan.schema)


__all__ = ["inline_dataframes"]
