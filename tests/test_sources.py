"""File tables: files changed, added or deleted after registration are seen when a query is
planned (threads and a LocalCluster); tasks carry plain descriptions that never open files
where they are unpickled; relative paths become absolute."""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from helpers import register_tpch, tpch_query

import pqe
from pqe.catalog import CsvTable, ParquetTable
from pqe.execution import ops as O
from pqe.execution.lower import lower


@pytest.fixture(scope="module")
def cluster_ctx():
    c = pqe.Context(workers=2, memory_limit="1GiB")
    yield c
    c.close()


@pytest.fixture(params=["threads", "cluster"])
def any_ctx(request):
    if request.param == "threads":
        c = pqe.Context()
        yield c
        c.close()
    else:
        yield request.getfixturevalue("cluster_ctx")


def _write(path, values, row_group_size=100, **kw) -> None:
    pq.write_table(pa.table({"a": pa.array(values, pa.int64())}), path,
                   row_group_size=row_group_size, **kw)


def _one(ctx, sql):
    return ctx.sql(sql).to_arrow().column(0)[0].as_py()


def _bump_mtime(path) -> None:
    """A rewrite within the file system's timestamp granularity must still look new."""
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_file_rewritten_in_place_with_more_rows(any_ctx, tmp_path):
    p = tmp_path / "t.parquet"
    _write(p, range(500))  # five row groups, max 499
    any_ctx.register_parquet("stale_more", str(p))
    assert _one(any_ctx, "select count(*) from stale_more where a > 500") == 0
    assert _one(any_ctx, "select count(*) from stale_more") == 500
    _write(p, list(range(501, 801)) + list(range(500)), row_group_size=1000)
    _bump_mtime(p)
    assert _one(any_ctx, "select count(*) from stale_more where a > 500") == 300
    assert _one(any_ctx, "select count(*) from stale_more") == 800
    assert _one(any_ctx, "select max(a) from stale_more") == 800


def test_file_rewritten_in_place_with_fewer_rows(any_ctx, tmp_path):
    p = tmp_path / "t.parquet"
    _write(p, range(1000))
    any_ctx.register_parquet("stale_fewer", str(p))
    assert _one(any_ctx, "select sum(a) from stale_fewer where a >= 900") == sum(range(900, 1000))
    _write(p, [5000, 5001, 7], row_group_size=2)
    _bump_mtime(p)
    assert _one(any_ctx, "select count(*) from stale_fewer") == 3
    assert _one(any_ctx, "select sum(a) from stale_fewer where a >= 900") == 10001


def test_same_size_new_content_seen_by_mtime(any_ctx, tmp_path):
    p = tmp_path / "t.parquet"
    plain = {"compression": "none", "use_dictionary": False}
    _write(p, range(100, 200), **plain)
    size = p.stat().st_size
    any_ctx.register_parquet("stale_same", str(p))
    assert _one(any_ctx, "select min(a) from stale_same") == 100
    _write(p, range(300, 400), **plain)
    assert p.stat().st_size == size  # same layout, same size: only the mtime tells
    _bump_mtime(p)
    assert _one(any_ctx, "select min(a) from stale_same") == 300
    assert _one(any_ctx, "select count(*) from stale_same where a < 200") == 0


