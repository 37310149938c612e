"""Holistic aggregates: STRING_AGG, ARRAY_AGG, MEDIAN, QUANTILE_CONT, QUANTILE_DISC, MODE.

Their state is the list of a group's values (Arrow's hash_list in the partial step; one more
list per ORDER BY key); lists of several partials are concatenated when states combine
(`merge_list_levels`, `one_list`); the final value reads each group's whole list
(`holistic`), for all groups at once: the values of every group are sorted by (group,
value) or (group, keys) and picked or joined by offsets, never by a loop over groups. So any
partitioning gives the answer one partition would.
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .relational import canonical_floats, sort_indices


def merge_list_levels(states, rows) -> pa.Array:
    """List states (one per input row) and each group's row numbers -> one list per group:
    the group's lists concatenated in row order, from the offsets of the two levels (no loop
    over groups)."""
    states = states.combine_chunks() if isinstance(states, pa.ChunkedArray) else states
    rows = rows.combine_chunks() if isinstance(rows, pa.ChunkedArray) else rows
    col = pa.ListArray.from_arrays(rows.offsets, states.take(rows.values))
    inner = col.values
    outer_offsets = col.offsets.to_numpy()
    inner_offsets = inner.offsets.to_numpy()
    return pa.ListArray.from_arrays(pa.array(inner_offsets[outer_offsets], pa.int32()),
                                    inner.values)


def one_list(col, merge: bool) -> pa.Array:
    """The list state of a whole table (no groups): all its values, or all its lists' values
    (list states of partials) in one list."""
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    values = pc.list_flatten(col) if merge else col
    return pa.ListArray.from_arrays(pa.array([0, len(values)], pa.int32()), values)


HOLISTIC = ("string_agg", "array_agg", "median", "quantile_cont", "quantile_disc", "mode")


def _non_null_values(state) -> tuple[pa.Array, np.ndarray, np.ndarray]:
    """A list state's non-NULL values, the group (row of the state) of each, and the number
    of them in each group."""
    state = state.combine_chunks() if isinstance(state, pa.ChunkedArray) else state
    values = pc.list_flatten(state)
    parents = pc.list_parent_indices(state)
    if values.null_count:
        keep = pc.is_valid(values)
        values, parents = values.filter(keep), parents.filter(keep)
    p = parents.to_numpy(zero_copy_only=False).astype(np.int64)
    return values, p, np.bincount(p, minlength=len(state)).astype(np.int64)


def ordered_lists(state, keys: list, order) -> pa.Array:
    """Each group's list of values in the order of its key lists (made from the same rows in
    the same order): all groups sorted at once by (group, keys...), a stable sort, so ties
    keep the rows' order. NULLs placed as each key says."""
    state = state.combine_chunks() if isinstance(state, pa.ChunkedArray) else state
    values = pc.list_flatten(state)
    parents = pc.list_parent_indices(state)
    cols = {"__group": parents}
    spec = [("__group", True, False)]
    for i, (k, (_, asc, nulls_first)) in enumerate(zip(keys, order, strict=True)):
        k = k.combine_chunks() if isinstance(k, pa.ChunkedArray) else k
        cols[f"k{i}"] = pc.list_flatten(k)
        spec.append((f"k{i}", asc, nulls_first))
    idx = sort_indices(pa.table(cols), spec)
    counts = np.bincount(parents.to_numpy(zero_copy_only=False).astype(np.int64),
                         minlength=len(state))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values.take(idx),
                                    mask=state.is_null() if state.null_count else None)


