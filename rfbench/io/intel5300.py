"""Intel 5300 "bfee" CSI logs (the Linux 802.11n CSI Tool), read exactly like the reference MATLAB tools.

Reference semantics: linux-80211n-csitool ``matlab/read_bf_file.m`` and ``matlab/read_bfee.c``
(DESIGN.md §3). A log is a sequence of records ``[field_len: u16 big-endian][code: u8][field_len-1 body
bytes]``; only code ``0xBB`` carries CSI. Differences from the reference, all deliberate:

- Where the reference aborts the whole file (``len`` ≠ the size Nrx×Ntx implies, a truncated tail), rfbench
  skips that record, counts it in :attr:`Intel5300Log.skipped` by reason, and goes on. Framing trusts
  ``field_len`` like the reference (no sync marker, no heuristic resynchronisation), so good records before
  and after a bad one are still returned whenever the framing is intact.
- The antenna permutation follows the reference's rule (applied only when Nrx > 1 and
  ``sum(perm) == (1, 3, 6)[Nrx-1]``) **and** additionally requires ``perm[:Nrx]`` to be a true permutation
  of 1..Nrx; otherwise the record is left unpermuted and counted as ``invalid_perm`` (the reference warns
  once, and for entries beyond Nrx grows the array). csiread applies the perm to every record and CSIKit
  only when Nrx = 3: on files with Nrx = 2 records they differ from the reference, rfbench does not.

Layout of the result
--------------------
``csi`` has shape ``(records, 30, Nrx_max, Ntx_max)`` where ``Nrx_max``/``Ntx_max`` are the largest
Nrx/Ntx of any valid record in the file. A file that mixes shapes is **padded**: a record with fewer
antennas holds its values in ``[:, :nrx[i], :ntx[i]]`` and zeros elsewhere; ``nrx``/``ntx`` give each
record's own shape. Raw CSI values are 8-bit integers, so complex64 holds them exactly; ``raw_int8=True``
returns ``csi_int8`` of shape ``(records, 30, Nrx_max, Ntx_max, 2)`` (real, imaginary) instead.

Memory: the file's bytes, one offset (8 bytes) and one flag byte per 95 file bytes at most (the smallest
valid bfee record is 95 bytes), and the output. No allocation is ever sized from a length read from the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np

from rfbench._jit import njit, njit_parallel, prange
from rfbench.errors import FormatError

__all__ = [
    "Intel5300Log",
    "read",
    "SKIP_REASONS",
    "BFEE_CODE",
    "HEADER_FIELDS",
    "calc_len",
    "MIN_BFEE_RECORD_BYTES",
]

BFEE_CODE = 0xBB
#: Skip reasons, in the order of the kernel's counter array.
SKIP_REASONS = ("truncated", "bad_len", "short_body", "bad_shape", "zero_field_len")
_TRUNCATED, _BAD_LEN, _SHORT_BODY, _BAD_SHAPE, _ZERO_FIELD_LEN = range(5)
#: Per-record header arrays of the result, with their dtypes (the wire types of read_bfee.c).
HEADER_FIELDS = {
    "timestamp_low": np.uint32,
    "bfee_count": np.uint16,
    "nrx": np.uint8,
    "ntx": np.uint8,
    "rssi_a": np.uint8,
    "rssi_b": np.uint8,
    "rssi_c": np.uint8,
    "noise": np.int8,
    "agc": np.uint8,
    "antenna_sel": np.uint8,
    "rate": np.uint16,
}
_BFEE_HEADER_BYTES = 20
_N_SUBCARRIERS = 30
# unsigned constants for the unpack loops (see _subcarrier_direct)
_U0, _U1, _U2, _U3, _U4, _U5, _U6, _U8 = (np.uint64(k) for k in (0, 1, 2, 3, 4, 5, 6, 8))


def calc_len(nrx: int, ntx: int) -> int:
    """Payload bytes of a bfee record with ``nrx`` × ``ntx`` antennas: ``(30*(nrx*ntx*16 + 3) + 7) // 8``."""
    return (_N_SUBCARRIERS * (nrx * ntx * 16 + 3) + 7) // 8


