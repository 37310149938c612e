"""Running task graphs: Dask's threaded scheduler (default), synchronous, or distributed."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import dask
import dask.local
import dask.threaded

from ..errors import Error, InternalError


def default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class Executor:
    """Runs graphs for one Context. The threaded scheduler shares one bounded pool across every
    query and every calling thread of the Context."""

    def __init__(self, scheduler: str | None = None, client=None, threads: int | None = None):
        self.kind = "threads"
        self.client = client
        self.threads = threads or default_threads()
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        if client is not None:
            self.kind = "distributed"
        elif scheduler in (None, "threads", "threaded", "threading"):
            self.kind = "threads"
        elif scheduler in ("sync", "synchronous", "single-threaded"):
            self.kind = "sync"
        elif isinstance(scheduler, str) and "://" in scheduler:
            from distributed import Client

            self.client = Client(scheduler)
            self._own_client = True
            self.kind = "distributed"
        else:
            raise Error(f"unknown scheduler {scheduler!r}: use 'threads', 'sync', a "
                        "'tcp://host:port' address, or client=")

    @property
    def parallelism(self) -> int:
        if self.kind == "sync":
            return 1
        if self.kind == "distributed":
            info = self.client.scheduler_info()
            return max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))
        return self.threads

    def pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="pqe")
            return self._pool

    def run(self, graph: dict, keys: list) -> list:
        try:
            if self.kind == "sync":
                return list(dask.local.get_sync(graph, keys))
            if self.kind == "threads":
                return list(dask.threaded.get(graph, keys, pool=self.pool(),
                                              num_workers=self.threads))
            return list(self.client.get(graph, keys, sync=True))
        except Error:
            raise
        except Exception as e:  # scheduler failures that are not pqe's own errors
            raise InternalError(f"task graph failed: {type(e).__name__}: {e}") from e

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None
        if getattr(self, "_own_client", False) and self.client is not None:
            self.client.close()
            self.client = None
