"""DataFrame API / interop findings (dfapi hunt): self-joins of DataFrames whose columns were
already qualified "right" (and CTE / view references that kept their ids), to_polars() of
INTERVALs nested in lists and structs, to_dask().to_parquet() of LIST / STRUCT / MAP / BLOB /
TIME columns, and NumPy scalars wherever a Python number is taken. Answers are compared with
DuckDB (or Polars / pyarrow) where they answer the same question."""

from __future__ import annotations

import datetime
import decimal

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe
from pqe import col

A = pa.table({"k": [1, 2, None, 2, 3], "i": [1, 2, 3, 4, 5]})


def _rows(rows) -> list[tuple]:
    """Rows (dicts or tuples) as sorted tuples, NULLs sorting first."""
    tuples = [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in rows]
    return sorted(tuples, key=lambda t: [(v is not None, v) for v in t])


def _duck(sql: str) -> list[tuple]:
    con = duckdb.connect()
    try:
        con.register("A", A)
        return _rows(con.sql(sql).fetchall())
    finally:
        con.close()


@pytest.fixture()
def ctx():
    c = pqe.Context(partitions=3)
    c.register_arrow("A", A)
    yield c
    c.close()


# ---- 1: self-joins that share column ids ----------------------------------------------------

S1 = "(select a.k, a.i, b.i as j from A a join A b on a.k = b.k)"


def _s1(ctx):
    a = ctx.table("A")
    return a.join(a.rename({"i": "j"}), on="k")  # k, i, j (j from the right side)


def test_self_join_of_a_self_join_matches_sql_and_duckdb(ctx):
    s1 = _s1(ctx)
    got = s1.join(s1, on="k")
    assert got.columns == ["k", "i", "j", "i_right", "j_right"]
    want = _duck(f"select x.k, x.i, x.j, y.i, y.j from {S1} x join {S1} y on x.k = y.k")
    assert _rows(got.to_pylist()) == want and len(want) == 18
    sql = ctx.sql(f"with s1 as {S1} select x.k, x.i, x.j, y.i as i2, y.j as j2 "
                  f"from s1 x join s1 y on x.k = y.k")
    assert _rows(sql.to_pylist()) == want


def test_join_with_a_filtered_self_and_cross(ctx):
    s1 = _s1(ctx)
    got = s1.join(s1.filter(col("i") > 2), on="k")
    want = _duck(f"select x.k, x.i, x.j, y.i, y.j from {S1} x join (select * from {S1} "
                 f"where i > 2) y on x.k = y.k")
    assert _rows(got.to_pylist()) == want and want
    cross = s1.join(s1, how="cross")
    assert cross.columns == ["k", "i", "j", "k_right", "i_right", "j_right"]
    assert _rows(cross.to_pylist()) == _duck(f"select * from {S1} x, {S1} y")
    assert cross.count() == 36


@pytest.mark.parametrize("how", ["left", "right", "full"])
def test_outer_self_joins_of_a_self_join(ctx, how):
    s1 = _s1(ctx)
    other = s1.filter(col("i") != 4)
    got = s1.join(other, on="k", how=how)
    key = "x.k" if how == "left" else "y.k" if how == "right" else "coalesce(x.k, y.k)"
    want = _duck(f"select {key}, x.i, x.j, y.i, y.j from {S1} x {how} join "
                 f"(select * from {S1} where i != 4) y on x.k = y.k")
    assert _rows(got.to_pylist()) == want


@pytest.mark.parametrize("how", ["semi", "anti"])
def test_semi_and_anti_self_joins_of_a_self_join(ctx, how):
    s1 = _s1(ctx)
    got = s1.join(s1.filter(col("j") > 3), on="k", how=how)
    assert got.columns == ["k", "i", "j"]
    want = _duck(f"select * from {S1} x {how} join (select * from {S1} where j > 3) y "
                 f"on x.k = y.k")
    assert _rows(got.to_pylist()) == want
    # and the other way round: a plain table semi-joined to its own self-join
    a = ctx.table("A")
    got = a.join(s1, on="k", how=how)
    assert _rows(got.to_pylist()) == _duck(f"select * from A x {how} join {S1} y on x.k = y.k")


