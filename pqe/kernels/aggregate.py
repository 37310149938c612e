"""Hash aggregation kernels (Acero `aggregate` node), in two phases.

Each aggregate states its partial state columns, how states combine, and how the final value
is computed: count -> count (combine: sum); sum -> sum (sum); avg -> sum + count (sums, then
divide); min/max -> min/max; stddev/variance -> sum, count and the sum of squared deviations
from the state's own mean (M2; combined by Chan's formula, so a large common offset such as
1e9 + x does not cancel the digits away as a sum of squares would), plus min and max (M2 is
exactly 0 where they are equal). A partial table
has the group keys then the state columns; `final` accepts the concatenation of any number of
partial tables (and is itself a valid partial, so reductions can be trees).

A user-defined aggregate (`spec.udf`) has one state column of its own type: the same Acero
pass lists each group's row numbers (`hash_list`), and kernels.user_functions calls its
update per group on those rows, its merge per group when states combine, its finalize once.
"""

from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.acero as ac
import pyarrow.compute as pc

from .. import types as T
from ..errors import DataValueError, InternalError
from . import decimals
from . import group_states as G
from . import user_functions as U
from .holistic import HOLISTIC, holistic, merge_list_levels, one_list, ordered_lists
from .relational import (decoded, fold_wide, hash_key_floats, low_bits_repeat, unfold,
                         unify_dictionaries, wide_integer)

# sum, M2, count, then min and max: a group whose min is its max has M2 exactly 0 (its mean
# rounds: [1e15 + 0.2] * 3 gave stddev 0.125, [1e308] * 2 NaN; DuckDB 0), however split
_SPREAD = [(".s", "sum", "sum"), (".q", "m2", "m2"), (".c", "count", "sum"),
           (".lo", "min", "min"), (".hi", "max", "max")]

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
    "stddev_samp": _SPREAD,
    "stddev_pop": _SPREAD,
    "var_samp": _SPREAD,
    "var_pop": _SPREAD,
    # holistic: the state is the list of the group's values (in row order), the lists of
    # several partials are concatenated; the final value reads the whole list (kernels.holistic)
    "string_agg": [("", "list", "list_merge")],
    "array_agg": [("", "list", "list_merge")],
    "median": [("", "list", "list_merge")],
    "quantile_cont": [("", "list", "list_merge")],
    "quantile_disc": [("", "list", "list_merge")],
    "mode": [("", "list", "list_merge")],
    # computed per group by numpy (kernels.group_states)
    **{fn: G.states(fn) for fn in sorted(G.FUNCTIONS)},
}

_LIST_KERNELS = ("list", "list_merge")
_NUMPY_KERNELS = ("pair", "bits", "arg")  # kernels.group_states

_FLOAT_STATE = ("stddev_samp", "stddev_pop", "var_samp", "var_pop")


_USER = [("", "user", "user")]  # a user-defined aggregate: one state column (its state_type)
_ROWS = "__pqe_rows"  # row numbers, listed per group for user-defined aggregates


def _states(spec) -> list[tuple[str, str, str]]:
    if spec.udf is not None:
        return _USER
    if spec.order:  # the values' list, then one list per ORDER BY key (".o0", ...)
        return _STATES[spec.fn] + [(f".o{i}", "list", "list_merge")
                                   for i in range(len(spec.order))]
    if spec.fn == "any_value" and spec.arg_dtype is not None and T.is_decimal(spec.arg_dtype):
        return [("", "min", "min")]  # Arrow's hash_first has no decimal kernel; any value will do
    if spec.fn == "max" and spec.arg_dtype is not None and T.is_floating(spec.arg_dtype):
        return [("", "max", "max"), (".nan", "any_nan", "any")]  # Arrow's max skips NaN
    if _exact(spec):  # the sum, then how many times it wrapped past 128 bits (decimals)
        return [x for st in _STATES[spec.fn] for x in
                ([st, (st[0] + ".w", "wraps", "sum")] if st[1] == "sum" else [st])]
    return _STATES[spec.fn]


def _exact(spec) -> bool:
    """Whether the spec's sum state is an exact DECIMAL(38, s) sum (see decimals.limbs):
    SUM and AVG of integers and decimals. Its value is wraps * 2^128 + the decimal128
    word, whatever its digits, so a partial sum past 38 digits is no error: only the final
    value is checked (answers and errors do not depend on partitioning). Counts are sums
    too but cannot overflow."""
    at = spec.arg_dtype
    return spec.fn in ("sum", "avg") and at is not None and (T.is_integer(at) or T.is_decimal(at))


def _exact_type(spec) -> pa.DataType:
    at = spec.arg_dtype
    return pa.decimal128(38, at.scale if T.is_decimal(at) else 0)


def state_names(spec) -> list[str]:
    return [spec.out + suffix for suffix, _, _ in _states(spec)]


def _options(kernel: str):
    if kernel in ("count",):
        return pc.CountOptions(mode="only_valid")
    if kernel == "variance":  # population variance (ddof 0) of the valid values; NaN stays
        return pc.VarianceOptions(ddof=0, skip_nulls=True, min_count=1)
    if kernel in ("sum", "min", "max", "all", "any"):
        return pc.ScalarAggregateOptions(skip_nulls=True, min_count=1)
    return None


