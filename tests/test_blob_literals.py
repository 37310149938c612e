"""BLOB constants and BLOB operations, against DuckDB.

x'4142' was a syntax error ("pqe has no BLOB type", though BLOB columns existed); a constant
'a'::BLOB was "cannot cast" where a column holding 'a' converted; bytes parameters could not
be bound; BLOB || BLOB cast the bytes to text (x'ff' failed with Arrow's bare 'Invalid UTF8
payload'); CAST of a non-UTF-8 BLOB to VARCHAR failed the same way.
"""
from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

import pqe

BLOBS = pa.array([b"AB", b"\x00\xff", b"", None, "é".encode()], pa.binary())


@pytest.fixture(scope="module")
def engines():
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"b": BLOBS, "s": ["a", "b", "", None, "z"]}))
    con = duckdb.connect()
    con.register("t", pa.table({"b": BLOBS, "s": ["a", "b", "", None, "z"]}))
    return ctx, con


def _rows(ctx, sql, params=()):
    return [tuple(r.values()) for r in ctx.sql(sql, params).to_pylist()]


@pytest.mark.parametrize("sql", [
    "SELECT x'4142' AS b", "SELECT X'00ff' AS b", "SELECT x'' AS b", "SELECT x'C3A9' AS b",
    "SELECT 'a'::BLOB AS b", "SELECT TRY_CAST('é' AS BLOB) AS b",
    "SELECT b FROM t WHERE b = x'4142'", "SELECT b FROM t WHERE b > x'00' ORDER BY b",
    "SELECT octet_length(x'0102') AS n", "SELECT x'41' || x'ff' AS b",
    "SELECT b || b AS c FROM t ORDER BY b NULLS FIRST", "SELECT b || x'00' AS c FROM t ORDER BY c",
    "SELECT CAST(x'4142' AS VARCHAR) AS s",
    "SELECT x'4142' = 'AB'::BLOB AS e", "SELECT x'41' || 'b' AS s",
    "SELECT b, count(*) AS n FROM t GROUP BY b ORDER BY b NULLS LAST",
    "SELECT CAST(s AS BLOB) AS b FROM t ORDER BY s NULLS LAST",
])
def test_matches_duckdb(engines, sql):
    ctx, con = engines
    assert _rows(ctx, sql) == con.sql(sql).fetchall()


def test_blob_concatenation_is_a_blob(engines):
    ctx, _ = engines
    assert ctx.sql("SELECT x'41' || x'ff' AS b").to_arrow().schema.field("b").type == pa.binary()


@pytest.mark.parametrize("sql, message", [
    ("SELECT x'abc'", "even number of hex digits"),
    ("SELECT x'zz'", r"x'zz' is not a BLOB: x'...' takes hex digits only"),
    ("SELECT CAST(b AS VARCHAR) FROM t", r"BLOB b'\\x00\\xff' is not UTF-8 text"),
    ("SELECT CAST(x'ff' AS VARCHAR)", r"BLOB b'\\xff' is not UTF-8 text"),
    ("SELECT CAST('é' AS BLOB)", "is not a valid BLOB"),
])
def test_bad_blobs_are_named(engines, sql, message):
    ctx, _ = engines
    with pytest.raises(pqe.Error, match=message) as err:
        ctx.sql(sql).to_arrow()
    assert "\n" not in str(err.value)


def test_try_cast_of_a_blob_to_text(engines):
    """UTF-8 bytes are their text (DuckDB writes bytes past ASCII as escapes, '\\xC3\\xA9';
    PostgreSQL the hex form): pqe reads the text the bytes encode, as TRY_CAST always did."""
    ctx, _ = engines
    assert _rows(ctx, "SELECT CAST(x'c3a9' AS VARCHAR)") == [("é",)]
    assert _rows(ctx, "SELECT TRY_CAST(b AS VARCHAR) FROM t") == [
        ("AB",), (None,), ("",), (None,), ("é",)]


def test_bytes_parameters_are_blobs():
    con = pqe.connect()
    cur = con.cursor()
    cur.execute("CREATE TABLE f (id INTEGER, data BLOB)")
    payload = bytes(range(256))
    cur.executemany("INSERT INTO f VALUES (?, ?)",
                    [(1, payload), (2, bytearray(b"\x00")), (3, memoryview(b"xyz")), (4, None)])
    cur.execute("SELECT id, data FROM f WHERE data = ? OR id > 2 ORDER BY id", (payload,))
    assert cur.fetchall() == [(1, payload), (3, b"xyz"), (4, None)]
    cur.execute("SELECT octet_length(?) AS n", (b"\x00" * 1000,))
    assert cur.fetchall() == [(1000,)]


@pytest.mark.parametrize("sql", [
    "SELECT x'41' = 'A' AS e", "SELECT x'41' IN ('A', 'B') AS e",
    "SELECT CASE WHEN x THEN x'41' ELSE 'b' END AS c FROM (VALUES (true), (false)) v(x)",
    "SELECT b FROM t WHERE b = 'AB'", "SELECT coalesce(b, 'zz') AS c FROM t ORDER BY c",
])
def test_text_constants_beside_blobs_are_their_bytes(engines, sql):
    """x'41' = 'A' was "cannot convert 'A' to BLOB" (PostgreSQL and DuckDB read the text as
    the BLOB's bytes, as CAST('A' AS BLOB) does)."""
    ctx, con = engines
    assert _rows(ctx, sql) == con.sql(sql).fetchall()
    with pytest.raises(pqe.Error, match="cannot convert 'é' to BLOB"):
        ctx.sql("SELECT x'41' = 'é'").to_arrow()
