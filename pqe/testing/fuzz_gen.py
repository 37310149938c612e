"""Random, type-correct SQL queries for the differential fuzzer (`pqe.testing.fuzz`).

Queries are built as text from typed templates: every expression is generated for a wanted
*category* (int, double, decimal, str, date, bool), so both pqe and DuckDB accept them. Column
references are always qualified with a unique alias (a1, a2, ...) so correlated subqueries are
unambiguous. Nondeterminism is avoided by construction: LIMIT only under an ORDER BY over every
output column, row_number()/lag()/ROWS frames only over an ORDER BY of every column in scope.

Each template has a *feature* name (e.g. "cast_double_int", "full_join", "window_rows");
`Generator(disabled={...})` skips features, which lets a long run steer around a known bug.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

import pyarrow as pa

from .fuzz_data import table_columns

NUMERIC = ("int", "double", "decimal")
CATEGORIES = ("int", "double", "decimal", "str", "date", "bool", "ts", "tstz")
CAST_NAMES = {"int": "BIGINT", "double": "DOUBLE", "decimal": "DECIMAL(10,2)", "str": "VARCHAR",
              "date": "DATE", "bool": "BOOLEAN", "ts": "TIMESTAMP", "tstz": "TIMESTAMPTZ"}

INT_LITS = [0, 1, 2, 3, 5, 10, -1, -3, 100]
DOUBLE_LITS = ["0.5", "1.0", "2.5", "-1.5", "0.0", "10.0", "0.25"]
DECIMAL_LITS = ["1.50", "0.00", "2.25", "-1.00", "0.01", "3.33", "10.10"]
STR_LITS = ["", "a", "b", "ab", "A", "abc", "a_c", "é", " a", "xyz", "b%"]
DATE_LITS = ["2020-01-01", "2020-01-02", "2019-12-31", "2020-02-29", "1970-01-01", "2024-06-15"]
LIKE_PATTERNS = ["a%", "%b", "_", "a_c", "%", "", "A%", "%a%", "_b%", "a", "%c"]
TS_LITS = ["2020-01-01 00:00:00", "2020-01-01 12:30:00", "2019-12-31 23:59:59",
           "1970-01-01 00:00:00", "2024-06-15 08:15:30.5"]
# edge mode (the "values" generator): literals at the limits, multi-byte text
EDGE_INT_LITS = INT_LITS + [2**62, 2**63 - 1, -(2**63 - 1), 2**31 - 1, -(2**31), 2**31]
EDGE_DOUBLE_LITS = DOUBLE_LITS + ["'NaN'", "'Infinity'", "'-Infinity'", "'-0.0'", "1e308",
                                  "5e-324", "0.1"]
EDGE_DECIMAL_LITS = DECIMAL_LITS + [
    "CAST('9999999999999999999999999999.9999999999' AS DECIMAL(38,10))",
    "CAST('-0.0000000001' AS DECIMAL(38,10))", "CAST('12345678901234567890.5' AS DECIMAL(38,10))",
    "99999999.99"]
EDGE_STR_LITS = STR_LITS + ["漢字", "😀", "👨‍👩‍👧", "e\u0301", "\u00e9", "ß", "ﬁ", "İ", "ǅ", "ＡＢＣ",
                            "עברית", "''", "x😀y", "\u200b", "a\tb"]
EDGE_LIKE_PATTERNS = LIKE_PATTERNS + ["_😀%", "%字", "%\u0301", "__", "%ß%", "漢_"]


@dataclass
class Col:
    sql: str
    cat: str


@dataclass
class Scope:
    """What an expression may reference."""
    cols: list[Col]                        # row-level columns in scope
    outer: list[Col] = field(default_factory=list)  # correlated columns of enclosing queries
    keys: list[Col] | None = None          # group keys: set in an aggregate context
    allow_sub: bool = True                 # subqueries allowed here
    allow_agg_args: bool = False

    @property
    def agg(self) -> bool:
        return self.keys is not None


@dataclass
class Select:
    """A generated query and what its output looks like."""
    sql: str
    out: list[str]                          # output categories
    names: list[str]                        # output aliases
    ordered: bool = False                   # has a top-level ORDER BY over all outputs
    keys: list[Col] = field(default_factory=list)  # GROUP BY keys of an aggregate query


class Generator:
    def __init__(self, rng: random.Random, db: dict[str, pa.Table], disabled=(),
                 max_depth: int = 3, edge: bool = False):
        self.rng = rng
        self.edge = edge
        self.int_lits = EDGE_INT_LITS if edge else INT_LITS
        self.double_lits = EDGE_DOUBLE_LITS if edge else DOUBLE_LITS
        self.decimal_lits = EDGE_DECIMAL_LITS if edge else DECIMAL_LITS
        self.str_lits = EDGE_STR_LITS if edge else STR_LITS
        self.like_patterns = EDGE_LIKE_PATTERNS if edge else LIKE_PATTERNS
        self.db = db
        self.tables = {name: table_columns(t) for name, t in db.items()}
        self.disabled = set(disabled)
        self.max_depth = max_depth
        self.n_alias = 0
        self.sub_depth = 0
        self.ctes: list[tuple[str, str]] = []
        self.features: list[str] = []

    # ---- helpers -----------------------------------------------------------------------

    def ok(self, feature: str, p: float = 1.0) -> bool:
        """Use `feature` with probability p (never when disabled); records it when used."""
        if feature in self.disabled or self.rng.random() >= p:
            return False
        self.features.append(feature)
        return True

    def alias(self) -> str:
        self.n_alias += 1
        return f"a{self.n_alias}"

    def pick(self, options, default=None):
        """Choose among (weight, feature-or-None, fn) triples, skipping disabled features."""
        opts = [(w, f, fn) for w, f, fn in options if w > 0 and (f is None or f not in self.disabled)]
        if not opts:
            return default()
        total = sum(w for w, _, _ in opts)
        r = self.rng.random() * total
        for w, f, fn in opts:
            r -= w
            if r <= 0:
                if f is not None:
                    self.features.append(f)
                return fn()
        w, f, fn = opts[-1]
        return fn()

    def cat_in(self, sc: Scope, allow_bool: bool = True) -> str:
        """A category, usually one that has columns in scope."""
        cols = sc.cols + (sc.keys or [])
        cats = [c.cat for c in cols if allow_bool or c.cat != "bool"]
        if cats and self.rng.random() < 0.8:
            return self.rng.choice(cats)
        return self.any_cat(allow_bool)

    def any_cat(self, allow_bool: bool = True) -> str:
        cats = ["int"] * 4 + ["double"] * 2 + ["decimal"] * 2 + ["str"] * 3 + ["date"]
        if allow_bool:
            cats.append("bool")
        return self.rng.choice(cats)

    # ---- literals ----------------------------------------------------------------------

    def lit(self, cat: str, allow_null: bool = True) -> str:
        r = self.rng
        if allow_null and r.random() < 0.04:
            return f"CAST(NULL AS {self.cast_name(cat)})"
        if cat == "int":
            v = r.choice(self.int_lits)
            return f"({v})" if v < 0 else str(v)
        if cat == "double":
            v = r.choice(self.double_lits)
            return f"CAST({v} AS DOUBLE)"
        if cat == "decimal":
            v = r.choice(self.decimal_lits)
            return f"({v})" if v.startswith("-") else v
        if cat == "str":
            return "'" + r.choice(self.str_lits) + "'"
        if cat == "date":
            return f"DATE '{r.choice(DATE_LITS)}'"
        if cat == "ts":
            return f"TIMESTAMP '{r.choice(TS_LITS)}'"
        if cat == "tstz":
            return f"TIMESTAMPTZ '{r.choice(TS_LITS)}+00'"
        return r.choice(["TRUE", "FALSE"])

    def cast_name(self, cat: str) -> str:
        if cat == "int":
            return self.rng.choice(["BIGINT", "INTEGER"])
        return CAST_NAMES[cat]

    # ---- expressions -------------------------------------------------------------------

    def leaf(self, cat: str, sc: Scope) -> str:
        r = self.rng
        if sc.agg:
            keys = [k for k in sc.keys if k.cat == cat]
            opts = [(3, None, lambda: self.agg_call(cat, sc)), (1, None, lambda: self.lit(cat))]
            if keys:
                opts.append((3, None, lambda: r.choice(keys).sql))
            return self.pick(opts)
        cols = [c for c in sc.cols if c.cat == cat]
        outer = [c for c in sc.outer if c.cat == cat]
        if outer and r.random() < 0.3:
            self.features.append("correlated")
            return r.choice(outer).sql
        if cols and r.random() < 0.85:
            return r.choice(cols).sql
        return self.lit(cat)

    def expr(self, cat: str, sc: Scope, d: int = 0) -> str:
        if cat == "bool":  # past the depth limit a leaf: pred -> comparison -> expr(bool) ends
            return self.leaf(cat, sc) if d > self.max_depth else self.pred(sc, d)
        if d >= self.max_depth or self.rng.random() < 0.4 + 0.15 * d:
            return self.leaf(cat, sc)
        e = lambda c: (lambda: self.expr(c, sc, d + 1))
        common = [
            (2, "case", lambda: self.case(cat, sc, d)),
            (1, "simple_case", lambda: self.simple_case(cat, sc, d)),
            (2, "coalesce", lambda: f"COALESCE({e(cat)()}, {e(cat)()})"),
            (1, "nullif", lambda: f"NULLIF({e(cat)()}, {e(cat)()})"),
            (1 if sc.allow_sub and self.sub_depth < 2 else 0, "scalar_subquery",
             lambda: self.scalar_subquery(cat, sc)),
        ]
        num = self.rng.choice(NUMERIC)
        if cat == "int":
            opts = [
                (4, None, lambda: f"({e('int')()} {self.rng.choice(['+', '-'])} {e('int')()})"),
                (2, "mul", lambda: f"({e('int')()} * {self.lit('int', False)})"),
                (2, "int_div", lambda: f"({e('int')()} / {e('int')()})"),
                (2, "mod", lambda: f"({e('int')()} % {e('int')()})"),
                (1, "neg", lambda: f"(- {e('int')()})"),
                (1, "abs", lambda: f"ABS({e('int')()})"),
                (1, "cast_decimal_int", lambda: f"CAST({e('decimal')()} AS {self.cast_name('int')})"),
                (1, "cast_double_int", lambda: f"CAST({e('double')()} AS {self.cast_name('int')})"),
                (1, "cast_bool_int", lambda: f"CAST({e('bool')()} AS INTEGER)"),
                (1, "length", lambda: f"LENGTH({e('str')()})"),
                (1, "extract", lambda: f"EXTRACT({self.rng.choice(['YEAR', 'MONTH', 'DAY'])} FROM {e('date')()})"),
            ]
        elif cat == "double":
            opts = [
                (3, None, lambda: f"({e('double')()} {self.rng.choice(['+', '-', '*'])} {e(num)()})"),
                (2, "div", lambda: f"({e(num)()} / {e(self.rng.choice(['double', 'decimal']))()})"),
                # DuckDB gives NaN for a DOUBLE % 0 (pqe: NULL): keep zero divisors out
                (1, "mod_double", lambda: f"({e('double')()} % NULLIF({e('double')()}, 0))"),
                (2, "cast_double", lambda: f"CAST({e(self.rng.choice(['int', 'decimal']))()} AS DOUBLE)"),
                (1, "neg", lambda: f"(- {e('double')()})"),
                (1, "abs", lambda: f"ABS({e('double')()})"),
                (1, "floor_ceil", lambda: f"{self.rng.choice(['FLOOR', 'CEIL'])}({e('double')()})"),
            ]
        elif cat == "decimal":
            opts = [
                (3, None, lambda: f"({e('decimal')()} {self.rng.choice(['+', '-'])} {e(self.rng.choice(['decimal', 'int']))()})"),
                (2, "mul_decimal", lambda: f"({e('decimal')()} * {self.rng.choice([self.lit('int', False), self.lit('decimal', False)])})"),
                (1, "mod_decimal", lambda: f"({e('decimal')()} % {e('decimal')()})"),
                (1, "neg", lambda: f"(- {e('decimal')()})"),
                (1, "abs", lambda: f"ABS({e('decimal')()})"),
                (1, "round_decimal", lambda: f"ROUND({e('decimal')()}, {self.rng.choice([0, 1])})"),
                (1, "cast_int_decimal", lambda: f"CAST({e('int')()} AS DECIMAL(10,2))"),
            ]
        elif cat == "str":
            opts = [
                (2, "upper_lower", lambda: f"{self.rng.choice(['UPPER', 'LOWER'])}({e('str')()})"),
                (2, "concat", lambda: f"({e('str')()} || {e('str')()})"),
                (1, "substring", lambda: f"SUBSTRING({e('str')()}, {self.rng.randint(1, 3)}, {self.rng.randint(0, 3)})"),
                (1, "trim", lambda: f"TRIM({e('str')()})"),
                (1, "replace", lambda: f"REPLACE({e('str')()}, '{self.rng.choice(['a', 'b'])}', '{self.rng.choice(['', 'x'])}')"),
                (1, "cast_int_str", lambda: f"CAST({e('int')()} AS VARCHAR)"),
                (1, "cast_date_str", lambda: f"CAST({e('date')()} AS VARCHAR)"),
                (1, "cast_decimal_str", lambda: f"CAST({e('decimal')()} AS VARCHAR)"),
                (1, "cast_bool_str", lambda: f"CAST({e('bool')()} AS VARCHAR)"),
                (0.5, "cast_ts_str", lambda: f"CAST({e('ts')()} AS VARCHAR)"),
            ]
        elif cat == "date":
            opts = [
                (2, "date_plus_int", lambda: f"({e('date')()} {self.rng.choice(['+', '-'])} {self.rng.randint(0, 40)})"),
                (1, "cast_str_date", lambda: f"CAST('{self.rng.choice(DATE_LITS)}' AS DATE)"),
                (0.5, "cast_ts_date", lambda: f"CAST({e('ts')()} AS DATE)"),
            ]
        elif cat == "ts":
            opts = [
                (1, "cast_date_ts", lambda: f"CAST({e('date')()} AS TIMESTAMP)"),
                (1, "cast_str_ts", lambda: f"CAST('{self.rng.choice(TS_LITS)}' AS TIMESTAMP)"),
            ]
        else:  # tstz: pqe has no TIMESTAMPTZ type yet; columns pass through, the rest refuses
            opts = [
                (1, "cast_ts_tstz", lambda: f"CAST({e('ts')()} AS TIMESTAMPTZ)"),
            ]
        return self.pick(opts + common, default=lambda: self.leaf(cat, sc))

    def case(self, cat: str, sc: Scope, d: int) -> str:
        n = self.rng.randint(1, 2)
        whens = " ".join(f"WHEN {self.pred(sc, d + 1)} THEN {self.expr(cat, sc, d + 1)}"
                         for _ in range(n))
        els = f" ELSE {self.expr(cat, sc, d + 1)}" if self.rng.random() < 0.7 else ""
        return f"CASE {whens}{els} END"

    def simple_case(self, cat: str, sc: Scope, d: int) -> str:
        op = self.any_cat(allow_bool=False)
        whens = " ".join(f"WHEN {self.lit(op, False)} THEN {self.expr(cat, sc, d + 1)}"
                         for _ in range(self.rng.randint(1, 2)))
        els = f" ELSE {self.expr(cat, sc, d + 1)}" if self.rng.random() < 0.7 else ""
        return f"CASE {self.expr(op, sc, d + 1)} {whens}{els} END"

    # ---- predicates --------------------------------------------------------------------

    def cmp_pair(self, sc: Scope, d: int) -> tuple[str, str, str]:
        cat = self.cat_in(sc)
        lhs = self.expr(cat, sc, d + 1)
        rcat = self.rng.choice(NUMERIC) if cat in NUMERIC else cat
        return cat, lhs, self.expr(rcat, sc, d + 1)

    def pred(self, sc: Scope, d: int = 0) -> str:
        r = self.rng
        if d >= self.max_depth or r.random() < 0.15 + 0.1 * d:
            bools = [c for c in (sc.keys if sc.agg else sc.cols) if c.cat == "bool"]
            if bools and r.random() < 0.5:
                return r.choice(bools).sql
            if sc.agg and r.random() < 0.1:
                return self.agg_call("bool", sc)
            if r.random() < 0.15:
                return r.choice(["TRUE", "FALSE", "CAST(NULL AS BOOLEAN)"])
            _, lhs, rhs = self.cmp_pair(sc, self.max_depth)
            return f"({lhs} {r.choice(['=', '<>', '<', '<=', '>', '>='])} {rhs})"
        p = lambda: self.pred(sc, d + 1)
        sub_ok = sc.allow_sub and self.sub_depth < 2
        opts = [
            (5, None, lambda: self.comparison(sc, d)),
            (3, None, lambda: f"({p()} {r.choice(['AND', 'OR'])} {p()})"),
            (2, "not", lambda: f"(NOT {p()})"),
            (2, "is_null", lambda: f"({self.expr(self.cat_in(sc), sc, d + 1)} IS {r.choice(['', 'NOT '])}NULL)"),
            (1, "is_distinct", lambda: "({1} IS {3}DISTINCT FROM {2})".format(*self.cmp_pair(sc, d), r.choice(["", "NOT "]))),
            (2, "between", lambda: self.between(sc, d)),
            (2, "in_list", lambda: self.in_list(sc, d)),
            (2, "like", lambda: f"({self.expr('str', sc, d + 1)} {r.choice(['LIKE', 'NOT LIKE'])} '{r.choice(self.like_patterns)}')"),
            (1, "is_true", lambda: f"({p()} IS {r.choice(['', 'NOT '])}{r.choice(['TRUE', 'FALSE'])})"),
            (1 if sub_ok else 0, "exists", lambda: f"({r.choice(['', 'NOT '])}EXISTS ({self.subquery(sc, 'exists')}))"),
            (1 if sub_ok else 0, "in_subquery", lambda: self.in_subquery(sc, d)),
            (1 if sub_ok else 0, "cmp_subquery", lambda: self.cmp_subquery(sc, d)),
            (0.3 if sub_ok else 0, "any_all", lambda: self.any_all(sc, d)),
        ]
        return self.pick(opts)

    def comparison(self, sc: Scope, d: int) -> str:
        _, lhs, rhs = self.cmp_pair(sc, d)
        return f"({lhs} {self.rng.choice(['=', '<>', '<', '<=', '>', '>='])} {rhs})"

    def between(self, sc: Scope, d: int) -> str:
        cat = self.cat_in(sc, allow_bool=False)
        lo_cat = self.rng.choice(NUMERIC) if cat in NUMERIC else cat
        neg = self.rng.choice(["", "NOT "])
        return (f"({self.expr(cat, sc, d + 1)} {neg}BETWEEN {self.expr(lo_cat, sc, d + 2)} "
                f"AND {self.expr(lo_cat, sc, d + 2)})")

    def in_list(self, sc: Scope, d: int) -> str:
        cat = self.cat_in(sc, allow_bool=False)
        items = []
        for _ in range(self.rng.randint(1, 4)):
            if self.rng.random() < 0.1:
                items.append("NULL")
            elif self.rng.random() < 0.7:
                items.append(self.lit(cat, False))
            else:
                items.append(self.expr(cat, sc, d + 2))
        neg = self.rng.choice(["", "NOT "])
        return f"({self.expr(cat, sc, d + 1)} {neg}IN ({', '.join(items)}))"

    # ---- subqueries --------------------------------------------------------------------

    def _sub_scope(self, sc: Scope) -> list[Col]:
        """Columns a subquery may correlate with: the enclosing row scope (not in aggregate
        contexts, where only group keys would be valid)."""
        if sc.agg or not self.ok("correlated_sub", 0.5):
            return []
        return list(sc.cols) + list(sc.outer)

    def subquery(self, sc: Scope, what: str, cat: str | None = None) -> str:
        """SELECT <what> FROM one table [WHERE p] (p may be correlated)."""
        self.sub_depth += 1
        try:
            outer = self._sub_scope(sc)
            if self.ok("sub_join", 0.15):
                frm, cols = self.from_clause(outer, max_tables=2, allow_derived=False)
            else:
                a = self.alias()
                name = self.rng.choice(list(self.tables))
                frm = f"{name} AS {a}"
                cols = [Col(f"{a}.{c.name}", c.category) for c in self.tables[name]]
            inner = Scope(cols, outer=outer)
            where = f" WHERE {self.pred(inner, 1)}" if self.rng.random() < 0.75 else ""
            if what == "exists":
                sel = self.rng.choice(["1", "*"])
                if self.ok("exists_agg", 0.15):
                    keys = self.group_keys(inner, 1)
                    ks = Scope(cols, outer=outer, keys=keys, allow_sub=False)
                    group = f" GROUP BY {', '.join(k.sql for k in keys)}" if keys else ""
                    return (f"SELECT {sel if sel == '1' else 'COUNT(*)'} FROM {frm}{where}{group} "
                            f"HAVING {self.pred(ks, 1)}")
                return f"SELECT {sel} FROM {frm}{where}"
            if what == "scalar":
                ks = Scope(cols, outer=outer, keys=[], allow_sub=False)
                return f"SELECT {self.agg_call(cat, ks)} FROM {frm}{where}"
            # "column": one column of category `cat`
            return f"SELECT {self.expr(cat, Scope(cols, outer=outer, allow_sub=False), 1)} FROM {frm}{where}"
        finally:
            self.sub_depth -= 1

    def scalar_subquery(self, cat: str, sc: Scope) -> str:
        return f"({self.subquery(sc, 'scalar', cat)})"

    def in_subquery(self, sc: Scope, d: int) -> str:
        cat = self.cat_in(sc, allow_bool=False)
        neg = self.rng.choice(["", "NOT "])
        if self.ok("in_setop_subquery", 0.15):
            self.sub_depth += 1
            try:
                q = self.query(out=[cat], top=False)
            finally:
                self.sub_depth -= 1
            return f"({self.expr(cat, sc, d + 1)} {neg}IN ({q.sql}))"
        return f"({self.expr(cat, sc, d + 1)} {neg}IN ({self.subquery(sc, 'column', cat)}))"

    def cmp_subquery(self, sc: Scope, d: int) -> str:
        cat = self.cat_in(sc, allow_bool=False)
        op = self.rng.choice(["=", "<>", "<", "<=", ">", ">="])
        return f"({self.expr(cat, sc, d + 1)} {op} ({self.subquery(sc, 'scalar', cat)}))"

    def any_all(self, sc: Scope, d: int) -> str:
        cat = self.rng.choice(["int", "str", "decimal"])
        op = self.rng.choice(["=", "<>", "<", "<=", ">", ">="])
        q = self.rng.choice(["ANY", "ALL"])
        return f"({self.expr(cat, sc, d + 1)} {op} {q} ({self.subquery(sc, 'column', cat)}))"

    # ---- aggregates --------------------------------------------------------------------

    def agg_call(self, cat: str, sc: Scope) -> str:
        """An aggregate returning `cat`, over the row columns of an aggregate scope."""
        # no outer columns: an aggregate over outer references belongs to the outer query
        rs = Scope(sc.cols, allow_sub=sc.allow_agg_args)
        r = self.rng
        arg = lambda c: self.expr(c, rs, 1)
        dist = lambda: "DISTINCT " if self.ok("agg_distinct", 0.15) else ""
        if cat == "int":
            opts = [
                (3, None, lambda: "COUNT(*)"),
                (2, None, lambda: f"COUNT({dist()}{arg(self.any_cat())})"),
                # SUM of BIGINT is DECIMAL(38, 0) in pqe (PostgreSQL) and HUGEINT in DuckDB:
                # cast back to BIGINT so the category stays an integer in both
                (2, None, lambda: f"CAST(SUM({dist()}{arg('int')}) AS BIGINT)"),
                (2, None, lambda: f"{r.choice(['MIN', 'MAX'])}({arg('int')})"),
            ]
        elif cat == "double":
            opts = [
                (3, "avg", lambda: f"AVG({dist()}{arg(r.choice(NUMERIC))})"),
                (2, None, lambda: f"SUM({dist()}{arg('double')})"),
                (2, None, lambda: f"{r.choice(['MIN', 'MAX'])}({arg('double')})"),
            ]
        elif cat == "decimal":
            opts = [
                (2, None, lambda: f"SUM({dist()}{arg('decimal')})"),
                (2, None, lambda: f"{r.choice(['MIN', 'MAX'])}({arg('decimal')})"),
            ]
        elif cat == "bool":
            opts = [
                (2, "bool_and_or", lambda: f"{r.choice(['BOOL_AND', 'BOOL_OR'])}({arg('bool')})"),
                (1, "min_bool", lambda: f"{r.choice(['MIN', 'MAX'])}({arg('bool')})"),
            ]
        else:
            opts = [(2, None, lambda: f"{r.choice(['MIN', 'MAX'])}({dist()}{arg(cat)})")]
        return self.pick(opts, default=lambda: self.lit(cat))

    def group_keys(self, sc: Scope, n: int) -> list[Col]:
        keys = []
        for _ in range(n):
            if sc.cols and self.rng.random() < 0.75:
                c = self.rng.choice(sc.cols)
                if c.sql not in [k.sql for k in keys]:
                    keys.append(c)
            else:
                cat = self.any_cat()
                e = self.expr(cat, Scope(sc.cols, allow_sub=False), 1)
                # a key without a column could be a bare integer: GROUP BY <ordinal>
                if re.search(r"\ba\d+\.", e) and e not in [k.sql for k in keys]:
                    self.features.append("group_by_expr")
                    keys.append(Col(e, cat))
        return keys

    # ---- FROM --------------------------------------------------------------------------

    def table_ref(self, outer: list[Col], allow_derived: bool) -> tuple[str, list[Col]]:
        a = self.alias()
        if allow_derived and self.sub_depth < 2 and self.ok("derived_table", 0.15):
            self.sub_depth += 1
            try:
                q = self.query(top=False)
            finally:
                self.sub_depth -= 1
            cols = [Col(f"{a}.{n}", c) for n, c in zip(q.names, q.out)]
            if self.ok("cte", 0.4):
                name = f"w{len(self.ctes) + 1}"
                self.ctes.append((name, q.sql))
                return f"{name} AS {a}", cols
            return f"({q.sql}) AS {a}", cols
        name = self.rng.choice(list(self.tables))
        return f"{name} AS {a}", [Col(f"{a}.{c.name}", c.category) for c in self.tables[name]]

    def from_clause(self, outer: list[Col] | None = None, max_tables: int = 3,
                    allow_derived: bool = True) -> tuple[str, list[Col]]:
        outer = outer or []
        n = self.rng.choices([1, 2, 3], [50, 35, 15])[0]
        n = min(n, max_tables)
        sql, cols = self.table_ref(outer, allow_derived)
        for _ in range(n - 1):
            rsql, rcols = self.table_ref(outer, allow_derived)
            kind = self.pick([
                (4, "inner_join", lambda: "JOIN"), (3, "left_join", lambda: "LEFT JOIN"),
                (1.5, "right_join", lambda: "RIGHT JOIN"), (1.5, "full_join", lambda: "FULL JOIN"),
                (1, "cross_join", lambda: "CROSS JOIN"), (0.5, "comma_join", lambda: ","),
            ])
            if kind in ("CROSS JOIN", ","):
                sql = f"{sql}{kind if kind == ',' else ' ' + kind} {rsql}"
            else:
                sql = f"{sql} {kind} {rsql} ON {self.join_cond(cols, rcols, outer)}"
            cols = cols + rcols
        return sql, cols

    def join_cond(self, left: list[Col], right: list[Col], outer: list[Col]) -> str:
        conds = []
        pairs = [(lc, rc) for rc in right for lc in left
                 if lc.cat == rc.cat or (lc.cat in NUMERIC and rc.cat in NUMERIC)]
        both = Scope(left + right, outer=outer, allow_sub=False)
        if pairs and self.rng.random() < 0.85:
            same = [(lc, rc) for lc, rc in pairs if lc.cat == rc.cat]
            for _ in range(self.rng.choice([1, 1, 1, 2])):
                lc, rc = self.rng.choice(same or pairs)
                if self.ok("join_null_safe", 0.05):
                    conds.append(f"{lc.sql} IS NOT DISTINCT FROM {rc.sql}")
                else:
                    conds.append(f"{lc.sql} = {rc.sql}")
            if self.ok("join_extra_pred", 0.3):
                conds.append(self.pred(both, 1))
        else:
            self.features.append("non_equi_join")
            conds.append(self.pred(both, 1))
        return " AND ".join(conds)

    # ---- queries -----------------------------------------------------------------------

    def order_limit(self, q: Select, force: bool = False) -> Select:
        """ORDER BY every output column (a total order), maybe LIMIT/OFFSET."""
        r = self.rng
        if not force and not self.ok("order_by", 0.3):
            return q
        keys = []
        for i, name in enumerate(q.names):
            k = str(i + 1) if r.random() < 0.5 else name
            k += r.choice(["", "", " DESC", " ASC"])
            if self.ok("nulls_first_last", 0.1):
                k += r.choice([" NULLS FIRST", " NULLS LAST"])
            keys.append(k)
        r.shuffle(keys)
        sql = f"{q.sql} ORDER BY {', '.join(keys)}"
        if self.ok("limit", 0.6):
            sql += f" LIMIT {r.choice([0, 1, 2, 3, 5, 10])}"
            if self.ok("offset", 0.3):
                sql += f" OFFSET {r.choice([0, 1, 2, 4])}"
        return Select(sql, q.out, q.names, ordered=True)

    def query(self, out: list[str] | None = None, top: bool = True) -> Select:
        """A random query; `out` fixes the output categories."""
        if top:
            self.ctes = []
        kinds = [(6, None, lambda: self.plain(out)), (4, "group_by", lambda: self.aggregate(out)),
                 (2, "set_op", lambda: self.set_op(out))]
        if out is None:
            kinds.append((2, "window", lambda: self.window()))
        q = self.pick(kinds)
        if top:
            q = self.order_limit(q)
            if self.ctes:
                w = ", ".join(f"{n} AS ({s})" for n, s in self.ctes)
                q = Select(f"WITH {w} {q.sql}", q.out, q.names, q.ordered)
        return q

    def out_cats(self, out: list[str] | None) -> list[str]:
        return out if out is not None else [self.any_cat() for _ in range(self.rng.randint(1, 4))]

    def plain(self, out=None, frm=None, distinct=None, where=None) -> Select:
        frm, cols = frm or self.from_clause()
        sc = Scope(cols)
        cats = self.out_cats(out)
        items = [self.expr(c, sc) for c in cats]
        names = [f"o{i}" for i in range(len(items))]
        if distinct is None:
            distinct = self.ok("distinct", 0.15)
        if where is None:
            where = self.rng.random() < 0.6
        sel = ", ".join(f"{e} AS {n}" for e, n in zip(items, names))
        sql = f"SELECT {'DISTINCT ' if distinct else ''}{sel} FROM {frm}"
        if where:
            sql += f" WHERE {self.pred(sc)}"
        return Select(sql, cats, names)

    def aggregate(self, out=None, frm=None, having=None, where=None,
                  n_keys: int | None = None) -> Select:
        frm, cols = frm or self.from_clause()
        rs = Scope(cols)
        wsql = f" WHERE {self.pred(rs)}" if (self.rng.random() < 0.5 if where is None else where) else ""
        if n_keys is None:
            n_keys = self.rng.choice([0, 1, 1, 2, 2, 3])
        keys = self.group_keys(rs, n_keys)
        sc = Scope(cols, keys=keys, allow_agg_args=self.ok("subquery_in_agg", 0.05))
        if out is None:
            items = [k.sql for k in keys if self.rng.random() < 0.8]
            cats = [k.cat for k in keys if k.sql in items]
            for _ in range(self.rng.randint(1, 3)):
                c = self.any_cat()
                items.append(self.expr(c, sc))
                cats.append(c)
            if self.ok("window_over_agg", 0.08):  # windows run after grouping
                by = self.expr(self.cat_in(sc, allow_bool=False), sc)
                items.append(self.rng.choice([
                    f"RANK() OVER (ORDER BY {by})", f"SUM({self.agg_call('int', sc)}) OVER ()",
                    f"COUNT(*) OVER (ORDER BY {by})"]))
                cats.append("int")
        else:
            cats = list(out)
            items = [self.expr(c, sc) for c in cats]
        names = [f"o{i}" for i in range(len(items))]
        sql = f"SELECT {', '.join(f'{e} AS {n}' for e, n in zip(items, names))} FROM {frm}{wsql}"
        if keys:
            sql += f" GROUP BY {', '.join(k.sql for k in keys)}"
        if having if having is not None else self.ok("having", 0.35):
            sql += f" HAVING {self.pred(sc)}"
        return Select(sql, cats, names, keys=keys)

    def set_op(self, out=None) -> Select:
        cats = self.out_cats(out)
        parts = []
        for _ in range(self.rng.choice([2, 2, 2, 3])):
            q = self.aggregate(cats) if self.rng.random() < 0.3 else self.plain(cats)
            parts.append(q.sql)
        sql = parts[0]
        for p in parts[1:]:
            op = self.pick([(4, "union", lambda: "UNION"), (4, "union_all", lambda: "UNION ALL"),
                            (2, "intersect", lambda: "INTERSECT"), (2, "except", lambda: "EXCEPT"),
                            (1, "intersect_all", lambda: "INTERSECT ALL"),
                            (1, "except_all", lambda: "EXCEPT ALL")])
            if self.ok("paren_setop", 0.2):
                sql = f"({sql}) {op} ({p})"
            else:
                sql = f"{sql} {op} {p}"
        return Select(sql, cats, [f"o{i}" for i in range(len(cats))])

    # Window functions. Identical rows may come in either order under an ORDER BY over every
    # column in scope: one order-sensitive function (row_number, ntile, lag/lead,
    # first_value, ROWS frames) still gives a deterministic multiset of rows, two could pair
    # their values differently. So a query gets at most one of those.
    ORDER_SENSITIVE = ("row_number", "ntile", "window_rows", "lag_lead", "first_value")

    def window(self) -> Select:
        frm, cols = self.from_clause()
        sc = Scope(cols)
        r = self.rng
        items, cats = [], []
        for _ in range(r.randint(0, 2)):
            c = self.any_cat()
            items.append(self.expr(c, sc))
            cats.append(c)
        sensitive_ok = True
        for _ in range(r.randint(1, 2)):
            before = len(self.features)
            cat, call = self.window_call(cols, sensitive_ok)
            if any(f in self.ORDER_SENSITIVE for f in self.features[before:]):
                sensitive_ok = False
            cats.append(cat)
            items.append(call)
        names = [f"o{i}" for i in range(len(items))]
        sql = f"SELECT {', '.join(f'{e} AS {n}' for e, n in zip(items, names))} FROM {frm}"
        if r.random() < 0.4:
            sql += f" WHERE {self.pred(sc)}"
        return Select(sql, cats, names)

    def window_call(self, cols: list[Col], sensitive_ok: bool) -> tuple[str, str]:
        """(category, window function call) over the rows of `cols`."""
        r = self.rng
        plain = Scope(cols, allow_sub=False)
        total = ", ".join(c.sql for c in cols)  # a total order up to identical rows

        def part() -> str:
            if r.random() < 0.3:
                return ""
            ks = [r.choice(cols).sql if r.random() < 0.8 else self.expr(self.any_cat(), plain, 2)
                  for _ in range(r.randint(1, 2))]
            return "PARTITION BY " + ", ".join(ks) + " "

        def order_any() -> str:
            ks = [(r.choice(cols).sql if r.random() < 0.8 else self.expr(r.choice(NUMERIC), plain, 2))
                  + r.choice(["", " DESC"]) for _ in range(r.randint(1, 2))]
            return "ORDER BY " + ", ".join(ks)

        def arg(c: str) -> str:
            return self.expr(c, plain, 2)

        num = r.choice(NUMERIC)  # SUM over a ROWS frame
        agg = r.choice(NUMERIC)  # SUM (int, decimal) or AVG (double) over the partition
        any_cat, typed = self.any_cat(), self.any_cat(False)
        s = 1 if sensitive_ok else 0
        frame = (f"ROWS BETWEEN {r.choice(['UNBOUNDED', '1', '2'])} PRECEDING AND "
                 f"{r.choice(['CURRENT ROW', '1 FOLLOWING'])}")
        return self.pick([
            (2 * s, "row_number", lambda: ("int", f"ROW_NUMBER() OVER ({part()}ORDER BY {total})")),
            (2, "rank", lambda: ("int", f"{r.choice(['RANK', 'DENSE_RANK'])}() OVER ({part()}{order_any()})")),
            (1, "percent_rank", lambda: ("double", f"{r.choice(['PERCENT_RANK', 'CUME_DIST'])}() OVER ({part()}{order_any()})")),
            (1 * s, "ntile", lambda: ("int", f"NTILE({r.randint(1, 4)}) OVER ({part()}ORDER BY {total})")),
            (3, "window_agg", lambda: (agg, f"{'AVG' if agg == 'double' else 'SUM'}({arg(num if agg == 'double' else agg)}) OVER ({part().rstrip()})")),
            (2, "window_count", lambda: ("int", f"COUNT({r.choice(['*', arg(any_cat)])}) OVER ({part().rstrip()})")),
            (2, "window_minmax", lambda: (typed, f"{r.choice(['MIN', 'MAX'])}({arg(typed)}) OVER ({part()}{order_any()})")),
            (2, "window_running", lambda: ("int", f"SUM({arg('int')}) OVER ({part()}{order_any()})")),
            (2 * s, "window_rows", lambda: (num, f"SUM({arg(num)}) OVER ({part()}ORDER BY {total} {frame})")),
            (1 * s, "lag_lead", lambda: (any_cat, f"{r.choice(['LAG', 'LEAD'])}({arg(any_cat)}{r.choice(['', ', 2'])}) OVER ({part()}ORDER BY {total})")),
            (1 * s, "first_value", lambda: (any_cat, f"FIRST_VALUE({arg(any_cat)}) OVER ({part()}ORDER BY {total})")),
        ], default=lambda: ("int", f"COUNT(*) OVER ({part().rstrip()})"))

    # ---- oracle inputs -----------------------------------------------------------------

    def tlp_input(self) -> tuple[str, str, str]:
        """(variant, base query, predicate) for the TLP oracle.

        variants: "where" (plain or DISTINCT select), "aggregate" (MIN/MAX/SUM/COUNT with
        optional GROUP BY; the partitions are re-aggregated), "having"."""
        self.ctes = []
        frm = self.from_clause()
        sc = Scope(frm[1])
        variant = self.pick([(5, "tlp_where", lambda: "where"), (3, "tlp_aggregate", lambda: "aggregate"),
                             (2, "tlp_having", lambda: "having")])
        if variant == "where":
            q = self.plain(frm=frm, where=self.rng.random() < 0.3)
            pred = self.pred(sc)
        elif variant == "aggregate":
            keys = self.group_keys(sc, self.rng.choice([0, 0, 1, 2]))
            ks = Scope(sc.cols, keys=[], allow_sub=False)
            items = [f"{k.sql} AS g{i}" for i, k in enumerate(keys)]
            for i in range(self.rng.randint(1, 2)):
                fn = self.rng.choice(["MIN", "MAX", "SUM", "COUNT"])
                cat = self.rng.choice(NUMERIC) if fn == "SUM" else self.any_cat(allow_bool=False)
                arg = "*" if fn == "COUNT" and self.rng.random() < 0.4 else self.expr(cat, Scope(sc.cols, allow_sub=False), 1)
                items.append(f"{fn}({arg}) AS x{i}")
            sql = f"SELECT {', '.join(items)} FROM {frm[0]}"
            if self.rng.random() < 0.3:
                sql += f" WHERE {self.pred(sc)}"
            if keys:
                sql += f" GROUP BY {', '.join(k.sql for k in keys)}"
            q = Select(sql, [], [])
            pred = self.pred(sc)
            del ks
        else:
            for _ in range(3):  # group keys can come out empty (duplicates, literals)
                q = self.aggregate(frm=frm, having=self.rng.random() < 0.3,
                                   n_keys=self.rng.choice([1, 1, 2]))
                if q.keys:
                    break
            pred = self.pred(Scope(sc.cols, keys=q.keys))
        return variant, self._with_ctes(q.sql), pred

    def norec_input(self) -> tuple[str, str]:
        """(base query 'SELECT * FROM ...', predicate) for the NoREC oracle."""
        self.ctes = []
        frm, cols = self.from_clause()
        pred = self.pred(Scope(cols))  # first: it may add CTEs too
        return self._with_ctes(f"SELECT * FROM {frm}"), pred

    def _with_ctes(self, sql: str) -> str:
        if not self.ctes:
            return sql
        return "WITH " + ", ".join(f"{n} AS ({s})" for n, s in self.ctes) + " " + sql
