"""Running task graphs: Dask's threaded scheduler (default), synchronous, or distributed.

On dask.distributed, spilling, retries of lost work and the dashboard come from Dask; pqe
only submits the graph (partitions are read inside tasks, never scattered from the client)
and turns Dask's failures into `pqe.Error`s that name the operator (execution.cluster: worker
support, progress, version checks, stalls, a lost scheduler). A LocalCluster started by
`workers=` listens on 127.0.0.1 only, its dashboard included.

Timeouts of a cluster run (seconds; Dask config keys, or the Executor's attributes):
`pqe.stall-timeout` (default 300): no task of the query finished for that long (e.g. every
worker paused for memory) -> ExecutionError naming the workers' state;
`pqe.no-workers-timeout` (default 30): the cluster had no worker for that long -> ExecutionError.
"""

from __future__ import annotations

import math
import logging
import os
import queue
import signal
import threading
import time
import weakref
from concurrent.futures import Executor as _FuturesExecutor
from concurrent.futures import Future

import dask
import dask.local
import dask.threaded
from dask.callbacks import Callback

from ..deep import in_nested_query, set_nested, start_deep_thread
from ..errors import Error, ExecutionError, InternalError, QueryCancelled, QueryTimeout


_executors: weakref.WeakSet = weakref.WeakSet()  # reset in a forked child


class PlacedDataLost(ExecutionError):
    """A worker holding pieces of an in-memory table (execution.cluster.PlacedTables) was
    lost while a query read them; they cannot be recomputed, so the driver lowers the query
    again, over pieces scattered again."""


class TaskPool(_FuturesExecutor):
    """The threaded scheduler's bounded pool (what dask.threaded.get needs: `submit` and
    `_max_workers`), on daemon threads. concurrent.futures' pool joins its threads at
    interpreter exit, so one task stuck in a user's function (a query that timed out long
    ago) kept the process from exiting; a daemon thread ends with the interpreter. Threads
    start as needed, up to `threads`, and end once the pool is shut down or dropped (its
    queued tasks done first)."""

    def __init__(self, threads: int, name: str = "pqe") -> None:
        self._max_workers = threads
        self._name = name
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._shutdown = False
        # (the threads hold the queue, not the pool: a pool no longer used is collected)
        weakref.finalize(self, _stop_threads, self._queue, self._threads)

    def submit(self, fn, /, *args, **kwargs) -> Future:
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            future: Future = Future()
            self._queue.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max_workers:
                thread = threading.Thread(target=_serve, args=(self._queue, self._idle),
                                          name=f"{self._name}_{len(self._threads)}",
                                          daemon=True)
                thread.start()
                self._threads.append(thread)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            if not self._shutdown:
                self._shutdown = True
                if cancel_futures:
                    _drain(self._queue)
                _stop_threads(self._queue, self._threads)
        if wait:
            for thread in list(self._threads):
                if thread is not threading.current_thread():
                    thread.join()


class _GraphTasks:
    """The pool as one graph's dask.threaded.get sees it: the futures of the tasks it submits,
    so that after a failure the tasks not started are cancelled and the running ones are
    waited for before the query's exchange files are removed. dask returns the first
    error at once; a task still writing its pieces then wrote them after the removal, and
    they stayed on disk until the process exited."""

    def __init__(self, pool: TaskPool) -> None:
        self.pool = pool
        self._max_workers = pool._max_workers
        # the futures not done yet (a done one leaves at once: its result, a task's table,
        # must not live on here after dask drops it)
        self.pending: set[Future] = set()
        self._lock = threading.Lock()

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future = self.pool.submit(fn, *args, **kwargs)
        with self._lock:
            self.pending.add(future)
        future.add_done_callback(self._done)
        return future

    def _done(self, future: Future) -> None:
        with self._lock:
            self.pending.discard(future)

    def unsettled(self) -> bool:
        with self._lock:
            return bool(self.pending)

    def settle(self, timeout: float) -> None:
        """Cancel what has not started and wait up to `timeout` seconds for the rest."""
        from concurrent.futures import wait

        with self._lock:
            left = list(self.pending)
        for f in left:
            f.cancel()
        wait(left, timeout=timeout)


