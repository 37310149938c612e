"""Physical plan nodes: partitioned operators with a stated output distribution.

Every node knows its number of output partitions (`n`) and how rows are distributed over them
(`dist`): `Hash(keys)` (rows with equal key values share a partition), `Single` (one
partition), or `Any`. Exchanges (`ExchangeExec`) are the only nodes that move rows between
partitions; everything else runs partition by partition and is fused into one task per
partition when lowered to Dask.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import types as T
from ..plan.explain import format_expr, one_line
from ..plan.expr import Expr, Field


@dataclass(frozen=True)
class Dist:
    """kind "hash": rows are in partition hash(keys) % n (two inputs hashed alike are
    co-partitioned); "clustered": rows with equal keys never span two partitions (disjoint key
    ranges per partition, from Parquet statistics); "single"; "any"."""

    kind: str
    keys: tuple[str, ...] = ()

    def groups_within(self, columns) -> bool:
        """Do rows that agree on `columns` always share a partition?"""
        return (self.kind in ("hash", "clustered") and bool(self.keys)
                and set(self.keys) <= set(columns)) or self.kind == "single"

    def __str__(self) -> str:
        if self.kind in ("hash", "clustered"):
            return f"{self.kind}({', '.join(self.keys)})"
        return self.kind


ANY = Dist("any")
SINGLE = Dist("single")


@dataclass(frozen=True)
class AggSpec:
    """One aggregate of a physical aggregate: fn over column `arg` (None for count(*)). A
    user-defined aggregate (`udf`) may take more arguments: columns `arg`, then `more`."""

    fn: str
    arg: str | None
    out: str
    dtype: object  # pa.DataType of the final value
    arg_dtype: object = None
    more: tuple[str, ...] = ()
    udf: object = None  # pqe.plan.udf.AggregateUDF
    # constant arguments after the first (STRING_AGG's separator, a quantile's fraction)
    params: tuple = ()
    # the order of the values inside the aggregate: (column, ascending, nulls_first) keys
    order: tuple = ()


@dataclass(frozen=True)
class Bound:
    """A window frame bound."""

    kind: str  # "unbounded_preceding" | "preceding" | "current" | "following" | "unbounded_following"
    offset: object = None


@dataclass(frozen=True)
class WindowSpec:
    """One window function over column ids (arguments already computed into columns): what
    the window kernel (kernels.window) evaluates."""

    fn: str
    args: tuple[str, ...]
    out: str
    dtype: object
    mode: str = "range"  # frame mode: "rows" | "range" | "groups"
    start: Bound = Bound("unbounded_preceding")
    end: Bound = Bound("current")
    has_order: bool = False
    consts: tuple = ()  # constant arguments (ntile buckets, lag offset/default, nth n)
    exclude: str = "no_others"  # frame EXCLUDE: "current_row" | "group" | "ties"
    ignore_nulls: bool = False  # IGNORE NULLS (value functions and lag/lead)
    distinct: bool = False  # an aggregate of each distinct value of its frame once

    def describe(self, names) -> str:
        text = f"{self.fn}({'DISTINCT ' if self.distinct else ''}{_cols(self.args, names)})"
        if self.ignore_nulls:
            text += " IGNORE NULLS"
        if self.mode == "groups":
            text += " [GROUPS]"
        if self.exclude != "no_others":
            text += f" [EXCLUDE {self.exclude.replace('_', ' ').upper()}]"
        return text


# Dense (perfect-hash) joins: a broadcast build side whose unique integer key spans at most
# this many values gets a lookup array (kernels.dense_join builds it; the planner decides)
DENSE_MAX_SLOTS = 1 << 26  # 256 MB of int32 slots at most
DENSE_SLACK = 1 << 20      # ranges up to this many slots are always fine
DENSE_DENSITY = 64         # otherwise at most 64x the build rows (256 B of slots per row)
# past this many slots of the key range per build row, and this many slots in all (sparse
# keys over a wide range: TPC-H SF10 Q5's 2.3M orders of 1994 span all 60M order keys, a
# 240 MB array of int32 slots), the index is a bitmap of the range with a rank per 64-bit word
# instead: under 1.5 bits per slot and 4 bytes per row. Q5 at SF10: peak RSS 817 -> 644 MiB,
# 4.07 -> 3.48 s. A smaller array stays: its probe is one gather where the bitmap's is eight
# array operations (at SF1, where no array passes 24 MB, the bitmap made Q5, Q7, Q8, Q9 and
# Q17 5-15% slower)
SPARSE_SLOTS_PER_ROW = 8
SPARSE_MIN_SLOTS = 1 << 24
# a bitmap index may span up to this many slots per build row (0.19 bytes a slot: 192 bytes
# of index per row, where an array at DENSE_DENSITY takes 256). TPC-H SF10 Q10's 573k orders
# of one quarter span 60M order keys (105 per row): hashed again in each of 15 lineitem probe
# partitions they took 2.6 s of join time
BITMAP_DENSITY = 1024


# a broadcast inner join on one integer key, probed by more than one partition, whose build
# is estimated at this many rows or more, groups the build's rows by key once
# (kernels.dense_join.RunsTable) instead of hashing the build in every probe partition
RUNS_MIN_BUILD_ROWS = 50_000


def takes_runs(join) -> bool:
    """Whether the broadcast HashJoinExec `join` (not dense) probes runs of its build's rows
    (execution.lower; the build task hands back the table itself when its key does not
    qualify, and the probes hash-join)."""
    return (join.kind == "inner" and len(join.right_keys) == 1 and join.left.n > 1
            and not join.null_aware and not join.dense
            and join.est_build_rows >= RUNS_MIN_BUILD_ROWS)


# a broadcast semi/anti join's build is made a key set when estimated at this many rows or more:
# a smaller build costs Acero little to hash again per partition (TPC-H Q20's ~8k (partkey,
# suppkey) pairs behind a key filter: 0.359 s hashed, 0.373 s as a key set; TPC-DS q78's 287k
# returns: 0.95 s hashed, 0.90 s as a key set, medians of 5 alternating runs)
KEY_SET_MIN_BUILD_ROWS = 50_000


def takes_key_set(join) -> bool:
    """Whether the broadcast HashJoinExec `join` (not dense) is a semi or anti join that looks
    its probe rows up in its build's packed distinct keys (kernels.dense_join.KeySet, built
    once; the build task hands back the table itself when the keys are not integers, and
    the probes hash-join): no condition beside the keys, and not NOT IN's NULL-aware anti
    join. Probed by one partition, Acero's hash join builds once too."""
    if not (join.kind in ("semi", "anti") and join.filter is None and not join.null_aware
            and not join.dense and join.left.n > 1
            and join.est_build_rows >= KEY_SET_MIN_BUILD_ROWS
            and (join.mode == "broadcast" or (join.mode != "build_left" and join.right.n == 1))):
        return False
    left = {f.id: f.dtype for f in join.left.schema}
    right = {f.id: f.dtype for f in join.right.schema}
    return all(a in left and b in right and T.is_integer(left[a]) and T.is_integer(right[b])
               for a, b in zip(join.left_keys, join.right_keys, strict=True))


