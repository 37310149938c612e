"""Logical plan -> partitioned physical plan.

Decisions made here, each visible in EXPLAIN:
- scan partitions: Parquet row groups pruned by the pushed filters' statistics, grouped into
  partitions balanced by row count (sized to data and `target_partitions`);
- join strategy: broadcast the build side when building it once per probe partition costs less
  than hash-partitioning both sides, otherwise hash-partition both (skipping an exchange when
  an input is already partitioned on the keys); the smaller input of an inner join is built;
- aggregation: single-phase when the input is one partition or already partitioned on the
  group keys, otherwise partial -> exchange -> final, gathering into one partition when few
  groups are expected and hash-partitioning on the group keys when many are;
- sort and limit: per partition first (top-N when there is a LIMIT), then merged.
"""

from __future__ import annotations

import copy
import decimal
import math
from dataclasses import dataclass, replace

import pyarrow as pa

from .. import types as T
from ..catalog import CsvTable, DaskTable, MemoryTable, ParquetTable, ScanUnit
from ..errors import InternalError, UnsupportedError
from ..plan import builder as B
from ..plan import functions as F
from ..plan import logical as L
from ..plan.expr import (AggCall, Call, Case, Cast, ColumnRef, Expr, Field, Literal,
                         and_, column_ids, column_ids_all, conjuncts, disjuncts, has_outer_ref,
                         has_subquery, is_volatile, may_raise, transform, walk)
from ..plan.extremes import per_partition
from ..plan.stats import Estimator
from .plan import (ANY, SINGLE, AggregateExec, AggSpec, Band, Bound, OrKeys, WindowSpec, dense_fits,
                   dense_index_bytes, fits_int64, int64_decimal_applicable,
                   segments_applicable, takes_runs, DaskScanExec, Dist, ExchangeExec, HashJoinExec,
                   LimitExec, MemoryScanExec, NestedLoopJoinExec, PhysicalPlan, ProjectExec,
                   RecursiveExec, ScanExec, WorkTableExec, SingleRowExec, SortExec, UnionExec, ValuesExec, WindowExec,
                   nodes_once, parent_counts)



_RANKINGS = ("row_number", "rank", "dense_rank")


def _rank_limit(predicate: Expr, column: str) -> int | None:
    """The smallest k such that the predicate's conjuncts imply `column <= k` (an integer
    literal compared with the column itself), or None."""
    best = None
    for c in conjuncts(predicate):
        if not (isinstance(c, Call) and len(c.args) == 2):
            continue
        a, b = c.args
        fn = c.fn
        if isinstance(b, ColumnRef) and isinstance(a, Literal):  # k >= col is col <= k
            a, b = b, a
            fn = {"ge": "le", "gt": "lt", "eq": "eq"}.get(fn)
        if not (isinstance(a, ColumnRef) and a.id == column and isinstance(b, Literal)
                and isinstance(b.value, int) and not isinstance(b.value, bool)):
            continue
        k = {"le": b.value, "eq": b.value, "lt": b.value - 1}.get(fn)
        if k is not None:
            best = k if best is None else min(best, k)
    return best


def _keep_ranks(child: PhysicalPlan, predicate: Expr) -> PhysicalPlan:
    """`child` with its window step told to pass on only the rows a filter on a ranking
    function's output can keep (`rank <= k`, `row_number() = 1`, `k > dense_rank`): a
    top-k per window partition sorts only the window's keys and arguments of all rows and
    takes the other columns of the kept rows alone (TPC-DS Q67's rank over 505k rows of 9
    columns keeps 1,105). The filter stays above (the step keeps a superset). The window
    step must be the top of `child` below projections that only pass columns on (its rows
    reach nothing else), and is copied, not changed: an equal subtree elsewhere (one
    physical node for both) needs all its rows."""
    chain = []
    node = child
    while isinstance(node, ProjectExec) and node.predicate is None \
            and all(isinstance(e, ColumnRef) for e in node.exprs):
        chain.append(node)
        node = node.input
    if not isinstance(node, WindowExec) or node.keep is not None:
        return child
    outs = {s.out for s in node.specs if s.fn in _RANKINGS}
    for col in sorted(column_ids(predicate)):
        cid = col  # followed down through the projections' renames
        for proj in chain:
            ids = [f.id for f in proj.schema]
            if cid not in ids:
                cid = None
                break
            cid = proj.exprs[ids.index(cid)].id
        if cid not in outs:
            continue
        k = _rank_limit(predicate, col)
        if k is None:
            continue
        out = copy.copy(node)
        out.keep = (cid, max(k, 0))
        for proj in reversed(chain):
            step = copy.copy(proj)
            step.input = out
            out = step
        return out
    return child

DENSE_PROBE = 0.5  # probing a dense lookup array, relative to probing a hash table
# a partial aggregate estimated to keep at least this share of its input rows as groups is
# adaptive (AggregateExec.adaptive: its kernel measures and may pass rows on ungrouped)
ADAPTIVE_GROUP_SHARE = 0.5
# Acero's hash join holds about this many times its build table's bytes at its peak (a 3.75M
# row, 57 MB build peaked 195 MB above the data); a broadcast build is capped with it
HASH_BUILD_FACTOR = 4


@dataclass
class PlannerConfig:
    target_partitions: int = 2
    min_partition_rows: int = 250_000
    max_partition_rows: int = 4_000_000
    shuffle_cost: float = 1.0  # per row, relative to inserting a row into a hash table (SF10: 70 ns vs 80)
    probe_cost: float = 0.3  # probing a hash table with a row, relative to inserting one
    # build_left only when the preserved side is surely small (its estimate is often a scan
    # count, the other side's an aggregate's guess)
    build_left_rows: int = 2_000_000
    # a dense (perfect-hash) build is broadcast whole: at most this many rows
    dense_build_rows: int = 20_000_000
    gather_groups: int = 200_000
    # hash exchanges (rule `choose_exchanges`): "auto" uses the task grid ("tasks") while
    # input x output partitions stay under p2p_partitions^2 and the disk-backed exchange
    # ("p2p") from there on, and for every hash exchange when the plan's memory estimate
    # exceeds half of memory_limit; "tasks" or "p2p" force one kind
    exchange: str = "auto"
    p2p_partitions: int = 32  # the crossover measured in benchmarks/CLUSTER.md
    memory_limit: int | None = None  # bytes a query may hold at once on this machine
    # bytes of one partition in memory (None: partitions are sized by rows and threads only):
    # scans and hash exchanges make enough partitions that none exceeds it
    max_partition_bytes: int | None = None
    max_partitions: int = 4096
    # a table read twice with the same columns and filters (Q21's l1 and l3) is read once
    # when that read's estimated output is at most this many bytes: the read is held whole
    # from its first consumer to its last. Larger ones are read again (TPC-H SF10: Q18's
    # lineitem held 1.4 GB, peak RSS 2,241 -> 1,005 MiB for 4.5 -> 5.0 s; Q21's 1,764 ->
    # 1,098 MiB, time unchanged)
    shared_scan_bytes: int = 128 << 20
    # bytes a broadcast build may take (its table and its hash table or lookup array), held
    # by every process that probes it (None: no cap); larger builds join partitioned
    broadcast_bytes: int | None = None
    # broadcast joins filter their probe-side scan by the build keys' [min, max] at run time
    # when that scan's row groups are clustered by the key (see _dynamic_filter)
    dynamic_filters: bool = True


