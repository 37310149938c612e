"""`SessionState`: the catalog, the executor, and the one pipeline every statement takes.

    SQL text --parse--> statements --bind--> typed statement (pqe.plan.statements)
      --optimize--> logical plan --plan--> physical plan --lower--> graph --run--> Arrow

The Context, the DataFrame, the DB-API and the shell reach the engine only through the public
methods here. Write statements (DDL, DML, COPY) are bound and executed under one write lock,
so concurrent writers on one session are serialized and never lose a row; readers bind
against a snapshot of the catalog and never wait for writers.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from .. import types as T
from ..access import enforcing
from ..catalog import Catalog, CatalogSnapshot, MemoryTable, unreadable_columns
from ..deep import AnyEvent, in_nested_query, plan_until, run_deep
from ..errors import (CatalogError, Error, ExecutionError, InternalError, QueryCancelled,
                      QueryTimeout, ResourceError, SQLSyntaxError, UnsupportedError)
from ..execution import driver
from ..execution.scheduler import Executor
from ..kernels.memory import available_memory
from ..optimizer import optimize
from ..physical.plan import PhysicalPlan, estimated_memory
from ..physical.planner import plan_physical
from ..plan import builder as B
from ..plan import statements as S
from ..plan.logical import LogicalPlan
from ..sql import (ParsedStatement, View, bind_statement, insert_rows_statement, is_write,
                   parse_statements, statement_word)
from . import explain as X
from . import writes as W
from .config import SessionConfig
from .result import Result

Progress = Callable[[int, int], None]
_sessions: weakref.WeakSet = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A write running on another thread when the process forked holds the write lock in the
    child for ever (that thread is not there): every write of the child waited on it."""
    for session in list(_sessions):
        session.write_lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class SessionState:
    """One session: settings, catalog, executor, write lock."""

    def __init__(self, config: SessionConfig, executor: Executor, catalog: Catalog | None = None):
        self.config = config
        self.executor = executor
        self.catalog = catalog if catalog is not None else Catalog()
        self.write_lock = threading.RLock()
        self.indexes: dict[str, str] = {}  # CREATE INDEX names -> their tables (S.NoOp)
        _sessions.add(self)

    # ---- SQL -----------------------------------------------------------------------------

    def parse(self, text: str, params: Sequence[Any] | None = None) -> list[ParsedStatement]:
        if not isinstance(text, str):
            raise SQLSyntaxError(f"SQL must be a string, got {type(text).__name__}")
        parsed = parse_statements(text, params)
        if not parsed:
            raise SQLSyntaxError("empty statement")
        return parsed

    def bind(self, parsed: ParsedStatement, text: str,
             snapshot: CatalogSnapshot | None = None) -> S.Statement:
        return _reported("binding", bind_statement, parsed,
                         snapshot or self.catalog.frozen(), text)

    def sql(self, text: str, params: Sequence[Any] | None = None, *,
            timeout: float | None = None, cancel=None, progress: Progress | None = None) -> Result:
        """Run every statement of `text`; the last one's result. Parsing, binding and the
        statements that run at once happen on a deep-stack thread (pqe.deep): a deeply nested
        statement plans, or fails with one clear error."""
        interrupt = threading.Event()
        timeout = checked_timeout(timeout)
        return run_deep(self._sql, text, params, timeout, AnyEvent(cancel, interrupt), progress,
                        on_interrupt=interrupt.set)

    def _sql(self, text, params, timeout, cancel, progress) -> Result:
        result = None
        with enforcing(self.config.access):
            statements = self.parse(text, params)
            for i, parsed in enumerate(statements):
                # the timeout covers binding and planning too (checkpoints in the planner's
                # tree walks), each statement's from its start
                started = time.monotonic()
                deadline = None if timeout is None else started + timeout
                with plan_until(deadline, cancel):
                    result = self.run_parsed(parsed, text, timeout=timeout, cancel=cancel,
                                             progress=progress)
                if result.plan is not None and i < len(statements) - 1:
                    # a query before the last statement runs (its rows are dropped), as in
                    # psql and DuckDB: only bound, its run-time errors (a failed cast, a
                    # scalar subquery of two rows) were never raised and the statements
                    # after it ran
                    self.run(result.plan, timeout=timeout, cancel=cancel, progress=progress,
                             started=started)
        return result

    def insert_rows(self, text: str, rows: Sequence[Sequence[Any]], *,
                    timeout: float | None = None, cancel=None) -> Result | None:
        """`INSERT ... VALUES (?, ...)` run once for all parameter `rows`, as one statement
        (sql.insert_rows_statement); None, having run nothing, when `text` is not of that
        shape. The rows are inserted together or not at all."""
        interrupt = threading.Event()
        timeout = checked_timeout(timeout)
        return run_deep(self._insert_rows, text, rows, timeout, AnyEvent(cancel, interrupt),
                        on_interrupt=interrupt.set)

    def _insert_rows(self, text, rows, timeout, cancel) -> Result | None:
        with enforcing(self.config.access):
            parsed = insert_rows_statement(text, rows)
            if parsed is None:
                return None
            deadline = None if timeout is None else time.monotonic() + timeout
            with plan_until(deadline, cancel):
                return self.run_parsed(parsed, text, timeout=timeout, cancel=cancel)

    def run_parsed(self, parsed: ParsedStatement, text: str, **run) -> Result:
        """Bind and execute one parsed statement; a write is bound and run under the write
        lock, against the catalog as it is once the lock is held."""
        if parsed.explain is None and is_write(parsed.ast):
            self.config.access.check_change(statement_word(parsed.ast))
            start = time.monotonic()
            with self._writing(run.get("timeout"), run.get("cancel")):
                if run.get("timeout") is not None:  # what is left of it once the lock is held
                    run = {**run, "timeout": max(0.001, run["timeout"] -
                                                 (time.monotonic() - start))}
                return self.execute(self.bind(parsed, text), **run)
        return self.execute(self.bind(parsed, text), **run)

    @contextlib.contextmanager
    def _writing(self, timeout: float | None, cancel):
        """The write lock, waited for within the statement's timeout and until it is
        cancelled: a write queued behind a long one gave up neither, and committed after
        its deadline or after its caller had cancelled it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if in_nested_query():
            if not self.write_lock.acquire(blocking=False):
                # the write holding the lock may be the statement whose query runs this
                # task: waiting for it would wait for ever
                raise UnsupportedError("a write inside a user function or map_batches "
                                       "function cannot wait for another write on the same "
                                       "Context (the statement running the function may be "
                                       "that write)")
        else:
            while not self.write_lock.acquire(timeout=0.05):
                if cancel is not None and cancel.is_set():
                    raise QueryCancelled("cancelled while waiting for another write to finish")
                if deadline is not None and time.monotonic() > deadline:
                    raise QueryTimeout(f"timed out after {timeout:g} s waiting for another "
                                       f"write to finish")
        try:
            yield
        finally:
            self.write_lock.release()

    def execute(self, stmt: S.Statement, *, timeout: float | None = None, cancel=None,
                progress: Progress | None = None) -> Result:
        run = {"timeout": timeout, "cancel": cancel, "progress": progress}
        if isinstance(stmt, S.Query):
            return Result("SELECT", plan=stmt.plan)
        if isinstance(stmt, S.Explain):
            return Result("EXPLAIN", table=_lines(self.explain_statement(stmt.statement,
                                                                           stmt.analyze, **run)))
        if isinstance(stmt, S.ShowTables):
            names = self.catalog.names()
            return Result(stmt.kind, table=pa.table({"name": pa.array(names, pa.string())}))
        if isinstance(stmt, S.Describe):
            from .. import types as T

            cols = stmt.columns
            lengths = stmt.lengths or (None,) * len(cols)
            return Result("DESCRIBE", table=pa.table({
                "column_name": pa.array([c[0] for c in cols], pa.string()),
                "column_type": pa.array([T.type_name(c[1]) if n is None else f"VARCHAR({n})"
                                         for c, n in zip(cols, lengths, strict=True)],
                                        pa.string()),
                "null": pa.array(["YES" if c[2] else "NO" for c in cols], pa.string()),
            }))
        if isinstance(stmt, S.NoOp):
            if stmt.index is not None:
                self._index_name(stmt)
            return Result(stmt.kind)
        if stmt.writes:
            with self._writing(timeout, cancel):
                return W.execute(self, stmt, run)
        raise UnsupportedError(f"{stmt.kind} statements are not supported")  # pragma: no cover

    def _index_name(self, stmt: S.NoOp) -> None:
        """Remember or forget an index name (an index changes no answer; its name is all
        there is of it). Names on tables since dropped are forgotten first."""
        with self.write_lock:
            snapshot = self.catalog.frozen()
            for name, table in list(self.indexes.items()):
                try:
                    snapshot.lookup(table, exact=True)
                except Error:
                    del self.indexes[name]
            if stmt.what == "CREATE INDEX":
                if stmt.index in self.indexes:
                    if stmt.if_exists:
                        return
                    raise CatalogError(f"index {stmt.index} already exists")
                self.indexes[stmt.index] = stmt.table
            elif self.indexes.pop(stmt.index, None) is None and not stmt.if_exists:
                raise CatalogError(f"index {stmt.index} does not exist")

    # ---- queries -------------------------------------------------------------------------

    def table_plan(self, name: str) -> LogicalPlan:
        """The plan reading a registered table or view."""
        snapshot = self.catalog.frozen()
        real, entry = snapshot.lookup(name)
        if isinstance(entry, View):
            quoted = '"' + real.replace('"', '""') + '"'
            with enforcing(self.config.access):  # a view's SQL is SQL text
                parsed = self.parse(f"SELECT * FROM {quoted}")
                stmt = run_deep(self.bind, parsed[0], "", snapshot)
            return stmt.plan
        why = unreadable_columns(entry.schema.names, f"table {real}",
                                 "rename them when registering it")
        if why:  # (as SQL refuses it: ctx.table() crashed in the scan or the optimizer)
            raise UnsupportedError(why)
        return B.scan(real, entry)

    def optimize(self, plan: LogicalPlan) -> LogicalPlan:
        return run_deep(optimize, plan)

    def physical_plan(self, optimized: LogicalPlan) -> PhysicalPlan:
        """The partitioned plan of an optimized logical plan."""
        from ..kernels.scan import pruning_expression
        from ..physical.planner import bound_memory

        cfg = self.config.planner_config(self.executor.parallelism)
        if cfg.memory_limit is None:
            if self.executor.kind != "distributed" and self.executor.memory_limit:
                # memory_limit= on threads: partitions sized to fit, exchanges through disk
                cfg = bound_memory(cfg, self.executor.memory_limit, self.executor.threads)
            elif (worker := self.executor.worker_memory()) is not None:
                # each worker within its own limit: partitions, broadcasts and exchanges too
                cfg = bound_memory(cfg, *worker)
        return run_deep(_physical, optimized, cfg, pruning_expression)

    def run(self, plan: LogicalPlan, *, optimized: LogicalPlan | None = None,
            timeout: float | None = None, cancel=None, progress: Progress | None = None,
            started: float | None = None) -> pa.Table:
        """A query's result, typed and named as its plan says. Its timeout covers planning
        (optimize, physical: stopped at the planner's checkpoints) and the run together,
        from `started` (a time.monotonic() value; now when None)."""
        timeout = checked_timeout(timeout)
        deadline = None if timeout is None else (started or time.monotonic()) + timeout
        with plan_until(deadline, cancel):
            phys = self.physical_plan(optimized if optimized is not None
                                      else self.optimize(plan))
        self.check_memory(phys)
        left = None if deadline is None else max(0.001, deadline - time.monotonic())
        run = driver.execute(self.executor, phys, timeout=left, cancel=cancel,
                             progress=progress, shown=timeout)
        return finish(plan, run.tables)

    def analyze(self, plan: LogicalPlan, optimized: LogicalPlan | None = None, *,
                timeout: float | None = None, cancel=None, progress: Progress | None = None):
        """Run a query collecting rows and time per operator: (result, physical plan, stats,
        seconds)."""
        import time

        phys = self.physical_plan(optimized if optimized is not None else self.optimize(plan))
        self.check_memory(phys)
        start = time.perf_counter()
        run = driver.execute(self.executor, phys, timeout=checked_timeout(timeout), cancel=cancel,
                             progress=progress, collect_stats=True)
        elapsed = time.perf_counter() - start
        return finish(plan, run.tables), phys, run.stats, elapsed

    def explain(self, plan: LogicalPlan, analyze: bool = False, **run) -> str:
        """Logical, optimized and physical plans of a query; with `analyze`, it runs and each
        operator shows its rows and time."""
        return X.explain_query(self, plan, analyze, **run)

    def explain_statement(self, stmt: S.Statement, analyze: bool = False, **run) -> str:
        """EXPLAIN of any statement: plans and prints, never executes (ANALYZE runs queries
        only)."""
        return X.explain_statement(self, stmt, analyze, **run)

    def check_memory(self, phys: PhysicalPlan) -> None:
        """On this machine's schedulers, refuse a query whose estimated memory clearly exceeds
        what is available, instead of letting the process be killed."""
        if not self.config.memory_guard or self.executor.kind == "distributed":
            return
        need = estimated_memory(phys)
        if self.executor.memory_limit:
            # the plan was bounded to memory_limit= and its exchanges past it go through disk,
            # but a cross join's output, a sort or a window is held all the same: checked
            # without what the disk-backed exchanges hold (skipping the guard let a 10^10-row
            # cross join under memory_limit='128MiB' grow until the process was killed)
            from ..physical.plan import ExchangeExec, nodes_once

            need = sum(node.est_bytes for node in nodes_once(phys)
                       if not (isinstance(node, ExchangeExec) and node.kind == "p2p"))
        have = available_memory()
        if have is not None and need > have:
            gib = 1 << 30
            raise ResourceError(
                f"this query needs about {need / gib:.1f} GiB of memory at once but only "
                f"{have / gib:.1f} GiB is available: run it on a cluster "
                f"(pqe.Context(workers=N, memory_limit=...) or scheduler='tcp://...'), "
                f"or pass memory_guard=False to try anyway")

    def to_dask(self, plan: LogicalPlan, optimized: LogicalPlan | None = None):
        """The query's partitions as a dask DataFrame (nothing runs now)."""
        from ..execution.interop import to_dask

        phys = self.physical_plan(optimized if optimized is not None else self.optimize(plan))
        schema = pa.schema([pa.field(f.name, f.dtype, f.nullable) for f in plan.schema])
        return to_dask(phys, schema, [f.id for f in plan.schema])

    def write(self, plan: LogicalPlan, path, format: str = "parquet", *,
              partition_by: Sequence[str] = (), overwrite: bool = False,
              options: dict | None = None, storage_options: dict | None = None,
              filesystem: Any = None, timeout: float | None = None, cancel=None,
              progress: Progress | None = None) -> int:
        """Write a query's rows as a directory of Parquet or CSV files, each partition by the
        task that computed it (on a cluster, on the workers), under hive `key=value/`
        directories for `partition_by`; atomic (see session.writes.write_dataset). Returns
        the rows written. Missing parent directories are created (removed again on
        failure). The caller checks access (SQL's COPY does; Python is trusted)."""
        return W.write_dataset(self, plan, path, format, tuple(partition_by), options,
                               overwrite=overwrite, storage_options=storage_options,
                               filesystem=filesystem, make_parents=True,
                               run={"timeout": checked_timeout(timeout), "cancel": cancel,
                                    "progress": progress})

    def register(self, name: str, provider: Any) -> None:
        with self.write_lock:
            old = self._entry(name)
            self.catalog.register(name, provider)
            if old is not None and old is not provider:
                self.executor.forget(old)

    def register_function(self, udf: Any) -> None:
        """Add (or replace) a user-defined function (pqe.plan.udf) under its name."""
        with self.write_lock:
            self.catalog.register_function(udf.name, udf)

    def deregister(self, name: str) -> bool:
        with self.write_lock:
            old = self._entry(name, None)
            dropped = self.catalog.drop(name)
            if old is not None:
                self.executor.forget(old)
            return dropped

    def _entry(self, name: str, exact: bool | None = True) -> Any:
        """The entry `register` replaces / `deregister` drops, if any."""
        key = self.catalog.find(name, exact) if isinstance(name, str) and name else None
        return self.catalog.snapshot().get(key) if key is not None else None

    def close(self) -> None:
        self.executor.close()


# ---- helpers ---------------------------------------------------------------------------------


def checked_timeout(timeout: Any) -> float | None:
    """A statement's timeout in seconds: None or a number at least 0 (NaN was ignored and the
    query ran to its end; '5' failed with Python's TypeError)."""
    import math

    if timeout is None:
        return None
    timeout = T.python_number(timeout)  # (np.int64(5) was refused)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
            math.isnan(timeout) or timeout < 0:
        raise Error(f"timeout must be a number of seconds (at least 0) or None, not {timeout!r}")
    return float(timeout)


def result_schema(plan: LogicalPlan) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.dtype) for f in plan.schema])


