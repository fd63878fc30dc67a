"""Parse many bfee logs to CSI archives, each input independent (DESIGN.md §3, §11; docs/parse.md).

The archive (``.npz``, plain arrays, no pickles) holds ``csi`` (records, 30, Nrx, Ntx) complex64 — or
``csi_int8`` (records, 30, Nrx, Ntx, 2) int8 — plus one array per header field (``timestamp_low``,
``bfee_count``, ``nrx``, ``ntx``, ``rssi_a``, ``rssi_b``, ``rssi_c``, ``noise``, ``agc``, ``antenna_sel``,
``rate``), ``perm`` (records, 3) 0-based, ``perm_applied`` (records,) bool, ``csi_scaled`` complex128 when
requested, ``skipped_reasons``/``skipped_counts`` (the skip report), ``non_csi_codes``/``non_csi_counts``, and
the input it was made from: ``source_sha256`` (0-d str, hex) and ``source_bytes`` (0-d int64).

How a job runs (:func:`parse_many`)
-----------------------------------
Worker threads (one per core by default) each take the next input, read it into a buffer they reuse, hash
it (sha256), frame and unpack it (the Numba kernels release the GIL), and write its archive with one
``writev`` (:mod:`rfbench.io.npz`: stored zip members, each CRC computed once, array data written straight
from the arrays) to a new file in the output's folder that has **no name yet** (Linux ``O_TMPFILE``; where
the file system cannot, a hidden temporary file ``.NAME.npz.XXXXXXXX.tmp``). A committer thread makes the
outputs durable and gives them their names, in batches. Workers therefore never change a folder: creating
and renaming files in one folder from several threads serialises them on the folder's lock (two processes
writing into one folder ran about 25 % slower than into two; docs/parse.md).

Durability rule
---------------
An output appears under its name only complete and on disk, and a job that returns has every output it
reports on disk; between the two, outputs are committed in **batches**, not one by one:

1. each temporary file, once written, has its write-back to disk started at once (Linux: ``posix_fadvise``
   ``DONTNEED``, which starts write-back of the dirty pages and keeps them cached);
2. the committer takes the files finished within :data:`BATCH_SECONDS` of the first one (at most
   :data:`BATCH_FILES`), ``fdatasync``-s each (they are already written, so the first call commits the
   file system's journal for the whole batch and the others return at once), then names each: a file with
   no name is linked at its output's name when that name is free (``linkat``, which never replaces a file),
   and otherwise — ``existing="replace"`` — at a hidden temporary name, then renamed over the output; then
   it ``fsync``-s each folder it named files in (and the parent of each folder it created), once per batch.
   A replaced output is held open across its rename and closed by a release thread, where the file system
   then frees it (:func:`_hold`); the job returns once every one is closed.

A crash — the process killed, the machine losing power — therefore leaves every output either absent, as
it was before (``--force`` replaces a file only by a rename), or complete; it loses only what was not
committed yet (the batch being committed and the archives queued behind it), and a re-run with
``existing="keep-matching"`` (``--skip-existing``) finishes the rest. A durable commit per file (what
:func:`rfbench.io.files.atomic_write` does) made a job of 600 Widar-size logs take 3.73 s instead of 2.18 s
(docs/parse.md).

Cancellation: set the ``cancel`` event (``rfbench parse`` does on SIGINT, SIGTERM and SIGHUP). Workers stop
after the step they are in, every temporary file is deleted, nothing of the batch being committed is
named unless its naming had begun, and the result says which inputs finished. A process killed with
SIGKILL cannot clean up, but a file with no name needs none: the system frees it with the process. Only a
hidden ``.tmp`` file can stay (one being replaced over an output at that moment, or from a file system
without ``O_TMPFILE``); rfbench never deletes files it cannot prove it wrote, so remove them by hand.

Outputs get the permissions ``numpy.save`` would give them (read-write for everyone, less the umask).
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import math
import os
import queue
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable

import numpy as np

from rfbench.errors import FormatError, OutputExistsError, RfbenchError, ValidationError
from rfbench.io import hwlog, intel5300
from rfbench.io.files import (
    NotRegularFile,
    check_replaceable,
    file_mode,
    new_temporary,
    open_regular,
    refuse_inputs,
    replace_output,
)

__all__ = [
    "DEFAULT_GLOBS",
    "SNIFFED_GLOBS",
    "EXISTING",
    "Inputs",
    "ParseOptions",
    "ParseJob",
    "find_inputs",
    "looks_like_a_log",
    "expand_inputs",
    "output_path",
    "archive_arrays",
    "parse_many",
    "parse_one",
    "recorded_source",
    "BATCH_SECONDS",
    "BATCH_FILES",
    "FORMAT_GLOBS",
    "READER_OPTIONS",
    "detect_format",
    "read_hardware",
]

#: Folder inputs take files whose name matches one of these patterns (``--glob``)...
DEFAULT_GLOBS = ("*.dat",)
#: ...and, with neither ``--glob`` nor ``--format``, files of these names whose first bytes are a CSI log of a
#: format rfbench reads (a ``labels.csv`` beside the logs is then listed as not taken, not a failed input).
SNIFFED_GLOBS = ("*.csv", "*.pcap", "*.csi")
#: ...or, with a format given (``--format``), these.
FORMAT_GLOBS = {"intel5300": ("*.dat",), "atheros": ("*.dat",), "esp32": ("*.csv",), "nexmon": ("*.pcap",),
                "picoscenes": ("*.csi",)}
#: Options passed to the reader that takes them (a keyword of its ``read``), ignored by the others.
READER_OPTIONS = ("endian", "chip")
#: What to do with an output that already exists: refuse it (an error for that input), replace it, or keep
#: it when it records the same input (sha256 and size) and refuse it otherwise.
EXISTING = ("refuse", "replace", "keep-matching")
#: A batch is the files finished within this many seconds of its first one...
BATCH_SECONDS = 0.05
#: ...and at most this many files (each holds an open file descriptor until committed).
BATCH_FILES = 128
#: The largest buffers a worker keeps from file to file (larger files get buffers of their own).
KEEP_BUFFER_BYTES = 256 << 20

_datasync = getattr(os, "fdatasync", os.fsync)
_O_TMPFILE = getattr(os, "O_TMPFILE", 0)
#: errno values with which a file system refuses ``O_TMPFILE`` (the job then uses named temporary files there)
_NO_TMPFILE = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)}


# ----------------------------------------------------------------------------------------------------------
# Inputs and outputs
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Inputs:
    """The files a job will parse and what the folder search left out.

    Attributes
    ----------
    files : list of (Path, Path or None)
        Each input file with the folder it was found under (None for a file given directly), in order.
    patterns : tuple of str
        The name patterns folders were searched with.
    not_taken : list of Path
        Files under the folders that were not taken: matching no pattern (``.npz`` archives and rfbench's own
        temporary files not counted), or matching only a sniffed pattern with bytes no reader recognises; in
        sorted order.
    sniffed : tuple of str
        The name patterns whose files were taken only when their bytes are a CSI log.
    unlisted : list of (Path, str)
        Folders under the folders searched that could not be listed, with the reason: the files in them were
        not searched (the job says so, and exits 2).
    """

    files: list
    patterns: tuple = DEFAULT_GLOBS
    not_taken: list = field(default_factory=list)
    sniffed: tuple = ()
    unlisted: list = field(default_factory=list)


def _matches(rel: PurePosixPath, patterns) -> bool:
    """Whether a file (its path relative to the folder searched) is taken: a pattern without ``/`` matches
    the file name, one with ``/`` the relative path from the right (like :meth:`PurePath.match`)."""
    for pattern in patterns:
        if "/" in pattern:
            if rel.match(pattern):
                return True
        elif fnmatch.fnmatchcase(rel.name, pattern):
            return True
    return False


def _ours(name: str) -> bool:
    """rfbench's own outputs and temporary files, left out of the "not taken" count."""
    return name.endswith(".npz") or (name.startswith(".") and ".npz." in name and name.endswith(".tmp"))


