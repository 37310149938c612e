"""Tab completion and highlighting for the interactive prompt.

Completion works on the statement under the cursor, which is usually unfinished and would not
parse, so it reads it with a forgiving scanner (open strings, quoted names and parentheses
are fine) instead of the SQL front end:

- parentheses make groups; a group that starts with SELECT/WITH/VALUES is a query scope (a
  subquery, a CTE body), and the statement itself is the outermost scope;
- each scope's sources come from FROM (comma lists included), JOIN, UPDATE and INTO: a table or
  CTE name, a subquery or a table function, each with its alias (`t x`, `t AS x`,
  `(...) AS x(a, b)`); names defined by WITH are visible in the scope and the scopes inside it;
- the columns of a subquery, a CTE or a table function come from binding that query alone
  (never running it); when it does not bind (it refers to an outer query, or is unfinished),
  from its select list as written.

After `x.` the columns of the source with alias or name `x` (innermost scope first, so a
correlated subquery reaches its outer query's aliases); after FROM/JOIN/INTO/UPDATE table and
CTE names; inside `INSERT INTO t (` the columns of t; elsewhere the columns of the sources in
scope, then tables, keywords and functions. Matching ignores case; names that need quotes
are completed quoted, and a name begun with `"` completes inside the quotes. Nothing is
cached: the catalog keeps each table's schema, so asking per Tab press is cheap and never
stale after CREATE/DROP.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prompt_toolkit.completion import CompleteEvent, Completer, Completion, PathCompleter
from prompt_toolkit.document import Document
from prompt_toolkit.lexers import Lexer, PygmentsLexer
from pygments.lexers.sql import SqlLexer

from .commands import COMMANDS
from .render import MODES

KEYWORDS = """
SELECT FROM WHERE GROUP BY HAVING ORDER LIMIT OFFSET DISTINCT AS AND OR NOT IN IS NULL LIKE
ILIKE BETWEEN EXISTS CASE WHEN THEN ELSE END JOIN INNER LEFT RIGHT FULL OUTER CROSS SEMI ANTI
ON USING UNION INTERSECT EXCEPT ALL ASC DESC NULLS FIRST LAST WITH RECURSIVE VALUES TRUE FALSE
CAST INTERVAL DATE TIMESTAMP EXPLAIN ANALYZE SHOW TABLES DESCRIBE OVER PARTITION ROWS RANGE
FILTER BIGINT INTEGER DOUBLE DECIMAL VARCHAR BOOLEAN INSERT INTO UPDATE SET DELETE CREATE
TABLE VIEW DROP COPY TO
""".split()

FUNCTIONS = """
count sum avg min max stddev variance coalesce nullif abs round floor ceil sqrt power ln log
exp mod sign length lower upper trim ltrim rtrim substring substr concat replace position
strpos starts_with ends_with extract date_trunc date_part year month day current_date
row_number rank dense_rank lag lead first_value last_value greatest least
string_agg array_agg median quantile_cont quantile_disc regexp_extract regexp_replace
concat_ws chr ascii octet_length translate overlay md5 hash typeof date_diff strftime
strptime current_timestamp random list_value list_contains unnest struct_extract
""".split()

# Keywords after which a table name comes
_TABLE_CONTEXT = {"FROM", "JOIN", "TABLE", "DESCRIBE", "DESC", "INTO", "UPDATE"}
# Keywords that introduce a source in a scope
_SOURCE_WORDS = {"FROM", "JOIN", "UPDATE", "INTO"}
# Words that end a table reference instead of naming its alias
_NOT_ALIAS = {
    "WHERE", "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "OUTER", "CROSS", "NATURAL", "SEMI",
    "ANTI", "ASOF", "POSITIONAL", "LATERAL", "ON", "USING", "GROUP", "ORDER", "HAVING", "LIMIT",
    "OFFSET", "UNION", "INTERSECT", "EXCEPT", "WINDOW", "QUALIFY", "SET", "VALUES", "SELECT",
    "FROM", "AS", "RETURNING", "FETCH", "TABLESAMPLE", "WITH", "DEFAULT", "BY", "AND", "OR",
    "NOT", "WHEN", "THEN", "ELSE", "END", "TO", "PIVOT", "UNPIVOT", "SAMPLE", "INTO", "ALL",
    "DISTINCT", "ASC", "DESC", "ROWS", "OVER",
}
# After these (with nothing typed yet), Tab offers the columns of the sources in scope
_COLUMN_CONTEXT = {"SELECT", "WHERE", "SET", "AND", "OR", "ON", "BY", "HAVING", "DISTINCT", "NOT",
                   "WHEN", "THEN", "ELSE", "USING", ",", "("}
_CLAUSES = {"SELECT", "FROM", "WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "SET", "ON", "JOIN",
            "VALUES", "INTO", "UPDATE", "USING", "WINDOW", "QUALIFY", "RETURNING", "OFFSET"}
_QUERY_START = {"SELECT", "WITH", "VALUES", "FROM", "TABLE"}
_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>[eE]?'(?:[^']|'')*(?:'|\Z))
  | (?P<qident>"(?:[^"]|"")*(?:"|\Z))
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+)
  | (?P<word>[^\W\d][\w$]*)
  | (?P<op>.)
""", re.X | re.S)


