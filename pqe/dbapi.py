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
        self._committed = 0
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
        self.rowcount = -1
        try:
            return self._execute_many(sql, seq_of_parameters)
        finally:
            if self.rowcount < 0:  # (failed part-way: the rows the committed statements wrote)
                self.rowcount = self._committed

    def _execute_many(self, sql: str, seq_of_parameters) -> Cursor:
        self._committed = total = 0
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
                self._committed = total
                start += len(chunk)
        if start < len(rows) and len(session.parse(sql, rows[start])) > 1:
            # (each row ran every statement and rowcount counted the last one's rows:
            # 4 rows written, 2 reported; sqlite3 refuses it too)
            raise ProgrammingError("executemany() runs one statement per parameter row; "
                                   "the SQL holds several: call it once for each")
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
            self._committed = total
            self.rowcount = -1
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
            cols = [T.python_values(_pythonable(c, n), n)
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
        """The rows not fetched yet, as an Arrow table; they count as fetched (as DuckDB's
        cursor does: after `fetchone()` the whole table read row 1 twice)."""
        self._check()
        if self._table is None:
            raise ProgrammingError("no result set: execute a query first")
        out = self._table.slice(self._pos)
        self._pos = self._table.num_rows
        return out

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
DATETIME = _TypeSet({"DATE", "TIMESTAMP", "TIMESTAMPTZ", "TIME", "TIMESTAMP_S", "TIMESTAMP_MS",
                     "TIMESTAMP_NS"})
ROWID = _TypeSet()


def _type_code(t: pa.DataType) -> str:
    if pa.types.is_time(t):  # (time32[ms], time64[us], ...: one SQL type)
        return "TIME"
    if pa.types.is_decimal(t):  # (a list of decimals is no NUMBER: DECIMAL(3,1)[] was)
        return "DECIMAL"
    if pa.types.is_fixed_size_binary(t) or pa.types.is_large_binary(t):
        return "BLOB"
    return T.type_name(t)


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


def _pythonable(column: pa.ChunkedArray, name: str) -> pa.ChunkedArray:
    """A result column in the Arrow type whose Python values PEP 249 users expect, nested
    values too: an INTERVAL as a DURATION (datetime.timedelta, a month counted as 30 days,
    as DuckDB's and psycopg's interfaces give it; Arrow's MonthDayNano before, and still
    inside lists and structs), a TIMESTAMP_NS as microseconds (datetime.datetime; it was a
    pandas Timestamp), floored as Python's datetime holds it."""
    if not _needs_python_form(column.type):
        return column
    chunks = [_python_form(c, name) for c in column.chunks]
    return pa.chunked_array(chunks, chunks[0].type if chunks else
                            _python_form(pa.array([], column.type), name).type)


def _needs_python_form(t: pa.DataType) -> bool:
    if pa.types.is_interval(t) or (pa.types.is_timestamp(t) and t.unit == "ns"):
        return True
    if pa.types.is_dictionary(t):
        return _needs_python_form(t.value_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _needs_python_form(t.value_type)
    if pa.types.is_map(t):
        return _needs_python_form(t.key_type) or _needs_python_form(t.item_type)
    if pa.types.is_struct(t):
        return any(_needs_python_form(t.field(k).type) for k in range(t.num_fields))
    return False


# the longest interval fetched as a timedelta, in microseconds: a DURATION's int64 (about
# 292,471 years; Python's timedelta reaches 999999999 days, further, and past the int64 the
# microseconds wrapped: INTERVAL '300000 years' came back as -105503983 days)
_TIMEDELTA_MAX_US = 2.0**63  # (compared as a double: one that may round past it is refused)


def _python_form(arr: pa.Array, name: str) -> pa.Array:
    import numpy as np
    import pyarrow.compute as pc

    from .errors import DataValueError

    t = arr.type
    if not _needs_python_form(t):
        return arr
    if pa.types.is_interval(t):
        from .kernels.udfs import _interval_fields

        f = _interval_fields(arr)
        days = f["months"].astype(np.int64) * 30 + f["days"].astype(np.int64)
        nanos = f["nanos"].astype(np.int64)
        # (to the microsecond toward zero, as before; the days checked before they overflow)
        micros = np.where(nanos >= 0, nanos // 1000, -((-nanos) // 1000))
        valid = pc.is_valid(arr).to_numpy(zero_copy_only=False)
        whole = days.astype(np.float64) * 86_400e6 + micros
        if (valid & (np.abs(whole) >= _TIMEDELTA_MAX_US)).any():
            raise DataValueError(f"column {name!r} holds an INTERVAL longer than a "
                                 f"timedelta of microseconds holds (about 292,000 years); "
                                 f"read it with to_arrow()")
        total = np.where(valid, days * 86_400 * 10**6 + micros, 0)
        return pa.array(total, pa.duration("us"), mask=~valid if arr.null_count else None)
    if pa.types.is_timestamp(t):
        return pc.floor_temporal(arr, unit="microsecond").cast(pa.timestamp("us", t.tz))
    if pa.types.is_dictionary(t):
        return _python_form(arr.dictionary_decode(), name)
    if pa.types.is_struct(t):
        children = [_python_form(arr.field(k), name) for k in range(t.num_fields)]
        return pa.StructArray.from_arrays(children, names=[t.field(k).name
                                                           for k in range(t.num_fields)],
                                          mask=pc.is_null(arr) if arr.null_count else None)
    if pa.types.is_map(t):
        keys, items = _python_form(arr.keys, name), _python_form(arr.items, name)
        return pa.MapArray.from_arrays(arr.offsets, keys, items,
                                       mask=pc.is_null(arr) if arr.null_count else None)
    values = _python_form(pc.list_flatten(arr), name)  # (the values of the non-NULL lists)
    sizes = pc.fill_null(pc.list_value_length(arr), 0).to_numpy(zero_copy_only=False)
    offsets = pa.array(np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64))
    return pa.LargeListArray.from_arrays(offsets, values,
                                         mask=pc.is_null(arr) if arr.null_count else None)
