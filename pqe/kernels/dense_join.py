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

from .. import types as T
from ..physical.plan import BITMAP_DENSITY, DENSE_MAX_SLOTS, bitmap_form, dense_fits
from .expressions import filter_table
from .hashing import sorted_unique


@dataclass
class DenseIndex:
    """A build table with its lookup structure over the key column `key`, whose values span
    lo .. lo + span - 1: a lookup array of row numbers, or, for sparse keys, a bitmap."""

    table: pa.Table
    key: str
    lo: int
    # int32 row numbers of keys lo-1 .. lo+span: -1 where no build row has that key, and a -1
    # sentinel at each end, which probes clip out-of-range keys onto. One array: `slots` is a
    # view of it (a second copy doubled a broadcast build's memory and what Dask ships).
    # None for the bitmap form.
    guarded: np.ndarray | None
    span: int = 0
    # the bitmap form: bit k + 1 of `bits` (words of 64) is set when key lo + k has a build
    # row, bit 0 and the bits past span clear (out-of-range keys clip onto them); rank[w] = the
    # set bits in the words before w; rows[r] = the build row of the r-th smallest key, and -1
    # after the last
    bits: np.ndarray | None = None
    rank: np.ndarray | None = None
    rows: np.ndarray | None = None

    @property
    def slots(self) -> np.ndarray:
        return self.guarded[1:-1]

    @property
    def nbytes(self) -> int:
        arrays = (self.guarded, self.bits, self.rank, self.rows)
        return self.table.nbytes + sum(a.nbytes for a in arrays if a is not None)

    def lookup(self, offsets: np.ndarray) -> np.ndarray:
        """Build rows (int32, -1: none) of keys lo - 1 + `offsets`, offsets in [0, span + 1]."""
        if self.guarded is not None:
            return self.guarded.take(offsets)
        words = self.bits.take(offsets >> 6)
        bit = (offsets & 63).astype(np.uint64)
        hit = ((words >> bit) & np.uint64(1)).astype(bool)
        return np.where(hit, self.rows.take(self.ranks(offsets, words, bit)), np.int32(-1))

    def ranks(self, offsets: np.ndarray, words=None, bit=None) -> np.ndarray:
        """The set bits of the bitmap before each offset: a present key's place among the
        build's keys in order."""
        if words is None:
            words = self.bits.take(offsets >> 6)
            bit = (offsets & 63).astype(np.uint64)
        below = words & ((np.uint64(1) << bit) - np.uint64(1))
        return self.rank.take(offsets >> 6) + np.bitwise_count(below)


fits = dense_fits  # the planner's rule (physical.plan), checked again at build time


