"""A physical plan as a dask DataFrame: pqe's partitions become its partitions."""

from __future__ import annotations

import dask.dataframe as dd
import pyarrow as pa

from ..physical.plan import PhysicalPlan
from . import ops as O
from .lower import Lowering


def to_dask(phys: PhysicalPlan, schema: pa.Schema, ids: list[str]):
    """Nothing runs now: the graph computes each partition when the dask DataFrame is."""
    low = Lowering()
    parts = low.lower_plan(phys)
    op = O.ToPandas(ids=tuple(ids), names=tuple(schema.names), schema=schema)
    keys = low.materialize([p.then(op) for p in parts], "to-pandas")
    meta = schema.empty_table().to_pandas()
    return dd.from_graph(low.graph, meta, (None,) * (len(keys) + 1), keys, "pqe")
