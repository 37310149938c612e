"""A DataFrame registered by name (`Context.register_dataframe`): a table provider whose rows
are a logical plan's.

The binder scans it like any table; the optimizer's first rule (`inline_dataframes`) then
replaces every scan of it with the plan itself, so SQL over a registered DataFrame composes
like a view: filters and projections reach the DataFrame's own scans.
"""

from __future__ import annotations

import pyarrow as pa

from ..catalog import TableProvider, TableStats
from .logical import LogicalPlan


class PlanTable(TableProvider):
    """The rows of `plan` (fixed when registered: it keeps reading the table versions it was
    built over, like any DataFrame)."""

    kind = "dataframe"

    def __init__(self, plan: LogicalPlan):
        super().__init__()
        self.plan = plan
        self.schema = pa.schema([pa.field(f.name, f.dtype, f.nullable) for f in plan.schema])

    def statistics(self) -> TableStats:
        return TableStats(None)

    def describe(self) -> str:
        return "dataframe"


__all__ = ["PlanTable"]
