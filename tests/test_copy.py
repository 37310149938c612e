"""COPY ... TO: options validated (unknown ones refused, HEADER false honoured, the delimiter
checked), written atomically, never over a registered table's files, and over an existing
file only with OVERWRITE."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import pqe


@pytest.fixture
def ctx():
    c = pqe.Context()
    c.sql("CREATE TABLE src AS SELECT * FROM (VALUES (1, 'a'), (2, 'b;c'), (3, NULL)) v(n, s)")
    yield c
    c.close()


def test_csv_options(ctx, tmp_path):
    out = tmp_path / "a.csv"
    assert ctx.sql(f"COPY src TO '{out}' (FORMAT csv, HEADER false)").to_pylist() == [{"count": 3}]
    assert out.read_text().splitlines()[0] == '1,"a"'
    out2 = tmp_path / "b.csv"
    ctx.sql(f"COPY (SELECT * FROM src ORDER BY n) TO '{out2}' (FORMAT csv, DELIMITER ';')")
    back = pcsv.read_csv(out2, parse_options=pcsv.ParseOptions(delimiter=";"),
                         convert_options=pcsv.ConvertOptions(strings_can_be_null=True))
    assert back.column_names == ["n", "s"] and back.column("s").to_pylist() == ["a", "b;c", None]


def test_parquet_round_trip_and_compression(ctx, tmp_path):
    out = tmp_path / "a.parquet"
    ctx.sql(f"COPY src TO '{out}' (FORMAT parquet, COMPRESSION zstd)")
    meta = pq.ParquetFile(out).metadata
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert pq.read_table(out).sort_by("n").column("n").to_pylist() == [1, 2, 3]


@pytest.mark.parametrize("options, error", [
    ("(FORMAT csv, FOO 1)", pqe.UnsupportedError),
    ("(FORMAT csv, HEADER maybe)", pqe.BindError),
    ("(FORMAT csv, DELIMITER 'ab')", pqe.BindError),
    ("(FORMAT csv, DELIMITER '\"')", pqe.BindError),
    ("(FORMAT parquet, HEADER true)", pqe.BindError),
    ("(FORMAT json)", pqe.UnsupportedError),
    ("(FORMAT csv, FORMAT csv)", pqe.BindError),
    ("(FORMAT parquet, COMPRESSION lzma)", pqe.BindError),
])
def test_bad_options_are_refused_and_nothing_is_written(ctx, tmp_path, options, error):
    out = tmp_path / "x.out"
    with pytest.raises(error):
        ctx.sql(f"COPY src TO '{out}' {options}")
    assert list(tmp_path.iterdir()) == []


def test_existing_files_need_overwrite(ctx, tmp_path):
    out = tmp_path / "e.csv"
    out.write_text("keep me\n")
    with pytest.raises(pqe.ExecutionError, match="OVERWRITE"):
        ctx.sql(f"COPY src TO '{out}' (FORMAT csv)")
    assert out.read_text() == "keep me\n"
    ctx.sql(f"COPY src TO '{out}' (FORMAT csv, OVERWRITE)")
    assert out.read_text().startswith('"n","s"')
    assert [p.name for p in tmp_path.iterdir()] == ["e.csv"]  # no temporary file left


def test_copy_never_overwrites_a_registered_table(ctx, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    pq.write_table(pa.table({"x": list(range(15_000))}), data / "part-0.parquet")
    ctx.register_parquet("public_data", str(data))
    for target in (data / "part-0.parquet", data / "new.parquet", data / ".." / "data" / "part-0.parquet"):
        with pytest.raises(pqe.ExecutionError, match="would overwrite data of table 'public_data'"):
            ctx.sql(f"COPY (SELECT 1 AS x) TO '{target}' (FORMAT parquet, OVERWRITE)")
    assert ctx.sql("SELECT count(*) AS n FROM public_data").to_pylist() == [{"n": 15_000}]


def test_a_failing_copy_leaves_no_file(ctx, tmp_path):
    out = tmp_path / "f.parquet"
    ctx.sql("CREATE TABLE z(d VARCHAR)")
    ctx.sql("INSERT INTO z VALUES ('2020-01-01'), ('not a date')")
    with pytest.raises(pqe.Error):
        ctx.sql(f"COPY (SELECT CAST(d AS DATE) AS d FROM z) TO '{out}' (FORMAT parquet)")
    assert list(tmp_path.iterdir()) == []


def test_copy_partition_by_writes_a_hive_dataset(ctx, tmp_path):
    import duckdb

    out = tmp_path / "ds"
    assert ctx.sql(f"COPY (SELECT n, s, n % 2 AS odd FROM src) TO '{out}' "
                   f"(FORMAT parquet, PARTITION_BY (odd))").to_pylist() == [{"count": 3}]
    assert sorted(p.name for p in out.iterdir()) == ["odd=0", "odd=1"]
    got = duckdb.sql(f"SELECT odd, count(*) FROM read_parquet('{out}/**/*.parquet', "
                     f"hive_partitioning=true) GROUP BY odd ORDER BY odd").fetchall()
    assert got == [(0, 1), (1, 2)]
    with pytest.raises(pqe.ExecutionError, match="exists|OVERWRITE"):
        ctx.sql(f"COPY src TO '{out}' (FORMAT parquet, PARTITION_BY (n))")
    for bad in ("PARTITION_BY (n + 1)", "PARTITION_BY (src.n)"):
        with pytest.raises(pqe.UnsupportedError, match="only column names"):
            ctx.sql(f"COPY src TO '{tmp_path}/other' (FORMAT parquet, {bad})")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]
