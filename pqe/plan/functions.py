"""Signatures of scalar and aggregate functions: argument coercion and result types.

One table for the whole engine: the SQL binder and the DataFrame API resolve calls here (so an
unknown function or a wrong argument fails at bind time, naming the function), and the
execution layer has one kernel per name (a test checks the two tables agree).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from .. import types as T
from ..errors import BindError, TypeMismatchError, UnsupportedError

Resolver = Callable[[str, Sequence[pa.DataType]], tuple[Sequence[pa.DataType | None], pa.DataType]]


@dataclass(frozen=True, slots=True)
class FunctionDef:
    """One function, defined once: its name, SQL spellings, signature and result type rule,
    nullability. The SQL binder derives its dispatch tables from `sqlglot` and `aliases`; the
    kernels implement it under `name` (kernels.expressions `_CALLS`, kernels.aggregate
    `_STATES`, kernels.window `WINDOW_FUNCTIONS`); tests/test_function_registry.py checks the
    tables agree."""

    name: str
    min_args: int
    max_args: int | None
    resolve: Resolver
    # "propagate": NULL in any argument gives NULL; "never": result is never NULL;
    # "custom": the result can be NULL whatever the arguments (e.g. NULLIF, division by zero).
    nulls: str = "propagate"
    # the result type refined by the values of constant arguments (None where an argument is
    # not a constant), for types that depend on them: ROUND(DECIMAL(p, s), n) has scale n.
    refine: Callable[[pa.DataType, Sequence[object]], pa.DataType] | None = None
    # sqlglot expression classes (by name: plan/ does not import sqlglot) that bind to it
    sqlglot: tuple[str, ...] = ()
    # those classes' argument keys, in the function's argument order (all they consume)
    args: tuple[str, ...] = ()
    # other SQL names for it (called as name(...))
    aliases: tuple[str, ...] = ()
    # an aggregate the window kernel also computes over frames (SUM(x) OVER (...))
    window: bool = False


SCALAR: dict[str, FunctionDef] = {}
# the planner's own functions: not callable from SQL
INTERNAL = frozenset({"pqe_mean", "pqe_assert_single_row", "pqe_interval_days_key",
                      "pqe_interval_rest_key", "pqe_interval_total_key", "pqe_negative_zero"})
COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "is_distinct_from",
                         "is_not_distinct_from"})
AGGREGATE: dict[str, FunctionDef] = {}
WINDOW: dict[str, FunctionDef] = {}
# SQL names that map onto a canonical name: derived from the registrations' `aliases`.
ALIASES: dict[str, str] = {}


def _register(table: dict[str, FunctionDef], name: str, lo: int, hi: int | None,
              resolve: Resolver, nulls: str = "propagate", refine=None,
              sqlglot: str | tuple[str, ...] = (), args: tuple[str, ...] = ("this",),
              aliases: tuple[str, ...] = (), window: bool = False) -> None:
    classes = (sqlglot,) if isinstance(sqlglot, str) else tuple(sqlglot)
    table[name] = FunctionDef(name, lo, hi, resolve, nulls, refine, classes,
                              args if classes else (), tuple(aliases), window)
    for alias in aliases:
        if alias in ALIASES and ALIASES[alias] != name:
            raise ValueError(f"alias {alias} of both {ALIASES[alias]} and {name}")
        ALIASES[alias] = name


def _fail(fn: str, types: Sequence[pa.DataType]) -> TypeMismatchError:
    args = ", ".join(T.type_name(t) for t in types)
    return TypeMismatchError(f"no function {fn}({args}): wrong argument types")


# ---- resolvers -------------------------------------------------------------------------------


def _microseconds(t: pa.DataType) -> pa.DataType | None:
    """The microsecond TIMESTAMP of a TIMESTAMP in seconds or milliseconds, else None."""
    if pa.types.is_timestamp(t) and t.unit in ("s", "ms"):
        return pa.timestamp("us", t.tz)
    return None


def _arith(fn: str, ts: Sequence[pa.DataType]):
    a, b = ts
    # date +/- integer days, date +/- interval, date - date
    if fn in ("add", "subtract") and (T.is_null(a) != T.is_null(b)) \
            and T.is_temporal(b if T.is_null(a) else a):
        # a DATE or TIMESTAMP and an untyped NULL: the NULL is a day count for a DATE, an
        # interval for a TIMESTAMP (DuckDB answers NULL; as the temporal type's own kind,
        # date + date, it was refused); NULL - a temporal value is that value's difference
        t = b if T.is_null(a) else a
        if T.is_null(a) and fn == "subtract":
            return (t, t), T.INT64 if pa.types.is_date(t) else T.INTERVAL
        step = T.INT64 if pa.types.is_date(t) else T.INTERVAL
        return ((step, None) if T.is_null(a) else (None, step)), t
    if fn in ("add", "subtract"):
        # date +/- interval is a TIMESTAMP (PostgreSQL), date +/- integer a DATE
        # a TIMESTAMP in seconds or milliseconds moves by an interval in microseconds (as
        # DuckDB's TIMESTAMP_S/_MS do): in its own unit '1 microsecond' was lost
        if T.is_interval(b) and (fine := _microseconds(a)) is not None:
            return (fine, None), fine
        if fn == "add" and T.is_interval(a) and (fine := _microseconds(b)) is not None:
            return (None, fine), fine
        # an integer is a number of days for a DATE only: TIMESTAMP + 1 is refused, as in
        # PostgreSQL and DuckDB (it was a day later; seconds or an epoch were as likely meant)
        if T.is_temporal(a) and (T.is_interval(b) or T.is_integer(b) and pa.types.is_date(a)):
            return (None, None), T.TIMESTAMP if pa.types.is_date(a) and T.is_interval(b) else a
        if fn == "add" and T.is_temporal(b) and (
                T.is_interval(a) or T.is_integer(a) and pa.types.is_date(b)):
            return (None, None), T.TIMESTAMP if pa.types.is_date(b) and T.is_interval(a) else b
        if fn == "subtract" and pa.types.is_date(a) and pa.types.is_date(b):
            return (None, None), T.INT64
        if fn == "subtract" and T.is_temporal(a) and T.is_temporal(b):
            # TIMESTAMP - TIMESTAMP (or a DATE, as its midnight): an INTERVAL of days and
            # the rest, in microseconds (DuckDB, PostgreSQL); two TIMESTAMPTZ by their
            # instants, a zone-less one beside a zoned one taken as UTC (pqe's session
            # time zone), as PostgreSQL casts it to TIMESTAMPTZ in its session's zone
            zones = [t.tz if pa.types.is_timestamp(t) else None for t in (a, b)]
            if any(zones):
                zone = next(z for z in zones if z)
                return tuple(pa.timestamp("us", z or zone) for z in zones), T.INTERVAL
            if not any(zones):
                return (T.TIMESTAMP, T.TIMESTAMP), T.INTERVAL
        if T.is_interval(a) and T.is_interval(b):
            return (None, None), T.INTERVAL
    if fn == "multiply" and (T.is_interval(a) and T.is_integer(b) or T.is_interval(b) and T.is_integer(a)):
        return (None, None), T.INTERVAL
    if fn in ("divide", "modulo") and pa.types.is_uint64(a) | pa.types.is_uint64(b) \
            and all(T.is_integer(t) or T.is_null(t) for t in (a, b)):
        # with a UBIGINT, neither BIGINT nor UBIGINT holds both operands: the kernel divides
        # their magnitudes as UBIGINT and puts the sign back (expressions._unsigned_divide).
        # UBIGINT % n is a UBIGINT, as the dividend's sign is the remainder's (HASH(x) % n
        # buckets); a quotient is a UBIGINT of two unsigned operands, a DECIMAL(20,0) of a
        # UBIGINT by a signed divisor (2^64 - 1 / -1; DuckDB: HUGEINT), else a BIGINT (it is
        # at most the signed dividend)
        ops = tuple(T.INT64 if T.is_null(t) else t for t in (a, b))
        if fn == "modulo":
            out = pa.uint64() if pa.types.is_unsigned_integer(ops[0]) else T.INT64
        elif all(pa.types.is_unsigned_integer(t) for t in ops):
            out = pa.uint64()
        else:
            out = T.as_decimal(pa.uint64()) if pa.types.is_uint64(ops[0]) else T.INT64
        return ops, out
    if fn in ("add", "subtract", "multiply") and pa.types.is_uint64(a) | pa.types.is_uint64(b) \
            and all(T.is_integer(t) or T.is_null(t) for t in (a, b)):
        # a UBIGINT past BIGINT: DECIMAL(20,0) arithmetic (DuckDB: HUGEINT), as a UBIGINT
        # meets a signed integer; in BIGINT 2^64 - 1 - 1 was an error
        a, b = (T.as_decimal(T.INT64 if T.is_null(t) else t) for t in (a, b))
        return (a, b), T.arithmetic_type(fn, a, b)
    out = T.arithmetic_type(fn, a, b)
    if T.is_null(out):
        return (None, None), T.NULL
    if T.is_integer(out):
        return (T.INT64, T.INT64), out
    if T.is_floating(out):
        # both operands in the result type: REAL op REAL (an integer or DECIMAL operand is
        # cast to REAL first, as DuckDB does) computes in single precision and yields REAL
        # (Arrow's float32 kernels round each result to float32); DOUBLE otherwise
        return (out, out), out
    if fn == "modulo":
        if not (T.is_null(a) or T.is_null(b)) and T.modulo_by_wider(a, b):
            # (past 38 digits the remainder's type may hold neither operand, T.arithmetic_type:
            # each is read as it is, and the kernel divides them wider)
            return (T.as_decimal(a), T.as_decimal(b)), out
        return (out, out), out
    # decimal add/subtract/multiply: operands keep their own (decimal) types; an untyped
    # NULL takes the other operand's (as in T.arithmetic_type)
    return (T.as_decimal(b if T.is_null(a) else a), T.as_decimal(a if T.is_null(b) else b)), out


def _negate(fn, ts):
    (a,) = ts
    if pa.types.is_uint64(a):  # (past BIGINT: as DECIMAL(20,0), see _arith)
        return (T.as_decimal(a),), T.as_decimal(a)
    if T.is_integer(a):
        return (T.INT64,), T.INT64
    if T.is_numeric(a) or T.is_interval(a) or T.is_null(a):
        return (None,), a
    raise _fail(fn, ts)


def _compare(fn, ts):
    a, b = ts
    common = T.common_type(a, b)
    if common is None:
        raise TypeMismatchError(
            f"cannot compare {T.type_name(a)} with {T.type_name(b)}")
    # (INTERVALs compare normalized, a month 30 days: kernels.expressions._compare_intervals)
    if T.is_nested(common):  # (Arrow has no comparison kernel for them)
        raise UnsupportedError(f"comparing {T.type_name(common)} values is not supported")
    return (common, common), T.BOOLEAN


def _logical(fn, ts):
    for t in ts:
        if not (T.is_boolean(t) or T.is_null(t)):
            raise TypeMismatchError(
                f"argument of {fn.upper()} must be BOOLEAN, not {T.type_name(t)}")
    return tuple(T.BOOLEAN for _ in ts), T.BOOLEAN


def _is_null(fn, ts):
    return (None,), T.BOOLEAN


def _text_args(n_text: int, ret: pa.DataType, rest: Sequence[pa.DataType] = ()):
    def resolve(fn, ts):
        for t in ts[:n_text]:
            if not (T.is_text(t) or T.is_null(t)):
                raise _fail(fn, ts)
        casts = [T.TEXT] * min(n_text, len(ts)) + list(rest)[: max(0, len(ts) - n_text)]
        for t, want in zip(ts[n_text:], rest, strict=False):
            if want == T.INT64 and not (T.is_integer(t) or T.is_null(t)):
                raise _fail(fn, ts)
        return casts, ret
    return resolve


def _length(fn, ts):
    """LENGTH / LEN of text (characters) or of a list (elements), as DuckDB."""
    if ts and is_list(ts[0]):
        return (None,), T.INT64
    return _text_args(1, T.INT64)(fn, ts)


def _substring(fn, ts):
    if not (T.is_text(ts[0]) or T.is_null(ts[0])):
        raise _fail(fn, ts)
    for t in ts[1:]:
        if not (T.is_integer(t) or T.is_null(t)):
            raise _fail(fn, ts)
    return [T.TEXT] + [T.INT64] * (len(ts) - 1), T.TEXT


def _concat(fn, ts):
    # || and concat() accept any types, rendering them as text (PostgreSQL behaviour); a
    # LIST, STRUCT or MAP has no text form pqe writes (Arrow's cast failed at run time)
    nested = [t for t in ts if T.is_nested(t)]
    if nested:
        raise UnsupportedError("|| and CONCAT of LIST, STRUCT or MAP values are not "
                               "supported")
    if fn == "concat" and any(T.is_blob(t) for t in ts) \
            and all(T.is_blob(t) or T.is_null(t) for t in ts):
        # BLOB || BLOB is the bytes one after the other, a BLOB (DuckDB); as text the bytes
        # had to be UTF-8 ('Invalid UTF8 payload' for x'ff')
        return [T.BINARY] * len(ts), T.BINARY
    return [T.TEXT] * len(ts), T.TEXT


def _same_as_common(fn, ts):
    if fn in ("greatest", "least") and any(T.is_nested(t) for t in ts):
        raise UnsupportedError(f"{fn.upper()} of LIST, STRUCT or MAP values is not supported")
    if fn in ("greatest", "least") and any(T.is_interval(t) for t in ts):
        raise UnsupportedError(f"{fn.upper()} of INTERVAL values is not supported")
    common = ts[0]
    for t in ts[1:]:
        nxt = T.common_type(common, t)
        if nxt is None:
            raise TypeMismatchError(
                f"{fn.upper()} arguments have no common type: "
                + ", ".join(T.type_name(t) for t in ts))
        common = nxt
    return [common] * len(ts), common


def _numeric_same(fn, ts):
    (a, *rest) = ts
    if not (T.is_numeric(a) or T.is_null(a)):
        raise _fail(fn, ts)
    for t in rest:
        if not (T.is_integer(t) or T.is_null(t)):
            raise _fail(fn, ts)
    if T.is_null(a):
        a = T.FLOAT64
    if fn == "abs" and pa.types.is_uint64(a):
        return [a] + [T.INT64] * len(rest), a  # (never negative: itself)
    if fn == "abs" and T.is_integer(a):
        a = T.INT64
    return [a] + [T.INT64] * len(rest), a


def _round(fn, ts):
    a = ts[0]
    if not (T.is_numeric(a) or T.is_null(a)):
        raise _fail(fn, ts)
    if len(ts) > 1 and not (T.is_integer(ts[1]) or T.is_null(ts[1])):
        raise _fail(fn, ts)
    out = T.FLOAT64 if T.is_null(a) else (T.INT64 if T.is_integer(a) else a)
    return [out] + [T.INT64] * (len(ts) - 1), out


def round_type(t: pa.DataType, digits: int) -> pa.DataType:
    """The type of ROUND(DECIMAL(p, s), digits), as DuckDB gives it: unchanged when nothing is
    dropped (digits >= s), else scale max(digits, 0) (PostgreSQL: 1.25 rounds to 1.3, not
    1.30). Dropping a decimal frees a digit for the carry (9.95 -> 10.0); with no decimals
    to drop (s = 0, digits < 0) the carry needs one more (999 -> 1000), unless every value
    rounds to 0 (-digits > p)."""
    if digits >= t.scale:
        return t
    if t.scale == 0 and -digits <= t.precision:
        return T.decimal(t.precision + 1, 0)
    return T.decimal(t.precision, max(digits, 0))


def _digits_refine(type_of: Callable[[pa.DataType, int], pa.DataType]):
    """ROUND's and TRUNC's DECIMAL result type, from their constant digits."""
    def refine(ret: pa.DataType, constants: Sequence[object]) -> pa.DataType:
        digits = constants[1] if len(constants) > 1 else 0
        if T.is_decimal(ret) and isinstance(digits, int):
            return type_of(ret, digits)
        return ret  # non-constant digits: the kernel refuses them
    return refine


def trunc_type(t: pa.DataType, digits: int) -> pa.DataType:
    """The type of TRUNC(DECIMAL(p, s), digits), as DuckDB gives it: unchanged when nothing is
    dropped, else scale max(digits, 0) (truncation never carries, so no digit is added)."""
    if digits >= t.scale:
        return t
    return T.decimal(t.precision, max(digits, 0))


def _floor_ceil(fn, ts):
    (a,) = ts
    if T.is_integer(a):
        return (T.INT64,), T.INT64
    if T.is_decimal(a):
        return (a,), T.decimal(a.precision, 0)
    if T.is_floating(a):
        return (a,), a  # a REAL stays REAL (DuckDB)
    if T.is_null(a):
        return (T.FLOAT64,), T.FLOAT64
    raise _fail(fn, ts)


def _float_math(fn, ts):
    for t in ts:
        if not (T.is_numeric(t) or T.is_null(t)):
            raise _fail(fn, ts)
    return [T.FLOAT64] * len(ts), T.FLOAT64


def _bitwise(fn, ts):
    """& | XOR ~ of integers, in the wider of their types (DuckDB: TINYINT & BIGINT is a
    BIGINT). UBIGINT meets only unsigned types: with a signed one the common type is a
    DECIMAL, which has no bits."""
    if not all(T.is_integer(t) or T.is_null(t) for t in ts):
        raise _fail(fn, ts)
    out = None
    for t in ts:
        if not T.is_null(t):
            out = t if out is None else T.common_type(out, t)
    out = out or T.INT64  # (NULL & NULL: DuckDB's BIGINT)
    if not T.is_integer(out):
        raise TypeMismatchError(f"no function {fn} of UBIGINT and a signed integer: cast one "
                                "of them")
    return [out] * len(ts), out


def _last_day(fn, ts):
    """LAST_DAY(date or timestamp): the DATE of its month's last day (DuckDB; a TIMESTAMPTZ's
    in the session time zone, UTC)."""
    (a,) = ts
    if T.is_null(a):
        return (T.DATE,), T.DATE
    if not (pa.types.is_date(a) or pa.types.is_timestamp(a)):
        raise _fail(fn, ts)
    return (a,), T.DATE


def _float_test(fn, ts):
    """ISNAN / ISINF / ISFINITE of a number: a REAL or DOUBLE as it is, other numbers as DOUBLE
    (never NaN nor infinite)."""
    (a,) = ts
    if not (T.is_numeric(a) or T.is_null(a)):
        raise _fail(fn, ts)
    return ((a if T.is_floating(a) else T.FLOAT64),), T.BOOLEAN


def _sign(fn, ts):
    (a,) = ts
    if not (T.is_numeric(a) or T.is_null(a)):
        raise _fail(fn, ts)
    return (T.FLOAT64 if not T.is_integer(a) else T.INT64,), T.INT64


_TIME_PARTS = ("hour", "minute", "second", "millisecond", "microsecond", "epoch")


# the fields EXTRACT reads from an INTERVAL (kernels.udfs has a kernel for each)
INTERVAL_PARTS = ("epoch", "year", "month", "day", "hour", "minute", "second", "millisecond",
                   "microsecond")


def _extract(fn, ts):
    (a,) = ts
    if T.is_interval(a):
        if fn.removeprefix("extract_") not in INTERVAL_PARTS:
            raise UnsupportedError(f"EXTRACT({fn.removeprefix('extract_')}) of an INTERVAL is "
                                   f"not supported")
    elif pa.types.is_time(a):
        # a time of day has clock fields (and its seconds since midnight as epoch: DuckDB)
        if fn.removeprefix("extract_") not in _TIME_PARTS:
            raise TypeMismatchError(f"EXTRACT({fn.removeprefix('extract_')}) of a TIME is not "
                                    f"defined (a TIME has no date)")
    elif not (T.is_temporal(a) or T.is_null(a)):
        raise TypeMismatchError(f"EXTRACT needs a DATE, TIMESTAMP, TIME or INTERVAL, not "
                                f"{T.type_name(a)}")
    # the seconds since 1970 with their fraction (DuckDB, PostgreSQL)
    return (None,), T.FLOAT64 if fn == "extract_epoch" else T.INT64


def _date_trunc(fn, ts):
    part, a = ts
    if not T.is_text(part) or not (T.is_temporal(a) or T.is_null(a)):
        raise _fail(fn, ts)
    if pa.types.is_date(a) or pa.types.is_timestamp(a) and a.tz is None:
        # a TIMESTAMP whatever the unit, as DuckDB's, of a DATE too (kernels: a TIMESTAMP_NS
        # is rounded to the microsecond before it is truncated)
        return (T.TEXT, None), pa.timestamp("us")
    if pa.types.is_timestamp(a) and a.unit == "ns":
        # a TIMESTAMPTZ_NS truncates to a (microsecond) TIMESTAMPTZ, as DuckDB's: a floor
        # before 1677-09-21 has no nanosecond count
        return (T.TEXT, None), pa.timestamp("us", a.tz)
    return (T.TEXT, None), a


def _date_diff(fn, ts):
    """DATE_DIFF('part', start, end): of two dates or timestamps, or two TIMEs (DuckDB)."""
    part, a, b = ts
    if T.is_text(part) and pa.types.is_time(a) and pa.types.is_time(b):
        return (T.TEXT, T.TIME, T.TIME), T.INT64
    if not T.is_text(part) or not (T.is_temporal(a) and T.is_temporal(b)):
        raise _fail(fn, ts)
    common = T.common_type(a, b)
    if pa.types.is_timestamp(common) and common.unit == "ns" and not (
            pa.types.is_timestamp(a) and a.unit == "ns" and pa.types.is_timestamp(b)
            and b.unit == "ns"):
        # a DATE or TIMESTAMP against a TIMESTAMP_NS: in microseconds, as DuckDB counts
        # (a DATE outside 1677-2262 failed the cast to nanoseconds)
        common = pa.timestamp("us", common.tz)
    return (T.TEXT, common, common), T.INT64


def _date_sub(fn, ts):
    """DATE_SUB('part', start, end): date_diff's arguments (DuckDB). A TIMESTAMPTZ with a
    DATE or TIMESTAMP counts as two TIMESTAMPTZs, on DuckDB's zoned calendar (kernels), the
    other read in the session time zone, UTC (the common type, a TIMESTAMP, counted
    otherwise)."""
    part, a, b = ts
    zoned = [t for t in (a, b) if pa.types.is_timestamp(t) and t.tz is not None]
    if T.is_text(part) and zoned and all(pa.types.is_date(t) or pa.types.is_timestamp(t)
                                         for t in (a, b)):
        common = pa.timestamp("us", zoned[0].tz)
        return (T.TEXT, common, common), T.INT64
    return _date_diff(fn, ts)


def _const(ret: pa.DataType):
    def resolve(fn, ts):
        return (), ret
    return resolve


def _to_timestamp(fn, ts):
    """to_timestamp(seconds since 1970-01-01 UTC): a TIMESTAMPTZ (PostgreSQL, DuckDB); an
    integer count exactly, a DOUBLE or DECIMAL one to the nearest microsecond."""
    (a,) = ts
    if T.is_null(a):
        return (T.INT64,), pa.timestamp("us", "UTC")
    if T.is_integer(a):
        return (T.INT64,), pa.timestamp("us", "UTC")
    if T.is_numeric(a):
        return (T.FLOAT64,), pa.timestamp("us", "UTC")
    raise _fail(fn, ts)


def _make_date(fn, ts):
    """make_date(year, month, day) of integers: a DATE (PostgreSQL, DuckDB)."""
    if not all(T.is_integer(t) or T.is_null(t) for t in ts):
        raise _fail(fn, ts)
    return (T.INT64, T.INT64, T.INT64), T.DATE


def _nullif(fn, ts):
    casts, common = _same_as_common(fn, ts)
    return casts, common


def _like(fn, ts):
    for t in ts:
        if not (T.is_text(t) or T.is_null(t)):
            raise TypeMismatchError(
                f"{fn.upper()} needs text arguments, not {T.type_name(t)}")
    return [T.TEXT] * len(ts), T.BOOLEAN


def _regexp_replace(fn, ts):
    return _text_args(3, T.TEXT, [T.TEXT])(fn, ts)



def _regexp_replace_args(fn, ts):
    """REGEXP_REPLACE(s, pattern, replacement[, options]): options is a constant string of
    DuckDB's flags (the kernel reads 'g' and 'i', refuses the others)."""
    return _text_args(4, T.TEXT)(fn, ts)


