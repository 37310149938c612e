"""Vectorized scalar functions Arrow lacks, registered with pyarrow.compute.

Registered functions can be called from Acero expressions like built-in kernels. Each is
implemented with whole-array numpy/pyarrow operations (never a Python loop over rows) and is
registered once per process, on import (so workers register them when they unpickle a task).
"""

from __future__ import annotations

import decimal
import functools
import re
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import DataValueError, ExecutionError
from .user_functions import in_flight
from ..plan.functions import INTERVAL_PARTS

_DOC = {"summary": "", "description": ""}
_MAX_MONTHS = 12 * 2 ** 32  # past any DATE (date32 spans +-5.8 million years)


def _register(name: str, fn, in_types: dict, out_type: pa.DataType, summary: str) -> None:
    try:
        pc.get_function(name)
        return  # already registered in this process
    except KeyError:
        pass
    except pa.ArrowKeyError:
        pass
    pc.register_scalar_function(in_flight(fn), name, {"summary": summary, "description": summary},
                                in_types, out_type)


_REGISTERING = threading.Lock()


def register_once(name: str, fn, in_types: dict, out_type: pa.DataType, summary: str) -> None:
    """`_register` for functions registered on first use, from any thread."""
    with _REGISTERING:
        _register(name, fn, in_types, out_type, summary)


def _to_numpy(arr, dtype):
    """Values as numpy (nulls filled) plus the validity mask (None when no nulls)."""
    if isinstance(arr, pa.Scalar):
        arr = pa.array([arr.as_py()], type=arr.type)
    valid = None
    if arr.null_count:
        valid = pc.is_valid(arr)
        arr = pc.fill_null(arr, pa.scalar(0, arr.type) if not pa.types.is_date(arr.type)
                           else pa.scalar(0, pa.int32()).cast(arr.type))
    return arr.to_numpy(zero_copy_only=False).astype(dtype, copy=False), valid


def months_later(d: np.ndarray, months) -> np.ndarray:
    """Days (datetime64[D]) stepped by whole months, to the same day of the month or the
    month's last day where it has fewer (PostgreSQL's and DuckDB's date + interval).
    `months`: an int64 array as long as `d`, or one int; callers keep it far from int64's
    limits, since numpy's datetime arithmetic wraps silently."""
    month_start = d.astype("datetime64[M]")
    day = (d - month_start.astype("datetime64[D]")).astype("int64")
    target = month_start + np.asarray(months, dtype="int64").astype("timedelta64[M]")
    days_in = ((target + np.timedelta64(1, "M")).astype("datetime64[D]")
               - target.astype("datetime64[D]")).astype("int64")
    return target.astype("datetime64[D]") + np.minimum(day, days_in - 1).astype("timedelta64[D]")


def add_months_days(ctx, dates, months):
    """date32 + n months (end-of-month clamped, as PostgreSQL and DuckDB do)."""
    n = len(dates) if not isinstance(dates, pa.Scalar) else 1
    d, v1 = _to_numpy(dates, "datetime64[D]")
    m, v2 = _to_numpy(months, "int64")
    if m.shape[0] == 1 and n > 1:
        m = np.broadcast_to(m, (n,))
    # numpy's datetime arithmetic wraps silently, and so does pa.array(..., date32): keep
    # the month count far from int64's limits, then check the days fit date32
    if m.size and np.abs(m).max() > _MAX_MONTHS:
        raise DataValueError("date out of range: adding the interval overflows DATE")
    out = months_later(d, m)
    days = out.astype("int64")
    if days.size and (days.min() < -(2 ** 31) or days.max() >= 2 ** 31):
        raise DataValueError("date out of range: adding the interval overflows DATE")
    mask = None
    for v in (v1, v2):
        if v is not None:
            mask = v if mask is None else pc.and_(mask, v)
    result = pa.array(out.astype("datetime64[D]"), type=pa.date32())
    if mask is not None:
        result = pc.if_else(mask, result, pa.scalar(None, pa.date32()))
    return result


_register("pqe_add_months", add_months_days, {"date": pa.date32(), "months": pa.int64()},
          pa.date32(), "Add a number of months to a date")


