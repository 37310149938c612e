"""DB-API parameters for the differential fuzzer (the "params" generator of `pqe.testing.fuzz`).

pqe binds `?` parameters (qmark style) into the parsed statement (`pqe.dbapi`); DuckDB binds
them itself (`execute(sql, params)`). A case runs statements through a `pqe.connect()` cursor
and through DuckDB with the same parameters and compares the results. Three forms:

- query:   a generated query (`fuzz_gen`) with some of its literals, at any depth (function
           arguments, arithmetic, CASE, IN lists, subqueries, HAVING, join conditions), made
           parameters. Also compared with pqe's answer to the literal text ("bind" oracle);
- nested:  a SELECT list of expressions built around parameters: lower(?), ? || ?, CASE WHEN
           ? THEN ? ELSE ? END, ? IN (?, ?), (SELECT ? ...), COALESCE(?, ?) ...;
- insert:  CREATE TABLE, then INSERT VALUES whose values are expressions of parameters
           (lower(?), ? + 1, CAST(? AS DECIMAL(38,10)) ...), UPDATE/DELETE with parameters in
           SET and WHERE; the table is compared after each statement.

The feature "params_bind_order" (on by default) allows statements whose placeholders sit at
different depths out of text order; disabled, only statements whose breadth-first tree order
is their text order are generated. pqe once bound `?` breadth-first (finding K1, fixed): a
failure that goes away with the parameters in that order is reported as 'bind_order'.

Parameter values come from the edge pools too: multi-byte text, quotes and SQL-looking text,
integers at the int64 limits, NaN/inf/-0.0, 38-digit decimals, NULL.
"""

from __future__ import annotations

import datetime
import decimal
import random
import re
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from .fuzz_data import SQL_TYPES, value_pool
from .fuzz_dml import state_query
from .fuzz_engine import DATA_ERRORS, Engines, check, legit_difference, normalize_message
from .fuzz_gen import Generator
from .fuzz_oracles import DIALECT, CaseResult, Failure, render

D = decimal.Decimal
EVIL_STR = ["'; DROP TABLE t0; --", "?", "$1", "\\", "''", "%_", "NULL", "a'b\"c", "--", "/*"]


@dataclass
class ParamCase:
    form: str                                   # query | nested | insert
    statements: list[tuple[str, list | None]]   # (SQL, parameters or None)
    literal_sql: str | None = None              # the query form's text with literals
    tables: dict = field(default_factory=dict)  # insert form: name -> [(column, SQL type)]
    db_key: str = ""                            # which database the query runs over
    features: list[str] = field(default_factory=list)
    index: int = -1
    generator: str = "params"
    oracle: str = "params"
    variant: str | None = None

    def to_json(self) -> dict:
        return {"generator": self.generator, "form": self.form, "index": self.index,
                "statements": [[s, _jsonable(p)] for s, p in self.statements],
                "literal_sql": self.literal_sql}

    def describe(self) -> str:
        out = []
        for s, p in self.statements:
            out.append(s + ";" + (f"   -- parameters: {p!r}" if p is not None else ""))
        return "\n".join(out)


def _jsonable(params):
    if params is None:
        return None
    return [v if isinstance(v, (str, bool, int, type(None))) else repr(v) for v in params]


# ---- parameter values --------------------------------------------------------------------

_CAT_TYPE = {"int": "BIGINT", "double": "DOUBLE", "decimal": "DECIMAL(10,2)", "str": "VARCHAR",
             "date": "DATE", "bool": "BOOLEAN", "ts": "TIMESTAMP"}


def param_value(rng: random.Random, cat: str, edge: bool = True):
    if rng.random() < 0.06:
        return None
    if cat == "str" and rng.random() < 0.15:
        return rng.choice(EVIL_STR)
    if cat == "decimal" and edge and rng.random() < 0.3:
        return rng.choice(value_pool(rng, "DECIMAL(38,10)", True))
    if cat == "int" and rng.random() < 0.5:
        return rng.choice([0, 1, 2, -1, 3, 7, 10])
    return rng.choice(value_pool(rng, _CAT_TYPE[cat], edge and rng.random() < 0.7))


# ---- the query form: literals become parameters -----------------------------------------

