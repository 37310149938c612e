"""What executing a statement returns."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from ..plan.logical import LogicalPlan


@dataclass(frozen=True)
class Result:
    """The outcome of one statement. A query gives its (lazy) `plan`; SHOW, DESCRIBE and
    EXPLAIN give a `table` of rows; INSERT, UPDATE, DELETE, COPY and CREATE TABLE AS give
    `rows_affected`; other DDL gives only its `kind`."""

    kind: str
    plan: LogicalPlan | None = None
    table: pa.Table | None = None
    rows_affected: int | None = None

    @property
    def is_query(self) -> bool:
        return self.plan is not None

    @property
    def has_rows(self) -> bool:
        """Whether the statement returns rows (a query, SHOW, DESCRIBE, EXPLAIN)."""
        return self.plan is not None or self.table is not None
