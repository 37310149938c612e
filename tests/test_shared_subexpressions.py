"""A subexpression used twice is computed once (kernels.expressions.Compiler's lets).

Arrow's expressions share no subexpression: NULLIF(a, b) (CASE WHEN a = b THEN NULL ELSE a)
computed `a` twice, so nested NULLIFs doubled per level, and a CASE reading its operand in
its condition and branches tripled (three nested ones took 206 s over 200,000 rows). The
builder's rewrites share one node object between their parts, and the plan's walkers
visited it once per path (24 NULLIFs: 2^24 visits in one optimizer pass). A volatile operand
shared by a rewrite is one value (NULLIF(random(), ...) returned the value it had to null).
"""

import time

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import pqe


@pytest.fixture
def ctx():
    c = pqe.Context()
    n = 200_000
    c.register_arrow("t", pa.table({"x": np.arange(n) % 97, "y": np.arange(n) % 13}))
    return c


def _duck(sql):
    con = duckdb.connect()
    n = 200_000
    t = pa.table({"x": np.arange(n) % 97, "y": np.arange(n) % 13})  # noqa: F841
    return con.execute(sql).fetchall()


def _timed(ctx, sql):
    start = time.perf_counter()
    rows = [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()]
    return rows, time.perf_counter() - start


def test_nested_nullif_is_linear(ctx):
    e = "x"
    for i in range(40):
        e = f"NULLIF({e}, {i % 97})"
    sql = f"SELECT sum({e}), count({e}) FROM t"
    rows, took = _timed(ctx, sql)
    x = np.arange(200_000) % 97
    kept = x[x >= 40]  # NULLIF(.., i) for i < 40 nulls those (and NULL stays NULL)
    assert rows == [(int(kept.sum()), len(kept))]
    assert took < 10, took  # (minutes before: 2^40 copies of x; DuckDB takes 9 s for 16)


def test_nested_case_reading_its_operand_three_times(ctx):
    e = "x"
    for i in range(4):
        e = f"CASE WHEN {e} > {i} THEN 100 / ({e} - {i}) ELSE {e} + 1 END"
    sql = f"SELECT sum({e}) FROM t"
    rows, took = _timed(ctx, sql)
    assert rows == _duck(sql.replace("/", "//"))  # (pqe's integer / is DuckDB's //)
    assert took < 10, took  # (3 levels: 206 s before)


def test_coalesce_of_failing_branches(ctx):
    e = "COALESCE(" + ", ".join(f"CASE WHEN y = {i} THEN 10 // (x + 1000 - {i}) END"
                                 for i in range(8)) + ")"
    sql = f"SELECT sum({e}) FROM t"
    rows, _ = _timed(ctx, sql.replace("//", "/"))
    assert rows == _duck(sql)


def test_shared_subexpression_keeps_its_guard(ctx):
    """x * 2^61 overflows for x >= 4: computed once for both CASEs (written twice), still
    only for the rows whose branch reads it."""
    sql = ("SELECT CASE WHEN x < 2 THEN x * 2305843009213693952 ELSE 0 END "
           "+ CASE WHEN x < 2 THEN x * 2305843009213693952 ELSE 0 END AS v FROM t "
           "WHERE x IN (1, 8) GROUP BY 1 ORDER BY 1")
    assert _timed(ctx, sql)[0] == _duck(sql) == [(0,), (2 ** 62,)]


def test_one_subexpression_under_disjoint_guards(ctx):
    """x * 2^61 read by two CASEs whose branches take different rows: one value computed
    for the rows of the first is not the second's (it would be NULL or fail there)."""
    sql = ("SELECT DISTINCT x, CASE WHEN y = 1 THEN x * 2305843009213693952 END AS a, "
           "CASE WHEN y = 2 THEN x * 2305843009213693952 END AS b FROM t "
           "WHERE (x = 1 AND y = 1) OR (x = 2 AND y = 2) ORDER BY 1")
    assert _timed(ctx, sql)[0] == _duck(sql) == [(1, 2 ** 61, None), (2, None, 2 ** 62)]


def test_nullif_of_random_is_one_value(ctx):
    """NULLIF(v, 0) is never 0: the operand is one value, computed once (it was computed
    twice, so a row could compare one random value and return another)."""
    out = ctx.sql("SELECT v, count(*) AS n FROM (SELECT NULLIF(floor(random() * 2), 0) AS v "
                  "FROM t) GROUP BY v").to_arrow().to_pydict()
    assert 0.0 not in out["v"] and set(out["v"]) == {1.0, None}


def test_simple_case_of_random_takes_a_branch(ctx):
    """CASE op WHEN 0 .. WHEN 1 .. WHEN 2 .. ELSE: op in {0, 1, 2} never reaches ELSE, in a
    projection and in a filter pushed into the scan."""
    case = ("CASE floor(random() * 3) WHEN 0 THEN 1 WHEN 1 THEN 1 WHEN 2 THEN 1 ELSE 0 END")
    assert ctx.sql(f"SELECT count(*) FROM t WHERE {case} = 0").to_arrow().column(0)[0].as_py() == 0
    assert ctx.sql(f"SELECT sum({case}) FROM t").to_arrow().column(0)[0].as_py() == 200_000


def test_between_of_random_is_refused(ctx):
    with pytest.raises(pqe.UnsupportedError, match="BETWEEN of random"):
        ctx.sql("SELECT count(*) FROM t WHERE random() BETWEEN 0.25 AND 0.75").to_arrow()
    # computed first, it is one value per row
    n = ctx.sql("SELECT count(*) FROM (SELECT random() AS r FROM t) "
                "WHERE r BETWEEN 0.25 AND 0.75").to_arrow().column(0)[0].as_py()
    assert 90_000 < n < 110_000


def test_two_random_calls_stay_two_values(ctx):
    """random() written twice is two values (not shared as equal expressions): their sum
    takes 0, 1 and 2."""
    out = ctx.sql("SELECT DISTINCT floor(random() * 2) + floor(random() * 2) AS v FROM t "
                  "ORDER BY v").to_arrow().column(0).to_pylist()
    assert out == [0.0, 1.0, 2.0]


def test_explain_prints_nullif_once():
    c = pqe.Context()
    c.register_arrow("t", pa.table({"x": [1, 2]}))
    e = "x"
    for i in range(30):
        e = f"NULLIF({e}, {i})"
    text = "\n".join(c.sql(f"EXPLAIN SELECT {e} FROM t").to_arrow().column(0).to_pylist())
    assert "NULLIF(NULLIF(" in text and len(text) < 20_000
