"""Physical plan -> Dask task graph.

Like dask-expr's lowering: partition-local operators are fused, so a chain such as
scan -> filter/project -> broadcast-join probe -> partial aggregate becomes one task per
partition; only exchanges (hash split + per-partition concatenation), broadcasts and gathers
create new tasks. Keys are `(name, i)` with `name` a hash of the work, so the same plan always
yields the same graph, and identical subplans (a CTE used twice) are computed once.
"""

from __future__ import annotations

import functools
import hashlib
import operator

import pyarrow as pa
from dataclasses import dataclass

from ..errors import InternalError
from ..kernels import dense_join
from ..kernels.join import ROW_ID
from ..physical import plan as P
from . import ops as O

# a dynamically filtered scan of at most this many units deals the kept ones out to its tasks
# at run time (_scanexec); each task's op carries the scan's every unit
RESPLIT_UNITS = 4096


@dataclass(frozen=True)
class Pending:
    """A partition not yet made into a task: ops to run over task inputs."""

    ops: tuple
    inputs: tuple

    def then(self, op: O.Op) -> Pending:
        return Pending(self.ops + (op,), self.inputs)


def _work_token(parts: list[Pending]) -> str:
    """A hash of what `parts` compute: their ops' reprs and their inputs. Partitions share
    most of their ops (all but a scan's units): each distinct op object is rendered once
    (its repr is its fields, fixed by now; rendering a fused chain's expressions for every
    partition was 4% of TPC-DS's planning)."""
    seen: dict[int, str] = {}
    out = hashlib.sha1()
    for p in parts:
        texts = []
        for op in p.ops:
            text = seen.get(id(op))
            if text is None:
                text = seen[id(op)] = repr(op)
            texts.append(text)
        # (repr of the list of strings: quoted and escaped, so no two lists read alike)
        out.update(repr((texts, p.inputs)).encode())
        out.update(b"\n")
    return out.hexdigest()[:16]


