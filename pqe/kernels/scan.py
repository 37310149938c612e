"""Reading partitions: Parquet row groups through pyarrow.dataset, in-memory slices.

Text is read as `string`: the dataset is opened with the engine schema, which makes the
Parquet reader decode text straight into `string` (about 5x faster than `string_view`).
pyarrow.dataset cannot compare such a column with a string literal when the file stores
`string_view` ("equal(string, string_view)"), so in pushed filters those columns are wrapped
in an explicit cast, which the scanner evaluates on the decoded batch.
"""

from __future__ import annotations

import bisect
import collections
import contextlib
import re
import threading
import weakref

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import types as T
from ..catalog import CONVERTED_VIEW, ScanUnit, csv_codec, csv_source, partition_expression
from ..errors import CatalogError, DataValueError, ExecutionError
from ..filesystems import _first_line
from ..plan.expr import Call, ColumnRef, Expr, Literal, and_, column_ids, may_raise
from ..physical.planner import statistics_filters
from . import decimals, dense_join
from .expressions import Compiler, filter_table, project


def _text_casts(provider, names: dict[str, str]) -> dict[str, pa.DataType]:
    """Columns (by id) whose file type differs from the engine type, with the engine type."""
    out = {}
    phys = provider.physical_schema
    for cid, name in names.items():
        idx = phys.get_field_index(name)
        if idx < 0:
            continue
        ft = phys.field(idx).type
        eng = provider.schema.field(name).type
        if ft != eng:
            out[cid] = eng
    return out


def extension_columns(provider, columns) -> set[str]:
    """The ids of the (name, id) `columns` stored in an Arrow extension type or as a DURATION:
    converted after reading (a filter on one runs after the conversion, not in the scanner)."""
    phys = getattr(provider, "physical_schema", None)
    if phys is None:
        return set()
    out = set()
    cast = getattr(provider, "cast_columns", ())  # (a CSV's typed columns: _read_csv)
    for name, cid in columns:
        idx = phys.get_field_index(name)
        if idx >= 0 and (isinstance(phys.field(idx).type, pa.BaseExtensionType)
                         or pa.types.is_duration(phys.field(idx).type) or name in cast
                         or CONVERTED_VIEW in (phys.field(idx).metadata or {})):
            out.add(cid)
    return out


def pruning_expression(provider, filters: tuple[Expr, ...], names: dict[str, str]):
    """The scan filter as a pyarrow.dataset expression over file column names (or None)."""
    pred = and_(filters)
    if pred is None:
        return None
    return Compiler(_text_casts(provider, names), rename=names)(pred)


def key_range(build, key: str) -> tuple:
    """(min, max) of a join build's key column (a table, or a dense index over one), as Python
    values; (None, None) when it has no non-NULL key, so nothing can match."""
    table = getattr(build, "table", build)
    if table.num_rows == 0:
        return None, None
    mm = pc.min_max(table.column(key))
    return mm["min"].as_py(), mm["max"].as_py()


# a join build of at most this many rows prunes a probe scan's units by its distinct keys, not
# only by their [min, max] (key_set)
SET_PRUNE_ROWS = 4096


def key_set(build, key: str) -> list | None:
    """The distinct non-NULL keys of a small join build (at most SET_PRUNE_ROWS rows), sorted,
    as Python values; None for a larger build. A unit of a scan clustered by the key is read
    only when one of them falls in its range (`meets_any`): five keys spread over the range,
    whose [min, max] covers every unit, still meet only a few (TPC-DS Q25's store_sales
    against 5 ticket numbers: 5 of 19 row groups, as DuckDB prunes by an IN list)."""
    table = getattr(build, "table", build)
    if table.num_rows > SET_PRUNE_ROWS:
        return None
    values = pc.unique(table.column(key).combine_chunks().drop_null())
    try:
        return sorted(values.to_pylist())
    except TypeError:  # (values that do not order: keep to the range)
        return None


def meets_any(keys: list, span: tuple) -> bool:
    """Whether a sorted list of keys holds one in [span[0], span[1]]."""
    try:
        i = bisect.bisect_left(keys, span[0])
        return i < len(keys) and keys[i] <= span[1]
    except TypeError:  # (a key and a bound that do not compare: the unit may hold it)
        return True


def range_filters(field, lo, hi, whole: tuple, share: float) -> list[Expr]:
    """`field >= lo AND field <= hi` (the sides that narrow the column's range `whole`) when
    [lo, hi] is at most `share` of `whole`, else nothing. Integers and dates."""
    if lo is None or hi is None:
        return []

    def num(v) -> int:
        return v.toordinal() if hasattr(v, "toordinal") else int(v)

    try:
        lo = pa.scalar(lo).cast(field.dtype).as_py()
        hi = pa.scalar(hi).cast(field.dtype).as_py()
        wlo, whi = num(whole[0]), num(whole[1])
        width = whi - wlo
        if width <= 0 or num(hi) - num(lo) > share * width:
            return []
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError, ValueError, OverflowError):
        return []
    ref = ColumnRef(field)
    out = []
    if num(lo) > wlo:
        out.append(Call("ge", (ref, Literal(lo, field.dtype)), T.BOOLEAN, field.nullable))
    if num(hi) < whi:
        out.append(Call("le", (ref, Literal(hi, field.dtype)), T.BOOLEAN, field.nullable))
    return out


