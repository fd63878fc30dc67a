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

import hashlib
import os
import threading
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from rfbench._jit import njit
from rfbench.errors import FormatError
from rfbench.io.files import input_errors

__all__ = [
    "Intel5300Log",
    "read",
    "RecordCounts",
    "count_records",
    "count_files",
    "SKIP_REASONS",
    "BFEE_CODE",
    "HEADER_FIELDS",
    "calc_len",
    "MIN_BFEE_RECORD_BYTES",
    "PARALLEL_MIN_RECORDS",
    "RecordSpans",
    "record_spans",
]

BFEE_CODE = 0xBB
#: The record rfbench's tree generator (``rfbench generate widar``) writes first in every Intel 5300 log: a
#: record of a code the Intel 5300 tools skip (not :data:`BFEE_CODE`; counted in ``non_csi``) whose body says
#: who wrote the log. A log that begins with exactly these bytes was generated, whether or not its tree's marker
#: file is still there (:attr:`RecordCounts.generated`; ``rfbench ingest`` then marks the manifest synthetic).
GENERATED_RECORD_CODE = 0x72
_GENERATED_BODY = b"rfbench synthetic Intel 5300 log"
GENERATED_RECORD = (1 + len(_GENERATED_BODY)).to_bytes(2, "big") + bytes([GENERATED_RECORD_CODE]) + _GENERATED_BODY
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
# unsigned constants for the unpack loops: with unsigned indices Numba emits no negative-index wraparound
_U0, _U1, _U2 = np.uint64(0), np.uint64(1), np.uint64(2)


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


@njit(inline="always")
def _read_header(b, body, i, timestamp_low, bfee_count, nrx, ntx, rssi_a, rssi_b, rssi_c, noise, agc, antenna_sel,
                 rate, perm):
    """Header fields of the record whose body starts at ``b[body]`` into entry ``i`` (read_bfee.c offsets)."""
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
    perm[i, 0] = sel & 3  # 0-based
    perm[i, 1] = (sel >> 2) & 3
    perm[i, 2] = (sel >> 4) & 3


