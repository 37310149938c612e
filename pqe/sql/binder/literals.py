"""Literals and types: numbers, intervals, dates, SQL type names, LIKE escapes."""

from __future__ import annotations

import datetime
import decimal
import re

import pyarrow as pa
from sqlglot import exp

from ... import types as T
from ...errors import BindError, Error, ExecutionError, UnsupportedError
from ...plan.expr import Expr, Literal, lit
from ..parser import PQEDialect

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
INT32_MAX = (1 << 31) - 1

_INTERVAL_UNITS = {
    "year": (12, 0, 0), "years": (12, 0, 0), "quarter": (3, 0, 0), "quarters": (3, 0, 0),
    "month": (1, 0, 0), "months": (1, 0, 0), "mon": (1, 0, 0), "mons": (1, 0, 0),
    "week": (0, 7, 0), "weeks": (0, 7, 0), "day": (0, 1, 0), "days": (0, 1, 0),
    "hour": (0, 0, 3600 * 10**9), "hours": (0, 0, 3600 * 10**9),
    "minute": (0, 0, 60 * 10**9), "minutes": (0, 0, 60 * 10**9),
    "second": (0, 0, 10**9), "seconds": (0, 0, 10**9),
    "millisecond": (0, 0, 10**6), "milliseconds": (0, 0, 10**6),
    "microsecond": (0, 0, 10**3), "microseconds": (0, 0, 10**3),
    "decade": (120, 0, 0), "decades": (120, 0, 0), "century": (1200, 0, 0),
    "centuries": (1200, 0, 0), "millennium": (12000, 0, 0), "millennia": (12000, 0, 0),
}
# DuckDB's other spellings of the units
_INTERVAL_UNITS.update({w: _INTERVAL_UNITS[u] for u, words in {
    "year": "y yr yrs", "day": "d", "week": "w", "hour": "h hr hrs", "minute": "m min mins",
    "second": "s sec secs", "millisecond": "ms msec msecs", "microsecond": "us usec usecs",
    "decade": "dec decs", "century": "c cent", "millennium": "mil mils millenniums millenium",
}.items() for w in words.split()})


def literal(node: exp.Literal) -> Literal:
    """A number or string literal. Integers beyond BIGINT become DECIMAL(38,0) while they fit
    38 digits; longer ones are out of range (never a Python int the kernels cannot hold)."""
    text = node.this
    if node.is_string:
        return Literal(text, T.TEXT)
    try:
        if re.fullmatch(r"[+-]?\d+", text):
            value = int(text)
            if -(1 << 31) <= value < (1 << 31):
                return Literal(value, T.INT32)  # PostgreSQL's and DuckDB's INTEGER (int4)
            if INT64_MIN <= value <= INT64_MAX:
                return lit(value)
            if len(str(abs(value))) > T.MAX_DECIMAL_PRECISION:
                raise BindError(f"integer literal {text} is out of range (more than "
                                f"{T.MAX_DECIMAL_PRECISION} digits)")
            return Literal(decimal.Decimal(value), T.decimal(T.MAX_DECIMAL_PRECISION, 0))
        if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)", text):
            d = decimal.Decimal(text)
            sign, digits, exp_ = d.as_tuple()
            scale = max(0, -int(exp_))
            precision = max(len(digits), scale + 1)
            if precision > T.MAX_DECIMAL_PRECISION:
                return Literal(float(d), T.FLOAT64)
            return Literal(d, pa.decimal128(precision, scale))
        return Literal(float(text), T.FLOAT64)
    except (ValueError, decimal.InvalidOperation):
        raise BindError(f"invalid number {text!r}") from None


def narrow_int_literal(e: Expr, other: Expr) -> Expr:
    """An integer literal meeting a DECIMAL takes the narrowest decimal type (DuckDB's rule),
    so `1 - l_discount` stays DECIMAL(16,2) instead of widening to 22 digits."""
    if (isinstance(e, Literal) and isinstance(e.value, int) and not isinstance(e.value, bool)
            and T.is_decimal(other.dtype)):
        digits = len(str(abs(e.value)))
        if digits <= T.MAX_DECIMAL_PRECISION:
            return Literal(decimal.Decimal(e.value), pa.decimal128(digits, 0))
    return e


