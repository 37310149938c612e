"""Adaptive partial aggregation (kernels.aggregate.partial, AggregateExec.adaptive): a partial
aggregate whose partition barely reduces hands its rows on as one-row states instead of
hashing them. The states must be exactly what the hash partial would have made of one-row
groups, for every aggregate that can pass, so the final step's answers do not depend on
which path a partition took."""

from __future__ import annotations

import decimal
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.kernels import aggregate as agg
from pqe.kernels import decimals
from pqe.physical.plan import AggSpec
from pqe.testing import oracle
from pqe.testing.compare import compare

D = decimal.Decimal


def _table(n: int, repeat: int = 1, seed: int = 7) -> pa.Table:
    """n rows, each key `repeat` times (spread over the table, not adjacent), NULLs in every
    value column, NaN and -0.0 among the floats, values at the edge of DECIMAL(18) and BIGINT."""
    rng = np.random.default_rng(seed)
    keys = rng.permutation(np.arange(n) // repeat)
    nulls = rng.random(n) < 0.1
    f = rng.normal(size=n)
    f[rng.random(n) < 0.05] = np.nan
    f[rng.random(n) < 0.05] = -0.0
    big = rng.integers(-(10 ** 18) + 1, 10 ** 18, n)
    big[:3] = [10 ** 18 - 1, -(10 ** 18) + 1, 10 ** 18 - 1]
    i64 = rng.integers(-(2 ** 62), 2 ** 62, n)
    i64[:2] = [2 ** 63 - 1, -(2 ** 63)]
    words = np.array(["ä", "b", "ü̈", "", "zz"])[rng.integers(0, 5, n)]
    return pa.table({
        "k": pa.array(keys),
        # -0.0 and 0.0 in one group, two NaNs in one group, the other keys distinct
        "kf": pa.array(np.select([keys == 0, keys == 1, keys <= 3], [0.0, -0.0, np.nan],
                                 keys / 2.0)),
        "kd": pa.array(words).dictionary_encode(),
        "i": pa.array(i64, mask=nulls),
        "d": pa.array([None if z else D(int(v)) / 100 for v, z in zip(big, nulls)],
                      pa.decimal128(18, 2)),
        "f": pa.array(f, mask=nulls),
        "b": pa.array(rng.random(n) < 0.5, mask=nulls),
        "s": pa.array(words, mask=nulls),
    })


def _specs() -> list[AggSpec]:
    dec = pa.decimal128(18, 2)
    out = [AggSpec("count_star", None, "cs", pa.int64())]
    for col, dtype in (("i", pa.int64()), ("d", dec), ("f", pa.float64())):
        out += [AggSpec("count", col, f"c_{col}", pa.int64(), dtype),
                AggSpec("sum", col, f"s_{col}",
                        pa.float64() if col == "f" else pa.decimal128(38, 0 if col == "i" else 2),
                        dtype),
                AggSpec("avg", col, f"a_{col}", pa.float64(), dtype),
                AggSpec("min", col, f"lo_{col}", dtype, dtype),
                AggSpec("max", col, f"hi_{col}", dtype, dtype),
                AggSpec("any_value", col, f"any_{col}", dtype, dtype)]
    out += [AggSpec(fn, "f", f"{fn}_f", pa.float64(), pa.float64())
            for fn in ("stddev_samp", "stddev_pop", "var_samp", "var_pop")]
    out += [AggSpec("bool_and", "b", "and_b", pa.bool_(), pa.bool_()),
            AggSpec("bool_or", "b", "or_b", pa.bool_(), pa.bool_()),
            AggSpec("min", "s", "lo_s", pa.string(), pa.string()),
            AggSpec("max", "s", "hi_s", pa.string(), pa.string())]
    return out


def _sorted(t: pa.Table, keys) -> pa.Table:
    return t.sort_by([(k, "ascending") for k in keys])


@pytest.mark.parametrize("group", [("k",), ("kf",), ("kd", "k")], ids=["int", "float", "dict"])
def test_passed_rows_give_the_answers_of_hashed_ones(group):
    t = _table(50_000)
    specs = [s for s in _specs() if s.fn != "any_value"]  # any value: either may differ
    hashed = agg.final(agg.partial(t, group, specs), group, specs)
    passed_states = agg.partial(t, group, specs, adaptive=True)
    assert passed_states.num_rows == t.num_rows  # (nearly) every key once: the rows passed
    passed = agg.final(passed_states, group, specs)
    a, b = _sorted(hashed, group), _sorted(passed, group)
    for name in a.column_names:
        x, y = a.column(name), b.column(name)
        if pa.types.is_floating(x.type):  # sums of floats in another order
            xs, ys = x.to_numpy(zero_copy_only=False), y.to_numpy(zero_copy_only=False)
            assert np.allclose(xs, ys, rtol=1e-9, equal_nan=True), name
            assert (np.isnan(xs) == np.isnan(ys)).all(), name
        else:
            assert x.equals(y), name


def test_states_of_passed_rows_have_the_hash_partials_types():
    """Both kinds of state meet in one exchange and one final step: same columns, same types
    (a mixed concatenation must work, as a streamed partition's chunks may take both paths)."""
    t = _table(40_000)
    specs = _specs()
    passed = agg.partial(t, ("k",), specs, adaptive=True)
    hashed = agg.partial(_table(40_000, repeat=8), ("k",), specs, adaptive=True)
    assert passed.num_rows == 40_000 and hashed.num_rows == 5_000  # 8 rows a key: hashed
    assert passed.schema.names == hashed.schema.names
    assert passed.schema.types == hashed.schema.types
    both = agg.final(pa.concat_tables([passed, hashed]), ("k",), specs)
    assert both.num_rows == 40_000


def test_unscaled_int64_arguments_pass_as_decimal_states():
    """A fused projection may hand a summed decimal over as unscaled int64 (int64_sums)."""
    t = _table(40_000).select(["k", "d"])
    unscaled = t.set_column(1, "d", decimals.to_unscaled(t.column("d")))
    dec = pa.decimal128(18, 2)
    specs = [AggSpec("sum", "d", "s", pa.decimal128(38, 2), dec),
             AggSpec("avg", "d", "a", pa.float64(), dec)]
    want = agg.final(agg.partial(t, ("k",), specs), ("k",), specs)
    got = agg.final(agg.partial(unscaled, ("k",), specs, adaptive=True), ("k",), specs)
    assert _sorted(got, ["k"]).equals(_sorted(want, ["k"]))


def test_a_small_or_reducing_partition_is_hashed():
    specs = [AggSpec("count_star", None, "c", pa.int64())]
    small = _table(agg.PROBE_ROWS - 1)
    assert agg.partial(small, ("k",), specs, adaptive=True).num_rows == small.num_rows
    # 6 rows a key, spread over the partition: the strided sample sees the repeats
    reducing = _table(96_000, repeat=6)
    assert agg.partial(reducing, ("k",), specs, adaptive=True).num_rows == 16_000
    # 4 rows a key, next to each other (the lines of one ticket): the blocks see them
    adjacent = _table(64_000, repeat=4).sort_by("k")
    assert agg.partial(adjacent, ("k",), specs, adaptive=True).num_rows == 16_000
    # 2 rows a key pass
    pairs = _table(64_000, repeat=2)
    assert agg.partial(pairs, ("k",), specs, adaptive=True).num_rows == 64_000
    # without `adaptive` a partition never passes
    unique = _table(64_000)
    assert agg.partial(unique, ("k",), specs).num_rows == 64_000  # (hashed: all distinct)


def test_lists_and_user_aggregates_never_pass():
    t = _table(40_000)
    specs = [AggSpec("array_agg", "i", "l", pa.list_(pa.int64()), pa.int64())]
    assert not agg._passes(specs[0])
    out = agg.partial(t, ("k",), specs, adaptive=True)
    assert out.num_rows == 40_000 and pa.types.is_list(out.schema.field("l").type)


@pytest.fixture(params=[("threads", 4), ("sync", 1)], ids=["threads-4p", "sync-1p"])
def ctx(request):
    scheduler, partitions = request.param
    c = pqe.Context(scheduler, partitions=partitions)
    yield c
    c.close()


def test_queries_over_barely_reducing_groups_answer_as_duckdb(ctx):
    """SQL end to end: the plan marks the partial adaptive, EXPLAIN ANALYZE shows it passed
    its rows on, and the answers (NULL keys and values, NaN, -0.0 and 0.0 in one group) are
    DuckDB's. (The final step must be hash-partitioned, as for a large input: rows passed
    into one gathering task would make that task hash them all.)"""
    cfg = ctx.session.config
    ctx.session.config = replace(cfg, planner=replace(cfg.planner, gather_groups=0))
    n = 200_000
    rng = np.random.default_rng(3)
    k = rng.permutation(n).astype(np.int64)
    k[:100] = 5  # one group of many rows among the one-row groups
    f = rng.normal(size=n)
    f[::97] = np.nan
    t = pa.table({
        "k": pa.array(k, mask=rng.random(n) < 0.01),
        "kf": pa.array(np.where(k % 3 == 0, -0.0, np.where(k % 3 == 1, 0.0, k * 1.0))),
        "d": pa.array([D(int(v)) / 100 for v in rng.integers(-10 ** 17, 10 ** 17, n)],
                      pa.decimal128(18, 2)),
        "f": pa.array(f, mask=rng.random(n) < 0.05),
        "s": pa.array(np.array(["x", "ÿ", "längere"])[k % 3]),
    })
    ctx.register_arrow("adapt", t)
    con = oracle.connect()
    try:
        con.register("adapt", t)
        queries = [
            "SELECT k, kf, count(*) AS c, sum(d) AS sd, avg(d) AS ad, min(f) AS lo, "
            "max(f) AS hi, count(f) AS cf, stddev_samp(f) AS sf, max(s) AS ms "
            "FROM adapt GROUP BY k, kf",
            "SELECT c, count(*) AS n FROM (SELECT k, count(*) AS c FROM adapt GROUP BY k) "
            "GROUP BY c",
            "SELECT kf, sum(d) AS sd FROM (SELECT k, kf, d FROM adapt WHERE k < 150000) "
            "GROUP BY kf, k HAVING sum(d) > 0",
        ]
        for sql in queries:
            m = compare(ctx.sql(sql).to_arrow(), oracle.query(con, sql), sql=sql)
            assert m is None, str(m)
    finally:
        con.close()
    plan = "\n".join(ctx.sql("EXPLAIN ANALYZE SELECT k, sum(d) FROM adapt GROUP BY k")
                     .to_arrow().column(0).to_pylist())
    if "Aggregate[partial" in plan:  # (one partition aggregates in one step)
        line = next(x for x in plan.splitlines() if "Aggregate[partial" in x)
        assert "adaptive" in line, plan
        assert f"rows={n} " in line, plan  # every row passed on


def test_one_verdict_serves_a_nodes_partitions():
    """The first partition's probe decides for the partitions after it (AdaptiveProbe)."""
    specs = [AggSpec("count_star", None, "c", pa.int64())]
    probe = agg.AdaptiveProbe()
    assert agg.partial(_table(40_000), ("k",), specs, adaptive=probe).num_rows == 40_000
    assert probe.passes is True
    # a reducing partition after it passes too: the verdict stands (only speed depends on it)
    out = agg.partial(_table(40_000, repeat=8), ("k",), specs, adaptive=probe)
    assert out.num_rows == 40_000
    final = agg.final(out, ("k",), specs)
    assert final.num_rows == 5_000 and set(final.column("c").to_pylist()) == {8}
