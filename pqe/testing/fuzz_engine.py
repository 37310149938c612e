"""Running SQL on pqe and on the DuckDB oracle, and comparing results (`pqe.testing.fuzz`).

Results are lists of row tuples of Python values. Comparison is as a multiset of rows, or in
order when the query has a top-level ORDER BY over every output column; numbers compare
numerically (integers and decimals exactly, anything involving a float to 1e-6 relative).
"""

from __future__ import annotations

import collections
import datetime
import decimal
import inspect
import math
import re
import signal
import threading
from dataclasses import dataclass

import duckdb
import pyarrow as pa

import pqe

DUCKDB_SETTINGS = [
    "SET integer_division = true",
    "SET default_null_order = 'nulls_last_on_asc_first_on_desc'",
    "SET error_on_division_by_zero = false",
    "SET threads = 1",
]


class Timeout(BaseException):
    """A query ran past the fuzzer's backstop alarm (BaseException: pqe must not catch it)."""


@dataclass
class Outcome:
    status: str                   # ok | unsupported | error | timeout
    rows: list | None = None
    error_class: str = ""
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def describe(self, limit: int = 12) -> str:
        if self.status != "ok":
            return f"{self.status}: {self.error_class}: {self.message}"
        rows = self.rows
        shown = "\n".join("  " + repr(tuple(r)) for r in rows[:limit])
        more = f"\n  ... ({len(rows) - limit} more rows)" if len(rows) > limit else ""
        return f"{len(rows)} rows\n{shown}{more}" if rows else "0 rows"


def _alarm(_signum, _frame):
    raise Timeout()


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
        self._to_arrow_timeout = "timeout" in inspect.signature(pqe.DataFrame.to_arrow).parameters

    def load(self, db: dict[str, pa.Table]) -> None:
        """(Re)create the engines with exactly the tables of `db`."""
        self.close()
        self.db = dict(db)
        self.con = duckdb.connect()
        for s in DUCKDB_SETTINGS:
            self.con.execute(s)
        for name, table in db.items():
            self.con.register(name, table)
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

    def duck(self, sql: str) -> Outcome:
        try:
            rows = self.con.execute(sql).fetchall()
        except Exception as e:  # noqa: BLE001 - any DuckDB failure discards the query
            return Outcome("error", None, type(e).__name__, str(e).split("\n")[0])
        return Outcome("ok", [tuple(r) for r in rows])

    def pqe(self, partitions: int, sql: str) -> Outcome:
        ctx = self.ctxs[partitions]
        main = threading.current_thread() is threading.main_thread()
        if main:
            old = signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, self.timeout + 10)
        try:
            df = ctx.sql(sql)
            table = df.to_arrow(timeout=self.timeout) if self._to_arrow_timeout else df.to_arrow()
            rows = arrow_rows(table)
        except Timeout:
            return Outcome("timeout", None, "Timeout", f"no answer after {self.timeout + 10:g} s")
        except pqe.UnsupportedError as e:
            return Outcome("unsupported", None, type(e).__name__, str(e))
        except pqe.Error as e:
            cls = type(e).__name__
            status = "timeout" if cls in ("QueryTimeout", "QueryCancelled") else "error"
            return Outcome(status, None, cls, str(e).split("\n")[0])
        except Exception as e:  # noqa: BLE001 - a crash: not even a pqe.Error
            return Outcome("error", None, "crash:" + type(e).__name__, str(e).split("\n")[0][:300])
        finally:
            if main:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
        return Outcome("ok", rows)


def arrow_rows(table: pa.Table) -> list[tuple]:
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return list(zip(*cols)) if cols else [()] * table.num_rows


# ---- comparison ----------------------------------------------------------------------------

REL_TOL = 1e-6


def _norm(v):
    """(kind, value): bools, numbers, text, dates and the rest kept apart."""
    if v is None:
        return None
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, decimal.Decimal, float)):
        return ("n", v)
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, datetime.datetime):
        return ("d", v)
    if isinstance(v, datetime.date):
        return ("d", datetime.datetime(v.year, v.month, v.day))
    return ("o", repr(v))


