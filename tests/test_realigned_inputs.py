"""Tables a dask worker receives from another worker (an exchange's pieces, a broadcast build,
partial aggregates) arrive at whatever byte offset they had in the message: between two
LocalCluster workers every buffer sat at address % 8 == 4. Acero, set to reallocate misaligned
buffers (pqe.kernels), then copies each such buffer whole for every batch it reads: a join
probing a 4M-row misaligned table took 1.3-35 s against 0.12-1.3 s aligned, a group-by
1.3-1.7 s against 0.04-0.11 s. On workers (execution.cluster.WorkerSupport sets
ops.REALIGN_INPUTS) every task's table inputs are copied into aligned buffers first, only the
misaligned chunks, and only their rows."""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.execution import ops


def _misaligned(n: int, shift: int = 4) -> tuple[pa.Table, np.ndarray]:
    raw = np.zeros(n * 8 + 64, dtype=np.uint8)
    start = (64 - raw.ctypes.data % 64) % 64 + shift
    raw[start:start + n * 8] = np.arange(n, dtype=np.int64).view(np.uint8)
    v = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(raw[start:start + n * 8])])
    assert v.buffers()[1].address % 8 == shift
    return pa.table({"v": v, "s": pa.array([f"s{i % 3}" for i in range(n)])}), raw


def _aligned(t: pa.Table) -> bool:
    return all(b is None or b.address % 8 == 0 for col in t.columns for c in col.chunks
               for b in c.buffers())


def test_realigned_inputs_copy_only_misaligned_tables_and_keep_values():
    bad, _raw = _misaligned(10_000)
    good = pa.table({"v": pa.array(np.arange(5, dtype=np.int64))})
    out = ops._realigned((bad, good, [bad, good], None, 7))
    assert _aligned(out[0]) and out[0].equals(bad)
    assert out[1] is good  # aligned: the same object, nothing copied
    assert all(_aligned(t) for t in out[2]) and out[2][0].equals(bad) and out[2][1] is good
    assert out[3] is None and out[4] == 7
    assert not _aligned(bad)  # the input itself is never changed


def test_pipeline_realigns_its_inputs_when_set(monkeypatch):
    seen = []

    class Probe(ops.Op):
        label = "probe"
        _fields = ()

        def run(self, data, inputs):
            seen.append(_aligned(inputs[0]))
            return inputs[0]

    bad, _raw = _misaligned(1_000)
    pipeline = ops.Pipeline((Probe(),), "probe")
    monkeypatch.setattr(ops, "REALIGN_INPUTS", True)
    assert ops.run_pipeline(pipeline, bad).equals(bad)
    monkeypatch.setattr(ops, "REALIGN_INPUTS", False)
    ops.run_pipeline(pipeline, bad)
    assert seen == [True, False]


def test_cluster_workers_realign_and_answer_as_threads():
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(3)
    n = 300_000
    t = pa.table({"k": pa.array(rng.integers(0, 5000, n)), "v": pa.array(rng.random(n))})
    d = pa.table({"k": pa.array(np.arange(5000)), "g": pa.array(np.arange(5000) % 7)})
    sql = ("SELECT g, count(*) AS n, round(sum(v), 6) AS s FROM t JOIN d ON t.k = d.k "
           "GROUP BY g ORDER BY g")
    with pqe.Context(threads=2) as local:
        local.register_arrow("t", t)
        local.register_arrow("d", d)
        expected = local.sql(sql).to_pylist()
    with pqe.Context(workers=2, memory_limit="1GiB", partitions=4) as ctx:
        ctx.register_arrow("t", t)
        ctx.register_arrow("d", d)
        assert ctx.sql(sql).to_pylist() == expected
        flags = ctx.session.executor.client.run(lambda: __import__(
            "pqe.execution.ops", fromlist=["ops"]).REALIGN_INPUTS)
        assert flags and all(flags.values())
