"""Benchmarks for pqe: `python -m benchmarks.tpch` runs TPC-H against pqe and peer engines.

A package (rather than loose scripts) so the runner can be started with `python -m` from the
repository root and imported by the smoke test.
"""

# pqe first, as a user's `import pqe` comes before pyarrow: pqe picks Arrow's allocator when
# it is imported before pyarrow loads (see pqe/__init__.py); the peers allocate with their own.
import pqe  # noqa: E402,F401
