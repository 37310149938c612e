"""Executing statements that change something: CREATE, INSERT, UPDATE, DELETE, DROP, COPY.

Every write runs under the session's write lock (held by the caller) and is atomic: the new
contents of a table are computed in full with the engine itself (INSERT ... SELECT, UPDATE as
a projection, DELETE as a filter), checked (types, NOT NULL, PRIMARY KEY, UNIQUE), and only
then swapped into the catalog; a statement that fails leaves nothing behind. A DataFrame made
earlier keeps reading the version it was made over. COPY writes a temporary file beside the
target and renames it when complete.

A statement cancelled (Ctrl-C, `cancel`) before its commit point (the swap, the rename)
changes nothing: each write checks its cancellation there (`_not_cancelled`), under the write
lock, right before committing. Only its query's run checked before: the constant VALUES of an
INSERT run no query, and a Ctrl-C during the key checks after one went unseen, so the row was
committed after the caller was told the statement had stopped.
"""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import filesystems
from .. import types as T
from ..catalog import FileTable, MemoryTable
from ..errors import (BindError, CatalogError, ConstraintError, DataValueError, Error,
                      ExecutionError, InternalError, QueryCancelled, UnsupportedError)
from ..plan import builder as B
from ..plan import statements as S
from ..plan.expr import ColumnRef, Literal
from ..plan.logical import LogicalPlan, Project, Scan, Values
from ..sql import View
from .result import Result

if TYPE_CHECKING:  # pragma: no cover
    from .state import SessionState

# In-memory tables are re-chunked once they hold this many chunks (many small INSERTs).
MAX_CHUNKS = 64


def execute(session: SessionState, stmt: S.Statement, run: dict) -> Result:
    if isinstance(stmt, S.Insert):
        return _insert(session, stmt, run)
    if isinstance(stmt, S.Update):
        return _update(session, stmt, run)
    if isinstance(stmt, S.Delete):
        return _delete(session, stmt, run)
    if isinstance(stmt, S.CreateTable):
        return _create_table(session, stmt, run)
    if isinstance(stmt, S.CreateView):
        return _create_view(session, stmt, run)
    if isinstance(stmt, S.Drop):
        return _drop(session, stmt, run)
    if isinstance(stmt, S.Copy):
        return _copy(session, stmt, run)
    raise UnsupportedError(f"{stmt.kind} statements are not supported")


def _not_cancelled(run: dict | None, what: str) -> None:
    """Raise QueryCancelled if the statement was cancelled: called right before its commit
    point, so that a statement reported as cancelled (or interrupted) never commits."""
    cancel = (run or {}).get("cancel")
    if cancel is not None and cancel.is_set():
        raise QueryCancelled(f"{what} was cancelled before it committed; nothing was changed")


# ---- CREATE / DROP ---------------------------------------------------------------------------


def _existing(session: SessionState, name: str, quoted: bool, kind: str, replace_: bool,
              if_not_exists: bool) -> tuple[bool, str | None]:
    """(stop, key of the entry being replaced)."""
    key = session.catalog.find(name, exact=quoted)
    if key is None:
        other = session.catalog.find(name, exact=False)
        if other is not None and other != name and not session.catalog.made_by_sql(other):
            # "mixed" beside the application's "Mixed": unquoted `mixed` (and `Mixed`) would
            # read SQL's new table from then on (a lower-case name is found first), so SQL
            # would change what the application's own queries read
            raise CatalogError(f"CREATE {kind} \"{name}\": the application registered "
                               f"'{other}', which unquoted names would no longer reach; "
                               f"choose another name")
        return False, None
    if if_not_exists:
        return True, None
    if not replace_:
        raise CatalogError(f"{kind.lower()} '{key}' already exists")
    entry = session.catalog.snapshot()[key]
    _sql_made(session, key, f"CREATE OR REPLACE {kind}")
    if isinstance(entry, View) != (kind == "VIEW"):
        what = "a view" if isinstance(entry, View) else "a table"
        raise CatalogError(f"'{key}' is {what}: CREATE OR REPLACE {kind} cannot replace it")
    return False, key


def _create_table(session: SessionState, stmt: S.CreateTable, run: dict) -> Result:
    stop, old = _existing(session, stmt.name, stmt.quoted, "TABLE", stmt.replace,
                          stmt.if_not_exists)
    if stop:
        return Result(stmt.kind)
    if stmt.source is not None:
        table = session.run(stmt.source, **run)
        if stmt.column_names:
            table = table.rename_columns(list(stmt.column_names))
        names = table.column_names
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise BindError(f"CREATE TABLE {stmt.name}: the query names column "
                            f"'{sorted(dup)[0]}' more than once; give each column its own name")
        provider = MemoryTable(table)
        rows: int | None = table.num_rows
    else:
        provider = MemoryTable(stmt.schema.empty_table(), stmt.primary_key, stmt.unique)
        rows = None
    _not_cancelled(run, f"CREATE TABLE {stmt.name}")
    if old is not None and old != stmt.name:
        session.catalog.drop(old, exact=True)
    session.catalog.register(stmt.name, provider, by_sql=True)
    return Result(stmt.kind, rows_affected=rows)


def _create_view(session: SessionState, stmt: S.CreateView, run: dict) -> Result:
    stop, old = _existing(session, stmt.name, stmt.quoted, "VIEW", stmt.replace,
                          stmt.if_not_exists)
    if stop:
        return Result(stmt.kind)
    _not_cancelled(run, f"CREATE VIEW {stmt.name}")
    if old is not None and old != stmt.name:
        session.catalog.drop(old, exact=True)
    session.catalog.register(stmt.name, View(stmt.sql, stmt.column_names, stmt.query,
                                                stmt.source), by_sql=True)
    return Result(stmt.kind)


def _drop(session: SessionState, stmt: S.Drop, run: dict) -> Result:
    keys = []
    snapshot = session.catalog.snapshot()
    for name, quoted in stmt.names:
        key = session.catalog.find(name, exact=quoted)
        if key is None:
            if stmt.if_exists:
                continue
            raise CatalogError(f"{stmt.object_kind.lower()} '{name}' does not exist")
        is_view = isinstance(snapshot[key], View)
        _sql_made(session, key, f"DROP {stmt.object_kind}")
        if is_view != (stmt.object_kind == "VIEW"):
            raise CatalogError(f"'{key}' is a {'view' if is_view else 'table'}: use DROP "
                               f"{'VIEW' if is_view else 'TABLE'}")
        keys.append(key)
    _not_cancelled(run, f"DROP {stmt.object_kind}")
    for key in keys:  # every name checked first: a DROP of several drops all or none
        session.catalog.drop(key, exact=True)
    return Result(stmt.kind)


