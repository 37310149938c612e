"""Turning command-line PATHs into tables.

A file becomes a table named by its stem. A directory contributes each Parquet/CSV file in it
and each subdirectory holding Parquet files (a `tpchgen-cli --parts` table, a partitioned
dataset), so `pqe-sql data/tpch/sf1` opens the eight TPC-H tables. A directory whose children
are hive partitions (`year=2024/`), or whose files are all numbered parts (`lineitem.1.parquet`,
`part-00000-….parquet`, `data_0.parquet`), is itself one table named after the directory, so
`pqe-sql data/tpch/sf1/lineitem` opens one table, not one per part file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CatalogError

PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")
CSV_SUFFIXES = (".csv", ".tsv", ".csv.gz")


@dataclass(frozen=True)
class Source:
    name: str
    path: Path
    kind: str  # "parquet" or "csv"


def table_name(stem: str) -> str:
    """A name usable unquoted in SQL: `lineitem.1` -> `lineitem_1`, `2024-data` -> `t2024_data`."""
    name = re.sub(r"\W+", "_", stem).strip("_") or "t"
    return name if not name[0].isdigit() else "t" + name


def _kind(path: Path) -> str | None:
    low = path.name.lower()
    if low.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if low.endswith(CSV_SUFFIXES):
        return "csv"
    return None


def _stem(path: Path) -> str:
    low = path.name.lower()
    for suffix in (*PARQUET_SUFFIXES, *CSV_SUFFIXES):
        if low.endswith(suffix):
            return path.name[: -len(suffix)]
    return path.stem


def _has_parquet(directory: Path) -> bool:
    return any(p.is_file() and _kind(p) == "parquet" for p in directory.rglob("*"))


def _is_hive(directory: Path) -> bool:
    return any(c.is_dir() and "=" in c.name for c in directory.iterdir())


def _is_parts(directory: Path) -> bool:
    """Every file is a numbered Parquet part of one dataset (and there are no subtables)."""
    files = [c for c in directory.iterdir() if not c.name.startswith((".", "_"))]
    if not files or any(not c.is_file() or _kind(c) != "parquet" for c in files):
        return False
    part = re.compile(rf"^(?:{re.escape(directory.name)}|part|data|chunk)?[._-]?\d+(?:\b|_)",
                      re.I)
    return all(part.match(_stem(c)) for c in files)


def discover(paths: list[str]) -> list[Source]:
    """The tables the PATHs name, in order. Raises CatalogError for a missing path, an
    unsupported file, a directory with no data, or two tables with one name."""
    found: list[Source] = []
    for raw in paths:
        path = Path(os.path.expanduser(raw))
        if not path.exists():
            raise CatalogError(f"no such file or directory: {raw}")
        if path.is_file():
            kind = _kind(path)
            if kind is None:
                raise CatalogError(f"{raw}: not a Parquet or CSV file (.parquet, .csv)")
            found.append(Source(table_name(_stem(path)), path, kind))
            continue
        if _is_hive(path) or _is_parts(path):
            found.append(Source(table_name(path.resolve().name), path, "parquet"))
            continue
        before = len(found)
        for child in sorted(path.iterdir()):
            if child.name.startswith((".", "_")):
                continue
            if child.is_file() and (kind := _kind(child)) is not None:
                found.append(Source(table_name(_stem(child)), child, kind))
            elif child.is_dir() and _has_parquet(child):
                found.append(Source(table_name(child.name), child, "parquet"))
        if len(found) == before:
            raise CatalogError(f"{raw}: no Parquet or CSV files or Parquet directories in it")
    seen: dict[str, Source] = {}
    for src in found:
        key = src.name.lower()
        if key in seen:
            raise CatalogError(f"two tables would be named {src.name!r}: "
                               f"{seen[key].path} and {src.path}")
        seen[key] = src
    return found


def register(ctx: Any, sources: list[Source]) -> None:
    """Register every source; CSV needs `Context.register_csv`, which older engines lack."""
    for src in sources:
        if src.kind == "parquet":
            ctx.register_parquet(src.name, str(src.path))
            continue
        register_csv = getattr(ctx, "register_csv", None)
        if register_csv is None:
            raise CatalogError(f"{src.path}: CSV files are not supported by this version of pqe "
                               "yet (Context.register_csv is missing); convert it to Parquet")
        register_csv(src.name, str(src.path))
