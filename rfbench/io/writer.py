"""Encoder for Intel 5300 bfee logs: valid files from arrays, plus every kind of damage, on purpose.

Used for fixtures, tests, benchmarks and synthetic corpora. The encoder is the exact inverse of
:func:`rfbench.io.intel5300.read`: for any records with 1 ≤ Nrx, Ntx ≤ 3,
``read(encode_log(...))`` returns the same CSI and headers (the round-trip tests pin this).

Bit layout (``read_bfee.c``): for each of the 30 subcarrier groups, 3 unused bits, then for each entry
j = rx*Ntx + tx an 8-bit real and an 8-bit imaginary part, least significant bit first, in a little-endian
bit stream; the payload is ``calc_len(Nrx, Ntx)`` bytes.

CSI given to the encoder is in the **parsed** order by default (``permuted=True``): where the reference perm
policy applies, the encoder stores file row k = parsed row perm[k], so the parser's permutation restores it.

Damage (for robustness tests): :class:`LogBuilder` writes any field as given — a wrong ``len``, Nrx/Ntx of
0 or 7, a ``field_len`` of 0, 1 or 65535, unknown codes, raw bytes, a truncated tail.

Whole generated logs: :func:`synthetic_log` (random CSI of any shape), :func:`sample_0x5_like` (laid out like
a real capture), and :func:`make_bfee_log`, which writes either to a file as ``rfbench generate bfee`` does
(its settings: :class:`~rfbench.io.writer_settings.BfeeLogSettings`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rfbench.errors import ValidationError
from rfbench.io.files import check_writable, write_bytes
from rfbench.io.intel5300 import BFEE_CODE, GENERATED_RECORD, HEADER_FIELDS, calc_len
from rfbench.io.writer_settings import BfeeLogSettings, HardwareLogSettings

__all__ = [
    "pack_payload",
    "file_order",
    "encode_bfee",
    "encode_record",
    "encode_log",
    "LogBuilder",
    "synthetic_log",
    "sample_0x5_like",
    "write_log",
    "make_bfee_log",
    "LogSummary",
    "BfeeLogSettings",
    "MPDU_CODE",
    "IDENTITY_ANTENNA_SEL",
]

#: Code of the 802.11 MPDU records (0xC1) interleaved with CSI in some logs (e.g. sample_0x5_64_3000.dat).
MPDU_CODE = 0xC1
_N_SC = 30
#: antenna_sel whose perm is the identity (0, 1, 2): 0 | 1 << 2 | 2 << 4.
IDENTITY_ANTENNA_SEL = 0b100100


def _reference_applies(antenna_sel: int, nrx: int) -> bool:
    """Whether the parser applies the perm (reference sum rule and a true permutation of 1..Nrx)."""
    perm = [((antenna_sel >> (2 * k)) & 3) for k in range(3)]
    if nrx <= 1 or sum(perm) + 3 != (1, 3, 6)[nrx - 1]:
        return False
    return sorted(perm[:nrx]) == list(range(nrx))


def file_order(csi_pairs: np.ndarray, antenna_sel: int) -> np.ndarray:
    """Rows of one record as stored in the file, given its parsed rows: file row k = parsed row perm[k]
    when the parser would apply the perm, unchanged otherwise. ``csi_pairs`` is (30, Nrx, Ntx, 2)."""
    nrx = csi_pairs.shape[1]
    if not _reference_applies(int(antenna_sel), nrx):
        return csi_pairs
    perm = [((int(antenna_sel) >> (2 * k)) & 3) for k in range(nrx)]
    return csi_pairs[:, perm]


def _as_pairs(csi) -> np.ndarray:
    """(…, 30, Nrx, Ntx) complex or (…, 30, Nrx, Ntx, 2) integer-valued → int8 pairs, checked exact."""
    arr = np.asarray(csi)
    if np.iscomplexobj(arr):
        arr = np.stack([arr.real, arr.imag], axis=-1)
    if arr.shape[-1] != 2:
        raise ValidationError("csi must be complex (…, 30, Nrx, Ntx) or real/imag pairs (…, 30, Nrx, Ntx, 2)")
    rounded = np.rint(arr)
    if not np.array_equal(rounded, arr) or rounded.min(initial=0) < -128 or rounded.max(initial=0) > 127:
        raise ValidationError("raw CSI values must be integers in -128..127")
    return rounded.astype(np.int8)


def pack_payload(pairs: np.ndarray) -> np.ndarray:
    """Pack int8 pairs ``(N, 30, Nrx, Ntx, 2)`` (file order) into ``(N, calc_len(Nrx, Ntx))`` payload bytes."""
    pairs = np.asarray(pairs, dtype=np.int8)
    n, n_sc, nrx, ntx, _ = pairs.shape
    nn = nrx * ntx
    bits = np.zeros((n, n_sc, 3 + 16 * nn), dtype=np.uint8)
    value_bits = np.unpackbits(pairs.reshape(n, n_sc, 2 * nn).view(np.uint8)[..., None], axis=-1,
                               bitorder="little")
    bits[:, :, 3:] = value_bits.reshape(n, n_sc, 16 * nn)
    nbytes = calc_len(nrx, ntx)
    flat = np.zeros((n, nbytes * 8), dtype=np.uint8)
    flat[:, : n_sc * (3 + 16 * nn)] = bits.reshape(n, -1)
    return np.packbits(flat, axis=-1, bitorder="little")


def encode_record(code: int, body: bytes, field_len: int | None = None) -> bytes:
    """One raw record: big-endian ``field_len`` (default ``len(body) + 1``), ``code``, ``body``."""
    fl = len(body) + 1 if field_len is None else field_len
    if not 0 <= fl <= 0xFFFF or not 0 <= code <= 0xFF:
        raise ValidationError("field_len must fit in 16 bits and code in 8 bits")
    return fl.to_bytes(2, "big") + bytes([code]) + bytes(body)


def _header(timestamp_low=0, bfee_count=0, nrx=3, ntx=1, rssi_a=0, rssi_b=0, rssi_c=0, noise=-127, agc=0,
            antenna_sel=0, length=0, rate=0) -> bytes:
    return (
        int(timestamp_low).to_bytes(4, "little")
        + int(bfee_count).to_bytes(2, "little")
        + b"\x00\x00"
        + bytes([int(nrx) & 0xFF, int(ntx) & 0xFF, int(rssi_a), int(rssi_b), int(rssi_c), int(noise) & 0xFF,
                 int(agc), int(antenna_sel)])
        + int(length).to_bytes(2, "little")
        + int(rate).to_bytes(2, "little")
    )


def encode_bfee(csi, *, timestamp_low=0, bfee_count=0, rssi_a=0, rssi_b=0, rssi_c=0, noise=-127, agc=0,
                antenna_sel=IDENTITY_ANTENNA_SEL, rate=0, permuted: bool = True, nrx_field=None, ntx_field=None,
                len_field=None, field_len=None, body_cut=None) -> bytes:
    """One bfee record (code 0xBB) from a record's CSI and header values.

    Parameters
    ----------
    csi : array_like
        ``(30, Nrx, Ntx)`` complex with integer parts, or ``(30, Nrx, Ntx, 2)`` int8 pairs.
    timestamp_low, bfee_count, rssi_a, rssi_b, rssi_c, noise, agc, antenna_sel, rate
        Header fields (``noise`` signed, −127 = unknown; ``antenna_sel`` defaults to the identity perm).
    permuted : bool
        ``csi`` is in parsed order (default), so the file stores it un-permuted where the parser permutes.
    nrx_field, ntx_field, len_field, field_len : int, optional
        Write these values instead of the true ones (damage for tests).
    body_cut : int, optional
        Keep only the first ``body_cut`` body bytes (after the code byte) while ``field_len`` still claims
        the full body, unless ``field_len`` is also given.
    """
    pairs = _as_pairs(csi)
    if pairs.ndim != 4 or pairs.shape[0] != _N_SC:
        raise ValidationError(f"csi must be (30, Nrx, Ntx[, 2]), got {np.shape(csi)}")
    nrx, ntx = pairs.shape[1], pairs.shape[2]
    if permuted:
        pairs = file_order(pairs, antenna_sel)
    payload = pack_payload(pairs[None])[0].tobytes()
    head = _header(timestamp_low, bfee_count, nrx if nrx_field is None else nrx_field,
                   ntx if ntx_field is None else ntx_field, rssi_a, rssi_b, rssi_c, noise, agc, antenna_sel,
                   len(payload) if len_field is None else len_field, rate)
    body = head + payload
    claimed = len(body) + 1 if field_len is None else field_len
    if body_cut is not None:
        body = body[:body_cut]
    return encode_record(BFEE_CODE, body, field_len=claimed)


def encode_log(csi, headers: dict, *, nrx=None, ntx=None, permuted: bool = True, interleave: bytes = b"",
               every: int = 0) -> bytes:
    """A whole log from arrays, vectorised: the inverse of :func:`rfbench.io.intel5300.read`.

    Parameters
    ----------
    csi : array_like
        ``(N, 30, R, T)`` complex or ``(N, 30, R, T, 2)`` pairs, padded as the parser returns mixed files.
    headers : dict
        Arrays of length N named as :data:`rfbench.io.intel5300.HEADER_FIELDS` (``nrx``/``ntx`` optional:
        default R and T; missing fields default to 0, ``noise`` to −127, ``antenna_sel`` to the identity).
    permuted : bool
        ``csi`` is in parsed order (default).
    interleave, every : bytes, int
        Insert the raw record ``interleave`` after every ``every`` bfee records (0: never).
    """
    pairs = _as_pairs(csi)
    n, n_sc, r_max, t_max = pairs.shape[:4]
    if n_sc != _N_SC:
        raise ValidationError("csi must have 30 subcarrier groups")
    col = {}
    for name in HEADER_FIELDS:
        default = {"noise": -127, "nrx": r_max, "ntx": t_max, "antenna_sel": IDENTITY_ANTENNA_SEL}.get(name, 0)
        col[name] = np.broadcast_to(np.asarray(headers.get(name, default)), (n,)).astype(np.int64)
    if nrx is not None:
        col["nrx"] = np.broadcast_to(np.asarray(nrx), (n,)).astype(np.int64)
    if ntx is not None:
        col["ntx"] = np.broadcast_to(np.asarray(ntx), (n,)).astype(np.int64)
    if n and (col["nrx"].min() < 1 or col["nrx"].max() > r_max or col["ntx"].min() < 1 or col["ntx"].max() > t_max):
        raise ValidationError("per-record nrx/ntx must lie in 1..the csi array's antenna dimensions")
    records: list[bytes] = [b""] * n
    shapes = col["nrx"] * 10 + col["ntx"]
    for shape in np.unique(shapes):
        idx = np.flatnonzero(shapes == shape)
        r, t = int(shape) // 10, int(shape) % 10
        block = pairs[idx, :, :r, :t]
        if permuted:
            block = np.stack([file_order(block[k], col["antenna_sel"][i]) for k, i in enumerate(idx)]) \
                if r > 1 else block
        payloads = pack_payload(block)
        length = calc_len(r, t)
        for k, i in enumerate(idx):
            head = _header(col["timestamp_low"][i], col["bfee_count"][i], r, t, col["rssi_a"][i],
                           col["rssi_b"][i], col["rssi_c"][i], col["noise"][i], col["agc"][i],
                           col["antenna_sel"][i], length, col["rate"][i])
            records[i] = encode_record(BFEE_CODE, head + payloads[k].tobytes())
    if every and interleave:
        out = []
        for i, rec in enumerate(records):
            out.append(rec)
            if (i + 1) % every == 0:
                out.append(interleave)
        return b"".join(out)
    return b"".join(records)


class LogBuilder:
    """Build a log record by record, damaged ones included.

    >>> data = (LogBuilder().bfee(csi, antenna_sel=0b100100)      # a valid record
    ...         .record(0xC1, bytes(128))                         # a non-CSI record
    ...         .bfee(csi, len_field=5)                           # wrong len: skipped as bad_len
    ...         .raw(b"\\x00\\x00")                                 # field_len 0: zero_field_len
    ...         .to_bytes(truncate=3))                            # cut 3 bytes off the tail
    """

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def bfee(self, csi, **fields) -> "LogBuilder":
        """Append a bfee record (see :func:`encode_bfee` for the fields and damage options)."""
        self._parts.append(encode_bfee(csi, **fields))
        return self

    def record(self, code: int, body: bytes = b"", field_len: int | None = None) -> "LogBuilder":
        """Append a raw record with any code (non-CSI, unknown, or a hand-made bfee body)."""
        self._parts.append(encode_record(code, body, field_len))
        return self

    def raw(self, data: bytes) -> "LogBuilder":
        """Append arbitrary bytes."""
        self._parts.append(bytes(data))
        return self

    def to_bytes(self, truncate: int = 0) -> bytes:
        """The log, with the last ``truncate`` bytes cut off."""
        data = b"".join(self._parts)
        return data[: len(data) - truncate] if truncate else data


def synthetic_log(n_records: int, *, nrx: int = 3, ntx: int = 1, seed: int = 0, rate_hz: float = 1000.0,
                  start_timestamp: int = 0, non_csi_every: int = 0, non_csi_bytes: int = 128) -> bytes:
    """A valid log of random but plausible CSI, deterministic by ``seed``.

    Headers look like a real capture: RSSI 25–50, AGC 30–45, noise −127 (unknown) or −95…−85, antenna
    selections drawn from the six permutations of three antennas, timestamps advancing at ``rate_hz`` with
    ±2 % jitter (wrapping at 2³² µs), ``bfee_count`` counting up. CSI parts are rounded Gaussians clipped to
    the int8 range. With ``non_csi_every=k``, a 0xC1 (MPDU) record of ``non_csi_bytes`` body bytes (an 802.11
    data-frame header and a random payload) follows every k-th bfee record. For a log that also looks like a
    real capture inside (smooth multipath CSI, the headers' real ranges), see :func:`sample_0x5_like`.
    """
    if n_records < 0 or not (1 <= nrx <= 3 and 1 <= ntx <= 3):
        raise ValidationError("n_records must be >= 0 and nrx, ntx in 1..3")
    rng = np.random.default_rng(seed)
    parts = np.clip(np.rint(rng.normal(0.0, 12.0, size=(n_records, _N_SC, nrx, ntx, 2))), -128, 127)
    perms = np.array([0b100100, 0b011000, 0b100001, 0b001001, 0b010010, 0b000110])  # (0,1,2),(0,2,1),...
    period = 1e6 / rate_hz
    steps = np.rint(period * (1.0 + rng.uniform(-0.02, 0.02, n_records))).astype(np.int64)
    steps[0] = 0
    headers = {
        "timestamp_low": (start_timestamp + np.cumsum(steps)) % (1 << 32),
        "bfee_count": np.arange(n_records) % (1 << 16),
        "rssi_a": rng.integers(25, 51, n_records),
        "rssi_b": rng.integers(25, 51, n_records),
        "rssi_c": rng.integers(25, 51, n_records),
        "noise": np.where(rng.random(n_records) < 0.5, -127, rng.integers(-95, -84, n_records)),
        "agc": rng.integers(30, 46, n_records),
        "antenna_sel": rng.choice(perms, n_records),
        "rate": np.full(n_records, 0x4101),
    }
    return encode_log(parts.astype(np.int8), headers, interleave=_mpdu(rng, non_csi_bytes), every=non_csi_every)


def sample_0x5_like(seed: int = 0, n_records: int = 2998) -> bytes:
    """A log laid out like the CSI Tool's ``sample_0x5_64_3000.dat`` (1,037,308 bytes for 2,998 records):
    every 3×1 CSI record followed by a 0xC1 frame of 128 body bytes, with that capture's header ranges (noise
    unknown, AGC 56–63, RSSI 34–40, rate 0x101, antenna selections the identity or (0, 2, 1) in its
    proportions, ~1 kHz) and CSI shaped like a real channel: a few multipath components per record, smooth
    across the 30 subcarrier groups, receive chains of very different gains, large values compressed (the
    capture's distribution of values: half within ±3, 99 % within ±41). Deterministic by ``seed``. Parsers' speed can
    depend on the values they unpack, so benchmarks use this rather than uniform noise.
    """
    rng = np.random.default_rng(seed)
    n = n_records
    sc = np.arange(_N_SC)[None, :, None, None]
    paths = 3
    gains = rng.rayleigh(1.0, size=(n, 1, 3, 1, paths))
    delays = rng.uniform(0.0, 0.15, size=(n, 1, 1, 1, paths))  # in cycles per subcarrier group
    phases = rng.uniform(0.0, 2 * np.pi, size=(n, 1, 3, 1, paths))
    channel = (gains * np.exp(1j * (phases - 2 * np.pi * delays * sc[..., None]))).sum(axis=-1)
    # Receive chains differ widely in gain and the radio's AGC compresses large values: with these constants
    # the |values| quartiles, 90th and 99th percentiles are 1, 3, 10, 23, 41 (the capture: 1, 3, 11, 27, 40).
    chain_gain = 10.0 ** rng.uniform(-1.5, 0.4, size=(n, 1, 3, 1))
    channel = 20.0 * chain_gain * channel / np.sqrt(paths) + rng.normal(0, 0.7, channel.shape) * (1 + 1j)
    values = 45.0 * np.tanh(np.stack([channel.real, channel.imag], axis=-1) / 45.0)
    parts = np.clip(np.rint(values), -128, 127).astype(np.int8)
    steps = np.rint(1000.0 * (1.0 + rng.uniform(-0.006, 0.006, n))).astype(np.int64)
    steps[0] = 0
    headers = {
        "timestamp_low": (rng.integers(0, 1 << 31) + np.cumsum(steps)) % (1 << 32),
        "bfee_count": (1 + np.arange(n)) % (1 << 16),
        "rssi_a": rng.integers(34, 41, n),
        "rssi_b": rng.integers(34, 41, n),
        "rssi_c": rng.integers(34, 41, n),
        "noise": np.full(n, -127),
        "agc": rng.integers(56, 64, n),
        "antenna_sel": np.where(rng.random(n) < 1335 / 2998, IDENTITY_ANTENNA_SEL, 0b011000),
        "rate": np.full(n, 0x101),
    }
    return encode_log(parts, headers, interleave=_mpdu(rng, 128), every=1)


def _mpdu(rng, size: int) -> bytes:
    """A 0xC1 record like the CSI Tool's injected frames: an 802.11 data-frame MAC header (frame control
    0x0008, duration 48 µs, a transmitter address twice, broadcast, sequence 0) then a random payload,
    ``size`` body bytes in all (shorter sizes keep a prefix of the header)."""
    header = bytes.fromhex("0800" "3000" "0016ea123456" "0016ea123456" "ffffffffffff" "0000")
    body = header + rng.integers(0, 256, max(size - len(header), 0), dtype=np.uint8).tobytes()
    return encode_record(MPDU_CODE, body[:size])


def write_log(path, data: bytes, force: bool = False) -> Path:
    """Atomically write log bytes to ``path`` (refusing an existing file unless ``force``)."""
    return write_bytes(path, data, force=force)


@dataclass(frozen=True)
class LogSummary:
    """What :func:`make_bfee_log` wrote: the file, its size and its records."""

    path: str
    bytes: int
    csi_records: int
    non_csi_records: int
    nrx: int
    ntx: int
    settings: BfeeLogSettings

    @property
    def layout(self) -> str:
        """``"random"`` or ``"sample_0x5-like"``."""
        return "random" if self.settings.random else "sample_0x5-like"

    def to_dict(self) -> dict:
        return {"path": self.path, "bytes": self.bytes, "layout": self.layout, "csi_records": self.csi_records,
                "non_csi_records": self.non_csi_records, "nrx": self.nrx, "ntx": self.ntx, "synthetic": True,
                "settings": self.settings.to_dict()}


def make_bfee_log(path: str | os.PathLike, settings: BfeeLogSettings | None = None, *,
                  force: bool = False) -> LogSummary:
    """Write a generated Intel 5300 bfee log to ``path``, atomically.

    Parameters
    ----------
    path : path-like
        The log to write (its folder is created). An existing file is refused unless ``force``; nothing is
        generated before that check, and the file is written to a temporary name and renamed.
    settings : BfeeLogSettings, optional
        What to write (default: a log laid out like ``sample_0x5_64_3000.dat``, :func:`sample_0x5_like`; with
        ``random``, :func:`synthetic_log` of the shape given).
    force : bool
        Replace an existing file.

    Returns
    -------
    LogSummary

    Raises
    ------
    OutputExistsError
        ``path`` exists (without ``force``) or is a folder.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from rfbench.io.intel5300 import read
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "random.dat"
    >>> made = make_bfee_log(path, BfeeLogSettings(records=20, random=True, nrx=2, ntx=2, non_csi_every=0))
    >>> made.csi_records, read(path).shape
    (20, (20, 30, 2, 2))
    """
    s = BfeeLogSettings() if settings is None else settings
    if not isinstance(s, BfeeLogSettings):
        raise ValidationError(f"settings must be BfeeLogSettings, got {type(s).__name__}")
    path = check_writable(path, force)
    if s.random:
        data = synthetic_log(s.records, nrx=s.nrx, ntx=s.ntx, seed=s.seed, non_csi_every=s.non_csi_every,
                             non_csi_bytes=s.non_csi_bytes)
        nrx, ntx, non_csi = s.nrx, s.ntx, (s.records // s.non_csi_every if s.non_csi_every else 0)
    else:
        data = sample_0x5_like(s.seed, s.records)
        nrx, ntx, non_csi = 3, 1, s.records
    # the log says who wrote it, in a first record the Intel 5300 tools skip (ingest marks a corpus of such logs
    # synthetic, with or without a marker file)
    data = GENERATED_RECORD + data
    non_csi += 1
    write_log(path, data, force=force)
    return LogSummary(str(path), len(data), s.records, non_csi, nrx, ntx, s)


@dataclass(frozen=True)
class HardwareLogSummary:
    """What :func:`make_hardware_log` wrote."""

    path: str
    bytes: int
    records: int
    settings: HardwareLogSettings

    def to_dict(self) -> dict:
        return {"path": self.path, "bytes": self.bytes, "format": self.settings.format, "records": self.records,
                "synthetic": True, "settings": self.settings.to_dict()}


def make_hardware_log(path: str | os.PathLike, settings: HardwareLogSettings | None = None, *,
                      force: bool = False) -> HardwareLogSummary:
    """Write a generated log of ``settings.format`` (its reader's ``synthesize``, seeded) to ``path``, atomically;
    an existing file is refused unless ``force``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from rfbench.io import esp32
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "board.csv"
    >>> made = make_hardware_log(path, HardwareLogSettings(format="esp32", records=5))
    >>> esp32.read(path).csi.shape
    (5, 64, 1, 1)
    """
    from rfbench.io import hwlog

    s = HardwareLogSettings() if settings is None else settings
    if not isinstance(s, HardwareLogSettings):
        raise ValidationError(f"settings must be HardwareLogSettings, got {type(s).__name__}")
    module = hwlog.reader(s.format)
    path = check_writable(path, force)
    data = module.synthesize(np.random.default_rng(s.seed), s.records, mark=True)  # hwlog.generated says so
    write_log(path, data, force=force)
    return HardwareLogSummary(str(path), len(data), s.records, s)
