"""The windows folder ``rfbench predict`` reads: ``index.json`` checked, ``X.npy`` memory-mapped, its sha256
compared with the index (:func:`open_windows`), and the small readers of the record's fields the prediction
record shares (plain file names, shapes, sha256 digests, ``.npy`` files)."""

from __future__ import annotations

import hashlib
import os
import re
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rfbench.errors import FormatError, ValidationError

# --- the windows folder -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class WindowsFolder:
    """A windows folder opened by :func:`open_windows`: ``X`` memory-mapped, the index checked.

    Attributes
    ----------
    path : Path
        The folder.
    index : dict
        ``index.json`` as read.
    index_sha256 : str
        sha256 of the ``index.json`` bytes that were parsed.
    x : numpy.ndarray
        ``X.npy``, memory-mapped read-only.
    x_rows : FileRows
        The same file's rows read with ``pread``: for every copy rfbench's process makes of rows of X.
    x_path : Path
        ``X.npy``.
    x_sha256 : str or None
        sha256 of ``X.npy``, checked equal to the index's; None when :func:`open_windows` was asked to leave
        the check to :func:`predict` (which hashes X while the model runs).
    target_shape : tuple
        Row shape of ``y.npy``: ``(K, 2|3)`` joints for pose, ``()`` for labels.
    target_kind : str
        ``"pose"`` or ``"label"``.
    n_classes : int or None
        Size of the index's label set (gesture), else None.
    """

    path: Path
    index: dict
    index_sha256: str
    x: np.ndarray
    x_rows: "FileRows"
    x_path: Path
    x_sha256: str | None
    target_shape: tuple
    target_kind: str
    n_classes: int | None

    @property
    def axes(self) -> tuple:
        return tuple(self.index["x"]["axes"])

    @property
    def index_path(self) -> Path:
        return self.path / "index.json"

    def dataset_tree(self) -> tuple[Path, set[str] | None] | None:
        """The dataset folder of the manifest the index names and the parts of it ingest read
        (:func:`rfbench.datasets.manifest.dataset_tree_of`), or None when that manifest cannot be read: where a
        job on the folder must write nothing (:func:`rfbench.io.files.refuse_inside_tree`)."""
        from rfbench.datasets.manifest import dataset_tree_of

        manifest = self.index.get("manifest")
        path = manifest.get("path") if isinstance(manifest, dict) else None
        if not isinstance(path, str) or not path or "\x00" in path:
            return None
        return dataset_tree_of(self.path / path)

    def files(self) -> list[Path]:
        """The files of the folder and those its index names (the split, its manifest, the label set), as the
        index records them (relative to the folder): what a job on the folder must never write over."""
        named = [self.index.get("split"), self.index.get("manifest")]
        names = [d.get("path") for d in named if isinstance(d, dict)]
        names.append((self.index.get("settings") or {}).get("label_set"))
        return [self.x_path, self.path / "y.npy", self.index_path,
                *(self.path / n for n in names if isinstance(n, str) and n)]


def _plain_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value or value in (".", "..") or "/" in value or "\\" in value:
        raise FormatError(f"{where}: expected a plain file name inside the folder, got {value!r}")
    return value


def _shape(value: Any, where: str) -> tuple:
    if not isinstance(value, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in value):
        raise FormatError(f"{where}: expected a list of non-negative integers, got {value!r}")
    return tuple(value)


def _hex64(value: Any, where: str) -> str:
    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{64}", value):
        raise FormatError(f"{where}: expected a sha256 hex digest, got {value!r}")
    return value


