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

import contextlib
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from rfbench.errors import OutputExistsError, ValidationError

__all__ = ["SIZES", "STEPS", "MARKER", "DemoLayout", "DemoInputs", "prepare_folder", "demo_folder", "build_inputs",
           "ridge_fit", "nearest_centroid_scores"]

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

#: What the demo writes at the top of its folder (it writes nothing anywhere else).
_OWNED = ("data", "archives", "pose", "gesture", "widar-manifest.json", "mmfi-manifest.json", "widar-split.json",
          "mmfi-split.json")

#: The file in the demo folder listing every file and folder the demo created there; ``--force`` removes
#: exactly those (:func:`prepare_folder`).
MARKER = "RFBENCH_DEMO.json"
_MARKER_SCHEMA = "rfbench.demo-files/1"

_DATE = r"\d{8}(?:_\d+)?"
_MMFI = r"data/mmfi/E\d\d/S\d\d/A\d\d"
#: Every path (relative, "/"-separated) the demo writes in its folder. A folder without :data:`MARKER` (written
#: by an older rfbench) is cleared by ``--force`` only when every entry in it matches one of these.
_DEMO_PATH = re.compile("|".join(f"(?:{p})" for p in (
    r"data", r"data/(?:widar|mmfi)", r"data/(?:widar|mmfi)/RFBENCH_SYNTHETIC\.json", r"data/widar/CSI",
    rf"data/widar/CSI/{_DATE}", rf"data/widar/CSI/{_DATE}/user\d+", rf"data/widar/CSI/{_DATE}/user\d+/"
    r"user\d+(?:-\d+){4}-r\d+\.dat",
    r"data/mmfi/E\d\d", r"data/mmfi/E\d\d/S\d\d", _MMFI, rf"{_MMFI}/ground_truth\.npy", rf"{_MMFI}/wifi-csi",
    rf"{_MMFI}/wifi-csi/frame\d{{3}}\.mat",
    r"archives", r"archives/widar", rf"archives/widar/{_DATE}", rf"archives/widar/{_DATE}/user\d+",
    rf"archives/widar/{_DATE}/user\d+/user\d+(?:-\d+){{4}}-r\d+\.npz",
    r"pose", r"pose/(?:pred|gt|groups|train_gt|train_groups)\.npy", r"gesture",
    r"gesture/(?:scores|gt|groups|train_gt|train_groups)\.npy", r"gesture/names\.txt",
    r"(?:pose|gesture)/report\.(?:json|md)", r"(?:pose|gesture)/report-[a-z]+\.png",
    r"(?:widar|mmfi)-(?:manifest|split)\.json", re.escape(MARKER))))
_TEMPORARY = re.compile(r"^\.(.+)\.[A-Za-z0-9_]{8}\.tmp$")  # atomic_write's, left by a killed run


def _is_demo_path(rel: str) -> bool:
    """Whether the demo writes ``rel`` (or a temporary file of it)."""
    head, _, last = rel.rpartition("/")
    m = _TEMPORARY.match(last)
    if m:
        rel = f"{head}/{m.group(1)}" if head else m.group(1)
    return _DEMO_PATH.fullmatch(rel) is not None


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
    """What :func:`build_inputs` made: the layout, per-step facts for the summary, and the score options."""

    layout: DemoLayout
    facts: dict = field(default_factory=dict)
    pose_options: dict = field(default_factory=dict)
    gesture_options: dict = field(default_factory=dict)