def _run(table: pa.Table, keys: list[str], aggs: list[tuple], keep: bool = False) -> pa.Table:
    """Group by `keys`, float keys by a canonical copy (relational.canonical_floats): -0.0
    and 0.0 are one group, so are all NaNs; the group shows its first value as given (a
    group of -0.0 only shows -0.0: SELECT DISTINCT showed 0.0 for it, where DuckDB and
    PostgreSQL show the value given).

    Dictionary-encoded keys (low-cardinality text a scan left encoded) are grouped by their
    indices after unifying the chunks' dictionaries, ~2x cheaper than hashing the strings;
    the output keys are decoded, unless `keep` (a partial step's: its exchange hashes each
    distinct value once and moves indices, and the final step groups by them too)."""
    encoded = []
    shown: dict[str, str] = {}  # float key -> its group's first value, shown as the key
    unfolded: list[str] = []  # keys shown as their (folded) group keys unfolded
    grouped_by = []
    for k in keys:
        col = table.column(k)
        if T.is_floating(col.type):
            # grouped by a canonical copy, a DOUBLE's bits folded for Acero's hash
            # (relational.hash_key_floats: 0.87 s -> 6 ms a 1.25M-row partition of 1,000
            # whole numbers). The key shows the group's canonical value when no -0.0 is
            # there (it is the value given, a NaN's bits aside), else its first value as
            # given (a group of -0.0 only is -0.0, as in DuckDB and PostgreSQL; one more
            # aggregate: 5M distinct doubles 0.45 -> 0.53 s, so only then). Aggregates over
            # the key column read its values as given.
            table = table.append_column(_CANON + k, hash_key_floats(col))
            grouped_by.append(_CANON + k)
            if _negative_zero(col):
                shown[k] = _SHOWN + k
                aggs = [*aggs, (k, "hash_first", None, _SHOWN + k)]
            else:
                unfolded.append(k)
            continue
        if wide_integer(col.type) and low_bits_repeat(col):
            # 8-byte integer keys whose values share their low 32 bits: grouped by their
            # folded bits (relational.low_bits_repeat), shown as given
            table = table.append_column(_CANON + k, fold_wide(col))
            grouped_by.append(_CANON + k)
            unfolded.append(k)
            continue
        if pa.types.is_dictionary(col.type):
            encoded.append(k)
        grouped_by.append(k)
    keys = grouped_by
    if encoded:
        table = unify_dictionaries(table)
    # one Acero aggregate per distinct (input, kernel, options): SUM(x) and AVG(x) share x's
    # sum, AVG(x) of a column without NULLs and COUNT(*) share the count (TPC-H Q1 asked
    # for 12 aggregates, 6 of them distinct); the repeats are the same column under each name
    first: dict[tuple, str] = {}
    same: dict[str, str] = {}
    distinct = []
    for target, kernel, options, out in aggs:
        key = (tuple(target) if isinstance(target, list) else target, kernel,
               None if options is None else (type(options).__name__, str(options)))
        if key in first:
            same[out] = first[key]
        else:
            first[key] = out
            distinct.append((target, kernel, options, out))
    ranked: dict[str, tuple[str, pa.Array] | None] = {}
    by_rank: dict[str, pa.Array] = {}  # output -> the text of each rank
    many: bool | None = None  # whether there are RANK_MIN_GROUPS groups or more
    for i, (target, kernel, options, out_name) in enumerate(distinct):
        if kernel not in ("hash_min", "hash_max") or not isinstance(target, str) \
                or not _plain_text(table.schema.field(target).type):
            continue
        if many is None:  # (the first key's distinct values: a lower bound of the groups)
            many = table.num_rows >= RANK_MIN_GROUPS and _distinct(
                table.column(keys[0])) >= RANK_MIN_GROUPS
        if not many:
            break
        if target not in ranked:
            ranked[target] = _text_ranks(table.column(target))
            if ranked[target] is not None:
                table = table.append_column(target + _RANK, ranked[target][0])
        if ranked[target] is not None:
            distinct[i] = (target + _RANK, kernel, options, out_name)
            by_rank[out_name] = ranked[target][1]
    decl = ac.Declaration.from_sequence([
        ac.Declaration("table_source", ac.TableSourceNodeOptions(table)),
        ac.Declaration("aggregate", ac.AggregateNodeOptions(distinct, keys=keys)),
    ])
    out = decl.to_table(use_threads=False)
    for name, values in by_rank.items():
        i = out.schema.get_field_index(name)
        out = out.set_column(i, name, pc.take(values, out.column(i)))
    for name, src in same.items():
        out = out.append_column(name, out.column(src))
    for k, src in shown.items():
        out = out.append_column(k, out.column(src))
    for k in unfolded:
        key = out.column(_CANON + k)
        out = out.append_column(k, unfold(key, table.schema.field(k).type)
                                if pa.types.is_uint64(key.type) else key)
    return out if keep else decoded(out, encoded)


