"""Content-level leakage: the same data on both sides of a split under different names (DESIGN.md §6).

The id audit (:mod:`rfbench.protocols.leakage`) checks recordings, windows and domain keys. It cannot see the
same bytes filed under two names: a log copied under another user, a log spliced from two recordings, an MM-Fi
frame duplicated across subjects, a recording re-exported under a new name. This module fingerprints the files
of both sides and finds what they share, whatever the ids say.

What is fingerprinted
---------------------
Every file a recording of the split lists in the manifest (``files: [{path, bytes, ...}]``, relative to the
manifest's ``root``, see :meth:`Manifest.root_dir`):

- **whole files**: the ``sha256`` recorded at ingest in the file entry, or computed from the file when the entry
  has none. Empty (0-byte) files are not fingerprinted (they would all match); they are counted.
- **Intel 5300 records**, for files ending in ``.dat`` (or of ``kind`` ``intel5300``/``bfee``): each valid
  bfee record's body as stored — its 20 header bytes and its CSI payload, before any antenna permutation —
  found by the parser's own framing kernel (:func:`rfbench.io.intel5300.record_spans`), so the records are
  exactly those ``rfbench parse`` returns. The header carries a µs timestamp and a packet counter, so two
  independent captures never store identical bodies; a shared body is a copy.
- **MM-Fi frames**, for file entries of ``kind: "wifi-frame"``: the frame's ``CSIamp`` then ``CSIphase`` arrays
  read through :mod:`rfbench.io.matv5` — the arrays, not the file bytes, so a frame re-saved (compressed,
  another MATLAB version) is still recognised. Values are hashed as little-endian float64 in C order with
  ``-0.0`` written as ``0.0`` and every NaN as the one quiet NaN, so equal arrays hash equally.

Records and frames in which no value is both finite and non-zero (all-zero CSI, all-NaN frames) are **not**
fingerprinted — they would all match one another — and are counted as ``zero`` or ``non_finite``; nor is the
file of such a frame (blank frames written by one program are byte-identical without being copies; a bfee
log keeps its whole-file fingerprint, since its headers hold timestamps). A frame file that cannot be parsed
keeps its whole-file fingerprint and is counted (``unparsed``) and listed.

The hash
--------
XXH64 (xxHash's 64-bit hash, ``doc/xxhash_spec.md`` of the xxHash repository, seed 0), computed by a Numba
kernel over every record of a batch of files at once, on several threads only for batches of at least
:data:`PARALLEL_MIN_BYTES` (:func:`hash_spans`, :func:`bfee_fingerprints`). A
64-bit hash only proposes matches: every match is **confirmed by comparing the bytes** (records, whole files)
or the arrays (frames) before it counts, so a hash collision can never become a leak verdict (collisions are
counted instead). Whole-file digests recorded in the manifest are confirmed the same way.

Verdict
-------
Two recordings on opposite sides **leak** when they share a file (identical bytes, any file) or at least
``min_shared`` records or frames (distinct contents present in both). The default, 1
(:data:`DEFAULT_MIN_SHARED`), is justified in ``docs/content-leakage.md``: a bfee body holds a µs timestamp,
a packet counter and at least 60 noisy 8-bit CSI values, an MM-Fi frame 6,840 float64 values; degenerate ones
are excluded; so one shared record is already a copy, not chance, and one MM-Fi frame is one scored sample.
Shares below the threshold are listed as information. Content shared by two recordings of one side (or twice
inside one recording) is reported under ``within`` — it inflates sample counts and narrows bootstrap
intervals — but is not a leak.

A content class (one file content, record or frame) found in more than :data:`WIDESPREAD_RECORDINGS`
recordings is reported per recording (``widespread``) instead of per pair, so the work stays linear in the
number of records whatever the input; it is a leak when a recording shares ``min_shared`` such classes (or one
such file) with the other side.

Memory: about 17 bytes per record or frame (its hash, status and file), twice that while sorting the hashes,
plus the batch being read (16 MiB of files); candidates are confirmed in chunks of about :data:`CONFIRM_BYTES`
of their content, re-read from the files.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from rfbench._jit import njit, njit_parallel, prange, serial_below
from rfbench.errors import FormatError, ValidationError

__all__ = [
    "DEFAULT_MIN_SHARED",
    "MAX_MIN_SHARED",
    "WIDESPREAD_RECORDINGS",
    "CHECK_CONTENT",
    "xxh64",
    "hash_spans",
    "bfee_fingerprints",
    "frame_values",
    "ContentIndex",
    "ContentAudit",
    "fingerprint",
    "audit_content",
    "audit_split_content",
    "with_content",
    "add_content",
    "document_sides",
    "check_min_shared",
]

#: Default ``min_shared``: one shared record or frame makes a leak (see the module docstring).
DEFAULT_MIN_SHARED = 1
#: Upper bound of ``min_shared`` (any larger value could never be reached by a real recording).
MAX_MIN_SHARED = 1 << 31
#: Content found in more than this many recordings is reported per recording, not per pair.
WIDESPREAD_RECORDINGS = 32
#: Name of the audit check.
CHECK_CONTENT = "content-disjoint"
#: Bytes of files read per batch in the fingerprinting pass.
BATCH_BYTES = 16 << 20
#: Bytes of spans below which the kernels run on one thread. One thread hashes several GB/s, so a batch of
#: files (16 MiB) takes a few milliseconds; on the shared 2-core machine a second thread gained or lost about
#: as much (bench_content.Kernels.track_parallel_speedup: 0.55-1.99x at 16 MiB, 0.60-0.89x at 64 MiB), so only
#: a single log this large is hashed in parallel.
PARALLEL_MIN_BYTES = 64 << 20
#: Frames hashed per kernel call.
BATCH_FRAMES = 512
#: Bytes of candidate content (records or frames sharing a hash) held at once while confirming matches.
CONFIRM_BYTES = 256 << 20
#: Entries kept in each list of the JSON result (totals are always given).
MAX_LISTED = 1000
#: Cross-side pairs given file-by-file evidence.
MAX_EVIDENCE = 100

BFEE, FRAME, WHOLE = "bfee", "frame", "whole"
_KINDS = ("files", "records", "frames")
_OK, _ZERO, _NON_FINITE, _UNPARSED = 0, 1, 2, 3
_BODY_HEADER = 20

# ----------------------------------------------------------------------------------------------------------
# XXH64 kernels (private; validate nothing, no I/O)
# ----------------------------------------------------------------------------------------------------------

_P1 = np.uint64(0x9E3779B185EBCA87)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_P4 = np.uint64(0x85EBCA77C2B2AE63)
_P5 = np.uint64(0x27D4EB2F165667C5)
_U8 = np.uint64(8)


@njit(inline="always")
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(inline="always")
def _u64_at(b, p):
    """Little-endian 64-bit word of ``b`` at unsigned index ``p`` (LLVM folds it into one load)."""
    return (np.uint64(b[p]) | (np.uint64(b[p + np.uint64(1)]) << np.uint64(8))
            | (np.uint64(b[p + np.uint64(2)]) << np.uint64(16)) | (np.uint64(b[p + np.uint64(3)]) << np.uint64(24))
            | (np.uint64(b[p + np.uint64(4)]) << np.uint64(32)) | (np.uint64(b[p + np.uint64(5)]) << np.uint64(40))
            | (np.uint64(b[p + np.uint64(6)]) << np.uint64(48)) | (np.uint64(b[p + np.uint64(7)]) << np.uint64(56)))


@njit(inline="always")
def _u32_at(b, p):
    return (np.uint64(b[p]) | (np.uint64(b[p + np.uint64(1)]) << np.uint64(8))
            | (np.uint64(b[p + np.uint64(2)]) << np.uint64(16)) | (np.uint64(b[p + np.uint64(3)]) << np.uint64(24)))


@njit(inline="always")
def _round(acc, lane):
    acc = acc + lane * _P2
    acc = _rotl(acc, 31)
    return acc * _P1


@njit(inline="always")
def _merge(acc, v):
    acc = acc ^ _round(np.uint64(0), v)
    return acc * _P1 + _P4


@njit
def _xxh64(b, start, length, seed):
    """XXH64 of ``b[start:start + length]`` (``b`` a uint8 array) with ``seed``, as xxhash_spec.md defines it:
    four accumulators over 32-byte stripes, then 8-, 4- and 1-byte tails, then the avalanche. All arithmetic is
    modulo 2**64 (uint64 wraps in Numba, as in C)."""
    p = np.uint64(start)
    n = np.uint64(length)
    end = p + n
    if n >= np.uint64(32):
        limit = end - np.uint64(32)
        v1 = seed + _P1 + _P2
        v2 = seed + _P2
        v3 = seed
        v4 = seed - _P1
        while p <= limit:
            v1 = _round(v1, _u64_at(b, p))
            v2 = _round(v2, _u64_at(b, p + np.uint64(8)))
            v3 = _round(v3, _u64_at(b, p + np.uint64(16)))
            v4 = _round(v4, _u64_at(b, p + np.uint64(24)))
            p += np.uint64(32)
        h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        h = _merge(h, v1)
        h = _merge(h, v2)
        h = _merge(h, v3)
        h = _merge(h, v4)
    else:
        h = seed + _P5
    h = h + n
    while p + _U8 <= end:
        h = h ^ _round(np.uint64(0), _u64_at(b, p))
        h = _rotl(h, 27) * _P1 + _P4
        p += _U8
    if p + np.uint64(4) <= end:
        h = h ^ (_u32_at(b, p) * _P1)
        h = _rotl(h, 23) * _P2 + _P3
        p += np.uint64(4)
    while p < end:
        h = h ^ (np.uint64(b[p]) * _P5)
        h = _rotl(h, 11) * _P1
        p += np.uint64(1)
    h = h ^ (h >> np.uint64(33))
    h = h * _P2
    h = h ^ (h >> np.uint64(29))
    h = h * _P3
    h = h ^ (h >> np.uint64(32))
    return h


@njit_parallel
def _hash_spans(b, offsets, lengths, seed, out):
    """``out[i] = XXH64(b[offsets[i]:offsets[i] + lengths[i]], seed)``; records are independent, so each thread
    writes its own entries."""
    for i in prange(offsets.shape[0]):
        out[i] = _xxh64(b, offsets[i], lengths[i], seed)


@njit_parallel
def _fingerprint_bfee(b, offsets, lengths, shape, masks, seed, out, blank):
    """For each bfee record body ``b[offsets[i]:offsets[i] + lengths[i]]`` (20 header bytes, then the payload):
    ``blank[i] = 1`` when every CSI value is zero — no payload bit under the value mask ``masks[shape[i]]`` (the
    bits of the record's Nrx×Ntx values, without the 3 unused bits before each subcarrier group) is set — and
    ``out[i] = 0``; otherwise ``blank[i] = 0`` and ``out[i]`` = XXH64 of the whole body with ``seed``."""
    for i in prange(offsets.shape[0]):
        payload = offsets[i] + _BODY_HEADER
        m = shape[i]
        zero = True
        for k in range(lengths[i] - _BODY_HEADER):
            if b[payload + k] & masks[m, k]:
                zero = False
                break
        if zero:
            blank[i] = 1
            out[i] = 0
        else:
            blank[i] = 0
            out[i] = _xxh64(b, offsets[i], lengths[i], seed)


# ----------------------------------------------------------------------------------------------------------
# Public wrappers (validate, allocate, call)
# ----------------------------------------------------------------------------------------------------------


def _as_bytes_array(data) -> np.ndarray:
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8 or data.ndim != 1:
            raise ValidationError("data must be bytes or a 1-D uint8 array")
        return np.ascontiguousarray(data)
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(data, dtype=np.uint8)
    raise TypeError(f"expected bytes or a uint8 array, not {type(data).__name__}")


def _check_seed(seed: int) -> np.uint64:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 1 << 64:
        raise ValidationError("seed must be an integer in 0..2**64-1")
    return np.uint64(int(seed))


def xxh64(data, seed: int = 0) -> int:
    """XXH64 of ``data`` (bytes or a 1-D uint8 array) as a Python int; the one-span case of :func:`hash_spans`."""
    buf = _as_bytes_array(data)
    return int(hash_spans(buf, [0], [buf.shape[0]], seed)[0])


def hash_spans(buf, offsets, lengths, seed: int = 0) -> np.ndarray:
    """XXH64 of each span ``buf[offsets[i]:offsets[i] + lengths[i]]``, in parallel over spans.

    Parameters
    ----------
    buf : bytes or 1-D uint8 ndarray
    offsets, lengths : array-like of int
        One span each; every span must lie inside ``buf``.
    seed : int
        XXH64 seed (0..2**64-1).

    Returns
    -------
    ndarray of uint64
    """
    b = _as_bytes_array(buf)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if offsets.ndim != 1 or offsets.shape != lengths.shape:
        raise ValidationError("offsets and lengths must be 1-D arrays of one length")
    if offsets.size and (offsets.min() < 0 or lengths.min() < 0 or (offsets + lengths).max() > b.shape[0]):
        raise ValidationError("every span must lie inside the buffer")
    s = _check_seed(seed)
    out = np.empty(offsets.shape[0], dtype=np.uint64)
    # (errstate: without the JIT, NumPy scalars warn on the wrap-around the hash relies on)
    with serial_below(int(lengths.sum()), PARALLEL_MIN_BYTES), np.errstate(over="ignore"):
        _hash_spans(b, offsets, lengths, s, out)
    return out


_MASKS: list = []


def _value_masks() -> np.ndarray:
    """``masks[(nrx-1)*3 + ntx-1]``: payload bytes with the bits of CSI values set (read_bfee.c's layout: per
    subcarrier group 3 unused bits, then 16 bits per value pair)."""
    if not _MASKS:
        from rfbench.io.intel5300 import calc_len

        masks = np.zeros((9, calc_len(3, 3)), dtype=np.uint8)
        for nrx in (1, 2, 3):
            for ntx in (1, 2, 3):
                nn = nrx * ntx
                step = 3 + 16 * nn
                length = calc_len(nrx, ntx)
                bits = np.zeros(length * 8, dtype=bool)
                for sc in range(30):
                    bits[3 + sc * step: 3 + sc * step + 16 * nn] = True
                masks[(nrx - 1) * 3 + ntx - 1, :length] = np.packbits(bits, bitorder="little")
        _MASKS.append(masks)
    return _MASKS[0]


@dataclass(frozen=True)
class BfeeFingerprints:
    """Fingerprints of a log's valid bfee records (file order): ``hashes`` (uint64, 0 where blank), ``blank``
    (True where every CSI value is zero: not fingerprinted) and the records' ``offsets``/``lengths``."""

    hashes: np.ndarray
    blank: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray

    def __len__(self) -> int:
        return int(self.hashes.shape[0])


def _bfee_batch(buf: np.ndarray, bounds: Sequence[int]) -> tuple[list, np.ndarray, np.ndarray]:
    """Frame every file ``buf[bounds[f]:bounds[f+1]]`` with the parser's framing kernel and fingerprint all
    their records in one kernel call. Returns the per-file spans, the hashes and the blank flags (uint8)."""
    from rfbench.io.intel5300 import record_spans

    spans = [record_spans(buf[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    if spans:
        offsets = np.concatenate([s.offsets + a for s, a in zip(spans, bounds[:-1])])
        lengths = np.concatenate([s.lengths for s in spans])
        shape = np.concatenate([(s.nrx.astype(np.int64) - 1) * 3 + (s.ntx.astype(np.int64) - 1) for s in spans])
    else:
        offsets = lengths = shape = np.zeros(0, dtype=np.int64)
    hashes = np.empty(offsets.shape[0], dtype=np.uint64)
    blank = np.empty(offsets.shape[0], dtype=np.uint8)
    with serial_below(int(lengths.sum()), PARALLEL_MIN_BYTES), np.errstate(over="ignore"):
        _fingerprint_bfee(buf, offsets, lengths, shape, _value_masks(), np.uint64(0), hashes, blank)
    return spans, hashes, blank


def bfee_fingerprints(source) -> BfeeFingerprints:
    """Fingerprint every valid bfee record of a log (a path, bytes or a 1-D uint8 array).

    Each record's body as stored (20 header bytes and the CSI payload, before any antenna permutation) is hashed
    with XXH64; records whose CSI values are all zero are flagged ``blank`` and get hash 0.

    Raises
    ------
    FormatError
        The path is missing, a directory, or unreadable.
    """
    from rfbench.io.files import read_input_bytes

    if isinstance(source, (str, os.PathLike)):
        source = read_input_bytes(source)
    buf = _as_bytes_array(source)
    spans, hashes, blank = _bfee_batch(buf, [0, buf.shape[0]])
    return BfeeFingerprints(hashes, blank.astype(bool), spans[0].offsets, spans[0].lengths)


def _canonical(arr: np.ndarray) -> np.ndarray:
    """float64 values in C order, ``-0.0`` as ``0.0``, every NaN as the one quiet NaN (complex: real, imag)."""
    a = np.asarray(arr)
    if np.iscomplexobj(a):
        a = np.ascontiguousarray(a, dtype=np.complex128).view(np.float64)
    x = np.array(a, dtype="<f8", order="C").reshape(-1)
    x += 0.0  # -0.0 + 0.0 == +0.0
    x[np.isnan(x)] = np.nan
    return x


def frame_values(mat: Mapping[str, np.ndarray]) -> tuple[np.ndarray | None, int, str | None]:
    """The values of an MM-Fi frame that are hashed: ``CSIamp`` then ``CSIphase`` (when present), canonical
    float64 (see :func:`_canonical`), with the frame's status: ``0`` fingerprinted, ``1`` all zero, ``2`` no
    finite non-zero value (all NaN/inf, or zeros and NaN/inf), ``3`` not a frame (the reason is returned).

    Returns
    -------
    (values or None, status, reason or None)
    """
    if "CSIamp" not in mat:
        found = ", ".join(sorted(mat)) or "no numeric variable"
        return None, _UNPARSED, f"no CSIamp variable (found: {found})"
    parts = [_canonical(mat["CSIamp"])]
    if "CSIphase" in mat:
        parts.append(_canonical(mat["CSIphase"]))
    values = np.concatenate(parts) if len(parts) > 1 else parts[0]
    finite = np.isfinite(values)
    if not np.any(finite & (values != 0)):
        return values, (_ZERO if finite.all() else _NON_FINITE), None
    return values, _OK, None


def _frame_shapes(mat: Mapping[str, np.ndarray]) -> tuple:
    return tuple((k, np.shape(mat[k]), np.iscomplexobj(mat[k])) for k in ("CSIamp", "CSIphase") if k in mat)


# ----------------------------------------------------------------------------------------------------------
# The fingerprint pass over a manifest
# ----------------------------------------------------------------------------------------------------------


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


def _file_kind(entry: Mapping) -> str:
    kind = entry.get("kind")
    if kind == "wifi-frame":
        return FRAME
    if kind in ("intel5300", "bfee"):
        return BFEE
    if kind is None and str(entry["path"]).lower().endswith(".dat"):
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


def _same_file_bytes(a: str, b: str, chunk: int = 1 << 20) -> bool:
    from rfbench.io.files import input_errors

    with input_errors(a), input_errors(b), open(a, "rb") as fa, open(b, "rb") as fb:
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
    # filled by _finish
    unit_hash: np.ndarray | None = None
    unit_status: np.ndarray | None = None
    file_of_unit: np.ndarray | None = None
    occ_unit: np.ndarray | None = None  # units in multi-membership classes
    occ_class: np.ndarray | None = None
    n_classes: int = 0

    def finish(self, files: list[_File], kind: str) -> None:
        """Concatenate the per-batch arrays; map every unit to its file (units are stored in file order)."""
        self.unit_hash = np.concatenate(self.hashes) if self.hashes else np.zeros(0, np.uint64)
        self.unit_status = np.concatenate(self.status) if self.status else np.zeros(0, np.uint8)
        self.hashes, self.status = [], []
        ids = np.array([k for k, f in enumerate(files) if f.kind == kind], dtype=np.int64)
        counts = np.array([files[k].count for k in ids], dtype=np.int64)
        self.file_of_unit = np.repeat(ids, counts)
        if self.file_of_unit.shape[0] != self.unit_hash.shape[0]:  # pragma: no cover - an internal invariant
            raise AssertionError("units and files disagree")


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
    for k, rec in enumerate(recs):
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
                    files.append(_File(entry["path"], path, _file_kind(entry), [], digest, size=st.st_size,
                                       recorded=digest is not None))
                by_path[path] = f
            if k not in files[f].recordings:
                files[f].recordings.append(k)
    if on_total is not None:
        on_total(len(files))
    advance = progress or (lambda n=1: None)

    kinds = {BFEE: _Kind(), FRAME: _Kind()}
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
    from rfbench.io.files import input_errors, sha256_file
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
        with input_errors(info.path), open(info.path, "rb", buffering=0) as fh:
            while got < info.size:
                n = fh.readinto(view[got:])
                if not n:
                    break
                got += n
        return got

    pending_frames: list[tuple[int, np.ndarray]] = []

    def flush_frames():
        nonlocal pending_frames
        if not pending_frames:
            return
        values = [v for _, v in pending_frames]
        lengths = np.array([v.nbytes for v in values], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        buf = np.concatenate(values).view(np.uint8)
        hashes = hash_spans(buf, offsets, lengths)
        for (f, _), h in zip(pending_frames, hashes):
            frame.hashes[f] = np.array([h], dtype=np.uint64)
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
            else:
                counts["whole_file_only"] += 1
                if info.digest is None:
                    with input_errors(info.path):
                        info.digest = sha256_file(info.path)[0]
                    counts["digests_computed"] += 1
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
                mat = read_mat(info.path)
            except FormatError as exc:
                mat = exc
        info.start, info.count = n_frame, 1
        slot = len(frame.hashes)
        n_frame += 1
        if isinstance(mat, FormatError):
            status, values, reason = _UNPARSED, None, str(mat).split(": ", 1)[-1]
        else:
            values, status, reason = frame_values(mat)
        frame.status.append(np.array([status], dtype=np.uint8))
        frame.hashes.append(np.zeros(1, dtype=np.uint64))
        if status == _UNPARSED:
            counts["unparsed_frames"] += 1
            if len(problems) < MAX_LISTED:
                problems.append({"path": info.rel, "reason": f"frame not fingerprinted: {reason}"})
        elif status in (_ZERO, _NON_FINITE):
            counts["blank"]["frames_zero" if status == _ZERO else "frames_non_finite"] += 1
            info.digest = None  # nor the file: blank frames saved by one program are byte-identical anyway
        else:
            counts["frames"] += 1
            pending_frames.append((slot, values))
            if len(pending_frames) >= BATCH_FRAMES:
                flush_frames()
        advance(1)
    flush()
    flush_frames()


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
           "record_collisions": 0, "frame_candidates": 0, "frame_collisions": 0}
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
        label = "record" if name == BFEE else "frame"
        ok = np.flatnonzero(kd.unit_status == _OK)
        order, runs = _runs(kd.unit_hash[ok])
        occ_unit, occ_class = [], []
        n = 0
        out[f"{label}_candidates"] = int((runs[:, 1] - runs[:, 0]).sum()) if runs.size else 0
        for chunk in _chunks(runs, kd, ok, order, files, name):
            contents = _unit_contents(files, name, kd, starts_of, [u for a, b in chunk for u in ok[order[a:b]]])
            for a, b in chunk:
                units = ok[order[a:b]].tolist()
                anchor = contents[units[0]]
                if anchor is not None and all(contents[u] == anchor for u in units[1:]):
                    groups = [units]  # the usual case: every member equals the first
                else:
                    groups = _partition(units, contents.__getitem__)
                out[f"{label}_collisions"] += len(groups) - 1
                for g in groups:
                    if len(g) > 1:
                        occ_unit.extend(g)
                        occ_class.extend([n] * len(g))
                        n += 1
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


def _unit_contents(files: list[_File], name: str, kd: _Kind, starts_of: np.ndarray, units: list) -> dict:
    """Unit → the content compared: its record's bytes as stored (bfee), or its arrays' names, shapes and
    canonical values (frames); None when it cannot be had (the file changed since it was fingerprinted, or a
    frame no longer parses). Each file is read once."""
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
                    x = int(spans.offsets[i])
                    out[u] = data[x:x + int(spans.lengths[i])]
                else:
                    out[u] = None
            continue
        with input_errors(path):
            try:
                mat = read_mat(path)
            except FormatError:
                mat = None
        values, status, _ = frame_values(mat) if mat is not None else (None, _UNPARSED, None)
        content = repr(_frame_shapes(mat)).encode() + b"\x00" + values.tobytes() if status == _OK else None
        for u in mine:
            out[u] = content
    return out


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
    for name, label in ((BFEE, "records"), (FRAME, "frames")):
        kd = kinds[name]
        fo = kd.file_of_unit[kd.occ_unit] if kd.occ_unit.size else np.zeros(0, np.int64)
        starts = np.array([f.start for f in files], dtype=np.int64)
        unit_in_file = kd.occ_unit - starts[fo] if fo.size else np.zeros(0, np.int64)
        units[label] = _units_of(kd.occ_class, fo, unit_in_file, files, n_recordings)
        per_file = np.zeros(len(files), dtype=np.int64)
        if kd.unit_status.size:
            good = kd.unit_status == _OK
            per_file = np.bincount(kd.file_of_unit[good], minlength=len(files))
        t = np.zeros(n_recordings, dtype=np.int64)
        for k, f in enumerate(files):
            if f.kind == name:
                for r in f.recordings:
                    t[r] += per_file[k]
        totals[label] = t
    return units, totals


# ----------------------------------------------------------------------------------------------------------
# Judging one assignment
# ----------------------------------------------------------------------------------------------------------


@dataclass
class ContentAudit:
    """What the content check found for one split (see :meth:`to_dict` for the JSON form).

    ``leaks`` are recording pairs on opposite sides sharing a file or ≥ ``min_shared`` records/frames (and
    recordings sharing that much widespread content); ``within`` lists content repeated inside one side.
    """

    passed: bool
    min_shared: int
    leaks: list
    widespread: list
    below_threshold: list
    within: dict
    counts: dict
    confirmations: dict
    problems: list
    totals: dict = field(default_factory=dict)

    def check(self) -> dict:
        """The audit check ``{name: "content-disjoint", passed, detail}``."""
        return {"name": CHECK_CONTENT, "passed": self.passed, "detail": self.detail()}

    def detail(self) -> str:
        c = self.counts
        scope = (f"{c['files']} file(s), {c['records']} record(s), {c['frames']} frame(s) fingerprinted; "
                 f"leak at {self.min_shared} shared record(s)/frame(s) or 1 shared file")
        within = self.within
        items = []
        for side in ("train", "test"):
            items += [f"{side} {x['a']} and {x['b']} share {_amount(x)}" for x in within[side]]
            items += [f"{side} {x['recording']} repeats {_amount(x)}" for x in within[f"{side}_repeated"]]
        n_within = sum(within[f"{s}_pairs"] + within[f"{s}_recordings"] for s in ("train", "test"))
        dup = ("; within one side (not a leak, but repeated samples): " + "; ".join(items[:3])
               + (f"; … ({n_within} in all)" if n_within > 3 else "")) if n_within else ""
        if self.passed:
            return f"no content shared across sides ({scope}){dup}"
        parts = [_leak_phrase(x) for x in self.leaks[:4]]
        parts += [_wide_phrase(w) for w in self.widespread[:max(0, 4 - len(parts))]]
        more = len(self.leaks) + len(self.widespread) - len(parts)
        text = "; ".join(parts) + (f"; … ({len(self.leaks) + len(self.widespread)} in all)" if more > 0 else "")
        return f"content shared across sides: {text} ({scope}){dup}"

    def to_dict(self) -> dict:
        """The JSON form stored as ``audit.content`` of a split file."""
        return {
            "passed": self.passed,
            "min_shared": self.min_shared,
            "widespread_limit": WIDESPREAD_RECORDINGS,
            "hash": "xxh64 (records: bfee body as stored; frames: canonical float64 CSIamp, CSIphase); "
                    "files: sha256; every match confirmed by comparing bytes or arrays",
            "counts": self.counts,
            "confirmations": self.confirmations,
            "leak_count": self.totals.get("leaks", len(self.leaks)),
            "leaks": self.leaks,
            "widespread": self.widespread,
            "below_threshold": self.below_threshold,
            "within": self.within,
            "problems": self.problems,
        }


def _amount(x: Mapping) -> str:
    bits = []
    for key, unit in (("files", "file"), ("records", "record"), ("frames", "frame")):
        if x.get(key):
            bits.append(f"{x[key]} {unit}(s)")
    return ", ".join(bits) or "nothing"


def _leak_phrase(x: Mapping) -> str:
    return f"train {x['train']} and test {x['test']} share {_amount(x)}"


def _wide_phrase(w: Mapping) -> str:
    return (f"{w['side']} {w['recording']} shares {_amount(w)} each found in more than {WIDESPREAD_RECORDINGS} "
            f"recordings, {w['other_side_recordings']} of them on the other side")


def _pair_table(index: ContentIndex) -> tuple[np.ndarray, dict]:
    """All recording pairs (a < b) sharing any content, as an (n, 2) array, with their counts per kind."""
    width = np.int64(max(len(index.ids), 1))
    keys = {name: index._units[name].pair_a * width + index._units[name].pair_b for name in _KINDS}
    pairs = np.unique(np.concatenate(list(keys.values())))
    counts = {}
    for name in _KINDS:
        c = np.zeros(pairs.shape[0], dtype=np.int64)
        c[np.searchsorted(pairs, keys[name])] = index._units[name].pair_n  # keys are unique within a kind
        counts[name] = c
    return np.stack([pairs // width, pairs % width], axis=1), counts


def _evidence(index: ContentIndex, a: int, b: int) -> list[dict]:
    """For recordings a and b: per kind, which file of a holds content also in which file of b, how much, and
    the first such unit in each (record index within the file, in file order)."""
    out = []
    for name in _KINDS:
        u = index._units[name]
        sa = slice(u.rec_ptr[a], u.rec_ptr[a + 1])
        sb = slice(u.rec_ptr[b], u.rec_ptr[b + 1])
        ca, cb = u.m_class[sa], u.m_class[sb]
        common = np.intersect1d(ca, cb)
        if not common.size:
            continue
        # first membership of each common class on each side (rows are sorted by class, file, unit)
        ia = np.flatnonzero(np.isin(ca, common))
        ib = np.flatnonzero(np.isin(cb, common))
        ia = ia[np.concatenate([[True], ca[ia][1:] != ca[ia][:-1]])]
        ib = ib[np.concatenate([[True], cb[ib][1:] != cb[ib][:-1]])]
        fa, ua = u.m_file[sa][ia], u.m_unit[sa][ia]
        fb, ub = u.m_file[sb][ib], u.m_unit[sb][ib]
        width = np.int64(max(len(index.files), 1))
        pairs, inv, n = np.unique(fa * width + fb, return_inverse=True, return_counts=True)
        inv = inv.reshape(-1)
        for p, (x, y) in enumerate(zip((pairs // width).tolist(), (pairs % width).tolist())):
            rows = np.flatnonzero(inv == p)
            entry = {"kind": name, "a": index.files[x].rel, "b": index.files[y].rel, "count": int(n[p])}
            if name != "files":
                entry["first"] = [int(ua[rows].min()), int(ub[rows].min())]
            out.append(entry)
        if len(out) >= 20:
            break
    return out[:20]


def _judge(index: ContentIndex, in_train: np.ndarray, in_test: np.ndarray, min_shared: int) -> ContentAudit:
    pairs, counts = _pair_table(index)
    a, b = pairs[:, 0], pairs[:, 1]
    ab = in_train[a] & in_test[b]
    ba = in_test[a] & in_train[b] & ~ab
    cross = ab | ba
    train_rec = np.where(ab, a, b)
    test_rec = np.where(ab, b, a)
    leak = cross & ((counts["files"] >= 1) | (counts["records"] >= min_shared) | (counts["frames"] >= min_shared))
    below = cross & ~leak
    ids = index.ids
    tot = index._totals

    def pair_entry(k: int, first: str, second: str, ra: int, rb: int) -> dict:
        e = {first: ids[ra], second: ids[rb]}
        for name in _KINDS:
            e[name] = int(counts[name][k])
        for name in ("files", "records", "frames"):
            if tot[name][ra] or tot[name][rb]:
                e[f"{first}_{name}"] = int(tot[name][ra])
                e[f"{second}_{name}"] = int(tot[name][rb])
        return e

    def order(sel: np.ndarray) -> np.ndarray:
        k = np.flatnonzero(sel)
        weight = counts["files"][k] * (1 << 40) + counts["records"][k] + counts["frames"][k]
        names = [(ids[train_rec[i]], ids[test_rec[i]]) for i in k]
        return k[sorted(range(k.size), key=lambda j: (-int(weight[j]), names[j]))]

    leaks = []
    for n, k in enumerate(order(leak)[:MAX_LISTED]):
        e = pair_entry(k, "train", "test", int(train_rec[k]), int(test_rec[k]))
        if n < MAX_EVIDENCE:
            ra, rb = int(train_rec[k]), int(test_rec[k])
            ev = _evidence(index, min(ra, rb), max(ra, rb))
            if ra > rb:
                ev = [{**x, "a": x["b"], "b": x["a"], **({"first": x["first"][::-1]} if "first" in x else {})}
                      for x in ev]
            e["evidence"] = [{"kind": x["kind"], "train_file": x["a"], "test_file": x["b"], "count": x["count"],
                              **({"first": x["first"]} if "first" in x else {})} for x in ev]
        leaks.append(e)
    below_list = [pair_entry(k, "train", "test", int(train_rec[k]), int(test_rec[k]))
                  for k in order(below)[:MAX_LISTED]]

    within: dict[str, Any] = {}
    for side, mask in (("train", in_train), ("test", in_test)):
        sel = mask[a] & mask[b]
        k = np.flatnonzero(sel)
        rows = sorted(k.tolist(), key=lambda i: (ids[a[i]], ids[b[i]]))
        within[f"{side}_pairs"] = int(k.size)
        within[side] = [pair_entry(i, "a", "b", int(a[i]), int(b[i])) for i in rows[:MAX_LISTED]]
        copies = {name: index._units[name].self_copies for name in _KINDS}
        recs = np.flatnonzero(mask & ((copies["files"] + copies["records"] + copies["frames"]) > 0))
        within[f"{side}_recordings"] = int(recs.size)
        within[f"{side}_repeated"] = [{"recording": ids[r], **{n: int(copies[n][r]) for n in _KINDS}}
                                      for r in recs[:MAX_LISTED]]

    widespread = _widespread(index, in_train, in_test, min_shared)
    passed = not leak.any() and not any(w["leak"] for w in widespread)
    return ContentAudit(passed=passed, min_shared=min_shared, leaks=leaks,
                        widespread=[w for w in widespread][:MAX_LISTED], below_threshold=below_list,
                        within=within, counts=index.counts, confirmations=index.confirmations,
                        problems=index.problems, totals={"leaks": int(leak.sum())})


def _widespread(index: ContentIndex, in_train: np.ndarray, in_test: np.ndarray, min_shared: int) -> list[dict]:
    """Recordings sharing widespread classes with the other side: per recording and kind, how many."""
    n = len(index.ids)
    found: dict[tuple[str, int], dict] = {}
    for name in _KINDS:
        u = index._units[name]
        if not u.n_wide:
            continue
        has_train = np.bincount(u.wide_class[in_train[u.wide_rec]], minlength=u.n_wide) > 0
        has_test = np.bincount(u.wide_class[in_test[u.wide_rec]], minlength=u.n_wide) > 0
        n_train = np.bincount(u.wide_class[in_train[u.wide_rec]], minlength=u.n_wide)
        n_test = np.bincount(u.wide_class[in_test[u.wide_rec]], minlength=u.n_wide)
        for side, mine, other, n_other in (("train", in_train, has_test, n_test), ("test", in_test, has_train,
                                                                                     n_train)):
            sel = mine[u.wide_rec] & other[u.wide_class]
            per_rec = np.bincount(u.wide_rec[sel], minlength=n)
            most_other = np.zeros(n, dtype=np.int64)
            np.maximum.at(most_other, u.wide_rec[sel], n_other[u.wide_class[sel]])
            for r in np.flatnonzero(per_rec):
                e = found.setdefault((side, int(r)), {"side": side, "recording": index.ids[r], "files": 0,
                                                      "records": 0, "frames": 0, "other_side_recordings": 0})
                e[name] = int(per_rec[r])
                e["other_side_recordings"] = max(e["other_side_recordings"], int(most_other[r]))
    out = []
    for (_side, _r), e in sorted(found.items(), key=lambda kv: (kv[0][0], index.ids[kv[0][1]])):
        e["leak"] = bool(e["files"] >= 1 or e["records"] >= min_shared or e["frames"] >= min_shared)
        out.append(e)
    return out


# ----------------------------------------------------------------------------------------------------------
# Split documents
# ----------------------------------------------------------------------------------------------------------


def document_sides(doc: Mapping) -> tuple[list[str], list[str]]:
    """The recording ids of a split document's ``train`` and ``test`` sides (window entries ``{id, start,
    stop}`` count as their recording), each in first-seen order."""
    out = []
    for key in ("train", "test"):
        seen: dict[str, None] = {}
        for entry in doc.get(key) or []:
            rid = entry if isinstance(entry, str) else entry.get("id") if isinstance(entry, Mapping) else None
            if isinstance(rid, str):
                seen.setdefault(rid)
        out.append(list(seen))
    return out[0], out[1]


def _split_sides(split_file, manifest_path) -> tuple[Any, list[str], list[str]]:
    from rfbench.datasets.manifest import read_manifest
    from rfbench.io.files import read_json

    train, test = document_sides(read_json(split_file))
    return read_manifest(manifest_path), train, test


def audit_split_content(split_file: str | os.PathLike, manifest_path: str | os.PathLike, *,
                        min_shared: int = DEFAULT_MIN_SHARED,
                        progress: Callable[[int], None] | None = None,
                        on_total: Callable[[int], None] | None = None) -> ContentAudit:
    """:func:`audit_content` of a split file's two sides (an rfbench split or a plain ``{"train", "test"}``
    document; windows count as their recording) against the manifest at ``manifest_path``."""
    m, train, test = _split_sides(split_file, manifest_path)
    return audit_content(m, train, test, manifest_path=manifest_path, min_shared=min_shared, progress=progress,
                         on_total=on_total)


def audit_content(manifest, train: Iterable[str], test: Iterable[str], *,
                  manifest_path: str | os.PathLike | None = None, min_shared: int = DEFAULT_MIN_SHARED,
                  progress: Callable[[int], None] | None = None,
                  on_total: Callable[[int], None] | None = None) -> ContentAudit:
    """Fingerprint the recordings of both sides and judge them (:func:`fingerprint`, then
    :meth:`ContentIndex.audit`)."""
    min_shared = check_min_shared(min_shared)
    train, test = list(train), list(test)
    index = fingerprint(manifest, manifest_path, recordings=set(train) | set(test), progress=progress,
                        on_total=on_total)
    return index.audit(train, test, min_shared)


def with_content(result, content: ContentAudit):
    """The id audit ``result`` (:class:`~rfbench.protocols.leakage.AuditResult`) with the content check added:
    it passes only if both do."""
    from rfbench.protocols.leakage import AuditResult

    checks = [c for c in result.checks if c.get("name") != CHECK_CONTENT] + [content.check()]
    return AuditResult(passed=all(c["passed"] for c in checks), checks=checks, shared=list(result.shared))


def add_content(outcomes, manifest, *, manifest_path: str | os.PathLike | None = None,
                min_shared: int = DEFAULT_MIN_SHARED, progress: Callable[[int], None] | None = None,
                on_total: Callable[[int], None] | None = None) -> ContentIndex:
    """Add the content check to splits made by :func:`rfbench.protocols.split.make_splits`: the recordings they
    assign are fingerprinted once, each split judged; every outcome's ``audit`` gains the ``content-disjoint``
    check and its document's ``audit`` the ``content`` findings. Returns the fingerprints."""
    min_shared = check_min_shared(min_shared)
    ids = {rid for o in outcomes for side in ("train", "test") for rid in o.document[side]}
    index = fingerprint(manifest, manifest_path, recordings=ids, progress=progress, on_total=on_total)
    for o in outcomes:
        found = index.audit(o.document["train"], o.document["test"], min_shared)
        o.audit = with_content(o.audit, found)
        o.document["audit"] = {**o.audit.to_dict(), "content": found.to_dict()}
    return index
