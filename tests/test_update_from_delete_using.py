"""UPDATE ... FROM and DELETE ... USING, checked against DuckDB: the same statements run on
both, then the tables' contents compared (sorted), and the counts the statements report.

pqe's one deliberate difference: a target row that WHERE pairs with more than one FROM row
setting it to different values is an error (DataValueError, the table unchanged), where
DuckDB and PostgreSQL update it from one of them, which one unspecified. Pairs that agree
update it once."""

from decimal import Decimal

import duckdb
import pytest

import pqe

SETUP = [
    "CREATE TABLE t(k INTEGER, c INTEGER, d DECIMAL(5,2), s VARCHAR)",
    "CREATE TABLE s(k INTEGER, x INTEGER, name VARCHAR)",
    "CREATE TABLE u(k INTEGER, y INTEGER)",
    "INSERT INTO t VALUES (1, 1, 1.5, 'a'), (2, 2, 2.5, 'b'), (3, 3, 3.5, 'c'), "
    "(NULL, 4, 4.5, 'n'), (5, 5, 5.5, 'e')",
    "INSERT INTO s VALUES (1, 10, 'one'), (2, 20, 'two'), (NULL, 30, 'null'), (7, 70, 'seven')",
    "INSERT INTO u VALUES (1, 100), (3, 300), (2, 200)",
]

TABLES = ("t", "s", "u")


def _key(row):
    return tuple((v is None, str(v)) for v in row)


def _pqe_rows(ctx, table):
    out = ctx.sql(f"SELECT * FROM {table}").to_arrow()
    return sorted((tuple(r.values()) for r in out.to_pylist()), key=_key)


def _duck_rows(con, table):
    return sorted(con.execute(f"SELECT * FROM {table}").fetchall(), key=_key)


@pytest.fixture(params=[1, 3], ids=["p1", "p3"])
def pair(request):
    ctx = pqe.Context(partitions=request.param)
    con = duckdb.connect()
    for q in SETUP:
        ctx.sql(q)
        con.execute(q)
    yield ctx, con
    con.close()


def _same(pair, *statements, tables=TABLES):
    """Run each statement on both engines; the counts and then every table must agree."""
    ctx, con = pair
    for q in statements:
        got = ctx.sql(q).to_arrow().column("count").to_pylist()
        want = con.execute(q).fetchall()
        assert got == [want[0][0]], q
    for table in tables:
        assert _pqe_rows(ctx, table) == _duck_rows(con, table), table
    return ctx


# ---- UPDATE ... FROM ---------------------------------------------------------------------


def test_update_from_one_match_and_no_match(pair):
    _same(pair, "UPDATE t SET c = s.x FROM s WHERE t.k = s.k")


def test_update_from_nothing_matches(pair):
    _same(pair, "UPDATE t SET c = s.x FROM s WHERE t.k = s.k + 100",
          "UPDATE t SET c = 0 FROM s WHERE FALSE")


def test_update_from_null_keys_never_match(pair):
    ctx = _same(pair, "UPDATE t SET c = s.x FROM s WHERE t.k = s.k")
    # the NULL-keyed target row kept its value, and s's NULL-keyed row updated nothing
    assert ctx.sql("SELECT c FROM t WHERE k IS NULL").to_arrow().column(0).to_pylist() == [4]


def test_update_from_empty_from(pair):
    ctx, con = pair
    for q in ("CREATE TABLE e(k INTEGER, x INTEGER)",):
        ctx.sql(q)
        con.execute(q)
    _same(pair, "UPDATE t SET c = e.x FROM e WHERE t.k = e.k", "UPDATE t SET c = e.x FROM e")


def test_update_from_several_tables(pair):
    _same(pair, "UPDATE t SET c = t.c + s.x + u.y FROM s, u WHERE t.k = s.k AND s.k = u.k")


def test_update_from_explicit_joins(pair):
    _same(pair, "UPDATE t SET c = s.x + coalesce(u.y, 0) FROM s LEFT JOIN u ON s.k = u.k "
                "WHERE t.k = s.k",
          "UPDATE t SET c = u.y FROM s JOIN u ON s.k = u.k WHERE t.k = s.k")


