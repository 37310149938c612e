"""Refuse by default: a clause or argument the SQL front end does not consume is refused by
name (UnsupportedError, with its position), never accepted and ignored.

The rule is driven by one declared table (pqe.sql.binder.supported.CONSUMED): these tests
check the table against sqlglot's own argument lists, set every argument it does not
declare on a node of each declared class and expect a refusal, and run SQL for the optional
clauses a SELECT can carry: each is either implemented (tested in test_sql_clauses.py) or
refused here.
"""

from __future__ import annotations

import pytest
from sqlglot import exp

import pqe
from pqe.sql.binder.expressions import BINARY, FUNCS, HANDLERS
from pqe.sql.binder.grouping import AGGS
from pqe.sql.binder.supported import CONSUMED, OPAQUE, check_supported
from pqe.sql.binder.windows import WINDOW_FUNCS
from pqe.sql.parser import parse


@pytest.fixture(scope="module")
def ctx():
    c = pqe.Context()
    c.sql("create table t (k int, v int, s varchar, d date)")
    c.sql("insert into t values (1, 10, 'a', date '2024-01-01'), (2, null, 'b', null)")
    c.sql("create table u (k int, w int)")
    c.sql("insert into u values (1, 5)")
    yield c
    c.close()


# ---- the declared table --------------------------------------------------------------------


def test_every_class_the_binder_handles_is_declared():
    handled = {*BINARY, *FUNCS, *AGGS, *WINDOW_FUNCS, *HANDLERS}
    missing = sorted(c.__name__ for c in handled if c not in CONSUMED and c not in OPAQUE)
    assert not missing


def test_declared_arguments_exist_in_sqlglot():
    wrong = [(cls.__name__, key) for cls, spec in CONSUMED.items() for key in spec
             if key not in cls.arg_types]
    assert not wrong


def _undeclared():
    for cls, spec in sorted(CONSUMED.items(), key=lambda kv: kv[0].__name__):
        for key in cls.arg_types:
            if key not in spec:
                yield pytest.param(cls, key, id=f"{cls.__name__}.{key}")


def _node(cls, unset: str):
    args = {k: exp.Literal.number(1) for k, required in cls.arg_types.items()
            if required and k != unset}
    return cls(**args)


@pytest.mark.parametrize("cls, key", list(_undeclared()))
def test_every_undeclared_argument_is_refused(cls, key):
    """Set on a node of a declared class, an argument the front end does not consume is
    refused wherever the node stands (an expression value, a flag, a list)."""
    for value in (exp.Literal.number(7), True, [exp.Literal.number(7)]):
        node = _node(cls, key)
        node.set(key, value)
        with pytest.raises(pqe.UnsupportedError, match="is not supported"):
            check_supported(exp.Select(expressions=[node]))


@pytest.mark.parametrize("cls, key, value", [
    (exp.Join, "kind", "ASOF"), (exp.Join, "side", "POSITIONAL"), (exp.Join, "method", "ASOF"),
    (exp.WindowSpec, "kind", "SESSION"), (exp.WindowSpec, "exclude", "OTHERS"),
    (exp.Trim, "position", "MIDDLE"),
    (exp.Fetch, "direction", "LAST"),
])
def test_declared_arguments_refuse_values_they_do_not_implement(cls, key, value):
    node = _node(cls, key)
    node.set(key, value)
    with pytest.raises(pqe.UnsupportedError, match=value):
        check_supported(exp.Select(expressions=[node]))


def test_unset_arguments_and_parser_defaults_are_not_refused(ctx):
    """What the parser fills in by itself (COUNT's big_int, ||'s safe, CONCAT's coalesce,
    NVL's is_nvl, GREATEST's ignore_nulls, LPAD's is_left, TRY_CAST's safe, ...) is not a
    clause the user wrote."""
    sql = ("select count(*), count(distinct k), s || 'x', concat(s, 'x'), nvl(v, 0), "
           "ifnull(v, 1), coalesce(v, 2), greatest(k, v), least(k, v), lpad(s, 3, '-'), "
           "rpad(s, 3, '-'), try_cast(s as int), cast(k as varchar), round(v, 1), "
           "position('a' in s), strpos(s, 'a'), trim(leading 'a' from s), substring(s, 1, 1), "
           "date_trunc('month', d), extract(year from d), k / 2, k % 2, min(k), max(v) "
           "from t group by s, v, k, d")
    check_supported(parse(sql)[0], sql)
    assert ctx.sql(sql).to_arrow().num_rows == 2


# ---- clauses, as SQL -----------------------------------------------------------------------

