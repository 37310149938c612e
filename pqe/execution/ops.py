"""Per-partition operations: the picklable units a Dask task runs, in order, on Arrow tables.

A task is `(run_pipeline, Pipeline(ops), *input_keys)`: the first op produces a table (from a
file, a literal, or the task inputs), each next op transforms it. Ops hold pqe expressions and
compile them to Arrow expressions lazily, once per process. `repr(op)` is deterministic and
complete: task keys are hashes of it, so identical work gets identical keys.
"""

from __future__ import annotations

import re
import threading
import uuid
import time

import pyarrow as pa

from ..errors import (DataValueError, Error, ExecutionError, InternalError, QueryCancelled,
                      UserFunctionError)
from ..kernels import aggregate as agg
from ..kernels import decimals, dense_join
from ..kernels import join as joins
from ..kernels import relational as rel
from ..kernels import scan, user_functions
from ..kernels.expressions import Compiler, Shared, project
from ..physical.planner import balance
from ..plan.expr import ColumnRef, column_ids



def _register_table_sizeof() -> None:
    """Size Arrow tables by the bytes their rows use. Dask's default adds up whole buffers,
    so each slice of a hash split counted as the entire split table: a worker seemed to hold
    many times its data and spilled without need (TPC-H SF10 q18: 5.7 GB). Runs on import,
    so on workers too (they import this module to run pqe's tasks)."""
    from dask.sizeof import sizeof

    sizeof(pa.table({}))  # let dask register its pyarrow sizes first, then replace them
    sizeof.register(pa.Table)(lambda t: int(t.nbytes) + 1000)
    sizeof.register(pa.ChunkedArray)(lambda c: int(c.nbytes) + 1000)
    sizeof.register(dense_join.DenseIndex)(lambda d: int(d.nbytes) + 1000)
    sizeof.register(dense_join.KeyRuns)(lambda d: int(d.nbytes) + 1000)
    sizeof.register(dense_join.RunsTable)(lambda d: int(d.nbytes) + 1000)


_register_table_sizeof()


class Op:
    label = "op"
    _fields: tuple[str, ...] = ()
    node: int | None = None  # the physical plan node this op belongs to (EXPLAIN ANALYZE)
    counts_rows = False  # its output is the node's output (EXPLAIN ANALYZE rows)

    def __init__(self, **kw):
        for k in self._fields:
            setattr(self, k, kw[k])

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields)
        return f"{type(self).__name__}({args})"

    def __getstate__(self):
        state = {k: getattr(self, k) for k in self._fields}
        state["node"] = self.node
        state["counts_rows"] = self.counts_rows
        return state  # compiled expressions are rebuilt where the op runs

    def __setstate__(self, state):
        for k, v in state.items():
            setattr(self, k, v)

    def run(self, data, inputs):  # pragma: no cover - abstract
        raise NotImplementedError


class ReadFiles(Op):
    """Read some row groups of file-table units. Everything here is plain data (ScanUnit:
    path or URL, row groups, version, hive values, filesystem spec; the provider pickles as
    its schema and paths): unpickling it, as the dask scheduler does, opens nothing; the files
    are opened by kernels.scan when the task runs on a worker."""

    label = "scan"
    _fields = ("provider", "units", "columns", "filters", "out_ids", "dict_columns", "encoded",
               "nested", "ranges", "members", "share")

    def __repr__(self):
        return (f"ReadFiles({self.provider.token}, {self.units!r}, {self.columns!r}, "
                f"{self.filters!r}, {self.out_ids!r}, {self.dict_columns!r}, {self.encoded!r}, "
                f"{self.nested!r}, {self.ranges!r}, {self.members!r}, {self.share!r})")

    def run(self, data, inputs):
        units, threads = self._reading(inputs)
        return scan.read_files(self.provider, units, self.columns,
                               self.filters + self._key_bounds(inputs),
                               self.out_ids, self.dict_columns, self.encoded, self.nested,
                               threads=threads, members=self._members(inputs))

    def chunks(self, inputs, chunk_rows: int):
        """The same rows as run(), as tables of about chunk_rows rows (see run_pipeline)."""
        units, threads = self._reading(inputs)
        return scan.iter_read_files(self.provider, units, self.columns,
                                    self.filters + self._key_bounds(inputs), self.out_ids,
                                    self.dict_columns, self.encoded, self.nested, chunk_rows,
                                    threads=threads, members=self._members(inputs))

    def _members(self, inputs) -> tuple:
        """The key pushdowns of the joins above (planner._key_pushdown): (a dense index or key
        filter, or what the build made instead, file column per key position)."""
        return tuple((inputs[i], names) for i, names in self.members)

    def _key_bounds(self, inputs) -> tuple:
        """Filters keeping the rows inside a dynamic filter's build keys' [min, max], for each
        group of one build whose range is at most ROW_FILTER_SHARE of the column's (a build
        spanning most of it would only cost the comparisons); the join still matches the
        keys, so these keep every row it can. (An empty build leaves no unit to read:
        `_kept`.)"""
        out = []
        for group in self.ranges:
            if len(group) != 1:
                continue
            i, key, _spans, field, whole = group[0]
            if field is None or whole is None:
                continue
            lo, hi = scan.key_range(inputs[i], key)
            out += scan.range_filters(field, lo, hi, whole, ROW_FILTER_SHARE)
        return tuple(out)

    def rows(self, inputs) -> int:
        return sum(u.num_rows for u in self._units(inputs))

    def _reading(self, inputs) -> tuple[tuple, bool]:
        """The units to read, and whether to decode their columns on Arrow's threads: when
        the dynamic filters kept fewer units than the scan has tasks, some of its tasks read
        nothing and their cores would idle while this one decodes alone (TPC-DS Q21's
        inventory: one 2M-row row group kept; decoding its 4 columns 16.5 -> 13.1 ms)."""
        kept = self._kept(inputs)
        units = self._share(kept)
        threads = self.share is not None and bool(units) and len(kept) < self.share[1]
        return units, threads

    def _units(self, inputs):
        return self._share(self._kept(inputs))

    def _kept(self, inputs):
        units = self.units
        # dynamic filters: groups of (task input holding a join's build, its key column, the
        # range of the probe key in each unit); a unit is read when, in every group, some
        # build's keys' [min, max] meets its range (no other rows can match). With `share`
        # (p, n) the units are all the scan's and this task reads run p of the n contiguous
        # runs of similar row counts the kept ones make (planner.balance): every task keeps
        # the same units, and the kept rows are spread over the tasks
        if self.ranges:
            keep = [True] * len(units)
            for group in self.ranges:
                meets = [False] * len(units)
                for i, key, spans, _field, _whole in group:
                    lo, hi = scan.key_range(inputs[i], key)
                    if spans is None:  # rows only (_key_bounds): every unit may hold some
                        meets = [lo is not None] * len(units)  # (an empty build: none)
                        break
                    # (a small build: its keys themselves, not only their range)
                    keys = scan.key_set(inputs[i], key) if lo is not None else None
                    for j, span in enumerate(spans):
                        if lo is not None and (span is None or span[1] >= lo and span[0] <= hi
                                               and (keys is None or scan.meets_any(keys, span))):
                            meets[j] = True
                keep = [k and m for k, m in zip(keep, meets, strict=True)]
            units = tuple(u for u, k in zip(units, keep, strict=True) if k)
        return units

    def _share(self, units):
        if self.share is not None:
            p, n = self.share
            runs = balance(units, n) if units else ()
            units = runs[p] if p < len(runs) else ()
        return units