def dense_fits(span: int, rows: float) -> bool:
    """Whether keys spanning `span` values over `rows` build rows get a dense index: up to
    DENSE_DENSITY slots a row (or DENSE_SLACK slots) an array; sparser keys up to
    BITMAP_DENSITY slots a row, the array while the span is at most SPARSE_MIN_SLOTS (TPC-H
    SF1 Q3's 147k orders over 6M order keys: 24 MB built once, where Acero hashed them in
    each of 4 probe partitions, 0.19-0.22 -> 0.17-0.19 s), the bitmap past it."""
    if span > DENSE_MAX_SLOTS:
        return False
    if span <= max(DENSE_SLACK, DENSE_DENSITY * rows):
        return True
    # sparser keys: a bitmap over a wide range; over a range of at most SPARSE_MIN_SLOTS, the
    # array (at most 64 MB, built once) rather than a hash table built in every partition
    return span <= BITMAP_DENSITY * rows


def bitmap_form(span: int, rows: float) -> bool:
    """Whether the index over `span` slots for `rows` keys is the bitmap (else an array)."""
    return span > max(SPARSE_MIN_SLOTS, SPARSE_SLOTS_PER_ROW * rows)


def dense_index_bytes(span: int, rows: float) -> float:
    """Bytes of the lookup structure kernels.dense_join builds (besides the build table)."""
    if bitmap_form(span, rows):
        return span * 3 / 16 + 4 * rows  # bits and a rank per 64 slots, a row per key
    return 4.0 * (span + 2)


# DECIMAL arithmetic on unscaled int64: inputs of at most this many digits
MAX_INT64_PRECISION = 18


def fits_int64(t) -> bool:
    return T.is_decimal(t) and t.precision <= MAX_INT64_PRECISION


def int64_decimal_applicable(exprs, summed=()) -> bool:
    """Worth it and possible: some decimal arithmetic, or a decimal CASE among `summed` (the
    expressions an aggregate above only sums or averages, which it takes as int64 as they
    are: a conditional sum, TPC-DS Q9's `avg(x) FILTER (WHERE ...)`), or a DECIMAL of at
    most 15 digits cast to DOUBLE (the unscaled int64 as a double, divided by 10^scale: one
    correct rounding, as the decimal128 path's text round trip gives, ~20x cheaper: what
    STDDEV and CORR of a DECIMAL read), and every decimal input fits int64. (A CASE whose
    result is also counted or grouped on would be turned back into decimal128 at once:
    TPC-DS Q28 took 20% longer so.)"""
    from ..plan.expr import Call, Case, Cast, ColumnRef, walk

    nodes = [x for e in exprs for x in walk(e)]
    if not any(isinstance(x, Call) and x.fn in ("add", "subtract", "multiply")
               and T.is_decimal(x.dtype) for x in nodes) \
            and not any(isinstance(x, Cast) and not x.try_ and T.is_floating(x.dtype)
                        and T.is_decimal(x.arg.dtype) and x.arg.dtype.precision <= 15
                        for x in nodes) \
            and not any(isinstance(e, Case) and T.is_decimal(e.dtype) for e in summed):
        return False
    return all(fits_int64(x.dtype) for x in nodes
               if isinstance(x, ColumnRef) and T.is_decimal(x.dtype))