def _sql_made(session: SessionState, key: str, what: str) -> None:
    if not session.catalog.made_by_sql(key):
        raise CatalogError(f"{what}: '{key}' was registered by the application; SQL changes "
                           f"and drops only the tables and views SQL created")


# ---- INSERT ------------------------------------------------------------------------------------


def _current(session: SessionState, name: str, provider: MemoryTable) -> MemoryTable:
    entry = session.catalog.snapshot().get(name)
    if entry is not provider:  # bound and run under one lock: only a bug gets here
        raise InternalError(f"table {name} changed between binding and running a write")
    return provider


def _insert(session: SessionState, stmt: S.Insert, run: dict) -> Result:
    entry = _current(session, stmt.table, stmt.provider)
    schema = entry.table.schema
    rows = _source_rows(session, stmt.source, run)
    _not_cancelled(run, f"INSERT INTO {stmt.table}")  # (before the key checks, which take time)
    arrays = []
    for f in schema:
        if f.name in stmt.columns:
            arrays.append(rows.column(stmt.columns.index(f.name)))
        else:
            arrays.append(pa.nulls(rows.num_rows, f.type))
    new = conform(pa.Table.from_arrays(arrays, names=schema.names), schema,
                  f"INSERT INTO {stmt.table}")
    conflict = stmt.on_conflict
    if conflict is None:
        check_keys(entry, new, entry.table, f"INSERT INTO {stmt.table}")
        table, n = _concat(entry.table, new), new.num_rows
    elif conflict.action == "nothing":
        table, n = _insert_or_ignore(entry, new, conflict.target, stmt.table)
    elif conflict.action == "replace":
        table, n = _insert_or_replace(entry, new, conflict.target, stmt.table)
    else:
        table, n = _insert_or_update(session, entry, new, conflict, stmt.table, run)
    _store(session, stmt.table, entry, table, run, f"INSERT INTO {stmt.table}")
    return Result("INSERT", rows_affected=n)


def _source_rows(session: SessionState, plan: LogicalPlan, run: dict) -> pa.Table:
    """The rows a statement's source yields. VALUES of constants are built straight into
    Arrow arrays (an INSERT of a few rows does not plan and schedule a query)."""
    fast = _constant_rows(plan)
    if fast is not None:
        return fast
    return session.run(plan, **run)


def _constant_rows(plan: LogicalPlan) -> pa.Table | None:
    if not (isinstance(plan, Project) and isinstance(plan.input, Values)):
        return None
    values = plan.input
    positions = {f.id: j for j, f in enumerate(values.fields)}
    columns = []
    for e, f in zip(plan.exprs, plan.fields, strict=True):
        if not isinstance(e, ColumnRef) or e.id not in positions or e.dtype != f.dtype:
            return None
        j = positions[e.id]
        items = [row[j] for row in values.rows]
        if not all(isinstance(x, Literal) for x in items):
            from ..kernels.expressions import evaluate_constant

            try:
                items = [x if isinstance(x, Literal) else _constant(evaluate_constant, x, f)
                         for x in items]
            except OverflowError:  # a value with no Python form (DATE past 9999): in Arrow
                return None
        try:
            columns.append(pa.array([x.value for x in items], type=f.dtype))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as err:
            raise ExecutionError(f"VALUES: a value does not fit column {f.name} "
                                 f"({T.type_name(f.dtype)}): {err}") from err
    return pa.Table.from_arrays(columns, names=[f.name for f in plan.fields])


def _constant(evaluate, e, f) -> Literal:
    try:
        return evaluate(e)
    except pa.ArrowException as err:
        from ..plan.explain import format_expr
        from ..plan.expr import Cast

        shown = format_expr(e.arg if isinstance(e, Cast) else e)
        raise DataValueError(f"VALUES: {shown} is not a valid {T.type_name(f.dtype)} (column "
                             f"{f.name}): {str(err).splitlines()[0]}") from err


def _concat(a: pa.Table, b: pa.Table) -> pa.Table:
    return pa.concat_tables([a, b.cast(a.schema)])


def _keys_of(entry: MemoryTable) -> list[tuple[str, ...]]:
    return [k for k in (entry.primary_key, *entry.unique) if k]


def _with_keys(table: pa.Table, key: tuple[str, ...]) -> pa.Table:
    """Rows whose key columns are all non-NULL (NULLs never conflict: SQL's UNIQUE)."""
    mask = None
    for c in key:
        valid = pc.is_valid(table.column(c))
        mask = valid if mask is None else pc.and_(mask, valid)
    return table if mask is None else table.filter(mask)


def _key_text(table: pa.Table, key: tuple[str, ...], row: int) -> str:
    vals = [table.column(c)[row].as_py() for c in key]
    return "(" + ", ".join(repr(v) for v in vals) + ")"


def _hashable(table: pa.Table, key: tuple[str, ...]) -> pa.Table:
    """The key columns as grouped and matched: a float key canonical (-0.0 = 0.0, NaN = NaN,
    as SQL compares them; Arrow's hash compares bits) and a DOUBLE's bits folded so Acero
    hashes it well (kernels.relational.hash_key_floats)."""
    from ..kernels.relational import hash_key_floats

    return pa.Table.from_arrays([hash_key_floats(table.column(c)) for c in key],
                                names=list(key))


def _duplicates(table: pa.Table, key: tuple[str, ...]) -> pa.Table:
    """Key values that occur more than once (NULL keys excluded), as given (each from the
    first of its rows)."""
    keyed = _with_keys(_hashable(table, key).append_column("__row", _positions(table.num_rows)),
                       key)
    counts = keyed.group_by(list(key), use_threads=False).aggregate(
        [([], "count_all"), ("__row", "min")])
    counts = counts.filter(pc.greater(counts.column("count_all"), 1))
    return table.select(list(key)).take(counts.column("__row_min"))


