"""Join kernels: Acero hash join (with residual filter), null-aware anti join, nested loop.

Column names are plan-unique ids, so the two inputs never collide and no suffixes are needed.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np
import pyarrow as pa
import pyarrow.acero as ac
import pyarrow.compute as pc

from .. import types as T
from ..errors import ResourceError
from ..physical.plan import Band, OrKeys
from ..plan.extremes import EXTREME_PREFIX
from .band import pair_blocks
from .expressions import Compiler, filter_table
from .relational import (combination_codes, decoded, fold_wide, hash_key_floats,
                         low_bits_repeat, wide_integer)
from .user_functions import check_cancelled

_ACERO_KIND = {"inner": "inner", "left": "left outer", "right": "right outer",
               "full": "full outer", "semi": "left semi", "anti": "left anti"}


def _source(t: pa.Table) -> ac.Declaration:
    return ac.Declaration("table_source", ac.TableSourceNodeOptions(t))


def _match_keys(left: pa.Table, right: pa.Table, left_keys, right_keys):
    """The two tables and key names to hash-join on: a float key is matched on a canonical
    copy (-0.0 = 0.0, NaN = NaN; see relational.canonical_floats), a DOUBLE's bits folded so
    that Acero hashes them well (relational.hash_key_floats), added beside the original,
    which is what the join outputs; an 8-byte integer key whose values share their low 32
    bits on either side (relational.low_bits_repeat) is matched on its folded bits on both."""
    lnames, rnames = list(left_keys), list(right_keys)
    # a column that is the key of two pairs (`i.j = o.k AND i.j = o.j`) is matched on a
    # copy for the second: Acero refuses a key field named twice ("multiple matches for key
    # field reference"), and a projection of the keys would name two columns alike
    for names, side in ((lnames, "left"), (rnames, "right")):
        for i, name in enumerate(names):
            if name in names[:i]:
                copy = f"{name}\x00dup{i}"
                if side == "left":
                    left = left.append_column(copy, left.column(name))
                else:
                    right = right.append_column(copy, right.column(name))
                names[i] = copy
    left_keys, right_keys = list(lnames), list(rnames)
    for i, (lk, rk) in enumerate(zip(left_keys, right_keys, strict=True)):
        lcol, rcol = left.column(lk), right.column(rk)
        if T.is_floating(lcol.type):
            make = hash_key_floats
        elif wide_integer(lcol.type) and (low_bits_repeat(lcol) or low_bits_repeat(rcol)):
            make = fold_wide
        else:
            continue
        lnames[i], rnames[i] = lk + "\x00key", rk + "\x00key"
        if lnames[i] not in left.column_names:
            left = left.append_column(lnames[i], make(lcol))
        if rnames[i] not in right.column_names:
            right = right.append_column(rnames[i], make(rcol))
    return left, right, lnames, rnames


def _without_null_types(left: pa.Table, right: pa.Table, left_keys, right_keys):
    """The inputs with no null-typed column, as Acero's hash join needs ("Data type null is
    not supported in join non-key field"), and the names of the columns that were null-typed
    (all NULL: a bare NULL in a select list, say). Each becomes NULLs of a type Acero hashes
    or carries: a key the type of the key it is matched with (int8 if both are null-typed;
    a NULL key matches nothing either way), any other column boolean. Such a column is kept,
    not dropped, so a residual filter that reads it (`x IS NULL`) still finds it;
    `_with_null_types` makes the output columns null-typed again."""
    null_ids = {name for t in (left, right) for name, f in zip(t.column_names, t.schema, strict=True)
                if T.is_null(f.type)}
    if not null_ids:
        return left, right, null_ids
    stand_in = dict.fromkeys(null_ids, pa.bool_())
    for lk, rk in zip(left_keys, right_keys, strict=True):
        lt, rt = left.schema.field(lk).type, right.schema.field(rk).type
        if T.is_null(lt) or T.is_null(rt):
            want = pa.int8() if T.is_null(lt) and T.is_null(rt) else rt if T.is_null(lt) else lt
            stand_in.update({k: want for k in (lk, rk) if k in null_ids})

    def typed(t: pa.Table) -> pa.Table:
        cols = [pa.nulls(t.num_rows, stand_in[n]) if n in null_ids else t.column(n)
                for n in t.column_names]
        return pa.Table.from_arrays(cols, names=t.column_names)
    return typed(left), typed(right), null_ids


def _with_null_types(out: pa.Table, out_ids, null_ids) -> pa.Table:
    """The columns out_ids of a join output, those in null_ids null-typed again."""
    if not null_ids.intersection(out_ids):
        return out.select(list(out_ids))
    cols = [pa.nulls(out.num_rows) if c in null_ids else out.column(c) for c in out_ids]
    return pa.Table.from_arrays(cols, names=list(out_ids))


def hash_join(left: pa.Table, right: pa.Table, kind: str, left_keys, right_keys,
              residual, out_ids, null_aware: bool = False) -> pa.Table:
    """`residual` is a compiled pc.Expression over columns of both sides, or None."""
    if null_aware:
        return _null_aware_anti(left, right, left_keys, right_keys, out_ids)
    if kind in ("semi", "anti") and right.num_rows == 0:
        return (left if kind == "anti" else left.slice(0, 0)).select(list(out_ids))
    if left.num_rows == 0 and kind in ("inner", "left", "semi", "anti"):
        # no probe rows, no output rows: skip hashing the build (a broadcast build is hashed
        # once per probe partition, and dynamic filters leave many partitions empty)
        right = right.slice(0, 0)
    if residual is None and kind in ("inner", "left", "right", "full"):
        _check_output_fits(left, right, left_keys, right_keys)
    left, right, null_ids = _without_null_types(left, right, left_keys, right_keys)
    left, right, left_keys, right_keys = _match_keys(left, right, left_keys, right_keys)
    by_ref = _by_reference(right, right_keys, kind, residual, out_ids)
    by_ref += [c for c in _nested_payload(right, right_keys) if c not in by_ref]
    full, full_left = right, left
    if by_ref:
        right = right.drop_columns(by_ref).append_column(
            _BUILD_ROW, pa.array(np.arange(right.num_rows, dtype=np.int64)))
    # nested (LIST, STRUCT, MAP) columns are no payload Acero's hash join carries ('not
    # supported in join non-key field'): the probe side's go by row number too
    left_ref = _nested_payload(left, left_keys)
    if left_ref:
        left = left.drop_columns(left_ref).append_column(
            _PROBE_ROW, pa.array(np.arange(left.num_rows, dtype=np.int64)))
    opts = ac.HashJoinNodeOptions(_ACERO_KIND[kind], list(left_keys), list(right_keys),
                                  filter_expression=residual)
    decl = ac.Declaration("hashjoin", opts, inputs=[_source(left), _source(right)])
    out = decl.to_table(use_threads=False)
    if by_ref:
        out = _taken(out, full, [c for c in by_ref if c in out_ids])
    if left_ref:
        out = _taken(out, full_left, [c for c in left_ref if c in out_ids], _PROBE_ROW)
    return _with_null_types(out, out_ids, null_ids)


# a join whose output may take more than this share of the memory the machine has free is
# counted exactly before it runs (a bound from the build's most repeated key first)
OUTPUT_CHECK_SHARE = 0.25


def _check_output_fits(left: pa.Table, right: pa.Table, left_keys, right_keys) -> None:
    """Refuse, as a ResourceError, a hash join whose output (all its pairs, held at once)
    would not fit in the memory the machine has free: keys far more repeated than the plan's
    statistics showed (a 1.5-billion-pair self-join of one hot key grew the process until
    the kernel killed it; the memory guard had planned it at 40 bytes). Cheap unless the
    output may be large: the probe rows times the build's most repeated key (estimated from
    an evenly spaced sample of the build's keys, once per broadcast build) bound the pairs,
    and only past OUTPUT_CHECK_SHARE of free memory are they counted exactly (the build's
    rows per key, joined to the probe's keys)."""
    from .memory import available_memory

    if not left.num_rows or not right.num_rows:
        return
    width = left.nbytes / left.num_rows + right.nbytes / right.num_rows  # bytes a pair
    have = available_memory()
    if have is None or left.num_rows * right.num_rows * width <= have * OUTPUT_CHECK_SHARE:
        return
    try:
        most = _most_repeated(right, tuple(right_keys))
    except pa.ArrowException:  # (keys Acero cannot group: the join says what it says)
        return
    if left.num_rows * most * width <= have * OUTPUT_CHECK_SHARE:
        return
    matches = _matches_per_row(left, right, left_keys, right_keys)
    if matches is None:
        return
    pairs = int(matches.sum()) + left.num_rows  # (+ unmatched rows of an outer join)
    if pairs * width > have:
        gib = 1 << 30
        raise ResourceError(
            f"a join's output would be {pairs:,} rows (about {pairs * width / gib:.1f} GiB) "
            f"in one partition, more than the {have / gib:.1f} GiB of memory free: its keys "
            f"repeat far more than the table statistics show; filter or aggregate its inputs "
            f"first, or run it on a cluster with more memory")


# a join whose output feeds an aggregate runs on slices of its probe side of at most about
# PIECE_ROWS output rows each when the whole output would be more than SLICED_ROWS: the
# aggregate reduces each slice's output before the next is made (kernels.join.output_pieces).
# A hot-key self-join of 64M pairs over two threads: 1M-row slices peak at 475 MiB of RSS,
# 4M-row slices at 765, in the same time
PIECE_ROWS = 1 << 20
SLICED_ROWS = 1 << 24
# build keys sampled for it: the joins of TPC-DS SF1 spent 0.35 s sampling 64k keys per
# build (a partitioned join's every partition); a key repeated enough to matter shows in 4k
PIECE_SAMPLE = 1 << 12


def output_pieces(left: pa.Table, right: pa.Table, kind: str, left_keys,
                  right_keys) -> list[int] | None:
    """Where to cut the probe side (left) of a hash join of `kind` (inner or left) so that
    each slice makes at most about PIECE_ROWS output rows (a probe row's output rows stay
    together), or None when the whole output is at most SLICED_ROWS: keys repeated on both
    sides (a self-join of a hot key made 100M rows, held at once, for a count(*)). Cheap
    unless the output may be that large: the probe rows times the build's most repeated key
    (sampled, once per broadcast build) bound it, and only past SLICED_ROWS are each probe
    row's matches counted (the build's rows per key, joined to the probe's keys)."""
    n = left.num_rows
    if n < 2 or not right.num_rows or kind not in ("inner", "left"):
        return None
    try:
        if n * right.num_rows <= SLICED_ROWS \
                or n * _most_repeated(right, tuple(right_keys), PIECE_SAMPLE) <= SLICED_ROWS:
            return None
    except pa.ArrowException:  # (keys Acero cannot group: the join runs whole)
        return None
    rows = _matches_per_row(left, right, left_keys, right_keys)
    if rows is None:
        return None
    if kind == "left":
        rows = np.maximum(rows, 1)  # (an unmatched probe row is one output row)
    ends = np.cumsum(rows)
    total = int(ends[-1])
    if total <= SLICED_ROWS:
        return None
    # each cut where the running count passes a multiple of PIECE_ROWS
    cuts = np.searchsorted(ends, np.arange(PIECE_ROWS, total, PIECE_ROWS), side="left") + 1
    cuts = np.unique(cuts[(cuts > 0) & (cuts < n)])
    return [0, *cuts.tolist(), n]


def _matches_per_row(left: pa.Table, right: pa.Table, left_keys,
                     right_keys) -> np.ndarray | None:
    """Each probe (left) row's number of matching build rows, as int64: the build's rows per
    key, joined to the probe's keys; None for keys Acero cannot group or join."""
    n = left.num_rows
    names = [f"__pqe_k{i}" for i in range(len(left_keys))]
    try:
        # float keys as the join matches them (-0.0 = 0.0, NaN = NaN: _match_keys), or a
        # hot key of -0.0 against 0.0 counted no matches and went unsliced and unguarded
        build = pa.Table.from_arrays([hash_key_floats(right.column(k)) for k in right_keys],
                                     names=names)
        per_key = build.group_by(names).aggregate([([], "count_all")])
        counts = per_key.rename_columns([*names, "__pqe_n"])
        probe = pa.Table.from_arrays([hash_key_floats(left.column(k)) for k in left_keys]
                                     + [pa.array(np.arange(n, dtype=np.int64))],
                                     names=[*names, "__pqe_row"])
        matched = probe.join(counts, keys=names, join_type="inner")
    except pa.ArrowException:
        return None
    rows = np.zeros(n, dtype=np.int64)
    rows[matched.column("__pqe_row").to_numpy()] = matched.column("__pqe_n").to_numpy()
    return rows


# keys sampled from a build to estimate its most repeated key's rows
KEY_SAMPLE = 1 << 16
# (id(build), keys) -> (a weak reference to the build, the estimate): a broadcast build is
# probed by every partition of the query, sampled once
_MOST: dict = {}
_MOST_LOCK = threading.Lock()


def _most_repeated(right: pa.Table, keys: tuple, sample_rows: int = KEY_SAMPLE) -> float:
    """The rows of the build's most repeated key, estimated from `sample_rows` evenly spaced
    rows (exact for smaller builds): a hot key shows in any such sample."""
    slot = (id(right), keys, sample_rows)
    with _MOST_LOCK:
        hit = _MOST.get(slot)
    if hit is not None and hit[0]() is right:
        return hit[1]
    n = right.num_rows
    sample = right.select(list(keys))
    if n > sample_rows:
        sample = sample.take(np.linspace(0, n - 1, sample_rows).astype(np.int64))
    names = [f"__pqe_k{i}" for i in range(len(keys))]
    sample = pa.Table.from_arrays([hash_key_floats(c) for c in sample.columns], names=names)
    counts = sample.group_by(names).aggregate([([], "count_all")]).column("count_all")
    most = (pc.max(counts).as_py() or 0) * n / sample.num_rows
    with _MOST_LOCK:
        for k in [k for k, v in _MOST.items() if v[0]() is None]:
            del _MOST[k]  # (builds of finished queries)
        _MOST[slot] = (weakref.ref(right), most)
    return most


_BUILD_ROW = "__pqe_build_row"
_PROBE_ROW = "__pqe_probe_row"


def _nested_payload(t: pa.Table, keys) -> list[str]:
    """A side's non-key columns of nested types (Acero's hash join refuses them)."""
    keys = set(keys)
    return [f.name for f in t.schema if f.name not in keys and pa.types.is_nested(f.type)]
# a build column of more bytes than this stays in the hash table (one array of it could
# pass the 2 GiB of 32-bit text offsets)
_BY_REFERENCE_BYTES = 1 << 30


def _by_reference(right: pa.Table, right_keys, kind: str, residual, out_ids) -> list[str]:
    """The build side's text and binary columns the output needs, to carry by row number
    instead of through Acero's hash table, which copies every payload value into its row
    format, once per probing partition of a broadcast build: joining on the keys and a row
    number, then taking the matched rows' values, halved the join of TPC-H q10's customer
    columns (57k build rows, 370k probes per partition). Not under a residual filter, which
    may read them inside the join."""
    if residual is not None or kind not in ("inner", "left", "right", "full"):
        return []
    keys, wanted = set(right_keys), set(out_ids)
    return [c for c, f in zip(right.column_names, right.schema, strict=True)
            if c in wanted and c not in keys and _variable_width(f.type)
            and right.column(c).nbytes <= _BY_REFERENCE_BYTES]


def _variable_width(t: pa.DataType) -> bool:
    # (not string_view: Arrow has no take kernel for it)
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t))


