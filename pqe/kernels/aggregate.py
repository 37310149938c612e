"""Hash aggregation kernels (Acero `aggregate` node), in two phases.

Each aggregate states its partial state columns, how states combine, and how the final value
is computed: count -> count (combine: sum); sum -> sum (sum); avg -> sum + count (sums, then
divide); min/max -> min/max; stddev/variance -> count, sum, sum of squares. A partial table
has the group keys then the state columns; `final` accepts the concatenation of any number of
partial tables (and is itself a valid partial, so reductions can be trees).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.acero as ac
import pyarrow.compute as pc

from .. import types as T
from ..errors import ExecutionError, InternalError
from . import decimals
from .relational import canonical_floats

# fn -> list of (state suffix, partial kernel, final kernel)
_STATES = {
    "count_star": [("", "count_all", "sum")],
    "count": [("", "count", "sum")],
    "sum": [("", "sum", "sum")],
    "avg": [(".s", "sum", "sum"), (".c", "count", "sum")],
    "min": [("", "min", "min")],
    "max": [("", "max", "max")],
    "any_value": [("", "first", "first")],
    "bool_and": [("", "all", "all")],
    "bool_or": [("", "any", "any")],
    "stddev_samp": [(".s", "sum", "sum"), (".q", "sum_sq", "sum"), (".c", "count", "sum")],
    "stddev_pop": [(".s", "sum", "sum"), (".q", "sum_sq", "sum"), (".c", "count", "sum")],
    "var_samp": [(".s", "sum", "sum"), (".q", "sum_sq", "sum"), (".c", "count", "sum")],
    "var_pop": [(".s", "sum", "sum"), (".q", "sum_sq", "sum"), (".c", "count", "sum")],
}

_FLOAT_STATE = ("stddev_samp", "stddev_pop", "var_samp", "var_pop")


def _states(spec) -> list[tuple[str, str, str]]:
    if spec.fn == "any_value" and spec.arg_dtype is not None and T.is_decimal(spec.arg_dtype):
        return [("", "min", "min")]  # Arrow's hash_first has no decimal kernel; any value will do
    states = _STATES[spec.fn]
    if spec.fn == "sum" and spec.arg_dtype is not None and T.is_integer(spec.arg_dtype):
        # a float64 shadow sum detects int64 overflow (Arrow's integer sums wrap around)
        states = states + [(".ovf", "sum", "sum")]
    return states


def state_names(spec) -> list[str]:
    return [spec.out + suffix for suffix, _, _ in _states(spec)]


def _options(kernel: str):
    if kernel in ("count",):
        return pc.CountOptions(mode="only_valid")
    if kernel in ("sum", "min", "max", "all", "any"):
        return pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
    return None


def _run(table: pa.Table, keys: list[str], aggs: list[tuple]) -> pa.Table:
    """Group by `keys`, float keys canonical (relational.canonical_floats): -0.0 and 0.0 are
    one group, so are all NaNs; the group shows the canonical value (0.0, NaN).

    Dictionary-encoded keys (low-cardinality text a scan left encoded) are grouped by their
    indices after unifying the chunks' dictionaries, ~2x cheaper than hashing the strings;
    the output keys are decoded."""
    encoded = []
    for k in keys:
        col = table.column(k)
        if T.is_floating(col.type):
            table = table.set_column(table.schema.get_field_index(k), k, canonical_floats(col))
        elif pa.types.is_dictionary(col.type):
            encoded.append(k)
    if encoded:
        table = table.unify_dictionaries()
    decl = ac.Declaration.from_sequence([
        ac.Declaration("table_source", ac.TableSourceNodeOptions(table)),
        ac.Declaration("aggregate", ac.AggregateNodeOptions(aggs, keys=keys)),
    ])
    out = decl.to_table(use_threads=False)
    for k in encoded:
        i = out.schema.get_field_index(k)
        out = out.set_column(i, k, pc.cast(out.column(i), out.schema.field(i).type.value_type))
    return out


def _agg_entry(col, kernel: str, out: str, grouped: bool):
    name = ("hash_" + kernel) if grouped else kernel
    target = [] if kernel == "count_all" else col
    return (target, name, _options(kernel), out)


def _unscaled_inputs(table: pa.Table, specs) -> tuple[pa.Table, dict[str, pa.ChunkedArray]]:
    """Unscaled int64 versions of decimal arguments, by name, for sums (and counts, min, max
    of the same argument) that cannot overflow int64 here (rows x max|value| < 2^63).

    Arguments may arrive as unscaled int64 already (a fused projection computed them so);
    where the int64 form cannot serve every aggregate of the argument, the table gets the
    decimal128 column back."""
    out = {}
    n = table.num_rows
    args = {s.arg: s.arg_dtype for s in specs if s.arg is not None and T.is_decimal(s.arg_dtype)}
    for arg, dtype in args.items():
        col = table.column(arg)
        given = pa.types.is_integer(col.type)
        fns = {s.fn for s in specs if s.arg == arg}
        ints = None
        if given:
            ints = col
        elif fns & {"sum", "avg"} and decimals.fits_int64(dtype):
            ints = decimals.to_unscaled(col)
        if ints is not None:
            bound = pc.max(pc.abs(ints)).as_py() if n else 0
            if bound is None or bound * n < 2**63:
                out[arg] = ints
        if given and (arg not in out or fns - _UNSCALED_OK):
            i = table.schema.get_field_index(arg)
            table = table.set_column(i, arg, decimals.from_unscaled(col, dtype))
    return table, out


_UNSCALED_OK = {"sum", "avg", "count", "min", "max"}


def _sorted_segments(table: pa.Table, group: tuple[str, ...], specs,
                     unscaled: dict | None = None) -> pa.Table | None:
    """Partial states by reducing runs of equal keys with numpy, when the partition is sorted
    on its single integer or date group key (data clustered by the key, like lineitem by
    l_orderkey): ~15x cheaper than hashing. None when this does not apply."""
    if len(group) != 1 or table.num_rows < 2:
        return None
    key = table.column(group[0])
    kt = key.type
    if key.null_count or not (pa.types.is_integer(kt) or pa.types.is_date(kt)):
        return None
    for s in specs:
        if s.fn not in ("count_star", "count", "sum", "avg", "min", "max"):
            return None
        if s.arg_dtype is not None and not (T.is_integer(s.arg_dtype) or T.is_floating(s.arg_dtype)
                                            or decimals.fits_int64(s.arg_dtype)):
            return None
    k = np.asarray((key.combine_chunks() if isinstance(key, pa.ChunkedArray) else key)
                   .cast(pa.int64() if pa.types.is_integer(kt) else pa.int32())
                   .to_numpy(zero_copy_only=False))
    if not (k[1:] >= k[:-1]).all():
        return None
    n = len(k)
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    sizes = np.diff(np.r_[starts, n])
    cols = {group[0]: pa.array(k[starts]).cast(kt)}
    cache: dict = {}

    def values(s):
        if s.arg not in cache:
            col = table.column(s.arg)
            if unscaled and s.arg in unscaled:
                col = unscaled[s.arg]
            elif T.is_decimal(s.arg_dtype):
                col = decimals.to_unscaled(col)
            col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
            valid = (np.ones(n, bool) if not col.null_count
                     else pc.is_valid(col).to_numpy(zero_copy_only=False))
            cache[s.arg] = (col, valid)
        return cache[s.arg]

    for s in specs:
        names = state_names(s)
        types = state_types(s)
        if s.fn == "count_star":
            cols[names[0]] = pa.array(sizes, pa.int64())
            continue
        col, valid = values(s)
        counts = np.add.reduceat(valid.astype(np.int64), starts)
        if s.fn == "count":
            cols[names[0]] = pa.array(counts, pa.int64())
            continue
        has = counts > 0
        if s.fn in ("sum", "avg"):
            integral = pa.types.is_integer(col.type)
            v = col.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64 if integral else np.float64)
            if integral and n and np.abs(v).max() * n >= 2**63:
                return None  # might overflow int64: the hash path checks it
            total = np.add.reduceat(v, starts)
            if T.is_decimal(s.arg_dtype):
                arr = decimals.from_unscaled(pa.array(total), types[0])
                arr = pc.if_else(pa.array(has), arr, pa.scalar(None, types[0]))
            else:
                arr = pc.if_else(pa.array(has), pa.array(total), pa.scalar(None, pa.array(total).type))
            if arr.type != types[0]:
                arr = arr.cast(types[0])
            cols[names[0]] = arr
            if s.fn == "avg":
                cols[names[1]] = pa.array(counts, pa.int64())
            elif len(names) > 1:  # the overflow shadow of integer sums
                cols[names[1]] = pa.array(total.astype(np.float64))
            continue
        # min / max
        v = col.to_numpy(zero_copy_only=False) if not col.null_count else None
        if v is None:
            if pa.types.is_integer(col.type):
                info = np.iinfo(np.dtype(col.type.to_pandas_dtype()))
                fill = info.max if s.fn == "min" else info.min
            else:
                fill = np.inf if s.fn == "min" else -np.inf
            v = col.fill_null(fill).to_numpy(zero_copy_only=False)
        red = (np.minimum if s.fn == "min" else np.maximum).reduceat(v, starts)
        arr = pa.array(red)
        if T.is_decimal(s.arg_dtype):
            arr = decimals.from_unscaled(arr, s.arg_dtype)
        elif arr.type != types[0]:
            arr = arr.cast(types[0])
        cols[names[0]] = pc.if_else(pa.array(has), arr, pa.scalar(None, types[0]))
    return pa.table(cols)


def partial(table: pa.Table, group: tuple[str, ...], specs) -> pa.Table:
    """Per-partition states: group keys then state columns."""
    table, fast = _unscaled_inputs(table, specs)
    sorted_states = _sorted_segments(table, group, specs, fast)
    if sorted_states is not None:
        return sorted_states
    grouped = bool(group)
    prep = {}
    entries = []
    as_decimal: dict[str, pa.DataType] = {}
    for s in specs:
        for (suffix, kernel, _), name in zip(_states(s), state_names(s), strict=True):
            col = s.arg
            if s.arg in fast and s.fn in ("count", "min", "max"):  # on the unscaled int64
                col = f"{s.arg}.i64"
                prep.setdefault(col, fast[s.arg])
                if kernel in ("min", "max"):
                    as_decimal[name] = s.arg_dtype
            elif kernel == "sum" and s.arg in fast and s.fn in ("sum", "avg"):
                icol = f"{s.arg}.i64"
                prep.setdefault(icol, fast[s.arg])
                entries.append(_agg_entry(icol, "sum", name, grouped))
                as_decimal[name] = pa.decimal128(38, s.arg_dtype.scale)
                continue
            if s.fn in _FLOAT_STATE or suffix == ".ovf" or (
                    s.fn == "avg" and kernel == "sum" and not T.is_decimal(s.arg_dtype)):
                fcol = f"{s.arg}.f64"
                if fcol not in prep:
                    prep[fcol] = pc.cast(table.column(s.arg), pa.float64(), safe=False)
                col = fcol
            if kernel == "sum_sq":
                sq = f"{s.arg}.sq"
                if sq not in prep:
                    f = prep[f"{s.arg}.f64"]
                    prep[sq] = pc.multiply(f, f)
                col, kernel = sq, "sum"
            entries.append(_agg_entry(col, kernel, name, grouped))
    if prep:
        for name, arr in prep.items():
            table = table.append_column(name, arr)
    out = _run(table, list(group), entries)
    out = out.select(list(group) + [e[3] for e in entries])
    if as_decimal:  # int64 sums back to the decimal128 state type
        cols = [decimals.from_unscaled(c, as_decimal[n]) if n in as_decimal else c
                for n, c in zip(out.column_names, out.columns, strict=True)]
        out = pa.Table.from_arrays(cols, names=out.column_names)
    return out


def combine(table: pa.Table, group: tuple[str, ...], specs) -> pa.Table:
    """States of many partials -> states (a tree-reduction step)."""
    grouped = bool(group)
    entries = [_agg_entry(name, kernel, name, grouped)
               for s in specs
               for (_, _, kernel), name in zip(_states(s), state_names(s), strict=True)]
    out = _run(table, list(group), entries)
    return out.select(list(group) + [e[3] for e in entries])


def final(table: pa.Table, group: tuple[str, ...], specs) -> pa.Table:
    """Combine states (of one or many partials) into final values."""
    combined = combine(table, group, specs)
    cols = [combined.column(g) for g in group] + [_finish(combined, s) for s in specs]
    return pa.Table.from_arrays(cols, names=list(group) + [s.out for s in specs])


def single(table: pa.Table, group: tuple[str, ...], specs) -> pa.Table:
    return final(partial(table, group, specs), group, specs)


def _finish(t: pa.Table, s):
    dtype = s.dtype
    if s.fn in ("count", "count_star"):
        return pc.fill_null(t.column(s.out), 0).cast(T.INT64)
    if s.fn == "avg":
        total, count = t.column(s.out + ".s"), t.column(s.out + ".c")
        num = pc.cast(total, pa.float64())
        den = pc.cast(count, pa.float64())
        zero = pc.equal(count, 0)
        return pc.if_else(zero, pa.scalar(None, pa.float64()),
                          pc.divide(num, pc.if_else(zero, 1.0, den)))
    if s.fn in _FLOAT_STATE:
        total = t.column(s.out + ".s")
        sq = t.column(s.out + ".q")
        n = pc.cast(t.column(s.out + ".c"), pa.float64())
        mean_sq = pc.divide(pc.multiply(total, total), pc.if_else(pc.equal(n, 0), 1.0, n))
        m2 = pc.max_element_wise(pc.subtract(sq, mean_sq), 0.0)
        pop = s.fn.endswith("_pop")
        den = n if pop else pc.subtract(n, 1.0)
        bad = pc.less_equal(den, 0.0)
        var = pc.if_else(bad, pa.scalar(None, pa.float64()),
                         pc.divide(m2, pc.if_else(bad, 1.0, den)))
        return pc.sqrt(var) if s.fn.startswith("stddev") else var
    col = t.column(s.out)
    if s.out + ".ovf" in t.column_names:
        shadow = pc.max(pc.abs(t.column(s.out + ".ovf"))).as_py()
        if shadow is not None and shadow >= 9.2e18:
            raise ExecutionError("integer overflow in SUM: the total does not fit in BIGINT")
    if col.type != dtype:
        try:
            col = pc.cast(col, dtype)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InternalError(f"aggregate {s.fn} produced {col.type}, expected {dtype}: {e}") from e
    return col


def state_types(spec) -> list[pa.DataType]:
    """Arrow types of a spec's state columns (for empty partials)."""
    out = []
    for suffix, kernel, _ in _states(spec):
        if suffix == ".ovf":
            out.append(pa.float64())
        elif kernel in ("count_all", "count"):
            out.append(pa.int64())
        elif spec.fn in _FLOAT_STATE or (spec.fn == "avg" and not T.is_decimal(spec.arg_dtype)):
            out.append(pa.float64())
        elif kernel == "sum":
            at = spec.arg_dtype
            out.append(pa.decimal128(38, at.scale) if T.is_decimal(at) else
                       (pa.int64() if T.is_integer(at) or T.is_boolean(at) else pa.float64()))
        elif spec.fn in ("bool_and", "bool_or"):
            out.append(pa.bool_())
        else:
            out.append(spec.arg_dtype)
    return out
