"""Bind sqlglot ASTs to pqe logical plans.

sqlglot does what it does well first: `qualify` resolves every column to its table alias,
expands `*`, pushes derived-table column aliases inward and expands GROUP BY ordinals and
alias references. The binder then walks the qualified AST and builds the plan through
`pqe.plan.builder`, the same builder the DataFrame API uses.

Subqueries become `SubqueryExpr` nodes (with `OuterRef`s for correlated columns); the
decorrelation rule turns them into semi/anti/left joins. sqlglot's own `unnest_subqueries` is
not used: it rewrites EXISTS into LEFT JOIN + IS NULL and non-equality correlation into
ARRAY_AGG/ARRAY_ANY, which loses the semi/anti joins and NOT IN's NULL semantics pqe needs.
"""

from __future__ import annotations

import datetime
import decimal
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pyarrow as pa
from sqlglot import exp
from sqlglot.errors import OptimizeError
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from .. import types as T
from ..catalog import Catalog, CatalogSnapshot, TableProvider
from ..errors import (AggregateMisuseError, AmbiguousColumnError, BindError, Error,
                      ExecutionError, TypeMismatchError, UnknownColumnError, UnknownTableError,
                      UnsupportedError, suggest)
from ..plan import builder as B
from ..plan.expr import (AggCall, ColumnRef, Expr, Field, Frame, FrameBound, Literal, OuterRef,
                         SortKey, SubqueryExpr, WindowCall, column_ids, lit, transform)
from ..plan.logical import (LogicalPlan, Project, RecursiveQuery, Window, WorkTable,
                            map_expressions, transform_up, walk_plan)
from .parser import PQEDialect, node_position


@dataclass
class View:
    """A named query stored in the catalog; bound afresh at each use."""

    sql: str
    column_names: tuple[str, ...] | None = None


class Scope:
    """Names visible while binding one SELECT: table alias -> column name -> field."""

    def __init__(self, parent: Scope | None = None):
        self.parent = parent
        self.tables: dict[str, dict[str, list[Field]]] = {}

    def add(self, alias: str, fields: list[tuple[str, Field]]) -> None:
        cols: dict[str, list[Field]] = {}
        for name, f in fields:
            cols.setdefault(name, []).append(f)
        self.tables[alias] = cols

    def refresh(self, fields: tuple[Field, ...]) -> None:
        """Take the given versions of known columns (an outer join makes a side nullable)."""
        by_id = {f.id: f for f in fields}
        for cols in self.tables.values():
            for name, fs in cols.items():
                cols[name] = [by_id.get(f.id, f) for f in fs]

    def lookup(self, table: str | None, column: str) -> Expr | None:
        scope, depth = self, 0
        while scope is not None:
            hit = scope._find(table, column)
            if hit is not None:
                return ColumnRef(hit) if depth == 0 else OuterRef(hit)
            scope, depth = scope.parent, depth + 1
        return None

    def _find(self, table: str | None, column: str) -> Field | None:
        if table is not None:
            cols = self.tables.get(table)
            if cols is None or column not in cols:
                return None
            hits = cols[column]
        else:
            hits = [f for cols in self.tables.values() for f in cols.get(column, [])]
        if len(hits) > 1:
            where = f"{table}." if table else ""
            raise AmbiguousColumnError(f"column reference '{where}{column}' is ambiguous")
        return hits[0] if hits else None

    def all_names(self) -> list[str]:
        out = []
        scope = self
        while scope is not None:
            for alias, cols in scope.tables.items():
                out += list(cols) + [f"{alias}.{c}" for c in cols]
            scope = scope.parent
        return out


@dataclass
class _AggContext:
    """State for binding expressions above an Aggregate (SELECT, HAVING, ORDER BY)."""

    from_scope: Scope
    groups: list[tuple[Expr, Field]]
    aggs: list[tuple[AggCall, Field]]
    grouping_id: Field | None = None
    by_node: dict[int, Field] = field(default_factory=dict)  # id(aggregate AST node) -> column


