"""The closed world of a verify re-run: the only files a re-run child may read.

``rfbench verify`` resolves and checks every file the chain will read before any child starts
(:mod:`rfbench.report.closed_world`): the report's inputs, the manifest a split names, the dataset files a
manifest lists, the label set and layout an index or a report names, the model a prediction record names.
It writes what it admitted — each file's device, inode and size — to a file in the re-run's private scratch
folder and names that file in ``RFBENCH_RERUN_LIMITS`` (:mod:`rfbench._rerun`).

In the child, every reader of an input opens the file first and then asks :func:`admit` about the open
descriptor: the file must be one verify admitted (the same device and inode, the same size) or lie under the
scratch folder (what an earlier step of the same re-run wrote). Identity is checked on the descriptor, after
the open, so no path trick between verify's check and the child's open (a symlink swapped in, a folder
renamed) can make the child read another file: whatever path a file inside the chain names, the child reads
nothing verify did not check.

Identity is not content: a file rewritten in place keeps its device, inode and size. So for every file verify
hashed itself (the report's inputs, the files they name, the manifests) the world also holds that sha256, and
:func:`admit` reads such a file once, whole, checks those bytes against it and hands the caller a private
in-memory copy of exactly them (``memfd``): whatever is written to the file while the re-run reads it, the
child reads the bytes verify hashed or refuses (a file that changed since verify hashed it is
:class:`NotAdmitted`). Dataset files are read whole and checked against the manifest's sha256 by their reader
(:class:`~rfbench.datasets.windows.dataset_files.DatasetFiles`), which parses the very bytes it hashed.

Outside a verify re-run :func:`active` is None and :func:`admit` does nothing. This module imports only the
standard library and :mod:`rfbench.errors`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Iterator

from rfbench.errors import FormatError

__all__ = ["World", "active", "admit", "confined", "children_share_it", "write_world", "WORLD_SCHEMA",
           "NotAdmitted"]

WORLD_SCHEMA = "rfbench.world/1"


class NotAdmitted(FormatError):
    """A re-run opened a file verify did not check (exit 2 in the child; the descriptor is closed by the
    caller)."""


@dataclass
class World:
    """The files one re-run may read: ``files`` maps ``(st_dev, st_ino)`` to the size verify saw; ``scratch`` is
    the re-run's own folder (its outputs, read back by its later steps)."""

    scratch: str
    files: dict = field(default_factory=dict)
    #: ``(st_dev, st_ino)`` → the sha256 verify hashed (files it hashed itself; the others have none here)
    digests: dict = field(default_factory=dict)

    def admits(self, info: os.stat_result, real: str | None) -> str | None:
        """None when a file with this ``fstat`` result (and real path, when known) may be read, else why not."""
        size = self.files.get((info.st_dev, info.st_ino))
        if size is not None:
            if size != info.st_size:
                return f"it is {info.st_size} bytes now, {size} when verify checked it"
            return None
        if real is not None and (real + os.sep).startswith(self.scratch + os.sep):
            return None
        return "it is not one of the files verify resolved and checked under its root"


_UNSET = object()
_active: "World | None | object" = _UNSET
_confined = 0  # how many confined() blocks this process is in


def write_world(path: str, scratch: str, files: dict, digests: dict | None = None) -> None:
    """Write the world file a re-run reads (called by verify, in its private scratch folder): each file's
    identity and size, and the sha256 verify hashed where it hashed it (``digests``)."""
    digests = digests or {}
    doc = {"schema": WORLD_SCHEMA, "scratch": os.path.realpath(scratch),
           "files": [[dev, ino, size, digests.get((dev, ino))] for (dev, ino), size in sorted(files.items())]}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)


def active() -> "World | None":
    """The world of this process: the one verify named in ``RFBENCH_RERUN_LIMITS`` (read once), or None."""
    global _active
    if _active is _UNSET:
        _active = _load()
    return _active  # type: ignore[return-value]


