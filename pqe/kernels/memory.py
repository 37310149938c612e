"""What memory the machine has free, for refusing work that cannot fit instead of being
killed (session.state's memory guard before a query, kernels.join's output guard in it)."""

from __future__ import annotations


def available_memory() -> int | None:
    """MemAvailable from /proc/meminfo (bytes), or None where it cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
