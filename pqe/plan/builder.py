"""The one plan builder behind both SQL and the DataFrame API.

It makes typed expressions (resolving functions, inserting implicit casts) and plan nodes
(assigning fresh column ids), so a query written either way yields the same plan.
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import math
import re
from collections.abc import Sequence

import pyarrow as pa

from .. import types as T
from ..errors import BindError, TypeMismatchError, UnsupportedError
from . import functions as F
from . import udf as U
from .expr import (AggCall, Call, Case, Cast, ColumnRef, Expr, Field, InList, Literal,
                   SortKey, SubqueryExpr, UserCall, and_, conjuncts, is_volatile, walk)
from .logical import (Aggregate, Filter, Join, Limit, LogicalPlan, Project, Scan, Sort, Union,
                      Values)
from .temporal_text import INVALID, interval_value, parse_temporal, parse_time, parse_zoned

_IDS = itertools.count(1)


def fresh_id(name: str) -> str:
    """A process-unique column id (also the column's name in intermediate Arrow tables)."""
    return f"{name}#{next(_IDS)}"


def new_field(name: str, dtype: pa.DataType, nullable: bool = True,
              qualifier: str | None = None) -> Field:
    return Field(fresh_id(name), name, dtype, nullable, qualifier)


# ---- expressions -------------------------------------------------------------------------------


def cast(e: Expr, dtype: pa.DataType, try_: bool = False) -> Expr:
    if e.dtype == dtype and not try_:
        return e
    if isinstance(e, Literal) and e.value is None:
        return Literal(None, dtype)
    if isinstance(e, Literal) and not try_:
        folded = _cast_literal(e, dtype)
        if folded is not None:
            return folded
    return Cast(e, dtype, try_)


# ASCII digits only, as the kernels' patterns (RE2) and DuckDB read them: Python's \d also
# matched '１２' and '١٢', so CAST of a constant accepted what the same cast of a column refused
_INT_TEXT = re.compile(r"[+-]?\d+", re.ASCII)
_NUMBER_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)
_FLOAT_TEXT = re.compile(r"[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|inf|infinity|nan)",
                         re.IGNORECASE | re.ASCII)


def _parse_number(text: str, dtype: pa.DataType):
    """A numeric literal written as text ('12', ' 1.5 ', 'NaN') as a value for `dtype`, or
    None when it is not one (the caller reports it). Integers must be written as integers
    (PostgreSQL); floats also accept nan and inf(inity), as Arrow's cast does."""
    text = text.strip(T.ASCII_SPACE)
    if T.is_integer(dtype):
        return int(text) if _INT_TEXT.fullmatch(text) else None
    if T.is_floating(dtype):
        return float(text) if _FLOAT_TEXT.fullmatch(text) else None
    return decimal.Decimal(text) if _NUMBER_TEXT.fullmatch(text) else None


_REAL_MAX = 3.4028234663852886e38  # the largest finite float32


def _cast_literal(e: Literal, dtype: pa.DataType) -> Literal | None:
    """Fold casts of literals whose result is certain (keeps plans and EXPLAIN readable)."""
    v = e.value
    if isinstance(v, str) and T.is_numeric(dtype):
        v = _parse_number(v, dtype)
        if v is None:
            return None
    try:
        if T.is_decimal(dtype) and isinstance(v, (int, decimal.Decimal)) and not isinstance(v, bool):
            # ties away from zero, as CAST of a column rounds (kernels.expressions)
            with decimal.localcontext() as c:  # 38 digits and a scale: beyond the default 28
                c.prec = 80
                q = decimal.Decimal(v).quantize(decimal.Decimal(1).scaleb(-dtype.scale),
                                                rounding=decimal.ROUND_HALF_UP)
            if len(q.as_tuple().digits) <= dtype.precision:
                return Literal(q, dtype)
            return None
        if T.is_floating(dtype) and isinstance(v, (int, decimal.Decimal, float)) and not isinstance(v, bool):
            # (a DECIMAL has no negative zero, and its cast gives 0.0: float(Decimal('-0.00'))
            # is -0.0, which atan2 and text tell apart)
            f = float(v) + 0.0 if isinstance(v, decimal.Decimal) else float(v)
            if pa.types.is_float32(dtype) and math.isfinite(f) and abs(f) > _REAL_MAX:
                return None  # past REAL's range: the cast's kernel raises (or TRY_CAST: NULL)
            return Literal(f, dtype)
        if T.is_integer(dtype) and isinstance(v, float) and math.isfinite(v):
            v = round(v)  # ties to even, as the kernels cast a DOUBLE (and DuckDB does)
        elif T.is_integer(dtype) and isinstance(v, decimal.Decimal) and v.is_finite():
            v = int(v.quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP))  # (away)
        if T.is_integer(dtype) and isinstance(v, int) and not isinstance(v, bool):
            info = pa.scalar(v, dtype)  # raises when out of range
            return Literal(info.as_py(), dtype)
        if (pa.types.is_date32(dtype) or pa.types.is_timestamp(dtype) and dtype.tz is None) \
                and isinstance(v, str):
            # (the grammar the kernels read a column by: plan.temporal_text)
            value = parse_temporal(v, dtype)
            return None if value is INVALID or value is None else Literal(value, dtype)
        if pa.types.is_time(dtype) and isinstance(v, str):
            value = parse_time(v, dtype)
            return None if value is INVALID or value is None else Literal(value, dtype)
        if pa.types.is_date(dtype) and isinstance(v, str):
            return Literal(datetime.date.fromisoformat(v.strip(T.ASCII_SPACE)), dtype)
        if pa.types.is_timestamp(dtype) and isinstance(v, str):
            # a zoned TIMESTAMP's text, by the kernels' grammar too (Python's fromisoformat
            # read '2024-01-01 10.5' as 10:00:00.5, and ISO week dates, which a column's
            # text does not convert from)
            value = parse_zoned(v, dtype)
            return None if value is INVALID or value is None else Literal(value, dtype)
        if pa.types.is_timestamp(dtype) and type(v) is datetime.date:
            return Literal(datetime.datetime(v.year, v.month, v.day), dtype)
        if T.is_text(dtype) and isinstance(v, str):
            return Literal(v, dtype)
        if T.is_boolean(dtype) and isinstance(v, str):
            word = v.strip(T.ASCII_SPACE).lower()
            if word in T.TRUE_TEXT or word in T.FALSE_TEXT:
                return Literal(word in T.TRUE_TEXT, dtype)
            return None
    except (ValueError, OverflowError, pa.ArrowInvalid, decimal.InvalidOperation):
        return None
    return None


