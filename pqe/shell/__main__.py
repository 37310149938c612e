"""`python -m pqe.shell`: the same as the `pqe-sql` console script."""

from __future__ import annotations

import sys

from . import main

sys.exit(main())
