"""pqe: a parallel dataframe and SQL query engine.

SQL (parsed by sqlglot) or DataFrame calls build one logical plan; the optimizer rewrites it;
the physical planner partitions it; Dask runs it (threads by default, or dask.distributed);
every partition's work is Arrow kernels.

`import pqe` is cheap: the engine (pyarrow, Dask, sqlglot) loads on first use of
`pqe.Context`, `pqe.connect`, `pqe.col`, ... (PEP 562 module attributes).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .access import AccessError
from .errors import (AggregateMisuseError, AmbiguousColumnError, BindError, CatalogError,
                     ConstraintError, DatabaseError, DataError, Error, ExecutionError,
                     IntegrityError, InterfaceError, InternalError, NotSupportedError,
                     OperationalError, ProgrammingError, QueryCancelled, QueryTimeout,
                     ResourceError, SQLSyntaxError, TypeMismatchError, UnknownColumnError,
                     UnknownTableError, UnsupportedError, Warning)

if TYPE_CHECKING:  # pragma: no cover
    from .context import Context
    from .dataframe import DataFrame, GroupBy
    from .dbapi import apilevel, connect, paramstyle, threadsafety
    from .expressions import Expr, col, count, lit

# attribute -> module that defines it, imported on first access
_LAZY = {
    "Context": ".context", "DataFrame": ".dataframe", "GroupBy": ".dataframe",
    "Expr": ".expressions", "col": ".expressions", "lit": ".expressions",
    "count": ".expressions", "connect": ".dbapi", "apilevel": ".dbapi",
    "paramstyle": ".dbapi", "threadsafety": ".dbapi",
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
    "AccessError", "Context", "DataFrame", "GroupBy", "Expr", "col", "lit", "count", "Error",
    "SQLSyntaxError", "BindError", "UnknownTableError", "UnknownColumnError",
    "AmbiguousColumnError", "TypeMismatchError", "AggregateMisuseError", "UnsupportedError",
    "ExecutionError", "CatalogError", "ConstraintError", "InternalError", "QueryCancelled",
    "QueryTimeout", "ResourceError", "connect", "apilevel", "paramstyle", "threadsafety",
    "Warning", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
    "IntegrityError", "ProgrammingError", "NotSupportedError", "__version__",
]