@njit
def _scan(buf, offsets, policy, skips, non_csi, timestamp_low, bfee_count, nrx_out, ntx_out, rssi_a, rssi_b,
          rssi_c, noise, agc, antenna_sel, rate, perm):
    """Frame ``buf`` into records, validate every bfee record and read its header.

    Writes the body offset of each valid bfee record to ``offsets``, its perm policy to ``policy`` and its
    header fields (read_bfee.c offsets; ``perm`` 0-based from ``antenna_sel``) to the header arrays (all
    must hold at least ``len(buf) // MIN_BFEE_RECORD_BYTES + 1`` entries), counts skipped records
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
        _read_header(buf, body, n_valid, timestamp_low, bfee_count, nrx_out, ntx_out, rssi_a, rssi_b, rssi_c,
                     noise, agc, antenna_sel, rate, perm)
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
def _lane_at(b, s, rem):
    """read_bfee.c's value pair at byte ``s``, bit offset ``rem``: the low 8 bits of
    ``(b[s] >> rem) | (b[s+1] << (8 - rem))`` (real) and of the same one byte on (imaginary), as the 16-bit
    lane ``real | imaginary << 8`` (the byte path, for records too near the end of the buffer)."""
    real = ((np.int64(b[s]) | (np.int64(b[s + 1]) << 8)) >> rem) & 0xFF
    imag = ((np.int64(b[s + 1]) | (np.int64(b[s + 2]) << 8)) >> rem) & 0xFF
    return real | (imag << 8)


# How CSI is unpacked. read_bfee.c reads entry j of subcarrier s as the low 8 bits of
# (p[idx/8] >> idx%8) | (p[idx/8+1] << (8 - idx%8)) (real), then the same one byte further (imaginary),
# with idx = 3 + s*(3 + 16*Nrx*Ntx) + 16*j. So the values of a subcarrier are consecutive bytes of the bit
# stream shifted right by idx%8, which is constant within the subcarrier: entry j is the 16-bit lane j of
# that shifted stream (real byte low, imaginary byte high), and file row r starts 2*Ntx*r bytes after the
# subcarrier's first byte, so one 64-bit load yields a whole row (with Ntx = 1, all three rows, and the
# permutation is a choice of lanes). Each lane goes to the output through a 65,536-entry table: the bits of
# the complex64 value (real, imaginary) as one uint64 — one load and one 8-byte store per value, instead of
# two conversions and two stores (measured 2.8x faster; the table, 512 KiB, stays in cache) — or, for int8
# output, the lane itself as a uint16 (real byte, imaginary byte).
# Three kernels share the records (see `_is_fast`): a fast path for records of the array's full shape (one
# for Ntx = 1, one for Ntx = 2 or 3), which hands the others to a general byte path for padded records
# (mixed-shape files) and the very end of the buffer. They are
# separate on purpose: one function holding all three loops ran 3x slower (LLVM optimises each loop worse
# in the presence of the others; measured).
# The kernels are serial and release the GIL; `read` splits large files across threads itself.

_M16 = np.uint64(0xFFFF)


@njit(inline="always")
def _is_fast(b, body, n_rx_out, n_tx_out, n_buf):
    """Whether a fast path may unpack this record: it has the array's full shape and its last 64-bit load
    stays inside the buffer. Everything else (padding, mixed shapes, the very end of the buffer) takes the
    general byte path."""
    nrx = np.int64(b[body + 8])
    ntx = np.int64(b[body + 9])
    if nrx != n_rx_out or ntx != n_tx_out:
        return False
    step = 3 + 16 * nrx * ntx
    return body + 20 + (3 + 29 * step) // 8 + 2 * nrx * ntx + 8 <= n_buf


@njit(inline="always")
def _lane_of(p0, p1, d):
    """Shift (in bits) of the 16-bit lane holding the file row that output row ``d`` receives (Ntx = 1)."""
    return np.uint64(0 if p0 == d else (16 if p1 == d else 32))


@njit
def _unpack_fast_tx1(b, offsets, policy, out, lut, n_rx_out, n_tx_out, start, stop, rest):
    """Records with Ntx = 1 and the array's Nrx: all rows of a subcarrier are lanes of one 64-bit word, and
    the permutation (file row k to row perm[k]) is the choice of lane for each output row. The indices of
    the records it leaves go to ``rest``; returns their count."""
    n_buf = b.shape[0]
    n_rest = 0
    for i in range(start, stop):
        body = offsets[i]
        if not _is_fast(b, body, n_rx_out, n_tx_out, n_buf):
            rest[n_rest] = i
            n_rest += 1
            continue
        nrx = n_rx_out
        s0, s1, s2 = _U0, np.uint64(16), np.uint64(32)  # lane shifts of output rows 0, 1, 2
        if policy[i] == 1:  # only ever for Nrx = 3 (the reference's sum rule)
            sel = np.int64(b[body + 15])
            p0 = sel & 3
            p1 = (sel >> 2) & 3
            s0, s1, s2 = _lane_of(p0, p1, 0), _lane_of(p0, p1, 1), _lane_of(p0, p1, 2)
        step = 3 + 16 * nrx
        payload = body + 20
        first = np.uint64(i * 30 * nrx)
        for sc in range(30):
            bit = 3 + sc * step
            w = _load_u64(b, np.uint64(payload + (bit >> 3))) >> np.uint64(bit & 7)
            c = first + np.uint64(sc * nrx)
            out[c] = lut[(w >> s0) & _M16]
            if nrx >= 2:
                out[c + _U1] = lut[(w >> s1) & _M16]
                if nrx == 3:
                    out[c + _U2] = lut[(w >> s2) & _M16]
    return n_rest


@njit
def _unpack_fast_rows(b, offsets, policy, out, lut, n_rx_out, n_tx_out, start, stop, rest):
    """Records with Ntx = 2 or 3 and the array's shape: one 64-bit load per file row (a row is 2*Ntx bytes
    at the subcarrier's bit offset), stored at its output row perm[k] where the policy applies. The
    indices of the records it leaves go to ``rest``; returns their count."""
    n_buf = b.shape[0]
    nrx = n_rx_out
    ntx = n_tx_out
    per_sc = nrx * ntx
    row_bytes = np.uint64(2 * ntx)
    n_rest = 0
    for i in range(start, stop):
        body = offsets[i]
        if not _is_fast(b, body, n_rx_out, n_tx_out, n_buf):
            rest[n_rest] = i
            n_rest += 1
            continue
        d0, d1, d2 = _U0, np.uint64(ntx), np.uint64(2 * ntx)  # output offsets of file rows 0, 1, 2
        if policy[i] == 1:
            sel = np.int64(b[body + 15])
            d0 = np.uint64((sel & 3) * ntx)
            d1 = np.uint64(((sel >> 2) & 3) * ntx)
            d2 = np.uint64(((sel >> 4) & 3) * ntx)
        step = 3 + 16 * per_sc
        payload = body + 20
        first = i * 30 * per_sc
        for sc in range(30):
            bit = 3 + sc * step
            src = np.uint64(payload + (bit >> 3))
            rem = np.uint64(bit & 7)
            c = np.uint64(first + sc * per_sc)
            # (written out in full: through an inline helper this loop ran 7x slower, measured)
            w = _load_u64(b, src) >> rem
            cc = c + d0
            out[cc] = lut[w & _M16]
            out[cc + _U1] = lut[(w >> np.uint64(16)) & _M16]
            if ntx == 3:
                out[cc + _U2] = lut[(w >> np.uint64(32)) & _M16]
            if nrx >= 2:
                w = _load_u64(b, src + row_bytes) >> rem
                cc = c + d1
                out[cc] = lut[w & _M16]
                out[cc + _U1] = lut[(w >> np.uint64(16)) & _M16]
                if ntx == 3:
                    out[cc + _U2] = lut[(w >> np.uint64(32)) & _M16]
                if nrx == 3:
                    w = _load_u64(b, src + row_bytes + row_bytes) >> rem
                    cc = c + d2
                    out[cc] = lut[w & _M16]
                    out[cc + _U1] = lut[(w >> np.uint64(16)) & _M16]
                    if ntx == 3:
                        out[cc + _U2] = lut[(w >> np.uint64(32)) & _M16]
    return n_rest


@njit
def _unpack_general(b, offsets, policy, out, lut, n_rx_out, n_tx_out, records):
    """The records left by the fast paths (their indices in ``records``) — fewer antennas than the array
    (mixed-shape files, zero padding) or too near the end of the buffer for 64-bit loads: value by value,
    each to its final row (permuted where the policy says so)."""
    per_sc = n_rx_out * n_tx_out
    for j in range(records.shape[0]):
        i = records[j]
        body = offsets[i]
        nrx = np.int64(b[body + 8])
        ntx = np.int64(b[body + 9])
        sel = np.int64(b[body + 15])
        permuted = policy[i] == 1
        step = 3 + 16 * nrx * ntx
        payload = body + 20
        first = i * 30 * per_sc
        for q in range(30 * per_sc):
            out[first + q] = 0
        for sc in range(30):
            bit = 3 + sc * step
            src = payload + (bit >> 3)
            for r in range(nrx):
                d = (sel >> (2 * r)) & 3 if permuted else r
                for t in range(ntx):
                    out[first + sc * per_sc + d * n_tx_out + t] = lut[_lane_at(b, src + 2 * (r * ntx + t), bit & 7)]


_LUTS: dict = {}


def _lane_table(raw_int8: bool) -> np.ndarray:
    """The 65,536-entry table from a 16-bit lane (real byte low, imaginary byte high) to the output element:
    the lane itself (uint16, an int8 pair) or the bits of complex64(real, imaginary) as a uint64."""
    key = "int8" if raw_int8 else "complex64"
    if key not in _LUTS:
        lanes = np.arange(1 << 16, dtype=np.uint16)
        if raw_int8:
            table = lanes
        else:
            pairs = lanes.view(np.int8).reshape(-1, 2).astype(np.float32)  # little-endian: real, imaginary
            table = pairs.view(np.uint64).reshape(-1).copy()
        table.setflags(write=False)
        _LUTS[key] = table
    return _LUTS[key]


def _unpack_range(buf, offsets, policy, out, lut, n_rx_out, n_tx_out, start, stop):
    """CSI of records ``start..stop-1`` (one thread's share)."""
    fast = _unpack_fast_tx1 if n_tx_out == 1 else _unpack_fast_rows
    rest = np.empty(stop - start, dtype=np.int64)
    n_rest = fast(buf, offsets, policy, out, lut, n_rx_out, n_tx_out, start, stop, rest)
    if n_rest:
        _unpack_general(buf, offsets, policy, out, lut, n_rx_out, n_tx_out, rest[:n_rest])


#: Records below which a file is unpacked on the calling thread only: below it a thread hand-off costs
#: more than it saves (measured on 2 cores, more so when they are busy).
PARALLEL_MIN_RECORDS = 16384
_POOL = None


def _pool():
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=max(1, min(os.cpu_count() or 1, 8)), thread_name_prefix="rfbench-unpack")
    return _POOL


