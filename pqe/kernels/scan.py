"""Reading partitions: Parquet row groups through pyarrow.dataset, in-memory slices.

Text is read as `string`: the dataset is opened with the engine schema, which makes the
Parquet reader decode text straight into `string` (about 5x faster than `string_view`).
pyarrow.dataset cannot compare such a column with a string literal when the file stores
`string_view` ("equal(string, string_view)"), so in pushed filters those columns are wrapped
in an explicit cast, which the scanner evaluates on the decoded batch.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from .. import types as T
from ..errors import ExecutionError
from ..plan.expr import Expr, and_, column_ids
from . import decimals
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


def pruning_expression(provider, filters: tuple[Expr, ...], names: dict[str, str]):
    """The scan filter as a pyarrow.dataset expression over file column names (or None)."""
    pred = and_(filters)
    if pred is None:
        return None
    return Compiler(_text_casts(provider, names), rename=names)(pred)


def read_files(provider, units, columns: tuple[tuple[str, str], ...],
               filters: tuple[Expr, ...], out_ids: tuple[str, ...],
               dict_columns: tuple[str, ...] = (), encoded: tuple[str, ...] = ()) -> pa.Table:
    """Read some row groups of a Parquet table (or whole files of a CSV table): file columns
    `columns` ((name, id) pairs), filtered, renamed to ids, restricted to `out_ids`.

    `dict_columns` are low-cardinality text columns read as dictionaries: a filter on one of
    them alone is evaluated once per distinct value and mapped to the rows through the
    dictionary indices; the ones in `out_ids` are decoded to text after all filters, so only
    the surviving rows are materialized, except `encoded` ones, returned as dictionaries to an
    aggregate that groups by them (kernels.aggregate decodes its few output keys)."""
    names = {cid: name for name, cid in columns}
    dict_ids = {cid for name, cid in columns if name in dict_columns}
    dict_filters = [f for f in filters if len(column_ids(f)) == 1 and column_ids(f) <= dict_ids]
    mixed = [f for f in filters if f not in dict_filters and column_ids(f) & dict_ids]
    rest = [f for f in filters if not column_ids(f) & dict_ids]
    # decimal comparisons run after reading, on unscaled int64 (Arrow's decimal128 kernels are
    # slow) and on the rows the dictionary filters kept; the others run inside the scanner
    decimal_filters = [f for f in rest if decimals.int64_filter(f, names) is not None]
    plain_filters = tuple(f for f in rest if f not in decimal_filters)
    combined_decimal = decimals.int64_filter(and_(decimal_filters), names) if decimal_filters else None
    if combined_decimal is None:  # each alone compiles; together they must run in the scanner
        plain_filters += tuple(decimal_filters)
        decimal_filters = []
    expr = pruning_expression(provider, plain_filters, names)
    read_cols = [name for name, _ in columns]
    schema = provider.dataset.schema
    fmt = None
    if dict_columns:
        schema = _dictionary_schema(schema, dict_columns)
        fmt = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(dictionary_columns=list(dict_columns)))
    tables = []
    for frag, row_groups in _by_fragment(units):
        try:
            if fmt is not None:
                sub = fmt.make_fragment(frag.path, frag.filesystem, frag.partition_expression,
                                        row_groups=list(row_groups))
            else:
                sub = frag.subset(row_group_ids=list(row_groups)) if row_groups else frag
            t = sub.to_table(schema=schema, columns=read_cols, filter=expr, use_threads=False)
        except (OSError, pa.ArrowException) as e:
            where = f" (row groups {list(row_groups)})" if row_groups else ""
            raise ExecutionError(f"reading {frag.path}{where}: {str(e).splitlines()[0]}") from e
        if dict_filters:
            t = _filter_by_dictionary(t, dict_filters, names)
        if decimal_filters:  # one pass for all of them
            t = decimals.filter_int64(t, combined_decimal)
        tables.append(t)
    if not tables:
        empty = pa.schema([pa.field(cid, provider.schema.field(name).type) for name, cid in columns])
        return empty.empty_table().select(list(out_ids))
    t = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    t = t.rename_columns([cid for _, cid in columns])
    keep = set(out_ids) | {c for f in mixed for c in column_ids(f)}
    decode = [cid for cid in dict_ids if cid in keep
              and (names[cid] not in encoded or any(cid in column_ids(f) for f in mixed))]
    t = _decode_dictionaries(t, decode, provider, names)
    if mixed:
        t = filter_table(t, Compiler()(and_(mixed)))
    return t.select(list(out_ids))


def _decode_dictionaries(t: pa.Table, ids, provider, names) -> pa.Table:
    for cid in ids:
        i = t.schema.get_field_index(cid)
        t = t.set_column(i, cid, pc.cast(t.column(i), provider.schema.field(names[cid]).type))
    return t


def _dictionary_schema(schema: pa.Schema, dict_columns) -> pa.Schema:
    return pa.schema([pa.field(f.name, pa.dictionary(pa.int32(), pa.string()), f.nullable)
                      if f.name in dict_columns else f for f in schema])


def _filter_by_dictionary(t: pa.Table, filters: list[Expr], names: dict[str, str]) -> pa.Table:
    """Apply filters that each read one dictionary column: evaluate each on the dictionary's
    values plus one NULL (the verdict for NULL rows, `s IS NULL` being true there), then look
    the results up by index; unknown results drop the row."""
    mask = None
    for f in filters:
        (cid,) = column_ids(f)
        col = t.column(names[cid])
        compiled = Compiler(rename={cid: "v"})(f)
        parts = []
        for chunk in col.chunks:
            values = pa.concat_arrays([chunk.dictionary, pa.nulls(1, chunk.dictionary.type)])
            verdict = project(pa.table({"v": values}), [compiled], ["m"]).column(0)
            verdict = pc.fill_null(verdict.combine_chunks(), False)
            indices = chunk.indices
            if indices.null_count:
                indices = pc.fill_null(indices, pa.scalar(len(chunk.dictionary), indices.type))
            parts.append(pc.take(verdict, indices))
        m = pa.chunked_array(parts, pa.bool_()) if parts else pa.chunked_array([], pa.bool_())
        mask = m if mask is None else pc.and_(mask, m)
    return t.filter(mask) if mask is not None else t


def _by_fragment(units):
    groups: list[tuple[object, list[int]]] = []
    for u in units:
        if groups and groups[-1][0].path == u.fragment.path:
            groups[-1][1].extend(u.row_groups)
        else:
            groups.append((u.fragment, list(u.row_groups)))
    return groups


def read_memory(provider, table: pa.Table, offset: int, length: int, columns, filters,
                out_ids) -> pa.Table:
    t = table.slice(offset, length).select([name for name, _ in columns])
    return _to_engine(provider, t, columns, filters, out_ids)


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
            col = pc.cast(col, want)
        arrays.append(col)
    t = pa.Table.from_arrays(arrays, names=[cid for _, cid in columns])
    pred = and_(filters)
    if pred is not None:
        t = filter_table(t, Compiler()(pred))
    return t.select(list(out_ids))


__all__ = ["from_pandas", "read_files", "read_memory", "pruning_expression", "T"]
