"""TIME (a time of day, microseconds) as a SQL type: CAST / TRY_CAST from text, TIME '...'
literals, columns of CREATE TABLE, parameters (datetime.time), EXTRACT of its clock fields,
comparisons, ordering, Parquet. It was 'type TIME is not supported' (a TIME column read from
Parquet worked, but could not be compared with a constant written in SQL).

The text grammar is plan.temporal_text.TIME_TEXT, shared by the constants' folding and the
kernels' casts of columns: the same text gives the same TIME either way. DuckDB is the
oracle, except where pqe reads text as its TIMESTAMP grammar does (surrounding spaces are
trimmed, a zone suffix such as ' UTC' is ignored) and refuses what is no time of day.
"""
from __future__ import annotations

import datetime

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe

TEXTS = ["12:34", "1:02:03", "12:34:56.1234567", "12:34:56.9999999", "12:60:00", "25:00:00",
         "12:34:56Z", "12:34:56+02", "12:34:56+02:30", "12", "123:00:00", "00:00:00",
         "23:59:59.999999", "12:5:00", "12:34:5", "-01:00:00", "12:34:56.", "+12:00:00",
         "12:34:60", "", "noon", "١٢:٣٤", "12:34:56.5", "07:08", "12.34.56", "12:34:56:78",
         None]
# read apart from DuckDB on purpose: trimmed as TIMESTAMP text is / DuckDB reads a time of
# day past the last one and the time of a timestamp's text
OURS = {" 12:00 ": datetime.time(12, 0), "12:34:56 UTC": datetime.time(12, 34, 56),
        "24:00:00": None, "2024-01-01 12:00:00": None}


@pytest.fixture(scope="module")
def texts():
    t = pa.table({"s": TEXTS})
    ctx = pqe.Context()
    ctx.register_arrow("t", t)
    ctx.register_arrow("ours", pa.table({"s": list(OURS)}))
    con = duckdb.connect()
    con.register("t", t)
    return ctx, con


def _rows(ctx, sql, params=()):
    return [tuple(r.values()) for r in ctx.sql(sql, params).to_pylist()]


@pytest.mark.parametrize("sql", [
    "SELECT s, TRY_CAST(s AS TIME) AS v FROM t",
    "SELECT s, CAST(TRY_CAST(s AS TIME) AS VARCHAR) AS v FROM t",
    "SELECT s, EXTRACT(hour FROM TRY_CAST(s AS TIME)) AS h, EXTRACT(minute FROM TRY_CAST(s AS "
    "TIME)) AS m, EXTRACT(second FROM TRY_CAST(s AS TIME)) AS x, EXTRACT(microsecond FROM "
    "TRY_CAST(s AS TIME)) AS us, EXTRACT(epoch FROM TRY_CAST(s AS TIME)) AS e FROM t",
    "SELECT s FROM t WHERE TRY_CAST(s AS TIME) > '12:00' AND s IS NOT NULL",
    "SELECT TRY_CAST(s AS TIME) AS v, count(*) AS n FROM t GROUP BY 1",
])
def test_time_from_text_matches_duckdb(texts, sql):
    ctx, con = texts
    mine = {r[0]: r for r in _rows(ctx, sql)}
    theirs = {r[0]: r for r in con.sql(sql).fetchall()}
    assert mine == theirs


def test_the_deliberate_differences(texts):
    ctx, _ = texts
    assert dict(_rows(ctx, "SELECT s, TRY_CAST(s AS TIME) FROM ours")) == OURS


@pytest.mark.parametrize("text", [t for t in TEXTS + list(OURS) if t is not None])
def test_a_constant_and_a_column_read_alike(text):
    ctx = pqe.Context()
    ctx.register_arrow("one", pa.table({"s": [text]}))
    column = _rows(ctx, "SELECT TRY_CAST(s AS TIME) FROM one")
    constant = _rows(ctx, "SELECT TRY_CAST(? AS TIME)", (text,))
    assert column == constant
    if column[0][0] is None:
        with pytest.raises(pqe.Error, match="is not a valid TIME|cannot cast"):
            _rows(ctx, "SELECT CAST(s AS TIME) FROM one")
        with pytest.raises(pqe.Error, match="cannot cast"):
            _rows(ctx, f"SELECT TIME '{text}'")
    else:
        assert _rows(ctx, "SELECT CAST(s AS TIME) FROM one") == column
        assert _rows(ctx, f"SELECT TIME '{text}'") == column


