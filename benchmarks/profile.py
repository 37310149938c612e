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
