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

