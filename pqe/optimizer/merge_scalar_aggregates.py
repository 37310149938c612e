"""Rule: aggregates without GROUP BY over the same table, side by side, read it once.

`SELECT (SELECT count(*) FROM t WHERE q BETWEEN 1 AND 20), (SELECT avg(x) FROM t WHERE q
BETWEEN 1 AND 20), (SELECT avg(x) FROM t WHERE q BETWEEN 21 AND 40), ...` reads t once per
subquery (TPC-DS Q9: 15 scans of store_sales; Q28: 6). Each subquery is an aggregate without
GROUP BY, so exactly one row, and the joins that put them side by side (cross joins, or the
condition-less LEFT joins scalar subqueries decorrelate into) are products of one-row inputs.
Aggregates over the same table merge into one in which every call keeps its own rows with a
FILTER clause:

    Aggregate(f(x)) over Filter(p, Scan t)  x  Aggregate(g(y)) over Filter(q, Scan t)
      ->  Aggregate(f(x) FILTER (WHERE p), g(y) FILTER (WHERE q)) over Filter(p OR q, Scan t)

An aggregate over no rows is still one row, and FILTER keeps exactly the rows WHERE kept, so
every value is the same (Spark's MergeScalarSubqueries does this for TPC-DS Q9).

Not merged: an aggregate whose filters or arguments may raise (`plan.expr.may_raise`: they
would now also be computed for the other aggregates' rows), or that reads a volatile function,
orders its values, or is user-defined.
"""

from __future__ import annotations

from dataclasses import replace

from ..plan.expr import (ColumnRef, Expr, and_, has_subquery, is_volatile, may_raise, or_,
                         replace_columns)
from ..plan.logical import (Aggregate, Filter, Join, LogicalPlan, Project, Scan,
                            one_row_aggregate, with_kids)
from .simplify import simplify_expr


def merge_scalar_aggregates(plan: LogicalPlan) -> LogicalPlan:
    return _visit(plan)


def _visit(plan: LogicalPlan) -> LogicalPlan:
    if _crossing(plan):
        leaves: list[LogicalPlan] = []
        _flatten(plan, leaves)
        leaves = [_visit(leaf) for leaf in leaves]
        merged = _merge(leaves)
        if merged is None:
            return _rebuild_kids(plan)
        out = merged[0]
        for leaf in merged[1:]:
            out = Join(out, leaf, "inner")
        return Project(out, tuple(ColumnRef(f) for f in plan.schema), plan.schema)
    return _rebuild_kids(plan)


def _rebuild_kids(plan: LogicalPlan) -> LogicalPlan:
    kids = plan.children()
    if not kids:
        return plan
    return with_kids(plan, tuple(_visit(k) for k in kids))


def _crossing(plan: LogicalPlan) -> bool:
    """A join that pairs every row of one side with every row of the other: no condition,
    inner, or LEFT with a one-row right side (a LEFT join to exactly one row is a product)."""
    return (isinstance(plan, Join) and not plan.on and plan.filter is None
            and not plan.null_aware
            and (plan.kind == "inner" or plan.kind == "left" and _one_row(plan.right) is not None))


def _flatten(plan: LogicalPlan, leaves: list[LogicalPlan]) -> None:
    stack = [plan]
    while stack:
        p = stack.pop()
        if _crossing(p):
            stack.extend((p.right, p.left))  # left first: leaves stay in column order
        else:
            leaves.append(p)


def _one_row(plan: LogicalPlan) -> tuple[Project | None, Aggregate] | None:
    """(the projections over it as one, or None; the aggregate) for an aggregate without
    GROUP BY, optionally under projections (a derived table's select list and its alias):
    exactly one row."""
    agg = one_row_aggregate(plan)
    if agg is None:
        return None
    projs = []
    while isinstance(plan, Project):
        projs.append(plan)
        plan = plan.input
    if not projs:
        return None, agg
    exprs = projs[-1].exprs
    for outer, inner in zip(reversed(projs[:-1]), reversed(projs[1:]), strict=True):
        mapping = {f.id: e for f, e in zip(inner.fields, exprs, strict=True)}
        exprs = tuple(replace_columns(e, mapping) for e in outer.exprs)
    return Project(plan, exprs, projs[0].fields), plan


