"""DB-API statements and parameter values. executemany() of SQL holding several statements ran every statement for each row and
reported the last one's count (4 rows written, rowcount 2); it is refused before any row
runs, as sqlite3 refuses it. One statement with a trailing semicolon still runs."""
import pytest

import pqe


@pytest.fixture
def cur():
    c = pqe.connect().cursor()
    c.execute("create table a (x integer)")
    c.execute("create table b (x integer)")
    return c


def _count(cur, table):
    cur.execute(f"select count(*) from {table}")
    return cur.fetchall()[0][0]


@pytest.mark.parametrize("sql", [
    "insert into a values (?); insert into b values (?)",
    "update a set x = ? where x = 0; delete from b where x = ?",
    "insert into a values (?); select ?",
])
def test_several_statements_are_refused_before_any_row(cur, sql):
    with pytest.raises(pqe.ProgrammingError, match="one statement per parameter row"):
        cur.executemany(sql, [(1, 1), (2, 2)])
    assert _count(cur, "a") == 0 and _count(cur, "b") == 0


def test_one_statement_with_a_semicolon_runs(cur):
    cur.executemany("insert into a values (?);", [(1,), (2,), (3,)])
    assert cur.rowcount == 3 and _count(cur, "a") == 3
    cur.executemany("update a set x = x + ? where x = 1;", [(10,)])
    assert cur.rowcount == 1


@pytest.mark.parametrize("value, match", [
    (__import__("decimal").Decimal("NaN"), "is not a finite DECIMAL"),
    (__import__("decimal").Decimal("Infinity"), "is not a finite DECIMAL"),
    (__import__("decimal").Decimal("1" * 39), "more than 38 digits"),
    (10 ** 40, "does not fit DECIMAL"),
])
def test_parameter_values_no_type_holds_are_type_errors(cur, value, match):
    """They were SQLSyntaxError ("syntax error: parameter NaN ..."), though the SQL parsed;
    pqe.lit() of the same value is a TypeMismatchError."""
    with pytest.raises(pqe.TypeMismatchError, match=match):
        cur.execute("select ? as v", (value,))
