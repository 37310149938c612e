"""Optional dependencies: a clear error naming the extra to install when one is missing."""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import Error

# module -> the extra that brings it
EXTRAS = {
    "pandas": "pandas", "polars": "polars", "prompt_toolkit": "shell", "rich": "shell",
    "pygments": "shell", "bokeh": "dashboard", "dask.dataframe": "pandas",
}


class MissingDependencyError(Error):
    """An optional dependency is not installed; the message names the pip extra."""


def require(module: str, feature: str) -> ModuleType:
    """Import `module` for `feature`, or raise MissingDependencyError naming the extra."""
    try:
        return importlib.import_module(module)
    except ImportError:
        extra = EXTRAS.get(module, module.split(".")[0])
        raise MissingDependencyError(
            f"{feature} needs {module.split('.')[0]}: pip install 'pqe[{extra}]'") from None


def check(module: str, feature: str) -> None:
    """Raise MissingDependencyError if `module` is not installed, without importing it (the
    shell checks its extras at start; importing prompt_toolkit costs ~0.3 s a `-c` run never
    uses)."""
    from importlib.util import find_spec

    try:
        found = find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        extra = EXTRAS.get(module, module.split(".")[0])
        raise MissingDependencyError(
            f"{feature} needs {module.split('.')[0]}: pip install 'pqe[{extra}]'")

