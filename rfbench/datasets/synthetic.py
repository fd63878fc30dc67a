"""Deterministic synthetic corpora: a Widar3.0-like tree of real bfee logs and an MM-Fi-like tree.

Both are small, seeded (same arguments → byte-identical files) and marked SYNTHETIC: each tree carries
``RFBENCH_SYNTHETIC.json`` at its root, so ``rfbench ingest`` writes ``"synthetic": true`` and everything
derived from it is tagged SYNTHETIC (DESIGN.md §4, §7). They exist for tests, benchmarks and ``make demo``;
no number computed on them says anything about real WiFi sensing.

With ``damage=True`` (the default) each tree also holds the awkward cases a real download has — empty files,
odd names, an unknown date folder, missing receivers, a truncated log, an unparseable log, a ground truth of
the wrong shape — and the return value lists them, so tests can check every one is reported.

The Widar-like logs are written by the bfee encoder (:func:`rfbench.io.writer.synthetic_log`); the MM-Fi-like
WiFi frames are MATLAB v5 ``.mat`` files written here directly (no SciPy needed to write them), holding
``CSIamp`` and ``CSIphase`` of shape (3, 114, 10) float64; ``ground_truth.npy`` is (frames, 17, 3) metres in
the Human3.6M-17 joint order (joint 0, the pelvis, is exactly the midpoint of the hips, joints 1 and 4).
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from rfbench.errors import OutputExistsError, ValidationError

__all__ = ["make_widar_tree", "make_mmfi_tree", "mat_v5_bytes", "MARKER", "H36M_TEMPLATE"]

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


def _prepare_root(root: Path, force: bool) -> None:
    if root.exists() and not root.is_dir():
        raise OutputExistsError(f"{root} exists and is not a folder")
    if root.exists() and any(root.iterdir()) and not force:
        raise OutputExistsError(f"{root} is not empty; pass force=True (--force) to write into it")
    root.mkdir(parents=True, exist_ok=True)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _marker(root: Path, kind: str, params: Mapping) -> None:
    text = json.dumps({"generator": f"rfbench.datasets.synthetic.{kind}", "synthetic": True, "params": params},
                      indent=2, sort_keys=True) + "\n"
    _write(root / MARKER, text.encode())


def make_widar_tree(root: str | os.PathLike, *, seed: int = 0, repetitions: int = 1,
                    records: tuple[int, int] = (24, 48), damage: bool = True, force: bool = False) -> dict:
    """Write a Widar3.0-like CSI tree of real bfee logs under ``root/CSI``.

    Parameters
    ----------
    root : path-like
        Destination folder (created; must be empty unless ``force``).
    seed : int
        Everything (packet counts, CSI, headers) derives from it.
    repetitions : int
        Repetitions per (date, user, gesture, location, orientation); scales the tree (≈ 43 × 6 files each).
    records : (int, int)
        Inclusive range of CSI records per receiver file (3 antennas × 1 Tx, ~1 kHz).
    damage : bool
        Add the awkward cases (see the module docstring).
    force : bool
        Write into a non-empty folder.

    Returns
    -------
    dict
        ``{"root", "recordings", "files", "damage": {relative path: kind}}``; ``recordings`` counts the
        well-named recordings (those ingest keeps), ``files`` the receiver files written for them.
    """
    from rfbench.io.writer import synthetic_log

    if repetitions < 1 or records[0] < 1 or records[1] < records[0]:
        raise ValidationError("repetitions must be >= 1 and records a (low, high) range with 1 <= low <= high")
    root = Path(root)
    _prepare_root(root, force)
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
    for date, user, gesture, location, orientation, rep in plan:
        stem = f"{user}-{gesture}-{location}-{orientation}-{rep}"
        for receiver in range(1, 7):
            file_seed += 1
            n = int(rng.integers(records[0], records[1] + 1))
            data = synthetic_log(n, nrx=3, ntx=1, seed=file_seed, start_timestamp=int(rng.integers(0, 1 << 32)))
            _write(csi / date / user / f"{stem}-r{receiver}.dat", data)
            files += 1
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
    _marker(root, "make_widar_tree", {"seed": seed, "repetitions": repetitions, "records": list(records),
                                      "damage": damage})
    return {"root": str(root), "recordings": len(plan), "files": files, "damage": damage_map}


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


_MMFI_SUBJECTS = ("S01", "S02", "S11", "S12", "S21", "S22", "S31", "S32")
_MMFI_ACTIONS = ("A01", "A02", "A03", "A13")


def make_mmfi_tree(root: str | os.PathLike, *, seed: int = 0, subjects: Sequence[str] = _MMFI_SUBJECTS,
                   actions: Sequence[str] = _MMFI_ACTIONS, frames: int = 6, damage: bool = True,
                   force: bool = False) -> dict:
    """Write an MM-Fi-like tree ``root/E0x/Syy/Azz/{ground_truth.npy, wifi-csi/frameNNN.mat}``.

    Poses move smoothly around :data:`H36M_TEMPLATE` (metres); each WiFi frame's ``CSIamp`` is a fixed,
    seeded linear function of that frame's pose plus noise (so a model can learn something), ``CSIphase`` is
    uniform in [−π, π). The default subjects cover all four environments (two each), so S2 and S3 have both
    sides.

    Parameters
    ----------
    root : path-like
        Destination (created; must be empty unless ``force``).
    seed : int
    subjects, actions : sequence of str
        Which S01…S40 and A01…A27 to write (each subject under its MM-Fi environment).
    frames : int
        Frames per recording (the real dataset has 297).
    damage : bool
        Add an empty frame file, a ground truth with 16 joints, a recording without ground truth, a subject
        under the wrong environment and stray files; listed in the result.
    force : bool
        Write into a non-empty folder.

    Returns
    -------
    dict
        ``{"root", "recordings", "damage": {relative path: kind}}``.
    """
    from rfbench.datasets.mmfi import ALL_ACTIONS, ALL_SUBJECTS, environment_of

    bad = [s for s in subjects if s not in ALL_SUBJECTS] + [a for a in actions if a not in ALL_ACTIONS]
    if bad or frames < 1:
        raise ValidationError(f"unknown MM-Fi subjects/actions {bad} or frames < 1")
    root = Path(root)
    _prepare_root(root, force)
    rng = np.random.default_rng(seed)
    weights = rng.normal(0.0, 1.0, size=(3 * 114 * 10, 17 * 3)) / np.sqrt(17 * 3)
    recordings = 0
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
            recordings += 1
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
        recordings += 1
        damage_map[(root / wrong_env / "S05").relative_to(root).as_posix()] = "subject under wrong environment"
        for p, kind in ((root / "notes.txt", "stray file"), (root / env0 / "S1", "odd folder"),
                        (root / env0 / s0 / a0 / "wifi-csi" / "frame_extra.mat", "odd frame name")):
            if kind == "odd folder":
                p.mkdir(parents=True, exist_ok=True)
            else:
                _write(p, b"x")
            damage_map[p.relative_to(root).as_posix()] = kind
    _marker(root, "make_mmfi_tree", {"seed": seed, "subjects": list(subjects), "actions": list(actions),
                                     "frames": frames, "damage": damage})
    return {"root": str(root), "recordings": recordings, "damage": damage_map}


def _npy_bytes(arr: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, np.asarray(arr, dtype=np.float64), allow_pickle=False)
    return buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    """``python -m rfbench.datasets.synthetic widar|mmfi OUT``: write a synthetic tree (a development and demo aid)."""
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="python -m rfbench.datasets.synthetic",
                                description="Write a deterministic synthetic Widar-like or MM-Fi-like tree.")
    p.add_argument("kind", choices=["widar", "mmfi"])
    p.add_argument("out", type=Path)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--clean", action="store_true", help="no planted problems (empty files, odd names, ...)")
    p.add_argument("--force", action="store_true", help="write into a non-empty folder")
    args = p.parse_args(argv)
    try:
        make = make_widar_tree if args.kind == "widar" else make_mmfi_tree
        info = make(args.out, seed=args.seed, damage=not args.clean, force=args.force)
    except Exception as exc:  # a development aid: one line, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote a synthetic {args.kind} tree to {args.out}: {info['recordings']} recordings, "
          f"{len(info['damage'])} planted problem(s)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
