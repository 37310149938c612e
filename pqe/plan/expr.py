"""Bound, typed scalar expressions: pqe's own expression nodes (never sqlglot ASTs).

Every node is a frozen, slotted dataclass: hashable, comparable, safe to share between plans.
Columns are referenced by a plan-unique `id` (also the column name in intermediate Arrow
tables); `name` is only for display. Scalar functions are `Call(fn, args)` with `fn` a name in
`pqe.plan.functions`; the execution layer compiles them through one dispatch table.
"""

from __future__ import annotations

import math

import threading

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .. import types as T
from ..errors import TypeMismatchError

if TYPE_CHECKING:  # pragma: no cover
    from .logical import LogicalPlan


def _hash_once(cls):
    """Class decorator (after @dataclass): the node's hash is worked out once and kept in its
    `_h` slot. Hashing a frozen dataclass hashes its whole subtree again (and each Arrow type
    in it, ~0.4 us apiece): the optimizer and planner hash the same expressions hundreds of
    thousands of times per statement. The kept hash is left out of pickles, where it would
    be wrong (string hashes differ between processes) and is worked out again."""
    plain = cls.__hash__
    names = tuple(f.name for f in fields(cls) if f.name != "_h")

    def __hash__(self) -> int:
        try:
            return self._h
        except AttributeError:
            h = plain(self)
            object.__setattr__(self, "_h", h)
            return h

    def __getstate__(self):
        return tuple(getattr(self, n) for n in names)

    def __setstate__(self, state) -> None:
        for n, v in zip(names, state, strict=True):
            object.__setattr__(self, n, v)

    cls.__hash__ = __hash__
    cls.__getstate__ = __getstate__
    cls.__setstate__ = __setstate__
    return cls



@_hash_once
@dataclass(frozen=True, slots=True)
class Field:
    """One output column of a plan node."""

    id: str
    name: str
    dtype: pa.DataType
    nullable: bool = True
    qualifier: str | None = None
    _h: int = field(init=False, repr=False, compare=False)  # _hash_once's

    @property
    def display(self) -> str:
        return f"{self.qualifier}.{self.name}" if self.qualifier else self.name

    def with_nullable(self, nullable: bool) -> Field:
        return self if self.nullable == nullable else replace(self, nullable=nullable)


class Expr:
    """Base of bound expressions."""

    __slots__ = ()

    dtype: pa.DataType

    @property
    def nullable(self) -> bool:
        return True

    def children(self) -> tuple[Expr, ...]:
        return ()

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return self

    def __str__(self) -> str:
        from .explain import format_expr

        return format_expr(self)


class _FieldRef(Expr):
    """A reference to a column described by `self.field`."""

    __slots__ = ()

    field: Field

    @property
    def id(self) -> str:
        return self.field.id

    @property
    def dtype(self) -> pa.DataType:  # type: ignore[override]
        return self.field.dtype

    @property
    def nullable(self) -> bool:
        return self.field.nullable


@dataclass(frozen=True, slots=True)
class ColumnRef(_FieldRef):
    """A column of this query's input."""

    field: Field


@dataclass(frozen=True, slots=True)
class OuterRef(_FieldRef):
    """A column of an enclosing query, referenced from inside a correlated subquery."""

    field: Field


@_hash_once
@dataclass(frozen=True, slots=True)
class Literal(Expr):
    """A constant. Two NaN literals of one type are the same expression (NaN != NaN in
    Python, so `SELECT f(CAST('NaN' AS DOUBLE)) ... GROUP BY f(CAST('NaN' AS DOUBLE))` found
    no GROUP BY match, and CSE and plan comparisons missed equal plans)."""

    value: Any
    dtype: pa.DataType
    _h: int = field(init=False, repr=False, compare=False)  # _hash_once's

    @property
    def nullable(self) -> bool:
        return self.value is None

    def _key(self) -> tuple:
        v = self.value
        if isinstance(v, float) and v != v:
            return (type(self), "NaN", self.dtype)
        if isinstance(v, float) and v == 0.0:
            # -0.0 and 0.0 are equal but not the same constant: atan2(-0.0, -1) is -pi,
            # atan2(0.0, -1) pi. Taken as one, a filter with either was shared for both
            # (two subqueries' counts, two reads of a table)
            return (type(self), v, math.copysign(1.0, v), self.dtype)
        return (type(self), v, self.dtype)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Literal):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


