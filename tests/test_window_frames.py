"""Window frames beyond ROWS/RANGE: GROUPS frames, EXCLUDE clauses and IGNORE NULLS, checked
against DuckDB on data with ties, NULL values, NULL and duplicate keys and several window
partitions, on the threaded default, the sync scheduler and four partitions."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.testing import oracle
from pqe.testing.compare import compare

SCHEDULERS = [{}, {"scheduler": "sync"}, {"partitions": 4}]


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    n = 400
    g = rng.integers(0, 5, n)
    k = rng.integers(0, 12, n).astype(object)  # many ties
    k[rng.random(n) < 0.05] = None
    v = rng.integers(-50, 50, n).astype(object)
    v[rng.random(n) < 0.3] = None  # NULL-heavy
    f = rng.normal(0, 10, n)
    d = [None if x is None else x * 3 for x in v]
    # a value that is the same for every row of a peer group (ties in k), so the value
    # functions have one right answer over RANGE and GROUPS frames whatever order peers get
    kv = [None if x is None or x % 3 == 0 else (x * 7) % 11 for x in k]
    return pa.table({"id": np.arange(n), "g": g, "k": pa.array(list(k), pa.int64()),
                     "kv": pa.array(kv, pa.int64()),
                     "ks": pa.array([None if x is None else f"k{x}" for x in kv], pa.string()),
                     "v": pa.array(list(v), pa.int64()), "f": f,
                     "d": pa.array(d, pa.decimal128(12, 2)),
                     "s": pa.array([None if x is None else f"s{x}" for x in v], pa.string())})


T = _table()

FRAMES = [
    "rows between 2 preceding and 1 following exclude current row",
    "rows between unbounded preceding and unbounded following exclude group",
    "rows between 3 preceding and 3 following exclude ties",
    "range between 2 preceding and 2 following exclude current row",
    "range between unbounded preceding and current row exclude ties",
    "groups between 1 preceding and 1 following",
    "groups between unbounded preceding and 2 preceding",
    "groups between 2 following and unbounded following",
    "groups between current row and 1 following exclude group",
    "groups between 1 preceding and 1 following exclude ties",
    "groups between 0 preceding and 0 following exclude current row",
    "rows between current row and current row exclude current row",  # always empty
]
AGGS = ["sum(v)", "avg(f)", "count(v)", "count(*)", "min(s)", "max(d)", "sum(d)"]
VALUES = ["first_value({v})", "last_value({s})", "nth_value({v}, 2)",
          "first_value({v} ignore nulls)", "last_value({v} ignore nulls)",
          "nth_value({s}, 3 ignore nulls)"]


def _check(ctx, sql):
    expected = oracle.query(CON, sql)
    got = ctx.sql(sql).to_arrow()
    miss = compare(got, expected, ordered=True, check_types=False)
    assert miss is None, f"{sql}\n{miss}"


CON = oracle.connect({"t": T})


@pytest.fixture(scope="module", params=SCHEDULERS, ids=["threads", "sync", "parts4"])
def ctx(request):
    with pqe.Context(**request.param) as c:
        c.register_arrow("t", T)
        yield c


@pytest.mark.parametrize("frame", FRAMES)
def test_frames_match_duckdb(ctx, frame):
    if frame.startswith("rows"):  # a row's neighbours must not depend on how peers sort
        order, v, s = "k nulls first, id", "v", "s"
    else:  # whole peer groups: values constant within a group have one answer
        order, v, s = "k nulls first", "kv", "ks"
    funcs = AGGS + [f.format(v=v, s=s) for f in VALUES]
    cols = ", ".join(f"{fn} over (partition by g order by {order} {frame}) as c{i}"
                     for i, fn in enumerate(funcs))
    _check(ctx, f"select id, {cols} from t order by id")


def test_groups_frame_descending_and_nulls_last(ctx):
    _check(ctx, "select id, sum(v) over (partition by g order by k desc nulls last "
                "groups between 2 preceding and 1 preceding) as a, "
                "count(*) over (order by k groups between 1 following and 3 following "
                "exclude ties) as b from t order by id")


@pytest.mark.parametrize("fn", ["lag", "lead"])
@pytest.mark.parametrize("offset", [1, 2, 5])
def test_lag_lead_ignore_nulls(ctx, fn, offset):
    _check(ctx, f"select id, {fn}(v ignore nulls) over (partition by g order by id) as a, "
                f"{fn}(s, {offset}, 'none' ignore nulls) over (partition by g order by id) as b, "
                f"{fn}(v, {offset} ignore nulls) over (order by id) as c from t order by id")


def test_ignore_nulls_explain_and_refusals():
    with pqe.Context() as c:
        c.register_arrow("t", T)
        text = c.sql("select first_value(v ignore nulls) over (order by k groups between "
                     "1 preceding and current row exclude ties) from t").explain()
        assert "IGNORE NULLS" in text and "EXCLUDE TIES" in text and "GROUPS" in text
        for sql, what in [
            ("select sum(v ignore nulls) over (order by k) from t", "IGNORE NULLS in SUM"),
            ("select row_number() ignore nulls over (order by k) from t", "IGNORE NULLS"),
        ]:
            with pytest.raises(pqe.Error, match=what):
                c.sql(sql).to_arrow()
        # (GROUPS without ORDER BY is answered, every row a peer, as DuckDB does: see
        # test_hunt_findings_17; RANGE with an offset is refused, as DuckDB refuses it)
        with pytest.raises(pqe.BindError, match="RANGE window frame with an offset needs an "
                                                "ORDER BY"):
            c.sql("select sum(v) over (partition by g range between 1 preceding and current row) "
                  "from t")
        with pytest.raises(pqe.BindError, match="ROWS frame offsets must be integers"):
            c.sql("select sum(v) over (order by id rows between 1.5 preceding and current row) "
                  "from t")


def test_frame_pieces_on_an_empty_and_a_one_row_table():
    with pqe.Context() as c:
        c.register_arrow("e", pa.table({"k": pa.array([], pa.int64())}))
        c.register_arrow("o", pa.table({"k": [1]}))
        sql = ("select k, sum(k) over (order by k groups between 1 preceding and 1 following "
               "exclude current row) as s, first_value(k ignore nulls) over (order by k rows "
               "between current row and current row exclude current row) as f from {}")
        assert c.sql(sql.format("e")).to_arrow().num_rows == 0
        assert c.sql(sql.format("o")).to_arrow().to_pylist() == [{"k": 1, "s": None, "f": None}]


def test_frames_on_a_local_cluster():
    """The frame specs (GROUPS, EXCLUDE, IGNORE NULLS) travel to worker processes."""
    pytest.importorskip("distributed")
    with pqe.Context(workers=2, memory_limit="1GiB") as c:
        c.register_arrow("t", T)
        _check(c, "select id, sum(v) over (partition by g order by k nulls first groups between "
                  "1 preceding and 1 following exclude ties) as a, last_value(kv ignore nulls) "
                  "over (partition by g order by k nulls first range between 2 preceding and "
                  "current row exclude group) as b, lead(s, 2 ignore nulls) over (order by id) "
                  "as c from t order by id")


# MIN/MAX over frames that start at their window partition's first row or end at its last
# (running maxima, the whole partition) take one cumulative maximum over all partitions
# (window._running_best) instead of the sparse table. Values at the edges of the order
# (NaN above every number, -0.0 beside 0.0, infinities), all-NULL and one-row partitions.
def _running_table() -> pa.Table:
    rng = np.random.default_rng(11)
    n = 600
    g = rng.integers(0, 9, n).astype(object)
    g[g == 8] = None  # a NULL window partition
    g[0] = 100  # a one-row partition
    f = rng.choice([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -2.25, 7.0], n).astype(object)
    f[rng.random(n) < 0.2] = None
    v = rng.integers(-2**62, 2**62, n).astype(object)
    v[rng.random(n) < 0.3] = None
    v[np.asarray([x == 3 for x in g])] = None  # a partition without any value
    return pa.table({
        "id": np.arange(n), "g": pa.array(list(g), pa.int64()),
        "k": rng.integers(0, 15, n),  # ties
        "v": pa.array(list(v), pa.int64()), "f": pa.array(list(f), pa.float64()),
        "s": pa.array([None if x is None else f"ü{x % 97}" for x in v], pa.string()),
        "d": pa.array([None if x is None else Decimal(x % 100003).scaleb(-2) for x in v],
                      pa.decimal128(12, 2)),
        "b": pa.array([None if x is None else x % 3 == 0 for x in v], pa.bool_()),
    })


RUNNING_FRAMES = [
    "order by k, id",  # RANGE UNBOUNDED PRECEDING .. CURRENT ROW
    "order by k",  # the same with peers
    "order by k, id rows between unbounded preceding and 1 preceding",  # empty first frame
    "order by k, id rows between current row and unbounded following",
    "order by k range between 2 following and unbounded following",  # empty last frames
    "order by k, id rows between unbounded preceding and unbounded following "
    "exclude current row",  # a prefix piece and a suffix piece
    "",  # the whole partition
]


@pytest.mark.parametrize("frame", RUNNING_FRAMES)
def test_running_min_max_match_duckdb(frame, monkeypatch):
    from pqe.kernels import window
    table = _running_table()
    con = oracle.connect({"r": table})
    funcs = ["max(v)", "min(v)", "max(f)", "min(f)", "max(s)", "min(d)", "bool_or(b)",
             "bool_and(b)"]
    cols = ", ".join(f"{fn} over (partition by g {frame}) as c{i}" for i, fn in enumerate(funcs))
    sql = f"select id, {cols} from r order by id"
    expected = oracle.query(con, sql)
    calls = []
    real = window._running_best
    monkeypatch.setattr(window, "_running_best",
                        lambda *a: calls.append(r := real(*a)) or r)
    for params in SCHEDULERS:
        calls.clear()
        with pqe.Context(**params) as c:
            c.register_arrow("r", table)
            got = c.sql(sql).to_arrow()
        miss = compare(got, expected, ordered=True, check_types=False)
        assert miss is None, f"{sql} {params}\n{miss}"
        assert calls and all(r is not None for r in calls), "the running path was not taken"
        # -0.0 and 0.0 are one value to MAX; which one shows must not depend on the path
        monkeypatch.setattr(window, "_running_best", lambda *a: None)
        with pqe.Context(**params) as c:
            c.register_arrow("r", table)
            sparse = c.sql(sql).to_arrow()
        monkeypatch.setattr(window, "_running_best",
                            lambda *a: calls.append(r := real(*a)) or r)
        # (repr: NaN equals NaN, -0.0 differs from 0.0)
        assert repr(got.to_pylist()) == repr(sparse.to_pylist()), \
            f"{sql} {params}: running and sparse paths differ"


def test_sliding_min_max_keep_the_sparse_table(monkeypatch):
    from pqe.kernels import window
    calls = []
    real = window._running_best
    monkeypatch.setattr(window, "_running_best", lambda *a: calls.append(r := real(*a)) or r)
    _check_plain = "select id, max(v) over (partition by g order by k, id rows between 3 " \
                   "preceding and 2 following) as m from t order by id"
    with pqe.Context() as c:
        c.register_arrow("t", T)
        _check(c, _check_plain)
    assert calls and all(r is None for r in calls)


# ---- float SUM/AVG over a whole window partition or a running frame from its start --------
# (kernels.window._partition_sums: one sum per partition, or each partition's own cumulative
# sum, instead of the power-of-two blocks of `_range_sums`)

def _floats() -> pa.Table:
    rng = np.random.default_rng(11)
    n = 600
    g = rng.integers(0, 6, n)
    f = rng.normal(0, 10, n).astype(object)
    f[rng.random(n) < 0.1] = None
    f[(g == 1) & (rng.random(n) < 0.2)] = float("inf")   # inf and NaN in some partitions only
    f[(g == 2) & (rng.random(n) < 0.1)] = float("nan")
    f[g == 3] = 1e20                                       # large values beside small ones
    f[(g == 3) & (np.arange(n) % 2 == 0)] = -1e20
    f[g == 4] = None                                       # a partition of NULLs only
    return pa.table({"id": np.arange(n), "g": g, "f": pa.array(list(f), pa.float64()),
                     "small": rng.normal(0, 1e-3, n)})


F = _floats()
FLOAT_WINDOWS = [
    "sum(f) over (partition by g)", "avg(f) over (partition by g)",
    "sum(small) over (partition by g)", "sum(f) over ()",
    "sum(f) over (partition by g order by id)", "avg(f) over (partition by g order by id)",
    "sum(small) over (partition by g order by id rows between unbounded preceding and 2 preceding)",
    "sum(f) over (partition by g order by id rows between unbounded preceding and current row)",
    "sum(f) over (order by id)",
    "sum(f) over (partition by g order by id rows between unbounded preceding and unbounded following)",
    "sum(small) over (partition by g order by g)",  # a peer frame: the whole partition
]


@pytest.mark.parametrize("window", FLOAT_WINDOWS)
def test_float_sums_over_partitions_and_running_frames(window):
    pytest.importorskip("duckdb")
    con = oracle.connect({"t": F})
    sql = f"SELECT id, g, {window} AS w FROM t"
    expected = oracle.query(con, sql)
    for setup in SCHEDULERS:
        ctx = pqe.Context(**setup)
        ctx.register_arrow("t", F)
        m = compare(ctx.sql(sql).to_arrow(), expected, sql=sql)
        assert m is None, f"{sql} ({setup}): {m}"


def test_running_sums_over_many_partitions_fall_back():
    # past kernels.window.RUNNING_PARTITIONS partitions the blocks of `_range_sums` are used
    pytest.importorskip("duckdb")
    from pqe.kernels import window

    rng = np.random.default_rng(12)
    n = 3 * window.RUNNING_PARTITIONS
    t = pa.table({"id": np.arange(n), "g": rng.integers(0, 2 * window.RUNNING_PARTITIONS, n),
                  "f": rng.normal(0, 1, n)})
    sql = "SELECT id, sum(f) OVER (PARTITION BY g ORDER BY id) AS w FROM t"
    ctx = pqe.Context()
    ctx.register_arrow("t", t)
    assert compare(ctx.sql(sql).to_arrow(), oracle.query(oracle.connect({"t": t}), sql),
                   sql=sql) is None
