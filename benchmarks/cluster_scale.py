"""Scale simulation of pqe's two hash exchanges on a real dask.distributed cluster.

    python -m benchmarks.cluster --scale --sf 1 --partitions 8,32,128,512 --queries 18,13,9

(or `python -m benchmarks.cluster_scale ...`). A `dask scheduler` and N `dask worker`
processes are started on this machine (the scheduler in its own process, so its CPU time is
measured apart from the client's and the workers'); TPC-H data is generated with small row
groups (--row-group-bytes, default 256KB: SF1 lineitem has ~700) so scans really split into
P partitions; for each partition count P, `pqe.Context(scheduler=..., partitions=P)` plans
every query with each exchange kind forced (`Exchange[hash, tasks]`: the P x P getitem grid;
`Exchange[hash, p2p]`: pqe's disk-backed exchange, 2P + 1 tasks) and runs it. Per (P, kind,
query):

- tasks: tasks in the submitted graph (and the hash exchanges' share of them);
- scheduler CPU-s: CPU seconds the scheduler process used during the query (graph
  unpickling, scheduling, transitions: what grows with the task count);
- client s: time to plan and lower the graph on the client;
- wall s: the query, SQL text to Arrow table;
- moved: bytes that moved between workers: Dask's transfers (task results, pieces of the grid)
  plus pqe's exchange fetches; disk: bytes written to exchange files;
- answer checked against DuckDB.

A (P, kind, query) whose grids would exceed --max-grid getitem tasks in all is skipped and
recorded as such (the P x P grid at P=512 is 262,144 tasks per exchange). The results
(JSON) and a Markdown section go next to the other cluster results; the crossover the
planner uses (PlannerConfig.p2p_partitions) is chosen from them (see benchmarks/CLUSTER.md).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from . import report
from .compare import compare, order_key_columns
from .engines import DuckDBEngine, register_tpch
from .tpch import QUERY_DIR, REPO, Caller, _error_text, _queries

DEFAULT_OUT = REPO / "benchmarks"
MARKDOWN = "CLUSTER.md"
DASK = str(Path(sys.executable).with_name("dask"))


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """`dask scheduler` + workers as subprocesses (their own process groups)."""

    def __init__(self, workers: int, threads: int, memory: str, logdir: Path):
        self.logdir = logdir
        logdir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        self.procs: list[subprocess.Popen] = []
        port = _free_port()
        self.address = f"tcp://127.0.0.1:{port}"

        def spawn(name, argv):
            log = open(logdir / f"{name}.log", "w")
            p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                 start_new_session=True)
            self.procs.append(p)
            return p

        self.scheduler = spawn("scheduler", [DASK, "scheduler", "--host", "127.0.0.1", "--port",
                                             str(port), "--no-dashboard"])
        for i in range(workers):
            spawn(f"worker{i}", [DASK, "worker", self.address, "--nthreads", str(threads),
                                 "--memory-limit", memory, "--no-dashboard", "--name", f"w{i}",
                                 "--local-directory", str(logdir / f"w{i}")])

    def scheduler_cpu(self) -> float:
        import psutil

        t = psutil.Process(self.scheduler.pid).cpu_times()
        return t.user + t.system

    def close(self) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def _probe(dask_worker=None):
    from pqe.execution import exchange

    out = exchange.counters()
    out["dask_out"] = int(getattr(dask_worker, "transfer_outgoing_bytes_total", 0))
    return out


def _moved(before: dict, after: dict) -> dict[str, int]:
    tot = {"dask_out": 0, "fetched": 0, "written": 0}
    for addr, a in after.items():
        b = before.get(addr, {})
        for k in tot:
            tot[k] += max(0, a.get(k, 0) - b.get(k, 0))
    return tot


def graph_facts(ctx, sql: str) -> dict[str, Any]:
    """Tasks of the graph this query submits, how many belong to hash exchanges, and the
    client's planning + lowering time."""
    from pqe.execution import ops as O
    from pqe.execution.lower import Lowering
    from pqe.physical.plan import ExchangeExec

    t0 = time.perf_counter()
    phys = ctx.sql(sql).physical_plan()
    low = Lowering(O.CancelToken())
    low.materialize(low.lower_plan(phys), "result")
    client_s = time.perf_counter() - t0
    exchange_tasks = sum(1 for k in low.graph if str(k[0] if isinstance(k, tuple) else k)
                         .startswith(("exchange-", )))
    kinds, stack, seen = [], [phys], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ExchangeExec) and node.mode == "hash":
            kinds.append((node.kind, node.input.n, node.n))
        stack.extend(node.children())
    return {"tasks": len(low.graph), "exchange_tasks": exchange_tasks, "client_s": client_s,
            "exchanges": kinds}