def _literal_value(node: exp.Expression):
    """(python value, node to replace) for a literal the generator writes, or None."""
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this, node
        text = node.this
        if re.fullmatch(r"-?\d+", text):
            return int(text), node
        if re.fullmatch(r"-?\d+\.\d+", text):
            return D(text), node
        return None
    if isinstance(node, exp.Boolean):
        if isinstance(node.parent, exp.Is):
            return None   # x IS TRUE: DuckDB's grammar has no IS ?
        return bool(node.this), node
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
        to = node.to.sql(dialect=DIALECT).upper()
        lit = node.this
        try:
            if to == "DOUBLE":
                return float(lit.this), node
            if to == "DATE" and lit.is_string:
                return datetime.date.fromisoformat(lit.this), node
            if to == "TIMESTAMP" and lit.is_string:
                return datetime.datetime.fromisoformat(lit.this), node
            if to.startswith("DECIMAL") and lit.is_string:
                return None   # DuckDB would type D('...') by its digits, not DECIMAL(38,10)
        except ValueError:
            return None
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        v = _literal_value(node.this)
        if v is not None and isinstance(v[0], (int, D)):
            return -v[0], node
    return None


def _in_forbidden_place(node: exp.Expression) -> bool:
    """ORDER BY ordinals, LIMIT/OFFSET, window frames, GROUP BY, types: no parameters."""
    child, parent = node, node.parent
    while parent is not None:
        if isinstance(parent, (exp.Order, exp.Limit, exp.Offset, exp.Group, exp.WindowSpec,
                               exp.DataType, exp.Interval)):
            return True
        if isinstance(parent, exp.Window) and child.arg_key in ("order", "partition_by",
                                                                "spec"):
            return True
        if isinstance(parent, exp.Ordered):
            return True
        child, parent = parent, parent.parent
    return False


def parameterize(sql: str, rng: random.Random, p: float = 0.5) -> tuple[str, list] | None:
    """`sql` with a random subset of its literals replaced by `?`: (text, parameters in text
    order), or None when there is no literal to replace."""
    tree = sqlglot.parse_one(sql, read=DIALECT)
    cands = []
    seen = set()
    for node in tree.walk():
        v = _literal_value(node)
        if v is None or _in_forbidden_place(node) or id(v[1]) in seen:
            continue
        if any(id(a) in seen for a in _ancestors(node)):
            continue
        if rng.random() < p:
            seen.add(id(v[1]))
            cands.append(v)
    if not cands:
        return None
    markers = {}
    for k, (value, node) in enumerate(cands):
        marker = exp.Anonymous(this=f"PQEPARAM{k}", expressions=[])
        markers[f"PQEPARAM{k}"] = value
        node.replace(marker)
    return _unmark(render(tree), markers)


def _ancestors(node):
    p = node.parent
    while p is not None:
        yield p
        p = p.parent


_MARK = re.compile(r"PQEPARAM(\d+)\(\)")


def _unmark(text: str, markers: dict) -> tuple[str, list]:
    params = [markers[f"PQEPARAM{m.group(1)}"] for m in _MARK.finditer(text)]
    return _MARK.sub("?", text), params


def mark(sql: str, params: list) -> str:
    """`?`s replaced by markers PQEPARAM<i>() (for AST reduction); `unmark` undoes it."""
    it = iter(range(len(params)))
    return re.sub(r"\?", lambda m: f"PQEPARAM{next(it)}()", sql)


def unmark(text: str, params: list) -> tuple[str, list]:
    return _unmark(text, {f"PQEPARAM{i}": v for i, v in enumerate(params)})


# ---- the nested form ---------------------------------------------------------------------