def _int64_keys(table: pa.Table, key: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(row numbers, int64 keys) of the rows of `table` whose integer `key` is not NULL
    (NULL keys never match: their rows are left out), or None when the key is not an
    integer, does not fit int64 (uint64 past it) or no row has one."""
    col = table.column(key)
    if table.num_rows == 0 or not pa.types.is_integer(col.type):
        return None
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    try:
        arr = pc.cast(arr, pa.int64())
    except pa.ArrowInvalid:
        return None
    if arr.null_count:
        rows = np.flatnonzero(pc.is_valid(arr).to_numpy(zero_copy_only=False)).astype(np.int32)
        keys = arr.drop_null().to_numpy(zero_copy_only=False)
    else:
        rows = np.arange(len(arr), dtype=np.int32)
        keys = arr.to_numpy(zero_copy_only=False)
    return (rows, keys) if len(keys) else None


# an index is built over this many keys at a time: the temporaries of a build (offsets, ranks)
# are this long, not as long as the build (TPC-H SF10 Q9's 15M orders took 570 MB of them:
# int64 offsets and row numbers of every key at once, beside the 240 MB index)
BUILD_CHUNK = 1 << 20


def _chunks(n: int):
    return ((s, min(n, s + BUILD_CHUNK)) for s in range(0, n, BUILD_CHUNK))


def build(table: pa.Table, key: str, encode: tuple[str, ...] = ()) -> DenseIndex | pa.Table:
    """The DenseIndex of `table` on `key`, or the table itself when the key is not an integer,
    has duplicates, or spans too wide a range (then the caller hash-joins as usual). Text
    columns `encode` are dictionary-encoded first (one dictionary each): the probes then
    gather their indices, and an aggregate groups by them (physical.planner.
    _build_text_encoded)."""
    for name in encode:
        i = table.schema.get_field_index(name)
        if i >= 0 and T.is_text(table.schema.field(i).type):
            col = table.column(i)
            col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            table = table.set_column(i, name, pc.dictionary_encode(col))
    n = table.num_rows
    found = _int64_keys(table, key)
    if found is None:
        return table
    rows, keys = found
    lo, hi = int(keys.min()), int(keys.max())
    span = hi - lo + 1
    if not fits(span, n):
        return table
    # one chunk: probes gather rows from it with `take`, which would otherwise concatenate
    # the chunks again for every probe partition
    if bitmap_form(span, len(keys)):  # (physical.plan: sparse keys over a wide range)
        return _bitmap_index(table, key, keys, rows, lo, span)
    guarded = np.full(span + 2, -1, dtype=np.int32)
    slots = guarded[1:-1]
    for s, e in _chunks(len(keys)):
        slots[keys[s:e] - lo] = rows[s:e]
    for s, e in _chunks(len(keys)):
        if not np.array_equal(slots[keys[s:e] - lo], rows[s:e]):
            return table  # a key occurs twice: not a perfect hash
    return DenseIndex(table.combine_chunks(), key, lo, guarded, span)


def _bitmap_index(table: pa.Table, key: str, keys: np.ndarray, rows: np.ndarray, lo: int,
                  span: int) -> DenseIndex | pa.Table:
    """The bitmap form of the index (see DenseIndex), or the table when a key repeats. No
    sort: the keys are marked in a byte per slot (freed on return), packed to bits, and
    each build row lands at its key's rank."""
    nwords = (span + 2 + 63) // 64
    marks = np.zeros(nwords * 64, dtype=np.uint8)
    for s, e in _chunks(len(keys)):  # bit 0 stays clear: keys below the range clip onto it
        marks[(keys[s:e] - lo) + 1] = 1
    if np.count_nonzero(marks) != len(keys):
        return table  # a key occurs twice: not a perfect hash
    bits = np.packbits(marks, bitorder="little").view("<u8").astype(np.uint64, copy=False)
    del marks
    rank = np.zeros(nwords, dtype=np.int32)
    np.cumsum(np.bitwise_count(bits[:-1]), out=rank[1:])
    index = DenseIndex(table.combine_chunks(), key, lo, None, span, bits, rank, None)
    ordered = np.full(len(keys) + 1, -1, dtype=np.int32)
    for s, e in _chunks(len(keys)):
        ordered[index.ranks((keys[s:e] - lo) + 1)] = rows[s:e]
    index.rows = ordered
    return index


def probe(left: pa.Table, index: DenseIndex, kind: str, left_key: str, residual,
          out_ids) -> pa.Table | None:
    """Join `left` (a probe partition) with the index's table: kind inner, left, semi or anti;
    `residual` a compiled condition over both sides' columns, or None. None when the probe
    key cannot be compared as int64 (the caller falls back to a hash join)."""
    pos = _positions(left.column(left_key), index)
    if pos is None:
        return None
    n = len(pos)
    hit = pos >= 0
    matched = None
    right = index.table
    if residual is not None:  # pairs failing the condition do not match
        matched = np.flatnonzero(hit)
        # (the probe's rows by a mask, not a take: Arrow's take of a chunked column
        # concatenates its chunks first, a copy of the partition for a few rows)
        pairs = _combine(_keep_rows(left, hit), right.take(pos[matched]), None)
        keep = filter_table(pairs.append_column("__pqe_pair", pa.array(np.arange(len(matched)))),
                            residual).column("__pqe_pair").to_numpy()
        lost = np.ones(len(matched), dtype=bool)
        lost[keep] = False
        pos[matched[lost]] = -1
        hit[matched[lost]] = False
        matched = matched[keep]
    if kind == "left":
        taken = right.take(pa.array(pos, mask=~hit)) if not hit.all() else right.take(pos)
        return _combine(left, taken, out_ids)
    if kind == "anti":
        return _keep_rows(left, ~hit).select(list(out_ids))
    kept = _keep_rows(left, hit)
    if kind == "semi":
        return kept.select(list(out_ids))
    if kind == "inner":
        if matched is None:
            matched = np.flatnonzero(hit) if kept.num_rows < n else None
        rows = pos if matched is None else pos[matched]
        return _combine(kept, right.take(rows), out_ids)
    raise ValueError(f"dense join does not do {kind} joins")


def _positions(col, index: DenseIndex) -> np.ndarray | None:
    """The build row of every probe key (int32, -1: no build row, NULL keys included), or None
    when the key is not an integer that fits int64. Chunk by chunk (no concatenated copy of
    the keys), over a slots array with a -1 sentinel at each end (keys below the range clip
    to the first, keys above to the last)."""
    if not pa.types.is_integer(col.type):
        return None
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    try:
        parts = [_chunk_positions(c, index) for c in chunks]
    except pa.ArrowInvalid:
        return None
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts) if parts else np.empty(0, dtype=np.int32)