def run(args, log=print) -> dict[str, Any]:
    import pqe
    from data.tpch import generate

    root = Path(args.data) if args.data else generate(args.sf, row_group_bytes=args.row_group_bytes)
    res: dict[str, Any] = {"benchmark": "tpch-cluster-scale", "date": report.now(),
                           "command": args.command, "scale_factor": args.sf, "data": str(root),
                           "workers": args.workers, "threads": args.threads,
                           "memory_limit": args.memory_limit, "partitions": args.partitions,
                           "kinds": args.kinds, "queries": args.queries,
                           "max_grid": args.max_grid, "machine": report.machine(),
                           "versions": report.versions(["pqe"]), "load_start": _load(),
                           "results": []}
    log(f"scale simulation: SF{args.sf:g} ({root}), {args.workers} workers x {args.threads} "
        f"thread(s), partitions {args.partitions}, kinds {args.kinds}; load {res['load_start']}")
    refs: dict[str, Any] = {}
    duck = DuckDBEngine(root, 2)
    caller = Caller(args.timeout)
    for q in args.queries:
        sql = (QUERY_DIR / f"{q}.sql").read_text()
        refs[q] = caller(partial(duck.run, sql), duck.interrupt)[0]
    duck.close()
    cluster = Cluster(args.workers, args.threads, args.memory_limit,
                      Path(args.log_dir or "/tmp/pqe-cluster-scale"))
    try:
        from distributed import Client

        deadline = time.time() + 120
        while True:
            try:
                probe = Client(cluster.address, timeout="5s", set_as_default=False)
                probe.wait_for_workers(args.workers, timeout=60)
                break
            except (OSError, TimeoutError):
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
        for p in args.partitions:
            ctx = pqe.Context(scheduler=cluster.address, partitions=p)
            register_tpch(ctx, root)
            for kind in args.kinds:
                cfg = ctx.session.config
                planner = replace(cfg.planner, exchange=kind)
                if args.shuffle_cost is not None:  # (cheap shuffles: exchanges at small scale)
                    planner = replace(planner, shuffle_cost=args.shuffle_cost)
                ctx.session.config = replace(cfg, planner=planner)
                for q in args.queries:
                    out = one(ctx, cluster, probe, q, refs[q], p, kind, args, log)
                    res["results"].append(out)
            ctx.close()
        probe.close()
    finally:
        cluster.close()
    res["load_end"] = _load()
    return res


def one(ctx, cluster, probe, q, ref, p, kind, args, log) -> dict[str, Any]:
    sql = (QUERY_DIR / f"{q}.sql").read_text()
    facts = graph_facts(ctx, sql)
    out: dict[str, Any] = {"query": q, "partitions": p, "kind": kind, **facts,
                           "load1": _load()[:1]}
    grid = sum(i * o for k, i, o in facts["exchanges"] if k == "tasks")
    if grid > args.max_grid:
        out["status"] = "skipped"
        out["note"] = f"{grid} getitem tasks > --max-grid {args.max_grid}"
        log(f"  P={p:<4} {kind:<5} {q:<4} skipped ({out['note']})")
        return out
    before = probe.run(_probe)
    cpu0 = cluster.scheduler_cpu()
    t0 = time.perf_counter()
    try:
        table = ctx.sql(sql).to_arrow(timeout=args.timeout)
        out["wall_s"] = time.perf_counter() - t0
        out["status"] = "ok"
        diff = compare(table, ref, order_key_columns(sql))
        out["correct"] = diff is None
        if diff is not None:
            out["diff"] = diff
    except Exception as e:  # noqa: BLE001 - recorded
        out["wall_s"] = time.perf_counter() - t0
        out["status"] = "error"
        out["error"] = _error_text(e)
        out["correct"] = False
    out["scheduler_cpu_s"] = cluster.scheduler_cpu() - cpu0
    out.update(_moved(before, probe.run(_probe)))
    log(f"  P={p:<4} {kind:<5} {q:<4} tasks={out['tasks']:<7} "
        f"sched_cpu={out['scheduler_cpu_s']:.2f}s client={out['client_s']:.2f}s "
        f"wall={out['wall_s']:.2f}s moved={(out['dask_out'] + out['fetched']) / 2**20:.0f}MiB "
        f"disk={out['written'] / 2**20:.0f}MiB {out['status']} correct={out.get('correct')} "
        f"load={out['load1']}")
    return out


