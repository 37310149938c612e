"""TRUNCATE [TABLE] t deletes every row of a table created in SQL, as DELETE FROM t does
(it was refused). It is a write: it runs under the session's write lock, so it never
interleaves with another thread's INSERT. PostgreSQL's several tables, RESTART IDENTITY,
CASCADE and IF EXISTS are refused by name."""

from __future__ import annotations

import threading

import pyarrow as pa
import pytest

import pqe
from pqe.sql import is_write, parse_statements


def _ctx():
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE t (a INTEGER, s VARCHAR)")
    ctx.sql("INSERT INTO t VALUES (1, 'x'), (2, NULL), (3, 'z')")
    return ctx


@pytest.mark.parametrize("sql", ["TRUNCATE t", "TRUNCATE TABLE t", "truncate table T"])
def test_truncate_deletes_every_row_and_keeps_the_table(sql):
    ctx = _ctx()
    assert ctx.sql(sql).to_pylist() == [{"count": 3}]
    assert ctx.sql("SELECT count(*) AS n FROM t").to_pylist() == [{"n": 0}]
    ctx.sql("INSERT INTO t VALUES (7, 'q')")
    assert ctx.sql("SELECT * FROM t").to_pylist() == [{"a": 7, "s": "q"}]


def test_truncate_through_the_dbapi_counts_rows():
    con = pqe.connect()
    cur = con.cursor()
    cur.execute("CREATE TABLE x (a INTEGER)")
    cur.execute("INSERT INTO x VALUES (1), (2)")
    cur.execute("TRUNCATE x")
    assert cur.rowcount == 2
    cur.execute("SELECT count(*) FROM x")
    assert cur.fetchall() == [(0,)]


def test_truncate_is_a_write():
    (stmt,) = parse_statements("TRUNCATE t")
    assert is_write(stmt.ast)


def test_truncate_never_splits_a_concurrent_insert():
    """Inserts of two rows each race truncates: every count seen, and the last, is even (a
    truncate between a statement's two rows would leave one), and nothing fails."""
    ctx = _ctx()
    ctx.sql("TRUNCATE t")
    errors, counts = [], []

    def insert(i):
        try:
            ctx.sql(f"INSERT INTO t VALUES ({i}, 'r'), ({i}, 's')")
            counts.append(ctx.sql("SELECT count(*) AS n FROM t").to_pylist()[0]["n"])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def truncate():
        try:
            for _ in range(5):
                ctx.sql("TRUNCATE t")
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=insert, args=(i,)) for i in range(30)]
    threads[10:10] = [threading.Thread(target=truncate)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    final = ctx.sql("SELECT count(*) AS n, count(DISTINCT a) AS k FROM t").to_pylist()[0]
    assert final["n"] == 2 * final["k"] and final["n"] <= 60
    assert all(c % 2 == 0 for c in counts)


@pytest.mark.parametrize("sql, match", [
    ("TRUNCATE t, t", "several tables"),
    ("TRUNCATE TABLE t RESTART IDENTITY", "TRUNCATE"),
    ("TRUNCATE t CASCADE", "TRUNCATE"),
    ("TRUNCATE TABLE IF EXISTS t", "TRUNCATE"),
])
def test_other_forms_are_refused_and_change_nothing(sql, match):
    ctx = _ctx()
    with pytest.raises(pqe.UnsupportedError, match=match):
        ctx.sql(sql)
    assert ctx.sql("SELECT count(*) AS n FROM t").to_pylist() == [{"n": 3}]


def test_registered_and_unknown_tables_are_errors():
    ctx = _ctx()
    ctx.register_arrow("r", pa.table({"a": [1]}))
    with pytest.raises(pqe.UnsupportedError, match="registered"):
        ctx.sql("TRUNCATE r")
    assert ctx.sql("SELECT count(*) AS n FROM r").to_pylist() == [{"n": 1}]
    with pytest.raises(pqe.UnknownTableError):
        ctx.sql("TRUNCATE nosuch")


def test_read_only_session_refuses_truncate():
    ctx = pqe.Context(read_only=True)
    ctx.register_arrow("t", pa.table({"a": [1]}))
    with pytest.raises(pqe.AccessError, match="read-only"):
        ctx.sql("TRUNCATE t")
