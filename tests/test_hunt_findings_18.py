"""Findings of the eighteenth session, each a test that failed before its fix."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import pqe

duckdb = pytest.importorskip("duckdb")


def _duck(sql: str, **tables: pa.Table) -> pa.Table:
    con = duckdb.connect()
    con.execute("set timezone = 'UTC'")  # pqe's session time zone
    for name, t in tables.items():
        con.register(name, t)
    return con.sql(sql).to_arrow_table()


def _ns_edges(tz: str | None) -> pa.Table:
    # a day after the nanosecond range starts, its first whole microseconds, nanoseconds
    # just below midnight
    stamps = ["1677-09-22T00:00:00", "1677-09-21T00:12:43.145225", "1677-09-21T23:59:59",
              "2262-04-11T00:00:00", "2020-01-31T23:59:59.999999900",
              "1969-12-31T23:59:59.999999900"]
    ns = np.array(stamps, dtype="datetime64[ns]").astype("int64")
    return pa.table({"ts": pa.array(ns, pa.timestamp("ns", tz=tz))})


@pytest.mark.parametrize("tz", ["UTC", "America/New_York", None])
def test_date_trunc_and_last_day_of_a_nanosecond_timestamp_near_its_range_start(tz):
    """date_trunc of a TIMESTAMPTZ_NS kept the nanosecond unit, so a truncation before
    1677-09-21 00:12:43 (date_trunc('year') of 1677-09-22) failed Arrow's out-of-bounds cast,
    where DuckDB answers a (microsecond) TIMESTAMPTZ; LAST_DAY of a TIMESTAMPTZ was refused
    as "wrong argument types", where DuckDB answers its day's (in the session zone, UTC)."""
    t = _ns_edges(tz)
    sql = ("select date_trunc('year', ts) y, date_trunc('quarter', ts) q, "
           "date_trunc('month', ts) m, date_trunc('week', ts) w, date_trunc('day', ts) d, "
           "date_trunc('second', ts) s, last_day(ts) ld, cast(ts as date) cd from t")
    want = _duck(sql, t=t)
    with pqe.Context() as ctx:
        ctx.register_arrow("t", t)
        got = ctx.sql(sql).to_arrow()
    assert got.to_pylist() == want.to_pylist()
    for name in ("y", "d", "s"):
        assert got.schema.field(name).type.unit == "us"


def test_an_interval_text_literal_takes_a_bare_alias():
    """`SELECT INTERVAL '1 day 12:00:00' x` was a syntax error ("'x' is not an interval
    unit"): an alias after INTERVAL text holding several parts was read as its unit. DuckDB
    reads the text as the whole interval and x as the alias; a unit word stays the unit."""
    sql = ("select interval '1 day 12:00:00' x, interval '2 hours 30 minutes' ms, "
           "interval '-1 day 02:00' n, interval '1' day d, interval '3' month m, "
           "date '2020-01-01' dt, timestamp '2020-01-01 10:00' ts, "
           "date '2020-01-01' + interval '1 day 12:00:00' s")
    want = _duck(sql)
    with pqe.Context() as ctx:
        got = ctx.sql(sql).to_arrow()
        assert got.schema.names == want.schema.names
        # (DuckDB's Arrow interval is a month-day-nano, as pqe's)
        assert got.to_pylist() == want.to_pylist()
        assert ctx.sql("select t.x from (select interval '1 day 12:00:00' x) t "
                       "order by x").to_arrow().schema.names == ["x"]
        with pytest.raises(pqe.SQLSyntaxError, match="'x' is not an interval unit"):
            ctx.sql("select interval 1 x")  # (DuckDB: no cast of INTEGER to INTERVAL)


def test_interval_parts_reach_their_int32_minimum_and_overflow_clearly():
    """INTERVAL '-2147483648 days' (and months) was refused as out of range: an interval's
    months and days are int32s, -2147483648 included, as DuckDB reads them. Past either end,
    and past the nanoseconds' int64 (pqe's INTERVAL is Arrow's month-day-nano, so its clock
    part ends at 2562047 hours, where DuckDB's microseconds go further), it is an error,
    never a wrapped value; so is negating or multiplying one past its range."""
    sql = ("select interval '-2147483648 days' d, interval '2147483647 days' d2, "
           "interval '-2147483648 months' m, interval '-178956970 years -8 months' y, "
           "interval '-2147483648' day d3, interval (-2147483648) month m2, "
           "interval '1 month -2147483648 days' md, "
           "interval '-2147483648 months -2147483648 days -2562047:00:00' lo, "
           "interval '2147483647 months 2147483647 days 2562047:00:00' hi, "
           "interval '-9223372036854775 microseconds' us, "
           "interval '-2147483648 days' + interval '-1 month' s, "
           "interval '1 day' * -2147483648 p, "
           "cast(interval '-2147483648 months' as varchar) t, "
           "extract(day from interval '-2147483648 days') xd")
    want = _duck(sql)
    with pqe.Context() as ctx:
        assert ctx.sql(sql).to_arrow().to_pylist() == want.to_pylist()
        for bad in ("interval '-2147483649 days'", "interval '2147483648 months'",
                    "interval '-178956971 years'", "interval '2147483647 days 1 day'",
                    "interval '2562048 hours'", "interval '9223372036854776 microseconds'"):
            with pytest.raises(pqe.BindError, match="is out of range"):
                ctx.sql(f"select {bad} v").to_arrow()
        for bad, what in (("-interval '-2147483648 days'", "negation"),
                          ("interval '-2147483648 months' * -1", "product"),
                          ("interval '2 hours' * 4611686", "product"),
                          ("interval '-2147483648 days' - interval '1 day'",
                           "sum of the intervals")):
            with pytest.raises(pqe.ExecutionError, match=f"interval out of range: the {what}"):
                ctx.sql(f"select {bad} v").to_arrow()
