"""SELECT DISTINCT ON (...): the first row of each distinct value of its expressions, in the
ORDER BY's order (PostgreSQL, DuckDB). It was refused. Bound as row_number() OVER (PARTITION
BY the expressions ORDER BY the query's keys) = 1, then the ORDER BY and LIMIT. DuckDB is the
oracle (with PostgreSQL's NULL order); ORDER BY keys need not lead with the DISTINCT ON
expressions (DuckDB's rule; PostgreSQL requires it)."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import pqe


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    n = 3_000
    t = pa.table({
        "a": pa.array(rng.integers(0, 50, n), mask=rng.random(n) < 0.05),
        "b": pa.array(rng.permutation(n).astype(np.int64), mask=rng.random(n) < 0.05),
        "c": pa.array([f"ü{i}" for i in rng.permutation(n)]),
        "f": pa.array(rng.choice([0.0, -0.0, 1.5, np.nan], n)),
    })
    con = duckdb.connect()
    con.register("t", t)
    con.execute("SET default_null_order = 'nulls_last_on_asc_first_on_desc'")
    return t, con


@pytest.fixture(scope="module", params=[1, 4])
def ctx(request, data):
    c = pqe.Context(partitions=request.param)
    c.register_arrow("t", pa.Table.from_batches(data[0].to_batches(max_chunksize=500)))
    return c


# every ORDER BY determines the row picked (b and c are unique, NULL b sorts after others)
@pytest.mark.parametrize("sql", [
    "SELECT DISTINCT ON (a) a, b, c FROM t ORDER BY a, b DESC, c",
    "SELECT DISTINCT ON (a) * FROM t ORDER BY a, c",
    "SELECT DISTINCT ON (a) c FROM t ORDER BY a, c DESC",
    "SELECT DISTINCT ON (1) a AS k, c FROM t ORDER BY 1, c NULLS FIRST",
    "SELECT DISTINCT ON (k) a AS k, c FROM t ORDER BY k DESC, c",
    "SELECT DISTINCT ON (a % 7) a, c FROM t ORDER BY a % 7, c",
    "SELECT DISTINCT ON (a, b IS NULL) a, c FROM t ORDER BY a, b IS NULL, c",
    "SELECT DISTINCT ON (a) a, c FROM t ORDER BY c LIMIT 5 OFFSET 2",
    "SELECT DISTINCT ON (a) a, count(*) OVER () AS n, c FROM t ORDER BY a, c",
    "SELECT DISTINCT ON (a) a, max(c) AS m FROM t GROUP BY a, b % 3 ORDER BY a, max(c) DESC",
    "SELECT DISTINCT ON (f) f, c FROM t ORDER BY f, c",
    "SELECT count(*) AS n FROM (SELECT DISTINCT ON (a) a FROM t)",
    "SELECT a, c FROM t WHERE c IN (SELECT DISTINCT ON (a) c FROM t ORDER BY a, c) ORDER BY c",
    "WITH x AS (SELECT DISTINCT ON (a) a, c FROM t ORDER BY a, c) "
    "SELECT * FROM x UNION ALL SELECT DISTINCT ON (a) a, c FROM t ORDER BY 2",
])
def test_distinct_on_matches_duckdb(ctx, data, sql):
    _, con = data
    got = [tuple(r.values()) for r in ctx.sql(sql).to_arrow().to_pylist()]
    want = con.sql(sql).fetchall()
    norm = lambda rows: [tuple("nan" if isinstance(v, float) and v != v else v for v in r)  # noqa: E731
                         for r in rows]
    assert norm(got) == norm(want)


def test_without_order_by_one_row_per_value(ctx, data):
    t, _ = data
    got = ctx.sql("SELECT DISTINCT ON (a) a, c FROM t").to_arrow()
    keys = got.column("a").to_pylist()
    assert len(keys) == len(set(keys)) == len(set(t.column("a").to_pylist()))
    pairs = set(zip(t.column("a").to_pylist(), t.column("c").to_pylist(), strict=True))
    assert all(p in pairs for p in zip(keys, got.column("c").to_pylist(), strict=True))


def test_the_plan_is_a_row_number_window(ctx):
    plan = "\n".join(str(x) for x in ctx.sql(
        "EXPLAIN SELECT DISTINCT ON (a) a, c FROM t ORDER BY a, c").to_arrow().column(0).to_pylist())
    assert "row_number" in plan


@pytest.mark.parametrize("sql, error, message", [
    ("SELECT DISTINCT ON (nope) a FROM t", pqe.BindError, "nope"),
    ("SELECT DISTINCT ON (a) unnest([a, b]) FROM t", pqe.UnsupportedError, "DISTINCT ON"),
    ("SELECT DISTINCT ON (5) a FROM t", pqe.BindError, "column: 5"),
])
def test_refused_with_a_clear_error(ctx, sql, error, message):
    with pytest.raises(error, match=message):
        ctx.sql(sql).to_arrow()
