"""MM-Fi trees → manifests, and the toolbox's protocol facts (DESIGN.md §4).

Layout: ``ROOT/E0x/Syy/Azz/{wifi-csi/frameNNN.mat, ground_truth.npy, ...}``. One **recording** is one
(environment, subject, action) folder; its id is ``E01/S01/A01``. The subject fixes the environment
(S01–S10 → E01, S11–S20 → E02, S21–S30 → E03, S31–S40 → E04); the manifest's ``room`` is the
environment.

Building a manifest needs only NumPy. Every file listed is hashed (sha256) as it is read. ``ground_truth.npy``
is checked from its ``.npy`` header first (shape, dtype, and the size the header declares against the bytes
the file holds) and only then read (at most :data:`MAX_GROUND_TRUTH_BYTES`), so a header declaring
``(10**12, 17, 3)`` is a problem, never an allocation. The WiFi frames (``.mat`` files holding
``CSIamp``/``CSIphase`` of shape (3, 114, 10)) are read with :mod:`rfbench.io.matv5` (no SciPy) when verifying
them, each bounded by :data:`MAX_FRAME_BYTES` (file size and inflated size), so a zlib bomb is a problem too.
The tree is walked by :class:`rfbench.datasets.tree.TreeWalk`: odd names, links leaving the tree and
non-regular files are problems, never crashes.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import numpy as np

from rfbench.datasets.manifest import Manifest
from rfbench.datasets.tree import Entry, TreeWalk, display_path, tree_marker
from rfbench.errors import FormatError, ValidationError

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
    "MAX_FRAME_BYTES",
    "toolbox_fill",
    "MAX_GROUND_TRUTH_BYTES",
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

_ENV = re.compile(r"^E[0-9]{2}\Z")
_SUBJECT = re.compile(r"^S[0-9]{2}\Z")
_ACTION = re.compile(r"^A[0-9]{2}\Z")
_FRAME = re.compile(r"^frame([0-9]+)\.mat\Z")
#: Largest WiFi frame file read when verifying frames, and the most its compressed variables may inflate to: a
#: real frame holds two (3, 114, 10) double arrays, 54,720 bytes; this is 75× that.
MAX_FRAME_BYTES = 4 << 20
#: Largest ground_truth.npy read (for its NaN check); a real one is (297, 17, 3) doubles, 121 KB. Larger files are
#: hashed without being held in memory and reported.
MAX_GROUND_TRUTH_BYTES = 64 << 20


def environment_of(subject: str) -> str | None:
    """The environment a subject was recorded in (S01–S10 → E01, …), or None for an unknown subject."""
    if subject not in ALL_SUBJECTS:
        return None
    return f"E{(int(subject[1:]) - 1) // 10 + 1:02d}"


def _npy_header(data: bytes) -> tuple[tuple[int, ...], np.dtype, int]:
    """Shape, dtype and header length of a ``.npy`` file's bytes, reading nothing past the header.

    Raises a :class:`FormatError` whose message never quotes the file's bytes."""
    fh = io.BytesIO(data)
    try:
        major, _ = np.lib.format.read_magic(fh)
    except ValueError:
        raise FormatError("not a .npy file (no .npy magic string at its start)") from None
    if major not in (1, 2, 3):
        raise FormatError(f"not a .npy file rfbench reads (format version {major})")
    try:
        if major == 1:
            shape, _, dtype = np.lib.format.read_array_header_1_0(fh)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(fh)
    except Exception:  # numpy's messages quote the header text: never echo file contents
        raise FormatError("not a .npy file (its header cannot be parsed)") from None
    return tuple(int(s) for s in shape), np.dtype(dtype), fh.tell()


