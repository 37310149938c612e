"""The lazy DataFrame: a logical plan plus the Context that runs it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from .errors import BindError
from .extras import require
from .expressions import Expr, Resolver, SortExpr, to_expr
from .plan import builder as B
from .plan.explain import format_plan
from .plan.expr import AggCall, ColumnRef, SortKey, is_aggregate, transform
from .plan.logical import LogicalPlan

if TYPE_CHECKING:  # pragma: no cover
    from .session import Result, SessionState


class DataFrame:
    """A query that has not run yet. Immutable; every method returns a new DataFrame or a
    result. Run it with `to_arrow()`, `to_pandas()`, ...; see it with `explain()`."""

    def __init__(self, session: SessionState, plan: LogicalPlan, result: Result | None = None):
        self._session = session
        self._plan = plan
        self._optimized: LogicalPlan | None = None
        self.result = result  # for a statement that ran at once: its kind and rows affected

    # ---- description ---------------------------------------------------------------------

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(f.name, f.dtype, f.nullable) for f in self._plan.schema])

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self._plan.schema]

    def logical_plan(self) -> LogicalPlan:
        return self._plan

    def optimized_plan(self) -> LogicalPlan:
        if self._optimized is None:
            self._optimized = self._session.optimize(self._plan)
        return self._optimized

    def physical_plan(self):
        return self._session.physical_plan(self.optimized_plan())

    def explain(self, analyze: bool = False, timeout: float | None = None, cancel=None) -> str:
        """Logical, optimized and physical plans as deterministic text; with `analyze`, the
        query runs and every operator shows its rows and time."""
        return self._session.explain(self._plan, analyze, timeout=timeout, cancel=cancel)

    # ---- execution -----------------------------------------------------------------------

    def to_arrow(self, timeout: float | None = None, cancel=None, progress=None) -> pa.Table:
        """Run the query; the result as a pyarrow Table. Ctrl-C (KeyboardInterrupt) stops it;
        `timeout` (seconds) raises pqe.QueryTimeout; setting `cancel` (a threading.Event) from
        another thread raises pqe.QueryCancelled; `progress(done, total)` is called with task
        counts as they change. The Context stays usable after any of them."""
        return self._session.run(self._plan, optimized=self.optimized_plan(), timeout=timeout,
                                 cancel=cancel, progress=progress)

    collect = to_arrow

    def to_pandas(self, timeout: float | None = None):
        """The result as a pandas DataFrame (needs the `pandas` extra)."""
        require("pandas", "to_pandas()")
        return self.to_arrow(timeout).to_pandas()

    def to_polars(self):
        """The result as a Polars DataFrame (needs the `polars` extra)."""
        pl = require("polars", "to_polars()")
        return pl.from_arrow(self.to_arrow())

    def to_dask(self):
        """A dask DataFrame whose partitions are this query's partitions (nothing runs now;
        needs the `pandas` extra, as dask.dataframe does)."""
        require("pandas", "to_dask()")
        return self._session.to_dask(self._plan, self.optimized_plan())

    def _result_schema(self) -> pa.Schema:
        return pa.schema([pa.field(f.name, f.dtype) for f in self._plan.schema])

    def __arrow_c_stream__(self, requested_schema=None):
        """Arrow PyCapsule stream: pa.table(df), pl.DataFrame(df), duckdb read pqe results."""
        return self.to_arrow().__arrow_c_stream__(requested_schema)

    def _repr_html_(self) -> str:
        import html

        head = DataFrame(self._session, B.limit(self._plan, 10)).to_arrow()
        cols = "".join(f"<th>{html.escape(f.name)}<br><small>{html.escape(str(f.type))}</small></th>"
                       for f in head.schema)
        rows = "".join("<tr>" + "".join(f"<td>{html.escape(repr(v) if v is None else str(v))}</td>"
                                        for v in r.values()) + "</tr>" for r in head.to_pylist())
        return (f"<table><thead><tr>{cols}</tr></thead><tbody>{rows}</tbody></table>"
                f"<p>first {head.num_rows} rows</p>")

    def to_pylist(self) -> list[dict]:
        return self.to_arrow().to_pylist()

    def __repr__(self) -> str:
        cols = ", ".join(f"{f.name}: {f.dtype}" for f in self._plan.schema)
        return f"<pqe.DataFrame [{cols}]>"

    # ---- the builder -----------------------------------------------------------------------

    def _new(self, plan: LogicalPlan) -> DataFrame:
        return DataFrame(self._session, plan)

    def _resolve(self, items, what: str, allow_agg: bool = False):
        r = Resolver(self._plan.schema)
        out = []
        for e in items:
            x = to_expr(e)
            resolved = x._resolve(r)
            if not allow_agg and is_aggregate(resolved):
                raise BindError(f"aggregate {x._name} is not allowed in {what}; use group_by().agg()")
            out.append((resolved, x._name))
        return out

    def select(self, *exprs: str | Expr, **named: str | Expr) -> DataFrame:
        """Columns or expressions; aggregates alone (no columns) give a one-row result."""
        items = list(exprs) + [to_expr(v).alias(k) for k, v in named.items()]
        resolved = self._resolve(items, "select", allow_agg=True)
        if any(is_aggregate(e) for e, _ in resolved):
            return _aggregate(self, [], resolved)
        return self._new(B.project(self._plan, resolved))

    def filter(self, predicate: Expr) -> DataFrame:
        ((pred, _),) = self._resolve([predicate], "filter")
        return self._new(B.filter(self._plan, pred))

    where = filter

    def with_columns(self, *exprs: Expr, **named: str | Expr) -> DataFrame:
        """Add columns (an existing name is replaced in place)."""
        items = list(exprs) + [to_expr(v).alias(k) for k, v in named.items()]
        new = self._resolve(items, "with_columns")
        by_name = {name: e for e, name in new}
        out = []
        for f in self._plan.schema:
            out.append((by_name.pop(f.name), f.name) if f.name in by_name else (ColumnRef(f), f.name))
        out += [(e, n) for e, n in new if n in by_name]
        return self._new(B.project(self._plan, out))

    def group_by(self, *keys: str | Expr) -> GroupBy:
        return GroupBy(self, keys)

    def join(self, other: DataFrame, on: str | list[str] | None = None, *,
             left_on: str | Expr | list | None = None, right_on: str | Expr | list | None = None,
             how: str = "inner", suffix: str = "_right") -> DataFrame:
        """how: inner, left, right, full (outer), semi, anti, cross. With `on`, the key columns
        appear once; other right columns whose names clash get `suffix`."""
        how = {"outer": "full", "full_outer": "full", "left_outer": "left"}.get(how, how)
        if how not in ("inner", "left", "right", "full", "semi", "anti", "cross"):
            raise BindError(f"unknown join type {how!r}")
        right_plan = other._plan
        if set(right_plan.column_ids) & set(self._plan.column_ids):  # a self-join
            right_plan = B.project(right_plan, [(ColumnRef(f), f.name) for f in right_plan.schema],
                                   qualifier="right")
            right_plan = B.project(right_plan, [(ColumnRef(f), f.name) for f in right_plan.schema])
        if how == "cross":
            if on or left_on or right_on:
                raise BindError("a cross join takes no keys")
            return self._new(_rename_clashes(B.join(self._plan, right_plan, "inner"), len(self._plan.schema), suffix, ()))
        if on is not None:
            names = [on] if isinstance(on, str) else list(on)
            left_keys, right_keys = names, names
        else:
            if left_on is None or right_on is None:
                raise BindError("join needs on= or both left_on= and right_on=")
            left_keys = left_on if isinstance(left_on, list) else [left_on]
            right_keys = right_on if isinstance(right_on, list) else [right_on]
            if len(left_keys) != len(right_keys):
                raise BindError("left_on and right_on differ in length")
        lres = [e for e, _ in DataFrame(self._session, self._plan)._resolve(left_keys, "join keys")]
        rres = [e for e, _ in DataFrame(self._session, right_plan)._resolve(right_keys, "join keys")]
        joined = B.join(self._plan, right_plan, how, list(zip(lres, rres, strict=True)))
        if how in ("semi", "anti"):
            return self._new(joined)
        drop = ()
        if on is not None:
            drop = tuple(e.id for e in rres if isinstance(e, ColumnRef))
        plan = _rename_clashes(joined, len(self._plan.schema), suffix, drop,
                               coalesce=list(zip(lres, rres, strict=True)) if (on is not None and how in ("full", "right")) else None)
        return self._new(plan)

    def sort(self, *by: str | Expr | SortExpr, descending: bool | list[bool] = False,
             nulls_last: bool | None = None) -> DataFrame:
        desc = descending if isinstance(descending, list) else [descending] * len(by)
        if len(desc) != len(by):
            raise BindError("descending has a different length than the sort keys")
        r = Resolver(self._plan.schema)
        keys = []
        extra = []
        for item, d in zip(by, desc, strict=True):
            nl = nulls_last
            if isinstance(item, SortExpr):
                d, nl = item.descending, item.nulls_last if item.nulls_last is not None else nulls_last
                item = item.expr
            e = to_expr(item)._resolve(r)
            nulls_first = (not nl) if nl is not None else d
            keys.append(SortKey(e, not d, nulls_first))
            extra.append(e)
        plan = self._plan
        if any(not isinstance(k.expr, ColumnRef) for k in keys):
            # sort keys that are expressions: compute them, sort, drop them
            cols = [(ColumnRef(f), f.name) for f in plan.schema]
            comp = [(k.expr, f"__sort{i}") for i, k in enumerate(keys) if not isinstance(k.expr, ColumnRef)]
            proj = B.project(plan, cols + comp)
            j = len(cols)
            new_keys = []
            for k in keys:
                if isinstance(k.expr, ColumnRef):
                    new_keys.append(k)
                else:
                    new_keys.append(SortKey(ColumnRef(proj.schema[j]), k.ascending, k.nulls_first))
                    j += 1
            sorted_ = B.sort(proj, new_keys)
            return self._new(B.project(sorted_, [(ColumnRef(f), f.name) for f in proj.schema[: len(cols)]]))
        return self._new(B.sort(plan, keys))

    def limit(self, n: int, offset: int = 0) -> DataFrame:
        from .plan.logical import Sort

        if isinstance(self._plan, Sort) and self._plan.fetch is None and offset == 0:
            return self._new(B.sort(self._plan.input, self._plan.keys, n))
        return self._new(B.limit(self._plan, n, offset))

    head = limit

    def distinct(self) -> DataFrame:
        return self._new(B.distinct(self._plan))

    unique = distinct

    def union(self, other: DataFrame, distinct: bool = False) -> DataFrame:
        """Rows of both (columns matched by position; names from this one)."""
        u = B.union_all([self._plan, other._plan])
        plan = B.distinct(u) if distinct else u
        return self._new(B.project(plan, [(ColumnRef(f), n) for f, n in
                                           zip(plan.schema, self.columns, strict=True)]))

    def count(self) -> int:
        """The number of rows (runs the query)."""
        agg = B.aggregate(self._plan, [], [(AggCall("count_star", (), pa.int64()), "count")])
        return DataFrame(self._session, agg).to_arrow().column(0)[0].as_py()


class GroupBy:
    """`df.group_by(keys).agg(aggregates)`."""

    def __init__(self, df: DataFrame, keys):
        self._df = df
        self._keys = keys

    def agg(self, *aggs: Expr, **named: Expr) -> DataFrame:
        keys = self._df._resolve(self._keys, "group_by keys")
        items = list(aggs) + [to_expr(v).alias(k) for k, v in named.items()]
        values = self._df._resolve(items, "agg", allow_agg=True)
        return _aggregate(self._df, keys, values)


def _aggregate(df: DataFrame, keys, values) -> DataFrame:
    """Aggregate node for the AggCalls inside `values`, then a projection computing them."""
    calls: list[AggCall] = []
    for e, name in values:
        if not is_aggregate(e):
            if any(e == k for k, _ in keys):
                continue
            raise BindError(f"{name} is neither a group key nor an aggregate")
        for x in _agg_calls(e):
            if x not in calls:
                calls.append(x)
    agg = B.aggregate(df._plan, keys, [(c, str(c)) for c in calls])
    by_call = {c: ColumnRef(f) for c, f in zip(calls, agg.agg_fields, strict=True)}
    by_key = {k: ColumnRef(f) for (k, _), f in zip(keys, agg.group_fields, strict=True)}
    out = [(ColumnRef(f), n) for (_, n), f in zip(keys, agg.group_fields, strict=True)]
    for e, name in values:
        if not is_aggregate(e) and e in by_key:
            continue
        out.append((transform(e, lambda x: by_call.get(x) if isinstance(x, AggCall) else by_key.get(x)), name))
    return DataFrame(df._session, B.project(agg, out))


def _agg_calls(e):
    from .plan.expr import walk

    return [x for x in walk(e) if isinstance(x, AggCall)]


def _rename_clashes(joined, n_left: int, suffix: str, drop: tuple, coalesce=None) -> LogicalPlan:
    left = joined.schema[:n_left]
    right = [f for f in joined.schema[n_left:] if f.id not in drop]
    taken = {f.name for f in left}
    items = []
    key_map = {}
    if coalesce:
        for lk, rk in coalesce:
            if isinstance(lk, ColumnRef) and isinstance(rk, ColumnRef):
                key_map[lk.id] = B.call("coalesce", lk, rk)
    for f in left:
        items.append((key_map.get(f.id, ColumnRef(f)), f.name))
    for f in right:
        name = f.name
        while name in taken:
            name = name + suffix
        taken.add(name)
        items.append((ColumnRef(f), name))
    return B.project(joined, items)
