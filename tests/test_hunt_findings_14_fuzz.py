"""Findings of the fourteenth session's differential fuzz (41,526 queries against DuckDB, each
on 1 and 3 partitions): join_reorder failed on an OR of equalities with a computed side
between tables not next to each other in FROM, and TIMESTAMP +/- INTERVAL failed with
"integer overflow" on a NULL timestamp whose storage slot holds Arrow's or pandas' filler."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

import pqe
from pqe.testing import oracle
from pqe.testing.compare import compare

A = pa.table({"x": pa.array([1, 2], pa.int32()), "y": [1, 7], "s": ["p", "q"]})
B = pa.table({"x": pa.array([1, 3], pa.int64()), "k": [1, 2], "s": ["P", "z"]})
C = pa.table({"k": [1, 2]})


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("sql", [
    "SELECT count(*) FROM a, c, b WHERE (a.x = b.x OR a.y = 7) AND c.k = b.k",
    "SELECT count(*) FROM a, c, b WHERE (upper(a.s) = b.s OR a.y = 7) AND c.k = b.k",
    "SELECT count(*) FROM a CROSS JOIN c JOIN b ON (CAST(a.x AS BIGINT) = b.x OR a.y = 7) "
    "AND c.k = b.k",
    "SELECT a.y, b.k FROM a, c, b WHERE (a.x + 1 = b.x OR a.s = lower(b.s)) AND c.k = b.k",
])
def test_or_of_computed_equalities_across_a_third_table(sql, partitions):
    ctx = pqe.Context(partitions=partitions)
    for name, t in (("a", A), ("b", B), ("c", C)):
        ctx.register_arrow(name, t)
    con = oracle.connect({"a": A, "b": B, "c": C})
    assert compare(ctx.sql(sql).to_arrow(), oracle.query(con, sql), sql=sql) is None


def test_interval_arithmetic_on_null_timestamps_with_filler_slots():
    """A grouped MAX of no value leaves 2^63 - 1 in its slot, pandas stores NaT as -2^63:
    Arrow's checked TIMESTAMP + DURATION checked those slots too."""
    pd = pytest.importorskip("pandas")
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", pa.table({
        "g": [1, 2], "ts": pa.array([dt.datetime(2024, 2, 29, 23, 59, 59), None],
                                    pa.timestamp("us"))}))
    got = ctx.sql("SELECT g, max(ts) - INTERVAL '1 hour' AS a, min(ts) + INTERVAL '1 month' "
                  "AS b, max(ts) + (max(ts) - min(ts)) AS c FROM t GROUP BY g ORDER BY g"
                  ).to_pylist()
    assert got == [{"g": 1, "a": dt.datetime(2024, 2, 29, 22, 59, 59),
                    "b": dt.datetime(2024, 3, 29, 23, 59, 59),
                    "c": dt.datetime(2024, 2, 29, 23, 59, 59)},
                   {"g": 2, "a": None, "b": None, "c": None}]
    ctx.register_pandas("p", pd.DataFrame({"ts": pd.to_datetime(["2024-01-01", None])}))
    assert ctx.sql("SELECT ts - INTERVAL '1 day' AS x, ts + INTERVAL '1 month' AS y FROM p"
                   ).to_pylist() == [{"x": dt.datetime(2023, 12, 31), "y": dt.datetime(2024, 2, 1)},
                                     {"x": None, "y": None}]