@_hash_once
@dataclass(frozen=True, slots=True)
class Call(Expr):
    """A scalar function or operator; `fn` names an entry of `pqe.plan.functions`."""

    fn: str
    args: tuple[Expr, ...]
    dtype: pa.DataType
    is_nullable: bool = True
    _h: int = field(init=False, repr=False, compare=False)  # _hash_once's

    @property
    def nullable(self) -> bool:
        return self.is_nullable

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, args=tuple(children))


@dataclass(frozen=True, slots=True)
class UserCall(Expr):
    """A call of a user-defined scalar function (`pqe.plan.udf.ScalarUDF`), which the node
    holds: its code ships with the plan. Never constant-folded, never pushed into a scan,
    and treated as able to return NULL for any input."""

    udf: Any  # pqe.plan.udf.ScalarUDF
    args: tuple[Expr, ...]
    dtype: pa.DataType

    @property
    def fn(self) -> str:
        return self.udf.name

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, args=tuple(children))


@_hash_once
@dataclass(frozen=True, slots=True)
class Cast(Expr):
    """CAST / TRY_CAST (SQL's and the DataFrame API's `.cast()`); a cast between families
    without a SQL conversion (TIME to BIGINT) is refused when the node is made."""

    arg: Expr
    dtype: pa.DataType
    try_: bool = False
    _h: int = field(init=False, repr=False, compare=False)  # _hash_once's

    def __post_init__(self) -> None:
        T.check_castable(self.arg.dtype, self.dtype)

    @property
    def nullable(self) -> bool:
        return self.try_ or self.arg.nullable

    def children(self) -> tuple[Expr, ...]:
        return (self.arg,)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, arg=children[0])


@_hash_once
@dataclass(frozen=True, slots=True)
class Case(Expr):
    """Searched CASE: the first `when` that is TRUE picks its `then`; else `else_` (or NULL)."""

    whens: tuple[tuple[Expr, Expr], ...]
    else_: Expr
    dtype: pa.DataType
    _h: int = field(init=False, repr=False, compare=False)  # _hash_once's

    @property
    def nullable(self) -> bool:
        return any(t.nullable for _, t in self.whens) or self.else_.nullable

    def children(self) -> tuple[Expr, ...]:
        out: list[Expr] = []
        for w, t in self.whens:
            out += [w, t]
        out.append(self.else_)
        return tuple(out)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        n = len(self.whens)
        whens = tuple((children[2 * i], children[2 * i + 1]) for i in range(n))
        return replace(self, whens=whens, else_=children[2 * n])


@_hash_once
@dataclass(frozen=True, slots=True)
class InList(Expr):
    """`arg [NOT] IN (v1, v2, ...)` with SQL three-valued semantics."""

    arg: Expr
    values: tuple[Expr, ...]
    negated: bool = False
    dtype: pa.DataType = field(default=T.BOOLEAN)
    _h: int = field(init=False, repr=False, compare=False)  # _hash_once's

    @property
    def nullable(self) -> bool:
        return self.arg.nullable or any(v.nullable for v in self.values)

    def children(self) -> tuple[Expr, ...]:
        return (self.arg, *self.values)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, arg=children[0], values=tuple(children[1:]))


# aggregates whose value over no rows is 0, never NULL (a correlated subquery of one gives 0
# where no row matches: the optimizer's COUNT-bug rule reads this)
ZERO_ON_EMPTY = frozenset({"count", "count_star", "regr_count"})


