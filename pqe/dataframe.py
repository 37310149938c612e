"""The lazy DataFrame: a logical plan plus the Context that runs it."""

from __future__ import annotations

import contextlib
import html as _html
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from . import types as T
from .deep import plan_until
from .errors import AggregateMisuseError, BindError, UnsupportedError
from .extras import require
from .expressions import Expr, Resolver, SortExpr, _sort_key, to_expr
from .plan import builder as B
from .plan.expr import AggCall, ColumnRef, WindowCall, is_aggregate, transform, walk
from .plan.logical import LogicalPlan

if TYPE_CHECKING:  # pragma: no cover
    from .session import Result, SessionState


class Plan(str):
    """Plan text (`DataFrame.explain()`): a str that prints as itself in a REPL and renders
    preformatted in a notebook."""

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        return f"<pre>{_html.escape(str(self))}</pre>"


def _holds_interval(t: pa.DataType) -> bool:
    """Whether type `t` is an INTERVAL or holds one at any depth (a list, fixed-size list,
    struct, map, dictionary or extension type's storage): Polars cannot import one, and
    panics (a BaseException) on one nested in a LIST or STRUCT."""
    if pa.types.is_interval(t):
        return True
    if pa.types.is_dictionary(t):
        return _holds_interval(t.index_type) or _holds_interval(t.value_type)
    if isinstance(t, pa.ExtensionType):
        return _holds_interval(t.storage_type)
    return any(_holds_interval(t.field(i).type) for i in range(t.num_fields))


def _polars_errors(pl) -> tuple[type[BaseException], ...]:
    """What pl.from_arrow raises for data Polars cannot hold: its own errors, and a Rust
    panic (pyo3's PanicException derives from BaseException, so `except Exception` in user
    code would not catch it)."""
    panic = getattr(getattr(pl, "exceptions", None), "PanicException", None)
    return (Exception, panic) if isinstance(panic, type) else (Exception,)


def _polars_holds(pl, table: pa.Table, name: str) -> bool:
    try:
        pl.from_arrow(table.select([name]).slice(0, 1))
    except _polars_errors(pl):
        return False
    return True


