"""Aggregates whose states numpy computes per group: the two-argument statistics (CORR,
COVAR_POP / COVAR_SAMP, REGR_*), the bitwise aggregates (BIT_AND, BIT_OR, BIT_XOR) and
ARG_MAX / ARG_MIN (x at the row of the largest / smallest y).

Acero has no kernel for them. Their partial step lists each group's row numbers (Arrow's
`hash_list`, as for user-defined aggregates: `user_functions.group_slices`), so the rows of
every group are contiguous in that order and each state is one `ufunc.reduceat` over all
groups at once; never a loop over groups or rows.

Two-argument statistics of (y, x), over the rows where neither is NULL, keep per group: the
count, the sums of x and y, the sums of squared deviations of x and of y from their own
means (M2) and the co-moment sum((x - mean x) * (y - mean y)), each computed from the
group's mean (a second pass, not a difference of large sums), plus x's and y's extremes: a
variable whose extremes are equal (and finite) has M2 and co-moment exactly 0, however its
mean rounds.

ARG_MAX(x, y) keeps per group the winning row's x and y (and whether there is one), over the
rows where neither is NULL (DuckDB); y orders as ORDER BY does (NaN above every number); of
equal y, the first row in the group's order wins (DuckDB: any). States combine by Chan's parallel formulas, so any partitioning gives the
answer one partition would (within rounding). Results follow the SQL standard (and
PostgreSQL): CORR, REGR_SLOPE, REGR_INTERCEPT and REGR_R2 are NULL when x (or, for CORR, y)
does not vary; DuckDB gives NaN for some of them.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import types as T
from ..plan.functions import PAIR_AGGREGATES as PAIR
BITS = {"bit_and": np.bitwise_and, "bit_or": np.bitwise_or, "bit_xor": np.bitwise_xor}
ARG = {"arg_max": True, "arg_min": False}  # -> whether the largest y wins
FUNCTIONS = frozenset(PAIR) | frozenset(BITS) | frozenset(ARG)

# the count, sums, M2s, co-moment and extremes of (y, x) pairs
PAIR_STATES = (".c", ".sx", ".sy", ".qx", ".qy", ".cxy", ".lox", ".hix", ".loy", ".hiy")
BIT_STATES = ("", ".c")
ARG_STATES = ("", ".y", ".c")  # the winning x, its y, and 1 where a row won (0: none)


def states(fn: str) -> list[tuple[str, str, str]]:
    """(suffix, partial kernel, final kernel) of each state, as kernels.aggregate lists them."""
    if fn in ARG:
        return [(suffix, "arg", "arg") for suffix in ARG_STATES]
    kernel = "pair" if fn in PAIR else "bits"
    return [(suffix, kernel, kernel) for suffix in (PAIR_STATES if fn in PAIR else BIT_STATES)]


def state_type(spec, suffix: str) -> pa.DataType:
    if suffix == ".c":
        return pa.int64()
    if suffix == ".y":
        return spec.params[0]  # (ARG_MAX's y type: the planner passes it)
    return pa.float64() if spec.fn in PAIR else spec.arg_dtype


def _segments(ufunc, values: np.ndarray, offsets: np.ndarray, identity) -> np.ndarray:
    """`ufunc` reduced over each [offsets[i], offsets[i + 1]) slice of `values`; `identity`
    for an empty slice (an ungrouped aggregate of no rows)."""
    sizes = np.diff(offsets)
    if not len(values):
        return np.full(len(sizes), identity, dtype=values.dtype)
    out = ufunc.reduceat(values, np.minimum(offsets[:-1], len(values) - 1))
    if (sizes == 0).any():
        out[sizes == 0] = identity
    return out


def _valid(col) -> np.ndarray:
    return (np.ones(len(col), bool) if not col.null_count
            else np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), bool))


def _floats(col) -> np.ndarray:
    """A column as float64 numpy values, NULL as 0 (a writable copy when it has NULLs)."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    col = col.cast(pa.float64()) if col.type != pa.float64() else col
    if col.null_count:
        return np.array(col.fill_null(0.0).to_numpy(zero_copy_only=False), np.float64)
    return np.asarray(col.to_numpy(zero_copy_only=False), np.float64)