def _gt_check(data: bytes, n_frames: int) -> tuple[str | None, int | None]:
    """What is wrong with a ground_truth.npy's bytes (one line, or None) and its frame count (None when its
    header cannot be trusted)."""
    try:
        shape, dtype, offset = _npy_header(data)
    except FormatError as exc:
        return str(exc), None
    frames = shape[0] if shape else None
    if len(shape) != 3 or shape[1:] != (N_JOINTS, 3):
        return f"ground truth has shape {shape}; expected (frames, {N_JOINTS}, 3) in metres", frames
    if n_frames and shape[0] != n_frames:
        return f"ground truth has {shape[0]} frames but wifi-csi/ has {n_frames} frame files", frames
    if dtype.kind not in "fiu" or dtype.hasobject:
        return f"ground truth has dtype {dtype.str}; expected numbers", frames
    count = math.prod(shape)
    declared, held = count * dtype.itemsize, len(data) - offset
    if declared != held:
        return (f"ground truth header declares shape {shape} of {dtype.str} ({declared:,} bytes) but the file holds "
                f"{held:,} bytes after its header; not read"), None
    arr = np.frombuffer(data, dtype=dtype, count=count, offset=offset)
    bad = int(np.count_nonzero(~np.isfinite(arr)))
    if bad:
        return f"ground truth holds {bad} NaN/inf value(s)", frames
    return None, frames


#: A file up to this size is read whole to be hashed (and its first bytes looked at); a larger one in chunks.
_WHOLE_BYTES = 1 << 20


def _read_or_hash(path: Path, size: int, cap: int) -> tuple[bytes | None, str, bytes]:
    """The bytes of a regular file (when at most ``cap``, else None), their sha256 and their first 116 (a MAT
    header's text; empty for a file past :data:`_WHOLE_BYTES` and ``cap``, hashed in chunks and not kept)."""
    if size > max(cap, _WHOLE_BYTES):
        from rfbench.io.files import sha256_file

        return None, sha256_file(path)[0], b""
    from rfbench.io.files import read_input_bytes

    data = read_input_bytes(path, cap=max(cap, _WHOLE_BYTES))
    return (data if len(data) <= cap else None), hashlib.sha256(data).hexdigest(), bytes(data[:116])


def find_mmfi_root(root: Path) -> Path:
    """``root`` when it holds E01…E04 folders, else its only sub-folder that does (e.g. ``MMFi_Dataset/``)."""
    def has_env(p: Path) -> bool:
        try:
            return any(c.is_dir() and _ENV.match(c.name) for c in p.iterdir())
        except OSError:
            return False

    if has_env(root):
        return root
    try:
        children = sorted(root.iterdir())
    except OSError:
        return root
    inner = [c for c in children if c.is_dir() and not c.name.startswith(".") and has_env(c)]
    return inner[0] if len(inner) == 1 else root


def read_wifi_frame(source) -> dict[str, np.ndarray]:
    """Read one MM-Fi WiFi frame (``frameNNN.mat``, a path or its bytes): ``{"CSIamp": (3, 114, 10),
    "CSIphase": (3, 114, 10)}``, with :func:`rfbench.io.matv5.read_mat` (no SciPy), bounded by
    :data:`MAX_FRAME_BYTES`.

    Raises
    ------
    FormatError
        The file cannot be read as a MATLAB v5 file, is larger than the bound (or inflates past it), or lacks
        ``CSIamp``. The message never quotes the file's bytes.
    """
    from rfbench.io.matv5 import read_mat

    where = "frame" if isinstance(source, (bytes, bytearray, memoryview)) else str(source)
    try:
        mat = read_mat(source, max_bytes=MAX_FRAME_BYTES)
    except FormatError as exc:
        text = str(exc)
        reason = text.split(": ", 1)[1] if text.startswith("<bytes>: ") or text.startswith(where + ": ") else text
        raise FormatError(f"{where}: not a readable .mat file ({reason})") from None
    if "CSIamp" not in mat:
        raise FormatError(f"{where}: no CSIamp variable ({len(mat) + len(mat.skipped)} other variable(s))")
    return {k: np.asarray(mat[k]) for k in ("CSIamp", "CSIphase") if k in mat}