_NEGATED_COMPARISON = {"eq": "ne", "ne": "eq", "lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}

_INTERVAL_UNITS = {
    "year": (12, 0, 0), "years": (12, 0, 0), "quarter": (3, 0, 0), "quarters": (3, 0, 0),
    "month": (1, 0, 0), "months": (1, 0, 0), "mon": (1, 0, 0), "mons": (1, 0, 0),
    "week": (0, 7, 0), "weeks": (0, 7, 0), "day": (0, 1, 0), "days": (0, 1, 0),
    "hour": (0, 0, 3600 * 10**9), "hours": (0, 0, 3600 * 10**9),
    "minute": (0, 0, 60 * 10**9), "minutes": (0, 0, 60 * 10**9),
    "second": (0, 0, 10**9), "seconds": (0, 0, 10**9),
    "millisecond": (0, 0, 10**6), "milliseconds": (0, 0, 10**6),
    "microsecond": (0, 0, 10**3), "microseconds": (0, 0, 10**3),
}

_BINARY = {
    exp.Add: "add", exp.Sub: "subtract", exp.Mul: "multiply", exp.Div: "divide",
    exp.Mod: "modulo", exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le",
    exp.GT: "gt", exp.GTE: "ge", exp.And: "and", exp.Or: "or",
    exp.NullSafeEQ: "is_not_distinct_from", exp.NullSafeNEQ: "is_distinct_from",
    exp.DPipe: "concat",
}

# sqlglot function classes -> (pqe function, argument keys in order)
_FUNCS: dict[type, tuple[str, tuple[str, ...]]] = {
    exp.Upper: ("upper", ("this",)), exp.Lower: ("lower", ("this",)),
    exp.Length: ("length", ("this",)), exp.Abs: ("abs", ("this",)),
    exp.Round: ("round", ("this", "decimals")), exp.Ceil: ("ceil", ("this",)),
    exp.Floor: ("floor", ("this",)), exp.Sign: ("sign", ("this",)),
    exp.Sqrt: ("sqrt", ("this",)), exp.Ln: ("ln", ("this",)), exp.Exp: ("exp", ("this",)),
    exp.Pow: ("power", ("this", "expression")),
    exp.Coalesce: ("coalesce", ("this", "expressions")),
    exp.Nullif: ("nullif", ("this", "expression")),
    exp.Greatest: ("greatest", ("this", "expressions")),
    exp.Least: ("least", ("this", "expressions")),
    exp.StrPosition: ("position", ("this", "substr")),
    exp.Replace: ("replace", ("this", "expression", "replacement")),
    exp.SplitPart: ("split_part", ("this", "delimiter", "part_index")),
    exp.Left: ("left", ("this", "expression")), exp.Right: ("right", ("this", "expression")),
    exp.Concat: ("concat_skip_nulls", ("expressions",)),  # `||` (DPipe) propagates NULLs
    exp.RegexpReplace: ("regexp_replace", ("this", "expression", "replacement")),
    exp.RegexpLike: ("regexp_matches", ("this", "expression")),
    exp.StartsWith: ("starts_with", ("this", "expression")),
    exp.Reverse: ("reverse", ("this",)),
    exp.Repeat: ("repeat", ("this", "times")),
    exp.Pad: ("lpad", ("this", "expression", "fill_pattern")),  # rpad when not is_left
    exp.Mod: ("modulo", ("this", "expression")),
    exp.CurrentDate: ("current_date", ()), exp.CurrentTimestamp: ("current_timestamp", ()),
}

_AGGS: dict[type, str] = {
    exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max",
    exp.Stddev: "stddev_samp", exp.StddevSamp: "stddev_samp", exp.StddevPop: "stddev_pop",
    exp.Variance: "var_samp", exp.VariancePop: "var_pop",
    exp.LogicalAnd: "bool_and", exp.LogicalOr: "bool_or", exp.AnyValue: "any_value",
}


def _is_grouping_call(node: exp.Expression) -> bool:
    return (isinstance(node, exp.Anonymous) and node.name.lower() in ("grouping", "grouping_id")) \
        or type(node).__name__ == "Grouping"


def _is_agg_node(node: exp.Expression) -> bool:
    if isinstance(node, exp.Filter):
        return _is_agg_node(node.this)
    if _is_grouping_call(node):
        return True
    if isinstance(node, exp.Anonymous):
        from ..plan import functions as F
        return F.canonical(node.name) in F.AGGREGATE
    return isinstance(node, exp.AggFunc)


def _map_outer_refs(plan: LogicalPlan, fn: Callable[[OuterRef], Expr | None]) -> LogicalPlan:
    """`plan` with fn applied to every OuterRef, in nested subqueries too (None keeps it)."""
    def on_expr(e: Expr) -> Expr:
        def visit(x: Expr) -> Expr | None:
            if isinstance(x, OuterRef):
                return fn(x)
            if isinstance(x, SubqueryExpr):
                inner = _map_outer_refs(x.plan, fn)
                return None if inner is x.plan else replace(x, plan=inner)
            return None
        return transform(e, visit)

    def node(p: LogicalPlan) -> LogicalPlan | None:
        out = map_expressions(p, on_expr)
        return None if out is p else out

    return transform_up(plan, node)


def _is_comma(j: exp.Join) -> bool:
    """`FROM a, b`: a join with no kind, side or condition."""
    return not any(j.args.get(k) for k in ("kind", "side", "on", "using", "method"))


def _cross_all(plans: list[LogicalPlan]) -> LogicalPlan:
    out = plans[0]
    for p in plans[1:]:
        out = B.join(out, p, "inner", (), None)
    return out


def _find_windows(node: exp.Expression) -> list[exp.Window]:
    """Window function calls in an expression (not inside subqueries)."""
    out: list[exp.Window] = []

    def rec(n):
        if isinstance(n, (exp.Subquery, exp.Select, exp.Exists)):
            return
        if isinstance(n, exp.Window):
            out.append(n)
            return
        for child in n.iter_expressions():
            rec(child)

    rec(node)
    return out


def _find_aggs(node: exp.Expression) -> list[exp.Expression]:
    """Aggregate calls in an expression, not looking into subqueries or inside other aggs."""
    out: list[exp.Expression] = []

    def rec(n):
        if isinstance(n, (exp.Subquery, exp.Select, exp.Exists)):
            return
        if isinstance(n, exp.Window):
            # the window's own function is not a GROUP BY aggregate, but its arguments,
            # PARTITION BY and ORDER BY may hold some: rank() OVER (ORDER BY sum(x))
            func = n.this
            if isinstance(func, exp.Filter):
                func = func.this
            for child in func.iter_expressions() if isinstance(func, exp.Expression) else []:
                rec(child)
            for child in n.args.get("partition_by") or []:
                rec(child)
            if n.args.get("order") is not None:
                for o in n.args["order"].expressions:
                    rec(o.this)
            return
        if _is_agg_node(n):
            out.append(n)
            return
        for child in n.iter_expressions():
            rec(child)

    rec(node)
    return out


class Binder:
    """Binds one statement's query against a catalog snapshot."""

    # a recursive CTE stops with an error after this many iterations
    MAX_RECURSION = 10_000

    def __init__(self, catalog: Catalog | CatalogSnapshot, sql: str = ""):
        self.catalog = catalog
        self.sql = sql
        self.ctes: list[dict[str, tuple[LogicalPlan, list[str]]]] = []
        self.adhoc: dict[str, TableProvider] = {}  # read_parquet(...) and 'file.parquet' sources
        self._window_refs: dict[int, Expr] = {}  # window call AST node -> its output column
        self.keys: dict[str, dict[str, str]] = {}  # table -> sqlglot column key -> real name

    # ---- entry ---------------------------------------------------------------------------

    def bind_query(self, node: exp.Expression) -> LogicalPlan:
        """A query AST -> a plan whose final Project names the output columns."""
        node = self._qualify(node)
        plan, _ = self.query(node, None)
        return plan

    # ---- qualification -----------------------------------------------------------------------

    def _cte_names(self, node: exp.Expression) -> set[str]:
        return {c.alias_or_name for c in node.find_all(exp.CTE)}

    def _qualify(self, node: exp.Expression) -> exp.Expression:
        cte_names = self._cte_names(node)
        schema: dict[str, dict[str, str]] = {}
        for table in node.find_all(exp.Table):
            adhoc = self._table_function(table)
            if adhoc is not None:
                real, entry = adhoc
                table.set("this", exp.to_identifier(real, quoted=True))
            else:
                if not isinstance(table.this, exp.Identifier):
                    raise UnsupportedError(f"table expression {table.sql()} is not supported yet")
                name = table.name
                if name in cte_names and not table.args.get("db"):
                    continue
                if table.args.get("db") or table.args.get("catalog"):
                    raise UnsupportedError(f"qualified table names ({table.sql()}) are not supported")
                quoted = table.this.quoted
                try:
                    real, entry = self.catalog.lookup(name, exact=quoted)
                except UnknownTableError as e:
                    pos = node_position(self.sql, table)
                    raise _positioned(UnknownTableError(str(e) + _at(pos)), pos) from None
                table.set("this", exp.to_identifier(real, quoted=True))
            if real in schema:
                continue
            cols = self._columns_of(real, entry)
            keys = _column_keys([c for c, _ in cols])
            self.keys[real] = {k: c for k, c in zip(keys, (c for c, _ in cols), strict=True)}
            schema[real] = {k: t for k, (_, t) in zip(keys, cols, strict=True)}
        _name_unaliased_projections(node)
        # quoted column names are exact: map them to the key qualify will look for
        real_to_key = {}
        for table_keys in self.keys.values():
            for k, real in table_keys.items():
                real_to_key.setdefault(real, k)
        for ident in node.find_all(exp.Identifier):
            if ident.quoted and isinstance(ident.parent, exp.Column) and ident.arg_key == "this":
                if ident.name in real_to_key:
                    ident.set("this", real_to_key[ident.name])
                else:
                    ident.set("this", ident.name + "\x00")  # never matches a key case-insensitively
        try:
            return qualify(node, schema=MappingSchema(schema, normalize=False),
                           dialect=PQEDialect, validate_qualify_columns=True,
                           quote_identifiers=True, identify=True)
        except OptimizeError as e:
            raise self._qualify_error(str(e), schema, node) from None

    def _table_function(self, table: exp.Table) -> tuple[str, TableProvider] | None:
        """read_parquet('glob'), read_csv('path'), or FROM 'file.parquet' -> an ad-hoc table."""
        from ..catalog import CsvTable, ParquetTable

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
            kind = "csv" if path.lower().endswith((".csv", ".csv.gz", ".tsv")) else "parquet"
            args = []
        else:
            return None
        if path is None:
            if not args or not isinstance(args[0], exp.Literal) or not args[0].is_string:
                raise BindError(f"{kind} table function needs a constant path")
            path = args[0].name
        key = f"__{kind}:{path}"
        if key not in self.adhoc:
            self.adhoc[key] = ParquetTable(path) if kind == "parquet" else CsvTable(path)
        if not table.alias:
            stem = os.path.basename(path).split(".")[0] or kind
            alias = stem if isinstance(fn, exp.Identifier) else f"read_{kind}"
            table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
        return key, self.adhoc[key]

    def _columns_of(self, real: str, entry) -> list[tuple[str, str]]:
        if isinstance(entry, TableProvider):
            return [(f.name, T.type_name(f.type)) for f in entry.schema]
        if isinstance(entry, View):
            plan = self._bind_view(real, entry)
            return [(f.name, T.type_name(f.dtype)) for f in plan.schema]
        raise UnsupportedError(f"catalog entry {real!r} cannot be queried")

    def _qualify_error(self, msg: str, schema, node: exp.Expression | None = None) -> Error:
        m = re.search(r"Column '([^']*)' could not be resolved(?:.*?Line: (\d+), Col: (\d+))?", msg)
        if m:
            col = m.group(1).replace("\x00", "")
            owners = [t for t, cols in schema.items() if col in cols]
            if node is not None and "." not in col:  # a table joined to itself: t, t AS u
                aliases = {t.alias_or_name: None for t in node.find_all(exp.Table)
                           if col in schema.get(t.name, {})}
                if len(aliases) > len(owners):
                    owners = list(aliases)
            if len(owners) > 1:
                return AmbiguousColumnError(
                    f"column reference '{col}' is ambiguous: it could be "
                    + " or ".join(f"{t}.{col}" for t in owners))
            cands = [c for cols in schema.values() for c in cols]
            where = ""
            pos = None
            if m.group(2):
                line, endcol = int(m.group(2)), int(m.group(3))
                pos = (line, max(1, endcol - len(col) + 1))
                where = _at(pos)
            return _positioned(UnknownColumnError(
                f"column '{col}' does not exist{where}{suggest(col, cands)}"), pos)
        if "Ambiguous" in msg or "ambiguous" in msg:
            return AmbiguousColumnError(msg.split(". Line")[0].replace("\x00", ""))
        return BindError(msg.split("\n")[0].replace("\x00", ""))

    def _bind_view(self, name: str, view: View) -> LogicalPlan:
        from .parser import parse

        stmts = parse(view.sql)
        plan = Binder(self.catalog, view.sql).bind_query(stmts[0])
        if view.column_names:
            if len(view.column_names) != len(plan.schema):
                raise BindError(f"view {name} names {len(view.column_names)} columns "
                                f"but its query produces {len(plan.schema)}")
            plan = B.project(plan, [(ColumnRef(f), n)
                                    for f, n in zip(plan.schema, view.column_names, strict=True)])
        return plan

    # ---- queries -------------------------------------------------------------------------------

    def query(self, node: exp.Expression, outer: Scope | None) -> tuple[LogicalPlan, list[str]]:
        with_ = node.args.get("with_")
        if with_ is not None:
            recursive = bool(with_.args.get("recursive"))
            frame: dict[str, tuple[LogicalPlan, list[str]]] = {}
            self.ctes.append(frame)
            try:
                for cte in with_.expressions:
                    name = cte.alias_or_name
                    if recursive and _self_referencing(cte):
                        frame[name] = self._recursive_cte(cte, outer, frame)
                    else:
                        frame[name] = self.query(cte.this, outer)
                return self._query_body(node, outer)
            finally:
                self.ctes.pop()
        return self._query_body(node, outer)

    def _recursive_cte(self, cte: exp.CTE, outer, frame) -> tuple[LogicalPlan, list[str]]:
        """WITH RECURSIVE: a RecursiveQuery node whose step reads the previous iteration's
        rows through a WorkTable; the executor runs the iterations."""
        name = cte.alias_or_name
        body = cte.this
        if not isinstance(body, exp.Union):
            raise UnsupportedError(f"recursive CTE {name} must be <anchor> UNION [ALL] <recursive term>")
        for key in ("order", "limit", "offset"):
            if body.args.get(key) is not None:
                raise UnsupportedError(f"{key.upper()} on the body of recursive CTE {name} "
                                       f"is not supported")
        distinct = bool(body.args.get("distinct"))
        anchor, names = self.query(body.this, outer)
        if distinct:
            anchor = B.distinct(anchor)
        token = B.fresh_id(name)  # "name#k": unique per query, shown as its name
        work_fields = tuple(B.new_field(n, f.dtype) for n, f in zip(names, anchor.schema, strict=True))
        frame[name] = (WorkTable(token, work_fields, "delta"), names)
        step, _ = self.query(body.expression.copy(), outer)
        if len(step.schema) != len(names):
            raise BindError(f"recursive term of {name} has {len(step.schema)} columns, "
                            f"expected {len(names)}")
        items = []
        for f, want in zip(step.schema, anchor.schema, strict=True):
            if f.dtype != want.dtype and T.common_type(f.dtype, want.dtype) is None:
                raise TypeMismatchError(
                    f"recursive term of {name}: column {f.name} is {T.type_name(f.dtype)}, "
                    f"the anchor's is {T.type_name(want.dtype)}")
            items.append((B.cast(ColumnRef(f), want.dtype), f.name))
        step = B.project(step, items)
        if distinct:
            seen = WorkTable(token, tuple(B.new_field(n, f.dtype) for n, f in
                                          zip(names, anchor.schema, strict=True)), "all")
            step = B.set_operation("except", step, seen, all_=False)
        for part in (anchor, step):
            if _has_outer_refs(part):
                raise UnsupportedError(f"recursive CTE {name} refers to a column of an outer "
                                       f"query; this is not supported")
        anchor = B.project(anchor, [(ColumnRef(f), n) for f, n in zip(anchor.schema, names, strict=True)])
        fields = tuple(B.new_field(n, f.dtype) for n, f in zip(names, anchor.schema, strict=True))
        plan = RecursiveQuery(token, anchor, step, fields, distinct, self.MAX_RECURSION)
        return plan, names

    def _query_body(self, node, outer):
        if isinstance(node, exp.Select):
            return self.select(node, outer)
        if isinstance(node, exp.Subquery):
            plan, names = self.query(node.this, outer)
            return self._order_limit_outer(node, plan, names, outer)
        if isinstance(node, exp.SetOperation):
            return self.set_operation(node, outer)
        if isinstance(node, exp.Values):
            plan = self.values(node, outer)
            return plan, [f.name for f in plan.schema]
        raise UnsupportedError(f"{type(node).__name__.upper()} statement is not supported here")

    def _order_limit_outer(self, node, plan, names, outer):
        """ORDER BY / LIMIT attached to a parenthesized query or a set operation."""
        order = node.args.get("order")
        if order is not None:
            scope = Scope(outer)
            scope.add("", [(n, f) for n, f in zip(names, plan.schema, strict=True)])
            keys = []
            for o in order.expressions:
                e = self._output_ref(o.this, plan, names)
                if e is None:
                    e = self.expr(o.this, scope)
                keys.append(self._sort_key(o, e))
            plan = B.sort(plan, keys)
        plan = self._limit(node, plan)
        return plan, names

    def set_operation(self, node: exp.SetOperation, outer):
        left, lnames = self.query(node.this, outer)
        right, _ = self.query(node.expression, outer)
        distinct = node.args.get("distinct", True)
        if isinstance(node, exp.Union):
            plan = B.union_all([left, right])
            if distinct:
                plan = B.distinct(plan)
        else:
            kind = "intersect" if isinstance(node, exp.Intersect) else "except"
            plan = B.set_operation(kind, left, right, all_=not distinct)
        plan = B.project(plan, [(ColumnRef(f), n) for f, n in zip(plan.schema, lnames, strict=True)])
        return self._order_limit_outer(node, plan, lnames, outer)

    def values(self, node: exp.Values, outer) -> LogicalPlan:
        scope = Scope(outer)
        rows = []
        for tup in node.expressions:
            items = tup.expressions if isinstance(tup, exp.Tuple) else [tup]
            rows.append([self.expr(e, scope) for e in items])
        width = len(rows[0]) if rows else 0
        alias = node.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None and alias.columns else []
        names += [f"col{i + 1}" for i in range(len(names), width)]
        return B.values(names[:width], rows)

    # ---- SELECT --------------------------------------------------------------------------------

    def select(self, sel: exp.Select, outer: Scope | None):
        scope = Scope(outer)
        plan = self.from_clause(sel, scope)
        where = sel.args.get("where")
        if where is not None:
            pred = self.expr(where.this, scope, clause="WHERE")
            plan = B.filter(plan, pred)

        items = list(sel.expressions)
        having = sel.args.get("having")
        order = sel.args.get("order")
        group = sel.args.get("group")
        agg_nodes: list[exp.Expression] = []
        for it in items:
            agg_nodes += _find_aggs(it)
        if having is not None:
            agg_nodes += _find_aggs(having.this)
        if order is not None:
            for o in order.expressions:
                agg_nodes += _find_aggs(o.this)

        agg_ctx = None
        if group is not None or agg_nodes or having is not None:
            # HAVING alone makes the query grouped too: one group of all rows (PostgreSQL)
            plan, agg_ctx = self.aggregate(plan, scope, group, agg_nodes)
            if having is not None:
                pred = self.expr(having.this, scope, agg=agg_ctx, clause="HAVING")
                plan = B.filter(plan, pred)

        # window functions run after GROUP BY / HAVING, before the SELECT list
        win_nodes: list[exp.Window] = []
        for it in items:
            win_nodes += _find_windows(it)
        if order is not None:
            for o in order.expressions:
                win_nodes += _find_windows(o.this)
        if win_nodes:
            plan = self.windows(plan, scope, agg_ctx, win_nodes, sel)

        # SELECT list
        bound: list[tuple[Expr, str]] = []
        for it in items:
            if isinstance(it, exp.Star):
                raise BindError("SELECT * needs a FROM clause")
            name = it.alias_or_name
            target = it.this if isinstance(it, exp.Alias) else it
            bound.append((self.expr(target, scope, agg=agg_ctx, clause="SELECT"), name))

        distinct = sel.args.get("distinct")
        if distinct is not None and distinct.args.get("on"):
            raise UnsupportedError("DISTINCT ON is not supported yet")

        # ORDER BY: keys may name output columns, or be expressions over the input
        extra: list[tuple[Expr, str]] = []
        keys: list[tuple[exp.Ordered, Expr | int]] = []
        if order is not None:
            out_names = [n for _, n in bound]
            for o in order.expressions:
                ref = self._output_index(o.this, out_names, bound)
                if ref is not None:
                    keys.append((o, ref))
                    continue
                e = self.expr(o.this, scope, agg=agg_ctx, clause="ORDER BY")
                match = next((i for i, (b, _) in enumerate(bound) if b == e), None)
                if match is not None:
                    keys.append((o, match))
                    continue
                if distinct is not None:
                    raise BindError("for SELECT DISTINCT, ORDER BY expressions must appear in "
                                    "the select list")
                extra.append((e, f"__order{len(extra)}"))
                keys.append((o, len(bound) + len(extra) - 1))

        proj = B.project(plan, bound + extra)
        plan = proj
        if distinct is not None:
            plan = B.distinct(plan)
        if keys:
            sort_keys = [self._sort_key(o, ColumnRef(plan.schema[i])) for o, i in keys]
            plan = B.sort(plan, sort_keys)
        plan = self._limit(sel, plan)
        if extra:
            plan = B.project(plan, [(ColumnRef(f), f.name) for f in plan.schema[: len(bound)]])
        return plan, [n for _, n in bound]

    def windows(self, plan, scope, agg_ctx, nodes: list[exp.Window], sel: exp.Select) -> LogicalPlan:
        """A Window node computing every window call; the calls' AST nodes then bind to its
        output columns."""
        named = {}
        for w in sel.args.get("windows") or []:
            named[w.this.name] = w
        calls: list[WindowCall] = []
        refs: list[tuple[exp.Window, int]] = []
        for node in nodes:
            call = self.window_call(node, scope, agg_ctx, named)
            if call not in calls:
                calls.append(call)
            refs.append((node, calls.index(call)))
        fields = tuple(B.new_field(str(c.fn), c.dtype) for c in calls)
        window = Window(plan, tuple(calls), fields)
        for node, i in refs:
            self._window_refs[id(node)] = ColumnRef(fields[i])
        return window

    def window_call(self, node: exp.Window, scope, agg_ctx, named) -> WindowCall:
        from ..plan import functions as F

        spec = node
        base = None
        if node.args.get("alias") is not None or isinstance(node.this, exp.Identifier):
            ref = node.args.get("alias") or node.this
            base = named.get(ref.name)
            if base is None:
                raise BindError(f"window '{ref.name}' is not defined")
        partition = (base.args.get("partition_by") if base is not None else None) or []
        partition = list(node.args.get("partition_by") or partition)
        order = node.args.get("order") or (base.args.get("order") if base is not None else None)
        frame_spec = node.args.get("spec") or (base.args.get("spec") if base is not None else None)
        func = spec.this
        filt = None
        if isinstance(func, exp.Filter):
            filt = func.expression.this
            func = func.this
        rec = lambda n: self.expr(n, scope, agg=agg_ctx, clause="window")  # noqa: E731
        pby = tuple(rec(p) for p in partition)
        oby = tuple(self._sort_key(o, rec(o.this)) for o in (order.expressions if order else []))
        frame = _frame(frame_spec) if frame_spec is not None else None
        name = _WINDOW_FUNCS.get(type(func))
        consts: tuple = ()
        if name is not None or (isinstance(func, exp.Anonymous) and F.canonical(func.name) in F.WINDOW):
            name = name or F.canonical(func.name)
            raw = [v for k, v in func.args.items() if v is not None and not isinstance(v, bool)]
            raw = [x for v in raw for x in (v if isinstance(v, list) else [v])]
            args = [rec(a) for a in raw]
            fdef = F.WINDOW[name]
            F.check_arity(fdef, len(args), name)
            value_args, consts = _window_consts(name, args)
            _, dtype = fdef.resolve(name, [a.dtype for a in value_args] or [T.INT64])
            if name in ("lag", "lead") and len(consts) > 1 and consts[1] is not None:
                consts = (consts[0], B.cast(args[2], dtype).value if isinstance(B.cast(args[2], dtype), Literal) else consts[1])
            if filt is not None:
                raise UnsupportedError(f"FILTER on {name} is not supported")
            return WindowCall(name, tuple(value_args), pby, oby, frame, dtype, consts)
        if _is_agg_node(func):
            agg = self.agg_call(func, scope, rec=lambda n, clause: self.expr(
                n, scope, agg=agg_ctx, clause=clause))
            if agg.distinct:
                raise UnsupportedError("DISTINCT in window aggregates is not supported")
            args = agg.args
            if agg.filter is not None:
                args = (B.case([(agg.filter, args[0] if args else lit(1))], None),)
                if not agg.args:
                    agg = AggCall("count", args, T.INT64)
            if filt is not None:
                f = B.cast(rec(filt), T.BOOLEAN)
                if args:
                    args = (B.case([(f, args[0])], None),)
                else:
                    args = (B.case([(f, lit(1))], None),)
                    agg = AggCall("count", args, T.INT64)
            fn = agg.fn
            return WindowCall(fn, tuple(args), pby, oby, frame, agg.dtype)
        raise UnsupportedError(f"window function {func.sql()} is not supported")

    def _output_index(self, node, out_names, bound) -> int | None:
        """ORDER BY 2 / ORDER BY alias -> index into the select list."""
        if isinstance(node, exp.Literal) and not node.is_string:
            try:
                k = int(node.this)
            except ValueError:
                return None
            if not 1 <= k <= len(bound):
                raise BindError(f"ORDER BY position {k} is not in the select list")
            return k - 1
        if isinstance(node, exp.Column) and not node.table:
            hits = [i for i, n in enumerate(out_names) if n == node.name]
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1 and len({bound[i][0] for i in hits}) == 1:
                return hits[0]
            if len(hits) > 1:
                raise AmbiguousColumnError(f"ORDER BY '{node.name}' is ambiguous")
        return None

    def _output_ref(self, node, plan, names) -> Expr | None:
        idx = None
        if isinstance(node, exp.Literal) and not node.is_string:
            idx = int(node.this) - 1
        elif isinstance(node, exp.Column) and not node.table and node.name in names:
            idx = names.index(node.name)
        if idx is None:
            return None
        if not 0 <= idx < len(plan.schema):
            raise BindError(f"ORDER BY position {idx + 1} is not in the select list")
        return ColumnRef(plan.schema[idx])

    def _sort_key(self, o: exp.Ordered, e: Expr) -> SortKey:
        desc = bool(o.args.get("desc"))
        nulls_first = o.args.get("nulls_first")
        if nulls_first is None:
            nulls_first = desc
        return SortKey(e, not desc, bool(nulls_first))

    def _limit(self, node, plan):
        limit = node.args.get("limit")
        offset = node.args.get("offset")
        if limit is None and offset is None:
            return plan
        fetch = self._int_clause(limit.expression if limit is not None else None, "LIMIT")
        skip = self._int_clause(offset.expression if offset is not None else None, "OFFSET") or 0
        from ..plan.logical import Sort

        if isinstance(plan, Sort) and fetch is not None and plan.fetch is None:
            plan = B.sort(plan.input, plan.keys, fetch + skip)
            if skip == 0:
                return plan
        return B.limit(plan, fetch, skip)

    def _int_clause(self, node, what: str) -> int | None:
        if node is None:
            return None
        e = self.expr(node, Scope())
        if isinstance(e, Literal) and e.value is None:
            return None
        if not (isinstance(e, Literal) and isinstance(e.value, int) and not isinstance(e.value, bool)):
            raise BindError(f"{what} must be a constant integer")
        if e.value < 0:
            raise BindError(f"{what} must not be negative")
        return e.value

    # ---- FROM ----------------------------------------------------------------------------------

    def from_clause(self, sel: exp.Select, scope: Scope) -> LogicalPlan:
        from_ = sel.args.get("from_")
        if from_ is None:
            if sel.args.get("joins"):
                raise BindError("JOIN without FROM")
            return B.values(["dummy"], [[lit(0)]])
        return self._joins(self.source(from_.this, scope), sel.args.get("joins") or [], scope)

    def _joins(self, first: LogicalPlan, joins: list[exp.Join], scope: Scope) -> LogicalPlan:
        # a comma binds looser than JOIN: `a, b RIGHT JOIN c ON ...` is a x (b RIGHT JOIN c)
        items = [first]
        for j in joins:
            if _is_comma(j):
                items.append(self.source(j.this, scope))
                continue
            right = self.source(j.this, scope)
            jkind, cond = self._join_condition(j, scope)
            left = items[-1]
            if cond is not None and len(items) > 1 and \
                    not column_ids(cond) <= set(left.column_ids) | set(right.column_ids):
                # ON reads an earlier comma item (PostgreSQL rejects this; DuckDB reads it per
                # row, like LATERAL). For inner and left joins, joining left-deep gives that
                # answer; for right and full joins it does not, and pqe has no lateral join
                if jkind in ("right", "full"):
                    raise UnsupportedError(
                        f"the ON condition of a {jkind.upper()} JOIN refers to a table listed "
                        f"before it with a comma (a lateral reference); write JOIN ... ON "
                        f"instead of the comma")
                left = _cross_all(items)
                items = [left]
            items[-1] = B.join(left, right, jkind, (), cond)
            if jkind != "inner":
                scope.refresh(items[-1].schema)
        return _cross_all(items)

    def _join_condition(self, j: exp.Join, scope: Scope) -> tuple[str, Expr | None]:
        side = (j.args.get("side") or "").upper()
        kind = (j.args.get("kind") or "").upper()
        if kind in ("SEMI", "ANTI"):
            raise UnsupportedError(f"{kind} JOIN syntax is not supported; use EXISTS")
        if j.args.get("using") or j.args.get("method"):
            raise UnsupportedError(f"JOIN {j.args.get('method') or 'USING'} form is not supported here")
        jkind = {"LEFT": "left", "RIGHT": "right", "FULL": "full"}.get(side, "inner")
        on = j.args.get("on")
        cond = None
        if on is not None:
            cond = self.expr(on, scope, clause="ON")
            if not (T.is_boolean(cond.dtype) or T.is_null(cond.dtype)):
                raise TypeMismatchError(f"JOIN condition must be BOOLEAN, not {T.type_name(cond.dtype)}")
            cond = B.cast(cond, T.BOOLEAN)
        elif jkind != "inner":
            raise BindError(f"{side} JOIN needs an ON condition")
        return jkind, cond

    def source(self, node: exp.Expression, scope: Scope) -> LogicalPlan:
        alias = node.alias_or_name
        if isinstance(node, exp.Table):
            name = node.name
            cte = self._find_cte(name)
            if cte is not None:
                plan, names = cte
                plan = B.project(plan, [(ColumnRef(f), n)
                                        for f, n in zip(plan.schema, names, strict=True)],
                                 qualifier=alias)
                scope.add(alias, [(n, f) for n, f in zip(names, plan.schema, strict=True)])
                return plan
            if name in self.adhoc:
                real, entry = name, self.adhoc[name]
            else:
                real, entry = self.catalog.lookup(name, exact=True)
            if isinstance(entry, View):
                plan = self._bind_view(real, entry)
                plan = B.project(plan, [(ColumnRef(f), f.name) for f in plan.schema],
                                 qualifier=alias)
                keys = _column_keys([f.name for f in plan.schema])
                scope.add(alias, list(zip(keys, plan.schema, strict=True)))
                return plan
            plan = B.scan(real, entry, alias)
            keys = _column_keys([f.name for f in plan.schema])
            scope.add(alias, list(zip(keys, plan.schema, strict=True)))
            return plan
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Table) \
                and node.this.args.get("joins"):
            # a parenthesized join: FROM (a CROSS JOIN b)
            inner = node.this.copy()
            joins = inner.args.pop("joins")
            return self._joins(self.source(inner, scope), joins, scope)
        if isinstance(node, exp.Subquery):
            plan, names = self.query(node.this, scope.parent)
            cols = node.args.get("alias").columns if node.args.get("alias") else []
            if cols:
                names = [c.name for c in cols] + names[len(cols):]
            scope.add(alias, [(n, f) for n, f in zip(names, plan.schema, strict=True)])
            return plan
        if isinstance(node, exp.Values):
            plan = self.values(node, scope.parent)
            scope.add(alias or "values", [(f.name, f) for f in plan.schema])
            return plan
        raise UnsupportedError(f"{node.key.upper()} in FROM is not supported yet")

    def _find_cte(self, name: str):
        for frame in reversed(self.ctes):
            if name in frame:
                return frame[name]
        return None

    # ---- GROUP BY --------------------------------------------------------------------------------

    def aggregate(self, plan, scope, group, agg_nodes):
        groups: list[tuple[Expr, Field]] = []
        gitems: list[tuple[Expr, str]] = []
        sets = None
        if group is not None:
            gitems, sets = self._grouping(group, scope)
        aitems: list[tuple[AggCall, str]] = []
        positions: dict[int, int] = {}  # id(AST node) -> index into aitems
        for node in agg_nodes:
            if _is_grouping_call(node):
                continue
            a = self.agg_call(node, scope)
            i = next((k for k, (x, _) in enumerate(aitems) if a == x), None)
            if i is None:
                i = len(aitems)
                aitems.append((a, str(a)))
            positions[id(node)] = i
        if not aitems and (not gitems or (sets is not None and [] in sets)):
            # HAVING without GROUP BY or aggregates still yields one group of all rows;
            # a COUNT(*) nobody reads keeps that row through every layer
            aitems.append((B.aggregate_call("count_star", [], False, None, display="count"), "count(*)"))
        if sets is not None:
            plan, ctx = self._grouping_sets(plan, scope, gitems, aitems, sets)
        else:
            plan = B.aggregate(plan, gitems, aitems)
            groups = [(e, f) for (e, _), f in zip(gitems, plan.group_fields, strict=True)]
            aggs = [(a, f) for (a, _), f in zip(aitems, plan.agg_fields, strict=True)]
            ctx = _AggContext(scope, groups, aggs)
        # an aggregate whose argument holds a subquery binds to a new plan each time, so it
        # is found again by its AST node rather than by equality
        ctx.by_node.update({k: ctx.aggs[i][1] for k, i in positions.items()})
        return plan, ctx

    def _grouping(self, group: exp.Group, scope: Scope):
        """GROUP BY items -> unique expressions, and the grouping sets (lists of indices into
        them) when ROLLUP / CUBE / GROUPING SETS appear (None for a plain GROUP BY)."""
        gitems: list[tuple[Expr, str]] = []

        def index(node) -> int:
            e = self.expr(node, scope, clause="GROUP BY")
            for i, (x, _) in enumerate(gitems):
                if x == e:
                    return i
            name = node.name if isinstance(node, exp.Column) else str(e)
            gitems.append((e, name))
            return len(gitems) - 1

        def items_of(node) -> list[int]:
            if isinstance(node, exp.Tuple):
                return [index(x) for x in node.expressions]
            if isinstance(node, exp.Paren):
                return items_of(node.this)
            return [index(node)]

        factors: list[list[list[int]]] = []  # cross product of per-item set lists
        has_sets = False
        for g in group.expressions:
            if isinstance(g, exp.Rollup):
                has_sets = True
                cols = [items_of(x) for x in g.expressions]
                factors.append([sum(cols[:k], []) for k in range(len(cols), -1, -1)])
            elif isinstance(g, exp.Cube):
                has_sets = True
                cols = [items_of(x) for x in g.expressions]
                subsets = []
                for mask in range((1 << len(cols)) - 1, -1, -1):
                    subsets.append(sum((c for k, c in enumerate(cols) if mask >> (len(cols) - 1 - k) & 1), []))
                factors.append(subsets)
            elif isinstance(g, exp.GroupingSets):
                has_sets = True
                factors.append([items_of(x) if not (isinstance(x, exp.Tuple) and not x.expressions)
                                else [] for x in g.expressions])
            elif isinstance(g, exp.Tuple) and not g.expressions:
                factors.append([[]])  # GROUP BY (): the empty grouping set
            else:
                factors.append([[index(g)]])
        for key in ("rollup", "cube", "grouping_sets"):
            if group.args.get(key):
                raise UnsupportedError(f"GROUP BY {key.upper()} form is not supported")
        if not has_sets:
            return gitems, None
        sets: list[list[int]] = [[]]
        for options in factors:
            sets = [a + [i for i in b if i not in a] for a in sets for b in options]
        return gitems, sets

    def _grouping_sets(self, plan, scope, gitems, aitems, sets):
        """One aggregate per grouping set, padded with NULLs for the keys it does not group
        by, tagged with a grouping id (bit k set when key k is not grouped), UNION ALL."""
        n = len(gitems)
        branches = []
        for s_ in sets:
            agg = B.aggregate(plan, [gitems[i] for i in s_], aitems)
            items = []
            for i, (e, name) in enumerate(gitems):
                if i in s_:
                    items.append((ColumnRef(agg.group_fields[s_.index(i)]), name))
                else:
                    items.append((Literal(None, e.dtype), name))
            gid = sum(1 << (n - 1 - i) for i in range(n) if i not in s_)
            items.append((lit(gid), "grouping_id"))
            items += [(ColumnRef(f), f.name) for f in agg.agg_fields]
            branches.append(B.project(agg, items))
        union = B.union_all(branches)
        fields = union.schema
        groups = [(e, f) for (e, _), f in zip(gitems, fields[:n], strict=True)]
        aggs = [(a, f) for (a, _), f in zip(aitems, fields[n + 1:], strict=True)]
        return union, _AggContext(scope, groups, aggs, fields[n])

    def agg_call(self, node: exp.Expression, scope: Scope, rec=None) -> AggCall:
        """An aggregate call; arguments bind in `scope` (or through `rec`, for window
        aggregates, whose arguments may hold GROUP BY aggregates: sum(sum(x)) OVER ())."""
        window = rec is not None
        if rec is None:
            rec = lambda n, clause: self.expr(n, scope, clause=clause)  # noqa: E731
        filt = None
        if isinstance(node, exp.Filter):
            filt = rec(node.expression.this, "FILTER")
            node = node.this
        distinct = False
        if isinstance(node, exp.Anonymous):
            name = node.name
            arg_nodes = list(node.expressions)
        else:
            name = _AGGS.get(type(node))
            if name is None:
                raise UnsupportedError(f"aggregate function {node.sql_name()} is not supported yet")
            this = node.this
            if isinstance(this, exp.Distinct):
                distinct = True
                arg_nodes = list(this.expressions)
            elif this is None or isinstance(this, exp.Star):
                arg_nodes = []
            else:
                arg_nodes = [this] + list(node.args.get("expressions") or [])
        for a in arg_nodes:
            if not window and _find_aggs(a):
                raise AggregateMisuseError(f"aggregate function calls cannot be nested: {node.sql()}")
        args = [rec(a, "aggregate argument") for a in arg_nodes]
        if name == "count" and distinct and len(args) > 1:
            raise UnsupportedError("COUNT(DISTINCT a, b) is not supported")
        return B.aggregate_call(name, args, distinct, filt, display=name)

    # ---- expressions ---------------------------------------------------------------------------

    def expr(self, node: exp.Expression, scope: Scope, agg: _AggContext | None = None,
             clause: str = "") -> Expr:
        hit = self._window_refs.get(id(node))
        if hit is not None:
            return hit
        if isinstance(node, exp.Window):
            raise BindError(f"window functions are not allowed in {clause or 'this context'}")
        if agg is not None:
            hit = self._post_agg(node, agg)
            if hit is not None:
                return hit
        elif _is_agg_node(node):
            raise AggregateMisuseError(f"aggregate functions are not allowed in {clause or 'this context'}: {node.sql()}")
        rec: Callable[[exp.Expression], Expr] = lambda n: self.expr(n, scope, agg, clause)  # noqa: E731
        out = self._expr(node, scope, rec)
        if agg is not None and isinstance(out, SubqueryExpr):
            out = replace(out, plan=self._above_aggregate(out.plan, agg))
        return out

    def _above_aggregate(self, plan: LogicalPlan, agg: _AggContext) -> LogicalPlan:
        """A subquery bound in the FROM scope but evaluated above the Aggregate: its outer
        references to GROUP BY columns now read the group's output column; any other column
        of the FROM scope is not available after grouping."""
        grouped = {x.id: f for x, f in agg.groups if isinstance(x, ColumnRef)}
        ungrouped = {f.id for cols in agg.from_scope.tables.values()
                     for fs in cols.values() for f in fs} - grouped.keys()

        def outer(ref: OuterRef) -> Expr | None:
            if ref.id in grouped:
                return OuterRef(grouped[ref.id])
            if ref.id in ungrouped:
                raise AggregateMisuseError(
                    f"column '{ref.field.display}' must appear in the GROUP BY clause or be "
                    f"used in an aggregate function")
            return None

        return _map_outer_refs(plan, outer)

    def _post_agg(self, node: exp.Expression, agg: _AggContext) -> Expr | None:
        """Above an Aggregate: aggregates and GROUP BY expressions become column references."""
        if _is_grouping_call(node):
            return self._grouping_value(node, agg)
        if _is_agg_node(node):
            if id(node) in agg.by_node:
                return ColumnRef(agg.by_node[id(node)])
            a = self.agg_call(node, agg.from_scope)
            for x, f in agg.aggs:
                if x == a:
                    return ColumnRef(f)
            raise AggregateMisuseError(f"aggregate {node.sql()} is not available here")
        if isinstance(node, (exp.Subquery, exp.Exists)) or _find_aggs(node) or node.find(exp.Window):
            return None
        if isinstance(node, exp.Literal):
            return None
        try:
            e = self.expr(node, agg.from_scope)
        except Error:
            return None
        for x, f in agg.groups:
            if x == e:
                return ColumnRef(f)
        if not column_ids(e):
            return e
        if isinstance(node, exp.Column):
            raise AggregateMisuseError(
                f"column '{node.sql().replace(chr(34), '')}' must appear in the GROUP BY "
                f"clause or be used in an aggregate function")
        return None

    def _grouping_value(self, node: exp.Expression, agg: _AggContext) -> Expr:
        """GROUPING(a, b): bit per argument, 1 when that key is not grouped in the row's set."""
        args = node.expressions if isinstance(node, exp.Anonymous) else (
            [node.this] + list(node.expressions) if node.this is not None else list(node.expressions))
        exprs = [g for g, _ in agg.groups]
        out: Expr = lit(0)
        n = len(exprs)
        for k, a in enumerate(args):
            e = self.expr(a, agg.from_scope)
            if e not in exprs:
                raise AggregateMisuseError(f"GROUPING argument {a.sql()} is not a GROUP BY expression")
            pos = exprs.index(e)
            if agg.grouping_id is None:
                continue  # plain GROUP BY: every key is grouped
            bit = B.call("modulo", B.call("divide", ColumnRef(agg.grouping_id), lit(1 << (n - 1 - pos))), lit(2))
            out = B.call("add", out, B.call("multiply", bit, lit(1 << (len(args) - 1 - k))))
        return out

    def _expr(self, node: exp.Expression, scope: Scope, rec) -> Expr:
        t = type(node)
        if t is exp.Column:
            return self._column(node, scope)
        if t is exp.Paren:
            return rec(node.this)
        if t is exp.Literal:
            return _literal(node)
        if t is exp.Boolean:
            return lit(bool(node.this))
        if t is exp.Null:
            return Literal(None, T.NULL)
        if t in _BINARY and isinstance(node.expression, (exp.Any, exp.All)):
            return self._quantified(node, scope, rec)
        if t in _BINARY:
            fn = _BINARY[t]
            a, b = rec(node.this), rec(node.expression)
            if fn in ("add", "subtract", "multiply", "modulo"):
                a, b = _narrow_int_literal(a, b), _narrow_int_literal(b, a)
            return B.call(fn, a, b)
        if t is exp.Neg:
            inner = rec(node.this)
            if isinstance(inner, Literal) and isinstance(inner.value, (int, float, decimal.Decimal)) \
                    and not isinstance(inner.value, bool):
                if isinstance(inner.value, decimal.Decimal):
                    return Literal(inner.value.copy_negate(), inner.dtype)  # exact, 38 digits
                return Literal(-inner.value, inner.dtype)
            return B.call("negate", inner)
        if t is exp.Not:
            inner = node.this
            return B.not_(rec(inner))
        if t is exp.Is:
            target = node.expression
            arg = rec(node.this)
            if isinstance(target, exp.Null):
                return B.call("is_null", arg)
            if isinstance(target, exp.Boolean):
                return B.call("is_true" if target.this else "is_false", arg)
            raise UnsupportedError(f"IS {target.sql()} is not supported")
        if t in (exp.Like, exp.ILike):
            e = B.call("like" if t is exp.Like else "ilike", rec(node.this), rec(node.expression))
            return B.not_(e) if node.args.get("negate") else e
        if t is exp.Escape:
            like = node.this
            esc = rec(node.expression)
            if not (isinstance(esc, Literal) and isinstance(esc.value, str) and len(esc.value) == 1):
                raise BindError("ESCAPE must be a single character")
            pattern = rec(like.expression)
            if not (isinstance(pattern, Literal) and isinstance(pattern.value, str)):
                raise UnsupportedError("LIKE ... ESCAPE needs a constant pattern")
            fixed = _rewrite_escape(pattern.value, esc.value)
            e = B.call("like" if isinstance(like, exp.Like) else "ilike", rec(like.this),
                       Literal(fixed, T.TEXT))
            return B.not_(e) if like.args.get("negate") else e
        if t is exp.In:
            arg = rec(node.this)
            query = node.args.get("query")
            if query is not None:
                sub = query.this if isinstance(query, exp.Subquery) else query
                plan, _ = self.query(sub, scope)
                if len(plan.schema) != 1:
                    raise BindError(f"subquery in IN returns {len(plan.schema)} columns, expected 1")
                sub_t = plan.schema[0].dtype
                common = T.common_type(arg.dtype, sub_t)
                if common is None:
                    raise TypeMismatchError(f"IN subquery: cannot compare {T.type_name(arg.dtype)} "
                                            f"with {T.type_name(sub_t)}")
                return SubqueryExpr("in", plan, T.BOOLEAN, B.cast(arg, common), False)
            if node.args.get("unnest") or node.args.get("field"):
                raise UnsupportedError(f"{node.sql()} is not supported")
            return B.in_list(arg, [rec(v) for v in node.expressions])
        if t is exp.Between:
            return B.between(rec(node.this), rec(node.args["low"]), rec(node.args["high"]))
        if t is exp.Case:
            operand = node.this
            whens = []
            op = rec(operand) if operand is not None else None
            for i in node.args.get("ifs") or []:
                cond = rec(i.this)
                if op is not None:
                    cond = B.compare("eq", op, cond)
                whens.append((cond, rec(i.args["true"])))
            default = node.args.get("default")
            return B.case(whens, rec(default) if default is not None else None)
        if t is exp.If:
            return B.case([(rec(node.this), rec(node.args["true"]))],
                          rec(node.args["false"]) if node.args.get("false") else None)
        if t in (exp.Cast, exp.TryCast):
            to = sql_type(node.args["to"])
            arg = rec(node.this)
            if t is exp.Cast and isinstance(arg, Literal) and isinstance(arg.value, str) \
                    and not T.is_text(to):
                folded = B._cast_literal(arg, to)
                if folded is None:
                    if T.is_interval(to):
                        return _interval_literal(arg.value, None)
                    if T.is_numeric(to):
                        # the kernel's text-to-number rules decide (as on a column); constant
                        # folding reports "'x' is not a valid T"
                        return B.cast(arg, to)
                    raise TypeMismatchError(f"cannot cast '{arg.value}' to {T.type_name(to)}")
                return folded
            return B.cast(arg, to, try_=(t is exp.TryCast or bool(node.args.get("safe"))))
        if t is exp.Interval:
            return self._interval(node, rec)
        if t is exp.Extract:
            part = node.this.name.lower() if isinstance(node.this, (exp.Var, exp.Identifier)) \
                else str(node.this.this).lower()
            part = {"years": "year", "months": "month", "days": "day", "dayofweek": "dow",
                    "dayofyear": "doy", "hours": "hour", "minutes": "minute",
                    "seconds": "second"}.get(part, part)
            return B.call(f"extract_{part}", rec(node.expression), display=f"EXTRACT({part})")
        if t is exp.Substring:
            args = [rec(node.this)]
            if node.args.get("start") is not None:
                args.append(rec(node.args["start"]))
            else:
                args.append(lit(1))
            if node.args.get("length") is not None:
                args.append(rec(node.args["length"]))
            return B.call("substring", *args)
        if t is exp.Trim:
            pos = (node.args.get("position") or "BOTH").upper()
            fn = {"BOTH": "trim", "LEADING": "ltrim", "TRAILING": "rtrim"}[pos]
            args = [rec(node.this)]
            if node.args.get("expression") is not None:
                args.append(rec(node.expression))
            return B.call(fn, *args)
        if t is exp.DateTrunc:
            unit = node.args["unit"]
            unit_text = unit.name if isinstance(unit, (exp.Literal, exp.Var)) else unit.sql()
            return B.call("date_trunc", lit(unit_text.lower()), rec(node.this))
        if t in (exp.Exists,):
            plan, _ = self.query(node.this, scope)
            return SubqueryExpr("exists", plan, T.BOOLEAN)
        if t is exp.Subquery:
            plan, _ = self.query(node.this, scope)
            if len(plan.schema) != 1:
                raise BindError(f"scalar subquery returns {len(plan.schema)} columns, expected 1")
            return SubqueryExpr("scalar", plan, plan.schema[0].dtype)
        if t is exp.Anonymous:
            from ..plan import functions as F
            name = F.canonical(node.name)
            if name == "date_part" and len(node.expressions) == 2:
                part = rec(node.expressions[0])
                if isinstance(part, Literal) and isinstance(part.value, str):
                    return B.call(f"extract_{part.value.lower()}", rec(node.expressions[1]))
            args = [rec(a) for a in node.expressions]
            return B.call(name, *args, display=node.name)
        if t in _FUNCS:
            fn, keys = _FUNCS[t]
            if t is exp.Pad and not node.args.get("is_left"):
                fn = "rpad"
            args = []
            for k in keys:
                v = node.args.get(k)
                if v is None:
                    continue
                if isinstance(v, list):
                    args += [rec(x) for x in v]
                else:
                    args.append(rec(v))
            return B.call(fn, *args, display=node.sql_name())
        if t is exp.Star:
            raise BindError("* is not allowed here")
        if t is exp.Window:
            raise UnsupportedError("window functions (OVER) are not supported yet")
        if isinstance(node, exp.Func):
            raise UnsupportedError(f"function {node.sql_name()} is not supported yet")
        raise UnsupportedError(f"expression {node.key.upper()} ({node.sql()[:60]}) is not supported yet")

    def _quantified(self, node: exp.Expression, scope: Scope, rec) -> Expr:
        """`x op ANY (q)` / `x op ALL (q)`; ALL is NOT (x negated-op ANY (q))."""
        op = _BINARY[type(node)]
        quant = node.expression
        if op not in _NEGATED_COMPARISON:
            raise BindError(f"{quant.key.upper()} needs a comparison: {node.sql()}")
        query = quant.this.this if isinstance(quant.this, exp.Subquery) else quant.this
        if not isinstance(query, exp.Query):
            raise UnsupportedError(f"{quant.key.upper()} over a non-subquery is not supported: {node.sql()}")
        arg = rec(node.this)
        plan, _ = self.query(query, scope)
        if len(plan.schema) != 1:
            raise BindError(f"subquery in {quant.key.upper()} returns {len(plan.schema)} columns, expected 1")
        common = T.common_type(arg.dtype, plan.schema[0].dtype)
        if common is None:
            raise TypeMismatchError(f"{quant.key.upper()} subquery: cannot compare {T.type_name(arg.dtype)} "
                                    f"with {T.type_name(plan.schema[0].dtype)}")
        if isinstance(quant, exp.All):
            return SubqueryExpr("in", plan, T.BOOLEAN, B.cast(arg, common), True, _NEGATED_COMPARISON[op])
        return SubqueryExpr("in", plan, T.BOOLEAN, B.cast(arg, common), False, op)

    def _column(self, node: exp.Column, scope: Scope) -> Expr:
        table = node.table or None
        name = node.name
        hit = scope.lookup(table, name)
        if hit is None:
            pos = node_position(self.sql, node)
            shown = (f"{table}." if table else "") + name.replace("\x00", "")
            raise _positioned(UnknownColumnError(
                f"column '{shown}' does not exist{_at(pos)}{suggest(name, scope.all_names())}"), pos)
        return hit

    def _interval(self, node: exp.Interval, rec) -> Expr:
        value = node.this
        unit = node.args.get("unit")
        unit_text = None
        if unit is not None:
            unit_text = unit.name if isinstance(unit, (exp.Var, exp.Literal)) else unit.sql()
        v = rec(value) if value is not None else None
        if not isinstance(v, Literal) or v.value is None:
            if unit_text is None:
                raise UnsupportedError("INTERVAL needs a constant")
            # INTERVAL (expr) DAY -> expr * INTERVAL '1' DAY
            return B.call("multiply", B.cast(v, T.INT64), _interval_literal("1", unit_text))
        return _interval_literal(str(v.value), unit_text)


