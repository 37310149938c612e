"""A sqllogictest runner for pqe: run SQLite-style ``.test`` scripts and count what passes.

Every statement and query record is counted as passed, failed or skipped, and a failure never
stops the file: pqe is still growing, so a failing CREATE TABLE must not hide how the rest of
the file fares (later records fail too, which is expected). Exceptions that are not a
``pqe.Error`` are also counted as *crashes*, because pqe promises to raise only ``pqe.Error``
on purpose; anything else is a bug worth fixing first.

Python API: `run_file` / `run_paths` return `FileResult` objects. CLI::

    python -m pqe.testing.sqllogictest FILE_OR_DIR... [-v] [--max-failures N] [--summary]

See `slt_parser` for the script grammar and `slt_values` for how values are rendered.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .slt_parser import ExpectedHash, Record, parse_file
from .slt_values import hash_values, render_rows, sort_values

DEFAULT_HASH_THRESHOLD = 8
DEFAULT_ENGINE_NAME = "pqe"
DEFAULT_SLOW_SECONDS = 1.0
TEST_SUFFIXES = (".test", ".slt")


class Engine(Protocol):
    """What the runner needs from an engine: ``pqe.Context`` satisfies it.

    ``sql`` returns an object with ``to_arrow()`` (a lazy result) or None for statements.
    """

    def sql(self, query: str) -> Any: ...


EngineFactory = Callable[[], Engine]


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
    it; ``stopped_early`` is set when --max-failures cut the run short."""

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
        tail = f"; {', '.join(extra)}" if extra else ""
        return (f"{self.path}: {100 * self.pass_rate:.1f}% ({t.passed}/{t.run} records; "
                f"queries {q.passed}/{q.run}, statements {s.passed}/{s.run}{tail}) "
                f"in {self.seconds:.1f}s")


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _is_query_text(sql: str) -> bool:
    """Whether a statement's SQL is a query, which a lazy engine only runs when fetched."""
    head = sql.lstrip().lstrip("(").lstrip()
    return head[:6].upper() in ("SELECT", "VALUES") or head[:4].upper() == "WITH"


def _pqe_error_class() -> type[BaseException] | None:
    try:
        from pqe import Error
    except ImportError:  # pragma: no cover - the runner is usable without pqe
        return None
    return Error


