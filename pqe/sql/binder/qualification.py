"""Qualification: tables and views resolved against the catalog, then sqlglot's `qualify`
resolves every column to its table alias, expands `*`, pushes derived-table column aliases
inward and expands GROUP BY ordinals and alias references.

Before `qualify`, a few rewrites keep it linear and let it see what pqe implements: long
chains of UNION / INTERSECT / AND / OR are rebalanced (sqlglot's scope walk is quadratic in the depth of
a left-deep chain), `ORDER BY ALL` becomes a marker it leaves alone, and `LIMIT ALL` a NULL.
"""

from __future__ import annotations

import copy
import itertools
import os
import re

from sqlglot import exp
from sqlglot.dialects.dialect import AliasPrecedence, Dialect
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from ... import types as T
from ...catalog import TableProvider, is_csv_name, unreadable_columns
from ...errors import (
    AmbiguousColumnError,
    BindError,
    Error,
    InternalError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedError,
    suggest,
)
from ...plan import builder as B
from ...plan.expr import ColumnRef
from ...plan.logical import LogicalPlan
from ..parser import PQEDialect, node_position
from .scope import View, at, positioned
from ..walk import find, find_all, walk as walk_tree

# a chain of this many UNION / INTERSECT branches or AND / OR terms (or more) is rebalanced
# before qualify (shorter chains keep their shape, and their plans their EXPLAIN text)
REBALANCE_BRANCHES = 64
# ORDER BY ALL, after the rewrite (sqlglot reads ALL as a column named "all")
ORDER_ALL = "__pqe_order_all"
# the meta mark of a select item's alias the user wrote (qualify adds others: `SELECT Name`
# becomes `n.name AS name`, an output named as the data spells it, `Name`)
USER_ALIAS = "pqe_user_alias"
SHOWN_NAME = "pqe_shown_name"  # a select item's output name, where it differs from its key
STAR_KEY = "pqe_star_key"  # a star's EXCLUDE/REPLACE name, set to the key of the column it names
# the meta mark of an item of ROLLUP / CUBE / GROUPING SETS that qualify expanded from a
# select item's alias: that alias (`SELECT x AS k, x AS k2 ... ROLLUP(k, k2)` has two keys, one
# per select item, which the expanded copies of x no longer tell apart)
GROUP_ALIAS = "pqe_group_alias"


class _ResolveNames(Dialect):
    """The dialect sqlglot's qualify_columns resolves names under (it takes the schema's
    dialect, not qualify's): sqlglot's default dialect, whose select-list aliases win over
    input columns in every clause, with DuckDB's (and PostgreSQL's) precedence where an input
    column of the same name wins: in HAVING a grouped input column, or one inside an
    aggregate (`SELECT k*10 AS k ... GROUP BY k HAVING k > 1` compares the column k, it
    compared k*10), in QUALIFY any input column. WHERE and GROUP BY already take the input
    column (qualified before aliases are looked at); ORDER BY is bound by pqe (select.py)."""

    COLUMN_ALIAS_PRECEDENCE = {
        exp.Having: AliasPrecedence.GROUPED_SOURCE,
        exp.Qualify: AliasPrecedence.SOURCE,
    }


