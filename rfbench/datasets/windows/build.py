"""Building one side of a split's model inputs from the dataset files its manifest names.

The work is split in two: a **plan** decides every row (recording, window, target) and every exclusion from the
split, the manifest and, where they decide something, the files themselves (MM-Fi ground truth; Intel 5300 logs,
whose packet counts and antenna shapes only parsing reveals); the **production** reads the CSI of the planned
windows in bounded chunks (in parallel threads: reading, hashing and the parser's kernels release the GIL) and
hands them over in row order. :func:`build_windows` collects them in memory; :func:`write_windows` streams them
into ``X.npy``. :func:`side_targets` is the plan alone: the targets of a side without its CSI.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from rfbench.datasets.mmfi import toolbox_fill
from rfbench.datasets.windows.dataset_files import DatasetFiles, parse_npy
from rfbench.datasets.windows.settings import WindowSettings
from rfbench.errors import FormatError, ValidationError

__all__ = ["SideJob", "open_side", "open_sides", "Plan", "plan_side", "start_plan", "side_batches", "announced_rows",
           "Produced", "dataset_kind", "bvp_readers_for", "LabelInfo", "MMFI_JOINTS", "toolbox_fill",
           "default_workers"]

#: MM-Fi ground truth: (frames, 17, 3) joints in metres.
MMFI_JOINTS = (17, 3)
#: An MM-Fi WiFi frame's CSIamp / CSIphase: (antennas, subcarriers, packets).
MMFI_FRAME = (3, 114, 10)
#: Upper bound of the X bytes one production chunk holds (a chunk is read by one thread).
CHUNK_BYTES = 16 << 20
#: Upper bound of the frames one MM-Fi chunk reads.
CHUNK_FRAMES = 128
#: The reason of a window dropped because it holds an empty (0-byte) MM-Fi frame (``dropped[].reason``).
EMPTY_FRAME = "holds an empty (0-byte) frame"


# ----------------------------------------------------------------------------------------------------------
# The side of a split: split, manifest, dataset root, label set
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelInfo:
    """The one label set ``y`` indexes (gesture): shared by both sides of a split.

    ``source`` is ``manifest`` (the sorted names of the manifest's ``key`` over every recording) or ``label-set``
    (a names.txt file at ``path`` whose sha256 is ``file_sha256``).
    """

    names: tuple[str, ...]
    source: str
    key: str
    path: Path | None = None
    file_sha256: str | None = None

    @property
    def sha256(self) -> str:
        from rfbench.metrics.labelset import LabelSet

        return LabelSet(self.names).sha256

    def index(self) -> dict[str, int]:
        """Name → class index (made once per label set: a side looks up every recording's label in it)."""
        return self._index

    @cached_property
    def _index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.names)}


@dataclass(frozen=True)
class SideJob:
    """Everything a side of a split is built from, checked: the split (re-checked by ``load_split``), its
    manifest (sha256 as the split records it), the dataset root, the resolved settings and the label set."""

    split: Any
    split_path: Path
    split_sha256: str
    manifest: Any
    manifest_path: Path
    manifest_sha256: str
    kind: str
    side: str
    settings: WindowSettings
    recordings: tuple
    labels: LabelInfo | None
    files: DatasetFiles


def dataset_kind(manifest) -> str:
    """``mmfi`` for an MM-Fi manifest; ``intel5300`` for a manifest of Intel 5300 logs: one whose recordings'
    files are receiver logs (``receiver: N``, as Widar3.0's) or one ``rfbench ingest files`` wrote (every file a
    log, parsed at ingest); anything else is refused."""
    if manifest.dataset == "mmfi":
        return "mmfi"
    if manifest.dataset == "widar3-bvp":
        return "bvp"
    if isinstance(manifest.extra.get("template"), dict):
        return "intel5300"
    files = [f for r in manifest.recordings for f in r.get("files", [])]
    if files and all(isinstance(f.get("receiver"), int) and not isinstance(f.get("receiver"), bool) for f in files):
        return "intel5300"
    raise ValidationError(f"windows are built for MM-Fi manifests, Intel 5300 corpora (rfbench ingest widar or "
                          f"rfbench ingest files) and Widar3.0 BVP; manifest dataset {manifest.dataset!r} is none of "
                          "them")


def open_side(split, side: str, settings: WindowSettings | None = None, labels: "LabelInfo | None" = None,
              reading=None) -> SideJob:
    """Load and check everything one side of a split is built from.

    Parameters
    ----------
    split : path-like
        The split file (``rfbench.split/1``); :func:`rfbench.protocols.splitfile.load_split` re-checks it.
    side : {"train", "test"}
    settings : WindowSettings, optional
        Resolved here for the manifest's dataset kind.
    labels : LabelInfo, optional
        The label set, when a windows index already recorded it (scoring an index's rows): then no label-set
        file is read, whatever path the index names.
    reading : Reading, optional
        A reading (:class:`~rfbench.datasets.windows.dataset_files.Reading`) the side's files are decoded through
        (default: the one in use, if any). When it already holds this side, opened under settings that differ
        from these in their corruption alone, that side is reused with these settings (and these labels): the
        split and manifest are not read again.

    Raises
    ------
    ValidationError, FormatError, LeakageError
        A split that does not load, a manifest that changed since the split was made, an unknown side, a side
        with no recording, a recording the manifest lacks, a missing dataset root, a bad label set.
    """
    return open_sides(split, (side,), settings, labels, reading)[0]


def open_sides(split, sides: Sequence[str], settings: WindowSettings | None = None,
               labels: "LabelInfo | None" = None, reading=None) -> tuple[SideJob, ...]:
    """:func:`open_side` for each of ``sides`` (in that order), the split loaded and re-checked once for all of
    them: the same jobs one :func:`open_side` per side would give."""
    for side in sides:
        if side not in ("train", "test"):
            raise ValidationError(f"side must be train or test, not {side!r}")
    settings = settings or WindowSettings()
    if not isinstance(settings, WindowSettings):
        raise ValidationError("settings must be a WindowSettings")
    split_path = Path(getattr(split, "path", None) or split)
    if reading is None:
        from rfbench.datasets.windows.dataset_files import reading_in_use

        reading = reading_in_use()
    jobs: list[SideJob | None] = [None] * len(sides)
    if reading is not None:
        for k, side in enumerate(sides):
            held = reading.side(split_path, side)
            if held is not None:
                jobs[k] = _reuse_side(held, settings, labels, reading)
    loaded = None
    for k, side in enumerate(sides):
        if jobs[k] is None:
            if loaded is None:
                loaded = _load_split(split, split_path)
            jobs[k] = _side_job(loaded, side, settings, labels, reading)
            labels = labels or jobs[k].labels  # one label set for both sides: a label-set file is read once
    return tuple(jobs)