def _coerce(e: Expr, want: pa.DataType | None) -> Expr:
    return e if want is None else cast(e, want)


def _nullable(fdef: F.FunctionDef, args: Sequence[Expr]) -> bool:
    if fdef.nulls == "never":
        return False
    if fdef.nulls == "custom":
        return True
    return any(a.nullable for a in args)


_WIDE = decimal.Context(prec=80, traps=[decimal.InvalidOperation])


def literal_as(value_expr: Literal, dtype: pa.DataType) -> Literal | None:
    """The literal in `dtype` when that represents its value exactly (else None), so a
    comparison can cast the literal instead of every value of a column."""
    v = value_expr.value
    if v is None or isinstance(v, bool):
        return None
    if T.is_integer(dtype) and isinstance(v, int):
        try:
            pa.scalar(v, dtype)
        except (pa.ArrowInvalid, OverflowError):
            return None
        return Literal(v, dtype)
    if T.is_integer(dtype) and isinstance(v, decimal.Decimal) and v == v.to_integral_value():
        return literal_as(Literal(int(v), T.INT64), dtype)
    if T.is_decimal(dtype) and isinstance(v, (int, decimal.Decimal)):
        d = decimal.Decimal(v)
        try:  # 38 digits and a scale: beyond the default context's 28
            q = d.quantize(decimal.Decimal(1).scaleb(-dtype.scale), context=_WIDE)
        except decimal.InvalidOperation:  # more digits than even _WIDE holds
            return None
        if q != d or len(q.as_tuple().digits) > dtype.precision:
            return None
        return Literal(q, dtype)
    if T.is_floating(dtype) and isinstance(v, (int, decimal.Decimal)) and not T.is_floating(value_expr.dtype):
        f = float(v) + 0.0  # (no negative zero from a DECIMAL)
        if decimal.Decimal(f) == decimal.Decimal(v):
            return Literal(f, dtype)
    return None


def _unwrap_literal_comparison(a: Expr, b: Expr) -> tuple[Expr, Expr] | None:
    """column <op> literal: give the literal the column's type when exact."""
    for x, y, flip in ((a, b, False), (b, a, True)):
        if isinstance(y, Literal) and not isinstance(x, Literal) and x.dtype != y.dtype \
                and (T.is_numeric(x.dtype)):
            converted = literal_as(y, x.dtype)
            if converted is not None:
                return (converted, x) if flip else (x, converted)
    return None


def _string_literal_to(e: Expr, other: Expr) -> Expr:
    """A string literal compared with a typed value takes that type ('1995-01-01' -> DATE)."""
    if (isinstance(e, Literal) and isinstance(e.value, str) and not T.is_text(other.dtype)
            and not T.is_null(other.dtype)):
        if pa.types.is_timestamp(other.dtype) and other.dtype.unit != "us":
            return _text_in_unit(e, other.dtype, pa.timestamp("us", other.dtype.tz))
        if pa.types.is_time(other.dtype) and other.dtype != T.TIME:
            return _text_in_unit(e, other.dtype, T.TIME)
        if T.is_blob(other.dtype):
            # the text's bytes, as CAST('A' AS BLOB) gives them (x'41' = 'A' was "cannot
            # convert 'A' to BLOB"), by the kernels' rule (types.BLOB_TEXT_REFUSED)
            if re.search(T.BLOB_TEXT_REFUSED, e.value):
                raise TypeMismatchError(f"cannot convert '{e.value}' to BLOB: a backslash "
                                        f"escape or a character past ASCII")
            return Literal(e.value.encode("ascii"), T.BINARY)
        if T.is_decimal(other.dtype):
            # text naming more decimal places than the DECIMAL has keeps them (PostgreSQL's
            # numeric): the value is compared exactly, not rounded to the other's scale
            # (`dec_4_1 = '123.456'` matched 123.5; `3 IN (1.5, '2.96')` was true)
            exact = _exact_decimal(e.value, other.dtype.scale)
            if exact is not None:
                return exact
        if T.is_interval(other.dtype):
            # '1 second' compared with an INTERVAL is the INTERVAL '1 second', as PostgreSQL
            # and DuckDB read an untyped literal (it was "cannot convert")
            try:
                return Literal(interval_value(e.value, None), T.INTERVAL)
            except BindError:
                raise TypeMismatchError(f"cannot convert '{e.value}' to INTERVAL") from None
        folded = _cast_literal(e, other.dtype)
        if folded is None and _kernel_reads(e.value, other.dtype):
            return cast(e, other.dtype)  # (a time Python's datetime does not hold)
        if folded is None:
            raise TypeMismatchError(
                f"cannot convert '{e.value}' to {T.type_name(other.dtype)}")
        return folded
    return e


def _kernel_reads(text: str, dtype: pa.DataType) -> bool:
    """Whether text names a DATE or TIMESTAMP that Python's datetime cannot hold (a year
    past 9999, or before 1 once a zone offset is applied): the cast's kernel reads it when
    the query runs, as it reads a column's text (`tz < '9999-12-31 23:00-05'` was refused
    where CAST of the same text converts)."""
    if pa.types.is_timestamp(dtype):
        return (parse_zoned if dtype.tz is not None else parse_temporal)(text, dtype) is None
    if pa.types.is_date32(dtype):
        return parse_temporal(text, dtype) is None
    return False


def _exact_decimal(text: str, scale: int) -> Literal | None:
    """Numeric text with more decimal places than `scale`, as a DECIMAL literal of its own
    precision and scale (as a numeric literal is typed), or None (the text fits the scale,
    is no number, or needs more than 38 digits)."""
    v = _parse_number(text, T.decimal(T.MAX_DECIMAL_PRECISION, 0))
    if v is None or not v.is_finite():
        return None
    _, digits, exp = v.as_tuple()
    places = max(0, -int(exp))
    precision = max(len(digits), places + 1)
    if places <= scale or precision > T.MAX_DECIMAL_PRECISION:
        return None
    return Literal(v, pa.decimal128(precision, places))


def _text_literals_as_the_others(args: Sequence[Expr]) -> list[Expr]:
    """Text literals beside typed values in CASE results, COALESCE, GREATEST and LEAST take
    the others' common type, as PostgreSQL resolves its untyped literals there (and DuckDB):
    coalesce(d, '2021-02-03') is a DATE (it was "no common type: DATE, VARCHAR"). Beside
    text, or alone, they stay text; a literal that does not convert is an error naming it."""
    typed = [a for a in args if not _is_text_literal(a) and not T.is_null(a.dtype)]
    if not typed or len(typed) == len(args) or any(T.is_text(a.dtype) for a in typed):
        return list(args)
    common = typed[0].dtype
    for a in typed[1:]:
        common = T.common_type(common, a.dtype)
        if common is None:
            return list(args)  # (the caller names the types that do not meet)
    ref = Literal(None, common)
    return [_string_literal_to(a, ref) if _is_text_literal(a) else a for a in args]