def _unpack_csi(buf, offsets, policy, pairs, n_rx_out, n_tx_out, threads=None):
    """Unpack the CSI of every valid record into ``pairs`` (float32 or int8, ``(records, 30, n_rx_out, n_tx_out, 2)``).
    With ``threads`` > 1 the records are split into contiguous ranges unpacked by that many threads (see
    :func:`read`); each writes only its own records, so the result never depends on it."""
    raw_int8 = pairs.dtype == np.int8
    out = pairs.reshape(-1).view(np.uint16 if raw_int8 else np.uint64)  # one element per complex value
    lut = _lane_table(raw_int8)
    n = offsets.shape[0]
    if threads is None:  # automatic: one per core, only for large files
        threads = (os.cpu_count() or 1) if n >= PARALLEL_MIN_RECORDS else 1
    threads = max(1, min(int(threads), n))
    if threads == 1:
        _unpack_range(buf, offsets, policy, out, lut, n_rx_out, n_tx_out, 0, n)
        return
    bounds = np.linspace(0, n, threads + 1).astype(np.int64)
    pool = _pool()
    futures = [pool.submit(_unpack_range, buf, offsets, policy, out, lut, n_rx_out, n_tx_out, int(bounds[k]),
                           int(bounds[k + 1])) for k in range(1, threads)]
    _unpack_range(buf, offsets, policy, out, lut, n_rx_out, n_tx_out, 0, int(bounds[1]))
    for f in futures:
        f.result()


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
        return _n_skipped(self.skipped)

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
        steps = np.diff(self.timestamp_low)  # uint32 arithmetic: each step is already taken modulo 2³²
        return float(steps.sum(dtype=np.int64)) / 1e6

    def summary(self) -> dict:
        """A JSON-ready summary: records, shapes, skipped by reason, non-CSI codes, time span, packet rate."""
        shapes: dict[str, int] = {}
        if self.n_records:
            counts = np.bincount(self.nrx.astype(np.intp) * 4 + self.ntx, minlength=16).tolist()
            shapes = {f"{p // 4}x{p % 4}": c for p, c in enumerate(counts) if c}
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


