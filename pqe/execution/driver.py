"""Running a physical plan: lower it to a Dask graph and run it on the Context's executor.

Most plans are one graph. A plan with recursive queries (WITH RECURSIVE) runs in stages: each
recursive query (innermost first) runs its anchor, then its step over the previous
iteration's rows until an iteration yields none, and its rows then enter the main graph as
data. Every stage runs inside the same cancellable job, under the same token, so a timeout,
`cancel`, or Ctrl-C stops an endless recursion exactly as it stops any other query.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from ..errors import ExecutionError
from ..kernels.relational import concat
from ..physical import plan as P
from . import ops as O
from .diagnostics import OpStats
from .lower import Lowering
from .scheduler import Executor, PlacedDataLost


@dataclass
class Execution:
    """The output partitions of a run and, when collected, per-operator statistics
    (id(physical node) -> (rows, seconds, tasks), an `OpStats` whose `partitions` lists
    (rows, seconds) per partition, on threads and on a cluster alike)."""

    tables: list[pa.Table]
    stats: dict | None = None
    tasks: int = 0


def execute(executor: Executor, plan: P.PhysicalPlan, *, timeout: float | None = None,
            cancel=None, progress: Callable[[int, int], None] | None = None,
            collect_stats: bool = False, shown: float | None = None) -> Execution:
    """Run `plan`; Ctrl-C, `timeout` (seconds) and `cancel` (a threading.Event) stop it
    (`shown`: the timeout the message names, when planning used part of it)."""
    token = O.CancelToken(collect_stats=collect_stats)
    # (a cluster that recomputed a lost worker's tasks of such a plan refuses the answer)
    token.volatile = P.is_volatile_plan(plan)
    return executor.run_job(lambda: _run(executor, plan, token, progress), token, timeout,
                            cancel, shown)


def _run(executor: Executor, plan: P.PhysicalPlan, token: O.CancelToken, progress) -> Execution:
    runner = _Runner(executor, token, progress)
    for node in _recursive_nodes(plan):
        runner.materialized[id(node)] = runner.iterate(node)
    tables, low = runner.run(plan, {}, "result")
    stats = None
    if token.stats is not None:
        by_number = {nid: key for key, nid in low.node_ids.items()}
        stats = {}
        for nid, (rows, seconds, ops) in token.stats.items():
            if nid in by_number:
                parts = token.parts.get(nid, {})
                per_part = [(parts[i][0], parts[i][1]) for i in sorted(parts)]
                stats[by_number[nid]] = OpStats(rows, seconds, ops, per_part)
    return Execution(tables, stats, runner.tasks)


# times a query is lowered and run again after losing pieces of an in-memory table
PLACED_RETRIES = 2


def _recursive_nodes(plan: P.PhysicalPlan) -> list[P.RecursiveExec]:
    """Recursive queries in the order they must run: children (nested ones) first."""
    out: list[P.RecursiveExec] = []
    seen: set[int] = set()

    def visit(node: P.PhysicalPlan) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        for child in node.children():
            visit(child)
        if isinstance(node, P.RecursiveExec):
            out.append(node)

    visit(plan)
    return out


# a recursive step whose work tables hold at most this many rows runs on the caller's thread
SMALL_STEP_ROWS = 4096


class _Runner:
    def __init__(self, executor: Executor, token: O.CancelToken, progress) -> None:
        self.executor = executor
        self.token = token
        self.progress = progress
        self.materialized: dict[int, pa.Table] = {}
        self.tasks = 0
        self._stage = 0

    def run(self, plan: P.PhysicalPlan, bindings: dict, label: str, here: bool = False):
        """Lower `plan` and run its graph; `here`: on this thread, task after task."""
        self._stage += 1
        progress = self.progress
        for attempt in range(PLACED_RETRIES + 1):
            low = Lowering(self.token, self.materialized, bindings, tag=str(self._stage),
                           place=self.executor.placement())
            keys = low.materialize(low.lower_plan(plan), label)
            try:
                tables = self.executor.run_graph(low.graph, keys, self.token, progress,
                                                 here=here)
            except PlacedDataLost as e:
                # a worker died with pieces of an in-memory table: they are scattered again
                # when the plan is lowered again
                if attempt == PLACED_RETRIES or self.token.reason is not None:
                    raise
                logging.getLogger("pqe").warning("%s: running the query once more", e)
                self.executor.reruns += 1
                progress = None
                continue
            self.tasks += len(low.graph)
            return tables, low
        raise AssertionError("unreachable")

    def table(self, plan: P.PhysicalPlan, bindings: dict, schema) -> pa.Table:
        """The plan's rows as one table whose columns are named by `schema`'s ids. A step
        over a small work table runs on this thread (`SMALL_STEP_ROWS`): handing each of
        its few tasks to the pool and waiting for it was most of a round's time (10,000
        rounds of a counter took 14 s)."""
        small = all(t.num_rows <= SMALL_STEP_ROWS for t in bindings.values())
        here = bool(bindings) and small and not self.executor.kind == "distributed"
        tables, _ = self.run(plan, bindings, "recursive", here=here)
        ids = [f.id for f in plan.schema]
        empty = pa.schema([pa.field(f.id, f.dtype) for f in plan.schema]).empty_table()
        table = concat([t.select(ids) for t in tables]) if tables else empty
        cols = [c.cast(f.dtype) if c.type != f.dtype else c
                for c, f in zip(table.columns, schema, strict=True)]
        return pa.Table.from_arrays(cols, names=[f.id for f in schema])

    def iterate(self, node: P.RecursiveExec) -> pa.Table:
        work = _work_schema(node.step, node.name)
        delta = self.table(node.anchor, {}, work)
        # UNION's rows so far, which its step drops from each round, are held as a few
        # contiguous runs of decreasing size (each row is copied O(log rounds) times): one
        # part per round made a chunk per round, which each round's join went through (3,000
        # rounds of one row took 330 s, hunt "cte"). UNION ALL keeps each round's part.
        parts = [delta.combine_chunks() if node.distinct else delta]
        for _ in range(node.max_iterations):
            if delta.num_rows == 0:
                break
            if self.token.reason is not None:
                from ..errors import QueryCancelled

                raise QueryCancelled(self.token.reason)
            everything = concat(parts) if node.distinct else delta
            bindings = {(node.name, "delta"): delta, (node.name, "all"): everything}
            delta = self.table(node.step, bindings, work)
            if not node.distinct:
                parts.append(delta)
            elif delta.num_rows:
                parts.append(delta.combine_chunks())
                while len(parts) > 1 and 2 * parts[-1].num_rows >= parts[-2].num_rows:
                    last = parts.pop()
                    parts[-1] = concat([parts[-1], last]).combine_chunks()
        else:
            if delta.num_rows:  # (a last round that added nothing finished it: no error)
                raise ExecutionError(f"recursive query {node.name.split('#')[0]} did not "
                                     f"finish after {node.max_iterations} iterations")
        result = concat(parts)
        if len(parts) > 64 and result.num_rows < 10_000 * len(parts):
            # many rounds of few rows each: one chunk per round made every later operator
            # go through them one by one
            result = result.combine_chunks()
        return pa.Table.from_arrays(result.columns, names=[f.id for f in node.schema])


def _work_schema(step: P.PhysicalPlan, name: str):
    """The work table's columns (its ids are what the step's WorkTableExec nodes read)."""
    stack = [step]
    while stack:
        node = stack.pop()
        if isinstance(node, P.WorkTableExec) and node.name == name and node.which == "delta":
            return node.schema
        stack.extend(node.children())
    # the step does not read the work table (e.g. `SELECT 1 FROM other`): any names do
    return step.schema
