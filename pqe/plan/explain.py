"""Deterministic text for expressions and logical plans (EXPLAIN, golden tests, messages).

Columns print by their display name (`qualifier.name`); internal ids never appear, so the text
does not depend on how many queries ran before.
"""

from __future__ import annotations

import datetime
import decimal
import re

import pyarrow as pa

from .. import types as T
from .expr import (AggCall, Call, Case, Cast, ColumnRef, Expr, InList, Literal, OuterRef,
                   SortKey, SubqueryExpr, UserCall, WindowCall)

_INFIX = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "modulo": "%",
          "eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
          "and": "AND", "or": "OR", "like": "LIKE", "ilike": "ILIKE",
          "is_distinct_from": "IS DISTINCT FROM", "is_not_distinct_from": "IS NOT DISTINCT FROM"}


# characters that end a line (str.splitlines) or are otherwise unprintable: a text literal
# holding one is written with escapes, so a plan line stays one line
_CONTROL = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(m: re.Match) -> str:
    c = m.group()
    return _ESCAPES.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def one_line(text: str) -> str:
    """`text` with its line breaks and other control characters escaped (`\\n`): a plan
    line that holds a name or text with a newline stays one line (one EXPLAIN row)."""
    return _CONTROL.sub(_escape, text)


def format_literal(value, dtype: pa.DataType) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        text = value.replace("'", "''")
        if _CONTROL.search(text):
            # PostgreSQL's escape string, E'a\nb': a newline in the value broke the plan
            # line in two (EXPLAIN showed `(t.s = 'a` and `b')` as two rows)
            return "E'" + _CONTROL.sub(_escape, text.replace("\\", "\\\\")) + "'"
        return "'" + text + "'"
    if isinstance(value, datetime.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (tuple, list)) and hasattr(dtype, "value_type"):  # a list: [1, 2]
        return "[" + ", ".join(format_literal(v, dtype.value_type) for v in value) + "]"
    if T.is_interval(dtype):
        months, days, nanos = value.months, value.days, value.nanoseconds
        parts = []
        if months:
            parts.append(f"{months} months")
        if days:
            parts.append(f"{days} days")
        if nanos or not parts:
            parts.append(f"{nanos / 1e9:g} seconds")
        return f"INTERVAL '{' '.join(parts)}'"
    return repr(value)


def _sort_key_text(k) -> str:
    text = format_expr(k.expr) + ("" if k.ascending else " DESC")
    if k.nulls_first != (not k.ascending):  # not the default placement: say it
        text += " NULLS FIRST" if k.nulls_first else " NULLS LAST"
    return text


def _nullif_operand(e: Case) -> Expr | None:
    """`b` when `e` is NULLIF(a, b) as the builder writes it, CASE WHEN a = b THEN NULL ELSE
    a END (`a` maybe cast for the comparison), else None."""
    if len(e.whens) != 1:
        return None
    (w, t), a = e.whens[0], e.else_
    if not (isinstance(t, Literal) and t.value is None and isinstance(w, Call)
            and w.fn == "eq" and len(w.args) == 2):
        return None
    x = w.args[0]
    if isinstance(x, Cast) and x.arg is a:
        x = x.arg
    return w.args[1] if x is a else None


