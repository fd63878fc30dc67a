"""The pose task of ``rfbench score``: arrays (or files) in, a checked report out.

:func:`pose_report` is the API: it scores the model, builds the mean-pose baseline from the training split
(when given), runs the paired cluster bootstrap and assembles the report. :func:`score_pose_files` is what
the command line calls: it loads and hashes the input files and passes the reproducer along.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from rfbench.errors import ValidationError
from rfbench.metrics.pose import (
    AVERAGINGS,
    PosePlan,
    enforce_layout,
    make_segments,
    validate_poses,
)
from rfbench.metrics.skeletons import BUILTIN, get_skeleton
from rfbench.protocols.splitfile import SplitInfo, load_groups, load_split, manifest_subjects
from rfbench.report.baseline import mean_pose_baseline
from rfbench.report.build import build_report
from rfbench.report.common import (
    CLUSTER_BY,
    bootstrap_section,
    check_bootstrap_settings,
    check_input_files,
    check_scored_rows,
    ci_entry,
    load_array,
    paired_intervals,
    record_inputs,
    resolve_clusters,
    split_notes,
)

__all__ = ["pose_report", "score_pose_files", "load_array", "CLUSTER_BY"]


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
                extra_notes: Sequence[str] = (), capture: dict | None = None) -> dict[str, Any]:
    """Score poses and build a ``rfbench.report/1`` document.

    Parameters
    ----------
    pred, gt, vis, skeleton, units, metrics, normalizations, ks, comparison, averaging, auc_n, auc_max,
    oks_area, sigmas, trust_layout
        As :func:`rfbench.metrics.pose.evaluate_pose`.
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
                           oks_area=oks_area, sigmas=sigmas)
    check_bootstrap_settings(cluster_by, n_boot, level, seed)
    groups = check_scored_rows(split, groups, n_rows)
    want_baseline = train_gt is not None or train_groups is not None or train_vis is not None
    if want_baseline and split is None:
        raise ValidationError("a baseline needs --split: the training ground truth's recording ids must be checked "
                              "against the split's train side")
    if want_baseline and (train_gt is None or train_groups is None):
        raise ValidationError("a baseline needs both --train-gt and --train-groups")
    synthetic = bool(synthetic or (split is not None and split.synthetic))
    notes = list(plan.notes)

    layout, overridden = enforce_layout(plan, gt, vis, trust_layout)
    if layout["passed"] is None and plan.layout_dependent:
        notes.append(f"LAYOUT NOT VERIFIED: skeleton {skel.name}'s plausibility check could not be evaluated "
                     f"({layout['reason']}); {', '.join(plan.layout_dependent)} assume its joint order")
    if overridden:
        notes.append(f"LAYOUT NOT VERIFIED: skeleton {skel.name} did not pass its plausibility check "
                     f"({layout['reason']}) and {', '.join(plan.layout_dependent)} were computed anyway "
                     f"(--trust-layout)")

    clusters, boot_off_reason = resolve_clusters(groups, cluster_by, subjects, n_boot)
    segments = make_segments(n_rows, clusters)

    table = plan.table(pred, gt, vis, segments)
    model_scores = plan.scores(table)

    baseline_section = {"kind": None, "reason": "no split given: a baseline needs the training split's ground "
                                                "truth (--split, --train-gt, --train-groups)"}
    base_scores = None
    base_table = None
    if split is not None and not want_baseline:
        baseline_section = {"kind": None, "reason": "no training ground truth given (--train-gt, --train-groups)"}
    if want_baseline:
        mb = mean_pose_baseline(train_gt, train_groups, split, groups, train_vis, list(skel.joints))
        if mb.pose.shape != gt.shape[1:]:
            raise ValidationError(f"training ground truth has joints x dims {mb.pose.shape} but the scored ground "
                                  f"truth has {gt.shape[1:]}")
        base_table = plan.table(np.ascontiguousarray(mb.pose[None]), gt, vis, segments)
        base_scores = plan.scores(base_table)
        baseline_section = mb.to_report()

    intervals = None
    if clusters is not None:
        intervals = paired_intervals(table, {"baseline": base_table} if base_table is not None else {},
                                     [plan.statistic(i) for i in range(len(plan.specs))], n_boot=n_boot,
                                     level=level, seed=seed)
        bootstrap_section_ = bootstrap_section(n_boot, level, seed, cluster_by, segments.count,
                                               base_table is not None, notes)
    else:
        bootstrap_section_ = {"method": None, "reason": boot_off_reason}

    results = []
    for i, (spec, ms) in enumerate(zip(plan.specs, model_scores)):
        bs = base_scores[i] if base_scores is not None else None
        delta = None
        if bs is not None and ms.value is not None and bs.value is not None:
            delta = ms.value - bs.value
        ci = None
        if intervals is not None:
            ci = {"model": ci_entry(intervals, ("model", i)), "baseline": ci_entry(intervals, ("baseline", i)),
                  "delta": ci_entry(intervals, ("delta", "baseline", i))}
        results.append({"metric": spec.metric, "spec": spec.to_dict(), "label": spec.label,
                        "better": "higher" if spec.higher_is_better else "lower",
                        "model": _sub(ms), "baseline": _sub(bs), "delta": delta, "ci": ci})

    if capture is not None:
        capture.update(pred=pred, gt=gt, vis=vis, skeleton=skel, clusters=clusters,
                       baseline_pose=np.ascontiguousarray(mb.pose) if want_baseline else None)
    notes.extend(split_notes(split))
    notes.extend(extra_notes)
    layout = dict(layout)
    layout["overridden"] = overridden
    layout["required_by"] = plan.layout_dependent
    sections = {
        "skeleton": skel.to_dict(),
        "layout_check": layout,
        "data": {"rows": int(n_rows), "joints": int(gt.shape[1]), "dims": int(dims), "units": plan.units,
                 "visible_joints": int(np.count_nonzero(vis)),
                 "recordings": int(np.unique(groups).size) if groups is not None else None},
    }
    return build_report(task="pose", results=results, reproducer=reproducer, inputs=inputs, synthetic=synthetic,
                        split=split.to_report() if split is not None else None, baseline=baseline_section,
                        bootstrap=bootstrap_section_, notes=notes, sections=sections, evidence=evidence)


