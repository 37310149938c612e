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


# ---- TIMESTAMPTZ text constants, mixed IN lists, instants beside naive times ----------------

# A constant's TIMESTAMPTZ text was read by Python's fromisoformat, not the grammar a column's
# text is read by: '2024-01-01 10.5' was 10:00:00.5 (and matched rows in a WHERE), ISO week
# dates and basic-format times were accepted as constants only.
@pytest.mark.parametrize("text", ["2024-01-01 10.5", "20240101T100000Z", "2024-W01-1",
                                  "2024-01-01 10:00:00+01:00:30.5", "20240101",
                                  "2024-01-01T10:00:00,5"])
def test_zoned_text_constant_reads_as_a_column_does(text):
    ctx = pqe.Context()
    assert ctx.sql(f"select try_cast('{text}' as timestamptz) v").to_arrow()["v"][0].as_py() \
        is None
    with pytest.raises(pqe.Error, match="cannot (cast|convert)"):
        ctx.sql(f"select timestamptz '{text}'").to_arrow()
    ctx.register_arrow("t", pa.table({"tz": pa.array([0], pa.timestamp("us", tz="UTC"))}))
    with pytest.raises(pqe.Error, match="cannot (cast|convert)"):
        ctx.sql(f"select count(*) from t where tz = '{text}'").to_arrow()


@pytest.mark.parametrize("text", ["0001-01-01 00:30+01", "9999-12-31 23:30-01",
                                  "2024-01-01 10:00:00.1234567+02:75", "2024-01-01 24:00 UTC",
                                  "2024-01-01 10:00", "2024/1/2 3:4:5.5-0330",
                                  "  2024-01-01T10:00Z  "])
def test_zoned_text_constants_match_duckdb(text):
    sql = f"select cast(timestamptz '{text}' as varchar) v, cast(x as timestamptz) = " \
          f"timestamptz '{text}' same from (values ('{text}')) t(x)"
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    got = [tuple(r.values()) for r in pqe.Context().sql(sql).to_arrow().to_pylist()]
    assert got == con.execute(sql).fetchall()


# `d IN (TIMESTAMP '...', '2021-01-01 07:00:00')` read the text as a DATE for that item alone
# (2021-01-01, equal to d); PostgreSQL gives the tested value and the whole list one type.
@pytest.mark.parametrize("sql", [
    "select d in (timestamp '2000-01-01 00:00:00', '2021-01-01 07:00:00') a, "
    "d not in (timestamp '2000-01-01 00:00:00', '2021-01-01 07:00:00') b from t",
    "select count(*) from t where d in (timestamptz '2000-01-01 00:00:00+00', "
    "'2021-01-01 07:00:00')",
    "select d in ('2021-01-01 07:00:00') a, d in (date '2000-01-01', '2021-01-01') b from t",
    "select i in (1.5, '1') a, f in (1, '1.5') b from t",
])
def test_in_list_text_takes_the_lists_common_type(sql):
    import datetime as dt
    t = pa.table({"d": pa.array([dt.date(2021, 1, 1)], pa.date32()), "i": pa.array([1]),
                  "f": pa.array([1.5])})
    ctx = pqe.Context()
    ctx.register_arrow("t", t)
    con = duckdb.connect()
    con.register("t", t)
    assert [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()] == \
        con.execute(sql).fetchall()


# An instant mixed with a naive TIMESTAMP or a DATE (COALESCE, CASE, GREATEST, UNION) gave a
# naive TIMESTAMP, losing the zone; two instants of microseconds and nanoseconds met in
# microseconds, so 1 ns after 00:00 UTC equalled 00:00 UTC.
def test_instants_mixed_with_naive_times_stay_instants():
    import datetime as dt
    utc = dt.timezone.utc
    ctx = pqe.Context()
    t = pa.table({"tz": pa.array([dt.datetime(2024, 1, 1, 8, tzinfo=utc), None],
                                 pa.timestamp("us", tz="UTC")),
                  "ts": pa.array([dt.datetime(2024, 1, 1, 9)] * 2, pa.timestamp("us")),
                  "d": pa.array([dt.date(2024, 1, 1)] * 2)})
    ctx.register_arrow("t", t)
    got = ctx.sql("select typeof(coalesce(tz, ts)) ty, cast(coalesce(tz, ts) as varchar) v, "
                  "coalesce(tz, d) - timestamptz '2024-01-01 00:00+00' x from t").to_arrow()
    assert got["ty"].to_pylist() == ["TIMESTAMP WITH TIME ZONE"] * 2
    assert got["v"].to_pylist() == ["2024-01-01 08:00:00+00", "2024-01-01 09:00:00+00"]
    assert [v.nanoseconds for v in got["x"].to_pylist()] == [8 * 3600 * 10 ** 9, 0]
    union = ctx.sql("select tz from t union all select ts from t").to_arrow()
    assert union.schema.field(0).type == pa.timestamp("us", tz="UTC")
    ctx.register_arrow("a", pa.table({"tz": pa.array([0], pa.timestamp("us", tz="UTC"))}))
    ctx.register_arrow("z", pa.table({"nz": pa.array([1], pa.timestamp("ns", tz="UTC"))}))
    assert [tuple(r.values()) for r in ctx.sql(
        "select tz = nz, tz < nz, nz in (select tz from a) from a, z").to_arrow().to_pylist()] \
        == [(False, True, False)]
    assert ctx.sql("select count(*) n from a join z on a.tz = z.nz").to_arrow()["n"][0] \
        .as_py() == 0


# ---- LAG/LEAD's default meets the value in their common type ---------------------------------

# The default was cast to the value's type (DuckDB's rule): lag(d, 1, 1.239) of a DECIMAL(5,2)
# was 1.24, lag(k, 1, 2.5) of a BIGINT 3, lag(k, 1, TRUE) 1, lag(i, 1, 3000000000) of an
# INTEGER an overflow error; PostgreSQL's anycompatible resolves a common type, as COALESCE does
# (and pqe's coalesce(lag(k) over ..., 2.5) gave 2.5 beside lag(k, 1, 2.5)'s 3).
def test_lag_default_meets_the_value_in_their_common_type():
    import decimal
    t = pa.table({"k": pa.array([1, 2]), "i": pa.array([1, 2], pa.int32()),
                  "d": pa.array([decimal.Decimal(1), decimal.Decimal(2)], pa.decimal128(5, 2))})
    ctx = pqe.Context()
    ctx.register_arrow("t", t)

    def first(expr):
        return ctx.sql(f"select {expr} over (order by k) v from t order by k").to_arrow()["v"][0] \
            .as_py()

    assert first("lag(d, 1, 1.239)") == decimal.Decimal("1.239")
    assert first("lag(k, 1, 2.5)") == decimal.Decimal("2.5")
    assert first("lag(i, 1, 3000000000)") == 3000000000
    assert first("lead(i, 5, k)") == 1
    with pytest.raises(pqe.Error, match="LAG default of type BOOLEAN"):
        first("lag(k, 1, true)")
