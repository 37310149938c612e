"""Rule: push predicates as close to the data as they can go.

Filters move through projections (rewritten in terms of the projection's input), into the
inputs of joins they concern (for inner joins a predicate spanning both sides becomes part of
the join condition), below aggregates when they only test group keys, into each UNION input,
and finally into scans (`Scan.filters`), where pyarrow.dataset prunes row groups by statistics.

ON-clause predicates of outer joins move only into the null-supplying side. A WHERE predicate
that no NULL-extended row can pass (`sr_reason_sk = r_reason_sk` above `store_sales LEFT JOIN
store_returns`, TPC-DS Q93) makes the outer join an inner one first, so the predicate and the
join can move like any other inner join's. A WHERE `b.k IS NULL` over `a LEFT JOIN b` whose
condition is never true for a NULL b.k keeps exactly a's unmatched rows: that is an anti join
(`_outer_to_anti`), which does not build the NULL-extended rows only to filter them. A disjunction
spanning several inputs of a join also yields, for each input it constrains in every branch,
a derived filter pushed to that input (the original stays at the join): for TPC-H Q7 and Q19
this prunes most of the scanned rows.

A predicate on one join key column that every row of one input satisfies (a WHERE or ON
predicate pushed into it, or a filter already inside it: `_implied`) also holds for the rows of
the other input that can match, so it is transferred across the key equality to the other
input: into both inputs of an inner join, from the preserved side of a left/right, semi or anti
join into the other side (the other side's rows it removes match no preserved row that is kept).
For TPC-DS Q78 `ss_sold_year = 2000` reaches the web and catalog aggregates LEFT JOINed on the
year, which then read one year of sales instead of all of them.
"""

from __future__ import annotations

import pyarrow as pa

from ..plan.expr import (Call, Cast, ColumnRef, Expr, InList, Literal, and_, column_ids,
                         conjuncts, disjuncts, has_user_call, is_volatile, or_, replace_columns,
                         unique, walk)
from ..plan.logical import (Aggregate, Filter, Join, Limit, LogicalPlan, Project, Scan,
                            SingleRow, Sort, Union, Values, Window, with_kids)


def push_down_filter(plan: LogicalPlan) -> LogicalPlan:
    return _push(plan, [])


def _ids(plan: LogicalPlan) -> set[str]:
    return set(plan.column_ids)


def _wrap(plan: LogicalPlan, preds: list[Expr]) -> LogicalPlan:
    pred = and_(preds)
    return Filter(plan, pred) if pred is not None else plan


def _add(preds: list[Expr], new: list[Expr]) -> list[Expr]:
    """`preds` then the `new` ones not already there (by hash: 3,000 ANDed terms stay
    linear)."""
    return unique(list(preds) + list(new))


