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
    from .app import main as _main

    return _main(argv)


__all__ = ["main"]
