"""A torch-free sequence of ``(x, y)`` samples over windows, for training loops and data loaders.

:class:`WindowSequence` has what ``torch.utils.data.DataLoader`` asks of a map-style dataset (``__len__`` and
``__getitem__``), returns plain NumPy arrays (the loader's default collation turns them into tensors), and
pickles to a few bytes when it reads an index's files (each loader worker re-opens ``X.npy`` as a memory map
rather than receiving a copy of it). rfbench does not depend on torch.
"""

from __future__ import annotations

import operator
import os
from pathlib import Path

import numpy as np

from rfbench.errors import ValidationError

__all__ = ["WindowSequence"]


class WindowSequence:
    """``(x, y)`` sample ``i`` is ``(X[i], y[i])`` as NumPy arrays (copies, so a caller may modify them).

    Build it from arrays (``WindowSequence(x, y)``, e.g. from :func:`build_windows`) or from a written index
    (:meth:`open`, which memory-maps ``X.npy``). Indices may be negative; an index past either end raises
    :class:`IndexError`; iterating yields every sample in row order.
    """

    def __init__(self, x, y):
        x = np.asarray(x) if not isinstance(x, np.ndarray) else x
        y = np.asarray(y) if not isinstance(y, np.ndarray) else y
        if x.ndim < 1 or y.ndim < 1 or x.shape[0] != y.shape[0]:
            raise ValidationError(f"x and y must have one row per sample, got shapes {x.shape} and {y.shape}")
        self._x, self._y = x, y
        self._index: Path | None = None

    @classmethod
    def open(cls, index: str | os.PathLike) -> "WindowSequence":
        """The samples of a written index (``index.json`` from :func:`write_windows` / ``rfbench windows``),
        checked with :func:`load_index`; ``X.npy`` is memory-mapped read-only, ``y.npy`` loaded."""
        from rfbench.datasets.windows.index import load_index

        idx = load_index(index)
        seq = cls(np.load(idx.x_path, mmap_mode="r", allow_pickle=False), np.load(idx.y_path, allow_pickle=False))
        seq._index = idx.path
        return seq

    def __len__(self) -> int:
        return int(self._x.shape[0])

    def __getitem__(self, i) -> tuple[np.ndarray, np.ndarray]:
        try:
            k = operator.index(i)
        except TypeError:
            raise TypeError(f"sample indices must be integers, not {type(i).__name__}") from None
        n = len(self)
        if k < -n or k >= n:
            raise IndexError(f"sample {k} is out of range for {n} samples")
        k %= n
        return np.array(self._x[k]), np.array(self._y[k])

    def __iter__(self):
        for k in range(len(self)):
            yield self[k]

    @property
    def x(self) -> np.ndarray:
        """All inputs (a read-only memory map when opened from an index)."""
        return self._x

    @property
    def y(self) -> np.ndarray:
        """All targets."""
        return self._y

    def __getstate__(self):
        if self._index is not None:
            return {"index": str(self._index)}
        return {"x": self._x, "y": self._y}

    def __setstate__(self, state):
        if "index" in state:
            other = WindowSequence.open(state["index"])
            self._x, self._y, self._index = other._x, other._y, other._index
        else:
            self._x, self._y, self._index = np.asarray(state["x"]), np.asarray(state["y"]), None

    def __repr__(self) -> str:
        where = f" from {self._index}" if self._index is not None else ""
        return f"WindowSequence({len(self)} samples, x {tuple(self._x.shape[1:])}, y {tuple(self._y.shape[1:])}{where})"
