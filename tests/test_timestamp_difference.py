"""TIMESTAMP - TIMESTAMP (and DATE - TIMESTAMP) is an INTERVAL of whole days and the rest,
both of the difference's sign, no months (DuckDB, PostgreSQL); it was "cannot apply
subtract to TIMESTAMP and TIMESTAMP". EXTRACT reads an INTERVAL's fields (epoch counts a month
as 30 days, as DuckDB does). DuckDB is the oracle, through the total of each interval and the
extracted fields."""
from __future__ import annotations

import datetime

import duckdb
import pyarrow as pa
import pytest

import pqe

T = datetime.datetime


@pytest.fixture(scope="module")
def data():
    t = pa.table({
        "a": pa.array([T(2020, 1, 2, 3, 0, 0, 500000), T(2020, 1, 1), None, T(1970, 1, 1),
                       T(2262, 4, 11), T(1, 1, 1)], pa.timestamp("us")),
        "b": pa.array([T(2020, 1, 1), T(2021, 2, 3, 4, 5, 6), T(2020, 1, 1),
                       T(1969, 12, 31, 23, 59, 59, 999999), T(1677, 9, 22), T(9999, 12, 31)],
                      pa.timestamp("us")),
        "ms": pa.array([T(2020, 1, 1, 0, 0, 1), None, T(2020, 1, 1), T(1970, 1, 1),
                        T(2000, 1, 1), T(2000, 1, 1)], pa.timestamp("ms")),
        "d": pa.array([datetime.date(2020, 1, 2), None, datetime.date(2020, 1, 1),
                       datetime.date(1970, 1, 1), datetime.date(2000, 2, 29),
                       datetime.date(1, 1, 1)]),
    })
    con = duckdb.connect()
    con.register("t", t)
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", pa.Table.from_batches(t.to_batches(max_chunksize=4)))
    return ctx, con


def _micros(v):
    if v is None:
        return None
    if isinstance(v, datetime.timedelta):
        return (v.days * 86_400 + v.seconds) * 10 ** 6 + v.microseconds
    assert v.months == 0 and abs(v.nanoseconds) < 86_400 * 10 ** 9
    assert v.days == 0 or v.nanoseconds == 0 or (v.days > 0) == (v.nanoseconds > 0)
    return v.days * 86_400 * 10 ** 6 + v.nanoseconds // 1000


@pytest.mark.parametrize("expr", ["a - b", "b - a", "d - b", "b - d", "a - ms", "ms - d"])
def test_differences_match_duckdb(data, expr):
    ctx, con = data
    got = ctx.sql(f"SELECT {expr} AS v FROM t").to_arrow()
    assert got.schema.field("v").type == pa.month_day_nano_interval()
    want = [r[0] for r in con.sql(f"SELECT {expr} FROM t").fetchall()]
    assert [_micros(v) for v in got.column("v").to_pylist()] == [_micros(v) for v in want]


@pytest.mark.parametrize("part", ["epoch", "day", "hour", "minute", "second", "millisecond",
                                  "microsecond"])
def test_extract_from_differences_matches_duckdb(data, part):
    ctx, con = data
    sql = f"SELECT extract({part} FROM a - b), extract({part} FROM d - ms) FROM t"
    assert [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()] \
        == con.sql(sql).fetchall()


def test_extract_from_interval_constants():
    sql = ("SELECT extract(epoch FROM INTERVAL '1 month 2 days 03:04:05'), "
           "extract(day FROM INTERVAL '1 month 2 days 03:04:05'), "
           "extract(hour FROM INTERVAL '-27 hours'), extract(day FROM INTERVAL '-27 hours'), "
           "extract(month FROM INTERVAL '-14 months'), extract(year FROM INTERVAL '-14 months'), "
           "date_part('epoch', INTERVAL '90 minutes'), extract(minute FROM INTERVAL '90 minutes')")
    got = [tuple(r.values()) for r in pqe.Context().sql(sql).to_arrow().to_pylist()]
    assert got == duckdb.sql(sql).fetchall() == [(2775845.0, 2, -27, 0, -2, -1, 5400.0, 30)]


