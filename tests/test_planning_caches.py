"""What planning remembers between queries, per version of a table's files: the row groups a
filter's statistics leave (by the filter's exact constants, never its text alone), and the
share of a text sample a LIKE keeps (per sample, forgotten with it). A cached answer must
never outlive the files it came from or stand in for another filter's."""

from __future__ import annotations

import gc
import os

import pyarrow as pa
import pyarrow.parquet as pq

import pqe
import pqe.types as T
from pqe.plan import stats
from pqe.plan.expr import Call, ColumnRef, Field, Literal
from pqe.plan.logical import Scan
from pqe.plan.stats import Estimator


def _two_row_groups(path, offset: int = 0) -> None:
    t = pa.table({"a": pa.array(range(offset, offset + 20), pa.int64()),
                  "d": pa.array([pa.scalar(i, pa.int64()).as_py() / 2 for i in range(20)],
                                pa.float64()).cast(pa.decimal128(6, 1))})
    pq.write_table(t, path, row_group_size=10)


def test_pruned_row_groups_follow_each_filters_constants(tmp_path):
    path = tmp_path / "t.parquet"
    _two_row_groups(path)
    with pqe.Context() as ctx:
        ctx.register_parquet("t", str(path))
        for value, group in ((1, "rg0"), (15, "rg1"), (1, "rg0"), (25, None)):
            sql = f"select a from t where a = {value}"
            assert ctx.sql(sql).to_pylist() == ([{"a": value}] if group else [])
            assert ("row_groups=1/2" if group else "row_groups=0/2") in ctx.sql(sql).explain()
        # decimal constants: each its own row groups
        assert ctx.sql("select a from t where d = 1").to_pylist() == [{"a": 2}]
        assert ctx.sql("select a from t where d = 1.5").to_pylist() == [{"a": 3}]
        assert ctx.sql("select a from t where d = 7.5").to_pylist() == [{"a": 15}]
        assert "row_groups=1/2" in ctx.sql("select a from t where d = 7.5").explain()


def test_pruned_row_groups_start_over_when_the_file_changes(tmp_path):
    path = tmp_path / "t.parquet"
    _two_row_groups(path)
    with pqe.Context() as ctx:
        ctx.register_parquet("t", str(path))
        assert ctx.sql("select a from t where a = 25").to_pylist() == []
        st = os.stat(path)
        _two_row_groups(path, offset=20)  # now 20..39: a = 25 is in the first row group
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        assert ctx.sql("select a from t where a = 25").to_pylist() == [{"a": 25}]
        assert "row_groups=1/2" in ctx.sql("select a from t where a = 25").explain()


def _text_table(path, values: list[str]) -> None:
    pq.write_table(pa.table({"s": pa.array(values * (3000 // len(values)))}), path)


def test_like_estimates_are_per_table_sample(tmp_path):
    """The same pattern over two tables: each estimate comes from its own table's sample
    (a cache keyed by the pattern alone would give the second the first's share)."""
    _text_table(tmp_path / "hits.parquet", ["abc-1", "abc-2"])
    _text_table(tmp_path / "misses.parquet", ["xyz-1", "xyz-2"])
    with pqe.Context() as ctx:
        ctx.register_parquet("hits", str(tmp_path / "hits.parquet"))
        ctx.register_parquet("misses", str(tmp_path / "misses.parquet"))
        rows = {}
        for name in ("hits", "misses", "hits"):
            plan = ctx.sql(f"select s from {name} where s like 'abc%'").logical_plan()
            rows.setdefault(name, []).append(Estimator().rows(plan))
        assert rows["hits"][0] == rows["hits"][1] > 2000
        assert rows["misses"][0] < 10
        assert ctx.sql("select count(*) as n from hits where s like 'abc%'").to_pylist() \
            == [{"n": 3000}]


def test_like_share_cache_forgets_a_dropped_sample():
    values = pa.array(["abc"] * 500 + ["x"] * 1500)
    key = id(values)
    est = Estimator()

    class Provider:
        def sample_values(self, column):
            return values

    f = Field("s#1", "s", pa.string(), True)
    scan = Scan("t", Provider(), (f,))
    e = Call("like", (ColumnRef(f), Literal("abc%", pa.string())), T.BOOLEAN, True)
    assert est._pattern_selectivity(e, scan) == 0.25
    assert stats._PATTERN_SHARES[key][0]() is values
    # (by its key: other tests' samples may be collected here too, so the count is no guide)
    del values, scan, Provider
    gc.collect()
    assert key not in stats._PATTERN_SHARES
