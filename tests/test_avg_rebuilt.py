"""AVG rebuilt from a SUM and a COUNT is rounded once, as the AVG aggregate is.

ROLLUP / CUBE / GROUPING SETS and eager aggregation (an aggregate pushed below a join) compute
AVG as SUM / COUNT of partial states. The sum cast to DOUBLE before the division rounded
twice: five DECIMAL(10,2) 0.05..0.09 averaged 0.06999999999999999 (DuckDB 0.07), and a BIGINT
sum beyond 2^53 lost its last digits before the division. DuckDB is the oracle.
"""
from __future__ import annotations

import decimal

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe


def _rows(ctx: pqe.Context, sql: str) -> list[tuple]:
    t = ctx.sql(sql).to_arrow()
    return [tuple(r.values()) for r in t.to_pylist()]


@pytest.fixture(scope="module")
def tables():
    rng = np.random.default_rng(7)
    n = 5_000
    cents = rng.integers(-10**9, 10**9, n)
    t = pa.table({
        "g": pa.array(rng.integers(0, 7, n)),
        "h": pa.array(rng.integers(0, 3, n)),
        "d2": pa.array([decimal.Decimal(int(c)).scaleb(-2) for c in cents], pa.decimal128(12, 2)),
        "d9": pa.array([decimal.Decimal(int(c)).scaleb(-9) for c in cents], pa.decimal128(18, 9)),
        "big": pa.array((rng.integers(0, 2**8, n) + 2**54).astype(np.int64)),
        "i": pa.array(rng.integers(-1000, 1000, n).astype(np.int32)),
    })
    con = duckdb.connect()
    con.register("t", t)
    ctx = pqe.Context(partitions=3)
    ctx.register_arrow("t", t)
    return ctx, con


SMALL = "(VALUES (0.05::DECIMAL(10,2), 1), (0.06, 1), (0.07, 1), (0.08, 1), (0.09, 1)) v(a, b)"


@pytest.mark.parametrize("grouping", ["ROLLUP (b)", "CUBE (b)", "GROUPING SETS ((b), ())"])
def test_decimal_avg_of_grouping_sets_rounds_once(grouping):
    sql = f"SELECT b, AVG(a) AS m FROM {SMALL} GROUP BY {grouping} ORDER BY b NULLS LAST"
    got = _rows(pqe.Context(), sql)
    assert got == [(1, 0.07), (None, 0.07)]
    assert got == duckdb.sql(sql).fetchall()


@pytest.mark.parametrize("column", ["d2", "d9", "big", "i"])
@pytest.mark.parametrize("grouping", ["ROLLUP (g, h)", "CUBE (g, h)",
                                      "GROUPING SETS ((g), (h), ())"])
def test_avg_of_grouping_sets_matches_duckdb(tables, column, grouping):
    ctx, con = tables
    sql = (f"SELECT g, h, AVG({column}) AS m, AVG({column}) FILTER (WHERE i > 0) AS f "
           f"FROM t GROUP BY {grouping} ORDER BY g NULLS LAST, h NULLS LAST")
    got, want = _rows(ctx, sql), con.sql(sql).fetchall()
    assert len(got) == len(want) > 7
    assert got == want


def test_avg_of_a_group_with_only_nulls_is_null():
    sql = ("SELECT b, AVG(a) AS m FROM (VALUES (NULL::DECIMAL(10,2), 1), (NULL, 1), (2.5, 2)) "
           "v(a, b) GROUP BY ROLLUP (b) ORDER BY b NULLS LAST")
    assert _rows(pqe.Context(), sql) == [(1, None), (2, 2.5), (None, 2.5)]


