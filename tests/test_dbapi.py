"""PEP 249 surface."""

from __future__ import annotations

import datetime
import decimal

import pytest

import pqe


@pytest.fixture
def conn():
    c = pqe.connect(partitions=2)
    yield c
    c.close()


def test_module_globals():
    assert pqe.apilevel == "2.0"
    assert pqe.paramstyle == "qmark"
    assert pqe.threadsafety in (1, 2, 3)
    for name in ("Warning", "Error", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
                 "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError"):
        assert hasattr(pqe, name)
    for sub in (pqe.InterfaceError, pqe.DatabaseError, pqe.ProgrammingError, pqe.OperationalError,
                pqe.NotSupportedError, pqe.InternalError, pqe.DataError, pqe.IntegrityError):
        assert issubclass(sub, pqe.Error)
    assert issubclass(pqe.SQLSyntaxError, pqe.ProgrammingError)
    assert issubclass(pqe.ExecutionError, pqe.OperationalError)


def test_execute_fetch_description(conn):
    cur = conn.cursor()
    cur.execute("create table t(a integer, s varchar, d date, p decimal(10, 2))")
    cur.executemany("insert into t values (?, ?, ?, ?)", [
        (1, "one", datetime.date(2020, 1, 2), decimal.Decimal("1.25")),
        (2, None, None, None),
        (3, "three", datetime.date(2021, 5, 6), decimal.Decimal("-3.50")),
    ])
    assert cur.rowcount == 3
    cur.execute("select a, s, d, p from t where a >= ? order by a", (2,))
    assert [d[0] for d in cur.description] == ["a", "s", "d", "p"]
    assert cur.description[0][1] == "INTEGER" and cur.description[3][1] == pqe.dbapi.NUMBER
    assert cur.rowcount == 2
    assert cur.fetchone() == (2, None, None, None)
    assert cur.fetchmany(5) == [(3, "three", datetime.date(2021, 5, 6), decimal.Decimal("-3.50"))]
    assert cur.fetchone() is None
    cur.execute("select a from t order by a")
    assert cur.fetchall() == [(1,), (2,), (3,)]
    cur.execute("select count(*) from t")
    assert cur.fetch_arrow_table().num_rows == 1


def test_parameters_are_data_never_sql(conn):
    cur = conn.cursor()
    cur.execute("create table x(s varchar)")
    evil = "'; DROP TABLE x; --"
    cur.execute("insert into x values (?)", (evil,))
    cur.execute("insert into x values (?)", ("it's",))
    cur.execute("select s from x where s = ?", (evil,))
    assert cur.fetchall() == [(evil,)]
    cur.execute("select count(*) from x")
    assert cur.fetchone() == (2,)  # the table still exists


def test_parameter_count_and_types(conn):
    cur = conn.cursor()
    with pytest.raises(pqe.ProgrammingError, match="2 parameters, 1 given"):
        cur.execute("select ? + ?", (1,))
    with pytest.raises(pqe.ProgrammingError):
        cur.execute("select ?", (object(),))
    cur.execute("select ? as f, ? as b, ? as n", (1.5, True, None))
    assert cur.fetchone() == (1.5, True, None)


def test_errors_and_close(conn):
    cur = conn.cursor()
    with pytest.raises(pqe.ProgrammingError):
        cur.execute("selec 1")
    with pytest.raises(pqe.ProgrammingError):
        cur.execute("select * from missing_table")
    cur.close()
    with pytest.raises(pqe.InterfaceError):
        cur.execute("select 1")
    conn.close()
    with pytest.raises(pqe.InterfaceError):
        conn.cursor()


def test_wraps_existing_context():
    ctx = pqe.Context()
    ctx.sql("create table k as select 42 as v")
    c = pqe.connect(context=ctx)
    assert c.cursor().execute("select v from k").fetchone() == (42,)
    c.close()
    assert ctx.sql("select v from k").to_pylist() == [{"v": 42}]  # caller's context stays open
