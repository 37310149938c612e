"""The deep threads that parse, bind, optimize, plan and lower statements (pqe.deep) are
reused: a statement does not start four large-stack threads any more, they stay bounded under
concurrent use, and a forked child process (which has none of its parent's threads) still
runs statements instead of handing them to a thread that does not exist there."""

from __future__ import annotations

import multiprocessing
import threading

import pyarrow as pa
import pytest

import pqe
from pqe import deep


def _deep_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("pqe-deep-")]


def test_statements_reuse_the_deep_threads():
    ctx = pqe.Context("threads", threads=2)
    ctx.sql("CREATE TABLE d (a INTEGER)")
    ctx.sql("INSERT INTO d VALUES (1), (2), (3)")
    ctx.sql("SELECT sum(a) FROM d").to_arrow()
    before = {t.ident for t in _deep_threads()}
    for i in range(50):
        assert ctx.sql(f"SELECT sum(a) + {i} AS s FROM d").to_pylist() == [{"s": 6 + i}]
    after = _deep_threads()
    assert len(after) <= deep.MAX_IDLE + 1
    assert {t.ident for t in after} == before  # no new deep thread for 50 statements
    ctx.close()


def test_concurrent_statements_get_their_own_deep_thread_and_the_pool_stays_bounded():
    ctx = pqe.Context("threads", threads=2)
    ctx.register_arrow("c", pa.table({"a": pa.array(range(1000), pa.int64())}))
    errors: list = []
    results: list = []

    def worker(k: int) -> None:
        try:
            for i in range(10):
                results.append(ctx.sql(f"SELECT count(*) + {k * 100 + i} AS n FROM c "
                                       "WHERE a % 7 = 3").to_pylist()[0]["n"])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(results) == sorted(143 + k * 100 + i for k in range(8) for i in range(10))
    assert len(deep._idle) <= deep.MAX_IDLE
    ctx.close()


def test_a_deep_statement_still_fails_cleanly_on_a_reused_thread():
    ctx = pqe.Context("threads")
    ctx.sql("SELECT 1").to_arrow()
    with pytest.raises(pqe.Error, match="nested too deeply"):
        ctx.sql("SELECT " + "(" * 100_000 + "1" + ")" * 100_000).to_arrow()
    assert ctx.sql("SELECT 2 AS x").to_pylist() == [{"x": 2}]  # the pool still works
    ctx.close()


def _child(conn) -> None:
    try:
        c = pqe.Context("threads")
        conn.send(c.sql("SELECT 40 + 2 AS x").to_pylist())
        c.close()
    except BaseException as e:  # noqa: BLE001
        conn.send(repr(e))
    conn.close()


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="the platform cannot fork")
def test_a_forked_child_runs_statements():
    ctx = pqe.Context("threads")
    assert ctx.sql("SELECT 1 AS x").to_pylist() == [{"x": 1}]  # the parent has an idle worker
    assert deep._idle
    mp = multiprocessing.get_context("fork")
    parent, child = mp.Pipe()
    p = mp.Process(target=_child, args=(child,))
    p.start()
    assert parent.poll(60), "the forked child did not answer (a statement handed to a thread " \
                            "that does not exist in the child hangs)"
    assert parent.recv() == [{"x": 42}]
    p.join(10)
    ctx.close()


def test_planning_collects_garbage_less_often_and_gives_the_threshold_back():
    """While a statement is planned, a young collection waits for PLAN_GC_THRESHOLD
    allocations instead of Python's 700; the caller's thresholds come back when the last
    concurrent statement is done (before run_deep returns), whatever they were (a process's
    own setting, kept exactly). The query's tasks run with the process's own setting."""
    import gc

    saved = gc.get_threshold()
    try:
        gc.set_threshold(500, 7, 9)
        seen = []
        assert deep.run_deep(gc.get_threshold) == (deep.PLAN_GC_THRESHOLD, 7, 9)
        assert gc.get_threshold() == (500, 7, 9)

        ctx = pqe.Context("threads", threads=2)
        ctx.register_arrow("g", pa.table({"a": pa.array(range(100), pa.int64())}))
        gate = threading.Barrier(4)

        def plan_with_others():
            def inside():
                gate.wait(timeout=30)  # all four statements are planning at once
                seen.append(gc.get_threshold())
                return ctx.sql("SELECT sum(a) AS s FROM g").to_pylist()
            seen.append(deep.run_deep(inside))

        workers = [threading.Thread(target=plan_with_others) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(60)
        assert seen.count([{"s": 4950}]) == 4
        assert [t for t in seen if isinstance(t, tuple)] == [(deep.PLAN_GC_THRESHOLD, 7, 9)] * 4
        assert gc.get_threshold() == (500, 7, 9)
        ctx.close()

        # a query's tasks run with the process's own setting (only planning raises it)
        during = []

        def probe(a):
            during.append(gc.get_threshold())
            return a

        ctx = pqe.Context("threads", threads=2)
        ctx.register_arrow("g", pa.table({"a": pa.array(range(100), pa.int64())}))
        ctx.register_udf("probe", probe, ["BIGINT"], "BIGINT")
        assert ctx.sql("SELECT sum(probe(a)) AS s FROM g").to_pylist() == [{"s": 4950}]
        assert during and set(during) == {(500, 7, 9)}
        ctx.close()

        gc.set_threshold(50_000, 3, 3)  # a process that already collects less often: kept
        assert deep.run_deep(gc.get_threshold) == (50_000, 3, 3)
        assert gc.get_threshold() == (50_000, 3, 3)
    finally:
        gc.set_threshold(*saved)