def test_update_from_subquery_and_cte(pair):
    _same(pair, "UPDATE t SET c = q.z FROM (SELECT k, y * 2 AS z FROM u) AS q WHERE t.k = q.k",
          "WITH q AS (SELECT k, x + 1 AS z FROM s) UPDATE t SET d = q.z FROM q WHERE t.k = q.k")


def test_update_from_alias_on_target(pair):
    _same(pair, "UPDATE t AS a SET c = a.c * 100 + s.x FROM s WHERE a.k = s.k")
    ctx, _ = pair
    with pytest.raises(pqe.Error, match="'t'"):  # the alias hides the name, as in DuckDB
        ctx.sql("UPDATE t AS a SET c = 1 FROM s WHERE t.k = s.k")


def test_update_from_self_join_reads_the_old_rows(pair):
    _same(pair, "UPDATE t AS a SET c = b.c + 10 FROM t AS b WHERE a.k = b.k + 1")


def test_update_from_several_columns_and_casts(pair):
    # an INTEGER into a DECIMAL column, text into VARCHAR, an expression of both sides
    _same(pair, "UPDATE t SET d = s.x, s = s.name || t.s, c = s.x * t.c FROM s "
                "WHERE t.k = s.k")
    ctx, _ = pair
    assert ctx.sql("SELECT d FROM t WHERE k = 2").to_arrow().column(0).to_pylist() == \
        [Decimal("20.00")]


def test_update_from_overflow_fails_and_changes_nothing(pair):
    ctx, con = pair
    before = _pqe_rows(ctx, "t")
    q = "UPDATE t SET d = s.x * 100 FROM s WHERE t.k = s.k"  # 2000 does not fit DECIMAL(5,2)
    with pytest.raises(pqe.Error, match="DECIMAL"):
        ctx.sql(q)
    with pytest.raises(duckdb.Error):
        con.execute(q)
    assert _pqe_rows(ctx, "t") == before == _duck_rows(con, "t")


def test_update_from_extra_predicates(pair):
    _same(pair, "UPDATE t SET c = s.x FROM s WHERE t.k = s.k AND s.x > 15 AND t.s <> 'zz'",
          "UPDATE t SET c = -1 FROM u WHERE t.k = u.k AND t.c IN (SELECT x FROM s) "
          "OR t.k = 5 AND u.k = 1")


def test_update_from_set_reads_a_correlated_subquery(pair):
    _same(pair, "UPDATE t SET c = (SELECT max(y) FROM u WHERE u.k <= s.k) FROM s "
                "WHERE t.k = s.k")


def test_update_from_duplicate_match_is_an_error(pair):
    ctx, _ = pair
    ctx.sql("INSERT INTO s VALUES (1, 11, 'again')")  # k = 1 twice, x differs
    before = _pqe_rows(ctx, "t")
    with pytest.raises(pqe.DataValueError, match=r"UPDATE t \.\.\. FROM: .* matches 2 rows "
                                                 r"of FROM that set it to different values"):
        ctx.sql("UPDATE t SET c = s.x FROM s WHERE t.k = s.k")
    assert _pqe_rows(ctx, "t") == before
    # another column set beside it does not hide the difference
    with pytest.raises(pqe.DataValueError, match="different values"):
        ctx.sql("UPDATE t SET c = s.x, s = s.name FROM s WHERE t.k = s.k")
    # unique per target row again: fine
    ctx.sql("UPDATE t SET c = s.x FROM s WHERE t.k = s.k AND s.name <> 'again'")


@pytest.mark.parametrize("extra", [
    "INSERT INTO s VALUES (1, 10, 'again'), (2, 20, 'twice'), (2, 20, 'thrice')",
    "INSERT INTO s SELECT * FROM s",
])
def test_update_from_duplicate_matches_that_agree(pair, extra):
    """Pairs that set a row to the same values (a FROM side with repeated keys, a common
    `SET flag = ...` idiom) leave nothing to pick: answered as DuckDB answers, each target
    row counted once."""
    ctx, con = pair
    ctx.sql(extra)
    con.execute(extra)
    got = ctx.sql("UPDATE t SET c = s.x + 1000, d = NULL FROM s WHERE t.k = s.k") \
        .to_arrow().column("count").to_pylist()
    con.execute("UPDATE t SET c = s.x + 1000, d = NULL FROM s WHERE t.k = s.k")
    assert got == [2]  # rows 1 and 2 (DuckDB counts the pairs)
    assert _pqe_rows(ctx, "t") == _duck_rows(con, "t")