# keys of these types, less `lo - 1` with |lo| below 2^62, never wrap around in int64; an
# int64 key may, but then never onto an offset in [1, span]: with |lo| < 2^62 and span <
# 2^62, a key whose true offset is past 2^63 - 1 wraps to below -2^62 and one whose offset
# is under -2^63 wraps to above 2^62, and both clip onto a sentinel (no match), as they would
# unwrapped. So int64 keys skip the min/max pass the exact path needs (TPC-H's keys)
_FAST = (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32())


def _chunk_positions(arr: pa.Array, index: DenseIndex) -> np.ndarray:
    span = index.span
    if len(arr) == 0:
        return np.empty(0, dtype=np.int32)
    if arr.type in _FAST and abs(index.lo) < 2 ** 62 and span < 2 ** 62:
        # the common case in one pass each: key - (lo - 1) straight into int64 offsets (no
        # cast of the keys, no min/max), then a gather that clips out-of-range offsets onto
        # the sentinels (TPC-DS's int32 surrogate keys: the probe was a seventh of its time).
        # The keys are read from the values buffer whatever NULL slots hold; NULL keys (TPC-DS
        # foreign keys have some) then get offset 0, the low sentinel: no cast and fill of
        # every key first (those were a third of the probes' time)
        values = np.frombuffer(arr.buffers()[1], dtype=arr.type.to_pandas_dtype(),
                               count=len(arr), offset=arr.offset * arr.type.byte_width)
        offsets = np.subtract(values, index.lo - 1, dtype=np.int64)
        if arr.null_count:
            offsets[~_valid(arr)] = 0
        if index.guarded is not None:
            return index.guarded.take(offsets, mode="clip")
        np.clip(offsets, 0, span + 1, out=offsets)
        return index.lookup(offsets)
    if arr.null_count:
        # NULL keys never match: any key outside the range does the same
        miss = index.lo - 1 if index.lo > -(2 ** 63) else index.lo + span
        arr = pc.cast(arr, pa.int64()).fill_null(miss)
    keys = pc.cast(arr, pa.int64()).to_numpy(zero_copy_only=False)  # (uint64 past int64 raises)
    kmin, kmax = int(keys.min()), int(keys.max())
    # key - (lo - 1) must not wrap, nor lo - 1 itself (lo = -2^63): keys near the int64 ends
    # take the slower, exact path
    if index.lo == -(2 ** 63) or kmin - (index.lo - 1) < -(2 ** 62) \
            or kmax - (index.lo - 1) > 2 ** 62:
        offsets = keys - index.lo  # may wrap, but never into [0, span)
        inside = (offsets >= 0) & (offsets < span)
        pos = np.full(len(keys), -1, dtype=np.int32)
        pos[inside] = index.lookup(offsets[inside] + 1)
        return pos
    offsets = np.subtract(keys, index.lo - 1)
    if index.guarded is not None:
        return index.guarded.take(offsets, mode="clip")
    np.clip(offsets, 0, span + 1, out=offsets)
    return index.lookup(offsets)


