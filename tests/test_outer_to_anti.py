"""`a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL` (b.k a column the join condition is never
true for when NULL) is the anti join of a and b, with b's columns NULL
(optimizer.push_down_filter._outer_to_anti); RIGHT JOIN likewise. The answers must not change:
checked against DuckDB with NULL keys on both sides, several keys, residual conditions, a
NULL test on a column the condition does not reject (which must stay a left join), right
columns read above the join, further predicates on them, and nested joins."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import pqe
from helpers import assert_answers_as_duckdb


def _tables():
    rng = np.random.default_rng(7)
    n = 300

    def ints(size, top, dtype="int64"):
        return pa.array(rng.integers(0, top, size).astype(dtype), mask=rng.random(size) < 0.1)

    a = pa.table({"k": ints(n, 40), "k2": ints(n, 3), "s": pa.array(
        [None if i % 9 == 0 else f"s{i % 13}" for i in range(n)]), "x": rng.integers(-5, 5, n)})
    b = pa.table({"k": ints(n // 2, 60), "k2": ints(n // 2, 3), "w": ints(n // 2, 5),
                  "t": pa.array([None if i % 7 == 0 else f"s{i % 17}" for i in range(n // 2)]),
                  "f": pa.array(rng.random(n // 2) * 10)})
    c = pa.table({"ck": ints(40, 40), "z": rng.integers(0, 3, 40)})
    return {"a": a, "b": b, "c": c}


REWRITTEN = [
    "SELECT a.k, a.x FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL",
    # the right columns read above: all NULL
    "SELECT a.*, b.k AS bk, b.w, b.t FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL",
    # two keys, the NULL test on the second
    "SELECT a.k, a.k2, a.x FROM a LEFT JOIN b ON a.k = b.k AND a.k2 = b.k2 WHERE b.k2 IS NULL",
    # a residual condition that rejects a NULL b.w: testing b.w
    "SELECT a.k, a.x FROM a LEFT JOIN b ON a.k = b.k AND b.w > a.x WHERE b.w IS NULL",
    # a NULL test on a column only the residual rejects, key through a cast
    "SELECT a.k, a.x FROM a LEFT JOIN b ON CAST(a.k AS DOUBLE) = b.f WHERE b.f IS NULL",
    # further predicates on the right columns see NULLs
    "SELECT a.k FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL AND b.w IS NULL",
    "SELECT a.k FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL AND coalesce(b.w, -1) = -1",
    "SELECT a.k FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL AND b.w > 1",
    "SELECT a.k FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL OR a.x > 3",
    # left-side predicates beside it
    "SELECT a.k, a.s FROM a LEFT JOIN b ON a.k = b.k "
    "WHERE b.k IS NULL AND a.x > 0 AND a.s LIKE 's1%'",
    # RIGHT JOIN, the left side tested
    "SELECT b.k, b.w, a.x FROM a RIGHT JOIN b ON a.k = b.k WHERE a.k IS NULL",
    # aggregates over it; counted right columns count nothing
    "SELECT count(*), count(b.w), sum(a.x) FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL",
    "SELECT a.k2, count(*) FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL GROUP BY a.k2",
    # nested: the left join under an inner join; two of them in a row (TPC-DS Q78's shape)
    "SELECT a.k, c.z FROM a LEFT JOIN b ON a.k = b.k JOIN c ON a.k = c.ck WHERE b.k IS NULL",
    "SELECT a.k FROM a LEFT JOIN b ON a.k = b.k LEFT JOIN c ON a.k = c.ck "
    "WHERE b.k IS NULL AND c.ck IS NULL",
    # text keys; USING
    "SELECT a.s, a.x FROM a LEFT JOIN b ON a.s = b.t WHERE b.t IS NULL",
    "SELECT k, a.x FROM a LEFT JOIN b USING (k) WHERE b.k IS NULL",
    # in a subquery and a CTE
    "WITH m AS (SELECT a.* FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL) "
    "SELECT k2, count(*) FROM m GROUP BY k2",
    "SELECT * FROM c WHERE c.ck IN (SELECT a.k FROM a LEFT JOIN b ON a.k = b.k WHERE b.k IS NULL)",
]

KEPT_LEFT = [
    # b.w is not in the condition: a matched row with a NULL w passes too
    "SELECT a.k, a.x, b.w FROM a LEFT JOIN b ON a.k = b.k WHERE b.w IS NULL",
    # b.t's NULL does not make `a.s = b.t OR b.t IS NULL` untrue
    "SELECT a.k, b.t FROM a LEFT JOIN b ON a.s = b.t OR b.t IS NULL WHERE b.t IS NULL",
    # IS NOT DISTINCT FROM matches a NULL b.k
    "SELECT a.k, a.x FROM a LEFT JOIN b ON a.k IS NOT DISTINCT FROM b.k WHERE b.k IS NULL",
    # a FULL join keeps its kind
    "SELECT a.k, b.k AS bk FROM a FULL JOIN b ON a.k = b.k WHERE b.k IS NULL",
]


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("sql", REWRITTEN + KEPT_LEFT)
def test_answers_match_duckdb(sql, partitions):
    assert_answers_as_duckdb(sql, _tables(), partitions)


def _optimized(sql):
    ctx = pqe.Context(partitions=2)
    for name, t in _tables().items():
        ctx.register_arrow(name, t)
    return ctx.sql(sql).explain().split("== Optimized Logical Plan ==")[1].split("==")[0]


@pytest.mark.parametrize("sql", REWRITTEN[:5] + REWRITTEN[10:11])
def test_null_test_on_a_rejected_column_is_an_anti_join(sql):
    plan = _optimized(sql)
    assert "Join(anti)" in plan and "Join(left)" not in plan and "Join(right)" not in plan, plan


@pytest.mark.parametrize("sql", KEPT_LEFT[:3])
def test_null_test_the_condition_allows_keeps_the_left_join(sql):
    plan = _optimized(sql)
    assert "Join(left)" in plan and "Join(anti)" not in plan, plan