#: The smallest well-formed bfee record on disk: 2 (field_len) + 1 (code) + 20 (header) + calc_len(1, 1).
MIN_BFEE_RECORD_BYTES = 2 + 1 + _BFEE_HEADER_BYTES + calc_len(1, 1)


# ----------------------------------------------------------------------------------------------------------
# Kernels (private; validate nothing, no I/O)
# ----------------------------------------------------------------------------------------------------------


@njit
def _perm_policy(antenna_sel, nrx):
    """1 if the reference would permute this record and ``perm[:nrx]`` is a permutation of 1..nrx, 0 if the
    record needs no permutation (nrx == 1), 2 if it is left unpermuted and counted as ``invalid_perm``."""
    if nrx <= 1:
        return 0
    p0 = (antenna_sel & 3) + 1
    p1 = ((antenna_sel >> 2) & 3) + 1
    p2 = ((antenna_sel >> 4) & 3) + 1
    triangle = 3 if nrx == 2 else 6
    if p0 + p1 + p2 != triangle:  # read_bf_file.m: sum(perm) ~= triangle(Nrx) -> warn, leave as is
        return 2
    # The sum rule admits non-permutations such as (2,2,2), (1,1,4) or (4,1,1): only a true permutation of
    # 1..nrx is applied.
    seen = 0
    for k in range(nrx):
        p = ((antenna_sel >> (2 * k)) & 3) + 1
        if p > nrx or (seen >> p) & 1:
            return 2
        seen |= 1 << p
    return 1


@njit
def _scan(buf, offsets, policy, skips, non_csi):
    """Frame ``buf`` into records and validate every bfee record.

    Writes the body offset of each valid bfee record to ``offsets`` and its perm policy to ``policy``
    (both must hold at least ``len(buf) // MIN_BFEE_RECORD_BYTES + 1`` entries), counts skipped records
    by reason into ``skips`` (indexed like SKIP_REASONS, plus index 5 = invalid_perm) and non-CSI records
    by code into ``non_csi`` (256 entries). Returns ``(n_valid, max_nrx, max_ntx)``.

    Every iteration advances by at least 2 bytes, so the scan ends in O(len(buf)) whatever the content.
    """
    n = buf.shape[0]
    pos = 0
    n_valid = 0
    max_nrx = 0
    max_ntx = 0
    while pos < n:
        if n - pos < 2:  # a lone trailing byte: not even a length
            skips[_TRUNCATED] += 1
            break
        field_len = (np.int64(buf[pos]) << 8) | np.int64(buf[pos + 1])
        if field_len == 0:
            # read_bf_file.m reads the length, then seeks field_len - 1 = -1 bytes past the code byte:
            # the record is just its 2-byte length and the next one starts right after it.
            skips[_ZERO_FIELD_LEN] += 1
            pos += 2
            continue
        end = pos + 2 + field_len
        if end > n:
            skips[_TRUNCATED] += 1
            break
        code = buf[pos + 2]
        if code != BFEE_CODE:
            non_csi[code] += 1
            pos = end
            continue
        body = pos + 3
        body_len = field_len - 1
        if body_len < _BFEE_HEADER_BYTES:
            skips[_SHORT_BODY] += 1
            pos = end
            continue
        nrx = np.int64(buf[body + 8])
        ntx = np.int64(buf[body + 9])
        if nrx < 1 or nrx > 3 or ntx < 1 or ntx > 3:
            skips[_BAD_SHAPE] += 1
            pos = end
            continue
        length = np.int64(buf[body + 16]) | (np.int64(buf[body + 17]) << 8)
        if length != (_N_SUBCARRIERS * (nrx * ntx * 16 + 3) + 7) // 8:
            skips[_BAD_LEN] += 1
            pos = end
            continue
        if body_len < _BFEE_HEADER_BYTES + length:
            skips[_SHORT_BODY] += 1
            pos = end
            continue
        rule = _perm_policy(np.int64(buf[body + 15]), nrx)
        if rule == 2:
            skips[5] += 1
        offsets[n_valid] = body
        policy[n_valid] = rule
        n_valid += 1
        if nrx > max_nrx:
            max_nrx = nrx
        if ntx > max_ntx:
            max_ntx = ntx
        pos = end
    return n_valid, max_nrx, max_ntx


