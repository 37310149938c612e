"""Python interop kernels: Arrow -> pandas conversion, and user functions over partitions
(`df.map_batches`).

Arrow -> pandas gives the column types DuckDB's `.df()` gives, the same for a whole result,
for each partition of a dask DataFrame and for its (empty) meta:

- DATE -> datetime64[us] (midnight), TIMESTAMP -> datetime64[us] (its own unit), TIMESTAMPTZ
  -> datetime64[us, tz];
- DECIMAL -> float64, the nearest double (DuckDB does the same; exact values: use to_arrow());
- integers and BOOLEAN -> numpy int/bool, or pandas' nullable Int64/boolean where a column
  is "masked": for `to_pandas()` when the column holds NULLs (as DuckDB), for `to_dask()`
  when the column may hold NULLs by its type (every partition and the meta must agree);
- INTERVAL -> timedelta64[ns], a month as 30 days (DuckDB: timedelta64[us]);
- text -> pandas' default string dtype; a list or map whose integers hold a NULL -> lists
  of Python ints and None (exact: pyarrow's default made them float64 and NaN);
  everything else as pyarrow converts it;
- for `to_dask()` only ("arrow_objects"): the types pandas holds as `object` (LIST, STRUCT,
  MAP, BLOB, TIME, a NULL-typed column) -> pyarrow-backed `pd.ArrowDtype` columns, so that
  dask can derive a Parquet schema from the meta (an object column's made-up example value
  failed `to_dask().to_parquet()` with pyarrow's ArrowInvalid) and each value keeps its type.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from .. import types as T
from ..errors import Error, ExecutionError, UnsupportedError


def _masked_dtype(t: pa.DataType):
    import pandas as pd

    if pa.types.is_boolean(t):
        return pd.BooleanDtype()
    return {
        pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
        pa.int64(): pd.Int64Dtype(), pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
        pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype(),
    }.get(t)


def convertible(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """The column in the Arrow type whose pandas conversion is the one pqe documents."""
    t = col.type
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = col.type
    if pa.types.is_decimal(t):
        from .decimals import to_doubles

        return to_doubles(col)
    if pa.types.is_date(t):
        return pc.cast(col, pa.timestamp("us"))
    if pa.types.is_interval(t):
        return pa.chunked_array([_interval_duration(c) for c in col.chunks], pa.duration("ns"))
    return col


def _interval_duration(arr: pa.Array) -> pa.Array:
    """INTERVALs as DURATIONs (pandas' timedelta64[ns]), a month counted as 30 days and a day
    as 24 hours, as DuckDB's `.df()` converts them (to microseconds there; pqe's intervals
    hold nanoseconds, which are kept). A length past int64 nanoseconds (about 292 years) is an
    error, never a wrapped value."""
    import numpy as np

    from .udfs import _interval_fields

    n = len(arr)
    f = _interval_fields(arr)
    day = 86_400 * 10**9
    whole_days = f["months"].astype(np.int64) * 30 + f["days"].astype(np.int64)
    valid = pc.is_valid(arr).to_numpy(zero_copy_only=False) if arr.null_count else None
    limit = (2**63 - 1) // day
    too_long = np.abs(whole_days) > limit - 1
    with np.errstate(over="ignore"):
        total = whole_days * day + f["nanos"]
    # an int64 overflow of the sum: operands of one sign, a result of the other
    part = whole_days * day
    too_long |= ((part ^ f["nanos"]) >= 0) & ((part ^ total) < 0)
    if valid is not None:
        too_long &= valid
    if too_long.any():
        raise ExecutionError("an INTERVAL longer than pandas' timedelta64[ns] holds (about 292 "
                             "years): use to_arrow(), or cast it to VARCHAR")
    validity = pa.array(valid).buffers()[1] if valid is not None else None
    return pa.Array.from_buffers(pa.duration("ns"), n, [validity, pa.py_buffer(
        total.astype(np.int64).tobytes())])


def arrow_object(t: pa.DataType) -> bool:
    """Whether pandas holds a column of (convertible) type `t` as `object` values: a list,
    struct, map or union, a BLOB, a TIME, a NULL-typed column, an extension type."""
    return (pa.types.is_nested(t) or pa.types.is_union(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
            or pa.types.is_binary_view(t) or pa.types.is_time(t) or pa.types.is_null(t)
            or isinstance(t, pa.ExtensionType))


def column_to_pandas(col: pa.ChunkedArray, masked: bool, arrow_objects: bool = False):
    """One column as a pandas Series (see the module docstring)."""
    col = convertible(col)
    t = col.type
    if arrow_objects and arrow_object(t):
        import pandas as pd

        return pd.Series(pd.arrays.ArrowExtensionArray(col), copy=False)
    mapper = None
    if masked and (pa.types.is_integer(t) or pa.types.is_boolean(t)):
        dtype = _masked_dtype(t)
        mapper = {t: dtype}.get if dtype is not None else None
    # a list's (or map's) integers with a NULL among them became float64 and NaN, 2^62 + 1
    # rounded: as Python ints and None then, each list an object array (DuckDB: a masked
    # integer array)
    exact = pa.types.is_nested(t) and any(_null_integers(c) for c in col.chunks)
    s = col.to_pandas(types_mapper=mapper, coerce_temporal_nanoseconds=False,
                      integer_object_nulls=exact)
    values = getattr(s.array, "_ndarray", None)  # numpy-backed numbers, datetimes
    if values is not None and not values.flags.writeable:
        # a zero-copy view of Arrow's immutable buffer: pandas users assign into results
        # (`out.loc[0, "a"] = 5`; DuckDB's .df() and pa.Table.to_pandas() allow it), so the
        # column gets its own memory; a conversion that copied already (NULLs, text) is
        # writable and is not copied again
        s = s.copy(deep=True)
    return s


def _null_integers(arr: pa.Array) -> bool:
    """Whether a NULL integer is nested in `arr` (a list's, map's or struct's values)."""
    t = arr.type
    if pa.types.is_integer(t):
        return arr.null_count > 0
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _null_integers(pc.list_flatten(arr))
    if pa.types.is_map(t):
        return _null_integers(arr.keys) or _null_integers(arr.items)
    if pa.types.is_struct(t):
        return any(_null_integers(arr.field(k)) for k in range(t.num_fields))
    return False


def to_pandas(table: pa.Table, masked: Sequence[bool] | None = None,
              arrow_objects: bool = False):
    """`table` as a pandas DataFrame. `masked[i]`: integer/boolean column i becomes a nullable
    pandas dtype; None: exactly the columns that hold NULLs (DuckDB's choice).
    `arrow_objects`: columns pandas would hold as `object` are `pd.ArrowDtype` (to_dask)."""
    import pandas as pd

    series = []
    for i, col in enumerate(table.columns):
        m = masked[i] if masked is not None else col.null_count > 0
        s = column_to_pandas(col, m, arrow_objects)
        s.name = i
        series.append(s)
    if not series:
        return pd.DataFrame(index=pd.RangeIndex(table.num_rows))
    out = pd.concat(series, axis=1) if len(series) > 1 else series[0].to_frame()
    out.columns = list(table.column_names)
    return out


def pandas_meta(schema: pa.Schema, masked: Sequence[bool], arrow_objects: bool = False):
    """The empty DataFrame whose dtypes every partition converted with `masked` (and
    `arrow_objects`) has."""
    return to_pandas(schema.empty_table(), masked, arrow_objects)


# ---- map_batches ---------------------------------------------------------------------------------


def as_table(value, what: str) -> pa.Table:
    """A user function's result as a pyarrow Table (a Table, RecordBatch, RecordBatchReader or
    any object with `__arrow_c_stream__`, such as a Polars DataFrame)."""
    if isinstance(value, pa.Table):
        return value
    if isinstance(value, pa.RecordBatch):
        return pa.Table.from_batches([value])
    if isinstance(value, pa.RecordBatchReader):
        return value.read_all()
    if hasattr(value, "__arrow_c_stream__"):
        return pa.table(value)
    raise ExecutionError(f"{what} returned {type(value).__module__}.{type(value).__name__}: it "
                         f"must return a pyarrow Table")


def conform(table: pa.Table, expected: pa.Schema, what: str) -> list[pa.ChunkedArray]:
    """The columns of a user function's result in the order and types of `expected`: the
    same names (in any order), the same engine types (another encoding of a type, such as
    large_string or a dictionary, is converted; an all-NULL column takes the expected type);
    anything else is a pqe.ExecutionError that says what differs."""
    names = list(table.column_names)
    want = list(expected.names)
    if names != want:
        dupes = sorted({n for n in names if names.count(n) > 1})
        missing = [n for n in want if n not in names]
        extra = [n for n in names if n not in want]
        if dupes or missing or extra:
            parts = []
            if missing:
                parts.append(f"missing {', '.join(missing)}")
            if extra:
                parts.append(f"unexpected {', '.join(extra)}")
            if dupes:
                parts.append(f"duplicate {', '.join(dupes)}")
            raise ExecutionError(f"{what} returned columns [{', '.join(names)}], expected "
                                 f"[{', '.join(want)}] ({'; '.join(parts)})")
        table = table.select(want)
    cols = []
    for f, col in zip(expected, table.columns, strict=True):
        if col.type != f.type:
            if T.normalize(col.type) == f.type or pa.types.is_null(col.type):
                try:
                    col = col.cast(f.type)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise ExecutionError(f"{what}: column {f.name} cannot be read as "
                                         f"{f.type}: {str(e).splitlines()[0]}") from e
            else:
                raise ExecutionError(f"{what}: column {f.name} is {col.type}, expected "
                                     f"{f.type} (pass map_batches(schema=...) to declare "
                                     f"the output)")
        cols.append(col)
    return cols


def call_user_function(fn, table: pa.Table, what: str) -> pa.Table:
    """fn(table), its errors named: `what` says which function and partition."""
    try:
        out = fn(table)
    except Error:
        raise
    except Exception as e:  # the user's function: any error is reported
        raise ExecutionError(f"{what} raised {type(e).__name__}: {e}") from e
    return as_table(out, what)


def infer_schema(fn, name: str, input_schema: pa.Schema) -> pa.Schema:
    """map_batches(schema=None): the schema of fn's result on an empty table of its input
    schema (engine types: large_string -> string, dictionaries decoded, ...)."""
    what = f"map_batches function {name!r} (called on an empty table of its input schema " \
           f"to infer its output schema; pass schema= to declare it instead)"
    out = call_user_function(fn, input_schema.empty_table(), what)
    names = out.column_names
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ExecutionError(f"{what} returned duplicate columns {', '.join(dupes)}")
    fields = []
    for f in out.schema:
        try:
            fields.append(pa.field(f.name, T.normalize(f.type)))
        except Error as e:  # a type pqe cannot hold (DECIMAL past 38 digits)
            raise UnsupportedError(f"{what}: column {f.name}: {e}") from None
    return pa.schema(fields)


def map_batches(table: pa.Table, fn, input_names: Sequence[str], out_ids: Sequence[str],
                out_schema: pa.Schema, partition: int, partitions: int) -> pa.Table:
    """One partition through a user function (plan.logical.UserFunction): `table`'s columns
    (in order) are given to it under `input_names`; its result, checked against
    `out_schema`, is returned under the plan's column ids `out_ids`. An empty partition
    gives an empty result without calling the function."""
    if table.num_rows == 0:
        return pa.Table.from_arrays([pa.array([], f.type) for f in out_schema],
                                    names=list(out_ids))
    arg = pa.Table.from_arrays(list(table.columns), names=list(input_names))
    what = f"map_batches function {fn.name!r} in partition {partition} (of {partitions})"
    out = call_user_function(fn.fn, arg, what)
    cols = conform(out, out_schema, what)
    return pa.Table.from_arrays(cols, names=list(out_ids))


__all__ = ["to_pandas", "column_to_pandas", "arrow_object", "pandas_meta", "convertible", "as_table", "conform",
           "call_user_function", "infer_schema", "map_batches"]