def finish(plan: LogicalPlan, tables: list[pa.Table]) -> pa.Table:
    """The output partitions as one table with the plan's column names and types."""
    from ..kernels.relational import concat

    fields = plan.schema
    schema = pa.schema([pa.field(f.name, f.dtype) for f in fields])
    table = concat(tables) if tables else None
    if table is None:
        return schema.empty_table()
    cols = []
    for f in fields:
        col = table.column(f.id)
        if col.type != f.dtype:
            try:
                col = col.cast(f.dtype)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise ExecutionError(
                    f"result column {f.name} is {col.type}, expected {f.dtype}: {e}") from e
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema)


def memory_result(table: pa.Table, name: str = "result") -> LogicalPlan:
    """A plan reading an Arrow table (a statement's rows, as a DataFrame)."""
    return B.scan(name, MemoryTable(table))


def _lines(text: str) -> pa.Table:
    return pa.table({"plan": pa.array(text.split("\n"), pa.string())})


__all__ = ["SessionState", "Result", "finish", "memory_result", "result_schema", "Error"]


def _reported(what: str, fn, *args):
    """`fn(*args)`; an exception that is not a pqe.Error (a bug in pqe or a library it calls)
    as one pqe.InternalError line naming it, not a traceback. RecursionError and MemoryError
    pass: pqe.deep turns them into errors that say the statement is too deep or too large."""
    try:
        return fn(*args)
    except (Error, RecursionError, MemoryError):
        raise
    except Exception as e:
        raise InternalError(f"{what} failed: {type(e).__name__}: "
                            f"{' '.join(str(e).split())[:200]}") from e


def _physical(optimized, cfg, pruning_expression):
    return _reported("physical planning", plan_physical, optimized, cfg, pruning_expression)