class DataFrame:
    """A query that has not run yet. Immutable; every method returns a new DataFrame or a
    result. Build it with select/filter/with_columns/group_by/join/sort/...; run it with
    `to_arrow()`, `to_pandas()`, `write_parquet()`, ...; see it with `explain()`."""

    def __init__(self, session: SessionState, plan: LogicalPlan, result: Result | None = None):
        self._session = session
        self._plan = plan
        self._optimized: LogicalPlan | None = None
        self.result = result  # for a statement that ran at once: its kind and rows affected
        # the timeout and cancel event ctx.sql() was given: this DataFrame's runs take them
        # unless given their own (a query's text runs when its result is asked for)
        self._run_defaults: tuple[float | None, object] = (None, None)

    # ---- description ---------------------------------------------------------------------

    @property
    def schema(self) -> pa.Schema:
        """The result's columns: names, Arrow types and nullability (nothing runs)."""
        return pa.schema([pa.field(f.name, f.dtype, f.nullable) for f in self._plan.schema])

    @property
    def columns(self) -> list[str]:
        """The result's column names, in order (nothing runs)."""
        return [f.name for f in self._plan.schema]

    @property
    def dtypes(self) -> list[pa.DataType]:
        """The result's column types (Arrow), in the order of `columns` (nothing runs)."""
        return [f.dtype for f in self._plan.schema]

    def logical_plan(self) -> LogicalPlan:
        """The logical plan as built (before optimization)."""
        return self._plan

    def optimized_plan(self) -> LogicalPlan:
        """The logical plan after the optimizer's rules (computed once, then kept)."""
        if self._optimized is None:
            self._optimized = self._session.optimize(self._plan)
        return self._optimized

    def physical_plan(self):
        """The partitioned physical plan the query would run as."""
        return self._session.physical_plan(self.optimized_plan())

    def explain(self, analyze: bool = False, timeout: float | None = None, cancel=None) -> Plan:
        """Logical, optimized and physical plans as deterministic text (a `pqe.Plan`: a str
        that prints as itself and renders preformatted in a notebook); with `analyze`, the
        query runs and every operator shows its rows and time."""
        return Plan(self._session.explain(self._plan, analyze, timeout=timeout,
                                          cancel=_checked_cancel(cancel)))

    # ---- execution -----------------------------------------------------------------------

    def to_arrow(self, timeout: float | None = None, cancel=None, progress=None) -> pa.Table:
        """Run the query; the result as a pyarrow Table. Ctrl-C (KeyboardInterrupt) stops it;
        `timeout` (seconds) raises pqe.QueryTimeout; setting `cancel` (a threading.Event) from
        another thread raises pqe.QueryCancelled; `progress(done, total)` is called with task
        counts as they change. The Context stays usable after any of them. In a Jupyter
        notebook, a query still running after a second shows a progress bar under the cell
        (when no `progress` callback is given)."""
        timeout = self._run_defaults[0] if timeout is None else timeout
        cancel = _checked_cancel(self._run_defaults[1] if cancel is None else cancel)
        # the timeout covers optimizing (stopped at the planner's checkpoints) and the run
        from .session.state import checked_timeout

        timeout = checked_timeout(timeout)
        start = time.monotonic()
        with plan_until(None if timeout is None else start + timeout, cancel):
            optimized = self.optimized_plan()
        notebook = _notebook_display() if progress is None else None
        if notebook is not None:
            return _with_notebook_progress(
                lambda stop, report: self._session.run(self._plan, optimized=optimized,
                                                       timeout=timeout, cancel=stop,
                                                       progress=report, started=start),
                notebook, cancel)
        return self._session.run(self._plan, optimized=optimized, timeout=timeout,
                                 cancel=cancel, progress=progress, started=start)

    collect = to_arrow

    def to_pandas(self, timeout: float | None = None):
        """The result as a pandas DataFrame (needs the `pandas` extra), typed as DuckDB's
        `.df()` types it: DATE and TIMESTAMP as datetime64[us], DECIMAL as float64 (exact
        values: to_arrow()), INTERVAL as timedelta64[ns] (a month as 30 days), integer and
        boolean columns that hold NULLs as pandas' nullable
        Int64/boolean (numpy int64/bool otherwise), text as pandas' string dtype."""
        require("pandas", "to_pandas()")
        from .kernels.interop import to_pandas

        return to_pandas(self.to_arrow(timeout))

    def to_polars(self):
        """The result as a Polars DataFrame (needs the `polars` extra)."""
        pl = require("polars", "to_polars()")
        # what Polars cannot hold is refused before the query runs, by name
        self._check_unique_names("to_polars()", "Polars needs unique names")
        for f in self._plan.schema:
            if pa.types.is_interval(f.dtype):
                raise UnsupportedError(f"to_polars(): column {f.name} is INTERVAL, which Polars "
                                       f"cannot hold; cast it to VARCHAR or use to_arrow()")
            if _holds_interval(f.dtype):  # (a LIST or STRUCT of INTERVAL made Polars panic)
                raise UnsupportedError(f"to_polars(): column {f.name} of type "
                                       f"{T.type_name(f.dtype)} holds an INTERVAL, which Polars "
                                       f"cannot hold; use to_arrow()")
        table = self.to_arrow()
        try:
            return pl.from_arrow(table)
        except _polars_errors(pl) as e:  # (Polars' errors: a zone like +05:45; its panics)
            if isinstance(e, (MemoryError, RecursionError)):
                raise
            culprit = next((f for f in table.schema if not _polars_holds(pl, table, f.name)),
                           None)
            what = (f"column {culprit.name} of type {culprit.type}" if culprit is not None
                    else "the result")
            raise UnsupportedError(f"to_polars(): Polars cannot hold {what} "
                                   f"({type(e).__name__}: {str(e).splitlines()[0][:120]}); "
                                   f"cast it, or use to_arrow()") from None

    def to_dask(self):
        """A dask DataFrame whose partitions are this query's partitions (nothing runs now;
        needs the `pandas` extra, as dask.dataframe does). Every partition and the meta have
        the same dtypes: as to_pandas(), except that integer and boolean columns that may
        hold NULLs (by their type) are always pandas' nullable Int64/boolean."""
        require("pandas", "to_dask()")
        return self._session.to_dask(self._plan, self.optimized_plan())

    def _check_unique_names(self, what: str, why: str) -> None:
        names = self.columns
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise BindError(f"{what}: the result has two columns named {dup[0]!r} ({why}); "
                            f"rename one")

    def to_pylist(self) -> list[dict]:
        """The result as a list of row dicts (runs the query). Its column names must differ:
        a dict keeps one value per name (`SELECT t1.id, t2.id` kept t2's, refused now)."""
        self._check_unique_names("to_pylist()", "a row dict holds one value per name")
        t = self.to_arrow()
        cols = [T.python_values(c, n) for c, n in zip(t.columns, t.column_names, strict=True)]
        return [dict(zip(t.column_names, row, strict=True)) for row in zip(*cols)] \
            if cols else [{} for _ in range(t.num_rows)]

    def count(self) -> int:
        """The number of rows (runs a count of the query)."""
        agg = B.aggregate(self._plan, [], [(AggCall("count_star", (), pa.int64()), "count")])
        return DataFrame(self._session, agg).to_arrow().column(0)[0].as_py()

    def __len__(self) -> int:
        """len(df): the number of rows (runs a count of the query)."""
        return self.count()

    def __bool__(self) -> bool:
        return True  # a DataFrame is an object, not a collection to test for emptiness

    def _result_schema(self) -> pa.Schema:
        return pa.schema([pa.field(f.name, f.dtype) for f in self._plan.schema])

    def __arrow_c_stream__(self, requested_schema=None):
        """Arrow PyCapsule stream: pa.table(df), pl.DataFrame(df), duckdb read pqe results."""
        return self.to_arrow().__arrow_c_stream__(requested_schema)

    # ---- writing -------------------------------------------------------------------------

    def write_parquet(self, path: str | os.PathLike, partition_by: str | Sequence[str] | None = None,
                      *, overwrite: bool = False, compression: str | None = "snappy",
                      storage_options: dict | None = None, filesystem: Any = None,
                      timeout: float | None = None, cancel=None, progress=None) -> int:
        """Run the query and write its rows as a directory of Parquet files, in parallel:
        each partition is written by the task that computed it (on a cluster, by the
        workers: give a path they all see, or an object store URL such as s3://bucket/dir
        with `storage_options` or `filesystem` as for Context.register_parquet), one file per
        partition, under hive `key=value/` directories for `partition_by` (those columns
        are then not in the files; NULL is `__HIVE_DEFAULT_PARTITION__`).

        Atomic: files are written under a hidden temporary directory beside `path`, which
        becomes `path` only when the whole query succeeded; after an error (or a timeout,
        or cancel) nothing is left behind. An existing `path` is replaced only with
        `overwrite=True`; a table registered from files under `path` is never overwritten.
        Returns the number of rows written. DuckDB reads the result with
        `read_parquet('path/**/*.parquet', hive_partitioning=true)`."""
        compression = T.write_codec("parquet", "none" if compression is None else compression,
                                    "write_parquet compression")
        return self._write(path, "parquet", partition_by, overwrite, {"compression": compression},
                           storage_options, filesystem, timeout, cancel, progress)

    def write_csv(self, path: str | os.PathLike, partition_by: str | Sequence[str] | None = None,
                  *, overwrite: bool = False, header: bool = True, delimiter: str = ",",
                  storage_options: dict | None = None, filesystem: Any = None,
                  timeout: float | None = None, cancel=None, progress=None) -> int:
        """Run the query and write its rows as a directory of CSV files (each with a header
        unless `header=False`), in parallel and atomically, as write_parquet() does; returns
        the number of rows written."""
        if T.bad_csv_delimiter(delimiter):
            raise BindError(f"delimiter must be one ASCII character that no number, date or "
                            f"timestamp holds, and no quote or newline, not {delimiter!r}")
        if not isinstance(header, bool):  # bool("no") is True
            raise BindError(f"write_csv header= takes True or False, not {header!r}")
        return self._write(path, "csv", partition_by, overwrite,
                           {"header": header, "delimiter": delimiter}, storage_options,
                           filesystem, timeout, cancel, progress)

    def _write(self, path, fmt, partition_by, overwrite, options, storage_options, filesystem,
               timeout, cancel, progress) -> int:
        if not isinstance(overwrite, bool):  # (overwrite='no' replaced the data)
            raise BindError(f"overwrite must be True or False, not {overwrite!r}")
        keys = [] if partition_by is None else (
            [partition_by] if isinstance(partition_by, str) else list(partition_by))
        return self._session.write(self._plan, path, fmt, partition_by=keys,
                                   overwrite=overwrite, options=options,
                                   storage_options=storage_options, filesystem=filesystem,
                                   timeout=timeout, cancel=_checked_cancel(cancel),
                                   progress=progress)

    # ---- display -------------------------------------------------------------------------

    def _is_explain(self) -> bool:
        return self.result is not None and self.result.kind == "EXPLAIN"

    def _head(self, n: int) -> tuple[pa.Table, int | None]:
        """The first n rows and the total row count when it is known without running more
        than the head (a short result, or a count read from table metadata)."""
        head = DataFrame(self._session, B.limit(self._plan, n + 1)).to_arrow()
        if head.num_rows <= n:
            return head, head.num_rows
        return head.slice(0, n), _known_rows(self.optimized_plan())

    def _repr_html_(self) -> str:
        """Notebook view: the first 10 rows (NULL shown as NULL, text escaped) and the row
        count when known cheaply; the result of EXPLAIN shows as its plan."""
        if self._is_explain():
            return Plan(self._plan_text())._repr_html_()
        head, total = self._head(10)
        esc = _html.escape
        cols = "".join(f"<th>{esc(f.name)}<br><small>{esc(str(f.type))}</small></th>"
                       for f in head.schema)
        body = []
        for r in range(head.num_rows):
            cells = []
            for c in head.columns:
                v = c[r].as_py()
                cells.append("<td><i>NULL</i></td>" if v is None else f"<td>{esc(_cell(v))}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        return (f"<table><thead><tr>{cols}</tr></thead><tbody>{''.join(body)}</tbody></table>"
                f"<p>{_count_text(head.num_rows, total)}</p>")

    def show(self, n: int = 10) -> None:
        """Print the first `n` rows as a text table (NULL as NULL) and the row count when it
        is known cheaply; the result of EXPLAIN prints as its plan."""
        print(self._show_text(_row_count(n, "show() n")))

    def _show_text(self, n: int) -> str:
        if self._is_explain():
            return self._plan_text()
        head, total = self._head(n)
        return _text_table(head) + "\n" + _count_text(head.num_rows, total)

    def _plan_text(self) -> str:
        return "\n".join(str(v) for v in self.to_arrow().column(0).to_pylist())

    def __repr__(self) -> str:
        if self._is_explain():
            return self._plan_text()
        cols = ", ".join(f"{f.name}: {f.dtype}" for f in self._plan.schema)
        return f"<pqe.DataFrame [{cols}]>"

    # ---- the builder -----------------------------------------------------------------------

    def _same_context(self, other: DataFrame, what: str) -> None:
        """Frames of two Contexts do not meet: the other's tables would be read under this
        one's limits and settings (a closed Context's too)."""
        if other._session is not self._session:
            raise BindError(f"{what}() of DataFrames from two different Contexts is not "
                            f"supported; register the other's data in this Context (e.g. "
                            f"ctx.register_arrow(name, other.to_arrow()))")

    def _new(self, plan: LogicalPlan) -> DataFrame:
        return DataFrame(self._session, plan)

    def _resolve(self, items, what: str, allow_agg: bool = False, allow_window: bool = False):
        r = Resolver(self._plan.schema)
        out = []
        for e in items:
            _check_item(e, what)
            x = to_expr(e)
            resolved = x._resolve(r)
            _check_placement(resolved, x._name, what, allow_agg, allow_window)
            out.append((resolved, x._output_name(r)))
        return out

    def _with_windows(self, resolved):
        """A Window node for the window calls in `resolved` (as the SQL binder makes it) and
        the expressions reading its columns instead."""
        calls: list = []
        for e, _ in resolved:
            for c in _windows(e):
                if c not in calls:
                    calls.append(c)
        if not calls:
            return self._plan, resolved
        window = B.window(self._plan, calls)
        refs = {c: ColumnRef(f) for c, f in zip(calls, window.fields, strict=True)}
        out = [(transform(e, lambda x: refs.get(x) if isinstance(x, WindowCall) else None), n)
               for e, n in resolved]
        # a sorted frame stays in its order (a window regroups its rows by its own keys:
        # `df.sort("a").with_columns(r=rank().over(...))` came back in another order, where
        # every other step keeps it)
        order = _order_of(self._plan)
        return (B.sort(window, order) if order else window), out

    def select(self, *exprs: str | Expr, **named: str | Expr) -> DataFrame:
        """Columns or expressions (keyword arguments name them); aggregates alone (no
        columns) give a one-row result; window expressions (`.over(...)`) are computed by a
        Window node, as in SQL."""
        items = list(exprs) + [to_expr(v).alias(k) for k, v in named.items()]
        if not items:
            raise BindError("select() needs at least one column or expression")
        resolved = self._resolve(items, "select", allow_agg=True, allow_window=True)
        _check_unique([n for _, n in resolved], "select()")
        has_agg = any(is_aggregate(e) for e, _ in resolved)
        if has_agg:
            if any(_windows(e) for e, _ in resolved):
                raise BindError("select() cannot mix aggregates and window functions; "
                                "aggregate with group_by().agg() first")
            return _aggregate(self, [], resolved)
        plan, resolved = self._with_windows(resolved)
        return self._new(B.project(plan, resolved))

    def filter(self, predicate: Expr) -> DataFrame:
        """Rows where `predicate` is TRUE (SQL WHERE): `df.filter((col("x") > 1) & col("y").is_null())`."""
        ((pred, _),) = self._resolve([predicate], "filter")
        return self._new(B.filter(self._plan, pred))

    where = filter

    def with_columns(self, *exprs: Expr, **named: str | Expr) -> DataFrame:
        """Add columns (an existing name is replaced in place); window expressions
        (`col("v").sum().over(partition_by="g")`, `pqe.rank().over(order_by="v")`) are
        allowed."""
        items = list(exprs) + [to_expr(v).alias(k) for k, v in named.items()]
        new = self._resolve(items, "with_columns", allow_window=True)
        _check_unique([n for _, n in new], "with_columns()")
        plan, new = self._with_windows(new)
        by_name = {name: e for e, name in new}
        out = []
        for f in self._plan.schema:
            out.append((by_name.pop(f.name), f.name) if f.name in by_name else (ColumnRef(f), f.name))
        out += [(e, n) for e, n in new if n in by_name]
        return self._new(B.project(plan, out))

    def rename(self, mapping: dict[str, str] | None = None, **names: str) -> DataFrame:
        """Columns under new names: `df.rename({"old": "new"})` or `df.rename(old="new")`;
        other columns keep theirs."""
        if mapping is not None and not isinstance(mapping, dict):
            raise BindError(f"rename() takes a dict of old -> new names, not "
                            f"{type(mapping).__name__}")
        pairs = list((mapping or {}).items()) + list(names.items())
        r = Resolver(self._plan.schema)
        new_names = {}
        for old, new in pairs:
            if not isinstance(old, str):
                raise BindError(f"rename: {old!r} is not a column name")
            if not isinstance(new, str) or not new:
                raise BindError(f"rename: the new name of {old!r} must be a non-empty string")
            cid = r.column(old).id
            if new_names.get(cid, new) != new:  # (one would win silently)
                raise BindError(f"rename: column {old!r} is given two new names, "
                                f"{new_names[cid]!r} and {new!r}")
            new_names[cid] = new
        items = [(ColumnRef(f), new_names.get(f.id, f.name)) for f in self._plan.schema]
        _check_unique([n for _, n in items if n in new_names.values()], "rename()")
        return self._new(B.project(self._plan, items))

    def drop(self, *columns: str | Sequence[str]) -> DataFrame:
        """Every column except those named (`drop("a", "b")` or `drop(["a", "b"])`)."""
        names = [n for c in columns for n in (c if isinstance(c, (list, tuple)) else [c])]
        for n in names:
            if not isinstance(n, str):
                raise BindError(f"drop() takes column names, not {n!r}")
        r = Resolver(self._plan.schema)
        gone = {r.column(c).id for c in names}
        keep = [(ColumnRef(f), f.name) for f in self._plan.schema if f.id not in gone]
        if not keep:
            raise BindError("drop() would leave no columns")
        return self._new(B.project(self._plan, keep))

    def group_by(self, *keys: str | Expr) -> GroupBy:
        """Group by columns or expressions; finish with `.agg(...)`."""
        for k in keys:
            _check_item(k, "group_by()")
        return GroupBy(self, keys)

    def join(self, other: DataFrame, on: str | list[str] | None = None, *,
             left_on: str | Expr | list | None = None, right_on: str | Expr | list | None = None,
             how: str = "inner", suffix: str = "_right") -> DataFrame:
        """Join with another DataFrame. how: inner, left, right, full (outer), semi, anti,
        cross. With `on`, the key columns appear once; other right columns whose names
        clash get `suffix`."""
        if not isinstance(other, DataFrame):
            raise BindError(f"join() takes a pqe DataFrame, not {type(other).__name__} (make "
                            f"one with ctx.from_arrow() or ctx.from_pandas())")
        self._same_context(other, "join")
        how = {"outer": "full", "full_outer": "full", "left_outer": "left"}.get(how, how)
        if how not in ("inner", "left", "right", "full", "semi", "anti", "cross"):
            raise BindError(f"unknown join type {how!r}")
        if not isinstance(suffix, str) or not suffix:
            raise BindError(f"join suffix must be a non-empty string, not {suffix!r}")
        if how in ("semi", "anti") and suffix != "_right":
            # a semi or anti join keeps only the left columns: nothing to suffix
            raise BindError(f"a {how} join has no right columns to suffix; drop suffix=")
        right_plan = other._plan
        if set(right_plan.column_ids) & set(self._plan.column_ids):  # a self-join
            # the right side under fresh ids (B.project with a qualifier always makes them:
            # a side whose columns were already qualified "right" kept its ids before)
            right_plan = B.project(right_plan, [(ColumnRef(f), f.name) for f in right_plan.schema],
                                   qualifier="right")
        if how == "cross":
            if on is not None or left_on is not None or right_on is not None:
                raise BindError("a cross join takes no keys")
            return self._new(_rename_clashes(B.join(self._plan, right_plan, "inner"), len(self._plan.schema), suffix, ()))
        if on is not None and (left_on is not None or right_on is not None):
            raise BindError("join takes on= or left_on= and right_on=, not both")
        if on is not None:
            names = [on] if isinstance(on, str) else _key_list(on, "on")
            for n in names:
                if not isinstance(n, str):  # the key is one column of both sides, by name
                    raise BindError(f"join on= takes column names, not {n!r} (use left_on= "
                                    f"and right_on= for expressions)")
            left_keys, right_keys = names, names
        else:
            if left_on is None or right_on is None:
                raise BindError("join needs on= or both left_on= and right_on=")
            left_keys = _key_list(left_on, "left_on")
            right_keys = _key_list(right_on, "right_on")
            if len(left_keys) != len(right_keys):
                raise BindError("left_on and right_on differ in length")
        if not left_keys:  # (no keys is a cross join: how="cross" says so)
            raise BindError("join keys are empty; give at least one key, or how='cross' for "
                            "a cross join")
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

    def sort(self, *by: str | Expr | SortExpr, descending: bool | Sequence[bool] = False,
             nulls_last: bool | Sequence[bool] | None = None) -> DataFrame:
        """Order by columns, expressions or sort keys (`col("x").desc()`); NULLs sort last
        ascending and first descending unless `nulls_last` says otherwise (as in SQL).
        `descending` and `nulls_last` take one value for every key or a list (or tuple)
        with one per key."""
        if not by:
            raise BindError("sort() needs at least one key")
        for item in by:
            _check_item(item, "sort()")
        desc = _per_key(descending, len(by), "descending", none_ok=False)
        nulls = _per_key(nulls_last, len(by), "nulls_last", none_ok=True)
        for item, d, n in zip(by, desc, nulls, strict=True):
            # the key's own direction or NULL placement would win silently
            if isinstance(item, SortExpr) and d and not item.descending:
                raise BindError(f"sort key {item.expr._name} is .asc() but descending=True "
                                f"is given for it; give its direction once")
            if isinstance(item, SortExpr) and n is not None and item.nulls_last is not None \
                    and n != item.nulls_last:
                raise BindError(f"sort key {item.expr._name} has nulls_last="
                                f"{item.nulls_last} but nulls_last={n} is given for it; give "
                                f"it once")
        r = Resolver(self._plan.schema)
        keys = [_sort_key(item, r, d, n) for item, d, n in zip(by, desc, nulls, strict=True)]
        for item, k in zip(by, keys, strict=True):
            name = (item.expr if isinstance(item, SortExpr) else to_expr(item))._name
            _check_placement(k.expr, name, "sort()", False, False)
        plan = self._plan
        if any(not isinstance(k.expr, ColumnRef) for k in keys):
            from .plan.expr import SortKey

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
        """The first `n` rows after skipping `offset` (SQL LIMIT/OFFSET; after a sort, a
        top-N)."""
        from .plan.logical import Sort

        n = _row_count(n, "limit n", none_ok=True)
        offset = _row_count(offset, "limit offset")
        if isinstance(self._plan, Sort) and self._plan.fetch is None and offset == 0:
            return self._new(B.sort(self._plan.input, self._plan.keys, n))
        return self._new(B.limit(self._plan, n, offset))

    head = limit

    def distinct(self) -> DataFrame:
        """Rows without duplicates (SELECT DISTINCT)."""
        return self._new(B.distinct(self._plan))

    unique = distinct

    def union(self, other: DataFrame, distinct: bool = False) -> DataFrame:
        """Rows of both (columns matched by position; names from this one); `distinct`
        drops duplicates (UNION instead of UNION ALL)."""
        if not isinstance(other, DataFrame):
            raise BindError(f"union() takes a pqe DataFrame, not {type(other).__name__} (make "
                            f"one with ctx.from_arrow() or ctx.from_pandas())")
        self._same_context(other, "union")
        if not isinstance(distinct, bool):  # bool("no") is True
            raise BindError(f"union() distinct= takes True or False, not {distinct!r}")
        u = B.union_all([self._plan, other._plan])
        plan = B.distinct(u) if distinct else u
        return self._new(B.project(plan, [(ColumnRef(f), n) for f, n in
                                           zip(plan.schema, self.columns, strict=True)]))

    def map_batches(self, fn: Callable[[pa.Table], Any], schema: Any = None, *,
                    name: str | None = None) -> DataFrame:
        """A Python function over every partition, in parallel: `fn(pa.Table) -> pa.Table`
        (a RecordBatch or any Arrow stream object, such as a Polars DataFrame, is also
        accepted as its result). It runs in the task that computed each partition (on a
        cluster, on the workers: the function is shipped with the graph by cloudpickle), and
        its output composes with the rest of the plan: filters below it are pushed down as
        usual, and it can be joined, aggregated, written, or registered
        (Context.register_dataframe) and queried with SQL. An empty partition gives an empty
        result without calling fn.

        schema: the output columns (a pyarrow Schema, a {name: type} dict, or (name, type)
        pairs; types as for Expr.cast); None infers it by calling fn on an empty table of the
        input's schema (an error says so when that fails). Every result is checked against
        it: other column names or types raise pqe.ExecutionError naming the function and the
        partition, as do errors raised inside fn. `name` is shown in EXPLAIN
        (`MapBatches: <name>`) and in errors; by default the function's name."""
        from .kernels.interop import infer_schema
        from .plan.logical import MapBatches, UserFunction

        if not callable(fn):
            raise BindError(f"map_batches needs a function, got {type(fn).__name__}")
        names = self.columns
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise BindError(f"map_batches: the input has two columns named {dup[0]!r}; rename "
                            f"one first")
        label = name or _function_name(fn)
        if schema is None:
            out = infer_schema(fn, label, self.schema)
        else:
            out = _declared_schema(schema)
        fields = tuple(B.new_field(f.name, f.type) for f in out)
        node = MapBatches(self._plan, UserFunction(fn, label, uuid.uuid4().hex), tuple(names),
                          fields)
        return self._new(node)


