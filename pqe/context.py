"""`pqe.Context`: the catalog, the scheduler, and the entry points (`sql`, `table`, ...)."""

from __future__ import annotations

import os
import re
from typing import Any

import pyarrow as pa

from .catalog import Catalog, CsvTable, DaskTable, MemoryTable, ParquetTable
from .dataframe import DataFrame
from .errors import CatalogError, Error, ResourceError, SQLSyntaxError
from .execution.scheduler import Executor
from .physical.planner import PlannerConfig
from .plan import builder as B

_EXPLAIN = re.compile(r"^\s*explain(\s+analyze)?\s+", re.I)


class Context:
    """Where tables are registered and queries run.

    scheduler: None/"threads" (Dask's threaded scheduler, the default), "sync" (one thread,
    for debugging), or a "tcp://host:port" dask.distributed scheduler; client: an existing
    `distributed.Client`; workers (with memory_limit): start a `distributed.LocalCluster` of
    that many worker processes, closed with the Context. partitions: how many partitions to
    split work into (default: two per thread of the scheduler, fewer for small data).
    """

    def __init__(self, scheduler: str | None = None, *, client: Any = None,
                 workers: int | None = None, memory_limit: str | int | None = None,
                 partitions: int | None = None, threads: int | None = None,
                 memory_guard: bool = True):
        self.catalog = Catalog()
        self.memory_guard = memory_guard
        self._executor = Executor(scheduler, client, threads, workers, memory_limit)
        if partitions is not None and partitions < 1:
            raise Error("partitions must be at least 1")
        self._partitions = partitions

    def _planner_config(self) -> PlannerConfig:
        if self._partitions is not None:
            return PlannerConfig(target_partitions=self._partitions, min_partition_rows=1,
                                 max_partition_rows=1 << 62)
        return PlannerConfig(target_partitions=2 * self._executor.parallelism)

    # ---- registration --------------------------------------------------------------------

    def register_parquet(self, name: str, path: str | os.PathLike | list) -> None:
        """A Parquet file, directory (recursive, hive partitions), glob, or list of files."""
        self.catalog.register(name, ParquetTable(path))

    def register_csv(self, name: str, path: str | os.PathLike | list, schema: dict | None = None,
                     delimiter: str = ",", header: bool = True) -> None:
        """CSV file(s); `schema` maps column names to types ("int64", "DECIMAL(10,2)", pyarrow
        types); columns not named are inferred. Empty fields are NULL."""
        self.catalog.register(name, CsvTable(path, schema, delimiter, header))

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
        self.catalog.register(name, MemoryTable(data))

    def register_pandas(self, name: str, df: Any) -> None:
        try:
            table = pa.Table.from_pandas(df, preserve_index=False)
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise CatalogError(f"cannot convert pandas DataFrame {name!r} to Arrow: {e}") from e
        self.catalog.register(name, MemoryTable(table))

    def register_dask(self, name: str, ddf: Any) -> None:
        """A dask DataFrame: its partitions are read inside pqe's task graph."""
        self.catalog.register(name, DaskTable(ddf))

    def deregister(self, name: str) -> None:
        if not self.catalog.drop(name):
            raise CatalogError(f"table {name!r} does not exist")

    def tables(self) -> list[str]:
        return self.catalog.names()

    # ---- queries -------------------------------------------------------------------------

    def table(self, name: str) -> DataFrame:
        real, entry = self.catalog.lookup(name)
        from .sql.binder import View

        if isinstance(entry, View):
            return self.sql(f'SELECT * FROM "{real}"')
        return DataFrame(self, B.scan(real, entry))

    def sql(self, query: str) -> DataFrame:
        """Run SQL: returns a lazy DataFrame for a query (statements run at once)."""
        if not isinstance(query, str):
            raise SQLSyntaxError(f"SQL must be a string, got {type(query).__name__}")
        m = _EXPLAIN.match(query)
        if m:
            # blank out the keyword (keeping newlines) so error positions stay those of `query`
            blank = "".join(ch if ch == "\n" else " " for ch in query[:m.end()])
            df = self.sql(blank + query[m.end():])
            text = df.explain(analyze=bool(m.group(1)))
            lines = pa.table({"plan": text.split("\n")})
            return DataFrame(self, B.scan("explain", MemoryTable(lines)))
        from .sql.parser import parse


        parsed = parse(query)
        if not parsed:
            raise SQLSyntaxError("empty statement")
        result = None
        for stmt in parsed:
            result = self._run_statement(stmt, query)
        return result

    def _run_statement(self, stmt, query: str) -> DataFrame:
        from sqlglot import exp

        from .sql import statements as S

        if isinstance(stmt, (exp.Query, exp.Values)):
            return DataFrame(self, self._binder(query).bind_query(stmt))
        return S.execute(self, stmt, query)

    def _check_memory(self, phys) -> None:
        """On this machine's schedulers, refuse a query whose estimated memory clearly exceeds
        what is available, instead of letting the process be killed."""
        if not self.memory_guard or self._executor.kind == "distributed":
            return
        from .physical.plan import estimated_memory

        need = estimated_memory(phys)
        have = _available_memory()
        if have is not None and need > have:
            gib = 1 << 30
            raise ResourceError(
                f"this query needs about {need / gib:.1f} GiB of memory at once but only "
                f"{have / gib:.1f} GiB is available: run it on a cluster "
                f"(pqe.Context(workers=N, memory_limit=...) or scheduler='tcp://...'), "
                f"or pass memory_guard=False to try anyway")

    def _binder(self, sql: str):
        from .sql.binder import Binder

        return Binder(self.catalog, sql, run=lambda plan: DataFrame(self, plan).to_arrow())

    @property
    def dashboard_link(self) -> str | None:
        """The Dask dashboard of the cluster this Context runs on (None on threads)."""
        return self._executor.dashboard_link

    def close(self) -> None:
        self._executor.close()

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _available_memory() -> int | None:
    """MemAvailable from /proc/meminfo (bytes), or None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
