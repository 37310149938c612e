"""SUMMARIZE t / SUMMARIZE SELECT ... / SUMMARIZE 'file.parquet': DuckDB's per-column
statistics (column_name, column_type, min, max, approx_unique, avg, std, q25, q50, q75,
count, null_percentage).

One query: a single ungrouped aggregate computes every statistic of every column in one
parallel pass over the source (partial states per partition, then one final step; the
distinct counts are HyperLogLog sketches and the quantiles mergeable weighted-point
sketches, kernels.summarize, not one DISTINCT pre-aggregation or sort per column), then a
Python step turns its one row into one row per column. It is an ordinary
query plan: SUMMARIZE returns a lazy DataFrame and EXPLAIN SUMMARIZE shows the plan.
"""

from __future__ import annotations

import hashlib

import pyarrow as pa
from sqlglot import exp

from .. import types as T
from ..catalog import CatalogSnapshot
from ..kernels import summarize as K
from ..plan import builder as B
from ..plan import statements as S
from ..plan.expr import AggCall, ColumnRef, Expr, Literal
from ..plan.logical import MapBatches, UserFunction
from ..plan.udf import AggregateUDF, content_token
from .binder import Binder, refuse_unknown_args

OUT = ("column_name", "column_type", "min", "max", "approx_unique", "avg", "std", "q25", "q50",
       "q75", "count", "null_percentage")
_OUT_TYPES = (T.TEXT, T.TEXT, T.TEXT, T.TEXT, T.INT64, T.TEXT, T.TEXT, T.TEXT, T.TEXT, T.TEXT,
              T.INT64, T.decimal(9, 2))


def _ordered(t: pa.DataType) -> bool:
    return T.is_numeric(t) or T.is_text(t) or T.is_temporal(t) or T.is_boolean(t)


def _hashable(t: pa.DataType) -> bool:
    return _ordered(t) or pa.types.is_binary(t)


def _approx_unique(t: pa.DataType) -> AggregateUDF:
    """approx_unique over values of type `t`: a HyperLogLog sketch per partition."""
    parts = (K.hll_update, K.hll_merge, K.hll_finalize, (t,), T.INT64, T.BINARY, True)
    return AggregateUDF("approx_unique", K.hll_update, K.hll_merge, K.hll_finalize, (t,),
                        T.INT64, T.BINARY, True, content_token("approx_unique", *parts))


def _quantiles(t: pa.DataType) -> AggregateUDF:
    """q25, q50 and q75 over values of type `t` (numbers, dates): a mergeable sketch of
    weighted points per partition, as text for the pivot."""
    kind = ("integer" if T.is_integer(t) else "decimal" if T.is_decimal(t)
            else "date" if pa.types.is_date(t) else "real" if pa.types.is_float32(t)
            else "float")
    final = K.QuantileText(kind, t.scale if T.is_decimal(t) else 0)
    parts = (K.quantile_update, K.quantile_merge, final, (t,), T.TEXT, T.BINARY, True)
    return AggregateUDF("quantiles", K.quantile_update, K.quantile_merge, final, (t,),
                        T.TEXT, T.BINARY, True, content_token("quantiles", *parts))


def _quantiled(t: pa.DataType) -> bool:
    return T.is_numeric(t) or pa.types.is_date(t)


def summarize(stmt: exp.Summarize, catalog: CatalogSnapshot, sql: str) -> S.Query:
    refuse_unknown_args(stmt, {"this", "table"}, "SUMMARIZE")
    target = stmt.this
    if isinstance(target, exp.Literal) and target.is_string:  # SUMMARIZE 'file.parquet'
        target = exp.Table(this=exp.Identifier(this=target.this, quoted=True))
    query = target if isinstance(target, exp.Query) else exp.select("*").from_(target)
    source = Binder(catalog, sql).bind_query(query)
    aggs: list[tuple[AggCall, str]] = [(B.aggregate_call("count", []), "rows")]
    columns = []
    for i, f in enumerate(source.schema):
        ref = ColumnRef(f)
        names: list[str | None] = []
        for stat, ok, call in (
                ("min", _ordered, lambda r: B.aggregate_call("min", [r])),
                ("max", _ordered, lambda r: B.aggregate_call("max", [r])),
                ("uniq", _hashable, lambda r: B.user_aggregate(_approx_unique(r.dtype), [r])),
                ("avg", T.is_numeric, lambda r: B.aggregate_call("avg", [r])),
                ("std", T.is_numeric, lambda r: B.aggregate_call("stddev_samp", [r])),
                ("quant", _quantiled, lambda r: B.user_aggregate(_quantiles(r.dtype), [r])),
                ("count", lambda t: True, lambda r: B.aggregate_call("count", [r]))):
            if ok(f.dtype):
                names.append(f"{stat}_{i}")
                aggs.append((call(ref), names[-1]))
            else:
                names.append(None)
        columns.append((f.name, T.type_name(f.dtype), *names))
    agg = B.aggregate(source, [], aggs)
    # min, max, avg and std are shown as text (one column holds every column's values)
    items: list[tuple[Expr, str]] = []
    for (_, name), field in zip(aggs, agg.agg_fields, strict=True):
        e: Expr = ColumnRef(field)
        if name.split("_")[0] in ("min", "max", "avg", "std"):
            e = B.cast(e, T.TEXT)
        elif name.split("_")[0] == "uniq":  # no values: 0, as DuckDB's approx_unique (a
            e = B.call("coalesce", e, Literal(0, T.INT64))  # user aggregate of none is NULL)
        items.append((e, name))
    stats = B.project(agg, items)
    pivot = K.Pivot(tuple(columns), "rows", OUT)
    token = hashlib.sha256(repr(pivot).encode()).hexdigest()[:16]
    fields = tuple(B.new_field(n, t) for n, t in zip(OUT, _OUT_TYPES, strict=True))
    node = MapBatches(stats, UserFunction(pivot, "summarize", token),
                      tuple(n for _, n in items), fields)
    return S.Query(B.project(node, [(ColumnRef(f), f.name) for f in fields]))
