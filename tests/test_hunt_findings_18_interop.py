"""Findings of the eighteenth session's hunt of the DataFrame API and its interop: values
changed on the way in or out of pqe without an error, and crashes where SQL refuses cleanly.
Each test fails without its fix."""

from __future__ import annotations

import decimal
import uuid

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import pqe
from pqe import col

pd = pytest.importorskip("pandas")
D = decimal.Decimal


def test_decimals_become_the_nearest_double_in_pandas_and_dask():
    """Arrow's cast scales by an inexact power of ten: 1.100000 as DECIMAL(12,6) became
    1.0999999999999999 in to_pandas() and to_dask(), where DuckDB's .df(), float(Decimal)
    and pqe's own CAST AS DOUBLE give 1.1."""
    rng = np.random.default_rng(3)
    texts = ["1.100000", "1855.400000", "0.777197", "-0.000001", "999999.999999"] + [
        f"{v / 10**6:.6f}" for v in rng.integers(-10**12, 10**12, 2000)]
    for dtype in (pa.decimal128(12, 6), pa.decimal128(38, 6)):  # the int64 and text paths
        t = pa.table({"c": pa.array([D(x) for x in texts] + [None], dtype)})
        ctx = pqe.Context(partitions=2)
        ctx.register_arrow("t", t)
        want = [float(D(x)) for x in texts]
        got = ctx.table("t").to_pandas()["c"].tolist()
        assert got[:-1] == want and np.isnan(got[-1])
        assert ctx.table("t").to_dask().compute()["c"].tolist()[:-1] == want
        con = duckdb.connect()
        con.register("t", t)
        assert con.sql("SELECT c FROM t").df()["c"].tolist()[:-1] == want


def test_nanosecond_constants_in_the_builder_are_refused_not_cut():
    """pd.Timestamp(1, unit='ns') was cut to 0 ns: `c == v` found the row at 0 ns and `c > v`
    kept the row at 1 ns. A constant holds microseconds; one with nanoseconds is refused, as
    SQL text naming them is; one without them compares as before."""
    t = pa.table({"c": pa.array([0, 1, 999, 1000], pa.timestamp("ns")), "id": [0, 1, 999, 1000]})
    ctx = pqe.Context()
    ctx.register_arrow("t", t)
    table = ctx.table("t")
    for v in (pd.Timestamp(1, unit="ns"), np.datetime64(1, "ns"), pd.Timedelta(1, unit="ns")):
        with pytest.raises(pqe.UnsupportedError, match="below the microsecond"):
            table.filter(col("c") == v).to_arrow()
    with pytest.raises(pqe.UnsupportedError, match="below the microsecond"):
        table.filter(col("c").is_in([np.datetime64(1, "ns")])).to_arrow()
    whole = pd.Timestamp(1000, unit="ns")  # 1 us exactly
    assert table.filter(col("c") == whole).select("id").to_pylist() == [{"id": 1000}]
    assert table.filter(col("c") > np.datetime64(1000, "ns")).to_arrow().num_rows == 0
    with pytest.raises(pqe.UnsupportedError, match="below the microsecond"):
        ctx.sql("SELECT ? AS v", [np.datetime64("2020-01-01T00:00:00.000000001")]).to_arrow()


def _uuids(n):
    return pa.ExtensionArray.from_storage(
        pa.uuid(), pa.array([uuid.UUID(int=i * 123456789 + 7).bytes for i in range(n)],
                            pa.binary(16)))


def _plain(v):
    """Python values of either engine in one form: a UUID as its text, an INTERVAL
    (MonthDayNano) or a timedelta as nanoseconds, a map (DuckDB: a dict keyed by UUIDs;
    pqe: (key, value) pairs) as its pairs."""
    import datetime

    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, datetime.timedelta):
        return round(v.total_seconds() * 10**9)
    if type(v).__name__ == "MonthDayNano":
        assert v.months == 0 and v.days == 0
        return v.nanoseconds
    if isinstance(v, dict) and (not v or all(isinstance(k, uuid.UUID) for k in v)):
        return [(_plain(k), _plain(x)) for k, x in v.items()]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    return v


def test_nested_uuids_and_durations_convert_as_top_level_ones_do():
    """A UUID in a list, struct, map or dictionary was its 16 raw bytes read as text (or an
    'Invalid UTF8' refusal), and a DURATION there was refused by Arrow's cast; DuckDB reads
    both. Checked against DuckDB on sliced, chunked data with NULL structs and lists."""
    uu = _uuids(6)
    dur = pa.array([1, 2, None, 4, 5, 6], pa.duration("ms"))
    st = pa.StructArray.from_arrays([uu, dur], names=["u", "d"],
                                    mask=pa.array([False, True] + [False] * 4))
    lst = pa.ListArray.from_arrays(pa.array([0, 2, 2, 3, 6, 6, 6]), st,
                                   mask=pa.array([False, False, True, False, False, False]))
    mp = pa.MapArray.from_arrays(pa.array([0, 1, 3, 3, 4, 6, 6]), uu, dur)
    dic = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, None, 1, 0], pa.int32()),
                                         pa.array([7, 9], pa.duration("s")))
    t = pa.table({"i": range(6), "st": st, "l": lst, "m": mp, "dd": dic}).slice(1, 5)
    t = pa.concat_tables([t, t.slice(2)])
    ctx = pqe.Context()
    ctx.register_arrow("t", t)
    sql = "SELECT i, st, l, m, dd FROM t ORDER BY i, l[1].d NULLS FIRST"
    got = [tuple(r.values()) for r in ctx.sql(sql).to_pylist()]
    con = duckdb.connect()
    con.register("t", t)
    want = con.sql(sql).fetchall()
    assert len(got) == len(want) == 8
    assert [_plain(r) for r in got] == [_plain(r) for r in want]
    # a pandas categorical of timedeltas is a dictionary of durations
    cat = pd.DataFrame({"c": pd.Series(pd.to_timedelta([1, 2, 1], unit="s"), dtype="category")})
    ctx.register_pandas("cat", cat)
    assert ctx.sql("SELECT count(*) AS n FROM cat WHERE c = INTERVAL '1' SECOND"
                   ).to_pylist() == [{"n": 2}]


