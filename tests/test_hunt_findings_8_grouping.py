"""Findings of the tenth session's window/aggregate hunt: constant keys of ROLLUP / CUBE /
GROUPING SETS (never NULL in the sets without them), positions inside ROLLUP / CUBE /
GROUPING SETS (refused as "not grouped"), an unknown function reported as an ungrouped
column under GROUP BY, and OVER (w) copying a window with a frame (accepted). Answers are
checked against DuckDB (PostgreSQL agrees where noted)."""

from __future__ import annotations


import duckdb
import pyarrow as pa
import pytest

import pqe
from helpers import sorted_rows

T = pa.table({"a": ["x", "x", "y", None, "y"], "b": [1, 2, 3, 4, 3],
              "v": [10, 20, 30, 40, 50]})
W = pa.table({"id": [1, 2, 3, 4], "v": [10, 20, 30, 40]})


@pytest.fixture(scope="module")
def ctx():
    c = pqe.Context()
    c.register_arrow("t", T)
    c.register_arrow("w", W)
    return c


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.register("t", T)
    con.register("w", W)
    return con


def _pqe(ctx, sql, params=None):
    return sorted_rows(tuple(r.values()) for r in ctx.sql(sql, params).to_pylist())


def _duck(duck, sql, params=None):
    return sorted_rows(duck.execute(sql, params).fetchall() if params else duck.sql(sql).fetchall())