def _valid(arr: pa.Array) -> np.ndarray:
    """Where an array (with a validity bitmap) is not NULL, as booleans."""
    bits = np.unpackbits(np.frombuffer(arr.buffers()[0], np.uint8), bitorder="little",
                         count=arr.offset + len(arr))
    return bits[arr.offset:].view(bool)


def _keep_rows(table: pa.Table, mask: np.ndarray) -> pa.Table:
    """The rows of `table` where `mask` is set (the table itself when every row is)."""
    if mask.all():
        return table
    return table.filter(pa.array(mask))


def _combine(left: pa.Table, right: pa.Table, out_ids) -> pa.Table:
    cols = {name: left.column(name) for name in left.column_names}
    cols.update({name: right.column(name) for name in right.column_names})
    names = list(out_ids) if out_ids is not None else list(cols)
    return pa.Table.from_arrays([cols[c] for c in names], names=names)


# ---- runs of a non-unique key ---------------------------------------------------------------


@dataclass
class KeyRuns:
    """A build side's rows grouped by a non-unique integer key: `index` (a DenseIndex over the
    distinct keys, in order) gives a key's rank r, and the build rows with that key are
    rows[starts[r]:starts[r + 1]]. Built once per query and shared by every probe partition,
    as the unique-key index is; Acero rebuilt its hash table of the build side in each."""

    index: DenseIndex
    rows: np.ndarray  # int64 build row numbers, in key order
    starts: np.ndarray  # int64, one more than the distinct keys

    @property
    def nbytes(self) -> int:
        return self.index.nbytes + self.rows.nbytes + self.starts.nbytes


def build_runs(table: pa.Table, key: str) -> KeyRuns | None:
    """The KeyRuns of `table` on `key`, or None when the key is not an integer or its distinct
    values span too wide a range (the caller then hash-joins). NULL keys match nothing: their
    rows are in no run."""
    found = _int64_keys(table, key)
    if found is None or len(found[1]) < RUNS_MIN_ROWS_SLOTS:
        return None
    rows, keys = found
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    starts = np.concatenate(([0], np.flatnonzero(ordered[1:] != ordered[:-1]) + 1,
                             [len(ordered)])).astype(np.int64)
    distinct = ordered[starts[:-1]]
    index = build(pa.table({"k": distinct}), "k")  # row r = the r-th distinct key
    if not isinstance(index, DenseIndex):
        # keys more than DENSE_DENSITY slots apart over a range too short for the unique
        # index's bitmap (physical.plan.bitmap_form): the bitmap all the same, up to
        # BITMAP_DENSITY slots a key (the runs are built once, not per partition)
        lo, span = int(distinct[0]), int(distinct[-1]) - int(distinct[0]) + 1
        if span > BITMAP_DENSITY * len(distinct) or span > RUNS_MAX_SLOTS:
            return None
        index = _bitmap_index(pa.table({"k": distinct}), "k", distinct,
                              np.arange(len(distinct), dtype=np.int32), lo, span)
        if not isinstance(index, DenseIndex):  # pragma: no cover - the keys are distinct
            return None
    if len(keys) < (RUNS_MIN_ROWS_BITMAP if index.guarded is None else RUNS_MIN_ROWS_SLOTS):
        return None
    return KeyRuns(index, rows[order], starts)


