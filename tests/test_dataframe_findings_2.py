"""DataFrame builder findings (second review): names with dots, group keys under another
name, join suffixes, sort options, constants where columns were meant, misplaced windows,
from_arrow/from_pandas checks, argument types."""

import threading

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import pqe
from pqe import col


@pytest.fixture(scope="module")
def ctx():
    c = pqe.Context()
    yield c
    c.close()


# ---- 1: a column named "a.b" ----------------------------------------------------------------


def test_dotted_column_name_keeps_its_name(ctx):
    t = pa.table({"a.b": [100, None], "b": [5, 6]})
    d = ctx.from_arrow(t)
    got = d.with_columns(col("a.b").fill_null(0)).to_arrow().to_pydict()
    want = pl.from_arrow(t).with_columns(pl.col("a.b").fill_null(0)).to_dict(as_series=False)
    assert got == want == {"a.b": [100, 0], "b": [5, 6]}
    assert d.select("a.b").columns == ["a.b"]
    assert d.select(col("a.b").cast("double")).columns == ["a.b"]
    assert d.group_by("a.b").agg(col("b").sum()).columns == ["a.b", "sum(b)"]
    assert d.select(col("a.b").sum()).columns == ["sum(a.b)"]


def test_qualified_column_still_named_by_its_column(ctx):
    ctx.register_arrow("dotq", pa.table({"x": [1, 2]}))
    d = ctx.table("dotq")
    assert d.select("dotq.x").columns == ["x"]
    assert d.with_columns(col("dotq.x").fill_null(0)).columns == ["x"]


# ---- 2: a group key again under another name ----------------------------------------------


def test_group_key_under_an_alias_is_kept(ctx):
    t = pa.table({"g": ["a", "b", "a"], "x": [1, 2, 3]})
    got = ctx.from_arrow(t).group_by("g").agg(col("g").alias("h"), n=pqe.count()).sort("g")
    want = duckdb.sql("select g, g as h, count(*) as n from t group by g order by g")
    assert got.columns == want.columns == ["g", "h", "n"]
    assert [tuple(r.values()) for r in got.to_pylist()] == want.fetchall()
    # the key under its own name is output once, as before
    assert ctx.from_arrow(t).group_by("g").agg(col("g"), pqe.count()).columns == ["g", "count"]


# ---- 3: join suffixes ---------------------------------------------------------------------


def test_join_suffix_never_takes_another_columns_name(ctx):
    L = pa.table({"k": [1, 2], "v": [1, 2]})
    R = pa.table({"k": [1, 2], "v": [10, 20], "v_right": [7, 8]})
    with pytest.raises(pl.exceptions.DuplicateError):
        pl.from_arrow(L).join(pl.from_arrow(R), on="k")
    with pytest.raises(pqe.BindError, match="'v_right'"):
        ctx.from_arrow(L).join(ctx.from_arrow(R), on="k")
    out = ctx.from_arrow(L).join(ctx.from_arrow(R), on="k", suffix="_r")
    assert out.columns == ["k", "v", "v_r", "v_right"]


@pytest.mark.parametrize("suffix", ["", None, 1])
def test_join_suffix_must_be_a_nonempty_string(ctx, suffix):
    d = ctx.from_arrow(pa.table({"k": [1], "v": [2]}))
    with pytest.raises(pqe.BindError, match="suffix"):
        d.join(d, on="k", suffix=suffix)


def test_semi_and_anti_join_refuse_a_suffix(ctx):
    d = ctx.from_arrow(pa.table({"k": [1], "v": [2]}))
    for how in ("semi", "anti"):
        with pytest.raises(pqe.BindError, match="suffix"):
            d.join(d, on="k", how=how, suffix="_x")
        assert d.join(d, on="k", how=how).columns == ["k", "v"]


# ---- 4: sort options ----------------------------------------------------------------------


SORT_T = pa.table({"a": [1, 1, 2], "b": ["x", "y", "z"], "n": [None, 1, 2]})


@pytest.mark.parametrize("descending", [(True, False), [True, False], np.array([True, False])])
def test_sort_descending_per_key(ctx, descending):
    got = ctx.from_arrow(SORT_T).sort("a", "b", descending=descending).to_arrow().to_pydict()
    want = pl.from_arrow(SORT_T).sort("a", "b", descending=[True, False])
    assert got == want.to_dict(as_series=False)


@pytest.mark.parametrize("nulls_last", [[False, True], (False, True)])
def test_sort_nulls_last_per_key(ctx, nulls_last):
    got = ctx.from_arrow(SORT_T).sort("n", "b", descending=True, nulls_last=nulls_last)
    want = pl.from_arrow(SORT_T).sort("n", "b", descending=True, nulls_last=[False, True])
    assert got.to_arrow().to_pydict() == want.to_dict(as_series=False)
    got = ctx.from_arrow(SORT_T).sort("n", "b", nulls_last=[False, True])
    assert got.to_arrow()["n"].to_pylist() == [None, 1, 2]


def test_sort_options_of_the_wrong_length_or_type(ctx):
    d = ctx.from_arrow(SORT_T)
    with pytest.raises(pqe.BindError, match="descending"):
        d.sort("a", "b", descending=[True])
    with pytest.raises(pqe.BindError, match="nulls_last"):
        d.sort("a", "b", nulls_last=(True, False, True))
    with pytest.raises(pqe.BindError, match="descending"):
        d.sort("a", descending="yes")


