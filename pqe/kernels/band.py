"""Candidate pairs of a join whose condition bounds a column of one side by columns of the
other (`l.ts BETWEEN r.lo AND r.hi`, `l.x < r.y`): a band (range) join.

The bounded side's column is sorted once; each row of the other side finds the run of
sorted values within its bounds with two binary searches, so the pairs come in
O((n + m) log n + pairs) instead of the n x m of a nested loop. The pairs are a superset of
the matching ones only in that the join's whole condition is still evaluated on them
(kernels.join.nested_loop_join): a NULL key or bound gives no pairs, as its comparison is
never true.

Keys are integers, dates, timestamps, DECIMALs of up to 18 digits (their unscaled int64) or
floats of one type on both sides (planner: `physical.planner._band`). A key or bound may be
an expression of its side's columns (`o.price > c.balance * 30`), computed here once per row;
when that fails for some row, there are no blocks and the caller pairs every row with every
row, so the join's condition fails (or not) exactly as it would without the band.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import Error
from ..physical.plan import Band
from ..plan.expr import Expr
from .expressions import Compiler, project


def _sortable(col) -> tuple[np.ndarray, np.ndarray] | None:
    """(values, valid mask) of an integer, date, timestamp or DECIMAL (of at most 18 digits:
    its unscaled int64) column as int64, or a float column as float64 (NaN sorts last, above
    every number, as SQL orders it), NULL slots 0; None when it does not fit."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    t = arr.type
    if pa.types.is_floating(t):
        values = pc.cast(arr, pa.float64()).fill_null(0).to_numpy(zero_copy_only=False)
        valid = pc.is_valid(arr).to_numpy(zero_copy_only=False)
        return values, valid
    if pa.types.is_decimal(t):
        if t.bit_width != 128 or t.precision > 18:
            return None
        words = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=2 * (arr.offset + len(arr)))
        values = words[2 * arr.offset::2].copy()  # the low word: the value, as it fits int64
        valid = pc.is_valid(arr).to_numpy(zero_copy_only=False)
        values[~valid] = 0
        return values, valid
    if pa.types.is_date32(t):
        arr = arr.view(pa.int32())
    elif pa.types.is_date64(t) or pa.types.is_timestamp(t):
        arr = arr.view(pa.int64())
    elif not pa.types.is_integer(t):
        return None
    try:
        arr = pc.cast(arr, pa.int64())
    except pa.ArrowInvalid:  # uint64 past int64
        return None
    valid = np.ones(len(arr), dtype=bool) if not arr.null_count else \
        pc.is_valid(arr).to_numpy(zero_copy_only=False)
    values = arr.fill_null(0).to_numpy(zero_copy_only=False) if arr.null_count else \
        arr.to_numpy(zero_copy_only=False)
    return values, valid


def pair_blocks(left: pa.Table, right: pa.Table, band: Band, block_pairs: int):
    """Blocks of (left rows, right rows) int64 arrays holding every pair whose key lies within
    its bounds (and possibly others), each of about `block_pairs` pairs (a row of the other
    side with more pairs is a block of its own). None when a column cannot be compared so
    (the caller then pairs every row with every row)."""
    sorted_t, other = (left, right) if band.sorted_side == "left" else (right, left)
    if not sorted_t.num_rows or not other.num_rows:
        return None  # (no pairs: nothing is computed for either side's rows)
    try:
        key = _sortable(_values(sorted_t, band.key))
        bounds = [None if b is None else _sortable(_values(other, b))
                  for b in (band.lower, band.upper)]
    except (Error, pa.ArrowException, ArithmeticError):
        return None  # some row's key or bound fails: every pair, as the nested loop makes them
    if key is None or any(b is None for b, n in zip(bounds, (band.lower, band.upper), strict=True)
                          if n is not None):
        return None
    return _blocks(key, bounds, band, other.num_rows, block_pairs)


def _values(table: pa.Table, ref: str | Expr):
    """A key or bound: a column, or an expression of the table's columns computed per row."""
    if isinstance(ref, str):
        return table.column(ref)
    return project(table, [Compiler()(ref)], ["v"]).column(0)


def _blocks(key, bounds, band: Band, m: int, block_pairs: int):
    values, valid = key
    rows = np.flatnonzero(valid)  # a NULL key is within no bounds
    order = rows[np.argsort(values[rows], kind="stable")]
    keys = values[order]
    n = len(keys)
    start = np.zeros(m, dtype=np.int64)
    end = np.full(m, n, dtype=np.int64)
    ok = np.ones(m, dtype=bool)
    (lo, hi) = bounds
    if lo is not None:
        start = np.searchsorted(keys, lo[0], side="left" if band.lower_inclusive else "right")
        ok &= lo[1]
    if hi is not None:
        end = np.searchsorted(keys, hi[0], side="right" if band.upper_inclusive else "left")
        ok &= hi[1]
    counts = np.where(ok, np.maximum(end - start, 0), 0).astype(np.int64)
    cum = np.cumsum(counts)
    total = int(cum[-1]) if m else 0
    first = 0
    while first < m and total:
        done = int(cum[first - 1]) if first else 0
        # the other side's rows first .. last whose pairs fit the block (at least one row)
        last = max(first + 1, int(np.searchsorted(cum, done + block_pairs, side="right")))
        c = counts[first:last]
        size = int(c.sum())
        if size:
            other_rows = np.repeat(np.arange(first, last, dtype=np.int64), c)
            offsets = np.repeat(np.cumsum(c) - c, c)
            within = np.arange(size, dtype=np.int64) - offsets
            sorted_rows = order[np.repeat(start[first:last], c) + within]
            if band.sorted_side == "left":
                yield sorted_rows, other_rows
            else:
                yield other_rows, sorted_rows
        first = last
