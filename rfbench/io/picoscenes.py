"""PicoScenes ``.csi`` files: the RXS frames' RxSBasic, ExtraInfo and CSI segments.

A PicoScenes file is a sequence of RXS frames (PicoScenes' ``ModularPicoScenesRxFrame``), little-endian:
``frameLength`` (u32, the bytes after it), ``magicWord`` 0x20150315 (u32), ``frameVersion`` 1 (u16),
``numRxSegments`` (u8), then that many segments, each ``segmentLength`` (u32, the bytes after it), a name
(u8 length, then the bytes: ``RxSBasic``, ``ExtraInfo``, ``CSI``, ``MVMExtra``, ``PilotCSI``, ...), a version
(u16) and the body; the rest of the frame is the received MPDU (its 802.11 header gives the source address and
sequence number). The layouts of each segment version are those of PicoScenes' ``rxs_parsing_core``, as csiread
1.4.1's ``_picoscenes.h`` transcribes them: RxSBasic v1–v3, ExtraInfo v1 (fields present by its feature
code), CSI v1–v4.

The CSI payload depends on the front end (the CSI segment's ``deviceType``):

- Intel 5300 (0x5300): the bfee bit stream (per tone 3 bits, then 8-bit real and imaginary per rx, tx), with
  ``numTx + numESS`` streams from the buffer length (``(csiBufferLength - 12) / 60 / numRx``); values in
  file order (no antenna permutation, as csiread);
- QCA9300 (0x9300): 10-bit two's-complement values, four per five bytes (imaginary, real, imaginary, real),
  rx fastest, then stream, then tone; streams from the buffer length (140 bytes per stream and rx at 20 MHz,
  285 above);
- Intel AX200/AX210 (0x2000, 0x2100, CSI v4): int16 pairs, tx outermost, then rx, then tone, every tone kept
  (pilots included: csiread drops the pilot tones; see docs/parse.md);
- SDR (USRP 0x1234, virtual SDR 0x1000): ``numTones`` int16 subcarrier indices, then a signal matrix of complex
  doubles (rounded to complex64 here).

Segments other than these three are skipped and counted (``decided["segments_skipped"]`` and the per-frame
``segments_skipped``); frames without a CSI segment, with a segment overrunning the frame or a CSI payload
overrunning its segment are skipped and counted by reason; a damaged frame header is skipped by resynchronising
on the next plausible RXS frame header. No allocation is sized from a length read from the file.
"""

from __future__ import annotations

import os
import struct
from typing import Mapping

import numpy as np

from rfbench._jit import njit
from rfbench.errors import FormatError
from rfbench.io.hwlog import (
    WORD_PAD,
    HardwareLog,
    byte_words,
    check_padding,
    next_plausible,
    on_two_threads,
    read_reused,
)

__all__ = ["FORMAT", "sniff", "read", "synthesize", "MAGIC", "DEVICES", "SKIP_REASONS", "OTHER_SEGMENTS",
           "encode_frame", "csi_segment", "basic_segment", "extra_info_segment"]

FORMAT = "picoscenes"
MAGIC = 0x20150315
#: Front ends, by the CSI segment's device type.
DEVICES: Mapping[int, str] = {0x5300: "iwl5300", 0x9300: "qca9300", 0x2000: "iwlmvm-ax200", 0x2100: "iwlmvm-ax210",
                              0x1234: "usrp", 0x1000: "virtual-sdr"}
_KIND = {0x5300: 1, 0x9300: 2, 0x2000: 3, 0x2100: 3, 0x1234: 4, 0x1000: 4}
#: Record skip reasons, in the order of the framing kernel's counters, then those of :func:`read`.
SKIP_REASONS = ("truncated", "garbage", "bad_segment", "no_csi", "bad_csi")
_TRUNCATED, _GARBAGE, _BAD_SEGMENT, _NO_CSI = range(4)
#: Segment names read (the first three) and skipped by name (the rest; any other counts as "other").
_READ_SEGMENTS = ("RxSBasic", "ExtraInfo", "CSI")
OTHER_SEGMENTS = ("MVMExtra", "PilotCSI", "LegacyCSI", "BasebandSignal", "PreEQSymbols", "CSI2", "other")
_NAMES = _READ_SEGMENTS + OTHER_SEGMENTS[:-1]
#: Rows of the framing kernel's table (field-major: one column per frame).
_COLUMNS = ("basic", "basic_ver", "basic_len", "extra", "extra_ver", "extra_len", "csi", "csi_ver", "csi_len",
            "mpdu", "mpdu_len", "n_other")
_FRAME_HEADER = 11  # frameLength, magicWord, frameVersion, numRxSegments
_MIN_FRAME = _FRAME_HEADER + 7 + 3  # one segment with a 3-character name and an empty body


def _name_table() -> tuple[np.ndarray, np.ndarray]:
    width = max(len(n) for n in _NAMES)
    table = np.zeros((len(_NAMES), width), dtype=np.uint8)
    lengths = np.zeros(len(_NAMES), dtype=np.int64)
    for i, name in enumerate(_NAMES):
        table[i, :len(name)] = np.frombuffer(name.encode(), dtype=np.uint8)
        lengths[i] = len(name)
    return table, lengths


_NAME_TABLE, _NAME_LENGTHS = _name_table()

# ----------------------------------------------------------------------------------------------------------
# Kernels (private; validate nothing, no I/O)
# ----------------------------------------------------------------------------------------------------------


@njit(inline="always")
def _u16(b, o):
    return np.int64(b[o]) | (np.int64(b[o + 1]) << 8)


@njit(inline="always")
def _u32(b, o):
    return np.int64(b[o]) | (np.int64(b[o + 1]) << 8) | (np.int64(b[o + 2]) << 16) | (np.int64(b[o + 3]) << 24)


@njit(inline="always")
def _frame_start(b, p, n):
    """Whether ``b[p:]`` starts a plausible RXS frame: its length covers the frame header and fits in the buffer,
    magic 0x20150315, frame version 1."""
    if n - p < _MIN_FRAME:
        return False
    length = _u32(b, p)
    return length >= _FRAME_HEADER - 4 and p + 4 + length <= n and _u32(b, p + 4) == MAGIC and _u16(b, p + 8) == 1


@njit(inline="always")
def _resumes_at(b, p, n, big, link):
    """:func:`_frame_start` in the signature :func:`rfbench.io.hwlog.next_plausible` calls (``big`` and
    ``link`` unused)."""
    return _frame_start(b, p, n)


