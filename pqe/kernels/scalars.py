"""Kernels of text, date, list, struct and hashing functions (DuckDB's semantics).

Each builder compiles a `Call` to an Arrow compute expression, as `expressions._CALLS` does
(which takes this module's `CALLS`). Where Arrow has no kernel, a vectorized function is
registered with pyarrow.compute (`udfs`-style): functions whose signature depends on an
element type (lists) are registered per type when first compiled, in the process that runs
the expression (tasks compile their expressions where they run).
"""

from __future__ import annotations

import hashlib
import re
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import types as T
from ..errors import ExecutionError, UnsupportedError
from .user_functions import in_flight
from ..plan.expr import Call, Literal
from .udfs import batch_arrays as _arrays, interval_length
from . import hashing
from .expressions import (Compiler, E, _call, _const_int, _const_text, _register_by_type,
                          calendar_checked,
                          _used, null_of, scalar, utc, utc_type, volatile_tag)

# ---- registration helpers ---------------------------------------------------------------------


_REGISTERING = threading.Lock()  # tasks on threads may compile a new signature at once


def _register(name: str, fn, in_types: dict, out_type: pa.DataType, summary: str) -> str:
    with _REGISTERING:
        try:
            pc.get_function(name)
        except (KeyError, pa.ArrowKeyError):
            pc.register_scalar_function(in_flight(fn), name, {"summary": summary, "description": summary},
                                        in_types, out_type)
    return name


def _typed_name(base: str, *types: pa.DataType) -> str:
    """A registered function's name for one signature (list<int64> -> 'list<item: int64>')."""
    return base + "(" + ",".join(re.sub(r"\s+", "", str(t)) for t in types) + ")"




def _valid(*arrays: pa.Array) -> np.ndarray:
    ok = np.ones(len(arrays[0]), bool)
    for a in arrays:
        if a.null_count:
            ok &= pc.is_valid(a).to_numpy(zero_copy_only=False)
    return ok


# ---- text --------------------------------------------------------------------------------------


_REGEX_OPTIONS = {"g", "i", "c"}


def _regexp_replace(c: Compiler, e: Call) -> E:
    """REGEXP_REPLACE(s, pattern, replacement[, options]): the first match replaced, every
    match with option 'g'; 'i' ignores case, 'c' (the default) does not. \\1 in the
    replacement is the first group (RE2, as DuckDB)."""
    s, pat, rep = e.args[:3]
    a, b = _const_text(pat, "REGEXP_REPLACE pattern"), _const_text(rep, "REGEXP_REPLACE replacement")
    opts = _const_text(e.args[3], "REGEXP_REPLACE options") if len(e.args) > 3 else ""
    if a is None or b is None or opts is None:
        return null_of(T.TEXT)
    unknown = set(opts) - _REGEX_OPTIONS
    if unknown:
        raise UnsupportedError(f"REGEXP_REPLACE option(s) {''.join(sorted(unknown))!r} "
                               "are not supported")
    if "i" in opts:
        a = "(?i)" + a
    most = None if "g" in opts else 1
    return _call("replace_substring_regex", [c(s)], pc.ReplaceSubstringOptions(a, b, max_replacements=most))


def _regexp_extract(c: Compiler, e: Call) -> E:
    """REGEXP_EXTRACT(s, pattern[, group]): the first match (or its group), '' when nothing
    matches. The string is rewritten to the group by one anchored replacement:
    ^.*?(pattern).*$ -> \\k, the lazy prefix finding the leftmost match."""
    s, pat = e.args[:2]
    p = _const_text(pat, "REGEXP_EXTRACT pattern")
    group = _const_int(e.args[2], "REGEXP_EXTRACT group") if len(e.args) > 2 else 0
    if p is None or group is None:
        return null_of(T.TEXT)
    if not 0 <= group <= 8:
        raise UnsupportedError(f"REGEXP_EXTRACT group {group} (0 to 8) is not supported")
    try:
        groups = re.compile(p).groups
    except re.error:
        groups = None  # RE2 syntax Python lacks: Arrow reports a bad pattern itself
    if groups is not None and group > groups:
        raise ExecutionError(f"REGEXP_EXTRACT: the pattern has no group {group}")
    x = c(s)
    whole = _call("replace_substring_regex", [x], pc.ReplaceSubstringOptions(
        f"^(?s:.*?)({p})(?s:.*)$", f"\\{group + 1}", max_replacements=1))
    found = _call("match_substring_regex", [x], pc.MatchSubstringOptions(p))
    return _call("if_else", [found, whole, scalar("", T.TEXT)])