@dataclass(frozen=True)
class _Framing:
    """What the framing pass found: the valid records' body offsets, perm policies and headers, the skip and
    non-CSI counters, and the largest Nrx/Ntx (at least 1)."""

    n: int
    max_nrx: int
    max_ntx: int
    offsets: np.ndarray
    policy: np.ndarray
    headers: dict
    perm: np.ndarray
    skips: np.ndarray
    non_csi: np.ndarray


def _record_outputs(n_bytes: int) -> tuple:
    """:func:`_scan`'s per-record outputs ``(offsets, policy, header arrays by name, perm)`` for a buffer of
    ``n_bytes``: room for as many valid records as fit in it (never sized by a length the file contains)."""
    bound = n_bytes // MIN_BFEE_RECORD_BYTES + 1
    offsets = np.empty(bound, dtype=np.int64)
    policy = np.empty(bound, dtype=np.uint8)
    headers = {name: np.empty(bound, dtype=dt) for name, dt in HEADER_FIELDS.items()}
    return offsets, policy, headers, np.empty((bound, 3), dtype=np.int8)


def _frame(buf: np.ndarray, records: tuple | None = None) -> _Framing:
    """Run the framing kernel over ``buf`` with outputs sized by the file (never by a length it contains):
    ``records``, :func:`_record_outputs` of at least ``len(buf)`` bytes that the caller reuses, or new ones
    (the result's arrays are views of them)."""
    offsets, policy, headers, perm = records if records is not None else _record_outputs(buf.shape[0])
    skips = np.zeros(len(SKIP_REASONS) + 1, dtype=np.int64)
    non_csi = np.zeros(256, dtype=np.int64)
    n, max_nrx, max_ntx = _scan(buf, offsets, policy, skips, non_csi, *headers.values(), perm)
    n = int(n)
    return _Framing(n, max(int(max_nrx), 1), max(int(max_ntx), 1), offsets[:n], policy[:n],
                    {name: arr[:n] for name, arr in headers.items()}, perm[:n], skips, non_csi)