def read_files(provider, units, columns: tuple[tuple[str, str], ...],
               filters: tuple[Expr, ...], out_ids: tuple[str, ...],
               dict_columns: tuple[str, ...] = (), encoded: tuple[str, ...] = (),
               nested: tuple[tuple[str, tuple[str, ...]], ...] = (),
               threads: bool = False, members: tuple = ()) -> pa.Table:
    """All of `units` read as one table (see iter_read_files)."""
    (t,) = iter_read_files(provider, units, columns, filters, out_ids, dict_columns, encoded,
                           nested, threads=threads, members=members)
    return t


def chunk_units(units, chunk_rows: int) -> list[tuple]:
    """Consecutive runs of units of about `chunk_rows` rows each (a unit is never split).
    One read per run: a read costs ~5 ms of its own (opening the file, the scanner), and
    row groups read one at a time through one scanner (Fragment.to_batches) held more memory
    than runs read whole (SF10 Q1: 775 MiB against 540)."""
    chunks, cur, rows = [], [], 0
    for u in units:
        cur.append(u)
        rows += u.num_rows
        if rows >= chunk_rows:
            chunks.append(tuple(cur))
            cur, rows = [], 0
    if cur:
        chunks.append(tuple(cur))
    return chunks or [()]


def iter_read_files(provider, units, columns: tuple[tuple[str, str], ...],
                    filters: tuple[Expr, ...], out_ids: tuple[str, ...],
                    dict_columns: tuple[str, ...] = (), encoded: tuple[str, ...] = (),
                    nested: tuple[tuple[str, tuple[str, ...]], ...] = (),
                    chunk_rows: int | None = None, threads: bool = False,
                    members: tuple = ()):
    """Read some row groups of a Parquet table (or whole files of a CSV table): file columns
    `columns` ((name, id) pairs), filtered, renamed to ids, restricted to `out_ids`.

    `dict_columns` are low-cardinality text columns read as dictionaries: a filter on one of
    them alone is evaluated once per distinct value and mapped to the rows through the
    dictionary indices; the ones in `out_ids` are decoded to text after all filters, so only
    the surviving rows are materialized, except `encoded` ones, returned as dictionaries to an
    aggregate that groups by them (kernels.aggregate decodes its few output keys).

    `nested` struct columns are read as the named children only (pyarrow.dataset projects
    the nested fields: no other leaf is decoded) and rebuilt with the other children NULL.

    Yields one table for all the units, or with `chunk_rows` one per run of units of about
    that many rows (chunk_units), each filtered and decoded alone: a task that consumes them
    one at a time holds one chunk's decoded columns, not the partition's. With `threads` the
    columns are decoded on Arrow's threads (for a task reading while others of its scan are
    idle); otherwise on the task's own, beside the other tasks.

    `members` are the key pushdowns of broadcast joins above (physical.planner._key_pushdown):
    (a dense index or key filter, the file column of each key position). A read with
    dictionary or decimal filters keeps only the rows whose key the build has, in the pass
    of those filters (one copy of the rows they all keep, where the join's drop was a
    second; the decimal conversions made on fewer rows). Each join still matches its keys:
    these drop only rows it would drop."""
    names = {cid: name for name, cid in columns}
    dict_ids = {cid for name, cid in columns if name in dict_columns}
    # filters on float columns run after reading: the scanner trusts row-group statistics,
    # whose min/max leave NaN out (NaN rows of `f = 'nan'` or `f > 2` would be skipped)
    # nor a filter on a column of an extension type (JSON, bool8, UUID): the scanner
    # evaluates it on the column as stored, before its cast to the engine type
    extension = extension_columns(provider, columns)
    safe = {f for f in statistics_filters(filters) if not column_ids(f) & extension}
    late = [f for f in filters if f not in safe]
    filters = [f for f in filters if f in safe]
    # a filter that may raise (-c0, a checked cast) runs last, on the rows every other filter
    # kept (`WHERE s = 'x' AND -c0 < 5` never negates a row of another s), as SQL's AND would
    raising = [f for f in (*filters, *late) if may_raise(f)]
    late = [f for f in late if f not in raising] + raising
    filters = [f for f in filters if f not in raising]
    dict_filters = [f for f in filters if column_ids(f) and column_ids(f) <= dict_ids]
    mixed = [f for f in filters if f not in dict_filters and column_ids(f) & dict_ids] + late
    rest = [f for f in filters if not column_ids(f) & dict_ids]
    # decimal comparisons run after reading, on unscaled int64 (Arrow's decimal128 kernels are
    # slow) and on the rows the dictionary filters kept; the others run inside the scanner
    decimal_filters = [f for f in rest if decimals.int64_filter(f, names) is not None]
    plain_filters = tuple(f for f in rest if f not in decimal_filters)
    combined_decimal = decimals.int64_filter(and_(decimal_filters), names) if decimal_filters else None
    if combined_decimal is None:  # each alone compiles; together they must run in the scanner
        plain_filters += tuple(decimal_filters)
        decimal_filters = []
    # key pushdowns where they save a pass over the rows: a dictionary filter's copy (made
    # once for both), a decimal filter's conversions (made on fewer rows); a plain filter,
    # in the scanner or after, copies once either way, and the join drops its rows as
    # cheaply itself (planner._key_pushdown)
    members = tuple(m for m in members if not nested and (dict_filters or decimal_filters))
    kids = dict(nested)
    after = set(out_ids) | {c for f in (*dict_filters, *decimal_filters, *mixed)
                            for c in column_ids(f)}
    # a filter on a nullable column runs on each read's table, as a mask made by one Acero
    # projection and one filter of the table (expressions._filtered): inside the scanner it
    # took 4x as long as the read itself (TPC-DS Q82's inventory, 2 row groups, `0 <=
    # inv_quantity_on_hand <= 500`: 101 against 50 ms after the read; on a column without
    # NULLs the scanner's filter costs the same as that, TPC-H Q1). So do all filters of a
    # read that filters decimals after it anyway, in the same pass: the scanner's filter
    # copied the decimal128 columns the decimal filter then copied again (TPC-H Q6: 0.45 ->
    # 0.37 CPU-s). Except one that
    # reads a variable-width column nothing else needs (o_comment in TPC-H Q13): inside the
    # scanner that column is decoded batch by batch and never held (holding it for the
    # partition doubled Q13's memory at SF10); a fixed-width one is read with the others and
    # dropped after the filter. A small read (a dimension table) keeps the scanner's filter,
    # which costs less than the projection's fixed cost there
    nullable = {cid for name, cid in columns
                if decimal_filters or provider.schema.field(name).nullable} \
        if sum(u.num_rows or 0 for u in units) >= POST_FILTER_ROWS else set()
    wide = {cid for name, cid in columns if cid not in after
            and not T.is_fixed_width(provider.schema.field(name).type)}
    inside = tuple(f for f in plain_filters if column_ids(f) & wide
                   or not column_ids(f) & nullable) if not kids else plain_filters
    if provider.kind == "csv":
        # a CSV file is read whole, then filtered (_read_csv), but for filters on hive
        # partition columns alone, which keep a file's every row or none
        files = set(getattr(provider, "_file_names", None) or ())
        inside = tuple(f for f in inside if not {names[c] for c in column_ids(f)} & files)
    after_read = [f for f in plain_filters if f not in inside]
    if decimal_filters and after_read:
        # one mask and one filter pass for both: each pass copies every column it keeps
        both = decimals.int64_filter(and_([*after_read, *decimal_filters]), names)
        if both is not None:
            combined_decimal, decimal_filters = both, [*after_read, *decimal_filters]
            after_read = []
    after |= {c for f in (*after_read, *decimal_filters) for c in column_ids(f)}
    expr = pruning_expression(provider, inside, names)
    read_filter = Compiler(_text_casts(provider, names), rename=names, share=True).stages(
        and_(after_read)) if after_read else None
    if not kids:
        columns = tuple((name, cid) for name, cid in columns if cid in after) or columns[:1]
    read_cols = _nested_projection(columns, kids) if kids else [name for name, _ in columns]
    schema = provider.schema
    if dict_columns:
        schema = _dictionary_schema(schema, dict_columns)
    # UUID columns are read as their 16 bytes (Arrow's cast to text gave the raw bytes) and
    # made their canonical text in `piece`
    uuids = [name for name, cid in columns if cid in extension
             and getattr(provider.physical_schema.field(name).type, "extension_name",
                         None) == "arrow.uuid"]
    for name in uuids:
        schema = schema.set(schema.get_field_index(name), pa.field(name, pa.binary(16)))
    # DURATION columns are read as stored and made INTERVALs in `piece` (Arrow has no cast)
    durations = [name for name, cid in columns if cid in extension
                 and pa.types.is_duration(provider.physical_schema.field(name).type)]
    for name in durations:
        schema = schema.set(schema.get_field_index(name), provider.physical_schema.field(name))
    fmt = provider.file_format(tuple(dict_columns))
    fmt_key = (provider.kind, tuple(dict_columns))  # what file_format depends on
    keep = set(out_ids) | {c for f in mixed for c in column_ids(f)}
    decode = [cid for cid in dict_ids if cid in keep
              and (names[cid] not in encoded or any(cid in column_ids(f) for f in mixed))]
    mixed_filter = Compiler(share=True).stages(and_(mixed)) if mixed else None
    # (on unscaled int64 where it reads decimals that fit: `CAST(price AS DOUBLE) > 0`, a
    # filter statistics cannot decide, took 1.2 s per 1.5M rows through decimal128's text;
    # not a filter that may raise: the int64 form does not guard a cast inside CASE WHEN b
    # THEN CAST(m AS INTEGER) ... by b, the decimal128 path does)
    mixed_int64 = decimals.int64_filter(and_(mixed)) \
        if mixed and not any(may_raise(f) for f in mixed) else None

    def piece(t: pa.Table) -> pa.Table:  # what one read needs before the pieces are joined
        for name in uuids:
            i = t.schema.get_field_index(name)
            if i >= 0:
                col = t.column(i)
                t = t.set_column(i, pa.field(name, pa.string()), pa.chunked_array(
                    [T.uuid_text(c) for c in col.chunks], pa.string()))
        for name in durations:
            i = t.schema.get_field_index(name)
            if i >= 0:
                t = t.set_column(i, pa.field(name, T.INTERVAL), pa.chunked_array(
                    [T.duration_interval(c, name) for c in t.column(i).chunks], T.INTERVAL))
        if kids:
            t = _rebuild_structs(t, columns, kids, provider.schema)
        if read_filter:
            t = filter_table(t, read_filter)
        # the key pushdowns' mask, on the rows the plain filters kept: with dictionary
        # filters, one mask and one copy; before decimal ones, on fewer rows
        hit = dense_join.members_mask(t, members) if members else None
        if dict_filters or hit is not None:
            t = _filter_by_dictionary(t, dict_filters, names, hit)
        if decimal_filters:  # one pass for all of them
            try:
                t = decimals.filter_int64(t, combined_decimal)
            except pa.ArrowInvalid as e:
                # a value the int64 path overflows on (a BIGINT near 2^63 against a DECIMAL
                # scaled up by 10^s): the decimal128 kernels, as operators rerun (decimals)
                if "overflow" not in str(e):
                    raise
                t = filter_table(t, Compiler(_text_casts(provider, names), rename=names,
                                             share=True).stages(and_(decimal_filters)))
        return t

    def whole(tables: list[pa.Table]) -> pa.Table:
        if not tables:
            empty = pa.schema([pa.field(cid, provider.schema.field(name).type)
                               for name, cid in columns])
            return empty.empty_table().select(list(out_ids))
        t = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        t = t.rename_columns([cid for _, cid in columns])
        t = _decode_dictionaries(t, decode, provider, names)
        if mixed_int64 is not None:
            try:
                return decimals.filter_int64(t, mixed_int64).select(list(out_ids))
            except pa.ArrowInvalid:  # (an overflow): the decimal128 kernels say what is wrong
                pass
        if mixed_filter is not None:
            t = filter_table(t, mixed_filter)
        return t.select(list(out_ids))

    for chunk in (chunk_units(units, chunk_rows) if chunk_rows else [units]):
        yield whole([piece(_read_unit(provider, (fmt, fmt_key), unit, row_groups, schema,
                                      read_cols, expr, threads))
                     for unit, row_groups in _by_file(chunk)])


