"""pqe: a parallel dataframe and SQL query engine.

SQL (parsed by sqlglot) or DataFrame calls build one logical plan; the optimizer rewrites it;
the physical planner partitions it; Dask runs it (threads by default, or dask.distributed);
every partition's work is Arrow kernels.

`import pqe` is cheap: the engine (pyarrow, Dask, sqlglot) loads on first use of
`pqe.Context`, `pqe.connect`, `pqe.col`, ... (PEP 562 module attributes).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

# Arrow picks its allocator once, when pyarrow loads, from ARROW_DEFAULT_MEMORY_POOL (its
# default is mimalloc). pqe asks for the system allocator unless the user chose one: TPC-H
# SF10, one query per fresh process: peak RSS summed over the 22 queries 14,847 -> 13,924
# MiB (q12 551 -> 422, q22 512 -> 385) with the same times (SF1 warm: equal within noise);
# mimalloc keeps freed pages mapped per thread, and Arrow's buffers are often freed on
# another thread than allocated them. It only takes effect when pqe is imported before
# pyarrow; otherwise the process keeps the pool it has (memory_limit= then warns). Being an
# environment variable, it also reaches child processes (workers started by `workers=` are
# given it explicitly).
if "pyarrow" not in sys.modules:
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
elif "ARROW_DEFAULT_MEMORY_POOL" not in os.environ \
        and sys.modules["pyarrow"].default_memory_pool().backend_name == "mimalloc":
    # pyarrow came first (`import pyarrow as pa; import pqe`): the same choice, made on the
    # running process (what Arrow allocated before keeps its pool). mimalloc maps its arenas
    # with huge pages: a first 1.2 GB join output took 4-10 s of page faults against 1 s
    _pa = sys.modules["pyarrow"]
    _pa.set_memory_pool(_pa.system_memory_pool())
    del _pa

from ._version import __version__
from .access import AccessError
from .errors import (AggregateMisuseError, AmbiguousColumnError, BindError, CatalogError,
                     ConstraintError, DatabaseError, DataError, DataValueError, Error,
                     ExecutionError,
                     IntegrityError, InterfaceError, InternalError, NotSupportedError,
                     OperationalError, ProgrammingError, QueryCancelled, QueryTimeout,
                     ResourceError, SQLSyntaxError, TypeMismatchError, UnknownColumnError,
                     UnknownTableError, UnsupportedError, UserFunctionError, Warning)


def _few_malloc_arenas() -> None:
    """glibc gives each thread that allocates its own heap arena, up to 8 per core, and a
    buffer freed in one arena is not reused by another: Arrow's and Dask's threads spread a
    query's freed buffers over many arenas. pqe asks for one per core (at least 2) unless
    the user chose (MALLOC_ARENA_MAX): on 2 cores, TPC-H SF10 in a fresh process, peak RSS
    Q13 668 -> 605 MiB, Q5 458 -> 417 (benchmarks/COLD.md), with the same CPU time. Threads
    that allocated before keep their arena."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt  # (glibc's; none under musl: left as it is)
    except (OSError, AttributeError):
        return
    mallopt(-8, max(2, os.cpu_count() or 2))  # M_ARENA_MAX


_few_malloc_arenas()

if TYPE_CHECKING:  # pragma: no cover
    from .context import Context
    from .dataframe import DataFrame, GroupBy, Plan
    from .dbapi import apilevel, connect, paramstyle, threadsafety
    from .expressions import (Expr, coalesce, col, count, cume_dist, dense_rank, first_value,
                              lag, last_value, lead, lit, nth_value, ntile, percent_rank, rank,
                              row_number, when)

# attribute -> module that defines it, imported on first access
_LAZY = {
    "Context": ".context", "DataFrame": ".dataframe", "GroupBy": ".dataframe",
    "Plan": ".dataframe", "Expr": ".expressions", "col": ".expressions", "lit": ".expressions",
    "count": ".expressions", "when": ".expressions", "coalesce": ".expressions",
    "row_number": ".expressions", "rank": ".expressions", "dense_rank": ".expressions",
    "percent_rank": ".expressions", "cume_dist": ".expressions", "ntile": ".expressions",
    "lag": ".expressions", "lead": ".expressions", "first_value": ".expressions",
    "last_value": ".expressions", "nth_value": ".expressions", "connect": ".dbapi",
    "apilevel": ".dbapi", "paramstyle": ".dbapi", "threadsafety": ".dbapi",
    **{name: ".dbapi" for name in (
        "STRING", "NUMBER", "DATETIME", "BINARY", "ROWID", "Date", "Time", "Timestamp",
        "Binary", "DateFromTicks", "TimeFromTicks", "TimestampFromTicks")},
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pqe' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AccessError", "Context", "DataFrame", "GroupBy", "Plan", "Expr", "col", "lit", "count",
    "when", "coalesce", "row_number", "rank", "dense_rank", "percent_rank", "cume_dist",
    "ntile", "lag", "lead", "first_value", "last_value", "nth_value", "Error",
    "SQLSyntaxError", "BindError", "UnknownTableError", "UnknownColumnError",
    "AmbiguousColumnError", "TypeMismatchError", "AggregateMisuseError", "UnsupportedError",
    "ExecutionError", "DataValueError", "CatalogError", "ConstraintError", "InternalError",
    "QueryCancelled",
    "QueryTimeout", "ResourceError", "UserFunctionError", "connect", "apilevel", "paramstyle",
    "threadsafety", "STRING", "NUMBER", "DATETIME", "BINARY", "ROWID", "Date", "Time",
    "Timestamp", "Binary", "DateFromTicks", "TimeFromTicks", "TimestampFromTicks",
    "Warning", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
    "IntegrityError", "ProgrammingError", "NotSupportedError", "__version__",
]
