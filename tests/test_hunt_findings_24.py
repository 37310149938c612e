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


# ---- views, constraints and scripts (hunt ddl2) -------------------------------------------------


@pytest.mark.parametrize("query", [
    "select a, sum(a) over (order by a rows between 1 preceding and current row "
    "exclude current row) s from t",
    "select a, sum(a) over (order by a rows between 1 preceding and 1 following "
    "exclude group) s from t",
    "select a, interval '1.5 days' i, interval '0.5 years' j, "
    "date '2024-01-31' - interval '0.5 years' d from t",
    "select a, xor(a, 3) x, interval '3 hrs' h, interval '2 mons' m from t",
    "select count(*) n from t tablesample bernoulli (50) repeatable (3)",
])
def test_view_answers_as_its_query(query):
    # (a view kept sqlglot's text of its query: EXCLUDE was dropped, '1.5 days' became the
    # whole-unit form '1.5' DAYS (1 day), xor() and 'hrs' became text pqe cannot read)
    for p in (1, 3):
        ctx = pqe.Context(partitions=p)
        ctx.register_arrow("t", pa.table({"a": [1, 2, 3, 4, 5, 6]}))
        ctx.sql(f"create view v as {query}")
        direct = ctx.sql(f"select * from ({query}) q").to_arrow()
        through = ctx.sql("select * from v").to_arrow()
        key = direct.column_names[0]
        assert through.sort_by(key).to_pylist() == direct.sort_by(key).to_pylist()


def test_view_error_positions_point_into_its_own_text():
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"a": [1]}))
    ctx.sql("create view v as select a, a + 1 as b from t")
    ctx.register_arrow("t", pa.table({"z": [1]}))  # the view no longer binds
    with pytest.raises(pqe.UnknownColumnError, match="'a'"):
        ctx.sql("select * from v").to_arrow()


@pytest.mark.parametrize("statement", [
    "insert into t values (1, 2, 3) on conflict (k) do update set b = default",
    "insert into t values (1, 2, 3) on conflict (k) do update set b = default + 1",
    "update t set b = default",
    "update t set b = coalesce(default, 1)",
])
def test_default_is_refused_also_beside_a_column_named_default(statement):
    # (SET b = DEFAULT copied the column "default": b became 42)
    ctx = pqe.Context()
    ctx.sql('create table t (k int primary key, b int, "default" int)')
    ctx.sql("insert into t values (1, 1, 42)")
    with pytest.raises(pqe.UnsupportedError, match="DEFAULT"):
        ctx.sql(statement)
    assert ctx.sql("select b from t").to_arrow().to_pylist() == [{"b": 1}]
    ctx.sql('update t set b = "default" + 1')  # the quoted name is the column
    assert ctx.sql("select b from t").to_arrow().to_pylist() == [{"b": 43}]


@pytest.mark.parametrize("ddl", [
    "create table t (i interval primary key)",
    "create table t (k int, i interval, unique (k, i))",
])
def test_interval_keys_are_refused(ddl):
    # ('1 day' and '24 hours', one length, were two keys; DuckDB refuses them too)
    with pytest.raises(pqe.UnsupportedError, match="INTERVAL"):
        pqe.Context().sql(ddl)


def test_script_stops_at_a_failing_query_in_the_middle():
    # (a query before the last statement was only bound: its failed cast was never raised
    # and the INSERT after it ran)
    ctx = pqe.Context()
    with pytest.raises(pqe.DataValueError):
        ctx.sql("create table t (a int); insert into t values (1); "
                "select cast('x' as int); insert into t values (2)")
    assert ctx.sql("select a from t").to_arrow().to_pylist() == [{"a": 1}]
    con = pqe.connect()
    cur = con.cursor()
    with pytest.raises(pqe.Error, match="more than one row"):
        cur.execute("create table u (a int); insert into u values (1), (2); "
                    "select (select a from u); insert into u values (3)")
    cur.execute("select count(*) from u")
    assert cur.fetchall() == [(2,)]
    assert ctx.sql("select 1 as a; select 2 as b").to_arrow().to_pylist() == [{"b": 2}]


