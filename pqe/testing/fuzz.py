"""Differential fuzzing of pqe against DuckDB: generators, oracles, reduction, reporting.

    from pqe.testing.fuzz import Fuzzer
    report = Fuzzer(seed=1).run(1000)                       # every generator
    report = Fuzzer(seed=1, generators=["dml"]).run(200)    # one
    print(report.summary())

Generators (`GENERATORS`; each case belongs to one, chosen per block of `queries_per_db` cases):

- select: a random query (`fuzz_gen`) over a small random database (`fuzz_data`), checked by
  the oracles of `fuzz_oracles`: diff (pqe == DuckDB, names and types included), type, partition
  (1 == 3 partitions), tlp (ternary logic partitioning), norec, accepts, error;
- values: the same over databases of edge values (multi-byte text, int64 limits, 38-digit
  decimals, NaN/inf/-0.0, TIMESTAMP/TIMESTAMPTZ, NULL-heavy columns) with edge literals;
- dml: CREATE/INSERT/UPDATE/DELETE scripts compared after every statement (`fuzz_dml`);
- params: DB-API `?` parameters in nested positions, pqe.connect() vs DuckDB's own binding
  (`fuzz_params`).

Queries DuckDB rejects are discarded; `pqe.UnsupportedError` is a refusal, counted per
generator. Failures are shrunk (`fuzz_reduce`) and grouped into distinct findings.

Case i of generator g and seed s is reproducible alone, whatever ran before (`Fuzzer.case(i)`;
`python -m benchmarks.fuzz --seed s --generators g --case i`).
"""

from __future__ import annotations

import collections
import json
import random
import sys
import time
from dataclasses import dataclass, field

import pyarrow as pa
from sqlglot import exp

from .fuzz_data import database_python, database_sql, random_database, table_columns
from .fuzz_dml import DmlCase, DmlGenerator, run_dml
from .fuzz_engine import Engines, normalize_message
from .fuzz_gen import Generator
from .fuzz_oracles import ORACLES, Case, CaseResult, Failure, parse, run_case
from .fuzz_params import ParamCase, ParamGenerator, mark, run_params, unmark
from .fuzz_reduce import Flaky, failing_statement, reduce_case, reduce_script, shrink_sql

__all__ = ["GENERATORS", "Case", "Engines", "Finding", "FuzzReport", "Fuzzer", "run_case"]

DEFAULT_MIX = (("diff", 0.5), ("tlp", 0.25), ("norec", 0.25))
# generator -> weight in a run with every generator
GENERATORS = {"select": 4, "values": 2, "dml": 2, "params": 2}


def query_features(sqls: list[str], db: dict[str, pa.Table]) -> frozenset[str]:
    """The constructs a query uses (node kinds, join kinds, functions, cast targets, column
    categories): used to group failures that are probably the same bug."""
    out = set()
    cats = {name: {c.name: c.category for c in table_columns(t)} for name, t in db.items()}
    for sql in sqls:
        try:
            tree = parse(sql)
        except Exception:  # noqa: BLE001, S112 - not SQL sqlglot can read: no features
            continue
        aliases = {}
        for t in tree.find_all(exp.Table):
            aliases[t.alias_or_name] = t.name
        for node in tree.walk():
            if isinstance(node, (exp.Identifier, exp.TableAlias, exp.Alias, exp.Paren)):
                continue
            name = type(node).__name__
            if isinstance(node, exp.Join):
                name = f"Join:{node.args.get('side') or ''}:{node.args.get('kind') or ''}"
            elif isinstance(node, exp.DataType):
                name = f"DataType:{node.this}"
            elif isinstance(node, exp.Literal):
                name = "Literal:str" if node.is_string else "Literal:num"
            elif isinstance(node, exp.Column):
                table = aliases.get(node.table)
                name = f"Column:{cats.get(table, {}).get(node.name, '?')}"
            elif isinstance(node, exp.Anonymous):
                name = f"Func:{node.name.upper()}"
            elif isinstance(node, exp.SetOperation):
                name = f"{name}:{'distinct' if node.args.get('distinct') else 'all'}"
            elif isinstance(node, exp.Select) and node.args.get("distinct"):
                out.add("SelectDistinct")
            out.add(name)
    return frozenset(out)