class _Leaf:
    """A one-row aggregate over filters of a scan, in the terms of its own scan's ids."""

    def __init__(self, proj: Project | None, agg: Aggregate, scan: Scan, preds: list[Expr]):
        self.proj, self.agg, self.scan, self.preds = proj, agg, scan, preds

    def output_ids(self) -> set[str]:
        fields = self.proj.fields if self.proj is not None else ()
        return {f.id for f in (*self.agg.agg_fields, *fields)}

    def key(self):
        s = self.scan
        return (id(s.provider), s.table, s.projection, s.nested,
                tuple((f.name, f.dtype) for f in s.fields))


def _leaf(plan: LogicalPlan) -> _Leaf | None:
    shape = _one_row(plan)
    if shape is None:
        return None
    proj, agg = shape
    preds: list[Expr] = []
    node = agg.input
    while isinstance(node, Filter):
        preds.append(node.predicate)
        node = node.input
    if not isinstance(node, Scan):
        return None
    preds = [simplify_expr(p) for p in (*node.filters, *preds)]
    for a in agg.aggs:
        if a.order_by or a.udf is not None:
            return None
    exprs = [*preds, *agg.aggs]
    if any(may_raise(e) for e in exprs):
        return None
    if any(has_subquery(e) for e in exprs):
        return None
    if any(is_volatile(e) for e in exprs):
        return None
    return _Leaf(proj, agg, node, preds)


def _merge(leaves: list[LogicalPlan]) -> list[LogicalPlan] | None:
    """The leaves with every group of mergeable aggregates over one table replaced by one
    aggregate (in the place of the group's first), or None when nothing merges."""
    found = [_leaf(p) for p in leaves]
    groups: dict[tuple, list[int]] = {}
    taken: dict[tuple, set[str]] = {}
    for i, leaf in enumerate(found):
        if leaf is None:
            continue
        ids = leaf.output_ids()
        seen = taken.setdefault(leaf.key(), set())
        if ids & seen:  # the same subquery twice (a CTE read twice): its ids would repeat
            continue
        seen |= ids
        groups.setdefault(leaf.key(), []).append(i)
    groups = {k: v for k, v in groups.items() if len(v) > 1}
    if not groups:
        return None
    out: list[LogicalPlan] = []
    merged_into: dict[int, LogicalPlan | None] = {}
    for idx in groups.values():
        merged_into[idx[0]] = _merged([found[i] for i in idx])
        for i in idx[1:]:
            merged_into[i] = None
    for i, leaf in enumerate(leaves):
        if i not in merged_into:
            out.append(leaf)
        elif merged_into[i] is not None:
            out.append(merged_into[i])
    return out


def _merged(leaves: list[_Leaf]) -> LogicalPlan:
    base = leaves[0].scan
    scan = replace(base, filters=())
    conds: list[Expr | None] = []
    aggs = []
    agg_fields = []
    exprs: list[Expr] = []
    fields = []
    for leaf in leaves:
        mapping = {f.id: ColumnRef(g) for f, g in zip(leaf.scan.fields, base.fields, strict=True)
                   if f.id != g.id}
        cond = and_(replace_columns(p, mapping) for p in leaf.preds)
        conds.append(cond)
        for a, f in zip(leaf.agg.aggs, leaf.agg.agg_fields, strict=True):
            a = replace_columns(a, mapping)
            keep = and_(x for x in (cond, a.filter) if x is not None)
            aggs.append(replace(a, filter=keep))
            agg_fields.append(f)
        if leaf.proj is not None:
            exprs += leaf.proj.exprs
            fields += leaf.proj.fields
        else:
            exprs += [ColumnRef(f) for f in leaf.agg.agg_fields]
            fields += leaf.agg.agg_fields
    source: LogicalPlan = scan
    if all(c is not None for c in conds):
        source = Filter(scan, or_(conds))
    agg = Aggregate(source, (), (), tuple(aggs), tuple(agg_fields))
    return Project(agg, tuple(exprs), tuple(fields))
