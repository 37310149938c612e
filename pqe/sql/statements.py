"""DDL and DML statements: CREATE TABLE [AS], INSERT, UPDATE, DELETE, CREATE VIEW, DROP, SHOW
TABLES, DESCRIBE, COPY ... TO.

Tables created from SQL are in-memory Arrow tables (split into partitions when scanned).
Statements that change a table build its new contents with the engine itself (INSERT ...
SELECT, UPDATE as a projection, DELETE as a filter) and swap the catalog entry: a DataFrame
made earlier keeps reading the data it was made over.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from .. import types as T
from ..catalog import MemoryTable, TableProvider
from ..errors import BindError, CatalogError, Error, ExecutionError, UnsupportedError
from ..plan import builder as B
from ..plan.expr import ColumnRef, Literal
from .binder import Binder, Scope, View, sql_type
from .parser import PQEDialect

if TYPE_CHECKING:  # pragma: no cover
    from ..context import Context
    from ..dataframe import DataFrame

# In-memory tables are re-chunked once they hold this many chunks (many small INSERTs).
MAX_CHUNKS = 64


def _name(node: exp.Expression) -> tuple[str, bool]:
    """A table or column name as stored: unquoted names fold to lower case (PostgreSQL)."""
    ident = node.this if isinstance(node, (exp.Table, exp.Column)) else node
    if isinstance(ident, exp.Identifier):
        return (ident.name if ident.quoted else ident.name.lower()), ident.quoted
    return str(ident.name if hasattr(ident, "name") else ident).lower(), False


def _result(ctx: Context, table: pa.Table) -> DataFrame:
    from ..dataframe import DataFrame

    return DataFrame(ctx, B.scan("result", MemoryTable(table)))


def _count(ctx: Context, n: int) -> DataFrame:
    return _result(ctx, pa.table({"count": pa.array([n], pa.int64())}))


def _ok(ctx: Context) -> DataFrame:
    return _result(ctx, pa.table({"status": pa.array([], pa.string())}))


def execute(ctx: Context, stmt: exp.Expression, sql: str) -> DataFrame:
    if isinstance(stmt, exp.Create):
        return _create(ctx, stmt, sql)
    if isinstance(stmt, exp.Insert):
        return _insert(ctx, stmt, sql)
    if isinstance(stmt, exp.Drop):
        return _drop(ctx, stmt)
    if isinstance(stmt, exp.Update):
        return _update(ctx, stmt, sql)
    if isinstance(stmt, exp.Delete):
        return _delete(ctx, stmt, sql)
    if isinstance(stmt, exp.Describe):
        return _describe(ctx, stmt, sql)
    if isinstance(stmt, exp.Copy):
        return _copy(ctx, stmt, sql)
    if isinstance(stmt, exp.Command) and stmt.this.upper() == "SHOW":
        what = stmt.expression.name.strip().upper() if stmt.expression is not None else ""
        if what == "TABLES":
            return _result(ctx, pa.table({"name": pa.array(ctx.catalog.names(), pa.string())}))
        raise UnsupportedError(f"SHOW {what} is not supported")
    if isinstance(stmt, exp.Command):
        raise UnsupportedError(f"{stmt.this.upper()} statements are not supported")
    raise UnsupportedError(f"{stmt.key.upper()} statements are not supported")


# ---- CREATE ----------------------------------------------------------------------------------


def _create(ctx: Context, stmt: exp.Create, sql: str) -> DataFrame:
    kind = (stmt.args.get("kind") or "").upper()
    if kind == "INDEX":
        # indexes do not change answers; pqe scans and hashes instead
        table = stmt.this.args.get("table")
        if table is not None:
            ctx.catalog.lookup(*_name(table))
        return _ok(ctx)
    target = stmt.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = target.expressions
        target = target.this
    name, quoted = _name(target)
    exists = ctx.catalog.find(name, exact=quoted)
    if exists is not None and not stmt.args.get("replace"):
        if stmt.args.get("exists"):
            return _ok(ctx)
        raise CatalogError(f"{kind.lower()} '{name}' already exists")
    if kind == "VIEW":
        query = stmt.expression
        names = tuple(_name(c)[0] for c in columns) if columns else None
        text = query.sql(dialect=PQEDialect)
        Binder(ctx.catalog, text).bind_query(query.copy())  # fail now, not at first use
        ctx.catalog.register(name, View(text, names))
        return _ok(ctx)
    if kind != "TABLE":
        raise UnsupportedError(f"CREATE {kind} is not supported")
    if stmt.expression is not None:  # CREATE TABLE ... AS query
        table = _run_query(ctx, stmt.expression, sql)
        if columns:
            names = [_name(c)[0] for c in columns]
            if len(names) != table.num_columns:
                raise BindError(f"CREATE TABLE {name} names {len(names)} columns, query has "
                                f"{table.num_columns}")
            table = table.rename_columns(names)
        ctx.catalog.register(name, MemoryTable(table))
        return _ok(ctx)
    fields = []
    for col in columns or []:
        if not isinstance(col, exp.ColumnDef):
            continue  # table constraints (PRIMARY KEY (...), ...) are accepted, not enforced
        cname, _ = _name(col.this)
        kind_type = col.args.get("kind")
        dtype = sql_type(kind_type) if kind_type is not None else T.TEXT
        nullable = True
        for c in col.args.get("constraints") or []:
            k = c.args.get("kind")
            if isinstance(k, exp.NotNullColumnConstraint) and not k.args.get("allow_null"):
                nullable = False
            if isinstance(k, exp.PrimaryKeyColumnConstraint):
                nullable = False
        fields.append(pa.field(cname, dtype, nullable))
    if not fields:
        raise BindError(f"CREATE TABLE {name} needs at least one column")
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        raise BindError(f"CREATE TABLE {name} repeats a column name")
    ctx.catalog.register(name, MemoryTable(pa.schema(fields).empty_table()))
    return _ok(ctx)


def _run_query(ctx: Context, query: exp.Expression, sql: str) -> pa.Table:
    from ..dataframe import DataFrame

    return DataFrame(ctx, ctx._binder(sql).bind_query(query)).to_arrow()


def _memory_table(ctx: Context, target: exp.Expression) -> tuple[str, MemoryTable]:
    name, quoted = _name(target)
    real, entry = ctx.catalog.lookup(name, exact=quoted)
    if not isinstance(entry, MemoryTable):
        what = "a view" if isinstance(entry, View) else f"a {getattr(entry, 'kind', 'file')} table"
        raise UnsupportedError(f"'{real}' is {what}; only tables created in SQL can be changed")
    return real, entry


def _store(ctx: Context, name: str, table: pa.Table) -> None:
    if table.column(0).num_chunks > MAX_CHUNKS:
        table = table.combine_chunks()
    ctx.catalog.register(name, MemoryTable(table))


def _conform(table: pa.Table, schema: pa.Schema, what: str) -> pa.Table:
    """Cast rows to a table's column types, enforcing NOT NULL."""
    cols = []
    for f, col in zip(schema, table.columns, strict=True):
        if col.type != f.type:
            try:
                col = col.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise ExecutionError(f"{what}: cannot store {col.type} in column {f.name} "
                                     f"({T.type_name(f.type)}): {str(e).splitlines()[0]}") from e
        if not f.nullable and col.null_count:
            raise ExecutionError(f"{what}: NULL value in column {f.name} violates its NOT NULL constraint")
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema)