def test_three_way_self_joins(ctx):
    a = ctx.table("A")
    aa = a.join(a, on="k")
    got = aa.join(a, on="k", suffix="_3")
    assert got.columns == ["k", "i", "i_right", "i_3"]
    want = _duck("select x.k, x.i, y.i, z.i from A x join A y on x.k = y.k "
                 "join A z on x.k = z.k")
    assert _rows(got.to_pylist()) == want
    # the self-join joined to itself again, and to the table on either side
    s1 = _s1(ctx)
    s2 = s1.join(s1, on="k")
    got = s2.join(s1, on="k", suffix="_3")
    want = _duck(f"select x.k, x.i, x.j, y.i, y.j, z.i, z.j from {S1} x join {S1} y "
                 f"on x.k = y.k join {S1} z on x.k = z.k")
    assert _rows(got.to_pylist()) == want
    assert _rows(s1.join(s2, on="k", suffix="_3").to_pylist()) == _duck(
        f"select x.k, x.i, x.j, y.i, y.j, z.i, z.j from {S1} x join {S1} y on x.k = y.k "
        f"join {S1} z on y.k = z.k")
    assert _rows(a.join(s1, on="k").to_pylist()) == _duck(
        f"select x.k, x.i, y.i, y.j from A x join {S1} y on x.k = y.k")


@pytest.mark.parametrize("name", ["right", "left", "Right", "r"])
def test_a_table_named_right_or_left_self_joins(ctx, name):
    ctx.register_arrow(name, A)
    r = ctx.table(name)
    assert _rows(r.join(r, on="k").to_pylist()) == _duck(
        "select x.k, x.i, y.i from A x join A y on x.k = y.k")
    rr = r.join(r, on="k")
    assert _rows(rr.join(rr, on="k", suffix="_2").to_pylist()) == _duck(
        "with s as (select x.k, x.i, y.i as i2 from A x join A y on x.k = y.k) "
        "select a.k, a.i, a.i2, b.i, b.i2 from s a join s b on a.k = b.k")
    assert r.join(r, how="cross").count() == 25
    assert _rows(r.join(r.filter(col("i") > 3), on="k", how="anti").to_pylist()) == _duck(
        "select * from A x anti join (select * from A where i > 3) y on x.k = y.k")


def test_a_join_after_the_right_suffix_rename(ctx):
    # columns already named like the right side's, filtered and selected in between
    s1 = _s1(ctx)
    s2 = s1.join(s1, on="k").filter(col("j_right") > 1).select("k", "i_right", "j")
    got = s2.join(s2, on="k")
    want = _duck(f"with s2 as (select x.k, y.i as i_right, x.j from {S1} x join {S1} y "
                 f"on x.k = y.k where y.j > 1) select a.k, a.i_right, a.j, b.i_right, b.j "
                 f"from s2 a join s2 b on a.k = b.k")
    assert _rows(got.to_pylist()) == want and want


@pytest.mark.parametrize("sql", [
    "with r as (select * from A r) select r.k, r.i, x.i as i2 from r join (select * from r) x "
    "on r.k = x.k",
    "with r as (select * from A as r) select count(*) from r, (select * from r) x",
    "with r as (select * from A r) select * from r where exists (select * from r x where "
    "x.k = r.k and x.i > r.i)",
])
def test_sql_cte_read_again_under_its_own_name(ctx, sql):
    # a CTE read as `r` and again inside a subquery kept the same column ids (InternalError)
    assert _rows(ctx.sql(sql).to_pylist()) == _duck(sql)


def test_sql_view_read_again_under_its_own_name(ctx):
    ctx.sql("create view v as select * from A v")
    con = duckdb.connect()
    con.register("A", A)
    con.sql("create view v as select * from A v")
    for sql in ["select v.k, v.i, x.i as i2 from v join (select * from v) x on v.k = x.k",
                "select count(*) from v, (select * from v) x"]:
        assert _rows(ctx.sql(sql).to_pylist()) == _rows(con.sql(sql).fetchall())
    con.close()


# ---- 2: to_polars() of INTERVALs inside lists and structs -------------------------------------


