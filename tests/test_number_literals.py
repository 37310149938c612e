"""A number running straight into letters is a syntax error naming it, as in PostgreSQL 16,
never a number with an implicit alias (`SELECT 0b101` was 0 AS b101, `12abc` 12 AS abc,
`x = 1and y = 2` read as `1 AND`), and `0x1F` is refused rather than read as a BLOB
(PostgreSQL 16 reads it as 31, DuckDB as 0 AS x1F)."""
import pytest

import pqe
from pqe.sql.text import ends_statement, split_statements


@pytest.mark.parametrize("sql, col, word", [
    ("select 0b101", 8, "0b101"),
    ("select 0o17", 8, "0o17"),
    ("select 12abc", 8, "12abc"),
    ("select 1e3x", 8, "1e3x"),
    ("select 1.5e3_", 8, "1.5e3_"),
    ("select 1 where 1=1and 2=2", 18, "1and"),
    ("select 1\nlimit 1offset 0", 7, "1offset"),
    ("select 2é", 8, "2é"),
])
def test_number_running_into_letters_is_a_syntax_error(sql, col, word):
    with pytest.raises(pqe.SQLSyntaxError, match=rf"column {col}:.*trailing junk.*'{word}'"):
        pqe.Context().sql(sql)


def test_hex_integer_literal_is_refused_by_name():
    with pytest.raises(pqe.SQLSyntaxError, match=r"column 8:.*hexadecimal.*not supported"):
        pqe.Context().sql("select 0x10")


@pytest.mark.parametrize("sql, want", [
    ("select 1_000 as v", 1000),
    ("select 10e2 as v", 1000.0),
    ("select 1.e2 as v", 100.0),
    ("select 2E+4 as v", 20000.0),
    ("select x'10' as v", b"\x10"),
    ("select 5::int as v", 5),
    ("select 0 as v", 0),
    ("select 'a1b' as v", "a1b"),
    ("select $$1abc$$ as v", "1abc"),
    ("select 1 as v--c", 1),
    ("select 3 as v/*c*/", 3),
    ("select [1, 2][1] as v", 1),
])
def test_numbers_and_what_may_follow_them(sql, want):
    assert pqe.Context().sql(sql).to_arrow().column("v").to_pylist() == [want]


def test_statement_splitting_leaves_the_error_to_the_parser():
    # (the shell asks where statements end: a number running into letters is not an open
    # string, so the statement ends and the parser reports it)
    assert ends_statement("select 12abc;")
    assert split_statements("select 12abc; select 1") == ["select 12abc", "select 1"]
