"""Exact sums use file statistics to skip their overflow check's min/max pass only when the
statistics prove the bound (planner._sum_bounds, AggregateExec.sum_bounds): wrong bounds would
wrap int64 sums silently, so every path that could lose the proof is tested here."""

from decimal import Decimal as D

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pqe
from pqe.kernels import aggregate as A
from pqe.physical.plan import AggregateExec


def _first_step_bounds(ctx, sql):
    """The sum_bounds of the query's partial or single aggregates."""
    s = ctx.session
    stmt = s.bind(s.parse(sql)[0], sql)
    plan = s.physical_plan(s.optimize(stmt.plan))
    out, stack = [], [plan]
    while stack:
        node = stack.pop()
        stack.extend(node.children())
        if isinstance(node, AggregateExec) and node.mode != "final":
            out.extend(node.sum_bounds)
    return dict(out)


@pytest.fixture
def prices(tmp_path):
    rng = np.random.default_rng(3)
    n = 50_000
    cents = rng.integers(-99_999, 99_999, n)
    disc = rng.integers(0, 11, n)
    t = pa.table({"g": pa.array(rng.integers(0, 4, n)),
                  "p": pa.array([D(int(c)).scaleb(-2) for c in cents], pa.decimal128(9, 2)),
                  "d": pa.array([D(int(c)).scaleb(-2) for c in disc], pa.decimal128(4, 2)),
                  "q": pa.array(rng.integers(1, 51, n), pa.int32())})
    pq.write_table(t, tmp_path / "prices.parquet", row_group_size=10_000)
    ctx = pqe.Context(threads=2)
    ctx.register_parquet("prices", str(tmp_path / "prices.parquet"))
    return ctx, t


def test_bounds_cover_every_value_of_the_argument(prices):
    """The bound of `p * (1 - d) * q` (unscaled at the argument's scale) is at least the
    largest absolute value the rows hold, and the sums are the exact ones."""
    ctx, t = prices
    sql = "SELECT g, sum(p * (1 - d) * q) AS s, avg(p) AS a, sum(q) AS n FROM prices GROUP BY g"
    bounds = _first_step_bounds(ctx, sql)
    assert len(bounds) == 3, bounds
    p = np.array([int(x * 100) for x in t.column("p").to_pylist()])
    d = np.array([int(x * 100) for x in t.column("d").to_pylist()])
    q = t.column("q").to_numpy()
    product = p * (100 - d) * q  # scale 4
    assert max(bounds.values()) >= np.abs(product).max()
    assert sorted(bounds.values())[0] >= 50  # q's bound: its largest value
    got = {r["g"]: r for r in ctx.sql(sql).to_pylist()}
    g = t.column("g").to_numpy()
    for k in range(4):
        m = g == k
        assert got[k]["s"] == D(int(product[m].sum())).scaleb(-4)
        assert got[k]["n"] == int(q[m].sum())


def test_no_bound_without_statistics_in_every_row_group(tmp_path):
    """A file written without statistics for the column proves nothing: no bound, and the
    kernel reads the min and max itself (values near 2^62 then take two limbs: exact)."""
    big = 2 ** 62 - 7
    t = pa.table({"v": pa.array([big, big, big, -5], pa.int64())})
    pq.write_table(t, tmp_path / "nostats.parquet", write_statistics=False)
    ctx = pqe.Context()
    ctx.register_parquet("ns", str(tmp_path / "nostats.parquet"))
    assert _first_step_bounds(ctx, "SELECT sum(v) AS s FROM ns") == {}
    assert ctx.sql("SELECT sum(v) AS s FROM ns").to_pylist() == [{"s": D(3 * big - 5)}]


def test_a_bound_too_large_for_the_rows_still_sums_exactly(tmp_path):
    """Statistics that bound the values by 2^62 do not prove 4 rows' sum fits int64: the
    kernel takes the limbs path and the sum is exact, not wrapped."""
    big = 2 ** 62 - 7
    pq.write_table(pa.table({"v": pa.array([big, big, big, 1], pa.int64())}),
                   tmp_path / "big.parquet")
    ctx = pqe.Context()
    ctx.register_parquet("b", str(tmp_path / "big.parquet"))
    assert list(_first_step_bounds(ctx, "SELECT sum(v) AS s FROM b").values()) == [big + 1]
    assert ctx.sql("SELECT sum(v) AS s FROM b").to_pylist() == [{"s": D(3 * big + 1)}]


def test_arguments_without_a_provable_bound_get_none(prices):
    """Division, CASE, functions, and columns that do not come from a Parquet scan (an
    in-memory table, an aggregate's output) have no bound."""
    ctx, t = prices
    ctx.register_arrow("mem", t)
    assert _first_step_bounds(ctx, "SELECT sum(p / 3) FROM prices") == {}
    assert _first_step_bounds(ctx, "SELECT sum(CASE WHEN g = 1 THEN p END) FROM prices") == {}
    assert _first_step_bounds(ctx, "SELECT sum(p) FROM mem") == {}
    # the outer sum reads the inner one's output: only the inner argument (q) is bounded
    nested = "SELECT sum(s) AS t FROM (SELECT g, sum(q) AS s FROM prices GROUP BY g) x"
    assert list(_first_step_bounds(ctx, nested).values()) == [51]
    assert ctx.sql(nested).to_pylist() == [{"t": D(int(t.column("q").to_numpy().sum()))}]


def test_the_kernel_skips_the_min_max_pass_only_under_the_bound(monkeypatch):
    """With a bound whose product with the rows fits int64 no min/max is read; with one that
    does not, the column's min and max decide (and large values take two limbs)."""
    calls = []
    real = A.pc.min_max

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(A.pc, "min_max", counted)
    col = pa.chunked_array([pa.array([3, -4, 5], pa.int64())])
    assert len(A._limb_arrays(col, 3, bound=5)) == 1 and calls == []
    assert len(A._limb_arrays(col, 3, bound=2 ** 62)) == 1 and calls == [1]
    large = pa.chunked_array([pa.array([2 ** 62, 2 ** 62], pa.int64())])
    assert len(A._limb_arrays(large, 2)) == 2
