"""Rule: simplify expressions.

- constant folding: a call whose arguments are all literals is evaluated once, with the same
  kernels execution uses (`date '1998-12-01' - interval '68' day` becomes a DATE literal);
- boolean identities: `x AND TRUE` -> x, `x OR TRUE` -> TRUE, `NOT NOT x` -> x;
- CASE branches with constant conditions: FALSE/NULL ones dropped, the first TRUE one taken;
- common conjuncts pulled out of OR: `(a AND b) OR (a AND c)` -> `a AND (b OR c)`, which
  exposes join keys and scan filters hidden in disjunctions (TPC-H Q19);
- filters that are always TRUE disappear;
- empty relations: a filter that is always FALSE (or NULL) and LIMIT 0 become an empty VALUES,
  which replaces every operator that yields no row over it (projections, filters, sorts,
  windows, joins that need a row from the empty side, grouped aggregates), and an anti join
  with an empty right side is its left input (EXCEPT ALL of nothing). Their
  expressions are then never evaluated, as SQL never evaluates them for no row (an
  overflowing projection under LIMIT 0 is no error), and nothing is scanned.
"""

from __future__ import annotations

import pyarrow as pa

from .. import types as T
from ..errors import DataValueError, Error
from ..plan import builder as B
from ..plan.expr import (FALSE, TRUE, AggCall, Call, Case, Cast, ColumnRef, Expr, InList,
                         Literal, SubqueryExpr, WindowCall, and_, conjuncts, disjuncts,
                         is_volatile, or_, transform, walk)
from ..plan.logical import (Aggregate, Filter, Join, Limit, LogicalPlan, Project, Scan, Sort,
                            Values, Window, map_expressions, transform_up)

# a new value per row (random) or per statement (folded by the binder in SQL)
_NOT_FOLDABLE = frozenset({"current_timestamp", "current_date", "random"})


def simplify(plan: LogicalPlan) -> LogicalPlan:
    def rule(node: LogicalPlan) -> LogicalPlan | None:
        node = map_expressions(node, simplify_expr)
        if isinstance(node, Filter) and node.predicate == TRUE:
            return node.input
        if _yields_no_row(node):
            return Values(fields=node.schema, rows=())
        if isinstance(node, Join) and node.kind == "anti" and _is_empty(node.right) \
                and node.schema == node.left.schema:
            return node.left  # nothing to exclude (x NOT IN (empty) is TRUE, NULL x too)
        if isinstance(node, Join) and node.filter is not None \
                and _never_true(conjuncts(node.filter)):
            return _unmatched_join(node)
        return node

    return transform_up(plan, rule)


def _is_empty(node: LogicalPlan) -> bool:
    return isinstance(node, Values) and not node.rows


def _yields_no_row(node: LogicalPlan) -> bool:
    if _is_empty(node):
        return False
    if isinstance(node, Filter):  # a NULL or FALSE conjunct rejects every row
        return _never_true(conjuncts(node.predicate)) or _is_empty(node.input)
    if isinstance(node, Scan):  # (filters pushed into a scan, as conjuncts)
        return _never_true(node.filters)
    if isinstance(node, (Limit, Sort)) and node.fetch == 0:  # (Sort: ORDER BY ... LIMIT 0)
        return True
    if isinstance(node, (Limit, Project, Sort, Window)):
        return _is_empty(node.input)
    if isinstance(node, Aggregate):  # without GROUP BY it yields one row
        return bool(node.group) and _is_empty(node.input)
    if isinstance(node, Join):
        left, right = _is_empty(node.left), _is_empty(node.right)
        if node.kind in ("inner", "semi", "cross") and node.filter is not None \
                and _never_true(conjuncts(node.filter)):
            return True
        if node.kind in ("inner", "semi"):
            return left or right
        return left if node.kind in ("left", "anti") else right if node.kind == "right" else (
            left and right)
    return False


