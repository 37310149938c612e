"""The disk-backed hash exchange (`Exchange[hash(...), p2p]`): O(P) tasks instead of P x P.

The task-grid exchange (`tasks`) makes one split task per input partition and one `getitem`
task per (input, output) pair, all held in worker memory: P^2 tasks for the scheduler at P
partitions. This one makes

    P `exchange-write` tasks: hash-split an input partition and write the pieces, each an
        Arrow IPC stream, to one file on the local disk of the process that ran it (a worker's
        local directory, or a temporary directory on threads), with an index of where each
        piece starts; the task's result is a small `Written` descriptor (no data);
    1 `exchange-barrier` task: the P descriptors, so readers depend on one task, not P;
    P readers, fused into the consumer's task: output partition j reads piece j of every file,
        from its own disk or from the worker that wrote it (one request per worker, served by
        pqe's worker plugin), and concatenates them.

So the graph has 2P + 1 tasks and about 3P edges, data never sits in Dask's memory, and a
query's files are removed when it ends (`remove_query`). A reader that cannot reach the worker
that wrote a piece (it died) fails with `ExchangeLost`; the cluster runner then reruns the
query once.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import ExecutionError
from ..kernels import relational as rel
from . import ops as O

FETCH_HANDLER = "pqe_exchange_fetch"
CONNECT_TIMEOUT = 10.0  # seconds to reach the worker holding a piece before it counts as lost

_lock = threading.Lock()
_root: str | None = None
# bytes this process wrote to exchange files, served to other workers, fetched from them
_counters = {"written": 0, "served": 0, "fetched": 0, "files": 0}


def _count(name: str, n: int) -> None:
    with _lock:
        _counters[name] += n


def counters() -> dict[str, int]:
    """Cumulative exchange bytes of this process (benchmarks read them on every worker)."""
    with _lock:
        return dict(_counters)


class ExchangeLost(ExecutionError):
    """Pieces of a disk-backed exchange are gone (their worker died)."""


def _private_directory(parent: str) -> str:
    """A new directory under `parent` that only this user can enter: mkdtemp gives it an
    unpredictable name and mode 0700 and never reuses an existing one. The fixed
    `pqe-exchange-<pid>` in /tmp was 0755 (any local user read the spilled rows) and taken
    as it was when it existed: another user who made it first could swap a query's pieces
    for doctored ones (a wrong answer) or make it a file (every spilling query failed). It
    is removed when the process exits (a query stopped by a timeout may leave files)."""
    os.makedirs(parent, exist_ok=True)
    path = tempfile.mkdtemp(prefix=f"pqe-exchange-{os.getpid()}-", dir=parent)
    atexit.register(shutil.rmtree, path, True)
    return path


def set_local_directory(path: str) -> None:
    """Write exchange files under `path` (a dask worker's local directory)."""
    global _root
    with _lock:
        _root = _private_directory(path)


def root() -> str:
    global _root
    with _lock:
        if _root is None:
            _root = _private_directory(tempfile.gettempdir())
        return _root


def query_dir(qid: str) -> str:
    return os.path.join(root(), qid)


def remove_query(qid: str) -> bool:
    """Delete a query's exchange files in this process's directory (the directory itself
    stays until the process exits: made again under a name other users can list in /tmp,
    it could be theirs)."""
    path = query_dir(qid)
    if not os.path.isdir(path):
        return False
    shutil.rmtree(path, ignore_errors=True)
    return True


def remove_all() -> None:
    global _root
    with _lock:
        if _root is not None:
            shutil.rmtree(_root, ignore_errors=True)
            _root = None


def _address() -> str | None:
    """The worker this task runs on (None outside dask.distributed workers)."""
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return None


@dataclass(frozen=True)
class Written:
    """Where one input partition's pieces are: the file (and its index), the worker holding
    it (None: this process), and sizes for statistics."""

    address: str | None
    path: str
    rows: int
    nbytes: int


def _paths(qid: str, exid: str, part: int) -> tuple[str, str]:
    d = os.path.join(query_dir(qid), exid)
    return os.path.join(d, f"{part}.arrow"), os.path.join(d, f"{part}.index")


def write_pieces(pieces: list[pa.Table], qid: str, exid: str, part: int,
                 write_empty: bool) -> Written:
    """Write `pieces` (one per output partition) as IPC streams into one file; empty pieces
    are skipped unless `write_empty` (one writer keeps them all, so every output partition
    learns its schema)."""
    path, index = _paths(qid, exid, part)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    offsets = np.zeros(len(pieces) + 1, dtype=np.int64)
    rows = 0
    # written under temporary names, then renamed: a rerun of the task (after a worker was
    # lost) never leaves a reader a half-written file
    suffix = f".tmp-{os.getpid()}-{threading.get_ident()}"
    try:
        with pa.OSFile(path + suffix, "wb") as sink:
            for j, piece in enumerate(pieces):
                if piece.num_rows or write_empty:
                    with pa.ipc.new_stream(sink, piece.schema) as w:
                        w.write_table(piece)
                    rows += piece.num_rows
                offsets[j + 1] = sink.tell()
        offsets.tofile(index + suffix)
        os.replace(path + suffix, path)
        os.replace(index + suffix, index)
    except OSError as e:
        raise ExecutionError(f"exchange {exid} could not write partition {part} to {path}: "
                             f"{e}") from e
    _count("written", int(offsets[-1]))
    _count("files", 1)
    return Written(_address(), path, rows, int(offsets[-1]))


def read_local(path: str, j: int) -> bytes | None:
    """Piece j of the file at `path` (None when it is empty)."""
    offsets = np.fromfile(path[: -len(".arrow")] + ".index", dtype=np.int64)
    start, end = int(offsets[j]), int(offsets[j + 1])
    if end <= start:
        return None
    with open(path, "rb") as f:
        f.seek(start)
        return f.read(end - start)


async def serve_fetch(requests=None):
    """Worker RPC handler: the pieces [(path, j)] asked for, as bytes (b"" when empty or
    missing: the reader tells the two apart by `missing`)."""
    import asyncio

    from distributed.protocol import to_serialize

    def read_all():
        out, missing = [], []
        for i, (path, j) in enumerate(requests or ()):
            try:
                out.append(read_local(path, j) or b"")
            except (OSError, ValueError):
                out.append(b"")
                missing.append(i)
        return out, missing

    data, missing = await asyncio.to_thread(read_all)
    _count("served", sum(len(b) for b in data))
    return {"status": "OK", "data": to_serialize(data), "missing": missing}


def _refused(address: str) -> None:
    """A dead worker's port refuses connections at once; Dask's connect would retry it until
    its timeout. (Only for tcp:// addresses; others go straight to the connect.)"""
    import socket
    from urllib.parse import urlsplit

    if not address.startswith("tcp://"):
        return
    parts = urlsplit(address)
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=2).close()
    except ConnectionRefusedError as e:
        raise ExchangeLost(f"exchange pieces on worker {address} are lost (it refuses "
                           f"connections: the worker died)") from e
    except OSError:
        pass  # slow or unreachable: the connect below decides


