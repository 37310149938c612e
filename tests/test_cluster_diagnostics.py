"""Seeing into a cluster: EXPLAIN ANALYZE per partition with skew, real progress counts, task
names that say what runs, version checks on connecting, and a LocalCluster that listens on
loopback only."""

from __future__ import annotations

import importlib.metadata
import os
import re
import warnings

import psutil
import pytest

from helpers import assert_same, duck_arrow, register_tpch, tpch_query

import pqe
from pqe.execution import cluster as C
from pqe.execution import driver
from pqe.execution.lower import lower


@pytest.fixture(scope="module")
def lc(tpch_dir):
    """Two workers; four partitions, like `threads4`, so both run the same plans."""
    ctx = register_tpch(pqe.Context(workers=2, memory_limit="1GiB", partitions=4), tpch_dir)
    yield ctx
    ctx.close()


@pytest.fixture(scope="module")
def threads4(tpch_dir):
    ctx = register_tpch(pqe.Context(partitions=4), tpch_dir)
    yield ctx
    ctx.close()


# ---- loopback ---------------------------------------------------------------------------------


def test_local_cluster_listens_on_loopback_only(lc):
    me = psutil.Process(os.getpid())
    pids = {me.pid} | {c.pid for c in me.children(recursive=True)}
    listening = [c for c in psutil.net_connections("inet")
                 if c.status == psutil.CONN_LISTEN and c.pid in pids]
    workers = set(lc.session.executor.client.run(os.getpid).values())
    assert workers <= pids and len(workers) == 2
    assert {c.pid for c in listening} >= workers | {me.pid}  # scheduler, dashboard, workers
    exposed = [c.laddr for c in listening if c.laddr.ip not in ("127.0.0.1", "::1")]
    assert not exposed, exposed
    assert lc.dashboard_link.startswith("http://127.0.0.1:")


# ---- EXPLAIN ANALYZE ----------------------------------------------------------------------------

_LINE = re.compile(r"^(?P<op>\s*\S.*?) \[partitions=(?P<n>\d+)\] rows=(?P<rows>\d+) "
                   r"time=[\d.]+s(?P<detail>.*?)(?: shared #\d+)?$")


def _analyzed(ctx, sql):
    text = ctx.sql("EXPLAIN ANALYZE " + sql).to_arrow().column("plan").to_pylist()
    phys = text[text.index("== Physical Plan ==") + 1:text.index("== Execution ==")]
    return [line for line in phys if line]


@pytest.mark.parametrize("query", ["q9", "q18"])
def test_explain_analyze_on_a_cluster_has_rows_per_partition_and_skew(lc, threads4, query):
    sql = tpch_query(query)
    cluster_lines = _analyzed(lc, sql)
    thread_lines = _analyzed(threads4, sql)
    rows = []
    for line in cluster_lines:
        if line.strip().startswith("-> shared #"):  # a shared subplan, shown in full once
            continue
        m = _LINE.match(line)
        assert m, f"no rows/time on a cluster: {line}"
        rows.append((m["op"].strip(), int(m["rows"])))
        if int(m["n"]) > 1:
            d = re.search(r"\| parts=(\d+) rows max/median=(\d+)/([\d.e+]+) skew=([\d.]+|-|inf) "
                          r"time max/median=[\d.]+s/[\d.]+s skew=([\d.]+|-|inf)$", m["detail"])
            assert d, f"no per-partition detail: {line}"
            assert int(d[1]) == int(m["n"]), line
            assert int(d[2]) <= int(m["rows"]), line
    # the same plan produced the same rows per operator as on threads
    thread_rows = [(m["op"].strip(), int(m["rows"])) for m in map(_LINE.match, thread_lines) if m]
    assert rows == thread_rows
    # the workers' tables of this query were collected, none are left behind
    left = lc.session.executor.client.run(_pending)
    assert set(left.values()) == {0}, left


def _pending():
    from pqe.execution import diagnostics

    return diagnostics.pending()


def test_partition_detail_format():
    from pqe.physical.plan import partition_detail, skew

    assert partition_detail([(10, 0.1)]) == ""
    text = partition_detail([(10, 0.1), (30, 0.3), (20, 0.2)])
    assert text == (" | parts=3 rows max/median=30/20 skew=1.50 "
                    "time max/median=0.300s/0.200s skew=1.50")
    assert skew([0, 0, 5]) == float("inf") and skew([0, 0]) is None


# ---- progress -----------------------------------------------------------------------------------


