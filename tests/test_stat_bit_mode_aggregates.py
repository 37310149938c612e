"""CORR, COVAR_POP / COVAR_SAMP, REGR_*, BIT_AND / BIT_OR / BIT_XOR and MODE.

They were refused ("unknown function" for BIT_OR). Each is checked against DuckDB over many
groups, on one partition and on seven with the partial states hash-exchanged before the final
step (gather_groups=0), so the states' combining is exercised as well as their making. Where
pqe follows the SQL standard and PostgreSQL instead of DuckDB (CORR, REGR_SLOPE / INTERCEPT
of a variable that does not vary: NULL, where DuckDB gives NaN), the test says so.
"""
from __future__ import annotations

import decimal
import math
from dataclasses import replace
from fractions import Fraction

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import pqe

PAIR = ["covar_pop", "covar_samp", "corr", "regr_slope", "regr_intercept", "regr_r2",
        "regr_count", "regr_avgx", "regr_avgy", "regr_sxx", "regr_syy", "regr_sxy"]


def _ctx(partitions: int, exchanged: bool = False) -> pqe.Context:
    ctx = pqe.Context(partitions=partitions)
    if exchanged:  # partial states hash-exchanged, then combined (not gathered in one task)
        cfg = ctx.session.config
        ctx.session.config = replace(cfg, planner=replace(cfg.planner, gather_groups=0))
    return ctx


def _rows(ctx: pqe.Context, sql: str) -> list[tuple]:
    return [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()]


def _close(a, b, rel=1e-9, abs_=1e-9) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)
    return a == b


def _same(got: list[tuple], want: list[tuple], **tol) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert all(_close(a, b, **tol) for a, b in zip(g, w, strict=True)), (g, w)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    n = 6_000
    g = rng.integers(0, 40, n)
    x = rng.normal(50, 20, n).round(3)
    y = (3.5 * x + rng.normal(0, 15, n)).round(3)
    xn = np.where(rng.random(n) < 0.1, np.nan, x)  # NULL below, not NaN
    yn = np.where(rng.random(n) < 0.1, np.nan, y)
    t = pa.table({
        "g": pa.array(g),
        "h": pa.array(rng.integers(0, 3, n).astype(np.int32)),
        "x": pa.array(xn, mask=np.isnan(xn)),
        "y": pa.array(yn, mask=np.isnan(yn)),
        "i": pa.array(rng.integers(-10**6, 10**6, n)),
        "d": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**7, 10**7, n)],
                      pa.decimal128(12, 2)),
        "b32": pa.array(rng.integers(-2**31, 2**31, n).astype(np.int32),
                        mask=rng.random(n) < 0.05),
        "u64": pa.array(rng.integers(0, 2**63, n).astype(np.uint64) * np.uint64(2)
                        + rng.integers(0, 2, n).astype(np.uint64)),
        "i8": pa.array(rng.integers(-128, 128, n).astype(np.int8)),
        # MODE: per group, one value more frequent than the others
    "m": pa.array(np.where(rng.random(n) < 0.3, g * 7 % 11, rng.integers(0, 40, n))),
        "fu": pa.array(rng.permutation(n) / 7.0 - 300.0, mask=rng.random(n) < 0.05),
        "s": pa.array(rng.choice(["ä", "b", "ß", "", "日本", "b "], n),
                      mask=rng.random(n) < 0.05),
    })
    con = duckdb.connect()
    con.register("t", t)
    return t, con


@pytest.fixture(scope="module", params=[(1, False), (7, True)], ids=["one", "seven_exchanged"])
def ctx(request, data):
    t, _ = data
    c = _ctx(*request.param)
    c.register_arrow("t", pa.Table.from_batches(t.to_batches(max_chunksize=700)))
    return c


@pytest.mark.parametrize("fn", PAIR)
def test_pair_statistics_by_group_match_duckdb(ctx, data, fn):
    _, con = data
    sql = f"SELECT g, {fn}(y, x), {fn}(i, d), {fn}(x, i) FROM t GROUP BY g ORDER BY g"
    _same(_rows(ctx, sql), con.sql(sql).fetchall())