class PhysicalPlanner:
    def __init__(self, config: PlannerConfig, compile_filter=None):
        self.cfg = config
        self.compile_filter = compile_filter
        self.est = Estimator()
        self._memo: dict[int, list[tuple[L.LogicalPlan, PhysicalPlan]]] = {}
        self._prints: dict[int, int] = {}  # id(node) -> fingerprint
        self._keep: list[L.LogicalPlan] = []  # nodes whose id() is a key above stay alive
        self._scans: dict[tuple, PhysicalPlan] = {}
        self._hosts: dict[int, L.Scan] | None = None  # id(scan) -> a scan covering it

    def plan(self, node: L.LogicalPlan) -> PhysicalPlan:
        if self._hosts is None:  # (the root: every scan of the query is below it)
            self._hosts = _covering_scans(node, self.est, self.cfg.shared_scan_bytes)
        # equal logical subtrees (a CTE or view used twice: Q15's revenue) get one physical
        # node, so their tasks have the same keys and run once. Equal subtrees are found by a
        # fingerprint computed once per node from its children's (hashing a frozen plan node
        # hashes its whole subtree: a 5,000-branch UNION would cost n^2)
        fp = L.fingerprint(node, self._prints, self._keep)
        bucket = self._memo.setdefault(fp, [])
        for other, hit in bucket:
            if other is node or other == node:
                return hit
        method = self._METHODS.get(type(node))
        if method is None:
            raise UnsupportedError(f"no physical operator for {type(node).__name__}")
        if isinstance(node, L.Aggregate) and (by_length := _interval_groups(node)) is not None:
            out = self.plan(by_length)
            bucket.append((node, out))
            return out
        if isinstance(node, L.Join) and (by_length := _interval_join(node)) is not None:
            out = self.plan(by_length)
            bucket.append((node, out))
            return out
        for kind, test in (("INTERVAL", T.is_interval), ("LIST, STRUCT or MAP", T.is_nested)):
            refused = _keys_of_type(node, test)
            if refused is not None:
                raise UnsupportedError(f"{refused} of {kind} values is not supported")
        out = method(self, node)
        if isinstance(node, L.Aggregate):  # (read by _build_text_encoded)
            rows, step = self.est.rows(node.input), out
            while isinstance(step, (AggregateExec, ExchangeExec)):  # this aggregate's steps
                if isinstance(step, AggregateExec):
                    step.est_input_rows = rows
                    if step.mode in ("partial", "single"):
                        break  # (an aggregate below is another's)
                step = step.input
        bucket.append((node, out))
        return out

    # ---- sources -----------------------------------------------------------------------------

    def _partition_count(self, rows: int, units: int, nbytes: float = 0.0) -> int:
        """Enough partitions for the cores (target_partitions), more when they would exceed
        max_partition_rows or max_partition_bytes (memory per task stays bounded as data
        grows), never more than units (row groups) nor partitions under min_partition_rows."""
        if units <= 1:
            return 1
        by_size = max(1, math.ceil(rows / max(1, self.cfg.min_partition_rows)))
        wanted = max(self.cfg.target_partitions, math.ceil(rows / self.cfg.max_partition_rows),
                     self._by_bytes(nbytes))
        return max(1, min(units, wanted, by_size))

    def _by_bytes(self, nbytes: float) -> int:
        limit = self.cfg.max_partition_bytes
        if not limit or nbytes <= 0:
            return 1
        return min(self.cfg.max_partitions, math.ceil(nbytes / limit))

    def _shuffle_partitions(self, nbytes: float) -> int:
        """Output partitions of a hash exchange moving about `nbytes`: the target, or more so
        that none exceeds max_partition_bytes."""
        return max(self.cfg.target_partitions, 1, self._by_bytes(nbytes))

    def _scan(self, node: L.Scan) -> PhysicalPlan:
        # the same table read with the same columns and filters under other aliases (Q21's l1
        # and l3) is read once, unless holding it costs more than shared_scan_bytes; later
        # uses rename the columns
        key = _scan_key(node)
        if any(is_volatile(f) for f in node.filters):
            # (`random() < 0.5` in two reads is two samples, not one read twice)
            return self._new_scan(node)
        hit = self._scans.get(key)
        if hit is not None and self.est.bytes(node) <= self.cfg.shared_scan_bytes:
            return _renamed(hit, node.schema)
        host = (self._hosts or {}).get(id(node))
        if host is not None:
            return _covered(self._scan(host), host, node)
        out = self._new_scan(node)
        self._scans[key] = out
        return out

    def _new_scan(self, node: L.Scan) -> PhysicalPlan:
        need = {f.id for f in node.schema} | column_ids_all(node.filters)
        columns = tuple((f.name, f.id) for f in node.fields if f.id in need)
        provider = node.provider
        if isinstance(provider, (ParquetTable, CsvTable)):
            return self._file_scan(node, provider, columns)
        if isinstance(provider, MemoryTable):
            rows = provider.table.num_rows
            n = self._partition_count(rows, rows)
            step = math.ceil(rows / n) if rows else 0
            slices = tuple((i * step, max(0, min(step, rows - i * step))) for i in range(n)) or ((0, 0),)
            return MemoryScanExec(node.schema, len(slices), ANY, node.table, provider, columns,
                                  node.filters, slices)
        if isinstance(provider, DaskTable):
            return DaskScanExec(node.schema, provider.ddf.npartitions, ANY, node.table, provider,
                                columns, node.filters)
        raise UnsupportedError(f"cannot scan {type(provider).__name__}")

    def _file_scan(self, node: L.Scan, provider, columns) -> PhysicalPlan:
        provider.refresh()  # files changed, added or deleted since the last plan are seen
        units = provider.units()
        total = len(units)
        if node.filters and isinstance(provider, ParquetTable):
            units = _prune_units(provider, node, units, self.compile_filter)
        rows = sum(u.num_rows for u in units)
        # a task decodes every row of its row groups, filter-only columns too (Q13's o_comment)
        decoded = self.est.decoded_bytes(node, rows, {cid for _, cid in columns}) if units else 0.0
        n = self._partition_count(rows, len(units), decoded)
        parts = balance(units, n) if units else ((),)
        dict_cols = _dictionary_columns(node, provider, columns) if isinstance(provider, ParquetTable) else ()
        dist = _clustering(node, provider, parts) if len(parts) > 1 else SINGLE
        names = {f.id: f.name for f in node.fields}
        nested = tuple((names[i], kids) for i, kids in node.nested)
        resplit = len(parts) > 1 and (dist.kind != "clustered"
                                      or _units_increasing(provider, names[dist.keys[0]], units))
        return ScanExec(node.schema, len(parts), dist, node.table, provider, columns,
                        node.filters, parts, total, len(units), dict_cols, nested=nested,
                        resplit=resplit)

    def _values(self, node: L.Values) -> PhysicalPlan:
        return ValuesExec(node.schema, 1, SINGLE, node.rows)

    # ---- per-partition operators ----------------------------------------------------------

    def _filter(self, node: L.Filter) -> PhysicalPlan:
        child = _keep_ranks(self.plan(node.input), node.predicate)
        exprs = tuple(ColumnRef(f) for f in node.schema)
        return ProjectExec(node.schema, child.n, child.dist, child, exprs, node.predicate)

    def _project(self, node: L.Project) -> PhysicalPlan:
        if isinstance(node.input, L.Filter):
            pred = node.input.predicate
            child = _keep_ranks(self.plan(node.input.input), pred)
        else:
            child = self.plan(node.input)
            pred = None
        dist = _project_dist(child.dist, node.exprs, node.fields)
        return ProjectExec(node.schema, child.n, dist, child, node.exprs, pred)

    def _project_columns(self, child: PhysicalPlan, extra: list[tuple[Expr, Field]],
                         keep: tuple[Field, ...] | None = None) -> PhysicalPlan:
        """Child's columns (or `keep`) plus computed columns."""
        base = keep if keep is not None else child.schema
        exprs = tuple(ColumnRef(f) for f in base) + tuple(e for e, _ in extra)
        fields = tuple(base) + tuple(f for _, f in extra)
        return ProjectExec(fields, child.n, _project_dist(child.dist, exprs, fields), child, exprs, None)

    # ---- joins -------------------------------------------------------------------------------

    def _key_columns(self, child: PhysicalPlan, keys: list[Expr]):
        ids, extra = [], []
        for k in keys:
            if isinstance(k, ColumnRef):
                ids.append(k.id)
            else:
                f = B.new_field("join_key", k.dtype, k.nullable)
                extra.append((k, f))
                ids.append(f.id)
        if extra:
            child = self._project_columns(child, extra)
        return child, tuple(ids)

    def _gather(self, child: PhysicalPlan) -> PhysicalPlan:
        if child.n == 1:
            return child
        return ExchangeExec(child.schema, 1, SINGLE, child, "gather")

    def _hash(self, child: PhysicalPlan, keys: tuple[str, ...], n: int) -> PhysicalPlan:
        if child.dist.kind == "hash" and child.n == n and child.dist.keys == keys:
            return child
        moved = _final_step_hashed(child, keys, n)
        if moved is not None:
            return moved
        return ExchangeExec(child.schema, n, Dist("hash", keys), child, "hash", keys)

    def _join(self, node: L.Join) -> PhysicalPlan:
        left, right = self.plan(node.left), self.plan(node.right)
        kind = node.kind
        lrows, rrows = self.est.rows(node.left), self.est.rows(node.right)
        if not node.on:
            return self._nested_loop(node, left, right, lrows, rrows)
        left, lkeys = self._key_columns(left, [a for a, _ in node.on])
        right, rkeys = self._key_columns(right, [b for _, b in node.on])
        swapped = False
        if kind == "right" or (kind == "inner" and rrows > lrows):
            left, right, lkeys, rkeys, lrows, rrows = right, left, rkeys, lkeys, rrows, lrows
            kind = "left" if kind == "right" else kind
            swapped = True
        schema = node.schema
        lnode, rnode = node.left, node.right
        lexprs, rexprs = [a for a, _ in node.on], [b for _, b in node.on]
        if swapped:
            lnode, rnode, lexprs, rexprs = rnode, lnode, rexprs, lexprs
        # a build side with a unique, narrow integer key becomes one lookup array shared by
        # every probe partition (kernels.dense_join): built once, probed without hashing
        dense_kinds = ("inner", "left", "semi", "anti")
        dense_shape = (not node.null_aware and len(node.on) == 1
                       and all(T.is_integer(k.dtype) for k in node.on[0]))
        if left.n == 1 and right.n == 1:
            dense = dense_shape and kind in dense_kinds and \
                self._dense_build(rnode, rexprs[0], rrows, self.est.bytes(rnode))
            out = HashJoinExec(schema, 1, SINGLE, left, right, kind, lkeys, rkeys,
                               node.filter, "partitioned", node.null_aware, dense)
            out.est_build_rows = rrows
            if kind in ("inner", "semi") and not node.null_aware and self.cfg.dynamic_filters:
                out.runtime_filter = _dynamic_filter(left, lkeys, rrows, right)
                if dense:
                    out.key_pushdown = _key_pushdown(
                        out, (0,), rrows, [self.est.ndv_estimate(lnode, e) for e in lexprs])
            return out
        can_broadcast = kind in ("inner", "left", "semi", "anti")
        lndvs = [self.est.ndv_estimate(lnode, e) for e in lexprs]
        left_ready = left.dist.kind == "hash" and \
            left.dist.keys == _hash_keys(lkeys, left, lndvs, left.n)
        # costs in "hash table inserts": a build row costs 1 (once per probing partition),
        # a probe row PROBE_COST, a shuffled row shuffle_cost
        probe = self.cfg.probe_cost
        # (a build side in several partitions is gathered first: its rows move as a
        # shuffle's do)
        gather = rrows * self.cfg.shuffle_cost if right.n > 1 else 0.0
        broadcast_cost = gather + rrows * left.n + lrows * probe
        shuffle_rows = (0 if left_ready else lrows) + rrows
        # both sides already hash-partitioned on matching join keys: neither moves
        co = _co_partitioned(left, right, lkeys, rkeys)
        if co is not None:
            shuffle_rows = 0
        partitioned_cost = shuffle_rows * self.cfg.shuffle_cost + rrows + lrows * probe
        lbytes, rbytes = self.est.bytes(node.left), self.est.bytes(node.right)
        if swapped:
            lbytes, rbytes = rbytes, lbytes
        dense = False
        if kind in dense_kinds and dense_shape and self._dense_build(rnode, rexprs[0], rrows, rbytes):
            broadcast_cost = rrows + lrows * probe * DENSE_PROBE
            dense = True
        elif kind == "inner" and dense_shape and self._dense_build(lnode, lexprs[0], lrows, lbytes) \
                and lrows + rrows * probe * DENSE_PROBE < min(broadcast_cost, partitioned_cost):
            # the larger side has the unique key (orders against filtered lineitem): build it
            # once and stream the smaller side through it. Its build row costs as much as a
            # hash insert although it takes under half the time (20-56 ns against 82-114): the
            # dense build runs in one task while every probe partition hashes in parallel, and
            # gathering the larger side costs too (at 0.4 a row, TPC-H SF10 Q8 gathered 4.5M
            # orders and 1.5M customers to build them: 2.9 -> 4.2 s, peak RSS +150 MiB)
            left, right, lkeys, rkeys, lrows, rrows = right, left, rkeys, lkeys, rrows, lrows
            lbytes, rbytes = rbytes, lbytes
            swapped = not swapped
            lnode, rnode, lexprs, rexprs = rnode, lnode, rexprs, lexprs
            lndvs = [self.est.ndv_estimate(lnode, e) for e in lexprs]
            left_ready = left.dist.kind == "hash" and \
                left.dist.keys == _hash_keys(lkeys, left, lndvs, left.n)
            broadcast_cost = rrows + lrows * probe * DENSE_PROBE
            dense = True
        if not dense and not self._broadcast_fits(rbytes * HASH_BUILD_FACTOR):
            can_broadcast = False  # every probing process would hold a build too large
        # a LEFT join's unmatched rows come from one more task that reads every preserved row
        # again (TPC-DS Q78's 550k sales without returns: 0.3 s in that one partition)
        unmatched = lrows if kind == "left" else 0
        if kind in ("semi", "anti", "left") and not node.null_aware and right.n > 1 \
                and lrows <= self.cfg.build_left_rows \
                and self._broadcast_fits(lbytes * HASH_BUILD_FACTOR) \
                and lrows * right.n + rrows * probe + unmatched < min(broadcast_cost,
                                                                      partitioned_cost):
            # small preserved side: hash it, stream the big side through it, no shuffle (a
            # LEFT join's matched pairs come out of each big partition, in parallel, and its
            # unmatched rows from one more partition; a broadcast of the big side would
            # build it whole and probe it in the small side's one partition)
            n, dist = (1, SINGLE) if kind != "left" else (right.n + 1, ANY)
            out = HashJoinExec(schema, n, dist, self._gather(left), right, kind, lkeys, rkeys,
                               node.filter, "build_left")
            if kind in ("semi", "anti"):
                # a few left rows may still crowd onto a key the right holds many rows of
                # (the optimizer's semi_join_extremes leaves the pairs to a small left side)
                out.extremes = per_partition(node.filter, left.schema, right.schema, lkeys,
                                             rkeys)
            out.est_bytes = lbytes * 2
            return out
        if node.null_aware or (can_broadcast and broadcast_cost <= partitioned_cost):
            out_dist = left.dist if not swapped else ANY
            out = HashJoinExec(schema, left.n, out_dist, left, self._gather(right), kind,
                               lkeys, rkeys, node.filter, "broadcast", node.null_aware,
                               dense and not node.null_aware)
            out.est_bytes = rbytes * 2  # the build table and its hash table
            out.est_build_rows = rrows
            if kind in ("inner", "semi") and not node.null_aware and self.cfg.dynamic_filters:
                out.runtime_filter = _dynamic_filter(left, lkeys, rrows, right)
                if not out.dense and not takes_runs(out):
                    out.key_filter = tuple(
                        i for i, (a, b) in enumerate(zip(lexprs, rexprs, strict=True))
                        if T.is_integer(a.dtype) and T.is_integer(b.dtype))
                out.key_pushdown = _key_pushdown(out, (0,) if out.dense else out.key_filter,
                                                 rrows, lndvs)
            return out
        n = left.n if left_ready or co is not None else self._shuffle_partitions(lbytes + rbytes)
        hk = co if co is not None else _hash_positions(lkeys, left, lndvs, n)
        if co is not None:  # (partitioned alike, maybe on the other side's equal keys)
            lh, rh = left, right
        else:
            lh = self._hash(left, tuple(lkeys[i] for i in hk), n)
            rh = self._hash(right, tuple(rkeys[i] for i in hk), n)
        dist = Dist("hash", tuple(lkeys[i] for i in hk)) if kind in ("inner", "left", "semi", "anti") else ANY
        out = HashJoinExec(schema, n, dist, lh, rh, kind, lkeys, rkeys, node.filter,
                           "partitioned", node.null_aware)
        out.est_bytes = (0 if left_ready else lbytes) + rbytes * 2
        return out

    def _dense_build(self, side: L.LogicalPlan, key: Expr, rows: float, nbytes: float) -> bool:
        """Whether `side` (about `nbytes` bytes), built on the single key `key`, will get a
        dense lookup array: an integer key, probably unique, whose min..max span fits
        (physical.plan.dense_fits; the build checks again at run time and falls back to a hash
        join), and whose table and lookup array (4 bytes per key in the span) fit a broadcast."""
        if not T.is_integer(key.dtype) or rows > self.cfg.dense_build_rows:
            return False
        est = self.est.column(side, key)
        lo, hi = est.min, est.max
        if lo is None or hi is None or not dense_fits(int(hi - lo + 1), rows):
            return False
        if not self._broadcast_fits(nbytes + dense_index_bytes(int(hi - lo + 1), rows)):
            return False
        return self.est.unique(side, key)

    def _broadcast_fits(self, nbytes: float) -> bool:
        cap = self.cfg.broadcast_bytes
        return cap is None or nbytes <= cap

    def _nested_loop(self, node, left, right, lrows, rrows) -> PhysicalPlan:
        if node.null_aware:
            raise InternalError("null-aware anti join without keys")
        kind = node.kind
        schema = node.schema
        if kind == "right":
            left, right = right, left
            kind = "left"
        elif kind == "inner" and rrows > lrows and left.n == 1:
            left, right = right, left
        if kind == "full":
            left = self._gather(left)
        # (a side of one row, a scalar subquery's: a sort would cost more than the pairs)
        band = _band(node.filter, left, right) if min(lrows, rrows) > 1 else None
        if band is not None:  # (+ the condition left to check on the pairs the bounds give)
            band = band + (_band_residual(node.filter, *band),)
        out = NestedLoopJoinExec(schema, left.n, left.dist if kind != "full" else SINGLE,
                                 left, self._gather(right), kind, node.filter, band,
                                 _or_keys(node.filter, left, right) if band is None else None)
        # the broadcast side, and the output (a cross product when the filter keeps most),
        # none of it where a side reads no row group (the statistics pruned them all: the
        # estimates only say such a side is small, and a cross product of it with two
        # tables was refused as needing hundreds of GiB)
        out.est_bytes = (0.0 if _reads_nothing(right) else self.est.bytes(node.right)) \
            + (0.0 if _reads_nothing(out) else self.est.bytes(node))
        return out

    # ---- aggregation ---------------------------------------------------------------------------

    def _aggregate(self, node: L.Aggregate) -> PhysicalPlan:
        child = self.plan(node.input)
        pre: list[tuple[Expr, Field]] = []
        group_ids = []
        for e, f in zip(node.group, node.group_fields, strict=True):
            pre.append((e, f))
            group_ids.append(f.id)
        specs = []
        arg_cache: dict[Expr, str] = {}

        def column_for(e: Expr) -> str:
            if e in arg_cache:
                return arg_cache[e]
            f = B.new_field("agg_arg", e.dtype, e.nullable)
            pre.append((e, f))
            arg_cache[e] = f.id
            return f.id

        for a, f in zip(node.aggs, node.agg_fields, strict=True):
            if a.udf is not None or a.fn in F.MULTI_COLUMN_AGGREGATES:  # several columns
                ids = [column_for(x) for x in _filtered_args(a)]
                # (ARG_MAX's state keeps y: its type, for empty partials' states)
                params = (a.args[1].dtype,) if a.fn in ("arg_max", "arg_min") else ()
                specs.append(AggSpec(a.fn, ids[0], f.id, f.dtype, a.args[0].dtype,
                                     more=tuple(ids[1:]), udf=a.udf, params=params))
                continue
            fn, arg = _agg_input(a)
            arg_id = column_for(arg) if arg is not None else None
            order = tuple((column_for(k.expr), k.ascending, k.nulls_first) for k in a.order_by)
            specs.append(AggSpec(fn, arg_id, f.id, f.dtype, arg.dtype if arg is not None else None,
                                 params=_agg_params(a), order=order))
        if not pre:  # count(*) with no group keys and no arguments: keep one column
            f0 = child.schema[0]
            pre.append((ColumnRef(f0), B.new_field("any", f0.dtype)))
        exprs = tuple(e for e, _ in pre)
        fields = tuple(f for _, f in pre)
        group = tuple(group_ids)
        aggs = tuple(specs)
        only_summed = _summed_only(group, aggs)
        int64 = int64_decimal_applicable(exprs, [e for e, f in pre if f.id in only_summed])
        projected = ProjectExec(fields, child.n, _project_dist(child.dist, exprs, fields),
                                child, exprs, None, int64)
        projected = _encoded_group_keys(projected, group)
        schema = node.schema
        # how the first aggregation step runs (the final step combines states by hash)
        first = {"strategy": _strategy(projected, group, aggs),
                 "int64_sums": _int64_sums(projected, group, aggs),
                 "sum_bounds": _sum_bounds(projected, aggs)}
        if projected.n == 1:
            return AggregateExec(schema, 1, projected.dist, projected, "single", group, aggs,
                                 **first)
        if group and projected.dist.groups_within(group):
            return AggregateExec(schema, projected.n, projected.dist, projected, "single", group,
                                 aggs, **first)
        if node.local:  # each partition on its own: the consumer combines the partitions' rows
            return AggregateExec(schema, projected.n, ANY, projected, "single", group, aggs,
                                 **first)
        partial_fields = tuple(Field(c, c, pa.null()) for c in _state_columns(group, aggs))
        groups = self.est.rows(node)
        if not group or groups <= self.cfg.gather_groups:
            partial = AggregateExec(partial_fields, projected.n, ANY, projected, "partial",
                                    group, aggs, **first)
            return AggregateExec(schema, 1, SINGLE, self._gather(partial), "final", group, aggs)
        n = self._shuffle_partitions(self.est.bytes(node.input))
        ndvs = [self.est.ndv_estimate(node.input, e) for e in node.group]
        hk = tuple(group[i] for i in _hash_positions(group, projected, ndvs, n))
        # expected to keep over half its rows, and the final step runs in parallel: let the
        # kernel check and pass rows on (into a gathered final step they would make the one
        # task hash them all: TPC-DS Q39 took 23% longer so)
        adaptive = n > 1 and groups >= ADAPTIVE_GROUP_SHARE * self.est.rows(node.input)
        partial = AggregateExec(partial_fields, projected.n, ANY, projected, "partial", group,
                                aggs, **first, adaptive=adaptive)
        ex = ExchangeExec(partial_fields, n, Dist("hash", hk), partial, "hash", hk)
        return AggregateExec(schema, n, Dist("hash", hk), ex, "final", group, aggs)

    # ---- ordering ------------------------------------------------------------------------------

    def _sort(self, node: L.Sort) -> PhysicalPlan:
        child = self.plan(node.input)
        extra, keys = [], []
        for k in node.keys:
            for e in _sort_keys(k.expr):
                if isinstance(e, ColumnRef):
                    keys.append((e.id, k.ascending, k.nulls_first))
                else:
                    f = B.new_field("sort_key", e.dtype)
                    extra.append((e, f))
                    keys.append((f.id, k.ascending, k.nulls_first))
        if extra:
            child = self._project_columns(child, extra)
        keys = tuple(keys)
        out: PhysicalPlan
        if child.n > 1:
            local = SortExec(child.schema, child.n, child.dist, child, keys, node.fetch)
            out = SortExec(child.schema, 1, SINGLE, self._gather(local), keys, node.fetch)
        else:
            out = SortExec(child.schema, 1, SINGLE, child, keys, node.fetch)
        out.est_bytes = self.est.bytes(node) * (1 if node.fetch is None else 0)
        if extra:
            out = ProjectExec(node.schema, 1, SINGLE, out,
                              tuple(ColumnRef(f) for f in node.schema), None)
        return out

    def _limit(self, node: L.Limit) -> PhysicalPlan:
        child = self.plan(node.input)
        if child.n > 1 and node.fetch is not None:
            child = LimitExec(child.schema, child.n, child.dist, child, min(node.fetch + node.offset, T.INT64_MAX), 0)
        child = self._gather(child)
        return LimitExec(node.schema, 1, SINGLE, child, node.fetch, node.offset)

    def _union(self, node: L.Union) -> PhysicalPlan:
        kids = []
        for child_node in _union_inputs(node):
            child = self.plan(child_node)
            exprs = tuple(ColumnRef(f) for f in child.schema)
            kids.append(ProjectExec(node.schema, child.n, ANY, child, exprs, None))
        return UnionExec(node.schema, sum(k.n for k in kids), ANY, tuple(kids))

    def _window(self, node: L.Window) -> PhysicalPlan:
        current = self.plan(node.input)
        groups: dict[tuple, list[tuple]] = {}
        for call, f in zip(node.calls, node.fields, strict=True):
            key = (call.partition_by, call.order_by)
            groups.setdefault(key, []).append((call, f))
        for (pby, oby), items in groups.items():
            extra: list[tuple[Expr, Field]] = []
            cache: dict[Expr, str] = {}

            def column(e: Expr, extra=extra, cache=cache) -> str:
                if isinstance(e, ColumnRef):
                    return e.id
                if e not in cache:
                    f = B.new_field("window_input", e.dtype, e.nullable)
                    extra.append((e, f))
                    cache[e] = f.id
                return cache[e]

            pids = tuple(column(x) for e in pby for x in _sort_keys(e))
            order = tuple((column(x), k.ascending, k.nulls_first) for k in oby
                          for x in _sort_keys(k.expr))
            specs = []
            for call, f in items:
                args = tuple(column(a) for a in call.args)
                frame = call.frame
                if frame is None:
                    mode, start, end = "range", Bound("unbounded_preceding"), Bound(
                        "current" if oby else "unbounded_following")
                else:
                    mode = frame.mode
                    start = Bound(frame.start.kind, frame.start.offset)
                    end = Bound(frame.end.kind, frame.end.offset)
                specs.append(WindowSpec(call.fn, args, f.id, f.dtype, mode, start, end,
                                        bool(oby), tuple(call.consts),
                                        frame.exclude if frame is not None else "no_others",
                                        call.ignore_nulls, call.distinct))
            if extra:
                current = self._project_columns(current, extra)
            if pids:
                if current.n > 1 and not current.dist.groups_within(pids):
                    # (one partition holds every group already)
                    n = self._shuffle_partitions(self.est.bytes(node.input))
                    ndvs = [self.est.ndv_estimate(node.input, x) for e in pby
                            for x in _sort_keys(e)]
                    hk = tuple(pids[i] for i in _hash_positions(pids, current, ndvs, n))
                    current = self._hash(current, hk, n)
            else:
                current = self._gather(current)
            fields = tuple(f for _, f in items)
            current = WindowExec(current.schema + fields, current.n, current.dist, current,
                                 pids, order, tuple(specs))
            current.est_bytes = self.est.bytes(node.input) * 2  # shuffled, then sorted
        exprs = tuple(ColumnRef(f) for f in node.schema)
        return ProjectExec(node.schema, current.n, _project_dist(current.dist, exprs, node.schema),
                           current, exprs, None)

    def _recursivequery(self, node: L.RecursiveQuery) -> PhysicalPlan:
        anchor = self._gather(self.plan(node.anchor))
        step = self._gather(self.plan(node.step))
        out = RecursiveExec(node.schema, 1, SINGLE, node.name, anchor, step, node.distinct,
                            node.max_iterations)
        out.est_bytes = self.est.bytes(node) * 2  # every iteration's rows, then the result
        return out

    def _worktable(self, node: L.WorkTable) -> PhysicalPlan:
        return WorkTableExec(node.schema, 1, SINGLE, node.name, node.which)

    def _singlerow(self, node: L.SingleRow) -> PhysicalPlan:
        child = self._gather(self.plan(node.input))
        return SingleRowExec(node.schema, 1, SINGLE, child)

    def _mapbatches(self, node: L.MapBatches) -> PhysicalPlan:
        """The function runs where each input partition is computed (no exchange); its
        output columns are new, so nothing is known of their distribution."""
        from .plan import MapBatchesExec

        child = self.plan(node.input)
        return MapBatchesExec(node.schema, child.n, ANY, child, node.fn,
                              tuple(f.id for f in node.input.schema), node.input_names)

    def _sample(self, node: L.Sample) -> PhysicalPlan:
        from .plan import SampleExec

        child = self.plan(node.input)
        if node.method == "reservoir":  # candidates per partition, merged into one
            n, dist = 1, SINGLE
        else:  # rows removed in place
            n, dist = child.n, child.dist
        return SampleExec(node.schema, n, dist, child, node.method, node.unit, node.size,
                          node.seed, node.repeatable)

    def _withcte(self, node: L.WithCTE) -> PhysicalPlan:
        """Each definition is planned once; every CTEScan of it reads that one physical
        node (lowering computes a node with several consumers once)."""
        plans = self.__dict__.setdefault("_cte_plans", {})
        self.est.learn_ctes(node)
        for name, definition in zip(node.names, node.definitions, strict=True):
            plans[name] = self.plan(definition)
        return self.plan(node.input)

    def _ctescan(self, node: L.CTEScan) -> PhysicalPlan:
        body = self.__dict__.get("_cte_plans", {}).get(node.name)
        if body is None:
            raise InternalError(f"CTE {node.name} is read outside its WITH")
        exprs = tuple(ColumnRef(f) for f in body.schema)
        return ProjectExec(node.schema, body.n, _project_dist(body.dist, exprs, node.schema),
                           body, exprs, None)

    # one planning method per logical node type
    _METHODS = {
        L.Scan: _scan, L.Values: _values, L.Filter: _filter, L.Project: _project,
        L.Join: _join, L.Aggregate: _aggregate, L.Sort: _sort, L.Limit: _limit,
        L.Union: _union, L.Window: _window, L.RecursiveQuery: _recursivequery,
        L.WorkTable: _worktable, L.SingleRow: _singlerow, L.MapBatches: _mapbatches,
        L.Sample: _sample, L.WithCTE: _withcte, L.CTEScan: _ctescan,
    }