def test_eager_aggregated_avg_rounds_once(tmp_path):
    """AVG pushed below a join (eager aggregation, chosen from Parquet statistics) is rebuilt
    from per-key SUMs and COUNTs: the value is the exact mean, as DuckDB's."""
    rng = np.random.default_rng(3)
    n = 200_000
    cents = rng.integers(1, 10**6, n)
    sales = pa.table({"item": pa.array(rng.integers(0, 10, n)),
                      "qty": pa.array([decimal.Decimal(int(c)).scaleb(-2) for c in cents],
                                      pa.decimal128(10, 2))})
    item = pa.table({"id": list(range(10)), "brand": [f"b{i % 3}" for i in range(10)]})
    pq.write_table(sales, tmp_path / "sales.parquet")
    pq.write_table(item, tmp_path / "item.parquet")
    ctx = pqe.Context()
    ctx.register_parquet("sales", str(tmp_path / "sales.parquet"))
    ctx.register_parquet("item", str(tmp_path / "item.parquet"))
    sql = ("SELECT brand, AVG(qty) AS m FROM sales JOIN item ON item = id "
           "GROUP BY brand ORDER BY brand")
    plan = "\n".join(str(list(r.values())[-1]) for r in ctx.sql("EXPLAIN " + sql).to_pylist())
    assert "Aggregate[local]" in plan  # the eager path is the one under test
    con = duckdb.connect()
    con.register("sales", sales)
    con.register("item", item)
    want = con.sql(sql).fetchall()
    assert _rows(ctx, sql) == want
    exact = [float(sum(decimal.Decimal(int(c)) for c, i in zip(cents, sales["item"].to_numpy())
                       if i in ids) / (100 * sum(1 for i in sales["item"].to_numpy() if i in ids)))
             for ids in ({0, 3, 6, 9}, {1, 4, 7}, {2, 5, 8})]
    assert [m for _, m in want] == exact


def test_avg_of_a_wide_decimal_is_never_rebuilt_from_a_sum(tmp_path):
    """AVG of DECIMAL(38,37) values whose sum passes 38 digits answers alone (its aggregate
    carries the sum past DECIMAL(38)); ROLLUP, GROUPING SETS and eager aggregation rebuilt
    it from a SUM state, which failed ("SUM does not fit in DECIMAL(38,37)")."""
    value = decimal.Decimal("1.2345678901234567890123456789012345678")
    t = pa.table({"g": pa.array([i % 3 for i in range(12)], pa.int32()),
                  "d": pa.array([value] * 12, pa.decimal128(38, 37))})
    ctx = pqe.Context()
    ctx.register_arrow("t", t)
    alone = _rows(ctx, "SELECT g, avg(d) FROM t GROUP BY g ORDER BY g")
    assert alone == [(g, 1.2345678901234567) for g in range(3)]
    assert _rows(ctx, "SELECT g, avg(d) FROM t GROUP BY ROLLUP (g) ORDER BY g NULLS LAST") == \
        alone + [(None, 1.2345678901234567)]
    assert _rows(ctx, "SELECT g, avg(d) FROM t GROUP BY GROUPING SETS ((g), ()) "
                      "ORDER BY g NULLS LAST") == alone + [(None, 1.2345678901234567)]
    rng = np.random.default_rng(5)
    n = 60_000
    pq.write_table(pa.table({"k": pa.array(rng.integers(0, 50, n)),
                             "d": pa.array([value] * n, pa.decimal128(38, 37))}),
                   tmp_path / "f.parquet")
    pq.write_table(pa.table({"k": list(range(50)), "name": [f"n{i % 5}" for i in range(50)]}),
                   tmp_path / "dim.parquet")
    ctx.register_parquet("f", str(tmp_path / "f.parquet"))
    ctx.register_parquet("dim", str(tmp_path / "dim.parquet"))
    got = _rows(ctx, "SELECT dim.name, avg(f.d) FROM f JOIN dim ON f.k = dim.k "
                     "GROUP BY dim.name ORDER BY dim.name")
    assert got == [(f"n{i}", 1.2345678901234567) for i in range(5)]


@pytest.mark.parametrize("sql", ["SELECT pqe_mean(NULL, 3)", "SELECT pqe_mean(1.5, 2)",
                                 "SELECT pqe_assert_single_row(1)"])
def test_the_planners_own_functions_are_not_sql(sql):
    """pqe_mean(1.5, 2) crashed as an internal error: the planner's functions take only what
    it gives them."""
    with pytest.raises(pqe.BindError, match="unknown function PQE_"):
        pqe.Context().sql(sql).to_arrow()
