"""Content fingerprints: XXH64 (xxHash's 64-bit hash, ``doc/xxhash_spec.md`` of the xxHash repository) as
Numba kernels over many spans of a buffer at once (:func:`hash_spans`), the CSI magnitudes of every valid Intel
5300 bfee record of a log (:func:`bfee_fingerprints`, :func:`bfee_content`), and the canonical values of an MM-Fi frame
(:func:`frame_values`). What they are used for, and why a fingerprint only proposes a match, is in
:mod:`rfbench.protocols.content`."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from rfbench._jit import njit, njit_parallel, prange, serial_below
from rfbench.datasets.bvp_mat import BVP_VARIABLE
from rfbench.errors import ValidationError
from rfbench.io.intel5300 import _perm_policy

#: Bytes of spans below which the kernels run on one thread. One thread hashes several GB/s, so a batch of
#: files (16 MiB) takes a few milliseconds; on the shared 2-core machine a second thread gained or lost about
#: as much (bench_content.Kernels.track_parallel_speedup: 0.55-1.99x at 16 MiB, 0.60-0.89x at 64 MiB), so only
#: a single log this large is hashed in parallel.
PARALLEL_MIN_BYTES = 64 << 20

# The status of a record or frame: fingerprinted, all-zero, no finite value, unparsable.
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
    """XXH64 of ``b[start:start + length]`` as xxhash_spec.md defines it: four accumulators over 32-byte
    stripes, then 8-, 4- and 1-byte tails, then the avalanche; all arithmetic modulo 2**64 (uint64 wraps in
    Numba, as in C)."""
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


_U1, _U2, _U3, _U7, _U16 = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(7), np.uint64(16)
_BYTE, _SIGN = np.uint64(0xFF), np.uint64(0x80)


@njit(inline="always")
def _bfee_magnitudes(b, body, out):
    """``out[:30 * Nrx * Ntx]`` (uint16): the squared magnitude ``re**2 + im**2`` (0..32768) of each CSI value of
    the bfee record whose body is at ``b[body:]``, in the order the parser returns them: per subcarrier, receive
    antenna, transmit antenna, after the antenna permutation where the parser applies it
    (:func:`rfbench.io.intel5300._perm_policy`). The payload holds per subcarrier group 3 unused bits, then 16 bits
    per value (``r * Ntx + t``): the real part's 8, the imaginary part's 8, each a signed byte that may straddle
    two bytes, its low bits from the first. Returns whether any is non-zero. (The three bytes a value spans always
    lie inside the payload: its 30 groups end 2 bits into its last byte.) Load indices are unsigned: no
    negative-index wrap-around to test on each load."""
    return _bfee_decode(b, body, out, out, False)


@njit(inline="always")
def _bfee_decode(b, body, out, table, phase):
    """Each CSI value of the bfee record whose body is at ``b[body:]`` into ``out`` in the parser's order (see
    :func:`_bfee_magnitudes`): its squared magnitude, or with ``phase`` its direction (``table``:
    :data:`DIRECTIONS`). Returns whether any magnitude is non-zero, or with ``phase`` whether the directions are
    not all one. (Inlined with ``phase`` a constant: each caller compiles to one of the two loops.)"""
    nrx = np.int64(b[body + 8])
    ntx = np.int64(b[body + 9])
    sel = np.int64(b[body + 15])
    permuted = _perm_policy(sel, nrx) == 1
    nn = nrx * ntx
    index = np.uint64(0)
    p = np.uint64(body + _BODY_HEADER)
    seen = np.uint64(0)
    w0 = (np.uint64(b[p]) | (np.uint64(b[p + _U1]) << _U8) | (np.uint64(b[p + _U2]) << _U16)) >> _U3
    first = table[np.int64(((w0 & _BYTE) << _U8) | ((w0 >> _U8) & _BYTE))] if phase else np.uint16(0)
    varied = False
    for sc in range(30):
        index += _U3
        for r in range(nrx):
            d = (sel >> (2 * r)) & 3 if permuted else r  # the row the parser puts the file's row r at
            for t in range(ntx):
                j = p + (index >> _U3)
                w = (np.uint64(b[j]) | (np.uint64(b[j + _U1]) << _U8) | (np.uint64(b[j + _U2]) << _U16)) \
                    >> (index & _U7)
                k = sc * nn + d * ntx + t
                if phase:
                    code = table[np.int64(((w & _BYTE) << _U8) | ((w >> _U8) & _BYTE))]
                    out[k] = code
                    varied |= code != first  # (the first value read, at bit 3 of the payload)
                else:
                    re = np.int64((w & _BYTE) ^ _SIGN) - 0x80  # the signed byte, without a branch
                    im = np.int64(((w >> _U8) & _BYTE) ^ _SIGN) - 0x80
                    m = re * re + im * im
                    out[k] = m
                    seen |= np.uint64(m)
                index += _U16
    return varied if phase else seen != np.uint64(0)


#: Records one scratch buffer of :func:`_fingerprint_bfee` serves (one allocation per block, not per record).
_BLOCK = 1024


@njit_parallel
def _fingerprint_bfee(b, offsets, lengths, shape, seed, out, blank):
    """For each bfee record body ``b[offsets[i]:offsets[i] + lengths[i]]`` (20 header bytes, then the payload) of
    shape ``shape[i]`` (``(Nrx - 1) * 3 + Ntx - 1``): ``blank[i] = 1`` and ``out[i] = 0`` when every CSI value is
    zero; otherwise ``blank[i] = 0`` and ``out[i]`` = XXH64, seeded with ``seed + shape[i]`` (the same values read
    as another shape are other content), of the squared magnitudes of its values in the parser's order
    (:func:`_bfee_magnitudes`). The header is left out but for the antenna selection the parser permutes the rows
    by — a record copied with its timestamp, packet counter, RSSI or AGC changed holds the same CSI, and so does
    one with its receive antennas' values stored in another order and ``antenna_sel`` changed to match — and so
    is every bit the parser never reads; and each value counts by its magnitude, which a copy with the real and
    imaginary parts swapped, a sign flipped or the values conjugated keeps (as it keeps every amplitude a model
    is given)."""
    n = offsets.shape[0]
    for block in prange((n + _BLOCK - 1) // _BLOCK):
        mags = np.empty(270, dtype=np.uint16)  # 30 subcarriers x 9 values at most
        view = mags.view(np.uint8)  # hashed as its bytes (little-endian on the machines rfbench runs on)
        for i in range(block * _BLOCK, min(n, (block + 1) * _BLOCK)):
            m = shape[i]
            nn = (m // 3 + 1) * (m % 3 + 1)
            if _bfee_magnitudes(b, offsets[i], mags):
                blank[i] = 0
                out[i] = _xxh64(view, 0, 60 * nn, seed + np.uint64(m))
            else:
                blank[i] = 1
                out[i] = 0


def _direction_table() -> np.ndarray:
    """Per int8 pair ``(re, im)``, indexed ``(re & 0xFF) << 8 | (im & 0xFF)``: the pair's direction as the
    smallest integer pair pointing the same way — ``(re, im)`` divided by ``gcd(|re|, |im|)``, ``(0, 0)`` as
    ``(1, 0)`` (``arctan2`` gives both the angle 0) — packed as the same index of the reduced pair. Two int8 pairs
    have one direction exactly when ``arctan2`` gives them one phase: distinct directions of pairs up to 128 apart
    lie at least ``1 / (2 * 128**2)`` radians apart, far more than a float32 step near pi."""
    v = np.arange(256, dtype=np.int64)
    v[v >= 128] -= 256
    re, im = np.meshgrid(v, v, indexing="ij")
    g = np.gcd(re, im)
    zero = g == 0
    g[zero] = 1
    r, i = re // g, im // g
    r[zero], i[zero] = 1, 0
    return ((r & 0xFF) << 8 | (i & 0xFF)).astype(np.uint16).reshape(-1)


#: :func:`_direction_table`, built once.
DIRECTIONS = _direction_table()


@njit(inline="always")
def _bfee_directions(b, body, table, out):
    """``out[:30 * Nrx * Ntx]`` (uint16): the direction (:data:`DIRECTIONS`) of each CSI value of the bfee record
    whose body is at ``b[body:]``, in the parser's order (as :func:`_bfee_magnitudes` reads them). Returns whether
    they are not all one direction (a record whose values all point one way, all-zero ones among them, has no
    phase to tell it by)."""
    return _bfee_decode(b, body, out, table, True)


@njit_parallel
def _fingerprint_bfee_phase(b, offsets, shape, table, seed, out, blank):
    """The phase fingerprint of each bfee record body ``b[offsets[i]:]`` of shape ``shape[i]`` (as
    :func:`_fingerprint_bfee`): ``blank[i] = 1`` and ``out[i] = 0`` when its values all point one way; otherwise
    ``out[i]`` = XXH64, seeded with ``seed + shape[i]``, of its values' directions (:func:`_bfee_directions`).
    A copy with each value scaled by its own positive integer — every phase kept, so ``--features phase`` windows
    are bit-identical while every amplitude changed — holds the same directions."""
    n = offsets.shape[0]
    for block in prange((n + _BLOCK - 1) // _BLOCK):
        dirs = np.empty(270, dtype=np.uint16)
        view = dirs.view(np.uint8)
        for i in range(block * _BLOCK, min(n, (block + 1) * _BLOCK)):
            m = shape[i]
            nn = (m // 3 + 1) * (m % 3 + 1)
            if _bfee_directions(b, offsets[i], table, dirs):
                blank[i] = 0
                out[i] = _xxh64(view, 0, 60 * nn, seed + np.uint64(m))
            else:
                blank[i] = 1
                out[i] = 0


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


def bfee_content(body) -> bytes:
    """What a bfee record's fingerprint covers, as bytes to compare: its Nrx and Ntx bytes, then the squared
    magnitudes of its CSI values in the parser's order (:func:`_bfee_magnitudes`). ``body`` is the record's body
    as framed by :func:`rfbench.io.intel5300.record_spans` (20 header bytes, then at least ``calc_len`` payload
    bytes)."""
    b = np.frombuffer(bytes(body), dtype=np.uint8)
    return bytes(b[8:10]) + _record_magnitudes(b).astype("<u2").tobytes()


@njit
def _record_magnitudes(b):
    out = np.empty(30 * np.int64(b[8]) * np.int64(b[9]), dtype=np.uint16)
    _bfee_magnitudes(b, 0, out)
    return out


def bfee_phase_content(body) -> bytes:
    """What a bfee record's phase fingerprint covers, as bytes to compare: its Nrx and Ntx bytes, then its CSI
    values' directions in the parser's order (:func:`_bfee_directions`)."""
    b = np.frombuffer(bytes(body), dtype=np.uint8)
    return bytes(b[8:10]) + _record_directions(b, DIRECTIONS).astype("<u2").tobytes()


@njit
def _record_directions(b, table):
    out = np.empty(30 * np.int64(b[8]) * np.int64(b[9]), dtype=np.uint16)
    _bfee_directions(b, 0, table, out)
    return out


@dataclass(frozen=True)
class BfeeFingerprints:
    """Fingerprints of a log's valid bfee records (file order): ``hashes`` (uint64, 0 where blank), ``blank``
    (True where every CSI value is zero: not fingerprinted) and the records' ``offsets``/``lengths``."""

    hashes: np.ndarray
    blank: np.ndarray
    offsets: np.ndarray
    lengths: np.ndarray
    phase_hashes: np.ndarray | None = None  # by the values' directions (:func:`_fingerprint_bfee_phase`)
    phase_blank: np.ndarray | None = None  # True where every value points one way: no phase fingerprint

    def __len__(self) -> int:
        return int(self.hashes.shape[0])


