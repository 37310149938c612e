"""Running SQL on pqe and on the DuckDB oracle, and comparing results (`pqe.testing.fuzz`).

Results are Arrow tables, compared by `pqe.testing.compare` (names, logical types, values;
ORDER BY-aware with ties). DuckDB is the oracle of `pqe.testing.oracle`, imported only when
`Engines.load` first runs, so importing the fuzzer does not import DuckDB.
"""

from __future__ import annotations

import inspect
import re
import signal
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

import pqe

from . import oracle
from .compare import Mismatch, compare, order_spec, table_rows


class Timeout(BaseException):
    """A query ran past the fuzzer's backstop alarm (BaseException: pqe must not catch it)."""


@dataclass
class Outcome:
    status: str                   # ok | unsupported | error | timeout
    table: pa.Table | None = None
    error_class: str = ""
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def rows(self) -> list | None:
        return None if self.table is None else arrow_rows(self.table)

    def describe(self, limit: int = 12) -> str:
        if self.status != "ok":
            return f"{self.status}: {self.error_class}: {self.message}"
        rows = self.rows
        types = ", ".join(f"{f.name} {f.type}" for f in self.table.schema)
        shown = "\n".join("  " + repr(tuple(r)) for r in rows[:limit])
        more = f"\n  ... ({len(rows) - limit} more rows)" if len(rows) > limit else ""
        return (f"{len(rows)} rows [{types}]\n{shown}{more}" if rows
                else f"0 rows [{types}]")


def _alarm(_signum, _frame):
    raise Timeout()


_clock = time.monotonic
PAUSE_GAP = 5.0  # a tick this late means the process was stopped (SIGSTOP), not busy


class Watchdog(threading.Thread):
    """A query's clock that does not count time the process spent stopped: the fuzzer is
    paused (SIGSTOP) while benchmarks run, and a wall-clock alarm then timed out the query in
    flight although it had not run. Ticks every `tick` s; a gap of more than PAUSE_GAP between
    ticks is a pause and is not counted. After `limit` running seconds `cancel` is set (pqe
    stops the query: QueryCancelled); after `limit + 10` the main thread gets SIGALRM (the
    backstop for a statement that does not look at `cancel`). A real hang still times out."""

    def __init__(self, limit: float, cancel: threading.Event, main_ident: int | None,
                 tick: float = 0.25) -> None:
        super().__init__(name="pqe-fuzz-watchdog", daemon=True)
        self.limit, self.cancel, self.main_ident, self.tick = limit, cancel, main_ident, tick
        self.done = threading.Event()
        self.active = 0.0

    def run(self) -> None:
        last = _clock()
        while not self.done.wait(self.tick):
            now = _clock()
            gap, last = now - last, now
            if gap < PAUSE_GAP:
                self.active += gap
            if self.active >= self.limit:
                self.cancel.set()
            if self.active >= self.limit + 10 and self.main_ident is not None:
                signal.pthread_kill(self.main_ident, signal.SIGALRM)
                return

    def stop(self) -> None:
        self.done.set()


# DuckDB errors about the data (not the query): pqe should fail too, not answer
DATA_ERRORS = ("ConversionException", "OutOfRangeException", "ConstraintException",
               "InvalidInputException")


# DuckDB's INTEGER arithmetic overflows; its negation message names no type (DuckDB
# rejects -(-2147483648) for an INTEGER; an overflowing BIGINT negation is not generated)
_NARROW_OVERFLOW = re.compile(r"Overflow in \w+ of U?INT(8|16|32)\b|Overflow in negation of "
                              r"numeric value")
_INT64 = (-(2**63), 2**63 - 1)


