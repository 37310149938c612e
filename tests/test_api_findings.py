"""Findings of the hunt over pqe's Python surfaces (the builder, registration of pandas /
Arrow / Polars data, to_pandas / to_dask / to_polars): each test holds one fixed defect,
answers compared with DuckDB, Polars or pandas where they answer the same question."""

from __future__ import annotations

import decimal

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import pqe
from pqe import col


@pytest.fixture
def gctx():
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", pa.table({"g": [1, 1, 2, 2], "x": [1, 1, 3, 4]}))
    yield ctx
    ctx.close()


def rows(df) -> list[tuple]:
    t = df.to_arrow()
    return [tuple(r.values()) for r in t.to_pylist()]


def duck(sql: str, **tables) -> list[tuple]:
    con = duckdb.connect()
    for name, t in tables.items():
        con.register(name, t)
    return con.sql(sql).fetchall()


# ---- 6: register_pandas / from_pandas copy the frame -----------------------------------


def test_pandas_registration_is_a_copy_not_a_view(ctx):
    """Arrow wraps numpy numbers, datetimes, pandas' Int64 data and a categorical's codes
    without copying: changing the frame afterwards changed what pqe had registered (and the
    tables made from it by CREATE TABLE AS)."""
    pdf = pd.DataFrame({
        "a": np.array([1, 2, 3], dtype=np.int64),
        "f": [1.0, 2.0, 3.0],
        "n": pd.array([1, None, 3], dtype="Int64"),
        "c": pd.Categorical(["x", "y", "x"]),
        "ts": pd.to_datetime(["2020-01-01", "2020-01-02", "2020-01-03"]),
        "s": ["p", "q", "r"],
    })
    query = ("select sum(a) a, sum(f) f, sum(n) n, min(c) c, min(ts) ts, min(s) s, "
             "count(*) k from {}")
    expected = duck(query.format("pdf"), pdf=pdf)
    ctx.register_pandas("p", pdf)
    df = ctx.from_pandas(pdf)
    ctx.sql("create table p2 as select * from p")
    pdf.loc[0, "a"] = 1000
    pdf.loc[0, "f"] = 1000.0
    pdf.loc[0, "n"] = 1000
    pdf.loc[0, "c"] = "y"
    pdf.loc[0, "ts"] = pd.Timestamp("1999-01-01")
    pdf.loc[0, "s"] = "a"
    assert duck(query.format("pdf"), pdf=pdf) != expected  # DuckDB reads the frame live
    assert rows(ctx.sql(query.format("p"))) == expected
    assert rows(ctx.sql(query.format("p2"))) == expected
    ctx.register_dataframe("dfp", df)
    assert rows(ctx.sql(query.format("dfp"))) == expected


# ---- 7, 8, 24, 25: aggregates over group keys, result names ------------------------------


def test_builder_aggregates_may_read_group_keys(gctx):
    """`group_by("g").agg(col("g").sum())` was an InternalError; it is SQL's
    `SELECT g, sum(g) ... GROUP BY g`."""
    t = gctx.table("t").to_arrow()
    built = (gctx.table("t").group_by("g")
             .agg(col("g").sum(), col("g").max(), col("g").count(), col("g").n_unique(),
                  (col("g") + col("x")).sum(), e=col("g") * 10 + col("x").sum(),
                  k=col("g") + 1)
             .sort("g"))
    assert rows(built) == duck("select g, sum(g), max(g), count(g), count(distinct g), "
                               "sum(g + x), g * 10 + sum(x), g + 1 from t group by g order by g",
                               t=t)
    with pytest.raises(pqe.AggregateMisuseError, match="outside an aggregate"):
        gctx.table("t").group_by("g").agg(col("x") + col("x").sum())


def test_n_unique_is_not_named_as_count(gctx):
    """n_unique() was named count(x), like count(): one of the two was hidden by name."""
    r = gctx.table("t").group_by("g").agg(col("x").n_unique(), col("x").count()).sort("g")
    assert r.columns == ["g", "count(DISTINCT x)", "count(x)"]
    assert gctx.sql("select count(distinct x) from t").columns == ["count(DISTINCT x)"]
    assert r.to_arrow().to_pydict() == {"g": [1, 2], "count(DISTINCT x)": [1, 2],
                                        "count(x)": [2, 2]}
    assert rows(r) == duck("select g, count(distinct x), count(x) from t group by g order by g",
                           t=gctx.table("t").to_arrow())


