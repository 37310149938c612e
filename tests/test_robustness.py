"""Bad data, concurrency, cancellation and timeouts."""

from __future__ import annotations

import os
import signal
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import assert_same, duck_arrow, register_tpch, tpch_data, tpch_query

import pqe


# ---- bad data ----------------------------------------------------------------------------------


def test_empty_directory(ctx, tmp_path):
    with pytest.raises(pqe.CatalogError, match="no Parquet files found"):
        ctx.register_parquet("e", str(tmp_path))


def test_corrupt_parquet_file(ctx, tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1" + os.urandom(200) + b"PAR1")
    with pytest.raises(pqe.CatalogError, match="bad.parquet"):
        ctx.register_parquet("bad", str(bad))


def test_truncated_parquet_file(ctx, tmp_path):
    good = tmp_path / "good.parquet"
    pq.write_table(pa.table({"a": list(range(1000))}), good)
    data = good.read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(pqe.CatalogError, match="cut.parquet"):
        ctx.register_parquet("cut", str(cut))


def test_corrupt_data_pages_name_the_file(ctx, tmp_path):
    path = tmp_path / "pages.parquet"
    pq.write_table(pa.table({"a": list(range(50_000))}), path, compression="snappy")
    data = bytearray(path.read_bytes())
    for i in range(100, 3000):  # scribble over the first data page, keep the footer
        data[i] = (data[i] * 7 + 13) % 256
    path.write_bytes(bytes(data))
    ctx.register_parquet("pages", str(path))
    with pytest.raises(pqe.ExecutionError, match="pages.parquet"):
        ctx.sql("select sum(a) from pages").to_arrow()


def test_schema_drift_is_unified_when_safe(ctx, tmp_path):
    d = tmp_path / "drift"
    d.mkdir()
    pq.write_table(pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["x", "y"]}), d / "1.parquet")
    pq.write_table(pa.table({"a": pa.array([3], pa.int64())}), d / "2.parquet")
    ctx.register_parquet("drift", str(d))
    out = ctx.sql("select a, b from drift order by a").to_arrow()
    assert out.column("a").to_pylist() == [1, 2, 3]
    assert out.column("b").to_pylist() == ["x", "y", None]


def test_schema_drift_error_names_files(ctx, tmp_path):
    d = tmp_path / "clash"
    d.mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), d / "1.parquet")
    pq.write_table(pa.table({"a": ["x"]}), d / "2.parquet")
    with pytest.raises(pqe.CatalogError, match=r"disagree on column 'a'.*1\.parquet.*2\.parquet"):
        ctx.register_parquet("clash", str(d))


def test_csv_value_that_does_not_parse(ctx, tmp_path):
    p = tmp_path / "people.csv"
    p.write_text("id,age\n1,30\n2,forty\n")
    # a typed column is converted by CAST when the file is read (as DuckDB's read_csv fails
    # on the query, not before it); it was refused on registration, by Arrow's converter
    ctx.register_csv("people", str(p), schema={"age": "int64"})
    with pytest.raises(pqe.DataValueError, match=r"people\.csv: line 3, column 'age' holds a "
                                                 r"value that is not a valid BIGINT") as e:
        ctx.sql("SELECT * FROM people").to_arrow()
    assert "forty" not in str(e.value)  # errors name the place, never quote file content


def test_division_by_zero_is_null_on_every_scheduler(tmp_path):
    for scheduler in ("sync", "threads"):
        ctx = pqe.Context(scheduler=scheduler, partitions=2)
        ctx.register_arrow("t", pa.table({"a": [1, 2, 3], "b": [0, 1, 0]}))
        out = ctx.sql("select a / b as q, a % b as m, cast(a as double) / b as f from t order by a").to_arrow()
        assert out.to_pylist() == [{"q": None, "m": None, "f": None}, {"q": 2, "m": 0, "f": 2.0},
                                   {"q": None, "m": None, "f": None}]
        ctx.close()


