"""Group keys taken from a dense join's build side (a dimension's brand, category, store name)
stay dictionary-encoded from the dimension's scan through the joins to the aggregate, which
groups by the indices and decodes the groups it outputs. The answers must be the text ones:
NULLs, unicode, a dimension of several row groups (each with its own dictionary), LEFT joins'
unmatched rows, a build whose key turns out not unique (the join falls back to Acero with an
encoded build), and columns that something else on the path reads (kept as text). Checked
against DuckDB."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe

duckdb = pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("enc")
    rng = np.random.default_rng(1)
    n, m = 200_000, 4000
    pq.write_table(pa.table({"f_item": pa.array(rng.integers(0, 5000, n)),
                             "f_v": pa.array(rng.integers(0, 100, n))}),
                   d / "fact.parquet", row_group_size=50_000)
    brands = np.array([f"brånd {i:03d} 🙂" for i in range(300)] + [None, ""], dtype=object)
    k = np.arange(m)
    # row groups of 1000 rows: each row group's dictionary holds other brands first
    pq.write_table(pa.table({"i_sk": pa.array(k), "i_brand": pa.array(brands[(k * 7) % 302]),
                             "i_cat": pa.array(np.array(["a", "b", "c"])[k % 3])}),
                   d / "dim.parquet", row_group_size=1000)
    dup = k.copy()
    dup[-1] = 5  # key 5 twice: not a perfect hash, found only when the build runs
    pq.write_table(pa.table({"i_sk": pa.array(dup), "i_brand": pa.array(brands[k % 302])}),
                   d / "dimdup.parquet", row_group_size=1000)
    return d


def _ctx(files, dim="dim"):
    ctx = pqe.Context(threads=2, partitions=3)
    ctx.register_parquet("fact", str(files / "fact.parquet"))
    ctx.register_parquet("dim", str(files / f"{dim}.parquet"))
    return ctx


def _expected(files, sql, dim="dim"):
    con = duckdb.connect()
    con.execute(f"CREATE VIEW fact AS SELECT * FROM '{files / 'fact.parquet'}'")
    con.execute(f"CREATE VIEW dim AS SELECT * FROM '{files / f'{dim}.parquet'}'")
    return con.execute(sql).fetchall()


def _rows(ctx, sql):
    return [tuple(r.values()) for r in ctx.sql(sql).to_pylist()]


def _dim_scan(ctx, sql):
    plan = ctx.sql(sql).explain().split("== Physical Plan ==")[1]
    return next(line for line in plan.splitlines() if "ParquetScan: dim" in line)


@pytest.mark.parametrize("sql", [
    "SELECT i_brand, i_cat, sum(f_v), count(*) FROM fact JOIN dim ON f_item = i_sk "
    "GROUP BY i_brand, i_cat ORDER BY 1 NULLS LAST, 2",
    # unmatched fact rows (items 4000..4999) make a NULL brand group with the NULL brands
    "SELECT i_brand, sum(f_v), count(*) FROM fact LEFT JOIN dim ON f_item = i_sk "
    "GROUP BY i_brand ORDER BY 1 NULLS LAST",
    "SELECT i_cat, max(f_v), avg(f_v) FROM fact JOIN dim ON f_item = i_sk "
    "WHERE f_v < 50 GROUP BY i_cat ORDER BY 1",
    # two builds, each with its own encoded key
    "SELECT a.i_brand, b.i_cat, count(*) FROM fact JOIN dim a ON f_item = a.i_sk "
    "JOIN dim b ON f_v = b.i_sk GROUP BY a.i_brand, b.i_cat ORDER BY 1 NULLS LAST, 2",
])
def test_build_side_group_keys_stay_encoded_and_answer_as_text(files, sql):
    ctx = _ctx(files)
    scan = _dim_scan(ctx, sql)
    assert "(encoded)" in scan, scan
    got = _rows(ctx, sql)
    assert got == [tuple(r) for r in _expected(files, sql)]
    assert all(isinstance(r[0], (str, type(None))) for r in got)


@pytest.mark.parametrize("sql, column", [
    # the brand is also compared: the condition needs the text
    ("SELECT i_brand, count(*) FROM fact JOIN dim ON f_item = i_sk AND i_brand <> f_v::VARCHAR "
     "GROUP BY i_brand ORDER BY 1 NULLS LAST", "i_brand"),
    # a computed key and an aggregate argument read the text
    ("SELECT upper(i_cat), count(*) FROM fact JOIN dim ON f_item = i_sk GROUP BY upper(i_cat) "
     "ORDER BY 1", "i_cat"),
    ("SELECT i_cat, min(i_brand), count(*) FROM fact JOIN dim ON f_item = i_sk GROUP BY i_cat "
     "ORDER BY 1", "i_brand"),
])
def test_a_column_something_else_reads_stays_text(files, sql, column):
    ctx = _ctx(files)
    assert f"{column} (encoded)" not in _dim_scan(ctx, sql)
    assert _rows(ctx, sql) == [tuple(r) for r in _expected(files, sql)]


def test_a_build_key_found_not_unique_falls_back_with_the_encoded_build(files):
    sql = ("SELECT i_brand, count(*), sum(f_v) FROM fact JOIN dim ON f_item = i_sk "
           "GROUP BY i_brand ORDER BY 1 NULLS LAST")
    ctx = _ctx(files, "dimdup")
    assert "(encoded)" in _dim_scan(ctx, sql)
    assert _rows(ctx, sql) == [tuple(r) for r in _expected(files, sql, "dimdup")]


def _hashed_final(ctx):
    """Partial aggregates, a hash exchange and a final step even for few groups."""
    from dataclasses import replace

    cfg = ctx.session.config
    ctx.session.config = replace(cfg, planner=replace(cfg.planner, gather_groups=0))
    return ctx


@pytest.mark.parametrize("sql", [
    # a key computed on the build side: the build encodes it; the probe rows repeat each of
    # the 4000 dimension rows ~50 times
    "SELECT b, f_v % 3 AS m, count(*), sum(f_v) FROM fact JOIN (SELECT i_sk, "
    "substr(i_brand, 1, 9) AS b FROM dim) d ON f_item = i_sk GROUP BY b, f_v % 3 "
    "ORDER BY 1 NULLS LAST, 2",
    "SELECT k, count(*) FROM fact LEFT JOIN (SELECT i_sk, upper(i_cat) || '/' || "
    "coalesce(i_brand, '?') AS k FROM dim) d ON f_item = i_sk GROUP BY k ORDER BY 1 NULLS LAST",
])
@pytest.mark.parametrize("hashed", [False, True], ids=["gathered", "hashed"])
def test_a_key_computed_on_the_build_side_is_encoded_by_the_build(files, sql, hashed):
    ctx = _ctx(files)
    if hashed:
        _hashed_final(ctx)
    plan = ctx.sql(sql).explain().split("== Physical Plan ==")[1]
    assert "encode=[" in plan, plan
    assert _rows(ctx, sql) == [tuple(r) for r in _expected(files, sql)]


def test_a_build_not_repeated_enough_is_not_encoded(files):
    """Encoding pays when the grouped rows repeat each build row often; a build about as large
    as the rows grouped keeps text (TPC-H Q10 lost time encoding its customers' comments)."""
    sql = ("SELECT upper(i_brand) AS b, count(*) FROM dim JOIN (SELECT DISTINCT f_item FROM "
           "fact) f ON f_item = i_sk GROUP BY 1 ORDER BY 1 NULLS LAST")
    ctx = _ctx(files)
    assert "encode=[" not in ctx.sql(sql).explain()
    assert _rows(ctx, sql) == [tuple(r) for r in _expected(files, sql)]


def test_partial_states_pass_encoded_keys_to_the_final_step(files):
    """Partial aggregates hand their dictionary keys on encoded (each partition with the
    dictionaries of its own row groups, NULL keys among them) and the final step unifies and
    decodes them."""
    sql = ("SELECT i_brand, i_cat, count(*), min(i_sk) FROM dim GROUP BY i_brand, i_cat "
           "ORDER BY 1 NULLS LAST, 2")
    ctx = _hashed_final(_ctx(files))
    assert "(encoded)" in _dim_scan(ctx, sql)
    assert _rows(ctx, sql) == [tuple(r) for r in _expected(files, sql)]


def test_unifying_dictionaries_ignores_what_lies_under_null_slots():
    """Acero's aggregate leaves an arbitrary index under its NULL group's key; Arrow's own
    unification read it and crashed the process (pyarrow 26). kernels.relational's reads
    only valid slots."""
    import numpy as np

    from pqe.kernels.relational import unify_dictionaries

    def chunk(values, indices, null_at):
        raw = np.array(indices, np.int32)
        raw[null_at] = -1_364_283_730  # what Acero left there
        valid = np.ones(len(raw), bool)
        valid[null_at] = False
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
        idx = pa.Array.from_buffers(pa.int32(), len(raw), [bitmap, pa.py_buffer(raw.tobytes())],
                                    null_count=1)
        return pa.DictionaryArray.from_arrays(idx, pa.array(values))

    col = pa.chunked_array([chunk(["a", "b", "ü"], [0, 1, 2, 0], 3),
                            chunk(["ü", "c"], [0, 1, 0], 0)])
    out = unify_dictionaries(pa.table({"k": col}))
    assert out.column("k").num_chunks == 2
    assert out.column("k").to_pylist() == ["a", "b", "ü", None, None, "c", "ü"]
    assert out.column("k").chunk(0).dictionary.equals(out.column("k").chunk(1).dictionary)


def test_an_outer_aggregate_does_not_hide_the_inner_ones_repeats(files):
    """Each aggregate's steps carry its own input estimate: an aggregate over a grouped
    subquery overwrote the inner one's, and the inner build's encoding went away."""
    inner = ("SELECT k, sum(f_v + i_sk) AS c FROM fact JOIN (SELECT i_sk, "
             "upper(i_cat) || coalesce(i_brand, '?') AS k FROM dim) d ON f_item = i_sk "
             "GROUP BY k")
    ctx = _ctx(files)
    assert "encode=[" in ctx.sql(inner).explain()
    sql = f"SELECT count(*), sum(c) FROM ({inner}) t"
    assert "encode=[" in ctx.sql(sql).explain()
    assert _rows(ctx, sql) == [tuple(r) for r in _expected(files, sql)]