def _text_in_unit(e: Literal, dtype: pa.DataType, canonical: pa.DataType) -> Expr:
    """Text compared with a TIMESTAMP (with or without a zone) or TIME column of another unit
    than microseconds (seconds, milliseconds, nanoseconds: Parquet's and pandas' columns):
    read as the microsecond type `canonical`, then in the column's unit when that holds it
    exactly (the column stays uncast, for pruning); else the column compares in
    microseconds, exactly: `s = '... 00:00:00.4'` holds for no whole second and `s <
    '... .9'` for 00:00:00 (read in the column's unit, the text was cut, and nanosecond
    columns refused any text). So DuckDB compares a Parquet file's millisecond column (as
    a TIMESTAMP) and a BETWEEN of such a column and a microsecond one (a common type).

    Text naming nanoseconds past the microsecond against a nanosecond column is refused:
    the digits were cut ('... .000000001' equal to the .000000000 row), and pqe's constants
    hold microseconds (Python's datetime; a nanosecond value needs pandas)."""
    if (pa.types.is_timestamp(dtype) or pa.types.is_time(dtype)) and dtype.unit == "ns" \
            and isinstance(e.value, str) and _NANOS_PAST_MICROS.search(e.value):
        raise UnsupportedError(f"text naming nanoseconds ('{e.value}') compared with a "
                               f"{T.type_name(dtype)} column is not supported: constants "
                               f"hold microseconds")
    folded = _cast_literal(e, canonical)
    if folded is None:
        raise TypeMismatchError(f"cannot convert '{e.value}' to {T.type_name(dtype)}")
    if folded.value is None:
        return Literal(None, dtype)
    try:
        exact = pa.scalar(folded.value, canonical).cast(dtype, safe=True)
    except (pa.ArrowInvalid, OverflowError):
        return folded
    return Literal(exact.as_py(), dtype) if dtype.unit != "ns" else Literal(folded.value, dtype)


# a fraction of a second whose 7th to 9th digits are not all zero
_NANOS_PAST_MICROS = re.compile(r"[.,]\d{6}0*[1-9]")


def _string_literal_as_boolean(e: Expr) -> Expr:
    """A string literal where a BOOLEAN is wanted (an operand of AND / OR / NOT, a condition,
    a CASE branch beside BOOLEAN ones) is read as one, as PostgreSQL reads its untyped
    literals: NOT 'true' is FALSE; 'maybe' is an error naming it."""
    if isinstance(e, Literal) and isinstance(e.value, str):
        folded = _cast_literal(e, T.BOOLEAN)
        if folded is None:
            raise TypeMismatchError(f"cannot convert '{e.value}' to BOOLEAN")
        return folded
    return e


def _date_shift_as_date(e: Expr, other: Expr) -> Expr:
    """`date +/- interval` (a TIMESTAMP, PostgreSQL) compared with a DATE: when the interval
    has no time part the timestamp is a midnight, so CAST(... AS DATE) is the same value and
    the comparison stays between DATEs (`l_shipdate <= DATE '1998-12-01' - INTERVAL '90' DAY`
    keeps the column uncast: pushed into scans, pruning row groups)."""
    if not (pa.types.is_date(other.dtype) and isinstance(e, Call) and e.fn in ("add", "subtract")
            and pa.types.is_timestamp(e.dtype) and e.dtype.tz is None):
        return e
    dates = [x for x in e.args if pa.types.is_date(x.dtype)]
    ivs = [x for x in e.args if T.is_interval(x.dtype)]
    if len(dates) == 1 and len(ivs) == 1 and isinstance(ivs[0], Literal) and (
            ivs[0].value is None or ivs[0].value.nanoseconds == 0):
        return Cast(e, T.DATE)
    return e


def call(fn: str, *args: Expr, display: str | None = None) -> Expr:
    """A scalar function call, type-checked, with implicit casts inserted."""
    name = F.canonical(fn)
    fdef = F.SCALAR.get(name)
    if fdef is None:
        if name in F.AGGREGATE:
            raise BindError(f"aggregate function {(display or fn).upper()} is not allowed here")
        raise BindError(f"unknown function {(display or fn).upper()}")
    F.check_arity(fdef, len(args), display or fn)
    if name == "struct_extract":
        return struct_field(*args)
    if name == "nullif":
        # NULLIF(a, b) = CASE WHEN a = b THEN NULL ELSE a END: the type of `a` (PostgreSQL)
        a, b = args
        return case([(compare("eq", a, b), Literal(None, T.NULL))], a)
    if name in F.COMPARISONS:
        a, b = args
        args = (_string_literal_to(a, b), _string_literal_to(b, a))
        args = (_date_shift_as_date(args[0], args[1]), _date_shift_as_date(args[1], args[0]))
        unwrapped = _unwrap_literal_comparison(*args)
        if unwrapped is not None:
            args = unwrapped
    if name in ("and", "or", "not"):
        args = tuple(_string_literal_as_boolean(a) for a in args)
    if name in ("coalesce", "greatest", "least"):
        args = tuple(_text_literals_as_the_others(args))
    if name in ("add", "subtract") and len(args) == 2:
        a, b = args
        if isinstance(b, Literal) and isinstance(b.value, str) and T.is_temporal(a.dtype):
            args = (a, cast(b, T.INTERVAL))
    wants, ret = fdef.resolve(name, [a.dtype for a in args])
    wants = list(wants) + [None] * (len(args) - len(wants))
    coerced = tuple(_coerce(a, w) for a, w in zip(args, wants, strict=True))
    if fdef.refine is not None:
        ret = fdef.refine(ret, [a.value if isinstance(a, Literal) else None for a in coerced])
    if name == "coalesce" and isinstance(coerced[0], Literal) and coerced[0].value is not None:
        return coerced[0]  # the first argument is never NULL: the rest are never read
    if fdef.nulls == "propagate" and name not in ("and", "or") and any(
            isinstance(a, Literal) and a.value is None for a in coerced):
        return Literal(None, ret)  # NULL in, NULL out: no kernel needed (NULL < NULL, ...)
    return Call(name, coerced, ret, _nullable(fdef, coerced))


