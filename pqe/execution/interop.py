"""A physical plan as a dask DataFrame: pqe's partitions become its partitions."""

from __future__ import annotations

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
    `schema`'s nullability) as pandas' nullable dtypes."""
    low = Lowering()
    parts = low.lower_plan(phys)
    masked = tuple(f.nullable for f in schema)
    op = O.ToPandas(ids=tuple(ids), names=tuple(schema.names), schema=schema, masked=masked)
    keys = low.materialize([p.then(op) for p in parts], "to-pandas")
    meta = pandas_meta(schema, masked)
    return dd.from_graph(low.graph, meta, (None,) * (len(keys) + 1), keys, "pqe")