def _regexp_extract(fn, ts):
    if len(ts) > 2 and not (T.is_integer(ts[2]) or T.is_null(ts[2])):
        raise _fail(fn, ts)
    return _text_args(2, T.TEXT, [T.INT64])(fn, ts)


def _concat_ws(fn, ts):
    # the separator is text, the rest any type rendered as text (DuckDB, PostgreSQL)
    if not (T.is_text(ts[0]) or T.is_null(ts[0])):
        raise _fail(fn, ts)
    return [T.TEXT] * len(ts), T.TEXT


def _chr(fn, ts):
    if not (T.is_integer(ts[0]) or T.is_null(ts[0])):
        raise _fail(fn, ts)
    return (T.INT64,), T.TEXT


def _octet_length(fn, ts):
    (a,) = ts
    if T.is_text(a) or pa.types.is_binary(a) or T.is_null(a):
        return (None,), T.INT64
    raise _fail(fn, ts)


def _overlay(fn, ts):
    for t in ts[:2]:
        if not (T.is_text(t) or T.is_null(t)):
            raise _fail(fn, ts)
    for t in ts[2:]:
        if not (T.is_integer(t) or T.is_null(t)):
            raise _fail(fn, ts)
    return [T.TEXT, T.TEXT] + [T.INT64] * (len(ts) - 2), T.TEXT