class ReadMemory(Op):
    """A slice of an in-memory table; the table is task input 0 (a graph key)."""

    label = "scan"
    _fields = ("provider", "offset", "length", "columns", "filters", "out_ids")

    def __repr__(self):
        return (f"ReadMemory({self.provider.token}, {self.offset}, {self.length}, "
                f"{self.columns!r}, {self.filters!r}, {self.out_ids!r})")

    def run(self, data, inputs):
        return scan.read_memory(self.provider, inputs[0], self.offset, self.length,
                                self.columns, self.filters, self.out_ids)


class FromPandas(Op):
    """Start from a dask partition (task input 0)."""

    label = "scan"
    _fields = ("provider", "columns", "filters", "out_ids")

    def __repr__(self):
        return f"FromPandas({self.provider.token}, {self.columns!r}, {self.filters!r}, {self.out_ids!r})"

    def run(self, data, inputs):
        return scan.from_pandas(self.provider, inputs[0], self.columns, self.filters, self.out_ids)


class ToPandas(Op):
    """Finish with a pandas DataFrame with display names (for to_dask()): converted as
    kernels.interop documents, integer/boolean columns in `masked` as nullable dtypes and
    columns pandas holds as `object` as pd.ArrowDtype, so every partition has the dtypes of
    the dask DataFrame's meta."""

    label = "to-pandas"
    _fields = ("ids", "names", "schema", "masked")

    def run(self, data, inputs):
        from ..kernels.interop import to_pandas

        t = data.select(list(self.ids))
        if [f.type for f in t.schema] != list(self.schema.types):
            t = pa.Table.from_arrays([c.cast(f.type) if c.type != f.type else c
                                      for c, f in zip(t.columns, self.schema, strict=True)],
                                     names=list(t.column_names))
        return to_pandas(t.rename_columns(list(self.names)), self.masked, arrow_objects=True)


class MapBatches(Op):
    """A user's Python function over this partition (`df.map_batches`); kernels.interop
    checks its result against `out_schema`."""

    label = "map_batches"
    _fields = ("fn", "in_ids", "in_names", "out_ids", "out_schema", "partition", "partitions")

    def run(self, data, inputs):
        from ..kernels.interop import map_batches

        return map_batches(data.select(list(self.in_ids)), self.fn, self.in_names,
                           self.out_ids, self.out_schema, self.partition, self.partitions)


class WriteFiles(Op):
    """Write this partition's rows (columns `ids`) as files under a temporary directory
    (kernels.write); the task's result lists the files and their rows."""

    label = "write"
    _fields = ("spec", "ids", "partition")

    def run(self, data, inputs):
        from ..kernels.write import write_partition

        return write_partition(data.select(list(self.ids)), self.spec, self.partition)


class MakeValues(Op):
    label = "values"
    _fields = ("rows", "fields")

    def run(self, data, inputs):
        return rel.values(self.rows, self.fields)


class Concat(Op):
    """Start from the concatenation of task inputs `indices`."""

    label = "concat"
    _fields = ("indices",)

    def run(self, data, inputs):
        return rel.concat([inputs[i] for i in self.indices])