class FileRows:
    """X of a windows folder read a run of rows at a time (``pread``) through a descriptor of the mapped file:
    where rfbench's own process copies rows out of X (rows gathered in another order, a batch padded), it reads
    them so rather than touching the mapping — a file cut short while it is mapped ends the process on the next
    touch of a lost page (SIGBUS, exit 135, no word said); read, it is one error line. (The batches themselves
    go from the mapping to the model's process by a system call, which fails with an error instead.) Rows by a
    slice, an index or an array of indices (each a new C-order array), ``reshape(n, -1)`` (one flat vector a
    row: the same bytes); :meth:`sha256` hashes the file it reads."""

    class _Flags:
        c_contiguous = True  # (each read is a new C-order array)

    flags = _Flags()

    def __init__(self, fd: int, offset: int, size: int, shape: tuple, dtype: np.dtype, path: Path,
                 owner: "FileRows | None" = None):
        self.fd, self.offset, self.size, self.path = fd, offset, size, path
        self.shape, self.dtype, self.ndim = tuple(shape), np.dtype(dtype), len(shape)
        self.row_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize
        self._owner = owner  # (a reshaped view keeps the descriptor's owner alive)
        if owner is None:
            self._close = weakref.finalize(self, os.close, fd)

    def __len__(self) -> int:
        return self.shape[0]

    def reshape(self, rows: int, rest: int = -1) -> "FileRows":
        if rows != self.shape[0] or rest not in (-1, self.row_bytes // max(1, self.dtype.itemsize)):
            raise ValueError(f"X's rows read from a file reshape to ({self.shape[0]}, -1) only")
        return FileRows(self.fd, self.offset, self.size, (rows, self.row_bytes // self.dtype.itemsize), self.dtype,
                        self.path, self._owner or self)

    def __getitem__(self, key) -> np.ndarray:
        n = self.shape[0]
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step == 1:
                return self._rows(start, max(start, stop))
            key = np.arange(start, stop, step)
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            k = self._row(key)
            return self._rows(k, k + 1)[0]
        rows = np.asarray(key)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        out = np.empty((len(rows),) + self.shape[1:], dtype=self.dtype)
        for i, r in enumerate(rows.tolist()):  # each row read straight into its place
            k = self._row(r)
            self._rows(k, k + 1, out[i:i + 1])
        return out

    def _row(self, key) -> int:
        """Row ``key`` (negative from the end) as an index into the file, or IndexError."""
        n = self.shape[0]
        k = int(key) + n if key < 0 else int(key)
        if not 0 <= k < n:
            raise IndexError(f"row {key} of {n}")
        return k

    def _rows(self, a: int, b: int, out: np.ndarray | None = None) -> np.ndarray:
        """Rows ``a:b`` read from the file, into ``out`` (a C-order array of their shape) or a new array."""
        if out is None:
            out = np.empty((b - a,) + self.shape[1:], dtype=self.dtype)
        view = memoryview(out.reshape(-1).view(np.uint8))
        done, at = 0, self.offset + a * self.row_bytes
        while done < len(view):
            got = os.preadv(self.fd, [view[done:]], at + done)
            if got <= 0:
                raise ValidationError(_x_changed(self.path))  # cut short since it was opened
            done += got
        return out

    def sha256(self) -> str:
        """The sha256 of the file these rows are read from (through the same descriptor)."""
        digest = _descriptor_sha256(self.fd, self.size)
        if os.fstat(self.fd).st_size != self.size:
            raise ValidationError(_x_changed(self.path))
        return digest


def _open_npy(path: Path, what: str) -> np.ndarray:
    """A plain ``.npy`` array memory-mapped read-only, opened through the safe opener (a regular file: a FIFO or
    a device is refused unread) and checked before it is mapped: the size its header declares must be the
    data the file holds, and it may hold no Python objects."""
    return _map_npy(path, what, False)[0]


def _map_npy(path: Path, what: str, hash_file: bool, rows: bool = False) -> tuple:
    """:func:`_open_npy`, the file's sha256 (with ``hash_file``, else None) and its size, both of the file that is
    mapped: read through the same descriptor (a second open, to hash, could find another file put in its place).
    ``rows``: also a :class:`FileRows` over the same file (a fourth item), the array C-order with rows."""
    from rfbench.io.files import input_errors, open_input, parse_npy_header

    where = f"{what} {path}"
    with input_errors(path, what, expected="a .npy file"), open_input(path, where, "a .npy file") as fh:
        shape, fortran, dtype = parse_npy_header(fh, where)  # no Python objects, no negative dimension
        offset, size = fh.tell(), os.fstat(fh.fileno()).st_size
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if offset + count * dtype.itemsize != size:
            raise FormatError(f"{where}: its header declares {tuple(shape)} {dtype} ({count * dtype.itemsize} bytes) "
                              f"but {size - offset} bytes follow it (truncated, or a forged header)")
        digest = _descriptor_sha256(fh.fileno(), size) if hash_file else None
        reader = None
        if rows:
            if fortran or not shape:
                raise FormatError(f"{where}: stored in Fortran order or without rows; rfbench windows writes X in C "
                                  "order, one row per window")
            reader = FileRows(os.dup(fh.fileno()), offset, size, tuple(shape), dtype, path)
        if count == 0:
            arr = np.empty(shape, dtype=dtype)
        else:
            arr = np.memmap(fh, dtype=dtype, mode="r", offset=offset, shape=tuple(shape),
                            order="F" if fortran else "C")
        return (arr, digest, size, reader) if rows else (arr, digest, size)


def _descriptor_sha256(fd: int, size: int) -> str:
    """The sha256 of the first ``size`` bytes of the open file ``fd`` (read with ``pread``: its position stays)."""
    h = hashlib.sha256()
    done = 0
    while done < size:
        block = os.pread(fd, min(1 << 24, size - done), done)
        if not block:
            break
        h.update(block)
        done += len(block)
    return h.hexdigest()


def _same_dtype(actual: np.dtype, recorded) -> bool:
    """Whether an array's dtype is the one an index records (by name, ``float64``, or by code, ``<f8``)."""
    try:
        return isinstance(recorded, str) and np.dtype(recorded) == actual
    except TypeError:
        return False


def open_windows(folder: str | os.PathLike, check_x: bool = True) -> WindowsFolder:
    """Open a folder written by ``rfbench windows``: check ``index.json``, map ``X.npy``, check its sha256.

    Parameters
    ----------
    folder : path-like
    check_x : bool
        Hash ``X.npy`` now and compare with the index. False leaves it to :func:`predict`, which hashes X on
        another thread while the model runs and refuses a mismatch before returning.

    Raises
    ------
    FormatError, SchemaError
        A missing or malformed index, or arrays that do not match it.
    ValidationError
        ``X.npy`` is not the file the index describes (size or sha256).
    """

    from rfbench.io.files import check_schema, read_input_bytes

    folder = Path(folder)
    if not folder.is_dir():
        raise FormatError(f"windows folder {folder}: no such folder" if not folder.exists()
                          else f"windows folder {folder}: not a folder")
    index_path = folder / "index.json"
    if index_path.exists() and not index_path.is_file():
        raise FormatError(f"windows index {index_path}: not a regular file")
    from rfbench.io.documents import parse_json_bytes

    raw = read_input_bytes(index_path, "windows index")
    index = parse_json_bytes(raw, f"windows index {index_path}")
    where = f"windows index {index_path}"
    if not isinstance(index, dict):
        raise FormatError(f"{where}: expected a JSON object")
    check_schema(index, "windows", where)
    for key in ("x", "y", "rows", "task"):
        if key not in index:
            raise FormatError(f"{where}: missing key {key!r}")
    xd, yd = index["x"], index["y"]
    if not isinstance(xd, dict) or not isinstance(yd, dict):
        raise FormatError(f"{where}: 'x' and 'y' must be objects")
    x_shape = _shape(xd.get("shape"), f"{where} x.shape")
    y_shape = _shape(yd.get("shape"), f"{where} y.shape")
    axes = xd.get("axes")
    if not isinstance(axes, list) or len(axes) != len(x_shape) or not all(isinstance(a, str) for a in axes):
        raise FormatError(f"{where}: x.axes must name each of X's {len(x_shape)} axes")
    if not x_shape or not y_shape or x_shape[0] != y_shape[0]:
        raise FormatError(f"{where}: X {list(x_shape)} and y {list(y_shape)} must have the same number of rows")
    if not isinstance(index["rows"], list) or len(index["rows"]) != x_shape[0]:
        raise FormatError(f"{where}: 'rows' must list one entry per row of X ({x_shape[0]})")
    kind = yd.get("kind")
    task = index["task"]
    if (task, kind) not in (("pose", "pose"), ("gesture", "label")):
        raise FormatError(f"{where}: task {task!r} with y.kind {kind!r}; expected pose/pose or gesture/label")
    n_classes = None
    labels = index.get("labels")
    if labels is not None:
        names = labels.get("names") if isinstance(labels, dict) else None
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise FormatError(f"{where}: labels.names must be a non-empty list of names")
        n_classes = len(names)
    if kind == "label" and n_classes is None:
        raise FormatError(f"{where}: a gesture index needs its label set ('labels')")
    x_sha = _hex64(xd.get("sha256"), f"{where} x.sha256")

    x_path = folder / _plain_name(xd.get("file"), f"{where} x.file")
    # the sha256 checked is of the file mapped (one descriptor: hashing it by its path again could hash another)
    x, digest, x_size, x_rows = _map_npy(x_path, "windows X", check_x, rows=True)
    if x.shape != x_shape or not _same_dtype(x.dtype, xd.get("dtype")):
        raise FormatError(f"windows X {x_path}: {x.dtype} {list(x.shape)}, but the index says "
                          f"{xd.get('dtype')} {list(x_shape)}")
    if isinstance(xd.get("bytes"), int) and x_size != xd["bytes"]:
        raise ValidationError(_x_changed(x_path))
    if check_x and digest != x_sha:
        raise ValidationError(_x_changed(x_path))
    y_path = folder / _plain_name(yd.get("file"), f"{where} y.file")
    y = _open_npy(y_path, "windows y")
    if y.shape != y_shape or not _same_dtype(y.dtype, yd.get("dtype")):
        raise FormatError(f"windows y {y_path}: {y.dtype} {list(y.shape)}, but the index says "
                          f"{yd.get('dtype')} {list(y_shape)}")
    del y
    return WindowsFolder(path=folder, index=index, index_sha256=hashlib.sha256(raw).hexdigest(), x=x,
                         x_rows=x_rows, x_path=x_path, x_sha256=digest, target_shape=y_shape[1:], target_kind=kind,
                         n_classes=n_classes)


def _x_changed(x_path: Path) -> str:
    return (f"windows X {x_path}: changed since `rfbench windows` wrote it (sha256 or size differs from the "
            "index); write the windows again")
