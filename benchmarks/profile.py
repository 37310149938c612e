"""Where pqe spends a query's time: parse, bind, optimize, physical planning, graph build,
execution; and, within execution, each kind of operator (from EXPLAIN ANALYZE).

This repeats the steps of `Context.sql(...).to_arrow()` one at a time with a clock around each,
using pqe internals; if those move, this module is the one place to follow them. A test in
tests/test_benchmark_smoke.py keeps it honest by checking its answers.
"""

from __future__ import annotations

import re
import time
from typing import Any

import pyarrow as pa

PHASES = ("parse", "bind", "optimize", "physical", "lower", "execute")


def profile_pqe(ctx: Any, sql: str) -> tuple[pa.Table, dict[str, float]]:
    """Run one query phase by phase; returns the answer and seconds per phase."""
    from pqe.errors import UnsupportedError
    from pqe.execution.lower import lower
    from pqe.plan.statements import Query
    from pqe.session.state import finish

    session = ctx.session
    times: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(phase: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        times[phase] = now - clock
        clock = now

    statements = session.parse(sql)
    lap("parse")
    if len(statements) != 1 or statements[0].explain is not None:
        raise UnsupportedError("the profiler runs single queries only")
    stmt = session.bind(statements[0], sql)
    if not isinstance(stmt, Query):
        raise UnsupportedError("the profiler runs single queries only")
    plan = stmt.plan
    lap("bind")
    optimized = session.optimize(plan)
    lap("optimize")
    phys = session.physical_plan(optimized)
    lap("physical")
    graph, keys = lower(phys)
    lap("lower")
    tables = session.executor.run_graph(graph, keys)
    result = finish(plan, tables)
    lap("execute")
    return result, times


def task_profile(ctx: Any, sql: str) -> dict[str, float]:
    """Where one run of the query spends its wall time on the threaded scheduler: `plan`
    (parse to task graph: serial Python), `execute` (the graph run, result assembled), and
    within `execute` the time with two or more tasks running (`parallel`), exactly one
    (`serial`: gathers, final steps, broadcast builds everyone waits for) and none (`idle`:
    the scheduler and Python between tasks, the result's assembly); `task_seconds` = the
    tasks' summed durations, `tasks` = their number. Each task of the graph is wrapped in a
    clock (the graph is pqe's tuples, run unchanged otherwise)."""
    from pqe.execution.lower import lower
    from pqe.session.state import finish

    session = ctx.session
    start = time.perf_counter()
    stmt = session.bind(session.parse(sql)[0], sql)
    phys = session.physical_plan(session.optimize(stmt.plan))
    graph, keys = lower(phys)
    spans: list[tuple[float, float]] = []

    def timed(fn, *args):
        began = time.perf_counter()
        try:
            return fn(*args)
        finally:
            spans.append((began, time.perf_counter()))  # list.append is atomic

    wrapped = {k: ((timed, *v) if isinstance(v, tuple) and v and callable(v[0]) else v)
               for k, v in graph.items()}
    planned = time.perf_counter()
    finish(stmt.plan, session.executor.run_graph(wrapped, keys))
    done = time.perf_counter()
    # sweep the task boundaries: how long 0, 1 and 2+ tasks were running
    events = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    running, last, by = 0, planned, {0: 0.0, 1: 0.0, 2: 0.0}
    for t, delta in events:
        by[min(running, 2)] += max(0.0, t - last)
        running += delta
        last = max(last, t)
    by[0] += max(0.0, done - last)
    return {"plan": planned - start, "execute": done - planned, "tasks": float(len(spans)),
            "task_seconds": sum(e - s for s, e in spans), "idle": by[0], "serial": by[1],
            "parallel": by[2]}


_OPERATOR_LINE = re.compile(r"^\s*(\w+(?:\[\w+\])?)[:\s].*\btime=([0-9.]+)s")


def operator_seconds(ctx: Any, sql: str) -> dict[str, float]:
    """Seconds per kind of operator (`HashJoin[broadcast]`, `ParquetScan`, ...) in one run of
    the query, summed over its partitions and over the operators of that kind: pqe's own
    EXPLAIN ANALYZE, whose per-operator times these are."""
    text = ctx.sql(sql).explain(analyze=True)
    out: dict[str, float] = {}
    for line in text[text.index("== Physical Plan =="):].splitlines():
        m = _OPERATOR_LINE.match(line)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(2))
    return out


# ---- scan floor ------------------------------------------------------------------------------

Read = tuple[str, list[int], list[str]]  # a file, its row groups, the columns


def scan_reads(ctx: Any, sql: str) -> list[list[Read]]:
    """What the query reads from Parquet, from pqe's physical plan: the reads of every
    partition of every distinct scan. The row groups are the ones left after pruning by the
    pushed filters' statistics (pyarrow.dataset prunes the same way); a scan the plan shares
    between uses (a CTE read twice, Q21's lineitem aliases) is read once, as pqe does."""
    from pqe.physical.plan import ScanExec

    session = ctx.session
    stmt = session.bind(session.parse(sql)[0], sql)
    phys = session.physical_plan(session.optimize(stmt.plan))
    seen: set[int] = set()
    jobs: list[list[Read]] = []

    def walk(node: Any) -> None:
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, ScanExec) and node.provider.kind == "parquet":
            columns = [name for name, _ in node.columns]
            for part in node.parts:
                job: list[Read] = []
                for unit in part:
                    if not unit.fs.is_local:
                        raise ValueError("the scan floor reads local files only")
                    path = unit.fs.fs_path(unit.path)
                    if job and job[-1][0] == path:
                        job[-1][1].extend(unit.row_groups)
                    else:
                        job.append((path, list(unit.row_groups), columns))
                if job:
                    jobs.append(job)
        for child in node.children():
            walk(child)

    walk(phys)
    return jobs


def read_floor(jobs: list[list[Read]], threads: int) -> int:
    """Read what `scan_reads` listed with pyarrow alone: each of pqe's scan partitions is one
    job (`threads` at a time) that opens its files and decodes their row groups (same
    columns, Arrow's default types); no filter is evaluated and nothing is done with the rows.
    Returns the number of rows read. Read through pyarrow.dataset's fragments (as pqe's
    scans are): `ParquetFile.read_row_groups` took ~1.6x as long for the same columns and
    row groups (TPC-H SF1 lineitem, 4 columns, 53 row groups: 0.168 s against 0.104), and a
    floor read so was too high."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    # (without pre-buffering, as pqe reads local files: a little faster)
    fmt = ds.ParquetFileFormat(
        default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=False))
    fs = pafs.LocalFileSystem()

    def one(job: list[Read]) -> int:
        rows = 0
        for path, groups, columns in job:
            frag = fmt.make_fragment(path, fs)
            if groups:
                frag = frag.subset(row_group_ids=groups)
            rows += frag.to_table(columns=columns, use_threads=False).num_rows
        return rows

    with ThreadPoolExecutor(max(1, threads)) as pool:
        return sum(pool.map(one, jobs))
