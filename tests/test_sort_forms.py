"""Sorting large inputs on cheaper stand-ins of their keys (kernels.relational._sort_form):
DECIMAL128 keys whose values fit 64 bits, as those integers. The order must be exactly the
order of the keys themselves (ties, NULL placement and stability included), and a key that
does not fit stays as it is."""

from __future__ import annotations

import decimal
import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pqe.kernels.relational import SORT_FORM_ROWS, _sort_form, sort_indices

N = SORT_FORM_ROWS * 3


def _decimals(rng: random.Random, n: int, scale: int = 2) -> list:
    edge = [None, decimal.Decimal(0), decimal.Decimal(-1).scaleb(-scale),
            decimal.Decimal((1 << 63) - 1).scaleb(-scale), decimal.Decimal(-(1 << 63)).scaleb(-scale)]
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.05:
            out.append(rng.choice(edge))
        else:
            out.append(decimal.Decimal(rng.randrange(-10**9, 10**9)).scaleb(-scale))
    return out


def _reference(table: pa.Table, keys) -> list[int]:
    """The order of the original columns (Arrow's own sort: stable)."""
    spec = [(k, "ascending" if a else "descending", "at_start" if nf else "at_end")
            for k, a, nf in keys]
    return pc.sort_indices(table, sort_keys=spec).to_pylist()


@pytest.mark.parametrize("asc,nulls_first", [(True, False), (False, True), (True, True),
                                              (False, False)])
def test_decimal_and_text_keys_sort_as_themselves(asc, nulls_first):
    rng = random.Random(7)
    words = ["b", "a", "", "ä", "Zeta", "日本", "a\x00b", None, "aa"]
    cat = pa.chunked_array([pa.array([rng.choice(words) for _ in range(N // 2)]),
                            pa.array([rng.choice(words) for _ in range(N - N // 2)])])
    dec = pa.chunked_array([pa.array(_decimals(rng, N // 3), pa.decimal128(38, 2)),
                            pa.array(_decimals(rng, N - N // 3), pa.decimal128(38, 2))])
    t = pa.table({"c": cat, "d": dec, "row": pa.array(range(N))})
    text = t.column("c")
    assert _sort_form(text) is text
    assert pa.types.is_int64(_sort_form(t.column("d")).type)
    for keys in ([("c", asc, nulls_first), ("d", not asc, nulls_first)],
                 [("d", asc, nulls_first)], [("c", asc, nulls_first)]):
        assert sort_indices(t, keys).to_pylist() == _reference(t, keys)


def test_sliced_and_offset_chunks_keep_their_values_and_nulls():
    rng = random.Random(3)
    whole = pa.array(_decimals(rng, N + 100, scale=4), pa.decimal128(20, 4))
    for piece in (whole.slice(37, N), whole.slice(0, N)):
        col = pa.chunked_array([piece])
        form = _sort_form(col)
        assert form.type == pa.int64()
        assert form.null_count == col.null_count
        assert pc.is_null(form).equals(pc.is_null(col))
        want = [None if v is None else int(v.scaleb(4)) for v in col.to_pylist()]
        assert form.to_pylist() == want


def test_keys_that_do_not_fit_stay_as_they_are():
    big = pa.chunked_array([pa.array([decimal.Decimal(1 << 64)] + [decimal.Decimal(1)] * (N - 1),
                                     pa.decimal128(38, 0))])
    assert _sort_form(big) is big
    distinct = pa.chunked_array([pa.array([f"v{i}" for i in range(N)])])
    assert _sort_form(distinct) is distinct
    empty = pa.chunked_array([pa.array([], pa.decimal128(10, 2)),
                              pa.array([decimal.Decimal("1.50"), None] * N, pa.decimal128(10, 2))])
    assert _sort_form(empty).to_pylist() == [150, None] * N
    floats = pa.chunked_array([pa.array(np.random.default_rng(1).random(N))])
    assert _sort_form(floats) is floats
    t = pa.table({"b": big, "v": distinct})
    keys = [("b", False, False), ("v", True, False)]
    assert sort_indices(t, keys).to_pylist() == _reference(t, keys)


def test_window_and_order_by_answers_match_duckdb():
    duckdb = pytest.importorskip("duckdb")
    import pqe

    rng = random.Random(11)
    data = pa.table({
        "cat": pa.array([rng.choice(["x", "y", "z", None, "É", ""]) for _ in range(N)]),
        "amt": pa.array(_decimals(rng, N), pa.decimal128(20, 2)),
        "id": pa.array(range(N), pa.int64()),
    })
    sql = ("select id, rank() over (partition by cat order by amt desc nulls last) r, "
           "row_number() over (order by cat desc nulls first, amt, id) n "
           "from s order by cat nulls first, amt desc nulls last, id")
    ctx = pqe.Context()
    ctx.register_arrow("s", data)
    got = ctx.sql(sql).to_arrow()
    ctx.close()
    con = duckdb.connect()
    con.register("s", data)
    want = con.sql(sql).to_arrow_table()
    for name in ("id", "r", "n"):
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name
