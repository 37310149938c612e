"""Cold runs and peak memory: each TPC-H query in a fresh process, per engine.

    python -m benchmarks.cold --sf 1 --engines pqe,duckdb,polars --threads 2
    python -m benchmarks.cold --sf 10 --engines pqe,duckdb --memory-limit 2GiB --queries 1,9,18

For every (engine, query) a new Python process imports the engine, registers the Parquet
files (footers and statistics read for the first time: no engine has anything cached), runs
the query once and exits. Reported per query and engine:

- `cold s`: the query alone, from SQL text to an Arrow table, in that fresh process (the
  first run: file footers, statistics and any plan caches are cold; the OS page cache is
  not dropped, which needs root and would measure the disk, not the engine);
- `process s`: the whole process, interpreter start to exit (imports included), the time a
  one-shot script or `pqe-sql -c` pays;
- `peak RSS`: the process's peak resident set (`ru_maxrss`) minus the peak after imports
  and registration, so the query's own memory, and the total beside it.

`--memory-limit` applies pqe's `Context(memory_limit=...)` and DuckDB's
`SET memory_limit` (DuckDB counts its buffer manager only; pqe's is a planning bound), so
the two can be compared under the same budget. Results go to benchmarks/COLD.md (Markdown)
and benchmarks/results-cold-sf<SF>.json unless --no-write.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
from pathlib import Path
from benchmarks import engines
spec = json.loads(sys.argv[1])
engines.set_thread_env(spec["threads"])
cls = engines.ENGINES[spec["engine"]]
if spec["engine"] == "pqe" and spec["memory_limit"]:
    import pqe
    class Limited(cls):
        def __init__(self, root, threads):
            engines.Engine.__init__(self, root, threads)
            self.ctx = engines.register_tpch(
                pqe.Context(threads=threads, memory_limit=spec["memory_limit"]), root)
    cls = Limited
engine = cls(Path(spec["data"]), spec["threads"])
if spec["engine"] == "duckdb" and spec["memory_limit"]:
    engine.con.execute("SET memory_limit = '%s'" % spec["memory_limit"].replace("i", ""))
ready = time.perf_counter()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
sql = Path(spec["query"]).read_text()
start = time.perf_counter()
table = engine.run(sql)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
engine.close()
print(json.dumps({{"seconds": seconds, "setup": ready - t0, "rows": table.num_rows,
                  "base_kib": base, "peak_kib": peak}}))
"""


def run_one(engine: str, query: Path, data: Path, threads: int, memory_limit: str | None,
            timeout: float) -> dict:
    spec = json.dumps({"engine": engine, "query": str(query), "data": str(data),
                       "threads": threads, "memory_limit": memory_limit})
    start = time.perf_counter()
    try:
        out = subprocess.run([sys.executable, "-c", _CHILD.format(root=str(ROOT)), spec],
                             capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    process = time.perf_counter() - start
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["exit status %d" % out.returncode])[-1]
        return {"error": last[:200], "process": process}
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["process"] = process
    return result


def _mib(kib: float) -> str:
    return f"{kib / 1024:.0f}"