def struct_field(base: Expr, name: Expr) -> Expr:
    """STRUCT_EXTRACT(s, 'field'), s.field, s['field']: typed by the named field (the name is
    a constant; fields are matched by exact name, then ignoring case)."""
    if not pa.types.is_struct(base.dtype):
        raise TypeMismatchError(f"STRUCT_EXTRACT needs a STRUCT, not {T.type_name(base.dtype)}")
    if not (isinstance(name, Literal) and isinstance(name.value, str)):
        raise UnsupportedError("STRUCT_EXTRACT with a field name that is not a constant "
                               "is not supported")
    names = [f.name for f in base.dtype]
    hits = [n for n in names if n == name.value] or \
        [n for n in names if n.lower() == name.value.lower()]
    if not hits:
        raise BindError(f"struct has no field '{name.value}' (fields: {', '.join(names)})")
    if len(hits) > 1:  # (two fields of that name, or of that name in other cases)
        raise BindError(f"struct field '{name.value}' is ambiguous: the struct has fields "
                        f"{', '.join(repr(n) for n in hits)}")
    hit = hits[0]
    ftype = base.dtype.field(hit).type
    return Call("struct_extract", (base, Literal(hit, T.TEXT)), ftype, True)


def compare(op: str, a: Expr, b: Expr) -> Expr:
    return call(op, a, b)


def not_(e: Expr) -> Expr:
    return call("not", e)


def and_all(parts: Sequence[Expr]) -> Expr | None:
    parts = [_string_literal_as_boolean(p) for p in parts]
    for p in parts:
        if not (T.is_boolean(p.dtype) or T.is_null(p.dtype)):
            raise TypeMismatchError(f"AND operand must be BOOLEAN, not {T.type_name(p.dtype)}")
    return and_(cast(p, T.BOOLEAN) for p in parts)


def case(whens: Sequence[tuple[Expr, Expr]], else_: Expr | None) -> Expr:
    whens = [(_string_literal_as_boolean(w), t) for w, t in whens]
    results = [t for _, t in whens] + ([else_] if else_ is not None else [])
    if any(T.is_boolean(r.dtype) and not _is_text_literal(r) for r in results):
        # text literals beside BOOLEAN branches are BOOLEAN ones, as in PostgreSQL
        whens = [(w, _string_literal_as_boolean(t)) for w, t in whens]
        else_ = None if else_ is None else _string_literal_as_boolean(else_)
        results = [t for _, t in whens] + ([else_] if else_ is not None else [])
    results = _text_literals_as_the_others(results)
    whens = [(w, r) for (w, _), r in zip(whens, results, strict=False)]
    else_ = results[-1] if else_ is not None else None
    dtype = T.NULL
    for r in results:
        nxt = T.common_type(dtype, r.dtype)
        if nxt is None:
            raise TypeMismatchError(
                "CASE branches have no common type: "
                + ", ".join(T.type_name(r.dtype) for r in results))
        dtype = nxt
    conds = []
    for w, _ in whens:
        if not (T.is_boolean(w.dtype) or T.is_null(w.dtype)):
            raise TypeMismatchError(f"CASE WHEN condition is {T.type_name(w.dtype)}, not BOOLEAN")
        conds.append(cast(w, T.BOOLEAN))
    pairs = tuple((c, cast(t, dtype)) for c, (_, t) in zip(conds, whens, strict=True))
    other = cast(else_ if else_ is not None else Literal(None, dtype), dtype)
    return Case(pairs, other, dtype)


def in_list(arg: Expr, values: Sequence[Expr], negated: bool = False) -> Expr:
    # text literals take the type the tested value and the list's other values share, as
    # PostgreSQL resolves one type for all of them: `d IN (TIMESTAMP '...', '2021-01-01
    # 07:00')` compares TIMESTAMPs (the text read as a DATE was 2021-01-01, equal to d)
    ref = arg
    typed = [v for v in values if not _is_text_literal(v) and not T.is_null(v.dtype)]
    if typed and not T.is_text(arg.dtype) and not T.is_null(arg.dtype):
        common = arg.dtype
        for v in typed:
            common = T.common_type(common, v.dtype) if common is not None else None
        if common is not None and common != arg.dtype and not T.is_text(common):
            ref = Literal(None, common)
    values = [_string_literal_to(v, ref) for v in values]
    dtype = arg.dtype
    if T.is_nested(dtype) or any(T.is_nested(v.dtype) for v in values):
        # (Arrow's is_in has no kernel for them: a raw error at run time)
        raise UnsupportedError("IN of LIST, STRUCT or MAP values is not supported")
    for v in values:
        nxt = T.common_type(dtype, v.dtype)
        if nxt is None:
            raise TypeMismatchError(
                f"IN list value of type {T.type_name(v.dtype)} does not match "
                f"{T.type_name(arg.dtype)}")
        dtype = nxt
    return InList(cast(arg, dtype), tuple(cast(v, dtype) for v in values), negated)


def between(arg: Expr, low: Expr, high: Expr, negated: bool = False) -> Expr:
    if is_volatile(arg):
        # (the two comparisons would be filtered apart, each reading its own value)
        raise UnsupportedError(f"BETWEEN of {arg} (a value new each time it is computed) "
                               f"is not supported; compute it in a subquery first")
    e = call("and", compare("ge", arg, low), compare("le", arg, high))
    return not_(e) if negated else e


# aggregates whose answer depends on the order of the values (ORDER BY inside them)
ORDERED_AGGREGATES = frozenset({"string_agg", "array_agg"})


def aggregate_call(fn: str, args: Sequence[Expr], distinct: bool = False,
                   filter: Expr | None = None, display: str | None = None,
                   order_by: Sequence[SortKey] = ()) -> AggCall:
    name = F.canonical(fn)
    if name == "count" and not args:
        name = "count_star"
    fdef = F.AGGREGATE.get(name)
    if fdef is None:
        raise BindError(f"unknown aggregate function {(display or fn).upper()}")
    F.check_arity(fdef, len(args), display or fn)
    if name == "string_agg" and len(args) == 1:
        args = [*args, Literal(",", T.TEXT)]  # DuckDB's default separator
    wants, ret = fdef.resolve(name, [a.dtype for a in args])
    coerced = tuple(_coerce(a, w) for a, w in zip(args, wants, strict=True))
    if name in F.CONSTANT_AGG_ARGS:
        _check_constant_agg_args(name, coerced[1:], display or fn)
    if filter is not None:
        if name == "array_agg":  # a filtered-out row would show as a NULL element
            raise UnsupportedError(f"FILTER on {(display or fn).upper()} is not supported")
        filter = cast(filter, T.BOOLEAN)
    if name in ("min", "max", "any_value", "bool_and", "bool_or", "bit_and", "bit_or"):
        distinct = False  # DISTINCT does not change these
    if name in ("min", "max") and T.is_interval(ret) and not order_by:
        # the interval of the smallest / largest normalized length (a month is 30 days), as
        # it is: Arrow has no MIN / MAX of intervals
        (x,) = coerced
        length = Call("pqe_interval_total_key", (x,), pa.decimal128(38, 0), x.nullable)
        return AggCall("arg_" + name, (x, length), ret, False, filter, ())
    if distinct and name in F.MULTI_COLUMN_AGGREGATES:
        raise UnsupportedError(f"DISTINCT inside {(display or fn).upper()}(...) is not supported")
    if order_by and name not in ORDERED_AGGREGATES:
        raise UnsupportedError(f"ORDER BY inside {(display or fn).upper()}(...) is not supported")
    if order_by and distinct:
        raise UnsupportedError(f"DISTINCT with ORDER BY inside {(display or fn).upper()}(...) "
                               "is not supported")
    return AggCall(name, coerced, ret, distinct, filter, tuple(order_by))