_RANK = "\x00rank"
# MIN/MAX of text by ranks only where the distinct values are at most this share of the rows
# (sorting them costs more than Acero comparing strings when nearly every value differs),
# and only for this many groups or more: Acero keeps a group's text in its state, cheap for
# few groups, slow once they outgrow the caches (500k 40-byte URLs: 20k groups 0.021 s,
# 100k groups 0.169 s; by ranks 0.05 s either way)
RANK_DISTINCT_SHARE = 0.5
RANK_MIN_GROUPS = 50_000


def _distinct(col) -> int:
    """The column's distinct values (NULL counted as one), or 0 where Arrow cannot count
    them; a dictionary column by its indices (its chunks share one dictionary here)."""
    if pa.types.is_dictionary(col.type):
        col = pa.chunked_array([c.indices for c in col.chunks], col.type.index_type) \
            if isinstance(col, pa.ChunkedArray) else col.indices
    try:
        return pc.count_distinct(col, mode="all").as_py()
    except pa.ArrowNotImplementedError:
        return 0


def _plain_text(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t))


def _text_ranks(col) -> tuple[pa.ChunkedArray, pa.Array] | None:
    """Each value's rank among the column's distinct values in byte order (NULL stays NULL),
    and the distinct values by rank: grouped MIN/MAX of the ranks is MIN/MAX of the text,
    ~4x cheaper than Acero's string comparisons (2M 40-byte URLs in 100k groups: 0.57 s ->
    0.13 s). None when nearly every value differs (RANK_DISTINCT_SHARE)."""
    if isinstance(col, pa.Array):
        col = pa.chunked_array([col])
    if len(col) == 0 or col.num_chunks == 0:
        return None
    encoded = pc.dictionary_encode(col)  # (chunks share one growing dictionary: the last's)
    values = encoded.chunk(encoded.num_chunks - 1).dictionary
    if len(values) > RANK_DISTINCT_SHARE * len(col):
        return None
    order = pc.sort_indices(values)
    rank = np.empty(len(values), dtype=np.int64)
    rank[order.to_numpy()] = np.arange(len(values), dtype=np.int64)
    ranks = pa.chunked_array([pc.take(pa.array(rank), c.indices) for c in encoded.chunks],
                             pa.int64())
    return ranks, pc.take(values, order)


def _negative_zero(col) -> bool:
    """Whether a float column holds -0.0 (NULL slots aside)."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    for c in chunks:
        if len(c) == 0:
            continue
        values = np.frombuffer(c.buffers()[1], dtype=c.type.to_pandas_dtype(), count=len(c),
                               offset=c.offset * c.type.byte_width)
        hit = np.signbit(values) & (values == 0)
        if c.null_count:
            hit &= np.asarray(pc.is_valid(c))
        if hit.any():
            return True
    return False


_CANON = "__pqe_canonical."  # a float key's canonical copy, grouped by
_SHOWN = "__pqe_shown."  # a float key's first value in each group


def _agg_entry(col, kernel: str, out: str, grouped: bool):
    if kernel in _LIST_KERNELS:
        return (col, kernel, None, out)  # `_aggregate` makes them
    if kernel == "m2":
        kernel = "variance"
    name = ("hash_" + kernel) if grouped else kernel
    target = [] if kernel == "count_all" else col
    return (target, name, _options(kernel), out)


def _unscaled_inputs(table: pa.Table, specs) -> tuple[pa.Table, dict[str, pa.ChunkedArray]]:
    """Unscaled int64 versions of decimal arguments, by name, for sums (and counts, min, max
    of the same argument): int64 limbs are cheaper to make and to sum than 128-bit ones.

    Arguments may arrive as unscaled int64 already (a fused projection computed them so);
    where the int64 form cannot serve every aggregate of the argument, the table gets the
    decimal128 column back."""
    out = {}
    args = {s.arg: s.arg_dtype for s in specs if s.arg is not None and T.is_decimal(s.arg_dtype)}
    for arg, dtype in args.items():
        col = table.column(arg)
        given = pa.types.is_integer(col.type)
        fns = {s.fn for s in specs if s.arg == arg}
        if given:
            out[arg] = col
        elif fns & {"sum", "avg"} and decimals.fits_int64(dtype):
            out[arg] = decimals.to_unscaled(col)
        if given and fns - _UNSCALED_OK:
            i = table.schema.get_field_index(arg)
            table = table.set_column(i, arg, decimals.from_unscaled(col, dtype))
            del out[arg]
    return table, out


_UNSCALED_OK = {"sum", "avg", "count", "min", "max"}


def _limb_arrays(col, rows: int, bound: int | None = None) -> list:
    """The limbs of an integer or decimal column (decimals.limbs) as int64 arrays with the
    column's NULLs, ready for Arrow's (hash_)sum. An integer column whose sums cannot
    overflow int64 is its own single limb, as it is (no copy: the common case): known so
    from `bound`, the planner's largest absolute value of the column (file statistics:
    AggregateExec.sum_bounds), else from the column's min and max."""
    if pa.types.is_integer(col.type) and not pa.types.is_uint64(col.type):
        if bound is not None and bound * max(rows, 1) < 2 ** 63:
            return [col if pa.types.is_int64(col.type) else pc.cast(col, pa.int64())]
        mm = pc.min_max(col)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is None or max(-lo, hi) * max(rows, 1) < 2 ** 63:
            return [col if pa.types.is_int64(col.type) else pc.cast(col, pa.int64())]
    parts, validity = decimals.limbs(col, rows)
    return [pa.Array.from_buffers(pa.int64(), len(p), [validity, pa.py_buffer(p)])
            for p in parts]


