"""EXISTS / NOT EXISTS (and IN over a self-join) whose condition, beside equal keys, compares
one expression of each side (`t2.w <> t1.w`, `t2.w > t1.w`) are answered from the inner
side's MIN/MAX per key (optimizer.semi_join_extremes) instead of from every pair of a key.
Checked against DuckDB where that could go silently wrong: NULL keys, NULL compared values
(one NULL in a group, a group of NULLs only, a NULL outer value), values at int64's limits,
DECIMALs, text with unicode and '', dates, timestamps, booleans, floats with NaN and -0.0
(not rewritten, still right), two keys, terms over the outer side beside the comparison, the
comparison written either way round, every comparison operator, an inner side with other
rows than the outer, an empty inner side; on 1 and 3 partitions and sync. The plan shapes
that must not be rewritten are checked by EXPLAIN, and a key held by 40,000 rows of each
side (3.6G pairs) must answer in seconds."""

import datetime
import decimal
import time

import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.testing import oracle
from pqe.testing.compare import compare

BIG = 2 ** 63 - 1
_W = [5, 5, None, -BIG - 1, BIG, 7, 7, 7, 0, None, 3, 3, -1, 2, 2, None, 9, 9, BIG, 1,
      4, 4, 4, 4]
_K = [1, 1, 1, 1, 1, 2, 2, 2, 3, 3, None, None, 4, 4, 4, 5, 5, 5, 6, 6, 7, 7, 7, None]


def _table(seed: int, n: int = 24) -> pa.Table:
    rng = np.random.default_rng(seed)
    order = rng.permutation(n) if seed else np.arange(n)
    w = [_W[i] for i in order]
    k = [_K[i] for i in order]
    s_vals = ["a", "é", "", None, "b", "a", "zz", "é", "ß", None, "a", "B", "", "ö", "ö",
              "x", "y", "y", "a", "b", "q", "q", "q", "q"]
    f_vals = [0.0, -0.0, float("nan"), 1.5, None, -0.0, 0.0, float("nan"), 2.0, 2.0, 1.0,
              None, 3.0, -1.0, 1.0, 0.5, 0.5, float("nan"), 1e308, -1e308, 7.0, 7.0, 7.0,
              7.0]
    base = datetime.date(2020, 1, 1)
    return pa.table({
        "id": pa.array(range(seed * 100, seed * 100 + n), pa.int64()),
        "k": pa.array(k, pa.int64()),
        "k2": pa.array([None if x is None else f"g{x % 3}" for x in k], pa.string()),
        "w": pa.array(w, pa.int64()),
        "d": pa.array([None if x is None else decimal.Decimal(x % 1000) / 100 for x in w],
                      pa.decimal128(12, 2)),
        "s": pa.array([s_vals[i] for i in order], pa.string()),
        "dt": pa.array([None if x is None else base + datetime.timedelta(days=x % 50)
                        for x in w], pa.date32()),
        "ts": pa.array([None if x is None else datetime.datetime(2020, 1, 1, 0, 0, x % 60)
                        for x in w], pa.timestamp("us")),
        "b": pa.array([None if x is None else x % 2 == 0 for x in w], pa.bool_()),
        "f": pa.array([f_vals[i] for i in order], pa.float64()),
    })


T = _table(0)
U = _table(7)  # the same keys, other rows per key
EMPTY = T.slice(0, 0)
OPS = ["<>", "<", "<=", ">", ">="]
COLUMNS = ["w", "d", "s", "dt", "ts", "b", "f"]
SETUPS = [{"partitions": 1}, {"partitions": 3}, {"partitions": 3, "scheduler": "sync"}]


def _ctx(inner: pa.Table, **setup) -> pqe.Context:
    ctx = pqe.Context(**setup)
    ctx.register_arrow("t", T)
    ctx.register_arrow("u", inner)
    return ctx


@pytest.fixture(scope="module")
def duck():
    pytest.importorskip("duckdb")
    return {name: oracle.connect({"t": T, "u": inner})
            for name, inner in (("self", T), ("other", U), ("empty", EMPTY))}