class GroupBy:
    """`df.group_by(keys).agg(aggregates)`."""

    def __init__(self, df: DataFrame, keys):
        self._df = df
        self._keys = keys

    def agg(self, *aggs: Expr | dict, **named: Expr) -> DataFrame:
        """One row per group: the group keys, then the aggregates. Aggregates are
        expressions (`col("x").sum()`, `pqe.count()`, `(col("a") * col("b")).sum()`),
        named by keyword (`total=col("x").sum()`), or dicts of column -> function name(s)
        (`{"c": "sum", "d": ["min", "max"]}`, named `sum(c)`, `min(d)`, `max(d)`; functions:
        sum, mean/avg, min, max, count, n_unique, std, var, first, or any SQL aggregate
        name such as stddev_pop or bool_and)."""
        keys = self._df._resolve(self._keys, "group_by keys")
        items: list = []
        for a in aggs:
            items += _dict_aggregates(a) if isinstance(a, dict) else [a]
        items += [to_expr(v).alias(k) for k, v in named.items()]
        values = self._df._resolve(items, "agg", allow_agg=True)
        return _aggregate(self._df, keys, values)


_AGG_METHODS = {"sum": "sum", "mean": "mean", "avg": "avg", "min": "min", "max": "max",
                "count": "count", "n_unique": "n_unique", "nunique": "n_unique",
                "count_distinct": "n_unique", "std": "std", "var": "var", "first": "first"}


