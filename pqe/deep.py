"""Deep statements without Python's recursion limit: parsing, binding, optimizing, planning
and lowering run on a thread with a large stack and a raised recursion limit.

sqlglot, the binder, the optimizer rules and the planner walk trees recursively, and a
statement can be a deep tree: 5,000 UNION ALL branches, a 10,000-term sum, parentheses nested
1,000 deep. Rewriting every walk as a loop would touch every module; instead these phases run
where the stack is large (`STACK_BYTES`, virtual memory only) and the limit high
(`RECURSION_LIMIT`). A statement deeper than that fails with one clear error instead of a
RecursionError traceback or a crashed process.
"""

from __future__ import annotations

import contextlib
import contextvars
import gc
import itertools
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from .errors import Error, SQLSyntaxError

T = TypeVar("T")

STACK_BYTES = 512 << 20
RECURSION_LIMIT = 150_000
_local = threading.local()
_lock = threading.Lock()
_active = 0
_saved_limit = sys.getrecursionlimit()
# Planning allocates millions of small objects that live for one statement (sqlglot trees,
# plan nodes, expressions): with Python's default 700 allocations between young collections,
# the collector took 13% of planning TPC-DS's 99 queries (2.0 s -> 1.75 s with it off). While
# a statement is planned (run_deep: parsing, binding, optimizing, physical planning, and the
# statements run there), a young collection waits for this many allocations instead: the
# garbage is still collected (planning's cycles, sqlglot's parent links, too), only in fewer,
# larger sweeps (2.05 -> 1.86 s). Running a query's tasks keeps the process's own setting.
PLAN_GC_THRESHOLD = 10_000
_gc_lock = threading.Lock()
_planning = 0
_saved_gc: tuple[int, ...] = gc.get_threshold()
MAX_IDLE = 4  # deep threads kept for the next statements
_idle: list = []
_idle_lock = threading.Lock()
_names = itertools.count(1)


def plan_until(deadline: float | None, cancel=None):
    """While planning on this thread, `checkpoint()` raises QueryTimeout past `deadline` (a
    time.monotonic() value) and QueryCancelled once `cancel` is set: a query's timeout
    covered only its execution, and a crafted query planned for minutes (14 nested
    `x IN (SELECT ...)` CTEs: 27 s under timeout=5)."""
    return _Planning(deadline, cancel)


class _Planning:
    def __init__(self, deadline, cancel):
        self.deadline, self.cancel = deadline, cancel

    def __enter__(self):
        self.saved = getattr(_local, "plan_limits", None)
        _local.plan_limits = (self.deadline, self.cancel) \
            if self.deadline is not None or self.cancel is not None else None
        return self

    def __exit__(self, *exc):
        _local.plan_limits = self.saved


def checkpoint() -> None:
    """Called by the planner's tree walks (plan.logical.walk_plan, transform_up): stop a
    statement whose timeout passed or that was cancelled while it is still being planned."""
    limits = getattr(_local, "plan_limits", None)
    if limits is None:
        return
    deadline, cancel = limits
    if deadline is not None and time.monotonic() > deadline:
        from .errors import QueryTimeout

        raise QueryTimeout("the query did not finish planning within its timeout")
    if cancel is not None and cancel.is_set():
        from .errors import QueryCancelled

        raise QueryCancelled("the query was cancelled while it was planned")


class TooDeepError(SQLSyntaxError):
    """A statement nested deeper than pqe's documented limit."""

    def __init__(self, message: str = "statement nested too deeply (more than about "
                                      f"{RECURSION_LIMIT // 30:,} levels of nesting)"):
        super().__init__(message)


def _enter() -> None:
    global _active, _saved_limit
    with _lock:
        if _active == 0:
            _saved_limit = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_saved_limit, RECURSION_LIMIT))
        _active += 1


def _leave() -> None:
    global _active
    with _lock:
        _active -= 1
        if _active == 0:
            sys.setrecursionlimit(_saved_limit)


@contextlib.contextmanager
def _planning_gc():
    """The young-collection threshold raised while any statement is planned (counted, so
    concurrent plans restore the process's own thresholds when the last one is done)."""
    global _planning, _saved_gc
    with _gc_lock:
        if _planning == 0:
            _saved_gc = gc.get_threshold()
            if 0 < _saved_gc[0] < PLAN_GC_THRESHOLD:
                gc.set_threshold(PLAN_GC_THRESHOLD, *_saved_gc[1:])
        _planning += 1
    try:
        yield
    finally:
        with _gc_lock:
            _planning -= 1
            if _planning == 0 and gc.get_threshold()[0] == PLAN_GC_THRESHOLD != _saved_gc[0]:
                # (gen0 only: older generations' thresholds set meanwhile stay)
                gc.set_threshold(_saved_gc[0], *gc.get_threshold()[1:])


def in_deep_thread() -> bool:
    return getattr(_local, "deep", False)


def in_nested_query() -> bool:
    """Whether this thread runs a task of a query (execution.scheduler marks its pool's
    threads) or a statement or job started from one (a user function's own query: the marks
    follow it onto the deep threads it runs on). Such a query must not wait for what the
    query running the task may hold: the task pool's threads, the write lock."""
    return getattr(_local, "nested", False)