@njit
def _frames(b, names, name_lengths, table, other, skips):
    """Walk the RXS frames of ``b``.

    For each frame whose segments all fit inside it and which holds a CSI segment, writes a column of ``table``
    (``_COLUMNS`` rows: body offset, version and body length of its RxSBasic, ExtraInfo and CSI segments, -1 where
    absent; the MPDU's offset and length; the number of other segments) and counts its other segments by name
    into ``other`` (indexed like OTHER_SEGMENTS). Counts skipped frames into ``skips`` (SKIP_REASONS order).
    Frames past ``table``'s last column are counted, not stored. Returns the count of frames read.

    Past a damaged frame header the walk resumes at the next byte where a plausible one starts (``garbage``);
    a frame cut off by the end of the buffer ends it (``truncated``). Every step advances: O(len(b)).
    """
    n = b.shape[0]
    pos = 0
    count = 0
    n_named = names.shape[0]
    row = np.empty(table.shape[0], dtype=np.int64)  # the frame's column, copied into the table when kept
    while pos < n:
        if not _frame_start(b, pos, n):
            found = next_plausible(b, pos + 1, _MIN_FRAME, _resumes_at, False, 0)
            if found < 0:
                skips[_TRUNCATED] += 1
                break
            skips[_GARBAGE] += 1
            pos = found
        end = pos + 4 + _u32(b, pos)
        n_seg = np.int64(b[pos + 10])
        cur = pos + _FRAME_HEADER
        for k in range(row.shape[0]):
            row[k] = -1
        row[11] = 0
        ok = True
        for _ in range(n_seg):
            if end - cur < 7:
                ok = False
                break
            seg_len = _u32(b, cur)
            name_len = np.int64(b[cur + 4])
            if seg_len < 3 + name_len or cur + 4 + seg_len > end:
                ok = False
                break
            which = -1
            for k in range(n_named):
                if name_lengths[k] == name_len:
                    same = True
                    for c in range(name_len):
                        if b[cur + 5 + c] != names[k, c]:
                            same = False
                            break
                    if same:
                        which = k
                        break
            body = cur + 7 + name_len
            if 0 <= which < 3 and row[3 * which] < 0:
                row[3 * which] = body
                row[3 * which + 1] = _u16(b, cur + 5 + name_len)
                row[3 * which + 2] = seg_len - 3 - name_len
            else:
                row[11] += 1
                other[(which - 3) if which >= 3 else other.shape[0] - 1] += 1
            cur += 4 + seg_len
        if not ok:
            skips[_BAD_SEGMENT] += 1
        elif row[6] < 0:
            skips[_NO_CSI] += 1
        else:
            row[9] = cur
            row[10] = end - cur
            if count < table.shape[1]:  # past the table's columns: counted only
                for k in range(row.shape[0]):
                    table[k, count] = row[k]
            count += 1
        pos = end
    return count


#: ExtraInfo v1 fields in file order: (feature-code bit, name, bytes, signed).
EXTRA_FIELDS = (
    (1, "extra_length", 2, False), (0, "extra_version", 8, False), (2, "extra_mac_current", 6, False),
    (3, "extra_mac_rom", 6, False), (4, "extra_chansel", 4, False), (5, "extra_bmode", 1, False),
    (6, "extra_evm", 20, False), (7, "extra_tx_chainmask", 1, False), (8, "extra_rx_chainmask", 1, False),
    (9, "extra_tx_power", 1, False), (10, "extra_cf", 8, False), (11, "extra_tx_tsf", 4, False),
    (12, "extra_last_hw_tx_tsf", 4, False), (13, "extra_channel_flags", 2, False), (14, "extra_tx_ness", 1, False),
    (15, "extra_tuning_policy", 1, False), (16, "extra_pll_rate", 2, False), (17, "extra_pll_refdiv", 1, False),
    (18, "extra_pll_clock_select", 1, False), (19, "extra_agc", 1, False), (20, "extra_antenna_selection", 1, False),
    (21, "extra_sampling_rate", 8, False), (22, "extra_cfo", 4, True), (23, "extra_sfo", 4, True),
    (24, "extra_temperature", 1, True),
)
_EXTRA_BITS = np.array([f[0] for f in EXTRA_FIELDS], dtype=np.int64)
_EXTRA_SIZES = np.array([f[2] for f in EXTRA_FIELDS], dtype=np.int64)


@njit
def _extra_info(words, offsets, lengths, bits, sizes, out):
    """ExtraInfo v1 bodies: the feature code (u32) into ``out[i, 0]``, then each field its code announces, in
    file order (``bits``/``sizes`` as EXTRA_FIELDS), into ``out[i, 1 + k]`` (little-endian, unsigned; the 20
    EVM bytes are not kept: 0); absent fields, and fields past the segment's end, are 0. Records with offset
    -1 have no ExtraInfo: all 0. ``words[q]`` is the little-endian 64-bit word at byte ``q``
    (:func:`~rfbench.io.hwlog.byte_words`): a field is one load, masked to its size.

    Record-major, unlike the other tables: a record's fields are read in file order, so its row is written
    (and cleared) contiguously."""
    for i in range(offsets.shape[0]):
        for k in range(out.shape[1]):
            out[i, k] = 0
        o = offsets[i]
        if o < 0 or lengths[i] < 4:
            continue
        end = o + lengths[i]
        code = words[np.uint64(o)] & np.uint64(0xFFFFFFFF)
        out[i, 0] = np.int64(code)
        p = o + 4
        for k in range(bits.shape[0]):
            if not (code >> np.uint64(bits[k])) & np.uint64(1):
                continue
            size = sizes[k]
            if p + size > end:
                break
            if size < 8:
                out[i, 1 + k] = np.int64(words[np.uint64(p)] & ((np.uint64(1) << np.uint64(8 * size)) - np.uint64(1)))
            elif size == 8:
                out[i, 1 + k] = np.int64(words[np.uint64(p)])
            p += size


