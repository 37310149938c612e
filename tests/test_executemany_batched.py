"""DB-API executemany of `INSERT ... VALUES (?, ...)` runs one statement per chunk of rows.

It ran one statement per parameter row (~1.8 ms a row: 10,000 rows took 18 s). The rows are
now bound as the rows of one VALUES: each value is the same typed literal and is cast to its
column just as a one-row INSERT casts it, so the table must come out identical to inserting
the rows one execute() at a time, whatever the mix of Python types per column. Shapes that
are not a plain VALUES row of parameters keep the per-row path.
"""
from __future__ import annotations

import datetime
import decimal
import threading
import time

import pyarrow as pa
import pytest

import pqe
import pqe.dbapi as dbapi

COLUMNS = ["i INTEGER", "b BIGINT", "d DOUBLE", "r REAL", "m DECIMAL(10, 2)", "s VARCHAR",
           "dt DATE", "ts TIMESTAMP", "f BOOLEAN", "big DECIMAL(38, 0)"]
SCHEMA = ", ".join(COLUMNS)

ROWS = [
    (1, 2, 3.5, 1.25, decimal.Decimal("1.005"), "a", datetime.date(2024, 2, 29),
     datetime.datetime(2024, 1, 1, 12, 30, 0, 123456), True, 10**30),
    (None, None, None, None, None, None, None, None, None, None),
    (-(2**31), -(2**63), float("inf"), -0.0, decimal.Decimal("-99999999.99"), "ünï ☃ '; --",
     "2024-03-01", "2024-03-01 01:02:03", False, -(10**37)),
    (7, 3, 1, 2, 3, "", datetime.date(1, 1, 1), datetime.datetime(9999, 12, 31), False, 5),
    (2.0, 2**53 + 1, float("nan"), 1e-50, 1.5, "x" * 1000, None, None, True, 2**63),
    ("12", "34", "5.5", "6", "7.25", 42, "1999-12-31", None, "true", "123"),
]


def _same(a: pa.Table, b: pa.Table) -> bool:
    """Same schema and the same values in the same order (NaN equal to NaN, -0.0 apart from
    0.0: compared by repr)."""
    return a.schema == b.schema and repr(a.to_pylist()) == repr(b.to_pylist())


def _both(rows, sql="INSERT INTO {t} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", schema=SCHEMA):
    """(table after executemany, table after one execute per row, rowcount); errors as
    ('error', type, message) for each."""
    con = pqe.connect()
    cur = con.cursor()
    cur.execute(f"CREATE TABLE many ({schema})")
    cur.execute(f"CREATE TABLE each ({schema})")
    try:
        cur.executemany(sql.format(t="many"), rows)
        many = (con._ctx.sql("SELECT * FROM many").to_arrow(), cur.rowcount)
    except pqe.Error as e:
        many = ("error", type(e), con._ctx.sql("SELECT count(*) AS n FROM many").to_pylist())
    try:
        total = 0
        for r in rows:
            cur.execute(sql.format(t="each"), r)
            total += cur.rowcount
        each = (con._ctx.sql("SELECT * FROM each").to_arrow(), total)
    except pqe.Error as e:
        each = ("error", type(e), None)
    return many, each


def test_a_batch_inserts_exactly_what_one_insert_per_row_does():
    many, each = _both(ROWS)
    assert many[1] == each[1] == len(ROWS)
    assert _same(many[0], each[0])
    assert many[0].num_rows == len(ROWS)


@pytest.mark.parametrize("column", range(10))
def test_each_column_alone_with_mixed_python_types(column):
    rows = [(r[column],) for r in ROWS]
    name = COLUMNS[column]
    many, each = _both(rows, "INSERT INTO {t} VALUES (?)", name)
    assert _same(many[0], each[0]), (many, each)


def test_expressions_around_parameters_and_a_column_list():
    sql = "INSERT INTO {t} (s, i) VALUES (upper(?) || '!', ? * 2 + 1)"
    many, each = _both([("a", 1), ("b", None), (None, 20)], sql, "i INTEGER, s VARCHAR, d DOUBLE")
    assert _same(many[0], each[0])
    assert sorted(many[0].to_pylist(), key=str) == sorted(
        [{"i": 3, "s": "A!", "d": None}, {"i": None, "s": "B!", "d": None},
         {"i": 41, "s": None, "d": None}], key=str)