# ---- helpers -------------------------------------------------------------------------------------


def _union_inputs(node: L.Union) -> list[L.LogicalPlan]:
    """The inputs of a UNION ALL with nested UNION ALLs spliced in (`a UNION ALL b UNION ALL
    c` binds as union(rename(union(a, b)), c)): one exchange-free node over every branch, and
    no recursion as deep as the number of branches."""
    out: list[L.LogicalPlan] = []
    stack = list(reversed(node.inputs))
    while stack:
        child = stack.pop()
        if isinstance(child, L.Union):
            stack.extend(reversed(child.inputs))
            continue
        inner = child.input if isinstance(child, L.Project) else None
        if isinstance(inner, L.Union) and len(child.exprs) == len(inner.fields) and all(
                isinstance(e, ColumnRef) and e.id == f.id
                for e, f in zip(child.exprs, inner.fields, strict=True)):
            stack.extend(reversed(inner.inputs))
        else:
            out.append(child)
    return out


def _agg_input(a: AggCall) -> tuple[str, Expr | None]:
    """Physical aggregate function and its single input expression (FILTER folded in)."""
    fn = a.fn
    arg = a.args[0] if a.args else None
    if a.filter is not None:
        if arg is None:
            fn, arg = "count", Literal(1, T.INT64)
        arg = Case(((a.filter, arg),), Literal(None, arg.dtype), arg.dtype)
    if a.distinct:
        raise InternalError("DISTINCT aggregate reached the physical planner")
    return fn, arg


