"""Findings of the eighteenth session's hunt of the DB-API and writes: raw Python errors,
values fetched in the wrong Python type, a stale rowcount, and a partition directory named
by the wrong text. Each test fails without its fix."""

from __future__ import annotations

import datetime as dt
import os

import numpy as np
import pyarrow as pa
import pytest

import pqe


def test_numpy_array_parameters_are_refused_as_lists_are():
    """np.array([1, 2]) raised a raw ValueError from .item(); np.array([5]) was bound as 5."""
    cur = pqe.connect().cursor()
    for value in (np.array([1, 2]), np.array([5]), np.zeros((1, 1))):
        with pytest.raises(pqe.Error, match="ndarray cannot be bound"):
            cur.execute("SELECT ? AS v", (value,))
    assert cur.execute("SELECT ? AS v", (np.array(7),)).fetchall() == [(7,)]  # 0-d: a scalar
    assert cur.execute("SELECT ? AS v", (np.int16(7),)).fetchall() == [(7,)]


def test_fetched_intervals_and_nanosecond_timestamps_are_python_values_nested_too():
    """An INTERVAL past timedelta's range raised a raw OverflowError; INTERVALs inside a list,
    struct or map came back as Arrow's MonthDayNano; a TIMESTAMP_NS as a pandas Timestamp."""
    ctx = pqe.Context()
    ts = pa.array([1577840523123456789, -315619199999999999, None], pa.timestamp("ns"))
    iv = pa.array([pa.MonthDayNano([1, 2, 3000]), None, pa.MonthDayNano([0, -1, -1500])],
                  pa.month_day_nano_interval())
    ctx.register_arrow("t", pa.table({
        "ts": ts, "tz": ts.cast(pa.timestamp("ns", "UTC")),
        "st": pa.StructArray.from_arrays([iv, ts], names=["i", "t"]),
        "m": pa.MapArray.from_arrays(pa.array([0, 1, 1, 2]), pa.array(["a", "b"]),
                                     iv.take([0, 2]))}))
    cur = pqe.connect(context=ctx).cursor()
    rows = cur.execute("SELECT * FROM t").fetchall()
    first = dt.datetime(2020, 1, 1, 1, 2, 3, 123456)
    month = dt.timedelta(days=32, microseconds=3)  # a month as 30 days, as DuckDB gives it
    back = -dt.timedelta(days=1, microseconds=1)  # -1 day -1.5 us, to the us toward zero
    assert rows[0] == (first, first.replace(tzinfo=dt.timezone.utc), {"i": month, "t": first},
                       [("a", month)])
    assert rows[1][0] == dt.datetime(1960, 1, 1)  # 1 ns past it, floored to the microsecond
    assert rows[2] == (None, None, {"i": back, "t": None}, [("b", back)])
    assert type(rows[0][0]) is dt.datetime
    assert cur.description[0][1] == pqe.dbapi.DATETIME
    assert cur.execute("SELECT [INTERVAL '1' DAY, NULL] AS l").fetchall() == [
        ([dt.timedelta(days=1), None],)]
    for years in (3_000_000, 300_000):  # (300,000: past the int64 microseconds, it wrapped)
        with pytest.raises(pqe.ExecutionError, match="longer than a timedelta"):
            cur.execute(f"SELECT INTERVAL '{years} years' AS i").fetchall()
    assert cur.execute("SELECT INTERVAL '290000 years' AS i").fetchall() == [
        (dt.timedelta(days=290000 * 360),)]


