"""Shared test helpers: TPC-H data, the DuckDB oracle (pqe.testing.oracle) and result
comparison (pqe.testing.compare)."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa

import pqe
from data.tpch import TABLES, generate, table_path
from pqe.testing import oracle
from pqe.testing.compare import compare

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


def duckdb_tpch(root: Path):
    """The DuckDB oracle (pqe.testing.oracle: pqe's semantics) with the TPC-H tables as views."""
    con = oracle.connect(threads=2)
    for t in TABLES:
        p = table_path(root, t)
        pattern = str(p / "*.parquet") if p.is_dir() else str(p)
        con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{pattern}')")
    return con


def duck_arrow(con, sql: str, params=None) -> pa.Table:
    """DuckDB's answer, with DuckDB's type names in the field metadata (see oracle.query)."""
    return oracle.query(con, sql, params)


def assert_same(result: pa.Table, expected: pa.Table, ordered: bool = False,
                rel: float = 1e-6, *, sql: str | None = None, **kwargs) -> None:
    """`result` is the answer `expected` is (pqe.testing.compare: names, logical types, values).

    Rows compare as a multiset; `ordered=True` in exact sequence; `sql=` takes the ORDER BY
    keys (ties in any order) and LIMIT from the query text; `order_by=`, `limit=`,
    `check_types=` ... go to `compare`."""
    m = compare(result, expected, ordered=ordered, float_rel=rel, sql=sql, **kwargs)
    assert m is None, str(m)


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


def duckdb_with(tables: dict[str, pa.Table]):
    """A plain DuckDB connection with `tables` registered by name."""
    import duckdb

    con = duckdb.connect()
    for name, t in tables.items():
        con.register(name, t)
    return con


def assert_answers_as_duckdb(sql: str, tables: dict[str, pa.Table], partitions: int,
                             **kwargs) -> None:
    """pqe at `partitions` gives DuckDB's answer to `sql` over `tables` (registered in both;
    order and LIMIT from the query text, `check_types=False` unless given)."""
    ctx = pqe.Context(partitions=partitions)
    for name, t in tables.items():
        ctx.register_arrow(name, t)
    expected = duckdb_with(tables).sql(sql).arrow()
    expected = expected.read_all() if hasattr(expected, "read_all") else expected
    kwargs.setdefault("check_types", False)
    assert_same(ctx.sql(sql).to_arrow(), expected, sql=sql, **kwargs)


def context_with(kind: str, tables: dict[str, pa.Table]) -> pqe.Context:
    """A Context of `kind` (threaded: 2 threads; partitions4: 4 partitions; sync; cluster: 2
    LocalCluster workers of 1 GiB, 4 partitions) with `tables` registered as Arrow tables."""
    ctx = {"threaded": lambda: pqe.Context(threads=2),
           "partitions4": lambda: pqe.Context(partitions=4),
           "sync": lambda: pqe.Context(scheduler="sync"),
           "cluster": lambda: pqe.Context(workers=2, memory_limit="1GiB", partitions=4)}[kind]()
    for name, t in tables.items():
        ctx.register_arrow(name, t)
    return ctx


def _comparable(x):
    """A value as the oracles' value of it compares: whole DECIMALs and floats as ints."""
    import decimal

    if isinstance(x, decimal.Decimal):
        return int(x) if x == x.to_integral_value() else float(x)
    if isinstance(x, float) and x.is_integer():
        return int(x)
    return x


def sorted_rows(rows):
    """Rows as a sorted list of tuples of comparable values, NULLs (None) sorting apart from
    every value: pqe's and DuckDB's rows of a query without ORDER BY, compared as sets."""
    rows = [tuple(_comparable(x) for x in r) for r in rows]
    return sorted(rows, key=lambda r: tuple((x is None, type(x).__name__, str(x)) for x in r))
