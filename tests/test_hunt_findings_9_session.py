"""From the eleventh session's cancellation/threads hunt: a write interrupted by Ctrl-C (or
cancelled) never commits after its caller was told it stopped; a Context used before
os.fork() answers in the child; a query started inside a user function or a map_batches
function of a running query runs (it deadlocked on the shared task pool), and the
interpreter exits even while a timed-out user function is still stuck."""
from __future__ import annotations

import io
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pyarrow as pa
import pytest

import pqe
import pqe.session.state as state_module
import pqe.session.writes as writes

# ---- 1. no write commits once it is cancelled or interrupted ------------------------------


@pytest.fixture()
def ctx():
    c = pqe.Context(partitions=2)
    c.register_arrow("src", pa.table({"x": pa.array(range(10), pa.int64())}))
    c.sql("create table t(k bigint primary key, v bigint)")
    c.sql("insert into t values (1, 10), (2, 20)")
    yield c
    c.close()


def _state(c, path=None):
    """What a write could have changed: the catalog's names, t's rows, a file's existence."""
    names = sorted(c.tables())
    rows = c.sql("select * from t order by k").to_pylist() if "t" in names else None
    return names, rows, (os.path.exists(path) if path else None)


@pytest.mark.parametrize("sql,when", [
    ("insert into t values (-1, 0)", "conform"),  # constant VALUES: no query runs
    ("insert into t select x + 100, x from src", "run"),
    ("insert into t values (1, 0) on conflict (k) do update set v = excluded.v", "run"),
    ("update t set v = v + 1 where k = 1", "run"),
    ("delete from t where k = 1", "run"),
    ("create table t2 as select * from src", "run"),
    ("create view v2 as select 1 as one", "execute"),
    ("drop table t", "execute"),
    ("copy (select * from src) to '{path}' (format parquet)", "run"),
])
def test_a_write_cancelled_before_its_commit_changes_nothing(ctx, monkeypatch, tmp_path, sql,
                                                             when):
    """The cancel event is set after the statement's query ran (or, for DDL, once it
    holds the write lock), before it commits: it raises QueryCancelled and changes nothing.
    (Only the query's run checked cancellation: the INSERT, UPDATE, COPY ... committed.)"""
    path = str(tmp_path / "out.parquet")
    sql = sql.format(path=path)
    before = _state(ctx, path)
    cancel = threading.Event()
    if when == "conform":
        real_conform = writes.conform

        def hooked(*a, **k):
            out = real_conform(*a, **k)
            cancel.set()
            return out
        monkeypatch.setattr(writes, "conform", hooked)
    elif when == "run":
        real_run = state_module.SessionState.run

        def hooked(self, *a, **k):
            out = real_run(self, *a, **k)
            cancel.set()
            return out
        monkeypatch.setattr(state_module.SessionState, "run", hooked)
    else:
        real_execute = writes.execute

        def hooked(session, stmt, run):
            cancel.set()
            return real_execute(session, stmt, run)
        monkeypatch.setattr(writes, "execute", hooked)
    with pytest.raises(pqe.QueryCancelled, match="cancelled"):
        ctx.sql(sql, cancel=cancel)
    monkeypatch.undo()
    assert _state(ctx, path) == before
    assert ctx.sql("insert into t values (7, 70)").to_pylist() == [{"count": 1}]


@pytest.fixture()
def sigint_raises():
    """SIGINT raises KeyboardInterrupt here even if pytest inherited it ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def _interrupt_inside_the_write(monkeypatch):
    """While the write statement runs (bound, holding the write lock): a real SIGINT to the
    process, then the statement goes on once its caller has cancelled it. Returns the event
    set when the statement's thread is done with it."""
    finished = threading.Event()
    real_execute = writes.execute

    def hooked(session, stmt, run):
        try:
            os.kill(os.getpid(), signal.SIGINT)  # the main thread raises KeyboardInterrupt
            deadline = time.monotonic() + 60
            while not run["cancel"].is_set() and time.monotonic() < deadline:
                time.sleep(0.01)
            return real_execute(session, stmt, run)
        finally:
            finished.set()
    monkeypatch.setattr(writes, "execute", hooked)
    return finished


