"""SUMMARIZE (DuckDB's per-column statistics) checked against DuckDB's own SUMMARIZE of the
same rows, computed in one pass (one aggregate over every column); DESCRIBE of a file and
of a query, under the access policy."""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe
from pqe.testing import oracle

N = 3000
DATA = pa.table({
    "i": pa.array([None if r % 9 == 0 else r % 400 - 100 for r in range(N)], pa.int32()),
    "big": pa.array([r * 7919 for r in range(N)], pa.int64()),
    "f": pa.array([None if r % 4 == 0 else r / 7 for r in range(N)], pa.float64()),
    "d": pa.array([decimal.Decimal(r % 1000) / 100 for r in range(N)], pa.decimal128(8, 2)),
    "s": pa.array([None if r % 5 == 0 else f"v{r % 37:02d}" for r in range(N)], pa.string()),
    "day": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=r % 90)
                     for r in range(N)], pa.date32()),
    "b": pa.array([None if r % 3 == 0 else r % 2 == 0 for r in range(N)], pa.bool_()),
    "empty": pa.array([None] * N, pa.int64()),
})
COLUMNS = ["column_name", "column_type", "min", "max", "approx_unique", "avg", "std", "q25",
           "q50", "q75", "count", "null_percentage"]


@pytest.fixture(scope="module")
def ctx():
    c = pqe.Context(partitions=4)
    c.register_arrow("t", DATA)
    yield c
    c.close()


@pytest.fixture(scope="module")
def duck():
    con = oracle.connect({"t": DATA})
    yield con
    con.close()


def _rows(table: pa.Table) -> dict[str, dict]:
    return {r["column_name"]: r for r in table.to_pylist()}


def _number(text: str) -> float:
    """A statistic's text as a number (dates as day numbers)."""
    if len(text) == 10 and text[4] == "-":
        return datetime.date.fromisoformat(text).toordinal()
    return float(text)


def _float(text):
    return None if text is None else float(text)


def _check_against_duckdb(got: pa.Table, want: pa.Table, exact_distinct: dict[str, int]):
    assert got.column_names == COLUMNS
    assert [got.schema.field(c).type for c in COLUMNS] == [
        pa.string(), pa.string(), pa.string(), pa.string(), pa.int64(), pa.string(),
        pa.string(), pa.string(), pa.string(), pa.string(), pa.int64(), pa.decimal128(9, 2)]
    g, w = _rows(got), _rows(want)
    assert list(g) == list(w)  # one row per column, in the columns' order
    for name, row in g.items():
        ref = w[name]
        for key in ("column_type", "min", "max", "count"):
            assert row[key] == ref[key], (name, key, row[key], ref[key])
        assert row["null_percentage"] == ref["null_percentage"], name
        # DuckDB also averages dates; pqe's avg and std are for numbers only
        if ref["column_type"] != "DATE":
            for key, rel in (("avg", 1e-12), ("std", 1e-9)):
                if ref[key] is None:
                    assert row[key] is None, (name, key)
                else:
                    assert _float(row[key]) == pytest.approx(_float(ref[key]), rel=rel), name
        # approximate quantiles (DuckDB's interpolate, pqe's take a value): within 1% of the
        # column's range, in the column's type
        for key in ("q25", "q50", "q75"):
            if ref[key] is None:
                assert row[key] is None, (name, key)
                continue
            span = _number(ref["max"]) - _number(ref["min"])
            assert abs(_number(row[key]) - _number(ref[key])) <= 0.01 * span + 1, (name, key)
            if ref["column_type"] in ("INTEGER", "BIGINT") or "DECIMAL" in ref["column_type"]:
                assert ("." in row[key]) == ("." in ref[key]), (name, key, row[key], ref[key])
        # approximate, as DuckDB's: within 5% of the exact count (exact when small)
        exact = exact_distinct[name]
        if exact <= 512:
            assert row["approx_unique"] == exact, name
        else:
            assert abs(row["approx_unique"] - exact) <= 0.05 * exact, (name, row["approx_unique"])


def _exact_distinct(duck, source: str, names) -> dict[str, int]:
    sel = ", ".join(f'count(DISTINCT "{n}") AS "{n}"' for n in names)
    return dict(zip(names, duck.execute(f"SELECT {sel} FROM {source}").fetchall()[0],
                    strict=True))


def test_summarize_table_matches_duckdb(ctx, duck):
    got = ctx.sql("SUMMARIZE t").to_arrow()
    want = oracle.query(duck, "SUMMARIZE t")
    _check_against_duckdb(got, want, _exact_distinct(duck, "t", DATA.column_names))
    row = _rows(got)
    # the statistics DuckDB leaves out for non-numbers are NULL here too; a column of NULLs
    assert row["s"]["avg"] is None and row["day"]["std"] is None and row["b"]["avg"] is None
    assert row["empty"]["min"] is None and row["empty"]["approx_unique"] == 0
    assert row["empty"]["null_percentage"] == decimal.Decimal("100.00")


def test_summarize_query_matches_duckdb(ctx, duck):
    sql = "SELECT i, s, f * 2 AS f2 FROM t WHERE big % 3 = 1"
    got = ctx.sql(f"SUMMARIZE {sql}").to_arrow()
    want = oracle.query(duck, f"SUMMARIZE {sql}")
    _check_against_duckdb(got, want, _exact_distinct(duck, f"({sql})", ["i", "s", "f2"]))