def prepare_folder(root: str | os.PathLike, force: bool = False) -> DemoLayout:
    """Check (and with ``force`` clear) the demo folder; nothing the demo did not write is ever removed.

    An existing non-empty folder is refused unless ``force``. With ``force``:

    - when the folder holds :data:`MARKER` (every demo run writes it, see :func:`demo_folder`), exactly the
      files it lists are removed, then the folders it lists that are now empty; anything else stays, also
      inside the demo's folders (``data/my_real_dataset.csv``). A marker listing a path the demo never writes,
      or one outside the folder, is refused;
    - without a marker (a folder from an older rfbench), the folder is cleared only when every entry in it,
      at any depth, is one of the demo's own names; otherwise it is refused, naming the first foreign entry.

    Raises
    ------
    OutputExistsError
        ``root`` is a file; a non-empty folder without ``force``; a foreign entry in a folder without marker.
    FormatError
        The marker is not the demo's (unreadable, or it lists a path the demo does not write).
    """
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise OutputExistsError(f"{root} exists and is not a folder; choose another --out")
    if root.exists() and any(root.iterdir()):
        if not force:
            raise OutputExistsError(f"{root} is not empty; pass --force to replace the demo's files there, or "
                                    f"choose another --out")
        if (root / MARKER).exists() or (root / MARKER).is_symlink():
            files, folders = _read_marker(root)
            _remove_listed(root, files, folders)
        else:
            foreign = _first_foreign(root)
            if foreign is not None:
                raise OutputExistsError(
                    f"{root} holds {foreign}, which rfbench demo did not write (and no {MARKER} lists the demo's "
                    f"files there); --force replaces only the demo's own files: move it, or choose another --out")
            for name in _OWNED:  # every entry below is a demo name and none is a link
                p = root / name
                if p.is_dir():
                    shutil.rmtree(p)
                elif p.exists():
                    p.unlink()
    root.mkdir(parents=True, exist_ok=True)
    return DemoLayout(root)


@contextlib.contextmanager
def demo_folder(root: str | os.PathLike, force: bool = False):
    """:func:`prepare_folder`, then yield the layout; on leaving (after an error too) write :data:`MARKER`
    listing every file and folder created in between (and only paths the demo writes)."""
    lay = prepare_folder(root, force)
    before = _entries(lay.root)
    try:
        yield lay
    except BaseException:
        with contextlib.suppress(Exception):  # the run's own error is the one to report
            _write_marker(lay.root, before)
        raise
    _write_marker(lay.root, before)


def _first_foreign(root: Path) -> str | None:
    """The first entry under ``root`` (top level first, then depth first) the demo does not write, or None."""
    pending = [""]
    while pending:
        prefix = pending.pop(0)
        with os.scandir(root / prefix if prefix else root) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            rel = f"{prefix}{e.name}"
            if e.is_symlink() or not _is_demo_path(rel):
                return rel
            if e.is_dir(follow_symlinks=False):
                pending.append(rel + "/")
    return None


def _entries(root: Path) -> dict[str, bool]:
    """``{relative path: is a folder}`` of everything under the demo's top-level names (links not followed)."""
    out: dict[str, bool] = {}
    for name in _OWNED:
        top = root / name
        if top.is_symlink() or not top.exists():
            continue
        out[name] = top.is_dir()
        if top.is_dir():
            for folder, dirs, files in os.walk(top):
                rel = Path(folder).relative_to(root).as_posix()
                for d in dirs:
                    out[f"{rel}/{d}"] = not os.path.islink(os.path.join(folder, d))
                for f in files:
                    out[f"{rel}/{f}"] = False
    return out


def _write_marker(root: Path, before: dict[str, bool]) -> None:
    from rfbench.io.files import write_json

    now = _entries(root)
    created = {rel: is_dir for rel, is_dir in now.items() if rel not in before and _is_demo_path(rel)}
    write_json(root / MARKER, {
        "schema": _MARKER_SCHEMA,
        "about": "Written by rfbench demo: the files and folders it created in this folder. `rfbench demo --force` "
                 "removes exactly these (folders only when empty) and leaves everything else alone.",
        "files": sorted(rel for rel, is_dir in created.items() if not is_dir),
        "folders": sorted(rel for rel, is_dir in created.items() if is_dir),
    }, force=True)