def format_expr(e: Expr) -> str:
    if isinstance(e, ColumnRef):
        return e.field.display
    if isinstance(e, OuterRef):
        return f"outer({e.field.display})"
    if isinstance(e, Literal):
        return format_literal(e.value, e.dtype)
    if isinstance(e, Call):
        if e.fn in _INFIX and len(e.args) == 2:
            a, b = (format_expr(x) for x in e.args)
            return f"({a} {_INFIX[e.fn]} {b})"
        if e.fn == "not":
            return f"NOT {format_expr(e.args[0])}"
        if e.fn == "negate":
            return f"-{format_expr(e.args[0])}"
        if e.fn == "is_null":
            return f"{format_expr(e.args[0])} IS NULL"
        if e.fn == "is_not_null":
            return f"{format_expr(e.args[0])} IS NOT NULL"
        if e.fn.startswith("extract_"):
            return f"EXTRACT({e.fn[8:]} FROM {format_expr(e.args[0])})"
        return f"{e.fn}({', '.join(format_expr(a) for a in e.args)})"
    if isinstance(e, UserCall):
        return f"{e.fn}({', '.join(format_expr(a) for a in e.args)})"
    if isinstance(e, Cast):
        kw = "TRY_CAST" if e.try_ else "CAST"
        return f"{kw}({format_expr(e.arg)} AS {T.type_name(e.dtype)})"
    if isinstance(e, Case):
        b = _nullif_operand(e)
        if b is not None:  # (printing `a` once: nested NULLIFs doubled the text per level)
            return f"NULLIF({format_expr(e.else_)}, {format_expr(b)})"
        whens = " ".join(f"WHEN {format_expr(w)} THEN {format_expr(t)}" for w, t in e.whens)
        return f"CASE {whens} ELSE {format_expr(e.else_)} END"
    if isinstance(e, InList):
        op = "NOT IN" if e.negated else "IN"
        return f"{format_expr(e.arg)} {op} ({', '.join(format_expr(v) for v in e.values)})"
    if isinstance(e, AggCall):
        name = "count" if e.fn == "count_star" else e.fn
        args = "*" if e.fn == "count_star" else ", ".join(format_expr(a) for a in e.args)
        if e.distinct:
            args = "DISTINCT " + args
        if e.order_by:
            args += " ORDER BY " + ", ".join(_sort_key_text(k) for k in e.order_by)
        out = f"{name}({args})"
        if e.filter is not None:
            out += f" FILTER (WHERE {format_expr(e.filter)})"
        return out
    if isinstance(e, WindowCall):
        args = ", ".join(format_expr(a) for a in e.args)
        if e.distinct:
            args = "DISTINCT " + args
        if e.consts:
            args = ", ".join(x for x in [args, *map(repr, e.consts)] if x)
        over = []
        if e.partition_by:
            over.append("PARTITION BY " + ", ".join(format_expr(p) for p in e.partition_by))
        if e.order_by:
            over.append("ORDER BY " + ", ".join(format_sort_key(k) for k in e.order_by))
        if e.frame is not None:
            def b(x):
                return {"unbounded_preceding": "UNBOUNDED PRECEDING", "current": "CURRENT ROW",
                        "unbounded_following": "UNBOUNDED FOLLOWING"}.get(
                    x.kind, f"{x.offset} {x.kind.upper()}")
            over.append(f"{e.frame.mode.upper()} BETWEEN {b(e.frame.start)} AND {b(e.frame.end)}")
            if e.frame.exclude != "no_others":
                over.append("EXCLUDE " + e.frame.exclude.replace("_", " ").upper())
        name = "count" if e.fn == "count_star" else e.fn
        nulls = " IGNORE NULLS" if e.ignore_nulls else ""
        return (f"{name}({args or ('*' if e.fn == 'count_star' else '')}){nulls} "
                f"OVER ({' '.join(over)})")
    if isinstance(e, SubqueryExpr):
        if e.kind == "exists":
            return ("NOT " if e.negated else "") + "EXISTS(<subquery>)"
        if e.kind == "in" and e.op == "eq":
            op = "NOT IN" if e.negated else "IN"
            return f"{format_expr(e.arg)} {op} (<subquery>)"
        if e.kind == "in":
            text = f"{format_expr(e.arg)} {_COMPARISON_TEXT[e.op]} ANY (<subquery>)"
            return f"NOT ({text})" if e.negated else text
        return "(<scalar subquery>)"
    return repr(e)


def format_sort_key(k: SortKey) -> str:
    return (f"{format_expr(k.expr)} {'ASC' if k.ascending else 'DESC'} "
            f"NULLS {'FIRST' if k.nulls_first else 'LAST'}")


def _named(e: Expr, f) -> str:
    text = format_expr(e)
    if isinstance(e, ColumnRef) and e.field.name == f.name:
        return text
    return f"{text} AS {f.name}"


