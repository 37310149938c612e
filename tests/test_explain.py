"""EXPLAIN: deterministic text, pinned as golden files (PQE_UPDATE_GOLDEN=1 rewrites them),
and the facts the plans must show for TPC-H Q3 and Q5."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import TPCH_QUERIES, register_tpch, tpch_query

import pqe

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture(scope="module")
def ctx4(tpch_dir):
    ctx = register_tpch(pqe.Context(partitions=4), tpch_dir)
    yield ctx
    ctx.close()


@pytest.mark.parametrize("query", TPCH_QUERIES)
def test_explain_matches_golden(ctx4, query):
    text = ctx4.sql(tpch_query(query)).explain() + "\n"
    path = GOLDEN / f"tpch_{query}.explain"
    if os.environ.get("PQE_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}: run with PQE_UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"plan changed; rerun with PQE_UPDATE_GOLDEN=1 if intended ({path})"


def test_explain_is_deterministic_across_contexts(tpch_dir):
    texts = set()
    for _ in range(2):
        ctx = register_tpch(pqe.Context(partitions=4), tpch_dir)
        texts.add(ctx.sql(tpch_query("q5")).explain())
        ctx.close()
    assert len(texts) == 1


def _physical(ctx, q):
    text = ctx.sql(tpch_query(q)).explain()
    return text[text.index("== Physical Plan =="):]


def test_q3_plan_shows_pushdown_strategies_and_partitions(ctx4):
    phys = _physical(ctx4, "q3")
    # projection and filter pushed into each scan
    assert ("ParquetScan: lineitem columns=[l_orderkey, l_extendedprice, l_discount, l_shipdate] "
            "filters=[(lineitem.l_shipdate > DATE '1995-03-15')]") in phys
    assert "ParquetScan: customer columns=[c_custkey, c_mktsegment] filters=[(customer.c_mktsegment = 'BUILDING')]" in phys
    assert "filters=[(orders.o_orderdate < DATE '1995-03-15')]" in phys
    # a join strategy for each join, and partition counts on every operator
    assert phys.count("HashJoin[") == 2
    assert all("[partitions=" in line for line in phys.splitlines()[1:])
    assert "lineitem" in phys and "[partitions=4]" in phys
    assert "TopN:" in phys and "fetch=10" in phys
    assert "NestedLoopJoin" not in phys


def test_q5_plan_has_no_cross_product(ctx4):
    phys = _physical(ctx4, "q5")
    assert phys.count("HashJoin[") == 5
    assert "NestedLoopJoin" not in phys
    assert "filters=[(region.r_name = 'AFRICA')]" in phys
    assert ("filters=[(orders.o_orderdate >= DATE '1994-01-01'), "
            "(orders.o_orderdate < DATE '1995-01-01')]") in phys


def test_q15_view_used_twice_is_computed_once(ctx4):
    """The revenue view feeds both the join and the max() subquery: one physical subtree, so
    lineitem is scanned once (the Dask tasks have the same keys)."""
    from pqe.physical.plan import ScanExec

    phys = ctx4.sql(tpch_query("q15")).physical_plan()
    seen, stack = [], [phys]
    while stack:
        node = stack.pop()
        if isinstance(node, ScanExec) and node.table == "lineitem":
            seen.append(node)
        stack.extend(node.children())
    assert len(seen) == 2 and seen[0] is seen[1]
    expected = ctx4.sql(tpch_query("q15")).to_pylist()
    assert len(expected) == 1 and expected[0]["total_revenue"] > 0


def test_sql_explain_statement(ctx4):
    out = ctx4.sql("EXPLAIN " + tpch_query("q6")).to_arrow()
    lines = out.column("plan").to_pylist()
    assert lines[0] == "== Logical Plan =="
    assert any(line.startswith("ParquetScan: lineitem") or "ParquetScan: lineitem" in line for line in lines)
    analyzed = ctx4.sql("EXPLAIN ANALYZE " + tpch_query("q6")).to_arrow().column("plan").to_pylist()
    assert any(line.startswith("rows=1 ") for line in analyzed)


def test_same_scan_under_two_aliases_is_read_once(ctx4):
    """Q21's l1 and l3 read lineitem with the same columns and filter: one scan node, whose
    tasks are computed once (a shared node becomes tasks of its own, not fused twice)."""
    from pqe.execution.lower import Lowering
    from pqe.physical.plan import ScanExec

    phys = ctx4.sql(tpch_query("q21")).physical_plan()
    scans, stack = [], [phys]
    while stack:
        node = stack.pop()
        if isinstance(node, ScanExec) and node.table == "lineitem":
            scans.append(node)
        stack.extend(node.children())
    assert len(scans) == 3 and len({id(s) for s in scans}) == 2
    shared = next(s for s in scans if sum(x is s for x in scans) == 2)
    low = Lowering()
    low.materialize(low.lower_plan(phys), "result")
    assert low.tasks_per_label["shared"] == shared.n


def test_physical_decisions_of_q3_q9_q18_are_shown(ctx4):
    """Every physical decision is the planner's and appears in EXPLAIN: the dense (perfect-
    hash) broadcast builds, the aggregation strategy, the int64 decimal arithmetic and the
    unscaled sums handed from the projection to the aggregate."""
    q3 = _physical(ctx4, "q3")
    assert q3.count("HashJoin[broadcast, dense]") == 2
    assert "Aggregate[single]: groupBy=[l_orderkey, o_orderdate, o_shippriority] " \
           "aggr=[sum(agg_arg)] int64_sums=[agg_arg]" in q3
    assert "Project[int64-decimal]: " in q3
    q9 = _physical(ctx4, "q9")
    assert q9.count("HashJoin[broadcast, dense]") >= 3
    # the filtered parts meet partsupp before lineitem (part = lineitem = partsupp on the
    # part key: a class of equal columns), and lineitem probes the two-key result
    assert "HashJoin[broadcast, dense]: inner on=[partsupp.ps_partkey = part.p_partkey]" in q9
    assert "Aggregate[partial]: groupBy=[nation#2, o_year#2]" in q9  # two keys: hash
    assert "Project[int64-decimal]: nation.n_name AS nation" in q9
    q18 = _physical(ctx4, "q18")
    # the subquery groups lineitem by one integer key, clustered in the files: sorted runs
    assert "Aggregate[single, segments]: groupBy=[l_orderkey] aggr=[sum(agg_arg)]" in q18
    assert "HashJoin[broadcast, dense]: semi on=[orders.o_orderkey = l_orderkey]" in q18
