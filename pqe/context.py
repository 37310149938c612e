"""`pqe.Context`: where tables are registered and SQL runs; a thin front of the session."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa

from .access import policy_from
from .catalog import CsvTable, DaskTable, MemoryTable, ParquetTable
from .dataframe import DataFrame
from .errors import CatalogError, Error
from .extras import require
from .execution.scheduler import Executor
from .session import Result, SessionConfig, SessionState, memory_result


class Context:
    """Where tables are registered and queries run.

    scheduler: None/"threads" (Dask's threaded scheduler, the default), "sync" (one thread,
    for debugging), or a "tcp://host:port" dask.distributed scheduler; client: an existing
    `distributed.Client`; workers (with memory_limit): start a `distributed.LocalCluster` of
    that many worker processes, closed with the Context. partitions: how many partitions to
    split work into (default: two per thread of the scheduler, fewer for small data).

    What SQL text may reach (see the README's Security section): `external_access=False`:
    only the tables registered from Python (no file or URL named in SQL); `allowed_paths`:
    files only under these directories and URLs only under these prefixes; `read_only=True`:
    no statement that changes a table, the catalog or a file. SQL cannot change these.
    """

    def __init__(self, scheduler: str | None = None, *, client: Any = None,
                 workers: int | None = None, memory_limit: str | int | None = None,
                 partitions: int | None = None, threads: int | None = None,
                 memory_guard: bool = True, external_access: bool = True,
                 allowed_paths: list[str] | None = None, read_only: bool = False):
        config = SessionConfig(partitions=partitions, memory_guard=memory_guard,
                               access=policy_from(external_access, allowed_paths, read_only))
        self._session = SessionState(config, Executor(scheduler, client, threads, workers,
                                                      memory_limit))

    @property
    def session(self) -> SessionState:
        """The session state: settings, catalog, executor (for tools built on pqe)."""
        return self._session

    @property
    def catalog(self):
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
                     delimiter: str = ",", header: bool = True, *,
                     storage_options: dict | None = None, filesystem: Any = None) -> None:
        """CSV file(s), local or through fsspec / `filesystem` as for register_parquet;
        `schema` maps column names to types ("int64", "DECIMAL(10,2)", pyarrow types); columns
        not named are inferred. Empty fields are NULL."""
        self._session.register(name, CsvTable(path, schema, delimiter, header,
                                              filesystem=filesystem,
                                              storage_options=storage_options))

    def register_arrow(self, name: str, data: Any) -> None:
        """A pyarrow Table or RecordBatchReader, or anything with `__arrow_c_stream__`."""
        if isinstance(data, pa.RecordBatchReader):
            data = data.read_all()
        elif isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        elif not isinstance(data, pa.Table):
            if hasattr(data, "__arrow_c_stream__"):
                data = pa.table(data)
            else:
                raise CatalogError(
                    f"register_arrow needs a pyarrow Table or an Arrow stream, got {type(data).__name__}")
        self._session.register(name, MemoryTable(data))

    def register_pandas(self, name: str, df: Any) -> None:
        """A pandas DataFrame (copied to Arrow now)."""
        pd = require("pandas", "register_pandas()")
        if not isinstance(df, pd.DataFrame):
            hint = " (use register_arrow for Polars and other Arrow data)" if hasattr(
                df, "__arrow_c_stream__") else ""
            raise CatalogError(f"register_pandas needs a pandas DataFrame, got "
                               f"{type(df).__module__}.{type(df).__name__}{hint}")
        try:
            table = pa.Table.from_pandas(df, preserve_index=False)
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise CatalogError(f"cannot convert pandas DataFrame {name!r} to Arrow: {e}") from e
        self._session.register(name, MemoryTable(table))

    def register_dask(self, name: str, ddf: Any) -> None:
        """A dask DataFrame: its partitions are read inside pqe's task graph."""
        self._session.register(name, DaskTable(ddf))

    def deregister(self, name: str) -> None:
        if not self._session.deregister(name):
            raise CatalogError(f"table {name!r} does not exist")

    def tables(self) -> list[str]:
        return self._session.catalog.names()

    # ---- queries -------------------------------------------------------------------------

    def table(self, name: str) -> DataFrame:
        return DataFrame(self._session, self._session.table_plan(name))

    def sql(self, query: str, params: Sequence[Any] | None = None, *,
            timeout: float | None = None, cancel=None) -> DataFrame:
        """Run SQL: a lazy DataFrame for a query; other statements run at once and give their
        rows (SHOW, DESCRIBE, EXPLAIN) or a one-row `count` of the rows they changed. `?`
        placeholders take `params` in the order they appear in the text; `timeout`/`cancel`
        apply to statements that run at once."""
        return self.dataframe(self._session.sql(query, params, timeout=timeout, cancel=cancel))

    def dataframe(self, result: Result) -> DataFrame:
        """A statement's result as a DataFrame."""
        if result.plan is not None:
            return DataFrame(self._session, result.plan)
        if result.table is not None:
            return DataFrame(self._session, memory_result(result.table))
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
        self._session.close()

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["Context", "Error"]
