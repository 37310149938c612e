"""The session layer: one pipeline for every statement, EXPLAIN that never executes, typed
results for DDL/DML, parameters bound in textual order, and recursive CTEs run by the executor
(so timeouts and cancellation apply to them)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe
from pqe.plan import statements as S


@pytest.fixture
def ctx():
    c = pqe.Context()
    c.sql("CREATE TABLE t(a INTEGER, b VARCHAR)")
    c.sql("INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, NULL)")
    yield c
    c.close()


def _rows(ctx, sql, params=None):
    return ctx.sql(sql, params).to_arrow().to_pylist()


# ---- EXPLAIN never executes --------------------------------------------------------------------


EXPLAINED_WRITES = [
    "DELETE FROM t",
    "DELETE FROM t WHERE a > 1",
    "UPDATE t SET a = a + 100",
    "INSERT INTO t VALUES (9, 'z')",
    "INSERT INTO t SELECT a + 10, b FROM t",
    "DROP TABLE t",
    "CREATE TABLE u AS SELECT * FROM t",
    "CREATE TABLE v(x INTEGER)",
    "CREATE VIEW w AS SELECT a FROM t",
]


@pytest.mark.parametrize("stmt", EXPLAINED_WRITES)
def test_explain_of_a_write_changes_nothing(ctx, stmt):
    before = ctx.tables(), _rows(ctx, "SELECT * FROM t ORDER BY a")
    text = "\n".join(r["plan"] for r in _rows(ctx, "EXPLAIN " + stmt))
    assert "== Statement ==" in text
    assert (ctx.tables(), _rows(ctx, "SELECT * FROM t ORDER BY a")) == before


def test_explain_of_copy_writes_no_file(ctx, tmp_path):
    target = tmp_path / "out.parquet"
    text = "\n".join(r["plan"] for r in _rows(ctx, f"EXPLAIN COPY t TO '{target}' (FORMAT parquet)"))
    assert "Copy: TO" in text and "MemoryScan: t" in text
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_explain_analyze_runs_queries_and_refuses_writes(ctx):
    text = "\n".join(r["plan"] for r in _rows(ctx, "EXPLAIN ANALYZE SELECT count(*) FROM t"))
    assert "== Execution ==" in text and "rows=1" in text
    for stmt in ("DELETE FROM t", "INSERT INTO t VALUES (5, 'q')", "DROP TABLE t"):
        with pytest.raises(pqe.UnsupportedError, match="EXPLAIN ANALYZE .* queries only"):
            ctx.sql("EXPLAIN ANALYZE " + stmt)
    assert _rows(ctx, "SELECT count(*) AS n FROM t") == [{"n": 3}]
    assert ctx.tables() == ["t"]


def test_explain_error_positions_are_those_of_the_text(ctx):
    with pytest.raises(pqe.UnknownColumnError) as e:
        ctx.sql("EXPLAIN\nSELECT nope FROM t")
    assert (e.value.line, e.value.column) == (2, 8)


def test_explain_through_dbapi_shell_and_dataframe(ctx, tmp_path):
    conn = pqe.connect(context=ctx)
    cur = conn.cursor()
    cur.execute("EXPLAIN SELECT 1")
    assert cur.description[0][0] == "plan"
    assert any("Physical Plan" in r[0] for r in cur.fetchall())
    cur.execute("EXPLAIN DELETE FROM t")
    assert any(r[0] == "Delete: t" for r in cur.fetchall())
    assert _rows(ctx, "SELECT count(*) AS n FROM t") == [{"n": 3}]
    assert "== Physical Plan ==" in ctx.sql("SELECT a FROM t").explain()
    # the shell, as a user runs it
    data = tmp_path / "d.parquet"
    pq.write_table(pa.table({"k": [1, 2, 3]}), data)
    out = subprocess.run([sys.executable, "-m", "pqe.shell", str(data), "-c",
                          "EXPLAIN DELETE FROM d; SELECT count(*) AS n FROM d"],
                         capture_output=True, text=True, timeout=120)
    assert "only tables created in SQL can be changed" in out.stderr  # DELETE on a file table
    out = subprocess.run([sys.executable, "-m", "pqe.shell", "-c",
                          "CREATE TABLE z(k INT); INSERT INTO z VALUES (1), (2); "
                          "EXPLAIN DELETE FROM z; SELECT count(*) AS n FROM z",
                          "--mode", "csv"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Delete: z" in out.stdout and out.stdout.rstrip().endswith("n\n2")


# ---- typed results -------------------------------------------------------------------------------


def test_statement_results_are_typed(ctx):
    s = ctx.session
    assert s.sql("INSERT INTO t VALUES (4, 'w'), (5, 'v')").rows_affected == 2
    r = s.sql("UPDATE t SET b = 'u' WHERE a >= 4")
    assert (r.kind, r.rows_affected, r.plan, r.table) == ("UPDATE", 2, None, None)
    assert s.sql("DELETE FROM t WHERE a = 5").rows_affected == 1
    r = s.sql("CREATE TABLE c2 AS SELECT * FROM t")
    assert (r.kind, r.rows_affected) == ("CREATE TABLE", 4)
    r = s.sql("DROP TABLE c2")
    assert (r.kind, r.rows_affected, r.has_rows) == ("DROP TABLE", None, False)
    assert s.sql("SELECT 1").is_query
    parsed = s.parse("DELETE FROM t")
    assert isinstance(s.bind(parsed[0], "DELETE FROM t"), S.Delete)


def test_dbapi_columns_named_count_or_status_are_rows(ctx):
    cur = pqe.connect(context=ctx).cursor()
    cur.execute("SELECT count(*) AS count FROM t")
    assert cur.description[0][0] == "count" and cur.fetchall() == [(3,)]
    cur.execute("SELECT 'x' AS status WHERE false")
    assert cur.description[0][0] == "status" and cur.fetchall() == []
    cur.execute("SELECT 'x' AS status")
    assert cur.fetchall() == [("x",)]
    cur.execute("INSERT INTO t VALUES (7, 'k')")
    assert (cur.description, cur.rowcount) == (None, 1)
    cur.execute("CREATE TABLE e(x INT)")
    assert (cur.description, cur.rowcount) == (None, -1)


# ---- parameters in textual order -----------------------------------------------------------------


def test_parameters_bind_in_the_order_of_the_text():
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE users(name VARCHAR, role VARCHAR)")
    cur = pqe.connect(context=ctx).cursor()
    cur.execute("INSERT INTO users(name, role) VALUES (lower(?), ?)", ("Admin", "viewer"))
    assert _rows(ctx, "SELECT * FROM users") == [{"name": "admin", "role": "viewer"}]
    cur.execute("SELECT (? + 1) * ? AS v", (10, 2))
    assert cur.fetchall() == [(22,)]
    cur.execute("SELECT ? AS a, (SELECT ? + ?) AS b, CASE WHEN ? THEN ? ELSE ? END AS c",
                (1, 2, 3, False, "no", "yes"))
    assert cur.fetchall() == [(1, 5, "yes")]
    cur.execute("SELECT count(*) FROM users WHERE name IN (?, upper(?)) AND ? < ?",
                ("admin", "x", 1, 2))
    assert cur.fetchall() == [(1,)]
    # the same binder through ctx.sql
    assert _rows(ctx, "SELECT ? || ? AS s, ? - ? AS d", ["a", "b", 10, 3]) == [{"s": "ab", "d": 7}]
    with pytest.raises(pqe.ProgrammingError, match="2 parameters, 1 given"):
        ctx.sql("SELECT ? + ?", [1])
    with pytest.raises(pqe.ProgrammingError, match="1 parameters, 0 given"):
        ctx.sql("SELECT ?")


def test_parameter_values_are_data_not_sql():
    ctx = pqe.Context()
    evil = "x'); DROP TABLE users; --"
    assert _rows(ctx, "SELECT ? AS v", [evil]) == [{"v": evil}]
    assert _rows(ctx, "SELECT ? AS v, ? AS w", [2**63 - 1, -2**63]) == [
        {"v": 2**63 - 1, "w": -2**63}]
    import math
    (row,) = _rows(ctx, "SELECT ? AS n, ? AS i", [float("nan"), float("-inf")])
    assert math.isnan(row["n"]) and row["i"] == float("-inf")


# ---- recursive CTEs run in the executor ------------------------------------------------------------


ENDLESS = [
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n + 1 FROM r) SELECT max(n) FROM r",
]


@pytest.mark.parametrize("scheduler", [None, "sync"])
@pytest.mark.parametrize("sql", ENDLESS)
def test_timeout_stops_an_endless_recursive_cte(scheduler, sql):
    ctx = pqe.Context(scheduler)
    df = ctx.sql(sql)  # binding does not run it
    start = time.monotonic()
    with pytest.raises(pqe.QueryTimeout):
        df.to_arrow(timeout=2)
    assert time.monotonic() - start < 3
    assert _rows(ctx, "SELECT 41 + 1 AS x") == [{"x": 42}]
    ctx.close()


@pytest.mark.parametrize("sql", ENDLESS)
def test_cancel_stops_an_endless_recursive_cte(sql):
    ctx = pqe.Context()
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    start = time.monotonic()
    with pytest.raises(pqe.QueryCancelled):
        ctx.sql(sql).to_arrow(cancel=cancel)
    assert time.monotonic() - start < 3
    # the Context stays usable, recursive queries included
    got = _rows(ctx, "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 4) "
                     "SELECT sum(n) AS s FROM r")
    assert got == [{"s": 10}]
    ctx.close()


def test_recursive_cte_is_a_plan_node(ctx):
    sql = ("WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n % 3 + 1 FROM r) "
           "SELECT n FROM r ORDER BY n")
    text = ctx.sql(sql).explain()
    assert "RecursiveQuery: r UNION" in text and "WorkTable: r (delta)" in text
    assert "Recursive[iterate]: r UNION" in text
    assert _rows(ctx, sql) == [{"n": 1}, {"n": 2}, {"n": 3}]
    ea = ctx.sql(sql).explain(analyze=True)
    assert "== Execution ==" in ea and "rows=3" in ea


def test_recursive_cte_over_a_table_and_progress(ctx):
    ctx.sql("CREATE TABLE edges(src INT, dst INT)")
    ctx.sql("INSERT INTO edges VALUES (1, 2), (2, 3), (3, 4), (4, 2), (10, 11)")
    sql = ("WITH RECURSIVE reach(node) AS (SELECT 1 UNION SELECT e.dst FROM reach r "
           "JOIN edges e ON e.src = r.node) SELECT node FROM reach ORDER BY node")
    seen = []
    out = ctx.sql(sql).to_arrow(progress=lambda done, total: seen.append((done, total)))
    assert out.column(0).to_pylist() == [1, 2, 3, 4]
    assert sum(t for _, t in seen) >= sum(d for d, _ in seen) > 0


def test_refused_statements_name_what_the_user_wrote(ctx):
    for stmt, word in [("vacuum", "VACUUM"), ("install x", "INSTALL"),
                       ("checkpoint", "CHECKPOINT"), ("reindex", "REINDEX"),
                       ("create function f(x) as x + 1", "CREATE FUNCTION"),
                       ("create macro m(x) as x + 1", "CREATE MACRO"),
                       ("create or replace macro m(x) as x + 1", "CREATE OR REPLACE MACRO"),
                       ("create schema s", "CREATE SCHEMA"), ("drop macro m", "DROP MACRO"),
                       ("create sequence q", "CREATE SEQUENCE")]:
        with pytest.raises(pqe.UnsupportedError, match=f"^{word} statements are not supported"):
            ctx.sql(stmt)
    for sql in ("select 1::hugeint", "create table h (x hugeint)"):
        with pytest.raises(pqe.UnsupportedError, match="^type HUGEINT is not supported"):
            ctx.sql(sql)


def test_session_is_the_only_path(ctx):
    """The DataFrame and the DB-API use public session methods (no reaching into the
    Context's privates): a DataFrame works with only a session."""
    from pqe.dataframe import DataFrame

    df = DataFrame(ctx.session, ctx.session.table_plan("t"))
    assert df.filter(pqe.col("a") > 1).count() == 2
    assert os.path.basename(pqe.session.__file__) == "__init__.py"