def test_update_from_duplicate_nan_values_agree():
    ctx = pqe.Context(partitions=2)
    ctx.sql("CREATE TABLE t(k INTEGER, f DOUBLE)")
    ctx.sql("CREATE TABLE s(k INTEGER, f DOUBLE)")
    ctx.sql("INSERT INTO t VALUES (1, 0), (2, 0)")
    ctx.sql("INSERT INTO s VALUES (1, 'NaN'::DOUBLE), (1, 'NaN'::DOUBLE), (2, NULL), (2, NULL)")
    ctx.sql("UPDATE t SET f = s.f FROM s WHERE t.k = s.k")
    rows = ctx.sql("SELECT k, isnan(f) AS n, f IS NULL AS z FROM t ORDER BY k").to_arrow()
    assert rows.to_pylist() == [{"k": 1, "n": True, "z": False}, {"k": 2, "n": None, "z": True}]


def test_update_from_ambiguous_name_is_an_error(pair):
    ctx, _ = pair
    with pytest.raises(pqe.AmbiguousColumnError, match=r"t\.k or s\.k"):
        ctx.sql("UPDATE t SET c = 1 FROM s WHERE k = 1")


def test_update_from_refusals(pair):
    ctx, _ = pair
    before = _pqe_rows(ctx, "t")
    for q, msg in [
        ("UPDATE t SET c = 1 FROM s WHERE t.k = s.k RETURNING *", "RETURNING"),
        ("UPDATE t SET c = 1 FROM s FULL JOIN u ON s.k = u.k", "FULL JOIN"),
        ("UPDATE t SET c = 1 FROM s RIGHT JOIN u ON s.k = u.k", "RIGHT JOIN"),
        ("UPDATE t SET c = 1 FROM s JOIN u USING (k)", "USING"),
        ("UPDATE t SET c = 1 FROM s LEFT JOIN u ON t.k = u.k", "cannot refer to the target"),
        ("UPDATE t SET c = 1 FROM t", "more than once"),
    ]:
        with pytest.raises(pqe.Error, match=msg):
            ctx.sql(q)
    assert _pqe_rows(ctx, "t") == before


# ---- DELETE ... USING --------------------------------------------------------------------


def test_delete_using(pair):
    _same(pair, "DELETE FROM t USING s WHERE t.k = s.k")


def test_delete_using_duplicate_matches_delete_once(pair):
    _same(pair, "DELETE FROM t USING (SELECT 1 AS k UNION ALL SELECT 1 UNION ALL SELECT 2) "
                "AS q WHERE t.k = q.k")


def test_delete_using_several_tables_alias_and_predicates(pair):
    _same(pair, "DELETE FROM t AS a USING s, u WHERE a.k = s.k AND s.k = u.k AND u.y > 150")


def test_delete_using_cte_no_where_and_no_match(pair):
    _same(pair, "DELETE FROM t USING s WHERE t.k = s.k + 100",
          "WITH q AS (SELECT * FROM u WHERE y > 250) DELETE FROM t USING q WHERE t.k = q.k",
          "DELETE FROM t USING u")


def test_delete_using_empty_using_deletes_nothing(pair):
    ctx, con = pair
    for q in ("CREATE TABLE e(k INTEGER)",):
        ctx.sql(q)
        con.execute(q)
    _same(pair, "DELETE FROM t USING e")


# ---- the machinery writes share -----------------------------------------------------------


def test_read_only_context_refuses_both():
    ctx = pqe.Context(read_only=True)
    for q in ("UPDATE t SET c = s.x FROM s WHERE t.k = s.k",
              "DELETE FROM t USING s WHERE t.k = s.k"):
        with pytest.raises(pqe.Error, match="read-only"):
            ctx.sql(q)