def test_null_typed_column_refuses_values_by_name():
    # (CREATE TABLE AS SELECT NULL made a NULL column; a value failed with Arrow's
    # "Unsupported cast from int32 to null")
    ctx = pqe.Context()
    ctx.sql("create table c as select null as n, 1 as a")
    with pytest.raises(pqe.TypeMismatchError, match="column n has type NULL"):
        ctx.sql("insert into c values (5, 2)")
    with pytest.raises(pqe.TypeMismatchError, match="column n has type NULL"):
        ctx.sql("update c set n = 1")
    ctx.sql("insert into c values (null, 2)")
    assert ctx.sql("select count(*) k from c where n is null").to_arrow().to_pylist() == [{"k": 2}]


# ---- review of the session's changes (review27) ----------------------------------------------


def test_udf_returning_a_list_view_gives_its_lists():
    # (Arrow's cast of a list view gave an invalid array: [3] read as [] of length -2)
    ctx = pqe.Context(partitions=1)  # (one call over all three rows)
    ctx.register_arrow("t3", pa.table({"i": [1, 2, 3]}))
    ctx.register_udf("lv", lambda a: pa.array([[1, 2], None, [3]],
                                              pa.list_view(pa.int64())).slice(0, len(a)),
                     ["BIGINT"], pa.list_(pa.int64()))
    got = ctx.sql("select i, lv(i) l, len(lv(i)) n from t3 order by i").to_arrow().to_pylist()
    assert got == [{"i": 1, "l": [1, 2], "n": 2}, {"i": 2, "l": None, "n": None},
                   {"i": 3, "l": [3], "n": 1}]


def test_view_shows_its_query_as_written():
    # (.schema printed sqlglot's text, the query f056c73 stopped binding: run again it
    # dropped EXCLUDE and read '1.5 days' as 1 day)
    from pqe.shell.commands import create_table_text

    query = ("select a, sum(a) over (order by a rows between unbounded preceding and current "
             "row exclude current row) s, timestamp '2024-01-01' + interval '1.5 days' x from t")
    ctx = pqe.Context()
    ctx.sql("create table t (a int); insert into t values (1), (2), (3); "
            f"create view v as {query} -- trailing\n; select 1")
    ddl = create_table_text("v", None, ctx._session.catalog.frozen().lookup("v")[1])
    assert ddl == f"CREATE VIEW v AS {query};"
    again = pqe.Context()
    again.sql("create table t (a int); insert into t values (1), (2), (3)")
    again.sql(ddl)
    assert again.sql("select * from v order by a").to_arrow() == \
        ctx.sql("select * from v order by a").to_arrow()


def test_view_with_parameters_shows_their_values():
    con = pqe.connect()
    cur = con.cursor()
    cur.execute("create view v as select ? as x", [5])
    cur.execute("select * from v")
    assert cur.fetchall() == [(5,)]


def test_view_that_no_longer_binds_names_itself_without_a_position():
    # (its line and column were in the text that created it; the shell drew a caret there)
    ctx = pqe.Context()
    ctx.sql("create table t (a int)")
    ctx.sql("create view v as\nselect a\nfrom t where a > 0")
    ctx.sql("create view w as select * from v")
    ctx.sql("drop table t")
    ctx.sql("create table t (a varchar)")
    with pytest.raises(pqe.Error, match=r"^in view w: in view v: cannot compare") as got:
        ctx.sql("select * from w").to_arrow()
    assert got.value.line is None and got.value.column is None


def test_shell_map_with_repeated_key_inside_a_struct(tmp_path):
    import json

    import pyarrow.parquet as pq

    m = pa.array([[("k", 1), ("k", 2)], [("j", 3)]], pa.map_(pa.string(), pa.int64()))
    pq.write_table(pa.table({"s": pa.StructArray.from_arrays([m], names=["m"])}),
                   tmp_path / "sd.parquet")
    r = _shell(str(tmp_path / "sd.parquet"), "--mode", "json", "-c", "select s from sd")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [
        {"s": {"m": [{"key": "k", "value": 1}, {"key": "k", "value": 2}]}},
        {"s": {"m": [{"key": "j", "value": 3}]}}]


