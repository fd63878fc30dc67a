"""Reading dataset files the way windows must: inside the manifest's root, regular files only, each checked
against the size (and sha256, where recorded) ingest wrote, and hashed from the very bytes that are parsed.

:class:`DatasetFiles` is the one door to a dataset tree. It resolves a manifest path under the dataset root
(symlinks are followed, then the target must still lie under the root), opens it, refuses anything but a
regular file, compares ``fstat``'s size with the manifest's, reads exactly that many bytes (a file that grew
is caught by reading one byte more), hashes them and returns them; every file it served is remembered with
its size and sha256 for the index. Any mismatch is one :class:`~rfbench.errors.ValidationError` line naming
the file (exit 2): nothing is read past a bad file.

It is safe to call from several threads at once.

A :class:`Reading` keeps what was decoded from each verified file (a parsed receiver log, a WiFi frame's
variables, a ground truth) on disk, so that windows built again under other corruption settings (a robustness
sweep's cells) come from the very same decoded units without reading, hashing or parsing the files again.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import dataclasses
import errno
import hashlib
import io
import os
import stat
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from rfbench.errors import FormatError, OutputError, ValidationError
from rfbench.io.files import MAX_NPY_HEADER_BYTES, READ_FLAGS
from rfbench.io.world import admit

__all__ = ["DatasetFiles", "Reading", "parse_npy", "NPY_MAX_HEADER_BYTES"]

_REREAD = "re-run rfbench ingest (and rfbench split) if the dataset was meant to change"


class DatasetFiles:
    """The dataset tree under ``root`` as the manifest describes it.

    Parameters
    ----------
    root : path-like
        The manifest's dataset root (``Manifest.root_dir(manifest_path)``).
    reading : Reading, optional
        Where :meth:`decoded` keeps and finds decoded files (default: none, every file is read and decoded).
    """

    def __init__(self, root: str | os.PathLike, reading: "Reading | None" = None):
        self.reading = reading
        root = Path(root)
        try:
            self.root = root.resolve(strict=True)
        except (FileNotFoundError, NotADirectoryError):
            raise ValidationError(f"{root}: the manifest's dataset root does not exist; move the tree back or "
                                  f"re-run rfbench ingest") from None
        except OSError as exc:
            raise ValidationError(f"{root}: cannot resolve the manifest's dataset root "
                                  f"({exc.strerror or exc})") from None
        if not self.root.is_dir():
            raise ValidationError(f"{root}: the manifest's dataset root is not a folder")
        self._lock = threading.Lock()
        self._read: dict[str, tuple[int, str]] = {}
        self._dirs: dict[str, Path] = {}

    # -- the files served ----------------------------------------------------------------------------------

    def records(self) -> list[dict]:
        """``[{path, bytes, sha256}]`` of every file read so far, sorted by path (the index's ``files``)."""
        with self._lock:
            items = sorted(self._read.items())
        return [{"path": p, "bytes": n, "sha256": h} for p, (n, h) in items]

    def _remember(self, rel: str, size: int, digest: str) -> None:
        with self._lock:
            seen = self._read.get(rel)
            if seen is not None and seen != (size, digest):
                raise ValidationError(f"{rel}: the dataset file changed while it was being read (sha256 differs "
                                      f"between two reads); {_REREAD}")
            self._read[rel] = (size, digest)

    def _record_of(self, rel: str) -> tuple[int, str]:
        with self._lock:
            return self._read[rel]

    # -- reading -------------------------------------------------------------------------------------------

    def read(self, entry: Mapping) -> bytes:
        """The bytes of the manifest file entry ``entry`` (``{path, bytes[, sha256]}``), checked and hashed.

        Raises
        ------
        ValidationError
            The path leaves the root, the file is missing, not a regular file, or its size or sha256 differs
            from the manifest's.
        """
        rel, size, expected = _entry(entry)
        fd = self._open(rel)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ValidationError(f"{rel}: not a regular file; a dataset file must be a plain file")
            if info.st_size != size:
                raise ValidationError(f"{rel}: {info.st_size} bytes, but the manifest says {size}: the dataset file "
                                      f"changed since ingest; {_REREAD}")
            buf = bytearray(size + 1)
            view = memoryview(buf)
            got = 0
            while got <= size:
                n = os.readv(fd, [view[got:]])
                if n == 0:
                    break
                got += n
        except OSError as exc:
            raise ValidationError(f"{rel}: cannot read ({exc.strerror or exc})") from None
        finally:
            os.close(fd)
        if got != size:
            raise ValidationError(f"{rel}: read {got} bytes, but the manifest says {size}: the dataset file changed "
                                  f"since ingest; {_REREAD}")
        del view
        del buf[size:]
        digest = hashlib.sha256(buf).hexdigest()
        if expected is not None and digest != expected:
            raise ValidationError(f"{rel}: sha256 differs from the manifest's: the dataset file changed since "
                                  f"ingest; {_REREAD}")
        self._remember(rel, size, digest)
        return bytes(buf) if size < 4096 else buf

    def decoded(self, entry: Mapping, kind: str, decode: Callable[[Any], Any]) -> Any:
        """``decode(self.read(entry))``, or, with a :class:`Reading` that decoded this file (as ``kind``) before,
        that same value read back from it; the file is recorded in :meth:`records` either way."""
        if self.reading is None:
            return decode(self.read(entry))
        return self.reading.decoded(self, entry, kind, decode)

    def check(self, entry: Mapping) -> dict:
        """Re-check one ``{path, bytes, sha256}`` record without keeping it: returns ``{}`` when the file is
        unchanged, else ``{"path", "reason"}``."""
        rel = str(entry.get("path"))
        try:
            rel, size, expected = _entry(entry)
            fd = self._open(rel)
        except ValidationError as exc:
            return {"path": rel, "reason": _reason(exc, rel)}
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return {"path": rel, "reason": "not a regular file"}
            if info.st_size != size:
                return {"path": rel, "reason": f"{info.st_size} bytes, {size} recorded"}
            h = hashlib.sha256()
            total = 0
            with os.fdopen(os.dup(fd), "rb") as fh:
                while block := fh.read(1 << 20):
                    h.update(block)
                    total += len(block)
        except OSError as exc:
            return {"path": rel, "reason": f"cannot read ({exc.strerror or exc})"}
        finally:
            os.close(fd)
        if total != size:
            return {"path": rel, "reason": f"{total} bytes read, {size} recorded"}
        if expected is not None and h.hexdigest() != expected:
            return {"path": rel, "reason": "sha256 differs"}
        return {}

    def _open(self, rel: str) -> int:
        """An open descriptor of ``root/rel`` after checking that it lies under the root (and, in a verify re-run,
        that it is a file verify checked: :func:`rfbench.io.world.admit`)."""
        fd = self._open_unchecked(rel)
        try:
            return admit(fd, rel)
        except BaseException:
            os.close(fd)  # (the file opened: admit leaves it open when it raises)
            raise

    def _open_unchecked(self, rel: str) -> int:
        parent, name = _split(rel)
        folder = self._dirs.get(parent)  # a dict read is atomic; misses are resolved (once per folder) below
        if folder is None:
            folder = self._folder(parent, rel)
        path = os.path.join(folder, name)
        try:
            return os.open(path, READ_FLAGS)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # the file itself is a symlink: follow it, then check where it lands
                return self._open_resolved(Path(path), rel)
            raise _missing(exc, rel) from None

    def _folder(self, parent: str, rel: str) -> str:
        try:
            folder = (self.root / parent).resolve(strict=True)
        except OSError as exc:
            raise _missing(exc, rel) from None
        if not _inside(folder, self.root):
            raise ValidationError(f"{rel}: lies outside the dataset root {self.root} (through a symlink); "
                                  "dataset files must be inside the tree the manifest describes")
        if not folder.is_dir():
            raise _missing(NotADirectoryError(errno.ENOTDIR, "not a folder"), rel)
        with self._lock:
            self._dirs[parent] = str(folder)
        return str(folder)

    def _open_resolved(self, path: Path, rel: str) -> int:
        try:
            target = path.resolve(strict=True)
        except OSError as exc:
            raise _missing(exc, rel) from None
        if not _inside(target, self.root):
            raise ValidationError(f"{rel}: a symlink to {target}, outside the dataset root {self.root}; dataset "
                                  "files must be inside the tree the manifest describes")
        try:
            return os.open(target, READ_FLAGS)
        except OSError as exc:
            raise _missing(exc, rel) from None


def reading_in_use() -> "Reading | None":
    """The reading put in use (:meth:`Reading.in_use`) around this call, if any."""
    return _IN_USE.get()


#: Alignment of each array in a :class:`Reading`'s unit file.
_ALIGN = 64


@dataclasses.dataclass(frozen=True)
class _Unit:
    """Where one decoded file lies in a :class:`Reading`: its unit file, the arrays' layout in it, the rest of the
    value (kept in memory) and the dataset file's size and sha256 as it was read."""

    file: str
    nbytes: int
    build: tuple  # ("array",) | ("dataclass", cls) | ("dict", cls, attributes)
    arrays: tuple  # (name, offset, dtype, shape, order) per array
    others: dict  # what is not an array, by name
    size: int
    sha256: str


class Reading:
    """One verified reading of dataset files, kept under ``folder`` for windows built again under other corruption
    settings.

    :meth:`DatasetFiles.decoded` comes here: the first time a file is asked for (as a ``kind`` of decoding), it is
    read and checked as usual, decoded, and the arrays of what was decoded are written to one unit file under
    ``folder`` (bit for bit, in their dtype, shape and memory order); what is not an array (counts, names) stays
    in memory with the file's size and sha256. Later, the same file is the unit read back, and recorded as read
    with that size and sha256, without touching the dataset. Memory holds no array, only that per-file record;
    arrays are read back one unit at a time.

    :meth:`side` keeps the first side opened (split and manifest checked) for the builds that follow. The folder
    is the caller's (a temporary folder it removes).

    A reading is given to :func:`~rfbench.datasets.windows.write_windows`, or put in use for a block
    (:meth:`in_use`): then every side opened in it (the scoring's ground truth and training targets included) is
    decoded through it.
    """

    def __init__(self, folder: str | os.PathLike):
        self.folder = Path(folder)
        self._lock = threading.Lock()
        self._units: dict[tuple, _Unit] = {}
        self._sides: dict[tuple, Any] = {}
        self._count = 0

    def __len__(self) -> int:
        return len(self._units)

    @contextlib.contextmanager
    def in_use(self) -> Iterator["Reading"]:
        """This reading for every side opened in the block (in this thread) without a reading of its own."""
        token = _IN_USE.set(self)
        try:
            yield self
        finally:
            _IN_USE.reset(token)

    # -- sides ---------------------------------------------------------------------------------------------

    def side(self, split_path: Path, side: str):
        """The side job first opened for ``split_path``'s ``side``, or None."""
        return self._sides.get((str(Path(split_path).resolve()), side))

    def keep_side(self, split_path: Path, side: str, job) -> None:
        self._sides.setdefault((str(Path(split_path).resolve()), side), job)

    # -- units ---------------------------------------------------------------------------------------------

    def decoded(self, files: DatasetFiles, entry: Mapping, kind: str, decode: Callable[[Any], Any]) -> Any:
        rel, size, expected = _entry(entry)
        key = (str(files.root), rel, kind)
        unit = self._units.get(key)
        if unit is not None and unit.size == size and (expected is None or expected == unit.sha256):
            value = self._load(unit)
            files._remember(rel, unit.size, unit.sha256)
            return value
        value = decode(files.read(entry))
        got_size, digest = files._record_of(rel)
        self._store(key, value, got_size, digest)
        return value

    def _store(self, key: tuple, value: Any, size: int, digest: str) -> None:
        if isinstance(value, np.ndarray):
            build, items = ("array",), {"": value}
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            build, items = ("dataclass", type(value)), {f.name: getattr(value, f.name)
                                                        for f in dataclasses.fields(value)}
        elif isinstance(value, dict):
            build, items = ("dict", type(value), copy.deepcopy(vars(value)) if hasattr(value, "__dict__") else {}), \
                dict(value)
        else:
            raise TypeError(f"a reading keeps arrays, dataclasses and dicts, not {type(value).__name__}")
        arrays, others, pieces, at = [], {}, [], 0
        for name, item in items.items():
            if not isinstance(item, np.ndarray) or item.dtype.hasobject:
                others[name] = copy.deepcopy(item)
                continue
            order = "F" if item.flags.f_contiguous and not item.flags.c_contiguous else "C"
            data = np.asarray(item).reshape(-1, order=order) if item.size else item.reshape(-1)
            arrays.append((name, at, item.dtype, item.shape, order))
            pieces.append((at, data))
            at += -(-data.nbytes // _ALIGN) * _ALIGN
        with self._lock:
            self._count += 1
            name = f"{self._count:07d}.unit"
        path = self.folder / name
        try:
            with open(path, "wb") as fh:
                for offset, data in pieces:
                    fh.seek(offset)
                    fh.write(memoryview(np.ascontiguousarray(data)).cast("B"))
                fh.truncate(at)
        except OSError as exc:
            raise OutputError(f"{path}: cannot keep the reading of the dataset ({exc.strerror or exc})") from None
        with self._lock:
            self._units[key] = _Unit(name, at, build, tuple(arrays), others, size, digest)

    def _load(self, unit: _Unit) -> Any:
        buf = np.empty(unit.nbytes, dtype=np.uint8)
        path = self.folder / unit.file
        try:
            with open(path, "rb", buffering=0) as fh:
                got = 0
                view = memoryview(buf)
                while got < unit.nbytes:
                    n = fh.readinto(view[got:])
                    if not n:
                        break
                    got += n
        except OSError as exc:
            raise OutputError(f"{path}: cannot read the kept reading of the dataset back ({exc.strerror or exc})") \
                from None
        if got != unit.nbytes:
            raise OutputError(f"{path}: the kept reading of the dataset was cut short ({got} of {unit.nbytes} bytes)")
        items = {name: copy.deepcopy(v) for name, v in unit.others.items()}
        for name, offset, dtype, shape, order in unit.arrays:
            count = int(np.prod(shape, dtype=np.int64))
            flat = buf[offset:offset + count * dtype.itemsize].view(dtype)
            items[name] = flat.reshape(shape, order=order)
        if unit.build[0] == "array":
            return items[""]
        if unit.build[0] == "dataclass":
            return unit.build[1](**items)
        value = unit.build[1](items)
        for attr, v in unit.build[2].items():
            setattr(value, attr, copy.deepcopy(v))
        return value


def _entry(entry: Mapping) -> tuple[str, int, str | None]:
    rel = entry.get("path")
    size = entry.get("bytes")
    digest = entry.get("sha256")
    if not isinstance(rel, str) or not rel:
        raise ValidationError(f"a manifest file entry has no path: {dict(entry)!r}")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ValidationError(f"{rel}: the manifest gives no size in bytes; re-run rfbench ingest")
    if digest is not None and (not isinstance(digest, str) or len(digest) != 64):
        raise ValidationError(f"{rel}: the manifest's sha256 is not a hex digest")
    return rel, size, digest


def _split(rel: str) -> tuple[str, str]:
    """``(folder, name)`` of a manifest path, which must be relative, ``/``-separated and free of ``..``."""
    parent, _, name = rel.rpartition("/")
    if rel.startswith("/") or "\0" in rel or (parent and any(part in ("..", "") for part in parent.split("/"))):
        raise ValidationError(f"{rel}: not a path inside the dataset root (absolute or with ..); the manifest "
                              "names files relative to its root")
    if name in ("", ".", ".."):
        raise ValidationError(f"{rel}: not a file path")
    return parent or ".", name


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _missing(exc: OSError, rel: str) -> ValidationError:
    if isinstance(exc, FileNotFoundError) or exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return ValidationError(f"{rel}: no such dataset file (the manifest lists it); the tree changed since "
                               f"ingest; {_REREAD}")
    if isinstance(exc, PermissionError):
        return ValidationError(f"{rel}: permission denied")
    if exc.errno == errno.ELOOP:
        return ValidationError(f"{rel}: too many levels of symlinks")
    return ValidationError(f"{rel}: cannot open ({exc.strerror or exc})")


def _reason(exc: Exception, rel: str) -> str:
    text = str(exc)
    return text[len(rel) + 2:] if text.startswith(rel + ": ") else text


#: Largest ``.npy`` header accepted (NumPy's own default limit).
NPY_MAX_HEADER_BYTES = MAX_NPY_HEADER_BYTES  # declared with the header reader


def parse_npy(buf, where: str) -> np.ndarray:
    """A plain ``.npy`` array from a file's bytes, bounded: the shape and dtype the header declares must account
    for exactly the bytes that follow it, checked before anything is allocated; no pickles, no object or
    structured dtypes.

    Raises
    ------
    FormatError
        Not a ``.npy`` file, a header past :data:`NPY_MAX_HEADER_BYTES`, a dtype that is not plain numbers, or a
        size that does not match the file.
    """
    from rfbench.io.files import parse_npy_header

    fh = io.BytesIO(memoryview(buf)[:NPY_MAX_HEADER_BYTES + 16])
    shape, fortran, dtype = parse_npy_header(fh, where)
    if dtype.kind not in "biuf" or dtype.fields is not None or dtype.subdtype is not None:
        raise FormatError(f"{where}: .npy dtype {dtype} is not plain numbers")
    count = 1
    for s in shape:
        count *= int(s)
    offset = fh.tell()
    if count * dtype.itemsize != len(buf) - offset:
        raise FormatError(f"{where}: the .npy header declares {shape} {dtype} ({count * dtype.itemsize} bytes) but "
                          f"{len(buf) - offset} bytes follow it")
    arr = np.frombuffer(buf, dtype=dtype, count=count, offset=offset)
    return arr.reshape(shape, order="F" if fortran else "C").copy()


_IN_USE: contextvars.ContextVar = contextvars.ContextVar("rfbench_reading", default=None)