@njit(inline="always")
def _load_u64(b, s):
    """Little-endian 64-bit word from 8 bytes of ``b`` at ``s``. The index is unsigned so Numba emits no
    negative-index wraparound, which lets LLVM fold the eight byte loads into one unaligned load."""
    u = np.uint64(s)
    return (np.uint64(b[u]) | (np.uint64(b[u + np.uint64(1)]) << np.uint64(8))
            | (np.uint64(b[u + np.uint64(2)]) << np.uint64(16)) | (np.uint64(b[u + np.uint64(3)]) << np.uint64(24))
            | (np.uint64(b[u + np.uint64(4)]) << np.uint64(32)) | (np.uint64(b[u + np.uint64(5)]) << np.uint64(40))
            | (np.uint64(b[u + np.uint64(6)]) << np.uint64(48)) | (np.uint64(b[u + np.uint64(7)]) << np.uint64(56)))


@njit(inline="always")
def _byte(w, k):
    """Byte ``k`` of the 64-bit word ``w`` as a signed 8-bit value."""
    return np.int8(np.uint8((w >> np.uint64(8 * k)) & np.uint64(0xFF)))


@njit(inline="always")
def _pair_byte(b, s, rem):
    """read_bfee.c's one value: low 8 bits of ``(b[s] >> rem) | (b[s+1] << (8 - rem))``, signed."""
    v = ((np.int64(b[s]) | (np.int64(b[s + 1]) << 8)) >> rem) & 0xFF
    return (v ^ 0x80) - 0x80


@njit
def _row_tables(n_tx_out):
    """Destination offsets: ``tab[sel, q]`` is where byte q of a subcarrier's values goes (relative to the
    subcarrier's start) when the record's perm, decoded from ``antenna_sel & 63 == sel``, is applied:
    file row r = q // (2*Ntx) goes to row perm[r]. Only rows of true permutations are ever used."""
    run = 2 * n_tx_out
    tab = np.empty((64, 3 * run), np.uint64)
    for sel in range(64):
        for q in range(3 * run):
            r = q // run
            tab[sel, q] = ((sel >> (2 * r)) & 3) * run + q % run
    return tab


@njit_parallel
def _unpack_headers(b, offsets, timestamp_low, bfee_count, nrx, ntx, rssi_a, rssi_b, rssi_c, noise, agc,
                    antenna_sel, rate, perm):
    """Header fields of each valid record (read_bfee.c offsets), ``perm`` 0-based from ``antenna_sel``."""
    for i in prange(offsets.shape[0]):
        body = offsets[i]
        timestamp_low[i] = (np.uint32(b[body]) | (np.uint32(b[body + 1]) << 8) | (np.uint32(b[body + 2]) << 16)
                            | (np.uint32(b[body + 3]) << 24))
        bfee_count[i] = np.uint16(b[body + 4]) | (np.uint16(b[body + 5]) << 8)
        nrx[i] = b[body + 8]
        ntx[i] = b[body + 9]
        rssi_a[i] = b[body + 10]
        rssi_b[i] = b[body + 11]
        rssi_c[i] = b[body + 12]
        noise[i] = np.int8(b[body + 13])  # signed in read_bfee.c
        agc[i] = b[body + 14]
        sel = b[body + 15]
        antenna_sel[i] = sel
        rate[i] = np.uint16(b[body + 18]) | (np.uint16(b[body + 19]) << 8)
        perm[i, 0] = sel & 3
        perm[i, 1] = (sel >> 2) & 3
        perm[i, 2] = (sel >> 4) & 3


