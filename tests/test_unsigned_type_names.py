"""DuckDB's unsigned integer types by name (UTINYINT, USMALLINT, UINTEGER, UBIGINT and their
UINT8..UINT64 spellings) in CAST, TRY_CAST and CREATE TABLE; they were refused ("type ubigint
is not supported") though Parquet columns of these types were read. Casts are checked against
DuckDB: out of range is an error (CAST) or NULL (TRY_CAST), never a wrapped value."""
import duckdb
import pyarrow as pa
import pytest

import pqe

T = pa.table({
    "i": pa.array([0, 1, -1, 255, 256, 65535, 2**31, 2**32 - 1, 2**63 - 1, None], pa.int64()),
    "d": pa.array([0.0, 1.5, -0.5, 255.4, 255.6, 1e10, -1e-9, 3.7, None, 2.5]),
    "s": ["0", "1", "-1", "255", "256", "65535", " 7 ", "1e3", None, "18446744073709551615"],
})
TYPES = ["UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT"]
CASES = [f"select try_cast({c} as {t}) as r from t" for t in TYPES for c in "ids"]
CASES += [f"select cast({c} as {t}) as r from t where try_cast({c} as {t}) is not null"
          for t in TYPES for c in "ids"]
CASES += [f"select typeof(cast(1 as {t})) as ty, cast(1 as {t}) + 1 as a" for t in TYPES]
CASES += [
    "select cast(18446744073709551615 as ubigint) as r",
    "select sum(cast(i as ubigint)) as r from t where i >= 0",
    "select cast(255 as uint8) > cast(-1 as tinyint) as r",
    "select max(try_cast(i as uinteger)) as m, count(try_cast(i as usmallint)) as c from t",
    "select cast(7 as uint32) % 3 as r",
    "select cast(5 as uint64) = 5.0 as r",
]
ERRORS = [f"select cast(-1 as {t})" for t in TYPES] + [
    "select cast('18446744073709551616' as ubigint)", "select cast(256 as utinyint)",
    "select cast(i as usmallint) from t", "select cast(cast(255 as utinyint) as tinyint)"]


@pytest.fixture(scope="module")
def engines():
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", T)
    con = duckdb.connect()
    con.register("t", T)
    return ctx, con


@pytest.mark.parametrize("sql", CASES)
def test_matches_duckdb(sql, engines):
    ctx, con = engines
    got = [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()]
    assert got == con.execute(sql).fetchall()


@pytest.mark.parametrize("sql", ERRORS)
def test_out_of_range_is_an_error(sql, engines):
    ctx, con = engines
    with pytest.raises(duckdb.Error):
        con.execute(sql).fetchall()
    with pytest.raises(pqe.DataValueError):
        ctx.sql(sql).to_arrow()


def test_create_table_with_unsigned_columns():
    ctx = pqe.Context()
    ctx.sql("create table u (a utinyint, b usmallint, c uinteger, d ubigint)")
    ctx.sql("insert into u values (255, 65535, 4294967295, 18446744073709551615)")
    assert ctx.table("u").to_arrow().schema.types == [pa.uint8(), pa.uint16(), pa.uint32(),
                                                       pa.uint64()]
    with pytest.raises(pqe.DataValueError):
        ctx.sql("insert into u values (256, 0, 0, 0)")
    assert ctx.sql("select count(*) as n from u").to_arrow().column("n").to_pylist() == [1]


def test_hugeint_stays_refused_by_name():
    with pytest.raises(pqe.UnsupportedError, match="type HUGEINT is not supported"):
        pqe.Context().sql("select cast(1 as hugeint)")
