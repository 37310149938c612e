"""Generate TPC-H Parquet data with tpchgen-cli (a PyPI package: `pip install tpchgen-cli`).

    python data/tpch.py --sf 0.01                 # -> data/tpch/sf0.01/<table>.parquet
    python data/tpch.py --sf 1 --parts 4          # -> data/tpch/sf1-p4/<table>/<table>.N.parquet

The output directory holds one entry per TPC-H table (a file, or a directory of files with
--parts), which is what `register_tpch` and `pqe-sql DIR` expect. Generation is skipped when
the directory is already complete.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
ROOT = Path(__file__).resolve().parent / "tpch"


def default_dir(sf: float, parts: int = 1, row_group_bytes: str | None = None) -> Path:
    name = f"sf{sf:g}"
    if parts > 1:
        name += f"-p{parts}"
    if row_group_bytes:
        name += f"-rg{row_group_bytes.lower()}"
    return ROOT / name


def table_path(root: Path, table: str) -> Path:
    single = root / f"{table}.parquet"
    return single if single.exists() else root / table


def is_complete(root: Path) -> bool:
    return (root / ".complete").exists() and all(
        (root / f"{t}.parquet").exists() or (root / t).is_dir() for t in TABLES)


def _tpchgen() -> str:
    exe = shutil.which("tpchgen-cli")
    if exe is None:
        candidate = Path(sys.executable).with_name("tpchgen-cli")
        if candidate.exists():
            return str(candidate)
        raise SystemExit("tpchgen-cli is not installed: pip install tpchgen-cli")
    return exe


def generate(sf: float = 0.01, out: Path | str | None = None, parts: int = 1,
             row_group_bytes: str | None = None, quiet: bool = True) -> Path:
    """Generate (if needed) TPC-H at scale factor `sf`; returns the data directory."""
    root = Path(out) if out is not None else default_dir(sf, parts, row_group_bytes)
    if is_complete(root):
        return root
    root.mkdir(parents=True, exist_ok=True)
    cmd = [_tpchgen(), "parquet", "-s", f"{sf:g}", "-o", str(root), "--overwrite"]
    if parts > 1:
        cmd += ["--parts", str(parts)]
    if row_group_bytes:
        cmd += [f"--row-group-bytes={row_group_bytes}"]
    if quiet:
        cmd += ["-q"]
    subprocess.run(cmd, check=True)
    (root / ".complete").write_text(" ".join(cmd[1:]) + "\n")
    return root


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sf", type=float, default=0.01, help="scale factor (default 0.01)")
    p.add_argument("--out", help="output directory (default data/tpch/sf<SF>)")
    p.add_argument("--parts", type=int, default=1, help="files per table (default 1)")
    p.add_argument("--row-group-bytes", help="Parquet row group size, e.g. 256KB")
    args = p.parse_args(argv)
    root = generate(args.sf, args.out, args.parts, args.row_group_bytes, quiet=False)
    print(root)


if __name__ == "__main__":
    main()
