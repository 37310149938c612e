"""Findings of the twenty-second session's hunts, each a test that failed before its fix."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pqe

duckdb = pytest.importorskip("duckdb")


def _rows(t) -> list[str]:
    return sorted(str(tuple(r.values())) for r in t.to_pylist())


def _duck_rows(sql: str, **tables: pa.Table) -> list[str]:
    con = duckdb.connect()
    for name, t in tables.items():
        con.register(name, t)
    return sorted(str(r) for r in con.execute(sql).fetchall())


GX = pa.table({"g": [1, 1, 2, None], "x": [3, 1, 2, 5]})

# A filter over a UNION ALL reaches each branch; in a constant branch (`select 0 from t`) it
# becomes a constant TRUE (`0 <= 1`), pushed into that branch's scan of t. The physical
# planner reads such a scan from another scan of t that covers it (here the window
# branch's), and the filters left to apply were only that TRUE: `and_` drops TRUE literals
# and gave None, which the planner then rewrote ("physical planning failed:
# AttributeError: 'NoneType' object has no attribute 'children'").
CONSTANT_BRANCHES = [
    "select * from (select rank() over (partition by g order by x) r from t "
    "union all select 0 from t) s where r <= 1",
    "select * from (select max(x) over (partition by g) r from t "
    "union all select 0 from t) s where r < 2",
    "select * from (select row_number() over (partition by g order by x) r from t "
    "union all select 0 from t) s where r <= 1 and r >= 0",
    "select * from (select x r from t where g = 1 union all select 0 from t) s where r <= 1",
    "select * from (select g r from t union all select 1 from t) s where r = 1",
    "select * from (select rank() over (partition by g order by x) r from t "
    "union all select 5 from t) s where r <= 1",
    "select * from t where (x > 1 and true) or (x > 1 and g = 2)",
    "select * from t where (x > 1 and g is not null) or (x > 1 and true)",
    "select * from (select x, g from t where x > 1 union all "
    "select x, g from t where true) s where x >= 0",
]


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("sql", CONSTANT_BRANCHES)
def test_filter_that_is_constant_true_in_a_covered_scan(sql, partitions):
    ctx = pqe.Context(partitions=partitions)
    ctx.register_arrow("t", GX)
    assert _rows(ctx.sql(sql).to_arrow()) == _duck_rows(sql, t=GX)