def _from_limb_sums(cols: list, dtype: pa.DataType, wraps=None):
    """Summed limb columns (NULL where a group had no value) -> the exact DECIMAL sum
    states and their wraps (decimals.exact_from_limb_sums)."""
    arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in cols]
    validity = None
    if arrays[0].null_count:
        validity = pc.is_valid(arrays[0]).to_numpy(zero_copy_only=False)
        arrays = [pc.fill_null(a, 0) for a in arrays]
    sums = [np.asarray(a.to_numpy(zero_copy_only=False), dtype=np.int64) for a in arrays]
    return decimals.exact_from_limb_sums(sums, dtype, validity, wraps)


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
    # (integers as their own numpy type: a UBIGINT past 2^63 does not fit int64)
    k = np.asarray((key.combine_chunks() if isinstance(key, pa.ChunkedArray) else key)
                   .cast(kt if pa.types.is_integer(kt) else pa.int32())
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
            if _exact(s):  # limb sums per run: exact whatever the values
                parts, _ = decimals.limbs(col, n)
                sums = [np.add.reduceat(p, starts) for p in parts]
                arr, wraps = decimals.exact_from_limb_sums(sums, types[0], has)
                cols[names[0]] = arr
                cols[names[1]] = _wraps_array(wraps, len(starts))
            else:
                v = col.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64)
                with np.errstate(over="ignore", invalid="ignore"):  # IEEE: inf / NaN, no warning
                    run_sums = np.add.reduceat(v, starts)
                cols[names[0]] = pc.if_else(pa.array(has), pa.array(run_sums),
                                            pa.scalar(None, pa.float64()))
            if s.fn == "avg":
                cols[names[-1]] = pa.array(counts, pa.int64())
            continue
        # min / max; NaN is above every number: max is NaN if any value is (np.maximum),
        # min only if all are (np.fmin skips NaN, and NULLs become NaN for it)
        v = col.to_numpy(zero_copy_only=False) if not col.null_count else None
        floating = pa.types.is_floating(col.type)
        if v is None:
            if pa.types.is_integer(col.type):
                info = np.iinfo(np.dtype(col.type.to_pandas_dtype()))
                fill = info.max if s.fn == "min" else info.min
            else:
                fill = np.nan if s.fn == "min" else -np.inf
            v = col.fill_null(fill).to_numpy(zero_copy_only=False)
        red = ((np.fmin if floating else np.minimum) if s.fn == "min"
               else np.maximum).reduceat(v, starts)
        arr = pa.array(red)
        if T.is_decimal(s.arg_dtype):
            arr = decimals.from_unscaled(arr, s.arg_dtype)
        elif arr.type != types[0]:
            arr = arr.cast(types[0])
        cols[names[0]] = pc.if_else(pa.array(has), arr, pa.scalar(None, types[0]))
        if len(names) > 1:  # float max: its NaN flag
            cols[names[1]] = pc.is_nan(cols[names[0]])
    return pa.table(cols)


def _wraps_array(wraps: np.ndarray | None, n: int) -> pa.Array:
    return pa.array(np.zeros(n, np.int64) if wraps is None else wraps, pa.int64())


def _aggregate(table: pa.Table, group: tuple[str, ...], entries: list[tuple],
               exact: dict[str, tuple], prep: dict, keep: bool = False,
               bounds: dict | None = None) -> pa.Table:
    """Run `entries` (Acero aggregates) plus the exact sums `exact`: state name -> (input
    column name, input column, DECIMAL(38, s) type, wraps column or None). Each is summed
    limb by limb and reassembled into the state `name` and its wraps `name.w`."""
    grouped = bool(group)
    n = table.num_rows
    limb_names: dict[str, list[str]] = {}
    done: dict[str, list[str]] = {}
    for name, (key, col, _, wraps) in exact.items():
        if key not in done:  # the limbs of one column serve all its sums
            arrays = _limb_arrays(col, n, (bounds or {}).get(key))
            done[key] = [f"{key}.l{k}" for k in range(len(arrays))]
            prep.update(zip(done[key], arrays, strict=True))
        outs = [f"{name}.sum{k}" for k in range(len(done[key]))]
        entries += [_agg_entry(c, "sum", o, grouped) for c, o in zip(done[key], outs, strict=True)]
        if wraps is not None:
            prep[f"{name}.win"] = wraps
            entries.append(_agg_entry(f"{name}.win", "sum", f"{name}.wsum", grouped))
        limb_names[name] = outs
    for name, arr in prep.items():
        table = table.append_column(name, arr)
    lists = [e for e in entries if e[1] in _LIST_KERNELS]
    entries = [e for e in entries if e[1] not in _LIST_KERNELS]
    if grouped:
        # hash_list has no kernel for list values: list states are merged through the list
        # of each group's row numbers
        # nor for nested values (array_agg of a LIST or STRUCT column): those are taken by
        # the same row numbers
        nested = {col for col, kernel, _, _ in lists
                  if kernel == "list" and pa.types.is_nested(table.schema.field(col).type)}
        entries += [(col, "hash_list", None, out) for col, kernel, _, out in lists
                    if kernel == "list" and col not in nested]
        if nested or any(kernel == "list_merge" for _, kernel, _, _ in lists):
            table = table.append_column("__row", pa.array(np.arange(table.num_rows), pa.int64()))
            entries.append(("__row", "hash_list", None, "__rows"))
    if entries or grouped:
        out = _run(table, list(group), entries, keep)
    else:  # only lists and no groups: one row
        out = pa.table({"__one": pa.array([0], pa.int8())})
    cols = [out.column(g) for g in group]
    names = list(group)
    internal = {o for v in limb_names.values() for o in v} | {f"{m}.wsum" for m in exact}
    internal |= {e[3] for e in lists} | {"__rows"}  # made below
    for e in entries:
        if e[3] not in internal:
            cols.append(out.column(e[3]))
            names.append(e[3])
    for col, kernel, _, name in lists:  # in their place among the states (by name, below)
        if grouped and col in nested:
            rows = out.column("__rows").combine_chunks()
            state = pa.ListArray.from_arrays(
                rows.offsets, table.column(col).take(rows.values).combine_chunks())
        elif grouped:
            state = merge_list_levels(table.column(col), out.column("__rows")) \
                if kernel == "list_merge" else out.column(name)
        else:
            state = one_list(table.column(col), kernel == "list_merge")
        cols.append(state)
        names.append(name)
    for name, outs in limb_names.items():
        carried = None
        if exact[name][3] is not None:
            carried = pc.fill_null(out.column(f"{name}.wsum"), 0).to_numpy(zero_copy_only=False)
        arr, wraps = _from_limb_sums([out.column(o) for o in outs], exact[name][2], carried)
        cols += [arr, _wraps_array(wraps, len(arr))]
        names += [name, f"{name}.w"]
    return pa.Table.from_arrays(cols, names=names)


