"""Deterministic synthetic corpora: a Widar3.0-like tree of real bfee logs and an MM-Fi-like tree.

Both are small, seeded (same arguments → byte-identical files) and marked SYNTHETIC: each tree carries
``RFBENCH_SYNTHETIC.json`` at its root, so ``rfbench ingest`` writes ``"synthetic": true`` and everything
derived from it is tagged SYNTHETIC (DESIGN.md §4, §7). They exist for tests, benchmarks, ``make demo`` and
``rfbench generate widar|mmfi``; no number computed on them says anything about real WiFi sensing. Each tree is
written into a temporary folder beside its destination and renamed into place (never half a tree), and
described by the :class:`TreeSummary` returned; what the generators take is declared in
:mod:`rfbench.datasets.synthetic_settings`.

With ``damage=True`` (the default) each tree also holds the awkward cases a real download has — empty files,
odd names, an unknown date folder, missing receivers, a truncated log, an unparseable log, a ground truth of
the wrong shape — and the return value lists them, so tests can check every one is reported.

The Widar-like logs are written by the bfee encoder (:func:`rfbench.io.writer.synthetic_log`); the MM-Fi-like
WiFi frames are MATLAB v5 ``.mat`` files written here directly (no SciPy needed to write them), holding
``CSIamp`` and ``CSIphase`` of shape (3, 114, 10) float64; ``ground_truth.npy`` is (frames, 17, 3) metres in
the Human3.6M-17 joint order (joint 0, the pelvis, is exactly the midpoint of the hips, joints 1 and 4).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from rfbench.datasets.synthetic_settings import (
    DEFAULT_MMFI_ACTIONS,
    DEFAULT_MMFI_SUBJECTS,
    MmfiTreeSettings,
    WidarTreeSettings,
)
from rfbench.errors import OutputExistsError
from rfbench.io.files import own_file_digest

__all__ = ["make_widar_tree", "make_mmfi_tree", "TreeSummary", "WidarTreeSettings", "MmfiTreeSettings",
           "mat_v5_bytes", "MARKER", "H36M_TEMPLATE"]

MARKER = "RFBENCH_SYNTHETIC.json"

# Widar-like layout: (date folder, users). Covers all three rooms, a suffixed date folder, and users that
# appear in more than one room; gestures 1–2 on every date, locations 1–5 (+6 in room 1), orientations 1–5.
_WIDAR_PLAN = (
    ("20181109", ("user1", "user2")),
    ("20181117", ("user2", "user3")),
    ("20181205_2", ("user3",)),
    ("20181211", ("user1", "user4")),
)

#: A standing Human3.6M-17 pose in metres (x right, y forward, z up); pelvis = midpoint of the hips.
H36M_TEMPLATE = np.array([
    [0.00, 0.0, 1.00],   # 0 pelvis
    [-0.12, 0.0, 1.00],  # 1 right hip
    [-0.12, 0.0, 0.55],  # 2 right knee
    [-0.12, 0.0, 0.10],  # 3 right ankle
    [0.12, 0.0, 1.00],   # 4 left hip
    [0.12, 0.0, 0.55],   # 5 left knee
    [0.12, 0.0, 0.10],   # 6 left ankle
    [0.00, 0.0, 1.25],   # 7 spine
    [0.00, 0.0, 1.50],   # 8 thorax
    [0.00, 0.05, 1.60],  # 9 neck/nose
    [0.00, 0.0, 1.72],   # 10 head
    [0.18, 0.0, 1.48],   # 11 left shoulder
    [0.30, 0.0, 1.22],   # 12 left elbow
    [0.38, 0.0, 0.98],   # 13 left wrist
    [-0.18, 0.0, 1.48],  # 14 right shoulder
    [-0.30, 0.0, 1.22],  # 15 right elbow
    [-0.38, 0.0, 0.98],  # 16 right wrist
])


@dataclass(frozen=True)
class TreeSummary:
    """What :func:`make_widar_tree` or :func:`make_mmfi_tree` wrote.

    ``recordings`` counts the well-named recordings (those ingest keeps); ``files`` the files written for them
    (Widar: receiver logs; MM-Fi: WiFi frames); ``damage`` maps each planted problem's path (relative to
    ``root``) to its kind; ``params`` is what the tree's marker file records; ``total_files`` and
    ``total_bytes`` count everything in the tree, marker and planted problems included; ``replaced`` says an
    earlier generated tree was replaced (``force``). Item access (``summary["recordings"]``) reads
    :meth:`to_dict`, as the dictionaries these functions used to return were read.
    """

    dataset: str
    root: str
    recordings: int
    files: int
    damage: Mapping[str, str] = field(default_factory=dict)
    params: Mapping = field(default_factory=dict)
    total_files: int = 0
    total_bytes: int = 0
    replaced: bool = False

    def to_dict(self) -> dict:
        return {"dataset": self.dataset, "root": self.root, "synthetic": True, "marker": MARKER,
                "recordings": self.recordings, "files": self.files, "total_files": self.total_files,
                "total_bytes": self.total_bytes, "damage": dict(self.damage), "params": dict(self.params),
                "replaced": self.replaced}

    def __getitem__(self, key: str):
        return self.to_dict()[key]


def _target_state(root: Path, force: bool) -> bool:
    """Check the destination before anything is generated; True when it holds a generated tree to replace."""
    if root.exists() and not root.is_dir():
        raise OutputExistsError(f"{root} exists and is not a folder")
    if not root.exists() or not any(root.iterdir()):
        return False
    if not force:
        raise OutputExistsError(f"{root} is not empty; pass `force` to replace a tree generated "
                                f"there before, or choose an empty or new folder")
    if not (root / MARKER).is_file():
        raise OutputExistsError(f"{root} is not empty and holds no {MARKER}, so it is not a tree rfbench "
                                f"generated; it is left alone: choose an empty or new folder")
    listed, contents = _marker_listing(root)
    if listed is None:
        raise OutputExistsError(f"{root}/{MARKER} lists no files (a tree from an older rfbench, or not one "
                                f"rfbench wrote), so `force` cannot tell its files from yours; it is left alone: "
                                f"remove it yourself, or choose an empty or new folder")
    if contents is None:
        raise OutputExistsError(f"{root}/{MARKER} records no size and sha256 of the files it lists (a tree from an "
                                f"older rfbench, or not one rfbench wrote), so `force` cannot tell its files from "
                                f"yours saved at the same names; it is left alone: remove it yourself, or choose an "
                                f"empty or new folder")
    _, foreign = _tree_files(root, listed)
    if foreign is not None:
        raise OutputExistsError(f"{root} holds {foreign}, which rfbench generate did not write there; `force` "
                                f"replaces only a generated tree, so it is left alone: move that out, or choose "
                                f"an empty or new folder")
    changed = _changed_file(root, contents)
    if changed is not None:
        raise OutputExistsError(f"{root} holds {changed}, {_CHANGED}, so it may be yours; `force` removes nothing: "
                                f"move it, or choose an empty or new folder")
    return True


#: Why a listed file is not removed: it is not the file the generator wrote there.
_CHANGED = f"which changed since rfbench generate wrote it (its size or sha256 is not the one {MARKER} records)"


#: Most bytes of a generator's marker read back (a file list of a release-size tree is a few MB).
_MAX_MARKER_BYTES = 64 << 20


def _marker_listing(root: Path) -> tuple[set | None, dict | None]:
    """The files the marker at ``root`` says the generator wrote, and each one's ``{"size", "sha256"}`` as
    written (``contents``); None for the list when the marker lists none or is not readable, None for the
    contents when it records no size and sha256 of every listed file (an older rfbench's marker)."""
    from rfbench.errors import RfbenchError
    from rfbench.io.documents import parse_json_bytes
    from rfbench.io.files import read_regular

    try:
        doc = parse_json_bytes(read_regular(root / MARKER, _MAX_MARKER_BYTES, "a generated tree's marker"),
                               str(root / MARKER))
    except (OSError, RfbenchError):
        return None, None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None, None
    contents = doc.get("contents")
    if not isinstance(contents, dict) or set(contents) != set(files) or not all(
            isinstance(c, dict) and set(c) == {"size", "sha256"} and type(c["size"]) is int and c["size"] >= 0
            and isinstance(c["sha256"], str) and _SHA256.fullmatch(c["sha256"]) for c in contents.values()):
        return set(files), None
    return set(files), contents


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _changed_file(root: Path, contents: Mapping[str, Mapping]) -> str | None:
    """The first listed file still under ``root`` that is not as the generator wrote it (another size or
    sha256, a link, anything but a regular file), or None. A listed file no longer there is fine."""
    for rel in sorted(contents):
        p = root / rel
        if os.path.lexists(p) and own_file_digest(p) != contents[rel]:
            return rel
    return None


def _tree_files(root: Path, listed: set | None = None) -> tuple[list, str | None]:
    """Every file under ``root`` (relative, "/"-separated, sorted; the top marker left out, links never
    followed), and the first entry that is not one of ``listed`` — a file not in it, a link, anything but a
    file or folder (None when all are; ``listed`` None: any file is)."""
    files: list = []
    pending = [""]
    while pending:
        prefix = pending.pop()
        with os.scandir(root / prefix if prefix else root) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            rel = f"{prefix}{e.name}"
            if rel == MARKER:
                continue
            if e.is_dir(follow_symlinks=False):
                pending.append(rel + "/")
            elif e.is_file(follow_symlinks=False) and (listed is None or rel in listed):
                files.append(rel)
            else:
                return sorted(files), rel
    return sorted(files), None


def _sibling(root: Path, tag: str) -> Path:
    """A new, unused hidden name beside ``root``."""
    while True:
        p = root.parent / f".{root.name}.{tag}-{secrets.token_hex(4)}.tmp"
        if not p.exists() and not p.is_symlink():
            return p


def _generate_tree(root: str | os.PathLike, force: bool, write: Callable[[Path], tuple]) -> tuple:
    """Run ``write(folder)`` on a fresh temporary folder beside ``root``, then put that folder in ``root``'s
    place: a new or empty ``root`` is replaced by it in one rename; with ``force``, a tree generated there
    before is moved aside, checked again against its marker (a file may have appeared in it while ``write``
    ran: the tree is then put back, the new one discarded and the run refused), replaced, and then its listed
    files are removed (:func:`_remove_old_tree`). On any error (or an interrupt) the temporary folder and any
    parent folders made for it are removed and ``root`` is as it was. Returns ``write``'s result, then
    ``(replaced, total_files, total_bytes)``."""
    shown = Path(root)
    root = shown.resolve() if shown.is_symlink() else shown  # write where the link points, keep the link
    replace = _target_state(root, force)
    made = [p for p in reversed(root.parents) if not p.exists()]
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(root, "new")
    ours = False
    try:
        tmp.mkdir()  # (inside the try: a signal right after it, before the next line, still removes it)
        ours = True
        result = write(tmp)
        _list_in_marker(tmp)
        sizes = [p.stat().st_size for p in tmp.rglob("*") if p.is_file()]
        if replace:
            old = _sibling(root, "old")
            os.rename(root, old)
            foreign = _foreign_entry(old)
            if foreign is not None:
                _put_back(old, root, f"{root} holds {foreign}; `force` replaces only a generated tree, so it is "
                                     f"left alone and the new tree is discarded: move that out, or choose an empty "
                                     f"or new folder")
            try:
                os.rename(tmp, root)
            except BaseException:
                os.rename(old, root)
                raise
            _remove_old_tree(old, root)
        elif root.exists():  # an empty folder: rename onto it (POSIX), else remove it first
            try:
                os.replace(tmp, root)
            except OSError:
                root.rmdir()
                os.rename(tmp, root)
        else:
            os.rename(tmp, root)
    except BaseException as exc:
        if ours or not isinstance(exc, OSError):  # (an OSError before `ours`: the folder could not be made)
            _remove_staging(tmp)
        for p in reversed(made):
            try:
                p.rmdir()
            except OSError:
                break
        raise
    return (*result, replace, len(sizes), sum(sizes))


def _foreign_entry(tree: Path) -> str | None:
    """Why ``tree`` is no longer only what its marker lists, as written (the first entry it does not list, or a
    listed file that changed; the marker itself, when it no longer lists the files with their sizes and
    hashes), or None."""
    listed, contents = _marker_listing(tree)
    appeared = "(it appeared while the new tree was generated)"
    if listed is None or contents is None:
        return f"{MARKER}, which rfbench generate did not write there {appeared}"
    foreign = _tree_files(tree, listed)[1]
    if foreign is not None:
        return f"{foreign}, which rfbench generate did not write there {appeared}"
    changed = _changed_file(tree, contents)
    return None if changed is None else f"{changed}, {_CHANGED} (it changed while the new tree was generated)"


def _put_back(old: Path, root: Path, why: str) -> None:
    """Rename the set-aside tree ``old`` back to ``root`` and refuse with ``why`` (saying where the tree is
    when ``root`` was taken meanwhile)."""
    try:
        os.rename(old, root)
    except OSError:
        raise OutputExistsError(f"{why} (the old tree is kept as {old}: {root} was taken meanwhile)") from None
    raise OutputExistsError(why)


def _remove_old_tree(old: Path, root: Path) -> None:
    """Remove the replaced tree ``old``: the files its marker lists that are still as written (size and sha256)
    and the marker, then its folders that are empty. Nothing else is removed: anything left (a file that appeared
    in it, or a listed file that changed, after the check, through a folder open in it) keeps the tree under a
    visible name beside ``root``, and the run says so."""
    contents = _marker_listing(old)[1] or {}
    with contextlib.suppress(FileNotFoundError):
        os.unlink(old / MARKER)
    for folder, _dirs, files in os.walk(old, topdown=False):
        rel = Path(folder).relative_to(old).as_posix()
        for name in files:
            path = name if rel == "." else f"{rel}/{name}"
            if path in contents and own_file_digest(Path(folder, name)) == contents[path]:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(folder, name))
        with contextlib.suppress(OSError):  # not empty (or a link): left as it is
            os.rmdir(folder)
    if os.path.lexists(old):
        kept = root.parent / f"{root.name}.previous-{secrets.token_hex(4)}"
        os.rename(old, kept)
        foreign = _tree_files(kept, set(contents))[1]
        changed = None if foreign is not None else _changed_file(kept, contents)
        why = (f"{foreign}, which appeared in the old tree while it was being replaced" if foreign is not None
               else f"{changed}, {_CHANGED}" if changed is not None
               else "a file it could not remove, which appeared in the old tree while it was being replaced")
        raise OutputExistsError(f"the new tree is in {root}, but {kept} holds {why}; it is kept there with what is "
                                f"left of that tree: move out what is yours and remove the rest")


