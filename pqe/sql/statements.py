"""Statements (DDL, DML, utility) -> typed `pqe.plan.statements` objects.

The front end only binds: names are resolved against the catalog snapshot, expressions are
typed, and queries become logical plans. Nothing here runs a query, writes a file or changes
the catalog; `pqe.session` executes the statements this module returns.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pyarrow as pa
from sqlglot import exp

from .. import types as T
from ..catalog import CatalogSnapshot, MemoryTable, TableProvider
from ..errors import (
    AmbiguousColumnError,
    AggregateMisuseError,
    BindError,
    CatalogError,
    Error,
    TypeMismatchError,
    UnknownColumnError,
    UnsupportedError,
    suggest,
)
from ..kernels.layout import holds_interval
from ..plan import builder as B
from ..plan import statements as S
from ..plan.expr import ColumnRef, Literal
from ..plan.logical import LogicalPlan
from ..plan.udf import AggregateUDF
from .binder import Binder, Scope, View, refuse_unknown_args, sql_type, text_length
from .binder.expressions import STATEMENT_NOW, statement_now
from .binder.grouping import USER_AGGREGATES
from .binder.scope import at, positioned
from .binder.supported import sql_text
from .parser import (PARAMETER, ParsedStatement, PQEDialect, node_position, parse,
                     written_query_text)
from .walk import find_all, walk as walk_tree


def name_of(node: exp.Expression) -> tuple[str, bool]:
    """A table or column name as stored: unquoted names fold to lower case (PostgreSQL)."""
    ident = node.this if isinstance(node, (exp.Table, exp.Column)) else node
    if isinstance(ident, exp.Identifier):
        return (ident.name if ident.quoted else ident.name.lower()), ident.quoted
    return str(ident.name if hasattr(ident, "name") else ident).lower(), False


def _set_args(node: exp.Expression) -> dict:
    """The arguments sqlglot filled in (None, False and empty lists mean 'not written')."""
    return {k: v for k, v in node.args.items() if v not in (None, False, [], "")}


_FIRST_WORDS = ((exp.Select, "SELECT"), (exp.Insert, "INSERT"), (exp.Update, "UPDATE"),
                (exp.Delete, "DELETE"), (exp.Copy, "COPY"), (exp.TruncateTable, "TRUNCATE"))


def statement_word(ast: exp.Expression) -> str:
    """What the user wrote first, for refusals that name it ("SUMMARIZE statements ...")."""
    if isinstance(ast, exp.Command):
        word = str(ast.this).upper()
        if word in ("CREATE", "DROP", "ALTER") and ast.expression is not None:
            # name the object kind too: CREATE MACRO, CREATE OR REPLACE FUNCTION, DROP SECRET
            rest = str(ast.expression.name if isinstance(ast.expression, exp.Literal)
                       else ast.expression).split()
            kind = []
            for w in rest:
                kind.append(w.upper())
                if w.upper() not in ("OR", "REPLACE", "TEMP", "TEMPORARY", "IF", "NOT", "EXISTS"):
                    break
            word = " ".join([word, *kind])
        return word
    for kind, word in _FIRST_WORDS:
        if type(ast) is kind:
            return word  # (the whole statement as SQL, to split off its first word, took
            # 0.6 s for an INSERT of 5,000 rows)
    node = ast
    while True:
        if isinstance(node, exp.Identifier):
            return node.name.upper()
        if isinstance(node, (exp.Alias, exp.Column, exp.Paren)) and node.this is not None:
            node = node.this
            continue
        # the statement's first keyword as SQL spells it (BEGIN, not TRANSACTION)
        words = node.sql(dialect=PQEDialect).split(None, 1)
        return words[0].upper() if words else node.key.upper()


def bind_statement(parsed: ParsedStatement, catalog: CatalogSnapshot, sql: str) -> S.Statement:
    names = frozenset(n for n, f in catalog.functions().items() if isinstance(f, AggregateUDF))
    token = USER_AGGREGATES.set(names)
    now = STATEMENT_NOW.set(statement_now())
    try:
        stmt = _bind(parsed.ast, catalog, sql)
    finally:
        STATEMENT_NOW.reset(now)
        USER_AGGREGATES.reset(token)
    if parsed.explain is not None:
        return S.Explain(stmt, parsed.explain == "analyze")
    return stmt


def _bind(ast: exp.Expression, catalog: CatalogSnapshot, sql: str) -> S.Statement:
    if isinstance(ast, (exp.Query, exp.Values)):
        return S.Query(Binder(catalog, sql).bind_query(ast))
    if isinstance(ast, exp.Create):
        return _create(ast, catalog, sql)
    if isinstance(ast, exp.Insert):
        return _insert(ast, catalog, sql)
    if isinstance(ast, exp.Update):
        return _update(ast, catalog, sql)
    if isinstance(ast, exp.Delete):
        return _delete(ast, catalog, sql)
    if isinstance(ast, exp.TruncateTable):
        return _truncate(ast, catalog, sql)
    if isinstance(ast, exp.Drop):
        return _drop(ast)
    if isinstance(ast, exp.Describe):
        return _describe(ast, catalog, sql)
    if isinstance(ast, exp.Copy):
        return _copy(ast, catalog, sql)
    if isinstance(ast, exp.Summarize):
        from .summarize import summarize

        return summarize(ast, catalog, sql)
    if isinstance(ast, exp.Command) and ast.this.upper() == "SHOW":
        what = ast.expression.name.strip() if ast.expression is not None else ""
        if what.upper() == "TABLES":
            return S.ShowTables()
        # (the user's text as written: `SHOW TABLES LIKE 't%'` echoed 'T%')
        raise UnsupportedError(f"SHOW {what} is not supported")
    word = statement_word(ast)
    hint = ": register Python functions with Context.register_udf / register_udaf" \
        if word.startswith("CREATE") and word.split()[-1] in _FUNCTION_KINDS else ""
    raise UnsupportedError(f"{word} statements are not supported{hint}")


_FUNCTION_KINDS = ("FUNCTION", "MACRO", "AGGREGATE", "PROCEDURE")


# ---- CREATE ----------------------------------------------------------------------------------


def _create(stmt: exp.Create, catalog: CatalogSnapshot, sql: str) -> S.Statement:
    kind = (stmt.args.get("kind") or "").upper()
    if kind in _FUNCTION_KINDS:
        raise UnsupportedError(f"CREATE {kind} statements are not supported: register Python "
                               f"functions with Context.register_udf / register_udaf")
    if kind == "INDEX":
        # an index never changes an answer; pqe scans and hashes instead
        refuse_unknown_args(stmt, {"kind", "this", "unique", "exists"}, "CREATE INDEX")
        if stmt.args.get("unique"):
            # a UNIQUE index is a constraint: accepted and not enforced, duplicates would
            # go in afterwards (DuckDB enforces it)
            raise UnsupportedError("CREATE UNIQUE INDEX is not supported: declare PRIMARY KEY "
                                   "or UNIQUE in CREATE TABLE")
        index = stmt.this
        table = index.args.get("table") if isinstance(index, exp.Index) else None
        if table is None or not isinstance(index.this, exp.Identifier):
            raise UnsupportedError("CREATE INDEX without a name or a table is not supported")
        # (`ON t USING ...`, INCLUDE, WHERE, a qualified index name read as `i ON t(a)`:
        # each refused by name, never dropped)
        refuse_unknown_args(index, {"this", "table", "params"}, "CREATE INDEX", sql)
        params = index.args.get("params")
        if params is not None:
            # (its columns and method: an index changes no answer; INCLUDE, WHERE, ... are
            # refused)
            refuse_unknown_args(params, {"columns", "using"}, "CREATE INDEX", sql)
        if not isinstance(table, exp.Table) or _qualified(table):
            # `ON nope.t (a)` indexed t (the schema was dropped), as qualified names are
            # refused everywhere else
            raise _qualified_refusal(f"CREATE INDEX ON {table.sql(dialect=PQEDialect)}", table,
                                     sql)
        name, quoted = name_of(table)
        real, entry = catalog.lookup(name, exact=quoted)
        # its columns must be the table's (`ON a(nosuchcol)` was accepted)
        have = {f.name for f in getattr(entry, "schema", ())}
        low = {n.lower(): n for n in have}
        for col in (find_all(params, exp.Column) if params is not None else ()):
            name = col.name
            if col.table:
                raise _qualified_refusal(f"CREATE INDEX column {col.sql(dialect=PQEDialect)}",
                                         col, sql)
            if name not in have and (col.this.quoted or name.lower() not in low):
                pos = node_position(sql, col)
                raise positioned(UnknownColumnError(
                    f"CREATE INDEX: table {real} has no column '{name}'{at(pos)}"
                    f"{suggest(name, have)}"), pos)
        return S.NoOp("CREATE INDEX", name_of(index)[0], real, bool(stmt.args.get("exists")))
    if kind and kind not in ("TABLE", "VIEW"):
        # CREATE FUNCTION / MACRO / SCHEMA / SEQUENCE / TYPE ...: UDFs are registered from
        # Python (Context.register_udf), never created by SQL text
        raise UnsupportedError(f"CREATE {kind} statements are not supported")
    properties = stmt.args.get("properties")
    temporary = False
    if properties is not None:
        for prop in properties.expressions:
            if isinstance(prop, exp.TemporaryProperty):
                temporary = True  # every table pqe creates lives as long as its Context
                continue
            raise UnsupportedError(f"CREATE {kind}: {sql_text(prop)} is not supported")
    del temporary
    target = stmt.this
    columns = None
    if isinstance(target, exp.Schema):
        columns = target.expressions
        target = target.this
    if not isinstance(target, exp.Table) or target.args.get("db") or target.args.get("catalog"):
        raise UnsupportedError(f"CREATE {kind} {target.sql(dialect=PQEDialect)}: qualified "
                               f"names are not supported")
    name, quoted = name_of(target)
    replace, if_not_exists = bool(stmt.args.get("replace")), bool(stmt.args.get("exists"))
    if replace and if_not_exists:
        raise BindError(f"CREATE OR REPLACE {kind} cannot also say IF NOT EXISTS")
    _refuse_other_kind(catalog, name, quoted, kind, replace, if_not_exists)
    if kind == "VIEW":
        refuse_unknown_args(stmt, {"kind", "this", "expression", "replace", "exists",
                                   "properties"}, "CREATE VIEW")
        query = stmt.expression
        for c in columns or ():
            # a view's column list names columns; a type or constraint there was dropped
            # (`CREATE VIEW v (x INTEGER) AS SELECT '007'` kept x VARCHAR; COLLATE, DEFAULT,
            # NOT NULL likewise), a syntax error in PostgreSQL and DuckDB
            if isinstance(c, exp.ColumnDef) and (c.args.get("kind") is not None
                                                 or c.args.get("constraints")):
                raise UnsupportedError(f"CREATE VIEW {name}: a type or constraint in the "
                                       f"column list ({c.sql(dialect=PQEDialect)[:40]}) is not "
                                       f"supported; cast in the query instead")
        names = tuple(name_of(c)[0] for c in columns) if columns else None
        # shown as written (sqlglot's text of it is not always the same query); with
        # parameters, as sqlglot writes it with their values
        text = None
        if not any(n.meta.get(PARAMETER) for n in walk_tree(query)):
            text = written_query_text(sql, target.this)
        if text is None:
            text = query.sql(dialect=PQEDialect)
        # fail now, not at first use; a view that reads itself (CREATE OR REPLACE VIEW v AS
        # SELECT * FROM v) is refused here, as is any cycle through other views
        plan = Binder(catalog, sql, view_path=(name,)).bind_query(query.copy())
        if names is not None and len(names) != len(plan.schema):
            raise BindError(f"view {name} names {len(names)} columns, its query has "
                            f"{len(plan.schema)}")
        return S.CreateView(name, text, names, replace, if_not_exists, plan, quoted,
                            query.copy(), sql)
    if kind != "TABLE":
        raise UnsupportedError(f"CREATE {kind or stmt.sql(dialect=PQEDialect)[:40]} is not supported")
    refuse_unknown_args(stmt, {"kind", "this", "expression", "replace", "exists",
                               "properties"}, "CREATE TABLE")
    if stmt.expression is not None:  # CREATE TABLE ... AS query
        source = Binder(catalog, sql).bind_query(stmt.expression)
        names = None
        if columns:
            # a type or constraint on a column of CREATE TABLE ... AS would be ignored: the
            # query's types are the table's
            if not all(isinstance(c, exp.Identifier) or (isinstance(c, exp.ColumnDef)
                       and c.args.get("kind") is None and not c.args.get("constraints"))
                       for c in columns):
                raise UnsupportedError("CREATE TABLE ... AS names its columns only: types and "
                                       "constraints come from the query (CAST in it, or CREATE "
                                       "TABLE then INSERT ... SELECT)")
            names = tuple(name_of(c.this if isinstance(c, exp.ColumnDef) else c)[0] for c in columns)
            if len(names) != len(source.schema):
                raise BindError(f"CREATE TABLE {name} names {len(names)} columns, query has "
                                f"{len(source.schema)}")
        return S.CreateTable(name, None, source, names, replace, if_not_exists, quoted=quoted)
    fields: list[pa.Field] = []
    primary: tuple[str, ...] = ()
    unique: list[tuple[str, ...]] = []
    for col in columns or []:
        if isinstance(col, exp.ColumnDef):
            field, pk, uq = _column_def(col, name)
            fields.append(field)
            if pk:
                if primary:
                    raise BindError(f"table {name} has more than one PRIMARY KEY")
                primary = (field.name,)
            if uq:
                unique.append((field.name,))
        elif isinstance(col, exp.PrimaryKey):
            _refuse_key_options(col, {"expressions"}, f"CREATE TABLE {name} PRIMARY KEY")
            if primary:
                raise BindError(f"table {name} has more than one PRIMARY KEY")
            primary = tuple(_key_column(c, name) for c in col.expressions)
        elif isinstance(col, exp.UniqueColumnConstraint) or (
                isinstance(col, exp.Constraint) is False and type(col).__name__ == "Unique"):
            # (NULLS NOT DISTINCT, ON CONFLICT REPLACE, NOT ENFORCED: accepted and ignored,
            # a second NULL went in where PostgreSQL refuses it)
            _refuse_key_options(col, {"this", "expressions"}, f"CREATE TABLE {name} UNIQUE")
            unique.append(tuple(_key_column(c, name) for c in _unique_columns(col)))
        else:
            raise UnsupportedError(f"CREATE TABLE {name}: table constraint "
                                   f"{col.sql(dialect=PQEDialect)[:60]} is not supported")
    if not fields:
        raise BindError(f"CREATE TABLE {name} needs at least one column")
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        raise BindError(f"CREATE TABLE {name} repeats a column name")
    for key in [primary, *unique]:
        for c in key:
            if c not in names:
                raise BindError(f"CREATE TABLE {name}: key column '{c}' is not a column of the table")
            t = fields[names.index(c)].type
            if holds_interval(t):
                # (keys are checked by their stored parts: '1 day' and '24 hours', one
                # length and equal in every comparison, were two keys; DuckDB refuses too)
                raise UnsupportedError(f"CREATE TABLE {name}: a PRIMARY KEY or UNIQUE column "
                                       f"of type {T.type_name(t)} ({c}) is not supported")
    if primary:
        fields = [f.with_nullable(False) if f.name in primary else f for f in fields]
    unique_keys = tuple(dict.fromkeys(k for k in unique if k != primary))
    return S.CreateTable(name, pa.schema(fields), None, None, replace, if_not_exists, primary,
                         unique_keys, quoted)


def _refuse_other_kind(catalog: CatalogSnapshot, name: str, quoted: bool, kind: str,
                       replace: bool, if_not_exists: bool) -> None:
    """CREATE VIEW v1 where v1 is a table (or CREATE TABLE over a view) names what is there:
    it said "view 'v1' already exists"."""
    if replace or if_not_exists:
        return  # (the session says what OR REPLACE cannot replace)
    key = catalog.find(name, exact=quoted)
    if key is None:
        return
    _, entry = catalog.lookup(key, exact=True)
    is_view = isinstance(entry, View)
    if is_view == (kind == "VIEW"):
        return
    there = "a view" if is_view else "a table"
    raise CatalogError(f"CREATE {kind} {name}: {there} named '{key}' already exists")


def _qualified(table: exp.Table) -> bool:
    return bool(table.args.get("db") or table.args.get("catalog"))


def _qualified_refusal(what: str, node: exp.Expression, sql: str) -> UnsupportedError:
    """Refused, at the name's first part (the qualifier)."""
    parts = [p for p in (node_position(sql, i) for i in find_all(node, exp.Identifier)) if p]
    pos = min(parts) if parts else node_position(sql, node)
    return positioned(UnsupportedError(f"{what}: qualified names are not supported"
                                       f"{at(pos)}"), pos)


