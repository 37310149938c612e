"""Builder completeness and the everyday API: when/otherwise, coalesce, window expressions
(.over), rename, drop, dict aggregations, each against the equivalent SQL (same answer, and
the same optimized plan where it should be); len/show/dtypes, unnamed DataFrames
(read_parquet, from_arrow, ...), notebook rendering, pandas/dask types, docstrings."""

from __future__ import annotations

import datetime
import decimal
import inspect

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import assert_same

import pqe
from pqe import col, lit
from pqe.plan.explain import format_plan

T = pa.table({
    "g": pa.array([1, 1, 2, 2, 2, 3, None, 3], pa.int64()),
    "t": pa.array([1, 2, 1, 2, 3, 1, 4, 2], pa.int64()),
    "x": pa.array([10, 20, 30, None, 50, 60, 70, 60], pa.int64()),
    "s": pa.array(["a", None, "<b>", "d&e", "e", None, "g", "h"]),
    "d": pa.array([decimal.Decimal("1.25"), None] + [decimal.Decimal(i) for i in range(6)],
                  pa.decimal128(10, 2)),
    "day": pa.array([datetime.date(2024, 1, i + 1) for i in range(7)] + [None]),
    "ts": pa.array([datetime.datetime(2024, 1, 1, i) for i in range(8)], pa.timestamp("us")),
})


@pytest.fixture
def bctx():
    ctx = pqe.Context(partitions=3)
    ctx.register_arrow("t", T)
    yield ctx
    ctx.close()


def same(df: pqe.DataFrame, sql_df: pqe.DataFrame, plan: bool = True, ordered: bool = False):
    assert df.columns == sql_df.columns
    assert_same(df.to_arrow(), sql_df.to_arrow(), ordered=ordered)
    if plan:
        assert format_plan(df.optimized_plan()) == format_plan(sql_df.optimized_plan())


# ---- CASE and coalesce -------------------------------------------------------------------------


def test_when_otherwise_and_coalesce_match_sql(bctx):
    df = bctx.table("t")
    built = df.select("g", size=pqe.when(col("x") > 40, "big").when(col("x") > 15, "mid")
                      .otherwise("small"),
                      flag=pqe.when(col("g") == 1, 1), first=pqe.coalesce("s", lit("?")),
                      n=pqe.coalesce(col("x"), col("t"), 0))
    sql = bctx.sql("SELECT g, CASE WHEN x > 40 THEN 'big' WHEN x > 15 THEN 'mid' ELSE 'small' END "
                   "AS size, CASE WHEN g = 1 THEN 1 END AS flag, coalesce(s, '?') AS first, "
                   "coalesce(x, t, 0) AS n FROM t")
    same(built, sql)
    # Polars' spelling builds the same CASE
    polars_style = df.select("g", size=pqe.when(col("x") > 40).then("big")
                             .when(col("x") > 15).then("mid").otherwise("small"),
                             flag=pqe.when(col("g") == 1).then(1), first=pqe.coalesce("s", lit("?")),
                             n=pqe.coalesce(col("x"), col("t"), 0))
    same(polars_style, sql)
    with pytest.raises(pqe.BindError, match="at least one"):
        pqe.coalesce()
    with pytest.raises(pqe.BindError, match=r"needs \.then\(value\) before \.otherwise"):
        pqe.when(col("x") > 1).otherwise(0)


# ---- windows ---------------------------------------------------------------------------------------