class _FileRun:
    """State of one script run: the engine, the hash threshold and the label hashes."""

    def __init__(self, path: str, engine: Engine, engine_name: str, slow_seconds: float,
                 error_class: type[BaseException] | None):
        self.engine = engine
        self.engine_name = engine_name
        self.slow_seconds = slow_seconds
        self.error_class = error_class
        self.threshold = DEFAULT_HASH_THRESHOLD
        # label -> hash of the first passing (or skipped, from its expected values) query.
        self.labels: dict[str, str] = {}
        self.result = FileResult(path)

    # ---- helpers -------------------------------------------------------------------------

    def _fail(self, rec: Record, message: str, **kw: Any) -> None:
        self.result.failures.append(Failure(self.result.path, rec.line, rec.kind, rec.sql,
                                            message, **kw))

    def _exception(self, rec: Record, exc: Exception) -> None:
        crash = self.error_class is None or not isinstance(exc, self.error_class)
        text = str(exc).strip() or type(exc).__name__
        first = text.splitlines()[0]
        if crash:
            self.result.crashes += 1
        self._fail(rec, first, error_type=type(exc).__name__, error=text, crash=crash,
                   traceback=traceback.format_exc() if crash else None)

    # ---- records ---------------------------------------------------------------------------

    def statement(self, rec: Record) -> bool:
        try:
            out = self.engine.sql(rec.sql)
            if out is not None and _is_query_text(rec.sql) and hasattr(out, "to_arrow"):
                out.to_arrow()
        except Exception as exc:  # noqa: BLE001 - every engine failure is data for the report
            crash = self.error_class is None or not isinstance(exc, self.error_class)
            if rec.expect_error and not crash:
                return True
            # A crash on `statement error` still fails: pqe should raise a pqe.Error.
            self._exception(rec, exc)
            return False
        if rec.expect_error:
            self._fail(rec, "statement succeeded but an error was expected")
            return False
        return True

    def query(self, rec: Record) -> bool:
        try:
            table = self.engine.sql(rec.sql).to_arrow()
        except Exception as exc:  # noqa: BLE001
            self._exception(rec, exc)
            return False
        if table.num_columns != len(rec.types):
            self._fail(rec, f"wrong number of result columns: expected {len(rec.types)}, "
                            f"got {table.num_columns}",
                       expected=rec.types, got=", ".join(str(t) for t in table.schema.types))
            return False
        columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
        rows = render_rows(zip(*columns), rec.types) if columns else []
        values = sort_values(rows, rec.sort_mode)
        digest = hash_values(values)
        if not self._matches(rec, values, digest):
            return False
        if rec.label is not None:
            first = self.labels.setdefault(rec.label, digest)
            if first != digest:
                self._fail(rec, f"result differs from earlier queries labelled {rec.label}",
                           expected=f"hash {first}", got=f"hash {digest}")
                return False
        return True

    def _matches(self, rec: Record, values: list[str], digest: str) -> bool:
        expected = rec.expected if rec.expected is not None else []
        if isinstance(expected, ExpectedHash):
            if expected.count == len(values) and expected.md5 == digest:
                return True
            hashed = len(values) > self.threshold > 0
            got = (f"{len(values)} values hashing to {digest}" if hashed else values)
            what = ("value count" if expected.count != len(values) else "result hash")
            self._fail(rec, f"wrong result: {what} differs "
                            f"(expected {expected.count} values, got {len(values)})",
                       expected=f"{expected.count} values hashing to {expected.md5}", got=got)
            return False
        if values == expected:
            return True
        if len(values) != len(expected):
            msg = f"wrong result: expected {len(expected)} values, got {len(values)}"
        else:
            msg = "wrong result: values differ"
        self._fail(rec, msg, expected=expected, got=values)
        return False

    def skipped_query(self, rec: Record) -> None:
        """Remember a skipped labelled query's expected hash, as the reference runner does."""
        if rec.label is None or rec.expected is None or rec.label in self.labels:
            return
        if isinstance(rec.expected, ExpectedHash):
            self.labels[rec.label] = rec.expected.md5
        else:
            self.labels[rec.label] = hash_values(rec.expected)

    def run(self, records: Iterable[Record], max_failures: int | None) -> FileResult:
        res = self.result
        for rec in records:
            if rec.skipped_for(self.engine_name):
                if rec.kind == "statement":
                    res.statements.skipped += 1
                elif rec.kind == "query":
                    res.queries.skipped += 1
                    self.skipped_query(rec)
                continue
            if rec.kind == "halt":
                res.halted_at = rec.line
                break
            if rec.kind == "hash-threshold":
                self.threshold = rec.threshold
                continue
            if rec.kind == "invalid":
                res.invalid += 1
                self._fail(rec, f"invalid record: {rec.error}", got=rec.header)
            else:
                counts = res.statements if rec.kind == "statement" else res.queries
                start = time.perf_counter()
                ok = self.statement(rec) if rec.kind == "statement" else self.query(rec)
                elapsed = time.perf_counter() - start
                if elapsed >= self.slow_seconds:
                    res.slow.append(SlowRecord(res.path, rec.line, rec.kind, rec.sql, elapsed))
                if ok:
                    counts.passed += 1
                else:
                    counts.failed += 1
            if max_failures is not None and len(res.failures) >= max_failures:
                res.stopped_early = True
                break
        return res


def _default_factory() -> Engine:
    import pqe

    return pqe.Context()