def test_builder_refuses_two_columns_of_one_name(gctx):
    """with_columns, rename, select and agg made two columns of one name silently
    (to_pylist showed one of them); Polars refuses them all."""
    df = gctx.table("t")
    p = pl.DataFrame({"g": [1], "x": [1]})
    with pytest.raises(pl.exceptions.PolarsError, match="duplicate"):
        p.with_columns((pl.col("x") + 1).alias("q"), (pl.col("x") + 2).alias("q"))
    with pytest.raises(pl.exceptions.PolarsError, match="duplicate|more than once"):
        p.rename({"g": "x"})
    with pytest.raises(pqe.BindError, match="two columns named 'q'"):
        df.with_columns((col("x") + 1).alias("q"), (col("x") + 2).alias("q"))
    with pytest.raises(pqe.BindError, match="two columns named 'x'"):
        df.rename({"g": "x"})
    with pytest.raises(pqe.BindError, match="two columns named 'x'"):
        df.select("x", "x")
    with pytest.raises(pqe.BindError, match="two columns named 'g'"):
        df.group_by("g").agg(col("x").sum().alias("g"))
    assert df.rename({"g": "x", "x": "g"}).columns == ["x", "g"]  # a swap is fine
    # expressions of one kind are named by their operands, so they do not clash
    built = df.select(col("x").between(1, 2), col("x").between(3, 4), col("x").is_in([1, 2]))
    assert built.columns == ["x BETWEEN 1 AND 2", "x BETWEEN 3 AND 4", "x IN (1, 2)"]


def test_builder_argument_checks(gctx):
    """is_in("abc") matched 'a', 'b' and 'c'; alias(5) was a raw TypeError; alias("")
    was accepted; a pyarrow array of values was refused."""
    df = gctx.table("t")
    with pytest.raises(pqe.BindError, match="is_in"):
        col("x").is_in("abc")
    with pytest.raises(pqe.BindError, match="alias"):
        col("x").alias(5)
    with pytest.raises(pqe.BindError, match="alias"):
        col("x").alias("")
    assert df.filter(col("x").is_in(pa.array([1, 3]))).count() == 3
    assert df.filter(col("x").is_in(np.array([4]))).count() == 1


# ---- 9: float literals beside REAL -----------------------------------------------------------


def test_float_literal_beside_real_column_is_read_as_sql_reads_it(ctx):
    f4 = pa.table({"f4": pa.array([0.1, 0.5, None], pa.float32())})
    ctx.register_arrow("t", f4)
    p = pl.from_arrow(f4)
    df = ctx.table("t")
    sql = ctx.sql("select count(*) from t where f4 = 0.1").to_pylist()[0]["count(*)"]
    assert sql == 1
    assert df.filter(col("f4") == 0.1).count() == p.filter(pl.col("f4") == 0.1).height == 1
    assert df.filter(col("f4") <= 0.1).count() == p.filter(pl.col("f4") <= 0.1).height == 1
    assert df.filter(0.1 == col("f4")).count() == 1
    assert df.filter(col("f4").is_in([0.1, 0.7])).count() == 1
    assert df.filter(col("f4").between(0.05, 0.1)).count() == 1
    # arithmetic with a Python float is DOUBLE, as SQL computes `f4 * 1e10` (a DOUBLE
    # literal; as a REAL the product overflowed to inf)
    assert df.select(y=col("f4") * 0.1).schema.field("y").type == pa.float64()
    assert ctx.sql("select f4 * 1e10 as y from t").schema.field("y").type == pa.float64()
    # a value past REAL's range still compares in DOUBLE
    assert df.filter(col("f4") < 1e300).count() == 2


# ---- 10: DECIMAL256 ------------------------------------------------------------------------


def test_decimal_beyond_38_digits_is_refused_at_registration(ctx):
    big = pa.table({"d": pa.array([decimal.Decimal("1234567890123456789012345678901234567890"
                                                   "1234.5")], pa.decimal256(50, 1))})
    with pytest.raises(pqe.UnsupportedError, match=r"column 'd'.*DECIMAL\(50,1\)"):
        ctx.register_arrow("big", big)
    with pytest.raises(pqe.UnsupportedError, match="column 'd'"):
        ctx.register_pandas("big", big.to_pandas())
    with pytest.raises(duckdb.Error):  # DuckDB refuses it too
        duckdb.sql("select * from big").fetchall()
    ok = pa.table({"d": pa.array([decimal.Decimal("1.5")], pa.decimal256(30, 1))})
    ctx.register_arrow("ok", ok)
    assert ctx.sql("select d + 1 as d, typeof(d) as t from ok").to_pylist() == [
        {"d": decimal.Decimal("2.5"), "t": "DECIMAL(30,1)"}]


