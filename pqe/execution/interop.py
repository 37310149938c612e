"""A physical plan as a dask DataFrame: pqe's partitions become its partitions."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

import dask.dataframe as dd
import pyarrow as pa

from ..kernels.interop import pandas_meta
from ..physical.plan import PhysicalPlan
from . import ops as O
from .lower import Lowering


def to_dask(phys: PhysicalPlan, schema: pa.Schema, ids: list[str]):
    """Nothing runs now: the graph computes each partition when the dask DataFrame is. Every
    partition is converted like the meta (kernels.interop): DATE and TIMESTAMP as
    datetime64, DECIMAL as float64, integers and booleans of columns that may hold NULLs (by
    `schema`'s nullability) as pandas' nullable dtypes, LIST, STRUCT, MAP, BLOB and TIME as
    pd.ArrowDtype (so that to_parquet() can derive their Parquet types)."""
    low = Lowering()
    parts = low.lower_plan(phys)
    masked = tuple(f.nullable for f in schema)
    op = O.ToPandas(ids=tuple(ids), names=tuple(schema.names), schema=schema, masked=masked)
    keys = low.materialize([p.then(op) for p in parts], "to-pandas")
    meta = pandas_meta(schema, masked, arrow_objects=True)
    return dd.from_graph(_Graph(low.graph), meta, (None,) * (len(keys) + 1), keys, "pqe")


class _Graph(Mapping):
    """The task graph handed to dask under a token of its own. Dask names a collection by a
    token of what it is made of; for a plain dict that pickles every task (the data of
    in-memory tables included) and fails on values that do not pickle the same way twice
    (an INTERVAL literal's MonthDayNano). Each to_dask() call is a new graph, so a random
    token is the right name."""

    def __init__(self, graph: dict):
        self._graph = graph
        self._token = uuid.uuid4().hex

    def __getitem__(self, key):
        return self._graph[key]

    def __iter__(self):
        return iter(self._graph)

    def __len__(self) -> int:
        return len(self._graph)

    def __dask_tokenize__(self):
        return ("pqe-graph", self._token)