def test_epoch_of_intervals_of_a_year_or_more():
    """A year is 365.25 days, the months past whole years 30 (PostgreSQL, DuckDB): the epoch
    of '14 months' was counted as 420 days."""
    texts = ["1 year", "14 months -3 days 05:00:00.5", "-13 months", "11 months",
             "-1 year 1 day", "25 months", "-2 years -1 month"]
    sql = "SELECT " + ", ".join(f"extract(epoch FROM INTERVAL '{t}')" for t in texts)
    got = [tuple(r.values()) for r in pqe.Context().sql(sql).to_arrow().to_pylist()]
    assert got == duckdb.sql(sql).fetchall()
    assert got[0][:2] == (31557600.0, 36500400.5)


def test_refused_or_checked():
    ctx = pqe.Context()
    with pytest.raises(pqe.UnsupportedError, match="EXTRACT\\(dow\\) of an INTERVAL"):
        ctx.sql("SELECT extract(dow FROM INTERVAL '1 day')").to_arrow()
    # (looked up by length: one day is 24 hours)
    assert ctx.sql("SELECT TIMESTAMP '2020-01-02' - TIMESTAMP '2020-01-01' IN (INTERVAL "
                   "'24 hours') AS x").to_pylist() == [{"x": True}]
    got = ctx.sql("SELECT TIMESTAMP '2020-03-01' - TIMESTAMP '2020-01-01' AS v").to_arrow()
    assert got.column("v")[0].as_py() == pa.MonthDayNano([0, 60, 0])


@pytest.mark.parametrize("cond", [
    "a - b > INTERVAL '1 day'", "a - b >= INTERVAL '27 hours'", "a - b < INTERVAL '0 seconds'",
    "a - b = INTERVAL '1 month'", "a - b <> INTERVAL '1 second'", "b - a <= INTERVAL '-1 day'",
    "a - b BETWEEN INTERVAL '1 second' AND INTERVAL '2 days'", "a - d > b - d",
])
def test_differences_compare_as_duckdb(data, cond):
    """Intervals compare normalized: a month is 30 days, a day 24 hours."""
    ctx, con = data
    sql = f"SELECT {cond} FROM t"
    assert [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()] \
        == con.sql(sql).fetchall()
    count = f"SELECT count(*) FROM t WHERE {cond}"
    assert [tuple(r.values()) for r in ctx.sql(count).to_arrow().to_pylist()] \
        == con.sql(count).fetchall()


def test_interval_constants_compare_normalized():
    sql = ("SELECT INTERVAL '1 month' = INTERVAL '30 days', INTERVAL '1 day' = INTERVAL "
           "'24 hours', INTERVAL '-1 day' < INTERVAL '1 hour', INTERVAL '25 hours' > INTERVAL "
           "'1 day', INTERVAL '1 month' < INTERVAL '31 days', INTERVAL '2 months' <> INTERVAL '59 days'")
    got = [tuple(r.values()) for r in pqe.Context().sql(sql).to_arrow().to_pylist()]
    assert got == duckdb.sql(sql).fetchall() == [(True,) * 6]


def test_db_api_fetches_intervals_as_timedeltas():
    """As DuckDB's and psycopg's Python interfaces do (a month as 30 days); Arrow's
    MonthDayNano came back before."""
    sql = ("SELECT INTERVAL '1 month 2 days 3 hours', TIMESTAMP '2020-01-02' - TIMESTAMP "
           "'2020-01-01 00:00:00.5', TIMESTAMP '2020-01-01' - TIMESTAMP '2021-02-03 04:05:06', "
           "CAST(NULL AS INTERVAL)")
    cur = pqe.connect().cursor()
    cur.execute(sql)
    got = cur.fetchall()
    assert got == duckdb.sql(sql).fetchall()
    assert got[0][0] == datetime.timedelta(days=32, hours=3)
    assert [d[1] for d in cur.description] == ["INTERVAL"] * 4