# A partial aggregate whose groups are nearly as many as its rows (TPC-DS Q23's counts per
# (item, date), Q78's sums per (year, item, customer)) hashes every row twice, here and in the
# final step, and hands on as many states as it read rows. With `adaptive` (the planner's
# estimate saw little reduction) a partition of at least PROBE_ROWS rows first counts the
# distinct keys of every PROBE_STRIDE-th row; when they are more than PASS_RATIO of those
# rows, every row goes on as the states of a one-row group, made without hashing, and the
# final step does the one grouping (DataFusion skips partial aggregation so). The sample is
# blocks of PROBE_BLOCK adjacent rows, one block in every PROBE_STRIDE: a key's rows may lie
# next to each other (one TPC-DS ticket's lines: Q87's keys have ~11 rows, mostly adjacent,
# which a sample of every 16th row saw once each) or far apart (Q39's, 4 rows a key, which
# the partition's first quarter saw once each). With stride 16 and 0.9, rows pass
# when a key has about 3 rows or fewer in the partition (a sample keeps 94% of its rows as
# keys at 3 rows a key, 91% at 4, 88% at 5); on threads passing costs less up to about 4
# rows a key (the final step hashes the rows once instead of twice, the exchange moves more
# of them). The probe costs about a tenth of the partial it may save (Acero's fixed cost on
# a small sample); an `AdaptiveProbe` shared by a node's partitions keeps the first verdict,
# so on threads most partitions do not probe at all.
PROBE_ROWS = 1 << 15
PROBE_BLOCK = 64
PROBE_STRIDE = 16
PASS_RATIO = 0.9


class AdaptiveProbe:
    """The verdict of the first partition of one partial aggregate that probed (None until
    then): whether rows pass. Only speed depends on it, never an answer."""

    __slots__ = ("passes",)

    def __init__(self):
        self.passes: bool | None = None


def partial(table: pa.Table, group: tuple[str, ...], specs, segments: bool = False,
            adaptive: bool | AdaptiveProbe = False, bounds: dict | None = None) -> pa.Table:
    """Per-partition states: group keys then state columns. `segments` (the planner's
    choice, AggregateExec.strategy): reduce runs of equal keys when the partition is sorted
    on its key, else hash. `adaptive`: rows may pass as one-row states (above)."""
    table, fast = _unscaled_inputs(table, specs)
    if segments:
        sorted_states = _sorted_segments(table, group, specs, fast)
        if sorted_states is not None:
            return sorted_states
    if adaptive and group and table.num_rows >= PROBE_ROWS and all(_passes(s) for s in specs):
        probe = adaptive if isinstance(adaptive, AdaptiveProbe) else AdaptiveProbe()
        if probe.passes is None:
            probe.passes = _barely_reduces(table, group)
        if probe.passes:
            return row_states(table, group, specs, fast, keep=True)
    return _hash_partial(table, group, specs, fast, keep=True, bounds=bounds)


def _barely_reduces(table: pa.Table, group: tuple[str, ...]) -> bool:
    n = table.num_rows
    starts = np.arange(0, n, PROBE_BLOCK * PROBE_STRIDE)
    rows = (starts[:, None] + np.arange(PROBE_BLOCK)).ravel()
    rows = pa.array(rows[rows < n])
    sample = table.select(list(group)).take(rows)
    return _run(sample, list(group), []).num_rows > PASS_RATIO * len(rows)


