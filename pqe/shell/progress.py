"""Running one query from the shell: a progress bar after a second, and prompt Ctrl-C.

Progress: pqe runs graphs with `dask.threaded.get` (or `dask.local.get_sync`), which call every
active `dask.callbacks.Callback`: `_start_state` sees a graph's task count and `_posttask` runs
once per finished task. A query may run several graphs (a subquery first), so totals add up.
The bar shows only on a terminal and only after `delay` seconds, so quick queries print nothing
extra, and it is transient. On a dask.distributed cluster the callbacks never fire (the
scheduler runs the graph), so no bar is shown there yet.

Cancelling: the query runs on a helper thread while the main thread waits in short timed
waits. A process-wide SIGINT may be delivered to any thread; if the main thread sat in dask's
untimed `queue.get()` it would not notice until the running task finished, which for one big
join task is many seconds. With timed waits KeyboardInterrupt is raised within 0.1 s. The
cancelled graph is then stopped at its next finished task (the callback raises in dask's
loop), so no new tasks start; tasks already running finish in the background. (When the
engine's own `to_arrow` reliably raises KeyboardInterrupt promptly on the main thread, the
helper thread here can go; the monitor would then only draw the bar.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TextIO, TypeVar

from dask.callbacks import Callback
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

T = TypeVar("T")


class QueryCancelled(Exception):
    """Raised inside dask's scheduling loop to stop a graph whose query was cancelled."""


class QueryMonitor(Callback):
    """Counts the tasks of its query's graphs, draws the bar, and stops those graphs once
    cancelled.

    dask's callbacks are global, so a graph of some other query (a cancelled one still winding
    down on another thread) can reach this monitor. A graph is taken as this query's when it
    starts while the query is live; after cancelling, the monitor stops only graphs it had
    taken and ignores new ones, so it can never break a later query."""

    def __init__(self, stream: TextIO, delay: float = 1.0, enabled: bool = True):
        super().__init__()
        self.enabled = enabled and stream.isatty()
        self.delay = delay
        self.total = 0
        self.done = 0
        self.cancelled = threading.Event()
        self._graphs: set[int] = set()  # id() of the scheduler state of each running graph
        self._stream = stream
        self._lock = threading.Lock()
        self._progress: Progress | None = None
        self._task: Any = None
        self._timer: threading.Timer | None = None

    # ---- dask callbacks (on the thread running dask's scheduling loop) ---------------------

    def _start_state(self, dsk: Any, state: dict) -> None:
        if self.cancelled.is_set():
            return
        with self._lock:
            self._graphs.add(id(state))
            self.total += sum(len(state[k]) for k in ("ready", "waiting", "running", "finished"))
            self._refresh()

    def _posttask(self, key: Any, result: Any, dsk: Any, state: dict, worker_id: Any) -> None:
        if id(state) not in self._graphs:
            return
        if self.cancelled.is_set():
            raise QueryCancelled()
        with self._lock:
            self.done += 1
            self._refresh()

    def _finish(self, dsk: Any, state: dict, errored: bool) -> None:
        self._graphs.discard(id(state))  # ids are only unique while the graph is alive

    # ---- the bar ---------------------------------------------------------------------------

    def _refresh(self) -> None:
        if self._progress is not None:
            self._progress.update(self._task, total=max(self.total, 1), completed=self.done)

    def _show(self) -> None:
        with self._lock:
            if self._timer is None:
                return
            console = Console(file=self._stream, highlight=False)
            self._progress = Progress(TextColumn("[dim]running"), BarColumn(),
                                      MofNCompleteColumn(), TextColumn("[dim]tasks"),
                                      TimeElapsedColumn(), console=console, transient=True)
            self._task = self._progress.add_task("query", total=max(self.total, 1),
                                                 completed=self.done)
            self._progress.start()

    def start_display(self) -> None:
        if self.enabled:
            self._timer = threading.Timer(self.delay, self._show)
            self._timer.daemon = True
            self._timer.start()

    def stop_display(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._progress is not None:
                self._progress.stop()
                self._progress = None


def run_query(fn: Callable[[], T], stream: TextIO, progress: bool = True,
              delay: float = 1.0) -> T:
    """`fn()` (which runs a query) with a progress bar on `stream`; Ctrl-C raises
    KeyboardInterrupt here promptly and stops the query's graph."""
    monitor = QueryMonitor(stream, delay, enabled=progress)
    outcome: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            with monitor:
                outcome["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = e
        finally:
            finished.set()

    worker = threading.Thread(target=target, name="pqe-shell-query", daemon=True)
    monitor.start_display()
    try:
        worker.start()
        while not finished.wait(0.1):
            pass
    except KeyboardInterrupt:
        monitor.cancelled.set()
        raise
    finally:
        monitor.stop_display()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
