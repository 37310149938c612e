"""Regressions found by the differential fuzzer and the .slt feature files: binding, subquery
decorrelation and planning. Each query's expected rows were checked against DuckDB."""

from decimal import Decimal as D

import pyarrow as pa
import pytest

import pqe
from pqe.testing import oracle


@pytest.fixture(params=[1, 3], ids=["1p", "3p"])
def ctx(request):
    c = pqe.Context(partitions=request.param)
    c.register_arrow("c", pa.table({
        "name": ["ann", "bob", "cid", "dan", ""],
        "lim": [120, 100, None, 50, None],
        "city": ["paris", "rome", "paris", None, "x"]}))
    c.register_arrow("o", pa.table({
        "id": [1, 2, 3, 4, 5, 6, 7],
        "cust": ["ann", "ann", "bob", "cid", None, "eve", "ann"],
        "amount": [100, 50, 140, 30, 10, 20, 75]}))
    c.register_arrow("one", pa.table({"c": pa.array([1], pa.int64())}))
    c.register_arrow("empty", pa.table({"x": pa.array([], pa.int64())}))
    c.register_arrow("pair", pa.table({"x": pa.array([1, 2], pa.int64())}))
    return c


def rows(ctx, sql):
    return [tuple(r.values()) for r in ctx.sql(sql).to_pylist()]


# ---- a subquery repeated by a rewrite is joined once -------------------------------------------

@pytest.mark.parametrize("sql, expected", [
    ("SELECT NULLIF((SELECT 2.5), 0)", [(D("2.5"),)]),
    ("SELECT c FROM one WHERE (SELECT 1) BETWEEN c AND 2", [(1,)]),
    ("SELECT CASE (SELECT 1) WHEN 2 THEN c WHEN 3 THEN c END FROM one", [(None,)]),
])
def test_duplicated_subquery_operand(ctx, sql, expected):
    assert rows(ctx, sql) == expected


# ---- comma joins bind looser than JOIN ---------------------------------------------------------

def test_comma_binds_looser_than_explicit_join(ctx):
    # empty, (pair RIGHT JOIN pair ON FALSE): the cross product with an empty table is empty
    assert rows(ctx, "SELECT count(*) FROM empty, pair RIGHT JOIN pair AS q ON FALSE") == [(0,)]
    # pair x (empty RIGHT JOIN pair ON TRUE) = 2 x 2 rows
    assert rows(ctx, "SELECT count(*) FROM pair, empty RIGHT JOIN pair AS q ON TRUE") == [(4,)]
    # an ON that reads an earlier comma item still works for LEFT joins (joined left-deep)
    assert rows(ctx, "SELECT count(*) FROM pair p, one LEFT JOIN pair q ON q.x = p.x + one.c") == [(2,)]
    # ... but is ambiguous for RIGHT/FULL joins (DuckDB reads it per row, PostgreSQL rejects it)
    with pytest.raises(pqe.UnsupportedError, match="comma"):
        ctx.sql("SELECT count(*) FROM empty e, pair FULL JOIN one ON e.x = one.c").to_arrow()


# ---- aggregates -------------------------------------------------------------------------------

def test_subquery_inside_aggregate_argument(ctx):
    assert rows(ctx, "SELECT count((SELECT 'b'))") == [(1,)]
    assert rows(ctx, "SELECT max((SELECT x)) FROM empty") == [(None,)]
    assert rows(ctx, "SELECT sum((SELECT max(amount) FROM o)) + count(*) FROM pair") == [(282,)]


def test_having_without_group_by_is_one_group(ctx):
    assert rows(ctx, "SELECT 1 HAVING TRUE") == [(1,)]
    assert rows(ctx, "SELECT 1 HAVING FALSE") == []
    assert rows(ctx, "SELECT 1 FROM pair HAVING TRUE") == [(1,)]
    assert rows(ctx, "SELECT 1 AS k GROUP BY ()") == [(1,)]
    with pytest.raises(pqe.Error, match="GROUP BY"):
        ctx.sql("SELECT x FROM pair HAVING TRUE").to_arrow()


def test_grouping_sets_without_aggregates_keep_the_empty_set(ctx):
    assert rows(ctx, "SELECT x, GROUPING(x) FROM pair GROUP BY ROLLUP (x) ORDER BY 1") == \
        [(1, 0), (2, 0), (None, 1)]


def test_outer_join_makes_a_constant_column_nullable(ctx):
    sql = ("SELECT o0, count(DISTINCT x), count(*) FROM (SELECT 1 AS o0) AS w "
           "FULL JOIN one ON FALSE CROSS JOIN (SELECT 4 AS x) v GROUP BY o0 ORDER BY o0")
    assert rows(ctx, sql) == [(1, 1, 1), (None, 1, 1)]


# ---- correlated subqueries in grouped queries ------------------------------------------------

def test_subquery_correlated_to_a_group_key(ctx):
    assert rows(ctx, "SELECT cust, (SELECT lim FROM c WHERE c.name = o.cust) FROM o "
                     "GROUP BY cust ORDER BY 1") == \
        [("ann", 120), ("bob", 100), ("cid", None), ("eve", None), (None, None)]
    assert rows(ctx, "SELECT cust, sum(amount) FROM o GROUP BY cust "
                     "HAVING sum(amount) > (SELECT lim FROM c WHERE c.name = o.cust) ORDER BY 1") == \
        [("ann", 225), ("bob", 140)]
    assert rows(ctx, "SELECT cust FROM o GROUP BY cust HAVING EXISTS "
                     "(SELECT 1 FROM c WHERE c.name = o.cust AND c.city = 'paris') ORDER BY 1") == \
        [("ann",), ("cid",)]
    with pytest.raises(pqe.Error, match="GROUP BY"):
        ctx.sql("SELECT cust, (SELECT lim FROM c WHERE c.lim = o.amount) FROM o GROUP BY cust").to_arrow()


# ---- nested correlation ----------------------------------------------------------------------

def test_correlation_two_levels_out(ctx):
    assert rows(ctx, "SELECT name FROM c WHERE EXISTS (SELECT 1 FROM o WHERE o.cust = c.name AND "
                     "o.amount > (SELECT min(amount) FROM o o3 WHERE o3.cust = c.name))") == [("ann",)]
    assert rows(ctx, "SELECT name FROM c WHERE EXISTS (SELECT * FROM o WHERE NOT c.lim IN "
                     "(SELECT amount FROM o)) ORDER BY 1") == [("ann",)]
    assert rows(ctx, "SELECT name, (SELECT count(*) FROM o WHERE NOT c.lim IN "
                     "(SELECT amount FROM o o2 WHERE o2.amount > 60)) FROM c ORDER BY 1") == \
        [("", 0), ("ann", 7), ("bob", 0), ("cid", 0), ("dan", 7)]
    assert rows(ctx, "SELECT name FROM c WHERE lim + 40 IN (SELECT amount FROM o WHERE EXISTS "
                     "(SELECT * FROM o o2 WHERE c.name LIKE 'b%'))") == [("bob",)]


# ---- correlated ORDER BY / LIMIT -------------------------------------------------------------

def test_correlated_top_n(ctx):
    assert rows(ctx, "SELECT name, (SELECT o.id FROM o WHERE o.cust = c.name "
                     "ORDER BY o.amount DESC, o.id LIMIT 1) FROM c ORDER BY 1") == \
        [("", None), ("ann", 1), ("bob", 3), ("cid", 4), ("dan", None)]
    assert rows(ctx, "SELECT name, (SELECT o.id FROM o WHERE o.cust = c.name "
                     "ORDER BY o.amount LIMIT 1 OFFSET 1) FROM c ORDER BY 1") == \
        [("", None), ("ann", 7), ("bob", None), ("cid", None), ("dan", None)]
    assert rows(ctx, "SELECT name, (SELECT sum(amount) FROM (SELECT amount FROM o WHERE "
                     "o.cust = c.name ORDER BY amount DESC LIMIT 2) x) FROM c ORDER BY 1") == \
        [("", None), ("ann", 175), ("bob", 140), ("cid", 30), ("dan", None)]


def test_exists_ignores_order_and_limit(ctx):
    assert rows(ctx, "SELECT name FROM c WHERE EXISTS (SELECT 1 FROM o WHERE o.cust = c.name "
                     "ORDER BY amount LIMIT 1) ORDER BY 1") == [("ann",), ("bob",), ("cid",)]
    assert rows(ctx, "SELECT name FROM c WHERE EXISTS (SELECT 1 FROM o WHERE o.cust = c.name "
                     "LIMIT 0)") == []
    assert rows(ctx, "SELECT name FROM c WHERE EXISTS (SELECT 1 FROM o WHERE o.cust = c.name "
                     "OFFSET 2)") == [("ann",)]


# ---- estimates -------------------------------------------------------------------------------

def test_memory_guard_does_not_refuse_windows_over_empty_tables(ctx):
    sql = ("SELECT NULL FROM (SELECT row_number() OVER (ORDER BY x) FROM empty), "
           "(SELECT 'x', 'A' EXCEPT ALL SELECT NULL, CAST(x AS VARCHAR) FROM empty)")
    assert rows(ctx, sql) == []


def test_column_equality_under_or_is_estimated_by_distinct_counts():
    """A nested-loop join on `(l.k = r.k AND l.x > 0) OR r.z = 5` (400k x 60k rows, 50k keys,
    z = 5 in 1 of 1000 rows: about 22M pairs match) is estimated by the keys' distinct counts,
    not a flat 10% of 24G pairs: the memory guard refused it (103 GiB needed); it runs in
    under 2 GiB. A condition that does keep most pairs is still refused."""
    import numpy as np

    from pqe.physical.plan import estimated_memory

    rng = np.random.default_rng(1)
    nl, nr = 400_000, 60_000
    ctx = pqe.Context()
    ctx.register_arrow("l", pa.table({"k": rng.integers(0, 50_000, nl),
                                      "x": rng.integers(-5, 5, nl)}))
    ctx.register_arrow("r", pa.table({"k": rng.integers(0, 50_000, nr),
                                      "z": rng.integers(0, 1000, nr)}))
    gib = 1 << 30
    few = ctx.sql("SELECT count(*) FROM l JOIN r ON (l.k = r.k AND l.x > 0) OR r.z = 5")
    assert estimated_memory(few.physical_plan()) < 8 * gib
    # (one side's column against a constant-free expression of the other: no distinct
    # counts to use, the flat guess stays)
    many = ctx.sql("SELECT count(*) FROM l JOIN r ON l.k <> r.k OR r.z = 5")
    assert estimated_memory(many.physical_plan()) > 100 * gib
    # the same condition's answer, on a slice small enough to check by hand
    small = pqe.Context()
    small.register_arrow("l", pa.table({"k": [1, 2, 2, None], "x": [1, -1, 3, 1]}))
    small.register_arrow("r", pa.table({"k": [2, 2, 3, None], "z": [0, 5, 0, 5]}))
    got = small.sql("SELECT l.k, l.x, r.k AS rk, r.z FROM l JOIN r "
                    "ON (l.k = r.k AND l.x > 0) OR r.z = 5 ORDER BY 1, 2, 3, 4").to_pylist()
    assert [tuple(r.values()) for r in got] == [  # (as DuckDB answers)
        (1, 1, 2, 5), (1, 1, None, 5), (2, -1, 2, 5), (2, -1, None, 5), (2, 3, 2, 0),
        (2, 3, 2, 5), (2, 3, None, 5), (None, 1, 2, 5), (None, 1, None, 5)]


# ---- quantified comparisons: x op ANY / ALL (q) -------------------------------------------

@pytest.mark.parametrize("values", [[2, 4], [2, None], [], [None, None]],
                         ids=["values", "with-null", "empty", "all-null"])