# a constant key (a literal, an expression of constants, a position naming a constant select
# item) is NULL in the grouping sets without it; it was the constant in every row
CONSTANT_KEYS = [
    "select 5 as k, count(*) c from t group by rollup(k)",
    "select 5 as k, count(*) c from t group by rollup(1)",
    "select 5 as k, count(*) c from t group by cube(k)",
    "select 5 as k, count(*) c from t group by grouping sets ((k), ())",
    "select 5 as k, count(*) c from t group by grouping sets (k, ())",
    "select 5 as k, a, count(*) c from t group by cube(k, a)",
    "select 5 as k, a, count(*) c from t group by rollup(k, a)",
    "select 5 as k, a, count(*) c from t group by rollup(a, k)",
    "select a, 5 as k, count(*) c from t group by rollup(a, 2)",
    "select a, 5 as k, sum(v) s from t group by grouping sets ((a, k), (k), (a), ())",
    "select 5 as k, a, count(*) c from t group by grouping sets ((k, a), (a))",
    "select 5 as k, a, count(*) c from t group by grouping sets ((1, 2), (2), ())",
    "select 5 as k, a, b, count(*) c from t group by cube(1, 2, 3)",
    "select 5 as k, count(*) c from t group by rollup(k), a",
    "select 5 as k, a, count(*) c from t group by rollup(k), rollup(a)",
    "select 5 as k, a, count(*) c from t group by rollup(k, a), rollup(k)",
    # GROUPING of a constant key
    "select 5 as k, grouping(k) g, count(*) c from t group by rollup(k)",
    "select 5 as k, a, grouping(k, a) g, count(*) c from t group by cube(k, a)",
    "select 5 as k, count(*) c from t group by rollup(k) having grouping(5) = 1",
    "select 5 as k, count(*) c from t group by rollup(k) order by grouping(5), c",
    # strings, expressions, negative, decimal, NULL, boolean, date constants
    "select 'z' as k, count(*) c from t group by rollup(k)",
    "select 'z' as k, a, count(*) c from t group by rollup(a, k)",
    "select 'lbl' as k, a, sum(v) s from t group by grouping sets ((k, a), ())",
    "select a, 'lbl' as k, sum(v) s from t group by rollup(a, k)",
    "select a, 'q' as q, count(*) c from t group by rollup(a, 'q')",
    "select 5+1 as k, count(*) c from t group by rollup(k)",
    "select 5+1 as k, count(*) c from t group by rollup(1)",
    "select 5+1 as k, count(*) + 6 c from t group by rollup(k)",
    "select -5 as k, count(*) c from t group by rollup(k)",
    "select 2.5 as k, count(*) c from t group by rollup(k)",
    "select null as k, count(*) c from t group by rollup(k)",
    "select cast(null as int) as k, count(*) c from t group by rollup(k)",
    "select true as k, count(*) c from t group by rollup(k)",
    "select date '2024-01-02' as d, count(*) c from t group by rollup(d)",
    # duplicated constants: one key named twice is one key; two items named apart are two
    "select 5 as k, 5 as k2, count(*) c from t group by rollup(k)",
    "select 5 as k, 5 as k2, count(*) c from t group by rollup(2)",
    "select 5 as k, 5 as k2, count(*) c from t group by rollup(k, k2)",
    "select 5 as k, 5 as k2, count(*) c from t group by rollup(1, 2)",
    "select 5 as k, 5 as k2, count(*) c from t group by grouping sets ((k), (k2))",
    "select 5 as k, 6 as k2, count(*) c from t group by rollup(k, k2)",
    "select 5 as k, 6 as k2, count(*) c from t group by cube(1, 2)",
    # a constant key inside other constants of the select list (DuckDB's reading)
    "select 5 as k, k * 2 as k2, abs(-5) a5, -5 n5, 5 * 2 m, 2 + 3 p, abs(5) q, "
    "cast(5 as bigint) r, 10 - 5 u, count(*) c from t group by rollup(k)",
    # ORDER BY, HAVING, windows, aggregates of every kind, a subquery around it
    "select 5 as k, count(*) c from t group by rollup(k) order by k nulls first",
    "select 5 as k, count(*) c from t group by rollup(k) order by 1 desc nulls last",
    "select 5 as k, a, sum(v) s from t group by rollup(k, a) order by k, a",
    "select 5 as k, a, count(*) c from t where b > 1 group by rollup(k, a) "
    "having count(*) > 1",
    "select 5 as k, a, count(*) c from t group by rollup(k, a) "
    "having count(*) > 1 and grouping(a) = 1",
    "select 5 as k, count(*) c, rank() over (order by k) r from t group by rollup(k)",
    "select 5 as k, sum(v) s, avg(v) m, min(v) mi, max(a) mx from t group by rollup(k)",
    "select 5 as k, count(distinct a) c, string_agg(a, ',' order by a) s from t "
    "group by rollup(k)",
    "select coalesce(a, 'all') as a2, 7 as k, count(*) c from t group by rollup(k, a)",
    "select k, c from (select 5 as k, count(*) c from t group by rollup(k)) s "
    "where k is null",
    "select 5 as k, count(*) c, (select max(b) from t) m from t group by rollup(k)",
    # a plain GROUP BY of a constant keeps it
    "select 5 as k, count(*) c from t group by k",
    "select 5 as k, count(*) c from t group by 1",
    "select 5 as k, a, count(*) c from t group by 1, a",
    "select 5 as k, a, count(*) c from t group by all",
    "select 'z' as k, a, count(*) c from t group by all",
]


@pytest.mark.parametrize("sql", CONSTANT_KEYS)
def test_constant_grouping_key_is_null_where_not_grouped(ctx, duck, sql):
    assert _pqe(ctx, sql) == _duck(duck, sql)