def _matches(left: pa.Table, right: pa.Table, key: tuple[str, ...]) -> pa.Array:
    """For each row of `left`, whether its (non-NULL) key occurs in `right`."""
    lk = _hashable(left, key).append_column("__row", _positions(left.num_rows))
    rk = _with_keys(_hashable(right, key), key)
    rk = rk.group_by(list(key)).aggregate([])
    hit = lk.join(rk, keys=list(key), join_type="left semi")
    return pc.is_in(_positions(left.num_rows), value_set=hit.column("__row"))


def _positions(n: int) -> pa.Array:
    return pa.array(np.arange(n, dtype=np.int64))


def _constraint_name(entry: MemoryTable, key: tuple[str, ...]) -> str:
    kind = "PRIMARY KEY" if key == entry.primary_key else "UNIQUE"
    return f"{kind} ({', '.join(key)})"


def check_keys(entry: MemoryTable, new: pa.Table, existing: pa.Table | None, what: str) -> None:
    """Raise ConstraintError when `new` repeats a key of its own or of `existing`."""
    for key in _keys_of(entry):
        dup = _duplicates(new, key)
        if dup.num_rows:
            raise ConstraintError(f"{what}: duplicate key {_key_text(dup, key, 0)} violates "
                                  f"{_constraint_name(entry, key)}")
        if existing is not None and existing.num_rows and new.num_rows:
            hits = _matches(new, existing, key)
            if pc.any(hits).as_py():
                row = pc.index(hits, True).as_py()
                raise ConstraintError(f"{what}: duplicate key {_key_text(new, key, row)} "
                                      f"violates {_constraint_name(entry, key)}")


def _first_per_key(table: pa.Table, key: tuple[str, ...]) -> pa.Table:
    """Each key's first row (rows with a NULL key all stay)."""
    rows = _positions(table.num_rows)
    t = _hashable(table, key).append_column("__row", rows)
    keyed = _with_keys(t, key)
    first = keyed.group_by(list(key), use_threads=False).aggregate([("__row", "min")])
    keep = pc.is_in(rows, value_set=first.column("__row_min"))
    nulls = pc.invert(pc.is_in(rows, value_set=keyed.column("__row")))
    return table.filter(pc.or_(keep, nulls))


def _insert_or_ignore(entry: MemoryTable, new: pa.Table, target: tuple[str, ...],
                      name: str) -> tuple[pa.Table, int]:
    """ON CONFLICT [(target)] DO NOTHING / INSERT OR IGNORE: proposed rows that conflict (with
    the table or with an earlier proposed row) are skipped."""
    keys = [target] if target else _keys_of(entry)
    for key in keys:
        if entry.table.num_rows:
            new = new.filter(pc.invert(_matches(new, entry.table, key)))
        new = _first_per_key(new, key)
    check_keys(entry, new, entry.table, f"INSERT INTO {name}")  # constraints not targeted
    return _concat(entry.table, new), new.num_rows


def _insert_or_replace(entry: MemoryTable, new: pa.Table, key: tuple[str, ...],
                       name: str) -> tuple[pa.Table, int]:
    """INSERT OR REPLACE: a proposed row replaces the existing row with its key."""
    dup = _duplicates(new, key)
    if dup.num_rows:
        raise ConstraintError(f"INSERT OR REPLACE INTO {name}: the statement proposes key "
                              f"{_key_text(dup, key, 0)} twice")
    kept = entry.table
    if kept.num_rows:
        kept = kept.filter(pc.invert(_matches(kept, new, key)))
    check_keys(entry, new, kept, f"INSERT OR REPLACE INTO {name}")
    return _concat(kept, new), new.num_rows


def _insert_or_update(session: SessionState, entry: MemoryTable, new: pa.Table,
                      conflict: S.OnConflict, name: str, run: dict) -> tuple[pa.Table, int]:
    """ON CONFLICT (key) DO UPDATE SET ... [WHERE ...]: a proposed row whose key exists updates
    that row (when WHERE holds) instead of being inserted; the others are inserted."""
    key = conflict.target
    dup = _duplicates(new, key)
    if dup.num_rows:
        raise ConstraintError(f"INSERT INTO {name} ... ON CONFLICT DO UPDATE would change the "
                              f"row with key {_key_text(dup, key, 0)} twice")
    existing = entry.table
    n_old = existing.num_rows
    erows = _hashable(existing, key).append_column("__e", _positions(n_old))
    nrows = _hashable(new, key).append_column("__n", _positions(new.num_rows))
    pairs = _with_keys(erows, key).join(_with_keys(nrows, key), keys=list(key), join_type="inner")
    eidx, nidx = pairs.column("__e"), pairs.column("__n")
    insert = new.filter(pc.invert(pc.is_in(_positions(new.num_rows),
                                           value_set=nidx)))
    if pairs.num_rows == 0:
        check_keys(entry, insert, existing, f"INSERT INTO {name}")
        return _concat(existing, insert), insert.num_rows
    old_fields, new_fields = conflict.excluded
    width = len(old_fields)
    joined = pa.Table.from_arrays(
        list(existing.take(eidx).columns) + list(new.take(nidx).columns),
        names=[f"e{i}" for i in range(width)] + [f"x{i}" for i in range(width)])
    fields = tuple(replace(f, name=f"e{i}") for i, f in enumerate(old_fields)) + tuple(
        replace(f, name=f"x{i}") for i, f in enumerate(new_fields))
    scan = Scan("excluded", MemoryTable(joined), fields)
    sets = dict(conflict.assignments)
    items = []
    for i, f in enumerate(old_fields):
        items.append((sets.get(f.name, ColumnRef(fields[i])), f.name))
    cond = conflict.where if conflict.where is not None else Literal(True, T.BOOLEAN)
    items.append((cond, "__update"))
    updated = session.run(B.project(scan, items), **run)
    flag = updated.column("__update").fill_null(False)
    updated = conform(updated.drop_columns(["__update"]).filter(flag), existing.schema,
                      f"INSERT INTO {name} ... ON CONFLICT DO UPDATE")
    changed = pc.filter(eidx, flag)
    untouched = existing.filter(pc.invert(pc.is_in(_positions(n_old),
                                                   value_set=changed)))
    table = _concat(_concat(untouched, updated), insert)
    for k in _keys_of(entry):
        dupe = _duplicates(table, k)
        if dupe.num_rows:
            raise ConstraintError(f"INSERT INTO {name} ... ON CONFLICT DO UPDATE: duplicate key "
                                  f"{_key_text(dupe, k, 0)} violates {_constraint_name(entry, k)}")
    return table, insert.num_rows + updated.num_rows


