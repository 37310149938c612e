"""`pqe-sql`, pqe's interactive SQL shell (see app.py for the command line)."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """Run the shell; returns the exit status (the console script exits with it)."""
    from .app import main as _main

    return _main(argv)


__all__ = ["main"]
