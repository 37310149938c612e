"""Findings of the eighteenth session, each a test that failed before its fix."""

from __future__ import annotations

import datetime

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


def _zoned_pairs(tz: str) -> pa.Table:
    pairs = [  # (start, end): month ends both ways, milliseconds split, before 1970
        ("1970-02-28T00:00:00", "1968-07-31T00:00:00"),
        ("2021-02-28T12:00:00.000999", "2019-08-31T12:00:00.000999"),
        ("2020-01-31T23:59:58.999500", "2017-11-30T23:59:59"),
        ("2021-02-28T12:00:00.001000", "2020-03-29T12:00:00"),
        ("2020-03-31T00:00:00", "2020-02-29T00:00:00"),
        ("2020-01-31T10:00:00", "2020-02-29T09:00:00"),
        ("2021-01-05T12:00:00.000500", "2022-06-05T12:00:00.000499"),
        ("2021-02-28T12:00:00.001000", "2021-01-28T12:00:00.001999"),
        ("1900-01-04T00:00:00.000001", "1900-07-03T23:59:59.999001"),
        ("2019-12-25T10:00:00.000999", "2020-11-03T10:00:00.000499"),
        ("2020-04-18T23:59:59", "2018-09-18T23:59:59.000001"),
        ("2020-01-24T00:00:00.000500", "2020-02-06T07:12:00"),
        ("2020-02-29T00:00:00", "2021-02-28T00:00:00"),
        ("2024-02-29T00:00:00", "2023-02-28T00:00:00"),
    ]
    starts, ends = (np.array(x, dtype="datetime64[us]").astype("int64") for x in zip(*pairs))
    return pa.table({"a": pa.array(starts, pa.timestamp("us", tz=tz)),
                     "b": pa.array(ends, pa.timestamp("us", tz=tz))})


@pytest.mark.parametrize("tz", ["UTC", "Asia/Tokyo"])
def test_date_sub_of_zoned_timestamps_counts_as_duckdbs_calendar(tz):
    """DATE_SUB of two TIMESTAMPTZs counted as between TIMESTAMPs, where DuckDB counts
    days, weeks, hours and months on its (ICU) calendar: in milliseconds (start floored,
    end cut towards zero: 12:00:00.0005 to 12:00:00.000499 a month later is a month), and
    stepping whole months from the start both ways (1970-02-28 back to 1968-07-31 is -18
    months, where a TIMESTAMP's is -19). The session time zone is UTC in both. Minutes,
    seconds and below are exact microseconds, as before."""
    t = _zoned_pairs(tz)
    parts = ("year", "quarter", "month", "week", "day", "hour", "minute", "second",
             "millisecond", "microsecond", "decade")
    sql = "select " + ", ".join(f"date_sub('{p}', a, b) n_{p}" for p in parts) + " from t"
    want = _duck(sql, t=t)
    with pqe.Context() as ctx:
        ctx.register_arrow("t", t)
        assert ctx.sql(sql).to_arrow().to_pylist() == want.to_pylist()


def test_date_sub_of_nanosecond_zoned_timestamps_rounds_to_the_microsecond():
    """DATE_SUB of TIMESTAMPTZ_NS values with digits below the microsecond failed Arrow's
    cast ("would lose data"). DuckDB has no DATE_SUB of TIMESTAMPTZ_NS: pqe answers as
    DuckDB's of the values cast to TIMESTAMPTZ (rounded to the microsecond)."""
    ns = np.array(["2020-01-31T23:59:59.999999500", "1969-12-31T23:59:59.999999999",
                   "2020-03-31T00:00:00.000000499"], dtype="datetime64[ns]").astype("int64")
    t = pa.table({"a": pa.array(ns, pa.timestamp("ns", tz="UTC")),
                  "b": pa.array(ns[::-1] + 86_400 * 10**9 * 40, pa.timestamp("ns", tz="UTC"))})
    parts = ("month", "day", "microsecond")
    sql = ", ".join(f"date_sub('{p}', a{{c}}, b{{c}}) n_{p}" for p in parts) + " from t"
    want = _duck("select " + sql.format(c="::timestamptz"), t=t)
    with pqe.Context() as ctx:
        ctx.register_arrow("t", t)
        assert ctx.sql("select " + sql.format(c="")).to_arrow().to_pylist() == \
            want.to_pylist()