class QualifyMixin:
    def _cte_names(self, node: exp.Expression) -> set[str]:
        return {c.alias_or_name for c in find_all(node, exp.CTE)}

    def _qualify(self, node: exp.Expression) -> exp.Expression:
        for sub in find_all(node, exp.Subquery):
            if isinstance(sub.this, exp.Table) and sub.args.get("alias") is not None \
                    and any(not j.args.get("using") for j in sub.this.args.get("joins") or ()):
                # (sqlglot's qualify failed on it: InternalError "* is not Alias"; USING
                # joins it reads)
                raise UnsupportedError(
                    f"an alias on a parenthesized join ((a JOIN b ...) AS "
                    f"{sub.alias_or_name}) is not supported; write it as a subquery: "
                    f"(SELECT * FROM a JOIN b ...) AS {sub.alias_or_name}")
        _rewrite_all_keywords(node)
        _implicit_laterals(node)
        _unwrap_order_group_items(node)
        node = rebalance_chains(node)
        for sel in find_all(node, exp.Select):
            for item in sel.expressions:
                if isinstance(item, exp.Alias):
                    item.meta[USER_ALIAS] = True
        _fold_cte_names(node)
        cte_names = self._cte_names(node)
        schema: dict[str, dict[str, str]] = {}
        for table in find_all(node, exp.Table):
            adhoc = self._table_function(table)
            if adhoc is not None:
                real, entry = adhoc
                table.set("this", exp.to_identifier(real, quoted=True))
            else:
                if not isinstance(table.this, exp.Identifier):
                    raise UnsupportedError(f"table expression {table.sql(dialect=PQEDialect)} "
                                           f"is not supported yet")
                name = table.name
                if name in cte_names and not table.args.get("db") and _sees_cte(table, name):
                    continue
                if table.args.get("db") or table.args.get("catalog"):
                    raise UnsupportedError(f"qualified table names ({table.sql(dialect=PQEDialect)}) "
                                           f"are not supported")
                quoted = table.this.quoted
                try:
                    real, entry = self.catalog.lookup(name, exact=quoted)
                except UnknownTableError as e:
                    pos = node_position(self.sql, table)
                    raise positioned(UnknownTableError(str(e) + at(pos)), pos) from None
                table.set("this", exp.to_identifier(real, quoted=True))
            self.table_refs[real] = self.table_refs.get(real, 0) + 1
            if real in schema:
                continue
            cols = self._columns_of(real, entry)
            keys = relation_keys([c for c, _ in cols])
            self.keys[real] = {k: c for k, c in zip(keys, (c for c, _ in cols), strict=True)}
            schema[real] = {k: t for k, (_, t) in zip(keys, cols, strict=True)}
        _refuse_using_shapes(node, schema)
        _resolve_star_modifiers(node, schema, self.keys)
        _wrap_ordered_subqueries(node)
        _check_positions(node, self.sql)
        name_unaliased_projections(node)
        for values in find_all(node, exp.Values):  # (VALUES (1, 2)) q(a, a): a and a_1
            alias = values.args.get("alias")
            cols = alias.columns if alias is not None else []
            names = [c.name if c.quoted else c.name.lower() for c in cols]  # as qualify folds
            rows = values.expressions
            width = len(rows[0].expressions) if rows and isinstance(rows[0], exp.Tuple) else 1
            if cols and len(cols) < width:
                # fewer names than columns: the rest are col<i> (DuckDB; PostgreSQL keeps them
                # too), named here before qualify expands `*` to the names it knows (only the
                # given ones: `SELECT * FROM (VALUES (1, 2)) v(a)` lost column 2)
                names += [f"col{i}" for i in range(len(names), width)]
                alias.set("columns", [*cols, *(exp.to_identifier(n) for n in names[len(cols):])])
            if len(set(names)) < len(names):
                alias.set("columns", [exp.to_identifier(n, quoted=True)
                                      for n in unique_names(names)])
        # quoted column names are exact: map them to the key qualify will look for
        real_to_key = {}
        for table_keys in self.keys.values():
            for k, real in table_keys.items():
                real_to_key.setdefault(real, k)
        # names the query itself gives (a select item's alias, a derived table's column
        # list), as qualify folds them: a quoted reference to one is that column
        # (`SELECT "h" FROM (SELECT 1 AS h) s` failed: only table columns were looked up)
        given = {a.name if a.quoted else a.name.lower()
                 for a in (x.args.get("alias") for x in find_all(node, exp.Alias)
                           if x.meta.get(USER_ALIAS))
                 if isinstance(a, exp.Identifier)}
        for ta in find_all(node, exp.TableAlias):
            given.update(c.name if c.quoted else c.name.lower() for c in ta.columns
                         if isinstance(c, exp.Identifier))
        keys = {k for table_keys in self.keys.values() for k in table_keys}
        for ident in find_all(node, exp.Identifier):
            if ident.meta.get(STAR_KEY):
                continue  # (a star's EXCLUDE/REPLACE name, already its key)
            if ident.quoted and ident.arg_key == "using" and ident.name in real_to_key:
                # `JOIN u USING ("Grp")`: the column Grp, known to sqlglot by its key (it
                # was "not a column of both sides")
                ident.set("this", real_to_key[ident.name])
            elif ident.quoted and isinstance(ident.parent, exp.Column) and ident.arg_key == "this":
                if ident.name in real_to_key:
                    ident.set("this", real_to_key[ident.name])
                elif ident.name in given and ident.name not in keys:
                    # a name the query gives (an alias, a derived table's column) stays exact,
                    # also where a table has it in another case, unless it is the key sqlglot
                    # knows that column by (a column "H" is known as h: "h" would read it).
                    # `SELECT "K" FROM (SELECT a AS "K" FROM s)` with a column k in s was
                    # "column 'K' does not exist"
                    pass
                else:
                    ident.set("this", ident.name + "\x00")  # never matches a key case-insensitively
        nested = sum(1 for _ in itertools.islice(find_all(node, exp.Select), 2)) > 1
        bare = [col for col in find_all(node, exp.Column) if not col.table] if nested else []
        _name_values_columns(node)
        mapping = MappingSchema(schema, normalize=False, dialect=_ResolveNames)
        using_refs = _hide_using_refs(node, schema)
        alias_refs = _mark_alias_refs(node, schema)
        group_alias_slots = bool(alias_refs) and _mark_group_alias_slots(node)
        branches = _set_operation_branches(node)
        targets = branches if len(branches) >= REBALANCE_BRANCHES else [node]
        for target in targets:
            done = self._qualify_one(target, mapping, schema)
            if done is not target:
                if target is node:
                    node = done
                else:
                    target.replace(done)
        if isinstance(node, exp.Values):
            # sqlglot's qualify skips a bare VALUES (INSERT's source): a subquery in a row
            # (EXISTS (SELECT * FROM t)) kept its * and unqualified names. A row sees no outer
            # columns, so each outermost subquery is qualified on its own
            for sub in list(find_all(node, exp.Select)):
                if sub.find_ancestor(exp.Select) is not None:
                    continue
                done = self._qualify_one(sub, mapping, schema)
                if done is not sub:
                    sub.replace(done)
        if using_refs:
            _restore_using_refs(node, using_refs)
        _expand_constant_alias_refs(node)
        if group_alias_slots:
            _tag_group_alias_items(node)
        if alias_refs:
            _refuse_ambiguous_alias_refs(node, alias_refs, schema)
        if bare:
            _refuse_ambiguous_outer_columns(bare, schema)
        if targets is branches:
            # the set operation's own ORDER BY names output columns: unquoted names fold to
            # lower case, as qualify folds them in each branch
            order = node.args.get("order")
            if order is not None:
                normalize_identifiers(order, dialect=PQEDialect)
        return node

    def _table_function(self, table: exp.Table) -> tuple[str, TableProvider] | None:
        """read_parquet('glob'), read_csv('path'), or FROM 'file.parquet' -> an ad-hoc table."""
        from ...catalog import CsvTable, ParquetTable

        fn = table.this
        path = None
        kind = None
        if isinstance(fn, exp.ReadParquet) or (isinstance(fn, exp.Anonymous) and fn.name.lower() in ("read_parquet", "parquet_scan")):
            kind, args = "parquet", list(fn.expressions)
        elif isinstance(fn, exp.ReadCSV) or (isinstance(fn, exp.Anonymous) and fn.name.lower() in ("read_csv", "read_csv_auto")):
            kind = "csv"
            args = [fn.this] + list(fn.expressions) if isinstance(fn, exp.ReadCSV) else list(fn.expressions)
        elif isinstance(fn, exp.Identifier) and fn.quoted and not self.catalog.find(fn.name, exact=True) \
                and _looks_like_path(fn.name):
            path = fn.name
            kind = "csv" if is_csv_name(path) else "parquet"
            args = []
        else:
            return None
        if path is None:
            paths = args[0].expressions if args and isinstance(args[0], exp.Array) else None
            if paths is not None and paths and all(
                    isinstance(a, exp.Literal) and a.is_string for a in paths):
                path = [a.name for a in paths]  # read_parquet(['a.parquet', 'b/*.parquet'])
            elif not args or not isinstance(args[0], exp.Literal) or not args[0].is_string:
                raise BindError(f"{kind} table function needs a path: a string literal or a "
                                f"list of them")
            if len(args) > 1:
                # options (delim=..., header=...) would change what is read: never ignored
                shown = ", ".join(a.sql(dialect=PQEDialect) for a in args[1:])
                raise UnsupportedError(f"{user_function_name(fn, self.sql) or 'read_' + kind} "
                                       f"options ({shown[:60]}) are not supported; register the "
                                       f"file with the options instead")
            if not isinstance(path, list):
                path = args[0].name
        key = f"__{kind}:{path}"
        if key not in self.adhoc:
            self.adhoc[key] = ParquetTable(path) if kind == "parquet" else CsvTable(path)
        if not table.alias:
            stem = os.path.basename(path if isinstance(path, str) else path[0]).split(".")[0] \
                or kind
            alias = stem if isinstance(fn, exp.Identifier) else f"read_{kind}"
            table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
        return key, self.adhoc[key]

    def _columns_of(self, real: str, entry) -> list[tuple[str, str]]:
        if isinstance(entry, TableProvider):
            # (refused here, before sqlglot meets a table of no columns: `SELECT * FROM t
            # ORDER BY 1` failed inside its qualify)
            why = unreadable_columns(entry.schema.names, f"table {real}",
                                     "rename them when registering it")
            if why:
                raise UnsupportedError(why)
            return [(f.name, T.type_name(f.type)) for f in entry.schema]
        if isinstance(entry, View):
            plan = self._bind_view(real, entry)
            return [(f.name, T.type_name(f.dtype)) for f in plan.schema]
        raise UnsupportedError(f"catalog entry {real!r} cannot be queried")

    def _qualify_one(self, node: exp.Expression, mapping, schema) -> exp.Expression:
        """sqlglot's qualify of one query (or set-operation branch), its errors as pqe's.

        A derived table (a subquery in FROM, a CTE) whose columns repeat a name gets unique
        names as DuckDB gives them (a, a_1, a_2; `SELECT * FROM t JOIN u ...` as id, x, id_1,
        y): sqlglot leaves `*` over such a table unexpanded and cannot resolve the new names,
        so the names are found on a qualified copy (inner scopes first), set as the derived
        table's column aliases on the original, and the original is qualified again; each
        round settles one more level of nesting."""
        derived = _derived_tables(node)
        if not any(_may_repeat(d) for d in derived):  # (most queries: one qualify, no copy)
            return self._run_qualify(node, mapping, schema)
        for i, d in enumerate(derived):
            d.meta["pqe_derived"] = i
        original = node.copy()
        targets = {d.meta["pqe_derived"]: d for d in _derived_tables(original)}
        for round_ in range(len(derived) + 1):
            work = node if round_ == 0 else original.copy()  # `original` stays unqualified
            error = None
            try:
                done = qualify(work, schema=mapping, dialect=PQEDialect,
                               validate_qualify_columns=True, quote_identifiers=True,
                               identify=True)
            except OptimizeError as e:
                error, done = e, work  # inner scopes qualified before the error are used
            except (RecursionError, MemoryError):
                raise
            except Exception as e:
                raise InternalError(f"sqlglot could not qualify the query: {type(e).__name__}: "
                                    f"{' '.join(str(e).split())[:200]}") from e
            renamed = False
            for d in _derived_tables(done):
                names = _derived_names(d)
                target = targets.get(d.meta.get("pqe_derived"))
                if names is None or target is None:
                    continue
                unique = unique_names(names)
                if unique != names:
                    alias = target.args.get("alias")
                    if alias is None:
                        alias = exp.TableAlias(this=exp.to_identifier(d.alias_or_name,
                                                                      quoted=True))
                        target.set("alias", alias)
                    alias.set("columns", [exp.to_identifier(n, quoted=True) for n in unique])
                    renamed = True
            if not renamed:
                if error is not None:
                    raise self._qualify_error(str(error), schema, node) from None
                return done
        raise InternalError("could not give the columns of derived tables unique names")

    def _run_qualify(self, node: exp.Expression, mapping, schema) -> exp.Expression:
        try:
            return qualify(node, schema=mapping, dialect=PQEDialect,
                           validate_qualify_columns=True, quote_identifiers=True, identify=True)
        except OptimizeError as e:
            raise self._qualify_error(str(e), schema, node) from None
        except (RecursionError, MemoryError):
            raise  # (too deep or too large to plan: pqe.deep says so)
        except Exception as e:  # sqlglot failing otherwise (an assertion) is a bug to report
            raise InternalError(f"sqlglot could not qualify the query: {type(e).__name__}: "
                                f"{' '.join(str(e).split())[:200]}") from e

    def _column_at(self, node: exp.Expression | None, name: str, table: str | None = None,
                   end: tuple[int, int] | None = None):
        """Where the column reference `[table.]name` named by a sqlglot error starts (its
        first part), from the nodes of `node`: at the token ending at `end` when given (the
        error's Line/Col is where the name ends; a quoted name's ended two later than its
        text's length said)."""
        if node is None:
            return None
        found = []
        for c in find_all(node, exp.Column):
            ident = c.this
            if not isinstance(ident, exp.Identifier) or \
                    ident.name.replace("\x00", "") != name or \
                    (table is not None and c.table != table) or (table is None and end is None
                                                                and not c.table):
                continue
            meta = ident.meta or {}
            if end is not None and (meta.get("line"), meta.get("col")) != end:
                continue
            parts = [p for p in (node_position(self.sql, i) for i in find_all(c, exp.Identifier))
                     if p]
            if parts:
                found.append(min(parts))
        return min(found) if found else None

    def _qualify_error(self, msg: str, schema, node: exp.Expression | None = None) -> Error:
        m = re.search(r"Column '([^']*)' could not be resolved(?: for table: '([^']*)')?"
                      r"(?:.*?Line: (\d+), Col: (\d+))?", msg)
        if m:
            col = m.group(1).replace("\x00", "")
            qualifier = m.group(2)
            end = (int(m.group(3)), int(m.group(4))) if m.group(3) else None
            if qualifier is not None and node is not None:
                # `SELECT y.a FROM t x`: the table or alias y is what does not exist (it said
                # column 'a' does not exist)
                visible = {n.alias_or_name for n in find_all(node, exp.Table, exp.Subquery,
                                                                   exp.CTE)}
                if qualifier not in visible:
                    pos = self._column_at(node, col, qualifier)
                    return positioned(UnknownTableError(
                        f"table or alias '{qualifier}' (in {qualifier}.{col}) is not in the "
                        f"FROM clause{at(pos)}{suggest(qualifier, visible)}"), pos)
            owners = [t for t, cols in schema.items() if col in cols]
            # suggestions in the data's spelling (the keys are lower case)
            spelled = {t: self.keys.get(t, {}) for t in schema}
            if node is not None and "." not in col:  # a table joined to itself: t, t AS u
                aliases = {t.alias_or_name: None for t in find_all(node, exp.Table)
                           if col in schema.get(t.name, {})}
                if len(aliases) > len(owners):
                    owners = list(aliases)
            if len(owners) > 1:
                return AmbiguousColumnError(
                    f"column reference '{col}' is ambiguous: it could be "
                    + " or ".join(f"{t}.{col}" for t in owners))
            cands = [spelled[t].get(c, c) for t, cols in schema.items() for c in cols]
            pos = None
            if end is not None:
                pos = self._column_at(node, col, end=end) or \
                    (end[0], max(1, end[1] - len(col) + 1))
            shown = f"{qualifier}.{col}" if qualifier else col
            cased = sorted({c for c in cands if c.lower() == col.lower() and c != col})
            # (a name quoted in the SQL carries a \x00 mark here: no reference matches it)
            unquoted = node is not None and any(c.name == col
                                                for c in find_all(node, exp.Column))
            if len(cased) > 1 and unquoted:
                return positioned(_case_ambiguity(shown, cased, pos), pos)
            return positioned(UnknownColumnError(
                f"column '{shown}' does not exist{at(pos)}{suggest(col, cands)}"), pos)
        m = re.fullmatch(r"Unknown column: (.*)", msg.split("\n")[0], re.S)
        if m and node is not None:
            # `SELECT t.zz FROM t`: a qualified name its table does not hold (it was a bare
            # BindError "Unknown column: zz", no position, no suggestion)
            col = m.group(1).replace("\x00", "")
            hit = next((c for c in find_all(node, exp.Column)
                        if c.table and c.name.replace("\x00", "") == col), None)
            qualifier = hit.table if hit is not None else None
            pos = self._column_at(node, col, qualifier) if qualifier else None
            real = next((t.name for t in find_all(node, exp.Table)
                         if t.alias_or_name == qualifier), qualifier)
            cands = [self.keys.get(real, {}).get(c, c) for c in schema.get(real, {})]
            shown = f"{qualifier}.{col}" if qualifier else col
            cased = sorted({c for c in cands if c.lower() == col.lower() and c != col})
            if len(cased) > 1 and any(c.table and c.name == col  # (unquoted: see above)
                                      for c in find_all(node, exp.Column)):
                return positioned(_case_ambiguity(shown, cased, pos), pos)
            return positioned(UnknownColumnError(
                f"column '{shown}' does not exist{at(pos)}{suggest(col, cands)}"), pos)
        if "Ambiguous" in msg or "ambiguous" in msg:
            return AmbiguousColumnError(msg.split(". Line")[0].replace("\x00", ""))
        m = re.match(r"Cannot automatically join: (.*)", msg)
        if m:
            col = m.group(1).split("\n")[0].replace("\x00", "")
            return UnknownColumnError(f"column '{col}' of USING is not a column of both sides "
                                      f"of the join")
        if msg.strip() == "Unknown table:" and node is not None and any(
                j.args.get("using") and isinstance(j.this, (exp.Paren, exp.Subquery))
                and not j.this.alias and find(j.this, exp.Join)
                for j in find_all(node, exp.Join)):
            # sqlglot cannot resolve USING against an unaliased parenthesized join
            return UnsupportedError(
                "USING with a parenthesized join on its side (a JOIN (b JOIN c ...) USING (k)) "
                "is not supported; write that side as an aliased subquery: "
                "a JOIN (SELECT * FROM b JOIN c ...) AS x USING (k)")
        if msg.strip() == "Unknown table:" and node is not None and any(
                (j.args.get("using") or j.args.get("method"))
                and (isinstance(j.parent, exp.Table) or j.find_ancestor(exp.Paren) is not None)
                for j in find_all(node, exp.Join)):
            # sqlglot names no table: a USING or NATURAL join inside a parenthesized join
            # on the right of another (`v JOIN (t JOIN u USING (a)) ON ...`)
            return UnsupportedError(
                "a parenthesized join holding a USING or NATURAL join, joined to another table "
                "(a JOIN (b JOIN c USING (k)) ...), is not supported; write it as an aliased "
                "subquery: a JOIN (SELECT * FROM b JOIN c USING (k)) AS x ...")
        m = re.fullmatch(r"Unknown table: (.+)", msg.split("\n")[0].strip())
        if m:  # `SELECT zz.* FROM t`
            name = m.group(1).replace("\x00", "")
            visible = {n.alias_or_name for n in find_all(node, exp.Table, exp.Subquery,
                                                               exp.CTE)} if node else set()
            return UnknownTableError(f"table or alias '{name}' is not in the FROM clause"
                                     f"{suggest(name, visible)}")
        return BindError(msg.split("\n")[0].replace("\x00", ""))

    def _bind_view(self, name: str, view: View) -> LogicalPlan:
        """A view's plan, bound once per statement (each reference re-labels it, as a CTE's).
        A view reached again while it is being bound refers to itself: an error, not an
        endless recursion."""
        hit = self._views.get(name)
        if hit is not None:
            return hit
        if name in self.view_path:
            cycle = " -> ".join([*self.view_path[self.view_path.index(name):], name])
            raise BindError(f"view {name} refers to itself ({cycle})")
        from ..parser import parse

        if view.ast is not None:
            query, text = view.ast.copy(), view.source or ""
        else:
            query, text = parse(view.sql)[0], view.sql
        inner = type(self)(self.catalog, text, view_path=(*self.view_path, name))
        try:
            plan = inner.bind_query(query)
        except Error as e:
            raise _in_view(e, name) from e
        if view.column_names:
            if len(view.column_names) != len(plan.schema):
                raise BindError(f"view {name} names {len(view.column_names)} columns "
                                f"but its query produces {len(plan.schema)}")
            plan = B.project(plan, [(ColumnRef(f), n)
                                    for f, n in zip(plan.schema, view.column_names, strict=True)])
        self._views[name] = plan
        return plan


