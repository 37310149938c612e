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

from .. import types as T
from ..errors import ExecutionError
from ..plan.expr import Expr, and_
from .expressions import Compiler, filter_table


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
               filters: tuple[Expr, ...], out_ids: tuple[str, ...]) -> pa.Table:
    """Read some row groups of a Parquet table (or whole files of a CSV table): file columns
    `columns` ((name, id) pairs), filtered, renamed to ids, restricted to `out_ids`."""
    names = {cid: name for name, cid in columns}
    expr = pruning_expression(provider, filters, names)
    read_cols = [name for name, _ in columns]
    schema = provider.dataset.schema
    tables = []
    for frag, row_groups in _by_fragment(units):
        try:
            sub = frag.subset(row_group_ids=list(row_groups)) if row_groups else frag
            t = sub.to_table(schema=schema, columns=read_cols, filter=expr, use_threads=False)
        except (OSError, pa.ArrowException) as e:
            where = f" (row groups {list(row_groups)})" if row_groups else ""
            raise ExecutionError(f"reading {frag.path}{where}: {str(e).splitlines()[0]}") from e
        tables.append(t)
    if not tables:
        empty = pa.schema([pa.field(cid, provider.schema.field(name).type) for name, cid in columns])
        t = empty.empty_table()
    else:
        t = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
        t = t.rename_columns([cid for _, cid in columns])
    return t.select(list(out_ids))


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


def from_pandas(provider, frame, columns, filters, out_ids) -> pa.Table:
    """One dask partition (a pandas DataFrame) as an Arrow table in engine types."""
    try:
        t = pa.Table.from_pandas(frame[[name for name, _ in columns]], preserve_index=False)
    except (pa.ArrowException, KeyError, TypeError, ValueError) as e:
        raise ExecutionError(f"converting a dask partition to Arrow: {e}") from e
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
