"""SUMMARIZE's pieces: a HyperLogLog distinct-count sketch as a two-phase aggregate, and the
step that turns the one-row aggregate of every column's statistics into one row per column.

HyperLogLog (Flajolet et al., with linear counting for small cardinalities, as DuckDB's
approx_unique): 2^12 one-byte registers, about 1.6% standard error; up to 512 distinct
values a sketch holds their 64-bit hashes instead (HyperLogLog++'s sparse form), so small
counts are exact. A partition's sketch is built with numpy from pqe's value
hashes (kernels.hashing: equal values hash equally in every process), sketches merge by
register-wise maximum, so the estimate does not depend on how rows are partitioned.
"""

from __future__ import annotations

import datetime
import decimal
import math

import numpy as np
import pyarrow as pa

from .hashing import fmix, hash_column, sorted_unique

_P = 12
_M = 1 << _P
_REST = 64 - _P
_SALT = np.uint64(0x2545F4914F6CDD1D)  # decorrelates the sketch from partitioning's hash bits
_SPARSE = 512  # up to this many distinct values a sketch lists their hashes (exact count)


def _hashes(values: pa.Array) -> np.ndarray:
    with np.errstate(over="ignore"):
        return fmix(hash_column(values) ^ _SALT)


def _dense(h: np.ndarray, regs: np.ndarray | None = None) -> np.ndarray:
    """Registers updated with hashes `h`: the top bits pick a register, which keeps the
    largest position of the first 1 bit in the rest."""
    regs = np.zeros(_M, np.uint8) if regs is None else regs
    if len(h):
        idx = (h >> np.uint64(_REST)).astype(np.int64)
        rest = (h & np.uint64((1 << _REST) - 1)).astype(np.float64)  # 52 bits: exact
        rank = np.full(len(h), _REST + 1, np.uint8)
        nz = rest > 0
        rank[nz] = (_REST - np.floor(np.log2(rest[nz]))).astype(np.uint8)
        np.maximum.at(regs, idx, rank)
    return regs


def _pack(h: np.ndarray) -> bytes:
    """A sketch: the distinct hashes themselves while there are few (exact counts, as
    HyperLogLog++'s sparse form), registers past that."""
    h = sorted_unique(h)
    if len(h) <= _SPARSE:
        return b"S" + h.astype("<u8").tobytes()
    return b"D" + _dense(h).tobytes()


def _unpack(state: bytes) -> tuple[np.ndarray | None, np.ndarray | None]:
    if state[:1] == b"S":
        return np.frombuffer(state, "<u8", offset=1).astype(np.uint64), None
    return None, np.frombuffer(state, np.uint8, offset=1).copy()


def hll_update(values: pa.Array) -> bytes:
    """The sketch of some values (NULLs already left out)."""
    return _pack(_hashes(values))


def hll_merge(states: pa.Array) -> bytes:
    sparse, regs = [], None
    for s in states.drop_null().to_pylist():
        h, r = _unpack(s)
        if h is not None:
            sparse.append(h)
        else:
            regs = r if regs is None else np.maximum(regs, r, out=regs)
    h = sorted_unique(np.concatenate(sparse)) if sparse else np.zeros(0, np.uint64)
    if regs is None:
        return _pack(h)
    return b"D" + _dense(h, regs).tobytes()


def hll_finalize(states: pa.Array) -> pa.Array:
    out = []
    alpha = 0.7213 / (1 + 1.079 / _M)
    for s in states.to_pylist():
        if s is None:
            out.append(None)
            continue
        h, regs = _unpack(s)
        if h is not None:
            out.append(len(h))
            continue
        est = alpha * _M * _M / float(np.sum(np.ldexp(1.0, -regs.astype(np.int64))))
        zeros = int(np.count_nonzero(regs == 0))
        if est <= 2.5 * _M and zeros:
            est = _M * np.log(_M / zeros)  # linear counting
        out.append(round(float(est)))
    return pa.array(out, pa.int64())


# ---- quantiles -------------------------------------------------------------------------------

_K = 2048  # points a quantile sketch keeps; up to this many values it is exact