def _unique_columns(node: exp.Expression) -> list[exp.Expression]:
    this = node.this
    if isinstance(this, exp.Schema):
        return list(this.expressions)
    return list(node.expressions) or ([this] if this is not None else [])


def _key_column(node: exp.Expression, table: str) -> str:
    if isinstance(node, exp.Ordered):
        node = node.this
    if isinstance(node, (exp.Identifier, exp.Column)):
        return name_of(node)[0]
    # UNIQUE (a(10)): SQLite's prefix lengths do not change which rows are equal
    if isinstance(node, (exp.Anonymous,)) and node.expressions:
        return node.name.lower()
    raise UnsupportedError(f"CREATE TABLE {table}: key {node.sql(dialect=PQEDialect)} is not supported")


def _refuse_key_options(node: exp.Expression, consumed: set[str], what: str) -> None:
    """A table's PRIMARY KEY / UNIQUE (...) with an option pqe does not implement refused
    (sqlglot leaves an empty IndexParameters and `nulls`/`index_type` False when unset)."""
    args = dict(node.args)
    include = args.get("include")
    if isinstance(include, exp.IndexParameters) and not any(
            v for k, v in include.args.items() if k != "with_storage"):
        args.pop("include")
    for key in ("nulls", "index_type"):
        if args.get(key) is False:
            args.pop(key)
    refuse_unknown_args(node.__class__(**args), consumed, what)


