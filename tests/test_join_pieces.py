"""A hash join whose output feeds an aggregate runs on slices of its probe side when its keys
repeat on both sides (kernels.join.output_pieces, execution.ops._join_pieces): each slice's
output is aggregated before the next is made, so a self-join of a hot key is not held whole
(100M pairs for a count(*) took 5.2 GB and 70 s; DuckDB 155 MB). Answers are checked against
DuckDB with slices of a few hundred rows, so that every query runs in many pieces."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe
from pqe.execution import ops
from pqe.kernels import join as joins


def _table(n: int, hot: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    k = rng.integers(0, hot, n)
    k_null = pa.array(k, mask=rng.random(n) < 0.05)
    s = pa.array([f"s{x % 7}é" for x in k])
    return pa.table({"k": k_null, "k2": pa.array(k % 3), "s": s,
                     "v": pa.array(rng.integers(-1000, 1000, n)),
                     "f": pa.array(rng.random(n))})


@pytest.fixture()
def pieces(monkeypatch):
    """Slices of ~500 output rows past 2,000, and a record of every slicing."""
    monkeypatch.setattr(joins, "PIECE_ROWS", 500)
    monkeypatch.setattr(joins, "SLICED_ROWS", 2000)
    seen = []
    real = joins.output_pieces

    def spy(*a, **kw):
        out = real(*a, **kw)
        seen.append(out)
        return out
    monkeypatch.setattr(joins, "output_pieces", spy)
    return seen


QUERIES = [
    "SELECT count(*) FROM t a JOIN t b ON a.k = b.k",
    "SELECT sum(a.v + b.v), count(*), min(b.s), max(a.f) FROM t a JOIN t b ON a.k = b.k",
    "SELECT a.k2, count(*), sum(b.v), avg(b.f) FROM t a JOIN t b ON a.k = b.k GROUP BY 1",
    "SELECT a.s, count(DISTINCT b.v), count(b.v) FROM t a JOIN t b ON a.k = b.k GROUP BY 1",
    "SELECT b.k2, median(a.v), string_agg(b.s, ',' ORDER BY b.s, a.v, b.v), count(DISTINCT a.s) "
    "FROM t a JOIN t b ON a.k = b.k GROUP BY 1",
    "SELECT count(*), sum(b.v) FROM t a LEFT JOIN t b ON a.k = b.k",
    "SELECT a.k2, count(b.k), count(*) FROM t a LEFT JOIN t b ON a.k = b.k GROUP BY 1",
    "SELECT count(*) FROM t a JOIN t b ON a.k = b.k AND a.k2 = b.k2",
    "SELECT count(*), sum(a.v) FROM t a JOIN t b ON a.k = b.k AND a.v < b.v",
    "SELECT count(*) FROM t a JOIN t b ON a.s = b.s WHERE a.v > 0 AND b.f < 0.5",
    "SELECT a.k, count(*) FROM t a JOIN t b ON a.k = b.k GROUP BY 1 HAVING count(*) > 100",
    "SELECT stddev_samp(a.v * b.v), var_pop(b.f) FROM t a JOIN t b ON a.k = b.k",
]


def _same(got: pa.Table, want: pa.Table) -> None:
    g = sorted(map(tuple, (r.values() for r in got.to_pylist())), key=repr)
    w = sorted(map(tuple, (r.values() for r in want.to_pylist())), key=repr)
    assert len(g) == len(w)
    for a, b in zip(g, w, strict=True):
        for x, y in zip(a, b, strict=True):
            if isinstance(x, float) or isinstance(y, float):
                assert x == pytest.approx(float(y), rel=1e-9, abs=1e-9)
            else:
                assert x == y


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("sql", QUERIES)
def test_answers_in_pieces_match_duckdb(pieces, sql, threads):
    t = _table(3000, 40)
    ctx = pqe.Context(threads=threads)
    ctx.register_arrow("t", t)
    got = ctx.sql(sql).to_arrow()
    con = duckdb.connect()
    con.register("t", t)
    _same(got, con.sql(sql).arrow().read_all() if hasattr(con.sql(sql).arrow(), "read_all")
          else con.sql(sql).arrow())
    assert any(p is not None and len(p) > 10 for p in pieces), "the join did not run in pieces"


def test_pieces_cover_every_probe_row_once():
    left = pa.table({"k": pa.array([1, 2, None, 1, 3, 1, 2] * 50, pa.int64())})
    right = pa.table({"k": pa.array([1] * 40 + [2] * 3, pa.int64())})
    old = joins.PIECE_ROWS, joins.SLICED_ROWS
    joins.PIECE_ROWS, joins.SLICED_ROWS = 100, 400
    try:
        cuts = joins.output_pieces(left, right, "inner", ["k"], ["k"])
        left_cuts = joins.output_pieces(left, right, "left", ["k"], ["k"])
    finally:
        joins.PIECE_ROWS, joins.SLICED_ROWS = old
    for c in (cuts, left_cuts):
        assert c[0] == 0 and c[-1] == left.num_rows and c == sorted(set(c))
    # each piece makes at most one probe row's matches past the target
    per_row = np.array([40 if x == 1 else 3 if x == 2 else 0 for x in left.column("k").to_pylist()])
    for a, b in zip(cuts, cuts[1:], strict=False):
        assert per_row[a:b].sum() <= 100 + 40


def test_runs_join_builds_are_sliced_too(pieces, tmp_path, monkeypatch):
    """A broadcast build grouped by its integer key (a RunsTable: the runs join) with a hot
    key: its probes are sliced as Acero's are (a 400k-row self-join made 64M pairs at once,
    3 GB)."""
    monkeypatch.setattr(joins, "PIECE_ROWS", 50_000)
    monkeypatch.setattr(joins, "SLICED_ROWS", 200_000)
    builds = []
    real = ops._join_pieces

    def spy(pipeline, o, k, last, data, inputs, *rest):
        builds.append(type(inputs[o[k].build]).__name__)
        return real(pipeline, o, k, last, data, inputs, *rest)
    monkeypatch.setattr(ops, "_join_pieces", spy)
    rng = np.random.default_rng(3)
    n = 400_000
    k = np.where(rng.random(n) < 0.005, 0, rng.integers(1, 10**6, n))
    big = pa.table({"k": pa.array(k), "v": pa.array(rng.integers(0, 100, n))})
    for i in range(4):
        pq.write_table(big.slice(i * 100_000, 100_000), tmp_path / f"p{i}.parquet",
                       row_group_size=50_000)
    ctx = pqe.Context(threads=2)
    ctx.register_parquet("big", str(tmp_path / "*.parquet"))
    sql = "SELECT count(*) AS c, sum(a.v * b.v) AS s FROM big a JOIN big b ON a.k = b.k"
    got = ctx.sql(sql).to_pylist()[0]
    con = duckdb.connect()
    con.register("big", big)
    want = con.sql(sql).fetchall()[0]
    assert (got["c"], int(got["s"])) == want
    assert "RunsTable" in builds, builds
    assert any(p is not None and len(p) > 10 for p in pieces), "the join did not run in pieces"


def test_small_or_unique_joins_are_not_sliced():
    left = pa.table({"k": pa.array(np.arange(100_000))})
    right = pa.table({"k": pa.array(np.arange(100_000))})
    assert joins.output_pieces(left, right, "inner", ["k"], ["k"]) is None
    assert joins.output_pieces(left, right, "semi", ["k"], ["k"]) is None
    assert joins.output_pieces(left, right, "full", ["k"], ["k"]) is None


def test_explain_analyze_counts_the_pieces_rows(pieces):
    t = pa.table({"k": pa.array(np.ones(300, dtype=np.int64)), "v": pa.array(np.arange(300))})
    ctx = pqe.Context(threads=1)
    ctx.register_arrow("t", t)
    text = "\n".join(ctx.sql("EXPLAIN ANALYZE SELECT count(*) FROM t a JOIN t b ON a.k = b.k")
                     .to_arrow().column(0).to_pylist())
    join_line = next(line for line in text.splitlines() if "HashJoin[" in line)
    agg_line = next(line for line in text.splitlines() if "Aggregate[" in line)
    assert "rows=90000 " in join_line, text
    assert "rows=1 " in agg_line, text


def test_a_join_feeding_no_aggregate_is_held_whole(pieces):
    t = pa.table({"k": pa.array(np.ones(100, dtype=np.int64)), "v": pa.array(np.arange(100))})
    ctx = pqe.Context(threads=1)
    ctx.register_arrow("t", t)
    assert ctx.sql("SELECT a.v, b.v FROM t a JOIN t b ON a.k = b.k").to_arrow().num_rows == 10_000
    assert pieces == []  # (nothing reduces the output: slicing would not bound it)
    assert ops._aggregate_after  # (the rule that decides it)


def test_hot_key_self_join_memory_is_bounded():
    """36M pairs of one key: Arrow's pool peaks at a few pieces, not the 600 MB output."""
    code = textwrap.dedent("""
        import numpy as np, pyarrow as pa, pqe
        n = 6000
        t = pa.table({"k": np.ones(n, dtype=np.int64), "v": np.arange(n, dtype=np.int64)})
        ctx = pqe.Context(threads=2)
        ctx.register_arrow("t", t)
        r = ctx.sql("SELECT sum(a.v + b.v) AS s, count(*) AS c FROM t a JOIN t b ON a.k = b.k")
        print(r.to_pylist()[0]["c"], int(r.to_pylist()[0]["s"]),
              pa.default_memory_pool().max_memory())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout.split()
    count, total, peak = int(out[0]), int(out[1]), int(out[2])
    assert count == 36_000_000
    assert total == 2 * 6000 * sum(range(6000))
    assert peak < 300 * 2**20, f"Arrow pool peaked at {peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("sql", [
    "SELECT a.v AS x, b.v AS y FROM t a JOIN t b ON a.k = b.k ORDER BY a.f + b.f DESC, x, y "
    "LIMIT 7",
    "SELECT a.v AS x, b.s AS y FROM t a LEFT JOIN t b ON a.k = b.k "
    "ORDER BY a.f, b.f NULLS FIRST, x LIMIT 5 OFFSET 11",
    "SELECT a.k2, b.v FROM t a JOIN t b ON a.k = b.k AND a.v < b.v ORDER BY b.v, a.k2 LIMIT 3",
])
def test_top_n_over_a_sliced_join_matches_duckdb(pieces, sql):
    t = _table(3000, 40)
    ctx = pqe.Context(threads=2)
    ctx.register_arrow("t", t)
    con = duckdb.connect()
    con.register("t", t)
    got = [tuple(r.values()) for r in ctx.sql(sql).to_pylist()]
    assert got == [tuple(r) for r in con.sql(sql).fetchall()]
    assert any(p is not None and len(p) > 10 for p in pieces), "the join did not run in pieces"


@pytest.mark.parametrize("fetch,offset", [(5, 0), (0, 0), (7, 100), (10, 1_000_000), (10, 89_995)])
def test_limit_over_a_sliced_join_stops_early(pieces, fetch, offset):
    """LIMIT without ORDER BY: any rows of the join, as many as there are; the slices after
    the limit is reached are never joined (EXPLAIN ANALYZE's join rows stay below all)."""
    t = pa.table({"k": pa.array(np.ones(300, dtype=np.int64)), "v": pa.array(np.arange(300))})
    ctx = pqe.Context(threads=1)
    ctx.register_arrow("t", t)
    sql = (f"SELECT a.v AS x, b.v AS y FROM t a JOIN t b ON a.k = b.k "
           f"LIMIT {fetch} OFFSET {offset}")
    got = ctx.sql(sql).to_arrow()
    assert got.num_rows == max(0, min(fetch, 90_000 - offset))
    pairs = set(zip(got.column("x").to_pylist(), got.column("y").to_pylist(), strict=True))
    assert len(pairs) == got.num_rows  # (distinct pairs of the join)
    text = "\n".join(ctx.sql("EXPLAIN ANALYZE " + sql).to_arrow().column(0).to_pylist())
    join_line = next((line for line in text.splitlines() if "HashJoin[" in line), None)
    if fetch == 0:
        return  # (LIMIT 0 plans no join at all)
    joined = int(join_line.split(" rows=")[1].split()[0])
    if offset + fetch < 80_000:
        assert joined < 90_000, text


@pytest.mark.parametrize("probe_key", [-0.0, float("nan")])
def test_float_hot_keys_are_counted_as_the_join_matches_them(pieces, probe_key):
    """-0.0 joins 0.0 (and any NaN any NaN): the count that slices the join and guards its
    output must match them too, or a hot key of -0.0 against 0.0 counted no matches and ran
    whole (50M rows took 3.2 GiB; a FULL JOIN of 900M rows was not refused)."""
    build_key = 0.0 if probe_key == 0 else float("nan")
    # a NaN of another bit pattern (the sign bit set) on the build side
    right = np.full(3000, build_key)
    if build_key != build_key:
        right = right.view(np.uint64) | np.uint64(1 << 63)
        right = right.view(np.float64)
    left = pa.table({"k": np.full(3000, probe_key)})
    cuts = joins.output_pieces(left, pa.table({"k": right}), "inner", ["k"], ["k"])
    assert cuts is not None and len(cuts) > 2  # 9M pairs: sliced
    matches = joins._matches_per_row(left, pa.table({"k": right}), ["k"], ["k"])
    assert matches.sum() == 3000 * 3000


def test_a_join_after_a_sliced_join_is_sliced_too(pieces):
    """A second hot-key join after a sliced one runs on slices of each slice's output: held
    whole, 4200 x 4200 x 60 rows grew to 4.7 GiB."""
    ctx = pqe.Context(threads=1)
    tables = {n: pa.table({"k": np.ones(m, dtype=np.int64), n + "v": np.arange(m)})
              for n, m in (("a", 60), ("b", 50), ("c", 40))}
    con = duckdb.connect()
    for n, t in tables.items():
        ctx.register_arrow(n, t)
        con.register(n, t)
    sql = ("SELECT count(*), sum(av + bv + cv) FROM a LEFT JOIN b ON a.k = b.k "
           "LEFT JOIN c ON b.k = c.k")
    largest = []
    real = joins.hash_join

    def spy(*args, **kw):
        out = real(*args, **kw)
        largest.append(out.num_rows)
        return out
    import pqe.kernels.join as J
    J.hash_join, saved = spy, real
    try:
        got = ctx.sql(sql).to_arrow()
    finally:
        J.hash_join = saved
    assert [tuple(r.values()) for r in got.to_pylist()] == con.sql(sql).fetchall()
    assert max(largest) <= 2 * 500 + 60, largest  # (no join output of more than ~2 slices)


@pytest.mark.parametrize("limit,offset", [(2**63 - 1, 5), (5, 2**63 - 1), (2**63 - 1, 2**63 - 1)])
def test_limits_at_bigint_max_over_a_sliced_join(pieces, limit, offset):
    t = pa.table({"k": np.ones(100, dtype=np.int64), "x": np.arange(100)})
    ctx = pqe.Context(threads=1)
    ctx.register_arrow("a", t)
    ctx.register_arrow("b", t)
    sql = (f"SELECT count(*) FROM (SELECT a.x FROM a JOIN b ON a.k = b.k "
           f"LIMIT {limit} OFFSET {offset})")
    assert ctx.sql(sql).to_arrow().column(0).to_pylist() == [max(0, 10_000 - offset)]