def _walk(top: Path, unlisted: list | None = None):
    """``(folder, file names)`` of ``top`` and every folder under it, top-down in name order, as ``os.walk``
    with sorted names gives them (a link to a folder is neither descended nor a file) — but with a stack of its
    own: ``os.walk`` recurses once per level, and a chain of a thousand folders is a RecursionError. A folder
    that cannot be listed goes into ``unlisted`` as ``(folder, reason)``."""
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                items = list(it)
        except OSError as exc:
            if unlisted is not None:
                unlisted.append((folder, (exc.strerror or str(exc)).lower()))
            continue
        dirs, files = [], []
        for e in items:
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                files.append(e.name)
            elif not e.is_symlink():
                dirs.append(e.name)
        yield folder, sorted(files)
        stack.extend(folder / name for name in sorted(dirs, reverse=True))


def find_inputs(inputs: Iterable, patterns: Iterable[str] = DEFAULT_GLOBS, sniffed: Iterable[str] = ()) -> Inputs:
    """Turn files and folders into the files to parse.

    Folders are searched recursively (symbolic links to folders are not followed) for files whose name
    matches one of ``patterns`` (default ``*.dat``), or one of ``sniffed`` (``parse DIR`` passes
    :data:`SNIFFED_GLOBS`) when the file's first bytes are a log of a format rfbench reads
    (:func:`looks_like_a_log`), in sorted order; the other files found are counted in
    :attr:`Inputs.not_taken`. A path that does not exist is kept, so that it is reported as a failed input
    while the others still run; so is a matching name that is not a regular file (a FIFO, a device, a link to
    nothing). A folder that cannot be listed is in :attr:`Inputs.unlisted`.

    Raises
    ------
    ValidationError
        No input, an empty pattern, or a folder holding no matching file.
    """
    patterns = tuple(patterns) or DEFAULT_GLOBS
    sniffed = tuple(sniffed)
    for pattern in patterns + sniffed:
        if not pattern or pattern.startswith("/"):
            raise ValidationError(f"bad file pattern {pattern!r}: give a name pattern such as '*.dat'")
    files: list = []
    not_taken: list = []
    unlisted: list = []
    for item in inputs:
        item = Path(item)
        if item.is_dir():
            found, other = [], []
            for base, filenames in _walk(item, unlisted):
                for name in filenames:
                    path = base / name
                    rel = PurePosixPath(path.relative_to(item).as_posix())
                    if _matches(rel, patterns):
                        found.append(path)  # a FIFO or a dangling link too: its read fails, and says why
                    elif sniffed and _matches(rel, sniffed) and path.is_file() and looks_like_a_log(path):
                        found.append(path)
                    elif not _ours(name):
                        other.append(path)
            if not found and not unlisted:
                wanted = " or ".join(patterns)
                more = f" ({len(other)} other file(s); choose others with --glob PATTERN)" if other else ""
                logs = f" and no CSI log named {' or '.join(sniffed)}" if sniffed else ""
                if patterns == DEFAULT_GLOBS:
                    raise ValidationError(f"{item}: folder holds no .dat file{logs}{more}")
                raise ValidationError(f"{item}: folder holds no file matching {wanted}{logs}{more}")
            found.sort()
            files.extend((p, item) for p in found)
            not_taken.extend(sorted(other))
        else:
            files.append((item, None))
    if not files and not unlisted:
        raise ValidationError("no input given")
    return Inputs(files=files, patterns=patterns, not_taken=not_taken, sniffed=sniffed, unlisted=unlisted)


def looks_like_a_log(path: Path) -> bool:
    """Whether the first :data:`rfbench.io.hwlog.SNIFF_BYTES` of the file at ``path`` are the start of a log of a
    format rfbench reads (an Intel 5300 log, or one a reader's ``sniff`` accepts). Read through the safe opener
    (a FIFO never blocks); a file that cannot be read counts as one, so that the job reports why."""
    try:
        fd = open_regular(path)
    except NotRegularFile:
        return False
    except OSError:
        return True
    try:
        head = os.pread(fd, hwlog.SNIFF_BYTES, 0)
    except OSError:
        return True
    finally:
        os.close(fd)
    return _looks_intel(np.frombuffer(head, dtype=np.uint8)) or bool(hwlog.detect(head))


