"""Scripts as dot commands and SQL statements. Where a statement ends is the SQL front end's
call (`pqe.sql.text`), so a `;` inside a string, a quoted name or a comment never ends one.

Used twice: by the interactive prompt (Enter runs the buffer only when it is complete) and by
the script reader behind `-c`, `-f`, `.read` and piped stdin.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..sql.text import ends_statement, is_blank, split_statements


def is_dot_command(text: str) -> bool:
    return text.lstrip().startswith(".")


def is_complete(text: str) -> bool:
    """True when Enter should run `text`: a dot command, nothing at all, or SQL whose last
    token is `;`. A buffer holding only a comment is not complete: the query follows."""
    if not text.strip():
        return True
    if is_dot_command(text):
        return True
    return ends_statement(text)


_blank = is_blank


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
