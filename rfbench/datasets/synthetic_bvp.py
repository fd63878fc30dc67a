"""A deterministic Widar3.0-like BVP tree (``rfbench generate widar --kind bvp``), marked SYNTHETIC.

Laid out as the BVP release: ``BVP/<date>-VS/6-link/<user>/<name>.mat`` and, for ``20181130-VS``, without the
``6-link`` level; ``20181205-VS`` holds user2 and user3, whose gesture numbers follow the ``20181205_2`` and
``20181205_3`` tables. Each file is a MATLAB v5 file holding ``velocity_spectrum_ro`` (20, 20, T) float64
(written here, no SciPy; every third file with its variable compressed, as MATLAB's ``save`` does). The profile is
a blob moving across the velocity grid along a path fixed by the gesture's global name (so a model can learn the
gesture), its speed by the orientation, plus seeded noise: no number computed on it says anything about real
WiFi sensing.

The marker file sits at the tree's root and in ``BVP/`` (a user may ingest either). With damage (the default)
the tree also holds a T = 0 file, names that do not parse, a gesture number the
date's table does not have, a ``.mat`` file that is not a MAT-file, a file without ``velocity_spectrum_ro``, one
with it mis-shaped, an empty file and an unknown date folder; the summary lists them.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path
from typing import Callable

import numpy as np

from rfbench.datasets.synthetic import TreeSummary, _generate_tree, _marker, _write, mat_v5_bytes
from rfbench.datasets.synthetic_settings import WidarTreeSettings
from rfbench.datasets.widar_bvp import COMMON6
from rfbench.errors import ValidationError

__all__ = ["make_widar_bvp_tree", "BVP_PLAN", "COMMON6", "bvp_file_bytes", "PARAMETERS"]

#: The BVP parameters text of every generated file name (as in the release's names).
PARAMETERS = "1-1e-07-100-20-100000"
#: (date folder, 6-link level?, ((user, gesture numbers), ...)): three rooms, both layouts, the per-user tables.
BVP_PLAN = (
    ("20181109-VS", True, (("user1", (1, 2, 3, 4)), ("user2", (1, 2, 3, 4)))),
    ("20181130-VS", False, (("user1", (1, 2, 3, 4, 5, 6)),)),
    ("20181117-VS", True, (("user3", (1, 2, 3)),)),
    ("20181205-VS", True, (("user2", (1, 2)), ("user3", (1, 2, 3)))),
    ("20181211-VS", True, (("user1", (1, 2, 3, 4, 5, 6)), ("user4", (1, 2, 3, 4, 5, 6)))),
)
#: Torso locations and face orientations the plan draws from (both 1..5 in the release; 3 × 3 by default).
_POSITIONS = (1, 2, 3, 4, 5)


def bvp_file_bytes(value: np.ndarray, compress: bool = False) -> bytes:
    """A MATLAB v5 file holding ``velocity_spectrum_ro`` = ``value`` (T = 1 stored as 20×20, as MATLAB does);
    with ``compress`` the variable is one miCOMPRESSED element."""
    value = np.asarray(value, dtype=np.float64)
    if value.ndim == 3 and value.shape[2] == 1:
        value = value[:, :, 0]
    raw = mat_v5_bytes({"velocity_spectrum_ro": value}, "MATLAB 5.0 MAT-file, rfbench synthetic BVP")
    if not compress:
        return raw
    body = zlib.compress(raw[128:], 6)
    return raw[:128] + struct.pack("<II", 15, len(body)) + body


def _profile(rng: np.random.Generator, gesture: str, orientation: int, frames: int) -> np.ndarray:
    """A blob moving on the 20×20 grid along the gesture's path (a fixed angle per name), plus noise."""
    k = COMMON6.index(gesture) if gesture in COMMON6 else 6 + sum(map(ord, gesture)) % 7
    angle = 2 * np.pi * k / 13
    grid = np.arange(20, dtype=np.float64)
    out = np.empty((20, 20, frames))
    for t in range(frames):
        phase = (t + 1) / (frames + 1) * (0.8 + 0.1 * orientation)
        cx = 9.5 + 7 * phase * np.cos(angle)
        cy = 9.5 + 7 * phase * np.sin(angle)
        blob = np.exp(-((grid[:, None] - cx) ** 2 + (grid[None, :] - cy) ** 2) / 6.0)
        out[:, :, t] = blob + 0.05 * rng.random((20, 20))
    return out