def run_file(path: str | Path, engine_factory: EngineFactory | None = None, *,
             engine_name: str = DEFAULT_ENGINE_NAME, max_failures: int | None = None,
             slow_seconds: float = DEFAULT_SLOW_SECONDS,
             error_class: type[BaseException] | None | str = "pqe") -> FileResult:
    """Run one script against a fresh engine from ``engine_factory`` (default ``pqe.Context``).

    engine_name: what ``skipif``/``onlyif`` compare against. max_failures: stop the file after
    this many failed records (the rest is neither run nor counted). slow_seconds: records that
    take at least this long are listed in ``FileResult.slow``. error_class: exceptions of this
    class are engine errors, anything else is a crash ("pqe": ``pqe.Error``; None: everything
    is a crash).
    """
    if error_class == "pqe":
        error_class = _pqe_error_class()
    script = parse_file(path)
    start = time.perf_counter()
    engine = (engine_factory or _default_factory)()
    try:
        run = _FileRun(str(path), engine, engine_name, slow_seconds, error_class)  # type: ignore[arg-type]
        result = run.run(script.records, max_failures)
    finally:
        close = getattr(engine, "close", None)
        if callable(close):
            close()
    result.seconds = time.perf_counter() - start
    return result


def collect_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand directories into their ``.test``/``.slt`` files (recursively, sorted)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(f for f in p.rglob("*") if f.suffix in TEST_SUFFIXES))
        else:
            out.append(p)
    return out


def run_paths(paths: Iterable[str | Path], engine_factory: EngineFactory | None = None,
              on_result: Callable[[FileResult], None] | None = None,
              **kwargs: Any) -> list[FileResult]:
    """`run_file` over files and directories; ``on_result`` sees each result as it finishes."""
    results = []
    for f in collect_files(paths):
        r = run_file(f, engine_factory, **kwargs)
        if on_result is not None:
            on_result(r)
        results.append(r)
    return results


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="python -m pqe.testing.sqllogictest",
        description="Run sqllogictest scripts against pqe and report pass rates.")
    ap.add_argument("paths", nargs="+", metavar="FILE_OR_DIR")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every failure")
    ap.add_argument("--max-failures", type=int, default=None, metavar="N",
                    help="stop each file after N failed records")
    ap.add_argument("--summary", action="store_true",
                    help="group failures by normalized error message and show the top groups")
    ap.add_argument("--top", type=int, default=20, metavar="N", help="groups in --summary")
    ap.add_argument("--engine-name", default=DEFAULT_ENGINE_NAME,
                    help="name matched by skipif/onlyif (default: pqe)")
    ap.add_argument("--slow", type=float, default=DEFAULT_SLOW_SECONDS, metavar="SECONDS",
                    help="report records slower than this")
    ap.add_argument("--scheduler", default=None, help="pqe.Context scheduler (threads, sync)")
    ap.add_argument("--partitions", type=int, default=None, help="pqe.Context partitions")
    ap.add_argument("--emulate-ddl", action="store_true",
                    help="preview only: run CREATE TABLE/INSERT/DROP in the runner (Arrow tables "
                         "registered in pqe) so queries can be tested before pqe has DDL")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    from .slt_summary import format_summary, totals_line

    def factory() -> Engine:
        import pqe

        ctx = pqe.Context(args.scheduler, partitions=args.partitions)
        if args.emulate_ddl:
            from .ddl_shim import DDLShim

            return DDLShim(ctx)
        return ctx

    def report(r: FileResult) -> None:
        print(r.summary_line(), flush=True)
        if args.verbose:
            for f in r.failures:
                print(f.describe(), flush=True)
        for s in r.slow:
            print(f"  slow: {s.path}:{s.line} {s.kind} took {s.seconds:.2f}s: "
                  f"{s.sql.splitlines()[0][:100]}", flush=True)

    files = collect_files(args.paths)
    missing = [f for f in files if not f.exists()]
    if missing:
        print(f"no such file: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    results = []
    for f in files:
        r = run_file(f, factory, engine_name=args.engine_name, max_failures=args.max_failures,
                     slow_seconds=args.slow)
        report(r)
        results.append(r)
    if len(results) > 1:
        print(totals_line(results))
    if args.summary:
        print()
        print(format_summary(results, top=args.top))
    return 0 if all(r.total.failed == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