class Lowering:
    """`materialized`: results of recursive queries the driver ran first (id(node) -> table);
    `bindings`: the tables a recursive step's work tables read this iteration
    ((name, which) -> table); `place(provider, slices)`: the task inputs holding an in-memory
    table's slices, one per slice, already on the cluster (None: the table enters the graph)."""

    def __init__(self, token: O.CancelToken | None = None, materialized: dict | None = None,
                 bindings: dict | None = None, tag: str = "", place=None) -> None:
        self.token = token
        self.materialized = materialized or {}
        self.bindings = bindings or {}
        self.place = place
        self.tag = tag  # makes data keys unique per iteration (a cluster keeps old keys)
        self.node_ids: dict[int, int] = {}  # id(physical node) -> number
        self._stack: list[int] = []
        self.graph: dict = {}
        self.tasks_per_label: dict[str, int] = {}
        self._parents: dict[int, int] = {}  # id(physical node) -> number of consumers
        self._shared: dict[int, list[Pending]] = {}
        self._node_of: dict[int, P.PhysicalPlan] = {}  # number -> physical node (task names)
        self._tables: dict[int, str] = {}
        # id(scan) -> the dynamic filters of the broadcast joins being lowered above it:
        # (file column, build table's graph key, build key column id)
        self._dynamic: dict[int, list[tuple]] = {}
        # id(scan) -> the key pushdowns of the broadcast joins being lowered above it:
        # (graph key of the dense index or key filter, file column per key position)
        self._members: dict[int, list[tuple]] = {}

    def lower_plan(self, root: P.PhysicalPlan) -> list[Pending]:
        """The pending output partitions of a whole plan."""
        self._count_parents(root)
        return self.lower(root)

    def _count_parents(self, root: P.PhysicalPlan) -> None:
        seen: set[int] = set()
        stack = [root]
        while stack:
            node = stack.pop()
            for child in node.children():
                self._parents[id(child)] = self._parents.get(id(child), 0) + 1
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append(child)

    # ---- graph construction ----------------------------------------------------------------

    @staticmethod
    def _tag(ops, nid: int) -> list:
        """Give the untagged ops (the suffix a node appended: its children's ops come first
        and are tagged already) to node `nid`; returns them. Walks only that suffix, so a
        deep chain of fused operators costs linear time."""
        own = []
        for op in reversed(ops):
            if op.node is not None:
                break
            op.node = nid
            own.append(op)
        own.reverse()
        return own

    def materialize(self, parts: list[Pending], label: str) -> list:
        """Emit one task per pending partition; returns their keys."""
        if self._stack:
            for p in parts:
                self._tag(p.ops, self._stack[-1])
        token = _work_token(parts)
        name = f"{self._task_name(parts, label)}-{token}"
        keys = []
        for i, p in enumerate(parts):
            # a pending that only forwards one existing task needs no task of its own
            if len(p.ops) == 1 and isinstance(p.ops[0], O.Concat) and len(p.inputs) == 1:
                keys.append(p.inputs[0])
                continue
            key = (name, i)
            if key not in self.graph:
                pipe = O.Pipeline(p.ops, f"{label} partition {i}", self.token, i)
                # (its dask token: the key it computes, in this query; see Pipeline)
                pipe._token = f"{name}-{i}-{getattr(self.token, 'qid', '') or ''}"
                self.graph[key] = (O.run_pipeline, pipe, *p.inputs)
                self.tasks_per_label[label] = self.tasks_per_label.get(label, 0) + 1
            keys.append(key)
        return keys

    def _one(self, parts: list[Pending], label: str):
        if len(parts) != 1:
            raise InternalError(f"{label} expected one partition, got {len(parts)}")
        return self.materialize(parts, label)[0]

    def _task_name(self, parts: list[Pending], label: str) -> str:
        """What a group of tasks does, for the dashboard, logs and errors: the operator that
        produces their output (or the step `label` names) and the table it reads, e.g.
        `scan-lineitem`, `hashjoin-build-orders`, `exchange-split-lineitem`."""
        node = None
        if parts and parts[0].ops:
            node = self._node_of.get(parts[0].ops[-1].node)
        word = _LABEL_WORDS.get(label)
        if word is None:
            word = _op_word(node) if node is not None else label
        table = self._table_of(node) if node is not None else ""
        return f"{word}-{table}" if table else word

    def _table_of(self, node: P.PhysicalPlan) -> str:
        """The first table read below `node` (the probe side first), as a key-safe word."""
        hit = self._tables.get(id(node))
        if hit is not None:
            return hit
        found, stack, seen = "", [node], set()
        while stack:
            cur = stack.pop()
            if id(cur) in seen:  # the plan is a DAG: shared subplans are walked once
                continue
            seen.add(id(cur))
            table = getattr(cur, "table", None)
            if isinstance(table, str) and table:
                found = table
                break
            if isinstance(cur, (P.RecursiveExec, P.WorkTableExec)):
                found = cur.name.split("#")[0]
                break
            stack.extend(reversed(cur.children()))
        word = "".join(c if c.isalnum() or c == "_" else "_" for c in found.lower())[:40]
        self._tables[id(node)] = word
        return word

    # ---- nodes ---------------------------------------------------------------------------

    def lower(self, node: P.PhysicalPlan) -> list[Pending]:
        """A node with several consumers (a view or scan the planner shared) becomes tasks of
        its own, computed once; every consumer reads them instead of fusing a copy."""
        if self._parents.get(id(node), 0) > 1:
            hit = self._shared.get(id(node))
            if hit is None:
                # computed once for every consumer: no one consumer's dynamic filter applies
                dynamic, self._dynamic = self._dynamic, {}
                members, self._members = self._members, {}
                try:
                    parts = self._lower(node)
                finally:
                    self._dynamic, self._members = dynamic, members
                keys = self.materialize(parts, "shared")
                hit = [Pending((O.Concat(indices=(0,)),), (k,)) for k in keys]
                self._shared[id(node)] = hit
            return list(hit)
        return self._lower(node)

    def _lower(self, node: P.PhysicalPlan) -> list[Pending]:
        method = self._METHODS.get(type(node))
        if method is None:
            raise InternalError(f"no lowering for {type(node).__name__}")
        nid = self.node_ids.setdefault(id(node), len(self.node_ids))
        self._node_of[nid] = node
        self._stack.append(nid)
        try:
            parts = method(self, node)
        finally:
            self._stack.pop()
        # tag the ops this node added (for EXPLAIN ANALYZE): those no child owns; the last
        # of them in each partition produces the node's output rows
        for p in parts:
            own = self._tag(p.ops, nid)
            if own:
                own[-1].counts_rows = True
        if len(parts) != node.n:
            raise InternalError(f"{type(node).__name__} lowered to {len(parts)} partitions, "
                                f"planned {node.n}")
        return parts

    def _scanexec(self, node: P.ScanExec):
        out = tuple(f.id for f in node.schema)
        # dynamic filters as groups of (build, key, unit ranges): a unit is read when, in every
        # group, some build's key range meets it. The joins being lowered above this scan
        # each make a group; a scan shared by several consumers is read once for all of them,
        # so only a group of one join per consumer (any of their ranges) can apply
        if self._parents.get(id(node), 0) <= 1:
            groups = [[(build, key, spans, field, whole)]
                      for build, key, spans, field, whole in self._dynamic.get(id(node), [])]
        elif node.dynamic_joins:
            groups = [[(self._broadcast_key(j.right), j.right_keys[j.runtime_filter[2]],
                        *j.runtime_filter[3:]) for j in node.dynamic_joins]]
        else:
            groups = []
        inputs = tuple(build for g in groups for build, *_ in g)
        # key pushdowns (kernels.scan): the probe rows whose key no build row has are dropped
        # in the scan's filter pass
        members = list(self._members.get(id(node), [])) \
            if self._parents.get(id(node), 0) <= 1 else []
        pushed = tuple((len(inputs) + k, names) for k, (_, names) in enumerate(members))
        inputs += tuple(build for build, _ in members)
        # a dynamic filter skips the units outside the builds' key ranges: on data clustered
        # by the key (TPC-DS's fact tables by date) they are contiguous, so the planned
        # partitions would keep them in one or two of the tasks. Every task then gets all the
        # units, keeps the same ones and reads its own share of them (O.ReadFiles.share)
        # (each task's op then holds every unit: up to RESPLIT_UNITS of them)
        # (a filter whose unit ranges are None filters rows only: every unit is read)
        whole = tuple(u for units in node.parts for u in units)
        resplit = any(spans is not None for g in groups for _, _, spans, _, _ in g) \
            and node.resplit and len(whole) <= RESPLIT_UNITS
        flat = {id(spans): tuple(s for ss in spans for s in ss)
                for g in groups for _, _, spans, _, _ in g if spans is not None} if resplit else {}
        parts = []
        for p, units in enumerate(node.parts):
            ranges, i = [], 0
            for g in groups:
                ranges.append(tuple(
                    (i + k, key, None if spans is None else flat[id(spans)] if resplit
                     else spans[p], field, bounds)
                    for k, (_, key, spans, field, bounds) in enumerate(g)))
                i += len(g)
            parts.append(Pending((O.ReadFiles(provider=node.provider,
                                              units=whole if resplit else units,
                                              columns=node.columns, filters=node.filters,
                                              out_ids=out, dict_columns=node.dict_columns,
                                              encoded=node.encoded, nested=node.nested,
                                              ranges=tuple(ranges), members=pushed,
                                              share=(p, node.n) if resplit else None),),
                                 inputs))
        return parts

    def _memoryscanexec(self, node: P.MemoryScanExec):
        out = tuple(f.id for f in node.schema)
        pieces = self.place(node.provider, node.slices) if self.place is not None else None
        if pieces is not None:  # each task reads its own piece, placed on the cluster
            return [Pending((O.ReadMemory(provider=node.provider, offset=0, length=length,
                                          columns=node.columns, filters=node.filters,
                                          out_ids=out),), (piece,))
                    for piece, (_, length) in zip(pieces, node.slices, strict=True)]
        data_key = f"table-{node.provider.token}"
        self.graph[data_key] = node.provider.table  # data enters the graph once
        return [Pending((O.ReadMemory(provider=node.provider, offset=off, length=length,
                                      columns=node.columns, filters=node.filters, out_ids=out),),
                        (data_key,))
                for off, length in node.slices]

    def _daskscanexec(self, node: P.DaskScanExec):
        ddf = node.provider.ddf
        self.graph.update(dict(ddf.__dask_graph__()))
        out = tuple(f.id for f in node.schema)
        op = O.FromPandas(provider=node.provider, columns=node.columns, filters=node.filters,
                          out_ids=out)
        return [Pending((op,), (key,)) for key in ddf.__dask_keys__()]

    def _valuesexec(self, node: P.ValuesExec):
        return [Pending((O.MakeValues(rows=node.rows, fields=node.schema),), ())]

    def _projectexec(self, node: P.ProjectExec):
        op = O.FilterProject(predicate=node.predicate, exprs=node.exprs,
                             out_ids=tuple(f.id for f in node.schema), unscaled_ids=(),
                             int64_decimal=node.int64_decimal)
        return [p.then(op) for p in self.lower(node.input)]

    def _broadcast_key(self, node: P.PhysicalPlan):
        return self._one(self.lower(node), "broadcast")

    def _hashjoinexec(self, node: P.HashJoinExec):
        if node.mode == "build_left":
            if node.kind == "left":
                return self._build_left_outer(node)
            return self._build_left_semi(node)
        out = tuple(f.id for f in node.schema)
        if node.mode == "broadcast" or node.right.n == 1:
            build = self._broadcast_key(node.right)
            dynamic = node.runtime_filter
            if dynamic is not None:  # the probe scan reads what the build's keys can match
                scan, _column, position, spans, field, whole = dynamic
                self._dynamic.setdefault(id(scan), []).append(
                    (build, node.right_keys[position], spans, field, whole))
            raw, key_filter = build, None
            if node.dense:
                build = self._dense_build(build, node.right_keys[0], node.encode_build)
            elif node.key_filter and not P.takes_runs(node):
                # the build's key values, once, for every probe partition to drop the rows
                # no build row can match before hashing (kernels.dense_join.KeyFilter)
                keys = tuple(node.right_keys[i] for i in node.key_filter)
                fn = functools.partial(dense_join.build_key_filter, keys=keys)
                name = "key-filter-" + hashlib.sha1(repr((raw, keys)).encode()).hexdigest()[:16]
                self.graph[(name, 0)] = (fn, raw)
                key_filter = (name, 0)
            pushdown = node.key_pushdown
            if pushdown is not None and (node.dense or key_filter is not None):
                # the probe scan drops the rows no build key matches in its own filter pass
                # (kernels.scan: a dense index's keys, or the key filter's at its position,
                # which counts the key filter's keys, not the join's)
                names = pushdown[1] if node.dense else \
                    tuple(pushdown[1][i] for i in node.key_filter)
                self._members.setdefault(id(pushdown[0]), []).append(
                    (build if node.dense else key_filter, names))
            else:
                pushdown = None
            try:
                left = self.lower(node.left)
            finally:
                if dynamic is not None:
                    self._dynamic[id(scan)].pop()
                if pushdown is not None:
                    self._members[id(pushdown[0])].pop()
            if P.takes_runs(node) and not node.dense:
                # a big build on a key that repeats: grouped by key once, for every probe
                # partition (kernels.dense_join.RunsTable; the table itself when the key does
                # not qualify, and the probes hash-join)
                build = self._keyed_task("runs-build-", dense_join.build_runs_table, build,
                                         node.right_keys[0])
            elif key_filter is not None:
                probe_keys = tuple(node.left_keys[i] for i in node.key_filter)
                left = [Pending(p.ops + (O.KeyFilter(filter=len(p.inputs), keys=probe_keys),),
                                p.inputs + (key_filter,)) for p in left]
            if not node.dense and P.takes_key_set(node):
                # a semi or anti join on integer keys: the build's distinct keys packed once,
                # for every probe partition to look its rows up in (kernels.dense_join.KeySet;
                # the table itself when the keys do not qualify, and the probes hash-join),
                # after the key filter's cheaper drop of the rows whose one key it lacks
                build = self._keyed_task("key-set-", dense_join.build_key_set, build,
                                         tuple(node.right_keys))
            builds = [build] * len(left)
        else:
            left = self.lower(node.left)
            builds = self.materialize(self.lower(node.right), "build")
        parts = []
        for p, b in zip(left, builds, strict=True):
            op = O.HashJoin(build=len(p.inputs), kind=node.kind, left_keys=node.left_keys,
                            right_keys=node.right_keys, filter=node.filter, out_ids=out,
                            null_aware=node.null_aware, decode=node.decode)
            parts.append(Pending(p.ops + (op,), p.inputs + (b,)))
        return parts

    def _dense_build(self, build_key, key: str, encode: tuple[str, ...] = ()):
        """A task turning the broadcast table into a perfect-hash index once, for every probe
        partition (kernels.dense_join; it returns the table itself when the key does not
        qualify, and the probes then hash-join), its `encode` columns dictionary-encoded."""
        from ..kernels import dense_join

        fn = functools.partial(dense_join.build, encode=encode) if encode else dense_join.build
        return self._keyed_task("dense-build-" + ("enc-" if encode else ""), fn, build_key,
                                key, encode)

    def _key_runs(self, build_key, key: str):
        """A task grouping the small side's rows by its integer join key once, for every
        partition of the big side (kernels.dense_join.build_runs; None when the key does not
        qualify, and the partitions then hash-join)."""
        from ..kernels import dense_join

        return self._keyed_task("key-runs-", dense_join.build_runs, build_key, key)

    def _keyed_task(self, prefix: str, fn, build_key, key: str, extra=()):
        """One task `fn(build, key)`, named deterministically by what it reads."""
        name = prefix + hashlib.sha1(repr((build_key, key, extra)).encode()).hexdigest()[:16]
        self.graph[(name, 0)] = (fn, build_key, key)
        return (name, 0)

    def _build_left_semi(self, node: P.HashJoinExec):
        """Small left side, big right side: hash the left once per right partition, stream the
        right partitions through it (no shuffle), then keep the left rows matched anywhere."""
        (left,) = self.lower(node.left)
        build = self.materialize([left.then(O.AddRowIds())], "build")[0]
        runs = (self._key_runs(build, node.left_keys[0])
                if len(node.left_keys) == 1 and node.extremes is None else None)
        matches = []
        for p in self.lower(node.right):
            op = O.MatchBuildRows(build=len(p.inputs), probe_keys=node.right_keys,
                                  build_keys=node.left_keys, filter=node.filter,
                                  runs=len(p.inputs) + 1 if runs is not None else None,
                                  extremes=node.extremes)
            extra = (build, runs) if runs is not None else (build,)
            matches.append(Pending(p.ops + (op,), p.inputs + extra))
        keys = self.materialize(matches, "semi-match")
        final = O.SemiFromIds(kind=node.kind, out_ids=tuple(f.id for f in node.schema),
                              build=0, matches=tuple(range(1, len(keys) + 1)))
        return [Pending((final,), (build, *keys))]

    def _build_left_outer(self, node: P.HashJoinExec):
        """A LEFT join with a small left side: each right partition joins the left rows (with
        their row ids) it matches, in parallel; one more partition holds the left rows that
        no partition matched, padded with NULLs."""
        out = tuple(f.id for f in node.schema)
        (left,) = self.lower(node.left)
        build = self.materialize([left.then(O.AddRowIds())], "build")[0]
        pairs = []
        for p in self.lower(node.right):
            op = O.HashJoin(build=len(p.inputs), kind="inner", left_keys=node.right_keys,
                            right_keys=node.left_keys, filter=node.filter,
                            out_ids=out + (ROW_ID,), null_aware=False, decode=())
            pairs.append(Pending(p.ops + (op,), p.inputs + (build,)))
        keys = self.materialize(pairs, "left-match")
        # only the matched ids travel to the partition of unmatched rows
        ids = self.materialize([Pending((O.Concat(indices=(0,)), O.Select(ids=(ROW_ID,))),
                                        (k,)) for k in keys], "left-ids")
        left_ids = {f.id for f in node.left.schema}
        nulls = tuple((f.id, f.dtype) for f in node.schema if f.id not in left_ids)
        unmatched = O.UnmatchedRows(build=0, matches=tuple(range(1, len(ids) + 1)),
                                    out_ids=out, nulls=nulls)
        return ([Pending((O.Concat(indices=(0,)), O.Select(ids=out)), (k,)) for k in keys]
                + [Pending((unmatched,), (build, *ids))])

    def _nestedloopjoinexec(self, node: P.NestedLoopJoinExec):
        left = self.lower(node.left)
        build = self._broadcast_key(node.right)
        out = tuple(f.id for f in node.schema)
        band = node.band[0] if node.band is not None else \
            node.or_keys[0] if node.or_keys is not None else None
        return [Pending(p.ops + (O.NestedLoopJoin(build=len(p.inputs), kind=node.kind,
                                                  filter=node.filter, out_ids=out,
                                                  band=band, band_filter=node.band[2]
                                                  if node.band is not None else None),),
                        p.inputs + (build,)) for p in left]

    def _aggregateexec(self, node: P.AggregateExec):
        op = O.Aggregate(mode=node.mode, group=node.group, aggs=node.aggs,
                         segments=node.strategy == "segments", adaptive=node.adaptive,
                         bounds=node.sum_bounds if node.mode != "final" else ())
        parts = self.lower(node.input)
        if node.int64_sums:
            parts = _unscaled_sum_inputs(parts, node.int64_sums)
        return [p.then(op) for p in parts]

    def _exchangeexec(self, node: P.ExchangeExec):
        parts = self.lower(node.input)
        if node.mode == "gather":
            if len(parts) == 1:
                return parts
            keys = self.materialize(parts, "gather")
            return [Pending((O.Concat(indices=tuple(range(len(keys)))),), tuple(keys))]
        if getattr(node, "kind", "tasks") == "p2p" and self.token is not None:
            return self._disk_exchange(node, parts)
        # the task grid: a split task per input partition, a getitem per (input, output)
        split_op = O.HashSplit(keys=node.keys, n=node.n)
        split_keys = self.materialize([p.then(split_op) for p in parts], "shuffle-split")
        outputs = []
        for j in range(node.n):
            pieces = []
            for sk in split_keys:
                gk = (sk[0].replace("exchange-split-", "exchange-piece-", 1), sk[1], j)
                self.graph[gk] = (operator.getitem, sk, j)
                pieces.append(gk)
            outputs.append(Pending((O.Concat(indices=tuple(range(len(pieces)))),), tuple(pieces)))
        return outputs

    def _disk_exchange(self, node: P.ExchangeExec, parts: list[Pending]) -> list[Pending]:
        """The disk-backed exchange (execution.exchange): write tasks, one barrier, readers
        fused into the consumers. Only for a query the driver runs (it has a token, and its
        files are removed when the graph ends); to_dask graphs keep the task grid."""
        from . import exchange as X

        exid = hashlib.sha1(repr(([(p.ops, p.inputs) for p in parts], node.keys,
                                  node.n)).encode()).hexdigest()[:16]
        writes = [p.then(X.ExchangeWrite(keys=node.keys, n=node.n, exid=exid,
                                         qid=self.token.qid, part=i))
                  for i, p in enumerate(parts)]
        wkeys = self.materialize(writes, "exchange-write")
        table = wkeys[0][0].rsplit("-", 1)[0].replace("exchange-write", "exchange-barrier", 1)
        bkey = (f"{table}-{exid}", 0)
        self.graph[bkey] = (X.barrier, *wkeys)
        return [Pending((X.ExchangeRead(exid=exid, part=j),), (bkey,)) for j in range(node.n)]

    def _sortexec(self, node: P.SortExec):
        op = O.Sort(keys=node.keys, fetch=node.fetch)
        return [p.then(op) for p in self.lower(node.input)]

    def _limitexec(self, node: P.LimitExec):
        op = O.Limit(fetch=node.fetch, offset=node.offset)
        return [p.then(op) for p in self.lower(node.input)]

    def _unionexec(self, node: P.UnionExec):
        out = []
        for child in node.inputs:
            out += self.lower(child)
        return out

    def _windowexec(self, node: P.WindowExec):
        op = O.Window(partition=node.partition, order=node.order, specs=node.specs,
                      keep=node.keep)
        return [p.then(op) for p in self.lower(node.input)]

    def _data(self, label: str, table: pa.Table) -> list[Pending]:
        key = f"{label}-{self.tag}-{hashlib.sha1(repr(id(table)).encode()).hexdigest()[:12]}"
        self.graph[key] = table
        return [Pending((O.Concat(indices=(0,)),), (key,))]

    def _recursiveexec(self, node: P.RecursiveExec):
        table = self.materialized.get(id(node))
        if table is None:
            raise InternalError(f"recursive query {node.name} reached lowering before it ran")
        return self._data(f"recursive-{node.name.replace('#', '-')}", table)

    def _worktableexec(self, node: P.WorkTableExec):
        table = self.bindings.get((node.name, node.which))
        if table is None:
            raise InternalError(f"work table {node.name} ({node.which}) has no rows bound")
        table = pa.Table.from_arrays(table.columns, names=[f.id for f in node.schema])
        return self._data(f"worktable-{node.which}", table)

    def _singlerowexec(self, node: P.SingleRowExec):
        return [p.then(O.SingleRow()) for p in self.lower(node.input)]

    def _mapbatchesexec(self, node: P.MapBatchesExec):
        out_schema = pa.schema([pa.field(f.name, f.dtype) for f in node.schema])
        parts = self.lower(node.input)
        out_ids = tuple(f.id for f in node.schema)
        return [p.then(O.MapBatches(fn=node.fn, in_ids=node.input_ids, in_names=node.input_names,
                                    out_ids=out_ids, out_schema=out_schema, partition=i,
                                    partitions=len(parts)))
                for i, p in enumerate(parts)]

    def _writeexec(self, node: P.WriteExec):
        return [p.then(O.WriteFiles(spec=node.spec, ids=node.input_ids, partition=i))
                for i, p in enumerate(self.lower(node.input))]

    def _sampleexec(self, node: P.SampleExec):
        """One input partition: sample it in place. Several: each partition's row count (a
        tiny task), their offsets (one task), then each partition sampled at its offset;
        reservoir candidates are then merged in one task."""
        from ..kernels import sample

        parts = self.lower(node.input)
        spec = {"method": node.method, "unit": node.unit, "size": node.size, "seed": node.seed}
        if len(parts) == 1:
            return [parts[0].then(O.SampleRows(**spec, part=0, offsets=None))]
        keys = self.materialize(parts, "sample-input")
        name = "sample-offsets-" + hashlib.sha1(repr(keys).encode()).hexdigest()[:16]
        counts = []
        for i, key in enumerate(keys):
            counts.append((f"{name}-count", i))
            self.graph[counts[-1]] = (sample.row_count, key)
        offsets = (name, 0)
        self.graph[offsets] = (sample.offsets, *counts)
        out = [Pending((O.Concat(indices=(0,)), O.SampleRows(**spec, part=i, offsets=1)),
                       (key, offsets)) for i, key in enumerate(keys)]
        if node.method != "reservoir":
            return out
        candidates = self.materialize(out, "sample-candidates")
        merge = O.ReservoirMerge(unit=node.unit, size=node.size,
                                 parts=tuple(range(len(candidates))), offsets=len(candidates))
        return [Pending((merge,), (*candidates, offsets))]

    # one lowering method per physical node type
    _METHODS = {
        P.ScanExec: _scanexec, P.MemoryScanExec: _memoryscanexec,
        P.DaskScanExec: _daskscanexec, P.ValuesExec: _valuesexec, P.ProjectExec: _projectexec,
        P.HashJoinExec: _hashjoinexec, P.NestedLoopJoinExec: _nestedloopjoinexec,
        P.AggregateExec: _aggregateexec, P.ExchangeExec: _exchangeexec, P.SortExec: _sortexec,
        P.LimitExec: _limitexec, P.UnionExec: _unionexec, P.WindowExec: _windowexec,
        P.RecursiveExec: _recursiveexec, P.WorkTableExec: _worktableexec,
        P.SingleRowExec: _singlerowexec, P.MapBatchesExec: _mapbatchesexec,
        P.WriteExec: _writeexec, P.SampleExec: _sampleexec,
    }