# ---- 11: str.slice ---------------------------------------------------------------------------


@pytest.mark.parametrize("offset,length", [(-2, None), (-3, 2), (-10, 7), (-5, 2), (-6, 2),
                                           (-2, 5)])
def test_str_slice_counts_a_negative_offset_from_the_end(ctx, offset, length):
    values = ["hello", "hi", "", None, "héllo"]
    ctx.register_arrow("t", pa.table({"s": values}))
    got = ctx.table("t").select(x=col("s").str.slice(offset, length)).to_arrow().column("x")
    assert got.to_pylist() == pl.Series(values).str.slice(offset, length).to_list()


def test_str_slice_refuses_a_negative_length():
    with pytest.raises(pl.exceptions.PolarsError):
        pl.select(pl.lit("hello").str.slice(1, -1))
    with pytest.raises(pqe.BindError, match="length"):
        col("s").str.slice(1, -1)


# ---- 12: to_pandas ---------------------------------------------------------------------------


def test_to_pandas_result_is_writable(ctx):
    t = pa.table({"i": [1, 2], "f": [1.0, 2.0], "u": pa.array([1, 2], pa.uint8()),
                  "ts": pa.array([pd.Timestamp("2020-01-01")] * 2, pa.timestamp("us")),
                  "d": pa.array([decimal.Decimal("1.5")] * 2, pa.decimal128(5, 1))})
    ctx.register_arrow("q", t)
    out = ctx.sql("select * from q").to_pandas()
    ref = duckdb.sql("select * from t").df()
    for frame in (out, ref):
        frame.loc[0, "i"] = 5
        frame.loc[0, "f"] = 5.0
        frame.loc[0, "u"] = 7
        frame.loc[0, "ts"] = pd.Timestamp("2021-01-01")
        frame.loc[0, "d"] = 3.0
    assert out.to_dict("list") == ref.to_dict("list")
    assert t.column("i").to_pylist() == [1, 2]  # Arrow's data did not change


# ---- 14, 15: Polars and Arrow types ----------------------------------------------------------


def test_polars_categorical_and_enum_columns(ctx):
    p = pl.DataFrame({"c": pl.Series(["a", "b", None, "a"], dtype=pl.Categorical)})
    ctx.register_arrow("p", p)
    for q in ("select c, count(*) n from p group by c order by c",
              "select count(*) from p where c = 'a'",
              "select upper(c) from p"):
        assert rows(ctx.sql(q)) == duck(q, p=p)
    assert pl.DataFrame(ctx.sql("select * from p")).to_dicts() == p.cast(pl.String).to_dicts()
    sv = pa.array(["a", "b", None, "a"], pa.string_view()).dictionary_encode()
    ctx.register_arrow("d", pa.table({"c": sv}))
    assert rows(ctx.sql("select c, count(*) from d group by c order by c")) == [
        ("a", 2), ("b", 1), (None, 1)]
    # an Enum orders by its categories (y before x here), which text would not: refused, as
    # a pandas ordered categorical is
    e = pl.DataFrame({"e": pl.Series(["x", "y", "x", None], dtype=pl.Enum(["y", "x"]))})
    with pytest.raises(pqe.UnsupportedError, match="ordered categorical"):
        ctx.register_arrow("e", e)


def test_fixed_size_lists_and_nested_views(ctx):
    t = pa.table({"arr": pa.array([[1, 2], [3, 4], None], pa.list_(pa.int64(), 2)),
                  "l": pa.array([["a", "b"], None, ["c"]], pa.list_(pa.string_view()))})
    ctx.register_arrow("t", t)
    q = "select arr[2] as x, list_contains(arr, 3) as y, len(arr) as n, l[1] as f from t"
    assert rows(ctx.sql(q)) == duck(q, t=t)
    p = pl.DataFrame({"arr": pl.Series([[1, 2], [3, 4], None], dtype=pl.Array(pl.Int64, 2)),
                      "l": [["a", "b"], None, ["c"]]})
    ctx.register_arrow("p", p)
    q = "select arr[1] as a, l[1] as f, list_contains(l, 'c') as h from p"
    assert rows(ctx.sql(q)) == duck(q, p=p)


# ---- 16: join arguments ----------------------------------------------------------------------


