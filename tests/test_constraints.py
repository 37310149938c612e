"""PRIMARY KEY and UNIQUE are enforced; INSERT OR REPLACE / OR IGNORE and ON CONFLICT DO
NOTHING / DO UPDATE do what they say (checked against DuckDB); nothing is accepted and
ignored."""

from __future__ import annotations

import duckdb
import pytest

import pqe

SCHEMA = "CREATE TABLE k(id INTEGER PRIMARY KEY, u VARCHAR UNIQUE, v INTEGER)"


def _both(statements: list[str]):
    ctx = pqe.Context()
    duck = duckdb.connect()
    for sql in statements:
        ctx.sql(sql)
        duck.execute(sql)
    q = "SELECT id, u, v FROM k ORDER BY id"
    return ctx.sql(q).to_arrow().to_pylist(), [dict(zip(("id", "u", "v"), r, strict=True))
                                               for r in duck.execute(q).fetchall()]


SEQUENCES = [
    [SCHEMA, "INSERT INTO k VALUES (1, 'a', 10), (2, 'b', 20)",
     "INSERT INTO k VALUES (1, 'x', 99) ON CONFLICT DO NOTHING"],
    [SCHEMA, "INSERT INTO k VALUES (1, 'a', 10), (2, 'b', 20)",
     "INSERT INTO k VALUES (1, 'x', 99), (3, 'c', 30) ON CONFLICT (id) DO UPDATE SET v = excluded.v"],
    [SCHEMA, "INSERT INTO k VALUES (1, 'a', 10), (2, 'b', 20)",
     "INSERT INTO k VALUES (1, 'z', 5) ON CONFLICT (id) DO UPDATE SET v = k.v + excluded.v "
     "WHERE k.v > 100"],
    [SCHEMA, "INSERT INTO k VALUES (1, 'a', 10), (2, 'b', 20)",
     "INSERT INTO k VALUES (2, 'q', 7) ON CONFLICT (id) DO UPDATE SET u = excluded.u, v = 0"],
    ["CREATE TABLE k(id INTEGER PRIMARY KEY, u VARCHAR, v INTEGER)",
     "INSERT INTO k VALUES (1, 'a', 10)", "INSERT OR REPLACE INTO k VALUES (1, 'r', 11), (4, 'd', 40)"],
    ["CREATE TABLE k(id INTEGER PRIMARY KEY, u VARCHAR, v INTEGER)",
     "INSERT INTO k VALUES (1, 'a', 10)", "INSERT OR IGNORE INTO k VALUES (1, 'i', 0), (5, 'e', 50)"],
    [SCHEMA, "INSERT INTO k VALUES (1, NULL, 1), (2, NULL, 2)"],  # NULLs never conflict
]


@pytest.mark.parametrize("statements", SEQUENCES)
def test_conflict_handling_matches_duckdb(statements):
    got, want = _both(statements)
    assert got == want


@pytest.mark.parametrize("bad", [
    "INSERT INTO k VALUES (1, 'dup-pk', 0)",
    "INSERT INTO k VALUES (9, 'a', 0)",
    "INSERT INTO k VALUES (7, 'n', 0), (7, 'm', 0)",
    "UPDATE k SET id = 1",
    "UPDATE k SET u = 'a' WHERE id = 2",
    "INSERT INTO k VALUES (NULL, 'p', 0)",
])
def test_violations_are_refused_and_leave_nothing(bad):
    ctx = pqe.Context()
    ctx.sql(SCHEMA)
    ctx.sql("INSERT INTO k VALUES (1, 'a', 10), (2, 'b', 20)")
    before = ctx.sql("SELECT * FROM k ORDER BY id").to_pylist()
    duck = duckdb.connect()
    duck.execute(SCHEMA)
    duck.execute("INSERT INTO k VALUES (1, 'a', 10), (2, 'b', 20)")
    with pytest.raises(duckdb.Error):
        duck.execute(bad)
    with pytest.raises(pqe.ConstraintError, match="violates"):
        ctx.sql(bad)
    assert ctx.sql("SELECT * FROM k ORDER BY id").to_pylist() == before