def _order_text(order, names) -> str:
    if not order:
        return ""
    return " ORDER BY " + ", ".join(
        names.get(c, c) + ("" if asc else " DESC")
        + ("" if nulls_first == (not asc) else (" NULLS FIRST" if nulls_first else " NULLS LAST"))
        for c, asc, nulls_first in order)


SEGMENT_AGGREGATES = frozenset({"count_star", "count", "sum", "avg", "min", "max"})


def segments_applicable(key_type, aggs) -> bool:
    """Whether a one-key aggregate can reduce sorted runs (kernels.aggregate): an integer or
    date key, aggregates over integers, floats or decimals that fit int64."""
    import pyarrow as pa

    if not (pa.types.is_integer(key_type) or pa.types.is_date(key_type)):
        return False
    for s in aggs:
        if s.fn not in SEGMENT_AGGREGATES:
            return False
        at = s.arg_dtype
        if at is not None and not (T.is_integer(at) or T.is_floating(at) or fits_int64(at)):
            return False
    return True


@dataclass(eq=False)
class PhysicalPlan:
    schema: tuple[Field, ...]
    n: int
    dist: Dist
    # bytes this operator holds in memory at once (builds, gathers, shuffles), estimated by
    # the planner from statistics; 0 for operators that stream partition by partition
    est_bytes = 0.0
    # the planner's estimates of a join's build rows and an aggregate's input rows (read by
    # physical.planner._build_text_encoded); not part of the plan's text
    est_build_rows = math.inf
    est_input_rows = 0.0

    def children(self) -> tuple[PhysicalPlan, ...]:
        return ()

    def describe(self, names: dict[str, str]) -> str:
        return type(self).__name__


def is_volatile_plan(plan: PhysicalPlan) -> bool:
    """Whether some operator of `plan` computes a volatile expression (random(), a user
    function not registered as deterministic: plan.expr.is_volatile): run again, such a task
    gives other values (a cluster recomputes the tasks of a lost worker)."""
    from dataclasses import fields

    from ..plan.expr import is_volatile

    def holds(value) -> bool:
        if isinstance(value, Expr):
            return is_volatile(value)
        if isinstance(value, (tuple, list)):
            return any(holds(v) for v in value)
        return False

    stack, seen = [plan], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if any(holds(getattr(node, f.name, None)) for f in fields(node)
               if f.name not in ("schema", "dist")):
            return True
        stack.extend(node.children())
    return False


def _cols(ids, names) -> str:
    return ", ".join(names.get(i, i) for i in ids)


def _expr(e: Expr) -> str:
    return format_expr(e)


@dataclass(eq=False)
class ScanExec(PhysicalPlan):
    """Reads Parquet (or CSV) files: `parts[i]` are the row groups of partition i; `columns` are
    (file column, id) pairs; `filters` are applied inside the reader (pyarrow.dataset, with
    row-group pruning by statistics)."""

    table: str = ""
    provider: object = None
    columns: tuple[tuple[str, str], ...] = ()
    filters: tuple[Expr, ...] = ()
    parts: tuple[tuple, ...] = ()
    total_units: int = 0
    kept_units: int = 0
    dict_columns: tuple[str, ...] = ()  # low-cardinality text columns read as dictionaries
    encoded: tuple[str, ...] = ()  # of those, the ones returned still dictionary-encoded
    # shared by several consumers, each reaching a join with a dynamic filter on this scan:
    # one such join per consumer; the scan reads the units inside any of their build ranges
    dynamic_joins: tuple = ()
    # struct columns read as some children only: (file column, child names)
    nested: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # whether the units may be dealt out to the partitions anew at run time, in order, in
    # contiguous runs of similar row counts (see ops.ReadFiles): true unless the partitions'
    # key ranges (`dist` clustered) would then overlap
    resplit: bool = False

    def describe(self, names):
        kids = dict(self.nested)
        cols = ", ".join(c + (f".{{{', '.join(kids[c])}}}" if c in kids else "")
                         for c, _ in self.columns)
        kind = "ParquetScan" if self.provider.kind == "parquet" else "CsvScan"
        out = f"{kind}: {self.table} columns=[{cols}]"
        if self.filters:
            out += " filters=[" + ", ".join(_expr(f) for f in self.filters) + "]"
        if self.dict_columns:
            out += " dictionary=[" + ", ".join(
                c + (" (encoded)" if c in self.encoded else "") for c in self.dict_columns) + "]"
        if self.dynamic_joins:
            column = self.dynamic_joins[0].runtime_filter[1]
            out += f" dynamic_filter=[{column}: any of {len(self.dynamic_joins)} builds]"
        unit = "row_groups" if self.provider.kind == "parquet" else "files"
        out += f" {unit}={self.kept_units}/{self.total_units}"
        return out


