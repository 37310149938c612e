"""Broadcast hash joins (inner, semi) drop the probe rows whose integer key the build does not
have before hashing (kernels.dense_join.KeyFilter: the build's distinct values of its
sparsest integer key, made once per query). The filter only ever drops rows no build row can
match: every answer must equal DuckDB's, with NULL keys, negative keys, keys of several
integer types, residual conditions, several key pairs and builds too dense to filter."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.kernels import dense_join


def _tables(seed: int, probe_type=pa.int64(), build_type=pa.int64()):
    rng = np.random.default_rng(seed)
    n_probe, n_build = 40_000, 2_000
    a = rng.integers(-50_000, 50_000, n_probe)
    b = rng.integers(0, 20, n_probe)
    probe = pa.table({
        "a": pa.array(a, mask=rng.random(n_probe) < 0.05).cast(probe_type, safe=False),
        "b": pa.array(b, mask=rng.random(n_probe) < 0.05),
        "v": pa.array(rng.integers(0, 1000, n_probe)),
        "s": pa.array([f"r{i % 97}" for i in range(n_probe)]),
    })
    # the build's a: 1,500 values of the 100,000 (sparse), some repeated; b: all of 0..19
    ba = rng.choice(rng.integers(-50_000, 50_000, 1_500), n_build)
    build = pa.table({
        "a2": pa.array(ba, mask=rng.random(n_build) < 0.05).cast(build_type, safe=False),
        "b2": pa.array(rng.integers(0, 20, n_build)),
        "w": pa.array(rng.integers(0, 1000, n_build)),
    })
    return probe, build


QUERIES = [
    "select p.a, p.b, p.v, q.w from p join q on p.a = q.a2",
    "select p.a, p.v, q.w from p join q on p.a = q.a2 and p.b = q.b2",
    "select p.a, p.v, q.w from p join q on p.b = q.b2 and p.a = q.a2 and p.v < q.w",
    "select p.a, p.s from p where p.a in (select a2 from q)",
    "select p.a, p.v from p where exists (select 1 from q where q.a2 = p.a and q.b2 = p.b)",
    "select count(*), sum(p.v) from p join q on p.a = q.a2 where p.s <> 'r3'",
]


def _ctx(probe, build):
    ctx = pqe.Context(partitions=4)
    ctx.register_arrow("p", probe)
    ctx.register_arrow("q", build)
    con = duckdb.connect()
    con.register("p", probe)
    con.register("q", build)
    return ctx, con


def _rows(table: pa.Table):
    return sorted(map(tuple, zip(*table.to_pydict().values())), key=repr)


@pytest.mark.parametrize("types", [(pa.int64(), pa.int64()), (pa.int32(), pa.int64()),
                                   (pa.int64(), pa.int32()), (pa.int16(), pa.int32())])
@pytest.mark.parametrize("sql", QUERIES)
def test_key_filter_matches_duckdb(sql, types):
    probe, build = _tables(3, *types)
    ctx, con = _ctx(probe, build)
    plan = ctx.sql(sql).explain()
    assert "key_filter=[" in plan, plan
    assert _rows(ctx.sql(sql).to_arrow()) == _rows(con.sql(sql).arrow().read_all())


def test_key_filter_drops_rows_before_the_join(monkeypatch):
    """The filter runs, on the sparse key, and drops most probe rows; the join still
    answers as DuckDB does."""
    probe, build = _tables(5)
    ctx, con = _ctx(probe, build)
    seen = []
    real = dense_join.filter_by_keys

    def spy(table, key_filter, keys):
        out = real(table, key_filter, keys)
        seen.append((key_filter.position if key_filter else None, table.num_rows,
                     out.num_rows))
        return out

    monkeypatch.setattr(dense_join, "filter_by_keys", spy)
    sql = QUERIES[1]
    assert _rows(ctx.sql(sql).to_arrow()) == _rows(con.sql(sql).arrow().read_all())
    assert seen and {pos for pos, _, _ in seen} == {0}  # a (sparse), not b (dense)
    before, after = sum(s[1] for s in seen), sum(s[2] for s in seen)
    assert before == probe.num_rows and after < before // 10


def test_build_key_filter_picks_the_sparsest_key_and_skips_dense_ones():
    t = pa.table({"dense": pa.array(np.arange(1000) % 500),
                  "sparse": pa.array(np.arange(1000) * 37),
                  "text": pa.array([str(i) for i in range(1000)])})
    kf = dense_join.build_key_filter(t, ("dense", "sparse"))
    assert kf is not None and kf.position == 1
    assert dense_join.build_key_filter(t, ("dense",)) is None  # fills its whole range
    assert dense_join.build_key_filter(t, ("text",)) is None
    assert dense_join.build_key_filter(t.slice(0, 0), ("sparse",)) is None


def test_filter_by_keys_edges():
    lo = -2**63
    build = pa.table({"k": pa.array([lo, lo + 10, lo + 500], pa.int64())})
    kf = dense_join.build_key_filter(build, ("k",))
    assert kf is not None
    probe = pa.table({"k": pa.array([lo, None, lo + 10, 2**63 - 1, lo + 11, lo + 499],
                                    pa.int64())})
    out = dense_join.filter_by_keys(probe, kf, ("k",))
    assert out.column("k").to_pylist() == [lo, lo + 10]
    # UBIGINT keys past int64 equal no build key; the join decides whatever the filter keeps
    big = pa.table({"k": pa.array([2**64 - 1, 5], pa.uint64())})
    assert dense_join.filter_by_keys(big, kf, ("k",)).column("k").to_pylist() in ([], [2**64 - 1])
    # a chunked probe key, a sliced chunk (offset into its buffers), NULLs over stale values
    chunked = pa.table({"k": pa.chunked_array([[lo + 500, 1], [None, lo]], pa.int64())})
    assert dense_join.filter_by_keys(chunked, kf, ("k",)).column("k").to_pylist() == \
        [lo + 500, lo]
    sliced = pa.array([lo + 1, lo + 10, None, lo + 500], pa.int64()).slice(1)
    out = dense_join.filter_by_keys(pa.table({"k": sliced}), kf, ("k",))
    assert out.column("k").to_pylist() == [lo + 10, lo + 500]
    # narrower probe types than the build's
    small = pa.table({"k": pa.array([1, 2, 3, 40, None], pa.int8())})
    kf = dense_join.build_key_filter(pa.table({"k": pa.array([2, 40, 90], pa.int64())}), ("k",))
    assert dense_join.filter_by_keys(small, kf, ("k",)).column("k").to_pylist() == [2, 40]


def test_a_big_probe_scan_streams_through_the_key_filter(tmp_path, monkeypatch):
    """A probe partition of more than KEY_FILTER_STREAM_CHUNKS chunks is read a chunk at a
    time, each filtered before the next is read (the hash join, whose build is too big to
    stream, then sees only the kept rows); a smaller one is read whole. EXPLAIN ANALYZE shows
    the join's output rows once, not the filter's too."""
    import pyarrow.parquet as pq

    from pqe.execution import ops
    from pqe.kernels import scan

    probe, build = _tables(11)
    pq.write_table(probe, tmp_path / "p.parquet", row_group_size=1_000)
    ctx = pqe.Context(partitions=2)
    ctx.register_parquet("p", str(tmp_path / "p.parquet"))
    ctx.register_arrow("q", build)
    con = duckdb.connect()
    con.register("p", probe)
    con.register("q", build)
    reads = []
    real = scan.chunk_units
    monkeypatch.setattr(scan, "chunk_units",
                        lambda units, rows: reads.append(len(real(units, rows))) or real(units, rows))
    monkeypatch.setattr(ops, "STREAM_ROWS", 2_000)
    sql = QUERIES[1]
    for chunks, streams in ((4, True), (20, False)):
        monkeypatch.setattr(ops, "KEY_FILTER_STREAM_CHUNKS", chunks)
        reads.clear()
        got = ctx.sql(sql).to_arrow()
        assert _rows(got) == _rows(con.sql(sql).arrow().read_all())
        assert (bool(reads) and max(reads) > 1) == streams, reads
    monkeypatch.setattr(ops, "KEY_FILTER_STREAM_CHUNKS", 4)
    text = ctx.sql(sql).explain(analyze=True)
    join = next(line for line in text.splitlines() if "key_filter=" in line)
    assert f"rows={got.num_rows} " in join, join
