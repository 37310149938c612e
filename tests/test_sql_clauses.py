"""Clauses sqlglot parses that pqe used to accept and ignore, now implemented: QUALIFY,
FETCH FIRST/NEXT ... ROWS ONLY / WITH TIES, LIMIT n PERCENT, LIMIT ALL, GROUP BY ALL, ORDER
BY ALL, VALUES ... ORDER BY / LIMIT, TABLESAMPLE and USING SAMPLE.

Answers are compared with DuckDB where it supports the construct, on the threaded, the
synchronous and a 4-partition context. DuckDB has no WITH TIES: those follow PostgreSQL.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from helpers import assert_same

import pqe

T = pa.table({
    "k": list(range(1, 11)),
    "g": [1, 1, 2, 2, 2, 3, 3, 3, 3, None],
    "v": [5.0, None, 3.0, 3.0, 1.0, 8.0, 2.0, 2.0, 9.0, 4.0],
    "s": list("abcdefghij"),
})
N = pa.table({"x": list(range(100_000)), "y": [i % 7 for i in range(100_000)]})

CONTEXTS = [pytest.param({}, id="threads"), pytest.param({"scheduler": "sync"}, id="sync"),
            pytest.param({"partitions": 4}, id="partitions4")]


@pytest.fixture(scope="module", params=CONTEXTS)
def ctx(request):
    c = pqe.Context(**request.param)
    c.register_arrow("t", T)
    c.register_arrow("n", N)
    yield c
    c.close()


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.execute("SET default_null_order = 'nulls_last_on_asc_first_on_desc'")
    con.register("t", T)
    con.register("n", N)
    yield con
    con.close()


# (sql, whether the row order is part of the answer)
VS_DUCKDB = [
    # QUALIFY
    ("select k from t qualify row_number() over (order by k desc) = 1", True),
    ("select k, row_number() over (partition by g order by v desc, k) as rn from t "
     "qualify rn = 1", False),
    ("select g, sum(v) as sv from t group by g qualify rank() over (order by sum(v) desc) <= 2",
     False),
    ("select g, k from t qualify k = max(k) over (partition by g)", False),
    ("select g, k, v from t qualify sum(v) over (partition by g) > 5 order by k", True),
    ("select k from t where k > 3 qualify lag(k) over (order by k) is not null order by k", True),
    ("select g, count(*) as c, rank() over (order by count(*)) as r from t group by g "
     "qualify c > 1 and g is not null order by g", True),
    # FETCH
    ("select k from t order by k fetch first 3 rows only", True),
    ("select k from t order by k desc offset 2 rows fetch next 3 rows only", True),
    ("select k from t order by k fetch first row only", True),
    ("select k, s from t order by s desc fetch first 2 rows only", True),
    # LIMIT ... PERCENT (floor of the share of all rows, after OFFSET)
    ("select k from t order by k limit 50 percent", True),
    ("select k, v from t order by v desc, k limit 30 percent", True),
    ("select k from t order by k limit 25 percent offset 2", True),
    ("select k from t order by k limit 0 percent", True),
    ("select k from t order by k limit 100 percent", True),
    ("select k from t order by k limit 35%", True),
    ("select count(*) from (select k from t limit 35 percent)", True),
    ("select count(*) from (select x from n limit 33.3333 percent)", True),
    ("select * from (select k from t order by k limit 40 percent) x order by k", True),
    # LIMIT ALL
    ("select k from t order by k limit all", True),
    ("select k from t order by k limit all offset 7", True),
    ("select k from t order by k limit null", True),
    # GROUP BY ALL / ORDER BY ALL
    ("select g, sum(v) from t group by all order by all", True),
    ("select g, g + 1 as h, count(*) from t group by all order by 1 nulls first", True),
    ("select g * 2, count(*) as c from t group by all order by all", True),
    ("select sum(v) from t group by all", True),
    ("select g, sum(v) from t group by all having sum(v) > 5 order by all desc", True),
    ("select g, v from t order by all", True),
    ("select g, v from t order by all desc", True),
    ("select g, v from t order by all desc nulls last", True),
    ("select distinct g from t order by all", True),
    ("select k from t union all select k + 10 from t order by all limit 4", True),
    ("select k from t union all select k from t order by all desc limit 3", True),
    # VALUES with ORDER BY / LIMIT
    ("values (3, 'a'), (1, 'b'), (2, 'c') order by 1 desc limit 2", True),
    ("values (3), (1), (2) order by 1 offset 1", True),
]


@pytest.mark.parametrize("sql, ordered", [pytest.param(s, o, id=s[:70]) for s, o in VS_DUCKDB])
def test_matches_duckdb(ctx, duck, sql, ordered):
    assert_same(ctx.sql(sql).to_arrow(), duck.sql(sql).to_arrow_table(), ordered=ordered)


@pytest.mark.parametrize("sql, expected", [
    # the rows up to position m+n after OFFSET m, and every row tied with the last of them
    ("select k, g from t order by g fetch first 3 rows with ties",
     [(1, 1), (2, 1), (3, 2), (4, 2), (5, 2)]),
    ("select k, g from t order by g fetch first 2 rows with ties", [(1, 1), (2, 1)]),
    ("select k, g from t order by g offset 1 rows fetch first 2 rows with ties",
     [(2, 1), (3, 2), (4, 2), (5, 2)]),
    ("select k, g from t order by g desc offset 5 rows fetch next 1 row with ties",
     [(3, 2), (4, 2), (5, 2)]),
    ("select k, g from t order by g desc offset 4 rows fetch next 1 row with ties", None),
    ("select k, g from t order by g fetch first 0 rows with ties", []),
    ("select g from t order by g nulls first fetch first 1 row with ties", [(None,)]),
])
def test_fetch_with_ties(ctx, sql, expected):
    got = [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()]
    if expected is None:  # the 5th row is one of four tied rows, none after it: one row
        assert len(got) == 1 and got[0][1] == 3
        return
    key = [r[1] if len(r) > 1 else r[0] for r in got]
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert key == [r[1] if len(r) > 1 else r[0] for r in expected]  # in ORDER BY order


def test_qualify_needs_a_window_function(ctx):
    with pytest.raises(pqe.BindError, match="QUALIFY needs a window function"):
        ctx.sql("select g, count(*) from t group by g qualify count(*) > 1")


def test_with_ties_needs_order_by(ctx):
    with pytest.raises(pqe.BindError, match="WITH TIES needs an ORDER BY"):
        ctx.sql("select k from t fetch first 2 rows with ties")


@pytest.mark.parametrize("sql", ["select k from t limit 150 percent",
                                 "select k from t limit -1 percent"])
def test_limit_percent_range(ctx, sql):
    with pytest.raises(pqe.Error):
        ctx.sql(sql).to_arrow()


# ---- TABLESAMPLE / USING SAMPLE -------------------------------------------------------------


def count(ctx, sql):
    return ctx.sql(sql).to_arrow().column(0)[0].as_py()


@pytest.mark.parametrize("sql, expected", [
    ("select count(*) from n tablesample system (0 percent)", 0),
    ("select count(*) from n tablesample bernoulli (0%)", 0),
    ("select count(*) from n using sample 100 percent (bernoulli)", 100_000),
    ("select count(*) from n using sample 100%", 100_000),
    ("select count(*) from n using sample 1 rows", 1),
    ("select count(*) from n using sample 7", 7),
    ("select count(*) from n tablesample reservoir(123 rows)", 123),
    ("select count(*) from n tablesample system(3 rows)", 3),
    ("select count(*) from t using sample 20 rows", 10),
    ("select count(*) from n using sample 2.5 rows", 2),
])
def test_sample_sizes(ctx, duck, sql, expected):
    assert count(ctx, sql) == expected == duck.sql(sql).fetchall()[0][0]


@pytest.mark.parametrize("percent", [5, 15, 25, 35, 45, 55, 65, 33.3])
def test_reservoir_percentage_rounds_half_up_like_duckdb(ctx, duck, percent):
    sql = f"select count(*) from t using sample {percent} percent (reservoir)"
    assert count(ctx, sql) == duck.sql(sql).fetchall()[0][0]


@pytest.mark.parametrize("method", ["bernoulli", "system"])
def test_percentage_samples_are_about_the_right_size(ctx, method):
    got = count(ctx, f"select count(*) from n using sample 10 percent ({method}, 7)")
    low, high = (8_500, 11_500) if method == "bernoulli" else (6_000, 14_000)
    assert low <= got <= high


def test_system_sampling_keeps_whole_blocks(ctx):
    rows = ctx.sql("select x from n using sample 30 percent (system, 11) order by x").to_arrow()
    xs = rows.column(0).to_pylist()
    blocks = {x // 2048 for x in xs}
    assert len(xs) == sum(min(2048, 100_000 - b * 2048) for b in blocks)


REPEATABLE = [
    "select sum(x), count(*) from n tablesample bernoulli (10 percent) repeatable (42)",
    "select sum(x), count(*) from n using sample 10 percent (bernoulli, 42)",
    "select sum(x), count(*) from n using sample 20% (system, 5)",
    "select x from n using sample reservoir(5 rows) repeatable (3) order by x",
    "select count(*), sum(x) from n using sample 33 percent (reservoir, 9)",
    "select y, count(*) from n tablesample bernoulli(50%) repeatable (1) group by y order by y",
]


@pytest.mark.parametrize("sql", REPEATABLE)
def test_repeatable_samples_are_the_same_on_every_scheduler(sql):
    answers = []
    for kw in ({}, {"scheduler": "sync"}, {"partitions": 4}, {"partitions": 3}):
        with pqe.Context(**kw) as c:
            c.register_arrow("n", N)
            answers.append(c.sql(sql).to_arrow().to_pylist())
            answers.append(c.sql(sql).to_arrow().to_pylist())  # and on every run
    assert all(a == answers[0] for a in answers)


def test_repeatable_parquet_sample_across_partitionings(tpch_dir):
    from helpers import register_tpch

    sql = ("select count(*), sum(l_orderkey) from lineitem "
           "tablesample bernoulli (5 percent) repeatable (17)")
    answers = []
    for kw in ({}, {"partitions": 4}, {"scheduler": "sync"}):
        with register_tpch(pqe.Context(**kw), tpch_dir) as c:
            answers.append(c.sql(sql).to_arrow().to_pylist())
    assert answers[0] == answers[1] == answers[2]
    assert 0 < answers[0][0]["count(*)"] < 6000


def test_different_seeds_differ(ctx):
    a = ctx.sql("select sum(x) from n using sample 1 percent (bernoulli, 1)").to_arrow()
    b = ctx.sql("select sum(x) from n using sample 1 percent (bernoulli, 2)").to_arrow()
    assert a != b


def test_using_sample_applies_before_where(ctx):
    # DuckDB: USING SAMPLE samples the FROM clause (after joins), then WHERE filters
    sampled = ctx.sql("select x from n using sample reservoir(50 rows) repeatable (4)").to_arrow()
    filtered = ctx.sql("select x from n where x % 2 = 0 "
                       "using sample reservoir(50 rows) repeatable (4)").to_arrow()
    assert sorted(filtered.column(0).to_pylist()) == sorted(
        x for x in sampled.column(0).to_pylist() if x % 2 == 0)


def test_tablesample_applies_to_its_table(ctx):
    out = ctx.sql("select count(*) from t join n tablesample reservoir(3 rows) repeatable (1) "
                  "on t.k = n.y").to_arrow()
    assert out.column(0)[0].as_py() <= 3
    out = ctx.sql("select count(*) from (select * from n) s tablesample 4 rows").to_arrow()
    assert out.column(0)[0].as_py() == 4


def test_sample_in_explain(ctx):
    text = ctx.sql("select count(*) from n using sample 10 percent (bernoulli, 42)").explain()
    assert "Sample: bernoulli 10% repeatable(42)" in text
    text = ctx.sql("select * from n tablesample reservoir(5 rows)").explain()
    assert "Sample: reservoir 5 rows" in text


@pytest.mark.parametrize("sql, error", [
    ("select * from n using sample 10 (bernoulli)", "BERNOULLI sampling takes a percentage"),
    ("select * from n tablesample system (10)", "is 10 percent in PostgreSQL and 10 rows in"),
    ("select * from n using sample 150 percent", "out of range"),
    ("select * from n using sample (select 5)", None),
    ("select * from n tablesample bernoulli (10%) repeatable (1.5)", "must be an integer"),
])
def test_sample_errors(ctx, sql, error):
    with pytest.raises(pqe.Error) as info:
        ctx.sql(sql).to_arrow()
    if error:
        assert error in str(info.value)
