"""Cardinality estimates from table statistics, feeding join order and join strategy.

Row counts and min/max come from Parquet footers; filter selectivity is interpolated from
min/max for range predicates on numbers and dates, and taken from distinct-count estimates for
equalities. Estimates only steer plan choices, never answers.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import decimal
import math
import weakref
from collections import ChainMap
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass

import pyarrow as pa

from .. import types as T
from .expr import (Call, Cast, ColumnRef, Expr, InList, Literal, UserCall, column_ids, conjuncts,
                   disjuncts, has_subquery, is_volatile, walk)
from .logical import (
    Aggregate,
    CTEScan,
    Filter,
    Join,
    Limit,
    LogicalPlan,
    Project,
    RecursiveQuery,
    Scan,
    SingleRow,
    Sort,
    Union,
    Values,
    WithCTE,
    WorkTable,
    walk_plan,
)

DEFAULT_SELECTIVITY = 0.25
EQ_SELECTIVITY = 0.1
RANGE_SELECTIVITY = 1 / 3
LIKE_SELECTIVITY = 0.1  # without a sample of the column (Estimator._pattern_selectivity)
# a key whose distinct values at its source are over this many times a unique key's is not
# taken to draw its values from that key's (Estimator.join_rows' containment)
CONTAINMENT_SPREAD = 10.0
SAMPLE_MIN_VALUES = 1000  # fewer sampled values tell too little
# a recursive CTE's size is known only once it has run: one iteration's rows, and how many
# iterations the estimate counts
_WORK_TABLE_ROWS = 1000.0
# the estimate of a plan certainly empty (Estimator.known_empty): next to nothing, yet not 0,
# which estimates divide by
_EMPTY_ROWS = 1e-6
_RECURSIVE_ITERATIONS = 10


@dataclass
class ColumnEstimate:
    ndv: float | None = None
    min: float | None = None
    max: float | None = None


_EPOCH = datetime.datetime(1970, 1, 1)


def _derived_ndv(e: Expr, inner: Mapping[str, ColumnEstimate]) -> float | None:
    """Distinct values of a deterministic expression over columns whose distinct counts are
    known: at most the product of theirs (`substr(w_warehouse_name, 1, 20)`, `extract(year
    FROM d)`, a CASE over a few flags). Without it such a group key counted as a tenth of the
    input's rows, and TPC-DS Q99's 90 groups (of 5 x 20 x 6 possible) as all 287k rows."""
    if is_volatile(e) or has_subquery(e) or any(isinstance(x, UserCall) for x in walk(e)):
        return None
    ids = column_ids(e)
    if not ids:
        return None
    n = 1.0
    for i in ids:
        est = inner.get(i)
        if est is None or not est.ndv:
            return None
        n *= est.ndv
    return n


def _as_number(v) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, float, decimal.Decimal)):
        # an infinite or NaN statistic bounds nothing (a DOUBLE column holding Infinity,
        # cast to an integer join key: int(inf - lo) crashed planning, seed 301 case 62402)
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, datetime.datetime):
        # days since the epoch by arithmetic: .timestamp() reads a naive value in the local
        # zone and fails near year 1 ("year 0 is out of range", fuzz seed 201 case 23085)
        epoch = _EPOCH if v.tzinfo is None else _EPOCH.replace(tzinfo=datetime.timezone.utc)
        return (v - epoch) / datetime.timedelta(days=1)
    if isinstance(v, datetime.date):
        return float(v.toordinal() - 719163)  # days since epoch, as date32
    return None


_SHARED: ContextVar[Estimator | None] = ContextVar("pqe_estimator", default=None)


@contextlib.contextmanager
def shared_estimates():
    """Inside, `Estimator.shared()` is one estimator (it keeps the nodes it estimated alive,
    so their ids stay theirs until the block ends)."""
    token = _SHARED.set(Estimator())
    try:
        yield
    finally:
        _SHARED.reset(token)


def type_width(t: pa.DataType) -> int:
    """Rough bytes per value, for size estimates."""
    if T.is_text(t) or pa.types.is_binary(t):
        return 24
    if T.is_decimal(t):
        return 16
    try:
        return max(1, t.bit_width // 8)
    except ValueError:
        return 16


class Estimator:
    """Memoized row and column estimates for one plan (by node identity: an estimate is a
    function of the subtree alone)."""

    @staticmethod
    def shared() -> Estimator:
        """The estimator of the enclosing `shared_estimates()` block (one optimizer run), or a
        new one: the optimizer's rules and passes see mostly the same nodes, and estimating
        them again in each was a fifth of optimizing (TPC-DS: 0.6 s of 1.7 s in
        join_reorder)."""
        est = _SHARED.get()
        return est if est is not None else Estimator()

    def __init__(self) -> None:
        self._rows: dict[int, float] = {}
        self._cols: dict[int, Mapping[str, ColumnEstimate]] = {}
        self._unique: dict[tuple[int, str], bool] = {}
        self._width_cache: dict[int, Mapping[str, float]] = {}
        self._keep: list[LogicalPlan] = []  # keep nodes alive so id() keys stay unique
        # what an optimizer rule derived from nodes, for its later passes in the same run
        # (join_reorder's candidate joins); each entry keeps the nodes its key names alive
        self.derived: dict = {}
        # the definitions of the CTEs computed once (WithCTE) seen so far, by name
        self._ctes: dict[str, LogicalPlan] = {}

    def learn_ctes(self, plan: LogicalPlan) -> None:
        """Know the definitions of the CTEs computed once in `plan` (its WithCTE nodes), so
        that their reads are estimated by them whichever node is estimated first (a
        planner that estimated a three-way cross join of a 10-row CTE before its WITH took
        each read as 1,000 rows and refused it as needing 22 GiB)."""
        for node in walk_plan(plan):
            if isinstance(node, WithCTE):
                self._ctes.update(zip(node.names, node.definitions, strict=True))

    # ---- rows ------------------------------------------------------------------------------

    def rows(self, plan: LogicalPlan) -> float:
        key = id(plan)
        if key not in self._rows:
            self._keep.append(plan)
            # at least a row, unless the plan is certainly empty (an empty table under it
            # where no row can come from elsewhere): counted as one row, an empty table
            # joined to a 10^10-row join let the memory guard refuse a query that answers
            # 0 rows at once ("needs 447 GiB")
            self._rows[key] = _EMPTY_ROWS if self.known_empty(plan) \
                else max(1.0, self._compute_rows(plan))
        return self._rows[key]

    def known_empty(self, plan: LogicalPlan) -> bool:
        """Whether the plan yields no row whatever its data, by the exact row counts of its
        tables: a table of 0 rows empties what reads only it, an inner join or semi join
        with an empty side, an outer join whose preserved sides are empty."""
        if isinstance(plan, Scan):
            return plan.provider.statistics().num_rows == 0
        if isinstance(plan, Values):
            return not plan.rows
        if isinstance(plan, (Filter, Project, Sort, Limit)):
            return self.rows(plan.input) <= _EMPTY_ROWS
        if isinstance(plan, Aggregate):
            return bool(plan.group) and self.rows(plan.input) <= _EMPTY_ROWS
        if isinstance(plan, Union):
            return all(self.rows(p) <= _EMPTY_ROWS for p in plan.inputs)
        if isinstance(plan, Join):
            left = self.rows(plan.left) <= _EMPTY_ROWS
            right = self.rows(plan.right) <= _EMPTY_ROWS
            return {"inner": left or right, "semi": left or right, "anti": left,
                    "left": left, "right": right, "full": left and right}[plan.kind]
        return False

    def bytes(self, plan: LogicalPlan) -> float:
        """Estimated size of the plan's output in memory (Arrow), in bytes."""
        widths = self._widths(plan)
        width = sum(widths.get(f.id, type_width(f.dtype)) for f in plan.schema) or 8
        return self.rows(plan) * width

    def decoded_bytes(self, scan: Scan, rows: float, ids) -> float:
        """Bytes of `rows` rows of the scan's columns `ids` once decoded, filter-only columns
        included: what a scan task holds before its filters drop rows and columns."""
        widths = self._widths(scan)
        width = sum(widths.get(f.id, type_width(f.dtype)) for f in scan.fields if f.id in ids)
        return rows * (width or 8)

    def _widths(self, plan: LogicalPlan) -> Mapping[str, float]:
        """Average bytes per value of columns read from files (Parquet metadata), by id: the
        scans' under `plan`, worked out once per node from its children's (walking the whole
        subtree for each node's estimate made the physical planner quadratic: a third of
        planning TPC-DS)."""
        key = id(plan)
        hit = self._width_cache.get(key)
        if hit is not None:
            return hit
        if isinstance(plan, Scan):
            out = _scan_widths(plan)
        else:
            kids = [self._widths(k) for k in plan.children()]
            kids = [k for k in kids if k]
            if not kids:
                out = _NO_WIDTHS
            elif len(kids) == 1:
                out = kids[0]
            else:
                out = {}
                for k in kids:
                    out.update(k)
        self._keep.append(plan)
        self._width_cache[key] = out
        return out

    def _compute_rows(self, plan: LogicalPlan) -> float:
        if isinstance(plan, Scan):
            n = plan.provider.statistics().num_rows
            base = float(n) if n is not None else 1e6
            if not plan.filters:
                return base
            # the pushed-in filters' selectivity is worked out on the columns as stored (the
            # scan's own columns are narrowed by those filters, see _narrowed)
            stored = dataclasses.replace(plan, filters=())
            self._keep.append(stored)
            return base * self.selectivity(plan.filters, stored)
        if isinstance(plan, Values):
            return float(len(plan.rows))
        if isinstance(plan, Filter):
            preds = conjuncts(plan.predicate)
            unmatched = self._unmatched_rows(plan.input, preds)
            if unmatched is not None:
                n, rest = unmatched
                return n * self.selectivity(rest, plan.input)
            return self.rows(plan.input) * self.selectivity(preds, plan.input)
        if isinstance(plan, (Project, Sort, SingleRow)):
            n = self.rows(plan.input)
            if isinstance(plan, Sort) and plan.fetch is not None:
                n = min(n, plan.fetch)
            if isinstance(plan, SingleRow):
                n = 1.0
            return n
        if isinstance(plan, Limit):
            n = self.rows(plan.input)
            return n if plan.fetch is None else min(n, plan.fetch)
        if isinstance(plan, Aggregate):
            if not plan.group:
                return 1.0
            n = self.rows(plan.input)
            groups = 1.0
            for g in plan.group:
                est = self.column(plan.input, g)
                ndv = est.ndv if est.ndv else _derived_ndv(g, self._columns(plan.input))
                groups *= min(ndv, n) if ndv else max(1.0, n / 10)
            return min(n, groups)
        if isinstance(plan, Union):
            return sum(self.rows(p) for p in plan.inputs)
        if isinstance(plan, Join):
            return self._join_rows(plan)
        if isinstance(plan, WorkTable):
            # one iteration's rows of a recursive CTE: unknown before it runs; as the
            # unknown-table default (1e6) a tiny counter's CTE read twice was a 10^12-row
            # cross join, which the memory guard refused ("needs 14901 GiB")
            return _WORK_TABLE_ROWS
        if isinstance(plan, RecursiveQuery):  # the anchor's rows and some iterations' of the step
            return self.rows(plan.anchor) + _RECURSIVE_ITERATIONS * self.rows(plan.step)
        if isinstance(plan, WithCTE):
            self._ctes.update(zip(plan.names, plan.definitions, strict=True))
            return self.rows(plan.input)
        if isinstance(plan, CTEScan):
            # its definition's rows (a CTE computed once, read twice in a cross join, was two
            # unknown tables of 1e6 rows: "needs 14901 GiB"); one read apart from its WITH,
            # as one iteration of a recursive CTE's
            definition = self._ctes.get(plan.name)
            return self.rows(definition) if definition is not None else _WORK_TABLE_ROWS
        kids = plan.children()
        if len(kids) == 1:  # Window and other row-preserving nodes
            return self.rows(kids[0])
        return 1e6

    def join_rows(self, left: LogicalPlan, right: LogicalPlan,
                  on: tuple[tuple[Expr, Expr], ...]) -> float:
        """Inner equi-join output: |L||R| / max(ndv(L keys), ndv(R keys)), the distinct count
        of a composite key taken as the product of its parts' (independence), capped by the
        side's rows."""
        nl, nr = self.rows(left), self.rows(right)
        if not on:
            return nl * nr
        dl = dr = 1.0
        for lk, rk in on:
            el, er = self.column(left, lk).ndv or nl, self.column(right, rk).ndv or nr
            # a foreign key joined to a unique key takes its values from that key's domain
            # (containment): at most the unique key's distinct values before any filter.
            # Without it a sparse key (orderkey spans 4x the orders) reads as 4x as many
            # distinct values and a filtered dimension as shrinking the fact side to its size.
            # Not when the other side's own count is many times the unique key's (`id IN
            # (SELECT x FROM ten_ids)`: 100k ids are not drawn from 10 values, and the semi
            # join looked as if it kept every row)
            if len(on) == 1:
                if self.unique(right, rk) and (base := self._base_ndv(right, rk)) \
                        and not self._outnumbers(left, lk, base):
                    el = min(el, base)
                elif self.unique(left, lk) and (base := self._base_ndv(left, lk)) \
                        and not self._outnumbers(right, rk, base):
                    er = min(er, base)
            dl *= el
            dr *= er
        if len(on) > 1:
            # containment for a composite key: joined to a side unique on the combination
            # (partsupp's (partkey, suppkey)), the other side's combinations come from that
            # side's rows before any filter. Without it the product of the parts' distinct
            # counts took TPC-H Q9's lineitem against a filtered part-partsupp for 435k rows
            # where 3.3M come (SF10). Only many-to-one: when both sides are unique on their
            # combinations (sales and their returns, on ticket and item) either may hold the
            # other's, and containment the wrong way round took TPC-DS Q78's 90% of sales
            # without a return for 10%
            lks, rks = [a for a, _ in on], [b for _, b in on]
            lu, ru = self.unique_keys(left, lks), self.unique_keys(right, rks)
            if ru and not lu and (base := self._source_rows(right, rks)):
                dl = min(dl, base)
            elif lu and not ru and (base := self._source_rows(left, lks)):
                dr = min(dr, base)
        return nl * nr / max(min(dl, nl), min(dr, nr), 1.0)

    def _outnumbers(self, plan: LogicalPlan, expr: Expr, ndv: float) -> bool:
        """Whether `expr`'s distinct values at its source are over CONTAINMENT_SPREAD times
        `ndv`: too many to come from a key of `ndv` values (a sparse key's count read from
        its range overstates it a few times: TPC-H's orderkeys span 4x the orders)."""
        base = self._base_ndv(plan, expr)
        return base is not None and base > CONTAINMENT_SPREAD * ndv

    def _base_ndv(self, plan: LogicalPlan, expr: Expr) -> float | None:
        """Distinct values of a column as its source knows them, before filters cap them."""
        while isinstance(expr, Cast):
            expr = expr.arg
        if not isinstance(expr, ColumnRef):
            return None
        est = self._columns(plan).get(expr.id)
        return est.ndv if est is not None else None

    @staticmethod
    def _equi_pairs(plan: Join) -> tuple[tuple[tuple[Expr, Expr], ...], list[Expr]]:
        """The join's key pairs, including equalities between the two sides still in its
        filter (before key extraction), and the filter's other conjuncts."""
        pairs = list(plan.on)
        rest = []
        left = set(plan.left.column_ids)
        right = set(plan.right.column_ids)
        for c in conjuncts(plan.filter) if plan.filter is not None else ():
            if isinstance(c, Call) and c.fn == "eq":
                a, b = c.args
                ia, ib = column_ids(a), column_ids(b)
                if ia and ib and ia <= left and ib <= right:
                    pairs.append((a, b))
                    continue
                if ia and ib and ia <= right and ib <= left:
                    pairs.append((b, a))
                    continue
            rest.append(c)
        return tuple(pairs), rest

    def _unmatched_rows(self, plan: LogicalPlan, preds: list[Expr]):
        """`preds` over an outer join testing that a column of the null-supplying side which
        no matched row has NULL (a key, or a column that is never NULL there) IS NULL keep
        exactly the unmatched preserved rows (the anti-join idiom `LEFT JOIN r ON ... WHERE
        r.key IS NULL`): (those rows, as an anti join's estimate, and the other predicates),
        or None when no predicate is such a test. Taken as a generic IS NULL's 5% it made the
        90% of sales without a return (TPC-DS Q78) look 18x smaller than they are."""
        if not isinstance(plan, Join) or plan.kind not in ("left", "right"):
            return None
        preserved, other = ((plan.left, plan.right) if plan.kind == "left"
                            else (plan.right, plan.left))
        on, _ = self._equi_pairs(plan)
        if plan.kind == "right":
            on = tuple((b, a) for a, b in on)
        other_ids = set(other.column_ids)
        never_null = {f.id for f in other.schema if not f.nullable}
        never_null |= {k.id for _, k in on if isinstance(k, ColumnRef)}
        tests, rest = [], []
        for p in preds:
            if (isinstance(p, Call) and p.fn == "is_null" and isinstance(p.args[0], ColumnRef)
                    and p.args[0].id in other_ids and p.args[0].id in never_null):
                tests.append(p)
            else:
                rest.append(p)
        if not tests or not on:
            return None
        n = self.rows(preserved)
        inner = self.join_rows(preserved, other, on)
        return n * max(0.1, 1 - min(1.0, inner / n)), rest

    def _join_rows(self, plan: Join) -> float:
        nl = self.rows(plan.left)
        on, rest = self._equi_pairs(plan)
        if plan.kind in ("semi", "anti"):
            inner = self.join_rows(plan.left, plan.right, on)
            frac = min(1.0, inner / nl) if on else 0.5
            return nl * (frac if plan.kind == "semi" else max(0.1, 1 - frac))
        n = self.join_rows(plan.left, plan.right, on)
        if rest:
            n *= self.selectivity(rest, plan)
        if plan.kind in ("left", "full"):
            n = max(n, nl)
        if plan.kind in ("right", "full"):
            n = max(n, self.rows(plan.right))
        return n

    # ---- columns ---------------------------------------------------------------------------

    def column(self, plan: LogicalPlan, expr: Expr) -> ColumnEstimate:
        while isinstance(expr, Cast):
            expr = expr.arg
        if not isinstance(expr, ColumnRef):
            return ColumnEstimate()
        cols = self._columns(plan)
        est = cols.get(expr.id, ColumnEstimate())
        rows = self.rows(plan)
        if est.ndv is not None and est.ndv > rows:
            est = ColumnEstimate(rows, est.min, est.max)
        return est

    def ndv_estimate(self, plan: LogicalPlan, expr: Expr) -> tuple[float | None, bool]:
        """(distinct values of `expr` over `plan`'s columns, at most its rows, or None when
        unknown; whether that is the column's own estimate):
        a computed expression's count is only an upper bound (`substr(u, 1, 1)` counts as
        many values as u), good for "too few" but not for "enough"."""
        base = expr
        while isinstance(base, Cast):
            base = base.arg
        if isinstance(base, ColumnRef):
            n, direct = self._columns(plan).get(base.id, ColumnEstimate()).ndv, True
        else:
            n, direct = _derived_ndv(base, self._columns(plan)), False
        return (None, direct) if n is None else (min(n, self.rows(plan)), direct)

    def _columns(self, plan: LogicalPlan) -> Mapping[str, ColumnEstimate]:
        key = id(plan)
        if key in self._cols:
            return self._cols[key]
        self._keep.append(plan)
        out: dict[str, ColumnEstimate] = {}
        if isinstance(plan, Scan):
            out = _scan_columns(plan)
            if plan.filters:
                out = _narrowed(out, plan.filters)
        elif isinstance(plan, Filter):
            out = _narrowed(self._columns(plan.input), conjuncts(plan.predicate))
        elif isinstance(plan, Project):
            inner = self._columns(plan.input)
            for e, f in zip(plan.exprs, plan.fields, strict=True):
                base = e
                while isinstance(base, Cast):
                    base = base.arg
                if isinstance(base, ColumnRef) and base.id in inner:
                    out[f.id] = inner[base.id]
                elif (derived := _derived_ndv(base, inner)) is not None:
                    out[f.id] = ColumnEstimate(derived)
        elif isinstance(plan, Aggregate):
            inner = self._columns(plan.input)
            for e, f in zip(plan.group, plan.group_fields, strict=True):
                if isinstance(e, ColumnRef) and e.id in inner:
                    out[f.id] = inner[e.id]
        elif isinstance(plan, Union):
            # a column of UNION ALL: at most the sum of its inputs' distinct counts, within
            # the union of their ranges (known only when every input knows its own)
            inputs = [self._columns(p) for p in plan.inputs]
            for k, f in enumerate(plan.fields):
                parts = [cols.get(p.schema[k].id) for p, cols in zip(plan.inputs, inputs,
                                                                      strict=True)]
                if any(c is None or c.ndv is None for c in parts):
                    continue
                lows = [c.min for c in parts]
                highs = [c.max for c in parts]
                out[f.id] = ColumnEstimate(
                    sum(c.ndv for c in parts),
                    None if None in lows else min(lows), None if None in highs else max(highs))
        else:  # shared, never copied: a join's columns are its inputs' (read-only mappings)
            kids = [self._columns(child) for child in plan.children()]
            out = kids[0] if len(kids) == 1 else ChainMap(*kids) if kids else out
        self._cols[key] = out
        return out

    def unique(self, plan: LogicalPlan, expr: Expr) -> bool:
        """Whether `expr` (a column) probably has no duplicate non-NULL values in `plan`'s
        output: a base-table column whose sampled values are distinct
        (`TableProvider.key_sample_unique`), kept through filters and projections, a single
        GROUP BY key, or a column of a join input whose other side matches each row at most
        once (a foreign key joined to a unique key). Steers the join build side only."""
        while isinstance(expr, Cast):
            expr = expr.arg
        if not isinstance(expr, ColumnRef):
            return False
        # memoized: join ordering estimates every candidate join, and each answer walks down
        # the join tree (unmemoized, a 30-table SQLite join planned 2x slower)
        key = (id(plan), expr.id)
        hit = self._unique.get(key)
        if hit is None:
            hit = self._unique[key] = self._compute_unique(plan, expr)
            self._keep.append(plan)
        return hit

    def _compute_unique(self, plan: LogicalPlan, expr: ColumnRef) -> bool:
        cid = expr.id
        if isinstance(plan, Scan):
            for f in plan.fields:
                if f.id == cid:
                    return plan.provider.key_sample_unique(f.name)
            return False
        if isinstance(plan, Filter | Sort | Limit):
            return self.unique(plan.input, expr)
        if isinstance(plan, Project):
            for e, f in zip(plan.exprs, plan.fields, strict=True):
                if f.id == cid:
                    return self.unique(plan.input, e)
            return False
        if isinstance(plan, Aggregate):
            # a local aggregate's group may come out once per partition
            return len(plan.group) == 1 and plan.group_fields[0].id == cid and not plan.local
        if isinstance(plan, Join):
            in_left = cid in set(plan.left.column_ids)
            if plan.kind in ("semi", "anti"):
                return in_left and self.unique(plan.left, expr)
            if plan.kind not in ("inner", "left"):
                return False
            side, other = (plan.left, plan.right) if in_left else (plan.right, plan.left)
            if not in_left and plan.kind == "left":
                return False
            if not self.unique(side, expr):
                return False
            return bool(plan.on) and self.unique_keys(
                other, [b if in_left else a for a, b in plan.on])
        return False

    def unique_keys(self, plan: LogicalPlan, exprs) -> bool:
        """Whether the combination of `exprs` (columns) probably has no duplicate in `plan`'s
        output: one of them is unique (`unique`), or a base table's sample of the combination
        has none (`TableProvider.keys_sample_unique`), kept through filters, projections, a
        GROUP BY on them and joins whose other side matches each row at most once."""
        cols = []
        for e in exprs:
            while isinstance(e, Cast):
                e = e.arg
            if not isinstance(e, ColumnRef):
                return False
            cols.append(e)
        if any(self.unique(plan, c) for c in cols):
            return True
        if len(cols) < 2:
            return False
        key = (id(plan), frozenset(c.id for c in cols))
        hit = self._unique.get(key)
        if hit is None:
            hit = self._unique[key] = self._compute_unique_keys(plan, cols)
            self._keep.append(plan)
        return hit

    def _compute_unique_keys(self, plan: LogicalPlan, cols: list[ColumnRef]) -> bool:
        ids = {c.id for c in cols}
        if isinstance(plan, Scan):
            names = {f.id: f.name for f in plan.fields}
            return ids <= names.keys() and plan.provider.keys_sample_unique(
                tuple(sorted(names[i] for i in ids)))
        if isinstance(plan, Filter | Sort | Limit):
            return self.unique_keys(plan.input, cols)
        if isinstance(plan, Project):
            by_id = {f.id: e for e, f in zip(plan.exprs, plan.fields, strict=True)}
            return ids <= by_id.keys() and self.unique_keys(plan.input, [by_id[i] for i in ids])
        if isinstance(plan, Aggregate):
            return not plan.local and {f.id for f in plan.group_fields} <= ids
        if isinstance(plan, Join):
            if plan.kind in ("semi", "anti"):
                return ids <= set(plan.left.column_ids) and self.unique_keys(plan.left, cols)
            if plan.kind not in ("inner", "left") or not plan.on:
                return False
            found = _one_side(plan, ids)
            if found is None or (found[0] is plan.right and plan.kind == "left"):
                return False
            side, refs = found
            in_left = side is plan.left
            other = plan.right if in_left else plan.left
            return self.unique_keys(side, refs) and self.unique_keys(
                other, [b if in_left else a for a, b in plan.on])
        return False

    def _source_rows(self, plan: LogicalPlan, exprs) -> float | None:
        """Rows of the base table the columns `exprs` all come from, before any filter: the
        distinct combinations of a key unique there."""
        ids = set()
        for e in exprs:
            while isinstance(e, Cast):
                e = e.arg
            if not isinstance(e, ColumnRef):
                return None
            ids.add(e.id)
        while True:
            if isinstance(plan, Scan):
                n = plan.provider.statistics().num_rows
                return float(n) if n else None
            if isinstance(plan, Filter | Sort | Limit):
                plan = plan.input
            elif isinstance(plan, Project):
                by_id = {f.id: e for e, f in zip(plan.exprs, plan.fields, strict=True)}
                if not ids <= by_id.keys():
                    return None
                return self._source_rows(plan.input, [by_id[i] for i in ids])
            elif isinstance(plan, Join):
                found = _one_side(plan, ids)
                if found is None:
                    return None
                plan, ids = found[0], {c.id for c in found[1]}
            else:
                return None

    # ---- selectivity -----------------------------------------------------------------------

    def selectivity(self, predicates, plan: LogicalPlan) -> float:
        """Conjunction: range bounds on one column combine into one interval (a date range
        `d >= a AND d < b` keeps b - a of the column's span, not the product of two halves);
        other conjuncts are taken as independent."""
        s = 1.0
        bounds: dict[Expr, list[float]] = {}  # column -> [lo fraction, hi fraction]
        # equalities and IN lists on one column intersect: `d_year = 2002 AND d_year IN
        # (2001, 2002)` (TPC-DS Q74 after a CTE's filter met its consumer's) keeps one year,
        # not 1/201 of 2/201 of the rows
        values: dict[Expr, set] = {}
        intersected: set[int] = set()
        for p in predicates:
            hit = _constraint(p)
            vals = _value_set(hit[2]) if hit is not None and hit[1] == "in" else None
            if vals is not None:
                col = hit[0]
                values[col] = values[col] & vals if col in values else vals
                intersected.add(id(p))
        for col, vals in values.items():
            s *= min(1.0, self._eq_selectivity(col, plan) * len(vals))
        s *= self._bands(predicates, plan, intersected)
        for p in predicates:
            if id(p) in intersected:
                continue
            r = self._range_fraction(p, plan)
            if r is None:
                s *= self._selectivity(p, plan)
                continue
            col, lo, hi = r
            b = bounds.setdefault(col, [0.0, 1.0])
            b[0], b[1] = max(b[0], lo), min(b[1], hi)
        for lo, hi in bounds.values():
            s *= min(1.0, max(hi - lo, 1e-4))
        return s

    def _range_fraction(self, e: Expr, plan: LogicalPlan):
        """(column, lo, hi): the part [lo, hi] of the column's min..max span a comparison with
        a literal keeps, or None when `e` is not one or the span is unknown."""
        if not isinstance(e, Call) or e.fn not in ("lt", "le", "gt", "ge"):
            return None
        col, lit, flipped = self._col_lit(e)
        if col is None:
            return None
        est = self._column_in(plan, col)
        v = _as_number(lit.value)
        if est.min is None or est.max is None or v is None or est.max <= est.min:
            return None
        fn = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}[e.fn] if flipped else e.fn
        frac = min(1.0, max(0.0, (v - est.min) / (est.max - est.min)))
        return (col, 0.0, frac) if fn in ("lt", "le") else (col, frac, 1.0)

    def _selectivity(self, e: Expr, plan: LogicalPlan) -> float:
        if isinstance(e, Literal):
            return 1.0 if e.value is True else 0.0
        if isinstance(e, InList):
            eq = self._eq_selectivity(e.arg, plan)
            s = min(1.0, eq * len(e.values))
            return 1 - s if e.negated else s
        if not isinstance(e, Call):
            return DEFAULT_SELECTIVITY
        fn = e.fn
        if fn == "and":
            return self.selectivity(e.args, plan)
        if fn == "or":
            a, b = (self._selectivity(x, plan) for x in e.args)
            return a + b - a * b
        if fn == "not":
            return 1 - self._selectivity(e.args[0], plan)
        if fn in ("eq", "ne", "lt", "le", "gt", "ge"):
            col, lit, flipped = self._col_lit(e)
            if col is None:
                if fn == "eq" and (both := self._columns_eq(e, plan)) is not None:
                    return both
                return EQ_SELECTIVITY if fn == "eq" else DEFAULT_SELECTIVITY
            if fn == "eq":
                return self._eq_selectivity(col, plan)
            if fn == "ne":
                return 1 - self._eq_selectivity(col, plan)
            r = self._range_fraction(e, plan)
            return RANGE_SELECTIVITY if r is None else min(1.0, max(r[2] - r[1], 1e-4))
        if fn in ("like", "ilike", "starts_with", "ends_with", "contains", "regexp_matches"):
            sampled = self._pattern_selectivity(e, plan)
            return LIKE_SELECTIVITY if sampled is None else sampled
        if fn == "is_null":
            return 0.05 if e.args[0].nullable else 0.0
        if fn == "is_not_null":
            return 0.95 if e.args[0].nullable else 1.0
        return DEFAULT_SELECTIVITY

    def _bands(self, predicates, plan: LogicalPlan, taken: set[int]) -> float:
        """Column `k` bounded below and above by two other columns (`k BETWEEN lo AND hi`, a
        range join's condition): each k falls in about one (lo, hi) interval, so the pair
        keeps 1 / the distinct lower bounds, as an equality with lo would. Taken as two
        independent 25% guesses, 1M events in 100k intervals read as 6G pairs and the memory
        guard refused the join. The two conjuncts are added to `taken`."""
        lower: dict[str, tuple] = {}
        upper: dict[str, tuple] = {}
        for p in predicates:
            if not (isinstance(p, Call) and p.fn in ("lt", "le", "gt", "ge") and id(p) not in taken
                    and all(isinstance(a, ColumnRef) for a in p.args)):
                continue
            a, b = p.args
            below = p.fn in ("gt", "ge")  # a > b: b bounds a from below, a bounds b from above
            lower.setdefault((a if below else b).id, (p, b if below else a))
            upper.setdefault((b if below else a).id, (p, a if below else b))
        s = 1.0
        for key, (p, lo) in lower.items():
            hit = upper.get(key)
            if hit is None or hit[0] is p or id(p) in taken or id(hit[0]) in taken:
                continue
            ndv = self._column_in(plan, lo).ndv
            if not ndv:
                continue
            taken.update((id(p), id(hit[0])))
            s *= min(1.0, 1.0 / ndv)
        return s

    def _columns_eq(self, e: Call, plan: LogicalPlan) -> float | None:
        """`a = b` of two columns: 1 / the larger distinct count (each value of the side with
        fewer finds its equal among the other's values), as for a join's keys. The flat 10%
        took an OR'ed join condition `(l.k = r.k AND ...) OR r.z = 5` over 400k x 60k rows
        for 800M pairs where 24M come, and the memory guard refused the query (103 GiB)."""
        a, b = e.args
        if not (isinstance(a, ColumnRef) and isinstance(b, ColumnRef)):
            return None
        na, nb = self._column_in(plan, a).ndv, self._column_in(plan, b).ndv
        if not na or not nb:
            return None
        return min(1.0, 1.0 / max(na, nb))

    def _pattern_selectivity(self, e: Call, plan: LogicalPlan) -> float | None:
        """The share of a sample of the base-table text column (`sample_values`: some values
        of a few row groups) that a LIKE, prefix, suffix or substring test with a constant
        pattern keeps. A pattern's reach has little to do with its length: TPC-H Q14's 'PROMO%'
        keeps 17% of parts, Q20's 'forest%' 1.1%, where one 10% guess made Q20 at SF10 shuffle
        9M lineitem rows for the 87k keys it semi-joins. None without a sample."""
        if len(e.args) != 2 or not isinstance(e.args[1], Literal) \
                or not isinstance(e.args[1].value, str):
            return None
        values = self._sample(plan, e.args[0])
        if values is None or len(values) < SAMPLE_MIN_VALUES:
            return None
        pattern = e.args[1].value
        # remembered per sample (a snapshot of the files keeps one per column) and dropped
        # with it: one LIKE over the 49k sampled values takes ~2 ms, as long as binding the
        # query, and a plan estimates the same predicate several times
        shares = _PATTERN_SHARES.get(id(values))
        if shares is None or shares[0]() is not values:
            shares = _PATTERN_SHARES[id(values)] = (
                weakref.ref(values, lambda _, k=id(values): _PATTERN_SHARES.pop(k, None)), {})
        if (e.fn, pattern) not in shares[1]:
            shares[1][e.fn, pattern] = _sample_share(values, e.fn, pattern)
        return shares[1][e.fn, pattern]

    def _sample(self, plan: LogicalPlan, expr: Expr):
        """The sampled values of the base-table column `expr` reads in `plan`'s output
        (through filters, sorts, limits, joins and projections that pass it on), or None."""
        while isinstance(expr, ColumnRef):
            if isinstance(plan, Scan):
                name = next((f.name for f in plan.fields if f.id == expr.id), None)
                return None if name is None else plan.provider.sample_values(name)
            if isinstance(plan, Filter | Sort | Limit):
                plan = plan.input
            elif isinstance(plan, Project):
                expr = next((x for x, f in zip(plan.exprs, plan.fields, strict=True)
                             if f.id == expr.id), None)
                plan = plan.input
            elif isinstance(plan, Join):
                plan = plan.left if expr.id in set(plan.left.column_ids) else plan.right
            else:
                return None
        return None

    @staticmethod
    def _col_lit(e: Call):
        a, b = e.args
        strip = lambda x: x.arg if isinstance(x, Cast) else x
        a, b = strip(a), strip(b)
        if isinstance(a, ColumnRef) and isinstance(b, Literal):
            return a, b, False
        if isinstance(b, ColumnRef) and isinstance(a, Literal):
            return b, a, True
        return None, None, False

    def _column_in(self, plan: LogicalPlan, col: Expr) -> ColumnEstimate:
        """Column estimate for a predicate evaluated at `plan` (a join's condition is looked up
        in the input that produces the column, so the join's own size is not needed)."""
        if isinstance(plan, Join):
            base = col
            while isinstance(base, Cast):
                base = base.arg
            if not isinstance(base, ColumnRef):  # not a column: nothing known (and asking the
                return ColumnEstimate()          # join itself would recurse into its own size)
            side = plan.left if base.id in set(plan.left.column_ids) else plan.right
            return self.column(side, col)
        return self.column(plan, col)

    def _eq_selectivity(self, col: Expr, plan: LogicalPlan) -> float:
        est = self._column_in(plan, col)
        if est.ndv:
            return min(1.0, 1.0 / est.ndv)
        return EQ_SELECTIVITY


