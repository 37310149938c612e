"""count / sum / avg(DISTINCT x) OVER (...): each value of a frame counted once, for frames
that start or end with their window partition (the whole partition, running frames, frames
to the end), checked against DuckDB at 1 and 3 partitions; 0.0 and -0.0 are one value, every
NaN is one, NULLs are not counted. Frames that slide at both ends are refused by name."""
import decimal
import math

import duckdb
import pyarrow as pa
import pytest

import pqe

T = pa.table({
    "id": list(range(12)),
    "g": ["x", "y", "x", "y", "x", "x", "y", "z", None, "x", "y", "z"],
    "v": [1, 2, 1, None, 3, 1, 2, 5, 7, 3, 2, None],
    "f": [0.0, -0.0, math.nan, 1.5, math.nan, -0.0, 0.0, None, 2.0, 1.5, math.nan, 3.0],
    "s": ["a", "b", "a", None, "é", "a", "b", "c", "d", "é", "b", ""],
    "d": [decimal.Decimal(x) for x in
          ["1.50", "2.00", "1.50", "9.99", "1.50", "0", "2.00", "-1", "3", "4", "5", "6"]],
    "big": [2**62, 2**62, 2**62 - 1, -2**63, None, 2**62, 1, 1, 0, -1, 2**62 - 1, 5],
})
T = T.append_column("ds", T.column("s").dictionary_encode())

OVERS = [
    "partition by g",
    "",
    "partition by g order by id",
    "order by id",
    "partition by g order by id rows between unbounded preceding and 1 preceding",
    "partition by g order by id rows between current row and unbounded following",
    "order by v range between current row and unbounded following",
    "partition by g order by v nulls first",
    "order by id groups between unbounded preceding and current row",
]
CASES = [f"select id, {fn}(distinct {arg}) over ({over}) as r from t order by id"
         for fn, args in [("count", ["v", "f", "d", "s", "ds"]), ("sum", ["v", "f", "d"]),
                          ("avg", ["v", "f", "d"])]
         for arg in args for over in OVERS]
CASES += [
    "select id, count(distinct v) filter (where id > 3) over (partition by g) as r from t order by id",
    "select id, min(distinct v) over (partition by g order by id) as r, "
    "max(distinct s) over () as m from t order by id",
    "select id, count(distinct v) over (partition by g) as a, count(v) over (partition by g) as b "
    "from t order by id",
    "select id, sum(distinct big) over (partition by g) as r from t order by id",
    "select g, count(distinct count(*)) over () as r from t group by g order by g nulls last",
]


def _value(x):
    if isinstance(x, decimal.Decimal) and x == x.to_integral_value():
        return int(x)  # (exact: sums past 2^53)
    if isinstance(x, (float, decimal.Decimal)):
        return "nan" if math.isnan(x) else round(float(x), 9)
    return x


def _norm(rows):
    return [tuple(_value(x) for x in r) for r in rows]


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.register("t", T)
    return con


@pytest.fixture(scope="module", params=[1, 3])
def ctx(request):
    c = pqe.Context(partitions=request.param)
    c.register_arrow("t", T)
    return c


@pytest.mark.parametrize("sql", CASES)
def test_matches_duckdb(sql, ctx, duck):
    got = [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()]
    assert _norm(got) == _norm(duck.execute(sql).fetchall())


def test_zero_and_negative_zero_are_one_value_and_nan_is_one(ctx):
    got = ctx.sql("select count(distinct f) over () as r from t limit 1").to_arrow()
    assert got.column("r").to_pylist() == [5]  # 0.0, NaN, 1.5, 2.0, 3.0


def test_sliding_frame_is_refused(ctx):
    with pytest.raises(pqe.UnsupportedError, match=r"COUNT\(DISTINCT \.\.\.\) over a frame"):
        ctx.sql("select count(distinct v) over (order by id rows between 1 preceding and "
                "1 following) from t").to_arrow()


def test_exclude_is_refused(ctx):
    with pytest.raises(pqe.UnsupportedError, match="neither starts nor ends"):
        ctx.sql("select count(distinct v) over (order by id rows between unbounded preceding "
                "and current row exclude current row) from t").to_arrow()


def test_other_distinct_aggregates_are_refused(ctx):
    with pytest.raises(pqe.UnsupportedError, match=r"STRING_AGG\(DISTINCT \.\.\.\) as a window"):
        ctx.sql("select string_agg(distinct s, ',') over () from t")


def test_explain_shows_distinct(ctx):
    text = ctx.sql("explain select count(distinct v) over (partition by g) from t") \
        .to_arrow().column(0).to_pylist()
    assert any("DISTINCT" in line for line in text)
