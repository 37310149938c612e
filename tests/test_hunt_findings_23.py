"""Name binding through stars, USING and NATURAL joins (hunt "names", session 26).

Each of these returned a wrong answer without an error before: a REPLACE of a USING key or
of a quoted name that was ignored, a NATURAL join on a name its left side held twice, the
USING checks skipped when a FROM item was a `SELECT *` subquery or WITH query. Answers are
compared with DuckDB's where it answers; where pqe refuses, the refusal must name the
construct."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pqe

duckdb = pytest.importorskip("duckdb")

T = pa.table({"a": [1, 2], "b": [10, 20]})
U = pa.table({"a": [1, 2], "c": [7, 8]})
T3 = pa.table({"a": [1, 2], "k": [10, 20]})
U3 = pa.table({"a": [1, 2], "k": [20, 10]})
V3 = pa.table({"k": [10], "d": ["x"]})
UPPER = pa.table({"A": [1, 2], "b": [10, 20]})
UPPER_U = pa.table({"A": [1, 3], "c": [7, 8]})
MIXED_T = pa.table({"Mixed": [1, 2], "b": [10, 20]})
MIXED_U = pa.table({"Mixed": [1, 2], "c": [7, 8]})

TABLES = {"t": T, "u": U, "t3": T3, "u3": U3, "v3": V3, "up": UPPER, "upu": UPPER_U,
          "mt": MIXED_T, "mu": MIXED_U}


@pytest.fixture(params=[1, 3], ids=["p1", "p3"])
def ctx(request):
    c = pqe.Context(partitions=request.param)
    for name, table in TABLES.items():
        c.register_arrow(name, table)
    return c


def duck(sql: str):
    con = duckdb.connect()
    for name, table in TABLES.items():
        con.register(name, table)
    cur = con.execute(sql)
    return [d[0] for d in cur.description], sorted(cur.fetchall())


def ours(ctx, sql: str):
    t = ctx.sql(sql).to_arrow()
    return t.column_names, sorted(zip(*(c.to_pylist() for c in t.columns), strict=True))


@pytest.mark.parametrize("sql", [
    'select * replace (0 as "A") from up',
    "select * replace (0 as A) from up",
    "select * replace (b * 2 as b) from up",
    "select * exclude (A) from up",
    'select * exclude ("A") from up',
    "select * exclude (a) from (select * from up) s",
    "select * replace (b + 1 as b) from (select * from t) s",
    'select "A" from (select * replace (b as "A") from up) s',
    "select * from up join upu using (A)",
    "select * from up left join upu using (a)",
    "select * from up full join upu using (A)",
    "select * from mt natural join mu",
    "with x as (select * from up) select * from x join upu using (a)",
    "select * from t join u using (a) cross join (select b from t) z",
])
def test_star_modifiers_and_merged_keys_match_duckdb(ctx, sql):
    """Values and names: a replaced or merged column keeps the name the data spells it with
    (`USING (A)` gave a column a, `REPLACE (0 AS "A")` was ignored)."""
    assert ours(ctx, sql) == duck(sql)


@pytest.mark.parametrize("sql", [
    "select * replace (a * 100 as a) from t join u using (a)",
    "select * replace (a * 100 as a) from t natural join u",
    "select * replace (a * 100 as a) from t left join u using (a)",
])
def test_replace_of_a_using_key_is_refused_not_ignored(ctx, sql):
    # the key stayed [1, 2]; DuckDB gives [100, 200]
    with pytest.raises(pqe.UnsupportedError, match="REPLACE of the USING or NATURAL join key 'a'"):
        ctx.sql(sql).to_arrow()


def test_the_refusal_suggests_a_form_that_works(ctx):
    got = ours(ctx, "select a * 100 as a, * exclude (a) from t join u using (a)")
    assert got == (["a", "b", "c"], [(100, 10, 7), (200, 20, 8)])


@pytest.mark.parametrize("sql", [
    'select * exclude ("a") from up',
    'select * replace (0 as "a") from up',
    'select * exclude ("B") from up',
])
def test_a_quoted_star_modifier_name_is_exact(ctx, sql):
    # accepted before and did nothing: quoted names are exact, the columns are "A" and "b"
    with pytest.raises(pqe.BindError, match="is not a column of the star"):
        ctx.sql(sql).to_arrow()


@pytest.mark.parametrize("sql", [
    "select * from t3 join u3 using (a) natural join v3",
    "select * from t3 join u3 on t3.a = u3.a natural join v3",
    "select * from t3 cross join u3 natural left join v3",
    "select * from t3 join (select * from u3) y on t3.a = y.a join v3 using (k)",
    ("with x as (select * from t3), y as (select * from u3) "
    "select * from x join y on x.a = y.a join v3 using (k)"),
    ("select * from t3 join (select * from (select * from u3) q) y on t3.a = y.a "
    "natural join v3"),
])
def test_a_key_its_left_side_holds_twice_is_ambiguous(ctx, sql):
    # joined on t3.k and dropped the other k before: PostgreSQL and DuckDB refuse these
    with pytest.raises(pqe.AmbiguousColumnError, match="'k' is ambiguous"):
        ctx.sql(sql).to_arrow()


@pytest.mark.parametrize("sql", [
    "select * from t join u using (a) cross join (select * from t) z",
    "select * from t join u using (a) join (select * from t) z on z.a = t.a",
    "with z as (select * from t) select * from t join u using (a) cross join z",
])
def test_star_over_using_then_a_star_subquery_is_not_short_a_column(ctx, sql):
    # gave a, b, c, b: z.a was missing (DuckDB: a, b, c, a, b)
    with pytest.raises(pqe.UnsupportedError, match="SELECT \\* over a USING or NATURAL join"):
        ctx.sql(sql).to_arrow()


@pytest.mark.parametrize("sql", [
    "select * from v3 join (t join u using (a)) on v3.k = t.b",
    "select * from v3 cross join (t join u using (a))",
    "select * from v3 join (t natural join u) on v3.k = t.b",
])
def test_a_parenthesized_using_join_on_the_right_is_refused_by_name(ctx, sql):
    # was BindError "Unknown table: " (no name)
    with pytest.raises(pqe.UnsupportedError, match="parenthesized join holding a USING"):
        ctx.sql(sql).to_arrow()


def test_a_parenthesized_plain_join_on_the_right_answers(ctx):
    sql = "select * from v3 join (t join u on t.a = u.a) on v3.k = t.b"
    assert ours(ctx, sql) == duck(sql)


def test_using_after_a_parenthesized_using_join_still_answers(ctx):
    sql = "select * from (t join u using (a)) join t3 using (a)"
    assert ours(ctx, sql) == duck(sql)


@pytest.mark.parametrize("sql", [
    "select * exclude (nosuch) from (values (1, 2)) v",
    "select * exclude (nosuch) from t, lateral (select t.a + 1 as z) l",
    "select * replace (1 as nosuch) from (select a + 1 from t) s",
    "select * exclude (nosuch) from (select * from t union all select * from t) s",
    "select * exclude (nosuch) from (select * exclude (b) from t) s",
    "select * exclude (b) from (select * exclude (b) from t) s",
])
def test_a_star_modifier_naming_no_column_is_an_error_over_any_from_item(ctx, sql):
    # VALUES without column names and LATERAL were not looked into: the name was ignored
    with pytest.raises(pqe.BindError, match="is not a column of the star"):
        ctx.sql(sql).to_arrow()


@pytest.mark.parametrize("sql, names", [
    ("select * exclude (col1) from (values (1, 2)) v", ["col0"]),
    ("select * exclude (col1) from (values (1, 2)) v(a)", ["a"]),
    ("select * exclude (z) from t, lateral (select t.a + 1 as z) l", ["a", "b"]),
    ("select * exclude (a) from (select * exclude (b) from t) s, u", ["c"]),
])
def test_star_modifiers_over_values_lateral_and_nested_stars(ctx, sql, names):
    assert ctx.sql(sql).to_arrow().column_names == names


@pytest.mark.parametrize("sql, names, first", [
    # a derived column "A" while the table up holds a column A (key a): the name was mapped
    # to the table's key and matched nothing, so the modifier was ignored
    ('select * replace (0 as "A") from (select b as "A" from up) s', ["A"], [0, 0]),
    ('select * replace (0 as A) from (select b as "A" from up) s', ["A"], [0, 0]),
    ('select * exclude ("A") from (select b as "A", b from up) s', ["b"], [10, 20]),
    ('select * exclude ("A") from (select "A", b from up) s', ["b"], [10, 20]),
    ("select * exclude (A) from (select \"A\", b from up) s", ["b"], [10, 20]),
    # a derived column named by the query keeps the query's name (it took the table's "A")
    ("select * replace (0 as a) from (select b as a from up) s", ["a"], [0, 0]),
    ('select * exclude ("b + 1") from (select b + 1, b from up) s', ["b"], [10, 20]),
    ("select t.* replace (t.b * 10 as b) from up, t", ["a", "b"], [1, 2, 1, 2]),
])
def test_star_modifiers_name_the_star_s_own_columns(ctx, sql, names, first):
    t = ctx.sql(sql).to_arrow()
    assert t.column_names == names
    assert sorted(t.column(0).to_pylist()) == sorted(first)


def test_replace_of_a_name_two_tables_hold_is_ambiguous(ctx):
    # both tables' b were replaced (DuckDB keeps one column of the name)
    with pytest.raises(pqe.AmbiguousColumnError, match="in REPLACE is ambiguous"):
        ctx.sql("select * replace (t.b * 10 as b) from up, t").to_arrow()


# ---- a filter over GROUP BY / window keys that tells apart values the grouping holds equal
# (hunt "joins2"): pushed below the aggregate or window it ran on input rows and made a group
# (or a window partition) of the rows it kept

EQUAL_KEYS = pa.table({
    "f": pa.array([0.0, -0.0, -0.0], pa.float64()),
    "iv": pa.array([pa.MonthDayNano([1, 0, 0]), pa.MonthDayNano([0, 30, 0]),
                    pa.MonthDayNano([0, 30, 0])], pa.month_day_nano_interval()),
    "v": pa.array([1, 2, 3], pa.int64())})


@pytest.fixture(params=[1, 3], ids=["p1", "p3"])
def eq_ctx(request):
    c = pqe.Context(partitions=request.param)
    c.register_arrow("t", EQUAL_KEYS)
    return c


@pytest.mark.parametrize("sql", [
    ("select * from (select f, count(*) c, sum(v) s from t group by f) z "
    "where f::varchar = '-0.0'"),
    ("select * from (select iv, count(*) c, sum(v) s from t group by iv) z "
    "where extract(day from iv) = 30"),
    "select iv, count(*) c from t group by iv having extract(day from iv) = 30",
    "select f, count(*) c from t group by f having f::varchar = '-0.0'",
    "select * from (select distinct iv from t) z where extract(day from iv) = 30",
])
def test_a_group_filter_that_tells_equal_keys_apart_is_not_pushed_below(eq_ctx, sql):
    # the unfiltered query has one group, keyed 0.0 (1 month): the filter rejects it. The
    # pushed filter gave a group (-0.0, c=2) (30 days, c=2) the query does not have.
    assert eq_ctx.sql(sql).to_arrow().num_rows == 0


@pytest.mark.parametrize("sql", [
    ("select v, c from (select f, v, count(*) over (partition by f) c from t) z "
    "where f::varchar = '-0.0'"),
    ("select v, c from (select iv, v, count(*) over (partition by iv) c from t) z "
    "where extract(day from iv) = 30"),
])
def test_a_window_filter_that_tells_equal_keys_apart_keeps_the_partition(eq_ctx, sql):
    # rows 2 and 3 pass; their partition holds all three rows (it said c = 2)
    got = sorted(tuple(r.values()) for r in eq_ctx.sql(sql).to_arrow().to_pylist())
    assert got == [(2, 3), (3, 3)]


@pytest.mark.parametrize("sql", [
    "select * from (select f, count(*) c from t group by f) z where f = 0",
    "select * from (select iv, count(*) c from t group by iv) z where iv = interval '30 days'",
    "select * from (select f, v, count(*) over (partition by f) c from t) z where f >= 0",
])
def test_comparisons_with_literals_still_go_below(eq_ctx, sql):
    t = eq_ctx.sql(sql).to_arrow()
    assert t.num_rows >= 1 and set(t.column("c").to_pylist()) == {3}
    plan = eq_ctx.sql("explain " + sql).to_arrow().column(0).to_pylist()
    text = "\n".join(str(x) for x in plan)
    optimized = text.split("== Optimized Logical Plan ==")[-1].split("== Physical Plan ==")[0]
    assert "filters=[" in optimized  # pushed into the scan


# ---- FETCH FIRST p PERCENT ROWS ONLY is the ceiling of p% of the rows (hunt "ordering": it
# was the floor, LIMIT p PERCENT's DuckDB rule, so 1 percent of 6 rows was none)

@pytest.mark.parametrize("sql, ids", [
    ("select id from s order by id fetch first 1 percent rows only", [1]),
    ("select id from s order by id fetch first 34 percent rows only", [1, 2, 3]),
    ("select id from s order by id offset 1 fetch first 20 percent rows only", [2, 3]),
    ("select id from s order by id fetch first 50 percent rows only", [1, 2, 3]),
    ("select id from s order by id fetch first 0 percent rows only", []),
    ("select id from s order by id fetch first 100 percent rows only", [1, 2, 3, 4, 5, 6]),
    # LIMIT p PERCENT keeps DuckDB's floor
    ("select id from s order by id limit 34 percent", [1, 2]),
    ("select id from s order by id limit 1 percent", []),
])
def test_fetch_percent_rounds_up_limit_percent_down(ctx, sql, ids):
    ctx.register_arrow("s", pa.table({"id": list(range(1, 7))}))
    assert ctx.sql(sql).to_arrow().column(0).to_pylist() == ids
    if sql.startswith("select id from s order by id limit"):
        assert ids == [r[0] for r in duck(sql.replace(" s ", " (select unnest(range(1, 7)) "
                                                                "id) s "))[1]]


# ---- the review of this change (review26)

CASES = {"cs": pa.table({"x": [1, 2], "X": [3, 4], "y": [5, 6]}),
         "t4": pa.table({"a": [1, 2, 3], "b": [10, 20, 30]}),
         "u4": pa.table({"a": [1, 2, 4], "c": [7, 8, 9]})}


@pytest.fixture(params=[1, 3], ids=["p1", "p3"])
def rctx(request):
    c = pqe.Context(partitions=request.param)
    for name, table in CASES.items():
        c.register_arrow(name, table)
    return c


@pytest.mark.parametrize("sql, names, second", [
    # of columns x and X, an unquoted x is x (as `select x` binds it): EXCLUDE dropped both
    ("select * exclude (x) from cs", ["X", "y"], [5, 6]),
    ("select cs.* exclude (X) from cs", ["X", "y"], [5, 6]),
    ("select * replace (0 as x) from cs", ["x", "X", "y"], [3, 4]),
    ('select * exclude ("X") from cs', ["x", "y"], [5, 6]),
    # a derived table's repeated name made unique (a_1) is a column of the star
    ("select * exclude (a_1) from (select * from t4 join u4 on t4.a = u4.a) s",
     ["a", "b", "c"], [10, 20]),
    ("select * replace (a_1 * 9 as a_1) from (select * from t4 join u4 on t4.a = u4.a) s",
     ["a", "b", "a_1", "c"], [10, 20]),
    ("with w as (select * from t4 join u4 on t4.a = u4.a) select * exclude (a_1) from w",
     ["a", "b", "c"], [10, 20]),
    ("select * exclude (a_1) from (select a, a from t4) s", ["a"], None),
    # a qualified EXCLUDE inside a derived table removes that table's column only
    ("select * exclude (a) from (select * exclude (u4.a) from t4 join u4 on t4.a = u4.a) s",
     ["b", "c"], [7, 8]),
    (("select * replace (a + 100 as a) from "
     "(select * exclude (u4.a) from t4 join u4 on t4.a = u4.a) s"), ["a", "b", "c"], [10, 20]),
    # a merged USING key is one column of the derived table
    ("select * exclude (a) from (select * from t4 join u4 using (a)) s", ["b", "c"], [7, 8]),
    # a column list renames the first columns only
    ("select * exclude (y) from (select a as x, b as y from t4) s(p)", ["p"], None),
])
def test_star_modifier_review_cases(rctx, sql, names, second):
    t = rctx.sql(sql).to_arrow()
    assert t.column_names == names
    if second is not None:
        assert sorted(t.column(1).to_pylist()) == sorted(second)


def test_replace_of_a_renamed_derived_column_multiplies_it(rctx):
    t = rctx.sql("select * replace (a_1 * 9 as a_1) from "
                 "(select * from t4 join u4 on t4.a = u4.a) s order by a").to_arrow()
    assert t.column("a_1").to_pylist() == [9, 18]


@pytest.mark.parametrize("sql", [
    # a NATURAL key through a partial column list: the REPLACE was ignored
    "with w(p) as (select a, b from t4) select * replace (b + 100 as b) from w natural join t4",
    ("select * replace (y + 100 as y) from (select a as x, b as y from t4) s(p) "
    "natural join (select 10 as y) r"),
])
def test_replace_of_a_natural_key_through_a_column_list_is_refused(rctx, sql):
    with pytest.raises(pqe.UnsupportedError, match="REPLACE of the USING or NATURAL join key"):
        rctx.sql(sql).to_arrow()


def test_a_using_key_held_twice_through_a_column_list_is_ambiguous(rctx):
    # answered with one copy of b joined and the other dropped (DuckDB, PostgreSQL: ambiguous)
    with pytest.raises(pqe.AmbiguousColumnError, match="'b' is ambiguous"):
        rctx.sql("select * from (select a, b from t4) s(p) join t4 t1 on true "
                 "join t4 using (b)").to_arrow()


def test_star_over_a_later_using_join_of_a_table_holding_an_earlier_key(rctx):
    # t2.a was left out of the star (PostgreSQL, DuckDB: b, a, c, a)
    with pytest.raises(pqe.UnsupportedError, match="SELECT \\* over a USING or NATURAL join"):
        rctx.sql("select * from t4 join u4 using (a) join t4 t2 using (b)").to_arrow()
    assert rctx.sql("select t4.b from t4 join u4 using (a) join t4 t2 using (b)"
                    ).to_arrow().num_rows == 2


@pytest.mark.parametrize("n, percent, fetch, limit", [
    (250, "64.4", 161, 161), (375, "8.8", 33, 33), (1000, "64.4", 644, 644),
    (3000, "1.1", 33, 33), (3000, "2.3", 69, 69), (6, "1", 1, 0), (7, "33.3333", 3, 2),
])
def test_percent_counts_are_exact(rctx, n, percent, fetch, limit):
    # in DOUBLEs 250 * 64.4 / 100 is 161.00000000000003 (ceiling 162) and 3000 * 2.3 / 100
    # is 68.99999999999999 (floor 68)
    rctx.register_arrow("n", pa.table({"id": list(range(n))}))
    count = "select count(*) from (select * from n order by id {}) s"
    got = rctx.sql(count.format(f"fetch first {percent} percent rows only")).to_arrow()
    assert got.column(0)[0].as_py() == fetch
    got = rctx.sql(count.format(f"limit {percent} percent")).to_arrow()
    assert got.column(0)[0].as_py() == limit


# ---- WITH RECURSIVE ... UNION held its rows so far as one chunk per round, which every
# round's dedupe join went through: 3,000 rounds of one row took 330 s (hunt "cte")

def test_recursive_union_keeps_its_rows_so_far_in_few_chunks(monkeypatch):
    from pqe.execution import driver

    chunks: list[int] = []
    real = driver.concat

    def counting(tables):
        out = real(tables)
        chunks.append(max((c.num_chunks for c in out.columns), default=0))
        return out

    monkeypatch.setattr(driver, "concat", counting)
    ctx = pqe.Context(partitions=1)
    got = ctx.sql("with recursive r(n) as (select 1 union select n + 1 from r where n < 600) "
                  "select count(*), sum(n) from r").to_arrow().to_pylist()
    assert got == [{"count(*)": 600, "sum(n)": 180300}]
    # the rows so far are a few runs of decreasing size (O(log rounds) chunks), not 600
    assert len(chunks) > 500 and max(chunks[:-1]) <= 24


@pytest.mark.parametrize("partitions", [1, 3])
def test_recursive_union_over_a_cyclic_graph_matches_duckdb(partitions):
    edges = pa.table({"src": [1, 2, 3, 3, 4, 5, 6, 6], "dst": [2, 3, 1, 4, 5, 6, 4, None]})
    ctx = pqe.Context(partitions=partitions)
    ctx.register_arrow("e", edges)
    sql = ("with recursive walk(node, hops) as (select 1, 0 union "
           "select e.dst, least(w.hops + 1, 3) from walk w join e on e.src = w.node "
           "where e.dst is not null) select node, hops from walk")
    con = duckdb.connect()
    con.register("e", edges)
    want = sorted(con.execute(sql).fetchall())
    got = sorted(tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist())
    assert got == want


# ---- the second review (review26b)

@pytest.mark.parametrize("n, clause, rows", [
    # p with more digits than a million-denominator fraction holds: it was rounded onto a
    # boundary (99.9999999 -> 100) and kept one row too many, or to 0 (1e-7) and kept none
    (7, "limit 99.9999999 percent", 6),
    (3, "limit 33.33333333 percent", 0),
    (7, "limit 14.285714285714 percent", 0),
    (3, "fetch first 66.66666667 percent rows only", 3),
    (10, "fetch first 0.0000001 percent rows only", 1),
    (10, "fetch first 1e-300 percent rows only", 1),
    (10, "limit 1e-300 percent", 0),
    (0, "fetch first 1e-300 percent rows only", 0),
])
def test_percent_with_many_digits_is_exact(rctx, n, clause, rows):
    rctx.register_arrow("n", pa.table({"id": list(range(n))}))
    got = rctx.sql(f"select count(*) from (select * from n order by id {clause}) s").to_arrow()
    assert got.column(0)[0].as_py() == rows


def test_fetch_percent_parameter(rctx):
    rctx.register_arrow("n", pa.table({"id": list(range(10))}))
    got = rctx.sql("select id from n order by id fetch first ? percent rows only", [1e-7])
    assert got.to_arrow().column(0).to_pylist() == [0]


@pytest.mark.parametrize("sql", [
    # a parenthesized USING (or NATURAL) join on the left: t2.a was left out of the star
    "select * from (t4 join u4 using (a)) join t4 t2 using (b)",
    "select * from (t4 natural join u4) join t4 t2 using (b)",
    "select * from (t4 join u4 using (a)) join (select * from t4) s using (b)",
])
def test_star_over_a_parenthesized_using_join_then_a_later_key(rctx, sql):
    with pytest.raises(pqe.UnsupportedError, match="SELECT \\* over a USING or NATURAL join"):
        rctx.sql(sql).to_arrow()


@pytest.mark.parametrize("sql, names", [
    # a column list renames before repeated names are made unique: p, b, a, c (DuckDB too)
    ("select * exclude (a) from (select * from t4 join u4 on t4.a = u4.a) s(p)",
     ["p", "b", "c"]),
    # a parenthesized join is not a derived table: its names are made unique only once,
    # at the derived table around it (a, b, a_1, c, a_2, b_1)
    (("select * exclude (a_2) from "
     "(select * from t4 join (u4 join t4 t2 on u4.a = t2.a) on t4.a = u4.a) s"),
     ["a", "b", "a_1", "c", "b_1"]),
])
def test_unique_names_follow_column_lists_and_derived_tables_only(rctx, sql, names):
    assert rctx.sql(sql).to_arrow().column_names == names


@pytest.mark.parametrize("sql", [
    "select * exclude (a_1) from (select * from t4 join u4 on t4.a = u4.a) s(p)",
    "select * replace (0 as a_1) from (select * from t4 join u4 on t4.a = u4.a) s(p)",
    "with s(p) as (select * from t4 join u4 on t4.a = u4.a) select * exclude (a_1) from s",
])
def test_a_name_the_column_list_took_away_is_not_a_column_of_the_star(rctx, sql):
    # accepted and ignored: the binder made names unique before renaming (p, b, a_1, c)
    with pytest.raises(pqe.BindError, match="is not a column of the star"):
        rctx.sql(sql).to_arrow()


def test_replace_through_a_column_list_replaces_the_right_column(rctx):
    t = rctx.sql("select * replace (a * 100 as a) from "
                 "(select * from t4 join u4 on t4.a = u4.a) s(p) order by p").to_arrow()
    assert t.column_names == ["p", "b", "a", "c"]
    assert t.column("a").to_pylist() == [100, 200] and t.column("p").to_pylist() == [1, 2]


@pytest.mark.parametrize("sql", [
    # the key merged inside a parenthesized join: the REPLACE was ignored (DuckDB: 100, 200)
    "select * replace (a * 100 as a) from (t4 join u4 using (a))",
    "select * replace (a * 100 as a) from (t4 natural join u4)",
    "select * replace (a * 100 as a) from t4 x join (t4 join u4 using (a)) on x.b = t4.b",
])
def test_replace_of_a_key_merged_in_a_parenthesized_join_is_refused(rctx, sql):
    with pytest.raises(pqe.UnsupportedError, match="REPLACE of the USING or NATURAL join key"):
        rctx.sql(sql).to_arrow()


def test_replace_of_a_name_a_parenthesized_join_holds_twice_is_ambiguous(rctx):
    with pytest.raises(pqe.AmbiguousColumnError, match="in REPLACE is ambiguous"):
        rctx.sql("select * replace (1 as a) from (t4 join u4 on t4.a = u4.a)").to_arrow()
    got = rctx.sql("select * replace (c * 100 as c) from (t4 join u4 using (a)) order by a")
    assert got.to_arrow().column("c").to_pylist() == [700, 800]


@pytest.mark.parametrize("sql, names", [
    # a key merged inside a parenthesized join is one column of the derived table around it:
    # the binder counted a and a_1, and `EXCLUDE (a_1)` was accepted and did nothing
    ("select * exclude (c) from (select * from (t4 join u4 using (a))) s", ["a", "b"]),
    ("select * from (select * from (t4 natural join u4)) s", ["a", "b", "c"]),
])
def test_a_parenthesized_join_merges_its_keys_once(rctx, sql, names):
    assert rctx.sql(sql).to_arrow().column_names == names


@pytest.mark.parametrize("sql", [
    "select * exclude (a_1) from (select * from (t4 join u4 using (a))) s",
    "select * exclude (a_1) from (select * from (t4 natural join u4)) s",
])
def test_no_a_1_behind_a_parenthesized_using_join(rctx, sql):
    with pytest.raises(pqe.BindError, match="is not a column of the star"):
        rctx.sql(sql).to_arrow()