@pytest.mark.parametrize("fn", PAIR)
def test_pair_statistics_of_the_whole_table_match_duckdb(ctx, data, fn):
    _, con = data
    sql = f"SELECT {fn}(y, x), {fn}(x, y) FILTER (WHERE h = 1), {fn}(y, x) FILTER (WHERE g < 0) FROM t"
    _same(_rows(ctx, sql), con.sql(sql).fetchall())


def test_pair_statistics_with_rollup_having_and_order(ctx, data):
    _, con = data
    sql = ("SELECT g, h, corr(y, x) AS r, regr_slope(y, x) AS s, regr_count(y, x) AS n FROM t "
           "GROUP BY ROLLUP (g, h) HAVING regr_count(y, x) > 5 "
           "ORDER BY corr(y, x) DESC, g NULLS LAST, h NULLS LAST")
    _same(_rows(ctx, sql), con.sql(sql).fetchall())


def test_only_pairs_with_both_values_count():
    sql = ("SELECT regr_count(y, x), regr_avgx(y, x), regr_avgy(y, x), covar_pop(y, x), "
           "regr_sxx(y, x) FROM (VALUES (1, 2), (NULL, 3), (2, NULL), (4, 5)) v(y, x)")
    got = _rows(pqe.Context(), sql)
    assert got == [(2, 3.5, 2.5, 2.25, 4.5)]
    assert got == duckdb.sql(sql).fetchall()


def test_a_large_common_offset_does_not_cancel_the_digits():
    """Sums of products minus products of sums lose everything at 1e9 + small deviations;
    the co-moment from each group's mean keeps them. Exact values from fractions."""
    xs = [10**9 + k for k in range(1, 8)]
    ys = [2 * 10**9 + 3 * k + (k % 2) for k in range(1, 8)]
    n = len(xs)
    mx, my = Fraction(sum(xs), n), Fraction(sum(ys), n)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    values = ", ".join(f"({y}.0, {x}.0)" for x, y in zip(xs, ys))
    sql = (f"SELECT covar_samp(y, x), regr_slope(y, x), regr_sxy(y, x) "
           f"FROM (VALUES {values}) v(y, x)")
    for ctx in (_ctx(1), _ctx(3, True)):
        got = _rows(ctx, sql)[0]
        assert got[0] == pytest.approx(float(sxy / (n - 1)), rel=1e-12)
        assert got[1] == pytest.approx(float(sxy / sxx), rel=1e-12)
        assert got[2] == pytest.approx(float(sxy), rel=1e-12)


def test_a_variable_without_spread_follows_the_standard():
    """x constant: CORR, REGR_SLOPE, REGR_INTERCEPT and REGR_R2 are NULL (SQL standard,
    PostgreSQL; DuckDB: NaN for CORR and REGR_SLOPE). y constant: REGR_R2 is 1, CORR NULL.
    0.1 three times has a mean that rounds (0.30000000000000004 / 3): its spread is still
    exactly 0."""
    x_still = "(VALUES (1.0, 0.1), (2.0, 0.1), (4.0, 0.1)) v(y, x)"
    got = _rows(pqe.Context(), f"SELECT corr(y, x), regr_slope(y, x), regr_intercept(y, x), "
                               f"regr_r2(y, x), regr_sxx(y, x), covar_pop(y, x) FROM {x_still}")
    assert got == [(None, None, None, None, 0.0, 0.0)]
    y_still = "(VALUES (0.1, 1.0), (0.1, 2.0), (0.1, 4.0)) v(y, x)"
    got = _rows(pqe.Context(), f"SELECT corr(y, x), regr_slope(y, x), regr_r2(y, x), "
                               f"regr_syy(y, x), regr_sxy(y, x) FROM {y_still}")
    assert got == [(None, 0.0, 1.0, 0.0, 0.0)]
    assert duckdb.sql(f"SELECT regr_slope(y, x), regr_r2(y, x) FROM {y_still}").fetchall() \
        == [(0.0, 1.0)]