def expand_inputs(inputs: Iterable, patterns: Iterable[str] = DEFAULT_GLOBS) -> list:
    """``(input file, folder it was found under or None)`` pairs: :attr:`Inputs.files` of :func:`find_inputs`."""
    return find_inputs(inputs, patterns).files


def _linked_folder(folder: Path, out_dir: Path | None) -> Path | None:
    """The first folder from ``out_dir`` (excluded: the user named it) down to ``folder`` that is a symbolic
    link, or None (also when ``folder`` is not under ``out_dir``)."""
    if out_dir is None:
        return None
    try:
        parts = folder.relative_to(out_dir).parts
    except ValueError:
        return None
    d = out_dir
    for part in parts:
        d = d / part
        if os.path.islink(d):
            return d
    return None


def output_path(path: Path, found_under: Path | None, out_dir: Path | None) -> Path:
    """Where the archive of ``path`` goes: ``<stem>.npz`` (``.dat`` replaced, other suffixes kept) beside the
    input, or under ``out_dir`` — mirroring the sub-folders of a folder input."""
    name = path.stem + ".npz" if path.suffix == ".dat" else path.name + ".npz"
    if out_dir is None:
        return path.with_name(name)
    if found_under is not None:
        return out_dir / path.relative_to(found_under).with_name(name)
    return out_dir / name


def archive_arrays(log: intel5300.Intel5300Log, scaled: bool = False) -> dict[str, np.ndarray]:
    """The arrays of a CSI archive for ``log`` (see the module docstring for the names), without the
    ``source_*`` arrays (:func:`parse_many` adds them)."""
    arrays: dict[str, np.ndarray] = {}
    if log.csi is not None:
        arrays["csi"] = log.csi
    else:
        arrays["csi_int8"] = log.csi_int8
    arrays.update(log.headers())
    if scaled:
        arrays["csi_scaled"] = log.scaled_csi()
    reasons = list(log.skipped)
    arrays["skipped_reasons"] = np.array(reasons, dtype="U16")
    arrays["skipped_counts"] = np.array([log.skipped[r] for r in reasons], dtype=np.int64)
    codes = sorted(log.non_csi)
    arrays["non_csi_codes"] = np.array(codes, dtype=np.uint8)
    arrays["non_csi_counts"] = np.array([log.non_csi[c] for c in codes], dtype=np.int64)
    return arrays


def _looks_intel(data: np.ndarray) -> bool:
    """Whether ``data`` starts like an Intel 5300 log: among its first 4 records (each a big-endian length and a
    code), non-CSI ones (code 0xC1) and then a bfee one (0xBB) whose length is the one its Nrx and Ntx imply.
    The Intel path then needs no sniffing of the other formats."""
    n = data.shape[0]
    pos = 0
    for _ in range(4):
        if n - pos < 3:
            return False
        field_len = (int(data[pos]) << 8) | int(data[pos + 1])
        code = int(data[pos + 2])
        if code == intel5300.BFEE_CODE:
            body = pos + 3
            if n - body < 20:
                return False
            nrx, ntx = int(data[body + 8]), int(data[body + 9])
            length = int(data[body + 16]) | (int(data[body + 17]) << 8)
            return 1 <= nrx <= 3 and 1 <= ntx <= 3 and length == intel5300.calc_len(nrx, ntx) \
                and field_len == 21 + length
        if code != 0xC1 or field_len == 0:
            return False
        pos += 2 + field_len
    return False


#: How a failure names each format it tried, in :data:`rfbench.io.hwlog.FORMATS` order.
FORMAT_NAMES = {"intel5300": "Intel 5300", "atheros": "Atheros", "nexmon": "nexmon pcap", "esp32": "ESP32 CSV",
                "picoscenes": "PicoScenes"}


def _intel_framed(data: np.ndarray) -> bool:
    """Whether the first record header of ``data`` reads as an Intel 5300 one (code 0xBB or 0xC1, its length
    inside the file): a log whose failure the Intel reader's own message explains."""
    n = data.shape[0]
    return n >= 3 and int(data[2]) in (intel5300.BFEE_CODE, 0xC1) and 3 <= 2 + ((int(data[0]) << 8) | int(data[1])) <= n


def nothing_fits() -> str:
    """The failure of a file whose format was to be told from its bytes and that no reader takes."""
    names = [FORMAT_NAMES.get(f, f) for f in ("intel5300", *hwlog.available())]
    return f"no known CSI log: tried {', '.join(names[:-1])} and {names[-1]}, and none fits the bytes"


def detect_format(data) -> str:
    """The format of a log from its bytes: ``"intel5300"`` when its first record is an Intel 5300 one or no
    other reader recognises it (the Intel reader then says what is wrong), else the one format whose
    ``sniff`` accepts it (:func:`rfbench.io.hwlog.detect`).

    Raises
    ------
    FormatError
        Two or more formats accept the bytes (pass the format to choose).
    """
    data = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data
    if _looks_intel(data):
        return "intel5300"
    found = hwlog.detect(data[:hwlog.SNIFF_BYTES].tobytes())
    if len(found) > 1:
        raise FormatError(f"the bytes fit {' and '.join(found)} logs alike; pass `format` to choose")
    return found[0] if found else "intel5300"


#: Leading bytes that decide a log's format (:func:`detect_format` reads no further): the Intel 5300 test looks at
#: up to four records of at most 3 + 65,535 bytes each, the other formats' at the first 4,096 bytes.
DETECT_BYTES = 4 * (3 + 65535)


def other_hardware_format(data) -> str | None:
    """The format of a log of CSI hardware other than the Intel 5300, told from its bytes (its first
    :data:`DETECT_BYTES` suffice), or None for an Intel 5300 log and for bytes that fit no format, or two."""
    try:
        fmt = detect_format(data)
    except FormatError:
        return None
    return None if fmt == "intel5300" else fmt


