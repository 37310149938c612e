"""STDDEV / VARIANCE (samp, pop) as window functions over the whole partition (z-scores:
(x - avg(x) OVER w) / stddev(x) OVER w). They were refused. Computed per partition in two
passes (the mean, then the squared deviations), so a large common offset keeps its digits and
a partition of one repeated value has exactly 0 spread. A narrower frame (ORDER BY's running
frame, ROWS n PRECEDING, EXCLUDE) is refused by name. DuckDB is the oracle."""
from __future__ import annotations

import math
from fractions import Fraction

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import pqe


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(9)
    n = 4_000
    x = rng.normal(10, 3, n).round(4)
    t = pa.table({"g": pa.array(rng.integers(0, 30, n), mask=rng.random(n) < 0.02),
                  "x": pa.array(x, mask=rng.random(n) < 0.05),
                  "big": pa.array(1e9 + rng.integers(0, 100, n) / 8.0),
                  "i": pa.array(rng.integers(-10**6, 10**6, n)),
                  "k": pa.array(np.arange(n))})
    con = duckdb.connect()
    con.register("t", t)
    return t, con


@pytest.fixture(scope="module", params=[1, 3])
def ctx(request, data):
    c = pqe.Context(partitions=request.param)
    c.register_arrow("t", pa.Table.from_batches(data[0].to_batches(max_chunksize=900)))
    return c


def _close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        for a, b in zip(g, w, strict=True):
            if a is None or b is None:
                assert a is None and b is None, (g, w)
            elif isinstance(a, float):
                assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9), (g, w)
            else:
                assert a == b, (g, w)


@pytest.mark.parametrize("sql", [
    "SELECT k, stddev(x) OVER (PARTITION BY g), stddev_pop(x) OVER (PARTITION BY g), "
    "variance(x) OVER (PARTITION BY g), var_pop(i) OVER () FROM t ORDER BY k",
    "SELECT k, (x - avg(x) OVER w) / stddev(x) OVER w AS z FROM t "
    "WINDOW w AS (PARTITION BY g) ORDER BY k",
    "SELECT g, max(s) FROM (SELECT g, var_samp(x) OVER (PARTITION BY g) s FROM t) GROUP BY g "
    "ORDER BY g",
])
def test_matches_duckdb(ctx, data, sql):
    _close([tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()],
           data[1].sql(sql).fetchall())


def test_a_large_common_offset_keeps_its_digits(ctx, data):
    """1e9 + k/8: exact values from fractions (DuckDB's window STDDEV is 4e-9 off here)."""
    t, _ = data
    got = ctx.sql("SELECT g, stddev(big) OVER (PARTITION BY g ORDER BY k ROWS BETWEEN "
                  "UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS s FROM t").to_arrow()
    groups: dict = {}
    for g, b in zip(t.column("g").to_pylist(), t.column("big").to_pylist(), strict=True):
        groups.setdefault(g, []).append(Fraction(b))
    exact = {}
    for g, vals in groups.items():
        m = sum(vals) / len(vals)
        exact[g] = math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1))
    for g, s in zip(got.column("g").to_pylist(), got.column("s").to_pylist(), strict=True):
        assert math.isclose(s, exact[g], rel_tol=1e-13), (g, s, exact[g])


def test_exact_zero_spread_and_non_finite_values():
    ctx = pqe.Context()
    got = ctx.sql("SELECT g, stddev(v) OVER (PARTITION BY g) s, var_pop(v) OVER (PARTITION BY g) p "
                  "FROM (VALUES (1, 0.1), (1, 0.1), (1, 0.1), (2, 'inf'::DOUBLE), (2, 1.0), "
                  "(3, 'nan'::DOUBLE), (3, 2.0), (4, 5.0), (5, NULL)) t(g, v) ORDER BY g"
                  ).to_arrow().to_pylist()
    by = {r["g"]: (r["s"], r["p"]) for r in got}
    assert by[1] == (0.0, 0.0)  # (the mean of 0.1 three times rounds; the spread is 0)
    assert math.isnan(by[2][0]) and math.isnan(by[3][0])
    assert by[4] == (None, 0.0) and by[5] == (None, None)


@pytest.mark.parametrize("over", [
    "ORDER BY k",
    "PARTITION BY g ROWS BETWEEN 1 PRECEDING AND CURRENT ROW",
    "ORDER BY k ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING EXCLUDE CURRENT ROW",
    "ORDER BY k RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
])
def test_narrower_frames_are_refused_by_name(ctx, over):
    with pytest.raises(pqe.UnsupportedError, match="STDDEV_SAMP over a frame narrower"):
        ctx.sql(f"SELECT stddev(x) OVER ({over}) FROM t").to_arrow()


def test_dataframe_over(ctx, data):
    got = ctx.table("t").with_columns(s=pqe.col("x").std().over(partition_by="g")) \
        .select("k", "s").sort("k").to_arrow()
    want = data[1].sql("SELECT k, stddev(x) OVER (PARTITION BY g) FROM t ORDER BY k").fetchall()
    _close([tuple(r.values()) for r in got.to_pylist()], want)
    with pytest.raises(pqe.UnsupportedError, match="narrower"):
        ctx.table("t").with_columns(
            s=pqe.col("x").std().over(partition_by="g", order_by="k")).to_arrow()
    with pytest.raises(pqe.UnsupportedError, match="CORR as a window function"):
        ctx.table("t").with_columns(s=pqe.col("x").corr("i").over(partition_by="g")).to_arrow()