class FilterProject(Op):
    """Filter then project. Decimal arithmetic runs on unscaled int64 when the inputs allow
    (kernels.decimals), falling back to decimal128 kernels if a checked kernel overflows."""

    label = "project"
    _fields = ("predicate", "exprs", "out_ids", "unscaled_ids", "int64_decimal")

    def _compile(self):
        compiled = getattr(self, "_compiled", None)
        if compiled is None:
            # tasks of one op run in several threads: publish _fast before _compiled
            c = Compiler(share=True)
            pred = c.stages(self.predicate) or None
            compiled = (pred, c.unit(list(self.exprs)))
            self._fast = _compile_fast(self.predicate, self.exprs, self.out_ids,
                                       self.unscaled_ids) if self.int64_decimal else None
            self._compiled = compiled
        return compiled

    def run(self, data, inputs):
        pred, exprs = self._compile()
        fast = self._fast
        if fast is not None:
            fast_pred, fast_exprs, in_cols, out_types = fast
            try:
                names = list(data.column_names)
                arrays = list(data.columns)
                for n in in_cols:  # int64 views beside the decimal128 originals
                    arrays.append(decimals.to_unscaled(data.column(n)))
                    names.append(decimals.unscaled_name(n))
                viewed = pa.Table.from_arrays(arrays, names=names)
                out = project(viewed, fast_exprs, list(self.out_ids), fast_pred)
                if not out_types:
                    return out
                cols = [decimals.from_unscaled(c, out_types[i]) if i in out_types else c
                        for i, c in enumerate(out.columns)]
                return pa.Table.from_arrays(cols, names=out.column_names)
            except pa.ArrowInvalid:
                pass  # overflow in a checked int64 kernel: redo with decimal128
        return project(data, exprs, list(self.out_ids), pred)


def _compile_fast(predicate, exprs, out_ids=(), unscaled_ids=()):
    """The int64-decimal version of a FilterProject the planner chose (ProjectExec
    .int64_decimal), or None when an expression has no int64 form. Outputs in
    `unscaled_ids` stay unscaled int64 (the aggregate fused above sums them as such)."""
    every = list(exprs) + ([predicate] if predicate is not None else [])
    cols = decimals.decimal_columns(every)
    c = decimals.Int64DecimalCompiler(rename={i: decimals.unscaled_name(i) for i in cols},
                                      share=True)
    plain = Compiler(share=True)
    try:
        pred = c.stages(predicate) or None
        fast, out_types = [], {}  # (the positions c compiles)
        for i, e in enumerate(exprs):
            if out_ids and out_ids[i] in unscaled_ids and decimals.T.is_decimal(e.dtype):
                fast.append(i)  # handed on as int64
            elif isinstance(e, ColumnRef) or not decimals.involves_decimals(e):
                pass  # passes through as it is
            else:
                fast.append(i)
                if decimals.T.is_decimal(e.dtype):
                    out_types[i] = e.dtype
        slow = [i for i in range(len(exprs)) if i not in set(fast)]
        units = Shared.merge([c.unit([exprs[i] for i in fast]),
                              plain.unit([exprs[i] for i in slow])])
    except decimals.NotFast:
        return None
    flat = units.exprs if isinstance(units, Shared) else units
    by_position = dict(zip(fast + slow, flat, strict=True))
    ordered = [by_position[i] for i in range(len(exprs))]
    compiled = Shared(units.stages, ordered) if isinstance(units, Shared) else ordered
    return pred, compiled, cols, out_types


class HashJoin(Op):
    """Join the running table (left) with task input `build` (right); `decode`: left
    columns that arrive dictionary-encoded, decoded in the output."""

    label = "join"
    _fields = ("build", "kind", "left_keys", "right_keys", "filter", "out_ids", "null_aware",
               "decode")

    def run(self, data, inputs):
        return rel.decoded(self._join(data, inputs), self.decode)

    def _join(self, data, inputs):
        residual = getattr(self, "_residual", None)
        if residual is None and self.filter is not None:
            residual = self._residual = Compiler()(self.filter)
        build = inputs[self.build]
        if isinstance(build, dense_join.DenseIndex):
            out = dense_join.probe(data, build, self.kind, self.left_keys[0], residual,
                                   self.out_ids)
            if out is not None:
                return out
            build = build.table
        elif isinstance(build, dense_join.KeySet):
            out = dense_join.probe_key_set(data, build, self.kind, self.left_keys,
                                           self.out_ids)
            if out is not None:
                return out
            build = build.table
        elif isinstance(build, dense_join.RunsTable):
            out = None
            if self.kind == "inner" and not self.null_aware:
                out = dense_join.probe_runs(
                    data, build, self.left_keys[0], residual, self.out_ids,
                    column_ids(self.filter) if self.filter is not None else ())
            if out is not None:
                return out
            build = build.table
        # one dictionary per column (a row group has its own; text a build's scan or build
        # left encoded): Acero needs it, and so do the indices taken below
        data = rel.unify_dictionaries(data)
        build = rel.unify_dictionaries(build)
        # dictionary columns that are neither keys nor read by the condition go through the
        # join as their indices (Acero carries a dictionary column 4-5x as slowly)
        busy = set(self.left_keys) | set(self.right_keys) | (
            column_ids(self.filter) if self.filter is not None else set())
        data, codes = rel.dictionary_codes(data, busy)
        build, build_codes = rel.dictionary_codes(build, busy)
        out = joins.hash_join(data, build, self.kind, self.left_keys, self.right_keys,
                              residual, self.out_ids, self.null_aware)
        return rel.with_dictionaries(out, {**codes, **build_codes})