def _narrowed(cols: Mapping[str, ColumnEstimate], predicates) -> Mapping[str, ColumnEstimate]:
    """The columns' estimates where `predicates` (conjuncts) hold: `c = v` leaves one distinct
    value, `c IN (k values)` at most k, a range on `c` the part of its span it keeps (and that
    share of its distinct values). Only comparisons of the column itself: `CAST(c AS INT) = 5`
    can keep many values of c. Without it a group key or join key filtered to one value
    (`d_year = 2002`) counted as all of its values downstream (TPC-DS Q4's eager aggregation
    saw 201 years where one was left)."""
    changed: dict[str, ColumnEstimate] = {}
    hits = []
    for p in predicates:
        if isinstance(p, Call) and p.fn == "or":
            hits.extend(_or_values(p))
        elif (hit := _constraint(p)) is not None:
            hits.append(hit)
    for col, kind, values in hits:
        est = changed.get(col.id) or cols.get(col.id) or ColumnEstimate()
        nums = [_as_number(v) for v in values]
        if kind == "in":
            known = None if None in nums else nums
            distinct = _value_set(values)
            ndv = float(len(distinct if distinct is not None else values))
            changed[col.id] = ColumnEstimate(
                min(est.ndv, ndv) if est.ndv else ndv,
                max(est.min, min(known)) if known and est.min is not None else (
                    min(known) if known else est.min),
                min(est.max, max(known)) if known and est.max is not None else (
                    max(known) if known else est.max))
            continue
        (v,) = nums
        if v is None or est.min is None or est.max is None:
            continue
        lo, hi = (max(est.min, v), est.max) if kind in ("gt", "ge") else (est.min, min(est.max, v))
        ndv = est.ndv
        if ndv and est.max > est.min:
            ndv = max(1.0, ndv * max(0.0, hi - lo) / (est.max - est.min))
        changed[col.id] = ColumnEstimate(ndv, lo, max(lo, hi))
    if not changed:
        return cols
    return ChainMap(changed, cols)