def split_part(ctx, strings, delims, index):
    """SPLIT_PART(s, delim, n): the n-th (1-based) piece, '' when out of range; a negative n
    counts from the end (-1 is the last piece, PostgreSQL 14). Delimiter and n are constants
    (checked when the expression is compiled; n is not 0)."""
    delim = delims.as_py() if isinstance(delims, pa.Scalar) else delims[0].as_py()
    k = index.as_py() if isinstance(index, pa.Scalar) else index[0].as_py()
    if isinstance(strings, pa.Scalar):
        strings = pa.array([strings.as_py()], pa.string())
    if not delim:  # the whole string is the one piece
        out = strings if k in (1, -1) else pa.array([""] * len(strings), pa.string())
        return pc.if_else(pc.is_valid(strings), out, pa.scalar(None, pa.string()))
    parts = pc.split_pattern(strings, pattern=delim)
    if k < 0:
        # the piece at (number of pieces + k) from each row's start in the pieces' values
        # (the left-to-right split: splitting the reversed text would cut overlapping
        # delimiters elsewhere, 'aaa' on 'aa')
        pos = pc.add(pc.cast(pc.list_value_length(parts), pa.int64()), pa.scalar(k, pa.int64()))
        ok = pc.fill_null(pc.greater_equal(pos, 0), False)
        starts = pc.cast(parts.offsets[:-1], pa.int64())
        at = pc.if_else(ok, pc.add(starts, pos), pa.scalar(None, pa.int64()))
        out = pc.if_else(ok, pc.take(parts.values, at), "")
        return pc.if_else(pc.is_valid(strings), out, pa.scalar(None, pa.string()))
    idx = k - 1
    lengths = pc.list_value_length(parts)
    most = pc.max(lengths).as_py()
    if most is None or idx >= most:  # (a filler list of n items: n = 2^63 - 1 failed)
        return pc.if_else(pc.is_valid(strings), pa.scalar("", pa.string()),
                          pa.scalar(None, pa.string()))
    ok = pc.greater(lengths, idx)
    safe = pc.if_else(ok, parts, pa.scalar([""] * (idx + 1), pa.list_(pa.string())))
    out = pc.if_else(ok, pc.list_element(safe, idx), "")
    return pc.if_else(pc.is_valid(strings), out, pa.scalar(None, pa.string()))


# the years make_date builds: from 1 AD (PostgreSQL's negative years are BC, DuckDB's year 0
# is 1 BC: refused rather than guessed) to PostgreSQL's last
MAKE_DATE_YEARS = (1, 5_874_897)


def make_date(ctx, years, months, days, guard):
    """MAKE_DATE(y, m, d): the DATE, or an error naming the first (y, m, d) that is no date
    (month 13, February 30, year 0) in a row `guard` holds for (NULL in the others: a CASE
    branch the row does not take); NULL where an argument is NULL."""
    n = ctx.batch_length
    cols = []
    valid = np.ones(n, dtype=bool)
    for a in (years, months, days):
        if isinstance(a, pa.Scalar):
            a = pa.array([a.as_py()] * n, pa.int64())
        v, ok = _to_numpy(a, np.int64)
        if ok is not None:
            valid &= ok.to_numpy(zero_copy_only=False)
        cols.append(v)
    y, m, d = cols
    lo, hi = MAKE_DATE_YEARS
    good = valid & (y >= lo) & (y <= hi) & (m >= 1) & (m <= 12) & (d >= 1) & (d <= 31)
    ys, ms, ds = (np.where(good, v, 1) for v in (y, m, d))  # (stand-ins where not good)
    month = ((ys - 1970) * 12 + (ms - 1)).astype("datetime64[M]")
    first = month.astype("datetime64[D]")
    length = ((month + 1).astype("datetime64[D]") - first).astype(np.int64)
    good &= ds <= length
    bad = valid & ~good
    if bad.any():
        g = guard if isinstance(guard, pa.Array) else pa.array([guard.as_py()] * n, pa.bool_())
        failing = bad & pc.fill_null(g, False).to_numpy(zero_copy_only=False)
        if failing.any():
            i = int(np.argmax(failing))
            raise DataValueError(f"MAKE_DATE: {y[i]}-{m[i]}-{d[i]} is not a date (years "
                                 f"{lo} to {hi})")
    out = (first + (ds - 1)).astype(np.int64).astype(np.int32)
    return pa.array(out, pa.int32(), mask=~good).cast(pa.date32())


_register("pqe_make_date", make_date,
          {"y": pa.int64(), "m": pa.int64(), "d": pa.int64(), "guard": pa.bool_()}, pa.date32(),
          "The DATE of a year, month and day; an error naming one that is no date")


_register("pqe_split_part", split_part,
          {"s": pa.string(), "delim": pa.string(), "n": pa.int64()}, pa.string(),
          "The n-th part of a string split on a delimiter")


def _padder(left: bool):
    name = "LPAD" if left else "RPAD"

    def pad(ctx, strings, length, fill):
        """LPAD/RPAD(s, k, fill) as PostgreSQL and DuckDB define them: the first k characters
        of s, padded to k characters by repeating the whole fill string ('xy' -> 'xyx...') on
        the left (LPAD) or the right (RPAD). Length and fill are constants (checked when the
        expression is compiled). Each row needs `short` more characters: `short // len(fill)`
        whole fills, then the first `short % len(fill)` characters of the fill, taken from the
        len(fill) possible prefixes (a loop over the fill, not the rows)."""
        k = max(length.as_py() if isinstance(length, pa.Scalar) else length[0].as_py(), 0)
        f = fill.as_py() if isinstance(fill, pa.Scalar) else fill[0].as_py()
        if isinstance(strings, pa.Scalar):
            strings = pa.array([strings.as_py()], pa.string())
        kept = pc.utf8_slice_codeunits(strings, 0, k)
        short = pc.subtract(pa.scalar(k, pa.int64()), pc.cast(pc.utf8_length(kept), pa.int64()))
        if not f:  # nothing to pad with: an error only where padding is needed (DuckDB)
            if pc.any(pc.greater(short, 0)).as_py():
                raise pa.ArrowInvalid(f"{name}: cannot pad to {k} characters with an empty string")
            return kept
        whole = pc.divide(short, len(f))
        part = pc.subtract(short, pc.multiply(whole, len(f)))
        prefixes = pa.array([f[:i] for i in range(len(f))], pa.string())
        padding = pc.binary_join_element_wise(pc.binary_repeat(f, whole), pc.take(prefixes, part), "")
        pieces = (padding, kept) if left else (kept, padding)
        return pc.binary_join_element_wise(*pieces, "")
    return pad


