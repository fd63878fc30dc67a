"""nexmon_csi captures (Broadcom chips): the CSI UDP frames on port 5500 of a pcap file.

nexmon_csi's firmware sends one UDP frame (10.10.10.10:5500 to 255.255.255.255:5500) per CSI measurement; a
capture of them (``tcpdump -i wlan0 dst port 5500 -w f.pcap``) is a libpcap file. Two payload layouts exist,
told apart from the bytes (:func:`read`):

- ``"nexmon"``, the original (nexmon_csi's README, ``utils/matlab/csireader.m``): magic ``11 11 11 11`` (4),
  source MAC (6), sequence number (2, little-endian), core and spatial stream (2), chanspec (2), chip version
  (2), then the CSI;
- ``"nexmon-pull46"``, nexmon_csi pull requests 46 and 256 (the layout of its Python tools): magic ``11 11``
  (2), RSSI (int8), frame control (1), then the same fields.

The CSI is ``nfft = 3.2 × bandwidth`` 32-bit words in FFT order (subcarrier 0 first, the negative ones in the
second half). Its encoding follows from the chip: bcm4339 and bcm43455c0 send int16 pairs (real, imaginary);
bcm4358 and bcm4366c0 nexmon's packed floats, decoded exactly like ``unpack_float_acphy`` of nexmon_csi's
``utils/matlab/unpack_float.c`` with the arguments its MATLAB gateway passes (``nbits`` 10, autoscale on,
9-bit mantissas and 5-bit exponent for bcm4358, 12 and 6 for bcm4366c0). The chip is the ``chip`` option, or
else read from the chip-version field where it identifies one (:data:`CHIP_VERSIONS`); otherwise
:func:`read` refuses, naming the candidates: the bytes alone cannot tell int16 pairs from packed floats,
and a wrong guess gives plausible-looking garbage (or, in other readers, zeros). The bandwidth is read from
each frame's chanspec (Broadcom's 802.11ac encoding: bits 11–13) unless the ``bandwidth_mhz`` option is given.

Differences from csiread 1.4.1 (``Nexmon``/``NexmonPull46``), all deliberate:

- frames are recognised by their headers (Ethernet, Linux cooked or raw IPv4 link; IPv4 carrying UDP with port
  5500; the magic), not by the Ethernet source address ``NEXMON`` at a fixed offset; a frame shorter than its
  CSI is skipped and counted (csiread reads past it), and a damaged pcap record header is skipped by
  resynchronising on the next plausible record holding a nexmon frame (csiread stops or misreads);
- core and spatial stream are bits 0–2 and 3–5 of the little-endian 16-bit field (nexmon_csi's definition);
  csiread ORs the field's two bytes first, which differs whenever the high byte is not zero;
- packed floats of pull-46 frames are decoded with autoscale on, as for the original layout (nexmon_csi's
  gateway always passes 1); csiread's ``NexmonPull46`` turns it off (``_autoscale = 0``, "Undetermined"),
  which shifts every value left by ``26 - He`` bits in 32-bit arithmetic.

Memory: the file's bytes, three offsets per 76 file bytes at most (the smallest frame this reader accepts) and
the output; no allocation is sized from a length read from the file.
"""

from __future__ import annotations

import os
import struct
from typing import Mapping

import numpy as np

from rfbench._jit import njit
from rfbench.errors import FormatError
from rfbench.io.files import max_array_bytes
from rfbench.io.hwlog import HardwareLog, next_plausible, on_two_threads, read_reused

__all__ = ["FORMAT", "sniff", "read", "synthesize", "null_subcarriers", "CHIPS", "CHIP_VERSIONS", "ENCODINGS",
           "VARIANTS", "SKIP_REASONS", "UDP_PORT", "chanspec_bandwidth", "tone_bandwidth"]

FORMAT = "nexmon"


def null_subcarriers(bandwidth_mhz: int | None) -> tuple[int, ...]:
    """The bins of a nexmon frame that carry no data (802.11ac's DC and guard tones at that bandwidth), which
    windows leave out; nexmon_csi reports every FFT bin, and those hold noise, not zeros. Empty for a bandwidth
    it does not know."""
    if bandwidth_mhz == 20:
        return (0, -32, -31, -30, -29, 29, 30, 31)
    half = {40: 64, 80: 128}.get(bandwidth_mhz)
    if half is None:
        return ()
    return (-1, 0, 1, *range(-half, -half + 6), *range(half - 5, half))


def tone_bandwidth(nfft: int) -> int | None:
    """The bandwidth (MHz) of a frame of ``nfft`` CSI values (every FFT bin: 3.2 per MHz), None if no 802.11 one."""
    return {64: 20, 128: 40, 256: 80, 512: 160}.get(int(nfft))


#: The chips nexmon_csi supports, as ``chip`` accepts them.
CHIPS = ("bcm4339", "bcm4358", "bcm43455c0", "bcm4366c0")
#: The CSI encoding of each chip: int16 pairs, or nexmon's packed floats (mantissa bits, exponent bits).
ENCODINGS: Mapping[str, tuple] = {"bcm4339": ("int16",), "bcm43455c0": ("int16",),
                                  "bcm4358": ("float", 9, 5), "bcm4366c0": ("float", 12, 6)}
