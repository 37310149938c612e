"""Partition kernels: hash split for exchanges, concatenation, sort, top-N, limit, values."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import types as T
from ..errors import ExecutionError
from . import hashing


def canonical_floats(col):
    """Float key values as hashed and matched: -0.0 as 0.0 (x + 0.0) and every NaN as one NaN.
    SQL (and DuckDB's GROUP BY, joins, IN) puts -0.0 with 0.0 and NaN with NaN, while Arrow's
    hash kernels compare bits. Other types are returned unchanged. Only copies made for
    hashing and matching are canonical: the values a query returns are left as they are."""
    if not T.is_floating(col.type):
        return col
    nan = pa.scalar(float("nan"), col.type)
    return pc.if_else(pc.is_nan(col), nan, pc.add(col, pa.scalar(0.0, col.type)))


_SHIFT = pa.scalar(32, pa.uint64())


def combination_codes(columns, limit: int | None = None) -> np.ndarray | None:
    """Each row's combination of values of `columns` (arrays or chunked arrays of one length)
    as a dense code 0..k-1, NULL a value and values equal as Arrow's dictionary encoding
    finds them; None when the combinations number more than `limit`."""
    codes = None
    for col in columns:
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        enc = col.dictionary_encode(null_encoding="encode")
        idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        codes = idx if codes is None else codes * max(1, len(enc.dictionary)) + idx
        codes = np.unique(codes, return_inverse=True)[1].astype(np.int64).reshape(-1)
        if limit is not None and codes.max(initial=-1) + 1 > limit:
            return None
    return codes


def hash_key_floats(col):
    """A float key as Acero hashes it for grouping and joining: canonical (canonical_floats),
    and a DOUBLE then as its 64 bits with the high half folded into the low (bits ^ (bits >>
    32), a bijection, so equal keys stay equal and different ones different). Acero's hash of
    8-byte keys that differ only in their high bits (doubles holding whole numbers, halves,
    prices: 1.0 and 2.0 share their low 44 bits) puts them in few buckets: GROUP BY a DOUBLE
    of 1,000 such values took 0.87 s a 1.25M-row partition (as folded bits 6 ms), a hash
    join of 1.25M against 100,000 of them 5.8 s (0.023 s). `unfold` gives the double
    back. Other types are returned unchanged (FLOAT's 4 bytes hash well)."""
    col = canonical_floats(col)
    return fold_wide(col) if pa.types.is_float64(col.type) else col


def unfold(col, dtype: pa.DataType):
    """The values of type `dtype` whose folded bits (fold_wide, hash_key_floats) `col`
    holds: the fold undoes itself."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return pc.bit_wise_xor(col, pc.shift_right(col, _SHIFT)).view(dtype)


def wide_integer(t: pa.DataType) -> bool:
    """An 8-byte integer-like key type (BIGINT, UBIGINT, timestamps, durations): one that
    `fold_wide` may fold."""
    return ((pa.types.is_integer(t) and t.bit_width == 64) or pa.types.is_timestamp(t)
            or pa.types.is_duration(t) or pa.types.is_date64(t) or pa.types.is_time64(t))


FOLD_SAMPLE = 256


def low_bits_repeat(col) -> bool:
    """Whether the distinct values of an 8-byte integer key (FOLD_SAMPLE evenly spaced values
    of its largest chunk, NULL slots' bits included) share their low 32 bits: ids made of a
    timestamp shifted past bit 32 with a constant machine and sequence below it (a
    Snowflake id of sequence 0), or multiples of 2^33 and more. Acero hashes such keys into
    few buckets, as it does the doubles of hash_key_floats: 500,000 distinct k << 40
    grouped in 4.1 s, not 3 ms. 30-60 us a call (a strided view, no copy; the 22 TPC-H
    queries ask 348 times, 0.05 s of their 3.3 s, and never fold)."""
    if len(col) < 2 or not wide_integer(col.type):
        return False
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    c = max(chunks, key=len)
    values = np.frombuffer(c.buffers()[1], dtype=np.uint64, count=len(c), offset=c.offset * 8)
    bits = values[::max(1, len(c) // FOLD_SAMPLE)]
    distinct = len(np.unique(bits))
    return 2 * len(np.unique(bits & np.uint64(0xFFFFFFFF))) < distinct


def fold_wide(col):
    """An 8-byte key's bits with the high half folded into the low, as uint64 (bits ^ (bits
    >> 32): a bijection; `unfold(folded, type)` gives the key back)."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    bits = col.view(pa.uint64())
    return pc.bit_wise_xor(bits, pc.shift_right(bits, _SHIFT))


def decoded(table: pa.Table, ids) -> pa.Table:
    """`table` with its dictionary-encoded columns among `ids` decoded to their values (an
    aggregate's encoded group keys, a join's encoded probe columns: only their output rows)."""
    for cid in ids:
        i = table.schema.get_field_index(cid)
        if i >= 0 and pa.types.is_dictionary(table.schema.field(i).type):
            col = table.column(i)
            table = table.set_column(i, cid, pc.cast(col, col.type.value_type))
    return table


def unify_dictionaries(table: pa.Table) -> pa.Table:
    """One dictionary per dictionary-encoded column (Acero needs it). The indices under NULL
    slots are set to 0 first: Acero's aggregate leaves garbage there (its NULL group's key),
    and Arrow's unification reads them and crashed the process (pyarrow 26)."""
    if not any(pa.types.is_dictionary(t) for t in table.schema.types):
        return table
    for i, field in enumerate(table.schema):
        if not pa.types.is_dictionary(field.type):
            continue
        col = table.column(i)
        if col.null_count and any(c.null_count for c in col.chunks):
            table = table.set_column(i, field, pa.chunked_array(
                [_zeroed_null_indices(c) for c in col.chunks], field.type))
    return table.unify_dictionaries()


def dictionary_codes(table: pa.Table, keep=()) -> tuple[pa.Table, dict]:
    """`table` (its dictionaries unified) with each dictionary-encoded column not in `keep`
    replaced by its indices, and {column: (dictionary, type)} to put them back
    (with_dictionaries). Acero's hash join carries a dictionary column 4-5x as slowly as its
    int32 indices (TPC-H SF10 Q12: 3.75M order priorities a partition, 0.118 against 0.026 s
    with the keys alone at 0.024)."""
    dicts = {}
    for i, field in enumerate(table.schema):
        if not pa.types.is_dictionary(field.type) or field.name in keep:
            continue
        col = table.column(i)
        dictionary = col.chunk(0).dictionary if col.num_chunks else \
            pa.array([], field.type.value_type)
        dicts[field.name] = (dictionary, field.type)
        codes = pa.chunked_array([c.indices for c in col.chunks], field.type.index_type)
        table = table.set_column(i, pa.field(field.name, field.type.index_type,
                                             field.nullable), codes)
    return table, dicts


def with_dictionaries(table: pa.Table, dicts: dict) -> pa.Table:
    """The columns dictionary_codes turned into indices, dictionary-encoded again."""
    for name, (dictionary, dtype) in dicts.items():
        i = table.schema.get_field_index(name)
        if i < 0:
            continue
        col = table.column(i)
        table = table.set_column(i, pa.field(name, dtype, table.schema.field(i).nullable),
                                 pa.chunked_array([pa.DictionaryArray.from_arrays(c, dictionary)
                                                   for c in col.chunks], dtype))
    return table


def _zeroed_null_indices(arr: pa.DictionaryArray) -> pa.DictionaryArray:
    if not arr.null_count:
        return arr
    idx = pa.array(pc.fill_null(arr.indices, 0).to_numpy(zero_copy_only=False),
                   arr.indices.type, mask=arr.is_null().to_numpy(zero_copy_only=False))
    return pa.DictionaryArray.from_arrays(idx, arr.dictionary)


def hash_buckets(table: pa.Table, keys: tuple[str, ...], n: int) -> np.ndarray:
    """The partition (0..n-1) of each row by its key columns (kernels.hashing: every byte of
    every key; equal values, equal buckets, however each side's arrays are encoded)."""
    return hashing.buckets(hashing.hash_columns(table, keys), n)


def hash_split(table: pa.Table, keys: tuple[str, ...], n: int) -> list[pa.Table]:
    """Rows of `table` in n tables by hash of the key columns."""
    if n == 1:
        return [table]
    if table.num_rows == 0:
        return [table] * n
    buckets = hash_buckets(table, keys, n)
    if n <= SPLIT_BY_BATCH and any(c.num_chunks > 1 for c in table.columns):
        # batch by batch: Arrow's take of the whole chunked table concatenated it first (a
        # copy of the partition; 700k store_sales rows of 7 columns in 9 chunks, 4 ways: 70
        # ms against 42). The pieces keep the rows' order; each output holds a chunk per
        # input batch, so only for a few outputs
        pieces: list[list[pa.RecordBatch]] = [[] for _ in range(n)]
        start = 0
        for batch in table.to_batches():
            b = buckets[start:start + batch.num_rows]
            start += batch.num_rows
            counts = np.bincount(b, minlength=n)
            taken = batch.take(pa.array(np.argsort(b, kind="stable")))
            at = 0
            for j, c in enumerate(counts):
                if c:
                    pieces[j].append(taken.slice(at, int(c)))
                at += int(c)
        return [pa.Table.from_batches(p, schema=table.schema) for p in pieces]
    order = np.argsort(buckets, kind="stable")  # radix sort for small integer types
    counts = np.bincount(buckets, minlength=n)
    ordered = table.take(pa.array(order))
    out, start = [], 0
    for c in counts:
        out.append(ordered.slice(start, int(c)))
        start += int(c)
    return out


SPLIT_BY_BATCH = 32  # hash_split of a chunked table into at most this many parts: per batch


def concat(tables: list[pa.Table]) -> pa.Table:
    """Concatenate partition tables (same columns; nullability differences are ignored)."""
    tables = [t for t in tables if t is not None]
    if len(tables) == 1:
        return tables[0]
    first = tables[0].schema
    schema = pa.schema([pa.field(f.name, f.type) for f in first])
    fixed = []
    for t in tables:
        if t.schema != schema:
            if [f.type for f in t.schema] != list(schema.types):
                try:
                    t = t.cast(schema)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise ExecutionError(f"partitions disagree on types: {e}") from e
            else:
                t = pa.Table.from_arrays(t.columns, schema=schema)
        fixed.append(t)
    return pa.concat_tables(fixed)


def sort_keys_with_nan(table: pa.Table, keys) -> tuple[pa.Table, list[tuple[str, str, str]]]:
    """Arrow sort keys for (id, ascending, nulls_first) keys, NaN ordered as PostgreSQL does:
    above every number, infinity included, in both directions (ASC: last before NULLS LAST;
    DESC: first after NULLS FIRST). Arrow keeps NaN next to the NULLs instead, which is
    wrong for ASC NULLS FIRST and DESC NULLS LAST: there an is-NaN key (NULL for NULL) goes
    first, on a copy of the table. -0.0 and 0.0 are equal (ties). A key repeated (ORDER BY
    d NULLS FIRST, d; PARTITION BY d ORDER BY d) is left out after its first place: the rows
    it would order are equal there (its NaN column was added twice: "Multiple matches")."""
    out = []
    seen = set()
    for k, asc, nulls_first in keys:
        if k in seen:
            continue
        seen.add(k)
        order = "ascending" if asc else "descending"
        placement = "at_start" if nulls_first else "at_end"
        col = table.column(k)
        if T.is_floating(col.type) and asc == nulls_first:
            flag = pc.is_nan(col)
            if pc.any(flag).as_py():
                name = f"{k}\x00nan"
                table = table.append_column(name, flag)
                out.append((name, order, placement))
        out.append((k, order, placement))
    return table, out


def sort_indices(table: pa.Table, keys) -> pa.Array:
    """Indices that sort `table` by (id, ascending, nulls_first) keys (sort_keys_with_nan).
    Large inputs sort on cheaper stand-ins of the same order (_sort_form)."""
    keyed, sort_keys = sort_keys_with_nan(table, keys)
    if keyed.num_rows >= SORT_FORM_ROWS:
        names = keyed.column_names
        cols = list(keyed.columns)
        for k, _, _ in sort_keys:
            i = names.index(k)
            cols[i] = _sort_form(cols[i])
        keyed = pa.Table.from_arrays(cols, names=names)
    return pc.sort_indices(keyed, sort_keys=sort_keys)


SORT_FORM_ROWS = 4096


def _sort_form(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A key column with the same order and the same NULLs that Arrow sorts faster: a
    DECIMAL128 whose unscaled values all fit 64 bits, as those integers (comparing 16-byte
    decimals took 70 ms of sorting 300k rows by a category and a sum, 54 ms as int64; TPC-DS
    Q67's rank() over 505k rows: 0.26 -> 0.18 s of operator time). (Text as its rank among
    few distinct values sorted faster still, but encoding it cost as much in other windows.)"""
    if not pa.types.is_decimal128(col.type):
        return col
    for c in col.chunks:
        if len(c) == 0:
            continue
        if c.buffers()[1] is None:
            return col
        words = np.frombuffer(c.buffers()[1], dtype=np.int64)[2 * c.offset:2 * (c.offset + len(c))]
        if not np.array_equal(words[1::2], words[0::2] >> 63):
            return col  # some value needs more than 64 bits
    # (imported here: decimals imports the expression compiler, which imports this module)
    from .decimals import to_unscaled

    return to_unscaled(col)


def take_rows(data, indices):
    """`data.take(indices)` (a Table or a ChunkedArray) without Arrow's concatenation of each
    chunked column first when the indices are few: a top-N's 100 rows of a 1.5M-row
    partition in 14 chunks took 13 ms, a copy of the partition, and take nothing from an
    array of one chunk. Few indices (a sixteenth of the rows or fewer) are taken chunk by
    chunk, in chunk order, and put back in their own order."""
    idx = indices.to_numpy(zero_copy_only=False) \
        if isinstance(indices, (pa.Array, pa.ChunkedArray)) else np.asarray(indices)
    n = len(data)
    if isinstance(data, pa.Table):
        columns = data.columns
    else:
        columns = [data]
    if len(idx) * 16 > n or all(c.num_chunks <= 1 for c in columns) \
            or idx.dtype.kind not in "iu" or (len(idx) and (idx.min() < 0 or idx.max() >= n)):
        return data.take(indices)  # (NULL or out-of-range indices: Arrow's answer or error)
    out = [_take_chunked(c, idx) for c in columns]
    if isinstance(data, pa.Table):
        return pa.Table.from_arrays(out, schema=data.schema)
    return out[0]


def _take_chunked(col: pa.ChunkedArray, idx: np.ndarray):
    if col.num_chunks <= 1:
        return col.take(pa.array(idx, pa.int64()))
    lengths = np.array([len(c) for c in col.chunks], np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    which = np.searchsorted(starts, idx, side="right") - 1
    order = np.argsort(which, kind="stable")
    local = (idx - starts[which])[order]
    bounds = np.searchsorted(which[order], np.arange(col.num_chunks + 1))
    pieces = [col.chunk(k).take(pa.array(local[bounds[k]:bounds[k + 1]], pa.int64()))
              for k in range(col.num_chunks) if bounds[k + 1] > bounds[k]]
    taken = pa.concat_arrays(pieces) if pieces else pa.array([], col.type)
    back = np.empty(len(idx), np.int64)
    back[order] = np.arange(len(idx))
    return pa.chunked_array([taken.take(pa.array(back))], col.type)


def _has_nan(table: pa.Table, keys) -> bool:
    return any(T.is_floating(table.column(k).type) and pc.any(pc.is_nan(table.column(k))).as_py()
               for k, _, _ in keys)


def sort(table: pa.Table, keys, fetch: int | None) -> pa.Table:
    """keys: (id, ascending, nulls_first) triples; `fetch` keeps only the first rows (top-N),
    also of inputs too small to need sorting (LIMIT 0 of one row is no row). NaN sorts above
    every number (sort_keys_with_nan)."""
    if table.num_rows <= 1 or fetch == 0:
        return table if fetch is None else table.slice(0, fetch)
    if fetch is not None and fetch < table.num_rows and not any(
            table.column(k).null_count for k, _, _ in keys) and fetch * 4 < table.num_rows \
            and not _has_nan(table, keys):  # (select_k puts NaN last in both directions)
        sort_keys = [(k, "ascending" if asc else "descending", "at_end") for k, asc, _ in keys]
        top = take_rows(table, pc.select_k_unstable(table, fetch,
                                                    [(k, o) for k, o, _ in sort_keys]))
        return top.take(sort_indices(top, keys))
    idx = sort_indices(table, keys)
    if fetch is not None:
        idx = idx.slice(0, fetch)
    return take_rows(table, idx)


def limit(table: pa.Table, fetch: int | None, offset: int) -> pa.Table:
    """Rows offset.. of the table, at most `fetch` of them; the bounds clamped to its rows
    (Table.slice takes C longs: LIMIT 9223372036854775807 OFFSET 5 reached it as 2^63 + 4)."""
    n = table.num_rows
    offset = min(offset, n)
    if fetch is None:
        return table.slice(offset)
    return table.slice(offset, min(fetch, n))


def single_row(table: pa.Table) -> pa.Table:
    if table.num_rows > 1:
        raise ExecutionError("more than one row returned by a subquery used as an expression")
    return table


def values(rows, fields) -> pa.Table:
    """The rows of a VALUES list (literals, or constant expressions evaluated in Arrow, whose
    values may have no Python form: a DATE past year 9999)."""
    from .expressions import evaluate_array
    from ..plan.expr import Literal

    cols = []
    for j, f in enumerate(fields):
        t = f.dtype if not T.is_null(f.dtype) else pa.null()
        if all(isinstance(r[j], Literal) for r in rows):
            cols.append(pa.array([r[j].value for r in rows], type=t))
            continue
        cols.append(pa.concat_arrays([
            pa.array([r[j].value], type=t) if isinstance(r[j], Literal)
            else evaluate_array(r[j]).cast(t) for r in rows]))
    return pa.Table.from_arrays(cols, names=[f.id for f in fields])
