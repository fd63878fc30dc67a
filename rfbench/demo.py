"""The whole pipeline on generated data: what ``rfbench demo`` runs (everything it makes is SYNTHETIC).

:func:`build_inputs` generates a Widar3.0-like tree of real bfee logs and an MM-Fi-like tree, parses the
Widar logs to CSI archives, ingests both trees, splits them (``cross-room`` holding out room 3;
``mmfi-s2``, MM-Fi's cross-subject setting), writes both sides' model inputs straight from the dataset files
(``rfbench windows``), and trains two simple, honest predictors on the **train side only**:

- pose (MM-Fi-like): ridge regression from each WiFi frame's mean CSI amplitude per antenna and subcarrier
  (3 × 114 = 342 features, standardised with training statistics) to the 17 × 3 joint coordinates;
- gesture (Widar-like): nearest class centroid on each recording's mean CSI amplitude per receiver, antenna
  and subcarrier (6 × 30 × 3 = 540 features, every receiver resampled to :data:`GESTURE_PACKETS` packets),
  with Gaussian class scores (classes absent from training score 0).

Both models are exported to ONNX and run over the test windows by ``rfbench predict`` (or, without
onnxruntime, in NumPy), and :func:`build_inputs` returns the arguments of
:func:`rfbench.report.score.score_pose` and :func:`~rfbench.report.score.score_gesture` that score the
predictions against ground truth read from the dataset (``--rows``): each report records the command a user can
type, its chain runs from the dataset files through the model to the numbers, and ``rfbench verify`` replays it.

A third corpus is Widar3.0's BVP release, generated (:mod:`rfbench.datasets.synthetic_bvp`): ingested by
``rfbench ingest widar``, split ``cross-location`` (location 3 held out) on the six common gestures, each
recording's velocity profile padded to the train side's longest T, and a nearest class centroid on the mean
velocity grid over time (400 features) scored beside the majority class. Its profiles carry the gesture, so the
model beats the baseline.

The generated Widar-like CSI is random (the encoder draws it without any gesture in it), so the gesture
classifier can only match its baselines by chance: an honest pipeline shows exactly that. The MM-Fi-like CSI
amplitudes are a fixed linear function of the pose plus noise, so the pose model beats the mean pose. Neither
says anything about real WiFi sensing.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from rfbench.errors import OutputExistsError, ValidationError

__all__ = ["SIZES", "STEPS", "MARKER", "DemoLayout", "DemoInputs", "prepare_folder", "demo_folder", "build_inputs",
           "run_demo", "ridge_fit", "nearest_centroid_scores"]

#: Corpus sizes. ``standard`` is the default; ``tiny`` keeps the test suite fast.
SIZES = {
    "standard": {"widar_records": (24, 48), "mmfi_subjects": ("S01", "S02", "S03", "S05", "S10", "S11", "S12", "S15",
                                                              "S21", "S25", "S31", "S35"),
                 "mmfi_actions": ("A01", "A02", "A03", "A13"), "mmfi_frames": 10, "bvp_frames": (4, 20)},
    "tiny": {"widar_records": (6, 10), "mmfi_subjects": ("S01", "S02", "S05", "S11", "S15"),
             "mmfi_actions": ("A02", "A13"), "mmfi_frames": 4, "bvp_frames": (2, 4)},
}

#: The steps of a demo run, in order (``rfbench demo`` shows them as progress).
STEPS = ("generate corpora", "parse Widar logs", "ingest", "split", "windows", "train pose model",
         "train gesture model", "predict", "score pose", "score gesture", "score BVP", "robustness", "verify")

#: The demo's robustness sweep of its pose model: these corruptions at these severities, seed 0, scored by
#: PCK@0.20 hip-width (the report ``pose/pck20.json`` it is like).
SWEEP_CORRUPTIONS = ("noise", "dead-antenna")
SWEEP_SEVERITIES = "1,3"
#: The BVP run's split: Widar3.0's cross-location protocol, location 3 held out, on the six common gestures.
BVP_TEST_LOCATION = "3"

#: Packets every Widar-like receiver is resampled to for the gesture model's one window per recording.
GESTURE_PACKETS = 32
#: How to get onnxruntime when the predict step is skipped.
ONNX_HINT = "onnxruntime is not installed: pip install 'rfbench[onnx]'"

#: Ridge penalty of the pose model, fixed in advance (no tuning on the test side).
RIDGE_PENALTY = 10.0

#: What the demo writes at the top of its folder (it writes nothing anywhere else).
_OWNED = ("data", "archives", "windows", "pose", "gesture", "bvp", "widar-manifest.json", "mmfi-manifest.json",
          "bvp-manifest.json", "widar-split.json", "mmfi-split.json", "bvp-split.json")

#: The file in the demo folder listing every file and folder the demo created there, each file with its size
#: and sha256; ``--force`` removes exactly those, and only while every one is unchanged (:func:`prepare_folder`).
MARKER = "RFBENCH_DEMO.json"
_MARKER_SCHEMA = "rfbench.demo-files/2"
#: The list's schema before it recorded sizes and hashes: refused by ``--force`` (nothing tells its files apart
#: from a user's written at the same names).
_OLD_MARKER_SCHEMA = "rfbench.demo-files/1"

_DATE = r"\d{8}(?:_\d+)?"
_MMFI = r"data/mmfi/E\d\d/S\d\d/A\d\d"
_CELL = r"pose/robustness/(?:clean|cells/[a-z-]+-\d-seed\d+)"
#: Every path (relative, "/"-separated) the demo writes in its folder; a :data:`MARKER` listing anything else is
#: refused. (The names copy the MM-Fi and Widar3.0 releases' layouts, so a name says nothing about who wrote the
#: file: only the list, with each file's size and sha256, does.)
_DEMO_PATH = re.compile("|".join(f"(?:{p})" for p in (
    r"data", r"data/(?:widar|mmfi)", r"data/(?:widar|mmfi)/RFBENCH_SYNTHETIC\.json", r"data/widar/CSI",
    rf"data/widar/CSI/{_DATE}", rf"data/widar/CSI/{_DATE}/user\d+", rf"data/widar/CSI/{_DATE}/user\d+/"
    r"user\d+(?:-\d+){4}-r\d+\.dat",
    r"data/bvp", r"data/bvp/(?:BVP/)?RFBENCH_SYNTHETIC\.json", r"data/bvp/BVP", r"data/bvp/BVP/\d{8}-VS",
    r"data/bvp/BVP/\d{8}-VS/6-link", r"data/bvp/BVP/\d{8}-VS/(?:6-link/)?user\d+",
    r"data/bvp/BVP/\d{8}-VS/(?:6-link/)?user\d+/user\d+(?:-\d+){4}-[0-9e.-]+-L\d+\.mat",
    r"data/mmfi/E\d\d", r"data/mmfi/E\d\d/S\d\d", _MMFI, rf"{_MMFI}/ground_truth\.npy", rf"{_MMFI}/wifi-csi",
    rf"{_MMFI}/wifi-csi/frame\d{{3}}\.mat",
    r"archives", r"archives/widar", rf"archives/widar/{_DATE}", rf"archives/widar/{_DATE}/user\d+",
    rf"archives/widar/{_DATE}/user\d+/user\d+(?:-\d+){{4}}-r\d+\.npz",
    r"windows", r"windows/(?:mmfi|widar|bvp)-(?:train|test)",
    r"windows/(?:mmfi|widar|bvp)-(?:train|test)/(?:X\.npy|y\.npy|index\.json)",
    r"bvp", r"bvp/scores\.(?:npy|json)", r"bvp/centroid\.onnx", r"bvp/report\.(?:json|md)", r"bvp/report-[a-z]+\.png",
    r"pose", r"pose/(?:pred|gt|groups|train_gt|train_groups)\.npy", r"pose/pred\.json", r"pose/ridge\.onnx", r"gesture",
    r"gesture/(?:scores|gt|groups|train_gt|train_groups)\.npy", r"gesture/scores\.json", r"gesture/centroid\.onnx",
    r"gesture/names\.txt",
    r"(?:pose|gesture)/report\.(?:json|md)", r"(?:pose|gesture)/report-[a-z]+\.png",
    r"(?:widar|mmfi|bvp)-(?:manifest|split)\.json", re.escape(MARKER),
    r"pose/pck20\.(?:json|md)", r"pose/robustness", r"pose/robustness/(?:summary\.json|robustness-[a-z-]+\.png|cells)",
    rf"{_CELL}", rf"{_CELL}/(?:report\.(?:json|md)|pred\.(?:npy|json)|windows)",
    rf"{_CELL}/windows/(?:X\.npy|y\.npy|index\.json)")))
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

    def windows(self, name: str, side: str) -> Path:
        return self.root / "windows" / f"{name}-{side}"

    @property
    def pose(self) -> Path:
        return self.root / "pose"

    @property
    def gesture(self) -> Path:
        return self.root / "gesture"

    @property
    def bvp_tree(self) -> Path:
        return self.root / "data" / "bvp"

    @property
    def bvp(self) -> Path:
        return self.root / "bvp"


@dataclass
class DemoInputs:
    """What :func:`build_inputs` made: the layout, per-step facts for the summary, and the keyword arguments of
    :func:`rfbench.report.score.score_pose` and :func:`~rfbench.report.score.score_gesture` that score them."""

    layout: DemoLayout
    facts: dict = field(default_factory=dict)
    pose_options: dict = field(default_factory=dict)
    gesture_options: dict = field(default_factory=dict)
    bvp_options: dict = field(default_factory=dict)


def prepare_folder(root: str | os.PathLike, force: bool = False) -> DemoLayout:
    """Check (and with ``force`` clear) the demo folder; nothing the demo did not write is ever removed.

    An existing non-empty folder is refused unless ``force``. With ``force``, the folder must hold
    :data:`MARKER` (every demo run writes it, see :func:`demo_folder`): every file it lists that is still there
    is checked first (a regular file of the recorded size and sha256), then exactly those files are removed,
    then the folders it lists that are now empty; anything else stays, also inside the demo's folders
    (``data/my_real_dataset.csv``). A non-empty folder without it is refused whatever its names (the demo's
    trees copy the real releases' layouts), and so is a list that records no sizes and hashes (an older
    rfbench's), one listing a path the demo never writes or one outside the folder, and a listed file that
    changed (or is now a link or anything but a file): nothing is removed then.

    Raises
    ------
    OutputExistsError
        ``root`` is a file; a non-empty folder without ``force``, or without :data:`MARKER`; a list without
        sizes and hashes; a listed file that changed; a listed folder that is a link.
    FormatError
        The marker is not the demo's (unreadable, or it lists a path the demo does not write).
    """
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise OutputExistsError(f"{root} exists and is not a folder; choose another `out`")
    if root.exists() and any(root.iterdir()):
        if not force:
            why = " (it holds an interrupted demo run: its outputs are partial)" if _stopped(root) else ""
            raise OutputExistsError(f"{root} is not empty{why}; pass `force` to replace the demo's files there, or "
                                    f"choose another `out`")
        if not ((root / MARKER).exists() or (root / MARKER).is_symlink()):
            raise OutputExistsError(f"{root} is not empty and holds no {MARKER} (the list of the files an earlier "
                                    "demo wrote there), so --force cannot tell the demo's files from yours; it is "
                                    "left alone: choose an empty or new `out`")
        files, folders, contents = _read_marker(root)
        _refuse_links(root, files, folders)
        _refuse_changed(root, files, contents)
        _remove_listed(root, files, folders)
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
    except BaseException as exc:
        with contextlib.suppress(Exception):  # the run's own error is the one to report
            _write_marker(lay.root, before, stopped=type(exc).__name__)
        raise
    _write_marker(lay.root, before)


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


def _write_marker(root: Path, before: dict[str, bool], stopped: str | None = None) -> None:
    """The list of what the run created; ``stopped``: the run did not finish (the exception that stopped it:
    ``KeyboardInterrupt`` for Ctrl-C or SIGTERM), and the list says so (``complete``: false), so an interrupted
    folder does not read as a finished demo."""
    from rfbench.io.files import write_json

    now = _entries(root)
    created = {rel: is_dir for rel, is_dir in now.items() if rel not in before and _is_demo_path(rel)}
    files = sorted(rel for rel, is_dir in created.items() if not is_dir)
    contents = {}
    for rel in files:
        fingerprint = _fingerprint(root / rel)
        if fingerprint is not None:  # (a link or a vanished file: not the demo's, never removed as one)
            contents[rel] = fingerprint
    write_json(root / MARKER, {
        "schema": _MARKER_SCHEMA,
        "about": "Written by rfbench demo: the files and folders it created in this folder, each file's size and "
                 "sha256 in `contents`. `rfbench demo --force` removes exactly these (folders only when empty), "
                 "refuses when a listed file changed, and leaves everything else alone.",
        "complete": stopped is None,
        **({"stopped_by": stopped, "note": "this run did not finish: its outputs are partial; `rfbench demo "
                                           "--force` replaces them"} if stopped else {}),
        "files": sorted(contents),
        "folders": sorted(rel for rel, is_dir in created.items() if is_dir),
        "contents": contents,
    }, force=True)


def _fingerprint(path: Path) -> dict | None:
    """``{"size", "sha256"}`` of the regular file at ``path`` (:func:`rfbench.io.files.own_file_digest`)."""
    from rfbench.io.files import own_file_digest

    return own_file_digest(path)


def _stopped(root: Path) -> bool:
    """Whether ``root``'s marker says its run did not finish (False when it cannot be read: the run's checks
    say what is wrong with it)."""
    import json

    from rfbench.errors import RfbenchError
    from rfbench.io.files import read_regular

    try:  # (no link followed, never a FIFO's wait, at most 1 MiB)
        return json.loads(read_regular(root / MARKER, 1 << 20, "the demo file list")).get("complete") is False
    except (OSError, ValueError, AttributeError, RfbenchError):
        return False


def _read_marker(root: Path) -> tuple[list[str], list[str], dict[str, dict]]:
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
    if isinstance(doc, dict) and doc.get("schema") == _OLD_MARKER_SCHEMA:
        raise OutputExistsError(f"{path} was written by an older rfbench and records no sizes or hashes, so --force "
                                "cannot tell the demo's files from yours written at the same names; it is left "
                                "alone: remove the folder yourself, or choose another `out`")
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
                raise FormatError(f"{path} lists {e!r}, which is not a path rfbench demo writes; `force` refuses "
                                  "to use this list: remove it, or choose another `out`")
        lists.append(entries)
    contents = doc.get("contents")
    if not isinstance(contents, dict) or set(contents) != set(lists[0]) or not all(
            isinstance(c, dict) and set(c) == {"size", "sha256"} and type(c["size"]) is int and c["size"] >= 0
            and isinstance(c["sha256"], str) and re.fullmatch(r"[0-9a-f]{64}", c["sha256"])
            for c in contents.values()):
        raise FormatError(f"{path}: 'contents' must give each listed file's size and sha256; `force` refuses to "
                          "use this list: remove it, or choose another `out`")
    return lists[0], lists[1], contents


def _refuse_changed(root: Path, files: list[str], contents: dict[str, dict]) -> None:
    """Refuse (before anything is removed) a listed file that is not the one the demo wrote: another size or
    sha256, a link, anything but a regular file. A listed file no longer there is fine (nothing to remove)."""
    for rel in files:
        p = root / rel
        if not (p.exists() or p.is_symlink()):
            continue
        if not _inside(root, rel) or _fingerprint(p) != contents[rel]:
            raise OutputExistsError(f"{p} changed since rfbench demo wrote it (its size or sha256 is not the one "
                                    f"{MARKER} records), so it may be yours; --force removes nothing: move it, or "
                                    "choose another `out`")


def _inside(root: Path, rel: str) -> bool:
    """No folder on the way from ``root`` to ``rel`` is a link (so removing ``rel`` stays inside ``root``)."""
    here = root
    for part in rel.split("/")[:-1]:
        here = here / part
        if here.is_symlink() or not here.is_dir():
            return False
    return True


def _refuse_links(root: Path, files: list[str], folders: list[str]) -> None:
    """Refuse (before anything is removed) a listed folder, or a folder on the way to a listed path, that is a
    link now: the demo never writes one, :func:`_remove_listed` would leave what lies behind it, and the run
    would then stop on the first of its files it meets."""
    for rel, is_folder in [(f, False) for f in files] + [(f, True) for f in folders]:
        parts = rel.split("/")
        here = root
        for part in parts if is_folder else parts[:-1]:
            here = here / part
            if here.is_symlink():
                raise OutputExistsError(f"{here} is a link, which rfbench demo never writes; --force does not "
                                        "remove it or what it points to: move it, or choose another `out`")


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
    solve ``(XᵀX + penalty·I) W = XᵀY`` (:func:`rfbench.nn.onnx_export.fit_ridge`, which also exports it).
    """
    from rfbench.nn.onnx_export import fit_ridge, ridge_apply

    params = fit_ridge(x_train, y_train, penalty)
    return lambda x: ridge_apply(params, x)


