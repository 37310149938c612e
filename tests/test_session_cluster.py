"""The session layer's guarantees on a LocalCluster (worker processes): writes that run
queries on the cluster stay atomic and serialized, recursive CTEs stop on timeout/cancel,
constraints hold, EXPLAIN never executes."""

from __future__ import annotations

import threading
import time

import pytest

import pqe


@pytest.fixture(scope="module")
def cctx():
    ctx = pqe.Context(workers=2, memory_limit="1GiB")
    yield ctx
    ctx.close()


def test_endless_recursive_cte_times_out_on_a_cluster(cctx):
    df = cctx.sql("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
                  "SELECT count(*) FROM r")
    start = time.monotonic()
    with pytest.raises(pqe.QueryTimeout):
        df.to_arrow(timeout=2)
    assert time.monotonic() - start < 4
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    with pytest.raises(pqe.QueryCancelled):
        cctx.sql("WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n + 1 FROM r) SELECT max(n) "
                 "FROM r").to_arrow(cancel=cancel)
    got = cctx.sql("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) "
                   "SELECT sum(n) AS s FROM r").to_pylist()
    assert got == [{"s": 55}]


def test_concurrent_writes_that_run_on_the_cluster(cctx):
    cctx.sql("CREATE TABLE cw(k INT, v BIGINT)")
    cctx.sql("CREATE TABLE src AS SELECT * FROM (VALUES (1), (2), (3)) t(x)")

    def work(k):
        for i in range(15):
            # INSERT ... SELECT and UPDATE run their query on the workers
            cctx.sql("INSERT INTO cw SELECT ?, x FROM src", [k])
            cctx.sql("UPDATE cw SET v = v + 1 WHERE k = ?", [k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    rows = cctx.sql("SELECT k, count(*) AS n, sum(v) AS s FROM cw GROUP BY k ORDER BY k").to_pylist()
    # each thread: 15 inserts of 3 rows; after insert i (0-based) the thread's rows are
    # incremented 15 - i times in total
    expected_sum = sum((1 + 2 + 3) + 3 * (15 - i) for i in range(15))
    assert rows == [{"k": k, "n": 45, "s": expected_sum} for k in range(3)]


def test_constraints_and_explain_on_a_cluster(cctx, tmp_path):
    cctx.sql("CREATE TABLE pk(id INT PRIMARY KEY, v INT)")
    cctx.sql("INSERT INTO pk SELECT x, x * 10 FROM (VALUES (1), (2)) t(x)")
    cctx.sql("INSERT INTO pk SELECT x, 0 FROM (VALUES (2), (3)) t(x) "
             "ON CONFLICT (id) DO UPDATE SET v = pk.v + excluded.v + 1")
    assert cctx.sql("SELECT * FROM pk ORDER BY id").to_pylist() == [
        {"id": 1, "v": 10}, {"id": 2, "v": 21}, {"id": 3, "v": 0}]
    with pytest.raises(pqe.ConstraintError):
        cctx.sql("INSERT INTO pk SELECT 1, 1")
    out = tmp_path / "x.parquet"
    cctx.sql(f"EXPLAIN COPY pk TO '{out}' (FORMAT parquet)")
    cctx.sql("EXPLAIN DELETE FROM pk")
    assert not out.exists()
    assert cctx.sql("SELECT count(*) AS n FROM pk").to_pylist() == [{"n": 3}]