def test_integer_overflow_is_an_error(ctx):
    ctx.register_arrow("big", pa.table({"a": [2**62, 2**62, 2**62]}))
    with pytest.raises(pqe.ExecutionError, match="integer overflow"):
        ctx.sql("select a + a from big").to_arrow()
    # SUM(BIGINT) is an exact DECIMAL(38,0) (PostgreSQL): no overflow to report
    assert ctx.sql("select sum(a) as s from big").to_pylist() == [{"s": 3 * 2**62}]
    with pytest.raises(pqe.ExecutionError):
        ctx.sql("select cast(a as integer) from big").to_arrow()


# ---- concurrency -------------------------------------------------------------------------------


def test_eight_threads_share_one_bounded_pool(tpch_dir, duck):
    before = set(threading.enumerate())  # Thread objects: idents are reused after exit
    ctx = register_tpch(pqe.Context(threads=2, partitions=4), tpch_dir)
    queries = ["q1", "q3", "q5", "q6", "q10", "q12", "q14", "q19"]
    expected = {q: duck_arrow(duck, tpch_query(q)) for q in queries}
    errors: list = []
    results: dict = {}

    def worker(i):
        try:
            for k in range(3):
                q = queries[(i + k) % len(queries)]
                results[(i, k)] = (q, ctx.sql(tpch_query(q)).to_arrow())
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    # concurrently, change the catalog
    for i in range(20):
        ctx.register_arrow(f"scratch{i}", pa.table({"x": [i]}))
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 24
    for q, table in results.values():
        assert_same(table, expected[q])
    new_workers = [t for t in threading.enumerate()
                   if t not in before and t.name.startswith("pqe_")]
    assert 1 <= len(new_workers) <= 2, [t.name for t in new_workers]
    assert len(ctx.session.executor.pool()._threads) <= 2
    ctx.close()


# ---- cancellation and timeouts -----------------------------------------------------------------


@pytest.fixture
def slow_ctx():
    ctx = pqe.Context(partitions=8)
    n = 20_000
    ctx.register_arrow("t", pa.table({"a": list(range(n)), "b": [i % 13 for i in range(n)]}))
    yield ctx
    ctx.close()


SLOW = "select count(*) from t x, t y where x.a + y.a < 0 or x.b * y.b = 7"


def test_timeout(slow_ctx):
    start = time.time()
    with pytest.raises(pqe.QueryTimeout, match="timed out after 0.3 s"):
        slow_ctx.sql(SLOW).to_arrow(timeout=0.3)
    assert time.time() - start < 1.0
    assert slow_ctx.sql("select count(*) as n from t").to_pylist() == [{"n": 20_000}]


@pytest.fixture
def sigint_raises():
    """SIGINT raises KeyboardInterrupt here even if pytest inherited it ignored (started in the
    background by a non-interactive shell)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_keyboard_interrupt_stops_the_query(slow_ctx, sigint_raises):
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.time()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        slow_ctx.sql(SLOW).to_arrow()
    assert time.time() - start < 1.5  # the whole query takes 2 s on this machine
    # the Context is still usable, and gives the right answer
    assert slow_ctx.sql("select sum(b) as s from t where a < 13").to_pylist() == [{"s": 78}]


# ---- resource guard ----------------------------------------------------------------------------


def test_memory_guard_refuses_with_advice(tpch_dir, monkeypatch):
    import pqe.session.state as C

    ctx = register_tpch(pqe.Context(partitions=2), tpch_dir)
    sql = tpch_query("q9")
    assert ctx.sql(sql).to_arrow().num_rows > 0  # fine with the machine's real memory
    monkeypatch.setattr(C, "available_memory", lambda: 64 * 1024)  # pretend: 64 KiB free
    with pytest.raises(pqe.ResourceError, match=r"needs about .* GiB.*workers=N"):
        ctx.sql(sql).to_arrow()
    ctx.memory_guard = False
    assert ctx.sql(sql).to_arrow().num_rows > 0  # the user can insist
    ctx.close()


def test_memory_estimate_grows_with_the_data(tpch_dir):
    from pqe.physical.plan import estimated_memory

    small = register_tpch(pqe.Context(), tpch_dir)
    big = register_tpch(pqe.Context(), tpch_data(0.1))
    for q in ("q3", "q9", "q18"):
        a = estimated_memory(small.sql(tpch_query(q)).physical_plan())
        b = estimated_memory(big.sql(tpch_query(q)).physical_plan())
        assert 0 < a < b, (q, a, b)