# How a record's CSI is placed. read_bfee.c reads entry j of subcarrier s as the low 8 bits of
# (p[idx/8] >> idx%8) | (p[idx/8+1] << (8 - idx%8)) (real), then the same one byte further (imaginary), with
# idx = 3 + s*(3 + 16*Nrx*Ntx) + 16*j. So a subcarrier's 2*Nrx*Ntx values are consecutive bytes of the bit
# stream shifted right by idx%8, which is constant within the subcarrier: one 64-bit load yields six.
# Records whose Ntx equals the array's take one of two fast paths: rows in file order (`_unpack_direct`) or
# rows permuted through a table (`_unpack_permuted`). A smaller-Ntx record in a mixed file takes
# `_unpack_placed`. The three loops are separate kernels on purpose: sharing one function keeps LLVM from
# optimising the fast loops (measured 2-3x slower).
_KIND_DIRECT, _KIND_PERMUTED, _KIND_PLACED = 0, 1, 2


@njit(inline="always")
def _kind(b, body, apply_perm, n_tx_out):
    if np.int64(b[body + 9]) != n_tx_out:
        return _KIND_PLACED
    if apply_perm == 1 and (b[body + 15] & 63) != 36:  # 36 = 0b100100: the identity (0, 1, 2)
        return _KIND_PERMUTED
    return _KIND_DIRECT


@njit(inline="always")
def _subcarrier_direct(b, src, rem, nbytes, out, dst, n_buf):
    """Copy one subcarrier's ``nbytes`` values from bit stream position (src, rem) to ``out[dst:]``.
    All indices are unsigned: Numba then emits no negative-index wraparound and LLVM merges the loads."""
    q = _U0
    while q + _U6 <= nbytes and src + q + _U8 <= n_buf:
        w = _load_u64(b, src + q) >> rem
        o = dst + q
        out[o] = _byte(w, 0)
        out[o + _U1] = _byte(w, 1)
        out[o + _U2] = _byte(w, 2)
        out[o + _U3] = _byte(w, 3)
        out[o + _U4] = _byte(w, 4)
        out[o + _U5] = _byte(w, 5)
        q += _U6
    while q < nbytes:
        out[dst + q] = _pair_byte(b, np.int64(src + q), np.int64(rem))
        q += _U1


@njit(inline="always")
def _subcarrier_permuted(b, src, rem, nbytes, out, dst, n_buf, dest):
    """As ``_subcarrier_direct``, but byte q goes to ``out[dst + dest[q]]`` (a permuted row)."""
    q = _U0
    while q + _U6 <= nbytes and src + q + _U8 <= n_buf:
        w = _load_u64(b, src + q) >> rem
        out[dst + dest[q]] = _byte(w, 0)
        out[dst + dest[q + _U1]] = _byte(w, 1)
        out[dst + dest[q + _U2]] = _byte(w, 2)
        out[dst + dest[q + _U3]] = _byte(w, 3)
        out[dst + dest[q + _U4]] = _byte(w, 4)
        out[dst + dest[q + _U5]] = _byte(w, 5)
        q += _U6
    while q < nbytes:
        out[dst + dest[q]] = _pair_byte(b, np.int64(src + q), np.int64(rem))
        q += _U1


@njit_parallel
def _unpack_direct(b, offsets, policy, out, n_rx_out, n_tx_out):
    """CSI of the records whose rows stay in file order, into the flat view ``out`` of
    ``(records, 30, n_rx_out, n_tx_out, 2)``; zeroes the rx padding of a smaller record."""
    n_buf = np.uint64(b.shape[0])
    per_sc = n_rx_out * n_tx_out * 2
    for i in prange(offsets.shape[0]):
        body = offsets[i]
        if _kind(b, body, policy[i], n_tx_out) != _KIND_DIRECT:
            continue
        nbytes = 2 * np.int64(b[body + 8]) * n_tx_out
        step = 3 + 8 * nbytes
        for sc in range(30):
            bit = 3 + sc * step
            dst = i * 30 * per_sc + sc * per_sc
            _subcarrier_direct(b, np.uint64(body + 20 + (bit >> 3)), np.uint64(bit & 7), np.uint64(nbytes), out,
                               np.uint64(dst), n_buf)
            for q in range(nbytes, per_sc):
                out[dst + q] = 0


