"""In-memory tables (register_arrow) on a LocalCluster: placed on the workers once, never in a
query's graph.

Each query used to carry the whole table in its task graph: a 100 MiB table went to the
scheduler with every query (dask's "Sending large graph" warning), was deserialized on one
worker and copied whole to the other; its buffers then sat at whatever byte offset Dask's
message gave them, and Acero, given misaligned buffers, copied the whole buffer for each
batch: workers climbed to 4-7 GB on `SELECT count(*)` and were restarted.
"""

from __future__ import annotations

import os
import signal
import time
import warnings
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

import pqe

ROWS = 1 << 20  # 8 MiB of int64 + a string column: well past the inline limit (1 MiB)


def _table(seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    v = rng.integers(0, 1_000_000, ROWS)
    return pa.table({"k": pa.array(v % 17), "v": pa.array(v),
                     "s": pa.array([f"s{i % 5}" for i in range(ROWS)])})


def _expected(t: pa.Table) -> list[dict]:
    d = t.to_pandas().groupby("k").agg(n=("v", "size"), s=("v", "sum")).reset_index()
    return [{"k": int(r.k), "n": int(r.n), "s": int(r.s)} for r in d.itertuples()]


SQL = "SELECT k, count(*) AS n, sum(v) AS s FROM big GROUP BY k ORDER BY k"


def _misaligned_table(n: int) -> pa.Table:
    """An int64 column whose buffer starts 1 byte past an 8-byte boundary (as data can land
    inside a Dask message), plus a string column."""
    raw = np.zeros(n * 8 + 64, dtype=np.uint8)
    start = (64 - raw.ctypes.data % 64) % 64 + 1
    raw[start:start + n * 8] = np.arange(n, dtype=np.int64).view(np.uint8)
    v = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(raw[start:start + n * 8])])
    assert v.buffers()[1].address % 8 == 1
    return pa.table({"v": v, "s": pa.array([f"s{i % 3}" for i in range(n)])})


def test_misaligned_in_memory_slices_are_copied_before_acero_reads_them():
    """Acero copies a misaligned buffer whole for every batch: count(*) of a 100 MiB table
    at an odd address took 67 s and 19.9 GB on threads (0.2 s and 300 MB aligned)."""
    from pqe.kernels import scan

    t = _misaligned_table(100_000)
    with pqe.Context(partitions=4) as ctx:
        ctx.register_arrow("m", t)
        phys = ctx.sql("SELECT v, s FROM m").physical_plan()
        node = phys
        while node.children():
            node = node.children()[0]
        assert type(node).__name__ == "MemoryScanExec"
        for offset, length in node.slices:
            out = scan.read_memory(node.provider, t, offset, length, node.columns, (),
                                   tuple(cid for _, cid in node.columns))
            for col in out.columns:
                for chunk in col.chunks:
                    assert all(b is None or b.address % 8 == 0 for b in chunk.buffers())
            assert out.column(0).to_pylist() == list(range(offset, offset + length))
        got = ctx.sql("SELECT count(*) AS n, sum(v) AS s, min(s) AS lo FROM m").to_pylist()
        assert got == [{"n": 100_000, "s": sum(range(100_000)), "lo": "s0"}]
    assert t.column("v").chunks[0].buffers()[1].address % 8 == 1  # the user's data untouched


@pytest.fixture(scope="module")
def cctx():
    ctx = pqe.Context(workers=2, memory_limit="1GiB", partitions=4)
    yield ctx
    ctx.close()


def _rows(out: pa.Table) -> list[dict]:
    return [{"k": r["k"], "n": r["n"], "s": int(r["s"])} for r in out.to_pylist()]


def _worker_keys(dask_worker=None):
    return {str(k): int(getattr(v, "nbytes", 0)) for k, v in dask_worker.data.items()}


def _placed_keys(client) -> dict:
    """key -> bytes of the in-memory pieces each worker holds, over all workers."""
    out = {}
    for keys in client.run(_worker_keys).values():
        out.update({k: n for k, n in keys.items() if k.startswith("memory-")})
    return out


def _holder(client) -> str:
    """A worker holding pieces of an in-memory table."""
    held = client.run(_worker_keys)
    return sorted(a for a, keys in held.items() if any(k.startswith("memory-") for k in keys))[0]


def test_queries_do_not_carry_the_table_in_their_graph(cctx):
    import dask

    runner = cctx.session.executor.runner
    graphs = []
    run = runner.run

    def spy(graph, keys, *args, **kwargs):
        graphs.append(dict(graph))
        return run(graph, keys, *args, **kwargs)

    t = _table(1)
    cctx.register_arrow("big", t)
    runner.run = spy
    try:
        with warnings.catch_warnings(record=True) as caught, \
                dask.config.set({"distributed.admin.large-graph-warning-threshold": "1MB"}):
            warnings.simplefilter("always")
            for _ in range(3):
                assert _rows(cctx.sql(SQL).to_arrow(timeout=60)) == _expected(t)
    finally:
        del runner.run
    assert not [w for w in caught if "large graph" in str(w.message)]
    assert len(graphs) == 3
    for graph in graphs:
        assert not any(isinstance(v, pa.Table) for v in graph.values())
    # one copy of the table on the cluster, spread over both workers, kept between queries
    placed = _placed_keys(cctx.session.executor.client)
    assert len(placed) == 4
    assert sum(placed.values()) < 1.2 * t.nbytes
    held = cctx.session.executor.client.run(_worker_keys)
    assert all(any(k.startswith("memory-") for k in keys) for keys in held.values())


