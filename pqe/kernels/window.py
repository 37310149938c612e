"""Window function kernels over one partition of rows.

The rows are sorted by (PARTITION BY keys, ORDER BY keys); segment (window partition) and peer
group boundaries come from comparing neighbouring rows; every function is then index
arithmetic on whole arrays:

- ranking: row_number, rank, dense_rank, percent_rank, cume_dist, ntile from segment and
  peer-group starts;
- navigation: lag/lead/first_value/last_value/nth_value as `take` at computed positions;
- aggregates over frames (ROWS, RANGE or GROUPS, any bounds): each row's frame is an index
  range [start, end); sum/count/avg are differences of prefix sums (exact integers for
  integers and decimals), min/max use a sparse table over value ranks (so any orderable type
  works). A frame EXCLUDE (CURRENT ROW, GROUP, TIES) cuts the range into at most three
  ordered pieces; every function combines its pieces (sums add, min/max take the best, the
  value functions take the first/last/n-th row across them);
- IGNORE NULLS (first/last/nth_value, lag/lead): positions among the valid rows only, from
  the sorted positions of the non-NULL values and their running count.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..physical.plan import Bound, WindowSpec  # the specs the planner makes
from ..plan.expr import ArgColumn, Expr
from .. import types as T
from ..errors import DataValueError, ExecutionError, UnsupportedError
from . import decimals
from .relational import sort_indices, take_rows
from .udfs import months_later

# the functions `compute` evaluates: the window functions of plan.functions.WINDOW and the
# aggregates marked window=True there (tests/test_function_registry.py checks they agree)
WINDOW_FUNCTIONS = frozenset({
    "row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead",
    "first_value", "last_value", "nth_value",
    "count_star", "count", "sum", "avg", "min", "max", "bool_and", "bool_or",
    "stddev_samp", "stddev_pop", "var_samp", "var_pop", "string_agg", "array_agg"})


# ---- boundaries ----------------------------------------------------------------------------


def _changed(col) -> np.ndarray:
    """changed[i] is True when row i differs from row i - 1 (NULLs equal each other)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    n = len(col)
    out = np.zeros(n, dtype=bool)
    if n <= 1 or pa.types.is_null(col.type):  # (NULL keys: every row a peer)
        out[:1] = True
        return out
    a, b = col.slice(1), col.slice(0, n - 1)
    ne = pc.fill_null(pc.not_equal(a, b), False)
    if T.is_floating(col.type):  # NaN is a peer of NaN (as in GROUP BY), though NaN <> NaN
        both_nan = pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False)
        ne = pc.and_(ne, pc.invert(both_nan))
    nulls = pc.xor(pc.is_null(a), pc.is_null(b))
    out[1:] = pc.or_(ne, nulls).to_numpy(zero_copy_only=False)
    out[0] = True
    return out


