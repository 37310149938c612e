"""TPC-DS correctness: pqe's answers to the 99 TPC-DS queries checked against DuckDB's.

    python -m benchmarks.tpcds --sf 0.01
    python -m benchmarks.tpcds --sf 0.01 --queries 1,2,14 --timeout 120 --no-write

The queries are read, unchanged, from --queries-dir (default ../shared/tpcds/queries relative
to the repository root: the DuckDB tpcds extension's q01.sql .. q99.sql, not part of this
repository). The data is generated with tpcgen-cli (`pip install tpcgen-cli`, in the `bench`
extra) into data/tpcds/sf<SF> when missing: one Parquet file per table. pqe registers every
table with `Context.register_parquet`; DuckDB gets views over the same files, with the settings
of the TPC-H benchmark (benchmarks/engines.py: truncating integer division, PostgreSQL NULL
ordering) plus division by zero giving NULL, as in pqe. DuckDB's answer is the oracle: the
extension's own answer files come from a different generator.

Each query runs once on DuckDB and once on pqe (the pqe time printed is that run); with
--runs N each engine then runs it N more times and the report shows those medians beside the
first run's times (the checked run is the warm-up, as in benchmarks.tpch). Outcomes:
pass, wrong (the answers differ: benchmarks/compare.py, ORDER BY-aware with a numeric
tolerance), pqe-error (error class and the first line of its message), duckdb-error (no
reference), timeout (pqe gave no answer within --timeout seconds; it is cancelled).

Two refinements of the TPC-H check, both needed by TPC-DS queries and both only able to turn a
difference into a pass when the difference is allowed by SQL:
- ORDER BY keys that are not plain output columns (`SELECT *`, `ORDER BY sum_sales -
  avg_monthly_sales`, `CASE ... END`) are evaluated over both answers (with DuckDB, on the
  result tables) so that rows tying on every key may come in any order. Keys that cannot be
  evaluated over the output (GROUPING(...)) leave the row order checked exactly.
- With ORDER BY ... LIMIT n, the rows tying with the last row on every key may be any of the
  tying rows: those rows are looked up in DuckDB's answer without the LIMIT.

On a shared machine a query whose plan explodes must not take the machine down: the process's
address space is capped at --max-memory GiB (RLIMIT_AS, default 8), so such a query fails with a
MemoryError (reported as a pqe-error whose message names it) instead of being OOM-killed.

Outputs (unless --no-write): benchmarks/TPCDS.md and benchmarks/results-tpcds-sf<SF>.json. A
"## Diagnosis" section of an existing TPCDS.md (hand-written: causes, repros, locations) is
kept when the file is rewritten. The exit status is 1 when any query did not pass.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import exp

from . import engines, report
from .compare import compare, norm, order_key_columns, rows_close
from .engines import DuckDBEngine, PqeEngine
from .tpch import Caller, QueryTimeout

REPO = Path(__file__).resolve().parents[1]
DEFAULT_QUERIES_DIR = Path("../shared/tpcds/queries")  # relative to REPO
DATA_ROOT = REPO / "data" / "tpcds"
ALL_QUERIES = [f"q{i:02d}" for i in range(1, 100)]
TABLES = (
    "call_center", "catalog_page", "catalog_returns", "catalog_sales", "customer",
    "customer_address", "customer_demographics", "date_dim", "dbgen_version",
    "household_demographics", "income_band", "inventory", "item", "promotion", "reason",
    "ship_mode", "store", "store_returns", "store_sales", "time_dim", "warehouse", "web_page",
    "web_returns", "web_sales", "web_site")
STATUSES = ("pass", "wrong", "pqe-error", "duckdb-error", "timeout")
SLOW = 10.0  # seconds: a pqe run this long at SF0.01 is reported as slow
REL = 1e-6  # the TPC-H check's relative tolerance
DIAGNOSIS = "## Diagnosis"


# ---- data --------------------------------------------------------------------------------------


def default_dir(sf: float) -> Path:
    return DATA_ROOT / f"sf{sf:g}"


def is_complete(root: Path) -> bool:
    return (root / ".complete").exists() and all(
        (root / f"{t}.parquet").exists() or (root / t).is_dir() for t in TABLES)


def _tpcgen() -> str:
    exe = shutil.which("tpcgen-cli")
    if exe is None:
        candidate = Path(sys.executable).with_name("tpcgen-cli")
        if candidate.exists():
            return str(candidate)
        raise SystemExit("tpcgen-cli is not installed: pip install tpcgen-cli")
    return exe


def generate(sf: float, out: Path | None = None, threads: int = 2) -> Path:
    """Generate (if needed) TPC-DS Parquet at scale factor `sf`; returns the directory."""
    root = out if out is not None else default_dir(sf)
    if is_complete(root):
        return root
    root.mkdir(parents=True, exist_ok=True)
    cmd = [_tpcgen(), "tpcds", "parquet", "-s", f"{sf:g}", "-o", str(root), "--overwrite",
           "-n", str(threads), "-q"]
    subprocess.run(cmd, check=True)
    (root / ".complete").write_text(" ".join(cmd[1:]) + "\n")
    return root


# ---- engines -----------------------------------------------------------------------------------


@contextlib.contextmanager
def _tpcds_tables() -> Iterator[None]:
    """benchmarks/engines.py sets its engines up over data.tpch.TABLES: substituting the TPC-DS
    tables while they are built gives exactly the TPC-H benchmark's setup (DuckDB's settings,
    pqe's register_parquet calls) over the TPC-DS files, which are laid out the same way."""
    saved = engines.TABLES
    engines.TABLES = TABLES
    try:
        yield
    finally:
        engines.TABLES = saved