def test_directory_sees_added_and_deleted_files(any_ctx, tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    _write(d / "1.parquet", range(10))
    _write(d / "2.parquet", range(10, 20))
    any_ctx.register_parquet("grow", str(d))
    assert _one(any_ctx, "select count(*) from grow") == 20
    _write(d / "3.parquet", range(100, 130))
    assert _one(any_ctx, "select count(*) from grow") == 50
    assert _one(any_ctx, "select count(*) from grow where a >= 100") == 30
    (d / "1.parquet").unlink()
    assert _one(any_ctx, "select count(*) from grow") == 40
    assert _one(any_ctx, "select min(a) from grow") == 10
    (d / "_tmp.parquet").write_bytes(b"not parquet")  # hidden like pyarrow's discovery does
    assert _one(any_ctx, "select count(*) from grow") == 40


def test_emptied_directory_reads_empty_and_a_removed_one_is_an_error(ctx, tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    _write(d / "1.parquet", range(3))
    ctx.register_parquet("e", str(d))
    (d / "1.parquet").unlink()
    assert ctx.sql("select count(*) n, sum(a) s from e").to_pylist() == [{"n": 0, "s": None}]
    d.rmdir()
    with pytest.raises(pqe.CatalogError, match=f"no such file or directory: '{d}'"):
        ctx.sql("select count(*) from e").to_arrow()


def test_glob_sees_new_matching_files(ctx, tmp_path):
    _write(tmp_path / "a1.parquet", range(5))
    _write(tmp_path / "b1.parquet", range(1000, 1005))
    ctx.register_parquet("g", str(tmp_path / "a*.parquet"))
    assert _one(ctx, "select count(*) from g") == 5
    _write(tmp_path / "a2.parquet", range(5, 12))
    _write(tmp_path / "b2.parquet", range(2000, 2005))
    assert _one(ctx, "select count(*) from g") == 12


def test_hive_directory_gains_a_partition(ctx, tmp_path):
    for year in (2020, 2021):
        (tmp_path / f"year={year}").mkdir()
        _write(tmp_path / f"year={year}" / "0.parquet", range(year, year + 3))
    ctx.register_parquet("h", str(tmp_path))
    assert ctx.sql("select year, count(*) n from h group by year order by year").to_pylist() == [
        {"year": 2020, "n": 3}, {"year": 2021, "n": 3}]
    (tmp_path / "year=2022").mkdir()
    _write(tmp_path / "year=2022" / "0.parquet", range(7))
    assert _one(ctx, "select count(*) from h where year = 2022") == 7
    assert _one(ctx, "select sum(a) from h where year >= 2021") == sum(range(2021, 2024)) + 21


def test_deleted_single_file_is_an_error_naming_it(ctx, tmp_path):
    p = tmp_path / "gone.parquet"
    _write(p, range(10))
    ctx.register_parquet("gone", str(p))
    p.unlink()
    with pytest.raises(pqe.CatalogError, match="gone.parquet"):
        ctx.sql("select count(*) from gone").to_arrow()


def test_changed_schema_is_an_error_naming_the_table(ctx, tmp_path):
    p = tmp_path / "s.parquet"
    _write(p, range(10))
    ctx.register_parquet("s", str(p))
    pq.write_table(pa.table({"a": ["x", "y"]}), p)
    _bump_mtime(p)
    with pytest.raises(pqe.CatalogError, match=r"s\.parquet changed schema.*a string"):
        ctx.sql("select count(*) from s").to_arrow()


def test_dataframe_replanned_after_a_rewrite(ctx, tmp_path):
    """A DataFrame collected twice plans its scans again: the second run sees the new file."""
    p = tmp_path / "t.parquet"
    _write(p, range(10))
    ctx.register_parquet("t", str(p))
    df = ctx.sql("select count(*) as n from t where a > 5")
    assert df.to_pylist() == [{"n": 4}]
    _write(p, range(100))
    _bump_mtime(p)
    assert df.to_pylist() == [{"n": 94}]


def test_csv_rewritten_and_added(ctx, tmp_path):
    (tmp_path / "1.csv").write_text("a,b\n1,x\n2,y\n")
    ctx.register_csv("c", str(tmp_path))
    assert _one(ctx, "select sum(a) from c") == 3
    (tmp_path / "1.csv").write_text("a,b\n10,x\n20,y\n30,z\n")
    _bump_mtime(tmp_path / "1.csv")
    (tmp_path / "2.csv").write_text("a,b\n5,q\n")
    assert _one(ctx, "select sum(a) from c") == 65


def test_cached_statistics_follow_the_files(ctx, tmp_path):
    """Statistics, unit ranges and key samples belong to a listing: a rewrite replaces them."""
    p = tmp_path / "t.parquet"
    _write(p, [1, 1, 2, 3])
    t = ParquetTable(str(p))
    assert t.statistics().num_rows == 4
    assert not t.key_sample_unique("a")
    assert t.statistics().columns["a"].max == 3
    _write(p, range(50, 60))
    _bump_mtime(p)
    t.refresh()
    assert t.statistics().num_rows == 10
    assert t.statistics().columns["a"].max == 59
    assert t.key_sample_unique("a")
    assert set(t.unit_ranges("a").values()) == {(50, 59)}


def test_footers_read_once_per_file_version(tmp_path, monkeypatch):
    d = tmp_path / "d"
    d.mkdir()
    for i in range(3):
        _write(d / f"{i}.parquet", range(i * 10, i * 10 + 10))
    t = ParquetTable(str(d))
    reads = []
    orig = ParquetTable._read_footers
    monkeypatch.setattr(ParquetTable, "_read_footers",
                        lambda self, files: (reads.extend(f.url for f in files), orig(self, files)))
    for _ in range(3):
        t.refresh()
        t.statistics()
    assert reads == []
    _write(d / "1.parquet", range(5))
    _bump_mtime(d / "1.parquet")
    t.refresh()
    assert [os.path.basename(r) for r in reads] == ["1.parquet"]


# ---- tasks are plain data --------------------------------------------------------------------

_FORBIDDEN = (ds.Dataset, ds.Fragment, pq.FileMetaData, pq.ParquetFile)


class _Checker(pickle.Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, _FORBIDDEN):
            raise TypeError(f"a task carries a {type(obj).__name__}")
        return NotImplemented


def _pickle(obj) -> bytes:
    buf = io.BytesIO()
    _Checker(buf).dump(obj)
    return buf.getvalue()


@pytest.mark.parametrize("query", ["q3", "q9", "q21"])
def test_tasks_carry_no_dataset_objects(tpch_dir, query):
    ctx = register_tpch(pqe.Context(), tpch_dir)
    graph, _ = lower(ctx.sql(tpch_query(query)).physical_plan())
    scans = 0
    for task in graph.values():
        if isinstance(task, tuple) and isinstance(task[1], O.Pipeline):
            for op in task[1].ops:
                if isinstance(op, O.ReadFiles):
                    scans += 1
                    assert len(pickle.dumps(op.provider)) < 4000  # no footers, no statistics
                    assert all(os.path.isabs(u.path) for u in op.units)
        _pickle(task)
    assert scans
    ctx.close()


def _scan_op(ctx, sql) -> O.ReadFiles:
    graph, _ = lower(ctx.sql(sql).physical_plan())
    for task in graph.values():
        if isinstance(task, tuple) and isinstance(task[1], O.Pipeline):
            for op in task[1].ops:
                if isinstance(op, O.ReadFiles):
                    return op
    raise AssertionError("no scan")


def test_scan_op_unpickles_where_the_data_is_absent(tmp_path):
    """The dask scheduler's situation: it deserializes tasks but cannot see the files. Nothing
    may open them there; the read happens (and fails, naming the file) only when run."""
    data = tmp_path / "data"
    data.mkdir()
    _write(data / "t.parquet", range(100))
    ctx = pqe.Context()
    ctx.register_parquet("t", str(data / "t.parquet"))
    op = _scan_op(ctx, "select a from t where a > 10")
    blob = pickle.dumps(op)
    ctx.close()
    data.rename(tmp_path / "moved")
    code = textwrap.dedent(f"""
        import pickle, sys
        opened = []
        sys.addaudithook(lambda ev, args: opened.append((ev, args))
                         if ev in ("open", "os.listdir", "os.scandir") and "{data}" in str(args)
                         else None)
        op = pickle.loads({blob!r})
        assert not opened, opened
        import pqe
        try:
            op.run(None, ())
        except pqe.ExecutionError as e:
            assert "t.parquet" in str(e), e
            print("OK")
    """)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(pqe.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(tmp_path), timeout=120, env=env, check=False)
    assert out.stdout.strip() == "OK", out.stderr[-2000:]


def test_relative_paths_are_made_absolute(tmp_path, monkeypatch, cluster_ctx):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "rel.parquet", range(20))
    t = ParquetTable("rel.parquet")
    assert t.units()[0].path == str(tmp_path / "rel.parquet")
    cluster_ctx.catalog.register("rel", t)
    monkeypatch.chdir("/")
    assert _one(cluster_ctx, "select sum(a) from rel") == sum(range(20))
    (tmp_path / "x.csv").write_text("a\n1\n")
    monkeypatch.chdir(tmp_path)
    assert CsvTable("x.csv").units()[0].path == str(tmp_path / "x.csv")


def test_local_file_changed_during_a_query_is_an_error(ctx, tmp_path):
    p = tmp_path / "t.parquet"
    _write(p, range(100))
    ctx.register_parquet("t", str(p))
    op = _scan_op(ctx, "select a from t")
    time.sleep(0.01)
    _write(p, range(5))
    _bump_mtime(p)
    with pytest.raises(pqe.ExecutionError, match=r"t\.parquet changed after the query was planned"):
        op.run(None, ())
