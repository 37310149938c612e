"""Findings of a randomized differential fuzz against DuckDB (about 61,000 queries over
three small tables of many types, each also run on 4 or 7 partitions), each with its fix."""
from __future__ import annotations

import datetime
import decimal
import math

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe


def _rows(ctx, sql):
    return [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()]


def _plain(rows):
    return [tuple(int(v) if isinstance(v, decimal.Decimal) and v == int(v) else v for v in r)
            for r in rows]


# ---- a parenthesized grouping key inside GROUPING SETS / ROLLUP was a second key ----------

@pytest.fixture(scope="module")
def groups():
    t = pa.table({"k": [1, 1, 2, None], "v": ["a", "b", "a", "b"], "x": [10, 20, 30, 40]})
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", t)
    con = duckdb.connect()
    con.register("t", t)
    con.execute("SET default_null_order = 'nulls_last_on_asc_first_on_desc'")
    return ctx, con


@pytest.mark.parametrize("sql", [
    # the set (v, (k * 2)) showed g NULL: the select item read the other, unparenthesized key
    "SELECT k * 2 AS g, v, sum(x) AS n FROM t GROUP BY GROUPING SETS ((v, (k * 2)), (k * 2)) "
    "ORDER BY 1, 2, 3",
    "SELECT k, v, sum(x), grouping(k), grouping(v) FROM t GROUP BY GROUPING SETS ((v, (k)), (k)) "
    "ORDER BY 1, 2, 3",
    "SELECT k * 2, v, sum(x), grouping(k * 2) FROM t GROUP BY ROLLUP (v, k * 2), (k * 2) "
    "ORDER BY 1, 2, 3",
    "SELECT v, k + 0, sum(x) FROM t GROUP BY v, GROUPING SETS ((v, (k + 0)), (k + 0)) "
    "ORDER BY 1, 2, 3",
    "SELECT (k), v, sum(x) FROM t GROUP BY ROLLUP ((k), v) ORDER BY 1, 2, 3",
    "SELECT ((k)), v, sum(x), grouping((k)), grouping(v) FROM t GROUP BY CUBE ((k), ((v))) "
    "ORDER BY 1, 2, 3",
    "SELECT k, v, sum(x) FROM t GROUP BY GROUPING SETS ((k, v), ((k)), ()) ORDER BY 1, 2, 3",
    "SELECT k, sum(x) FROM t GROUP BY (1) ORDER BY 1",
])
def test_parenthesized_grouping_keys_are_the_keys(groups, sql):
    ctx, con = groups
    assert _plain(_rows(ctx, sql)) == con.sql(sql).fetchall()


# ---- LEAST / GREATEST of timestamps left +-2^63 in NULL slots: checked + INTERVAL failed -----

def test_least_greatest_of_timestamps_then_interval_arithmetic():
    t = pa.table({"ts": pa.array([datetime.datetime(2020, 1, 1), None], pa.timestamp("us")),
                  "ms": pa.array([datetime.datetime(2020, 1, 1), None], pa.timestamp("ms")),
                  "d": pa.array([datetime.date(2020, 1, 1), None])})
    ctx = pqe.Context()
    ctx.register_arrow("t", t)
    got = _rows(ctx, "SELECT LEAST(ts, ts) + INTERVAL '5' DAY, GREATEST(ts, ts) - INTERVAL '1' "
                     "SECOND, GREATEST(ts, NULL) - INTERVAL '1' MONTH, LEAST(d, d) + INTERVAL "
                     "'1' DAY, GREATEST(ms, ts) + INTERVAL '1' DAY FROM t")
    day = datetime.datetime(2020, 1, 2)
    assert got == [(datetime.datetime(2020, 1, 6), datetime.datetime(2019, 12, 31, 23, 59, 59),
                    datetime.datetime(2019, 12, 1), day, day), (None,) * 5]
    assert _rows(ctx, "SELECT count(*) FROM t WHERE LEAST(ts, ts) + INTERVAL '5' DAY "
                      "> TIMESTAMP '2020-01-02'") == [(1,)]


# ---- ROUND / TRUNC of a DOUBLE folded to a constant: InternalError ('as_py') ---------------

@pytest.mark.parametrize("sql, want", [
    ("SELECT trunc(d / 0) FROM t", [None, None, None]),
    ("SELECT round(d / 0, 1) FROM t", [None, None, None]),
    ("SELECT round(CAST(CAST(NULL AS INTEGER) / i AS DOUBLE), 1) FROM t", [None, None, None]),
    ("SELECT round(d * 3, 1) FROM t", [4.5, None, 6.8]),
])
def test_round_of_a_computed_constant(sql, want):
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"d": [1.5, None, 2.25], "i": [1, 2, 3]}))
    assert [r[0] for r in _rows(ctx, sql)] == want


# ---- a DOUBLE sort key repeated, holding NaN: "Multiple matches for FieldRef" ---------------

@pytest.mark.parametrize("sql", [
    "SELECT d, pk FROM t ORDER BY 1 NULLS FIRST, d NULLS FIRST, pk",
    "SELECT d, pk FROM t ORDER BY d NULLS FIRST, d NULLS LAST, pk DESC",
    "SELECT pk, row_number() OVER (ORDER BY d DESC NULLS LAST, d DESC NULLS LAST, pk) FROM t "
    "ORDER BY pk",
    "SELECT pk, row_number() OVER (PARTITION BY d ORDER BY d NULLS FIRST, pk) FROM t ORDER BY pk",
])
def test_repeated_nan_sort_keys(sql):
    t = pa.table({"pk": [1, 2, 3, 4], "d": [1.0, None, float("nan"), 1.0]})
    ctx = pqe.Context()
    ctx.register_arrow("t", t)
    con = duckdb.connect()
    con.register("t", t)
    norm = lambda rows: [tuple("nan" if isinstance(v, float) and math.isnan(v) else v  # noqa: E731
                               for v in r) for r in rows]
    assert norm(_rows(ctx, sql)) == norm(con.sql(sql).fetchall())


# ---- a guarded DECIMAL -> INTEGER cast in a Parquet scan's filter ----------------------------

@pytest.mark.parametrize("where", [
    "CASE WHEN b THEN CAST(m AS INTEGER) = 1 END",
    "NOT b OR CAST(m AS INTEGER) = 1",
    "COALESCE(CASE WHEN NOT b THEN 5 END, CAST(m AS INTEGER)) = 1",
    "CASE WHEN b THEN CAST(m AS INTEGER) = 1 END AND CAST(m AS DOUBLE) > 0",
])
def test_a_guarded_cast_in_a_scan_filter_fails_only_where_it_runs(tmp_path, where):
    t = pa.table({"m": pa.array([decimal.Decimal("9999999999.99"), decimal.Decimal("1.00"),
                                 decimal.Decimal("-0.40")], pa.decimal128(12, 2)),
                  "b": [False, True, True]})
    pq.write_table(t, tmp_path / "t.parquet")
    ctx = pqe.Context()
    ctx.register_parquet("t", str(tmp_path / "t.parquet"))
    want = duckdb.sql(f"SELECT m FROM (SELECT * FROM '{tmp_path / 't.parquet'}') WHERE {where}"
                      ).fetchall()
    assert _rows(ctx, f"SELECT m FROM t WHERE {where}") == want
