"""The result comparator (pqe.testing.compare) and the DuckDB oracle (pqe.testing.oracle)."""

from __future__ import annotations

import datetime
import decimal
import subprocess
import sys

import pyarrow as pa
import pytest

from pqe.testing.compare import (ALLOWED_DIFFERENCES, compare, describe_allowed, logical_type,
                                 order_spec)

D = decimal.Decimal


def tbl(**cols) -> pa.Table:
    return pa.table({k: (v if isinstance(v, pa.Array) else pa.array(v)) for k, v in cols.items()})


# ---- types -----------------------------------------------------------------------------------

@pytest.mark.parametrize("a, e", [
    (pa.array([1], pa.int64()), pa.array([1.0], pa.float64())),                      # int vs double
    (pa.array([D("1.50")], pa.decimal128(10, 2)), pa.array([1.5], pa.float64())),    # decimal/double
    (pa.array([datetime.date(2020, 1, 1)]),
     pa.array([datetime.datetime(2020, 1, 1)], pa.timestamp("us"))),                 # date/timestamp
    (pa.array(["1"]), pa.array([1], pa.int64())),                                    # text/number
    (pa.array([True]), pa.array([1], pa.int32())),                                   # bool/int
    (pa.array([datetime.datetime(2020, 1, 1)], pa.timestamp("us")),
     pa.array([datetime.datetime(2020, 1, 1)], pa.timestamp("us", tz="UTC"))),       # ts/tstz
    (pa.array([1.0], pa.float32()), pa.array([1.0], pa.float64())),                  # real/double
])
def test_type_differences_are_mismatches(a, e):
    m = compare(tbl(x=a), tbl(x=e))
    assert m is not None and m.kind == "types", m
    assert "column 0 'x'" in m.message and str(logical_type(a.type)) in m.message


@pytest.mark.parametrize("a, e", [
    (pa.array([1], pa.int64()), pa.array([1], pa.int32())),
    (pa.array(["x"], pa.string()), pa.array(["x"], pa.large_string())),
    (pa.array(["x"], pa.string()), pa.array(["x"], pa.string_view())),
    (pa.array(["x"]).dictionary_encode(), pa.array(["x"])),
    (pa.array([D("1.50")], pa.decimal128(20, 2)), pa.array([D("1.5")], pa.decimal128(38, 2))),
    (pa.array([datetime.datetime(2020, 1, 1, 1)], pa.timestamp("us")),
     pa.array([datetime.datetime(2020, 1, 1, 1)], pa.timestamp("ns"))),
    (pa.array([datetime.datetime(2020, 1, 1, 1)], pa.timestamp("us", tz="UTC")),
     pa.array([datetime.datetime(2020, 1, 1, 1)], pa.timestamp("ms", tz="+00:00"))),
    (pa.array([None], pa.null()), pa.array([None], pa.int32())),
    (pa.array([datetime.date(2020, 1, 1)], pa.date32()),
     pa.array([datetime.date(2020, 1, 1)], pa.date64())),
])
def test_allowed_differences(a, e):
    assert compare(tbl(x=a), tbl(x=e)) is None


def test_hugeint_from_duckdb_is_an_integer_but_decimal38_is_not():
    hug = pa.schema([pa.field("s", pa.decimal128(38, 0), metadata={b"duckdb_type": b"HUGEINT"})])
    e = pa.Table.from_arrays([pa.array([D(5)], pa.decimal128(38, 0))], schema=hug)
    assert compare(tbl(s=pa.array([5], pa.int64())), e) is None
    assert compare(tbl(s=pa.array([6], pa.int64())), e).kind == "values"
    plain = tbl(s=pa.array([D(5)], pa.decimal128(38, 0)))
    assert compare(tbl(s=pa.array([5], pa.int64())), plain).kind == "types"


def test_null_typed_column_only_when_all_null():
    assert compare(tbl(x=pa.array([None, 1], pa.int64())),
                   tbl(x=pa.array([None, None], pa.null()))).kind == "types"


def test_decimal_scale_dropped_by_duckdb():
    a = tbl(x=pa.array([D("-0.1234")], pa.decimal128(10, 4)))
    assert compare(a, tbl(x=pa.array([D("-0.12")], pa.decimal128(38, 2)))) is None
    assert compare(a, tbl(x=pa.array([D("-0.13")], pa.decimal128(38, 2)))) is not None
    # not the other way round: pqe must not lose scale
    assert compare(tbl(x=pa.array([D("-0.12")], pa.decimal128(38, 2))),
                   tbl(x=pa.array([D("-0.1234")], pa.decimal128(10, 4)))).kind == "types"


def test_check_types_off_compares_numbers_numerically():
    assert compare(tbl(x=pa.array([1], pa.int64())), tbl(x=pa.array([1.0])),
                   check_types=False) is None
    assert compare(tbl(x=pa.array(["1"])), tbl(x=pa.array([1])), check_types=False) is not None


# ---- values ----------------------------------------------------------------------------------