def _load_split(split, split_path: Path) -> tuple:
    """The split re-checked by ``load_split`` (or ``split`` itself, a :class:`SplitInfo` this process checked
    already: score opens both sides of the split it has just checked), its sha256 and the manifest it was
    audited on."""
    from rfbench.datasets.manifest import read_manifest
    from rfbench.io.files import sha256_file
    from rfbench.protocols.splitfile import SplitInfo, load_split

    checked = isinstance(split, SplitInfo) and split.path is not None and split.manifest_object is not None
    info = split if checked else load_split(split_path)
    # the digest of the bytes the sides were read from (a second read may find another file in their place)
    split_sha = info.sha256 if info.sha256 is not None else sha256_file(split_path)[0]
    # the manifest load_split recomputed and audited the sides on: the rows are built from what was checked
    manifest = info.manifest_object if info.manifest_object is not None else read_manifest(info.manifest_file)
    return split_path, info, split_sha, manifest


def _side_job(loaded: tuple, side: str, settings: WindowSettings, labels, reading) -> SideJob:
    from rfbench.datasets.widar_both import one_release

    split_path, info, split_sha, manifest = loaded
    mpath = info.manifest_file  # load_split checked it is the manifest the split was made from
    manifest_sha = info.manifest["sha256"]
    known = {r["id"] for r in manifest.recordings}
    unknown = sorted(set(info.train if side == "train" else info.test) - known)
    if unknown:
        raise ValidationError(f"{split_path}: {len(unknown)} {side} recording(s) are not in the manifest (e.g. "
                              f"{unknown[0]!r}); rebuild the split from this manifest")
    # a manifest of both Widar3.0 releases: the rows come from the one settings.release names
    manifest = one_release(manifest, settings.release)
    kept = {r["id"] for r in manifest.recordings}
    train = tuple(i for i in info.train if i in kept)
    kind = dataset_kind(manifest)
    settings = _resolve(settings, kind, manifest, train)
    ids = [i for i in (info.train if side == "train" else info.test) if i in kept]
    if not ids:
        what = f" of the {settings.release} release" if settings.release is not None else ""
        raise ValidationError(f"{split_path}: the split's {side} side has no recording{what}")
    wanted = set(ids)
    recordings = tuple(r for r in manifest.recordings if r["id"] in wanted)
    if settings.task != "gesture":
        labels = None
    elif labels is None:
        labels = _label_info(manifest, settings)
    files = DatasetFiles(manifest.root_dir(mpath), reading)
    job = SideJob(info, split_path, split_sha, manifest, mpath, manifest_sha, kind, side, settings, recordings,
                  labels, files)
    if reading is not None:
        reading.keep_side(split_path, side, job)
    return job


def _resolve(settings: WindowSettings, kind: str, manifest, train) -> WindowSettings:
    """``settings`` resolved for the dataset kind (and, for BVP, the row width from the ``train`` recordings)."""
    settings = settings.resolved(kind)
    if kind == "bvp":  # the row width: given, or the train side's longest T (whichever side is built)
        from rfbench.datasets.windows import bvp

        settings = bvp.resolve_t_max(settings, manifest, train)
    return settings


def _reuse_side(kept: SideJob, settings: WindowSettings, labels, reading) -> SideJob | None:
    """``kept`` under ``settings`` when they differ from its own in the corruption alone (else None): the same
    split, manifest and recordings, the labels :func:`open_side` would take, files read through ``reading``."""
    import dataclasses

    ids = {r["id"] for r in kept.manifest.recordings}  # the manifest of the side's release
    settings = _resolve(settings, kept.kind, kept.manifest, tuple(i for i in kept.split.train if i in ids))
    clean = dict(corrupt=None, corrupt_seed=None)
    if dataclasses.replace(settings, **clean) != dataclasses.replace(kept.settings, **clean):
        return None
    if settings.task != "gesture":
        labels = None
    elif labels is None:
        labels = _label_info(kept.manifest, settings)
    return dataclasses.replace(kept, settings=settings, labels=labels, files=DatasetFiles(kept.files.root, reading))


def _label_key(manifest) -> str:
    from rfbench.datasets.manifest import class_key

    key = class_key(manifest.recordings)
    if key is not None:
        return key
    raise ValidationError("no recording of the manifest has a label, gesture or action: there is nothing to "
                          "classify (use task pose for MM-Fi poses)")


def _label_info(manifest, settings: WindowSettings) -> LabelInfo:
    from rfbench.metrics.labelset import LabelSet

    key = _label_key(manifest)
    if settings.label_set is not None:
        path = Path(settings.label_set)
        ls, digest = LabelSet.read_hashed(path)
        return LabelInfo(ls.names, "label-set", key, path, digest)
    from rfbench._order import natural_sorted

    names = natural_sorted({str(r[key]) for r in manifest.recordings if r.get(key) is not None})
    try:
        LabelSet(tuple(names), "inferred")
    except ValidationError as exc:
        raise ValidationError(f"the manifest's {key} values do not make a label set: {exc}") from None
    return LabelInfo(tuple(names), "manifest", key)


# ----------------------------------------------------------------------------------------------------------
# Plans
# ----------------------------------------------------------------------------------------------------------


@dataclass
class RecordingPlan:
    """The rows of one recording (``{id, start, stop}`` as the index records them), ``y`` (one target per row)
    and, for MM-Fi, the manifest entries of the frames the rows need and of the recording's empty frames."""

    rec: dict
    rows: list
    y: np.ndarray
    frames: dict = field(default_factory=dict)  # MM-Fi: position -> manifest file entry
    empty: list = field(default_factory=list)  # MM-Fi: entries of the recording's empty frames
    dropped: list = field(default_factory=list)  # what of the recording was left out (the index's `dropped`)
    used_records: int = 0  # Intel 5300: the records its rows are made of (dropped ones not counted)


@dataclass
class Plan:
    """Every row of a side, in row order, and what was left out: ``excluded`` recordings (``{id, kind, reason}``)
    and ``dropped`` parts of kept recordings (records, windows; see :mod:`rfbench.datasets.windows.index`)."""

    job: SideJob
    recordings: list
    excluded: list
    dropped: list
    y_dtype: np.dtype
    y_row_shape: tuple
    x_row_shape: tuple
    x_axes: tuple
    notes: list
    receivers: list = field(default_factory=list)  # Intel 5300: the receivers every recording must have
    receiver_key: str | None = None  # Intel 5300: the file entries' key naming the receiver (None: one log each)
    hardware_format: str | None = None  # the logs' format when another hardware's (rfbench.io.hwlog.FORMATS)

    @property
    def n_rows(self) -> int:
        return sum(len(p.rows) for p in self.recordings)

    def rows(self) -> list[dict]:
        return [row for p in self.recordings for row in p.rows]

    def y(self) -> np.ndarray:
        if not self.recordings:
            return np.zeros((0, *self.y_row_shape), dtype=self.y_dtype)
        return np.concatenate([p.y for p in self.recordings])


