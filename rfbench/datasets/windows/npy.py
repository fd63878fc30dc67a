"""A ``.npy`` file written row batch by row batch: memory bounded by one batch, whatever the array's size.

:class:`NpyWriter` writes to a temporary file beside its target and renames it only once complete (DESIGN.md
§10), so a crash, an error or a signal never leaves a half-written array under the target's name. When the
number of rows is known in advance, the final header is written first and the file's sha256 is computed as it
is written; otherwise the header is rewritten at the end (it is padded to a fixed size for that) and the file
is hashed once complete.

The batches are written with plain sequential writes rather than through a writable memory map: the pages of a
writable map stay resident in the writing process until written back, which makes its memory grow with the
array. The result is an ordinary ``.npy`` file that ``numpy.load(path, mmap_mode="r")`` maps. With the header
final from the start, the rows are hashed on a thread of their own while the next ones are written.

A large array whose size is known in advance (at least :attr:`NpyWriter.DIRECT_MIN_BYTES`) is written around
the page cache where the file system allows it (``O_DIRECT``): its bytes are gathered in a page-aligned buffer of
:attr:`NpyWriter.DIRECT_BLOCK` bytes, each full buffer goes straight to the disk, and the last partial block (at
most 4 KiB) through an ordinary write; the fsync before the rename is the same. The file's bytes are the same;
what changes is that a gigabyte of output no longer fills a gigabyte of page cache first (on a virtual machine,
memory the system has not touched before costs a fault per page to touch: most of the time of writing X went
there), nor waits for its write-back. Where ``O_DIRECT`` is refused (tmpfs, other systems), the array is written
the ordinary way.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import mmap
import os
import queue
import threading
from pathlib import Path
from typing import Iterator

import numpy as np

from rfbench.errors import FormatError, OutputError, OutputExistsError, ValidationError
from rfbench.io.files import new_temporary, output_reason, parse_npy_header, replace_output

__all__ = ["NpyWriter", "npy_header", "read_npy_header"]

_MAGIC = b"\x93NUMPY\x01\x00"
_LARGEST_ROWS = 10 ** 15  # the row count the placeholder header reserves room for


def npy_header(dtype, shape, total: int | None = None) -> bytes:
    """A version 1.0 ``.npy`` header for a C-ordered array, padded with spaces to ``total`` bytes (default: the
    next multiple of 64)."""
    dtype = np.dtype(dtype)
    text = "{'descr': %r, 'fortran_order': False, 'shape': %r, }" % (dtype.str, tuple(int(s) for s in shape))
    body = len(_MAGIC) + 2 + len(text) + 1
    if total is None:
        total = -(-body // 64) * 64
    if body > total or total - len(_MAGIC) - 2 > 0xFFFF:
        raise ValidationError(f"an .npy header for shape {tuple(shape)} does not fit in {total} bytes")
    text = text + " " * (total - body) + "\n"
    return _MAGIC + (total - len(_MAGIC) - 2).to_bytes(2, "little") + text.encode("latin1")


def read_npy_header(path: str | os.PathLike) -> tuple[tuple[int, ...], np.dtype, int]:
    """``(shape, dtype, data offset)`` of an ``.npy`` file, from its header only (read by
    :func:`rfbench.io.files.parse_npy_header`: anything else than a plain C-ordered array is a FormatError)."""
    with open(path, "rb") as fh:
        shape, fortran, dtype = parse_npy_header(fh, str(path))
        if fortran:
            raise FormatError(f"{path}: a Fortran-ordered array; rfbench writes and reads C order")
        return tuple(int(s) for s in shape), dtype, fh.tell()


class _BackgroundHash:
    """sha256 of the buffers given to :meth:`update`, in order, computed on a thread of its own (hashlib releases
    the GIL), so hashing the output overlaps writing it and producing the next rows. Buffers must not change
    after they are handed over; at most ``depth`` wait."""

    def __init__(self, first: bytes, depth: int = 4):
        self._h = hashlib.sha256(first)
        self._q: queue.Queue = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="rfbench-sha256", daemon=True)
        self._thread.start()

    def _run(self):
        while True:
            item = self._q.get()
            if item is None:
                return
            data, done = item
            try:
                self._h.update(data)
            except BaseException as exc:  # pragma: no cover - hashlib does not fail on buffers
                self._error = exc
            finally:
                if done is not None:
                    done()
            del item, data  # no reference to a borrowed buffer outlives its hashing

    def update(self, data, wait: bool = False, on_done=None) -> None:
        """Hash ``data`` after the buffers handed over before it; with ``wait``, return only once it is hashed
        (the caller may then reuse the buffer); ``on_done`` is called (on the hashing thread) once it is."""
        if wait:
            event = threading.Event()
            self._q.put((data, event.set))
            event.wait()
        else:
            self._q.put((data, on_done))

    def hexdigest(self) -> str:
        self.stop()
        if self._error is not None:  # pragma: no cover
            raise self._error
        return self._h.hexdigest()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._q.put(None)
            self._thread.join()


class _Writeback:
    """Start the disk writes of a file being written early: each time :meth:`written` has seen ``step`` more bytes,
    a thread of its own calls ``fdatasync`` on it, so most of the data is on disk by the time the final ``fsync``
    (which the writer still makes before renaming) runs, instead of all of it being written then. The writer never
    waits for it, except in :meth:`stop`."""

    def __init__(self, fd: int, step: int = 64 << 20):
        self._fd, self._step, self._pending = fd, step, 0
        self._kick = threading.Event()
        self._done = False
        self._thread = threading.Thread(target=self._run, name="rfbench-writeback", daemon=True)
        self._thread.start()

    def _run(self):
        while True:
            self._kick.wait()
            self._kick.clear()
            if self._done:
                return
            try:
                os.fdatasync(self._fd)
            except OSError:  # the final fsync reports what matters; this one only starts the writes early
                return

    def written(self, n: int) -> None:
        self._pending += n
        if self._pending >= self._step:
            self._pending = 0
            self._kick.set()

    def stop(self) -> None:
        if self._thread.is_alive():
            self._done = True
            self._kick.set()
            self._thread.join()


class NpyWriter:
    """Write an ``(N, *row_shape)`` array of ``dtype`` to ``path`` in batches of rows.

    Use as a context manager: on a clean exit the file is complete and renamed to ``path``; on an exception the
    temporary file is removed and ``path`` is untouched. :attr:`sha256`, :attr:`bytes` and :attr:`shape` describe
    the file written.

    Parameters
    ----------
    path : path-like
        Destination; an existing file is refused unless ``force``.
    dtype, row_shape
        Every row's dtype and shape.
    n_rows : int, optional
        The number of rows, when known in advance (the header is then final from the start).
    force : bool
        Replace an existing ``path``.
    defer : bool
        Keep the completed file under its temporary name until :meth:`commit` (to rename several outputs
        together, once all are complete); :meth:`discard` removes it.
    """

    #: Bytes written between two early ``fdatasync`` calls (:class:`_Writeback`).
    WRITEBACK_STEP = 64 << 20
    #: Smallest array (header included, size known in advance) written around the page cache (``O_DIRECT``).
    DIRECT_MIN_BYTES = 64 << 20
    #: Bytes each direct write takes (a multiple of :data:`DIRECT_ALIGN`).
    DIRECT_BLOCK = 8 << 20

    def __init__(self, path: str | os.PathLike, dtype, row_shape, *, n_rows: int | None = None,
                 force: bool = False, defer: bool = False):
        self.path = Path(path)
        if self.path.exists() and not force:
            raise OutputExistsError(f"{self.path} already exists; pass `force` to replace it")
        if self.path.is_dir():
            raise OutputExistsError(f"{self.path} is a folder, not a file")
        self.dtype = np.dtype(dtype)
        self.row_shape = tuple(int(s) for s in row_shape)
        self.n_rows = n_rows
        self.defer = defer
        self.rows = 0
        self.sha256: str | None = None
        self.bytes: int | None = None
        self._fh = None
        self._tmp: str | None = None
        self._hash = None
        self._writeback: _Writeback | None = None
        self._header_size = 0
        self._direct: _DirectWrites | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.rows, *self.row_shape)

    @contextlib.contextmanager
    def _naming(self) -> Iterator[None]:
        """A write's OSError, which names no file (a full disk, the size limit ``ulimit -f`` sets), as an
        :class:`OutputError` naming the array being written."""
        try:
            yield
        except OSError as exc:
            if exc.filename is not None or isinstance(exc, OutputError):
                raise
            raise OutputError(f"cannot write {self.path}: {output_reason(exc, self.path)}") from None

    def __enter__(self) -> "NpyWriter":
        with self._naming():
            return self._enter()

    def _enter(self) -> "NpyWriter":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, self._tmp = new_temporary(self.path.parent, self.path.name)
        self._fh = os.fdopen(fd, "wb")
        if self.n_rows is not None:
            header = npy_header(self.dtype, (self.n_rows, *self.row_shape))
            total = len(header) + self.n_rows * self.dtype.itemsize * _prod(self.row_shape)
            if total >= self.DIRECT_MIN_BYTES:
                self._direct = _DirectWrites.open(self._tmp, fd, self.DIRECT_BLOCK)
            # written directly, the header is hashed from the direct writer's first block like every other byte
            self._hash = _BackgroundHash(header if self._direct is None else b"")
            if self._direct is not None:
                self._direct.hasher = self._hash
        else:
            header = npy_header(self.dtype, (_LARGEST_ROWS, *self.row_shape))
        if self._direct is None and hasattr(os, "fdatasync"):
            self._writeback = _Writeback(fd, self.WRITEBACK_STEP)
        self._header_size = len(header)
        if self._direct is not None:
            self._direct.write(header)
        else:
            self._fh.write(header)
        return self

    def write(self, batch: np.ndarray, borrowed: bool = False) -> None:
        """Append rows (an array of shape ``(k, *row_shape)``, cast to the writer's dtype when needed). With a
        known row count the rows are hashed on a thread of their own: do not modify them until the writer is
        closed — unless ``borrowed`` (a buffer the caller reuses), for which the write returns once they are
        hashed and written."""
        batch = np.ascontiguousarray(batch, dtype=self.dtype)
        if batch.shape[1:] != self.row_shape:
            raise ValidationError(f"rows of shape {batch.shape[1:]} written to an array of rows {self.row_shape}")
        if self.n_rows is not None and self.rows + batch.shape[0] > self.n_rows:
            raise ValidationError(f"more than the {self.n_rows} rows announced were written")
        if batch.size == 0:
            return
        with self._naming():
            self._write(batch, borrowed)

    def _write(self, batch: np.ndarray, borrowed: bool) -> None:
        data = memoryview(batch).cast("B")
        if self._direct is not None:
            self._direct.write(data)  # copied into its blocks, which it hashes: the rows may change on return
        else:
            self._fh.write(data)
            if self._hash is not None:
                self._hash.update(data, wait=borrowed)
        if self._writeback is not None:
            self._writeback.written(data.nbytes)
        self.rows += batch.shape[0]

    def __exit__(self, exc_type, exc, tb) -> bool:
        done = False
        try:
            if exc_type is None:
                with self._naming():
                    self._finish()
                done = True
        finally:
            if self._writeback is not None:
                self._writeback.stop()
            if isinstance(self._hash, _BackgroundHash):
                self._hash.stop()  # before the direct writer's blocks go: it may still be hashing them
            if self._direct is not None:
                self._direct.close()
            if self._fh is not None and not self._fh.closed:  # (open only when not done: the file is discarded)
                try:
                    self._fh.close()
                except OSError:  # its buffer cannot be written either (the error on its way up says why)
                    pass
            if not done:
                self.discard()
        return False

    def _finish(self) -> None:
        if self.n_rows is not None and self.rows != self.n_rows:
            raise ValidationError(f"{self.rows} rows written where {self.n_rows} were announced")
        fh = self._fh
        if self.n_rows is None:
            fh.seek(0)
            fh.write(npy_header(self.dtype, self.shape, self._header_size))
        if self._direct is not None:
            self._direct.finish()  # the last partial block through fh's descriptor, which the fsync below syncs
        fh.flush()
        if self._writeback is not None:
            self._writeback.stop()
        os.fsync(fh.fileno())
        fh.close()
        if self._hash is None:
            h = hashlib.sha256()
            with open(self._tmp, "rb") as rf:
                while block := rf.read(1 << 22):
                    h.update(block)
            self._hash = h
        self.sha256 = self._hash.hexdigest()
        self.bytes = os.path.getsize(self._tmp)
        if not self.defer:
            self.commit()

    def commit(self) -> Path:
        """Rename the completed temporary file to ``path`` (called by the context manager unless ``defer``)."""
        if self._tmp is None or self.sha256 is None:
            raise ValidationError("nothing complete to commit")
        replace_output(self._tmp, self.path)
        self._tmp = None
        return self.path

    def discard(self) -> None:
        """Remove the temporary file, if it is still there."""
        if self._tmp is not None:
            try:
                os.unlink(self._tmp)
            except FileNotFoundError:
                pass
            self._tmp = None


def _prod(shape) -> int:
    out = 1
    for n in shape:
        out *= int(n)
    return out


#: Alignment of the buffer, file offset and length of every direct write (the largest logical block size usual
#: disks have; any smaller one divides it).
DIRECT_ALIGN = 4096


class _DirectWrites:
    """A file's bytes written in order around the page cache: gathered in one of :data:`BUFFERS` page-aligned
    buffers; each full buffer is written with ``O_DIRECT`` at its offset by a thread of its own while the next
    one fills (the writer waits only when all are in use); :meth:`finish` writes what is left — the aligned part
    directly, the last partial block through ``plain_fd`` (an ordinary descriptor of the same file).

    With :attr:`hasher` set (a :class:`_BackgroundHash`, before the first write), every byte is also hashed from
    the buffers, in file order, on the hasher's thread; a buffer is reused once written and hashed. So the
    caller's rows are free again as soon as they are copied in — a reader of the rows (``rfbench windows``'
    reader processes) never waits for their hashing, which on a busy machine waits for a core."""

    #: Buffers of ``block`` bytes each: two being written and hashed while others fill.
    BUFFERS = 4

    def __init__(self, fd: int, plain_fd: int, block: int):
        self.fd, self.plain_fd = fd, plain_fd
        self.block = max(DIRECT_ALIGN, block // DIRECT_ALIGN * DIRECT_ALIGN)
        self.bufs = [mmap.mmap(-1, self.block) for _ in range(self.BUFFERS)]  # anonymous: page-aligned
        self.views = [memoryview(b) for b in self.bufs]
        self.free = [threading.Event() for _ in self.bufs]
        for event in self.free:
            event.set()
        self.hasher: _BackgroundHash | None = None
        self._users = [0] * len(self.bufs)  # per buffer: the write and the hash not yet done with it
        self._users_lock = threading.Lock()
        self.cur = 0
        self.filled = 0
        self.offset = 0  # bytes of the file handed over so far
        self.error: BaseException | None = None
        self._q: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="rfbench-direct-write", daemon=True)
        self._thread.start()

    @classmethod
    def open(cls, path: str, plain_fd: int, block: int) -> "_DirectWrites | None":
        """Direct writes to ``path`` (just created, empty), or None where the system or file system has none."""
        flag = getattr(os, "O_DIRECT", 0)
        if not flag:
            return None
        try:
            fd = os.open(path, os.O_WRONLY | flag | getattr(os, "O_CLOEXEC", 0))
        except OSError:  # EINVAL: a file system without direct I/O (tmpfs)
            return None
        return cls(fd, plain_fd, block)

    def _release(self, k: int) -> None:
        with self._users_lock:
            self._users[k] -= 1
            if self._users[k] == 0:
                self.free[k].set()

    def _run(self) -> None:
        while True:
            item = self._q.get()
            if item is None:
                return
            k, offset = item
            try:
                if self.error is None:
                    self._put(self.fd, self.views[k], offset)
            except BaseException as exc:  # raised in the writer's thread at its next write or finish
                self.error = exc.with_traceback(None)  # its frames would hold views of the buffers
            finally:
                self._release(k)

    def _check(self) -> None:
        if self.error is not None:
            raise self.error

    def write(self, data) -> None:
        data = memoryview(data).cast("B")
        at, n = 0, len(data)
        while at < n:
            take = min(n - at, self.block - self.filled)
            self.views[self.cur][self.filled:self.filled + take] = data[at:at + take]
            self.filled += take
            at += take
            if self.filled == self.block:
                self._check()
                k = self.cur
                self.free[k].clear()
                self._users[k] = 1 if self.hasher is None else 2
                if self.hasher is not None:
                    self.hasher.update(self.views[k], on_done=lambda k=k: self._release(k))
                self._q.put((k, self.offset))
                self.offset += self.block
                self.filled = 0
                self.cur = (k + 1) % len(self.bufs)
                self.free[self.cur].wait()
        self._check()

    def finish(self) -> None:
        for event in self.free:
            event.wait()
        self._check()
        view = self.views[self.cur]
        if self.hasher is not None and self.filled:
            self.hasher.update(view[:self.filled], wait=True)  # after every full buffer (in order)
        aligned = self.filled // DIRECT_ALIGN * DIRECT_ALIGN
        if aligned:
            self._put(self.fd, view[:aligned], self.offset)
        if self.filled > aligned:
            self._put(self.plain_fd, view[aligned:self.filled], self.offset + aligned)
        self.offset += self.filled
        self.filled = 0

    def _put(self, fd: int, data, offset: int) -> None:
        done = 0
        while done < len(data):
            try:
                n = os.pwrite(fd, data[done:], offset + done)
            except OSError as exc:
                if fd != self.fd or exc.errno != errno.EINVAL:
                    raise
                fd = self.fd = self._give_up()  # direct I/O refused after all: the same bytes, the ordinary way
                continue
            if n <= 0:  # pragma: no cover - a file system that accepts no byte without an error
                raise OSError(errno.EIO, "a write wrote nothing")
            done += n

    def _give_up(self) -> int:
        os.close(self.fd)
        return os.dup(self.plain_fd)

    def close(self) -> None:
        if self._thread.is_alive():
            self._q.put(None)
            self._thread.join()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            for view, buf in zip(self.views, self.bufs):
                try:
                    view.release()
                    buf.close()
                except BufferError:  # a slice still held (by an error on its way up): the collector frees it
                    pass
