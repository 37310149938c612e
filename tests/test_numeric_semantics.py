"""Overflow semantics: no kernel wraps silently; SUM and AVG are exact (PostgreSQL's rules).

sum(smallint/integer) is BIGINT (an error when it does not fit), sum(bigint) DECIMAL(38,0),
sum(decimal(p,s)) DECIMAL(38,s) (an error past 38 digits), avg of integers and decimals a
DOUBLE from an exact sum. Each case runs threaded, with the sync scheduler and over four
partitions (two-phase aggregation), on in-memory tables and on tables made by CREATE TABLE
and INSERT, and is compared with DuckDB.
"""

from __future__ import annotations

import decimal
import random

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.kernels import aggregate as agg
from pqe.kernels import decimals
from pqe.physical.plan import AggSpec
from pqe.testing import oracle
from tests.helpers import assert_same

D = decimal.Decimal
I64_MAX, I64_MIN = 2 ** 63 - 1, -(2 ** 63)
P62 = 2 ** 62
BIG38 = D("9" * 36 + ".25")  # 38 digits at scale 2
NEG38 = D("-" + "9" * 36 + ".25")  # (NEG38 would round to the context's 28 digits)


def _exact_sum(values):
    with decimal.localcontext() as c:
        c.prec = 100
        return sum(v for v in values if v is not None)

CONTEXTS = {
    "threaded": lambda: pqe.Context(),
    "sync": lambda: pqe.Context(scheduler="sync"),
    "partitions4": lambda: pqe.Context(partitions=4),
}

# id, k, v (BIGINT): group 1 is four 2^62 (Arrow's int64 sum: 0); group 2 cancels at the
# limits; group 3 crosses 2^63 and comes back; group 4 is -2^63 alone; group 5 only NULLs;
# group 6 sums to 2^63 - 1 exactly (no false overflow near the limit)
BIG_ROWS = [
    (1, 1, P62), (2, 1, P62), (3, 1, P62), (4, 1, P62),
    (5, 2, I64_MAX), (6, 2, I64_MAX), (7, 2, I64_MIN), (8, 2, I64_MIN),
    (9, 3, I64_MAX), (10, 3, 1), (11, 3, -1),
    (12, 4, I64_MIN),
    (13, 5, None), (14, 5, None),
    (15, 6, I64_MAX - 10), (16, 6, 5), (17, 6, 5),
]
# id, k, i (INTEGER), s (SMALLINT)
INT_ROWS = [(j, j % 3, 2 ** 31 - 1 if j % 2 else -(2 ** 31), 32767 if j % 2 else -32768)
            for j in range(1, 40)]
# id, k, d (DECIMAL(38,2)): sums of 38-digit values that fit only because they cancel
DEC_ROWS = [
    (1, 1, BIG38), (2, 1, NEG38), (3, 1, BIG38), (4, 1, NEG38), (5, 1, D("0.01")),
    (6, 2, BIG38), (7, 2, D("-1.10")), (8, 2, None),
    (9, 3, NEG38), (10, 3, D("12345678901234567890.12")),
]


def _duck() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET integer_division = true")
    con.execute("SET default_null_order = 'nulls_last_on_asc_first_on_desc'")
    con.execute("SET error_on_division_by_zero = false")
    con.execute("SET threads = 2")
    return con


def _arrow_tables() -> dict[str, pa.Table]:
    big = list(zip(*BIG_ROWS, strict=True))
    ints = list(zip(*INT_ROWS, strict=True))
    dec = list(zip(*DEC_ROWS, strict=True))
    return {
        "big": pa.table({"id": pa.array(big[0], pa.int64()), "k": pa.array(big[1], pa.int64()),
                         "v": pa.array(big[2], pa.int64())}),
        "ints": pa.table({"id": pa.array(ints[0], pa.int64()), "k": pa.array(ints[1], pa.int64()),
                          "i": pa.array(ints[2], pa.int32()), "s": pa.array(ints[3], pa.int16())}),
        "dec": pa.table({"id": pa.array(dec[0], pa.int64()), "k": pa.array(dec[1], pa.int64()),
                         "d": pa.array(dec[2], pa.decimal128(38, 2))}),
    }


