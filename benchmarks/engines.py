"""Engine adapters: each runs the unchanged TPC-H SQL text and returns a pyarrow Table.

Every engine reads the same Parquet files on every run (no engine is given preloaded data) and
is limited to the same number of threads. The timed unit is "SQL text in, Arrow table out":
parsing, planning, execution and materialising the result.
"""

from __future__ import annotations

import os
import sys
from importlib import metadata
from pathlib import Path

import pyarrow as pa

from data.tpch import TABLES, table_path


def _glob(root: Path, table: str) -> str:
    p = table_path(root, table)
    return str(p / "*.parquet") if p.is_dir() else str(p)


def pkg_version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def register_tpch(ctx, root: Path):
    """Register the eight TPC-H tables of `root` in a pqe Context; returns the Context."""
    for t in TABLES:
        ctx.register_parquet(t, str(table_path(root, t)))
    return ctx


class Engine:
    """One engine, set up once over a TPC-H directory."""

    name = "engine"
    dist = ""  # the PyPI distribution, for the version

    def __init__(self, root: Path, threads: int) -> None:
        self.root = root
        self.threads = threads

    def run(self, sql: str) -> pa.Table:
        raise NotImplementedError

    def interrupt(self) -> None:
        """Stop a running query after a timeout, when the engine can (most cannot)."""

    def close(self) -> None:
        pass

    def version(self) -> str:
        return pkg_version(self.dist)

    def threads_note(self) -> str:
        return f"threads={self.threads}"


class PqeEngine(Engine):
    name = dist = "pqe"

    def __init__(self, root: Path, threads: int) -> None:
        super().__init__(root, threads)
        import pqe

        self.ctx = register_tpch(pqe.Context(threads=threads), root)

    def run(self, sql: str) -> pa.Table:
        return self.ctx.sql(sql).to_arrow()

    def profile(self, sql: str) -> tuple[pa.Table, dict[str, float]]:
        from .profile import profile_pqe

        return profile_pqe(self.ctx, sql)

    def operators(self, sql: str) -> dict[str, float]:
        from .profile import operator_seconds

        return operator_seconds(self.ctx, sql)

    def scan_reads(self, sql: str) -> list:
        """What the query reads (planned once, outside the timing): see `scan_floor`."""
        from .profile import scan_reads

        return scan_reads(self.ctx, sql)

    def scan_floor(self, reads: list) -> int:
        """pyarrow alone reading the row groups and columns pqe's plan reads."""
        from .profile import read_floor

        return read_floor(reads, self.threads)

    def close(self) -> None:
        self.ctx.close()

    def threads_note(self) -> str:
        return f"pqe.Context(threads={self.threads}) (Dask threaded scheduler)"


class DuckDBEngine(Engine):
    """Also the reference answer. Settings match pqe's semantics: integer division truncates,
    NULLs sort last ascending / first descending (PostgreSQL)."""

    name = dist = "duckdb"

    def __init__(self, root: Path, threads: int) -> None:
        super().__init__(root, threads)
        import duckdb

        self.con = duckdb.connect()
        self.con.execute("SET integer_division = true")
        self.con.execute("SET default_null_order = 'nulls_last_on_asc_first_on_desc'")
        self.con.execute(f"SET threads = {threads}")
        for t in TABLES:
            self.con.execute(f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{_glob(root, t)}')")

    def run(self, sql: str) -> pa.Table:
        return self.con.sql(sql).to_arrow_table()

    def interrupt(self) -> None:
        self.con.interrupt()

    def close(self) -> None:
        self.con.close()

    def threads_note(self) -> str:
        return f"SET threads = {self.threads}"


class PolarsEngine(Engine):
    """`polars.SQLContext` over `scan_parquet` LazyFrames. Polars sizes its thread pool once,
    from POLARS_MAX_THREADS, when first imported: `set_thread_env` must run before that."""

    name = dist = "polars"

    def __init__(self, root: Path, threads: int) -> None:
        super().__init__(root, threads)
        set_thread_env(threads)
        import polars as pl

        self.pl = pl
        self.pool = pl.thread_pool_size()
        self.ctx = pl.SQLContext({t: pl.scan_parquet(_glob(root, t)) for t in TABLES})

    def run(self, sql: str) -> pa.Table:
        return self.ctx.execute(sql, eager=False).collect().to_arrow()

    def threads_note(self) -> str:
        note = f"POLARS_MAX_THREADS={self.threads}, thread_pool_size()={self.pool}"
        if self.pool != self.threads:
            note += " (polars was imported before the variable was set)"
        return note


class DataFusionEngine(Engine):
    """`target_partitions` bounds DataFusion's parallelism; its Tokio runtime itself has one
    worker per core and is not configurable from Python."""

    name = dist = "datafusion"

    def __init__(self, root: Path, threads: int) -> None:
        super().__init__(root, threads)
        from datafusion import SessionConfig, SessionContext

        cfg = (SessionConfig().with_target_partitions(threads).with_batch_size(8192)
               .with_repartition_joins(True).with_repartition_aggregations(True)
               .with_repartition_file_scans(True).with_parquet_pruning(True))
        self.ctx = SessionContext(cfg)
        for t in TABLES:
            self.ctx.register_parquet(t, str(table_path(root, t)))

    def run(self, sql: str) -> pa.Table:
        return self.ctx.sql(sql).to_arrow_table()

    def threads_note(self) -> str:
        return f"target_partitions={self.threads} (Tokio runtime: {os.cpu_count()} workers)"


def set_thread_env(threads: int) -> None:
    """Polars reads its thread count from the environment once, at import; too late after."""
    if "polars" in sys.modules:
        return
    os.environ["POLARS_MAX_THREADS"] = str(threads)


ENGINES: dict[str, type[Engine]] = {
    e.name: e for e in (PqeEngine, DuckDBEngine, PolarsEngine, DataFusionEngine)}
