"""`pqe-sql`, pqe's interactive SQL shell (see app.py for the command line)."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """Run the shell; returns the exit status (the console script exits with it)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if "--version" in args:
        from .._version import __version__

        print(f"pqe {__version__}")
        return 0
    from ..extras import MissingDependencyError, check

    try:
        for module in ("rich", "prompt_toolkit", "pygments"):
            check(module, "pqe-sql")
    except MissingDependencyError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    _skip_pyarrow_pandas_probe()
    from .app import main as _main

    status = _main(argv)
    if argv is None:  # the console script (or python -m pqe.shell): the process ends here
        _exit_now(status)
    return status


def _exit_now(status: int) -> None:
    """End the process without tearing every module down, which took 0.25-0.35 s of a
    `pqe-sql -c` run (a third of it, more than its query). Output is flushed and the exit
    handlers run first, as in a normal exit; the shell has closed its files and engine."""
    import atexit
    import os
    import sys

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # a closed pipe, or no stream at all
            pass
    atexit._run_exitfuncs()
    os._exit(status)


def _skip_pyarrow_pandas_probe() -> None:
    """Let pyarrow find pandas absent, once, before the shell imports it.

    The first time pa.scalar or pa.array meets a Python value, pyarrow imports pandas only to
    ask whether the value is a pandas object: 0.3-0.5 s, a third of `pqe-sql -c`'s start. No
    pandas object exists in the shell's process (it reads files and renders Arrow tables; it
    has no pandas interop), so the shell lets that probe run with pandas hidden. pyarrow still
    imports pandas itself if anything asks it to convert to or from pandas."""
    import sys

    if "pyarrow" in sys.modules or "pandas" in sys.modules:
        return  # too late, or pandas objects may exist: leave pyarrow as it is

    class _HidePandas:
        def find_spec(self, name, path=None, target=None):
            if name == "pandas":
                raise ImportError("pandas hidden from pyarrow's probe")

    hide = _HidePandas()
    sys.meta_path.insert(0, hide)
    try:
        import pyarrow as pa

        pa.scalar(0)  # runs pyarrow's one pandas probe now
    finally:
        sys.meta_path.remove(hide)
