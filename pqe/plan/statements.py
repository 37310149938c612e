"""Typed statements: what the SQL front end (and the DataFrame API) hand to the session.

A statement describes work; it never does any. The session (`pqe.session`) plans, optimizes
and executes every one of them, so EXPLAIN, timeouts, cancellation, progress, access checks
and the write lock apply to all statements alike (DataFusion's `LogicalPlan::Ddl`/`Dml`).

Plans inside statements are bound against the catalog snapshot taken when the statement was
bound; write statements are bound under the session's write lock, so the snapshot they change
is the current one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from .expr import Expr
from .logical import LogicalPlan


class Statement:
    """Base of every statement. `writes` says whether it changes the catalog or a file."""

    __slots__ = ()
    writes = False

    @property
    def kind(self) -> str:
        """The statement's SQL keyword(s), e.g. "INSERT" or "CREATE TABLE"."""
        return type(self).__name__.upper()


@dataclass(frozen=True, slots=True)
class Query(Statement):
    """SELECT / VALUES / set operations: a lazy result."""

    plan: LogicalPlan

    @property
    def kind(self) -> str:
        return "SELECT"


@dataclass(frozen=True, slots=True)
class Explain(Statement):
    """EXPLAIN [ANALYZE] <statement>: plans and prints; never executes, except that ANALYZE
    runs a query (and is refused for statements that change anything)."""

    statement: Statement
    analyze: bool = False


@dataclass(frozen=True, slots=True)
class CreateTable(Statement):
    """CREATE [OR REPLACE] TABLE [IF NOT EXISTS] name (columns) | AS query."""

    name: str
    schema: pa.Schema | None  # typed columns; None for CREATE TABLE AS
    source: LogicalPlan | None = None
    column_names: tuple[str, ...] | None = None  # CREATE TABLE t(a, b) AS ...
    replace: bool = False
    if_not_exists: bool = False
    primary_key: tuple[str, ...] = ()
    unique: tuple[tuple[str, ...], ...] = ()
    quoted: bool = False  # a quoted name matches existing names exactly
    writes = True

    @property
    def kind(self) -> str:
        return "CREATE TABLE"


@dataclass(frozen=True, slots=True)
class CreateView(Statement):
    """CREATE [OR REPLACE] VIEW name [(columns)] AS query: the query text, bound at each use."""

    name: str
    sql: str
    column_names: tuple[str, ...] | None = None
    replace: bool = False
    if_not_exists: bool = False
    plan: LogicalPlan | None = None  # the query as bound now (checked at creation, EXPLAIN)
    quoted: bool = False
    # the query as parsed and the statement text its positions refer to (the SQL front end's
    # objects, opaque here): bound at each use (binder.scope.View)
    query: Any = field(default=None, compare=False, repr=False)
    source: str | None = field(default=None, compare=False, repr=False)
    writes = True

    @property
    def kind(self) -> str:
        return "CREATE VIEW"


@dataclass(frozen=True, slots=True)
class Drop(Statement):
    """DROP TABLE | VIEW [IF EXISTS] names."""

    object_kind: str  # "TABLE" or "VIEW"
    names: tuple[tuple[str, bool], ...]  # (name, quoted)
    if_exists: bool = False
    writes = True

    @property
    def kind(self) -> str:
        return f"DROP {self.object_kind}"


@dataclass(frozen=True, slots=True)
class OnConflict:
    """INSERT ... ON CONFLICT (target) DO NOTHING | DO UPDATE SET ..., INSERT OR REPLACE /
    OR IGNORE. `action` is "nothing", "update" or "replace"; `assignments` (for "update") map
    a column to an expression over the existing row (`target_scan` columns) and the proposed
    row (`excluded` columns); `where` filters which conflicting rows are updated."""

    action: str
    target: tuple[str, ...] = ()
    assignments: tuple[tuple[str, Expr], ...] = ()
    where: Expr | None = None
    excluded: tuple[Any, ...] = ()  # Fields standing for the proposed row's columns


@dataclass(frozen=True, slots=True)
class Insert(Statement):
    """INSERT INTO name [(columns)] query [ON CONFLICT ...]: `source` yields the rows for
    `columns` (table column names, in the source's order)."""

    table: str
    provider: Any  # the MemoryTable version the statement was bound against
    columns: tuple[str, ...]
    source: LogicalPlan
    on_conflict: OnConflict | None = None
    writes = True


@dataclass(frozen=True, slots=True)
class Update(Statement):
    """UPDATE name SET ... [WHERE ...]: `plan` yields the table's new rows plus one trailing
    BOOLEAN column, TRUE for the rows the statement changed.

    UPDATE name SET ... FROM ... [WHERE ...] (`assigned` names the columns it sets): `plan`
    yields one row per (target row, FROM row) pair WHERE selects, the target row's position
    in `provider`'s table (INT64) then the new values of `assigned`, in that order, already
    of the columns' types; the session refuses a target row paired more than once."""

    table: str
    provider: Any
    plan: LogicalPlan
    assigned: tuple[str, ...] = ()
    writes = True


@dataclass(frozen=True, slots=True)
class Delete(Statement):
    """DELETE FROM name [WHERE ...]: `plan` yields the rows that stay."""

    table: str
    provider: Any
    plan: LogicalPlan
    writes = True


@dataclass(frozen=True, slots=True)
class Copy(Statement):
    """COPY (query) | table TO 'path' (options): written to a temporary name, renamed when
    complete."""

    source: LogicalPlan
    path: str
    format: str
    options: dict = field(default_factory=dict)
    writes = True


@dataclass(frozen=True, slots=True)
class ShowTables(Statement):
    """SHOW TABLES."""

    @property
    def kind(self) -> str:
        return "SHOW TABLES"


@dataclass(frozen=True, slots=True)
class Describe(Statement):
    """DESCRIBE table | query: its columns, types and nullability."""

    columns: tuple[tuple[str, pa.DataType, bool], ...]
    lengths: tuple[int | None, ...] = ()  # a stored table's VARCHAR(n) lengths, by column


@dataclass(frozen=True, slots=True)
class NoOp(Statement):
    """A statement that does not change any answer (CREATE INDEX, DROP INDEX): checked, then
    done. An index is only a name the session remembers (`index`, on `table`), so a script
    that creates one and drops it later runs, and a second CREATE or a DROP of an unknown
    name fails as in DuckDB (`if_exists`: IF [NOT] EXISTS)."""

    what: str
    index: str | None = None
    table: str | None = None
    if_exists: bool = False

    @property
    def kind(self) -> str:
        return self.what


__all__ = ["Statement", "Query", "Explain", "CreateTable", "CreateView", "Drop", "Insert",
           "OnConflict", "Update", "Delete", "Copy", "ShowTables", "Describe", "NoOp"]