# task-name words: per materialization step, else per operator
_LABEL_WORDS = {"build": "hashjoin-build", "broadcast": "broadcast", "semi-match": "semijoin-match",
                "shuffle-split": "exchange-split", "exchange-write": "exchange-write"}
_OP_WORDS = {
    P.ScanExec: "scan", P.MemoryScanExec: "scan", P.DaskScanExec: "scan", P.ValuesExec: "values",
    P.ProjectExec: "project", P.HashJoinExec: "hashjoin", P.NestedLoopJoinExec: "nljoin",
    P.AggregateExec: "aggregate", P.ExchangeExec: "exchange", P.SortExec: "sort",
    P.LimitExec: "limit", P.UnionExec: "union", P.WindowExec: "window",
    P.RecursiveExec: "recursive", P.WorkTableExec: "worktable", P.SingleRowExec: "singlerow",
    P.MapBatchesExec: "mapbatches", P.WriteExec: "write", P.SampleExec: "sample",
}


def _op_word(node: P.PhysicalPlan) -> str:
    if isinstance(node, P.SortExec) and node.fetch is not None:
        return "topn"
    return _OP_WORDS.get(type(node), "task")


def _unscaled_sum_inputs(parts: list[Pending], ids: tuple[str, ...]) -> list[Pending]:
    """The projection fused right below the aggregate hands `ids` (decimal columns the planner
    chose, AggregateExec.int64_sums) over as unscaled int64."""
    if not parts or not all(p.ops and isinstance(p.ops[-1], O.FilterProject) for p in parts):
        raise InternalError("int64 sums planned without a fused projection below")
    first = parts[0].ops[-1]
    op = O.FilterProject(predicate=first.predicate, exprs=first.exprs, out_ids=first.out_ids,
                         unscaled_ids=ids, int64_decimal=first.int64_decimal)
    op.node, op.counts_rows = first.node, first.counts_rows
    return [Pending(p.ops[:-1] + (op,), p.inputs) for p in parts]


def lower(plan: P.PhysicalPlan, token: O.CancelToken | None = None) -> tuple[dict, list]:
    """The Dask graph of a physical plan and the keys of its output partitions."""
    low = Lowering(token)
    keys = low.materialize(low.lower_plan(plan), "result")
    return low.graph, keys