# ---- helpers -------------------------------------------------------------------------------------


_WINDOW_FUNCS = {
    exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank",
    exp.PercentRank: "percent_rank", exp.CumeDist: "cume_dist", exp.Ntile: "ntile",
    exp.Lag: "lag", exp.Lead: "lead", exp.FirstValue: "first_value",
    exp.LastValue: "last_value", exp.NthValue: "nth_value",
}


def _window_consts(name: str, args: list[Expr]) -> tuple[list[Expr], tuple]:
    """Split constant arguments (ntile n, lag offset/default, nth_value n) from value ones."""
    def const(e: Expr, what: str):
        if not isinstance(e, Literal):
            raise UnsupportedError(f"{name.upper()} {what} must be a constant")
        return e.value

    if name == "ntile":
        return [], (const(args[0], "bucket count"),)
    if name in ("lag", "lead"):
        offset = const(args[1], "offset") if len(args) > 1 else 1
        default = const(args[2], "default") if len(args) > 2 else None
        return [args[0]], (offset, default)
    if name == "nth_value":
        return [args[0]], (const(args[1], "position"),)
    return list(args), ()


def _frame(spec: exp.WindowSpec) -> Frame:
    mode = (spec.args.get("kind") or "range").lower()
    if mode not in ("rows", "range"):
        raise UnsupportedError(f"{mode.upper()} window frames are not supported")

    def bound(value, side) -> FrameBound:
        text = value.name if isinstance(value, exp.Expression) else str(value)
        if isinstance(value, str) or (isinstance(value, exp.Var)):
            up = text.upper()
            if up == "UNBOUNDED":
                return FrameBound("unbounded_preceding" if (side or "").lower() == "preceding"
                                  else "unbounded_following")
            if up in ("CURRENT ROW", "CURRENT"):
                return FrameBound("current")
        kind = (side or "preceding").lower()
        if isinstance(value, exp.Literal) and not value.is_string:
            n = decimal.Decimal(value.this)
            if n < 0:
                raise BindError("window frame offsets must not be negative")
            return FrameBound(kind, int(n) if n == int(n) else n)
        if isinstance(value, exp.Interval) and isinstance(value.this, exp.Literal):
            # RANGE over a DATE or TIMESTAMP key: the offset is a datetime.timedelta
            if mode != "range":
                raise BindError(f"{mode.upper()} frame offsets must be integers, not intervals")
            unit = value.args.get("unit")
            iv = _interval_literal(value.this.name, unit.name if unit is not None else None).value
            if iv.months:
                raise UnsupportedError("RANGE frame offsets in months or years are not supported")
            if iv.nanoseconds % 1000:
                raise UnsupportedError("RANGE frame offsets finer than a microsecond are not supported")
            offset = datetime.timedelta(days=iv.days, microseconds=iv.nanoseconds // 1000)
            if offset < datetime.timedelta(0):
                raise BindError("window frame offsets must not be negative")
            return FrameBound(kind, offset)
        raise UnsupportedError(f"window frame bound {text} is not supported")

    start = bound(spec.args.get("start"), spec.args.get("start_side"))
    end_value = spec.args.get("end")
    end = bound(end_value, spec.args.get("end_side")) if end_value is not None else FrameBound("current")
    return Frame(mode, start, end)


def _has_outer_refs(plan: LogicalPlan) -> bool:
    """Whether `plan` reads a column of a query outside it (an OuterRef to a column that no
    node inside it, subqueries included, produces)."""
    from ..plan.expr import walk

    defined: set[str] = set()
    refs: set[str] = set()

    def visit(p: LogicalPlan) -> None:
        for node in walk_plan(p):
            defined.update(node.column_ids)
            if hasattr(node, "fields"):
                defined.update(f.id for f in node.fields)
            for e in node.expressions():
                for x in walk(e):
                    if isinstance(x, OuterRef):
                        refs.add(x.id)
                    elif isinstance(x, SubqueryExpr):
                        visit(x.plan)

    visit(plan)
    return bool(refs - defined)


def _self_referencing(cte: exp.CTE) -> bool:
    name = cte.alias_or_name
    return any(t.name == name for t in cte.this.find_all(exp.Table))


def _looks_like_path(name: str) -> bool:
    low = name.lower()
    return ("/" in name or "*" in name or "://" in name
            or low.endswith((".parquet", ".csv", ".csv.gz", ".tsv", ".pq")))


def _positioned(err: Error, pos) -> Error:
    if pos:
        err.line, err.column = pos
    return err


def _at(pos) -> str:
    return f" at line {pos[0]}, column {pos[1]}" if pos else ""


def _column_keys(names: list[str]) -> list[str]:
    """The names sqlglot sees: lower case unless two columns differ only by case."""
    lowered = [n.lower() for n in names]
    counts: dict[str, int] = {}
    for n in lowered:
        counts[n] = counts.get(n, 0) + 1
    return [lo if counts[lo] == 1 else n for n, lo in zip(names, lowered, strict=True)]


def _name_unaliased_projections(node: exp.Expression) -> None:
    """Give unaliased select expressions their SQL text as name (as DuckDB does), before
    qualify would name them _col_N."""
    for sel in node.find_all(exp.Select):
        new = []
        changed = False
        for e in sel.expressions:
            if isinstance(e, exp.Column) and isinstance(e.this, exp.Identifier) and e.this.quoted:
                # a quoted name is exact: it names the output column as written
                new.append(exp.alias_(e, exp.to_identifier(e.this.name, quoted=True), copy=False))
                changed = True
                continue
            if isinstance(e, (exp.Alias, exp.Column, exp.Star)):
                new.append(e)
                continue
            name = e.sql(dialect=PQEDialect, normalize_functions="lower")
            if len(name) > 64:
                new.append(e)
                continue
            # (exp.alias_ would put the name on a Subquery itself; qualify needs an Alias)
            new.append(exp.Alias(this=e, alias=exp.to_identifier(name, quoted=True)))
            changed = True
        if changed:
            sel.set("expressions", new)


def _literal(node: exp.Literal) -> Literal:
    text = node.this
    if node.is_string:
        return Literal(text, T.TEXT)
    try:
        if re.fullmatch(r"[+-]?\d+", text):
            value = int(text)
            if -(1 << 31) <= value < (1 << 31):
                return Literal(value, T.INT32)  # PostgreSQL's and DuckDB's INTEGER (int4)
            return lit(value)
        if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)", text):
            d = decimal.Decimal(text)
            sign, digits, exp_ = d.as_tuple()
            scale = max(0, -int(exp_))
            precision = max(len(digits), scale + 1)
            if precision > T.MAX_DECIMAL_PRECISION:
                return Literal(float(d), T.FLOAT64)
            return Literal(d, pa.decimal128(precision, scale))
        return Literal(float(text), T.FLOAT64)
    except (ValueError, decimal.InvalidOperation):
        raise BindError(f"invalid number {text!r}") from None