class NestedGen:
    def __init__(self, rng: random.Random, tables: dict, edge: bool):
        self.rng = rng
        self.params: list = []
        self.tables = tables   # name -> [Column]
        self.edge = edge

    def p(self, cat: str) -> str:
        self.params.append(param_value(self.rng, cat, self.edge))
        return "?"

    def small(self) -> str:
        """A parameter holding a small integer (SUBSTRING positions and lengths). Not negative:
        DuckDB counts a negative start from the end, pqe (like PostgreSQL and the standard)
        from before the first character; pqe refuses a negative length."""
        self.params.append(self.rng.choice([0, 1, 2, 3, 5]))
        return "?"

    def expr(self, cat: str, d: int = 0) -> str:
        r = self.rng
        if d >= 3 or r.random() < 0.25:
            return self.p(cat)
        e = lambda c: self.expr(c, d + 1)  # noqa: E731
        common = [
            lambda: f"CASE WHEN {e('bool')} THEN {e(cat)} ELSE {e(cat)} END",
            lambda: f"COALESCE({e(cat)}, {e(cat)})",
            lambda: f"NULLIF({e(cat)}, {e(cat)})",
        ]
        if self.tables and cat in ("int", "str", "double", "decimal", "date"):
            name = r.choice(list(self.tables))
            cols = [c for c in self.tables[name] if c.category == cat]
            if cols:
                c = r.choice(cols).name
                common.append(lambda: f"(SELECT MAX({name}.{c}) FROM {name} WHERE {name}.{c} "
                                      f"<> {e(cat)})")
        common.append(lambda: f"(SELECT {e(cat)})")
        by_cat = {
            "int": [lambda: f"({e('int')} + {e('int')})", lambda: f"({e('int')} * {e('int')})",
                    lambda: f"ABS({e('int')})", lambda: f"LENGTH({e('str')})",
                    lambda: f"({e('int')} % {e('int')})", lambda: f"({e('int')} / {e('int')})",
                    lambda: f"(- {e('int')})"],
            "double": [lambda: f"({e('double')} * {e('double')})",
                       lambda: f"({e('double')} + {e('int')})",
                       lambda: f"CAST({e('int')} AS DOUBLE)", lambda: f"ABS({e('double')})"],
            "decimal": [lambda: f"({e('decimal')} + {e('decimal')})",
                        lambda: f"({e('decimal')} * {e('int')})",
                        lambda: f"ROUND({e('decimal')}, 1)"],
            "str": [lambda: f"LOWER({e('str')})", lambda: f"UPPER({e('str')})",
                    lambda: f"({e('str')} || {e('str')})", lambda: f"TRIM({e('str')})",
                    lambda: f"SUBSTRING({e('str')}, {self.small()}, {self.small()})",
                    lambda: f"REPLACE({e('str')}, {e('str')}, {e('str')})",
                    lambda: f"CAST({e('int')} AS VARCHAR)"],
            "bool": [lambda: f"({e('int')} > {e('int')})", lambda: f"({e('str')} = {e('str')})",
                     lambda: f"({e('int')} IN ({e('int')}, {e('int')}, {e('int')}))",
                     lambda: f"({e('str')} LIKE {e('str')})",
                     lambda: f"({e('bool')} AND {e('bool')})", lambda: f"(NOT {e('bool')})",
                     lambda: f"({e('decimal')} BETWEEN {e('decimal')} AND {e('decimal')})",
                     lambda: f"({e('int')} IS NULL)",
                     lambda: f"({e('date')} < {e('date')})"],
            "date": [lambda: f"({e('date')} + {self.rng.randint(0, 40)})",
                     lambda: f"CAST({self.p('date')} AS DATE)"],
        }
        fn = r.choice(by_cat.get(cat, []) * 2 + common)
        return fn()


_NESTED_CATS = ["int", "int", "str", "str", "double", "decimal", "bool", "date"]


# ---- the generator -----------------------------------------------------------------------

