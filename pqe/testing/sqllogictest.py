"""A sqllogictest runner for pqe: run SQLite-style ``.test`` scripts and count what passes.

Every statement and query record is counted as passed, failed or skipped, and a failure never
stops the file: pqe is still growing, so a failing CREATE TABLE must not hide how the rest of
the file fares (later records fail too, which is expected). Exceptions that are not a
``pqe.Error`` are also counted as *crashes*, because pqe promises to raise only ``pqe.Error``
on purpose; anything else is a bug worth fixing first.

Python API: `run_file` / `run_paths` return `FileResult` objects. CLI::

    python -m pqe.testing.sqllogictest FILE_OR_DIR... [-v] [--max-failures N] [--summary]
        [-j N] [--timeout S] [--json PATH]

prints each file's pass rate (records passed / records run, queries and statements apart);
``--summary`` groups the failures of all files by normalized error message (`slt_summary`) to
show what to implement next; ``-v`` prints every failure; ``--max-failures N`` stops a file
after N failed records; ``-j N`` runs files in N memory-capped worker processes
(`slt_isolated`). See `slt_parser` for the script grammar and `slt_values` for how values are
rendered; `sqlite_engine` runs the same scripts on SQLite to validate the runner.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from .slt_isolated import DEFAULT_MEMORY_LIMIT_GB, ProgressFile, limit_memory, run_many_isolated
from .slt_parser import ExpectedHash, Record, parse_file
from .slt_results import Failure, FileResult, SlowRecord, result_to_dict
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


def _is_query_text(sql: str) -> bool:
    """Whether a statement's SQL is a query, which a lazy engine only runs when fetched."""
    head = sql.lstrip().lstrip("(").lstrip()
    return head[:6].upper() in ("SELECT", "VALUES") or head[:4].upper() == "WITH"