_SEP = "\x1f"  # between a struct column's name and a child's, in the projected names


POST_FILTER_ROWS = 100_000  # reads of fewer rows filter inside the scanner (see above)


def _nested_projection(columns, kids: dict) -> dict:
    """The dataset projection: each column by name, the children of `kids`' structs alone."""
    out = {}
    for name, _ in columns:
        if name in kids:
            for k in kids[name]:
                out[name + _SEP + k] = pc.field(name, k)
        else:
            out[name] = pc.field(name)
    return out


def _rebuild_structs(t: pa.Table, columns, kids: dict, schema: pa.Schema) -> pa.Table:
    """The columns in order, each struct of `kids` rebuilt whole from its read children and
    NULL ones for the others (the struct's type is unchanged; the query reads no other)."""
    cols = []
    for name, _ in columns:
        if name not in kids:
            cols.append(t.column(name))
            continue
        st = schema.field(name).type
        arrays = [t.column(name + _SEP + f.name).combine_chunks() if f.name in kids[name]
                  else pa.nulls(t.num_rows, f.type) for f in st]
        arrays = [a.cast(f.type) if a.type != f.type else a for a, f in zip(arrays, st, strict=True)]
        cols.append(pa.StructArray.from_arrays(arrays, fields=list(st)))
    return pa.Table.from_arrays(cols, names=[name for name, _ in columns])


