"""Aggregates without GROUP BY over one table, side by side (scalar subqueries, cross joins of
one-row subqueries: TPC-DS Q9, Q28), read the table once (optimizer.merge_scalar_aggregates):
one aggregate whose calls each keep their own rows with a FILTER clause.

Every query is checked against DuckDB and its plan for how many times the table is read, so a
test cannot pass because the rule silently stopped applying. The data has NULLs in the
filtered and the aggregated columns, ranges that match no row (COUNT 0, AVG NULL), DISTINCT
and FILTER aggregates, and the shapes that must not merge."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from helpers import assert_same, context_with, duck_arrow, duckdb_with

from pqe.plan.logical import Scan, walk_plan

N = 5_000


def _tables():
    rng = np.random.default_rng(11)
    q = rng.integers(0, 100, N)
    return {
        "t": pa.table({
            "q": pa.array(q, pa.int64(), mask=rng.random(N) < 0.05),
            "x": pa.array(rng.integers(-50, 50, N) / 4, pa.float64(), mask=rng.random(N) < 0.1),
            "d": pa.array([Decimal(int(v)).scaleb(-2) for v in rng.integers(0, 10 ** 6, N)],
                          pa.decimal128(14, 2)),
            "s": pa.array([f"v{i % 37}" for i in range(N)]),
        }),
        "u": pa.table({"k": pa.array([1, 2, 3], pa.int64())}),
    }


@pytest.fixture(scope="module")
def con():
    c = duckdb_with(_tables())
    yield c
    c.close()


@pytest.fixture(scope="module", params=["threaded", "partitions4"])
def ctx(request):
    c = context_with(request.param, _tables())
    yield c
    c.close()


def _reads(ctx, sql, table="t") -> int:
    return sum(1 for p in walk_plan(ctx.sql(sql).optimized_plan())
               if isinstance(p, Scan) and p.table == table)


MERGED = {
    # TPC-DS Q9's shape: scalar subqueries in CASE, over one row of another table
    "case_buckets": ("""
        select case when (select count(*) from t where q between 0 and 19) > 900
                    then (select avg(x) from t where q between 0 and 19)
                    else (select avg(d) from t where q between 0 and 19) end b1,
               case when (select count(*) from t where q between 20 and 39) > 1100
                    then (select avg(x) from t where q between 20 and 39)
                    else (select sum(d) from t where q between 20 and 39) end b2,
               (select count(*) from t where q > 1000) none_count,
               (select avg(x) from t where q > 1000) none_avg
        from u where k = 1""", 1),
    # TPC-DS Q28's shape: a cross join of one-row subqueries with DISTINCT counts; each
    # DISTINCT count then takes a pass of its own (optimizer.distinct_aggregates): 4 reads
    # of t where there were 6
    "cross_join_distinct": ("""
        select * from
          (select avg(x) a1, count(x) c1, count(distinct s) cd1 from t where q < 10) b1,
          (select avg(x) a2, count(x) c2, count(distinct s) cd2 from t
             where q between 10 and 20 and (x > 0 or d < 5000)) b2,
          (select min(s) m3, max(d) x3, count(distinct q) cd3 from t where s like 'v1%') b3""", 4),
    # FILTER clauses of their own, a subquery without WHERE, NULL tests
    "own_filters": """
        select (select count(*) filter (where x > 0) from t where q < 50) f1,
               (select sum(d) filter (where s <> 'v3') from t where q >= 50) f2,
               (select count(*) from t) f3,
               (select count(*) from t where q is null) f4,
               (select avg(x) from t where x is not null and q is not null) f5""",
    # two tables: each is read once
    "two_tables": """
        select (select count(*) from t where q < 10) a, (select max(k) from u) b,
               (select avg(x) from t where q >= 90) c, (select min(k) from u where k > 1) d""",
}
MERGED = {k: v if isinstance(v, tuple) else (v, 1) for k, v in MERGED.items()}


@pytest.mark.parametrize("name", sorted(MERGED))
def test_side_by_side_aggregates_read_the_table_once(ctx, con, name):
    sql, reads = MERGED[name]
    assert _reads(ctx, sql) == reads, ctx.sql(sql).optimized_plan()
    assert_same(ctx.sql(sql).to_arrow(), duck_arrow(con, sql), rel=1e-9)


@pytest.mark.parametrize("sql, reads", [
    # a filter that may raise (integer overflow) would be computed for the other rows too
    ("select (select count(*) from t where q * 1000 > 0) a, "
     "(select count(*) from t where q < 5) b", 2),
    # an argument that may raise: likewise
    ("select (select sum(q * 1000) from t where q < 5) a, (select count(*) from t where q > 90) b", 2),
    # random() is drawn once per row and query: not shared between two subqueries
    ("select (select count(*) from t where random() < 2) a, (select count(*) from t) b", 2),
])
def test_not_merged_where_it_could_change_an_answer(ctx, con, sql, reads):
    assert _reads(ctx, sql) == reads
    assert_same(ctx.sql(sql).to_arrow(), duck_arrow(con, sql), rel=1e-9)


def test_one_subquery_read_twice_stays_correct(ctx, con):
    sql = """with s as (select count(*) c, avg(x) a from t where q < 30)
             select s1.c, s2.a, s1.c + s2.c cc from s s1, s s2"""
    assert_same(ctx.sql(sql).to_arrow(), duck_arrow(con, sql), rel=1e-9)


def test_a_table_with_rows_keeps_them(ctx, con):
    """The one-row aggregates are joined to every row of u (a product, not a merge of u)."""
    sql = """select k, (select count(*) from t where q = k) same_k,
                    (select count(*) from t where q < 3) small, (select avg(x) from t where q < 3) ax
             from u order by k"""
    assert_same(ctx.sql(sql).to_arrow(), duck_arrow(con, sql), ordered=True, rel=1e-9)
