"""Start-up: what `import` costs, and the first query of a fresh process.

    python -m benchmarks.startup            # writes benchmarks/STARTUP.md
    python -m benchmarks.startup --no-write

Each number is the median of `--runs` fresh processes, measured side by side (the engines
alternate, so a busy moment hits all of them):

- `import X`: the total of `python -X importtime -c "import X"` (the interpreter's own
  start-up is not in it);
- first query: the wall time of a whole process that answers one aggregate over TPC-H
  SF0.01 lineitem and exits: `pqe-sql DIR -c SQL` for pqe, `python -c` with the library for
  the others (their Python packages, as a Python user starts them).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SQL = "select l_returnflag, count(*) as n from lineitem group by 1 order by 1"


def _import_ms(module: str) -> float:
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                         capture_output=True, text=True, check=True, cwd="/")
    last = [ln for ln in out.stderr.splitlines() if ln.startswith("import time:")][-1]
    return int(re.split(r"\s*\|\s*", last)[1]) / 1000


def _wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True, cwd=ROOT)
    return time.perf_counter() - t0


def first_query_commands(data: Path) -> dict[str, list[str]]:
    li = data / "lineitem.parquet"
    shell = shutil.which("pqe-sql") or str(Path(sys.executable).with_name("pqe-sql"))
    return {
        "pqe (pqe-sql -c)": [shell, str(data), "-c", SQL],
        "duckdb": [sys.executable, "-c", "import duckdb; print(duckdb.sql(\"" +
                   SQL.replace("from lineitem", f"from '{li}'") + "\").fetchall())"],
        "polars": [sys.executable, "-c", "import polars as pl; print(pl.scan_parquet('" +
                   str(li) + "').group_by('l_returnflag').len().sort('l_returnflag').collect())"],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    from data.tpch import generate

    data = generate(0.01)
    modules = ["pqe", "duckdb", "polars", "datafusion", "pyarrow", "pyarrow.dataset", "dask",
               "sqlglot"]
    imports: dict[str, list[float]] = {m: [] for m in modules}
    firsts: dict[str, list[float]] = {k: [] for k in first_query_commands(data)}
    env_note = "PYTHONDONTWRITEBYTECODE" in os.environ
    for name, cmd in first_query_commands(data).items():
        _wall(cmd)  # bytecode compiled, files in the page cache
    for _ in range(args.runs):
        for m in modules:
            imports[m].append(_import_ms(m))
        for name, cmd in first_query_commands(data).items():
            firsts[name].append(_wall(cmd))
    imp = {m: statistics.median(v) for m, v in imports.items()}
    first = {k: statistics.median(v) for k, v in firsts.items()}
    heavy = subprocess.run(
        [sys.executable, "-c", "import sys, pqe; print(sorted({m.split('.')[0] for m in "
         "sys.modules} & {'pyarrow', 'pandas', 'numpy', 'dask', 'distributed', 'sqlglot', "
         "'rich', 'prompt_toolkit'}))"], capture_output=True, text=True, cwd="/").stdout.strip()
    lines = [
        "# Start-up: imports and the first query of a fresh process", "",
        f"`python -m benchmarks.startup`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"median of {args.runs} fresh processes per line, the engines alternating.", "",
        f"- Machine: {platform.machine()}, {os.cpu_count()} cores; Python "
        f"{platform.python_version()}" + (" (PYTHONDONTWRITEBYTECODE was set: modules "
                                          "compiled on every start)" if env_note else ""),
        f"- `import pqe` loads none of the heavy modules: {heavy or '[]'} (pyarrow, dask and "
        "sqlglot load on first use; tests/test_packaging.py keeps it so).", "",
        "| import | ms (python -X importtime total) | / import duckdb |",
        "| --- | ---: | ---: |",
    ]
    for m in modules:
        lines.append(f"| `import {m}` | {imp[m]:.0f} | {imp[m] / imp['duckdb']:.2f} |")
    lines += ["", f"First query, whole process (`{SQL}` over TPC-H SF0.01 lineitem):", "",
              "| process | seconds | / duckdb |", "| --- | ---: | ---: |"]
    for k, v in first.items():
        lines.append(f"| {k} | {v:.2f} | {v / first['duckdb']:.2f} |")
    lines += ["", "pqe's first query pays for importing pyarrow (with its compute functions), "
              "dask (its package imports jinja2, yaml and psutil) and sqlglot, which together "
              "are most of it. The shell lets pyarrow's one pandas probe find pandas absent "
              "(pyarrow otherwise imports pandas, 0.3-0.5 s, on its first `pa.scalar`) and "
              "ends its process without tearing the modules down (0.25-0.35 s).", ""]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        (HERE / "STARTUP.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
