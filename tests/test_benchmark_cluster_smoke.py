"""Smoke test of the distributed benchmark runner (benchmarks/cluster.py) at SF0.01: a
LocalCluster of two worker processes, queries 1 and 3, answers checked against DuckDB, results
written to a temporary directory (never to benchmarks/). No timing assertions."""

from __future__ import annotations

import json

from benchmarks import cluster


def test_cluster_benchmark_smoke(tmp_path):
    published = cluster.DEFAULT_OUT / cluster.MARKDOWN
    before = published.stat().st_mtime_ns if published.exists() else None
    log: list[str] = []
    argv = ["--sf", "0.01", "--workers", "2", "--memory-limit", "1GiB", "--queries", "1,3",
            "--timeout", "60", "--out-dir", str(tmp_path)]
    status = cluster.main(argv, log=log.append)
    text = "\n".join(log)
    print(text)
    assert status == 0, text

    key = "sf0.01-w2-t1-1GiB-q1_3"
    data = json.loads((tmp_path / f"results-cluster-{key}.json").read_text())
    assert data["complete"] and data["workers"] == [2] and data["threads_per_worker"] == 1
    (config,) = data["configs"]
    assert len(config["cluster"]["workers"]) == 2, config["cluster"]
    for q in ("q1", "q3"):
        o = config["results"][q]
        assert o["finished"] and o["correct"] is True and o["status"] == "ok", (q, o)
        assert o["seconds"] > 0 and o["rows"] > 0
        assert o["partitions"]["target"] == 4, o["partitions"]
        assert o["memory"]["restarts"] == 0 and len(o["memory"]["workers"]) == 2

    md = (tmp_path / cluster.MARKDOWN).read_text()
    assert md.count(f"<!-- cluster-section {key} -->") == 1
    assert "| q3 | " in md

    # another configuration adds its own section and keeps this one; re-running replaces it
    cluster.update_markdown(tmp_path / cluster.MARKDOWN, "other", "## other\n")
    cluster.update_markdown(tmp_path / cluster.MARKDOWN, key, "## replaced\n")
    md = (tmp_path / cluster.MARKDOWN).read_text()
    assert "## other" in md and "## replaced" in md and "| q3 | " not in md
    assert md.index("## replaced") < md.index("## other")

    after = published.stat().st_mtime_ns if published.exists() else None
    assert before == after, "the smoke test must not rewrite benchmarks/CLUSTER.md"
