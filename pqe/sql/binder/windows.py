"""Window functions: a Window node computing every call of a SELECT, named windows, frames.

What reaches the kernels (pqe.kernels.window via WindowCall/WindowSpec): the function name,
value arguments, PARTITION BY and ORDER BY keys, constant arguments (ntile buckets, lag/lead
offset and default, nth_value n), IGNORE NULLS (value functions and lag/lead only), and a
frame of mode ROWS, RANGE or GROUPS with bounds (unbounded, current, or an offset: an
integer, a decimal, or a timedelta for RANGE over dates) and an EXCLUDE clause.
"""

from __future__ import annotations

import datetime
import decimal

from sqlglot import exp
from sqlglot.tokens import TokenType

from ... import types as T
from ...errors import BindError, UnsupportedError
from ...optimizer.simplify import fold_constant
from ...plan import builder as B
from ...plan import functions as F
from ...plan.expr import AggCall, ArgColumn, ColumnRef, Frame, FrameBound, Literal, WindowCall, lit
from ...plan.logical import LogicalPlan, Window
from ..parser import PQEDialect, node_position
from .grouping import is_agg_node
from .literals import checked_int, interval_literal
from .scope import at, positioned

# sqlglot window function classes -> pqe window function, from the registry
WINDOW_FUNCS = {getattr(exp, cls): fd.name for cls, fd in F.sqlglot_bindings(F.WINDOW).items()}


def find_windows(node: exp.Expression) -> list[exp.Window]:
    """Window function calls in an expression (not inside subqueries)."""
    out: list[exp.Window] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (exp.Subquery, exp.Select, exp.Exists)):
            continue
        if isinstance(n, exp.Window):
            out.append(n)
            continue
        stack.extend(reversed(list(n.iter_expressions())))
    return out


class WindowMixin:
    def windows(self, plan, scope, agg_ctx, nodes: list[exp.Window], sel: exp.Select) -> LogicalPlan:
        """A Window node computing every window call; the calls' AST nodes then bind to its
        output columns."""
        named = {}
        for w in sel.args.get("windows") or []:
            if w.this.name in named:
                raise BindError(f"window '{w.this.name}' is defined twice")
            named[w.this.name] = w
        calls: list[WindowCall] = []
        refs: list[tuple[exp.Window, int]] = []
        for node in nodes:
            call = self.window_call(node, scope, agg_ctx, named)
            if call not in calls:
                calls.append(call)
            refs.append((node, calls.index(call)))
        fields = tuple(B.new_field(str(c.fn), c.dtype) for c in calls)
        window = Window(plan, tuple(calls), fields)
        for node, i in refs:
            self._window_refs[id(node)] = ColumnRef(fields[i])
        return window

    def window_call(self, node: exp.Window, scope, agg_ctx, named) -> WindowCall:

        spec = node
        ref = node.args.get("alias") or (node.this if isinstance(node.this, exp.Identifier)
                                         else None)
        # OVER (w): a copy of w (PostgreSQL, DuckDB), refused when w has a frame; OVER w
        # uses w as it is (sqlglot reads both alike: the text tells them apart)
        copy = ref is not None and _parenthesized_ref(self.sql, ref)
        partition, order, frame_spec = _window_parts(node, ref, named, (), copy, self.sql)
        func = spec.this
        if isinstance(func, exp.RespectNulls):
            func = func.this  # RESPECT NULLS: the default
        ignore_nulls = False
        if isinstance(func, exp.IgnoreNulls):
            func, ignore_nulls = func.this, True
            if WINDOW_FUNCS.get(type(func)) not in _IGNORE_NULLS:
                raise UnsupportedError(f"IGNORE NULLS in {func.sql(dialect=PQEDialect)[:60]} "
                                       f"is not supported")
        filt = None
        if isinstance(func, exp.Filter):
            filt = func.expression.this
            func = func.this
        rec = lambda n: self.expr(n, scope, agg=agg_ctx, clause="window")  # noqa: E731
        pby = tuple(rec(p) for p in partition)
        oby = tuple(self._sort_key(o, rec(o.this)) for o in (order.expressions if order else []))
        frame = window_frame(frame_spec) if frame_spec is not None else None
        name = WINDOW_FUNCS.get(type(func))
        consts: tuple = ()
        if name is not None or (isinstance(func, exp.Anonymous) and F.canonical(func.name) in F.WINDOW):
            name = name or F.canonical(func.name)
            raw = [v for k, v in func.args.items() if v is not None and not isinstance(v, bool)]
            raw = [x for v in raw for x in (v if isinstance(v, list) else [v])]
            args = [fold_constant(a) or a for a in (rec(a) for a in raw)]  # (ntile(2 + 1))
            fdef = F.WINDOW[name]
            F.check_arity(fdef, len(args), name)
            value_args, consts, dtype = B.window_arguments(name, args)
            if ignore_nulls and name in ("lag", "lead") and isinstance(consts[0], ArgColumn):
                raise UnsupportedError(f"{name.upper()} with IGNORE NULLS and an offset that "
                                       "varies by row is not supported")
            if filt is not None:
                raise UnsupportedError(f"FILTER on {name} is not supported")
            oby = B.check_frame(frame, oby)
            return WindowCall(name, tuple(value_args), pby, oby, frame, dtype, consts,
                              ignore_nulls)
        if is_agg_node(func):
            agg = self.agg_call(func, scope, rec=lambda n, clause: self.expr(
                n, scope, agg=agg_ctx, clause=clause))
            distinct = B.window_distinct(agg)
            B.check_window_aggregate(agg.fn, oby, frame)
            args, consts = B.window_aggregate_args(agg)
            if agg.filter is not None:
                args = (B.case([(agg.filter, args[0] if args else lit(1))], None),)
                if not agg.args:
                    agg = AggCall("count", args, T.INT64)
            if filt is not None and agg.fn == "array_agg":
                # (as GROUP BY's: a filtered-out row would be a NULL element of the list)
                raise UnsupportedError(f"FILTER on {agg.fn.upper()} as a window function is "
                                       f"not supported")
            if filt is not None:
                f = B.cast(rec(filt), T.BOOLEAN)
                if args:
                    args = (B.case([(f, args[0])], None),)
                else:
                    args = (B.case([(f, lit(1))], None),)
                    agg = AggCall("count", args, T.INT64)
            fn = agg.fn
            oby = B.check_frame(frame, oby)
            return WindowCall(fn, tuple(args), pby, oby, frame, agg.dtype, consts,
                              distinct=distinct)
        raise UnsupportedError(f"window function {func.sql(dialect=PQEDialect)} is not supported")


