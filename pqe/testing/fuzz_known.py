"""Known fuzz findings and refusal baselines (for `tests/test_fuzz.py` and `benchmarks.fuzz`).

A known-findings file is JSON:

    {"findings": [
       {"id": "K1", "generator": "params", "oracle": "bind_order",
        "match": "regex searched in '<error class> <detail>'",      (optional)
        "cases": [[20240, 17, "dml"], ...],        (optional: seed, index[, generator])
        "reason": "why it fails; a bug in pqe (or in DuckDB) and where",
        "repro": "the few lines of SQL that show it"}]}

A failure is known when generator and oracle match ("*" matches any), the regex (if given)
matches, and (if given) its (seed, case index) is listed. The CI fuzz test fails on any
failure that no entry explains.

A baseline file holds, per generator, the largest acceptable refusal rate (cases that hit an
UnsupportedError / cases tested) of the CI run: a change that makes pqe refuse more fails it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class KnownFinding:
    id: str
    generator: str = "*"
    oracle: str = "*"
    match: str | None = None
    cases: list = field(default_factory=list)
    reason: str = ""
    repro: str = ""

    def matches(self, generator: str, seed: int, index: int, failure) -> bool:
        if self.generator not in ("*", generator) or self.oracle not in ("*", failure.oracle):
            return False
        if self.match and not re.search(self.match, f"{failure.error_class} {failure.detail}"):
            return False
        if self.cases and not any(list(c[:2]) == [seed, index] and
                                  (len(c) < 3 or c[2] == generator) for c in self.cases):
            return False
        return True


def load_known(path: str | Path) -> list[KnownFinding]:
    data = json.loads(Path(path).read_text())
    return [KnownFinding(**f) for f in data.get("findings", [])]


def load_baseline(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())