# ---- scanning --------------------------------------------------------------------------------


@dataclass
class Tok:
    kind: str  # word, qident, string, number, op, comment
    text: str
    start: int
    end: int
    closed: bool = True  # False: a string, quoted name or block comment still open

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else ""

    @property
    def name(self) -> str | None:
        """The identifier this token spells (unquoted), or None."""
        if self.kind == "word":
            return self.text
        if self.kind == "qident":
            inner = self.text[1:-1] if self.closed else self.text[1:]
            return inner.replace('""', '"')
        return None

    def is_op(self, text: str) -> bool:
        return self.kind == "op" and self.text == text


_CLOSED = {"qident": re.compile(r'"(?:[^"]|"")*"', re.S),
           "string": re.compile(r"[eE]?'(?:[^']|'')*'", re.S),
           "comment": re.compile(r"--.*|/\*.*\*/", re.S)}


def scan(text: str) -> list[Tok]:
    """Every token of `text`, comments included (whitespace left out)."""
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "op"
        if kind != "ws":
            closed = kind not in _CLOSED or _CLOSED[kind].fullmatch(m.group()) is not None
            out.append(Tok(kind, m.group(), m.start(), m.end(), closed))
    return out


@dataclass(eq=False)
class Group:
    """Tokens between parentheses (or a whole statement), nested groups as items."""

    open: Tok | None
    close: Tok | None
    items: list[Any] = field(default_factory=list)  # Tok | Group
    parent: Group | None = None
    end: int = 0  # where an unclosed group's text ends

    @property
    def body_start(self) -> int:
        return self.open.end if self.open is not None else 0

    @property
    def body_end(self) -> int:
        return self.close.start if self.close is not None else self.end

    def contains(self, pos: int) -> bool:
        return self.body_start <= pos <= self.body_end

    @property
    def is_query(self) -> bool:
        return self.open is None or (bool(self.items) and isinstance(self.items[0], Tok)
                                     and self.items[0].upper in _QUERY_START)


def group(tokens: list[Tok], end: int) -> Group:
    root = Group(None, None, end=end)
    stack = [root]
    for t in tokens:
        if t.kind == "comment":
            continue
        if t.is_op("("):
            g = Group(t, None, parent=stack[-1], end=end)
            stack[-1].items.append(g)
            stack.append(g)
        elif t.is_op(")") and len(stack) > 1:
            stack.pop().close = t
        else:
            stack[-1].items.append(t)
    return root