def read_hardware(data, fmt: str, options: ParseOptions | None = None, path: str | None = None) -> hwlog.HardwareLog:
    """Read ``data`` (bytes) with the reader of ``fmt``, passing it the options of :data:`READER_OPTIONS` its
    ``read`` takes; a FormatError names ``path``."""
    import inspect

    module = hwlog.reader(fmt)
    params = inspect.signature(module.read).parameters
    options = options or ParseOptions()
    kwargs = {k: getattr(options, k) for k in READER_OPTIONS if k in params and getattr(options, k) is not None}
    buf = data if isinstance(data, (bytes, bytearray, memoryview)) else memoryview(np.ascontiguousarray(data))
    try:
        log = module.read(buf, **kwargs)
    except FormatError as exc:
        message = str(exc)
        raise FormatError(message[len("input: "):] if message.startswith("input: ") else message) from None
    if path is not None:
        from dataclasses import replace

        log = replace(log, source=path)
    return log


def recorded_source(archive: Path) -> tuple[str, int] | None:
    """``(source_sha256, source_bytes)`` recorded in an existing archive, or None when it records none (an
    archive from an older rfbench, or not an archive: a link, a FIFO or a device too, never followed, waited on or
    read). Reads only those two members, each bounded, and only the arrays rfbench writes there: a 0-d str of at
    most :data:`_MAX_DIGEST_CHARS` characters and a 0-d integer, their ``.npy`` headers read by
    :func:`rfbench.io.files.parse_npy_header` (never NumPy's ``read_array``, which allocates whatever shape a
    header declares before reading a byte)."""
    import io
    import zipfile

    from rfbench.io.files import open_regular, parse_npy_header

    try:
        fh = os.fdopen(open_regular(archive), "rb")
    except OSError:
        return None
    try:
        with fh, zipfile.ZipFile(fh) as zf:
            values = []
            for name, kinds, widest in (("source_sha256.npy", "U", 4 * _MAX_DIGEST_CHARS),
                                        ("source_bytes.npy", "iu", 8)):
                info = zf.getinfo(name)
                if info.file_size > 4096:
                    return None
                with zf.open(info) as member:
                    member_bytes = io.BytesIO(member.read(4097))
                shape, _, dtype = parse_npy_header(member_bytes, name)
                if shape != () or dtype.kind not in kinds or dtype.itemsize > widest:
                    return None
                data = member_bytes.read(dtype.itemsize)
                if len(data) != dtype.itemsize:
                    return None
                values.append(np.frombuffer(data, dtype=dtype)[0])
    except (OSError, KeyError, ValueError, EOFError, RfbenchError, zipfile.BadZipFile):
        return None
    digest, size = values
    return str(digest), int(size)


#: The longest ``source_sha256`` :func:`recorded_source` reads (a sha256 is 64 hex digits).
_MAX_DIGEST_CHARS = 64


# ----------------------------------------------------------------------------------------------------------
# The job
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParseOptions:
    """Settings of a parse job.

    Attributes
    ----------
    out_dir : Path or None
        Folder for the archives, mirroring the sub-folders of folder inputs (default: beside each input).
    scaled : bool
        Also store ``csi_scaled`` (complex128).
    raw_int8 : bool
        Store ``csi_int8`` instead of complex64 ``csi``.
    existing : str
        One of :data:`EXISTING`: ``"refuse"`` (default), ``"replace"`` or ``"keep-matching"``.
    workers : int or None
        Threads parsing files (default: one per core, at most 8).
    format : str or None
        Read every input as this format (one of :data:`rfbench.io.hwlog.FORMATS`); default: each input's
        format is told from its bytes (:func:`detect_format`).
    endian, chip : str or None
        Passed to the reader whose ``read`` takes them (Atheros: ``endian``; nexmon: ``chip``).
    """

    out_dir: Path | None = None
    scaled: bool = False
    raw_int8: bool = False
    existing: str = "refuse"
    workers: int | None = None
    format: str | None = None
    endian: str | None = None
    chip: str | None = None

    def __post_init__(self):
        if self.format is not None and self.format not in hwlog.FORMATS:
            raise ValidationError(f"format must be one of {', '.join(hwlog.FORMATS)}, not {self.format!r}")
        if self.endian not in (None, "little", "big"):
            raise ValidationError(f"endian must be little or big, not {self.endian!r}")
        if self.existing not in EXISTING:
            raise ValidationError(f"existing must be one of {', '.join(EXISTING)}, not {self.existing!r}")
        if self.workers is not None and (isinstance(self.workers, bool) or not isinstance(self.workers, int)
                                         or self.workers < 1):
            raise ValidationError(f"workers must be an integer >= 1, not {self.workers!r}")


@dataclass
class ParseJob:
    """The outcome of :func:`parse_many`.

    ``files`` holds one dict per input, in input order: ``input`` (absolute path), ``name`` (the path
    relative to the folder it was found under, else as given), ``path`` (the folder joined with ``name``),
    ``output`` (absolute path of the archive, or
    None), ``status`` (``"written"``, ``"kept"`` — an up-to-date archive left as it was —, ``"failed"`` or
    ``"not finished"`` — the job was cancelled first), ``error`` (one line, or None) and ``summary`` (the
    log's :meth:`~rfbench.io.intel5300.Intel5300Log.summary`, or None). ``cancelled`` says whether the job
    was cancelled before every input finished.
    """

    files: list
    cancelled: bool = False

    def count(self, status: str) -> int:
        return sum(1 for f in self.files if f["status"] == status)


class _Failed(Exception):
    """One input's failure (its one-line reason), raised inside a worker."""


#: The failure of an input whose reading ran out of memory (a MemoryError in its worker): the other inputs go on.
_NO_MEMORY = "not enough memory to read it (parse it alone, with fewer workers, or where more memory is free)"