@njit_parallel
def _unpack_permuted(b, offsets, policy, out, n_rx_out, n_tx_out, tab):
    """CSI of the records whose rows are permuted (file row k goes to row perm[k]), through ``tab``
    (see ``_row_tables``); zeroes the rx padding of a smaller record."""
    n_buf = np.uint64(b.shape[0])
    per_sc = n_rx_out * n_tx_out * 2
    for i in prange(offsets.shape[0]):
        body = offsets[i]
        if _kind(b, body, policy[i], n_tx_out) != _KIND_PERMUTED:
            continue
        dest = tab[np.int64(b[body + 15]) & 63]
        nbytes = 2 * np.int64(b[body + 8]) * n_tx_out
        step = 3 + 8 * nbytes
        for sc in range(30):
            bit = 3 + sc * step
            dst = i * 30 * per_sc + sc * per_sc
            _subcarrier_permuted(b, np.uint64(body + 20 + (bit >> 3)), np.uint64(bit & 7), np.uint64(nbytes),
                                 out, np.uint64(dst), n_buf, dest)
            for q in range(nbytes, per_sc):
                out[dst + q] = 0


@njit_parallel
def _unpack_placed(b, offsets, policy, out, n_rx_out, n_tx_out):
    """CSI of the records with fewer tx antennas than the array (mixed-shape files): each row's 2*Ntx
    values are placed separately, permuted or not, and the whole padding is zeroed."""
    per_sc = n_rx_out * n_tx_out * 2
    for i in prange(offsets.shape[0]):
        body = offsets[i]
        if _kind(b, body, policy[i], n_tx_out) != _KIND_PLACED:
            continue
        nrx = np.int64(b[body + 8])
        ntx = np.int64(b[body + 9])
        sel = np.int64(b[body + 15])
        permuted = policy[i] == 1
        run = 2 * ntx
        step = 3 + 16 * nrx * ntx
        payload = body + 20
        first = i * 30 * per_sc
        for q in range(30 * per_sc):
            out[first + q] = 0
        for sc in range(30):
            bit = 3 + sc * step
            rem = bit & 7
            src = payload + (bit >> 3)
            for r in range(nrx):
                d = (sel >> (2 * r)) & 3 if permuted else r
                dst = first + sc * per_sc + d * n_tx_out * 2
                s0 = src + r * run
                for u in range(run):
                    out[dst + u] = _pair_byte(b, s0 + u, rem)


def _unpack_csi(buf, offsets, policy, flat, n_rx_out, n_tx_out):
    """Run the three CSI kernels over the valid records; each handles its own kind of record."""
    _unpack_direct(buf, offsets, policy, flat, n_rx_out, n_tx_out)
    _unpack_permuted(buf, offsets, policy, flat, n_rx_out, n_tx_out, _row_tables(n_tx_out))
    _unpack_placed(buf, offsets, policy, flat, n_rx_out, n_tx_out)


