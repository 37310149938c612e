"""Shared test helpers: TPC-H data, a DuckDB oracle, and result comparison."""

from __future__ import annotations

import datetime
import decimal
import math
import re
from pathlib import Path

import duckdb
import pyarrow as pa

import pqe
from data.tpch import TABLES, generate, table_path

ROOT = Path(__file__).resolve().parents[1]
TPCH_SQL = ROOT / "sql" / "tpch"
TPCH_QUERIES = [f"q{i}" for i in range(1, 23)]
# Test data: SF0.01 in two files per table with small row groups, so scans can be split into
# 4+ partitions and directory registration is exercised.
TEST_SF = 0.01


def tpch_data(sf: float = TEST_SF) -> Path:
    if sf == TEST_SF:
        return generate(sf, parts=2, row_group_bytes="256KB")
    return generate(sf)


def tpch_query(name: str) -> str:
    return (TPCH_SQL / f"{name}.sql").read_text()


def register_tpch(ctx: pqe.Context, root: Path) -> pqe.Context:
    for t in TABLES:
        ctx.register_parquet(t, str(table_path(root, t)))
    return ctx


def duckdb_tpch(root: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("SET integer_division = true")
    con.execute("SET default_null_order = 'nulls_last_on_asc_first_on_desc'")
    con.execute("SET error_on_division_by_zero = false")
    con.execute("SET threads = 2")
    for t in TABLES:
        p = table_path(root, t)
        pattern = str(p / "*.parquet") if p.is_dir() else str(p)
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{pattern}')")
    return con


def duck_arrow(con, sql: str) -> pa.Table:
    return con.sql(sql).to_arrow_table()


def _norm(v):
    if isinstance(v, decimal.Decimal):
        return ("num", v)
    if isinstance(v, float):
        return ("num", v)
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int):
        return ("num", v)
    if isinstance(v, datetime.datetime):
        return ("dt", v)
    if isinstance(v, datetime.date):
        return ("dt", datetime.datetime(v.year, v.month, v.day))
    return ("v", v)


def _close(a, b, rel: float) -> bool:
    if a == b:
        return True
    ka, va = a
    kb, vb = b
    if ka != kb:
        return False
    if ka == "num":
        if isinstance(va, decimal.Decimal) and isinstance(vb, decimal.Decimal):
            return va == vb
        fa, fb = float(va), float(vb)
        if math.isnan(fa) and math.isnan(fb):
            return True
        return math.isclose(fa, fb, rel_tol=rel, abs_tol=1e-9)
    return False


def _sort_key(row):
    return tuple((k, str(v) if k != "num" else float(v)) if v is not None else ("", "") for k, v in row)


def assert_same(result: pa.Table, expected: pa.Table, ordered: bool = False,
                rel: float = 1e-6) -> None:
    """Same rows (as a multiset unless `ordered`): decimals exactly, floats to `rel`."""
    assert result.num_columns == expected.num_columns, (
        f"{result.num_columns} columns, expected {expected.num_columns}: "
        f"{result.column_names} vs {expected.column_names}")
    assert result.num_rows == expected.num_rows, f"{result.num_rows} rows, expected {expected.num_rows}"
    got = [tuple(_norm(v) if v is not None else None for v in r.values()) for r in result.to_pylist()]
    want = [tuple(_norm(v) if v is not None else None for v in r.values()) for r in expected.to_pylist()]
    if not ordered:
        got = sorted(got, key=lambda r: _sort_key([x or ("", None) for x in r]))
        want = sorted(want, key=lambda r: _sort_key([x or ("", None) for x in r]))
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        for j, (a, b) in enumerate(zip(g, w, strict=True)):
            if a is None or b is None:
                assert a is None and b is None, f"row {i} column {j}: {a} != {b}"
            else:
                assert _close(a, b, rel), f"row {i} column {j}: {a[1]!r} != {b[1]!r}"


def has_top_level_order(sql: str) -> bool:
    text = re.sub(r"--[^\n]*", "", sql).strip().rstrip(";").lower()
    depth = 0
    last_order = -1
    for m in re.finditer(r"[()]|order\s+by", text):
        tok = m.group(0)
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0:
            last_order = m.start()
    return last_order >= 0
