"""All 22 TPC-H queries, unchanged, against DuckDB on the same files: 1 and 4 partitions,
sync and threaded schedulers."""

from __future__ import annotations

import pytest

from helpers import TPCH_QUERIES, assert_same, duck_arrow, register_tpch, tpch_query

import pqe

CONFIGS = [("sync", 1), ("sync", 4), ("threads", 1), ("threads", 4)]


@pytest.fixture(scope="module", params=CONFIGS, ids=lambda c: f"{c[0]}-{c[1]}p")
def configured(request, tpch_dir):
    scheduler, partitions = request.param
    ctx = register_tpch(pqe.Context(scheduler=scheduler, partitions=partitions), tpch_dir)
    yield ctx, partitions
    ctx.close()


@pytest.mark.parametrize("query", TPCH_QUERIES)
def test_tpch_matches_duckdb(configured, duck, query):
    ctx, partitions = configured
    sql = tpch_query(query)
    expected = duck_arrow(duck, sql)
    df = ctx.sql(sql)
    result = df.to_arrow()
    assert result.column_names == expected.column_names
    assert_same(result, expected, sql=sql)


def test_partitions_are_used(configured):
    """With partitions=4 the big scans really are split (the parametrization is not a no-op)."""
    ctx, partitions = configured
    phys = ctx.sql("select count(*) from lineitem").physical_plan()
    scans = []

    def rec(p):
        if type(p).__name__ == "ScanExec":
            scans.append(p)
        for c in p.children():
            rec(c)

    rec(phys)
    assert scans and scans[0].n == partitions