def _decode_dictionaries(t: pa.Table, ids, provider, names) -> pa.Table:
    for cid in ids:
        i = t.schema.get_field_index(cid)
        t = t.set_column(i, cid, pc.cast(t.column(i), provider.schema.field(names[cid]).type))
    return t


def _dictionary_schema(schema: pa.Schema, dict_columns) -> pa.Schema:
    return pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), pa.string()), f.nullable)
                      if f.name in dict_columns else f for f in schema])


# a filter over several dictionary columns is evaluated on every combination of their values
# when there are at most this many (TPC-DS's demographics: 6 x 8 marital and education
# statuses, NULL included); else on the rows, decoded
MAX_DICTIONARY_COMBINATIONS = 1 << 14


def _filter_by_dictionary(t: pa.Table, filters: list[Expr], names: dict[str, str],
                          mask: np.ndarray | None = None) -> pa.Table:
    """Apply filters that read only dictionary columns: evaluate each on the dictionary's
    values plus one NULL (the verdict for NULL rows, `s IS NULL` being true there), then look
    the results up by index; unknown results drop the row. A filter over several columns
    (`(m = 'M' AND e = 'College') OR (m = 'S' AND e = 'Primary')`, TPC-DS Q13/Q48/Q85's
    demographics) is evaluated on every combination of their values, looked up by the
    combination's number. The verdicts are bytes and the lookups numpy gathers, ANDed into
    one mask and the table filtered once (Arrow's gather of packed booleans took as long as
    decoding the columns: TPC-H Q19). `mask`: rows already known to go (a key pushdown's),
    dropped in the same pass."""
    for f in filters:
        cids = sorted(column_ids(f))
        cols = [t.column(names[c]) for c in cids]
        layout = [len(c) for c in cols[0].chunks]
        if len(cids) > 1 and any([len(c) for c in col.chunks] != layout for col in cols[1:]):
            # one chunk each, over one dictionary each
            cols = pa.table({f"c{k}": c for k, c in enumerate(cols)}) \
                .unify_dictionaries().combine_chunks().columns
        compiled = Compiler(rename={c: f"v{k}" for k, c in enumerate(cids)})(f)
        parts = _verdicts_by_chunk(compiled, [[col.chunk(j) for col in cols]
                                              for j in range(cols[0].num_chunks)])
        m = (parts[0] if len(parts) == 1 else np.concatenate(parts)) if parts \
            else np.zeros(0, dtype=bool)
        if mask is None:
            mask = m
        else:
            mask &= m
    if mask is None or mask.all():
        return t
    return t.filter(pa.array(mask))