def _run_pairs(runs: KeyRuns, hit: np.ndarray, ranks: np.ndarray):
    """(probe rows, build rows) of every pair of a probe row (`hit`, whose key has rank
    `ranks`) with each build row of its key's run, in blocks of about RUN_PAIRS pairs (one
    probe row's run at least): the expansion is vectorized, its memory bounded."""
    counts = runs.starts[ranks + 1] - runs.starts[ranks]
    ends = np.cumsum(counts)
    begin = 0
    while begin < len(hit):
        done = ends[begin - 1] if begin else 0
        end = max(begin + 1, int(np.searchsorted(ends, done + RUN_PAIRS, side="right")))
        cnt = counts[begin:end]
        total = int(cnt.sum())
        if total:
            within = np.arange(total) - np.repeat(np.cumsum(cnt) - cnt, cnt)
            yield (np.repeat(hit[begin:end], cnt),
                   runs.rows[np.repeat(runs.starts[ranks[begin:end]], cnt) + within])
        begin = end


RUNS_MAX_SLOTS = DENSE_MAX_SLOTS  # (building the bitmap marks a byte per slot)
# Acero hash-joins a small build side faster than the runs are probed, even rebuilding its hash
# table in every partition; a big one no longer fits its caches. Measured (4M probe rows of SF10
# lineitem, a residual `<>`): an array of slots wins from ~100k build rows (200k: 26 vs 36 ms),
# a bitmap from ~400k (400k: 54 vs 58 ms; 757k, SF10 Q21's late lines: 56 vs 99 ms)
RUNS_MIN_ROWS_SLOTS = 100_000
RUNS_MIN_ROWS_BITMAP = 400_000
RUN_PAIRS = 1 << 21  # (probe row, build row) pairs checked against a residual at a time


def matched_build_rows(probe: pa.Table, runs: KeyRuns, probe_key: str, build: pa.Table,
                       residual, residual_ids) -> np.ndarray | None:
    """The build rows (sorted, once each) whose key some probe row has, and for which the
    `residual` (compiled; it reads `residual_ids`, from both sides) is TRUE on such a pair:
    what a semi or anti join keeps of a small build side. None when the probe key cannot be
    compared as int64 (the caller hash-joins)."""
    pos = _positions(probe.column(probe_key), runs.index)
    if pos is None:
        return None
    hit = np.flatnonzero(pos >= 0)
    ranks = pos[hit].astype(np.int64)
    marked = np.zeros(build.num_rows, dtype=bool)
    if residual is None:
        seen = np.zeros(len(runs.starts) - 1, dtype=bool)
        seen[ranks] = True
        marked[runs.rows[np.repeat(seen, np.diff(runs.starts))]] = True
        return np.flatnonzero(marked)
    needed = set(residual_ids)
    probe = probe.select([c for c in probe.column_names if c in needed])
    build = build.select([c for c in build.column_names if c in needed])
    for probe_rows, build_rows in _run_pairs(runs, hit, ranks):
        pairs = _combine(probe.take(probe_rows), build.take(build_rows), None)
        keep = filter_table(pairs.append_column("__pqe_pair",
                                                pa.array(np.arange(len(build_rows)))),
                            residual).column("__pqe_pair").to_numpy()
        marked[build_rows[keep]] = True
    return np.flatnonzero(marked)


# ---- inner joins on a non-unique key ---------------------------------------------------------


@dataclass
class RunsTable:
    """A broadcast build side with its rows grouped by its one integer key (KeyRuns), made
    once per query for every probe partition of an inner join (Acero hashed the build again
    in each: TPC-H SF10 Q8's 404k lineitems by order key, four hash tables at once)."""

    table: pa.Table
    runs: KeyRuns

    @property
    def nbytes(self) -> int:
        return self.table.nbytes + self.runs.nbytes


def build_runs_table(table: pa.Table, key: str) -> RunsTable | pa.Table:
    """The RunsTable of `table` on `key`, or the table itself when the key does not qualify
    (build_runs: not an integer, too sparse, too few rows; the probes then hash-join)."""
    runs = build_runs(table, key)
    if runs is None:
        return table
    return RunsTable(table.combine_chunks(), runs)