def _column_def(col: exp.ColumnDef, table: str) -> tuple[pa.Field, bool, bool]:
    cname, _ = name_of(col.this)
    refuse_unknown_args(col, {"this", "kind", "constraints"}, f"CREATE TABLE {table} column {cname}")
    kind_type = col.args.get("kind")
    dtype = sql_type(kind_type) if kind_type is not None else T.TEXT
    length = text_length(kind_type) if kind_type is not None else None
    nullable, pk, uq = True, False, False
    for c in col.args.get("constraints") or []:
        k = c.args.get("kind")
        if isinstance(k, exp.NotNullColumnConstraint):
            if k.args.get("allow_null"):
                continue  # NULL: the default
            nullable = False
        elif isinstance(k, exp.PrimaryKeyColumnConstraint):
            refuse_unknown_args(k, set(), f"PRIMARY KEY of column {cname}")
            nullable, pk = False, True
        elif isinstance(k, exp.UniqueColumnConstraint):
            refuse_unknown_args(k, set(), f"UNIQUE of column {cname}")
            uq = True
        else:
            raise UnsupportedError(f"CREATE TABLE {table}: column constraint "
                                   f"{c.sql(dialect=PQEDialect)[:60]} on {cname} is not supported")
    meta = {T.MAX_LENGTH: str(length).encode()} if length is not None else None
    return pa.field(cname, dtype, nullable, metadata=meta), pk, uq


# ---- INSERT / UPDATE / DELETE ----------------------------------------------------------------


def _memory_table(catalog: CatalogSnapshot, target: exp.Expression, what: str,
                  alias_ok: bool = False) -> tuple[str, MemoryTable]:
    if not isinstance(target, exp.Table) or not isinstance(target.this, exp.Identifier):
        raise UnsupportedError(f"{what} {target.sql(dialect=PQEDialect)[:60]} is not supported")
    if target.args.get("db") or target.args.get("catalog"):
        raise UnsupportedError(f"{what}: qualified table names are not supported")
    alias = target.args.get("alias")
    if alias is not None and (not alias_ok or alias.args.get("columns")):
        raise UnsupportedError(f"{what}: a table alias on the target is not supported")
    name, quoted = name_of(target)
    real, entry = catalog.lookup(name, exact=quoted)
    if not isinstance(entry, MemoryTable) or not catalog.made_by_sql(real):
        if isinstance(entry, View):
            kind = "a view"
        elif isinstance(entry, MemoryTable):
            kind = "a table the application registered"
        else:
            kind = f"a {getattr(entry, 'kind', 'file')} table"
        raise UnsupportedError(f"'{real}' is {kind}; only tables created in SQL can be changed")
    if not len(entry.schema):
        raise UnsupportedError(f"table {real} has no columns; pqe cannot change a table without "
                               f"columns")
    return real, entry


def _insert(stmt: exp.Insert, catalog: CatalogSnapshot, sql: str) -> S.Insert:
    refuse_unknown_args(stmt, {"this", "expression", "alternative", "conflict", "by_name",
                               "with_"}, "INSERT")
    target = stmt.this
    column_nodes = None
    if isinstance(target, exp.Schema):
        column_nodes = target.expressions
        target = target.this
    name, entry = _memory_table(catalog, target, "INSERT INTO")
    schema = entry.schema
    with_ = stmt.args.get("with_")
    source_ast = stmt.expression
    if with_ is not None and isinstance(source_ast, exp.Query):
        source_ast = _insert_source_with(source_ast, with_)
    if stmt.args.get("by_name"):
        column_nodes = _by_name(source_ast, catalog, sql, name, column_nodes)
    if column_nodes:
        cols = [_column_named(schema.names, c, name, sql, f"INSERT INTO {name}")
                for c in column_nodes]
        if len(set(cols)) != len(cols):
            raise BindError(f"INSERT INTO {name} names a column twice")
    else:
        cols = list(schema.names)
    types = [schema.field(c).type for c in cols]
    if source_ast is None:
        raise UnsupportedError(f"INSERT INTO {name} without VALUES or a query is not supported")
    binder = Binder(catalog, sql)
    if isinstance(source_ast, exp.Values) and not _has_query(source_ast) and with_ is None:
        source = _constant_values(binder, source_ast, types, name, cols)
    else:
        if isinstance(source_ast, exp.Values):
            _cast_rows_to_columns(source_ast, types, binder, name, cols)
            if with_ is not None:
                source_ast = _insert_source_with(source_ast, with_)
        source = binder.bind_query(source_ast)
    if len(source.schema) != len(cols):
        raise BindError(f"INSERT INTO {name} has {len(cols)} target columns but "
                        f"{len(source.schema)} values per row")
    items = []
    for f, want, c in zip(source.schema, types, cols, strict=True):
        check_storable(f"INSERT INTO {name}", f.dtype, want, c)
        items.append((B.cast(ColumnRef(f), want), c))
    source = B.project(source, items)
    conflict = _on_conflict(stmt, entry, name, cols, binder)
    return S.Insert(name, entry, tuple(cols), source, conflict)


