"""Result objects of a sqllogictest run, and their JSON form.

Results cross process boundaries (files run in worker processes so one runaway query cannot
take the whole run down, see `slt_isolated`), so they are plain dataclasses with a lossless
dict round trip.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Counts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0

    @property
    def run(self) -> int:
        return self.passed + self.failed

    def add(self, other: Counts) -> None:
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped


@dataclass
class Failure:
    """One failed record. ``error`` is set when the engine raised (``error_type`` names the
    exception class); otherwise ``expected``/``got`` show the mismatch described by ``message``."""

    path: str
    line: int
    kind: str  # "statement" | "query" | "invalid"
    sql: str
    message: str
    error_type: str | None = None
    error: str | None = None
    crash: bool = False
    traceback: str | None = None
    origin: str | None = None  # crashes: innermost pqe frame, then the frame that raised
    expected: list[str] | str | None = None
    got: list[str] | str | None = None

    def location(self) -> str:
        return f"{self.path}:{self.line}"

    def describe(self, max_values: int = 20) -> str:
        """A multi-line human-readable report of this failure."""
        lines = [f"{self.location()}: {self.kind} failed{' (CRASH)' if self.crash else ''}",
                 _indent(self.sql), f"  -> {self.message}"]
        for name, vals in (("expected", self.expected), ("got", self.got)):
            if vals is None:
                continue
            if isinstance(vals, str):
                lines.append(f"  {name}: {vals}")
            else:
                shown = ", ".join(vals[:max_values]) + (" ..." if len(vals) > max_values else "")
                lines.append(f"  {name} ({len(vals)} values): {shown}")
        if self.crash and self.traceback:
            lines.append(_indent(self.traceback.rstrip(), "    | "))
        return "\n".join(lines)


@dataclass
class SlowRecord:
    path: str
    line: int
    kind: str
    sql: str
    seconds: float


@dataclass
class FileResult:
    """Counts and failures of one script. ``halted_at`` is the line of a ``halt`` that stopped
    it; ``stopped_early`` is set when --max-failures cut the run short; ``aborted`` when the
    process running the file died (its counts are then empty)."""

    path: str
    statements: Counts = field(default_factory=Counts)
    queries: Counts = field(default_factory=Counts)
    crashes: int = 0
    invalid: int = 0
    failures: list[Failure] = field(default_factory=list)
    slow: list[SlowRecord] = field(default_factory=list)
    halted_at: int | None = None
    stopped_early: bool = False
    seconds: float = 0.0
    aborted: str | None = None  # set when the worker running the file died


    @property
    def total(self) -> Counts:
        c = Counts()
        c.add(self.statements)
        c.add(self.queries)
        c.failed += self.invalid
        return c

    @property
    def pass_rate(self) -> float:
        """Records passed / records run (statements and queries; skipped records excluded)."""
        t = self.total
        return t.passed / t.run if t.run else 0.0

    def summary_line(self) -> str:
        t, q, s = self.total, self.queries, self.statements
        extra = []
        if t.skipped:
            extra.append(f"{t.skipped} skipped")
        if self.crashes:
            extra.append(f"{self.crashes} crashes")
        if self.invalid:
            extra.append(f"{self.invalid} invalid records")
        if self.halted_at is not None:
            extra.append(f"halted at line {self.halted_at}")
        if self.stopped_early:
            extra.append("stopped at --max-failures")
        if self.aborted:
            extra.append(f"ABORTED: {self.aborted}")
        tail = f"; {', '.join(extra)}" if extra else ""
        return (f"{self.path}: {100 * self.pass_rate:.1f}% ({t.passed}/{t.run} records; "
                f"queries {q.passed}/{q.run}, statements {s.passed}/{s.run}{tail}) "
                f"in {self.seconds:.1f}s")


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())




def result_to_dict(r: FileResult) -> dict[str, Any]:
    return asdict(r)


def result_from_dict(d: dict[str, Any]) -> FileResult:
    d = dict(d)
    d["statements"] = Counts(**d["statements"])
    d["queries"] = Counts(**d["queries"])
    d["failures"] = [Failure(**f) for f in d.get("failures", [])]
    d["slow"] = [SlowRecord(**s) for s in d.get("slow", [])]
    return FileResult(**d)