def partial(table: pa.Table, spec, rows: np.ndarray, offsets: np.ndarray) -> list[pa.Array]:
    """The states of each group (the [offsets[i], offsets[i + 1]) slice of `rows`), in the
    order of `states(spec.fn)`. Few full-length temporaries (each is a page-faulting
    allocation): the deviations, and one buffer reused for products and extremes."""
    if spec.fn in BITS:
        return _bits(spec, table.column(spec.arg), _valid(table.column(spec.arg)), rows, offsets)
    if spec.fn in ARG:
        x, y = table.column(spec.arg), table.column(spec.more[0])
        return _arg_states(spec, x, y, _valid(x) & _valid(y), rows, offsets)
    ycol, xcol = table.column(spec.arg), table.column(spec.more[0])
    pair = None if not (ycol.null_count or xcol.null_count) else _valid(ycol) & _valid(xcol)
    y, x = _floats(ycol), _floats(xcol)
    if len(offsets) != 2 or len(rows) != len(x):  # grouped: the rows in their groups' order
        y, x = y[rows], x[rows]
        pair = None if pair is None else pair[rows]
    sizes = np.diff(offsets)
    count = sizes if pair is None else _segments(np.add, pair.astype(np.int64), offsets, 0)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # inf, NaN: as SQL
        if pair is not None:
            x, y = np.where(pair, x, 0.0), np.where(pair, y, 0.0)
        sx, sy = _segments(np.add, x, offsets, 0.0), _segments(np.add, y, offsets, 0.0)
        n = np.where(count > 0, count, 1).astype(np.float64)
        dx = x - np.repeat(sx / n, sizes)
        dy = y - np.repeat(sy / n, sizes)
        if pair is not None:
            dx[~pair] = 0.0
            dy[~pair] = 0.0
        buf = np.empty_like(dx)
        m2x = _segments(np.add, np.multiply(dx, dx, out=buf), offsets, 0.0)
        m2y = _segments(np.add, np.multiply(dy, dy, out=buf), offsets, 0.0)
        co = _segments(np.add, np.multiply(dx, dy, out=buf), offsets, 0.0)
    extremes = []
    for v in (x, y):
        if pair is not None:
            np.copyto(buf, v)
            buf[~pair] = np.inf
            lo = _segments(np.fmin, buf, offsets, np.inf)
            buf[~pair] = -np.inf
            hi = _segments(np.fmax, buf, offsets, -np.inf)
        else:
            lo, hi = _segments(np.fmin, v, offsets, np.inf), _segments(np.fmax, v, offsets, -np.inf)
        extremes += [lo, hi]
    return _pair_states(count, sx, sy, m2x, m2y, co, *extremes)


def _pair_states(count, sx, sy, m2x, m2y, co, lox, hix, loy, hiy) -> list[pa.Array]:
    """The states as columns, the M2 and co-moment of a variable without spread exactly 0
    (the co-moment only where the other variable's values are finite too: 0 * (inf - inf)
    is NaN, as PostgreSQL's covar_pop of ('inf', 3.0) is)."""
    still_x = (lox == hix) & np.isfinite(lox) & ~np.isnan(sx)
    still_y = (loy == hiy) & np.isfinite(loy) & ~np.isnan(sy)
    m2x = np.where(still_x, 0.0, m2x)
    m2y = np.where(still_y, 0.0, m2y)
    co = np.where(still_x & np.isfinite(sy) | still_y & np.isfinite(sx), 0.0, co)
    return [pa.array(count, pa.int64())] + [pa.array(v, pa.float64()) for v in
                                            (sx, sy, m2x, m2y, co, lox, hix, loy, hiy)]


def _bits(spec, col, valid: np.ndarray, rows: np.ndarray, offsets: np.ndarray) -> list[pa.Array]:
    op = BITS[spec.fn]
    dtype = np.dtype(spec.arg_dtype.to_pandas_dtype())
    identity = ~np.zeros(1, dtype)[0] if spec.fn == "bit_and" else dtype.type(0)
    values = np.asarray(pc.fill_null(col, pa.scalar(identity.item(), spec.arg_dtype))
                        .to_numpy(zero_copy_only=False), dtype)[rows]
    return _bit_states(spec, _segments(op, values, offsets, identity),
                       _segments(np.add, valid[rows].astype(np.int64), offsets, 0))


