"""Rendering benchmark results: console tables, RESULTS.md and the JSON file.

Kept apart from the runner so the numbers can be re-rendered (or the format changed) without
touching how they are measured.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import resource
import statistics
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .engines import ENGINES, pkg_version
from .profile import PHASES

if TYPE_CHECKING:  # pragma: no cover
    from .tpch import Outcome, Results

NAMES = {"pqe": "pqe", "duckdb": "DuckDB", "polars": "Polars (SQL)", "datafusion": "DataFusion"}
MARKS = {"ok": "ok", "reference": "reference", "unchecked": "unchecked", "wrong": "WRONG",
         "error": "ERROR", "timeout": "TIMEOUT"}
GOOD = ("ok", "reference", "unchecked")
LIBRARIES = ("pyarrow", "dask", "sqlglot", "numpy", "tpchgen-cli")
DASK_SQL_NOTE = """\
dask-sql is not compared. `pip install dask-sql` (2024.5.0, its latest release) succeeds in a
separate virtualenv, but with the current dask, pandas and pyarrow every query tried fails ("The
python type str is not implemented (yet)"). Pinned to dask 2024.5.1, pandas 2.2.2 and pyarrow
16.1 it runs, but reads the TPC-H DECIMAL columns as text: at SF0.01, 16 of the 22 queries
fail to plan ("Cannot coerce arithmetic expression Int64 - Utf8") and q21 returns no rows.
With the data converted to float64 in pandas first (which no other engine needs), q7-q9 still
fail (dates) and q17, q20 and q21 return no rows (wrong answers). Checked on this machine."""

# what each engine keeps between runs (RESULTS.md states it beside the warm medians)
CACHING = (
    "- Caching: what a warm run skips and a cold one pays. pqe keeps each registered Parquet "
    "table's file list, footers, row-group statistics and schema in its catalog (checked "
    "against size and mtime, or the object store's etag, before each query; a changed file is "
    "re-read; with them, per file version, the row groups each filter's statistics leave "
    "and the share of a text column's sample a LIKE pattern keeps) and its compiled kernels, "
    "and per process each file's parsed footer for "
    "reading its row groups (per file version); DuckDB, with views over `read_parquet` as here, "
    "re-reads the footers on every query (its object cache is off by default); Polars' "
    "`scan_parquet` frames re-read the metadata on each collect; DataFusion's listing tables "
    "keep the file listing and, with statistics collection on, the files' statistics. None "
    "caches results. One cold run per query and engine, each in a fresh process, is in "
    "COLD.md (`python -m benchmarks.cold`).")


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def max_rss() -> int:
    """Peak resident set size of this process so far, in bytes (Linux reports KiB)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def cpu_snapshot() -> tuple[float, float] | None:
    """(busy CPU-seconds of the whole machine, CPU-seconds of this process), from /proc."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)  # minus idle, iowait
    own = os.times()
    return busy / os.sysconf("SC_CLK_TCK"), own.user + own.system


def other_cpu(before: tuple[float, float] | None,
              after: tuple[float, float] | None) -> float | None:
    """CPU-seconds that other processes used between two snapshots: a benchmark on a busy
    machine measures the machine, and the report should say so."""
    if before is None or after is None:
        return None
    return max(0.0, (after[0] - before[0]) - (after[1] - before[1]))


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    ram = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    ram = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count()
    return {"cpu": cpu, "cores": os.cpu_count(), "usable_cores": usable, "ram_bytes": ram,
            "os": f"{platform.system()} {platform.release()}", "arch": platform.machine(),
            "nice": os.nice(0) if hasattr(os, "nice") else None}


def versions(engines: list[str]) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in [*(ENGINES[e].dist for e in engines), "duckdb", *LIBRARIES]:
        out.setdefault(dist, pkg_version(dist))
    return out


def _gib(n: int | None) -> str:
    return "?" if not n else f"{n / 2**30:.1f} GiB"


def _mib(n: int | None) -> str:
    return "" if n is None else f"{n / 2**20:,.0f} MiB"


def _secs(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def ratio(results: Results, engine: str, query: str, best: bool = False) -> float | None:
    a, b = results.get(engine, query), results.get("duckdb", query)
    if a is None or b is None or not a.times or not b.times:
        return None
    num, den = (a.best, b.best) if best else (a.median, b.median)
    return num / den if num and den else None


# ---- console ---------------------------------------------------------------------------------


def query_table(results: Results, query: str) -> str:
    lines = [f"{query:<4} {'engine':<14}{'median s':>10}{'best s':>10}{'vs DuckDB':>11}"
             f"{'rows':>7}  answer"]
    for name in results.engines:
        o = results.get(name, query)
        if o is None:
            continue
        r = ratio(results, name, query)
        lines.append(f"     {NAMES.get(name, name):<14}{_secs(o.median):>10}{_secs(o.best):>10}"
                     f"{'' if r is None else f'{r:.2f}x':>11}{'' if o.rows is None else o.rows:>7}"
                     f"  {MARKS[o.status]}{': ' + o.error if o.error else ''}")
        if o.scan_floor:
            lines.append(f"     {'':<14}scan floor (pyarrow alone): {o.scan_floor:.3f} s; "
                         f"pqe / floor {o.median / o.scan_floor:.2f}x" if o.median else "")
        if o.profile and "error" not in o.profile:
            phases = "  ".join(f"{p} {o.profile.get(p, 0.0):.3f}" for p in PHASES)
            lines.append(f"     {'':<14}profile: {phases}")
    return "\n".join(lines)


def totals(results: Results) -> dict[str, Any]:
    """Sums of per-query medians (and bests): over what each engine answered, and over the
    queries every engine answered, which is the fair comparison; plus answer counts."""
    common = [q for q in results.queries
              if all((o := results.get(e, q)) is not None and o.status in GOOD and o.times
                     for e in results.engines)]
    out: dict[str, Any] = {"common_queries": common}
    for e in results.engines:
        outs = [results.get(e, q) for q in results.queries]
        done = [o for o in outs if o is not None and o.status in GOOD and o.times]
        counts = {s: sum(1 for o in outs if o is not None and o.status == s) for s in MARKS}
        ratios = [r for q in common if (r := ratio(results, e, q)) is not None]
        out[e] = {
            "answered": len(done),
            "sum_median": sum(o.median for o in done),  # type: ignore[misc]
            "sum_best": sum(o.best for o in done),  # type: ignore[misc]
            "common_sum_median": sum(results.get(e, q).median for q in common),  # type: ignore
            "geomean_vs_duckdb": (math.exp(statistics.fmean(math.log(r) for r in ratios))
                                  if ratios and "duckdb" in results.engines else None),
            "counts": {k: v for k, v in counts.items() if v},
            "max_rss_growth_bytes": max((o.rss_growth or 0 for o in outs if o), default=0),
        }
    return out


def profile_totals(results: Results) -> dict[str, float]:
    sums = dict.fromkeys(PHASES, 0.0)
    for o in results.outcomes.get("pqe", {}).values():
        if o.profile and "error" not in o.profile:
            for p in PHASES:
                sums[p] += o.profile.get(p, 0.0)
    return sums


def summary(results: Results) -> str:
    t = totals(results)
    lines = ["", f"Totals over {len(results.queries)} queries (sums of medians, seconds); "
                 f"'common' = the {len(t['common_queries'])} queries every engine answered:"]
    for e in results.engines:
        s = t[e]
        geo = s["geomean_vs_duckdb"]
        lines.append(f"  {NAMES.get(e, e):<14} answered {s['answered']:>2}  "
                     f"sum {s['sum_median']:8.3f}  common {s['common_sum_median']:8.3f}  "
                     f"{'' if geo is None else f'geomean vs DuckDB {geo:.2f}x  '}"
                     f"{', '.join(f'{k} {v}' for k, v in s['counts'].items())}")
    prof = profile_totals(results)
    if any(prof.values()):
        total = sum(prof.values())
        lines.append("  pqe profile (sum over queries): " + "  ".join(
            f"{p} {v:.3f}s ({100 * v / total:.0f}%)" for p, v in prof.items()))
    lines.append(f"Peak RSS of the process: {_mib(results.peak_rss)}; "
                 f"wall time {results.wall:.0f} s; {_busy(results)}")
    return "\n".join(lines)


# ---- files -----------------------------------------------------------------------------------


def to_json(results: Results) -> dict[str, Any]:
    return {
        "benchmark": "tpch", "date": results.started, "command": results.command,
        "scale_factor": results.sf, "threads": results.threads, "runs": results.runs,
        "timeout_s": results.timeout, "data": str(results.data), "checked": results.checked,
        "machine": results.machine or machine(), "versions": results.versions,
        "engine_settings": results.notes,
        "queries": results.queries, "engines": results.engines,
        "results": {e: {q: o.to_json() for q, o in qs.items()}
                    for e, qs in results.outcomes.items()},
        "totals": totals(results), "pqe_profile_totals": profile_totals(results),
        "peak_rss_bytes": results.peak_rss, "wall_s": results.wall,
        "other_processes_cpu_s": results.other_cpu,
    }


def write_json(results: Results, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_json(results), indent=1) + "\n")


def _busy(results: Results) -> str:
    if results.other_cpu is None:
        return "CPU use of other processes unknown"
    share = results.other_cpu / max(1e-9, results.wall * (os.cpu_count() or 1))
    return (f"other processes used {results.other_cpu:.0f} CPU-seconds during the run "
            f"({100 * share:.1f}% of the machine)")


def _busy_warning(results: Results) -> list[str]:
    if results.other_cpu is None:
        return []
    share = results.other_cpu / max(1e-9, results.wall * (results.machine.get("cores") or 1))
    if share < 0.1:
        return []
    return [f"> **Caution:** other processes used {100 * share:.0f}% of the machine's CPU "
            "during this run, so the times are slower and noisier than on an idle machine, "
            "not necessarily by the same factor for every engine. Re-run on an idle machine "
            "for publishable numbers.", ""]


def _cell(o: Outcome | None) -> str:
    if o is None:
        return ""
    if o.status in GOOD and o.times:
        return _secs(o.median) + ("" if o.status != "unchecked" else " ?")
    if o.status == "wrong":
        return f"{_secs(o.median)} ✗"
    return o.status


def markdown(results: Results) -> str:
    m, t = results.machine or machine(), totals(results)
    others = [e for e in results.engines if e != "duckdb"] if "duckdb" in results.engines else []
    floors = _floors(results)
    head = ["Query", *(f"{NAMES.get(e, e)} (s)" for e in results.engines),
            *(f"{NAMES.get(e, e)} / DuckDB" for e in others),
            *(["pqe scan floor (s)", "pqe / floor"] if floors else [])]
    rows = [head, ["---"] + ["---:"] * (len(head) - 1)]
    for q in results.queries:
        rats = [ratio(results, e, q) for e in others]
        rows.append([q, *(_cell(results.get(e, q)) for e in results.engines),
                     *("" if r is None else f"{r:.2f}" for r in rats),
                     *(_floor_cells(results.get("pqe", q)) if floors else [])])
    common = t["common_queries"]
    floor_sum = sum(floors.get(q, 0.0) for q in common)
    pqe_sum = t["pqe"]["common_sum_median"] if "pqe" in t else 0.0
    rows.append([f"**sum ({len(common)} common)**",
                 *(f"**{t[e]['common_sum_median']:.3f}**" for e in results.engines),
                 *(f"**{t[e]['common_sum_median'] / t['duckdb']['common_sum_median']:.2f}**"
                   if t["duckdb"]["common_sum_median"] else "" for e in others),
                 *([f"**{floor_sum:.3f}**", f"**{pqe_sum / floor_sum:.2f}**"
                    if floor_sum and all(q in floors for q in common) else ""]
                   if floors else [])])
    if others:
        rows.append(["geomean of ratios", *([""] * len(results.engines)),
                     *("" if (g := t[e]["geomean_vs_duckdb"]) is None else f"{g:.2f}"
                       for e in others), *(["", ""] if floors else [])])
    table = "\n".join("| " + " | ".join(r) + " |" for r in rows)
    v = results.versions
    out = [
        f"# TPC-H benchmark: SF{results.sf:g}", "",
        f"Generated by `{results.command}` on {results.started}. "
        "Re-run it to refresh this file.", "", *_busy_warning(results),
        "## Setup", "",
        f"- Machine: {m['cpu']}, {m['cores']} cores ({m['usable_cores']} usable), "
        f"{_gib(m['ram_bytes'])} RAM, {m['os']} ({m['arch']})",
        f"- Python {v['python']}; " + ", ".join(f"{k} {x}" for k, x in v.items() if k != "python"),
        f"- Data: TPC-H SF{results.sf:g} generated by tpchgen-cli as Parquet "
        f"(`{_rel(results.data)}`), read from the files on every run by every engine",
        f"- Threads: {results.threads} per engine: " + "; ".join(
            f"{NAMES.get(e, e)}: {n}" for e, n in results.notes.items()),
        f"- Runs: one warm-up then {results.runs} timed run(s) per query and engine; the "
        "table shows the median. A run is timed from SQL text to a complete Arrow table in "
        f"memory. Timeout {results.timeout:g} s per run.",
        f"- Other work on the machine: {_busy(results)}"
        + (f"; the benchmark ran at nice {m['nice']}." if m.get("nice") else "."),
        "- Queries: `sql/tpch/q1.sql` .. `q22.sql`, unchanged for every engine (q15 is one "
        "statement with a CTE instead of a view).",
        CACHING,
        "- Answers: each engine's warm-up answer is compared with DuckDB's (DuckDB set to "
        "truncating integer division and PostgreSQL NULL ordering, like pqe): same rows as a "
        "multiset, numbers to 1e-6 relative (integers exactly; a result DECIMAL coarser than "
        "DuckDB's value may differ in its last digit), and the same sequence of ORDER BY keys "
        "when the query ends in ORDER BY." if results.checked
        else "- Answers were not checked (`--no-check`).",
        "", "## Results (median seconds per query)", "",
        "`✗` = wrong answer (time still shown), `error` = the engine raised, `timeout` = no "
        "answer within the timeout, `?` = not checked."
        + (" `pqe scan floor` = the median time pyarrow alone takes to read what pqe's plan "
           "for the query reads (the same columns of the same row groups, those left after "
           "pruning by the pushed filters' statistics; each of pqe's scan partitions one job, "
           f"{results.threads} at a time, read through pyarrow.dataset fragments as pqe "
           "reads, decoded to Arrow's default types, no filter evaluated); `pqe / floor` = pqe's time over it, how far pqe is from only reading "
           "its data." if floors else ""), "", table, "",
        "## Answers and memory", "",
        "| Engine | answered | correct | wrong | errors | timeouts | sum of medians (s) | "
        "sum of bests (s) | largest RSS growth during a query |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for e in results.engines:
        s, c = t[e], t[e]["counts"]
        correct = c.get("ok", 0) + c.get("reference", 0)
        out.append(f"| {NAMES.get(e, e)} | {s['answered']} | {correct} | {c.get('wrong', 0)} | "
                   f"{c.get('error', 0)} | {c.get('timeout', 0)} | {s['sum_median']:.3f} | "
                   f"{s['sum_best']:.3f} | {_mib(s['max_rss_growth_bytes'])} |")
    out += ["", f"Peak RSS of the whole benchmark process (all engines, `getrusage`): "
                f"{_mib(results.peak_rss)}. The per-engine column is the largest rise of the "
                "process RSS over its value before a query's warm-up run, sampled every 20 ms "
                "(only then: sampling slows the timed runs), so memory that an earlier "
                "engine's allocator kept is not counted again.", ""]
    failures = [(e, q, o) for e, qs in results.outcomes.items() for q, o in qs.items()
                if o.status not in GOOD]
    if failures:
        out += ["## Failures", ""]
        out += [f"- {NAMES.get(e, e)} {q}: {o.status}: {o.error}" for e, q, o in failures]
        out.append("")
    out += _profile_md(results)
    out += ["## Not compared", "", DASK_SQL_NOTE, ""]
    return "\n".join(out)


def _floors(results: Results) -> dict[str, float]:
    return {q: o.scan_floor for q, o in results.outcomes.get("pqe", {}).items()
            if o.scan_floor}


def _floor_cells(o: Outcome | None) -> list[str]:
    if o is None or not o.scan_floor:
        return ["", ""]
    return [_secs(o.scan_floor), f"{o.median / o.scan_floor:.2f}" if o.median else ""]


def _profile_md(results: Results) -> list[str]:
    profs = {q: o.profile for q, o in results.outcomes.get("pqe", {}).items()
             if o.profile and "error" not in o.profile}
    if not profs:
        return []
    out = ["## pqe profile (median seconds per phase)", "",
           "From separate runs after the timed ones, so profiling does not touch the times "
           "above: `parse` = sqlglot, `bind` = names and types to a logical plan, `optimize` = "
           "logical rewrites, `physical` = partitioning and join/aggregate strategy (reads "
           "Parquet metadata), `lower` = Dask graph construction, `execute` = running the "
           "graph and assembling the result.", "",
           "| Query | " + " | ".join(PHASES) + " | total | planning share |",
           "| --- |" + " ---: |" * (len(PHASES) + 2)]
    sums = dict.fromkeys(PHASES, 0.0)
    for q, p in profs.items():
        total = sum(p.get(ph, 0.0) for ph in PHASES)
        for ph in PHASES:
            sums[ph] += p.get(ph, 0.0)
        plan = total - p.get("execute", 0.0)
        out.append(f"| {q} | " + " | ".join(f"{p.get(ph, 0.0):.4f}" for ph in PHASES) +
                   f" | {total:.3f} | {100 * plan / total if total else 0:.1f}% |")
    total = sum(sums.values())
    out.append("| **sum** | " + " | ".join(f"**{v:.3f}**" for v in sums.values()) +
               f" | **{total:.3f}** | **{100 * (total - sums['execute']) / total:.1f}%** |")
    return out + [""] + _operators_md(profs)


def _operators_md(profs: dict[str, dict[str, float]]) -> list[str]:
    """Seconds per operator kind (EXPLAIN ANALYZE, summed over partitions) over all queries,
    and each query's costliest operator."""
    prefix = "op:"
    per_query = {q: {k[len(prefix):]: v for k, v in p.items() if k.startswith(prefix)}
                 for q, p in profs.items()}
    per_query = {q: ops for q, ops in per_query.items() if ops}
    if not per_query:
        return []
    totals: dict[str, float] = {}
    for ops in per_query.values():
        for k, v in ops.items():
            totals[k] = totals.get(k, 0.0) + v
    grand = sum(totals.values()) or 1.0
    out = ["## pqe time per operator", "",
           "From one EXPLAIN ANALYZE run of each query after the profiled ones: seconds inside "
           "each kind of operator, summed over its partitions (on 2 threads two partitions run "
           f"at once, so these sums exceed the wall time) and over the {len(per_query)} queries.", "",
           "| Operator | seconds | share |", "| --- | ---: | ---: |"]
    for k, v in sorted(totals.items(), key=lambda kv: -kv[1]):
        out.append(f"| {k} | {v:.3f} | {100 * v / grand:.1f}% |")
    out += ["", "Costliest operator of each query:", "",
            "| Query | operator | seconds | share of the query's operator time |",
            "| --- | --- | ---: | ---: |"]
    for q, ops in per_query.items():
        k, v = max(ops.items(), key=lambda kv: kv[1])
        out.append(f"| {q} | {k} | {v:.3f} | {100 * v / (sum(ops.values()) or 1.0):.0f}% |")
    return out + [""]


def _rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path(__file__).resolve().parents[1]))
    except ValueError:
        return str(path)


