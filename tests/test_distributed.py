"""pqe on a real dask.distributed cluster: a scheduler and two workers started with the
`dask` command-line tools, a LocalCluster, and a worker killed in the middle of a query."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import (TPCH_QUERIES, assert_same, duck_arrow, has_top_level_order, register_tpch,
                     tpch_data, tpch_query)

import pqe

DASK = str(Path(sys.executable).with_name("dask"))
pytestmark = pytest.mark.skipif(not os.path.exists(DASK), reason="dask command-line tools not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """`dask scheduler` + two `dask worker` processes on loopback."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    logdir = tmp_path_factory.mktemp("dask-logs")
    procs = []

    def start(args, name):
        log = open(logdir / f"{name}.log", "w")
        procs.append(subprocess.Popen([DASK, *args], stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True))

    start(["scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], "scheduler")
    for i in range(2):
        start(["worker", address, "--nthreads", "1", "--memory-limit", "2GiB", "--no-dashboard",
               "--name", f"w{i}", "--local-directory", str(logdir / f"w{i}")], f"worker{i}")
    from distributed import Client

    client = None
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            client = Client(address, timeout="5s")
            client.wait_for_workers(2, timeout=30)
            break
        except (OSError, TimeoutError):
            time.sleep(0.5)
    assert client is not None, "dask cluster did not start"
    yield address, client
    client.close()
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def remote_ctx(cluster, tpch_dir):
    address, _ = cluster
    ctx = register_tpch(pqe.Context(scheduler=address), tpch_dir)
    yield ctx
    ctx.close()


@pytest.mark.parametrize("query", TPCH_QUERIES)
def test_tpch_on_cli_cluster(remote_ctx, duck, query):
    sql = tpch_query(query)
    assert_same(remote_ctx.sql(sql).to_arrow(), duck_arrow(duck, sql), ordered=has_top_level_order(sql))


def test_partitions_follow_cluster_threads(remote_ctx):
    assert remote_ctx.session.executor.parallelism == 2
    phys = remote_ctx.sql("select count(*) from lineitem").physical_plan()
    assert phys.children()[0].n >= 2 or phys.n >= 1


def test_in_memory_tables_travel_in_the_graph(remote_ctx):
    import pyarrow as pa

    remote_ctx.register_arrow("mem", pa.table({"a": list(range(1000)), "b": [i % 7 for i in range(1000)]}))
    out = remote_ctx.sql("select b, sum(a) as s from mem group by b order by b").to_arrow()
    assert out.column("s").to_pylist() == [sum(a for a in range(1000) if a % 7 == b) for b in range(7)]


def test_worker_killed_mid_query_still_answers(cluster, tmp_path):
    """SIGKILL a worker process while a multi-stage join runs: lost partitions are recomputed
    from lineage and the answer is still right."""
    address, client = cluster
    root = tpch_data(0.1)
    ctx = register_tpch(pqe.Context(scheduler=address, partitions=8), root)
    import duckdb

    from helpers import duckdb_tpch

    duck = duckdb_tpch(root)
    sql = tpch_query("q9")
    expected = duck_arrow(duck, sql)
    pids = client.run(os.getpid)  # worker address -> process id
    result, error = {}, {}

    def run():
        try:
            result["t"] = ctx.sql(sql).to_arrow()
        except Exception as e:  # noqa: BLE001 - reported below
            error["e"] = e

    t = threading.Thread(target=run)
    t.start()
    # wait until tasks are running on the workers, then kill one of them
    victim = None
    deadline = time.time() + 30
    while time.time() < deadline and victim is None:
        processing = client.processing()
        busy = [w for w, tasks in processing.items() if tasks]
        if busy:
            victim = busy[0]
        else:
            time.sleep(0.01)
    assert victim is not None, "no task started"
    os.kill(pids[victim], signal.SIGKILL)
    t.join(timeout=300)
    assert not t.is_alive()
    assert "e" not in error, error.get("e")
    assert_same(result["t"], expected, ordered=True)
    client.wait_for_workers(2, timeout=60)  # the nanny restarts the worker
    ctx.close()
    duck.close()
    del duckdb


@pytest.fixture(scope="module")
def local_cluster_ctx(tpch_dir):
    ctx = register_tpch(pqe.Context(workers=2, memory_limit="1GiB"), tpch_dir)
    yield ctx
    ctx.close()


LOCAL_QUERIES = [
    "select l_returnflag, l_linestatus, count(*), sum(l_quantity) from lineitem "
    "group by rollup (l_returnflag, l_linestatus)",
    "select o_custkey, o_orderdate, rank() over (partition by o_custkey order by o_totalprice desc) r, "
    "sum(o_totalprice) over (partition by o_custkey order by o_orderdate, o_orderkey rows between 1 preceding and current row) s "
    "from orders where o_custkey < 300",
    "select n_name, count(*) from customer join nation on c_nationkey = n_nationkey "
    "group by cube (n_name) order by n_name",
    "select o_custkey, o_orderkey, lag(o_totalprice) over w, lead(o_orderdate, 2) over w, "
    "dense_rank() over (partition by o_custkey order by o_orderpriority), ntile(3) over w, "
    "first_value(o_orderkey) over w, percent_rank() over w "
    "from orders where o_custkey < 500 window w as (partition by o_custkey order by o_orderkey)",
    "select l_returnflag, l_shipmode, grouping(l_returnflag, l_shipmode) g, count(*), "
    "avg(l_discount) from lineitem group by grouping sets ((l_returnflag), (l_shipmode), ())",
]


@pytest.mark.parametrize("sql", LOCAL_QUERIES)
def test_local_cluster(local_cluster_ctx, duck, sql):
    assert_same(local_cluster_ctx.sql(sql).to_arrow(), duck_arrow(duck, sql))


@pytest.mark.parametrize("query", ["q1", "q5", "q13", "q21"])
def test_local_cluster_tpch(local_cluster_ctx, duck, query):
    sql = tpch_query(query)
    assert_same(local_cluster_ctx.sql(sql).to_arrow(), duck_arrow(duck, sql), ordered=has_top_level_order(sql))


def test_local_cluster_closes_with_context(tpch_dir):
    ctx = pqe.Context(workers=1, memory_limit="512MiB")
    cluster = ctx.session.executor.cluster
    assert cluster is not None and ctx.dashboard_link
    ctx.close()
    assert cluster.status.name in ("closed", "closing")


def test_dynamic_filter_row_groups_dealt_out_on_a_cluster(local_cluster_ctx, tmp_path):
    """A dynamically filtered scan's tasks each carry all its row groups and read their share
    of the kept ones (ops.ReadFiles.share): pickled to worker processes, they still keep the
    same row groups and read each once."""
    from dataclasses import replace

    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 200_000
    pq.write_table(pa.table({"k": pa.array([i // 1000 for i in range(n)], pa.int64()),
                             "v": pa.array(range(n), pa.int64())}),
                   tmp_path / "fact.parquet", row_group_size=10_000)
    pq.write_table(pa.table({"k": pa.array(range(200), pa.int64()),
                             "z": pa.array([int(30 <= i < 70) for i in range(200)])}),
                   tmp_path / "dim.parquet")
    ctx = local_cluster_ctx
    for t in ("fact", "dim"):
        ctx.register_parquet(f"dyn_{t}", str(tmp_path / f"{t}.parquet"))
    saved = ctx.session.config
    ctx.session.config = replace(saved, planner=replace(saved.planner, min_partition_rows=1,
                                                        target_partitions=4))
    try:
        sql = ("SELECT count(*) AS c, sum(v) AS s FROM dyn_fact JOIN dyn_dim "
               "ON dyn_fact.k = dyn_dim.k WHERE dyn_dim.z = 1")
        assert "dynamic_filter=[dyn_fact.k]" in ctx.sql(sql).explain()
        assert ctx.sql(sql).to_pylist() == [{"c": 40_000, "s": sum(range(30_000, 70_000))}]
    finally:
        ctx.session.config = saved
        for t in ("fact", "dim"):
            ctx.deregister(f"dyn_{t}")


_CLIENT_PROCESS = r'''
import gc, sys, time
import pyarrow as pa
import pqe
from distributed import Client

gc.disable()  # (a cycle holding a query's futures is then never broken behind the test's back)
address, factor, slow = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
client = Client(address, set_as_default=False)  # no default client in this process
ctx = pqe.Context(client=client)
ctx.register_arrow("t", pa.table({"a": [1 * factor, 2 * factor, 3 * factor]}))


def wait_a_little(a):
    time.sleep(slow)
    return a


ctx.register_udf("wait_a_little", wait_a_little, ["BIGINT"], "BIGINT")
print("running", flush=True)
total = ctx.sql("SELECT sum(wait_a_little(a)) AS s FROM t").to_arrow().column("s")[0].as_py()
time.sleep(0.5)
held = client.run_on_scheduler(
    lambda dask_scheduler, me=client.id: sum(
        1 for ts in dask_scheduler.tasks.values()
        if any(c.client_key == me for c in (ts.who_wants or ()))))
print(total, held, flush=True)
time.sleep(5)  # stays connected, idle
'''


def test_client_processes_never_share_tables_or_keep_results(cluster, tmp_path):
    """Two client processes counted table tokens from 1: both named their first in-memory
    table `memory1`, and the scheduler gave the second process's query the first one's data
    (sum 6 for 600) while the first was running or kept its results. Each process also kept
    its last query's results on the workers until Python's garbage collector ran, and a
    Client made with set_as_default=False failed every query ('No clients found')."""
    address, _ = cluster
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]))
    first = subprocess.Popen([sys.executable, "-c", _CLIENT_PROCESS, address, "1", "4"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert first.stdout.readline().strip() == "running", first.stderr.read()
        time.sleep(1.0)  # the first query's tasks (and its table) are on the cluster
        second = subprocess.run([sys.executable, "-c", _CLIENT_PROCESS, address, "100", "0"],
                                capture_output=True, text=True, env=env, timeout=120)
        assert second.stdout.split() == ["running", "600", "0"], second.stderr[-2000:]
        assert first.stdout.readline().split() == ["6", "0"]
    finally:
        first.kill()
        first.wait()


def test_a_timed_out_query_stops_its_running_tasks_on_the_workers(cluster):
    """A timeout cancelled the query's futures, but the tasks already running on the workers
    ran to their end: a user function taking 1 s per batch kept both workers busy and the
    next query waited 6.6 s. The workers are told, and their tasks stop at the next op,
    chunk or batch."""
    import numpy as np
    import pyarrow as pa

    address, _ = cluster
    ctx = pqe.Context(address)
    try:
        ctx.register_arrow("t", pa.table({"a": np.arange(400_000)}))

        def slow(a):
            time.sleep(1.0)
            return a

        ctx.register_udf("slow", slow, ["bigint"], "bigint")
        assert ctx.sql("SELECT count(*) AS n FROM t").to_pylist() == [{"n": 400_000}]
        with pytest.raises(pqe.QueryTimeout):
            ctx.sql("SELECT sum(slow(a)) FROM t", timeout=1).to_arrow()
        start = time.monotonic()
        assert ctx.sql("SELECT count(*) AS n FROM t").to_pylist() == [{"n": 400_000}]
        assert time.monotonic() - start < 3.5
    finally:
        ctx.close()


def test_interval_literals_run_on_a_cluster(local_cluster_ctx):
    """An INTERVAL literal left in the plan (not folded into a constant) failed every query on
    a cluster: pyarrow's MonthDayNano does not pickle (dask's tokenizer and the graph's
    transport both pickle the task), "TokenizationError" or "Error during deserialization"."""
    import datetime as dt

    import pyarrow as pa

    t = pa.table({"y": [1.5, None], "ts": [dt.datetime(2020, 1, 1), None]})
    local_cluster_ctx.register_arrow("iv_t", t)
    got = local_cluster_ctx.sql(
        "SELECT y, INTERVAL '1 day' AS i, ts - INTERVAL '1 day' > TIMESTAMP '2019-12-30' AS b "
        "FROM iv_t ORDER BY y NULLS LAST").to_pylist()
    assert got == [{"y": 1.5, "i": pa.MonthDayNano([0, 1, 0]), "b": True},
                   {"y": None, "i": pa.MonthDayNano([0, 1, 0]), "b": None}]
    got = local_cluster_ctx.sql("SELECT count(*) AS n FROM lineitem WHERE l_shipdate + "
                                "INTERVAL '1 day' > DATE '1998-01-01'").to_pylist()
    want = local_cluster_ctx.sql("SELECT count(*) AS n FROM lineitem WHERE l_shipdate > "
                                 "DATE '1997-12-31'").to_pylist()
    assert got == want and got[0]["n"] > 0


def test_a_timed_out_nested_loop_join_frees_the_cluster(local_cluster_ctx):
    """A cancelled or timed-out nested-loop join ran on for its whole product (400M pairs:
    minutes); the busy workers then held every later query. It now stops block by block."""
    import pyarrow as pa

    n = 20000
    t = pa.table({"id": pa.array(range(n), pa.int64()), "x": [i * 0.37 % 101 for i in range(n)]})
    local_cluster_ctx.register_arrow("nlj_t", t)
    with pytest.raises(pqe.QueryTimeout):
        local_cluster_ctx.sql("SELECT count(*) FROM nlj_t a, nlj_t b WHERE a.x * b.x > "
                              "a.id * 0.001 + b.id").to_arrow(timeout=2)
    start = time.monotonic()
    assert local_cluster_ctx.sql("SELECT count(*) AS n FROM nlj_t").to_pylist() == [{"n": n}]
    assert time.monotonic() - start < 20
