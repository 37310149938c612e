"""Findings of the third round of adversarial hunts (2026-12-05, second session) and the items
the previous round found and left. Each test fails on the code before its fix."""

from __future__ import annotations

import pytest

import pqe


@pytest.mark.parametrize("typ", ["DOUBLE", "REAL"])
def test_on_conflict_matches_keys_as_sql_compares_them(typ):
    """ON CONFLICT (k) DO UPDATE matched keys by their bits: -0.0 proposed beside a stored 0.0
    was no conflict, was inserted and then failed the PRIMARY KEY check (DuckDB updates)."""
    ctx = pqe.Context()
    ctx.sql(f"CREATE TABLE t (k {typ} PRIMARY KEY, v INT)")
    ctx.sql("INSERT INTO t VALUES (0.0, 1), ('NaN', 3)")
    ctx.sql("INSERT INTO t VALUES (-0.0, 2), ('-NaN', 4) ON CONFLICT (k) DO UPDATE SET v = excluded.v")
    rows = ctx.sql("SELECT k, v FROM t ORDER BY v").to_pylist()
    assert [r["v"] for r in rows] == [2, 4] and rows[0]["k"] == 0.0
    ctx.sql("INSERT INTO t VALUES (-0.0, 9) ON CONFLICT (k) DO NOTHING")
    assert ctx.sql("SELECT count(*) AS n FROM t").to_pylist() == [{"n": 2}]
