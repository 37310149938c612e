"""PEP 249 (DB-API 2.0) over a pqe Context.

    conn = pqe.connect()                  # a new Context (keyword arguments go to it)
    conn = pqe.connect(context=ctx)       # wrap an existing one
    cur = conn.cursor()
    cur.execute("SELECT n_name FROM nation WHERE n_nationkey = ?", (7,))

Parameters (`?`, qmark style) are bound as typed literals into the parsed statement — never
pasted into the SQL text — so a value holding quotes or `'; DROP TABLE x; --` is just data.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa

from . import types as T
from .errors import (DatabaseError, DataError, Error, IntegrityError, InterfaceError,
                     InternalError, NotSupportedError, OperationalError, ProgrammingError,
                     Warning)

apilevel = "2.0"
# threads may share the module and connections (not cursors): every statement is atomic and
# writers on one connection are serialized, so concurrent INSERTs never lose a row
threadsafety = 2
paramstyle = "qmark"

__all__ = ["connect", "Connection", "Cursor", "apilevel", "threadsafety", "paramstyle",
           "Error", "Warning", "InterfaceError", "DatabaseError", "DataError",
           "OperationalError", "IntegrityError", "InternalError", "ProgrammingError",
           "NotSupportedError", "STRING", "NUMBER", "DATETIME", "BINARY", "ROWID", "Date",
           "Time", "Timestamp", "Binary", "DateFromTicks", "TimeFromTicks",
           "TimestampFromTicks"]


def connect(context=None, **context_kwargs) -> Connection:
    from .context import Context

    if context is not None and context_kwargs:
        raise InterfaceError("pass either context= or Context arguments, not both")
    if isinstance(context, (str, bytes)) or hasattr(context, "__fspath__"):
        # (sqlite3's and DuckDB's connect('my.db'): pqe keeps no database file)
        raise InterfaceError(f"pqe.connect takes a pqe.Context, not a database path "
                             f"({context!r}): pqe's tables live in memory; register files "
                             f"on the connection's context")
    if context is not None and not hasattr(context, "_session"):
        raise InterfaceError(f"pqe.connect takes a pqe.Context, not "
                             f"{type(context).__name__}")
    own = context is None
    if own:
        try:
            context = Context(**context_kwargs)
        except TypeError as e:  # connect(database=':memory:'), connect(foo=1)
            raise InterfaceError(f"pqe.connect: {e} (it takes a pqe.Context or the "
                                 f"arguments of pqe.Context)") from None
    return Connection(context, own)


class Connection:
    def __init__(self, ctx, owns: bool):
        self._ctx = ctx
        self._owns = owns
        self._closed = False

    @property
    def context(self):
        return self._ctx

    def _check(self):
        if self._closed:
            raise InterfaceError("connection is closed")

    def cursor(self) -> Cursor:
        self._check()
        return Cursor(self)

    def commit(self) -> None:
        self._check()  # every statement takes effect at once; nothing to commit

    def rollback(self) -> None:
        self._check()
        raise NotSupportedError("pqe has no transactions")

    def close(self) -> None:
        if not self._closed and self._owns:
            self._ctx.close()
        self._closed = True

    def execute(self, sql: str, parameters: Sequence[Any] | None = None) -> Cursor:
        return self.cursor().execute(sql, parameters)

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# executemany's INSERT rows per statement (a chunk's literals are held as one statement)
_INSERT_CHUNK = 5_000


class Cursor:
    arraysize = 1

    def __init__(self, conn: Connection):
        self.connection = conn
        self._table: pa.Table | None = None
        self._rows: list[tuple] | None = None
        self._pos = 0
        self.description = None
        self.rowcount = -1
        self._closed = False

    def _check(self):
        if self._closed:
            raise InterfaceError("cursor is closed")
        self.connection._check()

    def close(self) -> None:
        self._closed = True
        self._table = self._rows = None

    def execute(self, sql: str, parameters: Sequence[Any] | None = None) -> Cursor:
        self._check()
        if not isinstance(sql, str):
            raise ProgrammingError("SQL must be a string")
        # a statement that fails leaves no result set: the one before must not be read as its
        self._table, self._rows, self._pos, self.description, self.rowcount = None, None, 0, None, -1
        session = self.connection._ctx.session
        result = session.sql(sql, parameters if parameters is not None else ())
        if result.plan is not None:
            self._set_rows(session.run(result.plan))
        elif result.table is not None:
            self._set_rows(result.table)
        else:  # DDL / DML: no result set
            self._table, self._rows, self._pos = None, [], 0
            self.description = None
            self.rowcount = result.rows_affected if result.rows_affected is not None else -1
        return self

    def executemany(self, sql: str, seq_of_parameters: Iterable[Sequence[Any]]) -> Cursor:
        self._check()
        # no result set from before stays readable (an empty sequence runs nothing)
        self._table, self._rows, self._pos, self.description = None, [], 0, None
        total = 0
        if not isinstance(sql, str):
            raise ProgrammingError("SQL must be a string")
        if isinstance(seq_of_parameters, (str, bytes)) \
                or not isinstance(seq_of_parameters, Iterable):
            raise ProgrammingError("executemany() takes a sequence of parameter rows, not "
                                   f"{type(seq_of_parameters).__name__}")
        rows = seq_of_parameters if isinstance(seq_of_parameters, Sequence) \
            else list(seq_of_parameters)
        session = self.connection._ctx.session
        # `INSERT ... VALUES (?, ...)`: the rows of a chunk are one statement (one bind, plan
        # and commit; a statement per row took ~1.8 ms a row); anything else, or rows that
        # are not sequences, one execute() per row
        start = 0
        if all(isinstance(p, Sequence) and not isinstance(p, (str, bytes)) for p in rows):
            while start < len(rows):
                chunk = rows[start:start + _INSERT_CHUNK]
                result = session.insert_rows(sql, chunk)
                if result is None:
                    break
                total += max(result.rows_affected or 0, 0)
                start += len(chunk)
        for params in rows[start:]:
            self.execute(sql, params)
            if self.description is not None:
                # a query's rows would be read only for its last parameters, the others
                # dropped unseen (sqlite3 refuses it too)
                self._table, self._rows, self._pos, self.description = None, [], 0, None
                self.rowcount = -1
                raise ProgrammingError("executemany() runs statements that return no rows "
                                       "(INSERT, UPDATE, DELETE); run a query with execute()")
            total += max(self.rowcount, 0)
        self.rowcount = total
        return self

    def _set_rows(self, table: pa.Table) -> None:
        self._table = table
        self._rows = None
        self._pos = 0
        self.rowcount = table.num_rows
        self.description = [(f.name, _type_code(f.type), None, None, None, None, f.nullable)
                            for f in table.schema]

    def _materialize(self) -> list[tuple]:
        if self._rows is None:
            if self._table is None:
                raise ProgrammingError("no result set: execute a query first")
            cols = [_intervals_as_timedeltas(c) if pa.types.is_interval(c.type)
                    else T.python_values(c, n)
                    for c, n in zip(self._table.columns, self._table.column_names, strict=True)]
            self._rows = list(zip(*cols)) if cols else []
        return self._rows

    def fetchone(self):
        self._check()
        rows = self._materialize()
        if self._pos >= len(rows):
            return None
        self._pos += 1
        return rows[self._pos - 1]

    def fetchmany(self, size: int | None = None):
        self._check()
        rows = self._materialize()
        n = self.arraysize if size is None else size
        if isinstance(n, bool) or not isinstance(n, int):
            raise ProgrammingError(f"fetchmany size must be an integer, not {n!r}")
        # a negative size reads the rest, as sqlite3 does (a slice to pos + n dropped rows)
        out = rows[self._pos:] if n < 0 else rows[self._pos:self._pos + n]
        self._pos += len(out)
        return out

    def fetchall(self):
        self._check()
        rows = self._materialize()
        out = rows[self._pos:]
        self._pos = len(rows)
        return out

    def fetch_arrow_table(self) -> pa.Table:
        self._check()
        if self._table is None:
            raise ProgrammingError("no result set: execute a query first")
        return self._table

    def nextset(self) -> None:
        """A statement gives at most one result set: there is never a next one."""
        self._check()
        return None

    def callproc(self, procname: str, parameters=None):
        raise NotSupportedError("pqe has no stored procedures")

    def setinputsizes(self, sizes) -> None:
        pass

    def setoutputsize(self, size, column=None) -> None:
        pass

    def __iter__(self):
        while (row := self.fetchone()) is not None:
            yield row


class _TypeSet(frozenset):
    def __eq__(self, other):
        return other in self if isinstance(other, str) else frozenset.__eq__(self, other)

    __hash__ = frozenset.__hash__


STRING = _TypeSet({"VARCHAR"})
BINARY = _TypeSet({"BLOB"})
NUMBER = _TypeSet({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "REAL", "DOUBLE", "DECIMAL",
                   "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"})
DATETIME = _TypeSet({"DATE", "TIMESTAMP", "TIMESTAMPTZ", "TIME"})
ROWID = _TypeSet()


def _type_code(t: pa.DataType) -> str:
    if pa.types.is_time(t):  # (time32[ms], time64[us], ...: one SQL type)
        return "TIME"
    name = T.type_name(t)
    return "DECIMAL" if name.startswith("DECIMAL") else name


# PEP 249's type constructors. (pqe binds dates and naive datetimes; Time and Binary values
# are refused as parameters by name, UnsupportedError, since pqe has no TIME or BLOB literal)
Date = datetime.date
Time = datetime.time
Timestamp = datetime.datetime
Binary = bytes


def DateFromTicks(ticks: float) -> datetime.date:  # noqa: N802 - PEP 249 name
    return datetime.date.fromtimestamp(ticks)


def TimeFromTicks(ticks: float) -> datetime.time:  # noqa: N802 - PEP 249 name
    return datetime.datetime.fromtimestamp(ticks).time()


def TimestampFromTicks(ticks: float) -> datetime.datetime:  # noqa: N802 - PEP 249 name
    return datetime.datetime.fromtimestamp(ticks)


def _intervals_as_timedeltas(column) -> list:
    """An INTERVAL column's values as datetime.timedelta, a month counted as 30 days (as
    DuckDB's and psycopg's Python interfaces give them; Arrow's MonthDayNano before), to the
    microsecond (pqe's intervals have no finer part)."""
    out = []
    for v in column.to_pylist():
        if v is None:
            out.append(None)
            continue
        micros = abs(v.nanoseconds) // 1000
        out.append(datetime.timedelta(days=v.months * 30 + v.days,
                                      microseconds=micros if v.nanoseconds >= 0 else -micros))
    return out
