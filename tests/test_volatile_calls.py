"""Each call of a volatile function the query writes is a value of its own, per row.

random() and user functions not declared deterministic: two equal calls are two draws,
wherever they stand (a filter pushed into a scan, an AND or OR, factored terms, a CASE
branch, a HAVING) and whatever the source (in-memory table or Parquet). Before, Arrow
took `random() < 0.5 AND random() < 0.5` for one test (half the rows kept, not a quarter),
pqe's optimizer dropped or factored out repeated volatile terms, and a volatile user
function called with constants only gave one value per batch of 65,536 rows.

The counts are random: 200,000 rows, so a binomial count's standard deviation is at most
about 224; the tolerance (3,000) is more than ten of them, and each wrong behaviour is off
by 16,000 or more.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import pqe

N = 200_000
TOLERANCE = 3_000


@pytest.fixture(scope="module", params=["memory", "parquet"])
def ctx(request, tmp_path_factory):
    c = pqe.Context()
    t = pa.table({"a": np.arange(N) % 3, "b": np.arange(N) % 5})
    if request.param == "memory":
        c.register_arrow("t", t)
    else:
        path = tmp_path_factory.mktemp("volatile") / "t.parquet"
        pq.write_table(t, path, row_group_size=50_000)
        c.register_parquet("t", str(path))
    rng = np.random.default_rng()
    c.register_udf("rnd", lambda a: pa.array(rng.random(len(a))), ["BIGINT"], "DOUBLE")
    c.register_udf("twice", lambda a: pc.multiply(a, 2), ["BIGINT"], "BIGINT",
                   deterministic=True)
    return c


def count(ctx, sql: str) -> int:
    return int(ctx.sql(sql).to_arrow().column(0)[0].as_py())


# (query, expected count): P(a = 1) = 1/3, P(b = 1) = 1/5, independent over the rows
CASES = [
    ("select count(*) from t where random() < 0.5 and random() < 0.5", N / 4),
    ("select count(*) from t where random() < 0.5 or random() < 0.5", 3 * N / 4),
    ("select count(*) from t where not (random() >= 0.5 or random() >= 0.5)", N / 4),
    ("select count(*) from t where (random() < 0.5 and a = 1) or (random() < 0.5 and a = 1)",
     N / 3 * 3 / 4),
    ("select count(*) from t where random() < 0.5 and a = 1 or random() < 0.5 and a = 1",
     N / 3 * 3 / 4),
    ("select count(*) from t where (random() < 0.5 and a = 1) or (random() < 0.5 and b = 1)",
     N * (1 / 3 / 2 + 1 / 5 / 2 - 1 / 15 / 4)),
    ("select count(*) from t where case when random() < 0.5 then true end "
     "and case when random() < 0.5 then true end", N / 4),
    ("select count(*) from t where (case when random() < 0.5 then 1 else 0 end) "
     "+ (case when random() < 0.5 then 1 else 0 end) = 1", N / 2),
    ("select count(*) from t where random() = random()", 0),
    ("select count(*) from (select random() x, random() y from t) where x < 0.5 and y < 0.5",
     N / 4),
    ("select count(*) from (select random() r from t) where r < 0.5 and r < 0.5", N / 2),
    ("select count(distinct r) from (select random() r from t)", N),
    ("select sum(c) from (select count(*) c from t where random() < 0.5 and random() < 0.5 "
     "group by a having count(*) > 0)", N / 4),
    ("select count(*) from t where rnd(a) < 0.5 and rnd(a) < 0.5", N / 4),
    ("select count(*) from t where rnd(a) < 0.5 or rnd(a) < 0.5", 3 * N / 4),
    ("select count(*) from t where (rnd(a) < 0.5 and b = 1) or (rnd(a) < 0.5 and b = 1)",
     N / 5 * 3 / 4),
    ("select count(*) from t where case when b = 1 then rnd(a) < 0.5 or rnd(a) < 0.5 end",
     N / 5 * 3 / 4),
    ("select count(*) from (select rnd(a) x, rnd(a) y from t) where x = y", 0),
    # constants only: still a value per row, not one per batch
    ("select count(distinct r) from (select rnd(1) r from t)", N),
    ("select count(*) from t where rnd(1) < 0.5 or rnd(1) < 0.5", 3 * N / 4),
    ("select count(*) from t where case when b = 1 then rnd(1) < 0.5 end", N / 10),
    # a deterministic function is one value however often it is written
    ("select count(*) from t where twice(a) = 2 or twice(a) = 2", N / 3),
]


@pytest.mark.parametrize("sql,expected", CASES)
def test_each_call_draws_its_own_values(ctx, sql, expected):
    got = count(ctx, sql)
    assert abs(got - expected) <= TOLERANCE, (got, expected)


def test_plan_keeps_repeated_volatile_terms(ctx):
    plan = str(ctx.sql("select count(*) from t where random() < 0.5 and random() < 0.5 "
                       "and a = 1 and a = 1").explain())
    optimized = plan.split("== Optimized Logical Plan ==")[1].split("== Physical Plan ==")[0]
    assert optimized.count("random()") == 2
    assert optimized.count("(t.a = 1)") == 1  # (a repeated deterministic term still goes)


def test_factoring_leaves_volatile_terms_in_each_disjunct(ctx):
    plan = str(ctx.sql("select count(*) from t where (random() < 0.5 and a = 1) "
                       "or (random() < 0.5 and b = 1)").explain())
    optimized = plan.split("== Optimized Logical Plan ==")[1].split("== Physical Plan ==")[0]
    assert optimized.count("random()") == 2
