"""A progress bar for queries that run longer than a second, on a terminal only.

pqe runs graphs with `dask.threaded.get` (or `dask.local.get_sync`), which call every active
`dask.callbacks.Callback`: `_start_state` sees the whole graph (the task total) and
`_posttask` runs once per finished task. A query may run several graphs (a subquery first),
so totals add up across graphs instead of restarting. The bar appears only after `delay`
seconds, so quick queries print nothing extra, and it is transient: it vanishes when the query
ends. On a dask.distributed cluster the callbacks never fire (the client runs the graph), so no
bar is shown there yet.
"""

from __future__ import annotations

import threading
from typing import Any, TextIO

from dask.callbacks import Callback
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class QueryProgress(Callback):
    """Use as `with QueryProgress(stream): df.to_arrow()`."""

    def __init__(self, stream: TextIO, delay: float = 1.0, enabled: bool = True):
        super().__init__()
        self.enabled = enabled and stream.isatty()
        self.delay = delay
        self.total = 0
        self.done = 0
        self._stream = stream
        self._lock = threading.Lock()
        self._progress: Progress | None = None
        self._task: Any = None
        self._timer: threading.Timer | None = None

    # ---- dask callbacks (run on the thread that called get, or a worker for _posttask) ------

    def _start_state(self, dsk: Any, state: dict) -> None:
        with self._lock:
            self.total += sum(len(state[k]) for k in ("ready", "waiting", "running", "finished"))
            self._refresh()

    def _posttask(self, key: Any, result: Any, dsk: Any, state: dict, worker_id: Any) -> None:
        with self._lock:
            self.done += 1
            self._refresh()

    # ---- the bar ---------------------------------------------------------------------------

    def _refresh(self) -> None:
        if self._progress is not None:
            self._progress.update(self._task, total=max(self.total, 1), completed=self.done)

    def _show(self) -> None:
        with self._lock:
            if not self.enabled or self._timer is None:
                return
            console = Console(file=self._stream, highlight=False)
            self._progress = Progress(TextColumn("[dim]running"), BarColumn(),
                                      MofNCompleteColumn(), TextColumn("[dim]tasks"),
                                      TimeElapsedColumn(), console=console, transient=True)
            self._task = self._progress.add_task("query", total=max(self.total, 1),
                                                 completed=self.done)
            self._progress.start()

    def __enter__(self) -> QueryProgress:
        super().__enter__()
        if self.enabled:
            self._timer = threading.Timer(self.delay, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            with self._lock:
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
                if self._progress is not None:
                    self._progress.stop()
                    self._progress = None
        finally:
            super().__exit__(*exc)