def test_summarize_is_one_aggregate_pass(ctx):
    """Every statistic of every column comes from one aggregate over one scan (partial per
    partition, one final step); no DISTINCT pre-aggregation per column."""
    lines = ctx.sql("EXPLAIN SUMMARIZE t").to_arrow().column(0).to_pylist()
    physical = lines[lines.index("== Physical Plan =="):]
    assert sum("Aggregate[partial]" in x for x in physical) == 1
    assert sum("Aggregate[final]" in x for x in physical) == 1
    assert sum("Scan" in x for x in physical) == 1
    assert "approx_unique" in "\n".join(physical) and "[partitions=4]" in "\n".join(physical)


def test_summarize_empty_input_and_lazy_dataframe(ctx):
    df = ctx.sql("SUMMARIZE SELECT i, s FROM t WHERE big < 0")
    rows = df.to_arrow().to_pylist()
    assert [r["column_name"] for r in rows] == ["i", "s"]
    assert all(r["count"] == 0 and r["null_percentage"] is None and r["min"] is None
               and r["approx_unique"] == 0 for r in rows)
    # a query like any other: filter it
    got = ctx.sql("SUMMARIZE t").filter(pqe.col("column_type") == "VARCHAR").to_arrow()
    assert got.column("column_name").to_pylist() == ["s"]


def test_summarize_file_and_describe_file_follow_the_access_policy(tmp_path):
    path = tmp_path / "data.parquet"
    pq.write_table(DATA, path)
    with pqe.Context() as ctx:
        rows = _rows(ctx.sql(f"SUMMARIZE '{path}'").to_arrow())
        assert rows["big"]["count"] == N and rows["big"]["min"] == "0"
        desc = ctx.sql(f"DESCRIBE '{path}'").to_arrow()
        assert desc.column("column_name").to_pylist() == DATA.column_names
        assert ctx.sql(f"DESCRIBE read_parquet('{path}')").to_arrow().equals(desc)
        assert ctx.sql(f"SUMMARIZE read_parquet('{path}')").to_arrow().num_rows == len(
            DATA.column_names)
        assert desc.column("column_type").to_pylist() == [
            "INTEGER", "BIGINT", "DOUBLE", "DECIMAL(8,2)", "VARCHAR", "DATE", "BOOLEAN", "BIGINT"]
    with pqe.Context(allowed_paths=[str(tmp_path)]) as ctx:
        assert ctx.sql(f"DESCRIBE '{path}'").to_arrow().num_rows == len(DATA.column_names)
    other = tmp_path.parent / (tmp_path.name + "-other")
    other.mkdir()
    pq.write_table(DATA, other / "x.parquet")
    for kwargs, path_ in (({"external_access": False}, path),
                          ({"allowed_paths": [str(tmp_path)]}, other / "x.parquet")):
        with pqe.Context(**kwargs) as ctx:
            for stmt in ("DESCRIBE", "SUMMARIZE"):
                for source in (f"'{path_}'", f"read_parquet('{path_}')"):
                    with pytest.raises(pqe.AccessError, match="not allowed"):
                        ctx.sql(f"{stmt} {source}")


def test_describe_query(ctx):
    got = ctx.sql("DESCRIBE SELECT i + 1 AS j, s FROM t").to_arrow()
    assert got.column("column_name").to_pylist() == ["j", "s"]
    assert got.column("column_type").to_pylist() == ["BIGINT", "VARCHAR"]  # pqe: BIGINT math


def test_approx_unique_does_not_depend_on_partitioning():
    """Sketches merge exactly (hash lists by union, registers by maximum): the estimate is the
    same however the rows are split; a large cardinality is within a few percent."""
    n = 60_000
    table = pa.table({"v": pa.array([r * 31 % 50_000 for r in range(n)], pa.int64())})
    answers = set()
    for parts in (1, 3, 8):
        with pqe.Context(partitions=parts) as ctx:
            ctx.register_arrow("big", table)
            (row,) = ctx.sql("SUMMARIZE big").to_arrow().to_pylist()
            answers.add(row["approx_unique"])
    assert len(answers) == 1
    assert abs(answers.pop() - 50_000) <= 0.04 * 50_000


def test_quantiles_are_exact_for_small_inputs_and_close_for_large_ones():
    """Up to 2,048 values per sketch the quantiles are exactly quantile_cont's at 25%, 50% and
    75%; past that, within a fraction of a percent of the range."""
    small = pa.table({"v": pa.array(list(range(100, 0, -1)), pa.int64()),
                      "day": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=r)
                                       for r in range(100)], pa.date32())})
    large = pa.table({"x": pa.array([(r * 7919) % 100_000 / 10 for r in range(100_000)])})
    with pqe.Context(partitions=4) as ctx:
        ctx.register_arrow("small", small)
        ctx.register_arrow("large", large)
        rows = _rows(ctx.sql("SUMMARIZE small").to_arrow())
        # continuous, as quantile_cont: 25.75, 50.5, 75.25 (an integer column's text rounds
        # half away from zero; a date's floors to its day)
        assert [rows["v"][q] for q in ("q25", "q50", "q75")] == ["26", "51", "75"]
        cont = ctx.sql("SELECT quantile_cont(v, 0.25), median(v), quantile_cont(v, 0.75) "
                       "FROM small").to_arrow().to_pylist()[0]
        assert list(cont.values()) == [25.75, 50.5, 75.25]
        assert [rows["day"][q] for q in ("q25", "q50", "q75")] == [
            "2024-01-25", "2024-02-19", "2024-03-15"]
        (row,) = ctx.sql("SUMMARIZE large").to_arrow().to_pylist()
        for q, want in (("q25", 2500.0), ("q50", 5000.0), ("q75", 7500.0)):
            assert abs(float(row[q]) - want) <= 0.005 * 10_000, (q, row[q])
