"""The lazy DataFrame: a logical plan plus the Context that runs it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pyarrow as pa

from .errors import ExecutionError
from .plan.explain import format_plan
from .plan.logical import LogicalPlan

if TYPE_CHECKING:  # pragma: no cover
    from .context import Context


class DataFrame:
    """A query that has not run yet. Immutable; every method returns a new DataFrame or a
    result. Run it with `to_arrow()`, `to_pandas()`, ...; see it with `explain()`."""

    def __init__(self, ctx: Context, plan: LogicalPlan):
        self._ctx = ctx
        self._plan = plan
        self._optimized: LogicalPlan | None = None

    # ---- description ---------------------------------------------------------------------

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(f.name, f.dtype, f.nullable) for f in self._plan.schema])

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self._plan.schema]

    def logical_plan(self) -> LogicalPlan:
        return self._plan

    def optimized_plan(self) -> LogicalPlan:
        if self._optimized is None:
            from .optimizer import optimize

            self._optimized = optimize(self._plan)
        return self._optimized

    def physical_plan(self):
        from .physical.planner import plan_physical

        return plan_physical(self.optimized_plan(), self._ctx._planner_config())

    def explain(self, analyze: bool = False) -> str:
        """Logical, optimized and physical plans as deterministic text."""
        from .physical.plan import format_physical

        phys = self.physical_plan()
        parts = ["== Logical Plan ==", format_plan(self._plan),
                 "", "== Optimized Logical Plan ==", format_plan(self.optimized_plan()),
                 "", "== Physical Plan ==", format_physical(phys)]
        if analyze:
            start = time.perf_counter()
            table = self._run(phys)
            elapsed = time.perf_counter() - start
            parts += ["", "== Execution ==",
                      f"rows={table.num_rows} time={elapsed:.3f}s"]
        return "\n".join(parts)

    # ---- execution -----------------------------------------------------------------------

    def _run(self, phys) -> pa.Table:
        from .execution.lower import lower
        from .kernels.relational import concat

        graph, keys = lower(phys)
        tables = self._ctx._executor.run(graph, keys)
        result = concat(tables) if tables else None
        return self._finish(result)

    def _finish(self, table: pa.Table | None) -> pa.Table:
        fields = self._plan.schema
        schema = pa.schema([pa.field(f.name, f.dtype if not pa.types.is_null(f.dtype) else pa.null())
                            for f in fields])
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

    def to_arrow(self) -> pa.Table:
        """Run the query; the result as a pyarrow Table."""
        return self._run(self.physical_plan())

    def to_pandas(self):
        return self.to_arrow().to_pandas()

    def to_pylist(self) -> list[dict]:
        return self.to_arrow().to_pylist()

    def __repr__(self) -> str:
        cols = ", ".join(f"{f.name}: {f.dtype}" for f in self._plan.schema)
        return f"<pqe.DataFrame [{cols}]>"
