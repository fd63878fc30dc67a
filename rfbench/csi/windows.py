"""Fixed-length windows with a stride over each recording's packets or frames.

A window is ``(recording, start, stop)``: frames ``start`` (inclusive) to ``stop`` (exclusive) of one recording.
A recording of ``n`` frames gives ``(n - length) // stride + 1`` windows when ``n >= length`` and none otherwise
(a short tail is dropped, never padded), starting at ``0, stride, 2·stride, …``. Windows never span two
recordings, so a split of recordings carries over to windows without leaking (DESIGN.md §6, §11: windows are
derived from the manifest and the window parameters, deterministically, and need not be stored).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from rfbench.errors import ValidationError

__all__ = ["WindowTable", "make_windows", "count_windows", "window_ranges"]


@dataclass(frozen=True)
class WindowTable:
    """Windows of many recordings, in recording order then start order.

    Attributes
    ----------
    recording : ndarray of int64
        Row of each window's recording (an index into ``ids``).
    start, stop : ndarray of int64
        Frame range of each window, ``stop - start == length``.
    ids : tuple of str
        Recording ids, indexed by ``recording``.
    length, stride : int
        The window parameters.
    """

    recording: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    ids: tuple
    length: int
    stride: int

    def __len__(self) -> int:
        return int(self.recording.shape[0])

    def recording_ids(self) -> np.ndarray:
        """The recording id of every window (an object array; for display and hand-offs, not hot loops)."""
        return np.asarray(self.ids, dtype=object)[self.recording]

    def to_records(self) -> list[dict]:
        """``[{"id", "start", "stop"}]``, one per window."""
        return [{"id": self.ids[r], "start": int(a), "stop": int(b)}
                for r, a, b in zip(self.recording.tolist(), self.start.tolist(), self.stop.tolist())]


def _check_params(length, stride) -> tuple[int, int]:
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 1:
        raise ValidationError(f"window length must be a positive integer, not {length!r}")
    if stride is None:
        stride = length
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
        raise ValidationError(f"window stride must be a positive integer, not {stride!r}")
    return int(length), int(stride)


def _check_frames(frames) -> np.ndarray:
    arr = np.asarray(frames)
    if arr.ndim != 1:
        raise ValidationError(f"frames must be one count per recording (1-D), not shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.floor(arr)):
            arr = arr.astype(np.int64)
        else:
            raise ValidationError("frames must be whole numbers")
    arr = arr.astype(np.int64, copy=False)
    if arr.size and arr.min() < 0:
        raise ValidationError("frames must be non-negative")
    return arr


def count_windows(frames, length: int, stride: int | None = None) -> np.ndarray:
    """Windows per recording: ``(n - length) // stride + 1`` when ``n >= length``, else 0."""
    length, stride = _check_params(length, stride)
    n = _check_frames(frames)
    return np.where(n >= length, (n - length) // stride + 1, 0).astype(np.int64)


def window_ranges(n_frames: int, length: int, stride: int | None = None) -> list[tuple[int, int]]:
    """The ``(start, stop)`` windows of one recording of ``n_frames`` frames."""
    length, stride = _check_params(length, stride)
    count = int(count_windows([n_frames], length, stride)[0])
    return [(k * stride, k * stride + length) for k in range(count)]


def make_windows(frames, length: int, stride: int | None = None, ids: Sequence[str] | None = None) -> WindowTable:
    """Windows over every recording.

    Parameters
    ----------
    frames : array-like of int, or a manifest / :class:`~rfbench.datasets.manifest.RecordingTable`
        Frame (packet) count of each recording; a manifest or table supplies its own ids and frames.
    length : int
        Window length in frames, ≥ 1.
    stride : int, optional
        Step between window starts, ≥ 1 (default: ``length``, i.e. no overlap).
    ids : sequence of str, optional
        Recording ids (default ``"0"``, ``"1"``, …).

    Returns
    -------
    WindowTable
        Built in a few vectorised passes (linear in the number of windows).
    """
    if hasattr(frames, "frames") and hasattr(frames, "ids"):  # RecordingTable
        ids, frames = frames.ids, frames.frames
    elif hasattr(frames, "recordings"):  # Manifest
        ids = tuple(r["id"] for r in frames.recordings)
        frames = [r["frames"] for r in frames.recordings]
    length, stride = _check_params(length, stride)
    n = _check_frames(frames)
    ids = tuple(str(k) for k in range(n.shape[0])) if ids is None else tuple(ids)
    if len(ids) != n.shape[0]:
        raise ValidationError(f"{len(ids)} ids for {n.shape[0]} recordings")
    counts = np.where(n >= length, (n - length) // stride + 1, 0).astype(np.int64)
    total = int(counts.sum())
    recording = np.repeat(np.arange(n.shape[0], dtype=np.int64), counts)
    first = np.cumsum(counts) - counts  # index of each recording's first window
    start = (np.arange(total, dtype=np.int64) - np.repeat(first, counts)) * stride
    return WindowTable(recording=recording, start=start, stop=start + length, ids=ids, length=length, stride=stride)
