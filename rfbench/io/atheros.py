"""Atheros CSI Tool logs (ath9k, AR9380/AR9580/AR9462...), read from the bytes as ``csi_fun.c`` defines them.

Reference: Atheros-CSI-Tool-UserSpace-APP ``recvCSI/csi_fun.c`` (``record_status``, ``fill_csi_matrix``) and
``main.c`` (the log is what ``main.c`` writes for every report). A log is a sequence of records::

    field_len u16 | timestamp u64 | csi_len u16 | tx_channel u16 | err_info u8 | noise_floor u8 | rate u8 |
    bandwidth u8 | num_tones u8 | nr u8 | nc u8 | rssi u8 | rssi_1 u8 | rssi_2 u8 | rssi_3 u8 |
    payload_len u16 | csi (csi_len bytes) | payload (payload_len bytes)

with ``field_len = 25 + csi_len + payload_len``, all integers in the byte order of the machine that logged
(big-endian on the router, little-endian on a PC). The *pull-10* layout (Atheros-CSI-Tool-UserSpace-APP pull
request 10) writes one byte first, 0xff on a big-endian logger, 0x00 on a little-endian one, then the same
records. The CSI is ``num_tones × nc × nr`` pairs of 10-bit two's-complement values, imaginary part first,
packed least significant bit first in 16-bit little-endian words, tone outermost, then transmit antenna,
then receive antenna (``fill_csi_matrix``).

How the bytes are told apart: a record header is *plausible* when ``num_tones`` is 56 or 114, ``nr`` and
``nc`` are 1..3, ``csi_len`` holds exactly the bytes the 10-bit pairs need (up to 3 spare) and ``field_len``
equals ``25 + csi_len + payload_len``. Each layout (plain or pull-10) and byte order is tried on the first
records; the one with the most plausible headers in a row (of the first :data:`PROBE_RECORDS`) is used, and
the log says why. None, or two equally good: :class:`~rfbench.errors.FormatError` naming the candidates
(``endian=`` forces the order).

Differences from csiread 1.4.1 ``Atheros``, all deliberate:

- csiread fills each tone's matrix receive antenna outermost (``for nr: for nc``), ``csi_fun.c`` transmit
  antenna outermost (``for nc: for nr``). rfbench follows ``csi_fun.c``: on a file with ``nr > 1`` and
  ``nc > 1`` the values are the same, in another order (``csi[:, k].T.ravel() == csiread.csi[:, k].ravel()``).
- A record without CSI (``csi_len == 0``), a header that is not plausible, a truncated tail are skipped and
  counted (csiread keeps the first as zeros, reads the others as if they were records); after an implausible
  header the scan moves on byte by byte to the next plausible one.
"""

from __future__ import annotations

import numpy as np

from rfbench._jit import njit
from rfbench.errors import FormatError
from rfbench.io.hwlog import WORD_PAD, HardwareLog, byte_words, check_padding, on_two_threads, read_reused

__all__ = ["FORMAT", "sniff", "read", "synthesize", "SKIP_REASONS", "META_FIELDS", "HEADER_BYTES",
           "PROBE_RECORDS"]

FORMAT = "atheros"
#: Bytes of a record before its CSI (``field_len`` and the 25-byte status of ``csi_fun.c``).
HEADER_BYTES = 27
#: Leading records whose headers must all be plausible (or all the file has) for a layout to be chosen.
PROBE_RECORDS = 4
#: Skip reasons, in the order of the scan kernel's counter array.
SKIP_REASONS = ("truncated", "no_csi", "bad_header")
_TRUNCATED, _NO_CSI, _BAD_HEADER = 0, 1, 2
#: Per-record metadata: name in the archive -> (row of the scan's field-major table, dtype as written).
META_FIELDS = {
    "csi_len": (0, np.uint16), "tx_channel": (1, np.uint16), "err_info": (2, np.uint8),
    "noise_floor": (3, np.uint8), "rate": (4, np.uint8), "bandwidth": (5, np.uint8), "num_tones": (6, np.uint8),
    "nr": (7, np.uint8), "nc": (8, np.uint8), "rssi": (9, np.uint8), "rssi_1": (10, np.uint8),
    "rssi_2": (11, np.uint8), "rssi_3": (12, np.uint8), "payload_len": (13, np.uint16),
}
_N_FIELDS = 14
_MIN_RECORD = HEADER_BYTES + 140  # 56 tones, 1x1: 56 * 20 bits = 140 bytes
_SUBCARRIERS = {56: tuple(range(-28, 0)) + tuple(range(1, 29)), 114: tuple(range(-58, -1)) + tuple(range(2, 59))}
_BANDWIDTH = {56: 20, 114: 40}


