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
from ...plan.temporal_text import interval_value
from ..parser import PQEDialect

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
INT32_MAX = (1 << 31) - 1

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


def interval_literal(text: str, unit: str | None) -> Literal:
    """INTERVAL '3' MONTH, INTERVAL '68 days', INTERVAL '1 day 2 hours', INTERVAL '1.5 days'
    (unit None: the unit is inside the text): `plan.temporal_text.interval_value`."""
    return Literal(interval_value(text, unit), T.INTERVAL)


def date_literal(value: str) -> Literal:
    return Literal(datetime.date.fromisoformat(value), T.DATE)


def checked_int(value: int, what: str) -> int:
    """A constant integer argument (LIMIT, a window offset, ntile's buckets) that must fit
    BIGINT: out of range is a clear error, not an overflow deep in a kernel."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise BindError(f"{what} {value} is out of range (at most {INT64_MAX})")
    return value
