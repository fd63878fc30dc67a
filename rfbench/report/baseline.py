"""Splits as ``score`` uses them, row → recording ids, and the trivial baselines (DESIGN.md §7).

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

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from rfbench.errors import FormatError, LeakageError, ValidationError
from rfbench.io.archive import load_npy, read_json, sha256_file

__all__ = [
    "SplitInfo",
    "load_split",
    "split_from_dict",
    "load_groups",
    "as_groups",
    "check_side",
    "MeanPoseBaseline",
    "mean_pose_baseline",
    "manifest_subjects",
]


@dataclass(frozen=True)
class SplitInfo:
    """A split file's content that scoring needs (DESIGN.md §11)."""

    train: frozenset
    test: frozenset
    protocol: str
    seed: Any
    params: Mapping[str, Any]
    leakage_prone: bool
    audit: Mapping[str, Any]
    synthetic: bool
    manifest: Mapping[str, Any] | None
    path: Path | None = None
    held_out: tuple = ()

    @property
    def held_out_key(self) -> str | None:
        """The domain key whose values the split holds out (``params.domain``), if any."""
        key = self.params.get("domain") if isinstance(self.params, Mapping) else None
        return key if isinstance(key, str) else None

    def to_report(self) -> dict[str, Any]:
        """The report's ``split`` section."""
        return {
            "protocol": self.protocol,
            "seed": self.seed,
            "params": dict(self.params),
            "leakage_prone": self.leakage_prone,
            "audit": {"passed": bool(self.audit.get("passed")), "checks": list(self.audit.get("checks", []))},
            "synthetic": self.synthetic,
            "train_recordings": len(self.train),
            "test_recordings": len(self.test),
            "manifest_sha256": (self.manifest or {}).get("sha256"),
            "held_out": {"key": self.held_out_key, "values": list(self.held_out)},
        }


def load_split(path: str | os.PathLike) -> SplitInfo:
    """Read and check a ``rfbench.split/1`` file (see :func:`split_from_dict`)."""
    path = Path(path)
    return split_from_dict(read_json(path, "split"), str(path), path)


def split_from_dict(obj: Mapping[str, Any], where: str = "split", path: Path | None = None) -> SplitInfo:
    """Check a split's keys and its audit.

    Raises
    ------
    FormatError
        A required key is missing or has the wrong type.
    LeakageError
        The audit did not pass, or a recording is on both sides.
    """
    def need(key, types, what):
        if key not in obj or not isinstance(obj[key], types):
            raise FormatError(f"{where}: split key {key!r} must be {what}")
        return obj[key]

    train = need("train", list, "a list of recording ids")
    test = need("test", list, "a list of recording ids")
    for side, ids in (("train", train), ("test", test)):
        if not all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in ids):
            raise FormatError(f"{where}: split {side} must list recording ids (strings)")
    audit = need("audit", dict, "an object {passed, checks}")
    if not isinstance(audit.get("passed"), bool):
        raise FormatError(f"{where}: split audit.passed must be true or false")
    leaky = need("leakage_prone", (bool,), "true or false")
    protocol = need("protocol", str, "the protocol name")
    synthetic = obj.get("synthetic", False)
    if not isinstance(synthetic, bool):
        raise FormatError(f"{where}: split key 'synthetic' must be true or false")
    manifest = obj.get("manifest")
    if manifest is not None and not isinstance(manifest, dict):
        raise FormatError(f"{where}: split key 'manifest' must be an object {{path, sha256}}")
    checks = audit.get("checks", [])
    if not audit["passed"]:
        failed = [c for c in checks if isinstance(c, dict) and not c.get("passed")]
        detail = "; ".join(f"{c.get('name')}: {c.get('detail')}" for c in failed) or "no detail given"
        raise LeakageError(f"{where}: the split's audit did not pass ({detail}); a leaked split is not scored — "
                           f"rebuild it with rfbench split", checks=failed)
    train_set = frozenset(str(i) for i in train)
    test_set = frozenset(str(i) for i in test)
    both = sorted(train_set & test_set)
    if both:
        raise LeakageError(f"{where}: {len(both)} recording(s) are on both sides (e.g. {both[0]!r}) although the "
                           f"audit says passed; rebuild the split with rfbench split",
                           checks=[{"name": "recording-disjoint", "passed": False, "detail": f"{len(both)} shared"}])
    held_out = obj.get("held_out", [])
    if not isinstance(held_out, list):
        raise FormatError(f"{where}: split key 'held_out' must be a list of domain values")
    return SplitInfo(train_set, test_set, protocol, obj.get("seed"), dict(obj.get("params") or {}), leaky,
                     dict(audit), synthetic, manifest, path, tuple(held_out))