def _dict_aggregates(spec: dict) -> list[Expr]:
    out = []
    for column, fns in spec.items():
        if not isinstance(column, str):
            raise BindError(f"agg(): dict keys are column names, not {column!r}")
        for fn in [fns] if isinstance(fns, str) else list(fns):
            if not isinstance(fn, str):
                raise BindError(f"agg(): {column!r} maps to function names, not {fn!r}")
            method = _AGG_METHODS.get(fn.lower())
            base = to_expr(column)
            if method is not None:  # (n_unique is named count(DISTINCT c), as in SQL)
                out.append(getattr(base, method)())
            else:
                out.append(base._aggregate(fn.lower()))
    return out


def _aggregate(df: DataFrame, keys, values) -> DataFrame:
    """Aggregate node for the AggCalls inside `values`, then a projection computing them.
    As in SQL, an aggregate may read a group key (`group_by("g").agg(col("g").sum())` is
    `SELECT g, sum(g) ... GROUP BY g`: its arguments read the Aggregate's input), and outside
    the aggregates a value may read only group keys (`col("g") * 10 + col("x").sum()`)."""
    calls: list[AggCall] = []
    for e, _ in values:
        for x in _agg_calls(e):
            if x not in calls:
                calls.append(x)
    agg = B.aggregate(df._plan, keys, [(c, str(c)) for c in calls])
    by_call = {c: ColumnRef(f) for c, f in zip(calls, agg.agg_fields, strict=True)}
    by_key = {k: ColumnRef(f) for (k, _), f in zip(keys, agg.group_fields, strict=True)}
    key_names = {(k, n) for k, n in keys}
    produced = {f.id for f in agg.schema}

    def over_groups(e):
        """`e` reading the Aggregate's output: aggregates and group keys replaced top-down
        (bottom-up, a key inside an aggregate's argument would be replaced first and the
        aggregate no longer found)."""
        if isinstance(e, AggCall):
            return by_call[e]
        if e in by_key:
            return by_key[e]
        kids = e.children()
        if not kids:
            return e
        new = tuple(over_groups(k) for k in kids)
        return e if all(a is b for a, b in zip(new, kids, strict=True)) else e.with_children(new)

    out = [(ColumnRef(f), n) for (_, n), f in zip(keys, agg.group_fields, strict=True)]
    for e, name in values:
        if (e, name) in key_names:  # the key itself, output once (under another name, again)
            continue
        done = over_groups(e)
        stray = [x for x in walk(done) if isinstance(x, ColumnRef) and x.id not in produced]
        if stray:
            raise AggregateMisuseError(f"{name} reads column {stray[0].field.name} outside an "
                                       f"aggregate: group by it or aggregate it")
        out.append((done, name))
    _check_unique([n for _, n in out], "agg()")
    return DataFrame(df._session, B.project(agg, out))


