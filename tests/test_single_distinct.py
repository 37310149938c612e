"""One DISTINCT argument beside plain aggregates runs in one pass over the input
(optimizer.distinct_aggregates._single_distinct): `GROUP BY k, x` computing the plain
aggregates' parts, then `GROUP BY k` combining them. Checked against DuckDB on the inputs
that could make such a split silently wrong: NULL group keys and NULL distinct values, a
value repeated within and across groups, FILTER on either kind of aggregate, empty inputs
with and without GROUP BY, integer sums near the type's limit, decimals, doubles and text,
on 1 and 3 partitions and on the synchronous scheduler."""

from decimal import Decimal as D

import pyarrow as pa
import pytest

import pqe
from pqe.optimizer.distinct_aggregates import rewrite_distinct_aggregates
from pqe.plan import logical as L
from pqe.testing import oracle
from pqe.testing.compare import compare

T = pa.table({
    "k": pa.array([1, 1, 1, 2, 2, None, None, 3, 1, 2, None, 3], pa.int64()),
    "g": ["a", "a", "b", "b", None, "a", "a", "c", "b", "b", None, "c"],
    "x": pa.array([5, 5, None, 7, 7, 5, None, 9, 6, 8, 5, 9], pa.int32()),
    "y": pa.array([1, 2, 3, None, 5, 6, 7, 8, 9, 10, 11, None], pa.int32()),
    "big": pa.array([2**62, 2**62, -3, 4, 5, 6, 7, 8, 9, 10, 11, 12], pa.int64()),
    "d": pa.array([D("1.10"), D("2.20"), None, D("-0.05"), D("5.00"), D("6.60"), D("0.01"),
                   D("8.80"), D("9.90"), None, D("1.00"), D("2.00")], pa.decimal128(10, 2)),
    "f": [1.5, -0.0, 0.0, float("nan"), 2.5, None, 3.5, float("inf"), 1.0, 2.0, 3.0, 4.0],
    "s": ["p", "q", None, "r", "p", "q", "ü", "z", "é", "a", "b", None],
})
E = T.slice(0, 0)

QUERIES = [
    "SELECT k, count(DISTINCT x), sum(y), count(*), count(y), min(s), max(d) FROM t GROUP BY k",
    "SELECT count(DISTINCT x), sum(y), count(*), min(f), max(f) FROM t",
    "SELECT g, k, sum(DISTINCT x), count(DISTINCT x), sum(d), max(s) FROM t GROUP BY g, k",
    "SELECT k, count(DISTINCT s), sum(big), min(big) FROM t GROUP BY k",
    "SELECT k, count(DISTINCT x) FILTER (WHERE y > 2), sum(y) FILTER (WHERE x = 5), "
    "count(*) FILTER (WHERE s IS NULL) FROM t GROUP BY k",
    "SELECT count(DISTINCT x + 1), sum(f), count(f) FROM t WHERE k IS NOT NULL",
    "SELECT k, count(DISTINCT d), sum(x), max(x) FROM t GROUP BY k HAVING count(DISTINCT d) > 1",
    "SELECT count(DISTINCT x), sum(y), count(*) FROM t WHERE y > 100",
    "SELECT k, count(DISTINCT x), sum(y), count(*) FROM t WHERE y > 100 GROUP BY k",
    # not split (AVG, STRING_AGG): the branch form, same answers
    "SELECT k, count(DISTINCT x), avg(y) FROM t GROUP BY k",
]


@pytest.fixture(scope="module")
def duck():
    pytest.importorskip("duckdb")
    return {name: oracle.connect({"t": table}) for name, table in (("full", T), ("empty", E))}


@pytest.mark.parametrize("data", ["full", "empty"])
@pytest.mark.parametrize("setup", [{"partitions": 1}, {"partitions": 3},
                                   {"partitions": 3, "scheduler": "sync"}],
                         ids=["1p", "3p", "sync"])
@pytest.mark.parametrize("sql", QUERIES)
def test_matches_duckdb(duck, sql, setup, data):
    ctx = pqe.Context(**setup)
    ctx.register_arrow("t", T if data == "full" else E)
    got = ctx.sql(sql + " ORDER BY 1, 2").to_arrow() if "GROUP BY" in sql else \
        ctx.sql(sql).to_arrow()
    want = oracle.query(duck[data], sql + " ORDER BY 1, 2" if "GROUP BY" in sql else sql)
    m = compare(got, want, sql=sql)
    assert m is None, f"{sql}: {m}"


def _plan(sql):
    ctx = pqe.Context()
    ctx.register_arrow("t", T)
    return rewrite_distinct_aggregates(ctx.sql(sql).logical_plan())


def _nodes(plan, cls):
    out = [plan] if isinstance(plan, cls) else []
    for k in plan.children():
        out += _nodes(k, cls)
    return out


def test_one_distinct_beside_plain_aggregates_is_one_pass():
    plan = _plan("SELECT k, count(DISTINCT x), sum(y), count(*) FROM t GROUP BY k")
    assert _nodes(plan, L.Join) == []  # no branch joined back: the input is read once
    outer, inner = _nodes(plan, L.Aggregate)
    assert len(inner.group) == 2 and len(inner.aggs) == 2
    assert not any(a.distinct for a in outer.aggs + inner.aggs)


@pytest.mark.parametrize("sql", [
    "SELECT k, count(DISTINCT x), avg(y) FROM t GROUP BY k",
    "SELECT k, count(DISTINCT x), string_agg(s, ',') FROM t GROUP BY k",
    "SELECT k, count(DISTINCT x), count(DISTINCT y), sum(y) FROM t GROUP BY k",
])
def test_other_shapes_keep_the_branch_form(sql):
    assert len(_nodes(_plan(sql), L.Join)) >= 1
