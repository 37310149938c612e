"""Rule: aggregate one input of an inner join before the join (eager aggregation).

`SELECT i.brand, sum(s.qty) FROM sales s JOIN item i ON s.item = i.id GROUP BY i.brand` needs
from each sales row only its `item` and its `qty`: summing `qty` per `item` first leaves one row
per item, and the join then copies the item's text columns onto those few rows instead of onto
every sale (TPC-DS Q22: 2.3M inventory rows become 18,000 per partition before the item join).
This is eager aggregation (Yan and Larson, "Eager Aggregation and Lazy Aggregation", VLDB 1995):

    Aggregate(G; f(x))                        Aggregate(G; F(p))
      Join(X, R, on k)              ->          Join(Aggregate[local](k, cols of G in X; p = f(x)), R)

where every aggregate argument is a column of X, f is SUM, COUNT, MIN, MAX or AVG (as SUM and
COUNT), and F combines the partial values (SUM of SUMs and of COUNTs, MIN of MINs). It holds for
any inner join, unique key or not: a partial row stands for rows of X that agree on everything
the join and the grouping read, so the join matches it exactly as often as it matched each of
them. The pushed aggregate is `local`: each partition may aggregate its own rows (no exchange),
since the aggregate above combines whatever it gets.

An outer join's NULL-supplying side X (the right of a LEFT JOIN) may be aggregated so too
(TPC-H Q13: `customer LEFT JOIN orders ... GROUP BY c_custkey` counting orders): a preserved
row without a match meets one row of NULL partials, which SUM, MIN, MAX and AVG skip as they
skipped its NULL columns, and a COUNT's combined NULL is 0. Only arguments that are a column of
that side (or its cast), NULL on such a row: not COUNT(*) or COUNT(1) (that row counts 1),
SUM(coalesce(x, 0)) or the CASE forms below.

Applied only when the estimates promise a reduction (X's rows at least `MIN_REDUCTION` times
the distinct combinations of the columns kept, each with a known distinct count) and the join
is not selective (it keeps at least 1/`MAX_JOIN_REDUCTION` of X's rows: probing a small build with
every row of X costs less than aggregating X first, TPC-DS Q82), so it never adds a pass that
does not shrink the work of the join.
"""

from __future__ import annotations

from .. import types as T
from ..plan import builder as B
from ..plan.expr import (AggCall, Case, Cast, ColumnRef, Literal, column_ids, column_ids_all,
                         is_volatile, replace_columns)
from ..plan.logical import Aggregate, Join, LogicalPlan, Project, one_row_aggregate, transform_up
from ..plan.stats import Estimator

# the pushed aggregate must leave at most 1/MIN_REDUCTION of its input's rows (2: TPC-DS Q4's
# catalog sales, 285k rows for 100k customers, 0.62 -> 0.54 s; 4 left them to the join)
MIN_REDUCTION = 2.0
# a join that keeps less than 1/MAX_JOIN_REDUCTION of X's rows is cheaper to probe first
MAX_JOIN_REDUCTION = 4.0
# below this many input rows the saving cannot pay for a second aggregation pass
MIN_ROWS = 50_000
_COMBINABLE = frozenset({"sum", "count", "count_star", "min", "max", "avg"})
# an outer join's side whose columns come back NULL for a preserved row without a match: the
# one side such a join may aggregate first
_NULL_SIDE = {"left": "right", "right": "left"}


def eager_aggregate(plan: LogicalPlan) -> LogicalPlan:
    est = Estimator.shared()
    return transform_up(plan, lambda node: _rule(node, est))


def _rule(node: LogicalPlan, est: Estimator) -> LogicalPlan | None:
    if not isinstance(node, Aggregate) or node.local:
        return None
    inlined = _over_join(node)
    if inlined is None:
        return None
    join, group, aggs = inlined
    if join.kind == "inner" and not join.null_aware and not join.on and join.filter is None:
        return _over_one_row(node, join, group, aggs)
    outer = _NULL_SIDE.get(join.kind)
    if (join.kind != "inner" and outer is None) or join.null_aware or not join.on:
        return None
    for a in aggs:
        if a.fn not in _COMBINABLE or a.distinct or a.order_by or a.udf is not None \
                or not B.avg_rebuildable(a):
            return None
        if a.fn in ("sum", "avg") and not (T.is_numeric(a.args[0].dtype)
                                           or T.is_boolean(a.args[0].dtype)):
            return None
        if outer is not None and not _null_with_its_side(a):
            return None  # a preserved row without a match counts 1, its partial nothing
    side, forms = _side(join, aggs, est)
    if side is None:
        return None
    if outer is not None and (side != outer or any(f is not None for f in forms)):
        return None  # only the side that may come back NULL, each argument read from it
    x = getattr(join, side)
    if isinstance(x, Aggregate):
        return None  # already aggregated: nothing left to gain
    keep = _kept_columns(join, side, group)
    if not keep:
        return None
    rows = est.rows(x)
    if rows < MIN_ROWS:
        return None
    groups = 1.0
    for f in keep:
        ndv = est.column(x, ColumnRef(f)).ndv
        if not ndv:
            return None  # no evidence that grouping shrinks anything
        groups *= ndv
    if groups * MIN_REDUCTION > rows:
        return None
    if est.rows(join) * MAX_JOIN_REDUCTION < rows:
        return None  # a selective join: probing X costs less than aggregating it first
    return _rewrite(node, join, side, x, keep, group, aggs, forms)


