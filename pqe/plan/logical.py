"""Logical plan nodes: frozen, slotted dataclasses with a cached schema and invariant checks.

Each node states which SQL it implements. Children are reached through `children()` and
replaced with `with_children()`, so rules can be written generically.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING

from .. import types as T
from ..deep import checkpoint
from ..errors import InternalError
from .expr import AggCall, ColumnRef, Expr, Field, SortKey, column_ids

if TYPE_CHECKING:  # pragma: no cover
    from ..catalog import TableProvider

JOIN_KINDS = ("inner", "left", "right", "full", "semi", "anti")


class LogicalPlan:
    __slots__ = ()

    schema: tuple[Field, ...]

    def children(self) -> tuple[LogicalPlan, ...]:
        return ()

    def with_children(self, children: tuple[LogicalPlan, ...]) -> LogicalPlan:
        return self

    def expressions(self) -> tuple[Expr, ...]:
        """The expressions this node evaluates (for column-usage analysis)."""
        return ()

    @property
    def column_ids(self) -> tuple[str, ...]:
        schema = self.schema  # nodes share schema tuples (a filter's is its input's)
        hit = _IDS.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        ids = tuple(f.id for f in schema)
        if len(_IDS) >= _IDS_MAX:
            _IDS.clear()
        _IDS[id(schema)] = (schema, ids)  # the entry holds the tuple: its id is not reused
        return ids

    def field(self, column_id: str) -> Field:
        for f in self.schema:
            if f.id == column_id:
                return f
        raise InternalError(f"column {column_id} not in {type(self).__name__} schema")

    def __str__(self) -> str:
        from .explain import format_plan

        return format_plan(self)


# column ids by schema tuple: the optimizer asks for them tens of thousands of times per plan
_IDS: dict[int, tuple[tuple, tuple[str, ...]]] = {}
_IDS_MAX = 50_000


def _set_schema(node: LogicalPlan, schema: tuple[Field, ...]) -> None:
    object.__setattr__(node, "schema", schema)


def _check_refs(node: LogicalPlan, exprs, available: set[str]) -> None:
    stack = list(exprs)  # (a loop, not `walk`: every node built checks its expressions)
    seen: set[int] = set()  # (a node object shared by two parents: see expr.walk)
    while stack:
        e = stack.pop()
        if isinstance(e, ColumnRef):
            if e.field.id not in available:
                raise InternalError(
                    f"{type(node).__name__} references column {e.field.display} "
                    f"({e.field.id}) that its input does not produce")
        elif id(e) not in seen:
            seen.add(id(e))
            stack.extend(e.children())


@dataclass(frozen=True, slots=True)
class Scan(LogicalPlan):
    """FROM table: reads `provider`; `projection` (column positions) and `filters` are pushed in
    by the optimizer. `nested`: (column id, child names) for struct columns of which the query
    reads only those children (s.x, s['y']): the others are not read, and come back NULL."""

    table: str
    provider: TableProvider
    fields: tuple[Field, ...]
    projection: tuple[int, ...] | None = None
    filters: tuple[Expr, ...] = ()
    nested: tuple[tuple[str, tuple[str, ...]], ...] = ()
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        cols = self.fields if self.projection is None else tuple(
            self.fields[i] for i in self.projection)
        _set_schema(self, cols)
        _check_refs(self, self.filters, {f.id for f in self.fields})

    def expressions(self):
        return self.filters


@dataclass(frozen=True, slots=True)
class Values(LogicalPlan):
    """VALUES (...), (...): rows of constant expressions (also the one-row input of SELECT 1)."""

    fields: tuple[Field, ...]
    rows: tuple[tuple[Expr, ...], ...]
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        for row in self.rows:
            if len(row) != len(self.fields):
                raise InternalError("VALUES row width does not match its schema")
        _set_schema(self, self.fields)

    def expressions(self):  # (an outer reference, `(VALUES (a.x))`, is seen by decorrelation)
        return tuple(e for row in self.rows for e in row)


@dataclass(frozen=True, slots=True)
class Filter(LogicalPlan):
    """WHERE / HAVING: keep rows where `predicate` is TRUE."""

    input: LogicalPlan
    predicate: Expr
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if not (T.is_boolean(self.predicate.dtype) or T.is_null(self.predicate.dtype)):
            raise InternalError(f"filter predicate is {T.type_name(self.predicate.dtype)}")
        _check_refs(self, [self.predicate], set(self.input.column_ids))
        _set_schema(self, self.input.schema)

    def children(self):
        return (self.input,)

    def with_children(self, children):
        return replace(self, input=children[0])

    def expressions(self):
        return (self.predicate,)


@dataclass(frozen=True, slots=True)
class Project(LogicalPlan):
    """SELECT list: output column i is `exprs[i]`, described by `fields[i]`."""

    input: LogicalPlan
    exprs: tuple[Expr, ...]
    fields: tuple[Field, ...]
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if len(self.exprs) != len(self.fields):
            raise InternalError("projection expressions and fields differ in length")
        ids = [f.id for f in self.fields]
        if len(set(ids)) != len(ids):
            raise InternalError(f"projection produces duplicate column ids: {ids}")
        _check_refs(self, self.exprs, set(self.input.column_ids))
        _set_schema(self, self.fields)

    def children(self):
        return (self.input,)

    def with_children(self, children):
        return replace(self, input=children[0])

    def expressions(self):
        return self.exprs


@dataclass(frozen=True, slots=True)
class Join(LogicalPlan):
    """JOIN of every kind. `on` holds equi-join key pairs (left expr, right expr); `filter` the
    rest of the join condition. semi/anti output only the left columns. `null_aware` marks the
    anti join of NOT IN: a NULL on either side of the key makes the comparison unknown."""

    left: LogicalPlan
    right: LogicalPlan
    kind: str = "inner"
    on: tuple[tuple[Expr, Expr], ...] = ()
    filter: Expr | None = None
    null_aware: bool = False
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if self.kind not in JOIN_KINDS:
            raise InternalError(f"unknown join kind {self.kind}")
        lids, rids = set(self.left.column_ids), set(self.right.column_ids)
        if lids & rids:
            raise InternalError(f"join inputs share column ids {sorted(lids & rids)}")
        for lk, rk in self.on:
            _check_refs(self, [lk], lids)
            _check_refs(self, [rk], rids)
            if lk.dtype != rk.dtype:
                raise InternalError(
                    f"join key types differ: {T.type_name(lk.dtype)} vs {T.type_name(rk.dtype)}")
        if self.filter is not None:
            _check_refs(self, [self.filter], lids | rids)
        left, right = self.left.schema, self.right.schema
        if self.kind in ("semi", "anti"):
            _set_schema(self, left)
            return
        if self.kind in ("left", "full"):
            right = tuple(f.with_nullable(True) for f in right)
        if self.kind in ("right", "full"):
            left = tuple(f.with_nullable(True) for f in left)
        _set_schema(self, left + right)

    def children(self):
        return (self.left, self.right)

    def with_children(self, children):
        return replace(self, left=children[0], right=children[1])

    def expressions(self):
        out = [e for pair in self.on for e in pair]
        if self.filter is not None:
            out.append(self.filter)
        return tuple(out)


@dataclass(frozen=True, slots=True)
class Aggregate(LogicalPlan):
    """GROUP BY `group` computing `aggs`; output: group columns then aggregate columns.
    With no group keys it yields exactly one row. `local`: a pre-aggregation whose consumer
    combines its rows again (optimizer.eager_aggregate), so each partition may aggregate its
    own rows and a group may come out once per partition."""

    input: LogicalPlan
    group: tuple[Expr, ...]
    group_fields: tuple[Field, ...]
    aggs: tuple[AggCall, ...]
    agg_fields: tuple[Field, ...]
    local: bool = False
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if len(self.group) != len(self.group_fields) or len(self.aggs) != len(self.agg_fields):
            raise InternalError("aggregate expressions and fields differ in length")
        for a in self.aggs:
            if not isinstance(a, AggCall):
                raise InternalError(f"aggregate list holds a non-aggregate {a}")
        _check_refs(self, self.group + self.aggs, set(self.input.column_ids))
        _set_schema(self, self.group_fields + self.agg_fields)

    def children(self):
        return (self.input,)

    def with_children(self, children):
        return replace(self, input=children[0])

    def expressions(self):
        return self.group + self.aggs


@dataclass(frozen=True, slots=True)
class Sort(LogicalPlan):
    """ORDER BY; with `fetch` it is a top-N (ORDER BY ... LIMIT n)."""

    input: LogicalPlan
    keys: tuple[SortKey, ...]
    fetch: int | None = None
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        _check_refs(self, [k.expr for k in self.keys], set(self.input.column_ids))
        _set_schema(self, self.input.schema)

    def children(self):
        return (self.input,)

    def with_children(self, children):
        return replace(self, input=children[0])

    def expressions(self):
        return tuple(k.expr for k in self.keys)


@dataclass(frozen=True, slots=True)
class Limit(LogicalPlan):
    """LIMIT / OFFSET."""

    input: LogicalPlan
    fetch: int | None
    offset: int = 0
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        _set_schema(self, self.input.schema)

    def children(self):
        return (self.input,)

    def with_children(self, children):
        return replace(self, input=children[0])


@dataclass(frozen=True, slots=True)
class Union(LogicalPlan):
    """UNION ALL of inputs with positionally matching columns (DISTINCT is an Aggregate on top)."""

    inputs: tuple[LogicalPlan, ...]
    fields: tuple[Field, ...]
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        for p in self.inputs:
            if len(p.schema) != len(self.fields):
                raise InternalError("UNION inputs differ in width")
            for a, b in zip(p.schema, self.fields, strict=True):
                if a.dtype != b.dtype:
                    raise InternalError(
                        f"UNION input column {a.display} is {T.type_name(a.dtype)}, "
                        f"expected {T.type_name(b.dtype)}")
        _set_schema(self, self.fields)

    def children(self):
        return self.inputs

    def with_children(self, children):
        return replace(self, inputs=tuple(children))


@dataclass(frozen=True, slots=True)
class Window(LogicalPlan):
    """Window functions: the input's columns plus one column per call (`fields[i]`)."""

    input: LogicalPlan
    calls: tuple[Expr, ...]
    fields: tuple[Field, ...]
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if len(self.calls) != len(self.fields):
            raise InternalError("window calls and fields differ in length")
        _check_refs(self, self.calls, set(self.input.column_ids))
        _set_schema(self, self.input.schema + self.fields)

    def children(self):
        return (self.input,)

    def with_children(self, children):
        return replace(self, input=children[0])

    def expressions(self):
        return self.calls