def _or_values(p: Expr) -> list[tuple]:
    """("in" constraints) the columns that every branch of an OR compares with literals, each
    with the values of all branches: `d_year = 1999 OR (d_year = 1998 AND d_moy = 12)` leaves
    d_year two values (TPC-DS Q47, Q57: counted as all 201 years, so a hash exchange was
    planned on (d_year, d_moy) as if it had thousands of values where it has 14)."""
    common: dict[str, tuple] | None = None
    for branch in disjuncts(p):
        found: dict[str, tuple] = {}
        for c in conjuncts(branch):
            hit = _constraint(c)
            if hit is not None and hit[1] == "in" and hit[0].id not in found:
                found[hit[0].id] = (hit[0], list(hit[2]))
        if common is None:
            common = found
        else:
            common = {k: (v[0], v[1] + found[k][1]) for k, v in common.items() if k in found}
        if not common:
            return []
    return [(col, "in", values) for col, values in (common or {}).values()]


def _value_set(values) -> set | None:
    """The literal values as a set, or None when one is unhashable."""
    try:
        return set(values)
    except TypeError:
        return None


def _constraint(p: Expr):
    """(column, "in" | "gt" | "ge" | "lt" | "le", literal values) for a conjunct comparing a
    column itself with literals, else None."""
    if isinstance(p, InList):
        if p.negated or not isinstance(p.arg, ColumnRef) or not p.values:
            return None
        if not all(isinstance(v, Literal) and v.value is not None for v in p.values):
            return None
        return p.arg, "in", [v.value for v in p.values]
    if not isinstance(p, Call) or p.fn not in ("eq", "lt", "le", "gt", "ge") or len(p.args) != 2:
        return None
    a, b = p.args
    fn = p.fn
    if isinstance(b, ColumnRef) and isinstance(a, Literal):
        a, b = b, a
        fn = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq"}[fn]
    if not (isinstance(a, ColumnRef) and isinstance(b, Literal)) or b.value is None:
        return None
    return (a, "in", [b.value]) if fn == "eq" else (a, fn, [b.value])


