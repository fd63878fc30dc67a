"""PA-MPJPE's alignment: per-frame similarity Procrustes (rotation with reflection correction, uniform scale,
translation; Umeyama 1991), fitted on the visible joints (or every joint), and the aligned errors summed per
segment. The moments and the error sums are Numba kernels (:mod:`rfbench.metrics.kernels`); the batched SVD
is NumPy's (LAPACK)."""

from __future__ import annotations

import numpy as np

from rfbench._jit import serial_below
from rfbench.metrics import kernels as _k


def _pa_sums(pred, gt, vis, segments, pa_sum, pa_n, pa_bad, fit_vis=None) -> None:
    """PA-MPJPE sums: per-row moments (kernel), batched SVD (NumPy/LAPACK), aligned errors (kernel). The
    alignment is fitted on the joints of ``fit_vis`` (default: the visible ones) and its errors averaged over the
    visible ones."""
    n, _, d = gt.shape
    if fit_vis is None:
        fit_vis = vis
    if pred.shape[0] != n:
        pred = np.ascontiguousarray(np.broadcast_to(pred, gt.shape))
    mu_p = np.empty((n, d))
    mu_g = np.empty((n, d))
    var_p = np.empty(n)
    var_g = np.empty(n)
    cov = np.empty((n, d, d))
    n_vis = np.empty(n, np.int64)
    finite = np.empty(n, np.uint8)
    with serial_below(gt.shape[0] * gt.shape[1]):
        _k._procrustes_moments(pred, gt, fit_vis, mu_p, mu_g, var_p, var_g, cov, n_vis, finite)
    # A frame whose moments overflowed cannot be aligned: it is wrong (error +inf) like a NaN prediction, and
    # the SVD never sees a non-finite matrix.
    overflow = ~(np.isfinite(mu_p).all(axis=1) & np.isfinite(mu_g).all(axis=1) & np.isfinite(var_p)
                 & np.isfinite(cov).all(axis=(1, 2)))
    if overflow.any():
        finite[overflow] = 0
        mu_p[overflow] = 0.0
        mu_g[overflow] = 0.0
        var_p[overflow] = 0.0
        cov[overflow] = 0.0
    rot, scale, trans, aligned = _similarity(cov, mu_p, mu_g, var_p)
    finite[~aligned] = 0
    scoreable = ((n_vis >= 3) & (var_g > 0)).astype(np.uint8)
    with serial_below(gt.shape[0] * gt.shape[1]):
        _k._aligned_error_sums(pred, gt, vis, rot, scale, trans, scoreable, finite, segments.order,
                               segments.start, pa_sum, pa_n, pa_bad)


def _similarity(cov, mu_p, mu_g, var_p):
    """Rotation (reflection-corrected), scale and translation mapping centred predictions onto ground
    truth, from the cross-covariance (Umeyama 1991; the same as mmpose's ``batch_compute_similarity_transform``).
    A prediction collapsed to one point (var_p = 0) gets scale 0: it is moved to the ground-truth centroid.

    Returns ``(rot, scale, trans, aligned)``; ``aligned[i]`` is False when frame i's SVD failed or its
    transform is not finite (its values are then zeros and the frame must count as wrong)."""
    n, d = mu_p.shape
    if n == 0:
        return np.empty((0, d, d)), np.empty(0), np.empty((0, d)), np.ones(0, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _fit_similarity(cov, mu_p, mu_g, var_p)


def _fit_similarity(cov, mu_p, mu_g, var_p):
    n, d = mu_p.shape
    aligned = np.ones(n, dtype=bool)
    try:
        u, sv, vh = np.linalg.svd(cov)
    except np.linalg.LinAlgError:  # one frame did not converge: find it, the others keep their exact result
        u, sv, vh = np.zeros((n, d, d)), np.zeros((n, d)), np.zeros((n, d, d))
        for i in range(n):
            try:
                u[i], sv[i], vh[i] = np.linalg.svd(cov[i])
            except np.linalg.LinAlgError:
                aligned[i] = False
    v = np.swapaxes(vh, 1, 2)
    ut = np.swapaxes(u, 1, 2)
    sign = np.sign(np.linalg.det(u) * np.linalg.det(v))
    sign[sign == 0] = 1.0
    z = np.ones((n, d))
    z[:, -1] = sign
    rot = np.ascontiguousarray(np.matmul(v * z[:, None, :], ut))
    trace = (sv * z).sum(axis=1)
    scale = np.zeros(n)
    np.divide(trace, var_p, out=scale, where=var_p > 0)
    trans = np.ascontiguousarray(mu_g - scale[:, None] * np.einsum("nij,nj->ni", rot, mu_p))
    aligned &= np.isfinite(rot).all(axis=(1, 2)) & np.isfinite(scale) & np.isfinite(trans).all(axis=1)
    rot[~aligned] = 0.0
    scale[~aligned] = 0.0
    trans[~aligned] = 0.0
    return rot, np.ascontiguousarray(scale), trans, aligned
