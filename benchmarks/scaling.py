"""Scaling benchmark: how pqe's TPC-H times grow with the data and with threads.

    python -m benchmarks.scaling                       # SF 0.1, 1, 10; 1 and 2 threads
    python -m benchmarks.scaling --sfs 0.1,1 --threads 1,2 --runs 1

For every scale factor and thread count it runs the TPC-H benchmark (benchmarks.tpch: same
data generation, answer checks against DuckDB, timing) for pqe and DuckDB side by side, then
reports per query and in total:

- growth: time at this scale factor over time at the previous one, beside the data's growth
  (10x between 0.1, 1 and 10): a ratio at or under the data's means time grows no faster
  than the data;
- speed-up: time on 1 thread over time on 2 threads (the target is >= 1.7x on 2 cores).

Writes benchmarks/SCALING.md and benchmarks/results-scaling.json (unless --no-write).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys

import pyarrow as pa

from . import report
from .tpch import ALL_QUERIES, REPO, Results, parse_args, run

ENGINES = ("pqe", "duckdb")


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def task_profiles(root, threads: int, queries: list[str], runs: int) -> dict:
    """{query: benchmarks.profile.task_profile of the median-execute run}, each query once
    first as a warm-up (the caller has limited Arrow's pools to `threads`)."""
    import pqe

    from .engines import register_tpch
    from .profile import task_profile

    out = {}
    ctx = register_tpch(pqe.Context(threads=threads), root)
    try:
        for q in queries:
            sql = (REPO / "sql" / "tpch" / f"{q}.sql").read_text()
            task_profile(ctx, sql)
            got = sorted((task_profile(ctx, sql) for _ in range(max(1, runs))),
                         key=lambda p: p["execute"])
            out[q] = got[len(got) // 2]
    finally:
        ctx.close()
    return out


def pin_cores(n: int | None, cores: set[int] | None = None) -> set[int] | None:
    """Pin every thread of this process (and so the threads they start) to its first `n`
    allowed cores, or to `cores`; returns the cores allowed before (None: not on Linux)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    before = os.sched_getaffinity(0)
    target = cores if cores is not None else set(sorted(before)[:max(1, n or 1)])
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), target)
        except OSError:  # the thread ended meanwhile
            pass
    return before


def measure(sfs: list[float], threads: list[int], runs: int, timeout: float,
            queries: list[str], log=print, profile: bool = False) -> dict:
    """{"runs": [{sf, threads, load, per-engine {query: median seconds or None}}], ...}."""
    out = {"machine": report.machine(), "started": report.now(), "runs": []}
    for sf in sfs:
        for t in threads:
            argv = ["--sf", f"{sf:g}", "--threads", str(t), "--runs", str(runs),
                    "--engines", ",".join(ENGINES), "--timeout", str(timeout), "--no-write",
                    "--queries", ",".join(q[1:] for q in queries)]
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            # "t threads" means t cores: pqe's tasks run in Context(threads=t), and the
            # Arrow kernels and Parquet reads inside them use Arrow's own CPU and I/O pools,
            # which default to every core, so those are limited to t; and even then a 1-thread
            # pqe run overlapped a task's thread with the I/O thread decoding its reads (SF1:
            # 6.71 s on 1 thread unpinned, 7.37 s on one core), so every thread of the process
            # is also pinned to t cores (Linux), for both engines
            cpu, io = pa.cpu_count(), pa.io_thread_count()
            pa.set_cpu_count(t)
            pa.set_io_thread_count(t)
            cores = pin_cores(t)
            prof = None
            try:
                res: Results = run(parse_args(argv), log=log)
                prof = task_profiles(res.data, t, queries, runs) if profile else None
            finally:
                pa.set_cpu_count(cpu)
                pa.set_io_thread_count(io)
                if cores is not None:
                    pin_cores(None, cores)
            entry = {"sf": sf, "threads": t, "load_before": load, "other_cpu": res.other_cpu,
                     "wall": res.wall, "times": {}, "status": {}}
            if prof is not None:
                entry["profile"] = prof
            for engine in ENGINES:
                entry["times"][engine] = {q: res.get(engine, q).median if res.get(engine, q) else None
                                          for q in queries}
                entry["status"][engine] = {q: res.get(engine, q).status if res.get(engine, q) else "missing"
                                           for q in queries}
            out["runs"].append(entry)
            out["versions"] = res.versions
    return out


def _total(times: dict[str, float | None]) -> float | None:
    vals = list(times.values())
    return None if any(v is None for v in vals) else sum(vals)


def _geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def _fmt(x: float | None, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def markdown(data: dict, command: str) -> str:
    runs = data["runs"]
    sfs = sorted({r["sf"] for r in runs})
    threads = sorted({r["threads"] for r in runs})
    by = {(r["sf"], r["threads"]): r for r in runs}
    queries = list(runs[0]["times"]["pqe"]) if runs else []
    m = data["machine"]
    lines = ["# TPC-H scaling: data size and threads", "",
             f"Generated by `{command}` on {data['started']}. Re-run it to refresh this file.", "",
             f"- Machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores, "
             f"{m.get('ram_bytes', 0) / 2**30:.1f} GiB RAM, {m.get('os', '')}",
             "- Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(data.get("versions", {}).items())),
             ("- Each cell is the median of the timed runs after a warm-up, answers checked "
              "against DuckDB (benchmarks.tpch). A configuration of t threads also limits "
              "Arrow's CPU and I/O thread pools to t and pins every thread of the process to "
              "t cores, so 1 thread means one core for both engines. Load average before "
              "each configuration: ") +
             ", ".join(f"SF{r['sf']:g}/{r['threads']}t {r['load_before']:.1f}" for r in runs
                       if r["load_before"] is not None), ""]
    lines += [f"## Totals (sum of the {len(queries)} query medians, seconds)", "",
              "| SF | threads | pqe | DuckDB | pqe / DuckDB | pqe answers correct |",
              "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for sf in sfs:
        for t in threads:
            r = by.get((sf, t))
            if r is None:
                continue
            p, d = _total(r["times"]["pqe"]), _total(r["times"]["duckdb"])
            ok = sum(1 for s in r["status"]["pqe"].values() if s == "ok")
            lines.append(f"| {sf:g} | {t} | {_fmt(p)} | {_fmt(d)} | "
                         f"{_fmt(p / d if p and d else None, 2)} | {ok}/{len(queries)} |")
    lines += ["", "## Growth with the data (pqe)", "",
              ("Time at a scale factor over time at the previous one; the data grows by the "
               "ratio of the scale factors."), "",
              ("| threads | from → to | data × | total time × | geomean of per-query × | "
               "queries growing faster than the data |"),
              "| ---: | --- | ---: | ---: | ---: | --- |"]
    for t in threads:
        for a, b in itertools.pairwise(sfs):
            ra, rb = by.get((a, t)), by.get((b, t))
            if ra is None or rb is None:
                continue
            ta, tb = ra["times"]["pqe"], rb["times"]["pqe"]
            per = {q: tb[q] / ta[q] for q in queries if ta.get(q) and tb.get(q)}
            grow = b / a
            faster = [f"{q} ({x:.1f}×)" for q, x in per.items() if x > grow]
            total = (_total(tb) / _total(ta)) if _total(ta) and _total(tb) else None
            lines.append(f"| {t} | SF{a:g} → SF{b:g} | {grow:g} | {_fmt(total, 2)} | "
                         f"{_fmt(_geomean(list(per.values())), 2)} | {', '.join(faster) or 'none'} |")
    if 1 in threads and len(threads) > 1:
        hi = max(threads)
        lines += ["", f"## Speed-up from 1 to {hi} threads", "",
                  "| SF | pqe total × | pqe geomean × | DuckDB total × |",
                  "| ---: | ---: | ---: | ---: |"]
        for sf in sfs:
            r1, rn = by.get((sf, 1)), by.get((sf, hi))
            if r1 is None or rn is None:
                continue
            p1, pn = r1["times"]["pqe"], rn["times"]["pqe"]
            d1, dn = _total(r1["times"]["duckdb"]), _total(rn["times"]["duckdb"])
            per = [p1[q] / pn[q] for q in queries if p1.get(q) and pn.get(q)]
            tot = _total(p1) / _total(pn) if _total(p1) and _total(pn) else None
            lines.append(f"| {sf:g} | {_fmt(tot, 2)} | {_fmt(_geomean(per), 2)} | "
                         f"{_fmt(d1 / dn if d1 and dn else None, 2)} |")
    lines += _profile_section(by, sfs, threads, queries)
    lines += ["", "## Per query (pqe seconds)", "",
              "| query | " + " | ".join(f"SF{sf:g} {t}t" for sf in sfs for t in threads if (sf, t) in by) + " |",
              "| --- | " + " | ".join("---:" for sf in sfs for t in threads if (sf, t) in by) + " |"]
    for q in queries:
        cells = [_fmt(by[(sf, t)]["times"]["pqe"].get(q)) for sf in sfs for t in threads if (sf, t) in by]
        lines.append(f"| {q} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _profile_section(by: dict, sfs, threads, queries) -> list[str]:
    """Where pqe's time goes on 1 and on the most threads (benchmarks.profile.task_profile)."""
    if 1 not in threads or len(threads) < 2:
        return []
    hi = max(threads)
    lines = ["", f"## Where the time goes: per-task profile, 1 and {hi} threads (pqe)", "",
             ("From separate runs after the timed ones (`--profile`; the median of the runs by "
              "execute time): every task of the graph timed. `plan` = parse to task graph "
              "(serial Python); `task-s` = the tasks' summed durations; `inflation` = task-s on "
              f"{hi} threads over task-s on 1 (the same work taking longer when tasks run side "
              "by side: the GIL, memory bandwidth, Arrow's shared pools); of the execute wall "
              f"time on {hi} threads, the share with {hi}+ tasks running, with one (serial "
              "stages: gathers, final steps, builds every probe waits for) and with none (the "
              "scheduler and Python between tasks, assembling the result).")]
    for sf in sfs:
        r1, rn = by.get((sf, 1)), by.get((sf, hi))
        if r1 is None or rn is None or "profile" not in r1 or "profile" not in rn:
            continue
        p1, pn = r1["profile"], rn["profile"]
        lines += ["", f"### SF{sf:g}", "",
                  (f"| query | plan s | execute s 1t | execute s {hi}t | speed-up | tasks "
                   f"{hi}t | task-s 1t | task-s {hi}t | inflation | {hi}+ running | 1 running | "
                   "none running |"),
                  "| --- | " + " | ".join("---:" for _ in range(11)) + " |"]
        tot = dict.fromkeys(("plan", "e1", "en", "t1", "tn", "par", "ser", "idle"), 0.0)
        for q in queries:
            a, b = p1.get(q), pn.get(q)
            if not a or not b:
                continue
            ex = b["execute"] or 1e-9
            lines.append(
                f"| {q} | {b['plan']:.3f} | {a['execute']:.3f} | {b['execute']:.3f} | "
                f"{a['execute'] / ex:.2f} | {b['tasks']:.0f} | {a['task_seconds']:.3f} | "
                f"{b['task_seconds']:.3f} | {b['task_seconds'] / max(a['task_seconds'], 1e-9):.2f} | "
                f"{b['parallel'] / ex:.0%} | {b['serial'] / ex:.0%} | {b['idle'] / ex:.0%} |")
            for k, v in (("plan", b["plan"]), ("e1", a["execute"]), ("en", b["execute"]),
                         ("t1", a["task_seconds"]), ("tn", b["task_seconds"]),
                         ("par", b["parallel"]), ("ser", b["serial"]), ("idle", b["idle"])):
                tot[k] += v
        if tot["en"]:
            lines.append(
                f"| **all** | {tot['plan']:.3f} | {tot['e1']:.3f} | {tot['en']:.3f} | "
                f"{tot['e1'] / tot['en']:.2f} |  | {tot['t1']:.3f} | {tot['tn']:.3f} | "
                f"{tot['tn'] / max(tot['t1'], 1e-9):.2f} | {tot['par'] / tot['en']:.0%} | "
                f"{tot['ser'] / tot['en']:.0%} | {tot['idle'] / tot['en']:.0%} |")
            # what the speed-up would be without the inflation and without the serial time
            lines += ["", (f"With no inflation the tasks would need {tot['t1']:.2f} task-s "
                           f"instead of {tot['tn']:.2f}; the execute wall time had one task "
                           f"running for {tot['ser']:.2f} s and none for {tot['idle']:.2f} s of "
                           f"{tot['en']:.2f} s; planning adds {tot['plan']:.2f} s of serial "
                           "Python over the queries.")]
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scaling", description=__doc__.split("\n\n")[0])
    p.add_argument("--sfs", type=_floats, default=[0.1, 1.0, 10.0], help="scale factors (default 0.1,1,10)")
    p.add_argument("--threads", type=_ints, default=[1, 2], help="thread counts (default 1,2)")
    p.add_argument("--runs", type=int, default=1, help="timed runs per query (default 1)")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--queries", default=",".join(q[1:] for q in ALL_QUERIES))
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--profile", action="store_true",
                   help="also time every task of each query (benchmarks.profile.task_profile) "
                        "and report where the time goes on 1 and on the most threads")
    args = p.parse_args(argv)
    queries = [f"q{int(x)}" for x in args.queries.split(",")]
    data = measure(args.sfs, args.threads, args.runs, args.timeout, queries,
                   profile=args.profile)
    command = " ".join(["python -m benchmarks.scaling", *(sys.argv[1:] if argv is None else argv)])
    text = markdown(data, command)
    print(text)
    if not args.no_write:
        (REPO / "benchmarks" / "SCALING.md").write_text(text)
        (REPO / "benchmarks" / "results-scaling.json").write_text(json.dumps(data, indent=1, default=str))
        print("wrote benchmarks/SCALING.md and benchmarks/results-scaling.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
