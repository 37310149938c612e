"""SQL text -> sqlglot ASTs, with sqlglot's errors turned into `pqe.SQLSyntaxError`."""

from __future__ import annotations

import logging

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError

from ..errors import SQLSyntaxError

# sqlglot logs a warning when it falls back to a generic Command; pqe reports its own errors.
logging.getLogger("sqlglot").setLevel(logging.ERROR)



class PQEDialect(Dialect):
    """sqlglot's default dialect (standard, PostgreSQL-flavoured) with PostgreSQL's NULL
    ordering: NULLs sort as the largest values (ASC -> NULLS LAST, DESC -> NULLS FIRST)."""

    NULL_ORDERING = "nulls_are_large"


DIALECT = PQEDialect


def position(sql: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    offset = max(0, min(offset, len(sql)))
    line = sql.count("\n", 0, offset) + 1
    col = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    return line, col


def node_position(sql: str, node: exp.Expression) -> tuple[int, int] | None:
    """Line and column where an AST node starts, when sqlglot recorded it."""
    for n in [node, *node.find_all(exp.Identifier, exp.Literal)]:
        meta = getattr(n, "meta", None) or {}
        if "start" in meta:
            return position(sql, meta["start"])
        if isinstance(getattr(n, "this", None), exp.Expression):
            inner = getattr(n.this, "meta", None) or {}
            if "start" in inner:
                return position(sql, inner["start"])
    return None


def parse(sql: str) -> list[exp.Expression]:
    """Parse one or more `;`-separated statements."""
    if not isinstance(sql, str):
        raise SQLSyntaxError(f"SQL must be a string, got {type(sql).__name__}")
    try:
        statements = sqlglot.parse(sql, read=DIALECT)
    except ParseError as e:
        err = e.errors[0] if e.errors else {}
        desc = err.get("description") or str(e)
        highlight = err.get("highlight") or None
        line, col = err.get("line"), err.get("col")
        if line is not None and col is not None and highlight:
            # sqlglot reports the end of the offending token; point at its start
            col = max(1, col - len(highlight) + 1)
        message = _describe(desc)
        if line is not None and col is not None and _after_x(sql, line, col):
            message = "BLOB literals (x'...') are not supported: pqe has no BLOB type"
            col -= 1
        raise SQLSyntaxError(message, line, col, highlight) from None
    except TokenError as e:
        msg = str(e)
        line = col = None
        text = None
        if "'" in msg:
            text = msg.split("'", 1)[1].rsplit("'", 1)[0]
            idx = sql.find(text)
            if idx >= 0:
                quote = sql.find("'", idx + 1) if "'" in text[1:] else -1
                line, col = position(sql, quote if quote >= 0 else idx)
        raise SQLSyntaxError("cannot tokenize (unterminated string or quoted name?)",
                             line, col) from None
    return [s for s in statements if s is not None]


def _after_x(sql: str, line: int, col: int) -> bool:
    """Whether the offending token is a quoted string right after an `x` or `X` (a BLOB
    literal, which the default dialect reads as a name followed by a string)."""
    lines = sql.split("\n")
    if not 1 <= line <= len(lines):
        return False
    text, i = lines[line - 1], col - 1
    return 1 <= i < len(text) and text[i] == "'" and text[i - 1] in "xX" \
        and (i == 1 or not (text[i - 2].isalnum() or text[i - 2] == "_"))


def _describe(desc: str) -> str:
    if desc.startswith("Invalid expression / Unexpected token"):
        return "unexpected token"
    if desc.startswith("Required keyword:"):
        return "incomplete statement: " + desc.split("for <class", 1)[0].strip().rstrip("'")
    return desc.split(". Line", 1)[0]