def _insert_source_with(source: exp.Expression, with_: exp.With) -> exp.Expression:
    """`WITH w AS (...) INSERT INTO t <source>`: the WITH queries are visible in the source
    (PostgreSQL, DuckDB). Put on the source query itself, or, when it has a WITH of its own
    (whose names shadow the outer ones) or is VALUES, on `SELECT * FROM <source>`, which
    keeps its columns in order."""
    if isinstance(source, (exp.Select, exp.SetOperation)) and source.args.get("with_") is None:
        source = source.copy()
        source.set("with_", with_.copy())
        return source
    alias = exp.TableAlias(this=exp.to_identifier("__pqe_insert_source"))
    modifiers = {}
    if isinstance(source, exp.Values):
        inner = source.copy()
        inner.set("alias", alias)
    elif isinstance(source, exp.Subquery):
        # `(SELECT ...) ORDER BY ... LIMIT n`: the parenthesized query's own ORDER BY, LIMIT
        # and OFFSET are the wrapper's (they were dropped: every row was inserted)
        inner = exp.Subquery(this=source.this.copy(), alias=alias)
        modifiers = {k: v.copy() if isinstance(v, exp.Expression) else v
                     for k, v in source.args.items()
                     if k not in ("this", "alias") and v not in (None, False, [], "")}
        unknown = set(modifiers) - {"order", "limit", "offset"}
        if unknown:
            raise UnsupportedError(f"INSERT after WITH: {', '.join(sorted(unknown)).upper()} "
                                   f"on a parenthesized query is not supported")
    else:
        inner = exp.Subquery(this=source.copy(), alias=alias)
    wrapped = exp.select("*").from_(inner)
    for k, v in modifiers.items():
        wrapped.set(k, v)
    wrapped.set("with_", with_.copy())
    return wrapped


def _by_name(source_ast: exp.Expression | None, catalog: CatalogSnapshot, sql: str, name: str,
             column_nodes: list | None) -> list[exp.Expression]:
    """INSERT INTO t BY NAME query (DuckDB): the query's column names are the column list
    (matched as unquoted names are: exactly, else regardless of case); the table's other
    columns get NULL (pqe has no DEFAULT)."""
    if column_nodes:
        raise BindError(f"INSERT INTO {name} BY NAME takes no column list")
    if not isinstance(source_ast, exp.Query):
        raise BindError(f"INSERT INTO {name} BY NAME takes a query (SELECT ...), not VALUES")
    names = [f.name for f in Binder(catalog, sql).bind_query(source_ast.copy()).schema]
    columns = set(catalog.lookup(name, exact=True)[1].schema.names)
    return [exp.column(n, quoted=n in columns) for n in names]


def _cast_rows_to_columns(values: exp.Values, types: list[pa.DataType], binder: Binder,
                          table: str, cols: list[str]) -> None:
    """INSERT ... VALUES with subqueries is bound as a query (a UNION ALL of its rows): each
    value is first cast to its column's type, as constant rows are (and as PostgreSQL coerces
    INSERT's VALUES), so the rows are not unified with each other first: a DECIMAL(38,10) in
    one row and a DOUBLE in another went through DOUBLE and lost digits."""
    targets = []
    for t in types:
        try:
            targets.append(None if T.is_null(t) else
                           exp.DataType.build(T.type_name(t), dialect=PQEDialect))
        except Exception:  # a type without SQL syntax: the rows are unified as before
            targets.append(None)
    for tup in values.expressions:
        items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
        if len(items) != len(types):
            return  # refused with its message after binding
    for tup in values.expressions:
        items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
        for node, to, want, col in zip(items, targets, types, cols, strict=True):
            if to is None:
                continue
            try:  # the value's own type, before the cast: assignment typing as everywhere
                have = binder.expr(node, Scope(), clause="VALUES").dtype
            except Error:
                have = None  # (its error is reported when the rows are bound)
            if have is not None:
                check_storable(f"INSERT INTO {table}", have, want, col)
            node.replace(exp.Cast(this=node.copy(), to=to.copy()))


def _has_query(values: exp.Values) -> bool:
    return any(isinstance(n, (exp.Column, exp.Subquery, exp.Select, exp.Exists))
               for n in walk_tree(values))


def check_storable(what: str, have: pa.DataType, want: pa.DataType, column: str) -> None:
    """Assignment typing, the same for every INSERT and UPDATE form (PostgreSQL's rule): a
    value is stored in a column of another type only when the two have a common type, or
    one is text (parsed or formatted); a number never becomes a DATE or a BOOLEAN."""
    if T.is_null(want) and not T.is_null(have):
        # (CREATE TABLE ... AS SELECT NULL AS c: a column of type NULL, which only NULL
        # fits; a value failed at run time with Arrow's "Unsupported cast ... to null")
        raise TypeMismatchError(f"{what}: column {column} has type NULL (made from an untyped "
                                f"NULL) and holds only NULLs, not {T.type_name(have)}; give the "
                                f"NULL a type where the table is made (CAST(NULL AS INTEGER))")
    if have != want and not T.is_null(have) and T.common_type(have, want) is None \
            and not (T.is_text(have) or T.is_text(want)):
        raise TypeMismatchError(f"{what}: cannot store {T.type_name(have)} in column {column} "
                                f"({T.type_name(want)})")


def _constant_values(binder: Binder, values: exp.Values, types: list[pa.DataType],
                     table: str, cols: list[str]) -> LogicalPlan:
    """INSERT ... VALUES of constants: each value cast to its column's type right away, so a
    value that does not fit names its column and row."""
    rows = []
    width = None
    for i, tup in enumerate(values.expressions):
        items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
        if width is None:
            width = len(items)
        if len(items) != width:
            raise BindError("VALUES rows have different numbers of columns")
        row = []
        for j, node in enumerate(items):
            binder.check(node)
            e = binder.expr(node, Scope(), clause="VALUES")
            if j < len(types) and not T.is_null(types[j]):
                check_storable(f"INSERT INTO {table}", e.dtype, types[j], cols[j])
                e = B.cast(e, types[j])
            row.append(e)
        rows.append(row)
    if width != len(types):
        raise BindError(f"INSERT INTO {table} has {len(types)} target columns but {width} "
                        f"values per row")
    return B.values([f"col{j + 1}" for j in range(width or 0)], rows)


