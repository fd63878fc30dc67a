"""Resampling CSI between subcarrier grids, and NaN-tolerant latency percentiles.

Subcarrier grids (indices in units of the 312.5 kHz subcarrier spacing, DC = 0):

- ``intel30-20``: the Intel 5300's 30 groups at 20 MHz (grouping Ng = 2, IEEE 802.11n-2009 Table 7-25f):
  -28, -26, …, -2, -1, 1, 3, …, 27, 28;
- ``intel30-40``: the Intel 5300's 30 groups at 40 MHz (Ng = 4): -58, -54, …, -2, 2, …, 54, 58;
- ``ht20-56``: the 56 occupied HT20 subcarriers -28…-1, 1…28;
- ``ht40-114``: the 114 occupied HT40 subcarriers -58…-2, 2…58 (MM-Fi's 114-subcarrier CSI).

:func:`resample_subcarriers` interpolates linearly along the subcarrier axis (real and imaginary parts
separately for complex CSI; interpolate amplitude and unwrapped phase yourself if you prefer). With
``span="index"`` positions are physical subcarrier indices, so both grids must cover the same band (e.g.
``intel30-20`` ↔ ``ht20-56``, ``intel30-40`` ↔ ``ht40-114``). With ``span="band"`` each grid is scaled by its
largest |index| so the band edges align, which maps a 20 MHz capture onto a 40 MHz grid (``intel30-20`` →
``ht40-114``) when a model expects that shape; say so when you report results obtained that way.
"""

from __future__ import annotations

import math

import numpy as np

from rfbench._jit import njit
from rfbench.errors import ValidationError

__all__ = ["GRIDS", "grid", "resample_subcarriers", "latency_percentiles"]

GRIDS: dict[str, tuple[int, ...]] = {
    "intel30-20": tuple(range(-28, -1, 2)) + (-1, 1) + tuple(range(3, 28, 2)) + (28,),
    "intel30-40": tuple(range(-58, -1, 4)) + tuple(range(2, 59, 4)),
    "ht20-56": tuple(range(-28, 0)) + tuple(range(1, 29)),
    "ht40-114": tuple(range(-58, -1)) + tuple(range(2, 59)),
}


def grid(name_or_indices) -> np.ndarray:
    """Subcarrier indices of a named grid (see :data:`GRIDS`), or a given strictly increasing index list."""
    if isinstance(name_or_indices, str):
        if name_or_indices not in GRIDS:
            raise ValidationError(f"unknown subcarrier grid {name_or_indices!r}; use one of {', '.join(GRIDS)} "
                                  "or an increasing array of subcarrier indices")
        return np.asarray(GRIDS[name_or_indices], dtype=np.float64)
    idx = np.asarray(name_or_indices, dtype=np.float64)
    if idx.ndim != 1 or idx.size < 2 or not np.all(np.isfinite(idx)) or not np.all(np.diff(idx) > 0):
        raise ValidationError("a subcarrier grid must be at least 2 finite, strictly increasing indices")
    return idx


@njit
def _interp_rows(x, left, frac, out):
    """Linear interpolation along the last axis: ``out[m, j] = a + (b - a) * f`` with ``a = x[m, left[j]]``,
    ``b = x[m, left[j] + 1]``, ``f = frac[j]``; exactly ``a`` when ``f == 0`` and ``b`` when ``f == 1``."""
    for m in range(x.shape[0]):
        for j in range(left.shape[0]):
            i = left[j]
            f = frac[j]
            if f == 0.0:
                out[m, j] = x[m, i]
            elif f == 1.0:
                out[m, j] = x[m, i + 1]
            else:
                a = x[m, i]
                out[m, j] = a + (x[m, i + 1] - a) * f


