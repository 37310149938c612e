"""`SessionConfig`: every setting of a session in one frozen object.

The Context builds it from its keyword arguments; nothing reads settings from anywhere else,
and SQL text cannot change them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..access import UNRESTRICTED, AccessPolicy
from ..errors import Error
from ..physical.planner import PlannerConfig


@dataclass(frozen=True)
class SessionConfig:
    """partitions: how many partitions to split work into (None: two per thread of the
    executor, fewer for small data); memory_guard: refuse a query whose estimated memory on
    this machine exceeds what is available; planner: the physical planner's costs and
    thresholds (partitions aside); access: what SQL text may reach (pqe.access)."""

    partitions: int | None = None
    memory_guard: bool = True
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    access: AccessPolicy = UNRESTRICTED

    def __post_init__(self):
        from .. import types as T

        n = T.python_number(self.partitions)  # (np.int64(4) was refused; True read as 1)
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise Error("partitions must be a positive integer")
        object.__setattr__(self, "partitions", n)

    def planner_config(self, parallelism: int) -> PlannerConfig:
        """The planner's settings for an executor with `parallelism` threads."""
        from dataclasses import replace

        if self.partitions is not None:
            return replace(self.planner, target_partitions=self.partitions, min_partition_rows=1,
                           max_partition_rows=1 << 62)
        return replace(self.planner, target_partitions=2 * parallelism)
