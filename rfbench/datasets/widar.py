"""Widar3.0 CSI trees → manifests (DESIGN.md §4).

Layout: ``ROOT/CSI/<date>/<user>/<user>-<gesture>-<location>-<orientation>-<repetition>-r<receiver>.dat``
(``ROOT`` may also be the ``CSI`` folder itself). The date folder fixes the room (:data:`DATE_ROOMS`, suffixed
folders such as ``20181205_2`` included) and the meaning of the gesture number (:data:`GESTURE_NAMES`: gesture 4
is Slide on 20181109 but Draw-O(Vertical) on 20181115). One **recording** is one (date, user, gesture,
location, orientation, repetition); its receiver files (r1–r6) belong to it and never split apart.

Every file is parsed with :func:`rfbench.io.intel5300.read` (packet counts and skip reports), in parallel
across files: the parser's Numba kernels release the GIL, so a thread pool uses every core.

Nothing here is fatal: unparseable names, unknown date folders, empty files, files with no valid CSI record,
missing receivers and out-of-range fields become ``problems`` entries (``{path, reason}``).
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from rfbench.datasets.manifest import Manifest
from rfbench.errors import FormatError, ValidationError

__all__ = [
    "DATE_ROOMS",
    "GESTURE_NAMES",
    "WidarName",
    "parse_name",
    "gesture_name",
    "ingest",
    "find_csi_root",
    "SYNTHETIC_MARKER",
]

#: File a generated tree carries at its root; its presence makes the manifest ``"synthetic": true``.
SYNTHETIC_MARKER = "RFBENCH_SYNTHETIC.json"

_ROOM_DATES = {
    1: ("20181109", "20181112", "20181115", "20181116", "20181121", "20181130"),
    2: ("20181117", "20181118", "20181127", "20181128", "20181204", "20181205", "20181205_2", "20181205_3",
        "20181208", "20181209"),
    3: ("20181211",),
}
#: Date folder → room (1 classroom, 2 hall, 3 office), from the Widar3.0 release notes.
DATE_ROOMS: dict[str, int] = {date: room for room, dates in _ROOM_DATES.items() for date in dates}

_PPC = ("Push&Pull", "Sweep", "Clap")
_DIGITS = tuple(f"Draw-{d}" for d in (1, 2, 3, 4, 5, 6, 7, 8, 9, 0))
_V = ("Draw-O(Vertical)", "Draw-Zigzag(Vertical)", "Draw-N(Vertical)")
_H3 = ("Draw-O(Horizontal)", "Draw-Zigzag(Horizontal)", "Draw-N(Horizontal)")
_H5 = _H3 + ("Draw-Triangle(Horizontal)", "Draw-Rectangle(Horizontal)")
#: Date folder → gesture names by number (index 0 is gesture 1). Numbers mean different gestures on
#: different dates; classification uses these names, never bare numbers.
GESTURE_NAMES: dict[str, tuple[str, ...]] = {
    "20181109": _PPC + ("Slide", "Draw-Zigzag(Vertical)", "Draw-N(Vertical)"),
    "20181112": _DIGITS,
    "20181115": _PPC + _V,
    "20181116": _DIGITS,
    "20181117": _PPC + _V,
    "20181118": _PPC + _V,
    "20181121": ("Slide",) + _H5,
    "20181127": ("Slide",) + _H5,
    "20181128": _PPC + _H3,
    "20181130": _PPC + ("Slide",) + _H5,
    "20181204": _PPC + ("Slide",) + _H5,
    "20181205_2": _H5,
    "20181205_3": ("Slide",) + _H5,
    "20181208": _PPC + ("Slide",),
    "20181209": _PPC + ("Slide",) + _H3[:2],
    "20181211": _PPC + ("Slide",) + _H3[:2],
}

_DATE_LIKE = re.compile(r"^\d{8}(_\d+)?$")
_NAME = re.compile(r"^(user\d+)-(\d+)-(\d+)-(\d+)-(\d+)-r(\d+)\.dat$")
#: Allowed ranges of the name fields (inclusive); a value outside is a problem and the file is left out.
FIELD_RANGES = {"location": (1, 8), "orientation": (1, 5), "receiver": (1, 6), "gesture": (1, 99),
                "repetition": (1, 99)}


@dataclass(frozen=True)
class WidarName:
    """The fields of a Widar3.0 CSI file name."""

    user: str
    gesture: int
    location: int
    orientation: int
    repetition: int
    receiver: int

    def recording_stem(self) -> str:
        return f"{self.user}-{self.gesture}-{self.location}-{self.orientation}-{self.repetition}"


def parse_name(name: str) -> WidarName | str:
    """Parse ``user1-2-3-4-5-r6.dat``; return a :class:`WidarName`, or a string saying why it is not one."""
    m = _NAME.match(name)
    if m is None:
        return "not a Widar CSI file name (user-gesture-location-orientation-repetition-rN.dat); left out"
    user, *numbers = m.groups()
    fields = dict(zip(("gesture", "location", "orientation", "repetition", "receiver"), map(int, numbers)))
    for key, value in fields.items():
        lo, hi = FIELD_RANGES[key]
        if not lo <= value <= hi:
            return f"{key} {value} is outside {lo}–{hi}; file left out"
    return WidarName(user=user, **fields)


def gesture_name(date: str, number: int) -> str | None:
    """The gesture name of ``number`` on ``date`` (a date folder name), or None when the table has none."""
    names = GESTURE_NAMES.get(date, ())
    return names[number - 1] if 1 <= number <= len(names) else None


def find_csi_root(root: Path) -> Path:
    """The folder holding the date folders: ``root/CSI`` when it exists, else ``root`` when it holds date
    folders, else the ``CSI`` folder (or date folders) of ``root``'s only sub-folder that has them (a download
    unpacked into its own folder), else ``root``."""
    def dates_in(p: Path) -> bool:
        try:
            return any(c.is_dir() and _DATE_LIKE.match(c.name) for c in p.iterdir())
        except OSError:
            return False

    if (root / "CSI").is_dir():
        return root / "CSI"
    if dates_in(root):
        return root
    inner = []
    for child in sorted(root.iterdir()):
        if child.is_dir() and not child.name.startswith("."):
            if (child / "CSI").is_dir():
                inner.append(child / "CSI")
            elif dates_in(child):
                inner.append(child)
    return inner[0] if len(inner) == 1 else root


#: Files per batch of the ingest pool: one read buffer and one kernel call per batch, so the threads spend their
#: time in the kernel (GIL released), not in switching between short calls; a batch stops early at this many bytes.
BATCH_FILES = 16
BATCH_BYTES = 16 << 20


def _count_paths(paths: list[str]) -> list[tuple[int, dict, str | None]]:
    """``(valid records, skipped by reason, error or None)`` of each file: the parser's framing, which
    validates every record (the CSI itself is not needed for a manifest)."""
    from rfbench.io import intel5300

    out = []
    for result in intel5300.count_files(paths):
        if isinstance(result, FormatError):
            out.append((0, {}, str(result)))
        else:
            out.append((result.n_records, {k: int(v) for k, v in result.skipped.items() if v}, None))
    return out


def _batches(jobs) -> list[list[str]]:
    batches, batch, size = [], [], 0
    for job in jobs:
        if batch and (len(batch) == BATCH_FILES or size + job[3] > BATCH_BYTES):
            batches.append(batch)
            batch, size = [], 0
        batch.append(str(job[2]))
        size += job[3]
    if batch:
        batches.append(batch)
    return batches


def _walk_files(folder: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        out.extend(Path(dirpath) / f for f in sorted(filenames) if not f.startswith("."))
    return out


def ingest(root: str | os.PathLike, *, workers: int | None = None, receivers_expected: Iterable[int] | None = None,
           progress: Callable[[int], None] | None = None, on_total: Callable[[int], None] | None = None) -> Manifest:
    """Walk a Widar3.0 CSI tree and build its manifest.

    Parameters
    ----------
    root : path-like
        The dataset folder holding ``CSI/``, or the ``CSI`` folder itself.
    workers : int, optional
        Threads parsing files (default: every core).
    receivers_expected : iterable of int, optional
        Receivers every recording should have. Default: every receiver number found anywhere in the tree
        (r1–r6 on the full dataset), so a recording short of one is reported.
    progress : callable, optional
        Called with the number of files just parsed (for a progress bar).
    on_total : callable, optional
        Called once with the number of files to parse, before parsing starts.

    Returns
    -------
    Manifest
        Recordings sorted by id (``<date>/<user>-<gesture>-<location>-<orientation>-<repetition>``), each with
        ``date``, ``subject``, ``room``, ``gesture`` (name, or None when the date's table has no such
        number), ``gesture_number``, ``location``, ``orientation``, ``repetition``, ``receivers`` (receivers with
        at least one valid CSI record), ``files`` (one per receiver file, with ``receiver``, ``records`` and
        ``skipped``) and ``frames`` (the fewest valid records of any usable receiver: windows over a recording's
        packets exist in every receiver). Problems are sorted by path.

    Raises
    ------
    ValidationError
        ``root`` is not a folder.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValidationError(f"{root}: not a folder; give the Widar3.0 folder holding CSI/ (or the CSI folder)")
    csi_root = find_csi_root(root)
    problems: list[dict] = []

    def rel(p: Path) -> str:
        return p.relative_to(root).as_posix()

    # 1. Walk: date folders → candidate files grouped by recording.
    groups: dict[tuple[str, str], dict] = {}
    for entry in sorted(csi_root.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or entry.name == SYNTHETIC_MARKER:
            continue
        if entry.is_file():
            problems.append({"path": rel(entry), "reason": "file outside any date folder; left out"})
            continue
        if not entry.is_dir():
            continue
        date = entry.name
        if date not in DATE_ROOMS:
            n = len(_walk_files(entry))
            kind = "date folder" if _DATE_LIKE.match(date) else "folder"
            problems.append({"path": rel(entry), "reason": f"unknown {kind} {date!r}: not in the Widar3.0 "
                             f"date→room table; its {n} file(s) are left out"})
            continue
        for path in _walk_files(entry):
            parsed = parse_name(path.name)
            if isinstance(parsed, str):
                problems.append({"path": rel(path), "reason": parsed})
                continue
            parent = path.parent.name
            if path.parent != entry and parent.startswith("user") and parent != parsed.user:
                problems.append({"path": rel(path), "reason": f"file name says {parsed.user} but its folder is "
                                 f"{parent}; the file name is used"})
            key = (date, parsed.recording_stem())
            group = groups.setdefault(key, {"name": parsed, "files": {}, "folder": path.parent})
            if parsed.receiver in group["files"]:
                problems.append({"path": rel(path), "reason": f"second file for receiver r{parsed.receiver} of "
                                 f"{date}/{parsed.recording_stem()} (first: {rel(group['files'][parsed.receiver])}); "
                                 "left out"})
                continue
            group["files"][parsed.receiver] = path

    # 2. Parse every non-empty file, in parallel.
    jobs: list[tuple[tuple[str, str], int, Path, int]] = []
    for key in sorted(groups):
        for receiver, path in sorted(groups[key]["files"].items()):
            try:
                size = path.stat().st_size
            except OSError as exc:
                size = -1
                problems.append({"path": rel(path), "reason": f"cannot stat ({exc.strerror or exc}); left out"})
            jobs.append((key, receiver, path, size))
    to_parse = [j for j in jobs if j[3] > 0]
    if on_total is not None:
        on_total(len(to_parse))
    results: dict[str, tuple[int, dict, str | None]] = {}
    n_workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        futures = {pool.submit(_count_paths, batch): batch for batch in _batches(to_parse)}
        for fut in as_completed(futures):
            batch = futures[fut]
            results.update(zip(batch, fut.result()))
            if progress is not None:
                progress(len(batch))

    # 3. Assemble recordings.
    seen_receivers = sorted({j[1] for j in jobs})
    expected = sorted(set(receivers_expected)) if receivers_expected is not None else seen_receivers
    recordings = []
    by_key: dict[tuple[str, str], list] = {}
    for job in jobs:
        by_key.setdefault(job[0], []).append(job)
    for key in sorted(groups):
        date, stem = key
        name: WidarName = groups[key]["name"]
        room = DATE_ROOMS[date]
        files, usable = [], []
        for _, receiver, path, size in by_key.get(key, []):
            if size < 0:
                continue
            entry = {"path": rel(path), "bytes": size, "receiver": receiver, "records": 0, "skipped": {}}
            if size == 0:
                problems.append({"path": rel(path), "reason": "empty file (0 bytes); receiver "
                                 f"r{receiver} has no data"})
            else:
                records, skipped, error = results[str(path)]
                entry["records"], entry["skipped"] = records, skipped
                if error is not None:
                    problems.append({"path": rel(path), "reason": f"cannot read: {error}"})
                elif records == 0:
                    problems.append({"path": rel(path), "reason": "no valid Intel 5300 CSI record; receiver "
                                     f"r{receiver} has no data"})
                else:
                    usable.append((receiver, records))
                    bad = {k: v for k, v in skipped.items() if k != "invalid_perm"}
                    if bad:
                        detail = ", ".join(f"{k} {v}" for k, v in sorted(bad.items()))
                        problems.append({"path": rel(path), "reason": f"{sum(bad.values())} record(s) skipped "
                                         f"({detail}); the other {records} are used"})
            files.append(entry)
        missing = [r for r in expected if r not in groups[key]["files"]]
        folder = rel(groups[key]["folder"])
        if missing:
            problems.append({"path": f"{folder}/{stem}-r*.dat", "reason": "missing receiver file(s) "
                             + ", ".join(f"r{r}" for r in missing) + " (expected "
                             + ", ".join(f"r{r}" for r in expected) + ")"})
        gname = gesture_name(date, name.gesture)
        if gname is None:
            problems.append({"path": f"{folder}/{stem}-r*.dat", "reason": f"gesture number {name.gesture} has no "
                             f"name on {date} in the per-date table; recording kept with gesture null"})
        if name.location > 5 and room != 1:
            problems.append({"path": f"{folder}/{stem}-r*.dat", "reason": f"location {name.location} is documented "
                             f"only in room 1, but {date} is room {room}; kept as found"})
        recordings.append({
            "id": f"{date}/{stem}",
            "date": date,
            "subject": name.user,
            "room": room,
            "gesture": gname,
            "gesture_number": name.gesture,
            "location": name.location,
            "orientation": name.orientation,
            "repetition": name.repetition,
            "receivers": sorted(r for r, _ in usable),
            "files": files,
            "frames": min((n for _, n in usable), default=0),
        })
    problems.sort(key=lambda p: (p["path"], p["reason"]))
    return Manifest(
        dataset="widar3",
        root=str(root.resolve()),
        recordings=recordings,
        problems=problems,
        synthetic=(root / SYNTHETIC_MARKER).is_file() or (csi_root / SYNTHETIC_MARKER).is_file(),
        extra={"receivers_expected": expected},
    )