def _hash(fn, ts):
    (a,) = ts
    if is_list(a) or pa.types.is_struct(a):
        raise TypeMismatchError(f"HASH of {T.type_name(a)} is not supported")
    return (None,), pa.uint64()


def _any_to(ret: pa.DataType):
    def resolve(fn, ts):
        return [None] * len(ts), ret
    return resolve


def _strftime(fn, ts):
    a, f = ts
    if not (T.is_temporal(a) or T.is_null(a)) or not (T.is_text(f) or T.is_null(f)):
        raise _fail(fn, ts)
    return (None, T.TEXT), T.TEXT


def _strptime(fn, ts):
    return _text_args(2, T.TIMESTAMP)(fn, ts)


def is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)


def _list_value(fn, ts):
    """LIST_VALUE(a, b, ...) and [a, b, ...]: a list of the arguments' common type."""
    if not ts:
        return [], pa.list_(T.NULL)  # [] is NULL[] in DuckDB
    elem = T.NULL
    for t in ts:
        nxt = T.common_type(elem, t)
        if nxt is None:
            raise TypeMismatchError("list elements have no common type: "
                                    + ", ".join(T.type_name(t) for t in ts))
        elem = nxt
    if T.is_null(elem):
        elem = T.INT32  # [NULL] or []: DuckDB types an all-NULL list INTEGER[]
    return [elem] * len(ts), pa.list_(elem)


