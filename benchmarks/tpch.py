"""TPC-H benchmark: pqe against DuckDB, Polars and DataFusion, in one process.

    python -m benchmarks.tpch --sf 1 --engines pqe,duckdb,polars,datafusion --runs 3
    python -m benchmarks.tpch --sf 0.1 --engines pqe,duckdb --runs 1 --queries 1,3,5
    python -m benchmarks.tpch --sf 1 --engines pqe --profile

Every engine runs the unchanged queries in sql/tpch over the same Parquet files with the same
thread count. Per query and engine: one warm-up run (its answer is checked against DuckDB's),
then `--runs` timed runs, reported as best and median. For pqe also its scan floor: the median
time pyarrow alone takes to read the row groups and columns pqe's plan reads, on the same
threads (`--no-floor` skips it). A failure (exception, timeout, wrong
answer) is recorded for that query and engine and the run goes on.

Outputs: a table per query on stdout; for a full run (all 22 queries) at SF >= 0.1 a JSON file
benchmarks/results-sf<SF>.json, and at SF >= 1 also benchmarks/RESULTS.md (small scale factors
measure overheads, not engines, so they do not overwrite the published numbers). `--results
PATH` writes the Markdown to PATH (and the JSON beside it) for any run; `--no-write` writes
nothing. The exit status is 1 when any pqe answer was wrong or failed.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa

from . import report
from .compare import compare, order_key_columns
from .engines import ENGINES, DuckDBEngine, Engine, set_thread_env

REPO = Path(__file__).resolve().parents[1]
QUERY_DIR = REPO / "sql" / "tpch"
ALL_QUERIES = [f"q{i}" for i in range(1, 23)]
REFERENCE = "duckdb"


@dataclass
class Outcome:
    """One engine on one query."""

    engine: str
    query: str
    status: str = "ok"  # ok | wrong | error | timeout | unchecked | reference
    times: list[float] = field(default_factory=list)
    warmup: float | None = None
    rows: int | None = None
    error: str = ""
    rss_growth: int | None = None  # bytes: sampled peak RSS in the warm-up minus RSS before
    profile: dict[str, float] | None = None
    # pqe only: seconds pyarrow alone takes to read what the query reads (median of the runs)
    scan_floor: float | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None

    @property
    def best(self) -> float | None:
        return min(self.times) if self.times else None

    @property
    def answered(self) -> bool:
        return self.status in ("ok", "reference", "unchecked") and bool(self.times)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "median": self.median, "best": self.best,
                "times": self.times, "warmup": self.warmup, "rows": self.rows,
                "error": self.error or None, "rss_growth_bytes": self.rss_growth,
                "profile": self.profile, "scan_floor": self.scan_floor}


@dataclass
class Results:
    """Everything a run measured; what `report` renders."""

    sf: float
    threads: int
    runs: int
    timeout: float
    data: Path
    engines: list[str]
    queries: list[str]
    checked: bool
    outcomes: dict[str, dict[str, Outcome]] = field(default_factory=dict)  # engine -> query
    notes: dict[str, str] = field(default_factory=dict)  # engine -> thread settings
    versions: dict[str, str] = field(default_factory=dict)
    started: str = ""
    command: str = ""
    wall: float = 0.0
    peak_rss: int = 0
    other_cpu: float | None = None  # CPU-seconds other processes used during the run
    machine: dict[str, Any] = field(default_factory=dict)

    def get(self, engine: str, query: str) -> Outcome | None:
        return self.outcomes.get(engine, {}).get(query)


# ---- running with a timeout ------------------------------------------------------------------


class QueryTimeout(Exception):
    pass


class Caller:
    """Runs engine calls in a worker thread so a stuck query can be abandoned. Python cannot
    kill a thread: an abandoned call keeps running (DuckDB's is interrupted), and the next
    call first waits for it so that it does not steal CPU from later measurements."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.abandoned: list[threading.Thread] = []

    def drain(self) -> None:
        for t in self.abandoned:
            t.join(self.timeout)
        self.abandoned = [t for t in self.abandoned if t.is_alive()]

    def __call__(self, fn: Callable[[], Any], on_timeout: Callable[[], None]) -> tuple[Any, float]:
        """(result, seconds) of fn(); raises what fn raised, or QueryTimeout."""
        self.drain()
        gc.collect()  # the previous run's garbage is not this run's cost
        box: dict[str, Any] = {}

        def work() -> None:
            start = time.perf_counter()
            try:
                box["value"] = fn()
            except BaseException as e:  # noqa: BLE001 - reported to the caller
                box["error"] = e
            box["seconds"] = time.perf_counter() - start

        t = threading.Thread(target=work, name="bench-query", daemon=True)
        t.start()
        t.join(self.timeout)
        if t.is_alive():
            on_timeout()
            self.abandoned.append(t)
            raise QueryTimeout(f"no answer after {self.timeout:g} s")
        if "error" in box:
            raise box["error"]
        return box["value"], box["seconds"]


class RssSampler:
    """Peak resident memory of this process while a block runs, sampled every 20 ms from
    /proc (ru_maxrss only ever grows, so it cannot say which engine needed the memory)."""

    def __init__(self, interval: float = 0.02) -> None:
        self.interval = interval
        self.page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        self.base = self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def rss(self) -> int:
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * self.page
        except (OSError, IndexError, ValueError):
            return 0

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self.rss())

    def __enter__(self) -> RssSampler:
        self.base = self.peak = self.rss()
        self._thread = threading.Thread(target=self._loop, name="bench-rss", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak = max(self.peak, self.rss())

    @property
    def growth(self) -> int:
        return max(0, self.peak - self.base)


# ---- the benchmark ---------------------------------------------------------------------------


def _error_text(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip()
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


def run_engine_query(engine: Engine, caller: Caller, query: str, sql: str, runs: int,
                     check: bool, reference: pa.Table | None, order_keys: list[int] | None,
                     profile: bool, floor: bool = True) -> tuple[Outcome, pa.Table | None]:
    """Warm up, check, time and (for pqe with --profile) profile one query on one engine; for
    pqe also time its scan floor (unless `floor` is false)."""
    out = Outcome(engine.name, query)
    answer: pa.Table | None = None
    try:
        # memory is sampled during the warm-up only: the sampling thread competes for the GIL
        # and slowed pqe's (Python-scheduled) runs by up to 2x
        with RssSampler() as rss:
            answer, out.warmup = caller(partial(engine.run, sql), engine.interrupt)
        out.rss_growth = rss.growth
        out.rows = answer.num_rows
        for _ in range(runs):
            _, seconds = caller(partial(engine.run, sql), engine.interrupt)
            out.times.append(seconds)
    except QueryTimeout as e:
        out.status, out.error = "timeout", str(e)
    except Exception as e:  # noqa: BLE001 - any engine failure is a result
        out.status, out.error = "error", _error_text(e)
    if answer is not None and out.status == "ok":
        if check and engine.name == REFERENCE and reference is None:
            out.status = "reference"
        elif not check or reference is None:
            out.status = "unchecked"
        else:
            diff = compare(answer, reference, order_keys)
            if diff is not None:
                out.status, out.error = "wrong", diff
    if floor and hasattr(engine, "scan_floor") and out.status in ("ok", "unchecked", "reference"):
        out.scan_floor = _scan_floor(engine, caller, sql, max(1, runs))
    if profile and hasattr(engine, "profile") and out.status in ("ok", "unchecked", "reference"):
        out.profile = _profile(engine, caller, sql, max(1, runs), reference, order_keys)
    return out, answer


OPERATOR_PREFIX = "op:"


def _scan_floor(engine: Any, caller: Caller, sql: str, runs: int) -> float | None:
    """Median seconds of `runs` reads, by pyarrow alone (`benchmarks.profile.read_floor`), of
    the row groups and columns pqe's plan for the query reads, on as many threads: what
    reading the query's data costs before any engine work (after the timed runs, like the
    profile). None when it cannot be measured (files not local)."""
    try:
        reads = engine.scan_reads(sql)
        engine.scan_floor(reads)  # warm-up, as for the engines
        times = [caller(partial(engine.scan_floor, reads), lambda: None)[1] for _ in range(runs)]
    except Exception:  # noqa: BLE001 - the floor is extra information, never a failure
        return None
    return statistics.median(times)


def _profile(engine: Any, caller: Caller, sql: str, runs: int, reference: pa.Table | None,
             order_keys: list[int] | None) -> dict[str, float] | None:
    """Median seconds per phase over `runs` profiled runs (after the timed ones, so profiling
    never touches the reported times); the profiled answer is checked too."""
    samples: list[dict[str, float]] = []
    try:
        for _ in range(runs):
            (answer, phases), _ = caller(partial(engine.profile, sql), engine.interrupt)
            samples.append(phases)
    except Exception as e:  # noqa: BLE001
        return {"error": _error_text(e)}  # type: ignore[dict-item]
    result = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
    if reference is not None and compare(answer, reference, order_keys) is not None:
        result["answer_differs"] = 1.0
    if hasattr(engine, "operators"):  # one EXPLAIN ANALYZE run: seconds per operator kind
        try:
            ops, _ = caller(partial(engine.operators, sql), engine.interrupt)
            result.update({OPERATOR_PREFIX + k: v for k, v in ops.items()})
        except Exception:  # noqa: BLE001 - the phase profile stands on its own
            result["operators_error"] = 1.0
    return result


def _make_engines(names: list[str], root: Path, threads: int,
                  results: Results) -> dict[str, Engine | str]:
    engines: dict[str, Engine | str] = {}
    for name in names:
        try:
            engines[name] = ENGINES[name](root, threads)
            results.notes[name] = engines[name].threads_note()  # type: ignore[union-attr]
        except Exception as e:  # noqa: BLE001 - e.g. not installed: every query fails
            engines[name] = f"setup failed: {_error_text(e)}"
            results.notes[name] = engines[name]  # type: ignore[assignment]
    return engines


def run(args: argparse.Namespace, log: Callable[[str], None] = print) -> Results:
    """Run the benchmark described by parsed arguments; returns what was measured."""
    set_thread_env(args.threads)  # before anything imports polars
    from data.tpch import generate

    root = Path(args.data) if args.data else generate(args.sf, parts=args.parts)
    queries = args.queries
    results = Results(sf=args.sf, threads=args.threads, runs=args.runs, timeout=args.timeout,
                      data=root, engines=list(args.engines), queries=queries,
                      checked=not args.no_check, started=report.now(),
                      command=getattr(args, "command", "python -m benchmarks.tpch"),
                      machine=report.machine())
    started = time.perf_counter()
    cpu_before = report.cpu_snapshot()
    log(f"TPC-H SF{args.sf:g} from {root}: engines {', '.join(args.engines)}; "
        f"{args.threads} threads, {args.runs} timed run(s) after a warm-up")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > 0.5:
        log(f"warning: load average {load:.1f} before starting: other work on this machine "
            "will slow the engines unevenly (the report says how much CPU it took)")
    engines = _make_engines(args.engines, root, args.threads, results)
    # the reference answers come from the benchmarked DuckDB when there is one, else from an
    # untimed DuckDB of its own
    oracle: Engine | None = None
    if results.checked and not isinstance(engines.get(REFERENCE), Engine):
        try:
            oracle = DuckDBEngine(root, args.threads)
        except Exception as e:  # noqa: BLE001
            log(f"warning: no DuckDB to check answers against: {_error_text(e)}")
    results.versions = report.versions(args.engines)
    caller = Caller(args.timeout)
    # the reference runs first so the others can be checked as soon as they finish
    order = sorted(args.engines, key=lambda n: n != REFERENCE)
    for query in queries:
        sql = (QUERY_DIR / f"{query}.sql").read_text()
        keys = order_key_columns(sql)
        reference: pa.Table | None = None
        if oracle is not None:
            try:
                reference, _ = caller(partial(oracle.run, sql), oracle.interrupt)
            except Exception as e:  # noqa: BLE001
                log(f"{query}: reference (DuckDB) failed: {_error_text(e)}")
        for name in order:
            engine = engines[name]
            if isinstance(engine, str):
                out = Outcome(name, query, status="error", error=engine)
            else:
                out, answer = run_engine_query(engine, caller, query, sql, args.runs,
                                               results.checked, reference, keys, args.profile,
                                               not args.no_floor)
                if name == REFERENCE and results.checked:
                    reference = answer if out.status == "reference" else None
            results.outcomes.setdefault(name, {})[query] = out
        log(report.query_table(results, query))
    for engine in engines.values():
        if isinstance(engine, Engine):
            engine.close()
    if oracle is not None:
        oracle.close()
    results.wall = time.perf_counter() - started
    results.peak_rss = report.max_rss()
    results.other_cpu = report.other_cpu(cpu_before, report.cpu_snapshot())
    log(report.summary(results))
    return results


# ---- command line ----------------------------------------------------------------------------


def _queries(text: str) -> list[str]:
    out = []
    for part in text.split(","):
        part = part.strip().lower().removeprefix("q")
        if not part:
            continue
        if not part.isdigit() or not 1 <= int(part) <= 22:
            raise argparse.ArgumentTypeError(f"no TPC-H query {part!r} (1..22)")
        out.append(f"q{int(part)}")
    return out


def _engines(text: str) -> list[str]:
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in ENGINES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown engine(s) {', '.join(unknown)}; known: {', '.join(ENGINES)}")
    return list(dict.fromkeys(names))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m benchmarks.tpch",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    p.add_argument("--engines", type=_engines, default=_engines("pqe,duckdb"),
                   help=f"comma-separated, from {','.join(ENGINES)} (default pqe,duckdb)")
    p.add_argument("--queries", type=_queries, default=list(ALL_QUERIES),
                   help="comma-separated query numbers, e.g. 1,3,5 (default all 22)")
    p.add_argument("--runs", type=int, default=3, help="timed runs per query (default 3)")
    p.add_argument("--threads", type=int, default=2, help="threads per engine (default 2)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds before a query run is abandoned (default 300)")
    p.add_argument("--no-check", action="store_true", help="do not check answers")
    p.add_argument("--no-floor", action="store_true",
                   help="do not time pqe's scan floor (pyarrow alone reading what each query "
                        "reads)")
    p.add_argument("--profile", action="store_true",
                   help="also time pqe's phases (parse, bind, optimize, plan, lower, execute)")
    p.add_argument("--data", help="TPC-H Parquet directory (default: data/tpch/sf<SF>, "
                                  "generated when missing)")
    p.add_argument("--parts", type=int, default=1, help="files per table when generating")
    p.add_argument("--results", help="write the Markdown report here (and the JSON beside it)")
    p.add_argument("--json", help="write the JSON results here")
    p.add_argument("--no-write", action="store_true", help="write no result files")
    args = p.parse_args(argv)
    if args.runs < 0:
        p.error("--runs must be >= 0")
    if args.threads < 1:
        p.error("--threads must be >= 1")
    return args


def output_paths(args: argparse.Namespace) -> tuple[Path | None, Path | None]:
    """(markdown, json) paths to write; see the module docstring for the defaults."""
    if args.no_write:
        return None, None
    json_name = f"results-sf{args.sf:g}.json"
    full = args.queries == ALL_QUERIES
    md = Path(args.results) if args.results else (
        REPO / "benchmarks" / "RESULTS.md" if full and args.sf >= 1 else None)
    if args.json:
        js: Path | None = Path(args.json)
    elif args.results:
        js = Path(args.results).parent / json_name
    else:
        js = REPO / "benchmarks" / json_name if full and args.sf >= 0.1 else None
    return md, js


def write_outputs(args: argparse.Namespace, results: Results) -> list[Path]:
    """Write the result files `output_paths` chooses; returns what was written."""
    md, js = output_paths(args)
    written = []
    if js is not None:
        report.write_json(results, js)
        written.append(js)
    if md is not None:
        report.write_markdown(results, md)
        written.append(md)
    return written


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    shown = sys.argv[1:] if argv is None else argv
    args.command = " ".join(["python -m benchmarks.tpch", *shown])
    results = run(args)
    for path in write_outputs(args, results):
        print(f"wrote {path}")
    pqe = results.outcomes.get("pqe", {})
    return 1 if any(o.status not in ("ok", "unchecked") for o in pqe.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