def _taken(out: pa.Table, build: pa.Table, names: list[str], row: str = _BUILD_ROW) -> pa.Table:
    """`out` with the build columns `names` taken at its build row numbers (NULL where a
    LEFT or FULL join matched no build row), chunk by chunk of the output. (Or the probe
    side's, at its row numbers in `row`.)"""
    rows = out.column(row)
    for name in names:
        col = build.column(name)
        values = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        out = out.append_column(pa.field(name, col.type),
                                pa.chunked_array([values.take(ch) for ch in rows.chunks], col.type))
    return out


def _null_aware_anti(left, right, left_keys, right_keys, out_ids):
    """x NOT IN (subquery): no rows if the subquery yields a NULL; a NULL x is dropped unless
    the subquery is empty."""
    if right.num_rows == 0:
        return left.select(list(out_ids))
    if any(right.column(k).null_count for k in right_keys):
        return left.slice(0, 0).select(list(out_ids))
    mask = None
    for k in left_keys:
        valid = pc.is_valid(left.column(k))
        mask = valid if mask is None else pc.and_(mask, valid)
    left, right, null_ids = _without_null_types(left.filter(mask), right, left_keys, right_keys)
    left, right, left_keys, right_keys = _match_keys(left, right, left_keys, right_keys)
    right = right.select(list(right_keys))
    full_left, left_ref = left, _nested_payload(left, left_keys)
    if left_ref:
        left = left.drop_columns(left_ref).append_column(
            _PROBE_ROW, pa.array(np.arange(left.num_rows, dtype=np.int64)))
    opts = ac.HashJoinNodeOptions("left anti", list(left_keys), list(right_keys))
    decl = ac.Declaration("hashjoin", opts, inputs=[_source(left), _source(right)])
    out = decl.to_table(use_threads=False)
    if left_ref:
        out = _taken(out, full_left, [c for c in left_ref if c in out_ids], _PROBE_ROW)
    return _with_null_types(out, out_ids, null_ids)