# positions (and names of select items) inside ROLLUP / CUBE / GROUPING SETS name select
# items as in a plain GROUP BY (PostgreSQL and DuckDB); `rollup(1, 2)` was refused
POSITIONS = [
    "select a, b, count(*) c from t group by rollup(1, 2)",
    "select a, b, count(*) c from t group by cube(1, 2)",
    "select a, b, count(*) c from t group by grouping sets ((1, 2), (1), ())",
    "select a, b, count(*) c from t group by grouping sets (1, 2)",
    "select a, b + 1 as y, count(*) c from t group by grouping sets ((1), (y), ())",
    "select a as x, b + 1 as y, count(*) c from t group by rollup(x, y)",
    "select a as x, b + 1 as y, count(*) c from t group by cube(x, y)",
    "select a as x, count(*) c from t group by rollup(1), b",
    "select a as x, b, count(*) c from t group by 2, rollup(1)",
    "select a as x, b, count(*) c from t group by b, cube(x)",
    "select a, b, sum(v) s from t group by rollup((1, 2))",
    "select a, b, sum(v) s from t group by grouping sets ((a, 2), ())",
    "select upper(a) as u, count(*) c from t group by rollup(1)",
    "select upper(a) as u, count(*) c from t group by rollup(u)",
    "select b % 2 as p, sum(v) s from t group by cube(1)",
    "select a, b % 2 as p, count(*) c from t group by grouping sets ((1), (2), (1, 2))",
    "select a, a as a2, count(*) c from t group by rollup(1, 2)",
    "select a, count(*) c from t group by rollup(a, a)",
    "select b, b + 0 as b2, count(*) c from t group by rollup(b, b2)",
    "select a, b, grouping(a, b) g, sum(v) s from t group by rollup(1, 2) "
    "order by g, a, b",
]


@pytest.mark.parametrize("sql", POSITIONS)
def test_positions_inside_grouping_sets(ctx, duck, sql):
    assert _pqe(ctx, sql) == _duck(duck, sql)


@pytest.mark.parametrize("sql, params", [
    ("select ? as k, count(*) c from t group by rollup(k)", [5]),
    ("select ? as k, count(*) c from t group by rollup(1)", [2.5]),
    ("select ? as k, a, count(*) c from t group by cube(k, a)", ["s"]),
    ("select a, ? as k, sum(v) s from t group by grouping sets ((a), (2), ())", [7]),
])
def test_parameter_grouping_key(ctx, duck, sql, params):
    assert _pqe(ctx, sql, params) == _duck(duck, sql, params)


def test_constant_key_answer_named(ctx):
    # the finding's query, spelled out
    got = ctx.sql("select 5 as k, count(*) c from t group by rollup(k) "
                  "order by k nulls last").to_pylist()
    assert got == [{"k": 5, "c": 5}, {"k": None, "c": 5}]


@pytest.mark.parametrize("sql, message", [
    ("select 5 as k, count(*) from t group by rollup(5)", "position 5 is not in the select"),
    ("select a, count(*) from t group by cube(a, 3)", "position 3 is not in the select"),
    ("select a, count(*) from t group by grouping sets ((0), ())", "position 0"),
    ("select a, count(*) from t group by rollup(1.5)", "position 1.5 is not a position"),
    ("select a, count(*) from t group by rollup(-1)", "position -1 is not a position"),
])
def test_positions_out_of_range_in_grouping_sets(ctx, duck, sql, message):
    with pytest.raises(pqe.BindError, match=message):
        ctx.sql(sql).to_arrow()
    if "1.5" not in sql:  # (DuckDB reads 1.5 as a constant)
        with pytest.raises(duckdb.Error):
            duck.sql(sql).fetchall()


@pytest.mark.parametrize("sql", [
    "select a, count(*) from t group by rollup(2)",  # an aggregate
    "select a, sum(v) over () from t group by rollup(a, 2)",  # a window function
])
def test_position_of_an_aggregate_in_grouping_sets(ctx, sql):
    with pytest.raises(pqe.BindError, match="not allowed in GROUP BY"):
        ctx.sql(sql).to_arrow()