def _push(plan: LogicalPlan, preds: list[Expr]) -> LogicalPlan:
    if isinstance(plan, Filter):
        out = _push(plan.input, _add(preds, conjuncts(plan.predicate)))
        # a filter that stays where it is (over an outer join it cannot enter) is rebuilt
        # by _wrap: the same one, hand it back
        return plan if not preds and out == plan else out
    if isinstance(plan, Scan):
        # a user function's predicate stays above the scan: run by pqe's tasks, where its
        # errors name the partition, never by the file scanner or row-group pruning
        held = [p for p in preds if has_user_call(p)]
        filters = _add(list(plan.filters), [p for p in preds if not has_user_call(p)])
        if len(filters) != len(plan.filters):
            plan = Scan(plan.table, plan.provider, plan.fields, plan.projection, tuple(filters))
        return _wrap(plan, held)
    if isinstance(plan, Project):
        mapping = {f.id: e for f, e in zip(plan.fields, plan.exprs, strict=True)}
        # a predicate on a volatile column (random(), a user function) stays above: pushed
        # down it would call the function again, and test another value than the row holds
        volatile = {i for i, e in mapping.items() if is_volatile(e)}
        down, keep = [], []
        for p in preds:
            (keep if column_ids(p) & volatile else down).append(p)
        down = [replace_columns(p, mapping) for p in down]
        return _wrap(with_kids(plan, (_push(plan.input, down),)), keep)
    if isinstance(plan, Join):
        return _push_join(plan, preds)
    if isinstance(plan, Aggregate):
        mapping = {f.id: e for f, e in zip(plan.group_fields, plan.group, strict=True)}
        down, keep = [], []
        volatile = {i for i, e in mapping.items() if is_volatile(e)}
        for p in preds:
            if column_ids(p) and column_ids(p) <= set(mapping) and not column_ids(p) & volatile \
                    and _alike_on_equal_keys(p):
                down.append(replace_columns(p, mapping))
            else:
                keep.append(p)
        return _wrap(with_kids(plan, (_push(plan.input, down),)), keep)
    if isinstance(plan, Window):
        # a predicate on columns every call partitions by removes whole window partitions
        common = None
        for c in plan.calls:
            ids = {p.id for p in c.partition_by if isinstance(p, ColumnRef)}
            common = ids if common is None else common & ids
        down = [p for p in preds if column_ids(p) and column_ids(p) <= (common or set())
                and _alike_on_equal_keys(p)]
        keep = [p for p in preds if p not in down]
        return _wrap(with_kids(plan, (_push(plan.input, down),)), keep)
    if isinstance(plan, Sort) and plan.fetch is None:
        return with_kids(plan, (_push(plan.input, preds),))
    if isinstance(plan, Union):
        inputs = []
        for child in plan.inputs:
            mapping = {f.id: ColumnRef(c) for f, c in zip(plan.fields, child.schema, strict=True)}
            inputs.append(_push(child, [replace_columns(p, mapping) for p in preds]))
        return with_kids(plan, tuple(inputs))
    # barriers: Limit, top-N Sort, SingleRow, Values (and anything else)
    if isinstance(plan, (Limit, Sort, SingleRow, Values)) or plan.children():
        kids = tuple(_push(k, []) for k in plan.children())
        return _wrap(with_kids(plan, kids), preds)
    return _wrap(plan, preds)


def _split(preds: list[Expr], left: set[str], right: set[str]):
    lo, ro, both, none = [], [], [], []
    for p in preds:
        ids = column_ids(p)
        if not ids:
            none.append(p)
        elif ids <= left:
            lo.append(p)
        elif ids <= right:
            ro.append(p)
        else:
            both.append(p)
    return lo, ro, both, none


def _derived(preds: list[Expr], side: set[str]) -> list[Expr]:
    """From each disjunction that is not local to `side`, the implied filter on `side`:
    OR over branches of (AND of the branch's conjuncts local to `side`)."""
    out = []
    for p in preds:
        branches = disjuncts(p)
        if len(branches) < 2:
            continue
        parts = []
        for b in branches:
            local = [c for c in conjuncts(b) if column_ids(c) and column_ids(c) <= side]
            if not local:
                parts = None
                break
            parts.append(and_(local))
        if parts:
            out.append(or_(parts))
    return out


_STRICT = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


def _plain_column(e: Expr) -> str | None:
    while isinstance(e, Cast) and not e.try_:
        e = e.arg
    return e.id if isinstance(e, ColumnRef) else None


def _null_rejected(preds: list[Expr], on=()) -> set[str]:
    """Columns whose NULL makes one of `preds` (or an equi-join key pair of `on`) not true: a
    comparison (or IS NOT NULL) with the column, possibly cast, as an operand. Conservative:
    other shapes reject nothing."""
    out: set[str] = set()
    for p in preds:
        if isinstance(p, Call) and (p.fn in _STRICT or p.fn == "is_not_null"):
            out.update(c for a in p.args if (c := _plain_column(a)) is not None)
    for pair in on:
        out.update(c for a in pair if (c := _plain_column(a)) is not None)
    return out