@njit(inline="always")
def _u16(b, p, big):
    if big:
        return (np.int64(b[p]) << 8) | np.int64(b[p + 1])
    return np.int64(b[p]) | (np.int64(b[p + 1]) << 8)


@njit(inline="always")
def _csi_bytes(tones, nr, nc):
    return (tones * nr * nc * 20 + 7) // 8


@njit
def _record_len(b, p, big):
    """Length of the record at ``b[p]`` if its header is plausible (see the module docstring), ``-1`` if it
    is a plausible record without CSI, ``-2`` if not plausible. Needs ``len(b) - p >= HEADER_BYTES``."""
    field_len = _u16(b, p, big)
    csi_len = _u16(b, p + 10, big)
    payload_len = _u16(b, p + 25, big)
    if field_len != 25 + csi_len + payload_len:
        return -2
    if csi_len == 0:
        return -1
    tones = np.int64(b[p + 18])
    nr = np.int64(b[p + 19])
    nc = np.int64(b[p + 20])
    if tones != 56 and tones != 114:
        return -2
    if nr < 1 or nr > 3 or nc < 1 or nc > 3:
        return -2
    need = _csi_bytes(tones, nr, nc)
    if csi_len < need or csi_len > need + 3:
        return -2
    return 2 + field_len


@njit
def _probe(b, start, big, limit):
    """How many of the first ``limit`` records from ``b[start]`` have plausible headers, in a row (a record
    without CSI counts; the scan stops at the first implausible header or at the end of the bytes), and the
    offset after the last of them."""
    n = b.shape[0]
    pos = start
    good = 0
    while good < limit and n - pos >= HEADER_BYTES:
        r = _record_len(b, pos, big)
        if r == -2:
            break
        if r == -1:
            r = 2 + _u16(b, pos, big)
        pos += r
        good += 1
    return good, pos


@njit
def _scan(b, start, big, offsets, fields, timestamp, skips):
    """Frame ``b`` from ``start`` into records; write each CSI record's offset, header fields (``fields[:, k]``, rows of
    :data:`META_FIELDS`) and timestamp; count skips by reason. Returns ``(n, max_tones, max_nr, max_nc)``.

    Output arrays hold ``len(b) // _MIN_RECORD + 1`` entries (no record is shorter); every step advances
    at least one byte, so the scan is O(len(b)) whatever the content."""
    n = b.shape[0]
    pos = start
    k = 0
    max_tones = 0
    max_nr = 0
    max_nc = 0
    while pos < n:
        if n - pos < HEADER_BYTES:
            skips[_TRUNCATED] += 1
            break
        r = _record_len(b, pos, big)
        if r == -2:
            skips[_BAD_HEADER] += 1
            pos += 1
            while n - pos >= HEADER_BYTES and _record_len(b, pos, big) < 0:
                pos += 1
            if n - pos < HEADER_BYTES:
                break  # garbage to the end: counted once, as a bad header
            continue
        if r == -1:
            r = 2 + _u16(b, pos, big)
            if pos + r > n:
                skips[_TRUNCATED] += 1
                break
            skips[_NO_CSI] += 1
            pos += r
            continue
        if pos + r > n:
            skips[_TRUNCATED] += 1
            break
        offsets[k] = pos
        ts = np.uint64(0)
        for j in range(8):
            byte = np.uint64(b[pos + 2 + (7 - j if big else j)])
            ts |= byte << np.uint64(8 * j)
        timestamp[k] = ts
        fields[0, k] = _u16(b, pos + 10, big)
        fields[1, k] = _u16(b, pos + 12, big)
        for j in range(11):
            fields[2 + j, k] = b[pos + 14 + j]
        fields[13, k] = _u16(b, pos + 25, big)
        tones, nr, nc = fields[6, k], fields[7, k], fields[8, k]
        max_tones = max(max_tones, tones)
        max_nr = max(max_nr, nr)
        max_nc = max(max_nc, nc)
        k += 1
        pos += r
    return k, max_tones, max_nr, max_nc


