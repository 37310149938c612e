"""User-facing expressions for the DataFrame builder: `pqe.col`, `pqe.lit`, operators, methods.

An `Expr` is unresolved until a DataFrame method receives it; it is then resolved against the
DataFrame's columns through the same builder the SQL binder uses, so `df.filter(col("x") > 1)`
and `WHERE x > 1` give the same plan. A wrong column name fails at that point, with the closest
name suggested.
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from . import types as T
from .errors import (AmbiguousColumnError, BindError, UnknownColumnError, UnsupportedError,
                     suggest)
from .plan import builder as B
from .plan.expr import (AggCall, ColumnRef, Expr as PlanExpr, Field, Literal, WindowCall,
                        lit as plan_lit, walk)


class Resolver:
    """Name -> column lookup over a plan's fields (unqualified or `qualifier.name`)."""

    def __init__(self, fields: Sequence[Field]):
        self.fields = list(fields)

    def display(self, name: str) -> str:
        """The output name of `col(name)`: the name as written when it names a column whole
        (a column may be named "a.b"), else the column name of `qualifier.name`."""
        low = name.lower()
        if "." not in name or any(f.name == name for f in self.fields) or sum(
                f.name.lower() == low for f in self.fields) == 1:
            return name
        return name.rsplit(".", 1)[-1]

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
    """A column expression, resolved when a DataFrame method uses it.

    Build one with `pqe.col("x")`, `pqe.lit(1)`, operators (`+ - * / % == != < <= > >= & | ~`)
    and the methods below; it is checked against the DataFrame's columns (names, types) by
    the method that receives it, through the same builder the SQL binder uses.
    """

    __slots__ = ("_build", "_name", "_agg", "_win", "_col")

    def __init__(self, build: Callable[[Resolver], PlanExpr], name: str, agg: bool = False,
                 win: tuple | None = None, col: str | None = None):
        self._build = build
        self._name = name
        self._agg = agg
        self._win = win  # (function, argument Exprs) of a window-only function before over()
        # the column name as written when this expression is named after a column: the
        # output name is known only against the columns ("a.b" may be one, or t's b)
        self._col = col

    def _output_name(self, r: Resolver) -> str:
        return self._name if self._col is None else r.display(self._col)

    def _resolve(self, r: Resolver) -> PlanExpr:
        return self._build(r)

    def __repr__(self) -> str:
        return f"<pqe.Expr {self._name}>"

    def __bool__(self):
        raise TypeError("a pqe.Expr has no truth value: use & | ~ instead of and/or/not")

    # ---- naming --------------------------------------------------------------------------

    def alias(self, name: str) -> Expr:
        """The same expression under the output column name `name` (SQL's AS)."""
        if not isinstance(name, str) or not name:
            raise BindError(f"alias() takes a non-empty column name, not {name!r}")
        return Expr(self._build, name, self._agg, self._win)

    # ---- operators -----------------------------------------------------------------------

    def _binary(self, fn: str, other: Any, symbol: str, reverse: bool = False) -> Expr:
        o = wrap(other)
        a, b = (o, self) if reverse else (self, o)
        # (a float beside a REAL is a REAL in comparisons only: SQL computes `f4 * 1e10` in
        # DOUBLE, where REAL overflowed to inf)
        compare = fn in ("eq", "ne", "lt", "le", "gt", "ge")
        return Expr(lambda r: B.call(fn, *_operands(r, a, b, real=compare)),
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
        """TRUE where the value is NULL (SQL `x IS NULL`)."""
        return self._call("is_null", name=f"{self._name} IS NULL")

    def is_not_null(self) -> Expr:
        """TRUE where the value is not NULL (SQL `x IS NOT NULL`)."""
        return self._call("is_not_null", name=f"{self._name} IS NOT NULL")

    def is_in(self, values: Sequence[Any]) -> Expr:
        """SQL `x IN (v1, v2, ...)` over literal values or expressions: a list, tuple or
        set, or a pyarrow array, NumPy array or pandas Series of values."""
        if hasattr(values, "to_pylist"):  # a pyarrow Array or ChunkedArray
            values = values.to_pylist()
        elif hasattr(values, "tolist"):  # a NumPy array or pandas Series
            values = values.tolist()
        # a string is iterable too: `is_in("abc")` would match 'a', 'b' and 'c'
        if isinstance(values, (str, bytes, bytearray, Mapping, Expr)) or not isinstance(
                values, Iterable):
            raise BindError(f"is_in() takes a list, tuple or set of values, not "
                            f"{type(values).__name__}")
        vals = [wrap(v) for v in values]

        def build(r: Resolver) -> PlanExpr:
            arg, *items = _operands(r, self, *vals)
            return B.in_list(arg, items)

        shown = ", ".join(v._name for v in vals[:10]) + (", ..." if len(vals) > 10 else "")
        return Expr(build, f"{self._name} IN ({shown})", self._agg or any(v._agg for v in vals))

    def between(self, low: Any, high: Any) -> Expr:
        """SQL `x BETWEEN low AND high` (both ends included)."""
        lo, hi = wrap(low), wrap(high)
        return Expr(lambda r: B.between(*_operands(r, self, lo, hi)),
                    f"{self._name} BETWEEN {lo._name} AND {hi._name}",
                    self._agg or lo._agg or hi._agg)

    def cast(self, dtype: str | pa.DataType) -> Expr:
        """SQL CAST to a type: a pyarrow type or a spelling ("BIGINT", "decimal(15,2)",
        "date", "string"); a value that does not convert is an error when the query runs."""
        if isinstance(dtype, pa.DataType) and pa.types.is_float16(dtype):
            # (float16 data reads as REAL, exactly; a cast to it was a cast to REAL, its
            # values not rounded to half precision)
            raise UnsupportedError("cast to float16 (HALF FLOAT) is not supported: pqe "
                                   "computes in REAL (float32) or DOUBLE")
        t = T.parse_type(dtype)
        return Expr(lambda r: B.cast(self._resolve(r), t), self._name, self._agg,
                    col=self._col)

    def fill_null(self, value: Any) -> Expr:
        """The value, or `value` where it is NULL (SQL `coalesce(x, value)`)."""
        e = self._call("coalesce", value, name=self._name)
        e._col = self._col
        return e

    def like(self, pattern: str) -> Expr:
        """SQL `x LIKE pattern` (`%` any text, `_` one character)."""
        return self._call("like", pattern, name=f"{self._name} LIKE {wrap(pattern)._name}")

    def _call(self, fn: str, *args: Any, name: str | None = None) -> Expr:
        others = [wrap(a) for a in args]
        return Expr(lambda r: B.call(fn, *_operands(r, self, *others)),
                    name or f"{fn}({self._name})", self._agg or any(o._agg for o in others))

    # ---- aggregates ----------------------------------------------------------------------

    def _aggregate(self, fn: str, distinct: bool = False, *consts: Any) -> Expr:
        if self._agg:
            raise BindError(f"aggregate {fn} over an aggregate ({self._name})")
        consts = tuple(T.plain_value(c) for c in consts)  # (NumPy scalars: Python values)
        extra = [plan_lit(c) for c in consts]  # constant arguments (a separator, a fraction)
        shown = "".join(f", {c!r}" for c in consts)
        # named as SQL names it: count(DISTINCT x) is not count(x)
        return Expr(lambda r: B.aggregate_call(fn, [self._resolve(r), *extra], distinct),
                    f"{fn}({'DISTINCT ' if distinct else ''}{self._name}{shown})", agg=True)

    def sum(self) -> Expr:
        """SUM of the values (NULLs skipped); an aggregate: use it in group_by().agg(),
        select(), or with .over() as a window."""
        return self._aggregate("sum")

    def mean(self) -> Expr:
        """AVG of the values (NULLs skipped); an aggregate."""
        return self._aggregate("avg")

    def avg(self) -> Expr:
        """AVG of the values (NULLs skipped); an aggregate (same as mean())."""
        return self._aggregate("avg")

    def min(self) -> Expr:
        """MIN of the values; an aggregate."""
        return self._aggregate("min")

    def max(self) -> Expr:
        """MAX of the values; an aggregate."""
        return self._aggregate("max")

    def count(self) -> Expr:
        """COUNT of the non-NULL values; an aggregate (pqe.count() counts rows)."""
        return self._aggregate("count")

    def n_unique(self) -> Expr:
        """COUNT(DISTINCT x): the number of distinct non-NULL values; an aggregate."""
        return self._aggregate("count", distinct=True)

    def std(self) -> Expr:
        """Sample standard deviation (STDDEV_SAMP); an aggregate."""
        return self._aggregate("stddev_samp")

    def var(self) -> Expr:
        """Sample variance (VAR_SAMP); an aggregate."""
        return self._aggregate("var_samp")

    def first(self) -> Expr:
        """Any one value of the group (ANY_VALUE); an aggregate."""
        return self._aggregate("any_value")

    def median(self) -> Expr:
        """MEDIAN of the numbers (a DOUBLE, between the two middle values); an aggregate."""
        return self._aggregate("median")

    def quantile(self, q: float, interpolation: str = "linear") -> Expr:
        """The q-th quantile (0 <= q <= 1); an aggregate. interpolation "linear" is SQL's
        QUANTILE_CONT (a DOUBLE), "nearest" QUANTILE_DISC (one of the values)."""
        fn = {"linear": "quantile_cont", "nearest": "quantile_disc"}.get(interpolation)
        if fn is None:
            raise BindError(f"quantile interpolation {interpolation!r}: 'linear' or 'nearest'")
        q = T.python_number(q)  # (np.float64(0.5): Decimal('np.float64(0.5)') failed)
        if isinstance(q, bool) or not isinstance(q, (int, float, decimal.Decimal)):
            raise BindError(f"quantile q is a number between 0 and 1, not {q!r}")
        if isinstance(q, float):  # as SQL's 0.7 is read: the decimal written, exactly
            q = decimal.Decimal(repr(q))
        return self._aggregate(fn, False, q)

    def mode(self) -> Expr:
        """The most frequent value (MODE; the smallest of equally frequent ones); an aggregate."""
        return self._aggregate("mode")

    def bitwise_and(self) -> Expr:
        """BIT_AND of the integers; an aggregate."""
        return self._aggregate("bit_and")

    def bitwise_or(self) -> Expr:
        """BIT_OR of the integers; an aggregate."""
        return self._aggregate("bit_or")

    def bitwise_xor(self) -> Expr:
        """BIT_XOR of the integers; an aggregate."""
        return self._aggregate("bit_xor")

    def corr(self, other: str | Expr) -> Expr:
        """Pearson correlation of this and `other` (a column name or an expression) over the
        rows where neither is NULL (SQL CORR); NULL where either does not vary. An aggregate."""
        return self._pair("corr", other)

    def cov(self, other: str | Expr, ddof: int = 1) -> Expr:
        """Covariance of this and `other`: sample (ddof=1, COVAR_SAMP) or population (ddof=0,
        COVAR_POP); an aggregate."""
        ddof = T.python_number(ddof)  # (np.int64(1); np.bool_ stays refused)
        if type(ddof) is not int or ddof not in (0, 1):  # (True and 1.0 were read as 1)
            raise BindError(f"cov(): ddof is 0 (population) or 1 (sample), not {ddof!r}")
        return self._pair("covar_samp" if ddof else "covar_pop", other)

    def _pair(self, fn: str, other: str | Expr) -> Expr:
        x = to_expr(other)
        if self._agg or x._agg:
            raise BindError(f"aggregate {fn} over an aggregate ({self._name}, {x._name})")
        return Expr(lambda r: B.aggregate_call(fn, [self._resolve(r), x._resolve(r)]),
                    f"{fn}({self._name}, {x._name})", agg=True)

    def string_agg(self, separator: str = ",") -> Expr:
        """The non-NULL values as text joined by `separator` (STRING_AGG); an aggregate."""
        return self._aggregate("string_agg", False, separator)

    def list(self) -> Expr:
        """The values, NULLs included, as a list (ARRAY_AGG); an aggregate."""
        return self._aggregate("array_agg")

    # ---- windows -------------------------------------------------------------------------

    def over(self, partition_by: str | Expr | Sequence[str | Expr] | None = None,
             order_by: str | Expr | SortExpr | Sequence[str | Expr | SortExpr] | None = None,
             *, rows: tuple | None = None, range: tuple | None = None) -> Expr:
        """This aggregate (`col("x").sum()`, `pqe.count()`, ...) or window function
        (`pqe.row_number()`, `pqe.rank()`, `pqe.lag("x")`, ...) over a window, as SQL's
        `fn(...) OVER (PARTITION BY ... ORDER BY ... frame)`; use it in select() or
        with_columns() (the DataFrame adds a Window node as the SQL binder does).

        partition_by: columns or expressions; order_by: columns, expressions or
        `col("t").desc()`; rows=(start, end) or range=(start, end): the frame, each bound an
        offset: None is UNBOUNDED, 0 the current row, -n n PRECEDING, +n n FOLLOWING. With
        no frame SQL's default applies: with order_by, the rows up to the current one and
        its peers; without, the whole partition.

        >>> df.with_columns(running=col("v").sum().over(partition_by="g", order_by="t"))
        """
        if rows is not None and range is not None:
            raise BindError("over() takes rows= or range=, not both")
        spec = ("rows", rows) if rows is not None else ("range", range) if range is not None else None
        if spec is not None and (not isinstance(spec[1], (tuple, list)) or len(spec[1]) != 2):
            raise BindError(f"{spec[0]}= is a (start, end) pair of offsets, e.g. (-1, 0)")
        if isinstance(partition_by, SortExpr) or (isinstance(partition_by, (list, tuple)) and any(
                isinstance(p, SortExpr) for p in partition_by)):
            raise BindError("partition_by= takes columns or expressions, not a sort key "
                            "(.desc() / .asc() belong in order_by=)")
        if partition_by is not None and not isinstance(partition_by, (str, Expr, list, tuple)):
            raise BindError(f"partition_by= takes columns or expressions, not {partition_by!r}")
        pby = [] if partition_by is None else (
            [partition_by] if isinstance(partition_by, (str, Expr)) else list(partition_by))
        oby = [] if order_by is None else (
            [order_by] if isinstance(order_by, (str, Expr, SortExpr)) else list(order_by))
        me = self
        if me._win is None and not me._agg:
            raise BindError(f"over() applies to an aggregate (col('x').sum(), pqe.count()) or a "
                            f"window function (pqe.row_number(), pqe.rank(), ...), not "
                            f"{me._name}")

        def build(r: Resolver) -> PlanExpr:
            parts = [to_expr(p)._resolve(r) for p in pby]
            keys = [_sort_key(k, r) for k in oby]
            frame = B.frame(spec[0], *spec[1]) if spec is not None else None
            if me._win is not None:
                fn, args = me._win
                inner = [a._resolve(r) for a in args]
            else:
                agg = me._resolve(r)
                if not isinstance(agg, AggCall):
                    raise BindError(f"over() applies to one aggregate, not to {me._name}")
                inner = [agg]
            # (the compiler has no window inside a window; SQL refuses it too)
            if any(isinstance(x, WindowCall) for e in [*inner, *parts, *(k.expr for k in keys)]
                   for x in walk(e)):
                raise BindError(f"window functions cannot be nested: {me._name}.over() reads "
                                f"another window; add that one with with_columns() first")
            if me._win is not None:
                from .optimizer.simplify import fold_constant

                inner = [fold_constant(a) or a for a in inner]  # (lag("x", 1, lit(5) * 2))
                return B.window_function(fn, inner, parts, keys, frame)
            return B.window_aggregate(agg, parts, keys, frame)

        return Expr(build, me._name, col=me._col)

    # ---- namespaces ----------------------------------------------------------------------

    @property
    def str(self) -> _StrNamespace:
        """Text functions: `col("s").str.lower()`, `.upper()`, `.len()`, `.strip()`,
        `.contains(s)`, `.starts_with(s)`, `.ends_with(s)`, `.replace(a, b)`, `.slice(i, n)`."""
        return _StrNamespace(self)

    @property
    def dt(self) -> _DtNamespace:
        """Date parts: `col("d").dt.year()`, `.month()`, `.day()`, `.quarter()`,
        `.weekday()`."""
        return _DtNamespace(self)

    # ---- sorting -------------------------------------------------------------------------

    def desc(self, nulls_last: bool | None = None) -> SortExpr:
        """A descending sort key for sort() or over(order_by=...) (NULLs first by default,
        as in SQL's DESC)."""
        return SortExpr(self, descending=True, nulls_last=nulls_last)

    def asc(self, nulls_last: bool | None = None) -> SortExpr:
        """An ascending sort key for sort() or over(order_by=...) (NULLs last by default)."""
        return SortExpr(self, descending=False, nulls_last=nulls_last)


class SortExpr:
    """A sort key: an expression, its direction and where NULLs go (made by Expr.desc() and
    Expr.asc())."""

    def __init__(self, expr: Expr, descending: bool, nulls_last: bool | None = None):
        self.expr = expr
        self.descending = descending
        self.nulls_last = nulls_last


def _sort_key(item, r: Resolver, descending: bool = False, nulls_last: bool | None = None):
    """A SortKey like SQL's: NULLS FIRST by default exactly when descending."""
    from .plan.expr import SortKey

    if isinstance(item, SortExpr):
        descending = item.descending
        nulls_last = item.nulls_last if item.nulls_last is not None else nulls_last
        item = item.expr
    e = to_expr(item)._resolve(r)
    nulls_first = (not nulls_last) if nulls_last is not None else descending
    return SortKey(e, not descending, nulls_first)


_MISSING = object()


class _Then:
    """`pqe.when(cond)` waiting for its `.then(value)` (Polars' spelling of a CASE branch);
    not an expression until then."""

    __slots__ = ("_branches", "_condition")

    def __init__(self, branches: tuple, condition: Expr):
        self._branches, self._condition = branches, condition

    def then(self, value: Any) -> When:
        """The value of rows where the condition is TRUE."""
        return When(self._branches + ((self._condition, wrap(value)),))

    def __getattr__(self, name):
        raise BindError(f"when(condition) needs .then(value) before .{name}")


class When(Expr):
    """`pqe.when(cond, value).when(cond2, value2).otherwise(default)`: SQL's
    `CASE WHEN cond THEN value ... ELSE default END`. Without otherwise(), rows that match
    no condition are NULL. Values are literals unless they are expressions (use col("x") for
    a column)."""

    __slots__ = ("_branches",)

    def __init__(self, branches: tuple[tuple[Expr, Expr], ...], else_: Expr | None = None):
        self._branches = branches

        def build(r: Resolver) -> PlanExpr:
            whens = [(c._resolve(r), v._resolve(r)) for c, v in branches]
            return B.case(whens, else_._resolve(r) if else_ is not None else None)

        agg = any(c._agg or v._agg for c, v in branches) or (else_ is not None and else_._agg)
        super().__init__(build, "CASE", agg)

    def when(self, condition: Any, value: Any = _MISSING) -> When | _Then:
        """Another branch, tried when the earlier conditions are not TRUE:
        `.when(cond, value)`, or Polars' spelling `.when(cond).then(value)`."""
        if value is _MISSING:
            return _Then(self._branches, wrap(condition))
        return When(self._branches + ((wrap(condition), wrap(value)),))

    def otherwise(self, value: Any) -> Expr:
        """The value of rows no condition matched (SQL's ELSE); ends the CASE."""
        w = When(self._branches, wrap(value))
        return Expr(w._build, "CASE", w._agg)


class _StrNamespace:
    """Text functions of an expression (`col("s").str`)."""

    def __init__(self, e: Expr):
        self._e = e

    def lower(self) -> Expr:
        """Lower case (SQL lower)."""
        return self._e._call("lower")

    def upper(self) -> Expr:
        """Upper case (SQL upper)."""
        return self._e._call("upper")

    def len(self) -> Expr:
        """Length in characters (SQL length)."""
        return self._e._call("length")

    def strip(self) -> Expr:
        """Without leading and trailing spaces (SQL trim)."""
        return self._e._call("trim")

    def contains(self, s: str) -> Expr:
        """TRUE where the text contains `s` (no pattern characters)."""
        return self._e._call("contains", s)

    def starts_with(self, s: str) -> Expr:
        """TRUE where the text starts with `s`."""
        return self._e._call("starts_with", s)

    def ends_with(self, s: str) -> Expr:
        """TRUE where the text ends with `s`."""
        return self._e._call("ends_with", s)

    def replace(self, old: str, new: str) -> Expr:
        """Every occurrence of `old` replaced by `new` (SQL replace)."""
        return self._e._call("replace", old, new)

    def slice(self, offset: int, length: int | None = None) -> Expr:
        """`length` characters (all without it) from `offset`, 0-based; a negative offset
        counts from the end, as in Polars and Python: `slice(-2)` is the last two
        characters, `slice(-3, 2)` the two before the last one. A slice reaching outside the
        text keeps only the part inside it."""
        offset, length = T.plain_value(offset), T.plain_value(length)  # (NumPy integers)
        for what, v in (("offset", offset), ("length", length)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise BindError(f"str.slice {what} must be an integer, not {v!r}")
        if length is not None and length < 0:
            raise BindError(f"str.slice length must not be negative, not {length}")
        if offset >= 0:  # SQL substring counts from 1
            args = [offset + 1] + ([length] if length is not None else [])
            return self._e._call("substring", *args)
        # the last k = -offset characters, then (when `length` is shorter) all but their
        # last k - length: the characters [len + offset, len + offset + length) clipped to
        # the text, as Polars gives them, with constant arguments only
        k = -offset
        tail = self._e._call("right", k, name=f"substring({self._e._name})")
        if length is None or length >= k:
            return tail
        return tail._call("left", length - k, name=f"substring({self._e._name})")


class _DtNamespace:
    """Date and timestamp parts of an expression (`col("d").dt`)."""

    def __init__(self, e: Expr):
        self._e = e

    def year(self) -> Expr:
        """The year (SQL EXTRACT(year FROM d))."""
        return self._e._call("extract_year", name=f"year({self._e._name})")

    def month(self) -> Expr:
        """The month, 1-12."""
        return self._e._call("extract_month", name=f"month({self._e._name})")

    def day(self) -> Expr:
        """The day of the month, 1-31."""
        return self._e._call("extract_day", name=f"day({self._e._name})")

    def quarter(self) -> Expr:
        """The quarter, 1-4."""
        return self._e._call("extract_quarter")

    def weekday(self) -> Expr:
        """The ISO day of the week: Monday 1 ... Sunday 7."""
        return self._e._call("extract_isodow")


def col(name: str) -> Expr:
    """A column by name; `"t.name"` picks table t's column `name` where two tables of a
    join hold one (a right column that join() renamed with its suffix goes by its new
    name, `name_right`)."""
    if not isinstance(name, str) or not name:
        raise BindError(f"col() takes a column name, not {name!r}")
    return Expr(lambda r: r.column(name), name, col=name)


def lit(value: Any) -> Expr:
    """A literal value (int, float, Decimal, str, date, datetime, bool, None)."""
    if isinstance(value, Expr):
        return value
    value = T.plain_value(value)
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        # an instant: a TIMESTAMP WITH TIME ZONE (in UTC), as DuckDB's TIMESTAMPTZ; it was a
        # TIMESTAMP holding the UTC wall-clock time, its zone dropped
        import pyarrow as pa

        from .plan.expr import Literal as PlanLiteral

        literal = PlanLiteral(value.astimezone(datetime.timezone.utc),
                              pa.timestamp("us", "UTC"))
        return Expr(lambda r: literal, repr(value))
    if isinstance(value, float):
        literal = plan_lit(value)
        return _FloatLiteral(lambda r: literal, repr(value))
    if isinstance(value, (int, decimal.Decimal, str, bool, bytes, datetime.date)) or value is None:
        literal = plan_lit(value)
        return Expr(lambda r: literal, repr(value))
    raise BindError(f"cannot make a literal from {type(value).__name__}")


def count() -> Expr:
    """COUNT(*): the number of rows; an aggregate (also as a window: pqe.count().over(...))."""
    return Expr(lambda r: B.aggregate_call("count", []), "count", agg=True)


def when(condition: Any, value: Any = _MISSING) -> When | _Then:
    """SQL CASE: `pqe.when(col("x") > 0, "pos").when(col("x") < 0, "neg").otherwise("zero")`,
    or as Polars spells it, `pqe.when(col("x") > 0).then("pos").otherwise("zero")`. Values
    are literals unless they are expressions; without otherwise() unmatched rows are NULL."""
    if value is _MISSING:
        return _Then((), wrap(condition))
    return When(((wrap(condition), wrap(value)),))


def coalesce(*exprs: Any) -> Expr:
    """The first non-NULL argument (SQL coalesce). A string is a column name (use lit("x")
    for text); other Python values are literals."""
    if not exprs:
        raise BindError("coalesce() needs at least one argument")
    items = [to_expr(e) for e in exprs]
    return Expr(lambda r: B.call("coalesce", *[e._resolve(r) for e in items]),
                f"coalesce({', '.join(e._name for e in items)})", any(e._agg for e in items))


def _window_fn(fn: str, *args: Any) -> Expr:
    items = tuple(args)

    def build(r: Resolver) -> PlanExpr:
        raise BindError(f"{fn}() is a window function: add .over(partition_by=..., "
                        f"order_by=...)")

    return Expr(build, fn, win=(fn, items))


def row_number() -> Expr:
    """ROW_NUMBER(): 1, 2, 3, ... within each window partition, in its order; use .over()."""
    return _window_fn("row_number")


def rank() -> Expr:
    """RANK(): the row's rank in its window's order, with gaps after ties; use .over()."""
    return _window_fn("rank")


def dense_rank() -> Expr:
    """DENSE_RANK(): the row's rank in its window's order, without gaps; use .over()."""
    return _window_fn("dense_rank")


def percent_rank() -> Expr:
    """PERCENT_RANK(): (rank - 1) / (rows in the partition - 1); use .over()."""
    return _window_fn("percent_rank")


def cume_dist() -> Expr:
    """CUME_DIST(): the fraction of the partition's rows up to this row's peers; use .over()."""
    return _window_fn("cume_dist")


def ntile(n: int) -> Expr:
    """NTILE(n): the bucket (1..n) of the row when the partition is split in n; use .over()."""
    return _window_fn("ntile", lit(n))


def lag(expr: str | Expr, offset: int | Expr = 1, default: Any = None) -> Expr:
    """LAG(x, offset, default): x of the row `offset` rows before in the window's order
    (`default`, NULL unless given, where there is none); the offset and the default may be
    expressions that vary by row (`col("k")`); use .over()."""
    return _window_fn("lag", to_expr(expr), wrap(offset), wrap(default))


def lead(expr: str | Expr, offset: int | Expr = 1, default: Any = None) -> Expr:
    """LEAD(x, offset, default): x of the row `offset` rows after in the window's order
    (`default`, NULL unless given, where there is none); the offset and the default may be
    expressions that vary by row (`col("k")`); use .over()."""
    return _window_fn("lead", to_expr(expr), wrap(offset), wrap(default))


def first_value(expr: str | Expr) -> Expr:
    """FIRST_VALUE(x): x of the first row of the window frame; use .over()."""
    return _window_fn("first_value", to_expr(expr))


def last_value(expr: str | Expr) -> Expr:
    """LAST_VALUE(x): x of the last row of the window frame; use .over()."""
    return _window_fn("last_value", to_expr(expr))


def nth_value(expr: str | Expr, n: int) -> Expr:
    """NTH_VALUE(x, n): x of the frame's n-th row (1-based); use .over()."""
    return _window_fn("nth_value", to_expr(expr), lit(n))


class UDF:
    """A registered user-defined function (Context.register_udf / register_udaf): calling it
    makes an expression, `f(col("a"), 1)` (a string is a column name, other values are
    literals), as SQL's `f(a, 1)` does."""

    def __init__(self, udf: Any):
        self.udf = udf
        self.name = udf.name
        self.aggregate = hasattr(udf, "merge")

    def __repr__(self) -> str:
        kind = "aggregate" if self.aggregate else "function"
        return f"<pqe user {kind} {self.name}>"

    def __call__(self, *args: Any) -> Expr:
        items = [to_expr(a) for a in args]
        name = f"{self.name}({', '.join(e._name for e in items)})"
        udf = self.udf
        if self.aggregate:
            for e in items:
                if e._agg:
                    raise BindError(f"aggregate {self.name} over an aggregate ({e._name})")
            return Expr(lambda r: B.user_aggregate(udf, [e._resolve(r) for e in items]), name,
                        agg=True)
        return Expr(lambda r: B.user_call(udf, [e._resolve(r) for e in items]), name,
                    any(e._agg for e in items))


class _FloatLiteral(Expr):
    """A Python float as a literal. It is a DOUBLE, except beside REAL operands (and no
    DOUBLE one), where it is read as a REAL, as SQL reads `f4 = 0.1` (its literal 0.1 meets
    the REAL column as a REAL) and as Polars types a float literal by its column:
    `col("f4") == 0.1` finds the REAL 0.1, which is not the DOUBLE 0.1."""

    __slots__ = ()


def _operands(r: Resolver, *exprs: Expr, real: bool = True) -> list[PlanExpr]:
    """The resolved operands of one operation, Python float literals typed by the others
    (see _FloatLiteral; `real=False`: arithmetic, where they stay DOUBLE)."""
    out = [e._resolve(r) for e in exprs]
    if not real:
        return out
    floats = [x.dtype for x, e in zip(out, exprs, strict=True)
              if not isinstance(e, _FloatLiteral) and T.is_floating(x.dtype)]
    if floats and all(pa.types.is_float32(t) for t in floats):
        out = [_as_real(x) if isinstance(e, _FloatLiteral) else x
               for x, e in zip(out, exprs, strict=True)]
    return out


_REAL_MAX = 3.4028234663852886e38  # the largest finite REAL (float32)


def _as_real(e: PlanExpr) -> PlanExpr:
    """A float literal as a REAL, unless it is past REAL's range (then it stays DOUBLE and
    the comparison is made in DOUBLE, as for any value a REAL cannot hold)."""
    if isinstance(e, Literal) and isinstance(e.value, float) and math.isfinite(e.value) \
            and abs(e.value) > _REAL_MAX:
        return e
    return B.cast(e, T.FLOAT32)


def wrap(value: Any) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, SortExpr):
        raise BindError("a sort key (desc()/asc()) is only allowed in sort() and over(order_by=)")
    return lit(value)


def to_expr(value: str | Expr) -> Expr:
    """A column name or an expression."""
    return col(value) if isinstance(value, str) else wrap(value)


WINDOW_FUNCTIONS = ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile",
                    "lag", "lead", "first_value", "last_value", "nth_value")

__all__ = ["Expr", "UDF", "When", "col", "lit", "count", "when", "coalesce", "Resolver", "SortExpr",
           "Literal", "AggCall", "row_number", "rank", "dense_rank", "percent_rank", "cume_dist",
           "ntile", "lag", "lead", "first_value", "last_value", "nth_value"]