@dataclass(frozen=True)
class RecordSpans:
    """Where :func:`read`'s valid bfee records lie in a buffer, as found by its framing kernel.

    Attributes
    ----------
    offsets : ndarray of int64
        Byte offset of each valid record's body (its first header byte, just after the code byte), in file
        order: record ``i`` of ``read(source)`` starts at ``offsets[i]``.
    lengths : ndarray of int64
        Bytes of each body that the parser reads: the 20 header bytes and the ``calc_len(nrx, ntx)`` payload
        bytes (bytes that ``field_len`` claims beyond them are ignored by the parser and not counted).
    nrx, ntx : ndarray of uint8
        Each record's antenna counts, as stored.
    """

    offsets: np.ndarray
    lengths: np.ndarray
    nrx: np.ndarray
    ntx: np.ndarray

    def __len__(self) -> int:
        return int(self.offsets.shape[0])


def record_spans(source) -> RecordSpans:
    """The byte spans of a log's valid bfee records (header and CSI payload as stored, before any antenna
    permutation), from the framing kernel :func:`read` uses, so they are exactly the records ``read`` returns.

    ``source`` is as for :func:`read` (a path, bytes or a 1-D uint8 array); offsets index that buffer.
    Read-only: nothing is unpacked.

    Raises
    ------
    FormatError
        The path is missing, a directory, or unreadable.
    """
    buf, _ = _as_buffer(source)
    framing = _frame(buf)
    nrx = framing.headers["nrx"].copy()
    ntx = framing.headers["ntx"].copy()
    nn = nrx.astype(np.int64) * ntx.astype(np.int64)
    lengths = _BFEE_HEADER_BYTES + (_N_SUBCARRIERS * (nn * 16 + 3) + 7) // 8
    return RecordSpans(framing.offsets.copy(), lengths, nrx, ntx)