class Pqe(PqeEngine):
    """pqe, cancellable: a timed-out query is stopped instead of running on in its thread."""

    def __init__(self, root: Path, threads: int) -> None:
        with _tpcds_tables():
            super().__init__(root, threads)
        self._cancel = threading.Event()

    def run(self, sql: str) -> pa.Table:
        self._cancel = threading.Event()
        return self.ctx.sql(sql).to_arrow(cancel=self._cancel)

    def interrupt(self) -> None:
        self._cancel.set()


class DuckDB(DuckDBEngine):
    """The TPC-H benchmark's DuckDB, plus one setting TPC-DS needs: division by zero is NULL,
    as in pqe (README: "division by zero is NULL"). DuckDB 2.0 raises an error instead when
    integer_division is on (q12 divides by a window SUM that is 0 for some classes)."""

    def __init__(self, root: Path, threads: int) -> None:
        with _tpcds_tables():
            super().__init__(root, threads)
        self.con.execute("SET error_on_division_by_zero = false")


# ---- checking answers --------------------------------------------------------------------------


def _select_of(tree: exp.Expression) -> exp.Select | None:
    while isinstance(tree, exp.SetOperation):
        tree = tree.left
    return tree if isinstance(tree, exp.Select) else None


def order_keys(sql: str, columns: list[str]) -> tuple[list[int] | None, list[str]]:
    """(key positions, key expressions to evaluate) for the top-level ORDER BY.

    `order_key_columns` first; when it cannot name every key as an output column, keys are
    resolved against the answer's column names (`SELECT *`) and the rest become SQL
    expressions over the output, appended as columns len(columns), len(columns)+1, ...
    (None, []) when a key cannot be expressed over the output."""
    keys = order_key_columns(sql)
    if keys is not None:
        return keys, []
    tree = sqlglot.parse_one(sql)
    select = _select_of(tree)
    outputs = list(select.expressions) if select is not None else []
    names = [c.lower() for c in columns]
    texts = {e.unalias().sql().lower(): i for i, e in enumerate(outputs)
             if not isinstance(e, exp.Star)}
    positions: list[int] = []
    extra: list[str] = []
    for ordered in tree.args["order"].expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int:
            positions.append(int(key.this) - 1)
        elif isinstance(key, exp.Column) and key.name.lower() in names:
            positions.append(names.index(key.name.lower()))
        elif key.sql().lower() in texts and texts[key.sql().lower()] < len(columns):
            positions.append(texts[key.sql().lower()])
        else:
            if key.find(exp.AggFunc, exp.Window, exp.Grouping, exp.Anonymous):
                return None, []  # GROUPING(...) etc.: not a function of the output row
            cols = {c.name.lower() for c in key.find_all(exp.Column)}
            if not cols <= set(names):
                return None, []
            if any(c.table for c in key.find_all(exp.Column)):
                key = key.transform(
                    lambda n: exp.column(n.name, quoted=True) if isinstance(n, exp.Column) else n)
            positions.append(len(columns) + len(extra))
            extra.append(key.sql(dialect="duckdb"))
    return positions, extra