def test_sort_key_nulls_last_conflict_is_refused_like_descending(ctx):
    d = ctx.from_arrow(SORT_T)
    with pytest.raises(pqe.BindError, match="nulls_last"):
        d.sort(col("n").desc(nulls_last=True), nulls_last=False)
    with pytest.raises(pqe.BindError, match="descending"):
        d.sort(col("n").asc(), descending=True)
    # the same value given twice is no conflict
    got = d.sort(col("n").desc(nulls_last=True), nulls_last=True).to_arrow()["n"].to_pylist()
    assert got == [2, 1, None]


# ---- 5: empty join keys -------------------------------------------------------------------


def test_empty_join_keys_are_refused(ctx):
    a = ctx.from_arrow(pa.table({"k": [1, 2], "v": ["a", "b"]}))
    b = ctx.from_arrow(pa.table({"k": [1, 3], "w": ["x", "y"]}))
    for kwargs in ({"on": []}, {"left_on": [], "right_on": []}):
        for how in ("inner", "left", "semi", "anti"):
            with pytest.raises(pqe.BindError, match="empty"):
                a.join(b, how=how, **kwargs)


# ---- 6: bare Python values where a column was meant ---------------------------------------


def test_bare_constants_are_refused_where_columns_are_meant(ctx):
    d = ctx.from_arrow(pa.table({"0": [3, 1], "1": [1, 2]}))
    for f in (lambda: d.select(0), lambda: d.sort(2), lambda: d.group_by(0),
              lambda: d.sort("0", 1.5), lambda: d.group_by(True)):
        with pytest.raises(pqe.BindError, match="pqe.lit"):
            f()
    assert d.select(pqe.lit(0).alias("z")).to_arrow().to_pydict() == {"z": [0, 0]}
    assert d.sort("0").to_arrow()["0"].to_pylist() == [1, 3]


# ---- 7: from_arrow / from_pandas checks ---------------------------------------------------


def test_from_arrow_refuses_repeated_names_and_no_columns(ctx):
    dup = pa.table([pa.array([1]), pa.array([2])], names=["a", "a"])
    with pytest.raises(pqe.UnsupportedError, match="more than one column named 'a'"):
        ctx.from_arrow(dup)
    with pytest.raises(pqe.UnsupportedError, match="no columns"):
        ctx.from_arrow(pa.table({}))
    with pytest.raises(pqe.UnsupportedError, match="no columns"):
        ctx.from_pandas(pd.DataFrame())


# ---- 8: misplaced windows and aggregates --------------------------------------------------


def test_misplaced_windows_and_aggregates_are_bind_errors(ctx):
    d = ctx.from_arrow(pa.table({"x": [3, 1, 2]}))
    cases = [
        lambda: d.sort(pqe.row_number().over(order_by="x")),
        lambda: d.sort(col("x").sum()),
        lambda: d.sort(col("x").sum().desc()),
        lambda: d.with_columns(r=col("x").sum().over(order_by="x").max().over()),
        lambda: d.with_columns(r=col("x").sum().over(
            partition_by=pqe.row_number().over(order_by="x"))),
        lambda: d.with_columns(r=col("x").sum().over(order_by=pqe.rank().over(order_by="x"))),
        lambda: d.with_columns(r=pqe.lag(pqe.rank().over(order_by="x")).over(order_by="x")),
    ]
    for f in cases:
        with pytest.raises(pqe.BindError):
            f().to_arrow()


# ---- 9: argument types --------------------------------------------------------------------


def test_argument_types(ctx, tmp_path):
    d = ctx.from_arrow(pa.table({"k": [1, 2], "a": [1, 2], "b": [3, 4]}))
    assert d.drop(["a", "b"]).columns == ["k"]
    assert d.drop("a").columns == ["k", "b"]
    bad = [
        lambda: d.rename({1: "y"}),
        lambda: d.union(pa.table({"k": [1], "a": [1], "b": [1]})),
        lambda: d.join(pa.table({"k": [1]}), on="k"),
        lambda: d.join(d, on=col("k")),
        lambda: d.show(2.5),
        lambda: d.union(d, distinct="no"),
        lambda: d.write_csv(str(tmp_path / "out"), header="no"),
        lambda: d.to_arrow(cancel=True),
        lambda: d.drop([1]),
    ]
    for f in bad:
        with pytest.raises(pqe.BindError):
            f()
    assert d.to_arrow(cancel=threading.Event()).num_rows == 2
    assert d.union(d, distinct=True).count() == 2


# ---- 10: ordered dictionaries -------------------------------------------------------------


def test_ordered_dictionaries_are_refused_like_ordered_categoricals(ctx):
    enum = pl.DataFrame({"e": pl.Series(["b", "a"], dtype=pl.Enum(["b", "a"]))})
    with pytest.raises(pqe.UnsupportedError, match="'e'.*ordered categorical"):
        ctx.from_arrow(enum)
    ordered = pa.table({"o": pa.DictionaryArray.from_arrays(
        pa.array([0, 1], pa.int8()), pa.array(["z", "a"]), ordered=True)})
    with pytest.raises(pqe.UnsupportedError, match="'o'.*ordered categorical"):
        ctx.register_arrow("ordered_dict", ordered)
    # an unordered dictionary (a Polars Categorical) is still text
    cat = pl.DataFrame({"c": pl.Series(["b", "a"], dtype=pl.Categorical)})
    assert ctx.from_arrow(cat).sort("c").to_arrow()["c"].to_pylist() == ["a", "b"]