def _concat_ws(c: Compiler, e: Call) -> E:
    """CONCAT_WS(sep, a, ...): the non-NULL arguments joined by sep; NULL when sep is."""
    sep, *args = e.args
    # NULL constants are skipped anyway (and Arrow's kernel fails on all-constant input)
    args = [a for a in args if not (isinstance(a, Literal) and a.value is None)]
    if not args:
        return _call("if_else", [_call("is_valid", [c(sep)]), scalar("", T.TEXT), null_of(T.TEXT)])
    values = [c(a) for a in args]
    # Arrow's kernel drops a row whose values are all NULL (pyarrow 26: the result is shorter
    # than its input, rows shift, and a query over it crashed the process): such a row's
    # first value is '' instead, which joins to '' as the row should
    some = _call("is_valid", [values[0]])
    for v in values[1:]:
        some = _call("or", [some, _call("is_valid", [v])])
    values[0] = _call("if_else", [some, values[0], scalar("", T.TEXT)])
    return _call("binary_join_element_wise", values + [c(sep)],
                 pc.JoinOptions(null_handling="skip"))


def _utf8_encode(cp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Code points -> UTF-8 bytes and offsets, with whole-array operations."""
    n_bytes = 1 + (cp >= 0x80) + (cp >= 0x800) + (cp >= 0x10000)
    offsets = np.zeros(len(cp) + 1, np.int32)
    np.cumsum(n_bytes, out=offsets[1:])
    data = np.zeros(int(offsets[-1]), np.uint8)
    start = offsets[:-1]
    lead_mark = np.select([n_bytes == 1, n_bytes == 2, n_bytes == 3], [0, 0xC0, 0xE0], 0xF0)
    lead_bits = cp >> (6 * (n_bytes - 1))
    data[start] = (lead_mark | lead_bits).astype(np.uint8)
    for k in range(1, 4):  # continuation bytes (a loop over byte positions, not rows)
        has = n_bytes > k
        shift = 6 * (n_bytes[has] - 1 - k)
        data[start[has] + k] = (0x80 | ((cp[has] >> shift) & 0x3F)).astype(np.uint8)
    return data, offsets


def chr_kernel(ctx, codes):
    """CHR(n): the character with code point n (an error outside Unicode or a surrogate)."""
    (codes,) = _arrays(ctx, codes)
    valid = _valid(codes)
    cp = pc.fill_null(codes, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    bad = valid & ((cp < 0) | (cp > 0x10FFFF) | ((cp >= 0xD800) & (cp <= 0xDFFF)))
    if bad.any():
        raise pa.ArrowInvalid(f"CHR: {int(cp[bad][0])} is not a valid Unicode code point")
    data, offsets = _utf8_encode(np.where(valid, cp, 0))
    mask = None if valid.all() else pa.array(valid).buffers()[1]  # validity bitmap
    return pa.StringArray.from_buffers(len(cp), pa.py_buffer(offsets), pa.py_buffer(data), mask,
                                       int((~valid).sum()))


_register("pqe_chr", chr_kernel, {"n": pa.int64()}, pa.string(), "The character of a code point")


def ascii_kernel(ctx, strings):
    """ASCII(s): the code point of the first character (0 for ''), decoded from the UTF-8
    lead bytes of every row at once."""
    (strings,) = _arrays(ctx, strings)
    n = len(strings)
    valid = _valid(strings)
    b = strings.cast(pa.binary())
    offsets = np.frombuffer(b.buffers()[1], np.int32)[b.offset: b.offset + n + 1]
    data = np.frombuffer(b.buffers()[2], np.uint8) if b.buffers()[2] is not None \
        else np.zeros(0, np.uint8)
    length = offsets[1:] - offsets[:-1]
    start = offsets[:-1]
    padded = np.concatenate([data, np.zeros(4, np.uint8)]).astype(np.int64)
    b0 = np.where(length > 0, padded[np.minimum(start, len(data))], 0)
    b1, b2, b3 = (padded[np.minimum(start + k, len(data) + k)] & 0x3F for k in (1, 2, 3))
    cp = np.select([b0 < 0x80, b0 < 0xE0, b0 < 0xF0],
                   [b0, ((b0 & 0x1F) << 6) | b1, ((b0 & 0x0F) << 12) | (b1 << 6) | b2],
                   ((b0 & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3)
    return pa.array(np.where(length > 0, cp, 0), pa.int64(), mask=~valid)


_register("pqe_ascii", ascii_kernel, {"s": pa.string()}, pa.int64(),
          "The code point of the first character")


def _octet_length(c: Compiler, e: Call) -> E:
    (a,) = e.args
    x = c(a) if pa.types.is_binary(a.dtype) else c(a).cast(pa.binary())
    return _call("binary_length", [x]).cast(T.INT64)


# a private-use code point per character of TRANSLATE's `from` (plane 15): the two-step
# replacement never maps a character twice
_PLACEHOLDER = 0xF0000


def _translate(c: Compiler, e: Call) -> E:
    """TRANSLATE(s, from, to): each character of `from` becomes the character at the same
    position of `to`, or is removed when `to` is shorter; the first occurrence in `from`
    counts. One replacement per character of `from` (a loop over the constant, not the rows),
    through placeholders when a target is itself a character to translate."""
    s, f, t = e.args
    src, dst = _const_text(f, "TRANSLATE characters"), _const_text(t, "TRANSLATE replacements")
    if src is None or dst is None:
        return null_of(T.TEXT)
    pairs: dict[str, str] = {}
    for i, ch in enumerate(src):
        pairs.setdefault(ch, dst[i] if i < len(dst) else "")
    x = c(s)
    overlap = set("".join(pairs.values())) & set(pairs)
    if not overlap:
        for a, b in pairs.items():
            x = _call("replace_substring", [x], pc.ReplaceSubstringOptions(a, b))
        return x
    holders = {a: chr(_PLACEHOLDER + i) for i, a in enumerate(pairs)}
    x = _call("pqe_check_no_placeholder", [x, scalar(len(pairs), T.INT64)])
    for a, h in holders.items():
        x = _call("replace_substring", [x], pc.ReplaceSubstringOptions(a, h))
    for a, h in holders.items():
        x = _call("replace_substring", [x], pc.ReplaceSubstringOptions(h, pairs[a]))
    return x


def check_no_placeholder(ctx, strings, count):
    """The strings unchanged, or an error when one holds TRANSLATE's placeholder characters."""
    (strings,) = _arrays(ctx, strings)
    k = count.as_py() if isinstance(count, pa.Scalar) else count[0].as_py()
    pattern = "[" + chr(_PLACEHOLDER) + "-" + chr(_PLACEHOLDER + k - 1) + "]"
    if pc.any(pc.match_substring_regex(strings, pattern)).as_py():
        raise pa.ArrowInvalid("TRANSLATE: the text holds private-use characters U+F0000.. "
                              "that this TRANSLATE needs; not supported")
    return strings


_register("pqe_check_no_placeholder", check_no_placeholder,
          {"s": pa.string(), "n": pa.int64()}, pa.string(),
          "Check no string holds TRANSLATE's placeholder characters")


def _overlay(c: Compiler, e: Call) -> E:
    """OVERLAY(s PLACING x FROM n [FOR m]): the m characters of s from position n replaced
    by x (m defaults to the length of x); n and m are constants."""
    s, x = e.args[:2]
    start = _const_int(e.args[2], "OVERLAY position")
    count = _const_int(e.args[3], "OVERLAY length") if len(e.args) > 3 else None
    if start is None or (len(e.args) > 3 and count is None):
        return null_of(T.TEXT)
    if start < 1 or (count is not None and count < 0):
        raise UnsupportedError("OVERLAY with a position below 1 or a negative length")
    cs, cx = c(s), c(x)
    head = _call("utf8_slice_codeunits", [cs], pc.SliceOptions(0, start - 1))
    if count is None:
        skip = _call("add", [_call("utf8_length", [cx]).cast(T.INT64), scalar(start - 1, T.INT64)])
        # the tail from a per-row position: drop `skip` characters (pqe_drop_chars)
        tail = _call("pqe_drop_chars", [cs, skip])
    else:
        tail = _call("utf8_slice_codeunits", [cs], pc.SliceOptions(start - 1 + count))
    return _call("binary_join_element_wise", [head, cx, tail, scalar("", T.TEXT)])


def drop_chars(ctx, strings, counts):
    """The strings without their first `counts` characters (a count per row): the byte
    position of each row's cut, found from the UTF-8 lead bytes with a cumulative count."""
    strings, counts = _arrays(ctx, strings, counts)
    n = len(strings)
    valid = _valid(strings, counts)
    b = strings.cast(pa.binary())
    offsets = np.frombuffer(b.buffers()[1], np.int32)[b.offset: b.offset + n + 1].astype(np.int64)
    data = np.frombuffer(b.buffers()[2], np.uint8) if b.buffers()[2] is not None \
        else np.zeros(0, np.uint8)
    lead = (data & 0xC0) != 0x80  # the first byte of each character
    chars_before = np.concatenate([[0], np.cumsum(lead)])  # characters before byte i
    k = np.maximum(pc.fill_null(counts, 0).to_numpy(zero_copy_only=False), 0)
    # the byte where the (k+1)-th character of the row starts: the last byte with k
    # characters of the row before it (past the row's end when it has no more)
    target = chars_before[offsets[:-1]] + k
    cut = np.searchsorted(chars_before, target, side="right") - 1
    cut = np.clip(np.minimum(cut, offsets[1:]), offsets[:-1], offsets[1:])
    lengths = offsets[1:] - cut
    new_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    take = np.repeat(cut - new_offsets[:-1], lengths) + np.arange(int(new_offsets[-1]))
    out = data[take] if len(take) else np.zeros(0, np.uint8)
    mask = None if valid.all() else pa.array(valid).buffers()[1]  # validity bitmap
    return pa.StringArray.from_buffers(n, pa.py_buffer(new_offsets), pa.py_buffer(out.tobytes()),
                                       mask, int((~valid).sum()))


_register("pqe_drop_chars", drop_chars, {"s": pa.string(), "k": pa.int64()}, pa.string(),
          "Drop the first k characters of each string")


def md5_kernel(ctx, strings):
    """MD5 of the UTF-8 bytes as 32 hex digits. Arrow has no MD5 kernel and numpy no
    vectorized form of it: this is the one per-row loop (hashlib, C speed per value)."""
    (strings,) = _arrays(ctx, strings)
    out = [None if v is None else hashlib.md5(v.encode()).hexdigest()
           for v in strings.to_pylist()]
    return pa.array(out, pa.string())


_register("pqe_md5", md5_kernel, {"s": pa.string()}, pa.string(), "MD5 as hex text")


def _hash_input(c: Compiler, e: Call) -> tuple[E, pa.DataType]:
    """The argument in one of the types `pqe_hash` is registered for."""
    (a,) = e.args
    t = a.dtype
    x = c(a)
    if T.is_integer(t):
        return x.cast(pa.int64()), pa.int64()
    if T.is_floating(t):
        return x.cast(pa.float64()), pa.float64()
    if T.is_text(t) or T.is_decimal(t):  # decimals by their text (scale kept)
        return x.cast(pa.string()), pa.string()
    if pa.types.is_binary(t) or T.is_boolean(t):
        return x, t
    if pa.types.is_date(t):
        return x.cast(pa.int32()).cast(pa.int64()), pa.int64()
    if pa.types.is_timestamp(t):
        return x.cast(pa.timestamp("us", t.tz)).cast(pa.int64()), pa.int64()
    if T.is_null(t):
        return scalar(None, pa.int64()), pa.int64()
    raise UnsupportedError(f"HASH of {T.type_name(t)} is not supported")


_HASH_SALT = np.uint64(0x2545F4914F6CDD1D)


def hash_kernel(ctx, values):
    """hashing.hash_column (every byte of the value, splitmix64-mixed; NULL has its own),
    salted and mixed once more: HASH('') and HASH(0) are not 0, and HASH's values are not the
    partitioning hash's."""
    (values,) = _arrays(ctx, values)
    with np.errstate(over="ignore"):
        h = hashing.hash_column(values) + _HASH_SALT
    return pa.array(hashing.fmix(h), pa.uint64())


for _t in (pa.int64(), pa.float64(), pa.string(), pa.binary(), pa.bool_()):
    _register(_typed_name("pqe_hash", _t), hash_kernel, {"x": _t}, pa.uint64(),
              "A deterministic 64-bit hash")


def _hash(c: Compiler, e: Call) -> E:
    if pa.types.is_uint64(e.args[0].dtype):
        # past BIGINT (the int64 cast failed): by its text, as a DECIMAL of the value hashes;
        # below, as every integer type
        x = c.share(c(e.args[0]))
        big = c.share(_call("coalesce", [_call("greater", [x, scalar(2 ** 63 - 1, pa.uint64())]),
                                         scalar(False, T.BOOLEAN)]))  # NULL: its own hash
        small = _call("if_else", [big, scalar(0, pa.uint64()), x]).cast(pa.int64())
        return _call("if_else", [big, _call(_typed_name("pqe_hash", pa.string()),
                                            [x.cast(pa.string())]),
                                 _call(_typed_name("pqe_hash", pa.int64()), [small])])
    x, t = _hash_input(c, e)
    return _call(_typed_name("pqe_hash", t), [x])


def _md5(c: Compiler, e: Call) -> E:
    return _call("pqe_md5", [c(e.args[0])])


# ---- typeof ------------------------------------------------------------------------------------

_DUCKDB_NAMES = {pa.float32(): "FLOAT", pa.binary(): "BLOB", pa.null(): '"NULL"'}


def duckdb_type_name(t: pa.DataType) -> str:
    """A type as DuckDB's TYPEOF spells it (INTEGER[], TIMESTAMP WITH TIME ZONE, ...)."""
    if t in _DUCKDB_NAMES:
        return _DUCKDB_NAMES[t]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return duckdb_type_name(t.value_type) + "[]"
    if pa.types.is_fixed_size_list(t):
        return f"{duckdb_type_name(t.value_type)}[{t.list_size}]"
    if pa.types.is_struct(t):
        return "STRUCT(" + ", ".join(f"{f.name} {duckdb_type_name(f.type)}" for f in t) + ")"
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            return "TIMESTAMP WITH TIME ZONE"
        return {"s": "TIMESTAMP_S", "ms": "TIMESTAMP_MS", "us": "TIMESTAMP",
                "ns": "TIMESTAMP_NS"}[t.unit]
    return T.type_name(t)


def _typeof(c: Compiler, e: Call) -> E:
    return scalar(duckdb_type_name(e.args[0].dtype), T.TEXT)


# ---- dates -------------------------------------------------------------------------------------

# the specifiers pqe's STRFTIME and STRPTIME read as DuckDB does (others are refused)
_STRFTIME = set("YmdHMSfjaAbByIp%")
_STRPTIME = set("YmdHMSjbByIp%")
_SPEC = re.compile(r"%(.)|[^%]+|%$", re.DOTALL)


def _format_parts(fmt: str, allowed: set, fn: str) -> list[str]:
    """The format as literal pieces and specifiers ('%Y'), each unknown specifier refused."""
    parts = []
    for m in _SPEC.finditer(fmt):
        spec = m.group(1)
        if m.group(0) == "%":
            raise UnsupportedError(f"{fn} format ending in '%' is not supported")
        if spec is not None and spec not in allowed:
            raise UnsupportedError(f"{fn} format specifier %{spec} is not supported")
        parts.append(m.group(0))
    return parts


def _strftime(c: Compiler, e: Call) -> E:
    """STRFTIME(ts, fmt): %S is the whole seconds and %f the microseconds (six digits) as in
    DuckDB (Arrow's %S shows the fraction): Arrow formats the time truncated to seconds, the
    microseconds are formatted apart."""
    a, f = e.args
    fmt = _const_text(f, "STRFTIME format")
    if fmt is None:
        return null_of(T.TEXT)
    parts = _format_parts(fmt, _STRFTIME, "STRFTIME")
    x = utc(c(a), a.dtype)
    if all(p in _FIXED_WIDTH or not p.startswith("%") for p in parts):
        return calendar_checked(_fixed_strftime(x, a.dtype, parts), T.TEXT, x,
                                utc_type(a.dtype), "STRFTIME")
    if pa.types.is_date(a.dtype):
        secs = x.cast(pa.timestamp("s"))
        micros = _call("if_else", [_call("is_valid", [x]), scalar("000000", T.TEXT), null_of(T.TEXT)])
    else:
        unit_t = pa.timestamp("s", "UTC" if a.dtype.tz is not None else None)
        secs = _call("floor_temporal", [x], pc.RoundTemporalOptions(1, "second")).cast(unit_t, safe=False)
        us = _call("add", [_call("multiply", [_call("millisecond", [x]), scalar(1000, T.INT64)]),
                           _call("microsecond", [x])])
        micros = _call("utf8_lpad", [us.cast(T.TEXT)], pc.PadOptions(6, "0"))
    pieces: list[E] = []
    text = ""
    for p in parts:
        if p == "%f":
            if text:
                pieces.append(_call("strftime", [secs], pc.StrftimeOptions(text, "C")))
                text = ""
            pieces.append(micros)
        else:
            text += p
    if text or not pieces:
        pieces.append(_call("strftime", [secs], pc.StrftimeOptions(text, "C")))
    return calendar_checked(_call("binary_join_element_wise", pieces + [scalar("", T.TEXT)]),
                            T.TEXT, x, utc_type(a.dtype), "STRFTIME")


# specifiers of a fixed number of digits (for years 0 to 9999), and how many
_FIXED_WIDTH = {"%Y": 4, "%m": 2, "%d": 2, "%H": 2, "%M": 2, "%S": 2, "%f": 6, "%j": 3, "%%": 1}


def _fixed_strftime(x: E, t: pa.DataType, parts: list[str]) -> E:
    """STRFTIME of a format of fixed-width numbers and literal text, by a function
    registered per input type (`fixed_width_strftime`): Arrow's strftime formats each value
    through a calendar library, ~0.5 us a value (GROUP BY strftime(ts, '%Y-%m') of 2M rows:
    9-13x DuckDB)."""
    unit_t = t if pa.types.is_date(t) else utc_type(t)
    name = _register_by_type("pqe_strftime_fixed", unit_t, pa.string(), fixed_width_strftime,
                             {"x": unit_t, "format": pa.string()},
                             "STRFTIME of fixed-width specifiers")
    return _call(name, [x, scalar("".join(parts), T.TEXT)])


def fixed_width_strftime(ctx, values, fmt):
    """Format date32 or timestamp values (UTC wall clock) by a format of `_FIXED_WIDTH`
    specifiers and literal text: every row has the same byte length, so the text is one
    numpy byte matrix filled column by column from the calendar fields (H. Hinnant's
    civil_from_days). A batch holding a year outside 0..9999 goes to Arrow's strftime."""
    n = ctx.batch_length
    fmt = fmt.as_py() if isinstance(fmt, pa.Scalar) else fmt[0].as_py()
    if isinstance(values, pa.Scalar):
        values = pa.repeat(values, n)
    t = values.type
    date = pa.types.is_date(t)
    per = 1 if date else {"s": 1, "ms": 10 ** 3, "us": 10 ** 6, "ns": 10 ** 9}[t.unit]
    raw = pc.fill_null(values.cast(pa.int32() if date else pa.int64()), 0)
    raw = raw.to_numpy(zero_copy_only=False).astype(np.int64)
    days, sub = (raw, np.zeros(n, dtype=np.int64)) if date else np.divmod(raw, 86_400 * per)
    # civil_from_days
    z = days + 719_468
    era = np.floor_divide(z, 146_097)
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    year = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    year = year + (month <= 2)
    if n and (year.min() < 0 or year.max() > 9999):
        return _arrow_strftime(values, fmt, sub, per)
    secs = sub // per
    fields = {"%Y": year, "%m": month, "%d": day, "%H": secs // 3600, "%M": secs // 60 % 60,
              "%S": secs % 60, "%f": (sub % per) * 10 ** 6 // per,
              "%j": _day_of_year(year, month, day)}
    pieces = [m.group(0) for m in _SPEC.finditer(fmt)]
    width = sum(_FIXED_WIDTH.get(p, len(p.encode())) if p.startswith("%")
                else len(p.encode()) for p in pieces)
    text = np.empty((n, width), dtype=np.uint8)
    col = 0
    for p in pieces:
        if p.startswith("%") and p != "%%":
            v, w = fields[p], _FIXED_WIDTH[p]
            for k in range(w):  # (a loop over digit positions, not rows)
                text[:, col + k] = 48 + (v // 10 ** (w - 1 - k)) % 10
            col += w
        else:
            b = np.frombuffer(("%" if p == "%%" else p).encode(), dtype=np.uint8)
            text[:, col:col + len(b)] = b
            col += len(b)
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32) if width else \
        np.zeros(n + 1, dtype=np.int32)
    valid = values.buffers()[0] if values.null_count else None
    if valid is not None and values.offset:
        valid = pc.is_valid(values).buffers()[1]
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(text.tobytes()),
                                       valid, values.null_count)