def _with_keys(con: Any, table: pa.Table, extra: list[str]) -> pa.Table:
    """`table` plus one column per expression of `extra`, evaluated by DuckDB row by row."""
    if not extra:
        return table
    named = table.rename_columns([f"c{i}" for i in range(table.num_columns)])
    rename = {n.lower(): f"c{i}" for i, n in enumerate(table.column_names)}
    exprs = []
    for text in extra:
        tree = sqlglot.parse_one(text, read="duckdb").transform(
            lambda n: exp.column(rename[n.name.lower()]) if isinstance(n, exp.Column) else n)
        exprs.append(tree.sql(dialect="duckdb"))
    con.register("__pqe_answer", named)
    try:
        cols = ", ".join(f"{e} AS k{i}" for i, e in enumerate(exprs))
        keys = con.sql(f"SELECT {cols} FROM __pqe_answer").to_arrow_table()
    finally:
        con.unregister("__pqe_answer")
    for i in range(keys.num_columns):
        table = table.append_column(f"__order_key_{i}", keys.column(i))
    return table


def _without_limit(sql: str) -> str | None:
    tree = sqlglot.parse_one(sql)
    if tree.args.get("limit") is None or tree.args.get("order") is None:
        return None
    tree.set("limit", None)
    return tree.sql(dialect="duckdb")


def _limit_ties_ok(got: pa.Table, want: pa.Table, everything: pa.Table, keys: list[int]) -> bool:
    """With ORDER BY ... LIMIT: `got` equals `want` except for which of the rows tying with the
    last row on every key were kept; those must be rows of `everything` (no LIMIT)."""
    g = [tuple(norm(v) for v in r.values()) for r in got.to_pylist()]
    w = [tuple(norm(v) for v in r.values()) for r in want.to_pylist()]
    if len(g) != len(w) or not g:
        return False
    if not all(rows_close(tuple(a[k] for k in keys), tuple(b[k] for k in keys), REL)
               for a, b in zip(g, w, strict=True)):
        return False
    last = tuple(w[-1][k] for k in keys)

    def tie(r: tuple) -> bool:
        return rows_close(tuple(r[k] for k in keys), last, REL)

    head = sum(1 for r in w if not tie(r))
    if compare(got.slice(0, head), want.slice(0, head), keys, REL) is not None:
        return False
    pool = [r for r in (tuple(norm(v) for v in x.values()) for x in everything.to_pylist())
            if tie(r)]
    for r in g[head:]:
        for i, cand in enumerate(pool):
            if rows_close(r, cand, REL):
                del pool[i]
                break
        else:
            return False
    return True


def _positional(t: pa.Table) -> pa.Table:
    """Columns renamed c0, c1, ...: `compare` reads rows as dicts, which keep one of several
    columns of the same name."""
    return t.rename_columns([f"c{i}" for i in range(t.num_columns)])