# ---- INSERT / UPDATE / DELETE ----------------------------------------------------------------


def _insert(ctx: Context, stmt: exp.Insert, sql: str) -> DataFrame:
    target = stmt.this
    column_nodes = None
    if isinstance(target, exp.Schema):
        column_nodes = target.expressions
        target = target.this
    name, entry = _memory_table(ctx, target)
    schema = entry.table.schema
    if column_nodes:
        cols = [_name(c)[0] for c in column_nodes]
        lookup = {f.name.lower(): f.name for f in schema}
        resolved = []
        for c in cols:
            real = c if c in schema.names else lookup.get(c.lower())
            if real is None:
                raise BindError(f"table {name} has no column '{c}'")
            resolved.append(real)
        if len(set(resolved)) != len(resolved):
            raise BindError(f"INSERT INTO {name} names a column twice")
        cols = resolved
    else:
        cols = list(schema.names)
    source = stmt.expression
    if isinstance(source, exp.Values) and _all_constant(source):
        rows = _constant_rows(ctx, source, [schema.field(c).type for c in cols])
    else:
        rows = _run_query(ctx, source, sql)
    if rows.num_columns != len(cols):
        raise BindError(f"INSERT INTO {name} has {len(cols)} target columns but "
                        f"{rows.num_columns} values per row")
    arrays = []
    for f in schema:
        if f.name in cols:
            arrays.append(rows.column(cols.index(f.name)))
        else:
            arrays.append(pa.nulls(rows.num_rows, f.type))
    new = _conform(pa.Table.from_arrays(arrays, names=schema.names), schema, f"INSERT INTO {name}")
    _store(ctx, name, pa.concat_tables([entry.table, new]))
    return _count(ctx, new.num_rows)


