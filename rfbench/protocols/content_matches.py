"""Which contents repeat: hash matches confirmed by comparing the bytes (records, whole files) or arrays
(frames) before they become content classes, so a hash collision never becomes a leak verdict; and the
memberships of the classes (which recordings hold each one: pair counts, copies within a recording, classes
found in more than :data:`WIDESPREAD_RECORDINGS` recordings)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from rfbench.errors import FormatError
from rfbench.protocols.fingerprints import (
    _OK,
    _UNPARSED,
    _frame_shapes,
    bfee_content,
    bfee_phase_content,
    frame_phases,
    frame_values,
    hardware_records,
)

#: Content found in more than this many recordings is reported per recording, not per pair.
WIDESPREAD_RECORDINGS = 32
#: Bytes of candidate content (records or frames sharing a hash) held at once while confirming matches.
CONFIRM_BYTES = 256 << 20

# The kinds of file: Intel 5300 logs (records fingerprinted), logs of other CSI hardware (records: their CSI
# values), MM-Fi frames and BVP profiles (arrays), any other (whole).
BFEE, HWREC, FRAME, WHOLE = "bfee", "hardware", "frame", "whole"
#: The unit each kind's fingerprints are counted and reported as: the records of both kinds of log are "records".
UNIT_LABEL = {BFEE: "records", HWREC: "records", FRAME: "frames"}


@dataclass
class _File:
    rel: str
    path: str
    kind: str
    recordings: list
    digest: str | None = None
    size: int = 0
    start: int = 0  # first record (bfee) or frame index of this file in its kind's arrays
    count: int = 0
    file_class: int = -1  # distinct non-empty content (identical files share one), set by _confirm
    recorded: bool = False  # digest taken from the manifest (a claim), not computed here


def _same_file_bytes(a: str, b: str, chunk: int = 1 << 20) -> bool:
    from rfbench.io.files import input_errors, open_input

    with input_errors(a), input_errors(b), open_input(a, a, "a dataset file") as fa, \
            open_input(b, b, "a dataset file") as fb:
        if os.fstat(fa.fileno()).st_size != os.fstat(fb.fileno()).st_size:
            return False
        while True:
            x = fa.read(chunk)
            y = fb.read(chunk)
            if x != y:
                return False
            if not x:
                return True


@dataclass
class _Kind:
    """One kind of content unit (bfee records or MM-Fi frames): per unit its hash and status, per file its
    range; after confirmation, the classes of units found more than once (or in a file of several recordings)."""

    hashes: list = field(default_factory=list)
    status: list = field(default_factory=list)
    # the other views of each unit (its phases; a hardware record on each grid): view -> (hash batches, status
    # batches), batch by batch as ``hashes`` (status 0 where the unit has a fingerprint in that view)
    views: dict = field(default_factory=dict)
    # filled by _finish
    unit_hash: np.ndarray | None = None
    unit_status: np.ndarray | None = None
    unit_views: dict = field(default_factory=dict)  # view -> (hashes, status) of every unit
    file_of_unit: np.ndarray | None = None
    occ_unit: np.ndarray | None = None  # units in multi-membership classes
    occ_class: np.ndarray | None = None
    n_classes: int = 0

    def add_view(self, view: str, hashes: np.ndarray, status: np.ndarray) -> None:
        """Append a batch of the ``view`` fingerprints of the units just appended to ``hashes``."""
        batches = self.views.setdefault(view, ([], []))
        batches[0].append(np.asarray(hashes, dtype=np.uint64))
        batches[1].append(np.asarray(status, dtype=np.uint8))

    def finish(self, files: list[_File], kind: str) -> None:
        """Concatenate the per-batch arrays; map every unit to its file (units are stored in file order)."""
        self.unit_hash = np.concatenate(self.hashes) if self.hashes else np.zeros(0, np.uint64)
        self.unit_status = np.concatenate(self.status) if self.status else np.zeros(0, np.uint8)
        self.unit_views = {view: (np.concatenate(h), np.concatenate(st)) for view, (h, st) in self.views.items()}
        self.hashes, self.status, self.views = [], [], {}
        if any(h.shape != self.unit_hash.shape or st.shape != self.unit_hash.shape
               for h, st in self.unit_views.values()):  # pragma: no cover - an internal invariant
            raise AssertionError("units and their other views disagree")
        ids = np.array([k for k, f in enumerate(files) if f.kind == kind], dtype=np.int64)
        counts = np.array([files[k].count for k in ids], dtype=np.int64)
        self.file_of_unit = np.repeat(ids, counts)
        if self.file_of_unit.shape[0] != self.unit_hash.shape[0]:  # pragma: no cover - an internal invariant
            raise AssertionError("units and files disagree")


# ----------------------------------------------------------------------------------------------------------
# Confirmation: hash matches become classes only when the bytes / arrays are equal
# ----------------------------------------------------------------------------------------------------------


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted order of ``keys`` and the [start, stop) bounds of each run of ≥ 2 equal keys in that order."""
    order = np.argsort(keys)
    k = keys[order]
    if k.shape[0] < 2:
        return order, np.zeros((0, 2), dtype=np.int64)
    change = np.flatnonzero(k[1:] != k[:-1]) + 1
    starts = np.concatenate([[0], change])
    stops = np.concatenate([change, [k.shape[0]]])
    many = stops - starts >= 2
    return order, np.stack([starts[many], stops[many]], axis=1)