def _recording(walk: TreeWalk, env: str, subj: str, act: str, folder: Entry,
               verify_frames: bool) -> tuple[dict, list, dict | None]:
    """One E/S/A folder → its recording, its problems and the first WiFi frame whose MAT header text says the
    generator wrote it (or None) (run on a worker thread: touches no shared state but the walk's folder listing,
    whose problems are taken afterwards)."""
    from rfbench.datasets.bvp_readers import GENERATED_TEXT

    problems: list[dict] = []
    generated = None
    sub = TreeWalk(walk.root, walk.follow_symlinks)
    items = {e.name: e for e in sub.entries(folder.path, folder.real)}
    wifi_rel, gt_rel = f"{folder.rel}/wifi-csi", f"{folder.rel}/ground_truth.npy"
    wifi, gt = items.get("wifi-csi"), items.get("ground_truth.npy")
    frame_numbers: list[int] = []
    empty: list[int] = []
    frame_files: list[dict] = []
    if wifi is None or not wifi.is_dir:
        if not any(p["path"] == wifi_rel for p in sub.problems):
            problems.append({"path": wifi_rel, "reason": "no wifi-csi folder; recording has 0 WiFi frames"})
    else:
        for f in sub.entries(wifi.path, wifi.real):
            m = _FRAME.match(f.name)
            if m is None or f.is_dir:
                problems.append({"path": f.rel, "reason": "not a frameNNN.mat file; ignored"})
                continue
            number = int(m.group(1))
            frame_numbers.append(number)
            entry = {"path": f.rel, "bytes": f.size, "kind": "wifi-frame", "frame": number}
            frame_files.append(entry)
            if f.size == 0:
                entry["sha256"] = hashlib.sha256(b"").hexdigest()
                empty.append(number)
                problems.append({"path": f.rel, "reason": "empty WiFi frame file (0 bytes); the MM-Fi toolbox "
                                                          "skips this frame"})
                continue
            try:
                data, entry["sha256"], head = _read_or_hash(f.path, f.size, MAX_FRAME_BYTES if verify_frames else 0)
            except OSError as exc:
                entry["sha256"] = None
                problems.append({"path": f.rel, "reason": f"cannot read ({exc.strerror or exc})"})
                continue
            if generated is None and GENERATED_TEXT in head:
                generated = {"path": f.rel, "sha256": entry["sha256"], "found_in": "the file's MAT header text"}
            if not verify_frames:
                continue
            if data is None:
                problems.append({"path": f.rel, "reason": f"WiFi frame file of {f.size:,} bytes, more than the "
                                                          f"{MAX_FRAME_BYTES:,} a frame is read up to; not verified"})
                continue
            try:
                amp = read_wifi_frame(data)["CSIamp"]
                if amp.shape != WIFI_FRAME_SHAPE:
                    problems.append({"path": f.rel, "reason": f"CSIamp has shape {amp.shape}; expected "
                                                              f"{WIFI_FRAME_SHAPE}"})
            except FormatError as exc:
                problems.append({"path": f.rel, "reason": str(exc).split(": ", 1)[-1]})
        frame_numbers.sort()
        expected = list(range(1, len(frame_numbers) + 1))
        if frame_numbers and frame_numbers != expected:
            missing = sorted(set(range(1, max(frame_numbers) + 1)) - set(frame_numbers))
            reason = (f"frame numbers are not 1…N: missing {_short_list(missing)}" if missing
                      else "frame numbers repeat or do not start at 1")
            problems.append({"path": wifi_rel, "reason": reason})
    files = []
    gt_frames = None
    if gt is not None and not gt.is_dir:
        entry = {"path": gt.rel, "bytes": gt.size, "kind": "ground-truth", "sha256": None}
        files.append(entry)
        try:
            data, entry["sha256"], _ = _read_or_hash(gt.path, gt.size, MAX_GROUND_TRUTH_BYTES)
        except OSError as exc:
            data, reason = None, f"cannot read ({exc.strerror or exc})"
        else:
            reason = (f"ground_truth.npy of {gt.size:,} bytes, more than the {MAX_GROUND_TRUTH_BYTES:,} a ground "
                      "truth is read up to; not checked") if data is None else None
        if data is not None:
            reason, gt_frames = _gt_check(data, len(frame_numbers))
        if reason is not None:
            problems.append({"path": gt.rel, "reason": reason})
    elif not any(p["path"] == gt_rel for p in sub.problems):
        problems.append({"path": gt_rel, "reason": "no ground_truth.npy; the recording has no pose labels"})
    files.extend(sorted(frame_files, key=lambda e: e["frame"]))
    problems.extend(sub.problems)
    return {
        "id": f"{env}/{subj}/{act}",
        "subject": subj,
        "room": env,
        "action": act,
        "frames": len(frame_numbers),
        "empty_frames": empty,
        "gt_frames": gt_frames,
        "files": files,
    }, problems, generated


