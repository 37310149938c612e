"""Every statement is atomic and isolated: concurrent writers on one Context (or one DB-API
connection) never lose a row, readers see a consistent snapshot, and a failed statement
leaves nothing behind. Final states are checked against a serial replay."""

from __future__ import annotations

import random
import threading

import pytest

import pqe

THREADS = 4


def _run_threads(target, n=THREADS):
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def wrap(k):
        try:
            barrier.wait()
            target(k)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)


def _count(ctx, sql):
    return ctx.sql(sql).to_arrow().column(0)[0].as_py()


def test_concurrent_inserts_lose_nothing():
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE c(v BIGINT)")
    per = 150

    def work(k):
        for i in range(per):
            ctx.sql("INSERT INTO c VALUES (?)", [k * 1_000_000 + i])

    _run_threads(work)
    assert _count(ctx, "SELECT count(*) FROM c") == THREADS * per
    assert _count(ctx, "SELECT count(DISTINCT v) FROM c") == THREADS * per
    expected = sum(k * 1_000_000 + i for k in range(THREADS) for i in range(per))
    assert _count(ctx, "SELECT sum(v) FROM c") == expected


def test_concurrent_updates_are_serialized():
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE acc(id INT, bal BIGINT)")
    ctx.sql("INSERT INTO acc VALUES (1, 0), (2, 0)")

    def work(k):
        for _ in range(100):
            ctx.sql("UPDATE acc SET bal = bal + 1 WHERE id = 1")

    _run_threads(work)
    assert _count(ctx, "SELECT bal FROM acc WHERE id = 1") == THREADS * 100


def test_dbapi_executemany_from_two_threads():
    conn = pqe.connect()
    conn.cursor().execute("CREATE TABLE m(a INT, b VARCHAR)")

    def work(k):
        cur = conn.cursor()  # cursors are per thread; the connection is shared
        cur.executemany("INSERT INTO m VALUES (?, ?)", [(k * 1000 + i, f"t{k}") for i in range(100)])
        assert cur.rowcount == 100

    _run_threads(work, 2)
    cur = conn.cursor()
    cur.execute("SELECT b, count(*) FROM m GROUP BY b ORDER BY b")
    assert cur.fetchall() == [("t0", 100), ("t1", 100)]


def test_readers_see_a_consistent_snapshot():
    """Transfers between accounts in single UPDATE statements keep the total constant; readers
    running at the same time must always see that total."""
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE acct(id INT, bal BIGINT)")
    ctx.sql("INSERT INTO acct SELECT i, 100 FROM (VALUES (0),(1),(2),(3),(4),(5),(6),(7)) v(i)")
    stop = threading.Event()
    seen: list[int] = []

    def reader():
        while not stop.is_set():
            seen.append(_count(ctx, "SELECT sum(bal) FROM acct"))

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in readers:
        t.start()

    def work(k):
        rng = random.Random(k)
        for _ in range(60):
            a, b = rng.sample(range(8), 2)
            ctx.sql("UPDATE acct SET bal = CASE WHEN id = ? THEN bal - 5 WHEN id = ? THEN bal + 5 "
                    "ELSE bal END WHERE id IN (?, ?)", [a, b, a, b])

    try:
        _run_threads(work)
    finally:
        stop.set()
        for t in readers:
            t.join(60)
    assert seen and set(seen) == {800}
    assert _count(ctx, "SELECT sum(bal) FROM acct") == 800


def _ops(k: int, n: int):
    """Thread k's statements: they touch only rows it owns, so any interleaving must end in
    the state of running the threads one after another."""
    rng = random.Random(100 + k)
    out = []
    for i in range(n):
        r = rng.random()
        key = k * 10_000 + rng.randrange(40)
        if r < 0.5:
            out.append(("INSERT INTO s VALUES (?, ?, ?)", [key, k, rng.randrange(1000)]))
        elif r < 0.75:
            out.append(("UPDATE s SET v = v * 2 + 1 WHERE owner = ? AND id % 3 = ?",
                        [k, rng.randrange(3)]))
        elif r < 0.9:
            out.append(("DELETE FROM s WHERE owner = ? AND id = ?", [k, key]))
        else:
            out.append(("SELECT count(*) FROM s WHERE owner = ?", [k]))
    return out


@pytest.mark.parametrize("via", ["context", "dbapi"])
def test_mixed_writers_match_a_serial_replay(via):
    n = 120
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE s(id BIGINT, owner INT, v BIGINT)")
    conn = pqe.connect(context=ctx)

    def work(k):
        cur = conn.cursor()
        for sql, params in _ops(k, n):
            if via == "context":
                ctx.sql(sql, params).to_arrow()
            else:
                cur.execute(sql, params)
                if sql.startswith("SELECT"):
                    cur.fetchall()

    _run_threads(work)
    replay = pqe.Context(scheduler="sync")
    replay.sql("CREATE TABLE s(id BIGINT, owner INT, v BIGINT)")
    for k in range(THREADS):
        for sql, params in _ops(k, n):
            replay.sql(sql, params).to_arrow()
    q = "SELECT id, owner, v FROM s ORDER BY id, owner, v"
    got, want = ctx.sql(q).to_arrow(), replay.sql(q).to_arrow()
    assert want.num_rows > 50
    assert got.equals(want)


def test_a_failed_statement_leaves_nothing_behind():
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE f(a INT NOT NULL, b INT PRIMARY KEY)")
    ctx.sql("INSERT INTO f VALUES (1, 1)")
    with pytest.raises(pqe.ConstraintError):
        ctx.sql("INSERT INTO f VALUES (2, 2), (NULL, 3)")
    with pytest.raises(pqe.ConstraintError):
        ctx.sql("INSERT INTO f VALUES (2, 2), (3, 1)")
    with pytest.raises(pqe.ConstraintError):
        ctx.sql("UPDATE f SET a = NULL")
    with pytest.raises(pqe.Error):
        ctx.sql("INSERT INTO f SELECT 1 / 0 + 'x', 9")
    assert ctx.sql("SELECT * FROM f").to_pylist() == [{"a": 1, "b": 1}]
