"""A gathered final aggregation step feeding a partitioned join on its group keys runs
hash-partitioned on those keys instead (physical.planner._final_step_hashed): its states are
hashed once, to where the join wants the rows, not gathered into one task and hashed again.
The answers must not change: checked against DuckDB over NULL keys, renamed keys, extra group
keys, inner and outer joins, at several partition counts."""

from __future__ import annotations

from dataclasses import replace

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.testing.compare import compare


def _tables():
    rng = np.random.default_rng(5)
    n = 3000

    def keys(size, top):
        return pa.array(rng.integers(0, top, size), mask=rng.random(size) < 0.05)

    f = pa.table({"k1": keys(n, 40), "k2": keys(n, 7), "e": rng.integers(0, 3, n),
                  "v": rng.integers(-50, 50, n)})
    g = pa.table({"k1": keys(n, 50), "k2": keys(n, 7), "w": rng.random(n)})
    return f, g


QUERIES = [
    # a partitioned input joined with a gathered final step on all its keys
    "SELECT f.k1, f.k2, f.v, b.t FROM f JOIN (SELECT k1, k2, count(*) AS t FROM g "
    "GROUP BY k1, k2) b ON f.k1 = b.k1 AND f.k2 = b.k2",
    # renamed keys, a group key the join does not use, a LEFT join keeping NULL-key rows
    "SELECT f.k1, f.e, f.v, y.t FROM f LEFT JOIN (SELECT k1 AS kk, k2, max(w) AS t FROM g "
    "GROUP BY k1, k2) y ON f.k1 = y.kk AND f.k2 = y.k2",
    # the aggregate on the preserved side of a FULL join and of a RIGHT join
    "SELECT g.k2, g.w, x.s FROM (SELECT k2, e, sum(v) AS s FROM f GROUP BY k2, e) x "
    "FULL JOIN g ON x.k2 = g.k2 AND x.e = g.k1",
    "SELECT f.k1, f.v, y.t FROM (SELECT k1, avg(w) AS t FROM g GROUP BY k1) y "
    "RIGHT JOIN f ON f.k1 = y.k1",
    # both sides aggregates (one partition each: the join runs in one)
    "SELECT a.k1, a.k2, a.s, b.t FROM (SELECT k1, k2, sum(v) AS s FROM f GROUP BY k1, k2) a "
    "JOIN (SELECT k1, k2, count(*) AS t FROM g GROUP BY k1, k2) b "
    "ON a.k1 = b.k1 AND a.k2 = b.k2",
]


@pytest.mark.parametrize("partitions", [1, 3, 5])
@pytest.mark.parametrize("sql", QUERIES)
def test_answers_match_duckdb_with_partitioned_joins(sql, partitions):
    f, g = _tables()
    ctx = pqe.Context(partitions=partitions)
    ctx.register_arrow("f", f)
    ctx.register_arrow("g", g)
    cfg = ctx.session.config
    # no broadcasts: every join hashes both sides
    ctx.session.config = replace(cfg, planner=replace(cfg.planner, broadcast_bytes=0))
    con = duckdb.connect()
    con.register("f", f)
    con.register("g", g)
    expected = con.sql(sql).arrow()
    expected = expected.read_all() if hasattr(expected, "read_all") else expected
    assert compare(ctx.sql(sql).to_arrow(), expected, sql=sql) is None


def test_the_final_step_is_hashed_for_the_join_not_gathered():
    f, g = _tables()
    ctx = pqe.Context(partitions=3)
    ctx.register_arrow("f", f)
    ctx.register_arrow("g", g)
    cfg = ctx.session.config
    ctx.session.config = replace(cfg, planner=replace(cfg.planner, broadcast_bytes=0))
    for sql in QUERIES[:2]:
        text = ctx.sql(sql).explain()
        plan = text[text.index("== Physical Plan =="):]
        assert "HashJoin[partitioned]" in plan and "[partitions=3]" in plan
        assert "Exchange[gather]" not in plan, plan
        assert "Aggregate[final]: groupBy=[k1, k2] aggr=" in plan
        final = next(line for line in plan.splitlines() if "Aggregate[final]" in line)
        assert final.endswith("[partitions=3]"), plan