def _remove_staging(tmp: Path) -> None:
    """Remove the staging folder after an error or an interrupt, with SIGINT and SIGTERM held off meanwhile (a
    second signal must not stop the cleanup half-way), trying again while anything is left."""
    import signal
    import threading
    import time

    held = {signal.SIGINT, signal.SIGTERM}
    block = threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask")
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held) if block else None
    try:
        for attempt in range(5):
            shutil.rmtree(tmp, ignore_errors=True)
            if not os.path.lexists(tmp):
                return
            time.sleep(0.01 * (attempt + 1))
    finally:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _list_in_marker(tree: Path) -> None:
    """Add to the tree's top marker the list of every file written (the marker left out), and each one's size
    and sha256 as written (``contents``): what a later `force` may remove, while it is unchanged, and nothing
    else."""
    doc = json.loads((tree / MARKER).read_text(encoding="utf-8"))
    doc["files"] = _tree_files(tree)[0]
    doc["contents"] = {rel: own_file_digest(tree / rel) for rel in doc["files"]}
    (tree / MARKER).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _marker(root: Path, kind: str, params: Mapping) -> None:
    text = json.dumps({"generator": f"rfbench.datasets.synthetic.{kind}", "synthetic": True, "params": params},
                      indent=2, sort_keys=True) + "\n"
    _write(root / MARKER, text.encode())


