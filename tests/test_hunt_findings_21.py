"""Findings of the twenty-fourth session, each a test that failed before its fix."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pqe

duckdb = pytest.importorskip("duckdb")

M = pa.MonthDayNano
IV = pa.month_day_nano_interval()


# ---- registered INTERVALs nested in lists, structs, maps and dictionaries ------------------

# A top-level INTERVAL column was cut to whole microseconds at registration, as DuckDB reads
# Arrow intervals; one nested in a list or struct kept its nanoseconds, so `l[1]` printed
# 00:00:00 yet was not equal to INTERVAL '0 seconds', and count(distinct) saw four values
# where it prints one.
def _nested_table():
    iv = pa.array([M([0, 0, 1]), M([1, 2, 3_000_500]), None, M([0, 0, -999])], IV)
    return pa.table({
        "l": pa.array([[M([0, 0, 1])], None, [M([1, 2, 3_000_500]), None], [M([0, 0, 999])]],
                      pa.list_(IV)),
        "s": pa.StructArray.from_arrays([iv], ["x"]),
        "m": pa.array([[("a", M([0, 0, 1]))], None, [("a", M([0, 0, 5000]))], []],
                      pa.map_(pa.string(), IV)),
        "d": pa.array([M([0, 0, 999]), M([0, 0, 1]), None, M([0, 0, 2])], IV)
               .dictionary_encode(),
    })


@pytest.mark.parametrize("offset", [0, 1])
def test_nested_intervals_are_whole_microseconds(offset):
    t = _nested_table().slice(offset)  # (a slice: offsets and NULL masks of a slice)
    ctx = pqe.Context()
    ctx.register_arrow("t", t)
    sql = ("select l[1] = interval '0 seconds' a, s.x = interval '0 seconds' b, "
           "cast(l[1] as varchar) c, d = interval '0 seconds' e, cast(s.x as varchar) f "
           "from t")
    got = [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()]
    con = duckdb.connect()
    con.register("t", t)
    want = con.execute(sql).fetchall()
    assert got == want
    assert ctx.sql("select count(distinct l[1]) n from t").to_arrow()["n"][0].as_py() == \
        con.execute("select count(distinct l[1]) from t").fetchall()[0][0]
    # the map's values are cut too, and the user's table is not altered
    m = ctx.sql("select m from t").to_arrow()["m"].to_pylist()
    assert all(v.nanoseconds % 1000 == 0 for row in m if row for _, v in row)
    assert _nested_table().slice(offset).equals(t)


# ---- TRY_CAST text to TIMESTAMPTZ past the range -------------------------------------------

# An offset that moves the time past TIMESTAMP's range (year 294247 / -290308) failed the
# whole TRY_CAST with an error instead of NULL for that row; CAST still fails naming the text.
def test_try_cast_timestamptz_out_of_range_is_null():
    ctx = pqe.Context()
    got = ctx.sql(
        "select x, try_cast(x as timestamptz) v from (values "
        "('294247-01-10 04:00:54.775806-05'), ('-290308-12-21 19:59:05.224192+05'), "
        "('2020-01-01 10:00+02'), (null)) t(x) order by x nulls last").to_arrow().to_pylist()
    assert [r["v"] is None for r in got] == [True, False, True, True]
    assert got[1]["v"].isoformat() == "2020-01-01T08:00:00+00:00"
    with pytest.raises(pqe.Error, match="294247-01-10 04:00:54.775806-05"):
        ctx.sql("select cast('294247-01-10 04:00:54.775806-05' as timestamptz)").to_arrow()
    # times near the end of the range still convert, the offset applied
    sql = "select cast(x as timestamptz) v from (values ('294247-01-01 00:00:00-05')) t(x)"
    assert ctx.sql(sql).to_arrow()["v"][0].value == 9223371244800000000 + 5 * 3600 * 10 ** 6
