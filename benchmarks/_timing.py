"""Shared timing helper of the benchmarks (run as scripts: this folder is on ``sys.path``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best(f: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """The smallest wall time of ``repeats`` calls of ``f`` (seconds), and the last result."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return min(times), out