def _word(item: Any, *words: str) -> bool:
    return isinstance(item, Tok) and item.upper in words


def _is_name(item: Any) -> bool:
    return isinstance(item, Tok) and item.kind in ("word", "qident")


# ---- what a scope reads ----------------------------------------------------------------------


@dataclass
class Cte:
    name: str
    columns: list[str] | None  # `name(a, b) AS (...)`
    body: Group
    definition: str  # `name [(cols)] AS (...)`, for binding queries that use it


@dataclass
class Source:
    alias: str | None
    table: str | None = None  # a table or CTE name
    query: Group | None = None  # a subquery
    expression: str | None = None  # a table function or quoted path, as written
    columns: list[str] | None = None  # `AS x(a, b)`


def _names_in(g: Group) -> list[str]:
    return [i.name for i in g.items if _is_name(i)]


def ctes_of(scope: Group, text: str) -> list[Cte]:
    """The names a scope's WITH clause defines."""
    items = scope.items
    if not items or not _word(items[0], "WITH"):
        return []
    out: list[Cte] = []
    i = 2 if len(items) > 1 and _word(items[1], "RECURSIVE") else 1
    while i < len(items) and _is_name(items[i]):
        name_tok = items[i]
        i += 1
        columns = None
        if i < len(items) and isinstance(items[i], Group):
            columns = _names_in(items[i])
            i += 1
        if i < len(items) and _word(items[i], "AS"):
            i += 1
        while i < len(items) and _word(items[i], "NOT", "MATERIALIZED"):
            i += 1
        if i >= len(items) or not isinstance(items[i], Group):
            break
        body = items[i]
        end = body.close.end if body.close is not None else body.end
        out.append(Cte(name_tok.name, columns, body, text[name_tok.start:end]))
        i += 1
        if i < len(items) and isinstance(items[i], Tok) and items[i].is_op(","):
            i += 1
        else:
            break
    return out


def sources_of(scope: Group, text: str) -> list[Source]:
    """The tables, CTEs, subqueries and table functions a scope reads, in order."""
    items = scope.items
    out: list[Source] = []
    for i, item in enumerate(items):
        if not _word(item, *_SOURCE_WORDS):
            continue
        if item.upper == "FROM" and i > 0 and _word(items[i - 1], "DISTINCT"):
            continue  # IS [NOT] DISTINCT FROM
        j = i + 1
        while True:
            j = _table_ref(items, j, text, out, into=item.upper == "INTO")
            if j is None or not (j < len(items) and isinstance(items[j], Tok)
                                 and items[j].is_op(",") and item.upper == "FROM"):
                break
            j += 1
    return out


def _table_ref(items: list, j: int, text: str, out: list[Source], into: bool = False
               ) -> int | None:
    """Parse one table reference at items[j] into `out`; the index after it (None if there
    is none)."""
    while j < len(items) and _word(items[j], "LATERAL", "ONLY"):
        j += 1
    if j >= len(items):
        return None
    item = items[j]
    source: Source
    if isinstance(item, Group):
        if item.is_query:
            source = Source(None, query=item)
        else:  # a parenthesized join: its sources
            out.extend(sources_of(item, text))
            return j + 1
        j += 1
    elif _is_name(item) and not (item.kind == "word" and item.upper in _NOT_ALIAS):
        name = item.name
        j += 1
        while j + 1 < len(items) and isinstance(items[j], Tok) and items[j].is_op(".") \
                and _is_name(items[j + 1]):  # schema.table: the table
            name = items[j + 1].name
            j += 2
        if not into and j < len(items) and isinstance(items[j], Group):  # a table function
            end = items[j].close.end if items[j].close is not None else items[j].end
            source = Source(None, expression=text[item.start:end])
            j += 1
        else:
            source = Source(None, table=name)
    elif isinstance(item, Tok) and item.kind == "string" and item.closed:
        source = Source(None, expression=item.text)
        j += 1
    else:
        return None
    if into:  # INSERT INTO t [AS x] (columns)
        if j + 1 < len(items) and _word(items[j], "AS") and _is_name(items[j + 1]):
            source.alias = items[j + 1].name
            j += 2
        out.append(source)
        return j
    if j < len(items) and _word(items[j], "AS"):
        j += 1
    if j < len(items) and _is_name(items[j]) and not (
            items[j].kind == "word" and items[j].upper in _NOT_ALIAS):
        source.alias = items[j].name
        j += 1
        if j < len(items) and isinstance(items[j], Group):
            source.columns = _names_in(items[j])
            j += 1
    out.append(source)
    return j


