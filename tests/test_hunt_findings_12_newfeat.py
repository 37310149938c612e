"""Findings of the hunt over this session's new features (aggregates, DISTINCT ON, INTERVAL
differences), each with its fix."""
from __future__ import annotations

import datetime
import math

import duckdb
import pyarrow as pa
import pytest

import pqe


def _rows(ctx, sql):
    return [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()]


@pytest.mark.parametrize("row", ["('inf'::DOUBLE, 3.0::DOUBLE)", "(1.0::DOUBLE, 'nan'::DOUBLE)",
                                 "('-inf'::DOUBLE, 'inf'::DOUBLE)"])
def test_covariance_of_one_non_finite_pair_is_nan(row):
    """The co-moment of a variable without spread is 0 only beside finite values: it was 0.0
    (PostgreSQL and DuckDB: NaN) for one row holding inf or NaN."""
    for parts in (1, 3):
        got = _rows(pqe.Context(partitions=parts),
                    f"SELECT covar_pop(y, x), regr_sxy(y, x), covar_samp(y, x) "
                    f"FROM (VALUES {row}, {row}) v(y, x) GROUP BY y IS NULL")
        assert math.isnan(got[0][0]) and math.isnan(got[0][1]) and math.isnan(got[0][2])
    finite = _rows(pqe.Context(), "SELECT covar_pop(y, x), regr_sxy(y, x) FROM "
                                  "(VALUES (1.0, 3.0), (2.0, 3.0)) v(y, x)")
    assert finite == [(0.0, 0.0)]


@pytest.mark.parametrize("fn", ["arg_max", "min_by", "regr_count"])
def test_distinct_in_multi_column_aggregates_is_refused_by_name(fn):
    # arg_max(DISTINCT x, y) was an InternalError (the DISTINCT rewrite took y as a constant)
    with pytest.raises(pqe.UnsupportedError, match=f"DISTINCT inside {fn.upper()}"):
        pqe.Context().sql(f"SELECT {fn}(DISTINCT x, y) FROM (VALUES (1, 2), (3, 4)) t(x, y)"
                          ).to_arrow()


@pytest.fixture(scope="module")
def stamps():
    utc = datetime.timezone.utc
    t = pa.table({
        "a": pa.array([datetime.datetime(2020, 1, 3), datetime.datetime(2020, 1, 1), None],
                      pa.timestamp("us")),
        "b": pa.array([datetime.datetime(2020, 1, 1), datetime.datetime(2020, 1, 2),
                       datetime.datetime(2020, 1, 1)], pa.timestamp("us")),
        "z": pa.array([datetime.datetime(2020, 1, 3, tzinfo=utc), None,
                       datetime.datetime(2020, 1, 1, tzinfo=utc)], pa.timestamp("us", "UTC")),
        "y": pa.array([datetime.datetime(2020, 1, 1, 5, tzinfo=utc)] * 3,
                      pa.timestamp("us", "America/New_York")),
        "g": [1, 1, 2]})
    ctx = pqe.Context()
    ctx.register_arrow("t", t)
    con = duckdb.connect()
    con.register("t", t)
    return ctx, con


def _total(v):
    if v is None:
        return None
    if isinstance(v, datetime.timedelta):
        return v / datetime.timedelta(microseconds=1)
    return v.days * 86_400 * 10 ** 6 + v.nanoseconds / 1000


def test_interval_equality_forms(stamps):
    ctx, con = stamps
    sql = ("SELECT (a - b) IS DISTINCT FROM INTERVAL '48 hours', (a - b) IS NOT DISTINCT FROM "
           "INTERVAL '2 days', INTERVAL '1 month' IS DISTINCT FROM INTERVAL '30 days' FROM t")
    assert _rows(ctx, sql) == con.sql(sql).fetchall()
    got = [_total(r[0]) for r in _rows(ctx, "SELECT nullif(a - b, INTERVAL '2 days') FROM t")]
    assert got == [None, -86_400 * 10 ** 6, None]


@pytest.mark.parametrize("sql, what", [
    ("SELECT greatest(a - b, b - a) FROM t", "GREATEST of INTERVAL"),
    ("SELECT least(a - b, b - a) FROM t", "LEAST of INTERVAL"),
    ("SELECT g, array_agg(a - b) FROM t GROUP BY g", "ARRAY_AGG of INTERVAL"),
])
def test_interval_functions_without_kernels_are_refused_by_name(stamps, sql, what):
    with pytest.raises(pqe.UnsupportedError, match=what):
        stamps[0].sql(sql).to_arrow()