@dataclass
class Finding:
    id: int
    failure: Failure
    oracles: list[str]
    case: object
    db: dict
    features: frozenset
    generator: str = "select"
    reduced_case: object | None = None
    reduced_db: dict | None = None
    reduced_features: frozenset | None = None
    repro: str = ""
    occurrences: list[int] = field(default_factory=list)  # case indices
    reduce_tests: int = 0
    flaky: bool = False
    original_failures: list = field(default_factory=list)
    known: str | None = None     # the id of a known finding it matches

    @property
    def key_features(self) -> frozenset:
        return self.reduced_features if self.reduced_features is not None else self.features


@dataclass
class GeneratorStats:
    cases: int = 0
    discarded: int = 0
    refused: int = 0            # cases with at least one UnsupportedError
    failing: int = 0
    checks: int = 0

    @property
    def tested(self) -> int:
        return self.cases - self.discarded

    @property
    def refusal_rate(self) -> float:
        return self.refused / self.tested if self.tested else 0.0


@dataclass
class FuzzReport:
    seed: int
    cases: int = 0
    by_kind: collections.Counter = field(default_factory=collections.Counter)
    discarded: collections.Counter = field(default_factory=collections.Counter)
    checks: collections.Counter = field(default_factory=collections.Counter)
    mismatches: collections.Counter = field(default_factory=collections.Counter)
    failing_cases: collections.Counter = field(default_factory=collections.Counter)
    pqe_errors: collections.Counter = field(default_factory=collections.Counter)
    unsupported: collections.Counter = field(default_factory=collections.Counter)
    unsupported_by_gen: dict = field(default_factory=dict)     # generator -> Counter
    unsupported_examples: dict = field(default_factory=dict)
    unsupported_cases: int = 0
    generators: dict = field(default_factory=dict)             # name -> GeneratorStats
    findings: list[Finding] = field(default_factory=list)
    failures: list[tuple[int, CaseResult]] = field(default_factory=list)  # unreduced
    elapsed: float = 0.0
    reduce_time: float = 0.0

    @property
    def total_mismatches(self) -> int:
        return sum(self.mismatches.values())

    @property
    def total_errors(self) -> int:
        return sum(self.pqe_errors.values())

    def stats(self, generator: str) -> GeneratorStats:
        return self.generators.setdefault(generator, GeneratorStats())

    def summary(self, top: int = 15) -> str:
        tested = self.cases - sum(self.discarded.values())
        lines = [
            (f"seed {self.seed}: {self.cases} queries tried in {self.elapsed:.0f} s "
             f"({self.reduce_time:.0f} s reducing)"),
            "  by oracle: " + ", ".join(f"{k} {v}" for k, v in sorted(self.by_kind.items())),
            (f"  discarded: {sum(self.discarded.values())} (DuckDB error or not applicable); "
             f"tested: {tested}; hit an unsupported construct: {self.unsupported_cases}"),
            "  per generator:   cases  tested  refused (rate)   failing  findings",
        ]
        for g, st in sorted(self.generators.items()):
            nf = sum(1 for f in self.findings if f.generator == g)
            lines.append(f"    {g:<10} {st.cases:>8} {st.tested:>7} {st.refused:>8} "
                         f"({100 * st.refusal_rate:4.1f}%) {st.failing:>8} {nf:>9}")
        lines.append("  checks / mismatches per oracle:")
        for o in ORACLES + ("count", "legit"):
            if self.checks.get(o, 0) or self.mismatches.get(o, 0):
                lines.append(f"    {o:<10} {self.checks.get(o, 0):>7} checks  "
                             f"{self.mismatches.get(o, 0):>5} mismatches")
        lines.append(f"  pqe errors (not Unsupported) where DuckDB succeeded: {self.total_errors}")
        for cls, n in self.pqe_errors.most_common():
            lines.append(f"    {cls:<28} {n}")
        lines.append("  failing cases by primary oracle: " + (", ".join(
            f"{k} {v}" for k, v in self.failing_cases.most_common()) or "none"))
        lines.append(f"  distinct findings: {len(self.findings)}")
        for f in self.findings:
            occ = len(f.occurrences)
            known = f" (known: {f.known})" if f.known else ""
            lines.append(f"    F{f.id}: {f.generator} {f.failure.oracle} [{', '.join(f.oracles)}] "
                         f"x{occ}{known}: "
                         f"{_one_line(f.failure.error_class + ' ' if f.failure.error_class else '')}"
                         f"{_one_line(f.failure.detail)[:110]}")
        lines.append("  top unsupported constructs (cases):")
        for msg, n in self.unsupported.most_common(top):
            lines.append(f"    {n:>6}  {msg}")
        if self.discarded:
            lines.append("  top discard reasons:")
            for msg, n in self.discarded.most_common(5):
                lines.append(f"    {n:>6}  {msg[:120]}")
        return "\n".join(lines)

    def log_line(self) -> str:
        """The one-line summary of a run."""
        gens = "; ".join(f"{g} {st.cases} cases, {st.refused} refused "
                         f"({100 * st.refusal_rate:.1f}%), {st.failing} failing"
                         for g, st in sorted(self.generators.items()))
        return (f"[fuzz] seed {self.seed}: {self.cases} cases in {self.elapsed:.0f} s, "
                f"{sum(self.checks.values())} checks, {self.total_mismatches} mismatches, "
                f"{self.total_errors} errors, {len(self.findings)} distinct findings | {gens}")

    def findings_markdown(self) -> str:
        out = [f"# pqe fuzz findings (seed {self.seed}, {self.cases} queries)\n",
               "```", self.summary(), "```\n"]
        for f in self.findings:
            occ = f.occurrences
            out.append(f.repro)
            out.append(f"Occurrences: {len(occ)} (cases {', '.join(map(str, occ[:15]))}"
                       f"{', ...' if len(occ) > 15 else ''})\n")
        return "\n".join(out)

    def to_json(self) -> dict:
        return {
            "seed": self.seed, "cases": self.cases, "by_kind": dict(self.by_kind),
            "discarded": sum(self.discarded.values()), "checks": dict(self.checks),
            "mismatches": dict(self.mismatches), "failing_cases": dict(self.failing_cases),
            "pqe_errors": dict(self.pqe_errors), "unsupported": dict(self.unsupported),
            "generators": {g: {"cases": st.cases, "tested": st.tested, "refused": st.refused,
                               "refusal_rate": round(st.refusal_rate, 4),
                               "failing": st.failing}
                           for g, st in self.generators.items()},
            "findings": len(self.findings), "elapsed": self.elapsed,
        }