def _on_conflict(stmt: exp.Insert, entry: MemoryTable, name: str, cols: list[str],
                 binder: Binder) -> S.OnConflict | None:
    alternative = (stmt.args.get("alternative") or "").upper()
    conflict = stmt.args.get("conflict")
    keys = [k for k in ((entry.primary_key,) + tuple(entry.unique)) if k]
    if alternative:
        if alternative not in ("REPLACE", "IGNORE"):
            raise UnsupportedError(f"INSERT OR {alternative} is not supported")
        if not keys:
            raise BindError(f"INSERT OR {alternative} INTO {name}: the table has no PRIMARY KEY "
                            f"or UNIQUE constraint to conflict on")
        if alternative == "IGNORE":
            return S.OnConflict("nothing")
        key = _single_key(keys, name)
        if set(cols) >= set(entry.schema.names):
            return S.OnConflict("replace", key)
        # with a column list, the columns it leaves out keep their values: DuckDB's OR
        # REPLACE is DO UPDATE SET of the listed columns (replacing the row set them NULL)
        scan, excluded = B.scan(name, entry), B.scan(name, entry, "excluded")
        by_name = {f.name: f for f in excluded.schema}
        sets = tuple((c, ColumnRef(by_name[c])) for c in cols if c not in key)
        if not sets:
            return S.OnConflict("nothing", key)
        return S.OnConflict("update", key, sets, None,
                            (tuple(scan.schema), tuple(excluded.schema)))
    if conflict is None:
        return None
    refuse_unknown_args(conflict, {"conflict_keys", "action", "expressions", "where",
                                   "constraint"}, "ON CONFLICT")
    if conflict.args.get("duplicate"):
        raise UnsupportedError("ON DUPLICATE KEY UPDATE is not supported; use ON CONFLICT")
    if conflict.args.get("constraint"):
        raise UnsupportedError("ON CONFLICT ON CONSTRAINT is not supported; name the columns")
    if not keys:
        raise BindError(f"INSERT INTO {name} ... ON CONFLICT: the table has no PRIMARY KEY or "
                        f"UNIQUE constraint")
    columns = entry.schema.names
    target = tuple(_column_named(columns, k, name, binder.sql, "ON CONFLICT")
                   for k in conflict.args.get("conflict_keys") or [])
    if target and tuple(sorted(target)) not in {tuple(sorted(k)) for k in keys}:
        raise BindError(f"ON CONFLICT ({', '.join(target)}) does not match a PRIMARY KEY or "
                        f"UNIQUE constraint of {name}")
    action = conflict.args.get("action")
    action_text = (action.name if isinstance(action, exp.Expression) else str(action or "")).upper()
    if action_text == "DO NOTHING":
        return S.OnConflict("nothing", target)
    if not action_text.startswith("DO UPDATE") and not conflict.args.get("expressions"):
        raise UnsupportedError(f"ON CONFLICT {action_text} is not supported")
    if not target:
        target = _single_key(keys, name)
    # SET assignments see the existing row (table name) and the proposed one (excluded)
    scan = B.scan(name, entry)
    excluded = B.scan(name, entry, "excluded")
    # the columns by their exact names: a reference is resolved to one first (quoted: that
    # exact name; unquoted: its folded name, else the one name equal regardless of case), as
    # UPDATE resolves them (lower-cased keys made `a` and "A" one name: SET a = 99 wrote "A")
    scope = Scope()
    scope.add(name, [(f.name, f) for f in scan.schema])
    scope.add("excluded", [(f.name, f) for f in excluded.schema])
    sets = []
    for eq in conflict.args.get("expressions") or []:
        if not isinstance(eq, exp.EQ) or not isinstance(eq.this, exp.Column):
            raise UnsupportedError(f"ON CONFLICT DO UPDATE SET {eq.sql(dialect=PQEDialect)}")
        real = _column_named(columns, eq.this, name, binder.sql, "ON CONFLICT DO UPDATE SET")
        if real in target:
            raise BindError(f"ON CONFLICT DO UPDATE cannot change the key column {real}")
        if real in (c for c, _ in sets):
            raise BindError(f"ON CONFLICT DO UPDATE sets column {real} twice")
        _refuse_default(eq.expression, "ON CONFLICT DO UPDATE SET column = DEFAULT")
        binder.check(eq.expression)
        value = binder.expr(_conflict_names(eq.expression, name, columns, binder.sql), scope,
                            clause="SET")
        # the typing of every other INSERT and UPDATE form: a number never becomes a DATE
        check_storable(f"INSERT INTO {name} ... ON CONFLICT DO UPDATE", value.dtype,
                       entry.schema.field(real).type, real)
        sets.append((real, B.cast(value, entry.schema.field(real).type)))
    where = conflict.args.get("where")
    cond = None
    if where is not None:
        binder.check(where)
        cond = binder.expr(_conflict_names(where.this if isinstance(where, exp.Where) else where,
                                           name, columns, binder.sql), scope, clause="WHERE")
        if not (T.is_boolean(cond.dtype) or T.is_null(cond.dtype)):
            raise TypeMismatchError(f"ON CONFLICT ... WHERE must be BOOLEAN, not "
                                    f"{T.type_name(cond.dtype)}")
        cond = B.call("is_true", B.cast(cond, T.BOOLEAN))
    return S.OnConflict("update", target, tuple(sets), cond,
                        (tuple(scan.schema), tuple(excluded.schema)))


def _column_named(columns: list[str], node: exp.Expression, table: str, sql: str = "",
                  what: str = "", qualified_ok: bool = False) -> str:
    """The column of `table` a name refers to: quoted, exactly that name; unquoted, its
    lower-case form, else the one column equal to it regardless of case. A qualified name
    (`nope.b`) is refused unless `qualified_ok` (the caller read the qualifier): the
    qualifier was dropped (`ON CONFLICT (nope.a)`, `DO UPDATE SET nope.b = 9` ran)."""
    if isinstance(node, exp.Ordered):  # (a conflict target's column)
        node = node.this
    if not qualified_ok and isinstance(node, exp.Column) and (node.table or node.args.get("db")):
        raise _qualified_refusal(f"{what or table}: column {node.sql(dialect=PQEDialect)}",
                                 node, sql)
    col, quoted = name_of(node)
    if col in columns:
        return col
    if not quoted:
        folded = [c for c in columns if c.lower() == col.lower()]
        if len(folded) == 1:
            return folded[0]
        if folded:
            raise AmbiguousColumnError(f"column reference '{col}' is ambiguous in {table}: "
                                       f"{', '.join(folded)}")
    pos = node_position(sql, node) if sql else None
    raise positioned(UnknownColumnError(f"table {table} has no column '{col}'{at(pos)}"
                                        f"{suggest(col, columns)}"), pos)


def _conflict_names(node: exp.Expression, table: str, columns: list[str],
                    sql: str = "") -> exp.Expression:
    """An ON CONFLICT SET value or WHERE with each reference to the target table's row or
    the proposed (excluded) one qualified and resolved to its exact column name."""
    node = node.copy()
    for col in find_all(node, exp.Column):
        if col.find_ancestor(exp.Select) is not None:
            continue  # (a subquery's own names: its binding resolves them)
        qualifier = col.table
        if qualifier and qualifier.lower() not in (table.lower(), "excluded"):
            continue
        real = _column_named(columns, col, qualifier or table, sql, qualified_ok=True)
        col.set("this", exp.to_identifier(real, quoted=True))
        col.set("table", exp.to_identifier(
            "excluded" if qualifier.lower() == "excluded" else table))
    return node


def _single_key(keys: list[tuple[str, ...]], name: str) -> tuple[str, ...]:
    if len(keys) != 1:
        raise BindError(f"table {name} has several PRIMARY KEY/UNIQUE constraints: name the "
                        f"conflict columns (ON CONFLICT (...))")
    return keys[0]


def _no_aggregates(node: exp.Expression, what: str) -> None:
    """UPDATE/DELETE expressions are per row: an aggregate or window function outside a
    subquery is an error (PostgreSQL), not a grouped query."""
    def walk(n: exp.Expression):
        if isinstance(n, (exp.Subquery, exp.Select, exp.Exists)):
            return
        if isinstance(n, exp.Window):
            raise AggregateMisuseError(f"window functions are not allowed in {what}")
        if isinstance(n, exp.AggFunc) or (isinstance(n, exp.Anonymous) and
                                          n.name.lower() in ("count", "sum", "min", "max")):
            raise AggregateMisuseError(f"aggregate functions are not allowed in {what}: "
                                       f"{n.sql(dialect=PQEDialect)}")
        for child in n.iter_expressions():
            walk(child)
    walk(node)


def _target_table(name: str) -> exp.Table:
    return exp.Table(this=exp.to_identifier(name, quoted=True))


def _not_true(cond: exp.Expression) -> exp.Expression:
    """`NOT ((cond) IS TRUE)`: the rows a WHERE does not select (FALSE and NULL alike)."""
    return exp.Not(this=exp.Is(this=exp.Paren(this=cond.copy()), expression=exp.true()))


# UPDATE ... FROM and DELETE ... USING read their target with its rows numbered (positions
# in the stored table), under a name of its own: TARGET_ROWS in a snapshot made for binding.
ROW = "__pqe_row"
TARGET_ROWS = "__pqe_dml_target"
KEEP = "__pqe_keep"  # (DELETE ... USING: the rows that stay)


