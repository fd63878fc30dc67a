"""ESP32-CSI-Tool CSV logs (``CSI_DATA,...,[i r i r ...]`` lines), read from the bytes.

Reference: ESP32-CSI-Tool ``_components/csi_component.h`` (the line it prints for each CSI callback) and
Espressif's ``wifi_csi_info_t`` documentation (each subcarrier is two signed bytes, imaginary part first, then
real part; the LLTF's 64 values run over subcarriers 0…31 then −32…−1). A line is::

    CSI_DATA,role,mac,rssi,rate,sig_mode,mcs,bandwidth,smoothing,not_sounding,aggregation,stbc,fec_coding,
    sgi,noise_floor,ampdu_cnt,channel,secondary_channel,local_timestamp,ant,sig_len,rx_state,real_time_set,
    real_timestamp,len,[v0 v1 v2 ... ]

Rules (issue 26):

- The bracketed list governs: its values, in pairs (imaginary, real), are the record's CSI, whatever ``len``
  says. A line whose ``len`` is not its list's length is kept and counted in ``problems["len_mismatch"]``
  (ESP32-CSI-Tool built with ``SHOULD_COLLECT_ONLY_LLTF``, its default, prints 128 values and ``len`` 384);
  a list shorter than the file's longest is kept, padded with zeros after its values and counted in
  ``problems["short_list"]`` (ESP32-CSI-Tool issue 114: 127 values instead of 128).
- Skipped and counted (``skipped``): a line with another number of fields or a field that is not a number
  (``bad_field``), no closing ``]`` (``truncated``), anything but spaces after the list's ``]``
  (``text_after_list``: two lines joined by a lost newline are one such line, never half read), a list value
  that is not an integer in −128…127 (``bad_value``), an odd number of values or none (``odd_list``,
  ``empty_list``), and other non-empty lines but the CSV header (``not_csi``). A line has one reason, the first
  in that order.

csiread 1.4.1 ``ESP32`` splits the same fields and pairs the values the same way (``csi[1::2] + 1j*csi[::2]``),
but reshapes all lines to one length, so it fails on a file whose lists differ, and takes a list's last two
characters off unread (``line[-1][:-2]``), so a line without the trailing space drops a digit.
"""

from __future__ import annotations

import numpy as np

from rfbench._jit import njit
from rfbench.errors import FormatError
from rfbench.io.hwlog import HardwareLog, check_padding, on_two_threads, read_reused

__all__ = ["FORMAT", "sniff", "read", "synthesize", "SKIP_REASONS", "INT_FIELDS", "PREFIX", "NULL_SUBCARRIERS"]

FORMAT = "esp32"
PREFIX = b"CSI_DATA,"
_HEADER_PREFIX = b"type,role,mac,"
#: The integer fields of a line, in order (fields 3..22, then ``len`` at 24); field 23 is ``real_timestamp``.
INT_FIELDS = ("rssi", "rate", "sig_mode", "mcs", "bandwidth", "smoothing", "not_sounding", "aggregation", "stbc",
              "fec_coding", "sgi", "noise_floor", "ampdu_cnt", "channel", "secondary_channel", "local_timestamp",
              "ant", "sig_len", "rx_state", "real_time_set", "len")
_N_FIELDS = 25  # before the list
#: Skip reasons, in the order of the scan kernel's counter array.
SKIP_REASONS = ("bad_field", "truncated", "bad_value", "odd_list", "empty_list", "not_csi", "text_after_list")
_BAD_FIELD, _TRUNCATED, _BAD_VALUE, _ODD, _EMPTY, _NOT_CSI, _AFTER_LIST = range(7)
#: The LLTF bins that carry no data (DC and the guard bands: only -26..-1 and 1..26 do), left out where CSI is
#: mapped to another grid (windows).
NULL_SUBCARRIERS = (0, 27, 28, 29, 30, 31, -32, -31, -30, -29, -28, -27)
_MAX_DIGITS = 15  # a real_timestamp mantissa of at most 15 digits is exact in float64
PREFIX_ARRAY = np.frombuffer(PREFIX, dtype=np.uint8).copy()
HEADER_ARRAY = np.frombuffer(_HEADER_PREFIX, dtype=np.uint8).copy()


@njit(inline="always")
def _parse_int(b, p, stop):
    """The decimal integer ``b[p:stop]`` (optional sign) and 1, or (0, 0) if it is not one."""
    neg = False
    if p < stop and (b[p] == 45 or b[p] == 43):
        neg = b[p] == 45
        p += 1
    if p >= stop or stop - p > 18:
        return 0, 0
    v = np.int64(0)
    while p < stop:
        d = np.int64(b[p]) - 48
        if d < 0 or d > 9:
            return 0, 0
        v = v * 10 + d
        p += 1
    return (-v if neg else v), 1