def _groups(flags: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The first row of each group (groups start where flags, and at row 0) and its size
    (None when every row is a group of its own)."""
    n = len(flags)
    first = np.flatnonzero(flags)
    if n and (not len(first) or first[0] != 0):
        first = np.r_[0, first]
    if len(first) == n:
        return first, None
    return first, np.diff(first, append=n)


def _starts(flags: np.ndarray) -> np.ndarray:
    """For each row, the index of the first row of its group (groups start where flags):
    each group's start repeated (np.maximum.accumulate over the rows took 5x as long for
    11.7M rows in 1,500 groups)."""
    first, sizes = _groups(flags)
    return first if sizes is None else np.repeat(first, sizes)


def _ends(flags: np.ndarray) -> np.ndarray:
    """For each row, the index one past the last row of its group."""
    first, sizes = _groups(flags)
    return first + 1 if sizes is None else np.repeat(first + sizes, sizes)


# ---- numeric helpers -----------------------------------------------------------------------


def _decimal_to_int(arr: pa.Array) -> np.ndarray:
    """Unscaled values of a decimal128 array with precision <= 18 (nulls as 0)."""
    arr = pc.fill_null(arr, decimal.Decimal(0))
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    words = np.frombuffer(arr.buffers()[1], dtype=np.int64)
    return words[2 * arr.offset: 2 * (arr.offset + len(arr)): 2].copy()


def _prefix(values: np.ndarray) -> np.ndarray:
    out = np.empty(len(values) + 1, dtype=np.result_type(values.dtype, np.int64) if values.dtype.kind in "iu" else values.dtype)
    out[0] = 0
    np.cumsum(values, out=out[1:])
    return out


# a running sum is accumulated partition by partition (a loop over window partitions, not
# rows) when there are at most this many; more fall back to `_range_sums`
RUNNING_PARTITIONS = 4096


def _partition_sums(values: np.ndarray, pieces, c) -> np.ndarray | None:
    """Float sums of the two commonest frames without `_range_sums`' ~40 passes over the
    rows: the whole window partition (no ORDER BY, or UNBOUNDED both ways: one sum per
    partition, np.add.reduceat) and a running frame from the partition's start (np.cumsum of
    each partition's values, up to the frame's end). Either adds only the frame's own values
    (no prefix difference: an inf or NaN elsewhere cannot leak in, nor large values cancel a
    small frame's digits). None for other frames. `sum(x) OVER (PARTITION BY k)` of 2M rows
    took 0.79 s of operator time in `_range_sums` (DuckDB's whole query: 0.08 s)."""
    if len(pieces) != 1 or not len(values):
        return None
    fs, fe = pieces[0]
    seg_start, seg_end = c["seg_start"], c["seg_end"]
    if not np.array_equal(fs, seg_start):
        return None
    starts = np.flatnonzero(c["seg_flags"])
    if np.array_equal(fe, seg_end):
        segment = np.cumsum(c["seg_flags"], dtype=np.int64) - 1
        return np.add.reduceat(values, starts)[segment]
    if len(starts) > RUNNING_PARTITIONS or np.any(fe < fs):
        return None
    running = np.empty(len(values), dtype=np.float64)
    for a, b in zip(starts, np.append(starts[1:], len(values)), strict=True):
        np.cumsum(values[a:b], out=running[a:b])
    return np.where(fe > fs, running[np.maximum(fe - 1, 0)], 0.0)


def _range_sums(values: np.ndarray, fs: np.ndarray, fe: np.ndarray) -> np.ndarray:
    """Float sums of values[fs:fe) for every row, from only the values inside each frame:
    prefix-sum differences would let an inf or NaN before a frame (or in an earlier window
    partition) poison it (inf - inf), and cancel a small frame's digits against a large
    prefix. Each range is cut into aligned power-of-two blocks (at most two per level),
    whose sums are pairwise sums of the values; one pass per level, over all rows at once."""
    n = len(values)
    fs = np.asarray(fs, dtype=np.int64)
    fe = np.asarray(fe, dtype=np.int64)
    total = np.zeros(len(fs), dtype=np.float64)
    if n == 0:
        return total
    levels = [values.astype(np.float64)]
    while len(levels[-1]) > 1:
        prev = levels[-1]
        if len(prev) % 2:
            prev = np.append(prev, 0.0)
        levels.append(prev[0::2] + prev[1::2])
    pos = np.minimum(fs, fe)
    blocked = np.zeros(len(fs), dtype=bool)     # ascending: a block that did not fit
    for k, level in enumerate(levels):           # rise to aligned blocks
        size = 1 << k
        take = ~blocked & ((pos >> k) & 1 == 1) & (pos + size <= fe)
        blocked |= ((pos >> k) & 1 == 1) & (pos + size > fe)
        idx = np.where(take, pos >> k, 0)
        total += np.where(take, level[np.minimum(idx, len(level) - 1)], 0.0)
        pos = np.where(take, pos + size, pos)
    for k in range(len(levels) - 1, -1, -1):     # then fill the rest from the largest
        size = 1 << k
        level = levels[k]
        take = pos + size <= fe
        idx = np.where(take, pos >> k, 0)
        total += np.where(take, level[np.minimum(idx, len(level) - 1)], 0.0)
        pos = np.where(take, pos + size, pos)
    return total


def _running_best(ranks: np.ndarray, valid: np.ndarray, fs: np.ndarray, fe: np.ndarray,
                  seg_start: np.ndarray, seg_end: np.ndarray, use_min: bool):
    """The largest (smallest with `use_min`) of `ranks` (positive, dense; rows not `valid`
    left out) over [fs, fe) for every row, in O(n), when every frame starts at its window
    partition's first row (a running MAX: UNBOUNDED PRECEDING, or the whole partition) or
    ends at its last (UNBOUNDED FOLLOWING); None for other frames (`_sparse_min` takes them,
    O(n log n) time and memory: TPC-DS Q51's two running maxima over 610k rows took 0.38 s).
    Rows with an empty frame get an arbitrary value (the caller masks them).

    One cumulative maximum serves all partitions: each row's key is its partition's number
    times (R + 2) plus its rank's score (0 for NULL), so a later partition's keys all exceed
    an earlier one's and the running maximum restarts at every partition."""
    n = len(ranks)
    if n == 0:
        return None
    prefix = np.array_equal(fs, seg_start)
    if not prefix and not np.array_equal(fe, seg_end):
        return None
    top = int(ranks[valid].max()) if valid.any() else 0
    score = np.where(valid, top + 1 - ranks if use_min else ranks, 0)  # the best is the largest
    if not prefix:  # frames that end with their partition: the same, on the rows reversed
        score = score[::-1]
    part = np.cumsum(np.diff(seg_start if prefix else (n - seg_end)[::-1], prepend=-1) != 0)
    width = top + 2
    running = np.maximum.accumulate(part * width + score) - part * width
    best = running[np.clip(fe - 1 if prefix else n - 1 - fs, 0, n - 1)]
    if use_min:  # no value: the caller's sentinels (above every rank for MIN, -1 for MAX)
        return np.where(best == 0, np.iinfo(np.int64).max, top + 1 - best)
    return np.where(best == 0, -1, best)


def _sparse_min(ranks: np.ndarray, fs: np.ndarray, fe: np.ndarray, fn) -> np.ndarray:
    """Range-minimum (or maximum) of ranks over [fs, fe) for every row; ranges must be
    non-empty. Sparse table: O(n log n)."""
    n = len(ranks)
    levels = [ranks]
    k = 1
    while (1 << k) <= n:
        prev = levels[-1]
        half = 1 << (k - 1)
        levels.append(fn(prev[:-half], prev[half:]) if len(prev) > half else prev[:0])
        k += 1
    length = fe - fs
    lg = np.floor(np.log2(np.maximum(length, 1))).astype(np.int64)
    out = np.empty(len(fs), dtype=ranks.dtype)
    for level in np.unique(lg):
        sel = lg == level
        tab = levels[level]
        a = tab[fs[sel]]
        b = tab[fe[sel] - (1 << level)]
        out[sel] = fn(a, b)
    return out


# ---- frames --------------------------------------------------------------------------------


def _frame(spec: WindowSpec, idx, c):
    seg_start, seg_end = c["seg_start"], c["seg_end"]
    if not spec.has_order and spec.mode == "range":
        return seg_start, seg_end  # no ORDER BY: the whole partition

    def bound(b: Bound, is_start: bool):
        if b.kind == "unbounded_preceding":
            return seg_start
        if b.kind == "unbounded_following":
            return seg_end
        if b.kind == "current":
            if spec.mode == "rows":
                return idx if is_start else idx + 1
            return c["peer_start"] if is_start else c["peer_end"]
        if spec.mode == "groups":
            return _groups_bound(b, is_start, c)
        if spec.mode == "rows":
            # (an offset past every row is as far as one just past them: 2^63 - 1 FOLLOWING
            # overflowed int64 and gave empty frames)
            off = min(int(b.offset), len(idx) + 1)
            pos = idx - off if b.kind == "preceding" else idx + off
            pos = pos if is_start else pos + 1
            return np.clip(pos, seg_start, seg_end)
        return _range_offset(b, is_start, c["order_key"], c["seg_flags"], c["peer_start"],
                             c["peer_end"])

    fs, fe = bound(spec.start, True), bound(spec.end, False)
    return fs, np.maximum(fe, fs)  # empty frames have end == start


def _groups_bound(b: Bound, is_start: bool, c):
    """Where a GROUPS `n PRECEDING/FOLLOWING` bound falls: the first row (a start) or just
    past the last row (an end) of the peer group n groups before or after the row's own,
    clipped to the row's window partition (a target before its first group or after its last
    one gives an empty frame, as in PostgreSQL)."""
    peer_flags, seg_start, seg_end = c["peer_flags"], c["seg_start"], c["seg_end"]
    n = len(peer_flags)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    group = np.cumsum(peer_flags, dtype=np.int64) - 1
    starts = np.flatnonzero(peer_flags).astype(np.int64)
    ends = np.append(starts[1:], n)
    first, last = group[seg_start], group[seg_end - 1]
    off = min(int(b.offset), n + 1)  # (past every group: no int64 overflow)
    target = group - off if b.kind == "preceding" else group + off
    inside = np.clip(target, 0, len(starts) - 1)
    pos = (starts if is_start else ends)[inside]
    before, after = target < first, target > last
    return np.where(before, seg_start, np.where(after, seg_end, pos))


def _pieces(spec: WindowSpec, idx, c, fs, fe) -> list[tuple[np.ndarray, np.ndarray]]:
    """The frame [fs, fe) minus its EXCLUDE clause: ordered index ranges (some empty)."""
    if spec.exclude == "no_others":
        return [(fs, fe)]

    def clip(x):
        return np.minimum(np.maximum(x, fs), fe)

    if spec.exclude == "current_row":
        xs, xe = idx, idx + 1
    else:  # GROUP, or TIES (the group but the row itself)
        xs, xe = c["peer_start"], c["peer_end"]
    pieces = [(fs, clip(xs))]
    if spec.exclude == "ties":
        pieces.append((clip(idx), clip(idx + 1)))
    pieces.append((clip(xe), fe))
    return pieces


def _valid_positions(col) -> tuple[np.ndarray, np.ndarray]:
    """Sorted positions of the non-NULL values, and the running count of them (length n + 1)."""
    valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
    return np.flatnonzero(valid).astype(np.int64), _prefix(valid.astype(np.int64))


def _range_offset(b: Bound, is_start: bool, order_key, seg_flags, peer_start, peer_end):
    """Where a RANGE `offset PRECEDING/FOLLOWING` bound falls, for every row at once.

    Rows are sorted by (partition, key). PRECEDING reaches back to key - offset (key + offset
    under DESC), FOLLOWING on to key + offset (key - offset), computed exactly (see
    `_range_targets`). Keys and targets become integer ranks among the distinct keys, counted
    in the window's direction; a bound is the first row of the row's partition whose rank
    reaches the target's (a start) or passes it (an end): one searchsorted over the sorted
    composite key segment * M + code, where the code places NULL and NaN keys where the sort
    put them (NULLs first or last, NaN above every number). A NULL key is in range only of
    NULL keys (PostgreSQL, DuckDB), and a NaN key of NaN keys: their bounds are those of their
    peer group."""
    if order_key is None:
        raise UnsupportedError("RANGE with an offset needs exactly one ORDER BY key")
    col, ascending, nulls_first = order_key
    if len(col) == 0:
        return np.zeros(0, dtype=np.int64)
    backward = (b.kind == "preceding") == ascending  # toward smaller key values
    # an integer-valued key needs a whole number of units: round the offset the way that
    # keeps the same rows (key >= v - 1.5 is key >= v - 1 for integers)
    round_down = (b.kind == "preceding") == is_start
    values, targets, apart = _range_targets(col, b.offset, backward, round_down)
    distinct = np.sort(values[~apart])  # (np.unique hashes first: several times slower)
    if len(distinct):
        distinct = distinct[np.append(True, distinct[1:] != distinct[:-1])]
    count = len(distinct)
    rank = np.searchsorted(distinct, values)
    # the first row in range is the first whose rank is >= reach, ranks counted in the
    # window's direction
    if ascending:
        reach = np.searchsorted(distinct, targets, side="left" if is_start else "right")
    else:
        rank = count - 1 - rank
        reach = count - np.searchsorted(distinct, targets, side="right" if is_start else "left")
    # codes in the window's direction: NULL first (0) or last (count + 3); NaN above every
    # number, so last ascending (count + 2) and first descending (1); keys 2..count + 1
    code = rank + 2
    if apart.any():
        is_null = pc.is_null(col).to_numpy(zero_copy_only=False)
        code = np.where(apart, np.where(is_null, 0 if nulls_first else count + 3,
                                        count + 2 if ascending else 1), code)
    span = count + 4
    segment = np.cumsum(seg_flags, dtype=np.int64) - 1
    pos = np.searchsorted(segment * span + code, segment * span + reach + 2, side="left")
    if apart.any():
        pos = np.where(apart, peer_start if is_start else peer_end, pos)
    return pos


_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1
_INT64_DIGITS = 18  # every number of this many digits fits int64
# offsets beyond any span of key values (decimal128 keys are below 10^38) all act alike
_OFFSET_CAP = 10 ** 39
_DAY_MICROS = 86_400 * 10**6
_UNIT_MICROS = {"s": 10**6, "ms": 10**3, "us": 1, "ns": fractions.Fraction(1, 1000)}


def _range_targets(col: pa.Array, offset, backward: bool, round_down: bool):
    """The ORDER BY key and key -/+ offset (`backward`: minus) as numpy arrays that compare
    exactly as the values do, plus a mask of the keys that are NULL or NaN (their entries
    mean nothing). A float key is shifted in float64, as SQL does (DuckDB, PostgreSQL: the
    offset is a double). Any other key is a whole number of units (integers; unscaled
    decimals; days for a DATE; the unit of a TIMESTAMP); the offset is rounded to whole units
    (down if `round_down`, else up) and added in int64 when that cannot overflow, else in a
    decimal wide enough, whose values are then replaced by their dense ranks (same order)."""
    t = col.type
    name = T.type_name(t)
    if isinstance(offset, pa.MonthDayNano):  # an INTERVAL with months
        return _calendar_targets(col, offset, backward)
    interval = isinstance(offset, datetime.timedelta)  # the binder's INTERVAL offsets
    if interval and T.is_numeric(t):
        raise UnsupportedError(f"a RANGE offset over a {name} ORDER BY key must be a number, "
                               "not an INTERVAL")
    apart = pc.is_null(col).to_numpy(zero_copy_only=False)
    if T.is_floating(t):
        values = pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False)
        shift = float(offset)
        return values, values - shift if backward else values + shift, apart | np.isnan(values)
    if T.is_integer(t) or T.is_decimal(t):
        scale = t.scale if T.is_decimal(t) else 0
        units = fractions.Fraction(decimal.Decimal(offset)) * 10 ** scale
        # (a UBIGINT past 2^63 as a DECIMAL(20, 0): the int64 cast failed on it)
        values = col if T.is_decimal(t) else pc.cast(col, pa.decimal128(20, 0)) \
            if pa.types.is_uint64(t) else pc.cast(col, pa.int64())
    elif pa.types.is_date(t):
        if interval:
            units = fractions.Fraction(offset // datetime.timedelta(microseconds=1), _DAY_MICROS)
        elif decimal.Decimal(offset) == int(offset):
            units = fractions.Fraction(int(offset))  # n PRECEDING over a DATE: n days
        else:
            raise UnsupportedError("a RANGE offset over a DATE ORDER BY key must be a whole "
                                   "number of days or an INTERVAL")
        values = pc.cast(pc.cast(col, pa.int32()), pa.int64())
    elif pa.types.is_timestamp(t):
        if not interval:
            raise UnsupportedError(f"a RANGE offset over a {name} ORDER BY key must be an INTERVAL")
        micros = offset // datetime.timedelta(microseconds=1)
        units = fractions.Fraction(micros) / _UNIT_MICROS[t.unit]
        values = pc.cast(col, pa.int64())
    else:
        raise UnsupportedError("RANGE with an offset needs a numeric, DATE or TIMESTAMP "
                               f"ORDER BY key, not {name}")
    whole = min(math.floor(units) if round_down else math.ceil(units), _OFFSET_CAP)
    ints = None
    if T.is_decimal(values.type) and values.type.precision <= _INT64_DIGITS:
        ints = _decimal_to_int(values)  # unscaled
    elif pa.types.is_int64(values.type):
        ints = pc.fill_null(values, 0).to_numpy(zero_copy_only=False)
    if ints is not None and (not len(ints) or (int(ints.min()) - whole >= _INT64_MIN
                                               and int(ints.max()) + whole <= _INT64_MAX)):
        return ints, ints - whole if backward else ints + whole, apart
    # past int64: a decimal one digit wider than the operands holds the sum
    scale = values.type.scale if T.is_decimal(values.type) else 0
    digits = max(values.type.precision if T.is_decimal(values.type) else _INT64_DIGITS + 1,
                 len(str(whole)))
    wide = pa.decimal128 if digits + 1 <= T.MAX_DECIMAL_PRECISION else pa.decimal256
    values = pc.cast(values, wide(digits, scale))
    shift = pa.scalar(decimal.Decimal(whole).scaleb(-scale, context=decimal.Context(prec=80)), wide(digits, scale))
    targets = (pc.subtract if backward else pc.add)(values, shift)
    both = pa.concat_arrays([pc.cast(values, targets.type), targets])
    ranks = pc.rank(both, sort_keys=[("", "ascending", "at_end")], tiebreaker="dense")
    ranks = ranks.to_numpy(zero_copy_only=False).astype(np.int64)
    return ranks[:len(col)], ranks[len(col):], apart


def _calendar_targets(col: pa.Array, offset: pa.MonthDayNano, backward: bool):
    """`_range_targets` of an INTERVAL offset with months over a DATE or TIMESTAMP key: each
    key stepped by the months (to the same day of the month, the month's last day where it
    has fewer: DuckDB's and PostgreSQL's date + interval), then by the days and the rest.
    Keys and targets as int64 microseconds (nanoseconds for a TIMESTAMP_NS key), exact."""
    t = col.type
    apart = pc.is_null(col).to_numpy(zero_copy_only=False)
    if pa.types.is_date(t):
        per_day, values = _DAY_MICROS, pc.cast(pc.cast(col, pa.int32()), pa.int64())
        values = pc.fill_null(values, 0).to_numpy(zero_copy_only=False)  # (days)
        if len(values) and np.abs(values).max() > _INT64_MAX // _DAY_MICROS - 40_000:
            raise UnsupportedError("a RANGE offset in months over DATEs this far from 1970 "
                                   "is not supported")
        values = values * _DAY_MICROS
        rest = offset.nanoseconds // 1000
    elif pa.types.is_timestamp(t):
        ns = t.unit == "ns"
        per_day = _DAY_MICROS * (1000 if ns else 1)
        raw = pc.fill_null(pc.cast(col, pa.int64()), 0).to_numpy(zero_copy_only=False)
        factor = {"s": 10**6, "ms": 10**3, "us": 1, "ns": 1}[t.unit]
        if factor > 1 and len(raw) and np.abs(raw).max() > _INT64_MAX // factor:
            raise UnsupportedError(f"a RANGE offset over {T.type_name(t)} keys this large is "
                                   "not supported")
        values = raw * factor
        rest = offset.nanoseconds if ns else offset.nanoseconds // 1000
    else:
        raise UnsupportedError(f"a RANGE offset in months needs a DATE or TIMESTAMP ORDER BY "
                               f"key, not {T.type_name(t)}")
    sign = -1 if backward else 1
    days = values // per_day  # (floor: the time of day is in [0, one day))
    time_of_day = values - days * per_day
    stepped = (months_later(days.astype("datetime64[D]"), sign * offset.months).astype(np.int64)
               + sign * offset.days)
    limit = _INT64_MAX // per_day - 1
    if len(stepped) and np.abs(stepped).max() >= limit:
        raise DataValueError("a RANGE frame bound is out of range: stepping the keys by the "
                             "interval overflows")
    targets = stepped * per_day + time_of_day + sign * rest
    return values, targets, apart


# ---- evaluation ------------------------------------------------------------------------------


def compute(table: pa.Table, partition: tuple[str, ...], order: tuple[tuple[str, bool, bool], ...],
            specs: tuple[WindowSpec, ...], keep: tuple[str, int] | None = None) -> pa.Table:
    """Append window columns; rows come out sorted by partition keys then order keys.

    `keep` (column, k): only the rows whose ranking column (the output of one of `specs`)
    is at most k come out. The window values are computed on every row's keys and
    arguments, sorted; only the kept rows' other columns are taken."""
    n = table.num_rows
    if keep is not None and order and n >= TOP_ROWS and all(s.fn in PREFIX_RANKINGS for s in specs):
        rows = _top_candidates(table, partition, order[0], keep[1],
                               dense=any(s.fn == "dense_rank" for s in specs))
        if rows is not None:  # (its rows in their input order: ties keep their order)
            table = take_rows(table, pa.array(rows))
            n = table.num_rows
    keys = [(k, True, False) for k in partition] + list(order)
    full, perm = None, None
    if keys and n > 1:  # NaN above every number, as ORDER BY sorts it
        perm = sort_indices(table, keys)
        if keep is not None:
            used = [k for k, _, _ in keys] + [a for s in specs for a in s.args]
            full, table = table, table.select(list(dict.fromkeys(used))).take(perm)
        else:
            table = table.take(perm)
    idx = np.arange(n, dtype=np.int64)
    seg_flags = np.zeros(n, dtype=bool)
    if n:
        seg_flags[0] = True
    for k in partition:
        seg_flags |= _changed(table.column(k))
    peer_flags = seg_flags.copy()
    for k, _, _ in order:
        peer_flags |= _changed(table.column(k))
    seg_start, seg_end = _starts(seg_flags), _ends(seg_flags)
    peer_start, peer_end = _starts(peer_flags), _ends(peer_flags)
    order_key = None  # (column, ascending, nulls first) for RANGE offsets: one key only
    if len(order) == 1:
        k, asc, nulls_first = order[0]
        col = table.column(k)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        order_key = (col, asc, nulls_first)
    ctx = {"idx": idx, "seg_start": seg_start, "seg_end": seg_end, "peer_start": peer_start,
               "peer_end": peer_end, "peer_flags": peer_flags, "seg_flags": seg_flags, "order_key": order_key}
    outs = []
    for spec in specs:
        col = _evaluate(table, spec, ctx)
        if col.type != spec.dtype:
            col = pc.cast(col, spec.dtype)
        outs.append(col)
    if keep is None:
        for spec, col in zip(specs, outs, strict=True):
            table = table.append_column(spec.out, col)
        return table
    column, k = keep
    ranking = outs[[s.out for s in specs].index(column)]
    mask = pc.less_equal(ranking, pa.scalar(k, ranking.type))
    if full is not None:  # the kept rows of every column, in the sorted order
        table = take_rows(full, pc.filter(perm, mask))
    else:
        table = table.filter(mask)
    for spec, col in zip(specs, outs, strict=True):
        table = table.append_column(spec.out, pc.filter(col, mask))
    return table


# ranking functions whose value for a row depends only on the rows before it in its window
# partition's order (not on the partition's size or the rows after it)
PREFIX_RANKINGS = frozenset({"row_number", "rank", "dense_rank"})
TOP_ROWS = 65_536  # fewer rows sort faster than they are sampled


def _top_candidates(table: pa.Table, partition, first_order, k: int, dense: bool):
    """The rows (ascending positions) that may rank within the first `k` of their window
    partition, or None when that is most rows (or the keys do not allow it).

    A row whose first ORDER BY key is worse than some value t reached by at least k rows of
    its partition ranks after k rows at least (row_number, rank; dense_rank when those rows
    hold k distinct values), so it cannot be kept; every row before a kept one in the order
    has a key as good, so the kept rows rank the same among the candidates alone. t is
    each partition's k-th best key in a sample of its rows (every `stride`-th row): any
    sample gives a t reached by k rows of the partition, a good one keeps few more than
    k * stride rows per partition. Sorting 11.7M rows of 1,500 partitions for a top 3 took
    4 s; this keeps ~0.3M rows. Keys are compared as float64 (a monotone stand-in: values
    it rounds together only keep more rows)."""
    score = _order_score(table.column(first_order[0]), first_order[1], first_order[2])
    if score is None:
        return None
    n = len(score)
    try:
        gid, groups = _group_ids(table, partition)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    stride = int(math.sqrt(n / max(k * groups, 1)))
    if stride < 4 or k < 1:
        return None
    sg, ss = gid[::stride], score[::stride]
    order = np.lexsort((-ss, sg))
    sg, ss = sg[order], ss[order]
    first = np.flatnonzero(np.r_[True, sg[1:] != sg[:-1]])
    within = np.arange(len(sg)) - np.repeat(first, np.diff(np.r_[first, len(sg)]))
    if dense:  # the k-th distinct value: count the changes of value within each group
        new = np.r_[True, (ss[1:] != ss[:-1]) | (sg[1:] != sg[:-1])]
        within = np.cumsum(new) - np.repeat(np.cumsum(new)[first], np.diff(np.r_[first, len(sg)]))
        at = np.flatnonzero(new & (within == k - 1))
    else:
        at = np.flatnonzero(within == k - 1)
    threshold = np.full(groups, -np.inf)
    threshold[sg[at]] = ss[at]
    rows = np.flatnonzero(score >= threshold[gid])
    return rows if len(rows) * 2 < n else None


def _order_score(col, ascending: bool, nulls_first: bool) -> np.ndarray | None:
    """A float64 per row, larger for rows earlier in the order the key sorts them in
    (ORDER BY: NaN above every number, NULLs first or last), equal keys equal; None for a
    key of another type than numbers, dates and times."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_floating(col.type):
        values = np.array(pc.fill_null(pc.cast(col, pa.float64()), 0.0)
                          .to_numpy(zero_copy_only=False), np.float64)
        values[np.isnan(values)] = np.inf
        valid = _validity(col)
    else:
        ints = _integers(col)
        if ints is None:
            return None
        values, valid = ints[0].astype(np.float64), ints[1]
    if ascending:
        np.negative(values, out=values)
    if valid is not None:
        values[~valid] = np.inf if nulls_first else -np.inf
    return values


def _validity(col: pa.Array) -> np.ndarray | None:
    return None if not col.null_count else \
        np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), bool)


def _integers(col: pa.Array) -> tuple[np.ndarray, np.ndarray | None] | None:
    """An integer-like column's values as integers that order as it does (a DECIMAL of up to
    18 digits as its unscaled value, dates and times as their counts; a view where one can
    be: NULL slots hold anything) and which are valid; None for other types."""
    t = col.type
    if pa.types.is_decimal128(t):
        if t.precision > 18 or col.buffers()[1] is None:
            return None
        words = np.frombuffer(col.buffers()[1], dtype=np.int64)
        return words[2 * col.offset: 2 * (col.offset + len(col)): 2], _validity(col)
    if pa.types.is_boolean(t):
        col = col.cast(pa.int8())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        col = col.view(pa.int32())
    elif pa.types.is_temporal(t) and not pa.types.is_interval(t):
        col = col.view(pa.int64())
    elif not pa.types.is_integer(t):
        return None
    if col.buffers()[1] is None:
        return None
    width = col.type.bit_width // 8
    dtype = np.dtype(f"{'u' if pa.types.is_unsigned_integer(col.type) else 'i'}{width}")
    values = np.frombuffer(col.buffers()[1], dtype=dtype)[col.offset: col.offset + len(col)]
    return values, _validity(col)


def _group_ids(table: pa.Table, partition) -> tuple[np.ndarray, int]:
    """A group number per row for the window partition keys, numbered densely, and the
    number of groups (keys of one partition may get several numbers, as 0.0 and -0.0 do when
    hashed; two partitions never one)."""
    n = table.num_rows
    gid, groups = np.zeros(n, np.int64), 1
    for key in partition:
        codes, size = _codes(table.column(key))
        gid, space = (codes if groups == 1 else gid * size + codes), groups * size
        if space <= 4 * n + 1024:  # numbered by the codes present: no hashing
            present = np.zeros(space, bool)
            present[gid] = True
            number = np.cumsum(present) - 1
            gid, groups = number[gid], int(number[-1]) + 1
        else:
            enc = pc.dictionary_encode(pa.array(gid))
            gid = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            groups = len(enc.dictionary)
    return gid, groups


def _codes(col) -> tuple[np.ndarray, int]:
    """Codes in [0, size) numbering a key column's values (NULL one of them): an integer
    (date, DECIMAL of up to 18 digits) as its offset from the smallest when their span is
    short, else hashed (pc.dictionary_encode)."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    ints = _integers(col) if not pa.types.is_boolean(col.type) else None
    if ints is not None and len(col) > col.null_count:
        values, valid = ints
        some = values if valid is None else values[valid]
        lo, hi = int(some.min()), int(some.max())
        if hi - lo <= 4 * len(col):  # (the offsets in 64-bit wrapping arithmetic: lo may
            # be -2^63, or a UBIGINT past BIGINT, and hi - lo is small)
            codes = (values.astype(np.uint64) - np.uint64(lo % 2**64)).astype(np.int64) + 1
            if valid is not None:
                codes[~valid] = 0
            return codes, hi - lo + 2
    enc = pc.dictionary_encode(col, null_encoding="encode")
    return enc.indices.to_numpy(zero_copy_only=False).astype(np.int64), len(enc.dictionary)


def _evaluate(table: pa.Table, spec: WindowSpec, c) -> pa.Array:
    idx, seg_start, seg_end = c["idx"], c["seg_start"], c["seg_end"]
    fn = spec.fn
    if fn == "row_number":
        return pa.array(idx - seg_start + 1)
    if fn in ("rank", "percent_rank", "cume_dist", "dense_rank"):
        rank = c["peer_start"] - seg_start + 1
        if fn == "rank":
            return pa.array(rank)
        size = (seg_end - seg_start).astype(np.float64)
        if fn == "percent_rank":
            return pa.array(np.where(size > 1, (rank - 1) / np.maximum(size - 1, 1), 0.0))
        if fn == "cume_dist":
            return pa.array((c["peer_end"] - seg_start) / size)
        groups = np.cumsum(c["peer_flags"])
        return pa.array(groups - groups[seg_start] + 1)
    if fn in ("ntile", "lag", "lead", "nth_value") and spec.consts and spec.consts[0] is None:
        # a NULL bucket count, offset or position: NULL on every row (DuckDB, PostgreSQL)
        return pa.nulls(len(idx), spec.dtype)
    if fn == "ntile":
        buckets = int(spec.consts[0])
        if buckets <= 0:
            raise ExecutionError("NTILE argument must be positive")
        size = seg_end - seg_start
        pos = idx - seg_start
        q, r = size // buckets, size % buckets
        big = r * (q + 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            tile = np.where(pos < big, pos // np.maximum(q + 1, 1),
                            r + (pos - big) // np.maximum(q, 1))
        return pa.array(tile + 1)
    if fn in ("lag", "lead"):
        default = spec.consts[1] if len(spec.consts) > 1 else None
        if isinstance(default, ArgColumn):  # a default per row (cast to the result's type)
            default = table.column(spec.args[default.index])
        col = table.column(spec.args[0])
        if spec.consts and isinstance(spec.consts[0], ArgColumn):
            return _lag_by_rows(col, table.column(spec.args[spec.consts[0].index]), fn, idx,
                                seg_start, seg_end, default, spec.dtype)
        offset = int(spec.consts[0]) if spec.consts else 1
        if spec.ignore_nulls and offset != 0:
            backward = (fn == "lag") == (offset > 0)
            j, valid = _nth_valid_neighbour(col, idx, abs(offset), backward, seg_start, seg_end)
            return _take_or(col, j, valid, default, spec.dtype)
        j = idx - offset if fn == "lag" else idx + offset
        valid = (j >= seg_start) & (j < seg_end)
        return _take_or(col, j, valid, default, spec.dtype)
    fs, fe = _frame(spec, idx, c)
    pieces = _pieces(spec, idx, c, fs, fe)
    if fn in ("first_value", "last_value", "nth_value"):
        col = table.column(spec.args[0])
        k = int(spec.consts[0]) if fn == "nth_value" else 1
        pos, ok = _nth_in_pieces(col, pieces, k, fn == "last_value", spec.ignore_nulls)
        return _take_or(col, pos, ok & (k >= 1), None, spec.dtype)
    if fn == "count_star":
        return pa.array(sum(e - s for s, e in pieces))
    if fn in ("string_agg", "array_agg"):
        col = table.column(spec.args[0])
        if len(pieces) == 1 and np.array_equal(fs, seg_start) and np.array_equal(fe, seg_end):
            # every row's frame is its whole window partition: one list per partition, the
            # same for each of its rows (not n^2 values gathered for n rows)
            firsts = np.flatnonzero(c["seg_flags"]) if len(idx) else np.zeros(0, np.int64)
            ends = np.append(firsts[1:], len(idx))
            sizes = _value_bytes(col)  # (once: _frame_lists checks its lists' bytes too)
            per_partition = _frame_lists(col, spec, [(firsts, ends)], sizes)
            cum = np.concatenate([[0], np.cumsum(sizes)])  # bytes of each window partition,
            _check_frame_bytes(float(np.dot(cum[ends] - cum[firsts], ends - firsts)),
                               spec.fn)  # given to each of its rows
            return per_partition.take(pa.array(np.cumsum(c["seg_flags"]) - 1))
        return _frame_lists(col, spec, pieces)
    col = table.column(spec.args[0])
    if spec.distinct:
        col = _distinct_in_frames(col, spec, pieces, c)
    return _frame_aggregate(col, spec, pieces, c)


def _distinct_in_frames(col, spec: WindowSpec, pieces, c) -> pa.Array:
    """`col` with each value kept only where it counts for `fn(DISTINCT col)` (NULL
    elsewhere), so the frame aggregate sees each distinct value of a frame once. A frame that
    starts where its partition does keeps each value's first row of the partition (the value
    is in a frame exactly when that row is); one that ends with its partition keeps the last.
    Values equal as SQL compares them are one (0.0 and -0.0; every NaN)."""
    fs, fe = pieces[0] if len(pieces) == 1 else (None, None)
    from_start = fs is not None and np.array_equal(fs, c["seg_start"])
    to_end = fs is not None and not from_start and np.array_equal(fe, c["seg_end"])
    if not (from_start or to_end):
        raise UnsupportedError(f"{spec.fn.upper()}(DISTINCT ...) over a frame that neither "
                               "starts nor ends with its window partition is not supported")
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    n = len(col)
    if n == 0 or col.null_count == n:
        return col
    values = col.dictionary_decode() if pa.types.is_dictionary(col.type) else col
    try:
        ranks = pc.rank(values, sort_keys=[("", "ascending", "at_end")], tiebreaker="dense")
    except pa.ArrowNotImplementedError:
        raise UnsupportedError(f"{spec.fn.upper()}(DISTINCT ...) of {T.type_name(col.type)} "
                               "as a window function is not supported") from None
    ranks = ranks.to_numpy(zero_copy_only=False).astype(np.int64)
    segment = np.cumsum(c["seg_flags"], dtype=np.int64) - 1
    key = segment * (int(ranks.max()) + 1) + ranks
    if to_end:
        key = key[::-1]
    _, first = np.unique(key, return_index=True)  # (the first row of each key)
    keep = np.zeros(n, dtype=bool)
    keep[(n - 1 - first) if to_end else first] = True
    return pc.if_else(pa.array(keep), col, pa.scalar(None, col.type))


def _value_bytes(col) -> np.ndarray:
    """Bytes each value of `col` takes in a list or a joined text: its bytes for text and
    binary, 8 otherwise (a nested value counts as one word: a bound, not a measure)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    t = col.type
    if pa.types.is_dictionary(t):
        col, t = col.dictionary_decode(), t.value_type
    if T.is_text(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pc.fill_null(pc.binary_length(col), 0).to_numpy(zero_copy_only=False) \
            .astype(np.int64) + 8
    return np.full(len(col), 8, np.int64)


def _check_frame_bytes(total: float, fn: str) -> None:
    """Refuse, before copying them, frames whose values take more than MAX_FRAME_BYTES in one
    partition of the query (a 300k-row window partition's STRING_AGG over the whole partition
    is 300k copies of the partition's text)."""
    if total > MAX_FRAME_BYTES:
        raise ExecutionError(
            f"{fn.upper()} over its window frames makes {int(total):,} bytes in one partition "
            f"of the query, more than {MAX_FRAME_BYTES:,}; narrow the frames or the partitions")


MAX_FRAME_BYTES = 1 << 30

# the values all the frames of STRING_AGG / ARRAY_AGG in one partition of the query hold at
# once (running frames hold n^2 / 2 of them for n rows)
MAX_FRAME_VALUES = 50_000_000


def _frame_lists(col, spec: WindowSpec, pieces, sizes: np.ndarray | None = None) -> pa.Array:
    """ARRAY_AGG (the frame's values, NULLs too; NULL for an empty frame) or STRING_AGG (the
    frame's non-NULL texts joined by the separator; NULL when there are none) of each frame
    of `pieces` ((starts, ends) ranges of `col`'s positions), the values in frame order. Every frame's values are gathered by one take: a row's piece
    ranges laid end to end, found with numpy, not a loop over rows. `sizes`: `col`'s
    _value_bytes, when the caller has them."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    n = len(pieces[0][0])  # frames (one per row, or per window partition)
    lengths = [np.maximum(fe - fs, 0) for fs, fe in pieces]
    per_row = sum(lengths)
    total = int(per_row.sum())
    if total > MAX_FRAME_VALUES:
        raise ExecutionError(
            f"{spec.fn.upper()} over its window frames holds {total:,} values in one partition "
            f"of the query, more than {MAX_FRAME_VALUES:,}; narrow the frames")
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(per_row, out=offsets[1:])
    positions = np.empty(total, np.int64)
    base = offsets[:-1].copy()
    for (fs, _), length in zip(pieces, lengths, strict=True):
        m = int(length.sum())
        if m:
            rows = np.repeat(np.arange(n), length)
            within = np.arange(m) - np.repeat(np.cumsum(length) - length, length)
            positions[base[rows] + within] = fs[rows] + within
        base += length
    if sizes is None:
        sizes = _value_bytes(col)
    _check_frame_bytes(float(sizes[positions].sum()), spec.fn)
    if spec.fn == "array_agg":  # (offsets fit int32: at most MAX_FRAME_VALUES)
        values = col.take(pa.array(positions)).cast(spec.dtype.value_type)
        return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), values,
                                        type=spec.dtype, mask=pa.array(per_row == 0))
    sep = spec.consts[0] if spec.consts else ","
    valid = pc.is_valid(col).to_numpy(zero_copy_only=False)[positions]
    running = np.zeros(total + 1, np.int64)  # non-NULL values up to each gathered one
    np.cumsum(valid, out=running[1:])
    counts = running[offsets[1:]] - running[offsets[:-1]]
    kept = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=kept[1:])
    values = col.take(pa.array(positions[valid])).cast(pa.string())
    lists = pa.ListArray.from_arrays(pa.array(kept.astype(np.int32)), values,
                                     type=pa.list_(pa.string()))
    joined = pc.binary_join(lists, sep)
    return pc.if_else(pa.array(counts > 0), joined, pa.scalar(None, pa.string()))


def _nth_valid_neighbour(col, idx, k: int, backward: bool, seg_start, seg_end):
    """The position of the k-th non-NULL row before (`backward`) or after each row, within
    its window partition (LAG/LEAD IGNORE NULLS), and whether there is one."""
    positions, running = _valid_positions(col)
    if backward:
        target = running[idx] - k            # valid rows before row i: running[i]
    else:
        target = running[idx + 1] + k - 1    # valid rows up to and including row i
    inside = (target >= 0) & (target < len(positions))
    pos = positions[np.clip(target, 0, max(len(positions) - 1, 0))] if len(positions) else idx
    ok = inside & (pos >= seg_start) & (pos < seg_end)
    return np.where(ok, pos, 0), ok


def _nth_in_pieces(col, pieces, k: int, from_end: bool, ignore_nulls: bool):
    """The k-th row (k >= 1) of each frame, counted from its start (or from its end for
    LAST_VALUE) across the frame's ordered pieces, skipping NULLs if asked: positions and a
    mask of the frames that have one."""
    n_rows = len(pieces[0][0])
    pos = np.zeros(n_rows, dtype=np.int64)
    found = np.zeros(n_rows, dtype=bool)
    if k < 1:
        return pos, found
    remaining = np.full(n_rows, k, dtype=np.int64)
    if ignore_nulls:
        positions, running = _valid_positions(col)
    for s, e in (reversed(pieces) if from_end else pieces):
        if ignore_nulls:
            have = running[e] - running[s]
            target = (running[e] - remaining) if from_end else (running[s] + remaining - 1)
            here = positions[np.clip(target, 0, max(len(positions) - 1, 0))] if len(
                positions) else s
        else:
            have = e - s
            here = (e - remaining) if from_end else (s + remaining - 1)
        take = ~found & (remaining <= have)
        pos = np.where(take, here, pos)
        found |= take
        remaining = np.where(found, remaining, remaining - np.maximum(have, 0))
    return pos, found


def _exact_frame_sum(col, spec: WindowSpec, pieces, cnt) -> pa.Array:
    """SUM/AVG of integers or decimals over frames, exactly (never wrapping): prefix sums of
    each 32-bit limb (decimals.limbs: one limb when no sum of the partition can overflow
    int64) are exact, so are their differences over [fs, fe); the limb sums are carried into
    128-bit values and checked against DECIMAL(38)."""
    t = col.type
    if T.is_boolean(t):
        col = pc.cast(col, pa.int8())
    parts, _ = decimals.limbs(col, len(col))
    sums = []
    for p in parts:
        ps = _prefix(p)
        sums.append(sum(ps[fe] - ps[fs] for fs, fe in pieces))
    has = cnt > 0
    scale = t.scale if T.is_decimal(t) else 0
    if spec.fn == "sum" and T.is_integer(spec.dtype) and len(sums) == 1:
        return pc.if_else(pa.array(has), pa.array(sums[0]), pa.scalar(None, pa.int64()))
    exact_t = pa.decimal128(38, scale)
    if spec.fn == "sum":
        total = decimals.decimal_from_limb_sums(sums, exact_t, has, "window SUM")
        return total if spec.dtype == exact_t else pc.cast(total, spec.dtype)
    total, wraps = decimals.exact_from_limb_sums(sums, exact_t, has)  # AVG: any size
    # (rounded once, as the aggregate's AVG: the sum as DOUBLE, then divided, rounded twice)
    return decimals.exact_mean(total, wraps, pa.array(cnt, pa.int64()))


def _lag_by_rows(col, offsets, fn: str, idx, seg_start, seg_end, default, dtype) -> pa.Array:
    """LAG/LEAD with an offset per row: the value that many rows back (LAG) or ahead (LEAD)
    in the row's window partition, the default past its ends, NULL where the offset is NULL
    (DuckDB). A negative offset looks the other way."""
    offsets = pc.cast(offsets, pa.int64())  # (the binder made them BIGINT)
    k = pc.fill_null(offsets, 0).to_numpy(zero_copy_only=False)
    valid_k = pc.is_valid(offsets).to_numpy(zero_copy_only=False) if offsets.null_count else None
    n = len(idx)
    k = np.clip(k, -(n + 1), n + 1)  # (idx - k never wraps: past n is past the partition)
    j = idx - k if fn == "lag" else idx + k
    inside = (j >= seg_start) & (j < seg_end)
    out = _take_or(col, j, inside, default, dtype)
    if valid_k is not None:
        out = pc.if_else(pa.array(valid_k), out, pa.scalar(None, out.type))
    return out


def _take_or(col, positions, valid, default, dtype) -> pa.Array:
    safe = np.where(valid, positions, 0)
    if len(col) == 0:
        return pa.nulls(0, dtype)
    vals = pc.take(col, pa.array(safe))
    if isinstance(default, (pa.Array, pa.ChunkedArray)):  # a default per row
        fill = default.combine_chunks() if isinstance(default, pa.ChunkedArray) else default
        fill = fill.cast(vals.type) if fill.type != vals.type else fill
    elif isinstance(default, Expr):  # a LAG/LEAD default cast as CAST casts it (2.5 -> 3, 5 -> '5')
        from .expressions import evaluate_array

        fill = evaluate_array(default)[0].cast(vals.type)
    else:
        fill = pa.scalar(default, dtype) if default is not None else pa.scalar(None, vals.type)
    return pc.if_else(pa.array(valid), vals, fill)


def _partition_spread(col, spec: WindowSpec, pieces, c, valid: np.ndarray) -> pa.Array:
    """STDDEV / VARIANCE over each row's whole window partition (the binder allows no other
    frame): per partition the mean, then the squared deviations from it (two passes, as the
    aggregate's M2: no difference of large sums), 0 where the values are all one finite
    value; NaN and infinities give NaN, as in the aggregate."""
    seg_start, seg_end = c["seg_start"], c["seg_end"]
    if len(pieces) != 1 or not (np.array_equal(pieces[0][0], seg_start)
                                and np.array_equal(pieces[0][1], seg_end)):
        raise UnsupportedError(f"{spec.fn.upper()} over a frame narrower than its window "
                               f"partition is not supported")
    n_rows = len(valid)
    if not n_rows:
        return pa.nulls(0, pa.float64())
    first, sizes = _groups(c["seg_flags"])
    sizes = np.ones(n_rows, np.int64) if sizes is None else sizes
    x = np.asarray(pc.fill_null(pc.cast(col, pa.float64()), 0.0).to_numpy(zero_copy_only=False),
                   np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        x = np.where(valid, x, 0.0)
        n = np.add.reduceat(valid.astype(np.int64), first)
        mean = np.add.reduceat(x, first) / np.maximum(n, 1)
        dev = np.where(valid, x - np.repeat(mean, sizes), 0.0)
        m2 = np.add.reduceat(dev * dev, first)
        lo = np.fmin.reduceat(np.where(valid, x, np.inf), first)
        hi = np.fmax.reduceat(np.where(valid, x, -np.inf), first)
        m2 = np.where((lo == hi) & np.isfinite(lo) & ~np.isnan(mean), 0.0, m2)
        den = n.astype(np.float64) - (0.0 if spec.fn.endswith("_pop") else 1.0)
        var = m2 / np.where(den > 0, den, 1.0)
        value = np.sqrt(var) if spec.fn.startswith("stddev") else var
    return pa.array(np.repeat(value, sizes), pa.float64(), mask=np.repeat(den <= 0, sizes))


def _frame_aggregate(col, spec: WindowSpec, pieces, c) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    if pa.types.is_null(col.type):  # max(NULL) OVER (...): every value NULL, of some type
        col = pa.nulls(len(col), pa.int8())
    fn = spec.fn
    valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
    counts = _prefix(valid.astype(np.int64))
    cnt = sum(counts[fe] - counts[fs] for fs, fe in pieces)
    if fn == "count":
        return pa.array(cnt)
    has = cnt > 0
    t = col.type
    if fn in ("sum", "avg") and (T.is_integer(t) or T.is_decimal(t) or T.is_boolean(t)):
        return _exact_frame_sum(col, spec, pieces, cnt)
    if fn in ("sum", "avg"):
        vals = pc.fill_null(pc.cast(col, pa.float64()), 0.0).to_numpy(zero_copy_only=False)
        with np.errstate(invalid="ignore", over="ignore"):   # inf - inf is NaN, as in SQL
            total = _partition_sums(vals, pieces, c)
            if total is None:
                total = sum(_range_sums(vals, fs, fe) for fs, fe in pieces)
        if fn == "avg":
            total = total / np.maximum(cnt, 1)
        return pc.if_else(pa.array(has), pa.array(total), pa.scalar(None, pa.float64()))
    if fn in ("stddev_samp", "stddev_pop", "var_samp", "var_pop"):
        return _partition_spread(col, spec, pieces, c, valid)
    if fn in ("min", "max", "bool_and", "bool_or"):
        ranks = pc.rank(col, sort_keys=[("", "ascending", "at_end")], tiebreaker="dense").to_numpy(
            zero_copy_only=False).astype(np.int64)
        use_min = fn in ("min", "bool_and")
        big = np.iinfo(np.int64).max
        ranks = np.where(valid, ranks, big if use_min else -1)
        if len(ranks) == 0:
            return pa.nulls(0, spec.dtype)
        pick = np.minimum if use_min else np.maximum
        best = None
        for fs, fe in pieces:
            part = _running_best(ranks, valid, fs, fe, c["seg_start"], c["seg_end"], use_min)
            if part is None:  # a frame that neither starts nor ends with its partition
                safe_fs = np.where(fe > fs, fs, 0)
                safe_fe = np.where(fe > fs, fe, 1)
                part = _sparse_min(ranks, safe_fs, safe_fe, pick)
            part = np.where(fe > fs, part, big if use_min else -1)
            best = part if best is None else pick(best, part)
        ok = has
        # the value of that rank: its first row (the smallest row number of each rank)
        rows = np.flatnonzero(valid)
        first = np.zeros(int(ranks[rows].max()) + 1 if len(rows) else 1, dtype=np.int64)
        first[ranks[rows]] = len(ranks)
        np.minimum.at(first, ranks[rows], rows)
        pos = first[np.where(ok, best, 0)]
        return _take_or(col, pos, ok, None, col.type)
    raise UnsupportedError(f"window function {fn} is not supported")