def _check(duck, sql: str, setups=SETUPS) -> None:
    for name, inner in (("self", T), ("other", U), ("empty", EMPTY)):
        expected = oracle.query(duck[name], sql)
        for setup in setups:
            got = _ctx(inner, **setup).sql(sql).to_arrow()
            m = compare(got, expected, sql=sql)
            assert m is None, f"{sql} (inner side {name}, {setup}): {m}"


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("col", COLUMNS)
@pytest.mark.parametrize("form", ["EXISTS", "NOT EXISTS"])
def test_one_comparison_matches_duckdb(duck, form, col, op):
    _check(duck, f"SELECT t1.id FROM t t1 WHERE {form} "
                 f"(SELECT 1 FROM u t2 WHERE t2.k = t1.k AND t1.{col} {op} t2.{col})")


CONDITIONS = [
    "t2.k = t1.k AND t2.w <> t1.w",  # the inner side's value first
    "t2.k = t1.k AND t2.w > t1.w AND t1.w > 0",  # a term over the outer row
    "t2.k = t1.k AND t1.s <> t2.s AND t1.id % 2 = 0 AND t1.s IS NOT NULL",
    "t2.k = t1.k AND t2.k2 = t1.k2 AND t1.d < t2.d",  # two keys
    "t2.k2 = t1.k2 AND t1.dt <> t2.dt",  # a text key
    "t2.k = t1.k AND t1.w % 100 + 1 >= t2.w",  # an expression of the outer row
    "t2.k = t1.k AND t1.w <> t2.w % 100 + 1",  # of the inner one (integer arithmetic: not grouped)
    "t2.k = t1.k AND t1.w <> t2.w AND t2.s > 'a'",  # a term over the inner side (pushed)
    "t2.k = t1.k AND t1.w <> t2.w AND t1.s <> t2.s",  # two comparisons: not grouped
    "t2.k = t1.k AND (t1.w <> t2.w OR t1.s = t2.s)",  # an OR: not grouped
    "t2.k = t1.k AND CAST(t1.w AS DOUBLE) <> CAST(t2.w AS DOUBLE)",  # floats: not grouped
    "t2.k = t1.k AND t1.b <> t2.b",
    # integer % never fails (% 0 is NULL, -2^63 % -1 is 0) and / only by -1: grouped
    "t2.k = t1.k AND t2.w % 7 <> t1.w % 7",
    "t2.k = t1.k AND t1.w % 5 > t2.w % t2.k",
    "t2.k = t1.k AND t1.w % 3 <= t2.w % -1",
    "t2.k = t1.k AND t1.w < t2.w / 3",
    "t2.k = t1.k AND t1.w <> t2.w % 0",
]


@pytest.mark.parametrize("cond", CONDITIONS)
@pytest.mark.parametrize("form", ["EXISTS", "NOT EXISTS"])
def test_conditions_match_duckdb(duck, form, cond):
    _check(duck, f"SELECT t1.id FROM t t1 WHERE {form} (SELECT 1 FROM u t2 WHERE {cond})")


def test_in_over_a_self_join_matches_duckdb(duck):
    # TPC-DS Q95's shape: an IN over an inner self-join becomes a semi join with the
    # comparison in its condition
    _check(duck, "SELECT t1.id, t1.w FROM t t1 WHERE t1.k IN (SELECT a.k FROM u a JOIN u b "
                 "ON a.k = b.k AND a.w <> b.w) AND t1.w IS NOT NULL")
    _check(duck, "SELECT count(*), sum(t1.w % 1000) FROM t t1 WHERE t1.k NOT IN "
                 "(SELECT a.k FROM u a JOIN u b ON a.k = b.k AND a.s > b.s WHERE a.k IS NOT NULL)")


def _explain(sql: str, inner: pa.Table = T) -> str:
    return _ctx(inner).sql(sql).explain()


def _optimized(sql: str) -> str:
    text = _explain(sql)
    return text[text.index("== Optimized Logical Plan =="):text.index("== Physical Plan ==")]