# ---- UPDATE / DELETE ---------------------------------------------------------------------------


def _update(session: SessionState, stmt: S.Update, run: dict) -> Result:
    entry = _current(session, stmt.table, stmt.provider)
    out = session.run(stmt.plan, **run)
    _not_cancelled(run, f"UPDATE {stmt.table}")
    if stmt.assigned:
        table, changed = _update_from(entry, out, stmt)
    else:
        changed = pc.sum(out.column(out.num_columns - 1).cast(pa.int64())).as_py() or 0
        table = conform(out.drop_columns([out.column_names[-1]]), entry.table.schema,
                        f"UPDATE {stmt.table}")
    if changed:
        for key in _keys_of(entry):
            dup = _duplicates(table, key)
            if dup.num_rows:
                raise ConstraintError(f"UPDATE {stmt.table}: duplicate key "
                                      f"{_key_text(dup, key, 0)} violates "
                                      f"{_constraint_name(entry, key)}")
    _store(session, stmt.table, entry, table, run, f"UPDATE {stmt.table}")
    return Result("UPDATE", rows_affected=changed)


def _update_from(entry: MemoryTable, out: pa.Table, stmt: S.Update) -> tuple[pa.Table, int]:
    """UPDATE ... FROM: `out` holds one row per (target row, FROM row) pair, the target row's
    position then the new values of `stmt.assigned`. A target row paired more than once is an
    error, whatever the values (the SQL standard's MERGE rule: DuckDB and PostgreSQL update it
    with one of the pairs, which one unspecified). The new column is the old one with the
    paired rows' values replaced: one `take` over [old values, new values]."""
    what = f"UPDATE {stmt.table} ... FROM"
    old = entry.table
    n, m = old.num_rows, out.num_rows
    if m == 0:
        return conform(old, old.schema, what), 0
    pos = out.column(0).to_numpy()
    new = conform(out.drop_columns([out.column_names[0]]),
                  pa.schema([old.schema.field(c) for c in stmt.assigned]), what)
    order = np.argsort(pos, kind="stable")
    pos = pos[order]
    again = pos[1:] == pos[:-1]  # (sorted: a row paired more than once, its later pairs)
    if again.any():
        new = new.take(pa.array(order))
        differ = np.zeros(m - 1, dtype=bool)
        for c in stmt.assigned:
            col = new.column(c).combine_chunks()
            differ |= ~_same_values(col.slice(1), col.slice(0, m - 1))
        bad = np.flatnonzero(again & differ)
        if len(bad):
            r = int(pos[bad[0]])
            row = ", ".join(f"{k}={v!r}" for k, v in old.slice(r, 1).to_pylist()[0].items())
            raise DataValueError(
                f"{what}: the row ({row[:200]}) of {stmt.table} matches "
                f"{int(np.count_nonzero(pos == r))} rows of FROM that set it to different "
                f"values; pqe refuses to pick one (make the FROM rows unique per target row)")
        first = np.concatenate([[True], ~again])  # the pairs agree: one of each
        new, pos = new.filter(pa.array(first)), pos[first]
        m = len(pos)
    else:
        new = new.take(pa.array(order))
    index = np.arange(n, dtype=np.int64)
    index[pos] = n + np.arange(m, dtype=np.int64)
    take = pa.array(index)
    cols = []
    for f in old.schema:
        col = old.column(f.name)
        if f.name in stmt.assigned:
            col = pa.chunked_array(col.chunks + new.column(f.name).chunks, f.type).take(take)
        cols.append(col)
    return conform(pa.Table.from_arrays(cols, schema=old.schema), old.schema, what), m


def _same_values(a: pa.Array, b: pa.Array) -> np.ndarray:
    """Row by row, whether two arrays of one type hold the same value: both NULL, equal, or
    (floating point) both NaN. A type Arrow cannot compare counts as different."""
    try:
        same = pc.fill_null(pc.equal(a, b), False)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return np.zeros(len(a), dtype=bool)
    same = pc.or_(same, pc.and_(pc.is_null(a), pc.is_null(b)))
    if pa.types.is_floating(a.type):
        same = pc.or_(same, pc.fill_null(pc.and_(pc.is_nan(a), pc.is_nan(b)), False))
    return same.to_numpy(zero_copy_only=False)


def _delete(session: SessionState, stmt: S.Delete, run: dict) -> Result:
    entry = _current(session, stmt.table, stmt.provider)
    kept = session.run(stmt.plan, **run)
    table = conform(kept, entry.table.schema, f"DELETE FROM {stmt.table}")
    _store(session, stmt.table, entry, table, run, f"DELETE FROM {stmt.table}")
    return Result("DELETE", rows_affected=entry.table.num_rows - table.num_rows)


def _store(session: SessionState, name: str, entry: MemoryTable, table: pa.Table, run: dict,
           what: str) -> None:
    """Commit a table's new version (the caller holds the write lock)."""
    if table.num_columns and table.column(0).num_chunks > MAX_CHUNKS:
        table = table.combine_chunks()
    _not_cancelled(run, what)
    session.catalog.register(name, entry.with_table(table), by_sql=True)


def conform(table: pa.Table, schema: pa.Schema, what: str) -> pa.Table:
    """Rows cast to a table's column types (exactly: a value that does not fit is an error,
    never truncated), NOT NULL enforced."""
    cols = []
    for f, col in zip(schema, table.columns, strict=True):
        if col.type != f.type:
            try:
                col = col.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise ExecutionError(f"{what}: cannot store {col.type} in column {f.name} "
                                     f"({T.type_name(f.type)}): {str(e).splitlines()[0]}") from e
        if not f.nullable and col.null_count:
            raise ConstraintError(f"{what}: NULL value in column {f.name} violates its NOT "
                                  f"NULL constraint")
        if (n := T.max_length(f)) is not None:
            col = _within_length(col, n, f.name, what)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema)