def nearest_centroid_scores(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, n_classes: int) -> np.ndarray:
    """Class scores ``(test rows, n_classes)`` of a nearest-centroid classifier (features standardised with the
    training rows' statistics; :func:`rfbench.nn.onnx_export.centroid_scores` gives the scores)."""
    from rfbench.nn.onnx_export import centroid_scores, fit_nearest_centroid

    return centroid_scores(fit_nearest_centroid(x_train, y_train, n_classes), x_test)


def _write_split(manifest_path: Path, split_path: Path, protocol: str, **kwargs) -> dict:
    from rfbench.protocols.split import write_splits

    ((_, outcome),) = write_splits(manifest_path, protocol, split_path, **kwargs)
    outcome.audit.raise_if_failed()
    return outcome.document


def _read_index(folder: Path) -> dict:
    from rfbench.io.files import read_json

    return read_json(folder / "index.json", "windows")


def _rows(folder: Path) -> int:
    return len(_read_index(folder)["rows"])


def _side_arrays(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """X (memory-mapped) and y of a windows folder."""
    return np.load(folder / "X.npy", mmap_mode="r", allow_pickle=False), np.load(folder / "y.npy", allow_pickle=False)


def _predict(lay: "DemoLayout", ridge, pose_features, centroids, gesture_features, bvp_centroids,
             bvp_features) -> dict:
    """The three models over their test windows: exported to ONNX and run by ``rfbench predict`` (so each
    report's chain runs from the dataset through the model to the numbers) — or, without onnxruntime, in NumPy."""
    from rfbench.nn.onnx_export import centroid_scores, ridge_apply

    pose_test, gesture_test = lay.windows("mmfi", "test"), lay.windows("widar", "test")
    bvp_test = lay.windows("bvp", "test")
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        x, _ = _side_arrays(pose_test)
        _save(lay.pose / "pred.npy", ridge_apply(ridge, pose_features.apply(x)).reshape(len(x), 17, 3))
        x, _ = _side_arrays(gesture_test)
        _save(lay.gesture / "scores.npy", centroid_scores(centroids, gesture_features.apply(x)))
        x, _ = _side_arrays(bvp_test)
        _save(lay.bvp / "scores.npy", centroid_scores(bvp_centroids, bvp_features.apply(x)))
        return {"onnx": False, "note": f"predict skipped: {ONNX_HINT}; the predictions were computed in NumPy"}
    from rfbench.io.files import write_bytes
    from rfbench.nn.onnx_export import nearest_centroid_model, ridge_model
    from rfbench.nn.predict import predict
    from rfbench.nn.prediction_record import write_prediction

    write_bytes(lay.pose / "ridge.onnx", ridge_model(ridge, pose_features, target_shape=(17, 3)))
    write_bytes(lay.gesture / "centroid.onnx", nearest_centroid_model(centroids, gesture_features))
    write_prediction(lay.pose / "pred.npy", predict(lay.pose / "ridge.onnx", pose_test))
    write_prediction(lay.gesture / "scores.npy", predict(lay.gesture / "centroid.onnx", gesture_test))
    write_bytes(lay.bvp / "centroid.onnx", nearest_centroid_model(bvp_centroids, bvp_features))
    write_prediction(lay.bvp / "scores.npy", predict(lay.bvp / "centroid.onnx", bvp_test))
    return {"onnx": True, "models": [str(lay.pose / "ridge.onnx"), str(lay.gesture / "centroid.onnx"),
                                     str(lay.bvp / "centroid.onnx")]}


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
    from rfbench.datasets.synthetic import make_mmfi_tree, make_widar_tree
    from rfbench.io import parse_files

    cfg = SIZES[size]
    facts: dict = {"size": size, "seed": seed}

    step("generate corpora")
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree

    w = make_widar_tree(lay.widar_tree, seed=seed, records=cfg["widar_records"], damage=False)
    b = make_widar_bvp_tree(lay.bvp_tree, seed=seed, frames=cfg["bvp_frames"], damage=False)
    m = make_mmfi_tree(lay.mmfi_tree, seed=seed, subjects=cfg["mmfi_subjects"], actions=cfg["mmfi_actions"],
                       frames=cfg["mmfi_frames"], damage=False)
    facts["generated"] = {"widar": {"recordings": w["recordings"], "files": w["files"]},
                          "mmfi": {"recordings": m["recordings"], "frames": m["recordings"] * cfg["mmfi_frames"]},
                          "bvp": {"recordings": b["recordings"]}}

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
    from rfbench.datasets.widar_bvp import ingest_bvp

    bm = ingest_bvp(lay.bvp_tree, workers=1)
    bm.write(lay.manifest("bvp"))
    facts["ingest"] = {"widar": {"recordings": len(wm.recordings), "problems": len(wm.problems)},
                       "mmfi": {"recordings": len(mm.recordings), "problems": len(mm.problems)},
                       "bvp": {"recordings": len(bm.recordings), "problems": len(bm.problems)}}

    step("split")
    wsplit = _write_split(lay.manifest("widar"), lay.split("widar"), "cross-room", test=["3"])
    msplit = _write_split(lay.manifest("mmfi"), lay.split("mmfi"), "mmfi-s2", actions="p3")
    bsplit = _write_split(lay.manifest("bvp"), lay.split("bvp"), "cross-location", test=[BVP_TEST_LOCATION],
                          gestures="common6")
    facts["split"] = {"widar": {"protocol": "cross-room", "held_out": "room 3", "train": len(wsplit["train"]),
                                "test": len(wsplit["test"])},
                      "mmfi": {"protocol": "mmfi-s2", "held_out": "subjects " + ", ".join(
                          sorted({r.split("/")[1] for r in msplit["test"]})), "train": len(msplit["train"]),
                               "test": len(msplit["test"])},
                      "bvp": {"protocol": "cross-location", "held_out": f"location {BVP_TEST_LOCATION}",
                              "gestures": "common6", "train": len(bsplit["train"]), "test": len(bsplit["test"])}}

    step("windows")
    from rfbench.datasets.windows import WindowSettings, write_windows

    gesture_windows = WindowSettings(resample=GESTURE_PACKETS)
    for name, split_path, settings in (("mmfi", lay.split("mmfi"), None),
                                       ("widar", lay.split("widar"), gesture_windows),
                                       ("bvp", lay.split("bvp"), None)):
        for side in ("train", "test"):
            write_windows(split_path, side, lay.windows(name, side), settings)
    facts["windows"] = {name: {side: _rows(lay.windows(name, side)) for side in ("train", "test")}
                        for name in ("mmfi", "widar", "bvp")}
    facts["windows"]["bvp"]["t_max"] = _read_index(lay.windows("bvp", "train"))["settings"]["t_max"]

    from rfbench.nn.onnx_export import FeatureMap, fit_nearest_centroid, fit_ridge

    step("train pose model")
    lay.pose.mkdir(parents=True, exist_ok=True)
    x, y = _side_arrays(lay.windows("mmfi", "train"))
    pose_features = FeatureMap(row_shape=x.shape[1:], take={0: 0, 1: 0}, mean_axes=(4,))
    ridge = fit_ridge(pose_features.apply(x), y.reshape(len(y), -1), RIDGE_PENALTY)
    facts["pose"] = {"train_frames": int(len(y)), "features": int(ridge.mean.size),
                     "model": f"ridge regression (penalty {RIDGE_PENALTY:g}) on the mean CSI amplitude per antenna "
                              f"and subcarrier"}

    step("train gesture model")
    lay.gesture.mkdir(parents=True, exist_ok=True)
    x, y = _side_arrays(lay.windows("widar", "train"))
    names = _read_index(lay.windows("widar", "train"))["labels"]["names"]
    gesture_features = FeatureMap(row_shape=x.shape[1:], take={2: 0}, mean_axes=(1,))
    centroids = fit_nearest_centroid(gesture_features.apply(x), y, len(names))
    facts["gesture"] = {"train_recordings": int(len(y)), "classes": len(names), "features": int(centroids.mean.size),
                        "model": "nearest class centroid on the mean CSI amplitude per receiver, antenna and "
                                 "subcarrier"}

    lay.bvp.mkdir(parents=True, exist_ok=True)
    x, y = _side_arrays(lay.windows("bvp", "train"))
    names = _read_index(lay.windows("bvp", "train"))["labels"]["names"]
    bvp_features = FeatureMap(row_shape=x.shape[1:], mean_axes=(0,))
    bvp_centroids = fit_nearest_centroid(bvp_features.apply(x), y, len(names))
    facts["bvp"] = {"train_recordings": int(len(y)), "classes": len(names), "features": int(bvp_centroids.mean.size),
                    "model": "nearest class centroid on the mean velocity profile over time (20 × 20)"}

    step("predict")
    facts["predict"] = _predict(lay, ridge, pose_features, centroids, gesture_features, bvp_centroids,
                                bvp_features)

    from rfbench.report.settings import PoseSettings

    pose_options = dict(pred=lay.pose / "pred.npy", rows=lay.windows("mmfi", "test") / "index.json",
                        split=lay.split("mmfi"), out=lay.pose / "report.json",
                        settings=PoseSettings(skeleton="h36m17", units="m", norm=("hip-width", "bbox")))
    gesture_options = dict(pred=lay.gesture / "scores.npy", rows=lay.windows("widar", "test") / "index.json",
                           split=lay.split("widar"), out=lay.gesture / "report.json")
    bvp_options = dict(pred=lay.bvp / "scores.npy", rows=lay.windows("bvp", "test") / "index.json",
                       split=lay.split("bvp"), out=lay.bvp / "report.json")
    return DemoInputs(lay, facts, pose_options, gesture_options, bvp_options)


class _NoProgress:
    def start(self, total):
        pass

    def step(self, name):
        pass

    def detail(self, n=1):
        pass


def run_demo(out: str | os.PathLike, *, force: bool = False, size: str = "standard", seed: int = 0,
             progress=None) -> dict:
    """Run the whole demo: :func:`build_inputs`, both scores (``rfbench score``'s library stage, pictures
    when matplotlib is installed), then ``rfbench verify`` of each report with the demo folder as its root.

    Parameters
    ----------
    out : path-like
        The demo folder.
    force, size, seed
        As :func:`build_inputs`.
    progress : object, optional
        With ``start(total)``, ``step(name)`` and ``detail(n)`` (``rfbench.commands._progress.Bar``).

    Returns
    -------
    dict
        What the command shows and prints with ``--json``: the facts of every step, the reports with their
        headline numbers and verification, the folder's contents and the commands that re-run each step.
    """
    import shlex

    from rfbench.errors import VerificationError
    from rfbench.report.plots import PLOT_HINT, have_matplotlib
    from rfbench.report.score import score_gesture, score_pose
    from rfbench.report.verify import rerun_guard, verify_report

    bar = progress if progress is not None else _NoProgress()
    bar.start(len(STEPS))
    plots = have_matplotlib()
    reports = []
    with demo_folder(out, force) as lay:  # records every file the run writes, for the next --force
        inputs = build_inputs(lay, size=size, seed=seed, step=bar.step, advance=bar.detail)
        for name, task, scorer, options in (("pose", "pose", score_pose, inputs.pose_options),
                                            ("gesture", "gesture", score_gesture, inputs.gesture_options),
                                            ("BVP", "gesture", score_gesture, inputs.bvp_options)):
            bar.step(f"score {name}")
            run = scorer(**options, plots=plots)
            reports.append({"name": name, "task": task, "report": str(run.out), "markdown": str(run.md_path),
                            "pictures": [str(p) for p in run.pictures], "evidence": run.report["evidence"],
                            "argv": run.report["reproducer"]["argv"], "headline": _headline(run.report)})
        bar.step("robustness")
        sweep = _sweep(inputs, plots) if inputs.facts["predict"]["onnx"] else None
    bar.step("verify")

    def check(r: dict) -> dict:
        try:
            v = verify_report(r["report"], root=out)
            return {"status": "match", "compared": v.compared}
        except VerificationError as exc:
            return {"status": "mismatch", "error": str(exc)}

    from concurrent.futures import ThreadPoolExecutor

    # each re-run is its own process; the summary is checked against its cells and every cell re-run (each a
    # report like the others), beside the reports' re-runs
    jobs = reports + ([{"report": sweep["summary"]}] if sweep is not None else [])
    with rerun_guard(), ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        verdicts = list(pool.map(check, jobs))
    for r, v in zip(reports, verdicts):
        r["verify"] = v
    if sweep is not None:
        sweep["verify"] = verdicts[-1]
    lay = inputs.layout
    root = lay.root
    commands = [
        ["rfbench", "parse", str(lay.widar_tree / "CSI"), "-o", str(lay.archives), "--force"],
        ["rfbench", "ingest", "widar", str(lay.widar_tree), "-o", str(lay.manifest("widar")), "--force"],
        ["rfbench", "ingest", "mmfi", str(lay.mmfi_tree), "-o", str(lay.manifest("mmfi")), "--force"],
        ["rfbench", "split", str(lay.manifest("widar")), "--protocol", "cross-room", "--test", "3", "-o",
         str(lay.split("widar")), "--force"],
        ["rfbench", "split", str(lay.manifest("mmfi")), "--protocol", "mmfi-s2", "--actions", "p3", "-o",
         str(lay.split("mmfi")), "--force"],
        ["rfbench", "audit", str(lay.split("mmfi"))],
        ["rfbench", "ingest", "widar", str(lay.bvp_tree), "-o", str(lay.manifest("bvp")), "--force"],
        ["rfbench", "split", str(lay.manifest("bvp")), "--protocol", "cross-location", "--test", BVP_TEST_LOCATION,
         "--gestures", "common6", "-o", str(lay.split("bvp")), "--force"],
    ]
    for name in ("mmfi", "widar", "bvp"):
        for side in ("train", "test"):
            extra = ["--resample", str(GESTURE_PACKETS)] if name == "widar" else []
            commands.append(["rfbench", "windows", str(lay.split(name)), "--side", side, "-o",
                             str(lay.windows(name, side)), *extra, "--force"])
    if inputs.facts["predict"]["onnx"]:
        for model, name, pred in ((lay.pose / "ridge.onnx", "mmfi", lay.pose / "pred.npy"),
                                  (lay.gesture / "centroid.onnx", "widar", lay.gesture / "scores.npy"),
                                  (lay.bvp / "centroid.onnx", "bvp", lay.bvp / "scores.npy")):
            commands.append(["rfbench", "predict", str(model), "--windows", str(lay.windows(name, "test")), "-o",
                             str(pred), "--force"])
    for r in reports:
        commands.append(r["argv"] + ["--force"])
    if sweep is not None:
        commands.append(sweep["like_argv"] + ["--force"])
        commands.append(["rfbench", "robustness", str(lay.pose / "ridge.onnx"), "--split", str(lay.split("mmfi")),
                         "--score-like", str(lay.pose / "pck20.json"), "--corruptions", ",".join(SWEEP_CORRUPTIONS),
                         "--severities", SWEEP_SEVERITIES, "-o", str(lay.pose / "robustness"), "--force"])
        commands.append(["rfbench", "verify", sweep["summary"], "--root", str(root)])
    for r in reports:
        commands.append(["rfbench", "verify", r["report"], "--root", str(root)])
    tree = _tree(Path(root), reports, inputs.facts)
    if sweep is not None:  # after the pose report's rows
        at = max(k for k, (entry, _) in enumerate(tree) if entry.startswith("pose/")) + 1
        tree.insert(at, ("pose/robustness/", "rfbench robustness: summary.json and a report per cell, like "
                                             "pose/pck20.json (PCK@0.20)"))
    return {"out": str(root), "size": size, "seed": seed, "evidence": "SYNTHETIC", "facts": inputs.facts,
            "plots": "written" if plots else f"skipped: {PLOT_HINT}", "reports": reports, "robustness": sweep,
            "commands": [shlex.join(c) for c in commands], "tree": tree}


def _sweep(inputs: "DemoInputs", plots: bool) -> dict:
    """The demo's short robustness sweep of its pose model (:data:`SWEEP_CORRUPTIONS` ×
    :data:`SWEEP_SEVERITIES`), like a PCK@0.20 hip-width report of it (``pose/pck20.json``)."""
    from dataclasses import replace

    from rfbench.report.robustness import run_robustness
    from rfbench.report.robustness_settings import RobustnessSettings
    from rfbench.report.score import score_pose
    from rfbench.report.settings import BootstrapSettings

    lay = inputs.layout
    options = dict(inputs.pose_options, out=lay.pose / "pck20.json",
                   settings=replace(inputs.pose_options["settings"], norm=("hip-width",), k=(0.2,),
                                    metrics=("pck",), averaging=("micro",)),
                   bootstrap=BootstrapSettings(replicates=200))
    like = score_pose(**options)
    settings = RobustnessSettings(corruptions=SWEEP_CORRUPTIONS, severities=SWEEP_SEVERITIES)
    sweep = run_robustness(lay.pose / "ridge.onnx", lay.split("mmfi"), lay.pose / "pck20.json",
                           lay.pose / "robustness", settings, force=True)
    s = sweep.summary
    return {"summary": str(sweep.path), "like_argv": like.report["reproducer"]["argv"],
            "label": s["metric"]["label"], "clean": s["clean"]["model"]["value"],
            "levels": {item["corruption"]: [(lv["severity"], lv["value"]) for lv in item["levels"]]
                       for item in s["corruptions"]},
            "mce_vs_baseline": s["mce_vs_baseline"], "cells": len(s["cells"])}


def _find(report: dict, metric: str, **spec):
    for r in report["results"]:
        if r["metric"] == metric and all(r["spec"].get(k) == v for k, v in spec.items()):
            return r
    return None


def _headline(report: dict) -> list[dict]:
    """A few numbers for the summary: (label, model, interval, baseline name, baseline value)."""
    if report["task"] == "pose":
        picks = [_find(report, "pck", normalization="hip-width", k=0.2, averaging="micro"),
                 _find(report, "mpjpe", averaging="micro")]
    else:
        picks = [_find(report, "accuracy"), _find(report, "macro-f1")]
    out = []
    for r in picks:
        if r is None:
            continue
        ci = (r.get("ci") or {}).get("model") or {}
        out.append({"label": r["label"], "model": r["model"]["value"], "low": ci.get("low"), "high": ci.get("high"),
                    "baseline": (r.get("baseline") or {}).get("value"),
                    "baseline_kind": "mean pose" if report["task"] == "pose" else "majority class"})
    return out


def _tree(root: Path, reports: list, facts: dict) -> list[tuple[str, str]]:
    """What the demo folder holds, ``(entry, what it is)``."""
    rows = [
        ("data/widar/CSI/", "generated Widar3.0-like tree of Intel 5300 logs (<date>/<user>/*.dat)"),
        ("data/mmfi/", "generated MM-Fi-like tree (E0x/Syy/Azz/wifi-csi/*.mat, ground_truth.npy)"),
        ("archives/widar/", "one CSI archive (.npz) per log, from rfbench parse"),
        ("widar-manifest.json", "rfbench ingest widar"),
        ("mmfi-manifest.json", "rfbench ingest mmfi"),
        ("widar-split.json", "rfbench split: cross-room, room 3 held out, with its audit"),
        ("mmfi-split.json", "rfbench split: mmfi-s2 (cross-subject), with its audit"),
        ("windows/", "rfbench windows: each side's model inputs (X.npy, y.npy, index.json), read from the dataset"),
        (MARKER, "the list of every file the demo wrote here: --force replaces exactly these"),
    ]
    onnx = facts["predict"]["onnx"]
    bvp_rows = [
        ("data/bvp/BVP/", "generated Widar3.0-like BVP tree (<date>-VS/[6-link/]<user>/*.mat)"),
        ("bvp-manifest.json", "rfbench ingest widar (the BVP tree)"),
        ("bvp-split.json", f"rfbench split: cross-location, location {BVP_TEST_LOCATION} held out, common6 gestures, "
                           "with its audit"),
    ]
    for r in reports:
        if r.get("name") == "BVP":  # the BVP run's files together, after the other two runs'
            rows.extend(bvp_rows)
        folder = Path(r["report"]).parent.name
        model = ("ridge.onnx" if r["task"] == "pose" else "centroid.onnx") if onnx else None
        pred = "pred.npy" if r["task"] == "pose" else "scores.npy"
        if model:
            rows.append((f"{folder}/{model}", f"the {r.get('name', r['task'])} model, trained on the train side's "
                                              "windows"))
        rows.append((f"{folder}/{pred}", "its predictions over the test windows" + (" (+ .json: rfbench predict's "
                                                                                     "record)" if onnx else "")))
        rows.append((f"{folder}/report.json", f"the {r.get('name', r['task'])} report ({r['evidence']}); report.md "
                                              "renders it"))
        for pic in r["pictures"]:
            rows.append((f"{folder}/{Path(pic).name}", "picture, embedded in report.md"))
    return rows
