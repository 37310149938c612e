"""User-defined functions (Context.register_udf / register_udaf): vectorized Python over
Arrow, callable from SQL and the DataFrame builder, run inside the query's tasks on threads
and on a LocalCluster of worker processes; a UDF inside a TPC-H join + aggregate gives the
answer of the same logic written in SQL; NULLs; errors naming the function and the
partition; built-in names and CREATE FUNCTION refused."""

from __future__ import annotations

import decimal
import threading

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from helpers import assert_same, duck_arrow, duckdb_tpch, register_tpch

import pqe
from pqe import col

N = 2000
DATA = pa.table({
    "id": pa.array(range(N), pa.int64()),
    "k": pa.array([None if i % 13 == 0 else i % 7 for i in range(N)], pa.int32()),
    "x": pa.array([None if i % 11 == 0 else (i % 100) / 4 for i in range(N)], pa.float64()),
    "w": pa.array([1 + i % 5 for i in range(N)], pa.int64()),
    "s": pa.array([None if i % 17 == 0 else f"item-{i % 23}" for i in range(N)], pa.string()),
})


# Module-level functions ship to workers by reference (the test module is on their path, as
# a user's own module would be); the lambdas and closures below ship by value (cloudpickle).


def twice(a: pa.Array) -> pa.Array:
    return pc.multiply(a, 2.0)