def _filtered_args(a: AggCall) -> list[Expr]:
    """The argument columns of an aggregate of several (a user-defined one, CORR(y, x), ...);
    FILTER makes the filtered-out rows NULL in every argument, and such rows are left out
    (so `skip_nulls=False` user aggregates refuse FILTER at bind time)."""
    if a.filter is None:
        return list(a.args)
    return [Case(((a.filter, x),), Literal(None, x.dtype), x.dtype) for x in a.args]


def _agg_params(a: AggCall) -> tuple:
    """The constant arguments after the first (builder.aggregate_call checked they are)."""
    out = []
    for e in a.args[1:]:
        if not isinstance(e, Literal):
            raise InternalError(f"aggregate {a.fn}: argument {e} is not a constant")
        out.append(e.value)
    return tuple(out)


def _strategy(projected: PhysicalPlan, group: tuple[str, ...], aggs) -> str:
    """'segments' when one integer/date key and simple aggregates allow reducing sorted runs
    (the kernel checks each partition's order), else 'hash'."""
    if len(group) != 1:
        return "hash"
    key = next((f.dtype for f in projected.schema if f.id == group[0]), None)
    return "segments" if key is not None and segments_applicable(key, aggs) else "hash"


def _int64_sums(projected: PhysicalPlan, group: tuple[str, ...], aggs) -> tuple[str, ...]:
    """Decimal columns that are only summed or averaged, computed by the projection fused
    right below on unscaled int64: handed over as int64 and summed as such (no conversion to
    decimal128 and back)."""
    if not isinstance(projected, ProjectExec) or not projected.int64_decimal:
        return ()
    return tuple(sorted(_summed_only(group, aggs)))


def _sum_bounds(projected: PhysicalPlan, aggs) -> tuple[tuple[str, int], ...]:
    """(argument id, largest absolute unscaled value) for each exact SUM/AVG argument (an
    integer or decimal) whose values the file statistics bound: the argument is a sum,
    difference, product, negation or numeric cast of constants and columns that reach a
    Parquet scan through projections, joins and exchanges (which move values, never make
    new ones), and every row group of that column has a min and max. The kernel then knows
    a partition's sum cannot overflow int64 without reading the column's min and max (TPC-H
    Q1: five passes over 6M values, 10 ms of 250). Any other argument has no bound here."""
    out = []
    for s in aggs:
        at = s.arg_dtype
        if s.fn not in ("sum", "avg") or s.arg is None or s.udf is not None or s.order \
                or at is None or not (T.is_integer(at) or T.is_decimal(at)) \
                or any(s.arg == a for a, _ in out):
            continue
        with decimal.localcontext() as ctx:
            ctx.prec, ctx.rounding = 200, decimal.ROUND_CEILING  # (rounds away: still a bound)
            b = _column_bound(projected, s.arg, 0)
            if b is None:
                continue
            scale = at.scale if T.is_decimal(at) else 0
            out.append((s.arg, int((b * 10 ** scale).to_integral_value()) + 1))
    return tuple(out)


_BOUND_DEPTH = 64


def _column_bound(node: PhysicalPlan, cid: str, depth: int) -> decimal.Decimal | None:
    """The largest absolute value column `cid` of `node` can hold, or None if unknown."""
    if depth > _BOUND_DEPTH:
        return None
    if isinstance(node, ProjectExec):
        for f, e in zip(node.schema, node.exprs, strict=True):
            if f.id == cid:
                return _expr_bound(e, node.input, depth + 1)
        return None
    if isinstance(node, HashJoinExec):
        for side in (node.left, node.right):
            if any(f.id == cid for f in side.schema):
                return _column_bound(side, cid, depth + 1)
        return None
    if isinstance(node, ExchangeExec):
        return _column_bound(node.input, cid, depth + 1)
    if isinstance(node, ScanExec) and isinstance(node.provider, ParquetTable):
        name = next((n for n, i in node.columns if i == cid), None)
        if name is None:
            return None
        t = node.provider.schema.field(name).type
        if not (T.is_integer(t) or T.is_decimal(t)):
            return None
        ranges = node.provider.unit_ranges(name)  # (a row group without min/max: None)
        if not ranges or any(r is None for r in ranges.values()):
            return None
        try:
            return max(max(abs(decimal.Decimal(lo)), abs(decimal.Decimal(hi)))
                       for lo, hi in ranges.values())
        except (TypeError, ValueError, decimal.InvalidOperation):
            return None
    return None


def _expr_bound(e: Expr, node: PhysicalPlan, depth: int) -> decimal.Decimal | None:
    """The largest absolute value of `e` over `node`'s rows (plus one unit of rounding for each
    operation that may round), or None if unknown."""
    if depth > _BOUND_DEPTH:
        return None
    if isinstance(e, ColumnRef):
        return _column_bound(node, e.id, depth + 1)
    if isinstance(e, Literal):
        v = e.value
        if v is None:
            return decimal.Decimal(0)
        if isinstance(v, bool) or not isinstance(v, (int, decimal.Decimal)):
            return None
        return abs(decimal.Decimal(v))
    numeric = (T.is_integer(e.dtype) or T.is_decimal(e.dtype))
    # one unit of the result's last digit: what rounding to its scale may add
    unit = decimal.Decimal(1).scaleb(-e.dtype.scale) if T.is_decimal(e.dtype) \
        else decimal.Decimal(1)
    if isinstance(e, Cast) and numeric and (T.is_integer(e.arg.dtype) or T.is_decimal(e.arg.dtype)):
        b = _expr_bound(e.arg, node, depth + 1)
        return None if b is None else b + unit
    if isinstance(e, Call) and numeric and e.fn in ("add", "subtract", "multiply", "negate", "abs"):
        bs = [_expr_bound(a, node, depth + 1) for a in e.args]
        if any(b is None for b in bs) or not bs:
            return None
        if e.fn in ("add", "subtract"):
            return sum(bs) + unit
        if e.fn == "multiply":
            out = decimal.Decimal(1)
            for b in bs:
                out *= b
            return out + unit
        return bs[0]
    return None


def _summed_only(group: tuple[str, ...], aggs) -> set[str]:
    """Decimal argument columns that every aggregate reading them sums or averages."""
    summed = {s.arg for s in aggs if s.fn in ("sum", "avg") and s.arg is not None
              and T.is_decimal(s.arg_dtype)}
    other = {s.arg for s in aggs if s.fn not in ("sum", "avg")} | set(group) \
        | {c for s in aggs for c in s.more} \
        | {k for s in aggs for k, _, _ in s.order}  # an ordered aggregate's sort keys
    return summed - other


def _state_columns(group, aggs) -> list[str]:
    """The partial aggregate's columns as the plan shows them: the group keys, then one
    column of states per aggregate (how many state columns each has is the kernel's)."""
    return list(group) + [s.out for s in aggs]


def _encoded_group_keys(plan: PhysicalPlan, group: tuple[str, ...]) -> PhysicalPlan:
    """When group keys come straight from dictionary columns of a scan below a chain of
    per-partition projections (one fused task), have the scan return those columns still
    encoded: the aggregate groups by dictionary indices instead of strings. A column is left
    encoded only if nothing else in the chain reads it. The chain is copied (its nodes may be
    shared with other consumers, which need text)."""
    chain: list[ProjectExec] = []
    node = plan
    while isinstance(node, ProjectExec):
        chain.append(node)
        node = node.input
    if not isinstance(node, ScanExec) or not node.dict_columns:
        return plan
    wanted = set(group)
    for p in chain:  # follow the keys down through pass-through columns
        wanted = _passed_through(p, wanted)
    names = {cid: name for name, cid in node.columns}
    wanted -= column_ids_all(node.filters)
    encoded = tuple(names[c] for c in sorted(wanted) if c in names and names[c] in node.dict_columns)
    if not encoded:
        return plan
    out: PhysicalPlan = replace(node, encoded=encoded)
    for p in reversed(chain):
        out = replace(p, input=out)
    return out


def _scan_key(node: L.Scan) -> tuple:
    """What a scan reads, independent of its column ids: provider, columns, filters by name."""
    by_name = {f.id: f.name for f in node.fields}
    nested = tuple((by_name[i], kids) for i, kids in node.nested)
    return (id(node.provider), tuple(f.name for f in node.schema), _filters_by_name(node),
            nested)


def _filters_by_name(node: L.Scan) -> tuple[Expr, ...]:
    """The scan's filters over columns whose ids are their names (the same in every alias)."""
    if not node.filters:
        return ()
    used = column_ids_all(node.filters)
    by_id = {f.id: Field(f.name, f.name, f.dtype, f.nullable) for f in node.fields
             if f.id in used}
    return tuple(transform(e, lambda x: ColumnRef(by_id[x.id]) if isinstance(x, ColumnRef) else None)
                 for e in node.filters)


