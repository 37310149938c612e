"""The scheduler never touches data, on a multi-host layout: `dask scheduler` runs in its own
mount namespace where the data directory is an empty tmpfs (`unshare -m` + `mount -t tmpfs`
over it, as root), the workers see the data, and TPC-H 22/22 runs through it and matches
DuckDB. Then the same with tables registered by relative paths from another working directory
(the scheduler and the workers run in `/`). Skipped where mount namespaces are not available
(not root, no unshare)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from cluster_procs import DASK, Procs
from helpers import (TPCH_QUERIES, assert_same, duck_arrow, has_top_level_order, tpch_query)

import pqe
from data.tpch import TABLES, table_path

UNSHARE = shutil.which("unshare")


def _namespaces_work() -> bool:
    if UNSHARE is None or os.geteuid() != 0:
        return False
    probe = subprocess.run([UNSHARE, "-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt && umount /mnt"],
                           capture_output=True, timeout=30, check=False)
    return probe.returncode == 0


pytestmark = [
    pytest.mark.skipif(not os.path.exists(DASK), reason="dask command-line tools not installed"),
    pytest.mark.skipif(not _namespaces_work(), reason="needs root and mount namespaces (unshare -m)"),
]


@pytest.fixture(scope="module")
def layout(tmp_path_factory, tpch_dir):
    """A private copy of the test data in <tmp>/data, a scheduler that sees <tmp>/data as an
    empty tmpfs, and two workers that see the files."""
    base = tmp_path_factory.mktemp("multihost")
    data = base / "data"
    shutil.copytree(tpch_dir, data, symlinks=False)
    procs = Procs(base / "logs")
    hide = f"mount -t tmpfs -o size=1m pqe-hidden {data} && exec \"$@\""
    procs.start_scheduler(prefix=(UNSHARE, "-m", "--propagation", "private", "sh", "-c", hide,
                                  "hide"), cwd="/")
    procs.start_worker("w0", cwd="/")
    procs.start_worker("w1", cwd="/")
    client = procs.client(2)
    yield procs, client, data
    client.close()
    procs.stop()


def _scheduler_view(path, dask_scheduler=None):
    return sorted(os.listdir(path)) if os.path.isdir(path) else None


def _worker_view(path):
    return sorted(os.listdir(path))


def test_scheduler_cannot_see_the_data_but_workers_can(layout):
    procs, client, data = layout
    assert client.run_on_scheduler(_scheduler_view, str(data)) == []
    for listing in client.run(_worker_view, str(data)).values():
        assert "lineitem" in " ".join(listing)


@pytest.fixture(scope="module")
def absolute_ctx(layout):
    procs, _, data = layout
    ctx = pqe.Context(scheduler=procs.address)
    for t in TABLES:
        ctx.register_parquet(t, str(table_path(data, t)))
    yield ctx
    ctx.close()


@pytest.mark.parametrize("query", TPCH_QUERIES)
def test_tpch_with_the_data_hidden_from_the_scheduler(absolute_ctx, duck, query):
    sql = tpch_query(query)
    assert_same(absolute_ctx.sql(sql).to_arrow(), duck_arrow(duck, sql),
                ordered=has_top_level_order(sql))


def test_tpch_from_relative_paths_registered_elsewhere(layout, duck, monkeypatch):
    """Paths relative to the client's working directory at registration; the client then moves
    to `/`, where they mean nothing, like the scheduler's and the workers' `/`."""
    procs, _, data = layout
    ctx = pqe.Context(scheduler=procs.address)
    monkeypatch.chdir(data.parent)
    for t in TABLES:
        rel = os.path.relpath(table_path(data, t), data.parent)
        assert not os.path.isabs(rel)
        ctx.register_parquet(t, rel)
    monkeypatch.chdir("/")
    try:
        for query in TPCH_QUERIES:
            sql = tpch_query(query)
            assert_same(ctx.sql(sql).to_arrow(), duck_arrow(duck, sql),
                        ordered=has_top_level_order(sql))
    finally:
        ctx.close()