def _check_constant_agg_args(name: str, rest: Sequence[Expr], display: str) -> None:
    """The separator of STRING_AGG and the fraction of a quantile are constants: the plan
    carries their values (AggSpec.params), not a column."""
    what = F.CONSTANT_AGG_ARGS[name]
    for a in rest:
        if not isinstance(a, Literal):
            raise UnsupportedError(f"a non-constant {what} in {display.upper()} is not supported")
        if name == "string_agg" and a.value is None:
            raise UnsupportedError(f"a NULL {what} in {display.upper()} is not supported")
        if name != "string_agg":
            if a.value is None:
                raise UnsupportedError(f"a NULL {what} in {display.upper()} is not supported")
            if a.value < 0:
                raise UnsupportedError(f"a negative (descending) {what} in {display.upper()} is not supported")
            if a.value > 1:
                raise BindError(f"{display.upper()}: the quantile must be between 0 and 1, "
                                f"not {a.value}")


def user_call(udf: U.ScalarUDF, args: Sequence[Expr]) -> Expr:
    """A call of a user-defined scalar function, arguments cast to its declared types."""
    U.check_arguments(udf, [a.dtype for a in args])
    return UserCall(udf, tuple(cast(a, t) for a, t in zip(args, udf.arg_types, strict=True)),
                    udf.return_type)


def user_aggregate(udf: U.AggregateUDF, args: Sequence[Expr], distinct: bool = False,
                   filter: Expr | None = None) -> AggCall:
    """A call of a user-defined aggregate, arguments cast to its declared types."""
    if distinct:
        raise BindError(f"DISTINCT is not supported for the user-defined aggregate {udf.name}")
    U.check_arguments(udf, [a.dtype for a in args])
    coerced = tuple(cast(a, t) for a, t in zip(args, udf.arg_types, strict=True))
    if filter is not None:
        if not udf.skip_nulls:
            raise BindError(f"FILTER is not supported for the user-defined aggregate "
                            f"{udf.name}: it sees NULLs (skip_nulls=False)")
        filter = cast(filter, T.BOOLEAN)
    return AggCall(udf.name, coerced, udf.return_type, False, filter, udf=udf)


# ---- plans -------------------------------------------------------------------------------------


def scan(table: str, provider, qualifier: str | None = None) -> Scan:
    q = qualifier or table
    fields = tuple(new_field(f.name, f.type, f.nullable, q) for f in provider.schema)
    return Scan(table, provider, fields)


def values(names: Sequence[str], rows: Sequence[Sequence[Expr]]) -> LogicalPlan:
    if not rows:
        raise BindError("VALUES needs at least one row")
    width = len(rows[0])
    for r in rows:
        if len(r) != width:
            raise BindError("VALUES rows have different numbers of columns")
    types = []
    for j in range(width):
        t = T.NULL
        for r in rows:
            nxt = T.common_type(t, r[j].dtype)
            if nxt is None:
                raise TypeMismatchError(f"VALUES column {j + 1} mixes incompatible types")
            t = nxt
        types.append(t)
    cast_rows = tuple(tuple(cast(r[j], types[j]) for j in range(width)) for r in rows)
    if any(isinstance(x, SubqueryExpr) for r in cast_rows for e in r for x in walk(e)):
        # a subquery is planned where a Project holds it (decorrelation), never inside a
        # Values node's constants: one SELECT per row, UNION ALL
        one = Values((new_field("dummy", T.INT32, False),), ((Literal(0, T.INT32),),))
        return union_all([project(one, [(e, names[j]) for j, e in enumerate(r)])
                          for r in cast_rows])
    fields = tuple(
        new_field(names[j], types[j], any(r[j].nullable for r in rows)) for j in range(width))
    return Values(fields, cast_rows)


def _is_text_literal(e: Expr) -> bool:
    return isinstance(e, Literal) and isinstance(e.value, str)


def filter(plan: LogicalPlan, predicate: Expr) -> LogicalPlan:
    predicate = _string_literal_as_boolean(predicate)
    if not (T.is_boolean(predicate.dtype) or T.is_null(predicate.dtype)):
        raise TypeMismatchError(
            f"filter condition must be BOOLEAN, not {T.type_name(predicate.dtype)}")
    return Filter(plan, cast(predicate, T.BOOLEAN))


def project(plan: LogicalPlan, items: Sequence[tuple[Expr, str]],
            qualifier: str | None = None) -> Project:
    """Project `items` (expression, output name). A column passed through under its own
    name keeps its id; with a `qualifier` (a new reference to a relation: a CTE or view
    read under an alias, the right side of a DataFrame self-join) every column gets a
    fresh id, even one already so qualified -- two references must never share ids (a
    CTE `r` read as `r` and again inside a subquery, a table named "right" self-joined)."""
    exprs, fields, seen = [], [], set()
    for e, name in items:
        if (isinstance(e, ColumnRef) and e.field.name == name and e.id not in seen
                and qualifier is None):
            f = e.field
        else:
            f = new_field(name, e.dtype, e.nullable, qualifier)
        seen.add(f.id)
        exprs.append(e)
        fields.append(f)
    return Project(plan, tuple(exprs), tuple(fields))


def join(left: LogicalPlan, right: LogicalPlan, kind: str = "inner",
         on: Sequence[tuple[Expr, Expr]] = (), filter: Expr | None = None,
         null_aware: bool = False) -> Join:
    pairs = []
    for lk, rk in on:
        common = T.common_type(lk.dtype, rk.dtype)
        if common is None:
            raise TypeMismatchError(
                f"cannot join {T.type_name(lk.dtype)} with {T.type_name(rk.dtype)}")
        pairs.append((cast(lk, common), cast(rk, common)))
    return Join(left, right, kind, tuple(pairs), filter, null_aware)