def test_dbapi_rowcount_matches_duckdb():
    con, duck = pqe.connect(), duckdb.connect()
    cur = con.cursor()
    for q in SETUP:
        cur.execute(q)
        duck.execute(q)
    for q in ("UPDATE t SET c = s.x FROM s WHERE t.k = s.k",
              "UPDATE t AS a SET c = u.y FROM u WHERE a.k = u.k AND u.y > 150",
              "DELETE FROM t USING u WHERE t.k = u.k AND u.y < 250",
              "DELETE FROM t USING s WHERE t.k = s.k"):
        cur.execute(q)
        assert cur.rowcount == duck.execute(q).fetchall()[0][0], q
    cur.execute("SELECT * FROM t")
    assert sorted(cur.fetchall(), key=_key) == _duck_rows(duck, "t")


def test_alias_on_target_of_plain_update_and_delete(pair):
    _same(pair, "UPDATE t AS a SET c = a.c + 1 WHERE a.k > 1",
          "DELETE FROM t AS a WHERE a.k = 3")


# ---- INSERT ... BY NAME ------------------------------------------------------------------


def test_insert_by_name(pair):
    ctx, con = pair
    for q in ('CREATE TABLE w(k INTEGER, c INTEGER, d DECIMAL(5,2), "Mixed" INTEGER)',):
        ctx.sql(q)
        con.execute(q)
    w = {"tables": ("w",)}
    _same(pair, "INSERT INTO w BY NAME SELECT 1 AS d, 2 AS K",
          "INSERT INTO w BY NAME SELECT 3 AS mixed",
          'INSERT INTO w BY NAME SELECT 3 AS "Mixed", 4 AS c UNION ALL SELECT 5, 6',
          "INSERT INTO w BY NAME SELECT k, y AS c FROM u",
          "INSERT INTO w BY NAME SELECT * FROM w", **w)
    before = _pqe_rows(ctx, "w")
    for q, msg in [("INSERT INTO w BY NAME SELECT 1 AS zz", "no column 'zz'"),
                   ("INSERT INTO w BY NAME SELECT 1 AS k, 2 AS k", "twice"),
                   ("INSERT INTO w BY NAME VALUES (1)", "takes a query"),
                   ("INSERT INTO w BY NAME SELECT 1000 AS d", "DECIMAL")]:
        with pytest.raises(pqe.Error, match=msg):
            ctx.sql(q)
        with pytest.raises(duckdb.Error):
            con.execute(q)
    assert _pqe_rows(ctx, "w") == before == _duck_rows(con, "w")


def test_values_and_joins_in_from_and_using(pair):
    _same(pair, "UPDATE t SET c = v.x FROM (VALUES (1, 11), (3, 33)) AS v(k, x) "
                "WHERE t.k = v.k",
          "UPDATE t SET c = s.x FROM s CROSS JOIN u WHERE t.k = s.k AND u.k = 1",
          "DELETE FROM t USING s JOIN u ON s.k = u.k WHERE t.k = s.k")


def test_update_from_keeps_constraints(pair):
    ctx, _ = pair
    ctx.sql("CREATE TABLE pk(id INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    ctx.sql("INSERT INTO pk VALUES (1, 1), (2, 2), (3, 3)")
    before = _pqe_rows(ctx, "pk")
    with pytest.raises(pqe.ConstraintError, match="duplicate key"):
        ctx.sql("UPDATE pk SET id = s.k FROM s WHERE pk.id = s.k + 1")  # 2 -> 1 beside 1
    with pytest.raises(pqe.ConstraintError, match="NOT NULL"):
        ctx.sql("UPDATE pk SET v = NULL FROM s WHERE pk.id = s.k")
    assert _pqe_rows(ctx, "pk") == before
    ctx.sql("UPDATE pk SET id = s.x FROM s WHERE pk.id = s.k")
    assert sorted(_pqe_rows(ctx, "pk")) == [(3, 3), (10, 1), (20, 2)]