def _outer_to_inner(plan: LogicalPlan, rejected: set[str]) -> LogicalPlan:
    """An outer join whose NULL-extended rows the predicates above reject (a rejected column of
    the null-supplying side) as the join it then is: LEFT becomes INNER, FULL becomes LEFT,
    RIGHT or INNER."""
    if not isinstance(plan, Join) or plan.null_aware or plan.kind not in ("left", "right", "full"):
        return plan
    right_gone = bool(rejected & _ids(plan.right))  # the left rows extended with NULLs
    left_gone = bool(rejected & _ids(plan.left))
    kind = plan.kind
    if kind == "left" and right_gone or kind == "right" and left_gone:
        kind = "inner"
    elif kind == "full":
        kind = ("inner" if left_gone and right_gone else "right" if right_gone
                else "left" if left_gone else kind)
    if kind == plan.kind:
        return plan
    return Join(plan.left, plan.right, kind, plan.on, plan.filter, plan.null_aware)


def _outer_to_anti(plan: Join, preds: list[Expr]) -> tuple[LogicalPlan, list[Expr]] | None:
    """`a LEFT JOIN b ON ... WHERE b.k IS NULL`, where the join condition is never true for a
    NULL b.k (`a.k = b.k`), keeps exactly the left rows that match no right row: the anti join
    on the same condition, with b's columns as NULLs (a projection the rest of the plan reads
    them from). The anti join does not build the NULL-extended rows to filter them again.
    RIGHT joins likewise, sides swapped. (plan, the predicates left to push) or None."""
    if plan.kind not in ("left", "right") or plan.null_aware:
        return None
    kept, gone = (plan.left, plan.right) if plan.kind == "left" else (plan.right, plan.left)
    never_null = _null_rejected(conjuncts(plan.filter), plan.on) & _ids(gone)
    tests = [p for p in preds if isinstance(p, Call) and p.fn == "is_null"
             and _plain_column(p.args[0]) in never_null]
    if not tests:
        return None
    on = plan.on if plan.kind == "left" else tuple((r, l) for l, r in plan.on)
    join = Join(kept, gone, "anti", on, plan.filter)
    kept_ids = _ids(kept)
    exprs = tuple(ColumnRef(f) if f.id in kept_ids else Literal(None, f.dtype)
                  for f in plan.schema)
    return Project(join, exprs, plan.schema), [p for p in preds if p not in tests]


# ---- transfer across join keys -----------------------------------------------------------

_COMPARE = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
_LOGIC = frozenset({"and", "or", "not"})
_TEXT_MATCH = frozenset({"like", "ilike", "starts_with", "ends_with", "contains"})


def _identity_type(t: pa.DataType) -> bool:
    """Types whose `=` holds only between identical values (not floats: -0.0 = 0.0), so any
    predicate has the same value on both sides of a key equality."""
    return (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_date(t) or pa.types.is_decimal(t) or pa.types.is_boolean(t)
            or pa.types.is_timestamp(t))


def _alike_on_equal_keys(p: Expr) -> bool:
    """Whether `p`, over group (or window partition) keys, has one value for all the key
    values a group holds, so it may run on the input rows instead of on the group: keys of
    `_identity_type`s, or a `_transferable` test (a comparison with literals treats -0.0 and
    0.0 alike, and INTERVAL '1 month' and '30 days'). `f::varchar = '-0.0'` or `extract(day
    FROM iv) = 30` below a GROUP BY f (or iv) made a group of the rows it kept: an answer
    holding a group the unfiltered query did not have (hunt "joins2")."""
    return all(_identity_type(c.dtype) for c in walk(p) if isinstance(c, ColumnRef)) \
        or _transferable(p)


def _operand(e: Expr) -> bool:
    """A literal, the column, or the column widened from an integer (a cast that cannot
    fail)."""
    if isinstance(e, (Literal, ColumnRef)):
        return True
    return (isinstance(e, Cast) and not e.try_ and isinstance(e.arg, ColumnRef)
            and pa.types.is_integer(e.arg.dtype)
            and (pa.types.is_int64(e.dtype) or pa.types.is_float64(e.dtype)))