def _load() -> "World | None":
    from rfbench._rerun import ENV

    raw = os.environ.get(ENV)
    if not raw:
        return None
    try:
        path = json.loads(raw).get("world")
    except (ValueError, AttributeError):
        path = None
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        files = {(int(e[0]), int(e[1])): int(e[2]) for e in doc["files"]}
        digests = {(int(e[0]), int(e[1])): str(e[3]) for e in doc["files"] if len(e) > 3 and e[3] is not None}
        return World(str(doc["scratch"]), files, digests)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # a re-run that cannot tell what it may read reads nothing
        raise SystemExit(f"error: the re-run's closed world {path} cannot be read ({exc})") from None


@contextlib.contextmanager
def confined(files: dict, digests: dict | None = None) -> Iterator[None]:
    """Within the block this process reads only ``files`` (``(st_dev, st_ino)`` → size), as a re-run child does:
    for library code that re-reads a checked chain in its own process (``rfbench compare`` re-scoring a report
    from its dataset, ``rfbench verify`` recomputing a sweep's paired intervals). ``digests``: the sha256 the
    caller hashed of some of them (``(st_dev, st_ino)`` → hex): those are read as the bytes hashed, or refused."""
    global _active, _confined
    previous = _active
    _active = World(os.path.join(os.sep, "nonexistent", "scratch"), dict(files), dict(digests or {}))
    _confined += 1
    try:
        yield
    finally:
        _confined -= 1
        _active = previous


def children_share_it() -> bool:
    """Whether a child process this one starts reads in the same world: outside a :func:`confined` block (the
    world of a verify re-run comes from the environment, which children inherit; a confined block's lives in
    this process alone). Work that would hand reads to child processes stays in this process otherwise."""
    return _confined == 0


#: Largest file :func:`admit` copies into memory to check it against verify's sha256 (past it the file is read in
#: place: a re-run's inputs are far smaller, and dataset files are checked by their own reader).
MAX_SNAPSHOT_BYTES = 1 << 31


def admit(fd: int, path) -> int:
    """Raise :class:`NotAdmitted` unless the open descriptor ``fd`` (opened from ``path``) is a file this
    process's world admits; nothing happens outside a verify re-run. Returns the descriptor to read: ``fd``
    itself, or, for a file verify hashed, a private copy of its bytes once they are checked against that sha256
    (``fd`` is then closed: the caller reads and closes the copy; on an error ``fd`` is left to the caller)."""
    world = active()
    if world is None:
        return fd
    info = os.fstat(fd)
    real = None
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc: the path's real location (checked before the open; identity checked above)
        real = os.path.realpath(path)
    why = world.admits(info, real)
    if why is not None:
        raise NotAdmitted(f"{os.fspath(path)}: a verify re-run reads only what verify checked; {why}")
    digest = world.digests.get((info.st_dev, info.st_ino))
    if digest is None or info.st_size > MAX_SNAPSHOT_BYTES or not hasattr(os, "memfd_create"):
        return fd
    return _snapshot(fd, info.st_size, digest, path)


def _snapshot(fd: int, size: int, digest: str, path) -> int:
    """A memfd holding the ``size`` bytes of ``fd`` once they hash to ``digest``; ``fd`` is closed when the copy
    is returned, and left open (for the caller to close) when an error is raised."""
    chunks, left = [], size + 1  # one byte past the size: a file that grew is not the file verify hashed
    while left > 0:
        block = os.pread(fd, min(left, 1 << 24), size + 1 - left)
        if not block:
            break
        chunks.append(block)
        left -= len(block)
    data = b"".join(chunks)
    if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        raise NotAdmitted(f"{os.fspath(path)}: a verify re-run reads only what verify checked; its bytes changed "
                          "since verify hashed them (written while verify ran)")
    copy = os.memfd_create("rfbench-verified", getattr(os, "MFD_CLOEXEC", 0))
    try:
        view, done = memoryview(data), 0
        while done < size:
            done += os.write(copy, view[done:])
        os.lseek(copy, 0, os.SEEK_SET)
    except OSError as exc:  # the process's file size limit (`ulimit -f`) holds for a memfd too
        os.close(copy)
        import errno

        from rfbench.errors import FILE_TOO_LARGE

        reason = FILE_TOO_LARGE if exc.errno == errno.EFBIG else (exc.strerror or str(exc)).lower()
        raise OSError(exc.errno, f"its in-memory copy for the re-run cannot be written: {reason}") from None
    except BaseException:
        os.close(copy)
        raise
    os.close(fd)
    return copy