def values_equal(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    ka, va = a
    kb, vb = b
    if ka != kb:
        return False
    if ka != "n":
        return va == vb
    if not isinstance(va, float) and not isinstance(vb, float):
        da, db = decimal.Decimal(va), decimal.Decimal(vb)
        if da == db:
            return True
        # DuckDB unifies a DECIMAL(38, s) with a finer decimal by dropping scale (UNION,
        # CASE, IN): accept the expected value `b` being the actual one rounded to b's scale.
        if isinstance(vb, decimal.Decimal) and isinstance(va, decimal.Decimal) \
                and vb.as_tuple().exponent > va.as_tuple().exponent:
            q = decimal.Decimal(1).scaleb(vb.as_tuple().exponent)
            return any(da.quantize(q, rounding=m) == db for m in
                       (decimal.ROUND_HALF_UP, decimal.ROUND_HALF_EVEN, decimal.ROUND_DOWN))
        return False
    fa, fb = float(va), float(vb)
    if math.isnan(fa) or math.isnan(fb):
        return math.isnan(fa) and math.isnan(fb)
    if math.isinf(fa) or math.isinf(fb):
        return fa == fb
    return math.isclose(fa, fb, rel_tol=REL_TOL, abs_tol=1e-9)


def _key(v):
    if v is None:
        return (0, "")
    k, x = v
    if k == "n":
        f = float(x)
        if math.isnan(f):
            return (2, "nan")
        return (1, float(f"{f:.5g}") + 0.0)
    return (3 if k == "s" else 4 if k == "d" else 5, str(x) if k != "b" else str(int(x)))


def _row_key(row):
    return tuple(_key(v) for v in row)


def _rows_equal(r1, r2) -> bool:
    return len(r1) == len(r2) and all(values_equal(a, b) for a, b in zip(r1, r2))


def compare(got: list, want: list, ordered: bool = False) -> str | None:
    """None when the results agree, else a short description of the difference."""
    g = [tuple(_norm(v) for v in r) for r in got]
    w = [tuple(_norm(v) for v in r) for r in want]
    if g and w and len(g[0]) != len(w[0]):
        return f"{len(g[0])} columns vs {len(w[0])} columns"
    if ordered:
        for i, (a, b) in enumerate(zip(g, w)):
            if not _rows_equal(a, b):
                if _multiset_equal(g, w):
                    return f"same rows, different order (first difference at row {i})"
                break
        else:
            if len(g) == len(w):
                return None
    elif _multiset_equal(g, w):
        return None
    return _diff_summary(got, want, g, w)


def _multiset_equal(g: list, w: list) -> bool:
    if len(g) != len(w):
        return False
    gs = sorted(g, key=_row_key)
    ws = sorted(w, key=_row_key)
    if all(_rows_equal(a, b) for a, b in zip(gs, ws)):
        return True
    if len(g) > 3000:
        return False
    # rounding in the sort key can order nearly-equal floats differently: match greedily
    remaining = list(ws)
    for row in gs:
        for j, cand in enumerate(remaining):
            if _rows_equal(row, cand):
                remaining.pop(j)
                break
        else:
            return False
    return True


def _diff_summary(got, want, g, w) -> str:
    cg = collections.Counter(_row_key(r) for r in g)
    cw = collections.Counter(_row_key(r) for r in w)
    only_g = [got[i] for i, r in enumerate(g) if cg[_row_key(r)] > cw.get(_row_key(r), 0)]
    only_w = [want[i] for i, r in enumerate(w) if cw[_row_key(r)] > cg.get(_row_key(r), 0)]
    parts = [f"{len(got)} rows vs {len(want)} rows"]
    if only_g:
        parts.append("only in pqe: " + ", ".join(repr(tuple(r)) for r in _dedup(only_g)[:4]))
    if only_w:
        parts.append("only in expected: " + ", ".join(repr(tuple(r)) for r in _dedup(only_w)[:4]))
    if not only_g and not only_w:
        parts.append("values differ beyond rounding")
    return "; ".join(parts)


def _dedup(rows):
    out = []
    for r in rows:
        if r not in out:
            out.append(r)
    return out


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
