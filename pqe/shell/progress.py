"""Running one query from the shell: a progress bar after a second, and prompt Ctrl-C.

Progress: the engine calls `progress(done, total)` with task-count deltas as graphs start and
tasks finish (`DataFrame.to_arrow(progress=...)`, `SessionState.sql(progress=...)`); a query
may run several graphs (a recursive CTE's iterations, a statement's query), so totals add up.
The bar shows only on a terminal and only after `delay` seconds, so quick queries print
nothing extra, and it is transient. Until the engine has reported a task count (a scheduler
that does not report progress, such as a dask.distributed cluster on engines that do not
count its tasks), a spinner and the elapsed time show instead of an empty "0/1" bar; the bar
takes over as soon as counts arrive.

Cancelling: the query runs on a helper thread while the main thread waits in short timed
waits, so Ctrl-C is seen within 0.1 s. The query's `cancel` event is then set: the engine
stops its graph at the next task (tasks already running finish in the background) and a
write stops before it commits; once the statement has stopped, KeyboardInterrupt is raised
and the session goes on.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TextIO, TypeVar

from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
)
from rich.table import Table
from rich.text import Text

from ..deep import wait_stopped

T = TypeVar("T")


class _QueryColumn(ProgressColumn):
    """`running ━━━━━━━━━━━━ 12/40 tasks 0:00:03` once the task count is known; before that
    `⠋ running 0:00:03`."""

    def __init__(self, started: float) -> None:
        super().__init__()
        self._spinner = SpinnerColumn(style="dim")
        self._bar = BarColumn()
        self._counts = MofNCompleteColumn()
        self._started = started  # the query's start (the display appears later)

    def render(self, task: Task) -> RenderableType:
        grid = Table.grid(padding=(0, 1))
        if task.total:
            cells = [Text("running", style="dim"), self._bar.render(task),
                     self._counts.render(task), Text("tasks", style="dim")]
        else:
            cells = [self._spinner.render(task), Text("running", style="dim")]
        elapsed = timedelta(seconds=int(time.monotonic() - self._started))
        grid.add_row(*cells, Text(str(elapsed), style="progress.elapsed"))
        return grid


class QueryMonitor:
    """Counts the tasks of one query (from the engine's progress callback) and draws the
    bar."""

    def __init__(self, stream: TextIO, delay: float = 1.0, enabled: bool = True):
        self.enabled = enabled and stream.isatty()
        self.delay = delay
        self.total = 0
        self.done = 0
        self.cancelled = threading.Event()
        self._stream = stream
        self._lock = threading.Lock()
        self._progress: Progress | None = None
        self._task: Any = None
        self._timer: threading.Timer | None = None
        self._started = time.monotonic()

    def update(self, done: int, total: int) -> None:
        """The engine's progress callback: task-count deltas."""
        with self._lock:
            self.done += done
            self.total += total
            self._refresh()

    # ---- the bar ---------------------------------------------------------------------------

    def _refresh(self) -> None:
        if self._progress is not None:
            # total None: nothing reported yet (the spinner shows instead of the bar)
            self._progress.update(self._task, total=self.total or None, completed=self.done)

    def _show(self) -> None:
        with self._lock:
            if self._timer is None:
                return
            console = Console(file=self._stream, highlight=False)
            self._progress = Progress(_QueryColumn(self._started), console=console, transient=True)
            self._task = self._progress.add_task("query", total=self.total or None,
                                                 completed=self.done)
            self._progress.start()

    def text(self) -> str:
        """What the display shows now, as plain text ("" before it appears)."""
        with self._lock:
            if self._progress is None:
                return ""
            console = Console(width=100, color_system=None, force_terminal=False)
            with console.capture() as capture:
                console.print(self._progress.get_renderable())
            return capture.get().rstrip()

    def start_display(self) -> None:
        self._started = time.monotonic()
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


def run_query(fn: Callable[[threading.Event, Callable[[int, int], None]], T], stream: TextIO,
              progress: bool = True, delay: float = 1.0) -> T:
    """`fn(cancel, progress)` (which runs a query) with a progress bar on `stream`; Ctrl-C
    sets `cancel`, which stops the query at its next check, and raises KeyboardInterrupt here
    once it has stopped."""
    monitor = QueryMonitor(stream, delay, enabled=progress)
    outcome: dict[str, Any] = {}
    finished = threading.Event()

    def target() -> None:
        try:
            outcome["value"] = fn(monitor.cancelled, monitor.update)
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
        # the statement stops at its next check; until it has, it could still commit (the
        # shell said "cancelled" and the INSERT's row appeared half a second later)
        wait_stopped(finished)
        raise
    finally:
        monitor.stop_display()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
