"""From the eleventh session's metamorphic (TLP/NoREC) hunt."""
from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe
from helpers import sorted_rows


def rows(table: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in table.to_pylist()]


@pytest.fixture()
def nulls_in_two_row_groups(tmp_path):
    """Row groups [0, NULL, NULL] and [3, NULL]: disjoint min/max ranges (0..0, 3..3), so
    the scan's partitions looked clustered by k, but both hold the NULL group."""
    path = tmp_path / "ng.parquet"
    pq.write_table(pa.table({"k": pa.array([0, None, None, 3, None], pa.int32()),
                             "v": [1, 2, 3, 4, 5]}), path, row_group_size=3)
    return str(path)


@pytest.mark.parametrize("sql", [
    "SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k",
    "SELECT DISTINCT k FROM t",
    "SELECT k, count(*) OVER (PARTITION BY k) AS n FROM t",
    "SELECT count(DISTINCT k) AS a, count(*) AS b FROM (SELECT DISTINCT k FROM t) s",
    "SELECT k, row_number() OVER (PARTITION BY k ORDER BY v) AS r FROM t",
])
@pytest.mark.parametrize("partitions", [1, 2])
def test_the_null_group_is_one_group_across_partitions(nulls_in_two_row_groups, sql,
                                                        partitions):
    """GROUP BY k gave two NULL groups: the planner took the partitions as clustered by k
    (no exchange) from min/max statistics, which leave NULLs out."""
    ctx = pqe.Context(partitions=partitions)
    ctx.register_parquet("t", nulls_in_two_row_groups)
    got = sorted_rows(rows(ctx.sql(sql).to_arrow()))
    want = duckdb.sql(sql.replace("FROM t", f"FROM '{nulls_in_two_row_groups}'")).fetchall()
    assert got == sorted_rows(want)


def test_clustering_is_still_used_without_nulls(tmp_path):
    path = tmp_path / "c.parquet"
    pq.write_table(pa.table({"k": pa.array([0, 0, 1, 3, 3, 4], pa.int32())}), path,
                   row_group_size=3)
    ctx = pqe.Context(partitions=2)
    ctx.register_parquet("t", str(path))
    plan = str(ctx.sql("SELECT k, count(*) FROM t GROUP BY k").explain())
    assert "Exchange[hash" not in plan, plan
    assert sorted_rows(rows(ctx.sql("SELECT k, count(*) FROM t GROUP BY k").to_arrow())) == \
        [(0, 2), (1, 1), (3, 2), (4, 1)]


@pytest.mark.parametrize("sql", [
    "select b0 from t where b0 not between b0 and n1",
    "select b0 from t where b0 < n1",
    "select * from t where n1 = b0",
    "select b0 from t where b0 < 2.25",
])
def test_parquet_decimal_filters_near_bigint_max(tmp_path, sql):
    """A Parquet scan's DECIMAL filter on unscaled int64 overflowed on a BIGINT near 2^63
    scaled by 10^2 ('integer overflow'); it now reruns with decimal128 as operators do."""
    import decimal

    t = pa.table({"b0": pa.array([9223372036854775807, 1], pa.int64()),
                  "n1": pa.array([decimal.Decimal("1.00"), None], pa.decimal128(10, 2))})
    path = tmp_path / "ov.parquet"
    pq.write_table(t, path)
    ctx = pqe.Context()
    ctx.register_parquet("t", str(path))
    con = duckdb.connect()
    con.register("t", t)
    assert sorted_rows(rows(ctx.sql(sql).to_arrow())) == sorted_rows(con.sql(sql).fetchall())


@pytest.mark.parametrize("sql", [
    "SELECT * FROM t WHERE kind = 'num' AND CAST(val AS INTEGER) > 5",
    "SELECT * FROM t WHERE kind IN ('num') AND CAST(val AS INTEGER) > 5",
])
def test_pruning_never_fails_on_a_cast_the_other_filters_avoid(tmp_path, sql):
    """Row-group pruning ran CAST('n/a' AS INTEGER) on a one-value row group's statistics
    and failed the query while planning, though `kind = 'num'` drops that row first."""
    t = pa.table({"kind": ["num", None, "txt"], "val": ["7", "n/a", "abc"]})
    path = tmp_path / "pe3.parquet"
    pq.write_table(t, path, row_group_size=1)
    ctx = pqe.Context()
    ctx.register_parquet("t", str(path))
    con = duckdb.connect()
    con.register("t", t)
    assert rows(ctx.sql(sql).to_arrow()) == con.sql(sql).fetchall() == [("num", "7")]
