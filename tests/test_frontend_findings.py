"""Front-end findings of an adversarial hunt, each checked against DuckDB (pqe.testing.oracle):

1. REAL / FLOAT4 / FLOAT were read as DOUBLE: CAST(16777217 AS REAL) kept 16777217, and a
   float32 column compared with CAST(0.1 AS REAL) found no row. REAL is float32 now, with
   DuckDB's typing (REAL with REAL, an integer or a DECIMAL stays REAL; DOUBLE wins).
2. `SELECT *` over a subquery, CTE, view or VALUES whose columns repeat a name failed with
   "the SELECT list is empty after expanding *"; such columns get DuckDB's unique names
   (a, a_1, a_2) and are referable by them.
3. `x > 1 IS NOT TRUE` parsed as `x > (1 IS NOT TRUE)`: IS [NOT] NULL / TRUE / FALSE /
   DISTINCT FROM bind looser than comparisons, as in PostgreSQL and DuckDB.
4. A column `Name` of registered data came out of `SELECT *` as `name`; output names keep the
   data's spelling (unicode too), and every name SELECT * shows is referable.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe
from pqe.testing import oracle
from pqe.testing.compare import compare

CONTEXTS = [{}, {"partitions": 3, "scheduler": "sync"}]


def _check(tables: dict[str, pa.Table], queries: list[str], exact_names: bool = False,
           **ctx_args) -> None:
    """Every query answers as DuckDB does (names, types, values) on each context setup;
    with `exact_names` the column names must match in case too (compare ignores case)."""
    duck = oracle.connect(tables)
    for args in [ctx_args] if ctx_args else CONTEXTS:
        ctx = pqe.Context(**args)
        for name, t in tables.items():
            ctx.register_arrow(name, t)
        for sql in queries:
            got = ctx.sql(sql).to_arrow()
            want = oracle.query(duck, sql)
            m = compare(got, want, sql=sql)
            assert m is None, f"{sql} ({args}): {m}"
            if exact_names:
                assert got.column_names == want.column_names, sql


# ---- 1. REAL is float32 ------------------------------------------------------------------

F4 = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()),
               "f4": pa.array([0.1, 0.5, None, 16777216.0], pa.float32()),
               "i": pa.array([1, 2, 3, 16777217], pa.int64()),
               "d": pa.array([2.5, 0.25, 1.0, 3.0], pa.float64()),
               "m": pa.array([1, 2, 3, 4], pa.decimal128(5, 2))})


def test_real_casts_round_to_float32():
    _check({"t": F4}, [
        "SELECT CAST(CAST(16777217 AS REAL) AS BIGINT) AS v",
        "SELECT CAST(16777217 AS FLOAT4) AS v, CAST(16777217 AS FLOAT) AS w",
        "SELECT CAST(0.1 AS REAL) AS v, CAST('0.1' AS REAL) AS w, CAST(-16777217 AS REAL) AS x",
        "SELECT CAST(0.1 AS REAL) = CAST(0.1 AS DOUBLE) AS v",
        "SELECT CAST(1 AS FLOAT(24)) AS v, CAST(1 AS FLOAT(25)) AS w, CAST(1 AS FLOAT8) AS x",
        "SELECT TRY_CAST(1e40 AS REAL) AS v, CAST('1e40' AS REAL) AS w",
        "SELECT id, CAST(i AS REAL) AS v, CAST(CAST(i AS REAL) AS BIGINT) AS w FROM t",
        "SELECT id, CAST(d AS REAL) AS v, CAST(f4 AS DOUBLE) AS w, CAST(f4 AS INTEGER) AS x FROM t",
        "SELECT typeof(CAST(1 AS REAL)) AS a, typeof(CAST(1 AS FLOAT)) AS b, "
        "typeof(CAST(1 AS FLOAT(53))) AS c",
    ])


def test_real_column_compared_with_real_literal():
    _check({"t": F4}, [
        "SELECT id FROM t WHERE f4 = CAST(0.1 AS REAL)",
        "SELECT id FROM t WHERE f4 = CAST(0.1 AS FLOAT)",
        "SELECT id FROM t WHERE f4 = 0.1",  # a DECIMAL meets a REAL as a REAL (DuckDB)
        "SELECT id FROM t WHERE f4 = CAST(0.1 AS DOUBLE)",  # a DOUBLE does not
        "SELECT id FROM t WHERE f4 IN (CAST(0.1 AS REAL), 2)",
        "SELECT id FROM t WHERE f4 = i",
        "SELECT a.id, b.id AS bid FROM t a JOIN t b ON a.f4 = b.f4",
    ])


def test_real_arithmetic_and_aggregates_type_as_duckdb():
    _check({"t": F4}, [
        "SELECT id, f4 + f4 AS a, f4 + i AS b, f4 * d AS c, f4 + m AS e, f4 / f4 AS g, "
        "f4 / i AS h, f4 % f4 AS k, -f4 AS n, abs(f4) AS o, f4 + NULL AS p FROM t",
        "SELECT id, coalesce(f4, d) AS a, coalesce(f4, i) AS b, coalesce(f4, m) AS c, "
        "greatest(f4, i) AS e, CASE WHEN id > 2 THEN f4 ELSE 1 END AS g, nullif(f4, 0.5) AS h "
        "FROM t",
        "SELECT sum(f4) AS s, avg(f4) AS a, min(f4) AS lo, max(f4) AS hi, count(f4) AS n FROM t",
        "SELECT f4 FROM t UNION ALL SELECT i FROM t",
        "SELECT f4 FROM t UNION ALL SELECT d FROM t",
        "SELECT f4, count(*) AS n FROM t GROUP BY f4",
    ])


def test_real_from_parquet(tmp_path):
    path = tmp_path / "f4.parquet"
    pq.write_table(F4, path)
    ctx = pqe.Context()
    ctx.register_parquet("t", str(path))
    sql = "SELECT id, f4 FROM t WHERE f4 = CAST(0.1 AS REAL)"
    m = compare(ctx.sql(sql).to_arrow(), oracle.query(oracle.connect({"t": F4}), sql), sql=sql)
    assert m is None, m


def test_real_table_columns():
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE r (x REAL, y FLOAT, z FLOAT8, w FLOAT(30), v FLOAT4)")
    ctx.sql("INSERT INTO r VALUES (16777217, 0.1, 0.1, 0.1, 0.5)")
    assert [f.type for f in ctx.table("r").schema] == [
        pa.float32(), pa.float32(), pa.float64(), pa.float64(), pa.float32()]
    assert ctx.sql("SELECT CAST(x AS BIGINT) AS x FROM r").to_pylist() == [{"x": 16777216}]
    assert ctx.sql("SELECT count(*) AS n FROM r WHERE y = CAST(0.1 AS REAL)").to_pylist() == [
        {"n": 1}]
    assert [r["column_type"] for r in ctx.sql("DESCRIBE r").to_pylist()] == [
        "REAL", "REAL", "DOUBLE", "DOUBLE", "REAL"]


@pytest.mark.parametrize("sql, error", [
    ("SELECT CAST(1e40 AS REAL)", "out of range for REAL"),
    ("SELECT CAST(1 AS FLOAT(54))", "precision of FLOAT"),
    ("SELECT CAST(1 AS FLOAT(0))", "precision of FLOAT"),
])
def test_real_errors_are_clean(sql, error):
    with pytest.raises(pqe.Error, match=error):
        pqe.Context().sql(sql).to_arrow()


# ---- 2. repeated column names of derived tables -----------------------------------------

T = pa.table({"id": [1, 2, 3], "x": [10, 20, 30]})
U = pa.table({"id": [1, 2, 4], "y": [5, 6, 7]})


def test_star_over_repeated_names():
    _check({"t": T, "u": U}, [
        "SELECT * FROM (SELECT 1 AS a, 2 AS a) q",
        "SELECT * FROM (SELECT * FROM t JOIN u ON t.id = u.id) q",
        "SELECT q.* FROM (SELECT 1 AS a, 2 AS a, 3 AS a_1, 4 AS a) q",
        "WITH q AS (SELECT 1 AS a, 2 AS a) SELECT * FROM q",
        "SELECT * FROM (SELECT *, id FROM t) q",
        "SELECT * FROM (SELECT 1 AS a, 2 AS a UNION ALL SELECT 3, 4) q",
        "SELECT * FROM (VALUES (1, 2, 3)) q(a, a, A)",
        "SELECT * FROM (SELECT 1 AS a, 2 AS b) q(b)",
        "SELECT * FROM (SELECT * FROM (SELECT 1 AS a, 2 AS a) q1, (SELECT 3 AS a) q2) q3",
        "WITH c AS (SELECT * FROM t JOIN u ON t.id = u.id), "
        "d AS (SELECT * FROM c JOIN c AS e ON c.id = e.id_1) SELECT * FROM d",
    ])


def test_renamed_columns_are_referable():
    _check({"t": T, "u": U}, [
        "SELECT a, a_1 FROM (SELECT 1 AS a, 2 AS a) q",
        "SELECT q.id_1 + 1 AS z, * FROM (SELECT * FROM t JOIN u ON t.id = u.id) q "
        "WHERE id_1 > 1 ORDER BY z",
        "SELECT x FROM t WHERE id IN (SELECT id_1 FROM (SELECT * FROM t JOIN u "
        "ON t.id = u.id) q)",
        "SELECT o.id, (SELECT max(q.a_1) FROM (SELECT t.id AS a, t2.id AS a FROM t, t AS t2 "
        "WHERE t2.x = o.x) q) AS m FROM t o",
        "SELECT count(*) AS n FROM (SELECT * FROM t JOIN u ON t.id = u.id) q",
    ])


def test_view_with_repeated_names():
    ctx = pqe.Context()
    ctx.sql("CREATE VIEW v AS SELECT 1 AS a, 2 AS a")
    duck = oracle.connect()
    duck.execute("CREATE VIEW v AS SELECT 1 AS a, 2 AS a")
    for sql in ("SELECT * FROM v", "SELECT a_1, a FROM v"):
        m = compare(ctx.sql(sql).to_arrow(), oracle.query(duck, sql), sql=sql)
        assert m is None, m


def test_table_with_repeated_names_is_refused_cleanly():
    ctx = pqe.Context()
    ctx.register_arrow("d", pa.table([[1], [2]], names=["a", "a"]))
    with pytest.raises(pqe.UnsupportedError, match="more than one column named 'a'"):
        ctx.sql("SELECT * FROM d").to_arrow()


# ---- 3. IS predicates bind looser than comparisons ---------------------------------------

P = pa.table({"x": pa.array([0, 1, 2, None], pa.int64()), "y": pa.array([1, 1, None, None], pa.int64()),
              "b": pa.array([True, False, None, True])})

IS_FORMS = [
    "x > 1 IS NOT TRUE", "x > 1 IS TRUE", "x = y IS NULL", "x = y IS NOT NULL", "NOT x IS NULL",
    "NOT b IS TRUE", "x < y IS DISTINCT FROM TRUE", "b IS NULL = FALSE",
    "x IS NULL AND y IS NULL", "x + 1 IS NULL", "x BETWEEN 0 AND 1 IS TRUE",
    "x IN (1, 2) IS FALSE", "x > 1 IS NULL", "b = TRUE IS NOT FALSE",
    "x IS NOT DISTINCT FROM y IS TRUE", "x NOT BETWEEN 0 AND 1 IS NULL", "x IS NULL IS NOT TRUE",
    "NOT x > 1 IS TRUE", "x <> y IS NOT DISTINCT FROM NULL", "x ISNULL", "x NOTNULL",
    "b IS NOT NULL = TRUE", "x = 1 IS TRUE = TRUE",
]


def test_is_predicate_precedence():
    _check({"t": P}, [f"SELECT x, y, b, {f} AS v FROM t" for f in IS_FORMS]
           + ["SELECT x FROM t WHERE x > 1 IS NOT TRUE"])


def test_is_distinct_from_takes_the_comparison():
    # `x IS DISTINCT FROM y = FALSE` is `x IS DISTINCT FROM (y = FALSE)` (PostgreSQL,
    # DuckDB): a BIGINT compared with a BOOLEAN, an error under pqe's typing (it was read as
    # `(x IS DISTINCT FROM y) = FALSE` and answered)
    ctx = pqe.Context()
    ctx.register_arrow("t", P)
    with pytest.raises(pqe.TypeMismatchError):
        ctx.sql("SELECT x IS DISTINCT FROM y = FALSE AS v FROM t").to_arrow()


# ---- 4. identifier case ------------------------------------------------------------------

N = pa.table({"Name": ["a", "b"], "Straße": [1, 2], "ÉTÉ": [3, 4], "id": [1, 2]})
M = pa.table({"id": [1, 2], "Name": ["x", "y"]})


def test_output_names_keep_the_data_spelling():
    _check({"n": N, "m": M}, [
        "SELECT * FROM n",
        "SELECT n.* FROM n ORDER BY 1",
        'SELECT name, NAME, "Name" FROM n',
        'SELECT straße, "Straße", STRAßE, "ÉTÉ" FROM n',
        "SELECT * FROM (SELECT Name FROM n) s",
        'SELECT s.name, s."Name" FROM (SELECT Name FROM n) s',
        "SELECT Name, count(*) AS c FROM n GROUP BY Name ORDER BY name",
        "SELECT * FROM n JOIN m ON n.id = m.id",
        "SELECT Name FROM n UNION SELECT Name FROM m ORDER BY name",
        "SELECT DISTINCT Name FROM n ORDER BY Name",
        "SELECT (SELECT max(m.Name) FROM m WHERE m.id = n.id) AS mx, Name FROM n",
        "SELECT Name, row_number() OVER (ORDER BY Name) AS r FROM n",
        "WITH w AS (SELECT Name, Straße FROM n) SELECT * FROM w WHERE straße > 1",
    ], exact_names=True)


def test_every_name_select_star_shows_is_referable():
    ctx = pqe.Context()
    ctx.register_arrow("n", N)
    shown = ctx.sql("SELECT * FROM n").to_arrow().column_names
    assert shown == ["Name", "Straße", "ÉTÉ", "id"]
    for name in shown:
        q = name.replace('"', '""')
        assert ctx.sql(f'SELECT "{q}" FROM n').to_arrow().column_names == [name]
        assert ctx.sql(f"SELECT {name} FROM n").to_arrow().column_names == [name]
    # a quoted name is exact: the message suggests the data's spelling, not the lower-case key
    with pytest.raises(pqe.UnknownColumnError, match="did you mean 'Name'"):
        ctx.sql('SELECT "name" FROM n')
    ctx.sql("CREATE TABLE c AS SELECT * FROM n")
    assert ctx.table("c").schema.names == ["Name", "Straße", "ÉTÉ", "id"]
