"""Findings of the subquery hunt: a GROUP BY key holding a subquery (`a + (SELECT max(a) FROM
u)`, `a IN (SELECT ..)`, EXISTS, a correlated scalar subquery) was refused with "column 't.a'
must appear in the GROUP BY clause" when the select list, HAVING or ORDER BY named it (by
position, alias or written again): a subquery binds to a new plan each time, so the bound
expressions never compared equal. Keys are now also found by their qualified SQL text. Also:
two select items of one expression named apart inside ROLLUP / CUBE / GROUPING SETS are two
keys (`SELECT x k, x k2 ... ROLLUP(k, k2)`), and the ORDER BY of a set operation naming an
unknown qualified column suggested '.a'. Answers are checked against DuckDB (PostgreSQL
accepts these too)."""

from __future__ import annotations


import duckdb
import pyarrow as pa
import pytest

import pqe
from helpers import sorted_rows

T = pa.table({"a": [1, 2, 3, None, 5, 2, 7], "b": [10, 20, None, 40, 50, 60, 70]})
U = pa.table({"a": [2, 2, None, 5, 1, 9], "c": [100, 100, 300, None, 7, 8]})


@pytest.fixture(scope="module")
def ctx():
    c = pqe.Context(threads=2)
    c.register_arrow("t", T)
    c.register_arrow("u", U)
    return c


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.register("t", T)
    con.register("u", U)
    return con


def _pqe(ctx, sql):
    return sorted_rows(tuple(r.values()) for r in ctx.sql(sql).to_pylist())


def _duck(duck, sql):
    return sorted_rows(duck.sql(sql).fetchall())


# GROUP BY keys holding a subquery: uncorrelated, correlated, IN, NOT IN, EXISTS, ALL/ANY
KEYS = [
    "(select max(a) from u)",
    "a + (select max(a) from u)",
    "(select max(c) from u where u.a = t.a)",
    "(select count(*) from u where u.a < t.a)",
    "coalesce((select max(c) from u where u.a = t.b / 10), -1)",
    "a in (select a from u)",
    "a not in (select a from u)",
    "exists (select 1 from u where u.a = t.a)",
    "b > all (select c from u where u.a = t.a)",
    "a = any (select a from u where c > 50)",
]

SHAPES = [
    # by position, by alias, written again in full (with and without an alias)
    "select {k} k, count(*) from t group by 1",
    "select {k} k, count(*), sum(b) from t group by k",
    "select {k} k, count(*) from t group by {k}",
    "select {k}, count(*) from t group by {k}",
    "select {k} k, count(*) from t group by ({k})",
    "select {k} k, b % 3 m, count(*) from t group by 1, 2",
    "select {k} k, count(*) from t group by 1, {k}",
    "select {k} k, count(*) from t group by all",
    # inside a larger select item
    "select ({k}) is null k, count(*) from t group by {k}",
    # HAVING and ORDER BY naming the key
    "select count(*), {k} from t group by {k} having {k} is not null",
    "select {k} k, count(*) from t group by 1 having count(*) > 1 or ({k}) is null",
    "select count(*) from t group by {k} order by {k}",
    "select {k} k, count(*) from t group by 1 order by {k} nulls first, 2",
    # window functions and QUALIFY over the grouped rows
    "select {k} k, count(*) over () from t group by 1",
    "select {k} k, sum(count(*)) over (order by {k}) from t group by 1",
    # ROLLUP / CUBE / GROUPING SETS, GROUPING()
    "select {k} k, count(*) from t group by rollup(1)",
    "select {k} k, count(*) from t group by rollup(k)",
    "select {k} k, count(*) from t group by rollup({k})",
    "select {k} k, b, count(*) from t group by cube(1, b)",
    "select {k} k, count(*) from t group by grouping sets ((k), ())",
    "select {k} k, grouping({k}) g, count(*) from t group by rollup(1)",
    "select {k} k, count(*) from t group by rollup(1) having ({k}) is not null",
]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("shape", SHAPES)
def test_group_by_key_with_subquery(ctx, duck, shape, key):
    sql = shape.format(k=key)
    assert _pqe(ctx, sql) == _duck(duck, sql)


K = "(select max(c) from u where u.a = t.a)"