WINDOW_CASES = [
    (lambda: col("x").sum().over(partition_by="g", order_by="t"),
     "sum(x) OVER (PARTITION BY g ORDER BY t)"),
    (lambda: col("x").sum().over(partition_by="g"), "sum(x) OVER (PARTITION BY g)"),
    (lambda: col("x").mean().over(order_by="t", rows=(-1, 1)),
     "avg(x) OVER (ORDER BY t ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)"),
    (lambda: col("x").max().over(partition_by=["g"], order_by=[col("t").desc()], rows=(None, 0)),
     "max(x) OVER (PARTITION BY g ORDER BY t DESC ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"),
    (lambda: col("x").min().over(order_by="t", range=(-1, 0)),
     "min(x) OVER (ORDER BY t RANGE BETWEEN 1 PRECEDING AND CURRENT ROW)"),
    (lambda: pqe.count().over(partition_by="g"), "count(*) OVER (PARTITION BY g)"),
    (lambda: col("s").count().over(partition_by="g"), "count(s) OVER (PARTITION BY g)"),
    (lambda: pqe.row_number().over(partition_by="g", order_by=["t", "x"]),
     "row_number() OVER (PARTITION BY g ORDER BY t, x)"),
    (lambda: pqe.rank().over(order_by=col("x").desc()), "rank() OVER (ORDER BY x DESC)"),
    (lambda: pqe.dense_rank().over(order_by=col("x").asc(nulls_last=False)),
     "dense_rank() OVER (ORDER BY x ASC NULLS FIRST)"),
    (lambda: pqe.lag("x").over(partition_by="g", order_by="t"),
     "lag(x) OVER (PARTITION BY g ORDER BY t)"),
    (lambda: pqe.lead(col("x"), 2, -1).over(partition_by="g", order_by="t"),
     "lead(x, 2, -1) OVER (PARTITION BY g ORDER BY t)"),
    (lambda: pqe.first_value("s").over(partition_by="g", order_by="t"),
     "first_value(s) OVER (PARTITION BY g ORDER BY t)"),
    (lambda: pqe.ntile(2).over(order_by=["t", "x"]), "ntile(2) OVER (ORDER BY t, x)"),
    (lambda: pqe.percent_rank().over(partition_by="g", order_by="x"),
     "percent_rank() OVER (PARTITION BY g ORDER BY x)"),
]


@pytest.mark.parametrize("built, sql", WINDOW_CASES, ids=[s for _, s in WINDOW_CASES])
def test_window_expressions_match_sql(bctx, built, sql):
    df = bctx.table("t").select("g", "t", "x", w=built())
    same(df, bctx.sql(f"SELECT g, t, x, {sql} AS w FROM t"))


def test_windows_in_with_columns_and_expressions(bctx):
    df = bctx.table("t").with_columns(
        share=col("x") / col("x").sum().over(partition_by="g"),
        rn=pqe.row_number().over(partition_by="g", order_by="t"),
        x=col("x") * 2)
    sql = bctx.sql("SELECT g, t, x * 2 AS x, s, d, day, ts, x / sum(x) OVER (PARTITION BY g) AS "
                   "share, row_number() OVER (PARTITION BY g ORDER BY t) AS rn FROM t")
    same(df, sql, plan=False)
    # a window result can be filtered afterwards (QUALIFY-like)
    top = df.filter(col("rn") == 1).select("g", "t")
    assert sorted(top.to_pylist(), key=lambda r: (r["g"] is None, r["g"] or 0)) == [
        {"g": 1, "t": 1}, {"g": 2, "t": 1}, {"g": 3, "t": 1}, {"g": None, "t": 4}]


def test_window_misuse_is_explained(bctx):
    df = bctx.table("t")
    with pytest.raises(pqe.BindError, match=r"row_number\(\) is a window function: add .over"):
        df.select(pqe.row_number()).to_arrow()
    with pytest.raises(pqe.BindError, match="over\\(\\) applies to an aggregate"):
        col("x").over(partition_by="g")
    with pytest.raises(pqe.BindError, match="not allowed in filter"):
        df.filter(pqe.row_number().over(order_by="t") == 1)
    with pytest.raises(pqe.BindError, match="cannot mix aggregates and window"):
        df.select(col("x").sum(), pqe.rank().over(order_by="x"))
    with pytest.raises(pqe.BindError, match="ends before it starts"):
        col("x").sum().over(order_by="t", rows=(1, -1)).alias("w")._resolve(
            pqe.expressions.Resolver(df.logical_plan().schema))
    with pytest.raises(pqe.BindError, match="rows= or range=, not both"):
        col("x").sum().over(rows=(None, 0), range=(None, 0))


def test_tpch_window_matches_sql_and_duckdb(tpch_ctx, duck):
    o = tpch_ctx.table("orders").filter(col("o_custkey") < 200)
    built = o.select("o_custkey", "o_orderkey",
                     running=col("o_totalprice").sum().over(partition_by="o_custkey",
                                                             order_by=["o_orderdate", "o_orderkey"]),
                     r=pqe.rank().over(partition_by="o_custkey", order_by=col("o_totalprice").desc()))
    sql = ("SELECT o_custkey, o_orderkey, sum(o_totalprice) OVER (PARTITION BY o_custkey ORDER BY "
           "o_orderdate, o_orderkey) AS running, rank() OVER (PARTITION BY o_custkey ORDER BY "
           "o_totalprice DESC) AS r FROM orders WHERE o_custkey < 200")
    same(built, tpch_ctx.sql(sql))
    assert_same(built.to_arrow(), duck.sql(sql).to_arrow_table())