class KeyFilter(Op):
    """Drop the running table's rows whose join key the build does not have (task input
    `filter`: a kernels.dense_join.KeyFilter made once from the broadcast build, or None
    when no key of it is sparse enough), before a hash join of kind inner or semi."""

    label = "join"
    _fields = ("filter", "keys")

    def run(self, data, inputs):
        return dense_join.filter_by_keys(data, inputs[self.filter], self.keys)


class AddRowIds(Op):
    label = "row-ids"
    _fields = ()

    def run(self, data, inputs):
        return joins.with_row_ids(data)


class MatchBuildRows(Op):
    """Semi/anti join with a small preserved side: the running table (a partition of the big
    side) probes the small side (task input `build`); emits matched ids. With `runs` (the
    input of the build's rows grouped by its one integer key, kernels.dense_join.KeyRuns,
    made once for every partition) the probe looks its keys up there; else, or when that
    input is None (the key did not qualify), Acero hash-joins. With `extremes` (the probe
    side's compared expression, the extremes of it the condition reads, and the condition
    over the build's columns and those extremes: plan.extremes), the build rows meet the
    partition's extremes per key instead of its rows (kernels.join.matched_row_ids_by_extremes)."""

    label = "join"
    _fields = ("build", "probe_keys", "build_keys", "filter", "runs", "extremes")

    def run(self, data, inputs):
        # (the build's other columns stay out of the hash tables: only row ids come out)
        needed = {*self.build_keys, joins.ROW_ID}
        if self.filter is not None:
            needed |= column_ids(self.filter)
        build = inputs[self.build]
        build = build.select([c for c in build.column_names if c in needed])
        if self.extremes is not None:
            compiled = getattr(self, "_extremes", None)
            if compiled is None:
                value, fns, condition = self.extremes
                compiled = self._extremes = (Compiler()(value), fns, Compiler()(condition))
            return joins.matched_row_ids_by_extremes(data, build, self.probe_keys,
                                                     self.build_keys, *compiled)
        residual = getattr(self, "_residual", None)
        if residual is None and self.filter is not None:
            residual = self._residual = Compiler()(self.filter)
        runs = inputs[self.runs] if self.runs is not None else None
        if runs is not None:
            ids = dense_join.matched_build_rows(
                data, runs, self.probe_keys[0], build, residual,
                column_ids(self.filter) if self.filter is not None else ())
            if ids is not None:
                return pa.table({joins.ROW_ID: build.column(joins.ROW_ID).take(ids)})
        return joins.matched_row_ids(data, build, self.probe_keys, self.build_keys, residual)


class SemiFromIds(Op):
    """Start from input `build` (the small side with row ids) and the matched ids in the
    inputs `matches` (one per partition of the big side)."""

    label = "join"
    _fields = ("kind", "out_ids", "build", "matches")

    def run(self, data, inputs):
        return joins.semi_from_ids(inputs[self.build], [inputs[i] for i in self.matches],
                                   self.kind, self.out_ids)


class UnmatchedRows(Op):
    """A LEFT join's unmatched rows: input `build` (the small side with row ids) without the
    ids in the inputs `matches`, the other side's columns `nulls` ((id, type) pairs) NULL."""

    label = "join"
    _fields = ("build", "matches", "out_ids", "nulls")

    def run(self, data, inputs):
        return joins.unmatched_rows(inputs[self.build], [inputs[i] for i in self.matches],
                                    self.out_ids, self.nulls)


class NestedLoopJoin(Op):
    label = "nljoin"
    _fields = ("build", "kind", "filter", "out_ids", "band", "band_filter")

    def run(self, data, inputs):
        residual = Compiler().stages(self.filter) or None
        needed = column_ids(self.filter) if self.filter is not None else set()
        on_band = residual if self.band_filter is self.filter else \
            Compiler().stages(self.band_filter) or None
        return joins.nested_loop_join(data, inputs[self.build], self.kind, residual, self.out_ids,
                                      needed, self.band, on_band)


class Aggregate(Op):
    label = "aggregate"
    _fields = ("mode", "group", "aggs", "segments", "adaptive", "bounds")

    def run(self, data, inputs):
        bounds = dict(self.bounds) if self.bounds else None
        if self.mode == "partial":
            if self.adaptive:  # one verdict for the partitions of this process (threads)
                probe = self.__dict__.setdefault("_probe", agg.AdaptiveProbe())
                return agg.partial(data, self.group, self.aggs, self.segments, probe, bounds)
            return agg.partial(data, self.group, self.aggs, self.segments, bounds=bounds)
        if self.mode == "single":
            return agg.single(data, self.group, self.aggs, self.segments, bounds)
        fn = {"final": agg.final, "combine": agg.combine}[self.mode]
        return fn(data, self.group, self.aggs)


class Window(Op):
    label = "window"
    _fields = ("partition", "order", "specs", "keep")

    def run(self, data, inputs):
        from ..kernels.window import compute

        return compute(data, self.partition, self.order, self.specs, self.keep)


class HashSplit(Op):
    label = "split"
    _fields = ("keys", "n")

    def run(self, data, inputs):
        return rel.hash_split(data, self.keys, self.n)


class Sort(Op):
    label = "sort"
    _fields = ("keys", "fetch")

    def run(self, data, inputs):
        return rel.sort(data, self.keys, self.fetch)


class Limit(Op):
    label = "limit"
    _fields = ("fetch", "offset")

    def run(self, data, inputs):
        return rel.limit(data, self.fetch, self.offset)


class SingleRow(Op):
    label = "singlerow"
    _fields = ()

    def run(self, data, inputs):
        return rel.single_row(data)


