"""Widar3.0 CSI trees → manifests (DESIGN.md §4).

Layout: ``ROOT/CSI/<date>/<user>/<user>-<gesture>-<location>-<orientation>-<repetition>-r<receiver>.dat``
(``ROOT`` may also be the ``CSI`` folder itself). The date folder fixes the room (:data:`DATE_ROOMS`, suffixed
folders such as ``20181205_2`` included) and the meaning of the gesture number (:data:`GESTURE_NAMES`: gesture 4
is Slide on 20181109 but Draw-O(Vertical) on 20181115). One **recording** is one (date, user, gesture,
location, orientation, repetition); its receiver files (r1–r6) belong to it and never split apart.

This is the generic name-template ingest (:mod:`rfbench.datasets.files`) with Widar's built-in template
(:data:`NAME_TEMPLATE`, matched against each file name under a date folder), its root discovery
(:func:`find_csi_root`) and its date→room and per-date gesture tables. The tree is walked by
:class:`rfbench.datasets.tree.TreeWalk` (odd names, links leaving the tree and non-regular files are problems,
never crashes), and every file is framed by the parser's kernel and hashed (sha256) in the same read
(:func:`rfbench.datasets.tree.count_logs`), in parallel across files.

Nothing here is fatal: unparseable names, unknown date folders, empty files, files with no valid CSI record,
missing receivers and out-of-range fields become ``problems`` entries (``{path, reason}``); only a tree with no
recording at all is an error.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from rfbench.datasets.manifest import Manifest
from rfbench.datasets.template import compile_template
from rfbench.datasets.tree import (
    TreeWalk,
    count_logs,
    display_path,
    duplicate_problems,
    generated_log,
    part_entries,
    tree_marker,
)
from rfbench.errors import ValidationError

__all__ = [
    "DATE_ROOMS",
    "GESTURE_NAMES",
    "WidarName",
    "parse_name",
    "gesture_name",
    "recording_domains",
    "ingest",
    "find_csi_root",
    "SYNTHETIC_MARKER",
    "NAME_TEMPLATE",
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

_DATE_LIKE = re.compile(r"^[0-9]{8}(_[0-9]+)?\Z")
#: Widar3.0's file-name template, matched against the name of each file under a date folder; the user must be
#: ``user<N>`` and the other fields decimal numbers.
NAME_TEMPLATE = "{user}-{gesture}-{location}-{orientation}-{repetition}-r{receiver}.dat"
_NUMBER = "[0-9]+"
_TEMPLATE = compile_template(NAME_TEMPLATE, patterns={"user": "user[0-9]+", "gesture": _NUMBER, "location": _NUMBER,
                                                      "orientation": _NUMBER, "repetition": _NUMBER,
                                                      "receiver": _NUMBER})
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
    values = _TEMPLATE.match(name)
    if isinstance(values, str):
        return "not a Widar CSI file name (user-gesture-location-orientation-repetition-rN.dat); left out"
    fields = {key: int(values[key]) for key in ("gesture", "location", "orientation", "repetition", "receiver")}
    for key, value in fields.items():
        lo, hi = FIELD_RANGES[key]
        if not lo <= value <= hi:
            return f"{key} {value} is outside {lo}–{hi}; file left out"
    why = user_problem(values["user"])
    return WidarName(user=values["user"], **fields) if why is None else why


def renaming_link(entry) -> str | None:
    """Why a date folder that is a link named otherwise than the folder it leads to is left out, else None: a
    date folder's name decides its room and gesture table, so ``20181109 -> 20181204`` would ingest one date's
    files as another's (and, sorting first, leave the real folder out as reached a second time)."""
    real_name = os.path.basename(entry.real)
    if real_name == entry.name or not os.path.islink(entry.path):
        return None
    return (f"a link to the folder {display_path(real_name)!r}: a date folder's name decides its room and gesture "
            "table, so a link named as another folder is left out (a target inside the tree is walked under its "
            "own name)")


def user_problem(user: str) -> str | None:
    """Why a name's ``user<N>`` is not one Widar3.0 writes (``N`` with a leading zero, or 0), else None: the
    user is the subject as written, so ``user01`` beside ``user1`` would be two people — one person on both
    sides of a cross-subject split, and their CSI and BVP recordings of one capture told apart."""
    if user[4] == "0":
        return (f"{user}: not a Widar3.0 user name (user1, user2, …: a number without a leading zero, so that "
                "one person has one name); file left out")
    return None


