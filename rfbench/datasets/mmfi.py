"""MM-Fi trees → manifests, and the toolbox's protocol facts (DESIGN.md §4).

Layout: ``ROOT/E0x/Syy/Azz/{wifi-csi/frameNNN.mat, ground_truth.npy, ...}``. One **recording** is one
(environment, subject, action) folder; its id is ``E01/S01/A01``. The subject fixes the environment
(S01–S10 → E01, S11–S20 → E02, S21–S30 → E03, S31–S40 → E04); the manifest's ``room`` is the
environment.

Building a manifest needs only NumPy (``ground_truth.npy`` shapes come from the ``.npy`` header). Reading the
WiFi frames' CSI (``.mat`` files holding ``CSIamp``/``CSIphase`` of shape (3, 114, 10)) needs SciPy, the
optional extra ``rfbench[mat]``: see :func:`read_wifi_frame` and ``ingest(..., verify_frames=True)``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable

import numpy as np

from rfbench.datasets.manifest import Manifest
from rfbench.errors import FormatError, MissingDependencyError, ValidationError

__all__ = [
    "ALL_SUBJECTS",
    "ALL_ACTIONS",
    "ACTION_PROTOCOLS",
    "S2_TEST_SUBJECTS",
    "S3_TRAIN_ENVIRONMENTS",
    "S3_TEST_ENVIRONMENTS",
    "environment_of",
    "ingest",
    "find_mmfi_root",
    "read_wifi_frame",
    "N_JOINTS",
    "WIFI_FRAME_SHAPE",
    "SYNTHETIC_MARKER",
]

SYNTHETIC_MARKER = "RFBENCH_SYNTHETIC.json"
#: S01…S40, in the toolbox's order (S1's permutation indexes this list).
ALL_SUBJECTS = tuple(f"S{k:02d}" for k in range(1, 41))
#: A01…A27.
ALL_ACTIONS = tuple(f"A{k:02d}" for k in range(1, 28))
#: Actions of each protocol, in the toolbox's listed order (S1 seeds follow this order).
ACTION_PROTOCOLS: dict[str, tuple[str, ...]] = {
    "p1": ("A02", "A03", "A04", "A05", "A13", "A14", "A17", "A18", "A19", "A20", "A21", "A22", "A23", "A27"),
    "p2": ("A01", "A06", "A07", "A08", "A09", "A10", "A11", "A12", "A15", "A16", "A24", "A25", "A26"),
    "p3": ALL_ACTIONS,
}
#: S2 (cross-subject) validation subjects, MM-Fi's "val" = rfbench's ``test``.
S2_TEST_SUBJECTS = ("S05", "S10", "S15", "S20", "S25", "S30", "S35", "S40")
#: S3 (cross-environment): train on E01–E03, test on E04.
S3_TRAIN_ENVIRONMENTS = ("E01", "E02", "E03")
S3_TEST_ENVIRONMENTS = ("E04",)
N_JOINTS = 17
WIFI_FRAME_SHAPE = (3, 114, 10)

_ENV = re.compile(r"^E\d{2}$")
_SUBJECT = re.compile(r"^S\d{2}$")
_ACTION = re.compile(r"^A\d{2}$")
_FRAME = re.compile(r"^frame(\d+)\.mat$")


def environment_of(subject: str) -> str | None:
    """The environment a subject was recorded in (S01–S10 → E01, …), or None for an unknown subject."""
    if subject not in ALL_SUBJECTS:
        return None
    return f"E{(int(subject[1:]) - 1) // 10 + 1:02d}"


def _npy_shape(path: Path) -> tuple[tuple[int, ...], str]:
    """Shape and dtype string from a ``.npy`` header, without reading the data."""
    with open(path, "rb") as fh:
        try:
            major, _ = np.lib.format.read_magic(fh)
            if major == 1:
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        except ValueError as exc:
            raise FormatError(f"not a .npy file ({exc})") from None
    return tuple(int(s) for s in shape), dtype.str


def _gt_problem(path: Path, n_frames: int) -> str | None:
    """One line describing what is wrong with a ground_truth.npy, or None."""
    try:
        shape, dtype = _npy_shape(path)
    except FormatError as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot read ({exc.strerror or exc})"
    if len(shape) != 3 or shape[1:] != (N_JOINTS, 3):
        return f"ground truth has shape {shape}; expected (frames, {N_JOINTS}, 3) in metres"
    if n_frames and shape[0] != n_frames:
        return f"ground truth has {shape[0]} frames but wifi-csi/ has {n_frames} frame files"
    if np.dtype(dtype).kind not in "fiu":
        return f"ground truth has dtype {dtype}; expected numbers"
    try:
        arr = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as exc:
        return f"cannot load ({exc})"
    bad = int(np.count_nonzero(~np.isfinite(arr)))
    if bad:
        return f"ground truth holds {bad} NaN/inf value(s)"
    return None


def find_mmfi_root(root: Path) -> Path:
    """``root`` when it holds E01…E04 folders, else its only sub-folder that does (e.g. ``MMFi_Dataset/``)."""
    def has_env(p: Path) -> bool:
        try:
            return any(c.is_dir() and _ENV.match(c.name) for c in p.iterdir())
        except OSError:
            return False

    if has_env(root):
        return root
    inner = [c for c in sorted(root.iterdir()) if c.is_dir() and not c.name.startswith(".") and has_env(c)]
    return inner[0] if len(inner) == 1 else root


def read_wifi_frame(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read one MM-Fi WiFi frame (``frameNNN.mat``): ``{"CSIamp": (3, 114, 10), "CSIphase": (3, 114, 10)}``.

    Needs SciPy (``pip install 'rfbench[mat]'``).

    Raises
    ------
    MissingDependencyError
        SciPy is not installed.
    FormatError
        The file cannot be read as a MATLAB file or lacks ``CSIamp``.
    """
    try:
        import scipy.io
    except ImportError:  # pragma: no cover - exercised only without scipy
        raise MissingDependencyError(
            "reading MM-Fi .mat frames needs SciPy: pip install 'rfbench[mat]'"
        ) from None
    try:
        mat = scipy.io.loadmat(os.fspath(path))
    except Exception as exc:  # scipy raises many types for bad files
        raise FormatError(f"{path}: not a readable .mat file ({exc.__class__.__name__}: {exc})") from None
    if "CSIamp" not in mat:
        raise FormatError(f"{path}: no CSIamp variable (found: {', '.join(k for k in mat if not k.startswith('__'))})")
    return {k: np.asarray(mat[k]) for k in ("CSIamp", "CSIphase") if k in mat}