def check(sql: str, got: pa.Table, want: pa.Table, duck: DuckDB) -> tuple[str | None, str]:
    """(difference or None, note on how the answer was checked)."""
    if got.num_columns != want.num_columns:
        return compare(got, want, [], REL), ""
    keys, extra = order_keys(sql, want.column_names)
    note = ""
    if extra:
        try:
            got, want = _with_keys(duck.con, got, extra), _with_keys(duck.con, want, extra)
            note = f"ORDER BY keys evaluated over the answers: {', '.join(extra)}"
        except Exception as e:  # noqa: BLE001 - fall back to the exact row order
            keys, note = None, f"row order checked exactly (keys not evaluable: {e})"
    elif keys is None:
        note = "row order checked exactly (ORDER BY keys are not functions of the output)"
    got, want = _positional(got), _positional(want)
    diff = compare(got, want, keys, REL)
    if diff is None or not keys:
        if diff is not None and keys is None and compare(got, want, [], REL) is None:
            diff += " (same rows, different order: ORDER BY keys not checkable)"
        return diff, note
    unlimited = _without_limit(sql)
    if unlimited is not None and got.num_rows == want.num_rows:
        everything = _positional(_with_keys(duck.con, duck.run(unlimited), extra))
        if _limit_ties_ok(got, want, everything, keys):
            return None, (note + "; " if note else "") + "rows tying at the LIMIT differ"
    return diff, note


# ---- running -----------------------------------------------------------------------------------


@dataclass
class QueryResult:
    query: str
    status: str = "pass"
    pqe_seconds: float | None = None
    duckdb_seconds: float | None = None
    # with --runs N > 1: the checked (first) run's times; the two above are then the medians
    # of the N runs after it
    pqe_first: float | None = None
    duckdb_first: float | None = None
    rows: int | None = None
    expected_rows: int | None = None
    error_class: str = ""
    error: str = ""  # first line of the error message, or what differs
    note: str = ""


@dataclass
class Run:
    sf: float
    threads: int
    runs: int
    timeout: float
    max_memory: float
    data: str
    queries_dir: str
    started: str = ""
    command: str = ""
    wall: float = 0.0
    other_cpu: float | None = None
    machine: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    results: list[QueryResult] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.results) for s in STATUSES}


def _first_line(e: BaseException) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    text = lines[0] if lines else ""
    return text if len(text) <= 300 else text[:297] + "..."


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def _timed_runs(out: QueryResult, sql: str, pqe: Pqe, duck: DuckDB, caller: Caller,
                runs: int) -> None:
    """After the checked run (each engine's warm-up): `runs` more of each, alternating, the
    medians replacing the first run's times."""
    out.pqe_first, out.duckdb_first = out.pqe_seconds, out.duckdb_seconds
    mine, theirs = [], []
    for _ in range(runs):
        theirs.append(caller(partial(duck.run, sql), duck.interrupt)[1])
        mine.append(caller(partial(pqe.run, sql), pqe.interrupt)[1])
    out.pqe_seconds, out.duckdb_seconds = _median(mine), _median(theirs)


def run_query(name: str, sql: str, pqe: Pqe, duck: DuckDB, caller: Caller,
              runs: int = 1) -> QueryResult:
    out = QueryResult(name)
    try:
        want, out.duckdb_seconds = caller(partial(duck.run, sql), duck.interrupt)
        out.expected_rows = want.num_rows
    except Exception as e:  # noqa: BLE001 - includes QueryTimeout
        out.status, out.error_class, out.error = "duckdb-error", type(e).__name__, _first_line(e)
        want = None
    try:
        got, out.pqe_seconds = caller(partial(pqe.run, sql), pqe.interrupt)
        out.rows = got.num_rows
    except QueryTimeout as e:
        if want is not None:
            out.status, out.error_class, out.error = "timeout", "", str(e)
        return out
    except Exception as e:  # noqa: BLE001 - any pqe failure is a result
        if want is not None:
            out.status, out.error_class, out.error = "pqe-error", type(e).__name__, _first_line(e)
            _memory_note(out)
        return out
    if want is None:
        return out
    try:
        diff, out.note = check(sql, got, want, duck)
    except Exception as e:  # noqa: BLE001 - a checker failure must not stop the run
        diff = f"answer check failed: {type(e).__name__}: {_first_line(e)}"
    if diff is not None:
        out.status, out.error = "wrong", diff
    elif runs > 1:
        try:
            _timed_runs(out, sql, pqe, duck, caller, runs)
        except Exception as e:  # noqa: BLE001 - a failure of a repeated run is a result
            out.status, out.error_class, out.error = "pqe-error", type(e).__name__, _first_line(e)
    return out


