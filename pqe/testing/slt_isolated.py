"""Running scripts in worker processes, with a memory cap, a few at a time.

One runaway query (a join pqe plans as a cross product, say) can allocate tens of GB: in-process
that gets the whole run OOM-killed and every other file's numbers are lost. So each file runs in
its own ``python -m pqe.testing.sqllogictest --worker`` process whose address space is capped
with RLIMIT_AS: allocations beyond the cap fail inside that query (a MemoryError, reported as a
crash of that record) and the file carries on. If a worker still dies, its file is reported as
aborted, with the line it was running, read from a progress file the worker keeps up to date.
Workers also let files run in parallel on several cores.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .slt_results import FileResult, result_from_dict

DEFAULT_MEMORY_LIMIT_GB = 6.0


def limit_memory(gigabytes: float) -> None:
    """Cap this process's address space (Linux RLIMIT_AS); a no-op where unsupported."""
    limit = int(gigabytes * 2**30)
    try:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ValueError, OSError):  # pragma: no cover - platform without RLIMIT_AS
        pass


class ProgressFile:
    """The line of the record a worker is running, rewritten in place before each record."""

    def __init__(self, path: str | Path):
        self._f = open(path, "w")  # noqa: SIM115 - lives as long as the worker run

    def __call__(self, line: int) -> None:
        self._f.seek(0)
        self._f.write(f"{line:>10d}\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()


def _read_line(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _aborted(path: Path, why: str, progress: Path, seconds: float) -> FileResult:
    line = _read_line(progress)
    where = f" while running the record at line {line}" if line else ""
    return FileResult(str(path), aborted=f"{why}{where}", seconds=seconds)


def run_isolated(path: str | Path, worker_args: Sequence[str] = (),
                 memory_limit_gb: float | None = DEFAULT_MEMORY_LIMIT_GB,
                 timeout: float | None = None) -> FileResult:
    """Run one file in a worker process and return its result (``aborted`` set if it died).

    worker_args: extra CLI options for the worker (e.g. ``--scheduler sync``).
    """
    path = Path(path)
    with tempfile.TemporaryDirectory(prefix="slt-") as tmp:
        out, progress = Path(tmp) / "result.json", Path(tmp) / "progress"
        cmd = [sys.executable, "-m", "pqe.testing.sqllogictest", "--worker", str(out),
               "--progress", str(progress), *worker_args, str(path)]
        if memory_limit_gb:
            cmd += ["--memory-limit-gb", str(memory_limit_gb)]
        start = time.perf_counter()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  check=False, env={**os.environ, "PYTHONFAULTHANDLER": "1"})
        except subprocess.TimeoutExpired:
            return _aborted(path, f"timed out after {timeout:.0f}s", progress,
                            time.perf_counter() - start)
        seconds = time.perf_counter() - start
        if proc.returncode < 0 or not out.exists():
            tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
            why = (f"worker killed by signal {-proc.returncode}" if proc.returncode < 0
                   else f"worker exited with status {proc.returncode}")
            return _aborted(path, why + (f" ({tail})" if tail else ""), progress, seconds)
        return result_from_dict(json.loads(out.read_text()))


def run_many_isolated(paths: Sequence[str | Path], jobs: int = 2,
                      on_result: Callable[[FileResult], None] | None = None,
                      **kwargs) -> list[FileResult]:
    """`run_isolated` over many files, ``jobs`` at a time; results in the order of ``paths``.

    Larger files are started first so the slowest one does not start last.
    """
    order = sorted(range(len(paths)), key=lambda i: -_size(paths[i]))
    results: list[FileResult | None] = [None] * len(paths)

    def one(i: int) -> None:
        r = run_isolated(paths[i], **kwargs)
        results[i] = r
        if on_result is not None:
            on_result(r)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, order))
    return [r for r in results if r is not None]


def _size(p: str | Path) -> int:
    try:
        return os.path.getsize(p)
    except OSError:
        return 0