def _weights(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    left = np.searchsorted(src, dst, side="right") - 1
    left = np.clip(left, 0, src.size - 2)
    frac = (dst - src[left]) / (src[left + 1] - src[left])
    return left.astype(np.int64), frac


def resample_subcarriers(csi, src, dst, axis: int = -1, span: str = "index") -> np.ndarray:
    """Resample CSI from one subcarrier grid to another by linear interpolation.

    Parameters
    ----------
    csi : array_like
        Real or complex CSI; any layout, contiguous or not (views, transposes and strided slices are fine).
    src, dst : str or array_like
        Grid names (``"intel30-20"``, ``"intel30-40"``, ``"ht20-56"``, ``"ht40-114"``) or increasing index
        arrays. ``csi.shape[axis]`` must equal the length of ``src``.
    axis : int
        The subcarrier axis.
    span : {"index", "band"}
        Match positions as physical subcarrier indices, or as fractions of each grid's band edge.

    Returns
    -------
    numpy.ndarray
        ``csi`` with ``axis`` resampled to ``len(dst)``; float64/complex128 (float32/complex64 inputs keep
        their precision). A NaN only reaches the outputs it is a neighbour of.

    Raises
    ------
    ValidationError
        Unknown grid, axis out of range, wrong axis length, or ``dst`` outside ``src``'s band with
        ``span="index"``.
    """
    x = np.asarray(csi)
    src_pos, dst_pos = grid(src), grid(dst)
    if x.ndim == 0:
        raise ValidationError("csi must have a subcarrier axis; got a scalar")
    if not isinstance(axis, (int, np.integer)) or not -x.ndim <= axis < x.ndim:
        raise ValidationError(f"axis {axis!r} is out of range for csi with {x.ndim} dimension(s)")
    if x.shape[axis] != src_pos.size:
        raise ValidationError(f"csi has {x.shape[axis]} subcarriers on axis {axis}, but grid {src!r} has "
                              f"{src_pos.size}; pass the grid the data were captured on")
    if span == "band":
        src_pos = src_pos / np.abs(src_pos).max()
        dst_pos = dst_pos / np.abs(dst_pos).max()
    elif span != "index":
        raise ValidationError(f"span must be 'index' or 'band', got {span!r}")
    if dst_pos[0] < src_pos[0] or dst_pos[-1] > src_pos[-1]:
        raise ValidationError(f"grid {dst!r} reaches past {src!r} ({dst_pos[0]:g}..{dst_pos[-1]:g} vs "
                              f"{src_pos[0]:g}..{src_pos[-1]:g}); rfbench does not extrapolate: use span='band' "
                              "to align band edges, or a grid of the same bandwidth")
    if np.iscomplexobj(x):
        work_dtype, out_dtype = np.complex128, (np.complex64 if x.dtype == np.complex64 else np.complex128)
    elif np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer) or x.dtype == bool:
        work_dtype, out_dtype = np.float64, (np.float32 if x.dtype == np.float32 else np.float64)
    else:
        raise ValidationError(f"csi must be numeric, got dtype {x.dtype}")
    moved = np.moveaxis(x, axis, -1)
    rows = np.ascontiguousarray(moved, dtype=work_dtype).reshape(-1, src_pos.size)
    left, frac = _weights(src_pos, dst_pos)
    out = np.empty((rows.shape[0], dst_pos.size), dtype=work_dtype)
    _interp_rows(rows, left, frac, out)
    out = out.reshape(moved.shape[:-1] + (dst_pos.size,))
    return np.moveaxis(out, -1, axis).astype(out_dtype, copy=False)


def latency_percentiles(latencies, percentiles=(50, 90, 95, 99)) -> dict:
    """Percentiles of latencies, ignoring NaN (a missing measurement), like ``numpy.nanpercentile``.

    Parameters
    ----------
    latencies : array_like
        Any shape; flattened. NaN entries are skipped and counted; ±inf are kept (a lost packet may be
        recorded as infinitely late).
    percentiles : sequence of float
        Each in [0, 100].

    Returns
    -------
    dict
        ``count`` (values used), ``missing`` (NaN skipped) and ``p<q>`` for each percentile (e.g. ``p50``,
        ``p99.9``), linearly interpolated between order statistics (NumPy's default method); NaN when no
        value is left.
    """
    values = np.asarray(latencies, dtype=np.float64).ravel()
    qs = np.asarray(percentiles, dtype=np.float64).ravel()
    if qs.size == 0 or not np.all((qs >= 0) & (qs <= 100)):
        raise ValidationError(f"percentiles must be numbers in [0, 100], got {list(np.atleast_1d(percentiles))}")
    nan = np.isnan(values)
    kept = np.sort(values[~nan])
    result: dict = {"count": int(kept.size), "missing": int(nan.sum())}
    for q in qs:
        result[f"p{q:g}"] = _percentile_sorted(kept, q)
    return result


def _percentile_sorted(v: np.ndarray, q: float) -> float:
    n = v.size
    if n == 0:
        return math.nan
    h = float(q / 100.0) * (n - 1)
    lo = int(math.floor(h))
    t = h - lo
    if lo >= n - 1:
        return float(v[n - 1])
    a, b = float(v[lo]), float(v[lo + 1])
    if t == 0.0:
        return a
    diff = b - a
    # NumPy's two-sided lerp: exact at both ends and monotone.
    return float(b - diff * (1.0 - t) if t >= 0.5 else a + diff * t)