def combining_fn(fn: str) -> str:
    """The aggregate that combines partial values of `fn` computed over parts of a group:
    MIN of MINs, MAX of MAXs, SUM of SUMs and of COUNTs."""
    return fn if fn in ("min", "max") else "sum"


# AVG of a DECIMAL past this precision is never rebuilt from a SUM state: the AVG aggregate
# carries its sum past DECIMAL(38) (decimals.exact_mean's wraps), a SUM state does not, so
# AVG of 12 DECIMAL(38,37) values of 1.23 answered alone and failed as ROLLUP ("SUM does not
# fit"). Up to 28 digits a sum of 10^10 values fits 38.
AVG_STATE_MAX_PRECISION = 28


def avg_rebuildable(a: AggCall) -> bool:
    """Whether AVG call `a` may be computed as SUM / COUNT of partial states (grouping sets,
    eager aggregation) with the answer the AVG aggregate gives."""
    t = a.args[0].dtype if a.args else None
    return a.fn != "avg" or t is None or not T.is_decimal(t) \
        or t.precision <= AVG_STATE_MAX_PRECISION


def combined_value(fn: str, dtype: pa.DataType, states: Sequence[Expr]) -> Expr:
    """The value of aggregate `fn` (result type `dtype`) from its combined partial states:
    AVG from a SUM and a COUNT, a COUNT from a SUM of counts (NULL when there were no
    partial rows at all: 0), the others as they are."""
    exact_sum = T.is_integer(states[0].dtype) or isinstance(states[0].dtype, pa.Decimal128Type)
    if fn == "avg" and exact_sum:
        # the exact sum / count rounded once: the sum cast to DOUBLE first rounded twice
        # (DECIMAL 0.05..0.09 averaged 0.06999999999999999 by ROLLUP)
        v = call("pqe_mean", states[0], cast(states[1], T.INT64))
    elif fn == "avg":
        v = call("divide", cast(states[0], T.FLOAT64), cast(states[1], T.FLOAT64))
    elif fn in ("count", "count_star"):
        v = call("coalesce", cast(states[0], T.INT64), Literal(0, T.INT64))
    else:
        v = states[0]
    return cast(v, dtype)


def aggregate(plan: LogicalPlan, group: Sequence[tuple[Expr, str]],
              aggs: Sequence[tuple[AggCall, str]]) -> Aggregate:
    gfields, gexprs = [], []
    for e, name in group:
        gexprs.append(e)
        gfields.append(new_field(name, e.dtype, e.nullable))
    afields = [new_field(name, a.dtype, a.nullable) for a, name in aggs]
    return Aggregate(plan, tuple(gexprs), tuple(gfields), tuple(a for a, _ in aggs),
                     tuple(afields))


def distinct(plan: LogicalPlan) -> Aggregate:
    return aggregate(plan, [(ColumnRef(f), f.name) for f in plan.schema], [])


def sort(plan: LogicalPlan, keys: Sequence[SortKey], fetch: int | None = None) -> Sort:
    return Sort(plan, tuple(keys), fetch)


def limit(plan: LogicalPlan, fetch: int | None, offset: int = 0) -> Limit:
    return Limit(plan, fetch, offset)


def union_all(plans: Sequence[LogicalPlan]) -> Union:
    """UNION ALL with positional column matching; columns take the common type."""
    width = len(plans[0].schema)
    for p in plans:
        if len(p.schema) != width:
            raise BindError(
                f"set operation inputs have {len(plans[0].schema)} and {len(p.schema)} columns")
    types = []
    for j in range(width):
        t = T.NULL
        for p in plans:
            nxt = T.common_type(t, p.schema[j].dtype)
            if nxt is None:
                raise TypeMismatchError(
                    f"set operation column {j + 1} mixes {T.type_name(t)} and "
                    f"{T.type_name(p.schema[j].dtype)}")
            t = nxt
        types.append(T.INT32 if T.is_null(t) else t)
    inputs = []
    for p in plans:
        if all(f.dtype == t for f, t in zip(p.schema, types, strict=True)):
            inputs.append(p)
        else:
            inputs.append(project(p, [(cast(ColumnRef(f), t), f.name)
                                       for f, t in zip(p.schema, types, strict=True)]))
    fields = tuple(
        new_field(plans[0].schema[j].name, types[j],
                  any(p.schema[j].nullable for p in plans)) for j in range(width))
    return Union(tuple(inputs), fields)


def split_conjuncts(predicate: Expr | None) -> list[Expr]:
    return conjuncts(predicate)


def null_safe_key(a: Expr, b: Expr) -> list[tuple[Expr, Expr]]:
    """Join key pairs under which NULL equals NULL (GROUP BY and set-operation semantics):
    (coalesce(a, s), coalesce(b, s)) plus (a IS NULL, b IS NULL) for nullable sides."""
    if not (a.nullable or b.nullable):
        return [(a, b)]
    if T.is_null(a.dtype) or T.is_null(b.dtype):  # (NULL matches NULL: nothing else is)
        return [(call("is_null", a), call("is_null", b))]
    s = _sentinel(a.dtype)
    if s is None:  # `a = b` alone would never match NULL to NULL: a silently wrong answer
        raise UnsupportedError(f"comparing {T.type_name(a.dtype)} values with NULL matching "
                               "NULL (IS NOT DISTINCT FROM, INTERSECT, EXCEPT, a grouped "
                               "or correlated key) is not supported")
    lit_s = Literal(s, a.dtype)
    return [(call("coalesce", a, lit_s), call("coalesce", b, lit_s)),
            (call("is_null", a), call("is_null", b))]


def _sentinel(t: pa.DataType):
    if T.is_integer(t):
        return 0
    if T.is_floating(t):
        return 0.0
    if T.is_decimal(t):
        return decimal.Decimal(0)
    if T.is_text(t):
        return ""
    if T.is_boolean(t):
        return False
    if pa.types.is_date(t):
        return datetime.date(1970, 1, 1)
    if pa.types.is_timestamp(t):
        return datetime.datetime(1970, 1, 1)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return b""
    if pa.types.is_fixed_size_binary(t):
        return bytes(t.byte_width)
    if pa.types.is_time(t):
        return datetime.time(0)
    if pa.types.is_duration(t):
        return datetime.timedelta(0)
    if pa.types.is_interval(t):
        return pa.MonthDayNano([0, 0, 0])
    return None