def _target_alias(target: exp.Table, name: str) -> exp.Identifier:
    """The name the statement's SET and WHERE call the target by: its alias, else itself."""
    alias = target.args.get("alias")
    if alias is not None:
        return alias.this.copy()
    return exp.to_identifier(name, quoted=True)


def _reserved(entry: MemoryTable, name: str, what: str, *names: str) -> None:
    taken = {f.name.lower() for f in entry.schema} & {n.lower() for n in names}
    if taken:
        raise UnsupportedError(f"{what} {name}: a column named {sorted(taken)[0]} is reserved")


def _numbered(catalog: CatalogSnapshot, stmt: exp.Expression, entry: MemoryTable,
              what: str) -> CatalogSnapshot:
    """The snapshot with the target's rows, numbered 0.. in stored order (ROW), as
    TARGET_ROWS (a name the statement itself may not use)."""
    for t in find_all(stmt, exp.Identifier):
        if t.name.lower() in (TARGET_ROWS, KEEP):
            raise UnsupportedError(f"{what}: the name {t.name.lower()} is reserved")
    table = entry.table
    rows = pa.array(np.arange(table.num_rows, dtype=np.int64), pa.int64())
    return catalog.with_entry(TARGET_ROWS, MemoryTable(table.append_column(ROW, rows)))


def _bind_numbered(rows: CatalogSnapshot, sql: str, ast: exp.Select,
                   alias: exp.Identifier) -> LogicalPlan:
    """Bind a query over TARGET_ROWS; an error naming that table names the target instead
    (`column reference 'k' is ambiguous: it could be t.k or s.k`)."""
    try:
        return Binder(rows, sql).bind_query(ast)
    except Error as e:
        if e.args and isinstance(e.args[0], str) and TARGET_ROWS in e.args[0]:
            e.args = (e.args[0].replace(TARGET_ROWS, alias.name),) + e.args[1:]
        raise


def _from_joins(items: list[exp.Expression], target: exp.Identifier, what: str,
                sql: str) -> list[exp.Join]:
    """The FROM (or USING) items of UPDATE ... FROM / DELETE ... USING as the joins that
    follow the target in one SELECT's FROM: `FROM target, a, b JOIN c ON ...`. Each FROM item
    is a cross join with the target; explicit joins among them keep their meaning only when
    they do not reach back past their left side, so RIGHT/FULL joins and USING/NATURAL joins
    (whose columns the target could share) are refused by name."""
    joins: list[exp.Join] = []
    for item in items:
        item = item.copy()
        nested = item.args.get("joins") or []
        item.set("joins", None)
        if isinstance(item, exp.Join):
            joins.append(item)
        else:
            joins.append(exp.Join(this=item))
        joins.extend(nested)
    seen = {target.name if target.quoted else target.name.lower()}
    for j in joins:
        side = (j.args.get("side") or "").upper()
        kind = (j.args.get("kind") or "").upper()
        method = (j.args.get("method") or "").upper()
        if side in ("RIGHT", "FULL") or kind in ("FULL", "NATURAL") or method:
            words = " ".join(x for x in (method, side, kind) if x)
            raise UnsupportedError(f"{what} with a {words} JOIN is not supported: list the "
                                   f"tables, or use INNER/LEFT JOIN")
        if j.args.get("using"):
            raise UnsupportedError(f"{what} with JOIN ... USING (...) is not supported: write "
                                   f"the condition with ON")
        on = j.args.get("on")
        if on is not None:
            for col in find_all(on, exp.Column):
                if col.table and (col.table == target.name if target.quoted
                                  else col.table.lower() == target.name.lower()):
                    pos = node_position(sql, col) if sql else None
                    raise positioned(BindError(
                        f"{what}: a JOIN ... ON inside it cannot refer to the target "
                        f"{target.name}; put the condition in WHERE{at(pos)}"), pos)
        rel = j.this
        exposed = rel.alias_or_name if isinstance(rel, (exp.Table, exp.Subquery)) else ""
        ident = rel.args.get("alias").this if rel.args.get("alias") is not None else rel.this
        if isinstance(ident, exp.Identifier) and exposed:
            key = ident.name if ident.quoted else ident.name.lower()
            if key in seen:
                raise BindError(f"{what}: table name {exposed} is specified more than once "
                                f"(give one an alias)")
            seen.add(key)
    return joins


def _refuse_default(value: exp.Expression, what: str) -> None:
    """DEFAULT in a value (SET b = DEFAULT, VALUES (1, DEFAULT)): pqe has no column defaults.
    The keyword is reserved (PostgreSQL): sqlglot reads it as a column named "default", which
    a table may have (`SET b = DEFAULT` then copied that column; `DEFAULT + 1` added to it)."""
    for node in walk_tree(value):
        if isinstance(node, exp.Var) and node.name.upper() == "DEFAULT" or (
                isinstance(node, exp.Column) and not node.table
                and isinstance(node.this, exp.Identifier) and not node.this.quoted
                and node.name.upper() == "DEFAULT"):
            raise UnsupportedError(f"{what} is not supported")


def _assignments(stmt: exp.Update, name: str, entry: MemoryTable,
                 sql: str) -> dict[str, exp.Expression]:
    sets: dict[str, exp.Expression] = {}
    for eq in stmt.expressions:
        if not isinstance(eq, exp.EQ) or not isinstance(eq.this, exp.Column) or eq.this.table:
            raise UnsupportedError(f"UPDATE SET {eq.sql(dialect=PQEDialect)[:60]} is not supported")
        _refuse_default(eq.expression, "UPDATE SET column = DEFAULT")
        real = _column_named(entry.schema.names, eq.this, name, sql, f"UPDATE {name} SET")
        if real in sets:
            raise BindError(f"UPDATE {name} sets column {real} twice")
        _no_aggregates(eq.expression, "UPDATE")
        sets[real] = eq.expression
    return sets


def _with_ctes(select: exp.Select, stmt: exp.Expression) -> exp.Select:
    """A statement's `WITH ...` put on the query it is bound as."""
    with_ = stmt.args.get("with_")
    if with_ is not None:
        select.set("with_", with_.copy())
    return select


def _update(stmt: exp.Update, catalog: CatalogSnapshot, sql: str) -> S.Update:
    """UPDATE t SET c = e, ... WHERE w, bound as one query over t, so SET and WHERE see
    exactly SELECT's scoping (subqueries, correlation, `*`):

        SELECT *, CASE WHEN hit THEN e END AS set_c, ...
        FROM (SELECT *, (w) IS TRUE AS hit FROM t) AS t

    then each set column is `CASE WHEN hit THEN set_c ELSE c END`. WHERE is evaluated once
    per row (as two queries, the rows it selects and the rest, a WHERE on random() or now()
    lost rows and doubled others), and SET only on the rows it selects (`SET x = 1 / y WHERE
    y <> 0` never divides by zero). With FROM: `_update_from`."""
    refuse_unknown_args(stmt, {"this", "expressions", "where", "from_", "with_"}, "UPDATE")
    name, entry = _memory_table(catalog, stmt.this, "UPDATE", alias_ok=True)
    alias = _target_alias(stmt.this, name)
    sets = _assignments(stmt, name, entry, sql)
    where = stmt.args.get("where")
    if where is not None:
        _no_aggregates(where.this, "WHERE")
    if stmt.args.get("from_") is not None:
        return _update_from(stmt, name, entry, alias, sets, catalog, sql)
    hit, slots = "__pqe_update_hit", {c: f"__pqe_update_set_{i}" for i, c in enumerate(sets)}
    _reserved(entry, name, "UPDATE", hit, *slots.values())
    source = exp.select("*").from_(exp.Table(this=exp.to_identifier(name, quoted=True),
                                             alias=exp.TableAlias(this=alias.copy())))
    if where is not None:
        source = source.select(exp.alias_(
            exp.Is(this=exp.Paren(this=where.this.copy()), expression=exp.true()),
            exp.to_identifier(hit, quoted=True)))
    else:
        source = source.select(exp.alias_(exp.true(), exp.to_identifier(hit, quoted=True)))
    items = [exp.Star()] + [
        exp.alias_(exp.Case(ifs=[exp.If(this=exp.column(hit, quoted=True),
                                         true=sets[c].copy())]),
                   exp.to_identifier(slot, quoted=True))
        for c, slot in slots.items()]
    ast = _with_ctes(exp.select(*items).from_(
        exp.Subquery(this=source, alias=exp.TableAlias(this=alias.copy()))), stmt)
    bound = Binder(catalog, sql).bind_query(ast)
    by_name = {f.name: f for f in bound.schema}
    hit_ref = ColumnRef(by_name[hit])
    out = []
    for target in entry.schema:
        old = ColumnRef(by_name[target.name])
        if target.name in slots:
            new = by_name[slots[target.name]]
            check_storable(f"UPDATE {name}", new.dtype, target.type, target.name)
            value = B.case([(hit_ref, B.cast(ColumnRef(new), target.type))], old)
        else:
            value = old
        out.append((value, target.name))
    plan = B.project(bound, out + [(hit_ref, "__changed")])
    return S.Update(name, entry, plan)


