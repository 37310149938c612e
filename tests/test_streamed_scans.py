"""A task whose scan reads many row groups runs its row-wise prefix (filters, projections,
probes of small builds, partial aggregates) one chunk of row groups at a time
(execution.ops._run_streamed), so it holds one chunk's decoded columns, not its partition's.

Chunked or not, every answer must be the same: these tests shrink the chunk to a few row
groups and compare each query with DuckDB reading the same file, and with pqe unchunked."""

from __future__ import annotations

import decimal
import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe
from pqe.execution import ops
from pqe.kernels import scan
from pqe.testing import oracle
from pqe.testing.compare import compare

N = 20_000
ROW_GROUP = 700


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("streamed")
    rng = np.random.default_rng(7)
    k = rng.integers(0, 50, N)
    big = pa.table({
        "id": pa.array(np.arange(N), pa.int64()),
        "k": pa.array(k, pa.int64()),
        # many groups: a partial aggregate barely reduces a chunk
        "hi": pa.array(rng.integers(0, N // 2, N), pa.int64()),
        "v": pa.array([None if i % 13 == 0 else float(x) for i, x in
                       enumerate(rng.normal(size=N))], pa.float64()),
        "d": pa.array([decimal.Decimal(int(x)) / 100 for x in rng.integers(-10**6, 10**6, N)],
                      pa.decimal128(12, 2)),
        "s": pa.array([None if i % 17 == 0 else ["naïve", "日本", "x", "", "ß"][i % 5]
                       for i in range(N)], pa.string()),
        "big": pa.array([2**62 if i % 1000 == 0 else i for i in range(N)], pa.int64()),
    })
    small = pa.table({"k": pa.array(range(0, 50, 2), pa.int64()),
                      "name": pa.array([f"n{i}" for i in range(0, 50, 2)])})
    pq.write_table(big, d / "big.parquet", row_group_size=ROW_GROUP)
    pq.write_table(small, d / "small.parquet")
    return d


QUERIES = [
    "SELECT id, v * 2 AS w, s FROM big WHERE v > 0.5 AND s <> 'x'",
    "SELECT count(*), sum(d), min(s), max(v), avg(v) FROM big WHERE d > 0",
    "SELECT k, count(*), sum(d), avg(v), count(DISTINCT s) FROM big GROUP BY k",
    "SELECT hi, count(*), sum(v) FROM big GROUP BY hi",
    "SELECT s, string_agg(CAST(id AS VARCHAR), ',' ORDER BY id) FROM big WHERE id % 97 = 0 GROUP BY s",
    "SELECT b.id, b.k, s.name FROM big b JOIN small s ON b.k = s.k WHERE b.v < 0",
    "SELECT b.id, s.name FROM big b LEFT JOIN small s ON b.k = s.k WHERE b.id % 3 = 0",
    "SELECT count(*) FROM big b WHERE b.k IN (SELECT k FROM small)",
    "SELECT count(*) FROM big b WHERE b.k NOT IN (SELECT k FROM small)",
    "SELECT s.name, count(*), sum(b.d) FROM big b JOIN small s ON b.k = s.k GROUP BY s.name",
    "SELECT a.id FROM big a JOIN big b ON a.id = b.hi WHERE a.k = 3",  # a filtered scan alone
    "SELECT b.k, count(*) FROM big b JOIN big c ON b.id = c.hi WHERE b.s = 'x' AND c.v > 0 "
    "GROUP BY b.k",
    "SELECT sum(big) FROM big",
    "SELECT k, sum(big) FROM big GROUP BY k",
]


def _context(scheduler, files, partitions=None):
    ctx = pqe.Context(scheduler, partitions=partitions)
    ctx.register_parquet("big", str(files / "big.parquet"))
    ctx.register_parquet("small", str(files / "small.parquet"))
    return ctx


@pytest.fixture(params=[("threads", 2), ("sync", None)], ids=["threads-2p", "sync"])
def ctx(request, files):
    c = _context(request.param[0], files, request.param[1])
    yield c
    c.close()


@pytest.fixture
def chunked(monkeypatch):
    """Chunks of two row groups, and a record of every chunked read."""
    monkeypatch.setattr(ops, "STREAM_ROWS", 2 * ROW_GROUP - 100)
    monkeypatch.setattr(ops, "STREAM_BUILD_SHARE", 1)
    monkeypatch.setattr(ops, "STREAM_MIN_CHUNKS", 2)
    reads = []
    real = scan.chunk_units

    def record(units, chunk_rows):
        out = real(units, chunk_rows)
        reads.append(len(out))
        return out

    monkeypatch.setattr(scan, "chunk_units", record)
    return reads


def test_chunked_answers_match_duckdb_and_unchunked(ctx, files, chunked):
    con = oracle.connect()
    try:
        for t in ("big", "small"):
            con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{files / t}.parquet')")
        for sql in QUERIES:
            chunked.clear()
            got = ctx.sql(sql).to_arrow()
            assert chunked and max(chunked) > 1, f"not chunked: {sql}"
            m = compare(got, oracle.query(con, sql), sql=sql)
            assert m is None, str(m)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(ops, "STREAM_ROWS", 1 << 40)
                chunked.clear()
                whole = ctx.sql(sql).to_arrow()
                assert not chunked or max(chunked) == 1
            assert compare(got, whole, sql=sql) is None, sql
    finally:
        con.close()


def test_chunked_overflow_is_still_an_error(ctx, chunked):
    with pytest.raises(pqe.ExecutionError, match="overflow"):
        ctx.sql("SELECT sum(big * 4) FROM big").to_arrow()


def test_explain_analyze_counts_every_chunk(ctx, chunked):
    """Each op's rows in EXPLAIN ANALYZE are summed over the chunks: the scan reports every
    row it read and the filter what it kept."""
    text = "\n".join(r["plan"] for r in ctx.sql(
        "EXPLAIN ANALYZE SELECT count(*) FROM big WHERE v > 0").to_pylist())
    kept = ctx.sql("SELECT count(*) AS n FROM big WHERE v > 0").to_pylist()[0]["n"]
    assert chunked and max(chunked) > 1
    scan_line = next(line for line in text.splitlines() if "ParquetScan: big" in line)
    assert f"rows={kept}" in scan_line, scan_line


def test_a_partial_aggregate_of_many_groups_is_not_run_per_chunk(files, chunked, monkeypatch):
    """GROUP BY hi keeps about half of each chunk's rows: after the first chunk the task keeps
    the inputs and aggregates once (so the final step does not merge ~N states per chunk)."""
    calls = []
    real = ops.Aggregate.run

    def run(self, data, inputs):
        if self.mode == "partial":
            calls.append(data.num_rows)
        return real(self, data, inputs)

    monkeypatch.setattr(ops.Aggregate, "run", run)
    ctx = _context("sync", files, partitions=2)  # partial aggregates, two partitions
    try:
        ctx.sql("SELECT hi, count(*) FROM big GROUP BY hi").to_arrow()
        high = list(calls)
        calls.clear()
        ctx.sql("SELECT k, count(*) FROM big GROUP BY k").to_arrow()
        low = list(calls)
    finally:
        ctx.close()
    assert sum(high) == N and sum(low) == N
    assert len(low) > 8  # 50 groups: each chunk aggregated as it is read
    assert len(high) <= 4  # per partition: the first chunk, then the rest at once


@pytest.fixture
def footers(monkeypatch):
    """An empty footer cache for the test, and the file of every footer parsed into it."""
    import collections

    monkeypatch.setattr(scan, "_FOOTERS", collections.OrderedDict())
    monkeypatch.setattr(scan, "_footer_bytes", 0)
    parsed = []
    real = scan._remember_footer

    def record(key, fragment):
        parsed.append((key[1], key[5]))
        return real(key, fragment)

    monkeypatch.setattr(scan, "_remember_footer", record)
    return parsed


def test_a_footer_is_parsed_once_for_every_chunk_and_query(ctx, files, chunked, footers):
    """Each chunked read of some row groups is a subset of one fragment holding the parsed
    footer (a footer parse per chunk cost SF10's lineitem 4.4 ms a chunk); the answers stay
    DuckDB's."""
    con = oracle.connect()
    try:
        con.execute(f"CREATE VIEW big AS SELECT * FROM read_parquet('{files / 'big'}.parquet')")
        for sql in ("SELECT count(*), sum(d), max(v) FROM big WHERE v > 0",
                    "SELECT k, count(*) FROM big WHERE s <> 'x' GROUP BY k"):
            for _ in range(2):
                chunked.clear()
                got = ctx.sql(sql).to_arrow()
                assert chunked and sum(chunked) > 4
                assert compare(got, oracle.query(con, sql), sql=sql) is None
    finally:
        con.close()
    big = str(files / "big.parquet")
    # one parse per way of reading the file (plain, and with `s` read as a dictionary)
    assert sorted(footers) == [(big, ("parquet", ())), (big, ("parquet", ("s",)))], footers


def test_a_rewritten_file_is_read_anew_not_through_its_old_footer(tmp_path, footers):
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": pa.array(range(1000), pa.int64())}), p, row_group_size=100)
    ctx = pqe.Context(partitions=3)
    try:
        ctx.register_parquet("t", str(p))
        assert ctx.sql("SELECT sum(a) AS s FROM t").to_pylist() == [{"s": sum(range(1000))}]
        # different row groups, rows and values at the same path
        pq.write_table(pa.table({"a": pa.array(range(0, 3000, 2), pa.int64())}), p,
                       row_group_size=70)
        os.utime(p, ns=(time.time_ns() + 10**9,) * 2)
        assert ctx.sql("SELECT sum(a) AS s, count(*) AS n FROM t").to_pylist() == \
            [{"s": sum(range(0, 3000, 2)), "n": 1500}]
    finally:
        ctx.close()
    assert [f for f, _ in footers] == [str(p), str(p)]


def test_the_footer_cache_is_bounded(tmp_path, footers, monkeypatch):
    monkeypatch.setattr(scan, "FOOTER_CACHE_FILES", 2)
    ctx = pqe.Context("sync")
    try:
        for i in range(4):
            p = tmp_path / f"t{i}.parquet"
            pq.write_table(pa.table({"a": pa.array(range(i, 100), pa.int64())}), p,
                           row_group_size=10)
            ctx.register_parquet(f"t{i}", str(p))
            assert ctx.sql(f"SELECT sum(a) AS s FROM t{i}").to_pylist() == \
                [{"s": sum(range(i, 100))}]
    finally:
        ctx.close()
    assert len(footers) == 4 and len(scan._FOOTERS) == 2
    assert scan._footer_bytes == sum(f.metadata.serialized_size for f in scan._FOOTERS.values())


def test_filters_on_nullable_columns_run_after_the_read(tmp_path, monkeypatch):
    """A filter on a nullable column of a large read runs on the read table (the scanner's
    own filter took 4x the read: TPC-DS Q82); one reading a text column nothing else needs
    stays in the scanner, which never holds that column; a small read keeps the scanner's.
    Either way the answers are DuckDB's: NULL never passes a comparison, IS NULL keeps it."""
    n = 150_000
    rng = np.random.default_rng(3)
    q = rng.integers(0, 1000, n)
    t = pa.table({
        "id": pa.array(np.arange(n), pa.int64()),
        "q": pa.array([None if i % 11 == 0 else int(x) for i, x in enumerate(q)], pa.int32()),
        "s": pa.array([None if i % 7 == 0 else f"w{int(x) % 50}" for i, x in enumerate(q)]),
        "d": pa.array([None if i % 5 == 0 else decimal.Decimal(int(x)) / 4 for i, x in enumerate(q)],
                      pa.decimal128(9, 2)),
    })
    path = tmp_path / "t.parquet"
    pq.write_table(t, path, row_group_size=30_000)
    pq.write_table(t.slice(0, 5_000), tmp_path / "small.parquet")
    ctx = pqe.Context(threads=2)
    ctx.register_parquet("t", str(path))
    ctx.register_parquet("small", str(tmp_path / "small.parquet"))
    con = oracle.connect()
    con.execute(f"CREATE VIEW t AS SELECT * FROM read_parquet('{path}')")
    con.execute(f"CREATE VIEW small AS SELECT * FROM read_parquet('{tmp_path / 'small.parquet'}')")

    seen = []
    read = scan._read_unit

    def spy(provider, fmt, unit, row_groups, schema, read_cols, expr, *rest):
        seen.append((unit.path.rsplit("/", 1)[-1], expr is not None))
        return read(provider, fmt, unit, row_groups, schema, read_cols, expr, *rest)

    monkeypatch.setattr(scan, "_read_unit", spy)
    cases = [
        ("SELECT count(*), sum(id) FROM t WHERE q BETWEEN 100 AND 500", False),
        ("SELECT id, q FROM t WHERE q >= 990 OR q IS NULL ORDER BY id LIMIT 50", False),
        ("SELECT count(*) FROM t WHERE NOT (q > 5) AND id < 100000", False),
        ("SELECT count(*) FROM t WHERE q IN (1, 2, 3, 999)", False),
        ("SELECT count(*) FROM t WHERE s LIKE 'w1%'", None),  # dictionary filter: its own path
        ("SELECT count(*), sum(id) FROM t WHERE s > 'w3' AND q < 500", None),
        ("SELECT count(*) FROM small WHERE q BETWEEN 100 AND 500", True),
    ]
    for sql, inside in cases:
        seen.clear()
        assert compare(ctx.sql(sql).to_arrow(), oracle.query(con, sql), sql=sql) is None, sql
        if inside is not None:
            assert seen and all(flag is inside for _, flag in seen), (sql, seen)