def set_operation(kind: str, left: LogicalPlan, right: LogicalPlan, all_: bool) -> LogicalPlan:
    """INTERSECT / EXCEPT [ALL] as semi / anti joins on every column, NULLs matching NULLs.
    With ALL, rows are numbered within their duplicates on both sides (row_number over all
    columns) and the number joins too: row k survives if the other side has k copies."""
    from .expr import WindowCall
    from .logical import Window

    unified = union_all([left, right])
    left, right = unified.inputs
    if all_:
        numbered = []
        for side in (left, right):
            cols = tuple(ColumnRef(f) for f in side.schema)
            call_ = WindowCall("row_number", (), cols, (), None, T.INT64)
            numbered.append(Window(side, (call_,), (new_field("dup", T.INT64, False),)))
        left, right = numbered
    pairs = []
    for lf, rf in zip(left.schema, right.schema, strict=True):
        pairs += null_safe_key(ColumnRef(lf), ColumnRef(rf))
    joined: LogicalPlan = join(left, right, "semi" if kind == "intersect" else "anti", pairs)
    if all_:
        width = len(left.schema) - 1
        joined = project(joined, [(ColumnRef(f), f.name) for f in left.schema[:width]])
        return joined
    return distinct(joined)


# ---- window functions (the DataFrame builder's `.over()`; the same nodes the binder makes) -----


def window_consts(name: str, args: Sequence[Expr]) -> tuple[list[Expr], tuple]:
    """Split constant arguments (ntile n, lag/lead offset and default, nth_value n) from the
    value arguments, for the SQL binder and the DataFrame builder alike (which fold constant
    expressions first: optimizer.simplify.fold_constant); whole-number arguments must fit
    BIGINT."""
    from ..errors import BindError, UnsupportedError

    def const(e: Expr, what: str, whole: bool = True):
        if not isinstance(e, Literal):
            raise UnsupportedError(f"{name.upper()} {what} must be a constant")
        if whole:
            check_whole(e, f"{name.upper()} {what}")
            v = e.value
            if isinstance(v, decimal.Decimal) and v == v.to_integral_value():
                v = int(v)  # (a whole DECIMAL(p, 0): beyond BIGINT is an error)
            if isinstance(v, int) and not isinstance(v, bool) \
                    and not -2**63 <= v < 2**63:
                raise BindError(f"{name.upper()} {what} {v} is out of range "
                                f"(at most {2**63 - 1})")
        return e.value

    if name == "ntile":
        return [], (const(args[0], "bucket count"),)
    if name in ("lag", "lead"):
        from .expr import ArgColumn

        values, offset, default = [args[0]], 1, None
        if len(args) > 1 and not isinstance(args[1], Literal):  # an offset per row
            if not T.is_integer(args[1].dtype):
                raise TypeMismatchError(f"{name.upper()} offset must be an integer, not "
                                        f"{T.type_name(args[1].dtype)}")
            values.append(cast(args[1], T.INT64))
            offset = ArgColumn(len(values) - 1)
        elif len(args) > 1:
            offset = const(args[1], "offset")
        if len(args) > 2 and not isinstance(args[2], Literal):  # a default per row
            values.append(args[2])  # (cast to the function's type: window_arguments)
            default = ArgColumn(len(values) - 1)
        elif len(args) > 2:
            default = const(args[2], "default", whole=False)
        return values, (offset, default)
    if name == "nth_value":
        return [args[0]], (const(args[1], "position"),)
    return list(args), ()


def window_arguments(name: str, args: Sequence[Expr]) -> tuple[list[Expr], tuple, pa.DataType]:
    """A window-only function's value arguments, constants and result type (window_consts,
    then LAG/LEAD's default cast to the type of the value it stands for)."""
    from .expr import ArgColumn

    value_args, consts = window_consts(name, args)
    fdef = F.WINDOW[name]
    if name in ("lag", "lead") and len(args) > 2:
        # the value and the default meet in their common type, as COALESCE's arguments do
        # (PostgreSQL's anycompatible): lag(k, 1, 2.5) of a BIGINT is 2.5, not 3, and a
        # BOOLEAN default of a number is an error; a text literal takes the value's type
        default = _string_literal_to(args[2], value_args[0])
        if not T.is_null(default.dtype):
            common = T.common_type(value_args[0].dtype, default.dtype)
            if common is None:
                raise TypeMismatchError(
                    f"{name.upper()} default of type {T.type_name(default.dtype)} does not "
                    f"match its value of type {T.type_name(value_args[0].dtype)}")
            value_args[0] = cast(value_args[0], common)
    typed = value_args[:1] if name in ("lag", "lead") else value_args
    _, dtype = fdef.resolve(name, [a.dtype for a in typed] or [T.INT64])
    if name in ("lag", "lead") and consts[1] is not None:
        if isinstance(consts[1], ArgColumn):
            value_args[consts[1].index] = cast(value_args[consts[1].index], dtype)
        else:
            consts = (consts[0], lag_default(args[2], dtype))
    return value_args, consts, dtype


def check_whole(e: Literal, what: str) -> None:
    """NTILE's count, LAG/LEAD's offset, NTH_VALUE's position: an integer (2.5 was cut to 2;
    DuckDB has no NTILE(DECIMAL) either). NULL passes (the functions answer NULL)."""
    from ..errors import TypeMismatchError

    if e.value is None or T.is_null(e.dtype):
        return
    if not T.is_integer(e.dtype) and not (T.is_decimal(e.dtype) and e.dtype.scale == 0):
        raise TypeMismatchError(f"{what} must be an integer, not {T.type_name(e.dtype)} "
                                f"{e.value!r}")


def lag_default(default: Expr, dtype: pa.DataType):
    """LAG/LEAD's default in the function's type (the common type of the value and the
    default: window_arguments), as CAST converts it: the value when the cast folds, else the
    cast, evaluated by the window kernel."""
    out = cast(default, dtype)
    return out.value if isinstance(out, Literal) else out


def check_frame(frame, order_by: Sequence) -> tuple:
    """The ORDER BY keys a window's frame is measured on. A RANGE frame with an offset
    (`RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING`) measures it on the ORDER BY value:
    without ORDER BY it has nothing to measure (every row is a peer, and the frame would
    silently be the whole partition). Refused as DuckDB and PostgreSQL refuse it. A GROUPS
    frame without ORDER BY counts the peer groups of a partition whose rows are all peers,
    one group, as DuckDB does (it was refused): the rows ordered by a constant."""
    if frame is None or order_by:
        return tuple(order_by)
    if frame.mode == "range" and any(b.kind in ("preceding", "following")
                                     for b in (frame.start, frame.end)):
        raise BindError("a RANGE window frame with an offset needs an ORDER BY (one key)")
    if frame.mode == "groups":
        return (SortKey(Literal(0, T.INT64)),)
    return ()


