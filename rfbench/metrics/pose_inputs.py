"""Pose arrays checked before they are scored: shapes, dtypes, visibility, and ground truth finite and within
±:data:`~rfbench.metrics.limits.MAX_COORDINATE` at every joint that is scored (refused naming the first
bad joint)."""

from __future__ import annotations

import numpy as np

from rfbench.errors import ValidationError
from rfbench.metrics.limits import (
    MAX_COORDINATE,
)


def _as_float(name: str, arr) -> np.ndarray:
    a = np.asarray(arr)
    if a.dtype.kind not in "fiu" or a.dtype.kind == "b":
        raise ValidationError(f"{name} must hold numbers, found dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.float64)


def validate_poses(pred, gt, vis=None, n_joints: int | None = None, check_finite: bool = True):
    """Check and convert pose arrays; returns ``(pred, gt, vis)`` as float64, float64, uint8, C-contiguous.

    ``pred`` and ``gt`` are (N, K, D) with D = 2 or 3 and equal shapes; ``vis`` is (N, K) (non-zero or True =
    visible, like COCO's v > 0), default all visible. Ground truth must be finite at visible joints;
    predictions may hold NaN/inf (scored as wrong). ``check_finite=False`` leaves the ground-truth check to
    :meth:`PosePlan.table`, which makes it during its own pass over the data.
    """
    gt = _as_float("ground truth", gt)
    if gt.ndim != 3 or gt.shape[2] not in (2, 3):
        raise ValidationError(f"ground truth must have shape (samples, joints, 2 or 3), got {gt.shape}")
    pred = _as_float("predictions", pred)
    if pred.shape != gt.shape:
        raise ValidationError(f"predictions have shape {pred.shape} but ground truth has {gt.shape}; "
                              f"they must match row for row and joint for joint")
    n, k = gt.shape[0], gt.shape[1]
    if n_joints is not None and k != n_joints:
        raise ValidationError(f"the poses have {k} joints but the skeleton has {n_joints}")
    if vis is None:
        vis = np.ones((n, k), dtype=np.uint8)
    else:
        v = np.asarray(vis)
        if v.shape != (n, k):
            raise ValidationError(f"visibility must have shape {(n, k)} (samples, joints), got {v.shape}")
        if v.dtype.kind not in "biuf":
            raise ValidationError(f"visibility must be boolean or numeric, found dtype {v.dtype}")
        if v.dtype.kind == "f" and not np.isfinite(v).all():
            raise ValidationError("visibility holds NaN or inf; use 0 for invisible and 1 (or 2) for visible")
        if v.dtype == np.bool_:
            vis = np.ascontiguousarray(v).view(np.uint8)
        else:
            vis = np.ascontiguousarray(v > 0, dtype=np.uint8)
    if check_finite and not (np.abs(gt) <= MAX_COORDINATE).all():  # False for NaN too
        _refuse_nonfinite(gt, vis)
    return pred, gt, vis


def _refuse_nonfinite(gt, vis, all_joints: bool = False) -> None:
    bad = ~np.isfinite(gt).all(axis=2) & (vis != 0)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        if all_joints:
            raise ValidationError(
                f"ground truth holds NaN or inf at {int(bad.sum())} joint(s), first at row {int(i)} joint {int(j)}, "
                f"and this spec uses every joint, visible or not (visibility ignored, or a Procrustes fit on all "
                f"joints); fix the ground truth or choose a spec that uses visibility"
            )
        raise ValidationError(
            f"ground truth holds NaN or inf at {int(bad.sum())} visible joint(s), first at row {int(i)} joint "
            f"{int(j)}; fix the ground truth or mark those joints invisible"
        )
    huge = ~(np.abs(gt) <= MAX_COORDINATE).all(axis=2) & (vis != 0)
    if huge.any():
        i, j = np.argwhere(huge)[0]
        raise ValidationError(
            f"ground truth has coordinates beyond ±{MAX_COORDINATE:g} at {int(huge.sum())} visible joint(s), "
            f"first at row {int(i)} joint {int(j)}; check its units"
        )