#: Chip-version field values that identify a chip (0xdead is a placeholder some bcm4358 firmware writes).
CHIP_VERSIONS: Mapping[int, str] = {0x0065: "bcm43455c0", 0xE834: "bcm4366c0", 0xDEAD: "bcm4358"}
VARIANTS = ("nexmon", "nexmon-pull46")
UDP_PORT = 5500
#: Skip reasons, in the order of the framing kernel's counter array, then those of :func:`read`.
SKIP_REASONS = ("truncated", "garbage", "not_csi", "short_payload", "bad_magic", "bad_chanspec")
_TRUNCATED, _GARBAGE, _NOT_CSI, _SHORT = range(4)
#: Rows of the framing kernel's table (field-major: one column per frame).
_FIELDS = ("payload", "length", "sec", "subsec", "caplen", "wirelen", "magic4", "rssi", "fc", "mac", "seq", "css",
           "chanspec", "version")
(_F_PAY, _F_LEN, _F_SEC, _F_SUB, _F_CAPLEN, _F_WIRELEN, _F_MAGIC4, _F_RSSI, _F_FC, _F_MAC, _F_SEQ, _F_CSS,
 _F_CHANSPEC, _F_VERSION) = range(len(_FIELDS))
_HEADER_BYTES = 18
#: Bandwidth code of the chanspec (bits 11-13, 802.11ac encoding) -> MHz.
_BANDWIDTHS = {2: 20, 3: 40, 4: 80, 5: 160}
_BANDWIDTH_OF_CODE = np.array([_BANDWIDTHS.get(c, 0) for c in range(8)], dtype=np.int64)
#: pcap link types read, with the offset of the IPv4 header (-1: Ethernet, whose header length depends on VLAN
#: tags; -2: Linux cooked capture v1, 16 bytes with the protocol at 14).
_LINKS = {1: -1, 113: -2, 101: 0, 228: 0}
_PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1": (False, False), b"\xa1\xb2\xc3\xd4": (True, False),
                b"\x4d\x3c\xb2\xa1": (False, True), b"\xa1\xb2\x3c\x4d": (True, True)}
_PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
#: Largest captured length a pcap record may state (libpcap's MAXIMUM_SNAPLEN).
_MAX_CAPLEN = 262144
#: Smallest frame accepted: record header 16 + IPv4 20 + UDP 8 + nexmon header 18 + one 20 MHz CSI is larger,
#: but framing only needs the headers.
_MIN_FRAME = 16 + 20 + 8 + _HEADER_BYTES


def chanspec_bandwidth(chanspec: int) -> int | None:
    """Bandwidth in MHz of a Broadcom 802.11ac chanspec (bits 11–13: 2 → 20, 3 → 40, 4 → 80, 5 → 160), or None."""
    return _BANDWIDTHS.get((int(chanspec) >> 11) & 7)


# ----------------------------------------------------------------------------------------------------------
# Kernels (private; validate nothing, no I/O)
# ----------------------------------------------------------------------------------------------------------


@njit(inline="always")
def _u16le(b, o):
    return np.int64(b[o]) | (np.int64(b[o + 1]) << 8)


@njit(inline="always")
def _u32(b, o, big):
    if big:
        return (np.int64(b[o]) << 24) | (np.int64(b[o + 1]) << 16) | (np.int64(b[o + 2]) << 8) | np.int64(b[o + 3])
    return np.int64(b[o]) | (np.int64(b[o + 1]) << 8) | (np.int64(b[o + 2]) << 16) | (np.int64(b[o + 3]) << 24)


@njit(inline="always")
def _udp_payload(b, start, end, link):
    """Offset of the UDP payload of the packet ``b[start:end]`` if it is an IPv4 UDP datagram to or from port
    5500 whose payload starts with nexmon's magic ``11 11``, else -1; its length is bounded by the UDP length
    field and the bytes captured (returned second)."""
    ip = start
    if link == -1:  # Ethernet, with up to two VLAN tags
        if end - start < 14:
            return -1, 0
        ethertype = (np.int64(b[start + 12]) << 8) | np.int64(b[start + 13])
        ip = start + 14
        for _ in range(2):
            if ethertype != 0x8100 and ethertype != 0x88A8:
                break
            if end - ip < 4:
                return -1, 0
            ethertype = (np.int64(b[ip + 2]) << 8) | np.int64(b[ip + 3])
            ip += 4
        if ethertype != 0x0800:
            return -1, 0
    elif link == -2:  # Linux cooked capture
        if end - start < 16:
            return -1, 0
        if ((np.int64(b[start + 14]) << 8) | np.int64(b[start + 15])) != 0x0800:
            return -1, 0
        ip = start + 16
    if end - ip < 20 or (b[ip] >> 4) != 4:
        return -1, 0
    ihl = np.int64(b[ip] & 15) * 4
    if ihl < 20 or b[ip + 9] != 17 or ((np.int64(b[ip + 6]) & 0x1F) << 8 | np.int64(b[ip + 7])) != 0:
        return -1, 0  # not UDP, or a fragment after the first
    udp = ip + ihl
    if end - udp < 8:
        return -1, 0
    sport = (np.int64(b[udp]) << 8) | np.int64(b[udp + 1])
    dport = (np.int64(b[udp + 2]) << 8) | np.int64(b[udp + 3])
    if sport != 5500 and dport != 5500:
        return -1, 0
    udp_len = (np.int64(b[udp + 4]) << 8) | np.int64(b[udp + 5])
    payload = udp + 8
    length = end - payload
    if 8 <= udp_len and udp_len - 8 < length:
        length = udp_len - 8
    return payload, length


