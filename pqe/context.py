"""`pqe.Context`: where tables are registered and SQL runs; a thin front of the session."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from . import types as T
from .access import policy_from
from .catalog import CsvTable, DaskTable, MemoryTable, ParquetTable, unreadable_columns
from .dataframe import DataFrame
from .expressions import UDF
from .errors import CatalogError, Error, UnsupportedError
from .extras import require
from .execution.scheduler import Executor
from .kernels.layout import holds_interval as _holds_interval, to_engine as _to_engine
from .plan import builder as B
from .session import Result, SessionConfig, SessionState, memory_result


class Context:
    """Where tables are registered and queries run.

    scheduler: None/"threads" (Dask's threaded scheduler, the default), "sync" (one thread,
    for debugging), or a "tcp://host:port" dask.distributed scheduler; client: an existing
    `distributed.Client`; workers (with memory_limit): start a `distributed.LocalCluster` of
    that many worker processes, closed with the Context. partitions: how many partitions to
    split work into (default: two per thread of the scheduler, fewer for small data).

    memory_limit: with workers=, each worker's limit (Dask spills and pauses at it); on this
    machine's threads, the bytes a query may hold at once (partitions are sized to fit and
    exchanges go through local disk past it); "auto": the memory the machine (or the process's
    cgroup) has, as Dask sizes a LocalCluster's worker. stall_timeout / no_workers_timeout (seconds): on
    a cluster, a query fails when no task finished for that long, or no worker was there.

    What SQL text may reach (see the README's Security section): `external_access=False`:
    only the tables registered from Python (no file or URL named in SQL); `allowed_paths`:
    files only under these directories and URLs only under these prefixes; `read_only=True`:
    no statement that changes a table, the catalog or a file. SQL cannot change these.
    """

    def __init__(self, scheduler: str | None = None, *, client: Any = None,
                 workers: int | None = None, memory_limit: str | int | None = None,
                 partitions: int | None = None, threads: int | None = None,
                 memory_guard: bool = True, external_access: bool = True,
                 allowed_paths: list[str] | None = None, read_only: bool = False,
                 stall_timeout: float | None = None, no_workers_timeout: float | None = None):
        config = SessionConfig(partitions=partitions, memory_guard=memory_guard,
                               access=policy_from(external_access, allowed_paths, read_only))
        executor = Executor(scheduler, client, threads, workers, memory_limit,
                            stall_timeout=stall_timeout, no_workers_timeout=no_workers_timeout)
        self._session = SessionState(config, executor)

    @property
    def session(self) -> SessionState:
        """The session state: settings, catalog, executor (for tools built on pqe)."""
        return self._session

    @property
    def catalog(self):
        """The session's catalog: registered tables, views and DataFrames by name."""
        return self._session.catalog

    # ---- registration --------------------------------------------------------------------

    def register_parquet(self, name: str, path: str | os.PathLike | list, *,
                         storage_options: dict | None = None, filesystem: Any = None) -> None:
        """A Parquet file, directory (recursive, hive partitions), glob, or list of files: local
        paths (made absolute now), or URLs read through fsspec (s3://bucket/t/*.parquet,
        gs://..., memory://, file://) with `storage_options` (credentials,
        client_kwargs={"endpoint_url": ...}, ...), or paths on `filesystem` (an fsspec or
        pyarrow filesystem). Files changed, added or deleted later are seen by the next
        query."""
        self._session.register(name, ParquetTable(path, filesystem=filesystem,
                                                  storage_options=storage_options))

    def register_csv(self, name: str, path: str | os.PathLike | list, schema: dict | None = None,
                     delimiter: str | None = None, header: bool | None = None, *,
                     storage_options: dict | None = None, filesystem: Any = None) -> None:
        """CSV file(s), local or through fsspec / `filesystem` as for register_parquet;
        `schema` maps column names to types ("int64", "DECIMAL(10,2)", pyarrow types); columns
        not named are inferred. Empty fields are NULL. The delimiter is a tab for `.tsv` and
        `.tab` files, else a comma, unless given. `header`: None detects it, as DuckDB does
        (the first line is a header unless it fits the types of the lines below it)."""
        self._session.register(name, CsvTable(path, schema, delimiter, header,
                                              filesystem=filesystem,
                                              storage_options=storage_options))

    def register_arrow(self, name: str, data: Any) -> None:
        """A pyarrow Table or RecordBatchReader, or anything with `__arrow_c_stream__`."""
        self._session.register(name, MemoryTable(_arrow_table(data, "register_arrow")))

    def register_pandas(self, name: str, df: Any) -> None:
        """A pandas DataFrame (copied to Arrow now)."""
        self._session.register(name, MemoryTable(_pandas_table(df, "register_pandas", name)))

    def register_dask(self, name: str, ddf: Any) -> None:
        """A dask DataFrame: its partitions are read inside pqe's task graph."""
        dd = require("dask.dataframe", "register_dask()")
        if not isinstance(ddf, dd.DataFrame):
            hint = (" (a dask Series: use .to_frame())" if isinstance(ddf, dd.Series) else
                    " (use register_pandas for a pandas DataFrame)"
                    if type(ddf).__module__.startswith("pandas") else "")
            raise CatalogError(f"register_dask needs a dask DataFrame, got "
                               f"{type(ddf).__module__}.{type(ddf).__name__}{hint}")
        import pandas as pd

        for column, dtype in ddf._meta.dtypes.items():  # (as register_pandas refuses them)
            if isinstance(dtype, pd.CategoricalDtype) and dtype.ordered:
                raise _ordered_refusal(column, f"dask DataFrame {name!r}",
                                       "its text (.astype(str)) or its codes (.cat.codes)")
        self._session.register(name, DaskTable(ddf))

    def register_dataframe(self, name: str, df: DataFrame) -> None:
        """A pqe DataFrame under a name SQL can query, like a view: `ctx.sql("SELECT ... FROM
        name")` runs the DataFrame's plan inside the query (filters in SQL reach its scans).
        It keeps reading the table versions it was built over; a DataFrame made by
        map_batches() works as any other."""
        from .plan.tables import PlanTable

        if not isinstance(df, DataFrame):
            raise CatalogError(f"register_dataframe needs a pqe.DataFrame, got "
                               f"{type(df).__module__}.{type(df).__name__}")
        if df._session is not self._session:
            raise CatalogError("register_dataframe: the DataFrame belongs to another Context; "
                               "register its data instead (ctx.register_arrow(name, "
                               "df.to_arrow()))")
        names = df.columns
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise CatalogError(f"register_dataframe: the DataFrame has two columns named "
                               f"{dup[0]!r}; rename one first")
        self._session.register(name, PlanTable(df.logical_plan()))

    def register_udf(self, name: str, fn: Callable, arg_types: Sequence[str | pa.DataType],
                     return_type: str | pa.DataType, *, deterministic: bool = False) -> UDF:
        """A Python scalar function SQL can call as `name(...)` in this Context, vectorized:
        `fn(*arrays)` gets one pyarrow array per argument (a batch of rows, NULLs
        included; arguments are cast to `arg_types`, SQL or Arrow type names) and returns a
        pyarrow array of as many `return_type` values. It runs inside the query's tasks (on
        a cluster: on the workers, so it must pickle with cloudpickle). Returns a handle
        for the DataFrame API: `f(col("a"))`. A built-in's name is refused; registering a
        name again replaces the function. A function is taken to be volatile (random, a
        clock, a lookup): each value it gives is computed once and read wherever the query
        reads it; `deterministic=True` lets the optimizer compute it again instead (push a
        filter on its result below the projection that computes it)."""
        from .plan.udf import check_name, scalar_udf
        from .sql import builtin_call

        udf = scalar_udf(check_name(name, builtin_call), fn, arg_types, return_type,
                         deterministic)
        self._session.register_function(udf)
        return UDF(udf)

    def register_udaf(self, name: str, update: Callable, merge: Callable,
                      arg_types: Sequence[str | pa.DataType], return_type: str | pa.DataType,
                      *, state_type: str | pa.DataType | None = None,
                      finalize: Callable | None = None, skip_nulls: bool = True) -> UDF:
        """A Python aggregate SQL can call as `name(...)`, computed in two phases like SUM:
        `update(*arrays)` gets the argument values of ONE group in one partition (rows with
        a NULL argument left out unless `skip_nulls=False`) and returns that group's state
        (a Python value or pyarrow scalar of `state_type`, default `return_type`);
        `merge(states)` gets one group's states from several partitions (a pyarrow array)
        and returns one state; `finalize(states)` (optional) maps the array of all groups'
        merged states to an array of results. Python runs once per group, never per row.
        Returns a handle for the DataFrame API: `df.group_by("k").agg(f(col("x")))`."""
        from .plan.udf import aggregate_udf, check_name
        from .sql import builtin_call

        udf = aggregate_udf(check_name(name, builtin_call), update, merge, arg_types,
                            return_type, state_type, finalize, skip_nulls)
        self._session.register_function(udf)
        return UDF(udf)

    def udf(self, name: str) -> UDF:
        """The handle of a registered user function, for the DataFrame API."""
        udf = self._session.catalog.function(name)
        if udf is None:
            raise CatalogError(f"function {name!r} is not registered")
        return UDF(udf)

    def deregister_function(self, name: str) -> None:
        """Remove a user-defined function (CatalogError if there is none). DataFrames built
        with it keep it: their plans hold the function itself."""
        with self._session.write_lock:
            if not self._session.catalog.drop_function(name):
                raise CatalogError(f"function {name!r} is not registered")

    def functions(self) -> list[str]:
        """The names of the registered user-defined functions, sorted."""
        return self._session.catalog.function_names()

    def deregister(self, name: str) -> None:
        """Remove a registered table, view or DataFrame (CatalogError if there is none)."""
        if not self._session.deregister(name):
            raise CatalogError(f"table {name!r} does not exist")

    def tables(self) -> list[str]:
        """The names of the registered tables, views and DataFrames, sorted."""
        return self._session.catalog.names()

    # ---- DataFrames without a name ---------------------------------------------------------

    def read_parquet(self, path: str | os.PathLike | list, *, storage_options: dict | None = None,
                     filesystem: Any = None) -> DataFrame:
        """A DataFrame over Parquet file(s), as register_parquet reads them (a file,
        directory with hive partitions, glob, list, or URL), without registering a name."""
        provider = ParquetTable(path, filesystem=filesystem, storage_options=storage_options)
        return DataFrame(self._session, B.scan(_stem(path, "read_parquet"), provider))

    def read_csv(self, path: str | os.PathLike | list, schema: dict | None = None,
                 delimiter: str | None = None, header: bool | None = None, *,
                 storage_options: dict | None = None, filesystem: Any = None) -> DataFrame:
        """A DataFrame over CSV file(s), as register_csv reads them, without registering a
        name."""
        provider = CsvTable(path, schema, delimiter, header, filesystem=filesystem,
                            storage_options=storage_options)
        return DataFrame(self._session, B.scan(_stem(path, "read_csv"), provider))

    def from_arrow(self, data: Any) -> DataFrame:
        """A DataFrame over a pyarrow Table, RecordBatch(Reader) or any `__arrow_c_stream__`
        object (a Polars DataFrame, ...), without registering a name."""
        table = _queryable(_arrow_table(data, "from_arrow"), "from_arrow")
        return DataFrame(self._session, B.scan("arrow", MemoryTable(table)))

    def from_pandas(self, df: Any) -> DataFrame:
        """A DataFrame over a pandas DataFrame (copied to Arrow now), without registering a
        name."""
        table = _queryable(_pandas_table(df, "from_pandas"), "from_pandas")
        return DataFrame(self._session, B.scan("pandas", MemoryTable(table)))

    # ---- queries -------------------------------------------------------------------------

    def table(self, name: str) -> DataFrame:
        """A DataFrame reading a registered table, view or DataFrame."""
        return DataFrame(self._session, self._session.table_plan(name))

    def sql(self, query: str, params: Sequence[Any] | None = None, *,
            timeout: float | None = None, cancel=None) -> DataFrame:
        """Run SQL: a lazy DataFrame for a query; other statements run at once and give their
        rows (SHOW, DESCRIBE, EXPLAIN) or a one-row `count` of the rows they changed. `?`
        placeholders take `params` in the order they appear in the text; `timeout`/`cancel`
        apply to statements that run at once and to the query's own runs (`to_arrow()`,
        `to_pandas()`, ... unless they are given their own; DataFrames built on it by the
        builder do not take them). Several `;`-separated statements run in order, stopping at
        the first error (a query before the last runs too, its rows dropped); the result is
        the last one's."""
        df = self.dataframe(self._session.sql(query, params, timeout=timeout, cancel=cancel))
        if df.result is None:
            df._run_defaults = (timeout, cancel)
        return df

    def dataframe(self, result: Result) -> DataFrame:
        """A statement's result as a DataFrame."""
        if result.plan is not None:
            return DataFrame(self._session, result.plan)
        if result.table is not None:
            return DataFrame(self._session, memory_result(result.table), result)
        if result.rows_affected is not None:
            table = pa.table({"count": pa.array([result.rows_affected], pa.int64())})
        else:
            table = pa.table({"status": pa.array([], pa.string())})
        return DataFrame(self._session, memory_result(table), result)

    @property
    def memory_guard(self) -> bool:
        """Refuse queries whose estimated memory exceeds what this machine has free."""
        return self._session.config.memory_guard

    @memory_guard.setter
    def memory_guard(self, value: bool) -> None:
        self._session.config = replace(self._session.config, memory_guard=bool(value))

    @property
    def dashboard_link(self) -> str | None:
        """The Dask dashboard of the cluster this Context runs on (None on threads)."""
        return self._session.executor.dashboard_link

    def close(self) -> None:
        """Stop the executor (and a local cluster started with workers=); the Context is
        not usable afterwards. `with pqe.Context() as ctx:` closes it at the end."""
        self._session.close()

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _queryable(table: pa.Table, what: str) -> pa.Table:
    """`table` when a query can read it (the binder applies the same rule to a registered
    table when it is queried; a DataFrame made from it is refused when it is made)."""
    why = unreadable_columns(table.schema.names, f"{what}: the table", "rename them first")
    if why:
        raise UnsupportedError(why)
    return table


def _ordered_refusal(column: Any, what: str, instead: str) -> UnsupportedError:
    # as text its values would compare and sort alphabetically, not in the order of its
    # categories (DuckDB reads it as an ENUM, which pqe does not have)
    return UnsupportedError(f"column {column!r} of {what} is an ordered categorical, which "
                            f"pqe does not support: register {instead} instead")


def _arrow_table(data: Any, what: str) -> pa.Table:
    if isinstance(data, pa.RecordBatchReader):
        table = data.read_all()
    elif isinstance(data, pa.RecordBatch):
        table = pa.Table.from_batches([data])
    elif isinstance(data, pa.Table):
        table = data
    elif type(data).__name__ == "DataFrame" and type(data).__module__.startswith("pandas"):
        # pandas 3's frames are Arrow streams too, which wrap the frame's numpy memory: a
        # later `df.loc[0, "a"] = 100` changed what was registered. Copied as register_pandas
        # copies it, with its conversions of pandas' types
        return _pandas_table(data, what)
    elif hasattr(data, "__arrow_c_stream__"):
        if type(data).__module__.startswith("polars"):
            # a Polars Object column (Python objects) crosses the C stream as its pointers,
            # 8-byte binary values: refused as DuckDB refuses it
            for column, dtype in getattr(data, "schema", {}).items():
                if str(dtype) == "Object":
                    raise UnsupportedError(f"column {column!r} of the Polars DataFrame holds "
                                           f"Python objects (dtype Object), which pqe cannot "
                                           f"read; cast it to a Polars type first")
        try:
            table = pa.table(data)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
            # a stream of one column (a ChunkedArray, a Polars Series) is not a table
            raise CatalogError(f"{what} needs a table (columns with names), got "
                               f"{type(data).__module__}.{type(data).__name__}: "
                               f"{str(e).splitlines()[0]}") from e
    else:
        raise CatalogError(f"{what} needs a pyarrow Table or an Arrow stream, got "
                           f"{type(data).__name__}")
    return engine_table(table)


def _pandas_table(df: Any, what: str, name: str | None = None) -> pa.Table:
    pd = require("pandas", f"{what}()")
    if not isinstance(df, pd.DataFrame):
        hint = " (use register_arrow for Polars and other Arrow data)" if hasattr(
            df, "__arrow_c_stream__") else ""
        raise CatalogError(f"{what} needs a pandas DataFrame, got "
                           f"{type(df).__module__}.{type(df).__name__}{hint}")
    label = f" {name!r}" if name else ""
    for column, dtype in df.dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype) and dtype.ordered:
            raise _ordered_refusal(column, f"pandas DataFrame{label}",
                                   "its text (.astype(str)) or its codes (.cat.codes)")
    try:
        table = pa.Table.from_pandas(_unshared(df, pd), preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as e:
        raise CatalogError(f"cannot convert pandas DataFrame{label} to Arrow: "
                           f"{str(e).splitlines()[0]}") from e
    return engine_table(_mixed_dates(df, table, pd, label))


def _mixed_dates(df: Any, table: pa.Table, pd: Any, label: str) -> pa.Table:
    """`table` with each object column Arrow made a DATE column of, from dates mixed with
    datetimes (a datetime is a date: when a date comes first Arrow takes them all as dates
    and drops the times), a TIMESTAMP column, as DuckDB reads it. (With a datetime first,
    Arrow refuses the dates.) Only a column whose times are not all midnight changes: at
    midnight a date loses nothing."""
    for i, (column, dtype) in enumerate(df.dtypes.items()):
        t = table.column(i).type
        if dtype == object and pa.types.is_timestamp(t):
            # Arrow read naive datetimes among zoned ones as UTC, or zoned ones among naive
            # ones as naive UTC (DuckDB refuses the mix)
            try:
                pd.to_datetime(df.iloc[:, i], errors="raise")
            except (TypeError, ValueError, OverflowError) as e:
                # (zoned ones of several offsets fail too, and are fine: told apart here, a
                # pass over the objects only for a column pandas would not convert)
                kinds = set(df.iloc[:, i].dropna().map(
                    lambda v: getattr(v, "tzinfo", None) is None))
                if len(kinds) > 1:
                    raise CatalogError(f"column {column!r} of pandas DataFrame{label} mixes "
                                       f"datetimes with and without a time zone: "
                                       f"{str(e).splitlines()[0]}") from e
            continue
        if dtype != object or not pa.types.is_date32(t):
            continue
        try:
            stamps = pd.to_datetime(df.iloc[:, i], errors="raise")
        except (TypeError, ValueError, OverflowError) as e:
            raise CatalogError(f"column {column!r} of pandas DataFrame{label} mixes dates "
                               f"and datetimes Arrow cannot convert together: "
                               f"{str(e).splitlines()[0]}") from e
        if getattr(stamps.dt, "tz", None) is not None or not (
                stamps.dropna() != stamps.dropna().dt.normalize()).any():
            if getattr(stamps.dt, "tz", None) is not None:
                raise CatalogError(f"column {column!r} of pandas DataFrame{label} mixes "
                                   "dates and datetimes with a time zone")
            continue
        col = pa.array(stamps, from_pandas=True).cast(pa.timestamp("us"))
        table = table.set_column(i, pa.field(table.field(i).name, col.type), col)
    return table


def _unshared(df: Any, pd: Any) -> Any:
    """`df` with a private copy of every column whose memory Arrow would otherwise wrap
    without copying: numbers, datetimes and timedeltas held in numpy arrays, the data of
    pandas' nullable Int64/Float64 and a categorical's codes. The user may change the frame
    in place afterwards (`df.loc[0, "a"] = ...`), which must not change what was registered
    ("copied to Arrow now"). Columns Arrow converts anyway (text, objects, booleans, packed
    into bits) or that pyarrow holds (immutable) are left to that conversion: each column is
    copied once."""
    import numpy as np

    shared = []
    for i, dtype in enumerate(df.dtypes):
        if isinstance(dtype, np.dtype):
            if dtype.kind in "iufmM":
                shared.append(i)
        elif not isinstance(dtype, (pd.ArrowDtype, pd.StringDtype, pd.BooleanDtype)):
            shared.append(i)  # Int64, Float64, category, datetime64[tz], period, ...
    if not shared:
        return df
    out = df.copy(deep=False)
    for i in shared:
        out.isetitem(i, df.iloc[:, i].copy(deep=True))
    return out


def _engine_type(t: pa.DataType, column: str) -> pa.DataType:
    """The type pqe's kernels take for data of type `t` (nested types included): views
    become their plain layouts (string_view -> string, binary_view -> binary, list_view ->
    list), a Polars Categorical/Enum's dictionary of string_view a dictionary of string,
    a fixed-size list (Polars' Array) a list, a run-end encoded column its values,
    DECIMAL256 of at most 38 digits DECIMAL128.
    A top-level string_view or binary_view column is kept: scans read it into `string` /
    `binary` per partition. A DECIMAL of more than 38 digits has no exact engine type (it
    would have to become DOUBLE): an UnsupportedError names the column."""
    if isinstance(t, pa.BaseExtensionType):
        # Arrow's canonical extensions with an engine type; any other (pandas' period and
        # interval, a tensor, a user's type) would be read as its storage (a period as its
        # ordinal number): refused by name
        name = t.extension_name
        if name in ("arrow.uuid", "arrow.json"):
            return pa.string()  # a UUID as its canonical text, like DuckDB's cast to VARCHAR
        if name == "arrow.bool8":
            return pa.bool_()
        raise UnsupportedError(f"column {column!r} of extension type {name} is not "
                               "supported")
    if pa.types.is_duration(t):
        return T.INTERVAL  # (T.duration_interval)
    if pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_decimal(t):
        try:
            return T.normalize(t)
        except UnsupportedError as e:  # more than 38 digits
            raise UnsupportedError(f"column {column!r}: {e}") from None
    if pa.types.is_dictionary(t):
        if t.ordered:  # (a Polars Enum)
            raise _ordered_refusal(column, "the Arrow data", "its text (a cast to string) or "
                                   "its indices")
        return pa.dictionary(t.index_type, _engine_type(t.value_type, column), t.ordered)
    if pa.types.is_run_end_encoded(t):
        return _engine_type(t.value_type, column)
    if T.is_nested_layout(t):  # (the shapes a Parquet file's nested types take, too)
        return T._nested_layout(t, lambda x: _nested_engine_type(x, column))
    return t


def _nested_engine_type(t: pa.DataType, column: str) -> pa.DataType:
    """`_engine_type` of a value nested in a STRUCT, LIST or MAP: a dictionary as its values
    (only a top-level column stays encoded; nested, no kernel took it: `s.k = 'a'`, ORDER BY
    s.k and max(s.k) of a categorical struct field failed)."""
    if pa.types.is_dictionary(t):
        return _nested_engine_type(t.value_type, column)
    return _engine_type(t, column)


def engine_table(table: pa.Table) -> pa.Table:
    """`table` with every column in a type pqe's kernels take (see `_engine_type`), cast
    once at registration: only the columns that need it, by vectorized Arrow kernels (a
    dictionary column converts its dictionary, not its rows)."""
    import pyarrow.compute as pc

    for i, f in enumerate(table.schema):
        want = f.type
        if not (pa.types.is_string_view(want) or pa.types.is_binary_view(want)):
            want = _engine_type(f.type, f.name)
        if want == f.type:
            if _holds_interval(want):  # (whole microseconds at any depth, as a DURATION's)
                chunks = table.column(i).chunks
                cut = [_to_engine(c, want, f.name) for c in chunks]
                if any(a is not b for a, b in zip(cut, chunks, strict=True)):
                    table = table.set_column(i, f, pa.chunked_array(cut, want))
            continue
        try:
            col = pa.chunked_array([_to_engine(c, want, f.name) for c in table.column(i).chunks],
                                   want)
            if pa.types.is_nested(want):
                col.validate(full=True)  # (Arrow's casts of some nested layouts are not valid)
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise UnsupportedError(f"column {f.name!r} of type {f.type} is not supported: "
                                   f"{str(e).splitlines()[0]}") from e
        table = table.set_column(i, pa.field(f.name, want, f.nullable, f.metadata), col)
    return table


def _stem(path: Any, default: str) -> str:
    """A display name for an unnamed file table (EXPLAIN): the file or directory name."""
    if isinstance(path, (list, tuple)):
        return default
    text = os.fspath(path).rstrip("/")
    base = text.rsplit("/", 1)[-1].split(".")[0]
    return base if base and not any(c in base for c in "*?[") else default


__all__ = ["Context", "Error"]