def test_timestamptz_differences(stamps):
    ctx, con = stamps
    sql = "SELECT z - y, y - z, z - z FROM t"
    assert [tuple(_total(v) for v in r) for r in _rows(ctx, sql)] \
        == [tuple(_total(v) for v in r) for r in con.sql(sql).fetchall()]
    # a zone-less one is taken as UTC, pqe's session time zone (it was refused before pqe
    # had one), as DuckDB answers with TimeZone 'UTC'
    con.execute("SET TimeZone = 'UTC'")
    sql = "SELECT z - a, a - z FROM t"
    assert [tuple(_total(v) for v in r) for r in _rows(ctx, sql)] \
        == [tuple(_total(v) for v in r) for r in con.sql(sql).fetchall()]


@pytest.mark.parametrize("sql", [
    'SELECT "K" FROM (SELECT a AS "K" FROM s)',
    'SELECT x."K" FROM (SELECT a AS "K", k FROM s) x',
    'WITH c AS (SELECT a AS "K" FROM s) SELECT "K" FROM c',
    'SELECT DISTINCT ON ("K") "K" FROM (SELECT a AS "K" FROM s) ORDER BY "K"',
])
def test_a_quoted_alias_beside_a_column_of_another_case(sql):
    """A query's own quoted name "K" was marked never to match because a table had k: its
    alias was "column 'K' does not exist"."""
    t = pa.table({"k": [1, 1, 2], "a": [3, 2, 1]})
    ctx = pqe.Context()
    ctx.register_arrow("s", t)
    con = duckdb.connect()
    con.register("s", t)
    assert sorted(_rows(ctx, sql)) == sorted(con.sql(sql).fetchall())


def test_a_quoted_name_still_never_reads_a_column_of_another_case():
    ctx = pqe.Context()
    ctx.register_arrow("s", pa.table({"k": [1], "H": [2], "x": [3]}))
    with pytest.raises(pqe.UnknownColumnError):
        ctx.sql('SELECT "K" FROM s').to_arrow()
    with pytest.raises(pqe.UnknownColumnError):  # "h" is the key of H: not read as H
        ctx.sql('SELECT x FROM s WHERE "h" = 2 AND x IN (SELECT 3 AS h)').to_arrow()


@pytest.mark.parametrize("ddof", [True, 1.0, 2, "1"])
def test_cov_ddof_is_0_or_1_exactly(ddof):
    with pytest.raises(pqe.Error, match="ddof"):
        pqe.col("y").cov("x", ddof=ddof)


def test_regr_count_of_a_correlated_subquery_without_rows_is_zero():
    """The COUNT-bug rule gave 0 for COUNT only: REGR_COUNT of no matching rows was NULL
    (DuckDB, PostgreSQL: 0). Found by the fuzz's second round."""
    t = pa.table({"k": pa.array([1, 2], pa.int64()), "x": [1.0, 2.0], "y": [3.0, 5.0]})
    u = pa.table({"k": pa.array([1, 1, 3], pa.int64()), "x": [1.0, 2.0, 4.0],
                  "y": [1.0, 2.0, 4.0]})
    ctx = pqe.Context()
    con = duckdb.connect()
    for name, tbl in (("t", t), ("u", u)):
        ctx.register_arrow(name, tbl)
        con.register(name, tbl)
    for sql in ["SELECT t.k, (SELECT regr_count(u.y, u.x) FROM u WHERE u.k = t.k) FROM t "
                "ORDER BY 1",
                "SELECT t.k, (SELECT regr_count(u.y, u.x) FILTER (WHERE u.x > 0) + 1 FROM u "
                "WHERE u.k = t.k) FROM t ORDER BY 1",
                "SELECT t.k FROM t WHERE (SELECT regr_count(u.y, u.x) FROM u WHERE u.k = t.k) = 0",
                "SELECT t.k, (SELECT corr(u.y, u.x) FROM u WHERE u.k = t.k) FROM t ORDER BY 1"]:
        assert _rows(ctx, sql) == con.sql(sql).fetchall(), sql