def _passes(spec) -> bool:
    """Whether a row's state can be made alone (row_states): not for lists of values (holistic
    and ordered aggregates) nor user-defined aggregates."""
    return spec.udf is None and not spec.order and all(
        kernel not in _LIST_KERNELS + _NUMPY_KERNELS for _, kernel, _ in _states(spec))


def row_states(table: pa.Table, group: tuple[str, ...], specs, fast: dict,
               keep: bool = False) -> pa.Table:
    """Each row as the partial states of a group of that one row, without hashing: what
    `_hash_partial` would give a table whose keys are all distinct (the keys as it shows
    them: float keys as given, dictionary keys decoded unless `keep`), state types as
    `state_types`."""
    keys = pa.Table.from_arrays([table.column(g) for g in group], names=list(group))
    cols = list(keys.columns if keep else decoded(keys, group).columns)
    names = list(group)
    n = table.num_rows
    for s in specs:
        for (suffix, kernel, _), name, dtype in zip(_states(s), state_names(s), state_types(s),
                                                    strict=True):
            cols.append(_row_state(table, s, kernel, dtype, fast, n))
            names.append(name)
    return pa.Table.from_arrays(cols, names=names)


def _row_state(table: pa.Table, s, kernel: str, dtype: pa.DataType, fast: dict, n: int):
    if kernel == "count_all":
        return pa.array(np.ones(n, np.int64))
    if kernel == "wraps":  # a one-row sum never wraps
        return pa.array(np.zeros(n, np.int64))
    col = table.column(s.arg)
    if kernel == "count":
        return pc.cast(pc.is_valid(col), pa.int64())
    if kernel == "any_nan":
        return pc.is_nan(col)
    if kernel == "sum" and _exact(s):  # the value as DECIMAL(38, s): an exact one-row sum
        if s.arg in fast:
            return decimals.from_unscaled(fast[s.arg], dtype)
        return pc.cast(col, dtype)
    if pa.types.is_integer(col.type) and T.is_decimal(s.arg_dtype):  # handed over unscaled
        col = decimals.from_unscaled(col, s.arg_dtype)
    if kernel == "m2":  # a one-row group has no spread (NaN for NaN and infinities)
        f = pc.cast(col, pa.float64(), safe=False)
        return pc.subtract(f, f)
    if kernel == "sum":  # of floats (and AVG's sum of them)
        return pc.cast(col, pa.float64(), safe=False)
    return col if col.type == dtype else pc.cast(col, dtype)  # min, max, first, all, any


def _hash_partial(table: pa.Table, group: tuple[str, ...], specs, fast: dict,
                  keep: bool = False, bounds: dict | None = None) -> pa.Table:
    grouped = bool(group)
    prep: dict = {}
    entries = []
    exact: dict = {}
    as_decimal: dict[str, pa.DataType] = {}
    user = [s for s in specs if s.udf is not None]
    by_group = [s for s in specs if s.fn in G.FUNCTIONS]
    if user or by_group:  # grouped: each group's row numbers; else one row for all (a count nobody reads)
        prep[_ROWS] = pa.array(np.arange(table.num_rows, dtype=np.int64))
        entries.append(_agg_entry(_ROWS, "list" if grouped else "count_all", _ROWS, grouped))
    variances: dict[str, str] = {}  # M2 state -> its count state
    for s in specs:
        for (suffix, kernel, _), name in zip(_states(s), state_names(s), strict=True):
            col = s.arg
            if suffix.startswith(".o"):  # an ORDER BY key's list
                col = s.order[int(suffix[2:])][0]
            if kernel in ("wraps", "user") or kernel in _NUMPY_KERNELS:
                continue  # made with its sum; user and numpy aggregates: below
            if kernel == "sum" and _exact(s):
                src = fast[s.arg] if s.arg in fast else table.column(s.arg)
                exact[name] = (s.arg, src, _exact_type(s), None)
                continue
            if kernel == "any_nan":
                col, kernel = f"{s.arg}.nan", "any"
                if col not in prep:
                    prep[col] = pc.is_nan(table.column(s.arg))
            if s.arg in fast and s.fn in ("count", "min", "max"):  # on the unscaled int64
                col = f"{s.arg}.i64"
                prep.setdefault(col, fast[s.arg])
                if kernel in ("min", "max"):
                    as_decimal[name] = s.arg_dtype
            if s.fn in _FLOAT_STATE or (s.fn == "avg" and kernel == "sum"):
                fcol = f"{s.arg}.f64"
                if fcol not in prep:
                    prep[fcol] = pc.cast(table.column(s.arg), pa.float64(), safe=False)
                col = fcol
            if kernel == "m2":  # the population variance, times the count below
                variances[name] = s.out + ".c"
            if kernel == "count" and isinstance(col, str) and _no_nulls(table, prep, col):
                kernel = "count_all"  # the same count, and one COUNT(*) may already make it
            entries.append(_agg_entry(col, kernel, name, grouped))
    out = _aggregate(table, group, entries, exact, prep, keep, bounds)
    for name, count in variances.items():
        m2 = pc.multiply(out.column(name), pc.cast(out.column(count), pa.float64()))
        base = name[:-len(".q")]
        m2 = pc.if_else(_constant(out, base), 0.0, m2)
        out = out.set_column(out.schema.get_field_index(name), name, m2)
    if user or by_group:
        rows, offsets = U.group_slices(out.column(_ROWS) if grouped else None, table.num_rows)
        for s in user:
            out = out.append_column(s.out, U.partial_states(table, s, rows, offsets))
        for s in by_group:
            for name, col in zip(state_names(s), G.partial(table, s, rows, offsets), strict=True):
                out = out.append_column(name, col)
    out = out.select(list(group) + [n for s in specs for n in state_names(s)])
    if as_decimal:  # int64 min/max back to the decimal128 state type
        cols = [decimals.from_unscaled(c, as_decimal[n]) if n in as_decimal else c
                for n, c in zip(out.column_names, out.columns, strict=True)]
        out = pa.Table.from_arrays(cols, names=out.column_names)
    return out