def _agg_calls(e):
    from .plan.expr import walk

    return [x for x in walk(e) if isinstance(x, AggCall)]


def _key_list(keys: Any, what: str) -> list:
    if isinstance(keys, (str, Expr)):
        return [keys]
    if isinstance(keys, (list, tuple)):
        return list(keys)
    raise BindError(f"join {what}= takes a column, an expression or a list of them, not "
                    f"{keys!r}")


def _order_of(plan: LogicalPlan) -> list | None:
    """The sort keys the rows of `plan` are in, over its own columns: those of the Sort that
    filters, limits and projections above it keep (a projection passing each key's columns
    through), or None."""
    from .plan.expr import SortKey
    from .plan.logical import Filter, Limit, Project, Sort

    if isinstance(plan, (Filter, Limit)):
        return _order_of(plan.input)
    if isinstance(plan, Sort):
        keys = list(plan.keys)
        below = plan.input
        if isinstance(below, Project):  # (computed keys: sort() computes, sorts, drops them)
            made = {f.id: e for f, e in zip(below.fields, below.exprs, strict=True)
                    if not isinstance(e, ColumnRef)}
            keys = [SortKey(_lifted(transform(k.expr, lambda x: made.get(x.field.id) if
                                              isinstance(x, ColumnRef) else None), below,
                                    computed=False),
                            k.ascending, k.nulls_first) for k in keys]
            if any(k.expr is None for k in keys):
                return list(plan.keys)
        return keys
    if isinstance(plan, Project):
        keys = _order_of(plan.input)
        if keys is None:
            return None
        out = []
        for k in keys:
            e = _lifted(k.expr, plan)
            if e is None:
                return None
            out.append(SortKey(e, k.ascending, k.nulls_first))
        return out
    return None


