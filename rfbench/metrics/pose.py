"""Pose metrics under a declared :class:`MetricSpec` (DESIGN.md §5).

Every number this module returns is a :class:`Score`, which carries the full spec that defines it — skeleton
layout, normalization (and the joints it measures), threshold, comparison, averaging, units — and its
one-line label, e.g. ``PCK@0.20 torso(left_shoulder–right_hip) coco17 <= micro``. There is no function that
returns a bare float.

Semantics (each pinned by a hand-computed test):

- **Scoreable joint**: visible in the ground truth, in a sample whose normalizer is usable. A sample with no
  visible joint, or whose normalizer is degenerate, is *unscoreable*: counted as such, never counted correct
  (nor wrong). A metric with no scoreable joint has value None.
- **Normalizers**: ``hip-width`` = |left_hip - right_hip|, ``torso`` = |left_shoulder - right_hip| (joints by
  role from the skeleton, both must be visible); ``bbox`` = diagonal and ``bbox-max-side`` = longest side of
  the box around the sample's visible ground-truth joints (a 3D box for 3D poses); ``abs:T`` = T in coordinate
  units. A joint-pair normalizer is degenerate when below 1e-6 of the box diagonal (or the diagonal is 0); a
  box normalizer when it is 0.
- **PCK@k**: a joint is correct when ``distance / normalizer <= k`` (or ``<`` when declared). ``micro`` =
  correct / scoreable over all joints; ``macro`` = mean over joints of each joint's PCK (joints with no
  scoreable instance are left out). Under ``abs:T`` the threshold is T itself, in coordinate units (a joint
  is correct when ``distance <= T``); k does not apply, so there is one ``abs:T`` result per T.
- **PCK-AUC**: mean PCK over the n thresholds ``k_max * i / n``, i = 0..n-1 (mmpose: n = 20, k_max = 1); under
  ``abs:T`` over the absolute thresholds ``T * i / n`` (k_max does not apply), which is what mmpose's
  ``keypoint_auc(..., norm_factor=T, num_thrs=n)`` computes.
- **OKS** (2D only): pycocotools ``computeOks`` — mean over visible joints of
  ``exp(-d^2 / (2 s^2 (2 sigma)^2))`` with ``s^2`` the area: declared, or 0.53 x width x height of the
  visible joints' box. Averaged over scoreable samples; a sample with zero area is unscoreable.
- **MPJPE**: mean Euclidean error over visible joints, in the declared units. **PA-MPJPE**: each frame's
  prediction is first aligned to its ground truth by the similarity transform (rotation with reflection
  correction, uniform scale, translation) fitted on its visible joints; frames with fewer than 3 visible
  joints or a single-point ground truth are unscoreable.
- **Ground truth** must be finite at visible joints and within ±:data:`MAX_COORDINATE` (1e100, in any unit
  system far beyond a body; squares of larger values overflow), else it is refused naming the first joint.
- **NaN/inf predictions** are wrong, never an exception: PCK miss, OKS term 0, error +inf. A frame whose
  Procrustes alignment cannot be computed in floating point (its moments, the SVD or the fitted transform
  overflow or are not finite, e.g. predictions near 1e308) is wrong the same way: every visible joint's
  PA error is +inf.

Spec pieces beyond these defaults, each a field of :class:`MetricSpec` rendered in the label when it is not
the default (the published conventions of :mod:`rfbench.metrics.conventions` are built from them):

- ``pair:I,J``: the distance between two ground-truth joints given by index (or name), as sources write them;
  the label names the joints under the declared skeleton (``pair:5,12(left_knee–left_elbow)``).
- normalizer floor ``clamp:V`` (the normalizer is at least V units: ``clamped≥V``) or ``none`` (used as it is,
  even 0: such a sample's joints are all wrong, and they count: ``unclamped``).
- visibility ``ignored`` (``no-visibility``): every joint is scored, as in sources without a visibility input.
- ``per-axis``: each axis of the error is divided by the normalizer before the norm (mmpose); ``float32``:
  normalised distances and thresholds are rounded to float32 before comparing (mmpose stores them so).
- averaging ``batch-mean(B=...)`` (PCK, PCK-AUC): the micro value of each batch of B consecutive rows, averaged
  over the batches (a short last batch weighs like a full one); such values get no bootstrap interval.
- ``result-float32``: a micro PCK fraction divided in float32, as a source that returns float32 (WiFlow).
- PA-MPJPE ``fit-all-joints``: the alignment is fitted on every joint, invisible ones included (mmpose's
  ``keypoint_mpjpe``), and its errors averaged over the visible ones. rfbench's default fits on visible joints.

Where each part lives (every public name is importable from here): :mod:`rfbench.metrics.pose_spec` (the
:class:`MetricSpec` and :class:`Score`), :mod:`rfbench.metrics.pose_inputs` (:func:`validate_poses`),
:mod:`rfbench.metrics.pose_plan` (:class:`PosePlan`: settings, the pass over the data, the numbers and the
per-joint breakdown read back), :mod:`rfbench.metrics.procrustes` (PA-MPJPE's alignment) and
:mod:`rfbench.metrics.kernels` (the Numba kernels). This module holds the entry points: :func:`evaluate_pose`,
:func:`enforce_layout` and the one-metric functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from rfbench.errors import ValidationError
from rfbench.metrics.conventions import Convention
from rfbench.metrics.limits import (  # noqa: F401 (imported from here by other modules)
    ALL_AVERAGINGS,
    AVERAGINGS,
    COMPARISONS,
    MAX_AUC_N,
    MAX_COORDINATE,
    NORMALIZATIONS,
    PA_FITS,
    PRECISIONS,
    VISIBILITIES,
)
from rfbench.metrics.limits import POSE_METRICS as METRICS
from rfbench.metrics.pose_inputs import validate_poses
from rfbench.metrics.pose_plan import PosePlan
from rfbench.metrics.pose_spec import HIGHER_IS_BETTER, REL_FLOOR, MetricSpec, Score  # noqa: F401
from rfbench.metrics.skeletons import check_layout, get_skeleton
from rfbench.metrics.stats import BLOCK_ROWS, Segments, make_segments
from rfbench.metrics.stats import ratio as _ratio

__all__ = [
    "MetricSpec",
    "Score",
    "Segments",
    "PosePlan",
    "PoseEvaluation",
    "evaluate_pose",
    "pck",
    "pck_auc",
    "oks",
    "oks_per_sample",
    "mpjpe",
    "pa_mpjpe",
    "make_segments",
    "validate_poses",
    "enforce_layout",
    "METRICS",
    "NORMALIZATIONS",
    "REL_FLOOR",
    "BLOCK_ROWS",
]


@dataclass
class PoseEvaluation:
    """The result of :func:`evaluate_pose`.

    Attributes
    ----------
    scores : list of Score
        One per spec, in the plan's order.
    plan : PosePlan
    layout : dict
        The plausibility check of the declared skeleton on the ground truth (:func:`check_layout`); run only
        when a requested number depends on the joint order (``rfbench score`` always runs it).
    layout_overridden : bool
        True when the check did not pass and layout-dependent numbers were computed anyway on request.
    segments : Segments
    table : ndarray
        Per-segment sufficient statistics (the bootstrap's input).
    """

    scores: list[Score]
    plan: PosePlan
    layout: dict
    layout_overridden: bool
    segments: Segments
    table: np.ndarray

    def find(self, metric: str, **spec) -> Score:
        """The one score whose spec has ``metric`` and the given fields (e.g. ``normalization="torso", k=0.2,
        averaging="micro"``)."""
        hits = [s for s in self.scores if s.spec.metric == metric
                and all(getattr(s.spec, key) == val for key, val in spec.items())]
        if len(hits) != 1:
            raise ValidationError(f"{len(hits)} scores match {metric} {spec}; name the spec fully")
        return hits[0]


def evaluate_pose(pred, gt, vis=None, *, skeleton, units: str, metrics: Iterable[str] | None = None,
                  normalizations: Sequence[str] = ("torso",), ks: Sequence[float] = (0.05, 0.1, 0.2, 0.5),
                  comparison: str = "<=", averaging: Sequence[str] = AVERAGINGS, auc_n: int = 20,
                  auc_max: float = 1.0, oks_area: str | float = "bbox", sigmas=None, trust_layout: bool = False,
                  clusters=None, normalizer_floor: str = "relative", visibility: str = "used", per_axis: bool = False,
                  precision: str = "float64", batch_size: int | None = None, pa_fit: str = "visible",
                  convention: str | Convention | None = None, result_precision: str = "float64") -> PoseEvaluation:
    """Score predicted poses against ground truth under declared specs.

    Parameters
    ----------
    pred, gt : array_like, (N, K, D)
        Predicted and ground-truth joints, D = 2 or 3, K = the skeleton's joint count.
    vis : array_like, (N, K), optional
        Ground-truth visibility (True or > 0 = visible); default all visible.
    skeleton : str, Path or Skeleton
        ``coco17``, ``h36m17``, ``wiflow15`` or a layout file.
    units : str
        Coordinate units (``m``, ``mm``, ``px``, ``normalized``...).
    metrics : iterable of str, optional
        Subset of ``pck``, ``pck-auc``, ``oks``, ``mpjpe``, ``pa-mpjpe``; default all that apply (OKS only
        for 2D poses with sigmas; with a convention, what its source computes).
    normalizations : sequence of str
        PCK normalizers: ``hip-width``, ``torso``, ``bbox``, ``bbox-max-side``, ``abs:T``, ``pair:I,J`` (two joints
        by index or name).
    ks : sequence of float
        PCK thresholds (fractions of the normalizer; an ``abs:T`` threshold is T itself).
    comparison : {"<=", "<"}
    averaging : sequence of {"micro", "macro", "batch-mean"}
        ``batch-mean`` (PCK and PCK-AUC): the micro value of each batch of ``batch_size`` consecutive rows,
        averaged over the batches; no bootstrap interval.
    auc_n, auc_max : int, float
        PCK-AUC thresholds ``auc_max * i / auc_n``, i = 0..auc_n-1 (``T * i / auc_n`` under ``abs:T``).
    oks_area : "bbox" or float
        OKS area: 0.53 x the visible joints' box width x height, or a constant (units²).
    sigmas : sequence of float, optional
        OKS sigmas per joint (required for layouts without published sigmas).
    trust_layout : bool
        Compute layout-dependent numbers even when the skeleton's plausibility check does not pass.
    clusters : array_like of str, (N,), optional
        Recording (or subject) id per row: the segments of the bootstrap.
    normalizer_floor : {"relative", "none"} or "clamp:V"
        A small relative normalizer: unscoreable below 1e-6 of the box diagonal (default), used as it is, or
        clamped to at least V.
    visibility : {"used", "ignored"}
        ``ignored`` scores every joint (and then needs finite ground truth everywhere).
    per_axis : bool
        Divide each axis of the error by the normalizer before taking the norm (mmpose).
    precision : {"float64", "float32"}
        Round normalised distances and thresholds to float32 before comparing (mmpose).
    batch_size : int, optional
        Rows per batch for ``batch-mean``.
    pa_fit : {"visible", "all"}
        The joints each frame's Procrustes alignment is fitted on (errors are averaged over visible ones).
    result_precision : {"float64", "float32"}
        Return a micro PCK fraction divided in float32 (WiFlow's ``.float().mean()``).
    convention : str, optional
        ``graphpose-fi``, ``mmfi-toolbox``, ``wiflow`` or ``mmpose`` (:mod:`rfbench.metrics.conventions`): sets
        the normalizations, comparison, averaging, floor, visibility, per-axis, precision and fit of each metric
        its source computes, which must then not be given; ``ks``, ``auc_n`` and ``batch_size`` combine with it.

    Raises
    ------
    ValidationError
        Bad shapes or settings, NaN in scored ground truth, a metric the convention's source does not compute,
        or a layout that fails its check while a layout-dependent number is requested without ``trust_layout``.
    """
    gt_arr = np.asarray(gt)
    dims = gt_arr.shape[-1] if gt_arr.ndim == 3 else 0
    skel = get_skeleton(skeleton)
    pred, gt, vis = validate_poses(pred, gt, vis, skel.n_joints, check_finite=False)
    plan = PosePlan.create(skeleton=skel, units=units, dims=dims, metrics=metrics, normalizations=normalizations,
                           ks=ks, comparison=comparison, averaging=averaging, auc_n=auc_n, auc_max=auc_max,
                           oks_area=oks_area, sigmas=sigmas, normalizer_floor=normalizer_floor, visibility=visibility,
                           per_axis=per_axis, precision=precision, batch_size=batch_size, pa_fit=pa_fit,
                           convention=convention, result_precision=result_precision)
    segments = make_segments(gt.shape[0], clusters)
    table = plan.table(pred, gt, vis, segments)  # also refuses non-finite scored ground truth
    if plan.layout_dependent:
        layout, overridden = enforce_layout(plan, gt, vis, trust_layout)
    else:
        layout, overridden = {"passed": None, "checks": [],
                              "reason": "not run: no requested number depends on the joint order"}, False
    return PoseEvaluation(plan.scores(table), plan, layout, overridden, segments, table)


#: Frames the plausibility check looks at (evenly spaced): a median over this many is plenty.
LAYOUT_CHECK_FRAMES = 10_000


def enforce_layout(plan: PosePlan, gt, vis, trust: bool) -> tuple[dict, bool]:
    """Run the skeleton's plausibility check on (a sample of) the ground truth; raise when it fails and the
    plan asks for layout-dependent numbers, unless ``trust``. Returns ``(check, overridden)``.

    A check that cannot be evaluated (no frame shows the joints it needs, or a custom layout declares no
    check) does not refuse: the layout is then *unverified*, which the report states next to the numbers.
    """
    step = max(1, -(-gt.shape[0] // LAYOUT_CHECK_FRAMES))
    vis = plan.scored_visibility(vis)
    layout = check_layout(plan.skeleton, gt[::step], vis[::step] != 0)
    layout["sampled_every"] = step
    dependent = plan.layout_dependent
    if layout["passed"] is not False or not dependent:
        return layout, False
    if not trust:
        raise ValidationError(
            f"skeleton {plan.skeleton.name} does not fit the ground truth ({layout['reason']}); "
            f"{', '.join(dependent)} {'depends' if len(dependent) == 1 else 'depend'} on the joint order: "
            f"declare the right skeleton, use bbox, "
            f"bbox-max-side or abs:T, or override with --trust-layout (trust_layout=True), which the report records"
        )
    return layout, True


def _single(pred, gt, vis, metric: str, averaging: str, convention=None, **kw) -> Score:
    if convention is not None:
        # The convention sets normalization, comparison and averaging; giving them is an error upstream.
        for key, default in (("normalizations", [None]), ("comparison", "<=")):
            if kw.get(key) == default:
                kw.pop(key)
        if averaging != "micro":
            kw["averaging"] = [averaging]
        ev = evaluate_pose(pred, gt, vis, metrics=[metric], convention=convention, **kw)
        return ev.scores[0]
    ev = evaluate_pose(pred, gt, vis, metrics=[metric], averaging=[averaging] if averaging != "sample" else ["micro"],
                       **kw)
    return ev.scores[0]


def pck(pred, gt, vis=None, *, skeleton, units: str, normalization: str | None = None, k: float,
        comparison: str = "<=", averaging: str = "micro", trust_layout: bool = False, convention=None,
        **spec) -> Score:
    """PCK@k under one normalization (see the module docstring), or under a convention's (then give no
    normalization, comparison or averaging). ``spec`` takes the other spec pieces of :func:`evaluate_pose`
    (``normalizer_floor``, ``visibility``, ``per_axis``, ``precision``, ``batch_size``). Returns a :class:`Score`."""
    if normalization is None and convention is None:
        raise ValidationError("PCK needs a normalization (or a convention that sets one)")
    return _single(pred, gt, vis, "pck", averaging, skeleton=skeleton, units=units, normalizations=[normalization],
                   ks=[k], comparison=comparison, trust_layout=trust_layout, convention=convention, **spec)


def pck_auc(pred, gt, vis=None, *, skeleton, units: str, normalization: str | None = None, n: int = 20,
            k_max: float = 1.0, comparison: str = "<=", averaging: str = "micro", trust_layout: bool = False,
            convention=None, **spec) -> Score:
    """Mean PCK over the thresholds ``k_max * i / n``, i = 0..n-1 (``T * i / n`` under ``abs:T``). Returns a
    :class:`Score`."""
    if normalization is None and convention is None:
        raise ValidationError("PCK-AUC needs a normalization (or a convention that sets one)")
    return _single(pred, gt, vis, "pck-auc", averaging, skeleton=skeleton, units=units,
                   normalizations=[normalization], auc_n=n, auc_max=k_max, comparison=comparison,
                   trust_layout=trust_layout, convention=convention, **spec)


def oks(pred, gt, vis=None, *, skeleton, units: str, sigmas=None, area: str | float = "bbox",
        trust_layout: bool = False) -> Score:
    """Mean OKS over scoreable samples (pycocotools ``computeOks`` per sample). Returns a :class:`Score`."""
    return _single(pred, gt, vis, "oks", "sample", skeleton=skeleton, units=units, sigmas=sigmas, oks_area=area,
                   trust_layout=trust_layout)


def oks_per_sample(pred, gt, vis=None, *, skeleton, units: str, sigmas=None, area: str | float = "bbox",
                   trust_layout: bool = False) -> np.ndarray:
    """OKS of each sample, (N,) float64; NaN for an unscoreable sample (no visible joint, zero area)."""
    skel = get_skeleton(skeleton)
    pred, gt, vis = validate_poses(pred, gt, vis, skel.n_joints)
    plan = PosePlan.create(skeleton=skel, units=units, dims=gt.shape[2], metrics=["oks"], sigmas=sigmas,
                           oks_area=area, averaging=["micro"])
    enforce_layout(plan, gt, vis, trust_layout)
    n = gt.shape[0]
    table = plan.table(pred, gt, vis, Segments(np.empty(0, np.int64), np.arange(n + 1, dtype=np.int64), None))
    return _ratio(table[:, plan.columns["oks_sum"]], table[:, plan.columns["oks_n"]])


def mpjpe(pred, gt, vis=None, *, skeleton, units: str, averaging: str = "micro", convention=None, **spec) -> Score:
    """Mean per-joint position error over visible joints (every joint with ``visibility="ignored"``), in
    ``units``. Returns a :class:`Score`."""
    return _single(pred, gt, vis, "mpjpe", averaging, skeleton=skeleton, units=units, convention=convention, **spec)


def pa_mpjpe(pred, gt, vis=None, *, skeleton, units: str, averaging: str = "micro", convention=None,
             **spec) -> Score:
    """MPJPE after per-frame similarity Procrustes alignment (with scale and reflection correction), fitted on
    the visible joints (``pa_fit="all"``: on every joint, as mmpose) and averaged over the visible ones."""
    return _single(pred, gt, vis, "pa-mpjpe", averaging, skeleton=skeleton, units=units, convention=convention,
                   **spec)
