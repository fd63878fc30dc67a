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


# 10**(x/10) for every value an 8-bit field can hold, computed once with the C library's pow (as the
# reference's dbinv and as Numba's ``**`` would), so a table look-up gives the same bits as computing it.
_DBINV_UNSIGNED = np.array([10.0 ** (x / 10.0) for x in range(256)])  # rssi 0..255
_DBINV_SIGNED = np.array([10.0 ** ((x - 128) / 10.0) for x in range(256)])  # noise -128..127 at x + 128
_NOISE_UNKNOWN_DBINV = 10.0 ** (-92.0 / 10.0)  # noise -127 means "unknown": the reference uses -92 dB
_NTX3_FACTOR = math.sqrt(10.0 ** (4.5 / 10.0))


@njit
def _total_rss_one(rssi_a, rssi_b, rssi_c, agc, dbinv):
    """get_total_rss.m: rssi_* are integers 0..255 (0 = not reported), ``dbinv`` is _DBINV_UNSIGNED."""
    mag = 0.0
    if rssi_a != 0:
        mag = mag + dbinv[rssi_a]
    if rssi_b != 0:
        mag = mag + dbinv[rssi_b]
    if rssi_c != 0:
        mag = mag + dbinv[rssi_c]
    if mag == 0.0:
        return -np.inf
    return 10.0 * math.log10(mag) - 44.0 - agc


@njit
def _total_rss(rssi_a, rssi_b, rssi_c, agc, dbinv, out):
    for i in range(out.shape[0]):
        out[i] = _total_rss_one(rssi_a[i], rssi_b[i], rssi_c[i], agc[i], dbinv)


@njit
def _scaled(csi, rssi_a, rssi_b, rssi_c, agc, noise, nrx, ntx, dbinv, dbinv_signed, noise_unknown, ntx3_factor,
            out):
    """out[i] = csi[i] * factor(i) following get_scaled_csi.m (serial; releases the GIL).

    ``csi`` and ``out`` are (records, 2*30*R*T) real views (real, imaginary, real, ...): a record's values
    in C order (subcarrier, rx, tx) are the reference's column-major order of its [Ntx, Nrx, 30] array, so
    the power sums in the same order; padding beyond a record's own Nrx/Ntx is zero and adds nothing."""
    for i in range(csi.shape[0]):
        power = 0.0
        for k in range(0, csi.shape[1], 2):
            re = np.float64(csi[i, k])
            im = np.float64(csi[i, k + 1])
            power += re * re + im * im
        rss = _total_rss_one(rssi_a[i], rssi_b[i], rssi_c[i], agc[i], dbinv)
        factor = 0.0
        if power > 0.0 and rss > -np.inf:
            t = np.int64(ntx[i])
            scale = 10.0 ** (rss / 10.0) / (power / 30.0)
            thermal = noise_unknown if noise[i] == -127 else dbinv_signed[noise[i] + 128]
            total_noise = thermal + scale * (np.int64(nrx[i]) * t)
            factor = math.sqrt(scale / total_noise)
            if t == 2:
                factor = factor * math.sqrt(2.0)
            elif t == 3:
                factor = factor * ntx3_factor
        for k in range(csi.shape[1]):  # element-wise: vectorised
            out[i, k] = np.float64(csi[i, k]) * factor


def _records(name, arr, n):
    arr = np.asarray(arr)
    if arr.shape != (n,):
        raise ValidationError(f"{name} must have shape ({n},), got {arr.shape}")
    return np.ascontiguousarray(arr)


def _byte_field(name, arr, n, low, high):
    """A header field that is an 8-bit integer in the file, as int64, checked."""
    arr = _records(name, arr, n)
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind != "f" or not np.all(np.isfinite(arr)) or not np.array_equal(arr, np.rint(arr)):
            raise ValidationError(f"{name} must hold integers (the file stores it in 8 bits)")
    arr = arr.astype(np.int64)
    if n and (arr.min() < low or arr.max() > high):
        raise ValidationError(f"{name} must lie in {low}..{high}")
    return arr


def _rssi_fields(rssi_a, rssi_b, rssi_c, agc, n):
    rssi = [_byte_field(k, v, n, 0, 255) for k, v in (("rssi_a", rssi_a), ("rssi_b", rssi_b), ("rssi_c", rssi_c))]
    return rssi + [_records("agc", agc, n).astype(np.float64)]


def total_rss(rssi_a, rssi_b, rssi_c, agc) -> np.ndarray:
    """Total received signal strength in dBm, one float64 per record (``-inf`` where all RSSI are 0).

    ``rssi_a/b/c`` are the 8-bit header values (0..255, 0 = not reported); ``agc`` the AGC gain in dB.
    """
    n = np.asarray(rssi_a).shape[0] if np.ndim(rssi_a) == 1 else -1
    if n < 0:
        raise ValidationError("rssi_a must be a 1-D array with one entry per record")
    out = np.empty(n, dtype=np.float64)
    _total_rss(*_rssi_fields(rssi_a, rssi_b, rssi_c, agc, n), _DBINV_UNSIGNED, out)
    return out


def scaled_csi(csi, rssi_a, rssi_b, rssi_c, agc, noise, nrx=None, ntx=None) -> np.ndarray:
    """CSI in absolute units (``get_scaled_csi.m``), complex128, same shape as ``csi``.

    Parameters
    ----------
    csi : array_like, (records, 30, Nrx, Ntx) complex
        Raw CSI, e.g. :attr:`Intel5300Log.csi`. Padding beyond a record's own Nrx/Ntx must be zero.
    rssi_a, rssi_b, rssi_c, agc, noise : array_like, (records,)
        The record headers: ``rssi_*`` integers 0..255, ``noise`` integers −128..127 (−127 = unknown).
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
    noise = _byte_field("noise", noise, n, -128, 127)
    rssi_a, rssi_b, rssi_c, agc = _rssi_fields(rssi_a, rssi_b, rssi_c, agc, n)
    out = np.empty(csi.shape, dtype=np.complex128)
    if n == 0:
        return out
    real = np.float64 if csi.dtype == np.complex128 else np.float32
    _scaled(csi.view(real).reshape(n, -1), rssi_a, rssi_b, rssi_c, agc, noise, nrx, ntx, _DBINV_UNSIGNED,
            _DBINV_SIGNED, _NOISE_UNKNOWN_DBINV, _NTX3_FACTOR, out.view(np.float64).reshape(n, -1))
    return out
