"""Regressions found by the differential fuzzer, each pinned to exact values (checked against
DuckDB, the reference, unless a comment says otherwise): casts to integers and decimals, decimal
precision capping, ROUND and % on decimals, -0.0 and NaN as hash keys, ORDER BY ... LIMIT 0.
Queries whose answer could depend on partitioning run with 1 and 3 partitions."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

import pqe
from pqe.kernels import relational as rel

D = decimal.Decimal
PARTITIONS = [1, 3]


def run(sql: str, partitions: int = 1, **tables: pa.Table) -> pa.Table:
    ctx = pqe.Context(partitions=partitions)
    try:
        for name, t in tables.items():
            ctx.register_arrow(name, t)
        return ctx.sql(sql).to_arrow()
    finally:
        ctx.close()


def column(sql: str, partitions: int = 1, **tables: pa.Table) -> list:
    return run(sql, partitions, **tables).column(0).to_pylist()


def fails(sql: str, **tables: pa.Table) -> str:
    with pytest.raises(pqe.Error) as info:
        run(sql, **tables)
    message = str(info.value)
    assert "\n" not in message
    return message


# ---- 5. ORDER BY ... LIMIT 0 -----------------------------------------------------------------


@pytest.mark.parametrize("partitions", PARTITIONS)
def test_order_by_limit_applies_to_tiny_inputs(partitions):
    t = pa.table({"c": pa.array([10, None, 3, 3, 10], pa.int64())})
    assert column("select 1.50 order by 1 limit 0", partitions) == []
    assert column("select c from t order by c limit 0", partitions, t=t) == []
    assert column("select c from t order by c limit 0 offset 2", partitions, t=t) == []
    assert column("select c from t order by c limit 1 offset 5", partitions, t=t) == []
    assert column("select c from t order by c limit 2 offset 3", partitions, t=t) == [10, None]
    assert column("select c from t order by c desc limit 1 offset 1", partitions, t=t) == [10]


def test_sort_kernel_fetch_on_one_row():
    one = pa.table({"c": pa.array([7], pa.int64())})
    assert rel.sort(one, [("c", True, False)], 0).num_rows == 0
    assert rel.sort(one, [("c", True, False)], 1).num_rows == 1
    assert rel.sort(one.slice(0, 0), [("c", True, False)], 0).num_rows == 0