def log_rows(n: float) -> float:
    return math.log10(max(n, 1.0))


_NO_WIDTHS: Mapping[str, float] = {}
# a scan's text column widths, by its statistics object and fields (as _SCAN_COLS)
_SCAN_WIDTHS: dict[tuple, tuple[object, dict]] = {}


def _scan_widths(plan: Scan) -> Mapping[str, float]:
    st = plan.provider.statistics()
    if not st.num_rows:
        return _NO_WIDTHS
    key = (id(st), plan.fields)
    hit = _SCAN_WIDTHS.get(key)
    if hit is not None and hit[0] is st:
        return hit[1]
    out: dict[str, float] = {}
    for f in plan.fields:
        if not (T.is_text(f.dtype) or pa.types.is_binary(f.dtype)):
            # fixed width: Arrow holds every value in full (a DECIMAL in 16 bytes) however
            # small Parquet's encoding made it
            continue
        cs = st.columns.get(f.name)
        if cs is not None and cs.bytes:
            # Arrow holds strings with 4-byte offsets beside the characters
            out[f.id] = cs.bytes / st.num_rows + 4
    if len(_SCAN_WIDTHS) >= 4096:
        _SCAN_WIDTHS.clear()
    _SCAN_WIDTHS[key] = (st, out)
    return out