def _covering_scans(root: L.LogicalPlan, est: Estimator, max_bytes: int) -> dict[int, L.Scan]:
    """Scans another scan of the query covers: the same table, read with some of its filters
    (none that may raise left over) and all the columns the rest of its filters and its
    output need. Each is read once, by its host, and filtered again where needed: TPC-H
    Q22's customer (c_custkey, c_phone, c_acctbal by country code; and c_phone, c_acctbal by
    country code with c_acctbal > 0) and Q2's filtered part, read twice with one column
    less. Hosts are scans no other covers; one held result costs at most `max_bytes`."""
    scans: list[L.Scan] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, L.Scan):
            if not node.nested and not any(is_volatile(f) for f in node.filters):
                scans.append(node)
            continue
        stack.extend(node.children())
    by_table: dict[int, list[L.Scan]] = {}
    for scan in scans:
        by_table.setdefault(id(scan.provider), []).append(scan)
    out: dict[int, L.Scan] = {}
    for group in by_table.values():
        if len(group) < 2:
            continue
        keys = {id(s): _scan_key(s) for s in group}
        shapes = {i: (k, set(k[2]), set(k[1])) for i, k in keys.items()}

        def covers(h: L.Scan, s: L.Scan) -> bool:
            hkey, hf, hcols = shapes[id(h)]
            skey, sf, scols = shapes[id(s)]
            if hkey == skey or not hf <= sf:
                return False
            rest = sf - hf
            # (ids are names here; _covered reads the rest on the host's output columns)
            need = scols | {c for f in rest for c in column_ids(f)}
            return need <= hcols and not any(may_raise(f) for f in rest)

        hosts = [h for h in group if not any(covers(o, h) for o in group if o is not h)]
        for s in group:
            if any(s is h for h in hosts):
                continue
            host = next((h for h in hosts if covers(h, s)), None)
            if host is not None and est.bytes(host) <= max_bytes:
                out[id(s)] = host
    return out


def _covered(base: PhysicalPlan, host: L.Scan, node: L.Scan) -> PhysicalPlan:
    """`node` read from the plan `base` of the scan `host` covering it: the filters it adds,
    then its columns under its own ids (matched by name)."""
    by_name = {f.name: f for f in base.schema}
    done = set(_filters_by_name(host))
    rest = [f for f, named in zip(node.filters, _filters_by_name(node), strict=True)
            if named not in done]
    by_id = {f.id: by_name[f.name] for f in node.fields if f.name in by_name}
    # (and_ drops TRUE literals: a pushed `0 <= 1` left over is no filter at all)
    cond = and_(rest)
    pred = transform(cond, lambda x: ColumnRef(by_id[x.id])
                     if isinstance(x, ColumnRef) else None) if cond is not None else None
    exprs = tuple(ColumnRef(by_name[f.name]) for f in node.schema)
    return ProjectExec(node.schema, base.n, _project_dist(base.dist, exprs, node.schema), base,
                       exprs, pred)


def _renamed(plan: PhysicalPlan, schema: tuple[Field, ...]) -> PhysicalPlan:
    """`plan` with its columns under the ids of `schema` (matched by name)."""
    if tuple(f.id for f in plan.schema) == tuple(f.id for f in schema):
        return plan
    by_name = {f.name: f for f in plan.schema}
    exprs = tuple(ColumnRef(by_name[f.name]) for f in schema)
    return ProjectExec(schema, plan.n, _project_dist(plan.dist, exprs, schema), plan, exprs, None)


def _reads_nothing(node: PhysicalPlan) -> bool:
    """Whether `node` surely yields no row because a scan under it reads no row group (its
    filters' statistics pruned them all) and every operator between passes no row on from
    nothing: projections, exchanges, grouped aggregates, and joins that need rows from that
    side (inner and semi either side, left and anti the left)."""
    if isinstance(node, ScanExec):
        return node.provider.kind == "parquet" and not any(node.parts)
    if isinstance(node, (ProjectExec, ExchangeExec)):
        return _reads_nothing(node.input)
    if isinstance(node, AggregateExec):
        return bool(node.group) and _reads_nothing(node.input)
    if isinstance(node, (HashJoinExec, NestedLoopJoinExec)):
        if node.kind in ("inner", "semi"):
            return _reads_nothing(node.left) or _reads_nothing(node.right)
        if node.kind in ("left", "anti"):
            return _reads_nothing(node.left)
    return False


def _final_step_hashed(child: PhysicalPlan, keys: tuple[str, ...], n: int):
    """`child` hash-partitioned on `keys` into `n` partitions without an exchange of its own,
    when it is a gathered final aggregation step (under projections that keep `keys` as
    columns) grouping by `keys` among others: the partial states go to the final step by a
    hash of those keys instead, and the final step runs in `n` partitions whose rows are
    already where the consumer (a partitioned join) wants them. Planned bottom-up, the
    aggregate gathered its few groups before the join was known, which then spread them out
    again: TPC-DS Q78's 259k catalog sales groups were combined in one task and hashed
    again for the joins on their three keys. None when `child` is not such a plan."""
    chain: list[ProjectExec] = []
    node, want = child, keys
    while isinstance(node, ProjectExec):
        mapping = {f.id: e.id for e, f in zip(node.exprs, node.schema, strict=True)
                   if isinstance(e, ColumnRef)}
        if not all(k in mapping for k in want):
            return None
        want = tuple(mapping[k] for k in want)
        chain.append(node)
        node = node.input
    if not (isinstance(node, AggregateExec) and node.mode == "final" and node.n == 1
            and isinstance(node.input, ExchangeExec) and node.input.mode == "gather"
            and set(want) <= set(node.group)):
        return None
    partial = node.input.input
    dist = Dist("hash", want)
    out: PhysicalPlan = AggregateExec(node.schema, n, dist,
                                      ExchangeExec(partial.schema, n, dist, partial, "hash",
                                                   want),
                                      "final", node.group, node.aggs)
    for proj in reversed(chain):
        out = replace(proj, n=n, dist=_project_dist(out.dist, proj.exprs, proj.schema),
                      input=out)
    return out if out.dist == Dist("hash", keys) else None


def _project_dist(dist: Dist, exprs, fields) -> Dist:
    if dist.kind not in ("hash", "clustered"):
        return dist
    mapping = {}
    for e, f in zip(exprs, fields, strict=True):
        if isinstance(e, ColumnRef) and e.id not in mapping:
            mapping[e.id] = f.id
    if all(k in mapping for k in dist.keys):
        return Dist(dist.kind, tuple(mapping[k] for k in dist.keys))
    return ANY


def _hashable_type(t: pa.DataType) -> bool:
    return T.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t) or T.is_boolean(t)


# a hash exchange on a subset of the keys wants this many distinct values of it per partition
HASH_KEYS_PER_PARTITION = 64


def _hash_positions(keys, plan: PhysicalPlan, ndvs=None, n: int = 1) -> list[int]:
    """Which keys to hash on (any subset of the keys is a valid partitioning): the
    integer-like ones (they hash fastest), unless their distinct values are known to be too
    few to spread the rows over `n` partitions; then also as few of the others as the
    estimates say suffice, the most distinct first, or all of them when one has no estimate
    of its own. `ndvs`: one (distinct values or None, whether the column's own estimate) per
    key (Estimator.ndv_estimate); a computed key's count is an upper bound, which can tell
    "too few" but never "enough" (hashing `substr(u, 1, 1), u` on the substr alone put
    every row in one partition). Without estimates, the integer keys, or all keys.
    TPC-DS Q47 hashed its ~66k (category, brand, store, year, month) groups on year and
    month alone, 14 values for 4 partitions, and the window after it on the year alone, 3
    values: one partition got 12 months of rows, the others 1 or none."""
    types = {f.id: f.dtype for f in plan.schema}
    ints = [i for i, k in enumerate(keys) if _hashable_type(types.get(k, pa.null()))]
    every = list(range(len(keys)))
    if ndvs is None:
        return ints or every
    need = HASH_KEYS_PER_PARTITION * max(n, 2)
    if ints:
        counts = [ndvs[i][0] for i in ints]
        if None in counts or math.prod(counts) >= need:
            return ints  # enough, or not known to be too few
    rest = [i for i in every if i not in ints]
    if any(ndvs[i][0] is None or not ndvs[i][1] for i in rest):
        return every
    chosen = list(ints)
    have = math.prod(ndvs[i][0] for i in ints if ndvs[i][1]) if ints else 1.0
    for i in sorted(rest, key=lambda i: -ndvs[i][0]):
        if chosen and have >= need:
            break
        chosen.append(i)
        have *= ndvs[i][0]
    return sorted(chosen)


def _co_partitioned(left: PhysicalPlan, right: PhysicalPlan, lkeys, rkeys) -> list[int] | None:
    """The positions of the join keys both sides are already hash-partitioned on, alike (the
    same number of partitions, keys of the same types in the same order; a side may be
    partitioned on keys an inner join below made equal to them, `_partition_keys`), or None.
    Rows with equal join keys then sit in the same partition on both sides, and a
    partitioned join moves no row: TPC-DS Q47/Q57 join a window's output to itself on its partition keys and rank,
    and broadcast 65k rows to every partition (each hashing all of them) instead."""
    if left.dist.kind != "hash" or right.dist.kind != "hash" or left.n != right.n \
            or left.n < 2:
        return None
    ltypes = {f.id: f.dtype for f in left.schema}
    rtypes = {f.id: f.dtype for f in right.schema}
    for lkeys_of in _partition_keys(left):
        for rkeys_of in _partition_keys(right):
            if len(lkeys_of) != len(rkeys_of):
                continue
            pos = []
            for lk, rk in zip(lkeys_of, rkeys_of, strict=True):
                at = [i for i, (a, b) in enumerate(zip(lkeys, rkeys, strict=True))
                      if a == lk and b == rk]
                if not at or ltypes.get(lk) is None or ltypes.get(lk) != rtypes.get(rk):
                    break
                pos.append(at[0])
            else:
                return pos
    return None


def _partition_keys(plan: PhysicalPlan) -> list[tuple[str, ...]]:
    """The column tuples `plan` is hash-partitioned by: its distribution's keys, and for an
    inner partitioned join the other side's keys equal to them (rows of a partition agree
    on both; the join states only its left keys)."""
    out = [plan.dist.keys]
    if isinstance(plan, HashJoinExec) and plan.mode == "partitioned" and plan.kind == "inner":
        other = dict(zip(plan.left_keys, plan.right_keys, strict=True))
        if all(k in other for k in plan.dist.keys):
            out.append(tuple(other[k] for k in plan.dist.keys))
    return out


def _hash_keys(keys, plan, ndvs=None, n: int = 1):
    return tuple(keys[i] for i in _hash_positions(keys, plan, ndvs, n))


def _units_increasing(provider, column: str, units) -> bool:
    """Whether every unit holds a range of `column` strictly above the previous unit's: then
    any contiguous runs of the units hold disjoint, increasing ranges, as the planned
    partitions of a clustered scan do."""
    ranges = provider.unit_ranges(column)
    if ranges is None or len(provider.units_with_nulls(column) & set(units)) > 1:
        return False  # (the NULL group would be split too)
    spans = [ranges.get(u) for u in units]
    return all(a is not None and b is not None and a[1] < b[0] for a, b in zip(spans, spans[1:]))


def _clustering(node: L.Scan, provider, parts) -> Dist:
    """Clustered(k) when the partitions hold disjoint, increasing ranges of an output column
    k by the row groups' min/max (data written sorted or clustered by k, like TPC-H's keys):
    a GROUP BY k or PARTITION BY k then needs no exchange."""
    if not isinstance(provider, ParquetTable):
        return ANY
    for f in node.schema:
        if not (T.is_integer(f.dtype) or pa.types.is_date(f.dtype)):
            continue
        ranges = provider.unit_ranges(f.name)
        if ranges is None:
            continue
        # NULLs are one group too: min/max leave them out, so row groups of disjoint ranges
        # in two partitions split the NULL group in two (GROUP BY k gave two NULL rows)
        nulls = provider.units_with_nulls(f.name)
        if sum(1 for units in parts if nulls.intersection(units)) > 1:
            continue
        bounds = []
        for units in parts:
            los = [ranges[u] for u in units]
            if not los or any(r is None for r in los):
                break
            bounds.append((min(r[0] for r in los), max(r[1] for r in los)))
        else:
            if all(bounds[i][1] < bounds[i + 1][0] for i in range(len(bounds) - 1)):
                return Dist("clustered", (f.id,))
    return ANY


_FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _band(condition: Expr | None, left: PhysicalPlan, right: PhysicalPlan):
    """(Band, its bound conditions) when the join condition's conjuncts bound a value of one
    side from below and/or above by values of the other (`l.ts BETWEEN r.lo AND r.hi`,
    `l.x < r.y`, `o.price > c.balance * 30`, `b.t <= a.t + INTERVAL '7' DAY`), each compared
    as it is (integer, date, timestamp, float or DECIMAL of up to 18 digits, of the same type
    on both sides), else None. Of the values so bounded, one with both bounds is taken, then
    the right (broadcast) side's, then a column over an expression. The whole condition is
    still evaluated on the pairs the bounds give (kernels.band).

    A side may be an expression of that side's columns (not volatile, without subqueries):
    the kernel computes it for every row of its side, where a nested loop would compute it
    for every pair. When computing it fails for some row, the kernel pairs every row with
    every row instead, so the error (or the lack of one) is the nested loop's. A bound that
    may raise is used only when every conjunct that may raise and comes before it in the
    condition is a bound too: the nested loop evaluates the conjuncts that may raise one
    after the other, each on the pairs the ones before kept (`Compiler.stages`), so a pair
    the bounds leave out is then one it would never have reached a later raising conjunct
    with either."""
    if condition is None:
        return None
    lids = {f.id for f in left.schema}
    rids = {f.id for f in right.schema}
    terms = conjuncts(condition)
    raising = [may_raise(t) for t in terms]
    # key (a column id, or an expression of one side) -> {"lower": (bound, incl, index), ...}
    found: dict[object, dict] = {}
    sides: dict[object, str] = {}
    for i, c in enumerate(terms):
        if not (isinstance(c, Call) and c.fn in _FLIPPED and len(c.args) == 2):
            continue
        a, b = c.args
        if a.dtype != b.dtype or not _band_type(a.dtype) or not all(map(_band_side, (a, b))):
            continue
        ia, ib = column_ids(a), column_ids(b)
        if not ((ia <= lids and ib <= rids) or (ia <= rids and ib <= lids)):
            continue
        for key, other, fn in ((a, b, c.fn), (b, a, _FLIPPED[c.fn])):
            # key fn other: key < other bounds key from above, key > other from below
            side = "upper" if fn in ("lt", "le") else "lower"
            k = key.id if isinstance(key, ColumnRef) else key
            sides[k] = "right" if column_ids(key) <= rids else "left"
            bound = other.id if isinstance(other, ColumnRef) else other
            found.setdefault(k, {}).setdefault(side, (bound, fn in ("le", "ge"), i))
    best = None
    for k, bounds in found.items():
        kept = _ordered_bounds(bounds, raising)
        if not kept:
            continue
        rank = (-len(kept), sides[k] != "right", not isinstance(k, str),
                not all(isinstance(b[0], str) for b in kept.values()), min(b[2] for b in kept.values()))
        if best is None or rank < best[0]:
            best = (rank, k, kept)
    if best is None:
        return None
    _, key, bounds = best
    lower, upper = bounds.get("lower"), bounds.get("upper")
    band = Band(sides[key], key,
                lower[0] if lower else None, lower[1] if lower else True,
                upper[0] if upper else None, upper[1] if upper else True)
    return band, tuple(terms[b[2]] for b in (lower, upper) if b is not None)


def _band_residual(condition: Expr, band: Band, bounds: tuple[Expr, ...]) -> Expr | None:
    """What of a band join's condition is left to check on the pairs its bounds give: the
    bounds themselves hold for exactly those pairs when the keys are not floats (integers,
    dates, timestamps and DECIMALs compare in kernels.band as SQL compares them; a NULL key
    or bound gives no pair), so checking them again on 11.7M pairs took 2.4 of 4.3 s."""
    if T.is_floating(bounds[0].args[0].dtype):
        return condition
    return and_([c for c in conjuncts(condition) if c not in bounds])


def _band_side(e: Expr) -> bool:
    """Whether `e` can be a band join's key or bound: a column, or an expression of columns
    computed once per row (not volatile, no subquery or outer reference)."""
    return isinstance(e, ColumnRef) or (bool(column_ids(e)) and not is_volatile(e)
                                        and not has_subquery(e) and not has_outer_ref(e))


def _ordered_bounds(bounds: dict, raising: list[bool]) -> dict:
    """The bounds (of `_band`'s `found`) that may be used: a bound whose conjunct may raise
    only when every conjunct before it that may raise is a used bound too."""
    kept = dict(bounds)
    while True:
        used = {b[2] for b in kept.values()}
        bad = [side for side, b in kept.items() if raising[b[2]] and any(
            raising[j] and j not in used for j in range(b[2]))]
        if not bad:
            return kept
        for side in bad:
            del kept[side]


def _or_keys(condition: Expr | None, left: PhysicalPlan, right: PhysicalPlan):
    """(OrKeys, the OR) when a conjunct of the join condition is an OR each of whose terms
    holds equalities between a column of each side (of one type), or reads one side's
    columns only and cannot raise (`OR r.z = 5`), and at least one term has equalities; else
    None: the condition can only hold for a pair that one of those terms' equalities, or
    one-side condition, hold for."""
    if condition is None:
        return None
    lids = {f.id for f in left.schema}
    rids = {f.id for f in right.schema}
    for c in conjuncts(condition):
        if not (isinstance(c, Call) and c.fn == "or"):
            continue
        terms, side_terms = [], []
        for term in disjuncts(c):
            ids = column_ids(term)
            if ids and (ids <= lids or ids <= rids) and not may_raise(term):
                side_terms.append(("left" if ids <= lids else "right", term))
                continue
            pairs = []
            for e in conjuncts(term):
                if not (isinstance(e, Call) and e.fn == "eq" and len(e.args) == 2
                        and all(isinstance(a, ColumnRef) for a in e.args)
                        and e.args[0].dtype == e.args[1].dtype):
                    continue
                a, b = e.args
                if a.id in lids and b.id in rids:
                    pairs.append((a.id, b.id))
                elif a.id in rids and b.id in lids:
                    pairs.append((b.id, a.id))
            if not pairs:
                break
            terms.append(tuple(pairs))
        else:
            if terms:
                return OrKeys(tuple(terms), tuple(side_terms)), c
    return None


def _band_type(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)
            or pa.types.is_floating(t) or (pa.types.is_decimal(t) and t.precision <= 18))


DYNAMIC_BUILD_SHARE = 0.01  # a build of at most this share of the probe scan's rows


def _dynamic_filter(probe: PhysicalPlan, keys: tuple[str, ...], build_rows: float,
                    build: PhysicalPlan) -> tuple | None:
    """(scan, file column, position of the key in the join's keys, unit ranges, scan field,
    column range) for a broadcast join's dynamic filter: a probe key that is, through
    partition-local operators that keep its values (projections, the probe side of broadcast
    joins that keep probe rows' columns, the group keys of one-step aggregates), an integer
    or date column of a Parquet scan. The scan's tasks wait for the build; then the build
    keys' [min, max] filters the rows the scan returns when it is at most half the column's
    range (the file statistics' [min, max], `column range`): a 30-day date range of the
    5-year sales no longer goes through the joins the planner put below the date join
    (TPC-DS Q25 probed 2.9M store_sales rows into a three-key join with the returns, then
    kept 1.6% at the date join). When the scan's row
    groups hold narrow ranges of the column (sorted or clustered data) the range also skips
    row groups: `unit ranges` are then each unit's (min, max) of it, else None.

    Only for a build estimated at most 1% of the scan's rows (a filtered dimension: TPC-DS's
    date ranges): a larger build (TPC-H's filtered orders against lineitem) spans the key
    range anyway, and waiting for it would only keep the scan from running beside it. On
    unclustered data, where only rows are filtered, only when other joins or aggregates lie
    between the join and the scan, or the scan has filters of its own, which then run on the
    rows the range kept (TPC-DS Q49's sales: three decimal comparisons, 215 -> 150 ms);
    a join right above a scan without filters drops rows as cheaply itself, and the scan
    would wait for the build (Q78: +24 ms). And only for a build that
    is a filtered scan of a small table (a dimension, quickly read: QUICK_BUILD_ROWS): an
    unfiltered one spans its whole key range, and waiting for a large one, or a build made
    by joins or aggregates, would hold the scan back."""
    build_scan = _filtered_scan(build)
    for position, key in enumerate(keys):
        found = _probe_scan(probe, key)
        if found is None:
            continue
        node, cid, deep = found
        if build_rows > DYNAMIC_BUILD_SHARE * sum(u.num_rows for part in node.parts for u in part):
            continue
        name = next((n for n, i in node.columns if i == cid), None)
        if name is None:
            continue
        dtype = node.provider.schema.field(name).type
        if not (pa.types.is_integer(dtype) or pa.types.is_date(dtype)):
            continue
        field = next((f for f in node.schema if f.id == cid), None)
        cs = node.provider.statistics().columns.get(name)
        whole = (cs.min, cs.max) if cs is not None and cs.min is not None \
            and cs.max is not None else None
        spans = _clustered_by(node, name)
        scan_rows = sum(u.num_rows or 0 for part in node.parts for u in part)
        quick = build_scan is not None and build_scan <= min(QUICK_BUILD_ROWS,
                                                             QUICK_BUILD_SHARE * scan_rows)
        if spans is not None or (quick and (deep or node.filters) and field is not None
                                 and whole is not None):
            return (node, name, position, spans, field, whole)
    return None


def _probe_scan(probe: PhysicalPlan, cid: str, widening: bool = False) -> tuple | None:
    """(scan, column id there, deep) when the probe side's column `cid` is, through
    partition-local operators that keep its values (projections, the probe side of broadcast
    joins that keep probe rows' columns, the group keys of one-step aggregates), a column of
    a Parquet scan, each of whose rows the probe side's rows come from in place; `deep`:
    other joins or aggregates lie between. With `widening`, also through casts of an integer
    to an integer type that holds its every value (an INTEGER key against a BIGINT one: the
    same numbers). Else None."""
    node, deep = probe, False
    while not isinstance(node, ScanExec):
        if isinstance(node, ProjectExec):
            pos = [i for i, f in enumerate(node.schema) if f.id == cid]
            if not pos:
                return None
            e = node.exprs[pos[0]]
            if widening and isinstance(e, Cast) and isinstance(e.arg, ColumnRef) \
                    and _holds_every(e.dtype, e.arg.dtype):
                e = e.arg
            if not isinstance(e, ColumnRef):
                return None
            cid, node = e.id, node.input
        elif (isinstance(node, HashJoinExec) and _probes_in_place(node)
              and node.kind in ("inner", "left", "semi", "anti")
              and any(f.id == cid for f in node.left.schema)):
            node, deep = node.left, True
        elif isinstance(node, AggregateExec) and node.mode == "single" and cid in node.group:
            # a group key of a partition-local aggregate (eager aggregation below the
            # join): rows whose key the build lacks form groups that would not match
            node, deep = node.input, True
        else:
            return None
    if not isinstance(node.provider, ParquetTable):
        return None
    return node, cid, deep


def _filters_after_read(scan: ScanExec) -> bool:
    """Whether the scan has a filter it runs on the rows it read, in a pass a key pushdown
    joins (kernels.scan): one over dictionary columns alone, or one comparing a decimal
    column that fits int64."""
    dicts = {cid for name, cid in scan.columns if name in scan.dict_columns}
    for f in scan.filters:
        ids = column_ids(f)
        if ids and ids <= dicts:
            return True
        if any(isinstance(x, ColumnRef) and T.is_decimal(x.dtype) and fits_int64(x.dtype)
               for x in walk(f)):
            return True
    return False


def _holds_every(dst: pa.DataType, src: pa.DataType) -> bool:
    """Whether integer type `dst` holds every value of integer type `src`."""
    if not (pa.types.is_integer(dst) and pa.types.is_integer(src)):
        return False
    if pa.types.is_signed_integer(src):
        return pa.types.is_signed_integer(dst) and dst.bit_width >= src.bit_width
    return dst.bit_width > src.bit_width if pa.types.is_signed_integer(dst) \
        else dst.bit_width >= src.bit_width


# a broadcast join's build keys filter its probe scan's rows (key_pushdown) when the build is
# estimated at most this share of the probe key's distinct values
KEY_PUSHDOWN_SHARE = 0.5