def _in_view(e: Error, name: str) -> Error:
    """An error binding view `name`'s query (a table it reads changed since), said to be in
    the view: its line and column are in the text that created the view, which a caller
    would read as a place in the statement it ran (the shell drew a caret there)."""
    text = str(e)
    if e.line is not None:
        text = text.replace(f" at line {e.line}, column {e.column}", "", 1)
    out = copy.copy(e)
    out.args = (f"in view {name}: {text}",)
    out.line = out.column = None
    return out


def shown_sql(node: exp.Expression, most: int = 40) -> str:
    """An expression as the user may have written it, for a message: column names without
    the table qualifier and quotes qualification added."""
    def bare(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column) and isinstance(n.this, exp.Identifier):
            return exp.column(exp.to_identifier(n.this.name.replace("\x00", "")))
        return n
    return node.copy().transform(bare).sql(dialect=PQEDialect)[:most]


# ---- rewrites before qualify ---------------------------------------------------------------


def _implicit_laterals(node: exp.Expression) -> None:
    """A subquery in FROM that names a FROM item listed before it (`FROM t, (SELECT ... WHERE
    u.a = t.a) x`) is a LATERAL subquery, as DuckDB reads it (PostgreSQL asks for the
    keyword); qualify read `t.a` as an unqualified `a` and reported it ambiguous. A name the
    subquery defines itself (its own FROM items, at any depth) is its own."""
    for sel in find_all(node, exp.Select):
        from_ = sel.args.get("from_")
        if from_ is None:
            continue
        before = {from_.this.alias_or_name}
        for j in sel.args.get("joins") or ():
            item = j.this
            if isinstance(item, exp.Subquery) and isinstance(item.this, exp.Query) \
                    and item.args.get("alias") is not None:
                own = {s.alias_or_name for s in find_all(item.this, exp.Table, exp.Subquery)}
                if any(c.table in before and c.table not in own
                       for c in find_all(item.this, exp.Column)):
                    alias = item.args["alias"]
                    item.set("alias", None)
                    j.set("this", exp.Lateral(this=item, alias=alias))
            before.add(item.alias_or_name)


def _is_all_keyword(node) -> bool:
    """An unquoted, unqualified `all` where sqlglot saw a column: ORDER BY ALL, LIMIT ALL."""
    return (isinstance(node, exp.Column) and not node.table and isinstance(node.this, exp.Identifier)
            and not node.this.quoted and node.name.lower() == "all")


def _rewrite_all_keywords(node: exp.Expression) -> None:
    """ORDER BY ALL -> a marker the binder expands to every output column; LIMIT ALL -> LIMIT
    NULL (no limit)."""
    for order in list(find_all(node, exp.Order)):
        items = order.expressions
        if len(items) == 1 and isinstance(items[0], exp.Ordered) and _is_all_keyword(items[0].this):
            items[0].set("this", exp.Var(this=ORDER_ALL))
    for limit in list(find_all(node, exp.Limit)):
        if _is_all_keyword(limit.expression):
            limit.set("expression", exp.Null())


