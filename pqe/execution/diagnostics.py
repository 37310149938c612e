"""Per-operator, per-partition statistics of a query (EXPLAIN ANALYZE).

On the threaded scheduler every task shares the query's CancelToken and records into it. On
dask.distributed each task runs an unpickled copy of the token in a worker process: it records
into this module's process-local table under the query's id instead, and the client collects
the tables of every worker when the query ends (`collect`, run through `client.run`), then
merges them into the token (`CancelToken.merge`).

Entries are keyed by (plan node number, partition): a partition recomputed after a worker was
lost overwrites its entry instead of counting twice.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_tables: dict[str, dict[tuple[int, int], list]] = {}


def record(qid: str, node: int, part: int, seconds: float, rows: int, counted: bool) -> None:
    """One op of one task: `seconds` spent, `rows` produced (when `counted`: the op whose
    output is the node's output)."""
    with _lock:
        table = _tables.setdefault(qid, {})
        entry = table.get((node, part))
        if entry is None:
            table[(node, part)] = [rows if counted else 0, seconds, 1]
        else:
            if counted:
                entry[0] = rows
            entry[1] += seconds
            entry[2] += 1


def collect(qid: str) -> dict[tuple[int, int], list]:
    """This process's entries of query `qid` (removed from the table)."""
    with _lock:
        return _tables.pop(qid, {})


def pending() -> int:
    """Queries with entries not yet collected in this process (tests)."""
    with _lock:
        return len(_tables)


class OpStats(tuple):
    """(rows, seconds, tasks) of one plan node, summed over its partitions, with
    `partitions`: [(rows, seconds)] per partition, in partition order. A tuple, so code that
    unpacks three values keeps working."""

    partitions: list[tuple[int, float]]

    def __new__(cls, rows: int, seconds: float, tasks: int, partitions=()):
        out = super().__new__(cls, (rows, seconds, tasks))
        out.partitions = list(partitions)
        return out

    def __reduce__(self):
        return (OpStats, (self[0], self[1], self[2], self.partitions))