# ---- the completer ---------------------------------------------------------------------------


@dataclass
class Cursor:
    """What is being typed: the partial name (as typed), its qualifier, and where."""

    partial: str  # the name typed so far, unquoted
    typed: str  # the text the completion replaces
    quoted: bool  # begun with `"`
    qualifier: str | None  # `x` of `x.partial`
    previous: Tok | None  # the token before the qualified name
    earlier: Tok | None = None  # the token before that


def _quote(name: str) -> str:
    if _BARE.fullmatch(name) and name.upper() not in _RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


_RESERVED = set(KEYWORDS) | _NOT_ALIAS


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

    def _table_named(self, name: str) -> str | None:
        low = name.lower()
        for t in self.tables():
            if t.lower() == low:
                return t
        return None

    def query_columns(self, query: str) -> list[str] | None:
        """The output columns of one SELECT (text), by binding it; None if it does not bind.
        Binding reads schemas only: nothing runs, and only a single query is accepted."""
        try:
            from ..access import enforcing
            from ..plan.statements import Query

            session = self.ctx.session
            parsed = session.parse(query)
            if len(parsed) != 1 or parsed[0].explain is not None:
                return None
            with enforcing(session.config.access):
                stmt = session.bind(parsed[0], query)
            if not isinstance(stmt, Query):
                return None
            return [f.name for f in stmt.plan.schema]
        except Exception:  # unfinished, correlated or wrong: the caller falls back
            return None

    # ---- completion ------------------------------------------------------------------------

    def get_completions(self, document: Document, complete_event: CompleteEvent
                        ) -> Iterator[Completion]:
        before = document.text_before_cursor
        if before.lstrip().startswith(".") and "\n" not in before:
            yield from self._dot(before.lstrip())
            return
        yield from self._sql(document.text, document.cursor_position)

    def _sql(self, full: str, cursor: int) -> Iterator[Completion]:
        tokens = scan(full)
        # the statement under the cursor
        start, end = 0, len(full)
        for t in tokens:
            if t.is_op(";"):
                if t.end <= cursor:
                    start = t.end
                elif t.start >= cursor:
                    end = t.start
                    break
        text = full[:end]
        stmt = [t for t in tokens if t.start >= start and t.end <= end]
        at = self._cursor(stmt, cursor)
        if at is None:
            return
        root = group(stmt, end)
        scopes = self._scopes(root, cursor)
        analysis = _Analysis(self, text, scopes)

        if at.qualifier is not None:
            cols = analysis.qualified(at.qualifier)
            yield from _matches(cols, at, "column")
            return
        prev = at.previous
        distinct_from = prev is not None and prev.upper == "FROM" and \
            at.earlier is not None and at.earlier.upper == "DISTINCT"  # IS DISTINCT FROM
        if prev is not None and prev.upper in _TABLE_CONTEXT and not distinct_from or \
                (prev is not None and prev.is_op(",") and self._clause(scopes[-1], prev) == "FROM"):
            names = [c.name for c in analysis.ctes()] + self.tables()
            yield from _matches(_unique(names), at, "table")
            return
        insert = self._insert_columns(root, cursor, analysis)
        if insert is not None:
            yield from _matches(insert, at, "column")
            return
        in_scope = analysis.in_scope()
        if not at.typed:
            if in_scope and prev is not None and (prev.upper in _COLUMN_CONTEXT
                                                  or prev.text in _COLUMN_CONTEXT):
                yield from _matches(in_scope, at, "column")
            return
        seen: set[str] = set()
        # columns of the sources in scope; before the statement names any, of every table
        cols = in_scope or [c for t in self.tables() for c in self.columns(t)]
        names = [c.name for c in analysis.ctes()] + self.tables()
        for group_, meta in ((cols, "column"), (names, "table")):
            for c in _matches(group_, at, meta):
                if c.text not in seen:
                    seen.add(c.text)
                    yield c
        if not at.quoted:
            yield from _matches([_case_like(k, at.typed) for k in KEYWORDS], at, "keyword",
                                quote=False)
            yield from _matches([_case_like(f, at.typed) + "(" for f in FUNCTIONS], at,
                                "function", quote=False)

    @staticmethod
    def _cursor(stmt: list[Tok], cursor: int) -> Cursor | None:
        """The name being typed at `cursor`; None inside a string or comment, or right after
        a number or a closed quoted name."""
        for t in stmt:
            if t.kind in ("string", "comment") and t.start < cursor and (
                    cursor < t.end or cursor == t.end and
                    (not t.closed or t.text.startswith("--"))):
                return None
        before = [t for t in stmt if t.start < cursor and t.kind != "comment"]
        last = before[-1] if before else None
        typed_tok: Tok | None = None
        if last is not None and last.end == cursor:
            if last.kind == "word" or last.kind == "qident" and not last.closed:
                typed_tok = last
                before = before[:-1]
            elif last.kind in ("number", "qident", "string"):
                return None
        partial = typed_tok.name if typed_tok is not None else ""
        typed = typed_tok.text if typed_tok is not None else ""
        quoted = typed_tok is not None and typed_tok.kind == "qident"
        qualifier = None
        if before and before[-1].is_op(".") and (typed_tok is None or
                                                 before[-1].end == typed_tok.start):
            dot = before[-1]
            if len(before) > 1 and _is_name(before[-2]) and before[-2].end == dot.start:
                qualifier = before[-2].name
                before = before[:-2]
            else:
                return None  # `1.` or `).`: nothing to complete
        return Cursor(partial or "", typed, quoted, qualifier, before[-1] if before else None,
                      before[-2] if len(before) > 1 else None)

    @staticmethod
    def _scopes(root: Group, cursor: int) -> list[Group]:
        """The query scopes around the cursor, outermost first."""
        chain = [root]
        g = root
        while True:
            inner = [i for i in g.items if isinstance(i, Group) and i.contains(cursor)
                     and i.open is not None and i.open.end <= cursor]
            if not inner:
                break
            g = inner[-1]
            chain.append(g)
        return [s for s in chain if s.is_query]

    @staticmethod
    def _clause(scope: Group, tok: Tok) -> str | None:
        """The clause keyword `tok` is in, at the scope's top level."""
        clause = None
        for item in scope.items:
            if isinstance(item, Tok):
                if item.start >= tok.start:
                    break
                if item.upper in _CLAUSES:
                    clause = item.upper
        return clause

    def _insert_columns(self, root: Group, cursor: int, analysis: _Analysis
                        ) -> list[str] | None:
        """Inside `INSERT INTO t (`: the columns of t."""
        parent, g = None, root
        while True:
            inner = [i for i in g.items if isinstance(i, Group) and i.contains(cursor)
                     and i.open is not None and i.open.end <= cursor]
            if not inner:
                break
            parent, g = g, inner[-1]
        if parent is None or g.is_query:
            return None
        k = next(k for k, x in enumerate(parent.items) if x is g)
        if k >= 2 and _is_name(parent.items[k - 1]) and _word(parent.items[k - 2], "INTO"):
            return analysis.columns(Source(None, table=parent.items[k - 1].name),
                                    len(analysis.scopes) - 1)
        return None

    def _dot(self, before: str) -> Iterator[Completion]:
        name, space, arg = before.partition(" ")
        if not space:
            for c in COMMANDS.values():
                if ("." + c.name).startswith(name.lower()):
                    yield Completion("." + c.name, -len(name), display_meta=c.help)
            return
        cmd = name.lstrip(".").lower()
        at = Cursor(arg, arg, False, None, None)
        if cmd and any(c.startswith(cmd) for c in ("schema", "tables")):
            yield from _matches(self.tables(), at, "table", quote=False)
        elif cmd and any(c.startswith(cmd) for c in ("mode", "last")):
            yield from _matches(list(MODES), at, "mode", quote=False)
        elif cmd and "timer".startswith(cmd):
            yield from _matches(["on", "off"], at, "", quote=False)
        elif cmd and any(c.startswith(cmd) for c in ("read", "once", "output")):
            yield from self._paths(arg)

    def _paths(self, arg: str) -> Iterator[Completion]:
        """File names for `.read`/`.once`/`.output`, only where the session's access flags
        let those commands go: none without external access, and under `--allowed-path`
        only names inside an allowed directory (completion listed any directory: the names
        of files the shell would refuse to open)."""
        policy = self.ctx.session.config.access
        if policy is not None and not policy.external_access:
            return
        paths = PathCompleter(expanduser=True)
        for c in paths.get_completions(Document(arg, len(arg)), CompleteEvent()):
            if policy is not None and policy.allowed_paths is not None:
                full = arg[:len(arg) + c.start_position] + c.text
                try:
                    policy.check_local(full, ".read", pattern=False)
                except Exception:  # noqa: BLE001 - an AccessError: not offered
                    continue
            yield c


