"""Broadcast semi and anti joins on integer keys look their probe rows up in the build's
packed distinct keys, made once (kernels.dense_join.KeySet), instead of hashing the build in
every probe partition. Checked against DuckDB over key types, ranges, NULLs and sizes."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.kernels import dense_join

duckdb = pytest.importorskip("duckdb")

TYPES = [(pa.int8(), -128, 127), (pa.int32(), -5, 40), (pa.int64(), -2 ** 63, 2 ** 63 - 1),
         (pa.int64(), 0, 3000), (pa.uint64(), 2 ** 64 - 50, 2 ** 64 - 1), (pa.uint8(), 0, 255),
         (pa.int16(), -300, 300), (pa.int64(), 2 ** 62, 2 ** 62 + 100)]


@pytest.fixture(autouse=True)
def every_build(monkeypatch):
    """Key sets for builds of any size (the planner takes them from 50,000 estimated rows)."""
    from pqe.physical import plan
    monkeypatch.setattr(plan, "KEY_SET_MIN_BUILD_ROWS", 0)


@pytest.fixture
def counted(monkeypatch):
    calls = {"sets": 0, "tables": 0, "probes": 0}
    build, probe = dense_join.build_key_set, dense_join.probe_key_set

    def counting_build(*a):
        out = build(*a)
        calls["sets" if isinstance(out, dense_join.KeySet) else "tables"] += 1
        return out

    def counting_probe(*a):
        out = probe(*a)
        calls["probes"] += out is not None
        return out

    monkeypatch.setattr(dense_join, "build_key_set", counting_build)
    monkeypatch.setattr(dense_join, "probe_key_set", counting_probe)
    return calls


def _tables(rng: random.Random):
    nk = rng.randint(1, 3)
    kinds = [rng.choice(TYPES) for _ in range(nk)]
    nl, nr = rng.randint(0, 2000), rng.randint(0, 500)
    nulls = rng.choice([0, 0.05, 0.3])

    def col(n, typ, lo, hi):
        return [None if rng.random() < nulls else rng.randint(lo, hi) for _ in range(n)]

    left = {f"a{i}": col(nl, *k) for i, k in enumerate(kinds)}
    right = {f"b{i}": col(nr, *k) for i, k in enumerate(kinds)}
    for i in range(nk):  # every other probe row takes a build row's keys: there are matches
        for j in range(0, min(nl, nr), 2):
            left[f"a{i}"][j] = right[f"b{i}"][j]
    lt = pa.table({**{k: pa.array(v, kinds[i][0]) for i, (k, v) in enumerate(left.items())},
                   "p": pa.array(range(nl))})
    rt = pa.table({**{k: pa.array(v, kinds[i][0]) for i, (k, v) in enumerate(right.items())},
                   "q": pa.array(range(nr))})
    return lt, rt, nk


@pytest.mark.parametrize("seed", range(12))
def test_semi_and_anti_joins_on_integer_keys_match_duckdb(seed, counted):
    rng = random.Random(seed)
    for _ in range(4):
        lt, rt, nk = _tables(rng)
        cond = " and ".join(f"l.a{i} = r.b{i}" for i in range(nk))
        con = duckdb.connect()
        con.register("lt", lt)
        con.register("rt", rt)
        for kind in ("exists", "not exists"):
            sql = f"select l.p from lt l where {kind} (select 1 from rt r where {cond}) order by 1"
            want = [r[0] for r in con.execute(sql).fetchall()]
            ctx = pqe.Context(partitions=3)
            ctx.register_arrow("lt", lt)
            ctx.register_arrow("rt", rt)
            assert ctx.sql(sql).to_arrow().column(0).to_pylist() == want, (seed, sql)
    # the key sets were made and probed (some key ranges are too wide: those hash-join)
    assert counted["sets"] and counted["probes"]


def test_key_set_forms(monkeypatch):
    t = pa.table({"a": pa.array([3, 1, None, 3], pa.int32()), "b": pa.array([7, 9, 8, 7])})
    small = dense_join.build_key_set(t, ("a", "b"))
    assert small.bits is not None and small.lo == (1, 7) and small.spans == (3, 3)
    wide = dense_join.build_key_set(
        pa.table({"a": pa.array([0, 10 ** 9]), "b": pa.array([0, 10 ** 9])}), ("a", "b"))
    assert wide.bits is None and wide.packed.tolist() == [0, 10 ** 9 * (10 ** 9 + 1) + 10 ** 9]
    # ranges whose product reaches 2^62 are left to the hash join, as are text keys
    full = pa.table({"a": pa.array([-2 ** 63, 2 ** 63 - 1])})
    assert dense_join.build_key_set(full, ("a",)) is full
    text = pa.table({"a": ["x"]})
    assert dense_join.build_key_set(text, ("a",)) is text
    probe = pa.table({"a": pa.array([3, 3, None, 2, 1], pa.int32()),
                      "b": pa.array([7, 8, 8, 7, 9]), "p": pa.array(range(5))})
    monkeypatch.setattr(dense_join, "KEY_SET_BITMAP_SLOTS", 0)  # (the sorted form)
    sorted_form = dense_join.build_key_set(t, ("a", "b"))
    assert sorted_form.bits is None and sorted_form.packed.tolist() == [0 * 3 + 2, 2 * 3 + 0]
    for ks in (small, sorted_form):
        semi = dense_join.probe_key_set(probe, ks, "semi", ("a", "b"), ("p",))
        anti = dense_join.probe_key_set(probe, ks, "anti", ("a", "b"), ("p",))
        assert semi.column("p").to_pylist() == [0, 4]
        assert anti.column("p").to_pylist() == [1, 2, 3]
    # a probe key of another type than the build's: the caller hash-joins
    other = probe.set_column(0, "a", probe.column("a").cast(pa.int64()))
    assert dense_join.probe_key_set(other, small, "semi", ("a", "b"), ("p",)) is None


def test_empty_build_keeps_every_row_of_an_anti_join():
    ks = dense_join.build_key_set(pa.table({"a": pa.array([None, None], pa.int64())}), ("a",))
    probe = pa.table({"a": pa.array([1, None, 2], pa.int64())})
    assert dense_join.probe_key_set(probe, ks, "anti", ("a",), ("a",)).num_rows == 3
    assert dense_join.probe_key_set(probe, ks, "semi", ("a",), ("a",)).num_rows == 0


def test_explain_names_the_key_set_only_where_it_is_used(monkeypatch):
    ctx = pqe.Context(partitions=4)
    n = 200_000
    ctx.register_arrow("big", pa.table({"k": np.arange(n), "j": np.arange(n) % 97,
                                        "s": pa.array([str(i % 50) for i in range(n)])}))
    ctx.register_arrow("small", pa.table({"k": np.arange(0, n, 7), "j": np.arange(0, n, 7) % 97,
                                          "s": pa.array([str(i % 50) for i in range(0, n, 7)])}))

    def joins(sql):
        return [line for line in ctx.sql("explain " + sql).to_arrow().column(0).to_pylist()
                if "HashJoin" in line]

    sql = ("select count(*) from big b where not exists (select 1 from small s "
           "where s.k = b.k and s.j = b.j)")
    assert any("key set]: anti" in line for line in joins(sql)), joins(sql)
    assert ctx.sql(sql).to_arrow().column(0)[0].as_py() == n - len(range(0, n, 7))
    # text keys, NOT IN (NULL-aware) and a condition beside the keys keep the hash join
    for other in ("select count(*) from big b where not exists (select 1 from small s "
                  "where s.s = b.s and s.k = b.k)",
                  "select count(*) from big b where k not in (select k from small)",
                  "select count(*) from big b where exists (select 1 from small s "
                  "where s.k = b.k and s.j < b.j)"):
        assert not any("key set" in line for line in joins(other)), joins(other)
    # a build estimated below KEY_SET_MIN_BUILD_ROWS is hashed by Acero, as before
    from pqe.physical import plan
    monkeypatch.setattr(plan, "KEY_SET_MIN_BUILD_ROWS", 10 ** 9)
    assert not any("key set" in line for line in joins(sql)), joins(sql)