REFUSED = [
    # window frames and null treatment (tests/test_window_frames.py checks the implemented
    # EXCLUDE, GROUPS and IGNORE NULLS forms against DuckDB)
    ("select sum(v) over (order by k rows between 1 preceding and current row "
     "exclude no others) from t", None),  # the default frame
    ("select sum(v) over (order by k groups between 1 preceding and current row "
     "exclude ties) from t", None),
    ("select last_value(v ignore nulls) over (order by k) from t", None),
    ("select sum(v ignore nulls) over (order by k) from t", "IGNORE NULLS in SUM"),
    ("select row_number() ignore nulls over (order by k) from t", "IGNORE NULLS in ROW_NUMBER"),
    ("select ntile(2) ignore nulls over (order by k) from t", "IGNORE NULLS in NTILE"),
    # SELECT modifiers
    ("select distinct on (k) k, v from t", None),  # implemented: tests/test_distinct_on.py
    ("select k from t union by name select k from u", "UNION BY NAME"),
    ("select k from t for update", "locking clauses"),
    ("select k from t order by k with fill", "WITH FILL"),
    ("select k, sum(v) from t group by k with rollup", "WITH ROLLUP"),
    ("select * from t, lateral (select t.k) x", None),  # tests/test_nested_correlation.py
    ("select * from t right join lateral (select t.k) x on true", "RIGHT JOIN LATERAL"),
    ("select * from t join u on t.k = u.k and t.k = any(select 1)", None),  # implemented
    # expressions and functions
    ("select k from t where k between symmetric 3 and 1", "BETWEEN SYMMETRIC"),
    ("select string_agg(distinct s, ',' order by s) from t",
     "DISTINCT with ORDER BY inside STRING_AGG(...)"),
    ("select group_concat(distinct s order by s) from t",
     "DISTINCT with ORDER BY inside GROUP_CONCAT(...)"),
    ("select median(k order by k) from t", "ORDER BY inside MEDIAN(...)"),
    ("select string_agg(s, ',' order by k) from t", None),  # implemented
    ("select string_agg(s, ',') from t", None),  # implemented
    ("select array_agg(k) filter (where k > 1) from t", "FILTER on ARRAY_AGG"),
    ("select quantile_cont(k, [0.5]) from t", "a list of quantiles in QUANTILE_CONT"),
    ("select strpos(s, 'a', 2) from t", "POSITION/STRPOS/INSTR"),
    ("select s collate nocase from t", "COLLATE"),
    ("select d at time zone 'UTC' from t", "AT TIME ZONE"),
    ("select [1, 2]", None),  # implemented
    ("select [1, 2][1:2]", "list slices"),
    ("select unnest([1, 2])", None),  # implemented (in the select list)
    ("select unnest([1, 2]) + 1", "UNNEST"),
    ("select regexp_replace(s, 'a', 'b', 'x') from t", "REGEXP_REPLACE option(s) 'x'"),
    ("select strftime(d, '%Q') from t", "STRFTIME format specifier %Q"),
    ("select k from t where k in unnest([1])", "IN UNNEST"),
    ("select ceiling(k, 1) from t", "CEILING"),
    # integer division of integers is answered (nineteenth session), of other types refused
    ("select k div 2 from t", None),
    ("select k // 2 from t", None),
    ("select 7.5 // 2 from t", "integer division (//)"),
    # table sources
    ("select * from read_csv('x.csv', delim='|')", "READ_CSV options"),
    ("select * from main.t", "qualified table names"),
    ("select * from t asof join u on t.k >= u.k", "ASOF JOIN"),
    ("select * from unnest([1, 2])", "UNNEST"),
]


@pytest.mark.parametrize("sql, words", [pytest.param(s, w, id=s[:60]) for s, w in REFUSED])
def test_clauses_are_refused_by_name(ctx, sql, words):
    if words is None:
        ctx.sql(sql).to_arrow()
        return
    with pytest.raises(pqe.UnsupportedError) as info:
        ctx.sql(sql).to_arrow()
    assert words in str(info.value)
    assert "GROUP_CONCAT" not in str(info.value) or "group_concat" in sql


def test_refusals_carry_the_position(ctx):
    with pytest.raises(pqe.UnsupportedError) as info:
        ctx.sql("select k,\n  sum(v ignore nulls) over (order by k rows between 1 preceding "
                "and current row)\nfrom t")
    assert "at line 2" in str(info.value)
    with pytest.raises(pqe.UnsupportedError) as info:
        ctx.sql("select k from t\nwhere k between symmetric 3 and 1")
    assert (info.value.line, info.value.column) == (2, 27)


def test_refusal_names_the_function_as_written(ctx):
    with pytest.raises(pqe.UnsupportedError, match="STRING_AGG") as info:
        ctx.sql("select string_agg(distinct s, ',' order by s) from t")
    assert "GROUP_CONCAT" not in str(info.value)
    with pytest.raises(pqe.UnsupportedError, match="IGNORE NULLS in SUM") as info:
        ctx.sql("select sum(v ignore nulls) over (order by k) from t")
    assert "aggregate function SUM" not in str(info.value)


def test_dml_expressions_are_checked(ctx):
    ctx.sql("create table m (a int, b int)")
    with pytest.raises(pqe.UnsupportedError, match="BETWEEN SYMMETRIC"):
        ctx.sql("update m set b = 1 where a between symmetric 2 and 1")
    with pytest.raises(pqe.UnsupportedError, match="BETWEEN SYMMETRIC"):
        ctx.sql("delete from m where a between symmetric 2 and 1")
    with pytest.raises(pqe.UnsupportedError, match="STRING_AGG"):
        ctx.sql("insert into m select string_agg(distinct s, ',' order by s), 1 from t")
    with pytest.raises(pqe.UnsupportedError, match="COLLATE"):
        ctx.sql("insert into m values ('a' collate nocase, 1)")


def test_views_are_checked(ctx):
    with pytest.raises(pqe.UnsupportedError, match="IGNORE NULLS in SUM"):
        ctx.sql("create view bad as select sum(v ignore nulls) over (order by k rows between "
                "1 preceding and current row) from t")


def test_statements_name_their_first_word(ctx):
    with pytest.raises(pqe.UnsupportedError, match="BEGIN statements"):
        ctx.sql("begin")