def test_floats():
    f = pa.float64()
    assert compare(tbl(x=pa.array([1.0000001, float("nan"), -0.0, float("inf")], f)),
                   tbl(x=pa.array([1.0, float("nan"), 0.0, float("inf")], f))) is None
    assert compare(tbl(x=pa.array([1.00001], f)), tbl(x=pa.array([1.0], f))).kind == "values"
    assert compare(tbl(x=pa.array([float("inf")], f)),
                   tbl(x=pa.array([float("-inf")], f))) is not None
    assert compare(tbl(x=pa.array([float("nan")], f)), tbl(x=pa.array([None], f))) is not None


def test_exact_values_and_nulls():
    assert compare(tbl(x=pa.array([None], pa.int64())), tbl(x=pa.array([0], pa.int64()))) \
        is not None
    assert compare(tbl(x=[D("1.10")]), tbl(x=[D("1.1")])).kind == "types"  # scale 2 vs 1
    assert compare(tbl(x=[D("1.10")]), tbl(x=[D("1.1")]), check_types=False) is None
    assert compare(tbl(x=["a "]), tbl(x=["a"])) is not None
    assert compare(tbl(x=[1, 1]), tbl(x=[1, 2])).kind == "values"


def test_nested_values():
    assert compare(tbl(x=[[1, 2]]), tbl(x=pa.array([[1, 2]], pa.large_list(pa.int64())))) is None
    assert compare(tbl(x=[[1, 2]]), tbl(x=[[2, 1]])) is not None


def test_message_names_row_column_values_and_types():
    m = compare(tbl(k=[1, 2], v=[1.5, 2.5]), tbl(k=[1, 2], v=[1.5, 2.75]))
    assert m.kind == "values" and m.column == 1 and m.column_name == "v"
    assert "column 1 'v': 2.5 (DOUBLE), expected 2.75" in m.message, m.message


def test_shape_and_names():
    assert compare(tbl(x=[1]), tbl(x=[1], y=[2])).kind == "columns"
    assert compare(tbl(x=[1]), tbl(x=[1, 1])).kind == "rows"
    assert compare(tbl(x=[1]), tbl(y=[1])).kind == "names"
    assert compare(tbl(foo=[1]), tbl(Foo=[1])) is None                         # case
    assert compare(tbl(**{"count(*)": [1]}), tbl(**{"count_star()": [1]})) is None  # expressions


# ---- order -----------------------------------------------------------------------------------

def test_multiset_by_default():
    assert compare(tbl(x=[1, 2, 2]), tbl(x=[2, 1, 2])) is None
    assert compare(tbl(x=[1, 2, 2]), tbl(x=[2, 1, 1])) is not None


def test_order_by_keys_with_ties():
    want = tbl(k=[1, 1, 2, 3], v=["a", "b", "c", "d"])
    assert compare(tbl(k=[1, 1, 2, 3], v=["b", "a", "c", "d"]), want, order_by=[0]) is None
    m = compare(tbl(k=[1, 2, 1, 3], v=["a", "c", "b", "d"]), want, order_by=[0])
    assert m.kind == "order" and m.row == 1, m
    assert compare(tbl(k=[1, 1, 2, 3], v=["b", "a", "c", "d"]), want, ordered=True).kind == "order"
    # a value moved to another tie group is a value difference
    assert compare(tbl(k=[1, 1, 2, 3], v=["a", "c", "b", "d"]), want, order_by=["k"]) is not None


def test_limit_ties_at_the_cut():
    want = tbl(k=[1, 2, 2], v=["a", "b", "c"])
    assert compare(tbl(k=[1, 2, 2], v=["a", "x", "c"]), want, order_by=[0], limit=True) is None
    assert compare(tbl(k=[1, 2, 2], v=["a", "x", "c"]), want, order_by=[0]) is not None
    assert compare(tbl(k=[1, 2, 3], v=["a", "b", "c"]), want, order_by=[0], limit=True) is not None
    assert compare(tbl(k=[2, 1, 2], v=["b", "a", "c"]), want, order_by=[0],
                   limit=True).kind == "order"


def test_order_spec():
    assert order_spec("select a, b from t order by 2, a limit 3").order_by == [1, 0]
    assert order_spec("select a, b from t order by 2, a limit 3").limit
    assert order_spec("select a as x, b from t order by x desc").order_by == [0]
    assert order_spec("select a + b from t order by a + b").order_by == [0]
    assert order_spec("select a, b from t order by c, a").order_by == []   # c not an output
    assert order_spec("select a, b from t order by b, c, a").order_by == [1]
    assert order_spec("select a from t").order_by is None
    assert not order_spec("select a from t limit 3").deterministic
    assert order_spec("select a from t union select b from u order by 1").order_by == [0]
    assert compare(tbl(a=[1, 2]), tbl(a=[2, 1]), sql="select a from t order by a") is not None
    assert compare(tbl(a=[1, 2]), tbl(a=[2, 3]), sql="select a from t limit 2") is None


def test_allowed_table_is_documented():
    assert len({a.name for a in ALLOWED_DIFFERENCES}) == len(ALLOWED_DIFFERENCES)
    assert all(a.why and a.what for a in ALLOWED_DIFFERENCES)
    assert describe_allowed().count("\n") == len(ALLOWED_DIFFERENCES) + 1