def _transferable(p: Expr) -> bool:
    """Predicates that are copied onto another column: comparisons, IN lists, NULL tests and
    text matches of the column with literals, under AND / OR / NOT. Nothing that can raise
    an error (a cast, arithmetic) or is not a function of the value (random()): the copy is
    evaluated on rows the original never saw."""
    if isinstance(p, InList):
        return _operand(p.arg) and all(isinstance(v, Literal) for v in p.values)
    if not isinstance(p, Call):
        return False
    if p.fn in _LOGIC:
        return all(_transferable(a) for a in p.args)
    if p.fn in _COMPARE or p.fn in _TEXT_MATCH or p.fn in ("is_null", "is_not_null"):
        return all(_operand(a) for a in p.args)
    return False


def _implied(plan: LogicalPlan, depth: int = 0) -> list[Expr]:
    """Predicates on a single output column of `plan` that every output row satisfies: filters
    (a scan's pushed-in ones included) carried up through renaming projections, group keys
    and the preserved side of joins. Conservative: other shapes imply nothing."""
    if depth > 64:
        return []
    out_ids = _ids(plan)

    def single(ps) -> list[Expr]:
        return [p for p in ps if len(ids := column_ids(p)) == 1 and ids <= out_ids
                and _transferable(p)]

    if isinstance(plan, Scan):
        return single(plan.filters)
    if isinstance(plan, Filter):
        return unique(single(conjuncts(plan.predicate)) + _implied(plan.input, depth + 1))
    if isinstance(plan, (Sort, Limit, Window)):
        return [p for p in _implied(plan.children()[0], depth + 1) if column_ids(p) <= out_ids]
    if isinstance(plan, Project):
        back: dict[str, list[str]] = {}  # input column -> output columns that rename it
        for f, e in zip(plan.fields, plan.exprs, strict=True):
            if isinstance(e, ColumnRef):
                back.setdefault(e.id, []).append(f.id)
        return _renamed(_implied(plan.input, depth + 1), back, plan)
    if isinstance(plan, Aggregate):
        back = {}
        for f, e in zip(plan.group_fields, plan.group, strict=True):
            if isinstance(e, ColumnRef):
                back.setdefault(e.id, []).append(f.id)
        return _renamed(_implied(plan.input, depth + 1), back, plan)
    if isinstance(plan, Join):
        if plan.kind in ("inner", "semi", "anti") or plan.kind == "left":
            out = _implied(plan.left, depth + 1)
            if plan.kind == "inner":
                out = out + _implied(plan.right, depth + 1)
        elif plan.kind == "right":
            out = _implied(plan.right, depth + 1)
        else:
            return []
        return [p for p in out if column_ids(p) <= out_ids]
    return []


def _renamed(preds: list[Expr], back: dict[str, list[str]], plan: LogicalPlan) -> list[Expr]:
    fields = {f.id: f for f in plan.schema}
    out = []
    for p in preds:
        (cid,) = column_ids(p)
        for new in back.get(cid, ()):
            out.append(replace_columns(p, {cid: ColumnRef(fields[new])}))
    return out


def _key_pairs(plan: Join, conds: list[Expr], lids: set[str], rids: set[str]):
    """(left column, right column) pairs the join's rows are equal on (`=` on an identity
    type): its keys and the equalities between the sides among `conds`."""
    pairs = list(plan.on)
    for c in conds:
        if isinstance(c, Call) and c.fn == "eq":
            a, b = c.args
            if isinstance(a, ColumnRef) and isinstance(b, ColumnRef):
                if a.id in rids and b.id in lids:
                    a, b = b, a
                if a.id in lids and b.id in rids:
                    pairs.append((a, b))
    return [(a, b) for a, b in pairs
            if isinstance(a, ColumnRef) and isinstance(b, ColumnRef)
            and a.dtype == b.dtype and _identity_type(a.dtype)]


