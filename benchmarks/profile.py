"""Where pqe spends a query's time: parse, bind, optimize, physical planning, graph build,
execution.

This repeats the steps of `Context.sql(...).to_arrow()` one at a time with a clock around each,
using pqe internals; if those move, this module is the one place to follow them. A test in
tests/test_benchmark_smoke.py keeps it honest by checking its answers.
"""

from __future__ import annotations

import time
from typing import Any

import pyarrow as pa

PHASES = ("parse", "bind", "optimize", "physical", "lower", "execute")


def profile_pqe(ctx: Any, sql: str) -> tuple[pa.Table, dict[str, float]]:
    """Run one query phase by phase; returns the answer and seconds per phase."""
    from sqlglot import exp

    from pqe.dataframe import DataFrame
    from pqe.errors import UnsupportedError
    from pqe.execution.lower import lower
    from pqe.kernels.relational import concat
    from pqe.optimizer import optimize
    from pqe.physical.planner import plan_physical
    from pqe.sql.binder import Binder
    from pqe.sql.parser import parse

    times: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(phase: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        times[phase] = now - clock
        clock = now

    statements = parse(sql)
    lap("parse")
    queries = [s for s in statements if isinstance(s, (exp.Query, exp.Values))]
    if len(queries) != len(statements) or not queries:
        raise UnsupportedError("the profiler runs single queries only")
    plan = Binder(ctx.catalog, sql).bind_query(queries[-1])
    lap("bind")
    optimized = optimize(plan)
    lap("optimize")
    phys = plan_physical(optimized, ctx._planner_config())
    lap("physical")
    graph, keys = lower(phys)
    lap("lower")
    tables = ctx._executor.run(graph, keys)
    result = DataFrame(ctx, plan)._finish(concat(tables) if tables else None)
    lap("execute")
    return result, times
