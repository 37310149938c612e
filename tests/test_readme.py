"""The README's Python examples run as written: blocks in order in one namespace (as a reader
would paste them), and a block with a `__main__` guard as its own script (the cluster one)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from data.tpch import generate

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _blocks() -> list[str]:
    return BLOCK.findall((ROOT / "README.md").read_text())


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    generate(0.01)  # data/tpch/sf0.01, which the examples read
    blocks = _blocks()
    assert len(blocks) >= 6
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": "readme"}
    scripts = 0
    for i, block in enumerate(blocks):
        if "__main__" in block:
            script = tmp_path / f"block{i}.py"
            script.write_text(block)
            env = dict(os.environ, PYTHONPATH=str(ROOT))
            out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                                 timeout=600, cwd=ROOT, env=env)
            assert out.returncode == 0, f"README block {i} failed:\n{block}\n{out.stderr}"
            assert "l_returnflag" in out.stdout
            scripts += 1
            continue
        try:
            exec(compile(block, f"README.md block {i}", "exec"), namespace)  # noqa: S102
        except Exception as e:  # noqa: BLE001 - report which block
            raise AssertionError(f"README block {i} failed: {type(e).__name__}: {e}\n{block}") from e
    assert scripts == 1
