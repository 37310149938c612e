"""DML sequences for the differential fuzzer (the "dml" generator of `pqe.testing.fuzz`).

A case is a script: CREATE TABLE with typed columns (some NOT NULL), INSERT VALUES, then a
random mix of INSERT VALUES (literals and expressions), INSERT SELECT (any generated query
with matching output types), UPDATE with expressions and subqueries (correlated too) in SET
and WHERE, and DELETE. Every statement runs on DuckDB and on pqe (each partition count, each
with its own catalog); after each one the fuzzer compares

- the rows-affected count (pqe returns it as the one-row result of the statement), and
- ``SELECT * FROM <table> ORDER BY 1, 2, ..., n`` of the table the statement wrote,

and stops at the first difference (the states have diverged). A statement DuckDB rejects with
a data error (overflow, conversion, NOT NULL) must fail on pqe too (the "accepts" oracle); one
DuckDB rejects for any other reason ends the script there.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .fuzz_data import SQL_TYPES, empty_table, sql_literal, value_pool
from .fuzz_engine import DATA_ERRORS, Engines, check, legit_difference, normalize_message
from .fuzz_gen import Col, Generator, Scope
from .fuzz_oracles import CaseResult, Failure

DML_TYPES = [("BIGINT", 4), ("INTEGER", 3), ("DOUBLE", 3), ("DECIMAL(10,2)", 2),
             ("DECIMAL(38,10)", 2), ("VARCHAR", 4), ("DATE", 1), ("BOOLEAN", 1),
             ("TIMESTAMP", 1), ("TIMESTAMPTZ", 0.3)]


@dataclass
class DmlCase:
    statements: list[str]
    tables: dict[str, list[tuple[str, str]]]     # name -> [(column, SQL type)]
    features: list[str] = field(default_factory=list)
    index: int = -1
    generator: str = "dml"
    oracle: str = "dml"
    variant: str | None = None
    base: str = ""
    pred: str | None = None

    def script(self) -> str:
        return ";\n".join(self.statements) + ";"

    def to_json(self) -> dict:
        return {"generator": self.generator, "oracle": self.oracle, "index": self.index,
                "statements": self.statements, "tables": self.tables}


def state_query(name: str, columns: list[tuple[str, str]]) -> str:
    return f"SELECT * FROM {name} ORDER BY {', '.join(str(i + 1) for i in range(len(columns)))}"


def written_table(stmt: str, tables) -> str | None:
    """The table a CREATE/INSERT/UPDATE/DELETE statement writes (by its leading words)."""
    words = stmt.replace("(", " ").split()
    up = [w.upper() for w in words]
    for kw, off in (("TABLE", 1), ("INTO", 1), ("UPDATE", 1), ("FROM", 1)):
        if kw in up[:3]:
            name = words[up.index(kw) + off]
            return name if name in tables else None
    return None


class DmlGenerator:
    def __init__(self, rng: random.Random, disabled=(), edge: bool | None = None):
        self.rng = rng
        self.disabled = set(disabled)
        self.edge = rng.random() < 0.4 if edge is None else edge
        self.features: list[str] = []
        self.tables: dict[str, list[tuple[str, str]]] = {}
        self.not_null: dict[str, set[str]] = {}
        self.pools: dict[tuple[str, str], list] = {}

    def ok(self, feature: str, p: float = 1.0) -> bool:
        if feature in self.disabled or self.rng.random() >= p:
            return False
        self.features.append(feature)
        return True

    def gen(self) -> Generator:
        """A query generator over the script's tables (their schemas)."""
        db = {n: empty_table(cols) for n, cols in self.tables.items()}
        g = Generator(self.rng, db, disabled=self.disabled, max_depth=2, edge=self.edge)
        return g

    def case(self) -> DmlCase:
        r = self.rng
        stmts = []
        for t in range(r.choice([1, 1, 2, 2, 3])):
            name = f"d{t}"
            types = [x for x, _ in DML_TYPES]
            weights = [w for _, w in DML_TYPES]
            cols = [(f"c{i}", r.choices(types, weights)[0]) for i in range(r.randint(1, 5))]
            self.tables[name] = cols
            nn = {c for c, _ in cols if r.random() < 0.12}
            self.not_null[name] = nn
            for c, ty in cols:
                self.pools[(name, c)] = value_pool(r, ty, self.edge)
            defs = ", ".join(f"{c} {ty}{' NOT NULL' if c in nn else ''}" for c, ty in cols)
            stmts.append(f"CREATE TABLE {name} ({defs})")
            if "tstz" in (SQL_TYPES[ty][1] for _, ty in cols):
                self.features.append("tstz_column")
        for name in self.tables:
            stmts.append(self.insert_values(name))
        for _ in range(r.randint(3, 8)):
            name = r.choice(list(self.tables))
            opts = [(3, "insert_values", self.insert_values), (2, "insert_select", self.insert_select),
                    (4, "update", self.update), (2, "delete", self.delete)]
            opts = [(w, f, fn) for w, f, fn in opts if f not in self.disabled]
            w, f, fn = r.choices(opts, [o[0] for o in opts])[0]
            self.features.append(f)
            stmts.append(fn(name))
        return DmlCase(stmts, dict(self.tables), features=sorted(set(self.features)))

    # ---- statements --------------------------------------------------------------------

    def value(self, name: str, col: str, ty: str) -> str:
        r = self.rng
        cat = SQL_TYPES[ty][1]
        x = r.random()
        if x < 0.08 and col not in self.not_null[name]:
            return "NULL"
        if x < 0.2 and self.ok("values_expr"):
            return self.gen().expr(cat, Scope([], allow_sub=self.ok("values_subquery", 0.2)), 1)
        v = r.choice(self.pools[(name, col)])
        return sql_literal(v, ty if r.random() < 0.3 or cat in ("ts", "tstz") else None)

    def insert_values(self, name: str) -> str:
        r = self.rng
        cols = list(self.tables[name])
        listed = ""
        if len(cols) > 1 and self.ok("insert_column_list", 0.3):
            keep = r.sample(cols, r.randint(1, len(cols)))
            # a NOT NULL column left out gets NULL: DuckDB rejects, pqe must too
            listed = f" ({', '.join(c for c, _ in keep)})"
            cols = keep
        rows = [f"({', '.join(self.value(name, c, ty) for c, ty in cols)})"
                for _ in range(r.choice([1, 1, 2, 3, 5]))]
        return f"INSERT INTO {name}{listed} VALUES {', '.join(rows)}"

    def insert_select(self, name: str) -> str:
        r = self.rng
        cols = list(self.tables[name])
        if len(cols) > 1 and self.ok("insert_column_list", 0.3):
            cols = r.sample(cols, r.randint(1, len(cols)))
        cats = [SQL_TYPES[ty][1] for _, ty in cols]
        g = self.gen()
        q = g.query(out=cats)
        self.features.extend(g.features)
        listed = f" ({', '.join(c for c, _ in cols)})" if cols != self.tables[name] else ""
        return f"INSERT INTO {name}{listed} {q.sql}"

    def _scope(self, name: str) -> Scope:
        # unqualified, a column name inside a subquery means the subquery's own column when
        # its table has one (every table has c0, c1, ...): SQL's scoping, tested as such
        prefix = "" if self.ok("dml_unqualified", 0.3) else f"{name}."
        return Scope([Col(f"{prefix}{c}", SQL_TYPES[ty][1]) for c, ty in self.tables[name]])

    def update(self, name: str) -> str:
        r = self.rng
        g = self.gen()
        sc = self._scope(name)
        targets = r.sample(self.tables[name], r.randint(1, min(2, len(self.tables[name]))))
        sets = ", ".join(f"{c} = {g.expr(SQL_TYPES[ty][1], sc, 1)}" for c, ty in targets)
        where = f" WHERE {g.pred(sc, 1)}" if r.random() < 0.85 else ""
        self.features.extend(g.features)
        return f"UPDATE {name} SET {sets}{where}"

    def delete(self, name: str) -> str:
        g = self.gen()
        where = f" WHERE {g.pred(self._scope(name), 1)}" if self.rng.random() < 0.9 else ""
        self.features.extend(g.features)
        return f"DELETE FROM {name}{where}"


