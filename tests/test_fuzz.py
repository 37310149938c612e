"""Differential fuzzing in CI: a fixed-seed run of generated queries against DuckDB.

Every case is deterministic (seeded query and data), so a failure here reproduces with
``python -m benchmarks.fuzz --seed 20240 --generators <g> --case <i>``, which also shrinks
it. Each generator runs a few hundred cases; a failure fails the test unless a known finding
(tests/fuzz_known_findings.json) explains it, and each generator's refusal rate
(UnsupportedError) must stay within tests/fuzz_baseline.json. The long run
(`python -m benchmarks.fuzz --queries 20000`) explores many more seeds.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pqe.testing.compare import order_spec
from pqe.testing.fuzz import Fuzzer
from pqe.testing.fuzz_data import database_sql, random_database
from pqe.testing.fuzz_engine import check
from pqe.testing.fuzz_gen import Generator
from pqe.testing.fuzz_known import load_baseline, load_known
from pqe.testing.fuzz_oracles import norec_queries, tlp_queries

SEED = 20240


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

    from pqe.testing import oracle

    rng = random.Random(3)
    db = random_database(rng)
    con = oracle.connect(db)
    bad = 0
    for i in range(100):
        sql = Generator(random.Random(i), db).query().sql
        try:
            con.execute(sql).fetchall()
        except duckdb.Error:
            bad += 1
    assert bad <= 10


# ---- the CI run: a few hundred fixed-seed cases per generator -----------------------------

HERE = Path(__file__).parent
KNOWN = HERE / "fuzz_known_findings.json"
BASELINE = HERE / "fuzz_baseline.json"
# generator -> cases in CI; features steered around (each a known finding, see KNOWN)
CI_CASES = {"select": 250, "values": 150, "dml": 80, "params": 120}
CI_DISABLED: dict[str, tuple[str, ...]] = {}


@pytest.fixture(scope="module", params=list(CI_CASES))
def fuzz_run(request):
    g = request.param
    fz = Fuzzer(seed=SEED, generators=[g], reduce=False, timeout=20.0,
                disabled=CI_DISABLED.get(g, ()), known=load_known(KNOWN))
    return g, fz, fz.run(CI_CASES[g])


def _describe(fz, failures, limit: int = 8) -> str:
    out = []
    for i, res in failures[:limit]:
        case = res.case
        out.append(f"--- {case.generator} case {i} ({case.oracle}); replay: python -m "
                   f"benchmarks.fuzz --seed {SEED} --generators {case.generator} "
                   f"{'--disable ' + ','.join(fz.disabled) + ' ' if fz.disabled else ''}"
                   f"--case {i}")
        out.extend(f"  {f.oracle}{f.partitions} {f.role}: {f.error_class} {f.detail}"[:400]
                   for f in res.failures)
        out.extend(f"  {role}: {sql}"[:1500] for role, sql in res.queries)
        db = fz.database_of(i)
        if db and case.generator in ("select", "values"):
            out.append("  data:\n    " + database_sql(db).replace("\n", "\n    "))
    return "\n".join(out)


def test_fuzz_fixed_seed(fuzz_run):
    """No failure that tests/fuzz_known_findings.json does not explain."""
    g, fz, rep = fuzz_run
    st = rep.generators[g]
    assert st.cases == CI_CASES[g]
    assert st.tested >= st.cases * 0.8, rep.summary()
    assert sum(rep.checks.values()) > st.cases
    unexplained = [(i, res) for i, res in rep.failures
                   if fz.known_match(res.case, res.primary()) is None]
    assert not unexplained, (
        f"{len(unexplained)} {g} cases fail in a way no known finding explains (fix pqe, or "
        f"add the finding with its reason to {KNOWN.name}):\n" + _describe(fz, unexplained))


def test_refusal_rate_within_baseline(fuzz_run):
    """A change that makes pqe refuse (UnsupportedError) more of the generated cases fails."""
    g, fz, rep = fuzz_run
    st = rep.generators[g]
    bound = load_baseline(BASELINE)["max_refusal_rate"][g]
    top = rep.unsupported_by_gen.get(g, {})
    detail = "; ".join(f"{n} x {m}" for m, n in sorted(top.items(), key=lambda x: -x[1])[:5])
    assert st.refusal_rate <= bound, (
        f"{g}: {st.refused} of {st.tested} cases refused ({st.refusal_rate:.1%}), baseline "
        f"allows {bound:.1%} ({BASELINE.name}); refusals: {detail}")


def test_checks_per_case_within_baseline(fuzz_run):
    """A change that weakens an oracle (its reference query fails, a DML script ends early)
    makes fewer comparisons per case: that fails too, instead of passing with less checked."""
    g, fz, rep = fuzz_run
    st = rep.generators[g]
    per_case = sum(rep.checks.values()) / max(st.tested, 1)
    bound = load_baseline(BASELINE)["min_checks_per_case"][g]
    assert per_case >= bound, (
        f"{g}: {per_case:.2f} checks per tested case ({dict(rep.checks)} over {st.tested}), "
        f"baseline wants at least {bound} ({BASELINE.name})")


def test_known_findings_are_documented():
    known = load_known(KNOWN)
    assert len({k.id for k in known}) == len(known)
    for k in known:
        assert k.reason and (k.match or k.cases or k.oracle != "*"), k.id


def test_params_bind_in_text_order():
    """Regression test for K1: `?` placeholders bind in the order they appear in the text,
    whatever their depth in the parse tree (they were bound breadth-first)."""
    import pqe

    cur = pqe.connect().cursor()
    cur.execute("SELECT lower(?) AS a, ? AS b", ("X", "y"))
    assert cur.fetchall() == [("x", "y")]
    cur.execute("SELECT CASE WHEN ? THEN upper(?) ELSE ? END, ? + (SELECT ? * 2)",
                (True, "a", "b", 1, 20))
    assert cur.fetchall() == [("A", 41)]
    cur.execute("SELECT x FROM (VALUES (1), (2), (3)) AS v(x) WHERE x > abs(?) AND x < ? "
                "ORDER BY x", (-1, 3))
    assert cur.fetchall() == [(2,)]
    assert not any(k.id == "K1" for k in load_known(KNOWN))


# ---- the generators' building blocks --------------------------------------------------------

def test_parameterize_and_breadth_first_order():
    from pqe.testing.fuzz_params import breadth_first_order, mark, parameterize, unmark

    rng = random.Random(1)
    sql, params = parameterize("SELECT LOWER('A') AS o0, 5 AS o1 FROM t ORDER BY 1", rng, p=1.0)
    assert sql == "SELECT LOWER(?) AS o0, ? AS o1 FROM t ORDER BY 1" and params == ["A", 5]
    assert breadth_first_order(sql, params) == [5, "A"]       # the shallow ? first
    assert breadth_first_order("SELECT ? + ?, LOWER(?)", [1, 2, "x"]) is None
    assert unmark(mark(sql, params), params) == (sql, params)
    # ORDER BY ordinals, LIMIT and IS TRUE keep their literals
    sql, params = parameterize("SELECT a FROM t WHERE (a > 1) IS TRUE ORDER BY 1 LIMIT 3", rng, 1.0)
    assert sql == "SELECT a FROM t WHERE (a > ?) IS TRUE ORDER BY 1 LIMIT 3" and params == [1]


def test_generators_are_deterministic_per_case():
    for g in ("values", "dml", "params"):
        a, b = Fuzzer(seed=5, generators=[g]), Fuzzer(seed=5, generators=[g])
        assert a.case(7).to_json() == b.case(7).to_json()


def test_dml_script_check_and_reduction():
    """A DML script is checked after each statement; reduction keeps the failing statement and
    what it needs."""
    from pqe.testing.fuzz_dml import DmlCase, run_dml, written_table
    from pqe.testing.fuzz_engine import Engines
    from pqe.testing.fuzz_reduce import reduce_script

    tables = {"d0": [("c0", "BIGINT"), ("c1", "VARCHAR")]}
    assert written_table("UPDATE d0 SET c0 = 1", tables) == "d0"
    assert written_table("INSERT INTO d0 (c0) VALUES (1)", tables) == "d0"
    stmts = ["CREATE TABLE d0 (c0 BIGINT, c1 VARCHAR)", "INSERT INTO d0 VALUES (1, 'a'), (2, 'é')",
             "UPDATE d0 SET c1 = UPPER(c1) WHERE c0 > 1", "DELETE FROM d0 WHERE c0 = 1"]
    eng = Engines()
    res = run_dml(eng, DmlCase(stmts, tables))
    assert not res.failures and not res.discarded, res.failures
    assert res.checks["count"] == 2 * 3 and res.checks["diff"] == 2 * 4   # 2 partition counts

    def fails(s):   # a stand-in failure: the DELETE runs after the UPDATE
        return any("DELETE" in x for x in s) and any("UPDATE" in x for x in s)

    out, _ = reduce_script(stmts, fails, shrink=None)
    assert out == stmts[2:]
    eng.close()


def test_the_query_clock_does_not_count_a_paused_process(monkeypatch):
    """The fuzzer is paused (SIGSTOP) while benchmarks run; its wall-clock alarm then timed out
    the query in flight ("no answer after 100 s") although it had not run. The watchdog's
    clock skips gaps longer than PAUSE_GAP between its ticks, and still cancels a query that
    runs past the limit."""
    import threading

    from pqe.testing import fuzz_engine

    now = [0.0]
    monkeypatch.setattr(fuzz_engine, "_clock", lambda: now[0])
    cancel = threading.Event()
    dog = fuzz_engine.Watchdog(limit=1.0, cancel=cancel, main_ident=None, tick=0.01)
    dog.start()
    try:
        now[0] += 500.0  # a pause: the next tick sees a 500 s gap
        for _ in range(50):
            if dog.active == 0.0 and not cancel.is_set():
                break
            threading.Event().wait(0.01)
        threading.Event().wait(0.1)
        assert not cancel.is_set() and dog.active < 1.0
        for _ in range(300):  # running: 0.02 s of clock per tick
            now[0] += 0.02
            threading.Event().wait(0.005)
            if cancel.is_set():
                break
        assert cancel.is_set()
    finally:
        dog.stop()
        dog.join()

