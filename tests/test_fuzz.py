"""Differential fuzzing in CI: a fixed-seed run of generated queries against DuckDB.

Every case is deterministic (seeded query and data), so a failure here reproduces with
``python -m benchmarks.fuzz --seed 20240 --case <i>``, which also shrinks it. The long run
(`python -m benchmarks.fuzz --queries 10000`) explores many more seeds.
"""

from __future__ import annotations

import random

import pytest

from pqe.testing.fuzz import Fuzzer
from pqe.testing.fuzz_data import database_sql, random_database
from pqe.testing.compare import order_spec
from pqe.testing.fuzz_engine import check
from pqe.testing.fuzz_gen import Generator
from pqe.testing.fuzz_oracles import norec_queries, tlp_queries

SEED = 20240
QUERIES = 400


def test_generation_is_deterministic():
    def sqls(seed):
        fz = Fuzzer(seed=seed, reduce=False)
        return [(c.base, c.pred) for c in (fz.case(i) for i in range(0, 60, 3))]

    assert sqls(7) == sqls(7)
    assert sqls(7) != sqls(8)
    db1 = random_database(random.Random("x"))
    db2 = random_database(random.Random("x"))
    assert database_sql(db1) == database_sql(db2)


def test_comparison():
    """The fuzzer compares with pqe.testing.compare: a value difference is 'diff', a type
    difference alone is 'type'."""
    import decimal

    import pyarrow as pa

    D = decimal.Decimal
    t = lambda *cols: pa.table({f"o{i}": c for i, c in enumerate(cols)})  # noqa: E731
    assert check(t(pa.array([1]), pa.array([2.0])), t(pa.array([1], pa.int32()),
                                                      pa.array([2.0000000001]))) is None
    assert check(t(pa.array([1, 2])), t(pa.array([2, 1]))) is None
    assert check(t(pa.array([1, 2])), t(pa.array([2, 1])), order_by=[0])[0] == "diff"
    assert check(t(pa.array([None], pa.int64())), t(pa.array([0])))[0] == "diff"
    assert check(t(pa.array([1])), t(pa.array([D("1.00")])))[0] == "type"
    assert check(t(pa.array(["1"])), t(pa.array([1])))[0] == "diff"
    assert check(t(pa.array([1, 1])), t(pa.array([1])))[0] == "diff"
    # DuckDB may drop scale when unifying with DECIMAL(38, s); pqe must not
    assert check(t(pa.array([D("-0.1234")], pa.decimal128(10, 4))),
                 t(pa.array([D("-0.12")], pa.decimal128(38, 2)))) is None
    assert check(t(pa.array([D("-0.12")], pa.decimal128(38, 2))),
                 t(pa.array([D("-0.1234")], pa.decimal128(10, 4)))) is not None


def test_oracle_queries():
    parts = tlp_queries("SELECT a1.c0 AS g0, MIN(a1.c1) AS x0, COUNT(*) AS x1 FROM t0 AS a1 "
                        "GROUP BY a1.c0", "a1.c1 > 1", "aggregate")
    assert "SUM(u.x1)" in parts[1][1] and "MIN(u.x0)" in parts[1][1]
    assert parts[1][1].count("UNION ALL") == 2
    count, total = norec_queries("SELECT * FROM t0 AS a1", "a1.c0 = 1")
    assert count[1].startswith("SELECT COUNT(*)") and "CASE WHEN" in total[1]
    assert order_spec("SELECT a AS o0, b AS o1 FROM t ORDER BY 2, o0 LIMIT 3").order_by == [1, 0]
    assert order_spec("SELECT a AS o0, b AS o1 FROM t ORDER BY 2 LIMIT 3").order_by == [1]


def test_generated_queries_are_mostly_valid():
    """The generator keeps types consistent: DuckDB accepts nearly every query."""
    import duckdb

    rng = random.Random(3)
    db = random_database(rng)
    con = duckdb.connect()
    for name, t in db.items():
        con.register(name, t)
    bad = 0
    for i in range(100):
        sql = Generator(random.Random(i), db).query().sql
        try:
            con.execute(sql).fetchall()
        except duckdb.Error:
            bad += 1
    assert bad <= 10


@pytest.fixture(scope="module")
def fuzz_report():
    fz = Fuzzer(seed=SEED, reduce=False, timeout=20.0)
    return fz.run(QUERIES)


def _describe_failures(rep, limit: int = 8) -> str:
    fz = Fuzzer(seed=SEED, reduce=False)
    out = []
    for i, res in rep.failures[:limit]:
        db = fz.database(i // fz.queries_per_db)
        out.append(f"--- case {i} ({res.case.oracle}); replay: python -m benchmarks.fuzz "
                   f"--seed {SEED} --case {i}")
        out.extend(f"  {f.oracle}{f.partitions} {f.role}: {f.error_class} {f.detail}"[:400]
                   for f in res.failures)
        out.extend(f"  {role}: {sql}"[:1500] for role, sql in res.queries)
        out.append("  data:\n    " + database_sql(db).replace("\n", "\n    "))
    return "\n".join(out)


def test_fuzz_fixed_seed(fuzz_report):
    rep = fuzz_report
    assert rep.cases == QUERIES
    tested = rep.cases - sum(rep.discarded.values())
    assert tested >= QUERIES * 0.8, rep.summary()
    assert sum(rep.checks.values()) > QUERIES
    problems = rep.total_mismatches + rep.total_errors
    assert problems == 0, rep.summary() + "\n" + _describe_failures(rep)