def make_widar_tree(root: str | os.PathLike, *, seed: int = 0, repetitions: int = 1,
                    records: tuple[int, int] = (24, 48), damage: bool = True, force: bool = False,
                    progress: Callable[[int], None] | None = None,
                    on_total: Callable[[int], None] | None = None) -> TreeSummary:
    """Write a Widar3.0-like CSI tree of real bfee logs under ``root/CSI``, with its marker file.

    Parameters
    ----------
    root : path-like
        Destination folder: new or empty, or with ``force`` a tree generated there before (it holds
        ``RFBENCH_SYNTHETIC.json``), which is replaced as a whole. Any other non-empty folder is refused. The
        tree is written into a temporary folder beside ``root`` and renamed into place, so ``root`` never
        holds half a tree.
    seed : int
        Everything (packet counts, CSI, headers) derives from it.
    repetitions : int
        Repetitions per (date, user, gesture, location, orientation); scales the tree (≈ 43 × 6 files each).
    records : (int, int)
        Inclusive range of CSI records per receiver file (3 antennas × 1 Tx, ~1 kHz).
    damage : bool
        Add the awkward cases (see the module docstring).
    force : bool
        Replace a tree generated in ``root`` before.
    progress, on_total : callable, optional
        ``on_total(n)`` once the number of recordings to write is known, ``progress(1)`` after each.

    Returns
    -------
    TreeSummary
        ``recordings`` counts the well-named recordings (those ingest keeps), ``files`` the receiver files
        written for them, ``damage`` the planted problems.

    Raises
    ------
    ValidationError
        A value outside :class:`~rfbench.datasets.synthetic_settings.WidarTreeSettings`' bounds.
    OutputExistsError
        ``root`` is a file, or a non-empty folder that is not a generated tree (or is one, without ``force``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> made = make_widar_tree(pathlib.Path(tempfile.mkdtemp()) / "widar", records=(3, 5), damage=False)
    >>> made.recordings, made.files, len(made.damage)
    (43, 258, 0)
    """
    settings = WidarTreeSettings(seed=seed, repetitions=repetitions, records=tuple(records), clean=not damage)

    def write(tree: Path) -> tuple:
        return _write_widar(tree, settings, progress, on_total)

    recordings, files, damage_map, replaced, total_files, total_bytes = _generate_tree(root, force, write)
    return TreeSummary("widar", str(root), recordings, files, damage_map, _widar_params(settings), total_files,
                       total_bytes, replaced)