def legit_difference(pqe_outcome: Outcome, duck: Outcome) -> str | None:
    """Why pqe may fail where DuckDB answers or answer where DuckDB fails, by design (rows
    "INTEGER arithmetic overflow" of compare.ALLOWED_DIFFERENCES):

    - DuckDB raised an overflow of INTEGER (or narrower) arithmetic: pqe computes integer
      arithmetic in BIGINT (pqe/types.py), so there is no overflow to raise;
    - pqe raised an integer overflow and DuckDB's answer holds an integer outside BIGINT:
      pqe's integer arithmetic is BIGINT and overflow is an error (pqe may evaluate an
      uncorrelated subquery whose value the answer does not need)."""
    if not duck.ok and pqe_outcome.ok and _NARROW_OVERFLOW.search(duck.message):
        return "INTEGER overflow in DuckDB; pqe computes in BIGINT"
    if duck.ok and not pqe_outcome.ok and "overflow" in pqe_outcome.message.lower():
        for col in duck.table.columns:
            if pa.types.is_integer(col.type) or pa.types.is_decimal(col.type):
                for v in col.to_pylist():
                    if v is not None and v == int(v) and not _INT64[0] <= v <= _INT64[1]:
                        return "DuckDB's HUGEINT answer does not fit pqe's BIGINT"
    return None


class Engines:
    """DuckDB (the oracle) and one pqe Context per partition count, loaded with one database."""

    def __init__(self, partitions=(1, 3), timeout: float = 20.0, threads: int = 2,
                 scheduler: str | None = None):
        self.partitions = tuple(partitions)
        self.timeout = timeout
        self.threads = threads
        self.scheduler = scheduler
        self.con = None
        self.ctxs: dict[int, pqe.Context] = {}
        self.db: dict[str, pa.Table] = {}
        self._to_arrow_cancel = "cancel" in inspect.signature(pqe.DataFrame.to_arrow).parameters

    def load(self, db: dict[str, pa.Table]) -> None:
        """(Re)create the engines with exactly the tables of `db`."""
        self.close()
        self.db = dict(db)
        self.con = oracle.connect(db, threads=1)
        for p in self.partitions:
            ctx = pqe.Context(self.scheduler, partitions=p, threads=self.threads)
            for name, table in db.items():
                ctx.register_arrow(name, table)
            self.ctxs[p] = ctx

    def close(self) -> None:
        for ctx in self.ctxs.values():
            try:
                ctx.close()
            except Exception:  # noqa: BLE001, S110 - best effort
                pass
        self.ctxs = {}
        if self.con is not None:
            self.con.close()
            self.con = None

    def duck(self, sql: str, params: Sequence | None = None) -> Outcome:
        try:
            table = oracle.query(self.con, sql, params)
        except Exception as e:  # noqa: BLE001 - any DuckDB failure discards the query
            return Outcome("error", None, type(e).__name__, str(e).split("\n")[0])
        return Outcome("ok", table)

    def pqe(self, partitions: int, sql: str, params: Sequence | None = None) -> Outcome:
        ctx = self.ctxs[partitions]
        main = threading.current_thread() is threading.main_thread()
        cancel = threading.Event()
        watchdog = Watchdog(self.timeout, cancel, threading.main_thread().ident if main else None)
        if main:
            old = signal.signal(signal.SIGALRM, _alarm)
        watchdog.start()
        try:
            with warnings.catch_warnings():
                # a warning pqe's own code raises (numpy's "overflow encountered", ...) is an
                # error here: a user running with -W error (pytest's filterwarnings = error)
                # would get it as one, and it often marks a value computed wrong
                warnings.filterwarnings("error", category=RuntimeWarning, module=PQE_MODULES)
                table = self._pqe(ctx, sql, params, cancel)
        except Timeout:
            return Outcome("timeout", None, "Timeout",
                           f"no answer after {self.timeout + 10:g} s of running")
        except pqe.UnsupportedError as e:
            return Outcome("unsupported", None, type(e).__name__, str(e))
        except pqe.Error as e:
            cls = type(e).__name__
            status = "timeout" if cls in ("QueryTimeout", "QueryCancelled") else "error"
            return Outcome(status, None, cls, str(e).split("\n")[0])
        except Exception as e:  # noqa: BLE001 - a crash: not even a pqe.Error
            return Outcome("error", None, "crash:" + type(e).__name__, str(e).split("\n")[0][:300])
        finally:
            watchdog.stop()
            if main:
                watchdog.join()  # (no SIGALRM may arrive after the handler is restored)
                signal.signal(signal.SIGALRM, old)
        return Outcome("ok", table)

    def _pqe(self, ctx, sql: str, params: Sequence | None, cancel) -> pa.Table:
        if params is not None:
            return _cursor_table(pqe.connect(context=ctx).cursor().execute(sql, params))
        df = ctx.sql(sql)
        return df.to_arrow(cancel=cancel) if self._to_arrow_cancel else df.to_arrow()