def _strong_key(data: bytes) -> bytes:
    """A cryptographic digest (BLAKE2b, 128 bits) of a candidate's content: candidates sharing an XXH64 value
    are grouped by it, so a run of hash collisions — which a hostile file can be built to hold, XXH64 being
    unkeyed — is split in linear time; members of a group are then still compared byte for byte."""
    return hashlib.blake2b(data, digest_size=16).digest()


def _partition(members: list, content: Callable[[Any], bytes | None]) -> list:
    """Split ``members`` into classes of equal ``content(m)`` (None, "unavailable", is a class of its own):
    grouped by :func:`_strong_key` of the content, then each member compared with the first of its class —
    linear in the members, however many share one XXH64 value."""
    groups: dict = {}
    alone = []
    for m in members:
        c = content(m)
        if c is None:
            alone.append([m])
        else:
            groups.setdefault(_strong_key(c), []).append((m, c))
    classes = []
    for rest in groups.values():
        while rest:  # more than one pass only if two different contents share a strong key
            anchor = rest[0][1]
            classes.append([m for m, c in rest if c == anchor])
            rest = [(m, c) for m, c in rest if c != anchor]
    return classes + alone


def _confirm(files: list[_File], kinds: dict) -> dict:
    """Confirm whole-file digests, then record and frame hashes; set ``file_class`` on files and the classes
    of each kind. Returns the confirmation counts."""
    from rfbench.io.files import input_errors, sha256_file

    out = {"file_candidates": 0, "file_collisions": 0, "recorded_sha256_mismatches": 0, "record_candidates": 0,
           "record_collisions": 0, "frame_candidates": 0, "frame_collisions": 0, "record_phase_candidates": 0,
           "record_phase_collisions": 0, "frame_phase_candidates": 0, "frame_phase_collisions": 0,
           "record_grid_candidates": 0, "record_grid_collisions": 0}
    # files: every non-empty file gets a class; identical files share one
    digests: dict = {}
    for k, f in enumerate(files):
        if f.size and f.digest is not None:
            digests.setdefault(f.digest, []).append(k)
    file_class = np.full(len(files), -1, dtype=np.int64)
    n_classes = 0
    for members in digests.values():
        if len(members) > 1:
            out["file_candidates"] += len(members)
            actual = {}
            for k in members:  # a digest recorded in the manifest is a claim: hash the file itself
                if files[k].recorded:
                    with input_errors(files[k].path):
                        actual[k] = sha256_file(files[k].path)[0]
                    out["recorded_sha256_mismatches"] += actual[k] != files[k].digest
                else:
                    actual[k] = files[k].digest
            groups = []
            by_actual: dict = {}
            for k in members:
                by_actual.setdefault(actual[k], []).append(k)
            for g in by_actual.values():
                while g:
                    same = [k for k in g if k == g[0] or _same_file_bytes(files[g[0]].path, files[k].path)]
                    groups.append(same)
                    g = [k for k in g if k not in same]
            out["file_collisions"] += len(groups) - 1
        else:
            groups = [members]
        for g in groups:
            file_class[g] = n_classes
            n_classes += 1
    for k, f in enumerate(files):
        f.file_class = int(file_class[k])

    starts_of = np.array([f.start for f in files], dtype=np.int64)
    for name, kd in kinds.items():
        label = UNIT_LABEL[name][:-1]
        ok = np.flatnonzero(kd.unit_status == _OK)
        groups = _confirmed_groups(files, name, kd, starts_of, ok, kd.unit_hash, "amp", out, label)
        for view, (hashes, status) in kd.unit_views.items():
            ok = np.flatnonzero((kd.unit_status == _OK) & (status == _OK))
            family = "phase" if view.endswith("phase") else "grid"  # (a grid's amplitudes, counted apart)
            groups += _confirmed_groups(files, name, kd, starts_of, ok, hashes, view, out, f"{label}_{family}")
        occ_unit, occ_class = _joined(groups)
        n = int(occ_class.max()) + 1 if occ_class.size else 0
        occ_unit, occ_class = occ_unit.tolist(), occ_class.tolist()
        # units of a file listed by several recordings belong to each of them: classes of their own
        classed = set(occ_unit)
        for f in files:
            if f.kind == name and len(f.recordings) > 1:
                for u in range(f.start, f.start + f.count):
                    if kd.unit_status[u] == _OK and u not in classed:
                        occ_unit.append(u)
                        occ_class.append(n)
                        n += 1
        kd.occ_unit = np.asarray(occ_unit, dtype=np.int64)
        kd.occ_class = np.asarray(occ_class, dtype=np.int64)
        kd.n_classes = n
    return out


