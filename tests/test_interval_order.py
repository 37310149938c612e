"""INTERVAL values (TIMESTAMP - TIMESTAMP, durations) in ORDER BY, a window's ORDER BY and
PARTITION BY, MIN / MAX and CAST to text, checked against DuckDB: intervals compare as one
length (a month is 30 days, a day 24 hours: INTERVAL '1 month' = INTERVAL '30 days'), so they
sort by their normalized (days, rest) pair, MIN / MAX give the interval of the smallest /
largest length as it is (not normalized: EXTRACT(MONTH ...) of it is the user's), and text is
DuckDB's ('1 month 2 days 03:04:05.5', '-721:00:00'). GROUP BY / DISTINCT group by length too,
each group's interval one of its own as written."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.testing import oracle
from pqe.testing.compare import compare

MDN = pa.month_day_nano_interval()
H = 3_600_000_000_000


def _table() -> pa.Table:
    rng = np.random.default_rng(3)
    n = 400
    start = [dt.datetime(2024, 1, 1) + dt.timedelta(minutes=int(m))
             for m in rng.integers(0, 200_000, n)]
    end = [s + dt.timedelta(minutes=int(m)) if i % 17 else None
           for i, (s, m) in enumerate(zip(start, rng.integers(-50_000, 50_000, n)))]
    written = [pa.MonthDayNano([1, 0, 0]), pa.MonthDayNano([0, 30, 0]),  # equal lengths
               pa.MonthDayNano([0, 0, 720 * H]), pa.MonthDayNano([0, 1, -H]),
               pa.MonthDayNano([-1, 31, 0]), pa.MonthDayNano([0, 0, 1000]), None,
               pa.MonthDayNano([14, -3, 5 * H + 500_000_000])]
    return pa.table({
        "id": np.arange(n),
        "g": rng.integers(0, 7, n),
        "s": pa.array(start, pa.timestamp("us")),
        "e": pa.array(end, pa.timestamp("us")),
        "w": pa.array([written[i % len(written)] for i in range(n)], MDN),
    })


T = _table()
CON = oracle.connect({"t": T})


@pytest.fixture(scope="module", params=[1, 3], ids=["1p", "3p"])
def ctx(request):
    with pqe.Context(partitions=request.param) as c:
        c.register_arrow("t", T)
        yield c


def _check(ctx, sql, ordered=False):
    miss = compare(ctx.sql(sql).to_arrow(), oracle.query(CON, sql), sql=sql, ordered=ordered)
    assert miss is None, f"{sql}\n{miss}"


@pytest.mark.parametrize("order", ["e - s", "e - s DESC", "e - s NULLS FIRST",
                                   "e - s DESC NULLS LAST"])
def test_order_by_a_difference(ctx, order):
    _check(ctx, f"SELECT id, extract(epoch FROM e - s) AS secs FROM t ORDER BY {order}, id",
           ordered=True)


def test_order_by_intervals_written_differently(ctx):
    """'1 month', '30 days' and '720 hours' are peers: the id breaks their tie."""
    _check(ctx, "SELECT id FROM t ORDER BY w, id", ordered=True)
    _check(ctx, "SELECT id FROM t ORDER BY w DESC NULLS LAST, id DESC LIMIT 50", ordered=True)


def test_window_order_and_partition_by_an_interval(ctx):
    _check(ctx, "SELECT id, rank() OVER (ORDER BY w) AS r, "
                "dense_rank() OVER (PARTITION BY g ORDER BY e - s DESC) AS d FROM t")
    _check(ctx, "SELECT id, count(*) OVER (PARTITION BY w) AS c, "
                "row_number() OVER (PARTITION BY w ORDER BY id) AS n FROM t")
    _check(ctx, "SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY g "
                "ORDER BY e - s DESC NULLS LAST, id) AS r FROM t) WHERE r <= 2")


def test_min_and_max(ctx):
    _check(ctx, "SELECT g, extract(epoch FROM max(e - s)) AS hi, "
                "extract(epoch FROM min(e - s)) AS lo FROM t GROUP BY g")
    _check(ctx, "SELECT extract(epoch FROM max(w)), extract(epoch FROM min(w)), "
                "extract(epoch FROM max(w) FILTER (WHERE g > 2)) FROM t")
    _check(ctx, "SELECT max(e - s) > INTERVAL '20 days', min(e - s) < INTERVAL '-20 days' "
                "FROM t WHERE g = 1")


def test_min_and_max_keep_the_interval_as_written(ctx):
    """The largest is '1 year 2 months -3 days 05:00:00.5' itself (not '417 days ...'); of
    '1 month' and '30 days' (equal), one of them as written."""
    got = ctx.sql("SELECT max(w) AS hi, min(w) AS lo FROM t").to_pylist()[0]
    assert got["hi"] == pa.MonthDayNano([14, -3, 5 * H + 500_000_000])
    assert got["lo"] == pa.MonthDayNano([0, 0, 1000])
    got = ctx.sql("SELECT extract(month FROM max(w)) AS m FROM t WHERE w < INTERVAL '31 days'"
                  " AND w > INTERVAL '29 days' AND extract(month FROM w) = 1").to_pylist()
    assert got == [{"m": 1}]
    assert ctx.sql("SELECT max(w) FROM t WHERE id < 0").to_pylist() == [{"max(w)": None}]


def test_cast_to_text(ctx):
    _check(ctx, "SELECT id, CAST(e - s AS VARCHAR) AS a, CAST(w AS VARCHAR) AS b, "
                "'took ' || (e - s) AS c FROM t")
    for text in ["1 month 2 days 03:04:05.5", "-721 hours", "0 seconds", "1 year 14 months",
                 "-1 year -2 months", "-00:00:01.25", "2 months -1 day 10:00:00",
                 "00:00:00.000001"]:
        _check(ctx, f"SELECT CAST(INTERVAL '{text}' AS VARCHAR)")


def test_group_by_and_distinct_go_by_length(ctx):
    """'1 month', '30 days' and '720 hours' are one group (DuckDB), shown as one of them."""
    _check(ctx, "SELECT extract(epoch FROM w) AS e, count(*) AS c, sum(id) AS s FROM t "
                "GROUP BY w")
    _check(ctx, "SELECT count(*) FROM (SELECT DISTINCT w FROM t)")
    _check(ctx, "SELECT g, count(DISTINCT w) AS n, count(DISTINCT e - s) AS m FROM t GROUP BY g")
    _check(ctx, "SELECT count(*) FROM (SELECT w FROM t UNION SELECT w FROM t)")
    _check(ctx, "SELECT extract(epoch FROM w) AS e, g, count(*) AS c FROM t "
                "GROUP BY ROLLUP (w, g)")
    got = ctx.sql("SELECT w FROM t WHERE w = INTERVAL '30 days' GROUP BY w").to_pylist()
    assert len(got) == 1 and got[0]["w"] in (pa.MonthDayNano([1, 0, 0]),
                                            pa.MonthDayNano([0, 30, 0]),
                                            pa.MonthDayNano([0, 0, 720 * H]))


def test_still_refused_by_name(ctx):
    for sql, what in [("SELECT sum(id) OVER (ORDER BY w RANGE BETWEEN INTERVAL '1 day' "
                       "PRECEDING AND CURRENT ROW) FROM t", "RANGE"),
                      ("SELECT max(w) OVER (PARTITION BY g) FROM t", "MAX")]:
        with pytest.raises(pqe.Error, match=what):
            ctx.sql(sql).to_arrow()


def test_internal_keys_are_not_sql_functions(ctx):
    with pytest.raises(pqe.Error, match="(?i)unknown function"):
        ctx.sql("SELECT pqe_interval_total_key(w) FROM t").to_arrow()


def test_timestamps_plus_a_column_of_intervals(ctx):
    """Months first (the day clamped to the month's end: Jan 31 + 1 month is Feb 29), then
    days and the rest; a DATE as its midnight; NULL in, NULL out; as DuckDB."""
    _check(ctx, "SELECT id, s + (e - s) AS back, e - (e - s) AS again, (e - s) + s AS too "
                "FROM t")
    _check(ctx, "SELECT id, s + w AS a, s - w AS b, CAST(s AS DATE) + w AS c, "
                "CAST(s AS DATE) - w AS d FROM t")
    month_ends = pa.table({
        "ts": pa.array([dt.datetime(2024, 1, 31, 10), dt.datetime(2024, 2, 29, 23, 59, 59),
                        dt.datetime(1969, 12, 31, 10), dt.datetime(1900, 1, 31, 23), None],
                       pa.timestamp("us")),
        "iv": pa.array([pa.MonthDayNano([1, 0, 0]), pa.MonthDayNano([12, 1, 1000]),
                        pa.MonthDayNano([1, 0, -H]), pa.MonthDayNano([-13, -30, 5000]),
                        pa.MonthDayNano([1, 0, 0])], MDN)})
    con = oracle.connect({"m": month_ends})
    c = pqe.Context(partitions=2)
    c.register_arrow("m", month_ends)
    sql = "SELECT ts + iv AS a, ts - iv AS b, iv + ts AS c FROM m"
    assert compare(c.sql(sql).to_arrow(), oracle.query(con, sql), ordered=True) is None


def test_interval_column_past_timestamps_range_is_an_error():
    c = pqe.Context()
    c.register_arrow("x", pa.table({
        "ts": pa.array([dt.datetime(2020, 1, 1)], pa.timestamp("us")),
        "tz": pa.array([dt.datetime(2020, 1, 1)], pa.timestamp("us", "Europe/Paris")),
        "iv": pa.array([pa.MonthDayNano([0, 2**31 - 1, 0])], MDN)}))
    with pytest.raises(pqe.Error, match="(?i)overflow|out of range"):
        c.sql("SELECT ts + iv FROM x").to_arrow()
    with pytest.raises(pqe.UnsupportedError, match="TIME ZONE"):
        c.sql("SELECT tz + iv FROM x").to_arrow()