def _all_constant(values: exp.Values) -> bool:
    for tup in values.expressions:
        for e in (tup.expressions if isinstance(tup, exp.Tuple) else [tup]):
            if any(isinstance(n, (exp.Column, exp.Subquery, exp.Select)) for n in e.walk()):
                return False
    return True


def _constant_rows(ctx: Context, values: exp.Values, types: list[pa.DataType]) -> pa.Table:
    """VALUES of constants straight to Arrow arrays (no query plan per INSERT)."""
    from ..kernels.expressions import evaluate_constant

    binder = Binder(ctx.catalog)
    columns: list[list] = []
    for tup in values.expressions:
        items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
        if not columns:
            columns = [[] for _ in items]
        if len(items) != len(columns):
            raise BindError("VALUES rows have different numbers of columns")
        for j, node in enumerate(items):
            e = binder.expr(node, Scope())
            want = types[j] if j < len(types) else e.dtype
            e = B.cast(e, want) if not T.is_null(want) else e
            if not isinstance(e, Literal):
                try:
                    e = evaluate_constant(e)
                except pa.ArrowException as err:
                    raise ExecutionError(f"INSERT: {node.sql()} is not a valid "
                                         f"{T.type_name(want)}: {str(err).splitlines()[0]}") from err
            columns[j].append(e.value)
    arrays = []
    for j, vals in enumerate(columns):
        want = types[j] if j < len(types) else None
        try:
            arrays.append(pa.array(vals, type=want))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as e:
            raise ExecutionError(f"INSERT: value does not fit {T.type_name(want)}: {e}") from e
    return pa.Table.from_arrays(arrays, names=[f"c{j}" for j in range(len(arrays))])


def _rewrite_table(ctx: Context, name: str, entry: MemoryTable, where: exp.Expression | None,
                   sets: dict[str, exp.Expression] | None, sql: str) -> tuple[pa.Table, int]:
    """New contents of `name`: rows matching `where` updated by `sets`, or deleted."""
    from ..dataframe import DataFrame

    binder = Binder(ctx.catalog, sql)
    scan = B.scan(name, entry)
    scope = Scope()
    scope.add(name, [(f.name.lower(), f) for f in scan.schema])
    binder.keys[name] = {f.name.lower(): f.name for f in scan.schema}
    cond = binder.expr(_qualified(where, name), scope, clause="WHERE") if where is not None else None
    if cond is not None:
        cond = B.call("is_true", B.cast(cond, T.BOOLEAN))
    if sets is None:  # DELETE: keep rows where the condition is not TRUE
        keep = B.not_(cond) if cond is not None else Literal(False, T.BOOLEAN)
        plan = B.filter(scan, keep)
        table = DataFrame(ctx, plan).to_arrow()
        return table, entry.table.num_rows - table.num_rows
    items = []
    for f in scan.schema:
        ref = ColumnRef(f)
        new = sets.get(f.name)
        if new is None:
            items.append((ref, f.name))
            continue
        value = B.cast(binder.expr(_qualified(new, name), scope, clause="SET"), f.dtype)
        items.append((B.case([(cond, value)], ref) if cond is not None else value, f.name))
    table = DataFrame(ctx, B.project(scan, items)).to_arrow()
    changed = entry.table.num_rows if cond is None else DataFrame(
        ctx, B.filter(scan, cond)).to_arrow().num_rows
    return table, changed


def _qualified(node: exp.Expression, table: str) -> exp.Expression:
    node = node.copy()
    for col in node.find_all(exp.Column):
        if not col.table:
            col.set("this", exp.to_identifier(_name(col)[0]))
            col.set("table", exp.to_identifier(table))
    return node


def _update(ctx: Context, stmt: exp.Update, sql: str) -> DataFrame:
    name, entry = _memory_table(ctx, stmt.this)
    sets: dict[str, exp.Expression] = {}
    lookup = {f.name.lower(): f.name for f in entry.table.schema}
    for eq in stmt.expressions:
        col, _ = _name(eq.this)
        real = lookup.get(col.lower())
        if real is None:
            raise BindError(f"table {name} has no column '{col}'")
        sets[real] = eq.expression
    where = stmt.args.get("where")
    table, n = _rewrite_table(ctx, name, entry, where.this if where else None, sets, sql)
    _store(ctx, name, _conform(table, entry.table.schema, f"UPDATE {name}"))
    return _count(ctx, n)


