"""Findings of session 27's hunts (user functions and writes, numeric limits, the shell).

Each test here failed before its fix: a function registered with a type no call could meet,
a message naming the same type twice, an option checked only after the query ran."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import pqe

INSTANT = dt.datetime(2024, 1, 1, 3, tzinfo=dt.timezone.utc)
NY = pa.timestamp("us", tz="America/New_York")


@pytest.fixture(params=[1, 3], ids=["p1", "p3"])
def ctx(request):
    c = pqe.Context(partitions=request.param)
    c.register_arrow("t", pa.table({"ts": pa.array([INSTANT], pa.timestamp("us", tz="UTC")),
                                    "k": [1]}))
    return c


def test_udf_declared_in_another_zone_gets_the_same_instants(ctx):
    # (registered, then every call failed: "argument 1 is TIMESTAMPTZ, expected TIMESTAMPTZ")
    ctx.register_udf("local_hour", lambda a: pc.hour(a), [NY], "BIGINT")
    ctx.register_udf("same", lambda a: a, [NY], NY)
    got = ctx.sql("select local_hour(ts) h, same(ts) = ts eq, same(ts) s from t").to_arrow()
    assert got.column("h").to_pylist() == [22]  # 03:00 UTC is 22:00 the day before in New York
    assert got.column("eq").to_pylist() == [True]
    assert got.column("s").to_pylist()[0] == INSTANT


def test_udf_returning_another_zone_is_the_same_instants(ctx):
    # ("returned TIMESTAMPTZ values, but it was declared to return TIMESTAMPTZ")
    ctx.register_udf("g", lambda a: a.cast(NY), ["TIMESTAMPTZ"], "TIMESTAMPTZ")
    got = ctx.sql("select g(ts) = ts eq, g(ts)::date d from t").to_arrow().to_pylist()
    assert got == [{"eq": True, "d": dt.date(2024, 1, 1)}]


def test_udf_timestamp_of_another_unit_is_refused_naming_both(ctx):
    ctx.register_udf("n", lambda a: a, [pa.timestamp("ms", tz="UTC")], "BIGINT")
    with pytest.raises(pqe.TypeMismatchError, match=r"timestamp\[us.*timestamp\[ms"):
        ctx.sql("select n(ts) from t").to_arrow()


def test_udf_may_return_a_large_list(ctx):
    ctx.register_udf("l", lambda a: pa.array([[1, None]] * len(a), pa.large_list(pa.int64())),
                     ["BIGINT"], pa.list_(pa.int64()))
    assert ctx.sql("select l(k) v from t").to_arrow().to_pylist() == [{"v": [1, None]}]
    ctx.register_udf("ls", lambda a: pa.array([{"x": ["a"]}] * len(a),
                                              pa.struct([("x", pa.large_list(pa.large_string()))])),
                     ["BIGINT"], pa.struct([("x", pa.list_(pa.string()))]))
    assert ctx.sql("select ls(k) v from t").to_arrow().to_pylist() == [{"v": {"x": ["a"]}}]


def test_udf_wrong_list_type_still_refused(ctx):
    ctx.register_udf("l2", lambda a: pa.array([[1.5]] * len(a)), ["BIGINT"],
                     pa.list_(pa.int64()))
    with pytest.raises(pqe.UserFunctionError, match=r"DOUBLE\[\].*BIGINT\[\]"):
        ctx.sql("select l2(k) from t").to_arrow()


def test_write_parquet_codec_checked_before_the_query_runs(tmp_path):
    ctx = pqe.Context()
    ran = []
    ctx.register_udf("mark", lambda a: ran.append(1) or a, ["BIGINT"], "BIGINT")
    with pytest.raises(pqe.BindError, match="bogus.*snappy"):
        ctx.sql("select mark(1) k").write_parquet(str(tmp_path / "x"), compression="bogus")
    assert ran == [] and not os.path.exists(tmp_path / "x")
    for codec, stored in [("ZSTD", "ZSTD"), ("none", "UNCOMPRESSED"), (None, "UNCOMPRESSED")]:
        out = tmp_path / str(codec)
        assert ctx.sql("select 1 k").write_parquet(str(out), compression=codec) == 1
        import pyarrow.parquet as pq

        (name,) = os.listdir(out)
        meta = pq.ParquetFile(str(out / name)).metadata
        assert meta.row_group(0).column(0).compression == stored


@pytest.mark.parametrize("sql,value", [
    ("select cast(c as decimal(4,2)) + 0 from t", "100.00"),
    ("select sum(cast(c as decimal(4,2))), sum(c + 0) from t", "100.00"),
    ("select cast(d as decimal(17,1)) + 0 from t", "10000000000000000.0"),
    ("select cast(e as decimal(3,3)) * 1 from t", "1.000"),
])
def test_rounding_decimal_cast_next_to_arithmetic_checks_its_range(sql, value):
    # (with arithmetic beside it the cast ran on unscaled int64s, which checked only integer
    # digits: 99.995 -> DECIMAL(4,2) gave 100.00, a value its type cannot hold)
    from decimal import Decimal as D

    t = pa.table({"c": pa.array([D("99.995"), D("0.999")], pa.decimal128(5, 3)),
                  "d": pa.array([D("9999999999999999.99"), D("1")], pa.decimal128(18, 2)),
                  "e": pa.array([D("0.999999999"), D("0.1")], pa.decimal128(9, 9))})
    for p in (1, 3):
        ctx = pqe.Context(partitions=p)
        ctx.register_arrow("t", t)
        with pytest.raises(pqe.DataValueError, match=f"{value} is out of range"):
            ctx.sql(sql).to_arrow()
        # a cast with a digit to spare keeps the fast path's answer
        got = ctx.sql("select cast(c as decimal(5,2)) + 0 r from t").to_arrow()
        assert got.column("r").to_pylist() == [D("100.00"), D("1.00")]


# ---- the shell (hunt shell2) ------------------------------------------------------------------

import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def _shell(*args, **kw):
    return subprocess.run([sys.executable, "-m", "pqe.shell", *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, **kw)


@pytest.mark.parametrize("where", ["directory", "unreadable"])
def test_shell_history_file_that_cannot_be_used(tmp_path, where):
    # (prompt_toolkit raised inside its event loop after every statement: a traceback and
    # "Press ENTER to continue", which swallowed the next line)
    pexpect = pytest.importorskip("pexpect")
    history = tmp_path / "hist"
    history.mkdir()
    if where == "unreadable":
        # a path under a regular file: neither read nor written, also as root
        (tmp_path / "file").write_text("x")
        history = tmp_path / "file" / "hist"
    env = dict(os.environ, PQE_HISTORY=str(history), TERM="xterm-256color",
               PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="120", LINES="50")
    child = pexpect.spawn(sys.executable, ["-m", "pqe.shell"], env=env, cwd=str(ROOT),
                          dimensions=(50, 120), encoding="utf-8", codec_errors="replace",
                          timeout=60, preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                       signal.SIG_DFL))
    child.expect_exact("pqe> ")
    seen = ""
    for n in (4242, 4343, 4444):
        child.send(f"select {n} as v;\r")
        assert child.expect_exact(["Press ENTER", str(n)]) == 1
        seen += child.before
        child.expect_exact("pqe> ")
        seen += child.before
    assert "Traceback" not in seen and seen.count("cannot be used") == 1
    child.send(".quit\r")
    child.expect(pexpect.EOF)


def test_shell_with_standard_error_closed():
    # (every statement failed on the missing stream: nothing printed, exit 1)
    r = subprocess.run(f"{sys.executable} -m pqe.shell -c 'select 41 + 1 as a' 2>&-",
                       shell=True, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0 and "42" in r.stdout
    bad = subprocess.run(f"{sys.executable} -m pqe.shell -c 'select nope' 2>&-",
                         shell=True, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert bad.returncode == 1


def test_shell_shows_nanosecond_times(tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"t": pa.array([1, None], pa.time64("ns"))}), tmp_path / "tns.parquet")
    r = _shell(str(tmp_path / "tns.parquet"), "--mode", "csv", "-c", "select t from tns")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["t", "00:00:00.000000001", ""]


def test_shell_shows_every_entry_of_a_map_with_a_repeated_key(tmp_path):
    # (shown as {"k":2}: Arrow's lossy dict kept the last value, with a raw UserWarning)
    import json

    import pyarrow.parquet as pq

    pq.write_table(pa.table({"m": pa.array([[("k", 1), ("k", 2)], [("a", 3)]],
                                           pa.map_(pa.string(), pa.int64()))}),
                   tmp_path / "dupmap.parquet")
    r = _shell(str(tmp_path / "dupmap.parquet"), "--mode", "json", "-c",
               "select m from dupmap")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert json.loads(r.stdout) == [{"m": [{"key": "k", "value": 1}, {"key": "k", "value": 2}]},
                                    {"m": [{"key": "a", "value": 3}]}]