@dataclass(frozen=True, slots=True)
class SingleRow(LogicalPlan):
    """Checks that a scalar subquery yields at most one row (an error otherwise)."""

    input: LogicalPlan
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        _set_schema(self, self.input.schema)

    def children(self):
        return (self.input,)

    def with_children(self, children):
        return replace(self, input=children[0])


@dataclass(frozen=True, slots=True)
class WorkTable(LogicalPlan):
    """Inside the recursive term of WITH RECURSIVE: the rows of the recursive CTE made by the
    previous iteration (`which="delta"`) or by every iteration so far (`which="all"`, used to
    drop rows already produced under UNION). `name` identifies the RecursiveQuery reading it."""

    name: str
    fields: tuple[Field, ...]
    which: str = "delta"
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if self.which not in ("delta", "all"):
            raise InternalError(f"unknown work table {self.which}")
        _set_schema(self, self.fields)


@dataclass(frozen=True, slots=True)
class RecursiveQuery(LogicalPlan):
    """WITH RECURSIVE name AS (anchor UNION [ALL] step): run `anchor`, then `step` over the
    previous iteration's rows (WorkTable nodes named `name`) until an iteration yields no rows
    (with `distinct`, no rows not seen before). The executor runs the iterations, so timeouts,
    cancellation and progress apply as to any operator; `max_iterations` bounds a runaway."""

    name: str
    anchor: LogicalPlan
    step: LogicalPlan
    fields: tuple[Field, ...]
    distinct: bool = False
    max_iterations: int = 10_000
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        for part in (self.anchor, self.step):
            if len(part.schema) != len(self.fields):
                raise InternalError("recursive query inputs differ in width")
            for a, b in zip(part.schema, self.fields, strict=True):
                if a.dtype != b.dtype:
                    raise InternalError(
                        f"recursive query column {a.display} is {T.type_name(a.dtype)}, "
                        f"expected {T.type_name(b.dtype)}")
        _set_schema(self, self.fields)

    def children(self):
        return (self.anchor, self.step)

    def with_children(self, children):
        return replace(self, anchor=children[0], step=children[1])