def _no_nulls(table: pa.Table, prep: dict, col: str) -> bool:
    arr = prep[col] if col in prep else table.column(col) if col in table.column_names else None
    return arr is not None and arr.null_count == 0


def combine(table: pa.Table, group: tuple[str, ...], specs) -> pa.Table:
    """States of many partials -> states (a tree-reduction step). Exact sum states are
    summed exactly again (a DECIMAL(38) sum of partial sums may not wrap either)."""
    grouped = bool(group)
    entries = []
    exact: dict = {}
    prep: dict = {}
    user = [s for s in specs if s.udf is not None]
    if user:  # grouped: each group's row numbers; else one row for all (a count nobody reads)
        prep[_ROWS] = pa.array(np.arange(table.num_rows, dtype=np.int64))
        entries.append(_agg_entry(_ROWS, "list" if grouped else "count_all", _ROWS, grouped))
    spread = [s for s in specs if s.fn in _FLOAT_STATE]
    by_group = [s for s in specs if s.fn in G.FUNCTIONS]
    if (spread and grouped or by_group) and not user:  # which states each group combines
        prep[_ROWS] = pa.array(np.arange(table.num_rows, dtype=np.int64))
        entries.append(_agg_entry(_ROWS, "list" if grouped else "count_all", _ROWS, grouped))
    for s in specs:
        for (_, first, kernel), name in zip(_states(s), state_names(s), strict=True):
            if first in ("wraps", "user") or first in _NUMPY_KERNELS:
                continue  # combined with its sum; user and numpy aggregates: below
            if first == "sum" and _exact(s):
                exact[name] = (name, table.column(name), _exact_type(s),
                               _carried_wraps(table.column(name + ".w")))
            elif kernel == "m2":  # the states' M2 summed; the spread of their means below
                entries.append(_agg_entry(name, "sum", name, grouped))
            else:
                entries.append(_agg_entry(name, kernel, name, grouped))
    out = _aggregate(table, group, entries, exact, prep)
    if user or spread or by_group:
        rows, offsets = U.group_slices(out.column(_ROWS) if grouped else None, table.num_rows)
    for s in by_group:
        for name, col in zip(state_names(s), G.combine(table, s, rows, offsets), strict=True):
            out = out.append_column(name, col)
    for s in user:
        out = out.append_column(s.out, U.merged_states(table.column(s.out), s.udf,
                                                       offsets, rows))
    for s in spread:
        name = s.out + ".q"
        out = out.set_column(out.schema.get_field_index(name), name,
                             _combined_m2(table, out, s.out, rows, offsets))
    return out.select(list(group) + [n for s in specs for n in state_names(s)])


def _float_values(col) -> np.ndarray:
    """A float column as a numpy array, NULL as NaN."""
    return np.asarray(pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False), np.float64)


def _combined_m2(states: pa.Table, out: pa.Table, base: str, rows: np.ndarray,
                 offsets: np.ndarray) -> pa.Array:
    """Chan's parallel formula: a group's M2 is the sum of its states' M2 plus, per state,
    count * (state mean - group mean)^2, with the group's mean known first (a second pass
    over the states, not a difference of large sums). NaN and infinite values stay NaN."""
    n_i = _float_values(pc.fill_null(states.column(base + ".c"), 0))
    s_i = _float_values(states.column(base + ".s"))
    group_of = np.empty(len(rows), np.int64)
    group_of[rows] = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    total = _float_values(out.column(base + ".s"))
    count = _float_values(pc.fill_null(out.column(base + ".c"), 0))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # inf, NaN: as SQL
        mean = total / count
        dev = np.where(n_i > 0, s_i / np.where(n_i > 0, n_i, 1) - mean[group_of], 0.0)
        spread = np.bincount(group_of, weights=n_i * dev * dev, minlength=len(count))
        m2 = pc.fill_null(out.column(base + ".q"), 0.0)
        value = _float_values(m2) + spread
    value[np.asarray(_constant(out, base), bool)] = 0.0
    return pa.array(value, pa.float64(), mask=count == 0)


def _constant(states: pa.Table, base: str):
    """Which groups of variance states hold one finite value only (min = max, no NaN: Arrow's
    min and max skip NaN, the sum does not): their M2 is exactly 0."""
    lo, hi = states.column(base + ".lo"), states.column(base + ".hi")
    same = pc.and_(pc.and_(pc.equal(lo, hi), pc.is_finite(lo)),
                   pc.invert(pc.is_nan(states.column(base + ".s"))))
    return pc.fill_null(same, False)


