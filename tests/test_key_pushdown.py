"""Key pushdown: an inner or semi broadcast join whose build is a dense index or has a key
filter hands it to its probe scan, which drops the rows whose key no build row has in the
same pass as its own dictionary or decimal filters (kernels.scan,
physical.planner._key_pushdown). Checked against DuckDB over key types, NULL and
out-of-range keys, dictionary, decimal and plain filters, joins between the scan and the
join, and reads above and below the post-read threshold."""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe
from pqe.kernels import dense_join

duckdb = pytest.importorskip("duckdb")

ROWS = 150_000  # above kernels.scan.POST_FILTER_ROWS: filters run after the read


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("pushdown")
    rng = np.random.default_rng(7)
    k = rng.integers(-50, 5_200, ROWS)  # some keys below and above every build's range
    k_null = rng.random(ROWS) < 0.05
    fact = pa.table({
        "k": pa.array(k, pa.int32(), mask=k_null),
        "k64": pa.array(k, pa.int64()),
        "k2": pa.array(rng.integers(0, 3_000, ROWS), pa.int64()),
        "flag": pa.array(rng.choice(["A", "B", "C", "ü"], ROWS)),
        "price": pa.array([decimal.Decimal(int(x)).scaleb(-2)
                           for x in rng.integers(0, 100_000, ROWS)], pa.decimal128(12, 2)),
        "d": pa.array(rng.integers(0, 3_650, ROWS).astype("datetime64[D]")),
        "n": pa.array(rng.integers(0, 1_000, ROWS), pa.int64()),
    })
    pq.write_table(fact, d / "fact.parquet", row_group_size=20_000)
    small = fact.slice(0, 3_000)  # a read below the post-read threshold
    pq.write_table(small, d / "small.parquet", row_group_size=1_000)
    dim = pa.table({"id": pa.array(np.arange(0, 5_000), pa.int64()),
                    "grp": pa.array(np.arange(0, 5_000) % 37, pa.int32()),
                    "name": pa.array([f"n{i % 11}" for i in range(5_000)])})
    pq.write_table(dim, d / "dim.parquet")
    # a build key that repeats: no dense index, a key filter instead
    dup = pa.table({"key": pa.array(np.repeat(np.arange(0, 3_000, 3), 2), pa.int64()),
                    "tag": pa.array(np.arange(2_000) % 5, pa.int32())})
    pq.write_table(dup, d / "dup.parquet")
    return d


@pytest.fixture
def counted(monkeypatch):
    calls = {"applied": 0}
    real = dense_join.members_mask

    def counting(*a):
        out = real(*a)
        calls["applied"] += out is not None
        return out

    monkeypatch.setattr(dense_join, "members_mask", counting)
    return calls


def _contexts(files, partitions):
    ctx = pqe.Context(partitions=partitions)
    con = duckdb.connect()
    for name in ("fact", "small", "dim", "dup"):
        ctx.register_parquet(name, str(files / f"{name}.parquet"))
        con.execute(f"create view {name} as select * from read_parquet('{files / name}.parquet')")
    return ctx, con


def _rows(table: pa.Table):
    return sorted(tuple(r.values()) for r in table.to_pylist())


def _same(ctx, con, sql):
    got = _rows(ctx.sql(sql).to_arrow())
    want = sorted(tuple(r) for r in con.execute(sql).fetchall())
    assert got == want, sql


QUERIES = [
    # dense build, the scan's dictionary filter (text) and the pushdown in one pass
    ("select f.k, f.price, d.grp from fact f join dim d on f.k = d.id "
     "where d.grp = 3 and f.flag = 'A'", True),
    # a decimal filter of the scan
    ("select f.k64, f.price from fact f join dim d on f.k64 = d.id "
     "where d.grp in (1, 2) and f.price > 500.25", True),
    # a plain filter, a text one with unicode
    ("select f.k, f.d, f.flag from fact f join dim d on f.k = d.id "
     "where d.name = 'n3' and d.grp < 10 and f.d < date '1975-06-01' and f.flag <> 'ü'", True),
    # semi join (IN): counts and sums
    ("select count(*), sum(price), min(k) from fact "
     "where k in (select id from dim where grp = 5) and price < 300", True),
    # a key filter of a join whose first key is text: the filter's position counts its own
    # keys (the join's second key, k2, was tested against its first integer column, k)
    ("select f.k2, f.k, f.n from fact f join (select distinct case when id % 2 = 0 then 'A' "
     "else 'B' end name, key, tag from dup join dim on dup.key = dim.id where tag = 1) u "
     "on f.flag = u.name and f.k2 = u.key and f.k = u.key where f.flag <> 'C'", "broadcast"),
    ("select count(*) from fact f where exists (select 1 from dup join dim on dup.key = dim.id "
     "where (case when id % 3 = 0 then 'B' else 'C' end) = f.flag and dup.key = f.k "
     "and dup.tag = f.n % 5) and f.flag <> 'A'", "any"),
    # a plain filter alone: the scanner's copy, then the join's drop (no pushdown)
    ("select count(*), sum(price), min(k) from fact "
     "where k in (select id from dim where grp = 5) and n < 500", False),
    # no match at all: an empty answer (an empty build makes no index: no mask to apply)
    ("select f.k from fact f join dim d on f.k = d.id where d.grp = 99 and f.flag = 'A'",
     "planned"),
    # a key filter (the build key repeats)
    ("select f.k2, f.price, u.tag from fact f join dup u on f.k2 = u.key "
     "where u.tag = 2 and f.flag in ('B', 'C')", "broadcast"),
    # joins between the scan and the pushed join, the scan with a dictionary filter
    ("select f.k, u.tag, d.grp, f.n from fact f join dup u on f.k2 = u.key "
     "join dim d on f.k = d.id where d.grp = 7 and u.tag < 3 and f.flag <> 'C'", True),
    # ... and unfiltered (no pushdown)
    ("select f.k, u.tag, d.grp, f.n from fact f join dup u on f.k2 = u.key "
     "join dim d on f.k = d.id where d.grp = 7 and u.tag < 3", False),
    # a small read: filters inside the scanner, the pushdown before the join
    ("select s.k, s.flag, d.grp from small s join dim d on s.k = d.id "
     "where d.grp = 4 and s.flag = 'C'", True),
    # the build holds every key the scan has (nothing to drop: not planned)
    ("select count(*), sum(f.n) from fact f join dim d on f.k64 = d.id "
     "where d.grp >= 0 and f.flag = 'A'", False),
]


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("case", range(len(QUERIES)))
def test_key_pushdown_matches_duckdb(files, counted, partitions, case):
    sql, applied = QUERIES[case]
    if applied == "broadcast":  # (broadcast joins only: one partition's join its scan directly)
        applied = partitions > 1
    ctx, con = _contexts(files, partitions)
    _same(ctx, con, sql)
    plan = "\n".join(ctx.sql("explain " + sql).to_arrow().column(0).to_pylist())
    if applied == "any":  # (the answer is what this checks)
        pass
    elif applied == "planned":
        assert "key_pushdown=[" in plan
    elif applied:
        assert "key_pushdown=[" in plan
        assert counted["applied"] > 0, "the scan did not drop rows by the build's keys"
    else:
        assert "key_pushdown=[" not in plan
        assert counted["applied"] == 0