def test_udf_returning_run_end_encoded_values():
    ctx = pqe.Context(partitions=1)
    ctx.register_arrow("t3", pa.table({"i": [1, 2, 3]}))
    ctx.register_udf("r", lambda a: pc.run_end_encode(pa.array(["a", "a", None]).slice(0, len(a))),
                     ["BIGINT"], "VARCHAR")
    got = ctx.sql("select i, r(i) v from t3 order by i").to_arrow().to_pylist()
    assert got == [{"i": 1, "v": "a"}, {"i": 2, "v": "a"}, {"i": 3, "v": None}]


# ---- parameters (hunt params3) ----------------------------------------------------------------


@pytest.mark.parametrize("sql", [
    "select distinct on (?) a, b from t",
    "select distinct on ((?)) a, b from t",
    "select distinct on (a, ?) a, b from t",
])
def test_parameter_as_distinct_on_item_is_refused(sql):
    # (bound to 2 it named the second column: one row per value of b, 3 rows)
    cur = pqe.connect().cursor()
    cur.execute("create table t (a integer, b varchar)")
    cur.execute("insert into t values (2, 'a'), (1, 'z'), (3, 'x')")
    with pytest.raises(pqe.UnsupportedError, match="DISTINCT ON"):
        cur.execute(sql, (2,))
    cur.execute("select distinct on (a + ?) a from t", (1,))  # a value in an expression
    assert sorted(cur.fetchall()) == [(1,), (2,), (3,)]


@pytest.mark.parametrize("sql,params", [
    ("select cast(? as decimal(?, 2))", (1, 5)),
    ("select ?::varchar(?)", ("a", 3)),
    ("create table t (a varchar(?))", (3,)),
])
def test_parameter_in_a_type_is_refused(sql, params):
    with pytest.raises(pqe.UnsupportedError, match="part of a type"):
        pqe.connect().cursor().execute(sql, params)


def test_decimal_zero_cast_to_double_is_positive_zero():
    # (a constant DECIMAL -0.00 became -0.0 through Python's float(): atan2 gave -pi)
    from decimal import Decimal

    cur = pqe.connect().cursor()
    cur.execute("select cast(cast('-0.001' as decimal(3,2)) as double)::varchar, "
                "atan2(cast(cast('-0' as decimal(5,2)) as double), -1), "
                "cast(-0.0 as double)::varchar, (-0.0::double)::varchar")
    assert cur.fetchall() == [("0.0", pytest.approx(3.141592653589793), "0.0", "-0.0")]
    cur.execute("create table f (x double)")
    cur.execute("insert into f values (?)", (Decimal("-0.00"),))
    cur.execute("select x::varchar, atan2(x, -1) from f")
    assert cur.fetchall() == [("0.0", pytest.approx(3.141592653589793))]


@pytest.mark.parametrize("sql,want", [
    ("select interval '2 seconds' > '1 second'", [True]),
    ("select interval '2 seconds' = '2000 milliseconds'", [True]),
    ("select i from iv where i > '1 hour'", [pa.MonthDayNano([0, 1, 0])]),
    ("select i = '1 day' from iv", [False, True, None]),
    ("select i from iv where i in ('2 seconds', '24 hours')",
     [pa.MonthDayNano([0, 0, 2_000_000_000]), pa.MonthDayNano([0, 1, 0])]),
])
def test_text_compared_with_an_interval_is_an_interval(sql, want):
    # (PostgreSQL and DuckDB read the untyped literal as an INTERVAL; pqe said "cannot
    # convert '1 second' to INTERVAL" although CAST('1 second' AS INTERVAL) works)
    ctx = pqe.Context()
    ctx.register_arrow("iv", pa.table({"i": pa.array([pa.MonthDayNano([0, 0, 2_000_000_000]),
                                                      pa.MonthDayNano([0, 1, 0]), None])}))
    assert ctx.sql(sql).to_arrow().column(0).to_pylist() == want
    with pytest.raises(pqe.TypeMismatchError, match="'garbage' to INTERVAL"):
        ctx.sql("select i from iv where i > 'garbage'").to_arrow()