def _unwrap_order_group_items(node: exp.Expression) -> None:
    """A parenthesized name or constant as a whole ORDER BY or GROUP BY item is that name or
    constant, as PostgreSQL and DuckDB read it: `ORDER BY (1)` sorts by the first column (it
    was a constant, ignored), `ORDER BY (k)` by the output column k (it took the input column
    k), `GROUP BY (1)` groups by the first column (it was refused, the select list's column
    "not grouped"). A string, NULL or boolean constant as an ORDER BY item of a query sorts
    nothing; PostgreSQL and DuckDB refuse it ("non-integer constant in ORDER BY"), and so
    does pqe (it was accepted and ignored). A window's or an aggregate's ORDER BY is left as
    written: those have no positions, and a constant there is accepted by both."""
    for order in list(find_all(node, exp.Order)):
        if not isinstance(order.parent, (exp.Query, exp.Values)):
            continue
        for o in order.expressions:
            item = _unwrapped(o.this if isinstance(o, exp.Ordered) else o)
            if isinstance(item, (exp.Null, exp.Boolean)) or \
                    (isinstance(item, exp.Literal) and item.is_string):
                raise BindError(f"non-integer constant {item.sql(dialect=PQEDialect)[:40]} in "
                                f"ORDER BY: it does not change the order (write a column, an "
                                f"expression or a select-list position)")
    for group in list(find_all(node, exp.Group)):
        for g in list(group.expressions):
            _unwrapped(g)


def _unwrapped(item: exp.Expression) -> exp.Expression:
    """`item` without the parentheses around it when they hold a name or a constant (the
    unwrapped node takes its place in the tree); other items are returned as they are."""
    inner = item
    while isinstance(inner, exp.Paren):
        inner = inner.this
    bare = inner.this if isinstance(inner, exp.Neg) else inner
    if inner is item or not isinstance(bare, (exp.Column, exp.Literal, exp.Null, exp.Boolean)):
        return item
    item.replace(inner)
    return inner


# meta keys of the marks set before qualify and read after it
_ALIAS_REF = "pqe_alias_ref"
_SELECT_ID = "pqe_select_id"
_USING_REF = "__pqe_using_ref"


def _norm(ident: exp.Identifier) -> str:
    return ident.name if ident.quoted else ident.name.lower()


def own_columns(clause: exp.Expression) -> list[exp.Column]:
    """The unqualified column names in `clause` that belong to its own SELECT (not those of
    a subquery in it)."""
    out = []
    stack = [clause]
    while stack:
        n = stack.pop()
        if n is not clause and isinstance(n, (exp.Query, exp.Subquery)):
            continue
        if isinstance(n, exp.Column):
            if not n.table and isinstance(n.this, exp.Identifier):
                out.append(n)
            continue
        stack.extend(n.iter_expressions())
    return out


def _using_names(sel: exp.Select, schema, ctes: dict) -> set[str] | None:
    """The names (lower case) a SELECT's USING and NATURAL joins merge; None when a NATURAL
    join's columns are not known before qualification."""
    frm = sel.args.get("from_")
    return _merged_names(frm.this if frm is not None else None, sel.args.get("joins") or [],
                         schema, ctes)


def _paren_merged_names(item: exp.Expression, schema, ctes: dict) -> set[str] | None:
    """The names a parenthesized join in FROM (`(t JOIN u USING (a))`, unaliased) merges
    itself (`_using_names`); none for any other FROM item."""
    inner = item.this if isinstance(item, (exp.Subquery, exp.Paren)) else item
    if item.alias or not isinstance(inner, exp.Table):
        return set()
    return _merged_names(inner, inner.args.get("joins") or [], schema, ctes)


def _merged_names(first: exp.Expression | None, joins: list, schema,
                  ctes: dict) -> set[str] | None:
    natural = [j for j in joins if (j.args.get("method") or "").upper() == "NATURAL"]
    if not natural and not any(j.args.get("using") for j in joins):
        return set()
    names: set[str] = set()
    left = [_source_columns(first, schema, ctes)] if first is not None else []
    for j in joins:
        cols = _source_columns(j.this, schema, ctes)
        if j.args.get("using"):
            names |= {i.name.lower() for i in j.args["using"]}
        elif j in natural:
            if cols is None or any(c is None for c in left):
                return None
            names |= cols & set().union(*left)
        left.append(cols)
    return names


def _hide_using_refs(node: exp.Expression, schema) -> list[int]:
    """A USING (or NATURAL) join's merged key named in HAVING, QUALIFY or an ORDER BY
    expression is the merged key, as in WHERE (PostgreSQL, DuckDB). sqlglot merges the key
    (COALESCE(t.k, u.k)) only in the clauses whose names it resolves before the select-list
    aliases; in HAVING and QUALIFY it found the name in two tables and took a select-list
    alias of that name instead (`SELECT v*10 AS k ... JOIN u USING (k) ... HAVING k > 1`
    compared v*10) or refused the name as ambiguous. Each such name is set aside here (a
    placeholder where it stood, a copy in WHERE, where sqlglot merges it) and put back, merged,
    by `_restore_using_refs`."""
    hidden: list[int] = []
    ctes = {c.alias_or_name: c for c in find_all(node, exp.CTE)}
    for sel in list(find_all(node, exp.Select)):
        if not sel.args.get("joins"):
            continue
        names = _using_names(sel, schema, ctes)
        if not names:
            continue
        cols = []
        for key in ("having", "qualify"):
            if sel.args.get(key) is not None:
                cols += own_columns(sel.args[key])
        order = sel.args.get("order")
        for o in order.expressions if order is not None else ():
            item = o.this if isinstance(o, exp.Ordered) else o
            if not isinstance(item, exp.Column):  # (a bare name may be an output column)
                cols += own_columns(item)
        for col in cols:
            if col.name.lower() not in names:
                continue
            n = len(hidden)
            carrier = exp.Anonymous(this=_USING_REF, expressions=[col.copy()])
            carrier.meta[_USING_REF] = n
            col.replace(exp.Var(this=f"{_USING_REF}{n}"))
            where = sel.args.get("where")
            sel.set("where", exp.Where(this=carrier if where is None
                                       else exp.And(this=where.this, expression=carrier)))
            hidden.append(n)
    return hidden


def _restore_using_refs(node: exp.Expression, hidden: list[int]) -> None:
    """The merged keys `_hide_using_refs` set aside, back where they were written, and the
    copies taken out of WHERE."""
    carriers = {c.meta[_USING_REF]: c for c in find_all(node, exp.Anonymous)
                if _USING_REF in c.meta}
    places = {v.name: v for v in find_all(node, exp.Var) if v.name.startswith(_USING_REF)}
    for n in hidden:
        carrier, place = carriers.get(n), places.get(f"{_USING_REF}{n}")
        if carrier is None or place is None:
            raise InternalError("a USING key set aside before qualify was lost")
        place.replace(carrier.expressions[0].copy())
        parent = carrier.parent
        if isinstance(parent, exp.Where):
            parent.pop()
        else:
            parent.replace(parent.this if parent.expression is carrier else parent.expression)


def _expand_constant_alias_refs(node: exp.Expression) -> None:
    """HAVING and QUALIFY naming a select item whose value is a constant (`SELECT 100 AS c
    ... QUALIFY c > 0`): sqlglot's qualify expands aliases of expressions there, not of
    literals (one in GROUP BY would read as a position), and left the bare name, an
    unknown column. After qualify every input column has its table, so a bare name in
    these clauses that a constant item of the same SELECT is aliased to is that constant."""
    for select in find_all(node, exp.Select):
        constants = {item.alias: item.this for item in select.expressions
                     if isinstance(item, exp.Alias) and _is_constant(item.this)}
        if not constants:
            continue
        for key in ("having", "qualify"):
            clause = select.args.get(key)
            if clause is None:
                continue
            for col in list(find_all(clause, exp.Column)):
                if not col.table and col.name in constants \
                        and col.find_ancestor(exp.Select) is select:
                    col.replace(constants[col.name].copy())


def _is_constant(e: exp.Expression) -> bool:
    return not any(isinstance(x, (exp.Column, exp.AggFunc, exp.Window, exp.Subquery,
                                  exp.Select, exp.Star, exp.Placeholder))
                   for x in walk_tree(e)) and not isinstance(e, exp.Anonymous)


def _mark_alias_refs(node: exp.Expression, schema) -> dict[int, tuple[int, str]]:
    """Mark each name in WHERE, GROUP BY, HAVING and QUALIFY that is also an alias of its
    SELECT's select list: sqlglot takes the alias when no input column of that name is found,
    also when two input columns are (`SELECT t.k*10 AS k FROM t JOIN u ON ... WHERE k > 1`
    filtered on t.k*10). `_refuse_ambiguous_alias_refs` looks, after qualify, at the marked
    names that became an alias. USING keys are left alone (merged, they are no alias)."""
    refs: dict[int, tuple[int, str]] = {}
    ctes = {c.alias_or_name: c for c in find_all(node, exp.CTE)}
    for n_sel, sel in enumerate(find_all(node, exp.Select)):
        aliases = {_norm(it.args["alias"]) for it in sel.expressions if isinstance(it, exp.Alias)
                   and isinstance(it.args.get("alias"), exp.Identifier)}
        if not aliases:
            continue
        using = _using_names(sel, schema, ctes) if sel.args.get("joins") else set()
        for key in ("where", "group", "having", "qualify"):
            clause = sel.args.get(key)
            for col in own_columns(clause) if clause is not None else ():
                name = _norm(col.this)
                if name not in aliases or using is None or name.lower() in using:
                    continue
                col.meta[_ALIAS_REF] = len(refs)
                sel.meta[_SELECT_ID] = n_sel
                refs[len(refs)] = (n_sel, name)
    return refs


def _name_values_columns(node: exp.Expression) -> None:
    """A VALUES list in FROM whose alias names fewer columns than it has: the rest are
    col0, col1, ... as a VALUES statement's are (DuckDB's names; sqlglot's qualify made them
    _col_0, _col_1)."""
    for values in find_all(node, exp.Values):
        if not isinstance(values.parent, (exp.From, exp.Join)) or not values.expressions:
            continue
        first = values.expressions[0]
        width = len(first.expressions) if isinstance(first, exp.Tuple) else 1
        alias = values.args.get("alias")
        given = list(alias.columns) if alias is not None else []
        if len(given) >= width:
            continue
        names = given + [exp.to_identifier(f"col{i}") for i in range(len(given), width)]
        if alias is None:
            values.set("alias", exp.TableAlias(columns=names))
        else:
            alias.set("columns", names)


