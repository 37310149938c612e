"""Per-partition work as Arrow kernels (pyarrow.compute, Acero, numpy)."""

import os

# Tables that crossed processes (dask.distributed transfers, spilled and reloaded data) can
# hold buffers that are not aligned to their type's width. Acero's default is to warn on every
# such batch ("An input buffer was poorly aligned") and go on; copying the few misaligned
# buffers instead is silent and safe on every CPU. Read once, at Acero's first use, so it is
# set here, before any kernel runs; a user's own setting wins.
os.environ.setdefault("ACERO_ALIGNMENT_HANDLING", "reallocate")

# the scalar functions of kernels.scalars join the one dispatch table (expressions._CALLS);
# scalars builds on expressions' helpers, so the two are joined here, after both loaded
from . import expressions as _expressions
from . import scalars as _scalars

_expressions._CALLS.update(_scalars.CALLS)
_expressions._NULL_AWARE |= _scalars.NULL_AWARE