def make_widar_bvp_tree(root: str | os.PathLike, *, seed: int = 0, repetitions: int = 1,
                        frames: tuple[int, int] = (4, 12), damage: bool = True, force: bool = False,
                        progress: Callable[[int], None] | None = None,
                        on_total: Callable[[int], None] | None = None, positions: int = 3) -> TreeSummary:
    """Write a Widar3.0-like BVP tree under ``root/BVP``, with its marker file.

    Parameters
    ----------
    root : path-like
        Destination folder: new or empty, or with ``force`` a tree generated there before (see
        :func:`rfbench.datasets.synthetic.make_widar_tree`); written beside it and renamed into place.
    seed : int
        Everything (T, the noise) derives from it: the same arguments give byte-identical files.
    repetitions : int
        Repetitions per (date, user, gesture, location, orientation), 1–99 (the numbers ``ingest widar`` reads):
        with ``positions`` 3, 3 × 3 (location, orientation) pairs of 34 (date, user, gesture) triples, so 306
        files each.
    frames : (int, int)
        Inclusive range of T per file.
    damage : bool
        Add the planted problems (see the module docstring).
    positions : int
        Torso locations and face orientations, 1..``positions`` of each (at most 5, as in the release, which
        has 5 × 5): ``positions ** 2`` pairs per (date, user, gesture). A tree the release's size is 51
        repetitions at 5 (43,350 files).

    Returns
    -------
    TreeSummary
        ``dataset`` ``"widar-bvp"``; ``recordings`` and ``files`` count the well-formed files (one recording
        each), ``damage`` the planted problems.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> made = make_widar_bvp_tree(pathlib.Path(tempfile.mkdtemp()) / "bvp", frames=(2, 3), damage=False)
    >>> made.recordings, len(made.damage)
    (306, 0)
    """
    settings = WidarTreeSettings(seed=seed, repetitions=repetitions, frames=tuple(frames), clean=not damage,
                                 kind="bvp")
    if not 1 <= positions <= len(_POSITIONS):
        raise ValidationError(f"make_widar_bvp_tree: positions must be 1..{len(_POSITIONS)}, got {positions}")

    def write(tree: Path) -> tuple:
        return _write_bvp(tree, settings, progress, on_total, positions)

    recordings, damage_map, replaced, total_files, total_bytes = _generate_tree(root, force, write)
    return TreeSummary("widar-bvp", str(root), recordings, recordings, damage_map, bvp_params(settings, positions),
                       total_files, total_bytes, replaced)


def bvp_params(s: WidarTreeSettings, positions: int = 3) -> dict:
    """What a BVP tree's marker file records of its settings (``positions`` where it is not the default 3)."""
    params = {"kind": "bvp", "seed": s.seed, "repetitions": s.repetitions, "frames": list(s.frames),
              "damage": not s.clean}
    if positions != 3:
        params["positions"] = positions
    return params


def _write_bvp(root: Path, s: WidarTreeSettings, progress, on_total, positions: int = 3) -> tuple:
    from rfbench.datasets.widar import GESTURE_NAMES
    from rfbench.datasets.widar_bvp import bvp_table

    advance = progress or (lambda n=1: None)
    bvp = root / "BVP"
    plan = []  # (folder, user, gesture number, gesture name, location, orientation, repetition)
    for folder, links, users in BVP_PLAN:
        base = bvp / folder / "6-link" if links else bvp / folder
        for user, gestures in users:
            table = GESTURE_NAMES[bvp_table(folder[:8], user)]
            for g in gestures:
                for loc in _POSITIONS[:positions]:
                    for ori in _POSITIONS[:positions]:
                        for rep in range(1, s.repetitions + 1):
                            plan.append((base / user, user, g, table[g - 1], loc, ori, rep))
    if on_total is not None:
        on_total(len(plan))
    rng = np.random.default_rng(s.seed)
    lo, hi = s.frames
    for i, (folder, user, g, gname, loc, ori, rep) in enumerate(plan):
        t = int(rng.integers(lo, hi + 1))
        value = _profile(rng, gname, ori, t)
        _write(folder / f"{user}-{g}-{loc}-{ori}-{rep}-{PARAMETERS}-L0.mat", bvp_file_bytes(value, i % 3 == 2))
        advance(1)
    damage_map: dict[str, str] = {}
    if not s.clean:
        def rel(p: Path) -> str:
            return p.relative_to(root).as_posix()

        d0 = bvp / "20181109-VS" / "6-link" / "user1"
        planted = {
            d0 / f"user1-1-4-1-1-{PARAMETERS}-L0.mat": (bvp_file_bytes(np.zeros((20, 20, 0))), "T = 0"),
            d0 / f"user1-9-1-1-1-{PARAMETERS}-L0.mat": (bvp_file_bytes(np.zeros((20, 20, 3))), "unknown gesture"),
            d0 / "user1-1-1-1.mat": (bvp_file_bytes(np.zeros((20, 20, 3))), "odd name"),
            d0 / "notes.txt": (b"captured on a Tuesday\n", "odd name"),
            d0 / f"user1-2-4-1-1-{PARAMETERS}-L0.mat": (b"not a MAT-file\n" * 20, "not a MAT-file"),
            d0 / f"user1-3-4-1-1-{PARAMETERS}-L0.mat": (mat_v5_bytes({"other": np.zeros((2, 2))}),
                                                         "missing variable"),
            d0 / f"user1-4-4-1-1-{PARAMETERS}-L0.mat": (mat_v5_bytes({"velocity_spectrum_ro": np.zeros((20, 10, 3))}),
                                                         "mis-shaped variable"),
            d0 / f"user1-1-5-1-1-{PARAMETERS}-L0.mat": (b"", "empty file"),
            bvp / "20190101-VS" / "6-link" / "user1" / f"user1-1-1-1-1-{PARAMETERS}-L0.mat":
                (bvp_file_bytes(np.zeros((20, 20, 3))), "unknown date folder"),
        }
        for path, (data, kind) in planted.items():
            _write(path, data)
            damage_map[rel(bvp / "20190101-VS") if kind == "unknown date folder" else rel(path)] = kind
    _marker(root, "make_widar_bvp_tree", bvp_params(s, positions))
    _marker(bvp, "make_widar_bvp_tree", bvp_params(s, positions))  # so the BVP folder ingested alone is marked too
    return len(plan), damage_map