_GROUP_ALIAS_SLOTS = "pqe_group_alias_slots"
_GROUPING_SETS = (exp.Rollup, exp.Cube, exp.GroupingSets)


def _mark_group_alias_slots(node: exp.Expression) -> bool:
    """Note, on its ROLLUP / CUBE / GROUPING SETS (or a tuple in one), where an item names a
    select item's alias (marked by `_mark_alias_refs`): qualify replaces it by a copy of the
    select item's expression, and `_tag_group_alias_items` then marks that copy with the
    alias. True when any was noted."""
    found = False
    for sel in find_all(node, exp.Select):
        group = sel.args.get("group")
        if group is None:
            continue
        for col in own_columns(group):
            parent = col.parent
            if _ALIAS_REF not in col.meta or parent is None or not (
                    isinstance(parent, _GROUPING_SETS) or (
                        isinstance(parent, (exp.Tuple, exp.Paren))
                        and isinstance(parent.parent, _GROUPING_SETS))):
                continue
            if col.arg_key == "expressions" and col.index is not None:
                slot = col.index
            elif col.arg_key == "this" and isinstance(parent, exp.Paren):
                slot = "this"  # GROUPING SETS ((k), ...)
            else:
                continue
            parent.meta.setdefault(_GROUP_ALIAS_SLOTS, {})[slot] = (
                col.meta[_ALIAS_REF], _norm(col.this))
            found = True
    return found


def _tag_group_alias_items(node: exp.Expression) -> None:
    """After qualify: mark each item `_mark_group_alias_slots` noted that became a select
    item's expression with that item's alias (GROUP_ALIAS); one still the column it was (an
    input column of that name wins) is left alone."""
    for parent in find_all(node, *_GROUPING_SETS, exp.Tuple, exp.Paren):
        slots = parent.meta.pop(_GROUP_ALIAS_SLOTS, None)
        if not slots:
            continue
        items = parent.expressions
        for i, (tag, name) in slots.items():
            if i == "this":
                item = parent.this
            elif i < len(items):
                item = items[i]
            else:
                continue
            if not isinstance(item, exp.Expression) or (
                    isinstance(item, exp.Column) and item.meta.get(_ALIAS_REF) == tag):
                continue
            item.meta[GROUP_ALIAS] = name


def _refuse_ambiguous_alias_refs(node: exp.Expression, refs: dict[int, tuple[int, str]],
                                 schema) -> None:
    """A name `_mark_alias_refs` marked that sqlglot replaced by its select-list alias while
    two of the SELECT's tables hold a column of that name: ambiguous, as PostgreSQL and DuckDB
    say (the input columns come first; the alias is never a way out of the ambiguity)."""
    present = {c.meta[_ALIAS_REF] for c in find_all(node, exp.Column) if _ALIAS_REF in c.meta}
    gone = [ref for tag, ref in refs.items() if tag not in present]
    if not gone:
        return
    sels = {s.meta[_SELECT_ID]: s for s in find_all(node, exp.Select) if _SELECT_ID in s.meta}
    ctes = {c.alias_or_name: c for c in find_all(node, exp.CTE)}
    for sel_id, name in gone:
        sel = sels.get(sel_id)
        if sel is None:
            continue
        holders = []
        for item in [sel.args.get("from_"), *(sel.args.get("joins") or [])]:
            if item is None:
                continue
            cols = _qualified_source_columns(item.this, schema, ctes)
            if cols is not None and name in cols:
                holders.append(item.this.alias_or_name)
        if len(holders) > 1:
            raise AmbiguousColumnError(
                f"column reference '{name}' is ambiguous: it could be "
                + " or ".join(f"{h}.{name}" for h in holders))


def _qualified_source_columns(source: exp.Expression, schema, ctes: dict) -> set[str] | None:
    """The column names a FROM item gives after qualification; None when unknown."""
    alias = source.args.get("alias")
    if isinstance(alias, exp.TableAlias) and alias.columns:
        return {_norm(c) for c in alias.columns if isinstance(c, exp.Identifier)}
    if isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
        cte = ctes.get(source.name)
        if cte is not None and isinstance(cte.this, exp.Query):
            return set(cte.this.named_selects)
        return set(schema[source.name]) if source.name in schema else None
    if isinstance(source, exp.Subquery) and isinstance(source.this, exp.Query):
        return set(source.this.named_selects)
    return None


_CHAIN_ARGS = {"this", "expression", "distinct"}


def _chain_link(node: exp.Expression, cls: type, distinct) -> bool:
    return (type(node) is cls and node.args.get("distinct") == distinct
            and all(k in _CHAIN_ARGS for k, v in node.args.items() if v not in (None, False, [])))


def rebalance_chains(root: exp.Expression) -> exp.Expression:
    """Left-deep chains of an associative operator with many operands -> balanced trees of
    the same operands in the same order: UNION [ALL] and INTERSECT [ALL] branches (the
    leftmost branch, which names the columns, stays leftmost), AND and OR terms. The depth
    drops from n to log n: sqlglot's scope analysis walks to the leftmost branch, and to the
    enclosing scope, from every node (quadratic in the depth), and every recursive walk
    after it is shallower. EXCEPT is not associative; it is left alone."""
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, (exp.Union, exp.Intersect, exp.And, exp.Or)):
            cls = type(node)
            distinct = node.args.get("distinct") if isinstance(node, exp.SetOperation) else None
            leaves_rev = [node.expression]
            cur = node.this
            while _chain_link(cur, cls, distinct):
                leaves_rev.append(cur.expression)
                cur = cur.this
            leaves_rev.append(cur)
            leaves = leaves_rev[::-1]
            if len(leaves) >= REBALANCE_BRANCHES:
                mid = len(leaves) // 2
                node.set("this", _balanced(leaves[:mid], cls, distinct))
                node.set("expression", _balanced(leaves[mid:], cls, distinct))
            stack.extend(leaves)
            continue
        stack.extend(node.iter_expressions())
    return root


def _set_operation_branches(root: exp.Expression) -> list[exp.Expression]:
    """The branches of a set operation at the root of a statement without WITH (each a
    query that names only its own tables: qualified one at a time, sqlglot's scope analysis
    stays small; 5,000 UNION ALL branches qualify three times faster). [] otherwise."""
    if not isinstance(root, exp.SetOperation) or root.args.get("with_"):
        return []
    out: list[exp.Expression] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.SetOperation) and (node is root or not any(
                node.args.get(k) for k in ("with_", "order", "limit", "offset"))):
            stack += [node.expression, node.this]
        elif isinstance(node, exp.Subquery) and isinstance(node.this, exp.SetOperation):
            return []  # a parenthesized set operation: qualified whole
        else:
            out.append(node)
    return out


def _balanced(leaves: list[exp.Expression], cls: type, distinct) -> exp.Expression:
    if len(leaves) == 1:
        return leaves[0]
    mid = len(leaves) // 2
    args = {"this": _balanced(leaves[:mid], cls, distinct),
            "expression": _balanced(leaves[mid:], cls, distinct)}
    if issubclass(cls, exp.SetOperation):
        args["distinct"] = distinct
    return cls(**args)


# ---- helpers -------------------------------------------------------------------------------------


