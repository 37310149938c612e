"""Correlated subqueries the domain method used to refuse, checked against DuckDB on 1 and 3
partitions: a subquery correlated to a query two levels out (`w.d < u.a + t.a` inside a
subquery of a subquery of t), a join inside a correlated subquery with outer references on
both of its sides (each d's rows of one side joined with that d's rows of the other), and a
UNION inside a correlated subquery (each input evaluated per d). NULLs in the correlated
columns and duplicate outer values, every join kind the rewrite takes, and the COUNT bug
(an outer value without rows still gets its COUNT 0)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import pqe
from pqe.testing import oracle
from pqe.testing.compare import compare

TABLES = {
    "t": pa.table({"a": [1, 2, 3, None, 2, 5], "b": [10, 20, 30, 40, 20, None]}),
    "u": pa.table({"a": [1, 1, 2, 5, None, 3, 3], "c": [5, 15, 25, 35, 45, None, 15]}),
    "w": pa.table({"c": [5, 15, 25, 100, None, 15], "d": [1, 2, 3, 4, 5, None]}),
}
CON = oracle.connect(TABLES)

QUERIES = [
    # two levels out
    "SELECT a FROM t WHERE a IN (SELECT u.a FROM u WHERE u.c > "
    "(SELECT avg(w.c) FROM w WHERE w.d < u.a + t.a))",
    "SELECT a, b FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.a = t.a AND EXISTS "
    "(SELECT 1 FROM w WHERE w.c = u.c AND w.d <= t.a))",
    "SELECT a, (SELECT count(*) FROM u WHERE u.a >= t.a AND u.c IN "
    "(SELECT c FROM w WHERE w.d = t.a)) AS n FROM t",
    "SELECT a, (SELECT max(u.c) FROM u WHERE u.a = t.a AND NOT EXISTS "
    "(SELECT 1 FROM w WHERE w.c = u.c AND w.d > t.b / 10)) AS m FROM t",
    "SELECT a, (SELECT sum((SELECT count(*) FROM w WHERE w.d BETWEEN u.a AND t.a)) FROM u) AS s "
    "FROM t",
    "SELECT a FROM t WHERE b > (SELECT min(u.c) FROM u WHERE u.a = t.a AND u.c > "
    "(SELECT min(w.c) FROM w WHERE w.d = t.a))",
    # NOT IN two levels out: a NULL in one outer value's list empties that value's rows only
    "SELECT a, (SELECT count(*) FROM u WHERE u.a = t.a AND u.c NOT IN "
    "(SELECT w.c FROM w WHERE w.d = t.a OR w.d = 5)) AS n FROM t",
    "SELECT a FROM t WHERE a NOT IN (SELECT u.a FROM u WHERE u.c NOT IN "
    "(SELECT w.c FROM w WHERE w.d = t.a))",
    "SELECT a, (SELECT count(*) FROM (SELECT * FROM u WHERE u.a = t.a) x WHERE x.c NOT IN "
    "(SELECT c FROM w WHERE w.d >= t.a)) AS n FROM t",
    # a join with outer references on both sides
    "SELECT a, (SELECT count(*) FROM u JOIN w ON u.c = w.c WHERE u.a = t.a AND w.d <= t.a) AS n "
    "FROM t",
    "SELECT a, (SELECT count(*) FROM (SELECT * FROM u WHERE u.a = t.a) x "
    "JOIN (SELECT * FROM w WHERE w.d = t.a) y ON x.c = y.c) AS n FROM t",
    "SELECT a, (SELECT count(*) FROM (SELECT * FROM u WHERE u.a = t.a) x "
    "LEFT JOIN (SELECT * FROM w WHERE w.d >= t.a) y ON x.c = y.c) AS n FROM t",
    "SELECT a, (SELECT count(y.d) FROM (SELECT * FROM u WHERE u.a <= t.a) x "
    "RIGHT JOIN (SELECT * FROM w WHERE w.d = t.a) y ON x.c = y.c) AS n FROM t",
    "SELECT a, (SELECT count(*) FROM u LEFT JOIN w ON w.c = u.c AND w.d = t.a "
    "WHERE u.a = t.a) AS n FROM t",
    "SELECT a FROM t WHERE EXISTS (SELECT 1 FROM (SELECT * FROM u WHERE u.a = t.a) x "
    "WHERE x.c IN (SELECT c FROM w WHERE w.d < t.a))",
    # UNION inside a correlated subquery
    "SELECT a, (SELECT count(*) FROM (SELECT c FROM u WHERE u.a = t.a UNION ALL "
    "SELECT c FROM w WHERE w.d = t.a) s) AS n FROM t",
    "SELECT a, (SELECT count(*) FROM (SELECT c FROM u WHERE u.a = t.a UNION "
    "SELECT c FROM w WHERE w.d = t.a) s) AS n FROM t",
    "SELECT a, (SELECT max(c) FROM (SELECT c FROM u WHERE u.a = t.a UNION ALL "
    "SELECT 1000 AS c FROM w WHERE w.d = t.a + 1 UNION ALL SELECT c FROM w) s) AS m FROM t",
    "SELECT a FROM t WHERE b IN (SELECT c * 2 FROM u WHERE u.a = t.a UNION ALL "
    "SELECT d * 10 FROM w WHERE w.d = t.a)",
    "SELECT a FROM t WHERE NOT EXISTS (SELECT c FROM u WHERE u.a = t.a UNION ALL "
    "SELECT c FROM w WHERE w.d = t.a)",
    "SELECT a, (SELECT min(c) FROM (SELECT c FROM u WHERE u.a = t.a ORDER BY c DESC LIMIT 1) s)"
    " AS m FROM t",
]


@pytest.fixture(scope="module", params=[1, 3], ids=["1p", "3p"])
def ctx(request):
    with pqe.Context(partitions=request.param) as c:
        for name, table in TABLES.items():
            c.register_arrow(name, table)
        yield c


@pytest.mark.parametrize("sql", QUERIES)
def test_matches_duckdb(ctx, sql):
    miss = compare(ctx.sql(sql).to_arrow(), oracle.query(CON, sql), sql=sql, check_names=False)
    assert miss is None, f"{sql}\n{miss}"


def test_a_full_join_with_outer_references_is_still_refused(ctx):
    with pytest.raises(pqe.UnsupportedError, match="FULL JOIN"):
        ctx.sql("SELECT a, (SELECT count(*) FROM (SELECT * FROM u WHERE u.a = t.a) x "
                "FULL JOIN w ON x.c = w.c) FROM t").to_arrow()


LATERAL = [
    "SELECT t.a, x.c FROM t, LATERAL (SELECT c FROM u WHERE u.a = t.a) x",
    "SELECT t.a, t.b, x.c FROM t CROSS JOIN LATERAL (SELECT c FROM u WHERE u.a = t.a "
    "ORDER BY c DESC LIMIT 1) x",
    "SELECT t.a, x.n FROM t, LATERAL (SELECT count(*) AS n FROM u WHERE u.a = t.a) x",
    "SELECT t.a, x.c FROM t LEFT JOIN LATERAL (SELECT c FROM u WHERE u.a = t.a) x ON TRUE",
    "SELECT t.a, x.c FROM t LEFT JOIN LATERAL (SELECT c FROM u WHERE u.a = t.a) x "
    "ON x.c > t.b",
    "SELECT t.a, w2.d, x.s FROM t, w AS w2, LATERAL (SELECT sum(c) AS s FROM u "
    "WHERE u.a = t.a AND u.c <= w2.c) x",
    "SELECT t.a, x.c, y.d FROM t, LATERAL (SELECT c FROM u WHERE u.a = t.a) x, "
    "LATERAL (SELECT d FROM w WHERE w.c = x.c) y",
    "SELECT t.a, x.v FROM t, LATERAL (SELECT c AS v FROM u WHERE u.a = t.a UNION ALL "
    "SELECT d FROM w WHERE w.d = t.a) x",
    "SELECT t.a, x.c FROM t, LATERAL (SELECT c FROM u) x WHERE x.c < 20",
    "SELECT a, (SELECT max(x.c) FROM u AS u2, LATERAL (SELECT c FROM u WHERE u.a = u2.a "
    "AND u.c < t.b) x) AS m FROM t",
    # without the keyword, a subquery naming an earlier FROM item is lateral (DuckDB)
    "SELECT t.a, x.c FROM t, (SELECT c FROM u WHERE u.a = t.a) x",
    "SELECT t.a, x.c FROM t JOIN (SELECT c, u.a FROM u WHERE u.c > t.b) x ON x.a = t.a",
    "SELECT t.a, x.n FROM t, (SELECT count(*) AS n FROM u WHERE u.a = t.a) x",
    "SELECT t.a, x.a AS xa FROM t, (SELECT * FROM u AS t WHERE t.a = 1) x",  # its own t
]


@pytest.mark.parametrize("sql", LATERAL)
def test_lateral_matches_duckdb(ctx, sql):
    miss = compare(ctx.sql(sql).to_arrow(), oracle.query(CON, sql), sql=sql, check_names=False)
    assert miss is None, f"{sql}\n{miss}"


def test_lateral_forms_still_refused(ctx):
    for sql, what in [("SELECT * FROM t RIGHT JOIN LATERAL (SELECT c FROM u WHERE u.a = t.a) x "
                       "ON TRUE", "RIGHT JOIN LATERAL"),
                      ("SELECT * FROM t, LATERAL generate_series(1, t.a) x",
                       "GENERATE_SERIES|LATERAL")]:
        with pytest.raises(pqe.Error, match=what):
            ctx.sql(sql).to_arrow()
