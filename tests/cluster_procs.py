"""A dask cluster of real processes for the cluster tests: `dask scheduler` and `dask worker`
started as subprocesses (each in its own process group, so a test can SIGKILL one of them
with its nanny), optionally with a command prefix for the scheduler (e.g. `unshare -m ...`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

DASK = str(Path(sys.executable).with_name("dask"))
REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Procs:
    """The processes of one cluster; `address` is the scheduler's."""

    def __init__(self, logdir: Path):
        self.logdir = Path(logdir)
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.procs: dict[str, subprocess.Popen] = {}
        self.address = ""

    def env(self) -> dict:
        """pqe (this checkout) and the tests' modules (slow_frame) importable everywhere."""
        paths = [str(REPO), str(REPO / "tests")]
        if os.environ.get("PYTHONPATH"):
            paths.append(os.environ["PYTHONPATH"])
        return dict(os.environ, PYTHONPATH=os.pathsep.join(paths))

    def spawn(self, name: str, argv: list[str], cwd: str | None = None) -> subprocess.Popen:
        log = open(self.logdir / f"{name}.log", "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                             start_new_session=True, env=self.env())
        self.procs[name] = p
        return p

    def start_scheduler(self, prefix: tuple[str, ...] = (), cwd: str | None = None) -> str:
        port = free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        self.spawn("scheduler", [*prefix, DASK, "scheduler", "--host", "127.0.0.1", "--port",
                                 str(port), "--no-dashboard"], cwd)
        return self.address

    def start_worker(self, name: str, memory: str = "2GiB", nthreads: int = 1,
                     cwd: str | None = None) -> None:
        self.spawn(name, [DASK, "worker", self.address, "--nthreads", str(nthreads),
                          "--memory-limit", memory, "--no-dashboard", "--name", name,
                          "--local-directory", str(self.logdir / name)], cwd)

    def client(self, n_workers: int, timeout: float = 90):
        from distributed import Client

        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            try:
                # not the default client: closing clients out of creation order would leave
                # dask's global scheduler setting pointing at a closed one
                c = Client(self.address, timeout="5s", set_as_default=False)
                c.wait_for_workers(n_workers, timeout=max(1, deadline - time.time()))
                return c
            except (OSError, TimeoutError) as e:
                last = e
                time.sleep(0.5)
        raise AssertionError(f"dask cluster did not start: {last}\n{self.logs()}")

    def kill(self, name: str, sig=signal.SIGKILL) -> None:
        p = self.procs[name]
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass

    def logs(self) -> str:
        out = []
        for f in sorted(self.logdir.glob("*.log")):
            out.append(f"--- {f.name}\n{f.read_text()[-3000:]}")
        return "\n".join(out)

    def stop(self) -> None:
        for name in list(self.procs):
            self.kill(name, signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(timeout=15)
        self.procs.clear()


def wait_until(predicate, timeout: float, step: float = 0.02) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def slow_frame(i: int, seconds: float):
    """A dask partition that takes `seconds` to compute (a long query on demand)."""
    import pandas as pd

    time.sleep(seconds)
    return pd.DataFrame({"a": list(range(i * 10, i * 10 + 10))})


def slow_table(parts: int, seconds: float):
    import dask
    import dask.dataframe as dd
    import pandas as pd

    meta = pd.DataFrame({"a": pd.Series([], dtype="int64")})
    return dd.from_delayed([dask.delayed(slow_frame)(i, seconds) for i in range(parts)],
                           meta=meta)