@njit(inline="always")
def _plausible(b, pos, n, big):
    """Whether ``b[pos:]`` starts a pcap record header whose packet fits in the buffer."""
    if n - pos < 16:
        return False
    caplen = _u32(b, pos + 8, big)
    wirelen = _u32(b, pos + 12, big)
    return caplen <= 262144 and caplen <= wirelen and pos + 16 + caplen <= n


@njit(inline="always")
def _resumes_at(b, p, n, big, link):
    """Whether the walk of :func:`_frame` may resume at ``b[p]``: a plausible record header whose packet holds
    a nexmon frame (UDP port 5500, payload starting ``11 11``)."""
    if not _plausible(b, p, n, big):
        return False
    off, ln = _udp_payload(b, p + 16, p + 16 + _u32(b, p + 8, big), link)
    return off >= 0 and ln >= 2 and b[off] == 0x11 and b[off + 1] == 0x11


@njit
def _frame(b, start, stop, big, link, table, skips):
    """Walk the pcap records of ``b`` from byte ``start`` (after the global header) while they start before
    byte ``stop`` (a record that starts before it is read whole).

    For each UDP port-5500 packet whose payload starts with ``11 11`` and holds the 18-byte nexmon header, writes
    one column of ``table`` (``_FIELDS`` rows; frames past its last column are counted, not stored): the payload's
    offset and length, the record header's four fields, and the header's fields (the magic as a little-endian 32-bit
    word, RSSI as int8, frame control, the MAC as a 48-bit number, first octet highest, sequence number, core
    and stream word, chanspec, chip version; little-endian). Counts other packets (``not_csi``), payloads
    shorter than the header (``short_payload``), truncated tails and resynchronisations past damaged record
    headers (``garbage``) into ``skips`` (SKIP_REASONS order). Returns the number of rows written.

    A record header is plausible when its captured length is at most 262,144, at most its wire length, and its
    packet ends inside the buffer; past an implausible one the walk resumes at the next byte where a plausible
    header holds a nexmon frame. Every step advances, so the walk is O(len(b)). Returns the number of frames and
    where the walk ended: the first record start at or past ``stop``, or ``len(b)``.
    """
    n = b.shape[0]
    pos = start
    count = 0
    while pos < stop:
        if _plausible(b, pos, n, big):
            caplen = _u32(b, pos + 8, big)
            end = pos + 16 + caplen
            off, ln = _udp_payload(b, pos + 16, end, link)
            if off < 0 or ln < 2 or b[off] != 0x11 or b[off + 1] != 0x11:
                skips[_NOT_CSI] += 1
            elif ln < 18:
                skips[_SHORT] += 1
            else:
                if count < table.shape[1]:  # (frames past the table's columns are only counted)
                    c = count
                    table[_F_PAY, c] = off
                    table[_F_LEN, c] = ln
                    table[_F_SEC, c] = _u32(b, pos, big)
                    table[_F_SUB, c] = _u32(b, pos + 4, big)
                    table[_F_CAPLEN, c] = caplen
                    table[_F_WIRELEN, c] = _u32(b, pos + 12, big)
                    table[_F_MAGIC4, c] = _u32(b, off, False)
                    table[_F_RSSI, c] = np.int64(np.int8(b[off + 2]))
                    table[_F_FC, c] = b[off + 3]
                    mac = np.int64(0)
                    for k in range(6):
                        mac = (mac << 8) | np.int64(b[off + 4 + k])
                    table[_F_MAC, c] = mac
                    table[_F_SEQ, c] = _u16le(b, off + 10)
                    table[_F_CSS, c] = _u16le(b, off + 12)
                    table[_F_CHANSPEC, c] = _u16le(b, off + 14)
                    table[_F_VERSION, c] = _u16le(b, off + 16)
                count += 1
            pos = end
            continue
        # a damaged record header, or a packet cut off by the end of the file
        found = next_plausible(b, pos + 1, _MIN_FRAME, _resumes_at, big, link)
        if found < 0:
            skips[_TRUNCATED] += 1
            pos = n
            break
        skips[_GARBAGE] += 1
        pos = found
    return count, min(pos, n)


@njit
def _split_point(b, at, big, link):
    """Where a two-part walk's second part starts: the first byte at or past ``at`` where a plausible record
    header holds a nexmon frame (:func:`_resumes_at`), or -1."""
    return next_plausible(b, at, _MIN_FRAME, _resumes_at, big, link)