def probe_runs(left: pa.Table, build: RunsTable, left_key: str, residual,
               out_ids, residual_ids=()) -> pa.Table | None:
    """The inner join of `left` (a probe partition) with the build's rows of equal key, and
    the `residual` (compiled, over both sides' columns) TRUE; None when the probe key cannot
    be compared as int64 (the caller hash-joins). Vectorized: each probe row's run of build
    rows is expanded with repeat, in blocks of about RUN_PAIRS pairs."""
    runs = build.runs
    pos = _positions(left.column(left_key), runs.index)
    if pos is None:
        return None
    hit = np.flatnonzero(pos >= 0)
    ranks = pos[hit].astype(np.int64)
    # only the columns the output or the residual reads are taken for every pair
    needed = set(out_ids) | set(residual_ids)
    right = build.table.select([c for c in build.table.column_names if c in needed])
    left = left.select([c for c in left.column_names if c in needed])
    pieces = []
    for probe_rows, build_rows in _run_pairs(runs, hit, ranks):
        pairs = _combine(left.take(probe_rows), right.take(build_rows), None)
        if residual is not None:
            pairs = filter_table(pairs, residual)
        pieces.append(pairs.select(list(out_ids)))
    if not pieces:
        empty = _combine(left.slice(0, 0), right.slice(0, 0), None)
        return empty.select(list(out_ids))
    return pa.concat_tables(pieces) if len(pieces) > 1 else pieces[0]


# ---- key filters: the probe rows whose key the build has ------------------------------------

# a key filter is kept when the build's distinct keys fill at most this share of their range
# (a denser set filters no better than the range the scan's dynamic filter already checks)
KEY_FILTER_MAX_SHARE = 0.5
@dataclass
class KeyFilter:
    """The distinct values of a hash join build's integer key `position` (of the join's key
    pairs): bit k of `bits` (little-endian bytes) is set when lo + k is one. A probe row whose
    key has no bit cannot match and is dropped before the hash join (TPC-H Q9: lineitem
    against the 5% of part keys the name filter keeps)."""

    position: int
    lo: int
    span: int
    bits: np.ndarray


def build_key_filter(table: pa.Table, keys: tuple[str, ...]) -> KeyFilter | None:
    """The KeyFilter of the build `table` on the key (of `keys`) whose distinct values fill
    the smallest share of their range, or None when no integer key fills at most
    KEY_FILTER_MAX_SHARE of its range (or spans more than DENSE_MAX_SLOTS values). One byte
    per value of the range marks the keys (no sort), then packs to bits. (Builds of every
    size: TPC-H SF1's joins took as much CPU with a filter on their small builds, 446 to
    31k rows, as without; SF10 Q5's 20k-supplier filter took its peak RSS 473 -> 446 MiB.)"""
    best = None
    for i, key in enumerate(keys):
        found = _int64_keys(table, key)
        if found is None:
            continue
        values = found[1]
        lo, hi = int(values.min()), int(values.max())
        span = hi - lo + 1
        if span > DENSE_MAX_SLOTS:
            continue
        marks = np.zeros(span, dtype=np.uint8)
        for s, e in _chunks(len(values)):
            marks[values[s:e] - lo] = 1
        share = np.count_nonzero(marks) / span
        if share <= KEY_FILTER_MAX_SHARE and (best is None or share < best[0]):
            best = (share, KeyFilter(i, lo, span, np.packbits(marks, bitorder="little")))
        del marks
    return None if best is None else best[1]


def filter_by_keys(table: pa.Table, key_filter: KeyFilter | None, keys: tuple[str, ...]) -> pa.Table:
    """The rows of the probe `table` whose key `keys[key_filter.position]` is among the
    build's (NULL keys are not); the table itself without a filter, or when the key is not
    an integer column."""
    if key_filter is None or table.num_rows == 0:
        return table
    col = table.column(keys[key_filter.position])
    if not pa.types.is_integer(col.type):
        return table
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    parts = [_members(c, key_filter) for c in chunks]
    keep = parts[0] if len(parts) == 1 else np.concatenate(parts)
    return _keep_rows(table, keep)