@njit(inline="always")
def _parse_mac(b, p, stop):
    """``aa:bb:cc:dd:ee:ff`` as a 48-bit integer and 1, or (0, 0)."""
    if stop - p != 17:
        return np.int64(0), 0
    v = np.int64(0)
    for j in range(17):
        c = np.int64(b[p + j])
        if j % 3 == 2:
            if c != 58:
                return np.int64(0), 0
            continue
        if 48 <= c <= 57:
            d = c - 48
        elif 97 <= c <= 102:
            d = c - 87
        elif 65 <= c <= 70:
            d = c - 55
        else:
            return np.int64(0), 0
        v = (v << 4) | d
    return v, 1


@njit(inline="always")
def _parse_decimal(b, p, stop):
    """``b[p:stop]`` as ``(mantissa, decimals, ok)`` for ``[-]digits[.digits]`` of at most 15 digits in all
    (so ``mantissa / 10**decimals`` is the correctly rounded float), ``ok`` 0 if not such a number."""
    neg = False
    if p < stop and b[p] == 45:
        neg = True
        p += 1
    m = np.int64(0)
    digits = 0
    decimals = -1
    while p < stop:
        c = b[p]
        if c == 46 and decimals < 0:
            decimals = 0
        elif 48 <= c <= 57:
            m = m * 10 + (np.int64(c) - 48)
            digits += 1
            if decimals >= 0:
                decimals += 1
        else:
            return 0, 0, 0
        p += 1
    if digits == 0 or digits > _MAX_DIGITS:
        return 0, 0, 0
    return (-m if neg else m), max(decimals, 0), 1


@njit
def _scan(b, ints, mac, stamp, role, values, list_at, n_values, skips):
    """Split ``b`` into lines; validate each ``CSI_DATA`` line (fields and list, see the module docstring)
    and record, for each kept line ``k``: the 21 :data:`INT_FIELDS` in ``ints[:, k]``, the MAC, the
    ``real_timestamp`` as (mantissa, decimals) in ``stamp[k]``, the role field's span in ``role[k]``, the
    offset of its list's first byte and its number of values. Counts skipped lines by reason. Returns the
    number of kept lines. Arrays hold one entry per line of ``b`` (its newlines + 1)."""
    n = b.shape[0]
    pos = 0
    k = 0
    used = 0
    while pos < n:
        end = pos
        while end < n and b[end] != 10:
            end += 1
        stop = end
        if stop > pos and b[stop - 1] == 13:
            stop -= 1
        line = pos
        pos = end + 1
        if stop == line:
            continue
        is_csi = stop - line >= 9
        if is_csi:
            for j in range(9):
                if b[line + j] != PREFIX_ARRAY[j]:
                    is_csi = False
                    break
        if not is_csi:
            header = stop - line >= 14
            if header:
                for j in range(14):
                    if b[line + j] != HEADER_ARRAY[j]:
                        header = False
                        break
            if not header:
                skips[_NOT_CSI] += 1
            continue
        # the 25 fields before the list
        p = line
        ok = True
        for f in range(_N_FIELDS):
            q = p
            while q < stop and b[q] != 44:
                q += 1
            if q >= stop:
                ok = False
                break
            if f == 1:
                for j in range(p, q):
                    if b[j] == 91 or b[j] == 93:  # no bracket in the role
                        ok = False
                if not ok:
                    break
                role[k, 0] = p
                role[k, 1] = q
            elif f == 2:
                v, good = _parse_mac(b, p, q)
                if not good:
                    ok = False
                    break
                mac[k] = v
            elif f == 23:
                m, d, good = _parse_decimal(b, p, q)
                if not good:
                    ok = False
                    break
                stamp[k, 0] = m
                stamp[k, 1] = d
            elif f >= 3:
                v, good = _parse_int(b, p, q)
                if not good:
                    ok = False
                    break
                ints[f - 3 if f < 23 else 20, k] = v
            p = q + 1
        if not ok or p >= stop or b[p] != 91:
            skips[_BAD_FIELD] += 1
            continue
        p += 1
        # the list: integers separated by spaces up to "]", parsed into values[used:] in one pass
        count = 0
        q = p
        closed = False
        bad = False
        while q < stop:
            c = b[q]
            if c == 32:
                q += 1
                continue
            if c == 93:
                closed = True
                break
            neg = c == 45
            if c == 45 or c == 43:
                q += 1
            v = np.int64(0)
            digits = 0
            while q < stop and 48 <= b[q] <= 57 and digits <= 18:
                v = v * 10 + (np.int64(b[q]) - 48)
                digits += 1
                q += 1
            if neg:
                v = -v
            if digits == 0 or digits > 18 or (q < stop and b[q] != 32 and b[q] != 93) or v < -128 or v > 127:
                bad = True
                break
            values[used + count] = v
            count += 1
        if bad:  # a missing "]" counts first, as for a line cut short
            while q < stop and b[q] != 93:
                q += 1
            closed = q < stop
        if not closed:
            skips[_TRUNCATED] += 1
            continue
        q += 1  # past the "]": only spaces may follow it
        while q < stop and b[q] == 32:
            q += 1
        if q < stop:
            skips[_AFTER_LIST] += 1
            continue
        if bad:
            skips[_BAD_VALUE] += 1
            continue
        if count == 0:
            skips[_EMPTY] += 1
            continue
        if count % 2:
            skips[_ODD] += 1
            continue
        list_at[k] = used
        n_values[k] = count
        used += count
        k += 1
    return k