def _within_length(col: pa.ChunkedArray, n: int, name: str, what: str) -> pa.ChunkedArray:
    """The values of a column declared VARCHAR(n) / CHAR(n), checked: a value of more than n
    characters is an error, unless what is past n is spaces, which are cut (PostgreSQL)."""
    over = pc.greater(pc.utf8_length(col), n)
    if not pc.any(over).as_py():
        return col
    long = pc.and_(over, pc.greater(pc.utf8_length(pc.utf8_rtrim(col, characters=" ")), n))
    if pc.any(long).as_py():
        value = col.filter(long)[0].as_py()
        shown = value if len(value) <= 40 else value[:40] + "..."
        raise DataValueError(f"{what}: value {shown!r} is too long for column {name}, "
                             f"declared with at most {n} characters")
    return pc.if_else(over, pc.utf8_slice_codeunits(col, 0, n), col)


# ---- COPY --------------------------------------------------------------------------------------


def _copy(session: SessionState, stmt: S.Copy, run: dict) -> Result:
    if "\x00" in stmt.path:  # the OS refuses such a name with a bare ValueError
        raise ExecutionError("COPY TO: a path cannot contain a NUL byte")
    refuse_empty_path(stmt.path, "COPY TO")
    session.config.access.check_write(stmt.path, "COPY TO")
    partition_by = stmt.options.get("PARTITION_BY")
    dataset = partition_by is not None or stmt.options.get("PER_THREAD_OUTPUT")
    if stmt.format == "csv":
        codec = _csv_codec(stmt)
        if dataset and codec is not None:
            raise UnsupportedError(f"COPY TO '{stmt.path}': COMPRESSION of CSV files written "
                                   f"per partition is not supported")
    if dataset:
        # a directory of files, one per partition (and hive directory), written in parallel
        if isinstance(partition_by, str):
            partition_by = (partition_by,)
        # the temporary directory is made beside the target, which replaces the target
        # directory as a whole: its parent must be writable too (never an allowed root),
        # taken from the path as resolved (access.check_replace)
        session.config.access.check_replace(stmt.path, "COPY TO")
        options = {"compression": stmt.options.get("COMPRESSION", "snappy"),
                   "header": bool(stmt.options.get("HEADER", True)),
                   "delimiter": str(stmt.options.get("DELIMITER", ","))}
        rows = write_dataset(session, stmt.source, stmt.path, stmt.format,
                             tuple(partition_by or ()), options,
                             overwrite=bool(stmt.options.get("OVERWRITE")), run=run,
                             what="COPY TO")
        return Result("COPY", rows_affected=rows)
    check_csv_columns(stmt.source.schema, stmt.format, f"COPY TO '{stmt.path}'")
    names = [f.name for f in stmt.source.schema]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:  # (a file pqe itself then refused to read)
        raise BindError(f"COPY TO '{stmt.path}': the query names column '{dup[0]}' more than "
                        f"once; give each column its own name")
    # the path as every reader resolves it: a `file://` URL is a local path (checked as one
    # above), any other URL an object in its store; never a local path spelled like a URL
    try:
        fs_spec, path = filesystems.resolve(stmt.path)
    except CatalogError as e:
        raise ExecutionError(f"COPY TO '{stmt.path}': {e}") from e
    if not fs_spec.is_local:
        return _copy_to_store(session, stmt, fs_spec, path, run)
    _check_copy_target(session, path, stmt)
    table = session.run(stmt.source, **run)
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise ExecutionError(f"COPY TO '{stmt.path}': directory {directory} does not exist")
    tmp = os.path.join(directory, f".{os.path.basename(path)}.pqe-{uuid.uuid4().hex[:12]}.tmp")
    try:
        _write_file(table, tmp, stmt)
        _not_cancelled(run, f"COPY TO '{stmt.path}'")
        if stmt.options.get("OVERWRITE"):
            _refuse_special_file(path, stmt.path)  # (again: made while the query ran)
            os.replace(tmp, path)
        else:
            _put_new(tmp, path, stmt.path)
    except pa.ArrowException as e:  # (a BLOB of bytes that are not UTF-8, into CSV)
        raise ExecutionError(f"COPY TO '{stmt.path}': {str(e).splitlines()[0]}") from e
    except OSError as e:
        raise ExecutionError(f"COPY TO '{stmt.path}': {e.strerror or e}") from e
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return Result("COPY", rows_affected=table.num_rows)


def _write_file(table: pa.Table, where, stmt: S.Copy, filesystem=None) -> None:
    """One file of COPY's format at `where` (a path on `filesystem`, local by default)."""
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    if stmt.format == "parquet":
        compression = stmt.options.get("COMPRESSION", "snappy")
        pq.write_table(table, where, filesystem=filesystem,
                       compression=None if compression == "none" else compression)
        return
    from ..kernels.write import csv_floats

    table = csv_floats(table)
    options = pcsv.WriteOptions(include_header=bool(stmt.options.get("HEADER", True)),
                                delimiter=str(stmt.options.get("DELIMITER", ",")))
    codec = _csv_codec(stmt)
    if filesystem is None:
        if codec is None:
            pcsv.write_csv(table, where, options)
            return
        with pa.CompressedOutputStream(where, codec) as out:
            pcsv.write_csv(table, out, options)
        return
    with filesystem.open_output_stream(where, compression=codec) as out:
        pcsv.write_csv(table, out, options)


_CSV_CODECS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd"}


def _csv_codec(stmt: S.Copy) -> str | None:
    """The compression of a CSV file COPY writes: COMPRESSION if given, else the one its name
    says (`x.csv.gz` is gzip, as DuckDB writes it: it was plain text under a .gz name, which
    neither pqe nor DuckDB could read back), else none."""
    given = stmt.options.get("COMPRESSION")  # (the binder took one of none, gzip, bz2, zstd)
    if given is None:
        low = stmt.path.lower()
        return next((c for suffix, c in _CSV_CODECS.items() if low.endswith(suffix)), None)
    return None if given == "none" else str(given)


