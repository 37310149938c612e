"""The layers of ARCHITECTURE.md, enforced by reading every module's imports: no module
imports a layer above its own, only pqe/sql imports sqlglot, only pqe/execution imports Dask
(pqe/testing, the test tooling that ships with pqe, is outside the engine's layers)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "pqe"

# Lowest first. A module may import its own layer and the layers listed before it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("pqe/errors.py", "pqe/types.py", "pqe/deep.py", "pqe/access.py",
              "pqe/_version.py", "pqe/extras.py")),
    ("catalog", ("pqe/catalog.py", "pqe/filesystems.py")),
    ("plan", ("pqe/plan/",)),
    ("physical", ("pqe/physical/",)),
    ("kernels", ("pqe/kernels/",)),
    ("optimizer", ("pqe/optimizer/",)),
    ("execution", ("pqe/execution/",)),
    ("sql", ("pqe/sql/",)),
    ("session", ("pqe/session/",)),
    ("api", ("pqe/context.py", "pqe/dataframe.py", "pqe/expressions.py", "pqe/dbapi.py",
             "pqe/__init__.py")),
    ("shell", ("pqe/shell/",)),
    ("testing", ("pqe/testing/",)),
]
OWNERS = {"sqlglot": ("sql", "testing"), "dask": ("execution",), "distributed": ("execution",)}


def _layer_of(rel: str) -> int:
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(rel == p or (p.endswith("/") and rel.startswith(p)) for p in prefixes):
            return i
    raise AssertionError(f"{rel} is in no layer: add it to LAYERS and ARCHITECTURE.md")


def _module_file(module: str) -> str | None:
    parts = module.split(".")
    path = ROOT.joinpath(*parts)
    if path.with_suffix(".py").exists():
        return str(path.with_suffix(".py").relative_to(ROOT))
    if (path / "__init__.py").exists():
        return str((path / "__init__.py").relative_to(ROOT))
    return None


def _imports(path: Path) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import, TYPE_CHECKING blocks excluded."""
    tree = ast.parse(path.read_text())
    rel = path.relative_to(ROOT).with_suffix("")
    package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    out = []
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in ast.walk(node):
                skip.add(id(sub))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:  # from . import x
                    out += [(f"{mod}.{a.name}", node.lineno) for a in node.names]
                    continue
            else:
                mod = node.module or ""
            out.append((mod, node.lineno))
    return out


def _violations() -> list[str]:
    problems = []
    for path in sorted(PKG.rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        mine = _layer_of(rel)
        for module, line in _imports(path):
            top = module.split(".")[0]
            if top in OWNERS and LAYERS[mine][0] not in OWNERS[top]:
                problems.append(f"{rel}:{line} imports {module} (only "
                                f"{' and '.join(OWNERS[top])} may)")
            if top != "pqe":
                continue
            target = _module_file(module) or _module_file(module.rsplit(".", 1)[0])
            if target is None:
                continue
            theirs = _layer_of(target)
            if theirs > mine:
                problems.append(f"{rel}:{line} ({LAYERS[mine][0]}) imports {module} "
                                f"({LAYERS[theirs][0]}, a layer above)")
    return problems


def test_no_module_imports_a_layer_above_it():
    problems = _violations()
    assert not problems, "layering violations:\n" + "\n".join(problems)


def test_architecture_doc_lists_the_layers():
    doc = (ROOT / "ARCHITECTURE.md").read_text()
    for name, prefixes in LAYERS:
        for p in prefixes:
            assert f"`{p}`" in doc, f"ARCHITECTURE.md does not mention {p} ({name})"


@pytest.mark.parametrize("module", ["pqe", "pqe.sql", "pqe.session", "pqe.execution.driver"])
def test_modules_import(module):
    __import__(module)