@dataclass(eq=False)
class MemoryScanExec(PhysicalPlan):
    """Reads slices of an in-memory Arrow table."""

    table: str = ""
    provider: object = None
    columns: tuple[tuple[str, str], ...] = ()
    filters: tuple[Expr, ...] = ()
    slices: tuple[tuple[int, int], ...] = ()

    def describe(self, names):
        cols = ", ".join(c for c, _ in self.columns)
        out = f"MemoryScan: {self.table} columns=[{cols}]"
        if self.filters:
            out += " filters=[" + ", ".join(_expr(f) for f in self.filters) + "]"
        return out


@dataclass(eq=False)
class DaskScanExec(PhysicalPlan):
    """Reads the partitions of a dask DataFrame (its graph becomes part of the query's)."""

    table: str = ""
    provider: object = None
    columns: tuple[tuple[str, str], ...] = ()
    filters: tuple[Expr, ...] = ()

    def describe(self, names):
        cols = ", ".join(c for c, _ in self.columns)
        out = f"DaskScan: {self.table} columns=[{cols}]"
        if self.filters:
            out += " filters=[" + ", ".join(_expr(f) for f in self.filters) + "]"
        return out


@dataclass(eq=False)
class ValuesExec(PhysicalPlan):
    rows: tuple[tuple[Expr, ...], ...] = ()

    def describe(self, names):
        return f"Values: {len(self.rows)} rows"


@dataclass(eq=False)
class ProjectExec(PhysicalPlan):
    """Filter (optional) then project, per partition. `int64_decimal`: DECIMAL arithmetic
    runs on unscaled int64 with checked kernels (every decimal input fits 18 digits), falling
    back to decimal128 kernels for a partition whose values overflow them."""

    input: PhysicalPlan = None
    exprs: tuple[Expr, ...] = ()
    predicate: Expr | None = None
    int64_decimal: bool | None = None  # None: decided from the expressions

    def __post_init__(self):
        if self.int64_decimal is None:
            every = list(self.exprs) + ([self.predicate] if self.predicate is not None else [])
            self.int64_decimal = int64_decimal_applicable(every)

    def children(self):
        return (self.input,)

    def describe(self, names):
        parts = []
        if self.predicate is not None:
            parts.append(f"Filter: {_expr(self.predicate)}")
        items = []
        for e, f in zip(self.exprs, self.schema, strict=True):
            text = _expr(e)
            items.append(text if text in (f.name, f.display) else f"{text} AS {f.name}")
        head = "Project[int64-decimal]" if self.int64_decimal else "Project"
        parts.append(f"{head}: {', '.join(items)}")
        return " -> ".join(parts)