def markdown(res: dict[str, Any]) -> str:
    lines = [f"## Exchange scale simulation: SF{res['scale_factor']:g}, {res['workers']} workers "
             f"x {res['threads']} thread, partitions {', '.join(map(str, res['partitions']))}",
             "",
             f"`{res['command']}`, {res['date']}. Load average (1, 5, 15 min) before "
             f"{res['load_start']}, after {res['load_end']} (a shared 2-core machine: wall times "
             f"are inflated by other work, the scheduler's CPU seconds much less). Data: "
             f"`{res['data']}` (small row groups, so scans split into P partitions). "
             f"Versions: {', '.join(f'{k} {v}' for k, v in sorted(res['versions'].items()))}.",
             "",
             "`tasks` = tasks in the submitted graph (hash-exchange tasks in parentheses); "
             "`sched CPU-s` = CPU seconds of the `dask scheduler` process during the query; "
             "`client s` = planning + lowering on the client; `moved` = bytes between workers "
             "(Dask transfers + pqe exchange fetches); `disk` = bytes written to exchange files.",
             "",
             "| P | exchange | query | tasks | sched CPU-s | client s | wall s | moved MiB | "
             "disk MiB | correct | load |",
             "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for o in res["results"]:
        if o["status"] == "skipped":
            lines.append(f"| {o['partitions']} | {o['kind']} | {o['query']} | {o['tasks']} "
                         f"({o['exchange_tasks']}) | skipped | {o['client_s']:.2f} | - | - | - "
                         f"| - | {o['load1'][0] if o['load1'] else ''} |")
            continue
        lines.append(
            f"| {o['partitions']} | {o['kind']} | {o['query']} | {o['tasks']} "
            f"({o['exchange_tasks']}) | {o['scheduler_cpu_s']:.2f} | {o['client_s']:.2f} | "
            f"{o['wall_s']:.2f} | {(o['dask_out'] + o['fetched']) / 2**20:.0f} | "
            f"{o['written'] / 2**20:.0f} | {'yes' if o.get('correct') else o['status']} | "
            f"{o['load1'][0] if o['load1'] else ''} |")
    return "\n".join(lines) + "\n"


# ---- bounded memory on threads -----------------------------------------------------------------

_REFERENCE_CODE = """
import sys, pyarrow as pa
from pathlib import Path
sys.path.insert(0, {repo!r})
from benchmarks.engines import DuckDBEngine
duck = DuckDBEngine(Path({root!r}), 2)
for q in {queries!r}:
    t = duck.run((Path({qdir!r}) / f"{{q}}.sql").read_text())
    with pa.OSFile(str(Path({out!r}) / f"{{q}}.arrow"), "wb") as f:
        with pa.ipc.new_file(f, t.schema) as w:
            w.write_table(t)
duck.close()
"""


def _peak_rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def bounded(args, log=print) -> dict[str, Any]:
    """TPC-H on the threaded scheduler of one process with Context(memory_limit=...), planned
    as the session plans such a Context (physical.planner.bound_memory): byte-sized partitions
    and disk-backed exchanges past the limit. Per query: wall time, the process's peak RSS
    (VmHWM, reset before each query), the partitions and exchange kinds planned, and the
    answer against DuckDB's (computed first in a separate process, so DuckDB's memory is not
    this process's)."""
    import tempfile

    import pyarrow as pa

    import pqe
    from data.tpch import default_dir, generate, is_complete
    from pqe.execution.scheduler import Executor
    from pqe.physical.planner import bound_memory

    root = Path(args.data) if args.data else default_dir(args.sf)
    if not is_complete(root):
        root = generate(args.sf)
    refdir = Path(tempfile.mkdtemp(prefix="pqe-bounded-ref-"))
    t0 = time.perf_counter()
    code = _REFERENCE_CODE.format(repo=str(REPO), root=str(root), queries=args.queries,
                                  qdir=str(QUERY_DIR), out=str(refdir))
    subprocess.run([sys.executable, "-c", code], check=True, timeout=args.timeout * 22)
    log(f"DuckDB answers in {time.perf_counter() - t0:.0f} s (separate process)")
    res: dict[str, Any] = {"benchmark": "tpch-threads-bounded", "date": report.now(),
                           "command": args.command, "scale_factor": args.sf, "data": str(root),
                           "memory_limit": args.memory_limit, "machine": report.machine(),
                           "versions": report.versions(["pqe"]), "load_start": _load(),
                           "results": []}
    ctx = pqe.Context(memory_limit=args.memory_limit, memory_guard=False)
    ex: Executor = ctx.session.executor
    cfg = ctx.session.config
    ctx.session.config = replace(cfg, planner=bound_memory(cfg.planner, ex.memory_limit,
                                                           ex.threads))
    res["threads"] = ex.threads
    res["arrow_pool"] = pa.default_memory_pool().backend_name
    if res["arrow_pool"] != "system":
        log(f"warning: Arrow allocates with {res['arrow_pool']}: run with "
            f"ARROW_DEFAULT_MEMORY_POOL=system, or freed memory stays in the process")
    res["max_partition_bytes"] = ctx.session.config.planner.max_partition_bytes
    register_tpch(ctx, root)
    log(f"threads={ex.threads} memory_limit={args.memory_limit} -> partitions of at most "
        f"{res['max_partition_bytes'] / 2**20:.0f} MiB; load {res['load_start']}")
    for q in args.queries:
        sql = (QUERY_DIR / f"{q}.sql").read_text()
        phys = ctx.sql(sql).physical_plan()
        facts = _plan_facts(phys)
        expected = pa.ipc.open_file(str(refdir / f"{q}.arrow")).read_all()
        out: dict[str, Any] = {"query": q, **facts, "load1": _load()[:1]}
        _reset_peak()
        out["rss_start"] = _peak_rss()
        t1 = time.perf_counter()
        try:
            table = ctx.sql(sql).to_arrow(timeout=args.timeout)
            out["wall_s"] = time.perf_counter() - t1
            diff = compare(table, expected, order_key_columns(sql))
            out["status"] = "ok"
            out["correct"] = diff is None
            if diff is not None:
                out["diff"] = diff
        except Exception as e:  # noqa: BLE001 - recorded
            out["wall_s"] = time.perf_counter() - t1
            out["status"] = "error"
            out["error"] = _error_text(e)
            out["correct"] = False
        out["peak_rss"] = _peak_rss()
        res["results"].append(out)
        log(f"  {q:<4} {out['wall_s']:7.2f} s  peak_rss={out['peak_rss'] / 2**20:6.0f} MiB  "
            f"(at start {out['rss_start'] / 2**20:.0f})  est={out['estimate'] / 2**20:.0f} MiB  "
            f"partitions<={out['max_partitions']}  exchanges={out['exchanges']}  "
            f"{out['status']} correct={out['correct']} load={out['load1']}"
            + (f"  {out.get('error', '')}" if out["status"] != "ok" else ""))
    ctx.close()
    res["load_end"] = _load()
    import shutil

    shutil.rmtree(refdir, ignore_errors=True)
    return res


def _plan_facts(phys) -> dict[str, Any]:
    from pqe.physical.plan import ExchangeExec, estimated_memory

    kinds: dict[str, int] = {}
    most, stack, seen = 0, [phys], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        most = max(most, node.n)
        if isinstance(node, ExchangeExec) and node.mode == "hash":
            kinds[node.kind] = kinds.get(node.kind, 0) + 1
        stack.extend(node.children())
    return {"max_partitions": most, "exchanges": kinds, "estimate": estimated_memory(phys)}


def bounded_markdown(res: dict[str, Any]) -> str:
    ok = sum(1 for o in res["results"] if o.get("correct"))
    lines = [f"## Bounded memory on threads: SF{res['scale_factor']:g}, memory_limit "
             f"{res['memory_limit']}, {res['threads']} threads", "",
             f"`{res['command']}`, {res['date']}: {ok}/{len(res['results'])} correct. One "
             f"process, Dask's threaded scheduler, `pqe.Context(memory_limit="
             f"\"{res['memory_limit']}\")` (Arrow pool: {res.get('arrow_pool')}) planned as the "
             f"session plans it "
             f"(`physical.planner.bound_memory`: partitions of at most "
             f"{res['max_partition_bytes'] / 2**20:.0f} MiB, every hash exchange through local "
             f"disk when the plan's estimate exceeds half the limit). Load average before "
             f"{res['load_start']}, after {res['load_end']}. `peak RSS` = the process's VmHWM "
             f"during the query (reset before each; includes the interpreter, pyarrow and the "
             f"catalog, ~250 MiB); `est.` = the planner's estimate of what the plan holds at "
             f"once.", "",
             "| query | s | peak RSS MiB (at start) | est. MiB | max partitions | hash exchanges | "
             "correct | load |", "| --- | ---: | ---: | ---: | ---: | --- | --- | ---: |"]
    for o in res["results"]:
        ex = ", ".join(f"{v} {k}" for k, v in sorted(o["exchanges"].items())) or "-"
        lines.append(f"| {o['query']} | {o['wall_s']:.2f} | {o['peak_rss'] / 2**20:.0f} "
                     f"({o.get('rss_start', 0) / 2**20:.0f}) | "
                     f"{o['estimate'] / 2**20:.0f} | {o['max_partitions']} | {ex} | "
                     f"{'yes' if o.get('correct') else o['status']} | "
                     f"{o['load1'][0] if o['load1'] else ''} |")
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.cluster --scale",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--bounded", action="store_true",
                   help="instead: TPC-H on threads with memory_limit= (bounded memory)")
    p.add_argument("--sf", type=float, default=1.0)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--memory-limit", default="4GiB")
    p.add_argument("--partitions", type=lambda s: [int(x) for x in s.split(",")],
                   default=[8, 32, 128, 512])
    p.add_argument("--kinds", type=lambda s: s.split(","), default=["tasks", "p2p"])
    p.add_argument("--shuffle-cost", type=float, default=None,
                   help="the planner's shuffle cost (default its own; lower: more exchanges)")
    p.add_argument("--queries", type=_queries, default=["q18", "q13", "q9"])
    p.add_argument("--max-grid", type=int, default=600_000,
                   help="skip a task-grid run with more getitem tasks than this")
    p.add_argument("--row-group-bytes", default="256KB")
    p.add_argument("--data", help="TPC-H directory (default: generated with small row groups)")
    p.add_argument("--timeout", type=float, default=1200.0)
    p.add_argument("--log-dir", default=None)
    p.add_argument("--out-dir", default=str(DEFAULT_OUT))
    p.add_argument("--no-write", action="store_true")
    return p.parse_args(argv)