@njit
def _fields(b, words, offsets, versions, lengths, where, sizes, flags, min_length, defaults, out):
    """Fixed-layout fields of each record's segment: record ``i``'s body is at ``offsets[i]`` (-1: none), of
    version ``versions[i]`` and ``lengths[i]`` bytes. For a version ``v`` in 1..len(min_length) whose body holds
    ``min_length[v-1]`` bytes, field ``f`` is the ``sizes[f]``-byte integer at ``where[v-1, f]`` of the body
    (-1: this version has no such field, ``defaults[f]``), little-endian unless ``flags[f] & 2`` (big), sign-
    extended where ``flags[f] & 1``, into ``out[f, i]``; ``out[-1, i]`` is 1. Other records get the defaults and
    ``out[-1, i] = 0``. Unsigned 64-bit fields keep their bits (read them back as uint64).

    A little-endian field is one load of the 64-bit word at its first byte (``words``, :func:`~rfbench.io.hwlog.
    byte_words` of ``b``) masked to its size; a big-endian one is read byte by byte from ``b``."""
    n_fields = sizes.shape[0]
    n = offsets.shape[0]
    for i in range(n):  # which records have a body of a known version, long enough
        v = versions[i]
        known = offsets[i] >= 0 and 1 <= v <= min_length.shape[0]
        out[n_fields, i] = 1 if known and lengths[i] >= min_length[v - 1] else 0
    for f in range(n_fields):  # field by field: its size, flags and default stay in registers
        size = sizes[f]
        big = flags[f] & 2
        signed = flags[f] & 1 and size < 8
        mask = (np.uint64(1) << np.uint64(8 * size)) - np.uint64(1) if size < 8 else ~np.uint64(0)
        top = np.uint64(8 * size - 1)
        row = out[f]
        for i in range(n):
            at = where[versions[i] - 1, f] if out[n_fields, i] else -1
            if at < 0:
                row[i] = defaults[f]
                continue
            o = offsets[i] + at
            if big:
                value = np.uint64(0)
                for c in range(size):
                    value |= np.uint64(b[o + size - 1 - c]) << np.uint64(8 * c)
            else:
                value = words[np.uint64(o)] & mask
            if signed and (value >> top) & np.uint64(1):
                value |= ~mask
            row[i] = np.int64(value)


_U1, _U2, _U3, _U4, _U5, _U8, _U10 = (np.uint64(v) for v in (1, 2, 3, 4, 5, 8, 10))
_U16, _U20, _U24, _U30, _U32 = (np.uint64(v) for v in (16, 20, 24, 30, 32))


@njit(inline="always")
def _ten_bits(w):
    """The 10-bit two's-complement value in the low bits of ``w``, as float32."""
    v = np.int64(w & np.uint64(0x3FF))
    return np.float32(v - 1024 if v & 512 else v)


@njit
def _decode(b, kind, payload, file_tones, tones, nrx, ntx, aux, out, shape):
    """The CSI of record ``i`` (``kind[i]``: 1 Intel 5300, 2 QCA9300, 3 Intel MVM) from byte ``payload[i]`` into
    record ``i`` of ``out`` (flat float32 real/imaginary pairs of an array ``shape = (records, T, R, X)``) at
    ``[:tones[i], :nrx[i], :ntx[i]]``, zeros elsewhere in the record; SDR records (kind 4) get only the zeros.
    ``aux[i]`` for MVM: 1 where firmware 67/68 leaves a gap at 160 MHz HE (tones 996–1023 of the
    ``file_tones[i]`` in the file, skipped), 2 at 160 MHz VHT (242–255), else 0. Sizes were checked by the
    caller.

    Layouts: csiread 1.4.1 ``_picoscenes.pyx`` (``parseCSI5300``, ``parseCSI9300``, ``parseCSIMVM`` without
    its pilot removal), after PicoScenes' ``rxs_parsing_core``."""
    s_x = 2
    s_r = shape[3] * 2
    s_t = shape[2] * s_r
    s_i = shape[1] * s_t
    for i in range(kind.shape[0]):
        T, R, X = tones[i], nrx[i], ntx[i]
        base = i * s_i
        if T < shape[1] or R < shape[2] or X < shape[3] or kind[i] == 4:
            for q in range(s_i):
                out[base + q] = 0
        p = payload[i]
        k = kind[i]
        if k == 1:  # Intel 5300: the bfee bit stream
            index = 0
            for t in range(T):
                index += 3
                rem = index & 7
                for r in range(R):
                    o = base + t * s_t + r * s_r
                    for x in range(X):
                        q = p + (index >> 3)
                        re = ((np.int64(b[q]) | (np.int64(b[q + 1]) << 8)) >> rem) & 0xFF
                        im = ((np.int64(b[q + 1]) | (np.int64(b[q + 2]) << 8)) >> rem) & 0xFF
                        out[o + x * s_x] = np.float32(re - 256 if re >= 128 else re)
                        out[o + x * s_x + 1] = np.float32(im - 256 if im >= 128 else im)
                        index += 16
        elif k == 2 and X == 1 and R == shape[2] and shape[3] == 1:
            # QCA9300 with one stream and the array's rx count: file order is the array's order. Unsigned
            # indices: Numba then emits no negative-index wraparound (measured 2x faster).
            d = np.uint64(base)
            j = np.uint64(p)
            for _ in range((T * R) >> 1):
                w = (np.uint64(b[j]) | (np.uint64(b[j + _U1]) << _U8) | (np.uint64(b[j + _U2]) << _U16)
                     | (np.uint64(b[j + _U3]) << _U24) | (np.uint64(b[j + _U4]) << _U32))
                out[d] = _ten_bits(w >> _U10)
                out[d + _U1] = _ten_bits(w)
                out[d + _U2] = _ten_bits(w >> _U30)
                out[d + _U3] = _ten_bits(w >> _U20)
                d += _U4
                j += _U5
        elif k == 2:  # QCA9300: four 10-bit values per five bytes, rx fastest, then stream, then tone
            t = 0
            r = 0
            x = 0
            for q in range((T * R * X) >> 1):
                j = p + 5 * q
                w = (np.int64(b[j]) | (np.int64(b[j + 1]) << 8) | (np.int64(b[j + 2]) << 16)
                     | (np.int64(b[j + 3]) << 24) | (np.int64(b[j + 4]) << 32))
                for h in range(2):
                    im = (w >> (20 * h)) & 0x3FF
                    re = (w >> (20 * h + 10)) & 0x3FF
                    o = base + t * s_t + r * s_r + x * s_x
                    out[o] = np.float32(re - 1024 if re & 512 else re)
                    out[o + 1] = np.float32(im - 1024 if im & 512 else im)
                    r += 1
                    if r == R:
                        r = 0
                        x += 1
                        if x == X:
                            x = 0
                            t += 1
        elif k == 3:  # Intel MVM: int16 pairs, tx, rx, tone
            o = p
            gap_lo = 1 << 30
            gap_hi = 0
            if aux[i] == 1:
                gap_lo, gap_hi = 996, 1024
            elif aux[i] == 2:
                gap_lo, gap_hi = 242, 256
            for x in range(X):
                for r in range(R):
                    g = 0
                    for t in range(file_tones[i]):
                        if gap_lo <= t < gap_hi:
                            o += 4
                            continue
                        re = _u16(b, o)
                        im = _u16(b, o + 2)
                        d = base + g * s_t + r * s_r + x * s_x
                        out[d] = np.float32(re - 65536 if re >= 32768 else re)
                        out[d + 1] = np.float32(im - 65536 if im >= 32768 else im)
                        o += 4
                        g += 1