# a table's column estimates, by its statistics object and the scan's fields: every optimizer
# pass builds a new Estimator, and a scan's estimates only change with the file statistics
_SCAN_COLS: dict[tuple, tuple[object, dict]] = {}


def _scan_columns(plan: Scan) -> dict[str, ColumnEstimate]:
    stats = plan.provider.statistics()
    key = (id(stats), plan.fields)
    hit = _SCAN_COLS.get(key)
    if hit is not None and hit[0] is stats:
        return hit[1]
    out: dict[str, ColumnEstimate] = {}
    n = stats.num_rows
    for f in plan.fields:
        cs = stats.columns.get(f.name)
        if cs is None:
            continue
        lo, hi = _as_number(cs.min), _as_number(cs.max)
        ndv = cs.distinct_count
        if ndv is None and lo is not None and hi is not None and n:
            if T.is_integer(f.dtype) or pa.types.is_date(f.dtype):
                ndv = min(n, hi - lo + 1)
            elif T.is_decimal(f.dtype):
                ndv = min(n, (hi - lo) * 10 ** f.dtype.scale + 1)
        out[f.id] = ColumnEstimate(ndv, lo, hi)
    if len(_SCAN_COLS) >= 4096:
        _SCAN_COLS.clear()
    _SCAN_COLS[key] = (stats, out)  # holds the statistics object: its id is not reused
    return out


