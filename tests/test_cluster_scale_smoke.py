"""Smoke test of the exchange scale simulation (benchmarks/cluster_scale.py, run as
`python -m benchmarks.cluster --scale`): SF0.01 test data, 4 and 8 partitions, both exchange
kinds, a dask scheduler and two workers as processes; results go to a temporary directory.
No timing assertions: the counts it reports must be right."""

from __future__ import annotations

import json

from benchmarks import cluster


def test_scale_simulation_smoke(tmp_path, tpch_dir):
    log: list[str] = []
    argv = ["--scale", "--sf", "0.01", "--data", str(tpch_dir), "--partitions", "4,8",
            "--queries", "9", "--shuffle-cost", "0.01", "--workers", "2", "--memory-limit", "1GiB", "--timeout", "120",
            "--out-dir", str(tmp_path), "--log-dir", str(tmp_path / "logs")]
    status = cluster.main(argv, log=log.append)
    text = "\n".join(log)
    assert status == 0, text
    (path,) = tmp_path.glob("results-cluster-scale-*.json")
    data = json.loads(path.read_text())
    runs = {(o["partitions"], o["kind"]): o for o in data["results"]}
    assert set(runs) == {(4, "tasks"), (4, "p2p"), (8, "tasks"), (8, "p2p")}
    for o in runs.values():
        assert o["status"] == "ok" and o["correct"], o
        assert o["scheduler_cpu_s"] > 0
        assert {k for k, _, _ in o["exchanges"]} == {o["kind"]}, o
    # the grid grows with P^2, the disk exchange with P
    grid, disk = runs[(8, "tasks")], runs[(8, "p2p")]
    n = len(disk["exchanges"])  # (per exchange: the grid P x P, the disk one about 3P)
    assert n >= 1 and grid["exchange_tasks"] >= 64 and \
        disk["exchange_tasks"] <= n * (2 * 8 + 1 + 8) < grid["exchange_tasks"]
    assert disk["written"] > 0 and grid["written"] == 0
    md = (tmp_path / cluster.MARKDOWN).read_text()
    assert "Exchange scale simulation" in md and "| 8 | p2p | q9 |" in md