# ----------------------------------------------------------------------------------------------------------
# Segment layouts (offsets in the body) and subcarrier indices
# ----------------------------------------------------------------------------------------------------------

#: RxSBasic fields per version: name -> (offset, dtype).
_BASIC = {
    1: {"device_type": (0, "<u2"), "timestamp": (2, "<u8"), "center_freq": (10, "<i2"), "control_freq": (10, "<i2"),
        "packet_format": (12, "u1"), "cbw": (13, "<u2"), "packet_cbw": (13, "<u2"), "guard_interval": (15, "<u2"),
        "mcs": (17, "u1"), "num_sts": (18, "u1"), "num_ess": (19, "u1"), "num_rx": (20, "u1"),
        "noise_floor": (21, "i1"), "rssi": (22, "i1"), "rssi_ctl0": (23, "i1"), "rssi_ctl1": (24, "i1"),
        "rssi_ctl2": (25, "i1")},
    2: {"device_type": (0, "<u2"), "timestamp": (2, "<u8"), "center_freq": (10, "<i2"), "control_freq": (10, "<i2"),
        "packet_format": (12, "u1"), "cbw": (13, "<u2"), "packet_cbw": (13, "<u2"), "guard_interval": (15, "<u2"),
        "mcs": (17, "u1"), "num_sts": (18, "u1"), "num_ess": (19, "u1"), "num_rx": (20, "u1"),
        "noise_floor": (23, "i1"), "rssi": (24, "i1"), "rssi_ctl0": (25, "i1"), "rssi_ctl1": (26, "i1"),
        "rssi_ctl2": (27, "i1")},
    3: {"device_type": (0, "<u2"), "timestamp": (2, "<u8"), "center_freq": (10, "<i2"), "control_freq": (12, "<i2"),
        "cbw": (14, "<u2"), "packet_format": (16, "u1"), "packet_cbw": (17, "<u2"), "guard_interval": (19, "<u2"),
        "mcs": (21, "u1"), "num_sts": (22, "u1"), "num_ess": (23, "u1"), "num_rx": (24, "u1"),
        "noise_floor": (27, "i1"), "rssi": (28, "i1"), "rssi_ctl0": (29, "i1"), "rssi_ctl1": (30, "i1"),
        "rssi_ctl2": (31, "i1")},
}
_BASIC_SIZE = {1: 26, 2: 28, 3: 32}
#: CSI segment header fields per version: name -> (offset, dtype); "payload" is where the CSI buffer starts.
_CSI_HEADER = {
    1: {"device": (0, "<u2"), "format": (2, "i1"), "cbw": (3, "<u2"), "carrier_freq": (5, "<u8"),
        "sampling_rate": (13, "<u8"), "subcarrier_bandwidth": (21, "<u4"), "tones": (25, "<u2"), "tx": (27, "u1"),
        "rx": (28, "u1"), "ess": (29, "u1"), "antsel": (30, "u1"), "buffer": (31, "<u4"), "payload": 35},
    2: {"device": (0, "<u2"), "format": (2, "i1"), "cbw": (3, "<u2"), "carrier_freq": (5, "<u8"),
        "sampling_rate": (13, "<u8"), "subcarrier_bandwidth": (21, "<u4"), "tones": (25, "<u2"), "tx": (27, "u1"),
        "rx": (28, "u1"), "ess": (29, "u1"), "antsel": (30, "u1"), "offset": (31, "<i2"), "buffer": (33, "<u4"),
        "payload": 37},
    3: {"device": (0, "<u2"), "format": (2, "i1"), "cbw": (3, "<u2"), "carrier_freq": (5, "<u8"),
        "sampling_rate": (13, "<u8"), "subcarrier_bandwidth": (21, "<u4"), "tones": (25, "<u2"), "tx": (27, "u1"),
        "rx": (28, "u1"), "ess": (29, "u1"), "num_csi": (30, "<u2"), "antsel": (32, "u1"), "offset": (33, "<i2"),
        "buffer": (35, "<u4"), "payload": 39},
    4: {"device": (0, "<u2"), "firmware": (2, "u1"), "format": (3, "i1"), "cbw": (4, "<u2"),
        "carrier_freq": (6, "<u8"), "sampling_rate": (14, "<u8"), "subcarrier_bandwidth": (22, "<u4"),
        "tones": (26, "<u2"), "tx": (28, "u1"), "rx": (29, "u1"), "ess": (30, "u1"), "num_csi": (31, "<u2"),
        "antsel": (33, "u1"), "offset": (34, "<i2"), "buffer": (36, "<u4"), "payload": 40},
}
#: The MPDU's 802.11 header fields read: frame control, address 2 (big-endian: first octet highest), sequence
#: control.
_MPDU = {1: {"frame_control": (0, "<u2"), "source_mac": (10, ">u6"), "sequence_control": (22, "<u2")}}


def _layout(versions: Mapping[int, Mapping[str, tuple]], sizes_of: Mapping[int, int], defaults=None):
    """The arrays :func:`_fields` takes for a segment's versions: (field names, their dtypes, where, sizes,
    flags, min_length, defaults)."""
    names = []
    dtypes = {}
    for layout in versions.values():
        for name, spec in layout.items():
            if name != "payload" and name not in dtypes:
                names.append(name)
                dtypes[name] = spec[1]
    where = np.full((max(versions), len(names)), -1, dtype=np.int64)
    for v, layout in versions.items():
        for f, name in enumerate(names):
            if name in layout:
                where[v - 1, f] = layout[name][0]
    sizes = np.array([int(dtypes[n][-1]) for n in names], dtype=np.int64)
    flags = np.array([(1 if "i" in dtypes[n] else 0) | (2 if dtypes[n][0] == ">" else 0) for n in names],
                     dtype=np.int64)
    min_length = np.array([sizes_of[v] for v in range(1, max(versions) + 1)], dtype=np.int64)
    default = np.array([(defaults or {}).get(n, 0) for n in names], dtype=np.int64)
    return tuple(names), dtypes, where, sizes, flags, min_length, default


_BASIC_LAYOUT = _layout(_BASIC, _BASIC_SIZE)
_CSI_LAYOUT = _layout(_CSI_HEADER, {v: layout["payload"] for v, layout in _CSI_HEADER.items()}, {"num_csi": 1})
_MPDU_LAYOUT = _layout(_MPDU, {1: 24})
_CSI_PAYLOAD = np.array([0] + [_CSI_HEADER[v]["payload"] for v in sorted(_CSI_HEADER)], dtype=np.int64)