def _list_length(fn, ts):
    (a,) = ts
    if not (is_list(a) or T.is_null(a)):
        raise _fail(fn, ts)
    return (None,), T.INT64


def _list_contains(fn, ts):
    a, x = ts
    if T.is_null(a):
        return (None, None), T.BOOLEAN
    if not is_list(a):
        raise _fail(fn, ts)
    elem = a.value_type
    common = T.common_type(elem, x)
    if common is None:
        raise TypeMismatchError(f"LIST_CONTAINS: cannot look for a {T.type_name(x)} in a "
                                f"{T.type_name(a)}")
    if T.is_nested(common):
        raise UnsupportedError(f"LIST_CONTAINS of {T.type_name(common)} values is not "
                               f"supported (comparing them is not)")
    return (pa.list_(common), common), T.BOOLEAN


def _list_extract(fn, ts):
    a, i = ts
    if not is_list(a) or not (T.is_integer(i) or T.is_null(i)):
        raise _fail(fn, ts)
    return (None, T.INT64), a.value_type


def _struct_extract(fn, ts):
    a, name = ts
    if not pa.types.is_struct(a) or not T.is_text(name):
        raise _fail(fn, ts)
    # the field's type depends on the constant name: builder.struct_field types the call
    return (None, T.TEXT), T.NULL