class ParamGenerator:
    def __init__(self, rng: random.Random, db: dict, disabled=(), edge: bool = False):
        self.rng = rng
        self.db = db
        self.disabled = set(disabled)
        self.edge = edge
        self.features: list[str] = []

    def case(self) -> ParamCase:
        r = self.rng
        forms = [(f, w) for f, w in (("query", 4), ("nested", 3), ("insert", 3))
                 if f"params_{f}" not in self.disabled]
        form = r.choices([f for f, _ in forms], [w for _, w in forms])[0]
        self.features.append(f"params_{form}")
        for _ in range(40):
            c = getattr(self, form)()
            # disabled "params_bind_order": only statements whose placeholders pqe binds in
            # text order anyway (steers around pqe binding them breadth-first)
            if "params_bind_order" not in self.disabled or not any(
                    p and breadth_first_order(sql, p) for sql, p in c.statements):
                break
        c.features = sorted(set(self.features))
        return c

    def query(self) -> ParamCase:
        for _ in range(10):
            g = Generator(self.rng, self.db, disabled=self.disabled, edge=self.edge)
            sql = g.query().sql
            got = parameterize(sql, self.rng, self.rng.choice([0.3, 0.6, 1.0]))
            if got is not None:
                self.features.extend(g.features)
                text, params = got
                return ParamCase("query", [(text, params)], literal_sql=sql)
        return self.nested()

    def nested(self) -> ParamCase:
        from .fuzz_data import table_columns

        tables = {n: table_columns(t) for n, t in self.db.items()}
        ng = NestedGen(self.rng, tables, self.edge)
        items = [f"{ng.expr(self.rng.choice(_NESTED_CATS))} AS o{i}"
                 for i in range(self.rng.randint(1, 4))]
        sql = f"SELECT {', '.join(items)}"
        if tables and self.rng.random() < 0.4:
            name = self.rng.choice(list(tables))
            sql += f" FROM {name} WHERE {ng.expr('bool')}"
            self.features.append("params_from")
        return ParamCase("nested", [(sql, ng.params)])

    def insert(self) -> ParamCase:
        r = self.rng
        types = ["BIGINT", "INTEGER", "DOUBLE", "DECIMAL(10,2)", "DECIMAL(38,10)", "VARCHAR",
                 "DATE", "BOOLEAN"]
        cols = [(f"c{i}", r.choice(types)) for i in range(r.randint(1, 4))]
        stmts: list[tuple[str, list | None]] = [
            (f"CREATE TABLE p0 ({', '.join(f'{c} {t}' for c, t in cols)})", None)]
        for _ in range(r.randint(1, 3)):
            ng = NestedGen(r, {}, self.edge)
            rows = []
            for _ in range(r.choice([1, 1, 2, 3])):
                vals = []
                for _, ty in cols:
                    cat = SQL_TYPES[ty][1]
                    if ty == "DECIMAL(38,10)" and r.random() < 0.5:
                        vals.append(f"CAST({ng.p('decimal')} AS DECIMAL(38,10))")
                    elif r.random() < 0.5:
                        vals.append(ng.p(cat))
                    else:
                        vals.append(ng.expr(cat, 1))
                rows.append(f"({', '.join(vals)})")
            stmts.append((f"INSERT INTO p0 VALUES {', '.join(rows)}", ng.params))
        for _ in range(r.randint(0, 2)):
            ng = NestedGen(r, {}, self.edge)
            c, ty = r.choice(cols)
            w, wty = r.choice(cols)
            wcat = SQL_TYPES[wty][1]
            pred = (f"{w} IN ({ng.p(wcat)}, {ng.p(wcat)})" if wcat != "bool" else
                    f"{w} = {ng.p('bool')}")
            if r.random() < 0.6:
                stmts.append((f"UPDATE p0 SET {c} = {ng.expr(SQL_TYPES[ty][1], 1)} WHERE {pred}",
                              ng.params))
                self.features.append("params_update")
            else:
                stmts.append((f"DELETE FROM p0 WHERE {pred}", ng.params))
                self.features.append("params_delete")
        return ParamCase("insert", stmts, tables={"p0": cols})


# ---- running -----------------------------------------------------------------------------

def breadth_first_order(sql: str, params: list) -> list | None:
    """`params` permuted so that binding them to the placeholders in breadth-first order of
    the parse tree gives each placeholder its text-order value (None if that is the identity
    or the text does not parse). Used to tell pqe's placeholder-order bug from others.

    Each `?` is replaced by a marker call naming its text position; the markers sit where the
    placeholders would in the tree, so their breadth-first order is pqe's binding order."""
    from ..sql.parser import parse

    if not params:
        return None
    try:
        stmts = parse(mark(sql, params))
    except Exception:  # noqa: BLE001
        return None
    order = [int(n.name[len("PQEPARAM"):]) for st in stmts for n in st.find_all(exp.Anonymous)
             if n.name.upper().startswith("PQEPARAM")]
    if sorted(order) != list(range(len(params))) or order == sorted(order):
        return None
    return [params[k] for k in order]


def run_params(eng: Engines, case: ParamCase, db: dict, partitions=None,
               stop_early: bool = False) -> CaseResult:
    """Run a parameter case. A failure that goes away when pqe gets its parameters in the
    breadth-first order of the placeholders is reported as one 'bind_order' failure."""
    from .fuzz_reduce import failing_statement

    res = _run_params(eng, case, db, partitions)
    if res.failures and any(p and breadth_first_order(s, p) for s, p in case.statements):
        first = min(failing_statement(f.role) or 0 for f in res.failures)
        again = _run_params(eng, case, db, partitions, reorder=True)
        # reordered, the statements up to the first failing one pass (type differences aside:
        # DuckDB infers a parameter's type from its place, pqe from its value; but when the
        # failure is itself a type difference, the reordered run must not have one either:
        # one that remains is no binding-order bug)
        only_types = all(f.oracle == "type" for f in res.failures)
        if not again.discarded and not any(
                (failing_statement(f.role) or 0) <= first and (f.oracle != "type" or only_types)
                for f in again.failures):
            f = res.primary()
            res.failures = [Failure(
                "bind_order", f.partitions, f.role,
                "pqe answers like DuckDB only when the parameters are given in breadth-first "
                "order of the placeholders in the parse tree, not in text order (first "
                f"failure: {f.oracle} {f.error_class} {f.detail[:200]})")]
            res.errors = []
    return res


