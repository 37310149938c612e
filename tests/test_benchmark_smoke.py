"""Smoke test of the TPC-H benchmark runner (benchmarks/tpch.py) at SF0.01: pqe and DuckDB,
one timed run, every pqe answer checked against DuckDB. No timing assertions: this keeps the
runner (and its pqe profiler, which uses pqe internals) working, not pqe fast."""

from __future__ import annotations

import json

import pytest

from benchmarks import report, tpch


def test_tpch_benchmark_smoke(tmp_path):
    published = tpch.REPO / "benchmarks" / "RESULTS.md"
    before = published.stat().st_mtime_ns if published.exists() else None
    out = tmp_path / "RESULTS.md"
    args = tpch.parse_args(["--sf", "0.01", "--engines", "pqe,duckdb", "--runs", "1",
                            "--timeout", "60", "--profile", "--results", str(out)])
    log: list[str] = []
    results = tpch.run(args, log=log.append)
    written = tpch.write_outputs(args, results)
    text = "\n".join(log)
    print(text)

    pqe = results.outcomes["pqe"]
    assert sorted(pqe, key=lambda q: int(q[1:])) == tpch.ALL_QUERIES, text
    bad = {q: f"{o.status}: {o.error}" for q, o in pqe.items() if o.status != "ok"}
    assert not bad, f"pqe answers not checked or wrong: {bad}\n{text}"
    assert all(o.status == "reference" for o in results.outcomes["duckdb"].values()), text
    assert all(len(o.times) == 1 for o in pqe.values()), text
    for q, o in pqe.items():
        assert o.profile and "error" not in o.profile, f"{q}: profile {o.profile}\n{text}"
        assert "answer_differs" not in o.profile, f"{q}: profiled answer differs\n{text}"

    assert written == [tmp_path / "results-sf0.01.json", out]
    data = json.loads((tmp_path / "results-sf0.01.json").read_text())
    assert data["results"]["pqe"]["q1"]["status"] == "ok"
    assert "| q22 |" in out.read_text()
    after = published.stat().st_mtime_ns if published.exists() else None
    assert before == after, "the smoke test must not rewrite benchmarks/RESULTS.md"
    assert report.totals(results)["pqe"]["answered"] == 22


def test_answer_check_catches_wrong_answers():
    """The check above is only worth something if it can fail."""
    import decimal

    import pyarrow as pa

    from benchmarks.compare import compare, order_key_columns

    d = decimal.Decimal
    want = pa.table({"k": ["a", "b", "c"], "v": [d("1.50"), d("2.00"), d("2.00")]})
    same_ties_swapped = pa.table({"k": ["a", "c", "b"], "v": [1.5, 2.0, 2.0]})
    assert compare(same_ties_swapped, want, [1]) is None
    assert compare(same_ties_swapped, want, [0]) is not None  # ordered by k: wrong order
    assert compare(pa.table({"k": ["a", "b", "c"], "v": [1.5, 2.0, 2.01]}), want, []) is not None
    assert compare(pa.table({"k": ["a", "b"], "v": [1.5, 2.0]}), want, []) is not None
    # a coarser DECIMAL result may differ in its last digit (DataFusion's AVG), no more
    avg = pa.table({"x": [0.05008133906964238]})
    assert compare(pa.table({"x": [d("0.050081")]}), avg, []) is None
    assert compare(pa.table({"x": [d("0.050079")]}), avg, []) is not None
    sql = (tpch.QUERY_DIR / "q3.sql").read_text()
    assert order_key_columns(sql) == [1, 2]  # revenue desc, o_orderdate


def test_task_profile_accounts_for_the_execute_time(tpch_ctx):
    """benchmarks.profile.task_profile: the wall time splits into 2+/1/0 tasks running, the
    tasks' summed time fits in threads x wall, and the answer-producing graph really ran."""
    from benchmarks.profile import task_profile
    from helpers import tpch_query

    for q in ("q1", "q3", "q18"):
        p = task_profile(tpch_ctx, tpch_query(q))
        assert p["tasks"] >= 1 and p["plan"] > 0 and p["execute"] > 0
        parts = p["parallel"] + p["serial"] + p["idle"]
        assert abs(parts - p["execute"]) <= 0.01 * p["execute"] + 1e-3, p
        threads = tpch_ctx.session.executor.threads or 1
        assert 0 < p["task_seconds"] <= threads * p["execute"] + 1e-3, p
        if p["parallel"] == 0:  # never two tasks at once: the tasks ran one after another
            assert p["task_seconds"] <= p["serial"] + 1e-3, p


def test_scaling_pins_every_thread_of_the_process_to_t_cores():
    """benchmarks.scaling's "1 thread" is one core: every thread running, and the threads they
    start, are pinned to it (a thread-1 pqe run otherwise overlapped a task with the I/O
    thread decoding its reads), and the cores allowed before are given back."""
    import os
    import threading

    import pytest

    from benchmarks import scaling

    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("CPU affinity is Linux-only")
    allowed = os.sched_getaffinity(0)
    started, stop = threading.Event(), threading.Event()
    seen = {}

    def worker():
        started.set()
        stop.wait(30)
        seen["late"] = os.sched_getaffinity(0)  # a thread started before the pin

    t = threading.Thread(target=worker)
    t.start()
    started.wait()
    before = scaling.pin_cores(1)
    try:
        assert before == allowed
        assert len(os.sched_getaffinity(0)) == 1
        assert os.sched_getaffinity(t.native_id) == os.sched_getaffinity(0)
        stop.set()
        t.join()
        assert seen["late"] == os.sched_getaffinity(0)
    finally:
        stop.set()
        scaling.pin_cores(None, before)
    assert os.sched_getaffinity(0) == allowed


def test_cliffs_sweep_runs_and_every_answer_matches_duckdb():
    """benchmarks.cliffs at a small size: every shape runs on both engines and pqe's answer
    is DuckDB's (the sweep is how the DOUBLE / wide-integer key and quantile cliffs were
    found; it must stay runnable)."""
    pytest.importorskip("duckdb")
    from benchmarks import cliffs

    results = cliffs.run(rows=20_000, runs=1)
    assert [r["shape"] for r in results] == list(cliffs.SHAPES)
    bad = [(r["shape"], r["mismatch"]) for r in results if r["mismatch"] is not None]
    assert not bad, bad