def user_function_name(node: exp.Expression, sql: str) -> str | None:
    """A function's name as the user wrote it (sqlglot maps STRING_AGG to GroupConcat and
    records the name token's position), upper-cased; None when it did not record it."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).upper()
    meta = getattr(node, "_meta", None) or {}
    start, end = meta.get("start"), meta.get("end")
    if sql and start is not None and end is not None and 0 <= start <= end < len(sql):
        text = sql[start:end + 1]
        if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", text):
            return text.upper()
    return None


def _looks_like_path(name: str) -> bool:
    low = name.lower()
    return ("/" in name or "*" in name or "://" in name
            or low.endswith((".parquet", ".csv", ".csv.gz", ".tsv", ".pq")))


def _derived_tables(root: exp.Expression) -> list[exp.Expression]:
    """The derived tables of a statement: subqueries in FROM / JOIN and CTEs."""
    return [n for n in find_all(root, exp.Subquery, exp.CTE)
            if isinstance(n, exp.CTE) or isinstance(n.parent, (exp.From, exp.Join))]


def _may_repeat(node: exp.Expression) -> bool:
    """Whether a derived table's columns may repeat a name: its query has a `*` to expand,
    or names a column twice (in any case), before qualification."""
    body = node.this
    if not isinstance(body, exp.Query):
        return True
    cols, inner = node.alias_column_names, body.named_selects
    names = [n.lower() for n in (*cols, *inner[len(cols):])]
    return any(n in ("*", "") for n in names) or len(set(names)) < len(names)


def _derived_names(node: exp.Expression) -> list[str] | None:
    """The column names a (qualified) derived table exposes, None while its query still has
    an unexpanded `*` (or is not a query)."""
    body = node.this
    if not isinstance(body, exp.Query):
        return None
    inner = body.named_selects
    if any(n in ("*", "") for n in inner):
        return None
    cols = node.alias_column_names
    if len(cols) > len(inner):
        return None  # refused with its message when bound
    return [*cols, *inner[len(cols):]]


def unique_names(names: list[str]) -> list[str]:
    """Repeated column names made unique the way DuckDB names a subquery's columns: the
    second `a` becomes a_1, the third a_2, skipping names already taken (a, a, a_1, a ->
    a, a_1, a_1_1, a_2). Names that differ only in case are different names here: pqe's
    quoted names are exact."""
    count: dict[str, int] = {}
    out = []
    for n in names:
        if n not in count:
            count[n] = 1
            out.append(n)
            continue
        new = f"{n}_{count[n]}"
        while new in count:
            count[n] += 1
            new = f"{n}_{count[n]}"
        count[new] = 1
        out.append(new)
    return out


def _case_ambiguity(shown: str, cased: list[str], pos) -> AmbiguousColumnError:
    """Columns that differ only by case: an unquoted name, which ignores case, names no one
    of them (it said "does not exist (did you mean 'aB'?)")."""
    return AmbiguousColumnError(
        f"column '{shown}' is ambiguous{at(pos)}: unquoted names ignore case, and the columns "
        + ", ".join(f'"{c}"' for c in cased) + " differ only by case; quote the one you mean")


def relation_keys(names: list[str]) -> list[str]:
    """The names sqlglot and the binder's scope know a table's or view's columns by: a
    repeated name made unique (`unique_names`), then `column_keys`."""
    return column_keys(unique_names(names))


def column_keys(names: list[str]) -> list[str]:
    """The names sqlglot sees: lower case unless two columns differ only by case."""
    lowered = [n.lower() for n in names]
    counts: dict[str, int] = {}
    for n in lowered:
        counts[n] = counts.get(n, 0) + 1
    return [lo if counts[lo] == 1 else n for n, lo in zip(names, lowered, strict=True)]


def name_unaliased_projections(node: exp.Expression) -> None:
    """Give unaliased select expressions their SQL text as name (as DuckDB does), before
    qualify would name them _col_N."""
    for sel in find_all(node, exp.Select):
        new = []
        changed = False
        for i, e in enumerate(sel.expressions):
            if isinstance(e, exp.Column) and isinstance(e.this, exp.Identifier) and e.this.quoted:
                # a quoted name is exact: it names the output column as written
                new.append(exp.alias_(e, exp.to_identifier(e.this.name, quoted=True), copy=False))
                changed = True
                continue
            if isinstance(e, (exp.Alias, exp.Column, exp.Star)):
                new.append(e)
                continue
            name = e.sql(dialect=PQEDialect, normalize_functions="lower",
                         comments=False)  # (a comment is no part of the name)
            if len(name) > 64:
                # the name qualify would give it, as an Alias: qualify names a subquery by
                # setting its own alias, which its ORDER BY 2 then rejects with an assertion
                new.append(exp.Alias(this=e, alias=exp.to_identifier(f"_col_{i}")))
                changed = True
                continue
            # (exp.alias_ would put the name on a Subquery itself; qualify needs an Alias)
            new.append(exp.Alias(this=e, alias=exp.to_identifier(name, quoted=True)))
            changed = True
        if changed:
            sel.set("expressions", new)


def _refuse_ambiguous_outer_columns(bare: list[exp.Column], schema) -> None:
    """A bare column of a subquery that two of the subquery's own tables hold is ambiguous
    there (DuckDB: an error); sqlglot resolves it in an outer query instead, so `EXISTS
    (SELECT 1 FROM s, s s2 WHERE x = 5)` read the outer x and DELETE removed rows. (Each
    such column's own SELECT is looked at; sqlglot's scopes cost a tenth of binding.)"""
    for col in bare:  # (the columns written without a table, qualified since)
        if not col.table:
            continue
        sel = col.find_ancestor(exp.Select)
        if sel is None:
            continue
        sources = {}
        for item in [sel.args.get("from_"), *(sel.args.get("joins") or [])]:
            if item is not None:
                sources[item.this.alias_or_name] = item.this
        if col.table in sources:
            continue
        holders = []
        for alias, source in sources.items():
            if isinstance(source, exp.Table):
                names = schema.get(source.name, {})
            elif isinstance(source, exp.Subquery) and isinstance(source.this, exp.Query):
                names = source.this.named_selects
            else:
                continue
            if col.name in names:
                holders.append(alias)
        if len(holders) > 1:
            raise AmbiguousColumnError(
                f"column reference '{col.name}' is ambiguous: it could be "
                + " or ".join(f"{h}.{col.name}" for h in holders))


Pairs = list[tuple[str, str]]  # a FROM item's columns in order: (name as spelled, key)


def _source_columns(source: exp.Expression, schema, ctes: dict) -> set[str] | None:
    """The column names (lower case) a FROM item gives, when known before qualification
    (`_source_pairs`); None when unknown."""
    pairs = _source_pairs(source, {t: {k: k for k in cols} for t, cols in schema.items()}, ctes)
    return None if pairs is None else {name.lower() for name, _ in pairs}


def _source_pairs(source: exp.Expression, tables, ctes: dict, depth: int = 0) -> Pairs | None:
    """The columns a FROM item gives, when known before qualification, in order, as (name,
    key) pairs: its name as spelled (a table's column as the data spells it; a name the query
    gives quoted as written, unquoted folded) and the key sqlglot knows it by. A table's, a
    WITH query's, a derived table's (a select list, its stars expanded from their own FROM
    items), a LATERAL's, a VALUES list's, a parenthesized join's; a column list renames the
    first columns, then a derived table's repeated names are made unique (a, a_1) as
    `_qualify_one` makes them. None when unknown. `tables` maps each table to its columns,
    key -> name. A `SELECT *` subquery was unknown, and the checks that use this were skipped
    for it: a USING key two tables held, a star over a USING join next to such a subquery
    (both gave wrong answers, hunt "names")."""
    if depth > 32:
        return None
    alias = source.args.get("alias")
    given = [_spelled(c) for c in alias.columns if isinstance(c, exp.Identifier)] \
        if isinstance(alias, exp.TableAlias) else []
    pairs: Pairs | None = None
    derived = False
    if isinstance(source, exp.Values) and source.expressions:
        row = source.expressions[0]
        width = len(row.expressions) if isinstance(row, exp.Tuple) else 1
        pairs = [(f"col{i}",) * 2 for i in range(width)]  # (_name_values_columns)
    elif isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier):
        cte = ctes.get(source.name)
        if cte is not None and _sees_cte(source, source.name):
            rest = {k: v for k, v in ctes.items() if k != source.name}  # (a recursive one)
            pairs, derived = _query_pairs(cte.this, tables, rest, depth + 1)
            cte_alias = cte.args.get("alias")
            if isinstance(cte_alias, exp.TableAlias) and cte_alias.columns:
                pairs = _renamed_pairs(pairs, [_spelled(c) for c in cte_alias.columns
                                               if isinstance(c, exp.Identifier)])
            if derived:
                pairs = _unique_pairs(pairs)
        else:
            cols = tables.get(source.name)
            pairs = None if cols is None else [(name, key) for key, name in cols.items()]
    elif isinstance(source, (exp.Subquery, exp.Lateral, exp.Paren)):
        pairs, derived = _query_pairs(source.this, tables, ctes, depth + 1)
    if given:
        pairs = _renamed_pairs(pairs, given)
    return _unique_pairs(pairs) if derived or given else pairs


def _renamed_pairs(pairs: Pairs | None, names: list[str]) -> Pairs | None:
    """A column list's names over the first columns (unknown columns: only the names)."""
    if pairs is None:
        return [(n, n) for n in names]
    return [(n, n) for n in names] + pairs[len(names):]


def _unique_pairs(pairs: Pairs | None) -> Pairs | None:
    """A derived table's repeated names made unique (a, a_1), as `_qualify_one` does."""
    if pairs is None:
        return None
    keys = unique_names([k for _, k in pairs])
    return [(n if k == k2 else k2, k2) for (n, k), k2 in zip(pairs, keys, strict=True)]


def _query_pairs(query, tables, ctes: dict, depth: int) -> tuple[Pairs | None, bool]:
    """A query's columns (`_source_pairs`), and whether it is a query (a derived table's
    names are made unique) rather than a parenthesized join (whose are not)."""
    while isinstance(query, (exp.Union, exp.Intersect, exp.Except, exp.Subquery)):
        query = query.this  # (a set operation's columns are named by its first query)
    if isinstance(query, exp.Select):
        return _select_pairs(query, tables, ctes, depth + 1), True
    if isinstance(query, exp.Table) and query.args.get("joins"):  # (a JOIN b ...)
        items = [query, *(j.this for j in query.args["joins"])]
        return _joined_pairs(items, _merged_names(query, query.args["joins"],
                                                  _key_schema(tables), ctes),
                             [], tables, ctes, depth), False
    return None, False


def _key_schema(tables) -> dict:
    """`tables` (table -> key -> name) as the schema `_source_columns` reads."""
    return {t: dict.fromkeys(cols) for t, cols in tables.items()}


def _joined_pairs(items: list[exp.Expression], merged: set[str] | None, excluded: list,
                  tables, ctes: dict, depth: int) -> Pairs | None:
    """The columns of joined FROM items in order, each merged USING/NATURAL key once (None
    when those keys are unknown), less a star's EXCLUDE list (`EXCLUDE (u.a)` excludes u's a
    only)."""
    if merged is None:
        return None
    out: Pairs = []
    seen: set[str] = set()
    for item in items:
        got = _source_pairs(item, tables, ctes, depth + 1)
        if got is None:
            return None
        for x in excluded:
            ident = x.this if isinstance(x, exp.Column) else x
            if not isinstance(ident, exp.Identifier) or (
                    isinstance(x, exp.Column) and x.table
                    and x.table.lower() != item.alias_or_name.lower()):
                continue
            gone = _matching_keys(ident, got)
            got = [p for p in got if p[1] not in gone]
        for name, key in got:
            if key.lower() in merged:
                if key.lower() in seen:
                    continue  # (a merged key: once)
                seen.add(key.lower())
            out.append((name, key))
    return out