@njit
def _unpack_int16(even, odd, offsets, nfft, out):
    """int16 pairs (real, imaginary; little-endian) of record ``i``, ``nfft[i]`` of them from byte
    ``offsets[i]`` of the file, into row ``i`` of ``out`` (float32, ``(records, 2 * width)``), the rest of the row
    zeroed. ``even`` and ``odd`` are the file's bytes read as int16 from byte 0 and from byte 1 (a record's
    values are whole elements of the one of its offset's parity): one load and one conversion per value."""
    width2 = out.shape[1]
    for i in range(offsets.shape[0]):
        o = offsets[i]
        k = nfft[i] * 2
        row = out[i]
        if o & 1:
            src = odd[(o - 1) >> 1:((o - 1) >> 1) + k]
        else:
            src = even[o >> 1:(o >> 1) + k]
        for j in range(k):
            row[j] = np.float32(src[j])
        for j in range(k, width2):
            row[j] = 0


@njit
def _unpack_float(b, offsets, nfft, nman, nexp, out, top):
    """nexmon's packed floats of record ``i`` (``nfft[i]`` little-endian 32-bit words from ``b[offsets[i]]``)
    into row ``i`` of ``out`` (float32, ``(records, 2 * width)``), the rest of the row zeroed; ``top[x]`` is the
    index of the highest set bit of ``x`` (for ``x < 2**(nman - 1)``).

    Exactly ``unpack_float_acphy(nbits=10, autoscale=1, shft=0, fmt=1, nman, nexp, ...)`` of nexmon_csi's
    ``utils/matlab/unpack_float.c``: each word holds the real and imaginary magnitudes (``nman - 1`` bits
    each, at bits ``nexp + nman`` and ``nexp``), their signs (bits ``nexp + 2*nman - 1`` and
    ``nexp + nman - 1``) and a shared two's-complement exponent (the low ``nexp`` bits); the record is scaled
    so that its largest value's top bit lands at bit 10 (``maxbit``: the largest exponent plus top bit over
    the record's nonzero words), values whose shifted exponent falls below ``-nman`` become 0. Every result
    is below 2**11 in magnitude, so float32 holds it exactly. Two passes over the words (the reference keeps
    the first pass's values in a buffer; re-reading them is cheaper).
    """
    iq_mask = (np.int64(1) << (nman - 1)) - 1
    e_mask = (np.int64(1) << nexp) - 1
    e_p = np.int64(1) << (nexp - 1)
    sgnr_mask = np.int64(1) << (nexp + 2 * nman - 1)
    sgni_mask = sgnr_mask >> nman
    e_zero = -nman
    width2 = out.shape[1]
    for i in range(offsets.shape[0]):
        o = offsets[i]
        m = nfft[i]
        row = out[i]
        maxbit = -e_p
        for k in range(m):
            q = o + 4 * k
            h = (np.int64(b[q]) | (np.int64(b[q + 1]) << 8) | (np.int64(b[q + 2]) << 16)
                 | (np.int64(b[q + 3]) << 24))
            x = ((h >> (nexp + nman)) | (h >> nexp)) & iq_mask
            if x != 0:
                e = h & e_mask
                if e >= e_p:
                    e -= e_p << 1
                e += top[x]
                if e > maxbit:
                    maxbit = e
        shft = 10 - maxbit
        for k in range(m):
            q = o + 4 * k
            h = (np.int64(b[q]) | (np.int64(b[q + 1]) << 8) | (np.int64(b[q + 2]) << 16)
                 | (np.int64(b[q + 3]) << 24))
            e = h & e_mask
            if e >= e_p:
                e -= e_p << 1
            e += shft
            vi = (h >> (nexp + nman)) & iq_mask
            vq = (h >> nexp) & iq_mask
            if e < e_zero:
                vi = 0
                vq = 0
            elif e < 0:
                vi >>= -e
                vq >>= -e
            elif vi | vq:  # (a zero word of an all-zero record may come with a shift of 64 bits or more)
                vi <<= e
                vq <<= e
            row[2 * k] = np.float32(-vi if h & sgnr_mask else vi)
            row[2 * k + 1] = np.float32(-vq if h & sgni_mask else vq)
        for j in range(2 * m, width2):
            row[j] = 0


#: Index of the highest set bit of each 11-bit value (bcm4366c0's magnitudes have 11 bits, bcm4358's 8).
_TOP_BIT = np.array([0] + [int(x).bit_length() - 1 for x in range(1, 2048)], dtype=np.int64)


# ----------------------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------------------