def _widar_params(s: WidarTreeSettings) -> dict:
    return {"seed": s.seed, "repetitions": s.repetitions, "records": list(s.records), "damage": not s.clean}


def _write_widar(root: Path, s: WidarTreeSettings, progress, on_total) -> tuple:
    from rfbench.io.intel5300 import GENERATED_RECORD
    from rfbench.io.writer import synthetic_log as _log

    def synthetic_log(*args, **kwargs) -> bytes:  # every log says who wrote it, in a record the tools skip
        return GENERATED_RECORD + _log(*args, **kwargs)

    seed, repetitions, records, damage = s.seed, s.repetitions, s.records, not s.clean
    advance = progress or (lambda n=1: None)
    csi = root / "CSI"
    rng = np.random.default_rng(seed)
    plan = []  # (date, user, gesture, location, orientation, repetition)
    for d_idx, (date, users) in enumerate(_WIDAR_PLAN):
        for u_idx, user in enumerate(users):
            shift = d_idx + u_idx
            for gesture in (1, 2):
                for k in range(3):
                    location = 1 + (3 * (gesture - 1) + k + shift) % 5
                    orientation = 1 + (gesture + 2 * k + shift) % 5
                    for rep in range(1, repetitions + 1):
                        plan.append((date, user, gesture, location, orientation, rep))
    plan.append(("20181109", "user1", 3, 6, 1, 1))  # location 6 exists only in room 1
    damage_map: dict[str, str] = {}
    if damage:
        plan.append(("20181211", "user4", 7, 1, 1, 1))  # gesture 7 has no name on 20181211
    files = 0
    file_seed = seed * 1_000_003
    if on_total is not None:
        on_total(len(plan))
    for date, user, gesture, location, orientation, rep in plan:
        stem = f"{user}-{gesture}-{location}-{orientation}-{rep}"
        for receiver in range(1, 7):
            file_seed += 1
            n = int(rng.integers(records[0], records[1] + 1))
            data = synthetic_log(n, nrx=3, ntx=1, seed=file_seed, start_timestamp=int(rng.integers(0, 1 << 32)))
            _write(csi / date / user / f"{stem}-r{receiver}.dat", data)
            files += 1
        advance(1)
    if damage:
        def rel(p: Path) -> str:
            return p.relative_to(root).as_posix()

        def first(date: str, user: str) -> Path:
            d, u, g, loc, ori, rep = next(r for r in plan if r[0] == date and r[1] == user)
            return csi / date / user / f"{u}-{g}-{loc}-{ori}-{rep}"

        d0 = csi / "20181109" / "user1"
        empty = Path(f"{first('20181109', 'user1')}-r3.dat")
        _write(empty, b"")
        damage_map[rel(empty)] = "empty file"
        missing = Path(f"{first('20181117', 'user2')}-r6.dat")
        missing.unlink()
        files -= 1
        damage_map[rel(missing)[:-len("6.dat")] + "*.dat"] = "missing receiver"
        garbage = Path(f"{first('20181117', 'user3')}-r2.dat")
        _write(garbage, b"not a bfee log\n" * 50)
        damage_map[rel(garbage)] = "no valid record"
        truncated = Path(f"{first('20181211', 'user1')}-r5.dat")
        _write(truncated, truncated.read_bytes()[:-50])
        damage_map[rel(truncated)] = "truncated"
        for name, kind in ((f"{first('20181109', 'user1').name}-r1 (1).dat", "odd name"),
                           ("user1-x-1-1-1-r1.dat", "odd name"),
                           ("user1-1-9-1-1-r1.dat", "out of range"), ("notes.txt", "odd name"),
                           ("user1-1-1-1-r1.dat", "odd name")):
            p = d0 / name
            _write(p, synthetic_log(5, seed=seed + 7))
            damage_map[rel(p)] = kind
        _write(d0 / ".DS_Store", b"\x00\x00\x00\x01Bud1")  # hidden: ignored, not a problem
        unknown = csi / "20190101"
        _write(unknown / "user1" / "user1-1-1-1-1-r1.dat", synthetic_log(5, seed=seed + 8))
        damage_map[rel(unknown)] = "unknown date folder"
        stray = csi / "user9-1-1-1-1-r1.dat"
        _write(stray, synthetic_log(5, seed=seed + 9))
        damage_map[rel(stray)] = "outside date folder"
        damage_map["CSI/20181211/user4/user4-7-1-1-1-r*.dat"] = "gesture without name"
    _marker(root, "make_widar_tree", _widar_params(s))
    return len(plan), files, damage_map