class Select(Op):
    """Keep columns `ids` in this order."""

    label = "select"
    _fields = ("ids",)

    def run(self, data, inputs):
        return data.select(list(self.ids))


class SampleRows(Op):
    """TABLESAMPLE over the running table, partition `part`. Task input `offsets` (an index;
    None when the input is one partition) holds every partition's first row number and the
    total. bernoulli / system return the kept rows; reservoir returns this partition's
    candidates (all of the sample when the input is one partition)."""

    label = "sample"
    _fields = ("method", "unit", "size", "seed", "part", "offsets")

    def run(self, data, inputs):
        from ..kernels import sample

        if self.offsets is None:
            out = sample.sample(data, self.method, self.unit, self.size, self.seed, 0,
                                data.num_rows)
            if self.method == "reservoir":
                count = sample.reservoir_count(self.unit, self.size, data.num_rows)
                out = sample.reservoir_merge([out], count)
            return out
        starts, total = inputs[self.offsets]
        return sample.sample(data, self.method, self.unit, self.size, self.seed,
                             starts[self.part], total)


class ReservoirMerge(Op):
    """Start from the reservoir candidates in task inputs `parts`; keep the sample's rows
    (input `offsets` holds the total row count a percentage needs)."""

    label = "sample"
    _fields = ("unit", "size", "parts", "offsets")

    def run(self, data, inputs):
        from ..kernels import sample

        _, total = inputs[self.offsets]
        count = sample.reservoir_count(self.unit, self.size, total)
        return sample.reservoir_merge([inputs[i] for i in self.parts], count)


class CancelToken:
    """Per-query state shared by its tasks: set when the query is cancelled (Ctrl-C, timeout),
    so tasks that have not started stop at once; and, for EXPLAIN ANALYZE, rows and seconds per
    plan node and partition. On a cluster each task runs a pickled copy (cancellation is
    then done by cancelling futures): the copy records its statistics in the worker
    process's table under the query's id (execution.diagnostics), which the client collects
    and merges when the query ends."""

    def __init__(self, collect_stats: bool = False) -> None:
        import uuid

        self._reason: str | None = None
        self.qid = uuid.uuid4().hex
        self.collecting = collect_stats
        self.remote = False
        # node -> [rows, seconds, ops]; node -> {partition: [rows, seconds, ops]}
        self.stats: dict[int, list] | None = {} if collect_stats else None
        self.parts: dict[int, dict[int, list]] | None = {} if collect_stats else None
        self._lock = threading.Lock()

    @property
    def reason(self) -> str | None:
        """Why the query was cancelled, or None. A worker's copy also reads what the client
        told the worker process (`cancel_on_worker`): its running tasks stop at their next
        op, chunk or user-function batch instead of running on for the next query to wait
        behind (a cancelled query's 1 s-per-batch function delayed the next one 6 s)."""
        if self._reason is None and self.remote and _WORKER_CANCELLED:
            return _WORKER_CANCELLED.get(self.qid, (None,))[0]
        return self._reason

    def cancel(self, reason: str) -> None:
        if self._reason is None:
            self._reason = reason

    def check(self) -> None:
        reason = self.reason
        if reason is not None:
            raise QueryCancelled(reason)

    def record(self, node: int | None, seconds: float, rows: int, part: int = 0,
               counted: bool = True) -> None:
        if node is None or not self.collecting:
            return
        if self.remote:
            from . import diagnostics

            diagnostics.record(self.qid, node, part, seconds, rows, counted)
            return
        if not counted:  # (an op before the node's last: its rows are not the node's)
            rows = 0
        with self._lock:
            entry = self.stats.setdefault(node, [0, 0.0, 0])
            entry[0] += rows
            entry[1] += seconds
            entry[2] += 1
            p = self.parts.setdefault(node, {}).setdefault(part, [0, 0.0, 0])
            p[0] += rows
            p[1] += seconds
            p[2] += 1

    def merge(self, entries: dict) -> None:
        """Add entries collected from workers ((node, partition) -> [rows, seconds, ops])."""
        if not self.collecting:
            return
        with self._lock:
            for (node, part), (rows, seconds, ops) in entries.items():
                p = self.parts.setdefault(node, {}).setdefault(part, [0, 0.0, 0])
                p[0] += rows
                p[1] += seconds
                p[2] += ops
                entry = self.stats.setdefault(node, [0, 0.0, 0])
                entry[0] += rows
                entry[1] += seconds
                entry[2] += ops

    def __getstate__(self):
        return {"_reason": None, "stats": None, "parts": None, "qid": self.qid,
                "collecting": self.collecting, "remote": True}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()


# queries cancelled on this worker process: qid -> (reason, when), kept for a while after the
# query (its tasks may still be running); set by the client through Client.run
_WORKER_CANCELLED: dict[str, tuple[str, float]] = {}
_KEEP_CANCELLED = 600.0


async def cancel_on_worker(qid: str, reason: str) -> None:
    """(A coroutine: Client.run sends it without waiting for the workers' answers.)"""
    now = time.monotonic()
    for old, (_, when) in list(_WORKER_CANCELLED.items()):
        if now - when > _KEEP_CANCELLED:
            _WORKER_CANCELLED.pop(old, None)
    _WORKER_CANCELLED[qid] = (reason, now)


