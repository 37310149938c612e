"""User-facing expressions for the DataFrame builder: `pqe.col`, `pqe.lit`, operators, methods.

An `Expr` is unresolved until a DataFrame method receives it; it is then resolved against the
DataFrame's columns through the same builder the SQL binder uses, so `df.filter(col("x") > 1)`
and `WHERE x > 1` give the same plan. A wrong column name fails at that point, with the closest
name suggested.
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

from . import types as T
from .errors import AmbiguousColumnError, BindError, UnknownColumnError, suggest
from .plan import builder as B
from .plan.expr import AggCall, ColumnRef, Expr as PlanExpr, Field, Literal, lit as plan_lit


class Resolver:
    """Name -> column lookup over a plan's fields (unqualified or `qualifier.name`)."""

    def __init__(self, fields: Sequence[Field]):
        self.fields = list(fields)

    def column(self, name: str) -> ColumnRef:
        hits = [f for f in self.fields if f.name == name]
        if not hits and "." in name:
            q, n = name.rsplit(".", 1)
            hits = [f for f in self.fields if f.name == n and f.qualifier == q]
        if not hits:
            low = name.lower()
            hits = [f for f in self.fields if f.name.lower() == low]
            if len(hits) > 1:
                hits = []
        if len(hits) > 1:
            quals = ", ".join(f"{f.qualifier}.{f.name}" if f.qualifier else f.name for f in hits)
            raise AmbiguousColumnError(f"column '{name}' is ambiguous: it could be {quals}")
        if not hits:
            names = [f.name for f in self.fields]
            raise UnknownColumnError(f"column '{name}' does not exist{suggest(name, names)}; "
                                     f"columns are: {', '.join(names)}")
        return ColumnRef(hits[0])


class Expr:
    """A column expression, resolved when a DataFrame method uses it."""

    __slots__ = ("_build", "_name", "_agg")

    def __init__(self, build: Callable[[Resolver], PlanExpr], name: str, agg: bool = False):
        self._build = build
        self._name = name
        self._agg = agg

    def _resolve(self, r: Resolver) -> PlanExpr:
        return self._build(r)

    def __repr__(self) -> str:
        return f"<pqe.Expr {self._name}>"

    def __bool__(self):
        raise TypeError("a pqe.Expr has no truth value: use & | ~ instead of and/or/not")

    # ---- naming --------------------------------------------------------------------------

    def alias(self, name: str) -> Expr:
        return Expr(self._build, name, self._agg)

    # ---- operators -----------------------------------------------------------------------

    def _binary(self, fn: str, other: Any, symbol: str, reverse: bool = False) -> Expr:
        o = wrap(other)
        a, b = (o, self) if reverse else (self, o)
        return Expr(lambda r: B.call(fn, a._resolve(r), b._resolve(r)),
                    f"({a._name} {symbol} {b._name})", self._agg or o._agg)

    def __add__(self, o): return self._binary("add", o, "+")
    def __radd__(self, o): return self._binary("add", o, "+", True)
    def __sub__(self, o): return self._binary("subtract", o, "-")
    def __rsub__(self, o): return self._binary("subtract", o, "-", True)
    def __mul__(self, o): return self._binary("multiply", o, "*")
    def __rmul__(self, o): return self._binary("multiply", o, "*", True)
    def __truediv__(self, o): return self._binary("divide", o, "/")
    def __rtruediv__(self, o): return self._binary("divide", o, "/", True)
    def __mod__(self, o): return self._binary("modulo", o, "%")
    def __eq__(self, o): return self._binary("eq", o, "=")  # type: ignore[override]
    def __ne__(self, o): return self._binary("ne", o, "<>")  # type: ignore[override]
    def __lt__(self, o): return self._binary("lt", o, "<")
    def __le__(self, o): return self._binary("le", o, "<=")
    def __gt__(self, o): return self._binary("gt", o, ">")
    def __ge__(self, o): return self._binary("ge", o, ">=")
    def __and__(self, o): return self._binary("and", o, "AND")
    def __rand__(self, o): return self._binary("and", o, "AND", True)
    def __or__(self, o): return self._binary("or", o, "OR")
    def __ror__(self, o): return self._binary("or", o, "OR", True)

    def __invert__(self) -> Expr:
        return Expr(lambda r: B.not_(self._resolve(r)), f"NOT {self._name}", self._agg)

    def __neg__(self) -> Expr:
        return Expr(lambda r: B.call("negate", self._resolve(r)), f"-{self._name}", self._agg)

    __hash__ = None  # type: ignore[assignment]

    # ---- predicates and conversions ------------------------------------------------------

    def is_null(self) -> Expr:
        return self._call("is_null", name=f"{self._name} IS NULL")

    def is_not_null(self) -> Expr:
        return self._call("is_not_null", name=f"{self._name} IS NOT NULL")

    def is_in(self, values: Sequence[Any]) -> Expr:
        vals = [wrap(v) for v in values]
        return Expr(lambda r: B.in_list(self._resolve(r), [v._resolve(r) for v in vals]),
                    f"{self._name} IN (...)", self._agg)

    def between(self, low: Any, high: Any) -> Expr:
        lo, hi = wrap(low), wrap(high)
        return Expr(lambda r: B.between(self._resolve(r), lo._resolve(r), hi._resolve(r)),
                    f"{self._name} BETWEEN", self._agg)

    def cast(self, dtype: str | pa.DataType) -> Expr:
        t = T.parse_type(dtype)
        return Expr(lambda r: B.cast(self._resolve(r), t), self._name, self._agg)

    def fill_null(self, value: Any) -> Expr:
        return self._call("coalesce", value, name=self._name)

    def like(self, pattern: str) -> Expr:
        return self._call("like", pattern, name=f"{self._name} LIKE")

    def _call(self, fn: str, *args: Any, name: str | None = None) -> Expr:
        others = [wrap(a) for a in args]
        return Expr(lambda r: B.call(fn, self._resolve(r), *[o._resolve(r) for o in others]),
                    name or f"{fn}({self._name})", self._agg or any(o._agg for o in others))

    # ---- aggregates ----------------------------------------------------------------------

    def _aggregate(self, fn: str, distinct: bool = False) -> Expr:
        if self._agg:
            raise BindError(f"aggregate {fn} over an aggregate ({self._name})")
        return Expr(lambda r: B.aggregate_call(fn, [self._resolve(r)], distinct),
                    f"{fn}({self._name})", agg=True)

    def sum(self) -> Expr: return self._aggregate("sum")
    def mean(self) -> Expr: return self._aggregate("avg")
    def avg(self) -> Expr: return self._aggregate("avg")
    def min(self) -> Expr: return self._aggregate("min")
    def max(self) -> Expr: return self._aggregate("max")
    def count(self) -> Expr: return self._aggregate("count")
    def n_unique(self) -> Expr: return self._aggregate("count", distinct=True)
    def std(self) -> Expr: return self._aggregate("stddev_samp")
    def var(self) -> Expr: return self._aggregate("var_samp")
    def first(self) -> Expr: return self._aggregate("any_value")

    # ---- namespaces ----------------------------------------------------------------------

    @property
    def str(self) -> _StrNamespace:
        return _StrNamespace(self)

    @property
    def dt(self) -> _DtNamespace:
        return _DtNamespace(self)

    # ---- sorting -------------------------------------------------------------------------

    def desc(self) -> SortExpr:
        return SortExpr(self, descending=True)

    def asc(self) -> SortExpr:
        return SortExpr(self, descending=False)