def test_a_value_that_does_not_fit_fails_the_batch_and_inserts_none_of_it():
    many, each = _both([(1,), (2,), (2**40,), (4,)], "INSERT INTO {t} VALUES (?)", "i INTEGER")
    assert many[0] == "error" and each[0] == "error"
    assert many[1] is each[1]
    assert many[2] == [{"n": 0}]  # nothing of the failed statement stays


def test_rows_of_the_wrong_length_are_refused():
    con = pqe.connect()
    cur = con.cursor()
    cur.execute("CREATE TABLE t (a INTEGER, b INTEGER)")
    with pytest.raises(pqe.Error, match="2 parameters, 1 given"):
        cur.executemany("INSERT INTO t VALUES (?, ?)", [(1, 2), (3,)])
    with pytest.raises(pqe.Error, match="cannot stand for a name"):
        cur.executemany("INSERT INTO t (?) VALUES (?)", [("a", 1)])
    with pytest.raises(pqe.Error):  # a mapping is not a row of positional parameters
        cur.executemany("INSERT INTO t VALUES (?, ?)", [{"a": 1, "b": 2}])
    cur.execute("SELECT count(*) FROM t")
    assert cur.fetchall() == [(0,)]


def test_a_generator_of_rows_and_an_empty_one():
    con = pqe.connect()
    cur = con.cursor()
    cur.execute("CREATE TABLE t (a INTEGER, b VARCHAR)")
    cur.executemany("INSERT INTO t VALUES (?, ?)", ((i, str(i)) for i in range(12_345)))
    assert cur.rowcount == 12_345  # (three statements: chunks of dbapi._INSERT_CHUNK)
    cur.execute("SELECT count(*), sum(a), count(DISTINCT b) FROM t")
    assert cur.fetchall() == [(12_345, 12_345 * 12_344 // 2, 12_345)]
    cur.executemany("INSERT INTO t VALUES (?, ?)", iter([]))
    assert cur.rowcount == 0


def test_on_conflict_keeps_one_statement_per_row():
    """An upsert's rows apply in order (the second row for a key updates the first's), as
    one INSERT per row does: such statements are never batched."""
    con = pqe.connect()
    cur = con.cursor()
    cur.execute("CREATE TABLE k (id INTEGER PRIMARY KEY, v VARCHAR)")
    cur.executemany("INSERT INTO k VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET v = excluded.v",
                    [(1, "a"), (1, "b"), (2, "c"), (1, "d")])
    cur.execute("SELECT * FROM k ORDER BY id")
    assert cur.fetchall() == [(1, "d"), (2, "c")]
    cur.executemany("INSERT OR REPLACE INTO k VALUES (?, ?)", [(2, "x"), (2, "y")])
    cur.execute("SELECT * FROM k ORDER BY id")
    assert cur.fetchall() == [(1, "d"), (2, "y")]


def test_a_duplicate_key_in_the_batch_is_refused_whole():
    con = pqe.connect()
    cur = con.cursor()
    cur.execute("CREATE TABLE k (id INTEGER PRIMARY KEY)")
    with pytest.raises(pqe.IntegrityError if hasattr(pqe, "IntegrityError") else pqe.Error):
        cur.executemany("INSERT INTO k VALUES (?)", [(1,), (2,), (1,)])
    cur.execute("SELECT count(*) FROM k")
    assert cur.fetchall() == [(0,)]


def test_two_threads_lose_no_rows():
    con = pqe.connect()
    con.cursor().execute("CREATE TABLE m (a INTEGER, who VARCHAR)")

    def work(k):
        con.cursor().executemany("INSERT INTO m VALUES (?, ?)",
                                 [(k * 100_000 + i, f"t{k}") for i in range(3_000)])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    cur = con.cursor()
    cur.execute("SELECT who, count(DISTINCT a) FROM m GROUP BY who ORDER BY who")
    assert cur.fetchall() == [(f"t{k}", 3_000) for k in range(4)]


def test_many_rows_take_a_fraction_of_a_millisecond_each():
    con = pqe.connect()
    cur = con.cursor()
    cur.execute("CREATE TABLE t (a INTEGER, b VARCHAR, c DOUBLE)")
    rows = [(i, f"s{i}", i * 0.5) for i in range(10_000)]
    start = time.perf_counter()
    cur.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    per_row = (time.perf_counter() - start) / len(rows)
    assert per_row < 0.0008, f"{per_row * 1000:.2f} ms a row"  # (one statement a row: ~1.8)
    assert dbapi._INSERT_CHUNK < len(rows)