# ---- the oracle ------------------------------------------------------------------------------

def test_testing_modules_do_not_import_duckdb():
    """pqe.testing ships in the wheel, which does not depend on DuckDB."""
    code = ("import pkgutil, sys, importlib, pqe.testing\n"
            "for m in pkgutil.iter_modules(pqe.testing.__path__):\n"
            "    importlib.import_module('pqe.testing.' + m.name)\n"
            "import pqe.testing.compare, pqe.testing.oracle\n"
            "bad = [m for m in sys.modules if m == 'duckdb' or m.startswith('duckdb.')]\n"
            "assert not bad, bad\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_oracle_has_pqe_semantics():
    from pqe.testing import oracle

    con = oracle.connect({"t": tbl(a=pa.array([1, None, 3], pa.int64()))})
    assert oracle.query(con, "select 7 / 2 as q, 1 / 0 as z").to_pylist() == [{"q": 3, "z": None}]
    assert oracle.query(con, "select a from t order by a").column(0).to_pylist() == [1, 3, None]
    assert oracle.query(con, "select a from t order by a desc").column(0).to_pylist() == [
        None, 3, 1]
    assert oracle.query(con, "select lower(?) as s, ? + 1 as n", ["AB", 2]).to_pylist() == [
        {"s": "ab", "n": 3}]
    t = oracle.query(con, "select sum(a) as s from t")
    assert str(logical_type(t.schema.field(0))) == "HUGEINT"
    with pytest.raises(Exception, match="(?i)catalog|not exist|table"):
        oracle.query(con, "select * from tbl")   # no replacement scan of this module's `tbl`
    con.close()


def test_rounding_a_38_digit_decimal_to_the_oracles_scale_does_not_trap():
    """A DECIMAL(38,10) near its limit compared with an oracle that dropped scale: quantizing
    it to 2 places needs 41 digits, past the decimal module's default 28 (the fuzzer crashed
    with InvalidOperation, seed 201 case 1599); the values compare instead."""
    import decimal

    import pyarrow as pa

    from pqe.testing.compare import compare

    D = decimal.Decimal
    a = pa.table({"x": pa.array([D("9999999999999999999999999999.9999999999"), D("1.5")],
                                pa.decimal128(38, 10))})
    e = pa.table({"x": pa.array([D("10000000000000000000000000000.00"), D("1.60")],
                                pa.decimal128(38, 2))})
    m = compare(a, e, check_types=False)
    assert m is not None and "1.60" in str(m)
    same = pa.table({"x": pa.array([D("10000000000000000000000000000.00"), D("1.50")],
                                   pa.decimal128(38, 2))})
    assert compare(a, same, check_types=False) is None


def test_oracle_insert_select_reads_the_table_as_before_the_statement():
    """DuckDB 2.0 with one thread lets `INSERT INTO t SELECT ... FROM t UNION ALL ...` read
    rows the statement already inserted (K34); the oracle runs the query first, so DuckDB's
    answer is SQL's: every branch reads t as it was."""
    from pqe.testing import oracle

    con = oracle.connect()
    try:
        con.execute("CREATE TABLE o1 (c0 DECIMAL(10,2))")
        con.execute("CREATE TABLE o0 (c2 DECIMAL(38,10))")
        con.execute("INSERT INTO o0 VALUES (0.01)")
        con.execute("INSERT INTO o1 VALUES (1.00), (0.01)")
        n = oracle.query(con, "INSERT INTO o1 SELECT c0 FROM o1 UNION ALL SELECT c2 FROM o1, o0")
        assert n.column(0).to_pylist() == [4]
        assert oracle.query(con, "SELECT count(*) FROM o1").column(0).to_pylist() == [6]
        assert oracle.query(con, "insert into o1 (c0) (select ? + 1)", [41]).column(0).to_pylist() == [1]
        assert oracle.query(con, "INSERT INTO o1 VALUES (3)").column(0).to_pylist() == [1]
        # a column list before VALUES is not a parenthesized query (DuckDB would be handed
        # "CREATE TABLE ... AS (c0) VALUES ...": a syntax error that ended every fuzz script)
        for sql in ("INSERT INTO o1 (c0) VALUES (5)", "insert into o1(c0)values(5)",
                    "INSERT INTO o1 ( c0 ) VALUES (5), (6)"):
            assert oracle._INSERT_QUERY.match(sql) is None, sql
            assert oracle.query(con, sql).column(0).to_pylist()[0] >= 1
        con.execute("DELETE FROM o1 WHERE c0 IN (5, 6)")
        rows = oracle.query(con, "SELECT c0 FROM o1 ORDER BY c0").column(0).to_pylist()
        assert [str(r) for r in rows] == ["0.01", "0.01", "0.01", "0.01", "1.00", "1.00",
                                          "3.00", "42.00"]
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert tables == {"o0", "o1"}  # the temporary source is gone
    finally:
        con.close()
