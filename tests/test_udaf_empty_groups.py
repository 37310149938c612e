"""A user aggregate's `update` is never called with an empty array: a partition where a
group has no rows, or only NULL arguments, or only rows a FILTER leaves out, has no state,
and a group with no values anywhere is NULL (as SUM is). Before, a mean-like aggregate gave
NaN and a first-value one raised IndexError at 4 partitions where 1 partition answered."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pqe

STATE = pa.struct([("n", pa.int64()), ("mean", pa.float64())])
CALLS: list[int] = []


def _update(x):
    CALLS.append(len(x))
    return {"n": len(x), "mean": float(np.mean(x.to_numpy(zero_copy_only=False)))}


def _merge(states):
    n = pc.struct_field(states, "n").to_numpy()
    m = pc.struct_field(states, "mean").to_numpy()
    return {"n": int(n.sum()), "mean": float((n * m).sum() / n.sum())}


def _finalize(states):
    return pc.struct_field(states, "mean")


def _ctx(partitions, table):
    ctx = pqe.Context(partitions=partitions)
    ctx.register_arrow("t", table)
    ctx.register_udaf("mymean", _update, _merge, ["DOUBLE"], "DOUBLE", state_type=STATE,
                      finalize=_finalize)
    ctx.register_udaf("firstv", lambda x: x[0].as_py(), lambda s: s[0].as_py(), ["DOUBLE"],
                       "DOUBLE")
    return ctx


T = pa.table({
    "g": [i % 7 for i in range(200)],
    "k": [i // 50 for i in range(200)],
    "x": [None if i % 5 == 0 or 100 <= i < 150 else float(i) for i in range(200)],
})

QUERIES = [
    ("select mymean(x) as a, avg(x) as b from t where k = 1", None),
    ("select k, mymean(x) as a, avg(x) as b from t group by k", "k"),
    ("select g, mymean(x) as a, avg(x) as b from t group by g", "g"),
    ("select k, mymean(x) filter (where g = 3) as a, avg(x) filter (where g = 3) as b "
     "from t group by k", "k"),
    ("select mymean(x) as a, avg(x) as b from t where k = 2", None),  # every x NULL
    ("select mymean(x) as a, avg(x) as b from t where g < 0", None),  # no rows
]


@pytest.mark.parametrize("partitions", [1, 3, 4, 8])
@pytest.mark.parametrize("sql, key", QUERIES)
def test_mean_matches_avg_at_any_partitioning(sql, key, partitions):
    CALLS.clear()
    rows = _ctx(partitions, T).sql(sql).to_arrow().to_pylist()
    for r in rows:
        assert (r["a"] is None) == (r["b"] is None), r
        if r["a"] is not None:
            assert abs(r["a"] - r["b"]) < 1e-9, r
    assert 0 not in CALLS  # update never saw an empty array


@pytest.mark.parametrize("partitions", [1, 4, 8])
def test_first_value_needs_no_empty_guard(partitions):
    ctx = _ctx(partitions, T)
    (row,) = ctx.sql("select firstv(x) as v from t where g = 5 and x is not null "
                     "and k = 0").to_arrow().to_pylist()
    assert row["v"] in {float(i) for i in range(50) if i % 7 == 5 and i % 5}
    got = ctx.sql("select k, firstv(x) is null as none from t group by k order by k").to_arrow()
    assert got.column("none").to_pylist() == [False, False, True, False]