def _carried_wraps(wraps):
    """The wraps of exact sum states to carry into their combined sums, or None when every
    one is 0 (as good as always: a partial sum past 2^127 is rare): summing a column of
    zeros per group doubled the work of combining TPC-DS Q78's 258k states of 3 sums."""
    mm = pc.min_max(wraps)
    if mm["min"].as_py() in (0, None) and mm["max"].as_py() in (0, None):
        return None
    return wraps


def final(table: pa.Table, group: tuple[str, ...], specs) -> pa.Table:
    """Combine states (of one or many partials) into final values."""
    return _finish_all(combine(table, group, specs), group, specs)


def _finish_all(states: pa.Table, group: tuple[str, ...], specs) -> pa.Table:
    cols = [states.column(g) for g in group] + [_finish(states, s) for s in specs]
    return pa.Table.from_arrays(cols, names=list(group) + [s.out for s in specs])


def single(table: pa.Table, group: tuple[str, ...], specs, segments: bool = False,
           bounds: dict | None = None) -> pa.Table:
    table, fast = _unscaled_inputs(table, specs)
    if segments:
        states = _sorted_segments(table, group, specs, fast)
        if states is not None:  # one row per key already: nothing to combine
            return _finish_all(states, group, specs)
    return final(_hash_partial(table, group, specs, fast, keep=True, bounds=bounds), group,
                 specs)


_INT64_RANGE = (decimal.Decimal(-(2 ** 63)), decimal.Decimal(2 ** 63 - 1))


def _wraps_of(t: pa.Table, name: str) -> np.ndarray:
    return pc.fill_null(t.column(name + ".w"), 0).to_numpy(zero_copy_only=False)


def _checked_int64(col) -> pa.ChunkedArray | pa.Array:
    """An exact DECIMAL(38, 0) sum as BIGINT, or an error when it does not fit (never wraps)."""
    lo, hi = (pa.scalar(v, col.type) for v in _INT64_RANGE)
    outside = pc.or_(pc.less(col, lo), pc.greater(col, hi))
    if pc.any(outside).as_py():
        raise DataValueError("integer overflow: SUM does not fit in BIGINT")
    return pc.cast(col, pa.int64())


def _finish(t: pa.Table, s):
    dtype = s.dtype
    if s.udf is not None:
        return U.final_values(t.column(s.out), s.udf)
    if s.fn in G.FUNCTIONS:
        return G.finish(t, s)
    if s.fn in HOLISTIC:
        state = t.column(s.out)
        if s.order:
            state = ordered_lists(state, [t.column(f"{s.out}.o{i}") for i in range(len(s.order))],
                                   s.order)
        return holistic(state, s)
    if s.fn in ("count", "count_star"):
        return pc.fill_null(t.column(s.out), 0).cast(T.INT64)
    if s.fn == "avg":
        total, count = t.column(s.out + ".s"), t.column(s.out + ".c")
        if _exact(s):  # (one rounding of the exact sum / count)
            return decimals.exact_mean(total, _wraps_of(t, s.out + ".s"), count)
        num = pc.cast(total, pa.float64())
        den = pc.cast(count, pa.float64())
        zero = pc.equal(count, 0)
        return pc.if_else(zero, pa.scalar(None, pa.float64()),
                          pc.divide(num, pc.if_else(zero, 1.0, den)))
    if s.fn in _FLOAT_STATE:
        m2 = t.column(s.out + ".q")
        n = pc.cast(t.column(s.out + ".c"), pa.float64())
        pop = s.fn.endswith("_pop")
        den = n if pop else pc.subtract(n, 1.0)
        bad = pc.less_equal(den, 0.0)
        var = pc.if_else(bad, pa.scalar(None, pa.float64()),
                         pc.divide(m2, pc.if_else(bad, 1.0, den)))
        return pc.sqrt(var) if s.fn.startswith("stddev") else var
    col = t.column(s.out)
    if s.out + ".nan" in t.column_names:  # float max: NaN is above every number
        nan = pc.fill_null(t.column(s.out + ".nan"), False)
        col = pc.if_else(nan, pa.scalar(float("nan"), col.type), col)
    if _exact(s):
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        decimals.check_fits(col, _wraps_of(t, s.out))
        if T.is_integer(dtype):
            return _checked_int64(col)
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
        if kernel == "user":
            out.append(spec.udf.state_type)
        elif kernel in _NUMPY_KERNELS:
            out.append(G.state_type(spec, suffix))
        elif kernel in ("count_all", "count", "wraps"):
            out.append(pa.int64())
        elif kernel == "any_nan":
            out.append(pa.bool_())
        elif kernel == "sum" and _exact(spec):
            out.append(_exact_type(spec))
        elif spec.fn in _FLOAT_STATE or spec.fn == "avg" or kernel == "sum":
            out.append(pa.float64())  # sums of floats
        elif spec.fn in ("bool_and", "bool_or"):
            out.append(pa.bool_())
        elif kernel == "list":
            out.append(pa.list_(spec.arg_dtype))
        else:
            out.append(spec.arg_dtype)
    return out