MEMORY_ERRORS = re.compile(r"MemoryError|malloc of size \d+ failed|Unable to allocate")


def _memory_note(r: QueryResult) -> None:
    """pqe reports an allocation failure as ExecutionError (Arrow's) or InternalError (NumPy's
    MemoryError): either way it is the --max-memory cap."""
    if MEMORY_ERRORS.search(f"{r.error_class} {r.error}"):
        r.note = "ran out of the --max-memory address space"


def line(r: QueryResult) -> str:
    t = "" if r.pqe_seconds is None else f"{r.pqe_seconds:7.2f}s"
    text = f"{r.query}  {r.status:<12} pqe {t:>8}"
    if r.status == "pqe-error" or r.status == "duckdb-error":
        text += f"  {r.error_class}: {r.error}"
    elif r.status != "pass":
        text += f"  {r.error}"
    if r.status != "pass" and r.note:
        text += f"  [{r.note}]"
    if r.status == "pass" and r.pqe_seconds is not None and r.pqe_seconds > SLOW:
        text += "  (slow)"
    return text


def cap_memory(gib: float) -> None:
    """Cap this process's address space (never raising an existing cap)."""
    if gib <= 0:
        return
    want = int(gib * 2**30)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft <= want:
        return
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_AS, (want, hard))


def run(args: argparse.Namespace, log: Callable[[str], None] = print) -> Run:
    qdir = queries_dir(args)
    cap_memory(args.max_memory)
    root = Path(args.data) if args.data else generate(args.sf)
    out = Run(sf=args.sf, threads=args.threads, runs=args.runs, timeout=args.timeout,
              max_memory=args.max_memory, data=_rel(root),
              queries_dir=str(args.queries_dir), started=report.now(),
              command=getattr(args, "command", "python -m benchmarks.tpcds"),
              machine=report.machine(), versions=_versions())
    log(f"TPC-DS SF{args.sf:g} from {root}: {len(args.queries)} queries from {qdir}; "
        f"{args.threads} threads, timeout {args.timeout:g} s, address space <= "
        f"{args.max_memory:g} GiB")
    started = time.perf_counter()
    cpu_before = report.cpu_snapshot()
    pqe, duck = Pqe(root, args.threads), DuckDB(root, args.threads)
    caller = Caller(args.timeout)
    try:
        for name in args.queries:
            sql = (qdir / f"{name}.sql").read_text()
            r = run_query(name, sql, pqe, duck, caller, args.runs)
            out.results.append(r)
            log(line(r))
    finally:
        caller.drain()
        pqe.close()
        duck.close()
    out.wall = time.perf_counter() - started
    out.other_cpu = report.other_cpu(cpu_before, report.cpu_snapshot())
    c = out.counts()
    log(", ".join(f"{c[s]} {s}" for s in STATUSES) + f" of {len(out.results)}; "
        f"{out.wall:.0f} s")
    return out


def _versions() -> dict[str, str]:
    v = report.versions(["pqe", "duckdb"])
    v.pop("tpchgen-cli", None)
    v["tpcgen-cli"] = engines.pkg_version("tpcgen-cli")
    return v


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


# ---- reports -----------------------------------------------------------------------------------


def cause(r: QueryResult) -> str:
    """A grouping key for failures: the error with names, numbers and quoted text blanked."""
    if r.note.startswith("ran out of"):
        return "pqe-error: out of memory (address space capped at --max-memory)"
    if r.status == "wrong":
        text = re.sub(r"\(.*", "(...)", r.error)
        text = re.sub(r"\d+", "N", text)
        return f"wrong: {text}"
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", r.error)
    text = re.sub(r"\b\d+(\.\d+)?\b", "N", text)
    return f"{r.status}: {r.error_class}: {text}" if r.error_class else f"{r.status}: {text}"


