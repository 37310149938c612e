"""A table read twice in one query, once with more filters or fewer columns than the other,
is read once: the covering read's rows are filtered again for the narrower use. The answer
must be the one separate reads give, whatever the filters (NULLs, a filter that may raise,
which is never moved onto another read's rows)."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe


@pytest.fixture(scope="module")
def ctx(tmp_path_factory):
    d = tmp_path_factory.mktemp("cover")
    n = 5000
    t = pa.table({
        "k": pa.array(range(n), pa.int64()),
        "g": pa.array([i % 7 if i % 11 else None for i in range(n)], pa.int64()),
        "v": pa.array([(i * 37) % 101 - 50 if i % 13 else None for i in range(n)], pa.int64()),
        "s": pa.array([f"x{i % 5}" if i % 17 else None for i in range(n)]),
        "txt": pa.array([str(i) if i % 3 else "n/a" for i in range(n)]),
    })
    pq.write_table(t, d / "t.parquet", row_group_size=1000)
    c = pqe.Context()
    c.register_parquet("t", str(d / "t.parquet"))
    duck = duckdb.connect()
    duck.execute(f"create view t as select * from read_parquet('{d / 't.parquet'}')")
    yield c, duck
    c.close()
    duck.close()


def _rows(table: pa.Table) -> list[tuple]:
    return sorted((tuple(r.values()) for r in table.to_pylist()),
                  key=lambda r: tuple((x is None, x) for x in r))


QUERIES = [
    # the second read adds a filter on a column the first reads: one read
    ("select a.k, a.v from t a where a.g = 3 and a.k < (select max(b.k) from t b "
     "where b.g = 3 and b.v > 10)", True),
    # fewer columns, same filters
    ("select a.k, a.s from t a join (select k from t where g = 3) b on a.k = b.k + 1 "
     "where a.g = 3", True),
    # the added filter tests NULLs
    ("select count(*) as n, sum(a.v) as sv from t a where a.s = 'x1' and a.k in "
     "(select k from t where s = 'x1' and v is null)", True),
    # an added filter that may raise (a checked cast) is not moved onto the wider read's rows
    ("select a.k from t a where a.g = 1 and a.k in (select k from t where g = 1 and "
     "txt <> 'n/a' and cast(txt as integer) % 2 = 0)", False),
    # no read covers the other: both read
    ("select a.k from t a where a.g = 2 and a.k in (select k from t where v > 40)", False),
]


@pytest.mark.parametrize("sql, shared", QUERIES)
def test_covered_read_answers_as_separate_reads(ctx, sql, shared):
    c, duck = ctx
    assert _rows(c.sql(sql).to_arrow()) == _rows(duck.sql(sql).to_arrow_table())
    plan = c.sql(sql).explain()
    physical = plan[plan.index("== Physical Plan =="):]
    assert physical.count("ParquetScan: t ") == (1 if shared else 2), physical


def test_reads_with_random_filters_are_two_samples(ctx):
    """Two reads of a table with the same `random() < 0.5` filter are two independent
    samples. The planner shared reads with equal filters by their text, so both subqueries
    counted the one sample (a = b on every run); neither equal nor covering reads with a
    volatile filter are shared now."""
    c, _ = ctx
    sql = ("select (select count(*) from t where random() < 0.5) a, "
           "(select count(*) from t where random() < 0.5) b")
    runs = [c.sql(sql).to_pylist()[0] for _ in range(4)]
    assert any(r["a"] != r["b"] for r in runs), runs  # (equal 4 times: p < 0.02)
    plan = c.sql(sql).explain()
    assert plan[plan.index("== Physical Plan =="):].count("ParquetScan: t ") == 2
    sql = ("select count(*) as n from t a where random() < 0.5 and a.k in "
           "(select k from t where random() < 0.5 and g = 1)")
    plan = c.sql(sql).explain()
    assert plan[plan.index("== Physical Plan =="):].count("ParquetScan: t ") == 2