def _bit_states(spec, value: np.ndarray, count: np.ndarray) -> list[pa.Array]:
    return [pa.array(value, spec.arg_dtype), pa.array(count, pa.int64())]


def combine(table: pa.Table, spec, rows: np.ndarray, offsets: np.ndarray) -> list[pa.Array]:
    """States of many partials (rows of `table`, grouped by `rows` / `offsets`) -> one state
    per group."""
    base = spec.out
    if spec.fn in ARG:
        won = np.asarray(table.column(base + ".c").to_numpy(zero_copy_only=False), np.int64) > 0
        return _arg_states(spec, table.column(base), table.column(base + ".y"), won, rows,
                           offsets)
    if spec.fn in BITS:
        dtype = np.dtype(spec.arg_dtype.to_pandas_dtype())
        identity = ~np.zeros(1, dtype)[0] if spec.fn == "bit_and" else dtype.type(0)
        values = np.asarray(table.column(base).to_numpy(zero_copy_only=False), dtype)[rows]
        counts = np.asarray(table.column(base + ".c").to_numpy(zero_copy_only=False), np.int64)
        return _bit_states(spec, _segments(BITS[spec.fn], values, offsets, identity),
                           _segments(np.add, counts[rows], offsets, 0))
    col = {s: np.asarray(table.column(base + s).to_numpy(zero_copy_only=False))[rows]
           for s in PAIR_STATES}
    group = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    n_i = col[".c"].astype(np.int64)
    count = _segments(np.add, n_i, offsets, 0)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        sx = _segments(np.add, col[".sx"], offsets, 0.0)
        sy = _segments(np.add, col[".sy"], offsets, 0.0)
        n = np.where(count > 0, count, 1).astype(np.float64)
        some = n_i > 0
        w = np.where(some, n_i, 1).astype(np.float64)
        # Chan: M2 = sum of the states' M2 + sum of n_i * (state mean - group mean)^2
        dx = np.where(some, col[".sx"] / w - (sx / n)[group], 0.0)
        dy = np.where(some, col[".sy"] / w - (sy / n)[group], 0.0)
        m2x = _segments(np.add, col[".qx"] + n_i * dx * dx, offsets, 0.0)
        m2y = _segments(np.add, col[".qy"] + n_i * dy * dy, offsets, 0.0)
        co = _segments(np.add, col[".cxy"] + n_i * dx * dy, offsets, 0.0)
    return _pair_states(count, sx, sy, m2x, m2y, co,
                        _segments(np.fmin, col[".lox"], offsets, np.inf),
                        _segments(np.fmax, col[".hix"], offsets, -np.inf),
                        _segments(np.fmin, col[".loy"], offsets, np.inf),
                        _segments(np.fmax, col[".hiy"], offsets, -np.inf))


def finish(t: pa.Table, spec) -> pa.Array:
    """Final values from combined states."""
    base = spec.out
    count = np.asarray(pc.fill_null(t.column(base + ".c"), 0).to_numpy(zero_copy_only=False),
                       np.int64)
    if spec.fn in BITS or spec.fn in ARG:  # (an ARG_MAX state without a winner is NULL)
        return pc.if_else(pa.array(count == 0), pa.scalar(None, spec.arg_dtype),
                          t.column(base))
    if spec.fn == "regr_count":
        return pa.array(count, pa.int64())
    state = {s: np.asarray(pc.fill_null(t.column(base + s), 0.0).to_numpy(zero_copy_only=False),
                           np.float64) for s in PAIR_STATES[1:6]}
    sx, sy, m2x, m2y, co = (state[s] for s in (".sx", ".sy", ".qx", ".qy", ".cxy"))
    none = count == 0
    n = np.where(none, 1, count).astype(np.float64)
    fn = spec.fn
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if fn == "covar_pop":
            value = co / n
        elif fn == "covar_samp":
            none = count < 2
            value = co / np.maximum(n - 1.0, 1.0)
        elif fn == "corr":
            none = none | (m2x == 0) | (m2y == 0)
            value = _correlation(co, m2x, m2y)
        elif fn in ("regr_slope", "regr_intercept"):
            none = none | (m2x == 0)
            slope = co / m2x
            value = slope if fn == "regr_slope" else sy / n - slope * (sx / n)
        elif fn == "regr_r2":
            none = none | (m2x == 0)
            r = _correlation(co, m2x, m2y)
            value = np.where(m2y == 0, 1.0, r * r)
        elif fn in ("regr_avgx", "regr_avgy"):
            value = (sx if fn == "regr_avgx" else sy) / n
        else:  # regr_sxx, regr_syy, regr_sxy
            value = {"regr_sxx": m2x, "regr_syy": m2y, "regr_sxy": co}[fn]
    return pa.array(value, T.FLOAT64, mask=none)


