"""Name resolution: a select-list alias against an input column of the same name, clause by
clause, each answer checked against DuckDB (pqe.testing.oracle) and PostgreSQL 15.

Silent wrong answers, fixed:

1. HAVING took a select-list alias over a grouped input column of the same name
   (`SELECT k*10 AS k ... GROUP BY k HAVING k > 1` compared k*10); QUALIFY took it over any
   input column. In both, as in WHERE and GROUP BY, the input column comes first (a HAVING
   name falls back to the alias when the column is neither grouped nor inside an aggregate,
   as in DuckDB).
2. A USING / NATURAL join's merged key named in HAVING, QUALIFY or an ORDER BY expression was
   replaced by an alias of that name (or refused as ambiguous); it is the merged key.
3. A parenthesized position or name as an ORDER BY / GROUP BY item: `ORDER BY (1)` was a
   constant (ignored), `ORDER BY (k)` took the input column over the output column k,
   `GROUP BY (1)` was refused as "not grouped". PostgreSQL and DuckDB read them as `1` and `k`.
4. `ORDER BY 'a'`, `ORDER BY NULL`, `ORDER BY TRUE` were accepted and ignored; PostgreSQL and
   DuckDB refuse a non-integer constant in ORDER BY.
5. A name two input tables hold fell back to a select-list alias of that name in WHERE,
   GROUP BY, HAVING and QUALIFY (`SELECT t.k*10 AS k FROM t JOIN u ON ... WHERE k > 1`
   filtered on t.k*10); it is ambiguous (AmbiguousColumnError), as in PostgreSQL and DuckDB.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

import pqe
from pqe.testing import oracle
from pqe.testing.compare import compare

H = pa.table({"k": [1, 2, 3, 1]})
T = pa.table({"k": [1, 2, 3, 10, 20], "v": [5, 15, 25, 35, 45]})
U = pa.table({"k": [1, 2, 3, 4], "w": [7, 8, 9, 10]})
TABLES = {"h": H, "t": T, "u": U}


@pytest.fixture(scope="module", params=[{"scheduler": "sync"}, {"partitions": 3}],
                ids=["sync", "partitions3"])
def ctx(request):
    c = pqe.Context(**request.param)
    for name, table in TABLES.items():
        c.register_arrow(name, table)
    yield c
    c.close()


@pytest.fixture(scope="module")
def duck():
    con = oracle.connect(TABLES)
    yield con
    con.close()


def _rows(table: pa.Table, ordered: bool) -> list[tuple]:
    rows = list(zip(*[c.to_pylist() for c in table.columns], strict=True))
    return rows if ordered else sorted(rows, key=repr)


def _check(ctx, duck, sql: str, expected: list[tuple]) -> None:
    ordered = "order by" in sql.lower()
    got = ctx.sql(sql).to_arrow()
    assert _rows(got, ordered) == (expected if ordered else sorted(expected, key=repr)), sql
    m = compare(got, oracle.query(duck, sql), sql=sql)
    assert m is None, f"{sql}: {m}"


# (sql, the answer: DuckDB's and PostgreSQL's unless QUALIFY, which PostgreSQL lacks)
ALIAS_VS_COLUMN = [
    # HAVING: a grouped input column before the alias
    ("select k*10 as k, count(*) as n from h group by k having k > 1", [(20, 1), (30, 1)]),
    ("select k*10 as k, count(*) as n from h group by k having (k) > 1", [(20, 1), (30, 1)]),
    ("select k*10 as k, count(*) as n from h group by k having k + 0 > 1", [(20, 1), (30, 1)]),
    ("select k+0 as v, count(*) as n from t group by k, v having v > 15",
     [(3, 1), (10, 1), (20, 1)]),
    ("select k, count(*) as k from h group by k having k > 1", [(2, 1), (3, 1)]),
    # ... and inside an aggregate
    ("select -k as k, count(*) as n from h group by k having min(k) > 1", [(-2, 1), (-3, 1)]),
    # QUALIFY: the input column before the alias
    ("select -k as k, row_number() over (order by k) as rn from h qualify k > 1",
     [(-2, 3), (-3, 4)]),
]

USING_KEYS = [
    ("select v*10 as k, count(*) as n from t join u using (k) group by k, v having k > 1",
     [(150, 1), (250, 1)]),
    ("select v*10 as k, count(*) as n from t join u using (k) group by v having min(k) > 1",
     [(150, 1), (250, 1)]),
    ("select v*10 as k, count(*) as n from t natural join u group by k, v having k > 1",
     [(150, 1), (250, 1)]),
    ("select v, count(*) as n from t join u using (k) group by v, k having k > 1",
     [(15, 1), (25, 1)]),
    ("select v*10 as x, count(*) as n from t full join u using (k) group by v, k "
     "having k > 3 order by 1", [(350, 1), (450, 1), (None, 1)]),
    ("select v*10 as k, row_number() over (order by v) as rn from t join u using (k) "
     "qualify k > 1", [(150, 2), (250, 3)]),
    ("select v, row_number() over (order by v) as rn from t join u using (k) qualify k > 1",
     [(15, 2), (25, 3)]),
    ("select -v as k from t join u using (k) order by k + 0", [(-5,), (-15,), (-25,)]),
]

PARENTHESIZED = [
    ("select k from h order by (1) desc", [(3,), (2,), (1,), (1,)]),
    ("select -k as k from h order by (k)", [(-3,), (-2,), (-1,), (-1,)]),
    ("select -k as k from h order by ((k)) desc", [(-1,), (-1,), (-2,), (-3,)]),
    ("select k*10 as x from h order by (x) desc", [(30,), (20,), (10,), (10,)]),
    ("select distinct -k as k from h order by (k)", [(-3,), (-2,), (-1,)]),
    ("select -k as k, count(*) as n from h group by k order by (k)",
     [(-3, 1), (-2, 1), (-1, 2)]),
    ("select k from h union all select k from t order by (1)",
     [(1,), (1,), (1,), (2,), (2,), (3,), (3,), (10,), (20,)]),
    ("select k from h union select k from t order by (1) desc",
     [(20,), (10,), (3,), (2,), (1,)]),
    ("select k from (select k from h order by (1) desc limit 2) s order by 1", [(2,), (3,)]),
    ("select k, count(*) as n from h group by (1)", [(1, 2), (2, 1), (3, 1)]),
    ("select k*10 as k, count(*) as n from h group by ((1))", [(10, 2), (20, 1), (30, 1)]),
]


@pytest.mark.parametrize("sql,expected", ALIAS_VS_COLUMN)
def test_input_column_before_alias(ctx, duck, sql, expected):
    _check(ctx, duck, sql, expected)


@pytest.mark.parametrize("sql,expected", USING_KEYS)
def test_using_key_is_the_merged_key(ctx, duck, sql, expected):
    _check(ctx, duck, sql, expected)


@pytest.mark.parametrize("sql,expected", PARENTHESIZED)
def test_parenthesized_position_or_name(ctx, duck, sql, expected):
    _check(ctx, duck, sql, expected)


# refused by PostgreSQL and DuckDB alike
REFUSED = [
    # a non-integer constant sorts nothing
    ("select k from h order by 'a'", pqe.BindError, "non-integer constant"),
    ("select k from h order by 'a' desc", pqe.BindError, "non-integer constant"),
    ("select k from h order by null", pqe.BindError, "non-integer constant"),
    ("select k from h order by (null)", pqe.BindError, "non-integer constant"),
    ("select k from h order by true", pqe.BindError, "non-integer constant"),
    ("select k from h order by 1, 'a'", pqe.BindError, "non-integer constant"),
    ("select * from (select k from h order by 'a') s", pqe.BindError, "non-integer constant"),
    ("select k from h union select k from t order by 'a'", pqe.BindError,
     "non-integer constant"),
    # a parenthesized position out of range
    ("select k from h order by (-1)", pqe.BindError, "position -1"),
    ("select k from h union select k from t order by (-1)", pqe.BindError, "position -1"),
    ("select k from h order by (2)", pqe.BindError, "position 2"),
    # an ambiguous input name does not fall back to an alias
    ("select t.k*10 as k from t join u on t.k = u.k where k > 1",
     pqe.AmbiguousColumnError, "t.k or u.k"),
    ("select t.k*10 as k from t join u on t.k = u.k where (k) > 1",
     pqe.AmbiguousColumnError, "ambiguous"),
    ("select t.k*10 as k from t join u on t.k = u.k where k + 0 > 1",
     pqe.AmbiguousColumnError, "ambiguous"),
    ("select t.k*10 as k from t, u where k > 1", pqe.AmbiguousColumnError, "ambiguous"),
    ("select x.k*10 as k from t x join t y on x.k = y.k where k > 1",
     pqe.AmbiguousColumnError, "x.k or y.k"),
    ("select a.k*2 as k from (select * from t) a join (select * from u) s on a.k = s.k "
     "where k > 1", pqe.AmbiguousColumnError, "a.k or s.k"),
    ("with c as (select * from u) select t.k*2 as k from t join c on t.k = c.k where k > 1",
     pqe.AmbiguousColumnError, "t.k or c.k"),
    ("select * from (select t.k*10 as k from t join u on t.k = u.k where k > 1) s",
     pqe.AmbiguousColumnError, "ambiguous"),
    ("select t.k*10 as k from t join u on t.k = u.k group by k",
     pqe.AmbiguousColumnError, "ambiguous"),
    ("select t.k*10 as k, count(*) as n from t join u on t.k = u.k group by (k)",
     pqe.AmbiguousColumnError, "ambiguous"),
    ("select t.k*10 as k, count(*) as n from t join u on t.k = u.k group by t.k having k > 1",
     pqe.AmbiguousColumnError, "ambiguous"),
    ("select t.k*10 as k, row_number() over () as rn from t join u on t.k = u.k "
     "qualify k > 10", pqe.AmbiguousColumnError, "ambiguous"),
]


@pytest.mark.parametrize("sql,error,words", REFUSED)
def test_refused(ctx, duck, sql, error, words):
    with pytest.raises(error, match=words):
        ctx.sql(sql).to_arrow()
    with pytest.raises(duckdb.Error):
        duck.execute(sql).fetchall()


# answers that were right before and stay so (guards for the fixes above)
UNCHANGED = [
    ("select k*10 as k from t where k > 2 order by 1", [(30,), (100,), (200,)]),
    ("select k*10 as x from t where x > 100 order by 1", [(200,)]),  # (DuckDB; PG refuses)
    ("select v*10 as k from t join u using (k) where k > 1 order by 1", [(150,), (250,)]),
    ("select k*10 as k, count(*) as n from h group by k order by 1",
     [(10, 2), (20, 1), (30, 1)]),
    ("select -k as x, count(*) as n from h group by (x) order by 1",
     [(-3, 1), (-2, 1), (-1, 2)]),
    ("select k, count(*) as c from h group by k having c > 1", [(1, 2)]),
    ("select -k as k, count(*) as n from h group by 1 having k < -1 order by 1",
     [(-3, 1), (-2, 1)]),
    ("select k, row_number() over (order by k) as rn from h qualify rn = 1", [(1, 1)]),
    ("select -k as k from h order by k", [(-3,), (-2,), (-1,), (-1,)]),
    ("select -k as k from h order by k + 0", [(-1,), (-1,), (-2,), (-3,)]),
    ("select -k as k from h order by (k) + 0", [(-1,), (-1,), (-2,), (-3,)]),
    ("select -k as k, row_number() over (order by k) as rn from h order by rn",
     [(-1, 1), (-1, 2), (-2, 3), (-3, 4)]),
    ("select k*10 as k, count(*) as c from h group by 1 order by min(k) desc",
     [(30, 1), (20, 1), (10, 2)]),
    ("select v*10 as x from t full join u using (k) order by k + 0",
     [(50,), (150,), (250,), (None,), (350,), (450,)]),
    # constants that sort nothing but are no literal: accepted by both
    ("select k from h order by 1 + 0, k", [(1,), (1,), (2,), (3,)]),
    ("select k from h order by cast(null as int), k", [(1,), (1,), (2,), (3,)]),
    ("select k, count(*) over (order by 'a') as c from h order by k",
     [(1, 4), (1, 4), (2, 4), (3, 4)]),
    ("select count(*) as n from h group by 'a'", [(4,)]),
    ("select k from t where exists (select 1 from u where u.k = t.k and k > 1) order by 1",
     [(2,), (3,)]),
]


@pytest.mark.parametrize("sql,expected", UNCHANGED)
def test_unchanged(ctx, duck, sql, expected):
    _check(ctx, duck, sql, expected)
