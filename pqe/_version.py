"""pqe's version: the one place it is written (pyproject reads it, pqe.__version__ and
`pqe-sql --version` print it)."""

__version__ = "0.2.0"