# arithmetic and comparison operators
for _op in ("add", "subtract", "multiply"):
    _register(SCALAR, _op, 2, 2, _arith)
_register(SCALAR, "divide", 2, 2, _arith, nulls="custom")  # x / 0 is NULL
_register(SCALAR, "modulo", 2, 2, _arith, nulls="custom", aliases=("mod",))
_register(SCALAR, "negate", 1, 1, _negate)
for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    _register(SCALAR, _op, 2, 2, _compare)
_register(SCALAR, "is_distinct_from", 2, 2, _compare, nulls="never")
_register(SCALAR, "is_not_distinct_from", 2, 2, _compare, nulls="never")
_register(SCALAR, "and", 2, 2, _logical)
_register(SCALAR, "or", 2, 2, _logical)
_register(SCALAR, "not", 1, 1, _logical)
_register(SCALAR, "is_null", 1, 1, _is_null, nulls="never")
_register(SCALAR, "is_not_null", 1, 1, _is_null, nulls="never")
_register(SCALAR, "is_true", 1, 1, _logical, nulls="never")
_register(SCALAR, "is_false", 1, 1, _logical, nulls="never")
_register(SCALAR, "like", 2, 2, _like)
_register(SCALAR, "ilike", 2, 2, _like)
_register(SCALAR, "regexp_matches", 2, 2, _like, sqlglot="RegexpLike",
          args=("this", "expression"), aliases=("regexp_like",))
_register(SCALAR, "starts_with", 2, 2, _like, sqlglot="StartsWith", args=("this", "expression"))
_register(SCALAR, "ends_with", 2, 2, _like, sqlglot="EndsWith", args=("this", "expression"))
_register(SCALAR, "contains", 2, 2, _like, sqlglot="Contains", args=("this", "expression"))
# text
_register(SCALAR, "concat", 1, None, _concat)  # a || b: NULL if an argument is
_register(SCALAR, "concat_skip_nulls", 1, None, _concat, nulls="never",  # CONCAT(a, b, ...)
          sqlglot="Concat", args=("expressions",))
_register(SCALAR, "substring", 2, 3, _substring, aliases=("substr",))
_register(SCALAR, "upper", 1, 1, _text_args(1, T.TEXT), sqlglot="Upper", aliases=("ucase",))
_register(SCALAR, "lower", 1, 1, _text_args(1, T.TEXT), sqlglot="Lower", aliases=("lcase",))
_register(SCALAR, "trim", 1, 2, _text_args(2, T.TEXT))
_register(SCALAR, "ltrim", 1, 2, _text_args(2, T.TEXT))
_register(SCALAR, "rtrim", 1, 2, _text_args(2, T.TEXT))
_register(SCALAR, "length", 1, 1, _length, sqlglot="Length",
          aliases=("char_length", "character_length", "len"))
_register(SCALAR, "replace", 3, 3, _text_args(3, T.TEXT), sqlglot="Replace",
          args=("this", "expression", "replacement"))
_register(SCALAR, "position", 2, 2, _text_args(2, T.INT64), sqlglot="StrPosition",
          args=("this", "substr"), aliases=("strpos", "instr"))
_register(SCALAR, "split_part", 3, 3, _text_args(2, T.TEXT, [T.INT64]), sqlglot="SplitPart",
          args=("this", "delimiter", "part_index"))
_register(SCALAR, "reverse", 1, 1, _text_args(1, T.TEXT), sqlglot="Reverse")
_register(SCALAR, "left", 2, 2, _text_args(1, T.TEXT, [T.INT64]), sqlglot="Left",
          args=("this", "expression"))
_register(SCALAR, "right", 2, 2, _text_args(1, T.TEXT, [T.INT64]), sqlglot="Right",
          args=("this", "expression"))
# sqlglot parses LPAD and RPAD as one class, Pad (is_left says which): the binder picks rpad
_register(SCALAR, "lpad", 2, 3, _text_args(1, T.TEXT, [T.INT64, T.TEXT]), sqlglot="Pad",
          args=("this", "expression", "fill_pattern"))
_register(SCALAR, "rpad", 2, 3, _text_args(1, T.TEXT, [T.INT64, T.TEXT]))
_register(SCALAR, "repeat", 2, 2, _text_args(1, T.TEXT, [T.INT64]), sqlglot="Repeat",
          args=("this", "times"))
# sqlglot's default dialect files the 4th argument (DuckDB's options) under `position`, and
# REGEXP_EXTRACT's 3rd (DuckDB's group) under `position` too
_register(SCALAR, "regexp_replace", 3, 4, _regexp_replace_args, sqlglot="RegexpReplace",
          args=("this", "expression", "replacement", "position"))
_register(SCALAR, "regexp_extract", 2, 3, _regexp_extract, sqlglot="RegexpExtract",
          args=("this", "expression", "position"))
# CONCAT_WS(sep, a, ...): NULL arguments are skipped, a NULL separator gives NULL
_register(SCALAR, "concat_ws", 2, None, _concat_ws, nulls="custom", sqlglot="ConcatWs",
          args=("expressions",))
_register(SCALAR, "chr", 1, 1, _chr, sqlglot="Chr", args=("expressions",))
_register(SCALAR, "ascii", 1, 1, _text_args(1, T.INT64), sqlglot="Ascii")
_register(SCALAR, "octet_length", 1, 1, _octet_length, aliases=("strlen",))
_register(SCALAR, "translate", 3, 3, _text_args(3, T.TEXT), sqlglot="Translate",
          args=("this", "from_", "to"))
_register(SCALAR, "overlay", 3, 4, _overlay, sqlglot="Overlay",
          args=("this", "expression", "from_", "for_"))
_register(SCALAR, "md5", 1, 1, _text_args(1, T.TEXT), sqlglot="MD5")
# a deterministic 64-bit UBIGINT hash of the value (kernels.hashing's splitmix64-mixed
# words, salted and mixed once more in kernels.scalars), the same in every process and run;
# NULL has a hash too (not NULL), as in DuckDB. Its values are not DuckDB's.
_register(SCALAR, "hash", 1, 1, _hash, nulls="never")
# the argument's type name as DuckDB spells it: a constant (the kernel compiles it to the
# name; constant folding makes it a literal); the argument is never evaluated
_register(SCALAR, "typeof", 1, 1, _any_to(T.TEXT), nulls="never", sqlglot="Typeof")
# math
_register(SCALAR, "abs", 1, 1, _numeric_same, sqlglot="Abs")
_register(SCALAR, "round", 1, 2, _round, refine=_digits_refine(round_type), sqlglot="Round",
          args=("this", "decimals"))
_register(SCALAR, "trunc", 1, 2, _round, refine=_digits_refine(trunc_type), sqlglot="Trunc",
          args=("this", "decimals"))
_register(SCALAR, "floor", 1, 1, _floor_ceil, sqlglot="Floor")
_register(SCALAR, "ceil", 1, 1, _floor_ceil, sqlglot="Ceil", aliases=("ceiling",))
_register(SCALAR, "sign", 1, 1, _sign, sqlglot="Sign")
_register(SCALAR, "bitwise_and", 2, 2, _bitwise)
_register(SCALAR, "bitwise_or", 2, 2, _bitwise)
_register(SCALAR, "bitwise_xor", 2, 2, _bitwise, sqlglot="BitwiseXor",
          args=("this", "expression"))