def test_date_sub_of_a_zoned_timestamp_with_a_date_or_timestamp_counts_zoned():
    """DATE_SUB of a TIMESTAMPTZ with a DATE or TIMESTAMP counted on their common type, a
    TIMESTAMP (1970-01-01 00:00:00.000001 back to 1969-01-01 00:00:00.000001 was -365 days),
    where DuckDB counts two TIMESTAMPTZs, the other read in the session zone (-364: the end
    cut to its millisecond towards zero), either way round."""
    t = _zoned_pairs("UTC")
    t = t.append_column("bt", t.column("b").cast(pa.timestamp("us")))
    t = t.append_column("ta", t.column("a").cast(pa.timestamp("us")))
    t = t.append_column("bd", t.column("bt").cast(pa.date32()))
    parts = ("year", "month", "day", "hour", "minute", "microsecond")
    sql = "select " + ", ".join(
        f"date_sub('{p}', a, bt) n1_{p}, date_sub('{p}', ta, b) n2_{p}, "
        f"date_sub('{p}', a, bd) n3_{p}, date_sub('{p}', bd, a) n4_{p}" for p in parts
    ) + " from t"
    want = _duck(sql, t=t)
    with pqe.Context() as ctx:
        ctx.register_arrow("t", t)
        assert ctx.sql(sql).to_arrow().to_pylist() == want.to_pylist()


def test_date_diff_of_times_and_time_parts_without_a_date():
    """DATE_DIFF of two TIMEs was refused ("wrong argument types"), where DuckDB counts the
    part boundaries crossed; DATE_SUB('day') and ('week') of TIMEs answered 0, where DuckDB
    refuses the parts a TIME does not have, as pqe now does for both."""
    pairs = [("10:59:59.999999", "11:00:00"), ("11:00:00", "10:59:59"), ("10:00:59", "10:02:00"),
             ("23:59:59.9", "00:00:00"), ("00:00:00.0019", "00:00:00.0031")]
    parts = ("hour", "minute", "second", "millisecond", "microsecond", "hours", "ms")
    sql = "select " + ", ".join(
        f"date_diff('{p}', time '{x}', time '{y}') d{i}_{p}, "
        f"date_sub('{p}', time '{x}', time '{y}') s{i}_{p}"
        for i, (x, y) in enumerate(pairs) for p in parts)
    want = _duck(sql)
    with pqe.Context() as ctx:
        assert ctx.sql(sql).to_arrow().to_pylist() == want.to_pylist()
        for fn in ("date_diff", "date_sub"):
            for part in ("day", "week", "month"):
                with pytest.raises(pqe.UnsupportedError, match="of a TIME is not supported"):
                    ctx.sql(f"select {fn}('{part}', time '10:00', time '11:00')").to_arrow()


@pytest.mark.parametrize("tz", [None, "UTC"])
def test_date_diff_of_nanosecond_timestamps_as_duckdb(tz):
    """DATE_DIFF of two TIMESTAMP_NS counted the nanoseconds' boundaries, where DuckDB
    counts those of the TIMESTAMPs they cast to, rounded to the microsecond (-500 ns to
    1969-12-30 23:59:59.999999 is 0 days to pqe, -1 to DuckDB: -500 ns rounds to
    -1 us). A TIMESTAMPTZ_NS has DuckDB's own DATE_DIFF, which floors, as pqe's did."""
    v = [-1500, -1499, -500, 500, 1500, -1, 999, -999, -1001, 86_400 * 10**9 - 500,
         -86_400 * 10**9 + 500, -57_493_963_554_500, 1_977_393_114_255]
    t = pa.table({"a": pa.array(v, pa.timestamp("ns", tz=tz)),
                  "b": pa.array(v[::-1], pa.timestamp("ns", tz=tz))})
    parts = ("microsecond", "millisecond", "second", "hour", "day", "month", "year")
    sql = "select " + ", ".join(f"date_diff('{p}', a, b) n_{p}" for p in parts) + " from t"
    want = _duck(sql, t=t)
    with pqe.Context() as ctx:
        ctx.register_arrow("t", t)
        assert ctx.sql(sql).to_arrow().to_pylist() == want.to_pylist()


