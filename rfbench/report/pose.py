"""The pose task of ``rfbench score``: arrays in, a checked report out.

:func:`pose_report` scores the model, builds the mean-pose baseline from the training split (when given),
runs the paired cluster bootstrap and assembles the report, through the steps every task shares
(:mod:`rfbench.report.common`). :func:`rfbench.report.score.score_pose` is the stage: it loads and hashes
input files, records the reproducer and writes the report.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from rfbench.errors import ValidationError
from rfbench.metrics.limits import AVERAGINGS
from rfbench.metrics.pose import enforce_layout
from rfbench.metrics.pose_inputs import validate_poses
from rfbench.metrics.pose_plan import PosePlan
from rfbench.metrics.skeletons import get_skeleton
from rfbench.metrics.stats import make_segments
from rfbench.protocols.splitfile import SplitInfo
from rfbench.report.baseline import mean_pose_baseline
from rfbench.report.common import (
    CLUSTER_BY,
    GT_SUPPLIED,
    baseline_coverage_note,
    bootstrap_for,
    check_baseline_request,
    check_bootstrap_settings,
    check_scored_rows,
    ci_triple,
    coverage_section,
    finish_report,
    load_array,
    no_baseline_section,
    provenance_section,
    resolve_clusters,
)

__all__ = ["pose_report", "load_array", "CLUSTER_BY"]


#: How close (in decades) the size ratio of predictions to ground truth must be to a power of ten (other than 1)
#: for a note: 10**0.15 = 1.41, so 700–1400 reads as 1000 (millimetres scored as metres) and 2–5 as nothing.
SCALE_TOLERANCE_DECADES = 0.15


def _pose_size(poses: np.ndarray) -> float:
    """The median over rows of a pose's spread: the RMS distance of its finite joints from their centroid (so the
    size of the skeleton, whatever its position). NaN when no row has two finite joints."""
    ok = np.isfinite(poses).all(axis=2)
    count = ok.sum(axis=1)
    use = count >= 2
    if not use.any():
        return float("nan")
    pts = np.where(ok[..., None], poses, 0.0)[use]
    w = ok[use][..., None]
    n = count[use][:, None]
    centroid = pts.sum(axis=1) / n
    spread = np.sqrt((np.where(w, (pts - centroid[:, None, :]) ** 2, 0.0).sum(axis=(1, 2))) / n[:, 0])
    return float(np.median(spread))


def plausibility(pred: np.ndarray, gt: np.ndarray, units: str, notes: list[str]) -> dict[str, Any]:
    """Signs that predictions are likely wrong though they score (notes, never errors): a size that differs from
    the ground truth's by a power of ten (units), predictions that are all whole numbers where the ground truth is
    not (rounded, or an integer output), rows with no finite value at all. Appends a note for each found and
    returns the report's ``plausibility`` section: ``{size_ratio, decades, integer_predictions,
    non_finite_rows}``."""
    finite = np.isfinite(pred)
    rows_all_bad = int((~finite.reshape(pred.shape[0], -1)).all(axis=1).sum())
    with np.errstate(over="ignore", invalid="ignore"):  # predictions near the float limit: no size, no note
        pred_size, gt_size = _pose_size(pred), _pose_size(gt)
        ratio = pred_size / gt_size if np.isfinite(pred_size) and gt_size > 0 else None
    if ratio is not None and not np.isfinite(ratio):
        ratio = None
    decades = None
    if ratio is not None and ratio > 0:
        k = int(np.round(np.log10(ratio)))
        if k != 0 and abs(np.log10(ratio) - k) <= SCALE_TOLERANCE_DECADES:
            decades = k
            notes.append(f"the predicted poses are about 10^{k} times the size of the ground truth's (median pose "
                         f"spread {pred_size:.4g} against {gt_size:.4g}, both scored as {units}): predictions in "
                         "other units than the ground truth (millimetres against metres is 10^3)? Convert them, or "
                         "score with the units they are in")
    values = pred[finite]
    whole = bool(values.size) and bool(np.all(values == np.round(values)))
    gt_whole = bool(np.all(gt[np.isfinite(gt)] == np.round(gt[np.isfinite(gt)])))
    integer = whole and not gt_whole
    if integer:
        notes.append("every finite prediction is a whole number while the ground truth is not: rounded or "
                     "integer-typed model outputs lose the precision the metrics measure; check the model's output")
    if rows_all_bad:
        notes.append(f"{rows_all_bad} of {pred.shape[0]} rows of predictions hold no finite value (NaN or inf "
                     "everywhere): each of their joints counts as wrong, and MPJPE becomes inf")
    # 4 significant digits: a re-run in another environment (predictions within the tolerance) gives the same
    return {"size_ratio": None if ratio is None else float(f"{ratio:.4g}"), "decades": decades,
            "integer_predictions": integer, "non_finite_rows": rows_all_bad}


def _sub(score) -> dict[str, Any] | None:
    return None if score is None else score.to_dict()


def pose_report(pred, gt, vis=None, *, skeleton, units: str, metrics: Sequence[str] | None = None,
                normalizations: Sequence[str] = ("torso",), ks: Sequence[float] = (0.05, 0.1, 0.2, 0.5),
                comparison: str = "<=", averaging: Sequence[str] = AVERAGINGS, auc_n: int = 20,
                auc_max: float = 1.0, oks_area: str | float = "bbox", sigmas=None, trust_layout: bool = False,
                split: SplitInfo | None = None, groups=None, train_gt=None, train_groups=None, train_vis=None,
                cluster_by: str = "recording", subjects: Mapping[str, str] | None = None, n_boot: int = 1000,
                level: float = 0.95, seed: int = 0, synthetic: bool = False, reproducer: Mapping | None = None,
                inputs: Sequence[Mapping[str, Any]] | None = None, evidence: str | None = None,
                extra_notes: Sequence[str] = (), capture: dict | None = None, convention: str | None = None,
                batch_size: int | None = None, allow_partial: bool = False, ground_truth: str = GT_SUPPLIED,
                ground_truth_files=None, excluded=(), dropped=(), chain=None) -> dict[str, Any]:
    """Score poses and build a ``rfbench.report/1`` document.

    Parameters
    ----------
    pred, gt, vis, skeleton, units, metrics, normalizations, ks, comparison, averaging, auc_n, auc_max,
    oks_area, sigmas, trust_layout, convention, batch_size
        As :func:`rfbench.metrics.pose.evaluate_pose` (batch-mean values get no bootstrap interval).
    split : SplitInfo, optional
        The split the rows come from (:func:`rfbench.protocols.splitfile.load_split`); needs ``groups``.
    groups : array_like, (N,), optional
        Recording id of each scored row (strings or integers); all on the split's test side.
    train_gt, train_groups, train_vis : optional
        Training ground truth and its row → recording ids, for the mean-pose baseline (needs ``split``).
    cluster_by : {"recording", "subject"}
        Bootstrap clusters; ``subject`` needs ``subjects`` (recording id → subject).
    n_boot, level, seed : int, float, int
        Bootstrap replicates (0 turns it off), confidence level and seed.
    synthetic : bool
        The data is generated (also implied by ``split.synthetic``): the report is tagged SYNTHETIC.
    reproducer, inputs : optional
        ``{argv, cwd}`` and the input records; without a reproducer the report is CLAIMED.
    evidence : str, optional
        Expected tag; an error unless the facts support it.
    allow_partial : bool
        Allow scoring a subset of the split's test recordings (refused otherwise); the report's ``coverage``
        says how many were scored.
    ground_truth, ground_truth_files, excluded, dropped
        Where the ground truth comes from (the report's ``provenance``; default: supplied by the user), the
        dataset files it was read from, the test recordings a windows index excluded (with reasons: they count
        as not scored) and what it dropped of the others (records, windows).
    capture : dict, optional
        Filled with what pictures of the report need and the JSON does not hold: the validated ``pred``,
        ``gt``, ``vis``, the ``skeleton``, the mean training pose ``baseline_pose`` (or None) and the bootstrap
        ``clusters`` (or None). The report itself does not change.

    Returns
    -------
    dict
        The report.
    """
    skel = get_skeleton(skeleton)
    pred, gt, vis = validate_poses(pred, gt, vis, skel.n_joints)
    n_rows, _, dims = gt.shape
    if n_rows == 0:  # every number would be unscoreable; refused like gesture's zero rows
        raise ValidationError("the ground truth has no rows; there is nothing to score")
    plan = PosePlan.create(skeleton=skel, units=units, dims=dims, metrics=metrics, normalizations=normalizations,
                           ks=ks, comparison=comparison, averaging=averaging, auc_n=auc_n, auc_max=auc_max,
                           oks_area=oks_area, sigmas=sigmas, convention=convention, batch_size=batch_size)
    check_bootstrap_settings(cluster_by, n_boot, level, seed)
    groups = check_scored_rows(split, groups, n_rows)
    coverage = coverage_section(split, groups, allow_partial, excluded, dropped)
    want_baseline = check_baseline_request(split, train_gt, train_groups, train_vis)
    provenance = provenance_section(split, synthetic, ground_truth, ground_truth_files)
    notes = list(plan.notes)
    plausible = plausibility(pred, gt, plan.units, notes)

    layout, overridden = enforce_layout(plan, gt, vis, trust_layout)
    if layout["passed"] is None and plan.layout_dependent:
        notes.append(f"LAYOUT NOT VERIFIED: skeleton {skel.name}'s plausibility check could not be evaluated "
                     f"({layout['reason']}); {', '.join(plan.layout_dependent)} assume its joint order")
    if layout["passed"] is True and skel.source != "builtin" and plan.layout_dependent:
        notes.append(f"LAYOUT NOT VERIFIED: skeleton {skel.name} is a custom layout whose plausibility checks are "
                     f"declared by its own file: passing them does not show that its joint names and roles are "
                     f"right; {', '.join(plan.layout_dependent)} assume them")
    if overridden:
        notes.append(f"LAYOUT NOT VERIFIED: skeleton {skel.name} did not pass its plausibility check "
                     f"({layout['reason']}) and {', '.join(plan.layout_dependent)} were computed anyway "
                     f"(--trust-layout)")

    clusters, boot_off_reason = resolve_clusters(groups, cluster_by, subjects, n_boot)
    segments = make_segments(n_rows, clusters)

    table = plan.table(pred, gt, vis, segments)
    model_scores = plan.scores(table)

    baseline_section = no_baseline_section(split, "ground truth")
    base_scores = None
    base_table = None
    if want_baseline:
        mb = mean_pose_baseline(train_gt, train_groups, split, groups, train_vis, list(skel.joints))
        partial = baseline_coverage_note(split, mb.train_recordings)
        if partial:
            notes.append(partial)
        if mb.pose.shape != gt.shape[1:]:
            raise ValidationError(f"training ground truth has joints x dims {mb.pose.shape} but the scored ground "
                                  f"truth has {gt.shape[1:]}")
        base_table = plan.table(np.ascontiguousarray(mb.pose[None]), gt, vis, segments)
        base_scores = plan.scores(base_table)
        baseline_section = mb.to_report()

    intervals, bootstrap_section_ = bootstrap_for(
        table, {"baseline": base_table} if base_table is not None else {},
        [plan.statistic(i) for i in range(len(plan.specs))], clusters, segments.count, boot_off_reason,
        cluster_by=cluster_by, n_boot=n_boot, level=level, seed=seed, notes=notes)

    results = []
    for i, (spec, ms) in enumerate(zip(plan.specs, model_scores)):
        bs = base_scores[i] if base_scores is not None else None
        delta = None
        if bs is not None and ms.value is not None and bs.value is not None:
            delta = ms.value - bs.value
        results.append({"metric": spec.metric, "spec": spec.to_dict(), "label": spec.label,
                        "better": "higher" if spec.higher_is_better else "lower",
                        "model": _sub(ms), "baseline": _sub(bs), "delta": delta,
                        "ci": ci_triple(intervals, i, "baseline") if plan.bootstrappable(i) else None})

    if capture is not None:
        capture.update(pred=pred, gt=gt, vis=vis, skeleton=skel, clusters=clusters,
                       baseline_pose=np.ascontiguousarray(mb.pose) if want_baseline else None)
    layout = dict(layout)
    layout["overridden"] = overridden
    layout["required_by"] = plan.layout_dependent
    sections = {
        "skeleton": skel.to_dict(),
        "layout_check": layout,
        "plausibility": plausible,
        "data": {"rows": int(n_rows), "joints": int(gt.shape[1]), "dims": int(dims), "units": plan.units,
                 "visible_joints": int(np.count_nonzero(vis)),
                 "recordings": int(np.unique(groups).size) if groups is not None else None},
    }
    return finish_report("pose", results=results, split=split, provenance=provenance, coverage=coverage,
                         notes=notes, extra_notes=extra_notes, sections=sections, baseline=baseline_section,
                         bootstrap=bootstrap_section_, reproducer=reproducer, inputs=inputs, evidence=evidence,
                         chain=chain)
