"""Benchmarks for pqe: `python -m benchmarks.tpch` runs TPC-H against pqe and peer engines.

A package (rather than loose scripts) so the runner can be started with `python -m` from the
repository root and imported by the smoke test.
"""