def score_pose_files(*, pred: Path, gt: Path, vis: Path | None = None, skeleton: str, units: str,
                     split: Path | None = None, groups: Path | None = None, train_gt: Path | None = None,
                     train_groups: Path | None = None, train_vis: Path | None = None, reproducer: Mapping | None,
                     base: Path | None = None, cluster_by: str = "recording", **settings) -> dict[str, Any]:
    """Load, hash and score the files of ``rfbench score --task pose``; returns the report.

    ``base`` is the folder input paths are recorded relative to (the report's folder); ``settings`` are the
    remaining keyword arguments of :func:`pose_report`.
    """
    files = [("pred", "--pred", pred), ("gt", "--gt", gt), ("vis", "--vis", vis), ("split", "--split", split),
             ("groups", "--groups", groups), ("train-gt", "--train-gt", train_gt),
             ("train-groups", "--train-groups", train_groups), ("train-vis", "--train-vis", train_vis)]
    if str(skeleton) not in BUILTIN:
        if Path(skeleton).suffix.lower() not in (".toml", ".json"):
            get_skeleton(skeleton)  # raises: unknown name
        files.append(("skeleton", "--skeleton", Path(skeleton)))
    check_input_files(files)
    skel = get_skeleton(skeleton)
    arrays = {role: load_array(path, option) for role, option, path in files
              if path is not None and role not in ("split", "groups", "train-groups", "skeleton")}
    split_info = load_split(split) if split is not None else None
    n_rows = arrays["gt"].shape[0] if arrays["gt"].ndim >= 1 else 0
    group_ids = load_groups(groups, n_rows, "--groups") if groups is not None else None
    train_ids = None
    if (train_gt is None) != (train_groups is None):
        raise ValidationError("a baseline needs both --train-gt and --train-groups")
    if train_groups is not None:
        n_train = arrays["train-gt"].shape[0] if "train-gt" in arrays and arrays["train-gt"].ndim else 0
        train_ids = load_groups(train_groups, n_train, "--train-groups")
    subjects = None
    extra_inputs = []
    if cluster_by == "subject" and split_info is not None and settings.get("n_boot", 1) != 0 and groups is not None:
        subjects, manifest_path = manifest_subjects(split_info)
        extra_inputs.append(("manifest", None, manifest_path))
    inputs = record_inputs(files + extra_inputs, base)
    return pose_report(arrays["pred"], arrays["gt"], arrays.get("vis"), skeleton=skel, units=units, split=split_info,
                       groups=group_ids, train_gt=arrays.get("train-gt"), train_groups=train_ids,
                       train_vis=arrays.get("train-vis"), cluster_by=cluster_by, subjects=subjects,
                       reproducer=reproducer, inputs=inputs, **settings)