def test_a_table_of_times_through_parameters_and_parquet(tmp_path):
    con = pqe.connect()
    cur = con.cursor()
    cur.execute("CREATE TABLE ev (id INTEGER, at TIME)")
    cur.executemany("INSERT INTO ev VALUES (?, ?)", [
        (1, datetime.time(9, 30)), (2, "17:45:10.25"), (3, None),
        (4, datetime.time(23, 59, 59, 999999)), (5, datetime.time(0, 0, 1))])
    cur.execute("SELECT id FROM ev WHERE at BETWEEN ? AND TIME '18:00' ORDER BY at",
                (datetime.time(9, 0),))
    assert cur.fetchall() == [(1,), (2,)]
    assert cur.description[0][1] == "INTEGER" and cur.description[0][0] == "id"
    cur.execute("SELECT at FROM ev ORDER BY at DESC NULLS LAST LIMIT 1")
    assert cur.description[0][1] == "TIME"
    assert cur.fetchall() == [(datetime.time(23, 59, 59, 999999),)]
    path = tmp_path / "ev.parquet"
    cur.execute(f"COPY ev TO '{path}' (FORMAT parquet)")
    assert pq.read_schema(path).field("at").type == pa.time64("us")
    con._ctx.register_parquet("evp", str(path))
    got = con._ctx.sql("SELECT min(at) AS lo, max(at) AS hi, count(at) AS n, "
                       "CAST(max(at) AS VARCHAR) AS t FROM evp").to_pylist()
    assert got == [{"lo": datetime.time(0, 0, 1), "hi": datetime.time(23, 59, 59, 999999),
                    "n": 4, "t": "23:59:59.999999"}]
    with pytest.raises(pqe.Error, match="'not a time' is not a valid TIME$"):
        cur.execute("INSERT INTO ev VALUES (6, 'not a time')")
    with pytest.raises(pqe.Error, match="with a zone cannot be bound"):
        cur.execute("SELECT ?", (datetime.time(1, tzinfo=datetime.timezone.utc),))


@pytest.mark.parametrize("sql, message", [
    ("SELECT CAST(TIME '01:00' AS BIGINT)", "cannot cast TIME to BIGINT"),
    ("SELECT EXTRACT(year FROM TIME '01:00')", r"EXTRACT\(year\) of a TIME"),
    ("SELECT TIME '01:00' + INTERVAL 1 HOUR", "cannot apply add to TIME and INTERVAL"),
    ("SELECT TIME '01:00' - TIME '00:30'", "cannot apply subtract to TIME and TIME"),
    ("SELECT CAST('01:00' AS TIME WITH TIME ZONE)", "not supported"),
])
def test_what_a_time_does_not_do_is_refused(sql, message):
    with pytest.raises(pqe.Error, match=message):
        pqe.Context().sql(sql).to_arrow()


def test_a_timestamp_gives_its_time_of_day():
    sql = "SELECT CAST(TIMESTAMP '2024-01-01 12:34:56.5' AS TIME) AS v"
    assert _rows(pqe.Context(), sql) == duckdb.sql(sql).fetchall()


def test_time_columns_of_other_units_meet_text_and_time(tmp_path):
    """Parquet TIME columns in seconds, milliseconds or nanoseconds: compared with text and
    cast to TIME (nanoseconds: "cannot convert '12:00' to TIME64[NS]", and CAST failed with
    Arrow's 'would lose data'; the digits below microseconds are cut, as text's are)."""
    ns = 45296123456789  # 12:34:56.123456789
    pq.write_table(pa.table({
        "n": pa.array([ns, 3600 * 10**9, None], pa.time64("ns")),
        "s": pa.array([45296, 3600, None], pa.time32("s")),
        "m": pa.array([45296123, 3600000, None], pa.time32("ms"))}), tmp_path / "u.parquet")
    ctx = pqe.Context()
    ctx.register_parquet("u", str(tmp_path / "u.parquet"))
    t = datetime.time(12, 34, 56, 123456)
    assert _rows(ctx, "SELECT CAST(n AS TIME), TRY_CAST(n AS TIME), CAST(m AS TIME), "
                      "CAST(s AS TIME) FROM u") == [
        (t, t, datetime.time(12, 34, 56, 123000), datetime.time(12, 34, 56)),
        (datetime.time(1),) * 4, (None,) * 4]
    for col in "nsm":
        assert _rows(ctx, f"SELECT count(*) FROM u WHERE {col} > '12:00'") == [(1,)]
        assert _rows(ctx, f"SELECT count(*) FROM u WHERE {col} = '01:00'") == [(1,)]
        assert _rows(ctx, f"SELECT count(*) FROM u WHERE {col} < '12:34:56.5'") == [(2,)]
        assert _rows(ctx, f"SELECT count(*) FROM u WHERE {col} = TIME '01:00'") == [(1,)]
    assert _rows(ctx, "SELECT count(*) FROM u WHERE s > '12:34:55.5'") == [(1,)]
    assert _rows(ctx, "SELECT CAST(coalesce(n, '00:00:01') AS TIME) FROM u") == [
        (t,), (datetime.time(1),), (datetime.time(0, 0, 1),)]