def _compress(v: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted points sorted by value, at most _K of them: past that, the values at _K
    evenly spaced cumulative weights, each carrying an equal share of the total."""
    order = np.argsort(v, kind="stable")
    v, w = v[order], w[order]
    if len(v) <= _K:
        return v, w
    cum = np.cumsum(w)
    total = cum[-1]
    idx = np.searchsorted(cum, (np.arange(_K) + 0.5) * (total / _K), side="left")
    return v[np.minimum(idx, len(v) - 1)], np.full(_K, total / _K)


def _encode(v: np.ndarray, w: np.ndarray) -> bytes:
    return v.astype("<f8").tobytes() + w.astype("<f8").tobytes()


def _decode(state: bytes) -> tuple[np.ndarray, np.ndarray]:
    both = np.frombuffer(state, "<f8")
    n = len(both) // 2
    return both[:n], both[n:]


def _as_numbers(values: pa.Array) -> np.ndarray:
    t = values.type
    if pa.types.is_date(t):
        values = values.cast(pa.int32())
    x = values.cast(pa.float64()).to_numpy(zero_copy_only=False)
    return x[~np.isnan(x)]


def quantile_update(values: pa.Array) -> bytes:
    """A quantile sketch of some values (NULLs already left out; NaN too)."""
    x = _as_numbers(values)
    return _encode(*_compress(x, np.ones(len(x))))


def quantile_merge(states: pa.Array) -> bytes:
    parts = [_decode(s) for s in states.drop_null().to_pylist()]
    if not parts:
        return _encode(np.zeros(0), np.zeros(0))
    return _encode(*_compress(np.concatenate([v for v, _ in parts]),
                              np.concatenate([w for _, w in parts])))


class QuantileText:
    """finalize: each sketch's 25th, 50th and 75th percentiles, continuous as pqe's
    quantile_cont and median (and DuckDB's SUMMARIZE) give them: the value at position
    q * (n - 1) of the sorted values, interpolated between its two neighbours (exact for up
    to _K values; past that each point stands at the middle of the weight it carries). The
    first value whose weight reached q was a discrete quantile: for 1, 2, 4, 4 it gave
    q50 = 2 where median() gives 3. Written as the column's type writes values (an integer
    rounded half away from zero, a date floored to its day, a DOUBLE or REAL as CAST(x AS
    VARCHAR) writes it, -0.0 included), tab-separated for the pivot."""

    QS = (0.25, 0.5, 0.75)

    def __init__(self, kind: str, scale: int = 0):
        self.kind = kind
        self.scale = scale

    def __repr__(self) -> str:
        return f"QuantileText({self.kind!r}, {self.scale})"

    def _text(self, x: float) -> str:
        if self.kind == "integer":
            return str(decimal.Decimal(x).quantize(decimal.Decimal(1),
                                                   rounding=decimal.ROUND_HALF_UP))
        if self.kind == "decimal":
            q = decimal.Decimal(1).scaleb(-self.scale)
            return str(decimal.Decimal(x).quantize(q, rounding=decimal.ROUND_HALF_UP))
        if self.kind == "date":
            return (datetime.date(1970, 1, 1) + datetime.timedelta(days=math.floor(x))).isoformat()
        from .udfs import float_text  # (the text CAST(x AS VARCHAR) writes)

        t = pa.float32() if self.kind == "real" else pa.float64()
        return float_text(None, pa.array([x], pa.float64()).cast(t))[0].as_py()

    def __call__(self, states: pa.Array) -> pa.Array:
        out = []
        for s in states.to_pylist():  # (one sketch per summarized column)
            v, w = _decode(s) if s is not None else (np.zeros(0), np.zeros(0))
            if not len(v):
                out.append(None)
                continue
            cum = np.cumsum(w)
            at = cum - (w + 1) / 2  # each point's position (0 .. n-1 when every weight is 1)
            out.append("\t".join(self._text(_lerp_at(at, v, q * (cum[-1] - 1)))
                                  for q in self.QS))
        return pa.array(out, pa.string())


def _lerp_at(at: np.ndarray, v: np.ndarray, h: float) -> float:
    """The value at position `h` between the points (`at` ascending), as quantile_cont
    interpolates: lo * (1 - d) + hi * d, or lo itself when the two are equal (-0.0 stays
    -0.0)."""
    i = int(np.searchsorted(at, h, side="right")) - 1
    if i < 0:
        return float(v[0])
    if i >= len(v) - 1:
        return float(v[-1])
    lo, hi = float(v[i]), float(v[i + 1])
    d = (h - at[i]) / (at[i + 1] - at[i])
    return lo if lo == hi or d == 0 else lo * (1.0 - d) + hi * d


class Pivot:
    """The one-row table of per-column statistics -> one row per column, DuckDB's SUMMARIZE
    shape. `columns` holds, per summarized column, its name, SQL type, and the input columns
    of its min, max, approx_unique, avg, std, quantiles and count (None where the statistic
    does not apply to the type); `rows` is the input column of count(*)."""

    TYPES = (pa.string(), pa.string(), pa.string(), pa.string(), pa.int64(), pa.string(),
             pa.string(), pa.string(), pa.string(), pa.string(), pa.int64(),
             pa.decimal128(9, 2))

    def __init__(self, columns: tuple, rows: str, out_names: tuple[str, ...]):
        self.columns = columns
        self.rows = rows
        self.out_names = out_names

    def __repr__(self) -> str:
        return f"Pivot({self.columns!r}, {self.rows!r})"

    def __call__(self, t: pa.Table) -> pa.Table:
        row = t.slice(0, 1).to_pylist()[0] if t.num_rows else {}
        total = row.get(self.rows) or 0
        out: dict[str, list] = {n: [] for n in self.out_names}
        for name, type_name, lo, hi, uniq, avg, std, quant, count in self.columns:
            qs = row.get(quant) if quant is not None else None
            values = [name, type_name, *(row.get(c) if c is not None else None
                                         for c in (lo, hi, uniq, avg, std)),
                      *(qs.split("\t") if qs is not None else (None, None, None)), total,
                      _null_percentage(total, row.get(count))]
            for n, v in zip(self.out_names, values, strict=True):
                out[n].append(v)
        return pa.table({n: pa.array(out[n], ty) for n, ty in zip(self.out_names, self.TYPES,
                                                                   strict=True)})


def _null_percentage(total: int, non_null: int | None) -> decimal.Decimal | None:
    if not total:
        return None
    with decimal.localcontext() as c:
        c.prec = 40
        exact = decimal.Decimal(100 * (total - (non_null or 0))) / decimal.Decimal(total)
    return exact.quantize(decimal.Decimal("0.01"), rounding=decimal.ROUND_HALF_UP)
