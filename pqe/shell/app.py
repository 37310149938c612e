"""`pqe-sql`: the command line, and the Shell that runs statements and dot commands.

    pqe-sql [PATH ...] [-c SQL] [-f FILE] [--mode MODE]
            [--scheduler ADDRESS | --workers N [--memory-limit SIZE]] [--no-memory-guard]
            [--read-only] [--no-external-access] [--allowed-path DIR] [--debug] [--version]

One Shell serves every input: the interactive prompt (repl.py), `-c`, `-f`, `.read` and piped
stdin all come down to `run_script`/`run_sql`, so a statement behaves the same however it
arrives. Errors are printed as one readable block (no traceback unless --debug).

Results go to stdout, or to the file `.output` names, or (for one result) to the file `.once`
names: that file is written under a temporary name beside it and renamed into place only
when the result is complete, so a failed statement leaves no half-written file.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import inspect
import os
import re
import signal
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa

import pqe

from ..sql.text import split_statements
from . import loader
from .commands import Quit, ScriptFailed, ShellError, describe_table, run_dot, tables_table
from .progress import run_query
from .render import MODES, Renderer, escape_controls
from .statements import Item, read_script, split_lines

_SHOW_TABLES = re.compile(r"^\s*show\s+tables\s*;?\s*$", re.I)
_DESCRIBE = re.compile(r'^\s*(?:describe|desc)\s+(?:table\s+)?("(?:[^"]|"")+"|[\w.]+)\s*;?\s*$',
                       re.I)


class Shell:
    """The state of one session (context, output mode, timer) and how statements run."""

    def __init__(self, ctx: Any, renderer: Renderer, err: TextIO, debug: bool = False,
                 progress: bool = True):
        self.ctx = ctx
        self.renderer = renderer
        self.err = err
        self.debug = debug
        self.progress = progress
        self.timer = False
        self.abandoned = False  # a cancelled query may have left tasks running
        self.last: tuple[str, pa.Table] | None = None  # the last statement's rows, for .last
        self._output: TextIO | None = None  # the file `.output` named
        self._once: _OnceFile | None = None  # the file `.once` named, until the next result
        self.reading = 0  # how many `.read` scripts are running (nested)

    # ---- running input ---------------------------------------------------------------------

    def run_script(self, lines: Iterable[str], source: str | None = None) -> bool:
        """Run dot commands and statements in order, stopping at the first error (reported
        here). True if everything ran. `.quit` raises Quit; Ctrl-C raises KeyboardInterrupt."""
        for item in read_script(lines):
            where = f"{source}:{item.line}: " if source else ""
            ok = self.run_dot(item.text, where) if item.kind == "dot" else \
                self.run_sql(item.text, where, (source, item) if source else None)
            if not ok:
                return False
        return True

    def run_dot(self, line: str, where: str = "") -> bool:
        try:
            run_dot(self, line)
            return True
        except ScriptFailed:  # a `.read` script's error was reported where it happened
            return False
        except (Quit, KeyboardInterrupt, BrokenPipeError):
            raise
        except Exception as e:
            self.report(e, prefix=where)
            return False

    def run_sql(self, sql: str, where: str = "", at: tuple[str, Item] | None = None) -> bool:
        """Run one statement and print its result (and run time). False on error. `at`: the
        script file and item the statement is, to report an error's place in the file."""
        try:
            with self.result_output() as target:
                ok = self._run_sql(sql, where, at)
                target.failed = not ok
            return ok
        except ShellError as e:  # the `.once` file could not be put in place
            self.report(e, prefix=where)
            return False

    def _run_sql(self, sql: str, where: str, at: tuple[str, Item] | None) -> bool:
        try:
            start = time.perf_counter()
            kind, table = self.query(sql)
            elapsed = time.perf_counter() - start
            if table is None:
                # DDL (CREATE, DROP, ...): nothing to tabulate
                if self.renderer.mode == "table":
                    self.renderer.status("OK", style="dim")
            else:
                self.last = (kind, table)
                self.show(kind, table)
            if self.timer:
                self.renderer.status(f"Run Time: {elapsed:.3f} s")
            return True
        except (Quit, KeyboardInterrupt, BrokenPipeError):
            raise
        except Exception as e:
            self.report(e, sql, prefix=where, at=at)
            return False

    def show(self, kind: str, table: pa.Table) -> None:
        if kind == "EXPLAIN":
            self.renderer.lines([str(x) for x in table.column(0).to_pylist()])
        else:
            self.renderer.result(table)

    def print_last(self, mode: str | None = None) -> None:
        """`.last [MODE]`: the previous statement's rows again, in MODE or the current mode."""
        if self.last is None:
            raise ShellError("no previous result: .last prints the rows of the last statement "
                             "that returned any")
        previous = self.renderer.mode
        self.renderer.mode = mode or previous
        try:
            self.show(*self.last)
        finally:
            self.renderer.mode = previous

    # ---- where results go ------------------------------------------------------------------

    @property
    def access(self) -> Any:
        """The session's access policy (--read-only, --no-external-access, --allowed-path)."""
        return getattr(getattr(getattr(self.ctx, "session", None), "config", None),
                       "access", None)

    def readable(self, name: str, what: str) -> Path:
        """A local file the shell may read for `what` (`.read`): the access flags apply as
        to a file SQL names, checked before the file is opened."""
        path = _local_path(name, what)
        if self.access is not None:
            self.access.check_source(str(path), what, pattern=False)  # (one file, no glob)
        return path

    def _writable(self, name: str, what: str) -> Path:
        """A local file the shell may write: allowed by the access flags, and never a file a
        table reads (COPY refuses the same target)."""
        path = _local_path(name, what)
        if self.access is not None:
            self.access.check_write(str(path), what)
        session = getattr(self.ctx, "session", None)
        if session is not None:
            from ..filesystems import LOCAL
            from ..session.writes import refuse_table_data

            refuse_table_data(session, LOCAL, os.path.abspath(path), f"{what} {name}",
                              dataset=False)
        return path

    def output_to(self, name: str | None) -> None:
        """`.output FILE` (None: back to the screen)."""
        path = self._writable(name, ".output") if name is not None else None
        self._close_output()
        if path is None:
            return
        try:
            self._output = open(path, "w", encoding="utf-8")  # noqa: SIM115 - until .output
        except OSError as e:
            raise ShellError(f"cannot write {path}: {e.strerror or e}") from None
        self.renderer.redirect(self._output)

    def once_to(self, name: str) -> None:
        """`.once FILE`: the next result goes to FILE."""
        path = self._writable(name, ".once")
        if self._once is not None:
            self._once.discard()
            self._once = None
        self._once = _OnceFile.open(path)

    @contextlib.contextmanager
    def result_output(self) -> Iterator[_Target]:
        """Where one result goes: the `.once` file if one is pending (put in place when the
        result is complete, removed when it failed), else the current output."""
        target = _Target()
        once, self._once = self._once, None
        if once is None:
            yield target
            return
        previous = self.renderer.redirect(once.file)
        try:
            yield target
        except BaseException:
            self.renderer.restore(previous)
            once.discard()
            raise
        self.renderer.restore(previous)
        if target.failed:
            once.discard()
        else:
            once.commit()

    def _close_output(self) -> None:
        if self._output is not None:
            output, self._output = self._output, None
            self.renderer.redirect(self.renderer.screen, self.renderer.screen_terminal)
            try:
                output.close()
            except OSError as e:  # (the last buffered rows did not fit: a full disk)
                self.report(e)

    def close(self) -> None:
        """Close the `.output` file; a `.once` file no result went to is not created."""
        self._close_output()
        if self._once is not None:
            self._once.discard()
            self._once = None

    def query(self, sql: str) -> tuple[str, pa.Table | None]:
        """The kind and rows of one statement (None for DDL; a one-row `count` for DML). SHOW
        TABLES and DESCRIBE fall back to the shell's own versions only while the engine rejects
        them. Statements run under the progress bar and Ctrl-C handling."""
        session = self.ctx.session

        def run(cancel, progress) -> tuple[str, pa.Table | None]:
            try:
                result = session.sql(sql, cancel=cancel, progress=progress)
            except (pqe.UnsupportedError, pqe.SQLSyntaxError):
                builtin = self._builtin(sql)
                if builtin is None:
                    raise
                return "SELECT", builtin()
            if result.plan is not None:
                return result.kind, session.run(result.plan, cancel=cancel, progress=progress)
            if result.table is not None:
                return result.kind, result.table
            if result.rows_affected is not None:
                return result.kind, pa.table({"count": pa.array([result.rows_affected],
                                                                pa.int64())})
            return result.kind, None

        return run_query(run, self.err, progress=self.progress)

    def _builtin(self, sql: str) -> Callable[[], pa.Table] | None:
        if _SHOW_TABLES.match(sql):
            return lambda: tables_table(self.ctx.tables())
        m = _DESCRIBE.match(sql)
        if m:
            name = m.group(1)
            if name.startswith('"'):
                name = name[1:-1].replace('""', '"')
            return lambda: describe_table(self.ctx.table(name).schema)
        return None

    def explain(self, query: str) -> None:
        """`.explain [ANALYZE] QUERY`: the plan of each statement in QUERY as plain lines.
        Each is explained on its own: `EXPLAIN a; b` would explain a, then run b."""
        analyze = re.match(r"analyze\b\s*", query, re.I)
        head = "EXPLAIN ANALYZE " if analyze else "EXPLAIN "
        statements = split_statements(query[analyze.end():] if analyze else query)
        if not statements:
            raise ShellError("usage: .explain [ANALYZE] QUERY")
        for statement in statements:
            if not self.run_sql(head + statement):
                raise ScriptFailed("explain")

    # ---- errors ----------------------------------------------------------------------------

    def report(self, exc: BaseException, sql: str | None = None, prefix: str = "",
               at: tuple[str, Item] | None = None) -> None:
        """Print an error as one block: the message, and for errors with a position the SQL
        line with a caret under the column. Tracebacks only with --debug. `at` (a script
        file and the statement's item): the position is given as FILE:LINE:COLUMN."""
        if self.debug:
            traceback.print_exception(exc, file=self.err)
        message = str(exc)
        line, column = getattr(exc, "line", None), getattr(exc, "column", None)
        located = isinstance(line, int) and isinstance(column, int)
        caret: list[str] = []
        if at is not None and located:
            # one place in the file, not the statement's first line and a line and column
            # counted inside the statement (which starts wherever its leading comment does)
            source, item = at
            file_line, file_column, row = item.locate(line, column)
            prefix = f"{source}:{file_line}:{file_column}: "
            message = message.replace(f" at line {line}, column {column}", "", 1)
            caret = caret_at(row, file_line, file_column)
        elif sql is not None and located:
            caret = caret_lines(sql, line, column)
        if isinstance(exc, (pqe.Error, ShellError)):
            text = f"Error: {prefix}{message}"
        elif isinstance(exc, OSError) and exc.errno is not None:
            # (writing results: a full disk, a closed pipe's reader) the system's words
            text = f"Error: {prefix}cannot write the output: {exc.strerror or exc}"
        else:
            text = (f"Internal error: {prefix}{type(exc).__name__}: {message}"
                    + ("" if self.debug else " (run with --debug for the traceback)"))
        if self.reading:
            # a `.read` file could be any file: its text is not echoed (no LINE, no caret,
            # no token quoted), the file name, line and column locate the error
            caret = []
            if isinstance(exc, pqe.SQLSyntaxError):
                where = f" at line {line}, column {column}" \
                    if line is not None and at is None else ""
                text = f"Error: {prefix}syntax error{where}: {exc.message}"
        # (escaped: a message may quote data, whose control characters would otherwise
        # reach the terminal)
        self._write_err("\n".join(escape_controls(x) for x in [text, *caret]))

    def _write_err(self, text: str) -> None:
        if self.err.isatty():
            from rich.console import Console
            from rich.text import Text

            Console(file=self.err, highlight=False, soft_wrap=True).print(Text(text, style="red"))
        else:
            self.err.write(text + "\n")
        self.err.flush()

    def cancelled(self) -> None:
        self.abandoned = True
        self._write_err("cancelled")


