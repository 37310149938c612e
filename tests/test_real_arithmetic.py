"""REAL (float32) arithmetic yields REAL values, as in DuckDB: REAL op REAL, REAL op integer and
REAL op DECIMAL cast the other operand to REAL and compute in single precision, so the result
is rounded to float32; REAL op DOUBLE is DOUBLE. The plan typed such expressions REAL while the
kernels computed them in DOUBLE and never rounded back: `f4 + 1` kept the 1e-8 a REAL loses
(GROUP BY made 3 groups of one value, `f4 + 1 = 1` was FALSE, COUNT(DISTINCT) counted 3),
EXCEPT and joins met float64 keys where float32 was planned (an error), CAST(... AS VARCHAR)
found no REAL kernel for a double, and CAST(... AS DOUBLE), SUM and joins with a DOUBLE column
saw digits a REAL does not have. ROUND and TRUNC of a REAL scaled it in single precision.

Each query runs on tables registered as several record batches, with pqe.Context(threads=2),
and is compared with DuckDB or with exact float32 values (never with a tolerance: the
difference is in the last bits).
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.acero as ac
import pytest

import pqe
from pqe import types as T
from pqe.kernels import expressions as X
from pqe.plan.expr import Call, Case, Cast, ColumnRef

F32 = np.float32


def _f32(v: float) -> float:
    return float(F32(v))


def _batches(table: pa.Table, size: int) -> pa.Table:
    return pa.Table.from_batches(table.to_batches(max_chunksize=size))


# the repro: values a REAL cannot add to 1
TINY = pa.table({"id": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
                 "f4": pa.array([1e-8, 2e-8, 3e-8, 1e-8, 2e-8, 3e-8], pa.float32())})
# values whose product by 3 in DOUBLE is not the REAL product (and a NULL)
U_VALUES = [0.1, 0.7, 1.1, 2.3, 1.5, 123.456, None]
U = pa.table({"id": pa.array(range(1, len(U_VALUES) + 1), pa.int64()),
              "f4": pa.array(U_VALUES, pa.float32()),
              "i": pa.array([3, 16777217, -5, 7, 0, 2, 1], pa.int64())})
# DOUBLE column holding the float32 products f4 * 3 (as a REAL gives them)
W = pa.table({"d": pa.array([_f32(F32(v) * F32(3)) for v in U_VALUES if v is not None],
                            pa.float64())})


def _random_table() -> pa.Table:
    rng = np.random.default_rng(20240611)
    n = 4000
    a = np.concatenate([
        rng.standard_normal(n).astype(F32) * (F32(10) ** rng.integers(-8, 9, n).astype(F32)),
        (rng.integers(-100000, 100000, n) / F32(1000)).astype(F32),
        (rng.integers(-1000, 1000, n) / F32(8)).astype(F32)]).astype(F32)
    a[a == 0] = F32(0.25)  # (x / 0 is NULL in pqe, inf in DuckDB: not this file's subject)
    b = np.roll(a, 7)
    i = rng.integers(-20_000_000, 20_000_000, len(a))
    i[i == 0] = 3
    return pa.table({"id": np.arange(len(a)), "a": pa.array(a, pa.float32()),
                     "b": pa.array(b, pa.float32()), "i": pa.array(i, pa.int64()),
                     "d": pa.array(np.roll(a, 3).astype(np.float64))})


R = _random_table()
TABLES = {"t": (TINY, 2), "u": (U, 3), "w": (W, 2), "r": (R, 1500)}


@pytest.fixture(scope="module")
def ctx():
    c = pqe.Context(threads=2)
    for name, (table, size) in TABLES.items():
        c.register_arrow(name, _batches(table, size))
    yield c
    c.close()


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    for name, (table, _) in TABLES.items():
        con.register(name, table)
    yield con
    con.close()


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b) or (a != a and b != b)
    return a == b and type(a) is type(b)


def _rows(rows) -> list[tuple]:
    return sorted((tuple(r) for r in rows), key=repr)


def _pqe_rows(ctx, sql: str) -> list[tuple]:
    return _rows(tuple(r.values()) for r in ctx.sql(sql).to_pylist())


def _check(ctx, duck, sql: str, expected: list[tuple] | None = None) -> None:
    """pqe's rows are DuckDB's (and `expected`), value for value, exactly."""
    got = _pqe_rows(ctx, sql)
    want = _rows(duck.execute(sql).fetchall())
    assert len(got) == len(want), (sql, got, want)
    for g, w in zip(got, want, strict=True):
        assert len(g) == len(w) and all(_same(x, y) for x, y in zip(g, w, strict=True)), \
            (sql, got, want)
    if expected is not None:
        assert len(got) == len(expected), (sql, got, expected)
        for g, e in zip(got, _rows(expected), strict=True):
            assert all(_same(x, y) for x, y in zip(g, e, strict=True)), (sql, got, expected)


# ---- the repro -----------------------------------------------------------------------------


def test_group_by_real_sum(ctx, duck):
    _check(ctx, duck, "select f4 + 1 as p, count(*) as n from t group by f4 + 1", [(1.0, 6)])


def test_where_real_sum(ctx, duck):
    _check(ctx, duck, "select count(*) as n from t where f4 + 1 = 1", [(6,)])
    _check(ctx, duck, "select count(*) as n from t where f4 + 1 > 1", [(0,)])


def test_distinct_real_sum(ctx, duck):
    _check(ctx, duck, "select count(distinct f4 + 1) as n from t", [(1,)])
    _check(ctx, duck, "select distinct f4 + 1 as p from t", [(1.0,)])
    _check(ctx, duck, "select distinct f4 * 3 as p from u", [(None,)] + [
        (_f32(F32(v) * F32(3)),) for v in U_VALUES if v is not None])


def test_except_union_of_real_expressions(ctx, duck):
    _check(ctx, duck, "select f4 from t except select f4 + 0 from t", [])
    _check(ctx, duck, "select f4 + 1 as p from t union select f4 * 1 + 1 from t", [(1.0,)])
    _check(ctx, duck, "select f4 * 3 as p from u intersect select d from w",
           [(_f32(F32(v) * F32(3)),) for v in U_VALUES if v is not None])
    _check(ctx, duck, "select f4 * 3 as p from u except select d from w", [(None,)])


def test_cast_real_expression_to_varchar(ctx, duck):
    _check(ctx, duck, "select id, cast(f4 * 3 as varchar) as s from u",
           [(1, "0.3"), (2, "2.1"), (3, "3.3000002"), (4, "6.8999996"), (5, "4.5"),
            (6, "370.368"), (7, None)])
    _check(ctx, duck, "select cast(f4 + 1 as varchar) as s from t", [("1.0",)] * 6)


def test_cast_real_expression_to_double(ctx, duck):
    _check(ctx, duck, "select id, cast(f4 * 3 as double) as v from u",
           [(k + 1, None if v is None else _f32(F32(v) * F32(3)))
            for k, v in enumerate(U_VALUES)])
    _check(ctx, duck, "select cast(f4 + 1 as double) as v from t", [(1.0,)] * 6)


def test_sum_of_real_expression(ctx, duck):
    # the float32 products sum exactly in DOUBLE (exponents within 2^-2 .. 2^9): no order
    # of the partial sums changes it
    exact = math.fsum(_f32(F32(v) * F32(3)) for v in U_VALUES if v is not None)
    _check(ctx, duck, "select sum(f4 * 3) as s from u", [(exact,)])
    _check(ctx, duck, "select sum(f4 + 1) as s from t", [(6.0,)])
    _check(ctx, duck, "select avg(f4 + 1) as s, min(f4 + 1) as lo, max(f4 + 1) as hi from t",
           [(1.0, 1.0, 1.0)])


def test_join_real_expression_with_double_column(ctx, duck):
    products = [(_f32(F32(v) * F32(3)),) for v in U_VALUES if v is not None]
    _check(ctx, duck, "select w.d from u join w on u.f4 * 3 = w.d", products)
    _check(ctx, duck, "select d from w where d in (select f4 * 3 from u)", products)
    _check(ctx, duck, "select count(*) as n from u where f4 * 3 in (select d from w)",
           [(len(products),)])
    _check(ctx, duck, "select count(*) as n from u where f4 * 3 not in (select d from w)",
           [(0,)])
    _check(ctx, duck, "select count(*) as n from u, w where u.f4 * 3 = w.d", [(len(products),)])


def test_integer_operand_is_cast_to_real_first(ctx, duck):
    # DuckDB casts the integer to REAL (16777217 -> 16777216) before adding
    _check(ctx, duck, "select id, f4 * 0 + i as v from u where id in (1, 2)",
           [(1, 3.0), (2, 16777216.0)])
    _check(ctx, duck, "select cast(1 as real) + 16777217 as v", [(16777216.0,)])
    _check(ctx, duck, "select cast(16777216 as real) + 1 as v", [(16777216.0,)])


def test_constant_folded_equals_column(ctx, duck):
    _check(ctx, duck, "select cast(1e-8 as real) + 1 = 1 as v", [(True,)])
    _check(ctx, duck, "select cast(1e-8 as real) + 1 as v", [(1.0,)])
    _check(ctx, duck, "select count(*) as n from t where f4 + 1 = cast(1e-8 as real) + 1",
           [(6,)])
    # the folded product is the column's product, value for value
    _check(ctx, duck, "select count(*) as n from u where f4 * 3 = cast(0.1 as real) * 3",
           [(1,)])
    _check(ctx, duck, "select cast(0.1 as real) * 3 as v", [(_f32(F32(0.1) * F32(3)),)])
    _check(ctx, duck, "select cast(cast(0.1 as real) * 3 as double) = 0.3 as v", [(False,)])
    folded = ctx.sql("select cast(1.1 as real) * 3 as v").to_pylist()[0]["v"]
    column = ctx.sql("select f4 * 3 as v from u where id = 3").to_pylist()[0]["v"]
    assert folded == column == _f32(F32(1.1) * F32(3))


def test_real_literals_hold_real_values(ctx, duck):
    """The integer a REAL meets is a REAL constant in the optimized plan, with the value the
    kernels compute with (16777217 is 16777216 as a REAL), not the DOUBLE it was written as."""
    _check(ctx, duck, "select id, f4 + 16777217 as v from u where id = 1", [(1, 16777216.0)])
    plan = [r["plan"] for r in ctx.sql(
        "explain select f4 + 16777217 as v from u where f4 * 1 = 16777217").to_pylist()]
    optimized = "\n".join(plan[plan.index("== Optimized Logical Plan =="):])
    assert "16777216.0" in optimized and "16777217" not in optimized, optimized


# ---- types and values on random data -------------------------------------------------------

TYPED = ["a + b", "a - b", "a * b", "a / b", "a % b", "a + i", "a * i", "i - a", "a / i",
         "i / a", "a % i", "a + d", "a * d", "-a", "abs(a)", "a + 1.5", "a * 1.1", "a + 0.1",
         "a * 1e0", "a * cast(12345678.9 as decimal(10,1))", "round(a)", "round(a, 1)",
         "round(a, 2)", "round(a, 3)", "round(a, -1)", "trunc(a)", "trunc(a, 1)",
         "trunc(a, 2)", "floor(a)", "ceil(a)", "sqrt(abs(a))", "power(a, 2)",
         "greatest(a, i)", "coalesce(a * 2, 0)", "case when a > 0 then a * 2 else i end",
         "a * a * a", "(a + 1) - 1", "cast(a * b as double)", "a + null"]


def test_types_and_values_as_duckdb(ctx, duck):
    """Every expression of TYPED (REAL ones and, beside them, DOUBLE ones) has DuckDB's type,
    the Arrow type of it, and DuckDB's values; all mismatches are reported at once."""
    wrong = []
    for expr in TYPED:
        sql = f"select id, {expr} as v from r"
        try:
            _check(ctx, duck, sql)
        except AssertionError as e:
            wrong.append(f"{expr}: values differ: {str(e)[:300]}")
        except pqe.errors.Error as e:
            wrong.append(f"{expr}: {type(e).__name__}: {e}")
            continue
        got = ctx.sql(f"select typeof({expr}) as t from r limit 1").to_pylist()[0]["t"]
        want = duck.execute(f"select typeof({expr}) from r limit 1").fetchall()[0][0]
        arrow = ctx.sql(sql).to_arrow().schema.field("v").type
        if got != want or arrow != (pa.float32() if want == "FLOAT" else pa.float64()):
            wrong.append(f"{expr}: type {got} ({arrow}), DuckDB's {want}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("expr", ["a + b", "a * i", "a / b", "round(a, 2)", "a * 1.1"])
def test_grouping_random_real_expressions(ctx, duck, expr):
    _check(ctx, duck, f"select {expr} as g, count(*) as n from r group by {expr}")
    _check(ctx, duck, f"select count(distinct {expr}) as n from r")
    _check(ctx, duck, f"select count(*) as n from r where {expr} = cast({expr} as double)")
    # a REAL's value as a DOUBLE is a REAL's value
    _check(ctx, duck, f"select count(*) as n from r "
                      f"where cast({expr} as double) = cast(cast({expr} as double) as real)",
           [(R.num_rows,)])


# ---- the invariant: every compiled call yields the Arrow type the plan gives it ------------


def _columns(e, acc: dict) -> dict:
    if isinstance(e, ColumnRef):
        acc[e.id] = e.dtype
    for k in e.children():
        _columns(k, acc)
    return acc


INVARIANT_QUERIES = [
    "select f4 + 1, f4 - i, f4 * i, f4 / i, f4 % i, i / f4, -f4, abs(f4 * 2) from u",
    "select round(f4, 1), trunc(f4 * 3, 2), floor(f4 / 3), ceil(f4 % 2), round(f4) from u",
    "select f4 * cast(1.5 as decimal(3,1)), f4 + cast(i as double), sqrt(f4 * 3) from u",
    "select coalesce(f4 * 3, i), greatest(f4 + 1, i), nullif(f4 * 3, 0) from u",
    "select case when i > 0 then f4 * 3 else f4 / 3 end from u where f4 * 3 > 0.5",
]


def test_compiled_calls_yield_the_planned_type(ctx, monkeypatch):
    """Each compiled call (and cast, CASE) bound to its inputs' Arrow types has the planned
    type: a REAL expression computed in DOUBLE was typed float32 and gave float64."""
    original = X.Compiler.compile
    wrong: list[str] = []

    def compile_(self, e):
        out = original(self, e)
        if type(self) is X.Compiler and not self.rename and not self.cast_fields \
                and isinstance(e, (Call, Cast, Case)) and not T.is_null(e.dtype) \
                and (T.is_floating(e.dtype) or any(T.is_floating(a.dtype) for a in e.children())):
            cols = _columns(e, {})
            table = (pa.table({k: pa.array([], t) for k, t in cols.items()}) if cols
                     else pa.table({"__one": pa.array([0], pa.int8())}))
            got = ac.Declaration.from_sequence([
                ac.Declaration("table_source", ac.TableSourceNodeOptions(table)),
                ac.Declaration("project", ac.ProjectNodeOptions([out], ["v"]))]).to_table(
                    use_threads=False).schema.field(0).type
            if got != e.dtype:
                wrong.append(f"{e}: planned {e.dtype}, computed {got}")
        return out

    monkeypatch.setattr(X.Compiler, "compile", compile_)
    init = X.Compiler.__init__  # (each compiled call whole: no lets, which refer to columns
    # an earlier projection adds)
    monkeypatch.setattr(X.Compiler, "__init__",
                        lambda self, *a, share=False, **k: init(self, *a, **k))
    for sql in INVARIANT_QUERIES:
        ctx.sql(sql).to_arrow()
    assert not wrong, wrong
