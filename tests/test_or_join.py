"""Joins on an OR of equalities (`a.id = b.k1 OR a.id = b.k2`): one hash join per OR term
gives the pairs (kernels.join._or_blocks), each pair once, and the whole condition is
evaluated on them. Checked against DuckDB where that could go silently wrong: a pair both
terms give (it must come once), NULL keys, -0.0 / NaN float keys, text keys, duplicate keys,
a term of two equalities and one column in two of them, a residual beside the OR, every join
kind, an empty side, on 1 and 3 partitions and sync."""

import numpy as np
import pyarrow as pa
import pytest

import pqe
from pqe.testing import oracle
from pqe.testing.compare import compare

A = pa.table({
    "id": pa.array([1, 2, 2, 3, None, 5, 6, 7], pa.int64()),
    "s": ["x", "y", "y", None, "x", "é", "", "z"],
    "f": [0.0, -0.0, float("nan"), 1.5, None, 2.0, float("nan"), 3.0],
    "v": pa.array([10, 20, 30, 40, 50, 60, 70, 80], pa.int64()),
})
B = pa.table({
    "k1": pa.array([1, 2, None, 5, 9, 2, 6], pa.int64()),
    "k2": pa.array([1, 3, 2, None, 7, 2, 9], pa.int64()),
    "t": ["x", "x", "y", None, "é", "z", ""],
    "g": [-0.0, 0.0, float("nan"), 1.5, None, float("nan"), 2.0],
    "w": pa.array([1, 2, 3, 4, 5, 6, 7], pa.int64()),
})
EMPTY = B.slice(0, 0)

CONDITIONS = [
    "a.id = b.k1 OR a.id = b.k2",
    "b.k1 = a.id OR b.k2 = a.id OR a.s = b.t",
    "(a.id = b.k1 AND a.v > 15) OR (a.id = b.k2 AND b.w < 4)",
    "(a.id = b.k1 AND a.id = b.k2) OR a.s = b.t",
    "a.f = b.g OR a.id = b.k1",
    "(a.id = b.k1 OR a.id = b.k2) AND a.v <> b.w * 10",
    "a.s = b.t OR (a.f = b.g AND b.w > 1)",
    # terms on one side's columns only: every row of the other side pairs with their rows
    "a.id = b.k1 OR b.w = 3",
    "(a.id = b.k1 AND a.v > 15) OR a.s IS NULL",
    "a.id = b.k2 OR a.f > 1.0 OR b.t = 'x'",
    "a.id = b.k1 OR (b.w > 5 AND b.g IS NOT NULL) OR a.v = 80",
]
KINDS = ["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"]


@pytest.fixture(scope="module")
def duck():
    pytest.importorskip("duckdb")
    return {name: oracle.connect({"a": A, "b": t}) for name, t in (("full", B), ("empty", EMPTY))}


@pytest.mark.parametrize("setup", [{"partitions": 1}, {"partitions": 3},
                                   {"partitions": 3, "scheduler": "sync"}],
                         ids=["1p", "3p", "sync"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("cond", CONDITIONS)
def test_matches_duckdb(duck, cond, kind, setup):
    sql = f"SELECT a.v, b.w FROM a {kind} b ON {cond}"
    for data, right in (("full", B), ("empty", EMPTY)):
        ctx = pqe.Context(**setup)
        ctx.register_arrow("a", A)
        ctx.register_arrow("b", right)
        m = compare(ctx.sql(sql).to_arrow(), oracle.query(duck[data], sql), sql=sql)
        assert m is None, f"{sql} ({data}): {m}"


@pytest.mark.parametrize("cond", CONDITIONS)
@pytest.mark.parametrize("form", ["EXISTS", "NOT EXISTS"])
def test_semi_and_anti_match_duckdb(duck, cond, form):
    sql = f"SELECT a.v FROM a WHERE {form} (SELECT 1 FROM b WHERE {cond})"
    ctx = pqe.Context(partitions=3)
    ctx.register_arrow("a", A)
    ctx.register_arrow("b", B)
    m = compare(ctx.sql(sql).to_arrow(), oracle.query(duck["full"], sql), sql=sql)
    assert m is None, f"{sql}: {m}"


def test_or_keys_in_explain_only_where_every_term_has_one():
    ctx = pqe.Context()
    ctx.register_arrow("a", A)
    ctx.register_arrow("b", B)
    text = str(ctx.sql("SELECT a.v FROM a JOIN b ON a.id = b.k1 OR a.id = b.k2").explain())
    assert "NestedLoopJoin[broadcast, or-keys]" in text
    assert "keys=[(a.id = b.k1) OR (a.id = b.k2)]" in text
    text = str(ctx.sql("SELECT a.v FROM a JOIN b ON a.id = b.k1 OR b.w = 3").explain())
    assert "keys=[(a.id = b.k1) OR (b.w = 3)]" in text
    # a term over both sides without an equality, a one-side term that may raise (it would
    # be computed for rows whose other terms hold), only one-side terms: every pair
    for cond in ["a.id = b.k1 OR a.v > b.w", "a.id = b.k1 OR 100 / b.w > 30",
                 "a.v > 50 OR b.w = 3"]:
        text = str(ctx.sql(f"SELECT a.v FROM a JOIN b ON {cond}").explain())
        assert "or-keys" not in text, cond


def test_a_pair_both_terms_give_comes_once():
    ctx = pqe.Context()
    ctx.register_arrow("a", pa.table({"id": [1, 1]}))
    ctx.register_arrow("b", pa.table({"k1": [1], "k2": [1]}))
    assert ctx.sql("SELECT count(*) AS n FROM a JOIN b ON a.id = b.k1 OR a.id = b.k2") \
        .to_pylist() == [{"n": 2}]


def test_many_rows_against_duckdb():
    pytest.importorskip("duckdb")
    rng = np.random.default_rng(11)
    a = pa.table({"id": rng.integers(0, 50_000, 100_000), "v": rng.integers(0, 100, 100_000)})
    b = pa.table({"k1": rng.integers(0, 50_000, 40_000), "k2": rng.integers(0, 50_000, 40_000),
                  "w": rng.integers(0, 100, 40_000)})
    con = oracle.connect({"a": a, "b": b})
    ctx = pqe.Context(partitions=3)
    ctx.register_arrow("a", a)
    ctx.register_arrow("b", b)
    for sql in ["SELECT count(*), sum(a.v), sum(b.w) FROM a JOIN b ON a.id = b.k1 OR a.id = b.k2",
                "SELECT count(*) FROM a LEFT JOIN b ON (a.id = b.k1 AND a.v > 50) OR "
                "(a.id = b.k2 AND b.w < 10)"]:
        m = compare(ctx.sql(sql).to_arrow(), oracle.query(con, sql), sql=sql)
        assert m is None, f"{sql}: {m}"


def test_or_join_on_a_local_cluster(duck):
    """The OR's keys travel with the join step to worker processes."""
    pytest.importorskip("distributed")
    with pqe.Context(workers=2, memory_limit="1GiB") as c:
        c.register_arrow("a", A)
        c.register_arrow("b", B)
        sql = f"SELECT a.v, b.w FROM a LEFT JOIN b ON {CONDITIONS[2]}"
        assert "or-keys" in str(c.sql(sql).explain())
        m = compare(c.sql(sql).to_arrow(), oracle.query(duck["full"], sql), sql=sql)
        assert m is None, f"{sql}: {m}"