# an unknown function over an ungrouped column: the function is what is wrong (reported
# with its position), as without GROUP BY; it was "column 't.v' must appear in the GROUP BY"
@pytest.mark.parametrize("sql, name, column", [
    ("select a, no_such_fn(v) from t group by a", "NO_SUCH_FN", 11),
    ("select a, entropy(v) from t group by a", "ENTROPY", 11),
    ("select a, bitstring_agg(v) from t group by a", "BITSTRING_AGG", 11),
    ("select a, product(v) from t group by a", "PRODUCT", 11),
    ("select a, abs(no_such_fn(v)) from t group by a", "NO_SUCH_FN", 15),
    ("select a, count(*) + no_such_fn(v) from t group by a", "NO_SUCH_FN", 22),
    ("select a, no_such_fn(v) from t group by rollup(a)", "NO_SUCH_FN", 11),
    ("select a from t group by a having no_such_fn(v) > 1", "NO_SUCH_FN", 35),
    ("select a from t group by a order by no_such_fn(v)", "NO_SUCH_FN", 37),
])
def test_unknown_function_under_group_by(ctx, sql, name, column):
    with pytest.raises(pqe.BindError, match=f"unknown function {name}") as info:
        ctx.sql(sql).to_arrow()
    assert not isinstance(info.value, pqe.AggregateMisuseError)
    assert (info.value.line, info.value.column) == (1, column)


@pytest.mark.parametrize("sql", [
    "select a, v from t group by a",
    "select a, abs(v) from t group by a",
    "select a, v + 1 from t group by rollup(a)",
])
def test_ungrouped_column_still_reported(ctx, sql):
    with pytest.raises(pqe.AggregateMisuseError, match="must appear in the GROUP BY"):
        ctx.sql(sql).to_arrow()


# OVER (w) copies w, refused when w has a frame (PostgreSQL and DuckDB: "cannot copy window
# w because it has a frame clause"); OVER w uses it as it is
FRAMED = "window w as (order by id rows between 1 following and 1 following)"


@pytest.mark.parametrize("sql", [
    f"select id, sum(v) over (w) from w {FRAMED}",
    f"select id, sum(v) over ( w ) from w {FRAMED}",
    f"select id, sum(v) over (/* c */ w) from w {FRAMED}",
    "select id, sum(v) over w2 from w window w as (order by id rows 1 preceding), w2 as (w)",
    'select id, sum(v) over ("W") from w window "W" as (order by id rows 1 preceding)',
])
def test_copying_a_window_with_a_frame_is_refused(ctx, duck, sql):
    with pytest.raises(pqe.BindError, match="cannot copy window '(w|W)' because it has a frame"):
        ctx.sql(sql).to_arrow()
    with pytest.raises(duckdb.Error, match="frame clause"):
        duck.sql(sql).fetchall()


@pytest.mark.parametrize("sql", [
    f"select id, sum(v) over w s from w {FRAMED}",
    f"select id, sum(v) over w s, count(*) over w c from w {FRAMED}",
    "select id, sum(v) over /* ( */ w s from w window w as (order by id rows 1 preceding)",
    "select id, sum(v) over -- (\n w s from w window w as (order by id rows 1 preceding)",
    "select id, sum(v) over (w) s from w window w as (order by id)",
    "select id, sum(v) over (w) s from w window w as (partition by id % 2)",
    "select id, sum(v) over (w order by id) s from w window w as (partition by id % 2)",
    "select id, sum(v) over (w rows 1 preceding) s from w window w as (order by id)",
    "select id, sum(v) over (w2) s from w window w as (partition by id % 2), "
    "w2 as (w order by id)",
    "select id, sum(v) over w2 s from w window w as (order by id), w2 as (w rows 1 preceding)",
])
def test_named_windows_still_work(ctx, duck, sql):
    assert _pqe(ctx, sql) == _duck(duck, sql)


def test_copy_of_a_framed_window_names_it_with_position(ctx):
    with pytest.raises(pqe.BindError) as info:
        ctx.sql(f"select id, sum(v) over (w) from w {FRAMED}").to_arrow()
    assert "OVER w (without parentheses)" in str(info.value)
    assert (info.value.line, info.value.column) == (1, 25)