# the window functions IGNORE NULLS applies to (PostgreSQL 16 / DuckDB): they read one value
_IGNORE_NULLS = frozenset({"first_value", "last_value", "nth_value", "lag", "lead"})


def window_frame(spec: exp.WindowSpec) -> Frame:
    mode = (spec.args.get("kind") or "range").lower()
    if mode not in ("rows", "range", "groups"):
        raise UnsupportedError(f"{mode.upper()} window frames are not supported")
    exclude = spec.args.get("exclude")
    excluded = "no_others"
    if exclude:
        text = (exclude.name if isinstance(exclude, exp.Expression) else str(exclude)).upper()
        excluded = {"NO OTHERS": "no_others", "CURRENT ROW": "current_row", "GROUP": "group",
                    "TIES": "ties"}.get(text)
        if excluded is None:
            raise UnsupportedError(f"window frame EXCLUDE {text} is not supported")

    def bound(value, side) -> FrameBound:
        text = value.name if isinstance(value, exp.Expression) else str(value)
        if isinstance(value, str) or (isinstance(value, exp.Var)):
            up = text.upper()
            if up == "UNBOUNDED":
                return FrameBound("unbounded_preceding" if (side or "").lower() == "preceding"
                                  else "unbounded_following")
            if up in ("CURRENT ROW", "CURRENT"):
                return FrameBound("current")
        kind = (side or "preceding").lower()
        if isinstance(value, (exp.Binary, exp.Paren, exp.Cast)) and not value.find(exp.Column):
            # a constant expression (`1 + 1 PRECEDING`): sqlglot's simplify folds arithmetic
            # on numbers to one literal; anything else stays as it is and is refused below
            from sqlglot.optimizer.simplify import simplify

            folded = simplify(value.copy())
            if isinstance(folded, exp.Literal) and not folded.is_string or \
                    isinstance(folded, exp.Neg) and isinstance(folded.this, exp.Literal):
                value = folded
        if isinstance(value, exp.Literal) and not value.is_string:
            n = decimal.Decimal(value.this)
            if n < 0:
                raise BindError("window frame offsets must not be negative")
            if mode == "range":  # any size: the kernel compares key +/- offset exactly
                return FrameBound(kind, int(n) if n == int(n) else n)
            if n != int(n):
                raise BindError(f"{mode.upper()} frame offsets must be integers, not {n}")
            return FrameBound(kind, checked_int(int(n), "window frame offset"))
        if isinstance(value, exp.Interval) and isinstance(value.this, exp.Literal):
            # RANGE over a DATE or TIMESTAMP key: the offset is a datetime.timedelta
            if mode != "range":
                raise BindError(f"{mode.upper()} frame offsets must be integers, not intervals")
            unit = value.args.get("unit")
            if unit is not None and value.args.get("fraction_in_string"):
                iv = interval_literal(f"{value.this.name} {unit.name}", None).value
            else:
                iv = interval_literal(value.this.name,
                                      unit.name if unit is not None else None).value
            if iv.nanoseconds % 1000:
                raise UnsupportedError("RANGE frame offsets finer than a microsecond are not supported")
            if iv.months:
                # calendar months: the kernel steps each key by them (kernels.window)
                if iv.months < 0 or iv.days < 0 or iv.nanoseconds < 0:
                    raise BindError("window frame offsets must not be negative")
                return FrameBound(kind, iv)
            offset = datetime.timedelta(days=iv.days, microseconds=iv.nanoseconds // 1000)
            if offset < datetime.timedelta(0):
                raise BindError("window frame offsets must not be negative")
            return FrameBound(kind, offset)
        if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal):
            raise BindError("window frame offsets must not be negative")
        shown = value.sql(dialect=PQEDialect) if isinstance(value, exp.Expression) else text
        raise UnsupportedError(f"window frame offset {shown} is not supported: an offset must "
                               f"be a number or an INTERVAL constant")

    start = bound(spec.args.get("start"), spec.args.get("start_side"))
    end_value = spec.args.get("end")
    end = bound(end_value, spec.args.get("end_side")) if end_value is not None else FrameBound("current")
    # the standard's (PostgreSQL's, DuckDB's) frame rules: these were accepted and gave empty
    # frames (NULL sums) where both refuse them
    if start.kind == "unbounded_following":
        raise BindError("window frame start cannot be UNBOUNDED FOLLOWING")
    if end.kind == "unbounded_preceding":
        raise BindError("window frame end cannot be UNBOUNDED PRECEDING")
    order = {"unbounded_preceding": 0, "preceding": 1, "current": 2, "following": 3,
             "unbounded_following": 4}
    if order[start.kind] > order[end.kind]:
        where = "current row" if start.kind == "current" else "following row"
        rows = "preceding rows" if end.kind == "preceding" else "the current row"
        raise BindError(f"a window frame starting from the {where} cannot end at {rows}")
    return Frame(mode, start, end, excluded)