def _lifted(expr, project, computed: bool = True):
    """`expr` over `project`'s input, over its output instead (a column it computes as
    `expr`, unless not `computed`; else through the columns it passes as they are), or None
    when it reads a column the projection does not pass."""
    passed = {e.field.id: ColumnRef(f) for f, e in zip(project.fields, project.exprs,
                                                       strict=True) if isinstance(e, ColumnRef)}
    for f, e in zip(project.fields, project.exprs, strict=True):
        if computed and e == expr:
            return ColumnRef(f)
    if any(isinstance(x, ColumnRef) and x.field.id not in passed for x in walk(expr)):
        return None
    return transform(expr, lambda x: passed.get(x.field.id) if isinstance(x, ColumnRef)
                     else None)


def _rename_clashes(joined, n_left: int, suffix: str, drop: tuple, coalesce=None) -> LogicalPlan:
    left = joined.schema[:n_left]
    right = [f for f in joined.schema[n_left:] if f.id not in drop]
    left_names = {f.name for f in left}
    # a suffixed name must not take the name of another column (Polars' DuplicateError):
    # col(name) would read a different column than it names
    taken = left_names | {f.name for f in right}
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
        if name in left_names:
            name = name + suffix
            if name in taken:
                raise BindError(f"join: the right column {f.name!r} would be renamed {name!r}, "
                                f"which is already a column; pass another suffix= or rename "
                                f"a column first")
            taken.add(name)
        items.append((ColumnRef(f), name))
    return B.project(joined, items)


