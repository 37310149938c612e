"""Findings of the seventeenth session, each a test that failed before its fix."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

import pqe


def _ns_table() -> pa.Table:
    # nanoseconds just below midnight, at half a microsecond, and before 1970
    stamps = ["2020-12-31T23:59:59.999999600", "2020-01-01T23:59:59.999999400",
              "1969-12-31T23:59:59.999999500", "2020-01-01T00:00:00.000000500"]
    import numpy as np

    return pa.table({"ts": pa.array(np.array(stamps, dtype="datetime64[ns]"),
                                    pa.timestamp("ns"))})


def test_timestamp_ns_date_functions_round_to_the_microsecond_first():
    """CAST(ts_ns AS DATE), date_trunc and last_day truncated the nanoseconds, where DuckDB
    casts a TIMESTAMP_NS to TIMESTAMP first, rounding (23:59:59.9999996 is the next day);
    date_trunc also kept TIMESTAMP_NS (DuckDB's is a TIMESTAMP, for _S and _MS too), and
    EXTRACT(epoch) kept the nanoseconds DuckDB floors to whole microseconds. EXTRACT(day)
    and strftime truncate, in DuckDB as in pqe."""
    d, dt = datetime.date, datetime.datetime
    with pqe.Context() as ctx:
        ctx.register_arrow("t", _ns_table())
        ctx.register_arrow("s", pa.table({"ms": pa.array([1609459199999], pa.timestamp("ms"))}))
        got = ctx.sql("""
            select cast(ts as date) d, try_cast(ts as date) td, date_trunc('day', ts) dd,
                   date_trunc('month', ts) dm, date_trunc('second', ts) ds,
                   last_day(ts) ld, extract(epoch from ts) ep, extract(day from ts) xd,
                   strftime(ts, '%Y-%m-%d %H:%M:%S.%f') st
            from t""").to_arrow()
        assert got.schema.field("dd").type == pa.timestamp("us")
        assert got.to_pylist() == [
            {"d": d(2021, 1, 1), "td": d(2021, 1, 1), "dd": dt(2021, 1, 1), "dm": dt(2021, 1, 1),
             "ds": dt(2021, 1, 1), "ld": d(2021, 1, 31), "ep": 1609459199.999999, "xd": 31,
             "st": "2020-12-31 23:59:59.999999"},
            {"d": d(2020, 1, 1), "td": d(2020, 1, 1), "dd": dt(2020, 1, 1), "dm": dt(2020, 1, 1),
             "ds": dt(2020, 1, 1, 23, 59, 59), "ld": d(2020, 1, 31), "ep": 1577923199.999999,
             "xd": 1, "st": "2020-01-01 23:59:59.999999"},
            {"d": d(1969, 12, 31), "td": d(1969, 12, 31), "dd": dt(1969, 12, 31),
             "dm": dt(1969, 12, 1), "ds": dt(1969, 12, 31, 23, 59, 59), "ld": d(1969, 12, 31),
             "ep": -1e-06, "xd": 31, "st": "1969-12-31 23:59:59.999999"},
            {"d": d(2020, 1, 1), "td": d(2020, 1, 1), "dd": dt(2020, 1, 1), "dm": dt(2020, 1, 1),
             "ds": dt(2020, 1, 1), "ld": d(2020, 1, 31), "ep": 1577836800.0, "xd": 1,
             "st": "2020-01-01 00:00:00.000000"},
        ]
        assert ctx.sql("select count(*) n from t where cast(ts as date) = date '2021-01-01'"
                       ).to_pylist() == [{"n": 1}]
        ms = ctx.sql("select date_trunc('day', ms) v from s").to_arrow()
        assert ms.schema.field("v").type == pa.timestamp("us")
        assert ms.to_pylist() == [{"v": dt(2020, 12, 31)}]


def test_text_compared_with_a_timestamp_column_of_another_unit_compares_exactly(tmp_path):
    """Text against a TIMESTAMP_S/_MS column (with or without a zone) compares exactly, in
    microseconds when the column's unit cannot hold it, as DuckDB compares a Parquet file's
    such columns (as TIMESTAMPs): a zoned column cut the text to its unit (`zs =
    '... 00:00:00.4'` held for 00:00:00), and rounding the text to the column's unit made a
    BETWEEN of it and a microsecond column wrong. Text naming nanoseconds against a
    TIMESTAMP_NS column is refused: its digits were cut (`ns = '... .000000001'` held for
    the .000000000 row), or, without pandas (the shell), planning failed."""
    import datetime as dt

    import numpy as np
    import pyarrow.parquet as pq

    t = pa.table({
        "ms": pa.array(np.array(["2020-01-01T00:00:00.001", "2020-01-01T00:00:00.002"],
                                dtype="datetime64[ms]"), pa.timestamp("ms")),
        "s": pa.array(np.array(["1969-12-31T23:59:58", "1969-12-31T23:59:59"],
                               dtype="datetime64[s]"), pa.timestamp("s")),
        "us": pa.array([dt.datetime(1969, 12, 31, 23, 59, 58, 300000),
                        dt.datetime(1969, 12, 31, 23, 59, 59)], pa.timestamp("us")),
        "zs": pa.array(np.array(["2020-01-01T00:00:00", "2020-01-01T00:00:01"],
                                dtype="datetime64[s]"), pa.timestamp("s", "UTC")),
        "ns": pa.array(np.array(["2020-01-01T00:00:00.000000001",
                                 "2020-01-01T00:00:00.000000002"], dtype="datetime64[ns]"),
                       pa.timestamp("ns")),
        "k": [1, 2]})
    pq.write_table(t, tmp_path / "t.parquet", row_group_size=1)
    checks = {  # DuckDB 2.0.1's answer for the two rows, on the Parquet file
        "ms = '2020-01-01 00:00:00.0015'": [False, False],
        "ms = '2020-01-01 00:00:00.002'": [False, True],
        "ms < '2020-01-01 00:00:00.0019'": [True, False],
        "ms <= '2020-01-01 00:00:00.0011'": [True, False],
        "ms between '2020-01-01 00:00:00.0011' and '2020-01-01 00:00:00.0019'": [False, False],
        "ms in ('2020-01-01 00:00:00.0015', '2020-01-01 00:00:00.0025')": [False, False],
        "ms not in ('2020-01-01 00:00:00.0015')": [True, True],
        "s = '1969-12-31 23:59:58.5'": [False, False],
        "s < '1969-12-31 23:59:58.5'": [True, False],
        "s = '1969-12-31 23:59:59'": [False, True],
        "s in ('1969-12-31 23:59:58.4', us)": [False, True],
        "'1969-12-31 23:59:58.4' between us and s": [False, False],
        "zs = '2020-01-01 00:00:00.4'": [False, False],
        "zs < '2020-01-01 00:00:00.6'": [True, False],
        "zs = '2020-01-01 00:00:01+00:00'": [False, True],
        "ns in ('2020-01-01 00:00:00.000002', '2020-01-01')": [False, False],
        "ns < '2020-01-01 00:00:00.000001'": [True, True],
    }
    with pqe.Context(partitions=2) as ctx:
        ctx.register_arrow("m", t)
        ctx.register_parquet("p", str(tmp_path / "t.parquet"))
        for table in ("m", "p"):
            for pred, want in checks.items():
                got = ctx.sql(f"select {pred} v from {table} order by k").to_pylist()
                assert [r["v"] for r in got] == want, (table, pred)
                n = ctx.sql(f"select count(*) n from {table} where {pred}").to_pylist()[0]["n"]
                assert n == sum(want), (table, pred)
            for pred in ("ns = '2020-01-01 00:00:00.000000001'",
                         "ns between '2020-01-01' and '2020-01-01 00:00:00.0000015'"):
                with pytest.raises(pqe.UnsupportedError, match="nanoseconds"):
                    ctx.sql(f"select count(*) from {table} where {pred}").to_arrow()


@pytest.mark.parametrize("literal, text", [
    # the unit inside the text: the fraction goes down one unit (DuckDB 2.0.1's answers)
    ("INTERVAL '1.5 seconds'", "00:00:01.5"),
    ("INTERVAL '1.5 minutes'", "00:01:30"),
    ("INTERVAL '0.5 days'", "12:00:00"),
    ("INTERVAL '-0.5 days'", "-12:00:00"),
    ("INTERVAL '1.5 weeks'", "10 days 12:00:00"),
    ("INTERVAL '1.5 months'", "1 month 15 days"),
    ("INTERVAL '0.33 months'", "9 days 21:36:00"),
    ("INTERVAL '1.25 quarters'", "3 months 23 days"),
    ("INTERVAL '1.5 years'", "1 year 6 months"),
    ("INTERVAL '1.01 years'", "1 year"),
    ("INTERVAL '1.05 years'", "1 year 1 month"),  # the nearest month (it was cut: 1 year)
    ("INTERVAL '-1.05 years'", "-1 year -1 month"),
    ("INTERVAL '1.125 years'", "1 year 2 months"),
    ("INTERVAL '1.5 day 2.5 hours'", "1 day 14:30:00"),
    ("INTERVAL '1.0015 milliseconds'", "00:00:00.001002"),
    ("INTERVAL '1.9 microseconds'", "00:00:00.000001"),
    ("CAST('0.5 days' AS INTERVAL)", "12:00:00"),
    # after the text: seconds and milliseconds keep the fraction, other units cut it
    ("INTERVAL '1.5' SECOND", "00:00:01.5"),
    ("INTERVAL '1.5' MILLISECOND", "00:00:00.0015"),
    ("INTERVAL '1.5' MICROSECOND", "00:00:00.000001"),
    ("INTERVAL '0.0000025' SECOND", "00:00:00.000002"),  # cut below the microsecond (was 3)
    ("INTERVAL 2.0000005 SECOND", "00:00:02"),
    ("INTERVAL '0.0005' MILLISECOND", "00:00:00"),
    ("INTERVAL '1.9' MINUTE", "00:01:00"),
    ("INTERVAL '-1.7' HOUR", "-01:00:00"),
    ("INTERVAL 1.5 DAY", "1 day"),
    ("INTERVAL '1.5' WEEK", "7 days"),
    ("INTERVAL '1.5' MONTH", "1 month"),
])
def test_fractional_intervals_as_duckdb_reads_them(literal, text):
    """INTERVAL '1.5 seconds' (any unit inside the text with a fraction) was refused ("FRACTION
    IN STRING"), INTERVAL '0.5 days' and INTERVAL '1.5' DAY too, and INTERVAL '1.5' HOUR was
    an hour and a half where DuckDB cuts it to an hour."""
    with pqe.Context() as ctx:
        assert ctx.sql(f"select ({literal})::varchar v").to_pylist() == [{"v": text}]


def test_groups_frame_without_order_by_is_one_peer_group():
    """OVER (GROUPS BETWEEN ...) was a syntax error ("Expecting )": GROUPS read as the name
    of a window), and with PARTITION BY before it refused; DuckDB answers: without ORDER BY
    every row of a partition is a peer, one group. RANGE with an offset and no ORDER BY
    stays a one-line error, as DuckDB's binder refuses it."""
    t = pa.table({"a": [1, 2, 2], "o": [1, 2, 3]})
    with pqe.Context() as ctx:
        ctx.register_arrow("t", t)

        def col(frame: str) -> list:
            sql = f"select count(a) over ({frame}) v from t order by o"
            return [r["v"] for r in ctx.sql(sql).to_pylist()]

        assert col("groups between 1 preceding and current row") == [3, 3, 3]
        assert col("groups current row") == [3, 3, 3]
        assert col("partition by a groups between 0 preceding and 0 following") == [1, 2, 2]
        assert col("partition by a groups between 1 preceding and 1 preceding") == [0, 0, 0]
        assert col("partition by a groups between 1 following and unbounded following") == \
            [0, 0, 0]
        assert col("partition by a groups between current row and current row "
                   "exclude ties") == [1, 1, 1]
        assert col("partition by a groups between current row and current row "
                   "exclude current row") == [0, 1, 1]
        got = ctx.sql("select count(a) over w v from t window w as (groups between unbounded "
                      "preceding and current row)").to_pylist()
        assert got == [{"v": 3}] * 3
        with pytest.raises(pqe.BindError, match="RANGE window frame with an offset needs an "
                                                "ORDER BY"):
            col("range between 1 preceding and current row")


def test_date_sub_counts_whole_parts_as_duckdb():
    """DuckDB's DATE_SUB('part', start, end) was refused ("function DATE_SUB is not
    supported", or a unit-word error naming `end`): sqlglot reads MySQL's DATE_SUB(date,
    INTERVAL). It is not date_diff's alias: it counts the whole parts elapsed, where
    date_diff counts the part boundaries crossed."""
    with pqe.Context() as ctx:
        got = ctx.sql("""select
            date_sub('month', timestamp '2020-01-31 10:00', timestamp '2020-03-31 09:00') m1,
            date_diff('month', timestamp '2020-01-31 10:00', timestamp '2020-03-31 09:00') m2,
            date_sub('month', date '2020-01-31', date '2020-02-29') m3,
            date_sub('month', date '2020-03-30', date '2020-01-31') m4,
            date_sub('year', date '2020-06-01', date '2021-05-31') y,
            date_sub('quarter', date '2020-01-15', date '2020-04-14') q,
            datesub('days', date '2020-01-01', date '2020-03-01') d1,
            date_sub('day', timestamp '2020-01-01 23:00', timestamp '2020-01-02 01:00') d2,
            date_sub('week', date '2020-01-01', date '2020-01-14') w,
            date_sub('hour', time '10:00:30', time '08:01:10') h""").to_pylist()
        assert got == [{"m1": 1, "m2": 2, "m3": 1, "m4": -1, "y": 0, "q": 0, "d1": 60, "d2": 0,
                        "w": 1, "h": -1}]
        with pytest.raises(pqe.UnsupportedError, match="write date - INTERVAL"):
            ctx.sql("select date_sub(date '2020-01-01', interval 1 day)").to_arrow()


@pytest.mark.parametrize("partitions", [1, 3])
def test_quantile_disc_and_mode_of_booleans_and_times(partitions):
    """QUANTILE_DISC over BOOLEAN and TIME, and MODE over TIME, were refused as "wrong
    argument types", where DuckDB answers (false sorts before true). Over INTERVALs they, and
    MEDIAN, are refused by name: DuckDB compares 1 month equal to 30 days, which Arrow's
    sorting and hashing of intervals do not."""
    t = pa.table({"g": [1, 1, 1, 2, 2, 2, 2],
                  "b": [True, False, True, None, False, False, True],
                  "tm": [datetime.time(10), datetime.time(9), datetime.time(10), None,
                         datetime.time(8, 30), datetime.time(8, 30), datetime.time(23)],
                  "iv": pa.array([datetime.timedelta(days=1)] * 7, pa.duration("us"))})
    with pqe.Context(partitions=partitions) as ctx:
        ctx.register_arrow("t", t)
        got = ctx.sql("select g, quantile_disc(b, 0.5) b5, quantile_disc(b, 0.1) b1, "
                      "quantile_disc(tm, 0.5) t5, mode(tm) tm from t group by g order by g"
                      ).to_pylist()
        assert got == [  # DuckDB 2.0.1
            {"g": 1, "b5": True, "b1": False, "t5": datetime.time(10), "tm": datetime.time(10)},
            {"g": 2, "b5": False, "b1": False, "t5": datetime.time(8, 30),
             "tm": datetime.time(8, 30)}]
        assert ctx.sql("select quantile_disc(b, 0.7) b, quantile_disc(tm, 0.9) tm from t"
                       ).to_pylist() == [{"b": True, "tm": datetime.time(23)}]
        for fn in ("mode(iv)", "quantile_disc(iv, 0.5)", "median(iv)"):
            with pytest.raises(pqe.UnsupportedError, match="of INTERVAL values is not "
                                                           "supported"):
                ctx.sql(f"select {fn} from t").to_arrow()


def test_string_agg_column_is_named_as_written():
    """STRING_AGG's column was named group_concat(x, ',') (sqlglot reads it as GROUP_CONCAT,
    its ORDER BY before the separator), where DuckDB names it as written: string_agg(x, ','),
    string_agg(x, ',' ORDER BY x DESC). GROUP_CONCAT and LISTAGG keep their names."""
    with pqe.Context() as ctx:
        ctx.register_arrow("t", pa.table({"x": ["a", "b"], "g": [1, 1]}))
        names = ctx.sql("""select string_agg(x, ',') , STRING_AGG(x), string_agg(distinct x, '-'),
                                  string_agg(x, ',' order by x desc, g), group_concat(x, ';'),
                                  listagg(x, ',')
                           from t""").to_arrow().column_names
        assert names == [  # DuckDB 2.0.1's
            "string_agg(x, ',')", "string_agg(x)", "string_agg(DISTINCT x, '-')",
            "string_agg(x, ',' ORDER BY x DESC, g)", "group_concat(x, ';')",
            "listagg(x, ',')"]
        names = ctx.sql("select string_agg(x, ',') over (partition by g) from t").to_arrow()
        assert names.column_names == ["string_agg(x, ',') OVER (PARTITION BY g)"]


def test_epoch_of_a_zoned_nanosecond_timestamp_counts_whole_microseconds():
    """extract(epoch) of a TIMESTAMP_NS floors its nanoseconds to the microsecond, as DuckDB;
    with a zone it kept them (-1 ns was -1e-09 where DuckDB gives -1e-06)."""
    vals = [499, -500, -1, 1577836800000000001, -1577836800000000999, 0]
    want = [0.0, -1e-06, -1e-06, 1577836800.0, -1577836800.000001, 0.0]  # DuckDB 2.0.1
    for tz in (None, "UTC"):
        with pqe.Context() as ctx:
            ctx.register_arrow("t", pa.table({"z": pa.array(vals, pa.timestamp("ns", tz))}))
            got = [r["v"] for r in ctx.sql("select extract(epoch from z) v from t").to_pylist()]
            assert got == pytest.approx(want, rel=1e-12, abs=1e-15), tz


def test_greatest_and_least_of_zoned_timestamps():
    """GREATEST / LEAST of TIMESTAMPTZ columns failed ("Function 'max_element_wise' has no
    kernel matching input types"): compared as their UTC instants, zones mixed, NULLs
    skipped (DuckDB's answers)."""
    import datetime as dt

    t = pa.table({"z": pa.array([dt.datetime(2020, 1, 1), None, dt.datetime(2022, 1, 1)],
                                pa.timestamp("us", "UTC")),
                  "z2": pa.array([dt.datetime(2021, 1, 1), None, dt.datetime(2019, 6, 1, 12)],
                                 pa.timestamp("ms", "America/New_York"))})
    utc = dt.timezone.utc
    with pqe.Context(partitions=2) as ctx:
        ctx.register_arrow("t", t)
        got = ctx.sql("select greatest(z, z2) g, least(z2, z) l from t").to_arrow()
        assert [v and v.astimezone(utc) for v in got.column("g").to_pylist()] == [
            dt.datetime(2021, 1, 1, tzinfo=utc), None, dt.datetime(2022, 1, 1, tzinfo=utc)]
        assert [v and v.astimezone(utc) for v in got.column("l").to_pylist()] == [
            dt.datetime(2020, 1, 1, tzinfo=utc), None, dt.datetime(2019, 6, 1, 12, tzinfo=utc)]


def test_a_cross_product_with_a_side_its_statistics_empty_is_answered(tmp_path):
    """`FROM t a, t b, t c WHERE a.q > 1000` with every q at most 50: the file statistics
    prune all of a's row groups, but the memory guard estimated the cross products from a
    small row estimate and refused the query ("needs about 487 GiB"); DuckDB answers 0."""
    import numpy as np
    import pyarrow.parquet as pq

    n = 60_000  # (the estimate then crosses the memory guard: n * 1e-4 * n * n rows)
    pq.write_table(pa.table({"k": np.arange(n), "q": np.arange(n) % 50 + 1}),
                   tmp_path / "t.parquet", row_group_size=15_000)
    with pqe.Context(partitions=2) as ctx:
        ctx.register_parquet("t", str(tmp_path / "t.parquet"))
        for side in ("a", "b", "c"):
            got = ctx.sql(f"select count(*) n from t a, t b, t c where {side}.q > 1000")
            assert got.to_pylist() == [{"n": 0}], side
        with pytest.raises(pqe.ResourceError):  # (a side that reads rows: still refused)
            ctx.sql("select count(*) from t a, t b, t c where a.q > 49").to_arrow()