# ----------------------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Intel5300Log:
    """The parsed content of one bfee log.

    Attributes
    ----------
    csi : ndarray or None
        ``(records, 30, Nrx_max, Ntx_max)`` complex64 raw CSI after the reference perm policy (None when
        read with ``raw_int8=True``).
    csi_int8 : ndarray or None
        ``(records, 30, Nrx_max, Ntx_max, 2)`` int8 real/imaginary pairs (only with ``raw_int8=True``).
    timestamp_low, bfee_count, nrx, ntx, rssi_a, rssi_b, rssi_c, noise, agc, antenna_sel, rate : ndarray
        One entry per record, in the wire types of ``read_bfee.c`` (see :data:`HEADER_FIELDS`);
        ``noise`` is signed (−127 means unknown); ``timestamp_low`` is in µs and wraps at 2³².
    perm : ndarray
        ``(records, 3)`` int8, the antenna permutation decoded from ``antenna_sel``, **0-based**.
    perm_applied : ndarray
        ``(records,)`` bool: whether the permutation was applied to that record.
    skipped : dict
        Records skipped, by reason (:data:`SKIP_REASONS`), plus ``invalid_perm``: records kept but left
        unpermuted because their perm failed the reference's rule or is not a true permutation.
    non_csi : dict
        Count of non-CSI records by code (e.g. ``{0xC1: 2998}``).
    n_bytes : int
        Size of the input in bytes.
    source : str or None
        The path read, if any.
    """

    csi: np.ndarray | None
    csi_int8: np.ndarray | None
    timestamp_low: np.ndarray
    bfee_count: np.ndarray
    nrx: np.ndarray
    ntx: np.ndarray
    rssi_a: np.ndarray
    rssi_b: np.ndarray
    rssi_c: np.ndarray
    noise: np.ndarray
    agc: np.ndarray
    antenna_sel: np.ndarray
    rate: np.ndarray
    perm: np.ndarray
    perm_applied: np.ndarray
    skipped: Mapping[str, int] = field(default_factory=dict)
    non_csi: Mapping[int, int] = field(default_factory=dict)
    n_bytes: int = 0
    source: str | None = None

    @property
    def n_records(self) -> int:
        """Number of valid CSI records."""
        return int(self.timestamp_low.shape[0])

    def __len__(self) -> int:
        return self.n_records

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """``(records, 30, Nrx_max, Ntx_max)``."""
        arr = self.csi if self.csi is not None else self.csi_int8
        return tuple(arr.shape[:4])

    @property
    def n_skipped(self) -> int:
        """Records skipped as unusable (``invalid_perm`` records are kept, so not counted here)."""
        return int(sum(v for k, v in self.skipped.items() if k != "invalid_perm"))

    def complex_csi(self) -> np.ndarray:
        """Raw CSI as complex64, whichever way the log was read."""
        if self.csi is not None:
            return self.csi
        return self.csi_int8.astype(np.float32).view(np.complex64)[..., 0]

    def total_rss(self) -> np.ndarray:
        """Total RSS in dBm per record (see :func:`rfbench.csi.scaling.total_rss`)."""
        from rfbench.csi.scaling import total_rss

        return total_rss(self.rssi_a, self.rssi_b, self.rssi_c, self.agc)

    def scaled_csi(self) -> np.ndarray:
        """CSI in absolute units, complex128 (see :func:`rfbench.csi.scaling.scaled_csi`). Pure: no caching."""
        from rfbench.csi.scaling import scaled_csi

        return scaled_csi(self.complex_csi(), self.rssi_a, self.rssi_b, self.rssi_c, self.agc, self.noise,
                          self.nrx, self.ntx)

    def headers(self) -> dict[str, np.ndarray]:
        """The per-record header arrays by name (including ``perm`` and ``perm_applied``)."""
        out = {name: getattr(self, name) for name in HEADER_FIELDS}
        out["perm"] = self.perm
        out["perm_applied"] = self.perm_applied
        return out

    def time_span_s(self) -> float:
        """Seconds from the first to the last record, unwrapping ``timestamp_low`` at 2³² µs."""
        if self.n_records < 2:
            return 0.0
        ts = self.timestamp_low.astype(np.int64)
        steps = np.diff(ts) % (1 << 32)
        return float(steps.sum()) / 1e6

    def summary(self) -> dict:
        """A JSON-ready summary: records, shapes, skipped by reason, non-CSI codes, time span, packet rate."""
        shapes: dict[str, int] = {}
        if self.n_records:
            pairs, counts = np.unique(self.nrx.astype(np.int64) * 10 + self.ntx, return_counts=True)
            shapes = {f"{p // 10}x{p % 10}": int(c) for p, c in zip(pairs, counts)}
        span = self.time_span_s()
        return {
            "source": self.source,
            "bytes": self.n_bytes,
            "records": self.n_records,
            "shape": list(self.shape),
            "shapes": shapes,
            "skipped": dict(self.skipped),
            "non_csi": {f"0x{code:02X}": count for code, count in sorted(self.non_csi.items())},
            "time_span_s": span,
            "packet_rate_hz": (self.n_records - 1) / span if span > 0 else None,
        }