# after a failed graph, how long its running tasks are waited for before its files go
SETTLE_SECONDS = 60.0


def _remove_when_settled(tasks: _GraphTasks, qid: str) -> None:
    from .exchange import remove_query

    tasks.settle(SETTLE_SECONDS)
    remove_query(qid)


def _serve(tasks: queue.SimpleQueue, idle: threading.Semaphore) -> None:
    set_nested(True)  # a query a task starts (a user function's own) is nested (run_job)
    while True:
        item = tasks.get()
        if item is None:
            return
        _run_task(*item)
        item = None  # nothing of a finished task kept alive while the thread waits
        idle.release()


def _run_task(future: Future, fn, args, kwargs) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = fn(*args, **kwargs)
    except BaseException as e:  # noqa: BLE001 - handed to the waiting scheduler
        future.set_exception(e)
    else:
        future.set_result(result)


def _stop_threads(tasks: queue.SimpleQueue, threads: list) -> None:
    for _ in threads:
        tasks.put(None)  # after what is queued: each thread takes one and ends


def _drain(tasks: queue.SimpleQueue) -> None:
    while True:
        try:
            item = tasks.get_nowait()
        except queue.Empty:
            return
        if item is not None:
            item[0].cancel()


def _after_fork_in_child() -> None:
    """A forked child has only the thread that forked: none of its Executors' pool threads,
    and any lock another thread held at the fork stays held. Each Executor starts afresh:
    a new pool when a query needs one, new locks, no running queries (a Context used
    before the fork timed out or hung on every query in the child)."""
    for executor in list(_executors):
        executor._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class Executor:
    """Runs graphs for one Context. The threaded scheduler shares one bounded pool across every
    query and every calling thread of the Context."""

    def __init__(self, scheduler: str | None = None, client=None, threads: int | None = None,
                 workers: int | None = None, memory_limit: str | int | None = None, *,
                 stall_timeout: float | None = None, no_workers_timeout: float | None = None):
        self.kind = "threads"
        self.client = client
        self.cluster = None
        self.runner = None
        # graphs run again after a disk exchange, or an in-memory table placed on the
        # cluster, lost pieces with a worker
        self.reruns = 0
        self._own_client = False
        from .. import types as T

        threads, workers = T.python_number(threads), T.python_number(workers)  # (NumPy ints)
        for name, n in (("threads", threads), ("workers", workers)):
            # (threads=-1 failed every query later as "a registered dask DataFrame failed";
            # 0 and True were taken as the default and 1)
            if n is not None and (isinstance(n, bool) or not hasattr(n, "__index__")
                                  or n < 1):
                raise Error(f"{name}={n!r}: give a positive number, or leave it out")
        self.threads = threads or default_threads()
        self._pool: TaskPool | None = None
        self._lock = threading.Lock()
        self.closed = False
        self._running: set = set()  # the tokens of the queries running now (close stops them)
        _executors.add(self)
        # a cluster run fails when no task finished for this long / no worker was there
        self.stall_timeout = _seconds(stall_timeout, "pqe.stall-timeout", 300.0,
                                      "stall_timeout")
        self.no_workers_timeout = _seconds(no_workers_timeout, "pqe.no-workers-timeout", 30.0,
                                           "no_workers_timeout")
        # bytes a query may hold at once: per worker with workers=, for the whole process on
        # threads (the planner then uses disk-backed exchanges past it)
        self.memory_limit = _bytes(memory_limit)
        if memory_limit == "auto" and workers is None:
            # as a LocalCluster's 'auto' sizes a worker: the memory this process may use
            # (the machine's, or its cgroup's limit); it was taken as no limit at all
            from distributed.system import MEMORY_LIMIT

            self.memory_limit = int(MEMORY_LIMIT)
        if workers is not None:
            if client is not None or scheduler not in (None, "distributed"):
                raise Error("workers= starts a local cluster: do not combine it with "
                            "scheduler= or client=")
            self._start_local_cluster(workers, memory_limit, threads)
        elif memory_limit is not None and (client is not None or (
                isinstance(scheduler, str) and "://" in scheduler)):
            raise Error("memory_limit= applies to this process's threads or to workers=N: "
                        "a cluster's workers have their own limits")
        elif client is not None:
            if scheduler not in (None, "distributed") or threads is not None:
                # (they were ignored: the client's cluster ran the queries)
                raise Error("client= runs queries on that client's cluster: do not combine it "
                            "with scheduler= or threads=")
            self.kind = "distributed"
        elif scheduler in (None, "threads", "threaded", "threading"):
            self.kind = "threads"
        elif scheduler in ("sync", "synchronous", "single-threaded"):
            self.kind = "sync"
        elif isinstance(scheduler, str) and "://" in scheduler:
            from distributed import Client

            if threads is not None:
                raise Error("threads= sizes this process's embedded scheduler: a cluster's "
                            "workers have their own threads")
            from distributed.comm.addressing import parse_address, parse_host_port

            try:
                # (checked before a Client is made: one that failed on 'tcp://', no port,
                # later hung the process in its __del__, on its event loop's lock)
                scheme, location = parse_address(scheduler)
                if scheme in ("tcp", "tls"):
                    parse_host_port(location)
            except (ValueError, TypeError) as e:
                raise Error(f"cannot connect to the dask scheduler at {scheduler}: "
                            f"{str(e).splitlines()[0] if str(e) else type(e).__name__}") from e
            try:
                self.client = Client(scheduler, timeout="10s")
            except OSError as e:
                raise Error(f"cannot connect to the dask scheduler at {scheduler}: {e}") from e
            self._own_client = True
            self.kind = "distributed"
        else:
            raise Error(f"unknown scheduler {scheduler!r}: use 'threads', 'sync', a "
                        "'tcp://host:port' address, client=, or workers=")
        if self.kind == "distributed":
            self._connect()
        elif self.memory_limit is not None:
            _warn_pool_keeps_memory()

    def _connect(self) -> None:
        """Check the cluster's versions and install pqe's worker plugin; on failure the
        Executor closes what it started."""
        from .cluster import ClusterRunner

        address = getattr(getattr(self.client, "scheduler", None), "address", None)
        self.runner = ClusterRunner(self.client, address, self.stall_timeout,
                                    self.no_workers_timeout)
        try:
            self.runner.setup()
        except BaseException:
            self.close()
            raise

    def _start_local_cluster(self, workers: int, memory_limit, threads: int | None) -> None:
        from distributed import Client, LocalCluster

        if workers < 1:
            raise Error("workers must be at least 1")
        import multiprocessing

        if getattr(multiprocessing.current_process(), "_inheriting", False):
            # a worker process being started imports the program's main module again: a
            # Context(workers=N) at its top level started a cluster in each worker, which
            # waited for the parent as the parent waited for it (a hang, with no error)
            raise Error("pqe.Context(workers=N) ran while a worker process was starting (each "
                        "worker imports the program's main module again): create the Context "
                        "under `if __name__ == '__main__':`")
        per_worker = threads or max(1, default_threads() // workers)
        # Worker processes share the terminal's process group: Ctrl-C meant for a query would
        # kill them. They inherit SIGINT ignored from here; queries are cancelled instead.
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        # Arrow's pool is chosen when a process first allocates: the system allocator gives
        # freed memory back (mimalloc, the default, keeps it mapped and Dask pauses the worker
        # for it); set in the environment the workers start with, restarts included
        pool = os.environ.get("ARROW_DEFAULT_MEMORY_POOL") or "system"
        env = {"distributed.nanny.pre-spawn-environ.ARROW_DEFAULT_MEMORY_POOL": pool}
        try:
            # loopback only: the scheduler, the workers, and the dashboard
            with dask.config.set(env):
                # (silence_logs: a failing task is pqe's one-line error; dask's workers also
                # logged a "Compute Failed" block with a traceback per partition to stderr)
                self.cluster = LocalCluster(n_workers=workers, threads_per_worker=per_worker,
                                            processes=True, memory_limit=memory_limit or "auto",
                                            host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                            silence_logs=logging.CRITICAL)
        except Exception as e:
            raise Error(f"could not start {workers} local worker process(es): "
                        f"{_start_failure(e)}") from e
        finally:
            if main:
                signal.signal(signal.SIGINT, previous)
        self.client = Client(self.cluster)
        self._own_client = True
        self.kind = "distributed"

    @property
    def parallelism(self) -> int:
        if self.kind == "sync":
            return 1
        if self.kind == "distributed":
            client = self.client
            if client is None:
                raise Error("this Context's dask client is closed")
            # a lost scheduler is reported when the query runs; planning uses what was known
            info = client.scheduler_info() if client.status == "running" else \
                (getattr(client, "_scheduler_identity", None) or {})
            return max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))
        return self.threads

    def worker_memory(self) -> tuple[int, int] | None:
        """(bytes, threads) of the smallest memory limit among the cluster's workers and the
        threads sharing it, or None on threads or when no worker has a limit."""
        if self.kind != "distributed" or self.client is None:
            return None
        client = self.client
        info = client.scheduler_info() if client.status == "running" else \
            (getattr(client, "_scheduler_identity", None) or {})
        import dask

        # what a task may use: up to where Dask pauses the worker (80% by default), less what
        # the worker process already holds (its Python, Arrow and Dask: ~200 MiB). Planned
        # for the whole limit, 400 MiB workers were paused and restarted mid-query where
        # Context(memory_limit="400MiB") on threads answered
        pause = dask.config.get("distributed.worker.memory.pause", 0.8) or 1.0
        limits = []
        for w in info.get("workers", {}).values():
            limit = int(w.get("memory_limit") or 0)
            if limit <= 0:
                continue
            held = int((w.get("metrics") or {}).get("memory") or 0)
            usable = max(limit // 4, int(limit * float(pause)) - held)
            limits.append((usable, int(w.get("nthreads") or 1)))
        return min(limits) if limits else None

    @property
    def dashboard_link(self) -> str | None:
        return self.client.dashboard_link if self.client is not None else None

    def pool(self) -> TaskPool:
        if self.closed:
            raise QueryCancelled("the Context was closed")
        with self._lock:
            if self._pool is None:
                self._pool = TaskPool(self.threads, "pqe")
            return self._pool

    def _after_fork(self) -> None:
        """In a forked child (see `_after_fork_in_child`)."""
        self._lock = threading.Lock()
        self._pool = None
        self._running = set()

    def _leave_pool(self) -> None:
        """After a query was stopped: the next queries get a new thread pool. The stopped
        query's tasks that already run cannot be interrupted (a slow Python function, a long
        kernel); they finish on the old pool's threads, which go when it is no longer used,
        instead of holding the threads the next query waits for (a Context seemed to hang
        for as long as a timed-out function kept running)."""
        with self._lock:
            self._pool = None

    def run_job(self, job, token, timeout: float | None = None,
                cancel: threading.Event | None = None, shown: float | None = None):
        """Run `job()` (which runs one or more graphs through `run_graph`) on a helper thread
        while the caller waits in short timed waits: Ctrl-C, `timeout` and `cancel` stop it
        promptly. The token is cancelled, so tasks that have not started stop at once (and on
        a cluster the futures are cancelled); the caller returns at once and the Context stays
        usable. A job started from inside a task (a user function's own query, pqe.deep's
        `in_nested_query`) runs its graphs on its own thread, one task after another, and
        stops when the task's query is stopped: the pool's threads may all be held by the
        query running the task, each waiting for a nested query of its own (a nested query
        queued for them waited for ever)."""
        if self.closed:
            raise Error("this Context is closed")
        box: dict = {}
        done = threading.Event()
        nested = in_nested_query()
        outer = None
        if nested:
            from ..kernels.user_functions import CURRENT

            outer = getattr(CURRENT, "check", None)  # the calling task's query's check
        with self._lock:
            self._running.add(token)

        def target():
            set_nested(nested)  # (run_graph reads it on this thread)
            try:
                box["result"] = job()
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                box["error"] = e
            finally:
                set_nested(False)
                done.set()

        def stop(reason: str) -> None:
            if token is not None:
                token.cancel(reason)
            if not nested:  # (a nested job's graphs never ran on the pool)
                self._leave_pool()

        start_deep_thread(target, "pqe-query")  # lowering walks the plan recursively
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            # short waits: a signal delivered while the main thread waits is seen at once
            while not done.wait(0.05):
                if self.closed:
                    if token is not None:
                        token.cancel("the Context was closed")
                    raise QueryCancelled("query cancelled: the Context was closed")
                if cancel is not None and cancel.is_set():
                    stop("cancelled")
                    raise QueryCancelled("query cancelled")
                if deadline is not None and time.monotonic() >= deadline:
                    # (`shown`: the query's whole timeout, of which planning took a part)
                    whole = timeout if shown is None else shown
                    stop(f"timed out after {whole:g} s")
                    raise QueryTimeout(f"query timed out after {whole:g} s")
                if outer is not None:
                    try:
                        outer()
                    except QueryCancelled as e:
                        stop(str(e))
                        raise
        except KeyboardInterrupt:
            stop("interrupted")
            raise
        finally:
            with self._lock:
                self._running.discard(token)
        if "error" in box:
            raise box["error"]
        return box["result"]

    def run_cancellable(self, graph: dict, keys: list, token, timeout: float | None,
                        cancel: threading.Event | None = None) -> list:
        """One graph, as `run_job` runs jobs."""
        return self.run_job(lambda: self.run_graph(graph, keys, token), token, timeout, cancel)

    def run_graph(self, graph: dict, keys: list, token=None, progress=None,
                  here: bool = False) -> list:
        """Run one graph on this executor (from inside a job). `progress(done, total)` deltas
        are reported as tasks finish: first (0, tasks in the graph), then (finished, 0).
        `here`: a small graph run task after task on this thread (not on a cluster)."""
        if token is not None and token.reason is not None:
            raise QueryCancelled(token.reason)
        tasks = None
        try:
            if self.kind == "distributed":
                return self._run_distributed(graph, keys, token, progress)
            with _Progress(progress, token, len(graph)):
                if self.kind == "sync" or here or in_nested_query():
                    # (a query started inside a task: the pool may be all its caller's)
                    return _run_here(graph, keys)
                tasks = _GraphTasks(self.pool())
                return list(dask.threaded.get(graph, keys, pool=tasks,
                                              num_workers=self.threads))
        except Error:
            raise
        except _Stopped:
            raise QueryCancelled(token.reason if token is not None else "cancelled") from None
        except Exception as e:  # scheduler failures that are not pqe's own errors
            if _raised_outside_pqe(e):
                # a task of a registered dask DataFrame's own graph (its map_partitions
                # function, a `meta` its partitions do not match): the user's code failed
                first = str(e).strip().split("\n")[0]
                raise ExecutionError(f"a task of a registered dask DataFrame failed: "
                                     f"{type(e).__name__}: {first}") from e
            raise InternalError(f"task graph failed: {type(e).__name__}: {e}") from e
        finally:
            if self.kind != "distributed" and token is not None:
                from .exchange import remove_query

                if tasks is not None and tasks.unsettled():
                    # a task failed while others run: the error goes to the caller now, and
                    # the files once they settle (they stop at their next op; one in a slow
                    # user function was waited for before the error, 8 s for 0.03)
                    token.cancel("another task of the query failed")
                    threading.Thread(target=_remove_when_settled, args=(tasks, token.qid),
                                     name="pqe-settle", daemon=True).start()
                else:
                    remove_query(token.qid)  # disk-backed exchanges' files of this graph
            if self.kind != "distributed" and self.memory_limit is not None:
                from .cluster import release_memory

                release_memory()  # the process stays within its limit between queries

    def run(self, graph: dict, keys: list) -> list:
        return self.run_graph(graph, keys)

    def placement(self):
        """How a query's graph reaches in-memory tables: on a cluster, a function giving
        each table's slices already placed there (Lowering's `place`); None on threads,
        where the graph holds the table itself."""
        runner = self.runner
        if self.kind != "distributed" or runner is None:
            return None
        runner.placed.timeout = self.no_workers_timeout
        return runner.placed.pieces

    def forget(self, provider) -> None:
        """`provider` (an in-memory table) was dropped or replaced: release its pieces on the
        cluster (a DataFrame still reading it places it again)."""
        runner = self.runner
        if runner is not None:
            runner.placed.forget(provider)

    def _run_distributed(self, graph: dict, keys: list, token=None, progress=None) -> list:
        """On the cluster runner; a query whose disk-backed exchange lost pieces with a
        worker runs once more."""
        from .exchange import ExchangeLost

        runner = self.runner
        if runner is None:
            raise Error("this Context's dask client is closed")
        runner.stall_timeout = self.stall_timeout
        runner.no_workers_timeout = self.no_workers_timeout
        try:
            return runner.run(graph, keys, token, progress)
        except ExchangeLost as e:
            if token is not None and token.reason is not None:
                raise
            import logging

            logging.getLogger("pqe").warning("%s: running the query once more", e)
            self.reruns += 1
            return runner.run(graph, keys, token, None)

    def close(self) -> None:
        """Stop: running queries are cancelled (their callers get QueryCancelled, not the
        pool's 'cannot schedule new futures after shutdown' as an internal error), and later
        ones refused (the pool was made again and the Context kept answering)."""
        self.closed = True
        with self._lock:
            for token in list(self._running):
                if token is not None:
                    token.cancel("the Context was closed")
        if self.runner is not None:
            self.runner.close()  # in-memory tables placed on the cluster are released
        self.runner = None
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None
        if self._own_client and self.client is not None:
            try:
                self.client.close(timeout=5)
            except Exception:  # noqa: BLE001 - a lost scheduler: nothing left to close
                pass
            self.client = None
        if self.cluster is not None:
            cluster, self.cluster = self.cluster, None
            try:
                cluster.close(timeout=_CLOSE_TIMEOUT)
            except Exception:  # noqa: BLE001 - e.g. a nanny restarting a worker that died:
                # Dask's close races with it and can wait forever; the workers are ours
                _kill_workers(cluster)


_CLOSE_TIMEOUT = 30.0


def _kill_workers(cluster) -> None:
    """The worker processes of a LocalCluster whose close did not finish: SIGKILL them, so
    closing a Context always returns and leaves no process behind."""
    nannies = list(getattr(cluster, "workers", {}).values()) + list(getattr(cluster, "_created", ()))
    for nanny in nannies:
        pid = getattr(getattr(nanny, "process", None), "pid", None)
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:  # already gone
                pass


_pool_warned = False


def _start_failure(e: Exception) -> str:
    """Why a LocalCluster did not start, in one line, with the usual cause's remedy: worker
    processes start by importing the main script again ('spawn'), which a program read from
    standard input (`python - <<EOF`) has no file for, and which must not start workers
    itself when imported."""
    import sys

    main = getattr(sys.modules.get("__main__"), "__file__", None)
    if main is not None and not os.path.exists(main):
        return (f"worker processes re-import the main program, and {main!r} is not a file; "
                f"run it from a script (its Context created under "
                f"`if __name__ == '__main__':`) or use threads (pqe.Context())")
    cause = e
    while cause.__cause__ is not None:
        cause = cause.__cause__
    msg = " ".join(str(cause).split()) or type(cause).__name__
    return (f"{msg} (a script must create its Context under `if __name__ == '__main__':`, "
            f"as worker processes import it again)")


def _warn_pool_keeps_memory() -> None:
    """memory_limit= on threads: Arrow's pool was fixed when this process first allocated;
    only the system allocator gives freed memory back between queries."""
    global _pool_warned
    import pyarrow as pa

    backend = pa.default_memory_pool().backend_name
    if backend != "system" and not _pool_warned:
        import warnings

        _pool_warned = True
        warnings.warn(f"pqe: memory_limit= on threads: Arrow allocates with {backend}, which "
                      f"keeps freed memory mapped, so the process grows past its limit across "
                      f"queries; start Python with ARROW_DEFAULT_MEMORY_POOL=system",
                      RuntimeWarning, stacklevel=4)


def _seconds(value, key: str, default: float, name: str) -> float | None:
    """A duration in seconds (a number, or dask's text such as '5m'), positive or None; else
    one line naming the argument (dask's parser read -5 as '1-5' and raised ValueError,
    'abc' and NaN a KeyError; 0 failed every cluster query at its first poll)."""
    given = value is not None
    if value is None:
        value = dask.config.get(key, default)
    if value is None:
        return None
    from dask.utils import parse_timedelta

    from .. import types as T

    value = T.python_number(value)  # (np.int64(30) was refused)
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TypeError
        seconds = float(parse_timedelta(value, "s"))
    except (ValueError, TypeError, KeyError, AttributeError):
        seconds = math.nan
    if not seconds > 0 or math.isinf(seconds):
        where = f"{name}=" if given else f"dask config {key}: "
        raise Error(f"{where}{value!r} is not a duration: give seconds above 0 (e.g. 30 or "
                    f"'5m'), or leave it out")
    return seconds


def _bytes(value) -> int | None:
    if value is None or value == "auto":
        return None
    from dask.utils import parse_bytes

    try:
        if isinstance(value, bool):  # (True was 1 byte)
            raise TypeError
        n = int(parse_bytes(value)) if isinstance(value, str) else int(value)
    except (ValueError, TypeError) as e:
        raise Error(f"memory_limit={value!r} is not a size (e.g. '2GiB' or 2_000_000_000)") from e
    if n < 1:  # (0 was no limit, a negative one made every exchange spill)
        raise Error(f"memory_limit={value!r} must be a positive size (e.g. '2GiB'), or None "
                    f"for no limit")
    return n


def _raised_outside_pqe(e: BaseException) -> bool:
    """Whether no frame of `e`'s traceback but this module's is pqe's: the failure is in code
    the user gave the graph, a registered dask DataFrame's partition functions (pqe's own
    tasks run inside ops, whose failures are pqe Errors already)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    me = os.path.abspath(__file__)
    tb = e.__traceback__
    while tb is not None:
        name = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if name.startswith(here) and name != me:
            return False
        tb = tb.tb_next
    return True


def _run_here(graph: dict, keys: list) -> list:
    """A graph's tasks one after another on this thread, which is marked as running tasks
    meanwhile (a query one of them starts is nested: see run_job)."""
    outer = in_nested_query()
    set_nested(True)
    try:
        return list(dask.local.get_sync(graph, keys))
    finally:
        set_nested(outer)


class _Stopped(Exception):
    """Raised inside dask's scheduling loop to stop a cancelled query's graph."""


class _Progress(Callback):
    """Reports finished tasks of one graph to a `progress(done, total)` callback, and stops
    the graph at its next finished task once the query's token is cancelled (tasks already
    running finish in the background). dask's callbacks are process-wide, so the callback
    counts only the graph it saw start on its own thread."""

    def __init__(self, progress, token, total: int):
        super().__init__()
        self._progress = progress
        self._token = token
        self._total = total
        self._state = None
        self._thread = threading.get_ident()

    def _start_state(self, dsk, state) -> None:
        if threading.get_ident() != self._thread or self._state is not None:
            return
        self._state = id(state)
        if self._progress is not None:
            n = sum(len(state[k]) for k in ("ready", "waiting", "running", "finished"))
            self._progress(0, n)

    def _posttask(self, key, result, dsk, state, worker_id) -> None:
        if id(state) != self._state:
            return
        if self._token is not None and self._token.reason is not None:
            raise _Stopped()
        if self._progress is not None:
            self._progress(1, 0)

    def _finish(self, dsk, state, errored) -> None:
        if id(state) == self._state:
            self._state = None