def _members(arr: pa.Array, kf: KeyFilter) -> np.ndarray:
    """Whether each key of an integer array has its bit set (NULL: no). The keys are read
    from the values buffer, whatever NULL slots hold, and their offsets from lo taken in
    int64: an offset that wraps around (keys near the int64 ends, or UBIGINT past it, which
    equal no build key) can only land on a set bit by chance, keeping a row the join then
    drops; a key of the build always lands on its own bit."""
    if len(arr) == 0:
        return np.zeros(0, dtype=bool)
    values = np.frombuffer(arr.buffers()[1], dtype=arr.type.to_pandas_dtype(), count=len(arr),
                           offset=arr.offset * arr.type.byte_width)
    with np.errstate(over="ignore"):
        offsets = np.subtract(values, kf.lo, dtype=np.int64, casting="unsafe")
    inside = (offsets >= 0) & (offsets < kf.span)
    if arr.null_count:
        inside &= _valid(arr)
    offsets[~inside] = 0
    hit = (kf.bits.take(offsets >> 3) >> (offsets & 7).astype(np.uint8)) & np.uint8(1)
    return hit.view(bool) & inside


# a key pushdown's mask is applied when it drops at least this share of a read's rows (one
# that drops fewer leaves the rows to the join: a copy of nearly every row saves nothing)
PUSHDOWN_MIN_DROP = 0.1


def members_mask(table: pa.Table, members) -> np.ndarray | None:
    """Whether each row of a probe scan's read `table` has its key among the builds' (a dense
    index's key, or a key filter's at its position), as one mask over every pushdown
    (physical.planner._key_pushdown), NULL keys not; None when no pushdown applies (a build
    that became neither, its key column not an integer) or the mask would keep more than
    1 - PUSHDOWN_MIN_DROP of the rows."""
    mask = None
    for build, names in members:
        if isinstance(build, DenseIndex):
            name = names[0]
        elif isinstance(build, KeyFilter):
            name = names[build.position] if build.position < len(names) else None
        else:
            continue
        if name is None or name not in table.column_names:
            continue
        col = table.column(name)
        if not pa.types.is_integer(col.type):
            continue
        if isinstance(build, DenseIndex):
            pos = _positions(col, build)
            if pos is None:
                continue
            m = pos >= 0
        else:
            chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
            parts = [_members(c, build) for c in chunks]
            m = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts \
                else np.zeros(0, dtype=bool)
        mask = m if mask is None else mask & m
    if mask is None or np.count_nonzero(mask) > (1 - PUSHDOWN_MIN_DROP) * len(mask):
        return None
    return mask


# ---- key sets: semi and anti joins on integer keys ------------------------------------------

# a key set is a bitmap over the packed keys' whole range when that range is at most this many
# values (8 MiB); past it, the sorted distinct packed keys
KEY_SET_BITMAP_SLOTS = 1 << 26
# packed keys must stay below this (offsets and their products in int64, never wrapping)
KEY_SET_MAX_SPAN = 1 << 62


@dataclass
class KeySet:
    """The distinct key tuples of a broadcast semi or anti join's build, made once for every
    probe partition, where Acero hashed the whole build again in each (TPC-DS q78's anti join
    of 550k store sales against 290k returns on (ticket, item): built four times). Each
    integer key k is read as an int64 offset `value - lo[k]` in [0, spans[k]), the offsets
    packed into one int64 by `strides` (mixed radix); a probe row is in the set when its
    packed key is: a bit of `bits` (little-endian), or one of the sorted `packed` keys.
    `table` is the build itself, for a probe whose key types differ (hash-joined as before).
    """

    table: pa.Table
    types: tuple
    lo: tuple
    spans: tuple
    strides: tuple
    bits: np.ndarray | None = None
    packed: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        return self.table.nbytes + sum(a.nbytes for a in (self.bits, self.packed)
                                       if a is not None)


