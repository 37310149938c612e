"""pqe: a parallel dataframe and SQL query engine.

SQL (parsed by sqlglot) or DataFrame calls build one logical plan; the optimizer rewrites it;
the physical planner partitions it; Dask runs it (threads by default, or dask.distributed);
every partition's work is Arrow kernels.
"""

from __future__ import annotations

from .access import AccessError
from .context import Context
from .dataframe import DataFrame, GroupBy
from .expressions import Expr, col, count, lit
from .errors import (AggregateMisuseError, AmbiguousColumnError, BindError, CatalogError,
                     ConstraintError, Error,
                     ExecutionError, InternalError, QueryCancelled, QueryTimeout, ResourceError,
                     SQLSyntaxError,
                     TypeMismatchError, UnknownColumnError, UnknownTableError, UnsupportedError)

from .dbapi import (DatabaseError, DataError, IntegrityError, InterfaceError, NotSupportedError,
                    OperationalError, ProgrammingError, Warning, apilevel, connect, paramstyle,
                    threadsafety)

__version__ = "0.1.0"

__all__ = [
    "AccessError", "Context", "DataFrame", "GroupBy", "Expr", "col", "lit", "count", "Error", "SQLSyntaxError", "BindError", "UnknownTableError",
    "UnknownColumnError", "AmbiguousColumnError", "TypeMismatchError", "AggregateMisuseError",
    "UnsupportedError", "ExecutionError", "CatalogError", "ConstraintError", "InternalError", "QueryCancelled",
    "QueryTimeout", "ResourceError", "connect", "apilevel", "paramstyle", "threadsafety", "Warning", "InterfaceError",
    "DatabaseError", "DataError", "OperationalError", "IntegrityError", "ProgrammingError",
    "NotSupportedError",
]
