"""SQLite (Python's stdlib sqlite3) behind the runner's engine interface.

The corpus's expected results come from SQLite, so running it on SQLite through this runner
must pass (almost) everything; that is how the runner's parsing, rendering, sorting and hashing
are validated independently of pqe. Run with engine name "sqlite" so skipif/onlyif select what
SQLite itself ran.

SQLite values are dynamically typed (a column can hold 1, 'x' and 2.5), so each result column
is an Arrow dense union of int64/float64/string/binary children: ``to_pylist`` then yields the
very Python values SQLite returned, which is all the runner looks at.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pyarrow as pa

_CHILD_TYPES = ((int, pa.int64()), (float, pa.float64()), (str, pa.string()),
                (bytes, pa.binary()))


def column_to_arrow(values: list[Any]) -> pa.Array:
    """A column of Python values (SQLite storage classes) as an Arrow array, keeping types."""
    kinds = {type(v) for v in values if v is not None}
    if len(kinds) <= 1:
        return pa.array(values, type=dict(_CHILD_TYPES).get(next(iter(kinds)), pa.null())
                        if kinds else pa.null())
    children: list[list[Any]] = [[] for _ in _CHILD_TYPES]
    type_ids, offsets = [], []
    for v in values:
        code = 0 if v is None else next(i for i, (t, _) in enumerate(_CHILD_TYPES)
                                        if isinstance(v, t))
        type_ids.append(code)
        offsets.append(len(children[code]))
        children[code].append(v)
    return pa.UnionArray.from_dense(
        pa.array(type_ids, pa.int8()), pa.array(offsets, pa.int32()),
        [pa.array(c, type=t) for c, (_, t) in zip(children, _CHILD_TYPES)],
        [t.__name__ for t, _ in _CHILD_TYPES])


class _Result:
    def __init__(self, table: pa.Table):
        self._table = table

    def to_arrow(self) -> pa.Table:
        return self._table


class SQLiteEngine:
    """An in-memory SQLite database with a ``sql(text)`` method like ``pqe.Context``'s."""

    Error = sqlite3.Error

    def __init__(self) -> None:
        self.con = sqlite3.connect(":memory:", isolation_level=None)

    def sql(self, query: str) -> _Result | None:
        try:
            cur = self.con.execute(query)
        except sqlite3.ProgrammingError as e:
            if "one statement at a time" not in str(e):
                raise
            self.con.executescript(query)  # a record holding several statements
            return None
        if cur.description is None:
            return None
        rows = cur.fetchall()
        names = [f"c{i}" for i in range(len(cur.description))]
        columns = [column_to_arrow([r[i] for r in rows]) for i in range(len(names))]
        return _Result(pa.Table.from_arrays(columns, names=names))

    def close(self) -> None:
        self.con.close()