def holistic(state, s) -> pa.Array:
    """The final value of a holistic aggregate from its list state, for all groups at once:
    values of all groups are sorted by (group, value) and picked by offsets."""
    state = state.combine_chunks() if isinstance(state, pa.ChunkedArray) else state
    n = len(state)
    if s.fn == "array_agg":  # NULL for no rows (an ungrouped aggregate of nothing)
        empty = pc.equal(pc.fill_null(pc.list_value_length(state), 0), 0)
        return pc.if_else(empty, pa.scalar(None, state.type), state)
    values, parents, counts = _non_null_values(state)
    none = counts == 0
    if s.fn == "mode":
        return _mode(values, parents, n, s.dtype)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    if s.fn == "string_agg":
        lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values,
                                         mask=pa.array(none))
        return pc.binary_join(lists, s.params[0])
    if (n <= FEW_GROUPS or len(values) >= GROUP_VALUES * n) and (
            pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
        return _selected(values, offsets, counts, none, s)
    order = pc.sort_indices(pa.table({"p": parents, "v": values}),
                            sort_keys=[("p", "ascending"), ("v", "ascending")])
    ordered = values.take(order)
    start = offsets[:-1]
    if not len(ordered):
        return pa.nulls(n, s.dtype)
    if s.fn == "quantile_disc":
        at = np.where(none, 0, start + _disc_index(counts, s.params[0]))
        picked = ordered.take(pa.array(at, pa.int64()))
        return pc.if_else(pa.array(none), pa.scalar(None, picked.type), picked)
    q = 0.5 if s.fn == "median" else float(s.params[0])
    v = ordered.to_numpy(zero_copy_only=False).astype(np.float64)
    rn = (np.maximum(counts, 1) - 1).astype(np.float64) * q
    lo, hi = np.floor(rn).astype(np.int64), np.ceil(rn).astype(np.int64)
    safe = np.where(none, 0, start)
    v_lo = v[np.minimum(safe + lo, len(v) - 1)]
    v_hi = v[np.minimum(safe + hi, len(v) - 1)]
    return pa.array(_lerp(v_lo, rn - lo, v_hi), pa.float64(), mask=none)


def _mode(values: pa.Array, parents: pa.Array, n: int, dtype: pa.DataType) -> pa.Array:
    """MODE: each group's most frequent value, the smallest of equally frequent ones (as
    PostgreSQL's mode() over its sorted input; DuckDB picks any), NULL for a group of no
    values. The (group, value) pairs are counted by one hash aggregate and ranked by one
    sort. -0.0 and 0.0 are one value (shown 0.0), so are all NaNs."""
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    values = canonical_floats(values)  # (-0.0 as 0.0, one NaN for every NaN)
    counted = pa.table({"p": parents, "v": values}).group_by(["p", "v"], use_threads=False) \
        .aggregate([([], "count_all")])
    order = pc.sort_indices(counted, sort_keys=[("p", "ascending"), ("count_all", "descending"),
                                                ("v", "ascending")])
    ranked = counted.take(order)
    p = np.asarray(ranked.column("p").to_numpy(zero_copy_only=False), np.int64)
    first = np.flatnonzero(np.r_[True, p[1:] != p[:-1]]) if len(p) else np.zeros(0, np.int64)
    at = np.full(n, -1, np.int64)
    at[p[first]] = first
    picked = ranked.column("v").take(pa.array(at, pa.int64(), mask=at < 0))
    picked = picked.combine_chunks() if isinstance(picked, pa.ChunkedArray) else picked
    return picked if picked.type == dtype else picked.cast(dtype)


def _lerp(v_lo, d, v_hi):
    """DuckDB's interpolation lo * (1 - d) + hi * d, which cannot overflow (hi - lo could:
    [-1e308, 1e308] gave inf), and no interpolation between equal values (inf, inf gave
    NaN). NaN and inf - inf stay NaN, silently, as in DuckDB."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(v_lo == v_hi, v_lo, v_lo * (1.0 - d) + v_hi * d)


# Up to this many groups, a number quantile selects each group's one or two order statistics
# in its own values (numpy's introselect, linear) instead of sorting every value by (group,
# value): the median of 2M doubles took 0.25 s sorted, 0.02 s selected (DuckDB 0.03 s).
# The values of a group are contiguous (a list state's), so each group is a slice. A
# selection costs ~10 us of its own, so more groups than this select only when they hold
# GROUP_VALUES values each on average (1,000 groups of 2,000: 0.30 -> 0.05 s); smaller
# ones are sorted all at once (a million groups of two would take seconds one by one).
FEW_GROUPS = 256
GROUP_VALUES = 512


def _selected(values: pa.Array, offsets: np.ndarray, counts: np.ndarray, none: np.ndarray,
              s) -> pa.Array:
    """`holistic`'s answer for MEDIAN / QUANTILE_CONT / QUANTILE_DISC of integers or floats,
    each group's order statistics selected in its slice of `values` (NaN sorts last, as in
    Arrow's sort and DuckDB)."""
    v = values.to_numpy(zero_copy_only=False)
    n = len(counts)
    if s.fn == "quantile_disc":
        at = _disc_index(counts, s.params[0])
        out = np.zeros(n, dtype=v.dtype)
        for g in np.flatnonzero(~none):
            seg = v[offsets[g]:offsets[g + 1]]
            out[g] = np.partition(seg, at[g])[at[g]]
        return pa.array(out, values.type, mask=none)
    q = 0.5 if s.fn == "median" else float(s.params[0])
    rn = (np.maximum(counts, 1) - 1).astype(np.float64) * q
    lo, hi = np.floor(rn).astype(np.int64), np.ceil(rn).astype(np.int64)
    v_lo, v_hi = np.zeros(n, dtype=np.float64), np.zeros(n, dtype=np.float64)
    for g in np.flatnonzero(~none):
        seg = v[offsets[g]:offsets[g + 1]].astype(np.float64)
        part = np.partition(seg, [lo[g], hi[g]])
        v_lo[g], v_hi[g] = part[lo[g]], part[hi[g]]
    return pa.array(_lerp(v_lo, rn - lo, v_hi), pa.float64(), mask=none)


def _disc_index(counts: np.ndarray, q) -> np.ndarray:
    """QUANTILE_DISC's position in each group's sorted values, as DuckDB computes it:
    max(1, n - floor(n - n * q)) - 1, exactly (integers) for a DECIMAL fraction, in DOUBLE
    for a DOUBLE one."""
    if isinstance(q, decimal.Decimal):
        exp = q.as_tuple().exponent
        scaling = 10 ** max(0, -exp)
        integral = int(q * scaling)
        floored = (counts * scaling - counts * integral) // scaling
    else:
        floored = np.floor(counts.astype(np.float64) - counts.astype(np.float64) * float(q))
        floored = floored.astype(np.int64)
    return np.maximum(1, counts - floored) - 1
