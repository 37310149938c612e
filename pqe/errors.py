"""The error model: every error pqe raises on purpose is a `pqe.Error`.

User errors (bad SQL, unknown names, bad data) are kept apart from internal errors (a bug in
pqe). Messages are single-line and name the culprit; SQL errors carry line and column.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class Error(Exception):
    """Base class of every error pqe raises on purpose (also PEP 249's `Error`). Errors
    about a place in the SQL text have `line` and `column` (1-based), else None."""

    line: int | None = None
    column: int | None = None


class Warning(Exception):  # noqa: A001 - PEP 249 name
    """PEP 249 Warning (pqe does not raise it)."""


# PEP 249 hierarchy: pqe's own error classes below subclass these, so DB-API users can catch
# ProgrammingError for bad SQL and OperationalError for failures while running.
class InterfaceError(Error):
    pass


class DatabaseError(Error):
    pass


class DataError(DatabaseError):
    pass


class OperationalError(DatabaseError):
    pass


class IntegrityError(DatabaseError):
    pass


class ProgrammingError(DatabaseError):
    pass


class NotSupportedError(DatabaseError):
    pass


class SQLSyntaxError(ProgrammingError):
    """The SQL text does not parse. Carries `line`, `column` (1-based) and the offending text."""

    def __reduce__(self):
        return (type(self), (self.message, self.line, self.column, self.text))

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 text: str | None = None):
        self.line = line
        self.column = column
        self.text = text
        self.message = message
        where = f" at line {line}, column {column}" if line is not None else ""
        near = f" near '{text}'" if text else ""
        super().__init__(f"syntax error{where}{near}: {message}")


class BindError(ProgrammingError):
    """A name or type problem found while binding a query to the catalog."""


class UnknownTableError(BindError):
    pass


class UnknownColumnError(BindError):
    pass


class AmbiguousColumnError(BindError):
    pass


class TypeMismatchError(BindError):
    pass


class AggregateMisuseError(BindError):
    pass


class ConstraintError(IntegrityError):
    """A write would break a PRIMARY KEY, UNIQUE or NOT NULL constraint; nothing was written."""


class UnsupportedError(NotSupportedError):
    """A construct pqe does not implement; the message names it."""


class ExecutionError(OperationalError):
    """A failure while running a plan: names the operator, and the file or partition if known."""


class DataValueError(ExecutionError, DataError):
    """A value out of its type's range or not valid for it while running (an integer
    overflow, a failed cast, a date past its range): PEP 249's DataError, and an
    ExecutionError as every failure while running is."""


class UserFunctionError(ExecutionError):
    """A user-defined function failed or returned something other than it declared."""


class QueryCancelled(OperationalError):
    """The query was stopped: interrupted (Ctrl-C) or past its timeout."""


class QueryTimeout(QueryCancelled):
    """The query ran longer than its `timeout=`."""


class ResourceError(OperationalError):
    """The query would need more memory than this machine has available."""


class CatalogError(ProgrammingError):
    """Registering or dropping tables failed (missing path, duplicate name, ...)."""


class InternalError(DatabaseError):
    """An invariant inside pqe broke: this is a bug in pqe."""

    def __init__(self, message: str):
        self.detail = message
        super().__init__(f"internal error (this is a bug in pqe, please report it): {message}")

    def __reduce__(self):
        return (type(self), (self.detail,))


def suggest(name: str, candidates: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest candidate, or ''."""
    # (a candidate spelled as `name` is one the lookup could not see from where it was
    # written: suggesting it named the missing column itself)
    cands = [c for c in dict.fromkeys(candidates) if c != name]
    lowered = {c.lower(): c for c in cands}
    match = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return f" (did you mean '{lowered[match[0]]}'?)" if match else ""
