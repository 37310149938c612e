"""Tab completion and highlighting for the interactive prompt.

Completion is by context rather than a full parse (the buffer is usually an unfinished
statement that would not parse): after FROM/JOIN a table name is wanted; after `x.` the
columns of table or alias `x`; elsewhere columns of the tables the buffer mentions, then
tables, keywords and functions. Nothing is cached: the catalog keeps each table's schema, so
asking for it per Tab press is cheap and never stale after CREATE/DROP.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.lexers import Lexer, PygmentsLexer
from pygments.lexers.sql import SqlLexer

from .commands import COMMANDS

KEYWORDS = """
SELECT FROM WHERE GROUP BY HAVING ORDER LIMIT OFFSET DISTINCT AS AND OR NOT IN IS NULL LIKE
ILIKE BETWEEN EXISTS CASE WHEN THEN ELSE END JOIN INNER LEFT RIGHT FULL OUTER CROSS SEMI ANTI
ON USING UNION INTERSECT EXCEPT ALL ASC DESC NULLS FIRST LAST WITH RECURSIVE VALUES TRUE FALSE
CAST INTERVAL DATE TIMESTAMP EXPLAIN ANALYZE SHOW TABLES DESCRIBE OVER PARTITION ROWS RANGE
FILTER BIGINT INTEGER DOUBLE DECIMAL VARCHAR BOOLEAN
""".split()

FUNCTIONS = """
count sum avg min max stddev variance coalesce nullif abs round floor ceil sqrt power ln log
exp mod sign length lower upper trim ltrim rtrim substring substr concat replace position
strpos starts_with ends_with extract date_trunc date_part year month day current_date
row_number rank dense_rank lag lead first_value last_value greatest least
""".split()

# Keywords after which a table name comes
_TABLE_CONTEXT = {"FROM", "JOIN", "TABLE", "DESCRIBE", "DESC", "INTO", "UPDATE"}
_WORD = re.compile(r"[\w.\"]*$")
_PREV_WORD = re.compile(r"(\w+)\s*$")


def _case_like(candidate: str, typed: str) -> str:
    """Keywords follow the user's case: `sel` completes to `select`, `SEL` to `SELECT`."""
    return candidate.lower() if typed and typed[0].islower() else candidate.upper()


class SQLCompleter(Completer):
    """Completes dot commands, table names, column names, keywords and functions."""

    def __init__(self, ctx: Any):
        self.ctx = ctx

    # ---- catalog ---------------------------------------------------------------------------

    def tables(self) -> list[str]:
        try:
            return list(self.ctx.tables())
        except Exception:
            return []

    def columns(self, table: str) -> list[str]:
        try:
            return list(self.ctx.table(table).schema.names)
        except Exception:  # unknown table or unreadable files: nothing to offer
            return []

    def _resolve(self, qualifier: str, text: str) -> str | None:
        """The table a qualifier names: a table itself, or an alias `FROM table [AS] alias`."""
        tables = {t.lower(): t for t in self.tables()}
        q = qualifier.strip('"').lower()
        if q in tables:
            return tables[q]
        for m in re.finditer(r"([\w\"]+)\s+(?:as\s+)?([\w\"]+)", text, re.I):
            if m.group(2).strip('"').lower() == q and m.group(1).strip('"').lower() in tables:
                return tables[m.group(1).strip('"').lower()]
        return None

    def _mentioned(self, text: str) -> list[str]:
        words = {w.lower() for w in re.findall(r"\w+", text)}
        return [t for t in self.tables() if t.lower() in words]

    # ---- completion ------------------------------------------------------------------------

    def get_completions(self, document: Document, complete_event: CompleteEvent
                        ) -> Iterator[Completion]:
        before = document.text_before_cursor
        if before.lstrip().startswith(".") and "\n" not in before:
            yield from self._dot(before.lstrip())
            return
        word = _WORD.search(before).group(0)
        if "." in word:
            qualifier, partial = word.rsplit(".", 1)
            table = self._resolve(qualifier, document.text)
            if table is not None:
                yield from _matches(self.columns(table), partial, "column")
            return
        prev = _PREV_WORD.search(before[: len(before) - len(word)])
        prev_kw = prev.group(1).upper() if prev else ""
        if prev_kw in _TABLE_CONTEXT:
            yield from _matches(self.tables(), word, "table")
            return
        if not word:
            return
        seen: set[str] = set()
        # columns of the tables the statement names; before it names any, of every table
        tables = self._mentioned(document.text) or self.tables()
        cols = [c for t in tables for c in self.columns(t)]
        for group, meta in ((cols, "column"), (self.tables(), "table")):
            for c in _matches(group, word, meta):
                if c.text not in seen:
                    seen.add(c.text)
                    yield c
        yield from _matches([_case_like(k, word) for k in KEYWORDS], word, "keyword")
        yield from _matches([_case_like(f, word) + "(" for f in FUNCTIONS], word, "function")

    def _dot(self, before: str) -> Iterator[Completion]:
        name, space, arg = before.partition(" ")
        if not space:
            for c in COMMANDS.values():
                if ("." + c.name).startswith(name.lower()):
                    yield Completion("." + c.name, -len(name), display_meta=c.help)
            return
        cmd = name.lstrip(".").lower()
        if cmd and any(c.startswith(cmd) for c in ("schema", "tables")):
            yield from _matches(self.tables(), arg, "table")
        elif cmd and any(c.startswith(cmd) for c in ("mode",)):
            yield from _matches(["table", "csv", "json", "markdown"], arg, "mode")
        elif cmd and "timer".startswith(cmd):
            yield from _matches(["on", "off"], arg, "")


def _matches(candidates: Iterable[str], partial: str, meta: str) -> Iterator[Completion]:
    low = partial.lower()
    for c in candidates:
        if c.lower().startswith(low) and c != partial:
            yield Completion(c, -len(partial), display_meta=meta)


def sql_lexer() -> Lexer:
    return PygmentsLexer(SqlLexer)
