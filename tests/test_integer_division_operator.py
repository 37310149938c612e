"""`a // b` of integers (DuckDB's integer division) was refused; it is the quotient rounded
toward zero, as pqe's `/` of integers is. Of other types it stays refused by name (DuckDB's
DOUBLE `//` is not reproduced). Checked against DuckDB over signs, NULLs and type limits."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pqe
from helpers import assert_answers_as_duckdb


def _tables():
    return {"t": pa.table({
        "a": pa.array([7, -7, 7, -7, None, 9_223_372_036_854_775_807, 0, 1], pa.int64()),
        "b": pa.array([2, 2, -2, -2, 3, 2, 5, None], pa.int64()),
        "s": pa.array([100, -100, 3, -3, 1, 32_767, 0, None], pa.int16()),
        "i": pa.array([7, 8, 9, 10, 11, 12, 13, 14], pa.int32())})}


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("sql", [
    "SELECT a // b AS q, a % b AS r FROM t",
    "SELECT s // 3 AS q, i // 4 AS p, 100 // i AS o FROM t",
    "SELECT sum(a // b) AS x FROM t WHERE b IS NOT NULL AND a < 1000",
    "SELECT i // 3 AS k, count(*) AS n FROM t GROUP BY i // 3",
    "SELECT -7 // 2 AS x, 7 // -2 AS y, 1 // 2 AS z",
])
def test_integer_division_matches_duckdb(sql, partitions):
    assert_answers_as_duckdb(sql, _tables(), partitions)


def test_division_by_zero_is_null_as_slash_is():
    ctx = pqe.Context()
    ctx.register_arrow("t", _tables()["t"])
    assert ctx.sql("SELECT a // 0 AS x, a / 0 AS y FROM t LIMIT 2").to_pylist() == \
        [{"x": None, "y": None}] * 2


@pytest.mark.parametrize("sql", ["SELECT 7.5 // 2", "SELECT CAST(7 AS DOUBLE) // 2",
                                 "SELECT '7' // 2"])
def test_other_types_are_refused(sql):
    with pytest.raises(pqe.Error, match="//"):
        pqe.Context().sql(sql).to_arrow()
