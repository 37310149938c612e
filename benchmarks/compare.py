"""Answer checking: is an engine's result the same as the reference (DuckDB) result?

Engines disagree on result *types* (DECIMAL vs DOUBLE, int32 vs int64, string vs
string_view, date vs timestamp), not on the answer, so values are normalised first: numbers
compare numerically (integers exactly, anything else to a relative tolerance, or to one unit
in the last place of a result DECIMAL coarser than the expected value: an AVG returned as
DECIMAL(p, 6) cannot carry more digits),
dates equal midnight timestamps, text by value. Rows compare as a multiset; when the query
ends in an ORDER BY, the sequence of ORDER BY key values must also match (rows that tie on
every key may come in any order, which the SQL standard allows).
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections import defaultdict

import pyarrow as pa
import sqlglot
from sqlglot import exp

# kinds: "i" integer, "f" other number, "d" date/time, "s" text, "b" bool, "o" anything else;
# numbers from a DECIMAL carry a third item: the value of one unit in their last place
Value = tuple | None
Row = tuple[Value, ...]
GREEDY_LIMIT = 5_000  # largest group matched pairwise when sorting alone cannot align rows


def norm(v: object) -> Value:
    if v is None:
        return None
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int):
        return ("i", v)
    if isinstance(v, decimal.Decimal):
        exponent = v.as_tuple().exponent
        return ("f", float(v), 10.0 ** exponent if isinstance(exponent, int) else 0.0)
    if isinstance(v, float):
        return ("f", v)
    if isinstance(v, datetime.datetime):
        return ("d", v.replace(tzinfo=None))
    if isinstance(v, datetime.date):
        return ("d", datetime.datetime(v.year, v.month, v.day))
    if isinstance(v, str):
        return ("s", v)
    return ("o", v)


def close(a: Value, b: Value, rel: float) -> bool:
    """Is result value `a` the expected value `b`? (Not symmetric: see the DECIMAL rule.)"""
    if a is None or b is None:
        return a is None and b is None
    ka, va, kb, vb = a[0], a[1], b[0], b[1]
    numeric = {"i", "f"}
    if ka in numeric and kb in numeric:
        if ka == "i" and kb == "i":
            return va == vb
        fa, fb = float(va), float(vb)  # type: ignore[arg-type]
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        # a result DECIMAL coarser than the expected value may be off by its last digit
        ulp_a, ulp_b = (a[2] if len(a) > 2 else 0.0), (b[2] if len(b) > 2 else 0.0)
        ulp = ulp_a if ulp_a > ulp_b else 0.0
        return math.isclose(fa, fb, rel_tol=rel, abs_tol=max(1e-9, ulp))
    return ka == kb and va == vb


def rows_close(a: Row, b: Row, rel: float) -> bool:
    return all(close(x, y, rel) for x, y in zip(a, b, strict=True))


def _sort_key(row: Row) -> tuple:
    """A total order that puts equal-enough rows next to each other on both sides."""
    out = []
    for v in row:
        if v is None:
            out.append((0, ""))
        elif v[0] in ("i", "f"):
            out.append((1, float(f"{float(v[1]):.9g}")))  # type: ignore[arg-type]
        else:
            out.append((2, v[0], str(v[1])))
    return tuple(out)


def _exact_part(row: Row) -> tuple:
    return tuple(None if v is None else ("#" if v[0] in ("i", "f") else v) for v in row)


def _fmt(row: Row) -> str:
    return "(" + ", ".join("NULL" if v is None else repr(v[1]) for v in row) + ")"


def _match_groups(got: list[Row], want: list[Row], rel: float) -> str | None:
    """Multiset match tolerant to rounding: group by the non-numeric values, then pair rows."""
    groups: dict[tuple, tuple[list[Row], list[Row]]] = defaultdict(lambda: ([], []))
    for r in got:
        groups[_exact_part(r)][0].append(r)
    for r in want:
        groups[_exact_part(r)][1].append(r)
    for g, w in groups.values():
        if len(g) != len(w):
            sample = (g or w)[0]
            return (f"{len(g)} result rows but {len(w)} expected rows like {_fmt(sample)}")
        if len(g) > GREEDY_LIMIT:
            return f"cannot align {len(g)} rows that differ only in numbers"
        left = list(w)
        for r in g:
            for i, cand in enumerate(left):
                if rows_close(r, cand, rel):
                    del left[i]
                    break
            else:
                near = max(left, key=lambda c, r=r: sum(
                    close(x, y, rel) for x, y in zip(r, c, strict=True)))
                return f"result row {_fmt(r)} is not in the expected answer; nearest {_fmt(near)}"
    return None


def order_key_columns(sql: str) -> list[int] | None:
    """Output column positions of the top-level ORDER BY keys: [] when there is no top-level
    ORDER BY, None when there is one but a key is not an output column (check strictly)."""
    try:
        tree = sqlglot.parse_one(sql)
    except sqlglot.errors.SqlglotError:
        return None
    order = tree.args.get("order")
    if order is None:
        return []
    select = tree
    while isinstance(select, exp.SetOperation):
        select = select.left
    outputs = list(select.expressions) if isinstance(select, exp.Select) else []
    names = [e.alias_or_name.lower() for e in outputs]
    texts = [e.unalias().sql().lower() for e in outputs]
    keys: list[int] = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int:
            keys.append(int(key.this) - 1)
        elif isinstance(key, exp.Column) and key.name.lower() in names:
            keys.append(names.index(key.name.lower()))
        elif key.sql().lower() in texts:
            keys.append(texts.index(key.sql().lower()))
        else:
            return None
    return keys


def compare(result: pa.Table, expected: pa.Table, order_keys: list[int] | None = None,
            rel: float = 1e-6) -> str | None:
    """None when `result` answers like `expected`, otherwise what differs.

    order_keys: from `order_key_columns`; [] = any order, None = exact row order."""
    if result.num_columns != expected.num_columns:
        return (f"{result.num_columns} columns {result.column_names}, expected "
                f"{expected.num_columns} {expected.column_names}")
    if result.num_rows != expected.num_rows:
        return f"{result.num_rows} rows, expected {expected.num_rows}"
    got = [tuple(norm(v) for v in r.values()) for r in result.to_pylist()]
    want = [tuple(norm(v) for v in r.values()) for r in expected.to_pylist()]
    if order_keys is None:
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            if not rows_close(g, w, rel):
                return f"row {i}: {_fmt(g)}, expected {_fmt(w)}"
        return None
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        gk = tuple(g[k] for k in order_keys)
        wk = tuple(w[k] for k in order_keys)
        if not rows_close(gk, wk, rel):
            return f"wrong order at row {i}: ORDER BY keys {_fmt(gk)}, expected {_fmt(wk)}"
    gs, ws = sorted(got, key=_sort_key), sorted(want, key=_sort_key)
    if all(rows_close(g, w, rel) for g, w in zip(gs, ws, strict=True)):
        return None
    return _match_groups(got, want, rel)