def sniff(head: bytes) -> bool:
    """Whether ``head`` (the first bytes of a file) is a pcap file of a link type this reader knows whose first
    packet is an IPv4 UDP datagram on port 5500 starting with nexmon's magic ``11 11`` (or which holds no packet
    yet). Plain Python: no compilation to wait for."""
    try:
        head = bytes(head[:4096])
        if len(head) < 24 or head[:4] not in _PCAP_MAGICS:
            return False
        order = ">" if _PCAP_MAGICS[head[:4]][0] else "<"
        link = _LINKS.get(struct.unpack(order + "I", head[20:24])[0] & 0x0FFFFFFF)
        if link is None:
            return False
        if len(head) == 24:
            return True
        ip = 40 + {-1: 14, -2: 16, 0: 0}[link]
        if link == -1 and head[52:54] != b"\x08\x00" or link == -2 and head[54:56] != b"\x08\x00":
            return False
        udp = ip + (head[ip] & 15) * 4
        ports = struct.unpack(">HH", head[udp:udp + 4])
        return (head[ip] >> 4 == 4 and head[ip + 9] == 17 and UDP_PORT in ports
                and head[udp + 8:udp + 10] == b"\x11\x11")
    except Exception:  # sniff never raises (a short head ends in an IndexError or struct.error)
        return False


