"""The leakage audit's sweep kernel (:func:`rfbench.protocols.leakage.overlapping_recordings` drives it).

A module of its own so that importing the audit does not import Numba: the sweep runs only when some recording
has rows on both sides, which a split of whole recordings never has.
"""

from __future__ import annotations

from rfbench._jit import njit

__all__ = ["overlap_sweep"]


@njit
def overlap_sweep(recording, start, stop, side, out):
    """Mark recordings in which a train row and a test row share a frame.

    Contract: rows are sorted by (recording, start); ``start >= 0``; ``out`` has one zeroed uint8 per recording.
    Rows with ``side`` not 0/1, or an empty range (``stop <= start``), are ignored. For rows j before i
    (``start_j <= start_i``), the ranges intersect iff ``start_i < stop_j``, so keeping the largest ``stop`` seen
    so far on each side of the current recording finds every crossing pair in one pass.
    """
    current = -1
    max_stop_train = -1
    max_stop_test = -1
    for i in range(recording.shape[0]):
        r = recording[i]
        if r != current:
            current = r
            max_stop_train = -1
            max_stop_test = -1
        s = side[i]
        a = start[i]
        b = stop[i]
        if b <= a:
            continue
        if s == 0:
            if a < max_stop_test:
                out[r] = 1
            if b > max_stop_train:
                max_stop_train = b
        elif s == 1:
            if a < max_stop_train:
                out[r] = 1
            if b > max_stop_test:
                max_stop_test = b
