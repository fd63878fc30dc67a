"""Total RSS and CSI in absolute units, as the reference ``get_total_rss.m`` / ``get_scaled_csi.m``.

Both are pure functions of the arrays they are given: nothing is cached or mutated, so calling them twice
gives identical results (csiread keeps state between calls; rfbench does not).

Per record (DESIGN.md §3)::

    total_rss = 10*log10(sum of 10**(rssi/10) over rssi_a/b/c that are not 0) - 44 - agc
    scale = 10**(total_rss/10) / (sum(|csi|**2) / 30)
    noise_db = -92 if noise == -127 else noise
    total_noise = 10**(noise_db/10) + scale * Nrx * Ntx
    scaled = csi * sqrt(scale / total_noise) * {1, sqrt(2), sqrt(10**0.45)}[Ntx - 1]

Defined edge cases (the reference gives -Inf or NaN there; rfbench never raises):

- **all three RSSI zero**: no antenna reported power, so ``total_rss`` is ``-inf`` (as the reference) and the
  scaled CSI is 0 (the reference's own value: 10**(-inf/10) = 0 makes ``scale`` 0).
- **all-zero CSI**: ``sum(|csi|**2) = 0`` makes the reference's ``scale`` infinite and its output NaN.
  rfbench returns 0, the limit of ``csi * sqrt(scale/total_noise)`` as the CSI power goes to 0 (the factor
  stays below ``1/sqrt(Nrx*Ntx)`` while the CSI goes to 0).

Scaled CSI is complex128: in complex64 it would be ~10⁸ ulp (of float64) away from the reference.
"""

from __future__ import annotations

import math

import numpy as np

from rfbench._jit import njit
from rfbench.errors import ValidationError

__all__ = ["total_rss", "scaled_csi"]


@njit
def _total_rss_one(rssi_a, rssi_b, rssi_c, agc):
    mag = 0.0
    if rssi_a != 0:
        mag = mag + 10.0 ** (rssi_a / 10.0)
    if rssi_b != 0:
        mag = mag + 10.0 ** (rssi_b / 10.0)
    if rssi_c != 0:
        mag = mag + 10.0 ** (rssi_c / 10.0)
    if mag == 0.0:
        return -np.inf
    return 10.0 * math.log10(mag) - 44.0 - agc


@njit
def _total_rss(rssi_a, rssi_b, rssi_c, agc, out):
    for i in range(out.shape[0]):
        out[i] = _total_rss_one(np.float64(rssi_a[i]), np.float64(rssi_b[i]), np.float64(rssi_c[i]),
                                np.float64(agc[i]))


@njit
def _scaled(csi, rssi_a, rssi_b, rssi_c, agc, noise, nrx, ntx, out):
    """out[i] = csi[i] * factor(i) following get_scaled_csi.m (serial; releases the GIL)."""
    n_sc = csi.shape[1]
    for i in range(csi.shape[0]):
        r = np.int64(nrx[i])
        t = np.int64(ntx[i])
        power = 0.0
        for s in range(n_sc):
            for a in range(r):
                for b in range(t):
                    v = csi[i, s, a, b]
                    power += np.float64(v.real) * np.float64(v.real) + np.float64(v.imag) * np.float64(v.imag)
        rss = _total_rss_one(np.float64(rssi_a[i]), np.float64(rssi_b[i]), np.float64(rssi_c[i]),
                             np.float64(agc[i]))
        factor = 0.0
        if power > 0.0 and rss > -np.inf:
            scale = 10.0 ** (rss / 10.0) / (power / 30.0)
            noise_db = -92.0 if noise[i] == -127 else np.float64(noise[i])
            total_noise = 10.0 ** (noise_db / 10.0) + scale * (r * t)
            factor = math.sqrt(scale / total_noise)
            if t == 2:
                factor = factor * math.sqrt(2.0)
            elif t == 3:
                factor = factor * math.sqrt(10.0 ** (4.5 / 10.0))
        for s in range(n_sc):
            for a in range(csi.shape[2]):
                for b in range(csi.shape[3]):
                    v = csi[i, s, a, b]
                    out[i, s, a, b] = complex(np.float64(v.real) * factor, np.float64(v.imag) * factor)


def _records(name, arr, n):
    arr = np.asarray(arr)
    if arr.shape != (n,):
        raise ValidationError(f"{name} must have shape ({n},), got {arr.shape}")
    return np.ascontiguousarray(arr)


def total_rss(rssi_a, rssi_b, rssi_c, agc) -> np.ndarray:
    """Total received signal strength in dBm, one float64 per record (``-inf`` where all RSSI are 0)."""
    n = np.asarray(rssi_a).shape[0] if np.ndim(rssi_a) == 1 else -1
    if n < 0:
        raise ValidationError("rssi_a must be a 1-D array with one entry per record")
    arrays = [_records(k, v, n).astype(np.float64) for k, v in
              (("rssi_a", rssi_a), ("rssi_b", rssi_b), ("rssi_c", rssi_c), ("agc", agc))]
    out = np.empty(n, dtype=np.float64)
    _total_rss(*arrays, out)
    return out


def scaled_csi(csi, rssi_a, rssi_b, rssi_c, agc, noise, nrx=None, ntx=None) -> np.ndarray:
    """CSI in absolute units (``get_scaled_csi.m``), complex128, same shape as ``csi``.

    Parameters
    ----------
    csi : array_like, (records, 30, Nrx, Ntx) complex
        Raw CSI, e.g. :attr:`Intel5300Log.csi`. Padding beyond a record's own Nrx/Ntx must be zero.
    rssi_a, rssi_b, rssi_c, agc, noise : array_like, (records,)
        The record headers (``noise`` signed, −127 = unknown).
    nrx, ntx : array_like, (records,), optional
        Each record's own antenna counts (default: the array's Nrx/Ntx for every record).
    """
    csi = np.asarray(csi)
    if csi.ndim != 4 or csi.shape[1] != 30 or not (1 <= csi.shape[2] <= 3 and 1 <= csi.shape[3] <= 3):
        raise ValidationError(f"csi must have shape (records, 30, Nrx<=3, Ntx<=3), got {csi.shape}")
    n = csi.shape[0]
    nrx = np.full(n, csi.shape[2], np.int64) if nrx is None else _records("nrx", nrx, n).astype(np.int64)
    ntx = np.full(n, csi.shape[3], np.int64) if ntx is None else _records("ntx", ntx, n).astype(np.int64)
    if n and (nrx.min() < 1 or nrx.max() > csi.shape[2] or ntx.min() < 1 or ntx.max() > csi.shape[3]):
        raise ValidationError("nrx/ntx must lie in 1..the csi array's antenna dimensions")
    csi = np.ascontiguousarray(csi, dtype=np.complex128 if csi.dtype == np.complex128 else np.complex64)
    noise = _records("noise", noise, n).astype(np.int64)
    rss = [_records(k, v, n).astype(np.float64) for k, v in
           (("rssi_a", rssi_a), ("rssi_b", rssi_b), ("rssi_c", rssi_c), ("agc", agc))]
    out = np.empty(csi.shape, dtype=np.complex128)
    _scaled(csi, rss[0], rss[1], rss[2], rss[3], noise, nrx, ntx, out)
    return out