def _as_buffer(source) -> tuple[np.ndarray, str | None]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return np.frombuffer(source, dtype=np.uint8), None
    if isinstance(source, np.ndarray):
        if source.dtype != np.uint8 or source.ndim != 1:
            raise FormatError("a bfee buffer must be a 1-D uint8 array")
        return np.ascontiguousarray(source), None
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            raise FormatError(f"{path}: is a directory, not a bfee log")
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            raise FormatError(f"{path}: no such file") from None
        except PermissionError:
            raise FormatError(f"{path}: permission denied") from None
        except OSError as exc:
            raise FormatError(f"{path}: cannot read ({exc.strerror or exc})") from None
        return np.frombuffer(data, dtype=np.uint8), str(path)
    raise TypeError(f"expected a path, bytes or a uint8 array, not {type(source).__name__}")


def read(source, *, raw_int8: bool = False) -> Intel5300Log:
    """Read an Intel 5300 bfee log.

    Parameters
    ----------
    source : str, path-like, bytes, bytearray, memoryview or 1-D uint8 ndarray
        A path to the log, or its bytes.
    raw_int8 : bool
        Return raw CSI as int8 (real, imaginary) pairs in ``csi_int8`` instead of complex64 ``csi``.

    Returns
    -------
    Intel5300Log
        Never raises for bad content: malformed records are skipped and counted in ``skipped``. A file
        with no valid record gives an empty log (``n_records == 0``); callers decide whether that is an error.

    Raises
    ------
    FormatError
        The path is missing, a directory, or unreadable.
    """
    buf, path = _as_buffer(source)
    bound = buf.shape[0] // MIN_BFEE_RECORD_BYTES + 1
    offsets = np.empty(bound, dtype=np.int64)
    policy = np.empty(bound, dtype=np.uint8)
    skips = np.zeros(len(SKIP_REASONS) + 1, dtype=np.int64)
    non_csi = np.zeros(256, dtype=np.int64)
    n, max_nrx, max_ntx = _scan(buf, offsets, policy, skips, non_csi)
    n = int(n)
    offsets = offsets[:n]
    policy = policy[:n]
    max_nrx, max_ntx = max(int(max_nrx), 1), max(int(max_ntx), 1)

    headers = {name: np.empty(n, dtype=dt) for name, dt in HEADER_FIELDS.items()}
    perm = np.empty((n, 3), dtype=np.int8)
    pairs = np.empty((n, _N_SUBCARRIERS, max_nrx, max_ntx, 2), dtype=np.int8 if raw_int8 else np.float32)
    _unpack_headers(buf, offsets, headers["timestamp_low"], headers["bfee_count"], headers["nrx"],
                    headers["ntx"], headers["rssi_a"], headers["rssi_b"], headers["rssi_c"], headers["noise"],
                    headers["agc"], headers["antenna_sel"], headers["rate"], perm)
    _unpack_csi(buf, offsets, policy, pairs.reshape(-1), max_nrx, max_ntx)
    skipped = {reason: int(skips[k]) for k, reason in enumerate(SKIP_REASONS)}
    skipped["invalid_perm"] = int(skips[len(SKIP_REASONS)])
    codes = np.flatnonzero(non_csi)
    return Intel5300Log(
        csi=None if raw_int8 else pairs.view(np.complex64)[..., 0],
        csi_int8=pairs if raw_int8 else None,
        perm=perm,
        perm_applied=policy == 1,
        skipped=skipped,
        non_csi={int(c): int(non_csi[c]) for c in codes},
        n_bytes=int(buf.shape[0]),
        source=path,
        **headers,
    )
