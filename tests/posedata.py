"""Seeded synthetic poses for the metric and report tests: plausible coco17 (2D) and h36m17 (3D) bodies."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

# A standing person, coco17 order, metres, y down. Box: x -0.45..0.45 (w 0.9), y 0..1.2 (h 1.2): diagonal 1.5.
COCO_TEMPLATE = np.array([
    [0.00, 0.05],                  # nose
    [0.02, 0.00], [-0.02, 0.00],   # eyes
    [0.05, 0.02], [-0.05, 0.02],   # ears
    [0.15, 0.20], [-0.15, 0.20],   # shoulders
    [0.30, 0.35], [-0.30, 0.35],   # elbows
    [0.45, 0.50], [-0.45, 0.50],   # wrists
    [0.10, 0.60], [-0.10, 0.60],   # hips: hip width 0.2
    [0.10, 0.90], [-0.10, 0.90],   # knees
    [0.10, 1.20], [-0.10, 1.20],   # ankles
])

# A standing person, h36m17 order, metres, y up. Joint 0 is exactly the midpoint of joints 1 and 4.
H36M_TEMPLATE = np.array([
    [0.00, 0.95, 0.00],    # root
    [-0.13, 0.95, 0.00],   # right_hip
    [-0.13, 0.50, 0.02],   # right_knee
    [-0.13, 0.08, 0.00],   # right_foot
    [0.13, 0.95, 0.00],    # left_hip
    [0.13, 0.50, 0.02],    # left_knee
    [0.13, 0.08, 0.00],    # left_foot
    [0.00, 1.20, 0.00],    # spine
    [0.00, 1.45, 0.00],    # thorax
    [0.00, 1.55, 0.00],    # neck_base
    [0.00, 1.70, 0.00],    # head
    [0.18, 1.45, 0.00],    # left_shoulder
    [0.25, 1.20, 0.00],    # left_elbow
    [0.30, 0.95, 0.05],    # left_wrist
    [-0.18, 1.45, 0.00],   # right_shoulder
    [-0.25, 1.20, 0.00],   # right_elbow
    [-0.30, 0.95, 0.05],   # right_wrist
])


def coco_poses(n, seed=0, jitter=0.01, scale=1.0):
    """(n, 17, 2) plausible coco17 poses: the template shifted, scaled a little and jittered."""
    rng = np.random.default_rng(seed)
    shift = rng.uniform(-1, 1, size=(n, 1, 2))
    s = rng.uniform(0.8, 1.2, size=(n, 1, 1)) * scale
    return COCO_TEMPLATE[None] * s + shift + rng.normal(scale=jitter, size=(n, 17, 2))


def h36m_poses(n, seed=0, jitter=0.01):
    """(n, 17, 3) plausible h36m17 poses: the template turned about the vertical axis, shifted, jittered."""
    rng = np.random.default_rng(seed)
    ang = rng.uniform(0, 2 * np.pi, size=n)
    c, s = np.cos(ang), np.sin(ang)
    rot = np.zeros((n, 3, 3))
    rot[:, 0, 0], rot[:, 0, 2], rot[:, 1, 1], rot[:, 2, 0], rot[:, 2, 2] = c, s, 1.0, -s, c
    out = np.einsum("nij,kj->nki", rot, H36M_TEMPLATE) + rng.uniform(-2, 2, size=(n, 1, 3))
    return out + rng.normal(scale=jitter, size=out.shape)


def write_manifest(path, ids, *, subjects=None, synthetic=False, frames=10, extra=None):
    """A manifest (``rfbench.manifest/1``) listing ``ids``, each with a subject (default: its own, ``s-<id>``)."""
    subjects = subjects or {}
    recs = [{"id": i, "subject": subjects.get(i, f"s-{i}"), "files": [], "frames": frames, **((extra or {}).get(i, {}))}
            for i in sorted(ids)]
    doc = {"schema": "rfbench.manifest/1", "dataset": "test", "root": ".", "problems": [], "recordings": recs,
           "synthetic": bool(synthetic)}
    Path(path).write_text(json.dumps(doc))
    return Path(path)


def write_split(path, train, test, *, passed=True, leakage_prone=False, synthetic=False, subjects=None,
                manifest_name="manifest.json", extra=None):
    """A real rfbench split of a manifest written beside it (``manifest_name``) whose sides are ``train`` and
    ``test``: cross-subject holding out the test recordings' subjects, or — ``leakage_prone`` — ``random`` with
    the first seed that draws exactly ``test``. ``passed=False`` then moves a test recording onto the train side
    as well, as a hand edit would (score refuses it: its sides are not what the protocol gives)."""
    from rfbench.io.files import sha256_file
    from rfbench.protocols.split import make_splits

    path = Path(path)
    subjects = dict(subjects or {})
    ids = list(train) + list(test)
    mpath = write_manifest(path.parent / manifest_name, ids, subjects=subjects, synthetic=synthetic, extra=extra)
    ref = {"path": manifest_name, "sha256": sha256_file(mpath)[0]}
    if leakage_prone:
        for seed in range(100_000):
            (out,) = make_splits(mpath, "random", manifest_ref=ref, seed=seed, allow_leaky=True,
                                 test_fraction=len(test) / len(ids))
            if set(out.document["test"]) == set(test):
                break
        else:  # pragma: no cover
            raise AssertionError("no seed draws this test side")
    else:
        held = sorted({subjects.get(i, f"s-{i}") for i in test})
        (out,) = make_splits(mpath, "cross-subject", manifest_ref=ref, test=held)
    doc = out.document
    assert set(doc["train"]) == set(train) and set(doc["test"]) == set(test), doc
    if not passed:
        doc = dict(doc, train=sorted(doc["train"] + [doc["test"][0]]))
    path.write_text(json.dumps(doc))
    return path


def pose_files(folder, *, n_test=60, n_train=80, seed=0, noise=0.03, recs_test=("r5", "r6", "r7"),
               recs_train=("r1", "r2", "r3", "r4"), int_ids=False):
    """Write pred/gt/vis/groups/train files and a passing split into ``folder``; return their paths."""
    folder = Path(folder)
    rng = np.random.default_rng(seed)
    gt = coco_poses(n_test, seed=seed + 1)
    pred = gt + rng.normal(scale=noise, size=gt.shape)
    vis = rng.random((n_test, 17)) > 0.1
    vis[:, :5] = True  # faces visible, so the layout check has frames to look at
    train = coco_poses(n_train, seed=seed + 2)
    groups = np.array([recs_test[i % len(recs_test)] for i in range(n_test)])
    train_groups = np.array([recs_train[i % len(recs_train)] for i in range(n_train)])
    if int_ids:
        groups = np.array([int(g[1:]) for g in groups])
        train_groups = np.array([int(g[1:]) for g in train_groups])
    paths = {}
    for name, arr in (("pred", pred), ("gt", gt), ("vis", vis), ("groups", groups), ("train_gt", train),
                      ("train_groups", train_groups)):
        paths[name] = folder / f"{name}.npy"
        np.save(paths[name], arr)
    ids_train = [str(int(g[1:])) if int_ids else g for g in recs_train]
    ids_test = [str(int(g[1:])) if int_ids else g for g in recs_test]
    paths["split"] = write_split(folder / "split.json", ids_train, ids_test)
    return paths