def as_groups(ids, n_rows: int, option: str = "--groups") -> np.ndarray:
    """Row → recording ids as a unicode array; integers are compared as their decimal strings."""
    ids = np.asarray(ids)
    if ids.dtype.kind not in "Uiu":
        raise FormatError(f"{option}: recording ids must be a unicode string or integer array, found dtype {ids.dtype}")
    if ids.ndim != 1 or ids.shape[0] != n_rows:
        raise ValidationError(f"{option}: expected one recording id per row ({n_rows} rows), got shape {ids.shape}")
    return ids.astype(str)


def load_groups(path: str | os.PathLike, n_rows: int, option: str = "--groups") -> np.ndarray:
    """Load a ``.npy`` of recording ids (no pickles) and check it has one id per row."""
    return as_groups(load_npy(path, option), n_rows, option)


def check_side(ids: np.ndarray, split: SplitInfo, side: str, option: str) -> None:
    """Every id in ``ids`` must be on the split's ``side`` (``train`` or ``test``)."""
    allowed = split.train if side == "train" else split.test
    other = split.test if side == "train" else split.train
    unique = np.unique(ids)
    outside = [str(u) for u in unique if str(u) not in allowed]
    if outside:
        where = ("on the split's " + ("test" if side == "train" else "train") + " side"
                 if outside[0] in other else "in neither side of the split")
        purpose = ("a baseline must come from training data only" if side == "train"
                   else "scored rows must come from the test side")
        raise ValidationError(f"{option}: {len(outside)} of {len(unique)} recording ids are not on the split's "
                              f"{side} side (e.g. {outside[0]!r} is {where}); {purpose}")


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
        raise ValidationError("a baseline needs a split (load it with rfbench.report.baseline.load_split)")
    if train_groups is None or test_groups is None:
        raise ValidationError("a baseline needs the recording id of every training row (--train-groups) and of "
                              "every scored row (--groups)")
    gt = np.asarray(train_gt)
    if gt.dtype.kind not in "fiu" or gt.ndim != 3 or gt.shape[2] not in (2, 3):
        raise ValidationError(f"training ground truth must be a numeric (rows, joints, 2 or 3) array, got "
                              f"{gt.dtype} {gt.shape}")
    gt = gt.astype(np.float64)
    train_groups = as_groups(train_groups, gt.shape[0], "--train-groups")
    check_side(train_groups, split, "train", "--train-groups")
    check_side(np.asarray(test_groups).astype(str), split, "test", "--groups")
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
    bad = ~np.isfinite(gt).all(axis=2) & vis
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValidationError(f"training ground truth holds NaN or inf at a visible joint (row {int(i)}, joint "
                              f"{int(j)}); fix it or mark the joint invisible with --train-vis")
    counts = vis.sum(axis=0)
    sums = np.where(vis[..., None], gt, 0.0).sum(axis=0)
    pose = np.full(sums.shape, np.nan)
    np.divide(sums, counts[:, None], out=pose, where=counts[:, None] > 0)
    names = joint_names or [str(j) for j in range(gt.shape[1])]
    never = tuple(names[j] for j in np.flatnonzero(counts == 0))
    return MeanPoseBaseline(pose, int(gt.shape[0]), int(np.unique(train_groups).size), never)