def _read_fields(b, words, offsets, versions, lengths, layout) -> tuple[dict, np.ndarray]:
    """``({field: values in its dtype}, present)`` of a segment's fields for every record (:func:`_fields`)."""
    names, dtypes, where, sizes, flags, min_length, default = layout
    out = np.empty((len(names) + 1, len(offsets)), dtype=np.int64)  # field-major: each field's values contiguous
    _fields(b, words, offsets, versions, lengths, where, sizes, flags, min_length, default, out)
    values = {}
    for f, name in enumerate(names):
        dt = dtypes[name]
        width = {1: 1, 2: 2, 4: 4, 6: 8, 8: 8}[int(dt[-1])]
        values[name] = out[f].astype(f"<{'i' if 'i' in dt else 'u'}{width}")  # (a C cast: keeps the low bits)
    return values, out[-1] == 1


#: (packet format, bandwidth) -> the (a, b, c, d) of the tone ranges [-a, -b), [-c, -d), [c+1, d+1), [b+1, a+1)
#: (PicoScenes' tone layouts for HT/VHT/HE, pilots included).
_TONE_RANGES = {(3, 20): (122, 1, 0, 0), (3, 40): (244, 2, 0, 0), (3, 80): (500, 2, 0, 0),
                (3, 160): (1012, 514, 509, 11), (2, 20): (28, 0, 0, 0), (2, 40): (58, 1, 0, 0),
                (2, 80): (122, 1, 0, 0), (2, 160): (250, 129, 126, 5), (1, 20): (28, 0, 0, 0),
                (1, 40): (58, 1, 0, 0), (0, 20): (26, 0, 0, 0)}


def tone_indices(packet_format: int, cbw: int, offset: int = 0) -> np.ndarray | None:
    """Subcarrier indices of a (packet format, bandwidth)'s tones, pilots included, shifted by ``offset``."""
    r = _TONE_RANGES.get((int(packet_format), int(cbw)))
    if r is None:
        return None
    a, b, c, d = r
    k = np.concatenate([np.arange(-a, -b), np.arange(-c, -d), np.arange(c + 1, d + 1), np.arange(b + 1, a + 1)])
    return (k + offset).astype(np.int32)


def iwl5300_indices(cbw: int, offset: int = 0) -> np.ndarray | None:
    """The Intel 5300's 30 reported subcarriers (802.11n grouping): 20 MHz -28..-2 step 2, -1, 1..27 step 2,
    28; 40 MHz -58..-6 step 4, -2, 2..54 step 4, 58; shifted by ``offset``."""
    if cbw == 20:
        k = list(range(-28, -1, 2)) + [-1] + list(range(1, 28, 2)) + [28]
    elif cbw == 40:
        k = list(range(-58, -5, 4)) + [-2] + list(range(2, 55, 4)) + [58]
    else:
        return None
    return (np.array(k) + offset).astype(np.int32)


# ----------------------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------------------


def sniff(head: bytes) -> bool:
    """Whether ``head`` starts with an RXS frame header (length, magic 0x20150315, frame version 1)."""
    try:
        return (len(head) >= _FRAME_HEADER and struct.unpack_from("<I", head, 4)[0] == MAGIC
                and struct.unpack_from("<H", head, 8)[0] == 1 and struct.unpack_from("<I", head, 0)[0] >= 7)
    except Exception:  # sniff never raises
        return False