def report(results: dict, args, queries: list[str], engines: list[str]) -> str:
    from benchmarks.engines import pkg_version

    lines = [f"# Cold runs and peak memory: TPC-H SF{args.sf}, {args.threads} threads", "",
             f"`python -m benchmarks.cold --sf {args.sf} --engines {','.join(engines)} "
             f"--threads {args.threads}"
             + (f" --memory-limit {args.memory_limit}" if args.memory_limit else "")
             + (f" --queries {args.queries}" if args.queries else "") + "`, "
             + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()) + ".", "",
             "Each query runs once in a fresh process per engine (see benchmarks/cold.py for "
             "what is timed). `cold s` = the query in that process (nothing cached by the "
             "engine; the OS page cache is warm); `process s` = interpreter start to exit; "
             "`query MiB` = peak RSS of the process minus its peak after imports and "
             "registration; `peak MiB` = the process's peak RSS.", "",
             "What the engines keep between runs of one process (so what a warm run skips "
             "and a cold one pays): pqe keeps each registered Parquet table's file list, "
             "footers, row-group statistics and schema in its catalog (checked against size "
             "and mtime, or the object store's etag, before each query; a changed file is "
             "re-read; with them, per file version, the row groups each filter's "
             "statistics leave and the share of a text sample a LIKE pattern keeps), plus "
             "its compiled kernels and, per process, each file's parsed footer "
             "for reading its row groups (per file version); DuckDB, with views over "
             "`read_parquet` as "
             "here, re-reads the footers on every query unless its object cache is enabled "
             "(off by default); Polars' `scan_parquet` frames re-read the metadata on each "
             "collect; DataFusion's listing tables keep the file listing and, with statistics "
             "collection on, the files' statistics in the session. None caches query results.",
             "",
             f"- Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} "
             f"cores; Python {platform.python_version()}; "
             + ", ".join(f"{e} {pkg_version(e)}" for e in engines), ""]
    head = "| query | " + " | ".join(
        f"{e} cold s | {e} process s | {e} query MiB | {e} peak MiB" for e in engines) + " |"
    lines += [head, "| --- |" + " ---: |" * (4 * len(engines))]
    sums = {e: [0.0, 0.0] for e in engines}
    for q in queries:
        cells = []
        for e in engines:
            r = results[e][q]
            if "error" in r:
                cells += [f"error: {r['error'][:60]}", "", "", ""]
                continue
            sums[e][0] += r["seconds"]
            sums[e][1] += r["process"]
            cells += [f"{r['seconds']:.3f}", f"{r['process']:.2f}",
                      _mib(max(r["peak_kib"] - r["base_kib"], 0)), _mib(r["peak_kib"])]
        lines.append(f"| {q} | " + " | ".join(cells) + " |")
    lines.append("| **sum** | " + " | ".join(
        f"**{sums[e][0]:.2f}** | **{sums[e][1]:.1f}** |  | " for e in engines) + " |")
    if "pqe" in engines and len(engines) > 1:
        lines += [""]
        for e in engines:
            if e != "pqe" and sums[e][0]:
                peaks = [(results["pqe"][q].get("peak_kib"), results[e][q].get("peak_kib"))
                         for q in queries]
                ratios = sorted(a / b for a, b in peaks if a and b)
                lines.append(f"- pqe / {e}: cold query time {sums['pqe'][0] / sums[e][0]:.2f}x, "
                             f"process time {sums['pqe'][1] / sums[e][1]:.2f}x; peak RSS "
                             f"ratio per query: median {ratios[len(ratios) // 2]:.2f}x, "
                             f"max {ratios[-1]:.2f}x" if ratios else "")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.cold", description=__doc__.split("\n\n")[0])
    p.add_argument("--sf", default="1")
    p.add_argument("--engines", default="pqe,duckdb")
    p.add_argument("--queries", default="")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--memory-limit", default=None)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--data", default=None)
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from data.tpch import generate

    data = Path(args.data) if args.data else generate(float(args.sf))
    qdir = ROOT / "sql" / "tpch"
    if not qdir.exists():
        qdir = ROOT.parent / "shared" / "tpch" / "queries"
    numbers = [int(x) for x in args.queries.split(",") if x] or list(range(1, 23))
    queries = [f"q{n}" for n in numbers]
    engines = args.engines.split(",")
    results: dict = {e: {} for e in engines}
    for q in queries:
        for e in engines:
            r = run_one(e, qdir / f"{q}.sql", data, args.threads, args.memory_limit, args.timeout)
            results[e][q] = r
            shown = (f"{r['seconds']:.3f} s, process {r['process']:.2f} s, peak "
                     f"{_mib(r['peak_kib'])} MiB" if "error" not in r else r["error"])
            print(f"{q} {e}: {shown}", flush=True)
    text = report(results, args, queries, engines)
    print(text)
    if not args.no_write:
        tag = f"sf{args.sf}" + (f"-{args.memory_limit}" if args.memory_limit else "")
        (ROOT / "benchmarks" / f"results-cold-{tag}.json").write_text(
            json.dumps({"args": vars(args), "results": results}, indent=1))
        out = ROOT / "benchmarks" / "COLD.md"
        marker = f"<!-- cold {tag} -->"
        old = out.read_text() if out.exists() else ""
        sections = [s for s in old.split("<!-- cold ") if s and not s.startswith(tag + " -->")]
        body = "".join("<!-- cold " + s for s in sections if s.strip())
        out.write_text(body + marker + "\n" + text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