def _put_new(tmp: str, path: str, shown: str) -> None:
    """Move the finished file `tmp` to `path`, which must not exist: by a hard link, which
    fails when another writer created the file meanwhile (a rename would replace it, and the
    other COPY's rows would be lost without a word)."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise ExecutionError(f"COPY TO '{shown}': the file exists (written while this COPY "
                             f"ran); use OVERWRITE to replace it") from None
    except OSError:  # a file system without hard links: checked, then renamed
        if os.path.exists(path):
            raise ExecutionError(f"COPY TO '{shown}': the file exists; use OVERWRITE to "
                                 f"replace it") from None
        os.replace(tmp, path)


def _copy_to_store(session: SessionState, stmt: S.Copy, fs_spec, key: str, run: dict) -> Result:
    """COPY of one file to an object store URL (`s3://bucket/k.parquet`), through the
    filesystem the dataset writer uses. Written under a hidden temporary key beside the
    target, then copied to the target (server-side on S3: the bytes do not pass through the
    client again) only once complete, and the temporary key deleted: an output stream that
    fails is closed on the way out, and closing uploads what was written, so written at the
    target a failed COPY (a BLOB that is not UTF-8, into CSV) left a truncated object, and
    with OVERWRITE destroyed the old one."""
    import pyarrow.fs as pafs

    from ..kernels import write as K

    refuse_table_data(session, fs_spec, key, f"COPY TO '{stmt.path}'", dataset=False)
    fs = fs_spec.arrow_fs()
    try:
        found = fs.get_file_info(key).type
    except (OSError, pa.ArrowException) as e:
        raise ExecutionError(f"COPY TO '{stmt.path}': {e}") from e
    if found == pafs.FileType.Directory:
        raise ExecutionError(f"COPY TO '{stmt.path}': it is a directory")
    if found != pafs.FileType.NotFound and not stmt.options.get("OVERWRITE"):
        raise ExecutionError(f"COPY TO '{stmt.path}': the file exists; add OVERWRITE (COPY ... "
                             f"TO '...' (FORMAT ..., OVERWRITE)) to replace it")
    table = session.run(stmt.source, **run)
    tmp = K.temporary_root(key)
    try:
        _write_file(table, tmp, stmt, fs)
        _not_cancelled(run, f"COPY TO '{stmt.path}'")
        fs.copy_file(tmp, key)
    except (OSError, pa.ArrowException) as e:
        raise ExecutionError(f"COPY TO '{stmt.path}': {str(e).splitlines()[0]}") from e
    finally:
        K.delete_quietly(fs, tmp)
    return Result("COPY", rows_affected=table.num_rows)


def check_csv_columns(fields, fmt: str, what: str) -> None:
    """CSV has no form for LIST, STRUCT or MAP values: refused by the column's name before
    the query runs (Arrow's CSV writer would fail with a bare 'Unsupported Type'). Nor has
    either format's writer one for INTERVAL (Arrow's month-day-nano type)."""
    for f in fields:
        if pa.types.is_interval(f.dtype) or pa.types.is_duration(f.dtype):
            raise UnsupportedError(f"{what}: column {f.name} is {T.type_name(f.dtype)}, which "
                                   f"pqe cannot write to {fmt.upper()}")
    if fmt != "csv":
        return
    for f in fields:
        if pa.types.is_nested(f.dtype):
            raise UnsupportedError(f"{what}: column {f.name} is {T.type_name(f.dtype)}, which "
                                   f"CSV cannot hold; write Parquet, or select scalar values "
                                   f"from it")


def _check_copy_target(session: SessionState, path: str, stmt: S.Copy) -> None:
    """COPY never writes over data a table reads, and replaces an existing file only when
    told to (OVERWRITE)."""
    refuse_table_data(session, filesystems.LOCAL, path, f"COPY TO '{stmt.path}'",
                      dataset=False)
    real = os.path.realpath(path)
    if os.path.isdir(real):
        raise ExecutionError(f"COPY TO '{stmt.path}': it is a directory")
    if os.path.lexists(path) and not stmt.options.get("OVERWRITE"):
        raise ExecutionError(f"COPY TO '{stmt.path}': the file exists; add OVERWRITE (COPY ... "
                             f"TO '...' (FORMAT ..., OVERWRITE)) to replace it")
    _refuse_special_file(path, stmt.path)


def _refuse_special_file(path: str, shown: str, what: str = "COPY TO") -> None:
    """A device, FIFO or socket at the target: OVERWRITE renamed a new regular file over it
    (/dev/full, a named pipe a reader waits on), destroying it. pqe writes regular files
    only, as it reads them only."""
    try:
        mode = os.stat(path).st_mode
    except OSError:  # (none there, or a dangling link: a new file)
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # (a directory: the callers' own rules)
        kind = ("a character device" if stat.S_ISCHR(mode) else "a block device"
                if stat.S_ISBLK(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a socket"
                if stat.S_ISSOCK(mode) else "not a regular file")
        raise ExecutionError(f"{what} '{shown}': it is {kind}; pqe writes regular files and "
                             f"directories only")


# ---- what registered tables read: never written over or into -----------------------------------


def _file_tables(session: SessionState) -> Iterator[tuple[str, FileTable]]:
    """(table name, provider) for every file-backed provider a table of the catalog reads:
    its own, and those under a registered DataFrame's plan (its scans, subqueries and the
    DataFrames it reads in turn), and those a view's query reads. `read_parquet(...)`
    registered as a DataFrame, or in a view's query, reads files as much as
    `register_parquet` does."""
    from ..plan.expr import SubqueryExpr
    from ..plan.logical import walk_plan
    from ..plan.tables import PlanTable

    for name, entry in session.catalog.snapshot().items():
        stack: list = [entry]
        seen: set[int] = set()
        while stack:
            item = stack.pop()
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, FileTable):
                yield name, item
            elif isinstance(item, View):
                try:
                    stack.append(session.table_plan(name))
                except Error:  # a view that no longer binds reads nothing
                    pass
            elif isinstance(item, PlanTable):
                stack.append(item.plan)
            elif isinstance(item, LogicalPlan):
                for node in walk_plan(item):
                    if isinstance(node, Scan):
                        stack.append(node.provider)
                    exprs = list(node.expressions())
                    while exprs:  # subqueries inside expressions carry plans of their own
                        e = exprs.pop()
                        if isinstance(e, SubqueryExpr):
                            stack.append(e.plan)
                        exprs.extend(e.children())


def _norm(fs_spec, path: str) -> str:
    """A path compared with others on its filesystem: local ones with symlinks and `..`
    resolved (a glob only up to its first wildcard), object store keys as written."""
    if not fs_spec.is_local:
        return path.rstrip("/") or "/"
    if filesystems.has_glob(path):
        base = filesystems.glob_base(path)
        return os.path.realpath(base) + os.path.normpath(path[len(base):]).removeprefix(".")
    return os.path.realpath(path)


def _guards(session: SessionState, fs_spec) -> list[tuple[str, str, str]]:
    """(table, kind, path) of what registered tables read on `fs_spec`'s filesystem: the
    files, directories and globs they were registered with, the files they read now, and
    the real directory of each file found inside a registered directory (a symlinked
    subdirectory: a new file there is read too)."""
    out = []
    for name, table in _file_tables(session):
        if table.fs.is_local != fs_spec.is_local:
            continue  # (object stores compared by bucket and key, whatever the scheme)
        dirs = [p for kind, p in table.sources if kind == "dir" and table.fs.is_local]
        for kind, p in table.sources:
            out.append((name, kind, _norm(table.fs, p)))
            if table.fs.is_local and kind == "dir":
                try:
                    out.extend((name, "dir", d) for d in filesystems.local_directories(p))
                except OSError:
                    pass  # (a directory gone: nothing of it to overwrite)
            elif table.fs.is_local and kind == "glob":
                out.extend((name, "glob", g) for g in filesystems.local_glob_directories(p))
        try:
            files = [table.fs.fs_path(url) for url in table.files()]
        except Exception:  # noqa: BLE001 - a table whose files vanished cannot be overwritten
            files = []
        for f in files:
            real = _norm(table.fs, f)
            out.append((name, "file", real))
            if any(_inside(f, d) for d in dirs):
                out.append((name, "dir", os.path.dirname(real)))
    return out


def _inside(path: str, directory: str) -> bool:
    return path.startswith(directory.rstrip("/") + "/")


def _glob_matches(pattern: str, path: str) -> bool:
    """Whether a glob (`*`, `?`, `[...]` within a name, `**` for any depth) matches `path`,
    as the table's listing would (hidden names included: refusing more is safe)."""
    import fnmatch
    from functools import cache

    pat = [s for s in pattern.split("/") if s]
    parts = [s for s in path.split("/") if s]

    @cache
    def match(i: int, j: int) -> bool:
        if i == len(pat):
            return j == len(parts)
        if pat[i] == "**":
            return any(match(i + 1, k) for k in range(j, len(parts) + 1))
        return j < len(parts) and fnmatch.fnmatchcase(parts[j], pat[i]) and match(i + 1, j + 1)

    return match(0, 0)