def _update_from(stmt: exp.Update, name: str, entry: MemoryTable, alias: exp.Identifier,
                 sets: dict[str, exp.Expression], catalog: CatalogSnapshot,
                 sql: str) -> S.Update:
    """UPDATE t [AS a] SET c = e, ... FROM f1, f2 ... [WHERE w] (PostgreSQL's and DuckDB's
    meaning: each row of t paired with the FROM rows WHERE selects), bound as one flat join,
    so names resolve (and are ambiguous) exactly as DuckDB resolves them:

        SELECT a.ROW, e AS set_c, ... FROM TARGET_ROWS AS a, f1, f2 ... WHERE w

    The session replaces the values of the rows it yields (the others keep theirs) and
    refuses a target row paired with more than one FROM row (`S.Update`)."""
    what = "UPDATE ... FROM"
    slots = {c: f"__pqe_update_set_{i}" for i, c in enumerate(sets)}
    _reserved(entry, name, "UPDATE", ROW, *slots.values())
    rows = _numbered(catalog, stmt, entry, what)
    from_ = stmt.args["from_"]
    joins = _from_joins([from_.this], alias, what, sql)
    items = [exp.alias_(exp.column(ROW, table=alias.copy(), quoted=True),
                        exp.to_identifier(ROW, quoted=True))] + [
        exp.Alias(this=sets[c].copy(), alias=exp.to_identifier(slot, quoted=True))
        for c, slot in slots.items()]  # (exp.alias_ of a subquery aliases the subquery)
    ast = exp.select(*items).from_(exp.Table(this=exp.to_identifier(TARGET_ROWS, quoted=True),
                                             alias=exp.TableAlias(this=alias.copy())))
    ast.set("joins", joins)
    where = stmt.args.get("where")
    if where is not None:
        ast = ast.where(where.this.copy())
    bound = _bind_numbered(rows, sql, _with_ctes(ast, stmt), alias)
    by_name = {f.name: f for f in bound.schema}
    out = [(ColumnRef(by_name[ROW]), ROW)]
    for c, slot in slots.items():
        new = by_name[slot]
        want = entry.schema.field(c).type
        check_storable(f"UPDATE {name}", new.dtype, want, c)
        out.append((B.cast(ColumnRef(new), want), c))
    return S.Update(name, entry, B.project(bound, out), tuple(slots))


def _delete(stmt: exp.Delete, catalog: CatalogSnapshot, sql: str) -> S.Delete:
    """DELETE FROM t WHERE w: the rows that stay, `SELECT * FROM t WHERE NOT (w IS TRUE)`,
    bound as a query (SELECT's scoping for subqueries and correlation).

    DELETE FROM t [AS a] USING f1, f2 ... [WHERE w]: a row of t is deleted when at least one
    combination of USING rows makes WHERE TRUE (once, however many do). The pairs are one
    flat join, named as DuckDB names them (`_update_from`), and the rows that stay are

        SELECT cols FROM TARGET_ROWS AS keep WHERE keep.ROW NOT IN
            (SELECT a.ROW FROM TARGET_ROWS AS a, f1, f2 ... WHERE w)"""
    refuse_unknown_args(stmt, {"this", "where", "using", "with_"}, "DELETE")
    name, entry = _memory_table(catalog, stmt.this, "DELETE FROM", alias_ok=True)
    alias = _target_alias(stmt.this, name)
    where = stmt.args.get("where")
    if where is not None:
        _no_aggregates(where.this, "WHERE")
    using = stmt.args.get("using")
    if not using:
        keep = exp.false() if where is None else _not_true(where.this)
        table = exp.Table(this=exp.to_identifier(name, quoted=True),
                          alias=exp.TableAlias(this=alias.copy()))
        plan = Binder(catalog, sql).bind_query(
            _with_ctes(exp.select("*").from_(table).where(keep), stmt))
        return S.Delete(name, entry, plan)
    what = "DELETE ... USING"
    _reserved(entry, name, "DELETE FROM", ROW)
    rows = _numbered(catalog, stmt, entry, what)
    keep_name = KEEP
    joins = _from_joins(list(using), alias, what, sql)
    pairs = exp.select(exp.column(ROW, table=alias.copy(), quoted=True)).from_(
        exp.Table(this=exp.to_identifier(TARGET_ROWS, quoted=True),
                  alias=exp.TableAlias(this=alias.copy())))
    pairs.set("joins", joins)
    if where is not None:
        pairs = pairs.where(where.this.copy())
    keep = exp.Not(this=exp.In(this=exp.column(ROW, table=keep_name, quoted=True),
                               query=exp.Subquery(this=pairs)))
    cols = [exp.column(f.name, table=keep_name, quoted=True) for f in entry.schema]
    ast = exp.select(*cols).from_(exp.Table(
        this=exp.to_identifier(TARGET_ROWS, quoted=True),
        alias=exp.TableAlias(this=exp.to_identifier(keep_name, quoted=True)))).where(keep)
    plan = _bind_numbered(rows, sql, _with_ctes(ast, stmt), alias)
    return S.Delete(name, entry, plan)


def _truncate(stmt: exp.TruncateTable, catalog: CatalogSnapshot, sql: str) -> S.Delete:
    """TRUNCATE [TABLE] t: every row deleted, as `DELETE FROM t` (one table; PostgreSQL's
    several tables, RESTART IDENTITY, CASCADE and the rest are refused by name)."""
    refuse_unknown_args(stmt, {"expressions"}, "TRUNCATE")
    tables = stmt.expressions
    if len(tables) != 1 or not isinstance(tables[0], exp.Table):
        raise UnsupportedError("TRUNCATE of several tables is not supported: one at a time")
    return _delete(exp.Delete(this=tables[0]), catalog, sql)


# ---- DROP / DESCRIBE / COPY --------------------------------------------------------------------


def _drop(stmt: exp.Drop) -> S.Drop | S.NoOp:
    kind = (stmt.args.get("kind") or "TABLE").upper()
    if kind == "INDEX":
        refuse_unknown_args(stmt, {"kind", "this", "tables", "exists"}, "DROP INDEX")
        targets = stmt.args.get("tables") or [stmt.this]
        if len(targets) != 1 or not isinstance(targets[0], exp.Table) or \
                targets[0].args.get("db"):
            raise UnsupportedError("DROP INDEX takes one unqualified index name")
        return S.NoOp("DROP INDEX", name_of(targets[0])[0], None, bool(stmt.args.get("exists")))
    if kind and kind not in ("TABLE", "VIEW"):
        raise UnsupportedError(f"DROP {kind} is not supported")
    refuse_unknown_args(stmt, {"kind", "this", "tables", "exists"}, f"DROP {kind}")
    targets = stmt.args.get("tables") or [stmt.this]
    names = []
    for t in targets:
        if not isinstance(t, exp.Table) or t.args.get("db") or t.args.get("catalog"):
            raise UnsupportedError(f"DROP {kind} {t.sql(dialect=PQEDialect)}: qualified names are "
                                   f"not supported")
        names.append(name_of(t))
    return S.Drop(kind, tuple(names), bool(stmt.args.get("exists")))