@dataclass(eq=False)
class HashJoinExec(PhysicalPlan):
    """Hash join (Acero), building a hash table on the right input. mode 'broadcast': the
    right input is gathered and every left partition probes it; 'partitioned': both inputs
    are hash-partitioned on the keys and partition i joins with partition i; 'build_left'
    (semi, anti and left): the small left input is gathered and hashed, each right partition
    probes it, and the left rows matched in any partition are kept (or dropped); a left join
    emits each right partition's matched pairs and, in one more partition, the left rows no
    partition matched."""

    left: PhysicalPlan = None
    right: PhysicalPlan = None
    kind: str = "inner"
    left_keys: tuple[str, ...] = ()
    right_keys: tuple[str, ...] = ()
    filter: Expr | None = None
    mode: str = "broadcast"
    null_aware: bool = False
    # the broadcast build becomes one lookup array (kernels.dense_join) shared by every probe
    # partition; the build checks the key is unique and narrow and else hashes as usual
    dense: bool = False
    # a dynamic filter (inner and semi broadcast joins): (scan, file column, key position,
    # (min, max) of the column in each unit of each scan partition or None, the scan's field
    # of the column, the column's (min, max)) when probe key `left_keys[position]` is that
    # column of a Parquet scan below the probe side. The scan's tasks wait for the build,
    # then keep the rows inside the build keys' [min, max] when it is narrow, and skip the
    # units whose range misses it when the row groups are sorted or clustered by the column
    # (the unit ranges are known) (planner._dynamic_filter, execution.ops.ReadFiles)
    runtime_filter: tuple | None = None
    # the key pairs (positions) of a broadcast hash join (inner or semi, not dense) whose
    # build keys may filter the probe rows before the join: at run time the build's distinct
    # values of the one that fills the smallest share of its range, when at most half, drop
    # the probe rows without one (kernels.dense_join.KeyFilter)
    key_filter: tuple[int, ...] = ()
    # the build's keys filter the probe scan's rows in the scan's own filter pass (inner and
    # semi broadcast joins, dense or with a key filter): (scan, file column name per key
    # position or None), planner._key_pushdown
    key_pushdown: tuple | None = None
    # probe-side text columns that its scan returns still dictionary-encoded (the scan lists
    # them as encoded): the join carries the indices and decodes only the rows it outputs
    decode: tuple[str, ...] = ()
    # text columns of a dense build that the build dictionary-encodes (group keys computed on
    # the build side, or read as text): the probes gather int32 indices for them
    encode_build: tuple[str, ...] = ()
    # build_left semi/anti: each right partition meets the left rows with its extremes per
    # key of the condition's right-side expression (plan.extremes.per_partition: the
    # expression, the extremes, the condition over them) instead of with its rows
    extremes: tuple | None = None

    def children(self):
        return (self.left, self.right)

    def describe(self, names):
        keys = ", ".join(f"{names.get(a, a)} = {names.get(b, b)}"
                         for a, b in zip(self.left_keys, self.right_keys, strict=True))
        mode = self.mode + (", dense" if self.dense else ", key set" if takes_key_set(self)
                            else "")
        out = f"HashJoin[{mode}]: {self.kind} on=[{keys}]"
        if self.filter is not None:
            out += f" filter={_expr(self.filter)}"
        if self.null_aware:
            out += " null_aware"
        if self.extremes is not None:
            value, fns, _ = self.extremes
            out += " per_key=[" + ", ".join(f"{fn}({_expr(value)})" for fn in fns) + "]"
        if self.runtime_filter is not None:
            scan, column = self.runtime_filter[:2]
            rows = "" if self.runtime_filter[3] is not None else " (rows)"
            out += f" dynamic_filter=[{scan.table}.{column}{rows}]"
        if self.key_filter:
            out += " key_filter=[" + ", ".join(names.get(self.left_keys[i], self.left_keys[i])
                                               for i in self.key_filter) + "]"
        if self.key_pushdown is not None:
            scan, columns = self.key_pushdown
            out += " key_pushdown=[" + ", ".join(f"{scan.table}.{c}" for c in columns
                                                 if c is not None) + "]"
        if self.decode:
            out += " decode=[" + ", ".join(names.get(c, c) for c in self.decode) + "]"
        if self.encode_build:
            out += " encode=[" + ", ".join(names.get(c, c) for c in self.encode_build) + "]"
        return out


@dataclass(frozen=True)
class Band:
    """A range join's bounds (kernels.band): `key` (a column of the `sorted_side`, "left" or
    "right") lies above `lower` and below `upper` (columns of the other side;
    `lower_inclusive`: key >= lower, else key > lower; likewise upper). At least one bound
    is set."""

    sorted_side: str
    key: str
    lower: str | None = None
    lower_inclusive: bool = True
    upper: str | None = None
    upper_inclusive: bool = True


@dataclass(frozen=True)
class OrKeys:
    """A join condition holding an OR each of whose terms has equalities between the two
    sides (`a.k = b.k1 OR a.k = b.k2`): `terms` lists each term's (left column, right
    column) pairs. Every matching pair matches some term's equalities, so the hash joins on
    each term's keys give all of them (kernels.band.or_pairs)."""

    terms: tuple[tuple[tuple[str, str], ...], ...]
    # OR terms that read one side's columns only (and cannot raise): ("left" or "right", the
    # term); every row of the other side pairs with the rows of that side the term holds for
    side_terms: tuple[tuple[str, Expr], ...] = ()


@dataclass(eq=False)
class NestedLoopJoinExec(PhysicalPlan):
    """Join without equality keys: every left partition against the whole (broadcast) right."""

    left: PhysicalPlan = None
    right: PhysicalPlan = None
    kind: str = "inner"
    filter: Expr | None = None
    # (kernels.band.Band, its bound conditions for EXPLAIN, the condition left to check on
    # the pairs within the bounds): the filter bounds a value of one side by the other's, so
    # only the pairs within the bounds are made (a range join)
    band: tuple | None = None
    # (OrKeys, the OR for EXPLAIN): the pairs come from one hash join per OR term
    or_keys: tuple | None = None

    def children(self):
        return (self.left, self.right)

    def describe(self, names):
        kind = "broadcast, range" if self.band is not None else \
            "broadcast, or-keys" if self.or_keys is not None else "broadcast"
        out = f"NestedLoopJoin[{kind}]: {self.kind}"
        if self.filter is not None:
            out += f" filter={_expr(self.filter)}"
        if self.band is not None:
            out += " range=[" + ", ".join(_expr(e) for e in self.band[1]) + "]"
        elif self.or_keys is not None:
            keys = self.or_keys[0]
            out += " keys=[" + " OR ".join(
                ["(" + ", ".join(f"{names.get(a, a)} = {names.get(b, b)}" for a, b in term) + ")"
                 for term in keys.terms] + [_expr(e) for _, e in keys.side_terms]) + "]"
        return out


