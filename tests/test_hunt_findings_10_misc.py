"""Findings of the twelfth session outside the hunts' areas, each checked against DuckDB."""
from __future__ import annotations

import duckdb
import pytest

import pqe


def _rows(sql: str) -> list[tuple]:
    return [tuple(r.values()) for r in pqe.Context().sql(sql).to_pylist()]


@pytest.mark.parametrize("sql", [
    "SELECT [['a'], []] AS l",                    # was: no common type LIST<STRING>, LIST<NULL>
    "SELECT [[['a']], [[]], []] AS l",
    "SELECT [[1], [], NULL] AS l",
    "SELECT [[1], [2.5]] AS l",
    "SELECT COALESCE([], [1, 2]) AS l",
    "SELECT CASE WHEN x THEN [] ELSE ['x'] END AS l FROM (VALUES (true), (false)) t(x)",
])
def test_lists_of_lists_take_the_elements_common_type(sql):
    assert _rows(sql) == duckdb.sql(sql).fetchall()


def test_lists_of_unrelated_elements_have_no_common_type():
    with pytest.raises(pqe.Error, match=r"mixes INTEGER\[\] and VARCHAR\[\]"):
        _rows("SELECT [1] UNION ALL SELECT ['a']")


def test_cross_join_with_on_names_the_parenthesized_form_which_runs():
    """`a LEFT JOIN b CROSS JOIN c ON p` is a LEFT JOIN of a to (b CROSS JOIN c) in
    PostgreSQL and DuckDB: refused with that spelling named, and the spelling runs."""
    ctx = pqe.Context()
    for name, col in (("a", "x"), ("b", "y"), ("c", "z")):
        ctx.sql(f"CREATE TABLE {name} AS SELECT * FROM (VALUES (1), (2)) v({col})")
    with pytest.raises(pqe.Error, match=r"LEFT JOIN \(b CROSS JOIN c\)") as err:
        ctx.sql("SELECT * FROM a LEFT JOIN b CROSS JOIN c ON x = y + 1")
    assert "line 1" in str(err.value)
    got = ctx.sql("SELECT * FROM a LEFT JOIN (b CROSS JOIN c) ON x = y + 1 "
                  "ORDER BY x, y, z").to_pylist()
    assert [tuple(r.values()) for r in got] == [(1, None, None), (2, 1, 1), (2, 1, 2)]


def test_a_table_known_empty_empties_the_estimate_of_what_reads_it():
    """An empty table joined to a 2*10^10-row join: the answer (0) comes at once, but the
    estimate took the empty table for a row and the memory guard refused the query
    ("needs about 447 GiB")."""
    import pyarrow as pa

    ctx = pqe.Context()
    ctx.register_arrow("a", pa.table({"x": list(range(200_000))}))
    ctx.register_arrow("b", pa.table({"y": list(range(100_000))}))
    ctx.register_arrow("e", pa.table({"z": pa.array([], pa.int64())}))
    sql = "SELECT count(*) AS n FROM a, b, e WHERE (x = y OR x > 5) AND z = 1"
    assert ctx.sql(sql).to_pylist() == [{"n": 0}]
    assert ctx.sql("SELECT count(*) AS n FROM a LEFT JOIN e ON x = z").to_pylist() == [
        {"n": 200_000}]
    # a cross join of two large tables is still refused
    with pytest.raises(pqe.ResourceError):
        ctx.sql("SELECT count(*) FROM a, b, a AS c").to_arrow()


@pytest.mark.parametrize("sql", ["SELECT [1, 2]::VARCHAR", "SELECT TRY_CAST([[1]] AS VARCHAR)",
                                 "SELECT CAST('[1]' AS INTEGER[])"])
def test_casts_between_lists_and_scalars_are_refused_by_name(sql):
    """They failed when run with Arrow's 'Unsupported cast from list<item: int32> to utf8'
    (TRY_CAST too)."""
    with pytest.raises(pqe.UnsupportedError, match="not supported|unsupported type"):
        pqe.Context().sql(sql).to_arrow()


def test_copy_of_blobs_to_csv(tmp_path):
    """UTF-8 bytes are written as they are; others are refused naming the column (it was
    Arrow's 'Invalid UTF8 payload'), and no file is left."""
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE ok (v BLOB)")
    ctx.sql("INSERT INTO ok VALUES (x'4142')")
    ctx.sql(f"COPY ok TO '{tmp_path / 'ok.csv'}' (FORMAT csv)")
    assert (tmp_path / "ok.csv").read_text().splitlines() == ['"v"', '"AB"']
    ctx.sql("CREATE TABLE bad (v BLOB)")
    ctx.sql("INSERT INTO bad VALUES (x'00ff')")
    with pytest.raises(pqe.Error, match="column 'v' holds BLOB values that are not UTF-8"):
        ctx.sql(f"COPY bad TO '{tmp_path / 'bad.csv'}' (FORMAT csv)")
    assert not (tmp_path / "bad.csv").exists()


@pytest.mark.parametrize("rows", [None, "abc", 5])
def test_executemany_of_something_not_rows_is_a_programming_error(rows):
    cur = pqe.connect().cursor()
    with pytest.raises(pqe.ProgrammingError, match="sequence of parameter rows"):
        cur.executemany("SELECT 1", rows)
