"""The Binder: one statement's query bound against a catalog snapshot."""

from __future__ import annotations

from sqlglot import exp

from ...catalog import Catalog, CatalogSnapshot, TableProvider
from ...plan import builder as B
from ...plan.expr import ColumnRef, Expr
from ...plan.logical import LogicalPlan, WithCTE
from .expressions import ExpressionMixin
from .grouping import GroupingMixin
from .qualification import QualifyMixin
from .relations import RelationsMixin
from .select import SelectMixin
from .supported import check_supported
from .windows import WindowMixin


class Binder(QualifyMixin, RelationsMixin, SelectMixin, GroupingMixin, WindowMixin,
             ExpressionMixin):
    """Binds one statement's query against a catalog snapshot."""

    # a recursive CTE stops with an error after this many iterations
    MAX_RECURSION = 10_000

    def __init__(self, catalog: Catalog | CatalogSnapshot, sql: str = "",
                 view_path: tuple[str, ...] = ()):
        self.catalog = catalog
        self.sql = sql
        self.ctes: list[dict[str, tuple[LogicalPlan, list[str]]]] = []
        self.adhoc: dict[str, TableProvider] = {}  # read_parquet(...) and 'file.parquet' sources
        self._window_refs: dict[int, Expr] = {}  # window call AST node -> its output column
        self.keys: dict[str, dict[str, str]] = {}  # table -> sqlglot column key -> real name
        self.view_path = view_path  # views being bound around this binder (cycle check)
        self._views: dict[str, LogicalPlan] = {}  # view name -> its plan, bound once
        self.table_refs: dict[str, int] = {}  # catalog name -> references in the statement
        self.once_views: dict[str, tuple[str, LogicalPlan]] = {}  # views computed once

    def check(self, node: exp.Expression) -> None:
        """Refuse any construct in `node` the front end would not consume (supported.py)."""
        check_supported(node, self.sql)

    def bind_query(self, node: exp.Expression) -> LogicalPlan:
        """A query AST -> a plan whose final Project names the output columns."""
        self.check(node)
        node = self._qualify(node)
        plan, names = self.query(node, None)
        if self.once_views:
            plan = WithCTE(plan, tuple(t for t, _ in self.once_views.values()),
                           tuple(p for _, p in self.once_views.values()))
            plan = B.project(plan, [(ColumnRef(f), n)
                                    for f, n in zip(plan.schema, names, strict=True)])
        return plan
