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
import decimal
import re

import pyarrow as pa

from ..errors import BindError

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


# ---- INTERVAL text ('1 day 2 hours', '1.5 days', '02:30:00') ----------------------------------

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


def interval_value(text: str, unit: str | None) -> pa.MonthDayNano:
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
    return pa.MonthDayNano([months, days, nanos])