ROW_ID = "__pqe_row_id"


def with_row_ids(table: pa.Table) -> pa.Table:
    return table.append_column(ROW_ID, pa.array(np.arange(table.num_rows, dtype=np.int64)))


def matched_row_ids(probe: pa.Table, build: pa.Table, probe_keys, build_keys, residual) -> pa.Table:
    """Ids of the (small) build rows that match some row of this (big) probe partition."""
    if probe.num_rows == 0 or build.num_rows == 0:
        return pa.table({ROW_ID: pa.array([], pa.int64())})
    probe, build, _ = _without_null_types(probe, build, probe_keys, build_keys)
    probe, build, probe_keys, build_keys = _match_keys(probe, build, probe_keys, build_keys)
    probe = probe.drop_columns(_nested_payload(probe, probe_keys))  # (only ids come out)
    build = build.drop_columns(_nested_payload(build, build_keys))
    opts = ac.HashJoinNodeOptions("right semi", list(probe_keys), list(build_keys),
                                  filter_expression=residual)
    decl = ac.Declaration("hashjoin", opts, inputs=[_source(probe), _source(build)])
    return decl.to_table(use_threads=False).select([ROW_ID])


_VALUE = "__pqe_value"


def matched_row_ids_by_extremes(probe: pa.Table, build: pa.Table, probe_keys, build_keys,
                                value, fns, residual) -> pa.Table:
    """`matched_row_ids` for a condition that compares an expression of the build row with
    one of the probe row, `value` (compiled), and otherwise reads the build row only
    (plan.extremes): the probe rows whose keys the build side holds, grouped by key with
    the `fns` (min, max) of their value, are what the build rows meet, one row per key, under
    `residual` (which reads those extremes as EXTREME_PREFIX + fn). Checking the pairs costs
    (build rows) x (probe rows) of each key: 2,000 build rows on a key 200,000 probe rows
    hold were 400M pairs (2.4 s); grouped, the probe rows are hashed twice and the build rows
    meet one row each. MIN/MAX skip NULL values as the comparison does (a NULL compares to
    nothing), and a key group of NULL values only has NULL extremes."""
    if probe.num_rows == 0 or build.num_rows == 0:
        return pa.table({ROW_ID: pa.array([], pa.int64())})
    # (decoded: Acero groups a dictionary column chunk by chunk, and compares the extremes
    # with the build's columns in the residual, which must be of the same type)
    build = decoded(build, build.column_names)
    probe, build, probe_keys, build_keys = _match_keys(probe, build, probe_keys, build_keys)
    values = ac.Declaration.from_sequence([_source(probe), ac.Declaration(
        "project", ac.ProjectNodeOptions([pc.field(k) for k in probe_keys] + [value],
                                         [*probe_keys, _VALUE]))]).to_table(use_threads=False)
    values = decoded(values, values.column_names)
    held = ac.Declaration("hashjoin", ac.HashJoinNodeOptions(
        "left semi", list(probe_keys), list(build_keys)),
        inputs=[_source(values), _source(build.select(list(build_keys)))])
    groups = ac.Declaration("aggregate", ac.AggregateNodeOptions(
        [(_VALUE, "hash_" + fn, None, EXTREME_PREFIX + fn) for fn in fns],
        keys=list(probe_keys)), inputs=[held]).to_table(use_threads=False)
    # the groups (at most one per build key) are hashed, the build rows probe them
    opts = ac.HashJoinNodeOptions("left semi", list(build_keys), list(probe_keys),
                                  filter_expression=residual)
    decl = ac.Declaration("hashjoin", opts, inputs=[_source(build), _source(groups)])
    return decl.to_table(use_threads=False).select([ROW_ID])