# the modules whose RuntimeWarnings are errors in a fuzz run: pqe's, not the fuzzer's own
PQE_MODULES = r"pqe\.(?!testing\b)"


def _cursor_table(cur) -> pa.Table:
    """A DB-API cursor's result as Arrow: the result set, or the rows-affected count of a DML
    statement (as pqe's `Context.sql` returns it: one column `count`)."""
    try:
        return cur.fetch_arrow_table()
    except pqe.ProgrammingError:
        if cur.rowcount is not None and cur.rowcount >= 0:
            return pa.table({"count": pa.array([cur.rowcount], pa.int64())})
        return pa.table({})


def arrow_rows(table: pa.Table) -> list[tuple]:
    return table_rows(table)


# ---- comparison ----------------------------------------------------------------------------

def check(actual: pa.Table, expected: pa.Table, sql: str | None = None, *, order_by=None,
          limit: bool = False, types: bool = True, names: bool = True) -> tuple[str, str] | None:
    """(oracle, description) of the difference between two results, or None.

    'diff' when the values (or row count or order) differ, 'type' when only the column types
    do (a value difference is the worse problem, so it is reported first)."""
    kwargs = {"order_by": order_by, "limit": limit} if order_by is not None else {"sql": sql}
    m = compare(actual, expected, check_names=names, check_types=types, **kwargs)
    if m is None:
        return None
    if m.kind == "types":
        v = compare(actual, expected, check_names=names, check_types=False, **kwargs)
        if v is not None:
            return "diff", str(v) + f" (and {m.message})"
        return "type", m.message
    return "diff", str(m)


def type_signature(message: str) -> str:
    """'column 0 'o0': type BIGINT (int64), expected DOUBLE (double)' -> 'INTEGER vs FLOAT'."""
    m = re.search(r"type (\w+).*expected (\w+)", message)
    if not m:
        return message
    kinds = {"TINYINT": "INTEGER", "SMALLINT": "INTEGER", "BIGINT": "INTEGER",
             "HUGEINT": "INTEGER", "REAL": "FLOAT", "DOUBLE": "FLOAT"}
    return f"{kinds.get(m.group(1), m.group(1))} vs {kinds.get(m.group(2), m.group(2))}"


__all__ = ["DATA_ERRORS", "Engines", "legit_difference", "Mismatch", "Outcome", "Timeout", "arrow_rows", "check",
           "normalize_message", "order_spec", "type_signature"]


# ---- error messages ------------------------------------------------------------------------

def normalize_message(msg: str) -> str:
    """An error message with its query-specific parts (names, literals, SQL) blanked, for
    grouping: 'function FOO(a1.c0) is not supported' -> 'function FOO(...) is not supported'."""
    s = msg.split("\n")[0]
    s = re.sub(r"^internal error \(this is a bug in pqe, please report it\): ", "", s)
    s = re.sub(r"^[\w-]+ failed in [\w-]+ partition \d+: ", "", s)
    s = re.sub(r"^expression (\w+) \(.*\) is not supported yet$", r"expression \1 (…) is not supported yet", s)
    s = re.sub(r"'[^']*'", "'?'", s)
    s = re.sub(r'"[^"]*"', '"?"', s)
    s = _collapse_parens(s)
    s = re.sub(r"\ba\d+\.c\d+\b", "<col>", s)
    s = re.sub(r"\ba\d+\.o\d+\b", "<col>", s)
    s = re.sub(r"\b\d+(\.\d+)?\b", "N", s)
    s = re.sub(r"\s+", " ", s).strip()
    return s[:160]


def _collapse_parens(s: str) -> str:
    """'f(a, (b)) x' -> 'f(…) x'; an unclosed '(' swallows the rest."""
    out, depth = [], 0
    for ch in s:
        if ch == "(":
            if depth == 0:
                out.append("(…")
            depth += 1
        elif ch == ")":
            if depth > 0:
                depth -= 1
                if depth == 0:
                    out.append(")")
            else:
                out.append(ch)
        elif depth == 0:
            out.append(ch)
    return "".join(out)