@_hash_once
@dataclass(frozen=True, slots=True)
class AggCall(Expr):
    """An aggregate function call; lives only in `Aggregate` nodes. `order_by`: the order of
    the values inside the aggregate (STRING_AGG(x, ',' ORDER BY y)). `udf` holds a
    user-defined aggregate (`pqe.plan.udf.AggregateUDF`, named `fn`)."""

    fn: str
    args: tuple[Expr, ...]
    dtype: pa.DataType
    distinct: bool = False
    filter: Expr | None = None
    order_by: tuple[SortKey, ...] = ()
    udf: Any = None
    _h: int = field(init=False, repr=False, compare=False)  # _hash_once's

    @property
    def nullable(self) -> bool:
        return self.fn not in ZERO_ON_EMPTY

    def children(self) -> tuple[Expr, ...]:
        return (self.args + tuple(k.expr for k in self.order_by)
                + ((self.filter,) if self.filter is not None else ()))

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        n, m = len(self.args), len(self.order_by)
        keys = tuple(SortKey(e, k.ascending, k.nulls_first)
                     for e, k in zip(children[n:n + m], self.order_by, strict=True))
        return replace(self, args=tuple(children[:n]), order_by=keys,
                       filter=children[n + m] if self.filter is not None else None)


@dataclass(frozen=True, slots=True)
class SortKey:
    expr: Expr
    ascending: bool = True
    nulls_first: bool = False


@dataclass(frozen=True, slots=True)
class FrameBound:
    """kind: unbounded_preceding | preceding | current | following | unbounded_following."""

    kind: str
    offset: object = None


@dataclass(frozen=True, slots=True)
class Frame:
    mode: str  # "rows" | "range" | "groups"
    start: FrameBound
    end: FrameBound
    exclude: str = "no_others"  # | "current_row" | "group" | "ties"


@_hash_once
@dataclass(frozen=True, slots=True)
class WindowCall(Expr):
    """`fn(args) OVER (PARTITION BY ... ORDER BY ... frame)`; lives only in `Window` nodes.
    `frame` None means the SQL default (RANGE UNBOUNDED PRECEDING TO CURRENT ROW with ORDER BY,
    the whole partition without). `consts` holds constant arguments (ntile buckets, lag offset
    and default, nth_value n)."""

    fn: str
    args: tuple[Expr, ...]
    partition_by: tuple[Expr, ...]
    order_by: tuple[SortKey, ...]
    frame: Frame | None
    dtype: pa.DataType
    consts: tuple = ()
    ignore_nulls: bool = False  # first/last/nth_value, lag/lead: skip NULL values
    distinct: bool = False  # count/sum/avg(DISTINCT x) OVER (...): each value once per frame
    _h: int = field(init=False, repr=False, compare=False)  # _hash_once's

    def children(self) -> tuple[Expr, ...]:
        return self.args + self.partition_by + tuple(k.expr for k in self.order_by)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        a, p = len(self.args), len(self.partition_by)
        keys = tuple(SortKey(e, k.ascending, k.nulls_first)
                     for e, k in zip(children[a + p:], self.order_by, strict=True))
        return replace(self, args=tuple(children[:a]), partition_by=tuple(children[a:a + p]),
                       order_by=keys)


@dataclass(frozen=True, slots=True)
class ArgColumn:
    """In a window function's constants, where a constant usually stands (LAG/LEAD's offset
    or default), an argument that varies by row: the value argument at `index`."""

    index: int

    def __repr__(self) -> str:
        return f"argument {self.index + 1}"


@dataclass(frozen=True, slots=True)
class SubqueryExpr(Expr):
    """A subquery used as an expression; removed by the decorrelation rule before execution.

    kind: 'scalar' (value of a one-column, at most one-row query), 'exists', or 'in'
    (`[NOT] (arg op ANY (query))`, op a comparison: 'eq' is IN; `x > ALL (q)` is stored as
    NOT (x <= ANY (q)), which has the same three-valued answer).
    """

    kind: str
    plan: LogicalPlan
    dtype: pa.DataType
    arg: Expr | None = None
    negated: bool = False
    op: str = "eq"

    def children(self) -> tuple[Expr, ...]:
        return (self.arg,) if self.arg is not None else ()

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, arg=children[0]) if children else self


# ---------------------------------------------------------------------------------------------
# Tree helpers