def _run_params(eng: Engines, case: ParamCase, db: dict, partitions=None,
                reorder: bool = False) -> CaseResult:
    res = CaseResult(case)
    parts = tuple(partitions or eng.partitions)
    eng.load(db if case.form != "insert" else {})
    checks = res.checks
    for i, (sql, params) in enumerate(case.statements):
        role = f"statement {i + 1}"
        res.queries.append((role, sql))
        d = eng.duck(sql, params)
        res.duck.append(d)
        given = (breadth_first_order(sql, params) or params) if reorder and params else params
        outs = {p: eng.pqe(p, sql, given) for p in parts}
        for p, o in outs.items():
            res.pqe.setdefault(p, []).append(o)
        if not d.ok and d.error_class not in DATA_ERRORS:
            if i == 0 or case.form == "insert" and i == 1:
                res.discarded = f"duckdb: {d.error_class}: {d.message}"
            break
        if any(legit_difference(o, d) for o in outs.values()):
            checks["legit"] = checks.get("legit", 0) + 1
            break
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
                    "accepts", (p,), role, f"pqe answered where DuckDB raised "
                    f"{d.error_class}: {d.message}", d.error_class))
                stop = True
            elif o.ok and d.ok and not sql.startswith("CREATE"):
                checks["diff"] = checks.get("diff", 0) + 1
                if case.form == "insert":
                    same = _count(o) == _count(d)
                    why = None if same else ("diff", f"pqe reports {_count(o)} rows affected, "
                                                     f"DuckDB {_count(d)}")
                else:
                    why = check(o.table, d.table, sql, types=False)
                    if why is None:
                        why = literal_types(eng, o, sql, params)
                if why:
                    res.failures.append(Failure(why[0], (p,), role, why[1]))
                    stop = True
        if stop:
            break
        if case.form == "query" and case.literal_sql and all(o.ok for o in outs.values()):
            # the same query with its literals written out: binding must not change the answer
            for p, o in outs.items():
                lit = eng.pqe(p, case.literal_sql)
                if lit.ok:
                    checks["bind"] = checks.get("bind", 0) + 1
                    why = check(o.table, lit.table, sql, types=False)
                    if why:
                        res.failures.append(Failure("bind", (p,), role, why[1]))
        if case.form == "insert" and i > 0:
            q = state_query("p0", case.tables["p0"])
            dq = eng.duck(q)
            for p in parts:
                o = eng.pqe(p, q)
                if o.ok and dq.ok:
                    checks["diff"] = checks.get("diff", 0) + 1
                    why = check(o.table, dq.table, order_by=list(range(len(case.tables["p0"]))))
                    if why:
                        res.failures.append(Failure(why[0], (p,), f"p0 after {role}", why[1]))
                        stop = True
                elif not o.ok and o.status != "unsupported":
                    res.failures.append(Failure("error", (p,), f"p0 after {role}", o.message,
                                                o.error_class))
                    stop = True
        if stop:
            break
    # partition counts agree (the query form; the others are checked against DuckDB each)
    if len(parts) > 1 and case.form != "insert":
        for k in range(len(res.queries)):
            a, b = res.pqe[parts[0]][k], res.pqe[parts[1]][k] if len(parts) > 1 else None
            if a.ok and b is not None and b.ok:
                checks["partition"] = checks.get("partition", 0) + 1
                why = check(b.table, a.table, res.queries[k][1])
                if why:
                    res.failures.append(Failure("partition", (parts[0], parts[1]),
                                                res.queries[k][0], why[1]))
    return res


def literal_types(eng: Engines, o, sql: str, params) -> tuple[str, str] | None:
    """pqe binds a parameter as a literal typed by its value (pqe.dbapi); DuckDB infers the
    type from the parameter's place. So result types are checked against DuckDB's answer to
    the text with the literals written out."""
    from .fuzz import inline

    d = eng.duck(inline(sql, params))
    if not d.ok or d.table.num_columns != o.table.num_columns:
        return None
    # a column of NULLs only: an untyped NULL parameter, typed differently by each engine
    keep = [i for i in range(o.table.num_columns)
            if not (o.table.column(i).null_count == o.table.num_rows
                    and d.table.column(i).null_count == d.table.num_rows)]
    why = (check(o.table.select(keep), d.table.select(keep), order_by=[], names=False)
           if keep else None)
    return why if why and why[0] == "type" else None


def _count(o):
    t = o.table
    if t is None or t.num_rows != 1 or t.num_columns != 1:
        return None
    return t.column(0)[0].as_py()
