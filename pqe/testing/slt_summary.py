"""Turning thousands of failures into a short list of what to implement next.

Failures are grouped by the first line of their message after normalization: identifiers and
literals taken from the failing SQL are replaced by placeholders (so "table 't1' does not exist"
and "table 't2' does not exist" are one group), numbers become ``<n>``, and function names are
kept (they usually *are* the missing construct). Crashes (non-``pqe.Error`` exceptions) are
listed first since they are pqe bugs. Wrong results carry no message naming a construct, so for
them the summary also counts which SQL constructs (sqlglot node types) the failing queries use.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from .slt_results import Counts, Failure, FileResult

_NUMBER = re.compile(r"(?<![A-Za-z_0-9])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![A-Za-z_0-9])")
_SPACES = re.compile(r"\s+")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_MAX_KEY = 160
_PLURAL = {"query": "queries", "statement": "statements", "invalid": "invalid records"}
# Node types that every query has, or that say nothing about what pqe lacks.
_BORING = frozenset({
    "Select", "From", "Table", "TableAlias", "Column", "Identifier", "Literal", "Alias", "Star",
    "Paren", "Where", "Order", "Ordered", "Tuple", "Values", "Null", "Neg", "Boolean", "Var",
})


@lru_cache(maxsize=4096)
def _sql_names(sql: str) -> tuple[frozenset[str], frozenset[str]]:
    """(identifiers, string literals) of a query, from sqlglot's tokenizer; function names are
    not identifiers here because a message naming a function names the missing feature."""
    try:
        from sqlglot.tokens import Tokenizer, TokenType

        tokens = Tokenizer().tokenize(sql)
    except Exception:  # noqa: BLE001 - un-tokenizable SQL simply gets no replacements
        return frozenset(), frozenset()
    idents, strings = set(), set()
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1].token_type if i + 1 < len(tokens) else None
        if tok.token_type in (TokenType.VAR, TokenType.IDENTIFIER) and nxt != TokenType.L_PAREN:
            idents.add(tok.text)
        elif tok.token_type == TokenType.STRING and tok.text:
            strings.add(tok.text)
    return frozenset(idents), frozenset(strings)


def normalize_message(message: str, sql: str = "") -> str:
    """The grouping key of an error message: first line, names from ``sql`` and numbers
    replaced, whitespace collapsed, truncated."""
    text = message.strip().splitlines()[0] if message.strip() else ""
    idents, strings = _sql_names(sql) if sql else (frozenset(), frozenset())
    for s in sorted(strings, key=len, reverse=True):
        text = text.replace(s, "<str>")
    if idents:
        words = "|".join(re.escape(i) for i in sorted(idents, key=len, reverse=True))
        text = re.sub(rf"(?<![A-Za-z_0-9])(?:{words})(?![A-Za-z_0-9])", "<id>", text,
                      flags=re.IGNORECASE)
    text = _NUMBER.sub("<n>", text)
    text = _SPACES.sub(" ", text)
    return text[:_MAX_KEY] + ("..." if len(text) > _MAX_KEY else "")


def coarse_key(key: str) -> str:
    """A `failure_key` with every quoted part blanked, so that e.g. "no kernel for 'less'" and
    "no kernel for 'greater'" (one root cause) form one group; the quoted parts are then shown
    as the group's variants."""
    return _QUOTED.sub("'…'", key)


def _variant(key: str) -> str:
    parts = _QUOTED.findall(key)
    return " ".join(parts) if parts else key


def failure_key(f: Failure) -> str:
    """Group key: for crashes the exception type and where it was raised (their messages are
    often data, e.g. an AST printed by an assertion); otherwise the normalized message."""
    if f.crash:
        return f"CRASH {f.error_type} in {f.origin or '?'}"
    key = normalize_message(f.message, f.sql)
    return f"{f.error_type}: {key}" if f.error_type else key


@dataclass
class Group:
    key: str
    failures: list[Failure] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.failures)

    @property
    def crash(self) -> bool:
        return self.failures[0].crash

    def kinds(self) -> Counter[str]:
        return Counter(f.kind for f in self.failures)

    def files(self) -> set[str]:
        return {f.path for f in self.failures}

    def variants(self) -> Counter[str]:
        """Counts of the fine-grained keys merged into this group (see `coarse_key`)."""
        return Counter(_variant(failure_key(f)) for f in self.failures)

    def example(self) -> Failure:
        """The shortest SQL in the group: the easiest one to reproduce by hand."""
        return min(self.failures, key=lambda f: (len(f.sql), f.path, f.line))


def group_failures(failures: Iterable[Failure]) -> list[Group]:
    """Groups by `coarse_key`, largest first (ties by key, for a stable report)."""
    groups: dict[str, Group] = {}
    for f in failures:
        k = coarse_key(failure_key(f))
        groups.setdefault(k, Group(k)).failures.append(f)
    return sorted(groups.values(), key=lambda g: (-g.count, g.key))