# ---- Parquet statistics of the right column (hunt files3) --------------------------------------


def test_statistics_of_a_nested_leaf_named_like_a_column(tmp_path):
    # (a leaf's own name keyed the statistics: MAP `key`, LIST `element` and STRUCT field
    # `s.k` stored first lent their min/max to the columns key, element and k)
    import pyarrow.parquet as pq

    big = 2**62
    t = pa.table({"m": pa.array([[(1, 1)]] * 4, pa.map_(pa.int64(), pa.int64())),
                  "l": pa.array([[1]] * 4, pa.list_(pa.int64())),
                  "s": pa.array([{"k": 1}] * 4),
                  "key": pa.array([big] * 4, pa.int64()),
                  "element": pa.array([big] * 4, pa.int64()),
                  "k": pa.array([big] * 4, pa.int64())})
    pq.write_table(t, tmp_path / "n.parquet")
    ctx = pqe.Context()
    ctx.register_parquet("t", str(tmp_path / "n.parquet"))
    got = ctx.sql("select sum(key) a, sum(element) b, sum(k) c from t").to_arrow().to_pylist()
    assert got == [{"a": 4 * big, "b": 4 * big, "c": 4 * big}]


def test_grouping_and_joins_over_a_column_shadowed_by_a_struct_field(tmp_path):
    import pyarrow.parquet as pq

    t = pa.table({"s": pa.array([{"k": i} for i in range(6)]), "k": [1, 2, 1, 2, 1, 2]})
    pq.write_table(t, tmp_path / "g.parquet", row_group_size=2)
    n = 4000
    j = pa.table({"s": pa.array([{"k": i} for i in range(n)]),
                  "k": pa.array([(i * 7919) % n for i in range(n)], pa.int64())})
    pq.write_table(j, tmp_path / "j.parquet", row_group_size=500)
    for p in (1, 3):
        ctx = pqe.Context(partitions=p)
        ctx.register_parquet("g", str(tmp_path / "g.parquet"))
        ctx.register_parquet("j", str(tmp_path / "j.parquet"))
        ctx.register_arrow("u", pa.table({"k": pa.array([3, 2000], pa.int64())}))
        got = ctx.sql("select k, count(*) n from g group by k order by k").to_arrow().to_pylist()
        assert got == [{"k": 1, "n": 3}, {"k": 2, "n": 3}]
        got = ctx.sql("select j.k from j join u on j.k = u.k order by 1").to_arrow()
        assert got.column(0).to_pylist() == [3, 2000]


def test_hive_partition_column_also_stored_in_the_files(tmp_path):
    # (the planner took the files' own k statistics: groups split, count(distinct) 3, a SUM
    # bound from 10..30 where the column holds 2^62)
    import pyarrow.parquet as pq

    d = tmp_path / "h"
    for sub, rows in [("k=1/a", [10]), ("k=1/b", [20]), ("k=2/c", [30])]:
        (d / sub).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"k": rows, "v": [1] * len(rows)}), str(d / sub) + ".parquet")
    big = 2**62
    (tmp_path / "b" / f"k={big}").mkdir(parents=True)
    pq.write_table(pa.table({"k": [1, 1, 1, 1]}), tmp_path / "b" / f"k={big}" / "a.parquet")
    for p in (1, 3):
        ctx = pqe.Context(partitions=p)
        ctx.register_parquet("t", str(d))
        got = ctx.sql("select k, count(*) n from t group by k order by k").to_arrow().to_pylist()
        assert got == [{"k": 1, "n": 2}, {"k": 2, "n": 1}]
        assert ctx.sql("select count(distinct k) c from t").to_arrow().to_pylist() == [{"c": 2}]
        ctx.register_parquet("b", str(tmp_path / "b"))
        assert ctx.sql("select sum(k) s from b").to_arrow().to_pylist() == [{"s": 4 * big}]
        ctx.register_arrow("u", pa.table({"k": pa.array([2], pa.int32())}))
        got = ctx.sql("select t.k, v from t join u on t.k = u.k").to_arrow().to_pylist()
        assert got == [{"k": 2, "v": 1}]