def test_progress_reports_the_real_task_counts_of_the_graph(lc):
    """A query of a few seconds (a dask table whose partitions sleep 1 s, joined to TPC-H):
    first the graph's size, then finished tasks as they finish, adding up to it."""
    from cluster_procs import slow_table

    lc.register_dask("slow", slow_table(4, 1.0))
    phys = lc.sql("select count(*) as n from slow join nation on a = n_nationkey").physical_plan()
    graph, _ = lower(phys)
    calls = []
    run = driver.execute(lc.session.executor, phys, progress=lambda d, t: calls.append((d, t)))
    totals = [t for d, t in calls if t]
    assert totals == [len(graph)] == [run.tasks]
    done = [d for d, t in calls if d]
    assert sum(done) == run.tasks
    assert len(done) >= 2  # reported as tasks finish, not once at the end
    assert all(d > 0 for d in done)


# ---- task names ---------------------------------------------------------------------------------


def _prefixes(dask_scheduler=None):
    return sorted(dask_scheduler.task_prefixes)


def test_task_names_carry_operator_and_table(lc):
    from dataclasses import replace

    cfg = lc.session.config
    # shuffles made cheap: Q9 at this scale then hash-exchanges its two-key join (its own
    # plan broadcasts every join since the filtered parts meet partsupp first)
    lc.session.config = replace(cfg, planner=replace(cfg.planner, shuffle_cost=0.01))
    try:
        lc.sql(tpch_query("q9")).to_arrow()
    finally:
        lc.session.config = cfg
    lc.sql(tpch_query("q21")).to_arrow()
    prefixes = set(lc.session.executor.client.run_on_scheduler(_prefixes))
    for expected in ("scan-lineitem", "hashjoin-build-lineitem", "exchange-split-partsupp",
                     "exchange-piece-partsupp", "broadcast-part", "semijoin-match-orders",
                     "aggregate-orders"):
        assert expected in prefixes, " ".join(sorted(prefixes))
    assert not prefixes & {"gather", "shuffle-split", "result", "build", "shared"}, sorted(prefixes)


def test_operator_of_a_key():
    assert C.operator_of(("hashjoin-build-orders-0123456789abcdef", 3)) == "hashjoin-build-orders"
    assert C.operator_of(("exchange-piece-lineitem-0123456789abcdef", 3, 1)) == \
        "exchange-piece-lineitem"
    assert C.operator_of("exchange-barrier-part-0123456789abcdef") == "exchange-barrier-part"


# ---- versions -----------------------------------------------------------------------------------


def test_compare_versions_refuses_what_breaks_deserialization():
    ours = C.versions()
    with pytest.raises(pqe.Error, match=r"^dask worker w1 runs pqe 9\.9\.9 but this client runs pqe "):
        C.compare_versions("dask worker w1", dict(ours, pqe="9.9.9"), ours)
    with pytest.raises(pqe.Error, match=r"runs python 3\.1\.0 "):
        C.compare_versions("dask worker w1", dict(ours, python="3.1.0"), ours)
    with pytest.raises(pqe.Error, match=r"runs pyarrow not installed"):
        C.compare_versions("dask worker w1", dict(ours, pyarrow=None), ours)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        theirs = dict(ours, numpy="0.0.1-test", pyarrow=ours["pyarrow"] + ".post9")
        C.compare_versions("dask worker w1", theirs, ours)
        C.compare_versions("dask worker w1", theirs, ours)  # warned once per difference
    texts = sorted(str(w.message) for w in caught)
    assert len(texts) == 2 and "numpy 0.0.1-test" in texts[0] + texts[1], texts


def test_connecting_to_workers_with_another_pyarrow_is_refused(monkeypatch):
    real = importlib.metadata.version

    def fake(name):  # this process only: the workers report their real versions
        return "99.0.0" if name == "pyarrow" else real(name)

    monkeypatch.setattr(importlib.metadata, "version", fake)
    with pytest.raises(pqe.Error, match=r"^dask worker \S+ .*runs pyarrow \S+ but this client "
                                        r"runs pyarrow 99\.0\.0: pqe's tasks would not deserialize"):
        pqe.Context(workers=1, memory_limit="512MiB")


def test_timeouts_come_from_dask_config():
    import dask

    from pqe.execution.scheduler import Executor

    with dask.config.set({"pqe.stall-timeout": "2 minutes", "pqe.no-workers-timeout": 7}):
        ex = Executor()
    assert ex.stall_timeout == 120 and ex.no_workers_timeout == 7
    ex.close()
    assert Executor(stall_timeout=5).stall_timeout == 5


def test_results_stay_right_on_the_cluster(lc, duck):
    sql = tpch_query("q18")
    assert_same(lc.sql(sql).to_arrow(), duck_arrow(duck, sql), ordered=True)