def _os_reason(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied"
    if exc.errno == errno.ENOSPC:
        return "no space left on device"
    if exc.errno == errno.EROFS:
        return "read-only file system"
    return (exc.strerror or str(exc)).lower()


class _Scratch:
    """A worker's buffers, reused from file to file: the input bytes and the unpacked CSI."""

    def __init__(self):
        self.data = np.empty(0, dtype=np.uint8)
        self.csi = np.empty(0, dtype=np.uint8)
        self.records = (0, None)  # (bytes they are sized for, the framing kernel's per-record outputs)

    def record_outputs(self, n_bytes: int) -> tuple:
        """The framing kernel's per-record outputs for a file of ``n_bytes``, reused while large enough."""
        if self.records[0] < n_bytes:
            outputs = intel5300._record_outputs(n_bytes)
            if n_bytes <= KEEP_BUFFER_BYTES:
                self.records = (n_bytes, outputs)
            return outputs
        return self.records[1]

    def read(self, path: Path) -> np.ndarray:
        """The bytes of the regular file at ``path`` (a view of the reused buffer), read to its end."""
        # O_NONBLOCK: opening a FIFO must not wait for a writer (it is then refused as not a regular file)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise _Failed("is a directory")
            if not stat.S_ISREG(st.st_mode):
                raise _Failed("not a regular file")
            buf, pos, size = self.data, 0, st.st_size
            while True:
                if buf.shape[0] <= pos + size:  # one spare byte: a whole file takes one read and one empty read
                    grown = np.empty(max(pos + size + 1, 2 * buf.shape[0]), dtype=np.uint8)
                    grown[:pos] = buf[:pos]
                    buf = grown
                got = os.readv(fd, [memoryview(buf)[pos:]])
                if not got:
                    break
                pos += got
                size = max(size - got, 0)
        finally:
            os.close(fd)
        self.data = buf if buf.shape[0] <= KEEP_BUFFER_BYTES else np.empty(0, dtype=np.uint8)
        return buf[:pos]

    def csi_out(self, shape, dtype) -> np.ndarray:
        need = math.prod(shape) * np.dtype(dtype).itemsize
        buf = self.csi
        if buf.shape[0] < need:
            buf = np.empty(max(need, 2 * buf.shape[0]), dtype=np.uint8)
            if need <= KEEP_BUFFER_BYTES:
                self.csi = buf
        return buf[:need].view(dtype).reshape(shape)


def _write_all(fd: int, buffers: list) -> None:
    """Write ``buffers`` one after another with as few ``writev`` calls as the system allows."""
    views = [b if isinstance(b, bytes) or (isinstance(b, memoryview) and b.format == "B" and b.ndim == 1)
             else memoryview(b).cast("B") for b in buffers]
    limit = getattr(os, "sysconf", lambda _: 1024)("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024
    limit = limit if limit and limit > 0 else 1024
    while views:
        n = os.writev(fd, views[:limit])
        while views and n >= len(views[0]):
            n -= len(views[0])
            views.pop(0)
        if n:
            views[0] = views[0][n:]


def _start_writeback(fd: int) -> None:
    """Start writing the file's dirty pages to disk now, without waiting (see the durability rule). On Linux,
    ``POSIX_FADV_DONTNEED`` starts write-back of the dirty range and drops only pages already clean, so the
    pages just written stay cached (checked with fincore)."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is not None:
        try:
            advise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass


def _open_fd_dir() -> int | None:
    """A descriptor of ``/proc/self/fd``, through which :func:`_link` names a file that has none; None without
    ``/proc`` (the job then uses named temporary files)."""
    try:
        return os.open("/proc/self/fd", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def _link(fd_dir: int, fd: int, path) -> None:
    """Give the open file ``fd`` the name ``path`` (``linkat`` through ``/proc/self/fd``, following the link to
    the file itself); raises FileExistsError when ``path`` exists, which it never replaces."""
    os.link(str(fd), path, src_dir_fd=fd_dir, follow_symlinks=True)


def _hold(path: Path) -> int | None:
    """A read-only descriptor of the output about to be replaced, or None (no regular file there).

    Renamed over, an output is freed only when nothing refers to it any more; its descriptor, closed by the
    job's release thread, makes that happen there rather than inside the committer's rename. Freeing a file
    waits for the disk on some systems (ext4 mounted with ``discard``, as on the machine the figures come
    from: 0.3–0.4 ms a file), and in the committer that wait held up the next archives: the workers waited for
    room to hand theirs in, and a job of 600 replaced outputs took 5 % longer (docs/parse.md)."""
    try:
        return open_regular(path)
    except OSError:  # nothing there, a symbolic link, not a regular file: nothing to hold
        return None


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a folder; the renames are then as durable as they get
        pass
    finally:
        os.close(fd)


def _file_key(path, follow: bool) -> tuple:
    """What names one file: its device and inode (following a link when ``follow``), else its absolute path."""
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except (OSError, ValueError):
        return ("path", os.path.normcase(os.path.abspath(os.fspath(path))))
    return ("file", info.st_dev, info.st_ino)


def _inputs_by_file(paths: Iterable) -> dict:
    """The inputs of a job by the file each is (:func:`_file_key`, links followed): one ``stat`` each, so that
    checking every output against every input stays linear."""
    return {_file_key(p, True): p for p in paths}


def _input_at(read: dict, target: Path) -> Path | None:
    """The input of :func:`_inputs_by_file` that the output ``target`` is (the same file under any name, or the same
    path), or None. An output that is a symbolic link is the link, not its target: a job replaces it, never writes
    through it."""
    return read.get(_file_key(target, False))


def _is_input(target: Path, given: Path) -> str:
    """The failure of an input whose output ``target`` is the job's input ``given``
    (:func:`rfbench.io.files.refuse_inputs`' words)."""
    try:
        refuse_inputs([target], [given])
    except OutputExistsError as exc:
        return f"output {exc}"
    return f"output {target} is an input of this job ({given}): rfbench never writes over what it reads, `force` " \
           "or not; write elsewhere"  # (the file changed between the two looks)


@dataclass
class _Pending:
    """An archive written to its temporary file, waiting for its batch to be committed."""

    index: int
    fd: int | None  # open until the file has its name
    tmp: str | None  # its temporary name, or None while it has no name
    target: Path
    size: int


class _Job:
    def __init__(self, files, options: ParseOptions, progress, cancel):
        self.files = files
        self.options = options
        self.progress = progress or (lambda n=1: None)
        self.cancel = cancel if cancel is not None else threading.Event()
        self.results: list = []
        self.lock = threading.Lock()
        self.next_index = 0
        self.temps: set = set()  # every temporary file alive, for the clean-up
        self.made_dirs: set = set()
        self.new_dirs: set = set()  # folders created since the last commit: their parents need an fsync
        self.commit_q: queue.Queue = queue.Queue(maxsize=BATCH_FILES)
        self.done_q: queue.Queue = queue.Queue()
        self.release_q: queue.Queue = queue.Queue(maxsize=BATCH_FILES)  # replaced outputs, held open
        self.crash: BaseException | None = None
        self.mode = file_mode()
        self.fd_dir: int | None = None  # /proc/self/fd while the job runs: links an unnamed file by its descriptor
        self.named_only: set = set()  # folders whose file system refused O_TMPFILE
        n = len(files)
        workers = options.workers or min(os.cpu_count() or 1, 8)
        self.n_workers = max(1, min(workers, n))
        self.unpack_threads = None if n == 1 else 1  # one file alone may use every core for itself

    # -- per input -------------------------------------------------------------------------------------

    def plan(self) -> list:
        """Result records for every input, failed up front: an input whose output would also be another input's
        (the later inputs), or would be one of the job's inputs (:func:`_inputs_by_file`)."""
        seen: dict = {}
        read = _inputs_by_file(path for path, _ in self.files)
        for path, under in self.files:
            target = output_path(path, under, self.options.out_dir)
            name = str(path.relative_to(under)) if under is not None else str(path)
            rec = {"input": os.path.abspath(path), "path": str(path), "name": name, "output": None,
                   "status": "not finished",
                   "error": None, "summary": None, "_target": target}
            key = os.path.abspath(target)
            linked = _linked_folder(target.parent, self.options.out_dir) if under is not None else None
            given = _input_at(read, target)
            if given is not None:
                rec["status"] = "failed"
                rec["error"] = _is_input(target, given)
            elif key in seen:
                rec["status"] = "failed"
                rec["error"] = f"output {target} would also be written by input {seen[key]}"
            elif linked is not None:
                rec["status"] = "failed"
                rec["error"] = (f"output folder {linked} is a symbolic link: rfbench writes the mirrored folders "
                                f"only as real folders under {self.options.out_dir}, never through a link out of it")
            else:
                seen[key] = name
            self.results.append(rec)
        return self.results

    def _take(self) -> int | None:
        with self.lock:
            while self.next_index < len(self.results):
                i = self.next_index
                self.next_index += 1
                if self.results[i]["status"] == "not finished":
                    return i
            return None

    def worker(self) -> None:
        scratch = _Scratch()
        try:
            while not self.cancel.is_set():
                i = self._take()
                if i is None:
                    return
                rec = self.results[i]
                try:
                    pending = self._one(i, rec, scratch)
                except _Failed as exc:
                    self._finish(i, "failed", error=str(exc))
                    continue
                except RfbenchError as exc:
                    self._finish(i, "failed", error=str(exc))
                    continue
                except MemoryError:  # this input's failure (the readers bound what they ask for, not what is free)
                    self._finish(i, "failed", error=_NO_MEMORY)
                    continue
                if pending is not None:
                    self.commit_q.put(pending)
        except BaseException as exc:  # a bug: stop the job, clean up, re-raise in the caller
            self.crash = exc
            self.cancel.set()
        finally:
            with self.lock:
                self.live -= 1
                last = self.live == 0
            if last:  # nothing more will be handed in: the committer need not wait for a batch to fill
                self.commit_q.put(None)

    def _one(self, i: int, rec: dict, scratch: _Scratch) -> _Pending | None:
        path, _ = self.files[i]
        target: Path = rec["_target"]
        existing = self.options.existing
        exists = os.path.lexists(target)
        if exists and os.path.isdir(target):
            raise _Failed(f"output {target} is a folder, not a file")
        if exists:
            try:
                check_replaceable(target)  # a device or a FIFO there is never replaced, --force or not
            except OutputExistsError as exc:
                raise _Failed(f"output {exc}") from None
        if exists and existing == "refuse":
            raise OutputExistsError(f"output {target} already exists; pass `force` to overwrite it "
                                    "or --skip-existing to keep it when it was made from this input")
        try:
            data = scratch.read(path)
        except FileNotFoundError:
            raise _Failed("no such file") from None
        except IsADirectoryError:
            raise _Failed("is a directory") from None
        except OSError as exc:
            raise _Failed(f"cannot read ({_os_reason(exc)})") from None
        if data.shape[0] == 0:
            raise _Failed("empty file (0 bytes)")
        digest = hashlib.sha256(data).hexdigest()
        if exists and existing == "keep-matching":
            recorded = recorded_source(target)
            if recorded == (digest, int(data.shape[0])):
                self._finish(i, "kept", output=target)
                return None
            if recorded is None:
                raise OutputExistsError(f"output {target} exists but records no source input (not made by "
                                        "this rfbench); pass `force` to replace it")
            raise OutputExistsError(f"output {target} was made from a different input (sha256 {recorded[0][:12]}…, "
                                    f"{recorded[1]} bytes; this input: {digest[:12]}…, {data.shape[0]} bytes); "
                                    "pass `force` to replace it")
        fmt = self.options.format or detect_format(data)
        if fmt != "intel5300":
            return self._other(i, rec, path, target, data, digest, fmt)
        log = intel5300._parse(data, str(path), self.options.raw_int8, self.unpack_threads, out=scratch.csi_out,
                               records=scratch.record_outputs(data.shape[0]))
        summary = log.summary()
        rec["summary"] = summary
        if log.n_records == 0:
            if self.options.format is None and not _intel_framed(data):
                raise _Failed(nothing_fits())
            bad = ", ".join(f"{k} {v}" for k, v in log.skipped.items() if v)
            raise _Failed(
                "no valid Intel 5300 CSI record (bfee, code 0xBB) found"
                + (f"; skipped: {bad}" if bad else "")
                + (f"; non-CSI records: {sum(log.non_csi.values())}" if log.non_csi else "")
            )
        arrays = archive_arrays(log, self.options.scaled)
        arrays["source_sha256"] = np.array(digest)
        arrays["source_bytes"] = np.array(data.shape[0], dtype=np.int64)
        if self.cancel.is_set():
            return None
        return self._write_temp(i, target, arrays)

    def _other(self, i: int, rec: dict, path: Path, target: Path, data: np.ndarray, digest: str,
               fmt: str) -> _Pending | None:
        """:meth:`_one` for a log of another hardware than the Intel 5300: its reader, its archive."""
        if self.options.scaled or self.options.raw_int8:
            raise _Failed(f"a {fmt} log has no scaled or int8 form (`scaled` and `raw_int8` are for Intel 5300 logs)")
        log = read_hardware(data, fmt, self.options, str(path))
        rec["summary"] = log.summary()
        if log.n_records == 0:
            bad = ", ".join(f"{k} {v}" for k, v in log.skipped.items() if v)
            raise _Failed(f"no valid {fmt} CSI record found" + (f"; skipped: {bad}" if bad else ""))
        arrays = log.archive_arrays()
        arrays["source_sha256"] = np.array(digest)
        arrays["source_bytes"] = np.array(data.shape[0], dtype=np.int64)
        if self.cancel.is_set():
            return None
        return self._write_temp(i, target, arrays)

    def _write_temp(self, i: int, target: Path, arrays: dict) -> _Pending:
        from rfbench.io.npz import ArchiveTooLarge, npz_buffers

        parent = target.parent
        try:
            if parent not in self.made_dirs:
                self._make_dirs(parent)
            fd, tmp = self._new_file(target)
        except OSError as exc:
            raise _Failed(f"cannot write {target} ({_os_reason(exc)} in {parent})") from None
        try:
            try:
                buffers, size = npz_buffers(arrays)
                _write_all(fd, buffers)
            except ArchiveTooLarge:  # needs zip64: numpy's writer handles it
                with os.fdopen(os.dup(fd), "wb") as fh:
                    np.savez(fh, **arrays)
                size = os.fstat(fd).st_size
            _start_writeback(fd)
        except BaseException as exc:
            self._discard(fd, tmp)
            if isinstance(exc, OSError):
                raise _Failed(f"cannot write {target} ({_os_reason(exc)})") from None
            raise
        return _Pending(i, fd, tmp, target, size)

    def _new_file(self, target: Path) -> tuple[int, str | None]:
        """A new file for ``target``'s archive, in its folder: ``(fd, None)`` with no name yet, or ``(fd, tmp)``
        a hidden temporary file where the file system refuses ``O_TMPFILE``."""
        parent = target.parent
        if self.fd_dir is not None and parent not in self.named_only:
            try:
                return os.open(parent, _O_TMPFILE | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), self.mode), None
            except OSError as exc:
                if exc.errno not in _NO_TMPFILE:
                    raise
                self.named_only.add(parent)
        fd, tmp = new_temporary(parent, target.name, self.mode)
        with self.lock:
            self.temps.add(tmp)
        return fd, tmp

    def _link_temp(self, p: _Pending) -> None:
        """Give the unnamed file of ``p`` a hidden temporary name beside its output."""
        for _ in range(100):
            tmp = str(p.target.with_name(f".{p.target.name}.{os.urandom(6).hex()}.tmp"))
            try:
                _link(self.fd_dir, p.fd, tmp)
            except FileExistsError:
                continue
            with self.lock:
                self.temps.add(tmp)
            p.tmp = tmp
            return
        raise FileExistsError(errno.EEXIST, "no free temporary name", str(p.target))  # pragma: no cover

    def _place(self, p: _Pending) -> None:
        """Put the committed file of ``p`` at its output's name (see the durability rule)."""
        replace = self.options.existing == "replace"
        if p.tmp is None:
            try:
                _link(self.fd_dir, p.fd, p.target)  # never replaces a file
                return
            except FileExistsError:
                if not replace:
                    raise OutputExistsError(f"output {p.target} appeared while this job ran; pass `force` to "
                                            "overwrite it") from None
            self._link_temp(p)
        elif not replace and os.path.lexists(p.target):
            raise OutputExistsError(f"output {p.target} appeared while this job ran; pass `force` to overwrite it")
        old = _hold(p.target) if replace else None
        try:
            replace_output(p.tmp, p.target)
        except BaseException:
            if old is not None:
                os.close(old)
            raise
        if old is not None:
            self.release_q.put(old)
        with self.lock:
            self.temps.discard(p.tmp)

    def _make_dirs(self, folder: Path) -> None:
        missing = []
        d = folder
        while not d.exists():
            missing.append(d)
            if d.parent == d:
                break
            d = d.parent
        folder.mkdir(parents=True, exist_ok=True)
        with self.lock:
            self.made_dirs.add(folder)
            self.new_dirs.update(missing)

    def _discard(self, fd: int | None, tmp: str | None) -> None:
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        if tmp is None:  # a file with no name is gone with its descriptor
            return
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        except OSError:
            return  # still listed: the final clean-up tries again
        with self.lock:
            self.temps.discard(tmp)

    def _finish(self, i: int, status: str, error: str | None = None, output: Path | None = None) -> None:
        rec = self.results[i]
        rec["status"] = status
        rec["error"] = error
        rec["output"] = os.path.abspath(output) if output is not None else None
        self.done_q.put(i)

    # -- the committer ---------------------------------------------------------------------------------

    def committer(self) -> None:
        try:
            ended = False
            while not ended:
                first = self.commit_q.get()
                if first is None:
                    return
                batch = [first]
                deadline = time.monotonic() + BATCH_SECONDS
                while len(batch) < BATCH_FILES:
                    wait = deadline - time.monotonic()
                    try:
                        item = self.commit_q.get(timeout=wait) if wait > 0 else self.commit_q.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        ended = True
                        break
                    batch.append(item)
                self._commit(batch)
        except BaseException as exc:  # a bug: stop the job; keep taking (and deleting) what workers still hand in
            self.crash = exc
            self.cancel.set()
            while True:
                item = self.commit_q.get()
                if item is None:
                    return
                self._discard(item.fd, item.tmp)

    def _drain(self) -> None:
        """Discard whatever is still queued for committing (after a cancellation)."""
        while True:
            try:
                item = self.commit_q.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                self._discard(item.fd, item.tmp)

    def _commit(self, batch: list) -> None:
        if self.cancel.is_set():
            for p in batch:
                self._discard(p.fd, p.tmp)
            return
        ready = []
        for p in batch:
            try:
                _datasync(p.fd)
            except OSError as exc:
                self._discard(p.fd, p.tmp)
                self._finish(p.index, "failed", error=f"cannot write {p.target} ({_os_reason(exc)})")
                continue
            ready.append(p)
        if self.cancel.is_set():
            for p in ready:
                self._discard(p.fd, p.tmp)
            return
        folders = set()
        renamed = []
        for p in ready:
            try:
                self._place(p)
            except (OSError, OutputExistsError) as exc:
                self._discard(p.fd, p.tmp)
                reason = str(exc) if isinstance(exc, OutputExistsError) else \
                    f"cannot write {p.target} ({_os_reason(exc)})"
                self._finish(p.index, "failed", error=reason)
                continue
            os.close(p.fd)
            p.fd = None
            folders.add(p.target.parent)
            renamed.append(p)
        with self.lock:
            new_dirs, self.new_dirs = self.new_dirs, set()
        for d in folders | {d.parent for d in new_dirs}:
            _fsync_dir(d)
        for p in renamed:
            self._finish(p.index, "written", output=p.target)

    def releaser(self) -> None:
        """Close the descriptors that hold replaced outputs (see :func:`_hold`) until handed None."""
        while True:
            fd = self.release_q.get()
            if fd is None:
                return
            try:
                os.close(fd)
            except OSError:
                pass

    # -- running ---------------------------------------------------------------------------------------

    def run(self) -> ParseJob:
        self.plan()
        for rec in self.results:
            if rec["status"] != "not finished":
                self.progress(1)
        threads = [threading.Thread(target=self.worker, name=f"rfbench-parse-{k}", daemon=True)
                   for k in range(self.n_workers)]
        self.live = len(threads)
        self.fd_dir = _open_fd_dir() if _O_TMPFILE else None
        committer = threading.Thread(target=self.committer, name="rfbench-commit", daemon=True)
        releaser = threading.Thread(target=self.releaser, name="rfbench-release", daemon=True)
        releaser.start()
        committer.start()
        for t in threads:
            t.start()
        try:
            remaining = sum(1 for r in self.results if r["status"] == "not finished")
            while remaining and not self.cancel.is_set():
                try:
                    self.done_q.get(timeout=0.1)
                except queue.Empty:
                    continue
                remaining -= 1
                self.progress(1)
        except BaseException:  # KeyboardInterrupt, an exception from progress(): stop the threads, clean up
            self.cancel.set()
            raise
        finally:
            for t in threads:
                t.join()
            committer.join()
            self.release_q.put(None)
            releaser.join()
            self._drain()
            with self.lock:
                left = list(self.temps)
            for tmp in left:
                self._discard(None, tmp)
            if self.fd_dir is not None:
                os.close(self.fd_dir)
                self.fd_dir = None
            while True:  # the progress of the last events
                try:
                    self.done_q.get_nowait()
                except queue.Empty:
                    break
        if self.crash is not None:
            raise self.crash
        for rec in self.results:
            rec.pop("_target", None)
        cancelled = any(r["status"] == "not finished" for r in self.results)
        return ParseJob(files=self.results, cancelled=cancelled)


def parse_many(files: Iterable, options: ParseOptions | None = None, progress: Callable | None = None,
               cancel: threading.Event | None = None) -> ParseJob:
    """Parse logs and write one archive each, in parallel, under the durability rule of this module.

    Parameters
    ----------
    files : iterable of (Path, Path or None)
        Input files and the folder each was found under (:attr:`Inputs.files`); outputs mirror the
        sub-folders of that folder under ``options.out_dir``.
    options : ParseOptions
        Where outputs go, what they hold, what to do with existing ones, how many threads.
    progress : callable, optional
        Called with ``1`` each time an input is done (from the calling thread).
    cancel : threading.Event, optional
        Set it (from a signal handler, another thread) to stop: inputs not finished by then are reported as
        ``"not finished"`` and every temporary file is deleted.

    Returns
    -------
    ParseJob
        Never raises for a bad input: each failure is that input's ``error``.
    """
    files = [(Path(p), None if u is None else Path(u)) for p, u in files]
    options = options or ParseOptions()
    return _Job(files, options, progress, cancel).run()


def parse_one(path: Path, found_under: Path | None = None, out_dir: Path | None = None, scaled: bool = False,
              raw_int8: bool = False, force: bool = False, outputs_seen: set | None = None) -> dict:
    """Parse one log and write its archive; never raises for a bad input.

    Returns ``{"input", "output", "error", "summary"}`` (plus ``status`` and ``name``, as in
    :class:`ParseJob`): ``error`` is None on success, else one line saying why this input failed. For many
    files, :func:`parse_many` (parallel, and durable in batches rather than file by file).
    """
    path = Path(path)
    target = output_path(path, found_under, out_dir)
    if outputs_seen is not None:
        if target in outputs_seen:
            return {"input": os.path.abspath(path), "path": str(path), "name": str(path), "output": None,
                    "status": "failed",
                    "error": f"output {target} would also be written by another input", "summary": None}
        outputs_seen.add(target)
    options = ParseOptions(out_dir=out_dir, scaled=scaled, raw_int8=raw_int8,
                           existing="replace" if force else "refuse", workers=1)
    return parse_many([(path, found_under)], options).files[0]

# -- the process around a job: kernels loaded first, no collector passes over Numba's objects ---------------
