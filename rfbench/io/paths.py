"""The one resolver: where a path that one file names leads.

rfbench's files name other files — a report its inputs, a split its manifest, a manifest its dataset root and
files, a windows index its split, manifest and label set, a prediction record its model, windows and
predictions. Every such path is resolved here, the same way in every command and in verify:

- relative to the folder of the file that names it (``base``), or as given when absolute;
- symbolic links resolved (``realpath``, strictly: every component must exist);
- under ``root`` when one is given (verify's root: nothing outside it is read; the message says what to pass);
- a regular file (or a folder, for a dataset root), checked with ``stat`` before anything is opened — a FIFO,
  a device or a socket is refused unread — and its size is known before any reading starts.

Nothing is opened here. The readers then open the resolved path with :func:`rfbench.io.files.open_regular`
(which, in a verify re-run, also checks that the open file is one verify admitted:
:mod:`rfbench.io.world`).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from rfbench.errors import FormatError

__all__ = ["Resolved", "resolve", "resolve_folder", "under"]


@dataclass(frozen=True)
class Resolved:
    """A resolved file: its real path and what ``stat`` said of it (size, device, inode)."""

    path: Path
    size: int
    dev: int
    ino: int

    @property
    def identity(self) -> tuple[int, int]:
        return (self.dev, self.ino)


def under(path: Path, root: Path) -> bool:
    """``path`` is ``root`` or lies inside it (both real paths)."""
    return path == root or root in path.parents


def _real(recorded, base: Path | None, what: str, error: type) -> tuple[Path, Path]:
    if not isinstance(recorded, (str, os.PathLike)) or not os.fspath(recorded) or "\x00" in os.fspath(recorded):
        raise error(f"{what}: no usable path recorded")
    path = Path(recorded)
    candidate = path if path.is_absolute() or base is None else Path(base) / path
    try:
        return candidate, Path(os.path.realpath(candidate, strict=True))
    except FileNotFoundError:
        shown = f"{candidate} (recorded as {recorded})" if os.fspath(recorded) != os.fspath(candidate) else candidate
        raise error(f"{what} is missing: {shown}") from None
    except (RuntimeError, OSError) as exc:  # a symlink loop, a path component that is a file...
        raise error(f"{what} {recorded}: cannot be resolved ({getattr(exc, 'strerror', None) or exc})") from None


def _outside(what: str, recorded, root: Path, outside: str | None) -> str:
    return (f"{what} {recorded}: resolves outside "
            + (outside or f"the verify root {root}; nothing outside the root is read (pass a --root that holds "
                          f"it)"))


def resolve(recorded, base: str | os.PathLike | None, *, what: str, root: str | os.PathLike | None = None,
            outside: str | None = None, error: type = FormatError) -> Resolved:
    """The regular file ``recorded`` names, relative to ``base`` (the folder of the file that names it; None:
    the current folder).

    Parameters
    ----------
    recorded : str or path-like
        The path as the naming file records it (or as the user typed it).
    base : path-like or None
        The folder relative paths are taken from.
    what : str
        What the file is, for messages (``"input split"``, ``"the manifest the split names"``).
    root : path-like, optional
        A real folder the file must lie in (after links are resolved).
    outside : str, optional
        What the message says lies outside, instead of verify's words.

    Raises
    ------
    FormatError (or ``error``)
        No usable path, missing, unresolvable, outside ``root``, or not a regular file (a folder, a FIFO, a
        device).
    """
    candidate, real = _real(recorded, base, what, error)
    if root is not None and not under(real, Path(root)):
        raise error(_outside(what, recorded, Path(root), outside))
    try:
        info = os.stat(real)
    except OSError as exc:
        raise error(f"{what} {recorded}: cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{what} {recorded}: is a folder, not a regular file")
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{what} {recorded}: not a regular file; rfbench reads regular files only (no FIFO or "
                    f"device)")
    return Resolved(real, info.st_size, info.st_dev, info.st_ino)


def resolve_folder(recorded, base: str | os.PathLike | None, *, what: str, root: str | os.PathLike | None = None,
                   outside: str | None = None, error: type = FormatError) -> Path:
    """The real folder ``recorded`` names (as :func:`resolve`, for a folder such as a manifest's dataset root)."""
    candidate, real = _real(recorded, base, what, error)
    if root is not None and not under(real, Path(root)):
        raise error(_outside(what, recorded, Path(root), outside))
    if not real.is_dir():
        raise error(f"{what} {recorded}: not a folder")
    return real
