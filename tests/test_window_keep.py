"""A filter on a ranking window's output (`rank <= k`, `row_number() = 1`, `k > dense_rank`)
lets the window step pass on only the rows it can keep (WindowExec.keep): checked against
DuckDB with ties, NULL order keys and partition keys, several windows in one step and in
steps below, a CTE read with and without the filter, k at 0, below 0 and above every
partition's size, on the threaded default, the sync scheduler and four partitions; and
EXPLAIN shows the bound only where it holds."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.testing import oracle
from pqe.testing.compare import compare


def _table() -> pa.Table:
    rng = np.random.default_rng(5)
    n = 3000
    g = rng.integers(0, 12, n).astype(object)
    g[rng.random(n) < 0.05] = None
    v = rng.integers(0, 40, n).astype(object)  # many ties
    v[rng.random(n) < 0.1] = None
    return pa.table({"id": np.arange(n), "g": pa.array(list(g), pa.int64()),
                     "h": rng.integers(0, 3, n), "v": pa.array(list(v), pa.int64()),
                     "f": rng.normal(0, 1, n),
                     "s": pa.array([f"näme {i % 101}" for i in range(n)], pa.string())})


T = _table()
CON = oracle.connect({"t": T})


@pytest.fixture(scope="module", params=[{}, {"scheduler": "sync"}, {"partitions": 4}],
                ids=["threads", "sync", "parts4"])
def ctx(request):
    with pqe.Context(**request.param) as c:
        c.register_arrow("t", T)
        yield c


def _check(ctx, sql, keep: bool):
    expected = oracle.query(CON, sql)
    got = ctx.sql(sql).to_arrow()
    miss = compare(got, expected, ordered=True, check_types=False)
    assert miss is None, f"{sql}\n{miss}"
    assert ("keep=[" in ctx.sql(sql).explain()) == keep, sql


CASES = [  # (query, whether the window step keeps fewer rows)
    ("select * from (select id, g, v, s, rank() over (partition by g order by v desc) as r "
     "from t) x where r <= 3 order by id", True),
    ("select id, s from (select id, s, row_number() over (partition by g order by v, id) as rn "
     "from t) x where rn = 1 order by id", True),
    ("select * from (select id, dense_rank() over (partition by g, h order by v nulls first) "
     "as d, sum(f) over (partition by g, h order by v nulls first) as run from t) x "
     "where 2 > d order by id", True),  # another window of the same step, on every row
    ("select * from (select id, rank() over (partition by g order by v) as r, "
     "count(*) over (partition by h) as c, max(v) over (partition by g) as m from t) x "
     "where r <= 2 and c > 0 order by id", False),  # steps of other partitionings above
    # the ranking's step (they need every row): no bound
    ("select id, r2 from (select id, rank() over (order by v desc, id) as r1, "
     "row_number() over (partition by g order by f) as r2 from t) x where r1 <= 50 "
     "order by id", False),  # r2's step sits above r1's and reads every row
    ("select id, r1 from (select id, row_number() over (partition by g order by f) as r2, "
     "rank() over (order by v desc, id) as r1 from t) x where r1 <= 50 order by id", True),
    ("select * from (select id, rank() over (partition by g order by v) as r from t) x "
     "where r <= 0 order by id", True),
    ("select * from (select id, rank() over (partition by g order by v) as r from t) x "
     "where r < -5 order by id", True),
    ("select * from (select id, rank() over (partition by g order by v) as r from t) x "
     "where r <= 100000 order by id", True),
    ("select * from (select id, rank() over (partition by g order by v) as r from t) x "
     "where r >= 3 order by id", False),
    ("select * from (select id, rank() over (partition by g order by v) as r from t) x "
     "where r <= 3 or id < 10 order by id", False),
    ("select * from (select id, sum(v) over (partition by g order by id) as r from t) x "
     "where r <= 30 order by id", False),  # not a ranking
    ("with w as (select id, g, rank() over (partition by g order by v desc) as r from t) "
     "select a.id, a.r, (select count(*) from w) as n from w a where a.r <= 2 order by a.id",
     True),
    ("with w as (select id, g, rank() over (partition by g order by v desc) as r from t) "
     "select (select count(*) from w where r >= 1) as every, (select count(*) from w "
     "where r <= 2) as top", True),  # the same window (one physical node) read whole too
    ("select g, count(*) as n from (select g, row_number() over (partition by g order by v) "
     "as rn from t) x where rn <= 4 group by g order by g nulls first", True),
]


@pytest.mark.parametrize("sql,keep", CASES, ids=[str(i) for i in range(len(CASES))])
def test_ranking_filters_match_duckdb(ctx, sql, keep):
    _check(ctx, sql, keep)


def test_the_window_step_passes_on_only_kept_rows():
    sql = ("select * from (select id, s, rank() over (partition by g order by v desc) as r "
           "from t) x where r <= 2")
    with pqe.Context() as c:
        c.register_arrow("t", T)
        text = str(c.sql(sql).explain(analyze=True))
    line = next(ln for ln in text.splitlines() if "Window:" in ln and "keep=" in ln)
    rows = int(line.split(" rows=")[1].split()[0])
    # exactly the rows the filter keeps (ties and NULLs, first in DESC, share rank 1)
    assert rows == oracle.query(CON, sql).num_rows < T.num_rows // 5, line


def test_ranking_filter_on_a_local_cluster():
    """The bound travels with the window step to worker processes."""
    pytest.importorskip("distributed")
    with pqe.Context(workers=2, memory_limit="1GiB") as c:
        c.register_arrow("t", T)
        _check(c, CASES[0][0], True)
