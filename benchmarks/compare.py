"""Answer checking: is an engine's result the same as the reference (DuckDB) result?

The comparison is `pqe.testing.compare`, the one comparator of the tests, the fuzzer and the
benchmarks, in its cross-engine form: the benchmarks check Polars' and DataFusion's answers
too, whose result *types* legitimately differ from DuckDB's (DECIMAL vs DOUBLE, int32 vs
int64), so types and column names are not checked here (`check_types=True` checks them, as
the test suite does for pqe) and a DECIMAL answer may be one unit in its last place from a
DOUBLE reference (DataFusion's AVG is DECIMAL(p, 6)). Rows compare as a multiset; when the
query ends in an ORDER BY, the sequence of ORDER BY key values must also match (rows that tie
on every key may come in any order, which the SQL standard allows).
"""

from __future__ import annotations

import pyarrow as pa

from pqe.testing.compare import compare as _compare
from pqe.testing.compare import order_spec, python_value, values_equal

Value = object
Row = tuple


def norm(v: object) -> Value:
    """A value from Arrow's to_pylist in the form `rows_close` compares."""
    return python_value(v)


def close(a: Value, b: Value, rel: float) -> bool:
    """Is result value `a` the expected value `b`? (Not symmetric: see the DECIMAL rule.)"""
    return values_equal(a, b, float_rel=rel, decimal_ulp=True)


def rows_close(a: Row, b: Row, rel: float) -> bool:
    return len(a) == len(b) and all(close(x, y, rel) for x, y in zip(a, b, strict=True))


def order_key_columns(sql: str) -> list[int] | None:
    """Output column positions of the top-level ORDER BY keys: [] when there is no top-level
    ORDER BY, None when there is one but a key is not an output column (check strictly)."""
    spec = order_spec(sql)
    if spec.order_by is None:
        return []
    if len(spec.order_by) < spec.n_keys:
        return None
    return list(spec.order_by)


def compare(result: pa.Table, expected: pa.Table, order_keys: list[int] | None = None,
            rel: float = 1e-6, check_types: bool = False) -> str | None:
    """None when `result` answers like `expected`, otherwise what differs.

    order_keys: from `order_key_columns`; [] = any order, None = exact row order."""
    kwargs = {"ordered": True} if order_keys is None else {"order_by": order_keys}
    m = _compare(result, expected, float_rel=rel, check_names=False, check_types=check_types,
                 decimal_ulp=not check_types, **kwargs)
    return None if m is None else str(m)