def _parenthesized_ref(sql: str, ref: exp.Identifier) -> bool:
    """Whether the window name `ref` of an OVER clause stands inside parentheses,
    `OVER (w ...)`, rather than alone, `OVER w`: the token before it in the statement's
    text is `(`. False when the text does not tell (no recorded position)."""
    meta = getattr(ref, "meta", None) or {}
    start, end = meta.get("start"), meta.get("end")
    if not sql or start is None or end is None or not 0 <= start <= end < len(sql):
        return False
    if sql[start:end + 1].strip('"`[]').lower() != ref.name.lower():
        return False  # the position is not in this text (a view's statement, say)
    try:
        tokens = PQEDialect().tokenize(sql[:start])
    except Exception:  # noqa: BLE001 - the prefix did not tokenize: say "not parenthesized"
        return False
    return bool(tokens) and tokens[-1].token_type == TokenType.L_PAREN


def _window_parts(node: exp.Window, ref, named: dict, seen: tuple, copy: bool = True,
                  sql: str = ""):
    """(PARTITION BY, ORDER BY, frame) of a window after the window it names, followed as far
    as it goes (`w2 AS (w1 ORDER BY id)`, w1 naming its own base: only one step was taken,
    so w2 lost w1's PARTITION BY). As in PostgreSQL and DuckDB, a window naming another adds
    only what that one lacks: it may not replace its PARTITION BY or ORDER BY, and one with
    a frame is only used as it is (`OVER w`): `copy` says `node` copies it, `OVER (w)` or
    `WINDOW w2 AS (w)`, which both refuse for a window with a frame (it was accepted)."""
    own_p = list(node.args.get("partition_by") or [])
    own_o, own_f = node.args.get("order"), node.args.get("spec")
    if ref is None:
        return own_p, own_o, own_f
    base = named.get(ref.name)
    if base is None:
        raise BindError(f"window '{ref.name}' is not defined")
    if ref.name in seen:
        raise BindError(f"window '{ref.name}' is defined in terms of itself")
    bp, bo, bf = _window_parts(base, base.args.get("alias"), named, (*seen, ref.name), True,
                               sql)
    if own_p:
        raise BindError(f"a window naming '{ref.name}' cannot give its own PARTITION BY")
    if own_o is not None and bo is not None:
        raise BindError(f"a window naming '{ref.name}' cannot replace its ORDER BY")
    if bf is not None and (own_o is not None or own_f is not None):
        raise BindError(f"window '{ref.name}' has a frame: a window naming it can only copy it")
    if bf is not None and copy:
        pos = node_position(sql, ref) if sql else None
        shown = ref.name if ref.name.isidentifier() and ref.name.islower() else f'"{ref.name}"'
        raise positioned(BindError(
            f"cannot copy window '{ref.name}' because it has a frame clause{at(pos)}: use it "
            f"as it is with OVER {shown} (without parentheses)"), pos)
    return bp, own_o if own_o is not None else bo, own_f if own_f is not None else bf

