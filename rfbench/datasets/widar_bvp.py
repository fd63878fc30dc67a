"""Widar3.0 BVP trees → manifests: the body-coordinate velocity profiles most Widar3.0 benchmarks read.

Layout: ``ROOT/BVP/<date>-VS/6-link/<user>/<name>.mat``, or without the ``6-link`` level
(``BVP/20181130-VS/<user>/<name>.mat``); ``ROOT`` may also be the ``BVP`` folder itself. A file name is
``<user>-<gesture>-<location>-<orientation>-<repetition>-<BVP parameters>-L<link>.mat``
(``user1-6-3-5-14-1-1e-07-100-20-100000-L0.mat``); the parameters are kept as recorded text. Each file holds one
MATLAB variable ``velocity_spectrum_ro`` of shape (20, 20, T): a 20×20 velocity grid over [−2, +2] m/s in each
body-frame axis, T steps at 10 Hz (MATLAB stores T = 1 as a 20×20 matrix).

One **recording** is one ``.mat`` file, id ``<date>-VS/<user>-<gesture>-<location>-<orientation>-<repetition>-L<link>``;
its ``frames`` is T. The gesture number is local to the date folder and named by the CSI release's per-date table
(:data:`rfbench.datasets.widar.GESTURE_NAMES`, ``-VS`` stripped), except ``20181205-VS``, whose user2 and user3
follow the tables of ``20181205_2`` and ``20181205_3`` (:data:`USER_TABLES`). The room is the date's. Each
recording's ``capture`` is the id of the CSI recording of the same capture (date table, user, gesture,
location, orientation, repetition): the content checks treat a BVP and a CSI recording of one capture as one
source.

Nothing here is fatal: names that do not parse, a number of the name outside :data:`FIELD_RANGES`, unknown
(date, user, gesture) triples, T = 0, a missing or mis-shaped ``velocity_spectrum_ro``, unreadable or non-MAT
files and files past :data:`MAX_BVP_BYTES` become ``problems`` entries (``{path, reason}``); only a tree with no
recording at all is an error. Every file is read once (bounded: at most :data:`MAX_BVP_BYTES` read, and inflated,
per file) and hashed (sha256) from the same bytes, on a pool of threads (batches of files per task); a profile laid
out as MATLAB writes it is judged from its header (:func:`bvp_frames`), and ``rfbench windows`` inflates, parses
and checks it.
"""

from __future__ import annotations

import contextlib
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rfbench.datasets import bvp_readers
from rfbench.datasets.bvp_mat import BVP_VARIABLE, GRID, MAX_BVP_BYTES, bvp_frames, read_bvp, read_bvp_bytes
from rfbench.datasets.bvp_readers import _Read, _read_batch
from rfbench.datasets.manifest import Manifest
from rfbench.datasets.tree import Entry, display_path, duplicate_problems
from rfbench.datasets.widar import (
    DATE_ROOMS,
    GESTURE_NAMES,
    SYNTHETIC_MARKER,
    find_csi_root,
    open_release,
    recording_domains,
    release_extra,
    renaming_link,
    user_problem,
)
from rfbench.errors import ValidationError

__all__ = ["BvpName", "parse_bvp_name", "bvp_table", "find_bvp_root", "is_bvp_tree", "release_kind", "ingest_bvp",
           "read_bvp", "read_bvp_bytes", "bvp_frames", "BVP_VARIABLE", "GRID", "MAX_BVP_BYTES", "USER_TABLES",
           "FIELD_RANGES", "DATASET", "COMMON6", "GESTURE_PRESETS"]

#: The manifest's dataset name for a BVP tree.
DATASET = "widar3-bvp"
#: The six gestures Widar3.0's cross-domain figures are reported on (global names of the per-date tables).
COMMON6 = ("Push&Pull", "Sweep", "Clap", "Slide", "Draw-O(Horizontal)", "Draw-Zigzag(Horizontal)")
#: Named gesture sets ``rfbench split --gestures`` accepts.
GESTURE_PRESETS = {"common6": COMMON6}
#: Date folders whose users follow different CSI tables: ``{date: {user: CSI date folder}}``.
USER_TABLES = {"20181205": {"user2": "20181205_2", "user3": "20181205_3"}}