@dataclass(eq=False)
class AggregateExec(PhysicalPlan):
    """Aggregate over column ids. mode 'partial' emits per-partition states, 'final'
    combines states, 'single' does both in one step. strategy 'hash' (Acero's hash
    aggregate) or 'segments': one integer/date key and simple aggregates, so a partition
    that arrives sorted on the key (data clustered by it) is reduced run by run with numpy,
    ~15x cheaper than hashing; the kernel checks the order and hashes a partition that is
    not sorted. `int64_sums`: decimal arguments the fused projection below hands over as
    unscaled int64 (summed without converting to decimal128 and back). `adaptive` (a partial
    the estimates expect to reduce little, before a hash-partitioned final step): a partition
    whose sampled keys are nearly all distinct hands its rows on as one-row states, leaving
    the grouping to the final step (kernels.aggregate.partial)."""

    input: PhysicalPlan = None
    mode: str = "single"
    group: tuple[str, ...] = ()
    aggs: tuple[AggSpec, ...] = ()
    strategy: str = "hash"
    int64_sums: tuple[str, ...] = ()
    adaptive: bool = False  # partial: rows may pass on as one-row states (kernels.aggregate)
    # (argument id, the largest absolute unscaled value it can take) for exact SUM/AVG
    # arguments the file statistics bound (planner._sum_bounds): a partition's sum of them
    # that cannot overflow int64 is summed so without first reading their min and max
    sum_bounds: tuple[tuple[str, int], ...] = ()

    def children(self):
        return (self.input,)

    def describe(self, names):
        g = _cols(self.group, names)
        def args(s: AggSpec) -> str:
            return ", ".join(names.get(c, c) for c in (s.arg, *s.more)) if s.arg else "*"

        a = ", ".join(f"{s.fn}({args(s)}"
                      + "".join(f", {p!r}" if isinstance(p, str) else f", {p}" for p in s.params)
                      + _order_text(s.order, names) + ")" for s in self.aggs)
        how = self.mode + (f", {self.strategy}" if self.strategy != "hash" else "") \
            + (", adaptive" if self.adaptive else "")
        out = f"Aggregate[{how}]: groupBy=[{g}] aggr=[{a}]"
        if self.int64_sums:
            out += f" int64_sums=[{_cols(self.int64_sums, names)}]"
        return out


@dataclass(eq=False)
class ExchangeExec(PhysicalPlan):
    """Moves rows between partitions: 'hash' repartitions on `keys` into `n` partitions,
    'gather' concatenates all partitions into one. A hash exchange is one of two kinds (the
    planner's exchange rule picks it from the partition counts and the memory limit):
    'tasks', a split task per input partition and a task per (input, output) pair, held in
    memory; 'p2p', a write task per input partition putting its pieces on local disk, one
    barrier task, and readers fused into the consumers (execution.exchange): O(P) tasks."""

    input: PhysicalPlan = None
    mode: str = "gather"
    keys: tuple[str, ...] = ()
    kind: str = "tasks"

    def children(self):
        return (self.input,)

    def describe(self, names):
        if self.mode == "hash":
            return (f"Exchange[hash({_cols(self.keys, names)}), {self.kind}]: "
                    f"{self.input.n} -> {self.n}")
        return f"Exchange[gather]: {self.input.n} -> 1"


@dataclass(eq=False)
class SortExec(PhysicalPlan):
    """Sorts each partition (keys are (id, ascending, nulls_first)); `fetch` keeps the top N."""

    input: PhysicalPlan = None
    keys: tuple[tuple[str, bool, bool], ...] = ()
    fetch: int | None = None

    def children(self):
        return (self.input,)

    def describe(self, names):
        keys = ", ".join(f"{names.get(i, i)} {'ASC' if asc else 'DESC'} NULLS "
                         f"{'FIRST' if nf else 'LAST'}" for i, asc, nf in self.keys)
        kind = "TopN" if self.fetch is not None else "Sort"
        return f"{kind}: {keys}" + (f" fetch={self.fetch}" if self.fetch is not None else "")


@dataclass(eq=False)
class LimitExec(PhysicalPlan):
    input: PhysicalPlan = None
    fetch: int | None = None
    offset: int = 0

    def children(self):
        return (self.input,)

    def describe(self, names):
        return f"Limit: fetch={self.fetch} offset={self.offset}"


@dataclass(eq=False)
class UnionExec(PhysicalPlan):
    inputs: tuple[PhysicalPlan, ...] = ()

    def children(self):
        return self.inputs

    def describe(self, names):
        return "Union"