for _left in (True, False):
    _register("pqe_lpad" if _left else "pqe_rpad", _padder(_left),
              {"s": pa.string(), "length": pa.int64(), "fill": pa.string()}, pa.string(),
              "Pad a string to a length with a repeated fill string")


def assert_single_row(ctx, counts):
    """TRUE everywhere, or an error when some group of a scalar subquery has several rows."""
    if isinstance(counts, pa.Scalar):
        counts = pa.array([counts.as_py()], pa.int64())
    if len(counts) and (pc.max(counts).as_py() or 0) > 1:
        raise pa.ArrowInvalid("more than one row returned by a subquery used as an expression")
    return pa.array(np.ones(len(counts), dtype=bool))


_register("pqe_assert_single_row", assert_single_row, {"n": pa.int64()}, pa.bool_(),
          "Check that a scalar subquery yields at most one row per outer row")


def fmod(ctx, x, y):
    """DOUBLE % DOUBLE as C's fmod (PostgreSQL, DuckDB): the exact remainder with the dividend's
    sign; x % inf is x, inf % y is NaN. (x - y * trunc(x / y) loses the remainder to rounding
    and gives NaN for x % inf.) Division by zero is handled by the caller."""
    n = max(1 if isinstance(v, pa.Scalar) else len(v) for v in (x, y))
    xs, vx = _to_numpy(x, "float64")
    ys, vy = _to_numpy(y, "float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.fmod(np.broadcast_to(xs, (n,)), np.broadcast_to(ys, (n,)))
    mask = None
    for v in (vx, vy):
        if v is not None:
            v = v.to_numpy(zero_copy_only=False) if isinstance(v, pa.Array) else np.asarray(v)
            valid = np.broadcast_to(v, (n,))
            mask = ~valid if mask is None else mask | ~valid
    return pa.array(out, pa.float64(), mask=mask)


_register("pqe_fmod", fmod, {"x": pa.float64(), "y": pa.float64()}, pa.float64(),
          "The floating-point remainder of x / y with the sign of x (C fmod)")


def float_text(ctx, x):
    """DOUBLE -> VARCHAR as DuckDB writes it, which is Python's repr (the shortest digits that
    read back, `1.0`, `-0.0`, `1e-07`, scientific below 1e-4 and from 1e16): Arrow wrote `1`,
    `-0`, `1e-7` and switches to exponents elsewhere (`6.48e+10`). Arrow's text is kept where
    it already reads as repr (padded exponents, `.0` added); only the rows whose notation
    differs are formatted by numpy (its shortest repr, in C)."""
    if isinstance(x, pa.Scalar):
        x = pa.array([x.as_py()], x.type)
    elif isinstance(x, pa.ChunkedArray):
        x = x.combine_chunks()
    text = pc.cast(x, pa.string())
    text = pc.replace_substring_regex(text, r"e([+-])(\d)$", r"e\10\2")  # (RE2: \1, then 0)
    whole = pc.match_substring_regex(text, r"^-?\d+$")
    text = pc.if_else(whole, pc.binary_join_element_wise(text, ".0", ""), text)
    if x.type != pa.float64():
        # a REAL keeps Arrow's shortest float32 digits (DuckDB's own notation for REAL was not
        # matched value for value; the `.0` and the two-digit exponent are)
        return text
    size = pc.abs(x)
    finite_nonzero = pc.and_(pc.is_finite(x), pc.not_equal(x, 0.0))
    python_sci = pc.and_(finite_nonzero, pc.or_(pc.less(size, 1e-4),
                                                 pc.greater_equal(size, 1e16)))
    arrow_sci = pc.match_substring(text, "e")
    differ = pc.fill_null(pc.and_(finite_nonzero, pc.not_equal(python_sci, arrow_sci)), False)
    if pc.any(differ).as_py():
        redo = pc.filter(x, differ).to_numpy(zero_copy_only=False).astype(str)
        text = pc.replace_with_mask(text, differ, pa.array(redo, pa.string()))
    return text


_register("pqe_float_text", float_text, {"x": pa.float64()}, pa.string(),
          "A DOUBLE as text, written as DuckDB (and Python's repr) write it")
_register("pqe_real_text", float_text, {"x": pa.float32()}, pa.string(),
          "A REAL as text: Arrow's digits, with `.0` and two-digit exponents")


def _first_failure(texts, failed, type_name, message) -> pa.Array:
    """TRUE everywhere, or a DataValueError `message(text, type name)` for the first row
    where `failed` holds (`texts`: the values as text)."""
    if isinstance(failed, pa.Scalar):
        failed = pa.array([failed.as_py()], pa.bool_())
    if pc.any(failed).as_py():
        i = pc.index(failed, True).as_py()
        text = texts.as_py() if isinstance(texts, pa.Scalar) else texts[i].as_py()
        name = type_name.as_py() if isinstance(type_name, pa.Scalar) else type_name[0].as_py()
        raise DataValueError(message(text, name))
    return pa.array(np.ones(len(failed), dtype=bool))


def check_cast(ctx, texts, failed, type_name):
    """TRUE everywhere, or an error naming the first text that CAST could not convert (the
    same conversion gives NULL under TRY_CAST)."""
    return _first_failure(texts, failed, type_name, lambda text, name:
                          f"{text!r} is not a valid {name}" + (
                              ": a backslash escape or a character past ASCII"
                              if name.startswith("BLOB") else
                              "" if name.startswith(("BOOLEAN", "DATE", "TIMESTAMP", "TIME"))
                              else ": not a number, or out of range"))


def check_range(ctx, texts, failed, type_name):
    """TRUE everywhere, or an error naming the first value that is out of range of the numeric
    type a CAST (or a DECIMAL result) needs: `texts` holds the values as text where `failed`
    (NULL elsewhere), so the message shows the value, not Arrow's 'Integer value out of
    bounds' or 'Decimal value does not fit in precision 10'."""
    return _first_failure(texts, failed, type_name,
                          lambda text, name: f"value {text} is out of range for {name}")


def check_temporal_text(ctx, texts, failed, type_name):
    """TRUE everywhere, or an error for the first date or timestamp Arrow could not write as
    text (past year 32767 it wrote '<value out of range: 13890172>' as the value)."""
    return _first_failure(texts, failed, type_name, lambda text, name:
                          f"a {name} past year 32767 cannot be written as text")


def check_calendar(ctx, failed, what):
    """TRUE everywhere, or an error when some date or timestamp lies past year +-32767:
    Arrow's calendar kernels keep the year in 16 bits (EXTRACT(YEAR) of 32908-05-08 was
    -32628, its day of the year 23936661)."""
    failed, what = batch_arrays(ctx, failed, what)
    if pc.any(pc.fill_null(failed, False)).as_py():
        raise ExecutionError(f"{what[0].as_py()} of a date or timestamp past year 32767 is "
                             "not supported")
    return pa.array(np.ones(len(failed), bool))


_register("pqe_check_calendar", check_calendar, {"failed": pa.bool_(), "what": pa.string()},
          pa.bool_(), "Fail calendar arithmetic on a date or timestamp past year 32767")


_register("pqe_check_temporal_text", check_temporal_text,
          {"text": pa.string(), "failed": pa.bool_(), "type": pa.string()}, pa.bool_(),
          "Fail a CAST of a date or timestamp Arrow cannot write as text")


_register("pqe_check_range", check_range,
          {"text": pa.string(), "failed": pa.bool_(), "type": pa.string()}, pa.bool_(),
          "Fail a numeric CAST naming the first value out of the target type's range")


def range_checked(ctx, x, lo, hi, lo_inclusive, guard, type_name):
    """`x` where it is in the range of a numeric type (lo .. hi, hi exclusive; a NULL bound is
    no bound; NaN is out of range), NULL where it is not and `guard` is FALSE (a CASE branch
    or COALESCE argument the row does not take), and an error naming the first value out of
    range where `guard` is TRUE. `x` arrives once, widened to one of a few kinds (int64,
    float64, decimal256(76, s)), so the expression holding it does not repeat it."""
    def one(v):  # a constant argument, as a scalar
        return v[0] if isinstance(v, pa.Array) else v

    lo, hi, lo_inclusive, type_name = one(lo), one(hi), one(lo_inclusive), one(type_name)
    arrays = [a for a in (x, guard) if isinstance(a, pa.Array)]
    n = max(len(a) for a in arrays) if arrays else 1
    arr = x if isinstance(x, pa.Array) else pa.array([x.as_py()] * n, x.type)
    bad = None
    if lo.is_valid:
        bad = pc.less(arr, lo) if lo_inclusive.as_py() else pc.less_equal(arr, lo)
    if hi.is_valid:
        above = pc.greater_equal(arr, hi)
        bad = above if bad is None else pc.or_(bad, above)
    if pa.types.is_floating(arr.type):
        nan = pc.is_nan(arr)
        bad = nan if bad is None else pc.or_(bad, nan)
    if bad is None:
        return arr
    bad = pc.fill_null(bad, False)
    if not pc.any(bad).as_py():
        return arr
    g = guard if isinstance(guard, pa.Array) else pa.array([guard.as_py()] * n, pa.bool_())
    failing = pc.and_(bad, pc.fill_null(g, False))
    if pc.any(failing).as_py():
        v = arr[pc.index(failing, True).as_py()].as_py()
        name = type_name.as_py()
        if isinstance(v, decimal.Decimal):  # rounded to the target's scale already: shown at
            v = _at_scale(v, name)          # that scale, not the wider source's zeros
        raise DataValueError(f"value {v} is out of range for {name}")
    return pc.if_else(bad, pa.scalar(None, arr.type), arr)


def _at_scale(v: decimal.Decimal, type_name: str) -> str:
    """A Decimal's digits without trailing fraction zeros past the scale of `type_name`
    (DECIMAL(p,s); none for an integer type)."""
    text = format(v, "f")
    if "." not in text:
        return text
    whole, frac = text.split(".")
    scale = re.search(r",\s*(\d+)\)", type_name)
    frac = frac.rstrip("0").ljust(int(scale.group(1)) if scale else 0, "0")
    return f"{whole}.{frac}" if frac else whole


RANGE_KINDS = {"i64": pa.int64(), "f64": pa.float64(),
               **{f"d{s}": pa.decimal256(76, s) for s in range(39)}}
for _kind, _t in RANGE_KINDS.items():
    _register(f"pqe_range_{_kind}", range_checked,
              {"x": _t, "lo": _t, "hi": _t, "lo_inclusive": pa.bool_(), "guard": pa.bool_(),
               "type": pa.string()}, _t,
              "x where it is in a numeric type's range; an error naming the first value out "
              "of range where guard holds")


def check_utf8(ctx, blobs, failed, type_name):
    """TRUE everywhere, or an error naming the first BLOB whose bytes are not UTF-8 (CAST of a
    BLOB to text; Arrow's cast failed with a bare 'Invalid UTF8 payload')."""
    return _first_failure(blobs, failed, type_name, lambda value, name: (
        f"BLOB {value[:24]!r}{'...' if len(value) > 24 else ''} is not UTF-8 text: CAST to "
        f"{name} needs UTF-8 bytes (TRY_CAST gives NULL)"))


_register("pqe_check_utf8", check_utf8,
          {"blob": pa.binary(), "failed": pa.bool_(), "type": pa.string()}, pa.bool_(),
          "Fail a CAST of a BLOB to text naming the first value that is not UTF-8")
_register("pqe_check_cast", check_cast,
          {"text": pa.string(), "failed": pa.bool_(), "type": pa.string()}, pa.bool_(),
          "Fail a CAST of text naming the first value that does not convert")


# Arrow's decimal division is exact only by a divisor below 2^32, one 32-bit limb: by a wider
# one its long division can leave a quotient limb short (pyarrow 26: 4294967295.5 at scale 20
# truncated to 4294967294, at scale 38 to 4294967293, FLOOR(4294967295.999) 4294967294). Its
# round, floor, ceil and rescaling casts divide by 10^k, so they drop at most this many
# decimals at a time.
EXACT_STEP = 9


def rescaled(x, scale: int, dst: pa.DataType, safe: bool = True):
    """`x` (a pc.Expression or an array), a DECIMAL at `scale`, cast to `dst` (a DECIMAL or
    integer type). Dropping more than nine decimals runs as casts of at most nine each, on
    decimal256(76): each truncates toward zero, so together they truncate as one exact
    division would (`safe` checks every step, which then must drop only zeros)."""
    to = dst.scale if pa.types.is_decimal(dst) else 0
    while scale - to > EXACT_STEP:
        scale -= EXACT_STEP
        x = x.cast(pa.decimal256(76, scale), safe=safe)
    return x.cast(dst, safe=safe)


def wide_modulo(ctx, x, y):
    """x % y for DECIMAL operands of at most 38 digits (as decimal256(76, s)), exactly, with
    the dividend's sign; % 0 is NULL. Arrow divides only by |y| below 10^9 units (one limb:
    exact, its quotient truncated exactly). A wider |y| never divides there: |x / y| is then
    below 10^29, estimated in DOUBLE (within 10^-15 of the true quotient) and the remainder
    refined, r - trunc(r / |y|) * |y|, each product and difference exact; four steps bring
    |x| < 10^38 units to |r| < 2|y|, then r is brought into [0, |y|) by adding or subtracting
    |y|. A function, not an expression: the steps reuse r and |y|, which an expression would
    repeat (no common subexpressions), exponentially."""
    n = ctx.batch_length
    x = x if isinstance(x, pa.Array) else pa.repeat(x, n)
    y = y if isinstance(y, pa.Array) else pa.repeat(y, n)
    s = x.type.scale
    t38, t39 = pa.decimal256(38, s), pa.decimal256(39, s)
    exact = decimal.Context(prec=80)
    unit = pa.scalar(decimal.Decimal(1).scaleb(-s, context=exact), t38)
    zero = pa.scalar(decimal.Decimal(0), t38)
    x, y = pc.cast(x, t38), pc.cast(y, t38)
    ax = pc.abs(x)
    is_zero = pc.equal(y, zero)
    ay = pc.if_else(is_zero, unit, pc.abs(y))
    limit = pa.scalar(decimal.Decimal(10 ** EXACT_STEP).scaleb(-s, context=exact), t38)
    small = pc.fill_null(pc.less(ay, limit), True)
    rem = None
    if pc.any(small).as_py():
        ys = pc.cast(pc.if_else(small, ay, unit), pa.decimal256(EXACT_STEP, s))
        q = rescaled(pc.divide(ax, ys), 10, pa.decimal256(38, 0), safe=False)  # one limb
        rem = pc.cast(pc.subtract(ax, pc.multiply(q, ys)), t39)
    if not pc.all(small).as_py():
        yb = pc.if_else(small, limit, ay)
        fy = pc.cast(yb, pa.float64())
        r = pc.cast(ax, t39)
        for _ in range(4):
            ratio = pc.trunc(pc.divide(pc.cast(r, pa.float64()), fy))
            step = pc.multiply(pc.cast(ratio, pa.decimal256(31, 0), safe=False), yb)
            r = pc.cast(pc.subtract(r, step), t39, safe=False)
        for _ in range(2):
            r = pc.if_else(pc.less(r, zero), pc.cast(pc.add(r, yb), t39, safe=False), r)
        for _ in range(2):
            r = pc.if_else(pc.greater_equal(r, yb), pc.cast(pc.subtract(r, yb), t39, safe=False), r)
        rem = r if rem is None else pc.if_else(small, rem, r)
    rem = pc.if_else(pc.less(x, zero), pc.negate(rem), rem)
    rem = pc.if_else(is_zero, pa.scalar(None, t39), rem)
    return pc.cast(rem, pa.decimal256(76, s))


for _s in range(39):
    _register(f"pqe_mod_d{_s}", wide_modulo,
              {"x": pa.decimal256(76, _s), "y": pa.decimal256(76, _s)}, pa.decimal256(76, _s),
              "x % y of DECIMAL values, exactly (Arrow's division is not, past one limb)")


# ---- INTERVAL values (Arrow's month_day_nano: int32 months, int32 days, int64 nanoseconds) ----

_MDN = np.dtype([("months", "<i4"), ("days", "<i4"), ("nanos", "<i8")])
_DAY_US = 86_400_000_000


def batch_arrays(ctx, *args) -> list[pa.Array]:
    """A registered function's arguments as arrays of the batch's length (a constant comes
    as a Scalar)."""
    n = ctx.batch_length
    out = []
    for a in args:
        if isinstance(a, pa.Scalar):
            one = pa.array([a.as_py()], a.type)
            a = one.take(pa.array(np.zeros(n, np.int64)))
        elif isinstance(a, pa.ChunkedArray):
            a = a.combine_chunks()
        out.append(a)
    return out


def _interval_fields(x: pa.Array) -> np.ndarray:
    """An INTERVAL array's (months, days, nanos) triples, as a numpy view (NULL slots: any)."""
    data = x.buffers()[1]
    if not len(x) or data is None:
        return np.zeros(len(x), _MDN)
    return np.frombuffer(data, _MDN)[x.offset: x.offset + len(x)]


def _trunc_div(a: np.ndarray, b: int) -> np.ndarray:
    """a / b rounded toward zero (C's division, as DuckDB splits intervals)."""
    q = a // b
    return q + ((a % b != 0) & (a < 0))


def timestamp_diff(ctx, a, b):
    """a - b of two microsecond TIMESTAMPs as an INTERVAL of whole days and the rest, both of
    the difference's sign, no months (DuckDB, PostgreSQL); a difference past BIGINT's
    microseconds is an error."""
    a, b = batch_arrays(ctx, a, b)
    valid = pc.and_(pc.is_valid(a), pc.is_valid(b))
    va = np.asarray(pc.fill_null(a.cast(pa.int64()), 0).to_numpy(zero_copy_only=False), np.int64)
    vb = np.asarray(pc.fill_null(b.cast(pa.int64()), 0).to_numpy(zero_copy_only=False), np.int64)
    with np.errstate(over="ignore"):
        diff = va - vb
    if ((va ^ vb) & (va ^ diff) < 0).any():
        raise DataValueError("interval out of range: the timestamps are too far apart")
    days = _trunc_div(diff, _DAY_US)
    out = np.zeros(len(diff), _MDN)
    out["days"] = days
    out["nanos"] = (diff - days * _DAY_US) * 1000
    mask = None if not a.null_count and not b.null_count else pc.invert(valid)
    arr = pa.Array.from_buffers(pa.month_day_nano_interval(), len(out),
                                [None, pa.py_buffer(out.tobytes())])
    return arr if mask is None else pc.if_else(mask, pa.scalar(None, arr.type), arr)


_register("pqe_timestamp_diff", timestamp_diff,
          {"a": pa.timestamp("us"), "b": pa.timestamp("us")}, pa.month_day_nano_interval(),
          "TIMESTAMP - TIMESTAMP: an INTERVAL of days and the rest")

# EXTRACT(part FROM interval), as DuckDB: a month is 30 days for the epoch; the clock fields
# come from the nanoseconds alone, each rounded toward zero


def _interval_part(ctx, x, *, part: str):
    (x,) = batch_arrays(ctx, x)
    fields = _interval_fields(x)
    months = fields["months"].astype(np.int64)
    days = fields["days"].astype(np.int64)
    nanos = fields["nanos"]
    if part == "epoch":  # a year is 365.25 days, a month 30 (PostgreSQL, DuckDB)
        years = _trunc_div(months, 12)
        value = (years * 31_557_600 + ((months - 12 * years) * 30 + days) * 86_400).astype(
            np.float64) + nanos / 1e9
    elif part == "year":
        value = _trunc_div(months, 12)
    elif part == "month":
        value = months - 12 * _trunc_div(months, 12)
    elif part == "day":
        value = days
    elif part == "hour":
        value = _trunc_div(nanos, 3_600_000_000_000)
    else:
        in_minute = nanos - 60_000_000_000 * _trunc_div(nanos, 60_000_000_000)
        if part == "minute":
            value = _trunc_div(nanos - 3_600_000_000_000 * _trunc_div(nanos, 3_600_000_000_000),
                               60_000_000_000)
        else:
            value = _trunc_div(in_minute, {"second": 10 ** 9, "millisecond": 10 ** 6,
                                           "microsecond": 10 ** 3}[part])
    out = pa.array(value)
    return out if not x.null_count else pc.if_else(pc.is_valid(x), out,
                                                   pa.scalar(None, out.type))


for _part in INTERVAL_PARTS:
    _register(f"pqe_interval_{_part}", functools.partial(_interval_part, part=_part),
              {"x": pa.month_day_nano_interval()},
              pa.float64() if _part == "epoch" else pa.int64(),
              f"EXTRACT({_part} FROM interval)")


# INTERVALs compare as DuckDB and PostgreSQL compare them: normalized with a month of 30 days
# and a day of 24 hours, as (days, nanoseconds within the day) pairs
_DAY_NS = 86_400 * 10 ** 9


def _interval_parts(x: pa.Array, *, days: bool) -> pa.Array:
    """An INTERVAL array's normalized days (a month 30 days, whole days of nanoseconds
    carried) or its nanoseconds within the day, as int64, NULLs kept."""
    fields = _interval_fields(x)
    nanos = fields["nanos"]
    whole = nanos // _DAY_NS  # (floor: the rest is in [0, one day))
    value = (fields["months"].astype(np.int64) * 30 + fields["days"] + whole) if days \
        else nanos - whole * _DAY_NS
    out = pa.array(value, pa.int64())
    return out if not x.null_count else pc.if_else(pc.is_valid(x), out,
                                                   pa.scalar(None, pa.int64()))


def interval_length(x: pa.Array) -> pa.Array:
    """An INTERVAL array's normalized length in nanoseconds as one DECIMAL(38, 0) each (days *
    a day's nanoseconds + the rest: up to ~5.6e24, past BIGINT), ordering and equating
    intervals as `<` and `=` do; NULLs kept."""
    days = _interval_parts(x, days=True).cast(pa.decimal128(20, 0))
    rest = _interval_parts(x, days=False).cast(pa.decimal128(19, 0))
    total = pc.add(pc.multiply(days, pa.scalar(_DAY_NS, pa.decimal128(14, 0))), rest)
    return total.cast(pa.decimal128(38, 0))


def _interval_key(ctx, x, *, days: bool):
    (x,) = batch_arrays(ctx, x)
    return _interval_parts(x, days=days)


def _interval_total(ctx, x):
    (x,) = batch_arrays(ctx, x)
    return interval_length(x)


def _interval_text(ctx, x):
    """An INTERVAL as DuckDB writes it: '1 year 2 months 3 days 04:05:06.5', '-721:00:00',
    '00:00:00' for none (the time part in whole microseconds, its hours not carried into
    days; a part that is 0 left out). Built column-wise from the three fields."""
    (x,) = batch_arrays(ctx, x)
    f = _interval_fields(x)
    months = f["months"].astype(np.int64)
    years = _trunc_div(months, 12)
    months = months - 12 * years
    days = f["days"].astype(np.int64)
    micros = _trunc_div(f["nanos"], 1000)
    negative = micros < 0
    m = np.abs(micros)
    hours, m = m // 3_600_000_000, m % 3_600_000_000
    minutes, m = m // 60_000_000, m % 60_000_000
    seconds, fraction = m // 1_000_000, m % 1_000_000

    def count(v: np.ndarray, unit: str) -> pa.Array:
        text = pc.binary_join_element_wise(
            pc.cast(pa.array(v), pa.string()), pa.scalar(f" {unit}"),
            pa.array(np.where(np.abs(v) == 1, "", "s")), "")
        return pc.if_else(pa.array(v != 0), text, pa.scalar(None, pa.string()))

    def two(v: np.ndarray) -> pa.Array:
        return pc.utf8_lpad(pc.cast(pa.array(v), pa.string()), 2, "0")

    clock = pc.binary_join_element_wise(
        pa.array(np.where(negative, "-", "")), two(hours), pa.scalar(":"), two(minutes),
        pa.scalar(":"), two(seconds),
        pc.utf8_rtrim(pc.binary_join_element_wise(
            pa.scalar("."), pc.utf8_lpad(pc.cast(pa.array(fraction), pa.string()), 6, "0"),
            ""), "0."), "")
    none = (years == 0) & (months == 0) & (days == 0)
    clock = pc.if_else(pa.array((micros != 0) | none), clock, pa.scalar(None, pa.string()))
    text = pc.binary_join_element_wise(
        count(years, "year"), count(months, "month"), count(days, "day"), clock, " ",
        null_handling="skip")
    return text if not x.null_count else pc.if_else(pc.is_valid(x), text,
                                                    pa.scalar(None, pa.string()))


def _interval_raw(ctx, x, *, field: str):
    (x,) = batch_arrays(ctx, x)
    out = pa.array(_interval_fields(x)[field].astype(np.int64))
    return out if not x.null_count else pc.if_else(pc.is_valid(x), out,
                                                   pa.scalar(None, pa.int64()))


def _interval_sum(ctx, a, b, *, sign: int):
    """a + b (sign 1) or a - b (sign -1) of INTERVALs, part by part (months, days and the
    rest each on their own, as PostgreSQL and DuckDB add them); NULL where either is NULL. A
    part past its range is an error, never a wrapped value."""
    a, b = batch_arrays(ctx, a, b)
    fa, fb = _interval_fields(a), _interval_fields(b)
    valid = None
    if a.null_count or b.null_count:
        valid = pc.and_(pc.is_valid(a), pc.is_valid(b)).to_numpy(zero_copy_only=False)
    out = np.zeros(len(a), _MDN)
    bad = np.zeros(len(a), bool)
    for part in ("months", "days"):  # int32 parts, summed in int64
        v = fa[part].astype(np.int64) + sign * fb[part].astype(np.int64)
        bad |= (v < -2**31) | (v >= 2**31)
        out[part] = v.astype(np.int32)
    x, y = fa["nanos"], fb["nanos"]
    with np.errstate(over="ignore"):
        r = x + y if sign == 1 else x - y
    same = (x ^ y) >= 0 if sign == 1 else (x ^ y) < 0  # operands that can overflow
    bad |= same & ((x ^ r) < 0)
    out["nanos"] = r
    if valid is not None:
        bad &= valid
    if bad.any():
        raise DataValueError("interval out of range: the sum of the intervals overflows")
    validity = None if valid is None else pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(pa.month_day_nano_interval(), len(a),
                                 [validity, pa.py_buffer(out.tobytes())])


def _interval_product(ctx, x, k):
    """An INTERVAL times an integer, part by part (months, days and the rest each multiplied,
    as DuckDB multiplies them); NULL where either is NULL. A part past its range (months
    and days int32s, the nanoseconds an int64) is an error, never a wrapped value."""
    x, k = batch_arrays(ctx, x, k)
    f = _interval_fields(x)
    valid = None
    if x.null_count or k.null_count:
        valid = pc.and_(pc.is_valid(x), pc.is_valid(k)).to_numpy(zero_copy_only=False)
    n = np.asarray(pc.fill_null(k.cast(pa.int64()), 0).to_numpy(zero_copy_only=False), np.int64)
    if valid is not None:
        n = np.where(valid, n, 0)  # (a NULL row's parts: 0, never an overflow)
    out = np.zeros(len(x), _MDN)
    try:
        for part in ("months", "days", "nanos"):
            v = np.asarray(pc.multiply_checked(pa.array(f[part].astype(np.int64)),
                                               pa.array(n)).to_numpy(zero_copy_only=False))
            if part != "nanos" and ((v < -2**31) | (v >= 2**31)).any():
                raise pa.ArrowInvalid("overflow")
            out[part] = v
    except pa.ArrowInvalid:
        raise DataValueError("interval out of range: the product overflows") from None
    validity = None if valid is None else pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(pa.month_day_nano_interval(), len(x),
                                 [validity, pa.py_buffer(out.tobytes())])


_register("pqe_interval_multiply", _interval_product,
          {"x": pa.month_day_nano_interval(), "k": pa.int64()}, pa.month_day_nano_interval(),
          "INTERVAL times an integer, part by part")


for _sign, _word in ((1, "add"), (-1, "subtract")):
    _register(f"pqe_interval_{_word}", functools.partial(_interval_sum, sign=_sign),
              {"a": pa.month_day_nano_interval(), "b": pa.month_day_nano_interval()},
              pa.month_day_nano_interval(), f"INTERVAL {_word} INTERVAL, part by part")


for _field in ("months", "days", "nanos"):  # (a column of intervals added to timestamps)
    _register(f"pqe_interval_raw_{_field}", functools.partial(_interval_raw, field=_field),
              {"x": pa.month_day_nano_interval()}, pa.int64(), f"An INTERVAL's {_field}")


_register("pqe_interval_text", _interval_text, {"x": pa.month_day_nano_interval()},
          pa.string(), "An INTERVAL as text (CAST(interval AS VARCHAR))")

_register("pqe_interval_total_key", _interval_total, {"x": pa.month_day_nano_interval()},
          pa.decimal128(38, 0), "An INTERVAL's normalized length in nanoseconds (MIN / MAX)")

for _which in ("days", "rest"):
    _register(f"pqe_interval_{_which}_key", functools.partial(_interval_key, days=_which == "days"),
              {"x": pa.month_day_nano_interval()}, pa.int64(),
              f"An INTERVAL's normalized {_which} (comparing intervals)")