def label(s: pa.Array, n: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(s, pc.cast(n, pa.string()), ":")


def sum_update(xs: pa.Array):
    return pc.sum(xs).as_py() or 0.0


def sum_merge(states: pa.Array):
    return pc.sum(states).as_py()


# a weighted mean in two phases: (sum of x*w, sum of w) per group, then their ratio
WSTATE = pa.struct([("xw", pa.float64()), ("w", pa.float64())])


def wmean_update(x: pa.Array, w: pa.Array):
    wf = pc.cast(w, pa.float64())
    return {"xw": pc.sum(pc.multiply(x, wf)).as_py() or 0.0, "w": pc.sum(wf).as_py() or 0.0}


def wmean_merge(states: pa.Array):
    return {"xw": pc.sum(pc.struct_field(states, "xw")).as_py(),
            "w": pc.sum(pc.struct_field(states, "w")).as_py()}


def wmean_finalize(states: pa.Array) -> pa.Array:
    w = pc.struct_field(states, "w")
    return pc.if_else(pc.equal(w, 0.0), pa.scalar(None, pa.float64()),
                      pc.divide(pc.struct_field(states, "xw"), w))


def _register(ctx: pqe.Context) -> pqe.Context:
    ctx.register_arrow("t", DATA)
    ctx.register_udf("twice", twice, ["DOUBLE"], "DOUBLE")
    ctx.register_udf("label", label, ["VARCHAR", "BIGINT"], "VARCHAR")
    offset = 0.5  # captured: the closure ships by value
    ctx.register_udf("shifted", lambda a: pc.add(a, offset), [pa.float64()], pa.float64())
    ctx.register_udaf("mysum", sum_update, sum_merge, ["DOUBLE"], "DOUBLE")
    ctx.register_udaf("wmean", wmean_update, wmean_merge, ["DOUBLE", "BIGINT"], "DOUBLE",
                      state_type=WSTATE, finalize=wmean_finalize)
    return ctx


@pytest.fixture(scope="module")
def threads_ctx():
    ctx = _register(pqe.Context(partitions=4))
    yield ctx
    ctx.close()


@pytest.fixture(scope="module")
def cluster_ctx():
    ctx = _register(pqe.Context(workers=2, memory_limit="1GiB", partitions=4))
    yield ctx
    ctx.close()


@pytest.fixture(params=["threads", "cluster"])
def any_ctx(request):
    return request.getfixturevalue(f"{request.param}_ctx")


def _sorted(t: pa.Table) -> list[tuple]:
    return sorted((tuple(r.values()) for r in t.to_pylist()),
                  key=lambda r: tuple((v is None, v) for v in r))


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


# ---- threads and a LocalCluster ----------------------------------------------------------------


def test_scalar_and_aggregate_udfs_run_in_tasks(any_ctx):
    """The same answers on threads and on worker processes: scalar UDFs in the select list
    and WHERE, a UDAF grouped over four partitions, a multi-argument UDAF with a finalize."""
    got = any_ctx.sql(
        "SELECT k, mysum(twice(x)) AS s, wmean(shifted(x), w) AS m, count(*) AS n FROM t "
        "WHERE twice(x) > 10 GROUP BY k").to_arrow()
    want = any_ctx.sql(
        "SELECT k, sum(x * 2.0) AS s, sum((x + 0.5) * w) / sum(w) AS m, count(*) AS n FROM t "
        "WHERE x * 2.0 > 10 GROUP BY k").to_arrow()
    assert got.num_rows == want.num_rows == 8
    for g, w in zip(_sorted(got), _sorted(want), strict=True):
        assert g[0] == w[0] and g[3] == w[3]
        assert _close(g[1], w[1]) and _close(g[2], w[2])


def test_errors_name_the_function_and_partition_on_the_cluster(cluster_ctx):
    cluster_ctx.register_udf("blow_up", lambda a: 1 / 0, ["DOUBLE"], "DOUBLE")
    with pytest.raises(pqe.ExecutionError) as info:
        cluster_ctx.sql("SELECT blow_up(x) FROM t").to_arrow()
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("function blow_up failed: ZeroDivisionError: division by zero (in ")
    assert "partition" in msg


def test_summarize_on_the_cluster_equals_threads(cluster_ctx, threads_ctx):
    """SUMMARIZE's sketches (user aggregates inside pqe) and its pivot run on the workers;
    below 512 distinct / 2,048 values they are exact, so the answers are equal."""
    got = cluster_ctx.sql("SUMMARIZE t").to_arrow()
    assert got.equals(threads_ctx.sql("SUMMARIZE t").to_arrow())
    assert got.num_rows == DATA.num_columns


# ---- threads only ------------------------------------------------------------------------------


def test_udf_in_where_group_by_order_by_window_and_aggregate_arguments(threads_ctx):
    ctx = threads_ctx
    got = ctx.sql("SELECT twice(x) AS d, count(*) AS n FROM t WHERE twice(x) < 20 "
                  "GROUP BY twice(x) ORDER BY twice(x) DESC LIMIT 3").to_arrow()
    want = ctx.sql("SELECT x * 2.0 AS d, count(*) AS n FROM t WHERE x * 2.0 < 20 "
                   "GROUP BY x * 2.0 ORDER BY x * 2.0 DESC LIMIT 3").to_arrow()
    assert got.to_pylist() == want.to_pylist()
    got = ctx.sql("SELECT id, sum(twice(x)) OVER (PARTITION BY k ORDER BY id) AS r, "
                  "max(label(s, id)) OVER (PARTITION BY k) AS m FROM t").to_arrow()
    want = ctx.sql("SELECT id, sum(x * 2.0) OVER (PARTITION BY k ORDER BY id) AS r, "
                   "max(s || ':' || CAST(id AS VARCHAR)) OVER (PARTITION BY k) AS m "
                   "FROM t").to_arrow()
    assert_same(got, want)
    got = ctx.sql("SELECT k, avg(twice(x)) AS a, max(label(s, w)) AS m FROM t GROUP BY k "
                  "HAVING mysum(x) > 100 ORDER BY mysum(x)").to_arrow()
    want = ctx.sql("SELECT k, avg(x * 2.0) AS a, max(s || ':' || CAST(w AS VARCHAR)) AS m "
                   "FROM t GROUP BY k HAVING sum(x) > 100 ORDER BY sum(x)").to_arrow()
    assert_same(got, want, ordered=True)


def test_udaf_grouped_over_partitions_equals_the_sql_aggregate(threads_ctx):
    ctx = threads_ctx
    for group in ("k", "s", "k, w"):
        got = ctx.sql(f"SELECT {group}, mysum(x) AS a, wmean(x, w) AS b FROM t "
                      f"GROUP BY {group}").to_arrow()
        want = ctx.sql(f"SELECT {group}, sum(x) AS a, "
                       f"sum(x * w) / sum(CASE WHEN x IS NOT NULL THEN w END) AS b "
                       f"FROM t GROUP BY {group}").to_arrow()
        assert_same(got, want)
    # no GROUP BY: one group, also over an empty input (no values: NULL, as SUM; update is
    # never called with an empty array, so no answer depends on the partitions)
    (row,) = ctx.sql("SELECT mysum(x) AS a, sum(x) AS b FROM t").to_arrow().to_pylist()
    assert _close(row["a"], row["b"])
    (row,) = ctx.sql("SELECT mysum(x) AS a, wmean(x, w) AS b FROM t WHERE id < 0").to_arrow().to_pylist()
    assert row == {"a": None, "b": None}
    assert ctx.sql("SELECT k, mysum(x) FROM t WHERE id < 0 GROUP BY k").to_arrow().num_rows == 0
    # FILTER leaves rows out like NULLs
    got = ctx.sql("SELECT k, mysum(x) FILTER (WHERE w > 2) AS a FROM t GROUP BY k").to_arrow()
    want = ctx.sql("SELECT k, sum(x) FILTER (WHERE w > 2) AS a FROM t "
                   "GROUP BY k").to_arrow()
    assert_same(got, want)


def test_plan_shows_the_udaf_in_two_phases(threads_ctx):
    text = "\n".join(threads_ctx.sql("EXPLAIN SELECT k, mysum(twice(x)) FROM t GROUP BY k")
                     .to_arrow().column(0).to_pylist())
    assert "Aggregate[partial]: groupBy=[k] aggr=[mysum(agg_arg)] [partitions=4]" in text
    assert "Aggregate[final]" in text and "twice(t.x)" in text


def test_nulls(threads_ctx):
    """A scalar UDF sees NULLs (and may return a value for them); a UDAF skips rows with a
    NULL argument unless skip_nulls=False."""
    ctx = threads_ctx
    ctx.register_udf("nz", lambda a: pc.fill_null(a, -1.0), ["DOUBLE"], "DOUBLE")
    got = ctx.sql("SELECT count(*) AS n FROM t WHERE nz(x) = -1.0").to_arrow()
    assert got.column(0).to_pylist() == [DATA.column("x").null_count]
    # NULL literal arguments reach the function as NULLs of the declared type
    assert ctx.sql("SELECT nz(NULL) AS v, twice(NULL) AS u").to_arrow().to_pylist() == [
        {"v": -1.0, "u": None}]
    ctx.register_udaf("rows_seen", lambda x: len(x), lambda s: pc.sum(s).as_py(),
                      ["DOUBLE"], "BIGINT", skip_nulls=False)
    ctx.register_udaf("values_seen", lambda x: len(x), lambda s: pc.sum(s).as_py(),
                      ["DOUBLE"], "BIGINT")
    got = ctx.sql("SELECT k, rows_seen(x) AS r, values_seen(x) AS v FROM t GROUP BY k").to_arrow()
    want = ctx.sql("SELECT k, count(*) AS r, count(x) AS v FROM t GROUP BY k").to_arrow()
    assert_same(got, want)
    with pytest.raises(pqe.BindError, match="FILTER is not supported .* rows_seen"):
        ctx.sql("SELECT rows_seen(x) FILTER (WHERE w > 1) FROM t")


def test_arguments_are_cast_to_the_declared_types(threads_ctx):
    ctx = threads_ctx
    # INTEGER k and a BIGINT literal reach a DOUBLE argument as DOUBLE
    got = ctx.sql("SELECT twice(k) AS a, twice(3) AS b FROM t WHERE id = 1").to_arrow()
    assert got.to_pylist() == [{"a": 2.0, "b": 6.0}]
    assert got.schema.field("a").type == pa.float64()
    with pytest.raises(pqe.TypeMismatchError, match="function twice: argument 1 is VARCHAR, "
                                                    "expected DOUBLE"):
        ctx.sql("SELECT twice(s) FROM t")
    ctx.register_udf("as_int", lambda a: a, ["BIGINT"], "BIGINT")
    assert ctx.sql("SELECT as_int(k) AS v FROM t WHERE id = 3").to_arrow().to_pylist() == [
        {"v": 3}]
    with pytest.raises(pqe.TypeMismatchError, match="function as_int: argument 1 is DOUBLE, "
                                                    "expected BIGINT"):
        ctx.sql("SELECT as_int(x) FROM t")  # never silently truncated
    with pytest.raises(pqe.TypeMismatchError, match="function label takes 2 arguments, got 1"):
        ctx.sql("SELECT label(s) FROM t")
    with pytest.raises(pqe.AggregateMisuseError, match="not allowed in WHERE"):
        ctx.sql("SELECT * FROM t WHERE mysum(x) > 1")
    with pytest.raises(pqe.UnsupportedError, match="DISTINCT is not supported for the "
                                                   "user-defined aggregate mysum"):
        ctx.sql("SELECT mysum(DISTINCT x) FROM t")
    with pytest.raises(pqe.UnsupportedError, match="MYSUM as a window function"):
        ctx.sql("SELECT mysum(x) OVER () FROM t")


def test_errors_and_wrong_results_are_one_line_pqe_errors(threads_ctx):
    ctx = threads_ctx

    def fails_on_big(a):
        if pc.max(a).as_py() > 20:
            raise ValueError("too big\nsecond line of the message")
        return a

    ctx.register_udf("fails_on_big", fails_on_big, ["DOUBLE"], "DOUBLE")
    ctx.register_udf("short", lambda a: a.slice(1), ["DOUBLE"], "DOUBLE")
    ctx.register_udf("wrong_type", lambda a: pc.cast(a, pa.int32(), safe=False), ["DOUBLE"],
                     "DOUBLE")
    ctx.register_udf("not_array", lambda a: a.to_pylist(), ["DOUBLE"], "DOUBLE")
    ctx.register_udaf("bad_state", lambda x: "text", sum_merge, ["DOUBLE"], "DOUBLE")
    ctx.register_udaf("bad_merge", sum_update, lambda s: s[5].as_py(), ["DOUBLE"], "DOUBLE")
    cases = {
        "SELECT fails_on_big(x) FROM t":
            r"function fails_on_big failed: ValueError: too big \(in .* partition \d\)",
        "SELECT short(x) FROM t": r"function short returned \d+ values for \d+ rows \(in ",
        "SELECT wrong_type(x) FROM t":
            r"function wrong_type returned INTEGER values, but it was declared to return DOUBLE",
        "SELECT not_array(x) FROM t": r"function not_array returned list, not a pyarrow array",
        "SELECT k, bad_state(x) FROM t GROUP BY k":
            r"aggregate bad_state: update returned a value that is not a DOUBLE",
        "SELECT k, bad_merge(x) FROM t GROUP BY k":
            r"aggregate bad_merge failed in merge: IndexError: .* \(in .* partition \d\)",
    }
    for sql, pattern in cases.items():
        with pytest.raises(pqe.ExecutionError, match="^" + pattern) as info:
            ctx.sql(sql).to_arrow()
        assert "\n" not in str(info.value), sql


def test_builtin_names_and_bad_registrations_are_refused(threads_ctx):
    ctx = threads_ctx
    for name in ("abs", "sum", "SUM", "upper", "count", "avg", "mean", "coalesce", "row_number",
                 "substr", "date_part", "md5", "left", "select"):
        with pytest.raises(pqe.CatalogError, match="built-in"):
            ctx.register_udf(name, twice, ["DOUBLE"], "DOUBLE")
        with pytest.raises(pqe.CatalogError, match="built-in"):
            ctx.register_udaf(name, sum_update, sum_merge, ["DOUBLE"], "DOUBLE")
    # the built-ins still mean what they meant
    assert ctx.sql("SELECT abs(-2) AS a").to_arrow().to_pylist() == [{"a": 2}]
    lock = threading.Lock()
    with pytest.raises(pqe.CatalogError, match="function locked cannot be pickled"):
        ctx.register_udf("locked", lambda a: (lock, a)[1], ["DOUBLE"], "DOUBLE")
    with pytest.raises(pqe.CatalogError, match="must be an identifier"):
        ctx.register_udf("two words", twice, ["DOUBLE"], "DOUBLE")
    with pytest.raises(pqe.TypeMismatchError, match="unknown or unsupported type"):
        ctx.register_udf("typo", twice, ["DOUBEL"], "DOUBLE")
    with pytest.raises(pqe.CatalogError, match="give a finalize function"):
        ctx.register_udaf("nofinal", wmean_update, wmean_merge, ["DOUBLE", "BIGINT"], "DOUBLE",
                          state_type=WSTATE)
    assert "locked" not in ctx.functions() and "twice" in ctx.functions()


def test_sql_cannot_create_functions(threads_ctx):
    for sql in ("CREATE FUNCTION f(x) AS x + 1", "CREATE MACRO f(x) AS x + 1",
                "CREATE OR REPLACE FUNCTION twice(x) AS x"):
        with pytest.raises(pqe.UnsupportedError, match="statements are not supported: register "
                                                       "Python functions with "
                                                       "Context.register_udf"):
            threads_ctx.sql(sql)
    # what Python registered is still there
    assert threads_ctx.sql("SELECT twice(1.5) AS v").to_arrow().to_pylist() == [{"v": 3.0}]


def test_deregister_and_replace(threads_ctx):
    ctx = threads_ctx
    ctx.register_udf("temp_fn", twice, ["DOUBLE"], "DOUBLE")
    df = ctx.sql("SELECT temp_fn(2.0) AS v")
    ctx.register_udf("temp_fn", lambda a: pc.negate(a), ["DOUBLE"], "DOUBLE")  # replaces it
    assert ctx.sql("SELECT temp_fn(2.0) AS v").to_arrow().to_pylist() == [{"v": -2.0}]
    ctx.deregister_function("TEMP_FN")
    with pytest.raises(pqe.BindError, match="unknown function TEMP_FN"):
        ctx.sql("SELECT temp_fn(2.0)")
    assert df.to_arrow().to_pylist() == [{"v": 4.0}]  # the plan holds the function it bound
    with pytest.raises(pqe.CatalogError, match="function 'temp_fn' is not registered"):
        ctx.deregister_function("temp_fn")


def test_udfs_are_per_context(threads_ctx):
    with pqe.Context() as other:
        other.register_arrow("t", DATA)
        with pytest.raises(pqe.BindError, match="unknown function TWICE"):
            other.sql("SELECT twice(x) FROM t")


def test_dataframe_builder(threads_ctx):
    ctx = threads_ctx
    twice_ = ctx.udf("twice")
    wmean = ctx.udf("wmean")
    df = (ctx.table("t").filter(twice_(col("x")) > 10)
          .group_by("k").agg(wmean(col("x"), "w").alias("m"), ctx.udf("mysum")("x").alias("s")))
    got = df.to_arrow()
    want = ctx.sql("SELECT k, wmean(x, w) AS m, mysum(x) AS s FROM t WHERE twice(x) > 10 "
                   "GROUP BY k").to_arrow()
    assert_same(got, want)
    got = ctx.table("t").select(label_ := ctx.udf("label")(col("s"), col("id")).alias("l")) \
        .sort("l").limit(2).to_arrow()
    assert got.column("l").to_pylist() == ["item-0:1012", "item-0:1035"]
    assert repr(label_) == "<pqe.Expr l>" and repr(wmean) == "<pqe user aggregate wmean>"
    with pytest.raises(pqe.CatalogError, match="function 'nope' is not registered"):
        ctx.udf("nope")


def test_udf_predicates_stay_above_parquet_scans(threads_ctx, tmp_path):
    """A UDF predicate runs in pqe's task (where its errors name the partition), never inside
    the file scanner or row-group pruning; the answer is the same."""
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(DATA, path, row_group_size=300)
    ctx = threads_ctx
    ctx.register_parquet("tp", str(path))
    sql = "SELECT id FROM tp WHERE twice(x) > 40 AND id > 100"
    plan = "\n".join(ctx.sql("EXPLAIN " + sql).to_arrow().column(0).to_pylist())
    scans = [line for line in plan.split("\n") if "Scan" in line and "tp" in line]
    assert all("twice" not in line for line in scans), plan
    got = ctx.sql(sql).to_arrow()
    want = ctx.sql("SELECT id FROM tp WHERE x * 2.0 > 40 AND id > 100").to_arrow()
    assert _sorted(got) == _sorted(want) and got.num_rows > 0


# ---- a TPC-H-shaped query --------------------------------------------------------------------


def disc_price(price: pa.Array, discount: pa.Array) -> pa.Array:
    return pc.multiply(price, pc.subtract(1.0, discount))


def test_udf_in_a_tpch_join_and_aggregate_equals_sql(tpch_dir):
    """TPC-H Q5's shape (six-way join, GROUP BY, ORDER BY) with the revenue computed by a
    scalar UDF and summed by a UDAF, against the query written in SQL, and against DuckDB
    running the same Python function as its own UDF."""
    ctx = register_tpch(pqe.Context(partitions=4), tpch_dir)
    try:
        ctx.register_udf("disc_price", disc_price, ["DOUBLE", "DOUBLE"], "DOUBLE")
        ctx.register_udaf("total", sum_update, sum_merge, ["DOUBLE"], "DOUBLE")
        body = ("FROM customer, orders, lineitem, supplier, nation, region "
                "WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey "
                "AND l_suppkey = s_suppkey AND c_nationkey = s_nationkey "
                "AND s_nationkey = n_nationkey AND n_regionkey = r_regionkey "
                "AND r_name = 'ASIA' AND o_orderdate >= DATE '1994-01-01' "
                "AND o_orderdate < DATE '1995-01-01' GROUP BY n_name")
        got = ctx.sql(f"SELECT n_name, total(disc_price(l_extendedprice, l_discount)) AS revenue "
                      f"{body} ORDER BY revenue DESC").to_arrow()
        want = ctx.sql(f"SELECT n_name, CAST(sum(l_extendedprice * (1 - l_discount)) AS DOUBLE) "
                       f"AS revenue {body} ORDER BY revenue DESC").to_arrow()
        assert got.num_rows == want.num_rows > 0
        assert got.column("n_name").to_pylist() == want.column("n_name").to_pylist()
        for g, w in zip(got.column("revenue").to_pylist(), want.column("revenue").to_pylist(),
                        strict=True):
            assert abs(g - w) <= 1e-9 * w
        # DuckDB, with the same Python function registered as its own Arrow UDF
        con = duckdb_tpch(tpch_dir)
        try:
            import duckdb

            dbl = duckdb.sqltype("DOUBLE")
            con.create_function("disc_price", disc_price, [dbl, dbl], dbl, type="arrow")
            duck = duck_arrow(con, f"SELECT n_name, sum(disc_price(CAST(l_extendedprice AS "
                                   f"DOUBLE), CAST(l_discount AS DOUBLE))) AS revenue {body} "
                                   f"ORDER BY revenue DESC")
        finally:
            con.close()
        assert got.column("n_name").to_pylist() == duck.column("n_name").to_pylist()
        for g, w in zip(got.column("revenue").to_pylist(), duck.column("revenue").to_pylist(),
                        strict=True):
            assert abs(g - w) <= 1e-9 * w
    finally:
        ctx.close()


def test_decimal_arguments_reach_the_function_as_declared(threads_ctx):
    """A DECIMAL argument declared DECIMAL arrives as decimal128 (never the engine's internal
    unscaled int64 form)."""
    ctx = threads_ctx
    seen = []

    def scale(a):
        seen.append(a.type)
        return pc.multiply(a, pa.scalar(decimal.Decimal(2), pa.decimal128(1, 0)))

    ctx.register_arrow("money", pa.table({"m": pa.array([decimal.Decimal("1.25"), None],
                                                         pa.decimal128(10, 2))}))
    ctx.register_udf("dbl_money", lambda a: pc.cast(scale(a), pa.decimal128(12, 2)),
                     ["DECIMAL(10,2)"], "DECIMAL(12,2)")
    got = ctx.sql("SELECT dbl_money(m) + m AS v FROM money").to_arrow()
    assert got.column("v").to_pylist() == [decimal.Decimal("3.75"), None]
    assert seen and all(t == pa.decimal128(10, 2) for t in seen)


def test_decimal_arguments_of_a_user_aggregate_stay_decimal(threads_ctx):
    """A decimal column summed by SUM and also read by a user aggregate (as its first or a
    later argument) reaches the aggregate as decimal128, not as the unscaled int64 the
    engine sums internally."""
    ctx = threads_ctx
    values = pa.array([decimal.Decimal(v) for v in ("1.25", "2.50", "3.00", "0.75", "1.00")],
                      pa.decimal128(10, 2))
    money = pa.table({"g": [1, 1, 2, 2, 2], "m": values, "n": values})
    ctx.register_arrow("money2", money)

    def first_type(a, b):
        assert a.type == b.type == pa.decimal128(10, 2), (a.type, b.type)
        return pc.sum(b).as_py()

    ctx.register_udaf("dec_sum", first_type, lambda s: sum(s.to_pylist(), decimal.Decimal(0)),
                      ["DECIMAL(10,2)", "DECIMAL(10,2)"], "DECIMAL(38,2)")
    got = ctx.sql("SELECT g, sum(m) AS a, dec_sum(n, m) AS b FROM money2 GROUP BY g "
                  "ORDER BY g").to_arrow().to_pylist()
    assert got == [{"g": 1, "a": decimal.Decimal("3.75"), "b": decimal.Decimal("3.75")},
                   {"g": 2, "a": decimal.Decimal("4.75"), "b": decimal.Decimal("4.75")}]