def plan_side(job: SideJob, *, workers: int | None = None, progress: Callable[[int], None] | None = None) -> Plan:
    """Every row of ``job``'s side (see :class:`Plan`), without X: reads the ground truth (MM-Fi pose) or
    parses the logs (Intel 5300, whose packet counts and shapes decide rows)."""
    if job.kind == "mmfi":
        return _plan_mmfi(job, progress)
    if job.kind == "bvp":
        return _plan_bvp(job)
    plan = _intel_plan(job)
    for _ in intel_rows(plan, need_x=False, workers=workers or default_workers(), progress=progress):
        pass
    return plan


def progress_total(plan: Plan) -> int:
    """The number of ``progress(1)`` calls :func:`side_batches` makes: one per recording it reads."""
    return len(plan.recordings) if plan.job.kind in ("mmfi", "bvp") else len(plan.job.recordings)


def start_plan(job: SideJob) -> Plan:
    """The plan :func:`side_batches` produces from: complete for MM-Fi (whose rows the manifest and ground truth
    decide), empty for Intel 5300 (filled as the logs are read)."""
    if job.kind == "bvp":
        return _plan_bvp(job)
    return _plan_mmfi(job, None) if job.kind == "mmfi" else _intel_plan(job)


def _plan_bvp(job: SideJob) -> Plan:
    """One row per BVP recording (:mod:`rfbench.datasets.windows.bvp`), decided by the manifest alone."""
    from rfbench.datasets.windows import bvp

    t_max = job.settings.t_max
    kept, excluded = [], []
    for rec in job.recordings:
        label = _label_of(job, rec)
        if isinstance(label, Exclusion):
            _exclude(excluded, rec, label)
            continue
        row = bvp.row_of(rec, t_max)
        if isinstance(row, str):
            _exclude(excluded, rec, Exclusion("empty-part", row))
            continue
        kept.append((rec, row, label))
    y = np.array([label for _, _, label in kept], dtype=np.int64)  # each recording's y: a view of its one row
    plans = [RecordingPlan(rec, [row], y[k:k + 1]) for k, (rec, row, _) in enumerate(kept)]
    return Plan(job, plans, excluded, [], np.dtype(np.int64), (), (t_max, bvp.GRID, bvp.GRID), bvp.X_AXES, [])


@dataclass(frozen=True)
class Exclusion:
    """Why a recording gives no row: ``kind`` (one of :data:`~rfbench.datasets.windows.index.EXCLUSION_KINDS`, for
    counting) and ``reason`` (one line naming what was found)."""

    kind: str
    reason: str


def _exclude(excluded: list, rec: dict, why: Exclusion) -> None:
    excluded.append({"id": rec["id"], "kind": why.kind, "reason": why.reason})


def _label_of(job: SideJob, rec: dict) -> int | Exclusion:
    """The label index of ``rec``, or why it is excluded."""
    value = rec.get(job.labels.key)
    if value is None:
        return Exclusion("label", f"no label (the manifest's {job.labels.key!r} is empty)")
    idx = job.labels.index().get(str(value))
    if idx is None:
        return Exclusion("label", f"label {str(value)!r} is not in the label set")
    return idx


