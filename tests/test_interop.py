"""Round trips through every interop path, with NULLs, decimals, dates and strings."""

from __future__ import annotations

import datetime
import decimal

import dask.dataframe as dd
import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import pqe

DATA = pa.table({
    "i": pa.array([1, None, 3], pa.int64()),
    "d": pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("-2.25")], pa.decimal128(10, 2)),
    "day": pa.array([datetime.date(2020, 1, 1), datetime.date(1999, 12, 31), None]),
    "s": pa.array(["a", None, "ü"]),
})


@pytest.fixture
def ictx():
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", DATA)
    yield ctx
    ctx.close()


def test_arrow_roundtrip(ictx):
    out = ictx.sql("select * from t").to_arrow()
    assert out.equals(DATA)
    assert pa.table(ictx.table("t")).equals(DATA)  # __arrow_c_stream__


def test_record_batch_reader_and_stream_objects(ictx):
    ictx.register_arrow("r", pa.RecordBatchReader.from_batches(DATA.schema, DATA.to_batches()))
    assert ictx.table("r").to_arrow().equals(DATA)
    ictx.register_arrow("p", pl.from_arrow(DATA))  # any __arrow_c_stream__ object
    got = ictx.table("p").to_arrow()
    assert got.column("s").to_pylist() == ["a", None, "ü"]
    assert got.column("d").to_pylist() == DATA.column("d").to_pylist()


def test_string_view_and_large_string_inputs_are_normalized(ictx):
    t = pa.table({"sv": pa.array(["x", None], pa.string_view()), "ls": pa.array(["y", "z"], pa.large_string())})
    ictx.register_arrow("views", t)
    out = ictx.sql("select sv, ls from views where ls = 'z'").to_arrow()
    assert out.to_pylist() == [{"sv": None, "ls": "z"}]
    assert t.schema.field("sv").type == pa.string_view()  # the user's table is untouched


def test_pandas_roundtrip(ictx):
    pdf = DATA.to_pandas()
    ictx.register_pandas("pd", pdf)
    back = ictx.sql("select * from pd").to_pandas()
    assert back["s"].tolist()[0] == "a" and pd.isna(back["s"].tolist()[1])
    assert back["d"].tolist()[2] == decimal.Decimal("-2.25")


def test_polars(ictx):
    out = ictx.sql("select i, s from t where i is not null").to_polars()
    assert isinstance(out, pl.DataFrame)
    assert out.to_dicts() == [{"i": 1, "s": "a"}, {"i": 3, "s": "ü"}]
    assert pl.DataFrame(ictx.table("t")).shape == (3, 4)


def test_duckdb_reads_pqe_results(ictx):
    df = ictx.sql("select * from t")
    assert duckdb.sql("select count(*), sum(d) from df").fetchall() == [(3, decimal.Decimal("-0.75"))]


def test_dask_in_and_out(ictx):
    pdf = pd.DataFrame({"k": [1, 2, 3, 4, 5, 6], "v": ["a", "b", None, "d", "e", "f"]})
    ictx.register_dask("dk", dd.from_pandas(pdf, npartitions=3))
    assert ictx.sql("select count(*) as n, count(v) as nv from dk").to_pylist() == [{"n": 6, "nv": 5}]
    out = ictx.sql("select k, v from dk where k > 2").to_dask()
    assert isinstance(out, dd.DataFrame)
    assert out.npartitions >= 1
    got = out.compute().sort_values("k")
    assert got["k"].tolist() == [3, 4, 5, 6]
    assert got["v"].isna().tolist() == [True, False, False, False]


def test_repr_html(ictx):
    html = ictx.table("t")._repr_html_()
    assert "<table>" in html and "decimal128(10, 2)" in html and "<p>3 rows</p>" in html
    assert "NULL" in html and "None" not in html and "nan" not in html