@njit
def _decode(values, list_at, n_values, out):
    """Each kept line's values (parsed by :func:`_scan` into ``values[list_at[i]:][:n_values[i]]``) into
    ``out[i, 2 j]`` (real) and ``out[i, 2 j + 1]`` (imaginary), ``out`` the ``(lines, 2 × subcarriers)``
    float32 view of the complex64 result: value ``2 j`` of a list is the imaginary part, value ``2 j + 1`` the
    real part of subcarrier ``j``; zeros after a short list's values."""
    for i in range(list_at.shape[0]):
        at = list_at[i]
        half = n_values[i] // 2
        for j in range(half):
            out[i, 2 * j] = values[at + 2 * j + 1]
            out[i, 2 * j + 1] = values[at + 2 * j]
        out[i, 2 * half:] = 0


def _strings(b: np.ndarray, spans: np.ndarray, where: str = "input") -> np.ndarray:
    """The text of each ``(start, stop)`` span of ``b`` as a str array (gathered as fixed-width bytes, each
    distinct value decoded once; spans of up to 8 bytes are told apart as 64-bit integers, which sort fast).

    A str array is as wide as its longest string, on every line: spans whose lengths vary so much that it would
    be mostly padding are refused (:func:`~rfbench.io.hwlog.check_padding`: one 300,000-byte role among
    thousands of ``AP`` would ask for gigabytes), and spans longer than 8 bytes of different lengths are gathered
    one by one (a fixed-width gather would take lines x longest bytes, 8 times over for its indices)."""
    lengths = spans[:, 1] - spans[:, 0]
    width = max(int(lengths.max()), 1)
    check_padding(where, 4 * len(spans) * width, 4 * int(lengths.sum()), int(b.size), "role fields' lengths")
    if width > 8 and lengths.min() != lengths.max():
        view = memoryview(b)
        seen: dict = {}
        inverse = np.fromiter((seen.setdefault(view[s:e].tobytes().rstrip(b"\0"), len(seen))
                               for s, e in spans.tolist()), dtype=np.int64, count=len(spans))
        text = np.array([v.decode("ascii", "replace") for v in seen] or [""])
        return text[inverse]
    cols = np.arange(width)
    at = np.minimum(spans[:, :1] + cols, b.size - 1)
    chars = np.where(cols < lengths[:, None], b[at], 0).astype(np.uint8)
    if (chars == chars[0]).all():  # the usual log: one role on every line
        return np.full(len(spans), bytes(chars[0]).rstrip(b"\0").decode("ascii", "replace"))
    if width <= 8:
        keys = np.zeros((len(spans), 8), dtype=np.uint8)
        keys[:, :width] = chars
        distinct, inverse = np.unique(keys.view(np.uint64).ravel(), return_inverse=True)
        names = distinct.view(np.uint8).reshape(-1, 8).view("S8").ravel()
    else:
        fixed = np.ascontiguousarray(chars).view(f"S{width}").ravel()
        names, inverse = np.unique(fixed, return_inverse=True)
    text = np.array([v.decode("ascii", "replace") for v in names.tolist()] or [""])
    return text[inverse.ravel()]