@dataclass
class _Target:
    failed: bool = False


class _OnceFile:
    """The file of `.once`: written as `.NAME.<random>.tmp` beside it, renamed over it on
    commit (keeping an existing file's permissions), removed on discard. A target that exists
    and is not a regular file (/dev/stderr, a FIFO) is written directly."""

    def __init__(self, target: Path, file: TextIO, temporary: Path | None):
        self.target = target
        self.file = file
        self.temporary = temporary

    @classmethod
    def open(cls, path: Path) -> _OnceFile:
        target = Path(os.path.realpath(path))  # through symlinks: the link stays a link
        try:
            if target.exists() and not target.is_file():
                return cls(target, open(target, "w", encoding="utf-8"), None)
            if target.exists() and not os.access(target, os.W_OK):
                # a file the user may not write is not replaced by renaming over it (the
                # directory allowed that): refused as `.output` refuses it
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
            temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:12]}.tmp")
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as e:
            raise ShellError(f"cannot write {path}: {e.strerror or e}") from None
        return cls(target, os.fdopen(fd, "w", encoding="utf-8"), temporary)

    def commit(self) -> None:
        try:
            self.file.close()
            if self.temporary is None:
                return
            with contextlib.suppress(OSError):
                os.chmod(self.temporary, os.stat(self.target).st_mode & 0o7777)
            os.replace(self.temporary, self.target)
        except OSError as e:
            self.discard()
            raise ShellError(f"cannot write {self.target}: {e.strerror or e}") from None

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.file.close()
        if self.temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.temporary)