def ingest(root: str | os.PathLike, *, verify_frames: bool = False, workers: int | None = None,
           follow_symlinks: bool = False, progress: Callable[[int], None] | None = None,
           on_total: Callable[[int], None] | None = None) -> Manifest:
    """Walk an MM-Fi tree and build its manifest.

    Parameters
    ----------
    root : path-like
        The folder holding ``E01`` … ``E04`` (or a folder whose only such sub-folder holds them); file paths
        in the manifest are relative to it.
    verify_frames : bool
        Also read every non-empty WiFi frame (:mod:`rfbench.io.matv5`, bounded by :data:`MAX_FRAME_BYTES`) and
        check ``CSIamp`` has shape (3, 114, 10); unreadable frames become problems.
    workers : int, optional
        Threads reading and hashing recordings' files (default: every core).
    follow_symlinks : bool
        Also follow symbolic links leading outside ``root`` (recorded in the manifest).
    progress, on_total : callable, optional
        Progress callbacks: ``on_total(n_recordings)`` once, then ``progress(1)`` per recording.

    Returns
    -------
    Manifest
        One recording per ``E/S/A`` folder, id ``E01/S01/A01``, with ``subject``, ``room`` (the environment),
        ``action``, ``frames`` (WiFi frame files), ``empty_frames`` (numbers of 0-byte frames, which the toolbox
        skips), ``gt_frames`` and ``files``: ``ground_truth.npy`` (``kind: "ground-truth"``), then every
        WiFi frame file in frame-number order (``kind: "wifi-frame"``, ``frame``: its number NNN, which is
        ground-truth row NNN − 1), each with its size in ``bytes`` and its ``sha256``.

    Raises
    ------
    ValidationError
        ``root`` is not a folder, or the tree holds no E/S/A recording folder.

    Examples
    --------
    >>> import tempfile
    >>> import rfbench
    >>> from rfbench.datasets.synthetic import make_mmfi_tree
    >>> root = tempfile.mkdtemp()
    >>> _ = make_mmfi_tree(root, subjects=("S01", "S05"), actions=("A02",), frames=3, damage=False)
    >>> manifest = rfbench.ingest_mmfi(root)
    >>> [(r["id"], r["frames"]) for r in manifest.recordings]
    [('E01/S01/A02', 3), ('E01/S05/A02', 3)]
    """
    root = Path(root)
    if not root.is_dir():
        raise ValidationError(f"{display_path(str(root))}: not a folder; give the MM-Fi folder holding E01 … E04")
    walk = TreeWalk(root, follow_symlinks=follow_symlinks)
    mroot = find_mmfi_root(root)

    folders: list[tuple[str, str, str, Entry]] = []
    for env in (walk.entries(mroot) if walk.enter(mroot) else []):
        if env.name == SYNTHETIC_MARKER:
            continue
        if not env.is_dir or not _ENV.match(env.name):
            walk.problem(env.rel, "not an environment folder E01…E04; left out")
            continue
        for subj in walk.entries(env.path, env.real):
            if not subj.is_dir or not _SUBJECT.match(subj.name):
                walk.problem(subj.rel, "not a subject folder S01…S40; left out")
                continue
            if subj.name not in ALL_SUBJECTS:
                walk.problem(subj.rel, f"unknown subject {subj.name} (MM-Fi has S01…S40); left out")
                continue
            home = environment_of(subj.name)
            if home != env.name:
                walk.problem(subj.rel, f"{subj.name} belongs to {home} in MM-Fi but is under {env.name}; kept "
                                       f"under {env.name}")
            for act in walk.entries(subj.path, subj.real):
                if not act.is_dir or act.name not in ALL_ACTIONS:
                    walk.problem(act.rel, "not an action folder A01…A27; left out")
                    continue
                folders.append((env.name, subj.name, act.name, act))
    if not folders:
        raise ValidationError(f"{display_path(str(root))}: no MM-Fi recording found (expected E0x/Syy/Azz folders; "
                              f"{len(walk.problems)} problem(s) in the tree)")
    if on_total is not None:
        on_total(len(folders))

    problems = walk.problems
    recordings = []
    n_workers = max(1, workers if workers is not None else (os.cpu_count() or 1))

    def one(item):
        return _recording(walk, *item, verify_frames)

    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        generated = None  # the first frame, in recording order, whose header says the generator wrote it
        for rec, found, said in pool.map(one, folders):
            recordings.append(rec)
            problems.extend(found)
            generated = generated or said
            if progress is not None:
                progress(1)
    problems.sort(key=lambda p: (p["path"], p["reason"]))
    extra: dict = {}
    marker = tree_marker(walk, SYNTHETIC_MARKER)
    if marker is None:  # the marker file gone, the frames still say who wrote them
        marker = generated
    if marker is not None:
        extra["synthetic_marker"] = marker
    if follow_symlinks:
        extra["follow_symlinks"] = True
    if verify_frames:  # its problems depend on it: a second ingest (rfbench verify) must read the frames too
        extra["verify_frames"] = True
    return Manifest(dataset="mmfi", root=os.path.abspath(root), recordings=sorted(recordings, key=lambda r: r["id"]),
                    problems=problems, synthetic=marker is not None, extra=extra)


