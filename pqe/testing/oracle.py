"""The DuckDB oracle: one connection factory with pqe's semantics, for tests, the fuzzer and
the benchmarks.

    from pqe.testing import oracle
    con = oracle.connect({"t": arrow_table})
    expected = oracle.query(con, "SELECT ...")           # a pyarrow.Table
    expected = oracle.query(con, "SELECT ? + 1", [41])   # DuckDB's own ? binding

DuckDB is imported when a connection is made, never when this module is imported: pqe ships
pqe.testing in its wheel and does not depend on DuckDB.

The settings make DuckDB answer with pqe's semantics where the two differ by default:

- integer_division = true: `/` between integers truncates (pqe, PostgreSQL) instead of giving
  a DOUBLE;
- default_null_order = nulls_last_on_asc_first_on_desc: NULLs sort as the largest value, as
  in pqe and PostgreSQL (DuckDB's default puts them last both ways);
- error_on_division_by_zero = false: x / 0 is NULL, as in pqe (when the setting exists);
- TimeZone = UTC: TIMESTAMPTZ values display and cast in UTC, pqe's only zone;
- python_enable_replacements = false: a table name the test did not register is an error,
  not a Python variable of that name found in the caller's frame;
- threads: 1 by default, so the oracle does not compete with pqe for the cores.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from .compare import DUCKDB_TYPE_KEY

__all__ = ["SETTINGS", "connect", "query", "register"]

# name -> value; applied in order, a setting the installed DuckDB does not know is skipped
SETTINGS: dict[str, str] = {
    "integer_division": "true",
    "default_null_order": "'nulls_last_on_asc_first_on_desc'",
    "error_on_division_by_zero": "false",
    "TimeZone": "'UTC'",
    "python_enable_replacements": "false",
}


def connect(tables: Mapping[str, pa.Table] | None = None, *, threads: int = 1,
            database: str = ":memory:", **settings: Any):
    """A DuckDB connection configured like pqe (SETTINGS, `threads`, then `settings`), with
    `tables` registered as views of the given Arrow tables."""
    import duckdb

    con = duckdb.connect(database)
    merged = dict(SETTINGS)
    merged["threads"] = str(int(threads))
    merged.update({k: (v if not isinstance(v, str) else f"'{v}'") for k, v in settings.items()})
    for name, value in merged.items():
        try:
            con.execute(f"SET {name} = {value}")
        except duckdb.Error:
            if name not in ("error_on_division_by_zero", "python_enable_replacements"):
                raise
    for name, table in (tables or {}).items():
        register(con, name, table)
    return con


def register(con, name: str, table: pa.Table) -> None:
    con.register(name, table)


# INSERT INTO t [(cols)] <query>, the query not followed by clauses of the INSERT itself. The
# column list is atomic (never given back to let its "(" pass for a parenthesized query:
# INSERT INTO t (c0) VALUES ... is not an INSERT ... SELECT) and cannot start with SELECT/WITH
_INSERT_QUERY = re.compile(r"(?>\s*INSERT\s+INTO\s+(\w+)\s*"
                           r"(\((?!\s*(?:SELECT|WITH)\b)[\w\s,]*\))?)\s*(?=SELECT\b|WITH\b|\()",
                           re.IGNORECASE)
_INSERT_TAIL = re.compile(r"\b(ON\s+CONFLICT|RETURNING|BY\s+NAME)\b", re.IGNORECASE)
_SOURCE = "__pqe_oracle_insert_source"


def query(con, sql: str, params: Sequence[Any] | None = None) -> pa.Table:
    """Run `sql` (with DuckDB's own `?` binding of `params`) and return the result as Arrow,
    each field carrying DuckDB's type name in its metadata (b'duckdb_type'), which tells a
    HUGEINT (exported as decimal128(38, 0)) from a DECIMAL(38, 0).

    `INSERT INTO t ... SELECT` runs as its query into a temporary table, then the insert of
    that table: DuckDB 2.0 (threads = 1) lets the query read rows the same statement has
    already inserted into t (`INSERT INTO t SELECT ... FROM t UNION ALL SELECT ... FROM t`
    inserts the second branch's rows twice), where SQL reads t as it was before the
    statement (known finding K34)."""
    m = _INSERT_QUERY.match(sql)
    if m and not _INSERT_TAIL.search(sql, m.end()):
        con.execute(f"DROP TABLE IF EXISTS {_SOURCE}")
        source = f"CREATE TEMP TABLE {_SOURCE} AS {sql[m.end():]}"
        con.execute(source, params) if params is not None else con.execute(source)
        try:
            return _query(con, f"INSERT INTO {m.group(1)} {m.group(2) or ''} "
                               f"SELECT * FROM {_SOURCE}", None)
        finally:
            con.execute(f"DROP TABLE IF EXISTS {_SOURCE}")
    return _query(con, sql, params)


def _query(con, sql: str, params: Sequence[Any] | None) -> pa.Table:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Arrow output on a DB-API result makes a copy"
        cur = con.execute(sql, params) if params is not None else con.execute(sql)
        description = cur.description
        fetch = getattr(cur, "to_arrow_table", None) or cur.fetch_arrow_table
        table = fetch()
    if not description:
        return table
    fields = []
    for f, d in zip(table.schema, description):
        meta = dict(f.metadata or {})
        meta[DUCKDB_TYPE_KEY] = str(d[1]).encode()
        fields.append(f.with_metadata(meta))
    return pa.Table.from_arrays(table.columns, schema=pa.schema(fields))