def _local_path(name: str, what: str) -> Path:
    """The local path a file argument names: `file://` URLs are local paths; other URLs
    are refused (the shell reads and writes local files only, never one spelled like a
    URL under the current directory)."""
    if "\x00" in name:
        raise ShellError(f"{what}: a file name cannot contain a NUL byte")
    if "://" not in name:
        return Path(name).expanduser()
    scheme, rest = name.split("://", 1)
    if scheme.lower() not in ("file", "local"):
        raise ShellError(f"{what}: only local files, not URLs")
    return Path(os.path.abspath(rest))


def caret_lines(sql: str, line: int, column: int, width: int = 100) -> list[str]:
    """`LINE n: <text>` and a caret under `column` (1-based), windowed for long lines. Lines
    are counted as the SQL front end counts them ('\\r\\n', '\\r' and '\\n' end one)."""
    rows = re.split(r"\r\n|\r|\n", sql)
    if not 1 <= line <= len(rows):
        return []
    return caret_at(rows[line - 1], line, column, width)


def caret_at(row: str, line: int, column: int, width: int = 100) -> list[str]:
    """`LINE n: <row>` and a caret under `column` (1-based, in characters) of `row`. The
    caret is placed by display width (a wide CJK character takes 2 cells, a combining mark
    none), and control characters are shown escaped, as the caret counts them."""
    from rich.cells import cell_len

    text = row.expandtabs(1)
    col = max(1, min(column, len(text) + 1))
    start = 0
    if len(text) > width:
        start = max(0, min(col - width // 2, len(text) - width))
    lead = "…" if start else ""
    tail = "…" if start + width < len(text) else ""
    label = f"LINE {line}: "
    before = label + lead + escape_controls(text[start:col - 1])
    return [label + lead + escape_controls(text[start:start + width]) + tail,
            " " * cell_len(before) + "^"]


# ---- the command line ------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="pqe-sql",
        description="Interactive SQL over Parquet files with pqe. Each PATH (a .parquet/.csv "
                    "file, or a directory of them and of Parquet table directories) becomes "
                    "tables named after the files.")
    p.add_argument("paths", nargs="*", metavar="PATH", help="data files or directories")
    p.add_argument("-c", dest="inputs", action="append", type=lambda s: ("sql", s),
                   metavar="SQL", help="run SQL (';'-separated statements, dot commands on "
                                       "their own lines) and exit")
    p.add_argument("-f", dest="inputs", action="append", type=lambda s: ("file", s),
                   metavar="FILE", help="run the statements in FILE ('-': stdin) and exit")
    p.add_argument("--version", action="version", version=f"pqe {pqe.__version__}")
    p.add_argument("--mode", choices=MODES, default="table", help="output mode (default table)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="dask.distributed scheduler address (tcp://host:port), or "
                            "'threads'/'sync'")
    where.add_argument("--workers", type=int, metavar="N",
                       help="start a local dask cluster of N worker processes")
    p.add_argument("--memory-limit", metavar="SIZE",
                   help="memory limit per worker with --workers (e.g. 4GB)")
    p.add_argument("--no-memory-guard", action="store_true",
                   help="run queries even when their estimated memory exceeds what this "
                        "machine has free (pqe.Context(memory_guard=False))")
    p.add_argument("--read-only", action="store_true",
                   help="refuse every statement that changes a table, the catalog or a file")
    p.add_argument("--no-external-access", action="store_true",
                   help="SQL reads only the tables from PATH arguments: no read_csv(), "
                        "read_parquet(), quoted file paths or COPY")
    p.add_argument("--allowed-path", dest="allowed_paths", action="append", metavar="DIR",
                   help="SQL may read and write files only under DIR (repeatable; URL "
                        "prefixes such as s3://bucket/ allow those URLs)")
    p.add_argument("--debug", action="store_true", help="print tracebacks for errors")
    args = p.parse_args(argv)
    if args.memory_limit and args.workers is None:
        p.error("--memory-limit needs --workers")
    if args.workers is not None and args.workers < 1:
        p.error("--workers must be at least 1")
    return args


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT while the Context starts: processes it spawns (a LocalCluster's workers,
    which share the terminal's process group) inherit the disposition, so Ctrl-C cancelling
    a query in the shell does not also interrupt the workers in the middle of a task."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def make_context(args: argparse.Namespace) -> Any:
    """pqe.Context for the scheduler options. `workers`/`memory_limit` are passed through;
    an engine without them gets a clear message instead of a TypeError traceback."""
    kwargs: dict[str, Any] = {}
    if args.scheduler:
        kwargs["scheduler"] = args.scheduler
    if args.workers is not None:
        kwargs["workers"] = args.workers
        if args.memory_limit:
            kwargs["memory_limit"] = args.memory_limit
    if getattr(args, "no_memory_guard", False):
        kwargs["memory_guard"] = False
    if getattr(args, "read_only", False):
        kwargs["read_only"] = True
    if getattr(args, "no_external_access", False):
        kwargs["external_access"] = False
    if getattr(args, "allowed_paths", None):
        kwargs["allowed_paths"] = list(args.allowed_paths)
    try:
        with _sigint_ignored():
            return pqe.Context(**kwargs)
    except TypeError as e:
        params = inspect.signature(pqe.Context).parameters
        missing = [k for k in kwargs if k not in params]
        if missing:
            flags = ", ".join("--" + k.replace("_", "-") for k in missing)
            raise ShellError(f"{flags}: not supported by this version of pqe "
                             f"(pqe.Context has no {', '.join(missing)} parameter)") from e
        raise


def _inputs(kind: str, value: str) -> tuple[Iterable[str], str | None]:
    # (lines end at '\n' only, and a file is read with newline='': a '\r' or U+2028 in a
    # string literal stays in it)
    if kind == "sql":
        return split_lines(value), None
    if value == "-":
        return _stdin(), None
    try:
        with open(value, encoding="utf-8-sig", newline="") as f:  # (a BOM is no SQL)
            return split_lines(f.read()), value
    except OSError as e:
        raise ShellError(f"cannot read {value}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ShellError(f"cannot read {value}: it is not UTF-8 text") from None


def _stdin() -> Iterable[str]:
    """Piped stdin, whose lines end at '\\n' only (a '\\r' in a string literal stays in it,
    as it does by default on POSIX but not on Windows)."""
    with contextlib.suppress(AttributeError, ValueError, OSError):
        sys.stdin.reconfigure(newline="\n")  # type: ignore[union-attr]
    return sys.stdin


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `pqe-sql` console script; returns the exit status."""
    if sys.stderr is None:
        # (`pqe-sql ... 2>&-`: started with standard error closed) messages are dropped, the
        # exit status still says; every statement failed on the missing stream (exit 1)
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the process's life
    args = parse_args(argv)
    if sys.stdout is None:  # (`pqe-sql ... >&-`: started with standard output closed)
        if sys.stderr is not None:
            sys.stderr.write("Error: standard output is closed; use .output FILE\n")
        return 1
    renderer = Renderer(sys.stdout, args.mode)
    ctx = None
    try:
        ctx = make_context(args)
        loader.register(ctx, loader.discover(args.paths))
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # startup failures: one message, status 1
        Shell(None, renderer, sys.stderr, debug=args.debug).report(e)
        if ctx is not None:
            ctx.close()
        return 1
    shell = Shell(ctx, renderer, sys.stderr, debug=args.debug)
    try:
        status = _run(shell, args)
    finally:
        shell.close()
        ctx.close()
    if shell.abandoned:
        # Tasks of a cancelled query may still be running on the engine's worker threads,
        # which the interpreter would wait for at exit; nothing of theirs is wanted.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    return status


def _run(shell: Shell, args: argparse.Namespace) -> int:
    """-c/-f inputs in order, else piped stdin, else the interactive prompt."""
    try:
        if args.inputs:
            for kind, value in args.inputs:
                lines, source = _inputs(kind, value)
                if not shell.run_script(lines, source=source):
                    return 1
            return 0
        if not sys.stdin.isatty():
            return 0 if shell.run_script(_stdin()) else 1
        from .repl import run_interactive

        return run_interactive(shell)
    except Quit:
        return 0
    except ShellError as e:
        shell.report(e)
        return 1
    except KeyboardInterrupt:
        shell.cancelled()
        return 130
    except BrokenPipeError:
        # the reader went away (`pqe-sql ... | head`): stop quietly, as a SIGPIPE'd tool would
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
