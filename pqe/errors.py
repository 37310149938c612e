"""The error model: every error pqe raises on purpose is a `pqe.Error`.

User errors (bad SQL, unknown names, bad data) are kept apart from internal errors (a bug in
pqe). Messages are single-line and name the culprit; SQL errors carry line and column.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class Error(Exception):
    """Base class of every error pqe raises on purpose."""


class SQLSyntaxError(Error):
    """The SQL text does not parse. Carries `line`, `column` (1-based) and the offending text."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None,
                 text: str | None = None):
        self.line = line
        self.column = column
        self.text = text
        where = f" at line {line}, column {column}" if line is not None else ""
        near = f" near '{text}'" if text else ""
        super().__init__(f"syntax error{where}{near}: {message}")


class BindError(Error):
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


class UnsupportedError(Error):
    """A construct pqe does not implement; the message names it."""


class ExecutionError(Error):
    """A failure while running a plan: names the operator, and the file or partition if known."""


class CatalogError(Error):
    """Registering or dropping tables failed (missing path, duplicate name, ...)."""


class InternalError(Error):
    """An invariant inside pqe broke: this is a bug in pqe."""

    def __init__(self, message: str):
        super().__init__(f"internal error (this is a bug in pqe, please report it): {message}")


def suggest(name: str, candidates: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest candidate, or ''."""
    cands = list(dict.fromkeys(candidates))
    lowered = {c.lower(): c for c in cands}
    match = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return f" (did you mean '{lowered[match[0]]}'?)" if match else ""