def refuse_table_data(session: SessionState, fs_spec, target: str, what: str, *,
                      dataset: bool) -> None:
    """Refuse (TableDataError) a write to `target` that would replace or add to what a
    registered table reads: a file it reads, anything inside a directory it reads, a file
    its glob matches; for a `dataset` (a directory replaced as a whole) also a directory
    holding any of those. Files a dataset write creates are checked against the globs
    again before they are put in place (`refuse_glob_matches`)."""
    from ..access import TableDataError

    real = _norm(fs_spec, target)
    for name, kind, path in _guards(session, fs_spec):
        if kind == "glob":
            base = filesystems.glob_base(path)
            if _glob_matches(path, real) or (dataset and (base == real or _inside(base, real))):
                raise TableDataError(f"{what} would add data to table '{name}' (its glob "
                                     f"matches the target)")
        elif real == path or _inside(real, path) or (dataset and _inside(path, real)):
            raise TableDataError(f"{what} would overwrite data of table '{name}'")


def refuse_glob_matches(session: SessionState, fs_spec, paths: list[str], what: str) -> None:
    """Refuse files a write is about to put in place that a registered table's glob would
    then read (`dir/*.parquet` and a new `dir/x.parquet`)."""
    from ..access import TableDataError

    globs = [(name, path) for name, kind, path in _guards(session, fs_spec) if kind == "glob"]
    for p in paths:
        real = _norm(fs_spec, p)
        for name, pattern in globs:
            if _glob_matches(pattern, real):
                raise TableDataError(f"{what} would add data to table '{name}': its glob "
                                     f"matches the file {p} this write creates")


# ---- datasets: a directory of files written in parallel -------------------------------------------


def write_dataset(session: SessionState, plan: LogicalPlan, path, fmt: str,
                  partition_by: tuple[str, ...] = (), options: dict | None = None, *,
                  overwrite: bool = False, storage_options: dict | None = None,
                  filesystem=None, run: dict | None = None, what: str = "write",
                  make_parents: bool = False) -> int:
    """Run `plan` and write its rows as a directory of `fmt` files at `path`: each partition
    by the task that computed it (kernels.write), under hive `key=value/` directories for
    `partition_by`. Atomic: written under a temporary directory beside the target and
    renamed when every task succeeded; on any failure (an error in a partition, a timeout,
    cancellation) nothing is left behind. An existing target is replaced only with
    `overwrite`. Missing parent directories of a local target are an error, or with
    `make_parents` are created (and removed again if the write fails). Returns the number of
    rows written."""
    from ..errors import UnknownColumnError, suggest
    from ..kernels import write as K

    if fmt not in ("parquet", "csv"):
        raise UnsupportedError(f"{what}: format {fmt!r} is not supported (use parquet or csv)")
    names = [f.name for f in plan.schema]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise BindError(f"{what}: the query names column '{dup[0]}' more than once; give each "
                        f"column its own name")
    keys = tuple(_result_column(k, names) for k in partition_by)
    for k in keys:
        if not isinstance(k, str) or k not in names:
            raise UnknownColumnError(f"{what}: partition column {k!r} is not a column of the "
                                     f"result{suggest(str(k), names)}; columns are: "
                                     f"{', '.join(names)}")
        t = plan.schema[names.index(k)].dtype
        if pa.types.is_nested(t):
            raise UnsupportedError(f"{what}: cannot partition by {k} of type {t}")
    if len(set(keys)) != len(keys):
        raise BindError(f"{what}: a partition column is named twice")
    if keys and len(set(keys)) == len(names):
        raise BindError(f"{what}: every column is a partition column; the files would hold "
                        f"no data")
    text = os.fspath(path)
    check_csv_columns(plan.schema, fmt, f"{what} '{text}'")
    refuse_empty_path(text, what)
    try:
        fs_spec, target = filesystems.resolve(text, storage_options, filesystem)
    except CatalogError as e:
        raise ExecutionError(f"{what} '{text}': {e}") from e
    _refuse_whole_tree(fs_spec, target, text, what)
    fs = fs_spec.arrow_fs()
    created: list[str] = []  # parent directories this write made
    refuse_table_data(session, fs_spec, target, f"{what} '{text}'", dataset=True)
    if fs_spec.is_local:
        _refuse_special_file(target, text, what)
        parent = os.path.dirname(target.rstrip(os.sep)) or "."
        if not os.path.isdir(parent) and not make_parents:
            raise ExecutionError(f"{what} '{text}': directory {parent} does not exist")
    if K.exists(fs, target) and not overwrite:
        raise ExecutionError(f"{what} '{text}': it exists; pass overwrite=True (OVERWRITE in "
                             f"COPY) to replace it")
    run = run or {}
    phys = session.physical_plan(session.optimize(plan))
    session.check_memory(phys)
    if fs_spec.is_local:
        created = _make_parents(os.path.dirname(target.rstrip(os.sep)) or ".", text, what)
    try:
        return _write_dataset(session, plan, phys, fs_spec, fs, target, text, fmt, names, keys,
                              options, overwrite, run, what)
    except BaseException:
        for d in reversed(created):
            try:
                os.rmdir(d)
            except OSError:
                break
        raise


