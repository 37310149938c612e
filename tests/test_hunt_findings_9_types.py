"""Findings of the eleventh session's type hunt: TRY_CAST of a BLOB to text, casts of times
and durations to numbers, decimal sums regrouped by Acero, dictionaries holding a NULL, the
DataFrame API's non-finite Decimal constants and the rounding of AVG over decimals. Each is
checked against DuckDB where it answers, else against exact values (PostgreSQL's where the
two differ)."""

from __future__ import annotations

import datetime
import decimal
import random
from fractions import Fraction

import duckdb
import pyarrow as pa
import pytest

import pqe
from pqe import col


def _both(table: pa.Table, name: str = "t"):
    ctx = pqe.Context()
    ctx.register_arrow(name, table)
    con = duckdb.connect()
    con.register(name, table)
    return ctx, con


def _rows(ctx, sql):
    return [tuple(r.values()) for r in ctx.sql(sql).to_pylist()]


# ---- 1. TRY_CAST(BLOB AS VARCHAR) made strings that were not UTF-8 -----------------------------


def _utf8(b: bytes) -> str | None:
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return None


@pytest.mark.parametrize("typ", [pa.binary(), pa.large_binary(), pa.binary_view()])
def test_try_cast_blob_to_text_is_null_where_not_utf8(typ):
    """The unchecked cast kept the bytes: the column failed validate(full=True), length()
    counted bytes and to_pandas raised. Plain CAST already refused them."""
    values = [b"\xff\xfe", b"abc", b"", None, b"\x00a", "é€😀".encode(), b"\xed\xa0\x80",
              b"\xc0\x80", b"\xf4\x90\x80\x80", b"ok\xe2\x82"]
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"b": pa.array(values, typ)}))
    out = ctx.sql("SELECT TRY_CAST(b AS VARCHAR) AS s, length(TRY_CAST(b AS VARCHAR)) AS n "
                  "FROM t").to_arrow()
    out.validate(full=True)
    want = [None if v is None else _utf8(v) for v in values]
    assert out.column("s").to_pylist() == want
    assert out.column("n").to_pylist() == [None if w is None else len(w) for w in want]
    assert out.to_pandas()["s"].tolist()[1] == "abc"
    with pytest.raises(pqe.Error, match="is not UTF-8 text"):
        ctx.sql("SELECT CAST(b AS VARCHAR) FROM t").to_arrow()


def test_try_cast_blob_to_text_agrees_with_python_on_random_bytes():
    """The vectorized UTF-8 check (RFC 3629: no overlong forms, surrogates or code points past
    U+10FFFF) agrees with Python's decoder byte string by byte string."""
    rng = random.Random(9)
    alphabet = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
    values = [bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 5)))
              for _ in range(20_000)]
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"b": pa.array(values, pa.binary())}))
    out = ctx.sql("SELECT TRY_CAST(b AS VARCHAR) AS s FROM t").to_arrow()
    out.validate(full=True)
    got = out.column("s").to_pylist()
    assert got == [_utf8(v) for v in values]
    assert sum(g is not None for g in got) > 1_000  # both outcomes are exercised


@pytest.mark.parametrize("sql", [
    "SELECT CAST(b AS INTEGER) FROM t", "SELECT TRY_CAST(b AS BIGINT) FROM t",
    "SELECT CAST(b AS DOUBLE) FROM t", "SELECT TRY_CAST(b AS DECIMAL(5,2)) FROM t",
    "SELECT CAST(b AS DATE) FROM t", "SELECT CAST(i AS BLOB) FROM t"])
def test_blob_converts_only_to_and_from_text(sql):
    """A BLOB's bytes were read as text to parse a number ('12' became 12; an invalid UTF-8
    one failed with Arrow's raw parse error inside TRY_CAST); DuckDB refuses these casts."""
    ctx, con = _both(pa.table({"b": pa.array([b"12"], pa.binary()), "i": [5]}))
    if "TRY_CAST" not in sql:  # (DuckDB's TRY_CAST gives NULL; pqe refuses both, as for DATE)
        with pytest.raises(duckdb.ConversionException):
            con.sql(sql).fetchall()
    with pytest.raises(pqe.TypeMismatchError, match=r"cannot cast .* at line 1, column 8"):
        ctx.sql(sql).to_arrow()
    with pytest.raises(pqe.TypeMismatchError, match="cannot cast BLOB to INTEGER"):
        ctx.table("t").select(x=col("b").cast("integer")).to_arrow()


