"""Test tooling shipped with pqe.

- `pqe.testing.compare`: the one result comparator (names, logical types with the allowed
  differences in ALLOWED_DIFFERENCES, values, ORDER BY-aware with ties);
- `pqe.testing.oracle`: the DuckDB oracle with pqe's semantics (DuckDB imported lazily);
- `pqe.testing.fuzz`: the differential fuzzer (generators select, values, dml, params);
- `pqe.testing.sqllogictest`: a sqllogictest runner (SQLite's text result format).

No module here imports DuckDB at import time: the wheel does not depend on it.

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