def refuse_empty_path(text: str, what: str) -> None:
    """An empty path (or a URL with nothing after its scheme) names no file: resolved, `''`
    is the working directory, which a dataset write with overwrite then replaced whole."""
    if not text or ("://" in text and not text.split("://", 1)[1].strip("/")):
        raise ExecutionError(f"{what}: the path is empty; name the file or directory to write")


def _refuse_whole_tree(fs_spec, target: str, text: str, what: str) -> None:
    """A dataset write replaces its target as a whole (overwrite deletes the old contents):
    never the filesystem root, the home directory or the working directory or one holding
    either (`'.'`, `'sub/..'`, `'~'` resolve to those), nor a whole bucket. Checked on the
    paths as resolved and on their real paths (a symlink to one of them is refused too)."""
    if fs_spec.is_local:
        try:
            cwd = os.getcwd()
        except OSError:  # (a working directory that was deleted)
            cwd = None
        home = os.path.expanduser("~")
        # each as written and as its real path, without a trailing separator: with /home a
        # symlink to /var/home (Fedora Silverblue), the home directory's real path was
        # replaced; and never a directory holding either (`/home`, `/var`)
        kept = {os.path.normpath(d) for d in (home, os.path.realpath(home), cwd,
                                             cwd and os.path.realpath(cwd)) if d}
        for p in {os.path.normpath(target), os.path.realpath(target)}:
            inside = p.rstrip(os.sep) + os.sep
            if p == os.sep or any(k == p or k.startswith(inside) for k in kept):
                raise ExecutionError(f"{what} '{text}': the target is the filesystem root, "
                                     f"the home directory or the working directory (or holds "
                                     f"it), which a write never replaces; write to a directory "
                                     f"inside it")
    elif fs_spec.protocol is not None and not target.startswith("/") \
            and "/" not in target.strip("/"):
        # (s3fs, gcsfs, adlfs paths are bucket/key: one without a key is the whole bucket;
        # the memory filesystem's paths start with '/')
        raise ExecutionError(f"{what} '{text}': the target is a whole bucket, which a write "
                             f"never replaces; write to a prefix inside it")


def _make_parents(parent: str, text: str, what: str) -> list[str]:
    """Create `parent` and its missing ancestors; the directories created, outermost first."""
    missing = []
    d = parent
    while not os.path.isdir(d):
        missing.append(d)
        up = os.path.dirname(d)
        if up == d:
            break
        d = up
    created = []
    try:
        for d in reversed(missing):
            os.mkdir(d)
            created.append(d)
    except OSError as e:
        for d in reversed(created):
            try:
                os.rmdir(d)
            except OSError:
                break
        raise ExecutionError(f"{what} '{text}': cannot create directory {e.filename}: "
                             f"{e.strerror or e}") from e
    return created


def _write_dataset(session, plan, phys, fs_spec, fs, target, text, fmt, names, keys, options,
                   overwrite, run, what) -> int:
    from ..execution import driver
    from ..kernels import write as K
    from ..physical.plan import WriteSpec
    from ..physical.planner import plan_write

    root = K.temporary_root(target)
    spec = WriteSpec(fmt, fs_spec, root, tuple(names), tuple(f.dtype for f in plan.schema), keys,
                     tuple(sorted((options or {}).items())))
    try:
        K.prepare(fs, root)
    except (OSError, pa.ArrowException) as e:
        K.abort(fs, root, wait=0)
        raise ExecutionError(f"{what} '{text}': cannot create {root}: {e}") from e
    try:
        out = driver.execute(session.executor, plan_write(phys, spec, plan.column_ids), **run)
        rows = sum(int(pc.sum(t.column("rows")).as_py() or 0) for t in out.tables)
        written = [p for t in out.tables for p in t.column("path").to_pylist()]
        if not written and not keys:  # an empty result: one empty file keeps the schema
            empty = pa.schema([pa.field(n, t) for n, t in zip(spec.names, spec.types,
                                                              strict=True)]).empty_table()
            written = [f"{root}/part-00000.{K.EXTENSIONS[fmt]}"]
            K.write_file(fs, written[0], empty, spec)
        # the names are known only now: none may be one a registered glob would read
        refuse_glob_matches(session, fs_spec, [target + p[len(root):] for p in written],
                            f"{what} '{text}'")
        _not_cancelled(run, f"{what} '{text}'")
        K.commit(fs, root, target, overwrite)
    except BaseException as e:
        K.abort(fs, root)
        if isinstance(e, (OSError, pa.ArrowException)) and not isinstance(e, Error):
            raise ExecutionError(f"{what} '{text}': {e}") from e
        raise
    return rows


def _result_column(name, names: list[str]):
    """A partition column by its name in the result; a name that matches no column exactly
    matches one case-insensitively (an unquoted SQL identifier)."""
    if not isinstance(name, str) or name in names:
        return name
    hits = [n for n in names if n.lower() == name.lower()]
    return hits[0] if len(hits) == 1 else name