def set_nested(value: bool) -> None:
    """Mark this thread as `in_nested_query` (or no longer)."""
    _local.nested = value


class _Worker:
    """A deep thread that runs jobs one after another (starting a thread with a 512 MiB stack
    for every phase of every statement cost about 1 ms each, four times per query)."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        with _lock:
            old = threading.stack_size(STACK_BYTES)
            try:
                thread = threading.Thread(target=self._loop, name=f"pqe-deep-{next(_names)}",
                                          daemon=True)
                thread.start()
            finally:
                threading.stack_size(old)

    def _loop(self) -> None:
        _local.deep = True
        while True:
            job = self.jobs.get()
            _enter()
            try:
                # jobs hand their own errors to their callers; nothing may end the worker
                with contextlib.suppress(BaseException):
                    job()
            finally:
                _leave()
                job = None  # it would keep its result alive until the next job
            with _idle_lock:
                if len(_idle) >= MAX_IDLE:
                    return
                _idle.append(self)


def start_deep_thread(target: Callable[[], None], name: str = "") -> None:
    """Run `target` on a deep thread (large stack, raised recursion limit): an idle one of
    the pool, or a new one when all are busy (a query that timed out may still be stopping).
    `target` runs in a copy of the caller's context variables: the access policy the caller
    enforces (pqe.access) holds there too. `ctx.table("v")` bound a view's SQL on a deep
    thread without it, as trusted code: a view over a file the policy refuses read it."""
    context = contextvars.copy_context()
    with _idle_lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _Worker()
    worker.jobs.put(lambda: context.run(target))


def _forget_workers() -> None:
    """A forked child has none of the parent's threads, nor the statements they were
    planning or running; a lock one of them held at the fork would stay held."""
    global _planning, _active, _lock, _gc_lock, _idle_lock
    _lock, _gc_lock, _idle_lock = threading.Lock(), threading.Lock(), threading.Lock()
    _idle.clear()
    _local.nested = False  # (forked from a task: the child's thread runs none)
    if _active:  # the recursion limit raised for them
        _active = 0
        sys.setrecursionlimit(_saved_limit)
    if _planning:
        _planning = 0
        if gc.get_threshold()[0] == PLAN_GC_THRESHOLD != _saved_gc[0]:
            gc.set_threshold(_saved_gc[0], *gc.get_threshold()[1:])


# How long a caller interrupted by Ctrl-C waits for the statement it cancelled to stop (it
# stops at its next check: a task, a planner walk, the commit). A second Ctrl-C ends the wait.
STOP_WAIT = 10.0


def run_deep(fn: Callable[..., T], *args, on_interrupt: Callable[[], None] | None = None,
             **kwargs) -> T:
    """`fn(*args, **kwargs)` on a deep thread (or right here when already on one). The caller
    waits in short timed waits, so Ctrl-C is seen at once: `on_interrupt` is then called
    (to cancel what `fn` runs), the caller waits for `fn` to stop (`wait_stopped`), and
    KeyboardInterrupt is raised. Raised at once, a write went on and committed after its
    caller was told it was interrupted."""
    if in_deep_thread():
        with _planning_gc():
            return _guarded(fn, args, kwargs)
    box: dict = {}
    done = threading.Event()
    limits = getattr(_local, "plan_limits", None)  # (the caller's timeout, on the deep thread)
    nested = in_nested_query()

    def target() -> None:
        _local.nested = nested
        try:
            with _planning_gc(), _Planning(*(limits or (None, None))):
                box["value"] = _guarded(fn, args, kwargs)
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            box["error"] = e
        finally:
            _local.nested = False
            done.set()

    start_deep_thread(target, "pqe-plan")
    try:
        while not done.wait(0.05):
            pass
    except KeyboardInterrupt:
        if on_interrupt is not None:
            on_interrupt()
            wait_stopped(done)
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def wait_stopped(done: threading.Event, limit: float | None = None) -> bool:
    """After a statement's caller was interrupted and cancelled it: wait (at most `limit`
    seconds, STOP_WAIT by default; a second Ctrl-C ends the wait) until the thread running
    it has finished, so that nothing of it happens after the caller is told it was stopped.
    (Should it still be running then, its writes check the cancellation at their commit and
    change nothing.) Whether it finished."""
    deadline = time.monotonic() + (STOP_WAIT if limit is None else limit)
    try:
        while not done.wait(0.05):
            if time.monotonic() >= deadline:
                return False
    except KeyboardInterrupt:
        return done.is_set()
    return True


def _guarded(fn, args, kwargs):
    try:
        return fn(*args, **kwargs)
    except RecursionError:
        raise TooDeepError() from None
    except MemoryError:
        raise Error("statement too large to plan: out of memory") from None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


class AnyEvent:
    """Set when any of its events is (a caller's `cancel` or an interrupt)."""

    def __init__(self, *events) -> None:
        self._events = [e for e in events if e is not None]

    def is_set(self) -> bool:
        return any(e.is_set() for e in self._events)


__all__ = ["AnyEvent", "run_deep", "wait_stopped", "in_nested_query", "set_nested",
           "start_deep_thread", "in_deep_thread", "TooDeepError", "STACK_BYTES",
           "RECURSION_LIMIT"]