def manifest_path(split: SplitInfo) -> Path | None:
    """Where the split's manifest should be (relative to the split file, or to its recorded ``root``), or None
    when the split names none."""
    if not split.manifest or not split.manifest.get("path"):
        return None
    base = split.path.parent if split.path is not None else Path(".")
    path = base / split.manifest["path"]
    if not path.exists() and "root" in split.manifest:
        path = Path(split.manifest["root"]) / split.manifest["path"]
    return path


def manifest_records(split: SplitInfo, purpose: str) -> tuple[dict[str, dict], Path]:
    """Recording id → recording (the manifest's dict) from the split's manifest, after checking its sha256.

    Returns the mapping and the manifest's path (an input of the report). ``purpose`` completes the error
    messages ("clustering by subject needs ...").
    """
    path = manifest_path(split)
    if path is None:
        raise ValidationError(f"{purpose} needs the split's manifest, but the split names none")
    if not path.exists():
        raise FormatError(f"{path}: the split's manifest is missing; {purpose} needs it")
    digest, _ = sha256_file(path)
    if split.manifest.get("sha256") and digest != split.manifest["sha256"]:
        raise ValidationError(f"{path}: the manifest changed since the split was made (sha256 differs); "
                              f"rebuild the split")
    man = read_json(path, "manifest")
    recs = man.get("recordings")
    if not isinstance(recs, list):
        raise FormatError(f"{path}: manifest has no recordings list")
    return {str(r["id"]): r for r in recs if isinstance(r, dict) and "id" in r}, path


def manifest_subjects(split: SplitInfo) -> tuple[dict[str, str], Path]:
    """Recording id → subject from the split's manifest, after checking the manifest's sha256.

    Returns the mapping and the manifest's path (an input of the report).
    """
    recs, path = manifest_records(split, "clustering by subject")
    return {rid: str(r["subject"]) for rid, r in recs.items() if r.get("subject") is not None}, path


# -- classification baselines (gesture, activity) ---------------------------------------------------------


@dataclass(frozen=True)
class ClassBaselines:
    """The training split's class frequencies and the two trivial classifiers made from them.

    - **majority-class**: always predicts the most frequent training class (ties: the lower class index);
      as a scorer it ranks classes by training frequency (ties: lower index first), which gives its top-k.
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
        return int(np.argmax(self.counts))  # first maximum: the lower index wins a tie

    @property
    def class_rank(self) -> np.ndarray:
        """Rank of each class by descending training frequency, ties to the lower index (0 = majority)."""
        order = np.lexsort((np.arange(self.counts.size), -self.counts))
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
        raise ValidationError("a baseline needs a split (load it with rfbench.report.baseline.load_split): the "
                              "training labels' recording ids must be checked against its train side")
    if not split.audit.get("passed"):
        raise LeakageError("the split's audit did not pass; a leaked split is not scored — rebuild it with "
                           "rfbench split")
    if split.train & split.test:
        raise LeakageError(f"{len(split.train & split.test)} recording(s) are on both sides of the split; rebuild it "
                           f"with rfbench split")
    if train_groups is None or test_groups is None:
        raise ValidationError("a baseline needs the recording id of every training row (--train-groups) and of "
                              "every scored row (--groups)")
    labels = np.asarray(train_labels)
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise ValidationError(f"training labels must be class indices (M,), got {labels.dtype} {labels.shape}")
    train_groups = as_groups(train_groups, labels.shape[0], "--train-groups")
    check_side(train_groups, split, "train", "--train-groups")
    check_side(np.asarray(test_groups).astype(str), split, "test", "--groups")
    if labels.shape[0] == 0:
        raise ValidationError("the training labels have no rows; the baselines need at least one")
    names = tuple(names)
    if labels.min() < 0 or labels.max() >= len(names):
        raise ValidationError(f"training labels must be class indices in 0..{len(names) - 1}")
    counts = np.bincount(labels, minlength=len(names)).astype(np.int64)
    return ClassBaselines(counts, names, int(labels.shape[0]), int(np.unique(train_groups).size))