def _read_file_into(path, buf: np.ndarray, pos: int) -> tuple[np.ndarray, int]:
    """Append the bytes of the file at ``path`` to ``buf[:pos]``; return the buffer (``buf``, or a larger copy
    when the file does not fit) and the new end. Sized from ``fstat`` plus one spare byte, so a whole file takes
    one read and one that returns nothing, and a file that grew since ``fstat`` is still read to its end.
    Raises a one-line :class:`FormatError` when the file cannot be opened or read."""
    with input_errors(path):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            size = os.fstat(fd).st_size
            while True:
                if buf.shape[0] <= pos + size:
                    grown = np.empty(max(pos + size + 1, 2 * buf.shape[0]), dtype=np.uint8)
                    grown[:pos] = buf[:pos]
                    buf = grown
                got = os.readv(fd, [memoryview(buf)[pos:]])
                if not got:
                    return buf, pos
                pos += got
                size = max(size - got, 0)
        finally:
            os.close(fd)


def _read_file(path) -> np.ndarray:
    """The bytes of the file at ``path`` as a new uint8 array, read with as few system calls as the file
    allows (``pathlib``'s reader costs more than parsing a small log)."""
    buf, n = _read_file_into(path, np.empty(0, dtype=np.uint8), 0)
    return buf[:n]


def _as_buffer(source) -> tuple[np.ndarray, str | None]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return np.frombuffer(source, dtype=np.uint8), None
    if isinstance(source, np.ndarray):
        if source.dtype != np.uint8 or source.ndim != 1:
            raise FormatError("a bfee buffer must be a 1-D uint8 array")
        return np.ascontiguousarray(source), None
    if isinstance(source, (str, os.PathLike)):
        return _read_file(source), os.fspath(source)
    raise TypeError(f"expected a path, bytes or a uint8 array, not {type(source).__name__}")


def read(source, *, raw_int8: bool = False, threads: int | None = None) -> Intel5300Log:
    """Read an Intel 5300 bfee log.

    Parameters
    ----------
    source : str, path-like, bytes, bytearray, memoryview or 1-D uint8 ndarray
        A path to the log, or its bytes.
    raw_int8 : bool
        Return raw CSI as int8 (real, imaginary) pairs in ``csi_int8`` instead of complex64 ``csi``.
    threads : int, optional
        Threads that unpack the records (default: one per core for files of at least
        :data:`PARALLEL_MIN_RECORDS` records, else the calling thread only). Pass 1 when parsing many
        files in parallel yourself. The result does not depend on it.

    Returns
    -------
    Intel5300Log
        Never raises for bad content: malformed records are skipped and counted in ``skipped``. A file
        with no valid record gives an empty log (``n_records == 0``); callers decide whether that is an error.

    Raises
    ------
    FormatError
        The path is missing, a directory, or unreadable.

    Examples
    --------
    >>> import rfbench
    >>> from rfbench.io.writer import synthetic_log
    >>> log = rfbench.read_log(synthetic_log(5, nrx=3, ntx=1))
    >>> log.n_records, log.csi.shape, log.csi.dtype
    (5, (5, 30, 3, 1), dtype('complex64'))
    """
    buf, path = _as_buffer(source)
    return _parse(buf, path, raw_int8, threads)


def _parse(buf: np.ndarray, path: str | None, raw_int8: bool, threads: int | None, out=None,
           records: tuple | None = None) -> Intel5300Log:
    """:func:`read` of the bytes ``buf``. ``out(shape, dtype)``, when given, supplies the array the CSI is
    unpacked into, and ``records`` the framing kernel's per-record outputs (see :func:`_frame`): buffers the
    caller reuses from file to file, which the log then shares. Otherwise new ones."""
    framing = _frame(buf, records)
    n, max_nrx, max_ntx = framing.n, framing.max_nrx, framing.max_ntx
    offsets, policy, headers, perm, skips, non_csi = (framing.offsets, framing.policy, framing.headers,
                                                      framing.perm, framing.skips, framing.non_csi)
    shape, dtype = (n, _N_SUBCARRIERS, max_nrx, max_ntx, 2), np.int8 if raw_int8 else np.float32
    pairs = np.empty(shape, dtype=dtype) if out is None else out(shape, dtype)
    _unpack_csi(buf, offsets, policy, pairs, max_nrx, max_ntx, threads)
    return Intel5300Log(
        csi=None if raw_int8 else pairs.view(np.complex64)[..., 0],
        csi_int8=pairs if raw_int8 else None,
        perm=perm,
        perm_applied=policy == 1,
        skipped=_skipped(skips),
        non_csi=_non_csi(non_csi),
        n_bytes=int(buf.shape[0]),
        source=path,
        **headers,
    )