#: No line ``_scan`` keeps is shorter (newline included): ``CSI_DATA,``, an empty role, a 17-character MAC and 22
#: one-digit fields with their 24 commas, and the list ``[1 1]`` make 77 bytes; so a part of ``n`` bytes keeps
#: at most ``n // _MIN_KEPT_LINE`` lines, and ``_scan`` writes at most one entry past its last kept line.
_MIN_KEPT_LINE = 64
#: From this size up a log is scanned in two halves (split after a newline) on two threads.
SPLIT_MIN_BYTES = 1 << 20


class _Part:
    """What :func:`_scan` kept of one part of a log (``k`` lines), spans made absolute."""

    def __init__(self, k, ints, mac, stamp, role, values, list_at, n_values, skips):
        self.k, self.skips, self.values = k, skips, values
        self.ints, self.mac, self.stamp, self.role = ints[:, :k], mac[:k], stamp[:k], role[:k]
        self.list_at, self.n_values = list_at[:k], n_values[:k]


def _scan_part(b: np.ndarray, lo: int, hi: int) -> _Part:
    """:func:`_scan` over ``b[lo:hi]`` (whole lines), into arrays sized by :data:`_MIN_KEPT_LINE`."""
    part = b[lo:hi]
    cap = part.size // _MIN_KEPT_LINE + 1
    ints = np.empty((len(INT_FIELDS), cap), dtype=np.int64)  # a field's values side by side
    mac = np.empty(cap, dtype=np.int64)
    stamp = np.empty((cap, 2), dtype=np.int64)
    role = np.empty((cap, 2), dtype=np.int64)
    list_at = np.empty(cap, dtype=np.int64)
    n_values = np.empty(cap, dtype=np.int64)
    values = np.empty(part.size // 2 + 1, dtype=np.int8)
    skips = np.zeros(len(SKIP_REASONS), dtype=np.int64)
    k = _scan(part, ints, mac, stamp, role, values, list_at, n_values, skips)
    role[:k] += lo
    return _Part(k, ints, mac, stamp, role, values, list_at, n_values, skips)


def _halves(b: np.ndarray) -> int:
    """Where a log of :data:`SPLIT_MIN_BYTES` or more is cut in two: just after the first newline in the 64 KiB
    from its middle (its size, so one part, when the log is smaller or has no newline there)."""
    if b.size < SPLIT_MIN_BYTES:
        return int(b.size)
    at = bytes(b[b.size // 2:b.size // 2 + (1 << 16)]).find(b"\n")
    return int(b.size) if at < 0 else b.size // 2 + at + 1


def sniff(head: bytes) -> bool:
    """Whether ``head`` starts with ESP32-CSI-Tool's CSV header or has a line starting ``CSI_DATA,``."""
    head = bytes(head)
    return head.startswith((_HEADER_PREFIX, PREFIX)) or b"\n" + PREFIX in head


def _subcarriers(n_tones: int) -> np.ndarray:
    """Subcarrier index of each value pair: the LLTF's order 0…31, −32…−1 for each 64-value block."""
    block = np.r_[np.arange(32), np.arange(-32, 0)].astype(np.int32)
    return np.resize(block, n_tones)


def read(source) -> HardwareLog:
    """Read an ESP32-CSI-Tool CSV log.

    Parameters
    ----------
    source : str, path-like or bytes
        The log's path (read through the safe opener) or its bytes.

    Returns
    -------
    HardwareLog
        ``csi`` ``(lines, subcarriers, 1, 1)`` complex64 (raw int8 values); ``meta``: ``mac`` (uint64, 48
        bits), ``role`` (str), ``real_timestamp`` (float64, s) and :data:`INT_FIELDS` (int64).

    Raises
    ------
    FormatError
        Unreadable input, or no valid ``CSI_DATA`` line.
    """
    b, path = read_reused(source, "ESP32 CSI log")
    cut = _halves(b)
    parts: list = [None, None]

    def scan(i: int, lo: int, hi: int) -> None:
        parts[i] = _scan_part(b, lo, hi)

    on_two_threads(lambda: scan(0, 0, cut), lambda: scan(1, cut, b.size), wanted=0 < cut < b.size)
    skips = parts[0].skips + parts[1].skips
    skipped = {r: int(c) for r, c in zip(SKIP_REASONS, skips) if c}
    k = parts[0].k + parts[1].k
    if k == 0:
        detail = ", ".join(f"{c} {r.replace('_', ' ')}" for r, c in skipped.items()) or "none"
        raise FormatError(f"{path or 'input'}: no valid ESP32-CSI-Tool CSI_DATA line (lines skipped: {detail})")
    n_values = np.concatenate([part.n_values for part in parts])
    tones = (n_values // 2).astype(np.int32)
    width = int(tones.max())
    # every line padded to the longest list: refused before allocating when that is mostly padding
    check_padding(path or "input", k * width * 8, int(tones.sum(dtype=np.int64)) * 8, int(b.size))
    csi = np.empty((k, width, 1, 1), dtype=np.complex64)
    out = csi.reshape(k, width).view(np.float32)
    k0 = parts[0].k
    on_two_threads(lambda: _decode(parts[0].values, parts[0].list_at, parts[0].n_values, out[:k0]),
                   lambda: _decode(parts[1].values, parts[1].list_at, parts[1].n_values, out[k0:]),
                   wanted=parts[1].k > 0)
    ints = np.concatenate([part.ints for part in parts], axis=1)  # (fields, lines)
    mac = np.concatenate([part.mac for part in parts])
    stamp = np.concatenate([part.stamp for part in parts])
    role = np.concatenate([part.role for part in parts])
    meta: dict[str, np.ndarray] = {"mac": mac.astype(np.uint64)}
    meta["role"] = _strings(b, role, path or "input")
    meta["real_timestamp"] = stamp[:, 0] / np.power(10.0, stamp[:, 1])
    for j, name in enumerate(INT_FIELDS):
        meta[name] = ints[j]
    problems = {}
    mismatch = int(np.count_nonzero(ints[-1] != n_values))
    if mismatch:
        problems["len_mismatch"] = mismatch
    short = int(np.count_nonzero(tones < width))
    if short:
        problems["short_list"] = short
    cwb = np.unique(ints[INT_FIELDS.index("bandwidth")])
    if cwb.size == 1 and int(cwb[0]) in (0, 1):
        bandwidth, why = (20, 40)[int(cwb[0])], f"bandwidth field {int(cwb[0])} on every line"
    else:
        bandwidth, why = None, "bandwidth field differs between lines or is not 0 or 1"
    subcarriers = _subcarriers(width)
    if tones.min() != tones.max():  # one row per line, zeros past its own tones
        subcarriers = np.where(np.arange(width) < tones[:, None], subcarriers, 0).astype(np.int32)
    return HardwareLog(
        format=FORMAT, variant="esp32-csi-tool", csi=csi, num_tones=tones, n_rx=np.ones(k, dtype=np.int32),
        n_tx=np.ones(k, dtype=np.int32), subcarriers=subcarriers, meta=meta, chip=None, bandwidth_mhz=bandwidth,
        decided={"variant": "CSI_DATA lines with a bracketed list (ESP32-CSI-Tool)", "bandwidth": why},
        skipped=skipped, problems=problems, n_bytes=int(b.size), source=path,
    )


def synthesize(rng: np.random.Generator, n_records: int, *, n_values: int = 128, header: bool = True,
               mac: str = "3C:71:BF:6D:2A:78", mark: bool = False) -> bytes:
    """A valid ESP32-CSI-Tool CSV log of ``n_records`` lines with random int8 CSI (``len`` says 384 as the
    tool's LLTF-only default prints it when ``n_values`` is 128); with ``mark``, every line from
    :data:`rfbench.io.hwlog.GENERATED_MAC` (``mac`` ignored)."""
    if mark:
        from rfbench.io.hwlog import GENERATED_MAC

        mac = ":".join(f"{GENERATED_MAC:012X}"[i:i + 2] for i in range(0, 12, 2))
    if n_values < 2 or n_values % 2:
        raise FormatError("synthesize: `n_values` must be a positive even number")
    lines = []
    if header:
        lines.append("type,role,mac,rssi,rate,sig_mode,mcs,bandwidth,smoothing,not_sounding,aggregation,stbc,"
                     "fec_coding,sgi,noise_floor,ampdu_cnt,channel,secondary_channel,local_timestamp,ant,sig_len,"
                     "rx_state,real_time_set,real_timestamp,len,CSI_DATA")
    t0 = int(rng.integers(1_000_000, 90_000_000))
    for i in range(n_records):
        values = rng.integers(-60, 61, size=n_values)
        rssi = int(rng.integers(-90, -30))
        ts = t0 + 4000 * i
        length = 384 if n_values == 128 else n_values
        fields = ["CSI_DATA", "AP", mac, str(rssi), "11", "1", "0", "0", "1", "1", "0", "0", "0", "0", "-93", "0",
                  "6", "0", str(ts), "0", "101", "0", "0", f"{ts / 1e6:.6f}", str(length)]
        lines.append(",".join(fields) + ",[" + " ".join(str(int(v)) for v in values) + " ]")
    return ("\n".join(lines) + "\n").encode("ascii")