def test_to_polars_refuses_nested_intervals_by_name():
    ctx = pqe.Context()
    iv = pa.month_day_nano_interval()
    t = pa.table({
        "li": pa.array([[pa.MonthDayNano([1, 2, 3])]], pa.list_(iv)),
        "si": pa.array([{"i": pa.MonthDayNano([0, 1, 0])}], pa.struct([("i", iv)])),
        "lli": pa.array([[[pa.MonthDayNano([0, 1, 0])]]], pa.large_list(pa.list_(iv))),
        "fi": pa.array([[pa.MonthDayNano([0, 1, 0])] * 2], pa.list_(iv, 2)),
        "mi": pa.array([[("a", pa.MonthDayNano([0, 1, 0]))]], pa.map_(pa.string(), iv)),
        "ok": pa.array([[1]], pa.list_(pa.int64())),
        "st": pa.array([{"a": 1}], pa.struct([("a", pa.int64())])),
    })
    ctx.register_arrow("t", t)
    for c in ["li", "si", "lli", "fi", "mi"]:
        with pytest.raises(pqe.UnsupportedError, match=f"column {c} .*holds an INTERVAL"):
            ctx.sql(f"select ok, {c} from t").to_polars()
    with pytest.raises(pqe.UnsupportedError, match="column x .*holds an INTERVAL"):
        ctx.sql("select [interval '1 day'] as x").to_polars()
    with pytest.raises(pqe.UnsupportedError, match="column x is INTERVAL"):
        ctx.sql("select interval '1 day' as x").to_polars()
    # neighbours without an INTERVAL still convert, as Polars converts them
    got = ctx.sql("select ok, [date '2020-01-01'] as d, st from t").to_polars()
    assert got.to_dicts() == [{"ok": [1], "d": [datetime.date(2020, 1, 1)], "st": {"a": 1}}]


