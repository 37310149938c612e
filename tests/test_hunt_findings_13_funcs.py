"""Findings of the thirteenth session's hunt over scalar functions and types, each checked
where it went wrong: text with an exponent cast to DECIMAL or an integer was read as a
DOUBLE first (`CAST('9.999999999999999999e2' AS DECIMAL(38,18))` was 1000.000...), and the
year of a date past 32767 wrapped in EXTRACT and strftime."""

from __future__ import annotations

import datetime as dt
import random
from decimal import ROUND_HALF_UP, Decimal, localcontext

import pyarrow as pa
import pytest

import pqe


def _exact(text: str, scale: int, precision: int) -> Decimal | None:
    with localcontext() as c:
        c.prec = 200
        v = Decimal(text.replace("_", "")).quantize(Decimal(1).scaleb(-scale),
                                                    rounding=ROUND_HALF_UP)
        return v if abs(v) < Decimal(10) ** (precision - scale) else None


def _texts() -> list[str]:
    rng = random.Random(13)
    out = ["9.999999999999999999e2", "12345678901234567890.1e0", "1e-3", "1.5E-03", "-2.5e-1",
           "2.5e0", "1e3", "0.45e1", "1.5e-1", "-0.5e0", "0e5", "1_000e-2", "+1.e2", ".5e1",
           "149999999999999999999999e-23", "9007199254740993e0", "-9.5E+0", "1e37", "9e37", "0.0000000001e45", "0.00000000000000000000000000000000000001e75"]
    for _ in range(300):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30)))
        point = rng.randint(0, len(digits))
        mantissa = (digits[:point] or "0") + ("." + digits[point:] if point < len(digits) else "")
        out.append(f"{rng.choice(['', '-', '+'])}{mantissa}{rng.choice('eE')}"
                   f"{rng.randint(-38, 30)}")
    return out


@pytest.mark.parametrize("precision,scale", [(38, 18), (10, 2), (38, 0), (18, 9), (38, 37),
                                             (5, 1)])
def test_exponent_text_to_decimal_is_exact(precision, scale):
    texts = _texts()
    ctx = pqe.Context(partitions=3)
    ctx.register_arrow("t", pa.table({"i": range(len(texts)), "s": texts}))
    got = ctx.sql(f"SELECT i, TRY_CAST(s AS DECIMAL({precision},{scale})) AS v FROM t "
                  "ORDER BY i").to_arrow().column("v").to_pylist()
    want = [_exact(t, scale, precision) for t in texts]
    bad = [(t, g, w) for t, g, w in zip(texts, got, want, strict=True) if g != w]
    assert not bad, bad[:5]


def test_exponent_text_constant_insert_and_integer():
    ctx = pqe.Context()
    assert ctx.sql("SELECT CAST('9.999999999999999999e2' AS DECIMAL(38,18)) AS a, "
                   "TRY_CAST('9.999999999999999999e2' AS DECIMAL(38,18)) AS b, "
                   "CAST('9007199254740993e0' AS BIGINT) AS c, "
                   "CAST('1.5e-1' AS DECIMAL(3,1)) AS d").to_pylist() == [
        {"a": Decimal("999.999999999999999900"), "b": Decimal("999.999999999999999900"),
         "c": 9007199254740993, "d": Decimal("0.2")}]
    ctx.sql("CREATE TABLE x (d DECIMAL(38, 20))")
    ctx.register_arrow("src", pa.table({"s": ["1e-3", "1.25E-19"]}))
    ctx.sql("INSERT INTO x SELECT s FROM src")
    ctx.sql("INSERT INTO x VALUES ('1e-3')")
    assert ctx.sql("SELECT d FROM x").to_arrow().column(0).to_pylist() == [
        Decimal("0.00100000000000000000"), Decimal("0.00000000000000000013"),
        Decimal("0.00100000000000000000")]
    with pytest.raises(pqe.Error):
        ctx.sql("SELECT CAST('1e38' AS DECIMAL(38, 0))").to_arrow()