def _target_offsets(settings: WindowSettings, length: int) -> int:
    return {"last": length - 1, "first": 0, "center": length // 2}[settings.target]


def _plan_mmfi(job: SideJob, progress) -> Plan:
    s = job.settings
    pose = s.task == "pose"
    plans, excluded, dropped = [], [], []
    y_dtype = None
    y_from = None
    for rec in job.recordings:
        plan = _plan_mmfi_recording(job, rec, excluded)
        if plan is not None and pose:
            dt = plan.y.dtype
            if y_dtype is None:
                y_dtype, y_from = dt, rec["id"]
            elif dt != y_dtype:
                raise ValidationError(f"ground truths of different dtypes: {y_dtype} in {y_from}, {dt} in "
                                      f"{rec['id']}; y keeps the ground truth's own dtype, so it must be one")
        if plan is not None:
            plans.append(plan)
            dropped += plan.dropped
        if progress is not None:
            progress(1)
    features = s.feature_names
    if pose:
        y_row = MMFI_JOINTS
        y_dtype = y_dtype or np.dtype(np.float64)
    else:
        y_row, y_dtype = (), np.dtype(np.int64)
    notes = ["row start/stop are 0-based frame positions: a row holds frame{start+1}.mat … frame{stop}.mat, and "
             "frame NNN is ground-truth row NNN − 1 (frames are matched to rows by number)"]
    if pose:
        notes.append(f"y is the ground truth of the window's {s.target} frame, in the ground truth's own dtype")
    return Plan(job, plans, excluded, dropped, np.dtype(y_dtype), y_row, (s.length, len(features), *MMFI_FRAME),
                ("window", "frame", "feature", "antenna", "subcarrier", "packet"), notes)


def _plan_mmfi_recording(job: SideJob, rec: dict, excluded: list) -> RecordingPlan | None:
    from rfbench.csi.windows import window_ranges

    s = job.settings
    pose = s.task == "pose"
    rid = rec["id"]
    label = None
    if not pose:
        label = _label_of(job, rec)
        if isinstance(label, Exclusion):
            _exclude(excluded, rec, label)
            return None
    frames = [f for f in rec.get("files", []) if f.get("kind") == "wifi-frame"]
    if not frames and int(rec.get("frames") or 0) > 0:
        raise ValidationError(f"{job.manifest_path}: recording {rid} lists no WiFi frame files (kind wifi-frame); "
                              "the manifest predates per-frame file lists: re-run rfbench ingest mmfi and rfbench "
                              "split")
    numbers = sorted(f.get("frame") for f in frames)
    if not all(isinstance(k, int) and not isinstance(k, bool) for k in numbers):
        raise ValidationError(f"{job.manifest_path}: recording {rid} has a WiFi frame entry without a frame number")
    n = len(numbers)
    if n == 0:
        _exclude(excluded, rec, Exclusion("missing-part", "no WiFi frame"))
        return None
    if numbers != list(range(1, n + 1)):
        _exclude(excluded, rec, Exclusion("frames", f"frame numbers are not 1…{n} (frame NNN must be "
                                                    "ground-truth row NNN − 1)"))
        return None
    gt_entry = None
    if pose:
        gts = [f for f in rec.get("files", []) if f.get("kind") == "ground-truth"]
        if not gts:
            _exclude(excluded, rec, Exclusion("missing-part", "no ground_truth.npy"))
            return None
        gt_entry = gts[0]
        gt_frames = rec.get("gt_frames")
        if gt_frames != n:
            _exclude(excluded, rec, Exclusion("ground-truth", f"ground truth has {gt_frames} rows but the "
                                                              f"recording has {n} WiFi frames"))
            return None
    by_pos = {f["frame"] - 1: f for f in frames}
    empty = np.zeros(n + 1, dtype=np.int64)
    for pos, f in by_pos.items():
        if f.get("bytes") == 0:
            empty[pos + 1] = 1
    empty_before = np.cumsum(empty)  # empty frames among positions < p is empty_before[p]
    ranges = window_ranges(n, s.length, s.stride)
    kept = [(a, b) for a, b in ranges if empty_before[b] == empty_before[a]]
    dropped = []
    for a, b in ranges:
        if empty_before[b] != empty_before[a]:
            first = next(q for q in range(a, b) if empty[q + 1])
            dropped.append({"recording": rid, "file": by_pos[first]["path"], "window": {"start": a, "stop": b},
                            "reason": EMPTY_FRAME})
    if not kept:
        _exclude(excluded, rec, Exclusion("too-short", f"no window: {n} frame(s), fewer than the window length "
                                                       f"{s.length}") if not ranges
                 else Exclusion("empty-part", "no window: every window holds an empty frame"))
        return None
    rows = [{"id": rid, "start": a, "stop": b} for a, b in kept]
    empty_entries = {pos: f for pos, f in by_pos.items() if f.get("bytes") == 0}
    if pose:
        gt = job.files.decoded(gt_entry, "npy", lambda buf: parse_npy(buf, gt_entry["path"]))
        if gt.shape != (n, *MMFI_JOINTS):
            _exclude(excluded, rec, Exclusion("ground-truth", f"ground truth has shape {gt.shape}; expected "
                                                              f"({n}, 17, 3)"))
            return None
        if gt.dtype.kind not in "fiu":
            _exclude(excluded, rec, Exclusion("ground-truth", f"ground truth has dtype {gt.dtype}; expected "
                                                              "numbers"))
            return None
        targets = np.array([a + _target_offsets(s, b - a) for a, b in kept], dtype=np.int64)
        y = gt[targets]
        if y.dtype.kind == "f" and not np.isfinite(y).all():
            _exclude(excluded, rec, Exclusion("ground-truth", "ground truth holds NaN/inf at a target frame"))
            return None
    else:
        y = np.full(len(kept), label, dtype=np.int64)
    needed = sorted({p for a, b in kept for p in range(a, b)})
    return RecordingPlan(rec, rows, y, {p: by_pos[p] for p in needed}, empty=list(empty_entries.values()),
                         dropped=dropped)


def _receiver_model(manifest) -> tuple[str | None, list]:
    """``(key, receivers)``: the key of a recording's file entries that names its receiver, and the receivers
    every recording must have.

    - Widar3.0 (and any manifest whose files carry ``receiver: N``): ``receiver``, the declared
      ``receivers_expected`` or every receiver seen;
    - ``rfbench ingest files`` with ``recording_by``: the one template field that varies within a recording
      (the "part" field, e.g. ``{rx}``), every value seen (each recording's missing parts are ingest problems);
    - ``rfbench ingest files`` without it: ``None`` and ``[None]``, one log per recording.

    Raises
    ------
    ValidationError
        A recording is made of files named by more than one part field: which one is the receiver is unknown.
    """
    from rfbench.datasets.manifest import value_sort_key

    template = manifest.extra.get("template")
    if isinstance(template, dict):
        by = template.get("recording_by") or []
        fields = [f.get("name") for f in template.get("fields") or [] if isinstance(f, dict)]
        parts = [f for f in fields if f not in by] if by else []
        if len(parts) > 1:
            raise ValidationError(f"the manifest's recordings are made of files named by {len(parts)} fields "
                                  f"({', '.join(parts)}); windows takes one of them as the receiver: ingest again "
                                  f"with every field but the receiver in --recording-by")
        if not parts:
            return None, [None]
        key = parts[0]
    else:
        key = "receiver"
        declared = manifest.extra.get("receivers_expected")
        if isinstance(declared, list) and declared and all(isinstance(r, int) for r in declared):
            return key, sorted(set(declared))
    values = {f.get(key) for r in manifest.recordings for f in r.get("files", [])}
    values.discard(None)
    return key, sorted(values, key=value_sort_key)


def _rx(key: str | None, value) -> str:
    """A receiver in messages: ``r3`` (Widar3.0's numbering), ``rx 2`` (a template's part field), ``the log``."""
    if key is None:
        return "the log"
    if key == "receiver" and isinstance(value, int):
        return f"r{value}"
    return f"{key} {value}"


def _intel_plan(job: SideJob) -> Plan:
    """An Intel 5300 plan with no recording yet: :func:`intel_rows` fills it recording by recording."""
    s = job.settings
    key, expected = _receiver_model(job.manifest)
    nrx, ntx = (int(v) for v in s.antennas.split("x"))
    features = s.feature_names
    n_sub = s.subcarriers
    if s.resample is not None:
        x_row = (len(expected), s.resample, len(features), n_sub, nrx, ntx)
        axes = ("recording", "receiver", "packet", "feature", "subcarrier", "rx", "tx")
        if key is None:
            notes = [f"one row per recording: its log's packets resampled to {s.resample} by linear interpolation "
                     "over the packet index; row start/stop span the log, packets lists its count",
                     "one log per recording: the receiver axis has size 1"]
        else:
            notes = [f"one row per recording: each receiver's packets resampled to {s.resample} by linear "
                     "interpolation over its own packet index (receivers have different packet counts and are not "
                     "time-aligned); row start/stop span the longest receiver, packets lists each receiver's count",
                     f"receivers along axis 1: {', '.join(_rx(key, r) for r in expected)}"]
    else:
        x_row = (s.length, len(features), n_sub, nrx, ntx)
        axes = ("window", "packet", "feature", "subcarrier", "rx", "tx")
        if key is None:
            notes = ["packet windows of each recording's log: a row is its packets start…stop−1"]
        else:
            notes = ["packet windows per receiver: receivers have different packet counts and are not time-aligned, "
                     "so a row is one receiver's packets start…stop−1 (its receiver key); windows of one recording "
                     "never mix receivers"]
    from rfbench.datasets.windows.hardware import SPAN, corpus_format, target_grid

    hardware = corpus_format(job.manifest)
    if hardware is not None:
        if s.csi == "scaled":
            raise ValidationError(f"`csi` scaled is the Intel 5300's get_scaled_csi.m; the manifest's logs are "
                                  f"{hardware} logs: use `csi` raw")
        notes.append(f"subcarriers: each {hardware} log's data subcarriers resampled to "
                     f"{target_grid(n_sub, s.bandwidth)} by linear interpolation of the complex CSI (span {SPAN}: "
                     "band edges aligned)")
    elif n_sub != 30:
        src, dst, span = _grids(s)
        notes.append(f"subcarriers: the 30 logged groups ({src}) resampled to {dst} by linear interpolation of the "
                     f"complex CSI (span {span}: " + ("physical subcarrier indices" if span == "index"
                                                      else "band edges aligned") + ")")
    notes.append(f"features of the {'raw' if s.csi == 'raw' else 'scaled (get_scaled_csi.m)'} CSI: "
                 + ", ".join({"amp": "amplitude |csi|", "phase": "phase angle(csi) in radians"}[f] for f in features))
    notes.append(f"odd records (another antenna shape than {s.antennas}): {ODD_RECORDS[s.odd_records]}")
    plan = Plan(job, [], [], [], np.dtype(np.int64), (), x_row, axes, notes)
    plan.receivers = expected
    plan.receiver_key = key
    plan.hardware_format = hardware
    return plan


#: What each ``odd_records`` policy does, in the words of the index's notes.
ODD_RECORDS = {
    "drop-records": "each is left out of its receiver's packet sequence and listed in dropped",
    "drop-recording": "a recording holding one is excluded",
    "refuse": "an error",
}


def intel_rows(plan: Plan, *, need_x: bool, workers: int, progress=None) -> Iterator[np.ndarray | None]:
    """Parse each recording's receiver logs (``workers`` recordings at a time), add its rows (or its exclusion)
    to ``plan`` in recording order, and yield its X rows (None without ``need_x``, or when it has no row)."""
    job = plan.job
    nrx, ntx = (int(v) for v in job.settings.antennas.split("x"))

    def one(rec):
        return _intel_recording(job, rec, plan, nrx, ntx, need_x)

    for rec, (outcome, x) in zip(job.recordings, _ordered(one, job.recordings, workers)):
        if isinstance(outcome, Exclusion):
            _exclude(plan.excluded, rec, outcome)
        else:
            plan.recordings.append(outcome)
            plan.dropped += outcome.dropped
        if progress is not None:
            progress(1)
        if x is not None:
            yield x


def _grids(s: WindowSettings) -> tuple[str, str, str]:
    src = "intel30-20" if s.bandwidth == 20 else "intel30-40"
    dst = {56: "ht20-56", 114: "ht40-114"}[s.subcarriers]
    same_band = (s.bandwidth == 20) == (s.subcarriers == 56)
    return src, dst, "index" if same_band else "band"


def _intel_files(job: SideJob, rec: dict, plan: Plan):
    """The receiver files of ``rec`` by receiver (``{receiver: entry}``), or why (from the manifest alone) it is
    excluded: no label, a missing receiver, an empty receiver file."""
    label = _label_of(job, rec)
    if isinstance(label, Exclusion):
        return label
    key, expected = plan.receiver_key, plan.receivers
    files = rec.get("files", [])
    if key is None:
        if len(files) != 1:
            raise ValidationError(f"{job.manifest_path}: recording {rec['id']} has {len(files)} files, but the "
                                  "manifest says one log per recording (no recording_by); re-run rfbench ingest")
        by_receiver = {None: files[0]}
    else:
        by_receiver = {}
        for f in files:
            by_receiver.setdefault(f.get(key), f)
    missing = [r for r in expected if r not in by_receiver]
    if missing:
        return Exclusion("missing-part", "missing receiver " + ", ".join(_rx(key, r) for r in missing))
    empty = [r for r in expected if by_receiver[r].get("bytes") == 0]
    if empty:
        return Exclusion("empty-part", ("empty receiver file " + ", ".join(_rx(key, r) for r in empty))
                         if key is not None else "empty log (0 bytes)")
    return {r: by_receiver[r] for r in expected}


def _packets_reason(s: WindowSettings, key: str | None, receiver, n: int) -> Exclusion | None:
    who = "the log" if key is None else f"receiver {_rx(key, receiver)}"
    if n == 0:
        return Exclusion("empty-part", f"{who} has no valid CSI record")
    if s.resample is not None and n < 2:
        return Exclusion("too-short", f"{who} has {n} packet; resampling needs at least 2")
    return None


def _intel_row_list(s: WindowSettings, rec: dict, plan: Plan, counts: list) -> list:
    """The rows of a recording whose receivers hold ``counts`` packets: receiver by receiver, windows starting at
    0, stride, 2·stride, … (or one resampled row). Rows name their receiver unless a recording is one log."""
    if s.resample is not None:
        return [{"id": rec["id"], "start": 0, "stop": max(counts), "packets": list(counts)}]
    if plan.receiver_key is None:
        return [{"id": rec["id"], "start": a, "stop": a + s.length}
                for n in counts for a in range(0, n - s.length + 1, s.stride)]
    return [{"id": rec["id"], "receiver": r, "start": a, "stop": a + s.length}
            for r, n in zip(plan.receivers, counts) for a in range(0, n - s.length + 1, s.stride)]


def announced_rows(plan: Plan) -> int | None:
    """The number of rows the side will have, known before its CSI is read: exact for MM-Fi; for Intel 5300 from
    the manifest's packet counts (``records``), assuming every record has the declared antenna shape (only
    parsing shows that); None when the manifest lacks the counts."""
    job = plan.job
    if job.kind in ("mmfi", "bvp"):
        return plan.n_rows
    s = job.settings
    total = 0
    for rec in job.recordings:
        files = _intel_files(job, rec, plan)
        if isinstance(files, Exclusion):
            continue
        counts = [files[r].get("records") for r in plan.receivers]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
            return None
        if any(_packets_reason(s, plan.receiver_key, r, n) for r, n in zip(plan.receivers, counts)):
            continue
        total += len(_intel_row_list(s, rec, plan, counts))
    return total


def _keep_records(log, keep: np.ndarray, nrx: int, ntx: int):
    """``log`` with only the records ``keep`` (indices), its CSI cut to ``nrx`` × ``ntx`` (a log mixing shapes
    is unpacked at its largest; a smaller record's CSI sits in the first rows and columns)."""
    import dataclasses

    changes = {}
    for f in dataclasses.fields(log):
        value = getattr(log, f.name)
        if isinstance(value, np.ndarray) and value.ndim >= 1 and value.shape[0] == log.n_records:
            value = value[keep]
            if f.name in ("csi", "csi_int8"):
                value = np.ascontiguousarray(value[:, :, :nrx, :ntx])
            changes[f.name] = value
    return dataclasses.replace(log, **changes)


def _odd_reason(a: int, b: int, nrx: int, ntx: int) -> str:
    return f"antenna shape {a}x{b}, not {nrx}x{ntx}"


def _intel_recording(job: SideJob, rec: dict, plan: Plan, nrx: int, ntx: int, need_x: bool):
    """``(RecordingPlan, X rows or None)``, or ``(Exclusion, None)`` when the recording is excluded."""
    from rfbench.io import intel5300

    s = job.settings
    key, expected = plan.receiver_key, plan.receivers
    files = _intel_files(job, rec, plan)
    if isinstance(files, Exclusion):
        return files, None
    logs = {}
    dropped = []
    for r in expected:
        entry = files[r]
        if plan.hardware_format is not None:
            from rfbench.datasets.windows.hardware import read_hardware_csi

            log = job.files.decoded(entry, f"{plan.hardware_format} on {s.subcarriers}/{s.bandwidth}",
                                    lambda buf, path=entry["path"]: read_hardware_csi(
                                        buf, plan.hardware_format, path, s.subcarriers, s.bandwidth))
        else:
            log = job.files.decoded(entry, "intel5300 int8", lambda buf: intel5300.read(buf, raw_int8=True,
                                                                                        threads=1))
        recorded = entry.get("records")
        if isinstance(recorded, int) and log.n_records != recorded:
            raise ValidationError(f"{entry['path']}: {log.n_records} CSI records, but ingest counted {recorded}: the "
                                  "dataset file changed since ingest; re-run rfbench ingest (and rfbench split)")
        reason = _packets_reason(s, key, r, log.n_records)
        if reason is not None:
            return reason, None
        bad = (log.nrx != nrx) | (log.ntx != ntx)
        if bad.any():
            odd = np.flatnonzero(bad)
            k = int(odd[0])
            shape = f"{int(log.nrx[k])}x{int(log.ntx[k])}"
            who = "the log" if key is None else f"receiver {_rx(key, r)}"
            if s.odd_records == "refuse":
                raise ValidationError(f"{entry['path']}: record {k} has antenna shape {shape}, not the `antennas` "
                                      f"{nrx}x{ntx} ({odd.size} such record(s) in this log); choose what to do with "
                                      "such records: `odd_records` drop-records or drop-recording")
            if odd.size == log.n_records:
                return Exclusion("odd-records", f"{who}: every record ({odd.size}) has another antenna shape than "
                                                f"{nrx}x{ntx} (e.g. {shape}); set `antennas` to the corpus's "
                                                "shape"), None
            if s.odd_records == "drop-recording":
                return Exclusion("odd-records", f"{who} has {odd.size} record(s) of antenna shape {shape} "
                                                f"(expected {nrx}x{ntx})"), None
            dropped += [{"recording": rec["id"], "file": entry["path"], "record": int(i),
                         "reason": _odd_reason(int(log.nrx[i]), int(log.ntx[i]), nrx, ntx)} for i in odd]
            log = _keep_records(log, np.flatnonzero(~bad), nrx, ntx)
            reason = _packets_reason(s, key, r, log.n_records)
            if reason is not None:
                return Exclusion(reason.kind, reason.reason + f" of antenna shape {nrx}x{ntx}"), None
        logs[r] = (log, entry["path"])
    rows = _intel_row_list(s, rec, plan, [logs[r][0].n_records for r in expected])
    if not rows:
        who = "the log has" if key is None else "every receiver has"
        return Exclusion("too-short", f"no window: {who} fewer than {s.length} packets"), None
    out = RecordingPlan(rec, rows, np.full(len(rows), _label_of(job, rec), dtype=np.int64), dropped=dropped,
                        used_records=sum(logs[r][0].n_records for r in expected))
    if not need_x:
        return out, None
    return out, _intel_x(s, logs, expected, rows, plan.x_row_shape, rec["id"])


def _receiver_csi(s: WindowSettings, log, recording: str, receiver) -> np.ndarray:
    """One receiver's CSI as the settings ask: the logged int8 pairs as they are, or complex (raw or scaled),
    corrupted, interpolated to other subcarriers and resampled to ``s.resample`` packets when asked. Another
    hardware's log (:class:`~rfbench.datasets.windows.hardware.HardwareCsi`) is on the settings' grid already
    (corrupted there)."""
    from rfbench.csi.subcarrier import resample_subcarriers
    from rfbench.datasets.windows.hardware import HardwareCsi

    hardware = isinstance(log, HardwareCsi)
    if not hardware and s.csi == "raw" and s.subcarriers == 30 and s.resample is None and s.corrupt is None:
        return log.csi_int8
    csi = log.scaled_csi() if s.csi == "scaled" and not hardware else log.complex_csi()
    if s.corrupt is not None:
        from rfbench.datasets.windows.corrupt import corrupt_receiver

        csi = corrupt_receiver(s, csi, recording, receiver)
    if s.subcarriers != 30 and not hardware:
        src, dst, span = _grids(s)
        csi = resample_subcarriers(csi, src, dst, axis=1, span=span)
    if s.resample is not None:
        n = csi.shape[0]
        csi = resample_subcarriers(csi, np.arange(n, dtype=np.float64), np.linspace(0.0, n - 1.0, s.resample),
                                   axis=0)
    return csi


def _intel_x(s: WindowSettings, logs: dict, expected: list, rows: list, x_row: tuple, rid: str) -> np.ndarray:
    from rfbench.datasets.windows.features import features

    if s.resample is not None:
        return np.stack([features(_receiver_csi(s, logs[r][0], rid, r), s.feature_names, logs[r][1])
                         for r in expected])[None]
    if s.stride == s.length:
        # Non-overlapping windows are the receiver's first count·length packets, reshaped: their features are
        # computed straight into X, receiver after receiver (rows come in that order, see _intel_row_list).
        counts = [logs[r][0].n_records // s.length for r in expected]
        out = np.empty((sum(counts), *x_row), dtype=np.float32)
        at = 0
        for r, count in zip(expected, counts):
            log, where = logs[r]
            used = count * s.length
            features(_receiver_csi(s, log, rid, r)[:used], s.feature_names, where,
                     out=out[at:at + count].reshape(used, *x_row[1:]))
            at += count
        return out
    parts = []
    for r in expected:  # rows come receiver by receiver, starts 0, stride, 2·stride, … (see _intel_row_list)
        log, where = logs[r]
        feats = features(_receiver_csi(s, log, rid, r), s.feature_names, where)
        count = (feats.shape[0] - s.length) // s.stride + 1 if feats.shape[0] >= s.length else 0
        if count:
            parts.append(np.lib.stride_tricks.as_strided(
                feats, shape=(count, s.length, *feats.shape[1:]),
                strides=(s.stride * feats.strides[0], *feats.strides), writeable=False))
    return np.concatenate(parts) if len(parts) > 1 else np.ascontiguousarray(parts[0])


# ----------------------------------------------------------------------------------------------------------
# Production: X in row order, in chunks
# ----------------------------------------------------------------------------------------------------------


def default_workers() -> int:
    """Threads reading a side by default: one per core, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


def _ordered(fn, items: Sequence, workers: int) -> Iterator:
    """``map(fn, items)`` in order, ``workers`` threads at a time with at most ``2 * workers`` results pending
    (bounded memory); an exception stops the map and is raised where its result is due."""
    if workers <= 1 or len(items) <= 1:
        for item in items:
            yield fn(item)
        return
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        pending: deque = deque()
        it = iter(items)
        for item in itertools.islice(it, 2 * workers):
            pending.append(pool.submit(fn, item))
        while pending:
            result = pending.popleft().result()
            for item in itertools.islice(it, 1):
                pending.append(pool.submit(fn, item))
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@dataclass
class Produced:
    """What the production saw besides X: non-finite values filled (MM-Fi ``toolbox-fill``)."""

    filled_values: int = 0
    filled_frames: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    borrowed: bool = False  # the batches' x are buffers reused once the next batch is asked for


def side_batches(plan: Plan, produced: Produced, workers: int, progress=None,
                 borrow: bool = False, readers=None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(x, y)`` batches of consecutive rows of ``plan``'s side, in row order (``x`` float32). An MM-Fi plan
    is complete beforehand; an Intel 5300 plan (from :func:`_intel_plan`) is filled as its recordings are read,
    and complete once the batches are exhausted. With ``borrow``, an ``x`` may be a buffer reused once the next
    batch is asked for (``produced.borrowed`` says so; the caller copies what it keeps). ``readers``: BVP reader
    processes this side's runs were queued on (:func:`bvp_readers_for`), taken from in turn."""
    if plan.job.kind == "mmfi":
        layouts: dict = {}
        chunks = list(_mmfi_chunks(plan))
        for (p, a, b), x in zip(chunks, _ordered(lambda c: _mmfi_chunk(plan, c, produced, layouts), chunks,
                                                 workers)):
            if progress is not None and b == len(p.rows):
                progress(1)
            yield x, p.y[a:b]
        return
    if plan.job.kind == "bvp":
        yield from _bvp_batches(plan, produced, workers, progress, borrow, readers)
        return
    for x in intel_rows(plan, need_x=True, workers=workers, progress=progress):
        yield x, plan.recordings[-1].y


def bvp_spares(split, sides: Sequence[str], workers: int, reading=None) -> list:
    """Reader processes started ahead of a BVP job (:func:`~rfbench.datasets.windows.bvp_procs.prestart`) when the
    split file declares a Widar3.0 BVP split whose ``sides`` list enough recordings for :func:`bvp_readers_for` to
    use them (read unchecked: only the time of starting them rests on it, never a row), else an empty list. They
    start while the split is re-checked; the caller gives them to :func:`bvp_readers_for` and closes the rest
    (:func:`~rfbench.datasets.windows.bvp_procs.close_spares`)."""
    from rfbench.io.world import children_share_it
    from rfbench.protocols.splitfile import declared_split

    if reading is None:
        from rfbench.datasets.windows.dataset_files import reading_in_use

        reading = reading_in_use()
    if reading is not None or not (workers > 1 and (os.cpu_count() or 1) > 1):
        return []
    doc = declared_split(Path(getattr(split, "path", None) or split))
    if not isinstance(doc, dict) or doc.get("dataset") != "widar3-bvp":
        return []
    declared = sum(len(doc[s]) for s in sides if isinstance(doc.get(s), list))
    if declared < _bvp_min_rows() or not children_share_it():
        return []
    from rfbench.datasets.windows.bvp_procs import prestart

    return prestart(min(workers, os.cpu_count() or 1))


def bvp_readers_for(plans: Sequence[Plan], workers: int, spares: list | None = None):
    """Reader processes (:class:`~rfbench.datasets.windows.bvp_procs.BvpReaders`, started, every run of every
    plan queued in turn) for BVP sides of one split read straight from the dataset, when they are worth starting
    (:data:`~rfbench.datasets.windows.bvp_procs.MIN_ROWS` rows in all, more than one core and worker), else None.
    The caller closes them; each plan's batches take its own runs (``side_batches(..., readers=...)``).
    ``spares``: processes started ahead (:func:`bvp_spares`), used first (those taken leave the list)."""
    from rfbench.datasets.windows import bvp
    from rfbench.io.world import children_share_it

    if not plans or any(p.job.kind != "bvp" or p.job.files.reading is not None for p in plans):
        return None
    recs = [p.rec for plan in plans for p in plan.recordings]
    if not (workers > 1 and (os.cpu_count() or 1) > 1 and len(recs) >= _bvp_min_rows() and children_share_it()):
        return None
    t_max = plans[0].x_row_shape[0]
    root = plans[0].job.files.root
    if any(plan.x_row_shape[0] != t_max or plan.job.files.root != root for plan in plans):
        return None
    from rfbench.datasets.windows.bvp_procs import BvpReaders

    runs, start = [], 0
    for plan in plans:
        runs += [(start + a, start + b) for a, b in bvp.chunks(len(plan.recordings), t_max)]
        start += len(plan.recordings)
    readers = BvpReaders(root, recs, t_max, min(workers, os.cpu_count() or 1), max(b - a for a, b in runs), spares)
    try:
        readers.__enter__()
    except (OSError, RuntimeError):  # no reader process could start (rfbench not importable in isolation)
        readers.close()
        return None
    readers.queue(runs)
    return readers


def _bvp_batches(plan: Plan, produced: Produced, workers: int, progress, borrow: bool,
                 shared=None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """A BVP side in runs of rows (:func:`rfbench.datasets.windows.bvp.chunks`): by reader processes for a large
    side read straight from the dataset (:mod:`rfbench.datasets.windows.bvp_procs`; ``shared``: ones its runs
    are queued on), else by threads."""
    from rfbench.datasets.windows import bvp

    recs = plan.recordings
    t_max = plan.x_row_shape[0]
    runs = bvp.chunks(len(recs), t_max)
    files = plan.job.files
    readers = None if shared is not None else bvp_readers_for([plan], workers)
    try:
        if shared is not None or readers is not None:
            produced.borrowed = borrow
            xs = (shared or readers).take(len(runs), files, borrow)
        else:
            xs = _ordered(lambda r: bvp.chunk_x([p.rec for p in recs[r[0]:r[1]]], t_max, files.read), runs, workers)
        for (a, b), x in zip(runs, xs):
            if progress is not None:
                progress(b - a)
            yield x, np.concatenate([p.y for p in recs[a:b]])
    finally:
        if readers is not None:
            readers.close()


def _bvp_min_rows() -> int:
    from rfbench.datasets.windows.bvp_procs import MIN_ROWS

    return MIN_ROWS


def _mmfi_chunks(plan: Plan):
    row_bytes = 4 * int(np.prod(plan.x_row_shape))
    per_chunk = max(1, min(CHUNK_BYTES // row_bytes, CHUNK_FRAMES))
    for p in plan.recordings:
        n = len(p.rows)
        a = 0
        while a < n:
            b = a + 1
            first = p.rows[a]["start"]
            while b < n and b - a < per_chunk and p.rows[b]["stop"] - first <= CHUNK_FRAMES:
                b += 1
            yield p, a, b
            a = b


def _mmfi_chunk(plan: Plan, chunk, produced: Produced, layouts: dict) -> np.ndarray:
    """X rows ``a:b`` of one recording: each frame read once (one-frame windows straight into their row), checked
    finite in one pass over the chunk (only a chunk that fails looks at its frames one by one)."""
    p, a, b = chunk
    job = plan.job
    s = job.settings
    rows = p.rows[a:b]
    x = np.empty((len(rows), *plan.x_row_shape), dtype=np.float32)
    if s.length == 1:
        slots = [(r["start"], x[k, 0]) for k, r in enumerate(rows)]
        feats = x
    else:
        lo, hi = rows[0]["start"], rows[-1]["stop"]
        positions = sorted({q for r in rows for q in range(r["start"], r["stop"])})
        feats = np.empty((hi - lo, *plan.x_row_shape[1:]), dtype=np.float32)
        slots = [(q, feats[q - lo]) for q in positions]
    for q, out in slots:
        _read_mmfi_frame(job, p.frames[q], out, s, layouts, p.rec["id"])
    if not np.isfinite(feats).all():
        for q, out in slots:
            if not np.isfinite(out).all():
                _nonfinite(job, p.frames[q], out, s, produced, layouts)
    if a == 0:
        for entry in p.empty:  # the recording's empty frames: check they are still empty
            job.files.read(entry)
    if s.length != 1:
        for k, r in enumerate(rows):
            x[k] = feats[r["start"] - lo:r["stop"] - lo]
    return x


def _frame_arrays(job: SideJob, entry: dict, s: WindowSettings, layouts: dict, names: tuple | None = None) -> list:
    """The checked, read and decoded variables of one WiFi frame that the features (or ``names``) need (views of
    its bytes), each frame read within :data:`~rfbench.datasets.mmfi.MAX_FRAME_BYTES` as ``ingest`` reads it."""
    from rfbench.datasets.mmfi import MAX_FRAME_BYTES
    from rfbench.io.matv5 import mat_layout, read_mat_bytes

    rel = entry["path"]

    def decode(buf):
        size = len(buf)
        layout = layouts.get(size)
        mat = layout.read(buf) if layout else None
        if mat is None:
            mat = read_mat_bytes(buf, rel, max_bytes=MAX_FRAME_BYTES)
            if size not in layouts:
                try:
                    layouts[size] = mat_layout(buf, rel)
                except FormatError:
                    layouts[size] = None
        return mat

    mat = job.files.decoded(entry, "mat", decode)
    arrays = []
    for name in names or s.feature_names:
        var = "CSIamp" if name == "amp" else "CSIphase"
        arr = mat.get(var)
        if arr is None:
            raise FormatError(f"{rel}: no {var} variable (found: {', '.join(sorted(mat)) or 'none'}); an MM-Fi WiFi "
                              f"frame holds CSIamp and CSIphase of shape {MMFI_FRAME}")
        if arr.shape != MMFI_FRAME or arr.dtype.kind not in "fiu":
            raise FormatError(f"{rel}: {var} has shape {arr.shape} and dtype {arr.dtype}; an MM-Fi WiFi frame holds "
                              f"real {MMFI_FRAME} arrays")
        arrays.append(arr)
    return arrays


def _read_mmfi_frame(job: SideJob, entry: dict, out: np.ndarray, s: WindowSettings, layouts: dict,
                     rid: str) -> None:
    """One WiFi frame's features into ``out`` (feature, 3, 114, 10), float32 (finiteness is checked by the
    caller, over a whole chunk), of its CSI corrupted when the settings say so."""
    if s.corrupt is not None:
        from rfbench.datasets.windows.corrupt import corrupt_mmfi_frame

        amp, phase = corrupt_mmfi_frame(s, *_frame_arrays(job, entry, s, layouts, ("amp", "phase")), rid,
                                        entry["frame"])
        for k, name in enumerate(s.feature_names):
            out[k] = amp if name == "amp" else phase
        return
    for k, arr in enumerate(_frame_arrays(job, entry, s, layouts)):
        out[k] = arr


def _nonfinite(job: SideJob, entry: dict, out: np.ndarray, s: WindowSettings, produced: Produced,
               layouts: dict) -> None:
    """A frame whose features are not all finite: refused, or (``toolbox-fill``) its amplitude filled."""
    rel = entry["path"]
    if s.corrupt is not None:
        raise ValidationError(f"{rel}: non-finite CSI; corruptions apply to finite CSI only")
    for k, (name, arr) in enumerate(zip(s.feature_names, _frame_arrays(job, entry, s, layouts))):
        if np.isfinite(out[k]).all():
            continue
        var = "CSIamp" if name == "amp" else "CSIphase"
        if np.isfinite(arr).all():
            raise ValidationError(f"{rel}: {var} holds values too large for float32")
        if s.nonfinite != "toolbox-fill":
            raise ValidationError(f"{rel}: {var} holds {int(np.count_nonzero(~np.isfinite(arr)))} non-finite "
                                  "value(s); refused (the MM-Fi toolbox would replace them by a column mean: choose "
                                  "that explicitly with the toolbox-fill setting)")
        if name != "amp":
            raise ValidationError(f"{rel}: CSIphase holds non-finite values; the toolbox fill applies to CSIamp only "
                                  "(the MM-Fi toolbox never reads CSIphase): use features amp")
        filled, count = toolbox_fill(arr)
        out[k] = filled
        if not np.isfinite(out[k]).all():
            raise ValidationError(f"{rel}: CSIamp has a packet with no finite value; the toolbox fill leaves it "
                                  "NaN, so the frame is refused")
        with produced.lock:
            produced.filled_values += count
            produced.filled_frames += 1