def test_lists_and_maps_of_integers_with_nulls_stay_exact_in_pandas():
    """to_pandas() of [2^62 + 1, NULL] gave float64 [4.611686018427388e+18, nan]: the value
    rounded. Now Python ints and None; lists without a NULL integer are as before."""
    big = 2**62 + 1
    t = pa.table({"l": pa.array([[big, None], [1, 2], None]),
                  "m": pa.array([[("a", big), ("b", None)]] * 3, pa.map_(pa.string(), pa.int64())),
                  "s": pa.array([{"x": big, "y": [None, big]}] * 3),
                  "k": pa.array([[1, 2], [3], []])})
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", t)
    for out in (ctx.table("t").to_pandas(), ctx.table("t").to_dask().compute()):
        out = out.reset_index(drop=True)
        assert list(out["l"][0]) == [big, None] and list(out["l"][1]) == [1, 2]
        assert out["m"][0] == [("a", big), ("b", None)]
        assert list(out["s"][0]["y"]) == [None, big]
        if isinstance(out["k"].dtype, pd.ArrowDtype):  # to_dask(): pyarrow-backed lists
            assert out["k"][0] == [1, 2]
        else:
            assert out["k"][0].dtype == np.int64  # no NULL: numpy integers as before


def test_ctx_table_refuses_unqueryable_tables_as_sql_does():
    """ctx.table() of a table with a repeated column name or none crashed (InternalError in
    the scan or in push_down_projection), and `SELECT * FROM empty ORDER BY 1` failed inside
    sqlglot; SQL refuses both by name."""
    ctx = pqe.Context()
    ctx.register_arrow("dup", pa.Table.from_arrays([pa.array([1]), pa.array([2])],
                                                   names=["a", "a"]))
    ctx.register_arrow("empty", pa.table({}))
    ctx.register_arrow("ok", pa.table({"x": [1]}))
    for run in (lambda: ctx.table("dup").to_arrow(), lambda: ctx.table("dup").count()):
        with pytest.raises(pqe.UnsupportedError, match="more than one column named 'a'"):
            run()
    for run in (lambda: ctx.table("empty").to_arrow(), lambda: len(ctx.table("empty")),
                lambda: ctx.sql("SELECT * FROM empty ORDER BY 1 LIMIT 3").to_arrow()):
        with pytest.raises(pqe.UnsupportedError, match="has no columns"):
            run()
    # the other tables stay queryable beside them
    assert ctx.sql("SELECT * FROM ok ORDER BY 1").to_pylist() == [{"x": 1}]
    assert ctx.table("ok").to_pylist() == [{"x": 1}]


def test_to_polars_names_a_column_polars_cannot_hold():
    """A fixed-offset zone raised polars' ComputeError, no pqe.Error."""
    pytest.importorskip("polars")
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"id": [1], "ts": pa.array([0], pa.timestamp("us", "+05:45"))}))
    with pytest.raises(pqe.UnsupportedError, match=r"column ts of type timestamp\[us, tz=\+05:45\]"):
        ctx.table("t").to_polars()
    assert ctx.table("t").select("id").to_polars()["id"].to_list() == [1]


def test_an_unquoted_name_of_columns_that_differ_only_by_case_is_ambiguous():
    """`ab` against columns "Ab" and "aB" said "column 'ab' does not exist (did you mean
    'aB'?)": it names both, neither more than the other. A quoted name stays exact."""
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"Ab": [1], "aB": [2], "x": [3]}))
    for sql in ("SELECT ab FROM t", "SELECT AB FROM t", "SELECT t.ab FROM t",
                "SELECT x FROM t WHERE aB > 0"):
        with pytest.raises(pqe.AmbiguousColumnError, match='"Ab", "aB" differ only by case'):
            ctx.sql(sql).to_arrow()
    with pytest.raises(pqe.UnknownColumnError, match="does not exist"):
        ctx.sql('SELECT "ab" FROM t').to_arrow()
    assert ctx.sql('SELECT "aB", t."Ab" FROM t').to_pylist() == [{"aB": 2, "Ab": 1}]
    ctx.register_arrow("u", pa.table({"Ab": [1]}))
    assert ctx.sql("SELECT ab FROM u").to_pylist() == [{"Ab": 1}]