class Pipeline:
    """The ops of one task, where it sits in the plan (for error messages), the output
    partition it makes (for per-partition statistics), and the query's cancel token."""

    def __init__(self, ops: tuple[Op, ...], where: str, token: CancelToken | None = None,
                 part: int = 0):
        self.ops = ops
        self.where = where
        self.token = token
        self.part = part

    def __repr__(self):
        return f"Pipeline({self.ops!r})"

    def __dask_tokenize__(self):
        # dask.distributed names a submitted task by a token of its callable; left to itself
        # it hashes the ops' pickle, which an INTERVAL literal's MonthDayNano does not give
        # the same way twice (TokenizationError: every query with such a literal failed on a
        # cluster), and pickles an in-memory table's slices to hash them. The lowering gives
        # each pipeline its key (a hash of its ops and inputs) and query; else a random token
        token = self.__dict__.get("_token")
        if token is None:
            token = self.__dict__.setdefault("_token", uuid.uuid4().hex)
        return ("pqe-pipeline", token)


# A task whose scan reads more than STREAM_MIN_CHUNKS chunks of this many rows runs its
# row-wise prefix (filters, projections, probes of small builds, partial aggregates) one
# chunk of row groups at a time. At SF10 (4M-row partitions) chunks cut the peak RSS of Q1
# from 1,216 to 477 MiB, Q19 from 857 to 449, Q17 from 628 to 424. Each chunk is a read of
# its own; since a read no longer parses the file's footer (kernels.scan) a partition of a
# few chunks streams too: SF10's 2M-row partsupp partitions, peak RSS Q2 395 -> 247 MiB, Q11
# 343 -> 228, Q16 462 -> 409, times equal; at SF1 (1.5M-row lineitem partitions, 3 chunks)
# Q1 takes 3-8% longer (0.35 -> 0.37 s; its ops cost the same per row in any chunk size, the
# rest is the reads), the other queries are unchanged
# a dynamic filter's build keys' [min, max] filters the scan's rows when it is at most this
# share of the column's range (ReadFiles._key_bounds)
ROW_FILTER_SHARE = 0.5
STREAM_ROWS = 1 << 19
STREAM_MIN_CHUNKS = 2
# a hash join streams only when its build is at most this share of a chunk (Acero hashes the
# build again for every chunk)
STREAM_BUILD_SHARE = 64
# a scan streams through a key filter (to a hash join that would not stream) when it reads
# more than this many chunks: TPC-H SF10 Q9's 4M-row lineitem partitions, peak RSS 1,362 ->
# 1,005 MiB; at SF1 (1.5M-row partitions) streaming there made Q21 and Q8 5-10% slower
KEY_FILTER_STREAM_CHUNKS = 4
# a partial aggregate runs per chunk while it keeps at most 1/this of its input rows
STREAM_AGG_REDUCTION = 4


def _streams(op: Op, inputs) -> bool:
    """Whether `op` may run on each chunk of its input apart and the results be concatenated:
    each output row depends on one input row (and on whole task inputs), or, for a partial
    aggregate, the final step merges states of one group from any number of pieces."""
    if isinstance(op, (FilterProject, KeyFilter)):
        return True
    if isinstance(op, Aggregate):
        return op.mode == "partial" and all(s.udf is None for s in op.aggs)
    if isinstance(op, HashJoin):
        build = inputs[op.build]
        if op.kind not in ("inner", "left", "semi", "anti"):
            return False
        if isinstance(build, (dense_join.DenseIndex, dense_join.RunsTable)):
            return True
        return isinstance(build, pa.Table) and build.num_rows * STREAM_BUILD_SHARE <= STREAM_ROWS
    return False


# set in dask worker processes (execution.cluster.WorkerSupport): a table another worker sent
# (an exchange's piece, a broadcast build, a partial aggregate) arrives at whatever byte offset
# it had in the message (address % 8 == 4 after a transfer between LocalCluster workers), and
# Acero copies each misaligned buffer whole for every batch it reads from it
REALIGN_INPUTS = False


def _realigned(inputs: tuple) -> tuple:
    """Task inputs with the chunks whose buffers are misaligned copied into new buffers."""
    from ..kernels.scan import aligned

    out = []
    for x in inputs:
        if isinstance(x, pa.Table):
            x = aligned(x)
        elif isinstance(x, (list, tuple)) and x and all(isinstance(t, pa.Table) for t in x):
            x = type(x)(aligned(t) for t in x)
        out.append(x)
    return tuple(out)


def run_pipeline(pipeline: Pipeline, *inputs):
    if REALIGN_INPUTS:
        inputs = _realigned(inputs)
    token = pipeline.token
    if token is None:
        return _run_pipeline(pipeline, token, inputs)
    token.check()
    saved = getattr(user_functions.CURRENT, "check", None)
    user_functions.CURRENT.check = token.check
    try:
        return _run_pipeline(pipeline, token, inputs)
    finally:
        user_functions.CURRENT.check = saved


