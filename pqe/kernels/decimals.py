"""Fast exact DECIMAL arithmetic: scaled int64 instead of decimal128 kernels.

Arrow's decimal128 kernels are 3-5x slower than int64 ones (TPC-H's arithmetic is all
DECIMAL(15,2)). Between operators pqe keeps decimals as decimal128; inside an operator, columns
of precision <= 18 are viewed as their unscaled int64 values (a strided copy of the low words),
the expressions are evaluated with overflow-checked int64 kernels at the SQL result scale, and
decimal results are turned back into decimal128. When a checked kernel overflows, the operator
runs again with the decimal128 kernels, so answers never depend on which path ran.
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import types as T
from ..errors import DataValueError, ExecutionError
from ..physical.plan import MAX_INT64_PRECISION, int64_decimal_applicable
from ..physical.plan import fits_int64 as _fits_int64
from ..plan.expr import Call, Case, Cast, ColumnRef, Expr, InList, Literal, UserCall, walk
from .expressions import Compiler, E, _call, _zero_to_null, null_of, scalar


fits_int64 = _fits_int64  # the planner's rule (physical.plan)


# ---- array conversions ---------------------------------------------------------------------


def _chunks(col):
    return col.chunks if isinstance(col, pa.ChunkedArray) else [col]


def to_unscaled(col) -> pa.ChunkedArray:
    """decimal128 (precision <= 18) -> int64 unscaled values, NULLs kept."""
    out = []
    for chunk in _chunks(col):
        n = len(chunk)
        words = np.frombuffer(chunk.buffers()[1], dtype=np.int64)
        values = np.ascontiguousarray(words[2 * chunk.offset: 2 * (chunk.offset + n): 2])
        validity = None
        if chunk.null_count:
            validity = pc.is_valid(chunk).buffers()[1]
        out.append(pa.Array.from_buffers(pa.int64(), n, [validity, pa.py_buffer(values)],
                                         null_count=chunk.null_count))
    return pa.chunked_array(out, type=pa.int64())


def to_doubles(col) -> pa.ChunkedArray:
    """DECIMAL values as the nearest DOUBLEs, NULLs kept. Arrow's cast scales the unscaled
    integer by an inexact power of ten (1.100000 as DECIMAL(12,6) became 1.0999999999999999,
    13% of TPC-H's l_extendedprice values one unit off in to_pandas()). An unscaled value
    below 2^53 and 10^scale are exact doubles, so their IEEE quotient is the nearest double;
    wider decimals go through their digits' text, which parses to the nearest double."""
    t = col.type
    if 0 <= t.scale <= 22 and t.precision <= 15:
        return pc.divide(to_unscaled(col).cast(pa.float64()), pa.scalar(10.0 ** t.scale))
    return pa.chunked_array([c.cast(pa.string()).cast(pa.float64()) for c in _chunks(col)],
                            pa.float64())


def from_unscaled(col, dtype: pa.DataType) -> pa.ChunkedArray:
    """int64 unscaled values -> decimal128 of `dtype` (the values must fit its precision)."""
    out = []
    for chunk in _chunks(col):
        n = len(chunk)
        if chunk.null_count:
            values = pc.fill_null(chunk, 0).to_numpy(zero_copy_only=False)
            validity = pc.is_valid(chunk).buffers()[1]
        else:
            values = chunk.to_numpy(zero_copy_only=False)
            validity = None
        data = np.empty(2 * n, dtype=np.int64)
        data[0::2] = values
        data[1::2] = values >> 63
        out.append(pa.Array.from_buffers(dtype, n, [validity, pa.py_buffer(data)],
                                         null_count=chunk.null_count))
    return pa.chunked_array(out, type=dtype)


# ---- exact sums -------------------------------------------------------------------------------
#
# Arrow's integer sums wrap around on overflow and its decimal128 sums wrap past 2^127 (they
# widen the precision to 38 but never check it). pqe's SUM of integers and decimals is exact:
# a value is cut into 32-bit limbs (two for int64, four for a 128-bit decimal), each limb is
# summed with int64 kernels (exact: a limb sum of fewer than 2^31 rows stays below 2^63), and
# the limb sums are carried into one 128-bit value, checked against the result's precision.
# When max|value| * rows < 2^63 a plain int64 sum is already exact: one limb, the fast path.

_LOW32 = np.int64(0xFFFFFFFF)
_MAX_ROWS = 2 ** 31  # limb sums are exact below this many rows (a partition never has more)


def _int64_or_words(col) -> tuple[np.ndarray, np.ndarray | None, pa.Buffer | None]:
    """(low words, high words or None, validity) of an integer or decimal128 column, NULL
    slots zeroed: integers are their own low word; a decimal's unscaled 128-bit value is
    (high << 64) + unsigned low. The high words are None when every value fits int64."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    n = len(col)
    validity = pc.is_valid(col).buffers()[1] if col.null_count else None
    if pa.types.is_integer(col.type):
        if not pa.types.is_int64(col.type):
            col = pc.cast(col, pa.int64())  # every narrower integer fits (uint64: see _agg_sum)
        if col.null_count:
            col = pc.fill_null(col, 0)
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=np.int64), None, validity
    if not isinstance(col.type, pa.Decimal128Type):
        raise TypeError(f"no exact sum of {col.type}")
    words = np.frombuffer(col.buffers()[1], dtype=np.int64)[2 * col.offset: 2 * (col.offset + n)]
    lo, hi = words[0::2].copy(), words[1::2].copy()
    if col.null_count:
        valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
        lo[~valid] = 0
        hi[~valid] = 0
    if (hi == (lo >> 63)).all():
        return lo, None, validity
    return lo, hi, validity


def limbs(col, rows: int | None = None) -> tuple[list[np.ndarray], pa.Buffer | None]:
    """The limbs of an integer or decimal128 column (see above) and its validity: one int64
    limb when summing any `rows` of it cannot overflow int64, else two (32-bit halves of
    int64 values) or four (128-bit values). All but the last limb are unsigned 32-bit."""
    lo, hi, validity = _int64_or_words(col)
    n = len(lo) if rows is None else rows
    if n >= _MAX_ROWS:
        raise ExecutionError(f"a partition of {n} rows is too large for an exact SUM; "
                             "use more partitions")
    if hi is None:
        if not len(lo):
            return [lo], validity
        bound = max(-int(lo.min()), int(lo.max()))
        if bound * max(n, 1) < 2 ** 63:
            return [lo], validity
        return [lo & _LOW32, lo >> 32], validity
    return [lo & _LOW32, (lo >> 32) & _LOW32, hi & _LOW32, hi >> 32], validity


def _words(sums: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(high, low, wraps) for the integers sum(sums[k] << 32k): their value is
    wraps * 2^128 + the signed 128-bit integer (high << 64) + unsigned low (wraps None: 0).
    Limb sums other than the last are non-negative and below 2^63; carrying keeps each
    below 2^32, the last one takes what is left."""
    if len(sums) == 1:
        (v,) = sums
        return v >> 63, v, None
    rest = [np.asarray(s, dtype=np.int64) for s in sums]
    digits = []
    carry = np.zeros_like(rest[0])
    for s in rest[:-1]:
        s = s + carry
        digits.append(s & _LOW32)
        carry = s >> 32
    top = rest[-1] + carry
    if len(sums) == 2:
        return top >> 32, (top << 32) | digits[0], None
    # 4 limbs: the word keeps the low 32 bits of `top` (as a signed 32-bit number)
    return (top << 32) | digits[2], (digits[1] << 32) | digits[0], (top + 2 ** 31) >> 32


def _too_wide(high: np.ndarray, low: np.ndarray, precision: int) -> np.ndarray:
    """Where the 128-bit values (high, low) have more than `precision` digits."""
    bound = 10 ** precision - 1
    bh, bl = bound >> 64, np.uint64(bound & (2 ** 64 - 1))
    nh, nl = (-bound) >> 64, np.uint64((-bound) & (2 ** 64 - 1))
    ulow = low.view(np.uint64)
    above = (high > bh) | ((high == bh) & (ulow > bl))
    below = (high < nh) | ((high == nh) & (ulow < nl))
    return above | below


def _mask(validity: pa.Buffer | np.ndarray | None, n: int) -> np.ndarray | None:
    if validity is None or isinstance(validity, np.ndarray):
        return validity
    return np.unpackbits(np.frombuffer(validity, np.uint8), count=n, bitorder="little").astype(bool)


def exact_from_limb_sums(sums: list[np.ndarray], dtype: pa.DataType,
                         validity: pa.Buffer | np.ndarray | None = None,
                         wraps: np.ndarray | None = None) -> tuple[pa.Array, np.ndarray | None]:
    """Sums of limbs (NULL slots 0) -> (decimal128 array of `dtype`, wraps), unchecked: each
    value is wraps * 2^128 + the array's value, whose 128 bits may exceed the precision.
    The states of two-phase sums, so that a partial sum past 38 digits is no error when the
    total fits. `wraps` adds wraps carried in (combining states); `validity`: a validity
    bitmap or a boolean mask of the valid slots."""
    high, low, carried = _words(sums)
    if wraps is not None:
        carried = wraps if carried is None else carried + wraps
    if isinstance(validity, np.ndarray):
        validity = None if validity.all() else pa.array(validity).buffers()[1]
    data = np.empty(2 * len(low), dtype=np.int64)
    data[0::2], data[1::2] = low, high
    return pa.Array.from_buffers(dtype, len(low), [validity, pa.py_buffer(data)]), carried


def check_fits(arr: pa.Array, wraps: np.ndarray | None, what: str = "SUM") -> None:
    """Fail unless every value wraps * 2^128 + arr fits the precision of arr's type."""
    lo, hi, _ = _int64_or_words(arr)
    high = hi if hi is not None else lo >> 63
    bad = _too_wide(high, lo, arr.type.precision)
    if wraps is not None:
        bad |= wraps != 0
    valid = _mask(pc.is_valid(arr).buffers()[1] if arr.null_count else None, len(arr))
    if valid is not None:
        bad &= valid
    if bad.any():
        raise DataValueError(f"numeric overflow: {what} does not fit in {T.type_name(arr.type)}")


def decimal_from_limb_sums(sums: list[np.ndarray], dtype: pa.DataType,
                           validity: pa.Buffer | np.ndarray | None = None,
                           what: str = "SUM") -> pa.Array:
    """Sums of limbs -> a decimal128 array of `dtype`, failing where a value does not fit."""
    arr, wraps = exact_from_limb_sums(sums, dtype, validity)
    if wraps is not None or dtype.precision < 38:
        check_fits(arr, wraps, what)
    return arr


_EXACT_DOUBLE = 2 ** 53  # integers up to this are exact doubles
_QUOTIENT_PRECISION = 76  # decimal256's digits: the quotient's type fills them


def exact_mean(total, wraps: np.ndarray | None, count) -> pa.Array:
    """AVG's value: (wraps * 2^128 + total) / (count * 10^scale) as DOUBLE, rounded once,
    NULL where the count is 0. The sum converted to DOUBLE and then divided by the count
    rounded twice (five DECIMAL(10,2) 0.05..0.09 averaged 0.06999999999999999, five
    DECIMAL(38,37) 1.2345678901234567890123456789012345678 1.234567890123457). Where the
    unscaled sum and count * 10^scale are exact doubles, IEEE division rounds their quotient
    once; elsewhere it is worked out in decimal256 to at least 37 significant digits
    (`_mean_text`) and its text read as the nearest DOUBLE."""
    if isinstance(total, pa.ChunkedArray):
        total = total.combine_chunks()
    count = count.combine_chunks() if isinstance(count, pa.ChunkedArray) else count
    scale = total.type.scale if pa.types.is_decimal(total.type) else 0
    lo, hi, _ = _int64_or_words(total)
    n = np.asarray(pc.fill_null(count, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
    present = (n > 0) & (pc.is_valid(total).to_numpy(zero_copy_only=False)
                         if total.null_count else True)
    high = hi if hi is not None else lo >> 63
    narrow = high == (lo >> 63)  # the sum fits int64
    if wraps is not None:
        wraps = np.asarray(wraps, dtype=np.int64)
        narrow &= wraps == 0
    den = n.astype(np.float64) * 10.0 ** min(scale, 22)  # (10^22 is the last exact power)
    fast = (narrow & (lo >= -_EXACT_DOUBLE) & (lo <= _EXACT_DOUBLE) & (den <= _EXACT_DOUBLE)
            & (scale <= 22))
    with np.errstate(divide="ignore", invalid="ignore"):  # (the count-0 rows are masked)
        value = lo.astype(np.float64) / den
    for rows, digits in ((present & ~fast & narrow, 19), (present & ~narrow, None)):
        if rows.any():
            at = np.flatnonzero(rows)
            w = wraps[at] if wraps is not None else None
            value[at] = _mean_text(lo[at], high[at], w, n[at], scale, digits)
    return pa.array(value, pa.float64(), mask=~present)


def _mean_text(lo: np.ndarray, high: np.ndarray, wraps: np.ndarray | None, n: np.ndarray,
               scale: int, digits: int | None) -> np.ndarray:
    """The DOUBLE nearest (wraps * 2^128 + (high << 64) + unsigned lo) / (n * 10^scale), for
    sums of at most `digits` digits (None: any 128-bit value plus its wraps). The sum, as a
    decimal256, is scaled up so that the quotient's type fills decimal256's 76 digits:
    Arrow's division truncates it after scale + 37 or more fractional digits (scale + 28 for
    a sum past 10^48), and the digits' text (with its exponent) is parsed to the nearest
    DOUBLE. A quotient that ends within those digits is exact, so a midpoint between two
    DOUBLEs rounds to even (any mean over a count with fewer than 2^28 as a factor); one
    truncated is off by at most 10^-37 of its value, far below a DOUBLE's 10^-16."""
    if digits is None:
        most = int(np.abs(wraps).max()) if wraps is not None and len(wraps) else 0
        digits = 39 + len(str(most))  # |value| < (|wraps| + 1) * 2^128 < 3.5e38 * (...)
        upper = (high >> 63) + (wraps if wraps is not None else 0)
    else:
        upper = high >> 63
    data = np.empty(4 * len(lo), dtype=np.int64)  # little-endian 64-bit words, two's complement
    data[0::4], data[1::4], data[2::4], data[3::4] = lo, high, upper, upper >> 63
    sums = pa.Array.from_buffers(pa.decimal256(digits, 0), len(lo), [None, pa.py_buffer(data)])
    counts = pa.array(n, pa.int64()).cast(pa.decimal256(19, 0))
    # Arrow's quotient type: scale k + 19 + 1, precision digits + k + 20 (at most 76)
    k = _QUOTIENT_PRECISION - 20 - digits
    quotient = pc.divide(sums.cast(pa.decimal256(digits + k, k)), counts)
    # its unscaled digits (a scaled decimal's text may be in E notation), then the exponent
    whole = pa.Array.from_buffers(pa.decimal256(_QUOTIENT_PRECISION, 0), len(quotient),
                                  quotient.buffers(), offset=quotient.offset)
    text = pc.binary_join_element_wise(pc.cast(whole, pa.string()),
                                       f"e-{scale + quotient.type.scale}", "")
    return pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False)


def exact_to_float(arr, wraps: np.ndarray | None) -> pa.Array:
    """wraps * 2^128 + arr (a decimal128 array, maybe past its precision) as DOUBLE."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    lo, hi, _ = _int64_or_words(arr)
    value = lo.astype(np.float64)  # exact where the value fits int64 (hi is None)
    if hi is not None or wraps is not None:
        high = (hi if hi is not None else lo >> 63).astype(np.float64)
        if wraps is not None:
            high += np.asarray(wraps, dtype=np.float64) * 2.0 ** 64
        wide = high * 2.0 ** 64 + lo.view(np.uint64).astype(np.float64)
        small = (hi if hi is not None else lo >> 63) == (lo >> 63)
        if wraps is not None:
            small &= np.asarray(wraps) == 0
        value = np.where(small, value, wide)
    value = value / 10.0 ** arr.type.scale
    mask = None if not arr.null_count else ~pc.is_valid(arr).to_numpy(zero_copy_only=False)
    return pa.array(value, pa.float64(), mask=mask)


# ---- the expression compiler -----------------------------------------------------------------


class NotFast(Exception):
    """The expression needs decimal128 semantics the int64 path does not cover."""


# functions whose decimal arguments may be unscaled int64 of one common scale
_SAME_SCALE = {"eq", "ne", "lt", "le", "gt", "ge", "is_distinct_from", "is_not_distinct_from",
               "is_null", "is_not_null", "coalesce", "nullif", "greatest", "least", "negate",
               "abs", "sign"}


def _pow10(k: int) -> int:
    """10^k as an int64 factor; past int64 (a rescale by 19 or more digits, as DECIMAL(38,10)
    * DECIMAL(38,10) + BIGINT needs) the int64 path does not apply."""
    if k > MAX_INT64_PRECISION:
        raise NotFast(f"a factor of 10^{k} does not fit int64")
    return 10 ** k


class Int64DecimalCompiler(Compiler):
    """Compiles expressions over unscaled int64 decimals (see module docstring)."""

    decimals_as_int64 = True

    def compile(self, e: Expr) -> E:
        t = e.dtype
        if isinstance(e, Literal) and T.is_decimal(t):
            if e.value is None:
                return null_of(T.INT64)
            v = decimal.Decimal(e.value).scaleb(t.scale, context=decimal.Context(prec=80))
            if v != v.to_integral_value():
                raise NotFast("literal has more digits than its scale")
            if not -(2 ** 63) <= int(v) < 2 ** 63:
                raise NotFast("literal's unscaled value does not fit int64")
            return scalar(int(v), T.INT64)
        if isinstance(e, Cast):
            if T.is_decimal(e.arg.dtype) or T.is_decimal(t):
                return self._cast(e)
            return super().compile(e)
        if isinstance(e, InList) and T.is_decimal(e.arg.dtype):
            raise NotFast("IN list over decimals")
        if isinstance(e, UserCall) and involves_decimals(e):
            raise NotFast("a user function sees decimals as decimals")
        if isinstance(e, Call):
            decimal_args = any(T.is_decimal(a.dtype) for a in e.args)
            if e.fn in ("add", "subtract", "multiply") and T.is_decimal(t):
                return self._arith(e)
            if e.fn == "modulo" and T.is_decimal(t):
                return self._modulo(e)
            if decimal_args or T.is_decimal(t):
                if e.fn in ("round", "floor", "ceil"):
                    return self._round(e)
                if e.fn not in _SAME_SCALE:
                    raise NotFast(e.fn)
                if e.fn in ("abs", "negate"):
                    return _call(e.fn + "_checked", [self(e.args[0])])
                if e.fn == "sign":
                    return _call("sign", [self(e.args[0])]).cast(T.INT64)
        return super().compile(e)

    # decimal results at the SQL result scale
    def _rescale(self, x: E, from_scale: int, to_scale: int) -> E:
        if to_scale == from_scale:
            return x
        if to_scale > from_scale:
            return _call("multiply_checked", [x, scalar(_pow10(to_scale - from_scale), T.INT64)])
        return _round_div(x, _pow10(from_scale - to_scale))

    def _arith(self, e: Call) -> E:
        a, b = e.args
        ta, tb, t = T.as_decimal(a.dtype), T.as_decimal(b.dtype), e.dtype
        xa, xb = self._as_scaled(a), self._as_scaled(b)
        if e.fn == "multiply":
            if ta.scale + tb.scale != t.scale:
                raise NotFast("product scale")
            return _call("multiply_checked", [xa, xb])
        xa = self._rescale(xa, ta.scale, t.scale)
        xb = self._rescale(xb, tb.scale, t.scale)
        return _call(e.fn + "_checked", [xa, xb])

    def _modulo(self, e: Call) -> E:
        """Both operands have the result type (the resolver casts them to it): the remainder
        of the unscaled values, with the dividend's sign; % 0 is NULL."""
        if any(a.dtype != e.dtype for a in e.args):
            raise NotFast("modulo of operands past the remainder's type")
        xa, xb = self(e.args[0]), _zero_to_null(self(e.args[1]), T.INT64)
        # |q * xb| <= |xa|: only -2^63 / -1 overflows (checked: the decimal128 path reruns)
        return _call("subtract", [xa, _call("multiply", [_call("divide_checked", [xa, xb]), xb])])

    def _as_scaled(self, e: Expr) -> E:
        """An integer or decimal operand as unscaled int64 at its own decimal scale."""
        x = self(e)
        if T.is_integer(e.dtype):
            return x.cast(T.INT64)
        if not T.is_decimal(e.dtype):
            raise NotFast("non-decimal operand")
        return x

    def _cast(self, e: Cast) -> E:
        src, dst = e.arg.dtype, e.dtype
        if e.try_:
            raise NotFast("try_cast")
        x = self(e.arg)
        if T.is_decimal(src) and T.is_decimal(dst):
            # rounding away digits can carry into a new one (99.995 -> 100.00): a cast that
            # drops scale stays here only with an integer digit to spare
            if dst.precision - dst.scale < src.precision - src.scale + (dst.scale < src.scale):
                raise NotFast("narrowing cast: the decimal128 path checks the range")
            return self._rescale(x, src.scale, dst.scale)
        if T.is_decimal(src) and T.is_floating(dst):
            if src.precision > 15:  # past 2^53 the unscaled int64 rounds before the division
                raise NotFast("decimal -> double past 15 digits: the decimal128 path is exact")
            # two exact doubles, one correctly rounded division: the nearest double
            return _call("divide", [x.cast(T.FLOAT64), scalar(float(_pow10(src.scale)), T.FLOAT64)]).cast(dst)
        if T.is_decimal(src) and T.is_integer(dst):
            return _round_div(x, _pow10(src.scale)).cast(dst)
        if T.is_integer(src) and T.is_decimal(dst):
            if dst.precision - dst.scale < T.as_decimal(src).precision:
                raise NotFast("narrowing cast: the decimal128 path checks the range")
            return _call("multiply_checked", [x.cast(T.INT64), scalar(_pow10(dst.scale), T.INT64)])
        if T.is_floating(src) and T.is_decimal(dst):
            raise NotFast("any double may be out of range: the decimal128 path checks it")
        if T.is_null(src):
            return null_of(T.INT64)
        raise NotFast(f"cast {src} -> {dst}")

    def _round(self, e: Call) -> E:
        arg = e.args[0]
        t = arg.dtype
        x = self(arg)
        if e.fn == "round":  # at the scale of the result type (functions.round_type)
            digits = e.args[1].value if len(e.args) > 1 else 0
            if not isinstance(digits, int):
                raise NotFast("round digits")
            if digits >= t.scale:
                return x
            if t.scale - digits > MAX_INT64_PRECISION:
                raise NotFast("round divisor does not fit int64")
            rounded = _round_div(x, _pow10(t.scale - digits))  # in units of 10^-digits
            return self._rescale(rounded, digits, e.dtype.scale)
        # floor / ceil -> DECIMAL(p, 0); cannot overflow: |q * k| <= |x|, and q -/+ 1 moves
        # toward x only when k > 1
        k = _pow10(t.scale)
        q = _call("divide", [x, scalar(k, T.INT64)])  # truncates toward zero
        exact = _call("equal", [_call("multiply", [q, scalar(k, T.INT64)]), x])
        if e.fn == "floor":
            adjust = _call("and", [_call("less", [x, scalar(0, T.INT64)]), _call("invert", [exact])])
            return _call("subtract", [q, adjust.cast(T.INT64)])
        adjust = _call("and", [_call("greater", [x, scalar(0, T.INT64)]), _call("invert", [exact])])
        return _call("add", [q, adjust.cast(T.INT64)])


def _round_div(x: E, k: int) -> E:
    """x / k rounded half away from zero, in int64."""
    half = scalar(k // 2, T.INT64)
    pos = _call("greater_equal", [x, scalar(0, T.INT64)])
    shifted = _call("if_else", [pos, _call("add_checked", [x, half]), _call("subtract_checked", [x, half])])
    return _call("divide", [shifted, scalar(k, T.INT64)])


def unscaled_name(column_id: str) -> str:
    return column_id + "\x00i64"


def involves_decimals(e: Expr) -> bool:
    return any(T.is_decimal(x.dtype) for x in walk(e))


def decimal_columns(exprs: list[Expr]) -> set[str]:
    """Ids of the decimal columns the expressions read."""
    return {x.id for e in exprs for x in walk(e)
            if isinstance(x, ColumnRef) and T.is_decimal(x.dtype)}


applicable = int64_decimal_applicable  # decided by the planner (physical.plan)


__all__ = [
    "Case",
    "Int64DecimalCompiler",
    "NotFast",
    "applicable",
    "decimal_columns",
    "fits_int64",
    "from_unscaled",
    "to_unscaled",
]


def int64_filter(predicate: Expr, names: dict[str, str] | None = None):
    """(compiled predicate over unscaled int64 views, the decimal columns it reads) when the
    predicate compares decimal columns that fit int64, else None. `names` maps column ids to
    the table's column names (file names in scans)."""
    cols = decimal_columns([predicate])
    if not cols or not all(fits_int64(x.dtype) for x in walk(predicate)
                           if isinstance(x, ColumnRef) and T.is_decimal(x.dtype)):
        return None
    names = names or {}
    rename = {i: unscaled_name(names.get(i, i)) for i in cols}
    rename.update({i: n for i, n in names.items() if i not in cols})
    try:
        compiled = Int64DecimalCompiler(rename=rename)(predicate)
    except NotFast:
        return None
    return compiled, tuple(names.get(i, i) for i in sorted(cols))


def filter_int64(table: pa.Table, compiled) -> pa.Table:
    """Filter `table` by a predicate from `int64_filter` (adds then drops the int64 views)."""
    from .expressions import filter_table

    expr, cols = compiled
    if table.num_rows == 0:
        return table
    viewed = table
    for c in cols:
        viewed = viewed.append_column(unscaled_name(c), to_unscaled(table.column(c)))
    out = filter_table(viewed, expr)
    return out.select(table.column_names)
