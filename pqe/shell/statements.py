"""Where SQL statements end: sqlglot's tokenizer decides, so a `;` inside a string, a quoted
name or a comment never ends a statement, and the shell agrees with the parser about quoting.

Used twice: by the interactive prompt (Enter runs the buffer only when it is complete) and by
the script reader behind `-c`, `-f`, `.read` and piped stdin.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from sqlglot.errors import TokenError
from sqlglot.tokens import Token, Tokenizer, TokenType


def _tokenizer_class() -> type[Tokenizer]:
    """pqe's own dialect's tokenizer when the engine exposes it, else sqlglot's default."""
    try:
        from ..sql.parser import DIALECT

        return DIALECT.tokenizer_class
    except Exception:  # pragma: no cover - engine internals moved; the default is equivalent
        return Tokenizer


_TOKENIZER = _tokenizer_class()


def _tokenizer() -> Tokenizer:
    return _TOKENIZER()


def tokenize(text: str) -> list[Token] | None:
    """The tokens of `text`, or None while a string, quoted name or comment is still open."""
    try:
        return _tokenizer().tokenize(text)
    except TokenError:
        return None


def is_dot_command(text: str) -> bool:
    return text.lstrip().startswith(".")


def is_complete(text: str) -> bool:
    """True when Enter should run `text`: a dot command, nothing at all, or SQL whose last
    token is `;`. A buffer holding only a comment is not complete: the query follows."""
    if not text.strip():
        return True
    if is_dot_command(text):
        return True
    tokens = tokenize(text)
    return bool(tokens) and tokens[-1].token_type == TokenType.SEMICOLON


def split_statements(text: str) -> list[str]:
    """Split SQL at top-level semicolons; empty statements are dropped. Text that does not
    tokenize (an unterminated string) comes back whole, so the parser reports the error."""
    tokens = tokenize(text)
    if tokens is None:
        return [text.strip()] if text.strip() else []
    out: list[str] = []
    start = 0
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            out.append(text[start:tok.start])
            start = tok.end + 1
    out.append(text[start:])
    # a piece with no tokens (only blanks or comments) is not a statement
    return [s.strip() for s in out if s.strip() and tokenize(s)]


def _blank(text: str) -> bool:
    """Nothing but whitespace and comments."""
    return not text.strip() or tokenize(text) == []


@dataclass(frozen=True)
class Item:
    """One unit of a script: a dot command line or one SQL statement, with its first line."""

    kind: str  # "dot" or "sql"
    text: str
    line: int


def read_script(lines: Iterable[str]) -> Iterator[Item]:
    """Dot commands (a line starting with `.` between statements) and `;`-terminated
    statements, in order. A last statement without `;` still runs, as in psql's `-c`."""
    buffer: list[str] = []
    first = 0
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\r\n")
        if _blank("".join(buffer)):
            if is_dot_command(line):
                buffer = []  # comments before a dot command are dropped
                yield Item("dot", line.strip(), number)
                continue
            if line.strip():
                first = number
        buffer.append(line + "\n")
        text = "".join(buffer)
        if is_complete(text):
            for stmt in split_statements(text):
                yield Item("sql", stmt, first)
            buffer = []
    text = "".join(buffer)
    for stmt in split_statements(text):
        yield Item("sql", stmt, first)