MORE = [
    # the reported forms
    "select a + (select max(a) from u) k, count(*) from t group by 1",
    "select a in (select a from u), count(*) from t group by a in (select a from u)",
    "select (select max(a) from u where u.a = t.a) k, count(*) from t group by 1",
    # the key inside larger expressions, the select item a larger expression of the key
    f"select {K} + 1 k, count(*) from t group by {K} + 1",
    f"select {K} + 1 k, count(*) from t group by {K}",
    f"select case when {K} > 50 then 'hi' else 'lo' end k, count(*) from t group by 1",
    f"select {K} k, sum({K}) s, count(*) from t group by 1",
    f"select sum(b), {K} k from t group by k",
    f"select b, {K} k, count(*) from t group by b, k",
    f"select distinct {K} k from t group by 1",
    f"select {K} k, count(*) from t group by 1 qualify row_number() over (order by {K}) <= 2",
    f"select {K} k, rank() over (order by {K} desc nulls last) r from t group by 1",
    f"select {K} k, max(b) from t where a > 1 group by 1 having max(b) > 20",
    f"select * from (select {K} k, count(*) n from t group by 1) s",
    f"with w as (select {K} k, count(*) n from t group by 1) select * from w where n > 1",
    f"select {K} k, count(*) from t group by 1 union all select 1, 2",
    "select (select max(c) from u where u.a = t.a and c > (select min(b) from t t2 "
    "where t2.a = t.a)) k, count(*) from t group by 1",
    "select exists (select 1 from u where u.a = t.a) k, count(*), "
    "grouping(exists (select 1 from u where u.a = t.a)) g from t group by cube(1)",
    "select a in (select a from u) k, count(*) from t group by grouping sets ((1), ()) "
    "having (a in (select a from u)) is null or count(*) > 2",
    # subqueries that were fine before: a select item over grouped columns
    f"select a, {K} k, count(*) from t group by a",
    "select a from t group by a having a in (select a from u)",
    "select a, count(*) from t group by a having count(*) = "
    "(select count(*) from u where u.a = t.a)",
    # a subquery in the GROUP BY of a subquery
    "select a, (select count(*) from u where u.a = t.a group by (select 1)) n from t",
    "select a, (select max(x) from (select (select 1) + c x from u group by 1) s) m from t",
]


@pytest.mark.parametrize("sql", MORE)
def test_more_subquery_keys(ctx, duck, sql):
    assert _pqe(ctx, sql) == _duck(duck, sql)


# two select items of one expression, named apart, are two keys of grouping sets (the
# alias picked the first item of that expression for both: k2 was not NULL in the set (k))
TWO_ITEMS = [
    "select (select 1) k, (select 1) k2, count(*) from t group by rollup(k, k2)",
    f"select {K} k, {K} k2, count(*) from t group by rollup(k, k2)",
    f"select {K} k, {K} k2, count(*) from t group by rollup(k2)",
    f"select {K} k, {K} k2, count(*) from t group by grouping sets ((k2), (k), ())",
    "select a + 0 k, a + 0 k2, count(*) from t group by rollup(k, k2)",
    "select a + 0 k, a + 0 k2, count(*) from t group by rollup(k2)",
    "select a + 0 k, a + 0 k2, count(*) from t group by cube(k2, k)",
    "select a + 0 k, a + 0 k2, count(*) from t group by grouping sets ((k, k2), (k2), ())",
    "select a + 0 k, a + 0 k2, count(*) from t group by grouping sets ((k, k2), k2, ())",
    "select a + 0 k, a + 0 k2, count(*) from t group by rollup((k2), k)",
    "select a + 0 k, a + 0 k2, count(*) from t group by k, rollup(k2)",
    "select a + 0 k, a + 0 k2, count(*) from t group by rollup(a + 0)",
    "select a + 0 k, a + 0 k2, count(*) from t group by rollup(1, 2)",
    "select a + 0 k, a + 0 k2, count(*) from t group by rollup(2)",
    # an input column of the alias's name wins in GROUP BY
    "select a as b, count(*) from t group by rollup(b, a)",
    "select a + 1 as a, count(*) from t group by rollup(a)",
]


@pytest.mark.parametrize("sql", TWO_ITEMS)
def test_items_of_one_expression_named_apart(ctx, duck, sql):
    assert _pqe(ctx, sql) == _duck(duck, sql)


def test_ungrouped_column_beside_a_subquery_key_is_refused(ctx):
    # a column outside the key is still not grouped (DuckDB and PostgreSQL refuse it too)
    for sql in [f"select {K} k, a, count(*) from t group by 1",
                f"select {K} k, count(*) from t group by 1 having a > 1",
                f"select {K} k, count(*) from t group by 1 order by a"]:
        with pytest.raises(pqe.AggregateMisuseError, match="t.a"):
            ctx.sql(sql).to_arrow()


def test_key_written_twice_is_one_key(ctx):
    # a key holding a subquery, written by position and again in full, is grouped once
    plan = ctx.sql("explain select a + (select max(a) from u) k, count(*) from t "
                   "group by 1, a + (select max(a) from u)").to_pylist()
    line = next(r["plan"] for r in plan if "Aggregate: groupBy=" in r["plan"])
    keys = line.split("groupBy=[", 1)[1].split("] aggr=", 1)[0]
    assert keys.count(" AS ") == 1, line


def test_set_operation_order_by_unknown_qualifier_has_no_empty_suggestion(ctx):
    # PostgreSQL refuses it too; the suggestion was '.a' (the output columns of a set
    # operation have no qualifier)
    with pytest.raises(pqe.UnknownColumnError) as err:
        ctx.sql("select a from t union all select a from u order by t.a").to_arrow()
    assert "'.a'" not in str(err.value)
    assert "did you mean '." not in str(err.value)


def test_set_operation_order_by_misspelled_column_suggests_the_output_column(ctx):
    with pytest.raises(pqe.UnknownColumnError) as err:
        ctx.sql("select a from t union all select a from u order by aa").to_arrow()
    assert "did you mean 'a'?" in str(err.value)