def _read_marker(root: Path) -> tuple[list[str], list[str]]:
    from rfbench.errors import FormatError
    from rfbench.io.files import parse_json_text, read_input_bytes

    path = root / MARKER
    if path.is_symlink() or not path.is_file():
        raise FormatError(f"{path} is not the demo's file list (not a plain file); remove it, or choose another "
                          "--out")
    data = read_input_bytes(path, "demo file list")
    if len(data) > 64 * 1024 * 1024:
        raise FormatError(f"{path} is too large to be the demo's file list")
    try:
        doc = parse_json_text(data.decode("utf-8"), str(path))
    except UnicodeDecodeError:
        raise FormatError(f"{path}: not UTF-8 text") from None
    if not isinstance(doc, dict) or doc.get("schema") != _MARKER_SCHEMA:
        raise FormatError(f"{path} is not the demo's file list (schema {_MARKER_SCHEMA!r} expected)")
    lists = []
    for key in ("files", "folders"):
        entries = doc.get(key)
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise FormatError(f"{path}: {key!r} must be a list of paths")
        for e in entries:
            parts = e.split("/")
            if e.startswith("/") or "\\" in e or any(p in ("", ".", "..") for p in parts) or not _is_demo_path(e):
                raise FormatError(f"{path} lists {e!r}, which is not a path rfbench demo writes; --force refuses "
                                  "to use this list: remove it, or choose another --out")
        lists.append(entries)
    return lists[0], lists[1]


def _inside(root: Path, rel: str) -> bool:
    """No folder on the way from ``root`` to ``rel`` is a link (so removing ``rel`` stays inside ``root``)."""
    here = root
    for part in rel.split("/")[:-1]:
        here = here / part
        if here.is_symlink() or not here.is_dir():
            return False
    return True


def _remove_listed(root: Path, files: list[str], folders: list[str]) -> None:
    for rel in files:
        p = root / rel
        if _inside(root, rel) and (p.is_symlink() or p.is_file()):
            p.unlink()
    for rel in sorted(folders, key=lambda r: r.count("/"), reverse=True):
        p = root / rel
        if _inside(root, rel) and p.is_dir() and not p.is_symlink():
            with contextlib.suppress(OSError):  # not empty: it holds something the demo did not write
                p.rmdir()
    (root / MARKER).unlink()


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
    root : path-like or DemoLayout
        The demo folder (see :func:`prepare_folder`). Paths in the returned options start with it, as given,
        so the recorded command lines work from the current folder. A :class:`DemoLayout` is a folder already
        prepared by :func:`demo_folder` (which records what the whole run writes); a path is prepared here and
        its :data:`MARKER` written when this returns.
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
    if size not in SIZES:
        raise ValidationError(f"unknown demo size {size!r}; choose {' or '.join(SIZES)}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValidationError(f"the demo seed must be an integer >= 0, got {seed!r}")
    step = step or (lambda name: None)
    advance = advance or (lambda n=1: None)
    if isinstance(root, DemoLayout):
        return _build_inputs(root, size, seed, step, advance)
    with demo_folder(root, force) as lay:
        return _build_inputs(lay, size, seed, step, advance)


def _build_inputs(lay: DemoLayout, size: str, seed: int, step, advance) -> DemoInputs:
    from rfbench.datasets import mmfi, widar
    from rfbench.datasets.manifest import read_manifest
    from rfbench.datasets.synthetic import make_mmfi_tree, make_widar_tree
    from rfbench.io import parse_files
    from rfbench.io.files import write_text
    from rfbench.io.matv5 import read_mat

    cfg = SIZES[size]
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

    pose_options = dict(task="pose", pred=p / "pred.npy", gt=p / "gt.npy", skeleton="h36m17", units="m",
                        norm="hip-width,bbox", split=lay.split("mmfi"), groups=p / "groups.npy",
                        train_gt=p / "train_gt.npy", train_groups=p / "train_groups.npy", out=p / "report.json")
    gesture_options = dict(task="gesture", pred=g / "scores.npy", gt=g / "gt.npy", label_set=g / "names.txt",
                           split=lay.split("widar"), groups=g / "groups.npy", train_gt=g / "train_gt.npy",
                           train_groups=g / "train_groups.npy", out=g / "report.json")
    return DemoInputs(lay, facts, pose_options, gesture_options)
