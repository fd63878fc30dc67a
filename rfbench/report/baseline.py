"""The trivial baselines a model is scored beside (DESIGN.md §7).

A baseline is a trivial model that any real one must beat: for poses it predicts, for every test row, the mean
*training* pose; for classes it predicts the most frequent *training* class (majority-class) or draws from
the training class frequencies (class-prior). It is computed only from training ground truth, and that is
enforced, not trusted:

- a split is required, and a split whose audit did not pass — or whose train and test sides share a
  recording — is refused with :class:`~rfbench.errors.LeakageError` (exit 1, like ``rfbench audit``): a leaked
  split is never scored as clean;
- the training rows come with their recording ids, which must all lie on the split's ``train`` side;
- the scored rows' ids must all lie on its ``test`` side.

Anything else raises :class:`~rfbench.errors.ValidationError` (exit 2), so a baseline from test data cannot be
built by accident.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rfbench.errors import LeakageError, ValidationError
from rfbench.protocols.splitfile import SplitInfo, as_groups, check_side

__all__ = [
    "MeanPoseBaseline",
    "mean_pose_baseline",
    "ClassBaselines",
    "class_baselines",
]


@dataclass(frozen=True)
class MeanPoseBaseline:
    """The mean training pose and where it came from."""

    pose: np.ndarray  # (K, D); NaN for a joint never visible in training
    train_rows: int
    train_recordings: int
    never_visible: tuple[str, ...]

    def to_report(self) -> dict[str, Any]:
        return {
            "kind": "mean-pose",
            "source": "training split ground truth (--train-gt), ids checked against the split's train side",
            "train_rows": self.train_rows,
            "train_recordings": self.train_recordings,
            "joints_never_visible": list(self.never_visible),
        }


def mean_pose_baseline(train_gt, train_groups, split: SplitInfo, test_groups, train_vis=None,
                       joint_names=None) -> MeanPoseBaseline:
    """The per-joint mean of the training ground truth, after checking both row → recording maps.

    Parameters
    ----------
    train_gt : array_like, (M, K, D)
        Training-split ground truth, finite at visible joints.
    train_groups : array_like, (M,)
        Recording id of each training row; all must be on ``split.train``.
    split : SplitInfo
        A split whose audit passed (see :func:`load_split`).
    test_groups : array_like, (N,)
        Recording id of each scored row; all must be on ``split.test``.
    train_vis : array_like, (M, K), optional
        Visibility of the training joints (default all visible). A joint never visible gets NaN, which
        scores as wrong.
    """
    if not isinstance(split, SplitInfo):
        raise ValidationError("a baseline needs a split (load it with rfbench.protocols.splitfile.load_split)")
    if train_groups is None or test_groups is None:
        raise ValidationError("a baseline needs the recording id of every training row (`train_groups`) and of "
                              "every scored row (`groups`)")
    gt = np.asarray(train_gt)
    if gt.dtype.kind not in "fiu" or gt.ndim != 3 or gt.shape[2] not in (2, 3):
        raise ValidationError(f"training ground truth must be a numeric (rows, joints, 2 or 3) array, got "
                              f"{gt.dtype} {gt.shape}")
    gt = gt.astype(np.float64)
    train_groups = as_groups(train_groups, gt.shape[0], "`train_groups`")
    check_side(train_groups, split, "train", "`train_groups`")
    check_side(np.asarray(test_groups).astype(str), split, "test", "`groups`")
    if gt.shape[0] == 0:
        raise ValidationError("training ground truth has no rows; the mean pose needs at least one")
    if train_vis is None:
        vis = np.ones(gt.shape[:2], dtype=bool)
    else:
        vis = np.asarray(train_vis)
        if vis.shape != gt.shape[:2] or vis.dtype.kind not in "biuf":
            raise ValidationError(f"training visibility must be a numeric (rows, joints) array {gt.shape[:2]}, "
                                  f"got {vis.dtype} {vis.shape}")
        vis = vis > 0
    from rfbench.metrics.limits import MAX_COORDINATE

    bad = ~(np.abs(gt) <= MAX_COORDINATE).all(axis=2) & vis  # NaN, inf, or sums that would overflow
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValidationError(f"training ground truth holds NaN, inf or a coordinate beyond ±{MAX_COORDINATE:g} "
                              f"at a visible joint (row {int(i)}, joint {int(j)}); fix it or mark the joint "
                              "invisible with `train_vis`")
    counts = vis.sum(axis=0)
    sums = np.where(vis[..., None], gt, 0.0).sum(axis=0)
    pose = np.full(sums.shape, np.nan)
    np.divide(sums, counts[:, None], out=pose, where=counts[:, None] > 0)
    names = joint_names or [str(j) for j in range(gt.shape[1])]
    never = tuple(names[j] for j in np.flatnonzero(counts == 0))
    return MeanPoseBaseline(pose, int(gt.shape[0]), int(np.unique(train_groups).size), never)


# -- classification baselines (gesture, activity) ---------------------------------------------------------


@dataclass(frozen=True)
class ClassBaselines:
    """The training split's class frequencies and the two trivial classifiers made from them.

    - **majority-class**: always predicts the most frequent training class (ties: the class whose name comes
      first in code-point order — never the label set's order, which a label-set file chooses: a party could
      otherwise pick, among tied classes, the one rarest on the test side, and so the weakest baseline); as a
      scorer it ranks classes by training frequency (ties the same way), which gives its top-k.
    - **class-prior** (stratified chance): predicts a class drawn from the training frequencies; scored by its
      expected confusion matrix (:func:`rfbench.metrics.classify.prior_table`).
    """

    counts: np.ndarray  # (C,) training rows per class, label-set order
    names: tuple[str, ...]
    train_rows: int
    train_recordings: int

    @property
    def prior(self) -> np.ndarray:
        return self.counts / float(self.train_rows)

    @property
    def majority(self) -> int:
        return int(np.flatnonzero(self.class_rank == 0)[0])

    @property
    def class_rank(self) -> np.ndarray:
        """Rank of each class by descending training frequency, ties by name in code-point order (0 = majority)."""
        by_name = sorted(range(self.counts.size), key=lambda k: self.names[k])
        name_rank = np.empty(self.counts.size, dtype=np.int64)
        name_rank[by_name] = np.arange(self.counts.size)
        order = np.lexsort((name_rank, -self.counts))
        rank = np.empty(self.counts.size, dtype=np.int64)
        rank[order] = np.arange(self.counts.size)
        return rank

    def to_report(self) -> dict[str, Any]:
        return {
            "kind": "majority-class, class-prior",
            "kinds": ["majority-class", "class-prior"],
            "source": "training split labels (--train-gt), ids checked against the split's train side",
            "train_rows": self.train_rows,
            "train_recordings": self.train_recordings,
            "majority_class": self.names[self.majority],
            "train_counts": {n: int(c) for n, c in zip(self.names, self.counts)},
            "classes_absent_from_training": [n for n, c in zip(self.names, self.counts) if c == 0],
            "class_prior": "expected counts of a classifier drawing labels from the training frequencies: accuracy "
                           "and balanced accuracy are expectations, F1 is the F1 of the expected confusion matrix",
        }


def class_baselines(train_labels, train_groups, split: SplitInfo, test_groups, names) -> ClassBaselines:
    """Training class frequencies for the majority-class and class-prior baselines, after checking that the
    training rows come from the split's train side and the scored rows from its test side.

    Parameters
    ----------
    train_labels : array_like of int, (M,)
        Class indices of the training rows (already encoded against the label set).
    train_groups : array_like, (M,)
        Recording id of each training row; all must be on ``split.train``.
    split : SplitInfo
        A split whose audit passed (see :func:`load_split`); its sides must be disjoint.
    test_groups : array_like, (N,)
        Recording id of each scored row; all must be on ``split.test``.
    names : sequence of str
        The label set's class names.

    Raises
    ------
    ValidationError
        No split, missing ids, ids on the wrong side, or no training rows.
    LeakageError
        The split's audit did not pass or its sides share a recording.
    """
    if not isinstance(split, SplitInfo):
        raise ValidationError("a baseline needs a split (load it with rfbench.protocols.splitfile.load_split): the "
                              "training labels' recording ids must be checked against its train side")
    if not split.audit.get("passed"):
        raise LeakageError("the split's audit did not pass; a leaked split is not scored — rebuild it with "
                           "rfbench split")
    if split.train & split.test:
        raise LeakageError(f"{len(split.train & split.test)} recording(s) are on both sides of the split; rebuild it "
                           f"with rfbench split")
    if train_groups is None or test_groups is None:
        raise ValidationError("a baseline needs the recording id of every training row (`train_groups`) and of "
                              "every scored row (`groups`)")
    labels = np.asarray(train_labels)
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise ValidationError(f"training labels must be class indices (M,), got {labels.dtype} {labels.shape}")
    train_groups = as_groups(train_groups, labels.shape[0], "`train_groups`")
    check_side(train_groups, split, "train", "`train_groups`")
    check_side(np.asarray(test_groups).astype(str), split, "test", "`groups`")
    if labels.shape[0] == 0:
        raise ValidationError("the training labels have no rows; the baselines need at least one")
    names = tuple(names)
    if labels.min() < 0 or labels.max() >= len(names):
        raise ValidationError(f"training labels must be class indices in 0..{len(names) - 1}")
    counts = np.bincount(labels, minlength=len(names)).astype(np.int64)
    return ClassBaselines(counts, names, int(labels.shape[0]), int(np.unique(train_groups).size))
