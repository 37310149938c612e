"""Filters of a large Parquet read that compares decimals run after the read in one pass with
the read's other filters (kernels.scan.iter_read_files): the answers, with NULLs, NaN-free
dates, decimals at their type's limits and a decimal comparison that overflows int64, are
DuckDB's, at 1 and 3 partitions."""
import datetime
from decimal import Decimal

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe

N = 150_000  # above kernels.scan.POST_FILTER_ROWS: the filters run after the read


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    rng = np.random.default_rng(7)
    price = rng.integers(-10**6, 10**6, N)
    price[::97] = 10**17 - 1  # DECIMAL(18,2) limits
    price[1::97] = -(10**17 - 1)
    nulls = rng.random(N) < 0.1
    days = rng.integers(0, 3000, N)
    t = pa.table({
        "d": pa.array([datetime.date(1990, 1, 1) + datetime.timedelta(int(x)) for x in days],
                      pa.date32()),
        "k": pa.array(np.where(rng.random(N) < 0.05, None, rng.integers(-5, 50, N)).tolist(),
                      pa.int64()),
        "big": pa.array(np.where(rng.random(N) < 0.5, 2**62 + rng.integers(0, 100, N),
                                 rng.integers(0, 100, N)), pa.int64()),
        "price": pa.array([None if n else Decimal(int(p)).scaleb(-2)
                           for p, n in zip(price, nulls)], pa.decimal128(18, 2)),
        "q": pa.array([Decimal(int(x)).scaleb(-2) for x in rng.integers(0, 5000, N)],
                      pa.decimal128(15, 2)),
    })
    f = tmp_path_factory.mktemp("passes") / "t.parquet"
    pq.write_table(t, f, row_group_size=20_000)
    return str(f)


QUERIES = [
    "select count(*), sum(price), sum(q) from t where d >= date '1992-01-01' "
    "and d < date '1993-01-01' and q between 10.00 and 20.00",
    "select count(*), sum(price) from t where k > 3 and price > 100.50",
    "select count(*), sum(q) from t where k is null and q < 7.5 and d <= date '1995-06-30'",
    "select count(*), sum(price) from t where price >= 999999999999999.99 or price <= -5000",
    "select count(*) from t where d > date '1991-01-01' and big < 3.5",  # int64 overflow path
    "select count(*), min(price), max(price) from t where k = 7 and q * 2 > 40",
    "select d, k, price, q from t where d = date '1994-02-03' and price < 0 order by all",
]


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("sql", QUERIES)
def test_filter_passes_match_duckdb(path, sql, partitions):
    ctx = pqe.Context(partitions=partitions)
    ctx.register_parquet("t", path)
    got = ctx.sql(sql).to_arrow()
    con = duckdb.connect()
    con.execute(f"create view t as select * from read_parquet('{path}')")
    want = con.execute(sql).fetchall()
    assert [tuple(r.values()) for r in got.to_pylist()] == want
    assert got.num_rows and want[0][0] not in (None, 0)  # the filters keep some rows