# ---- rename, drop, dict aggregation ------------------------------------------------------------------


def test_rename_and_drop_match_sql(bctx):
    df = bctx.table("t")
    same(df.rename({"x": "value", "g": "grp"}).drop("s", "d", "day", "ts"),
         bctx.sql("SELECT g AS grp, t, x AS value FROM t"))
    same(df.rename(x="y").select("y"), bctx.sql("SELECT x AS y FROM t"))
    with pytest.raises(pqe.UnknownColumnError, match="did you mean"):
        df.drop("xx")
    with pytest.raises(pqe.UnknownColumnError):
        df.rename({"nope": "x"})
    with pytest.raises(pqe.BindError, match="no columns"):
        df.select("x").drop("x")


def test_agg_with_a_dict_matches_sql(bctx):
    built = bctx.table("t").group_by("g").agg({"x": "sum", "t": ["min", "max"], "s": "n_unique"},
                                              n=pqe.count())
    assert built.columns == ["g", "sum(x)", "min(t)", "max(t)", "count(DISTINCT s)", "n"]
    sql = bctx.sql('SELECT g, sum(x) AS "sum(x)", min(t) AS "min(t)", max(t) AS "max(t)", '
                   'count(DISTINCT s) AS "count(DISTINCT s)", count(*) AS n FROM t GROUP BY g')
    same(built, sql)
    other = bctx.table("t").group_by("g").agg({"x": ["mean", "stddev_pop"]})
    assert other.columns == ["g", "avg(x)", "stddev_pop(x)"]
    assert_same(other.to_arrow(), bctx.sql(
        'SELECT g, avg(x) AS "avg(x)", stddev_pop(x) AS "stddev_pop(x)" FROM t GROUP BY g').to_arrow())
    with pytest.raises(pqe.BindError, match="unknown aggregate"):
        bctx.table("t").group_by("g").agg({"x": "nope"})


# ---- description, display -----------------------------------------------------------------------------


def test_len_show_dtypes_and_unnamed_dataframes(bctx, tmp_path, capsys):
    df = bctx.table("t")
    assert len(df) == 8 and bool(bctx.sql("SELECT 1 WHERE false"))
    assert df.columns == T.column_names and df.dtypes == T.schema.types
    assert df.schema.names == T.column_names
    df.sort("t").select("g", "s").show(3)
    out = capsys.readouterr().out
    assert "NULL" in out and "first 3 of 8 rows" in out and "None" not in out
    pq.write_table(T, tmp_path / "t.parquet")
    T.to_pandas().to_csv(tmp_path / "t.csv", index=False)
    assert bctx.read_parquet(tmp_path / "t.parquet").to_arrow().equals(T)
    assert "ParquetScan: t " in bctx.read_parquet(tmp_path / "t.parquet").explain()
    assert bctx.read_csv(str(tmp_path / "t.csv")).count() == 8
    assert bctx.from_arrow(T).filter(col("g") == 2).count() == 3
    assert bctx.from_arrow(pa.RecordBatchReader.from_batches(T.schema, T.to_batches())).count() == 8
    pdf = T.select(["g", "s"]).to_pandas()
    assert bctx.from_pandas(pdf).select(pqe.count()).to_pylist() == [{"count": 8}]
    assert bctx.tables() == ["t"]  # none of them registered a name


