"""A typed literal (`TYPE 'text'`) is one constant: what follows it applies to that constant, as
in PostgreSQL and DuckDB. sqlglot read `TIMESTAMP '2024-01-31 12:34'::DATE` as the text cast to
DATE, then to TIMESTAMP (a TIMESTAMP at midnight), and `INTEGER '7'::DOUBLE / 2` as 3."""
import duckdb
import pyarrow as pa
import pytest

import pqe

CASES = [
    "select integer '7'::double / 2 as r",
    "select real '0.1'::double = 0.1 as r",
    "select timestamp '2024-01-31 12:34'::date as r",
    "select timestamp '2024-01-31 12:34'::date - date '2024-01-01' as r",
    "select numeric '2.5'::integer as r",
    "select timestamp '2024-01-31 12:34:56.5'::varchar as r",
    "select timestamp '2024-01-31 12:34'::time as r",
    "select double precision '1.5'::integer as r",
    "select decimal(5,2) '1.234'::double as r",
    "select date '2024-01-31'::timestamp + interval 1 hour as r",
    "select -integer '5'::double / 2 as r",
    "select bigint '9'::varchar || 'x' as r",
    "select date '2024-03-31' - 1 as r",
    "select cast(date '2024-02-01' as varchar) as r",
    "select date '2024-02-29'::varchar::date as r",
]


@pytest.mark.parametrize("sql", CASES)
def test_typed_literal_then_cast_matches_duckdb(sql):
    got = pqe.Context().sql(sql).to_arrow()
    want = duckdb.sql(sql).fetchall()
    assert [tuple(r.values()) for r in got.to_pylist()] == want


def test_typed_literal_in_a_filter_over_a_column():
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", pa.table({"d": pa.array([1, 2, 3], pa.int64())}))
    got = ctx.sql("select d from t where d > integer '3'::double / 2 order by d").to_arrow()
    assert got.column(0).to_pylist() == [2, 3]  # 1.5, not the integer division's 1


def test_types_of_typed_literals_with_casts():
    t = pqe.Context().sql("select timestamp '2024-01-31 12:34'::date as a, "
                          "numeric '2.5'::integer as b, date '2024-01-31' as c").to_arrow()
    assert t.schema.types == [pa.date32(), pa.int32(), pa.date32()]
