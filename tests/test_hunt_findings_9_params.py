"""From the eleventh session's session/DB-API hunt: parameters standing as GROUP BY or ORDER
BY items in any position, DECIMAL(37, s) written as text, and row dicts of a result whose
columns share a name."""
from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

import pqe


@pytest.fixture()
def cur():
    con = pqe.connect()
    c = con.cursor()
    c.execute("create table t(a int, b varchar)")
    c.execute("insert into t values (1, 'x'), (2, 'y'), (3, 'x')")
    return c


@pytest.mark.parametrize("sql,what", [
    ("select b, count(*) n from t group by grouping sets ((b), (?))", "GROUP BY"),
    ("select b, count(*) from t group by rollup (b, ?)", "GROUP BY"),
    ("select b, count(*) from t group by cube ((?, b))", "GROUP BY"),
    ("select b from t group by (?)", "GROUP BY"),
    ("select b from t group by grouping sets (?, b)", "GROUP BY"),
    ("select a from t order by (?) desc", "ORDER BY"),
    ("select a from t order by ((?)), a", "ORDER BY"),
])
def test_a_parameter_is_never_a_position(cur, sql, what):
    """Bound to 1, `GROUPING SETS ((b), (?))` grouped by b twice and `ORDER BY (?)` ordered
    by the first column: a parameter is a value, and a value there names a position."""
    with pytest.raises(pqe.UnsupportedError, match=f"parameter as an? {what} item"):
        cur.execute(sql, [1])


@pytest.mark.parametrize("sql,params,want", [
    ("select a from t order by a + ? desc", [1], [(3,), (2,), (1,)]),
    ("select b, count(*) from t group by b having count(*) > ? order by b", [1], [("x", 2)]),
    ("select a, sum(a) over (order by a rows between ? preceding and current row) from t "
     "order by a", [1], [(1, 1), (2, 3), (3, 5)]),
])
def test_parameters_in_expressions_of_those_clauses_still_bind(cur, sql, params, want):
    cur.execute(sql, params)
    assert [tuple(r) for r in cur.fetchall()] == want


@pytest.mark.parametrize("precision,scale", [(37, 2), (37, 1), (37, 36), (36, 2), (38, 2)])
def test_decimal_of_37_digits_as_text(precision, scale):
    """DECIMAL(37, s) to text failed: 'Decimal precision out of range [1, 38]: 39'."""
    q = (f"select cast(cast('-1.5' as decimal({precision},{scale})) as varchar) a, "
         f"cast(cast('0.05' as decimal({precision},{scale})) as varchar) b, "
         f"cast(cast('2.5' as decimal({precision},{scale})) as varchar) || '!' c")
    got = [tuple(r.values()) for r in pqe.Context().sql(q).to_pylist()]
    assert got == duckdb.sql(q).fetchall()


def test_row_dicts_refuse_columns_that_share_a_name():
    """`SELECT t1.id, t2.id` as row dicts kept one value per row: t2's (None for t1's 2)."""
    ctx = pqe.Context()
    ctx.register_arrow("t1", pa.table({"id": [1, 2]}))
    ctx.register_arrow("t2", pa.table({"id": [1, 3]}))
    q = "select t1.id, t2.id from t1 left join t2 on t1.id = t2.id order by 1"
    with pytest.raises(pqe.BindError, match="two columns named 'id'"):
        ctx.sql(q).to_pylist()
    got = ctx.sql(q).to_arrow()
    assert [got.column(0).to_pylist(), got.column(1).to_pylist()] == [[1, 2], [1, None]]
    renamed = ctx.sql("select t1.id, t2.id as id2 from t1 left join t2 on t1.id = t2.id "
                      "order by 1").to_pylist()
    assert renamed == [{"id": 1, "id2": 1}, {"id": 2, "id2": None}]


def test_executemany_refuses_a_query():
    """executemany of a SELECT kept only the last parameters' rows, the others unseen."""
    cur = pqe.connect().cursor()
    cur.execute("create table m(a int)")
    cur.executemany("insert into m values (?)", [(1,), (2,)])
    assert cur.rowcount == 2
    with pytest.raises(pqe.ProgrammingError, match="executemany"):
        cur.executemany("select ? x", [(1,), (2,)])
    assert cur.fetchall() == [] and cur.description is None  # (no rows are left from it)
    cur.execute("select count(*) from m")
    assert cur.fetchall() == [(2,)]
