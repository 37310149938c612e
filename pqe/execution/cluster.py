"""Running pqe's graphs on dask.distributed: connection checks, worker support, progress,
failures.

- `WorkerSupport`, a worker plugin registered once per cluster: free memory is handed back
  to the OS (malloc_trim through `release_unused`) whenever the process holds more than a
  fraction of its memory limit, so a worker Dask paused for memory resumes once its tasks'
  buffers are freed (workers started by `workers=` run Arrow's system allocator from the
  start, ARROW_DEFAULT_MEMORY_POOL=system; the plugin switches other workers' pool as far as
  a running process allows); it also serves the disk-backed exchange's pieces to other
  workers (execution.exchange) and removes a query's exchange files when asked.
- `ProgressWatch`, a scheduler plugin installed on first use: counts the tasks of each
  running query that finished (a task recomputed after a worker was lost counts once), so the
  client reports real progress and sees when nothing moves.
- `check_versions`: a worker or scheduler whose Python, pqe, pyarrow, dask or distributed
  differs in a way that breaks task deserialization is refused by name; other differences
  warn once.
- `PlacedTables`: in-memory tables (`register_arrow`, `register_pandas`, tables made in SQL)
  are put on the cluster once, as one scattered piece per scan partition, and kept while the
  table is; scan tasks depend on their piece. A table inside the graph went to the scheduler
  with every query (dask's "Sending large graph" warning), was deserialized on one worker
  and copied whole to every other worker that ran one of its scan tasks.
- `run_graph`: submits a graph and waits in short steps, turning every way a cluster can fail
  into a one-line `pqe.Error`: a task whose workers keep dying (the operator is named), all
  workers gone, no task finished for `stall_timeout` seconds (paused workers named), the
  scheduler lost. It never hangs and never lets a Dask exception through.

The scheduler only routes tasks: it unpickles them (pqe must be importable there) but never
reads data; every file is opened inside a task on a worker.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import re
import sys
import threading
import time
import warnings
import weakref

from ..errors import Error, ExecutionError, InternalError, QueryCancelled
from .scheduler import PlacedDataLost

PLUGIN = "pqe"
# fraction of a worker's memory limit above which freed memory is handed back to the OS
TRIM_FRACTION = 0.4


# ---- worker side -------------------------------------------------------------------------------


def configure_memory_pool(kind: str | None = None) -> str:
    """Make Arrow allocate from `kind` ("system", "jemalloc", "mimalloc"; default: system,
    unless ARROW_DEFAULT_MEMORY_POOL chose one). The system allocator returns freed memory to
    the OS when trimmed; mimalloc and jemalloc keep much of it mapped (SF1 q9: a process at
    330-500 MiB after the query with no Arrow buffer alive, against 260 MiB with malloc_trim),
    which Dask counts as unmanaged memory and pauses the worker for.

    Switching a running process only helps partly: Arrow's compute and Acero contexts keep
    the pool that was the default when they were first used (SF10 q5: 1.3 GB still went
    through mimalloc and stayed mapped). Workers started by `workers=` get
    ARROW_DEFAULT_MEMORY_POOL=system in their environment instead; for other clusters, set it
    where the workers start."""
    import pyarrow as pa

    kind = kind or os.environ.get("ARROW_DEFAULT_MEMORY_POOL") or "system"
    pool = {"system": pa.system_memory_pool, "jemalloc": pa.jemalloc_memory_pool,
            "mimalloc": pa.mimalloc_memory_pool}.get(kind)
    if pool is None:
        return pa.default_memory_pool().backend_name
    try:
        pa.set_memory_pool(pool())
    except (NotImplementedError, pa.ArrowNotImplementedError):  # not built with that allocator
        pass
    return pa.default_memory_pool().backend_name


def release_memory() -> None:
    """Hand memory freed by Arrow (and by Python's objects) back to the OS."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):  # not glibc
            pass


def process_memory() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


try:
    from distributed.diagnostics.plugin import SchedulerPlugin, WorkerPlugin
except ImportError:  # pragma: no cover - distributed is a dependency
    WorkerPlugin = SchedulerPlugin = object


class WorkerSupport(WorkerPlugin):
    """pqe's part of every worker process (registered by the client, idempotent)."""

    name = PLUGIN
    idempotent = True

    def __init__(self, pool: str | None = None, interval: float = 0.25,
                 fraction: float = TRIM_FRACTION):
        self.pool = pool
        self.interval = interval
        self.fraction = fraction

    def setup(self, worker):
        from tornado.ioloop import PeriodicCallback

        from . import exchange

        from . import ops

        self.worker = worker
        self.backend = configure_memory_pool(self.pool)
        ops.REALIGN_INPUTS = True  # (data from other workers arrives misaligned: ops)
        self._last = 0.0
        self._wait = self.interval
        self._callback = PeriodicCallback(self._trim, self.interval * 1000)
        self._callback.start()
        worker.handlers[exchange.FETCH_HANDLER] = exchange.serve_fetch
        exchange.set_local_directory(worker.local_directory)

    def teardown(self, worker):
        from . import exchange

        callback = getattr(self, "_callback", None)
        if callback is not None:
            callback.stop()
        exchange.remove_all()

    def _trim(self) -> None:
        """Free memory back to the OS when the process is over `fraction` of its limit (at
        most every `_wait` seconds; the wait doubles, up to 5 s, while trimming frees little,
        and falls back once it helps)."""
        now = time.monotonic()
        if now - self._last < self._wait:
            return
        limit = getattr(getattr(self.worker, "memory_manager", None), "memory_limit", None)
        before = process_memory()
        if not limit or before < self.fraction * limit:
            return
        self._last = now
        release_memory()
        freed = before - process_memory()
        self._wait = self.interval if freed > 16 << 20 else min(5.0, self._wait * 2)


# ---- scheduler side ----------------------------------------------------------------------------


class ProgressWatch(SchedulerPlugin):
    """Counts finished tasks of the queries being watched (key -> query ids)."""

    name = "pqe-progress"

    def __init__(self):
        self.owners: dict = {}  # key -> [query id]
        self.done: dict[str, int] = {}
        self.total: dict[str, int] = {}
        self.finished: set = set()
        self.recomputed: dict[str, int] = {}  # query id -> its tasks that finished again

    def transition(self, key, start, finish, *args, **kwargs):
        if finish != "memory":
            return
        owners = self.owners.get(key)
        if owners is None:
            return
        if key in self.finished:  # run again: its result was lost with a worker
            for qid in owners:
                self.recomputed[qid] = self.recomputed.get(qid, 0) + 1
            return
        self.finished.add(key)
        for qid in owners:
            self.done[qid] = self.done.get(qid, 0) + 1

    def watch(self, qid: str, keys) -> None:
        self.total[qid] = len(keys)
        self.done[qid] = 0
        for k in keys:
            self.owners.setdefault(k, []).append(qid)

    def unwatch(self, qid: str, keys) -> None:
        self.total.pop(qid, None)
        self.done.pop(qid, None)
        self.recomputed.pop(qid, None)
        for k in keys:
            owners = self.owners.get(k)
            if owners is None:
                continue
            if qid in owners:
                owners.remove(qid)
            if not owners:
                del self.owners[k]
                self.finished.discard(k)


def _watch(qid, keys, dask_scheduler=None):
    plugin = dask_scheduler.plugins.get(ProgressWatch.name)
    if plugin is None:
        plugin = ProgressWatch()
        dask_scheduler.add_plugin(plugin, name=ProgressWatch.name)
    plugin.watch(qid, keys)
    return True


def _unwatch(qid, keys, dask_scheduler=None):
    plugin = dask_scheduler.plugins.get(ProgressWatch.name)
    if plugin is not None:
        plugin.unwatch(qid, keys)
    return True


def _recomputed(qid, dask_scheduler=None) -> int:
    plugin = dask_scheduler.plugins.get(ProgressWatch.name)
    return plugin.recomputed.get(qid, 0) if plugin is not None else 0


def _poll(qid, dask_scheduler=None):
    """(finished tasks of query `qid`, [(worker name, status, process memory, limit,
    tasks assigned)])."""
    plugin = dask_scheduler.plugins.get(ProgressWatch.name)
    done = plugin.done.get(qid, 0) if plugin is not None else 0
    workers = []
    for ws in list(dask_scheduler.workers.values()):
        try:
            mem = ws.memory.process
        except Exception:  # noqa: BLE001 - best effort
            mem = 0
        workers.append((str(ws.name), ws.status.name, int(mem), int(ws.memory_limit or 0),
                        len(ws.processing)))
    return done, workers


# ---- in-memory tables on the cluster -----------------------------------------------------------

# a table whose buffers (a slice's whole parents included: they pickle whole) are smaller than
# this travels inside the query's graph, which costs less than a scatter's round trip
INLINE_BYTES = 1 << 20


class PlacedTables:
    """In-memory tables placed on one client's cluster: provider token -> (the slices the
    table was cut into, one future per slice). A table is scattered the first time a query
    reads it and released when its provider is dropped (deregistered or replaced, the
    Context closed, or nothing refers to that version any more); a query running meanwhile
    keeps the futures its graph holds. Pieces a lost worker held are scattered again, as are
    all of a table's when a query cuts it into other slices (another partition count)."""

    def __init__(self, client, timeout: float = 30.0):
        self.client = client
        self.timeout = timeout
        self._lock = threading.Lock()
        self._placed: dict[str, tuple[tuple, list]] = {}
        self.scatters = 0  # scatters made (tables, and pieces of them placed again)

    def pieces(self, provider, slices: tuple) -> list | None:
        """One future per slice of `provider`'s table (None: the table is small enough to
        travel in the graph)."""
        table = provider.table
        if table.get_total_buffer_size() < INLINE_BYTES:
            return None
        token = provider.token
        with self._lock:
            hit = self._placed.get(token)
            if hit is not None and hit[0] == slices:
                # pieces lost with a worker (their futures are cancelled) are placed again
                futures = list(hit[1])
                lost = [i for i, f in enumerate(futures) if f.status != "finished"]
                if not lost:
                    return futures
                for i, f in zip(lost, self._scatter(table, token, slices, lost), strict=True):
                    futures[i] = f
            else:
                futures = self._scatter(table, token, slices, range(len(slices)))
            if hit is None:
                # (the finalizer holds the dict, not the provider or this object)
                done = weakref.finalize(provider, _forget, self._placed, token)
                done.atexit = False
            self._placed[token] = (slices, futures)
        return list(futures)

    def _scatter(self, table, token: str, slices: tuple, which) -> list:
        """Scatter slices number `which` of `table`; one future each."""
        from distributed import TimeoutError as DaskTimeout

        # (keys of their own each time: a key being forgotten is never scattered again)
        name = f"memory-{token}-{next(_SCATTERS)}"
        data = {f"{name}-{i}": table.slice(*slices[i]) for i in which}
        try:
            futures = self.client.scatter(data, timeout=self.timeout)
        except (DaskTimeout, TimeoutError) as e:
            when = f" in {self.timeout:g} s" if self.timeout else ""
            raise ExecutionError(f"could not place an in-memory table on the dask cluster"
                                 f"{when} (no workers?)") from e
        except Exception as e:  # noqa: BLE001 - a lost scheduler, a closed client: one line
            raise ExecutionError(f"could not place an in-memory table on the dask cluster: "
                                 f"{_dask_failure(e)}") from e
        self.scatters += 1
        return [futures[k] for k in data]

    def forget(self, provider) -> None:
        """Release `provider`'s pieces now (a query running over them keeps its own)."""
        _forget(self._placed, getattr(provider, "token", None))

    def close(self) -> None:
        self._placed.clear()


# numbers scatters across this process's Contexts (two on one client may place one table)
_SCATTERS = itertools.count(1)


def _forget(placed: dict, token) -> None:
    placed.pop(token, None)  # (the futures release their keys when dropped)


def _placed_futures(graph: dict) -> list:
    """The futures of placed pieces a graph's tasks read."""
    from distributed import Future

    return [a for v in graph.values() if type(v) is tuple for a in v[2:]
            if isinstance(a, Future)]


# ---- versions ----------------------------------------------------------------------------------

# package -> how many leading version components must agree for tasks to deserialize
STRICT = {"python": 2, "pqe": 3, "pyarrow": 1, "dask": 2, "distributed": 2, "cloudpickle": 1}
LOOSE = ("numpy", "pandas", "msgpack", "lz4", "fsspec", "sqlglot")
_warned: set[str] = set()


def versions() -> dict[str, str | None]:
    """This process's versions of what pqe's tasks depend on."""
    from importlib import metadata

    out: dict[str, str | None] = {"python": "%d.%d.%d" % sys.version_info[:3]}
    pqe_module = sys.modules.get("pqe")
    out["pqe"] = getattr(pqe_module, "__version__", None)
    for name in ("pyarrow", "dask", "distributed", "cloudpickle") + LOOSE:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _parts(v: str | None) -> tuple:
    return tuple(re.findall(r"\d+", v or ""))


def compare_versions(where: str, theirs: dict, ours: dict) -> None:
    """Raise for a difference that breaks task deserialization; warn (once per message) for
    others."""
    for name, n in STRICT.items():
        a, b = ours.get(name), theirs.get(name)
        if a is None and b is None:
            continue
        if a is None or b is None or _parts(a)[:n] != _parts(b)[:n]:
            raise Error(f"{where} runs {name} {b or 'not installed'} but this client runs "
                        f"{name} {a or 'not installed'}: pqe's tasks would not deserialize "
                        f"there; install the same versions on every machine")
    for name in tuple(STRICT) + LOOSE:
        a, b = ours.get(name), theirs.get(name)
        if a != b and (a is not None or b is not None):
            msg = (f"{where} runs {name} {b or 'not installed'}, this client {name} "
                   f"{a or 'not installed'}")
            if msg not in _warned:
                _warned.add(msg)
                warnings.warn(f"pqe: {msg}", RuntimeWarning, stacklevel=4)


def check_versions(client, seen: set | None = None) -> None:
    """Compare the scheduler's and every worker's versions with this process's (workers in
    `seen` were checked already; checked ones are added to it)."""
    ours = versions()
    if seen is None or "scheduler" not in seen:
        try:
            theirs = client.run_on_scheduler(versions)
        except Exception as e:  # noqa: BLE001 - cannot run pqe's code there at all
            raise Error(f"the dask scheduler cannot run pqe's code "
                        f"({type(e).__name__}: {_first_line(e)}): install pqe there") from e
        compare_versions("the dask scheduler", theirs, ours)
        if seen is not None:
            seen.add("scheduler")
    workers = client.scheduler_info(n_workers=-1).get("workers", {})
    new = [addr for addr in workers if seen is None or addr not in seen]
    if not new:
        return
    out = client.run(versions, workers=new, on_error="return")
    for addr, theirs in out.items():
        name = workers.get(addr, {}).get("name", addr)
        where = f"dask worker {name} ({addr})" if str(name) != addr else f"dask worker {addr}"
        if isinstance(theirs, BaseException):
            raise Error(f"{where} cannot run pqe's code ({type(theirs).__name__}: "
                        f"{_first_line(theirs)}): install pqe there")
        compare_versions(where, theirs, ours)
        if seen is not None:
            seen.add(addr)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().split("\n")[0]
    return text[:300]


def _dask_failure(e: BaseException) -> str:
    """One line for a failure dask reports: its message's sentences joined (dask breaks them
    over lines: the first line alone read 'Error during deserialization of the task graph.
    This frequently'), then the root cause it was raised from (the ModuleNotFoundError a
    worker met), each cut to a readable length."""
    def flat(x: BaseException) -> str:
        text = " ".join(str(x).split())
        return f"{type(x).__name__}: {text[:400]}" if text else type(x).__name__

    out = flat(e)
    root, seen = e, {id(e)}
    while (nxt := root.__cause__ or root.__context__) is not None and id(nxt) not in seen:
        seen.add(id(nxt))
        root = nxt
    if root is not e:
        out += f" (caused by {flat(root)})"
    return out


# ---- running a graph ---------------------------------------------------------------------------


def operator_of(key) -> str:
    """The operator a task key names (`hashjoin-build-orders` of
    ("hashjoin-build-orders-<hash>", 3))."""
    name = key[0] if isinstance(key, tuple) and key else key
    name = str(name)
    m = re.match(r"^(.*?)-[0-9a-f]{16}(?:-.*)?$", name)
    return m.group(1) if m else name.rsplit("-", 1)[0]


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB"


def _describe_workers(workers) -> str:
    if not workers:
        return "no workers"
    out = []
    for name, status, mem, limit, tasks in sorted(workers):
        share = f" at {mem / limit:.0%} of its {_mib(limit)} memory limit" if limit else ""
        out.append(f"{name} {status}{share}, {tasks} tasks")
    return "; ".join(out)


class ClusterRunner:
    """Runs graphs on one `distributed.Client` (see the module docstring)."""

    def __init__(self, client, address: str | None = None, stall_timeout: float = 300.0,
                 no_workers_timeout: float = 30.0, poll_interval: float = 0.25):
        self.client = client
        self.address = address or getattr(getattr(client, "scheduler", None), "address", None)
        self.stall_timeout = stall_timeout
        self.no_workers_timeout = no_workers_timeout
        self.poll_interval = poll_interval
        self.seen: set = set()
        self._lock = threading.Lock()
        self._watching = True
        self._ready = False
        self.placed = PlacedTables(client, no_workers_timeout)

    # -- setup --

    def setup(self) -> None:
        """Check versions and register the worker plugin (once; new workers are checked at
        the next query)."""
        with self._lock:
            check_versions(self.client, self.seen)
            if not self._ready:
                try:
                    self.client.register_plugin(WorkerSupport(), name=PLUGIN)
                except Exception as e:  # noqa: BLE001
                    raise Error(f"cannot install pqe's worker plugin on the dask cluster at "
                                f"{self.address}: {type(e).__name__}: {_first_line(e)}") from e
                self._ready = True

    def _scheduler_call(self, fn, *args, timeout: float = 10.0):
        return self.client.sync(self.client._run_on_scheduler, fn, *args,
                                callback_timeout=timeout)

    def _connected(self) -> bool:
        return self.client.status == "running"

    def _lost(self) -> ExecutionError:
        return ExecutionError(f"lost the connection to the dask scheduler at {self.address} "
                              f"(the scheduler stopped or the network failed): the query did "
                              f"not finish")

    def _wait_connected(self, seconds: float = 5.0) -> None:
        deadline = time.monotonic() + seconds
        while not self._connected():
            if self.client.status in ("closed", "closing") or time.monotonic() > deadline:
                raise ExecutionError(f"not connected to the dask scheduler at {self.address} "
                                     f"(client {self.client.status})")
            time.sleep(0.05)

    # -- running --

    def run(self, graph: dict, keys: list, token=None, progress=None,
            stall_timeout: float | None = None) -> list:
        from distributed import KilledWorker

        self._wait_connected()
        try:
            self.setup()
        except (OSError, TimeoutError) as e:
            raise self._lost() from e
        stall = self.stall_timeout if stall_timeout is None else stall_timeout
        qid = getattr(token, "qid", None) or os.urandom(8).hex()
        all_keys = list(graph)
        total = len(all_keys)
        watched = False
        if self._watching:
            try:
                watched = bool(self._scheduler_call(_watch, qid, all_keys))
            except (OSError, TimeoutError) as e:
                raise self._lost() from e
            except Exception:  # noqa: BLE001 - no progress plugin: finished outputs only
                self._watching = False
        if progress is not None:
            progress(0, total)
        reported = 0
        futures = None
        try:
            futures = self.client.get(graph, keys, sync=False)
            reported = self._wait(futures, qid, token, progress, total, watched, stall)
            results = list(self.client.gather(futures))
            if watched and getattr(token, "volatile", False) \
                    and self._scheduler_call(_recomputed, qid, timeout=10.0):
                # a lost worker's tasks ran again and drew new random() values, while
                # tasks that had read the first ones kept them: a CTE of random() read
                # twice no longer matched itself (count 2000 where 0 is right)
                raise ExecutionError(
                    "a worker was lost while this query ran, and the tasks it had run were "
                    "computed again; the query computes random() (or a non-deterministic "
                    "user function), whose values then differ between the tasks that read "
                    "them: run it again")
            if progress is not None and reported < total:
                progress(total - reported, 0)
            return results
        except KilledWorker as e:
            key = e.args[0] if e.args else "?"
            raise ExecutionError(
                f"{operator_of(key)} task {key} failed on every worker that ran it (workers "
                f"died, e.g. out of memory): raise memory_limit or use more workers") from e
        except (Error, KeyboardInterrupt) as e:
            # the workers hear of a cancellation (Ctrl-C, a timeout), not of a failure: a
            # query whose exchange was lost runs again under the same id
            stopped = isinstance(e, (KeyboardInterrupt, QueryCancelled))
            self._cancel(futures, qid if stopped else None, str(e) or "cancelled")
            raise
        except BaseException as e:  # noqa: BLE001 - Dask's own failures, one line each
            self._cancel(futures)
            if self._connected() and self._pieces_lost(graph, 2.0 if _is_cancelled(e) else 0):
                raise PlacedDataLost("a worker holding part of an in-memory table was lost "
                                     "while the query ran") from e
            if not self._connected() or _is_cancelled(e) or isinstance(e, OSError):
                raise self._lost() from e
            raise ExecutionError(f"the dask cluster failed the query: {_dask_failure(e)}") from e
        finally:
            # the results are here (or the query failed): the cluster forgets them now, not
            # when the garbage collector happens to break a cycle holding these futures
            # (an idle Context kept a finished query's 480 MiB of results on each worker)
            for f in futures or ():
                try:
                    f.release()
                except Exception:  # noqa: BLE001 - a lost client forgets them anyway
                    pass
            del futures
            if watched and self._connected():
                try:
                    self._scheduler_call(_unwatch, qid, all_keys, timeout=5.0)
                except Exception:  # noqa: BLE001 - the watch is forgotten with the scheduler
                    pass
            self._after(qid, token)

    def _pieces_lost(self, graph: dict, wait: float = 2.0) -> bool:
        """Whether a placed piece the graph reads is gone (its worker died). The client
        hears of it shortly after the query's own failure, so this waits a little."""
        futures = _placed_futures(graph)
        deadline = time.monotonic() + wait
        while futures:
            if any(f.status != "finished" for f in futures):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self.placed.close()

    def _after(self, qid: str, token) -> None:
        """Collect per-partition statistics and remove exchange files on the workers."""
        from . import diagnostics, exchange

        if not self._connected():
            return
        try:
            fns = [exchange.remove_query]
            if token is not None and getattr(token, "collecting", False):
                out = self.client.run(diagnostics.collect, qid, on_error="ignore")
                for entries in out.values():
                    token.merge(entries)
            self.client.run(fns[0], qid, on_error="ignore")
        except Exception:  # noqa: BLE001 - best effort after the query
            pass

    def _cancel(self, futures, qid: str | None = None, reason: str = "cancelled") -> None:
        """Cancel the futures (tasks not started never run) and tell every worker, whose
        running tasks stop at their next op, chunk or user-function batch (a cancelled
        future's running task otherwise runs to its end, and the next query waits)."""
        if futures is None:
            return
        try:
            if self._connected():
                self.client.cancel(futures)
                if qid is not None:
                    from .ops import cancel_on_worker

                    self.client.run(cancel_on_worker, qid, reason, wait=False)
        except Exception:  # noqa: BLE001
            pass

    def _wait(self, futures, qid, token, progress, total, watched, stall) -> int:
        """Wait for `futures`, reporting progress and watching for a stalled or lost
        cluster; returns the progress reported."""
        from distributed import TimeoutError as DaskTimeout, wait

        reported = 0
        last_done = -1
        last_change = time.monotonic()
        no_workers_since = None
        next_poll = time.monotonic()
        while True:
            try:
                # (wait() asks for the default client: this Context's, not another one's,
                # or none when the Client was made with set_as_default=False)
                with self.client.as_current():
                    wait(futures, timeout=0.1)
                return reported
            except (DaskTimeout, TimeoutError) as e:
                # (its traceback holds dask's sync frame, whose closure holds the error: a
                # cycle that kept this query's frames, and the graph with the futures of
                # placed tables, alive until the garbage collector ran)
                e.__traceback__ = None
            if token is not None and token.reason is not None:
                self._cancel(futures, qid, token.reason)
                raise QueryCancelled(token.reason)
            now = time.monotonic()
            if not self._connected():
                raise self._lost()
            if now < next_poll:
                continue
            next_poll = now + self.poll_interval
            try:
                done, workers = self._scheduler_call(_poll, qid, timeout=10.0)
            except (OSError, TimeoutError) as e:
                if not self._connected():
                    raise self._lost() from e
                continue
            if not watched:
                done = sum(f.status == "finished" for f in futures)
            if done != last_done:
                last_done, last_change = done, now
                if progress is not None and watched and done > reported:
                    step = min(done, total) - reported
                    if step > 0:
                        progress(step, 0)
                        reported += step
            running = [w for w in workers if w[1] in ("running", "paused")]
            if not running:
                no_workers_since = no_workers_since or now
                if now - no_workers_since > self.no_workers_timeout:
                    raise ExecutionError(
                        f"the dask cluster at {self.address} has had no workers for "
                        f"{self.no_workers_timeout:g} s (all were lost): the query did not "
                        f"finish")
            else:
                no_workers_since = None
            if stall is not None and now - last_change > stall:
                raise ExecutionError(
                    f"no task of the query finished in {stall:g} s on the dask cluster at "
                    f"{self.address} ({_describe_workers(workers)}): raise memory_limit, add "
                    f"workers, or raise stall_timeout")


def _is_cancelled(e: BaseException) -> bool:
    import asyncio
    import concurrent.futures

    return isinstance(e, (asyncio.CancelledError, concurrent.futures.CancelledError)) or \
        type(e).__name__ in ("FuturesCancelledError", "FutureCancelledError", "CancelledError")


__all__ = ["ClusterRunner", "PlacedDataLost", "PlacedTables", "WorkerSupport", "ProgressWatch",
           "check_versions", "compare_versions", "versions", "operator_of", "release_memory",
           "configure_memory_pool", "InternalError"]
