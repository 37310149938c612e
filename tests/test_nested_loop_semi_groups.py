"""A semi or anti nested-loop join decides each left row by the columns its condition reads:
when the left rows repeat those combinations (a correlated NOT IN over a join's output),
each distinct combination meets the right rows once and its verdict goes to every row that
holds it (kernels.join._repeated_rows). The answers must not change: checked against DuckDB
with NULLs in the read columns, text, dates, booleans, decimals, a float column (not
grouped), and NOT IN's NULL rules, at 1 and 3 partitions."""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import pyarrow as pa
import pytest

import pqe
from helpers import assert_answers_as_duckdb
from pqe.kernels import join as J


def _tables():
    rng = np.random.default_rng(7)
    n = 600

    def ints(size, top):
        return pa.array(rng.integers(-2, top, size), mask=rng.random(size) < 0.08)

    o = pa.table({
        "k": ints(n, 8), "s": pa.array(rng.choice(["", "a", "é", "ab"], n).tolist(),
                                       mask=rng.random(n) < 0.05),
        "d": pa.array([datetime.date(2020, 1, 1 + int(x)) for x in rng.integers(0, 5, n)]),
        "b": pa.array(rng.random(n) < 0.5, mask=rng.random(n) < 0.05),
        "m": pa.array([decimal.Decimal(int(x)) / 4 for x in rng.integers(0, 9, n)],
                      pa.decimal128(10, 2)),
        "f": pa.array(rng.choice([0.0, -0.0, 1.5, float("nan")], n)),
        "x": rng.integers(0, 1000, n)})
    i = pa.table({"k": ints(80, 8), "s": pa.array(rng.choice(["", "a", "b"], 80).tolist()),
                  "v": ints(80, 6),
                  "d": pa.array([datetime.date(2020, 1, 1 + int(x))
                                 for x in rng.integers(0, 5, 80)]),
                  "m": pa.array([decimal.Decimal(int(x)) / 4 for x in rng.integers(0, 9, 80)],
                                pa.decimal128(10, 2)),
                  "f": pa.array(rng.choice([0.0, 1.5, -2.0], 80))})
    return o, i


QUERIES = [
    "SELECT x FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k < o.k AND i.s = o.s)",
    "SELECT x FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE i.k <= o.k OR i.d > o.d)",
    "SELECT x FROM o WHERE o.k NOT IN (SELECT i.v FROM i WHERE i.k > o.k)",
    "SELECT x FROM o WHERE o.m NOT IN (SELECT i.m FROM i WHERE i.d <= o.d AND (i.k = o.k "
    "OR i.s = o.s))",
    "SELECT x FROM o WHERE EXISTS (SELECT 1 FROM i WHERE i.k <> o.k AND o.b)",
    "SELECT x FROM o WHERE NOT EXISTS (SELECT 1 FROM i WHERE i.f > o.f)",  # floats: ungrouped
    "SELECT x FROM o WHERE o.k IN (SELECT i.v FROM i WHERE i.k >= o.k AND i.s <> o.s)",
]


@pytest.mark.parametrize("partitions", [1, 3])
@pytest.mark.parametrize("sql", QUERIES)
def test_grouped_semi_and_anti_joins_match_duckdb(sql, partitions):
    o, i = _tables()
    assert_answers_as_duckdb(sql, {"o": o, "i": i}, partitions, check_types=True)


def test_rows_are_grouped_only_when_they_repeat_exact_values():
    t = pa.table({"k": pa.array([1, 1, None, None, 2, 2, 1, None] * 2),
                  "s": ["a"] * 16, "f": [0.0, -0.0] * 8})
    first, inverse = J._repeated_rows(t, ["k", "s"])
    assert len(first) == 3  # 1, NULL, 2: NULL is one value
    assert (inverse[[0, 1, 6]] == inverse[0]).all() and inverse[2] == inverse[3]
    assert J._repeated_rows(t, ["f"]) is None  # -0.0 and 0.0 are equal, not the same
    distinct = pa.table({"k": list(range(16))})
    assert J._repeated_rows(distinct, ["k"]) is None  # nothing repeats: no grouping


def test_a_correlated_not_in_over_repeated_rows_meets_each_combination_once(monkeypatch):
    """The grouping is used (its verdicts are what the answers above check): the left rows
    of `o.k NOT IN (... i.k > o.k)` hold 11 values of k (NULL one of them) in 600 rows."""
    calls = []
    original = J._repeated_rows

    def spy(t, cols):
        out = original(t, cols)
        calls.append((t.num_rows, None if out is None else len(out[0])))
        return out

    monkeypatch.setattr(J, "_repeated_rows", spy)
    o, i = _tables()
    ctx = pqe.Context(partitions=1)
    ctx.register_arrow("o", o)
    ctx.register_arrow("i", i)
    ctx.sql(QUERIES[2]).to_arrow()
    assert (600, 11) in calls, calls
