"""Inner joins whose broadcast build side has a repeating integer key run on the build's rows
grouped by key once (kernels.dense_join.RunsTable), shared by every probe partition, instead
of an Acero hash table built again in each. Every answer must equal DuckDB's: duplicates on
both sides, NULL keys, residual conditions, keys of other integer types, a probe key that is
not an integer (the probes then hash-join)."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.kernels import dense_join
from pqe.physical import plan as physical_plan


@pytest.fixture
def runs_everywhere(monkeypatch):
    # (the real thresholds keep small builds on Acero, which is faster for them)
    monkeypatch.setattr(physical_plan, "RUNS_MIN_BUILD_ROWS", 0)
    monkeypatch.setattr(dense_join, "RUNS_MIN_ROWS_SLOTS", 1)
    monkeypatch.setattr(dense_join, "RUNS_MIN_ROWS_BITMAP", 1)
    monkeypatch.setattr(dense_join, "RUN_PAIRS", 97)  # many blocks of pairs


def _tables(seed: int, key_type=pa.int64()):
    rng = np.random.default_rng(seed)
    n_big, n_small = 20_000, 3_000
    big_keys = rng.integers(0, 4_000, n_big)
    small_keys = rng.integers(0, 4_000, n_small)
    big = pa.table({
        "k": pa.array(big_keys, mask=rng.random(n_big) < 0.02).cast(key_type),
        "v": rng.integers(0, 100, n_big),
        "s": pa.array(rng.choice(["x", "y", "z"], n_big)).dictionary_encode(),
    })
    small = pa.table({
        "k2": pa.array(small_keys, mask=rng.random(n_small) < 0.02),
        "w": rng.integers(0, 100, n_small),
        "t": rng.choice(["p", "q"], n_small),
    })
    return big, small


QUERIES = [
    "select count(*), sum(v), sum(w) from big join small on k = k2",
    "select s, t, count(*), sum(v * w) from big join small on k = k2 group by s, t",
    "select count(*), sum(v) from big join small on k = k2 and v > w",
    "select count(*), sum(w) from big join small on k = k2 and (v + w) % 3 = 0",
    "select count(*) from big join small on k = k2 where t = 'p' and s <> 'x'",
    "select k, count(*) from big join small on k = k2 group by k order by 2 desc, 1 limit 5",
]


def _answers(ctx, con, sql):
    got = [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()]
    want = con.execute(sql).fetchall()
    if "order by" not in sql:
        got, want = sorted(got, key=repr), sorted(want, key=repr)
    return got, want


@pytest.mark.parametrize("key_type", [pa.int64(), pa.int32(), pa.uint16()])
@pytest.mark.parametrize("sql", QUERIES)
def test_runs_join_matches_duckdb(runs_everywhere, sql, key_type):
    big, small = _tables(7, key_type)
    ctx = pqe.Context(partitions=4)
    ctx.register_arrow("big", big)
    ctx.register_arrow("small", small)
    plan = ctx.sql(sql).explain()
    assert "HashJoin[broadcast]: inner" in plan, plan
    con = duckdb.connect()
    con.register("big", big)
    con.register("small", small)
    got, want = _answers(ctx, con, sql)
    assert got == want


def test_runs_join_used_and_text_keys_fall_back(runs_everywhere):
    big, small = _tables(3)
    ctx = pqe.Context(partitions=4)
    ctx.register_arrow("big", big)
    ctx.register_arrow("small", small)
    built = []
    real = dense_join.build_runs_table

    def spy(table, key):
        out = real(table, key)
        built.append(type(out).__name__)
        return out

    import pqe.execution.lower as lower
    orig = lower.dense_join.build_runs_table
    lower.dense_join.build_runs_table = spy
    try:
        ctx.sql(QUERIES[0]).to_arrow()
    finally:
        lower.dense_join.build_runs_table = orig
    assert built == ["RunsTable"]
    # a text key: no runs, the probes hash-join; same answer as DuckDB
    ctx.register_arrow("bs", big.set_column(0, "k", big.column("k").cast(pa.string())))
    ctx.register_arrow("ss", small.set_column(0, "k2", small.column("k2").cast(pa.string())))
    con = duckdb.connect()
    con.register("bs", ctx.sql("select * from bs").to_arrow())
    con.register("ss", ctx.sql("select * from ss").to_arrow())
    sql = "select count(*), sum(v) from bs join ss on k = k2"
    got, want = _answers(ctx, con, sql)
    assert got == want


def test_probe_runs_kernel_directly():
    build = pa.table({"k2": pa.array([5, 1, 5, None, 9, 5], pa.int64()),
                      "w": pa.array([1, 2, 3, 4, 5, 6])})
    probe = pa.table({"k": pa.array([5, 9, None, 7, 1, 5], pa.int32()),
                      "v": pa.array([10, 20, 30, 40, 50, 60])})
    old = dense_join.RUNS_MIN_ROWS_SLOTS, dense_join.RUNS_MIN_ROWS_BITMAP
    dense_join.RUNS_MIN_ROWS_SLOTS = dense_join.RUNS_MIN_ROWS_BITMAP = 1
    try:
        runs = dense_join.build_runs_table(build, "k2")
    finally:
        dense_join.RUNS_MIN_ROWS_SLOTS, dense_join.RUNS_MIN_ROWS_BITMAP = old
    assert isinstance(runs, dense_join.RunsTable)
    out = dense_join.probe_runs(probe, runs, "k", None, ("k", "v", "k2", "w"))
    got = sorted(tuple(r.values()) for r in out.to_pylist())
    assert got == sorted([(5, 10, 5, 1), (5, 10, 5, 3), (5, 10, 5, 6), (9, 20, 9, 5),
                          (1, 50, 1, 2), (5, 60, 5, 1), (5, 60, 5, 3), (5, 60, 5, 6)])
    none = dense_join.probe_runs(probe.slice(2, 2), runs, "k", None, ("k", "v", "k2", "w"))
    assert none.num_rows == 0 and none.column_names == ["k", "v", "k2", "w"]