def _bfee_batch(buf: np.ndarray, bounds: Sequence[int]) -> tuple[list, np.ndarray, np.ndarray]:
    """Frame every file ``buf[bounds[f]:bounds[f+1]]`` with the parser's framing kernel and fingerprint all
    their records in one kernel call. Returns the per-file spans, the hashes and the blank flags (uint8)."""
    from rfbench.io.intel5300 import record_spans

    spans = [record_spans(buf[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    offsets, lengths, shape = _batch_records(spans, bounds)
    hashes = np.empty(offsets.shape[0], dtype=np.uint64)
    blank = np.empty(offsets.shape[0], dtype=np.uint8)
    with serial_below(int(lengths.sum()), PARALLEL_MIN_BYTES), np.errstate(over="ignore"):
        _fingerprint_bfee(buf, offsets, lengths, shape, np.uint64(0), hashes, blank)
    return spans, hashes, blank


def _batch_records(spans: list, bounds: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Offsets in the batch buffer, lengths and shapes of the records of every file's ``spans``."""
    if not spans:
        return (np.zeros(0, dtype=np.int64),) * 3
    offsets = np.concatenate([s.offsets + a for s, a in zip(spans, bounds[:-1])])
    lengths = np.concatenate([s.lengths for s in spans])
    shape = np.concatenate([(s.nrx.astype(np.int64) - 1) * 3 + (s.ntx.astype(np.int64) - 1) for s in spans])
    return offsets, lengths, shape


def _bfee_phase_batch(buf: np.ndarray, spans: list, bounds: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The phase fingerprints (:func:`_fingerprint_bfee_phase`) and blank flags (uint8) of the records of a batch
    :func:`_bfee_batch` framed (its ``spans``)."""
    offsets, lengths, shape = _batch_records(spans, bounds)
    hashes = np.empty(offsets.shape[0], dtype=np.uint64)
    blank = np.empty(offsets.shape[0], dtype=np.uint8)
    with serial_below(int(lengths.sum()), PARALLEL_MIN_BYTES), np.errstate(over="ignore"):
        _fingerprint_bfee_phase(buf, offsets, shape, DIRECTIONS, np.uint64(0), hashes, blank)
    return hashes, blank


def bfee_fingerprints(source) -> BfeeFingerprints:
    """Fingerprint every valid bfee record of a log (a path, bytes or a 1-D uint8 array).

    Each record's CSI values (before any antenna permutation), as their squared magnitudes (:func:`bfee_content`),
    are hashed with XXH64, seeded with its Nrx×Ntx shape; its 20 header bytes (timestamp, packet counter, RSSI,
    noise, AGC, ...) and the payload's unused bits (the 3 before each subcarrier group, the tail up to
    ``calc_len``) are left out, so a record copied with them changed is the same content, and so is one copied
    with its values' real and imaginary parts swapped, their signs flipped or conjugated: the same amplitudes.
    Records whose CSI values are all zero are flagged ``blank`` and get hash 0. Each record also gets a phase
    fingerprint (``phase_hashes``): of its values' directions (:func:`_fingerprint_bfee_phase`), which a copy with
    its values scaled keeps — the same phases, other amplitudes; ``phase_blank`` where its values all point one
    way.

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
    phase, phase_blank = _bfee_phase_batch(buf, spans, [0, buf.shape[0]])
    return BfeeFingerprints(hashes, blank.astype(bool), spans[0].offsets, spans[0].lengths, phase,
                            phase_blank.astype(bool))


def _canonical(arr: np.ndarray) -> np.ndarray:
    """float64 values in C order, ``-0.0`` as ``0.0``, every NaN as the one quiet NaN (complex: real, imag)."""
    a = np.asarray(arr)
    if np.iscomplexobj(a):
        a = np.ascontiguousarray(a, dtype=np.complex128).view(np.float64)
    x = np.array(a, dtype="<f8", order="C").reshape(-1)
    x += 0.0  # -0.0 + 0.0 == +0.0
    x[np.isnan(x)] = np.nan
    return x


def bvp_model_view(value: np.ndarray) -> np.ndarray:
    """A BVP profile as a model sees it (``rfbench windows``): float32 (rounded to nearest, as windows casts),
    steps first (MATLAB's ``v(i, j, t)`` is ``x[t, i, j]``; a 2-D value is one step), the trailing steps whose
    400 values are all zero left out (windows pads a row with zero steps). Two profiles with the same view give
    the same row at any ``t_max`` that holds them: a copy whose values differ below float32's precision, or that
    has zero steps appended, is the same content (each had a fingerprint of its own when the float64 values were
    hashed)."""
    v = np.asarray(value)
    if v.ndim == 2:
        v = v[:, :, None]
    x = np.moveaxis(v.astype(np.float32), -1, 0)
    kept = np.flatnonzero((x != 0).reshape(x.shape[0], -1).any(axis=1)) if x.shape[0] else np.zeros(0, np.int64)
    return x[:int(kept[-1]) + 1] if kept.size else x[:0]


def bvp_head(view: np.ndarray) -> np.ndarray:
    """The steps of a BVP profile's model view (:func:`bvp_model_view`) up to and including its first step with a
    non-zero value (empty when every step is zero). Two profiles give a model the same non-blank row at some
    ``t_max`` exactly when they share this head: ``windows`` cuts a row at ``t_max``, which the train side or
    ``--t-max`` decides, so a copy with steps appended past it, or with its later steps changed, gives rows the
    original gives (with the whole view hashed, a training profile copied to the test side with three steps
    appended past the train side's longest passed ``split --content``)."""
    nonzero = np.flatnonzero((view != 0).reshape(view.shape[0], -1).any(axis=1)) if view.shape[0] else view[:0]
    return view[:int(nonzero[0]) + 1] if nonzero.size else view[:0]


def frame_values(mat: Mapping[str, np.ndarray]) -> tuple[np.ndarray | None, int, str | None]:
    """The values of an MM-Fi frame that are hashed: ``CSIamp`` as a model is given it (float32, rounded to
    nearest, as ``windows`` casts), canonical float64 (see :func:`_canonical`) — not ``CSIphase``: a copy with its
    phase negated or otherwise changed, or its amplitudes moved below float32's precision, gives a model the same
    amplitudes, and is the same content (it was another frame until 2026-12-07) — with the frame's status:
    ``0`` fingerprinted, ``1`` all zero, ``2`` no finite non-zero value (all NaN/inf, or zeros and NaN/inf), ``3``
    not a frame (the reason is returned).
    A frame holding a non-finite amplitude is hashed as ``windows --nonfinite toolbox-fill`` gives it to a model
    (the MM-Fi toolbox's fill: ±inf as NaN, each NaN as its packet's mean; any other setting refuses the frame):
    a training frame's copy with ``+inf`` where it holds NaN, or with the filled value written out, is the same
    content (each was another frame until 2026-12-07).
    A Widar3.0 BVP file (no ``CSIamp``, a ``velocity_spectrum_ro``) is one such unit too, its profile hashed as a
    model sees it (:func:`bvp_model_view`) up to its first non-zero step (:func:`bvp_head`): the same profile
    under another MAT header (a changed text, a compressed element), with values changed below float32's
    precision, steps appended or its later steps changed, is the same content.

    Returns
    -------
    (values or None, status, reason or None)
    """
    if "CSIamp" not in mat and BVP_VARIABLE in mat:
        values = _canonical(bvp_head(bvp_model_view(mat[BVP_VARIABLE])))
    elif "CSIamp" not in mat:
        found = ", ".join(sorted(mat)) or "no numeric variable"
        return None, _UNPARSED, f"no CSIamp variable (found: {found})"
    else:
        amp = np.asarray(mat["CSIamp"])  # as windows gives it to a model: float32, rounded to nearest
        if not np.iscomplexobj(amp) and amp.ndim == 3 and not np.isfinite(amp).all():
            from rfbench.datasets.mmfi import toolbox_fill

            # the only way windows gives a model such a frame (``--nonfinite toolbox-fill``; refused otherwise)
            amp = toolbox_fill(amp)[0]
        values = _canonical(amp.astype(np.complex64 if np.iscomplexobj(amp) else np.float32))
    finite = np.isfinite(values)
    if not np.any(finite & (values != 0)):
        return values, (_ZERO if finite.all() else _NON_FINITE), None
    return values, _OK, None


def _all_one_value(values: np.ndarray) -> bool:
    """Whether every canonical value (:func:`_canonical`) is bit for bit the first: none to tell a phase by."""
    return bool(_one_value_rows(values.reshape(1, -1))[0])


def hardware_views() -> tuple[str, ...]:
    """The views of a hardware record fingerprinted besides its data subcarriers' magnitudes (``"amp"``): their
    phases, and each feature of the record as ``windows`` gives it on each grid it maps a log to
    (:data:`rfbench.datasets.windows.hardware.GRIDS`), which may leave subcarriers out (:func:`hardware_records`)."""
    from rfbench.datasets.windows.hardware import GRIDS

    return ("phase", *(f"{g} {feature}" for g in GRIDS for feature in ("amp", "phase")))


def hardware_records(log, view: str = "amp") -> tuple[list, np.ndarray]:
    """The values of each record of a log of other CSI hardware (a :class:`~rfbench.io.hwlog.HardwareLog`) that
    are hashed: the record's data subcarriers as ``windows`` takes them (its format's null bins — DC, guards —
    and an FFT grid's unpaired lowest bin left out, :func:`rfbench.datasets.windows.hardware._data_columns`; a copy
    with only those changed gives the model the same rows) and its own antennas (the padding to the log's largest
    record left out, so a record hashes alike in any log), canonical float64 (see :func:`_canonical`), complex
    values as their squared magnitudes ``re*re + im*im`` (a copy with the real and imaginary parts swapped, a sign
    flipped or conjugated keeps every amplitude, and is the same content), with each record's status: ``0``
    fingerprinted, ``1`` all zero.

    Other views (:func:`hardware_views`): ``"phase"``, each complex value's phase as ``windows`` gives it
    (``arctan2(im, re)`` rounded to float32: a copy with every value scaled keeps it), status ``1`` where all are
    one value (a log of real values has no phase: every record ``1``); ``"GRID amp"`` / ``"GRID phase"``, the
    feature ``windows`` computes from the record mapped to ``GRID`` (``--subcarriers``/``--bandwidth``), exactly
    the values of its rows: mapping a 56-tone Atheros record to the 30-point grid gives 26 of its subcarriers no
    weight, so a copy with only those changed gives the model the same rows (status ``1`` where the record cannot
    be mapped or its feature is not finite, or where all are one value).

    Returns
    -------
    (list of (shape, values), status ndarray of uint8)
    """
    from rfbench.datasets.windows.hardware import _data_columns, _groups

    grid, _, feature = view.partition(" ")
    if feature:
        return _grid_records(log, grid, feature)
    n = log.n_records
    status = np.zeros(n, dtype=np.uint8)
    out: list = [None] * n
    rx, tx = (np.asarray(a, dtype=np.int64) for a in (log.n_rx, log.n_tx))
    complex_ = np.iscomplexobj(log.csi)
    for records, indices, bandwidth in _groups(log):
        cols = _data_columns(log, indices, bandwidth)[0]
        for sel, (a, b) in _same_antennas(np.arange(n)[records], rx, tx):  # records alike, in one block
            held = log.csi[sel][:, cols][:, :, :a, :b]
            if view == "phase":
                values = _canonical_rows(np.arctan2(held.imag, held.real).astype(np.float32) if complex_ else held)
                blank = _one_value_rows(values) | (not complex_)
            else:
                values = _canonical_rows(held)
                if complex_:
                    values = values[:, 0::2] * values[:, 0::2] + values[:, 1::2] * values[:, 1::2]
                    values[np.isnan(values)] = np.nan  # the one quiet NaN, whichever part was NaN
                blank = ~np.any(values != 0, axis=1)
            status[sel[blank]] = _ZERO
            shape = (int(cols.shape[0]), a, b)
            for k, r in enumerate(sel.tolist()):
                out[r] = (shape, values[k])
    return out, status


def _same_antennas(rows: np.ndarray, rx: np.ndarray, tx: np.ndarray):
    """``(records, (nrx, ntx))`` for each antenna shape among ``rows``."""
    shapes = np.stack([rx[rows], tx[rows]], axis=1) if rows.size else np.zeros((0, 2), np.int64)
    for a, b in np.unique(shapes, axis=0).tolist():
        yield rows[(shapes[:, 0] == a) & (shapes[:, 1] == b)], (int(a), int(b))


def _canonical_rows(block: np.ndarray) -> np.ndarray:
    """:func:`_canonical` of each record of ``block`` (records first): one row of canonical float64 each."""
    return _canonical(block).reshape(block.shape[0], -1)


def _one_value_rows(values: np.ndarray) -> np.ndarray:
    """Per row, whether every canonical value is bit for bit the row's first (:func:`_all_one_value`)."""
    bits = values.view(np.uint64)
    return np.all(bits == bits[:, :1], axis=1) if bits.shape[1] else np.ones(bits.shape[0], dtype=bool)


def _grid_records(log, grid: str, feature: str) -> tuple[list, np.ndarray]:
    """:func:`hardware_records`' ``"GRID amp"``/``"GRID phase"`` view: each record's feature on ``grid``, float32
    as :func:`rfbench.datasets.windows.features.features` computes it, canonical."""
    from rfbench.datasets.windows.features import features
    from rfbench.datasets.windows.hardware import on_grid

    n = log.n_records
    status = np.ones(n, dtype=np.uint8)  # _ZERO: no fingerprint in this view
    out: list = [((grid, feature), np.zeros(0))] * n
    try:
        mapped = on_grid(log, grid, "log")
    except ValidationError:  # fewer than 2 data subcarriers: no row on any grid
        return out, status
    # the feature of every record at once (as windows computes it: float32), its values canonical (elementwise)
    feats = np.empty((n, 1, *mapped.shape[1:]), dtype=np.float32)
    for a in range(0, n, 4096):  # (in blocks: a few MB of float64 at a time)
        try:
            features(mapped[a:a + 4096], (feature,), "log", out=feats[a:a + 4096])
        except ValidationError:  # a value not finite: its records are left out below
            pass
    flat = _canonical(feats).reshape(feats.shape)[:, 0]
    finite = np.isfinite(feats[:, 0]).reshape(n, -1).all(axis=1)
    rx, tx = (np.asarray(a, dtype=np.int64) for a in (log.n_rx, log.n_tx))
    for sel, (a, b) in _same_antennas(np.flatnonzero(finite), rx, tx):  # not finite: windows refuse the log
        values = flat[sel, :, :a, :b].reshape(sel.shape[0], -1)
        blank = _one_value_rows(values) if feature == "phase" else ~np.any(values != 0, axis=1)
        status[sel] = np.where(blank, _ZERO, _OK)
        shape = (grid, feature, (flat.shape[1], a, b))
        for k, r in enumerate(sel.tolist()):
            out[r] = (shape, values[k])
    return out, status


def frame_phases(mat: Mapping[str, np.ndarray]) -> tuple[np.ndarray | None, int]:
    """The values of an MM-Fi frame its phase fingerprint covers: ``CSIphase`` as a model is given it (float32,
    rounded to nearest), canonical (:func:`_canonical`), with its status: ``0`` fingerprinted, ``1`` none to tell a
    phase by (no ``CSIphase``, a complex one, or every value one value: all zero, all NaN). A copy of a frame
    whose ``CSIamp`` changed but not its phase gives a model with ``--features phase`` the same input; it shares
    this fingerprint."""
    phase = mat.get("CSIphase") if "CSIamp" in mat else None
    if phase is None or np.iscomplexobj(phase):
        return None, _ZERO
    values = _canonical(np.asarray(phase).astype(np.float32))
    return values, (_ZERO if _all_one_value(values) else _OK)


def _frame_shapes(mat: Mapping[str, np.ndarray]) -> tuple:
    """The shapes of what :func:`frame_values` hashes (a BVP profile's as a model sees it), part of the content a
    match is confirmed on."""
    if "CSIamp" in mat:
        return (("CSIamp", np.shape(mat["CSIamp"]), np.iscomplexobj(mat["CSIamp"])),)
    return tuple((k, np.shape(bvp_head(bvp_model_view(mat[k]))), np.iscomplexobj(mat[k])) for k in (BVP_VARIABLE,)
                 if k in mat)

