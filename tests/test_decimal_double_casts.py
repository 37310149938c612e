"""DECIMAL -> DOUBLE casts of at most 15 digits run on unscaled int64 (the unscaled value as a
double, divided by 10^scale: one correct rounding), in projections and in the filters a scan
runs after reading. Both took Arrow's decimal128 path through text (~1.2 s per 1.5M values:
`CAST(l_extendedprice AS DOUBLE) > 0` over TPC-H SF1 lineitem took 2.4 s, now 0.4 s; STDDEV
and CORR of a DECIMAL cast their argument so). The answers must be the nearest doubles, as
the text path gives (Arrow's own cast multiplies by an inexact 10^-scale: 1 ulp off).
"""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe


@pytest.fixture(scope="module")
def prices(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 40_000
    unscaled = np.concatenate([rng.integers(-10**15 + 1, 10**15, n),
                               [10**15 - 1, -(10**15 - 1), 0, 1, -1, 9999]])
    cols = {}
    for scale in (0, 2, 7, 15):
        cols[f"d{scale}"] = pa.array([decimal.Decimal(int(u)).scaleb(-scale) for u in unscaled],
                                     pa.decimal128(15, scale))
    mask = np.zeros(len(unscaled), bool)
    mask[::97] = True
    cols["dn"] = pa.array([decimal.Decimal(int(u)).scaleb(-2) for u in unscaled],
                          pa.decimal128(15, 2), mask=mask)
    table = pa.table(cols)
    path = tmp_path_factory.mktemp("casts") / "prices.parquet"
    pq.write_table(table, path, row_group_size=7_000)
    return table, path


def _nearest(col: pa.ChunkedArray) -> list:
    return [None if v is None else float(v) for v in col.to_pylist()]  # Decimal -> nearest


@pytest.mark.parametrize("column", ["d0", "d2", "d7", "d15", "dn"])
def test_projected_casts_are_the_nearest_doubles(prices, column):
    table, path = prices
    ctx = pqe.Context(partitions=3)
    ctx.register_parquet("p", str(path))
    sql = f"SELECT CAST({column} AS DOUBLE) AS v, {column} FROM p"
    plan = ctx.sql("EXPLAIN " + sql).to_arrow().column(0).to_pylist()
    assert any("int64-decimal" in str(line) for line in plan), plan  # the fast path is taken
    got = ctx.sql(sql).to_arrow()
    want = dict(zip(table.column(column).to_pylist(), _nearest(table.column(column)), strict=True))
    assert [want[d] for d in got.column(column).to_pylist()] == got.column("v").to_pylist()


@pytest.mark.parametrize("column", ["d2", "d7", "dn"])
def test_filters_on_casts_keep_exactly_the_rows_the_nearest_doubles_keep(prices, column):
    table, path = prices
    values = _nearest(table.column(column))
    pivot = sorted(v for v in values if v is not None)[len(values) // 3]
    ctx = pqe.Context(partitions=2)
    ctx.register_parquet("p", str(path))
    got = ctx.sql(f"SELECT count(*) AS n, sum(CAST({column} AS DOUBLE) = {pivot!r}) AS eq "
                  f"FROM p WHERE CAST({column} AS DOUBLE) >= {pivot!r}").to_arrow().to_pylist()
    kept = [v for v in values if v is not None and v >= pivot]
    assert got == [{"n": len(kept), "eq": sum(v == pivot for v in kept)}]


def test_a_filter_that_overflows_int64_falls_back_to_decimal128(prices):
    table, path = prices
    ctx = pqe.Context()
    ctx.register_parquet("p", str(path))
    # d2 * 10000 (DECIMAL(25, 6)) overflows unscaled int64 near 10^15 * 10^6: the decimal128
    # kernels answer (DuckDB refuses: "Overflow in multiplication of DECIMAL(18)")
    sql = ("SELECT count(*) AS n FROM p WHERE CAST(d2 AS DOUBLE) > 0 "
           "AND d2 * CAST(10000 AS DECIMAL(10, 4)) > 1")
    want = sum(1 for d in table.column("d2").to_pylist() if d > 0 and d * 10000 > 1)
    assert ctx.sql(sql).to_arrow().to_pylist() == [{"n": want}]


def test_statistics_of_decimals_match_those_of_their_doubles(prices):
    _, path = prices
    ctx = pqe.Context(partitions=3)
    ctx.register_parquet("p", str(path))
    got = ctx.sql("SELECT stddev(d7), corr(d2, d7), stddev(CAST(d7 AS DOUBLE)), "
                  "corr(CAST(d2 AS DOUBLE), CAST(d7 AS DOUBLE)) FROM p").to_arrow()
    a, b, c, d = (got.column(i)[0].as_py() for i in range(4))
    assert a == c and b == d
