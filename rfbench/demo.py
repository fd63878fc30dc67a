"""The whole pipeline on generated data: what ``rfbench demo`` runs (everything it makes is SYNTHETIC).

:func:`build_inputs` generates a Widar3.0-like tree of real bfee logs and an MM-Fi-like tree, parses the
Widar logs to CSI archives, ingests both trees, splits them (``cross-room`` holding out room 3;
``mmfi-s2``, MM-Fi's cross-subject setting), and trains two simple, honest predictors on the **train side
only**:

- pose (MM-Fi-like): ridge regression from each WiFi frame's mean CSI amplitude per antenna and subcarrier
  (3 × 114 = 342 features, standardised with training statistics) to the 17 × 3 joint coordinates;
- gesture (Widar-like): nearest class centroid on each recording's mean CSI amplitude per receiver, antenna
  and subcarrier (6 × 3 × 30 = 540 features), with Gaussian class scores (classes absent from training
  score 0).

It writes their predictions, the ground truth and the row → recording ids as ``.npy`` files, and returns the
``rfbench score`` options that score them; ``rfbench demo`` then runs the command's own code path, so each
report carries a command line a user can type, and ``rfbench verify`` re-runs it.

The generated Widar-like CSI is random (the encoder draws it without any gesture in it), so the gesture
classifier can only match its baselines by chance: an honest pipeline shows exactly that. The MM-Fi-like CSI
amplitudes are a fixed linear function of the pose plus noise, so the pose model beats the mean pose. Neither
says anything about real WiFi sensing.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from rfbench.errors import OutputExistsError, ValidationError

__all__ = ["SIZES", "STEPS", "DemoLayout", "DemoInputs", "prepare_folder", "build_inputs", "ridge_fit",
           "nearest_centroid_scores"]

#: Corpus sizes. ``standard`` is the default; ``tiny`` keeps the test suite fast.
SIZES = {
    "standard": {"widar_records": (24, 48), "mmfi_subjects": ("S01", "S02", "S03", "S05", "S10", "S11", "S12", "S15",
                                                              "S21", "S25", "S31", "S35"),
                 "mmfi_actions": ("A01", "A02", "A03", "A13"), "mmfi_frames": 10},
    "tiny": {"widar_records": (6, 10), "mmfi_subjects": ("S01", "S02", "S05", "S11", "S15"),
             "mmfi_actions": ("A02", "A13"), "mmfi_frames": 4},
}

#: The steps of a demo run, in order (``rfbench demo`` shows them as progress).
STEPS = ("generate corpora", "parse Widar logs", "ingest", "split", "train pose model", "train gesture model",
         "score pose", "score gesture", "verify")

#: Ridge penalty of the pose model, fixed in advance (no tuning on the test side).
RIDGE_PENALTY = 10.0

#: What the demo writes at the top of its folder; ``--force`` removes exactly these before writing.
_OWNED = ("data", "archives", "pose", "gesture", "widar-manifest.json", "mmfi-manifest.json", "widar-split.json",
          "mmfi-split.json")


@dataclass(frozen=True)
class DemoLayout:
    """Where everything goes under the demo folder ``root``."""

    root: Path

    @property
    def widar_tree(self) -> Path:
        return self.root / "data" / "widar"

    @property
    def mmfi_tree(self) -> Path:
        return self.root / "data" / "mmfi"

    @property
    def archives(self) -> Path:
        return self.root / "archives" / "widar"

    def manifest(self, name: str) -> Path:
        return self.root / f"{name}-manifest.json"

    def split(self, name: str) -> Path:
        return self.root / f"{name}-split.json"

    @property
    def pose(self) -> Path:
        return self.root / "pose"

    @property
    def gesture(self) -> Path:
        return self.root / "gesture"


@dataclass
class DemoInputs:
    """What :func:`build_inputs` made: the layout, per-step facts for the summary, and the keyword arguments of
    :func:`rfbench.report.score.score_pose` and :func:`~rfbench.report.score.score_gesture` that score them."""

    layout: DemoLayout
    facts: dict = field(default_factory=dict)
    pose_options: dict = field(default_factory=dict)
    gesture_options: dict = field(default_factory=dict)


def prepare_folder(root: str | os.PathLike, force: bool = False) -> DemoLayout:
    """Check (and with ``force`` clear) the demo folder.

    An existing non-empty folder is refused unless ``force``; with ``force`` only what the demo itself writes
    there (``data/``, ``archives/``, ``pose/``, ``gesture/`` and the manifests and splits) is removed first,
    never anything else.

    Raises
    ------
    OutputExistsError
        ``root`` is a file, or a non-empty folder without ``force``.
    """
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise OutputExistsError(f"{root} exists and is not a folder; choose another --out")
    if root.exists() and any(root.iterdir()):
        if not force:
            raise OutputExistsError(f"{root} is not empty; pass --force to replace the demo's files there, or "
                                    f"choose another --out")
        for name in _OWNED:
            p = root / name
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            elif p.exists() or p.is_symlink():
                p.unlink()
    root.mkdir(parents=True, exist_ok=True)
    return DemoLayout(root)


def ridge_fit(x_train: np.ndarray, y_train: np.ndarray, penalty: float = RIDGE_PENALTY):
    """Ridge regression on standardised features; returns ``predict(x) -> y``.

    Features are centred and scaled with the training rows' mean and standard deviation (constant features
    get scale 1); the targets are centred on their training mean, which the prediction adds back. The weights
    solve ``(XᵀX + penalty·I) W = XᵀY``.
    """
    x_train = np.asarray(x_train, dtype=np.float64)
    y_train = np.asarray(y_train, dtype=np.float64)
    if x_train.ndim != 2 or y_train.ndim != 2 or x_train.shape[0] != y_train.shape[0] or x_train.shape[0] < 1:
        raise ValidationError(f"ridge_fit needs (rows, features) and (rows, targets) with the same rows >= 1, got "
                              f"{x_train.shape} and {y_train.shape}")
    mu = x_train.mean(axis=0)
    sd = x_train.std(axis=0)
    sd[sd == 0] = 1.0
    xs = (x_train - mu) / sd
    y_mu = y_train.mean(axis=0)
    w = np.linalg.solve(xs.T @ xs + penalty * np.eye(xs.shape[1]), xs.T @ (y_train - y_mu))

    def predict(x: np.ndarray) -> np.ndarray:
        return ((np.asarray(x, dtype=np.float64) - mu) / sd) @ w + y_mu

    return predict


def nearest_centroid_scores(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, n_classes: int) -> np.ndarray:
    """Class scores ``(test rows, n_classes)`` of a nearest-centroid classifier.

    Features are standardised with the training rows' statistics; the score of class c is
    ``exp(-d_c² / (2·F)) / Σ_c' exp(-d_c'² / (2·F))`` with d_c the distance to the centroid of the training rows
    of class c and F the number of features (a fixed temperature). A class with no training row scores 0.
    The arg-max is the nearest centroid.
    """
    x_train = np.asarray(x_train, dtype=np.float64)
    x_test = np.asarray(x_test, dtype=np.float64)
    y_train = np.asarray(y_train, dtype=np.int64)
    mu = x_train.mean(axis=0)
    sd = x_train.std(axis=0)
    sd[sd == 0] = 1.0
    a, b = (x_train - mu) / sd, (x_test - mu) / sd
    present = np.unique(y_train)
    centroids = np.stack([a[y_train == c].mean(axis=0) for c in present])
    d2 = ((b[:, None, :] - centroids[None]) ** 2).sum(axis=2)
    logits = -d2 / (2.0 * a.shape[1])
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=1, keepdims=True)
    scores = np.zeros((x_test.shape[0], n_classes))
    scores[:, present] = p
    return scores


def _write_split(manifest_path: Path, split_path: Path, protocol: str, **kwargs) -> dict:
    from rfbench.io.files import sha256_file, write_json
    from rfbench.protocols.split import make_splits

    digest, _ = sha256_file(manifest_path)
    ref = {"path": Path(os.path.relpath(manifest_path.resolve(), split_path.parent.resolve())).as_posix(),
           "sha256": digest}
    (outcome,) = make_splits(manifest_path, protocol, manifest_ref=ref, **kwargs)
    outcome.audit.raise_if_failed()
    write_json(split_path, outcome.document)
    return outcome.document


def _save(path: Path, arr) -> None:
    from rfbench.io.files import atomic_write

    atomic_write(path, lambda fh: np.save(fh, np.asarray(arr), allow_pickle=False))


def build_inputs(root: str | os.PathLike, *, size: str = "standard", seed: int = 0, force: bool = False,
                 step: Callable[[str], None] | None = None,
                 advance: Callable[[int], None] | None = None) -> DemoInputs:
    """Generate, parse, ingest and split the demo corpora, train the two predictors and write their inputs.

    Parameters
    ----------
    root : path-like
        The demo folder (see :func:`prepare_folder`). Paths in the returned options start with it, as given,
        so the recorded command lines work from the current folder.
    size : {"standard", "tiny"}
        Corpus size (:data:`SIZES`).
    seed : int
        Seed of both generators.
    force : bool
        Replace the demo's own files in a non-empty folder.
    step, advance : callable, optional
        Progress callbacks: ``step(name)`` at the start of each step of :data:`STEPS` it runs, ``advance(n)``
        within long steps (files parsed).

    Returns
    -------
    DemoInputs
    """
    from rfbench.datasets import mmfi, widar
    from rfbench.datasets.manifest import read_manifest
    from rfbench.datasets.synthetic import make_mmfi_tree, make_widar_tree
    from rfbench.io import parse_files
    from rfbench.io.files import write_text
    from rfbench.io.matv5 import read_mat

    if size not in SIZES:
        raise ValidationError(f"unknown demo size {size!r}; choose {' or '.join(SIZES)}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValidationError(f"the demo seed must be an integer >= 0, got {seed!r}")
    cfg = SIZES[size]
    step = step or (lambda name: None)
    advance = advance or (lambda n=1: None)
    lay = prepare_folder(root, force)
    facts: dict = {"size": size, "seed": seed}

    step("generate corpora")
    w = make_widar_tree(lay.widar_tree, seed=seed, records=cfg["widar_records"], damage=False)
    m = make_mmfi_tree(lay.mmfi_tree, seed=seed, subjects=cfg["mmfi_subjects"], actions=cfg["mmfi_actions"],
                       frames=cfg["mmfi_frames"], damage=False)
    facts["generated"] = {"widar": {"recordings": w["recordings"], "files": w["files"]},
                          "mmfi": {"recordings": m["recordings"], "frames": m["recordings"] * cfg["mmfi_frames"]}}

    step("parse Widar logs")
    csi_root = lay.widar_tree / "CSI"
    files = parse_files.expand_inputs([csi_root])
    parsed = failed = records = 0
    for path, under in files:
        r = parse_files.parse_one(path, under, out_dir=lay.archives)
        if r["error"] is None:
            parsed += 1
            records += r["summary"]["records"]
        else:
            failed += 1
        advance(1)
    facts["parse"] = {"files": parsed, "failed": failed, "records": records}
    if failed:
        raise ValidationError(f"{failed} generated log(s) failed to parse; this is a bug in the demo's corpus")

    step("ingest")
    wm = widar.ingest(lay.widar_tree, workers=1)
    wm.write(lay.manifest("widar"))
    mm = mmfi.ingest(lay.mmfi_tree)
    mm.write(lay.manifest("mmfi"))
    facts["ingest"] = {"widar": {"recordings": len(wm.recordings), "problems": len(wm.problems)},
                       "mmfi": {"recordings": len(mm.recordings), "problems": len(mm.problems)}}

    step("split")
    wsplit = _write_split(lay.manifest("widar"), lay.split("widar"), "cross-room", test=["3"])
    msplit = _write_split(lay.manifest("mmfi"), lay.split("mmfi"), "mmfi-s2", actions="p3")
    facts["split"] = {"widar": {"protocol": "cross-room", "held_out": "room 3", "train": len(wsplit["train"]),
                                "test": len(wsplit["test"])},
                      "mmfi": {"protocol": "mmfi-s2", "held_out": "subjects " + ", ".join(
                          sorted({r.split("/")[1] for r in msplit["test"]})), "train": len(msplit["train"]),
                               "test": len(msplit["test"])}}

    step("train pose model")
    lay.pose.mkdir(parents=True, exist_ok=True)
    mman = read_manifest(lay.manifest("mmfi"))
    feats, poses, ids = [], [], []
    for rec in mman.recordings:
        folder = lay.mmfi_tree / rec["id"]
        gt = np.load(folder / "ground_truth.npy", allow_pickle=False)
        for f in range(int(rec["frames"])):
            amp = read_mat(folder / "wifi-csi" / f"frame{f + 1:03d}.mat")["CSIamp"]
            feats.append(amp.mean(axis=-1).reshape(-1))
            poses.append(gt[f])
            ids.append(rec["id"])
    feats, poses, ids = np.array(feats), np.array(poses), np.array(ids)
    train_rows = np.isin(ids, msplit["train"])
    test_rows = np.isin(ids, msplit["test"])
    predict = ridge_fit(feats[train_rows], poses[train_rows].reshape(int(train_rows.sum()), -1))
    pred = predict(feats[test_rows]).reshape(-1, *poses.shape[1:])
    p = lay.pose
    for name, arr in (("pred", pred), ("gt", poses[test_rows]), ("groups", ids[test_rows]),
                      ("train_gt", poses[train_rows]), ("train_groups", ids[train_rows])):
        _save(p / f"{name}.npy", arr)
    facts["pose"] = {"train_frames": int(train_rows.sum()), "test_frames": int(test_rows.sum()),
                     "features": int(feats.shape[1]), "model": f"ridge regression (penalty {RIDGE_PENALTY:g}) on "
                     f"the mean CSI amplitude per antenna and subcarrier"}

    step("train gesture model")
    lay.gesture.mkdir(parents=True, exist_ok=True)
    wman = read_manifest(lay.manifest("widar"))
    recs = [r for r in wman.recordings if r.get("gesture")]
    names = sorted({r["gesture"] for r in recs})
    index = {n: i for i, n in enumerate(names)}
    feats, labels, gids = [], [], []
    for rec in recs:
        parts = []
        for f in sorted(rec["files"], key=lambda f: f.get("receiver", 0)):
            dat = lay.widar_tree / f["path"]  # manifest paths are relative to its root
            arc = parse_files.output_path(dat, csi_root, lay.archives)
            with np.load(arc, allow_pickle=False) as z:
                parts.append(np.abs(z["csi"]).mean(axis=0).reshape(-1))
        feats.append(np.concatenate(parts))
        labels.append(rec["gesture"])
        gids.append(rec["id"])
    feats, labels, gids = np.array(feats), np.array(labels), np.array(gids)
    train_rows = np.isin(gids, wsplit["train"])
    test_rows = np.isin(gids, wsplit["test"])
    y = np.array([index[n] for n in labels])
    scores = nearest_centroid_scores(feats[train_rows], y[train_rows], feats[test_rows], len(names))
    g = lay.gesture
    write_text(g / "names.txt", "\n".join(names) + "\n")
    for name, arr in (("scores", scores), ("gt", labels[test_rows]), ("groups", gids[test_rows]),
                      ("train_gt", labels[train_rows]), ("train_groups", gids[train_rows])):
        _save(g / f"{name}.npy", arr)
    facts["gesture"] = {"train_recordings": int(train_rows.sum()), "test_recordings": int(test_rows.sum()),
                        "classes": len(names), "features": int(feats.shape[1]),
                        "model": "nearest class centroid on the mean CSI amplitude per receiver, antenna and "
                                 "subcarrier"}

    from rfbench.report.settings import PoseSettings

    pose_options = dict(pred=p / "pred.npy", gt=p / "gt.npy", split=lay.split("mmfi"), groups=p / "groups.npy",
                        train_gt=p / "train_gt.npy", train_groups=p / "train_groups.npy", out=p / "report.json",
                        settings=PoseSettings(skeleton="h36m17", units="m", norm=("hip-width", "bbox")))
    gesture_options = dict(pred=g / "scores.npy", gt=g / "gt.npy", label_set=g / "names.txt",
                           split=lay.split("widar"), groups=g / "groups.npy", train_gt=g / "train_gt.npy",
                           train_groups=g / "train_groups.npy", out=g / "report.json")
    return DemoInputs(lay, facts, pose_options, gesture_options)