def to_json(run: Run) -> dict[str, Any]:
    data = asdict(run)
    data["counts"] = run.counts()
    data["results"] = {r.query: {k: v for k, v in asdict(r).items() if k != "query"}
                       for r in run.results}
    return data


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(run: Run, diagnosis: str = "") -> str:
    c = run.counts()
    m = run.machine
    total = len(run.results)
    lines = [
        f"# TPC-DS SF{run.sf:g}: pqe answers checked against DuckDB",
        "",
        ("Generated by `benchmarks/tpcds.py` (see its docstring for how answers are checked); "
         f"run {run.started}: `{run.command}`."),
        "",
        (f"- Machine: {m.get('cpu')}, {m.get('usable_cores')} usable of {m.get('cores')} "
         f"cores, {(m.get('ram_bytes') or 0) / 2**30:.1f} GiB RAM, {m.get('os')}"),
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in run.versions.items()),
        f"- Data: `{run.data}` (tpcgen-cli, Parquet); queries: `{run.queries_dir}`",
        f"- pqe and DuckDB with {run.threads} threads; timeout {run.timeout:g} s per query; "
        f"address space capped at {run.max_memory:g} GiB; "
        f"wall time {run.wall:.0f} s"
        + (f"; other processes used {run.other_cpu:.0f} CPU-seconds meanwhile"
           if run.other_cpu is not None else ""),
        "",
        f"**{c['pass']} of {total} pass**: " + ", ".join(f"{c[s]} {s}" for s in STATUSES) + ".",
        "",
    ]
    timed = [r for r in run.results if r.status == "pass" and r.pqe_seconds and r.duckdb_seconds]
    if timed:
        mine = sum(r.pqe_seconds for r in timed)
        theirs = sum(r.duckdb_seconds for r in timed)
        ratios = [r.pqe_seconds / r.duckdb_seconds for r in timed]
        geo = 2 ** (sum(math.log2(x) for x in ratios) / len(ratios))
        what = (f"median of {run.runs} runs after a checked warm-up run" if run.runs > 1
                else "one run, the checked one (each engine's first run of the query)")
        over = [f"{r.query} ({x:.1f}x)" for r, x in zip(timed, ratios, strict=True) if x > 5]
        lines += [f"Times: {what}. Passing queries: pqe {mine:.2f} s, DuckDB {theirs:.2f} s "
                  f"(**{mine / theirs:.2f}x**; geomean of per-query ratios {geo:.2f}x); above "
                  f"5x: {', '.join(over) or 'none'}.", ""]
    first = run.runs > 1
    lines += ["| query | status | pqe s | DuckDB s | pqe / DuckDB |"
              + (" pqe first run s | DuckDB first run s |" if first else "")
              + " rows | expected | detail |",
              "|---|---|---:|---:|---:|" + ("---:|---:|" if first else "") + "---:|---:|---|"]
    for r in run.results:
        detail = (f"{r.error_class}: {r.error}" if r.error_class else r.error) or r.note
        if r.error and r.note:
            detail += f" ({r.note})"
        t = "" if r.pqe_seconds is None else f"{r.pqe_seconds:.3f}"
        d = "" if r.duckdb_seconds is None else f"{r.duckdb_seconds:.3f}"
        ratio = f"{r.pqe_seconds / r.duckdb_seconds:.2f}" if r.pqe_seconds and r.duckdb_seconds else ""
        extra = ""
        if first:
            extra = " | ".join("" if v is None else f"{v:.3f}"
                               for v in (r.pqe_first, r.duckdb_first)) + " | "
        lines.append(f"| {r.query} | {r.status} | {t} | {d} | {ratio} | {extra}"
                     f"{'' if r.rows is None else r.rows} | "
                     f"{'' if r.expected_rows is None else r.expected_rows} | "
                     f"{_md_escape(detail)} |")
    groups: dict[str, list[QueryResult]] = {}
    for r in run.results:
        if r.status != "pass":
            groups.setdefault(cause(r), []).append(r)
    lines += ["", "## Failures grouped by error", ""]
    if not groups:
        lines.append("None.")
    for key, rs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"- **{len(rs)}** × `{_md_escape(key)}`: "
                     + ", ".join(r.query for r in rs))
    empty = [r.query for r in run.results if r.expected_rows == 0]
    if empty:
        lines += ["", f"DuckDB's answer is empty for {len(empty)} queries at this scale factor, so "
                  "their pass checks only that pqe returns no rows: " + ", ".join(empty) + "."]
    slow = [r for r in run.results if r.pqe_seconds is not None and r.pqe_seconds > SLOW]
    lines += ["", f"## Slow queries (pqe > {SLOW:g} s)", ""]
    lines.append(", ".join(f"{r.query} ({r.pqe_seconds:.1f} s)" for r in slow) or "None.")
    if diagnosis:
        lines += ["", diagnosis.rstrip()]
    return "\n".join(lines) + "\n"