def _spelled(ident: exp.Identifier) -> str:
    """A name the query gives, as qualify will know it: quoted exact, unquoted folded."""
    return ident.name if ident.quoted else ident.name.lower()


def _star_items(query: exp.Select, star_column: exp.Column | None) -> list[exp.Expression]:
    """The FROM items a SELECT's star (`*`, or `t.*` as a Column) expands."""
    frm = query.args.get("from_") or query.args.get("from")
    items = ([frm.this] if frm is not None else []) + \
        [j.this for j in query.args.get("joins") or []]
    if star_column is not None and star_column.table:
        items = [i for i in items if i.alias_or_name.lower() == star_column.table.lower()]
    return items


def _select_pairs(query: exp.Select, tables, ctes: dict, depth: int) -> Pairs | None:
    """The output columns of a SELECT (see `_source_pairs`); None when a star's FROM item is
    unknown. A star over USING or NATURAL joins gives each merged key once."""
    out: Pairs = []
    for i, e in enumerate(query.expressions):
        column = e if isinstance(e, exp.Column) and isinstance(e.this, exp.Star) else None
        star = e if isinstance(e, exp.Star) else column.this if column is not None else None
        if star is None:
            ident = e.args.get("alias") if isinstance(e, exp.Alias) else \
                e.this if isinstance(e, exp.Column) else None
            if isinstance(ident, exp.TableAlias):
                ident = ident.this
            if isinstance(ident, exp.Identifier):
                out.append((_spelled(ident),) * 2)
            else:  # (named by `name_unaliased_projections`)
                name = e.sql(dialect=PQEDialect, normalize_functions="lower", comments=False)
                out.append((name if len(name) <= 64 else f"_col_{i}",) * 2)
            continue
        if star.args.get("rename") or star.args.get("ilike"):
            return None
        items = _star_items(query, column)
        if not items:
            return None
        merged = _using_names(query, _key_schema(tables), ctes) if column is None else set()
        got = _joined_pairs(items, merged, list(star.args.get("except_") or []), tables,
                            ctes, depth)
        if got is None:
            return None
        out += got
    return out


def _matching_keys(ident: exp.Identifier, pairs: Pairs) -> set[str]:
    """The keys of the columns among `pairs` a name in a star's EXCLUDE/REPLACE names: a
    quoted one exactly; an unquoted one as a column reference binds it, its lower-case
    spelling if a column has it (of columns x and X, `x` is x), else ignoring case."""
    if ident.quoted:
        return {k for n, k in pairs if n == ident.name}
    folded = ident.name.lower()
    exact = {k for n, k in pairs if n == folded}
    return exact or {k for n, k in pairs if n.lower() == folded}


def _wrap_ordered_subqueries(node: exp.Expression) -> None:
    """`((SELECT ...) ORDER BY k LIMIT n)` inside an expression (IN, a scalar subquery) as
    `(SELECT * FROM (SELECT ...) ORDER BY k LIMIT n)`: sqlglot hangs the ORDER BY on the
    parenthesized query, whose keys were then resolved in the outer query (an InternalError,
    or 'column g does not exist'). In FROM the binder reads that form itself."""
    for sub in list(find_all(node, exp.Subquery)):
        if sub.parent is None or isinstance(sub.parent, (exp.From, exp.Join)) or not any(
                sub.args.get(k) for k in ("order", "limit", "offset")) or not isinstance(
                sub.this, (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery)):
            continue
        inner = exp.Subquery(this=sub.this.copy(),
                             alias=exp.TableAlias(this=exp.to_identifier("__pqe_ordered")))
        query = exp.select("*").from_(inner)
        for k in ("order", "limit", "offset"):
            if sub.args.get(k) is not None:
                query.set(k, sub.args[k].copy())
        sub.replace(exp.Subquery(this=query) if not isinstance(sub.parent, exp.Subquery)
                    else query)


def _resolve_star_modifiers(node: exp.Expression, schema, tables) -> None:
    """Each name in a star's `EXCLUDE (c)` / `REPLACE (e AS c)` set to the key sqlglot knows
    the column it names by, in the star's own FROM items (`_source_pairs`): sqlglot's
    expansion matches keys and ignored a name it did not find. A quoted name matches exactly,
    an unquoted one ignoring case; a replaced column keeps the name the data (or the query)
    spells it with. Errors, as in DuckDB: a name the star does not hold, or one twice.
    Refused: REPLACE of a USING or NATURAL join's merged key (the expansion kept the key);
    a star over a FROM item whose columns are not known before planning.

    Found by the hunt "names": `REPLACE (0 AS "A")` over a column A, or over a derived
    column "A" while a table held a column A, and `EXCLUDE ("A")` over a derived column "A"
    were all accepted and did nothing; `EXCLUDE ("a")` over a column A too, but should fail."""
    ctes = {c.alias_or_name: c for c in find_all(node, exp.CTE)}
    for star in find_all(node, exp.Star):
        excluded = list(star.args.get("except_") or [])
        replaced = list(star.args.get("replace") or [])
        if not excluded and not replaced:
            continue
        idents = [e.this if isinstance(e, exp.Column) else e for e in excluded] + \
            [r.args.get("alias") for r in replaced]
        if not all(isinstance(i, exp.Identifier) for i in idents):
            raise UnsupportedError(f"{shown_sql(star)}: only column names are supported in a "
                                   f"star's EXCLUDE and REPLACE")
        names = [_norm(i) for i in idents]
        twice = next((n for n in names if names.count(n) > 1), None)
        if twice is not None:
            raise BindError(f"column '{twice}' appears twice in the star's EXCLUDE/REPLACE list")
        sel = star.find_ancestor(exp.Select)
        if sel is None:
            continue
        column = star.parent if isinstance(star.parent, exp.Column) else None
        items = _star_items(sel, column)
        if replaced and not (column is not None and column.table):
            using = _using_names(sel, schema, ctes)
            for item in items:  # (a parenthesized join's own merged keys too)
                paren = _paren_merged_names(item, schema, ctes)
                using = None if using is None or paren is None else using | paren
            if using is None:
                raise UnsupportedError("* REPLACE over a NATURAL join whose columns are not "
                                       "known before planning is not supported: list the "
                                       "columns")
            hit = sorted(using & {_norm(r.args["alias"]).lower() for r in replaced})
            if hit:
                raise UnsupportedError(
                    f"* REPLACE of the USING or NATURAL join key '{hit[0]}' is not supported: "
                    f"write SELECT <expression> AS {hit[0]}, * EXCLUDE ({hit[0]})")
        per_item: list[Pairs] = []
        for item in items:
            got = _source_pairs(item, tables, ctes)
            if got is None:  # (sqlglot's expansion ignored a name it did not find)
                raise UnsupportedError(
                    f"* EXCLUDE/REPLACE over {shown_sql(item)}, whose columns are not known "
                    f"before planning, is not supported: list the columns")
            per_item.append(got)
        pairs = [p for got in per_item for p in got]
        new_excluded: list[exp.Expression] = []
        for e, ident in zip(excluded, idents, strict=False):
            keys = _matching_keys(ident, pairs if not (isinstance(e, exp.Column) and e.table)
                                  else [p for item, got in zip(items, per_item, strict=True)
                                        if item.alias_or_name.lower() == e.table.lower()
                                        for p in got])
            if not keys or (isinstance(e, exp.Column) and e.table and not any(
                    i.alias_or_name.lower() == e.table.lower() for i in items)):
                raise BindError(f"column '{e.sql(dialect=PQEDialect)}' in EXCLUDE is not a "
                                f"column of the star")
            for key in sorted(keys):
                marked = exp.to_identifier(key, quoted=True)
                marked.meta[STAR_KEY] = True
                new_excluded.append(exp.Column(this=marked, table=e.args.get("table")) if
                                    isinstance(e, exp.Column) else marked)
        new_replaced: list[exp.Expression] = []
        for r in replaced:
            ident = r.args["alias"]
            keys = _matching_keys(ident, pairs)
            if not keys:
                raise BindError(f"column '{ident.sql(dialect=PQEDialect)}' in REPLACE is not a "
                                f"column of the star")
            if sum(1 for _, k in pairs if k in keys) > 1:
                # (each table's column was replaced; DuckDB kept one column of the name)
                raise AmbiguousColumnError(
                    f"column '{ident.sql(dialect=PQEDialect)}' in REPLACE is ambiguous: more "
                    f"than one column of the star has that name; qualify the star (t.* "
                    f"REPLACE (...))")
            for key in sorted(keys):
                copy = r.copy()
                marked = exp.to_identifier(key, quoted=True)
                marked.meta[STAR_KEY] = True
                copy.set("alias", marked)
                # named as the column it replaces is spelled (`REPLACE (0 AS A)` over a
                # column A gave a column a)
                copy.meta[SHOWN_NAME] = next(n for n, k in sorted(pairs) if k == key)
                new_replaced.append(copy)
        if excluded:
            star.set("except_", new_excluded)
        if replaced:
            star.set("replace", new_replaced)