def test_any_all_match_duckdb(values):
    """Every comparison with ANY and ALL, uncorrelated and correlated, as a value, a filter
    and a negated filter, against DuckDB: NULLs in x and in the subquery, and an empty one."""
    pytest.importorskip("duckdb")
    from pqe.testing import oracle
    from pqe.testing.compare import compare

    t = pa.table({"x": pa.array([1, 2, 3, None, 5], pa.int64()), "g": [1, 1, 2, 2, 3]})
    s = pa.table({"y": pa.array(values, pa.int64()),
                  "g": pa.array([1, 2][:len(values)] if values != [None, None] else [1, 3], pa.int64())})
    con = oracle.connect({"t": t, "s": s})
    ctx = pqe.Context(partitions=2)
    ctx.register_arrow("t", t)
    ctx.register_arrow("s", s)
    checked = 0
    for op in ["=", "<>", "<", "<=", ">", ">="]:
        for q in ["ANY", "ALL"]:
            for corr in ["", " WHERE s.g = t.g"]:
                sub = f"x {op} {q} (SELECT y FROM s{corr})"
                for sql in [f"SELECT x, {sub} AS r FROM t ORDER BY x",
                            f"SELECT x FROM t WHERE {sub} ORDER BY x",
                            f"SELECT x FROM t WHERE NOT ({sub}) ORDER BY x"]:
                    m = compare(ctx.sql(sql).to_arrow(), oracle.query(con, sql), sql=sql)
                    assert m is None, f"{sql}: {m}"
                    checked += 1
    assert checked == 72


def test_any_all_explain_and_errors(ctx):
    text = ctx.sql("SELECT x FROM pair WHERE x > ALL (SELECT c FROM one)").explain()
    assert "NOT (pair.x <= ANY (<subquery>))" in text
    with pytest.raises(pqe.Error, match="1 columns|expected 1"):
        ctx.sql("SELECT x FROM pair WHERE x > ANY (SELECT c, c FROM one)").to_arrow()


def test_rpad_pads_on_the_right(ctx):
    assert rows(ctx, "SELECT lpad('ab', 5, 'x'), rpad('ab', 5, 'x'), rpad('7', 3, '0')") == \
        [("xxxab", "abxxx", "700")]


def test_insert_of_an_unconvertible_value_is_a_pqe_error():
    ctx = pqe.Context()
    ctx.sql("CREATE TABLE items (id BIGINT, qty BIGINT)")
    with pytest.raises(pqe.Error, match="'many' is not a valid BIGINT"):
        ctx.sql("INSERT INTO items (id, qty) VALUES (6, 'many')")
    assert ctx.sql("SELECT count(*) AS n FROM items").to_pylist() == [{"n": 0}]


def test_or_of_exists_over_a_comma_join_builds_no_cross_product():
    """TPC-DS q10/q35: the WHERE's plain conjuncts are applied before EXISTS marks are made,
    so the marks' domains come from the joined rows, never from the FROM list's product."""
    import numpy as np

    ctx = pqe.Context()
    ctx.register_arrow("a", pa.table({"k": np.arange(3000)}))
    ctx.register_arrow("b", pa.table({"k2": np.arange(3000)}))
    ctx.register_arrow("s", pa.table({"c": [1, 2]}))
    ctx.register_arrow("t", pa.table({"c": [5]}))
    sql = ("SELECT count(*) FROM a, b WHERE a.k = b.k2 AND (EXISTS (SELECT 1 FROM s WHERE s.c = a.k) "
           "OR EXISTS (SELECT 1 FROM t WHERE t.c = a.k))")
    assert "NestedLoopJoin" not in ctx.sql(sql).explain()
    assert rows(ctx, sql) == [(3,)]


def test_memory_estimate_of_a_nested_loop_join_counts_its_output():
    from pqe.physical.plan import estimated_memory

    ctx = pqe.Context()
    ctx.register_arrow("a", pa.table({"k": pa.array(range(20000), pa.int64())}))
    phys = ctx.sql("SELECT count(*) FROM a x, a y WHERE x.k < y.k").physical_plan()
    assert estimated_memory(phys) > 20000 * 20000 * 16 * 0.1


def test_partitions_grow_with_the_data():
    from pqe.physical.planner import PhysicalPlanner, PlannerConfig

    p = PhysicalPlanner(PlannerConfig(target_partitions=4))
    assert p._partition_count(6_000_000, 53) == 4           # SF1 lineitem: the cores decide
    assert p._partition_count(60_000_000, 524) == 15        # SF10: at most 4M rows each
    assert p._partition_count(60_000_000, 8) == 8           # never more than row groups
    assert p._partition_count(100_000, 10) == 1             # small data: one partition


def test_dask_sizes_a_table_slice_by_its_rows():
    """Hash splits return slices; each must not count as its whole parent (spurious spills)."""
    import numpy as np
    from dask.sizeof import sizeof

    import pqe.execution.ops  # noqa: F401  (registers the size function)

    t = pa.table({"a": np.arange(1_000_000)})
    pieces = [t.slice(i * 62_500, 62_500) for i in range(16)]
    assert sizeof(pieces) < 1.2 * sizeof(t)


def test_where_true_and_a_subquery(ctx):
    assert rows(ctx, "SELECT x FROM pair WHERE TRUE AND x = (SELECT max(x) FROM pair)") == [(2,)]


def test_a_range_on_one_column_is_estimated_as_one_interval():
    """`d >= a AND d < b` keeps (b - a) of the column's span, not the product of two halves
    (which overestimated TPC-H Q4's orders 7x at SF10 and picked a shuffle over build_left)."""
    import numpy as np

    from pqe.plan.stats import Estimator

    ctx = pqe.Context()
    ctx.register_arrow("r", pa.table({"d": np.arange(100_000, dtype=np.int64)}))
    plan = ctx.sql("SELECT d FROM r WHERE d >= 40000 AND d < 45000 AND d > 41000").optimized_plan()
    est = Estimator().rows(plan)
    assert 3_000 < est < 5_000  # true: 3999; the product of halves would say ~24,000
    both_sides = ctx.sql("SELECT d FROM r WHERE 45000 > d AND d >= 40000").optimized_plan()
    assert 4_000 < Estimator().rows(both_sides) < 6_000
    empty = ctx.sql("SELECT d FROM r WHERE d > 60000 AND d < 50000").optimized_plan()
    assert Estimator().rows(empty) < 100


def test_equalities_and_in_lists_on_one_column_intersect():
    """`y = 7 AND y IN (6, 7)` keeps the rows of one value, not 1/200 of 2/200 of them (TPC-DS
    Q74's date_dim, where a CTE's `d_year IN (2001, 2002)` met its consumer's `d_year = 2002`,
    read as 4 days of 73,049 and turned the sales it joined into 5,701 rows of 540,000)."""
    import numpy as np

    from pqe.plan.stats import Estimator

    ctx = pqe.Context()
    ctx.register_arrow("r", pa.table({"y": np.arange(100_000, dtype=np.int64) % 200}))
    one = ctx.sql("SELECT y FROM r WHERE y = 7 AND y IN (6, 7)").optimized_plan()
    assert 250 < Estimator().rows(one) < 1_000  # true: 500; the product said 5
    two = ctx.sql("SELECT y FROM r WHERE y IN (5, 6, 7) AND y IN (6, 7, 8)").optimized_plan()
    assert 500 < Estimator().rows(two) < 2_000  # true: 1,000
    none = ctx.sql("SELECT y FROM r WHERE y = 7 AND y IN (1, 2)").optimized_plan()
    assert Estimator().rows(none) < 10
    kept = ctx.sql("SELECT y FROM r WHERE y = 7 AND y NOT IN (1, 2)").optimized_plan()
    assert 250 < Estimator().rows(kept) < 1_000
    assert ctx.sql("SELECT count(*) AS n FROM r WHERE y = 7 AND y IN (6, 7)").to_pylist() == [{"n": 500}]


@pytest.mark.parametrize("where, groups", [
    ("y = 7", 1), ("7 = y", 1), ("y IN (1, 2, 3)", 3), ("y < 20", 20), ("y >= 180", 20),
    ("y = 7 AND y < 100", 1),
])
def test_a_filtered_column_has_only_the_values_the_filter_left(where, groups):
    """Downstream of `WHERE y = 7` y has one distinct value, not its 200 of the table: TPC-DS
    Q4/Q11/Q74 group sales by (customer, d_year) under `d_year = 2002`, and eager aggregation
    (optimizer.eager_aggregate) saw 100,000 x 201 groups where 100,000 were left, so it never
    aggregated the 540,000 sales rows before joining the customers' text columns onto them
    (Q4 0.70 -> 0.54 s, Q74 0.40 -> 0.26 s at SF1)."""
    import numpy as np

    from pqe.plan.stats import Estimator

    ctx = pqe.Context()
    ctx.register_arrow("r", pa.table({"y": np.arange(100_000, dtype=np.int64) % 200,
                                      "v": np.arange(100_000, dtype=np.int64)}))
    sql = f"SELECT y, sum(v) AS s FROM r WHERE {where} GROUP BY y"
    est = Estimator().rows(ctx.sql(sql).optimized_plan())
    assert groups * 0.5 <= est <= groups * 1.6, est  # was 200 for every one of them
    assert len(ctx.sql(sql).to_pylist()) == groups
    # a cast of the column is not the column: CAST(v / 1000 AS INT) = 7 keeps 1,000 values of v
    plan = ctx.sql("SELECT v, count(*) AS n FROM r WHERE CAST(v / 1000 AS INT) = 7 "
                   "GROUP BY v").optimized_plan()
    assert Estimator().rows(plan) > 100


def test_key_uniqueness_is_sampled_from_the_data(tpch_dir):
    from pqe.catalog import ParquetTable
    from pqe.plan.stats import Estimator

    from helpers import table_path

    orders = ParquetTable(str(table_path(tpch_dir, "orders")))
    lineitem = ParquetTable(str(table_path(tpch_dir, "lineitem")))
    assert orders.key_sample_unique("o_orderkey")
    assert not orders.key_sample_unique("o_custkey")
    assert not orders.key_sample_unique("o_comment")  # text: never a dense key
    assert not lineitem.key_sample_unique("l_orderkey")  # spans as many keys as rows, repeats

    ctx = pqe.Context()
    for name in ("orders", "customer"):
        ctx.register_parquet(name, str(table_path(tpch_dir, name)))
    plan = ctx.sql("SELECT o_orderkey, c_custkey FROM orders JOIN customer ON o_custkey = c_custkey "
                   "WHERE o_totalprice > 1000").optimized_plan()
    est = Estimator()
    out = {f.name: f for f in plan.schema}
    from pqe.plan.expr import ColumnRef
    assert est.unique(plan, ColumnRef(out["o_orderkey"]))      # each order meets one customer
    assert not est.unique(plan, ColumnRef(out["c_custkey"]))   # a customer has many orders