_CSI_DATE = re.compile(r"^[0-9]{8}(_[0-9]+)?\Z")
_DATE_FOLDER = re.compile(r"^([0-9]{8})-VS\Z")
_NAME = re.compile(r"^(user[0-9]+)-([0-9]+)-([0-9]+)-([0-9]+)-([0-9]+)-(.+)-L([0-9]+)\.mat\Z")
#: Allowed ranges of a BVP name's numbers (inclusive), those of the CSI names and the link's; a value outside is a
#: problem and the file is left out (a manifest holds each number exactly: none may be 200 digits long).
FIELD_RANGES = {"gesture": (1, 99), "location": (1, 8), "orientation": (1, 5), "repetition": (1, 99),
                "link": (0, 99)}
_LINK_LEVEL = "6-link"


@dataclass(frozen=True)
class BvpName:
    """The fields of a Widar3.0 BVP file name."""

    user: str
    gesture: int
    location: int
    orientation: int
    repetition: int
    parameters: str
    link: int

    def capture_stem(self) -> str:
        return f"{self.user}-{self.gesture}-{self.location}-{self.orientation}-{self.repetition}"

    def recording_stem(self) -> str:
        return f"{self.capture_stem()}-L{self.link}"


def parse_bvp_name(name: str) -> BvpName | str:
    """Parse ``user1-6-3-5-14-1-1e-07-100-20-100000-L0.mat``; a :class:`BvpName`, or a string saying why not."""
    m = _NAME.match(name)
    if m is None:
        return ("not a Widar BVP file name (user-gesture-location-orientation-repetition-<parameters>-L<link>.mat); "
                "left out")
    user, g, loc, ori, rep, params, link = m.groups()
    fields = {"gesture": int(g), "location": int(loc), "orientation": int(ori), "repetition": int(rep),
              "link": int(link)}
    for key, value in fields.items():
        lo, hi = FIELD_RANGES[key]
        if not lo <= value <= hi:
            return f"{key} {value} is outside {lo}–{hi}; file left out"
    why = user_problem(user)
    return BvpName(user=user, parameters=params, **fields) if why is None else why


def bvp_table(date: str, user: str) -> str:
    """The CSI date folder whose gesture table names ``user``'s gestures in BVP folder ``<date>-VS``."""
    return USER_TABLES.get(date, {}).get(user, date)


def _has_dates(folder: Path) -> bool:
    try:
        return any(c.is_dir() and _DATE_FOLDER.match(c.name) for c in folder.iterdir())
    except OSError:
        return False


def find_bvp_root(root: Path) -> Path | None:
    """The folder holding the ``<date>-VS`` folders: ``root/BVP``, or ``root`` itself, or None."""
    root = Path(root)
    if (root / "BVP").is_dir():
        return root / "BVP"
    if _has_dates(root):
        return root
    return None


def is_bvp_tree(root: Path) -> bool:
    """Whether ``root`` holds a BVP tree (``BVP/`` or ``<date>-VS`` folders)."""
    return find_bvp_root(Path(root)) is not None


def release_kind(root: str | os.PathLike, kind: str | None = None) -> str:
    """Which Widar3.0 release ``root`` holds: ``kind`` when given (``csi`` or ``bvp``), else ``bvp`` when it holds
    a BVP tree (``BVP/`` or ``<date>-VS`` folders) and no CSI tree (``CSI/`` or CSI date folders), else ``csi``."""
    if kind is not None:
        if kind not in ("csi", "bvp"):
            raise ValidationError(f"`kind` {kind!r}: expected csi or bvp")
        return kind
    root = Path(root)
    if not root.is_dir() or find_bvp_root(root) is None:
        return "csi"
    csi = find_csi_root(root)
    try:
        has_csi = csi != root or any(c.is_dir() and _CSI_DATE.match(c.name) for c in root.iterdir())
    except OSError:
        has_csi = False
    return "csi" if has_csi else "bvp"


#: Files per task of the reading pool: one task per file spent more time handing work to the threads than
#: reading (a future, a lock and a wake-up each).
READ_BATCH = 64