@njit
def _unpack(words, offsets, fields, out, n_r, n_c, bits):
    """Decode each record's 10-bit CSI (``csi_fun.c`` ``fill_csi_matrix``: imaginary then real, tone outermost,
    then transmit antenna, then receive antenna) into ``out[i]``, the record's row of the complex64 result seen as
    uint64 and flattened to ``(records, tones × n_r × n_c)``: receive antenna ``r``, transmit antenna ``c`` of tone
    ``k`` at ``(k n_r + r) n_c + c``; zeros where a record has fewer tones or antennas than ``out``.

    Value ``j`` of a record is bits ``10 j .. 10 j + 9`` of its stream, the bits ``fill_csi_matrix`` takes from
    its 16-bit little-endian words, so every 5 bytes hold two (imaginary, real) pairs, and pair ``s`` (tone
    ``s // (nr nc)``) lands where a table made once per record shape says. ``words[q]`` is the little-endian
    64-bit word at byte ``q`` of the log (:func:`~rfbench.io.hwlog.byte_words`), of which a group uses the low 40
    bits; ``bits[v]`` is the float32 bit pattern of the 10-bit two's-complement value ``v``, so a (real,
    imaginary) pair is one 64-bit store. Indices are unsigned (no negative-index test)."""
    dest = np.zeros(114 * 9, dtype=np.uint64)  # a record of at most 114 tones of 3 x 3 pairs
    shape = (-1, -1, -1)
    for i in range(offsets.shape[0]):
        tones, nr, nc = fields[6, i], fields[7, i], fields[8, i]
        rec = out[i]
        if nr != n_r or nc != n_c or tones * n_r * n_c != rec.shape[0]:
            rec[:] = 0
        if (tones, nr, nc) != shape:
            shape = (tones, nr, nc)
            m = nr * nc
            for s in range(tones * m):
                w = s % m
                dest[s] = np.uint64((s // m) * n_r * n_c + (w % nr) * n_c + w // nr)
        _unpack_record(words, np.uint64(offsets[i] + HEADER_BYTES), np.uint64(tones * nr * nc // 2), dest, bits,
                       rec)


@njit(inline="always")
def _unpack_record(words, src, groups, dest, bits, rec):
    """One record of :func:`_unpack`: ``groups`` 5-byte groups from byte ``src``, group ``g``'s two pairs stored
    at ``rec[dest[2 g]]`` and ``rec[dest[2 g + 1]]``."""
    one, two, five = np.uint64(1), np.uint64(2), np.uint64(5)
    ten_bits, high = np.uint64(1023), np.uint64(32)
    g = np.uint64(0)
    while g < groups:
        x = words[src + five * g]
        # (imaginary, real) at bits 0 and 10, then at 20 and 30: real in the low half of the stored pair
        rec[dest[two * g]] = bits[(x >> np.uint64(10)) & ten_bits] | (bits[x & ten_bits] << high)
        rec[dest[two * g + one]] = bits[(x >> np.uint64(30)) & ten_bits] | (bits[(x >> np.uint64(20)) & ten_bits]
                                                                            << high)
        g += one


#: Float32 bit pattern (as uint64) of each 10-bit two's-complement value: ``_BITS[v]`` for ``v`` in 0..1023.
_BITS = np.array([v - 1024 if v >= 512 else v for v in range(1024)], dtype=np.float32).view(np.uint32).astype(
    np.uint64)
#: Below this many CSI bytes a log is decoded on the calling thread alone (a second thread costs more).
SPLIT_MIN_BYTES = 2 << 20


def _unpack_split(words, offsets, fields, out, n_r, n_c) -> None:
    """:func:`_unpack`, in two halves of the records on two threads (:func:`~rfbench.io.hwlog.on_two_threads`)
    when the log has :data:`SPLIT_MIN_BYTES` of CSI or more."""
    k = offsets.shape[0]
    half = k // 2
    on_two_threads(lambda: _unpack(words, offsets[:half], fields[:, :half], out[:half], n_r, n_c, _BITS),
                   lambda: _unpack(words, offsets[half:], fields[:, half:], out[half:], n_r, n_c, _BITS),
                   wanted=k > 1 and int(fields[0].sum()) >= SPLIT_MIN_BYTES)


def sniff(head: bytes) -> bool:
    """Whether ``head`` starts with a plausible Atheros CSI Tool record in either layout and byte order."""
    try:
        return bool(_candidates(np.frombuffer(bytes(head), dtype=np.uint8), None))
    except Exception:  # noqa: BLE001 - sniffing never raises
        return False


def _candidates(b: np.ndarray, endian: str | None) -> list[tuple[int, bool, int]]:
    """``(start, big, plausible_records)`` of every layout and byte order whose first header is plausible,
    with how many of the first :data:`PROBE_RECORDS` headers are plausible in a row."""
    orders = {"little": (False,), "big": (True,), None: (False, True)}[endian]
    starts = [0] + ([1] if b.size and b[0] in (0x00, 0xFF) else [])
    out = []
    for start in starts:
        for big in orders:
            if b.size - start < HEADER_BYTES:
                continue
            good, _ = _probe(b, start, big, PROBE_RECORDS)
            if good == 0:
                continue
            out.append((start, big, int(good)))
    return out


def _layout_name(start: int, big: bool) -> str:
    return f"{'atheros-pull10' if start else 'atheros'} {'big' if big else 'little'}-endian"


def read(source, *, endian: str | None = None) -> HardwareLog:
    """Read an Atheros CSI Tool log.

    Parameters
    ----------
    source : str, path-like or bytes
        The log's path (read through the safe opener) or its bytes.
    endian : {"little", "big"}, optional
        Force the byte order (default: the one whose headers are plausible).

    Returns
    -------
    HardwareLog
        ``csi`` ``(records, tones, nr, nc)`` complex64 (raw 10-bit values); ``meta``: ``timestamp`` (uint64,
        µs) and :data:`META_FIELDS`. Bad records are skipped and counted by :data:`SKIP_REASONS`.

    Raises
    ------
    FormatError
        Unreadable input, or no layout/byte order (or two) with plausible leading headers.
    """
    if endian not in (None, "little", "big"):
        raise FormatError(f"`endian` must be little or big, not {endian!r}")
    b, path = read_reused(source, "Atheros CSI log", pad=WORD_PAD)
    where = path or "input"
    found = _candidates(b, endian)
    if not found:
        tried = "little- and big-endian" if endian is None else f"{endian}-endian"
        raise FormatError(f"{where}: no plausible Atheros CSI Tool record header at the start ({tried}, with "
                          "and without the pull-10 byte); not an Atheros log, or damaged at its start")
    best = max(g for _, _, g in found)
    top = [(s, big) for s, big, g in found if g == best]
    if len(top) > 1:
        names = " or ".join(_layout_name(s, big) for s, big in top)
        raise FormatError(f"{where}: the Atheros layout cannot be told from the bytes ({names}); pass "
                          "`endian` to choose")
    start, big = top[0]
    cap = b.size // _MIN_RECORD + 1
    offsets = np.empty(cap, dtype=np.int64)
    fields = np.empty((_N_FIELDS, cap), dtype=np.int64)  # field-major: each field's values contiguous
    timestamp = np.empty(cap, dtype=np.uint64)
    skips = np.zeros(len(SKIP_REASONS), dtype=np.int64)
    k, max_tones, max_nr, max_nc = _scan(b, start, big, offsets, fields, timestamp, skips)
    offsets, fields = offsets[:k], fields[:, :k]
    # every record padded to the largest tones x nr x nc: refused before allocating when mostly padding
    values = int((fields[6] * fields[7] * fields[8]).sum()) * 8
    check_padding(where, k * int(max_tones * max_nr * max_nc) * 8, values, int(b.size))
    csi = np.empty((k, int(max_tones), int(max_nr), int(max_nc)), dtype=np.complex64)
    _unpack_split(byte_words(b), offsets, fields,
                  csi.view(np.uint64).reshape(k, int(max_tones * max_nr * max_nc)), int(max_nr), int(max_nc))
    tones = fields[6].astype(np.int32)
    meta = {"timestamp": timestamp[:k].copy()}
    for name, (col, dtype) in META_FIELDS.items():
        meta[name] = fields[col].astype(dtype)
    subcarriers, bandwidth, why_bw = _grid(tones, int(max_tones))
    order = "big" if big else "little"
    decided = {
        "variant": ("a 0x%02x byte before the first record (pull-10 layout)" % b[0]) if start
        else "records from the first byte (original layout)",
        "endian": f"forced ({order})" if endian else f"{order}-endian headers are plausible, the other order's not",
        "bandwidth": why_bw,
    }
    return HardwareLog(
        format=FORMAT, variant="atheros-pull10" if start else "atheros", csi=csi, num_tones=tones,
        n_rx=fields[7].astype(np.int32), n_tx=fields[8].astype(np.int32), subcarriers=subcarriers,
        meta=meta, chip=None, bandwidth_mhz=bandwidth, decided=decided,
        skipped={r: int(c) for r, c in zip(SKIP_REASONS, skips) if c}, n_bytes=int(b.size), source=path,
    )


def _grid(tones: np.ndarray, width: int) -> tuple[np.ndarray, int | None, str]:
    if tones.size == 0:
        kinds = []
    elif tones.min() == tones.max():  # (the usual log: one kind, no sort)
        kinds = [int(tones[0])]
    else:
        kinds = sorted({int(t) for t in np.unique(tones)})
    if len(kinds) <= 1:
        t = kinds[0] if kinds else 56
        return (np.asarray(_SUBCARRIERS[t], dtype=np.int32), _BANDWIDTH[t] if kinds else None,
                f"{t} tones per record ({'HT20' if t == 56 else 'HT40'})" if kinds else "no record")
    rows = np.zeros((tones.size, width), dtype=np.int32)
    for t in kinds:
        rows[tones == t, :t] = _SUBCARRIERS[t]
    return rows, None, "records of 56 and 114 tones (20 and 40 MHz) mixed"


def synthesize(rng: np.random.Generator, n_records: int, *, endian: str = "little", pull10: bool = False,
               nr: int = 3, nc: int = 2, tones: int = 56, payload_len: int = 32, mark: bool = False) -> bytes:
    """A valid Atheros CSI Tool log of ``n_records`` records with random 10-bit CSI (``csi_fun.c`` layout); with
    ``mark``, the first record's payload is :data:`rfbench.io.hwlog.GENERATED_PAYLOAD` (its length at least)."""
    from rfbench.io.hwlog import GENERATED_PAYLOAD

    if endian not in ("little", "big") or tones not in _SUBCARRIERS or not (1 <= nr <= 3 and 1 <= nc <= 3):
        raise FormatError("synthesize: endian little|big, tones 56|114, nr and nc 1..3")
    e = ">" if endian == "big" else "<"
    csi_len = (tones * nr * nc * 20 + 7) // 8
    parts = [b"\xff" if endian == "big" else b"\x00"] if pull10 else []
    t0 = int(rng.integers(1 << 20, 1 << 32))
    if mark:  # every record's payload long enough for the text the first one holds
        payload_len = max(payload_len, len(GENERATED_PAYLOAD))
    for i in range(n_records):
        values = rng.integers(-512, 512, size=tones * nc * nr * 2)  # (k, nc, nr, imag/real) order
        words = (values & 1023).astype(np.uint64)
        bits = ((words[:, None] >> np.arange(10, dtype=np.uint64)) & 1).astype(np.uint8).ravel()
        packed = np.packbits(bits, bitorder="little").tobytes()[:csi_len]
        head = np.array([t0 + 2000 * i], dtype=e + "u8").tobytes()
        status = head + np.array([csi_len, 2437], dtype=e + "u2").tobytes()
        status += bytes([0, 0, 143, 0 if tones == 56 else 1, tones, nr, nc, 50, 40, 45, 38])
        status += np.array([payload_len], dtype=e + "u2").tobytes()
        field_len = np.array([25 + csi_len + payload_len], dtype=e + "u2").tobytes()
        payload = bytes(rng.integers(0, 256, size=payload_len, dtype=np.uint8))
        if mark and i == 0:
            payload = GENERATED_PAYLOAD + payload[len(GENERATED_PAYLOAD):]
        parts += [field_len, status, packed, payload]
    return b"".join(parts)