# ------------------------------------------------------------------------------------------------------------
# MATLAB v5 .mat files (real double arrays only), written by hand so that generating needs no SciPy
# ------------------------------------------------------------------------------------------------------------

_MI_INT8, _MI_INT32, _MI_UINT32, _MI_DOUBLE, _MI_MATRIX = 1, 5, 6, 9, 14
_MX_DOUBLE_CLASS = 6


def _element(mi_type: int, payload: bytes) -> bytes:
    pad = (-len(payload)) % 8
    return struct.pack("<II", mi_type, len(payload)) + payload + b"\x00" * pad


def mat_v5_bytes(arrays: Mapping[str, np.ndarray],
                 header_text: str = "MATLAB 5.0 MAT-file, rfbench synthetic") -> bytes:
    """A little-endian MATLAB v5 file holding real float64 arrays (``scipy.io.loadmat`` reads it back exactly).

    Layout per variable: a miMATRIX element holding array flags (mxDOUBLE_CLASS), dimensions (int32), the
    name (int8) and the real part (miDOUBLE, column-major), each sub-element padded to 8 bytes.
    """
    text = header_text.encode("ascii")[:116].ljust(116, b" ")
    out = [text, b"\x00" * 8, struct.pack("<H", 0x0100), b"IM"]
    for name, arr in arrays.items():
        a = np.asarray(arr, dtype="<f8")
        if a.ndim < 2:
            a = a.reshape(1, -1)
        body = (_element(_MI_UINT32, struct.pack("<II", _MX_DOUBLE_CLASS, 0))
                + _element(_MI_INT32, struct.pack(f"<{a.ndim}i", *a.shape))
                + _element(_MI_INT8, name.encode("ascii"))
                + _element(_MI_DOUBLE, a.tobytes(order="F")))
        out.append(struct.pack("<II", _MI_MATRIX, len(body)) + body)
    return b"".join(out)