def semi_from_ids(left: pa.Table, matched: list[pa.Table], kind: str, out_ids) -> pa.Table:
    """The semi (or anti) join result from the ids of left rows matched anywhere."""
    # the ids are left's row numbers (with_row_ids): mark them in a mask, duplicates and all
    mask = np.zeros(left.num_rows, dtype=bool)
    for t in matched:
        if t.num_rows:
            mask[t.column(ROW_ID).to_numpy()] = True
    if kind == "anti":
        mask = ~mask
    return left.filter(pa.array(mask)).select(list(out_ids))


def unmatched_rows(left: pa.Table, matched: list[pa.Table], out_ids, nulls) -> pa.Table:
    """The rows of `left` (with row ids) whose ids no table of `matched` holds, with the
    columns `nulls` ((id, type) pairs: the other side of a LEFT join) all NULL."""
    rows = semi_from_ids(left, matched, "anti", [c for c in left.column_names if c != ROW_ID])
    for cid, dtype in nulls:
        rows = rows.append_column(pa.field(cid, dtype), pa.nulls(rows.num_rows, dtype))
    return rows.select(list(out_ids))


BLOCK_PAIRS = 1 << 20


def nested_loop_join(left: pa.Table, right: pa.Table, kind: str, residual, out_ids,
                     needed=None, band=None, on_band="residual") -> pa.Table:
    """Every left row against every right row, in blocks of at most BLOCK_PAIRS pairs.

    `needed`: the columns `residual` reads (None: all). A block's pairs are made of those
    columns only; the output columns are taken once, for the matched pairs (a semi or anti
    join takes none): making every pair of every column first cost ~22 ns a pair, most of it
    copying payload that the condition then dropped.

    `band` (kernels.band.Band, with a residual that holds its bounds): only the pairs whose
    key lies within its bounds are made (the sorted key searched for each row's bounds), and
    `on_band` (by default the residual; the planner leaves out bounds that hold exactly for
    those pairs) is evaluated on those."""
    nl, nr = left.num_rows, right.num_rows
    left_ids = [i for i in left.column_names]
    right_ids = [i for i in right.column_names]
    if kind in ("semi", "anti") and residual is None:
        keep = (nr > 0) == (kind == "semi")
        return (left if keep else left.slice(0, 0)).select(list(out_ids))
    if residual is None and nr == 1 and kind in ("inner", "left"):
        zeros = pa.array(np.zeros(nl, dtype=np.int64))
        cols = {c: left.column(c) for c in left_ids}
        for c in right_ids:
            cols[c] = right.column(c).take(zeros)
        return pa.table(cols).select(list(out_ids))
    if residual is None:
        needed = set()
    lneed = [c for c in left_ids if needed is None or c in needed]
    rneed = [c for c in right_ids if needed is None or c in needed]
    if kind in ("semi", "anti") and residual is not None and nr > 0:
        groups = _repeated_rows(left, lneed)
        if groups is not None:
            # a semi or anti join decides a left row by the columns the condition reads:
            # each distinct combination of them meets the right rows once (a correlated
            # NOT IN over a join's 441k rows that repeated 2,600 combinations: 210M pairs,
            # 6.2 s), and its verdict goes to every row that holds it
            first, inverse = groups
            reps = left.select(lneed).take(pa.array(first)).append_column(
                _GROUP_ROW, pa.array(np.arange(len(first), dtype=np.int64)))
            hit = nested_loop_join(reps, right, "semi", residual, [_GROUP_ROW],
                                   needed, band, on_band)
            won = np.zeros(len(first), dtype=bool)
            won[hit.column(_GROUP_ROW).to_numpy()] = True
            mask = won[inverse] if kind == "semi" else ~won[inverse]
            return left.filter(pa.array(mask)).select(list(out_ids))
    # each side's chunks joined once: Arrow's take of a chunked column concatenates its
    # chunks first, which every block's take (and the last one) did again
    left, right = _one_chunk(left), _one_chunk(right)
    lis, ris = [], []
    blocks = None
    if band is not None and residual is not None:
        blocks = pair_blocks(left, right, band, BLOCK_PAIRS) if isinstance(band, Band) else \
            _or_blocks(left, right, band)
        if blocks is not None and isinstance(band, Band) and on_band != "residual":
            residual = on_band
    for li, ri in blocks if blocks is not None else _cross_blocks(nl, nr):
        # a cancelled or timed-out query stops here, block by block: 400M pairs ran on for
        # minutes after the timeout (on a cluster the worker then held later queries)
        check_cancelled()
        if residual is None:
            lis.append(pa.array(li))
            ris.append(pa.array(ri))
            continue
        pairs = {c: left.column(c).take(pa.array(li)) for c in lneed}
        for c in rneed:
            pairs[c] = right.column(c).take(pa.array(ri))
        pairs["__li"] = pa.array(li)
        pairs["__ri"] = pa.array(ri)
        t = filter_table(pa.table(pairs), residual)
        lis.append(t.column("__li").combine_chunks())
        ris.append(t.column("__ri").combine_chunks())
    li_all = pa.chunked_array(lis, pa.int64())
    ri_all = pa.chunked_array(ris, pa.int64())
    all_pairs = None
    if kind not in ("semi", "anti") and lis:
        lset = set(left_ids)
        all_pairs = pa.Table.from_arrays(
            [left.column(c).take(li_all) if c in lset else right.column(c).take(ri_all)
             for c in out_ids], names=list(out_ids))
    matched = None  # the left rows some pair kept: what semi, anti, left and full joins read
    if kind != "inner":
        matched = pc.unique(li_all.combine_chunks()) if lis else pa.array([], pa.int64())
    if kind == "semi":
        rows = np.sort(matched.to_numpy(zero_copy_only=False))  # keep the left order
        return left.take(pa.array(rows, pa.int64())).select(list(out_ids))
    if kind == "anti":
        mask = pc.invert(pc.is_in(pa.array(np.arange(nl, dtype=np.int64)), value_set=matched))
        return left.filter(mask).select(list(out_ids))
    out = all_pairs if all_pairs is not None else _empty(left, right, out_ids)
    if kind in ("left", "full"):
        mask = pc.invert(pc.is_in(pa.array(np.arange(nl, dtype=np.int64)), value_set=matched))
        lost = left.filter(mask)
        out = pa.concat_tables([out, _pad(lost, right, out_ids)], promote_options="default")
    if kind == "full":
        rmatched = pc.unique(ri_all.combine_chunks()) if lis else pa.array([], pa.int64())
        rmask = pc.invert(pc.is_in(pa.array(np.arange(nr, dtype=np.int64)), value_set=rmatched))
        lost = right.filter(rmask)
        out = pa.concat_tables([out, _pad(lost, left, out_ids)], promote_options="default")
    return out