def test_date_trunc_to_decades_centuries_millennia_and_other_spellings():
    """DATE_TRUNC('decade' | 'century' | 'millennium') was refused by name, as were DuckDB's
    other spellings of its parts ('years', 'mon', 'ms', 'us', ...) and the millisecond and
    microsecond. DuckDB cuts the year towards zero (year 50 is in century 0, 1 BC), a
    TIMESTAMPTZ's (its ICU calendar) a year BC as its era's year."""
    days = [0, -1, 20000, -719162, -719162 + 365 * 49 + 200, 10957, 11322, -62000, -80000,
            -737000, -720000, -730120, -1000000]
    us = np.array(days, dtype=np.int64) * 86_400 * 10**6 + 3_723_456_789
    t = pa.table({"ts": pa.array(us, pa.timestamp("us")),
                  "tz": pa.array(us, pa.timestamp("us", tz="UTC")),
                  "tss": pa.array(us // 10**6, pa.timestamp("s"))})
    # (nanoseconds: the years 1677 to 2262 only)
    tn = pa.table({"tzn": pa.array(us[:9] * 1000 + 123, pa.timestamp("ns", tz="Asia/Tokyo"))})
    parts = ("decade", "century", "millennium", "decs", "c", "mil", "millennia", "years",
             "mon", "ms", "us", "millisecond", "microsecond", "hours", "min", "s", "weeks")
    for table, cols in ((t, ("ts", "tz", "tss")), (tn, ("tzn",))):
        sql = "select " + ", ".join(f"date_trunc('{p}', {col}) {col}_{p}" for col in cols
                                    for p in parts) + " from t"
        want = _duck(sql, t=table)
        with pqe.Context() as ctx:
            ctx.register_arrow("t", table)
            got = ctx.sql(sql).to_arrow()
        # (pyarrow has no datetime before year 1: compared as text, in UTC)
        as_text = [c.cast(pa.timestamp("us", "UTC") if c.type.tz else c.type).cast(pa.string())
                   for c in got.columns]
        want_text = [c.cast(pa.timestamp("us", "UTC") if c.type.tz else c.type)
                     .cast(pa.string()) for c in want.columns]
        assert as_text == want_text
    with pqe.Context() as ctx:
        with pytest.raises(pqe.UnsupportedError, match="DATE_TRUNC\\('fortnight'\\)"):
            ctx.sql("select date_trunc('fortnight', date '2000-05-05')").to_arrow()


def test_interval_text_in_decades_centuries_millennia_abbreviations_and_bare_seconds():
    """INTERVAL '1 decade' (and centuries, millennia, INTERVAL 2 CENTURY), DuckDB's short
    units inside the text ('1 yr 2 mins', '3 usecs') and a bare number ('1.5', seconds) were
    refused as invalid, where DuckDB answers."""
    texts = ["1 decade", "2 decades", "1.5 decades", "1.01 decades", "1.001 centuries",
             "3 centuries", "1 millennium", "2 millennia", "2 millenniums", "1 dec", "1 c",
             "1 mil", "1 decs", "1 cent", "1 mils", "1 millenium", "1", "1.5", "-2", " 7 ",
             "0.0000025", "5.", "-0.5", "1 yr 2 mins", "1 yrs 3 usecs", "2 hr 1 sec 4 msec",
             "1 y 1 d 1 h 1 m 1 s"]
    sql = "select " + ", ".join(f"interval '{t}' v{i}" for i, t in enumerate(texts)) + \
        ", interval '1' decade w1, interval '1.5' decade w2, interval 2 century w3, " \
        "interval 3 millennium w4, interval '1.5' x"
    want = _duck(sql)
    with pqe.Context() as ctx:
        assert ctx.sql(sql).to_arrow().to_pylist() == want.to_pylist()
        with pytest.raises(pqe.BindError, match="is out of range"):
            ctx.sql("select interval '178956971 decades' v").to_arrow()
        for bad in ("1e3", "+3", ".5", "-.5"):  # (DuckDB: no INTERVAL of either)
            with pytest.raises(pqe.BindError, match="invalid interval"):
                ctx.sql(f"select interval '{bad}' v").to_arrow()


def test_date_trunc_of_a_date_is_a_timestamp():
    """date_trunc of a DATE was a DATE, where DuckDB's is a TIMESTAMP: as text it lacked
    ' 00:00:00', and adding an hour to it was refused."""
    days = [0, -1, 20000, -719162, 11322, -80000, -737000, -1000000, 5000000]
    t = pa.table({"d": pa.array(days, pa.int32()).cast(pa.date32())})
    sql = ("select date_trunc('month', d) m, date_trunc('week', d) w, date_trunc('day', d) dd, "
           "date_trunc('hour', d) h, date_trunc('century', d) c, date_trunc('year', d) y, "
           "case when d >= date '0001-01-01' then cast(date_trunc('quarter', d) as varchar) "
           "end q, "  # (pqe writes a year BC as -0048, DuckDB as 0049 (BC))
           "date_trunc('month', d) + interval 1 hour p from t")
    want = _duck(sql, t=t)
    with pqe.Context() as ctx:
        ctx.register_arrow("t", t)
        got = ctx.sql(sql).to_arrow()
    assert got.schema == want.schema
    assert got.cast(pa.schema([(f.name, pa.string()) for f in got.schema])) == \
        want.cast(pa.schema([(f.name, pa.string()) for f in want.schema]))


def test_calendar_parts_past_year_32767_are_refused_not_wrapped():
    """date_diff and date_sub in months, quarters and years, and date_trunc to them, gave
    wrong answers past year 32767, where Arrow's calendar fields wrap (2020 to 40000 was
    -330672 months, 32767-12-31 to 32768-01-01 -65535 years); they are refused, as LAST_DAY
    was. Days and weeks stay exact."""
    t = pa.table({"a": pa.array([18262, 13871910 + 18262], pa.int32()).cast(pa.date32())})
    with pqe.Context() as ctx:
        ctx.register_arrow("t", t)
        for sql in ("date_diff('month', date '2020-01-01', a)",
                    "date_diff('year', a, date '2020-01-01')",
                    "date_diff('quarter', date '2020-01-01', a)",
                    "date_sub('month', date '2020-01-01', a)",
                    "date_sub('year', cast(a as timestamp), timestamp '2020-01-01')",
                    "date_trunc('year', a)", "date_trunc('month', a)", "date_trunc('century', a)"):
            with pytest.raises(pqe.ExecutionError, match="past year 32767 is not supported"):
                ctx.sql(f"select {sql} from t").to_arrow()
        sql = ("select date_diff('day', date '2020-01-01', a) d, date_sub('week', date "
               "'2020-01-01', a) w, date_diff('month', date '2020-01-01', date '2030-03-01') m, "
               "date_sub('month', date '2020-01-01', date '2030-03-01') s from t")
        assert ctx.sql(sql).to_arrow().to_pylist() == _duck(sql, t=t).to_pylist()


def test_dates_before_year_1_as_text_name_the_year_bc():
    """CAST of a DATE or TIMESTAMP before year 1 to text wrote Arrow's astronomical year
    ('-0048-03-01', 1 BC as '0000-12-31'), where DuckDB writes the year BC and ' (BC)' after
    the date ('0049-03-01 (BC) 10:00:00')."""
    days = [-719163, -719528, -737000, -1000000, -719162, 0, None]
    t = pa.table({"d": pa.array(days, pa.int32()).cast(pa.date32())})
    micros = [None if x is None else x * 86_400 * 10**6 + 36_000_500_000 for x in days]
    t = t.append_column("ts", pa.array(micros, pa.timestamp("us")))
    t = t.append_column("tz", pa.array(micros, pa.timestamp("us", "UTC")))
    t = t.append_column("s", pa.array([None if x is None else x // 10**6 for x in micros],
                                      pa.timestamp("s")))
    sql = ("select cast(d as varchar) a, cast(ts as varchar) b, cast(tz as varchar) c, "
           "cast(s as varchar) e, try_cast(d as varchar) f, d || '!' g from t")
    want = _duck(sql, t=t)
    with pqe.Context() as ctx:
        ctx.register_arrow("t", t)
        assert ctx.sql(sql).to_arrow().to_pylist() == want.to_pylist()


def test_a_misspelled_unit_after_a_bare_number_stays_an_error():
    """`INTERVAL '1 day 12:00:00' x` takes x as an alias, as DuckDB does; after a bare number
    a word close to a unit (`INTERVAL '5' dys`) would be 5 seconds named dys, where days were
    meant: it stays a syntax error that names the unit, and AS makes it an alias."""
    ctx = pqe.Context()
    for sql in ("SELECT INTERVAL '5' dys", "SELECT INTERVAL '5' secnds", "SELECT INTERVAL 5 dys"):
        with pytest.raises(pqe.SQLSyntaxError, match="is not an interval unit"):
            ctx.sql(sql)
    row = ctx.sql("SELECT INTERVAL '5' AS dys, INTERVAL '1 day 12:00:00' x").to_arrow()
    assert row.column_names == ["dys", "x"]
    assert row.column(0)[0].as_py().nanoseconds == 5 * 10**9
    assert row.column(1)[0].as_py().days == 1


def test_a_unit_after_interval_text_that_names_its_units_is_refused():
    """`INTERVAL '1 day' HOUR` was one day named "hour" (the unit word taken as an alias);
    DuckDB refuses it and PostgreSQL cuts the text to whole hours. Refused by name; AS makes
    it an alias, and text without a unit takes the unit as before."""
    ctx = pqe.Context()
    for sql in ("SELECT INTERVAL '1 day' HOUR", "SELECT INTERVAL '1 day' DAY",
                "SELECT INTERVAL '1 day 2 hours' MINUTE"):
        with pytest.raises(pqe.SQLSyntaxError, match="names its unit already"):
            ctx.sql(sql)
    out = ctx.sql("SELECT INTERVAL '1 day' AS hour, INTERVAL '2' DAY AS d").to_arrow()
    assert out.column_names == ["hour", "d"]
    assert out.column(0)[0].as_py().days == 1 and out.column(1)[0].as_py().days == 2