@pytest.mark.parametrize("name,text", [
    ("x.tsv.gz", "a\tb\n1\tx\n"), ("y.csv.bz2", "a,b\n1,x\n"), ("Z.CSV", "a,b\n1,x\n"),
    ("w.tab", "a\tb\n1\tx\n"),
])
def test_from_a_compressed_or_tab_file_reads_csv(tmp_path, name, text):
    # (FROM 'x.tsv.gz' was read as Parquet: "cannot read the Parquet footer")
    import bz2
    import gzip

    data = text.encode()
    if name.endswith(".gz"):
        data = gzip.compress(data)
    elif name.endswith(".bz2"):
        data = bz2.compress(data)
    (tmp_path / name).write_bytes(data)
    got = pqe.Context().sql(f"select * from '{tmp_path / name}'").to_arrow().to_pylist()
    assert got == [{"a": 1, "b": "x"}]


def test_aggregate_distinct_parameter_is_a_value():
    # (my first DISTINCT ON refusal caught count(DISTINCT ?) too: sqlglot spells both Distinct)
    cur = pqe.connect().cursor()
    cur.execute("create table t (a integer)")
    cur.execute("insert into t values (1), (2)")
    cur.execute("select count(distinct ?), sum(distinct ?) from t", (2, 2))
    assert cur.fetchall() == [(1, 2)]
    with pytest.raises(pqe.UnsupportedError, match="DISTINCT ON"):
        cur.execute("select distinct on (?) a from t", (1,))


@pytest.mark.parametrize("stored,dirs", [
    ("date", ["1", "2"]), ("bool", ["0", "5"]), ("int64", ["2020-01-01"]),
    ("int64", ["a"]), ("int32", ["5000000000"]), ("text", ["1", "2"]),
])
def test_hive_column_stored_in_the_files_as_a_type_its_values_do_not_fit(tmp_path, stored, dirs):
    # (the directory's value was cast into the files' type: 1 and 2 under DATE files read as
    # 1970-01-02 and 1970-01-03, 5 under BOOLEAN as True; others failed with Arrow's text)
    import pyarrow.parquet as pq

    value = {"date": pa.array([dt.date(2020, 1, 1)]), "bool": pa.array([True]),
             "int64": pa.array([1], pa.int64()), "int32": pa.array([1], pa.int32()),
             "text": pa.array(["x"])}[stored]
    for k in dirs:
        (tmp_path / f"k={k}").mkdir()
        pq.write_table(pa.table({"k": value, "v": [1]}), tmp_path / f"k={k}" / "f.parquet")
    with pytest.raises(pqe.CatalogError, match="partition column 'k' is also stored"):
        pqe.Context().register_parquet("t", str(tmp_path))


@pytest.mark.parametrize("stored,dirs,want", [
    (pa.array([1], pa.int64()), ["1", "2"], [1, 2]),
    (pa.array([1.5]), ["1", "2"], [1.0, 2.0]),
    (pa.array(["x"]), ["a", "b"], ["a", "b"]),
    (pa.array([dt.date(2020, 1, 1)]), ["2021-02-03"], [dt.date(2021, 2, 3)]),
])
def test_hive_column_stored_in_the_files_as_a_type_its_values_fit(tmp_path, stored, dirs, want):
    import pyarrow.parquet as pq

    for k in dirs:
        (tmp_path / f"k={k}").mkdir()
        pq.write_table(pa.table({"k": stored, "v": [1]}), tmp_path / f"k={k}" / "f.parquet")
    ctx = pqe.Context()
    ctx.register_parquet("t", str(tmp_path))
    assert ctx.sql("select k from t order by k").to_arrow().column(0).to_pylist() == want