def _distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values (one comparison pass when they are all equal, as in most captures)."""
    if len(values) and (values == values[0]).all():
        return values[:1].copy()
    return np.unique(values)


def _candidates() -> str:
    return ("bcm4339 or bcm43455c0 (int16 pairs), bcm4358 (packed floats, 9-bit mantissas) or bcm4366c0 "
            "(packed floats, 12-bit mantissas)")


def _choose_chip(chip: str | None, versions: np.ndarray, where: str) -> tuple[str, str]:
    """The chip and why: the ``chip`` option, else the chip-version field where it identifies one."""
    seen = [int(v) for v in _distinct(versions)]
    shown = ", ".join(f"0x{v:04x}" for v in seen[:4]) + (", ..." if len(seen) > 4 else "")
    if chip is not None:
        if chip not in CHIPS:
            raise FormatError(f"{where}: `chip` {chip!r} is not a nexmon_csi chip; expected one of "
                              f"{', '.join(CHIPS)}")
        said = {CHIP_VERSIONS.get(v) for v in seen}
        note = ""
        if len(said) == 1 and None not in said and said != {chip}:
            note = f"; the chip-version field {shown} says {said.pop()}"
        return chip, f"given (`chip`){note}"
    if len(seen) == 1 and seen[0] in CHIP_VERSIONS:
        return CHIP_VERSIONS[seen[0]], f"chip-version field 0x{seen[0]:04x} ({CHIP_VERSIONS[seen[0]]})"
    what = (f"the chip-version field {shown} does not identify the chip" if len(seen) == 1 else
            f"the frames carry chip-version fields {shown}, which do not identify one chip")
    raise FormatError(f"{where}: {what}, so the CSI encoding is unknown; pass `chip`: {_candidates()}")


def read(source, chip: str | None = None, bandwidth_mhz: int | None = None, variant: str | None = None,
         **_ignored) -> HardwareLog:
    """Read a nexmon_csi pcap (a path, or the file's bytes).

    Parameters
    ----------
    source : path or bytes-like
        The capture; a path is read through :func:`rfbench.io.hwlog.read_reused`.
    chip : str, optional
        One of :data:`CHIPS`; by default read from the chip-version field (:data:`CHIP_VERSIONS`), and a
        :class:`~rfbench.errors.FormatError` naming the candidates when it does not identify one.
    bandwidth_mhz : int, optional
        20, 40, 80 or 160 for every frame; by default each frame's chanspec says.
    variant : str, optional
        ``"nexmon"`` or ``"nexmon-pull46"``; by default from the magic: a file whose every frame starts with
        ``11 11 11 11`` is the original layout, any other (``11 11`` then RSSI and frame control) pull-46.

    Returns
    -------
    HardwareLog
        ``csi`` ``(frames, nfft, 1, 1)`` in FFT order (``subcarriers`` gives each position's index,
        ``0 .. nfft/2 - 1`` then ``-nfft/2 .. -1``); ``meta`` as docs/parse.md lists.
    """
    if isinstance(source, (str, os.PathLike)):
        where = str(source)
    else:
        where = "input"
    b, _ = read_reused(source, "nexmon capture")  # (no array returned keeps a view of it)
    data = memoryview(b)
    head = bytes(data[:40])
    if variant is not None and variant not in VARIANTS:
        raise FormatError(f"{where}: `variant` {variant!r} is not one of {', '.join(VARIANTS)}")
    if bandwidth_mhz is not None and bandwidth_mhz not in (20, 40, 80, 160):
        raise FormatError(f"{where}: `bandwidth_mhz` {bandwidth_mhz!r} is not 20, 40, 80 or 160")
    if head[:4] == _PCAPNG_MAGIC:
        raise FormatError(f"{where}: a pcapng file; nexmon captures are read as pcap (convert with "
                          f"`editcap -F pcap IN OUT`)")
    if len(data) < 24 or head[:4] not in _PCAP_MAGICS:
        raise FormatError(f"{where}: not a pcap file (bad magic), expected a nexmon_csi capture")
    big, nano = _PCAP_MAGICS[head[:4]]
    link_type = struct.unpack(">I" if big else "<I", head[20:24])[0] & 0x0FFFFFFF
    if link_type not in _LINKS:
        raise FormatError(f"{where}: pcap link type {link_type} is not read (Ethernet 1, Linux cooked 113 or raw "
                          f"IPv4 101/228 are)")
    first = 16 + struct.unpack(">I" if big else "<I", head[32:36])[0] if len(data) >= 40 else _MIN_FRAME
    table, skips = _frames(b, big, _LINKS[link_type], max(_MIN_FRAME, min(first, 1 << 16)))
    n = table.shape[1]
    skipped = {name: int(skips[k]) for k, name in enumerate(SKIP_REASONS[:4])}

    decided: dict[str, str] = {}
    if variant is None:
        pull = bool((table[_F_MAGIC4] != 0x11111111).any())
        variant = "nexmon-pull46" if pull else "nexmon"
        decided["variant"] = ("magic 11 11 then RSSI and frame control (nexmon_csi pull 46/256)" if pull else
                              "every frame starts with the magic 11 11 11 11 (nexmon_csi's original layout)")
    else:
        decided["variant"] = "given (`variant`)"
    keep = np.ones(n, dtype=bool)
    if variant == "nexmon":
        bad = table[_F_MAGIC4] != 0x11111111
        skipped["bad_magic"] = int(bad.sum())
        keep &= ~bad
    else:
        skipped["bad_magic"] = 0
    if bandwidth_mhz is None:
        bw = _BANDWIDTH_OF_CODE[(table[_F_CHANSPEC] >> 11) & 7]
        bad = keep & (bw == 0)
        skipped["bad_chanspec"] = int(bad.sum())
        keep &= ~bad
    else:
        bw = np.full(n, bandwidth_mhz, dtype=np.int64)
        skipped["bad_chanspec"] = 0
    nfft = bw * 16 // 5
    short = keep & (table[_F_LEN] < _HEADER_BYTES + 4 * nfft)
    skipped["short_payload"] += int(short.sum())
    keep &= ~short
    if not keep.all():
        table, bw, nfft = table[:, keep], bw[keep], nfft[keep]
    if table.shape[1] == 0:
        raise FormatError(f"{where}: no nexmon_csi frame with its CSI ({_skip_text(skipped)})")

    chip, decided["chip"] = _choose_chip(chip, table[_F_VERSION], where)
    widths = _distinct(bw)
    if bandwidth_mhz is not None:
        decided["bandwidth_mhz"] = "given (`bandwidth_mhz`)"
    else:
        decided["bandwidth_mhz"] = ("chanspec of every frame" if len(widths) == 1 else
                                    "each frame's chanspec (they differ: " +
                                    ", ".join(f"{int(w)} MHz" for w in widths) + ")")
    decided["encoding"] = (f"int16 pairs ({chip})" if ENCODINGS[chip][0] == "int16" else
                           f"packed floats, {ENCODINGS[chip][1]}-bit mantissas, {ENCODINGS[chip][2]}-bit "
                           f"exponent ({chip})")
    decided["timestamp"] = "pcap record time: seconds and " + ("nanoseconds" if nano else "microseconds")

    width = int(nfft.max())
    n = table.shape[1]
    if n * width * 8 > max_array_bytes():
        raise FormatError(f"{where}: the padded CSI array would take {n * width * 8} bytes, over the limit of "
                          f"{max_array_bytes()} (RFBENCH_MAX_ARRAY_BYTES); split the file")
    out = np.empty((n, 2 * width), dtype=np.float32)
    offsets = table[_F_PAY] + _HEADER_BYTES
    enc = ENCODINGS[chip]
    h = n // 2
    if enc[0] == "int16":
        even, odd = _int16_views(data)
        on_two_threads(lambda: _unpack_int16(even, odd, offsets[:h], nfft[:h], out[:h]),
                       lambda: _unpack_int16(even, odd, offsets[h:], nfft[h:], out[h:]), wanted=n >= SPLIT_MIN_FRAMES)
    else:
        nman, nexp = np.int64(enc[1]), np.int64(enc[2])
        on_two_threads(lambda: _unpack_float(b, offsets[:h], nfft[:h], nman, nexp, out[:h], _TOP_BIT),
                       lambda: _unpack_float(b, offsets[h:], nfft[h:], nman, nexp, out[h:], _TOP_BIT),
                       wanted=n >= SPLIT_MIN_FRAMES)
    csi = out.view(np.complex64).reshape(n, width, 1, 1)

    meta = _metadata(table, nano, variant)
    if len(widths) == 1:
        subcarriers = _fft_indices(width)
    else:
        subcarriers = np.zeros((n, width), dtype=np.int32)
        for w in widths:
            k = int(w) * 16 // 5
            subcarriers[bw == w, :k] = _fft_indices(k)
    ones = np.ones(n, dtype=np.int32)
    return HardwareLog(format=FORMAT, variant=variant, csi=csi, num_tones=nfft.astype(np.int32), n_rx=ones,
                       n_tx=ones.copy(), subcarriers=subcarriers, meta=meta, chip=chip,
                       bandwidth_mhz=int(widths.max()), decided=decided, skipped=skipped, n_bytes=len(data),
                       source=where if isinstance(source, (str, os.PathLike)) else None)


#: From this many frames a capture's CSI is decoded in two halves (of the frames) on two threads.
SPLIT_MIN_FRAMES = 10_000
#: From this size up the framing walk runs in two parts on two threads (:func:`_frames`).
SPLIT_MIN_BYTES = 8 << 20


def _walk(b: np.ndarray, lo: int, hi: int, big: bool, link: int, frame_bytes: int):
    """:func:`_frame` from ``lo`` while records start before ``hi``: ``(table, skips, end)``. Columns for as many
    frames as ``frame_bytes`` (the first frame's size: a capture's frames are mostly of one size) allows, and a
    second walk with the exact count when more turn up (a table sized for the smallest possible frames would
    hold ten times the memory the frames need)."""
    rows = (hi - lo) // frame_bytes + 16
    skips = np.zeros(4, dtype=np.int64)
    table = np.empty((len(_FIELDS), rows), dtype=np.int64)
    n, end = _frame(b, lo, hi, big, link, table, skips)
    if n > rows:
        table = np.empty((len(_FIELDS), n), dtype=np.int64)
        skips[:] = 0
        n, end = _frame(b, lo, hi, big, link, table, skips)
    return table[:, :n], skips, int(end)


def _frames(b: np.ndarray, big: bool, link: int, frame_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Every frame's row and the skip counts of the walk over ``b`` from its first record.

    A capture of :data:`SPLIT_MIN_BYTES` or more is walked in two parts on two threads: the second from the first
    byte past the middle where a plausible record holds a nexmon frame, the first up to it. When the first
    walk ends exactly there, the two chains are one and their rows are joined; otherwise (the second started
    inside a packet) its rows are dropped and the walk goes on from where the first ended. Either way the rows
    and counts are the single walk's."""
    n = int(b.size)
    cut = int(_split_point(b, n // 2, big, link)) if n >= SPLIT_MIN_BYTES else -1
    if cut <= 24:
        table, skips, _ = _walk(b, 24, n, big, link, frame_bytes)
        return table, skips
    parts: list = [None, None]

    def walk(i: int, lo: int, hi: int) -> None:
        parts[i] = _walk(b, lo, hi, big, link, frame_bytes)

    on_two_threads(lambda: walk(0, 24, cut), lambda: walk(1, cut, n))
    (t0, s0, end0), rest = parts[0], parts[1]
    if end0 != cut and end0 < n:
        rest = _walk(b, end0, n, big, link, frame_bytes)
    elif end0 != cut:
        return t0, s0
    return np.concatenate([t0, rest[0]], axis=1), s0 + rest[1]


def _int16_views(data) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of ``data`` as little-endian int16 from byte 0 and from byte 1."""
    even = np.frombuffer(data, dtype="<i2", count=len(data) // 2)
    odd = np.frombuffer(data, dtype="<i2", offset=1, count=(len(data) - 1) // 2) if len(data) > 1 else even[:0]
    return even, odd


def _fft_indices(nfft: int) -> np.ndarray:
    """Subcarrier index of each CSI position of an ``nfft``-point FFT: 0 .. nfft/2 - 1, then -nfft/2 .. -1."""
    k = np.arange(nfft, dtype=np.int32)
    return np.where(k < nfft // 2, k, k - nfft).astype(np.int32)


def _metadata(table: np.ndarray, nano: bool, variant: str) -> dict:
    """The per-frame metadata (docs/parse.md, "nexmon_csi") from the framing kernel's table."""
    col = {name: table[k] for k, name in enumerate(_FIELDS)}
    meta = {"timestamp_sec": col["sec"].astype(np.uint32),
            ("timestamp_nsec" if nano else "timestamp_usec"): col["subsec"].astype(np.uint32),
            "captured_length": col["caplen"].astype(np.uint32),
            "wire_length": col["wirelen"].astype(np.uint32)}
    if variant == "nexmon":
        meta["magic"] = col["magic4"].astype(np.uint32)
    else:
        meta["magic"] = (col["magic4"] & 0xFFFF).astype(np.uint16)
        meta["rssi"] = col["rssi"].astype(np.int8)
        meta["frame_control"] = col["fc"].astype(np.uint8)
    meta["source_mac"] = col["mac"].astype(np.uint64)
    meta["sequence"] = col["seq"].astype(np.uint16)
    meta["core"] = (col["css"] & 7).astype(np.uint8)
    meta["spatial_stream"] = ((col["css"] >> 3) & 7).astype(np.uint8)
    meta["chanspec"] = col["chanspec"].astype(np.uint16)
    meta["chip_version"] = col["version"].astype(np.uint16)
    return meta


def _skip_text(skipped: Mapping[str, int]) -> str:
    parts = [f"{v} {k.replace('_', ' ')}" for k, v in skipped.items() if v]
    return ", ".join(parts) if parts else "no packet"


# ----------------------------------------------------------------------------------------------------------
# Synthesis (rfbench generate, tests)
# ----------------------------------------------------------------------------------------------------------

_CHANSPECS = {20: 0xD024, 40: 0xD826, 80: 0xE29B, 160: 0xE832}  # 5 GHz channels 36, 38, 155, 50
_DEFAULT_VERSIONS = {"bcm43455c0": 0x0065, "bcm4366c0": 0xE834, "bcm4358": 0xDEAD, "bcm4339": 0x4339}


def encode_frames(payloads, timestamps=None) -> bytes:
    """A little-endian microsecond pcap (Ethernet link) of UDP frames 10.10.10.10:5500 → 255.255.255.255:5500
    carrying ``payloads`` (each bytes), as nexmon_csi sends them; ``timestamps`` are (sec, usec) pairs."""
    parts = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)]
    for i, payload in enumerate(payloads):
        payload = bytes(payload)
        udp = struct.pack(">HHHH", UDP_PORT, UDP_PORT, 8 + len(payload), 0)
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 28 + len(payload), 1, 0, 1, 17, 0, bytes([10] * 4),
                         b"\xff" * 4)
        frame = b"\xff" * 6 + b"NEXMON" + b"\x08\x00" + ip + udp + payload
        sec, usec = timestamps[i] if timestamps is not None else (1_600_000_000 + i // 1000, (i % 1000) * 1000)
        parts.append(struct.pack("<IIII", sec, usec, len(frame), len(frame)) + frame)
    return b"".join(parts)


def frame_payload(csi_words: np.ndarray, variant: str = "nexmon", mac: bytes = b"\x00\x12\x34\x56\x78\x9b",
                  sequence: int = 0, core: int = 0, spatial_stream: int = 0, chanspec: int = 0xE29B,
                  chip_version: int = 0x0065, rssi: int = -60, frame_control: int = 0x80) -> bytes:
    """The UDP payload of one nexmon_csi frame (``variant``'s layout) around ``csi_words`` (uint32 words)."""
    if variant == "nexmon":
        head = b"\x11\x11\x11\x11"
    else:
        head = b"\x11\x11" + struct.pack("<bB", rssi, frame_control)
    head += bytes(mac) + struct.pack("<HHHH", sequence & 0xFFFF, (core & 7) | ((spatial_stream & 7) << 3),
                                     chanspec, chip_version)
    return head + np.asarray(csi_words, dtype="<u4").tobytes()


def synthesize(rng, n_records: int, chip: str = "bcm43455c0", bandwidth_mhz: int = 80, variant: str = "nexmon",
               chip_version: int | None = None, mark: bool = False, **_ignored) -> bytes:
    """A valid nexmon_csi pcap of ``n_records`` frames from ``chip`` at ``bandwidth_mhz`` in ``variant``'s
    layout (cores and spatial streams cycling 0-3, sequence numbers counting); CSI words are random within the
    chip's encoding (int16 pairs in ±2000, or packed floats with random magnitudes, signs and exponents). With
    ``mark``, every frame's source is :data:`rfbench.io.hwlog.GENERATED_MAC`."""
    from rfbench.io.hwlog import GENERATED_MAC

    marked = {"mac": GENERATED_MAC.to_bytes(6, "big")} if mark else {}
    if chip not in CHIPS:
        raise FormatError(f"`chip` {chip!r} is not a nexmon_csi chip; expected one of {', '.join(CHIPS)}")
    if bandwidth_mhz not in _CHANSPECS:
        raise FormatError(f"`bandwidth_mhz` {bandwidth_mhz!r} is not 20, 40, 80 or 160")
    if variant not in VARIANTS:
        raise FormatError(f"`variant` {variant!r} is not one of {', '.join(VARIANTS)}")
    rng = np.random.default_rng(rng)
    nfft = bandwidth_mhz * 16 // 5
    version = _DEFAULT_VERSIONS[chip] if chip_version is None else int(chip_version)
    enc = ENCODINGS[chip]
    payloads = []
    for i in range(int(n_records)):
        if enc[0] == "int16":
            pairs = rng.integers(-2000, 2001, size=2 * nfft).astype("<i2")
            words = pairs.view("<u4")
        else:
            nman, nexp = enc[1], enc[2]
            mag = rng.integers(0, 1 << (nman - 1), size=(2, nfft)).astype(np.uint32)
            sign = rng.integers(0, 2, size=(2, nfft)).astype(np.uint32)
            exp = rng.integers(-4, 4, size=nfft).astype(np.int64) & ((1 << nexp) - 1)
            words = ((sign[0] << (nexp + 2 * nman - 1)) | (mag[0] << (nexp + nman))
                     | (sign[1] << (nexp + nman - 1)) | (mag[1] << nexp) | exp.astype(np.uint32)).astype(np.uint32)
        payloads.append(frame_payload(words, variant, sequence=i // 4, core=i % 2, spatial_stream=(i // 2) % 2,
                                      chanspec=_CHANSPECS[bandwidth_mhz], chip_version=version,
                                      rssi=int(rng.integers(-90, -30)), frame_control=0x80, **marked))
    return encode_frames(payloads)