def _run_pipeline(pipeline: Pipeline, token, inputs):
    collecting = token is not None and token.collecting
    ops = pipeline.ops
    if any(isinstance(op, KeyFilter) and inputs[op.filter] is None for op in ops):
        # (a build too small or dense for a key filter: the join sees every row, and the
        # pipeline streams or not as it would without the filter)
        ops = tuple(op for op in ops if not (isinstance(op, KeyFilter)
                                             and inputs[op.filter] is None))
    data = None
    first = ops[0] if ops else None
    if isinstance(first, ReadFiles) and first.rows(inputs) > STREAM_MIN_CHUNKS * STREAM_ROWS \
            and (_streams(ops[1], inputs) if len(ops) > 1 else bool(first.filters)) \
            and (len(ops) < 2 or not isinstance(ops[1], KeyFilter)
                 or first.rows(inputs) > KEY_FILTER_STREAM_CHUNKS * STREAM_ROWS):
        # (a scan alone streams when filtered: some filters run after its reads, on the
        # rows read, as dictionary and DECIMAL filters do)
        n = 2
        while n < len(ops) and _streams(ops[n], inputs):
            n += 1
        data = _run_streamed(pipeline, ops[:n], inputs, token, collecting)
        ops = ops[n:]
    skip = -1
    for k, op in enumerate(ops):
        if k <= skip:
            continue
        if token is not None:
            token.check()
        if isinstance(op, HashJoin):
            last = _aggregate_after(ops, k, inputs)
            if last is not None:
                spent, rows = [0.0] * len(ops), [0] * len(ops)
                out = _join_pieces(pipeline, ops, k, last, data, inputs, spent, rows)
                if out is not None:
                    data, skip = out, last
                    if collecting:
                        for i in range(k, last + 1):
                            token.record(ops[i].node, spent[i], rows[i],
                                         getattr(pipeline, "part", 0), ops[i].counts_rows)
                    continue
        try:
            if not collecting:
                data = op.run(data, inputs)
            else:
                start = time.perf_counter()
                data = op.run(data, inputs)
                rows = 0
                if op.counts_rows:
                    rows = data.num_rows if isinstance(data, pa.Table) else sum(t.num_rows for t in data)
                token.record(op.node, time.perf_counter() - start, rows,
                             getattr(pipeline, "part", 0), op.counts_rows)
        except Exception as e:
            raise _failure(e, op, pipeline)  # noqa: B904 - _failure sets the cause
    return data


def _aggregate_after(ops, k: int, inputs) -> int | None:
    """Where the op is that reduces the output of the hash join ops[k] when each slice of
    that output may run through the ops after the join apart: ops that _streams, then a
    partial or single aggregate (of no user aggregate), whose states of the slices one final
    step merges, a top-N (a Sort with a fetch: the first N of the slices' first N), or a
    LIMIT (the slices' rows up to it, the rest not joined). None when there is none (the
    join's whole output is kept anyway)."""
    for j in range(k + 1, len(ops)):
        op = ops[j]
        if isinstance(op, Aggregate):
            ok = op.mode in ("partial", "single") and all(s.udf is None for s in op.aggs)
            return j if ok else None
        if isinstance(op, (Sort, Limit)):
            return j if op.fetch is not None else None
        if not _streams(op, inputs):
            return None
    return None


def _join_pieces(pipeline: Pipeline, ops, k: int, last: int, data, inputs, spent: list,
                 rows: list):
    """Run the hash join ops[k] and the ops after it to the aggregate ops[last] on slices of
    the join's probe side (`data`), each making at most about kernels.join.PIECE_ROWS
    output rows, when its whole output would be several of them (keys repeated on both
    sides): the aggregate's partial states of each slice, then its final step if it was a
    single one. A later hash join before ops[last] whose output from a slice would be as
    large is run on slices of that slice (_through). None when the join's output is no
    more than a few pieces (the caller runs the ops as they are). Adds each op's time and
    rows to spent[i] and rows[i]."""
    op = ops[k]
    try:
        cuts = _probe_cuts(op, data, inputs)
        if cuts is None:
            return None
        final = ops[last]
        limit = final.fetch + (final.offset or 0) if isinstance(final, Limit) else None
        states, kept = [], 0
        for a, b in zip(cuts, cuts[1:], strict=False):
            for piece in _through(pipeline, ops, k, last, data.slice(a, b - a), inputs,
                                  spent, rows):
                op = final
                start = time.perf_counter()
                if isinstance(op, Sort) or getattr(op, "mode", None) == "partial":
                    piece = op.run(piece, inputs)
                elif isinstance(op, Limit):  # (the first rows up to the limit's end)
                    piece = rel.limit(piece, limit - kept, 0)
                else:  # (a single aggregate: each slice's states, merged below)
                    piece = agg.partial(piece, op.group, op.aggs, op.segments,
                                        bounds=dict(op.bounds) if op.bounds else None)
                spent[last] += time.perf_counter() - start
                rows[last] += piece.num_rows
                states.append(piece)
                kept += piece.num_rows
                if limit is not None and kept >= limit:
                    break
            if limit is not None and kept >= limit:
                break  # (the rest of the probe side is never joined)
        out = rel.concat(states)
        if not isinstance(final, Aggregate) or final.mode == "single":
            op = final
            start = time.perf_counter()
            out = (final.run(out, inputs) if not isinstance(final, Aggregate)
                   else agg.final(out, final.group, final.aggs))
            spent[last] += time.perf_counter() - start
            rows[last] = out.num_rows
        return out
    except Exception as e:
        raise _failure(e, op, pipeline)  # noqa: B904 - _failure sets the cause


def _probe_cuts(join, data, inputs) -> list[int] | None:
    """Where to slice `data`, the probe side of the hash join op `join`, so that each slice
    makes at most about kernels.join.PIECE_ROWS output rows; None when it need not be."""
    if not isinstance(join, HashJoin):
        return None
    build = inputs[join.build]
    if isinstance(build, dense_join.RunsTable):
        build = build.table  # (its rows by key: each slice is probed through them as a whole)
    if join.null_aware or not isinstance(build, pa.Table) or not isinstance(data, pa.Table) \
            or join.kind not in ("inner", "left"):
        return None
    return joins.output_pieces(data, build, join.kind, join.left_keys, join.right_keys)