def _n_skipped(skipped: Mapping[str, int]) -> int:
    return int(sum(v for k, v in skipped.items() if k != "invalid_perm"))


def _skipped(skips: np.ndarray) -> dict[str, int]:
    return dict(zip((*SKIP_REASONS, "invalid_perm"), skips.tolist()))


def _non_csi(non_csi: np.ndarray) -> dict[int, int]:
    codes = np.flatnonzero(non_csi)
    return dict(zip(codes.tolist(), non_csi[codes].tolist()))


@dataclass(frozen=True)
class RecordCounts:
    """What :func:`count_records` found in a log: the counts :func:`read` reports, without the CSI.

    Attributes
    ----------
    n_records : int
        Valid CSI records (``read(source).n_records``).
    max_nrx, max_ntx : int
        The largest Nrx and Ntx of any valid record (0 when there is none).
    skipped, non_csi : dict
        As :attr:`Intel5300Log.skipped` and :attr:`Intel5300Log.non_csi`.
    n_bytes : int
        Size of the input in bytes.
    sha256 : str or None
        Hex sha256 of the bytes counted, when asked for (``count_files(..., sha256=True)``), else None.
    generated : bool
        The log begins with :data:`GENERATED_RECORD`: rfbench's generator wrote it.
    """

    n_records: int
    max_nrx: int
    max_ntx: int
    skipped: Mapping[str, int]
    non_csi: Mapping[int, int]
    n_bytes: int
    sha256: str | None = None
    generated: bool = False

    @property
    def n_skipped(self) -> int:
        """Records skipped as unusable (``invalid_perm`` records are kept, so not counted here)."""
        return _n_skipped(self.skipped)


#: The largest read buffer a thread keeps between :func:`count_files` calls (a larger batch gets a buffer of its
#: own, freed afterwards).
KEEP_BUFFER_BYTES = 64 << 20
_thread_state = threading.local()


@njit
def _scan_files(buf, bounds, counts, skips, non_csi, offsets, policy, timestamp_low, bfee_count, nrx, ntx, rssi_a,
                rssi_b, rssi_c, noise, agc, antenna_sel, rate, perm):
    """:func:`_scan` over each file ``buf[bounds[f]:bounds[f + 1]]`` of a batch, in one call: its counts to
    ``counts[f] = (n_valid, max_nrx, max_ntx)``, ``skips[f]`` and ``non_csi[f]``. The per-record outputs are
    scratch, overwritten file by file (each must hold the largest file's bound, see :func:`_scan`)."""
    for f in range(bounds.shape[0] - 1):
        n, r, t = _scan(buf[bounds[f]:bounds[f + 1]], offsets, policy, skips[f], non_csi[f], timestamp_low,
                        bfee_count, nrx, ntx, rssi_a, rssi_b, rssi_c, noise, agc, antenna_sel, rate, perm)
        counts[f, 0] = n
        counts[f, 1] = r
        counts[f, 2] = t


def _scratch(n_bytes: int) -> tuple:
    """:func:`_record_outputs` for files of up to ``n_bytes``, kept by the calling thread for its next batch."""
    kept = getattr(_thread_state, "scratch", None)
    if kept is not None and kept[0] >= n_bytes:
        return kept[1]
    outputs = _record_outputs(n_bytes)
    if n_bytes <= KEEP_BUFFER_BYTES:
        _thread_state.scratch = (n_bytes, outputs)
    return outputs


