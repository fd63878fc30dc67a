"""Helpers the suites share (no benchmarks here)."""

from __future__ import annotations

import time


def best_time(fn, repeat: int = 3) -> float:
    """The fastest of ``repeat`` wall-clock timings of ``fn()``, in seconds: the estimate least moved by load,
    for the ``track_*`` ratios that time rfbench and a peer in the same process."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