def _one_side(plan: Join, ids: set[str]) -> tuple[LogicalPlan, list[ColumnRef]] | None:
    """(the input of `plan` holding all the columns `ids`, those columns there) for columns of
    one input or, in an inner join, equal through its keys to one input's columns (the
    class equalities of join_reorder name any column of a class: `s_suppkey` for the
    partsupp-supplier join's `ps_suppkey`); None when they span both inputs."""
    refs: dict[str, ColumnRef] = {}
    equal: dict[str, ColumnRef] = {}
    for side in (plan.left, plan.right):
        refs.update((f.id, ColumnRef(f)) for f in side.schema)
    if plan.kind == "inner":
        for a, b in plan.on:
            if isinstance(a, ColumnRef) and isinstance(b, ColumnRef) and a.dtype == b.dtype:
                equal.setdefault(a.id, b)
                equal.setdefault(b.id, a)
    for side in (plan.left, plan.right):
        own = set(side.column_ids)
        out: list[ColumnRef] = []
        for i in ids:
            if i in own:
                out.append(refs[i])
            elif i in equal and equal[i].id in own:
                out.append(equal[i])
            else:
                break
        else:
            return side, out
    return None


# id(sample) -> (weak reference to the sample, {(function, pattern): share of it kept})
_PATTERN_SHARES: dict[int, tuple[weakref.ref, dict[tuple[str, str], float | None]]] = {}


def _sample_share(values, fn: str, pattern: str) -> float | None:
    """The share of the sampled text `values` that `fn` (like, ilike, starts_with, ends_with,
    contains) with `pattern` keeps; None for another function or a pattern Arrow refuses."""
    import pyarrow.compute as pc

    try:
        if fn in ("like", "ilike"):
            hits = pc.match_like(values, pattern, ignore_case=fn == "ilike")
        elif fn == "starts_with":
            hits = pc.starts_with(values, pattern)
        elif fn == "ends_with":
            hits = pc.ends_with(values, pattern)
        elif fn == "contains":
            hits = pc.match_substring(values, pattern)
        else:
            return None
    except (pa.ArrowException, ValueError):
        return None
    kept = pc.sum(hits).as_py() or 0
    return min(1.0, max(kept, 0.5) / len(values))  # none in the sample: under 1 in 2n