def _unmatched_join(node: Join) -> LogicalPlan:
    """A join whose condition is never true pairs no rows: the side whose rows could only
    appear matched is dropped (LEFT JOIN ... ON x AND NULL keeps every left row, NULL-extended,
    and computes nothing of x)."""
    if node.kind in ("left", "anti") and not node.null_aware and not _is_empty(node.right):
        return Join(node.left, Values(fields=node.right.schema, rows=()), node.kind, node.on,
                    node.filter, node.null_aware)
    if node.kind == "right" and not _is_empty(node.left):
        return Join(Values(fields=node.left.schema, rows=()), node.right, node.kind, node.on,
                    node.filter, node.null_aware)
    return node


def _never_true(preds) -> bool:
    """A conjunction with a constant NULL or FALSE term: no row passes it, and none of the
    other terms needs computing (`WHERE x / 0 > 1 AND NULL` scans nothing)."""
    return any(isinstance(p, Literal) and p.value is not True for p in preds)


def simplify_expr(e: Expr) -> Expr:
    return transform(e, _simplify_node)


def _is_bool(e: Expr, value: bool) -> bool:
    return isinstance(e, Literal) and e.value is value


def _simplify_node(e: Expr) -> Expr | None:
    if isinstance(e, Literal):
        return _real_literal(e)
    if isinstance(e, Call):
        if e.fn == "and":
            parts = conjuncts(e)
            if any(_is_bool(p, False) for p in parts):
                return FALSE
            kept = [p for p in parts if not _is_bool(p, True)]
            if len(kept) != len(parts):
                return and_(kept) or TRUE
            return _fold(e) if all(isinstance(p, Literal) for p in parts) else None  # NULL AND NULL
        if e.fn == "or":
            parts = disjuncts(e)
            if any(_is_bool(p, True) for p in parts):
                return TRUE
            kept = [p for p in parts if not _is_bool(p, False)]
            if not kept:
                return FALSE
            factored = _factor_or(kept)
            if factored is not None:
                return factored
            if len(kept) != len(parts):
                return or_(kept)
            return _fold(e) if all(isinstance(p, Literal) for p in parts) else None
        if e.fn == "not" and isinstance(e.args[0], Call) and e.args[0].fn == "not":
            return e.args[0].args[0]
    if isinstance(e, Case):
        pruned = _prune_case(e)
        if pruned is not None:
            return pruned
    if isinstance(e, (Call, Cast, Case, InList)) and not isinstance(e, AggCall):
        if isinstance(e, Call) and e.fn in _NOT_FOLDABLE:
            return None
        kids = e.children()
        if all(isinstance(k, Literal) for k in kids):
            return _fold(e)
        if isinstance(e, Call) and e.fn in _COMPARE:
            return _unwrap_cast(e)
        if isinstance(e, InList):
            return _unwrap_cast_in_list(e)
    return None


_COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}


def _real_literal(e: Literal) -> Literal | None:
    """A REAL literal holding a value a REAL cannot (a constant cast to REAL by the builder,
    16777217 for `f4 + 16777217`) with the float32 value the kernels compute with (16777216,
    as DuckDB casts the integer to REAL first), so what the optimizer and EXPLAIN read is
    what execution and constant folding (`_fold`, through the kernels, rounding each REAL
    result to float32) see. A finite value past REAL's range is left to the kernels'
    range check."""
    v = e.value
    if not (pa.types.is_float32(e.dtype) and isinstance(v, float)) or v != v:
        return None
    real = pa.scalar(v, pa.float64()).cast(pa.float32(), safe=False).as_py()
    if real == v or real in (float("inf"), float("-inf")):
        return None
    return Literal(real, e.dtype)


def _prune_case(e: Case) -> Expr | None:
    """CASE branches whose condition is a constant: a FALSE or NULL one is never taken, the
    first TRUE one always (nothing after it is). What no row can take is then never computed:
    an aggregate only an untaken branch used is not computed at all (DuckDB folds the same
    way; PostgreSQL computes every aggregate of a HAVING clause)."""
    whens: list[tuple[Expr, Expr]] = []
    for w, t in e.whens:
        if isinstance(w, Literal):
            if w.value is True:
                if not whens:
                    return _typed(t, e.dtype)
                return Case(tuple(whens), _typed(t, e.dtype), e.dtype)
            continue  # FALSE or NULL: never taken
        whens.append((w, t))
    if len(whens) == len(e.whens):
        return None
    if not whens:
        return _typed(e.else_, e.dtype)
    return Case(tuple(whens), e.else_, e.dtype)