_register(SCALAR, "bitwise_not", 1, 1, _bitwise)
_register(SCALAR, "last_day", 1, 1, _last_day, sqlglot="LastDay")
_register(SCALAR, "to_timestamp", 1, 1, _to_timestamp)
_register(SCALAR, "make_date", 3, 3, _make_date)
_register(SCALAR, "isnan", 1, 1, _float_test, sqlglot="IsNan")
_register(SCALAR, "isinf", 1, 1, _float_test, sqlglot="IsInf")
_register(SCALAR, "isfinite", 1, 1, _float_test)
for _fn, _cls, _aliases in (("sqrt", "Sqrt", ()), ("exp", "Exp", ()), ("ln", "Ln", ()),
                            ("log10", "Log", ("log",)), ("log2", (), ()), ("sin", "Sin", ()),
                            ("cos", "Cos", ()), ("tan", "Tan", ()), ("asin", "Asin", ()),
                            ("acos", "Acos", ()), ("atan", "Atan", ())):
    _register(SCALAR, _fn, 1, 1, _float_math, nulls="custom", sqlglot=_cls, aliases=_aliases)
_register(SCALAR, "power", 2, 2, _float_math, sqlglot="Pow", args=("this", "expression"),
          aliases=("pow",))
# (sqlglot parses these into their own classes: registered without them, SQL refused them)
_register(SCALAR, "atan2", 2, 2, _float_math, sqlglot="Atan2", args=("this", "expression"))
_register(SCALAR, "pi", 0, 0, _const(T.FLOAT64), sqlglot="Pi", args=())
# conditional
_register(SCALAR, "coalesce", 1, None, _same_as_common, nulls="custom", sqlglot="Coalesce",
          args=("this", "expressions"), aliases=("ifnull", "nvl"))
_register(SCALAR, "nullif", 2, 2, _nullif, nulls="custom", sqlglot="Nullif",
          args=("this", "expression"))
# NULL arguments are skipped: NULL only when all are (PostgreSQL, DuckDB)
_register(SCALAR, "greatest", 1, None, _same_as_common, nulls="custom", sqlglot="Greatest",
          args=("this", "expressions"))
_register(SCALAR, "least", 1, None, _same_as_common, nulls="custom", sqlglot="Least",
          args=("this", "expressions"))
# date/time
# each part also as DuckDB's function of it: year(d) is EXTRACT(year FROM d)
_PART_FUNCTIONS = {
    "year": (("Year",), ()), "quarter": (("Quarter",), ()), "month": (("Month",), ()),
    "week": (("Week", "WeekOfYear"), ("weekofyear",)),
    "day": (("Day", "DayOfMonth"), ("dayofmonth",)),
    "dow": (("DayOfWeek",), ("weekday", "dayofweek")), "doy": (("DayOfYear",), ("dayofyear",)),
    "hour": (("Hour",), ()), "minute": (("Minute",), ()), "second": (("Second",), ()),
    "millisecond": ((), ("millisecond",)), "microsecond": ((), ("microsecond",)),
    "epoch": ((), ("epoch",)), "isodow": (("DayOfWeekIso",), ("isodow",)),
    "isoyear": ((), ("isoyear",)),
}
for _part, (_classes, _names) in _PART_FUNCTIONS.items():
    _register(SCALAR, f"extract_{_part}", 1, 1, _extract, sqlglot=_classes, aliases=_names)
_register(SCALAR, "date_trunc", 2, 2, _date_trunc, aliases=("datetrunc",))
_register(SCALAR, "date_diff", 3, 3, _date_diff, aliases=("datediff",))
# DuckDB's DATE_SUB('part', start, end): the whole parts elapsed (date_diff counts the part
# boundaries crossed); kernels.expressions._date_sub
_register(SCALAR, "date_sub", 3, 3, _date_sub, aliases=("datesub",))
_register(SCALAR, "strftime", 2, 2, _strftime)
_register(SCALAR, "strptime", 2, 2, _strptime)
# a DOUBLE in [0, 1), a new one for every row (Arrow's `random`, seeded from the system's
# entropy: not repeatable, and pqe has no SETSEED)
_register(SCALAR, "random", 0, 0, _const(T.FLOAT64), nulls="never", sqlglot="Rand", args=())
# lists: [a, b], LIST_VALUE(a, b); LEN / ARRAY_LENGTH; LIST_CONTAINS; l[i] (1-based)
_register(SCALAR, "list_value", 0, None, _list_value, nulls="never", sqlglot="Array",
          args=("expressions",), aliases=("list_pack",))
_register(SCALAR, "list_length", 1, 1, _list_length, sqlglot="ArraySize",
          aliases=("array_length",))
_register(SCALAR, "list_contains", 2, 2, _list_contains, nulls="custom",
          sqlglot="ArrayContains", args=("this", "expression"),
          aliases=("array_contains", "list_has", "array_has"))
_register(SCALAR, "list_extract", 2, 2, _list_extract, nulls="custom",
          aliases=("list_element", "array_extract"))
# s.x, s['x'], STRUCT_EXTRACT(s, 'x'): the name is a constant
_register(SCALAR, "struct_extract", 2, 2, _struct_extract, nulls="custom",
          sqlglot="StructExtract", args=("this", "expression"))
# one value per statement, taken when it is bound (the binder makes it a literal)
_register(SCALAR, "current_date", 0, 0, _const(T.DATE), nulls="never", sqlglot="CurrentDate",
          args=())
# internal: fails the query when a correlated scalar subquery yields several rows for a row
_register(SCALAR, "pqe_assert_single_row", 1, 1, lambda fn, ts: ((T.INT64,), T.BOOLEAN), nulls="never")
# internal: whether a float is -0.0 (equal to 0.0 in SQL, told apart where a correlated
# subquery runs once per distinct outer value: CAST(-0.0 AS VARCHAR) is '-0.0')
_register(SCALAR, "pqe_negative_zero", 1, 1, lambda fn, ts: ((None,), T.BOOLEAN))
# internal: AVG's value from a combined SUM (integer or DECIMAL) and COUNT, rounded once
# (ROLLUP and eager aggregation rebuild AVG from them; NULL where the count is 0 or NULL)
_register(SCALAR, "pqe_mean", 2, 2, lambda fn, ts: ((None, T.INT64), T.FLOAT64), nulls="custom")
# internal: an INTERVAL as the (days, nanoseconds within the day) pair it sorts and compares
# by, a month being 30 days (INTERVAL '1 month' = INTERVAL '30 days', DuckDB, PostgreSQL):
# ORDER BY and a window's keys sort and partition by the pair (physical planner)
# and MIN / MAX take the interval of the largest or smallest normalized length, in
# nanoseconds (plan.builder.aggregate_call)
for _which in ("days", "rest"):
    _register(SCALAR, f"pqe_interval_{_which}_key", 1, 1, lambda fn, ts: ((None,), T.INT64))
_register(SCALAR, "pqe_interval_total_key", 1, 1,
          lambda fn, ts: ((None,), pa.decimal128(38, 0)))
