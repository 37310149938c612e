"""An INTERVAL column times an integer, an INTERVAL times an integer column, and a negated
INTERVAL column (`d + n * INTERVAL '1 day'`): they were refused unless both were constants.
Part by part (months, days, the rest), as DuckDB multiplies them; NULL where either side is
NULL; a part past its range is an error, never a wrapped value. Checked against DuckDB as
text and added to dates and timestamps."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

import pqe
from helpers import assert_answers_as_duckdb


def _tables():
    iv = pa.array([pa.MonthDayNano([0, 1, 0]), None, pa.MonthDayNano([1, 0, 7_200 * 10**9]),
                   pa.MonthDayNano([-3, 2, -5 * 10**9]), pa.MonthDayNano([14, -40, 1_000]),
                   pa.MonthDayNano([0, 0, 0])], pa.month_day_nano_interval())
    return {"t": pa.table({
        "n": pa.array([1, 2, None, -3, 0, 2_147_483_647], pa.int32()),
        "b": pa.array([5, -1, 7, None, 100, 3], pa.int64()),
        "iv": iv,
        "d": pa.array([datetime.date(2020, 1, 31), None, datetime.date(2021, 3, 4),
                       datetime.date(1999, 12, 31), datetime.date(2024, 2, 29),
                       datetime.date(2000, 1, 1)]),
        "ts": pa.array([datetime.datetime(2020, 1, 31, 12), datetime.datetime(2021, 1, 1),
                        None, datetime.datetime(1970, 1, 1, 0, 0, 1),
                        datetime.datetime(2024, 2, 29, 23, 59, 59, 999_999),
                        datetime.datetime(2000, 1, 1)], pa.timestamp("us")),
    })}


QUERIES = [
    "SELECT CAST(iv * b AS VARCHAR) AS x FROM t",
    "SELECT CAST(b * iv AS VARCHAR) AS x FROM t",
    "SELECT CAST(iv * 3 AS VARCHAR) AS x FROM t",
    "SELECT CAST(-iv AS VARCHAR) AS x FROM t",
    "SELECT CAST(-(-iv) AS VARCHAR) AS x FROM t",
    "SELECT CAST(INTERVAL '1 month 2 days' * b AS VARCHAR) AS x FROM t",
    "SELECT d + n * INTERVAL '1 day' AS x FROM t WHERE abs(n) < 1000",
    "SELECT d + INTERVAL '1 month' * b AS x FROM t",
    "SELECT d - b * INTERVAL '1 week' AS x FROM t",
    "SELECT ts + iv * b AS x FROM t",
    "SELECT ts - iv * b AS x FROM t",
    "SELECT ts + (-iv) AS x FROM t",
    "SELECT count(*) AS c FROM t WHERE iv * b > INTERVAL '3 days'",
    "SELECT CAST(iv * CAST(b AS SMALLINT) AS VARCHAR) AS x FROM t",
]


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("sql", QUERIES)
def test_interval_products_match_duckdb(sql, partitions):
    assert_answers_as_duckdb(sql, _tables(), partitions)


@pytest.mark.parametrize("sql", [
    "SELECT iv * 2147483647 FROM t",  # 2 hours in nanoseconds, times 2^31 - 1: past int64
    "SELECT INTERVAL '2 days' * n FROM t",  # 2 * (2^31 - 1) days: past int32
    "SELECT INTERVAL '2147483647 months' * b FROM t",
    "SELECT -iv FROM (SELECT INTERVAL '-2147483648 days' * b AS iv FROM t WHERE b = 1 OR b = 5)",
])
def test_a_part_past_its_range_is_an_error(sql):
    ctx = pqe.Context(partitions=2)
    for name, t in _tables().items():
        ctx.register_arrow(name, t)
    with pytest.raises(pqe.DataValueError, match="interval out of range"):
        ctx.sql(sql).to_arrow()


def test_product_with_null_is_null():
    ctx = pqe.Context()
    for name, t in _tables().items():
        ctx.register_arrow(name, t)
    got = ctx.sql("SELECT iv * b AS x FROM t").to_arrow().column("x").to_pylist()
    assert got[1] is None and got[3] is None  # NULL interval; NULL integer
    assert got[0] == pa.MonthDayNano([0, 5, 0])
    assert got[2] == pa.MonthDayNano([7, 0, 7 * 7_200 * 10**9])


def test_non_integer_factor_stays_refused():
    ctx = pqe.Context()
    for name, t in _tables().items():
        ctx.register_arrow(name, t)
    for sql in ("SELECT iv * 1.5 FROM t", "SELECT iv / 2 FROM t"):
        with pytest.raises(pqe.Error, match="INTERVAL"):
            ctx.sql(sql).to_arrow()