def _through(pipeline: Pipeline, ops, i: int, last: int, piece: pa.Table, inputs,
             spent: list, rows: list):
    """The outputs of ops[i:last] run on `piece`, one after another: a hash join after
    ops[i] whose output would be many pieces runs on slices of its probe side, each
    through the ops after it (a hot-key join after a sliced one held its whole fan-out:
    4200 x 4200 x 60 rows grew to 4.7 GiB)."""
    if pipeline.token is not None:
        pipeline.token.check()
    for j in range(i, last):
        op = ops[j]
        try:
            cuts = _probe_cuts(op, piece, inputs) if j > i else None
            if cuts is not None:
                for a, b in zip(cuts, cuts[1:], strict=False):
                    yield from _through(pipeline, ops, j, last, piece.slice(a, b - a), inputs,
                                        spent, rows)
                return
            start = time.perf_counter()
            piece = op.run(piece, inputs)
        except Exception as e:
            raise _failure(e, op, pipeline)  # noqa: B904 - _failure sets the cause
        spent[j] += time.perf_counter() - start
        rows[j] += piece.num_rows
    yield piece


# what Arrow says of a value it cannot compute or convert
_DATA_PROBLEM = re.compile(r"overflow|out of (bounds|range)|not in range|would lose data|"
                           r"truncat|failed to parse|divide by zero|division by zero|"
                           r"does not fit|precision", re.I)


def _failure(e: Exception, op: Op, pipeline: Pipeline) -> Exception:
    """The error an op's exception becomes: a pqe Error as it is, the user's code's failure
    with where it ran, an Arrow or arithmetic failure as one ExecutionError line naming the
    op, anything else as an InternalError."""
    if isinstance(e, UserFunctionError):
        err = UserFunctionError(f"{e} (in {pipeline.where})")
        err.__suppress_context__ = True
        return err
    if isinstance(e, Error):
        return e
    if isinstance(e, (pa.ArrowException, OSError, ValueError, ZeroDivisionError, OverflowError)):
        msg = str(e).split("\n")[0]
        if msg == "overflow":
            msg = "integer overflow (the value does not fit in BIGINT)"
        # a value Arrow's kernels found out of range or invalid (an overflow, a failed
        # cast) is PEP 249's DataError; an I/O or other failure is not, nor Arrow's
        # ArrowInvalid about anything else (a key field it cannot resolve)
        data = isinstance(e, (ZeroDivisionError, OverflowError)) or (
            isinstance(e, pa.ArrowInvalid) and _DATA_PROBLEM.search(msg) is not None)
        cls = DataValueError if data else ExecutionError
        err = cls(f"{op.label} failed in {pipeline.where}: {msg}")
    else:
        err = InternalError(f"{op.label} crashed in {pipeline.where}: {type(e).__name__}: {e}")
    err.__cause__ = e
    return err


def _run_streamed(pipeline: Pipeline, ops, inputs, token, collecting: bool) -> pa.Table:
    """Run `ops` (a ReadFiles, then ops that _streams) chunk by chunk: the task holds one
    chunk's decoded columns and the (filtered, projected, aggregated) outputs so far instead
    of the whole partition's columns. A partial aggregate that ends the run aggregates each
    chunk while that reduces its rows at least STREAM_AGG_REDUCTION-fold; past that (many
    groups: a chunk's states are as big as its rows) the chunks' inputs are kept and
    aggregated once at the end, as without streaming. EXPLAIN ANALYZE gets each op's time
    and rows summed."""
    spent = [0.0] * len(ops)
    rows = [0] * len(ops)
    outs, held = [], []
    last = len(ops) - 1
    agg = ops[last] if isinstance(ops[last], Aggregate) else None
    agg_in = agg_out = 0
    op = ops[0]

    def step(k: int, data):
        nonlocal op
        op = ops[k]
        start = time.perf_counter() if collecting else 0.0
        data = op.run(data, inputs)
        if collecting:
            spent[k] += time.perf_counter() - start
            rows[k] += data.num_rows
        return data

    try:
        chunks = op.chunks(inputs, STREAM_ROWS)
        while True:
            if token is not None and token.reason is not None:
                raise QueryCancelled(token.reason)
            op = ops[0]
            start = time.perf_counter() if collecting else 0.0
            data = next(chunks, None)
            if data is None:
                break
            if collecting:
                spent[0] += time.perf_counter() - start
                rows[0] += data.num_rows
            states = None
            for k in range(1, last if agg is not None else last + 1):
                if agg is not None and isinstance(ops[k], HashJoin):
                    # (a join of keys repeated on both sides: slices of the chunk, each
                    # aggregated before the next is joined)
                    states = _join_pieces(pipeline, ops, k, last, data, inputs, spent, rows)
                    if states is not None:
                        break
                data = step(k, data)
            if states is not None:
                outs.append(states)
            elif agg is None:
                outs.append(data)
            elif agg_out * STREAM_AGG_REDUCTION <= agg_in:
                agg_in += data.num_rows
                data = step(last, data)
                agg_out += data.num_rows
                outs.append(data)
            else:
                held.append(data)
        if held:
            outs.append(step(last, rel.concat(held)))
    except Exception as e:
        raise _failure(e, op, pipeline)  # noqa: B904 - _failure sets the cause
    if collecting:
        for k, o in enumerate(ops):
            token.record(o.node, spent[k], rows[k], getattr(pipeline, "part", 0), o.counts_rows)
    return rel.concat(outs)  # the chunks' nullability may differ