def test_calendar_fields_past_year_32767_are_an_error_not_a_wrapped_year():
    """Arrow's calendar kernels keep the year in 16 bits: EXTRACT(YEAR) of 32908-05-08 was
    -32628, its day of the year 23936661 and STRFTIME wrote '-32628-05-08'. Now an error
    (DuckDB answers; the text cast already refused these); dates in range are unchanged, and
    the day of the week (no year) still answers."""
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", pa.table({
        "d": pa.array([11_300_000, 19_000, -12_700_000], pa.date32()),
        "ts": pa.array([40_000 * 365 * 86_400 * 10**6, 10**15, 0], pa.timestamp("us"))}))
    for sql in ["SELECT extract(year FROM d) FROM t", "SELECT extract(doy FROM d) FROM t",
                "SELECT extract(week FROM ts) FROM t", "SELECT strftime(d, '%Y-%m-%d') FROM t",
                "SELECT strftime(ts, '%Y %H:%M %f') FROM t",
                "SELECT extract(year FROM TIMESTAMP '2024-01-01' + INTERVAL '40000 years')"]:
        with pytest.raises(pqe.Error, match="past year 32767"):
            ctx.sql(sql).to_arrow()
    got = ctx.sql("SELECT extract(year FROM d) AS y, extract(doy FROM ts) AS j, "
                  "strftime(d, '%Y/%m/%d') AS s FROM t WHERE d = DATE '2022-01-08'").to_pylist()
    assert got == [{"y": 2022, "j": 252, "s": "2022/01/08"}]  # (ts: 2001-09-09)
    dows = ctx.sql("SELECT d = DATE '2022-01-08' AS x, extract(dow FROM d) AS w FROM t"
                   ).to_pylist()
    assert len(dows) == 3 and [r["w"] for r in dows if r["x"]] == [6]


def test_ubigint_arithmetic_past_bigint():
    """A UBIGINT meets integers as DECIMAL(20,0) in +, -, * and negation too (DuckDB:
    HUGEINT): 2^64 - 1 - 1 was 'out of range for BIGINT'. ABS of a UBIGINT is itself."""
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", pa.table({"u": pa.array([2**64 - 1, 5, None], pa.uint64()),
                                      "i": pa.array([1, -3, 2], pa.int64())}))
    got = ctx.sql("SELECT u - i AS a, u + 1 AS b, -u AS c, abs(u) AS d, u * i AS e, "
                  "u - u AS f FROM t").to_pylist()
    big = 2**64 - 1
    assert got == [
        {"a": Decimal(big - 1), "b": Decimal(big + 1), "c": Decimal(-big), "d": big,
         "e": Decimal(big), "f": Decimal(0)},
        {"a": Decimal(8), "b": Decimal(6), "c": Decimal(-5), "d": 5, "e": Decimal(-15),
         "f": Decimal(0)},
        {"a": None, "b": None, "c": None, "d": None, "e": None, "f": None}]
    assert ctx.sql("SELECT sum(u + 0) AS s FROM t").to_pylist() == [{"s": Decimal(big + 5)}]
    with pytest.raises(pqe.Error, match="out of range"):
        ctx.sql("SELECT u * u FROM t").to_arrow()


def test_hexadecimal_and_binary_text_to_integers():
    """'0x1F' and '0b101' cast to integer types as in DuckDB and PostgreSQL 16 (TRY_CAST gave
    NULL, CAST an error); no sign, single underscores between digits, NULL past the type."""
    texts = ["0x10", "0X1F", "-0x10", "+0x10", "0b101", "0B11", "0o17", "0x", "0x1_0",
             "0xFFFFFFFFFFFFFFFF", "0x7FFFFFFFFFFFFFFF", "0x8000000000000000", "0x1g", "00x10",
             "0x10.5", "0x000000000000000000000001", "0b" + "1" * 63, "42", None, "0xff", "0x80"]
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", pa.table({"i": range(len(texts)), "s": texts}))
    got = ctx.sql("SELECT TRY_CAST(s AS TINYINT) AS a, TRY_CAST(s AS INTEGER) AS b, "
                  "TRY_CAST(s AS BIGINT) AS c, TRY_CAST(s AS DOUBLE) AS d FROM t ORDER BY i"
                  ).to_arrow().to_pydict()
    assert got["a"] == [16, 31, None, None, 5, 3, None, None, 16, None, None, None, None, None,
                        None, 1, None, 42, None, None, None]
    assert got["c"] == [16, 31, None, None, 5, 3, None, None, 16, None, 2**63 - 1, None, None,
                        None, None, 1, 2**63 - 1, 42, None, 255, 128]
    assert got["b"][:2] == [16, 31] and got["b"][-2:] == [255, 128]
    assert got["d"][:2] == [None, None]  # (DuckDB: integers only)
    with pytest.raises(pqe.Error, match="'0x1g' is not a valid INTEGER"):
        ctx.sql("SELECT CAST('0x1g' AS INTEGER)").to_arrow()