def _delete(ctx: Context, stmt: exp.Delete, sql: str) -> DataFrame:
    name, entry = _memory_table(ctx, stmt.this)
    where = stmt.args.get("where")
    table, n = _rewrite_table(ctx, name, entry, where.this if where else None, None, sql)
    _store(ctx, name, _conform(table, entry.table.schema, f"DELETE FROM {name}"))
    return _count(ctx, n)


# ---- DROP / DESCRIBE / COPY --------------------------------------------------------------------


def _drop(ctx: Context, stmt: exp.Drop) -> DataFrame:
    kind = (stmt.args.get("kind") or "TABLE").upper()
    if kind not in ("TABLE", "VIEW"):
        raise UnsupportedError(f"DROP {kind} is not supported")
    for t in stmt.args.get("tables") or [stmt.this]:
        name, quoted = _name(t)
        key = ctx.catalog.find(name, exact=quoted)
        if key is None:
            if stmt.args.get("exists"):
                continue
            raise CatalogError(f"{kind.lower()} '{name}' does not exist")
        entry = ctx.catalog.snapshot()[key]
        is_view = isinstance(entry, View)
        if is_view != (kind == "VIEW"):
            raise CatalogError(f"'{key}' is a {'view' if is_view else 'table'}: use DROP "
                               f"{'VIEW' if is_view else 'TABLE'}")
        ctx.catalog.drop(key, exact=True)
    return _ok(ctx)


def _describe(ctx: Context, stmt: exp.Describe, sql: str) -> DataFrame:
    target = stmt.this
    if isinstance(target, exp.Table) and isinstance(target.this, exp.Identifier):
        name, quoted = _name(target)
        real, entry = ctx.catalog.lookup(name, exact=quoted)
        if isinstance(entry, TableProvider):
            fields = [(f.name, f.type, f.nullable) for f in entry.schema]
        else:
            plan = Binder(ctx.catalog, sql).bind_query(exp.select("*").from_(exp.to_table(real)))
            fields = [(f.name, f.dtype, f.nullable) for f in plan.schema]
    else:
        plan = Binder(ctx.catalog, sql).bind_query(target)
        fields = [(f.name, f.dtype, f.nullable) for f in plan.schema]
    return _result(ctx, pa.table({
        "column_name": pa.array([f[0] for f in fields], pa.string()),
        "column_type": pa.array([T.type_name(f[1]) for f in fields], pa.string()),
        "null": pa.array(["YES" if f[2] else "NO" for f in fields], pa.string()),
    }))


def _copy(ctx: Context, stmt: exp.Copy, sql: str) -> DataFrame:
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    if stmt.args.get("kind"):  # COPY ... FROM
        raise UnsupportedError("COPY ... FROM is not supported; use read_csv() or read_parquet()")
    files = stmt.args.get("files") or []
    if len(files) != 1 or not isinstance(files[0], exp.Literal):
        raise BindError("COPY ... TO needs one file path")
    path = files[0].name
    params = {}
    for p in stmt.args.get("params") or []:
        key = p.this.name.upper()
        val = p.expression
        params[key] = val.name if val is not None else True
    fmt = str(params.get("FORMAT") or os.path.splitext(path)[1].lstrip(".") or "csv").lower()
    source = stmt.this
    if isinstance(source, exp.Subquery):
        source = source.this
    elif isinstance(source, exp.Table):
        source = exp.select("*").from_(source)
    table = _run_query(ctx, source, sql)
    try:
        if fmt == "parquet":
            pq.write_table(table, path)
        elif fmt == "csv":
            header = str(params.get("HEADER", True)).lower() not in ("false", "0", "off")
            delim = str(params.get("DELIMITER", params.get("DELIM", ",")))
            pcsv.write_csv(table, path, pcsv.WriteOptions(include_header=header, delimiter=delim))
        else:
            raise UnsupportedError(f"COPY format '{fmt}' is not supported (use parquet or csv)")
    except OSError as e:
        raise ExecutionError(f"COPY TO '{path}': {e}") from e
    return _count(ctx, table.num_rows)


__all__ = ["execute", "Error"]