def _narrow_int_literal(e: Expr, other: Expr) -> Expr:
    """An integer literal meeting a DECIMAL takes the narrowest decimal type (DuckDB's rule),
    so `1 - l_discount` stays DECIMAL(16,2) instead of widening to 22 digits."""
    if (isinstance(e, Literal) and isinstance(e.value, int) and not isinstance(e.value, bool)
            and T.is_decimal(other.dtype)):
        digits = len(str(abs(e.value)))
        if digits <= T.MAX_DECIMAL_PRECISION:
            return Literal(decimal.Decimal(e.value), pa.decimal128(digits, 0))
    return e


def _rewrite_escape(pattern: str, esc: str) -> str:
    """Rewrite a LIKE pattern with a custom escape character to backslash escapes."""
    out = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == esc and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append("\\" + nxt if nxt in "%_\\" else nxt)
            i += 2
            continue
        if ch == "\\":
            out.append("\\\\")
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def sql_type(dt: exp.DataType) -> pa.DataType:
    text = dt.sql(dialect=PQEDialect)
    try:
        return T.parse_type(text)
    except Error:
        pass
    base = dt.this.name if hasattr(dt.this, "name") else str(dt.this)
    try:
        return T.parse_type(base.lower().replace("_", " "))
    except Error:
        raise UnsupportedError(f"type {text} is not supported") from None


