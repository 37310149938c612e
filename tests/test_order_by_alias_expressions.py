"""ORDER BY expressions over select-list aliases (`SELECT a + 1 AS x ... ORDER BY -x`), as
DuckDB reads them: a name no input column has is the aliased item; a name an input column
has stays the input column. Checked against DuckDB at 1 and 3 partitions."""
import duckdb
import pyarrow as pa
import pytest

import pqe

T = pa.table({"a": [1, 2, 3, None, 2], "b": [5, 4, 3, 2, 9], "g": ["x", "y", "x", "y", "é"]})
U = pa.table({"k": ["x", "y", "é"], "a": [10, 20, 30]})

CASES = [
    "select a + 1 as x from t order by -x nulls last, 1",
    "select a + 1 as x from t order by x * 2 desc nulls last",
    "select a + 1 as x from t order by coalesce(-x, 0), x",
    "select a, sum(b) over (partition by g) as w from t order by -w, a nulls last",
    "select g, sum(b) as s from t group by g order by -s",
    "select g, sum(b) as s from t group by g order by -s + sum(b), g",
    "select g as gg, count(*) as n from t group by gg order by -n, gg",
    "select g, sum(b) as s from t group by g having sum(b) > 1 order by s - 100",
    # an input column of the name wins over the alias
    "select a as b, b as a from t order by -a nulls last, 2",
    "select a + 1 as a from t order by -a nulls last",
    "select t.b as g from t join u on t.g = u.k order by g || 'q', 1",
    # case folding and quoting of the alias
    "select a + 1 as X from t order by -x nulls last",
    'select a + 1 as "X" from t order by -"X" nulls last',
    "select t.a * 2 as z from t join u on t.g = u.k order by -z nulls last",
    "select * from (select a + 1 as x from t order by -x nulls last limit 2) s",
    "select a, b * 2 as bb from t where a > (select min(a) from t) order by bb % 3, a",
    "select a + 1 as x, count(*) over () as c from t order by -x nulls last, c",
    "select a as x from t union all select b from t order by -x nulls last",
]


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.register("t", T)
    con.register("u", U)
    return con


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("sql", CASES)
def test_matches_duckdb(sql, partitions, duck):
    ctx = pqe.Context(partitions=partitions)
    ctx.register_arrow("t", T)
    ctx.register_arrow("u", U)
    got = [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()]
    want = duck.execute(sql).fetchall()
    assert [tuple(float(v) if v is not None and not isinstance(v, str) else v for v in r)
            for r in got] == \
        [tuple(float(v) if v is not None and not isinstance(v, str) else v for v in r)
         for r in want]


def test_input_column_wins_over_alias():
    ctx = pqe.Context()
    ctx.register_arrow("t", T)
    # -a is the input a (1, 2, 3, NULL, 2) negated, not the output a (= b)
    got = ctx.sql("select a as b, b as a from t order by -a nulls last, 2").to_arrow()
    assert got.column("b").to_pylist() == [3, 2, 2, 1, None]


def test_two_items_of_one_alias_are_ambiguous():
    ctx = pqe.Context()
    ctx.register_arrow("t", T)
    with pytest.raises(pqe.AmbiguousColumnError, match=r"'x' is ambiguous.*line 1, column 38"):
        ctx.sql("select a+1 x, a+2 x from t order by -x")


def test_unknown_name_is_still_unknown():
    ctx = pqe.Context()
    ctx.register_arrow("t", T)
    with pytest.raises(pqe.UnknownColumnError, match="'y' does not exist"):
        ctx.sql("select a + 1 as x from t order by -y")


def test_subquery_item_by_alias():
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", T)
    got = ctx.sql("select (select max(b) from t t2 where t2.g = t.g) as m, a from t "
                  "order by -m, a nulls last").to_arrow().to_pylist()
    assert [(r["m"], r["a"]) for r in got] == [(9, 2), (5, 1), (5, 3), (4, 2), (4, None)]


def test_distinct_expression_of_alias_stays_refused():
    ctx = pqe.Context()
    ctx.register_arrow("t", T)
    with pytest.raises(pqe.BindError, match="SELECT DISTINCT, ORDER BY expressions"):
        ctx.sql("select distinct a + 1 as x from t order by -x")


def test_view_rebound_when_its_table_gains_the_alias_name():
    # the expansion of `-x` into `-(a * 10)` is made on the view's bound tree: a view is
    # bound again from its text, so once its table has a column x, ORDER BY -x reads that
    # column (as in DuckDB), not the expansion made when x was only an alias
    ctx = pqe.Context()
    ctx.sql("create table t (a int)")
    ctx.sql("insert into t values (1), (3), (2)")
    ctx.sql("create view v as select a * 10 as x from t order by -x")
    assert ctx.sql("select * from v").to_arrow().column(0).to_pylist() == [30, 20, 10]
    ctx.sql("create or replace table t as select a, -a as x from (values (1), (3), (2)) s(a)")
    assert ctx.sql("select * from v").to_arrow().column(0).to_pylist() == [10, 20, 30]
