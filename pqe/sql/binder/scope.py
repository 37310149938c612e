"""Names visible while binding: scopes of table aliases, views, the state above an Aggregate,
and positioned errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...errors import AmbiguousColumnError, Error
from ...plan.expr import AggCall, ColumnRef, Expr, Field, OuterRef


@dataclass
class View:
    """A named query stored in the catalog; bound afresh at each use.

    `sql` is the query's text as sqlglot writes it back (for display); `ast` the query as it
    was parsed, and `source` the statement text its positions refer to, bound at each use
    when given: text written back loses what pqe's parser reads beyond sqlglot's own (a
    window frame's EXCLUDE, `INTERVAL '1.5 days'`, `xor(a, b)`), so a view answered other
    than its own query or could not be read at all."""

    sql: str
    column_names: tuple[str, ...] | None = None
    ast: Any = field(default=None, compare=False, repr=False)
    source: str | None = field(default=None, compare=False, repr=False)


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
            if cols is None:
                return None
            hits = _named(cols, column)
        else:
            hits = [f for cols in self.tables.values() for f in _named(cols, column)]
        if len(hits) > 1:
            where = f"{table}." if table else ""
            raise AmbiguousColumnError(f"column reference '{where}{column}' is ambiguous")
        return hits[0] if hits else None

    def all_names(self) -> list[str]:
        out = []
        scope = self
        while scope is not None:
            for alias, cols in scope.tables.items():
                out += list(cols)
                if alias:  # (the output columns of a set operation have no qualifier: the
                    # ORDER BY of `... UNION ... ORDER BY t.a` suggested '.a')
                    out += [f"{alias}.{c}" for c in cols]
            scope = scope.parent
        return out


def _named(cols: dict[str, list[Field]], column: str) -> list[Field]:
    """The fields named `column` in one relation. A subquery's columns are named as its
    select list shows them (`Name`, from a table's column `Name`), where sqlglot resolved
    the reference by the lower-case key it matched (`name`): that spelling is found when
    it is the only one that matches regardless of case."""
    hits = cols.get(column)
    if hits is not None:
        return hits
    folded = [n for n in cols if n.lower() == column.lower()]
    return cols[folded[0]] if len(folded) == 1 else []


@dataclass
class AggContext:
    """State for binding expressions above an Aggregate (SELECT, HAVING, QUALIFY, ORDER BY)."""

    from_scope: Scope
    groups: list[tuple[Expr, Field]]
    aggs: list[tuple[AggCall, Field]]
    grouping_id: Field | None = None
    by_node: dict[int, Field] = field(default_factory=dict)  # id(aggregate AST node) -> column
    # a GROUP BY key holding a subquery, by its qualified SQL text (subquery_key) -> index
    # into `groups`: such a key binds to a new plan each time, so the select list, HAVING,
    # ORDER BY and GROUPING() find it by its text rather than by equality of bound expressions
    by_text: dict[str, int] = field(default_factory=dict)


def positioned(err: Error, pos) -> Error:
    if pos:
        err.line, err.column = pos
    return err


def at(pos) -> str:
    return f" at line {pos[0]}, column {pos[1]}" if pos else ""
