"""Expressions: sqlglot expression nodes -> pqe expressions, by a dispatch table keyed by the
sqlglot class (`HANDLERS`). What each handled class consumes of its arguments is declared in
`pqe.sql.binder.supported`; anything else was refused before binding started."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import replace

import pyarrow as pa
from sqlglot import exp

from ... import types as T
from ...errors import (
    AggregateMisuseError,
    BindError,
    Error,
    TypeMismatchError,
    UnknownColumnError,
    UnsupportedError,
    suggest,
)
from ...plan import builder as B
from ...plan import functions as F
from ...plan.expr import Call, Expr, Literal, OuterRef, SubqueryExpr, lit
from ...plan.udf import AggregateUDF
from ..parser import PQEDialect, node_position
from .grouping import is_agg_node
from .literals import (interval_literal, literal, narrow_int_literal, rewrite_escape, sql_type,
                       text_length)
from .qualification import shown_sql, user_function_name
from .scope import AggContext, Scope, at, positioned
from ..walk import find_all

NEGATED_COMPARISON = {"eq": "ne", "ne": "eq", "lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}

BINARY = {
    exp.Add: "add", exp.Sub: "subtract", exp.Mul: "multiply", exp.Div: "divide",
    exp.Mod: "modulo", exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le",
    exp.GT: "gt", exp.GTE: "ge", exp.And: "and", exp.Or: "or",
    exp.NullSafeEQ: "is_not_distinct_from", exp.NullSafeNEQ: "is_distinct_from",
    exp.DPipe: "concat", exp.BitwiseAnd: "bitwise_and", exp.BitwiseOr: "bitwise_or",
    exp.Xor: "bitwise_xor",  # (`xor(a, b)`: DuckDB's bitwise XOR of integers)
}

# sqlglot function classes -> (pqe function, argument keys in order), derived from the
# function registry (pqe.plan.functions): the keys are all these classes consume, any other
# argument set on such a node is refused (supported.py)
FUNCS: dict[type, tuple[str, tuple[str, ...]]] = {
    getattr(exp, cls): (fd.name, fd.args) for cls, fd in F.sqlglot_bindings(F.SCALAR).items()}

# an AND / OR chain this long binds as a balanced tree (same meaning; the optimizer's
# recursive rules then cost n log n instead of n^2 on a left-deep chain)
BALANCE_TERMS = 64

Handler = Callable[["ExpressionMixin", exp.Expression, Scope, Callable], Expr]


class ExpressionMixin:
    def expr(self, node: exp.Expression, scope: Scope, agg: AggContext | None = None,
             clause: str = "") -> Expr:
        hit = self._window_refs.get(id(node))
        if hit is not None:
            return hit
        if isinstance(node, exp.Window):
            raise BindError(f"window functions are not allowed in {clause or 'this context'}")
        if agg is not None:
            hit = self._post_agg(node, agg)
            if hit is not None:
                return hit
        elif is_agg_node(node):
            cols = list(find_all(node, exp.Column))
            if scope.parent is not None and cols and all(
                    isinstance(scope.lookup(c.table or None, c.name), OuterRef) for c in cols):
                # SQL makes it an aggregate of the outer query (valid in PostgreSQL and DuckDB)
                raise UnsupportedError(f"an aggregate of the outer query's columns inside a "
                                       f"subquery ({node.sql()}) is not supported")
            raise AggregateMisuseError(f"aggregate functions are not allowed in {clause or 'this context'}: {node.sql()}")
        rec: Callable[[exp.Expression], Expr] = lambda n: self.expr(n, scope, agg, clause)  # noqa: E731
        try:
            out = self._expr(node, scope, rec)
        except (BindError, UnsupportedError) as e:
            # an error about this node that did not say where (unknown function FOO, a type
            # mismatch): at the innermost node it arose in
            _placed(e, self.sql, node)
            raise
        if agg is not None and isinstance(out, SubqueryExpr):
            out = replace(out, plan=self._above_aggregate(out.plan, agg))
        return out

    def _expr(self, node: exp.Expression, scope: Scope, rec) -> Expr:
        handler = HANDLERS.get(type(node))
        if handler is not None:
            return handler(self, node, scope, rec)
        if isinstance(node, exp.Star):
            raise BindError("* is not allowed here")
        if isinstance(node, exp.Func):
            name = user_function_name(node, self.sql) or node.sql_name()
            raise UnsupportedError(f"function {name} is not supported yet")
        raise UnsupportedError(f"expression {node.sql(dialect=PQEDialect)[:60]} is not supported yet")

    def _quantified(self, node: exp.Expression, scope: Scope, rec) -> Expr:
        """`x op ANY (q)` / `x op ALL (q)`; ALL is NOT (x negated-op ANY (q))."""
        op = BINARY[type(node)]
        quant = node.expression
        word = "ALL" if isinstance(quant, exp.All) else "ANY"
        if op not in NEGATED_COMPARISON:
            raise BindError(f"{word} needs a comparison: {node.sql(dialect=PQEDialect)}")
        query = quant.this.this if isinstance(quant.this, exp.Subquery) else quant.this
        if not isinstance(query, exp.Query):
            raise UnsupportedError(f"{word} over a non-subquery is not supported: "
                                   f"{node.sql(dialect=PQEDialect)}")
        arg = rec(node.this)
        plan, _ = self.query(query, scope)
        if len(plan.schema) != 1:
            raise BindError(f"subquery in {word} returns {len(plan.schema)} columns, expected 1")
        common = T.common_type(arg.dtype, plan.schema[0].dtype)
        if common is None:
            raise TypeMismatchError(f"{word} subquery: cannot compare {T.type_name(arg.dtype)} "
                                    f"with {T.type_name(plan.schema[0].dtype)}")
        if isinstance(quant, exp.All):
            return SubqueryExpr("in", plan, T.BOOLEAN, B.cast(arg, common), True, NEGATED_COMPARISON[op])
        return SubqueryExpr("in", plan, T.BOOLEAN, B.cast(arg, common), False, op)

    def _column(self, node: exp.Column, scope: Scope) -> Expr:
        if node.args.get("db") is not None:
            raise UnsupportedError(f"qualified column names ({node.sql(dialect=PQEDialect)}) "
                                   "are not supported")
        table = node.table or None
        name = node.name
        hit = scope.lookup(table, name)
        if hit is None:
            pos = node_position(self.sql, node)
            shown = (f"{table}." if table else "") + name.replace("\x00", "")
            raise positioned(UnknownColumnError(
                f"column '{shown}' does not exist{at(pos)}{suggest(name, scope.all_names())}"), pos)
        return hit

    def _interval(self, node: exp.Interval, rec) -> Expr:
        value = node.this
        unit = node.args.get("unit")
        unit_text = None
        if unit is not None:
            unit_text = unit.name if isinstance(unit, (exp.Var, exp.Literal)) else unit.sql()
        v = rec(value) if value is not None else None
        if not isinstance(v, Literal) or v.value is None:
            if unit_text is None:
                raise UnsupportedError("INTERVAL needs a constant")
            # INTERVAL (expr) DAY -> expr * INTERVAL '1' DAY
            return B.call("multiply", B.cast(v, T.INT64), interval_literal("1", unit_text))
        if node.args.get("fraction_in_string"):  # INTERVAL '1.5 days': sqlglot split it
            return interval_literal(f"{v.value} {unit_text}", None)
        return interval_literal(str(v.value), unit_text)


def _placed(e, sql: str, node: exp.Expression):
    """`e` with the line and column where `node` starts, when it has none yet (its message
    says where too, as positioned errors' do)."""
    if e.line is not None or not sql or len(e.args) != 1 or not isinstance(e.args[0], str):
        return e
    pos = node_position(sql, node)
    if pos:
        e.args = (e.args[0] + at(pos),)
        e.line, e.column = pos
    return e


# ---- handlers, one per sqlglot class ------------------------------------------------------------


def _column(b, node, scope, rec):
    return b._column(node, scope)


def _paren(b, node, scope, rec):
    return rec(node.this)


def _literal(b, node, scope, rec):
    return literal(node)


def _boolean(b, node, scope, rec):
    return lit(bool(node.this))


def _hex_blob(b, node, scope, rec):
    """x'4142': the bytes the hex digits spell (an even number of them), a BLOB."""
    digits = str(node.this)
    try:
        value = bytes.fromhex(digits)
    except ValueError:
        value = None
    if value is None or len(digits) % 2 or any(c.isspace() for c in digits):
        raise _placed(BindError(f"x'{digits}' is not a BLOB: it needs an even number of hex "
                                f"digits"), b.sql, node)
    return Literal(value, T.BINARY)


def _null(b, node, scope, rec):
    return Literal(None, T.NULL)


def _chain(node: exp.Expression) -> list[exp.Expression]:
    """The operands of a left-deep chain of one associative operator (AND, OR), in order."""
    cls = type(node)
    rights = []
    while type(node) is cls:
        rights.append(node.expression)
        node = node.this
    return [node, *reversed(rights)]


def _balanced(fn: str, parts: list[Expr]) -> Expr:
    if len(parts) == 1:
        return parts[0]
    mid = len(parts) // 2
    return B.call(fn, _balanced(fn, parts[:mid]), _balanced(fn, parts[mid:]))


def _binary(b, node, scope, rec):
    if isinstance(node.expression, (exp.Any, exp.All)):
        return b._quantified(node, scope, rec)
    fn = BINARY[type(node)]
    if fn in NEGATED_COMPARISON and (isinstance(node.this, exp.Tuple)
                                     or isinstance(node.expression, exp.Tuple)):
        raise UnsupportedError("row-value comparisons ((a, b) = (c, d)) are not supported; "
                               "compare column by column")
    if fn in ("and", "or"):
        operands = _chain(node)
        if len(operands) >= BALANCE_TERMS:
            return _balanced(fn, [rec(x) for x in operands])
    a, c = rec(node.this), rec(node.expression)
    if fn in ("add", "subtract", "multiply", "modulo"):
        a, c = narrow_int_literal(a, c), narrow_int_literal(c, a)
    return B.call(fn, a, c)


def _int_div(b, node, scope, rec):
    """`a // b` of integers: the quotient rounded toward zero, as `/` of integers is in pqe
    (and `//` in DuckDB); of other types refused, by name (DuckDB's DOUBLE `//` is not
    reproduced)."""
    a, c = rec(node.this), rec(node.expression)
    if not (T.is_integer(a.dtype) or T.is_null(a.dtype)) \
            or not (T.is_integer(c.dtype) or T.is_null(c.dtype)):
        pos = node_position(b.sql, node)
        raise positioned(UnsupportedError(
            f"integer division (//) of {T.type_name(a.dtype)} and {T.type_name(c.dtype)}"
            f"{at(pos)} is not supported: only of integers"), pos)
    return B.call("divide", *(narrow_int_literal(a, c), narrow_int_literal(c, a)))


def _neg(b, node, scope, rec):
    inner = rec(node.this)
    if isinstance(inner, Literal) and isinstance(inner.value, (int, float, decimal.Decimal)) \
            and not isinstance(inner.value, bool):
        if isinstance(inner.value, decimal.Decimal):
            v = inner.value
            if v == 0:  # DECIMAL has no -0 (Decimal('-0.0') became the DOUBLE -0.0)
                return Literal(v.copy_abs(), inner.dtype)
            if T.is_decimal(inner.dtype) and inner.dtype.scale == 0 and v == 1 << 63:
                # -9223372036854775808 is BIGINT's least value, a BIGINT (PostgreSQL,
                # DuckDB), not the DECIMAL(38,0) its digits alone are
                return Literal(-(1 << 63), T.INT64)
            return Literal(v.copy_negate(), inner.dtype)  # exact, 38 digits
        if not (T.is_integer(inner.dtype) and _int_overflows(-inner.value, inner.dtype)):
            return Literal(-inner.value, inner.dtype)
        # -(-2^63) has no BIGINT: the checked kernel reports the overflow if a row needs it
    return B.call("negate", inner)


def _int_overflows(value: int, dtype) -> bool:
    import numpy as np

    info = np.iinfo(dtype.to_pandas_dtype())
    return not info.min <= value <= info.max


def _not(b, node, scope, rec):
    return B.not_(rec(node.this))


def _bitwise_not(b, node, scope, rec):
    return B.call("bitwise_not", rec(node.this))


def _is(b, node, scope, rec):
    target = node.expression
    arg = rec(node.this)
    if isinstance(target, exp.Null):
        return B.call("is_null", arg)
    if isinstance(target, exp.Boolean):
        return B.call("is_true" if target.this else "is_false", arg)
    raise UnsupportedError(f"IS {target.sql(dialect=PQEDialect)} is not supported")


def _like(b, node, scope, rec):
    e = B.call("like" if type(node) is exp.Like else "ilike", rec(node.this), rec(node.expression))
    return B.not_(e) if node.args.get("negate") else e


def _escape(b, node, scope, rec):
    like = node.this
    if not isinstance(like, (exp.Like, exp.ILike)):
        raise UnsupportedError(f"ESCAPE on {like.sql(dialect=PQEDialect)[:60]} is not supported")
    esc = rec(node.expression)
    if not (isinstance(esc, Literal) and isinstance(esc.value, str) and len(esc.value) == 1):
        raise BindError("ESCAPE must be a single character")
    pattern = rec(like.expression)
    if not (isinstance(pattern, Literal) and isinstance(pattern.value, str)):
        raise UnsupportedError("LIKE ... ESCAPE needs a constant pattern")
    fixed = rewrite_escape(pattern.value, esc.value)
    e = B.call("like" if isinstance(like, exp.Like) else "ilike", rec(like.this),
               Literal(fixed, T.TEXT))
    return B.not_(e) if like.args.get("negate") else e


def _in(b, node, scope, rec):
    if isinstance(node.this, exp.Tuple):
        raise UnsupportedError("a row value in IN ((a, b) IN ...) is not supported; use EXISTS "
                               "(SELECT ... WHERE x = a AND y = b) or compare column by column")
    arg = rec(node.this)
    query = node.args.get("query")
    if query is None and len(node.expressions) == 1 and isinstance(node.expressions[0],
                                                                   exp.Values):
        query = node.expressions[0]  # x IN (VALUES (1), (2)): a subquery of its rows
    if query is not None:
        sub = query.this if isinstance(query, exp.Subquery) else query
        plan, _ = b.query(sub, scope)
        if len(plan.schema) != 1:
            raise BindError(f"subquery in IN returns {len(plan.schema)} columns, expected 1")
        sub_t = plan.schema[0].dtype
        common = T.common_type(arg.dtype, sub_t)
        if common is None:
            raise TypeMismatchError(f"IN subquery: cannot compare {T.type_name(arg.dtype)} "
                                    f"with {T.type_name(sub_t)}")
        return SubqueryExpr("in", plan, T.BOOLEAN, B.cast(arg, common), False)
    if node.args.get("unnest") or node.args.get("field"):
        raise UnsupportedError(f"{node.sql(dialect=PQEDialect)} is not supported")
    return B.in_list(arg, [rec(v) for v in node.expressions])


def _between(b, node, scope, rec):
    return B.between(rec(node.this), rec(node.args["low"]), rec(node.args["high"]))


def _case(b, node, scope, rec):
    operand = node.this
    whens = []
    op = rec(operand) if operand is not None else None
    for i in node.args.get("ifs") or []:
        cond = rec(i.this)
        if op is not None:
            cond = B.compare("eq", op, cond)
        whens.append((cond, rec(i.args["true"])))
    default = node.args.get("default")
    return B.case(whens, rec(default) if default is not None else None)


def _if(b, node, scope, rec):
    return B.case([(rec(node.this), rec(node.args["true"]))],
                  rec(node.args["false"]) if node.args.get("false") else None)


def _kernel_casts(arg: Literal, to: pa.DataType) -> bool:
    """Whether CAST's kernel converts the text constant `arg` to `to`."""
    from ...kernels.expressions import evaluate_array

    try:
        evaluate_array(B.cast(arg, to))
    except (Error, pa.ArrowException, ValueError, OverflowError):
        return False
    return True


def _cast(b, node, scope, rec):
    try:
        length = text_length(node.args["to"])
    except (BindError, UnsupportedError) as e:
        _placed(e, b.sql, node.args["to"])
        raise
    out = _cast_to(b, node, scope, rec)
    if length is not None:
        # CAST(s AS VARCHAR(3)) is s's first 3 characters (PostgreSQL; DuckDB ignores it)
        return B.call("left", out, Literal(length, T.INT64))
    return out


def _cast_to(b, node, scope, rec):
    t = type(node)
    try:
        to = sql_type(node.args["to"])
    except (BindError, UnsupportedError) as e:  # (CAST(a AS nosuchtype): at the type)
        _placed(e, b.sql, node.args["to"])
        raise
    arg = rec(node.this)
    if t is exp.Cast and isinstance(arg, Literal) and isinstance(arg.value, str) \
            and not T.is_text(to):
        folded = B._cast_literal(arg, to)
        if folded is None:
            if T.is_interval(to):
                return interval_literal(arg.value, None)
            if T.is_numeric(to):
                # the kernel's text-to-number rules decide (as on a column); constant
                # folding reports "'x' is not a valid T"
                return B.cast(arg, to)
            if T.is_blob(to):
                # text to BLOB as a column's text converts ('\x41b' is b'Ab'); it was
                # "cannot cast 'a' to BLOB" for the constant the column converted
                return B.cast(arg, to)
            if T.is_temporal(to) and _kernel_casts(arg, to):
                # a date the kernel reads as it reads a column's text, that Python's dates
                # do not hold ('10000-01-01'): cast when run, as a column's would be
                return B.cast(arg, to)
            raise TypeMismatchError(f"cannot cast '{arg.value}' to {T.type_name(to)}")
        return _real_literal(folded, arg)
    # (a literal folds without a Cast node, whose own check this is)
    T.check_castable(arg.dtype, to)
    try_ = t is exp.TryCast or bool(node.args.get("safe"))
    if pa.types.is_float32(to) and isinstance(arg, Literal) and T.is_numeric(arg.dtype) \
            and arg.value is not None:
        return _real_literal(Literal(float(arg.value), to), arg, try_)
    return _real_literal(B.cast(arg, to, try_=try_), arg, try_)


def _real_literal(e: Expr, arg: Expr, try_: bool = False) -> Expr:
    """A constant cast to REAL holds the 4-byte float's value (CAST(16777217 AS REAL) is
    16777216), not the DOUBLE it was folded from; a finite number past REAL's range is an
    error (NULL for TRY_CAST), as in DuckDB and PostgreSQL, not infinity. Text that reads
    as such a number is infinity, as DuckDB reads it."""
    if not (isinstance(e, Literal) and pa.types.is_float32(e.dtype)
            and isinstance(e.value, float)):
        return e
    v = e.value
    real = pa.scalar(v, pa.float64()).cast(pa.float32(), safe=False).as_py()
    if v == v and abs(v) != float("inf") and abs(real) == float("inf") \
            and not (isinstance(arg, Literal) and isinstance(arg.value, str)):
        if try_:
            return Literal(None, T.FLOAT32)
        raise TypeMismatchError(f"value {v!r} is out of range for REAL")
    return Literal(real, T.FLOAT32)


def _interval(b, node, scope, rec):
    return b._interval(node, rec)


_PART_SPELLINGS = {"years": "year", "months": "month", "days": "day", "dayofweek": "dow",
                   "dayofyear": "doy", "hours": "hour", "minutes": "minute",
                   "seconds": "second"}


def _extract_part(b, part: str, where: exp.Expression, what: str) -> str:
    """The extract_<part> function of a date part, or an error naming the part."""
    part = _PART_SPELLINGS.get(part.lower(), part.lower())
    if f"extract_{part}" not in F.SCALAR:
        pos = node_position(b.sql, where)
        known = sorted(n.removeprefix("extract_") for n in F.SCALAR if n.startswith("extract_"))
        raise positioned(UnsupportedError(
            f"{what} part '{part}'{at(pos)} is not supported (parts: {', '.join(known)})"), pos)
    return part


def _extract(b, node, scope, rec):
    part = node.this.name if isinstance(node.this, (exp.Var, exp.Identifier)) \
        else str(node.this.this)
    part = _extract_part(b, part, node, "EXTRACT")
    return B.call(f"extract_{part}", rec(node.expression), display=f"EXTRACT({part})")


def _substring(b, node, scope, rec):
    args = [rec(node.this)]
    if node.args.get("start") is not None:
        args.append(rec(node.args["start"]))
    else:
        args.append(lit(1))
    if node.args.get("length") is not None:
        args.append(rec(node.args["length"]))
    return B.call("substring", *args)


def _trim(b, node, scope, rec):
    pos = (node.args.get("position") or "BOTH").upper()
    fn = {"BOTH": "trim", "LEADING": "ltrim", "TRAILING": "rtrim"}[pos]
    args = [rec(node.this)]
    if node.args.get("expression") is not None:
        args.append(rec(node.expression))
    return B.call(fn, *args)


def _date_trunc(b, node, scope, rec):
    unit = node.args["unit"]
    if not (isinstance(unit, exp.Literal) and unit.is_string):
        # (a name there never reaches here: the parser refuses it; any other expression's
        # SQL text was taken for the unit)
        pos = node_position(b.sql, unit) or node_position(b.sql, node)
        raise positioned(UnsupportedError(
            f"date_trunc: the unit must be a string literal like 'month', not "
            f"{shown_sql(unit)}{at(pos)}"), pos)
    return B.call("date_trunc", lit(unit.name.lower()), rec(node.this))


def _exists(b, node, scope, rec):
    plan, _ = b.query(node.this, scope)
    return SubqueryExpr("exists", plan, T.BOOLEAN)


def _subquery(b, node, scope, rec):
    plan, _ = b.query(node.this, scope)
    if len(plan.schema) != 1:
        raise BindError(f"scalar subquery returns {len(plan.schema)} columns, expected 1")
    return SubqueryExpr("scalar", plan, plan.schema[0].dtype)


# the statement's time (bind_statement sets it): every binder of one statement (its
# views, UPDATE's and INSERT's queries) reads the same now()
STATEMENT_NOW: ContextVar[datetime.datetime | None] = ContextVar("pqe_statement_now",
                                                                  default=None)


def statement_now() -> datetime.datetime:
    """Now, in UTC (pqe's session zone), naive."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None)


def _statement_time(b, fn: str) -> Literal:
    """CURRENT_TIMESTAMP / NOW() and CURRENT_DATE: one value per statement, taken when it is
    first bound (UTC, pqe's session zone), the same in every row and partition, and in
    every view and subquery the statement reads (each view's binder took its own)."""
    now = STATEMENT_NOW.get() or b.__dict__.setdefault("_statement_now", statement_now())
    return Literal(now.date(), T.DATE) if fn == "current_date" else Literal(now, T.TIMESTAMP)


def _bind_time(b, e: Expr) -> Expr:
    if isinstance(e, Call) and e.fn in ("current_timestamp", "current_date"):
        return _statement_time(b, e.fn)
    return e


def _bracket(b, node, scope, rec):
    """l[i] (1-based, DuckDB) on a list; s['field'] on a struct."""
    if len(node.expressions) != 1:
        raise UnsupportedError(f"subscripts with several indexes: {node.sql(dialect=PQEDialect)[:60]}")
    base = rec(node.this)
    index = rec(node.expressions[0])
    if pa.types.is_struct(base.dtype):
        if not (isinstance(index, Literal) and isinstance(index.value, str)):
            raise UnsupportedError("a struct subscript that is not a constant field name")
        return B.call("struct_extract", base, index)
    if F.is_list(base.dtype) or T.is_null(base.dtype):
        return B.call("list_extract", base, index)
    raise TypeMismatchError(f"cannot subscript a {T.type_name(base.dtype)}")


def _dot(b, node, scope, rec):
    """s.field on a struct column (sqlglot's qualify makes `s.field` a Dot when s is a column)."""
    base = rec(node.this)
    field = node.expression
    if not isinstance(field, exp.Identifier) or not pa.types.is_struct(base.dtype):
        raise UnsupportedError(f"field access {node.sql(dialect=PQEDialect)[:60]} on a "
                               f"{T.type_name(base.dtype)} is not supported")
    # (a quoted name carries qualification's never-matches-a-column mark: the field is the
    # name as written)
    return B.call("struct_extract", base, lit(field.name.removesuffix("\x00")))


def _anonymous(b, node, scope, rec):
    udf = b.catalog.function(node.name)
    if udf is not None:  # a user function (its name is no built-in's: pqe.plan.udf)
        if isinstance(udf, AggregateUDF):
            raise AggregateMisuseError(f"aggregate function {node.name} is not allowed here")
        return B.user_call(udf, [rec(a) for a in node.expressions])
    name = F.canonical(node.name)
    if name in F.INTERNAL:
        # the planner's own functions (pqe_mean, pqe_assert_single_row) take what it gives
        # them: called from SQL with other arguments they crashed as internal errors
        pos = node_position(b.sql, node)
        raise positioned(BindError(f"unknown function {node.name.upper()}{at(pos)}"), pos)
    if name == "date_part" and len(node.expressions) == 2:
        part = rec(node.expressions[0])
        if not (isinstance(part, Literal) and isinstance(part.value, str)):
            # (it was "unknown function DATE_PART")
            pos = node_position(b.sql, node.expressions[0])
            raise positioned(UnsupportedError(
                f"{node.name.lower()}: the part must be a string literal like 'month', not "
                f"{shown_sql(node.expressions[0])}{at(pos)}"), pos)
        part_name = _extract_part(b, part.value, node.expressions[0], node.name)
        return B.call(f"extract_{part_name}", rec(node.expressions[1]))
    held = _CONSTANT_WORD.get(name)
    if held is not None and len(node.expressions) > held[0]:
        # date_diff(month, a, b) / datetrunc(s, ts): a name or an expression where the part
        # or unit is written (refused when it ran, with no place in the text)
        word = node.expressions[held[0]]
        if not ((isinstance(word, exp.Literal) and word.is_string) or isinstance(word, exp.Null)):
            pos = node_position(b.sql, word)
            raise positioned(UnsupportedError(
                f"{node.name.lower()}: the {held[1]} must be a string literal like 'month', not "
                f"{shown_sql(word)}{at(pos)}"), pos)
    args = [rec(a) for a in node.expressions]
    return _bind_time(b, B.call(name, *args, display=node.name))


# functions whose argument (at this index) is a constant word: a date part or unit
_CONSTANT_WORD = {"date_diff": (0, "part"), "date_sub": (0, "part"), "date_trunc": (0, "unit")}


def _function(b, node, scope, rec):
    t = type(node)
    fn, keys = FUNCS[t]
    if t is exp.Pad and not node.args.get("is_left"):
        fn = "rpad"
    args = []
    for k in keys:
        v = node.args.get(k)
        if v is None:
            continue
        if isinstance(v, list):
            args += [rec(x) for x in v]
        else:
            args.append(rec(v))
    display = user_function_name(node, b.sql) or node.sql_name()
    return _bind_time(b, B.call(fn, *args, display=display))


def _window(b, node, scope, rec):
    raise UnsupportedError("window functions (OVER) are not supported yet")


def _log(b, node, scope, rec):
    """LOG(x) is LOG10(x), as in DuckDB and PostgreSQL; sqlglot reads LOG10(x), LOG2(x) and
    LOG(b, x) as Log(base, x), which took the base for the value ('EXPRESSION is not
    supported'): LOG10 and LOG2 are their functions, another base ln(x) / ln(b)."""
    display = user_function_name(node, b.sql) or node.sql_name()
    if node.expression is None:
        return _bind_time(b, B.call("log10", rec(node.this), display=display))
    base, x = rec(node.this), rec(node.expression)
    if isinstance(base, Literal) and base.value in (10, 2) and not isinstance(base.value, bool):
        return B.call("log10" if base.value == 10 else "log2", x, display=display)
    return B.call("divide", B.call("ln", x), B.call("ln", base), display=display)


HANDLERS: dict[type, Handler] = {
    exp.Column: _column, exp.Paren: _paren, exp.Literal: _literal, exp.Boolean: _boolean,
    exp.HexString: _hex_blob,
    exp.Null: _null, exp.Neg: _neg, exp.Not: _not, exp.BitwiseNot: _bitwise_not, exp.Is: _is,
    exp.Like: _like,
    exp.ILike: _like, exp.Escape: _escape, exp.In: _in, exp.Between: _between,
    exp.Case: _case, exp.If: _if, exp.Cast: _cast, exp.TryCast: _cast,
    exp.Interval: _interval, exp.Extract: _extract, exp.Substring: _substring,
    exp.Trim: _trim, exp.DateTrunc: _date_trunc, exp.Exists: _exists,
    exp.Subquery: _subquery, exp.Anonymous: _anonymous, exp.Window: _window,
    exp.Bracket: _bracket, exp.Dot: _dot, exp.IntDiv: _int_div,
    **{cls: _binary for cls in BINARY},
    **{cls: _function for cls in FUNCS if cls not in BINARY},
    exp.Log: _log,
}