def recording_domains(date: str, room: int, gesture: str | None, name) -> dict:
    """The domain keys every Widar3.0 recording carries, of the CSI release or the BVP one (``name`` a
    :class:`WidarName` or a BVP name: user, gesture number, location, orientation, repetition), in manifest
    order: a capture in both releases gets the same values under the same keys."""
    return {"date": date, "subject": name.user, "room": room, "gesture": gesture, "label": gesture,
            "gesture_number": name.gesture, "location": name.location, "orientation": name.orientation,
            "repetition": name.repetition}


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
    try:
        children = sorted(root.iterdir())
    except OSError:
        return root
    for child in children:
        if child.is_dir() and not child.name.startswith("."):
            if (child / "CSI").is_dir():
                inner.append(child / "CSI")
            elif dates_in(child):
                inner.append(child)
    return inner[0] if len(inner) == 1 else root


def ingest(root: str | os.PathLike, *, workers: int | None = None, receivers_expected: Iterable[int] | None = None,
           follow_symlinks: bool = False, progress: Callable[[int], None] | None = None,
           on_total: Callable[[int], None] | None = None) -> Manifest:
    """Walk a Widar3.0 CSI tree and build its manifest.

    Parameters
    ----------
    root : path-like
        The dataset folder holding ``CSI/``, or the ``CSI`` folder itself.
    workers : int, optional
        Threads counting and hashing files (default: every core).
    receivers_expected : iterable of int, optional
        Receivers every recording should have. Default: every receiver number found anywhere in the tree
        (r1–r6 on the full dataset), so a recording short of one is reported.
    follow_symlinks : bool
        Also follow symbolic links leading outside ``root`` (recorded in the manifest); by default they are
        problems and left out.
    progress : callable, optional
        Called with the number of files just counted (for a progress bar).
    on_total : callable, optional
        Called once with the number of files to count, before counting starts.

    Returns
    -------
    Manifest
        Recordings sorted by id (``<date>/<user>-<gesture>-<location>-<orientation>-<repetition>``), each with
        ``date``, ``subject``, ``room``, ``gesture`` (name, or None when the date's table has no such
        number), ``label`` (the same name: the class), ``gesture_number``, ``location``, ``orientation``,
        ``repetition``, ``receivers`` (receivers with at least one valid CSI record), ``files`` (one per receiver
        file: ``path``, ``bytes``, ``sha256``, ``receiver``, ``records``, ``skipped``) and ``frames`` (the fewest
        valid records of any usable receiver: windows over a recording's packets exist in every receiver).
        Problems are sorted by path; files with identical bytes are problems too.

    Raises
    ------
    ValidationError
        ``root`` is not a folder, or the tree holds no Widar3.0 recording.

    Examples
    --------
    >>> import tempfile
    >>> import rfbench
    >>> from rfbench.datasets.synthetic import make_widar_tree
    >>> root = tempfile.mkdtemp()
    >>> _ = make_widar_tree(root, records=(3, 4), damage=False)
    >>> manifest = rfbench.ingest_widar(root, workers=1)
    >>> manifest.dataset, manifest.synthetic, manifest.recordings[0]["receivers"]
    ('widar3', True, [1, 2, 3, 4, 5, 6])
    """
    root, walk = open_release(root, "CSI", follow_symlinks)
    csi_root = find_csi_root(root)
    problems = walk.problems

    # 1. Walk: date folders → candidate files grouped by recording.
    groups: dict[tuple[str, str], dict] = {}
    top = walk.entries(csi_root) if walk.enter(csi_root) else []
    for entry in top:
        if entry.name == SYNTHETIC_MARKER:
            continue
        if not entry.is_dir:
            walk.problem(entry.rel, "file outside any date folder; left out")
            continue
        date = entry.name
        renamed = renaming_link(entry)
        if renamed is not None:
            walk.problem(entry.rel, renamed)
            continue
        if date not in DATE_ROOMS:
            n = walk.count_files(entry.path, entry.real)
            kind = "date folder" if _DATE_LIKE.match(date) else "folder"
            walk.problem(entry.rel, f"unknown {kind} {date!r}: not in the Widar3.0 date→room table; its {n} "
                                    "file(s) are left out")
            continue
        for f in walk.files(entry.path, entry.real):
            parsed = parse_name(f.name)
            if isinstance(parsed, str):
                walk.problem(f.rel, parsed)
                continue
            parent = f.path.parent.name
            if f.path.parent != entry.path and parent.startswith("user") and parent != parsed.user:
                walk.problem(f.rel, f"file name says {parsed.user} but its folder is {parent}; the file name is used")
            key = (date, parsed.recording_stem())
            group = groups.setdefault(key, {"name": parsed, "files": {}, "folder": f.path.parent})
            if parsed.receiver in group["files"]:
                walk.problem(f.rel, f"second file for receiver r{parsed.receiver} of {date}/"
                                    f"{parsed.recording_stem()} (first: {group['files'][parsed.receiver].rel}); "
                                    "left out")
                continue
            group["files"][parsed.receiver] = f

    # 2. Count and hash every non-empty file, in parallel.
    to_count = [(str(f.path), f.size) for key in sorted(groups) for _, f in sorted(groups[key]["files"].items())
                if f.size > 0]
    if on_total is not None:
        on_total(len(to_count))
    counts = count_logs(to_count, workers=workers, progress=progress)

    # 3. Assemble recordings.
    seen_receivers = sorted({r for g in groups.values() for r in g["files"]})
    expected = sorted(set(receivers_expected)) if receivers_expected is not None else seen_receivers
    recordings = []
    for key in sorted(groups):
        date, stem = key
        name: WidarName = groups[key]["name"]
        room = DATE_ROOMS[date]
        members = [((r,), f) for r, f in groups[key]["files"].items()]
        files, usable = part_entries(members, ("receiver",), counts, lambda values: f"receiver r{values[0]}",
                                     problems)
        missing = [r for r in expected if r not in groups[key]["files"]]
        folder = walk.rel(groups[key]["folder"])
        if missing:
            walk.problem(f"{folder}/{stem}-r*.dat", "missing receiver file(s) " + ", ".join(f"r{r}" for r in missing)
                         + " (expected " + ", ".join(f"r{r}" for r in expected) + ")")
        gname = gesture_name(date, name.gesture)
        if gname is None:
            walk.problem(f"{folder}/{stem}-r*.dat", f"gesture number {name.gesture} has no name on {date} in the "
                                                    "per-date table; recording kept with gesture null")
        if name.location > 5 and room != 1:
            walk.problem(f"{folder}/{stem}-r*.dat", f"location {name.location} is documented only in room 1, but "
                                                    f"{date} is room {room}; kept as found")
        recordings.append({
            "id": f"{date}/{stem}",
            **recording_domains(date, room, gname, name),
            "receivers": sorted(r for (r,), _ in usable),
            "files": files,
            "frames": min((n for _, n in usable), default=0),
        })
    if not recordings:
        raise ValidationError(f"{display_path(str(root))}: no Widar3.0 recording found (expected "
                              "CSI/<date>/<user>/<user>-<gesture>-"
                              f"<location>-<orientation>-<repetition>-r<N>.dat; {len(problems)} problem(s) in the "
                              "tree)")
    problems.extend(duplicate_problems((f["path"], f["sha256"], f["bytes"]) for r in recordings
                                       for f in r["files"])[0])
    problems.sort(key=lambda p: (p["path"], p["reason"]))
    extra: dict = {"receivers_expected": expected}
    synthetic = release_extra(extra, walk, csi_root, follow_symlinks)
    if not synthetic:  # the marker file gone, the logs may still say who wrote them
        paths = {f.rel: str(f.path) for g in groups.values() for f in g["files"].values()}
        generated = generated_log(recordings, paths, counts)
        if generated is not None:
            extra["synthetic_marker"], synthetic = generated, True
    return Manifest(dataset="widar3", root=os.path.abspath(root), recordings=recordings, problems=problems,
                    synthetic=synthetic, extra=extra)


def open_release(root: str | os.PathLike, data: str, follow_symlinks: bool) -> tuple[Path, TreeWalk]:
    """``root`` as a Path and its :class:`TreeWalk`: the start of every Widar3.0 ingest (``data`` names the
    release's data folder, ``CSI`` or ``BVP``, for the error).

    Raises
    ------
    ValidationError
        ``root`` is not a folder.
    """
    root = Path(root)
    if not root.is_dir():
        raise ValidationError(f"{display_path(str(root))}: not a folder; give the Widar3.0 folder holding {data}/ "
                              f"(or the {data} folder)")
    return root, TreeWalk(root, follow_symlinks=follow_symlinks)


def release_extra(extra: dict, walk: TreeWalk, data_root: Path, follow_symlinks: bool) -> bool:
    """Add the synthetic marker (:func:`~rfbench.datasets.tree.tree_marker`, ``data_root`` looked in after the
    walk's root) and ``follow_symlinks`` to a Widar3.0 manifest's ``extra``; whether the tree is synthetic."""
    marker = tree_marker(walk, SYNTHETIC_MARKER, also=data_root)
    if marker is not None:
        extra["synthetic_marker"] = marker
    if follow_symlinks:
        extra["follow_symlinks"] = True
    return marker is not None
