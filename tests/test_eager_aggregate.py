"""Eager aggregation (optimizer.eager_aggregate): an input of an inner join, or the NULL-supplying
side of an outer join, aggregated before the join. Every query is checked against DuckDB, and the plan is checked to contain the pushed
(`local`) aggregate, so a test cannot pass because the rule silently stopped applying.

The data is built so that a wrong rewrite shows: NULL join keys and NULL values, a dimension
whose key repeats (each fact row joins twice), a residual join condition, FILTER clauses,
BIGINT values whose partial sums leave the int64 range, DECIMAL and text aggregates, and a
join that matches nothing (the one row of an aggregate without GROUP BY)."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe
from pqe.optimizer.eager_aggregate import MIN_ROWS

from helpers import assert_same, duck_arrow

N = max(200_000, 4 * MIN_ROWS)
KEYS = 500


def _tables():
    rng = np.random.default_rng(7)
    fk = rng.integers(0, KEYS, N)
    fk_null = rng.random(N) < 0.02
    v = rng.integers(-1000, 1000, N).astype(np.int32)
    v_null = rng.random(N) < 0.05
    big = np.where(rng.random(N) < 0.5, 2 ** 62, -(2 ** 62) + 7).astype(np.int64)
    d = rng.integers(-10 ** 9, 10 ** 9, N)
    s = np.array([f"{c}{i % 97}" for c, i in zip("abcxyzé語" * (N // 8 + 1), range(N))])[:N]
    fact = pa.table({
        "fk": pa.array(fk, pa.int64(), mask=fk_null),
        "g": pa.array(rng.integers(0, 3, N), pa.int64()),
        "v": pa.array(v, pa.int32(), mask=v_null),
        "big": pa.array(big, pa.int64()),
        "d": pa.array(d, pa.int64()).cast(pa.decimal128(20, 0)).cast(pa.decimal128(22, 2)),
        "f": pa.array(rng.random(N) * 100),
        "s": pa.array(s),
    })
    k = np.arange(KEYS)
    dim = pa.table({
        "k": pa.array(k, pa.int64()),
        "cat": pa.array([f"cat{i % 7}" for i in k]),
        "name": pa.array([f"Name {i % 40}" for i in k]),
        "lim": pa.array((k * 7) % 1000 - 400, pa.int64()),
    })
    # every key of the first half twice: a fact row matching it counts twice
    dup = pa.concat_tables([dim, dim.slice(0, KEYS // 2)])
    # keys no fact row has (an outer join's unmatched rows), and a NULL key
    w = np.arange(2 * KEYS + 1)
    wide = pa.table({
        "k": pa.array(w, pa.int64(), mask=w == 2 * KEYS),
        "cat": pa.array([f"cat{i % 7}" for i in w]),
        "name": pa.array([f"Name {i % 40}" for i in w]),
        "lim": pa.array((w * 7) % 1000 - 400, pa.int64()),
    })
    return fact, dim, dup, wide


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("eager")
    fact, dim, dup, wide = _tables()
    paths = {}
    for name, t in (("fact", fact), ("dim", dim), ("dimdup", dup), ("dimwide", wide)):
        paths[name] = str(root / f"{name}.parquet")
        pq.write_table(t, paths[name], row_group_size=50_000)
    con = duckdb.connect()
    for name, p in paths.items():
        con.execute(f"create view {name} as select * from read_parquet('{p}')")
    yield paths, con
    con.close()


def _context(kind: str, paths) -> pqe.Context:
    ctx = {"threaded": lambda: pqe.Context(threads=2), "sync": lambda: pqe.Context(scheduler="sync"),
           "partitions4": lambda: pqe.Context(partitions=4)}[kind]()
    for name, p in paths.items():
        ctx.register_parquet(name, p)
    return ctx


QUERIES = {
    "all_combinable": """
        select d.cat, sum(f.v) sv, count(f.v) cv, count(*) n, avg(f.v) av, min(f.s) mn,
               max(f.s) mx, sum(f.d) sd, avg(f.d) ad, min(f.f) mf
        from fact f join dim d on f.fk = d.k group by d.cat""",
    "keys_from_both_sides": """
        select d.cat, f.g, sum(f.v) sv, count(*) n from fact f join dim d on f.fk = d.k
        group by d.cat, f.g""",
    "expressions": """
        select upper(d.name) un, sum(f.v * 2 + 1) s2, max(length(f.s)) ml
        from fact f join dim d on f.fk = d.k group by upper(d.name)""",
    "filter_clauses": """
        select d.cat, sum(f.v) filter (where f.v > 0) pos, count(*) filter (where f.s like 'a%') na,
               avg(f.f) filter (where f.g = 1) af
        from fact f join dim d on f.fk = d.k group by d.cat""",
    "duplicate_dimension_keys": """
        select d.cat, sum(f.v) sv, count(*) n, min(f.v) mn from fact f join dimdup d on f.fk = d.k
        group by d.cat""",
    "residual_condition": """
        select d.cat, sum(f.v) sv, count(*) n from fact f join dim d on f.fk = d.k and f.g <> d.k % 3
        group by d.cat""",
    "bigint_partials_beyond_int64": """
        select d.cat, sum(f.big) sb, avg(f.big) ab from fact f join dim d on f.fk = d.k
        group by d.cat""",
    "no_match_without_group_by": """
        select sum(f.v) sv, count(f.v) cv, count(*) n, avg(f.v) av, max(f.s) mx
        from fact f join dim d on f.fk = d.k where f.g = 7""",
    "without_group_by": """
        select sum(f.v) sv, count(*) n, avg(f.d) ad from fact f join dim d on f.fk = d.k
        where d.cat in ('cat1', 'cat2')""",
    # CASE arguments whose conditions read the other side (TPC-DS Q2/Q43/Q59's day names)
    "case_on_the_other_side": """
        select d.cat, sum(case when d.lim > 0 then f.v end) pos,
               sum(case when d.name like 'Name 1%' then f.v when d.lim < -100 then f.v * 2
                        else 0 end) mix,
               count(case when d.lim > 100 then f.s end) c, min(case when d.lim > 0 then f.f end) mn,
               max(case when d.k % 2 = 0 then f.s else null end) mx, count(*) n
        from fact f join dim d on f.fk = d.k group by d.cat""",
    "case_with_duplicate_keys": """
        select d.name, sum(case when d.lim > 0 then f.v else -f.v end) s,
               sum(case when d.lim > 0 then f.d end) sd
        from fact f join dimdup d on f.fk = d.k group by d.name""",
    "case_without_group_by": """
        select sum(case when d.cat = 'cat3' then f.big end) sb,
               count(case when d.cat <> 'cat3' then f.v end) cv
        from fact f join dim d on f.fk = d.k""",
    # a UNION ALL input: its columns' distinct counts come from its inputs' statistics
    "union_all_input": """
        select d.cat, sum(u.v) sv, count(*) n
        from (select fk, v from fact union all select fk, v + 1 from fact where g = 1) u
        join dim d on u.fk = d.k group by d.cat""",
    "dimension_written_first": """
        select d.name, count(*) n, sum(f.f) sf from dim d, fact f
        where d.k = f.fk and d.lim > 0 group by d.name""",
    # an outer join's NULL-supplying side (TPC-H Q13's orders): unmatched preserved rows
    # meet one row of NULL partials (COUNT 0, SUM/MIN/MAX/AVG NULL)
    "left_join_null_side": """
        select d.cat, count(f.v) cv, sum(f.v) sv, min(f.s) mn, max(f.d) mx, avg(f.f) af,
               sum(f.big) sb, avg(f.d) ad
        from dimwide d left join fact f on d.k = f.fk group by d.cat""",
    "left_join_counts_per_key": """
        select c, count(*) n from (select d.k, count(f.v) c from dimwide d left join fact f
        on d.k = f.fk and f.s not like '%a%' group by d.k) x group by c""",
    "right_join_null_side": """
        select d.name, count(f.v) cv, sum(f.d) sd, max(f.v) mx
        from fact f right join dimwide d on f.fk = d.k group by d.name""",
    "left_join_grouped_by_null_side": """
        select d.cat, f.g, count(f.v) cv, sum(f.v) sv from dimwide d left join fact f
        on d.k = f.fk group by d.cat, f.g""",
    "left_join_residual_condition": """
        select d.cat, sum(f.v) sv, count(f.s) cs from dimwide d left join fact f
        on d.k = f.fk and f.g <> d.k % 3 group by d.cat""",
    "left_join_filter_clause": """
        select d.name, sum(f.v) filter (where f.v > 0) pos, count(f.s) filter (where f.g = 1) c1
        from dimwide d left join fact f on d.k = f.fk group by d.name""",
    "left_join_duplicate_keys": """
        select d.cat, count(f.v) cv, sum(f.v) sv, min(f.f) mn from dimdup d left join fact f
        on d.k = f.fk group by d.cat""",
    "left_join_without_group_by": """
        select count(f.v) cv, sum(f.v) sv, avg(f.v) av from dimwide d left join fact f
        on d.k = f.fk where d.lim > 0""",
}


def _local_aggregates(ctx, sql) -> int:
    return str(ctx.sql(sql).optimized_plan()).count("Aggregate[local]")


@pytest.mark.parametrize("kind", ["threaded", "sync", "partitions4"])
@pytest.mark.parametrize("name", sorted(QUERIES))
def test_eager_aggregation_answers(data, kind, name):
    paths, con = data
    sql = QUERIES[name]
    ctx = _context(kind, paths)
    try:
        assert _local_aggregates(ctx, sql) == 1, ctx.sql(sql).optimized_plan()
        assert_same(ctx.sql(sql).to_arrow(), duck_arrow(con, sql), rel=1e-9)
    finally:
        ctx.close()


@pytest.mark.parametrize("sql", [
    # an argument from both sides: nothing to aggregate before the join
    "select d.cat, sum(f.v * d.lim) s from fact f join dim d on f.fk = d.k group by d.cat",
    # a CASE condition that reads both sides: no partial value per branch
    "select d.cat, sum(case when f.v > d.lim then f.v end) s from fact f join dim d on f.fk = d.k group by d.cat",
    # COUNT(DISTINCT) does not combine from partial counts
    "select d.cat, count(distinct f.v) c from fact f join dim d on f.fk = d.k group by d.cat",
    # an outer join keeps unmatched rows the partial aggregate would have merged
    "select d.cat, sum(f.v) s, count(*) n from fact f left join dim d on f.fk = d.k group by d.cat",
    # the NULL-supplying side, but COUNT(*) counts an unmatched row once
    "select d.cat, count(*) n, sum(f.v) s from dimwide d left join fact f on d.k = f.fk group by d.cat",
    # ... and a CASE reading the preserved side
    "select d.cat, sum(case when d.lim > 0 then f.v end) s from dimwide d left join fact f "
    "on d.k = f.fk group by d.cat",
    # arguments that are not NULL on an unmatched row: it counts (COUNT(1) = 1, the
    # coalesce 0 or 1, the CASE 1), where its partials would be NULL
    "select d.cat, count(1) n, sum(f.v) s from dimwide d left join fact f on d.k = f.fk group by d.cat",
    "select d.cat, sum(coalesce(f.v, 1)) s from dimwide d left join fact f on d.k = f.fk "
    "group by d.cat",
    "select d.cat, count(case when f.v is null then 1 end) c, max(f.v is null) m "
    "from dimwide d left join fact f on d.k = f.fk group by d.cat",
    "select cat, sum(x) s from (select d.cat, coalesce(f.v, 0) + 1 x from dimwide d "
    "left join fact f on d.k = f.fk) q group by cat",
    # a FULL JOIN: both sides come back NULL
    "select d.cat, sum(f.v) s from dimwide d full join fact f on d.k = f.fk group by d.cat",
    # grouping by the fact's own near-unique column: no reduction to gain
    "select f.s, f.d, sum(f.v) s from fact f join dim d on f.fk = d.k group by f.s, f.d",
])
def test_not_applied_where_it_cannot_or_need_not(data, sql):
    paths, con = data
    ctx = _context("threaded", paths)
    try:
        assert _local_aggregates(ctx, sql) == 0
        assert_same(ctx.sql(sql).to_arrow(), duck_arrow(con, sql), rel=1e-9)
    finally:
        ctx.close()


def test_local_aggregate_in_explain_and_physical_plan(data):
    paths, _ = data
    ctx = _context("partitions4", paths)
    try:
        text = "\n".join(ctx.sql("explain " + QUERIES["all_combinable"]).to_arrow()
                         .column(-1).to_pylist())
        # the pushed aggregate runs per partition (no exchange below the join): one
        # Aggregate[single] over the fact side, then the usual partial/final pair on top
        physical = text.split("== Physical Plan ==")[1]
        lines = physical.splitlines()
        join = next(i for i, s in enumerate(lines) if "HashJoin" in s)
        below = "\n".join(lines[join:])
        assert "Aggregate[single" in below and "Exchange[hash" not in below.split("Aggregate[single")[0]
        assert "Aggregate[local]" in text
    finally:
        ctx.close()


def test_eager_aggregation_on_a_local_cluster(data):
    paths, con = data
    ctx = _context("threaded", paths)
    ctx.close()
    ctx = pqe.Context(workers=2, memory_limit="1GiB", partitions=4)
    try:
        for name, p in paths.items():
            ctx.register_parquet(name, p)
        for name in ("all_combinable", "duplicate_dimension_keys", "no_match_without_group_by"):
            sql = QUERIES[name]
            assert _local_aggregates(ctx, sql) == 1
            assert_same(ctx.sql(sql).to_arrow(), duck_arrow(con, sql), rel=1e-9)
    finally:
        ctx.close()


def test_a_rewritten_cte_read_twice_is_still_computed_once(data):
    """Eager aggregation mints the ids of its partial sums; rewriting each copy of a CTE on
    its own gave each copy different ids, the copies were no longer equal, and the physical
    planner (which runs equal subtrees once) ran both: TPC-DS Q23's best_ss_customer
    aggregated 2.75M rows twice. plan.logical.transform_up rewrites equal subtrees once."""
    paths, con = data
    ctx = _context("threaded", paths)
    sql = """
        with t as (select d.cat, sum(f.v) sv, count(*) n from fact f join dim d on f.fk = d.k
                   group by d.cat)
        select a.cat, a.sv + b.sv s2, a.n + b.n n2 from t a join t b on a.cat > b.cat"""
    try:
        plan = ctx.sql(sql).optimized_plan()
        from pqe.plan.logical import Aggregate, walk_plan

        local = [p for p in walk_plan(plan) if isinstance(p, Aggregate) and p.local]
        assert len(local) == 2 and local[0] == local[1], plan
        text = "\n".join(ctx.sql("explain " + sql).to_arrow().column(-1).to_pylist())
        physical = text.split("== Physical Plan ==")[1]
        # the second copy is a reference to the first, not a second aggregate over the join
        assert physical.count("HashJoin[broadcast") == 1 or "-> shared #" in physical, physical
        assert physical.count("ParquetScan: fact") == 1, physical
        assert_same(ctx.sql(sql).to_arrow(), duck_arrow(con, sql), rel=1e-9)
    finally:
        ctx.close()


ONE_ROW = {
    # TPC-DS Q23's best_ss_customer: the maximum of a one-row subquery beside each group
    "max_of_the_row": """
        select f.fk, sum(f.v) sv, max(m.top) mt from fact f, dim d,
               (select max(lim) top from dim) m
        where f.fk = d.k group by f.fk having sum(f.v) > 0.001 * max(m.top)""",
    "min_and_counts": """
        select f.g, count(*) n, min(m.lo) lo, count(distinct f.fk) nk, max(m.hi) hi
        from fact f cross join (select min(v) lo, max(v) hi from fact where g = 1) m
        group by f.g""",
    "row_of_no_rows": """
        select f.g, sum(f.v) s, max(m.top) t from fact f,
               (select max(lim) top from dim where lim > 100000) m group by f.g""",
}


@pytest.mark.parametrize("kind", ["threaded", "partitions4"])
@pytest.mark.parametrize("name", sorted(ONE_ROW))
def test_grouping_over_a_one_row_product_aggregates_first(data, kind, name):
    """The other side is aggregated before it meets the row (not each of its rows paired
    with the row and the row's column aggregated per group)."""
    from pqe.plan.expr import column_ids_all
    from pqe.plan.logical import Aggregate, Project, walk_plan

    def one_row_ids(plan) -> set:
        out = set()
        for p in walk_plan(plan):
            q = p
            while isinstance(q, Project):
                q = q.input
            if isinstance(q, Aggregate) and not q.group:
                out |= set(p.column_ids)
        return out

    paths, con = data
    sql = ONE_ROW[name]
    ctx = _context(kind, paths)
    try:
        plan = ctx.sql(sql).optimized_plan()
        # no grouped aggregate computes a MIN or MAX of the one row's columns per group
        per_group = [p for p in walk_plan(plan) if isinstance(p, Aggregate) and p.group
                     and column_ids_all(p.aggs) & one_row_ids(p.input)]
        assert not per_group, plan
        assert_same(ctx.sql(sql).to_arrow(), duck_arrow(con, sql), rel=1e-9)
    finally:
        ctx.close()


def test_without_group_by_a_one_row_product_is_not_rewritten(data):
    """Over no rows an aggregate without GROUP BY still gives one row, and there MAX(m.top)
    is NULL: pairing first would give the row's value."""
    paths, con = data
    ctx = _context("threaded", paths)
    sql = "select sum(f.v) s, max(m.top) t from fact f, (select max(lim) top from dim) m where f.g = 9"
    try:
        assert_same(ctx.sql(sql).to_arrow(), duck_arrow(con, sql))
        assert ctx.sql(sql).to_pylist() == [{"s": None, "t": None}]
    finally:
        ctx.close()