def test_description_type_codes():
    """A list of decimals was NUMBER (any name starting DECIMAL); TIMESTAMP_S/_MS/_NS were
    not DATETIME; a fixed-size binary not BINARY."""
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({
        "s": pa.array([0], pa.timestamp("s")), "ms": pa.array([0], pa.timestamp("ms")),
        "fb": pa.array([b"ab"], pa.binary(2)), "d": pa.array([1], pa.int64())}))
    cur = pqe.connect(context=ctx).cursor()
    cur.execute("SELECT s, ms, fb, [CAST(1.5 AS DECIMAL(3,1))] AS l, CAST(d AS DECIMAL(3,1)) AS x "
                "FROM t")
    codes = [d[1] for d in cur.description]
    assert codes[0] == pqe.dbapi.DATETIME and codes[1] == pqe.dbapi.DATETIME
    assert codes[2] == pqe.dbapi.BINARY
    assert codes[3] != pqe.dbapi.NUMBER and codes[4] == pqe.dbapi.NUMBER


def test_rowcount_after_a_failed_executemany_counts_the_committed_rows():
    """rowcount stayed 3 from an earlier SELECT after executemany committed 5000 rows and then
    failed on the next chunk."""
    cur = pqe.connect().cursor()
    cur.execute("CREATE TABLE t (a TINYINT)")
    cur.execute("SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3")
    with pytest.raises(pqe.Error, match="out of range"):
        cur.executemany("INSERT INTO t VALUES (?)", [(1,)] * 5000 + [(300,)])
    assert cur.rowcount == 5000
    assert cur.execute("SELECT count(*) FROM t").fetchall() == [(5000,)]
    # a statement per row (not an INSERT ... VALUES): the rows before the failing one
    cur.execute("CREATE TABLE u (a INTEGER)")
    cur.execute("INSERT INTO u VALUES (1), (2)")
    with pytest.raises(pqe.Error):
        cur.executemany("UPDATE u SET a = ? WHERE a > 0", [(5,), (2**40,)])
    assert cur.rowcount == 2


def test_partition_directories_name_reals_by_their_own_text(tmp_path):
    """A REAL 0.1 named its directory r=0.10000000149011612 (its double's text), which
    `WHERE r = '0.1'` over the written dataset never found; DuckDB writes r=0.1."""
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"r": pa.array([0.1, 2.5, 1e-7, None], pa.float32()),
                                      "x": [1, 2, 3, 4]}))
    out = tmp_path / "d"
    ctx.sql(f"COPY (SELECT r, x FROM t) TO '{out}' (FORMAT parquet, PARTITION_BY (r))")
    assert sorted(os.listdir(out)) == ["r=0.1", "r=1e-07", "r=2.5",
                                       "r=__HIVE_DEFAULT_PARTITION__"]
    ctx.register_parquet("back", str(out))
    assert ctx.sql("SELECT x FROM back WHERE CAST(r AS VARCHAR) = '0.1'").to_pylist() == [{"x": 1}]


@pytest.mark.parametrize("sql", [
    "SELECT 9223372036854775807 + CAST(? AS BIGINT) AS v",  # an integer overflow (Arrow's)
    "SELECT CAST(CAST(? AS BIGINT) * 100 AS TINYINT) AS v",  # a value out of a type's range
    "SELECT CAST(CAST(? AS VARCHAR) || 'x' AS INTEGER) AS v",  # a failed cast
    "SELECT DATE '9999-12-31' + CAST(? AS BIGINT) * INTERVAL '1' DAY AS v",  # past Python's date
])
def test_bad_values_while_running_are_pep_249_data_errors(sql):
    """Nothing raised DataError, which PEP 249 names for a value out of range or invalid
    (psycopg raises it for these); they were OperationalErrors only. They stay
    ExecutionErrors (and OperationalErrors) too."""
    cur = pqe.connect().cursor()
    with pytest.raises(pqe.DataError) as info:
        cur.execute(sql, (3,)).fetchall()
    assert isinstance(info.value, pqe.ExecutionError)
    assert isinstance(info.value, pqe.OperationalError)
    # a failure that is not the data's stays no DataError
    with pytest.raises(pqe.Error) as other:
        cur.execute("SELECT * FROM read_parquet('/nonexistent/x.parquet')").fetchall()
    assert not isinstance(other.value, pqe.DataError)