def read(source, **_ignored) -> HardwareLog:
    """Read a PicoScenes ``.csi`` file (a path, or the file's bytes).

    Returns
    -------
    HardwareLog
        ``csi`` ``(frames, tones, rx, streams)``, padded to the file's largest with each frame's values first;
        ``subcarriers`` per frame where they vary; ``meta`` as docs/parse.md lists (RxSBasic, ExtraInfo and CSI
        header fields, the MPDU's source address and sequence number).
    """
    where = str(source) if isinstance(source, (str, os.PathLike)) else "input"
    b, _ = read_reused(source, "PicoScenes file", pad=WORD_PAD)  # (no array returned keeps a view of it)
    data = memoryview(b)
    if not sniff(bytes(data[:_FRAME_HEADER])):
        raise FormatError(f"{where}: not a PicoScenes file (no RXS frame header with magic 0x20150315 at its start)")
    # rows for as many frames as the first one's size allows; a second pass with the exact count if more
    first = 4 + struct.unpack_from("<I", data, 0)[0]
    rows = len(data) // max(_MIN_FRAME, min(first, 1 << 16)) + 16
    table = np.empty((len(_COLUMNS), rows), dtype=np.int64)
    other = np.zeros(len(OTHER_SEGMENTS), dtype=np.int64)
    skips = np.zeros(4, dtype=np.int64)
    n = int(_frames(b, _NAME_TABLE, _NAME_LENGTHS, table, other, skips))
    if n > rows:
        table = np.empty((len(_COLUMNS), n), dtype=np.int64)
        other[:] = 0
        skips[:] = 0
        _frames(b, _NAME_TABLE, _NAME_LENGTHS, table, other, skips)
    table = table[:, :n]
    skipped = {name: int(skips[k]) for k, name in enumerate(SKIP_REASONS[:4])}
    col = {name: table[k] for k, name in enumerate(_COLUMNS)}

    # CSI headers, by segment version
    words = byte_words(b)
    h, ok = _read_fields(b, words, col["csi"], col["csi_ver"], col["csi_len"], _CSI_LAYOUT)
    csi_ver = col["csi_ver"]
    payload = np.where(ok, col["csi"] + _CSI_PAYLOAD[np.clip(csi_ver, 0, len(_CSI_PAYLOAD) - 1)], 0)
    device = h["device"].astype(np.int64)
    kind = _kinds(device)
    ok &= kind > 0
    ok &= ~((kind == 3) & (csi_ver != 4))  # the MVM layout needs v4's firmware version
    tones = h["tones"].astype(np.int64)
    nrx = h["rx"].astype(np.int64)
    buffer_len = h["buffer"].astype(np.int64)
    seg_end = col["csi"] + col["csi_len"]
    ok &= payload + buffer_len <= seg_end
    ntx = h["tx"].astype(np.int64)
    safe_rx = np.maximum(nrx, 1)
    streams = ntx.copy()
    streams[kind == 1] = ((buffer_len[kind == 1] - 12) // 60) // safe_rx[kind == 1]
    qca = kind == 2
    per = np.where(h["cbw"][qca] == 20, 140, 285)
    streams[qca] = (buffer_len[qca] // per) // safe_rx[qca]
    aux = np.zeros(n, dtype=np.int64)
    # sizes each kind reads, against the CSI buffer
    need = np.zeros(n, dtype=np.int64)
    k1 = kind == 1
    need[k1] = ((3 + 16 * nrx[k1] * streams[k1]) * tones[k1] - 16) // 8 + 3
    need[qca] = ((tones[qca] * nrx[qca] * streams[qca]) >> 1) * 5
    k3 = kind == 3
    need[k3] = 4 * tones[k3] * nrx[k3] * streams[k3]
    fw = h["firmware"].astype(np.int64)
    fmt = h["format"].astype(np.int64)
    cbw = h["cbw"].astype(np.int64)
    quirk = k3 & np.isin(fw, [67, 68]) & (cbw == 160)
    aux[quirk & (fmt == 3)] = 1
    aux[quirk & (fmt == 2)] = 2
    gap = np.where(aux == 1, np.minimum(np.maximum(tones - 996, 0), 28), np.where(
        aux == 2, np.minimum(np.maximum(tones - 242, 0), 14), 0))
    out_tones = tones - gap
    k4 = kind == 4
    sdr_shape = np.ones((n, 3), dtype=np.int64)
    if k4.any():
        for i in np.flatnonzero(k4 & ok):
            shape, start = _signal_matrix(data, int(payload[i] + 2 * tones[i]), int(seg_end[i]))
            if shape is None:
                ok[i] = False
                continue
            sdr_shape[i] = shape
            aux[i] = start
        out_tones[k4] = sdr_shape[k4, 0]
        nrx = np.where(k4, sdr_shape[:, 1], nrx)
        streams = np.where(k4, sdr_shape[:, 2], streams)
        need[k4] = 0
    ok &= (out_tones >= 1) & (out_tones <= 4096) & (nrx >= 1) & (nrx <= 8) & (streams >= 1) & (streams <= 8)
    ok &= need <= buffer_len
    skipped["bad_csi"] = int((~ok).sum())
    if not ok.all():
        keep = ok
        table = table[:, keep]
        payload, kind, out_tones, nrx, streams, aux = (payload[keep], kind[keep], out_tones[keep], nrx[keep],
                                                       streams[keep], aux[keep])
        h = {k: v[keep] for k, v in h.items()}
        col = {name: table[k] for k, name in enumerate(_COLUMNS)}
        tones = tones[keep]
    n = table.shape[1]
    if n == 0:
        raise FormatError(f"{where}: no RXS frame with a readable CSI segment ({_skip_text(skipped)})")
    T, R, X = int(out_tones.max()), int(nrx.max()), int(streams.max())
    # every frame padded to the largest tones x rx x streams: refused before allocating when mostly padding
    check_padding(where, n * T * R * X * 8, int((out_tones * nrx * streams).sum()) * 8, len(data))
    out = np.empty((n, T, R, X, 2), dtype=np.float32)
    done: dict = {}

    def decode() -> None:
        _decode(b, kind, payload, tones, out_tones, nrx, streams, aux, out.reshape(-1),
                np.array([n, T, R, X], dtype=np.int64))

    def metadata() -> None:
        done["meta"] = _metadata(b, words, col, h, n)

    # the CSI on this thread (the kernel releases the GIL) while another reads the metadata, for many frames
    on_two_threads(decode, metadata, wanted=n >= SPLIT_MIN_FRAMES)
    for i in np.flatnonzero(kind == 4):
        t, r, x = int(out_tones[i]), int(nrx[i]), int(streams[i])
        values = np.frombuffer(data, dtype="<f8", count=2 * t * r * x, offset=int(aux[i])).reshape(t, r, x, 2)
        with np.errstate(over="ignore"):  # beyond float32's range: inf, as the rounding to complex64 says
            out[i, :t, :r, :x] = values
    csi = out.view(np.complex64)[..., 0]

    subcarriers = _subcarriers(data, kind, h, payload, tones, out_tones, T)
    meta = done["meta"]
    devices = sorted({DEVICES[int(d)] for d in np.unique(h["device"])})
    counts = {name: int(c) for name, c in zip(OTHER_SEGMENTS, other) if c}
    decided = {"variant": "RXS frames (ModularPicoScenesRxFrame v1)",
               "chip": ", ".join(devices) + " (the CSI segments' device type: the front end)",
               "bandwidth_mhz": "the CSI segments' bandwidth field" + (" (they differ)" if len(np.unique(h["cbw"])) > 1
                                                                      else ""),
               "segments_skipped": (", ".join(f"{k} {v}" for k, v in counts.items()) if counts else "none")}
    if (kind == 4).any():
        decided["precision"] = "SDR CSI values (complex doubles) rounded to complex64 (inf beyond its range)"
    cbws = np.unique(h["cbw"])
    return HardwareLog(format=FORMAT, variant="rxs", csi=csi, num_tones=out_tones.astype(np.int32),
                       n_rx=nrx.astype(np.int32), n_tx=streams.astype(np.int32), subcarriers=subcarriers, meta=meta,
                       chip=devices[0] if len(devices) == 1 else None,
                       bandwidth_mhz=int(cbws.max()) if len(cbws) else None, decided=decided, skipped=skipped,
                       n_bytes=len(data), source=where if isinstance(source, (str, os.PathLike)) else None)


#: From this many frames a file's CSI is decoded on one thread while another reads its metadata.
SPLIT_MIN_FRAMES = 5000


def _kinds(device: np.ndarray) -> np.ndarray:
    kind = np.zeros(len(device), dtype=np.int64)
    for d, k in _KIND.items():
        kind[device == d] = k
    return kind


def _signal_matrix(data: bytes, start: int, end: int):
    """(shape (tones, rx, tx), offset of the first element) of the SDR signal matrix at ``data[start:end]``, or
    (None, 0) when its header or its complex doubles do not fit."""
    if end - start < 5:
        return None, 0
    version = data[start + 3] - 48
    ndim = data[start + 4]
    width = 4 if version == 1 else 8 if version == 2 else 0
    if width == 0 or not 1 <= ndim <= 3 or start + 5 + width * ndim + 4 > end:
        return None, 0
    shape = [1, 1, 1]
    for d in range(ndim):
        shape[d] = int.from_bytes(data[start + 5 + width * d:start + 5 + width * (d + 1)], "little")
    first = start + 5 + width * ndim + 4
    if shape[0] * shape[1] * shape[2] * 16 > end - first:
        return None, 0
    return shape, first


def _subcarriers(data, kind, h, payload, tones, out_tones, width):
    """Each frame's subcarrier indices (padded with zeros), one row when they all agree. Frames of one front
    end, packet format, bandwidth, offset and tone count share their indices; SDR frames carry their own."""
    n = len(kind)
    keys = np.stack([kind, h["format"].astype(np.int64), h["cbw"].astype(np.int64), h["offset"].astype(np.int64),
                     out_tones]).T
    sdr = kind == 4
    if (keys == keys[0]).all() and not sdr.any():
        return _indices_of(*(int(v) for v in keys[0]))
    groups, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    rows = np.zeros((n, width), dtype=np.int32)
    for g, key in enumerate(groups):
        if key[0] != 4:
            idx = _indices_of(*(int(v) for v in key))
            rows[inverse == g, :len(idx)] = idx
    for i in np.flatnonzero(sdr):  # the segment's own indices (as many as both it and the matrix hold)
        t = min(int(out_tones[i]), int(tones[i]))
        rows[i, :t] = np.frombuffer(data, dtype="<i2", count=t, offset=int(payload[i]))
    if (rows == rows[0]).all():
        return rows[0].copy()
    return rows


def _indices_of(kind: int, packet_format: int, cbw: int, offset: int, tones: int) -> np.ndarray:
    """The subcarrier indices of a NIC's ``tones`` reported tones, or 0..tones-1 where the layout is unknown."""
    idx = iwl5300_indices(cbw, offset) if kind == 1 else tone_indices(packet_format, cbw, offset)
    if idx is None or len(idx) != tones:
        return np.arange(tones, dtype=np.int32)
    return idx


def _metadata(b, words, col, h, n) -> dict:
    meta, present = _read_fields(b, words, col["basic"], col["basic_ver"], col["basic_len"], _BASIC_LAYOUT)
    ver = col["basic_ver"]
    old = (ver == 1) | (ver == 2)  # csiread (after rxs_parsing_core): v1/v2 RSSI is relative to the noise floor
    if old.any():
        for name in ("rssi", "rssi_ctl0", "rssi_ctl1", "rssi_ctl2"):
            meta[name] = np.where(old, meta[name].astype(np.int64) + meta["noise_floor"], meta[name]).astype(np.int8)
    meta["basic_present"] = present
    extra = np.empty((n, 1 + len(EXTRA_FIELDS)), dtype=np.int64)
    offs = np.where(col["extra_ver"] == 1, col["extra"], -1)
    _extra_info(words, offs, col["extra_len"], _EXTRA_BITS, _EXTRA_SIZES, extra)
    meta["extra_feature_code"] = extra[:, 0].astype(np.uint32)
    for k, (_, name, size, signed) in enumerate(EXTRA_FIELDS):
        if name == "extra_evm":
            continue
        width = {1: 1, 2: 2, 4: 4, 6: 8, 8: 8}[size]
        meta[name] = extra[:, 1 + k].astype(f"<{'i' if signed else 'u'}{width}")  # (the low bits, as stored)
    for name, key, dt in (("csi_device_type", "device", "<u2"), ("csi_firmware_version", "firmware", "u1"),
                          ("csi_packet_format", "format", "i1"), ("csi_cbw", "cbw", "<u2"),
                          ("csi_carrier_freq", "carrier_freq", "<u8"), ("csi_sampling_rate", "sampling_rate", "<u8"),
                          ("csi_subcarrier_bandwidth", "subcarrier_bandwidth", "<u4"),
                          ("csi_num_tones", "tones", "<u2"),
                          ("csi_num_tx", "tx", "u1"), ("csi_num_rx", "rx", "u1"), ("csi_num_ess", "ess", "u1"),
                          ("csi_num_csi", "num_csi", "<u2"), ("csi_antenna_selection", "antsel", "u1"),
                          ("csi_subcarrier_offset", "offset", "<i2")):
        meta[name] = h[key].astype(dt)
    # the MPDU's 802.11 header: frame control, duration, addr1-3, sequence control
    mpdu, _ = _read_fields(b, words, col["mpdu"], np.ones(n, dtype=np.int64), col["mpdu_len"], _MPDU_LAYOUT)
    meta["frame_control"] = mpdu["frame_control"]
    meta["source_mac"] = mpdu["source_mac"]
    meta["sequence"] = (mpdu["sequence_control"] >> 4).astype(np.uint16)
    meta["fragment"] = (mpdu["sequence_control"] & 15).astype(np.uint8)
    meta["segments_skipped"] = col["n_other"].astype(np.uint16)
    return meta


def _skip_text(skipped: Mapping[str, int]) -> str:
    parts = [f"{v} {k.replace('_', ' ')}" for k, v in skipped.items() if v]
    return ", ".join(parts) if parts else "no frame"


# ----------------------------------------------------------------------------------------------------------
# Synthesis (rfbench generate, tests)
# ----------------------------------------------------------------------------------------------------------


def segment(name: str, version: int, body: bytes) -> bytes:
    """One segment: its length, name, version and body."""
    raw = name.encode()
    return struct.pack("<IB", 1 + len(raw) + 2 + len(body), len(raw)) + raw + struct.pack("<H", version) + body


def basic_segment(device: int, timestamp: int = 0, center_freq: int = 2412, cbw: int = 20, packet_format: int = 1,
                  num_rx: int = 1, noise_floor: int = -92, rssi: int = 40, rssi_ctl=(40, 38, 36)) -> bytes:
    """An RxSBasic v1 segment (``rssi`` relative to the noise floor, as v1 stores it)."""
    body = struct.pack("<HQhBHHBBBBbbbbb", device, timestamp, center_freq, packet_format, cbw, 800, 7, 1, 0, num_rx,
                       noise_floor, rssi, *rssi_ctl)
    return segment("RxSBasic", 1, body)


def extra_info_segment(fields: Mapping[str, int]) -> bytes:
    """An ExtraInfo v1 segment holding ``fields`` (names of EXTRA_FIELDS, EVM excluded), in file order."""
    code = 0
    body = b""
    for bit, name, size, signed in EXTRA_FIELDS:
        if name in fields:
            code |= 1 << bit
            body += int(fields[name]).to_bytes(size, "little", signed=signed)
    return segment("ExtraInfo", 1, struct.pack("<I", code) + body)


def csi_segment(device: int, csi: np.ndarray, cbw: int = 20, packet_format: int = 1, version: int = 2,
                carrier_freq: int = 2_412_000_000, firmware: int = 0, antsel: int = 0, num_tx: int | None = None,
                subcarrier_offset: int = 0) -> bytes:
    """A CSI segment (``version`` 1–4) of ``device`` holding ``csi`` (``(tones, rx, tx)``, integer-valued for the
    NICs: int8 for the Intel 5300, 10-bit for QCA9300, int16 for MVM; any for SDR)."""
    csi = np.asarray(csi)
    tones, nrx, ntx = csi.shape
    kind = _KIND[device]
    if kind == 1:
        bits = []
        for t in range(tones):
            bits += [0, 0, 0]
            for r in range(nrx):
                for x in range(ntx):
                    for v in (int(csi[t, r, x].real), int(csi[t, r, x].imag)):
                        bits += [(v & 0xFF) >> k & 1 for k in range(8)]
        bits += [0] * (-len(bits) % 8)
        payload = np.packbits(np.array(bits, dtype=np.uint8).reshape(-1, 8)[:, ::-1], axis=1).ravel().tobytes()
        payload += b"\x00" * (12 + 60 * nrx * ntx - len(payload)) if 12 + 60 * nrx * ntx > len(payload) else b""
    elif kind == 2:
        flat = np.zeros(tones * nrx * ntx, dtype=complex)
        for t in range(tones):
            for x in range(ntx):
                for r in range(nrx):
                    flat[t * nrx * ntx + x * nrx + r] = csi[t, r, x]
        vals = []
        for c in flat:
            vals += [int(c.imag) & 0x3FF, int(c.real) & 0x3FF]
        vals += [0] * (-len(vals) % 4)
        out = bytearray()
        for q in range(0, len(vals), 4):
            w = vals[q] | vals[q + 1] << 10 | vals[q + 2] << 20 | vals[q + 3] << 30
            out += w.to_bytes(5, "little")
        per = 140 if cbw == 20 else 285
        payload = bytes(out) + b"\x00" * max(0, per * nrx * ntx - len(out))
    elif kind == 3:
        pairs = np.zeros((ntx, nrx, tones, 2), dtype="<i2")
        pairs[..., 0] = csi.real.transpose(2, 1, 0)
        pairs[..., 1] = csi.imag.transpose(2, 1, 0)
        payload = pairs.tobytes()
    else:
        idx = tone_indices(packet_format, cbw)
        idx = idx if idx is not None and len(idx) == tones else np.arange(tones) - tones // 2
        matrix = b"BBv1" + bytes([3]) + struct.pack("<III", tones, nrx, ntx) + b"CdFR"
        vals = np.empty((tones, nrx, ntx, 2), dtype="<f8")
        vals[..., 0], vals[..., 1] = csi.real, csi.imag
        payload = idx.astype("<i2").tobytes() + matrix + vals.tobytes()
    ntx_field = ntx if num_tx is None else num_tx
    ess = ntx - ntx_field if kind in (1, 2) else 0
    head = {1: struct.pack("<HbHQQIHBBBB", device, packet_format, cbw, carrier_freq, 20_000_000, 312500, tones,
                           ntx_field, nrx, ess, antsel),
            2: struct.pack("<HbHQQIHBBBBh", device, packet_format, cbw, carrier_freq, 20_000_000, 312500, tones,
                           ntx_field, nrx, ess, antsel, subcarrier_offset),
            3: struct.pack("<HbHQQIHBBBHBh", device, packet_format, cbw, carrier_freq, 20_000_000, 312500, tones,
                           ntx_field, nrx, ess, 1, antsel, subcarrier_offset),
            4: struct.pack("<HBbHQQIHBBBHBh", device, firmware, packet_format, cbw, carrier_freq, 20_000_000, 312500,
                           tones, ntx_field, nrx, ess, 1, antsel, subcarrier_offset)}[version]
    return segment("CSI", version, head + struct.pack("<I", len(payload)) + payload)


def encode_frame(segments, mpdu: bytes | None = None, source_mac: bytes = b"\x00\x16\xea\x12\x34\x56",
                 sequence: int = 0) -> bytes:
    """One RXS frame around ``segments`` (bytes each) and an MPDU (by default an 802.11 data header from
    ``source_mac`` with ``sequence``)."""
    if mpdu is None:
        mpdu = struct.pack("<HH6s6s6sH", 0x0008, 0, b"\xff" * 6, bytes(source_mac), bytes(source_mac),
                           (sequence & 0xFFF) << 4)
    body = struct.pack("<IHB", MAGIC, 1, len(segments)) + b"".join(segments) + mpdu
    return struct.pack("<I", len(body)) + body


_DEVICE_OF = {"iwl5300": 0x5300, "qca9300": 0x9300, "iwlmvm-ax200": 0x2000, "iwlmvm-ax210": 0x2100,
              "usrp": 0x1234}


def synthesize(rng, n_records: int, front_end: str = "iwl5300", mark: bool = False, **_ignored) -> bytes:
    """A valid PicoScenes file of ``n_records`` RXS frames from ``front_end`` (``iwl5300``: 30 tones, 1–3 rx,
    1–2 tx mixed; ``qca9300``: 56 tones, 3×1; ``iwlmvm-ax200``/``-ax210``: HE-SU 20 MHz, 242 tones, 2×1;
    ``usrp``: 56 tones 1×1), each with RxSBasic, ExtraInfo and CSI segments and, every third, a skipped
    ``PilotCSI`` segment. With ``mark``, every frame's source is :data:`rfbench.io.hwlog.GENERATED_MAC`."""
    from rfbench.io.hwlog import GENERATED_MAC

    marked = {"source_mac": GENERATED_MAC.to_bytes(6, "big")} if mark else {}
    if front_end not in _DEVICE_OF:
        raise FormatError(f"`front_end` {front_end!r} is not one of {', '.join(_DEVICE_OF)}")
    rng = np.random.default_rng(rng)
    device = _DEVICE_OF[front_end]
    frames = []
    for i in range(int(n_records)):
        if front_end == "iwl5300":
            shape, lim, fmt, ver = (30, int(rng.integers(1, 4)), int(rng.integers(1, 3))), 127, 1, 2
        elif front_end == "qca9300":
            shape, lim, fmt, ver = (56, 3, 1), 511, 1, 2
        elif front_end == "usrp":
            shape, lim, fmt, ver = (56, 1, 1), 0, 1, 2
        else:
            shape, lim, fmt, ver = (242, 2, 1), 2000, 3, 4
        if lim:
            csi = rng.integers(-lim, lim + 1, size=shape) + 1j * rng.integers(-lim, lim + 1, size=shape)
        else:
            csi = rng.normal(size=shape) + 1j * rng.normal(size=shape)
        segs = [basic_segment(device, timestamp=1000 * i, num_rx=shape[1], rssi=int(rng.integers(20, 50))),
                extra_info_segment({"extra_length": 40, "extra_mac_current": 0x0016EA123456, "extra_chansel": 11,
                                    "extra_tx_chainmask": 1, "extra_rx_chainmask": 7, "extra_cf": 2_412_000_000,
                                    "extra_agc": int(rng.integers(0, 60)), "extra_cfo": int(rng.integers(-500, 500))}),
                csi_segment(device, csi, cbw=20, packet_format=fmt, version=ver)]
        if i % 3 == 2:
            segs.append(segment("PilotCSI", 2, b"\x00" * 16))
        frames.append(encode_frame(segs, sequence=i, **marked))
    return b"".join(frames)
