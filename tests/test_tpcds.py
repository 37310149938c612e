"""TPC-DS: all 99 queries at SF0.01 (tpcgen-cli data) answer as DuckDB does, checked by
benchmarks.tpcds (row order only where the query orders, LIMIT ties accepted). The queries
are read from ../shared/tpcds/queries when that directory is there, as the SQLite corpus is."""

from __future__ import annotations

import pytest

from benchmarks import tpcds

pytestmark = [
    pytest.mark.skipif(not (tpcds.REPO / tpcds.DEFAULT_QUERIES_DIR).is_dir(),
                       reason="the TPC-DS queries (../shared/tpcds/queries) are not present"),
    pytest.mark.timeout(1800),
]


def test_all_99_queries_answer_as_duckdb():
    args = tpcds.parse_args(["--sf", "0.01", "--max-memory", "0", "--no-write"])
    run = tpcds.run(args, log=lambda line: None)
    counts = run.counts()
    bad = [f"{r.query}: {r.status} {r.error_class} {r.error}" for r in run.results if r.status != "pass"]
    assert counts["pass"] == 99, "\n".join(bad)