def _key_pushdown(join: HashJoinExec, positions, build_rows: float, ndvs) -> tuple | None:
    """(scan, file column name per key position or None) for an inner or semi broadcast
    join whose build is a dense index (position 0) or has a key filter (`positions`): the
    probe scan drops the rows whose key no build row has while it filters its own rows, in
    that one pass over the columns (kernels.scan), where the join's drop was a second copy of
    the rows the scan's filter kept (TPC-H Q10: lineitem's returnflag = 'R' kept 25% of the
    rows, the join on orders of one quarter 4% of those). Only for integer columns of the
    scan's file, a build estimated at most KEY_PUSHDOWN_SHARE of the probe key's distinct
    values, and a scan that filters its rows after reading them (dictionary and decimal
    filters: _filters_after_read), whose pass the pushdown joins: TPC-H Q10 -4%, Q19 -7%,
    TPC-DS q13 and q48 -9%, q85 -5% (one process, the pushdown on and off in turn). A plain
    filter copies the rows it keeps once, in the scanner or after it, and the join drops
    its rows as cheaply itself; and below other joins the lookups cost more than the rows
    they saved those joins (on all such scans, 60 TPC-DS queries took 1-5% longer)."""
    names: list[str | None] = [None] * len(join.left_keys)
    scan = None
    for i in positions:
        ndv = ndvs[i][0] if ndvs is not None else None
        if ndv is None or build_rows > KEY_PUSHDOWN_SHARE * ndv:
            continue
        found = _probe_scan(join.left, join.left_keys[i], widening=True)
        if found is None or (scan is not None and found[0] is not scan):
            continue
        node, cid, _below = found
        if not _filters_after_read(node):
            continue
        name = next((n for n, c in node.columns if c == cid), None)
        if name is None or not pa.types.is_integer(node.provider.schema.field(name).type):
            continue
        names[i], scan = name, node
    return None if scan is None else (scan, tuple(names))


# a build read by a scan of at most this many rows, and this share of the probe scan's, is
# waited for by the probe scan (to filter its rows by the build keys' range): TPC-DS's
# date_dim (73k rows) against any sales table; not customer_demographics (1.9M, Q27: +13 ms)
QUICK_BUILD_ROWS = 200_000
QUICK_BUILD_SHARE = 0.25


def _filtered_scan(node: PhysicalPlan) -> int | None:
    """The rows a build's scan reads when the build is a scan with pushed filters, under
    projections and a gather; else None."""
    while isinstance(node, (ProjectExec, ExchangeExec)):
        if isinstance(node, ExchangeExec) and node.mode != "gather":
            return None
        node = node.input
    if not isinstance(node, ScanExec) or not node.filters:
        return None
    return sum(u.num_rows or 0 for part in node.parts for u in part)


def _probes_in_place(join: HashJoinExec) -> bool:
    """The join's left partitions probe a whole build where they are (no exchange between the
    left input and the join): broadcast joins, and one-partition joins."""
    return join.mode == "broadcast" or (join.mode == "partitioned" and join.left.n == 1
                                        and join.right.n == 1)


def _clustered_by(scan: ScanExec, column: str) -> tuple | None:
    """When the scan's row groups hold narrow ranges of `column` (their widths add up to at
    most twice the whole range; each row group of unclustered data spans nearly all of it),
    the (min, max) of every unit of every partition, in the order of `scan.parts`; else None."""
    ranges = scan.provider.unit_ranges(column)
    units = [u for part in scan.parts for u in part]
    if ranges is None or len(units) < 2:
        return None
    spans = [ranges.get(u) for u in units]
    if any(r is None for r in spans):
        return None

    def num(v) -> int:
        return v.toordinal() if hasattr(v, "toordinal") else int(v)

    lo = min(num(r[0]) for r in spans)
    hi = max(num(r[1]) for r in spans)
    if sum(num(r[1]) - num(r[0]) for r in spans) > 2 * max(1, hi - lo):
        return None
    return tuple(tuple(ranges[u] for u in part) for part in scan.parts)


def _dictionary_columns(node: L.Scan, provider: ParquetTable, columns) -> tuple[str, ...]:
    """Low-cardinality text columns (every row group's chunk dictionary-encoded): reading them
    as dictionaries decodes each distinct string once instead of once per row (Parquet's
    string and string_view decoders cost ~4x more). Filters on one of them alone run on the
    dictionary's values; the columns the scan returns are cast back to text after filtering."""
    stats = provider.statistics().columns
    phys = provider.physical_schema
    chosen = []
    read = {name for name, _ in columns}
    for f in node.fields:
        if f.name not in read or not T.is_text(f.dtype):
            continue
        cs = stats.get(f.name)
        if cs is None or cs.distinct_count is None:
            continue
        if phys.get_field_index(f.name) < 0:  # a hive partition column
            continue
        chosen.append(f.name)
    return tuple(chosen)


def balance(units, n: int) -> tuple[tuple[ScanUnit, ...], ...]:
    """Split units (in order) into n contiguous runs of similar row counts (fewer when there
    are fewer units). The execution layer deals a dynamically filtered scan's surviving
    units out with it too (ops.ReadFiles)."""
    total = sum(u.num_rows for u in units)
    target = total / n if n else total
    parts, cur, acc = [], [], 0
    for i, u in enumerate(units):
        cur.append(u)
        acc += u.num_rows
        remaining_units = len(units) - i - 1
        remaining_parts = n - len(parts) - 1
        if remaining_parts > 0 and (acc >= target * (len(parts) + 1) or remaining_units == remaining_parts):
            parts.append(tuple(cur))
            cur = []
    if cur:
        parts.append(tuple(cur))
    return tuple(parts)


def _interval_groups(node: L.Aggregate) -> L.LogicalPlan | None:
    """GROUP BY (or DISTINCT, UNION) of INTERVALs as DuckDB groups them, by length (a month is
    30 days: '1 month' and '30 days' are one group): grouped by each interval's normalized
    (days, rest) pair (`_sort_keys`), its value one of the group's own, as written
    (ARG_MAX by length: any row of the group; NULL for the NULL group). None when no group
    key is an INTERVAL."""
    if not any(T.is_interval(g.dtype) for g in node.group):
        return None
    group, fields, values, value_fields = [], [], [], []
    for g, f in zip(node.group, node.group_fields, strict=True):
        if not T.is_interval(g.dtype):
            group.append(g)
            fields.append(f)
            continue
        for k in _sort_keys(g):
            group.append(k)
            fields.append(B.new_field(f"{f.name}_length", T.INT64, g.nullable))
        length = Call("pqe_interval_total_key", (g,), pa.decimal128(38, 0), g.nullable)
        values.append(AggCall("arg_max", (g, length), g.dtype, False, None, ()))
        value_fields.append(f)
    grouped = L.Aggregate(node.input, tuple(group), tuple(fields), node.aggs + tuple(values),
                          node.agg_fields + tuple(value_fields), node.local)
    return L.Project(grouped, tuple(ColumnRef(f) for f in node.schema), node.schema)


def _interval_join(node: L.Join) -> L.Join | None:
    """A join on INTERVAL keys as DuckDB compares them, by length (a month is 30 days:
    '1 month' joins '30 days'): each INTERVAL key pair becomes the pairs of the sides'
    normalized (days, rest) keys (`_sort_keys`, NULL where the interval is). None when no key
    is an INTERVAL."""
    if not any(T.is_interval(a.dtype) for a, _ in node.on):
        return None
    on = []
    for a, b in node.on:
        on.extend(zip(_sort_keys(a), _sort_keys(b), strict=True))
    return L.Join(node.left, node.right, node.kind, tuple(on), node.filter, node.null_aware)


def _sort_keys(e: Expr) -> tuple[Expr, ...]:
    """What sorts (or partitions) rows as `e` orders them: an INTERVAL by its normalized
    (days, rest) pair (a month is 30 days: INTERVAL '1 month' and '30 days' are peers, as
    DuckDB orders them; Arrow has no sort of intervals), anything else by itself."""
    if not T.is_interval(e.dtype):
        return (e,)
    return tuple(Call(f"pqe_interval_{k}_key", (e,), T.INT64, e.nullable)
                 for k in ("days", "rest"))


def _keys_of_type(node: L.LogicalPlan, test) -> str | None:
    """What `node` would group, order, join or partition by values whose type passes `test`,
    if anything. INTERVAL: Arrow compares an interval as its (months, days, nanoseconds)
    triple, DuckDB as one length (a month is 30 days, a day 24 hours): sorts and window keys
    take the normalized pair (`_sort_keys`), GROUP BY and join keys are rewritten before
    this check (`_interval_groups`, `_interval_join`), and MIN / MAX are ARG_MAX by length
    (plan.builder), so what is left (DISTINCT arguments, a RANGE frame's offsets over an
    interval ORDER BY) is refused rather than answered differently. LIST, STRUCT, MAP:
    Arrow's group-by, sort and join kernels take none (their messages named kernels, not the
    SQL)."""
    def iv(e) -> bool:
        return test(e.dtype)

    sortable = test is T.is_interval  # (INTERVALs sort by _sort_keys)
    if isinstance(node, L.Aggregate):
        if any(iv(g) for g in node.group):
            return "GROUP BY (or DISTINCT, UNION, INTERSECT, EXCEPT)"
        for a in node.aggs:
            if a.distinct and any(iv(x) for x in a.args):
                return f"{a.fn.upper()}(DISTINCT ...)"
            if a.fn in ("min", "max", "any_value") and any(iv(x) for x in a.args) or \
                    a.fn in ("arg_min", "arg_max") and any(
                        iv(x) for x in a.args[1 if sortable else 0:]):
                return f"{a.fn.upper()}"  # (ARG_MAX takes an INTERVAL x)
            if any(iv(k.expr) for k in a.order_by):
                return "ORDER BY inside an aggregate"
    if isinstance(node, L.Sort) and any(iv(k.expr) for k in node.keys) and not sortable:
        return "ORDER BY"
    if isinstance(node, L.Window):
        for c in node.calls:
            frame = getattr(c, "frame", None)
            offsets = frame is not None and frame.mode == "range" and any(
                b.offset is not None for b in (frame.start, frame.end))
            ordered = any(iv(k.expr) for k in getattr(c, "order_by", ()))
            if not sortable and (ordered or any(iv(p) for p in getattr(c, "partition_by", ()))):
                return "a window's PARTITION BY or ORDER BY"
            if ordered and offsets:
                return "a RANGE frame with offsets over an ORDER BY"
            if getattr(c, "fn", None) in ("min", "max") and any(
                    iv(x) for x in getattr(c, "args", ())):
                return f"{c.fn.upper()} as a window function"
    if isinstance(node, L.Join) and any(iv(a) or iv(b) for a, b in node.on) and not sortable:
        return "a join"  # (INTERVAL keys: rewritten before this check, `_interval_join`)
    return None


def statistics_filters(filters) -> tuple:
    """The pushed filters row-group statistics can decide. A filter reading a float column is
    left out: Parquet's min/max leave NaN out, so `f = 'nan'` (NaN equals NaN, pqe's rule) or
    `f > 2` (NaN sorts above every number) would prune row groups that hold matching NaNs.
    So is one that makes a float of an exact number (`bigint_col > 9.2e18`): the scanner
    casts the row group's min/max with a safe cast, which fails for integers past 2^53.
    A volatile filter (random()) is left out too: it is no property of a row group, and
    evaluated as the scanner's or a dictionary's filter it drew one value for a whole batch
    or for all the rows of one text value (kernels.scan runs it after the read, per row)."""
    from ..plan.expr import Cast, ColumnRef, is_volatile, walk

    def floats(x) -> bool:
        return (isinstance(x, ColumnRef) and T.is_floating(x.dtype)
                or isinstance(x, Cast) and T.is_floating(x.dtype)
                and not T.is_floating(x.arg.dtype))

    return tuple(f for f in filters if not is_volatile(f) and not any(floats(x) for x in walk(f)))


def _prune_units(provider: ParquetTable, node: L.Scan, units: list[ScanUnit],
                 compile_filter) -> list[ScanUnit]:
    """Drop row groups whose statistics prove the pushed filters false. `compile_filter`
    (filters, {id: file column}) -> a pyarrow.dataset expression comes from the execution
    layer (the session passes kernels.scan.pruning_expression): the planner decides what to
    prune, the kernels' expression compiler says it in Arrow's terms."""
    from ..plan.expr import column_ids

    stored = {f.id for f in node.fields
              if isinstance(_physical_type(provider, f.name), pa.BaseExtensionType)}
    filters = tuple(f for f in statistics_filters(node.filters) if not column_ids(f) & stored)
    if compile_filter is None or not filters:
        return units
    expr = compile_filter(provider, filters, {f.id: f.name for f in node.fields})
    if expr is None:
        return units
    keep: list[ScanUnit] = []
    by_path = provider.matching_row_groups(expr)
    for u in units:
        ids = by_path.get(u.path)
        if ids is None or any(r in ids for r in u.row_groups):
            keep.append(u)
    return keep


