"""Long differential fuzzing run of pqe against DuckDB (all generators by default).

    python -m benchmarks.fuzz --queries 10000 --seed 1
    python -m benchmarks.fuzz --queries 10000 --seed 1 --log fuzz.jsonl --report fuzz.md
    python -m benchmarks.fuzz --seed 1 --case 1234          # replay (and shrink) one case
    python -m benchmarks.fuzz --generators dml,params --queries 2000
    python -m benchmarks.fuzz --queries 5000 --disable cast_double_int,full_join
    python -m benchmarks.fuzz --known tests/fuzz_known_findings.json   # mark known findings
    python -m benchmarks.fuzz --merge shard*.jsonl --known tests/fuzz_known_findings.json

A long run can go in shards (`--start`, `--queries`): case i of a seed is the same whichever
shard runs it, so shards 0-4999, 5000-9999, ... of one seed are one run. `--merge` adds up
their logs' summaries and re-checks every finding against the known-findings file as it is
now (a finding explained later counts as explained), printing one line per seed.

Generators (`pqe.testing.fuzz.GENERATORS`): select (random queries; diff, type, partition,
TLP, NoREC oracles), values (the same over edge values: multi-byte text, int64 limits,
DECIMAL(38,10), NaN/inf/-0.0, TIMESTAMP(TZ), NULL-heavy columns), dml (CREATE/INSERT/UPDATE/
DELETE scripts checked after every statement), params (DB-API `?` parameters in nested
positions against DuckDB's own binding). A replay needs the same --generators and
--queries-per-db as the run.

Prints queries tried, refusals (UnsupportedError) per generator, checks and mismatches per
oracle, pqe errors by class, the distinct findings (each shrunk to a minimal reproduction) and
the top unsupported constructs, then one summary log line. The log (JSON lines) holds every
failing case, every finding with its reproduction, and the summary; the report (Markdown)
holds the summary and the reproductions. `--disable` takes generator feature names (see
`pqe.testing.fuzz_gen`, `fuzz_dml`, `fuzz_params`) to steer around a known bug.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from pqe.testing.fuzz import GENERATORS, Fuzzer
from pqe.testing.fuzz_known import load_known


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.fuzz", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=1000, help="test cases to generate")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="index of the first case")
    ap.add_argument("--log", default=None,
                    help="JSON-lines log (default: <tmpdir>/pqe-fuzz-seed<S>.jsonl; '' for none)")
    ap.add_argument("--report", default=None,
                    help="Markdown report of the findings (default: <log>.md)")
    ap.add_argument("--partitions", default="1,3", help="pqe partition counts to compare")
    ap.add_argument("--disable", default="", help="comma-separated generator features to skip")
    ap.add_argument("--no-reduce", action="store_true", help="do not shrink failures")
    ap.add_argument("--reduce-budget", type=float, default=45.0, help="seconds per reduction")
    ap.add_argument("--max-reductions", type=int, default=150)
    ap.add_argument("--queries-per-db", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per pqe query")
    ap.add_argument("--threads", type=int, default=2, help="pqe scheduler threads")
    ap.add_argument("--progress", type=int, default=500, help="status line every N queries")
    ap.add_argument("--case", type=int, default=None, help="replay one case, shrink, print")
    ap.add_argument("--generators", default=",".join(GENERATORS),
                    help=f"comma-separated generators (default: all of {','.join(GENERATORS)})")
    ap.add_argument("--known", default=None, help="known-findings JSON (tests/fuzz_known_findings"
                    ".json): findings it explains are marked known")
    ap.add_argument("--merge", nargs="+", default=None, metavar="LOG",
                    help="add up the JSON-lines logs of shards instead of running")
    args = ap.parse_args(argv)
    if args.merge:
        return merge(args.merge, load_known(args.known) if args.known else [])

    if args.log is None:
        args.log = os.path.join(tempfile.gettempdir(), f"pqe-fuzz-seed{args.seed}.jsonl")
    partitions = tuple(int(p) for p in args.partitions.split(",") if p)
    disabled = tuple(f for f in args.disable.split(",") if f)
    fz = Fuzzer(seed=args.seed, partitions=partitions, disabled=disabled,
                queries_per_db=args.queries_per_db, reduce=not args.no_reduce,
                reduce_budget_s=args.reduce_budget, max_reductions=args.max_reductions,
                timeout=args.timeout, threads=args.threads, log=args.log or None,
                progress=args.progress,
                generators=[g for g in args.generators.split(",") if g],
                known=load_known(args.known) if args.known else None)
    if args.case is not None:
        return replay(fz, args.case)

    t0 = time.monotonic()
    rep = fz.run(args.queries, start=args.start)
    print(rep.summary(top=20))
    report = args.report or (f"{args.log}.md" if args.log else None)
    if report:
        with open(report, "w") as f:
            f.write(rep.findings_markdown())
        print(f"findings: {report}" + (f"; log: {args.log}" if args.log else ""))
    print(f"total time {time.monotonic() - t0:.0f} s")
    print(rep.log_line())
    return 1 if any(not f.known for f in rep.findings) else 0


def merge(paths: list[str], known) -> int:
    """One summary per seed over shard logs (plain or .gz); findings re-checked against
    `known`."""
    import gzip
    import json
    from collections import Counter, defaultdict

    from pqe.testing.fuzz_oracles import Failure

    seeds: dict = defaultdict(lambda: {"cases": 0, "checks": Counter(), "mismatches": Counter(),
                                       "failing": Counter(), "findings": [], "ranges": [],
                                       "refused": Counter(), "tested": Counter()})
    for path in paths:
        failures, summary, findings = {}, None, []
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
            for line in f:
                rec = json.loads(line)
                if rec["type"] == "failure":
                    failures[rec["case"]["index"]] = rec
                elif rec["type"] == "finding":
                    findings.append(rec)
                elif rec["type"] == "summary":
                    summary = rec
        if summary is None:
            print(f"{path}: no summary (the shard did not finish); left out")
            continue
        s = seeds[summary["seed"]]
        s["cases"] += summary["cases"]
        s["checks"].update(summary["checks"])
        s["mismatches"].update(summary["mismatches"])
        s["failing"].update(summary["failing_cases"])
        for g, st in summary["generators"].items():
            s["refused"][g] += st["refused"]
            s["tested"][g] += st["tested"]
        s["ranges"].append(path)
        for fd in findings:
            first = fd["occurrences"][0]
            rec = failures.get(first)
            kid = None
            if rec is not None:
                gen = rec["case"]["generator"]
                for fl in rec["failures"]:
                    fail = Failure(fl["oracle"], tuple(fl["partitions"]), fl["role"], fl["detail"],
                                   fl.get("error_class", ""))
                    kid = next((k.id for k in known
                                if k.matches(gen, summary["seed"], first, fail)), None)
                    if kid:
                        break
            s["findings"].append((fd["generator"], fd["oracle"], fd["occurrences"], kid,
                                  fd.get("known")))
    bad = 0
    for seed, s in sorted(seeds.items()):
        unexplained = [f for f in s["findings"] if not f[3]]
        bad += len(unexplained)
        refusals = ", ".join(f"{g} {s['refused'][g]}/{s['tested'][g]}" for g in sorted(s["tested"]))
        print(f"[fuzz merge] seed {seed}: {s['cases']} cases in {len(s['ranges'])} shard(s), "
              f"{sum(s['checks'].values())} checks, {sum(s['mismatches'].values())} mismatches, "
              f"{len(s['findings'])} distinct findings, {len(unexplained)} unexplained | "
              f"refused: {refusals}")
        for gen, oracle, occ, kid, was in unexplained:
            print(f"    unexplained: {gen} {oracle} cases {occ[:8]}")
    return 1 if bad else 0


def replay(fz: Fuzzer, i: int) -> int:
    fz._load(i)
    case = fz.case(i, fz.db)
    res = fz.run_one(case, fz.db)
    print(f"case {i} ({case.generator}: {case.oracle}{' ' + case.variant if case.variant else ''}"
          f"), features: {', '.join(case.features)}")
    for role, sql in res.queries:
        print(f"-- {role}\n{sql}")
    if res.discarded:
        print(f"discarded: {res.discarded}")
        return 0
    if not res.failures:
        print("no failure")
        return 0
    from pqe.testing.fuzz import FuzzReport

    rep = FuzzReport(fz.seed)
    rep.failures.append((i, res))
    fz._triage(rep, i, case, res)
    for f in rep.findings:
        print(f.repro)
    fz.eng.close()
    return 1


if __name__ == "__main__":
    sys.exit(main())
