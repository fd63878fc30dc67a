"""The fingerprint pass over a manifest: every file of the recordings read once, in batches, into whole-file,
bfee-record and MM-Fi-frame fingerprints (:func:`fingerprint`); every repeated fingerprint confirmed by
comparing the bytes or arrays before it becomes a content class; and the memberships of those classes (which
recordings hold each one), from which :meth:`ContentIndex.audit` judges any assignment of the recordings to
two sides (:mod:`rfbench.protocols.content_findings`)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

import numpy as np

from rfbench.errors import FormatError, ValidationError
from rfbench.protocols.content_findings import MAX_LISTED, ContentAudit, _judge
from rfbench.protocols.content_matches import BFEE, FRAME, HWREC, WHOLE, _confirm, _File, _Kind, _memberships
from rfbench.protocols.fingerprints import (
    _NON_FINITE,
    _OK,
    _UNPARSED,
    _ZERO,
    _bfee_batch,
    _bfee_phase_batch,
    frame_phases,
    frame_values,
    hardware_records,
    hardware_views,
    hash_spans,
)

#: Default ``min_shared``: one shared record or frame makes a leak (see :mod:`rfbench.protocols.content`).
DEFAULT_MIN_SHARED = 1
#: Upper bound of ``min_shared`` (any larger value could never be reached by a real recording).
MAX_MIN_SHARED = 1 << 31
#: Bytes of files read per batch in the fingerprinting pass.
BATCH_BYTES = 16 << 20
#: Frames hashed per kernel call.
BATCH_FRAMES = 512


# ----------------------------------------------------------------------------------------------------------
# The fingerprint pass over a manifest
# ----------------------------------------------------------------------------------------------------------


def _file_kind(entry: Mapping, bvp: bool = False, logs: bool = False) -> str:
    """``bvp``: the file is a Widar3.0 BVP profile (its recording's), fingerprinted by its values as a frame.
    ``logs``: every file of the manifest is an Intel 5300 log whatever its name (``ingest files`` frames each file
    it lists as one, and ``windows`` reads it so): fingerprinted by its records, as a ``.dat`` file is."""
    kind = entry.get("kind")
    if kind == "wifi-frame" or (bvp and kind is None and str(entry["path"]).lower().endswith(".mat")):
        return FRAME
    if kind in ("intel5300", "bfee"):
        return BFEE
    if kind is None and (logs or str(entry["path"]).lower().endswith(".dat")):
        return BFEE
    return WHOLE


def _resolve(root: str, rel: str, rid: str) -> str:
    """``root/rel`` for a manifest path that stays inside the root (relative, no ``..``, no drive)."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or "\\" in rel or ".." in parts or (len(rel) > 1 and rel[1] == ":"):
        raise ValidationError(f"recording {rid}: file path {rel!r} is not a path inside the dataset root; "
                              "re-create the manifest with rfbench ingest")
    return os.path.join(root, *[p for p in parts if p not in ("", ".")])


def _recorded_digest(entry: Mapping) -> str | None:
    d = entry.get("sha256")
    if isinstance(d, str) and len(d) == 64 and all(c in "0123456789abcdefABCDEF" for c in d):
        return d.lower()
    return None


@dataclass
class ContentIndex:
    """Fingerprints of the recordings of a manifest, with every repeated content confirmed (see the module
    docstring). Made by :func:`fingerprint`; :meth:`audit` judges one assignment of its recordings to sides.

    Attributes
    ----------
    ids : tuple of str
        The recordings fingerprinted, in manifest order.
    files : list
        Each distinct file read (a file listed by several recordings is read once).
    counts : dict
        What was fingerprinted: files, bytes, records, frames, empty files, blank and unparsed units.
    problems : list of dict
        ``{path, reason}`` for frames that could not be parsed (at most :data:`MAX_LISTED`).
    """

    ids: tuple
    files: list
    counts: dict
    problems: list
    confirmations: dict
    _units: dict  # kind name ("files", "records", "frames") -> membership tables
    _totals: dict  # kind name -> per-recording totals (ndarray)

    def index_of(self) -> dict[str, int]:
        return {rid: k for k, rid in enumerate(self.ids)}

    def audit(self, train: Iterable[str], test: Iterable[str], min_shared: int = DEFAULT_MIN_SHARED) -> "ContentAudit":
        """Judge an assignment: ``train`` and ``test`` are recording ids (all fingerprinted here).

        Raises
        ------
        ValidationError
            An id was not fingerprinted, or ``min_shared`` is out of range.
        """
        min_shared = check_min_shared(min_shared)
        index = self.index_of()
        n = len(self.ids)
        in_train = np.zeros(n, dtype=bool)
        in_test = np.zeros(n, dtype=bool)
        missing = []
        for ids, mask in ((train, in_train), (test, in_test)):
            for rid in ids:
                k = index.get(rid)
                if k is None:
                    missing.append(rid)
                else:
                    mask[k] = True
        if missing:
            raise ValidationError(f"{len(missing)} recording(s) were not fingerprinted (e.g. {missing[0]!r}); "
                                  "fingerprint the recordings of both sides")
        return _judge(self, in_train, in_test, min_shared)


def check_min_shared(value) -> int:
    """``value`` as an int in 1..:data:`MAX_MIN_SHARED`, or a :class:`ValidationError` saying so."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= int(value) <= MAX_MIN_SHARED:
        raise ValidationError(f"min_shared must be an integer in 1..{MAX_MIN_SHARED}, not {value!r}")
    return int(value)


def fingerprint(manifest, manifest_path: str | os.PathLike | None = None, *,
                recordings: Iterable[str] | None = None,
                progress: Callable[[int], None] | None = None,
                on_total: Callable[[int], None] | None = None) -> ContentIndex:
    """Fingerprint the files of a manifest's recordings and confirm every repeated content.

    Parameters
    ----------
    manifest : Manifest, dict or path
    manifest_path : path-like, optional
        Where the manifest was read from: its ``root`` may be relative to the manifest's folder
        (:meth:`Manifest.root_dir`). Taken from ``manifest`` when that is a path.
    recordings : iterable of str, optional
        Only these recording ids (default: all).
    progress, on_total : callable, optional
        ``on_total(n_files)`` once, then ``progress(n)`` as files are read.

    Raises
    ------
    ValidationError
        An id is not in the manifest, or a file path leaves the dataset root.
    FormatError
        A listed file is missing or unreadable.
    """
    from rfbench.datasets.manifest import load_manifest

    if manifest_path is None and isinstance(manifest, (str, os.PathLike)):
        manifest_path = manifest
    m = load_manifest(manifest)
    root = m.root_dir(manifest_path)
    if recordings is None:
        recs = list(m.recordings)
    else:
        wanted = set(recordings)
        recs = [r for r in m.recordings if r["id"] in wanted]
        have = {r["id"] for r in recs}
        missing = sorted(wanted - have)
        if missing:
            raise ValidationError(f"{len(missing)} recording id(s) not in the manifest: {', '.join(missing[:5])}")
    ids = tuple(r["id"] for r in recs)

    from rfbench.io.files import input_errors

    files: list[_File] = []
    by_path: dict[str, int] = {}
    by_inode: dict[tuple, int] = {}
    root_text = os.fspath(root)
    bvp_manifest = m.dataset == "widar3-bvp"
    logs = m.extra.get("template") is not None  # an ``ingest files`` corpus: every file it lists is a log
    for k, rec in enumerate(recs):
        bvp = bvp_manifest or rec.get("release") == "bvp"
        for entry in rec["files"]:
            path = _resolve(root_text, entry["path"], rec["id"])
            f = by_path.get(path)
            if f is None:
                with input_errors(path):
                    st = os.stat(path)
                key = (st.st_dev, st.st_ino)  # one file under two names (links) is read once
                f = by_inode.get(key)
                if f is None:
                    by_inode[key] = f = len(files)
                    digest = _recorded_digest(entry)
                    files.append(_File(entry["path"], path, _file_kind(entry, bvp, logs), [], digest, size=st.st_size,
                                       recorded=digest is not None))
                by_path[path] = f
            if k not in files[f].recordings:
                files[f].recordings.append(k)
    if on_total is not None:
        on_total(len(files))
    advance = progress or (lambda n=1: None)

    kinds = {BFEE: _Kind(), FRAME: _Kind(), HWREC: _Kind()}
    counts = {"recordings": len(ids), "files": len(files), "bytes": 0, "empty_files": 0, "records": 0,
              "frames": 0, "whole_file_only": 0, "blank": {"records_zero": 0, "frames_zero": 0,
                                                          "frames_non_finite": 0}, "unparsed_frames": 0,
              "digests_computed": 0}
    problems: list[dict] = []
    _read_all(files, kinds, counts, problems, advance)
    for name, kd in kinds.items():
        kd.finish(files, name)
    confirmations = _confirm(files, kinds)
    units, totals = _memberships(files, kinds, len(ids))
    return ContentIndex(ids, files, counts, problems, confirmations, units, totals)


def _read_all(files: list[_File], kinds: dict, counts: dict, problems: list, advance) -> None:
    from rfbench.datasets.mmfi import MAX_FRAME_BYTES
    from rfbench.io.files import input_errors, open_input, sha256_file
    from rfbench.io.matv5 import read_mat

    bfee, frame = kinds[BFEE], kinds[FRAME]
    n_bfee = 0
    n_frame = 0
    batch: list[int] = []  # files whose bytes are in buf[bounds[k]:bounds[k + 1]]
    bounds = [0]
    buf = np.empty(BATCH_BYTES, dtype=np.uint8)

    def flush():
        nonlocal batch, bounds, n_bfee
        if not batch:
            return
        spans, hashes, blank = _bfee_batch(buf, bounds)
        for f, s in zip(batch, spans):
            files[f].start, files[f].count = n_bfee, len(s)
            n_bfee += len(s)
        bfee.hashes.append(hashes)
        bfee.status.append(blank)  # 1 = _ZERO
        bfee.add_view("phase", *_bfee_phase_batch(buf, spans, bounds))
        counts["records"] += int(hashes.shape[0] - blank.sum())
        counts["blank"]["records_zero"] += int(blank.sum())
        advance(len(batch))
        batch, bounds = [], [0]

    def read_into(info: _File) -> int:
        """Append the file's bytes (its size at stat time, or less if it shrank) to the batch buffer."""
        nonlocal buf
        pos = bounds[-1]
        if pos and pos + info.size > buf.shape[0]:
            flush()
            pos = 0
        if info.size > buf.shape[0]:
            buf = np.empty(info.size, dtype=np.uint8)  # one log larger than a batch: a buffer of its own
        view = memoryview(buf)[pos:pos + info.size]
        got = 0
        with input_errors(info.path), open_input(info.path, str(info.path), "a dataset file") as fh:
            while got < info.size:
                n = fh.readinto(view[got:])
                if not n:
                    break
                got += n
        return got

    pending_frames: list[tuple[int, np.ndarray, np.ndarray | None]] = []

    def flush_frames():
        nonlocal pending_frames
        if not pending_frames:
            return
        for target, k in ((frame.hashes, 1), (frame.views["phase"][0], 2)):
            slots = [p[0] for p in pending_frames if p[k] is not None]
            values = [p[k] for p in pending_frames if p[k] is not None]
            if not values:
                continue
            lengths = np.array([v.nbytes for v in values], dtype=np.int64)
            offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
            hashes = hash_spans(np.concatenate(values).view(np.uint8), offsets, lengths)
            for f, h in zip(slots, hashes):
                target[f] = np.array([h], dtype=np.uint64)
        pending_frames = []

    for f, info in enumerate(files):
        if info.kind == BFEE:
            got = read_into(info) if info.size else 0
            info.size = got
            counts["bytes"] += got
            if got == 0:
                counts["empty_files"] += 1
                info.start, info.count = n_bfee, 0
                advance(1)
                continue
            pos = bounds[-1]
            if info.digest is None:
                info.digest = hashlib.sha256(memoryview(buf)[pos:pos + got]).hexdigest()
                counts["digests_computed"] += 1
            batch.append(f)
            bounds.append(pos + got)
            if bounds[-1] >= BATCH_BYTES:
                flush()
            continue
        if info.kind == WHOLE:
            counts["bytes"] += info.size
            if info.size == 0:
                counts["empty_files"] += 1
            else:  # read (hashed, and fingerprinted if it is a log) by _hardware_logs
                counts["whole_file_only"] += 1
                continue
            advance(1)
            continue
        # MM-Fi frame: one unit per file
        with input_errors(info.path):
            counts["bytes"] += info.size
            if info.size == 0:
                counts["empty_files"] += 1
                info.start, info.count = n_frame, 0
                advance(1)
                continue
            if info.digest is None:
                info.digest = sha256_file(info.path)[0]
                counts["digests_computed"] += 1
            try:
                mat = read_mat(info.path, max_bytes=MAX_FRAME_BYTES)  # as ingest reads a frame
            except FormatError as exc:
                mat = exc
        info.start, info.count = n_frame, 1
        slot = len(frame.hashes)
        n_frame += 1
        if isinstance(mat, FormatError):
            status, values, reason = _UNPARSED, None, str(mat).split(": ", 1)[-1]
            phases, phase_status = None, _UNPARSED
        else:
            values, status, reason = frame_values(mat)
            phases, phase_status = frame_phases(mat)
        frame.status.append(np.array([status], dtype=np.uint8))
        frame.hashes.append(np.zeros(1, dtype=np.uint64))
        frame.add_view("phase", np.zeros(1, dtype=np.uint64), np.array([phase_status], dtype=np.uint8))
        if status == _UNPARSED:
            counts["unparsed_frames"] += 1
            if len(problems) < MAX_LISTED:
                problems.append({"path": info.rel, "reason": f"frame not fingerprinted: {reason}"})
        elif status in (_ZERO, _NON_FINITE):
            counts["blank"]["frames_zero" if status == _ZERO else "frames_non_finite"] += 1
            info.digest = None  # nor the file: blank frames saved by one program are byte-identical anyway
        else:
            counts["frames"] += 1
            pending_frames.append((slot, values, phases if phase_status == _OK else None))
            if len(pending_frames) >= BATCH_FRAMES:
                flush_frames()
        advance(1)
    flush()
    flush_frames()
    _hardware_logs(files, kinds[HWREC], counts, advance)


def _hardware_logs(files: list[_File], hw, counts: dict, advance) -> None:
    """Fingerprint, by its records' CSI values, every file that is a log of CSI hardware other than the Intel
    5300 (told from its bytes, as ``ingest`` tells it): any file the passes above took whole, and any log in which
    the Intel 5300 kernel found no record. A copy of a log with a byte changed outside the CSI (a time stamp, a
    header, a record cut short) is no longer the same file, but its records still are. A file taken whole is
    hashed here too (from the bytes read for its records, when it is a log: each file is read once)."""
    from rfbench.io.files import input_errors, sha256_file
    from rfbench.protocols.content_matches import read_hardware_bytes

    n_hw = 0
    for info in files:
        if not info.size or not (info.kind == WHOLE or (info.kind == BFEE and info.count == 0)):
            continue
        log, data = read_hardware_bytes(info.path)
        if info.kind == WHOLE:
            if info.digest is None:
                if data is not None:
                    info.digest = hashlib.sha256(data).hexdigest()
                else:
                    with input_errors(info.path):
                        info.digest = sha256_file(info.path)[0]
                counts["digests_computed"] += 1
            advance(1)
        del data
        if log is None or log.n_records == 0:
            continue
        records, status = hardware_records(log)
        hashes = _record_hashes(records, status)
        for view in hardware_views():
            other, other_status = hardware_records(log, view)
            hw.add_view(view, _record_hashes(other, other_status), other_status)
        if info.kind == WHOLE:
            counts["whole_file_only"] -= 1
        info.kind, info.start, info.count = HWREC, n_hw, len(records)
        n_hw += len(records)
        hw.hashes.append(hashes)
        hw.status.append(status)
        counts["records"] += int((status == _OK).sum())
        counts["blank"]["records_zero"] += int((status == _ZERO).sum())


def _record_hashes(records: list, status: np.ndarray) -> np.ndarray:
    """XXH64 of each record's values (``hardware_records``' ``(shape, values)``), 0 where its status is not OK."""
    values = [v for _, v in records]
    lengths = np.array([v.nbytes for v in values], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    hashes = hash_spans(np.concatenate(values).view(np.uint8), offsets, lengths).astype(np.uint64, copy=True)
    hashes[status != _OK] = 0
    return hashes