def test_one_pair_and_no_pairs():
    one = "(VALUES (1.0, 2.0)) v(y, x)"
    got = _rows(pqe.Context(), f"SELECT covar_pop(y, x), covar_samp(y, x), regr_count(y, x), "
                               f"regr_avgx(y, x), regr_sxx(y, x) FROM {one}")
    assert got == [(0.0, None, 1, 2.0, 0.0)]
    none = _rows(pqe.Context(), "SELECT corr(y, x), regr_count(y, x), covar_pop(y, x) "
                                "FROM (VALUES (1.0, 2.0)) v(y, x) WHERE y > 5")
    assert none == [(None, 0, None)]
    assert duckdb.sql("SELECT corr(y, x), regr_count(y, x), covar_pop(y, x) "
                      "FROM (VALUES (1.0, 2.0)) v(y, x) WHERE y > 5").fetchall() == none


def test_nan_and_infinity_propagate():
    got = _rows(pqe.Context(), "SELECT covar_pop(y, x), corr(y, x), regr_count(y, x) FROM "
                               "(VALUES (1.0, 2.0), ('NaN'::DOUBLE, 3.0)) v(y, x)")
    assert math.isnan(got[0][0]) and math.isnan(got[0][1]) and got[0][2] == 2
    inf = _rows(pqe.Context(), "SELECT regr_sxx(y, x) FROM "
                               "(VALUES (1.0, 'inf'::DOUBLE), (2.0, 'inf'::DOUBLE)) v(y, x)")
    assert math.isnan(inf[0][0])


def test_correlation_stays_within_one():
    values = ", ".join(f"({v}, {v})" for v in (0.1, 0.7, 1.3, 1e-3, 12345.678))
    got = _rows(_ctx(4, True), f"SELECT corr(y, x), regr_r2(y, x), corr(y, -x) "
                               f"FROM (VALUES {values}) v(y, x)")
    assert got == [(1.0, 1.0, -1.0)]


def test_answers_do_not_depend_on_partitioning(data):
    t, _ = data
    sql = "SELECT g, " + ", ".join(f"{fn}(y, x)" for fn in PAIR) + " FROM t GROUP BY g ORDER BY g"
    answers = []
    for parts, exchanged in ((1, False), (3, True), (8, True), (8, False)):
        ctx = _ctx(parts, exchanged)
        ctx.register_arrow("t", pa.Table.from_batches(t.to_batches(max_chunksize=333)))
        answers.append(_rows(ctx, sql))
    for other in answers[1:]:
        _same(other, answers[0], rel=1e-11, abs_=1e-11)


@pytest.mark.parametrize("sql, message", [
    ("SELECT corr(DISTINCT y, x) FROM t", "CORR"),
    ("SELECT covar_pop(DISTINCT y, x) FROM t", "COVAR_POP"),
    ("SELECT corr(y, x) OVER () FROM t", "CORR"),
    ("SELECT covar_pop(y, s) FROM t", "COVAR_POP"),
    ("SELECT corr(y) FROM t", "CORR"),
    ("SELECT bit_or(x) FROM t", "BIT_OR"),
    ("SELECT mode(y, x) FROM t", "MODE"),
])
def test_refused_with_a_message_naming_it(ctx, sql, message):
    with pytest.raises(pqe.Error, match="(?i)" + message):
        ctx.sql(sql).to_arrow()


@pytest.mark.parametrize("column", ["b32", "u64", "i8", "i"])
def test_bit_aggregates_match_duckdb(ctx, data, column):
    _, con = data
    sql = (f"SELECT g, bit_and({column}), bit_or({column}), bit_xor({column}), "
           f"bit_xor(DISTINCT {column}), bit_or({column}) FILTER (WHERE h = 2) "
           f"FROM t GROUP BY g ORDER BY g")
    got, want = _rows(ctx, sql), con.sql(sql).fetchall()
    assert got == want
    whole = (f"SELECT bit_and({column}), bit_or({column}), bit_xor({column}), "
             f"typeof(bit_or({column})) FROM t")
    assert _rows(ctx, whole)[0][:3] == con.sql(whole).fetchall()[0][:3]
    assert ctx.sql(f"SELECT bit_or({column}) AS v FROM t").to_arrow().schema.field("v").type \
        == data[0].schema.field(column).type