def _null_with_its_side(a: AggCall) -> bool:
    """Whether the aggregate's argument is NULL on a joined row whose NULL-supplying side is
    all NULL, so that such a row adds nothing: a column (or a cast of one). Not COUNT(*),
    COUNT(1), SUM(coalesce(x, 0)), CASE WHEN x IS NULL ...: an unmatched row counts there,
    and its one row of NULL partials would not."""
    if not a.args:
        return False
    arg = a.args[0]
    while isinstance(arg, Cast):
        arg = arg.arg
    return isinstance(arg, ColumnRef)


def _over_join(node: Aggregate):
    """(join, group, aggs) for an aggregate directly over an inner join, or over a projection
    of one (its expressions substituted into the aggregate's), else None."""
    child = node.input
    if isinstance(child, Join):
        return child, node.group, node.aggs
    if isinstance(child, Project) and isinstance(child.input, Join):
        used = column_ids_all(node.group + node.aggs)
        mapping = {f.id: e for e, f in zip(child.exprs, child.fields, strict=True)
                   if f.id in used}
        for e in mapping.values():
            if is_volatile(e):
                return None  # one evaluation per row must stay one
        group = tuple(replace_columns(g, mapping) for g in node.group)
        aggs = tuple(replace_columns(a, mapping) for a in node.aggs)
        return child.input, group, aggs
    return None


def _side(join: Join, aggs, est: Estimator):
    """(the side to aggregate, each aggregate's form) or (None, None). An aggregate's form is
    None when its argument reads only that side, or the branches of its CASE argument when
    the conditions read only the other side and the results only this one: `SUM(CASE WHEN
    d.day = 'Sunday' THEN s.price END)` is, per joined row, the CASE over the partial SUM of
    `s.price` (TPC-DS Q2, Q43, Q59), since every row of a partial group meets the same rows
    of the other side."""
    lids, rids = set(join.left.column_ids), set(join.right.column_ids)
    for side, mine, other in (("left", lids, rids), ("right", rids, lids)):
        forms = [_form(a, mine, other) for a in aggs]
        if all(f is not False for f in forms) and (
                any(f is not None for f in forms) or column_ids_all(aggs)):
            return side, forms
    if not column_ids_all(aggs):  # COUNT(*) only: shrink the bigger input
        side = "left" if est.rows(join.left) >= est.rows(join.right) else "right"
        return side, [None] * len(aggs)
    return None, None


def _form(a: AggCall, mine: set, other: set):
    """None (the argument reads only `mine`), the CASE branches [(condition or None for
    ELSE, result or None for NULL)], or False (not decomposable on this side)."""
    if column_ids_all([a]) <= mine:  # COUNT(*) reads nothing: it fits either side
        return None
    arg = a.args[0] if a.args else None
    if not (isinstance(arg, Case) and a.filter is None and a.fn in ("sum", "count", "min", "max")):
        return False
    branches = [(w, t) for w, t in arg.whens] + [(None, arg.else_)]
    out = []
    for cond, result in branches:
        if cond is not None and not column_ids(cond) <= other:
            return False
        if isinstance(result, Literal) and result.value is None:
            out.append((cond, None))
        elif column_ids(result) <= mine:
            out.append((cond, result))
        else:
            return False
    if all(r is None for _, r in out):
        return False
    return out


def _kept_columns(join: Join, side: str, group) -> list:
    """X's columns that the join or the grouping read: the partial aggregate's group keys."""
    x = getattr(join, side)
    xids = set(x.column_ids)
    keys = [a if side == "left" else b for a, b in join.on]
    want = column_ids_all(keys) | column_ids_all(group)
    if join.filter is not None:
        want |= column_ids(join.filter)
    return [f for f in x.schema if f.id in want & xids]