@dataclass(eq=False)
class WindowExec(PhysicalPlan):
    """Window functions within each partition (rows of one window partition never span two
    partitions: the input is hash-partitioned on the PARTITION BY keys, or gathered)."""

    input: PhysicalPlan = None
    partition: tuple[str, ...] = ()
    order: tuple[tuple[str, bool, bool], ...] = ()
    specs: tuple = ()
    # (column, k): only the rows whose ranking column (ROW_NUMBER, RANK, DENSE_RANK of
    # `specs`) is at most k go on: a filter above keeps no others (a top-k per window
    # partition, TPC-DS Q67's `rk <= 100`), so the other columns of the rest are never sorted
    keep: tuple[str, int] | None = None

    def children(self):
        return (self.input,)

    def describe(self, names):
        parts = ", ".join(s.describe(names) for s in self.specs)
        out = f"Window: {parts}"
        if self.partition:
            out += f" partitionBy=[{_cols(self.partition, names)}]"
        if self.order:
            out += " orderBy=[" + ", ".join(
                f"{names.get(i, i)} {'ASC' if a else 'DESC'}" for i, a, _ in self.order) + "]"
        if self.keep is not None:
            out += f" keep=[{names.get(self.keep[0], self.keep[0])} <= {self.keep[1]}]"
        return out


@dataclass(eq=False)
class SingleRowExec(PhysicalPlan):
    """Fails when its (single) input partition has more than one row."""

    input: PhysicalPlan = None

    def children(self):
        return (self.input,)

    def describe(self, names):
        return "SingleRowCheck"


@dataclass(eq=False)
class RecursiveExec(PhysicalPlan):
    """WITH RECURSIVE: the executor runs `anchor`, then `step` with its WorkTableExec inputs
    bound to the previous iteration's rows, until an iteration yields none; the rows of all
    iterations are this node's output (one partition)."""

    name: str = ""
    anchor: PhysicalPlan = None
    step: PhysicalPlan = None
    distinct: bool = False
    max_iterations: int = 10_000

    def children(self):
        return (self.anchor, self.step)

    def describe(self, names):
        kind = "UNION" if self.distinct else "UNION ALL"
        return f"Recursive[iterate]: {self.name.split('#')[0]} {kind}"


@dataclass(eq=False)
class WorkTableExec(PhysicalPlan):
    """The rows a recursive query's previous iteration made (`which="delta"`) or all rows so
    far (`which="all"`), supplied by the executor at each iteration."""

    name: str = ""
    which: str = "delta"

    def describe(self, names):
        return f"WorkTable: {self.name.split('#')[0]} ({self.which})"


@dataclass(eq=False)
class MapBatchesExec(PhysicalPlan):
    """`df.map_batches(fn)`: the Python function over each partition of its input, in the
    task that computed the partition. `input_ids` are the columns it receives, named
    `input_names`; its output is checked against `schema` (pqe.ExecutionError otherwise)."""

    input: PhysicalPlan = None
    fn: object = None  # plan.logical.UserFunction
    input_ids: tuple[str, ...] = ()
    input_names: tuple[str, ...] = ()

    def children(self):
        return (self.input,)

    def describe(self, names):
        return f"MapBatches: {self.fn.name}"


@dataclass(frozen=True)
class WriteSpec:
    """What each write task writes: `format` ("parquet" or "csv") files under `root` (a
    temporary directory beside the target, on `fs`, a filesystems.FileSystemSpec), one per
    partition and hive directory (`partition_by` columns, which the files then omit);
    `names` and `types` are the columns written; `options`: compression, header,
    delimiter. The control files of the atomic-write protocol live under `root` too
    (kernels.write)."""

    format: str
    fs: object
    root: str
    names: tuple[str, ...]
    types: tuple
    partition_by: tuple[str, ...] = ()
    options: tuple[tuple[str, object], ...] = ()

    def option(self, key: str, default=None):
        return dict(self.options).get(key, default)


@dataclass(eq=False)
class WriteExec(PhysicalPlan):
    """Writes each partition of its input in the task that computed it (kernels.write); each
    task returns the files it wrote and their rows. `input_ids` are the columns written."""

    input: PhysicalPlan = None
    spec: WriteSpec = None
    input_ids: tuple[str, ...] = ()

    def children(self):
        return (self.input,)

    def describe(self, names):
        out = f"Write[{self.spec.format}]"
        if self.spec.partition_by:
            out += f": partition_by=[{', '.join(self.spec.partition_by)}]"
        return out


@dataclass(eq=False)
class SampleExec(PhysicalPlan):
    """TABLESAMPLE / USING SAMPLE over `input`. Rows are chosen by the seed and their global
    row number (the partition's offset, from every partition's row count, plus the row's
    index), so the sample does not depend on the partitioning. bernoulli / system run per
    partition; reservoir keeps each partition's candidates and merges them into one."""

    input: PhysicalPlan = None
    method: str = "bernoulli"
    unit: str = "percent"
    size: float = 0.0
    seed: int = 0
    repeatable: bool = False

    def children(self):
        return (self.input,)

    def describe(self, names):
        from ..plan.explain import describe_sample

        return f"Sample: {describe_sample(self)}"


