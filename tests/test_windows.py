"""Window functions against DuckDB: ranking, navigation, aggregates over ROWS/RANGE frames,
named windows, windows over GROUP BY, on 4 partitions (threads) and 1 (sync)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from helpers import assert_same

import pqe
from pqe.testing import oracle

T = pa.table({
    "g": pa.array([1, 1, 1, 2, 2, None, 3, 3, 3, 3, 4, 4], pa.int64()),
    "o": pa.array([3, 1, 2, 5, 5, 1, None, 2, 2, 4, 7, 8], pa.int64()),
    "x": pa.array([10.0, 20.0, None, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 100.0, 1.5, 2.5]),
    "d": pa.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], pa.decimal128(10, 2)),
    "s": pa.array(list("abcdefghijkl")),
})

QUERIES = [
    "select g, o, s, row_number() over (partition by g order by o, s) rn, rank() over (partition by g order by o) r, "
    "dense_rank() over (partition by g order by o) dr from t",
    "select g, o, sum(x) over (partition by g order by o) s, count(*) over (partition by g) c, avg(x) over () a from t",
    "select g, o, s, lag(x) over (partition by g order by o, s) l1, lead(x, 2, -1) over (partition by g order by o, s) l2 from t",
    "select g, o, s, first_value(s) over w f, last_value(s) over w l, min(s) over w mn, max(x) over w mx "
    "from t window w as (partition by g order by o, s rows between 1 preceding and 1 following)",
    "select o, s, ntile(3) over (order by o, s) n, percent_rank() over (order by o) pr, cume_dist() over (order by o) cd from t",
    "select g, o, sum(x) over (order by o range between 1 preceding and current row) from t where o is not null",
    "select g, sum(sum(x)) over () total, rank() over (order by sum(x) desc) r from t group by g",
    "select g, o, count(x) over (partition by g order by o rows between unbounded preceding and unbounded following) c, "
    "sum(x) over (partition by g order by o, s rows between current row and unbounded following) s from t",
    "select g, s, sum(d) over (partition by g order by s) sd, avg(d) over (partition by g) ad, min(d) over (order by s rows 2 preceding) md from t",
    "select g, o, s, nth_value(s, 2) over (partition by g order by o, s rows between unbounded preceding and unbounded following) n2 from t",
    "select s, x, row_number() over (order by x desc nulls last, s) rn from t",
    "select * from (select g, s, row_number() over (partition by g order by s desc) rn from t) q where rn <= 2",
    "select g, count(*) filter (where x > 15) over (partition by g) c from t",
    # RANGE offsets over a key with a NULL, ascending and descending, decimal keys
    "select g, o, count(*) over (partition by g order by o desc range between 1 preceding and 2 following) c, "
    "sum(x) over (order by o range between 2 preceding and 1 preceding) s, "
    "min(s) over (order by o nulls first range between current row and 3 following) m from t",
    "select s, d, count(*) over (order by d desc nulls last range between 2.5 preceding and current row) c, "
    "sum(d) over (partition by g order by d range between 1 following and 1.5 following) sd from t",
]


@pytest.fixture(scope="module")
def duck_win():
    con = oracle.connect({"t": T})
    yield con
    con.close()


@pytest.fixture(scope="module", params=[("threads", 4), ("sync", 1)], ids=["threads-4p", "sync-1p"])
def wctx(request):
    scheduler, partitions = request.param
    ctx = pqe.Context(scheduler=scheduler, partitions=partitions)
    ctx.register_arrow("t", T)
    yield ctx
    ctx.close()


@pytest.mark.parametrize("sql", QUERIES)
def test_window_matches_duckdb(wctx, duck_win, sql):
    assert_same(wctx.sql(sql).to_arrow(), oracle.query(duck_win, sql), sql=sql)


def test_window_partitions_by_its_keys(wctx):
    phys = wctx.sql("select g, row_number() over (partition by g order by o) from t").explain()
    if "partitions=4" in phys:
        assert "Exchange[hash(t.g), tasks]" in phys
    assert "Window: row_number() partitionBy=[t.g] orderBy=[t.o ASC]" in phys


def test_filter_on_partition_key_goes_below_window(wctx):
    plan = str(wctx.sql("select * from (select g, sum(x) over (partition by g) s from t) q where g = 3")
               .optimized_plan())
    assert "filters=[(t.g = 3)]" in plan


def test_window_on_tpch(tpch_ctx, duck):
    sql = ("select o_custkey, o_orderdate, o_totalprice, "
           "rank() over (partition by o_custkey order by o_totalprice desc) r, "
           "sum(o_totalprice) over (partition by o_custkey order by o_orderdate, o_orderkey rows between 2 preceding and current row) s3 "
           "from orders where o_custkey < 200")
    assert_same(tpch_ctx.sql(sql).to_arrow(), oracle.query(duck, sql), sql=sql)


def test_window_not_allowed_in_where(wctx):
    with pytest.raises(pqe.BindError, match="window functions are not allowed in WHERE"):
        wctx.sql("select g from t where row_number() over (order by o) = 1")