def _confirmed_groups(files: list[_File], name: str, kd: _Kind, starts_of: np.ndarray, ok: np.ndarray,
                      hashes: np.ndarray, view: str, out: dict, label: str) -> list:
    """The groups (≥ 2 units) of the units ``ok`` whose content in ``view`` — their amplitudes (``"amp"``), their
    phases, a hardware record on a grid (:func:`_unit_contents`) — is equal, found among those sharing a hash of
    ``hashes`` and confirmed by comparing the content; counts the candidates and collisions in ``out`` under
    ``label``."""
    order, runs = _runs(hashes[ok])
    found = []
    out[f"{label}_candidates"] += int((runs[:, 1] - runs[:, 0]).sum()) if runs.size else 0
    for chunk in _chunks(runs, kd, ok, order, files, name):
        contents = _unit_contents(files, name, kd, starts_of, [u for a, b in chunk for u in ok[order[a:b]]], view)
        for a, b in chunk:
            units = ok[order[a:b]].tolist()
            anchor = contents[units[0]]
            if anchor is not None and all(contents[u] == anchor for u in units[1:]):
                groups = [units]  # the usual case: every member equals the first
            else:
                groups = _partition(units, contents.__getitem__)
            out[f"{label}_collisions"] += len(groups) - 1
            found.extend(g for g in groups if len(g) > 1)
    return found