def _or_blocks(left: pa.Table, right: pa.Table, keys: OrKeys):
    """(left rows, right rows) of the pairs some OR term's equalities hold for: one hash join
    per term on its keys (NULL keys match nothing, floats as SQL compares them), each pair
    once, a block of about BLOCK_PAIRS pairs at a time."""
    lis, ris = [], []
    for term in keys.terms:
        # (keys renamed: one column may stand in two equalities of a term)
        lk = [f"__pqe_l{i}" for i in range(len(term))]
        rk = [f"__pqe_r{i}" for i in range(len(term))]
        lt = pa.table({**{n: left.column(a) for n, (a, _) in zip(lk, term, strict=True)},
                       "__pqe_li": pa.array(np.arange(left.num_rows, dtype=np.int64))})
        rt = pa.table({**{n: right.column(b) for n, (_, b) in zip(rk, term, strict=True)},
                       "__pqe_ri": pa.array(np.arange(right.num_rows, dtype=np.int64))})
        pairs = hash_join(lt, rt, "inner", lk, rk, None, ["__pqe_li", "__pqe_ri"])
        lis.append(pairs.column(0).to_numpy())
        ris.append(pairs.column(1).to_numpy())
    for side, term in keys.side_terms:
        # every row of the other side with each row of this side the term holds for
        mine, other = (left, right) if side == "left" else (right, left)
        held = filter_table(mine.append_column("__pqe_row", pa.array(
            np.arange(mine.num_rows, dtype=np.int64))), Compiler().stages(term))
        rows = held.column("__pqe_row").to_numpy()
        these = np.repeat(rows, other.num_rows)
        those = np.tile(np.arange(other.num_rows, dtype=np.int64), len(rows))
        lis.append(these if side == "left" else those)
        ris.append(those if side == "left" else these)
    li = np.concatenate(lis) if lis else np.empty(0, np.int64)
    ri = np.concatenate(ris) if ris else np.empty(0, np.int64)
    if len(keys.terms) + len(keys.side_terms) > 1 and len(li):
        # a pair two terms give comes once: ordered by left then right row, repeats dropped
        order = np.lexsort((ri, li))
        li, ri = li[order], ri[order]
        first = np.ones(len(li), dtype=bool)
        first[1:] = (li[1:] != li[:-1]) | (ri[1:] != ri[:-1])
        li, ri = li[first], ri[first]
    for start in range(0, len(li), BLOCK_PAIRS):
        yield li[start:start + BLOCK_PAIRS], ri[start:start + BLOCK_PAIRS]