def _physical_type(provider, name: str) -> pa.DataType | None:
    """A file table's column as stored (an extension type, where the engine reads another)."""
    phys = getattr(provider, "physical_schema", None)
    idx = phys.get_field_index(name) if phys is not None else -1
    return phys.field(idx).type if idx >= 0 else None


def plan_write(plan: PhysicalPlan, spec, ids: tuple[str, ...]) -> PhysicalPlan:
    """A query's physical plan whose every output partition is written by the task that
    computes it (no exchange: one file per partition and hive directory)."""
    from .plan import WriteExec

    schema = (Field("path", "path", pa.string()), Field("rows", "rows", pa.int64()))
    return WriteExec(schema, plan.n, ANY, plan, spec, tuple(ids))


# a task holds its input partition decoded, its output, and hash tables or sort buffers:
# about this many partitions' worth of memory at once (SF10 on 2 threads under 2 GiB: with 4,
# q5, q9 and q18 peaked at 2.4-2.9 GB)
TASK_MEMORY_FACTOR = 8
# under memory_limit, what operators hold between tasks (builds, gathers, shuffle pieces: the
# plan's estimate) gets this share; the running tasks the rest
HELD_FRACTION = 0.5
# a broadcast build is held whole by every process that probes it, beside the running tasks:
# at most this share of a process's memory (SF10 q5 and q9 on 1 GiB workers: the orders build
# with its lookup array, 420-660 MB, killed the workers)
BROADCAST_FRACTION = 0.125


def bound_memory(cfg: PlannerConfig, memory_limit: int | None, threads: int) -> PlannerConfig:
    """The planner's settings for running on `threads` threads per process, each process
    within `memory_limit` bytes (Context(memory_limit=) on threads; a Dask worker's memory
    limit): partitions sized so that every running task fits (limit / threads /
    TASK_MEMORY_FACTOR each), broadcast builds (and scans read once for two consumers, held
    between them) of at most BROADCAST_FRACTION of the limit, and
    hash exchanges through local disk when the plan's estimate exceeds half the limit
    (`choose_exchanges`)."""
    if not memory_limit:
        return cfg
    per_task = memory_limit // max(1, threads) // TASK_MEMORY_FACTOR
    return replace(cfg, memory_limit=int(memory_limit),
                   max_partition_bytes=max(8 << 20, int(per_task)),
                   broadcast_bytes=int(memory_limit * BROADCAST_FRACTION),
                   shared_scan_bytes=min(cfg.shared_scan_bytes,
                                         int(memory_limit * BROADCAST_FRACTION)))


def choose_exchanges(plan: PhysicalPlan, cfg: PlannerConfig) -> PhysicalPlan:
    """The exchange rule: each hash exchange's kind. The task grid costs the scheduler one
    task per (input, output) partition pair and keeps every piece in memory; the disk-backed
    exchange costs 2P + 1 tasks and writes the pieces to local disk (benchmarks/CLUSTER.md:
    the crossover). Disk is also chosen for every hash exchange when the plan's estimate
    exceeds `memory_limit`, so what a query holds at once stays bounded."""
    from .plan import estimated_memory, nodes_once

    mode = cfg.exchange
    if mode not in ("auto", "tasks", "p2p"):
        raise InternalError(f"unknown exchange kind {mode!r}")
    over = cfg.memory_limit is not None and \
        estimated_memory(plan) > cfg.memory_limit * HELD_FRACTION
    grid = max(1, cfg.p2p_partitions) ** 2
    for node in nodes_once(plan):
        if isinstance(node, ExchangeExec) and node.mode == "hash":
            if mode == "auto":
                node.kind = "p2p" if over or node.input.n * node.n >= grid else "tasks"
            else:
                node.kind = mode
    return plan


def plan_physical(plan: L.LogicalPlan, config: PlannerConfig,
                  compile_filter=None) -> PhysicalPlan:
    """The partitioned plan. `compile_filter` turns pushed scan filters into a
    pyarrow.dataset expression for row-group pruning (None: no pruning)."""
    planner = PhysicalPlanner(config, compile_filter)
    out = planner.plan(plan)
    out.est_bytes += planner.est.bytes(plan)  # the result, assembled on the client
    _drop_shared_dynamic_filters(out)
    _probe_text_encoded(out)
    _build_text_encoded(out)
    return choose_exchanges(out, config)


def _probe_text_encoded(plan: PhysicalPlan) -> None:
    """A join probed straight from a Parquet scan (one fused task per partition: a broadcast,
    or a join of single partitions)
    whose dictionary-read text columns are neither keys nor read by its condition: the scan
    returns them encoded and the join decodes the rows it outputs. TPC-H Q12 at SF10 decoded
    3.8M order priorities per partition to keep 78k. Only a scan with this one consumer (a
    shared scan's other consumers need text)."""
    parents = parent_counts(plan)
    joins = [node for node in nodes_once(plan) if isinstance(node, HashJoinExec)
             and node.mode != "build_left" and not node.null_aware
             and isinstance(node.left, ScanExec)]
    for join in joins:
        scan = join.left
        if parents.get(id(scan), 0) != 1 or not scan.dict_columns:
            continue
        names = {cid: name for name, cid in scan.columns}
        busy = set(join.left_keys) | column_ids_all(scan.filters)
        if join.filter is not None:
            busy |= column_ids_all([join.filter])
        # only columns the join outputs: every encoded column is one the join decodes (and
        # whose dictionaries it unifies before Acero, which cannot carry differing ones)
        out = {f.id for f in join.schema}
        ids = tuple(f.id for f in scan.schema if f.id not in busy and f.id in out
                    and names.get(f.id) in scan.dict_columns and names[f.id] not in scan.encoded)
        if not ids:
            continue
        scan.encoded = tuple(scan.encoded) + tuple(names[c] for c in ids)
        join.decode = ids


def _build_text_encoded(plan: PhysicalPlan) -> None:
    """Group keys that are dictionary-read text columns of a dense join's build side (a
    dimension's brand, category, store name) stay encoded from the build's scan through the
    joins to the aggregate: the probe gathers int32 indices instead of strings, the aggregate
    groups by them, and decodes the groups it outputs (kernels.aggregate). A broadcast
    build's dictionary is the one build table's, so each probe partition's chunks share it
    (others are unified there). Only along a path of nodes with one consumer each, and only
    columns that nothing on the path reads but the aggregate's keys (join keys, conditions,
    computed columns need text)."""
    parents = parent_counts(plan)
    for agg in nodes_once(plan):
        if not isinstance(agg, AggregateExec) or agg.mode not in ("partial", "single"):
            continue
        wanted, node = set(agg.group), agg.input
        while wanted and parents.get(id(node), 0) == 1:
            if isinstance(node, ProjectExec):
                wanted, node = _passed_through(node, wanted), node.input
            elif isinstance(node, HashJoinExec) and node.dense and node.mode != "build_left" \
                    and node.kind in ("inner", "left") and not node.null_aware:
                wanted -= set(node.left_keys) | set(node.right_keys)
                if node.filter is not None:
                    wanted -= column_ids_all([node.filter])
                built = {f.id for f in node.right.schema}
                if wanted & built:
                    left = _encode_scan_columns(node.right, wanted & built, parents)
                    text = {f.id for f in node.right.schema if T.is_text(f.dtype)}
                    if left & text and (node.mode == "broadcast" or node.right.n == 1) \
                            and agg.est_input_rows >= ENCODE_REPEATS * node.est_build_rows:
                        # computed on the build side (a substr of the item's description)
                        # or read as text: the dense build encodes them, when the rows
                        # grouped repeat each build row often (TPC-DS Q23: 1.65M rows of
                        # 18k items; TPC-H Q10's 114k rows of 57k orders lost time so)
                        node.encode_build = tuple(sorted(left & text))
                wanted, node = wanted - built, node.left
            else:
                break


ENCODE_REPEATS = 8


def _passed_through(p: ProjectExec, wanted: set[str]) -> set[str]:
    """The input columns a projection passes on as `wanted` output columns, less the ones its
    other expressions or its predicate read."""
    sources, others = set(), []
    for e, f in zip(p.exprs, p.schema, strict=True):
        if f.id in wanted and isinstance(e, ColumnRef):
            sources.add(e.id)
        else:
            others.append(e)
    if p.predicate is not None:
        others.append(p.predicate)
    return sources - column_ids_all(others)


def _encode_scan_columns(node: PhysicalPlan, wanted: set[str], parents) -> set[str]:
    """Have the Parquet scan at the bottom of `node` (through pass-through projections and a
    gathering exchange, each with one consumer) return its dictionary-read columns `wanted`
    encoded. Returns the ones of `wanted` (ids of `node`'s output) it could not."""
    renamed = {c: c for c in wanted}  # id at `node` -> id here
    while renamed and parents.get(id(node), 0) == 1:
        if isinstance(node, ProjectExec):
            kept = _passed_through(node, set(renamed.values()))
            sources = {f.id: e.id for e, f in zip(node.exprs, node.schema, strict=True)
                       if isinstance(e, ColumnRef)}
            renamed = {c: sources[v] for c, v in renamed.items()
                       if v in sources and sources[v] in kept}
            node = node.input
        elif isinstance(node, ExchangeExec) and node.mode == "gather":
            node = node.input
        elif isinstance(node, ScanExec):
            names = {cid: name for name, cid in node.columns}
            filtered = column_ids_all(node.filters)
            done = {c for c, v in renamed.items() if v in names and v not in filtered
                    and names[v] in node.dict_columns}
            node.encoded = tuple(node.encoded) + tuple(
                sorted({names[renamed[c]] for c in done} - set(node.encoded)))
            return set(wanted) - done
        else:
            break
    return set(wanted)


def _drop_shared_dynamic_filters(plan: PhysicalPlan) -> None:
    """A dynamic filter holds only while every node from its join down to the scan has that
    one consumer: a shared subplan (TPC-DS Q75's sales-join-item, probed by a 2001 and a 2002
    date_dim) is computed once for all its consumers, so no one join's build may narrow it.

    A shared scan itself (Q39's inventory, read once for a January and a February date_dim)
    may still skip the units outside every consumer's range when each of its consumers reaches
    a join with a dynamic filter: `ScanExec.dynamic_joins` lists one such join per consumer, and
    the scan reads the units inside the union of their builds' [min, max]."""
    parents = parent_counts(plan)
    for join in nodes_once(plan):
        # (a key pushdown likewise, and never into a shared scan: lower.Lowering)
        if isinstance(join, HashJoinExec) and join.key_pushdown is not None:
            scan, node = join.key_pushdown[0], join.left
            while parents.get(id(node), 0) <= 1 and node is not scan:
                node = node.input if isinstance(node, (ProjectExec, AggregateExec)) else node.left
            if parents.get(id(node), 0) > 1:
                join.key_pushdown = None
    joins = [node for node in nodes_once(plan)
             if isinstance(node, HashJoinExec) and node.runtime_filter is not None]
    by_scan: dict[int, tuple[ScanExec, dict[int, HashJoinExec]]] = {}
    for join in joins:
        scan, node, above = join.runtime_filter[0], join.left, join
        while node is not scan:
            if parents.get(id(node), 0) > 1:
                join.runtime_filter = None
                break
            node, above = (node.input if isinstance(node, (ProjectExec, AggregateExec))
                           else node.left), node
        else:
            # one join per consumer of a shared scan: the first one that skips row groups
            if parents.get(id(scan), 0) > 1 and join.runtime_filter[3] is not None:
                by_scan.setdefault(id(scan), (scan, {}))[1].setdefault(id(above), join)
            elif parents.get(id(scan), 0) > 1:
                by_scan.setdefault(id(scan), (scan, {}))
    for scan, entries in by_scan.values():
        chosen = list(entries.values())
        if len(entries) == parents[id(scan)] and not any(_reaches(j.right, scan) for j in chosen):
            scan.dynamic_joins = tuple(chosen)
        for join in joins:
            if join.runtime_filter is not None and join.runtime_filter[0] is scan \
                    and not any(join is j for j in scan.dynamic_joins):
                join.runtime_filter = None


def _reaches(node: PhysicalPlan, target: PhysicalPlan) -> bool:
    seen: set[int] = set()
    stack = [node]
    while stack:
        cur = stack.pop()
        if cur is target:
            return True
        if id(cur) not in seen:
            seen.add(id(cur))
            stack.extend(cur.children())
    return False
