"""Shrinking a failing fuzz case to a minimal reproduction (`pqe.testing.fuzz`).

Greedy, test-driven reduction: on the query's sqlglot AST, try removing list items and
optional clauses, replacing a node by one of its sub-expressions, by NULL, or a predicate by
TRUE/FALSE, simplifying join kinds; then drop table rows (delta debugging), unused tables and
columns. A candidate is kept only when DuckDB still accepts every query of the case and pqe
still fails the same way (same oracle; same error class and message shape for errors).
Window ORDER BY clauses are never touched (dropping keys could make row_number() and friends
nondeterministic); LIMIT is compared tie-aware (`pqe.testing.compare.order_spec`).
"""

from __future__ import annotations

import functools
import time
from dataclasses import replace

import pyarrow as pa
from sqlglot import exp

from .fuzz_engine import Engines
from .fuzz_oracles import Case, Failure, parse, render, run_case

_OPTIONAL_SKIP = {"this", "expression"}
_PREDICATES = (exp.Predicate, exp.Connector, exp.Not, exp.Exists, exp.In, exp.Between, exp.Is,
               exp.Boolean)


def _protected(node: exp.Expression) -> bool:
    """Inside a window's ORDER BY, or a type: leave alone."""
    child = node
    parent = node.parent
    if isinstance(node, exp.DataType):
        return True
    while parent is not None:
        if isinstance(parent, exp.DataType):
            return True
        if isinstance(parent, exp.Window) and child.arg_key == "order":
            return True
        child, parent = parent, parent.parent
    return False


def _replace(node: exp.Expression, new: exp.Expression) -> None:
    node.replace(new)


def _edits(node: exp.Expression):
    """Candidate edits of `node` (each a function mutating a node in a copy), simplest first."""
    parent = node.parent
    key = node.arg_key
    if parent is not None:
        siblings = parent.args.get(key)
        if isinstance(siblings, list):
            if len(siblings) > 1 or key in ("joins", "partition_by", "laterals"):
                yield "remove", lambda n: n.pop()
        elif key not in _OPTIONAL_SKIP:
            yield "remove", lambda n: n.parent.set(n.arg_key, None)
    if isinstance(node, exp.Join):
        if node.args.get("side"):
            yield "inner", lambda n: n.set("side", None)
        if node.args.get("kind"):
            yield "nokind", lambda n: n.set("kind", None)
    if isinstance(node, exp.Select) and node.args.get("distinct"):
        yield "nodistinct", lambda n: n.set("distinct", None)
    if isinstance(node, exp.SetOperation) and node.args.get("distinct") is False:
        pass
    # replace by a sub-expression (children, then grandchildren)
    for i in range(len(_subs(node))):
        yield f"lift{i}", functools.partial(_lift, i=i)
    if isinstance(node, exp.Condition) and not isinstance(node, (exp.Null, exp.Literal, exp.Column,
                                                                 exp.Boolean, exp.Star)):
        if isinstance(node, _PREDICATES):
            yield "true", lambda n: _replace(n, exp.true())
            yield "false", lambda n: _replace(n, exp.false())
        yield "null", lambda n: _replace(n, exp.Null())


def _lift(node: exp.Expression, i: int) -> None:
    node.replace(_subs(node)[i].copy())


def _subs(node: exp.Expression) -> list[exp.Expression]:
    """Sub-expressions that could stand in for `node`: children, then grandchildren."""
    subs = [c for c in node.iter_expressions()
            if isinstance(c, (exp.Condition, exp.Query, exp.Subquery))]
    for child in list(node.iter_expressions()):
        for grand in child.iter_expressions():
            if isinstance(grand, (exp.Condition, exp.Query)) and not any(grand is s for s in subs):
                subs.append(grand)
    return subs


class Flaky(Exception):
    """The failure does not reproduce: a race or other nondeterminism in pqe."""