# ---- running -----------------------------------------------------------------------------

def _count(o) -> object:
    t = o.table
    if t is None or t.num_rows != 1 or t.num_columns != 1:
        return None
    return t.column(0)[0].as_py()


def run_dml(eng: Engines, case: DmlCase, partitions=None, stop_early: bool = False) -> CaseResult:
    """Run the script on fresh engines, checking counts and table contents after each step."""
    res = CaseResult(case)
    parts = tuple(partitions or eng.partitions)
    eng.load({})
    checks = res.checks
    ran = 0
    for i, stmt in enumerate(case.statements):
        role = f"statement {i + 1}"
        res.queries.append((role, stmt))
        d = eng.duck(stmt)
        res.duck.append(d)
        outs = {p: eng.pqe(p, stmt) for p in parts}
        for p, o in outs.items():
            res.pqe.setdefault(p, []).append(o)
        if not d.ok and d.error_class not in DATA_ERRORS:
            if ran == 0:
                res.discarded = f"duckdb: {d.error_class}: {d.message}"
            break   # a statement DuckDB cannot run: the script ends here
        if any(legit_difference(o, d) for o in outs.values()):
            checks["legit"] = checks.get("legit", 0) + 1
            break   # a difference by design: the states may differ from here on
        stop = False
        for p, o in outs.items():
            if o.status == "unsupported":
                res.unsupported.append(normalize_message(o.message))
                stop = True
            elif not o.ok and d.ok:
                res.errors.append(o.error_class)
                res.failures.append(Failure("timeout" if o.status == "timeout" else "error",
                                            (p,), role, o.message, o.error_class))
                stop = True
            elif o.ok and not d.ok:
                checks["accepts"] = checks.get("accepts", 0) + 1
                res.failures.append(Failure(
                    "accepts", (p,), role, f"pqe ran the statement where DuckDB raised "
                    f"{d.error_class}: {d.message}", d.error_class))
                stop = True
            elif o.ok and d.ok and not stmt.upper().startswith("CREATE"):
                checks["count"] = checks.get("count", 0) + 1
                if _count(o) != _count(d):
                    res.failures.append(Failure(
                        "diff", (p,), role + " (rows affected)",
                        f"pqe reports {_count(o)} rows affected, DuckDB {_count(d)}"))
                    stop = True
        if stop:
            break
        ran += 1
        name = written_table(stmt, case.tables)
        if name is None:
            continue
        q = state_query(name, case.tables[name])
        d = eng.duck(q)
        if not d.ok:
            res.discarded = f"duckdb state query: {d.error_class}: {d.message}"
            break
        for p in parts:
            o = eng.pqe(p, q)
            if o.status == "unsupported":
                res.unsupported.append(normalize_message(o.message))
                stop = True
            elif not o.ok:
                res.errors.append(o.error_class)
                res.failures.append(Failure("error", (p,), f"{name} after {role}: {q}",
                                            o.message, o.error_class))
                stop = True
            else:
                checks["diff"] = checks.get("diff", 0) + 1
                why = check(o.table, d.table, order_by=list(range(len(case.tables[name]))))
                if why:
                    res.failures.append(Failure(why[0], (p,), f"{name} after {role}",
                                                why[1]))
                    stop = True
        if stop:
            break
    return res