class _Analysis:
    """Sources, CTEs and their columns for the scopes around the cursor (computed as
    asked, once each)."""

    def __init__(self, completer: SQLCompleter, text: str, scopes: list[Group]):
        self.c = completer
        self.text = text
        self.scopes = scopes
        self._sources = [sources_of(s, text) for s in scopes]
        self._ctes = [ctes_of(s, text) for s in scopes]
        self._query_cache: dict[int, list[str]] = {}

    def ctes(self, upto: int | None = None) -> list[Cte]:
        """CTEs visible in scope `upto` (default: the innermost), innermost first."""
        last = len(self.scopes) - 1 if upto is None else upto
        return [c for level in reversed(range(last + 1)) for c in reversed(self._ctes[level])]

    def _cte(self, name: str, level: int) -> tuple[Cte, int] | None:
        low = name.lower()
        for lv in reversed(range(level + 1)):
            for c in self._ctes[lv]:
                if c.name.lower() == low:
                    return c, lv
        return None

    def columns(self, source: Source, level: int, depth: int = 0) -> list[str]:
        if source.columns:
            return source.columns
        if depth > 8:
            return []
        if source.table is not None:
            found = self._cte(source.table, level)
            if found is not None:
                cte, lv = found
                if cte.columns:
                    return cte.columns
                before = self._ctes[lv][: self._ctes[lv].index(cte)]
                visible = self.ctes(lv - 1) if lv > 0 else []
                return self._query(cte.body, visible[::-1] + before, level, depth)
            real = self.c._table_named(source.table)
            return self.c.columns(real) if real is not None else []
        if source.query is not None:
            return self._query(source.query, self.ctes(level)[::-1], level, depth)
        if source.expression is not None:
            return self.c.query_columns(f"SELECT * FROM {source.expression}") or []
        return []

    def _query(self, body: Group, ctes: list[Cte], level: int, depth: int) -> list[str]:
        key = id(body)
        if key not in self._query_cache:
            sub = self.text[body.body_start:body.body_end]
            prefix = ""
            if ctes:
                prefix = "WITH RECURSIVE " + ", ".join(c.definition for c in ctes) + " "
            cols = self.c.query_columns(f"{prefix}SELECT * FROM ({sub}) AS _pqe_completion")
            if cols is None:
                cols = self._select_list(body, level, depth)
            self._query_cache[key] = cols
        return self._query_cache[key]

    def _select_list(self, body: Group, level: int, depth: int) -> list[str]:
        """Output names of a query as written (when it does not bind)."""
        items = body.items
        inner = sources_of(body, self.text)
        try:
            start = next(i for i, t in enumerate(items) if _word(t, "SELECT")) + 1
        except StopIteration:
            return []
        while start < len(items) and _word(items[start], "DISTINCT", "ALL"):
            start += 1
        parts: list[list[Any]] = [[]]
        for item in items[start:]:
            if _word(item, "FROM", "UNION", "INTERSECT", "EXCEPT", "WHERE", "GROUP", "ORDER",
                     "LIMIT", "HAVING", "WINDOW", "QUALIFY"):
                break
            if isinstance(item, Tok) and item.is_op(","):
                parts.append([])
            else:
                parts[-1].append(item)
        out: list[str] = []
        for part in parts:
            if not part:
                continue
            last = part[-1]
            if isinstance(last, Tok) and last.is_op("*"):
                if len(part) >= 3 and _is_name(part[-3]):
                    q = part[-3].name.lower()
                    for s in inner:
                        if (s.alias or s.table or "").lower() == q:
                            out += self.columns(s, level, depth + 1)
                else:
                    for s in inner:
                        out += self.columns(s, level, depth + 1)
            elif _is_name(last) and not (last.kind == "word" and last.upper in _RESERVED) \
                    and (len(part) == 1 or _word(part[-2], "AS") or
                                     (isinstance(part[-2], Tok) and part[-2].is_op("."))
                                     or not isinstance(part[-2], Tok)
                                     or part[-2].kind in ("word", "qident", "number", "string")):
                out.append(last.name)
        return out

    def in_scope(self) -> list[str]:
        """Columns of every source in the scopes around the cursor, innermost first."""
        out: list[str] = []
        for level in reversed(range(len(self.scopes))):
            for s in self._sources[level]:
                out += self.columns(s, level)
        return _unique(out)

    def qualified(self, qualifier: str) -> list[str]:
        """Columns of the source `qualifier` names: an alias, else a table or CTE name read
        in scope, else any CTE or table of that name."""
        q = qualifier.lower()
        for level in reversed(range(len(self.scopes))):
            for s in self._sources[level]:
                if s.alias is not None and s.alias.lower() == q:
                    return self.columns(s, level)
        for level in reversed(range(len(self.scopes))):
            for s in self._sources[level]:
                if s.alias is None and s.table is not None and s.table.lower() == q:
                    return self.columns(s, level)
        last = len(self.scopes) - 1
        return self.columns(Source(None, table=qualifier), last)


def _unique(names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for n in names:
        if n not in seen:
            seen.add(n)
            out.append(n)
    return out


def _case_like(candidate: str, typed: str) -> str:
    """Keywords follow the user's case: `sel` completes to `select`, `SEL` to `SELECT`."""
    return candidate.lower() if typed and typed[0].islower() else candidate.upper()


def _matches(candidates: Iterable[str], at: Cursor, meta: str, quote: bool = True
             ) -> Iterator[Completion]:
    """Candidates starting with what was typed (any case), quoted as needed."""
    low = at.partial.lower()
    for c in _unique(candidates):
        if not c.lower().startswith(low):
            continue
        text = ('"' + c.replace('"', '""') + '"') if at.quoted else (_quote(c) if quote else c)
        if text == at.typed:
            continue
        yield Completion(text, -len(at.typed), display=c, display_meta=meta)


def sql_lexer() -> Lexer:
    return PygmentsLexer(SqlLexer)
