"""Bind sqlglot ASTs to pqe logical plans.

sqlglot does what it does well first: `qualify` resolves every column to its table alias,
expands `*`, pushes derived-table column aliases inward and expands GROUP BY ordinals and
alias references. The binder then walks the qualified AST and builds the plan through
`pqe.plan.builder`, the same builder the DataFrame API uses.

Refuse by default: before anything is bound, `supported.check_supported` walks the statement
and refuses every node type and argument the front end does not consume (the declared table
`supported.CONSUMED`), so no clause is accepted and ignored.

Subqueries become `SubqueryExpr` nodes (with `OuterRef`s for correlated columns); the
decorrelation rule turns them into semi/anti/left joins. sqlglot's own `unnest_subqueries` is
not used: it rewrites EXISTS into LEFT JOIN + IS NULL and non-equality correlation into
ARRAY_AGG/ARRAY_ANY, which loses the semi/anti joins and NOT IN's NULL semantics pqe needs.

Modules, by concern: `scope` (names, views), `qualification` (catalog lookups, sqlglot's
qualify and the rewrites before it), `relations` (queries, CTEs, set operations, FROM, joins,
samples), `select` (a SELECT's clauses, ORDER BY, LIMIT/FETCH), `grouping` (GROUP BY and
aggregates), `windows`, `expressions` (a dispatch table by sqlglot class), `literals`
(numbers, intervals, types), `supported` (the declared table and the check), `core` (Binder).
"""

from ...plan.logical import Project
from ..parser import PQEDialect
from .core import Binder
from .literals import date_literal, interval_literal, literal, sql_type, text_length
from .scope import AggContext, Scope, View
from .supported import CONSUMED, check_supported, refuse_unknown_args

__all__ = ["Binder", "View", "Scope", "AggContext", "PQEDialect", "Project", "sql_type", "text_length",
           "date_literal", "interval_literal", "literal", "CONSUMED", "check_supported",
           "refuse_unknown_args"]