def test_grouped_in_the_plan_only_where_it_holds():
    grouped = {
        "t1.w <> t2.w": ("min(", "max("),
        "t1.s < t2.s": ("max(",),
        "t2.dt < t1.dt": ("min(",),  # t1.dt > t2.dt
        "t1.d >= t2.d": ("min(",),
        "t2.w % 7 <> t1.w % 7": ("min((t2.w % 7))", "max((t2.w % 7))"),
        "t1.w > t2.w % t2.k": ("min((t2.w % t2.k))",),
        "t1.w < t2.w / 3": ("max((t2.w / 3))",),
    }
    for cmp, fns in grouped.items():
        plan = _optimized(f"SELECT t1.id FROM t t1 WHERE EXISTS (SELECT 1 FROM u t2 "
                          f"WHERE t2.k = t1.k AND {cmp})")
        assert all(fn in plan for fn in fns), (cmp, plan)
        assert "Aggregate: groupBy=[t2.k]" in plan, (cmp, plan)
    for cond in ["t1.f <> t2.f", "t1.w <> t2.w % 100 + 1", "t1.w <> t2.w AND t1.s <> t2.s",
                 "(t1.w <> t2.w OR t1.s = t2.s)", "t1.w <> t2.w + random()",
                 # -2^63 / -1 overflows; / by a column may be / -1
                 "t1.w <> t2.w / -1", "t1.w <> t2.w / t2.k", "t1.w <> t2.d % 7"]:
        plan = _optimized(f"SELECT t1.id FROM t t1 WHERE EXISTS (SELECT 1 FROM u t2 "
                          f"WHERE t2.k = t1.k AND {cond})")
        assert "Aggregate" not in plan, (cond, plan)
    # a float key: -0.0 and 0.0 join, but need not group together
    ctx = pqe.Context()
    ctx.register_arrow("t", T)
    plan = ctx.sql("SELECT t1.id FROM t t1 WHERE EXISTS (SELECT 1 FROM t t2 "
                   "WHERE t2.f = t1.f AND t1.w <> t2.w)").explain()
    assert "min(" not in plan
    # an inner side already one row per key is left as it is (and not grouped again)
    plan = _optimized("SELECT t1.id FROM t t1 WHERE EXISTS (SELECT 1 FROM (SELECT k, "
                      "max(w) AS m FROM u GROUP BY k) g WHERE g.k = t1.k AND g.m > t1.w)")
    assert plan.count("Aggregate") == 1, plan