# ---- 2. CAST of a TIME or an INTERVAL to a number answered storage ticks -----------------------


_TIMES = pa.table({
    "t_us": pa.array([datetime.time(1, 2, 3)], pa.time64("us")),
    "t_ns": pa.array([datetime.time(1, 2, 3)], pa.time64("ns")),
    "t_s": pa.array([datetime.time(1, 2, 3)], pa.time32("s")),
    "d_s": pa.array([datetime.timedelta(seconds=5)], pa.duration("s")),
    "d_ms": pa.array([datetime.timedelta(seconds=5)], pa.duration("ms")),
})


@pytest.mark.parametrize("column", ["t_us", "t_ns", "t_s", "d_s", "d_ms"])
@pytest.mark.parametrize("to", ["BIGINT", "INTEGER", "DOUBLE", "DECIMAL(18,3)", "BOOLEAN"])
@pytest.mark.parametrize("fn", ["CAST", "TRY_CAST"])
def test_time_and_duration_do_not_cast_to_numbers(column, to, fn):
    """CAST(t AS BIGINT) gave 3723000000 for TIME64[US] and 3723000000000 for TIME64[NS] of
    one value (a DURATION its count of its unit); the others failed with Arrow's raw
    'Unsupported cast'. DuckDB: 'Unimplemented type for cast (TIME -> BIGINT)'."""
    ctx, con = _both(_TIMES)
    sql = f"SELECT {fn}({column} AS {to}) FROM t"
    if fn == "CAST":
        with pytest.raises(duckdb.ConversionException, match="Unimplemented type for cast"):
            con.sql(sql).fetchall()
    with pytest.raises(pqe.TypeMismatchError, match=r"cannot cast .* at line 1, column 8"):
        ctx.sql(sql).to_arrow()


@pytest.mark.parametrize("column", ["t_us", "t_ns", "d_s"])
def test_dataframe_cast_of_time_to_number_is_refused(column):
    ctx = pqe.Context()
    ctx.register_arrow("t", _TIMES)
    with pytest.raises(pqe.TypeMismatchError, match="cannot cast .* to BIGINT"):
        ctx.table("t").select(x=col(column).cast("bigint")).to_arrow()
    with pytest.raises(pqe.TypeMismatchError, match="cannot cast DATE to BIGINT"):
        ctx.sql("SELECT DATE '2020-01-01' AS d").select(x=col("d").cast("bigint")).to_arrow()


def test_time_still_casts_to_text():
    ctx, con = _both(_TIMES)
    sql = "SELECT CAST(t_us AS VARCHAR), CAST(t_ns AS VARCHAR), TRY_CAST(t_s AS VARCHAR) FROM t"
    assert _rows(ctx, sql) == con.sql(sql).fetchall()


# ---- 3. decimal sums regrouped past 38 digits --------------------------------------------------


_DECIMALS = pa.table({
    "b": pa.array([decimal.Decimal("1.5")], pa.decimal128(12, 4)),
    "e": pa.array([decimal.Decimal("0.5")], pa.decimal128(18, 18)),
    "x": pa.array([decimal.Decimal("9" * 38)], pa.decimal128(38, 0)),
    "y": pa.array([decimal.Decimal("9" * 36 + ".5")], pa.decimal128(38, 1)),
})