_DDL = {
    "big": "CREATE TABLE big (id BIGINT, k BIGINT, v BIGINT)",
    "ints": "CREATE TABLE ints (id BIGINT, k BIGINT, i INTEGER, s SMALLINT)",
    "dec": "CREATE TABLE dec (id BIGINT, k BIGINT, d DECIMAL(38,2))",
}
_ROWS = {"big": BIG_ROWS, "ints": INT_ROWS, "dec": DEC_ROWS}


def _insert_sql(name: str) -> str:
    def lit(v):
        if isinstance(v, D) and v < 0:  # (the binder folds -<38 digits> at 28 digits)
            return f"(0 - {str(v)[1:]})"
        return "NULL" if v is None else str(v)
    return f"INSERT INTO {name} VALUES " + ", ".join(
        "(" + ", ".join(lit(v) for v in r) + ")" for r in _ROWS[name])


@pytest.fixture(scope="module")
def duck():
    con = _duck()
    for name, t in _arrow_tables().items():
        con.register(f"{name}_arrow", t)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow")
    return con


@pytest.fixture(scope="module", params=[(c, how) for c in CONTEXTS for how in ("arrow", "sql")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def ctx(request):
    kind, how = request.param
    c = CONTEXTS[kind]()
    for name, t in _arrow_tables().items():
        if how == "arrow":
            c.register_arrow(name, t)
        else:
            c.sql(_DDL[name])
            c.sql(_insert_sql(name))
    return c


def _check(ctx, duck, sql: str, types: list[pa.DataType] | None = None, ordered: bool = False):
    got = ctx.sql(sql).to_arrow()
    want = oracle.query(duck, sql)   # DuckDB's type names: a HUGEINT is not a DECIMAL(38,0)
    assert_same(got, want, ordered=ordered, rel=1e-12)
    if types is not None:
        assert [f.type for f in got.schema] == types, got.schema
    return got


DEC38_0 = pa.decimal128(38, 0)
DEC38_2 = pa.decimal128(38, 2)


# ---- SUM / AVG of BIGINT ------------------------------------------------------------------


def test_sum_bigint_group_by_is_exact_decimal(ctx, duck):
    got = _check(ctx, duck, "SELECT k, sum(v) AS s, avg(v) AS a, count(v) AS c FROM big "
                 "GROUP BY k ORDER BY k", [pa.int64(), DEC38_0, pa.float64(), pa.int64()],
                 ordered=True)
    sums = dict(zip(got.column("k").to_pylist(), got.column("s").to_pylist(), strict=True))
    assert sums == {1: 4 * P62, 2: -2, 3: I64_MAX, 4: I64_MIN, 5: None, 6: I64_MAX}


def test_sum_bigint_without_group_by(ctx, duck):
    got = _check(ctx, duck, "SELECT sum(v) AS s, avg(v) AS a FROM big", [DEC38_0, pa.float64()])
    assert got.column("s")[0].as_py() == sum(r[2] for r in BIG_ROWS if r[2] is not None)


def test_sum_bigint_many_rows_of_2_pow_62():
    """100,000 rows of 2^62, grouped and not, in key order (the sorted-run path) and shuffled
    (the hash path): two-limb sums."""
    n = 100_000
    k = np.arange(n) % 3
    for keys in (np.sort(k), k):
        t = pa.table({"k": keys, "v": np.full(n, P62, dtype=np.int64)})
        for c in CONTEXTS.values():
            ctx = c()
            ctx.register_arrow("t", t)
            got = ctx.sql("SELECT k, sum(v) AS s, avg(v) AS a FROM t GROUP BY k "
                          "ORDER BY k").to_pylist()
            counts = np.bincount(keys)
            assert got == [{"k": i, "s": D(int(counts[i]) * P62), "a": float(P62)}
                           for i in range(3)]
            total = ctx.sql("SELECT sum(v) AS s FROM t").to_pylist()
            assert total == [{"s": D(n * P62)}]


def test_sum_near_int64_limit_is_no_false_overflow(ctx, duck):
    _check(ctx, duck, "SELECT sum(v) AS s FROM big WHERE k = 6", [DEC38_0])
    _check(ctx, duck, "SELECT sum(v) AS s FROM big WHERE k IN (3, 4)", [DEC38_0])


# ---- SUM / AVG of INTEGER and SMALLINT ----------------------------------------------------


def test_sum_integer_and_smallint_are_bigint(ctx, duck):
    _check(ctx, duck, "SELECT k, sum(i) AS si, sum(s) AS ss, avg(i) AS ai, avg(s) AS a2 "
           "FROM ints GROUP BY k", [pa.int64(), pa.int64(), pa.int64(), pa.float64(), pa.float64()])
    _check(ctx, duck, "SELECT sum(i) AS si, sum(s) AS ss FROM ints", [pa.int64(), pa.int64()])


def test_sum_integer_overflowing_bigint_fails():
    """Partial states are exact DECIMAL(38,0); the final BIGINT is checked, never wrapped
    (2^32 INTEGER rows are needed to get there through SQL: the states are made here)."""
    spec = AggSpec("sum", "a", "s", pa.int64(), pa.int32())
    assert agg.state_names(spec) == ["s", "s.w"]  # the sum, how often it wrapped past 2^128

    def states(*vals):
        return pa.table({"s": pa.array([D(v) for v in vals], DEC38_0), "s.w": [0] * len(vals)})
    with pytest.raises(pqe.Error, match="BIGINT"):
        agg.final(states(I64_MAX, 1), (), (spec,))
    assert agg.final(states(I64_MAX, 1, -1), (), (spec,)).to_pylist() == [{"s": I64_MAX}]


# ---- SUM of DECIMAL(38,s) -------------------------------------------------------------------


def test_sum_decimal38_is_exact(ctx, duck):
    _check(ctx, duck, "SELECT k, sum(d) AS s, avg(d) AS a FROM dec GROUP BY k",
           [pa.int64(), DEC38_2, pa.float64()])
    got = _check(ctx, duck, "SELECT sum(d) AS s FROM dec", [DEC38_2])
    assert got.column("s")[0].as_py() == _exact_sum(r[2] for r in DEC_ROWS)


def test_sum_decimal38_exact_when_running_totals_pass_38_digits():
    """Limb sums are carried only at the end: a running total past 10^38 (past 2^127, where
    DuckDB's HUGEINT sum fails) does not matter when the sum fits."""
    vals = [BIG38, BIG38, NEG38, NEG38, D("0.03"), BIG38]
    ctx = pqe.Context(scheduler="sync")
    ctx.register_arrow("t", pa.table({"d": pa.array(vals, DEC38_2), "k": [1] * 6}))
    assert ctx.sql("SELECT sum(d) AS s FROM t").to_pylist() == [{"s": _exact_sum(vals)}]
    assert ctx.sql("SELECT k, sum(d) AS s FROM t GROUP BY k").to_pylist() == [
        {"k": 1, "s": _exact_sum(vals)}]


def test_sum_decimal38_partial_sums_past_2_pow_127_are_carried_across_partitions():
    """One partition's partial sum wraps past 2^127 (two values near 10^38), the next one's
    does not (one near -10^38): the sum fits, and only carrying the first state's wrap gets
    it. The final step skips summing wraps only when every one is 0."""
    from dataclasses import replace

    vals = [BIG38, BIG38, NEG38, D("0.01"), D("0.03"), NEG38, BIG38, D("-1.00")]
    ctx = pqe.Context(threads=2)
    ctx.session.config = replace(ctx.session.config, planner=replace(
        ctx.session.config.planner, min_partition_rows=1, target_partitions=4, gather_groups=0))
    ctx.register_arrow("t", pa.table({"d": pa.array(vals, DEC38_2),
                                      "k": [1, 1, 1, 1, 2, 2, 2, 2]}))
    plan = ctx.sql("SELECT k, sum(d) AS s FROM t GROUP BY k").explain()
    assert "Aggregate[partial]" in plan and "partitions=4" in plan, plan
    got = ctx.sql("SELECT k, sum(d) AS s FROM t GROUP BY k ORDER BY k").to_pylist()
    assert got == [{"k": 1, "s": _exact_sum(vals[:4])}, {"k": 2, "s": _exact_sum(vals[4:])}]
    assert ctx.sql("SELECT sum(d) AS s FROM t").to_pylist() == [{"s": _exact_sum(vals)}]


def test_sum_decimal38_past_38_digits_fails(ctx):
    with pytest.raises(pqe.Error, match=r"DECIMAL\(38,2\)"):
        ctx.sql("SELECT sum(d) FROM dec WHERE d > 0 AND k <= 2").to_arrow()
    with pytest.raises(pqe.Error, match=r"DECIMAL\(38,2\)"):
        ctx.sql("SELECT k, sum(d) FROM dec WHERE d > 0 GROUP BY k").to_arrow()


def test_sum_decimal_product_past_int64_falls_back_exactly():
    """A fused projection computes decimal products on int64 and hands them to the
    aggregate unscaled; a product past int64 reruns on decimal128, still summed exactly
    (DuckDB fails on this product: the answer is checked against Python's)."""
    a, b = D("999999999999999.99"), D("99999999.99")
    t = pa.table({"a": pa.array([a] * 6, pa.decimal128(17, 2)),
                  "b": pa.array([b] * 6, pa.decimal128(10, 2)), "k": [1, 2, 1, 2, 1, 2]})
    with decimal.localcontext() as dc:
        dc.prec = 60
        want = a * b * 3
    for c in CONTEXTS.values():
        ctx = c()
        ctx.register_arrow("prod_t", t)
        got = ctx.sql("SELECT k, sum(a * b) AS s, avg(a * b) AS m FROM prod_t GROUP BY k "
                      "ORDER BY k").to_pylist()
        assert [(r["k"], r["s"]) for r in got] == [(1, want), (2, want)]
        assert [r["m"] for r in got] == pytest.approx([float(a * b)] * 2, rel=1e-15)


# ---- window SUM -----------------------------------------------------------------------------


def test_window_sum_bigint_running_and_whole_partition(ctx, duck):
    _check(ctx, duck, "SELECT id, sum(v) OVER (PARTITION BY k ORDER BY id) AS run, "
           "sum(v) OVER (PARTITION BY k) AS whole, avg(v) OVER (PARTITION BY k) AS a, "
           "sum(v) OVER (ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) AS moving "
           "FROM big ORDER BY id", [pa.int64(), DEC38_0, DEC38_0, pa.float64(), DEC38_0],
           ordered=True)


def test_window_sum_integer_is_bigint(ctx, duck):
    _check(ctx, duck, "SELECT id, sum(i) OVER (ORDER BY id) AS run, sum(s) OVER () AS whole "
           "FROM ints ORDER BY id", [pa.int64(), pa.int64(), pa.int64()], ordered=True)


def test_window_sum_decimal38(ctx, duck):
    _check(ctx, duck, "SELECT id, sum(d) OVER (PARTITION BY k ORDER BY id) AS run, "
           "avg(d) OVER (PARTITION BY k) AS a FROM dec WHERE k = 1 ORDER BY id",
           [pa.int64(), DEC38_2, pa.float64()], ordered=True)
    with pytest.raises(pqe.Error, match=r"DECIMAL\(38,2\)"):
        ctx.sql("SELECT sum(d) OVER (ORDER BY id) FROM dec WHERE d > 0").to_arrow()


# ---- integer arithmetic and other kernels: errors, never wrapping -----------------------------


@pytest.mark.parametrize("sql", [
    "SELECT v + v FROM big WHERE k = 1",
    "SELECT v * 2 FROM big WHERE k = 1",
    "SELECT v - 1 FROM big WHERE k = 4",
    "SELECT -v FROM big WHERE k = 4",
    "SELECT abs(v) FROM big WHERE k = 4",
    "SELECT v / -1 FROM big WHERE k = 4",
    "SELECT round(v, -1) FROM big WHERE id = 5",
    "SELECT sum(v + v) FROM big WHERE k = 1",
    "SELECT sum(v * 4) OVER () FROM big WHERE k = 1",
])
def test_bigint_arithmetic_overflow_raises(ctx, sql):
    with pytest.raises(pqe.Error, match="overflow"):
        ctx.sql(sql).to_arrow()


def test_integer_kernels_at_the_limits(ctx, duck):
    _check(ctx, duck, "SELECT id, v % -1 AS m, sign(v) AS g "
           "FROM big WHERE v IS NOT NULL ORDER BY id", ordered=True)
    # FLOOR/CEIL of an integer is the integer itself, an exact BIGINT in pqe (DuckDB 2.0 and
    # PostgreSQL answer a DOUBLE, which rounds values past 2^53)
    got = ctx.sql("SELECT v, floor(v) AS f, ceil(v) AS c FROM big WHERE v IS NOT NULL").to_arrow()
    assert got.schema.field("f").type == got.schema.field("c").type == pa.int64()
    assert got.column("f").to_pylist() == got.column("c").to_pylist() == got.column("v").to_pylist()


def test_date_arithmetic_does_not_wrap():
    ctx = pqe.Context()
    got = ctx.sql("SELECT DATE '2020-03-01' - DATE '1970-01-01' AS d").to_pylist()
    assert got == [{"d": 18322}]
    for sql in ["SELECT DATE '2020-01-31' + INTERVAL '100000000000 months'",
                "SELECT DATE '2020-01-31' + INTERVAL '1000000000000000000 months'",
                "SELECT TIMESTAMP '2020-01-31' + INTERVAL '1000000000 days'",
                "SELECT TIMESTAMP '2020-01-31' + INTERVAL '1000000000 months'"]:
        with pytest.raises(pqe.Error, match="out of range|overflow"):
            ctx.sql(sql).to_arrow()


def test_dense_join_probe_keys_at_the_limits():
    """The dense join subtracts the smallest build key from probe keys in int64: keys at
    the limits wrap, but never onto a slot (no false match)."""
    build = pa.table({"bk": pa.array(np.arange(-5, 50), pa.int64()), "x": np.arange(55)})
    probe = pa.table({"pk": pa.array([I64_MIN, I64_MAX, I64_MIN + 3, 7, None], pa.int64())})
    for c in CONTEXTS.values():
        ctx = c()
        ctx.register_arrow("b", build)
        ctx.register_arrow("p", probe)
        got = ctx.sql("SELECT pk, x FROM p JOIN b ON pk = bk").to_pylist()
        assert got == [{"pk": 7, "x": 12}]
        got = ctx.sql("SELECT pk, x FROM p LEFT JOIN b ON pk = bk ORDER BY pk").to_pylist()
        assert [r["x"] for r in got] == [None, None, 12, None, None]


# ---- the limb machinery -----------------------------------------------------------------------


def test_limb_sums_match_python_integers():
    rng = random.Random(7)
    picks = [I64_MAX, I64_MIN, P62, -P62, 0, 1, -1]
    for n in (1, 5, 1000):
        vals = [rng.choice(picks) if rng.random() < 0.5 else rng.randint(I64_MIN, I64_MAX)
                for _ in range(n)]
        parts, _ = decimals.limbs(pa.array(vals, pa.int64()))
        out = decimals.decimal_from_limb_sums([p.sum(keepdims=True) for p in parts], DEC38_0)
        assert out.to_pylist() == [D(sum(vals))]
    wide = [int(str(BIG38).replace(".", "")), int(str(NEG38).replace(".", "")), 10 ** 37,
            -(10 ** 36) + 7]
    for combo in ([0, 0, 2, 3], [0, 2, 1, 3], [3, 3, 0, 2]):
        vals = [wide[i] for i in combo]
        parts, _ = decimals.limbs(pa.array([D(f"{v}e-2") for v in vals], DEC38_2))
        assert len(parts) == 4
        total = sum(vals)
        if abs(total) < 10 ** 38:
            out = decimals.decimal_from_limb_sums([p.sum(keepdims=True) for p in parts], DEC38_2)
            assert out.to_pylist() == [D(f"{total}e-2")]
        else:
            with pytest.raises(pqe.Error, match="overflow"):
                decimals.decimal_from_limb_sums([p.sum(keepdims=True) for p in parts], DEC38_2)
