"""Per-partition operations: the picklable units a Dask task runs, in order, on Arrow tables.

A task is `(run_pipeline, Pipeline(ops), *input_keys)`: the first op produces a table (from a
file, a literal, or the task inputs), each next op transforms it. Ops hold pqe expressions and
compile them to Arrow expressions lazily, once per process. `repr(op)` is deterministic and
complete: task keys are hashes of it, so identical work gets identical keys.
"""

from __future__ import annotations

import pyarrow as pa

from ..errors import Error, ExecutionError, InternalError, QueryCancelled
from ..kernels import aggregate as agg
from ..kernels import join as joins
from ..kernels import relational as rel
from ..kernels import scan
from ..kernels.expressions import Compiler, project


class Op:
    label = "op"
    _fields: tuple[str, ...] = ()

    def __init__(self, **kw):
        for k in self._fields:
            setattr(self, k, kw[k])

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields)
        return f"{type(self).__name__}({args})"

    def __getstate__(self):
        return {k: getattr(self, k) for k in self._fields}

    def __setstate__(self, state):
        for k, v in state.items():
            setattr(self, k, v)

    def run(self, data, inputs):  # pragma: no cover - abstract
        raise NotImplementedError


class ReadFiles(Op):
    label = "scan"
    _fields = ("provider", "units", "columns", "filters", "out_ids")

    def __repr__(self):
        return (f"ReadFiles({self.provider.token}, {self.units!r}, {self.columns!r}, "
                f"{self.filters!r}, {self.out_ids!r})")

    def run(self, data, inputs):
        return scan.read_files(self.provider, self.units, self.columns, self.filters, self.out_ids)


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
    """Finish with a pandas DataFrame with display names (for to_dask())."""

    label = "to-pandas"
    _fields = ("ids", "names", "schema")

    def run(self, data, inputs):
        t = data.select(list(self.ids)).rename_columns(list(self.names))
        if t.schema != self.schema:
            t = t.cast(self.schema)
        return t.to_pandas()


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
    label = "project"
    _fields = ("predicate", "exprs", "out_ids")

    def run(self, data, inputs):
        compiled = getattr(self, "_compiled", None)
        if compiled is None:
            c = Compiler()
            pred = c(self.predicate) if self.predicate is not None else None
            compiled = (pred, [c(e) for e in self.exprs])
            self._compiled = compiled
        pred, exprs = compiled
        return project(data, exprs, list(self.out_ids), pred)


class HashJoin(Op):
    """Join the running table (left) with task input `build` (right)."""

    label = "join"
    _fields = ("build", "kind", "left_keys", "right_keys", "filter", "out_ids", "null_aware")

    def run(self, data, inputs):
        residual = getattr(self, "_residual", None)
        if residual is None and self.filter is not None:
            residual = self._residual = Compiler()(self.filter)
        return joins.hash_join(data, inputs[self.build], self.kind, self.left_keys,
                               self.right_keys, residual, self.out_ids, self.null_aware)


class NestedLoopJoin(Op):
    label = "nljoin"
    _fields = ("build", "kind", "filter", "out_ids")

    def run(self, data, inputs):
        residual = Compiler()(self.filter) if self.filter is not None else None
        return joins.nested_loop_join(data, inputs[self.build], self.kind, residual, self.out_ids)


class Aggregate(Op):
    label = "aggregate"
    _fields = ("mode", "group", "aggs")

    def run(self, data, inputs):
        fn = {"partial": agg.partial, "final": agg.final, "single": agg.single,
              "combine": agg.combine}[self.mode]
        return fn(data, self.group, self.aggs)


class Window(Op):
    label = "window"
    _fields = ("partition", "order", "specs")

    def run(self, data, inputs):
        from ..kernels.window import compute

        return compute(data, self.partition, self.order, self.specs)


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


class CancelToken:
    """Set when a query is cancelled (Ctrl-C, timeout): tasks that have not started yet stop
    at once instead of running. Process-local: on a cluster, futures are cancelled instead."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def cancel(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    def __getstate__(self):
        return {"reason": None}


class Pipeline:
    """The ops of one task, where it sits in the plan (for error messages), and the
    query's cancel token."""

    def __init__(self, ops: tuple[Op, ...], where: str, token: CancelToken | None = None):
        self.ops = ops
        self.where = where
        self.token = token

    def __repr__(self):
        return f"Pipeline({self.ops!r})"


def run_pipeline(pipeline: Pipeline, *inputs):
    token = pipeline.token
    if token is not None and token.reason is not None:
        raise QueryCancelled(token.reason)
    data = None
    for op in pipeline.ops:
        try:
            data = op.run(data, inputs)
        except Error:
            raise
        except (pa.ArrowException, OSError, ValueError, ZeroDivisionError, OverflowError) as e:
            msg = str(e).split("\n")[0]
            if msg == "overflow":
                msg = "integer overflow (the value does not fit in BIGINT)"
            raise ExecutionError(f"{op.label} failed in {pipeline.where}: {msg}") from e
        except Exception as e:
            raise InternalError(f"{op.label} crashed in {pipeline.where}: "
                                f"{type(e).__name__}: {e}") from e
    return data