def ingest_bvp(root: str | os.PathLike, *, workers: int | None = None, follow_symlinks: bool = False,
               progress: Callable[[int], None] | None = None,
               on_total: Callable[[int], None] | None = None) -> Manifest:
    """Walk a Widar3.0 BVP tree and build its manifest.

    Parameters
    ----------
    root : path-like
        The dataset folder holding ``BVP/``, or the ``BVP`` folder itself.
    workers : int, optional
        Threads reading and hashing files (default: every core).
    follow_symlinks : bool
        Also follow symbolic links leading outside ``root`` (recorded in the manifest).
    progress, on_total : callable, optional
        ``on_total(n)`` once with the number of files to read, ``progress(k)`` as they are read.

    Returns
    -------
    Manifest
        Dataset ``widar3-bvp``; recordings sorted by id, each with ``date`` (the folder's, ``-VS`` stripped),
        ``subject``, ``room``, ``gesture`` and ``label`` (the name from the per-date/per-user table),
        ``gesture_number``, ``location``, ``orientation``, ``repetition``, ``link``, ``bvp_parameters`` (text),
        ``capture`` (the CSI recording id of the same capture), ``files`` (one: ``path``, ``bytes``, ``sha256``)
        and ``frames`` (T).

    Raises
    ------
    ValidationError
        ``root`` is not a folder, or the tree holds no BVP recording.
    """
    root, walk = open_release(root, "BVP", follow_symlinks)
    bvp_root = find_bvp_root(root) or root
    problems = walk.problems

    # 1. Walk: <date>-VS folders → files, named and placed. 2. Read and hash every non-empty file on a pool of
    # threads, each date folder's files handed over as soon as the walk has placed them (the walk goes on
    # meanwhile).
    n_workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
    candidates: list[tuple[str, BvpName, Entry, str]] = []  # (date, name, entry, table)
    pending: list[tuple[list[Entry], Any]] = []  # (batch, its future) in walk order
    reads: dict[int, _Read] = {}
    readers = None  # reader processes, once the walk has placed enough files (rfbench.datasets.bvp_readers)
    from rfbench.io.world import children_share_it

    processes = n_workers > 1 and (os.cpu_count() or 1) > 1 and children_share_it()
    with ThreadPoolExecutor(max_workers=n_workers) as pool, contextlib.ExitStack() as stop:
        top = walk.entries(bvp_root) if walk.enter(bvp_root) else []
        for entry in top:
            if entry.name == SYNTHETIC_MARKER:
                continue
            if not entry.is_dir:
                walk.problem(entry.rel, "file outside any date folder; left out")
                continue
            renamed = renaming_link(entry)
            if renamed is not None:
                walk.problem(entry.rel, renamed)
                continue
            m = _DATE_FOLDER.match(entry.name)
            date = m.group(1) if m else None
            if date is None or date not in DATE_ROOMS:
                n = walk.count_files(entry.path, entry.real)
                kind = "date folder" if m else "folder"
                walk.problem(entry.rel, f"unknown {kind} {entry.name!r}: not a Widar3.0 BVP date folder (<date>-VS "
                                        f"of the date→room table); its {n} file(s) are left out")
                continue
            first = len(candidates)
            skip = len(str(entry.path)) + 1  # a file's folder below the date folder: its folder's text after this
            for f in walk.files(entry.path, entry.real):
                below = str(f.folder)[skip:]
                parts = below.split(os.sep) + [f.name] if below else [f.name]
                if not (len(parts) == 2 or (len(parts) == 3 and parts[0] == _LINK_LEVEL)):
                    walk.problem(f.rel, f"not in a BVP layout ({entry.name}/6-link/<user>/<file>.mat or "
                                        f"{entry.name}/<user>/<file>.mat); left out")
                    continue
                parsed = parse_bvp_name(f.name)
                if isinstance(parsed, str):
                    walk.problem(f.rel, parsed)
                    continue
                folder = parts[-2]
                if folder != parsed.user:
                    walk.problem(f.rel, f"file name says {parsed.user} but its folder is {folder}; the file name is "
                                        "used")
                table = bvp_table(date, parsed.user)
                if table not in GESTURE_NAMES or not 1 <= parsed.gesture <= len(GESTURE_NAMES[table]):
                    walk.problem(f.rel, f"unknown gesture: {parsed.user}'s gesture {parsed.gesture} on {date} has "
                                        f"no name in the {table} table; left out")
                    continue
                candidates.append((date, parsed, f, table))
            to_read = [c[2] for c in candidates[first:] if c[2].size > 0]
            if processes and readers is None and len(candidates) >= bvp_readers.MIN_FILES:
                readers = bvp_readers.BvpReaders(min(n_workers, os.cpu_count() or 1))
                if readers.start():
                    stop.callback(readers.close)
                else:
                    readers, processes = None, False
            for k in range(0, len(to_read), READ_BATCH):
                batch = to_read[k:k + READ_BATCH]
                pending.append((batch, readers.submit(batch) if readers is not None else
                                pool.submit(_read_batch, batch)))
        if on_total is not None:
            on_total(sum(len(batch) for batch, _ in pending))
        results = iter(pending)

        def read_of(f: Entry) -> _Read:
            """The read of ``f``, waiting for its batch: batches come in the order of the candidates."""
            while id(f) not in reads:
                batch, future = next(results)
                for e, r in zip(batch, future.result()):
                    reads[id(e)] = r  # the entries live in candidates meanwhile
                if progress is not None:
                    progress(len(batch))
            return reads[id(f)]

        # 3. Assemble recordings as the reads come in (the readers go on meanwhile).
        recordings, seen = [], {}
        generated = None  # the first profile whose MAT header says the generator wrote it
        for date, name, f, table in candidates:
            rid = f"{date}-VS/{name.recording_stem()}"
            if rid in seen:
                walk.problem(f.rel, f"second file for recording {rid} (first: {seen[rid]}); left out")
                continue
            if f.size == 0:
                walk.problem(f.rel, "empty file (0 bytes); the recording has no data")
                continue
            r = read_of(f)
            if r.error is not None:
                if r.error.startswith("no numeric") or "has shape" in r.error:
                    walk.problem(f.rel, f"{r.error}; left out")
                else:
                    walk.problem(f.rel, f"cannot read: {r.error}; left out")
                continue
            if r.frames == 0:
                walk.problem(f.rel, f"no BVP frames ({BVP_VARIABLE} is {GRID}×{GRID}×0); left out")
                continue
            seen[rid] = f.rel
            if r.generated and generated is None:
                generated = {"path": f.rel, "sha256": r.sha256, "found_in": "the file's MAT header text"}
            gname = GESTURE_NAMES[table][name.gesture - 1]
            recordings.append({
                "id": rid,
                **recording_domains(date, DATE_ROOMS[table], gname, name),
                "link": name.link,
                "bvp_parameters": name.parameters,
                "capture": f"{table}/{name.capture_stem()}",
                "files": [{"path": f.rel, "bytes": f.size, "sha256": r.sha256}],
                "frames": r.frames,
            })
        for batch, future in results:  # files of recordings left out before their read (a second file)
            future.result()
            if progress is not None:
                progress(len(batch))

    if not recordings:
        raise ValidationError(f"{display_path(str(root))}: no Widar3.0 BVP recording found (expected BVP/<date>-VS/"
                              "[6-link/]<user>/<user>-<gesture>-<location>-<orientation>-<repetition>-<parameters>-"
                              f"L<link>.mat; {len(problems)} problem(s) in the tree)")
    recordings.sort(key=lambda rec: rec["id"])
    problems.extend(duplicate_problems((f["path"], f["sha256"], f["bytes"]) for r in recordings
                                       for f in r["files"])[0])
    problems.sort(key=lambda p: (p["path"], p["reason"]))
    extra: dict = {"kind": "bvp", "bvp": {"variable": BVP_VARIABLE, "grid": [GRID, GRID], "rate_hz": 10,
                                         "velocity_range_m_s": [-2, 2]}}
    synthetic = release_extra(extra, walk, bvp_root, follow_symlinks)
    if not synthetic and generated is not None:  # the marker file gone, the profiles still say who wrote them
        extra["synthetic_marker"], synthetic = generated, True
    return Manifest(dataset=DATASET, root=os.path.abspath(root), recordings=recordings, problems=problems,
                    synthetic=synthetic, extra=extra)