def test_pushdown_drops_the_rows_in_the_scan(files):
    """The scan returns only the rows the join keeps (EXPLAIN ANALYZE's scan rows equal the
    join's), where it returned every row its own filter kept."""
    ctx, con = _contexts(files, 3)
    sql = ("select f.k, f.price from fact f join dim d on f.k = d.id "
           "where d.grp = 3 and f.flag = 'A'")
    lines = ctx.sql("explain analyze " + sql).to_arrow().column(0).to_pylist()
    scan = next(x for x in lines if "ParquetScan: fact" in x)
    join = next(x for x in lines if "HashJoin[" in x and "key_pushdown" in x)
    rows = lambda line: int(line.split(" rows=")[1].split()[0])  # noqa: E731
    want = con.execute(f"select count(*) from ({sql})").fetchone()[0]
    assert rows(join) == want
    assert rows(scan) == want
    flagged = con.execute("select count(*) from fact where flag = 'A'").fetchone()[0]
    assert rows(scan) < flagged / 10


def test_no_pushdown_into_a_shared_scan(files):
    """A scan read once for two consumers is not narrowed by one consumer's build."""
    ctx, con = _contexts(files, 3)
    sql = ("with f as (select * from fact where flag = 'A') "
           "select count(*), sum(n) from f join dim d on f.k = d.id where d.grp = 3 "
           "union all select count(*), sum(n) from f join dim d on f.k = d.id where d.grp = 4")
    _same(ctx, con, sql)


def test_members_mask_keeps_null_and_out_of_range_keys_out():
    index = dense_join.build(pa.table({"id": pa.array([5, 7, 9], pa.int64())}), "id")
    assert isinstance(index, dense_join.DenseIndex)
    probe = pa.table({"k": pa.array([5, None, 6, 9, -(2 ** 31), 2 ** 31 - 1, 7, 4, 10, 5,
                                     None, 8] * 2, pa.int32())})
    mask = dense_join.members_mask(probe, [(index, ("k",))])
    assert mask.tolist() == [True, False, False, True, False, False, True, False, False,
                             True, False, False] * 2
    # a build that is not an index or key filter (the table itself), a text key: nothing
    assert dense_join.members_mask(probe, [(pa.table({"id": [5]}), ("k",))]) is None
    text = pa.table({"k": pa.array(["5", "7"])})
    assert dense_join.members_mask(text, [(index, ("k",))]) is None
    # a mask that keeps nearly every row is not worth a copy
    most = pa.table({"k": pa.array([5, 7, 9] * 10 + [1], pa.int64())})
    assert dense_join.members_mask(most, [(index, ("k",))]) is None


def test_key_filter_mask_uses_its_position():
    build = pa.table({"a": pa.array([1, 1, 2, 2], pa.int64()),
                      "b": pa.array([100, 100, 200, 200], pa.int64())})
    kf = dense_join.build_key_filter(build, ("a", "b"))
    assert kf is not None
    probe = pa.table({"x": pa.array([1, 2, 3, 4] * 5, pa.int64()),
                      "y": pa.array([100, 200, 300, 150] * 5, pa.int64())})
    names = ("x", "y")
    mask = dense_join.members_mask(probe, [(kf, names)])
    column = names[kf.position]
    assert mask.tolist() == [v in (1, 2, 100, 200) and v in
                             ((1, 2) if column == "x" else (100, 200))
                             for v in probe.column(column).to_pylist()]
    # the key filter's position without a pushed column: nothing
    assert dense_join.members_mask(probe, [(kf, (None, None))]) is None


def test_dates_stay_out_of_the_pushdown(files):
    """Only integer columns: a join on a date key keeps its plan."""
    ctx, con = _contexts(files, 3)
    sql = ("select count(*) from fact f join (select distinct d from small where n < 3) s "
           "on f.d = s.d where f.flag = 'A'")
    _same(ctx, con, sql)
    assert "key_pushdown" not in "\n".join(ctx.sql("explain " + sql).to_arrow().column(0)
                                            .to_pylist())
