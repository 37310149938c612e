"""Grouping sets, set operations, join forms, DDL/DML, table functions: against DuckDB where it
has the same semantics, by hand otherwise."""

from __future__ import annotations

import pyarrow as pa
import pytest

from helpers import assert_same

import pqe
from pqe.testing import oracle

T = pa.table({"a": [1, 1, 2, 2, None, 3], "b": ["x", "y", "x", None, "x", "y"],
              "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
U = pa.table({"a": [1, 1, 1, 2, None, 7], "b": ["x", "x", "x", None, "x", "q"],
              "x": [9.0, 9.0, 9.0, 9.0, 9.0, 9.0]})

QUERIES = [
    "select a, b, sum(x), grouping(a), grouping(a, b) from t group by rollup (a, b)",
    "select a, b, count(*) from t group by cube (a, b)",
    "select a, b, sum(x) from t group by grouping sets ((a, b), (a), ())",
    "select a, b, sum(x) from t group by b, rollup (a)",
    "select a, b, count(distinct x) from t group by rollup (a, b)",
    "select a, b from t intersect select a, b from u",
    "select a, b from t intersect all select a, b from u",
    "select a, b from u except select a, b from t",
    "select a, b from u except all select a, b from t",
    "select a from t union select a from u order by a",
    "select * from t join u using (a)",
    "select * from t natural join u",
    "select a, count(*) from t join u using (a, b) group by a",
    "select * from t left join u using (a, b)",
    "select * from (values (1, 'a'), (2, null)) as v(n, s)",
    "with recursive r(n) as (select 1 union all select n + 1 from r where n < 50) select sum(n), count(*) from r",
    "with recursive r(n) as (select 1 union select n % 7 + 1 from r) select n from r order by n",
    "with recursive fib(a, b) as (select 0::bigint, 1::bigint union all select b, a + b from fib where b < 1000) "
    "select a from fib",
    "with recursive walk(a, depth) as (select a, 0 from t where a = 1 union all "
    "select u.a + 1, depth + 1 from walk join u on walk.a = u.a where depth < 3) select * from walk",
]


@pytest.fixture(scope="module")
def fduck():
    con = oracle.connect({"t": T, "u": U})
    yield con
    con.close()


@pytest.fixture(scope="module", params=[("threads", 3), ("sync", 1)], ids=["threads-3p", "sync-1p"])
def fctx(request):
    scheduler, partitions = request.param
    ctx = pqe.Context(scheduler=scheduler, partitions=partitions)
    ctx.register_arrow("t", T)
    ctx.register_arrow("u", U)
    yield ctx
    ctx.close()


@pytest.mark.parametrize("sql", QUERIES)
def test_matches_duckdb(fctx, fduck, sql):
    assert_same(fctx.sql(sql).to_arrow(), oracle.query(fduck, sql), sql=sql)


def rows(ctx, sql):
    return ctx.sql(sql).to_arrow().to_pylist()


def test_create_insert_update_delete(ctx):
    ctx.sql("CREATE TABLE items(id INTEGER NOT NULL, name VARCHAR, price DECIMAL(8,2))")
    assert rows(ctx, "INSERT INTO items(name, id) VALUES ('a', 1), ('b', 2)") == [{"count": 2}]
    ctx.sql("INSERT INTO items VALUES (3, 'c', 9.99)")
    ctx.sql("INSERT INTO items SELECT id + 10, upper(name), price FROM items WHERE id < 3")
    assert rows(ctx, "SELECT count(*) AS n FROM items") == [{"n": 5}]
    assert rows(ctx, "UPDATE items SET price = 1.5 WHERE price IS NULL AND id < 10") == [{"count": 2}]
    assert rows(ctx, "DELETE FROM items WHERE id > 10") == [{"count": 2}]
    got = rows(ctx, "SELECT id, name, price FROM items ORDER BY id")
    assert [(r["id"], r["name"], str(r["price"])) for r in got] == [
        (1, "a", "1.50"), (2, "b", "1.50"), (3, "c", "9.99")]
    with pytest.raises(pqe.ConstraintError, match="NOT NULL"):
        ctx.sql("INSERT INTO items(name) VALUES ('no id')")
    with pytest.raises(pqe.CatalogError, match="already exists"):
        ctx.sql("CREATE TABLE items(x INT)")


def test_identifier_case(ctx):
    ctx.sql('CREATE TABLE Mixed(Abc INTEGER, "Quoted" INTEGER)')
    ctx.sql("INSERT INTO MIXED VALUES (1, 2)")
    assert rows(ctx, 'SELECT abc, ABC AS u, "Quoted" FROM mixed') == [{"abc": 1, "u": 1, "Quoted": 2}]
    with pytest.raises(pqe.UnknownColumnError):
        ctx.sql('SELECT "quoted" FROM mixed')


def test_ctas_view_drop_show_describe(ctx):
    ctx.sql("CREATE TABLE base AS SELECT * FROM (VALUES (1, 'x'), (2, 'y')) v(k, s)")
    ctx.sql("CREATE VIEW vv (kk) AS SELECT k * 10 FROM base")
    assert rows(ctx, "SELECT kk FROM vv ORDER BY kk") == [{"kk": 10}, {"kk": 20}]
    ctx.sql("CREATE OR REPLACE VIEW vv AS SELECT s FROM base WHERE k = 2")
    assert rows(ctx, "SELECT * FROM vv") == [{"s": "y"}]
    assert {r["name"] for r in rows(ctx, "SHOW TABLES")} == {"base", "vv"}
    assert rows(ctx, "DESCRIBE base") == [
        {"column_name": "k", "column_type": "INTEGER", "null": "YES"},
        {"column_name": "s", "column_type": "VARCHAR", "null": "YES"}]
    ctx.sql("DROP VIEW vv")
    ctx.sql("DROP TABLE IF EXISTS nothing_here")
    with pytest.raises(pqe.CatalogError):
        ctx.sql("DROP TABLE vv")


def test_copy_and_table_functions(ctx, tmp_path):
    ctx.sql("CREATE TABLE src AS SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, NULL)) v(n, s)")
    pq_path = tmp_path / "out.parquet"
    csv_path = tmp_path / "out.csv"
    assert rows(ctx, f"COPY (SELECT * FROM src WHERE n > 1) TO '{pq_path}' (FORMAT parquet)") == [{"count": 2}]
    assert rows(ctx, f"COPY src TO '{csv_path}' (FORMAT csv, HEADER)") == [{"count": 3}]
    assert rows(ctx, f"SELECT sum(n) AS s FROM '{pq_path}'") == [{"s": 5}]
    assert rows(ctx, f"SELECT count(*) AS c FROM read_parquet('{tmp_path}/*.parquet')") == [{"c": 2}]
    assert rows(ctx, f"SELECT n, s FROM read_csv('{csv_path}') ORDER BY n") == [
        {"n": 1, "s": "a"}, {"n": 2, "s": "b"}, {"n": 3, "s": None}]
    ctx.register_csv("people", str(csv_path), schema={"n": "DECIMAL(10,2)"})
    assert ctx.table("people").schema.field("n").type == pa.decimal128(10, 2)