def test_the_larger_side_with_a_unique_dense_key_is_built_once():
    """orders against filtered lineitem (TPC-H Q9 at SF10: 15M orders, 3.3M lineitems): the
    unique side becomes one shared lookup array instead of hashing the other side once per
    probe partition (Q9's join went from 3.5 s to 0.27 s)."""
    import numpy as np

    ctx = pqe.Context(partitions=4)
    rng = np.random.default_rng(0)
    ctx.register_arrow("big", pa.table({"k": np.arange(400_000), "v": np.arange(400_000) % 7}))
    fk = rng.integers(0, 400_000, 100_000)
    ctx.register_arrow("small", pa.table({"fk": fk, "w": np.ones(100_000)}))
    df = ctx.sql("SELECT count(*), sum(v) FROM big JOIN small ON k = fk")
    text = df.explain()
    join = text[text.index("HashJoin[broadcast, dense]"):]
    assert join.index("MemoryScan: small") < join.index("Exchange[gather]") < join.index("MemoryScan: big")
    assert df.to_arrow().to_pylist() == [{"count(*)": 100_000, "sum(v)": int((fk % 7).sum())}]
    # duplicates in the larger side: it stays the probe side
    ctx.register_arrow("dup", pa.table({"k": np.arange(400_000) // 2, "v": np.ones(400_000, np.int64)}))
    text = ctx.sql("SELECT count(*) FROM dup JOIN small ON k = fk").explain()
    join = text[text.index("HashJoin["):]
    assert join.index("MemoryScan: dup") < join.index("MemoryScan: small")


def test_correlation_inside_right_and_full_joins():
    """Fuzz seed 2 case 834: an outer reference in a FULL JOIN's ON gave NULL for 1 (the
    preserved side lost the outer row's columns). RIGHT joins now carry them on the right;
    FULL joins are refused by name rather than answered wrongly."""
    ctx = pqe.Context()
    ctx.register_arrow("t0", pa.table({"c3": pa.array([1, 2, None], pa.int64())}))
    ctx.register_arrow("t1", pa.table({"c3": pa.array([1.0, 5.0])}))
    with pytest.raises(pqe.UnsupportedError, match="FULL JOIN"):
        ctx.sql("SELECT (SELECT SUM(a6.c3) FROM t1 a5 FULL JOIN t0 a6 "
                "ON a4.c3 IS NOT DISTINCT FROM a5.c3) FROM t0 a4").to_arrow()
    # checked against DuckDB
    right = ("SELECT a4.c3, (SELECT COUNT(*) FROM t1 a5 RIGHT JOIN t0 a6 "
             "ON a4.c3 = a5.c3 AND a6.c3 = a4.c3) s FROM t0 a4 ORDER BY 1")
    assert rows(ctx, right) == [(1, 3), (2, 3), (None, 3)]
    inner_right = ("SELECT a4.c3, (SELECT COUNT(a6.c3) FROM t1 a5 RIGHT JOIN "
                   "(SELECT * FROM t0 WHERE c3 > a4.c3) a6 ON a5.c3 = a6.c3) s FROM t0 a4 ORDER BY 1")
    assert rows(ctx, inner_right) == [(1, 1), (2, 0), (None, 0)]


def test_estimating_a_join_filter_on_a_nested_cast_does_not_recurse():
    """Fuzz seed 2 case 3070: `CAST(CAST(min(x) AS INT) AS BIGINT) IN (count(...))` left in
    a join's filter made the estimator ask the join for its own size (RecursionError)."""
    ctx = pqe.Context()
    ctx.register_arrow("t2", pa.table({"c2": pa.array([1, 1, 2, None], pa.int64())}))
    sql = ("SELECT c2, CAST(MIN(0.25) AS INT) IN (COUNT(DISTINCT c2)) x FROM t2 GROUP BY c2 "
           "HAVING CAST(MIN(0.25) AS INT) IN (COUNT(DISTINCT NULL)) ORDER BY 1")
    assert rows(ctx, sql) == [(1, False), (2, False), (None, True)]


# ---- dynamic filters and outer joins -------------------------------------------------------------

@pytest.fixture
def clustered(tmp_path):
    """A fact table sorted by `k` (20 row groups), an item and a year dimension."""
    import pyarrow.parquet as pq

    n = 200_000
    fact = pa.table({"k": pa.array([i // 1000 for i in range(n)], pa.int64()),
                     "g": pa.array([i % 7 for i in range(n)], pa.int64()),
                     "v": pa.array([1] * n, pa.int64())})
    pq.write_table(fact, tmp_path / "fact.parquet", row_group_size=10_000)
    pq.write_table(pa.table({"k": pa.array(range(200), pa.int64()),
                             "y": pa.array([2001 if i < 100 else 2002 for i in range(200)]),
                             "z": pa.array([int(i in (3, 4)) for i in range(200)])}),
                   tmp_path / "dim.parquet")
    pq.write_table(pa.table({"g": pa.array(range(7), pa.int64())}), tmp_path / "item.parquet")
    c = pqe.Context(threads=2)
    for t in ("fact", "dim", "item"):
        c.register_parquet(t, str(tmp_path / f"{t}.parquet"))
    return c


def test_dynamic_filter_skips_row_groups(clustered):
    sql = "SELECT count(*) FROM fact JOIN dim ON fact.k = dim.k WHERE dim.z = 1"
    assert "dynamic_filter=[fact.k]" in clustered.sql(sql).explain()
    assert rows(clustered, sql) == [(2000,)]
    answer, parts = _scan_partition_rows(clustered, sql, "fact")
    assert answer == [(2000,)] and sum(parts) == 10_000  # one row group of 20 read
    analyzed = clustered.sql(sql).explain(analyze=True)
    scan = next(line for line in analyzed.splitlines() if "ParquetScan: fact" in line)
    assert "rows=2000 " in scan  # and of its rows the two keys' (the build keys' range)


@pytest.mark.parametrize("keys,groups", [((3, 150), 2), ((0, 55, 110, 199), 4),
                                         ((3, 4, 7), 1), ((250,), 0), ((3, 3, None), 1)])
def test_dynamic_filter_of_a_few_spread_keys_reads_only_their_row_groups(clustered, keys,
                                                                          groups):
    """A small build prunes by its keys themselves, not only by their [min, max]: keys 3 and
    150 span row groups 0 to 15 of 20, but only 2 hold either (TPC-DS Q25's store_sales
    against five ticket numbers: 5 of 19 row groups, as DuckDB's IN-list filter)."""
    clustered.register_arrow("pick", pa.table({"k": pa.array(keys, pa.int64()),
                                               "w": [1] * len(keys)}))
    sql = "SELECT count(*), sum(fact.g) FROM fact JOIN pick ON fact.k = pick.k WHERE pick.w = 1"
    assert "dynamic_filter=[fact.k]" in clustered.sql(sql).explain()
    expected = [i for i in range(200_000) for k in keys if k is not None and i // 1000 == k]
    answer, parts = _scan_partition_rows(clustered, sql, "fact")
    assert answer == [(len(expected), sum(i % 7 for i in expected) if expected else None)]
    assert sum(parts) == groups * 10_000, parts


def test_dynamic_filter_past_the_set_limit_prunes_by_the_range(clustered, monkeypatch):
    """A build of more rows than SET_PRUNE_ROWS prunes by its keys' range only (sorting its
    keys would cost every scan task)."""
    import pqe.kernels.scan as S

    monkeypatch.setattr(S, "SET_PRUNE_ROWS", 1)
    clustered.register_arrow("pick", pa.table({"k": pa.array([3, 150], pa.int64()),
                                               "w": [1, 1]}))
    sql = "SELECT count(*) FROM fact JOIN pick ON fact.k = pick.k WHERE pick.w = 1"
    answer, parts = _scan_partition_rows(clustered, sql, "fact")
    assert answer == [(2000,)] and sum(parts) == 16 * 10_000, parts  # row groups 0 to 15


def _scan_partition_rows(ctx, sql, table):
    """The answer to `sql` and the rows each task of `table`'s scan read (sorted)."""
    import pqe.execution.ops as O

    seen = {}
    units = O.ReadFiles._units

    def counted(op, inputs):
        out = units(op, inputs)
        if any(table in u.path for u in op.units):
            seen[id(op)] = sum(u.num_rows for u in out)
        return out

    O.ReadFiles._units = counted
    try:
        out = rows(ctx, sql)
    finally:
        O.ReadFiles._units = units
    return out, sorted(seen.values())


def test_dynamic_filter_spreads_the_kept_row_groups_over_the_scan_tasks(clustered):
    """On data clustered by the key the row groups a dynamic filter keeps are contiguous: the
    planned partitions (contiguous runs of row groups) held all of them in one task, which
    read alone while the others had nothing (TPC-DS Q99's catalog_sales: 384k of 480k rows in
    one of four tasks). Every task now keeps the same row groups and reads its share."""
    from dataclasses import replace

    cfg = clustered.session.config
    clustered.session.config = replace(cfg, planner=replace(cfg.planner, min_partition_rows=1,
                                                            target_partitions=4))
    sql = "SELECT count(*), sum(g) FROM fact JOIN dim ON fact.k = dim.k WHERE dim.k < 40"
    assert "dynamic_filter=[fact.k]" in clustered.sql(sql).explain()
    answer, parts = _scan_partition_rows(clustered, sql, "fact")
    expected = sum(i % 7 for i in range(40_000))
    assert answer == [(40_000, expected)]
    # the 4 kept row groups of 20 (10k rows each), one per task; before: [0, 0, 0, 40000]
    assert parts == [10_000, 10_000, 10_000, 10_000], parts
    # an empty build keeps none, in every task
    empty = "SELECT count(*) FROM fact JOIN dim ON fact.k = dim.k WHERE dim.z = 5"
    assert _scan_partition_rows(clustered, empty, "fact") == ([(0,)], [0, 0, 0, 0])


def test_a_scan_task_reading_while_its_others_idle_decodes_on_arrows_threads(clustered,
                                                                              monkeypatch):
    """When the dynamic filter keeps fewer row groups than the scan has tasks, the tasks with
    nothing to read leave their cores idle: the tasks that read decode their columns on
    Arrow's threads (TPC-DS Q21's one kept 2M-row inventory row group). When every task has
    row groups to read, each decodes on its own thread, beside the others."""
    from dataclasses import replace

    import pqe.kernels.scan as S

    cfg = clustered.session.config
    clustered.session.config = replace(cfg, planner=replace(cfg.planner, min_partition_rows=1,
                                                            target_partitions=4))
    reads = []
    real = S._read_unit

    def spy(provider, fmt, unit, row_groups, *rest):
        if "fact" in unit.path:
            reads.append((len(row_groups), rest[-1]))
        return real(provider, fmt, unit, row_groups, *rest)

    monkeypatch.setattr(S, "_read_unit", spy)
    one = "SELECT count(*), sum(g) FROM fact JOIN dim ON fact.k = dim.k WHERE dim.z = 1"
    assert "dynamic_filter=[fact.k]" in clustered.sql(one).explain()
    assert rows(clustered, one) == [(2000, sum(i % 7 for i in range(3000, 5000)))]
    assert reads == [(1, True)]  # one row group kept, read by one of four tasks
    reads.clear()
    many = "SELECT count(*) FROM fact JOIN dim ON fact.k = dim.k WHERE dim.k < 60"
    assert rows(clustered, many) == [(60_000,)]
    assert sorted(reads) == [(1, False), (1, False), (2, False), (2, False)]


def test_scan_tasks_are_not_dealt_anew_when_that_would_break_their_clustering(tmp_path):
    """A scan whose partitions hold disjoint ranges of a column (a GROUP BY on it then needs
    no exchange) keeps its planned partitions when its row groups overlap within one of them:
    dealt out anew, two tasks could hold rows of one group."""
    import pyarrow.parquet as pq
    from pqe.physical.plan import ScanExec
    from pqe.physical.planner import PlannerConfig

    # k ascending by pairs of row groups that overlap each other: [0,9] [5,14] | [20,29] ...
    ks = []
    for block in range(8):
        ks += [block * 20 + i for i in range(10)] + [block * 20 + 5 + i for i in range(10)]
    pq.write_table(pa.table({"k": pa.array(ks, pa.int64())}), tmp_path / "f.parquet",
                   row_group_size=10)
    ctx = pqe.Context()
    ctx.register_parquet("f", str(tmp_path / "f.parquet"))
    from dataclasses import replace
    ctx.session.config = replace(ctx.session.config, planner=replace(
        PlannerConfig(), min_partition_rows=1, target_partitions=4))
    plan = ctx.sql("SELECT k, count(*) FROM f GROUP BY k").physical_plan()
    scan = next(n for n in _walk_physical(plan) if isinstance(n, ScanExec))
    assert scan.dist.kind == "clustered" and scan.n == 4
    assert not scan.resplit
    # the same values, one row group each: any contiguous runs keep disjoint ranges
    pq.write_table(pa.table({"k": pa.array(sorted(ks), pa.int64())}), tmp_path / "g.parquet",
                   row_group_size=20)
    ctx.register_parquet("g", str(tmp_path / "g.parquet"))
    plan = ctx.sql("SELECT k, count(*) FROM g GROUP BY k").physical_plan()
    scan = next(n for n in _walk_physical(plan) if isinstance(n, ScanExec))
    assert scan.dist.kind == "clustered" and scan.resplit


def _walk_physical(node):
    yield node
    for c in node.children():
        yield from _walk_physical(c)


def test_dynamic_filter_not_applied_to_a_shared_probe(clustered):
    """TPC-DS Q75 at SF1: `fact JOIN item` is one subplan probed by a 2001 and a 2002 dim;
    narrowing it by either build's key range would lose the other's rows."""
    sql = """WITH s AS (SELECT fact.k, fact.v FROM fact JOIN item ON fact.g = item.g)
             SELECT (SELECT sum(v) FROM s JOIN dim ON s.k = dim.k WHERE dim.y = 2001 AND dim.z = 1),
                    (SELECT sum(v) FROM s JOIN dim ON s.k = dim.k WHERE dim.y = 2002 AND dim.z = 0)"""
    assert rows(clustered, sql) == [(2000, 100_000)]


def test_outer_join_under_null_rejecting_join_is_inner(ctx):
    """TPC-DS Q93's shape: the LEFT JOIN's NULL-extended rows cannot pass the join above."""
    sql = """SELECT o.id, c.city FROM o LEFT JOIN c ON o.cust = c.name, pair
             WHERE c.lim = pair.x * 100 ORDER BY o.id"""
    optimized = ctx.sql(sql).explain().split("== Optimized Logical Plan ==")[1]
    assert "Join(left)" not in optimized.split("== Physical Plan ==")[0]
    assert rows(ctx, sql) == [(3, "rome")]
    # IS NULL keeps the NULL-extended rows: the join stays LEFT
    kept = "SELECT o.id, c.city FROM o LEFT JOIN c ON o.cust = c.name WHERE c.lim IS NULL ORDER BY o.id"
    assert rows(ctx, kept) == [(4, "paris"), (5, None), (6, None)]


def test_dynamic_filter_on_a_shared_scan_reads_any_builds_range(clustered):
    """TPC-DS Q39's shape: one scan of fact serves two joins with different builds; it reads
    the row groups inside either build's key range, and each join still keeps its own rows.
    (No predicate on dim.k itself: it would be copied onto fact.k, a scan of its own.)"""
    sql = """SELECT (SELECT sum(v) FROM fact JOIN dim ON fact.k = dim.k WHERE dim.z = 1),
                    (SELECT sum(v) FROM fact JOIN dim ON fact.k = dim.k
                     WHERE dim.y = 2002 AND dim.z = 0)"""
    assert "any of 2 builds" in clustered.sql(sql).explain()
    assert rows(clustered, sql) == [(2000, 100_000)]


def test_a_foreign_key_join_to_a_filtered_unique_key_keeps_the_fact_side_fraction(tpch_dir):
    """lineitem JOIN orders WHERE o_orderdate in one year: o_orderkey spans 4x as many values
    as there are orders, so l_orderkey's distinct count read from its span was 4x too high and
    the join was estimated at the size of the filtered orders (SF10 Q5: 2.3M, truly 9.1M); the
    gathered build sized from it killed 1 GiB workers. A foreign key takes its values from the
    unique key's domain (containment)."""
    from pqe.plan.logical import Join, walk_plan
    from pqe.plan.stats import Estimator

    from helpers import register_tpch

    ctx = register_tpch(pqe.Context(), tpch_dir)
    sql = ("SELECT l_extendedprice FROM lineitem JOIN orders ON l_orderkey = o_orderkey "
           "WHERE o_orderdate >= DATE '1994-01-01' AND o_orderdate < DATE '1995-01-01'")
    plan = ctx.sql(sql).optimized_plan()
    join = next(p for p in walk_plan(plan) if isinstance(p, Join))
    actual = ctx.sql(f"SELECT count(*) AS n FROM ({sql})").to_pylist()[0]["n"]
    est = Estimator().rows(join)
    assert actual / 1.5 < est < actual * 1.5, (est, actual)


def test_broadcast_builds_are_capped_by_the_memory_each_process_has(tpch_dir):
    """Under a memory limit (threads' memory_limit=, or each Dask worker's) a broadcast build,
    held whole by every process that probes it, takes at most BROADCAST_FRACTION of it; a
    dense lookup array counts 4 bytes per key of its span. Larger builds join partitioned."""
    from dataclasses import replace

    from pqe.physical.planner import BROADCAST_FRACTION, bound_memory

    from helpers import register_tpch, tpch_query

    ctx = register_tpch(pqe.Context(partitions=4), tpch_dir)
    sql = tpch_query("q9")
    assert "HashJoin[broadcast, dense]: inner on=[lineitem.l_orderkey = orders.o_orderkey]" \
        in ctx.sql(sql).explain()
    cfg = ctx.session.config
    orders_build = 15_000 * 12 + 4 * 60_000  # SF0.01 orders: key and date, and a 60k-key span
    limit = int(orders_build / BROADCAST_FRACTION) // 2
    bounded = bound_memory(cfg.planner, limit, 2)
    assert bounded.broadcast_bytes == int(limit * BROADCAST_FRACTION)
    ctx.session.config = replace(cfg, planner=bounded)
    text = ctx.sql(sql).explain()
    assert "HashJoin[partitioned]: inner on=[orders.o_orderkey = lineitem.l_orderkey]" in text \
        or "HashJoin[partitioned]: inner on=[lineitem.l_orderkey = orders.o_orderkey]" in text
    ctx.session.config = cfg


def test_a_dense_index_holds_its_slots_once():
    """The lookup array with its two sentinels is one array, `slots` a view of it: a second
    copy doubled every dense build's memory, and what Dask ships to each worker."""
    import numpy as np

    from pqe.kernels import dense_join

    t = pa.table({"k": pa.array([10, 12, 15], pa.int64()), "v": ["a", "b", "c"]})
    idx = dense_join.build(t, "k")
    assert isinstance(idx, dense_join.DenseIndex)
    assert np.shares_memory(idx.slots, idx.guarded) and len(idx.guarded) == len(idx.slots) + 2
    assert idx.slots.tolist() == [0, -1, 1, -1, -1, 2]
    assert idx.nbytes == t.nbytes + 8 * 4
    import pickle

    back = pickle.loads(pickle.dumps(idx))
    assert back.slots.tolist() == idx.slots.tolist() and back.guarded[0] == back.guarded[-1] == -1


# ---- predicates copied across join keys -----------------------------------------------------

@pytest.fixture
def keyed():
    c = pqe.Context(partitions=2)
    c.register_arrow("s", pa.table({"yr": pa.array([2000, 2000, 2001, 2002, None], pa.int64()),
                                    "q": pa.array([1, 2, 3, 4, 5], pa.int64())}))
    c.register_arrow("w", pa.table({"wyr": pa.array([2000, 2001, 2001, 2003, None], pa.int64()),
                                    "wq": pa.array([10, 20, 30, 40, 50], pa.int64())}))
    c.register_arrow("n", pa.table({"y": pa.array([None, 2001], pa.int64())}))
    return c


def _scan_filters(ctx, sql, table):
    from pqe.plan.logical import Scan, walk_plan

    plan = ctx.sql(sql).optimized_plan()
    return [str(f) for p in walk_plan(plan) if isinstance(p, Scan) and p.table == table
            for f in p.filters]


def test_a_preserved_sides_key_predicate_reaches_the_other_side_of_a_left_join(keyed):
    """TPC-DS Q78: `ss_sold_year = 2000` above `ss LEFT JOIN ws ON ws_sold_year = ss_sold_year`
    reaches ws (an aggregate grouped by the year), which then reads one year, not all."""
    sql = """SELECT yr, q, wq FROM (SELECT yr, sum(q) AS q FROM s GROUP BY yr) a
             LEFT JOIN (SELECT wyr, sum(wq) AS wq FROM w GROUP BY wyr) b ON b.wyr = a.yr
             WHERE a.yr = 2000"""
    assert any("2000" in f for f in _scan_filters(keyed, sql, "w"))
    assert rows(keyed, sql) == [(2000, 3, 10)]
    # inner, semi and anti joins too; an ON predicate of the left side as well
    inner = "SELECT q, wq FROM s JOIN w ON s.yr = w.wyr WHERE s.yr > 2000 ORDER BY q, wq"
    assert any("2000" in f for f in _scan_filters(keyed, inner, "w"))
    assert rows(keyed, inner) == [(3, 20), (3, 30)]
    semi = "SELECT q FROM s WHERE yr >= 2001 AND yr IN (SELECT wyr FROM w) ORDER BY q"
    assert any("2001" in f for f in _scan_filters(keyed, semi, "w"))
    assert rows(keyed, semi) == [(3,)]
    on_left = """SELECT q, wq FROM s LEFT JOIN w ON s.yr = w.wyr AND s.yr = 2001
                 ORDER BY q, wq"""
    assert rows(keyed, on_left) == [(1, None), (2, None), (3, 20), (3, 30), (4, None),
                                    (5, None)]


def test_a_predicate_is_never_copied_onto_a_preserved_side_or_a_not_in(keyed):
    # the null-supplying side's ON predicate must not filter the preserved rows
    sql = "SELECT q, wq FROM s LEFT JOIN w ON s.yr = w.wyr AND w.wyr = 2001 ORDER BY q, wq"
    assert not _scan_filters(keyed, sql, "s")
    assert rows(keyed, sql) == [(1, None), (2, None), (3, 20), (3, 30), (4, None), (5, None)]
    # NOT IN: a NULL in the subquery makes every comparison unknown; copying `y = 2000` into
    # the subquery would drop that NULL and let 2000 through
    not_in = "SELECT yr FROM s WHERE yr = 2000 AND yr NOT IN (SELECT y FROM n)"
    assert rows(keyed, not_in) == []
    # a predicate that can fail (a cast of text) is not copied onto rows it never saw
    keyed.register_arrow("a", pa.table({"s": ["5", "6"]}))
    keyed.register_arrow("b", pa.table({"t": ["5", "abc"]}))
    cast = "SELECT s, t FROM a JOIN b ON a.s = b.t WHERE CAST(a.s AS INTEGER) = 5"
    assert rows(keyed, cast) == [("5", "5")]


# ---- LEFT JOIN ... WHERE <key of the right side> IS NULL ------------------------------------

def test_unmatched_rows_of_a_left_join_are_estimated_as_an_anti_join():
    """TPC-DS Q78: `sales LEFT JOIN returns ... WHERE r_key IS NULL` keeps the ~90% of sales
    without a return; taken as a generic IS NULL (5%), the 1.3M catalog sales looked like 72k,
    were built on instead of probed and aggregated in one partition. (The optimizer now makes
    the join and filter an anti join: push_down_filter._outer_to_anti.)"""
    import numpy as np

    from pqe.plan.logical import Join, walk_plan
    from pqe.plan.stats import Estimator

    ctx = pqe.Context()
    k = np.arange(10_000, dtype=np.int64)
    ctx.register_arrow("sales", pa.table({"k": k, "j": k % 7}))
    ctx.register_arrow("ret", pa.table({"rk": k[::10], "rj": k[::10] % 7}))
    sql = "SELECT k FROM sales LEFT JOIN ret ON rk = k AND rj = j WHERE rk IS NULL"
    plan = ctx.sql(sql).optimized_plan()
    f = next(p for p in walk_plan(plan) if isinstance(p, Join))
    assert f.kind == "anti"
    assert 6_000 < Estimator().rows(f) < 10_000  # true: 9,000; as 5% of IS NULL: 500
    assert ctx.sql(f"SELECT count(*) AS n FROM ({sql})").to_pylist() == [{"n": 9_000}]


# ---- ROLLUP / CUBE from the finest grouping set ----------------------------------------------

def test_rollup_aggregates_its_input_once_and_matches_one_group_by_per_set():
    """TPC-DS Q22: ROLLUP over 4 keys joined and aggregated 2.3M rows once per grouping set;
    the coarser sets now aggregate the finest set's groups."""
    from pqe.plan.logical import Aggregate, Scan, walk_plan

    ctx = pqe.Context(partitions=3)
    ctx.register_arrow("t", pa.table({
        "a": ["x", "x", "y", "y", "y", None, "z"],
        "b": pa.array([1, 2, 1, 1, None, 3, 4], pa.int64()),
        "v": pa.array([10, None, 30, 40, 50, 60, None], pa.int32()),
        "d": pa.array([D("1.5"), D("2.25"), None, D("4.00"), D("5.5"), D(6), None],
                      pa.decimal128(9, 2))}))
    aggs = ("avg(v), sum(v), count(v), count(*), min(d), max(v), sum(d), avg(d), "
            "count(*) FILTER (WHERE v > 20)")
    sql = f"SELECT a, b, {aggs} FROM t GROUP BY ROLLUP (a, b) ORDER BY ALL"
    plan = ctx.sql(sql).optimized_plan()
    over_input = [p for p in walk_plan(plan)
                  if isinstance(p, Aggregate) and not isinstance(p.input, Aggregate)]
    assert len(set(over_input)) == 1  # one aggregate (shared by the sets) reads the input
    assert len({p for p in walk_plan(plan) if isinstance(p, Scan)}) == 1
    by_set = " UNION ALL ".join(
        f"SELECT {cols}, {aggs} FROM t {group}" for cols, group in (
            ("a, b", "GROUP BY a, b"), ("a, NULL::BIGINT", "GROUP BY a"),
            ("NULL::VARCHAR, NULL::BIGINT", "")))
    want = ctx.sql(f"SELECT * FROM ({by_set}) ORDER BY ALL").to_arrow()
    got = ctx.sql(sql).to_arrow()
    assert got.schema.types == want.schema.types
    assert got.to_pylist() == want.rename_columns(got.column_names).to_pylist()
    # the empty grouping set of no rows: one row, COUNT 0, the others NULL
    empty = f"SELECT a, b, {aggs} FROM t WHERE v > 1000 GROUP BY ROLLUP (a, b)"
    assert rows(ctx, empty) == [(None, None, None, None, 0, 0, None, None, None, None, 0)]


def test_a_table_read_twice_is_read_once_only_while_holding_it_is_cheap(tmp_path):
    """A scan repeated under another alias (TPC-H Q21's l1 and l3) is read once and held from
    its first consumer to its last; past PlannerConfig.shared_scan_bytes (and a share of
    memory_limit) it is read again: holding Q18's lineitem at SF10 took 1.4 GB."""
    from dataclasses import replace

    import numpy as np
    import pyarrow.parquet as pq

    from pqe.physical.planner import PlannerConfig, bound_memory

    n = 50_000
    pq.write_table(pa.table({"k": np.arange(n, dtype=np.int64),
                             "v": np.arange(n, dtype=np.int64) % 7}), tmp_path / "t.parquet")
    ctx = pqe.Context()
    ctx.register_parquet("t", str(tmp_path / "t.parquet"))
    sql = ("SELECT count(*) FROM t a WHERE a.v > 2 AND NOT EXISTS "
           "(SELECT 1 FROM t b WHERE b.v > 2 AND b.k = a.k + 1)")
    want = [(len([k for k in range(n) if k % 7 > 2 and not (k + 1 < n and (k + 1) % 7 > 2)]),)]

    def scans(text):
        return text.split("== Physical Plan ==")[1].count("ParquetScan")

    assert scans(ctx.sql(sql).explain()) == 1 and "shared #" in ctx.sql(sql).explain()
    assert rows(ctx, sql) == want
    cfg = ctx.session.config
    held = 50_000 * 4 / 7 * 8  # the estimate of the read: k for the rows v > 2 keeps
    ctx.session.config = replace(cfg, planner=replace(cfg.planner, shared_scan_bytes=int(held / 2)))
    try:
        text = ctx.sql(sql).explain()
        assert scans(text) == 2 and "shared #" not in text
        assert rows(ctx, sql) == want
    finally:
        ctx.session.config = cfg
    assert PlannerConfig().shared_scan_bytes == 128 << 20
    assert bound_memory(PlannerConfig(), 512 << 20, 2).shared_scan_bytes == 64 << 20
    assert bound_memory(PlannerConfig(), 4 << 30, 2).shared_scan_bytes == 128 << 20


def test_a_larger_unique_side_is_not_gathered_to_build_it_dense_when_hashing_is_cheaper():
    """1M rows with a unique key against 100k with repeated keys, 4 partitions: hashing the
    smaller side in each partition stays cheaper than gathering the larger one into one task
    and building its dense index there (the build is serial, the hashing parallel). Costing
    a dense build row at 0.4 of a hash insert (its single-thread time) gathered TPC-H SF10
    Q8's 4.5M orders and 1.5M customers: 2.9 -> 4.2 s, peak RSS +150 MiB."""
    import numpy as np

    rng = np.random.default_rng(3)
    ctx = pqe.Context(partitions=4)
    ctx.register_arrow("o", pa.table({"k": rng.permutation(1_000_000).astype(np.int64),
                                      "x": np.arange(1_000_000) % 3}))
    lk = rng.integers(0, 1_000_000, 100_000)
    ctx.register_arrow("l", pa.table({"lk": lk, "y": np.arange(100_000)}))
    sql = "SELECT count(*), sum(x) FROM o JOIN l ON o.k = l.lk"
    text = ctx.sql(sql).explain().split("== Physical Plan ==")[1]
    join = next(line for line in text.splitlines() if "HashJoin" in line)
    assert "dense" not in join and "o.k = l.lk" in join, text
    x = {int(k): i % 3 for i, k in enumerate(ctx.sql("SELECT k FROM o").to_arrow().column(0).to_pylist())}
    assert rows(ctx, sql) == [(100_000, sum(x[int(k)] for k in lk))]


def test_a_sparse_unique_build_gets_the_shared_bitmap_index_not_a_hash_per_partition():
    """200k unique keys 100 apart (a 20M span: past an int32 array's 64 slots a row, within
    the bitmap's 1024) are built once into the bitmap index every probe partition shares.
    Hashed instead, TPC-H SF10 Q10's 573k orders of a quarter (60M keys) were built again in
    each of 15 lineitem partitions: 4.0 -> 3.1 s, and Q3 3.75 -> 2.1 s, 930 -> 404 MiB."""
    import numpy as np

    from pqe.physical import plan as physical_plan

    rng = np.random.default_rng(5)
    keys = np.arange(200_000, dtype=np.int64) * 100
    ctx = pqe.Context(partitions=4)
    ctx.register_arrow("o", pa.table({"k": rng.permutation(keys), "x": np.arange(200_000) % 7}))
    lk = rng.integers(0, 20_000_000, 2_000_000)
    ctx.register_arrow("l", pa.table({"lk": lk, "y": np.arange(2_000_000) % 5}))
    sql = "SELECT count(*), sum(x + y) FROM l JOIN o ON o.k = l.lk"
    text = ctx.sql(sql).explain().split("== Physical Plan ==")[1]
    join = next(line for line in text.splitlines() if "HashJoin" in line)
    assert "HashJoin[broadcast, dense]" in join, text
    span = int(keys.max()) + 1
    assert physical_plan.bitmap_form(span, len(keys)) and not span <= 64 * len(keys)
    built = ctx.sql("SELECT k, x FROM o").to_arrow()
    x = dict(zip(built.column(0).to_pylist(), built.column(1).to_pylist()))
    y = np.arange(2_000_000) % 5
    hit = (lk % 100 == 0) & (lk < span)
    want = (int(hit.sum()), int(sum(x[int(k)] for k in lk[hit]) + y[hit].sum()))
    assert rows(ctx, sql) == [want]


@pytest.mark.parametrize("kind", ["inner", "left", "semi", "anti"])
def test_a_sparse_build_over_a_narrow_range_gets_the_shared_array(kind):
    """60k unique keys 100 apart (a 6M span: past an array's 64 slots a row, below the
    bitmap's 16M-slot range) are built once into a lookup array (24 MB) every probe
    partition shares, not hashed again in each: TPC-H SF1 Q3's 147k orders of a date range
    over 6M order keys, 0.19-0.22 -> 0.17-0.19 s. NULL and out-of-range probe keys."""
    import numpy as np

    from pqe.kernels import dense_join
    from pqe.physical import plan as physical_plan

    rng = np.random.default_rng(9)
    keys = np.arange(60_000, dtype=np.int64) * 100
    span = int(keys.max()) + 1
    assert not span <= 64 * len(keys) and not physical_plan.bitmap_form(span, len(keys))
    assert physical_plan.dense_fits(span, len(keys))
    index = dense_join.build(pa.table({"k": keys}), "k")
    assert isinstance(index, dense_join.DenseIndex) and index.guarded is not None
    o = pa.table({"k": rng.permutation(keys), "x": np.arange(60_000) % 7})
    lk = rng.integers(-1000, span + 1000, 400_000).astype(object)
    lk[::97] = None
    lt = pa.table({"lk": pa.array(list(lk), pa.int64()), "y": np.arange(400_000) % 5})
    ctx = pqe.Context(partitions=4)
    ctx.register_arrow("o", o)
    ctx.register_arrow("l", lt)
    sql = {"inner": "SELECT count(*), sum(x + y) FROM l JOIN o ON o.k = l.lk",
           "left": "SELECT count(*), sum(coalesce(x, 10) + y) FROM l LEFT JOIN o ON o.k = l.lk",
           "semi": "SELECT count(*), sum(y) FROM l WHERE lk IN (SELECT k FROM o)",
           "anti": "SELECT count(*), sum(y) FROM l WHERE NOT EXISTS "
                   "(SELECT 1 FROM o WHERE o.k = l.lk)"}[kind]
    text = ctx.sql(sql).explain().split("== Physical Plan ==")[1]
    join = next(line for line in text.splitlines() if "HashJoin" in line)
    assert "dense]" in join, text
    con = oracle.connect({"o": o, "l": lt})
    assert rows(ctx, sql) == [tuple(r.values()) for r in oracle.query(con, sql).to_pylist()]


@pytest.mark.parametrize("source", ["parquet", "memory"])
def test_a_text_pattern_is_estimated_from_a_sample_of_the_column(tmp_path, source):
    """LIKE, ILIKE, prefix, suffix and substring tests keep the share of a sample of the
    column they keep (a pattern's reach has nothing to do with its length: TPC-H Q14's
    'PROMO%' keeps 17% of parts, Q20's 'forest%' 1.1%; estimated at 10% either way, Q20 at
    SF10 shuffled 9M lineitem rows for 87k keys: 1.86 -> 1.67 s, 670 -> 322 MiB). NULLs are
    kept by no pattern; without a sample the guess stays 10%."""
    import numpy as np
    import pyarrow.parquet as pq

    from pqe.plan.stats import Estimator

    n = 60_000
    # 1% 'forest x', NULL in every tenth row, the rest 'PROMO tin' or 'medium tin' or 'Ünï 名'
    s = pa.array([None if i % 10 == 9 else ("forest x" if i % 100 == 0 else
                  ("PROMO tin" if i % 3 == 0 else "medium tin" if i % 3 == 1 else "Ünï 名"))
                  for i in range(n)], pa.string())
    t = pa.table({"k": np.arange(n, dtype=np.int64), "s": s})
    ctx = pqe.Context()
    if source == "parquet":
        pq.write_table(t, tmp_path / "t.parquet", row_group_size=20_000)
        ctx.register_parquet("t", str(tmp_path / "t.parquet"))
    else:
        ctx.register_arrow("t", t)

    def estimate(where):
        return Estimator().rows(ctx.sql(f"SELECT k FROM t WHERE {where}").optimized_plan()) / n

    def actual(where):
        return rows(ctx, f"SELECT count(*) FROM t WHERE {where}")[0][0] / n

    for where in ("s LIKE 'forest%'", "s LIKE 'PROMO%'", "s ILIKE 'promo%'",
                  "starts_with(s, 'medium')", "s LIKE '%tin'", "s LIKE 'Ünï%'",
                  "s LIKE '%est%'", "s LIKE '_romo%'"):
        got, want = estimate(where), actual(where)
        assert want / 1.5 <= got <= want * 1.5 + 1e-3, (where, got, want)
    assert estimate("s LIKE 'zebra%'") < 1e-3  # in no sampled row
    small = pqe.Context()
    small.register_arrow("t", t.slice(0, 500))  # too few values to tell: the 10% guess
    plan = small.sql("SELECT k FROM t WHERE s LIKE 'forest%'").optimized_plan()
    assert Estimator().rows(plan) == pytest.approx(50)


def test_a_broadcast_counts_gathering_its_build_side():
    """A build side in several partitions is gathered before it is broadcast: its rows move
    as a shuffle's do. Uncounted, a build of 40% of the probe side's rows (a two-column key,
    no dense index) was broadcast to 4 partitions; TPC-H Q9 with its LIKE estimated from a
    sample (5% of parts) broadcast 3.2M lineitem rows at SF10 (5.0 -> 6.6 s, 1.6 -> 2.2 GB)
    where shuffling both sides was cheaper."""
    import numpy as np

    rng = np.random.default_rng(11)
    n = 1_000_000
    ctx = pqe.Context(partitions=4)
    ctx.register_arrow("big", pa.table({"a": rng.integers(0, 1000, n), "b": rng.integers(0, 1000, n)}))
    m = 400_000
    ctx.register_arrow("mid", pa.table({"a": rng.integers(0, 1000, m), "b": rng.integers(0, 1000, m)}))
    sql = "SELECT count(*) FROM big JOIN mid ON big.a = mid.a AND big.b = mid.b"
    text = ctx.sql(sql).explain().split("== Physical Plan ==")[1]
    join = next(line for line in text.splitlines() if "HashJoin" in line)
    assert "HashJoin[partitioned]" in join, text
    assert "mid" in text and "Exchange[hash(" in text
    ctx.register_arrow("small", ctx.sql("SELECT * FROM mid LIMIT 100000").to_arrow())
    smaller = "SELECT count(*) FROM big JOIN small ON big.a = small.a AND big.b = small.b"
    text = ctx.sql(smaller).explain().split("== Physical Plan ==")[1]
    assert "HashJoin[broadcast]" in next(line for line in text.splitlines() if "HashJoin" in line)


def test_a_computed_group_key_has_at_most_its_columns_distinct_values():
    """A deterministic expression over columns takes at most the product of their distinct
    counts (`substr(w_warehouse_name, 1, 20)`, `extract(year FROM d)`): TPC-DS Q99 grouped
    by such a key, estimated at a tenth of the input's rows, so its 90 groups (of 5 x 20 x 6
    possible) looked like all 287k rows and got a hash-partitioned final step instead of one
    gathering task (0.089 -> 0.072 s at SF1). A volatile expression stays unknown."""
    import numpy as np

    from pqe.plan.logical import Aggregate, walk_plan
    from pqe.plan.stats import Estimator

    n = 300_000
    k = np.arange(n)
    ctx = pqe.Context()
    ctx.register_arrow("wh", pa.table({
        "w": pa.array(np.array(["north-one", "south-two", "east-3", "west-44", "ünï"])[k % 5]),
        "t": pa.array(k % 20), "c": pa.array(k % 6), "u": pa.array(k)}))

    def groups(sql):
        plan = ctx.sql(sql).optimized_plan()
        agg = next(p for p in walk_plan(plan) if isinstance(p, Aggregate))
        return Estimator().rows(agg)

    assert groups("SELECT substr(w, 1, 3) AS s, t, c + 1 AS c1, count(*) FROM wh "
                  "GROUP BY substr(w, 1, 3), t, c + 1") <= 5 * 20 * 6
    assert groups("SELECT t * 2 + c AS x, count(*) FROM wh GROUP BY t * 2 + c") <= 20 * 6
    assert groups("SELECT u % 7 AS m, count(*) FROM wh GROUP BY u % 7") > 1_000  # u: 300k
    assert groups("SELECT t + random() AS r, count(*) FROM wh GROUP BY t + random()") > 1_000
    got = ctx.sql("SELECT substr(w, 1, 3) AS s, t, count(*) AS n FROM wh "
                  "GROUP BY substr(w, 1, 3), t ORDER BY s, t").to_pylist()
    assert len(got) == 20 and sum(r["n"] for r in got) == n


def test_a_hash_exchange_spreads_its_rows_over_enough_distinct_keys():
    """A hash exchange on a subset of the keys needs enough distinct values of it for its
    partitions. TPC-DS Q47 hashed (category, brand, store, year, month) groups on year and
    month alone (14 values for 4 partitions) and the window after it on the year alone (3
    values: one partition got 12 months of rows, the others 1 month or none), since integer
    keys were always preferred. Now the integer keys plus as few text keys as the estimates
    need (the one with the most values first), and the OR in the filter counts as leaving
    its listed years. Answers checked against DuckDB."""
    from dataclasses import replace

    import numpy as np

    duckdb = pytest.importorskip("duckdb")
    n = 120_000
    k = np.arange(n)
    brands = np.array([f"brand #{i:04d} ü" for i in range(1000)])
    t = pa.table({"brand": pa.array(brands[k % 1000]),
                  "cat": pa.array(np.array([f"cat-{i}" for i in range(20)])[(k % 1000) % 20]),
                  "yr": pa.array(1998 + (k // 7) % 3, pa.int32()),
                  "moy": pa.array(1 + (k // 5) % 12, pa.int32()),
                  "v": pa.array(k % 97, pa.int64())})
    ctx = pqe.Context(partitions=4)
    cfg = ctx.session.config
    ctx.session.config = replace(cfg, planner=replace(cfg.planner, gather_groups=0))
    ctx.register_arrow("s", t)
    sql = ("WITH g AS (SELECT cat, brand, yr, moy, sum(v) AS sv FROM s WHERE yr = 1999 "
           "OR (yr = 1998 AND moy = 12) OR (yr = 2000 AND moy = 1) GROUP BY cat, brand, yr, moy) "
           "SELECT cat, brand, yr, moy, sv, avg(sv) OVER (PARTITION BY cat, brand, yr) AS a, "
           "rank() OVER (PARTITION BY cat, brand ORDER BY yr, moy) AS rn FROM g "
           "ORDER BY cat, brand, yr, moy")
    plan = ctx.sql(sql).explain().split("== Physical Plan ==")[1]
    hashed = [line.split("Exchange[hash(")[1].split(")")[0].split(", ")
              for line in plan.splitlines() if "Exchange[hash(" in line]
    assert len(hashed) == 3, plan
    for keys in hashed:  # never the years and months alone: the brand is in every one
        assert any("brand" in k for k in keys), plan
    assert ctx.sql(sql).to_pylist() == duckdb.sql(sql.replace(" FROM s ", " FROM t ")) \
        .to_arrow_table().cast(ctx.sql(sql).to_arrow().schema).to_pylist()


def test_an_or_of_equalities_narrows_a_column_to_the_listed_values():
    """`y = 1999 OR (y = 1998 AND m = 12)` leaves y two values, whatever the other branches'
    conjuncts; a branch without y leaves it unknown (all its values)."""
    import numpy as np

    from pqe.plan.logical import Scan, walk_plan
    from pqe.plan.stats import Estimator

    k = np.arange(50_000)
    ctx = pqe.Context()
    ctx.register_arrow("d", pa.table({"y": pa.array(1900 + k % 200), "m": pa.array(k % 12)}))

    def ndv(where, col="y"):
        plan = ctx.sql(f"SELECT y, m FROM d WHERE {where}").optimized_plan()
        scan = next(p for p in walk_plan(plan) if isinstance(p, Scan))
        expr = next(f for f in scan.schema if f.name == col)
        from pqe.plan.expr import ColumnRef
        return Estimator().ndv_estimate(scan, ColumnRef(expr))[0]

    assert ndv("y = 1999 OR (y = 1998 AND m = 12) OR (y = 2000 AND m = 1)") == 3
    assert ndv("y IN (1990, 1991) OR y = 1990") == 2
    assert ndv("(y = 1999 AND m = 1) OR (y = 1998 AND m = 2)", "m") == 2
    assert ndv("y = 1999 OR m = 1") > 100  # the second branch keeps any year
    assert ndv("y = 1999 OR y > 2050") > 100  # a range: not a list of values


@pytest.mark.parametrize("key", ["substr(u, 1, 1)", "CASE WHEN v % 2 = 0 THEN 'even' ELSE 'odd' END"])
def test_a_computed_key_counted_by_its_columns_is_not_hashed_alone(key):
    """A computed key's distinct count is only an upper bound (the product of its columns'):
    `substr(u, 1, 1)` counts as many values as u. Taken as "enough", the exchange hashed on
    it alone and put every row of `GROUP BY substr(u, 1, 1), u` in one partition (a
    reviewer's repro, 400k unique u). Such a key never stands for the others."""
    from dataclasses import replace

    import numpy as np

    n = 60_000
    ctx = pqe.Context(partitions=4)
    cfg = ctx.session.config
    ctx.session.config = replace(cfg, planner=replace(cfg.planner, gather_groups=0))
    ctx.register_arrow("t", pa.table({"u": pa.array([f"u{i}" for i in range(n)]),
                                      "v": pa.array(np.arange(n))}))
    sql = f"SELECT {key} AS p, u, count(*) AS c FROM t GROUP BY 1, 2"
    plan = ctx.sql(sql).explain().split("== Physical Plan ==")[1]
    import re

    hashed = re.findall(r"Exchange\[hash\((.*)\), (?:tasks|p2p)\]", plan)
    assert hashed and all(h.endswith(", u") for h in hashed), plan
    got = ctx.sql(sql).to_arrow()
    assert got.num_rows == n and sum(got.column("c").to_pylist()) == n
    out = ctx.sql(f"EXPLAIN ANALYZE {sql}").to_arrow()
    text = out.column(out.num_columns - 1).to_pylist()
    line = next(x for row in text for x in str(row).splitlines() if "Aggregate[final]" in x)
    top = int(line.split("rows max/median=")[1].split("/")[0])
    assert top < n / 2, line  # spread over the partitions, not all in one


def _decimal_offsets(tmp_path, clustered: bool):
    """60,000 rows of a DECIMAL(5,2) column with 6 values in [-10, -5] (TPC-DS's
    ca_gmt_offset), in 6 row groups; `clustered`: each row group one value."""
    import decimal

    import numpy as np
    import pyarrow.parquet as pq

    values = np.array([-10, -9, -8, -7, -6, -5])
    picks = np.repeat(values, 10_000) if clustered else np.tile(values, 10_000)
    col = pa.array([decimal.Decimal(int(v)) for v in picks], pa.decimal128(5, 2))
    path = tmp_path / ("clustered.parquet" if clustered else "mixed.parquet")
    pq.write_table(pa.table({"k": np.arange(60_000), "off": col}), path, row_group_size=10_000)
    return path


@pytest.mark.parametrize("clustered", [False, True])
def test_a_decimal_columns_distinct_values_come_from_its_dictionaries(tmp_path, clustered):
    """`ca_gmt_offset = -5.00` keeps a sixth of the rows, not one of the 501 steps of
    DECIMAL(5,2) between -10 and -5: TPC-DS Q33/Q56/Q60/Q61 estimated 100 addresses where
    18,246 were left, joined the sales to them before a 30-day date range and probed the
    next join with 1M rows instead of 8k (Q61 0.19 -> 0.14 s). Row groups each holding one
    value (a clustered column) still count all six."""
    from pqe.plan.stats import Estimator

    ctx = pqe.Context()
    ctx.register_parquet("a", str(_decimal_offsets(tmp_path, clustered)))
    stats = ctx.session.catalog.lookup("a")[1].statistics()
    assert 4 <= stats.columns["off"].distinct_count <= 8  # true: 6
    plan = ctx.sql("SELECT k FROM a WHERE off = -5.00").optimized_plan()
    assert 7_000 < Estimator().rows(plan) < 16_000  # true: 10,000; the range said 120
    assert ctx.sql("SELECT count(*) AS n FROM a WHERE off = -5.00").to_pylist() == [{"n": 10_000}]


def test_a_text_column_without_a_dictionary_in_some_row_group_has_no_estimate(tmp_path):
    """A row group that stores a column without a dictionary (the writer's dictionary
    overflowed, or it was never asked for) says nothing about how few values there are: the
    other row groups' small dictionaries are not taken for the whole column's count."""
    import pyarrow.parquet as pq

    small = pa.table({"s": pa.array(["a", "b"] * 500)})
    many = pa.table({"s": pa.array([f"v{i}" for i in range(1_000)])})
    pq.write_table(small, tmp_path / "p1.parquet")
    pq.write_table(many, tmp_path / "p2.parquet", use_dictionary=False)
    ctx = pqe.Context()
    ctx.register_parquet("t", str(tmp_path))
    assert ctx.session.catalog.lookup("t")[1].statistics().columns["s"].distinct_count is None


@pytest.fixture
def shuffled(tmp_path):
    """A fact table in random order of its date key `d` (no row group holds a narrow range of
    it, so no row group can be skipped), with NULL dates, unique tickets `t` and decimal
    amounts; a date dimension (int keys), an item dimension, and returns of 3,000 of the fact
    rows (ticket, item: the planner joins them first, TPC-DS Q25's store_returns)."""
    import decimal

    import numpy as np
    import pyarrow.parquet as pq

    rng = np.random.default_rng(7)
    n = 120_000
    d = rng.integers(0, 1_000, n)
    dates = pa.array(d, pa.int32(), mask=rng.random(n) < 0.01)
    tickets = rng.permutation(n)
    items = rng.integers(0, 50, n)
    fact = pa.table({"d": dates, "i": pa.array(items, pa.int64()), "t": pa.array(tickets),
                     "s": pa.array(rng.integers(0, 5, n), pa.int64()),
                     "amt": pa.array([decimal.Decimal(int(x)).scaleb(-2)
                                      for x in rng.integers(-50_000, 50_000, n)],
                                     pa.decimal128(7, 2))})
    pq.write_table(fact, tmp_path / "fact.parquet", row_group_size=20_000)
    pq.write_table(pa.table({"dk": pa.array(range(1_000), pa.int32()),
                             "yr": pa.array([2000 + k // 100 for k in range(1_000)], pa.int32())}),
                   tmp_path / "dates.parquet")
    pq.write_table(pa.table({"ik": pa.array(range(50), pa.int64()),
                             "cat": pa.array([["a", "b", "c"][k % 3] for k in range(50)])}),
                   tmp_path / "item.parquet")
    returned = rng.choice(n, 3_000, replace=False)  # (rows of fact) returned: their ticket, item
    pq.write_table(pa.table({"rt": pa.array(tickets[returned]), "ri": pa.array(items[returned])}),
                   tmp_path / "ret.parquet")
    c = pqe.Context(threads=2)
    for t in ("fact", "dates", "item", "ret"):
        c.register_parquet(t, str(tmp_path / f"{t}.parquet"))
    return c, fact


def _scan_rows(ctx, sql, table):
    analyzed = ctx.sql(sql).explain(analyze=True)
    line = next(x for x in analyzed.splitlines() if f"ParquetScan: {table} " in x)
    return int(line.split("] rows=")[1].split()[0])


def test_a_narrow_build_filters_the_rows_of_an_unclustered_fact_scan(shuffled):
    """A date join above another join (or above a scan with filters of its own) filters the
    fact scan's rows by the date keys' [min, max]: TPC-DS Q25 probed all 2.9M store_sales rows
    into a three-key join with the returns before a 30-day range kept 1.6% of them, Q49
    compared three decimals on every row. No row group can be skipped here, so only rows."""
    import numpy as np

    ctx, fact = shuffled
    sql = ("SELECT item.cat, count(*) AS n, sum(fact.amt) AS total FROM fact "
           "JOIN ret ON fact.t = ret.rt AND fact.i = ret.ri JOIN item ON fact.i = item.ik "
           "JOIN dates ON fact.d = dates.dk "
           "WHERE dates.yr = 2003 GROUP BY item.cat ORDER BY item.cat")
    plan = ctx.sql(sql).explain()
    assert "dynamic_filter=[fact.d (rows)]" in plan
    d = fact.column("d").to_numpy(zero_copy_only=False)
    i = fact.column("i").to_numpy()
    returned = np.isin(fact.column("t").to_numpy(), ctx.sql("SELECT rt FROM ret").to_arrow()
                       .column(0).to_numpy())
    amt = np.array([float(x) for x in fact.column("amt").to_pylist()])
    keep = ~np.isnan(d) & (d >= 300) & (d < 400)
    expected = []
    for cat, keys in (("a", range(0, 50, 3)), ("b", range(1, 50, 3)), ("c", range(2, 50, 3))):
        m = keep & returned & np.isin(i, list(keys))
        expected.append((cat, int(m.sum()), round(float(amt[m].sum()), 2)))
    got = [(c, n, float(t)) for c, n, t in rows(ctx, sql)]
    assert got == expected
    assert _scan_rows(ctx, sql, "fact") == int(((d >= 300) & (d < 400)).sum())  # not 120,000
    # a build that matches nothing: no rows, no error
    none = sql.replace("yr = 2003", "yr = 1999")
    assert rows(ctx, none) == []
    # a date join right above a scan without filters is filter enough: no wait for its build
    direct = "SELECT count(*) FROM fact JOIN dates ON fact.d = dates.dk WHERE dates.yr = 2003"
    assert "dynamic_filter" not in ctx.sql(direct).explain()
    assert rows(ctx, direct) == [(int(keep.sum()),)]
    # ... unless the scan has filters of its own, which then run on fewer rows
    own = direct + " AND fact.amt > 1.00"
    assert "dynamic_filter=[fact.d (rows)]" in ctx.sql(own).explain()
    assert rows(ctx, own) == [(int((keep & (amt > 1.0)).sum()),)]


def test_a_wide_build_range_filters_no_rows(shuffled):
    """Build keys spanning most of the column (every tenth date) would only cost comparisons:
    the scan reads every row, and the answer is the join's."""
    import numpy as np

    ctx, fact = shuffled
    sql = ("SELECT count(*) FROM fact JOIN ret ON fact.t = ret.rt AND fact.i = ret.ri "
           "JOIN dates ON fact.d = dates.dk WHERE dates.dk % 10 = 0")
    assert "dynamic_filter=[fact.d (rows)]" in ctx.sql(sql).explain()
    d = fact.column("d").to_numpy(zero_copy_only=False)
    returned = np.isin(fact.column("t").to_numpy(), ctx.sql("SELECT rt FROM ret").to_arrow()
                       .column(0).to_numpy())
    assert rows(ctx, sql) == [(int((~np.isnan(d) & (d % 10 == 0) & returned).sum()),)]
    assert _scan_rows(ctx, sql, "fact") == 120_000


def test_a_row_filter_is_never_taken_from_one_consumer_of_a_shared_scan(shuffled):
    """A scan read once for two consumers (a CTE joined to two date ranges) must keep the rows
    of both: no one build's range filters it."""
    import numpy as np

    ctx, fact = shuffled
    sql = ("WITH f AS (SELECT fact.d FROM fact JOIN ret ON fact.t = ret.rt AND fact.i = ret.ri) "
           "SELECT (SELECT count(*) FROM f JOIN dates ON f.d = dates.dk WHERE dates.yr = 2001), "
           "(SELECT count(*) FROM f JOIN dates ON f.d = dates.dk WHERE dates.yr = 2008)")
    d = fact.column("d").to_numpy(zero_copy_only=False)
    returned = np.isin(fact.column("t").to_numpy(), ctx.sql("SELECT rt FROM ret").to_arrow()
                       .column(0).to_numpy())
    n1 = int((returned & (d >= 100) & (d < 200)).sum())
    n8 = int((returned & (d >= 800) & (d < 900)).sum())
    assert rows(ctx, sql) == [(n1, n8)]
    assert "(rows)" not in ctx.sql(sql).explain()


def test_range_filters_of_dates_and_keys_outside_the_column_type():
    """The build keys' [min, max] as filters on the scan column: dates stay dates; a range
    covering most of the column, or keys the column's type cannot hold, give no filter."""
    import datetime

    from pqe.kernels.scan import range_filters
    from pqe.plan.expr import Field

    day = datetime.date
    d = Field("d#1", "d", pa.date32(), True)
    whole = (day(2000, 1, 1), day(2002, 9, 26))
    lo, hi = range_filters(d, day(2000, 3, 1), day(2000, 3, 31), whole, 0.5)
    assert (lo.fn, lo.args[1].value, hi.fn, hi.args[1].value) == \
        ("ge", day(2000, 3, 1), "le", day(2000, 3, 31))
    assert range_filters(d, day(2000, 1, 1), day(2002, 3, 1), whole, 0.5) == []
    k = Field("k#1", "k", pa.int32(), True)
    assert range_filters(k, 5, 2 ** 40, (0, 100), 0.5) == []
    assert [f.fn for f in range_filters(k, 0, 10, (0, 100), 0.5)] == ["le"]  # lo is the min
    assert range_filters(k, None, None, (0, 100), 0.5) == []


def test_a_join_of_sides_partitioned_alike_moves_no_row():
    """A window's output joined to itself on its partition key and rank (TPC-DS Q47/Q57's
    v1 JOIN v1_lag JOIN v1_lead) has both sides hash-partitioned on that key already: the
    join is partitioned with no exchange below it (it broadcast 65k rows to every partition,
    each hashing all of them: Q47 0.26 -> 0.22 s), also the second join, whose one side is
    partitioned on the first join's other, equal, key. Answers as DuckDB's."""
    import duckdb
    import numpy as np

    rng = np.random.default_rng(2)
    n = 20_000
    t = pa.table({"g": pa.array([f"g{i}" for i in rng.integers(0, 300, n)]),
                  "k": pa.array(rng.integers(0, 40, n)), "v": pa.array(rng.integers(0, 9, n))})
    from dataclasses import replace

    ctx = pqe.Context(partitions=4)
    cfg = ctx.session.config  # (groups hashed over the partitions, as Q47's 66k are)
    ctx.session.config = replace(cfg, planner=replace(cfg.planner, gather_groups=1_000))
    ctx.register_arrow("t", t)
    sql = ("WITH w AS (SELECT g, k, sum(v) AS s, rank() OVER (PARTITION BY g ORDER BY k) AS rn "
           "FROM t GROUP BY g, k) "
           "SELECT a.g, a.k, a.s, b.s AS prev, c.s AS next FROM w a "
           "JOIN w b ON a.g = b.g AND a.rn = b.rn + 1 JOIN w c ON a.g = c.g AND a.rn = c.rn - 1")
    plan = ctx.sql(sql).explain()
    lines = plan.split("== Physical Plan ==")[1].splitlines()
    joins = [i for i, line in enumerate(lines) if "HashJoin[" in line]
    assert len(joins) == 2 and all("HashJoin[partitioned]" in lines[i] for i in joins), plan
    for i in joins:  # neither input of either join is an exchange
        depth = len(lines[i]) - len(lines[i].lstrip())
        kids = [x for x in lines[i + 1:] if len(x) - len(x.lstrip()) == depth + 2]
        assert not any(k.strip().startswith("Exchange") for k in kids[:2]), plan
    con = duckdb.connect()
    con.register("t", t)
    want = sorted(con.execute(sql).fetchall())
    got = sorted(tuple(r.values()) for r in ctx.sql(sql).to_pylist())
    assert got == [tuple(int(x) if isinstance(x, (int, np.integer)) else x for x in r)
                   for r in want]
    assert len(got) > 1000


def test_an_infinite_float_statistic_gives_no_distinct_count(tmp_path):
    """A dictionary-encoded DOUBLE column holding Infinity: an infinite statistic bounds
    nothing (as for the estimator's ranges), so no count is scaled by its row groups' widths
    (inf / inf), and the table still plans and answers."""
    import pyarrow.parquet as pq

    v = pa.array([1.5, float("inf"), -2.0, 1.5, float("-inf")] * 2_000, pa.float64())
    pq.write_table(pa.table({"f": v}), tmp_path / "inf.parquet", row_group_size=2_500)
    ctx = pqe.Context()
    ctx.register_parquet("fi", str(tmp_path / "inf.parquet"))
    assert ctx.session.catalog.lookup("fi")[1].statistics().columns["f"].distinct_count is None
    assert rows(ctx, "SELECT count(*) FROM fi WHERE f = 1.5") == [(4_000,)]
    assert rows(ctx, "SELECT count(DISTINCT f) FROM fi") == [(4,)]


# ---- a long unnamed projection ordered by its position ---------------------------------------

def test_order_by_position_of_a_long_scalar_subquery(ctx):
    """A select expression too long to be named by its text (a scalar subquery here) was
    named by sqlglot's qualify on the subquery itself, and `ORDER BY 2` then failed inside
    sqlglot with a raw AssertionError: it is named _col_N as an alias, and sorts."""
    sql = ("SELECT name, (SELECT count(DISTINCT o.amount) + sum(o.amount) + max(o.id) "
           "FROM o WHERE o.cust = c.name) FROM c ORDER BY 2 DESC NULLS LAST, 1")
    got = ctx.sql(sql).to_arrow()
    assert got.column_names == ["name", "_col_1"]
    assert [tuple(r.values()) for r in got.to_pylist()] == [  # (as DuckDB answers)
        ("ann", 235), ("bob", 144), ("cid", 35), ("", None), ("dan", None)]


def test_a_failure_inside_sqlglot_is_a_pqe_error(ctx, monkeypatch):
    from pqe.sql.binder import qualification

    def broken(*args, **kwargs):
        raise AssertionError("something\nunexpected")

    monkeypatch.setattr(qualification, "qualify", broken)
    with pytest.raises(pqe.InternalError, match="sqlglot could not qualify the query: "
                                                "AssertionError: something unexpected"):
        ctx.sql("SELECT name FROM c")


def test_a_failure_while_binding_is_a_pqe_error(ctx, monkeypatch):
    """Any other exception out of the binder (a bug) is one pqe.InternalError line naming
    it; a statement too deep to bind still says so (pqe.deep's TooDeepError)."""
    from pqe.sql.binder import core

    def broken(self, *args, **kwargs):
        raise KeyError("lost")

    monkeypatch.setattr(core.Binder, "bind_query", broken)
    with pytest.raises(pqe.InternalError, match="binding failed: KeyError: 'lost'"):
        ctx.sql("SELECT name FROM c")

    def deep(self, *args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(core.Binder, "bind_query", deep)
    with pytest.raises(pqe.Error, match="too deeply nested|too deep") as info:
        ctx.sql("SELECT name FROM c")
    assert not isinstance(info.value, pqe.InternalError)


def test_a_failure_while_planning_partitions_is_a_pqe_error(ctx, monkeypatch):
    from pqe.session import state

    def broken(*args, **kwargs):
        raise ValueError("no\nsuch plan")

    monkeypatch.setattr(state, "plan_physical", broken)
    with pytest.raises(pqe.InternalError, match="physical planning failed: ValueError: no such plan"):
        ctx.sql("SELECT name FROM c").to_arrow()


def test_composite_keys_are_sampled_for_uniqueness(tpch_dir):
    from pqe.catalog import ParquetTable

    from helpers import table_path

    partsupp = ParquetTable(str(table_path(tpch_dir, "partsupp")))
    lineitem = ParquetTable(str(table_path(tpch_dir, "lineitem")))
    assert partsupp.keys_sample_unique(("ps_partkey", "ps_suppkey"))
    assert not lineitem.keys_sample_unique(("l_suppkey", "l_linenumber"))
    assert not lineitem.keys_sample_unique(("l_partkey", "l_suppkey"))
    assert lineitem.keys_sample_unique(("l_linenumber", "l_orderkey"))
    assert not lineitem.keys_sample_unique(("l_orderkey", "l_comment"))  # text: never


def test_the_key_sample_test_agrees_with_grouping():
    """catalog._all_distinct_rows (a mixed-radix key: flags for a narrow range, a sort for a
    wide one) says what grouping by the columns says, on random tables: NULLs dropped, values
    at the int64 ends and past them (UBIGINT), spans whose product overflows int64."""
    import numpy as np

    from pqe.catalog import _all_distinct_rows

    def grouped(t):
        t = t.drop_null()
        return t.num_rows > 1 and \
            t.group_by(t.column_names).aggregate([]).num_rows == t.num_rows

    rng = np.random.default_rng(11)
    cases = [pa.table({"a": pa.array([2**64 - 1, 1], pa.uint64())}),
             pa.table({"a": pa.array([2**64 - 1, 2**64 - 1, 3], pa.uint64())}),
             pa.table({"a": [-2**63, 2**63 - 1]}), pa.table({"a": [-2**63, 5, -2**63]}),
             pa.table({"a": [0, 2**61], "b": [0, 2**61]}),  # (spans' product past int64)
             pa.table({"a": [1, None, 1]}), pa.table({"a": [7]})]
    for _ in range(400):
        n, k = int(rng.integers(0, 60)), int(rng.integers(1, 4))
        scale = int(rng.choice([1, 3, 10**6, 2**40]))
        cases.append(pa.table({f"c{i}": pa.array(rng.integers(-3, 4, n) * scale,
                                                 mask=rng.random(n) < 0.1) for i in range(k)}))
        cases.append(pa.table({f"c{i}": pa.array(rng.permutation(n) * scale - 5)
                               for i in range(k)}))
    got = [_all_distinct_rows(t) for t in cases]
    assert got == [grouped(t) for t in cases]
    assert any(got) and not all(got)


def _pairs_tables():
    """d: 20,000 unique (k1, k2) pairs, two per k1 (partsupp's shape: 10,000 k1 values by
    1,000 k2 values would make 10M pairs, 20,000 exist); f: 200,000 rows drawn from d's
    pairs (lineitem's (partkey, suppkey))."""
    import numpy as np

    i = np.arange(20_000, dtype=np.int64)
    d = pa.table({"k1": i // 2, "k2": (i * 7919) % 1000, "v": i})
    pick = np.random.default_rng(7).integers(0, 20_000, 200_000)
    f = pa.table({"k1": (i // 2)[pick], "k2": ((i * 7919) % 1000)[pick],
                  "x": np.arange(200_000, dtype=np.int64)})
    return d, f


def test_a_join_on_a_composite_key_unique_on_one_side_is_estimated_by_containment():
    """A many-to-one join on two keys took the product of the keys' distinct counts as the
    number of combinations: TPC-H Q9's lineitem against filtered part-partsupp read as 435k
    rows where 3.3M come (SF10), so the result was gathered and built once per partition."""
    from pqe.plan.stats import Estimator

    d, f = _pairs_tables()
    ctx = pqe.Context()
    ctx.register_arrow("d", d)
    ctx.register_arrow("f", f)
    sql = "SELECT x, v FROM f JOIN d ON f.k1 = d.k1 AND f.k2 = d.k2 WHERE d.v < 2000"
    est = Estimator().rows(ctx.sql(sql).optimized_plan())
    true = ctx.sql(f"SELECT count(*) AS n FROM ({sql}) s").to_pylist()[0]["n"]
    assert 15_000 < true < 25_000
    assert true / 2 < est < true * 2, est  # the product of distinct counts said ~2,000
    # both sides unique on the pair (a sale and its return): which holds the other is not
    # known, so nothing is contained; the anti-join idiom keeps its old estimate
    ctx.register_arrow("d2", d.slice(0, 5_000))
    anti = ("SELECT d.v FROM d LEFT JOIN d2 ON d.k1 = d2.k1 AND d.k2 = d2.k2 "
            "WHERE d2.k1 IS NULL")
    assert Estimator().rows(ctx.sql(anti).optimized_plan()) > 5_000  # true: 15,000


def test_equal_columns_link_every_input_holding_one():
    """`p.k = l.k AND l.k = ps.k` also joins p and ps (TPC-H Q9: the filtered parts meet
    partsupp before lineitem, not 8M partsupp rows shuffled to meet lineitem's)."""
    import numpy as np

    d, f = _pairs_tables()
    ctx = pqe.Context(partitions=3)
    ctx.register_arrow("d", d)
    ctx.register_arrow("f", f)
    ctx.register_arrow("p", pa.table({"pk": np.arange(10_000, dtype=np.int64),
                                      "name": [f"n{i % 50}" for i in range(10_000)]}))
    sql = ("SELECT sum(x) AS s, count(*) AS n FROM p, f, d WHERE p.pk = f.k1 AND f.k1 = d.k1 "
           "AND f.k2 = d.k2 AND p.name = 'n7'")
    text = ctx.sql(sql).explain()
    join_p_d = [line for line in text.splitlines() if "HashJoin" in line and "p.pk" in line
                and "d.k1" in line]
    assert join_p_d, text
    expected = oracle.query(oracle.connect({"p": ctx.sql("SELECT * FROM p").to_arrow(),
                                            "f": f, "d": d}), sql)
    assert ctx.sql(sql).to_arrow().to_pylist() == expected.to_pylist()


def _snowflake(tmp_path) -> tuple[pqe.Context, dict]:
    """TPC-H Q5's shape: lineitem, orders, customer, supplier, nation, region, as Parquet
    files (their statistics are what the estimates read)."""
    import numpy as np
    import pyarrow.parquet as pq

    rng = np.random.default_rng(7)
    n_l, n_o, n_c, n_s = 300_000, 75_000, 7_500, 500
    tables = {
        "region": pa.table({"r_regionkey": np.arange(5),
                            "r_name": ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"]}),
        "nation": pa.table({"n_nationkey": np.arange(25), "n_name": [f"N{i}" for i in range(25)],
                            "n_regionkey": np.arange(25) % 5}),
        "supplier": pa.table({"s_suppkey": np.arange(n_s), "s_nationkey": rng.integers(0, 25, n_s)}),
        "customer": pa.table({"c_custkey": np.arange(n_c), "c_nationkey": rng.integers(0, 25, n_c)}),
        "orders": pa.table({"o_orderkey": np.arange(n_o), "o_custkey": rng.integers(0, n_c, n_o),
                            "o_year": rng.integers(1992, 1999, n_o)}),
        "lineitem": pa.table({"l_orderkey": np.sort(rng.integers(0, n_o, n_l)),
                              "l_suppkey": rng.integers(0, n_s, n_l),
                              "l_price": rng.integers(1, 1000, n_l)}),
    }
    ctx = pqe.Context(partitions=2)
    for name, t in tables.items():
        pq.write_table(t, tmp_path / f"{name}.parquet", row_group_size=50_000)
        ctx.register_parquet(name, str(tmp_path / f"{name}.parquet"))
    return ctx, tables


SNOWFLAKE_Q5 = """select n_name, sum(l_price) as revenue
from customer, orders, lineitem, supplier, nation, region
where c_custkey = o_custkey and l_orderkey = o_orderkey and l_suppkey = s_suppkey
  and c_nationkey = s_nationkey and s_nationkey = n_nationkey and n_regionkey = r_regionkey
  and r_name = 'ASIA' and o_year = 1994
group by n_name order by revenue desc"""


def test_join_order_search_filters_both_sides_of_an_equal_column_class(tmp_path):
    """Greedy ordering joined the smallest pair first, supplier to nation and region, and
    then had no way to filter customer by region but a late join on c_nationkey =
    s_nationkey (TPC-H Q5 at SF1: 910k lineitem rows met that join, 0.25 s). The search
    over join trees (join_reorder._dp) joins customer to nation and region (customer's
    c_nationkey is in nation's class of equal columns), then orders and lineitem, and
    supplier last on both its keys, as DuckDB does (182k rows, 0.21 s)."""
    duckdb = pytest.importorskip("duckdb")
    ctx, tables = _snowflake(tmp_path)
    plan = ctx.sql(SNOWFLAKE_Q5).explain()
    logical = plan.split("== Physical Plan ==")[0]
    assert "on=[customer.c_nationkey = nation.n_nationkey]" in logical
    assert "on=[customer.c_nationkey = supplier.s_nationkey, lineitem.l_suppkey = " \
           "supplier.s_suppkey]" in logical
    con = duckdb.connect()
    for name, t in tables.items():
        con.register(name, t)
    want = [dict(zip(["n_name", "revenue"], r, strict=True))
            for r in con.execute(SNOWFLAKE_Q5).fetchall()]
    assert ctx.sql(SNOWFLAKE_Q5).to_arrow().to_pylist() == want


def test_join_order_search_keeps_greedy_within_its_margin(tmp_path, monkeypatch):
    """The search's tree replaces greedy's only when estimated DP_GAIN cheaper: with no
    margin to win by, the query keeps greedy's joins (supplier meets nation first) and its
    answer."""
    import importlib

    jr = importlib.import_module("pqe.optimizer.join_reorder")
    ctx, _ = _snowflake(tmp_path)
    searched = ctx.sql(SNOWFLAKE_Q5).to_arrow()
    monkeypatch.setattr(jr, "DP_GAIN", 0.0)
    (tmp_path / "again").mkdir()
    ctx2, _ = _snowflake(tmp_path / "again")
    logical = ctx2.sql(SNOWFLAKE_Q5).explain().split("== Physical Plan ==")[0]
    assert "on=[supplier.s_nationkey = nation.n_nationkey]" in logical
    assert ctx2.sql(SNOWFLAKE_Q5).to_arrow().equals(searched)