def _short_list(items: list, limit: int = 10) -> str:
    shown = ", ".join(str(i) for i in items[:limit])
    return shown + (f" … ({len(items)} in all)" if len(items) > limit else "")


def toolbox_fill(amp: np.ndarray) -> tuple[np.ndarray, int]:
    """The MM-Fi toolbox's fill of one frame's ``CSIamp`` (3, 114, 10): ±inf become NaN, then in each packet
    (the slice ``[:, :, i]`` over antennas and subcarriers) every NaN becomes the mean of that packet's other
    values, in float64. A packet with no finite value stays NaN. Returns the filled copy and the number of
    values replaced.

    Reference: ybhbingo/MMFi_dataset, ``mmfi_lib/mmfi.py``, ``MMFi_Dataset.read_frame`` (the ``wifi-csi`` branch),
    commit 269f64875508f030cbd1468c1e76d5333b0127cd: ``data[np.isinf(data)] = np.nan``, then for ``i in
    range(10)`` the column ``data[:, :, i]`` gets ``temp_col[np.isnan(temp_col)] = temp_not_nan_col.mean()``.
    """
    data = np.array(amp, dtype=np.float64)
    data[np.isinf(data)] = np.nan
    count = 0
    for i in range(data.shape[2]):
        col = data[:, :, i]
        nan = np.isnan(col)
        if nan.any():
            kept = col[~nan]
            if kept.size:
                col[nan] = kept.mean()
                count += int(nan.sum())
    return data, count