def _correlation(co: np.ndarray, m2x: np.ndarray, m2y: np.ndarray) -> np.ndarray:
    """co / sqrt(m2x * m2y) (one rounding less than a product of square roots: y = x gives
    exactly 1), through the square roots where the product overflows; within [-1, 1]."""
    product = m2x * m2y
    wide = np.isinf(product) & np.isfinite(m2x) & np.isfinite(m2y)
    den = np.where(wide, np.sqrt(m2x) * np.sqrt(m2y), np.sqrt(product))
    return np.clip(co / den, -1.0, 1.0)


def _order_values(y) -> tuple[np.ndarray, np.ndarray | None]:
    """y's values as numpy numbers that order as y does (NULLs: any value), and which are
    NaN (floats). Text, decimals and the like by their dense rank (one Arrow sort)."""
    y = y.combine_chunks() if isinstance(y, pa.ChunkedArray) else y
    t = y.type
    if pa.types.is_dictionary(t):
        y, t = y.dictionary_decode(), t.value_type
    if pa.types.is_floating(t):
        v = np.asarray(y.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False),
                       np.float64)
        return v, np.isnan(v)
    if pa.types.is_integer(t):
        return np.asarray(y.fill_null(0).to_numpy(zero_copy_only=False)), None
    if pa.types.is_boolean(t):
        return np.asarray(y.cast(pa.int8()).fill_null(0).to_numpy(zero_copy_only=False)), None
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return np.asarray(y.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False)), None
    if pa.types.is_temporal(t):  # timestamps, date64, time64, durations
        return np.asarray(y.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)), None
    ranks = pc.rank(y, sort_keys="ascending", tiebreaker="dense")
    return np.asarray(ranks.to_numpy(zero_copy_only=False), np.int64), None


def _arg_states(spec, x, y, valid: np.ndarray, rows: np.ndarray,
                offsets: np.ndarray) -> list[pa.Array]:
    """Per group (slices of `rows`), the first valid row with the largest (ARG_MAX) or
    smallest (ARG_MIN) y: its x, its y, and 1 (0 and NULLs where the group has no valid row)."""
    largest = ARG[spec.fn]
    v, nan = _order_values(y)
    v, valid = v[rows], valid[rows]
    sizes = np.diff(offsets)
    group = np.repeat(np.arange(len(sizes)), sizes)
    by_nan = np.zeros(len(v), bool)  # rows that win as NaN
    if nan is not None:  # NaN is above every number: the largest if any, the smallest if all
        nan = nan[rows] & valid
        numbers = valid & ~nan
        some_nan = _segments(np.add, nan.astype(np.int64), offsets, 0) > 0
        no_number = _segments(np.add, numbers.astype(np.int64), offsets, 0) == 0
        nan_wins = (some_nan if largest else some_nan & no_number)[group]
        by_nan = nan_wins & nan
        valid = numbers & ~nan_wins
        fill = -np.inf if largest else np.inf
    else:
        info = np.iinfo(v.dtype)
        fill = info.min if largest else info.max
    best = _segments(np.maximum if largest else np.minimum, np.where(valid, v, fill), offsets,
                     fill)
    candidates = np.flatnonzero(by_nan | (valid & (v == best[group])))
    won_group = group[candidates]
    first = np.r_[True, won_group[1:] != won_group[:-1]] if len(candidates) else np.zeros(0, bool)
    at = np.full(len(sizes), -1, np.int64)
    at[won_group[first]] = rows[candidates[first]]
    take = pa.array(at, pa.int64(), mask=at < 0)
    pick = lambda col: (col.combine_chunks() if isinstance(col, pa.ChunkedArray)  # noqa: E731
                        else col).take(take)
    return [pick(x), pick(y), pa.array((at >= 0).astype(np.int64), pa.int64())]