def parent_counts(plan: PhysicalPlan) -> dict[int, int]:
    """How many parents each node of the plan has, by id(): more than one is a shared node
    (its result serves every consumer, so no one consumer may change what it computes)."""
    parents: dict[int, int] = {}
    for node in nodes_once(plan):
        for child in node.children():
            parents[id(child)] = parents.get(id(child), 0) + 1
    return parents


def nodes_once(plan: PhysicalPlan):
    """Every node of the plan once, parents before children: the plan is a DAG (a shared
    scan, CTE or view has several consumers), so walks must be linear in its nodes, not in
    the paths to them."""
    seen: set[int] = set()
    stack = [plan]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(node.children())


def estimated_memory(plan: PhysicalPlan) -> float:
    """A conservative estimate of the bytes a plan holds at once on one machine: the sum of
    what its operators materialize (Dask keeps results until their consumers finish). A node
    several consumers share (a CTE, equal subplans) is computed once and counted once; the
    walk is linear in the nodes, not in the paths to them."""
    return sum(node.est_bytes for node in nodes_once(plan))


def display_names(plan: PhysicalPlan) -> dict[str, str]:
    """id -> display name for every column in the plan (ambiguous names get #k suffixes)."""
    out: dict[str, str] = {}
    used: dict[str, int] = {}
    visited: set[int] = set()

    def rec(p: PhysicalPlan):
        if id(p) in visited:  # a shared subplan (the plan is a DAG) is named once
            return
        visited.add(id(p))
        for c in p.children():
            rec(c)
        for f in p.schema:
            if f.id in out:
                continue
            base = f.display
            k = used.get(base, 0)
            used[base] = k + 1
            out[f.id] = base if k == 0 else f"{base}#{k + 1}"

    rec(plan)
    return out


def format_physical(plan: PhysicalPlan, stats: dict | None = None) -> str:
    """Plan text; with `stats` (id(node) -> (rows, seconds, tasks)) each line also shows the
    rows the operator produced and the time its tasks spent in it (summed over partitions),
    and, when the stats carry `partitions` ([(rows, seconds)] per partition) for an operator
    of several partitions, the largest and median partition and their ratio (skew)."""
    names = display_names(plan)
    lines: list[str] = []
    # A subplan with several consumers (a shared CTE or view) is computed once; it is shown
    # in full under its first consumer, marked `shared #k`, and as a one-line reference under
    # the others, so the text stays linear in the plan's size (a tree walk of the DAG doubled
    # with every self-join of the previous CTE).
    parents: dict[int, int] = {}
    for cur in nodes_once(plan):
        for c in cur.children():
            parents[id(c)] = parents.get(id(c), 0) + 1
    shared: dict[int, int] = {}

    def rec(p: PhysicalPlan, depth: int):
        mark = ""
        if parents.get(id(p), 0) > 1:
            if id(p) in shared:
                lines.append("  " * depth + f"-> shared #{shared[id(p)]}")
                return
            shared[id(p)] = len(shared) + 1
            mark = f" shared #{shared[id(p)]}"
        # (one_line: a name or text holding a newline stays on its plan line)
        line = "  " * depth + f"{one_line(p.describe(names))} [partitions={p.n}]"
        if stats is not None and id(p) in stats:
            entry = stats[id(p)]
            rows, seconds, tasks = entry
            line += f" rows={rows} time={seconds:.3f}s"
            line += partition_detail(getattr(entry, "partitions", None))
        lines.append(line + mark)
        for c in p.children():
            rec(c, depth + 1)

    rec(plan, 0)
    return "\n".join(lines)


def skew(values) -> float | None:
    """max / median (None with fewer than two values or nothing at all; inf when the median
    is 0 and the max is not)."""
    import statistics

    values = list(values)
    if len(values) < 2:
        return None
    med, top = statistics.median(values), max(values)
    if med <= 0:
        return None if top <= 0 else float("inf")
    return top / med


def partition_detail(parts) -> str:
    """` parts=N rows max/median=a/b skew=s time max/median=x/y skew=t` for an operator
    that ran as several partitions ([(rows, seconds)] each); empty otherwise. Only numbers
    change from run to run."""
    import statistics

    if not parts or len(parts) < 2:
        return ""
    rows = [r for r, _ in parts]
    secs = [s for _, s in parts]

    def fmt(v):
        return "-" if v is None else ("inf" if v == float("inf") else f"{v:.2f}")

    med = statistics.median(rows)
    med_text = f"{med:.0f}" if med == int(med) else f"{med:.1f}"
    return (f" | parts={len(parts)} rows max/median={max(rows)}/{med_text}"
            f" skew={fmt(skew(rows))} time max/median={max(secs):.3f}s/"
            f"{statistics.median(secs):.3f}s skew={fmt(skew(secs))}")


__all__ = [name for name in dir() if name.endswith("Exec")] + [
    "PhysicalPlan", "Dist", "ANY", "SINGLE", "AggSpec", "WriteSpec", "format_physical",
    "partition_detail", "skew", "T", "field"]