def test_bit_aggregates_of_nothing_are_null_and_types_stay():
    got = _rows(pqe.Context(), "SELECT bit_and(v), bit_or(v), bit_xor(v) FROM "
                               "(VALUES (5), (NULL)) t(v) WHERE v IS NULL")
    assert got == [(None, None, None)]
    got = _rows(pqe.Context(), "SELECT bit_and(v), bit_or(v), bit_xor(v) FROM "
                               "(VALUES (-1::BIGINT), (-9223372036854775808)) t(v)")
    assert got == [(-9223372036854775808, -1, 9223372036854775807)]


def test_mode_matches_duckdb(ctx, data):
    _, con = data
    # m has one most frequent value per group (checked below), so DuckDB's choice is certain
    counts = con.sql("SELECT g, m, count(*) c FROM t GROUP BY g, m").fetchall()
    best: dict = {}
    for g, m, c in counts:
        best.setdefault(g, []).append(c)
    assert all(sorted(c)[-1] > sorted(c)[-2] for c in best.values())
    sql = "SELECT g, mode(m), mode(m) FILTER (WHERE h < 5) FROM t GROUP BY g ORDER BY g"
    assert _rows(ctx, sql) == con.sql(sql).fetchall()


def test_mode_of_text_dates_and_ties():
    ctx = pqe.Context(partitions=3)
    got = _rows(ctx, "SELECT mode(s), mode(d), mode(n), mode(b) FROM (VALUES "
                     "('日本', DATE '2024-02-29', 2, true), ('b', DATE '2024-02-29', 1, false), "
                     "('日本', DATE '1970-01-01', 1, true), (NULL, NULL, 2, NULL), "
                     "(NULL, NULL, NULL, NULL)) t(s, d, n, b)")
    import datetime
    assert got == [("日本", datetime.date(2024, 2, 29), 1, True)]  # n: 1 and 2 tie -> 1


def test_mode_of_floats_counts_zeros_and_nans_as_one_value():
    got = _rows(pqe.Context(), "SELECT mode(v) FROM (VALUES (-0.0::DOUBLE), (0.0), (1.5), "
                               "(1.5), (0.0)) t(v)")
    assert got == [(0.0,)]
    got = _rows(pqe.Context(), "SELECT mode(v) FROM (VALUES ('NaN'::DOUBLE), (-'NaN'::DOUBLE), "
                               "(1.5)) t(v)")
    assert math.isnan(got[0][0])
    got = _rows(pqe.Context(), "SELECT g, mode(v) FROM (VALUES (1, NULL::INT), (2, 3)) t(g, v) "
                               "GROUP BY g ORDER BY g")
    assert got == [(1, None), (2, 3)]


def test_dataframe_methods(data):
    t, con = data
    ctx = pqe.Context(partitions=3)
    ctx.register_arrow("t", t)
    df = ctx.table("t").group_by("g").agg(
        r=pqe.col("y").corr("x"), c=pqe.col("y").cov(pqe.col("x")),
        p=pqe.col("y").cov("x", ddof=0), m=pqe.col("m").mode(),
        a=pqe.col("i8").bitwise_and(), o=pqe.col("i8").bitwise_or(),
        x=pqe.col("i8").bitwise_xor()).sort("g")
    got = [tuple(r.values()) for r in df.to_arrow().to_pylist()]
    want = con.sql("SELECT g, corr(y, x), covar_samp(y, x), covar_pop(y, x), mode(m), "
                   "bit_and(i8), bit_or(i8), bit_xor(i8) FROM t GROUP BY g ORDER BY g").fetchall()
    _same(got, want)
    with pytest.raises(pqe.Error, match="ddof"):
        pqe.col("y").cov("x", ddof=2)


# ---- ARG_MAX / ARG_MIN (MAX_BY / MIN_BY) ----------------------------------------------------