def _refuse_using_shapes(node: exp.Expression, schema) -> None:
    """USING and NATURAL joins where sqlglot's expansion of them gives another answer than
    SQL's, refused by name (found by the SQL hunt):

    - after a comma: `c, a JOIN b USING (k)` is `c, (a JOIN b USING (k))`, but the key was
      taken from the first table holding k, c (rows of a paired with b's by c.k);
    - a key two tables of its left side hold (`c CROSS JOIN a JOIN b USING (k)`: ambiguous,
      PostgreSQL and DuckDB refuse it; c.k was taken);
    - after a RIGHT or FULL USING join: the next key is the merged COALESCE(a.k, b.k), but a.k
      was compared (and the outer join then turned inner);
    - `SELECT *` over a USING join followed by a join of another table holding the key's
      name: that table's column was left out of the star."""
    if not any(j.args.get("using") or j.args.get("method") for j in find_all(node, exp.Join)):
        return
    for inner in find_all(node, exp.Table):
        # a parenthesized join holding a RIGHT or FULL USING join, itself joined on: the
        # outer join read a.k for the merged key, as above (the check below sees only a
        # SELECT's own joins)
        outer_using = any((j.args.get("side") or "").upper() in ("RIGHT", "FULL")
                          and (j.args.get("using") or j.args.get("method"))
                          for j in inner.args.get("joins") or [])
        if not outer_using:
            continue
        holder = inner.parent.parent if isinstance(inner.parent, exp.Subquery) else inner.parent
        if isinstance(holder, exp.Join) or isinstance(holder, exp.From) and isinstance(
                holder.parent, exp.Select) and holder.parent.args.get("joins"):
            raise UnsupportedError("a parenthesized RIGHT or FULL USING join joined to another "
                                   "table is not supported: write JOIN ... ON with COALESCE "
                                   "of the keys")
    ctes = {c.alias_or_name: c for c in find_all(node, exp.CTE)}
    for sel in find_all(node, exp.Select):
        joins = sel.args.get("joins") or []
        using_joins = [j for j in joins if j.args.get("using")
                       or (j.args.get("method") or "").upper() == "NATURAL"]
        if not using_joins:
            continue
        star = any(isinstance(e, exp.Star) for e in sel.expressions)
        left: list[set[str] | None] = []
        frm = sel.args.get("from_") or sel.args.get("from")
        keys: set[str] = set()
        natural = outer = False
        if frm is not None:
            left.append(_source_columns(frm.this, schema, ctes))
            # a parenthesized join's own USING keys (`(t JOIN u USING (a)) JOIN t t2 USING
            # (b)`: t2.a was left out of the star, as without the parentheses)
            paren = _paren_merged_names(frm.this, schema, ctes)
            if paren is None:
                natural = True  # (a NATURAL join's keys unknown: any later join refused)
            else:
                keys |= paren
        for j in joins:
            cols = _source_columns(j.this, schema, ctes)
            if j in using_joins:
                names = {i.name.lower() for i in j.args.get("using") or []}
                if any(not any(k.args.get(a) for a in ("on", "using", "method", "side", "kind"))
                       for k in joins[:joins.index(j)]):
                    raise UnsupportedError("a USING or NATURAL join after a comma in FROM is "
                                           "not supported: write the joins with JOIN ... ON")
                if outer:
                    raise UnsupportedError("a USING or NATURAL join after a RIGHT or FULL USING "
                                           "join is not supported: write JOIN ... ON with "
                                           "COALESCE of the keys")
                shared = names
                if not names:  # NATURAL: the names both sides hold
                    shared = cols & set().union(*(c for c in left if c is not None)) \
                        if cols is not None else set()
                if len(left) > 1 and (cols is None and not names or None in left):
                    # (the check below cannot see them: a NATURAL join on a duplicated left
                    # name joined on one of the copies)
                    raise UnsupportedError(
                        "a USING or NATURAL join whose left side joins a FROM item whose "
                        "columns are not known before planning is not supported: write "
                        "JOIN ... ON")
                if star and cols is not None and (natural or cols & (keys - shared)):
                    # (`t JOIN u USING (a) JOIN t t2 USING (b)`: t2.a was taken for the merged
                    # a and left out of the star)
                    raise UnsupportedError(
                        "SELECT * over a USING or NATURAL join followed by another join of a "
                        "table holding a column of the same name is not supported: list the "
                        "columns")
                for name in shared - keys:
                    holders = [c for c in left if c is not None and name in c]
                    if len(holders) > 1:
                        kind = "USING" if names else "NATURAL join"
                        raise AmbiguousColumnError(f"{kind} column '{name}' is ambiguous: more "
                                                   f"than one table on its left holds it")
                keys |= shared
                natural = natural or not names and (cols is None or None in left)
                outer = (j.args.get("side") or "").upper() in ("RIGHT", "FULL")
            elif star and cols is not None and (natural or cols & keys):
                raise UnsupportedError("SELECT * over a USING or NATURAL join followed by "
                                       "another join of a table holding a column of the same "
                                       "name is not supported: list the columns")
            left.append(cols)


def _check_positions(node: exp.Expression, sql: str = "") -> None:
    """ORDER BY / GROUP BY positions in range, before sqlglot expands them: it indexed the
    select list as Python does, so ORDER BY 0 sorted by the last column and -1 by the one
    before it; ORDER BY 1.5 was accepted and ignored (PostgreSQL and DuckDB refuse them)."""
    def width(q: exp.Expression) -> tuple[int, bool]:
        while isinstance(q, (exp.Union, exp.Intersect, exp.Except)):
            q = q.this
        while isinstance(q, exp.Subquery):
            q = q.this
        if not isinstance(q, exp.Select):
            return 0, True
        star = any(isinstance(e, exp.Star) or isinstance(e.this, exp.Star)
                   for e in q.expressions if isinstance(e, (exp.Star, exp.Column)))
        return len(q.expressions), star

    def check(e: exp.Expression, word: str, n: int, star: bool) -> None:
        neg = isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string
        if neg or (isinstance(e, exp.Literal) and not e.is_string):
            text = ("-" if neg else "") + (e.this.this if neg else e.this)
            pos = node_position(sql, e) if sql else None
            if not text.isdigit():
                raise positioned(BindError(f"{word} position {text} is not a position in the "
                                           f"select list (a positive integer){at(pos)}"), pos)
            if int(text) < 1 or (not star and int(text) > n):
                raise positioned(BindError(f"{word} position {text} is not in the select list"
                                           f"{at(pos)}"), pos)

    for q in find_all(node, exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery,
                           exp.CTE):
        if isinstance(q, (exp.Subquery, exp.CTE)):
            alias = q.args.get("alias")
            if alias is not None and alias.columns:
                n, star = width(q.this)
                if not star and len(alias.columns) > n:
                    raise BindError(f"{alias.name or 'the subquery'} names {len(alias.columns)} "
                                    f"columns, its query has {n}")
            continue
        order = q.args.get("order")
        group = q.args.get("group") if isinstance(q, exp.Select) else None
        if order is not None or group is not None:
            n, star = width(q)
            for o in order.expressions if order is not None else ():
                check(o.this if isinstance(o, exp.Ordered) else o, "ORDER BY", n, star)
            for g in group.expressions if group is not None else ():
                check(g, "GROUP BY", n, star)
        joins = q.args.get("joins") if isinstance(q, exp.Select) else None
        if not joins:
            continue
        seen: set[str] = set()
        for src in [x.this for x in [q.args.get("from_"), *joins] if x is not None]:
            alias = src.args.get("alias") if isinstance(src, (exp.Table, exp.Subquery)) else None
            ident = alias.this if alias is not None else (
                src.this if isinstance(src, exp.Table) else None)
            if not isinstance(ident, exp.Identifier):
                continue
            name = ident.name if ident.quoted else ident.name.lower()
            if name in seen:  # FROM t, t: which t a column names was never asked
                raise BindError(f"table name '{ident.name}' is specified more than once in "
                                f"FROM; give one of them an alias")
            seen.add(name)


def _sees_cte(table: exp.Table, name: str) -> bool:
    """Whether a WITH query named `name` is in scope where `table` stands: the main query of
    a WITH sees all of its queries, a query of a (non-recursive) WITH only the ones before it.
    `WITH t AS (SELECT * FROM t WHERE ...)` reads the table t (it failed: t was taken for the
    WITH query itself, which has not been defined there)."""
    child, parent = table, table.parent
    while parent is not None:
        if isinstance(parent, exp.With) and isinstance(child, exp.CTE):
            ctes = parent.expressions
            visible = ctes if parent.args.get("recursive") else ctes[:ctes.index(child)]
            if any(c.alias_or_name == name for c in visible):
                return True
        elif isinstance(parent, exp.Query) and parent.args.get("with_") is not None \
                and child is not parent.args.get("with_"):
            if any(c.alias_or_name == name for c in parent.args["with_"].expressions):
                return True
        child, parent = parent, parent.parent
    return False


def _fold_cte_names(node: exp.Expression) -> None:
    """Unquoted WITH query names, and unquoted table names meaning one, in lower case: an
    unquoted name is case-insensitive (`WITH foo AS (...) SELECT * FROM FOO` failed: 'FOO'
    does not exist); a quoted one stays exact."""
    folded = set()
    for cte in find_all(node, exp.CTE):
        alias = cte.args.get("alias")
        ident = alias.this if alias is not None else None
        if isinstance(ident, exp.Identifier) and not ident.quoted:
            ident.set("this", ident.name.lower())
            folded.add(ident.name)
    if not folded:
        return
    for table in find_all(node, exp.Table):
        ident = table.this
        if isinstance(ident, exp.Identifier) and not ident.quoted and not table.args.get("db") \
                and ident.name.lower() in folded:
            ident.set("this", ident.name.lower())

