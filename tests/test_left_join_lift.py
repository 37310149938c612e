"""`(A LEFT JOIN B) JOIN C ON a = c` runs as `(A JOIN C) LEFT JOIN B` when C filters A and no
inner condition reads B (optimizer.join_reorder, `_lift_left_joins`). Checked against DuckDB
with rows of A that B does not match (their NULL-extended columns must survive), repeated
matches in B, NULL keys, and the shapes where lifting would be wrong (an inner condition that
reads B); the plans are checked for where the left join ends up."""

from __future__ import annotations

import pyarrow as pa
import pytest
from helpers import assert_same, context_with, duck_arrow, duckdb_with

N = 20_000


def _tables():
    a = pa.table({
        "id": pa.array(range(N), pa.int64()),
        "k": pa.array([None if i % 101 == 0 else i % 3000 for i in range(N)], pa.int64()),
        "d": pa.array([i % 365 for i in range(N)], pa.int64()),
        "x": pa.array([float(i % 17) for i in range(N)]),
    })
    b = pa.table({  # a third of A's keys, some twice
        "k": pa.array([i for i in range(0, 3000, 3)] + [i for i in range(0, 300, 3)], pa.int64()),
        "v": pa.array([None if i % 7 == 0 else i for i in range(1100)], pa.int64()),
    })
    c = pa.table({"d": pa.array(range(365), pa.int64()),
                  "month": pa.array([d // 31 for d in range(365)], pa.int64())})
    return {"a": a, "b": b, "c": c}


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


def _optimized(ctx, sql) -> str:
    text = "\n".join(ctx.sql("explain " + sql).to_arrow().column(-1).to_pylist())
    return text.split("== Optimized Logical Plan ==")[1].split("==")[0]


LIFTED = {
    "aggregate": """select c.month, count(*) n, count(b.v) nv, sum(b.v) sv, sum(a.x) sx
        from a left join b on a.k = b.k, c where a.d = c.d and c.month = 2 group by c.month""",
    "rows": """select a.id, b.v, c.month from a left join b on a.k = b.k join c on a.d = c.d
        where c.month in (0, 11) and a.x < 3""",
    "residual_on_left_join": """select a.id, b.v from a left join b on a.k = b.k and b.v > a.x * 10
        join c on a.d = c.d where c.month = 5""",
    # a filter over the left join (reading B's NULL extension) is lifted with it; here the
    # filter makes it an anti join instead (TPC-DS Q78's sales without returns)
    "without_a_match": """select a.id, a.k, c.month from a left join b on a.k = b.k
        join c on a.d = c.d where b.k is null and c.month = 2""",
    "filter_reading_both_sides": """select a.id, b.v, c.month from a left join b on a.k = b.k
        join c on a.d = c.d where coalesce(b.v, 0) < a.x * 100 and c.month in (1, 2)""",
}


@pytest.mark.parametrize("name", sorted(LIFTED))
def test_left_join_runs_after_the_filtering_inner_join(ctx, con, name):
    sql = LIFTED[name]
    plan = _optimized(ctx, sql)
    if name == "without_a_match":
        # the left join and its IS NULL filter are an anti join (push_down_filter), which
        # push_down_semi_join places
        assert "Join(anti)" in plan and "Join(left)" not in plan, plan
    else:  # the left join is the outermost join: above the inner join with c
        assert plan.index("Join(left)") < plan.index("Join(inner)"), plan
    assert_same(ctx.sql(sql).to_arrow(), duck_arrow(con, sql))


@pytest.mark.parametrize("sql", [
    # the inner join reads B: it must see the NULL-extended rows the left join made
    """select a.id, c.month from a left join b on a.k = b.k join c on c.d = coalesce(b.v, a.d)
       where c.month = 3""",
    # C does not filter A (every a.d is in c): nothing to gain
    "select count(*), sum(b.v) from a left join b on a.k = b.k join c on a.d = c.d",
])
def test_left_join_kept_below(ctx, con, sql):
    plan = _optimized(ctx, sql)
    if "Join(left)" in plan:
        assert plan.index("Join(left)") > plan.index("Join(inner)"), plan
    assert_same(ctx.sql(sql).to_arrow(), duck_arrow(con, sql))


def test_lifted_left_join_on_a_local_cluster(con):
    ctx = context_with("cluster", _tables())
    try:
        for name, sql in LIFTED.items():
            assert ("Join(anti)" if name == "without_a_match" else "Join(left)") \
                in _optimized(ctx, sql)
            assert_same(ctx.sql(sql).to_arrow(), duck_arrow(con, sql))
    finally:
        ctx.close()