class UserFunction:
    """A Python function in a plan (`df.map_batches(fn)`): compared, hashed and printed by a
    token made when the DataFrame method was called, never by the function itself (which
    may be unhashable, and whose repr holds a memory address). It pickles with the function:
    Dask ships it to workers with cloudpickle."""

    __slots__ = ("fn", "name", "token")

    def __init__(self, fn, name: str, token: str):
        self.fn = fn
        self.name = name
        self.token = token

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UserFunction) and other.token == self.token

    def __hash__(self) -> int:
        return hash(self.token)

    def __repr__(self) -> str:
        return f"UserFunction({self.name!r}, {self.token!r})"

    def __getstate__(self):
        return (self.fn, self.name, self.token)

    def __setstate__(self, state) -> None:
        self.fn, self.name, self.token = state


@dataclass(frozen=True, slots=True)
class MapBatches(LogicalPlan):
    """`df.map_batches(fn)`: a Python function from a pyarrow Table to a pyarrow Table, run on
    every partition of `input` (its columns named by `input_names`); `fields` (fresh ids)
    describe what it returns. Opaque to the optimizer: filters below it are pushed down as
    usual, nothing moves through it, and it reads every column of its input."""

    input: LogicalPlan
    fn: UserFunction
    input_names: tuple[str, ...]
    fields: tuple[Field, ...]
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if len(self.input_names) != len(self.input.schema):
            raise InternalError("map_batches input names and input columns differ in length")
        _set_schema(self, self.fields)

    def children(self):
        return (self.input,)

    def with_children(self, children):
        return replace(self, input=children[0])