def _int64_values(col) -> tuple[np.ndarray, np.ndarray | None]:
    """An integer column's values as int64 (UBIGINT past int64 wrapped: the same bijection on
    both sides of a join, so equality holds) and where it is not NULL (None: nowhere NULL)."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    arr = pc.cast(arr, pa.int64(), safe=False)
    valid = pc.is_valid(arr).to_numpy(zero_copy_only=False) if arr.null_count else None
    if arr.null_count:
        arr = arr.fill_null(0)
    return arr.to_numpy(zero_copy_only=False), valid


def build_key_set(table: pa.Table, keys: tuple[str, ...]) -> KeySet | pa.Table:
    """The KeySet of the build `table` on `keys`, or the table itself when a key is not an
    integer or the keys' ranges multiplied reach KEY_SET_MAX_SPAN (the probes hash-join).
    Rows with a NULL key are left out: they match nothing."""
    types = tuple(table.column(k).type for k in keys)
    if not all(pa.types.is_integer(t) for t in types):
        return table
    columns, valid = [], None
    for k in keys:
        values, ok = _int64_values(table.column(k))
        columns.append(values)
        if ok is not None:
            valid = ok if valid is None else valid & ok
    if valid is not None:
        columns = [c[valid] for c in columns]
    if not len(columns[0]):  # (no key: the set is empty)
        return KeySet(table, types, (0,) * len(keys), (1,) * len(keys), (0,) * len(keys),
                      packed=np.empty(0, np.int64))
    lo = tuple(int(c.min()) for c in columns)
    spans = tuple(int(c.max()) - low + 1 for c, low in zip(columns, lo, strict=True))
    total = 1
    for s in spans:
        total *= s
    if total >= KEY_SET_MAX_SPAN:
        return table
    strides, stride = [], 1
    for s in reversed(spans):
        strides.append(stride)
        stride *= s
    strides = tuple(reversed(strides))
    packed = np.zeros(len(columns[0]), np.int64)
    for c, low, st in zip(columns, lo, strides, strict=True):
        packed += (c - low) * st
    if total <= KEY_SET_BITMAP_SLOTS:
        marks = np.zeros(total, np.uint8)
        marks[packed] = 1
        return KeySet(table, types, lo, spans, strides,
                      bits=np.packbits(marks, bitorder="little"))
    return KeySet(table, types, lo, spans, strides, packed=sorted_unique(packed))


def probe_key_set(left: pa.Table, ks: KeySet, kind: str, left_keys, out_ids) -> pa.Table | None:
    """The rows of the probe `left` whose keys the set has (kind semi) or does not (anti; a
    row with a NULL key is in no set), or None when a probe key's type differs from the
    build's (the caller hash-joins)."""
    if tuple(left.column(k).type for k in left_keys) != ks.types:
        return None
    n = left.num_rows
    inside = np.ones(n, dtype=bool)
    packed = np.zeros(n, np.int64)
    with np.errstate(over="ignore"):
        for k, low, span, stride in zip(left_keys, ks.lo, ks.spans, ks.strides, strict=True):
            values, ok = _int64_values(left.column(k))
            # wraps around only for keys outside [low, low + span): never into [0, span)
            offsets = np.subtract(values, low, dtype=np.int64)
            inside &= (offsets >= 0) & (offsets < span)
            if ok is not None:
                inside &= ok
            packed += np.where(inside, offsets, 0) * stride
    packed[~inside] = 0
    if ks.bits is not None:
        hit = ((ks.bits.take(packed >> 3) >> (packed & 7).astype(np.uint8)) & np.uint8(1))
        hit = hit.view(bool) & inside
    elif len(ks.packed):
        at = np.searchsorted(ks.packed, packed)
        np.minimum(at, len(ks.packed) - 1, out=at)
        hit = (ks.packed.take(at) == packed) & inside
    else:
        hit = np.zeros(n, dtype=bool)
    return _keep_rows(left, hit if kind == "semi" else ~hit).select(list(out_ids))
