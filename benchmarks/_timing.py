"""Shared timing helper of the benchmarks (run as scripts: this folder is on ``sys.path``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np


def best(f: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """The smallest wall time of ``repeats`` calls of ``f`` (seconds), and the last result."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return min(times), out


def timed(f: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall and CPU seconds of one call of ``f``, and its result."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = f()
    return time.perf_counter() - t0, time.process_time() - c0, out


def medians(
    times: Mapping[str, Sequence[tuple[float, float]]],
) -> tuple[dict[str, float], dict[str, float]]:
    """Per case, the median wall seconds and the median CPU seconds of its runs."""
    wall = {k: float(np.median([w for w, _ in v])) for k, v in times.items()}
    cpu = {k: float(np.median([c for _, c in v])) for k, v in times.items()}
    return wall, cpu


def side_by_side(
    cases: Mapping[str, Callable[[], Any]], runs: int
) -> tuple[dict[str, float], dict[str, float], dict[str, Any]]:
    """Each case run ``runs`` times, the cases interleaved (so that a busy machine slows all
    alike): the median wall and CPU seconds per case, and each case's last result."""
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    out: dict[str, Any] = {}
    for _ in range(runs):
        for name, f in cases.items():
            wall, cpu, out[name] = timed(f)
            times[name].append((wall, cpu))
    wall, cpu = medians(times)
    return wall, cpu, out