@pytest.mark.parametrize("y", ["b32", "fu", "d", "s", "u64"])
def test_arg_max_and_min_match_duckdb(ctx, data, y):
    """y columns with unique values per group (b32, fu, d, u64), so DuckDB's answer is the
    only one; s has many ties: any row of the largest s is right."""
    _, con = data
    if y == "s":
        sql = ("SELECT g, max(s) AS hi, min(s) AS lo, "
               "(SELECT count(*) FROM t u WHERE u.g = t.g AND u.s = max(t.s) AND u.i IS NOT NULL) "
               "FROM t WHERE s IS NOT NULL GROUP BY g ORDER BY g")
        want = {r[0]: (r[1], r[2]) for r in con.sql(sql).fetchall()}
        got = _rows(ctx, "SELECT g, arg_max(s, s), arg_min(s, s) FROM t GROUP BY g ORDER BY g")
        assert {r[0]: (r[1], r[2]) for r in got} == want
        picked = _rows(ctx, "SELECT g, arg_max(i, s) AS m FROM t GROUP BY g ORDER BY g")
        ok = con.sql("SELECT g, i, s FROM t WHERE s IS NOT NULL AND i IS NOT NULL").fetchall()
        best = {g: hi for g, (hi, _) in want.items()}
        assert all((g, m, best[g]) in set(ok) for g, m in picked)
        return
    # a unique y per group: the one answer
    dup = con.sql(f"SELECT count(*) FROM (SELECT g, {y} FROM t WHERE {y} IS NOT NULL "
                  f"GROUP BY g, {y} HAVING count(*) > 1)").fetchall()[0][0]
    assert dup == 0
    sql = (f"SELECT g, arg_max(i, {y}), arg_min(i, {y}), max_by(m, {y}), min_by(s, {y}), "
           f"arg_max(i, {y}) FILTER (WHERE h = 1) FROM t GROUP BY g ORDER BY g")
    assert _rows(ctx, sql) == con.sql(sql).fetchall()
    whole = f"SELECT arg_max(g, {y}), arg_min(i, {y}) FROM t"
    assert _rows(ctx, whole) == con.sql(whole).fetchall()


def test_arg_max_skips_null_pairs_and_orders_nan_last():
    ctx = pqe.Context(partitions=2)
    got = _rows(ctx, "SELECT arg_max(x, y), arg_min(x, y) FROM (VALUES (NULL, 5), (1, 3), "
                     "(2, NULL), (4, 1)) t(x, y)")
    assert got == [(1, 4)]
    got = _rows(ctx, "SELECT g, arg_max(x, y), arg_min(x, y) FROM (VALUES "
                     "(1, 1, -'inf'::DOUBLE), (1, 2, -'inf'::DOUBLE), (2, 3, 'nan'::DOUBLE), "
                     "(2, 4, 1.0), (3, 5, 'nan'::DOUBLE), (3, 6, NULL), (4, 7, NULL)) t(g, x, y) "
                     "GROUP BY g ORDER BY g")
    assert got == [(1, 1, 1), (2, 3, 4), (3, 5, 5), (4, None, None)]
    got = _rows(ctx, "SELECT arg_max(x, y), arg_min(x, y) FROM (VALUES "
                     "(1, 9223372036854775807), (2, -9223372036854775808)) t(x, y)")
    assert got == [(1, 2)]
    got = _rows(ctx, "SELECT arg_max(x, y), arg_min(x, y) FROM (VALUES (1, 'b'), (2, 'ä'), "
                     "(3, 'a')) t(x, y)")
    assert got == [(2, 3)]  # text in code point order


def test_arg_max_of_a_list_is_refused_by_name():
    with pytest.raises(pqe.UnsupportedError, match="ARG_MAX"):
        _rows(pqe.Context(), "SELECT arg_max(x, y) FROM (VALUES ([1], 1), ([2], 2)) t(x, y)")
    with pytest.raises(pqe.Error, match="(?i)arg_max"):
        _rows(pqe.Context(), "SELECT arg_max(x, y, 2) FROM (VALUES (1, 1)) t(x, y)")