def walk(expr: Expr) -> Iterator[Expr]:
    """Pre-order traversal (does not enter subquery plans). Each node object once: the
    builder shares an operand between the parts of a rewrite (NULLIF(a, b) is CASE WHEN
    a = b THEN NULL ELSE a END with one `a`, BETWEEN and a simple CASE likewise), so an
    expression is a DAG, and walking it as a tree doubles per nested NULLIF (24 of them:
    2^24 visits, minutes in one optimizer pass)."""
    stack = [expr]
    seen: set[int] = set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        stack.extend(reversed(e.children()))


def transform(expr: Expr, fn: Callable[[Expr], Expr | None],
              _done: dict[int, tuple[Expr, Expr]] | None = None) -> Expr:
    """Bottom-up rewrite: `fn` returns a replacement or None to keep the node. A node object
    met twice (see `walk`) is rewritten once."""
    done = {} if _done is None else _done
    hit = done.get(id(expr))
    if hit is not None:
        return hit[1]
    original = expr
    kids = expr.children()
    if kids:
        new_kids = tuple(transform(k, fn, done) for k in kids)
        if any(a is not b for a, b in zip(new_kids, kids, strict=True)):
            expr = expr.with_children(new_kids)
    out = fn(expr)
    out = expr if out is None else out
    done[id(original)] = (original, out)  # (keeps `original` alive: its id stays its own)
    return out


def column_ids(expr: Expr) -> set[str]:
    # (a loop, not `walk`: the optimizer asks this hundreds of thousands of times per plan)
    out: set[str] = set()
    stack = [expr]
    seen: set[int] = set()
    while stack:
        e = stack.pop()
        if isinstance(e, ColumnRef):
            out.add(e.field.id)
        elif id(e) not in seen:
            seen.add(id(e))
            stack.extend(e.children())
    return out


def column_ids_all(exprs: Iterable[Expr]) -> set[str]:
    out: set[str] = set()
    for e in exprs:
        out |= column_ids(e)
    return out


# functions that raise on some values of an exact result type (an overflow), or on sizes
_RAISING = {"add", "subtract", "multiply", "divide", "modulo", "negate", "abs", "round", "floor",
            "ceil", "power"}
_SIZED = {"lpad", "rpad", "repeat"}
# functions that check each row's value whatever their types (a triple that is no date, a
# count of seconds past TIMESTAMP, a calendar past Arrow's): an AND or a filter runs them on
# the rows its other conjuncts kept
_CHECKED = {"make_date", "to_timestamp", "last_day"}


def _integer_division_never_fails(x: Call) -> bool:
    """Integer % never fails (% 0 is NULL, % -1 is 0, also for -2^63: kernels.expressions'
    `_modulo`), and integer / fails only for -2^63 / -1 (/ 0 is NULL), so not when the
    divisor is a constant other than -1. `b.k % 7 <> a.k % 7` is then as safe to compute on
    rows a join or an AND would not have reached as `b.k <> a.k` (optimizer.semi_join_extremes
    groups such an expression's every row)."""
    if not T.is_integer(x.dtype) or x.fn not in ("modulo", "divide"):
        return False
    if x.fn == "modulo":
        return True
    d = x.args[1]
    while isinstance(d, Cast) and T.is_integer(d.dtype) and T.widens(d.arg.dtype, d.dtype):
        d = d.arg
    return isinstance(d, Literal) and (d.value is None or d.value != -1)


def may_raise(e: Expr) -> bool:
    """Computing `e` can fail for some values: integer, DECIMAL or date arithmetic (an
    overflow), a cast to such a type that does not widen (`types.widens`), a padded or
    repeated string's size, user code. Floating point arithmetic gives inf or NaN,
    comparisons and most functions never fail."""
    for x in walk(e):
        if isinstance(x, UserCall):
            return True
        if isinstance(x, Call) and (x.fn in _SIZED or x.fn in _CHECKED or x.fn in _RAISING and (
                T.is_integer(x.dtype) or T.is_decimal(x.dtype) or T.is_temporal(x.dtype))
                and not _integer_division_never_fails(x)):
            return True
        if isinstance(x, Cast) and not x.try_ and not T.widens(x.arg.dtype, x.dtype) and (
                T.is_integer(x.dtype) or T.is_decimal(x.dtype) or T.is_temporal(x.dtype)
                or T.is_text(x.arg.dtype) and not T.is_text(x.dtype)):
            return True  # (text that is not a number, a date, a boolean: any target)
    return False