def _describe(stmt: exp.Describe, catalog: CatalogSnapshot, sql: str) -> S.Describe:
    refuse_unknown_args(stmt, {"this", "kind"}, "DESCRIBE")
    kind = str(stmt.args.get("kind") or "").upper()
    if kind and kind != "TABLE":
        # DESCRIBE SCHEMA x / VIEW x / FUNCTION x ... described the table x
        raise UnsupportedError(f"DESCRIBE {kind} is not supported (DESCRIBE name describes a "
                               f"table or view; DESCRIBE SELECT ... a query)")
    target = stmt.this
    if isinstance(target, exp.Table) and _qualified(target):
        # `DESCRIBE nope.t` and `DESCRIBE a.b.t` described t
        raise _qualified_refusal(f"DESCRIBE {target.sql(dialect=PQEDialect)}", target, sql)
    if isinstance(target, exp.Schema) and isinstance(target.this, exp.Table) \
            and target.this.name.lower() in ("read_parquet", "read_csv") \
            and not target.this.args.get("db"):
        # DESCRIBE read_parquet('f'): sqlglot reads a table with a column list; it is the
        # table function, bound (and access-checked) as FROM read_parquet('f') is
        args = ", ".join(e.sql(dialect=PQEDialect) for e in target.expressions)
        (target,) = parse(f"SELECT * FROM {target.this.name}({args})")
    if isinstance(target, exp.Table) and isinstance(target.this, exp.Identifier) \
            and not _is_path(catalog, target):
        name, quoted = name_of(target)
        real, entry = catalog.lookup(name, exact=quoted)
        if isinstance(entry, TableProvider):
            stored = getattr(getattr(entry, "table", None), "schema", None)  # (a MemoryTable's
            # own schema keeps its columns' declared lengths)
            lengths = tuple(T.max_length(f) for f in stored) \
                if stored is not None and stored.names == entry.schema.names else ()
            return S.Describe(tuple((f.name, f.type, f.nullable) for f in entry.schema), lengths)
        plan = Binder(catalog, sql).bind_query(exp.select("*").from_(_target_table(real)))
    else:
        query = target if isinstance(target, exp.Query) else exp.select("*").from_(target)
        plan = Binder(catalog, sql).bind_query(query)
    return S.Describe(tuple((f.name, f.dtype, f.nullable) for f in plan.schema))


def _is_path(catalog: CatalogSnapshot, table: exp.Table) -> bool:
    ident = table.this
    return ident.quoted and catalog.find(ident.name, exact=True) is None and (
        "/" in ident.name or "." in ident.name)


COPY_OPTIONS = {"FORMAT", "HEADER", "DELIMITER", "DELIM", "OVERWRITE", "COMPRESSION",
                "PARTITION_BY", "PER_THREAD_OUTPUT"}


def _copy(stmt: exp.Copy, catalog: CatalogSnapshot, sql: str) -> S.Copy:
    if stmt.args.get("kind"):  # COPY ... FROM
        raise UnsupportedError("COPY ... FROM is not supported; use read_csv() or read_parquet()")
    refuse_unknown_args(stmt, {"this", "files", "params", "credentials", "kind"}, "COPY")
    creds = stmt.args.get("credentials")
    if creds is not None and _set_args(creds):
        raise UnsupportedError("COPY credentials are not supported")
    files = stmt.args.get("files") or []
    if len(files) != 1 or not isinstance(files[0], exp.Literal) or not files[0].is_string:
        raise BindError("COPY ... TO needs one file path as a string")
    path = files[0].name
    options: dict[str, object] = {}
    for p in stmt.args.get("params") or []:
        key = p.this.name.upper()
        if key not in COPY_OPTIONS:
            raise UnsupportedError(f"COPY option {key} is not supported (options: "
                                   f"{', '.join(sorted(COPY_OPTIONS))})")
        if key in options or (key in ("DELIM", "DELIMITER") and
                              ("DELIM" in options or "DELIMITER" in options)):
            raise BindError(f"COPY option {key} is given twice")
        options[key] = _copy_value(key, p.expression)
    stem = re.sub(r"\.(gz|bz2|zst)$", "", path, flags=re.IGNORECASE)  # x.csv.gz is CSV
    fmt = str(options.pop("FORMAT", None) or os.path.splitext(stem)[1].lstrip(".") or "csv").lower()
    if fmt not in ("csv", "parquet"):
        raise UnsupportedError(f"COPY format '{fmt}' is not supported (use parquet or csv)")
    if "DELIM" in options:
        options["DELIMITER"] = options.pop("DELIM")
    if fmt == "parquet":
        for key in ("HEADER", "DELIMITER"):
            if key in options:
                raise BindError(f"COPY option {key} applies to CSV, not Parquet")
    if "DELIMITER" in options:
        d = options["DELIMITER"]
        if T.bad_csv_delimiter(d):
            raise BindError(f"COPY DELIMITER must be one ASCII character that no number, date "
                            f"or timestamp holds, and no quote or newline, not {d!r}")
    if "COMPRESSION" in options:
        options["COMPRESSION"] = T.write_codec(fmt, str(options["COMPRESSION"]),
                                               "COPY COMPRESSION")
    source = stmt.this
    if isinstance(source, exp.Subquery):
        source = source.this
    elif isinstance(source, exp.Table):
        source = exp.select("*").from_(source)
    plan = Binder(catalog, sql).bind_query(source)
    return S.Copy(plan, path, fmt, options)


def _partition_columns(node: exp.Expression | None) -> tuple[str, ...]:
    """PARTITION_BY (a, b) / PARTITION_BY a: plain column names only."""
    if node is None:
        raise BindError("COPY option PARTITION_BY needs columns: PARTITION_BY (col, ...)")
    items = node.expressions if isinstance(node, exp.Tuple) else [
        node.this if isinstance(node, exp.Paren) else node]
    names = []
    for item in items:
        if isinstance(item, (exp.Column, exp.Identifier)) and not (
                isinstance(item, exp.Column) and item.table):
            names.append(item.name)
        elif isinstance(item, exp.Var):
            names.append(item.name)
        else:
            raise UnsupportedError(f"COPY PARTITION_BY {item.sql(dialect=PQEDialect)}: only "
                                   f"column names are supported")
    if not names:
        raise BindError("COPY option PARTITION_BY needs at least one column")
    return tuple(names)


def _copy_value(key: str, node: exp.Expression | None):
    if key == "PARTITION_BY":
        return _partition_columns(node)
    if node is None:
        if key in ("HEADER", "OVERWRITE", "PER_THREAD_OUTPUT"):
            return True
        raise BindError(f"COPY option {key} needs a value")
    if isinstance(node, exp.Boolean):
        value: object = bool(node.this)
    elif isinstance(node, exp.Literal):
        value = node.name if node.is_string else node.this
    elif isinstance(node, (exp.Var, exp.Identifier, exp.Column)):
        value = node.name
    else:
        raise BindError(f"COPY option {key} needs a constant, not {node.sql(dialect=PQEDialect)}")
    if key in ("HEADER", "OVERWRITE", "PER_THREAD_OUTPUT"):
        text = str(value).lower()
        if text in ("true", "1", "on", "yes"):
            return True
        if text in ("false", "0", "off", "no"):
            return False
        raise BindError(f"COPY option {key} must be true or false, not {value!r}")
    return value


__all__ = ["bind_statement", "name_of", "refuse_unknown_args", "statement_word", "CatalogError"]