def _day_of_year(year, month, day):
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    before = np.array([0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334])[month]
    return before + day + (leap & (month > 2))


def _arrow_strftime(values, fmt: str, sub: np.ndarray, per: int) -> pa.Array:
    """`fixed_width_strftime` by Arrow's strftime (years past 0..9999): of the time cut to
    whole seconds (Arrow's %S shows the fraction), %f apart (`_strftime`)."""
    if pa.types.is_date(values.type):
        secs = values.cast(pa.timestamp("s"))
    else:
        secs = pc.floor_temporal(values, unit="second").cast(
            pa.timestamp("s", values.type.tz), safe=False)
    micros = pc.utf8_lpad(pa.array((sub % per) * 10 ** 6 // per).cast(pa.string()), 6, "0")
    out, text = [], ""
    for m in _SPEC.finditer(fmt):
        if m.group(0) == "%f":
            if text:
                out.append(pc.strftime(secs, text, "C"))
                text = ""
            out.append(micros)
        else:
            text += m.group(0)
    if text or not out:
        out.append(pc.strftime(secs, text, "C"))
    joined = pc.binary_join_element_wise(*out, "")
    return pc.if_else(pc.is_valid(values), joined, pa.scalar(None, pa.string()))


def _strptime(c: Compiler, e: Call) -> E:
    """STRPTIME(s, fmt): a TIMESTAMP; text that does not match the format is an error."""
    s, f = e.args
    fmt = _const_text(f, "STRPTIME format")
    if fmt is None:
        return null_of(T.TIMESTAMP)
    parts = _format_parts(fmt, _STRPTIME, "STRPTIME")
    x = _used(c, c(s), T.TEXT)  # (only the rows a CASE branch takes: see _cast)
    parsed = _call("strptime", [x], pc.StrptimeOptions(fmt, "us", error_is_null=False))
    checked = [(spec, kernel) for spec, kernel in _STRPTIME_CHECKED if spec in parts]
    if not checked:
        return parsed
    # Arrow's strptime rolls a day the month (or a day of year the year) lacks over (2023-02-29
    # was 2023-03-01, '2019 366' 2021-02-01; DuckDB: an error): the day the text gives must
    # be the parsed day
    named: set[str] = set()
    pattern = ""
    for p in parts:  # the first of each checked specifier names its group
        group = _STRPTIME_GROUPS.get(p, None)
        if p in _STRPTIME_NAMED and p not in named:
            named.add(p)
            group = f"(?P<{p[1]}>{group})"
        pattern += group or re.escape(p)
    fields = _call("extract_regex", [x], pc.ExtractRegexOptions("^" + pattern + "$"))
    failed = None
    for spec, kernel in checked:
        given = _call("struct_field", [fields], pc.StructFieldOptions(spec[1])).cast(T.INT64)
        wrong = _call("not_equal", [given, _call(kernel, [parsed])])
        failed = wrong if failed is None else _call("or_kleene", [failed, wrong])
    failed = _call("and_kleene", [_call("is_valid", [failed]), failed])
    check = _call("pqe_check_cast", [x, failed, scalar("TIMESTAMP", T.TEXT)])
    return _call("if_else", [check, parsed, null_of(T.TIMESTAMP)])


# the text each STRPTIME specifier reads, for finding the day of month (of year) it was given
# (the first %d names the group d, %j j), and the parsed field each must equal
_STRPTIME_CHECKED = (("%d", "day"), ("%j", "day_of_year"))
_STRPTIME_NAMED = ("%d", "%j")
_STRPTIME_GROUPS = {"%Y": r"[+-]?\d{1,4}", "%m": r"\d{1,2}", "%d": r"\d{1,2}",
                    "%H": r"\d{1,2}", "%M": r"\d{1,2}", "%S": r"\d{1,2}", "%j": r"\d{1,3}",
                    "%b": r"[A-Za-z]+", "%B": r"[A-Za-z]+", "%y": r"\d{1,2}", "%I": r"\d{1,2}",
                    "%p": r"[AaPp][Mm]", "%%": "%"}


def _random(c: Compiler, e: Call) -> E:
    return volatile_tag()  # (a value per row and per call)


# ---- lists ---------------------------------------------------------------------------------------


def _list_value_kernel(n: int):
    def build(ctx, *args):
        """The arguments of each row as one list: the columns concatenated, then taken
        row by row (an index permutation, no loop over rows)."""
        rows = ctx.batch_length
        cols = _arrays(ctx, *args)
        values = pa.concat_arrays(cols) if cols else pa.array([], pa.int32())
        idx = (np.arange(rows)[:, None] + np.arange(n)[None, :] * rows).ravel()
        offsets = pa.array(np.arange(rows + 1, dtype=np.int32) * n, pa.int32())
        return pa.ListArray.from_arrays(offsets, values.take(pa.array(idx, pa.int64())))
    return build


def _list_value(c: Compiler, e: Call) -> E:
    elem = e.dtype.value_type
    n = len(e.args)
    if n == 0:
        return scalar((), e.dtype)
    name = _typed_name(f"pqe_list_value{n}", elem)
    _register(name, _list_value_kernel(n), {f"a{i}": elem for i in range(n)}, e.dtype,
              "A list of the arguments")
    return _call(name, [c(a) for a in e.args])


def _length(c: Compiler, e: Call) -> E:
    (a,) = e.args
    if T.is_text(a.dtype) or T.is_null(a.dtype):
        return _call("utf8_length", [c(a)]).cast(T.INT64)
    return _call("list_value_length", [c(a)]).cast(T.INT64)


def _list_length(c: Compiler, e: Call) -> E:
    return _call("list_value_length", [c(e.args[0])]).cast(T.INT64)


def list_contains_kernel(ctx, lists, needles):
    """Whether each list holds its row's value, as DuckDB answers: NULL elements never
    match; a NULL list gives NULL, a NULL value NULL unless the list is empty (FALSE).
    Elements are compared with their row's value, the hits scattered to their rows."""
    lists, needles = _arrays(ctx, lists, needles)
    # a NULL list may still span values in the buffers: list_flatten skips them where
    # list_parent_indices counts them ("Array arguments must all be the same length");
    # as empty lists both agree (their NULL comes back through `null` below)
    clean = pc.fill_null(lists, pa.scalar([], lists.type)) if lists.null_count else lists
    values = pc.list_flatten(clean)
    parents = pc.list_parent_indices(clean)
    hits = np.zeros(len(lists), bool)
    if len(values):
        wanted = needles.take(parents)
        if pa.types.is_interval(values.type):
            # as `=` compares INTERVALs: normalized, a month 30 days and a day 24 hours
            # ('1 month' = '30 days'); Arrow has no equal kernel for them
            values, wanted = interval_length(values), interval_length(wanted)
        eq = pc.equal(values, wanted)
        if pa.types.is_floating(values.type) and pa.types.is_floating(wanted.type):
            # NaN equals NaN in pqe (=, IN, joins, GROUP BY), as in DuckDB: IEEE's equal
            # missed it (list_contains([nan, 1.0], nan) was false)
            eq = pc.or_(eq, pc.and_(pc.is_nan(values), pc.is_nan(wanted)))
        eq = pc.fill_null(eq, False).to_numpy(zero_copy_only=False)
        hits[parents.to_numpy(zero_copy_only=False)[eq]] = True
    empty = pc.equal(pc.fill_null(pc.list_value_length(lists), 0), 0).to_numpy(zero_copy_only=False)
    null = ~_valid(lists) | (~_valid(needles) & ~empty)
    return pa.array(hits, pa.bool_(), mask=null)


def _list_contains(c: Compiler, e: Call) -> E:
    a, x = e.args
    if T.is_null(a.dtype):
        return null_of(T.BOOLEAN)
    if T.is_null(x.dtype):  # a NULL value: NULL, but FALSE in an empty list (the kernel's rule)
        x = Literal(None, a.dtype.value_type) if not T.is_null(a.dtype.value_type) else x
        if T.is_null(x.dtype):
            empty = Call("list_length", (a,), T.INT64, a.nullable)
            return _call("if_else", [_call("equal", [c(empty), scalar(0, T.INT64)]),
                                     scalar(False, T.BOOLEAN), null_of(T.BOOLEAN)])
    name = _typed_name("pqe_list_contains", a.dtype)
    _register(name, list_contains_kernel, {"l": a.dtype, "x": a.dtype.value_type}, pa.bool_(),
              "Whether a list holds a value")
    return _call(name, [c(a), c(x)])


def list_extract_kernel(ctx, lists, index):
    """l[i], 1-based; negative i counts from the end; NULL out of range (DuckDB)."""
    lists, index = _arrays(ctx, lists, index)
    n = len(lists)
    valid = _valid(lists, index)
    lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False)
    i = pc.fill_null(index, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    pos = np.where(i > 0, i - 1, lengths + i)
    ok = valid & (i != 0) & (pos >= 0) & (pos < lengths)
    starts = np.asarray(lists.offsets.to_numpy()[:-1], np.int64) if n else np.zeros(0, np.int64)
    values = lists.values
    at = np.where(ok, starts + pos, 0)
    if not len(values):
        return pa.nulls(n, values.type)
    out = values.take(pa.array(at, pa.int64()))
    return pc.if_else(pa.array(ok), out, pa.scalar(None, values.type))


def _list_extract(c: Compiler, e: Call) -> E:
    a, i = e.args
    if T.is_null(a.dtype):
        return null_of(e.dtype)
    name = _typed_name("pqe_list_extract", a.dtype)
    _register(name, list_extract_kernel, {"l": a.dtype, "i": pa.int64()}, a.dtype.value_type,
              "The i-th element of a list (1-based)")
    return _call(name, [c(a), c(i)])


def _struct_extract(c: Compiler, e: Call) -> E:
    a, name = e.args
    return _call("struct_field", [c(a)], pc.StructFieldOptions([_const_text(name, "field name")]))


def unnest_column(table: pa.Table, position: int) -> pa.Table:
    """SELECT ..., UNNEST(l), ...: one row per element of the list in column `position` (no
    row for a NULL or empty list), the other columns repeated for each element; the list
    column becomes its elements. Run per partition as a MapBatches function (picklable:
    a module-level function under functools.partial)."""
    lists = table.column(position).combine_chunks()
    parents = pc.list_parent_indices(lists)
    values = pc.list_flatten(lists)
    if lists.null_count:
        # a NULL list may still span child values (Polars writes such lists):
        # list_parent_indices counts them, flatten() skips them; both drop them here
        start = lists.offsets[0].as_py()
        values = lists.values.slice(start, len(parents))
        keep = pc.is_valid(lists).take(parents)
        parents, values = parents.filter(keep), values.filter(keep)
    cols = [values if i == position else table.column(i).take(parents)
            for i in range(table.num_columns)]
    return pa.Table.from_arrays(cols, names=table.column_names)


CALLS = {
    "regexp_replace": _regexp_replace, "regexp_extract": _regexp_extract,
    "concat_ws": _concat_ws, "chr": lambda c, e: _call("pqe_chr", [c(e.args[0])]),
    "ascii": lambda c, e: _call("pqe_ascii", [c(e.args[0])]),
    "octet_length": _octet_length, "translate": _translate, "overlay": _overlay,
    "md5": _md5, "hash": _hash, "typeof": _typeof,
    "strftime": _strftime, "strptime": _strptime, "random": _random,
    "length": _length, "list_value": _list_value, "list_length": _list_length,
    "list_contains": _list_contains, "list_extract": _list_extract,
    "struct_extract": _struct_extract,
}

# functions whose answer is not NULL when every argument is NULL
NULL_AWARE = {"concat_ws", "hash", "typeof", "list_value"}