def test_table_level_keys_and_unsupported_constraints():
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE p(a INT, b INT, c INT, PRIMARY KEY (a, b), UNIQUE (c))")
    ctx.sql("INSERT INTO p VALUES (1, 1, 1), (1, 2, 2)")
    with pytest.raises(pqe.ConstraintError, match=r"PRIMARY KEY \(a, b\)"):
        ctx.sql("INSERT INTO p VALUES (1, 2, 3)")
    with pytest.raises(pqe.ConstraintError, match=r"UNIQUE \(c\)"):
        ctx.sql("INSERT INTO p VALUES (2, 2, 1)")
    assert ctx.sql("SELECT count(*) AS n FROM p").to_pylist() == [{"n": 2}]
    for sql, what in [("CREATE TABLE q(a INT CHECK (a > 0))", "constraint"),
                      ("CREATE TABLE q(a INT, CHECK (a > 0))", "constraint"),
                      ("CREATE TABLE q(a INT DEFAULT 3)", "constraint"),
                      ("CREATE TABLE q(a INT REFERENCES p(a))", "constraint")]:
        with pytest.raises(pqe.UnsupportedError, match=what):
            ctx.sql(sql)
    assert "q" not in ctx.tables()


def test_conflict_clauses_need_a_key():
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE nk(a INT)")
    for sql in ("INSERT OR REPLACE INTO nk VALUES (1)", "INSERT OR IGNORE INTO nk VALUES (1)",
                "INSERT INTO nk VALUES (1) ON CONFLICT DO NOTHING"):
        with pytest.raises(pqe.BindError, match="no PRIMARY KEY"):
            ctx.sql(sql)
    ctx.sql(SCHEMA)
    with pytest.raises(pqe.BindError, match="does not match"):
        ctx.sql("INSERT INTO k VALUES (1, 'a', 1) ON CONFLICT (v) DO NOTHING")
    with pytest.raises(pqe.ConstraintError, match="twice"):
        ctx.sql("INSERT INTO k VALUES (1, 'a', 1), (1, 'b', 2) ON CONFLICT (id) DO UPDATE SET v = 0")


def test_constraints_survive_every_write():
    ctx = pqe.Context()
    ctx.sql(SCHEMA)
    ctx.sql("INSERT INTO k VALUES (1, 'a', 1)")
    ctx.sql("UPDATE k SET v = 2")
    ctx.sql("DELETE FROM k WHERE v = 3")
    ctx.sql("INSERT INTO k VALUES (2, 'b', 2)")
    with pytest.raises(pqe.ConstraintError):
        ctx.sql("INSERT INTO k VALUES (2, 'c', 3)")
    text = "\n".join(r["plan"] for r in ctx.sql("EXPLAIN CREATE TABLE z(i INT PRIMARY KEY)").to_pylist())
    assert "primary_key=(i)" in text


def test_double_keys_are_compared_as_sql_compares_them():
    """A DOUBLE key of 0.0 and one of -0.0 are the same key (SQL's =, DuckDB's constraint),
    as are two NaNs: PRIMARY KEY accepted 0.0 beside -0.0 (Arrow's hash compares bits). The
    error shows the key as given; ON CONFLICT DO NOTHING skips such rows."""
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE k (x DOUBLE PRIMARY KEY, v INT)")
    # (the literal -0.0 is a DECIMAL, which has no negative zero, as in DuckDB and PostgreSQL:
    # the DOUBLE -0.0 is written '-0.0'::DOUBLE)
    for bad in ["INSERT INTO k VALUES (0.0, 1), ('-0.0'::DOUBLE, 2)",
                "INSERT INTO k VALUES ('nan', 1), (CAST('-nan' AS DOUBLE), 2)"]:
        with pytest.raises(pqe.ConstraintError, match="duplicate key"):
            ctx.sql(bad)
    with pytest.raises(pqe.ConstraintError, match=r"duplicate key \(-0\.0\)"):
        ctx.sql("INSERT INTO k VALUES ('-0.0'::DOUBLE, 1), (0.0, 2)")
    ctx.sql("INSERT INTO k VALUES ('-0.0'::DOUBLE, 1), (12.5, 2), ('nan', 3)")
    for bad in ["INSERT INTO k VALUES (0.0, 4)", "INSERT INTO k VALUES ('nan', 4)"]:
        with pytest.raises(pqe.ConstraintError, match="duplicate key"):
            ctx.sql(bad)
    ctx.sql("INSERT INTO k VALUES (0.0, 5), (12.5, 6), (7.0, 7) ON CONFLICT DO NOTHING")
    rows = ctx.sql("SELECT x, v FROM k ORDER BY v").to_arrow().to_pylist()
    assert [r["v"] for r in rows] == [1, 2, 3, 7]
    assert str(rows[0]["x"]) == "-0.0"  # the row as given, not the canonical 0.0