class SortExpr:
    def __init__(self, expr: Expr, descending: bool, nulls_last: bool | None = None):
        self.expr = expr
        self.descending = descending
        self.nulls_last = nulls_last


class _StrNamespace:
    def __init__(self, e: Expr):
        self._e = e

    def lower(self) -> Expr: return self._e._call("lower")
    def upper(self) -> Expr: return self._e._call("upper")
    def len(self) -> Expr: return self._e._call("length")
    def strip(self) -> Expr: return self._e._call("trim")
    def contains(self, s: str) -> Expr: return self._e._call("contains", s)
    def starts_with(self, s: str) -> Expr: return self._e._call("starts_with", s)
    def ends_with(self, s: str) -> Expr: return self._e._call("ends_with", s)
    def replace(self, old: str, new: str) -> Expr: return self._e._call("replace", old, new)

    def slice(self, offset: int, length: int | None = None) -> Expr:
        args = [offset + 1] + ([length] if length is not None else [])
        return self._e._call("substring", *args)


class _DtNamespace:
    def __init__(self, e: Expr):
        self._e = e

    def year(self) -> Expr: return self._e._call("extract_year", name=f"year({self._e._name})")
    def month(self) -> Expr: return self._e._call("extract_month", name=f"month({self._e._name})")
    def day(self) -> Expr: return self._e._call("extract_day", name=f"day({self._e._name})")
    def quarter(self) -> Expr: return self._e._call("extract_quarter")
    def weekday(self) -> Expr: return self._e._call("extract_isodow")


def col(name: str) -> Expr:
    """A column by name (`"t.name"` to pick a table's column after a join)."""
    display = name.rsplit(".", 1)[-1]
    return Expr(lambda r: r.column(name), display)


def lit(value: Any) -> Expr:
    """A literal value (int, float, Decimal, str, date, datetime, bool, None)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, float) or isinstance(value, (int, decimal.Decimal, str, bool, bytes,
                                                       datetime.date)) or value is None:
        literal = plan_lit(value)
        return Expr(lambda r: literal, repr(value))
    raise BindError(f"cannot make a literal from {type(value).__name__}")


def count() -> Expr:
    """COUNT(*)."""
    return Expr(lambda r: B.aggregate_call("count", []), "count", agg=True)


def wrap(value: Any) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, SortExpr):
        raise BindError("a sort key (desc()/asc()) is only allowed in sort()")
    return lit(value)


def to_expr(value: str | Expr) -> Expr:
    """A column name or an expression."""
    return col(value) if isinstance(value, str) else wrap(value)


__all__ = ["Expr", "col", "lit", "count", "Resolver", "SortExpr", "Literal", "AggCall"]