def ingest(root: str | os.PathLike, *, verify_frames: bool = False,
           progress: Callable[[int], None] | None = None,
           on_total: Callable[[int], None] | None = None) -> Manifest:
    """Walk an MM-Fi tree and build its manifest.

    Parameters
    ----------
    root : path-like
        The folder holding ``E01`` … ``E04`` (or a folder whose only such sub-folder holds them); file paths
        in the manifest are relative to it.
    verify_frames : bool
        Also open every non-empty WiFi frame with SciPy and check ``CSIamp`` has shape (3, 114, 10)
        (needs ``rfbench[mat]``); unreadable frames become problems.
    progress, on_total : callable, optional
        Progress callbacks: ``on_total(n_recordings)`` once, then ``progress(1)`` per recording.

    Returns
    -------
    Manifest
        One recording per ``E/S/A`` folder, id ``E01/S01/A01``, with ``subject``, ``room`` (the environment),
        ``action``, ``frames`` (WiFi frame files), ``empty_frames`` (numbers of 0-byte frames, which the toolbox
        skips), ``gt_frames`` and ``files``: ``ground_truth.npy`` (``kind: "ground-truth"``), then every
        WiFi frame file in frame-number order (``kind: "wifi-frame"``, ``frame``: its number NNN, which is
        ground-truth row NNN − 1), each with its size in ``bytes``.

    Raises
    ------
    ValidationError
        ``root`` is not a folder.
    MissingDependencyError
        ``verify_frames`` without SciPy.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValidationError(f"{root}: not a folder; give the MM-Fi folder holding E01 … E04")
    if verify_frames:
        try:
            import scipy.io  # noqa: F401
        except ImportError:  # pragma: no cover - exercised only without scipy
            raise MissingDependencyError("--verify-frames reads .mat files and needs SciPy: "
                                         "pip install 'rfbench[mat]'") from None
    problems: list[dict] = []

    def rel(p: Path) -> str:
        return p.relative_to(root).as_posix()

    def listdir(p: Path) -> list[Path]:
        try:
            return sorted((c for c in p.iterdir() if not c.name.startswith(".")), key=lambda c: c.name)
        except OSError as exc:
            problems.append({"path": rel(p), "reason": f"cannot list ({exc.strerror or exc}); left out"})
            return []

    folders: list[tuple[str, str, str, Path]] = []
    for env in listdir(find_mmfi_root(root)):
        if env.name == SYNTHETIC_MARKER:
            continue
        if not env.is_dir() or not _ENV.match(env.name):
            problems.append({"path": rel(env), "reason": "not an environment folder E01…E04; left out"})
            continue
        for subj in listdir(env):
            if not subj.is_dir() or not _SUBJECT.match(subj.name):
                problems.append({"path": rel(subj), "reason": "not a subject folder S01…S40; left out"})
                continue
            if subj.name not in ALL_SUBJECTS:
                problems.append({"path": rel(subj), "reason": f"unknown subject {subj.name} (MM-Fi has S01…S40); "
                                 "left out"})
                continue
            home = environment_of(subj.name)
            if home != env.name:
                problems.append({"path": rel(subj), "reason": f"{subj.name} belongs to {home} in MM-Fi but is "
                                 f"under {env.name}; kept under {env.name}"})
            for act in listdir(subj):
                if not act.is_dir() or act.name not in ALL_ACTIONS:
                    problems.append({"path": rel(act), "reason": "not an action folder A01…A27; left out"})
                    continue
                folders.append((env.name, subj.name, act.name, act))
    if on_total is not None:
        on_total(len(folders))

    recordings = []
    for env, subj, act, folder in folders:
        wifi = folder / "wifi-csi"
        frame_numbers: list[int] = []
        empty: list[int] = []
        frame_files: list[dict] = []
        if not wifi.is_dir():
            problems.append({"path": rel(wifi), "reason": "no wifi-csi folder; recording has 0 WiFi frames"})
        else:
            for f in listdir(wifi):
                m = _FRAME.match(f.name)
                if m is None or not f.is_file():
                    problems.append({"path": rel(f), "reason": "not a frameNNN.mat file; ignored"})
                    continue
                size = f.stat().st_size
                number = int(m.group(1))
                frame_numbers.append(number)
                frame_files.append({"path": rel(f), "bytes": size, "kind": "wifi-frame", "frame": number})
                if size == 0:
                    empty.append(number)
                    problems.append({"path": rel(f), "reason": "empty WiFi frame file (0 bytes); the MM-Fi "
                                     "toolbox skips this frame"})
                elif verify_frames:
                    try:
                        amp = read_wifi_frame(f)["CSIamp"]
                        if amp.shape != WIFI_FRAME_SHAPE:
                            problems.append({"path": rel(f), "reason": f"CSIamp has shape {amp.shape}; expected "
                                             f"{WIFI_FRAME_SHAPE}"})
                    except FormatError as exc:
                        problems.append({"path": rel(f), "reason": str(exc).split(": ", 1)[-1]})
            frame_numbers.sort()
            expected = list(range(1, len(frame_numbers) + 1))
            if frame_numbers and frame_numbers != expected:
                missing = sorted(set(range(1, max(frame_numbers) + 1)) - set(frame_numbers))
                reason = (f"frame numbers are not 1…N: missing {_short_list(missing)}" if missing
                          else "frame numbers repeat or do not start at 1")
                problems.append({"path": rel(wifi), "reason": reason})
        gt = folder / "ground_truth.npy"
        files = []
        gt_frames = None
        if gt.is_file():
            files.append({"path": rel(gt), "bytes": gt.stat().st_size, "kind": "ground-truth"})
            reason = _gt_problem(gt, len(frame_numbers))
            if reason is not None:
                problems.append({"path": rel(gt), "reason": reason})
            try:
                gt_frames = _npy_shape(gt)[0][0]
            except (FormatError, OSError, IndexError):
                gt_frames = None
        else:
            problems.append({"path": rel(gt), "reason": "no ground_truth.npy; the recording has no pose labels"})
        files.extend(sorted(frame_files, key=lambda e: e["frame"]))
        recordings.append({
            "id": f"{env}/{subj}/{act}",
            "subject": subj,
            "room": env,
            "action": act,
            "frames": len(frame_numbers),
            "empty_frames": empty,
            "gt_frames": gt_frames,
            "files": files,
        })
        if progress is not None:
            progress(1)
    problems.sort(key=lambda p: (p["path"], p["reason"]))
    return Manifest(dataset="mmfi", root=str(root.resolve()), recordings=sorted(recordings, key=lambda r: r["id"]),
                    problems=problems, synthetic=(root / SYNTHETIC_MARKER).is_file())


def _short_list(items: list, limit: int = 10) -> str:
    shown = ", ".join(str(i) for i in items[:limit])
    return shown + (f" … ({len(items)} in all)" if len(items) > limit else "")