def _run_in_shell(c, sql):
    from pqe.shell.app import Shell
    from pqe.shell.render import Renderer

    Shell(c, Renderer(io.StringIO()), io.StringIO(), progress=False).query(sql)


@pytest.mark.parametrize("how", ["ctx.sql", "cursor.execute", "shell"])
def test_ctrl_c_during_a_write_rolls_it_back(ctx, monkeypatch, sigint_raises, how):
    """Ctrl-C during `insert into t values (-1, 0)`: KeyboardInterrupt, and the row never
    appears. The caller returned at once while the statement went on in the background
    and committed (count 0, then 1 half a second later); now the caller waits for it to
    stop, and it stops before its commit."""
    finished = _interrupt_inside_the_write(monkeypatch)
    sql = "insert into t values (-1, 0)"
    with pytest.raises(KeyboardInterrupt):
        if how == "ctx.sql":
            ctx.sql(sql)
        elif how == "cursor.execute":
            pqe.connect(ctx).cursor().execute(sql)
        else:
            _run_in_shell(ctx, sql)
    stopped_when_told = finished.is_set()
    assert finished.wait(60)
    monkeypatch.undo()
    assert ctx.sql("select count(*) as n from t where k = -1").to_pylist() == [{"n": 0}]
    assert stopped_when_told, "the statement was still running when KeyboardInterrupt came"
    assert ctx.sql("select count(*) as n from t").to_pylist() == [{"n": 2}]


def test_ctrl_c_on_a_slow_primary_key_insert(monkeypatch, sigint_raises):
    """The hunt's case, with margins: a 1-row INSERT into a table with a big PRIMARY KEY
    (its key check takes a while), SIGINT shortly after it starts. Whatever moment the
    signal lands in, after KeyboardInterrupt the row is not there, and does not appear."""
    c = pqe.Context()
    c.register_arrow("src", pa.table({"x": pa.array(range(1_000_000), pa.int64())}))
    c.sql("create table big(k bigint primary key)")
    c.sql("insert into big select x from src")
    started = threading.Event()
    real_check = writes.check_keys

    def check(*a, **k):  # SIGINT while the key check runs (no timing guess)
        if not started.is_set():
            started.set()
            os.kill(os.getpid(), signal.SIGINT)
        return real_check(*a, **k)
    monkeypatch.setattr(writes, "check_keys", check)
    with pytest.raises(KeyboardInterrupt):
        c.sql("insert into big values (-1)")
    monkeypatch.undo()
    assert c.sql("select count(*) as n from big where k = -1").to_pylist() == [{"n": 0}]
    time.sleep(1.0)  # (the ghost write appeared ~0.5 s later)
    assert c.sql("select count(*) as n from big where k = -1").to_pylist() == [{"n": 0}]
    c.close()


# ---- 2. a Context used before fork() answers in the child ---------------------------------


_FORKED: pqe.Context | None = None


def _query_in_child(_):
    try:
        rows = _FORKED.sql("select sum(x) as s from src", timeout=20).to_pylist()
        _FORKED.sql("insert into t values (3, 30)", timeout=20)
        return rows, _FORKED.sql("select count(*) as n from t", timeout=20).to_pylist()
    except Exception as e:  # noqa: BLE001 - reported to the parent
        return f"{type(e).__name__}: {e}"


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="the platform cannot fork")
def test_a_context_used_before_fork_answers_in_the_child(ctx):
    """The child inherited the Executor's pool object but not its threads (every query
    timed out), and a write lock another thread held at the fork (every write waited)."""
    global _FORKED
    assert ctx.sql("select sum(x) as s from src").to_pylist() == [{"s": 45}]  # pool started
    holding, release = threading.Event(), threading.Event()

    def writer():  # holds the write lock across the fork
        with ctx.session.write_lock:
            holding.set()
            release.wait(60)
    thread = threading.Thread(target=writer)
    thread.start()
    assert holding.wait(60)
    _FORKED = ctx
    try:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            answer = pool.apply_async(_query_in_child, (0,)).get(timeout=120)
    finally:
        _FORKED = None
        release.set()
        thread.join(60)
    assert answer == ([{"s": 45}], [{"n": 3}])
    assert ctx.sql("select count(*) as n from t").to_pylist() == [{"n": 2}]  # the parent's


