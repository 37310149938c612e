"""Partitioning hashes of key columns: every byte of every value, vectorized with numpy.

The two sides of a join are hashed independently (other tasks, other processes, other
machines) and must co-partition, so a value's hash depends on the value only: not on chunking,
dictionary encoding, string / large_string / string_view, int32 / int64, float32 / float64, or
decimal scale; -0.0 hashes as 0.0 and every NaN as one NaN. Deterministic everywhere (fixed
constants, little-endian words; never Python's salted hash()). NULL has its own hash.

Text and binary are read as 8-byte little-endian words straight from the Arrow data buffer
(an unaligned strided view: no copy), each word mixed with its position in the value, summed
per value, then the tail bytes and the length are mixed in (splitmix64's finalizer). The old
hash read only the length and first and last 8 bytes: keys differing in the middle
(https://x.io/000123/index.html) all landed in one partition.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import types as T
from ..errors import ExecutionError

_K1 = np.uint64(0xBF58476D1CE4E5B9)
_K2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_WORD = np.uint64(0xC2B2AE3D27D4EB4F)  # position tweak of text words
_LEN = np.uint64(0x165667B19E3779F9)
NULL_HASH = np.uint64(0x5851F42D4C957F2D)
_S30, _S27, _S31, _S32 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(32)
_BLOCK = 1 << 20  # rows of text hashed at a time (bounds the per-word temporaries)


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-d array, sorted: `np.unique(a)`, by a sort and a compare.
    numpy 2.3+'s unique hashes instead (when no index, inverse or count is asked for):
    300,000 random int64s took 0.37 s against 5 ms sorted."""
    s = np.sort(a)
    if len(s) < 2:
        return s
    return s[np.concatenate(([True], s[1:] != s[:-1]))]


