"""RANGE frames with an INTERVAL offset in months or years (`RANGE BETWEEN INTERVAL 1 MONTH
PRECEDING AND CURRENT ROW`) over DATE and TIMESTAMP keys: they were refused. Each key is
stepped by calendar months (to the same day of the month, or the month's last day), then by
the days and the rest, as DuckDB's date + interval. Checked against DuckDB over month ends
and leap days, ascending and descending keys, NULL keys, partitions, every TIMESTAMP unit,
and at 1 and 3 partitions."""

from __future__ import annotations

import datetime
import random

import pyarrow as pa
import pytest

import pqe
from helpers import assert_answers_as_duckdb


def _tables():
    rng = random.Random(5)
    ends = [datetime.date(2020, 1, 31), datetime.date(2020, 2, 29), datetime.date(2020, 3, 31),
            datetime.date(2021, 2, 28), datetime.date(2019, 12, 31), datetime.date(2020, 4, 30)]
    ds = [datetime.date(2019, 6, 1) + datetime.timedelta(days=rng.randint(0, 1000))
          for _ in range(240)] + ends * 2 + [None] * 4
    ts = [None if d is None else datetime.datetime(d.year, d.month, d.day, rng.randint(0, 23),
                                                   rng.randint(0, 59), rng.randint(0, 59),
                                                   rng.choice([0, 500_000]))
          for d in ds]
    return {"t": pa.table({
        "d": pa.array(ds, pa.date32()),
        "ts": pa.array(ts, pa.timestamp("us")),
        "ts_s": pa.array([None if x is None else x.replace(microsecond=0) for x in ts],
                         pa.timestamp("s")),
        "ts_ms": pa.array(ts, pa.timestamp("ms")),
        "ts_ns": pa.array(ts, pa.timestamp("ns")),
        "v": pa.array([rng.randint(-5, 9) for _ in ds], pa.int64()),
        "g": pa.array([i % 3 for i in range(len(ds))], pa.int64()),
    })}


QUERIES = [
    "SELECT d, v, sum(v) OVER (ORDER BY d RANGE BETWEEN INTERVAL 1 MONTH PRECEDING "
    "AND CURRENT ROW) AS s FROM t",
    "SELECT d, count(*) OVER (ORDER BY d RANGE BETWEEN CURRENT ROW AND INTERVAL '1 month' "
    "FOLLOWING) AS s FROM t",
    "SELECT d, count(*) OVER (ORDER BY d DESC RANGE BETWEEN INTERVAL '1 month 3 days' "
    "PRECEDING AND INTERVAL '2 months' FOLLOWING) AS s FROM t",
    "SELECT d, count(*) OVER (ORDER BY d RANGE BETWEEN INTERVAL 1 MONTH FOLLOWING AND "
    "INTERVAL 2 MONTH FOLLOWING) AS s FROM t",
    "SELECT d, g, sum(v) OVER (PARTITION BY g ORDER BY d RANGE BETWEEN INTERVAL 1 YEAR "
    "PRECEDING AND INTERVAL 1 QUARTER PRECEDING) AS s FROM t",
    "SELECT ts, sum(v) OVER (ORDER BY ts RANGE BETWEEN INTERVAL '1 month 12 hours' PRECEDING "
    "AND CURRENT ROW) AS s FROM t",
    "SELECT ts, max(v) OVER (ORDER BY ts DESC RANGE BETWEEN INTERVAL '3 months' PRECEDING "
    "AND INTERVAL '1 month 00:00:01.5' FOLLOWING) AS s FROM t",
    "SELECT ts_s, count(*) OVER (ORDER BY ts_s RANGE BETWEEN INTERVAL 2 MONTH PRECEDING AND "
    "CURRENT ROW) AS s FROM t",
    "SELECT ts_ms, count(*) OVER (ORDER BY ts_ms RANGE BETWEEN INTERVAL 2 MONTH PRECEDING AND "
    "CURRENT ROW) AS s FROM t",
    "SELECT ts_ns, count(*) OVER (ORDER BY ts_ns RANGE BETWEEN INTERVAL 2 MONTH PRECEDING AND "
    "INTERVAL 1 MONTH FOLLOWING) AS s FROM t",
    "SELECT d, avg(v) OVER w AS a, min(v) OVER w AS m FROM t "
    "WINDOW w AS (ORDER BY d RANGE INTERVAL 6 MONTH PRECEDING)",
]


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("sql", QUERIES)
def test_month_offsets_match_duckdb(sql, partitions):
    assert_answers_as_duckdb(sql, _tables(), partitions)


@pytest.mark.parametrize("sql, error, match", [
    ("SELECT sum(v) OVER (ORDER BY d RANGE BETWEEN INTERVAL '-1 month' PRECEDING AND CURRENT "
     "ROW) FROM t", pqe.BindError, "negative"),
    ("SELECT sum(v) OVER (ORDER BY v RANGE BETWEEN INTERVAL '1 month' PRECEDING AND CURRENT "
     "ROW) FROM t", pqe.UnsupportedError, "DATE or TIMESTAMP"),
    ("SELECT sum(v) OVER (ORDER BY d ROWS BETWEEN INTERVAL '1 month' PRECEDING AND CURRENT "
     "ROW) FROM t", pqe.BindError, "integers"),
])
def test_month_offsets_refused_where_they_mean_nothing(sql, error, match):
    ctx = pqe.Context()
    ctx.register_arrow("t", _tables()["t"])
    with pytest.raises(error, match=match):
        ctx.sql(sql).to_arrow()
