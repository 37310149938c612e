"""Perfect-hash ("dense") joins for broadcast build sides.

A broadcast build side whose single integer key is unique and spans a small range becomes a
lookup array, `slot[key - lo] = row` (-1: no row), built once per query and shared by every
probe partition; probing is one vectorized array lookup per row, with no hashing. TPC-H's
dimension keys (orderkey, suppkey, partkey, custkey...) are dense primary keys, so most of
its broadcast joins qualify. DuckDB's perfect hash join does the same for small key ranges.
Build sides that do not qualify keep Acero's hash join (`kernels.join.hash_join`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..physical.plan import DENSE_DENSITY as DENSITY
from ..physical.plan import DENSE_MAX_SLOTS as MAX_SLOTS
from ..physical.plan import DENSE_SLACK as SLACK
from ..physical.plan import dense_fits
from .expressions import filter_table


@dataclass
class DenseIndex:
    """A build table with its lookup array over the key column `key`."""

    table: pa.Table
    key: str
    lo: int
    slots: np.ndarray  # int32 row numbers, -1 where no build row has that key

    @property
    def nbytes(self) -> int:
        return self.table.nbytes + self.slots.nbytes


fits = dense_fits  # the planner's rule (physical.plan), checked again at build time


def build(table: pa.Table, key: str) -> DenseIndex | pa.Table:
    """The DenseIndex of `table` on `key`, or the table itself when the key is not an integer,
    has duplicates, or spans too wide a range (then the caller hash-joins as usual)."""
    n = table.num_rows
    col = table.column(key)
    if n == 0 or not pa.types.is_integer(col.type):
        return table
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    try:
        arr = pc.cast(arr, pa.int64())
    except pa.ArrowInvalid:  # uint64 past int64
        return table
    if arr.null_count:  # NULL keys never match: leave their rows out of the slots
        rows = np.flatnonzero(pc.is_valid(arr).to_numpy(zero_copy_only=False)).astype(np.int32)
        keys = arr.drop_null().to_numpy(zero_copy_only=False)
    else:
        rows = np.arange(n, dtype=np.int32)
        keys = arr.to_numpy(zero_copy_only=False)
    if len(keys) == 0:
        return table
    lo, hi = int(keys.min()), int(keys.max())
    span = hi - lo + 1
    if not fits(span, n):
        return table
    offsets = keys - lo
    slots = np.full(span, -1, dtype=np.int32)
    slots[offsets] = rows
    if not np.array_equal(slots[offsets], rows):  # a key occurs twice: not a perfect hash
        return table
    return DenseIndex(table, key, lo, slots)


def probe(left: pa.Table, index: DenseIndex, kind: str, left_key: str, residual,
          out_ids) -> pa.Table | None:
    """Join `left` (a probe partition) with the index's table: kind inner, left, semi or anti;
    `residual` a compiled condition over both sides' columns, or None. None when the probe
    key cannot be compared as int64 (the caller falls back to a hash join)."""
    col = left.column(left_key)
    if not pa.types.is_integer(col.type):
        return None
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    try:
        arr = pc.cast(arr, pa.int64())
    except pa.ArrowInvalid:
        return None
    n = len(arr)
    # int64 keys minus lo may wrap, but never into [0, len(slots)): that needs key < -2^63
    miss = index.lo - 1 if index.lo > -(2 ** 63) else index.lo + len(index.slots)  # NULL keys
    offsets = arr.fill_null(miss).to_numpy(zero_copy_only=False) - index.lo
    hit = (offsets >= 0) & (offsets < len(index.slots))
    pos = np.full(n, -1, dtype=np.int32)
    pos[hit] = index.slots[offsets[hit]]
    matched = np.flatnonzero(pos >= 0)
    right = index.table
    if residual is not None:  # pairs failing the condition do not match
        pairs = _combine(left.take(matched), right.take(pos[matched]), None)
        keep = filter_table(pairs.append_column("__pqe_pair", pa.array(np.arange(len(matched)))),
                            residual).column("__pqe_pair").to_numpy()
        lost = np.ones(len(matched), dtype=bool)
        lost[keep] = False
        pos[matched[lost]] = -1
        matched = matched[keep]
    if kind == "inner":
        return _combine(left.take(matched), right.take(pos[matched]), out_ids)
    if kind == "semi":
        return left.take(matched).select(list(out_ids))
    if kind == "anti":
        mask = np.ones(n, dtype=bool)
        mask[matched] = False
        return left.filter(pa.array(mask)).select(list(out_ids))
    if kind == "left":
        taken = right.take(pa.array(pos, mask=pos < 0))
        return _combine(left, taken, out_ids)
    raise ValueError(f"dense join does not do {kind} joins")


def _combine(left: pa.Table, right: pa.Table, out_ids) -> pa.Table:
    cols = {name: left.column(name) for name in left.column_names}
    cols.update({name: right.column(name) for name in right.column_names})
    names = list(out_ids) if out_ids is not None else list(cols)
    return pa.Table.from_arrays([cols[c] for c in names], names=names)