def fmix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, in place: every output bit depends on every input bit."""
    with np.errstate(over="ignore"):
        h ^= h >> _S30
        h *= _K1
        h ^= h >> _S27
        h *= _K2
        h ^= h >> _S31
    return h


def hash_column(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """One uint64 per value (see the module docstring for what equal hashes mean)."""
    return _per_value(col, _hash_array)


def _per_value(col: pa.Array | pa.ChunkedArray, leaf) -> np.ndarray:
    """`leaf` (one plain array -> one uint64 per value, a fresh array) over every chunk, and
    over a dictionary's values gathered through its indices (NULL indices NULL_HASH): equal
    for a value whatever its chunking or encoding."""
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 1:
            return _per_value(col.chunk(0), leaf)
        if col.num_chunks == 0:
            return np.zeros(0, np.uint64)
        return np.concatenate([_per_value(c, leaf) for c in col.chunks])
    if pa.types.is_dictionary(col.type):
        values = _per_value(col.dictionary, leaf)
        idx = col.indices
        if idx.null_count:
            idx = pc.fill_null(idx, 0)
        h = values[idx.to_numpy(zero_copy_only=False)] if len(values) else np.zeros(len(col), np.uint64)
        return _with_nulls(h, col)
    return leaf(col)


def _hash_array(col: pa.Array) -> np.ndarray:
    t = col.type
    if pa.types.is_null(t):
        return np.full(len(col), NULL_HASH, np.uint64)
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        col = col.cast(pa.large_binary() if pa.types.is_binary_view(t) else pa.large_string())
        t = col.type
    if T.is_text(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        if _repetitive(col):
            # each distinct value hashed once and gathered through the indices (Arrow's hash
            # table finds them faster than the bytes are hashed): 172k rows of 19 to 968
            # distinct names 13-14 -> 3-4 ms; values that seldom repeat skip this (there it
            # doubled the time), which a sample decides
            return _per_value(pc.dictionary_encode(col), _hash_array)
        return _with_nulls(_hash_bytes(col), col)
    if pa.types.is_fixed_size_binary(t):
        return _with_nulls(_hash_fixed(col), col)
    return _with_nulls(fmix(_number_bits(col)), col)


def hash_columns(table: pa.Table, keys) -> np.ndarray:
    """Combined hash of several key columns (order matters, as for both sides of a join):
    one key's is hash_column's; several keys' components (a number's 64 bits unmixed,
    text's hash) are combined as a polynomial in _GOLDEN and mixed once. Mixing each number
    and each step cost 5 passes of 5 numpy operations for 3 integer keys, 18 ms per 500k
    rows, now 1 (TPC-DS Q78's exchanges hash 3 keys)."""
    if len(keys) == 1:
        return hash_column(table.column(keys[0]))
    h = None
    with np.errstate(over="ignore"):
        for k in keys:
            hk = _component(table.column(k))
            if h is None:
                h = hk
            else:
                h *= _GOLDEN
                h += hk
    return fmix(h) if h is not None else np.zeros(table.num_rows, np.uint64)


def _component(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A key column's part of a combined hash, a fresh array, equal for equal values in any
    representation (as hash_column's): numbers their 64 bits (_number_bits), NULL
    NULL_HASH, everything else (text, binary) hash_column's hash."""
    return _per_value(col, _component_array)


def _component_array(col: pa.Array) -> np.ndarray:
    if pa.types.is_null(col.type) or not T.is_fixed_width(col.type):
        return _hash_array(col)
    return _with_nulls(_number_bits(col), col)


def buckets(h: np.ndarray, n: int) -> np.ndarray:
    """Bucket of each hash in [0, n): the high 32 bits scaled (no division, uniform because
    the hash is fully mixed)."""
    with np.errstate(over="ignore"):
        b = ((h >> _S32) * np.uint64(n)) >> _S32
    return b.astype(np.uint16 if n < 65536 else np.uint32)


# ---- numbers -----------------------------------------------------------------------------------


def _number_bits(col: pa.Array) -> np.ndarray:
    """64 bits per value, equal for equal values across widths: integers (and dates, times,
    timestamps, booleans) as int64; floats and decimals as canonical float64."""
    t = col.type
    if pa.types.is_date64(t):
        col, t = pc.cast(col, pa.date32()), pa.date32()
    if T.is_decimal(t) or T.is_floating(t):
        # NULLs become NaN here and get NULL_HASH afterwards
        v = pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False)
        v = v + 0.0  # -0.0 -> 0.0, and a copy we may write to
        v[np.isnan(v)] = np.nan  # one NaN bit pattern
        return v.view(np.uint64)
    if pa.types.is_boolean(t):
        col = pc.cast(col, pa.uint8())
    elif pa.types.is_temporal(t):
        col = col.view(pa.int32() if t.bit_width == 32 else pa.int64())
    elif not pa.types.is_integer(t):
        raise ExecutionError(f"cannot hash values of type {t}")
    if col.null_count:
        col = pc.fill_null(col, 0)
    v = col.to_numpy(zero_copy_only=False)
    if v.dtype == np.uint64:
        return v.copy()
    return v.astype(np.int64).view(np.uint64)  # a fresh array: fmix works in place


DICTIONARY_MIN_ROWS = 8192  # text columns this long are sampled (_repetitive)
_SAMPLE = 2048


def _repetitive(col: pa.Array) -> bool:
    """Whether a sample of a long text column (values spread over it) has at most half as many
    distinct values as sampled ones."""
    n = len(col)
    if n < DICTIONARY_MIN_ROWS:
        return False
    sample = col.take(pa.array(np.arange(0, n, n // _SAMPLE, dtype=np.int64)[:_SAMPLE]))
    return len(pc.unique(sample)) * 2 <= len(sample)


def _with_nulls(h: np.ndarray, col: pa.Array) -> np.ndarray:
    if col.null_count:
        h[np.asarray(col.is_null().to_numpy(zero_copy_only=False))] = NULL_HASH
    return h


# ---- bytes ---------------------------------------------------------------------------------


def _hash_bytes(col: pa.Array) -> np.ndarray:
    n = len(col)
    bufs = col.buffers()
    width = np.int64 if pa.types.is_large_string(col.type) or pa.types.is_large_binary(col.type) \
        else np.int32
    offsets = np.frombuffer(bufs[1], dtype=width)[col.offset: col.offset + n + 1].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    out = np.empty(n, np.uint64)
    for lo in range(0, n, _BLOCK):
        hi = min(n, lo + _BLOCK)
        out[lo:hi] = _hash_ranges(data, offsets[lo:hi], offsets[lo + 1:hi + 1])
    return out


def _hash_fixed(col: pa.Array) -> np.ndarray:
    w = col.type.byte_width
    n = len(col)
    data = np.frombuffer(col.buffers()[1], dtype=np.uint8)
    starts = (np.arange(n, dtype=np.int64) + col.offset) * w
    return _hash_ranges(data, starts, starts + w)


def _words(data: np.ndarray) -> np.ndarray:
    """Every 8-byte little-endian word starting at each byte offset (a view, no copy)."""
    return np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))


def _word_tweak(j: int) -> np.uint64:
    return np.uint64(((j + 1) * 0xC2B2AE3D27D4EB4F) & 0xFFFFFFFFFFFFFFFF)


def _sum_words(words: np.ndarray, start: np.ndarray, nwords: np.ndarray) -> np.ndarray:
    """Per value, the sum of its full 8-byte words, each mixed with its word number. Goes
    word number by word number (value lengths bound the passes, not rows) over the values
    still that long; a few very long values left over are finished in one flat pass."""
    n = len(start)
    acc = np.zeros(n, np.uint64)
    active: np.ndarray | None = None  # None: every row (slices, no fancy indexing)
    pos = start.copy()
    left = nwords
    j = 0
    with np.errstate(over="ignore"):
        while True:
            live = left > j
            if active is None and live.all():
                w = words[pos]
                w ^= _word_tweak(j)
                acc += fmix(w)
            else:
                if active is None:
                    active = np.flatnonzero(live)
                    pos, left = pos[active], left[active]
                else:
                    active, pos, left = active[live], pos[live], left[live]
                if not active.size:
                    return acc
                if active.size < 64 and int(left.max()) - j > 64:
                    acc[active] += _sum_words_flat(words, pos, left - j, j)
                    return acc
                w = words[pos]
                w ^= _word_tweak(j)
                acc[active] += fmix(w)
            pos += 8
            j += 1


def _sum_words_flat(words: np.ndarray, start: np.ndarray, nwords: np.ndarray, j0: int) -> np.ndarray:
    """`_sum_words` for values whose words are numbered from j0, all words in one pass."""
    total = int(nwords.sum())
    first = np.cumsum(nwords) - nwords  # flat index of each value's first word
    within = np.arange(total, dtype=np.int64) - np.repeat(first, nwords)
    w = words[np.repeat(start, nwords) + (within << 3)]
    with np.errstate(over="ignore"):
        tweak = (within + (j0 + 1)).astype(np.uint64) * _WORD
        w ^= tweak
        fmix(w)
    acc = np.zeros(len(start), np.uint64)
    has = nwords > 0
    acc[has] = np.add.reduceat(w, first[has])
    return acc


def _hash_ranges(data: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Hash of data[start[i]:end[i]] for each i."""
    if len(data) < 8:  # tiny buffers: pad (a copy of at most 7 bytes)
        data = np.concatenate([data, np.zeros(8 - len(data), np.uint8)])
    words = _words(data)
    length = end - start
    acc = _sum_words(words, start, length >> 3)
    with np.errstate(over="ignore"):
        # the last length % 8 bytes: the word ending at `end`, shifted down
        rem = (length & 7).astype(np.uint64)
        tail_pos = end - 8
        tail = words[np.maximum(tail_pos, 0)]
        near = tail_pos < 0  # values ending in the buffer's first 8 bytes
        if near.any():
            small = np.zeros(16, np.uint8)
            k = min(8, len(data))
            small[8:8 + k] = data[:k]
            tail[near] = _words(small)[tail_pos[near] + 8]
        shift = (np.uint64(8) - rem) << np.uint64(3)
        tail = np.where(rem > 0, tail >> np.minimum(shift, np.uint64(63)), np.uint64(0))
        tail ^= length.astype(np.uint64) * _LEN
        fmix(tail)
        acc ^= tail
        return fmix(acc)