def _read_batch(paths) -> tuple[np.ndarray, list[int], list]:
    """The files' bytes one after another in a buffer the calling thread reuses (valid until its next call),
    their bounds in it, and a :class:`FormatError` (or None) per file.

    A batch reads into memory allocated once, not per file: on a pool of threads, a fresh large buffer per file
    is a fresh memory mapping, and the page faults and unmappings of threads of one process serialise in the
    kernel (measured: ingest on two threads was no faster than on one)."""
    buf = getattr(_thread_state, "buffer", None)
    if buf is None:
        buf = np.empty(1 << 20, dtype=np.uint8)
    bounds, errors = [0], []
    pos = 0
    for path in paths:
        error = None
        try:
            buf, pos = _read_file_into(path, buf, pos)
        except FormatError as exc:  # pos is unchanged: nothing of this file is kept
            error = exc
        bounds.append(pos)
        errors.append(error)
    if buf.shape[0] <= KEEP_BUFFER_BYTES:
        _thread_state.buffer = buf
    return buf, bounds, errors


def _count_batch(buf: np.ndarray, bounds, sha256: bool = False) -> list[RecordCounts]:
    # hashed from the read buffer before the kernel runs over it: each file's bytes are read from disk once
    digests = [hashlib.sha256(memoryview(buf)[bounds[f]:bounds[f + 1]]).hexdigest() if sha256 else None
               for f in range(len(bounds) - 1)]
    bounds = np.asarray(bounds, dtype=np.int64)
    n_files = bounds.shape[0] - 1
    counts = np.zeros((n_files, 3), dtype=np.int64)
    skips = np.zeros((n_files, len(SKIP_REASONS) + 1), dtype=np.int64)
    non_csi = np.zeros((n_files, 256), dtype=np.int64)
    offsets, policy, headers, perm = _scratch(int(np.diff(bounds).max()) if n_files else 0)
    _scan_files(buf, bounds, counts, skips, non_csi, offsets, policy, *headers.values(), perm)
    mark = len(GENERATED_RECORD)
    return [RecordCounts(n_records=int(c[0]), max_nrx=int(c[1]), max_ntx=int(c[2]), skipped=_skipped(skips[f]),
                         non_csi=_non_csi(non_csi[f]), n_bytes=int(bounds[f + 1] - bounds[f]), sha256=digests[f],
                         generated=bool(bounds[f + 1] - bounds[f] >= mark
                                        and buf[bounds[f]:bounds[f] + mark].tobytes() == GENERATED_RECORD))
            for f, c in enumerate(counts)]


def count_files(paths, *, sha256: bool = False) -> list:
    """:func:`count_records` for many files at once: one read buffer and one kernel call per batch, so a pool
    of threads counting batches runs in parallel (the kernel and hashlib release the GIL). Returns, per path,
    its :class:`RecordCounts`, or the :class:`FormatError` saying why it could not be read. With ``sha256``,
    each file is also hashed from the same buffer (one read from disk serves both)."""
    paths = list(paths)
    buf, bounds, errors = _read_batch(paths)
    counts = _count_batch(buf, bounds, sha256)
    return [err if err is not None else c for c, err in zip(counts, errors)]


def count_records(source, *, sha256: bool = False) -> RecordCounts:
    """Frame and validate a log without unpacking its CSI: the record counts :func:`read` would report.

    It runs :func:`read`'s framing kernel, which decides whether each record is valid, so ``n_records``,
    ``skipped`` and ``non_csi`` equal those of ``read(source)``. ``source`` is as for :func:`read`; for many
    files, :func:`count_files`. With ``sha256``, the bytes counted are hashed too (``RecordCounts.sha256``).

    Raises
    ------
    FormatError
        The path is missing, a directory, or unreadable.
    """
    if isinstance(source, (str, os.PathLike)):
        result = count_files([source], sha256=sha256)[0]
        if isinstance(result, FormatError):
            raise result
        return result
    buf, _ = _as_buffer(source)
    return _count_batch(buf, [0, buf.shape[0]], sha256)[0]