def main(argv=None, log=None) -> int:
    args = parse_args(argv)
    shown = sys.argv[1:] if argv is None else argv
    args.command = " ".join(["python -m benchmarks.cluster", *shown])
    log = log or (lambda s: print(s, flush=True))
    if args.bounded:
        if "--queries" not in shown:
            args.queries = [f"q{i}" for i in range(1, 23)]
        res = bounded(args, log)
        key = f"bounded-threads-sf{args.sf:g}-{args.memory_limit}"
        if not args.no_write:
            from .cluster import update_markdown

            out = Path(args.out_dir)
            (out / f"results-{key}.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
            update_markdown(out / MARKDOWN, key, bounded_markdown(res))
            log(f"wrote {out / MARKDOWN} section {key}")
        return 0 if all(o.get("correct") for o in res["results"]) else 1
    res = run(args, log)
    key = (f"scale-sf{args.sf:g}-w{args.workers}-p{'_'.join(map(str, args.partitions))}-"
           f"q{'_'.join(q[1:] for q in args.queries)}")
    if not args.no_write:
        from .cluster import update_markdown

        out = Path(args.out_dir)
        (out / f"results-cluster-{key}.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
        update_markdown(out / MARKDOWN, key, markdown(res))
        log(f"wrote {out / MARKDOWN} section {key}")
    bad = [o for o in res["results"] if o["status"] == "error" or o.get("correct") is False]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