def _rewrite(node: Aggregate, join: Join, side: str, x: LogicalPlan, keep, group, aggs,
             forms):
    partial: list[AggCall] = []

    def slot(p: AggCall) -> int:
        if p not in partial:
            partial.append(p)
        return partial.index(p)

    plans = []  # per aggregate: ("plain", [partial slots]) or ("case", [(cond, slot)])
    for a, form in zip(aggs, forms, strict=True):
        if form is None:
            parts = ([B.aggregate_call("sum", [a.args[0]], filter=a.filter),
                      B.aggregate_call("count", [a.args[0]], filter=a.filter)]
                     if a.fn == "avg" else [a])
            plans.append(("plain", [slot(p) for p in parts]))
        else:
            plans.append(("case", [(cond, None if r is None else slot(
                B.aggregate_call(a.fn, [r]))) for cond, r in form]))
    pfields = tuple(B.new_field("partial", p.dtype, p.nullable) for p in partial)
    # the group keys keep their column ids: the join's keys and the grouping still read them
    pushed = Aggregate(x, tuple(ColumnRef(f) for f in keep), tuple(keep), tuple(partial),
                       pfields, local=True)
    joined = (Join(pushed, join.right, join.kind, join.on, join.filter) if side == "left"
              else Join(join.left, pushed, join.kind, join.on, join.filter))

    combine: list[AggCall] = []
    shapes = []  # per aggregate: the indexes of its combined columns
    for a, (kind, info) in zip(aggs, plans, strict=True):
        if kind == "plain":
            shapes.append([len(combine) + k for k in range(len(info))])
            combine += [B.aggregate_call(B.combining_fn(partial[i].fn), [ColumnRef(pfields[i])])
                        for i in info]
            continue
        dtype = next(pfields[i].dtype for _, i in info if i is not None)
        if any(i is not None and pfields[i].dtype != dtype for _, i in info):
            return None
        refs = [(c, ColumnRef(pfields[i]) if i is not None else Literal(None, dtype))
                for c, i in info]
        # the CASE, evaluated per joined row, picks the partial of the branch that row takes
        arg = Case(tuple((c, r) for c, r in refs[:-1]), refs[-1][1], dtype)
        shapes.append([len(combine)])
        combine.append(B.aggregate_call(B.combining_fn(a.fn), [arg]))
    cfields = tuple(B.new_field("combined", c.dtype, c.nullable) for c in combine)
    top = Aggregate(joined, group, node.group_fields, tuple(combine), cfields)
    state = [ColumnRef(f) for f in cfields]
    values = [B.combined_value(a.fn, a.dtype, [state[i] for i in pos])
              for a, pos in zip(aggs, shapes, strict=True)]
    exprs = tuple(ColumnRef(f) for f in node.group_fields) + tuple(values)
    return Project(top, exprs, node.schema)


def _over_one_row(node: Aggregate, join: Join, group, aggs) -> LogicalPlan | None:
    """GROUP BY over a product with one row (`FROM sales, customer, (SELECT max(x) m FROM
    ...) WHERE ... GROUP BY c_customer_sk HAVING sum(v) > 0.5 * max(m)`, TPC-DS Q23): the
    other side aggregated first, then paired with the row. A MIN or MAX of the row's column
    is that column in every group (a group has at least one row, each paired with it).
    Only with GROUP BY: without it an empty input still gives one row, whose MAX is NULL."""
    if not group:
        return None
    for side, other in (("left", "right"), ("right", "left")):
        one = getattr(join, other)
        if one_row_aggregate(one) is None:
            continue
        x = getattr(join, side)
        xids, oids = set(x.column_ids), set(one.column_ids)
        if not column_ids_all(group) <= xids:
            continue
        pushed, pfields, values = [], [], []
        for a, f in zip(aggs, node.agg_fields, strict=True):
            used = column_ids_all([a])
            if used <= xids:
                pushed.append(a)
                pfields.append(f)
                values.append(ColumnRef(f))
            elif (used <= oids and a.fn in ("min", "max") and a.filter is None
                  and len(a.args) == 1 and a.args[0].dtype == a.dtype):
                values.append(a.args[0])
            else:
                break
        else:
            if len(pushed) == len(aggs):
                return None  # nothing reads the row: the usual rules apply
            below = Aggregate(x, group, node.group_fields, tuple(pushed), tuple(pfields))
            paired = Join(below, one, "inner") if side == "left" else Join(one, below, "inner")
            exprs = tuple(ColumnRef(f) for f in node.group_fields) + tuple(values)
            return Project(paired, exprs, node.schema)
    return None
