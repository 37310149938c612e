"""Test tooling shipped with pqe: a sqllogictest runner (`pqe.testing.sqllogictest`).

It lives in the package, not under tests/, so the lead engineer and CI can run the SQLite
conformance corpus with ``python -m pqe.testing.sqllogictest`` from any checkout. Names are
imported lazily so that ``python -m pqe.testing.sqllogictest`` does not import the module twice.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Counts", "Failure", "FileResult", "SlowRecord", "run_file", "run_paths"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import sqllogictest

        return getattr(sqllogictest, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
