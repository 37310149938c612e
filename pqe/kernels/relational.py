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
    order = np.argsort(buckets, kind="stable")  # radix sort for small integer types
    counts = np.bincount(buckets, minlength=n)
    ordered = table.take(pa.array(order))
    out, start = [], 0
    for c in counts:
        out.append(ordered.slice(start, int(c)))
        start += int(c)
    return out


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


def sort(table: pa.Table, keys, fetch: int | None) -> pa.Table:
    """keys: (id, ascending, nulls_first) triples; `fetch` keeps only the first rows (top-N),
    also of inputs too small to need sorting (LIMIT 0 of one row is no row)."""
    if table.num_rows <= 1 or fetch == 0:
        return table if fetch is None else table.slice(0, fetch)
    sort_keys = [(k, "ascending" if asc else "descending", "at_start" if nf else "at_end")
                 for k, asc, nf in keys]
    if fetch is not None and fetch < table.num_rows and not any(
            table.column(k).null_count for k, _, _ in keys) and fetch * 4 < table.num_rows:
        top = table.take(pc.select_k_unstable(table, fetch, [(k, o) for k, o, _ in sort_keys]))
        return top.take(pc.sort_indices(top, sort_keys=sort_keys))
    idx = pc.sort_indices(table, sort_keys=sort_keys)
    if fetch is not None:
        idx = idx.slice(0, fetch)
    return table.take(idx)


def limit(table: pa.Table, fetch: int | None, offset: int) -> pa.Table:
    if fetch is None:
        return table.slice(offset)
    return table.slice(offset, fetch)


def single_row(table: pa.Table) -> pa.Table:
    if table.num_rows > 1:
        raise ExecutionError("more than one row returned by a subquery used as an expression")
    return table


def values(rows, fields) -> pa.Table:
    from .expressions import evaluate_constant
    from ..plan.expr import Literal

    cols = []
    for j, f in enumerate(fields):
        vals = []
        for r in rows:
            e = r[j]
            if not isinstance(e, Literal):
                e = evaluate_constant(e)
            vals.append(e.value)
        t = f.dtype if not T.is_null(f.dtype) else pa.null()
        cols.append(pa.array(vals, type=t))
    return pa.Table.from_arrays(cols, names=[f.id for f in fields])
