"""The session layer: owns the pipeline every statement takes (DataFusion's SessionState).

`SessionConfig` holds the settings, `SessionState` the catalog, the executor and the write
lock; `Result` is what a statement returns. The Context, DataFrame, DB-API and shell use only
the public methods of `SessionState`.
"""

from __future__ import annotations

from .config import SessionConfig
from .result import Result
from .state import SessionState, memory_result

__all__ = ["SessionConfig", "SessionState", "Result", "memory_result"]
