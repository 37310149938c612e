"""Row sampling (TABLESAMPLE / USING SAMPLE), vectorized with numpy.

Every decision is a function of the seed and a row's position in the sampled input (its
global row number: the partition's offset plus the row's index in it), never of which
partition or worker holds the row, nor of a random generator's state: the same seed picks
the same rows on every run, partitioning and scheduler.

- bernoulli: row r is kept when u(seed, r) < fraction;
- system: the block of rows r // BLOCK_ROWS is kept when u(seed', block) < fraction (whole
  blocks, as DuckDB samples whole vectors: cheap, coarse on small inputs);
- reservoir: the `count` rows with the smallest keys k(seed, r), in their input order: each
  partition keeps its `count` smallest (`reservoir_candidates`), one task merges them
  (`reservoir_merge`). With a percentage, count = round-half-up(total * percent / 100).

u and k come from splitmix64 (a bijective 64-bit mixer): k is a uint64, u = k / 2^64.
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa

BLOCK_ROWS = 2048
KEY = "__sample_key"
POSITION = "__sample_position"
_GAMMA = 0x9E3779B97F4A7C15
_SYSTEM_SALT = 0x5D588B656C078965


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer over a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(27))
        x = x * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def keys(seed: int, positions: np.ndarray) -> np.ndarray:
    """A pseudo-random uint64 per position, determined by (seed, position) alone."""
    base = _mix(np.array([seed & ((1 << 64) - 1)], dtype=np.uint64))[0]
    with np.errstate(over="ignore"):
        x = positions.astype(np.uint64) * np.uint64(_GAMMA) + base
    return _mix(x)


def uniform(seed: int, positions: np.ndarray) -> np.ndarray:
    """Floats in [0, 1), one per position."""
    return (keys(seed, positions) >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def _positions(start: int, n: int) -> np.ndarray:
    return np.arange(start, start + n, dtype=np.int64)


def offsets(*counts: int) -> tuple[tuple[int, ...], int]:
    """Each partition's first global row number, and the total row count."""
    starts, total = [], 0
    for c in counts:
        starts.append(total)
        total += int(c)
    return tuple(starts), total


def row_count(table: pa.Table) -> int:
    return table.num_rows


def bernoulli(table: pa.Table, seed: int, start: int, percent: float) -> pa.Table:
    if percent >= 100 or table.num_rows == 0:
        return table
    keep = uniform(seed, _positions(start, table.num_rows)) < percent / 100.0
    return table.filter(pa.array(keep))


def system(table: pa.Table, seed: int, start: int, percent: float) -> pa.Table:
    if percent >= 100 or table.num_rows == 0:
        return table
    blocks = _positions(start, table.num_rows) // BLOCK_ROWS
    keep = uniform(seed ^ _SYSTEM_SALT, blocks) < percent / 100.0
    return table.filter(pa.array(keep))


def reservoir_count(unit: str, size: float, total: int) -> int:
    """How many rows a reservoir sample keeps: `size` rows, or size% of `total` rounded half
    up (DuckDB)."""
    if unit == "rows":
        return int(size)
    return int(math.floor(total * size / 100.0 + 0.5))


def reservoir_candidates(table: pa.Table, seed: int, start: int, count: int) -> pa.Table:
    """The partition's `count` rows with the smallest keys, with their keys and positions."""
    n = table.num_rows
    pos = _positions(start, n)
    k = keys(seed, pos)
    if count < n:
        idx = np.argpartition(k, count)[:count] if count > 0 else np.array([], dtype=np.int64)
        table, pos, k = table.take(pa.array(idx)), pos[idx], k[idx]
    return table.append_column(KEY, pa.array(k, pa.uint64())).append_column(
        POSITION, pa.array(pos, pa.int64()))


def reservoir_merge(candidates: list[pa.Table], count: int) -> pa.Table:
    """The `count` candidates with the smallest keys, in input order, without the helper
    columns."""
    table = pa.concat_tables(candidates) if len(candidates) > 1 else candidates[0]
    k = table.column(KEY).to_numpy()
    pos = table.column(POSITION).to_numpy()
    if count < table.num_rows:
        order = np.lexsort((pos, k))[:max(count, 0)]  # by key, then position (ties)
        chosen = order[np.argsort(pos[order], kind="stable")]
    else:
        chosen = np.argsort(pos, kind="stable")
    out = table.take(pa.array(chosen, pa.int64()))
    return out.drop_columns([KEY, POSITION])


def sample(table: pa.Table, method: str, unit: str, size: float, seed: int, start: int,
           total: int | None) -> pa.Table:
    """One partition's share: bernoulli / system rows, or reservoir candidates (of the
    count the whole input calls for; `total` may be None for a row count)."""
    if method == "bernoulli":
        return bernoulli(table, seed, start, size)
    if method == "system":
        return system(table, seed, start, size)
    count = reservoir_count(unit, size, total if total is not None else table.num_rows)
    return reservoir_candidates(table, seed, start, count)
