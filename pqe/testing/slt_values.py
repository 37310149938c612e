"""Rendering result values the way SQLite's sqllogictest driver (slt_sqlite.c) does.

The expected results in the corpus were produced by that driver, which reads each value through
SQLite's C API *according to the column's type letter*, not the value's own type:

- ``I``: ``sqlite3_column_int`` then ``printf("%d")``. A real is truncated toward zero (clamped
  to the 64-bit range), text is parsed for a leading integer (``'12abc'`` -> 12, ``'abc'`` -> 0),
  and the 64-bit result is narrowed to a C ``int`` (low 32 bits, two's complement).
- ``R``: ``sqlite3_column_double`` then SQLite's own ``printf("%.3f")`` (see `format_real_3`).
- ``T``: ``sqlite3_column_text``: integers as ``%lld``, reals as ``%!.15g`` (always with a
  decimal point, ``1.0``), ``''`` as ``(empty)``, and every byte outside ``' '..'~'`` as ``@``.
- SQL NULL is ``NULL`` whatever the letter.

pqe returns Arrow types (bool, decimal, ...) SQLite does not have; they are mapped onto SQLite's
storage classes first: bool -> integer 0/1, decimal -> real. A float NaN is rendered ``NaN``
rather than NULL on purpose: SQLite never produces NaN, so it marks a real divergence.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import hashlib
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_INT_PREFIX = re.compile(r"^\s*([+-]?\d+)")
_REAL_PREFIX = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


def _as_sqlite(value: Any) -> Any:
    """Map a Python value from Arrow onto SQLite's storage classes (int, float, str, bytes)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (int, float, str, bytes)):
        return value
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat(sep=" ") if isinstance(value, _dt.datetime) else value.isoformat()
    return str(value)


def _float_to_int64(r: float) -> int:
    """SQLite's doubleToInt64: truncate toward zero, clamp to the int64 range."""
    if math.isnan(r):
        return 0
    if r <= _INT64_MIN:
        return _INT64_MIN
    if r >= _INT64_MAX:
        return _INT64_MAX
    return int(r)


def _to_c_int(i: int) -> int:
    """Narrow to a 32-bit C int, as the cast in sqlite3_column_int does."""
    i &= 0xFFFFFFFF
    return i - 2**32 if i >= 2**31 else i


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def sqlite_int(value: Any) -> int:
    """The integer SQLite's ``sqlite3_column_int`` returns for a (non-NULL) value."""
    v = _as_sqlite(value)
    if isinstance(v, int):
        return _to_c_int(v)
    if isinstance(v, float):
        return _to_c_int(_float_to_int64(v))
    m = _INT_PREFIX.match(_text(v))
    if not m:
        return 0
    return _to_c_int(max(_INT64_MIN, min(_INT64_MAX, int(m.group(1)))))


def sqlite_real(value: Any) -> float:
    """The double SQLite's ``sqlite3_column_double`` returns for a (non-NULL) value."""
    v = _as_sqlite(value)
    if isinstance(v, (int, float)):
        return float(v)
    m = _REAL_PREFIX.match(_text(v))
    return float(m.group(1)) if m else 0.0


def format_real_3(r: float) -> str:
    """SQLite's ``printf("%.3f")``, which differs from C's in three ways: ties round half up
    (on the exact decimal value of the double), at most 16 significant digits are produced
    (the rest print as 0, so 2**63 is 9223372036854776000.000), and -0.0 prints as 0.000."""
    if math.isnan(r):
        return "NaN"
    if math.isinf(r):
        return "Inf" if r > 0 else "-Inf"
    exact = decimal.Decimal(abs(r))  # exact value of the double
    places = -3
    if exact:
        places = max(places, exact.adjusted() - 15)
    rounded = exact.quantize(decimal.Decimal(1).scaleb(places), rounding=decimal.ROUND_HALF_UP)
    return ("-" if r < 0.0 else "") + f"{rounded:.3f}"


def format_real_text(r: float) -> str:
    """SQLite's text form of a real, ``%!.15g``: always shows a decimal point (``1.0``)."""
    if math.isnan(r):
        return "NaN"
    if math.isinf(r):
        return "Inf" if r > 0 else "-Inf"
    s = f"{r:.15g}"
    if "e" in s:
        mantissa, exponent = s.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}e{exponent}"
    return s if "." in s else s + ".0"


def _printable(text: str) -> str:
    # The C driver works on UTF-8 bytes, so one non-ASCII character becomes several '@'.
    return "".join(chr(b) if 32 <= b <= 126 else "@" for b in text.encode("utf-8"))


def render_value(value: Any, type_char: str) -> str:
    """One result value as the text sqllogictest compares, for column type ``I``, ``R`` or ``T``."""
    if value is None:
        return "NULL"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if type_char == "I":
        return str(sqlite_int(value))
    if type_char == "R":
        return format_real_3(sqlite_real(value))
    if type_char == "T":
        v = _as_sqlite(value)
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return format_real_text(v)
        text = _text(v)
        return "(empty)" if text == "" else _printable(text)
    raise ValueError(f"unknown type character {type_char!r}")


def render_rows(rows: Iterable[Sequence[Any]], types: str) -> list[list[str]]:
    return [[render_value(v, t) for v, t in zip(row, types)] for row in rows]


def sort_values(rows: list[list[str]], sort_mode: str) -> list[str]:
    """Flatten rendered rows in the order the sort mode asks for.

    Sorting compares rendered text with strcmp semantics (so "10" < "9"): rendered values are
    ASCII, where Python's string order is byte order.
    """
    if sort_mode == "rowsort":
        rows = sorted(rows)
    flat = [v for row in rows for v in row]
    if sort_mode == "valuesort":
        flat.sort()
    return flat


def hash_values(values: Iterable[str]) -> str:
    """md5 over every value followed by a newline (the ``N values hashing to`` digest)."""
    h = hashlib.md5()
    for v in values:
        h.update(v.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()
