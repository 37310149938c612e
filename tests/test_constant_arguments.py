"""Constant expressions where pqe wants a constant: `ntile(2 + 1)`, `lag(x, 1 + 0, -1 * 5)`,
`nth_value(v, 1 + 1)`, `ROWS BETWEEN 1 + 1 PRECEDING`, `LIMIT 2 * 5 OFFSET 3 - 1` were refused
("must be a constant"); they are folded first, as DuckDB does. Per-row arguments stay refused
by name, out-of-range ones are errors. Checked against DuckDB, through SQL and the DataFrame
builder."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pqe
from helpers import assert_answers_as_duckdb


def _tables():
    return {"t": pa.table({"id": list(range(1, 12)),
                           "v": pa.array([5, None, 3, 3, 8, None, 1, 9, 2, 7, 4], pa.int64()),
                           "g": [i % 3 for i in range(11)]})}


QUERIES = [
    "SELECT id, ntile(2 + 1) OVER (ORDER BY id) AS x FROM t",
    "SELECT id, ntile(CAST('4' AS INTEGER)) OVER (PARTITION BY g ORDER BY id) AS x FROM t",
    "SELECT id, lag(v, 1 + 0) OVER (ORDER BY id) AS x FROM t",
    "SELECT id, lead(v, 2 * 1, -1 * 5) OVER (ORDER BY id) AS x FROM t",
    "SELECT id, lag(v, 2, abs(-7)) OVER (PARTITION BY g ORDER BY id) AS x FROM t",
    "SELECT id, nth_value(v, 1 + 1) OVER (ORDER BY id) AS x FROM t",
    "SELECT id, sum(v) OVER (ORDER BY id ROWS BETWEEN 1 + 1 PRECEDING AND CURRENT ROW) AS x "
    "FROM t",
    "SELECT id, sum(v) OVER (ORDER BY id ROWS BETWEEN (3 - 1) PRECEDING AND 2 * 1 FOLLOWING) "
    "AS x FROM t",
    "SELECT id, count(v) OVER (ORDER BY id RANGE BETWEEN 1.5 * 2 PRECEDING AND CURRENT ROW) "
    "AS x FROM t",
    "SELECT id FROM t ORDER BY id LIMIT 2 * 2 OFFSET 3 - 1",
]


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("sql", QUERIES)
def test_constant_expressions_match_duckdb(sql, partitions):
    assert_answers_as_duckdb(sql, _tables(), partitions)


@pytest.mark.parametrize("sql, error, match", [
    ("SELECT ntile(v) OVER (ORDER BY id) FROM t", pqe.UnsupportedError, "must be a constant"),
    ("SELECT nth_value(v, id) OVER (ORDER BY id) FROM t", pqe.UnsupportedError,
     "must be a constant"),
    ("SELECT ntile(random()) OVER (ORDER BY id) FROM t", pqe.UnsupportedError,
     "must be a constant"),
    ("SELECT ntile(99999999999999999999) OVER (ORDER BY id) FROM t", pqe.BindError,
     "out of range"),
    ("SELECT lag(v, 4611686018427387904 * 2) OVER (ORDER BY id) FROM t", pqe.DataValueError,
     "overflow"),
    ("SELECT sum(v) OVER (ORDER BY id ROWS BETWEEN 1 - 2 PRECEDING AND CURRENT ROW) FROM t",
     pqe.BindError, "must not be negative"),
    ("SELECT sum(v) OVER (ORDER BY id ROWS BETWEEN id PRECEDING AND CURRENT ROW) FROM t",
     pqe.UnsupportedError, "frame offset"),
    ("SELECT id FROM t LIMIT (SELECT 1)", pqe.BindError, "constant integer"),
    ("SELECT id FROM t LIMIT 1 - 2", pqe.BindError, "must not be negative"),
])
def test_per_row_and_out_of_range_arguments_are_errors(sql, error, match):
    ctx = pqe.Context()
    ctx.register_arrow("t", _tables()["t"])
    with pytest.raises(error, match=match):
        ctx.sql(sql).to_arrow()


def test_dataframe_builder_folds_the_same_constants():
    ctx = pqe.Context()
    ctx.register_arrow("t", _tables()["t"])
    sql = ctx.sql("SELECT id, lag(v, 2, 10) OVER (ORDER BY id) AS x FROM t ORDER BY id")
    df = ctx.table("t").select(
        "id", pqe.lag("v", 2, pqe.lit(5) * 2).over(order_by="id").alias("x")).sort("id")
    assert df.to_pylist() == sql.to_pylist()
    assert [r["x"] for r in sql.to_pylist()][:3] == [10, 10, 5]
