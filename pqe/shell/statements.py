"""Scripts as dot commands and SQL statements. Where a statement ends is the SQL front end's
call (`pqe.sql.text`), so a `;` inside a string, a quoted name or a comment never ends one.

Used twice: by the interactive prompt (Enter runs the buffer only when it is complete) and by
the script reader behind `-c`, `-f`, `.read` and piped stdin.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..sql.text import ends_statement, is_blank, split_statements, tokenize

# where the SQL front end starts a new line when it counts an error's line and column
_BREAK = re.compile(r"\r\n|\r|\n")
_BLANKS = re.compile(r"\s*")


def split_lines(text: str) -> list[str]:
    """The lines of a script: a line ends at '\\n' (or '\\r\\n') only. str.splitlines() also
    splits at \\v, \\f, \\x1c-\\x1e, U+0085, U+2028, U+2029 and a lone '\\r', which would
    change a string literal that holds one."""
    lines = text.split("\n")
    last = lines.pop()  # after the last '\n': a line only if not empty
    return [line[:-1] if line.endswith("\r") else line for line in lines] + \
        ([last] if last else [])


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
    # a statement's place in the script: the script lines it is in (`block`, which starts at
    # line `block_line`) and where in them `text` starts
    block: str = ""
    block_line: int = 0
    offset: int = 0

    def locate(self, line: int, column: int) -> tuple[int, int, str]:
        """The script line and column (1-based) of `line`, `column` in `text` (counted as the
        SQL front end counts them), and that script line's text."""
        start = 0
        for n, m in enumerate(_BREAK.finditer(self.text), 2):
            if n > line:
                break
            start = m.end()
        at = self.offset + min(start + max(column, 1) - 1, len(self.text))
        begin = self.block.rfind("\n", 0, at) + 1
        end = self.block.find("\n", at)
        return (self.block_line + self.block.count("\n", 0, at), at - begin + 1,
                self.block[begin:end if end >= 0 else len(self.block)])


def _statements(text: str) -> list[tuple[int, str]]:
    """split_statements(text), each with where it starts in `text`: the start of the next
    `;`-separated piece that holds it, after that piece's leading blanks."""
    starts = [0, *(t.end + 1 for t in tokenize(text) or [] if t.token_type.name == "SEMICOLON")]
    out, k = [], 0
    for stmt in split_statements(text):
        at = 0
        while k < len(starts):
            lead = _BLANKS.match(text, starts[k]).end()  # (\s is what str.strip() strips)
            k += 1
            if text.startswith(stmt, lead):
                at = lead
                break
        out.append((at, stmt))
    return out


def read_script(lines: Iterable[str]) -> Iterator[Item]:
    """Dot commands (a line starting with `.` between statements) and `;`-terminated
    statements, in order. A last statement without `;` still runs, as in psql's `-c`."""
    buffer: list[str] = []
    first = start = 0
    for number, line in enumerate(lines, 1):
        if line.endswith("\n"):  # (a file's lines keep their ends): only '\n' or '\r\n'
            line = line[:-2] if line.endswith("\r\n") else line[:-1]
        if _blank("".join(buffer)):
            if is_dot_command(line):
                buffer = []  # comments before a dot command are dropped
                yield Item("dot", line.strip(), number)
                continue
            if line.strip():
                first = number
        if not buffer:
            start = number
        buffer.append(line + "\n")
        text = "".join(buffer)
        if is_complete(text):
            for offset, stmt in _statements(text):
                yield Item("sql", stmt, first, text, start, offset)
            buffer = []
    text = "".join(buffer)
    for offset, stmt in _statements(text):
        yield Item("sql", stmt, first, text, start, offset)
