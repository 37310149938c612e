"""LAG/LEAD with an offset or a default that varies by row (`lag(x, k, y)`), as DuckDB
answers them but for types: the value and the default meet in their common type (PostgreSQL's
rule; DuckDB casts the default to the value's type), a negative offset looking the other way,
a NULL offset giving NULL (not the default), offsets at BIGINT's limits past every partition.
Checked against DuckDB at 1 and 3 partitions."""
import duckdb
import pyarrow as pa
import pytest

import pqe

T = pa.table({
    "id": [1, 2, 3, 4, 5, 6, 7, 8],
    "g": ["a", "a", "a", "b", "b", "b", "b", None],
    "k": [1, 2, 1, 0, None, -1, 3, 2],
    "x": [10, 20, None, 40, 50, 60, 70, 80],
    "y": [1.5, 2.5, 3.5, 4.5, 5.5, None, 7.5, 8.5],
    "s": ["p", "q", "r", None, "t", "u", "v", "w"],
    "big": [2**62, -2**63, 5, 2**63 - 1, 0, 1, 2, 3],
})

CASES = [
    "select id, lag(x, 1, y) over (order by id) as r from t order by id",
    "select id, lag(x, 1, id) over (order by id) as a, lead(x, 2, x + 1) over (order by id) as b "
    "from t order by id",
    "select id, lag(x, k) over (order by id) as r from t order by id",
    "select id, lag(x, k, -1) over (order by id) as a, lead(x, k) over (order by id) as b "
    "from t order by id",
    "select id, lag(s, 1, id) over (order by id) as r from t order by id",
    "select id, lag(x, -k) over (order by id) as r from t order by id",
    "select id, lag(x, k, y) over (partition by g order by id) as a, "
    "lead(s, k, s || '!') over (partition by g order by id desc) as b from t order by id",
    "select id, lag(x, big) over (order by id) as a, lead(x, big, 0) over (order by id) as b "
    "from t order by id",
    "select id, lead(y, k * 2, x) over (partition by g order by id) as r from t order by id",
]


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.register("t", T)
    return con


# pqe gives LAG/LEAD's value and default their common type, as PostgreSQL does (DuckDB casts
# the default to the value's type: 1.5 became 2): DuckDB's query casts the value to it
IN_DUCKDB = {"lag(x, 1, y)": "lag(x::double, 1, y)", "lag(x, k, y)": "lag(x::double, k, y)"}


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("sql", [c for c in CASES if "lag(s, 1, id)" not in c])
def test_matches_duckdb(sql, partitions, duck):
    ctx = pqe.Context(partitions=partitions)
    ctx.register_arrow("t", T)
    got = [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()]
    theirs = sql
    for ours, duck_form in IN_DUCKDB.items():
        theirs = theirs.replace(ours, duck_form)
    assert got == duck.execute(theirs).fetchall()


def test_text_value_with_a_number_default_is_refused():
    ctx = pqe.Context()
    ctx.register_arrow("t", T)
    with pytest.raises(pqe.Error, match="LAG default of type BIGINT does not match its value "
                                        "of type VARCHAR"):
        ctx.sql("select lag(s, 1, id) over (order by id) from t").to_arrow()


def test_null_offset_is_null_not_the_default():
    ctx = pqe.Context()
    ctx.register_arrow("t", T)
    got = ctx.sql("select lag(x, k, -1) over (order by id) as r from t order by id").to_arrow()
    assert got.column("r").to_pylist()[4] is None  # id 5: k is NULL
    assert got.column("r").to_pylist()[0] == -1  # id 1: before the first row


def test_dataframe_builder_takes_per_row_arguments(duck):
    ctx = pqe.Context(partitions=3)
    ctx.register_arrow("t", T)
    df = ctx.table("t").select(
        "id", r=pqe.lag("x", pqe.col("k"), pqe.col("id") * 100).over(order_by="id"),
        s=pqe.lead("s", 1, pqe.col("s")).over(partition_by="g", order_by="id")).sort("id")
    want = duck.execute("select id, lag(x, k, id * 100) over (order by id) as r, "
                        "lead(s, 1, s) over (partition by g order by id) as s "
                        "from t order by id").fetchall()
    assert [tuple(r.values()) for r in df.to_arrow().to_pylist()] == want


@pytest.mark.parametrize("sql, error, match", [
    ("select lag(x, y) over (order by id) from t", pqe.TypeMismatchError,
     "LAG offset must be an integer, not DOUBLE"),
    ("select lag(x, k) ignore nulls over (order by id) from t", pqe.UnsupportedError,
     "IGNORE NULLS and an offset that varies by row"),
    ("select nth_value(x, k) over (order by id) from t", pqe.UnsupportedError,
     "must be a constant"),
])
def test_refused(sql, error, match):
    ctx = pqe.Context()
    ctx.register_arrow("t", T)
    with pytest.raises(error, match=match):
        ctx.sql(sql).to_arrow()