# functions with a new value on every call: an expression holding one is computed exactly
# where and as often as the query says (not shared, copied or moved between rows' groups)
VOLATILE = frozenset({"random"})


def is_volatile(e: Expr) -> bool:
    """Whether `e` may give another value each time it is computed for the same row: it
    calls random() or a user function not registered as deterministic. Such an expression
    is computed once where the query computes it: never copied into a filter below, nor
    folded, merged or shared with another computation of it."""
    # (a plain loop as in `_holds`: the optimizer asks it of every expression in most passes)
    stack = [e]
    seen: set[int] = set()
    while stack:
        x = stack.pop()
        if isinstance(x, Call):
            if x.fn in VOLATILE:
                return True
        elif isinstance(x, UserCall) and not getattr(x.udf, "deterministic", False):
            return True
        kids = x.children()
        if kids and id(x) not in seen:
            seen.add(id(x))
            stack.extend(kids)
    return False


def _holds(expr: Expr, cls) -> bool:
    """Whether some node of `expr` is a `cls`: `walk` as a plain loop (no generator, leaves
    never entered in `seen`), as the optimizer asks it of every expression in every pass."""
    if isinstance(expr, cls):
        return True
    stack = list(expr.children())
    seen: set[int] = set()
    while stack:
        e = stack.pop()
        if isinstance(e, cls):
            return True
        kids = e.children()
        if kids and id(e) not in seen:
            seen.add(id(e))
            stack.extend(kids)
    return False


def has_subquery(expr: Expr) -> bool:
    return _holds(expr, SubqueryExpr)


def has_outer_ref(expr: Expr) -> bool:
    return _holds(expr, OuterRef)


def has_user_call(expr: Expr) -> bool:
    return _holds(expr, UserCall)


def is_aggregate(expr: Expr) -> bool:
    return _holds(expr, AggCall)


def replace_columns(expr: Expr, mapping: dict[str, Expr]) -> Expr:
    """Substitute column references by id."""
    if not mapping:
        return expr

    def fn(e: Expr) -> Expr | None:
        if isinstance(e, ColumnRef):
            return mapping.get(e.id)
        return None

    return transform(expr, fn)


def flatten(expr: Expr, fn: str) -> list[Expr]:
    """The terms of a chain of one connective (`fn`: "and", "or"), left to right; iterative,
    so a chain of thousands of terms does not recurse."""
    out, stack = [], [expr]
    while stack:
        x = stack.pop()
        if isinstance(x, Call) and x.fn == fn:
            stack.extend(reversed(x.args))
        else:
            out.append(x)
    return out


def conjuncts(expr: Expr | None) -> list[Expr]:
    """Split a predicate on AND."""
    return [] if expr is None else flatten(expr, "and")


def disjuncts(expr: Expr) -> list[Expr]:
    return flatten(expr, "or")


def _fold(fn: str, parts: list[Expr]) -> Expr:
    out = parts[0]
    for p in parts[1:]:
        out = Call(fn, (out, p), T.BOOLEAN, out.nullable or p.nullable)
    return out


def unique(parts: Iterable[Expr]) -> list[Expr]:
    """Parts in order without repeats: by hash (3,000 ANDed terms stay linear), except parts
    holding a subquery (hashing one hashes its whole plan) or an unhashable value, which
    are compared pairwise. A volatile part is never a repeat: `random() < 0.5 AND
    random() < 0.5` keeps a quarter of the rows, not half."""
    out: list[Expr] = []
    hashed: set[Expr] = set()
    other: list[Expr] = []
    for p in parts:
        if is_volatile(p):
            out.append(p)
            continue
        if not has_subquery(p):
            try:
                if p in hashed:
                    continue
                hashed.add(p)
                out.append(p)
                continue
            except TypeError:
                pass
        if p not in other:
            other.append(p)
            out.append(p)
    return out


