"""A correlated subquery runs once per distinct outer value, and -0.0 and 0.0 are one value to
SQL's DISTINCT: the subquery saw whichever came first for both (`(SELECT CAST(o.x AS VARCHAR))`
gave '0.0' for -0.0). Each outer row gets its own value's answer, at 1 and 3 partitions and
whichever of the two comes first."""
import math

import pyarrow as pa
import pytest

import pqe

QUERIES = {
    "scalar": "SELECT o.k, (SELECT CAST(o.x AS VARCHAR)) AS v FROM f o",
    "scalar-from-limit": "SELECT o.k, (SELECT CAST(o.x AS VARCHAR) FROM i ORDER BY a LIMIT 1) AS v "
                         "FROM f o",
    "lateral": "SELECT o.k, l.v FROM f o, LATERAL (SELECT atan2(o.x, -1.0) AS v) l",
    "left-lateral": "SELECT o.k, l.v FROM f o LEFT JOIN LATERAL (SELECT CAST(o.x AS VARCHAR) AS v "
                    "FROM i WHERE a = 1) l ON true",
    "cross-lateral-limit": "SELECT o.k, l.v FROM f o CROSS JOIN LATERAL (SELECT CAST(o.x AS "
                           "VARCHAR) AS v FROM i LIMIT 1) l",
    "in": "SELECT o.k, '-0.0' IN (SELECT CAST(o.x AS VARCHAR) FROM i) AS v FROM f o",
}


def _expected(name, x):
    if x is None:
        return None if name != "in" else None
    text = "-0.0" if math.copysign(1.0, x) < 0 and x == 0 else repr(float(x))
    if name == "lateral":
        return math.atan2(x, -1.0)
    if name == "in":
        return text == "-0.0"
    return text


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("first", ["-0.0", "0.0"])
@pytest.mark.parametrize("dtype", [pa.float64(), pa.float32()], ids=["double", "real"])
@pytest.mark.parametrize("name", list(QUERIES))
def test_each_zero_gets_its_own_answer(name, partitions, first, dtype):
    xs = [-0.0, 0.0, 2.5, None, -0.0, 0.0] if first == "-0.0" else [0.0, -0.0, 2.5, None, 0.0, -0.0]
    ctx = pqe.Context(partitions=partitions)
    ctx.register_arrow("f", pa.table({"k": list(range(len(xs))), "x": pa.array(xs, dtype)}))
    ctx.register_arrow("i", pa.table({"a": pa.array([1, 2], pa.int64())}))
    got = {r["k"]: r["v"] for r in ctx.sql(QUERIES[name]).to_arrow().to_pylist()}
    want = {k: _expected(name, x) for k, x in enumerate(xs)}
    if name == "lateral":
        assert {k: (v if v is None else math.copysign(1.0, v)) for k, v in got.items()} == \
            {k: (v if v is None else math.copysign(1.0, v)) for k, v in want.items()}
    else:
        assert got == want