def test_small_outer_side_keeps_the_pairs():
    # a few outer rows meet few inner rows: grouping every inner row would cost more
    ctx = pqe.Context()
    n = 50_000
    ctx.register_arrow("big", pa.table({"k": np.arange(n) // 10, "w": np.arange(n) % 7}))
    ctx.register_arrow("few", pa.table({"k": [1, 2, 3], "w": [0, 1, 2]}))
    sql = ("SELECT f.k FROM few f WHERE EXISTS (SELECT 1 FROM big b WHERE b.k = f.k "
           "AND b.w <> f.w)")
    text = ctx.sql(sql).explain()
    assert "min(" not in text
    assert sorted(ctx.sql(sql).to_arrow().column(0).to_pylist()) == [1, 2, 3]


def test_a_key_held_by_many_rows_of_each_side():
    # 60,000 rows of one key on each side: 3.6G pairs to check (20 s and more); grouped, the
    # inner side is one row for that key
    pytest.importorskip("duckdb")
    rng = np.random.default_rng(3)
    n, hot = 180_000, 60_000
    k = rng.integers(0, n // 4, n)
    k[:hot] = 7
    t = pa.table({"k": k, "w": rng.integers(0, 5, n), "s": pa.array(
        rng.choice(["a", "b", "c"], n))})
    ctx = pqe.Context()
    ctx.register_arrow("t", t)
    con = oracle.connect({"t": t})
    for sql in ["SELECT count(*) FROM t t1 WHERE EXISTS (SELECT 1 FROM t t2 "
                "WHERE t1.k = t2.k AND t1.w <> t2.w)",
                "SELECT count(*) FROM t t1 WHERE NOT EXISTS (SELECT 1 FROM t t2 "
                "WHERE t1.k = t2.k AND t1.s < t2.s)"]:
        start = time.perf_counter()
        got = ctx.sql(sql).to_arrow()
        took = time.perf_counter() - start
        assert compare(got, oracle.query(con, sql), sql=sql) is None
        assert took < 10, f"{took:.1f} s: {sql}"


# ---- a small preserved side hashed against a big one (execution's build-left semi join) ----
#
# The optimizer leaves the pairs where the outer side is small (above); a small outer side may
# still crowd onto a key the inner side holds many rows of, so each partition of the inner side
# answers from its own extremes per key (kernels.join.matched_row_ids_by_extremes).

def _shifted(seed: int) -> pa.Table:
    """_table(seed), its keys moved past t's on odd seeds (the big side then holds many more
    keys than t has rows, and the optimizer leaves the pairs)."""
    t = _table(seed)
    if seed % 2:
        t = t.set_column(1, "k", pa.compute.add(t.column("k"), 1000 * seed))
        t = t.set_column(2, "k2", pa.compute.binary_join_element_wise(
            t.column("k2"), pa.scalar(str(seed)), "_"))
    return t


BIG = pa.concat_tables([_shifted(s) for s in range(1, 121)])  # 2,880 rows: ~60 per t key


@pytest.fixture(scope="module")
def big_side(tmp_path_factory):
    path = tmp_path_factory.mktemp("semi") / "big.parquet"
    import pyarrow.parquet as pq

    pq.write_table(BIG, path, row_group_size=500)  # (text read dictionary-encoded, 6 groups)
    duck = oracle.connect({"t": T, "big": BIG})
    return path, duck


def _big_ctx(path, source: str, **setup) -> pqe.Context:
    ctx = pqe.Context(**setup)
    ctx.register_arrow("t", T)
    if source == "arrow":
        ctx.register_arrow("big", BIG)
    else:
        ctx.register_parquet("big", str(path))
    return ctx


BIG_SETUPS = [{"partitions": 3}, {"partitions": 4, "scheduler": "sync"}]


def _check_big(big_side, sql: str, per_key: bool | None = None) -> None:
    path, duck = big_side
    expected = oracle.query(duck, sql)
    for source in ("arrow", "parquet"):
        for setup in BIG_SETUPS:
            ctx = _big_ctx(path, source, **setup)
            text = ctx.sql(sql).explain()
            logical = text[:text.index("== Physical Plan ==")]
            plan = text[text.index("== Physical Plan =="):]
            # the case under test: the optimizer left the pairs, the small side is hashed
            assert "build_left" in plan and "min(" not in logical and "max(" not in logical, text
            if per_key is not None:
                assert ("per_key=[" in plan) is per_key, text
            got = ctx.sql(sql).to_arrow()
            m = compare(got, expected, sql=sql)
            assert m is None, f"{sql} ({source}, {setup}): {m}"


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("col", COLUMNS)
@pytest.mark.parametrize("form", ["EXISTS", "NOT EXISTS"])
def test_small_outer_side_per_partition_matches_duckdb(big_side, form, col, op):
    _check_big(big_side, f"SELECT t1.id FROM t t1 WHERE {form} (SELECT 1 FROM big t2 "
                         f"WHERE t2.k = t1.k AND t1.{col} {op} t2.{col})", per_key=col != "f")


@pytest.mark.parametrize("cond", CONDITIONS)
@pytest.mark.parametrize("form", ["EXISTS", "NOT EXISTS"])
def test_small_outer_side_conditions_match_duckdb(big_side, form, cond):
    _check_big(big_side, f"SELECT t1.id FROM t t1 WHERE {form} (SELECT 1 FROM big t2 "
                         f"WHERE {cond})")


def test_small_outer_side_on_a_hot_key_answers_quickly():
    # 2,000 outer rows on the key 200,000 inner rows hold: 400M pairs (2.4 s as pairs; DuckDB
    # 0.03 s); from each inner partition's extremes it is a grouping of its rows
    pytest.importorskip("duckdb")
    rng = np.random.default_rng(5)
    n, hot, m = 1_000_000, 200_000, 2_000
    k = rng.integers(0, n // 4, n)
    k[:hot] = 7
    big = pa.table({"k": k, "w": rng.integers(0, 5, n)})
    few = pa.table({"k": np.full(m, 7), "w": rng.integers(0, 5, m)})
    ctx = pqe.Context()
    ctx.register_arrow("big", big)
    ctx.register_arrow("few", few)
    con = oracle.connect({"big": big, "few": few})
    for sql in ["SELECT count(*) FROM few f WHERE EXISTS (SELECT 1 FROM big b "
                "WHERE b.k = f.k AND b.w <> f.w)",
                "SELECT count(*) FROM few f WHERE NOT EXISTS (SELECT 1 FROM big b "
                "WHERE b.k = f.k AND b.w > f.w)"]:
        assert "build_left" in ctx.sql(sql).explain()
        start = time.perf_counter()
        got = ctx.sql(sql).to_arrow()
        took = time.perf_counter() - start
        assert compare(got, oracle.query(con, sql), sql=sql) is None
        assert took < 0.6, f"{took:.2f} s: {sql}"


def test_extremes_kernel_reads_dictionary_columns():
    # a scan hands text over dictionary-encoded, one dictionary per chunk: Acero has no MIN
    # or MAX of a dictionary column, nor compares one with its values in the residual
    import pyarrow.compute as pc

    from pqe.kernels import join as J

    probe = pa.table({"k": [1, 1, 2, 2, 3, None], "y": pa.chunked_array(
        [pa.array(["a", "b"]).dictionary_encode(),
         pa.array(["c", "d", None, "e"]).dictionary_encode()])})
    build = pa.table({"bk": [1, 2, 3, 4, None], "x": pa.array(["a", "c", "e", "q", "z"])
                      .dictionary_encode(), J.ROW_ID: [0, 1, 2, 3, 4]})
    lo, hi = pc.field(J.EXTREME_PREFIX + "min"), pc.field(J.EXTREME_PREFIX + "max")
    ne = (pc.field("x") != lo) | (pc.field("x") != hi)
    got = J.matched_row_ids_by_extremes(probe, build, ["k"], ["bk"], pc.field("y"),
                                        ("min", "max"), ne)
    # key 1 holds a, b; key 2 c, d; key 3 NULL only (its extremes NULL: no match); the NULL
    # key's e matches nothing; key 4 is held by no probe row
    assert sorted(got.column(J.ROW_ID).to_pylist()) == [0, 1]
    got = J.matched_row_ids_by_extremes(probe, build, ["k"], ["bk"], pc.field("y"),
                                        ("max",), pc.field("x") < hi)
    assert sorted(got.column(J.ROW_ID).to_pylist()) == [0, 1]  # a < b, c < d
    got = J.matched_row_ids_by_extremes(probe, build, ["k"], ["bk"], pc.field("y"),
                                        ("min",), pc.field("x") > lo)
    assert got.num_rows == 0


def test_small_outer_side_on_wide_keys_matches_duckdb():
    # 8-byte keys sharing their low 32 bits are folded on both sides before hashing
    # (kernels.join._match_keys), in the per-partition grouping as in the joins
    pytest.importorskip("duckdb")
    rng = np.random.default_rng(9)
    n = 60_000
    k = rng.integers(0, 20_000, n) << 40
    big = pa.table({"k": k, "w": rng.integers(-3, 3, n), "s": pa.array(
        rng.choice(["a", "é", "", "zz"], n))})
    few = pa.table({"k": np.array([0, 1, 1, 5, 19_999, 30_000]) << 40,
                    "w": [0, 1, -3, 2, 9, 0], "s": ["a", "", "é", "zz", "b", "a"]})
    ctx = pqe.Context(partitions=3)
    ctx.register_arrow("big", big)
    ctx.register_arrow("few", few)
    con = oracle.connect({"big": big, "few": few})
    for sql in ["SELECT f.k, f.w FROM few f WHERE EXISTS (SELECT 1 FROM big b "
                "WHERE b.k = f.k AND b.w > f.w)",
                "SELECT f.k, f.s FROM few f WHERE NOT EXISTS (SELECT 1 FROM big b "
                "WHERE b.k = f.k AND f.s <> b.s)"]:
        assert "build_left" in ctx.sql(sql).explain()
        assert compare(ctx.sql(sql).to_arrow(), oracle.query(con, sql), sql=sql) is None
