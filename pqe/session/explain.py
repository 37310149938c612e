"""EXPLAIN text for every statement. EXPLAIN plans and prints; it never executes, except
that EXPLAIN ANALYZE of a query runs the query (and is refused for anything else)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import types as T
from ..errors import UnsupportedError
from ..physical.plan import format_physical
from ..plan import statements as S
from ..plan.explain import format_expr, format_plan
from ..plan.logical import LogicalPlan

if TYPE_CHECKING:  # pragma: no cover
    from .state import SessionState


def explain_query(session: SessionState, plan: LogicalPlan, analyze: bool = False, **run) -> str:
    optimized = session.optimize(plan)
    stats = None
    if analyze:
        table, phys, stats, elapsed = session.analyze(plan, optimized, **run)
    else:
        phys = session.physical_plan(optimized)
    parts = ["== Logical Plan ==", format_plan(plan),
             "", "== Optimized Logical Plan ==", format_plan(optimized),
             "", "== Physical Plan ==", format_physical(phys, stats)]
    if analyze:
        parts += ["", "== Execution ==",
                  f"rows={table.num_rows} time={elapsed:.3f}s (operator times are summed over "
                  f"partitions; `| parts=` shows the largest and median partition and their "
                  f"ratio, the skew, on threads and on a cluster)"]
    return "\n".join(parts)


def explain_statement(session: SessionState, stmt: S.Statement, analyze: bool = False,
                      **run) -> str:
    if isinstance(stmt, S.Query):
        return explain_query(session, stmt.plan, analyze, **run)
    if analyze:
        raise UnsupportedError(f"EXPLAIN ANALYZE would run the statement: it is supported for "
                               f"queries only, not for {stmt.kind}")
    line = describe_statement(stmt)
    plan = _plan_of(stmt)
    head = ["== Statement ==", line]
    if plan is None:
        return "\n".join(head)
    return "\n".join(head + [""] + [explain_query(session, plan)])


def _plan_of(stmt: S.Statement) -> LogicalPlan | None:
    if isinstance(stmt, (S.Insert,)):
        return stmt.source
    if isinstance(stmt, (S.Update, S.Delete)):
        return stmt.plan
    if isinstance(stmt, S.CreateTable):
        return stmt.source
    if isinstance(stmt, S.CreateView):
        return stmt.plan
    if isinstance(stmt, S.Copy):
        return stmt.source
    return None


def describe_statement(stmt: S.Statement) -> str:
    """One deterministic line naming what the statement would do (a path or name holding a
    newline escaped: one line still)."""
    from ..plan.explain import one_line

    return one_line(_describe_statement(stmt))


def _describe_statement(stmt: S.Statement) -> str:
    if isinstance(stmt, S.Insert):
        out = f"Insert: {stmt.table} [{', '.join(stmt.columns)}]"
        c = stmt.on_conflict
        if c is not None:
            out += f" on_conflict={c.action}"
            if c.target:
                out += f"({', '.join(c.target)})"
            if c.assignments:
                out += " set=[" + ", ".join(f"{k} = {format_expr(v)}" for k, v in c.assignments) + "]"
        return out
    if isinstance(stmt, S.Update):
        if stmt.assigned:  # UPDATE ... FROM: the plan yields the pairs
            return f"UpdateFrom: {stmt.table} [{', '.join(stmt.assigned)}]"
        return f"Update: {stmt.table}"
    if isinstance(stmt, S.Delete):
        return f"Delete: {stmt.table}"
    if isinstance(stmt, S.CreateTable):
        flags = " OR REPLACE" if stmt.replace else (" IF NOT EXISTS" if stmt.if_not_exists else "")
        if stmt.schema is not None:
            cols = ", ".join(f"{f.name} {T.type_name(f.type)}" + ("" if f.nullable else " NOT NULL")
                             for f in stmt.schema)
            out = f"CreateTable{flags}: {stmt.name} ({cols})"
            if stmt.primary_key:
                out += f" primary_key=({', '.join(stmt.primary_key)})"
            for u in stmt.unique:
                out += f" unique=({', '.join(u)})"
            return out
        return f"CreateTableAs{flags}: {stmt.name}"
    if isinstance(stmt, S.CreateView):
        flags = " OR REPLACE" if stmt.replace else (" IF NOT EXISTS" if stmt.if_not_exists else "")
        return f"CreateView{flags}: {stmt.name}"
    if isinstance(stmt, S.Drop):
        names = ", ".join(n for n, _ in stmt.names)
        return f"Drop: {stmt.object_kind} {names}" + (" IF EXISTS" if stmt.if_exists else "")
    if isinstance(stmt, S.Copy):
        opts = "".join(f", {k} ({', '.join(v)})" if isinstance(v, tuple) else f", {k} {v}"
                       for k, v in sorted(stmt.options.items()))
        return f"Copy: TO '{stmt.path}' (FORMAT {stmt.format}{opts})"
    if isinstance(stmt, S.Describe):
        return f"Describe: {len(stmt.columns)} columns"
    return stmt.kind
