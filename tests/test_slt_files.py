"""pqe's own sqllogictest files (tests/slt/*.slt), one per SQL feature area.

Each file runs through pqe's sqllogictest runner (pqe.testing.sqllogictest) in a fresh
Context, on the default threaded scheduler with 4 partitions and on the synchronous scheduler,
and every record must pass. The expected results in the files were computed with DuckDB under
pqe's semantics (integer division truncates, NULLs last ascending / first descending, division
by zero is NULL) and checked by hand; they are never adjusted to what pqe happens to return.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import pqe
from pqe.testing.sqllogictest import run_file

SLT_DIR = Path(__file__).with_name("slt")
SLT_FILES = sorted(SLT_DIR.glob("*.slt"))

# name -> engine factory; each file gets a fresh Context from it.
ENGINES = {
    "threads-4": lambda: pqe.Context(partitions=4),
    "sync": lambda: pqe.Context("sync", partitions=4),
}

RECORD_TIMEOUT_S = 60.0  # one runaway query fails alone instead of hanging the suite


def test_slt_files_exist():
    assert len(SLT_FILES) >= 10, f"expected the feature .slt files in {SLT_DIR}"


@pytest.mark.parametrize("engine", sorted(ENGINES))
@pytest.mark.parametrize("path", SLT_FILES, ids=[p.name for p in SLT_FILES])
def test_slt_file(path: Path, engine: str):
    result = run_file(path, ENGINES[engine], record_timeout=RECORD_TIMEOUT_S)
    assert result.queries.run > 0, f"{path.name}: no queries ran"
    assert result.halted_at is None, f"{path.name}: halted at line {result.halted_at}"
    failed = result.total.failed
    if failed or result.aborted:
        shown = "\n\n".join(f.describe(max_values=40) for f in result.failures[:25])
        more = len(result.failures) - 25
        tail = f"\n\n... and {more} more failures" if more > 0 else ""
        pytest.fail(f"{result.summary_line()}\n\n{shown}{tail}", pytrace=False)