def test_to_polars_turns_a_polars_panic_into_a_pqe_error(monkeypatch):
    """A Rust panic in Polars is pyo3's PanicException, a BaseException that `except
    Exception` does not catch: to_polars() refuses it as a pqe.Error naming the column."""
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"a": [1], "b": ["x"]}))
    real = pl.from_arrow

    def panicking(data, *args, **kwargs):
        if "b" in data.column_names:
            raise pl.exceptions.PanicException("boom")
        return real(data, *args, **kwargs)

    monkeypatch.setattr(pl, "from_arrow", panicking)
    with pytest.raises(pqe.UnsupportedError, match="column b of type string.*PanicException"):
        ctx.table("t").to_polars()
    assert ctx.sql("select a from t").to_polars().to_dicts() == [{"a": 1}]
    # KeyboardInterrupt and the like still pass through
    monkeypatch.setattr(pl, "from_arrow", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        ctx.table("t").to_polars()


# ---- 3: to_dask().to_parquet() of columns pandas holds as objects -----------------------------

NESTED = pa.table({
    "id": pa.array([1, 2, 3, 4], pa.int64()),
    "l": pa.array([[1, None], None, [], [2**62 + 1]], pa.list_(pa.int64())),
    "ls": pa.array([["a"], None, ["b", None], []], pa.list_(pa.string())),
    "ll": pa.array([[[1]], None, [[]], [None]], pa.list_(pa.list_(pa.int64()))),
    "ld": pa.array([[decimal.Decimal("1.10")], None, [], [decimal.Decimal("-2.25")]],
                   pa.list_(pa.decimal128(10, 2))),
    "b": pa.array([b"x", None, b"", b"\x00\xff"]),
    "tm": pa.array([datetime.time(1), None, datetime.time(23, 59, 59, 999999),
                    datetime.time(0)], pa.time64("us")),
    "st": pa.array([{"a": 1, "s": "x"}, None, {"a": None, "s": None}, {"a": 2, "s": "y"}],
                   pa.struct([("a", pa.int64()), ("s", pa.string())])),
    "m": pa.array([[("a", 1)], None, [], [("b", None)]], pa.map_(pa.string(), pa.int64())),
    "s": pa.array(["p", None, "q", "r"]),
    "x": pa.array([1.5, None, 2.0, 3.0]),
})


@pytest.mark.parametrize("partitions", [1, 3])
def test_to_dask_to_parquet_round_trips_nested_blob_and_time(tmp_path, partitions):
    ctx = pqe.Context(partitions=partitions)
    ctx.register_arrow("t", NESTED)
    ddf = ctx.table("t").to_dask()
    for c in ["l", "ls", "ll", "ld", "b", "tm", "st", "m"]:
        assert ddf.dtypes[c] == pd.ArrowDtype(NESTED.schema.field(c).type)
    computed = ddf.compute()
    assert dict(computed.dtypes) == dict(ddf.dtypes)  # every partition agrees with the meta
    ddf.to_parquet(str(tmp_path / "out"))
    back = pq.read_table(tmp_path / "out").sort_by("id")
    for c in NESTED.column_names:  # every value and type as the original Arrow table's
        assert back[c].to_pylist() == NESTED[c].to_pylist(), c
        assert back.schema.field(c).type == NESTED.schema.field(c).type or c in ("s", "m")
    assert back.schema.field("m").type.item_type == pa.int64()
    # values as pyarrow gives them; numbers and text as before
    computed = computed.sort_values("id").reset_index(drop=True)
    assert computed["l"][0] == [1, None] and computed["st"][0] == {"a": 1, "s": "x"}
    assert computed["tm"][2] == datetime.time(23, 59, 59, 999999) and computed["b"][3] == b"\x00\xff"
    assert str(ddf.dtypes["id"]) == "Int64" and ddf.dtypes["x"] == np.float64


def test_to_dask_null_and_empty_results_write(tmp_path):
    ctx = pqe.Context(partitions=2)
    ddf = ctx.sql("select null as n, [1, 2] as l, time '01:02:03' as t").to_dask()
    ddf.to_parquet(str(tmp_path / "a"))
    assert pq.read_table(tmp_path / "a").select(["n", "l", "t"]).to_pylist() == [
        {"n": None, "l": [1, 2], "t": datetime.time(1, 2, 3)}]
    empty = ctx.sql("select [1, 2] as l, 'a'::blob as b where false").to_dask()
    assert len(empty.compute()) == 0
    empty.to_parquet(str(tmp_path / "b"))
    assert pq.read_table(tmp_path / "b").num_rows == 0


def test_to_pandas_keeps_its_object_columns():
    # to_pandas() is unchanged (DuckDB's .df() gives object columns for these too)
    ctx = pqe.Context()
    ctx.register_arrow("t", NESTED)
    out = ctx.table("t").to_pandas()
    for c in ["l", "b", "tm", "st", "m"]:
        assert out[c].dtype == object, c
    con = duckdb.connect()
    con.register("t", NESTED)
    assert all(con.sql("select l, b, tm, st from t").df().dtypes == object)


# ---- 4: NumPy scalars where Python numbers are taken ------------------------------------------

X = pa.table({"x": [1.0, 2.0, 3.0, 4.0], "k": [1, 2, 3, 4], "s": ["ab", "cd", "ef", "gh"]})


@pytest.mark.parametrize("q, interpolation, want", [
    (np.float64(0.5), "linear", 2.5), (np.float32(0.25), "linear", 1.75),
    (np.int64(1), "linear", 4.0), (np.uint8(0), "linear", 1.0),
    (np.float64(0.5), "nearest", 2.0), (np.float16(0.75), "nearest", 3.0),
])
def test_quantile_takes_numpy_scalars(q, interpolation, want):
    ctx = pqe.Context()
    t = ctx.from_arrow(X)
    got = t.select(col("x").quantile(q, interpolation).alias("q")).to_arrow().column(0)
    assert got.to_pylist() == [want]
    # as the same Python number does, and as DuckDB answers
    py = t.select(col("x").quantile(q.item(), interpolation).alias("q")).to_arrow().column(0)
    assert py.to_pylist() == [want]
    fn = "quantile_cont" if interpolation == "linear" else "quantile_disc"
    assert duckdb.sql(f"select {fn}(x, {q.item()}) from X").fetchall() == [(want,)]


@pytest.mark.parametrize("q", [True, np.bool_(True), "0.5", np.array([0.5]), None])
def test_quantile_refuses_what_is_not_a_number(q):
    t = pqe.Context().from_arrow(X)
    with pytest.raises(pqe.Error):
        t.select(col("x").quantile(q)).to_arrow()


def test_quantile_of_numpy_nan_is_refused_as_python_nan_is():
    t = pqe.Context().from_arrow(X)
    for q in (float("nan"), np.float64("nan")):
        with pytest.raises(pqe.Error, match="NaN"):
            t.select(col("x").quantile(q)).to_arrow()


def test_window_frames_take_numpy_integers():
    t = pqe.Context().from_arrow(X)
    want = duckdb.sql("select sum(x) over (order by k rows between 1 preceding and 1 following) "
                      "from X order by k").fetchall()
    for lo, hi in [(np.int64(-1), np.int64(1)), (np.int32(-1), np.uint8(1)), (-1, 1)]:
        got = t.select("k", col("x").sum().over(order_by="k", rows=(lo, hi)).alias("w"))
        assert [(v,) for v in got.sort("k").to_arrow()["w"].to_pylist()] == want
    got = t.select(col("x").sum().over(order_by="k", range=(np.int64(-1), 0)))
    assert got.to_arrow().column(0).to_pylist() == [1.0, 3.0, 5.0, 7.0]
    got = t.select(col("x").sum().over(order_by="x", range=(np.float64(-1.5), np.float32(0))))
    assert got.to_arrow().column(0).to_pylist() == [1.0, 3.0, 5.0, 7.0]
    # bools stay refused, NumPy's as Python's; a float stays refused in ROWS
    for bad in [(np.bool_(False), None), (True, None), (np.float64(-1), 0)]:
        with pytest.raises(pqe.BindError):
            t.select(col("x").sum().over(order_by="k", rows=bad))
    with pytest.raises(pqe.BindError, match="finite"):
        t.select(col("x").sum().over(order_by="x", range=(np.float64("nan"), 0)))


def test_other_number_arguments_take_numpy_scalars():
    ctx = pqe.Context()
    t = ctx.from_arrow(X)
    assert t.select(col("x").cov("k", ddof=np.int64(0))).to_arrow().column(0).to_pylist() == \
        list(duckdb.sql("select covar_pop(x, k) from X").fetchall()[0])
    for bad in (np.bool_(True), True, np.float64(1)):
        with pytest.raises(pqe.BindError, match="ddof"):
            col("x").cov("k", ddof=bad)
    assert t.limit(np.int64(2), np.int64(1)).to_arrow()["k"].to_pylist() == [2, 3]
    assert t.head(np.uint8(1)).count() == 1
    with pytest.raises(pqe.BindError):
        t.limit(np.bool_(True))
    with pytest.raises(pqe.BindError):
        t.limit(True)
    assert t.to_arrow(timeout=np.int64(30)).num_rows == 4
    assert t.to_arrow(timeout=np.float32(30)).num_rows == 4
    with pytest.raises(pqe.Error, match="timeout"):
        t.to_arrow(timeout=np.bool_(True))
    assert t.select(col("s").string_agg(np.str_("-"))).columns == ["string_agg(s, '-')"]
    got = t.select(pqe.ntile(np.int64(2)).over(order_by="k"),
                   pqe.nth_value("x", np.int32(2)).over(order_by="k").alias("n"),
                   pqe.lag("x", np.int64(1), np.float64(0.5)).over(order_by="k").alias("l"))
    assert got.to_pylist() == duckdb.sql(
        "select ntile(2) over (order by k) as ntile, nth_value(x, 2) over (order by k) as n, "
        "lag(x, 1, 0.5) over (order by k) as l from X order by k").to_arrow_table().to_pylist()


def test_context_settings_take_numpy_integers():
    c = pqe.Context(partitions=np.int64(2), threads=np.int32(2), stall_timeout=np.int64(60))
    try:
        assert c.session.config.partitions == 2 and type(c.session.config.partitions) is int
        assert c.sql("select 1 as a").to_pylist() == [{"a": 1}]
    finally:
        c.close()
    for bad in (np.bool_(True), True, np.float64(2), 0):
        with pytest.raises(pqe.Error, match="partitions"):
            pqe.Context(partitions=bad)