def _transfers(dask_worker=None) -> int:
    return sum(x["total"] for x in dask_worker.transfer_incoming_log)


def test_repeated_queries_keep_workers_bounded_and_read_local_pieces(cctx):
    client = cctx.session.executor.client
    t = _table(2)
    cctx.register_arrow("big", t)
    cctx.sql("SELECT count(*) FROM big").to_arrow(timeout=60)
    before = sum(client.run(_transfers).values())
    for _ in range(5):
        assert cctx.sql("SELECT count(*) AS n FROM big").to_pylist() == [{"n": ROWS}]
        assert _rows(cctx.sql(SQL).to_arrow(timeout=60)) == _expected(t)
    # scan tasks read the piece on their own worker: only partial aggregates move (the table
    # went from the worker that deserialized the graph to the other one, query after query)
    assert sum(client.run(_transfers).values()) - before < t.nbytes / 8
    scatters = cctx.session.executor.runner.placed.scatters
    cctx.sql(SQL).to_arrow(timeout=60)
    assert cctx.session.executor.runner.placed.scatters == scatters  # placed once


def test_reregistering_a_table_is_seen_and_releases_the_old_pieces(cctx):
    client = cctx.session.executor.client
    a, b = _table(3), _table(4)
    cctx.register_arrow("big", a)
    assert _rows(cctx.sql(SQL).to_arrow(timeout=60)) == _expected(a)
    old = set(_placed_keys(client))
    cctx.register_arrow("big", b)
    assert _rows(cctx.sql(SQL).to_arrow(timeout=60)) == _expected(b)
    deadline = time.monotonic() + 10
    while set(_placed_keys(client)) & old and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not set(_placed_keys(client)) & old
    cctx.deregister("big")
    deadline = time.monotonic() + 10
    while _placed_keys(client) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _placed_keys(client) == {}


def test_other_partition_counts_and_small_tables_answer_as_threads(cctx):
    t = _table(5)
    small = pa.table({"k": list(range(17)), "name": [f"n{i}" for i in range(17)]})
    sqls = [SQL,
            "SELECT s, count(*) AS n, min(v) AS lo, max(v) AS hi FROM big WHERE v % 3 = 0 "
            "GROUP BY s ORDER BY s",
            "SELECT name, sum(v) AS s FROM big JOIN small USING (k) GROUP BY name ORDER BY name",
            "SELECT k, v FROM big ORDER BY v DESC, k LIMIT 7"]
    with pqe.Context(partitions=3) as threads:
        for ctx in (cctx, threads):
            ctx.register_arrow("big", t)
            ctx.register_arrow("small", small)
        for sql in sqls:
            want = threads.sql(sql).to_arrow()
            assert cctx.sql(sql).to_arrow(timeout=60).equals(want), sql
        assert threads.session.executor.placement() is None  # threads: the table itself
    # another partition count cuts the table into other pieces
    saved = cctx.session.config
    cctx.session.config = replace(saved, partitions=7)
    try:
        assert cctx.sql(SQL).physical_plan().children()[0].n >= 1
        assert _rows(cctx.sql(SQL).to_arrow(timeout=60)) == _expected(t)
        assert len([k for k in _placed_keys(cctx.session.executor.client)
                    if cctx.session.catalog.snapshot()["big"].token in k]) == 7
    finally:
        cctx.session.config = saved
    # a small table travels in the graph: nothing of it is placed
    assert not [k for k in _placed_keys(cctx.session.executor.client)
                if cctx.session.catalog.snapshot()["small"].token in k]
    assert t.column("v").to_pylist()[:3] == _table(5).column("v").to_pylist()[:3]  # unaltered


def _kill(client, address: str) -> None:
    """SIGKILL the worker at `address` and wait for its nanny's new one."""
    os.kill(client.run(os.getpid)[address], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while address in client.scheduler_info(n_workers=-1)["workers"] \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    client.wait_for_workers(2, timeout=60)


def test_a_lost_worker_s_pieces_are_placed_again(cctx):
    client = cctx.session.executor.client
    placed = cctx.session.executor.runner.placed
    t = _table(6)
    cctx.register_arrow("big", t)
    assert _rows(cctx.sql(SQL).to_arrow(timeout=60)) == _expected(t)
    keys = set(_placed_keys(client))
    scatters = placed.scatters
    _kill(client, _holder(client))
    assert _rows(cctx.sql(SQL).to_arrow(timeout=60)) == _expected(t)
    assert placed.scatters == scatters + 1  # only the lost pieces, once
    now = set(_placed_keys(client))
    assert len(now) == 4 and 0 < len(now & keys) < 4  # the other worker's pieces are kept


def test_a_worker_lost_mid_query_runs_the_query_again(cctx):
    import threading

    client = cctx.session.executor.client
    t = _table(7)
    cctx.register_arrow("big", t)
    cctx.register_udf("nap", lambda a: (time.sleep(0.05), a)[1], ["BIGINT"], "BIGINT")
    sql = "SELECT k, count(*) AS n, sum(nap(v)) AS s FROM big GROUP BY k ORDER BY k"
    cctx.sql("SELECT count(*) FROM big").to_arrow(timeout=60)  # placed
    reruns = cctx.session.executor.reruns
    box = {}
    th = threading.Thread(target=lambda: box.update(out=cctx.sql(sql).to_arrow(timeout=90)))
    th.start()
    deadline = time.monotonic() + 30
    while not any(client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.01)
    _kill(client, _holder(client))
    th.join(120)
    assert _rows(box["out"]) == _expected(t)
    assert cctx.session.executor.reruns == reruns + 1  # lowered again over pieces placed again
