"""The shape a semi or anti join's condition must have to be answered from the other side's
extremes per key (see optimizer.semi_join_extremes, which rewrites the plan when the
preserved side is large, and execution's build-left semi join, which does it per partition
when the preserved side is small): beside the equality keys, terms over the preserved side
only and exactly one comparison `x OP y` of an expression x of the preserved side with an
expression y of the other side, of a type whose equality is exact and whose order MIN/MAX
share with the comparison, y unable to raise (it is computed for every row of the other
side, not only for the pairs), nothing volatile."""

from __future__ import annotations

from dataclasses import dataclass

from .. import types as T
from .expr import (Call, ColumnRef, Expr, Field, and_, column_ids, conjuncts, is_volatile,
                   may_raise, or_)

# the names under which a partition's extremes of y reach the condition of `per_partition`
# (kernels.join.matched_row_ids_by_extremes)
EXTREME_PREFIX = "__pqe_extreme_"
# x OP y over the left row x and the right rows' y holds for some y exactly when it holds
# for this extreme of them
EXTREME = {"lt": "max", "le": "max", "gt": "min", "ge": "min"}
FLIP = {"ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def exact(t) -> bool:
    """Equality is exact and MIN/MAX order as comparisons do (not floats: -0.0 = 0.0 and
    NaN order differ between grouping and comparing)."""
    return (T.is_integer(t) or T.is_decimal(t) or T.is_text(t) or T.is_temporal(t)
            or T.is_boolean(t))


@dataclass(frozen=True)
class Extremes:
    x: Expr  # over the preserved side
    op: str  # x OP y
    y: Expr  # over the other side
    left_only: tuple[Expr, ...]  # the condition's other terms, over the preserved side

    @property
    def fns(self) -> tuple[str, ...]:
        """The extremes of y that decide x OP y for some y."""
        return ("min", "max") if self.op == "ne" else (EXTREME[self.op],)


def extremes_shape(condition: Expr | None, left_ids: set[str],
                   right_ids: set[str]) -> Extremes | None:
    """`condition` (a semi/anti join's, beside its keys) as an Extremes, or None."""
    if condition is None:
        return None
    cross: list[Expr] = []
    left_only: list[Expr] = []
    for term in conjuncts(condition):
        (left_only if column_ids(term) <= left_ids else cross).append(term)
    if len(cross) != 1:
        return None
    term = cross[0]
    if not (isinstance(term, Call) and term.fn in FLIP and len(term.args) == 2):
        return None
    a, b = term.args
    if column_ids(a) <= left_ids and column_ids(b) and column_ids(b) <= right_ids:
        x, y, op = a, b, term.fn
    elif column_ids(b) <= left_ids and column_ids(a) and column_ids(a) <= right_ids:
        x, y, op = b, a, FLIP[term.fn]
    else:
        return None
    if not exact(y.dtype) or x.dtype != y.dtype:
        return None
    if may_raise(y) or is_volatile(y) or is_volatile(x):
        return None
    return Extremes(x, op, y, tuple(left_only))


def per_partition(condition: Expr | None, left: tuple[Field, ...], right: tuple[Field, ...],
                  left_keys, right_keys) -> tuple[Expr, tuple[str, ...], Expr] | None:
    """For a semi or anti join with keys `left_keys` = `right_keys` (column ids of the
    `left` and `right` schemas) whose left side is hashed and met by each partition of the
    right side: the right side's compared expression y, the extremes of it to take per key,
    and the condition over the left's columns and those extremes (EXTREME_PREFIX + fn),
    when `condition` has the shape; else None."""
    if condition is None or is_volatile(condition):
        return None
    types = {f.id: f.dtype for f in (*left, *right)}
    if not all(exact(types[a]) and types[a] == types[b]
               for a, b in zip(left_keys, right_keys, strict=True)):
        return None
    shape = extremes_shape(condition, {f.id for f in left}, {f.id for f in right})
    if shape is None:
        return None
    from . import builder as B

    compared = or_(B.compare(shape.op, shape.x, ColumnRef(Field(EXTREME_PREFIX + fn, fn,
                                                                 shape.y.dtype)))
                   for fn in shape.fns)
    return shape.y, shape.fns, and_([*shape.left_only, compared])


__all__ = ["EXTREME", "EXTREME_PREFIX", "FLIP", "Extremes", "exact", "extremes_shape",
           "per_partition"]