def _fetch_remote(address: str, requests: list[tuple[str, int]]) -> list[bytes]:
    from distributed import get_worker
    from distributed.utils import sync

    worker = get_worker()
    _refused(address)

    async def call():
        # a connect timeout of its own: Dask's (30 s) retries a dead worker's address
        from distributed.comm import connect
        from distributed.core import send_recv

        comm = await connect(address, timeout=CONNECT_TIMEOUT, **worker.connection_args)
        try:
            return await send_recv(comm, op=FETCH_HANDLER, requests=requests, reply=True)
        finally:
            comm.abort()

    try:
        reply = sync(worker.loop, call)
    except (OSError, EnvironmentError) as e:
        raise ExchangeLost(f"exchange pieces on worker {address} are lost (cannot reach it: "
                           f"{e})") from e
    except Exception as e:  # noqa: BLE001 - CommClosedError and the like
        raise ExchangeLost(f"exchange pieces on worker {address} are lost "
                           f"({type(e).__name__}: {e})") from e
    if reply.get("missing"):
        i = reply["missing"][0]
        raise ExchangeLost(f"exchange file {requests[i][0]} is missing on worker {address}")
    data = list(getattr(reply["data"], "data", reply["data"]))
    _count("fetched", sum(len(b) for b in data))
    return data


def read_partition(written: list[Written], j: int, where: str) -> pa.Table:
    """Output partition j: piece j of every writer's file, concatenated."""
    here = _address()
    blobs: list[bytes | None] = [None] * len(written)
    remote: dict[str, list[int]] = {}
    for i, w in enumerate(written):
        if w.address is None or w.address == here:
            try:
                blobs[i] = read_local(w.path, j)
            except OSError as e:
                raise ExchangeLost(f"exchange file {w.path} is missing ({e})") from e
        else:
            remote.setdefault(w.address, []).append(i)
    for address, idx in remote.items():
        got = _fetch_remote(address, [(written[i].path, j) for i in idx])
        for i, b in zip(idx, got, strict=True):
            blobs[i] = b or None
    tables = []
    for b in blobs:
        if b:
            tables.append(pa.ipc.open_stream(pa.py_buffer(b)).read_all())
    if not tables:
        raise ExecutionError(f"exchange partition {j} has no pieces in {where}")
    return rel.concat(tables)


class ExchangeWrite(O.Op):
    """Hash-split the running table into `n` pieces and write them to local disk; returns
    a `Written`. `qid` (the query) and `part` are left out of repr: task keys stay the same
    for the same plan."""

    label = "exchange"
    _fields = ("keys", "n", "exid", "qid", "part")

    def __repr__(self):
        return f"ExchangeWrite({self.keys!r}, {self.n}, {self.exid!r}, {self.part})"

    def run(self, data, inputs):
        pieces = rel.hash_split(data, self.keys, self.n)
        return write_pieces(pieces, self.qid, self.exid, self.part, self.part == 0)


class ExchangeRead(O.Op):
    """Start from output partition `part` of the exchange whose writers' descriptors are task
    input 0 (the barrier's list)."""

    label = "exchange"
    _fields = ("exid", "part")

    def __repr__(self):
        return f"ExchangeRead({self.exid!r}, {self.part})"

    def run(self, data, inputs):
        return read_partition(inputs[0], self.part, f"exchange {self.exid}")


def barrier(*written: Written) -> list[Written]:
    """All writers' descriptors, in input-partition order (one task readers depend on)."""
    return list(written)


def exchange_bytes(written: list[Written]) -> int:
    return sum(w.nbytes for w in written)