def window_function(fn: str, args: Sequence[Expr], partition_by: Sequence[Expr] = (),
                    order_by: Sequence[SortKey] = (), frame=None):
    """`fn(args) OVER (PARTITION BY ... ORDER BY ... frame)` for a window-only function
    (row_number, rank, dense_rank, percent_rank, cume_dist, ntile, lag, lead, first_value,
    last_value, nth_value)."""
    from .expr import WindowCall

    name = F.canonical(fn)
    fdef = F.WINDOW.get(name)
    if fdef is None:
        raise BindError(f"unknown window function {fn.upper()}")
    F.check_arity(fdef, len(args), name)
    order_by = check_frame(frame, order_by)
    value_args, consts, dtype = window_arguments(name, args)
    return WindowCall(name, tuple(value_args), tuple(partition_by), tuple(order_by), frame,
                      dtype, consts)


def window_aggregate(agg: AggCall, partition_by: Sequence[Expr] = (),
                     order_by: Sequence[SortKey] = (), frame=None):
    """An aggregate over a window: `sum(x) OVER (...)` (FILTER folded into the argument)."""
    from ..errors import UnsupportedError
    from .expr import WindowCall

    distinct = window_distinct(agg)
    check_window_aggregate(agg.fn, order_by, frame)
    order_by = check_frame(frame, order_by)
    args, consts = window_aggregate_args(agg)
    if agg.filter is not None:
        args = (case([(agg.filter, args[0] if args else Literal(1, T.INT64))], None),)
        if not agg.args:
            agg = AggCall("count", args, T.INT64)
    return WindowCall(agg.fn, tuple(args), tuple(partition_by), tuple(order_by), frame,
                      agg.dtype, consts, distinct=distinct)


# aggregates whose DISTINCT form runs as a window function (the window kernel counts each
# value of a frame once); MIN and MAX are the same with and without it
_WINDOW_DISTINCT = ("count", "sum", "avg")


def window_distinct(agg: AggCall) -> bool:
    """Whether `agg OVER (...)` takes each distinct value once; an aggregate whose DISTINCT
    form pqe does not run over a window is refused by name."""
    if not agg.distinct or agg.fn in ("min", "max"):
        return False
    if agg.fn not in _WINDOW_DISTINCT:
        raise UnsupportedError(f"{agg.fn.upper()}(DISTINCT ...) as a window function is not "
                               "supported")
    return True


def window_aggregate_args(agg: AggCall) -> tuple[tuple[Expr, ...], tuple]:
    """An aggregate's value arguments and constant ones (STRING_AGG's separator) as a window
    takes them. The values are taken in the window's order: ORDER BY inside the aggregate
    (STRING_AGG(x, ',' ORDER BY y) OVER ...) is refused, not ignored."""
    from ..errors import UnsupportedError

    if agg.order_by:
        raise UnsupportedError(f"ORDER BY inside {agg.fn.upper()}(...) as a window function "
                               f"is not supported; the window's ORDER BY orders its values")
    if agg.fn == "string_agg":
        sep = agg.args[1] if len(agg.args) > 1 else Literal(",", T.TEXT)
        if not isinstance(sep, Literal):
            raise UnsupportedError("STRING_AGG's separator must be a constant")
        return agg.args[:1], (sep.value,)
    return agg.args, ()


def check_window_aggregate(fn: str, order_by: Sequence, frame) -> None:
    """An aggregate over a window: one the window kernels compute (functions' window=True),
    STDDEV / VARIANCE only over the whole partition."""
    from ..errors import UnsupportedError

    fdef = F.AGGREGATE.get(fn)
    shown = ("count" if fn == "count_star" else fn).upper()
    if fdef is None or not fdef.window:
        raise UnsupportedError(f"{shown} as a window function (OVER) is not supported")
    if fn in F.WHOLE_PARTITION_WINDOW and not whole_partition(order_by, frame):
        raise UnsupportedError(
            f"{shown} over a frame narrower than its window partition (an ORDER BY, or a "
            f"frame other than ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) is "
            f"not supported")


def whole_partition(order_by: Sequence, frame) -> bool:
    """Whether a window's frame is every row of its partition: no ORDER BY and no frame, or
    UNBOUNDED PRECEDING to UNBOUNDED FOLLOWING excluding nothing."""
    if frame is None:
        return not order_by
    return (frame.start.kind == "unbounded_preceding" and frame.end.kind == "unbounded_following"
            and frame.exclude == "no_others")


def window(plan: LogicalPlan, calls: Sequence[Expr]):
    """A Window node computing `calls` (each output column named after its function)."""
    from .logical import Window

    fields = tuple(new_field(str(c.fn), c.dtype) for c in calls)
    return Window(plan, tuple(calls), fields)


def frame(mode: str, start, end):
    """A window frame from offsets: None is UNBOUNDED, 0 the current row, -n n PRECEDING,
    +n n FOLLOWING (ROWS counts rows, RANGE compares the ORDER BY value)."""
    from .expr import Frame, FrameBound

    mode = mode.lower()
    if mode not in ("rows", "range"):
        raise BindError(f"window frames are rows or range, not {mode!r}")

    def bound(v, side: str) -> FrameBound:
        if v is None:
            return FrameBound("unbounded_preceding" if side == "start" else "unbounded_following")
        v = T.python_number(v)  # (np.int64(-1) was refused; np.bool_ still is)
        if isinstance(v, bool) or not isinstance(v, (int, decimal.Decimal, float)):
            raise BindError(f"a window frame bound is an offset (int) or None, not {v!r}")
        if not isinstance(v, int) and not (math.isfinite(v) if isinstance(v, float)
                                           else v.is_finite()):
            raise BindError(f"a window frame bound is a finite offset, not {v!r}")
        if mode == "rows" and not isinstance(v, int):
            raise BindError(f"ROWS frame offsets are integers (rows), not {v!r}")
        if v == 0:
            return FrameBound("current")
        n = abs(v)
        n = int(n) if n == int(n) else decimal.Decimal(str(n))
        return FrameBound("preceding" if v < 0 else "following", n)

    s, e = bound(start, "start"), bound(end, "end")
    order = {"unbounded_preceding": 0, "preceding": 1, "current": 2, "following": 3,
             "unbounded_following": 4}
    if order[s.kind] > order[e.kind] or (s.kind == e.kind == "preceding" and s.offset < e.offset) \
            or (s.kind == e.kind == "following" and s.offset > e.offset):
        raise BindError(f"window frame ({start}, {end}) ends before it starts")
    return Frame(mode, s, e)