def describe_node(plan) -> str:
    """One line describing a logical node (without its children)."""
    from . import logical as L

    if isinstance(plan, L.Scan):
        cols = ", ".join(f.name for f in plan.schema)
        out = f"Scan: {plan.table} [{cols}]"
        if plan.filters:
            out += " filters=[" + ", ".join(format_expr(f) for f in plan.filters) + "]"
        if plan.nested:
            names = {f.id: f.name for f in plan.fields}
            out += " nested=[" + ", ".join(f"{names[i]}.{{{', '.join(kids)}}}"
                                           for i, kids in plan.nested) + "]"
        return out
    if isinstance(plan, L.Values):
        return f"Values: {len(plan.rows)} rows [{', '.join(f.name for f in plan.fields)}]"
    if isinstance(plan, L.Filter):
        return f"Filter: {format_expr(plan.predicate)}"
    if isinstance(plan, L.Project):
        items = ", ".join(_named(e, f) for e, f in zip(plan.exprs, plan.fields, strict=True))
        return f"Projection: {items}"
    if isinstance(plan, L.Join):
        parts = []
        if plan.on:
            parts.append("on=[" + ", ".join(
                f"{format_expr(a)} = {format_expr(b)}" for a, b in plan.on) + "]")
        if plan.filter is not None:
            parts.append(f"filter={format_expr(plan.filter)}")
        if plan.null_aware:
            parts.append("null_aware")
        kind = plan.kind if (plan.on or plan.filter is not None or plan.kind != "inner") else "cross"
        return f"Join({kind})" + (": " + " ".join(parts) if parts else "")
    if isinstance(plan, L.Aggregate):
        g = ", ".join(_named(e, f) for e, f in zip(plan.group, plan.group_fields, strict=True))
        a = ", ".join(f"{format_expr(e)} AS {f.name}"
                      for e, f in zip(plan.aggs, plan.agg_fields, strict=True))
        return f"Aggregate{'[local]' if plan.local else ''}: groupBy=[{g}] aggr=[{a}]"
    if isinstance(plan, L.Sort):
        keys = ", ".join(format_sort_key(k) for k in plan.keys)
        return f"Sort: {keys}" + (f" fetch={plan.fetch}" if plan.fetch is not None else "")
    if isinstance(plan, L.Limit):
        return f"Limit: fetch={plan.fetch} offset={plan.offset}"
    if isinstance(plan, L.Union):
        return f"Union: [{', '.join(f.name for f in plan.fields)}]"
    if isinstance(plan, L.SingleRow):
        return "SingleRow"
    if isinstance(plan, L.Window):
        calls = ", ".join(f"{format_expr(c)} AS {f.name}" for c, f in zip(plan.calls, plan.fields, strict=True))
        return f"Window: {calls}"
    if isinstance(plan, L.Sample):
        return f"Sample: {describe_sample(plan)}"
    if isinstance(plan, L.WithCTE):
        return f"WithCTE: {', '.join(n.split('#')[0] for n in plan.names)} (computed once)"
    if isinstance(plan, L.CTEScan):
        return f"CTEScan: {plan.name.split('#')[0]} [{', '.join(f.name for f in plan.fields)}]"
    if isinstance(plan, L.RecursiveQuery):
        kind = "UNION" if plan.distinct else "UNION ALL"
        name = plan.name.split("#")[0]
        return f"RecursiveQuery: {name} {kind} [{', '.join(f.name for f in plan.fields)}]"
    if isinstance(plan, L.WorkTable):
        name = plan.name.split("#")[0]
        return f"WorkTable: {name} ({plan.which}) [{', '.join(f.name for f in plan.fields)}]"
    if isinstance(plan, L.MapBatches):
        return f"MapBatches: {plan.fn.name} [{', '.join(f.name for f in plan.fields)}]"
    return type(plan).__name__


def describe_sample(plan) -> str:
    """`bernoulli 10% repeatable(42)`, `reservoir 5 rows`: the seed shows only when given."""
    size = f"{plan.size:g}%" if plan.unit == "percent" else f"{int(plan.size)} rows"
    out = f"{plan.method} {size}"
    return out + (f" repeatable({plan.seed})" if plan.repeatable else "")


def format_plan(plan, indent: int = 0) -> str:
    lines: list[str] = []

    def rec(p, depth):
        # (a name holding a line break, `SELECT 1 AS "a<newline>b"`, stays on its node's line)
        lines.append("  " * depth + one_line(describe_node(p)))
        for c in p.children():
            rec(c, depth + 1)

    rec(plan, indent)
    return "\n".join(lines)


_COMPARISON_TEXT = {"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