@pytest.mark.parametrize("expr", [
    "(b + (1 + e)) + 999999999999999999",
    "((b + (1 + e)) + 999999999999999999) * 10",
    "(e + (e + (e + e)))", "(y + (y + y))", "(x - 1) + 1", "(x + (x - x))",
    "b * (b * (b * b))",
])
def test_nested_decimal_sums_keep_their_grouping(expr):
    """Acero regrouped (b + (1 + e)) + 999999999999999999 and typed the new grouping by its
    own rules, past 38 digits: 'Decimal precision out of range [1, 38]: 39' for a query
    whose type (DECIMAL(37,18)) holds the answer."""
    ctx, con = _both(_DECIMALS)
    sql = f"SELECT {expr} AS r FROM t"
    assert _rows(ctx, sql) == con.sql(sql).fetchall()


@pytest.mark.parametrize("expr", [
    "(b + (1 + e)) + 99999999999999999999", "x + (1 + 0)", "(x + 1) - 1",
    "(y + (1 + e)) + 1", "(x * 1) + (x * 1)"])
def test_nested_decimal_sums_past_38_digits_still_fail(expr):
    ctx, con = _both(_DECIMALS)
    sql = f"SELECT {expr} AS r FROM t"
    with pytest.raises(duckdb.Error):
        con.sql(sql).fetchall()
    with pytest.raises(pqe.ExecutionError, match="out of range for DECIMAL"):
        ctx.sql(sql).to_arrow()


# ---- 4. a dictionary holding a NULL failed the pattern estimate --------------------------------


@pytest.mark.parametrize("pattern, negated", [("a%", ""), ("%b", "NOT"), ("_", "")])
def test_like_on_chunked_dictionary_with_null_entry(pattern, negated):
    """The in-memory table's sample for LIKE's estimate combined the dictionary chunks,
    which Arrow refuses when a dictionary holds a NULL: an InternalError."""
    c1 = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), pa.array(["b", "a"]))
    c2 = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int8()), pa.array(["a", None]))
    ctx, con = _both(pa.table({"d": pa.chunked_array([c1, c2]), "v": [0, 1, 2, 3]}))
    sql = f"SELECT v FROM t WHERE d {negated} LIKE '{pattern}' ORDER BY v"
    assert _rows(ctx, sql) == con.sql(sql).fetchall()


# ---- 5. the DataFrame API's non-finite Decimal constants ---------------------------------------


@pytest.mark.parametrize("value", ["NaN", "sNaN", "Infinity", "-Infinity"])
def test_dataframe_non_finite_decimal_is_refused(value):
    """pqe.lit(Decimal('NaN')) raised a raw ValueError ('invalid literal for int()')."""
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"x": [1]}))
    with pytest.raises(pqe.TypeMismatchError, match="is not a finite DECIMAL"):
        ctx.table("t").select(r=col("x") + decimal.Decimal(value)).to_arrow()
    with pytest.raises(pqe.TypeMismatchError, match="is not a finite DECIMAL"):
        pqe.lit(decimal.Decimal(value))


def test_dataframe_decimal_constants_are_typed_by_their_digits():
    """Decimal('1E+5') was typed DECIMAL(1,0), too narrow for its value; past 38 digits the
    type was capped below the value (both failed when run)."""
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"x": [1]}))
    got = ctx.table("t").select(r=col("x") + decimal.Decimal("1E+5")).to_pylist()
    assert got == [{"r": decimal.Decimal(100001)}]
    with pytest.raises(pqe.TypeMismatchError, match="more than 38 digits"):
        pqe.lit(decimal.Decimal("1" * 39))


# ---- 6. AVG of DECIMAL rounded twice -----------------------------------------------------------


def test_avg_of_decimal_rounds_once():
    """The sum was made a DOUBLE (one rounding) and then divided by the count (another):
    0.05..0.09 averaged 0.06999999999999999 (PostgreSQL: 0.07), five DECIMAL(38,37)
    1.2345678901234567890123456789012345678 averaged 1.234567890123457."""
    ctx = pqe.Context()
    ctx.register_arrow("a", pa.table({"d": pa.array(
        [decimal.Decimal(x) for x in ["0.05", "0.06", "0.07", "0.08", "0.09"]],
        pa.decimal128(10, 2))}))
    assert _rows(ctx, "SELECT avg(d) FROM a") == [(0.07,)]
    big = decimal.Decimal("1.2345678901234567890123456789012345678")
    ctx.register_arrow("b", pa.table({"s": pa.array([big] * 5, pa.decimal128(38, 37))}))
    assert _rows(ctx, "SELECT avg(s) FROM b") == [(1.2345678901234567,)]
    assert _rows(ctx, "SELECT avg(s) FROM b") == duckdb.sql(
        "SELECT avg(s) FROM (SELECT CAST('1.2345678901234567890123456789012345678' AS "
        "DECIMAL(38,37)) AS s FROM range(5))").fetchall()


