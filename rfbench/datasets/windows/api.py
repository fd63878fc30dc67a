"""The public functions: build a side in memory, write it to a folder, read a side's targets without X."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from rfbench.datasets.windows.build import (
    Plan,
    Produced,
    SideJob,
    announced_rows,
    bvp_readers_for,
    bvp_spares,
    default_workers,
    open_side,
    plan_side,
    progress_total,
    side_batches,
    start_plan,
)
from rfbench.datasets.windows.index import (
    INDEX_FILE,
    X_FILE,
    Y_FILE,
    WindowIndex,
    dropped_counts,
    iter_index,
    load_index,
)
from rfbench.datasets.windows.settings import WindowSettings
from rfbench.errors import OutputExistsError, ValidationError
from rfbench.io.files import check_writable, folder_lock, new_temporary, replace_output

__all__ = ["Windows", "SideTargets", "build_windows", "write_windows", "side_targets", "test_truth",
           "train_targets"]


@dataclass(frozen=True)
class Windows:
    """One side of a split as arrays: ``x`` (float32, axes in ``index["x"]["axes"]``), ``y`` (one target per
    row) and ``index`` (the ``rfbench.windows/1`` document, without the file entries only writing adds)."""

    x: np.ndarray
    y: np.ndarray
    index: dict

    def __len__(self) -> int:
        return int(self.x.shape[0])

    def sequence(self):
        """A :class:`~rfbench.datasets.windows.WindowSequence` of ``(x[i], y[i])``."""
        from rfbench.datasets.windows.sequence import WindowSequence

        return WindowSequence(self.x, self.y)


@dataclass(frozen=True)
class SideTargets:
    """The targets of one side of a split, read from the dataset (no X).

    Attributes
    ----------
    y : ndarray
        Pose: the ground-truth joints of each row's target frame, in the ground truth's own dtype; gesture: the
        label index of each row (int64) into ``labels["names"]``.
    kind : {"pose", "label"}
    rows : list of dict
        ``{id, start, stop}`` per row (as an index records them), in row order.
    labels : dict or None
        ``{names, source, key, sha256}`` (gesture).
    files : list of dict
        ``{path, bytes, sha256}`` of every dataset file read for these targets, sorted by path.
    excluded, dropped : list
        As the index's.
    recordings : int
        Recordings on the side; ``recordings_with_rows`` of them gave at least one row.
    split, manifest : dict
        ``{path, sha256}`` of the split and manifest they were read with.
    """

    side: str
    task: str
    y: np.ndarray
    kind: str
    rows: list
    labels: dict | None
    files: list
    excluded: list
    dropped: list
    recordings: int
    recordings_with_rows: int
    split: dict
    manifest: dict

    @property
    def ids(self) -> np.ndarray:
        """The recording id of every row (a unicode array, as ``--groups`` holds them)."""
        return np.array([r["id"] for r in self.rows], dtype=str)


def _rel(path: Path, base: Path | None) -> str:
    path = Path(path).resolve()
    if base is None:
        return str(path)
    try:
        return Path(os.path.relpath(path, Path(base).resolve())).as_posix()
    except ValueError:  # another drive
        return str(path)


def _check_room(folders: Sequence[Path], plans: Sequence[Plan], known: Sequence[int | None]) -> None:
    """Refuse, before any file is written, sides whose X (its rows known ahead: BVP, MM-Fi) would not fit in the
    space free where they go: a run that would stop at "no space left" after writing for an hour stops now, with
    the sizes. Sides on one file system are added up; a file system that reports no size is not checked."""
    from rfbench.errors import OutputError

    need: dict[int, list] = {}  # device: [bytes, the folder the outputs go into, its nearest existing folder]
    for folder, plan, n in zip(folders, plans, known):
        if n is None:
            continue
        existing = next((p for p in (folder, *folder.parents) if p.is_dir()), Path("."))
        try:
            device = os.stat(existing).st_dev
        except OSError:
            continue
        x_bytes = n * int(np.prod(plan.x_row_shape, dtype=np.int64)) * 4
        entry = need.setdefault(device, [0, folder, existing])
        entry[0] += x_bytes
    for total, folder, existing in need.values():
        try:
            fs = os.statvfs(existing)
        except (OSError, AttributeError):  # (no statvfs: not checked)
            continue
        free = fs.f_bavail * fs.f_frsize
        if fs.f_blocks and total > free:
            raise OutputError(f"cannot write {folder}: X would take {_size(total)}, but {_size(free)} is free on its "
                              "file system; free some space or write elsewhere (-o)")


def _size(n: int) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _empty_side(plan: Plan) -> ValidationError:
    job = plan.job
    detail = f"{len(job.recordings)} recording(s)"
    if plan.excluded:
        e = plan.excluded[0]
        detail += f", {len(plan.excluded)} excluded (e.g. {e['id']}: {e['reason']})"
    if plan.dropped:
        from rfbench.datasets.windows.index import dropped_summary

        detail += ", dropped: " + dropped_summary(plan.dropped)
    return ValidationError(f"the split's {job.side} side gives no row ({detail}); nothing to write")


def _labels_doc(job: SideJob, base: Path | None) -> dict | None:
    if job.labels is None:
        return None
    lab = job.labels
    doc = {"names": list(lab.names), "source": lab.source, "key": lab.key, "sha256": lab.sha256}
    if lab.path is not None:
        doc["path"] = _rel(lab.path, base)
        doc["file_sha256"] = lab.file_sha256
    return doc


def index_document(plan: Plan, produced: Produced, x_entry: dict, y_entry: dict, base: Path | None) -> dict:
    """The ``rfbench.windows/1`` document of a completed plan; paths relative to ``base`` (the index's folder),
    absolute when ``base`` is None (an index kept in memory)."""
    from rfbench import __version__
    from rfbench.io.files import schema_id

    job = plan.job
    s = job.settings
    settings = s.to_dict()
    if s.label_set is not None:
        settings["label_set"] = _rel(Path(s.label_set), base)
    x = {"dtype": "float32", "axes": list(plan.x_axes), "features": list(s.feature_names), **x_entry}
    hardware = getattr(plan, "hardware_format", None)
    if job.kind == "intel5300" and hardware is not None:
        from rfbench.datasets.windows.hardware import SPAN, target_grid

        x["subcarrier_map"] = {"from": f"{hardware} data subcarriers", "to": target_grid(s.subcarriers, s.bandwidth),
                               "span": SPAN}
        x["hardware"] = hardware
    elif job.kind == "intel5300" and s.subcarriers != 30:
        from rfbench.datasets.windows.build import _grids

        src, dst, span = _grids(s)
        x["subcarrier_map"] = {"from": src, "to": dst, "span": span}
    if job.kind == "intel5300":
        x["receivers"] = list(plan.receivers)
        x["receiver_key"] = plan.receiver_key
    if job.kind == "bvp":
        from rfbench.datasets.windows.bvp import padding_record

        x["padding"] = padding_record(job.manifest, job.split.train, s.t_max)
    doc = {
        "schema": schema_id("windows"),
        "rfbench_version": __version__,
        "split": {"path": _rel(job.split_path, base), "sha256": job.split_sha256},
        "manifest": {"path": _rel(job.manifest_path, base), "sha256": job.manifest_sha256},
        "dataset": job.manifest.dataset,
        "synthetic": bool(job.manifest.synthetic or getattr(job.split, "synthetic", False)),
        "side": job.side,
        "task": s.task,
        "settings": settings,
        "x": x,
        "y": {"dtype": np.dtype(plan.y_dtype).str, "kind": "pose" if s.task == "pose" else "label", **y_entry},
        "labels": _labels_doc(job, base),
        "rows": plan.rows(),
        "excluded": list(plan.excluded),
        "dropped": list(plan.dropped),
        "recordings": {"side": len(job.recordings), "with_rows": len(plan.recordings),
                       "excluded": len(plan.excluded)},
        "files": job.files.records(),
        "notes": list(plan.notes),
    }
    odd = [g for g in dropped_counts(plan.dropped) if g["what"] == "record"]
    used = sum(p.used_records for p in plan.recordings)
    if odd and sum(g["count"] for g in odd) > used:
        doc["notes"].append(f"most records of the kept recordings were dropped ({odd[0]['count']} records: "
                            f"{odd[0]['reason']}; {used} used): if that is the corpus's shape, set the antennas "
                            "setting (--antennas) to it")
    if s.corrupt is not None:
        from rfbench.datasets.windows.corrupt import corruption_note

        doc["notes"].append(corruption_note(s, job.kind))
    if s.nonfinite == "toolbox-fill":
        doc["filled"] = {"frames": produced.filled_frames, "values": produced.filled_values}
    return doc


def build_windows(split, side: str, settings: WindowSettings | None = None, *, workers: int | None = None,
                  progress: Callable[[int], None] | None = None,
                  on_total: Callable[[int], None] | None = None) -> Windows:
    """Build one side of a split's model inputs from the dataset files its manifest names, in memory.

    Parameters
    ----------
    split : path-like
        A split file (``rfbench.split/1``). It is re-checked (``load_split``), its manifest's sha256 compared
        with the split's record, and every dataset file read is checked against the manifest (inside its
        root, a regular file, the recorded size and sha256) before it is used.
    side : {"train", "test"}
    settings : WindowSettings, optional
        Window settings (default: every field at its per-dataset default).
    workers : int, optional
        Threads reading files (default: one per core, at most 4). The result does not depend on it.
    progress, on_total : callable, optional
        ``on_total(n)`` once, then ``progress(1)`` per recording read.

    Returns
    -------
    Windows
        ``x`` float32, ``y`` and the index document (without the ``file``/``bytes``/``sha256`` of X and y, which
        only :func:`write_windows` produces).

    Raises
    ------
    ValidationError, FormatError, LeakageError
        A bad split or settings, a dataset file missing or changed since ingest, non-finite CSI (unless the
        toolbox fill is chosen), a side that gives no row.
    """
    job = open_side(split, side, settings)
    plan = start_plan(job)
    produced = Produced()
    if on_total is not None:
        on_total(progress_total(plan))
    xs, ys = [], []
    for x, y in side_batches(plan, produced, workers or default_workers(), progress):
        xs.append(x)
        ys.append(y)
    if plan.n_rows == 0:
        raise _empty_side(plan)
    x = np.concatenate(xs) if len(xs) > 1 else xs[0]
    y = np.concatenate(ys) if len(ys) > 1 else ys[0]
    doc = index_document(plan, produced, {"shape": list(x.shape)}, {"shape": list(y.shape)}, None)
    return Windows(x, y, doc)


#: ``side`` of :func:`write_windows` for both sides of a split at once (into ``out/train`` and ``out/test``).
BOTH = "both"
#: The sides :data:`BOTH` writes, in this order, each into the subfolder of its name.
BOTH_SIDES = ("train", "test")


def write_windows(split, side: str, out: str | os.PathLike, settings: WindowSettings | None = None, *,
                  force: bool = False, workers: int | None = None, progress: Callable[[int], None] | None = None,
                  on_total: Callable[[int], None] | None = None, reading=None) -> dict:
    """Build one side of a split and write ``X.npy``, ``y.npy`` and ``index.json`` into the folder ``out``.

    Takes the arguments of :func:`build_windows`, plus ``out`` and ``force`` (replace the three files when they
    exist; nothing else in ``out`` is touched). X is streamed to disk in chunks (memory is bounded by a few
    chunks of windows, not by the side's size); each file is written to a temporary name and the three are
    renamed into place only once all are complete, the index last, so an error or an interruption leaves the
    folder as it was.

    ``side`` :data:`BOTH` writes the train side into ``out/train`` and the test side into ``out/test``, the very
    files two calls (one per side) would write, with the split and manifest loaded and re-checked once; the six
    files are renamed into place only once both sides are complete. It returns ``{"train": doc, "test": doc}``.

    ``reading`` (a :class:`~rfbench.datasets.windows.dataset_files.Reading`) is where the side's decoded files are
    kept and found: a build after the first one under it, of settings that differ in their corruption alone, reads
    no dataset file again (nor the split and manifest) and writes the very bytes it would have written without it.

    Returns
    -------
    dict
        The index document written (for :data:`BOTH`, one per side).
    """
    from rfbench.datasets.windows.bvp_procs import close_spares

    out = Path(out)
    sides = BOTH_SIDES if side == BOTH else (side,)
    folders = [out / s for s in sides] if side == BOTH else [out]
    for folder in (out, *folders):
        if folder.exists() and not folder.is_dir():
            raise OutputExistsError(f"{folder} exists and is not a folder; give a folder for X.npy, y.npy and "
                                    "index.json")
    targets = [{name: folder / name for name in (X_FILE, Y_FILE, INDEX_FILE)} for folder in folders]
    for side_targets_ in targets:
        for path in side_targets_.values():
            check_writable(path, force)
    workers = workers or default_workers()
    spares = bvp_spares(split, sides, workers, reading)  # reader processes starting while the split is re-checked
    try:
        return _write_sides(split, side, sides, folders, targets, settings, force, workers, progress, on_total,
                            reading, spares)
    finally:
        close_spares(spares)  # those no side took


def _write_sides(split, side: str, sides: Sequence[str], folders: list[Path], targets: list[dict], settings, force,
                 workers: int, progress, on_total, reading, spares: list) -> dict:
    """:func:`write_windows` once its outputs are checked writable (``spares``: reader processes started ahead,
    taken by the BVP readers)."""
    from rfbench.datasets.windows.build import open_sides

    jobs = open_sides(split, sides, settings, reading=reading)
    _refuse_inside_tree(folders, jobs)
    _refuse_inputs([path for t in targets for path in t.values()], jobs)
    plans = [start_plan(job) for job in jobs]
    known = [announced_rows(plan) for plan in plans]
    for job, plan, n in zip(jobs, plans, known):
        if n == 0 and job.kind in ("mmfi", "bvp"):
            raise _empty_side(plan)
    _check_room(folders, plans, known)
    if on_total is not None:
        on_total(sum(progress_total(plan) for plan in plans))
    created: list[Path] = []  # the folders this run made (its own mkdir succeeded), deepest first
    staged: list[_Staged] = []
    busy: set = set()  # a folder another run holds the lock of, and its parents: not this run's to remove
    try:
        with contextlib.ExitStack() as locks:
            for folder in folders:
                _make_folders(folder, created)
            for folder in folders:
                try:
                    locks.enter_context(folder_lock(folder, "rfbench windows"))
                except OutputExistsError:
                    busy.update((folder, *folder.parents))
                    raise
            for t in targets:  # again under the lock: a run that held it may have written them meanwhile
                for path in t.values():
                    check_writable(path, force)
            _write_staged(jobs, plans, known, targets, force, workers, progress, staged, spares)
    except BaseException:  # an error, Ctrl-C or SIGTERM: remove the folders made for the outputs (if still empty)
        for folder in (d for d in created if d not in busy):
            try:
                folder.rmdir()
            except OSError:
                pass
        raise
    if side == BOTH:
        return {one.doc["side"]: one.doc for one in staged}
    return staged[0].doc


def _make_folders(folder: Path, created: list) -> None:
    """Make ``folder`` and its missing parents, adding to ``created`` (deepest first) those this process made."""
    missing = []
    for d in (folder, *folder.parents):
        if d.exists():
            break
        missing.append(d)
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:  # made meanwhile by someone else: not this run's
            if not d.is_dir():
                raise
            continue
        created.insert(0, d)


def _write_staged(jobs, plans, known, targets, force, workers, progress, staged: list, spares) -> None:
    """Stage every side's outputs into ``staged``, then commit them all (their folders made and locked)."""
    readers = None
    try:
        # one pool reads both BVP sides (a single side's pool starts in its batches, unless some started ahead)
        readers = bvp_readers_for(plans, workers, spares) if len(plans) > 1 or spares else None
        for k, (job, n, t) in enumerate(zip(jobs, known, targets)):
            plan, plans[k] = plans[k], None  # a side's plan is let go once it is written (its doc is kept)
            try:
                staged.append(_stage(plan, t, n, force, workers, progress, readers))
            except _Recount:  # a recording held records of another antenna shape: again, counting as it goes
                staged.append(_stage(start_plan(job), t, None, force, workers, None))
            del plan
        for one in staged:
            one.commit()
    finally:
        if readers is not None:
            readers.close()
        for one in staged:
            one.discard()


def _refuse_inputs(outputs: list[Path], jobs) -> None:
    """Refuse to write X, y or an index over a file the sides are built from: the split, its manifest, the label
    set, a dataset file the manifest lists (``force`` replaces earlier outputs, never what the job reads)."""
    from rfbench.io.files import refuse_inputs

    for job in jobs:
        labels = job.labels.path if job.labels is not None else None
        refuse_inputs(outputs, [job.split_path, job.manifest_path, labels])
        job.manifest.refuse_listed(outputs, job.files.root)


def _refuse_inside_tree(folders: list[Path], jobs) -> None:
    """Refuse an output folder that is, or lies inside, the dataset tree the sides are read from (links resolved:
    ``out/train`` a link into the tree, too): :func:`rfbench.io.files.refuse_inside_tree`."""
    from rfbench.io.files import refuse_inside_tree

    for job in jobs:
        refuse_inside_tree(folders, job.files.root, folders=True, what="X, y and the index written there")


class _Recount(Exception):
    """The rows announced before reading (from the manifest's packet counts) were not the rows read."""


class _Staged:
    """One side's three files complete under temporary names: :meth:`commit` renames them into place (the index
    last), :meth:`discard` removes whatever was not renamed."""

    def __init__(self, doc: dict, xw, yw, index_tmp: str, index_path: Path):
        self.doc, self._xw, self._yw, self._index_tmp, self._index_path = doc, xw, yw, index_tmp, index_path

    def commit(self) -> None:
        self._xw.commit()
        self._yw.commit()
        replace_output(self._index_tmp, self._index_path)
        self._index_tmp = None

    def discard(self) -> None:
        self._xw.discard()
        self._yw.discard()
        if self._index_tmp is not None:
            try:
                os.unlink(self._index_tmp)
            except FileNotFoundError:
                pass
            self._index_tmp = None


def _stage(plan: Plan, targets: dict, known: int | None, force: bool, workers: int, progress,
           readers=None) -> _Staged:
    """Write one side's X, y and index under temporary names beside ``targets``; nothing is left on an error."""
    from rfbench.datasets.windows.npy import NpyWriter

    out = targets[INDEX_FILE].parent
    produced = Produced()
    xw = NpyWriter(targets[X_FILE], np.float32, plan.x_row_shape, n_rows=known, force=force, defer=True)
    yw = NpyWriter(targets[Y_FILE], plan.y_dtype, plan.y_row_shape, n_rows=known, force=force, defer=True)
    index_tmp = None
    try:
        with xw, yw:
            for x, y in side_batches(plan, produced, workers, progress, borrow=True, readers=readers):
                if known is not None and xw.rows + len(x) > known:
                    raise _Recount
                xw.write(x, borrowed=produced.borrowed)
                yw.write(y)
            if plan.n_rows == 0:
                raise _empty_side(plan)
            if known is not None and xw.rows != known:
                raise _Recount
        doc = index_document(plan, produced,
                             {"file": X_FILE, "shape": list(xw.shape), "bytes": xw.bytes, "sha256": xw.sha256},
                             {"file": Y_FILE, "shape": list(yw.shape), "bytes": yw.bytes, "sha256": yw.sha256}, out)
        fd, index_tmp = new_temporary(out, INDEX_FILE)
        with os.fdopen(fd, "wb") as fh:
            for piece in iter_index(doc):
                fh.write(piece.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        return _Staged(doc, xw, yw, index_tmp, targets[INDEX_FILE])
    except BaseException:
        xw.discard()
        yw.discard()
        if index_tmp is not None:
            try:
                os.unlink(index_tmp)
            except FileNotFoundError:
                pass
        raise


def side_targets(split, side: str, settings: WindowSettings | None = None, *,
                 workers: int | None = None, labels=None) -> SideTargets:
    """The targets of one side of a split, read from the dataset without building X: MM-Fi pose rows from the
    ground-truth files, label indices from the manifest (Intel 5300 logs are parsed, since their packet counts
    and antenna shapes decide the rows). The rows are exactly those :func:`build_windows` makes.

    Raises
    ------
    ValidationError
        As :func:`build_windows`, including a side that gives no row.
    """
    job = open_side(split, side, settings, labels)
    plan = plan_side(job, workers=workers)
    if plan.n_rows == 0:
        raise _empty_side(plan)
    return _targets(job, plan)


def _targets(job: SideJob, plan: Plan) -> SideTargets:
    s = job.settings
    return SideTargets(
        side=job.side, task=s.task, y=plan.y(), kind="pose" if s.task == "pose" else "label", rows=plan.rows(),
        labels=_labels_doc(job, None), files=job.files.records(), excluded=list(plan.excluded),
        dropped=list(plan.dropped), recordings=len(job.recordings),
        recordings_with_rows=len(plan.recordings),
        split={"path": str(job.split_path), "sha256": job.split_sha256},
        manifest={"path": str(job.manifest_path), "sha256": job.manifest_sha256})


def _index_for(split, index) -> WindowIndex:
    """The index, checked to come from ``split`` (its sha256) and from the split's manifest."""
    from rfbench.io.files import sha256_file

    idx = index if isinstance(index, WindowIndex) else load_index(index, check_arrays=False)
    split_path = Path(getattr(split, "path", None) or split)
    digest = getattr(split, "sha256", None) or sha256_file(split_path)[0]  # a loaded split's: of what it holds
    if digest != idx.doc["split"]["sha256"]:
        raise ValidationError(f"{idx.path}: the index was built from another split (its split sha256 differs from "
                              f"{split_path}'s); build the index from this split with rfbench windows")
    return idx


def _index_labels(idx: WindowIndex):
    """The label set to score an index's rows under. Derived from the manifest again (None: as ``windows``
    derived it, the sorted names of its label field) unless the index's settings name a label-set file: that
    file is never opened here, whatever path the index names (it could name a secret, a FIFO, a device), and
    the names the index recorded are what ``y`` indexes (verify reads the file inside its closed world)."""
    from rfbench.datasets.windows.build import LabelInfo

    doc = idx.doc["labels"]
    if doc is None or not idx.doc["settings"].get("label_set"):
        return None
    return LabelInfo(tuple(doc["names"]), str(doc["source"]), str(doc.get("key") or "label"),
                     None, doc.get("file_sha256"))


def _check_same(idx: WindowIndex, t: SideTargets) -> None:
    """The index's manifest and label set are those its settings give now (:func:`_index_labels`): the names an
    index records from its manifest are its own word, and taken as read a permuted order renamed every class of
    a report (a per-class recall under another gesture's name)."""
    if t.manifest["sha256"] != idx.doc["manifest"]["sha256"]:
        raise ValidationError(f"{idx.path}: the index was built from another manifest than the split's")
    recorded, now = idx.doc["labels"], t.labels
    fields = ("names", "source", "key")
    if recorded is not None and (now is None or any(now.get(k) != recorded.get(k) for k in fields)):
        raise ValidationError(f"{idx.path}: the index's label set differs from the one its settings give now ("
                              + ("other class names or order" if now is None or now["names"] != recorded["names"]
                                 else "another label field or source")
                              + "); rebuild the index with rfbench windows")


def test_truth(split, index, *, workers: int | None = None) -> SideTargets:
    """The test side's ground truth for scoring an index's rows, read from the dataset.

    The index must come from ``split`` (sha256), be the ``test`` side, and its rows must be exactly the rows its
    own settings give on the split now (an index edited, or built from another window setting, is refused).
    The targets are read from the dataset files (pose) or the manifest (labels), never from ``y.npy``.

    Parameters
    ----------
    split : path-like
        The split file the scores are reported under.
    index : path-like or WindowIndex
        The test side's ``index.json`` (whose rows the predictions follow, in order).

    Raises
    ------
    ValidationError, FormatError
        The index is from another split, side or window setting, a dataset file is missing or changed since
        ingest, or the side gives no row (exit 2).
    """
    idx = _index_for(split, index)
    if idx.side != "test":
        raise ValidationError(f"{idx.path}: the index holds the {idx.side} side; scoring needs the test side's "
                              "index (rfbench windows SPLIT --side test)")
    t = side_targets(split, "test", idx.window_settings(), workers=workers, labels=_index_labels(idx))
    _check_same(idx, t)
    if t.rows != idx.rows:
        diff = next((k for k, (a, b) in enumerate(zip(t.rows, idx.rows)) if a != b), min(len(t.rows), len(idx.rows)))
        raise ValidationError(f"{idx.path}: the index's rows differ from those its settings give on this split "
                              f"({len(idx.rows)} rows in the index, {len(t.rows)} now; first difference at row "
                              f"{diff}); rebuild the index with rfbench windows")
    for key, found in (("excluded", t.excluded), ("dropped", t.dropped)):  # shown in the report: never taken as read
        if found != idx.doc[key]:
            raise ValidationError(f"{idx.path}: the index's {key} list ({len(idx.doc[key])} entries) is not what its "
                                  f"settings give on this split ({len(found)}); rebuild the index with rfbench windows")
    return t


def train_targets(split, index, *, workers: int | None = None) -> SideTargets:
    """The train side's targets under the settings of ``index`` (the test side's index), for the baselines:
    mean training pose, class counts per window. No X is built.

    Raises
    ------
    ValidationError, FormatError
        As :func:`test_truth` (another split, a changed dataset file, a train side that gives no row).
    """
    idx = _index_for(split, index)
    t = side_targets(split, "train", idx.window_settings(), workers=workers, labels=_index_labels(idx))
    _check_same(idx, t)
    return t


test_truth.__test__ = False  # not a pytest test, despite its name