def _joined(groups: list) -> tuple[np.ndarray, np.ndarray]:
    """``(units, classes)``: the units of ``groups`` with one class per set of groups linked by a shared unit — a
    record equal to a training record by its amplitudes or by its phases is that record (a copy with its phases
    changed shares the amplitudes, one with its amplitudes scaled the phases), numbered in order of first unit."""
    parent: dict = {}

    def root(u):
        while parent[u] != u:
            parent[u] = parent[parent[u]]
            u = parent[u]
        return u

    for g in groups:
        for u in g:
            parent.setdefault(u, u)
        first = root(g[0])
        for u in g[1:]:
            other = root(u)
            if other != first:
                parent[max(other, first)] = min(other, first)
                first = min(other, first)
    units = sorted(parent)
    number: dict = {}
    classes = [number.setdefault(root(u), len(number)) for u in units]
    return np.asarray(units, dtype=np.int64), np.asarray(classes, dtype=np.int64)


def _chunks(runs: np.ndarray, kd: _Kind, ok: np.ndarray, order: np.ndarray, files: list[_File], name: str):
    """The runs in the order of their members' files, cut into chunks whose members' content (bytes of records,
    or of frames) fits in :data:`CONFIRM_BYTES` (or is one run), so confirming holds about that much at once."""
    if not runs.size:
        return
    first = kd.file_of_unit[ok[order[runs[:, 0]]]]
    second = kd.file_of_unit[ok[order[runs[:, 0] + 1]]]
    per_unit = np.array([max(f.size // max(f.count, 1), 1) for f in files], dtype=np.int64)
    cum = np.concatenate([[0], np.cumsum(per_unit[kd.file_of_unit[ok[order]]])])
    ranked = runs[np.lexsort((second, first))]
    cost = np.cumsum(cum[ranked[:, 1]] - cum[ranked[:, 0]])
    which = (cost - 1) // CONFIRM_BYTES  # chunk of each run: a chunk holds at least one run
    cuts = np.flatnonzero(np.diff(which)) + 1
    for part in np.split(ranked, cuts):
        yield part.tolist()


def _unit_contents(files: list[_File], name: str, kd: _Kind, starts_of: np.ndarray, units: list,
                   view: str = "amp") -> dict:
    """Unit → the content compared: its record's shape and its values' squared magnitudes (bfee), its record's
    shape and canonical values, complex ones as squared magnitudes (logs of other hardware), or its arrays'
    names, shapes and canonical values (frames); in another ``view``, what that view's fingerprint covers (its
    values' directions, phases, ``CSIphase``, a hardware record's feature on a grid); None when it cannot be had
    (the file changed since it was fingerprinted, or no longer parses). Each file is read once."""
    from rfbench.datasets.mmfi import MAX_FRAME_BYTES
    from rfbench.io.files import input_errors, read_input_bytes
    from rfbench.io.intel5300 import record_spans
    from rfbench.io.matv5 import read_mat

    units = np.asarray(units, dtype=np.int64)
    file_of = kd.file_of_unit[units]
    out: dict = {}
    for f in np.unique(file_of).tolist():
        mine = units[file_of == f].tolist()
        path = files[f].path
        if name == BFEE:
            data = read_input_bytes(path)
            spans = record_spans(np.frombuffer(data, dtype=np.uint8))
            for u in mine:
                i = u - int(starts_of[f])
                if i < len(spans):
                    x = int(spans.offsets[i])  # what the fingerprint hashes: the shape and the magnitudes
                    body = data[x:x + int(spans.lengths[i])]
                    out[u] = bfee_phase_content(body) if view == "phase" else bfee_content(body)
                else:
                    out[u] = None
            continue
        if name == HWREC:
            log = read_hardware_log(path)
            records = hardware_records(log, view)[0] if log is not None else []
            shown: dict = {}  # each shape's text once (a log's records mostly share one)
            for u in mine:
                i = u - int(starts_of[f])
                if i < len(records):
                    shape, values = records[i]
                    head = shown.get(shape)
                    if head is None:
                        head = shown[shape] = repr(shape).encode() + b"\x00"
                    out[u] = head + values.tobytes()
                else:
                    out[u] = None
            continue
        with input_errors(path):
            try:
                mat = read_mat(path, max_bytes=MAX_FRAME_BYTES)  # as fingerprinting read it
            except FormatError:
                mat = None
        if view == "phase":
            values, status = frame_phases(mat) if mat is not None else (None, _UNPARSED)
            shapes = (("CSIphase", np.shape(mat["CSIphase"])),) if status == _OK else None
        else:
            values, status, _ = frame_values(mat) if mat is not None else (None, _UNPARSED, None)
            shapes = _frame_shapes(mat) if status == _OK else None
        content = repr(shapes).encode() + b"\x00" + values.tobytes() if status == _OK else None
        for u in mine:
            out[u] = content
    return out


def read_hardware_log(path: str):
    """The :class:`~rfbench.io.hwlog.HardwareLog` of a file that is a log of CSI hardware other than the Intel
    5300 (its format told from its bytes, as ``ingest`` tells it), or None for any other file (told from its
    first bytes, without reading the rest) and for one too large or unreadable as that format."""
    return read_hardware_bytes(path)[0]


def read_hardware_bytes(path: str) -> tuple:
    """``(log, data)``: :func:`read_hardware_log`'s log, and the file's bytes when they were read whole (a file
    whose first bytes are such a log's, not too large), else None."""
    from rfbench.io.files import input_errors, open_input, read_input_bytes
    from rfbench.io.parse_files import DETECT_BYTES, other_hardware_format, read_hardware

    with input_errors(path), open_input(path, path, "a dataset file") as fh:
        fmt = other_hardware_format(fh.read(DETECT_BYTES))
    if fmt is None:
        return None, None
    try:
        with input_errors(path):
            data = read_input_bytes(path)
    except FormatError:  # larger than any input rfbench reads
        return None, None
    try:
        return read_hardware(data, fmt), data
    except FormatError:  # no record
        return None, data


# ----------------------------------------------------------------------------------------------------------
# Memberships: which recordings hold each class; pair counts, within-recording copies, widespread classes
# ----------------------------------------------------------------------------------------------------------


@dataclass
class _Units:
    """Per kind: memberships (class, recording, file, unit index in file) of repeated content, sorted by
    recording (CSR ``rec_ptr``); pair counts of non-widespread classes; copies inside one recording; the
    memberships of widespread classes."""

    m_class: np.ndarray
    m_rec: np.ndarray
    m_file: np.ndarray
    m_unit: np.ndarray
    rec_ptr: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    pair_n: np.ndarray
    self_copies: np.ndarray
    wide_class: np.ndarray
    wide_rec: np.ndarray
    n_wide: int


def _expand(file_of: np.ndarray, files: list[_File]) -> tuple[np.ndarray, np.ndarray]:
    """Row index into ``file_of`` and recording for every (row, recording of its file) pair."""
    n_rec = np.array([len(f.recordings) for f in files], dtype=np.int64)
    reps = n_rec[file_of] if file_of.size else np.zeros(0, np.int64)
    rows = np.repeat(np.arange(file_of.shape[0]), reps)
    ptr = np.concatenate([[0], np.cumsum(n_rec)])
    flat = np.array([r for f in files for r in f.recordings], dtype=np.int64)
    within = np.arange(rows.shape[0]) - np.repeat(np.cumsum(reps) - reps, reps)
    return rows, flat[ptr[file_of[rows]] + within] if rows.size else np.zeros(0, np.int64)


def _units_of(m_class, m_file, m_unit, files, n_recordings: int) -> _Units:
    rows, rec = _expand(m_file, files)
    m_class, m_file, m_unit = m_class[rows], m_file[rows], m_unit[rows]
    order = np.lexsort((m_unit, m_file, m_class, rec))
    m_class, rec, m_file, m_unit = m_class[order], rec[order], m_file[order], m_unit[order]
    rec_ptr = np.searchsorted(rec, np.arange(n_recordings + 1))
    # distinct (class, recording) with multiplicity, sorted by class then recording
    width = np.int64(max(n_recordings, 1))
    key, mult = np.unique(m_class * width + rec, return_counts=True)
    cls, crec = key // width, key % width
    self_copies = np.bincount(crec, weights=mult - 1, minlength=n_recordings).astype(np.int64)
    # recordings per class (uniq is sorted by class)
    c_start = np.flatnonzero(np.concatenate([[True], cls[1:] != cls[:-1]])) if cls.size else np.zeros(0, np.int64)
    c_size = np.diff(np.concatenate([c_start, [cls.shape[0]]])) if cls.size else np.zeros(0, np.int64)
    wide = c_size > WIDESPREAD_RECORDINGS
    pa, pb = [], []
    for k in np.unique(c_size[(c_size >= 2) & ~wide]):
        starts = c_start[c_size == k]
        block = crec[starts[:, None] + np.arange(k)[None, :]]  # (classes, k) recordings, ascending
        for i in range(k):
            for j in range(i + 1, k):
                pa.append(block[:, i])
                pb.append(block[:, j])
    if pa:
        pairs, pair_n = np.unique(np.concatenate(pa) * width + np.concatenate(pb), return_counts=True)
        pair_a, pair_b = pairs // width, pairs % width
    else:
        pair_a = pair_b = pair_n = np.zeros(0, np.int64)
    wide_rows = np.repeat(wide, c_size) if cls.size else np.zeros(0, bool)
    wide_ids = np.cumsum(wide) - 1
    class_index = np.repeat(np.arange(c_start.shape[0]), c_size) if cls.size else np.zeros(0, np.int64)
    return _Units(m_class, rec, m_file, m_unit, rec_ptr, pair_a, pair_b, pair_n.astype(np.int64), self_copies,
                  wide_ids[class_index[wide_rows]] if wide_rows.any() else np.zeros(0, np.int64),
                  crec[wide_rows], int(wide.sum()))


def _memberships(files: list[_File], kinds: dict, n_recordings: int) -> tuple[dict, dict]:
    units = {}
    totals = {}
    # whole files: one class per distinct non-empty content; only those held by ≥ 2 memberships matter
    fc = np.array([f.file_class for f in files], dtype=np.int64)
    held = np.array([len(f.recordings) for f in files], dtype=np.int64)
    n_fc = int(fc.max()) + 1 if fc.size else 0
    holders = np.bincount(fc[fc >= 0], weights=held[fc >= 0], minlength=n_fc)
    repeated = np.flatnonzero((fc >= 0) & (holders[np.maximum(fc, 0)] >= 2)) if n_fc else np.zeros(0, np.int64)
    units["files"] = _units_of(fc[repeated], repeated, np.zeros(repeated.shape[0], np.int64), files, n_recordings)
    n_files = np.zeros(n_recordings, dtype=np.int64)
    for f in files:
        if f.file_class >= 0:
            for r in f.recordings:
                n_files[r] += 1
    totals["files"] = n_files
    starts = np.array([f.start for f in files], dtype=np.int64)
    for label in ("records", "frames"):
        classes, file_of, in_file = [], [], []
        t = np.zeros(n_recordings, dtype=np.int64)
        offset = 0  # class numbers of the kinds of one label kept apart
        for name in (n for n in kinds if UNIT_LABEL[n] == label):
            kd = kinds[name]
            fo = kd.file_of_unit[kd.occ_unit] if kd.occ_unit.size else np.zeros(0, np.int64)
            classes.append(kd.occ_class + offset)
            file_of.append(fo)
            in_file.append(kd.occ_unit - starts[fo] if fo.size else np.zeros(0, np.int64))
            offset += kd.n_classes
            per_file = np.zeros(len(files), dtype=np.int64)
            if kd.unit_status.size:
                good = kd.unit_status == _OK
                per_file = np.bincount(kd.file_of_unit[good], minlength=len(files))
            for k, f in enumerate(files):
                if f.kind == name:
                    for r in f.recordings:
                        t[r] += per_file[k]
        units[label] = _units_of(*(np.concatenate(x).astype(np.int64) for x in (classes, file_of, in_file)), files,
                                 n_recordings)
        totals[label] = t
    return units, totals