def make_mmfi_tree(root: str | os.PathLike, *, seed: int = 0, subjects: Sequence[str] = DEFAULT_MMFI_SUBJECTS,
                   actions: Sequence[str] = DEFAULT_MMFI_ACTIONS, frames: int = 6, damage: bool = True,
                   force: bool = False, progress: Callable[[int], None] | None = None,
                   on_total: Callable[[int], None] | None = None) -> TreeSummary:
    """Write an MM-Fi-like tree ``root/E0x/Syy/Azz/{ground_truth.npy, wifi-csi/frameNNN.mat}``, with its marker.

    Poses move smoothly around :data:`H36M_TEMPLATE` (metres); each WiFi frame's ``CSIamp`` is a fixed,
    seeded linear function of that frame's pose plus noise (so a model can learn something), ``CSIphase`` is
    uniform in [−π, π). The default subjects cover all four environments (two each), so S2 and S3 have both
    sides.

    Parameters
    ----------
    root : path-like
        Destination folder, as for :func:`make_widar_tree`: new or empty, or with ``force`` a tree generated
        there before; written beside it and renamed into place.
    seed : int
    subjects, actions : sequence of str
        Which S01…S40 and A01…A27 to write (each subject under its MM-Fi environment).
    frames : int
        Frames per recording (the real dataset has 297).
    damage : bool
        Add an empty frame file, a ground truth with 16 joints, a recording without ground truth, a subject
        under the wrong environment and stray files; listed in the result.
    force : bool
        Replace a tree generated in ``root`` before.
    progress, on_total : callable, optional
        ``on_total(n)`` once the number of recordings to write is known, ``progress(1)`` after each.

    Returns
    -------
    TreeSummary
        ``recordings`` (the subject under the wrong environment included: ingest keeps it), ``files`` (the
        WiFi frame files written for them) and ``damage``, the planted problems.

    Raises
    ------
    ValidationError
        A value outside :class:`~rfbench.datasets.synthetic_settings.MmfiTreeSettings`' bounds.
    OutputExistsError
        As for :func:`make_widar_tree`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> made = make_mmfi_tree(pathlib.Path(tempfile.mkdtemp()) / "mmfi", subjects=["S01"], actions=["A01", "A02"],
    ...                       frames=2, damage=False)
    >>> made.recordings, made.files
    (2, 4)
    """
    settings = MmfiTreeSettings(seed=seed, subjects=tuple(subjects), actions=tuple(actions), frames=frames,
                                clean=not damage)

    def write(tree: Path) -> tuple:
        return _write_mmfi(tree, settings, progress, on_total)

    recordings, files, damage_map, replaced, total_files, total_bytes = _generate_tree(root, force, write)
    return TreeSummary("mmfi", str(root), recordings, files, damage_map, _mmfi_params(settings), total_files,
                       total_bytes, replaced)