def _transfer(preds: list[Expr], pairs, forward: bool) -> list[Expr]:
    """`preds` (single-column, on one side) rewritten onto the other side's key columns."""
    mapping: dict[str, list[Expr]] = {}
    for a, b in pairs:
        src, dst = (a, b) if forward else (b, a)
        mapping.setdefault(src.id, []).append(dst)
    out = []
    for p in preds:
        ids = column_ids(p)
        if len(ids) != 1:
            continue
        (cid,) = ids
        for dst in mapping.get(cid, ()):
            out.append(replace_columns(p, {cid: dst}))
    return out


def _single(preds: list[Expr]) -> list[Expr]:
    return [p for p in preds if len(column_ids(p)) == 1 and _transferable(p)]


def _push_join(plan: Join, preds: list[Expr]) -> LogicalPlan:
    plan = _outer_to_inner(plan, _null_rejected(preds))
    anti = _outer_to_anti(plan, preds)
    if anti is not None:
        return _push(*anti)
    lids, rids = _ids(plan.left), _ids(plan.right)
    kind = plan.kind
    on_preds = conjuncts(plan.filter)
    if kind == "inner":
        everything = _add(on_preds, preds)
        lo, ro, both, none = _split(everything, lids, rids)
        lo = _add(lo, _derived(both, lids))
        ro = _add(ro, _derived(both, rids))
        pairs = _key_pairs(plan, both, lids, rids)
        if pairs:
            to_right = _transfer(_single(lo) + _implied(plan.left), pairs, True)
            to_left = _transfer(_single(ro) + _implied(plan.right), pairs, False)
            lo, ro = _add(lo, to_left), _add(ro, to_right)
        # this join drops rows whose keys (or the columns its conditions compare) are NULL: an
        # outer join below that supplies them NULL-extended rows is an inner join
        rejected = _null_rejected(everything, plan.on)
        left = _push(_outer_to_inner(plan.left, rejected), lo)
        right = _push(_outer_to_inner(plan.right, rejected), ro)
        return _wrap(_join(plan, left, right, "inner", and_(both)), none)
    # outer / semi / anti joins: WHERE predicates only enter the preserved side
    alo, aro, aboth, anone = _split(preds, lids, rids)
    olo, oro, oboth, onone = _split(on_preds, lids, rids)
    down_left, down_right, stay_on, above = [], [], list(oboth) + list(onone), list(aboth) + list(anone)
    if kind in ("left", "semi", "anti"):
        down_left += alo  # left rows are preserved as they are
        above += aro  # right-only WHERE predicates see NULL-extended rows
        down_right += oro  # ON predicates on the null-supplying side filter it early
        if kind == "semi":
            down_left += olo
        else:
            stay_on += olo
    elif kind == "right":
        down_right += aro
        above += alo
        down_left += olo
        stay_on += oro
    else:  # full
        above += alo + aro
        stay_on += olo + oro
    if kind != "full" and not plan.null_aware:
        # the preserved side's key predicates, onto the other side's keys: a row they remove
        # there matches only preserved rows that fail them (gone, or unmatched by the ON)
        pairs = _key_pairs(plan, olo + oro + oboth, lids, rids)
        if pairs:
            if kind == "right":
                down_left += _transfer(_single(aro + oro) + _implied(plan.right), pairs, False)
            else:
                down_right += _transfer(_single(alo + olo) + _implied(plan.left), pairs, True)
    left, right = _push(plan.left, down_left), _push(plan.right, down_right)
    return _wrap(_join(plan, left, right, kind, and_(stay_on)), above)


def _join(plan: Join, left: LogicalPlan, right: LogicalPlan, kind: str,
          condition: Expr | None) -> Join:
    """`plan` with these inputs, kind and filter: `plan` itself when none of them changed."""
    if (left is plan.left and right is plan.right and kind == plan.kind
            and condition == plan.filter):
        return plan
    return Join(left, right, kind, plan.on, condition, plan.null_aware)