# one value per statement, taken when it is bound (the binder makes it a literal)
_register(SCALAR, "current_timestamp", 0, 0, _const(T.TIMESTAMP), nulls="never",
          sqlglot="CurrentTimestamp", args=(), aliases=("now", "get_current_timestamp",
                                                         "transaction_timestamp"))


# ---- aggregates --------------------------------------------------------------------------------


def _agg_count(fn, ts):
    return [None] * len(ts), T.INT64


def _agg_sum(fn, ts):
    """PostgreSQL's result types, all exact (kernels.aggregate, never wrapping): SUM of
    SMALLINT/INTEGER is BIGINT (an error when the total does not fit), SUM of BIGINT is
    DECIMAL(38,0), SUM of DECIMAL(p,s) is DECIMAL(38,s) (an error past 38 digits)."""
    (a,) = ts
    if T.is_boolean(a):
        return (T.INT32,), T.INT64
    if T.is_integer(a):
        if pa.types.is_uint64(a):
            return (T.as_decimal(a),), T.decimal(38, 0)
        if pa.types.is_int64(a):
            return (None,), T.decimal(38, 0)
        return (None,), T.INT64
    if T.is_decimal(a):
        return (a,), T.decimal(38, a.scale)
    if T.is_floating(a) or T.is_null(a):
        return (T.FLOAT64,), T.FLOAT64
    raise _fail(fn, ts)


def _agg_avg(fn, ts):
    """DOUBLE, from an exact sum for integers and decimals."""
    (a,) = ts
    if pa.types.is_uint64(a):  # (summed as BIGINT, a value from 2^63 failed)
        return (T.decimal(20, 0),), T.FLOAT64
    if T.is_numeric(a) or T.is_null(a):
        return (None,), T.FLOAT64
    raise _fail(fn, ts)


def _agg_minmax(fn, ts):
    (a,) = ts
    return (None,), T.INT64 if T.is_null(a) else a


def _agg_stat(fn, ts):
    (a,) = ts
    if T.is_numeric(a) or T.is_null(a):
        return (T.FLOAT64,), T.FLOAT64
    raise _fail(fn, ts)


def _agg_bool(fn, ts):
    return _logical(fn, ts)


def _agg_pair(fn, ts):
    """CORR, COVAR_POP / COVAR_SAMP and REGR_*(y, x) of two numbers: DOUBLE (REGR_COUNT:
    BIGINT), over the rows where neither is NULL."""
    if all(T.is_numeric(t) or T.is_null(t) for t in ts):
        return (T.FLOAT64, T.FLOAT64), T.INT64 if fn == "regr_count" else T.FLOAT64
    raise _fail(fn, ts)


def _agg_bits(fn, ts):
    """BIT_AND / BIT_OR / BIT_XOR of integers, of the argument's type."""
    (a,) = ts
    if T.is_null(a):
        return (T.INT32,), T.INT32
    if T.is_integer(a):
        return (None,), a
    raise _fail(fn, ts)


def _agg_arg(fn, ts):
    """ARG_MAX / ARG_MIN(x, y): x (any type) at the row of the largest / smallest y (numbers,
    text, dates, times, booleans)."""
    x, y = ts
    if not (T.is_numeric(y) or T.is_text(y) or T.is_temporal(y) or T.is_boolean(y)
            or T.is_null(y)):
        raise _fail(fn, ts)
    return (T.INT32 if T.is_null(x) else None, T.INT32 if T.is_null(y) else None), \
        T.INT32 if T.is_null(x) else x


def _no_holistic_interval(fn: str, a: pa.DataType) -> None:
    """MODE, MEDIAN and the quantiles of INTERVALs are refused by name: DuckDB answers them,
    comparing an interval as its months of 30 days and days of 24 hours (1 month equals 30
    days), which Arrow's sorting and hashing of month-day-nano values do not do."""
    if T.is_interval(a):
        raise UnsupportedError(f"{fn.upper()} of INTERVAL values is not supported")


def _agg_mode(fn, ts):
    """MODE(x): the most frequent value, of the argument's type (numbers, text, dates,
    times of day, booleans)."""
    (a,) = ts
    if T.is_null(a):
        return (T.INT32,), T.INT32
    _no_holistic_interval(fn, a)
    if T.is_numeric(a) or T.is_text(a) or T.is_temporal(a) or T.is_boolean(a) \
            or pa.types.is_time(a):
        return (None,), a
    raise _fail(fn, ts)


def _agg_string_agg(fn, ts):
    """STRING_AGG(x, sep): text joined with a constant separator (',' when omitted); x of
    any type is rendered as text (DuckDB)."""
    if len(ts) > 1 and not (T.is_text(ts[1]) or T.is_null(ts[1])):
        raise _fail(fn, ts)
    return [T.TEXT] * len(ts), T.TEXT


def _agg_list(fn, ts):
    (a,) = ts
    if T.is_interval(a):  # (Arrow's hash_list has no kernel for them)
        raise UnsupportedError(f"{fn.upper()} of INTERVAL values is not supported")
    return (None,), pa.list_(T.INT32 if T.is_null(a) else a)


def _scalar_quantile(fn, ts):
    if len(ts) > 1 and is_list(ts[1]):
        raise UnsupportedError(f"a list of quantiles in {fn.upper()} is not supported")
    if len(ts) > 1 and not (T.is_numeric(ts[1]) or T.is_null(ts[1])):
        raise _fail(fn, ts)


def _agg_quantile_cont(fn, ts):
    """MEDIAN / QUANTILE_CONT of integers and floats: a DOUBLE interpolated between the two
    nearest values. DECIMAL (DuckDB keeps the DECIMAL type) and dates are refused."""
    a = ts[0]
    _scalar_quantile(fn, ts)
    _no_holistic_interval(fn, a)
    if pa.types.is_time(a) or T.is_boolean(a):
        # (DuckDB interpolates times of day, and reads a BOOLEAN's median as QUANTILE_DISC's)
        raise UnsupportedError(f"{fn.upper()} of {T.type_name(a)} is not supported "
                               f"(QUANTILE_DISC is)")
    if T.is_decimal(a) or T.is_temporal(a):
        raise UnsupportedError(f"{fn.upper()} of {T.type_name(a)} is not supported; "
                               f"cast the argument to DOUBLE")
    if not (T.is_integer(a) or T.is_floating(a) or T.is_null(a)):
        raise _fail(fn, ts)
    return [T.FLOAT64] + [None] * (len(ts) - 1), T.FLOAT64


def _agg_quantile_disc(fn, ts):
    """QUANTILE_DISC(x, q): the value at the q-th position of the sorted values, any orderable
    type (numbers, text, dates, times of day, booleans: false before true), of the
    argument's type."""
    a = ts[0]
    _scalar_quantile(fn, ts)
    _no_holistic_interval(fn, a)
    if not (T.is_numeric(a) or T.is_text(a) or T.is_temporal(a) or T.is_null(a)
            or pa.types.is_time(a) or T.is_boolean(a)):
        raise _fail(fn, ts)
    return (None, None), T.INT32 if T.is_null(a) else a


