"""Bounded memory on one machine: `Context(memory_limit=...)` on the threaded scheduler plans
partitions sized by bytes and hash exchanges through local disk when the plan's estimate
exceeds the limit, instead of refusing or holding every shuffle piece in memory.

The session applies the limit to the planner with `physical.planner.bound_memory` (the
`bounded` helper below does what SessionState.physical_plan does for such a Context)."""

from __future__ import annotations

import os
import re
from dataclasses import replace

import pytest

from helpers import (assert_same, duck_arrow, duckdb_tpch, has_top_level_order, register_tpch,
                     tpch_query)

import pqe
from pqe.execution import exchange
from pqe.physical.planner import PlannerConfig, bound_memory


def bounded(ctx: pqe.Context) -> pqe.Context:
    ex = ctx.session.executor
    cfg = ctx.session.config
    ctx.session.config = replace(cfg, planner=bound_memory(cfg.planner, ex.memory_limit,
                                                           ex.threads))
    return ctx


@pytest.fixture(scope="module")
def sf01():
    """SF0.1 with small row groups (~70 in lineitem), so scans can split by bytes."""
    from data.tpch import generate

    root = generate(0.1, row_group_bytes="256KB")
    duck = duckdb_tpch(root)
    yield root, duck
    duck.close()


def test_memory_limit_on_threads_is_accepted_and_parsed():
    ctx = pqe.Context(memory_limit="48MiB")
    try:
        assert ctx.session.executor.kind == "threads"
        assert ctx.session.executor.memory_limit == 48 << 20
    finally:
        ctx.close()
    with pytest.raises(pqe.Error, match="memory_limit="):
        pqe.Context(memory_limit="lots")


def test_bound_memory_sizes_partitions_by_bytes():
    cfg = bound_memory(PlannerConfig(), 2 << 30, 2)
    assert cfg.memory_limit == 2 << 30 and cfg.max_partition_bytes == 128 << 20
    assert bound_memory(PlannerConfig(), None, 2) == PlannerConfig()


def test_exchanges_go_to_disk_when_the_estimate_exceeds_the_limit(sf01):
    """16 partitions, a 16 MiB limit: q9's estimate (~16 MiB) exceeds half of it (what
    operators may hold between tasks), so its hash exchanges are disk-backed; q7's (~3 MiB)
    does not, so its exchanges stay in memory. (q13 served here until its LEFT join streamed
    orders through customer without any hash exchange.)"""
    from pqe.physical.plan import estimated_memory

    root, _ = sf01
    ctx = bounded(register_tpch(pqe.Context(memory_limit="16MiB", partitions=16), root))
    try:
        for query, kind in (("q9", "p2p"), ("q7", "tasks")):
            df = ctx.sql(tpch_query(query))
            text = df.explain().split("== Physical Plan ==")[1]
            kinds = re.findall(r"Exchange\[hash\(.*?\), (\w+)\]", text)
            assert kinds and set(kinds) == {kind}, (query, text)
            over = estimated_memory(df.physical_plan()) > (8 << 20)  # half the limit
            assert over == (kind == "p2p")
    finally:
        ctx.close()


@pytest.mark.parametrize("query", ["q9", "q13", "q18", "q20", "q3"])
def test_answers_under_a_memory_limit(sf01, query):
    root, duck = sf01
    ctx = bounded(register_tpch(pqe.Context(memory_limit="8MiB", partitions=16), root))
    try:
        sql = tpch_query(query)
        assert_same(ctx.sql(sql).to_arrow(), duck_arrow(duck, sql),
                    ordered=has_top_level_order(sql))
        left = exchange.root()
        assert not os.path.isdir(left) or not os.listdir(left), os.listdir(left)
    finally:
        ctx.close()


def test_partitions_are_sized_by_bytes(sf01):
    """The same data, a smaller limit: more scan partitions (rows alone would give 3)."""
    root, _ = sf01
    plain = register_tpch(pqe.Context(), root)
    ctx = register_tpch(pqe.Context(memory_limit="8MiB"), root)
    try:
        cfg = ctx.session.config
        # 1 MiB partitions, and no floor on rows (the floor keeps partitions >= 250k rows)
        ctx.session.config = replace(cfg, planner=replace(
            bound_memory(cfg.planner, 8 << 20, 2), max_partition_bytes=1 << 20,
            min_partition_rows=1))
        sql = "select sum(l_extendedprice) from lineitem"
        n_plain = max(map(int, _parts(plain.sql(sql).explain())))
        n_bounded = max(map(int, _parts(ctx.sql(sql).explain())))
        assert n_bounded >= 2 * n_plain, (n_plain, n_bounded)
        assert ctx.sql(sql).to_pylist() == plain.sql(sql).to_pylist()
    finally:
        ctx.close()
        plain.close()


def _parts(text: str) -> list[str]:
    return re.findall(r"\[partitions=(\d+)\]", text)