@dataclass(frozen=True, slots=True)
class Sample(LogicalPlan):
    """TABLESAMPLE / USING SAMPLE: a random subset of the input's rows. `method` "bernoulli"
    keeps each row with probability size% (`unit` "percent"); "system" keeps each block of
    rows (2,048 consecutive rows of the input's order) with that probability; "reservoir"
    keeps exactly `size` rows (`unit` "rows") or round-half-up(size% of the rows). The
    choice depends only on `seed` and each row's position in the input, so it is the same
    across runs, partitionings and schedulers (`repeatable`: the seed was given)."""

    input: LogicalPlan
    method: str
    unit: str
    size: float
    seed: int
    repeatable: bool = False
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if self.method not in ("bernoulli", "system", "reservoir"):
            raise InternalError(f"unknown sample method {self.method}")
        if self.unit not in ("percent", "rows") or (self.unit == "rows" and self.method != "reservoir"):
            raise InternalError(f"sample method {self.method} cannot take {self.unit}")
        _set_schema(self, self.input.schema)

    def children(self):
        return (self.input,)

    def with_children(self, children):
        return replace(self, input=children[0])


@dataclass(frozen=True, slots=True)
class CTEScan(LogicalPlan):
    """Reads the rows of a CTE that is computed once: the definition named `name` of the
    enclosing `WithCTE`. Each reference has its own `fields` (fresh column ids), in the
    order of the definition's columns."""

    name: str
    fields: tuple[Field, ...]
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        _set_schema(self, self.fields)


