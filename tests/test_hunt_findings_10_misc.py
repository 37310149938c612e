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
    with pytest.raises(pqe.Error, match="mixes LIST"):
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