# ---- helpers ---------------------------------------------------------------------------------


def _check_unique(names: Sequence[str], what: str) -> None:
    """The builder never makes two result columns of one name (Polars refuses them too):
    to_pylist(), to_pydict() and pandas would show one of them, and `col(name)` could not
    pick either."""
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise BindError(f"{what} would give two columns named {n!r}; name one with "
                            f".alias() (or rename())")
        seen.add(n)


def _row_count(value: Any, what: str, none_ok: bool = False) -> int | None:
    """A LIMIT or OFFSET count: a non-negative integer (SQL's rule; None: no limit)."""
    import operator

    if value is None and none_ok:
        return None
    if isinstance(value, bool):
        raise BindError(f"{what} must be an integer, not {value!r}")
    try:
        n = operator.index(value)
    except TypeError:
        raise BindError(f"{what} must be an integer, not {value!r}") from None
    if n < 0:
        raise BindError(f"{what} must not be negative")
    if n >= 2 ** 63:
        raise BindError(f"{what} {n} is out of range for BIGINT")
    return n


def _windows(e) -> list:
    return [x for x in walk(e) if isinstance(x, WindowCall)]


def _check_item(item: Any, what: str) -> None:
    """A column name or an expression: a bare Python value such as `0` is refused (it would
    be a constant, never the column "0" nor SQL's ORDER BY 2; pqe.lit(0) is a constant)."""
    if not isinstance(item, (str, Expr, SortExpr)):
        raise BindError(f"{what} takes column names or expressions, not {item!r}; use "
                        f"pqe.col(...) for a column or pqe.lit(...) for a constant")


def _checked_cancel(cancel: Any) -> Any:
    """A cancel= event: None or an object with is_set() (a threading.Event); `True` would
    be accepted and never checked."""
    if cancel is not None and not callable(getattr(cancel, "is_set", None)):
        raise BindError(f"cancel= takes a threading.Event (anything with is_set()), not "
                        f"{cancel!r}")
    return cancel


def _per_key(value: Any, n: int, what: str, none_ok: bool) -> list:
    """sort()'s descending= / nulls_last=: one bool for every key, or one per key."""
    if hasattr(value, "tolist") and not isinstance(value, (bool, int)):  # a NumPy array
        value = value.tolist()
    values = list(value) if isinstance(value, (list, tuple)) else [value] * n
    if len(values) != n:
        raise BindError(f"sort(): {what} has {len(values)} values for {n} sort keys")
    for v in values:
        if not (isinstance(v, bool) or (none_ok and v is None)):
            raise BindError(f"sort(): {what} takes True or False (or a list of them, one per "
                            f"key), not {v!r}")
    return values


def _check_placement(resolved, name: str, what: str, allow_agg: bool,
                     allow_window: bool) -> None:
    if not allow_agg and is_aggregate(resolved):
        raise BindError(f"aggregate {name} is not allowed in {what}; use group_by().agg()")
    if not allow_window and _windows(resolved):
        raise BindError(f"window function {name} is not allowed in {what}; add it with "
                        f"with_columns() first")


def _function_name(fn) -> str:
    import functools

    if isinstance(fn, functools.partial):
        return _function_name(fn.func)
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__


def _declared_schema(schema: Any) -> pa.Schema:
    """map_batches(schema=...): a pyarrow Schema, a {name: type} dict or (name, type) pairs,
    in engine types (types as Expr.cast takes them)."""
    if isinstance(schema, pa.Schema):
        pairs = [(f.name, f.type) for f in schema]
    elif isinstance(schema, dict):
        pairs = list(schema.items())
    else:
        try:
            pairs = [(f.name, f.type) if isinstance(f, pa.Field) else tuple(f) for f in schema]
        except TypeError:
            raise BindError("map_batches schema= is a pyarrow Schema, a {name: type} dict or "
                            "(name, type) pairs") from None
    fields = []
    for item in pairs:
        if len(item) != 2 or not isinstance(item[0], str) or not item[0]:
            raise BindError(f"map_batches schema=: {item!r} is not a (name, type) pair")
        fields.append(pa.field(item[0], T.parse_type(item[1])))
    names = [f.name for f in fields]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise BindError(f"map_batches schema= names column {dup[0]!r} twice")
    if not fields:
        raise BindError("map_batches schema= has no columns")
    return pa.schema(fields)


def _known_rows(plan: LogicalPlan) -> int | None:
    """The exact number of rows of an optimized plan when table metadata tells it without
    running anything (in-memory tables, Parquet footers, through row-preserving nodes);
    None otherwise."""
    from .catalog import MemoryTable, ParquetTable
    from .plan import logical as L

    if isinstance(plan, L.Scan):
        if plan.filters:
            return None
        if isinstance(plan.provider, MemoryTable):
            return plan.provider.table.num_rows
        if isinstance(plan.provider, ParquetTable):
            return plan.provider.statistics().num_rows
        return None
    if isinstance(plan, L.Values):
        return len(plan.rows)
    if isinstance(plan, (L.Project, L.Window)):
        return _known_rows(plan.input)
    if isinstance(plan, L.Sort):
        n = _known_rows(plan.input)
        return n if n is None or plan.fetch is None else min(n, plan.fetch)
    if isinstance(plan, L.Limit):
        n = _known_rows(plan.input)
        if n is None:
            return None
        n = max(0, n - plan.offset)
        return n if plan.fetch is None else min(n, plan.fetch)
    if isinstance(plan, L.Aggregate) and not plan.group:
        return 1
    if isinstance(plan, L.Union):
        counts = [_known_rows(p) for p in plan.inputs]
        return None if any(c is None for c in counts) else sum(counts)
    return None