@dataclass(frozen=True, slots=True)
class WithCTE(LogicalPlan):
    """WITH name AS MATERIALIZED (...): `definitions[i]` computes CTE `names[i]` once, and
    CTEScan nodes in `input` (or in later definitions) read its rows. Used for CTEs that are
    read several times and large (inlining each reference would copy the plan: a CTE that
    joins the previous one to itself doubles at each level). The output is `input`'s."""

    input: LogicalPlan
    names: tuple[str, ...]
    definitions: tuple[LogicalPlan, ...]
    schema: tuple[Field, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self):
        if len(self.names) != len(self.definitions):
            raise InternalError("WITH names and definitions differ in length")
        _set_schema(self, self.input.schema)

    def children(self):
        return (*self.definitions, self.input)

    def with_children(self, children):
        return replace(self, definitions=tuple(children[:-1]), input=children[-1])


# ---- helpers -----------------------------------------------------------------------------------


def one_row_aggregate(plan: LogicalPlan) -> Aggregate | None:
    """The aggregate without GROUP BY that `plan` is, under projections or not: exactly one
    row, whatever its input holds."""
    while isinstance(plan, Project):
        plan = plan.input
    if isinstance(plan, Aggregate) and not plan.group and not plan.local:
        return plan
    return None


def walk_plan(plan: LogicalPlan):
    """Pre-order traversal of plan nodes (a planning checkpoint: pqe.deep)."""
    checkpoint()
    stack = [plan]
    while stack:
        p = stack.pop()
        yield p
        stack.extend(reversed(p.children()))


def with_kids(plan: LogicalPlan, kids: tuple[LogicalPlan, ...]) -> LogicalPlan:
    """`plan` over `kids`: `plan` itself when they are its children, so a rewrite that
    changed nothing below hands back the node instead of an equal copy (validated again as
    it is built, then compared node by node by the optimizer)."""
    if all(a is b for a, b in zip(kids, plan.children(), strict=True)):
        return plan
    return plan.with_children(kids)


def transform_up(plan: LogicalPlan, fn) -> LogicalPlan:
    """Bottom-up rewrite: fn(node) returns a replacement or None.

    Equal subtrees (a CTE or view read twice) are rewritten once and share the result. A rule
    that mints column ids (eager aggregation's partial sums) would otherwise give each copy
    its own, the copies would no longer be equal, and the physical planner, which runs equal
    subtrees once, would run both (TPC-DS Q23's best_ss_customer: 2.75M rows aggregated
    twice)."""
    done: dict[int, list[tuple[LogicalPlan, LogicalPlan]]] = {}
    shared = _FINGERPRINTS.get()
    # nodes whose id() keys `prints` stay alive in `keep`
    prints, keep = shared if shared is not None else ({}, [])

    def go(node: LogicalPlan) -> LogicalPlan:
        checkpoint()  # (a statement's timeout and cancellation: pqe.deep)
        fp = fingerprint(node, prints, keep)
        bucket = done.setdefault(fp, [])
        for other, out in bucket:
            if other is node or other == node:
                return out
        kids = node.children()
        p = with_kids(node, tuple(go(k) for k in kids))
        out = fn(p)
        out = p if out is None else out
        bucket.append((node, out))
        return out

    return go(plan)


_FINGERPRINTS: ContextVar[tuple[dict, list] | None] = ContextVar("pqe_fingerprints", default=None)


@contextlib.contextmanager
def shared_fingerprints():
    """Inside, every transform_up shares one table of fingerprints (and keeps its nodes
    alive): the optimizer's rules each walk the same plan, mostly unchanged between them, and
    hashing every node's expressions again in each walk was a third of optimizing (TPC-DS
    Q14: 176 ms)."""
    token = _FINGERPRINTS.set(({}, []))
    try:
        yield
    finally:
        _FINGERPRINTS.reset(token)