def _verdicts_by_chunk(compiled, chunks: list[list]) -> list[np.ndarray]:
    """A filter's verdict (NULL: false) for each row of each group of aligned dictionary
    chunks, as bytes. One column's filter is always evaluated on its dictionary (never more
    values than rows), several columns' on every combination of their values, up to
    MAX_DICTIONARY_COMBINATIONS, else on their decoded rows. The dictionaries (combinations)
    of all the chunks are evaluated in one projection: one per chunk cost ~0.4 ms each, most
    of TPC-H Q19's two dictionary filters over 53 row groups."""
    out: list = [None] * len(chunks)
    tables, codes, where = [], [], []
    for j, group in enumerate(chunks):
        values = [pa.concat_arrays([c.dictionary, pa.nulls(1, c.dictionary.type)])
                  for c in group]
        sizes = [len(v) for v in values]
        combos = int(np.prod(sizes, dtype=np.float64))
        if len(group) > 1 and combos > MAX_DICTIONARY_COMBINATIONS:  # on the rows themselves
            out[j] = _verdicts(pa.table({f"v{k}": c.dictionary_decode()
                                         for k, c in enumerate(group)}), compiled)
            continue
        # combination number: the first column's slot varies slowest
        strides = [int(np.prod(sizes[k + 1:], dtype=np.int64)) for k in range(len(sizes))]
        if len(group) == 1:
            tables.append(pa.table({"v0": values[0]}))
        else:
            number = np.arange(combos, dtype=np.int64)
            tables.append(pa.table({f"v{k}": values[k].take(pa.array((number // strides[k])
                                                                      % sizes[k]))
                                    for k in range(len(values))}))
        code = None
        for k, c in enumerate(group):
            indices = c.indices
            if indices.null_count:
                indices = pc.fill_null(indices, pa.scalar(sizes[k] - 1, indices.type))
            idx = indices.to_numpy(zero_copy_only=False)
            part = idx if len(group) == 1 else idx.astype(np.int64) * strides[k]
            code = part if code is None else code + part
        codes.append(code)
        where.append(j)
    if tables:  # (the read's schema gives every chunk's dictionary one value type)
        verdict = _verdicts(pa.concat_tables(tables), compiled)
        base = 0
        for t, code, j in zip(tables, codes, where, strict=True):
            out[j] = np.take(verdict[base:base + t.num_rows], code)
            base += t.num_rows
    return out


def _verdicts(table: pa.Table, compiled) -> np.ndarray:
    verdict = project(table, [compiled], ["m"]).column(0)
    return pc.fill_null(verdict.combine_chunks(), False).to_numpy(zero_copy_only=False)


def _by_file(units):
    """Consecutive units of one file, read together: (first unit, row groups)."""
    groups: list[tuple[ScanUnit, list[int]]] = []
    for u in units:
        if groups and groups[-1][0].path == u.path:
            groups[-1][1].extend(u.row_groups)
        else:
            groups.append((u, list(u.row_groups)))
    return groups


def _read_unit(provider, fmt, unit: ScanUnit, row_groups: list[int], schema: pa.Schema,
               read_cols: list[str], expr, threads: bool = False) -> pa.Table:
    """Open one file (here, in the task: the unit is only a description) and read some of its
    row groups. `fmt` is the format and what it was made from. A local file whose version
    differs from the planned one is an error, not a silent read of other row groups."""
    if provider.kind == "csv":
        return _read_csv(provider, unit, schema, read_cols, expr, threads)
    with _reading(unit, row_groups, schema):
        frag = _fragment(provider, fmt, unit, row_groups)
        rounded = _rounded_columns(frag, schema, read_cols)
        if rounded:
            out = _read_rounding(frag, schema, read_cols, expr, threads, rounded)
        else:
            out = frag.to_table(schema=schema, columns=read_cols, filter=expr,
                                use_threads=threads)
        _still_planned(unit)
        return out


def _rounded_columns(frag, schema: pa.Schema, read_cols: list[str]) -> dict[str, pa.DataType]:
    """The columns to read that this file stores as integers where the table's (unified)
    type is a float: BIGINT in one file, DOUBLE in another (catalog._holds: a float holds
    any number, rounded, as in a UNION of the two)."""
    phys = frag.physical_schema
    out = {}
    for name in read_cols:
        i, j = phys.get_field_index(name), schema.get_field_index(name)
        if i >= 0 and j >= 0 and pa.types.is_integer(phys.field(i).type) \
                and pa.types.is_floating(schema.field(j).type):
            out[name] = phys.field(i).type
    return out


def _read_rounding(frag, schema: pa.Schema, read_cols: list[str], expr, threads: bool,
                   rounded: dict[str, pa.DataType]) -> pa.Table:
    """A read whose integer columns become the table's float type rounded to the nearest
    float, as CAST rounds them: the scanner's own conversion refused an integer past 2^53
    ("Integer value 9007199254740993 not in range"). Its filter runs after the conversion."""
    own = schema
    for name, t in rounded.items():
        own = own.set(own.get_field_index(name), schema.field(name).with_type(t))
    t = frag.to_table(schema=own, columns=read_cols, use_threads=threads)
    for name in rounded:
        i = t.schema.get_field_index(name)
        t = t.set_column(i, schema.field(name), t.column(i).cast(schema.field(name).type,
                                                                  safe=False))
    return t.filter(expr) if expr is not None else t


def _read_csv(provider, unit: ScanUnit, schema: pa.Schema, read_cols: list[str], expr,
              threads: bool) -> pa.Table:
    """A whole CSV file's columns `read_cols`, every row (iter_read_files filters after;
    `expr` filters on hive partition columns only). The columns the schema gives a type are
    read as text and converted by pqe's CAST (`_csv_cast`), but for the types Arrow's
    converter reads as CAST does (numbers, BOOLEAN, DATE: catalog._native_csv_type), which
    it reads unless it refuses a value of the file; and the file is refused when its last
    value runs to the end of the file inside a quote (`_check_closed_quote`)."""
    cast = [n for n in getattr(provider, "cast_columns", ()) if schema.get_field_index(n) >= 0]
    text_schema = schema
    for name in cast:
        i = text_schema.get_field_index(name)
        text_schema = text_schema.set(i, text_schema.field(i).with_type(pa.string()))
    names = getattr(provider, "_file_names", None) or []
    last = names[-1] if names else None
    cols = list(read_cols)
    check = last is not None and T.is_text(text_schema.field(last).type)
    if check and last not in cols:
        cols.append(last)
    native = provider.file_format()
    natively = [n for n in cast if n in cols
                and native.default_fragment_scan_options.convert_options.column_types[n]
                != pa.string()]

    def read(text: bool) -> pa.Table:
        fmt = (provider.file_format(text=text), ("csv", text))
        frag = _fragment(provider, fmt, unit, [])
        typed = text_schema
        for name in ([] if text else natively):
            i = typed.get_field_index(name)
            typed = typed.set(i, schema.field(i))
        return frag.to_table(schema=typed, columns=cols, filter=expr, use_threads=threads)

    with _reading(unit, [], text_schema):
        try:
            t = read(not natively)
        except pa.ArrowInvalid as e:  # a value Arrow's converter refuses: CAST says why
            if not natively or "CSV conversion error" not in str(e):
                raise
            t = read(True)
        _still_planned(unit)
    if check and t.num_rows and pa.types.is_string(t.schema.field(last).type):
        _check_closed_quote(unit, t.column(last))
    for name in cast:
        i = t.schema.get_field_index(name)
        if i >= 0 and name in read_cols and pa.types.is_string(t.schema.field(i).type):
            dst = provider.schema.field(name).type
            t = t.set_column(i, pa.field(name, dst),
                             _csv_cast(unit, name, t.column(i), dst, provider.header))
    return t.select(read_cols)


def _csv_cast(unit: ScanUnit, name: str, text: pa.ChunkedArray, dst: pa.DataType,
              header: bool) -> pa.ChunkedArray:
    """A CSV column's text converted by CAST(text AS dst), the very kernel SQL's CAST runs;
    a value it refuses is a DataValueError naming the file, line, column and type, not the
    value (CSV errors quote no file content; Arrow's CSV converter stored 1000.5 in a
    DECIMAL(5,2) column)."""
    from ..plan.expr import Cast, Field

    ref = ColumnRef(Field("v", "v", pa.string()))
    table = pa.table({"v": text})
    try:
        out = project(table, [Compiler()(Cast(ref, dst))], ["v"]).column(0)
    except (DataValueError, pa.ArrowInvalid) as e:
        tried = project(table, [Compiler()(Cast(ref, dst, try_=True))], ["v"]).column(0)
        failed = pc.and_(pc.is_valid(text), pc.is_null(tried))
        where = f"line {pc.index(failed, True).as_py() + 1 + bool(header)}, " \
            if pc.any(failed).as_py() else ""
        why = (": a backslash escape or a character past ASCII" if T.is_blob(dst) else
               ": not a number, or out of range" if T.is_numeric(dst) else "")
        raise DataValueError(f"reading {unit.path}: {where}column {name!r} holds a value that "
                             f"is not a valid {T.type_name(dst)}{why} (the value is not "
                             f"shown)") from e
    return out if out.type == dst else out.cast(dst)


def _check_closed_quote(unit: ScanUnit, last: pa.ChunkedArray) -> None:
    """A quote left open swallows the rest of the file into one value (Arrow's reader ends
    the value at the end of the file): `2,"abc` then `3,y` and `4,z` read as 2 rows, the
    second's value 'abc\\n3,y\\n4,z\\n'. Only the file's last value can be one (an earlier
    column would leave its row short of columns, which Arrow refuses), and only one that
    holds a line break: it is when the file ends with that value as a quoted field would
    write it, after its opening quote and no closing one. (The file is read again only for
    a last value holding a line break.)"""
    value = last[len(last) - 1].as_py()
    if value is None or ("\n" not in value and "\r" not in value):
        return
    written = ('"' + value.replace('"', '""')).encode()
    with unit.fs.arrow_fs().open_input_stream(unit.fs.fs_path(unit.path),
                                              compression=csv_codec(unit.path)) as stream:
        data = stream.read()
    end = len(data)
    for newline in (b"\r\n", b"\n", b"\r"):
        if data.endswith(newline):
            end -= len(newline)
            break
    quotes = 0
    while quotes < end and data[end - 1 - quotes] == ord('"'):
        quotes += 1
    # (a closed last value ends with an odd run of quotes, its closing one after pairs of
    # escaped ones: a value '\n' is written '"\n"', which also ends with '"' and the value)
    if data.endswith(written) and quotes % 2 == 0:
        line = data.count(b"\n", 0, len(data) - len(written)) + 1
        raise ExecutionError(
            f"reading {unit.path}: a quote opened on line {line} is not closed by the end of "
            f"the file (it would hold every later line as one value)")


def _still_planned(unit: ScanUnit) -> None:
    """A local file checked again after it was read: replaced between the check before the
    read and the open (os.replace of a new file), the read saw the new file, and a query
    mixed old and new rows (sum 500,000 of 400,000 or 800,000), or the new file was read with
    the old one's cached footer."""
    if unit.fs.is_local and unit.version:
        now = _local_version(unit.fs.fs_path(unit.path))
        if now is not None and now != unit.version:
            raise ExecutionError(f"{unit.path} changed while the query read it; run the "
                                 f"query again")


# Parsed footers, per process: a Parquet file's fragment with its complete metadata, per
# (file version, format); a read of some row groups is a subset of it, which shares the
# parsed footer. Without it every read parsed the footer again: TPC-H SF10's lineitem (one
# file, 524 row groups, a 1 MB footer) took 4.4 ms a parse, 7.7 ms of the 13 ms reading two
# columns of 4 row groups, in each of a query's ~120 chunks. Keyed by the file's version, so
# a changed file is parsed anew (and refused: it was planned on the old one).
_FOOTERS: collections.OrderedDict = collections.OrderedDict()
_FOOTERS_LOCK = threading.Lock()
_PARSING: dict = {}  # key -> the lock of the one thread parsing that footer
FOOTER_CACHE_FILES = 256  # (the footers of this many files, least recently used dropped)
# and about this many bytes of serialized footers: parsed, one takes ~7 times its size (that
# 1 MB footer, 7.1 MiB), so at most ~110 MiB of this process
FOOTER_CACHE_BYTES = 16 << 20
_footer_bytes = 0


def _fragment(provider, fmt, unit: ScanUnit, row_groups: list[int]):
    fmt, fmt_key = fmt
    fs = unit.fs.arrow_fs()
    path = unit.fs.fs_path(unit.path)
    if unit.fs.is_local and unit.version:
        now = _local_version(path)
        if now is not None and now != unit.version:
            raise ExecutionError(f"{unit.path} changed after the query was planned; "
                                 "run the query again")
    part = partition_expression(provider.partition_fields, unit.partition) \
        if unit.partition else None
    if provider.kind == "csv":
        source, source_fs = csv_source(unit.fs, unit.path)
        if source_fs is None:  # decompressed into memory
            return fmt.make_fragment(source, None, part)
    if not row_groups:
        return fmt.make_fragment(path, fs, part, file_size=unit.file_size or None)
    if not unit.version:  # nothing tells a changed file apart: parse its footer each time
        return fmt.make_fragment(path, fs, part, row_groups=row_groups,
                                 file_size=unit.file_size or None)
    key = (unit.fs, unit.path, unit.version, unit.file_size, unit.partition, fmt_key)
    with _FOOTERS_LOCK:
        whole = _FOOTERS.get(key)
        if whole is not None:
            _FOOTERS.move_to_end(key)
            return whole.subset(row_group_ids=row_groups)
        parsing = _PARSING.setdefault(key, threading.Lock())
    try:
        with parsing:  # the tasks reading one file at once wait for one parse of its footer
            with _FOOTERS_LOCK:
                whole = _FOOTERS.get(key)
            if whole is None:
                whole = fmt.make_fragment(path, fs, part, file_size=unit.file_size or None)
                whole.ensure_complete_metadata()
                _still_planned(unit)  # (never a replacing file's footer under this version)
                _remember_footer(key, whole)
    finally:
        with _FOOTERS_LOCK:
            _PARSING.pop(key, None)
    return whole.subset(row_group_ids=row_groups)


def _remember_footer(key, fragment) -> None:
    global _footer_bytes
    size = fragment.metadata.serialized_size
    with _FOOTERS_LOCK:
        if key in _FOOTERS:  # another thread parsed it meanwhile
            return
        _FOOTERS[key] = fragment
        _footer_bytes += size
        while len(_FOOTERS) > 1 and (len(_FOOTERS) > FOOTER_CACHE_FILES
                                     or _footer_bytes > FOOTER_CACHE_BYTES):
            _, old = _FOOTERS.popitem(last=False)
            _footer_bytes -= old.metadata.serialized_size


@contextlib.contextmanager
def _reading(unit: ScanUnit, row_groups: list[int], schema: pa.Schema | None = None):
    """Errors of reading `unit` as one ExecutionError naming the file (and, for a CSV value
    its column's type does not take, the column and how to give its type)."""
    where = f" (row groups {row_groups})" if row_groups else ""
    try:
        yield
    except ExecutionError:
        raise
    except FileNotFoundError as e:
        # (or it was never there for this process: a cluster worker that does not share the
        # client's file system; the answer was right or this error, by where a task ran)
        raise ExecutionError(f"reading {unit.path}: the file no longer exists, or the process "
                             f"reading it cannot see it (on a cluster every worker must "
                             f"reach the path)") from e
    except (OSError, pa.ArrowException, CatalogError) as e:
        hint = "" if unit.fs.is_local else " (was the object changed after planning?)"
        line = _first_line(e)
        column = re.search(r"In CSV column #(\d+)", line)
        if column and schema is not None and "conversion error" in line:
            i = int(column.group(1))
            if i < len(schema):
                name = schema.field(i).name
                hint = (f" (column {name!r} is read as {schema.field(i).type}, inferred from "
                        f"the first block unless given; register_csv(..., schema="
                        f"{{{name!r}: 'string'}}) reads it as text)")
        raise ExecutionError(f"reading {unit.path}{where}: {line}{hint}") from e


def _local_version(path: str) -> str | None:
    from ..catalog import _version_token
    from ..filesystems import _local_info

    try:
        return _version_token(_local_info(path).version)
    except FileNotFoundError:
        return None  # reading reports it, naming the file


def read_memory(provider, table: pa.Table, offset: int, length: int, columns, filters,
                out_ids) -> pa.Table:
    t = table.slice(offset, length).select([name for name, _ in columns])
    if _has_misaligned(table):
        t = aligned(t)
    return _to_engine(provider, t, columns, filters, out_ids)


# Acero copies the buffers of every batch it is given whose buffers are not aligned to their
# values' width, and it copies each buffer whole, not the batch's rows: a partition over a
# misaligned 100 MiB column cost ~100 copies of 100 MiB (count(*) of a 100 MiB table: 105 s
# and a 19 GB peak on threads; on a cluster, workers restarted for memory). Data a Dask
# worker receives (a scattered table, a table in a graph, another worker's result) sits at
# whatever byte offset it had in the message, so its buffers are misaligned at random.
ALIGNMENT = 8


def _misaligned(arr: pa.Array) -> bool:
    for b in arr.buffers():
        if b is not None and b.address % ALIGNMENT:
            return True
    dictionary = getattr(arr, "dictionary", None)
    return dictionary is not None and _misaligned(dictionary)


def _realigned(arr: pa.Array) -> pa.Array:
    try:
        return pa.concat_arrays([arr])  # a copy of the array's rows only, in new buffers
    except (pa.ArrowException, TypeError):  # a type concatenation does not support
        return arr


# id(table) -> (a weak reference to it, whether a buffer of it is misaligned): a registered
# table (on threads) or a placed piece (on a worker) is the same object query after query,
# and checking a table of many chunks costs (0.5 s for 200,000 of them)
_CHECKED: dict[int, tuple] = {}


def _has_misaligned(table: pa.Table) -> bool:
    key = id(table)
    hit = _CHECKED.get(key)
    if hit is not None and hit[0]() is table:
        return hit[1]
    bad = any(_misaligned(c) for col in table.columns for c in col.chunks)
    try:
        ref = weakref.ref(table, lambda _, key=key: _CHECKED.pop(key, None))
    except TypeError:  # (not weakly referable: checked again next time)
        return bad
    _CHECKED[key] = (ref, bad)
    return bad


def aligned(t: pa.Table) -> pa.Table:
    """`t`, with the chunks whose buffers are not 8-byte aligned copied (their rows only)
    into new buffers; `t` itself when every buffer is aligned (the usual case)."""
    cols = None
    for i, col in enumerate(t.columns):
        if any(_misaligned(c) for c in col.chunks):
            cols = cols or list(t.columns)
            cols[i] = pa.chunked_array([_realigned(c) if _misaligned(c) else c
                                        for c in col.chunks], col.type)
    return t if cols is None else pa.Table.from_arrays(cols, schema=t.schema)


def from_pandas(provider, frame, columns, filters, out_ids) -> pa.Table:
    """One dask partition (a pandas DataFrame) as an Arrow table in engine types."""
    try:
        t = pa.Table.from_pandas(frame[[name for name, _ in columns]], preserve_index=False)
    except (pa.ArrowException, KeyError, TypeError, ValueError) as e:
        raise ExecutionError(f"converting a dask partition to Arrow: {e}") from e
    return _to_engine(provider, t, columns, filters, out_ids)


def _to_engine(provider, t: pa.Table, columns, filters, out_ids) -> pa.Table:
    """Cast user columns to the provider's engine types, rename to column ids, filter."""
    arrays = []
    for col, (name, _) in zip(t.columns, columns, strict=True):
        want = provider.schema.field(name).type
        if col.type != want:
            if pa.types.is_dictionary(col.type):
                col = pc.cast(col, col.type.value_type)
            if pa.types.is_duration(col.type):
                col = pa.chunked_array([T.duration_interval(c, name) for c in col.chunks], want)
            else:
                col = pc.cast(col, want)
        arrays.append(col)
    t = pa.Table.from_arrays(arrays, names=[cid for _, cid in columns])
    pred = and_(filters)
    if pred is not None:
        t = filter_table(t, Compiler(share=True).stages(pred))
    return t.select(list(out_ids))


__all__ = ["aligned", "from_pandas", "read_files", "read_memory", "pruning_expression", "T"]