def sql_constructs(sql: str) -> set[str]:
    """The sqlglot expression types a query uses (minus ubiquitous ones), e.g. Case, Between."""
    try:
        import sqlglot

        tree = sqlglot.parse_one(sql, read="sqlite")
    except Exception:  # noqa: BLE001
        return {"<unparseable by sqlglot>"}
    return {type(n).__name__ for n in tree.walk()} - _BORING


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _one_line(text: str, width: int = 160) -> str:
    s = _SPACES.sub(" ", text).strip()
    return s if len(s) <= width else s[: width - 3] + "..."


def _short_path(path: str) -> str:
    marker = "/sqlite/"
    return path.split(marker, 1)[1] if marker in path else path


def _format_group(i: int, g: Group, total: int) -> list[str]:
    kinds = g.kinds()
    parts = ", ".join(f"{n} {_PLURAL.get(k, k) if n != 1 else k}" for k, n in kinds.most_common())
    ex = g.example()
    nfiles = len(g.files())
    head = (f"{i:3d}. {g.count:6d} ({100 * g.count / total:.1f}%; {parts}; "
            f"{nfiles} file{'s' if nfiles != 1 else ''})  {g.key}")
    lines = [head]
    variants = g.variants()
    if len(variants) > 1:
        shown = " | ".join(f"{n}x {v}" for v, n in variants.most_common(6))
        more = f" | ... {len(variants) - 6} more" if len(variants) > 6 else ""
        lines.append(f"       variants: {_one_line(shown, 200)}{more}")
    lines.append(f"       e.g. {_short_path(ex.location())}: {_one_line(ex.sql)}")
    if ex.error and ex.error.splitlines()[0] != g.key:
        lines.append(f"       -> {_one_line(ex.error.splitlines()[0])}")
    if ex.expected is not None and ex.error is None:
        exp = ex.expected if isinstance(ex.expected, str) else " ".join(ex.expected[:12])
        got = ex.got if isinstance(ex.got, str) else " ".join((ex.got or [])[:12])
        lines.append(f"       expected: {_one_line(exp, 120)}")
        lines.append(f"       got:      {_one_line(got, 120)}")
    return lines


def totals_line(results: Sequence[FileResult]) -> str:
    total, q, s = Counts(), Counts(), Counts()
    crashes = sum(r.crashes for r in results)
    for r in results:
        total.add(r.total)
        q.add(r.queries)
        s.add(r.statements)
    rate = total.passed / total.run if total.run else 0.0
    secs = sum(r.seconds for r in results)
    return (f"TOTAL: {100 * rate:.1f}% ({total.passed}/{total.run} records; queries "
            f"{q.passed}/{q.run}, statements {s.passed}/{s.run}; {total.skipped} skipped, "
            f"{crashes} crashes) in {secs:.1f}s over {len(results)} files")


def format_summary(results: Sequence[FileResult], top: int = 20,
                   constructs_top: int = 15) -> str:
    """The report the CLI prints for --summary."""
    failures = [f for r in results for f in r.failures]
    aborted = [f"ABORTED {r.path}: {r.aborted}" for r in results if r.aborted]
    if not failures:
        return "\n".join([*aborted, "No failures."])
    groups = group_failures(failures)
    out = [*aborted, (f"Failure groups: {_n(len(failures), 'failure')} in "
                      f"{_n(len(groups), 'group')} (normalized first line of the error; "
                      "shortest SQL shown)")]
    crash_groups = [g for g in groups if g.crash]
    if crash_groups:
        n = sum(g.count for g in crash_groups)
        out.append(f"\nCRASHES (non-pqe.Error exceptions, i.e. pqe bugs): {n} in "
                   f"{_n(len(crash_groups), 'group')}")
        for i, g in enumerate(crash_groups[:top], 1):
            out.extend(_format_group(i, g, len(failures)))
    out.append(f"\nTop {_n(min(top, len(groups)), 'group')}:")
    for i, g in enumerate(groups[:top], 1):
        out.extend(_format_group(i, g, len(failures)))
    if len(groups) > top:
        rest = sum(g.count for g in groups[top:])
        out.append(f"  ... {len(groups) - top} more groups with {rest} failures")

    wrong = [f for f in failures if f.error is None and f.kind == "query"]
    if wrong and constructs_top > 0:
        counter: Counter[str] = Counter()
        for f in wrong:
            counter.update(sql_constructs(f.sql))
        out.append(f"\nSQL constructs in the {len(wrong)} wrong-result queries "
                   "(sqlglot node types; a query counts once per type):")
        for name, n in counter.most_common(constructs_top):
            out.append(f"  {n:6d} ({100 * n / len(wrong):.0f}%)  {name}")
    return "\n".join(out)