class Reducer:
    def __init__(self, eng: Engines, target: Failure, budget_s: float = 120.0,
                 max_tests: int = 1500):
        self.eng = eng
        self.target = target
        self.deadline = time.monotonic() + budget_s
        self.max_tests = max_tests
        self.tests = 0
        self.seen: set = set()

    def out_of_budget(self) -> bool:
        return self.tests >= self.max_tests or time.monotonic() > self.deadline

    def check(self, case: Case) -> bool:
        self.tests += 1
        res = run_case(self.eng, case, partitions=self.target.partitions, stop_early=False)
        if res.discarded:
            return False
        return any(f.signature == self.target.signature for f in res.failures)

    # ---- queries -----------------------------------------------------------------------

    def reduce_sql(self, case: Case) -> Case:
        fields = ["base"] + (["pred"] if case.pred is not None else [])
        changed = True
        while changed and not self.out_of_budget():
            changed = False
            for f in fields:
                new = self._reduce_field(case, f)
                if new is not None:
                    case, changed = new, True
        return case

    def _reduce_field(self, case: Case, field: str) -> Case | None:
        try:
            tree = parse(getattr(case, field))
        except Exception:  # noqa: BLE001
            return None
        improved = False
        i = 0
        while not self.out_of_budget():
            nodes = list(tree.walk())
            if i >= len(nodes):
                break
            node = nodes[i]
            accepted = False
            if not _protected(node):
                if node is tree:  # the root can only be replaced by a sub-expression
                    cands = [(f"root{k}", None) for k in range(len(_subs(node)))]
                else:
                    cands = list(_edits(node))
                for name, edit in cands:
                    if self.out_of_budget():
                        break
                    cand = tree.copy()
                    try:
                        if edit is None:
                            cand = _subs(cand)[int(name[4:])].copy()
                        else:
                            edit(list(cand.walk())[i])
                        sql = render(cand)
                    except Exception:  # noqa: BLE001, S112 - an edit sqlglot cannot express
                        continue
                    if (field, sql) in self.seen or sql == getattr(case, field):
                        continue
                    self.seen.add((field, sql))
                    new_case = replace(case, **{field: sql})
                    if self.check(new_case):
                        case, tree, accepted, improved = new_case, parse(sql), True, True
                        break
            if not accepted:
                i += 1
        return case if improved else None

    # ---- data --------------------------------------------------------------------------

    def reduce_data(self, case: Case, db: dict[str, pa.Table]) -> dict[str, pa.Table]:
        def ok(new_db) -> bool:
            self.eng.load(new_db)
            return self.check(case)

        db = dict(db)
        for name in list(db):  # unused tables
            if self.out_of_budget():
                break
            trial = {k: v for k, v in db.items() if k != name}
            if ok(trial):
                db = trial
        for name in list(db):  # rows
            rows = list(range(db[name].num_rows))
            chunk = max(1, len(rows) // 2)
            while rows and not self.out_of_budget():
                i = 0
                while i < len(rows) and not self.out_of_budget():
                    cand = rows[:i] + rows[i + chunk:]
                    trial = dict(db)
                    trial[name] = db[name].take(pa.array(cand, pa.int64()))
                    if ok(trial):
                        rows = cand
                        db = trial
                        rows = list(range(db[name].num_rows))
                    else:
                        i += chunk
                if chunk == 1:
                    break
                chunk = max(1, chunk // 2)
        for name in list(db):  # columns
            for col in list(db[name].column_names):
                if self.out_of_budget() or db[name].num_columns <= 1:
                    break
                trial = dict(db)
                trial[name] = db[name].drop_columns([col])
                if ok(trial):
                    db = trial
        self.eng.load(db)
        return db


def reduce_case(eng: Engines, case: Case, db: dict[str, pa.Table], target: Failure,
                budget_s: float = 120.0, max_tests: int = 1500) -> tuple[Case, dict, int]:
    """Shrink (case, db) keeping `target`'s failure. Leaves `eng` loaded with the reduced db.
    Returns (case, db, number of tests run)."""
    r = Reducer(eng, target, budget_s, max_tests)
    eng.load(db)
    if not any(r.check(case) for _ in range(3)):
        raise Flaky(f"case {case.index} did not fail again in 3 runs")
    case = r.reduce_sql(case)
    db = r.reduce_data(case, db)
    case = r.reduce_sql(case)
    return case, db, r.tests


# ---- scripts (the dml and params generators) ---------------------------------------------

def shrink_sql(sql: str, test, out_of_budget, seen: set | None = None) -> str:
    """Greedy AST reduction of one SQL text: the simplest edit `test(candidate)` still accepts
    is kept, until no edit helps or `out_of_budget()`."""
    seen = set() if seen is None else seen
    try:
        tree = parse(sql)
    except Exception:  # noqa: BLE001 - not SQL sqlglot reads: leave it
        return sql
    i = 0
    while not out_of_budget():
        nodes = list(tree.walk())
        if i >= len(nodes):
            break
        node = nodes[i]
        accepted = False
        if not _protected(node) and node is not tree:
            for _name, edit in _edits(node):
                if out_of_budget():
                    break
                cand = tree.copy()
                try:
                    edit(list(cand.walk())[i])
                    text = render(cand)
                except Exception:  # noqa: BLE001, S112 - an edit sqlglot cannot express
                    continue
                if text in seen or text == sql:
                    continue
                seen.add(text)
                if test(text):
                    sql, tree, accepted = text, parse(text), True
                    break
        if not accepted:
            i += 1
    return sql


def failing_statement(role: str) -> int | None:
    """'statement 4', 'd0 after statement 4 (rows affected)' -> 3 (0-based)."""
    import re

    m = re.search(r"statement (\d+)", role)
    return int(m.group(1)) - 1 if m else None


def reduce_script(statements: list, fails, budget_s: float = 60.0,
                  max_tests: int = 600, shrink=None) -> tuple[list, int]:
    """Shrink a list of statements while `fails(statements)` holds: drop statements after
    the failing one and every statement not needed, then simplify each with `shrink(stmt,
    test)` (an AST reduction). Returns (statements, tests run)."""
    deadline = time.monotonic() + budget_s
    tests = [0]

    def out():
        return tests[0] >= max_tests or time.monotonic() > deadline

    def check(cand) -> bool:
        tests[0] += 1
        return fails(cand)

    if not check(statements):
        raise Flaky("the script did not fail again")
    i = len(statements) - 1
    while i >= 0 and not out():          # statements, last first: later ones depend on earlier
        cand = statements[:i] + statements[i + 1:]
        if cand and check(cand):
            statements = cand
        i -= 1
    if shrink is not None:
        for k in range(len(statements)):
            if out():
                break

            def test(new, k=k):
                cand = statements[:k] + [new] + statements[k + 1:]
                return check(cand)

            statements = statements[:k] + [shrink(statements[k], test, out)] + statements[k + 1:]
    return statements, tests[0]
