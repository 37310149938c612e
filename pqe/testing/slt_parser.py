"""Parsing sqllogictest scripts into records.

The grammar follows SQLite's reference runner (sqllogictest.c) rather than a stricter reading of
about.wiki, because the corpus was produced and validated by that program: a trailing ``\\r`` is
dropped, a line of only whitespace is blank, a line starting with ``#`` is removed before records
are split (so a comment never separates records), a record is a run of non-blank lines, and
``skipif``/``onlyif`` lines are prefixes of the record they guard (including control records such
as ``halt``). Only the first whitespace-separated tokens of a header line matter, so trailing
remarks such as ``onlyif sqlite # empty RHS`` are ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

SORT_MODES = ("nosort", "rowsort", "valuesort")
TYPE_CHARS = frozenset("TIR")

_HASH_LINE = re.compile(r"^\s*(\d+)\s+values\s+hashing\s+to\s+([0-9a-fA-F]{32})\s*$")


@dataclass(frozen=True)
class Condition:
    """A ``skipif <engine>`` or ``onlyif <engine>`` prefix line."""

    kind: str  # "skipif" | "onlyif"
    engine: str

    def skips(self, engine_name: str) -> bool:
        """Whether this condition keeps ``engine_name`` from running the record.

        Engine names compare case-insensitively, as the reference runner does (stricmp).
        """
        match = self.engine.lower() == engine_name.lower()
        return match if self.kind == "skipif" else not match


@dataclass(frozen=True)
class ExpectedHash:
    """Expected results given as ``N values hashing to <md5>``."""

    count: int
    md5: str


@dataclass
class Record:
    """One record of a script. ``kind`` is statement, query, hash-threshold, halt, or invalid.

    ``invalid`` records carry the parse problem in ``error`` so the runner can count them as
    failures instead of aborting the file: a malformed record is a problem of that record only.
    """

    kind: str
    line: int  # 1-based line of the first (non-condition) header line
    conditions: tuple[Condition, ...] = ()
    sql: str = ""
    expect_error: bool = False  # statement error
    types: str = ""  # query type string, e.g. "IIT"
    sort_mode: str = "nosort"
    label: str | None = None
    expected: list[str] | ExpectedHash | None = None  # None: no ---- section (empty result)
    threshold: int = 0  # hash-threshold value
    error: str | None = None  # parse problem of an invalid record
    header: str = ""

    def skipped_for(self, engine_name: str) -> bool:
        return any(c.skips(engine_name) for c in self.conditions)


@dataclass
class Script:
    path: str
    records: list[Record] = field(default_factory=list)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of every non-comment line; blank lines become ''."""
    out: list[tuple[int, str]] = []
    for no, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r")
        if not line.strip():
            out.append((no, ""))
        elif line.startswith("#"):
            continue
        else:
            out.append((no, line))
    return out


def _blocks(text: str) -> list[list[tuple[int, str]]]:
    blocks: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] = []
    for no, line in _logical_lines(text):
        if line:
            current.append((no, line))
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def parse_expected(lines: list[str]) -> list[str] | ExpectedHash:
    """The result section: a single hash line, or one value per line."""
    if len(lines) == 1:
        m = _HASH_LINE.match(lines[0])
        if m:
            return ExpectedHash(int(m.group(1)), m.group(2).lower())
    return list(lines)


def _parse_block(block: list[tuple[int, str]]) -> Record:
    conditions: list[Condition] = []
    i = 0
    while i < len(block):
        tokens = block[i][1].split()
        if tokens[0] not in ("skipif", "onlyif"):
            break
        if len(tokens) < 2:
            return Record("invalid", block[i][0], error=f"{tokens[0]} needs an engine name",
                          header=block[i][1])
        conditions.append(Condition(tokens[0], tokens[1]))
        i += 1
    if i == len(block):
        no, line = block[-1]
        return Record("invalid", no, tuple(conditions), error="condition without a record",
                      header=line)

    no, header = block[i]
    tokens = header.split()
    body = [line for _, line in block[i + 1:]]
    conds = tuple(conditions)
    kind = tokens[0]

    if kind == "statement":
        mode = tokens[1] if len(tokens) > 1 else ""
        if mode not in ("ok", "error"):
            return Record("invalid", no, conds, error=f"statement needs 'ok' or 'error', got {mode!r}",
                          header=header)
        if not body:
            return Record("invalid", no, conds, error="statement without SQL", header=header)
        return Record("statement", no, conds, sql="\n".join(body), expect_error=mode == "error",
                      header=header)

    if kind == "query":
        types = tokens[1] if len(tokens) > 1 else ""
        sort_mode = tokens[2] if len(tokens) > 2 else "nosort"
        label = tokens[3] if len(tokens) > 3 else None
        if "----" in body:
            sep = body.index("----")
            sql_lines, result_lines = body[:sep], body[sep + 1:]
            expected: list[str] | ExpectedHash | None = parse_expected(result_lines)
        else:
            sql_lines, expected = body, None
        rec = Record("query", no, conds, sql="\n".join(sql_lines), types=types,
                     sort_mode=sort_mode, label=label, expected=expected, header=header)
        problem = None
        if not types:
            problem = "query without a type string"
        elif not set(types) <= TYPE_CHARS:
            problem = f"unknown type character in type string {types!r}"
        elif sort_mode not in SORT_MODES:
            problem = f"unknown sort mode {sort_mode!r}"
        elif not sql_lines:
            problem = "query without SQL"
        if problem:
            rec.kind, rec.error = "invalid", problem
        return rec

    if kind == "hash-threshold":
        try:
            return Record("hash-threshold", no, conds, threshold=int(tokens[1]), header=header)
        except (IndexError, ValueError):
            return Record("invalid", no, conds, error="hash-threshold needs an integer",
                          header=header)

    if kind == "halt":
        return Record("halt", no, conds, header=header)

    return Record("invalid", no, conds, error=f"unknown record type {kind!r}", header=header)


def parse_text(text: str, path: str = "<string>") -> Script:
    """Parse a whole script. Never raises on malformed records (see `Record`)."""
    return Script(path, [_parse_block(b) for b in _blocks(text)])


def parse_file(path: str | Path) -> Script:
    p = Path(path)
    # The corpus is ASCII; undecodable bytes must not abort a run, so replace them.
    return parse_text(p.read_text(encoding="utf-8", errors="replace"), str(p))
