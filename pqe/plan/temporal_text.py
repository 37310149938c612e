"""The text a DATE or TIMESTAMP (without a zone) is read from, shared by the kernels' casts of
text columns (kernels.expressions._text_to_temporal) and the folding of casts of constants
(plan.builder), so that a constant and a column holding the same text read alike.

After trimming: year-month-day (4 to 6 year digits, '-' or '/' between the parts), then
optionally a time after spaces or 'T' (hour, minutes, optional seconds, each of one or two
digits, and a fraction of any length, cut to the type's unit), then optionally a zone (Z, UTC,
+hh, +hh:mm, +hhmm), which is ignored, as PostgreSQL and DuckDB ignore it for a type without a zone. 24:00 (with zero
seconds) is the next day's midnight. A DATE reads the date of such text. A day or time that
does not exist (2023-02-29, 10:61) is not a date: NULL for TRY_CAST, an error for CAST.
"""

from __future__ import annotations

import datetime
import re

import pyarrow as pa

TEMPORAL_TEXT = (r"^(?P<y>\d{4,6})[-/](?P<m>\d{1,2})[-/](?P<d>\d{1,2})"
                 r"(?:[T ]+(?P<H>\d{1,2}):(?P<M>\d{1,2})(?::(?P<S>\d{1,2})(?:\.(?P<f>\d*))?)?)?"
                 r"(?:\s*(?:Z|[+-]\d{2}(?::?\d{2})?)|\s+(?i:UTC))?$")
# the same text, its zone offset's parts named (a TIMESTAMPTZ's text; Z, UTC or no offset at
# all are UTC, pqe's session time zone; `+02:75` is 2 hours 75 minutes, as in DuckDB)
ZONED_TEXT = (r"^\d{4,6}[-/]\d{1,2}[-/]\d{1,2}"
              r"(?:[T ]+\d{1,2}:\d{1,2}(?::\d{1,2}(?:\.\d*)?)?)?"
              r"(?:\s*(?:Z|(?P<sign>[+-])(?P<oh>\d{2})(?::?(?P<om>\d{2}))?)|\s+(?i:UTC))?$")
_PATTERN = re.compile(TEMPORAL_TEXT, re.ASCII)  # \d as RE2 reads it in the kernels
UNIT_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}

INVALID = object()  # the text names no date or time


def parse_temporal(text: str, dtype: pa.DataType):
    """The datetime.date (DATE) or datetime.datetime (TIMESTAMP) the text names, INVALID, or
    None where Python cannot hold the value exactly (a year past 9999, nanoseconds): the
    kernels then read it."""
    m = _PATTERN.match(text.strip(" \t\n\r\f\v"))  # (types.ASCII_SPACE)
    if m is None:
        return INVALID
    y, mo, d = int(m["y"]), int(m["m"]), int(m["d"])
    hh, mi, ss = int(m["H"] or 0), int(m["M"] or 0), int(m["S"] or 0)
    digits = UNIT_DIGITS[dtype.unit] if pa.types.is_timestamp(dtype) else 0
    fraction = (m["f"] or "")[:digits].ljust(digits, "0")
    if not 1 <= mo <= 12 or not 1 <= d <= 31 or mi > 59 or ss > 59 or hh > 24 or (
            hh == 24 and (mi or ss or int(fraction or 0))):
        return INVALID
    if not 1 <= y <= 9999 or digits > 6:
        return None
    try:
        day = datetime.date(y, mo, d)
    except ValueError:
        return INVALID  # (the 31st of a 30-day month, February 29th of a common year)
    if pa.types.is_date(dtype):
        return day
    try:
        return (datetime.datetime(y, mo, d) + datetime.timedelta(
            hours=hh, minutes=mi, seconds=ss, microseconds=int(fraction.ljust(6, "0") or 0)))
    except OverflowError:
        return None  # (9999-12-31 24:00)


_ZONED_PATTERN = re.compile(ZONED_TEXT, re.ASCII)


def parse_zoned(text: str, dtype: pa.DataType):
    """The instant (a datetime.datetime in UTC) a TIMESTAMPTZ's text names, as the kernels
    read a column's (kernels.expressions._zoned_from_text): `parse_temporal`'s time less its
    zone offset. INVALID, or None where Python cannot hold the value (the kernels read it)."""
    t = text.strip(" \t\n\r\f\v")
    m = _ZONED_PATTERN.match(t)
    if m is None:
        return INVALID
    naive = parse_temporal(t, pa.timestamp(dtype.unit))
    if naive is INVALID or naive is None:
        return naive
    minutes = int(m["oh"] or 0) * 60 + int(m["om"] or 0)
    try:
        return naive.replace(tzinfo=datetime.timezone.utc) - datetime.timedelta(
            minutes=-minutes if m["sign"] == "-" else minutes)
    except OverflowError:
        return None


# A TIME (time of day): hour, minutes, optional seconds (one or two digits each) and a
# fraction of any length cut to the type's unit, then the zone a TIMESTAMP may carry (ignored
# likewise). Not 24:00 (no time of day), nor a date before it (CAST it to TIMESTAMP first).
TIME_TEXT = (r"^(?P<H>\d{1,2}):(?P<M>\d{1,2})(?::(?P<S>\d{1,2})(?:\.(?P<f>\d*))?)?"
             r"(?:\s*(?:Z|[+-]\d{2}(?::?\d{2})?)|\s+(?i:UTC))?$")
_TIME_PATTERN = re.compile(TIME_TEXT, re.ASCII)


def parse_time(text: str, dtype: pa.DataType):
    """The datetime.time the text names, INVALID, or None where Python cannot hold it (a
    TIME in nanoseconds): the kernels then read it."""
    m = _TIME_PATTERN.match(text.strip(" \t\n\r\f\v"))
    if m is None:
        return INVALID
    hh, mi, ss = int(m["H"]), int(m["M"]), int(m["S"] or 0)
    if hh > 23 or mi > 59 or ss > 59:
        return INVALID
    if UNIT_DIGITS[dtype.unit] > 6:
        return None
    digits = UNIT_DIGITS[dtype.unit]
    fraction = (m["f"] or "")[:digits].ljust(digits, "0")
    return datetime.time(hh, mi, ss, int(fraction.ljust(6, "0")[:6] or 0))


__all__ = ["INVALID", "TEMPORAL_TEXT", "TIME_TEXT", "UNIT_DIGITS", "parse_temporal", "parse_time"]