def _interval_literal(text: str, unit: str | None) -> Literal:
    """INTERVAL '3' MONTH, INTERVAL '68 days', INTERVAL '1 day 2 hours'."""
    months = days = nanos = 0
    s = text.strip().lower()
    if unit is not None:
        s = f"{s} {unit.lower()}"
    tokens = s.replace(",", " ").split()
    if len(tokens) % 2 != 0:
        raise BindError(f"invalid interval '{text}'")
    for i in range(0, len(tokens), 2):
        try:
            n = decimal.Decimal(tokens[i])
        except decimal.InvalidOperation:
            raise BindError(f"invalid interval '{text}'") from None
        u = _INTERVAL_UNITS.get(tokens[i + 1])
        if u is None:
            raise BindError(f"invalid interval unit '{tokens[i + 1]}'")
        if n != int(n) and u[2] == 0:
            raise BindError(f"fractional interval '{text}' is not supported")
        months += int(n) * u[0]
        days += int(n) * u[1]
        nanos += int(n * u[2])
    return Literal(pa.MonthDayNano([months, days, nanos]), T.INTERVAL)


def date_literal(value: str) -> Literal:
    return Literal(datetime.date.fromisoformat(value), T.DATE)


__all__ = ["Binder", "View", "PQEDialect", "Project"]