def _cross_blocks(nl: int, nr: int):
    """(left rows, right rows) of every pair, a block of about BLOCK_PAIRS pairs at a time."""
    block = max(1, BLOCK_PAIRS // max(nr, 1))
    for start in range(0, nl, block):
        stop = min(nl, start + block)
        yield (np.repeat(np.arange(start, stop, dtype=np.int64), nr),
               np.tile(np.arange(nr, dtype=np.int64), stop - start))


_GROUP_ROW = "\x00group_row"
# semi/anti nested-loop joins group the left rows when this many or more share each
# combination of the read columns, on average (the grouping costs a sort of the rows)
REPEAT_FACTOR = 4


def _repeated_rows(t: pa.Table, cols: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """(the first row of each distinct combination of `cols`, each row's combination) when
    the rows repeat combinations REPEAT_FACTOR-fold or more, else None. Exact combinations
    only: NULL is a value, and columns whose equal values may differ (floats: -0.0 and 0.0,
    NaNs; nested types) are not grouped."""
    n = t.num_rows
    if n < 2 * REPEAT_FACTOR or not cols:
        return None
    for c in cols:
        typ = t.schema.field(c).type
        if pa.types.is_dictionary(typ):
            typ = typ.value_type
        if not (pa.types.is_integer(typ) or pa.types.is_string(typ)
                or pa.types.is_large_string(typ) or pa.types.is_boolean(typ)
                or pa.types.is_date(typ) or pa.types.is_timestamp(typ)
                or pa.types.is_decimal(typ) or pa.types.is_binary(typ)):
            return None
    codes = combination_codes((t.column(c) for c in cols), limit=n // REPEAT_FACTOR)
    if codes is None:
        return None  # (too many combinations)
    first = np.unique(codes, return_index=True)[1]  # (the codes are dense: 0..k-1)
    return first.astype(np.int64), codes


def _one_chunk(t: pa.Table) -> pa.Table:
    if not any(c.num_chunks > 1 for c in t.columns):
        return t
    try:
        return t.combine_chunks()
    except (pa.ArrowInvalid, pa.ArrowCapacityError):  # (text past 2 GiB in one column)
        return t


def _empty(left, right, out_ids):
    fields = [left.schema.field(c) if c in left.column_names else right.schema.field(c) for c in out_ids]
    return pa.schema(fields).empty_table()


def _pad(rows: pa.Table, other: pa.Table, out_ids) -> pa.Table:
    """`rows` with NULL columns for `other`'s columns, in out_ids order."""
    cols = []
    for c in out_ids:
        if c in rows.column_names:
            cols.append(rows.column(c))
        else:
            cols.append(pa.nulls(rows.num_rows, other.schema.field(c).type))
    return pa.Table.from_arrays(cols, names=list(out_ids))