def test_join_refuses_on_with_left_on_right_on(ctx):
    left = pl.DataFrame({"k": [1, 2], "v": ["a", "b"]})
    right = pl.DataFrame({"k": [1, 2], "x": [2, 1]})
    with pytest.raises(Exception, match="on"):  # Polars: "cannot use 'on' in conjunction ..."
        left.join(right, on="k", left_on="k", right_on="x")
    l, r = ctx.from_arrow(left), ctx.from_arrow(right)
    with pytest.raises(pqe.BindError, match="not both"):
        l.join(r, on="k", left_on="k", right_on="x")


def test_sort_refuses_a_direction_given_twice(gctx):
    with pytest.raises(pqe.BindError, match="direction"):
        gctx.table("t").sort(col("x").asc(), descending=True)


# ---- 18: RANGE frames without ORDER BY -------------------------------------------------------


def test_range_frame_with_offset_needs_order_by(ctx):
    t = pa.table({"g": ["a"] * 3, "o": [1, 2, 3], "v": [1.0, 2.0, 4.0]})
    ctx.register_arrow("t", t)
    q = "select o, sum(v) over (partition by g range between 1 preceding and 1 following) from t"
    with pytest.raises(duckdb.BinderException):
        duck(q, t=t)
    with pytest.raises(pqe.BindError, match="ORDER BY"):
        ctx.sql(q)
    with pytest.raises(pqe.BindError, match="ORDER BY"):
        ctx.table("t").select("o", w=col("v").sum().over(partition_by="g", range=(-1, 1)))
    with pytest.raises(pqe.BindError, match="ORDER BY"):
        ctx.table("t").select("o", w=pqe.first_value("v").over(partition_by="g", range=(-1, 0)))
    # without an offset the frame is the whole partition (every row a peer), as in DuckDB
    q = ("select o, sum(v) over (partition by g range between unbounded preceding and current "
         "row) as w from t order by o")
    assert rows(ctx.sql(q)) == duck(q, t=t)
    built = ctx.table("t").select("o", w=col("v").sum().over(partition_by="g", range=(None, 0)))
    assert rows(built.sort("o")) == duck(q, t=t)


# ---- 20: one-line pqe errors instead of raw exceptions ---------------------------------------


def test_builder_limit_select_sort_arguments(gctx):
    df = gctx.table("t")
    with pytest.raises(pqe.BindError, match="LIMIT must not be negative"):
        gctx.sql("select * from t limit -1")
    with pytest.raises(pqe.BindError, match="must not be negative"):
        df.limit(-1)
    with pytest.raises(pqe.BindError, match="must not be negative"):
        df.limit(2, -1)
    with pytest.raises(pqe.BindError, match="integer"):
        df.limit(1.5)
    with pytest.raises(pqe.BindError, match="at least one"):
        df.select()
    with pytest.raises(pqe.BindError, match="at least one key"):
        df.sort()
    assert df.sort("x").limit(np.int64(2), 1).to_arrow().to_pydict() == {"g": [1, 2], "x": [1, 3]}


def test_registration_of_the_wrong_kind_of_object(ctx):
    with pytest.raises(pqe.CatalogError, match="ChunkedArray"):
        ctx.register_arrow("x", pa.chunked_array([[1, 2]]))
    with pytest.raises(pqe.CatalogError, match="Series"):
        ctx.register_arrow("x", pl.Series([1, 2]))
    pdf = pd.DataFrame({"a": [1, 2]})
    with pytest.raises(pqe.CatalogError, match="register_pandas"):
        ctx.register_dask("x", pdf)
    import dask.dataframe as dd

    with pytest.raises(pqe.CatalogError, match="to_frame"):
        ctx.register_dask("x", dd.from_pandas(pdf, npartitions=1)["a"])


def test_interval_results_through_dask_and_polars(ctx):
    ctx.register_arrow("t", pa.table({"a": [1, 2]}))
    df = ctx.sql("select a, interval 1 day as iv from t")
    # to_dask: the same frame as to_pandas (it failed to tokenize the INTERVAL literal)
    pd.testing.assert_frame_equal(df.to_dask().compute().reset_index(drop=True),
                                  df.to_pandas(), check_dtype=False)
    filtered = ctx.sql("select a from t where a + 0 < 5 and date '2020-01-01' + interval 1 day "
                       "> date '2020-01-01'")
    assert sorted(filtered.to_dask().compute()["a"].tolist()) == [1, 2]
    with pytest.raises(pqe.UnsupportedError, match="iv is INTERVAL"):
        df.to_polars()
    with pytest.raises(pl.exceptions.DuplicateError):
        pl.DataFrame({"a": [1]}).select(pl.col("a"), pl.col("a"))
    with pytest.raises(pqe.BindError, match="two columns named 'a'"):
        ctx.sql("select 1 as a, 2 as a").to_polars()