def _mmfi_params(s: MmfiTreeSettings) -> dict:
    return {"seed": s.seed, "subjects": list(s.subjects), "actions": list(s.actions), "frames": s.frames,
            "damage": not s.clean}


def _write_mmfi(root: Path, s: MmfiTreeSettings, progress, on_total) -> tuple:
    from rfbench.datasets.mmfi import environment_of

    seed, subjects, actions, frames, damage = s.seed, s.subjects, s.actions, s.frames, not s.clean
    advance = progress or (lambda n=1: None)
    if on_total is not None:
        on_total(len(subjects) * len(actions))
    rng = np.random.default_rng(seed)
    weights = rng.normal(0.0, 1.0, size=(3 * 114 * 10, 17 * 3)) / np.sqrt(17 * 3)
    recordings = files = 0
    for subject in subjects:
        for action in actions:
            folder = root / environment_of(subject) / subject / action
            t = np.arange(frames)[:, None, None] / 10.0
            phase = rng.uniform(0, 2 * np.pi, size=(1, 17, 3))
            pose = H36M_TEMPLATE[None] + 0.05 * np.sin(t * (1 + int(action[1:]) % 5) + phase)
            pose[:, 0] = (pose[:, 1] + pose[:, 4]) / 2  # pelvis = midpoint of the hips, exactly
            _write(folder / "ground_truth.npy", _npy_bytes(pose))
            for f in range(frames):
                amp = np.abs(weights @ (pose[f] - H36M_TEMPLATE).reshape(-1) * 20 + 10
                             + rng.normal(0, 0.5, 3 * 114 * 10)).reshape(3, 114, 10)
                ph = rng.uniform(-np.pi, np.pi, size=(3, 114, 10))
                _write(folder / "wifi-csi" / f"frame{f + 1:03d}.mat", mat_v5_bytes({"CSIamp": amp, "CSIphase": ph}))
                files += 1
            recordings += 1
            advance(1)
    damage_map: dict[str, str] = {}
    if damage:
        s0, a0 = subjects[0], actions[0]
        env0 = environment_of(s0)
        empty = root / env0 / s0 / a0 / "wifi-csi" / f"frame{min(2, frames):03d}.mat"
        _write(empty, b"")
        damage_map[empty.relative_to(root).as_posix()] = "empty frame"
        if len(actions) > 1:
            gt = root / env0 / s0 / actions[1] / "ground_truth.npy"
            _write(gt, _npy_bytes(np.zeros((frames, 16, 3))))
            damage_map[gt.relative_to(root).as_posix()] = "bad ground truth shape"
        s1 = subjects[-1]
        if len(actions) > 1:
            no_gt = root / environment_of(s1) / s1 / actions[-1] / "ground_truth.npy"
            no_gt.unlink()
            damage_map[no_gt.relative_to(root).as_posix()] = "missing ground truth"
        wrong_env = "E02" if environment_of(s0) != "E02" else "E03"
        moved = root / wrong_env / "S05" / a0
        _write(moved / "ground_truth.npy", _npy_bytes(np.tile(H36M_TEMPLATE, (frames, 1, 1))))
        for f in range(frames):
            _write(moved / "wifi-csi" / f"frame{f + 1:03d}.mat",
                   mat_v5_bytes({"CSIamp": np.ones((3, 114, 10)), "CSIphase": np.zeros((3, 114, 10))}))
            files += 1
        recordings += 1
        damage_map[(root / wrong_env / "S05").relative_to(root).as_posix()] = "subject under wrong environment"
        for p, kind in ((root / "notes.txt", "stray file"), (root / env0 / "S1", "odd folder"),
                        (root / env0 / s0 / a0 / "wifi-csi" / "frame_extra.mat", "odd frame name")):
            if kind == "odd folder":
                p.mkdir(parents=True, exist_ok=True)
            else:
                _write(p, b"x")
            damage_map[p.relative_to(root).as_posix()] = kind
    _marker(root, "make_mmfi_tree", _mmfi_params(s))
    return recordings, files, damage_map


def _npy_bytes(arr: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, np.asarray(arr, dtype=np.float64), allow_pickle=False)
    return buf.getvalue()