def _one_line(s: str) -> str:
    return " ".join(s.split())


class Fuzzer:
    def __init__(self, seed: int = 1, partitions=(1, 3), disabled=(), queries_per_db: int = 20,
                 mix=DEFAULT_MIX, reduce: bool = True, reduce_budget_s: float = 90.0,
                 max_reductions: int = 150, timeout: float = 20.0, threads: int = 2,
                 log=None, progress: int = 0, out=sys.stderr, generators=None, known=None):
        self.seed = seed
        self.eng = Engines(partitions, timeout=timeout, threads=threads)
        self.disabled = tuple(disabled)
        self.queries_per_db = queries_per_db
        self.mix = tuple(mix)
        self.reduce = reduce
        self.reduce_budget_s = reduce_budget_s
        self.max_reductions = max_reductions
        self.log = log
        self.progress = progress
        self.out = out
        gens = list(generators) if generators else list(GENERATORS)
        unknown = [g for g in gens if g not in GENERATORS]
        if unknown:
            raise ValueError(f"unknown generators {unknown}; known: {list(GENERATORS)}")
        self.generators = gens
        self.known = known or []          # pqe.testing.fuzz_known.KnownFinding
        self._db_key = None
        self.db: dict = {}
        self.reductions = 0

    # ---- cases -------------------------------------------------------------------------

    def generator_of(self, i: int) -> str:
        """The generator of case i: one per block of queries_per_db cases."""
        if len(self.generators) == 1:
            return self.generators[0]
        rng = random.Random(f"{self.seed}:gen:{i // self.queries_per_db}")
        return rng.choices(self.generators, [GENERATORS[g] for g in self.generators])[0]

    def database(self, k: int, generator: str = "select") -> dict:
        if generator == "values":
            return random_database(random.Random(f"{self.seed}:vdb:{k}"), edge=True)
        if generator == "params":
            rng = random.Random(f"{self.seed}:pdb:{k}")
            return random_database(rng, edge=rng.random() < 0.3)
        return random_database(random.Random(f"{self.seed}:db:{k}"))

    def database_of(self, i: int) -> dict:
        g = self.generator_of(i)
        return {} if g == "dml" else self.database(i // self.queries_per_db, g)

    def case(self, i: int, db: dict | None = None):
        """Case i of this seed (deterministic)."""
        g = self.generator_of(i)
        if db is None:
            db = self.database_of(i)
        if g == "dml":
            case = DmlGenerator(random.Random(f"{self.seed}:dml:{i}"), self.disabled).case()
        elif g == "params":
            edge = random.Random(f"{self.seed}:pe:{i}").random() < 0.4
            pg = ParamGenerator(random.Random(f"{self.seed}:params:{i}"), db, self.disabled,
                                edge=edge)
            case = pg.case()
        else:
            seed = f"{self.seed}:{i}" if g == "select" else f"{self.seed}:values:{i}"
            case = self._select_case(random.Random(seed), db, edge=g == "values")
            case.generator = g
        case.index = i
        return case

    def _select_case(self, rng: random.Random, db: dict, edge: bool) -> Case:
        gen = Generator(rng, db, disabled=self.disabled, edge=edge)
        r = rng.random()
        kind = self.mix[-1][0]
        for name, w in self.mix:
            if r < w:
                kind = name
                break
            r -= w
        if kind == "tlp":
            variant, base, pred = gen.tlp_input()
            case = Case("tlp", base, pred, variant)
        elif kind == "norec":
            base, pred = gen.norec_input()
            case = Case("norec", base, pred)
        else:
            case = Case("diff", gen.query().sql)
        case.features = sorted(set(gen.features))
        return case

    def _load(self, i: int) -> None:
        g = self.generator_of(i)
        key = (g, i // self.queries_per_db)
        if g in ("select", "values") and (key != self._db_key or not self.eng.ctxs):
            self.db = self.database(i // self.queries_per_db, g)
            self.eng.load(self.db)
            self._db_key = key
        elif g not in ("select", "values"):
            self.db = self.database_of(i)
            self._db_key = None

    def run_one(self, case, db: dict, partitions=None) -> CaseResult:
        """Run a case of any generator (the engines hold `db` for select/values cases)."""
        if isinstance(case, DmlCase):
            return run_dml(self.eng, case, partitions)
        if isinstance(case, ParamCase):
            return run_params(self.eng, case, db, partitions)
        return run_case(self.eng, case, partitions)

    # ---- running -----------------------------------------------------------------------

    def run(self, n: int, start: int = 0) -> FuzzReport:
        rep = FuzzReport(self.seed)
        t0 = time.monotonic()
        logf = open(self.log, "w") if self.log else None  # noqa: SIM115
        try:
            for i in range(start, start + n):
                self._load(i)
                case = self.case(i, self.db)
                try:
                    res = self.run_one(case, self.db)
                except Exception as e:  # noqa: BLE001 - a fuzzer bug must not end a long run
                    import traceback

                    print(f"[fuzz] case {i} ({case.generator}): the fuzzer itself failed: "
                          f"{type(e).__name__}: {e}\n{traceback.format_exc()}", file=self.out)
                    res = CaseResult(case, discarded=f"fuzzer error: {type(e).__name__}")
                    self.eng.close()
                    self._db_key = None
                self._tally(rep, case, res)
                if res.failures:
                    rep.failures.append((i, res))
                    if logf:
                        logf.write(json.dumps({"type": "failure", "generator": case.generator,
                                               "case": case.to_json(),
                                               "failures": [f.to_json() for f in res.failures],
                                               "database": database_python(self.db)}) + "\n")
                        logf.flush()
                    try:
                        self._triage(rep, i, case, res)
                    except Exception as e:  # noqa: BLE001 - keep the run going
                        print(f"[fuzz] triage of case {i} failed: {type(e).__name__}: {e}",
                              file=self.out)
                        self._db_key = None
                if self.progress and (i + 1 - start) % self.progress == 0:
                    rep.elapsed = time.monotonic() - t0
                    print(f"[fuzz] {i + 1 - start}/{n} queries, {rep.total_mismatches} mismatches,"
                          f" {rep.total_errors} errors, {len(rep.findings)} findings, "
                          f"{rep.elapsed:.0f} s", file=self.out, flush=True)
        finally:
            rep.elapsed = time.monotonic() - t0
            self.eng.close()
            if logf:
                for f in rep.findings:
                    logf.write(json.dumps({
                        "type": "finding", "id": f.id, "generator": f.generator,
                        "oracle": f.failure.oracle, "oracles": f.oracles,
                        "occurrences": f.occurrences, "known": f.known,
                        "case": (f.reduced_case or f.case).to_json(),
                        "repro": f.repro}) + "\n")
                logf.write(json.dumps({"type": "summary", **rep.to_json()}) + "\n")
                logf.close()
        return rep

    def _tally(self, rep: FuzzReport, case, res: CaseResult) -> None:
        rep.cases += 1
        st = rep.stats(case.generator)
        st.cases += 1
        rep.by_kind[case.oracle] += 1
        if res.discarded:
            rep.discarded[normalize_message(res.discarded)] += 1
            st.discarded += 1
            return
        rep.checks.update(res.checks)
        st.checks += sum(res.checks.values())
        for f in res.failures:
            if f.oracle in ORACLES:
                rep.mismatches[f.oracle] += 1
        for cls in res.errors:
            rep.pqe_errors[cls] += 1
        msgs = list(dict.fromkeys(res.unsupported))
        if msgs:
            rep.unsupported_cases += 1
            st.refused += 1
        by_gen = rep.unsupported_by_gen.setdefault(case.generator, collections.Counter())
        for m in msgs:
            rep.unsupported[m] += 1
            by_gen[m] += 1
            rep.unsupported_examples.setdefault(m, res.queries[0][1] if res.queries else "")
        prim = res.primary()
        if prim:
            rep.failing_cases[prim.oracle] += 1
            st.failing += 1

    # ---- grouping and reduction --------------------------------------------------------

    def known_match(self, case, failure: Failure) -> str | None:
        for k in self.known:
            if k.matches(case.generator, self.seed, case.index, failure):
                return k.id
        return None

    def _triage(self, rep: FuzzReport, i: int, case, res: CaseResult) -> None:
        prim = res.primary()
        sig = (case.generator,) + prim.signature
        oracles = sorted({f.oracle for f in res.failures})
        sqls = [s for _, s in res.queries]
        feats = query_features(sqls, self.db) | frozenset(getattr(case, "features", []))
        same = [f for f in rep.findings if (f.generator,) + f.failure.signature == sig]
        can_reduce = self.reduce and self.reductions < self.max_reductions
        if prim.oracle in ("error", "timeout", "bind_order", "accepts", "type"):
            known = same[0] if same else None  # the message (or type pair) identifies the bug
        elif can_reduce:
            known = None  # wrong answers are rarer: shrink each, then compare the shrunk ones
        else:
            # a failing query using every construct of a shrunk one is probably the same bug
            subsets = [f for f in same if f.key_features <= feats]
            known = max(subsets, key=lambda f: len(f.key_features)) if subsets else None
        if known is not None:
            known.occurrences.append(i)
            return
        finding = Finding(len(rep.findings) + 1, prim, oracles, case, dict(self.db), feats,
                          generator=case.generator, occurrences=[i],
                          original_failures=list(res.failures))
        finding.known = self.known_match(case, prim)
        if can_reduce:
            self.reductions += 1
            t = time.monotonic()
            try:
                self._reduce(finding, case, res, prim)
            except Flaky:
                finding.flaky = True
            except Exception as e:  # noqa: BLE001 - keep fuzzing; report unreduced
                print(f"[fuzz] reduction of case {i} failed: {type(e).__name__}: {e}",
                      file=self.out)
            finally:
                rep.reduce_time += time.monotonic() - t
                if case.generator in ("select", "values"):
                    self.eng.load(self.db)
        # a reduced failure using every construct of a known one (same oracle) is a duplicate
        for f in same:
            if finding.reduced_features is not None and f.key_features <= finding.reduced_features:
                f.occurrences.append(i)
                return
        finding.repro = self.describe(finding)
        rep.findings.append(finding)

    def _reduce(self, finding: Finding, case, res: CaseResult, prim: Failure) -> None:
        if isinstance(case, DmlCase):
            rc, n = self._reduce_dml(case, prim)
            finding.reduced_case, finding.reduced_db, finding.reduce_tests = rc, {}, n
            finding.reduced_features = query_features(rc.statements, {})
            return
        if isinstance(case, ParamCase):
            rc, n = self._reduce_params(case, prim)
            rdb = {} if case.form == "insert" else self.db
            finding.reduced_case, finding.reduced_db, finding.reduce_tests = rc, rdb, n
            finding.reduced_features = query_features([s for s, _ in rc.statements], self.db)
            return
        if case.oracle != "diff" and prim.oracle not in ("tlp", "norec"):
            # the failing query alone reproduces it: shrink it as a plain diff case
            sql = dict(res.queries)[prim.role]
            case = Case("diff", sql, features=case.features, index=case.index)
            case.generator = finding.generator
            finding.case = case
        rc, rdb, ntests = reduce_case(self.eng, case, self.db, prim,
                                      budget_s=self.reduce_budget_s)
        rc.generator = finding.generator
        finding.reduced_case, finding.reduced_db, finding.reduce_tests = rc, rdb, ntests
        finding.reduced_features = query_features([s for _, s in rc.queries()], rdb)

    def _reduce_dml(self, case: DmlCase, target: Failure) -> tuple[DmlCase, int]:
        def fails(stmts) -> bool:
            c = DmlCase(list(stmts), case.tables, index=case.index)
            r = run_dml(self.eng, c, target.partitions)
            return any(f.signature == target.signature for f in r.failures)

        k = failing_statement(target.role)
        stmts = case.statements[:k + 1] if k is not None else case.statements
        stmts, n = reduce_script(stmts, fails, self.reduce_budget_s,
                                 shrink=lambda s, test, out: shrink_sql(s, test, out))
        return DmlCase(stmts, case.tables, features=case.features, index=case.index), n

    def _reduce_params(self, case: ParamCase, target: Failure) -> tuple[ParamCase, int]:
        db = self.db

        def make(stmts) -> ParamCase:
            c = ParamCase(case.form, list(stmts), tables=case.tables, index=case.index)
            if case.form == "query" and target.oracle == "bind" and len(stmts) == 1:
                c.literal_sql = inline(*stmts[0])
            return c

        def fails(stmts) -> bool:
            r = run_params(self.eng, make(stmts), db, target.partitions)
            return any(f.signature == target.signature for f in r.failures)

        def shrink(stmt, test, out):
            sql, params = stmt
            if not params:
                return (shrink_sql(sql, lambda t: test((t, None)), out), params)
            marked = mark(sql, params)
            best = shrink_sql(marked, lambda t: test(unmark(t, params)), out)
            return unmark(best, params)

        k = failing_statement(target.role)
        stmts = case.statements[:k + 1] if k is not None else case.statements
        stmts, n = reduce_script(stmts, fails, self.reduce_budget_s, shrink=shrink)
        return make(stmts), n

    def describe(self, f: Finding) -> str:
        """Markdown: data, statements, pqe's and DuckDB's answers for a finding."""
        case = f.reduced_case or f.case
        db = f.reduced_db if f.reduced_db is not None else f.db
        if not isinstance(case, (DmlCase, ParamCase)):
            self.eng.load(db)
        res = self.run_one(case, db)
        if not isinstance(case, (DmlCase, ParamCase)):
            self.eng.load(self.db)
        how = ("FLAKY: did not fail again when re-run (race?), not reduced" if f.flaky else
               f"reduced in {f.reduce_tests} tests" if f.reduced_case else "NOT reduced")
        known = f"; known finding {f.known}" if f.known else ""
        lines = [f"## F{f.id}: {f.generator} / {f.failure.oracle} "
                 f"({', '.join(res_oracles(res) or f.oracles)})",
                 f"first seen in case {f.occurrences[0]} (seed {self.seed}, generator "
                 f"{f.generator}); {how}{known}", ""]
        if db and not isinstance(case, DmlCase) and not (
                isinstance(case, ParamCase) and case.form == "insert"):
            lines += ["Data (pyarrow):", "```python", database_python(db), "```",
                      "Data (SQL):", "```sql", database_sql(db), "```"]
        if isinstance(case, DmlCase):
            lines += ["Script:", "```sql", case.script(), "```"]
        elif isinstance(case, ParamCase):
            lines += ["Statements (pqe.connect().cursor().execute(sql, parameters); DuckDB "
                      "con.execute(sql, parameters)):", "```sql", case.describe(), "```"]
        elif case.oracle != "diff":
            variant = f" ({case.variant})" if case.variant else ""
            lines += [f"Oracle {case.oracle}{variant}: base `{case.base}`, predicate `{case.pred}`"]
        if res.discarded:
            lines += [f"(re-run discarded: {res.discarded})"]
        for k, (role, sql) in enumerate(res.queries):
            lines += ["", f"Query ({role}):", "```sql", sql, "```"]
            if k < len(res.duck):
                lines += ["DuckDB: " + res.duck[k].describe()]
            for p, outs in res.pqe.items():
                if k < len(outs):
                    lines += [f"pqe ({p} partition{'s' if p > 1 else ''}): " + outs[k].describe()]
        if f.flaky or not res.failures:
            lines += ["", "Failures when first found: " + "; ".join(
                f"{x.oracle}{x.partitions} {x.role}: {x.error_class + ': ' if x.error_class else ''}"
                f"{x.detail}" for x in f.original_failures)]
        lines += ["", "Failures: " + "; ".join(
            f"{x.oracle}{x.partitions}{' ' + x.role if x.role else ''}: "
            f"{x.error_class + ': ' if x.error_class else ''}{x.detail}" for x in res.failures), ""]
        return "\n".join(lines)


def inline(sql: str, params) -> str:
    """`sql` with its `?` replaced by literals of `params` (text order)."""
    from .fuzz_data import sql_literal

    if not params:
        return sql
    it = iter(params)
    import re

    return re.sub(r"\?", lambda m: sql_literal(next(it)), sql)


def res_oracles(res: CaseResult) -> list[str]:
    return sorted({f.oracle for f in res.failures})
