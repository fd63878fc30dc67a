"""The one in-memory form every non-Intel CSI reader returns (issue 26): :class:`HardwareLog`.

Each format module (``rfbench/io/atheros.py``, ``esp32.py``, ``nexmon.py``, ``picoscenes.py``) exposes

- ``FORMAT``: its name as ``--format`` spells it (``"atheros"``, ``"esp32"``, ``"nexmon"``, ``"picoscenes"``);
- ``sniff(head: bytes) -> bool``: whether the first bytes of a file (at most :data:`SNIFF_BYTES`) look like
  this format — cheap, never raises;
- ``read(source, **options) -> HardwareLog``: a path or bytes-like, read through the safe opener
  (:func:`rfbench.io.files.read_input_bytes`); bad records are skipped and counted in ``skipped``, good ones
  kept; a file with no record of the format raises :class:`~rfbench.errors.FormatError` (one line).

- ``synthesize(rng, n_records, **options) -> bytes``: a valid file of the format (``rfbench generate hardware``).

The parse command (:func:`rfbench.io.parse_files.detect_format`, :func:`~rfbench.io.parse_files.read_hardware`),
the archive (:meth:`HardwareLog.archive_arrays`) and its summary (:meth:`HardwareLog.summary`), ``ingest files
--template`` and ``windows`` work on this form only, so a new format is one module and one entry in
:data:`READERS`. A reader may also define ``NULL_SUBCARRIERS`` (indices carrying no data, left out where windows
map the CSI to another grid) and take ``endian`` or ``chip`` keywords (``parse --endian``/``--chip``).
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np

from rfbench._jit import njit
from rfbench.errors import FormatError
from rfbench.io.files import (
    MAX_INPUT_BYTES,
    NotRegularFile,
    input_errors,
    max_array_bytes,
    open_regular,
    read_input_bytes,
)

__all__ = ["HardwareLog", "SNIFF_BYTES", "FORMATS", "READERS", "reader", "available", "detect", "read_source",
           "TIME_FIELDS", "RESERVED", "read_reused", "REUSED_MAX_BYTES", "SPLIT_READ_MIN_BYTES",
           "on_two_threads", "next_plausible", "byte_words", "WORD_PAD", "check_padding", "PAD_RATIO",
           "PAD_FREE_SHARE", "GENERATED_MAC", "GENERATED_PAYLOAD", "generated"]

#: How many leading bytes ``sniff`` is given.
SNIFF_BYTES = 4096

#: The source address rfbench's generator (``rfbench generate hardware``) gives every frame of an ESP32, nexmon
#: or PicoScenes log it writes: locally administered (no vendor holds it), its octets ``02`` then ``RFBSY``.
GENERATED_MAC = 0x025246425359
#: The bytes the generator writes as the first record's payload of an Atheros log (which keeps no address; the
#: payload is not part of what the reader returns).
GENERATED_PAYLOAD = b"rfbench synthetic Atheros log"


def generated(log: "HardwareLog", data: bytes) -> bool:
    """Whether ``log`` (read from ``data``) carries the mark of rfbench's generator: a frame from
    :data:`GENERATED_MAC`, or (Atheros) :data:`GENERATED_PAYLOAD` in its first 4 KiB. A log that carries it was
    generated, or marked so by whoever wrote it; either way its numbers are not measurements."""
    for key in ("mac", "source_mac"):
        macs = log.meta.get(key)
        if macs is not None and np.asarray(macs).size and bool(np.any(np.asarray(macs) == GENERATED_MAC)):
            return True
    return log.format == "atheros" and GENERATED_PAYLOAD in bytes(data[:SNIFF_BYTES])


#: Every format rfbench reads, Intel 5300 first, as ``parse --format`` accepts them.
FORMATS = ("intel5300", "atheros", "nexmon", "esp32", "picoscenes")
#: Metadata names a log's time stamps (µs) may have, in the order :meth:`HardwareLog.time_us` looks for them.
TIME_FIELDS = ("timestamp", "local_timestamp", "timestamp_us")
#: Archive names a metadata field may not take (the archive's own arrays).
RESERVED = frozenset({"csi", "num_tones", "nrx", "ntx", "subcarriers", "hardware", "format", "variant", "chip",
                      "bandwidth_mhz", "decided_keys", "decided_values", "skipped_reasons", "skipped_counts",
                      "problems_reasons", "problems_counts", "source_sha256", "source_bytes"})


@dataclass(frozen=True)
class HardwareLog:
    """The records of one CSI log of any hardware but the Intel 5300 (whose reader keeps its own form).

    Attributes
    ----------
    format : str
        One of :data:`FORMATS`.
    variant : str
        The frame layout the bytes were read as (e.g. ``"atheros"``, ``"atheros-pull10"``, ``"nexmon"``,
        ``"nexmon-pull46"``, ``"esp32-csi-tool"``, ``"rxs"``).
    csi : ndarray
        ``(records, subcarriers, rx, tx)`` complex64; a record with fewer tones or antennas than the file's
        largest holds its values first and zeros after (as csiread pads).
    num_tones, n_rx, n_tx : ndarray
        ``(records,)`` int32: each record's own tones and antennas.
    subcarriers : ndarray
        ``(subcarriers,)`` int32 subcarrier indices, or ``(records, subcarriers)`` where they vary per record.
    meta : mapping of str to ndarray
        Per-record metadata, one ``(records,)`` array per documented name (timestamps, RSSI, noise, rate, MAC,
        sequence number, core/spatial stream, chanspec...); docs/parse.md lists each format's names.
    chip, bandwidth_mhz : str or None, int or None
        What the bytes (or the caller's ``--chip``) determined; None where the format has no such notion.
    decided : mapping of str to str
        Why each of ``variant``, ``chip``, ``bandwidth_mhz``, ``endian`` (where they apply) is what it is, in
        words the summary shows (e.g. ``{"chip": "chip-version field 0x0065 (bcm43455c0)"}``).
    skipped : mapping of str to int
        Records skipped, by reason.
    problems : mapping of str to int
        Records kept although something about them disagrees with the format (e.g. an ESP32 line whose
        ``len`` field is not its list's length), by kind; each kept record is counted once per kind.
    n_bytes : int
        Size of the input in bytes.
    source : str or None
        The path read, if any.
    """

    format: str
    variant: str
    csi: np.ndarray
    num_tones: np.ndarray
    n_rx: np.ndarray
    n_tx: np.ndarray
    subcarriers: np.ndarray
    meta: Mapping[str, np.ndarray] = field(default_factory=dict)
    chip: str | None = None
    bandwidth_mhz: int | None = None
    decided: Mapping[str, str] = field(default_factory=dict)
    skipped: Mapping[str, int] = field(default_factory=dict)
    problems: Mapping[str, int] = field(default_factory=dict)
    n_bytes: int = 0
    source: str | None = None

    @property
    def n_records(self) -> int:
        """Number of records kept."""
        return int(self.csi.shape[0])

    def __len__(self) -> int:
        return self.n_records

    @property
    def n_skipped(self) -> int:
        """Records skipped, all reasons together."""
        return int(sum(self.skipped.values()))

    def time_us(self) -> np.ndarray | None:
        """Each record's time stamp in µs: the first of :data:`TIME_FIELDS` the log has, else
        ``timestamp_sec`` · 10⁶ + ``timestamp_usec`` (a pcap's record header) when it has both, else None."""
        for name in TIME_FIELDS:
            if name in self.meta:
                return np.asarray(self.meta[name])
        if "timestamp_sec" in self.meta and "timestamp_usec" in self.meta:
            return (np.asarray(self.meta["timestamp_sec"], dtype=np.int64) * 1_000_000
                    + np.asarray(self.meta["timestamp_usec"], dtype=np.int64))
        return None

    def summary(self) -> dict:
        """A JSON-ready summary, with the keys of the Intel 5300 log's (records, shapes, skipped, time span,
        packet rate) and what was decided: format, variant, chip, bandwidth and why, problems."""
        shapes: dict[str, int] = {}
        for r, t in zip(self.n_rx.tolist(), self.n_tx.tolist()):
            shapes[f"{r}x{t}"] = shapes.get(f"{r}x{t}", 0) + 1
        span = 0.0
        t = self.time_us()
        if t is not None and t.size > 1:
            span = float(int(t[-1]) - int(t[0])) / 1e6
        return {
            "source": self.source,
            "bytes": self.n_bytes,
            "records": self.n_records,
            "shape": list(self.csi.shape[1:]),
            "shapes": dict(sorted(shapes.items())),
            "skipped": dict(self.skipped),
            "non_csi": {},
            "time_span_s": span,
            "packet_rate_hz": (self.n_records - 1) / span if span > 0 else None,
            "format": self.format,
            "variant": self.variant,
            "chip": self.chip,
            "bandwidth_mhz": self.bandwidth_mhz,
            "decided": dict(self.decided),
            "problems": dict(self.problems),
        }

    def archive_arrays(self) -> dict[str, np.ndarray]:
        """The arrays of this log's CSI archive (docs/parse.md, "Other hardware"), in the Intel 5300 archive's
        schema where the two share a notion, without the ``source_*`` arrays (the parse job adds them)."""
        arrays: dict[str, np.ndarray] = {
            "csi": self.csi,
            "num_tones": np.asarray(self.num_tones, dtype=np.int32),
            "nrx": np.asarray(self.n_rx, dtype=np.int32),
            "ntx": np.asarray(self.n_tx, dtype=np.int32),
            "subcarriers": np.asarray(self.subcarriers, dtype=np.int32),
            "hardware": np.array(self.format),
            "format": np.array(self.format),
            "variant": np.array(self.variant),
            "chip": np.array(self.chip or ""),
            "bandwidth_mhz": np.array(-1 if self.bandwidth_mhz is None else int(self.bandwidth_mhz), dtype=np.int32),
        }
        keys = sorted(self.decided)
        arrays["decided_keys"] = np.array(keys, dtype="U16")
        arrays["decided_values"] = np.array([str(self.decided[k]) for k in keys], dtype=str).astype("U")
        for prefix, counts in (("skipped", self.skipped), ("problems", self.problems)):
            names = list(counts)
            arrays[f"{prefix}_reasons"] = np.array(names, dtype="U24")
            arrays[f"{prefix}_counts"] = np.array([counts[r] for r in names], dtype=np.int64)
        for name, values in self.meta.items():
            if name not in arrays and name not in RESERVED:
                arrays[name] = np.asarray(values)
        return arrays


#: A padded array (records of different widths padded to the largest, :attr:`HardwareLog.csi`) may take at most this
#: many times the bytes its values need...
PAD_RATIO = 8
#: ...once it is larger than this fraction of the per-array limit (1/64: 64 MiB by default); see
#: :func:`check_padding`.
PAD_FREE_SHARE = 64


def check_padding(where: str, padded: int, values: int, file_bytes: int, what: str = "records' widths") -> None:
    """Refuse, before it is allocated, an array of ``padded`` bytes that pads items of different widths to the
    largest, holding ``values`` bytes of their own, read from a file of ``file_bytes``.

    The rule: an array over :func:`~rfbench.io.files.max_array_bytes` (``RFBENCH_MAX_ARRAY_BYTES``) is refused, and
    so is one that is mostly padding (more than :data:`PAD_RATIO` times its values) and larger than
    1/:data:`PAD_FREE_SHARE` of that limit. Real logs have one width or a few, close to each other (the shared
    captures pad at most 3x: PicoScenes' Intel 5300 frames of 1-3 rx x 1-2 tx), so only a file built to have
    a few wide records among many narrow ones (one 100,000-value ESP32 list among thousands of 2-value ones) asks
    for such an array: gigabytes from a file of a megabyte. Raising ``RFBENCH_MAX_ARRAY_BYTES`` raises both."""
    limit = max_array_bytes()
    if padded > PAD_RATIO * max(values, 1) and padded > limit // PAD_FREE_SHARE:
        ratio = padded / max(file_bytes, 1)
        times = f"{ratio:.0f}" if ratio >= 10 else f"{ratio:.1f}"
        raise FormatError(f"{where}: the {what} vary so much that padding them to one array would take {padded} "
                          f"bytes, {times} times the file's size and {padded // max(values, 1)} times the {values} "
                          f"bytes of the values; an array over {PAD_RATIO} times its values is read only up to "
                          f"1/{PAD_FREE_SHARE} of RFBENCH_MAX_ARRAY_BYTES ({limit}): set it to "
                          f"{padded * PAD_FREE_SHARE} or more to read this file anyway")
    if padded > limit:
        raise FormatError(f"{where}: the padded CSI array would take {padded} bytes, over the limit of {limit} "
                          "(RFBENCH_MAX_ARRAY_BYTES); split the file")


#: The reader module of each format but the Intel 5300's, imported when first needed (a format whose module
#: is absent is simply unavailable).
READERS: dict[str, str] = {
    "atheros": "rfbench.io.atheros",
    "esp32": "rfbench.io.esp32",
    "nexmon": "rfbench.io.nexmon",
    "picoscenes": "rfbench.io.picoscenes",
}


_MISSING: set = set()  # reader modules found absent (a failed import is not cached by Python)


def reader(fmt: str) -> ModuleType:
    """The reader module of format ``fmt`` (a key of :data:`READERS`); FormatError if unknown or unavailable."""
    name = READERS.get(fmt)
    if name is None:
        raise FormatError(f"unknown CSI format {fmt!r}; use one of {', '.join(FORMATS)}")
    if name not in _MISSING:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            _MISSING.add(name)
    raise FormatError(f"the {fmt} reader is not available in this version of rfbench")


def available() -> tuple[str, ...]:
    """The formats of :data:`READERS` whose module can be imported, in :data:`FORMATS` order."""
    out = []
    for fmt in FORMATS:
        if fmt in READERS:
            try:
                reader(fmt)
            except FormatError:
                continue
            out.append(fmt)
    return tuple(out)


def detect(head: bytes) -> list[str]:
    """Every available format (of :data:`READERS`) whose ``sniff`` accepts ``head`` (the first
    :data:`SNIFF_BYTES` of a file), in :data:`FORMATS` order."""
    head = bytes(head[:SNIFF_BYTES])
    return [fmt for fmt in available() if reader(fmt).sniff(head)]


def read_source(source, what: str, cap: int | None = None) -> tuple[bytes, str | None]:
    """The bytes of ``source`` (a path, read through the safe opener, or a bytes-like) and its path if any."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), None
    if isinstance(source, np.ndarray) and source.dtype == np.uint8 and source.ndim == 1:
        return source.tobytes(), None
    if isinstance(source, (str, os.PathLike)):
        return read_input_bytes(source, what, cap=cap or MAX_INPUT_BYTES), os.fspath(source)
    raise TypeError(f"expected a path or bytes, not {type(source).__name__}")



#: Largest file :func:`read_reused` reads into its thread's reused buffer (a larger one gets its own array).
REUSED_MAX_BYTES = 32 << 20
_REUSED = threading.local()


def read_reused(source, what: str, cap: int | None = None, pad: int = 0) -> tuple[np.ndarray, str | None]:
    """Like :func:`read_source`, but a path's bytes come as a uint8 array that this thread's next call
    overwrites: a reader that keeps no view of its input uses it to skip the page faults of a fresh buffer for
    every file (about 0.5 ms a MB here, as much as decoding). Bytes-like input is viewed, not copied. With
    ``pad``, at least ``pad`` bytes of memory (of no given content) follow the returned array's last byte, for a
    kernel that loads whole words at the end of what it uses; bytes-like input is then copied.

    The buffer grows to the largest file read so far (at most :data:`REUSED_MAX_BYTES`, larger files get an
    array of their own) and is kept per thread. The file is read as :func:`rfbench.io.files.read_input_bytes`
    reads it (the same opener, size cap and one-line errors); a file that shrinks while read gives what was
    read."""
    if pad and isinstance(source, (bytes, bytearray, memoryview)) and memoryview(source).c_contiguous:
        return _padded(np.frombuffer(source, dtype=np.uint8), pad), None  # (viewed: one copy, into the padding)
    if not isinstance(source, (str, os.PathLike)):
        data, path = read_source(source, what, cap)
        data = np.frombuffer(data, dtype=np.uint8)
        return (_padded(data, pad) if pad else data), path
    cap = cap or MAX_INPUT_BYTES
    where = f"{what} {source}" if what else str(source)
    with input_errors(source, what, FormatError, "a file"):
        try:
            fd = open_regular(source, follow=True)
        except NotRegularFile:
            raise FormatError(f"{where}: not a regular file, expected a file") from None
        try:
            size = os.fstat(fd).st_size
            if size > cap:
                raise FormatError(f"{what or 'input'} {os.fspath(source)}: {size} bytes, more than the {cap} "
                                  "rfbench reads for it")
            buf = getattr(_REUSED, "buf", None)
            if size > REUSED_MAX_BYTES:
                buf = np.empty(size + pad, dtype=np.uint8)
            elif buf is None or buf.size < size + pad:
                buf = _REUSED.buf = np.empty(size + pad, dtype=np.uint8)
            got = _read_into(fd, buf, size)
            return buf[:got], os.fspath(source)
        finally:
            os.close(fd)


def _padded(data: np.ndarray, pad: int) -> np.ndarray:
    """A copy of the bytes ``data`` followed by ``pad`` zero bytes, as the view of its first ``len(data)``."""
    padded = np.zeros(data.size + pad, dtype=np.uint8)
    padded[:data.size] = data
    return padded[:data.size]


def _read_full(fd: int, view: memoryview, offset: int) -> int:
    """Read ``len(view)`` bytes of ``fd`` from ``offset`` into ``view``; fewer only at the end of the file."""
    got = 0
    while got < len(view):
        n = os.preadv(fd, [view[got:]], offset + got)
        if n == 0:
            break
        got += n
    return got


def _read_into(fd: int, buf: np.ndarray, size: int) -> int:
    """Read the first ``size`` bytes of ``fd`` into ``buf``: a file of :data:`SPLIT_READ_MIN_BYTES` or more in two
    halves on two threads (:func:`on_two_threads`), whose copies out of the page cache then overlap. Returns the
    bytes read: fewer than ``size`` if the file shrank meanwhile, and then only the run from its start."""
    view = memoryview(buf)[:size]
    if size < SPLIT_READ_MIN_BYTES:
        return _read_full(fd, view, 0)
    half = size // 2
    got = [0, 0]

    def first() -> None:
        got[0] = _read_full(fd, view[:half], 0)

    def second() -> None:
        got[1] = _read_full(fd, view[half:], half)

    on_two_threads(first, second)
    return got[0] if got[0] < half else half + got[1]


#: From this size up :func:`read_reused` reads a file in two halves on two threads.
SPLIT_READ_MIN_BYTES = 4 << 20
#: The one extra thread the readers may use at a time, process-wide (:func:`on_two_threads`).
_SECOND_THREAD = threading.Semaphore(1)


def on_two_threads(first, second, wanted: bool = True) -> bool:
    """Run ``first()`` on this thread and ``second()`` on another at the same time when ``wanted``, the machine
    has two cores or more and no other call holds the process's one extra thread; otherwise both on this thread,
    ``first`` then ``second``. Either's exception is raised here once both are done (never a half-done job
    passed on). Returns whether a second thread ran.

    One extra thread for the whole process, so that several files read at once (``parse DIR``'s pool) never
    add more than one thread between them; the work the two run must release the GIL (Numba kernels of
    :mod:`rfbench._jit`, file reads) to gain anything."""
    if not wanted or (os.cpu_count() or 1) < 2 or not _SECOND_THREAD.acquire(blocking=False):
        first()
        second()
        return False
    failed: list[BaseException] = []

    def run_second() -> None:
        try:
            second()
        except BaseException as exc:  # raised below, on the calling thread
            failed.append(exc)

    try:
        worker = threading.Thread(target=run_second, name="rfbench-second")
        worker.start()
        try:
            first()
        finally:
            worker.join()
    finally:
        _SECOND_THREAD.release()
    if failed:
        raise failed[0]
    return True


#: Bytes of memory a reader asks ``read_reused`` to keep after a log's last byte when it loads whole 64-bit words
#: (:func:`byte_words`), so a word that starts at any of the log's bytes stays inside the buffer.
WORD_PAD = 16


def byte_words(b: np.ndarray) -> np.ndarray:
    """``b`` seen as the little-endian 64-bit word at every byte: ``words[q]`` holds bytes ``q .. q + 7`` (a stride
    of one byte: one load wherever ``q`` falls, where a kernel would otherwise assemble bytes one by one). A view
    of the buffer ``b`` starts when it holds :data:`WORD_PAD` bytes past ``b``'s end (``read_reused(..., pad=
    WORD_PAD)`` gives such a ``b``), else of a padded copy; the bytes past ``b``'s end are of no given value."""
    base = b.base
    if not (isinstance(base, np.ndarray) and base.dtype == np.uint8 and base.ndim == 1
            and base.size >= b.size + WORD_PAD and base.ctypes.data == b.ctypes.data):
        base = _padded(b, WORD_PAD).base
    # numpy checks that the strided extent (byte len(b) + 6 at most) lies inside ``base``
    return np.ndarray(shape=(b.size,), dtype=np.uint64, buffer=base, strides=(1,))


@njit
def next_plausible(b, start, min_bytes, plausible, big, link):
    """Resynchronisation past damaged bytes, shared by the framing kernels (nexmon, PicoScenes): the first
    offset ``p >= start`` with ``p + min_bytes <= len(b)`` at which ``plausible(b, p, len(b), big, link)``
    holds (a kernel of that signature; ``big`` and ``link`` are passed through), or -1. One step per byte, so
    O(len(b)) whatever the bytes."""
    n = b.shape[0]
    p = start
    while p + min_bytes <= n:
        if plausible(b, p, n, big, link):
            return p
        p += 1
    return -1