@pytest.mark.parametrize("scale", [2, 10, 30, 38])
def test_grouped_avg_of_decimal_is_the_nearest_double(scale):
    """Per group, AVG is the DOUBLE nearest the exact mean (Python's Fraction -> float is
    correctly rounded), with NULLs skipped and an all-NULL group NULL."""
    rng = random.Random(scale)
    precision = 38 if scale > 20 else 18
    keys, values = [], []
    for g in range(300):
        for _ in range(rng.randint(1, 7)):
            keys.append(g)
            digits = rng.choice([1, 5, precision])
            v = rng.randint(-10 ** digits + 1, 10 ** digits - 1)
            values.append(None if rng.random() < 0.1 else
                          decimal.Decimal(v).scaleb(-scale))
    keys.append(300)
    values.append(None)
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"k": keys, "d": pa.array(
        values, pa.decimal128(precision, scale))}))
    got = dict(_rows(ctx, "SELECT k, avg(d) FROM t GROUP BY k"))
    groups: dict[int, list] = {}
    for k, v in zip(keys, values, strict=True):
        groups.setdefault(k, [])
        if v is not None:
            groups[k].append(Fraction(v))
    want = {k: float(sum(vs) / len(vs)) if vs else None for k, vs in groups.items()}
    assert got == want


def test_window_avg_of_decimals_rounds_once():
    """A window AVG of DECIMALs rounds once, as the aggregate does: the exact sum over the
    frame divided by its count (the sum as DOUBLE, then divided, gave 0.06999999999999999)."""
    ctx = pqe.Context()
    vals = [decimal.Decimal(x) for x in ("0.05", "0.06", "0.07", "0.08", "0.09")]
    ctx.register_arrow("w", pa.table({"v": pa.array(vals, pa.decimal128(10, 2)),
                                      "i": [1, 2, 3, 4, 5]}))
    got = ctx.sql("select avg(v) over (order by i rows between unbounded preceding and "
                  "unbounded following) a, avg(v) over (order by i rows between 1 preceding "
                  "and current row) b from w order by i").to_arrow()
    assert got.column("a").to_pylist() == [0.07] * 5
    assert got.column("b").to_pylist() == [0.05, 0.055, 0.065, 0.075, 0.085]


def test_csv_times_of_day_stay_text(tmp_path):
    """README: a CSV column of times of day is text (pqe has no TIME type in SQL). Arrow
    inferred TIME32[S] for `09:30:00`, and `x > '09:45:00'` then failed to convert."""
    path = tmp_path / "times.csv"
    path.write_text("x,y\n09:30:00,1\n10:00:00,2\n")
    ctx = pqe.Context()
    ctx.register_csv("c", str(path))
    got = ctx.sql("select typeof(x) t, y from c where x > '09:45:00'").to_arrow().to_pylist()
    assert got == [{"t": "VARCHAR", "y": 2}]
    assert duckdb.sql(f"select y from read_csv('{path}') where x > '09:45:00'").fetchall() \
        == [(2,)]


def test_dataframe_cast_to_float16_is_refused():
    """A cast to float16 was a cast to REAL: values kept float32 precision, not rounded."""
    ctx = pqe.Context()
    ctx.register_arrow("h", pa.table({"x": [0.1]}))
    with pytest.raises(pqe.UnsupportedError, match="float16"):
        ctx.table("h").select(col("x").cast(pa.float16()))
    got = ctx.table("h").select(col("x").cast(pa.float32()).alias("y")).to_arrow()
    assert got.schema.field("y").type == pa.float32()