def _count_text(shown: int, total: int | None) -> str:
    if total is None:
        return f"first {shown} rows (more not counted)"
    if total == shown:
        return f"{total:,} row" + ("" if total == 1 else "s")
    return f"first {shown} of {total:,} rows"


def _cell(v) -> str:
    if isinstance(v, bytes):
        return repr(v)
    return str(v)


def _text_table(t: pa.Table, width: int = 40) -> str:
    """Rows as aligned text columns under their names and types; NULL as NULL."""
    def fit(text: str) -> str:
        text = text.replace("\n", "\\n")
        return text if len(text) <= width else text[: width - 1] + "…"

    headers = [fit(n) for n in t.column_names]
    types = [fit(str(f.type)) for f in t.schema]
    rows = [[("NULL" if v is None else fit(_cell(v))) for v in (c[i].as_py() for c in t.columns)]
            for i in range(t.num_rows)]
    widths = [max([len(h), len(ty)] + [len(r[j]) for r in rows])
              for j, (h, ty) in enumerate(zip(headers, types, strict=True))]
    numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
               or pa.types.is_decimal(f.type) for f in t.schema]

    def line(cells, align=True):
        return " | ".join(c.rjust(w) if (align and num) else c.ljust(w)
                          for c, w, num in zip(cells, widths, numeric, strict=True)).rstrip()

    out = [line(headers, False), line(types, False),
           "-+-".join("-" * w for w in widths)]
    out += [line(r) for r in rows]
    return "\n".join(out)


# ---- progress in notebooks -----------------------------------------------------------------

NOTEBOOK_PROGRESS_DELAY = 1.0  # seconds a query runs before a notebook shows its progress


def _notebook_display():
    """(display, HTML) from IPython.display when this is the main thread of a Jupyter kernel;
    None elsewhere (a plain interpreter, terminal IPython, a script, another thread).
    IPython is never imported here: a kernel has imported it already."""
    ipython = sys.modules.get("IPython")
    if ipython is None or threading.current_thread() is not threading.main_thread():
        return None
    try:
        shell = ipython.get_ipython()
        if shell is None or getattr(shell, "kernel", None) is None:
            return None
        from IPython.display import HTML, display
    except Exception:  # noqa: BLE001 - an unusual IPython: no progress display
        return None
    return display, HTML


class _NotebookProgress:
    """A progress bar in a notebook's output: an HTML `<progress>` element shown with a
    `display_id` once the query has run for `delay` seconds, updated in place (at most a few
    times a second) and cleared when the query ends. Until the engine has reported a task
    count the bar is indeterminate and shows the elapsed time."""

    def __init__(self, display, html, delay: float):
        self._display = display
        self._html = html
        self.delay = delay
        self.start = time.monotonic()
        self.done = 0
        self.total = 0
        self._lock = threading.Lock()
        self._handle = None
        self._shown: str | None = None
        self._last_update = 0.0
        self._failed = False

    def update(self, done: int, total: int) -> None:
        """The engine's progress callback (task-count deltas, from its threads)."""
        with self._lock:
            self.done += done
            self.total += total

    def html(self, now: float | None = None) -> str:
        elapsed = int((now if now is not None else time.monotonic()) - self.start)
        clock = f"{elapsed // 60}:{elapsed % 60:02d}"
        with self._lock:
            done, total = self.done, self.total
        style = 'style="width: 24em; vertical-align: middle"'
        if total:
            bar = f'<progress value="{min(done, total)}" max="{total}" {style}></progress>'
            text = f"{min(done, total)}/{total} tasks · {clock}"
        else:
            bar = f"<progress {style}></progress>"
            text = f"running · {clock}"
        return (f'<div class="pqe-progress" style="font-family: monospace">{bar} '
                f"{text}</div>")

    def poll(self) -> None:
        """Called by the waiting thread: show the bar after the delay, then keep it current
        (a display that fails is given up: the query goes on)."""
        now = time.monotonic()
        if self._failed or now - self.start < self.delay:
            return
        try:
            self._draw(now)
        except Exception:  # noqa: BLE001 - the display is a courtesy; the query is not
            self._failed = True

    def _draw(self, now: float) -> None:
        body = self.html(now)
        if self._handle is None:
            self._handle = self._display(self._html(body), display_id=True)
            self._shown, self._last_update = body, now
        elif body != self._shown and now - self._last_update >= 0.2:
            self._handle.update(self._html(body))
            self._shown, self._last_update = body, now

    def close(self) -> None:
        if self._handle is not None:
            self._handle.update(self._html(""))
            self._handle = None


def _with_notebook_progress(run: Callable, notebook, cancel) -> pa.Table:
    """`run(stop, progress)` on a helper thread while this (the cell's) thread draws the
    progress bar, so the display is always updated from the thread running the cell. Ctrl-C
    (the kernel's interrupt) and `cancel` stop the query as they do without a display."""
    display, html = notebook
    bar = _NotebookProgress(display, html, NOTEBOOK_PROGRESS_DELAY)
    stop = threading.Event()
    box: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            box["value"] = run(stop, bar.update)
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = e
        finally:
            finished.set()

    worker = threading.Thread(target=target, name="pqe-notebook-query", daemon=True)
    worker.start()
    try:
        while not finished.wait(0.1):
            if cancel is not None and cancel.is_set():
                stop.set()
            bar.poll()
    except KeyboardInterrupt:
        stop.set()
        finished.wait(2.0)  # the query stops at its next task
        raise
    finally:
        with contextlib.suppress(Exception):  # the display is a courtesy; the result is not
            bar.close()
    if "error" in box:
        raise box["error"]
    return box["value"]