_register(AGGREGATE, "count_star", 0, 0, _agg_count, nulls="never", window=True)
_register(AGGREGATE, "count", 1, 1, _agg_count, nulls="never", window=True, sqlglot="Count")
_register(AGGREGATE, "sum", 1, 1, _agg_sum, window=True, sqlglot="Sum")
_register(AGGREGATE, "avg", 1, 1, _agg_avg, window=True, sqlglot="Avg", aliases=("mean",))
_register(AGGREGATE, "min", 1, 1, _agg_minmax, window=True, sqlglot="Min")
_register(AGGREGATE, "max", 1, 1, _agg_minmax, window=True, sqlglot="Max")
_register(AGGREGATE, "any_value", 1, 1, _agg_minmax, sqlglot="AnyValue",
          aliases=("arbitrary", "first"))
for _fn, _cls, _aliases in (("stddev_samp", ("Stddev", "StddevSamp"), ("stddev", "std")),
                            ("stddev_pop", "StddevPop", ()),
                            ("var_samp", "Variance", ("variance",)),
                            ("var_pop", "VariancePop", ())):
    _register(AGGREGATE, _fn, 1, 1, _agg_stat, sqlglot=_cls, aliases=_aliases, window=True)
# window aggregates computed over the whole partition only (a frame of all its rows)
WHOLE_PARTITION_WINDOW = frozenset({"stddev_samp", "stddev_pop", "var_samp", "var_pop"})
_register(AGGREGATE, "bool_and", 1, 1, _agg_bool, window=True, sqlglot="LogicalAnd", aliases=("every",))
_register(AGGREGATE, "bool_or", 1, 1, _agg_bool, window=True, sqlglot="LogicalOr")
# two-argument statistics (y, x): sums, co-moments and extremes per group (kernels.pair_stats)
PAIR_AGGREGATES = frozenset({"covar_pop", "covar_samp", "corr", "regr_slope", "regr_intercept",
                             "regr_r2", "regr_count", "regr_avgx", "regr_avgy", "regr_sxx",
                             "regr_syy", "regr_sxy"})
for _fn, _cls in (("covar_pop", "CovarPop"), ("covar_samp", "CovarSamp"), ("corr", "Corr"),
                  ("regr_slope", "RegrSlope"), ("regr_intercept", "RegrIntercept"),
                  ("regr_r2", "RegrR2"), ("regr_count", "RegrCount"), ("regr_avgx", "RegrAvgx"),
                  ("regr_avgy", "RegrAvgy"), ("regr_sxx", "RegrSxx"), ("regr_syy", "RegrSyy"),
                  ("regr_sxy", "RegrSxy")):
    _register(AGGREGATE, _fn, 2, 2, _agg_pair, sqlglot=_cls, args=("this", "expression"),
              nulls="never" if _fn == "regr_count" else "propagate")
for _fn, _cls in (("bit_and", "BitwiseAndAgg"), ("bit_or", "BitwiseOrAgg"),
                  ("bit_xor", "BitwiseXorAgg")):
    _register(AGGREGATE, _fn, 1, 1, _agg_bits, sqlglot=_cls)
_register(AGGREGATE, "mode", 1, 1, _agg_mode, sqlglot="Mode")
_register(AGGREGATE, "arg_max", 2, 2, _agg_arg, sqlglot="ArgMax", args=("this", "expression"),
          aliases=("max_by", "argmax"))
_register(AGGREGATE, "arg_min", 2, 2, _agg_arg, sqlglot="ArgMin", args=("this", "expression"),
          aliases=("min_by", "argmin"))
# aggregates of several argument columns (AggSpec.more)
MULTI_COLUMN_AGGREGATES = PAIR_AGGREGATES | {"arg_max", "arg_min"}
# holistic aggregates: their partial state is the list of the group's values (Arrow's
# hash_list), lists of several partials are concatenated, the final step reads the whole list
# (kernels.aggregate); the constant arguments (separator, quantile) travel in AggSpec.params
_register(AGGREGATE, "string_agg", 1, 2, _agg_string_agg, sqlglot="GroupConcat",
          args=("this", "separator"), aliases=("listagg", "group_concat"), window=True)
_register(AGGREGATE, "array_agg", 1, 1, _agg_list, sqlglot=("ArrayAgg", "List"),
          args=("this", "expressions"), aliases=("list",), window=True)
_register(AGGREGATE, "median", 1, 1, _agg_quantile_cont, sqlglot="Median")
_register(AGGREGATE, "quantile_cont", 2, 2, _agg_quantile_cont)
# QUANTILE is QUANTILE_DISC in DuckDB
_register(AGGREGATE, "quantile_disc", 2, 2, _agg_quantile_disc, sqlglot="Quantile",
          args=("this", "quantile"), aliases=("quantile",))

# aggregates whose extra arguments must be constants (read when the plan is made)
CONSTANT_AGG_ARGS = {"string_agg": "separator", "quantile_cont": "quantile",
                     "quantile_disc": "quantile"}


# ---- window-only functions ------------------------------------------------------------------

def _win_int(fn, ts):
    return [None] * len(ts), T.INT64


def _win_float(fn, ts):
    return [None] * len(ts), T.FLOAT64


def _win_value(fn, ts):
    return [None] * len(ts), ts[0] if not T.is_null(ts[0]) else T.INT64


for _fn, _cls in (("row_number", "RowNumber"), ("rank", "Rank"), ("dense_rank", "DenseRank")):
    _register(WINDOW, _fn, 0, 0, _win_int, nulls="never", sqlglot=_cls)
_register(WINDOW, "ntile", 1, 1, _win_int, sqlglot="Ntile")
_register(WINDOW, "percent_rank", 0, 0, _win_float, nulls="never", sqlglot="PercentRank")
_register(WINDOW, "cume_dist", 0, 0, _win_float, nulls="never", sqlglot="CumeDist")
_register(WINDOW, "lag", 1, 3, _win_value, sqlglot="Lag")
_register(WINDOW, "lead", 1, 3, _win_value, sqlglot="Lead")
_register(WINDOW, "first_value", 1, 1, _win_value, sqlglot="FirstValue")
_register(WINDOW, "last_value", 1, 1, _win_value, sqlglot="LastValue")
_register(WINDOW, "nth_value", 2, 2, _win_value, sqlglot="NthValue")


def sqlglot_bindings(table: dict[str, FunctionDef]) -> dict[str, FunctionDef]:
    """sqlglot class name -> the function it binds to (the binder's dispatch tables)."""
    out: dict[str, FunctionDef] = {}
    for fd in table.values():
        for cls in fd.sqlglot:
            if cls in out:
                raise ValueError(f"sqlglot class {cls} binds to {out[cls].name} and {fd.name}")
            out[cls] = fd
    return out


def canonical(name: str) -> str:
    name = name.lower()
    return ALIASES.get(name, name)


def lookup(name: str, aggregate: bool = False) -> FunctionDef | None:
    return (AGGREGATE if aggregate else SCALAR).get(canonical(name))


def check_arity(fdef: FunctionDef, n: int, display: str) -> None:
    if n < fdef.min_args or (fdef.max_args is not None and n > fdef.max_args):
        want = (str(fdef.min_args) if fdef.min_args == fdef.max_args
                else f"{fdef.min_args} or more" if fdef.max_args is None
                else f"{fdef.min_args} to {fdef.max_args}")
        raise BindError(f"function {display.upper()} takes {want} arguments, got {n}")