def _typed(e: Expr, dtype) -> Expr:
    return e if e.dtype == dtype else B.cast(e, dtype)


def _widening(c: Cast) -> bool:
    """CAST(x AS t) that keeps every value of x exactly (and so its order)."""
    src, dst = c.arg.dtype, c.dtype
    if T.is_integer(src) and T.is_integer(dst):
        return T.common_type(src, dst) == dst
    if T.is_decimal(dst) and (T.is_integer(src) or T.is_decimal(src)):
        s = T.as_decimal(src)
        return dst.scale >= s.scale and dst.precision - dst.scale >= s.precision - s.scale
    return False


def _unwrap_cast(e: Call) -> Expr | None:
    """CAST(col AS wider) <op> literal -> col <op> literal-in-col's-type, when exact: the
    column is compared as it is (no per-row cast, and scans can use statistics)."""
    a, b = e.args
    for x, y, flip in ((a, b, False), (b, a, True)):
        if isinstance(x, Cast) and not x.try_ and isinstance(y, Literal) and _widening(x):
            lit = B.literal_as(y, x.arg.dtype)
            if lit is None:
                continue
            args = (lit, x.arg) if flip else (x.arg, lit)
            return Call(e.fn, args, e.dtype, e.is_nullable)
    return None


def _unwrap_cast_in_list(e: InList) -> Expr | None:
    x = e.arg
    if not (isinstance(x, Cast) and not x.try_ and _widening(x)) or not all(
            isinstance(v, Literal) for v in e.values):
        return None
    values = [B.literal_as(v, x.arg.dtype) if v.value is not None else Literal(None, x.arg.dtype)
              for v in e.values]
    if any(v is None for v in values):
        return None
    return InList(x.arg, tuple(values), e.negated)


def fold_constant(e: Expr) -> Literal | None:
    """`e` folded to a literal when it reads no column, no subquery, no aggregate and nothing
    volatile (`2 + 1`, `-1 * 5`, `CAST('3' AS INT)`), else None: for the places that need a
    constant (ntile's count, a lag offset, LIMIT). An error evaluating it (a cast that fails)
    is raised, as running it would; an overflow as a DataValueError."""
    from ..kernels.expressions import evaluate_constant

    if isinstance(e, Literal):
        return e
    for x in walk(e):
        if isinstance(x, (ColumnRef, SubqueryExpr, AggCall, WindowCall)):
            return None
    if is_volatile(e):
        return None
    try:
        return evaluate_constant(e)
    except Error:
        raise
    except pa.ArrowInvalid as err:  # (an overflow in a checked kernel)
        raise DataValueError(f"{e}: {str(err).splitlines()[0]}") from None
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        return None


def _fold(e: Expr) -> Expr | None:
    from ..kernels.expressions import evaluate_constant

    if T.is_null(e.dtype):
        return Literal(None, T.NULL)
    try:
        return evaluate_constant(e)
    except (Error, pa.ArrowException, ValueError, TypeError, OverflowError):
        return None  # leave it: evaluation reports the error with context at run time


def _factor_or(parts: list[Expr]) -> Expr | None:
    """(a AND b) OR (a AND c) -> a AND (b OR c), a not volatile: (random() < 0.5 AND x)
    OR (random() < 0.5 AND y) draws twice."""
    if len(parts) < 2:
        return None
    sets = [conjuncts(p) for p in parts]
    common = [c for c in sets[0] if all(c in s for s in sets[1:]) and not is_volatile(c)]
    if not common:
        return None
    rests = [and_([c for c in s if c not in common]) for s in sets]
    if any(r is None for r in rests):  # (nothing left, or only TRUE literals)
        return and_(common)  # one disjunct is just the common part: the OR is implied
    return and_([*common, or_(rests)])