def and_(parts: Iterable[Expr]) -> Expr | None:
    """AND of the parts (None for no parts), dropping duplicates and TRUE literals."""
    uniq = unique(p for p in parts if not (isinstance(p, Literal) and p.value is True))
    if not uniq:
        return None
    return _fold("and", uniq)


def or_(parts: Iterable[Expr]) -> Expr:
    return _fold("or", unique(parts))


def lit(value: Any, dtype: pa.DataType | None = None) -> Literal:
    """A literal with an inferred type (int -> BIGINT, float -> DOUBLE, str -> VARCHAR...)."""
    import datetime
    import decimal

    if dtype is not None:
        return Literal(value, dtype)
    if value is None:
        return Literal(None, T.NULL)
    if isinstance(value, bool):
        return Literal(value, T.BOOLEAN)
    if isinstance(value, int):
        return Literal(value, T.INT64 if -(2**63) <= value < 2**63 else T.decimal(38, 0))
    if isinstance(value, float):
        return Literal(value, T.FLOAT64)
    if isinstance(value, decimal.Decimal):
        # as SQL parameters are (sql.parser): NaN and infinities were a raw ValueError, 1E+5
        # was typed DECIMAL(1,0), and past 38 digits the type was capped below the value
        if not value.is_finite():
            raise TypeMismatchError(f"literal {value} is not a finite DECIMAL")
        sign, digits, exp = value.as_tuple()
        scale = max(0, -int(exp))
        precision = max(len(digits) + max(0, int(exp)), scale, 1)
        if precision > T.MAX_DECIMAL_PRECISION:
            raise TypeMismatchError(f"literal {value} has more than "
                                    f"{T.MAX_DECIMAL_PRECISION} digits (DECIMAL's limit)")
        return Literal(value, T.decimal(precision, scale))
    if isinstance(value, str):
        return Literal(value, T.TEXT)
    if isinstance(value, bytes):
        return Literal(value, T.BINARY)
    if isinstance(value, datetime.datetime):
        return Literal(value, T.TIMESTAMP)
    if isinstance(value, datetime.date):
        return Literal(value, T.DATE)
    raise TypeError(f"cannot make a literal from {type(value).__name__}")


TRUE = Literal(True, T.BOOLEAN)
FALSE = Literal(False, T.BOOLEAN)


# ---- repr of a DAG -------------------------------------------------------------------------------

_REPR = threading.local()


def _dag_repr(plain: Callable[[Expr], str]) -> Callable[[Expr], str]:
    """The dataclass repr, printing a node object met again within one repr (see `walk`) as
    `<#k>`, the k-th node printed: the repr (which names the execution's tasks) of 24 nested
    NULLIFs was 2^24 nodes long. The text still determines the tree it stands for."""
    def __repr__(self) -> str:
        memo = getattr(_REPR, "memo", None)
        top = memo is None
        if top:
            memo = _REPR.memo = {}
        try:
            k = memo.get(id(self))
            if k is not None:
                return f"<#{k}>"
            text = plain(self)
            memo[id(self)] = len(memo)
            return text
        finally:
            if top:
                _REPR.memo = None
    return __repr__


def _dag_eq(plain: Callable[[Expr, object], bool]) -> Callable[[Expr, object], bool]:
    """The dataclass ==, comparing a pair of node objects once within one comparison: two
    equal expressions that are DAGs (see `walk`) compared field by field reach each shared
    pair once per path (SELECT sum(e), count(e) with e 24 nested NULLIFs: 2^24)."""
    def __eq__(self, other) -> bool:
        if self is other:
            return True
        memo = getattr(_EQ, "memo", None)
        top = memo is None
        if top:
            memo = _EQ.memo = set()
        try:
            key = (id(self), id(other))
            if key in memo:
                return True
            out = plain(self, other)
            if out is True:
                memo.add(key)  # (both stay alive while the outermost comparison runs)
            return out
        finally:
            if top:
                _EQ.memo = None
    return __eq__


_EQ = threading.local()

for _cls in (Call, UserCall, Cast, Case, InList, AggCall, WindowCall):
    _cls.__repr__ = _dag_repr(_cls.__repr__)
    _cls.__eq__ = _dag_eq(_cls.__eq__)
