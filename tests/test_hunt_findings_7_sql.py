"""SQL front-end findings of the seventh hunt: names read as unit words, statements accepted
and ignored, internal errors on bad input, error positions and messages, comments in result
names, SUMMARIZE's quantiles and EXPLAIN's text literals."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

import pqe


@pytest.fixture
def ctx():
    c = pqe.Context()
    c.sql("CREATE TABLE t(a INT PRIMARY KEY, b INT, s VARCHAR, ts TIMESTAMP, month VARCHAR)")
    c.sql("INSERT INTO t VALUES (1, 1, 'month', TIMESTAMP '2020-03-15 10:11:12', 'year')")
    c.sql("CREATE VIEW v AS SELECT a, b FROM t")
    return c


def rows(ctx, sql, params=None):
    return ctx.sql(sql, params).to_arrow().to_pylist() if params else \
        ctx.sql(sql).to_arrow().to_pylist()


# ---- 1. a name in a unit's place is never read as the unit -----------------------------------


@pytest.mark.parametrize("sql", [
    "SELECT date_trunc(s, ts) FROM t",  # was 'SECOND': the value unchanged
    "SELECT date_trunc(month, ts) FROM t",  # was MONTH, whatever the column holds
    'SELECT date_trunc("month", ts) FROM t',
    "SELECT date_add(s, 1, ts) FROM t",
    "SELECT date_sub(ts, 1, s) FROM t",
    "SELECT timestamp_trunc(ts, s) FROM t",
    "SELECT datetime_trunc(ts, s) FROM t",
    "SELECT time_trunc(ts, s) FROM t",
    "SELECT timestamp_diff(ts, ts, s) FROM t",
    "SELECT timestampdiff(s, ts, ts) FROM t",
    "SELECT last_day(ts, s) FROM t",
    "SELECT time_slice(ts, 1, s) FROM t",
    "SELECT datetrunc(s, ts) FROM t",
    "SELECT date_diff(month, ts, ts) FROM t",  # (refused when it ran, with no position)
])
def test_a_name_as_a_unit_is_refused(ctx, sql):
    with pytest.raises(pqe.UnsupportedError,
                       match="(unit|part) must be a string literal like 'month'") as e:
        ctx.sql(sql).to_arrow()
    assert e.value.line == 1 and e.value.column is not None


def test_date_trunc_units(ctx):
    assert rows(ctx, "SELECT date_trunc('month', ts) AS d FROM t") == [
        {"d": datetime.datetime(2020, 3, 1)}]
    # an expression as the unit: its SQL text was taken for the unit
    with pytest.raises(pqe.UnsupportedError, match="unit must be a string literal") as e:
        ctx.sql("SELECT date_trunc(s || '', ts) FROM t").to_arrow()
    assert "s || ''" in str(e.value) and '"t"' not in str(e.value)


def test_date_part_and_extract_parts(ctx):
    assert rows(ctx, "SELECT date_part('month', ts) AS m FROM t") == [{"m": 3}]
    with pytest.raises(pqe.UnsupportedError, match="part must be a string literal") as e:
        ctx.sql("SELECT date_part(s, ts) FROM t").to_arrow()  # was "unknown function DATE_PART"
    assert "not s at line 1, column 18" in str(e.value)
    with pytest.raises(pqe.UnsupportedError, match="EXTRACT part 'fortnight'"):
        ctx.sql("SELECT extract(fortnight FROM ts) FROM t").to_arrow()


def test_interval_unit_is_a_unit_word(ctx):
    assert rows(ctx, "SELECT ts + INTERVAL 1 month AS d FROM t") == [
        {"d": datetime.datetime(2020, 4, 15, 10, 11, 12)}]
    # `s` was read as SECOND (sqlglot takes any name, and spells abbreviations out)
    with pytest.raises(pqe.SQLSyntaxError, match="'s' is not an interval unit"):
        ctx.sql("SELECT ts + INTERVAL 1 s FROM t").to_arrow()


def test_no_argument_is_dropped(ctx):
    # log10(2, 100) was log10(2); date_to_date_str(x, 1) dropped the 1
    with pytest.raises(pqe.BindError, match="log10 does not take the argument 100"):
        ctx.sql("SELECT log10(2, 100)").to_arrow()
    with pytest.raises(pqe.SQLSyntaxError, match="arguments"):
        ctx.sql("SELECT abs(1, 2)").to_arrow()
    assert rows(ctx, "SELECT log10(100) AS x") == [{"x": 2.0}]


# ---- 2. accepted and ignored -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["SCHEMA", "DATABASE", "FUNCTION", "VIEW", "INDEX",
                                  "SEQUENCE"])
def test_describe_of_another_kind_is_refused(ctx, kind):
    with pytest.raises(pqe.UnsupportedError, match=f"DESCRIBE {kind}"):
        ctx.sql(f"DESCRIBE {kind} t").to_arrow()


def test_describe_table_and_qualified_names(ctx):
    assert [r["column_name"] for r in rows(ctx, "DESCRIBE TABLE t")] == [
        "a", "b", "s", "ts", "month"]
    for sql in ("DESCRIBE nope.t", "DESCRIBE a.b.t"):
        with pytest.raises(pqe.UnsupportedError, match="qualified names") as e:
            ctx.sql(sql).to_arrow()
        assert (e.value.line, e.value.column) == (1, 10)


def test_create_index_checks_what_it_names(ctx):
    with pytest.raises(pqe.UnsupportedError, match="qualified names"):
        ctx.sql("CREATE INDEX i ON nope.t (a)")
    with pytest.raises(pqe.UnsupportedError, match="is not supported"):
        ctx.sql("CREATE INDEX i ON t (a) WHERE a > 0")
    with pytest.raises(pqe.UnknownColumnError, match=r"no column 'zz' at line 1, column 22"):
        ctx.sql("CREATE INDEX i ON t (zz)")
    ctx.sql("CREATE INDEX i ON t USING hash (a)")
    ctx.sql("DROP INDEX i")


@pytest.mark.parametrize("sql", [
    "INSERT INTO t (a, b) VALUES (1, 3) ON CONFLICT (a) DO UPDATE SET nope.b = 9",
    "INSERT INTO t (a, b) VALUES (1, 3) ON CONFLICT (nope.a) DO NOTHING",
])
def test_on_conflict_qualified_names_are_refused(ctx, sql):
    with pytest.raises(pqe.UnsupportedError, match="qualified names"):
        ctx.sql(sql)
    assert rows(ctx, "SELECT a, b FROM t") == [{"a": 1, "b": 1}]


@pytest.mark.parametrize("sql", [
    'SELECT 1 AS ""', 'CREATE TABLE e ("" int)', 'SELECT a AS "" FROM t',
    'SELECT * FROM t AS ""', 'WITH "" AS (SELECT 1) SELECT 1',
])
def test_zero_length_quoted_names_are_refused(ctx, sql):
    with pytest.raises(pqe.SQLSyntaxError, match="zero-length quoted name"):
        ctx.sql(sql).to_arrow()


@pytest.mark.parametrize("sql, word", [
    ("SELECT a FROM t GROUP", "GROUP"), ("SELECT a FROM t ORDER", "ORDER"),
    ("SELECT a FROM t OFFSET", "OFFSET"), ("SELECT a FROM t AS order", "ORDER"),
    ("SELECT 1 order", "ORDER"), ("SELECT a limit FROM t", "LIMIT"),
])
def test_reserved_words_are_no_implicit_alias(ctx, sql, word):
    with pytest.raises(pqe.SQLSyntaxError, match=f"{word} is a reserved word"):
        ctx.sql(sql).to_arrow()


def test_alias_forms_still_accepted(ctx):
    assert rows(ctx, 'SELECT a AS order, b year FROM t AS "group"') == [{"order": 1, "year": 1}]
    with pytest.raises(pqe.SQLSyntaxError, match="AS needs a name"):
        ctx.sql("SELECT a FROM t AS").to_arrow()


def test_insert_value_and_count_all(ctx):
    with pytest.raises(pqe.SQLSyntaxError, match="VALUE"):
        ctx.sql("INSERT INTO t VALUE (2, 2, 'x', NULL, NULL)")
    with pytest.raises(pqe.SQLSyntaxError, match="ALL needs an argument"):
        ctx.sql("SELECT count(ALL) FROM t").to_arrow()
    assert rows(ctx, "SELECT count(ALL a) AS n FROM t") == [{"n": 1}]


# ---- 3. internal errors on bad input ---------------------------------------------------------


@pytest.mark.parametrize("sql, message", [
    ("SELECT count(DISTINCT) FROM t", "DISTINCT needs an argument"),
    ("SELECT string_agg(DISTINCT) FROM t", "DISTINCT needs an argument"),
    ("CREATE VIEW v2", "CREATE VIEW needs AS and a query"),
    ("CREATE VIEW v2 AS", "CREATE VIEW needs AS and a query"),
    ("EXPLAIN CREATE VIEW v2 AS", "CREATE VIEW needs AS and a query"),
    ("CREATE TABLE x AS", "CREATE TABLE needs AS and a query"),
])
def test_incomplete_input_is_a_syntax_error(ctx, sql, message):
    with pytest.raises(pqe.SQLSyntaxError, match=message) as e:
        ctx.sql(sql).to_arrow()
    assert e.value.line == 1 and e.value.column is not None


# ---- 4. error positions ----------------------------------------------------------------------


@pytest.mark.parametrize("sql, where", [
    ('SELECT "zz" FROM t', (1, 8)),  # was column 10 (the quotes not counted)
    ('SELECT a FROM t WHERE "zz" = 1', (1, 23)),
    ("SELECT 1 /* x", (1, 10)),  # was column 1
    ("CREATE VIEW v9 AS SELECT 1 /* x", (1, 28)),  # was column 3
    ('SELECT "abc', (1, 8)),
    ("SELECT 1,\n 'x", (2, 2)),
    ("SELECT foo(a) FROM t", (1, 8)),
    ("SELECT a FROM t ORDER BY 5", (1, 26)),
    ("INSERT INTO t (zz) VALUES (1)", (1, 16)),
    ("SELECT sum(sum(a)) FROM t", (1, 12)),
    ("SELECT CAST(a AS nosuchtype) FROM t", (1, 18)),
])
def test_errors_say_where(ctx, sql, where):
    with pytest.raises(pqe.Error) as e:
        ctx.sql(sql).to_arrow()
    assert (e.value.line, e.value.column) == where, str(e.value)
    assert f"line {where[0]}, column {where[1]}" in str(e.value)
    assert not isinstance(e.value, pqe.InternalError)


def test_unterminated_text_is_named(ctx):
    with pytest.raises(pqe.SQLSyntaxError, match="unterminated comment"):
        ctx.sql("SELECT 1 /* a /* b */")
    with pytest.raises(pqe.SQLSyntaxError, match="unterminated quoted name"):
        ctx.sql('SELECT "abc')


# ---- 5. messages -----------------------------------------------------------------------------


@pytest.mark.parametrize("sql, column", [
    ("SELECT * FROM", 14), ("INSERT INTO", 12), ("DROP TABLE", 11), ("DESCRIBE", 9),
    ("SELECT a FROM t JOIN", 21),
])
def test_end_of_input_names_no_sqlglot_token(ctx, sql, column):
    with pytest.raises(pqe.SQLSyntaxError) as e:
        ctx.sql(sql).to_arrow()
    text = str(e.value)
    assert "unexpected end of input: expected a table name" in text
    assert "Token" not in text and "SENTINEL" not in text
    assert (e.value.line, e.value.column) == (1, column)


def test_unknown_qualified_column_and_table(ctx):
    with pytest.raises(pqe.UnknownColumnError,
                       match=r"column 't.zz' does not exist at line 1, column 8") as e:
        ctx.sql("SELECT t.zz FROM t").to_arrow()  # was BindError "Unknown column: zz"
    with pytest.raises(pqe.UnknownColumnError, match=r"did you mean 'month'"):
        ctx.sql("SELECT t.monht FROM t").to_arrow()
    with pytest.raises(pqe.UnknownTableError, match=r"table or alias 'y'") as e:
        ctx.sql("SELECT y.a FROM t x").to_arrow()  # said column 'a' does not exist
    assert (e.value.line, e.value.column) == (1, 8)


def test_insert_and_update_unknown_columns(ctx):
    with pytest.raises(pqe.UnknownColumnError, match=r"no column 'zz' at line 1, column 16"):
        ctx.sql("INSERT INTO t (zz) VALUES (1)")
    with pytest.raises(pqe.UnknownColumnError, match=r"no column 'bb' .*did you mean 'b'"):
        ctx.sql("UPDATE t SET bb = 1")


def test_create_over_the_other_kind_names_it(ctx):
    with pytest.raises(pqe.CatalogError, match="a table named 't' already exists"):
        ctx.sql("CREATE VIEW t AS SELECT 1 AS x")
    with pytest.raises(pqe.CatalogError, match="a view named 'v' already exists"):
        ctx.sql("CREATE TABLE v (x INT)")


def test_show_refusal_keeps_the_text(ctx):
    with pytest.raises(pqe.UnsupportedError, match="SHOW TABLES LIKE 't%'"):
        ctx.sql("SHOW TABLES LIKE 't%'")


# ---- 6. comments are no part of result names -------------------------------------------------


def test_comments_do_not_name_columns(ctx):
    assert ctx.sql("SELECT a + b -- sum\n FROM t").to_arrow().schema.names == ["a + b"]
    assert ctx.sql("SELECT a+1 /*z*/, a+1 FROM t").to_arrow().schema.names == ["a + 1", "a + 1"]
    ctx.sql("CREATE TABLE ct AS SELECT a + 1 /* note */ FROM t")
    assert [r["column_name"] for r in rows(ctx, "DESCRIBE ct")] == ["a + 1"]


# ---- 7. SUMMARIZE's quantiles are continuous -------------------------------------------------


def test_summarize_quantiles_match_quantile_cont():
    c = pqe.Context()
    c.register_arrow("q", pa.table({"i": pa.array([1, 2, None, 4, 4], pa.int32()),
                                    "f": [1.5, None, -0.0, -0.0, 2.0]}))
    got = {r["column_name"]: r for r in rows(c, "SUMMARIZE q")}
    assert [got["i"][k] for k in ("q25", "q50", "q75")] == ["2", "3", "4"]  # was 1, 2, 4
    cont = rows(c, "SELECT median(i) AS m, quantile_cont(f, 0.25) AS f25, "
                   "quantile_cont(f, 0.75) AS f75 FROM q")[0]
    assert cont["m"] == 3.0
    assert float(got["f"]["q25"]) == cont["f25"] and float(got["f"]["q75"]) == cont["f75"]
    # one rendering of a DOUBLE in the row: -0.0 (it was -0 beside min's -0.0)
    assert got["f"]["min"] == "-0.0" and got["f"]["q25"] == "-0.0"
    assert got["f"]["q75"] == "1.625"


# ---- 8. EXPLAIN keeps a literal on its line --------------------------------------------------


def test_explain_escapes_line_breaks_in_literals(ctx):
    lines = ctx.sql("EXPLAIN SELECT * FROM t WHERE s = ?", ["a\nb"]).to_arrow().column(0)
    lines = lines.to_pylist()
    filters = [x for x in lines if "t.s = " in x]
    assert filters and all("E'a\\nb'" in x for x in filters)
    assert not any(x.strip() == "b')" for x in lines)
    plain = ctx.sql("EXPLAIN SELECT * FROM t WHERE s = ?", ["it's"]).to_arrow().column(0)
    assert any("'it''s'" in x for x in plain.to_pylist())


def test_a_property_sqlglot_cannot_write_is_refused_by_name(ctx):
    # (its refusal failed to render it: InternalError "Unsupported expression type list")
    with pytest.raises(pqe.UnsupportedError, match="SORTKEY is not supported"):
        ctx.sql("CREATE TABLE z (a INT) SORTKEY (a)")


def test_every_explain_section_keeps_a_newline_in_one_row():
    """The physical plan and the statement line escape control characters too, as the
    logical plan does: one plan line, one row."""
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE t (a INTEGER)")
    rows = ctx.sql("EXPLAIN SELECT a AS \"x\ny\", upper('q\r\nz') FROM t").to_arrow() \
        .column(0).to_pylist()
    physical = rows[rows.index("== Physical Plan ==") + 1]
    assert physical.startswith("Project: t.a AS x\\ny") and "\\r\\n" in physical
    assert all("\n" not in r and "\r" not in r for r in rows)
    rows = ctx.sql("EXPLAIN CREATE TABLE \"a\nb\" AS SELECT 1").to_arrow().column(0).to_pylist()
    assert "CreateTableAs: a\\nb" in rows


@pytest.mark.parametrize("sql", ["SELECT ifnull(NULL, NULL, 3)", "SELECT nvl(NULL, 2, 3)",
                                 "SELECT ifnull(1)", "SELECT nvl(1)"])
def test_ifnull_and_nvl_take_two_arguments(sql):
    """sqlglot builds IFNULL/NVL as COALESCE of any number of arguments: ifnull(a, b, c) ran
    as coalesce(a, b, c); DuckDB and PostgreSQL refuse it."""
    with pytest.raises(pqe.BindError, match="takes 2 arguments"):
        pqe.Context().sql(sql).to_arrow()
    assert pqe.Context().sql("SELECT ifnull(NULL, 2) AS x").to_pylist() == [{"x": 2}]


@pytest.mark.parametrize("sql", [
    "SELECT coalesce(d, '2021-02-03') FROM t",
    "SELECT CASE WHEN n IS NULL THEN '2021-02-03' ELSE d END FROM t",
    "SELECT greatest(d, '2021-02-03') FROM t",
    "SELECT least(n, '0', '5') FROM t",
    "SELECT coalesce(n, '7') FROM t",
    "SELECT coalesce(x, '2.5') FROM t",
    "SELECT coalesce(s, 'z') FROM t",
    "SELECT CASE WHEN n = 1 THEN 'yes' ELSE 'no' END FROM t",
    "SELECT CASE WHEN true THEN '1' ELSE 2 END",
])
def test_text_literals_take_the_other_arguments_type(sql):
    """A text literal beside typed values in CASE, COALESCE, GREATEST and LEAST takes their
    type, as in PostgreSQL and DuckDB (it was "no common type: DATE, VARCHAR")."""
    import duckdb

    t = pa.table({"d": pa.array([datetime.date(2020, 1, 1), None]),
                  "n": pa.array([1, None], pa.int32()), "x": [1.5, None], "s": ["a", None]})
    ctx = pqe.Context()
    ctx.register_arrow("t", t)
    con = duckdb.connect()
    con.register("t", t)
    got, want = ctx.sql(sql).to_arrow(), con.sql(sql).arrow().read_all()
    assert got.column(0).to_pylist() == want.column(0).to_pylist()
    assert got.schema.types == want.schema.types


def test_a_text_literal_that_does_not_convert_is_named():
    ctx = pqe.Context()
    ctx.register_arrow("t", pa.table({"n": pa.array([1, None], pa.int32())}))
    with pytest.raises(pqe.TypeMismatchError, match="cannot convert 'abc' to INTEGER"):
        ctx.sql("SELECT coalesce(n, 'abc') FROM t").to_arrow()