def _crash_origin(exc: BaseException) -> str:
    """Where a crash comes from: the innermost frame inside pqe (not pqe.testing) and, if
    different, the frame that raised, e.g. ``pqe/sql/binder.py:_qualify -> qualify_columns.py:
    _select_by_pos``. Used to group crashes, whose messages are often data-dependent."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"

    def short(fs: traceback.FrameSummary, keep_pkg: bool) -> str:
        path = fs.filename.replace("\\", "/")
        if keep_pkg and "/pqe/" in path:
            path = "pqe/" + path.rsplit("/pqe/", 1)[1]
        else:
            path = path.rsplit("/", 1)[-1]
        return f"{path}:{fs.name}"

    own = [fs for fs in frames if "/pqe/" in fs.filename.replace("\\", "/")
           and "/pqe/testing/" not in fs.filename.replace("\\", "/")]
    last = frames[-1]
    if not own:
        return short(last, False)
    if own[-1] is last:
        return short(last, True)
    return f"{short(own[-1], True)} -> {short(last, False)}"


def _pqe_error_class() -> type[BaseException] | None:
    try:
        from pqe import Error
    except ImportError:  # pragma: no cover - the runner is usable without pqe
        return None
    return Error


class _FileRun:
    """State of one script run: the engine, the hash threshold and the label hashes."""

    def __init__(self, path: str, engine: Engine, engine_name: str, slow_seconds: float,
                 error_class: type[BaseException] | None, record_timeout: float | None = None):
        self.engine = engine
        self.record_timeout = record_timeout
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
        tb, origin = None, None
        if crash:
            self.result.crashes += 1
            tb, origin = traceback.format_exc(), _crash_origin(exc)
        self._fail(rec, first, error_type=type(exc).__name__, error=text, crash=crash,
                   traceback=tb, origin=origin)

    def _fetch(self, result: Any) -> Any:
        """``result.to_arrow()``, with the per-record timeout when one is set (pqe's
        ``to_arrow(timeout=)`` raises pqe.QueryTimeout, an ordinary failure)."""
        if self.record_timeout is None:
            return result.to_arrow()
        return result.to_arrow(timeout=self.record_timeout)

    # ---- records ---------------------------------------------------------------------------

    def statement(self, rec: Record) -> bool:
        try:
            out = self.engine.sql(rec.sql)
            if out is not None and _is_query_text(rec.sql) and hasattr(out, "to_arrow"):
                self._fetch(out)
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
            table = self._fetch(self.engine.sql(rec.sql))
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

    def run(self, records: Iterable[Record], max_failures: int | None,
            on_record: Callable[[int], None] | None = None) -> FileResult:
        res = self.result
        for rec in records:
            if on_record is not None:
                on_record(rec.line)
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


def run_file(path: str | Path, engine_factory: EngineFactory | None = None, *,
             engine_name: str = DEFAULT_ENGINE_NAME, max_failures: int | None = None,
             slow_seconds: float = DEFAULT_SLOW_SECONDS,
             error_class: type[BaseException] | None | str = "pqe",
             record_timeout: float | None = None,
             on_record: Callable[[int], None] | None = None) -> FileResult:
    """Run one script against a fresh engine from ``engine_factory`` (default ``pqe.Context``).

    engine_name: what ``skipif``/``onlyif`` compare against. max_failures: stop the file after
    this many failed records (the rest is neither run nor counted). slow_seconds: records that
    take at least this long are listed in ``FileResult.slow``. error_class: exceptions of this
    class are engine errors, anything else is a crash ("pqe": ``pqe.Error``; None: everything
    is a crash). record_timeout: seconds a query may run (passed to ``to_arrow(timeout=)``;
    pqe stops tasks that have not started, a running operator finishes in the background).
    on_record: called with each record's line number before it runs.
    """
    if error_class == "pqe":
        error_class = _pqe_error_class()
    script = parse_file(path)
    start = time.perf_counter()
    engine = (engine_factory or _factory(None, None))()
    try:
        run = _FileRun(str(path), engine, engine_name, slow_seconds,
                       error_class, record_timeout)  # type: ignore[arg-type]
        result = run.run(script.records, max_failures, on_record)
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
                    help="report records slower than this (default 1)")
    ap.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                    help="per-record timeout (pqe's to_arrow(timeout=)); a timeout is a failure")
    ap.add_argument("--scheduler", default=None, help="pqe.Context scheduler (threads, sync)")
    ap.add_argument("--partitions", type=int, default=None, help="pqe.Context partitions")
    ap.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                    help="run files in N worker processes (memory-capped, so a runaway query "
                         "cannot kill the run); 0 = in this process (default)")
    ap.add_argument("--memory-limit-gb", type=float, default=None, metavar="GB",
                    help="cap the address space of the process running the files "
                         f"(default with --jobs: {DEFAULT_MEMORY_LIMIT_GB:g})")
    ap.add_argument("--json", default=None, metavar="PATH", help="write all results as JSON")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)  # JSON output path
    ap.add_argument("--progress", default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def _factory(scheduler: str | None, partitions: int | None) -> EngineFactory:
    def make() -> Engine:
        import pqe

        return pqe.Context(scheduler, partitions=partitions)

    return make


def _worker(args: argparse.Namespace) -> int:
    """Run exactly one file and write its result as JSON (see `slt_isolated`)."""
    if args.memory_limit_gb:
        limit_memory(args.memory_limit_gb)
    progress = ProgressFile(args.progress) if args.progress else None
    try:
        r = run_file(args.paths[0], _factory(args.scheduler, args.partitions),
                     engine_name=args.engine_name, max_failures=args.max_failures,
                     slow_seconds=args.slow, record_timeout=args.timeout, on_record=progress)
    finally:
        if progress is not None:
            progress.close()
    Path(args.worker).write_text(json.dumps(result_to_dict(r)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse_args(argv)
    if args.worker:
        return _worker(args)
    from .slt_summary import format_summary, totals_line

    files = collect_files(args.paths)
    missing = [f for f in files if not f.exists()]
    if missing:
        print(f"no such file: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2

    def report(r: FileResult) -> None:
        print(r.summary_line(), flush=True)
        if args.verbose:
            for f in r.failures:
                print(f.describe(), flush=True)
        for s in r.slow:
            print(f"  slow: {s.path}:{s.line} {s.kind} took {s.seconds:.2f}s: "
                  f"{s.sql.splitlines()[0][:100]}", flush=True)

    if args.jobs > 0:
        worker_args = ["--engine-name", args.engine_name, "--slow", str(args.slow)]
        for opt, val in (("--scheduler", args.scheduler), ("--partitions", args.partitions),
                         ("--max-failures", args.max_failures), ("--timeout", args.timeout)):
            if val is not None:
                worker_args += [opt, str(val)]
        results = run_many_isolated(files, jobs=args.jobs, on_result=report,
                                    worker_args=worker_args,
                                    memory_limit_gb=args.memory_limit_gb or DEFAULT_MEMORY_LIMIT_GB)
    else:
        if args.memory_limit_gb:
            limit_memory(args.memory_limit_gb)
        results = run_paths(files, _factory(args.scheduler, args.partitions), on_result=report,
                            engine_name=args.engine_name, max_failures=args.max_failures,
                            slow_seconds=args.slow, record_timeout=args.timeout)
    if len(results) > 1:
        print(totals_line(results))
    if args.json:
        Path(args.json).write_text(json.dumps([result_to_dict(r) for r in results], indent=1))
    if args.summary:
        print()
        print(format_summary(results, top=args.top))
    return 0 if all(r.total.failed == 0 and not r.aborted for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