def kept_diagnosis(path: Path) -> str:
    """The hand-written "## Diagnosis" section of an existing report (to the end of file)."""
    if not path.exists():
        return ""
    text = path.read_text()
    i = text.find("\n" + DIAGNOSIS)
    return text[i + 1:] if i >= 0 else ""


def write_outputs(args: argparse.Namespace, run: Run) -> list[Path]:
    if args.no_write:
        return []
    md = Path(args.results) if args.results else REPO / "benchmarks" / "TPCDS.md"
    js = md.parent / f"results-tpcds-sf{args.sf:g}.json"
    js.write_text(json.dumps(to_json(run), indent=1) + "\n")
    md.write_text(markdown(run, kept_diagnosis(md)))
    return [md, js]


# ---- command line ------------------------------------------------------------------------------


def _queries(text: str) -> list[str]:
    out = []
    for part in text.split(","):
        part = part.strip().lower().removeprefix("q")
        if not part:
            continue
        if not part.isdigit() or not 1 <= int(part) <= 99:
            raise argparse.ArgumentTypeError(f"no TPC-DS query {part!r} (1..99)")
        out.append(f"q{int(part):02d}")
    return list(dict.fromkeys(out))


def queries_dir(args: argparse.Namespace) -> Path:
    p = Path(args.queries_dir)
    return p if p.is_absolute() else (REPO / p).resolve()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tpcds",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sf", type=float, default=0.01, help="scale factor (default 0.01)")
    p.add_argument("--queries", type=_queries, default=list(ALL_QUERIES),
                   help="comma-separated query numbers, e.g. 1,2,14 (default all 99)")
    p.add_argument("--queries-dir", default=str(DEFAULT_QUERIES_DIR),
                   help="directory of q01.sql .. q99.sql (default ../shared/tpcds/queries, "
                        "relative to the repository root)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds before a pqe query is cancelled (default 120)")
    p.add_argument("--threads", type=int, default=2, help="threads per engine (default 2)")
    p.add_argument("--runs", type=int, default=1,
                   help="timed runs per query and engine after the checked one, which is then "
                        "the warm-up; the report shows their medians (default 1: the checked "
                        "run's time only)")
    p.add_argument("--max-memory", type=float, default=8.0,
                   help="cap the process's address space at this many GiB, so that an "
                        "exploding query fails instead of exhausting the machine (default 8; "
                        "0: no cap)")
    p.add_argument("--data", help="TPC-DS Parquet directory (default: data/tpcds/sf<SF>, "
                                  "generated when missing)")
    p.add_argument("--results", help="write the Markdown report here (default "
                                     "benchmarks/TPCDS.md) and the JSON beside it")
    p.add_argument("--no-write", action="store_true", help="write no result files")
    args = p.parse_args(argv)
    if args.threads < 1:
        p.error("--threads must be >= 1")
    if not queries_dir(args).is_dir():
        p.error(f"no queries directory {queries_dir(args)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    shown = sys.argv[1:] if argv is None else argv
    args.command = " ".join(["python -m benchmarks.tpcds", *shown])
    result = run(args)
    for path in write_outputs(args, result):
        print(f"wrote {path}")
    return 0 if all(r.status == "pass" for r in result.results) else 1


if __name__ == "__main__":
    sys.exit(main())