def rewrite_escape(pattern: str, esc: str) -> str:
    """Rewrite a LIKE pattern with a custom escape character to backslash escapes."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == esc and i + 1 == len(pattern):
            raise ExecutionError(f"LIKE pattern must not end with escape character: '{pattern}'")
        if ch == esc and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append("\\" + nxt if nxt in "%_\\" else nxt)
            i += 2
            continue
        if ch == "\\":
            out.append("\\\\")
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def sql_type(dt: exp.DataType) -> pa.DataType:
    # a plain or parameterized type (DOUBLE, DECIMAL(12, 2)) is looked up by its parts: its
    # SQL text was generated and parsed again for every CAST (most of executemany's time)
    key = _type_key(dt)
    if key is not None:
        found = _SQL_TYPES.get(key)
        if found is None:
            found = _sql_type(dt)
            if len(_SQL_TYPES) < 4096:
                _SQL_TYPES[key] = found
        return found
    return _sql_type(dt)


_SQL_TYPES: dict[tuple, pa.DataType] = {}

_LENGTH_TYPES = (exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR, exp.DataType.Type.NVARCHAR,
                 exp.DataType.Type.NCHAR, exp.DataType.Type.BPCHAR)


def text_length(dt: exp.DataType) -> int | None:
    """The n of VARCHAR(n) / CHAR(n) (and NVARCHAR, NCHAR, BPCHAR), as PostgreSQL reads it:
    the most characters a value holds (a CAST cuts a longer one to n, a column refuses
    it); None for a text type without one. CHAR(n) is not blank-padded (as in DuckDB). TEXT
    and STRING take no length: it is refused rather than dropped."""
    if dt.this in (exp.DataType.Type.TEXT,) and dt.expressions:
        raise UnsupportedError(f"type {dt.sql(dialect=PQEDialect)} is not supported: TEXT "
                               f"takes no length (VARCHAR(n) holds at most n characters)")
    if dt.this not in _LENGTH_TYPES or len(dt.expressions) != 1:
        return None
    p = dt.expressions[0]
    if not isinstance(p, exp.DataTypeParam) or not isinstance(p.this, exp.Literal) \
            or p.this.is_string or not p.this.this.isdigit():
        return None  # (sql_type says what is wrong with it)
    n = int(p.this.this)
    if n < 1:
        raise BindError(f"type {dt.sql(dialect=PQEDialect)}: the length must be at least 1")
    return n


def _type_key(dt: exp.DataType) -> tuple | None:
    if any(v not in (None, False, [], "") for k, v in dt.args.items()
           if k not in ("this", "expressions")):
        return None
    params = []
    for p in dt.expressions:
        if not isinstance(p, exp.DataTypeParam) or not isinstance(p.this, exp.Literal) \
                or p.args.get("expression") is not None:
            return None
        params.append((p.this.is_string, p.this.this))
    return (dt.this, tuple(params))


def _sql_type(dt: exp.DataType) -> pa.DataType:
    text = dt.sql(dialect=PQEDialect)
    if dt.this in (exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE) and dt.expressions:
        return T.parse_type(text)  # FLOAT(p): p picks REAL or DOUBLE; past 53 an error
    try:
        return T.parse_type(text)
    except Error:
        if dt.expressions:
            raise  # DECIMAL(40, 2) is not DECIMAL: its precision is refused, not dropped
    base = dt.this.name if hasattr(dt.this, "name") else str(dt.this)
    try:
        return T.parse_type(base.lower().replace("_", " "))
    except Error:
        # named as DuckDB spells it (sqlglot's canonical names, INT128, are not what users write)
        spelled = dt.sql(dialect="duckdb")
        spelled = {"INT128": "HUGEINT", "UINT128": "UHUGEINT"}.get(spelled, spelled)
        raise UnsupportedError(f"type {spelled} is not supported") from None


_INTERVAL_CLOCK = re.compile(r"([+-]?)(\d+):(\d{1,2})(?::(\d{1,2}(?:\.\d{1,9})?))?")


_MICROS_PER_DAY = 86_400 * 10**6


def _away(d: decimal.Decimal) -> int:
    """To the nearest integer, half away from zero."""
    return int(d.to_integral_value(decimal.ROUND_HALF_UP))


def _fractional_part(n: decimal.Decimal, u: tuple[int, int, int],
                     unit_outside: bool) -> tuple[int, int, int]:
    """The months, days and microseconds of `n` units `u` (months, days, nanoseconds per
    unit) with a fraction, as DuckDB reads them. Written inside the text ('1.5 days'), the
    fraction goes down one unit: a year's to the nearest whole month (1.01 years is 1 year,
    1.05 years 13 months), a
    quarter's to whole days, rounded (1.25 quarters is 3 months 23 days), a month's to
    30-day days, a week's to days, and a day's to microseconds, rounded (0.5 days is
    12:00:00, not a day); hours to milliseconds are microseconds, rounded; microseconds cut.
    After the text (INTERVAL '1.5' DAY, INTERVAL 1.5 HOUR) only seconds and milliseconds keep
    their fraction, cut below the microsecond (INTERVAL '0.0000025' SECOND is 2 us, where
    '0.0000025 seconds' is 3): other units cut it (1 day, 1 hour)."""
    months, days, nanos = u
    if nanos:
        if unit_outside and nanos > 10**9 or nanos == 10**3:  # (minutes, hours; microseconds)
            return 0, 0, int(n) * nanos // 1000  # (cut towards zero)
        if unit_outside:  # (seconds, milliseconds: below the microsecond cut, as DuckDB)
            return 0, 0, int(n * nanos / 1000)
        return 0, 0, _away(n * nanos / 1000)
    if unit_outside:
        return int(n) * months, int(n) * days, 0
    if months >= 12:  # a year (or more): the nearest whole month (1.05 years: 13 months)
        return _away(n * months), 0, 0
    if months:  # a quarter or a month: whole months, then 30-day days
        whole = int(n * months)
        in_days = (n * months - whole) * 30
        if months > 1:
            return whole, _away(in_days), 0
        return whole, int(in_days), _away((in_days - int(in_days)) * _MICROS_PER_DAY)
    in_days = n * days  # a week or a day: whole days, then microseconds
    return 0, int(in_days), _away((in_days - int(in_days)) * _MICROS_PER_DAY)


def interval_literal(text: str, unit: str | None) -> Literal:
    """INTERVAL '3' MONTH, INTERVAL '68 days', INTERVAL '1 day 2 hours', INTERVAL '1.5 days'
    (unit None: the unit is inside the text)."""
    months = days = nanos = 0
    s = text.strip().lower()
    if unit is not None:
        s = f"{s} {unit.lower()}"
    tokens = s.replace(",", " ").split()
    # a time of day part, 'HH:MM[:SS[.f]]' with an optional sign (PostgreSQL's and DuckDB's
    # '1 day 02:00:00'), is hours, minutes and seconds
    clock = [t for t in tokens if _INTERVAL_CLOCK.fullmatch(t)]
    if len(clock) > 1 or (clock and unit is not None):
        raise BindError(f"invalid interval '{text}'")
    if clock:
        m = _INTERVAL_CLOCK.fullmatch(clock[0])
        sign = -1 if m.group(1) == "-" else 1
        seconds = decimal.Decimal(m.group(4) or 0)
        nanos += sign * (int(m.group(2)) * 3600 + int(m.group(3)) * 60 + seconds) * 10**9
        tokens.remove(clock[0])
    if len(tokens) == 1 and not clock and unit is None \
            and re.fullmatch(r"-?\d+\.?\d*", tokens[0]):
        tokens.append("seconds")  # a bare number is seconds, as DuckDB reads '1.5'
    if len(tokens) % 2 != 0 or not (tokens or clock):  # ('' was a zero interval)
        raise BindError(f"invalid interval '{text}'")
    for i in range(0, len(tokens), 2):
        try:
            n = decimal.Decimal(tokens[i])
        except decimal.InvalidOperation:
            raise BindError(f"invalid interval '{text}'") from None
        u = _INTERVAL_UNITS.get(tokens[i + 1])
        if u is None:
            raise BindError(f"invalid interval unit '{tokens[i + 1]}'")
        if not n.is_finite():
            raise BindError(f"invalid interval '{text}'")
        if n != int(n):
            mo, d, micros = _fractional_part(n, u, unit is not None)
            months, days, nanos = months + mo, days + d, nanos + micros * 1000
            continue
        months += int(n) * u[0]
        days += int(n) * u[1]
        nanos += n * u[2]
    # to the microsecond, as DuckDB and PostgreSQL keep intervals: '0.0000004 seconds' is a
    # zero interval (its nanoseconds made it unequal to one it printed the same as)
    nanos = int((decimal.Decimal(nanos) / 1000).to_integral_value(decimal.ROUND_HALF_UP)) * 1000
    # (months and days are int32s: -2147483648 days is one, as DuckDB reads it)
    if not (-INT32_MAX - 1 <= months <= INT32_MAX and -INT32_MAX - 1 <= days <= INT32_MAX
            and INT64_MIN <= nanos <= INT64_MAX):
        raise BindError(f"interval '{text}'{' ' + unit if unit else ''} is out of range")
    return Literal(pa.MonthDayNano([months, days, nanos]), T.INTERVAL)


def date_literal(value: str) -> Literal:
    return Literal(datetime.date.fromisoformat(value), T.DATE)


def checked_int(value: int, what: str) -> int:
    """A constant integer argument (LIMIT, a window offset, ntile's buckets) that must fit
    BIGINT: out of range is a clear error, not an overflow deep in a kernel."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise BindError(f"{what} {value} is out of range (at most {INT64_MAX})")
    return value
