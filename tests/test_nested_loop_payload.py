"""Nested-loop joins (a join condition without an equality: an OR of conditions) evaluate
the condition on the columns it reads and take the output's other columns for the matched
pairs only (kernels.join.nested_loop_join): every join kind against DuckDB, with text
payload the condition does not read, NULLs, an empty side, and blocks of pairs smaller than
a side (BLOCK_PAIRS)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.kernels import join as joins
from pqe.testing import oracle
from pqe.testing.compare import compare


def _tables():
    rng = np.random.default_rng(3)
    a = pa.table({"k": pa.array(rng.integers(0, 30, 300), pa.int64()),
                  "x": pa.array([None if i % 11 == 0 else int(v) for i, v in
                                 enumerate(rng.integers(0, 50, 300))], pa.int64()),
                  "pa": pa.array([f"left ü {i}" for i in range(300)])})
    b = pa.table({"k": pa.array(rng.integers(0, 30, 120), pa.int64()),
                  "z": pa.array(rng.integers(0, 50, 120), pa.int64()),
                  "pb": pa.array([None if i % 7 == 0 else f"right {i}" for i in range(120)])})
    return a, b


A, B = _tables()
CON = oracle.connect({"a": A, "b": B, "e": B.slice(0, 0)})
COND = "(a.k = b.k and a.x < b.z) or b.z = 7"


@pytest.mark.parametrize("sql", [
    f"select a.pa, b.pb, a.x, b.z from a join b on {COND}",
    f"select a.pa, b.pb from a left join b on {COND}",
    f"select a.pa, b.pb, b.k from a full join b on {COND}",
    f"select a.pa, b.pb from a right join b on {COND}",
    f"select a.pa from a where exists (select 1 from b where {COND})",
    f"select a.pa from a where not exists (select 1 from b where {COND})",
    "select a.pa, b.pb from a left join e as b on (a.k = b.k and a.x < b.z) or b.z = 7",
    "select count(*), min(a.pa), max(b.pb) from a, b",
])
@pytest.mark.parametrize("block", [joins.BLOCK_PAIRS, 1000], ids=["blocks", "small-blocks"])
def test_nested_loop_joins_match_duckdb(sql, block, monkeypatch):
    monkeypatch.setattr(joins, "BLOCK_PAIRS", block)
    with pqe.Context(partitions=3) as c:
        for name, t in (("a", A), ("b", B), ("e", B.slice(0, 0))):
            c.register_arrow(name, t)
        assert "NestedLoopJoin" in c.sql(sql).explain()
        got = c.sql(sql).to_arrow()
    miss = compare(got, oracle.query(CON, sql), ordered=False, check_types=False)
    assert miss is None, f"{sql}\n{miss}"
