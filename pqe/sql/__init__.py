"""The SQL front end: the only code that imports sqlglot.

`parse_statements` turns text into statements (EXPLAIN unwrapped, `?` parameters bound as
typed literals in textual order); `bind_statement` binds one against a catalog snapshot into a
typed statement (`pqe.plan.statements`). Nothing here executes anything.
"""

from __future__ import annotations

from sqlglot import exp

from .binder import View
from .parser import ParsedStatement, builtin_call, insert_rows_statement, parse, parse_statements
from .statements import bind_statement, statement_word

_WRITES = (exp.Create, exp.Insert, exp.Update, exp.Delete, exp.Drop, exp.Copy,
           exp.TruncateTable)


def is_write(ast: exp.Expression) -> bool:
    """Whether a parsed statement changes the catalog or writes a file (it is then bound and
    run under the session's write lock)."""
    return isinstance(ast, _WRITES)


__all__ = ["ParsedStatement", "View", "bind_statement", "builtin_call", "insert_rows_statement",
           "is_write", "parse", "parse_statements",
           "statement_word"]
