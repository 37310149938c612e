"""DuckDB's date-part functions (year(d), month(d), dayofweek(d), week(d), epoch(ts), ...)
are EXTRACT of their part: they were refused ("function YEAR is not supported"). Checked
against DuckDB over dates and timestamps across year, ISO-week and leap-day boundaries,
before 1970 and with NULLs, and over intervals."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

import pqe
from helpers import assert_answers_as_duckdb

DATES = [datetime.date(2020, 1, 1), None, datetime.date(2021, 1, 3), datetime.date(2021, 1, 4),
         datetime.date(2024, 2, 29), datetime.date(1969, 12, 31), datetime.date(1900, 3, 1),
         datetime.date(2026, 12, 31), datetime.date(2027, 1, 1), datetime.date(1, 1, 1),
         datetime.date(9999, 12, 31), datetime.date(2018, 12, 31)]


def _tables():
    ts = [None if d is None else datetime.datetime(d.year, d.month, d.day) +
          datetime.timedelta(hours=i * 5 % 24, minutes=i * 7, seconds=i * 11,
                             microseconds=i * 123_457)
          for i, d in enumerate(DATES)]
    ts[-3] = datetime.datetime(1969, 12, 31, 23, 59, 59, 999_999)
    iv = [pa.MonthDayNano([i * 7 - 20, i * 3 - 10, (i * 37_123_456_789) - 10**11])
          if i % 5 else None for i in range(len(DATES))]
    return {"t": pa.table({"d": pa.array(DATES, pa.date32()),
                           "ts": pa.array(ts, pa.timestamp("us")),
                           "iv": pa.array(iv, pa.month_day_nano_interval())})}


FUNCTIONS = ["year", "quarter", "month", "week", "weekofyear", "day", "dayofmonth",
             "dayofweek", "weekday", "isodow", "dayofyear", "isoyear"]
TIME_FUNCTIONS = ["hour", "minute", "second", "millisecond", "microsecond", "epoch"]


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("fn", FUNCTIONS)
def test_date_part_functions_match_duckdb(fn, partitions):
    assert_answers_as_duckdb(f"SELECT d, {fn}(d) AS x, {fn}(ts) AS y FROM t", _tables(),
                             partitions)


@pytest.mark.parametrize("fn", TIME_FUNCTIONS)
def test_time_part_functions_match_duckdb(fn):
    assert_answers_as_duckdb(f"SELECT ts, {fn}(ts) AS y FROM t", _tables(), 2)


@pytest.mark.parametrize("fn", ["year", "month", "day", "hour", "minute", "second",
                                "millisecond", "microsecond", "epoch"])
def test_interval_part_functions_match_duckdb(fn):
    assert_answers_as_duckdb(f"SELECT {fn}(iv) AS y FROM t", _tables(), 1)


def test_same_as_extract_in_where_group_and_order():
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", _tables()["t"])
    a = ctx.sql("SELECT year(d) AS y, count(*) AS n FROM t WHERE month(d) <= 2 "
                "GROUP BY year(d) ORDER BY year(d)").to_pylist()
    b = ctx.sql("SELECT EXTRACT(year FROM d) AS y, count(*) AS n FROM t "
                "WHERE EXTRACT(month FROM d) <= 2 GROUP BY 1 ORDER BY 1").to_pylist()
    assert a == b and len(a) == 5


def test_extra_arguments_are_refused():
    ctx = pqe.Context()
    ctx.register_arrow("t", _tables()["t"])
    with pytest.raises(pqe.Error):
        ctx.sql("SELECT week(d, 1) FROM t").to_arrow()
    with pytest.raises(pqe.Error):
        ctx.sql("SELECT year(d, d) FROM t").to_arrow()