def fingerprint(node: LogicalPlan, prints: dict[int, int], keep: list) -> int:
    """A hash of the subtree, computed once per node from its children's and kept in
    `prints` by id() (`keep` holds the nodes alive so ids are not reused): hashing a frozen
    node hashes its whole subtree, and a 5,000-branch UNION would cost n^2. Equal subtrees
    (a CTE or view read twice) have equal fingerprints. A node holding an unhashable value
    gets its own identity: it is never taken for another."""
    hit = prints.get(id(node))
    if hit is not None:
        return hit
    kids = tuple(fingerprint(k, prints, keep) for k in node.children())
    own = tuple(getattr(node, f.name) for f in fields(node)
                if f.name != "schema" and not _holds_plans(getattr(node, f.name)))
    try:
        fp = hash((type(node).__name__, own, kids))
    except TypeError:
        fp = hash(("id", id(node)))
    prints[id(node)] = fp
    keep.append(node)
    return fp


def _holds_plans(value) -> bool:
    return isinstance(value, LogicalPlan) or (
        isinstance(value, tuple) and bool(value) and isinstance(value[0], LogicalPlan))


def referenced_ids(plan: LogicalPlan) -> set[str]:
    out: set[str] = set()
    for e in plan.expressions():
        out |= column_ids(e)
    return out


def map_expressions(plan: LogicalPlan, fn) -> LogicalPlan:
    """The node with `fn` applied to each of its own expressions (children untouched)."""
    from .expr import AggCall, SortKey

    if isinstance(plan, Filter):
        new = fn(plan.predicate)
        return plan if new is plan.predicate else replace(plan, predicate=new)
    if isinstance(plan, Project):
        exprs = tuple(fn(e) for e in plan.exprs)
        return plan if all(a is b for a, b in zip(exprs, plan.exprs, strict=True)) else replace(plan, exprs=exprs)
    if isinstance(plan, Scan):
        filters = tuple(fn(e) for e in plan.filters)
        return plan if all(a is b for a, b in zip(filters, plan.filters, strict=True)) else replace(plan, filters=filters)
    if isinstance(plan, Join):
        on = tuple((fn(a), fn(b)) for a, b in plan.on)
        filt = fn(plan.filter) if plan.filter is not None else None
        if filt is plan.filter and all(x is y for p, q in zip(on, plan.on, strict=True) for x, y in zip(p, q, strict=True)):
            return plan
        return replace(plan, on=on, filter=filt)
    # (each node below is handed back as it is when `fn` changed none of its expressions:
    # rules run over every node of every plan, and an equal copy is validated again as it is
    # built, then compared node by node with the original)
    if isinstance(plan, Aggregate):
        group = tuple(fn(e) for e in plan.group)
        aggs = []
        for a in plan.aggs:
            kids = a.children()
            new_kids = tuple(fn(c) for c in kids)
            if all(x is y for x, y in zip(new_kids, kids, strict=True)):
                aggs.append(a)
                continue
            new = a.with_children(new_kids)
            aggs.append(new if isinstance(new, AggCall) else a)
        if all(x is y for x, y in zip(group, plan.group, strict=True)) and \
                all(x is y for x, y in zip(aggs, plan.aggs, strict=True)):
            return plan
        return replace(plan, group=group, aggs=tuple(aggs))
    if isinstance(plan, Sort):
        exprs = [fn(k.expr) for k in plan.keys]
        if all(e is k.expr for e, k in zip(exprs, plan.keys, strict=True)):
            return plan
        keys = tuple(SortKey(e, k.ascending, k.nulls_first)
                     for e, k in zip(exprs, plan.keys, strict=True))
        return replace(plan, keys=keys)
    if isinstance(plan, Window):
        calls = []
        for c in plan.calls:
            kids = c.children()
            new_kids = tuple(fn(x) for x in kids)
            same = all(x is y for x, y in zip(new_kids, kids, strict=True))
            calls.append(c if same else c.with_children(new_kids))
        if all(x is y for x, y in zip(calls, plan.calls, strict=True)):
            return plan
        return replace(plan, calls=tuple(calls))
    return plan
