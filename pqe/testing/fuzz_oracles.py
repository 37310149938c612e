"""Test cases and oracles of the differential fuzzer (`pqe.testing.fuzz`).

A `Case` is one generated test: a base query (plus a predicate for TLP / NoREC). It expands
to the SQL texts to run; `run_case` runs them on DuckDB and on pqe (every partition count)
and applies the oracles:

- diff:      every pqe result equals DuckDB's (the queries DuckDB rejects are discarded);
- partition: pqe's results on 1 and on N partitions agree;
- tlp:       ternary logic partitioning: Q equals Q WHERE p  UNION ALL  Q WHERE NOT p
             UNION ALL  Q WHERE p IS NULL (UNION for DISTINCT; partitions re-aggregated with
             MIN/MAX/SUM for aggregates; HAVING p / NOT p / p IS NULL for grouped queries);
- norec:     SELECT count(*) FROM .. WHERE p  equals
             SELECT COALESCE(SUM(CASE WHEN p THEN 1 ELSE 0 END), 0) FROM .. ;
- type:      pqe's values equal DuckDB's but a column's logical type differs
             (`pqe.testing.compare.ALLOWED_DIFFERENCES` lists the accepted differences);
- error:     pqe raises something other than UnsupportedError where DuckDB succeeds;
- accepts:   pqe answers where DuckDB raised an error about the data (overflow, conversion,
             constraint): pqe's own rule is that these are errors, not answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from .fuzz_engine import (DATA_ERRORS, Engines, Outcome, check, legit_difference,
                          normalize_message, order_spec, type_signature)

try:  # the dialect pqe parses with (PostgreSQL NULL ordering)
    from ..sql.parser import DIALECT
except Exception:  # noqa: BLE001 # pragma: no cover - fall back to sqlglot's default
    DIALECT = None

ORACLES = ("diff", "type", "partition", "tlp", "norec", "accepts", "bind", "bind_order")


class NotApplicable(Exception):
    """The oracle does not apply to this (reduced) query."""


def parse(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read=DIALECT)


def render(tree: exp.Expression) -> str:
    # sqlglot spells BOOL_OR/BOOL_AND as LOGICAL_OR/LOGICAL_AND, which DuckDB does not know
    sql = tree.sql(dialect=DIALECT)
    return sql.replace("LOGICAL_OR(", "BOOL_OR(").replace("LOGICAL_AND(", "BOOL_AND(")


@dataclass
class Case:
    oracle: str                      # diff | tlp | norec
    base: str
    pred: str | None = None
    variant: str | None = None       # tlp: where | aggregate | having
    features: list[str] = field(default_factory=list)
    index: int = -1                  # position in the run (for replay)
    generator: str = "select"        # select | values

    def queries(self) -> list[tuple[str, str]]:
        """(role, SQL) pairs to run."""
        if self.oracle == "diff":
            return [("query", self.base)]
        if self.oracle == "tlp":
            return tlp_queries(self.base, self.pred, self.variant)
        if self.oracle == "norec":
            return norec_queries(self.base, self.pred)
        raise ValueError(self.oracle)

    def to_json(self) -> dict:
        return {"generator": self.generator, "oracle": self.oracle, "variant": self.variant,
                "base": self.base, "pred": self.pred, "index": self.index}


# ---- building the oracle queries -------------------------------------------------------------

_DECOMPOSABLE = {exp.Min: "MIN", exp.Max: "MAX", exp.Sum: "SUM", exp.Count: "SUM"}


def _not(p: exp.Expression) -> exp.Expression:
    return exp.Not(this=exp.Paren(this=p.copy()))


def _is_null(p: exp.Expression) -> exp.Expression:
    return exp.Is(this=exp.Paren(this=p.copy()), expression=exp.Null())


def _split_with(tree: exp.Expression) -> tuple[str, exp.Expression]:
    w = tree.args.get("with_")
    if w is None:
        return "", tree
    tree = tree.copy()
    tree.set("with_", None)
    return render(w) + " ", tree


def _has_agg(e: exp.Expression) -> bool:
    """An aggregate of this query level (not inside a subquery)."""
    return any(isinstance(n, exp.AggFunc)
               for n in e.walk(prune=lambda n: isinstance(n, (exp.Subquery, exp.Query))
                               and n is not e))


def tlp_queries(base: str, pred: str, variant: str) -> list[tuple[str, str]]:
    tree = parse(base)
    p = parse(pred)
    if not isinstance(tree, exp.Select):
        raise NotApplicable("TLP needs a SELECT")
    if tree.args.get("limit") or tree.args.get("offset") or tree.args.get("order"):
        raise NotApplicable("LIMIT/ORDER BY")
    if any(isinstance(n, exp.Window) for e in tree.expressions
           for n in e.walk(prune=lambda n: isinstance(n, (exp.Subquery, exp.Query)))):
        raise NotApplicable("window functions see the whole input")
    with_sql, body = _split_with(tree)
    conds = [p, _not(p), _is_null(p)]
    if variant == "having":
        if not body.args.get("group") and not any(_has_agg(e) for e in body.expressions):
            raise NotApplicable("HAVING on a query that does not aggregate")
        parts = [body.copy().having(c.copy(), dialect=DIALECT) for c in conds]
        combined = " UNION ALL ".join(render(x) for x in parts)
        return [("original", base), ("partitioned", with_sql + combined)]
    parts = [body.copy().where(c.copy(), dialect=DIALECT) for c in conds]
    projections = body.expressions
    has_agg = bool(body.args.get("group")) or any(_has_agg(e) for e in projections)
    if not has_agg:
        op = " UNION " if body.args.get("distinct") else " UNION ALL "
        return [("original", base), ("partitioned", with_sql + op.join(render(x) for x in parts))]
    # aggregates: re-aggregate the three partitions
    if body.args.get("having") or body.args.get("distinct"):
        raise NotApplicable("HAVING/DISTINCT with aggregates")
    outer, keys = [], []
    for i, e in enumerate(projections):
        name = e.alias_or_name if isinstance(e, exp.Alias) else None
        inner = e.this if isinstance(e, exp.Alias) else e
        if not name:
            raise NotApplicable("unnamed projection")
        fn = _DECOMPOSABLE.get(type(inner))
        if fn is not None and not inner.args.get("distinct") and not isinstance(
                inner.this, exp.Distinct):
            outer.append(f"{fn}(u.{name}) AS {name}")
        elif _has_agg(inner):
            raise NotApplicable(f"aggregate {inner.sql()} does not decompose")
        else:
            outer.append(f"u.{name} AS {name}")
            keys.append(f"u.{name}")
    union = " UNION ALL ".join(render(x) for x in parts)
    group = f" GROUP BY {', '.join(keys)}" if keys else ""
    if not keys and not body.args.get("group") and len(outer) == 0:
        raise NotApplicable("nothing to aggregate")
    if keys and not body.args.get("group"):
        raise NotApplicable("keys without GROUP BY")
    combined = f"{with_sql}SELECT {', '.join(outer)} FROM ({union}) AS u{group}"
    return [("original", base), ("partitioned", combined)]


def norec_queries(base: str, pred: str) -> list[tuple[str, str]]:
    tree = parse(base)
    p = parse(pred)
    if not isinstance(tree, exp.Select) or tree.args.get("group") or tree.args.get("limit"):
        raise NotApplicable("NoREC needs SELECT .. FROM ..")
    count = tree.copy().select(exp.Count(this=exp.Star()), append=False, copy=False)
    count = count.where(p.copy(), dialect=DIALECT, copy=False)
    case = exp.Case(ifs=[exp.If(this=p.copy(), true=exp.Literal.number(1))],
                    default=exp.Literal.number(0))
    if p.find(exp.Subquery, exp.Query, exp.Exists):
        # keep the subquery out of the aggregate's argument: sum a derived column instead
        with_sql, body = _split_with(tree)
        flags = body.select(exp.alias_(case, "f"), append=False)
        nonopt = (f"{with_sql}SELECT COALESCE(SUM(s.f), 0) FROM ({render(flags)}) AS s")
        return [("count", render(count)), ("sum", nonopt)]
    total = exp.Coalesce(this=exp.Sum(this=case), expressions=[exp.Literal.number(0)])
    nonopt = tree.copy().select(total, append=False, copy=False)
    return [("count", render(count)), ("sum", render(nonopt))]


# ---- running a case --------------------------------------------------------------------------

@dataclass
class Failure:
    oracle: str                  # diff | type | partition | tlp | norec | accepts | error | timeout
    partitions: tuple            # the pqe partition count(s) involved
    role: str                    # which query of the case
    detail: str                  # mismatch description or error message
    error_class: str = ""

    @property
    def signature(self) -> tuple:
        if self.oracle in ("error", "timeout"):
            return (self.oracle, self.error_class, normalize_message(self.detail))
        if self.oracle == "type":
            return (self.oracle, type_signature(self.detail))
        if self.oracle == "accepts":
            return (self.oracle, self.error_class)
        return (self.oracle,)

    def to_json(self) -> dict:
        return {"oracle": self.oracle, "partitions": list(self.partitions), "role": self.role,
                "detail": self.detail, "error_class": self.error_class}


@dataclass
class CaseResult:
    case: Case
    queries: list = field(default_factory=list)          # (role, sql)
    discarded: str | None = None                         # why (DuckDB error, not applicable)
    duck: list = field(default_factory=list)             # Outcome per query
    pqe: dict = field(default_factory=dict)              # partitions -> [Outcome]
    checks: dict = field(default_factory=dict)           # oracle -> number of comparisons
    failures: list = field(default_factory=list)
    unsupported: list = field(default_factory=list)      # normalized messages
    errors: list = field(default_factory=list)           # pqe error classes (non-unsupported)

    def primary(self) -> Failure | None:
        order = ["error", "timeout", "diff", "accepts", "bind_order", "bind", "partition", "tlp",
                 "norec", "type"]
        fs = sorted(self.failures, key=lambda f: order.index(f.oracle))
        return fs[0] if fs else None


def run_case(eng: Engines, case: Case, partitions=None, stop_early: bool = False) -> CaseResult:
    res = CaseResult(case)
    try:
        res.queries = case.queries()
    except NotApplicable as e:
        res.discarded = f"not applicable: {e}"
        return res
    except Exception as e:  # noqa: BLE001 - sqlglot could not build the oracle queries
        res.discarded = f"cannot build queries: {type(e).__name__}: {e}"
        return res
    for _, sql in res.queries:
        d = eng.duck(sql)
        res.duck.append(d)
        # a DuckDB error about the data still tests pqe: it must not answer (diff cases only)
        if not d.ok and not (case.oracle == "diff" and d.error_class in DATA_ERRORS):
            res.discarded = f"duckdb: {d.error_class}: {d.message}"
            return res
    specs = [order_spec(sql) for _, sql in res.queries]
    parts = tuple(partitions or eng.partitions)
    checks = res.checks
    for p in parts:
        outs = []
        for (role, sql), d, spec in zip(res.queries, res.duck, specs):
            o = eng.pqe(p, sql)
            outs.append(o)
            if legit_difference(o, d):
                checks["legit"] = checks.get("legit", 0) + 1
            elif o.status == "unsupported":
                res.unsupported.append(normalize_message(o.message))
            elif not o.ok:
                if d.ok:
                    res.errors.append(o.error_class)
                    res.failures.append(Failure("timeout" if o.status == "timeout" else "error",
                                                (p,), role, o.message, o.error_class))
            elif not d.ok:
                checks["accepts"] = checks.get("accepts", 0) + 1
                res.failures.append(Failure(
                    "accepts", (p,), role, f"pqe answered {o.table.num_rows} rows where DuckDB "
                    f"raised {d.error_class}: {d.message}", d.error_class))
            else:
                checks["diff"] = checks.get("diff", 0) + 1
                why = check(o.table, d.table, sql)
                if why:
                    res.failures.append(Failure(why[0], (p,), role, why[1]))
            if stop_early and res.failures:
                break
        res.pqe[p] = outs
        # self-consistency oracles within one partition count
        if case.oracle in ("tlp", "norec") and len(outs) == 2 and all(o.ok for o in outs):
            checks[case.oracle] = checks.get(case.oracle, 0) + 1
            why = check(outs[1].table, outs[0].table, order_by=[], types=False, names=False)
            if why:
                res.failures.append(Failure(case.oracle, (p,), "/".join(r for r, _ in res.queries),
                                            why[1]))
        if stop_early and res.failures:
            return res
    # partition counts must agree with each other, types included
    if len(parts) > 1:
        first = parts[0]
        for p in parts[1:]:
            for i, (role, sql) in enumerate(res.queries):
                a, b = res.pqe[first][i], res.pqe[p][i]
                if a.ok and b.ok:
                    checks["partition"] = checks.get("partition", 0) + 1
                    why = check(b.table, a.table, sql)
                    if why:
                        res.failures.append(Failure("partition", (first, p), role, why[1]))
    return res


def reproduces(eng: Engines, case: Case, target: Failure) -> bool:
    """Does `case` still fail the way `target` did?"""
    parts = target.partitions
    res = run_case(eng, case, partitions=parts)
    if res.discarded:
        return False
    return any(f.signature == target.signature for f in res.failures)


def outcome_text(o: Outcome) -> str:
    return o.describe()