def test_repr_html(bctx):
    html = bctx.table("t").select("s", "x")._repr_html_()
    assert "<i>NULL</i>" in html and "None" not in html and ">nan<" not in html
    assert "&lt;b&gt;" in html and "d&amp;e" in html and "<b>" not in html
    assert "<p>8 rows</p>" in html
    big = bctx.from_arrow(pa.table({"n": list(range(25))}))
    assert "first 10 of 25 rows" in big._repr_html_()
    filtered = big.filter(col("n") > 3)  # the count would need the query: not run
    assert "first 10 rows (more not counted)" in filtered._repr_html_()
    # EXPLAIN's result renders as a plan: every line, preformatted
    explain = bctx.sql("EXPLAIN SELECT g, sum(x) FROM t GROUP BY g")
    html = explain._repr_html_()
    assert html.startswith("<pre>") and "== Physical Plan ==" in html and "<table>" not in html
    assert html.count("\n") == explain.count() - 1
    assert "== Logical Plan ==" in repr(explain)
    plan = bctx.table("t").explain()
    assert isinstance(plan, pqe.Plan) and isinstance(plan, str)
    assert plan._repr_html_().startswith("<pre>== Logical Plan ==") and repr(plan) == str(plan)


# ---- pandas and dask types -----------------------------------------------------------------------------


def test_to_pandas_types_like_duckdb(bctx):
    pdf = bctx.table("t").to_pandas()
    assert str(pdf["day"].dtype) == "datetime64[us]" and str(pdf["ts"].dtype) == "datetime64[us]"
    assert str(pdf["d"].dtype) == "float64" and pdf["d"][0] == 1.25
    assert str(pdf["x"].dtype) == "Int64" and str(pdf["t"].dtype) == "int64"
    assert pdf["day"].isna().tolist()[-1] and pdf["x"].isna().sum() == 1


def test_to_dask_dtypes_agree_with_partitions(bctx, tmp_path):
    ddf = bctx.table("t").to_dask()
    assert str(ddf.dtypes["day"]) == "datetime64[us]" and str(ddf.dtypes["d"]) == "float64"
    computed = ddf.compute()
    assert dict(computed.dtypes) == dict(ddf.dtypes)  # every partition agrees with the meta
    top = ddf[["day", "ts", "d", "x"]].max().compute()
    assert top["day"] == datetime.datetime(2024, 1, 7) and top["d"] == 5.0 and top["x"] == 70
    assert top["ts"] == datetime.datetime(2024, 1, 1, 7)
    ddf.to_parquet(str(tmp_path / "dask"))
    back = pq.read_table(tmp_path / "dask")
    assert back.num_rows == 8 and back.schema.field("day").type == pa.timestamp("us")


# ---- docstrings ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [pqe.DataFrame, pqe.GroupBy, pqe.Expr, pqe.Context],
                         ids=lambda c: c.__name__)
def test_every_public_method_has_a_docstring(cls):
    missing = []
    for name, member in inspect.getmembers(cls):
        if name.startswith("_"):
            continue
        fn = member.fget if isinstance(member, property) else member
        if callable(fn) or isinstance(member, property):
            if not (getattr(fn, "__doc__", None) or "").strip():
                missing.append(name)
    assert missing == []
    assert "Rows where" in pqe.DataFrame.filter.__doc__


def test_registered_dataframes_in_subqueries_self_joins_and_views(bctx):
    bctx.register_dataframe("big", bctx.table("t").filter(col("x") > 20).select("g", "t", "x"))
    assert bctx.sql("DESCRIBE big").to_pylist()[0] == {"column_name": "g", "column_type": "BIGINT",
                                                      "null": "YES"}
    got = bctx.sql("SELECT t, x FROM t WHERE x IN (SELECT x FROM big) AND EXISTS "
                   "(SELECT 1 FROM big b WHERE b.g = t.g)")
    same(got, bctx.sql("SELECT t, x FROM t WHERE x > 20 AND g IS NOT NULL"), plan=False)
    pairs = bctx.sql("SELECT a.x, b.t FROM big a JOIN big b ON a.x = b.x")
    assert_same(pairs.to_arrow(), bctx.sql(
        "SELECT a.x, b.t FROM (SELECT * FROM t WHERE x > 20) a JOIN "
        "(SELECT * FROM t WHERE x > 20) b ON a.x = b.x").to_arrow())
    bctx.sql("CREATE VIEW v AS SELECT g, count(*) AS n FROM big GROUP BY g")
    assert_same(bctx.table("v").to_arrow(),
                bctx.sql("SELECT g, count(*) AS n FROM t WHERE x > 20 GROUP BY g").to_arrow())
    # SQL over the name plans like SQL over the DataFrame's own query
    text = bctx.sql("SELECT x FROM big WHERE g = 2").explain()
    assert "Scan: t [x] filters=[(t.g = 2), (t.x > 20)]" in text.split("Optimized")[1]
