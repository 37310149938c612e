"""Differential fuzzing of pqe against DuckDB, with TLP and NoREC oracles.

    from pqe.testing.fuzz import Fuzzer
    report = Fuzzer(seed=1).run(1000)
    print(report.summary())

Each test case draws a random query (`fuzz_gen`) over a small random database (`fuzz_data`),
runs it on DuckDB and on pqe with 1 and 3 partitions (`fuzz_engine`), and applies the oracles
(`fuzz_oracles`): diff (pqe == DuckDB), partition (1 == 3 partitions), tlp (ternary logic
partitioning), norec (count(*) WHERE p == SUM(CASE WHEN p ...)), and error (pqe raises
something other than UnsupportedError where DuckDB succeeds). Queries DuckDB rejects are
discarded. Failures are shrunk (`fuzz_reduce`) and grouped into distinct findings.

Case i of seed s is reproducible alone: its query uses Random(f"{s}:{i}") and its database
Random(f"{s}:db:{i // queries_per_db}"), whatever ran before (`Fuzzer.case(i)`).
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
from .fuzz_engine import Engines, normalize_message
from .fuzz_gen import Generator
from .fuzz_oracles import ORACLES, Case, CaseResult, Failure, parse, run_case
from .fuzz_reduce import Flaky, reduce_case

__all__ = ["Case", "Engines", "Finding", "FuzzReport", "Fuzzer", "run_case"]

DEFAULT_MIX = (("diff", 0.5), ("tlp", 0.25), ("norec", 0.25))


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
    case: Case
    db: dict
    features: frozenset
    reduced_case: Case | None = None
    reduced_db: dict | None = None
    reduced_features: frozenset | None = None
    repro: str = ""
    occurrences: list[int] = field(default_factory=list)  # case indices
    reduce_tests: int = 0
    flaky: bool = False
    original_failures: list = field(default_factory=list)

    @property
    def key_features(self) -> frozenset:
        return self.reduced_features if self.reduced_features is not None else self.features


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
    unsupported_examples: dict = field(default_factory=dict)
    unsupported_cases: int = 0
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

    def summary(self, top: int = 15) -> str:
        tested = self.cases - sum(self.discarded.values())
        lines = [
            (f"seed {self.seed}: {self.cases} queries tried in {self.elapsed:.0f} s "
             f"({self.reduce_time:.0f} s reducing)"),
            "  by oracle: " + ", ".join(f"{k} {v}" for k, v in sorted(self.by_kind.items())),
            (f"  discarded: {sum(self.discarded.values())} (DuckDB error or not applicable); "
             f"tested: {tested}; hit an unsupported construct: {self.unsupported_cases}"),
            "  checks / mismatches per oracle:",
        ]
        for o in ORACLES:
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
            lines.append(f"    F{f.id}: {f.failure.oracle} [{', '.join(f.oracles)}] x{occ}: "
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
            "findings": len(self.findings), "elapsed": self.elapsed,
        }


def _one_line(s: str) -> str:
    return " ".join(s.split())


class Fuzzer:
    def __init__(self, seed: int = 1, partitions=(1, 3), disabled=(), queries_per_db: int = 20,
                 mix=DEFAULT_MIX, reduce: bool = True, reduce_budget_s: float = 90.0,
                 max_reductions: int = 150, timeout: float = 20.0, threads: int = 2,
                 log=None, progress: int = 0, out=sys.stderr):
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
        self._db_index = None
        self.db: dict = {}
        self.reductions = 0

    # ---- cases -------------------------------------------------------------------------

    def database(self, k: int) -> dict:
        return random_database(random.Random(f"{self.seed}:db:{k}"))

    def case(self, i: int, db: dict | None = None) -> Case:
        """Case i of this seed (deterministic)."""
        if db is None:
            db = self.database(i // self.queries_per_db)
        rng = random.Random(f"{self.seed}:{i}")
        gen = Generator(rng, db, disabled=self.disabled)
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
        case.index = i
        return case

    def _load(self, i: int) -> None:
        k = i // self.queries_per_db
        if k != self._db_index or not self.eng.ctxs:
            self.db = self.database(k)
            self.eng.load(self.db)
            self._db_index = k

    # ---- running -----------------------------------------------------------------------

    def run(self, n: int, start: int = 0) -> FuzzReport:
        rep = FuzzReport(self.seed)
        t0 = time.monotonic()
        logf = open(self.log, "w") if self.log else None  # noqa: SIM115
        try:
            for i in range(start, start + n):
                self._load(i)
                case = self.case(i, self.db)
                res = run_case(self.eng, case)
                self._tally(rep, case, res)
                if res.failures:
                    rep.failures.append((i, res))
                    if logf:
                        logf.write(json.dumps({"type": "failure", "case": case.to_json(),
                                               "failures": [f.to_json() for f in res.failures],
                                               "database": database_python(self.db)}) + "\n")
                        logf.flush()
                    self._triage(rep, i, case, res)
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
                        "type": "finding", "id": f.id, "oracle": f.failure.oracle,
                        "oracles": f.oracles, "occurrences": f.occurrences,
                        "case": (f.reduced_case or f.case).to_json(),
                        "repro": f.repro}) + "\n")
                logf.write(json.dumps({"type": "summary", **rep.to_json()}) + "\n")
                logf.close()
        return rep

    def _tally(self, rep: FuzzReport, case: Case, res: CaseResult) -> None:
        rep.cases += 1
        rep.by_kind[case.oracle] += 1
        if res.discarded:
            rep.discarded[normalize_message(res.discarded)] += 1
            return
        rep.checks.update(res.checks)
        for f in res.failures:
            if f.oracle in ORACLES:
                rep.mismatches[f.oracle] += 1
        for cls in res.errors:
            rep.pqe_errors[cls] += 1
        msgs = list(dict.fromkeys(res.unsupported))
        if msgs:
            rep.unsupported_cases += 1
        for m in msgs:
            rep.unsupported[m] += 1
            rep.unsupported_examples.setdefault(m, res.queries[0][1])
        prim = res.primary()
        if prim:
            rep.failing_cases[prim.oracle] += 1

    # ---- grouping and reduction --------------------------------------------------------

    def _triage(self, rep: FuzzReport, i: int, case: Case, res: CaseResult) -> None:
        prim = res.primary()
        sig = prim.signature
        oracles = sorted({f.oracle for f in res.failures})
        feats = query_features([s for _, s in res.queries], self.db)
        same = [f for f in rep.findings if f.failure.signature == sig]
        can_reduce = self.reduce and self.reductions < self.max_reductions
        if prim.oracle in ("error", "timeout"):
            known = same[0] if same else None  # the error message identifies the bug
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
                          occurrences=[i], original_failures=list(res.failures))
        if can_reduce:
            self.reductions += 1
            t = time.monotonic()
            try:
                if case.oracle != "diff" and prim.oracle not in ("tlp", "norec"):
                    # the failing query alone reproduces it: shrink it as a plain diff case
                    sql = dict(res.queries)[prim.role]
                    case = Case("diff", sql, features=case.features, index=case.index)
                    finding.case = case
                rc, rdb, ntests = reduce_case(self.eng, case, self.db, prim,
                                              budget_s=self.reduce_budget_s)
                finding.reduced_case, finding.reduced_db, finding.reduce_tests = rc, rdb, ntests
                finding.reduced_features = query_features(
                    [s for _, s in rc.queries()], rdb)
            except Flaky:
                finding.flaky = True
            except Exception as e:  # noqa: BLE001 - keep fuzzing; report unreduced
                print(f"[fuzz] reduction of case {i} failed: {type(e).__name__}: {e}",
                      file=self.out)
            finally:
                rep.reduce_time += time.monotonic() - t
                self.eng.load(self.db)
        # a reduced failure using every construct of a known one (same oracle) is a duplicate
        for f in same:
            if finding.reduced_features is not None and f.key_features <= finding.reduced_features:
                f.occurrences.append(i)
                return
        finding.repro = self.describe(finding)
        rep.findings.append(finding)

    def describe(self, f: Finding) -> str:
        """Markdown: data, queries, pqe's and DuckDB's answers for a finding."""
        case = f.reduced_case or f.case
        db = f.reduced_db if f.reduced_db is not None else f.db
        self.eng.load(db)
        res = run_case(self.eng, case)
        self.eng.load(self.db)
        how = ("FLAKY: did not fail again when re-run (race?), not reduced" if f.flaky else
               f"reduced in {f.reduce_tests} tests" if f.reduced_case else "NOT reduced")
        lines = [f"## F{f.id}: {f.failure.oracle} ({', '.join(res_oracles(res) or f.oracles)})",
                 f"first seen in case {f.occurrences[0]} (seed {self.seed}); {how}",
                 "", "Data (pyarrow):", "```python", database_python(db), "```",
                 "Data (SQL):", "```sql", database_sql(db), "```"]
        if case.oracle != "diff":
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


def res_oracles(res: CaseResult) -> list[str]:
    return sorted({f.oracle for f in res.failures})