# ---- 3. a query inside a user function or map_batches function ----------------------------


def _run_script(body: str, timeout: float = 120) -> str:
    """Run `body` in a fresh interpreter (the script is `__main__`, so functions pickle by
    reference to it) and return its output; a hang, at run or at exit, fails the test."""
    script = "import pqe, pyarrow as pa, threading\n" + textwrap.dedent(body)
    try:
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail("the script hung (a deadlocked query, or exit joining stuck threads)")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


@pytest.mark.parametrize("scheduler", ["threads", "sync"])
def test_a_user_function_that_queries_its_own_context(scheduler):
    """`lookup(x)` runs `ctx.sql(...)` on the Context running it: on threads the outer
    query's tasks held every thread of the pool, each waiting for its inner query, queued
    for that same pool (QueryTimeout, then the interpreter hung at exit)."""
    out = _run_script(f"""
        ctx = pqe.Context({scheduler!r}, threads=2, partitions=4)
        ctx.register_arrow("src", pa.table({{"x": list(range(1000))}}))
        ctx.register_arrow("dim", pa.table({{"k": [1, 2], "w": [5, 7]}}))
        def lookup(x):
            import __main__
            w = __main__.ctx.sql("select sum(w) as w from dim where k < 2").to_pylist()
            return pa.array([w[0]["w"]] * len(x), pa.int64())
        ctx.register_udf("lookup", lookup, ["BIGINT"], "BIGINT")
        print(ctx.sql("select sum(lookup(x)) as s from src", timeout=60).to_pylist())
    """)
    assert out == "[{'s': Decimal('5000')}]"


def test_a_map_batches_function_that_queries_its_own_context():
    out = _run_script("""
        ctx = pqe.Context(threads=2, partitions=4)
        ctx.register_arrow("src", pa.table({"x": list(range(1000))}))
        def add_total(t):
            import __main__
            n = __main__.ctx.sql("select count(*) as n from src").to_pylist()[0]["n"]
            return t.append_column("n", pa.array([n] * t.num_rows, pa.int64()))
        df = ctx.table("src").map_batches(add_total, {"x": pa.int64(), "n": pa.int64()})
        print(df.to_arrow(timeout=60).group_by("n").aggregate([("x", "count")]).to_pylist())
    """)
    assert out == "[{'n': 1000, 'x_count': 1000}]"


@pytest.mark.parametrize("scheduler", ["threads", "sync"])
def test_a_write_inside_a_user_function_of_a_write_is_refused(scheduler):
    """An INSERT inside a function that an INSERT ... SELECT runs waited for the write lock
    its own statement holds, for ever: it is refused at once."""
    out = _run_script(f"""
        ctx = pqe.Context({scheduler!r}, partitions=2)
        ctx.register_arrow("src", pa.table({{"x": list(range(10))}}))
        ctx.sql("create table t(x bigint)")
        ctx.sql("create table log(x bigint)")
        def logged(x):
            import __main__
            __main__.ctx.sql("insert into log values (1)")
            return x
        ctx.register_udf("logged", logged, ["BIGINT"], "BIGINT")
        try:
            ctx.sql("insert into t select logged(x) from src", timeout=60)
        except pqe.UserFunctionError as e:
            print(e)
        print(ctx.sql("select count(*) as n from t").to_pylist())
    """)
    assert "cannot wait for another write on the same Context" in out
    assert out.endswith("[{'n': 0}]")


def test_the_interpreter_exits_while_a_timed_out_function_is_stuck():
    """A user function that never returns: its query times out, the Context goes on, and
    the process exits (pool threads are daemon threads; exit joined them and hung)."""
    out = _run_script("""
        ctx = pqe.Context(partitions=2)
        ctx.register_arrow("src", pa.table({"x": list(range(10))}))
        def stuck(x):
            import threading
            threading.Event().wait()
            return x
        ctx.register_udf("stuck", stuck, ["BIGINT"], "BIGINT")
        try:
            ctx.sql("select sum(stuck(x)) from src", timeout=1).to_pylist()
        except pqe.QueryTimeout:
            print("timed out")
        print(ctx.sql("select count(*) as n from src").to_pylist())
    """, timeout=60)
    assert out == "timed out\n[{'n': 10}]"