def write_markdown(results: Results, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(results))


def from_json(data: dict[str, Any]) -> Results:
    """The Results a JSON file was written from, to render it again (`python -m
    benchmarks.report results-sf1.json RESULTS.md`) after the report format changes."""
    from .tpch import Outcome, Results

    res = Results(sf=data["scale_factor"], threads=data["threads"], runs=data["runs"],
                  timeout=data["timeout_s"], data=Path(data["data"]), engines=data["engines"],
                  queries=data["queries"], checked=data["checked"], notes=data["engine_settings"],
                  versions=data["versions"], started=data["date"], command=data["command"],
                  wall=data["wall_s"], peak_rss=data["peak_rss_bytes"],
                  other_cpu=data.get("other_processes_cpu_s"), machine=data["machine"])
    for engine, queries in data["results"].items():
        for query, o in queries.items():
            res.outcomes.setdefault(engine, {})[query] = Outcome(
                engine, query, status=o["status"], times=o["times"], warmup=o["warmup"],
                rows=o["rows"], error=o["error"] or "", rss_growth=o["rss_growth_bytes"],
                profile=o["profile"], scan_floor=o.get("scan_floor"))
    return res


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (1, 2):
        raise SystemExit("usage: python -m benchmarks.report RESULTS.json [RESULTS.md]")
    results = from_json(json.loads(Path(args[0]).read_text()))
    if len(args) == 2:
        write_markdown(results, Path(args[1]))
    else:
        print(markdown(results))


if __name__ == "__main__":
    main()
