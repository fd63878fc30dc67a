"""Walking a dataset tree safely, and counting and hashing its Intel 5300 logs: what every ingest shares.

:class:`TreeWalk` lists folders so that nothing in a hostile or messy tree can crash an ingest, hang it or make
it read outside the dataset:

- **names that are not valid UTF-8** cannot be written into a manifest exactly, so the entry is a problem
  and left out; its path is shown with each undecodable byte as ``\\xNN`` (Python's ``backslashreplace``) and
  control characters escaped the same way (:func:`display_path`);
- **names holding a control character** (U+0000–U+001F, DEL, U+0080–U+009F: a TAB, a newline, ESC…) are
  problems and left out too: a path is shown and recorded as :func:`display_path` gives it (a terminal must
  never receive a raw ESC), and for such a name that is not the name, so a recording would name a file the
  tree does not hold. A discovered data folder (:meth:`TreeWalk.enter`) whose path below the root holds such
  a name is one problem, its contents left out;
- **symbolic links** are followed only when their target is inside the dataset folder (its real path); a link
  leading outside (``ground_truth.npy → /etc/passwd``) is a problem naming the link, never its target, unless
  following links was asked for (``follow_symlinks``, recorded in the manifest); a broken link is a problem; a
  folder reached twice (a link loop) is walked once;
- **only regular files are ever opened**: FIFOs (which would block), sockets and devices, and the kernel's
  pseudo-files under ``/proc``, ``/sys`` and ``/dev`` (``/proc/self/status`` has size 0 but is not empty) are
  problems ("not a regular file"), never opened;
- hidden entries (names starting with ``.``) are skipped without a problem.

Problem texts name paths relative to the dataset root and never quote a file's contents.

:func:`count_logs` frames every log with the parser's kernel (:func:`rfbench.io.intel5300.count_files`) and
hashes it (sha256) from the same read buffer, in batches on a pool of threads (the kernel and hashlib release
the GIL). :func:`log_entry` turns one result into a manifest file entry and its problems, the same way for
every ingest.
"""

from __future__ import annotations

import os
import re
import stat
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from rfbench.datasets.values import value_sort_key
from rfbench.errors import FormatError

__all__ = ["TreeWalk", "Entry", "display_path", "is_utf8", "has_control", "CONTROL_REASON", "count_logs",
           "LogCount", "log_entry", "part_entries", "generated_log", "duplicate_problems", "marker_record",
           "nested_marker", "ancestor_marker", "marker_folders", "tree_marker", "PSEUDO_FILESYSTEMS", "BATCH_FILES",
           "BATCH_BYTES"]

#: Folders whose files are the kernel's pseudo-files: their sizes say nothing of their contents.
PSEUDO_FILESYSTEMS = ("/proc", "/sys", "/dev")

#: Files per batch of the counting pool: one read buffer and one kernel call per batch, so the threads spend their
#: time in the kernel (GIL released), not in switching between short calls; a batch stops early at this many bytes.
BATCH_FILES = 16
BATCH_BYTES = 16 << 20


def is_utf8(name: str) -> bool:
    """Whether a name from the file system is valid UTF-8 (undecodable bytes arrive as lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def display_path(text: str) -> str:
    """A path as it is safe to print and store: undecodable bytes as ``\\xNN``, control characters (C0, DEL and
    C1) escaped the same way. A path holding neither is returned as it is."""
    if text.isascii() and text.isprintable():  # nothing to escape (most names): as it is
        return text
    raw = os.fsencode(text) if not is_utf8(text) else text.encode("utf-8")
    shown = raw.decode("utf-8", "backslashreplace")
    if _CONTROL.search(shown):
        shown = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", shown)
    return shown


#: Control characters: C0, DEL and C1 (U+009B is read by some terminals as ESC [).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")

#: Why an entry whose name holds a control character is left out (``{what}``: "it", or "its contents" for a folder
#: an ingest discovered).
CONTROL_REASON = ("name holds a control character (shown with \\x escapes); paths are recorded and shown escaped, "
                  "which would name a file the tree does not hold, so {what} left out")


def has_control(name: str) -> bool:
    """Whether ``name`` holds a control character (C0, DEL or C1)."""
    return _CONTROL.search(name) is not None


def _child(base: str, name: str) -> str:
    """The shown relative path of ``name`` in a folder whose shown relative path is ``base``."""
    return display_path(name) if base == "." else base + "/" + display_path(name)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


class Entry:
    """One usable entry of a folder: a regular file or a folder, inside the dataset (or followed on request).

    ``path`` is where to open it (under the root as given); ``rel`` its POSIX path relative to the root;
    ``real`` its real path; ``size`` the file's size in bytes (0 for a folder). A walk gives ``folder`` instead of
    ``path`` (the entry's folder as a Path): ``path`` is then ``folder / name``, made when first asked for (most
    files of a large walk are opened by their real path and never need one).
    """

    __slots__ = ("name", "rel", "real", "is_dir", "size", "_path", "_folder")

    def __init__(self, name: str, path: Path | None, rel: str, real: str, is_dir: bool, size: int = 0,
                 folder: Path | None = None):
        self.name, self.rel, self.real, self.is_dir, self.size = name, rel, real, is_dir, size
        self._path, self._folder = path, folder

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = self._folder / self.name
        return self._path

    def path_text(self) -> str:
        """``str(self.path)``, without building the Path when the walk gave only the folder (a reader process
        needs the text of each of a large tree's files, for its messages)."""
        if self._path is not None:
            return str(self._path)
        folder = str(self._folder)
        if folder == ".":
            return self.name
        return folder + self.name if folder.endswith(os.sep) else folder + os.sep + self.name

    @property
    def folder(self) -> Path:
        """The folder the entry was listed in (a walk's Path object, shared by the folder's entries)."""
        return self._folder if self._folder is not None else self.path.parent

    def _key(self) -> tuple:
        return self.name, self.path, self.rel, self.real, self.is_dir, self.size

    def __eq__(self, other) -> bool:
        return isinstance(other, Entry) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Entry(name={self.name!r}, path={self.path!r}, rel={self.rel!r}, real={self.real!r}, "
                f"is_dir={self.is_dir!r}, size={self.size!r})")


class TreeWalk:
    """Lists the folders of one dataset tree, turning every unusable entry into a problem (see the module docs).

    Parameters
    ----------
    root : path-like
        The dataset folder; paths in problems and entries are relative to it.
    follow_symlinks : bool
        Follow links whose target is outside ``root`` too.
    """

    def __init__(self, root: str | os.PathLike, follow_symlinks: bool = False):
        self.root = Path(root)
        self.real_root = os.path.realpath(self.root)
        self.follow_symlinks = bool(follow_symlinks)
        self.problems: list[dict] = []
        self._walked: set[str] = set()

    def rel(self, path: Path) -> str:
        """``path`` relative to the root, POSIX, as it is safe to show (:func:`display_path`)."""
        try:
            text = path.relative_to(self.root).as_posix()
        except ValueError:
            text = path.as_posix()
        return display_path(text) if text != "." else "."

    def problem(self, path: Path | str, reason: str) -> None:
        self.problems.append({"path": path if isinstance(path, str) else self.rel(path), "reason": reason})

    def enter(self, folder: Path) -> bool:
        """Whether ``folder`` (e.g. a discovered sub-root) may be walked: inside the root unless following links,
        and its path below the root nameable exactly (valid UTF-8, no control character: every path under it
        starts with that text). A folder that may not is a problem."""
        try:
            below = folder.relative_to(self.root).as_posix()
        except ValueError:
            below = "."
        if not is_utf8(below):
            self.problem(folder, "name is not valid UTF-8 (shown with \\x escapes); a manifest cannot name the "
                                 "files under it exactly, so its contents are left out")
            return False
        if has_control(below):
            self.problem(folder, CONTROL_REASON.format(what="its contents are"))
            return False
        real = os.path.realpath(folder)
        if not _inside(real, self.real_root) and not self.follow_symlinks:
            self.problem(folder, "symbolic link to a folder outside the dataset folder; not followed (following "
                                 "links is off by default); its contents are left out")
            return False
        return True

    def entries(self, folder: Path, real_folder: str | None = None) -> list[Entry]:
        """The usable entries of ``folder``, sorted by name; every other entry is a problem."""
        real_folder = real_folder if real_folder is not None else os.path.realpath(folder)
        if real_folder in self._walked:
            self.problem(folder, "folder reached a second time (a link loop, or two links to one folder); walked "
                                 "once")
            return []
        self._walked.add(real_folder)
        try:
            with os.scandir(folder) as it:
                items = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            self.problem(folder, f"cannot list ({exc.strerror or exc}); left out")
            return []
        pseudo_folder = any(_inside(real_folder, p) for p in PSEUDO_FILESYSTEMS)
        base = self.rel(folder)  # an entry's is this, "/" and its name as shown (the same as self.rel(path))
        out = []
        for item in items:
            name = item.name
            if name.startswith("."):
                continue
            if not is_utf8(name):
                path = folder / name
                self.problem(path, "name is not valid UTF-8 (shown with \\x escapes); a manifest cannot name it "
                                   "exactly, so it is left out")
                continue
            if has_control(name):
                self.problem(folder / name, CONTROL_REASON.format(what="it is"))
                continue
            try:
                link = item.is_symlink()
                path = folder / name if link else None
                real = os.path.realpath(path) if link else os.path.join(real_folder, name)
                if link and not os.path.exists(real):
                    self.problem(path, "broken symbolic link; left out")
                    continue
                if link and not _inside(real, self.real_root) and not self.follow_symlinks:
                    self.problem(path, "symbolic link to a place outside the dataset folder; not followed "
                                       "(following links is off by default); left out")
                    continue
                st = os.stat(path) if link else item.stat(follow_symlinks=False)
            except OSError as exc:
                self.problem(folder / name, f"cannot stat ({exc.strerror or exc}); left out")
                continue
            if stat.S_ISDIR(st.st_mode):
                out.append(Entry(name, path, _child(base, name), real, True, folder=folder))
            elif not stat.S_ISREG(st.st_mode) or pseudo_folder or \
                    (link and any(_inside(real, p) for p in PSEUDO_FILESYSTEMS)):
                self.problem(folder / name, "not a regular file (a FIFO, socket, device or kernel pseudo-file); "
                                            "never opened, left out")
            else:
                out.append(Entry(name, path, _child(base, name), real, False, int(st.st_size), folder=folder))
        return out

    def files(self, folder: Path, real_folder: str | None = None) -> list[Entry]:
        """Every usable file under ``folder``, depth first in name order. Walked with a stack of its own, not by
        recursion: a tree's depth is the tree's choice (a chain of a thousand folders is one mkdir loop)."""
        out = []
        pending = [iter(self.entries(folder, real_folder))]
        while pending:
            e = next(pending[-1], None)
            if e is None:
                pending.pop()
            elif e.is_dir:
                pending.append(iter(self.entries(e.path, e.real)))
            else:
                out.append(e)
        return out

    def count_files(self, folder: Path, real_folder: str | None = None) -> int:
        """How many files a left-out folder holds (for the problem saying so); problems found meanwhile are
        dropped (the folder is one problem)."""
        kept = len(self.problems)
        n = len(self.files(folder, real_folder))
        del self.problems[kept:]
        return n


def nested_marker(walk: "TreeWalk", name: str) -> dict | None:
    """``{path, sha256}`` of the first generator's marker ``name`` the walk left out as a problem, deeper in the
    tree than the folders an ingest looks in for it (a generated folder merged into a corpus, its marker with it),
    or None. A tree holding a generator's marker anywhere is SYNTHETIC: its own files say so."""
    for p in sorted(walk.problems, key=lambda p: p["path"]):
        path = p["path"]
        if isinstance(path, str) and (path == name or path.endswith("/" + name)):
            found = marker_record((walk.root / path).parent, name)
            if found is not None:
                found["path"] = path
                return found
    return None


def marker_folders(root: Path) -> list[Path]:
    """The folders whose generator's marker makes the tree at ``root`` generated, besides the tree's own: every
    folder above ``root`` as written, and every folder above the folder ``root`` really is (a link to a folder
    inside a generated tree is that folder; walking up the link's own path would never meet the tree's marker)."""
    given = Path(os.path.abspath(root))
    real = Path(os.path.realpath(root))
    seen, out = set(), []
    for folder in (*given.parents, real, *real.parents):
        if folder != given and folder not in seen:
            seen.add(folder)
            out.append(folder)
    return out


def ancestor_marker(root: Path, name: str) -> dict | None:
    """``{path, found_in}`` of a generator's marker ``name`` in one of :func:`marker_folders` of ``root`` (the
    nearest first; ``path`` relative to the folder ``root`` really is), or None. Its presence is what counts:
    it is looked at (a regular file, not a link), not read — it lies outside the tree, which is all a verify
    re-run of the ingest may read."""
    real = os.path.realpath(root)
    for folder in marker_folders(root):
        try:
            st = os.lstat(folder / name)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            return {"path": os.path.relpath(folder / name, real), "found_in": "a folder above the dataset folder"}
    return None


def tree_marker(walk: "TreeWalk", name: str, also: Path | None = None) -> dict | None:
    """The generator's marker ``name`` of the tree ``walk`` walked (``{path, ...}``, ``path`` as the manifest
    records it), or None: at the tree's root, else in ``also`` (a folder in it an ingest looks in first: Widar3.0's
    ``CSI``/``BVP``), else anywhere deeper (:func:`nested_marker`), else above it (:func:`ancestor_marker`)."""
    found = marker_record(walk.root, name)
    if found is None and also is not None and also != walk.root:
        found = marker_record(also, name)
        if found is not None:
            found["path"] = walk.rel(also / name)
    return found or nested_marker(walk, name) or ancestor_marker(walk.root, name)


def marker_record(root: Path, name: str) -> dict | None:
    """``{path, sha256}`` of the generator's marker file at ``root`` (a regular file, not a link), or None."""
    from rfbench.io.files import sha256_file

    path = root / name
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    digest, _ = sha256_file(path)
    return {"path": name, "sha256": digest}


@dataclass(frozen=True)
class LogCount:
    """What :func:`count_logs` found in one log: valid records, skipped records by reason (non-zero only), the
    file's sha256, or the error (one line, without the path) that kept it from being read."""

    records: int
    skipped: dict
    sha256: str | None
    error: str | None
    format: str | None = None  # another CSI hardware's log (rfbench.io.hwlog.FORMATS); None: Intel 5300
    #: a log rfbench's generator wrote: an Intel 5300 log with intel5300.GENERATED_RECORD first, or another
    #: hardware's log with its mark (rfbench.io.hwlog.generated)
    generated: bool = False


def _count_other(path: str) -> LogCount | None:
    """The count of a log of another CSI hardware than the Intel 5300 (its format told from its bytes), or None
    when the bytes are no such log."""
    import hashlib

    from rfbench.io.files import read_input_bytes
    from rfbench.io.parse_files import other_hardware_format, read_hardware

    try:
        data = read_input_bytes(path)
    except FormatError:
        return None
    fmt = other_hardware_format(data)
    if fmt is None:
        return None
    digest = hashlib.sha256(data).hexdigest()
    try:
        log = read_hardware(data, fmt)
    except FormatError as exc:
        return LogCount(0, {}, digest, f"{fmt} log: {exc}", fmt)
    from rfbench.io.hwlog import generated

    return LogCount(log.n_records, {k: int(v) for k, v in log.skipped.items() if v}, digest, None, fmt,
                    generated=generated(log, data))


def _count_batch(paths: list[str]) -> list[LogCount]:
    from rfbench.io import intel5300

    out = []
    for path, result in zip(paths, intel5300.count_files(paths, sha256=True)):
        if isinstance(result, FormatError):
            text = str(result)
            out.append(LogCount(0, {}, None, text[len(path) + 2:] if text.startswith(path + ": ") else text))
        elif result.n_records == 0:  # no Intel 5300 record: perhaps another hardware's log
            other = _count_other(path)
            out.append(other if other is not None else LogCount(0, {k: int(v) for k, v in result.skipped.items()
                                                                    if v}, result.sha256, None))
        else:
            out.append(LogCount(result.n_records, {k: int(v) for k, v in result.skipped.items() if v},
                                result.sha256, None, generated=result.generated))
    return out


def _batches(files: Sequence[tuple[str, int]]) -> list[list[str]]:
    batches, batch, size = [], [], 0
    for path, n_bytes in files:
        if batch and (len(batch) == BATCH_FILES or size + n_bytes > BATCH_BYTES):
            batches.append(batch)
            batch, size = [], 0
        batch.append(path)
        size += n_bytes
    if batch:
        batches.append(batch)
    return batches


def count_logs(files: Iterable[tuple[str, int]], *, workers: int | None = None,
               progress: Callable[[int], None] | None = None) -> dict[str, LogCount]:
    """Frame and hash Intel 5300 logs: ``{path: LogCount}`` for each ``(path, size)``.

    Each file is read once; its records are counted by the parser's framing kernel (which validates every
    record; the CSI is not unpacked) and its sha256 is computed from the same buffer. Batches of files run on
    ``workers`` threads (default: every core); the result does not depend on the number of workers.
    """
    files = list(files)
    results: dict[str, LogCount] = {}
    n_workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
    batches = _batches(files)
    if n_workers == 1 or len(batches) <= 1:
        for batch in batches:
            results.update(zip(batch, _count_batch(batch)))
            if progress is not None:
                progress(len(batch))
        return results
    with ThreadPoolExecutor(max_workers=n_workers) as pool:
        futures = {pool.submit(_count_batch, batch): batch for batch in batches}
        for fut in as_completed(futures):
            batch = futures[fut]
            results.update(zip(batch, fut.result()))
            if progress is not None:
                progress(len(batch))
    return results


def log_entry(rel: str, size: int, count: LogCount | None, owner: str, problems: list) -> tuple[dict, int | None]:
    """The manifest entry of one log (``{path, bytes, sha256, records, skipped}``) and its usable record count
    (None when the file gives no data); problems found are appended.

    ``owner`` says whose data is missing in a problem text ("receiver r3", "the recording"). ``count`` is
    None for an empty file (never read: its sha256 is that of no bytes).
    """
    entry = {"path": rel, "bytes": size, "sha256": None, "records": 0, "skipped": {}}
    if size == 0:
        entry["sha256"] = _EMPTY_SHA256
        problems.append({"path": rel, "reason": f"empty file (0 bytes); {owner} has no data"})
        return entry, None
    entry["records"], entry["skipped"], entry["sha256"] = count.records, count.skipped, count.sha256
    if count.format is not None:
        entry["format"] = count.format
    if count.error is not None:
        problems.append({"path": rel, "reason": f"cannot read: {count.error}"})
        return entry, None
    if count.records == 0:
        what = f"{count.format} CSI record" if count.format else "Intel 5300 CSI record"
        problems.append({"path": rel, "reason": f"no valid {what}; {owner} has no data"})
        return entry, None
    bad = {k: v for k, v in count.skipped.items() if k != "invalid_perm"}
    if bad:
        detail = ", ".join(f"{k} {v}" for k, v in sorted(bad.items()))
        problems.append({"path": rel, "reason": f"{sum(bad.values())} record(s) skipped ({detail}); the other "
                                                f"{count.records} are used"})
    return entry, count.records


_EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def part_entries(members: Iterable[tuple[tuple, Entry]], names: Sequence[str], counts: dict,
                 owner: Callable[[tuple], str], problems: list) -> tuple[list[dict], list[tuple[tuple, int]]]:
    """The file entries of one recording's parts and the parts with data.

    ``members`` are ``(part values, entry)`` (e.g. ``((3,), entry)`` for receiver 3), sorted here by value;
    ``names`` name the part fields, written into each entry; ``counts`` is :func:`count_logs`' result;
    ``owner(values)`` names a part in problem texts. Returns the entries and ``[(values, records)]`` of the parts
    with at least one valid record (a recording's ``frames`` is the fewest of these).
    """
    entries, usable = [], []
    for values, e in sorted(members, key=lambda item: tuple(value_sort_key(v) for v in item[0])):
        entry, records = log_entry(e.rel, e.size, counts.get(str(e.path)), owner(values), problems)
        entry.update(zip(names, values))
        entries.append(entry)
        if records is not None:
            usable.append((values, records))
    return entries, usable


def generated_log(recordings: Sequence[Mapping], paths: Mapping[str, str], counts: Mapping[str, LogCount]) \
        -> dict | None:
    """The synthetic marker record (``{path, sha256, found_in}``) of the first file of ``recordings`` (manifest
    recordings, in their order) that is a log rfbench's generator wrote (:attr:`LogCount.generated`), or None.
    ``paths`` maps a file's manifest path to its key in ``counts`` (:func:`count_logs`' result)."""
    for rec in recordings:
        for f in rec["files"]:
            count = counts.get(paths.get(f["path"], ""))
            if count is not None and count.generated:
                found = ("the log's first record" if count.format is None else
                         "the log's frames' source address" if count.format != "atheros" else
                         "the log's first record's payload")
                return {"path": f["path"], "sha256": count.sha256, "found_in": found}
    return None


def duplicate_problems(entries: Iterable[tuple[str, str, int]]) -> tuple[list[dict], list[list[str]]]:
    """Files with identical bytes, from ``(path, sha256, bytes)``: a problem for each copy after the first (in
    path order), and the groups of identical paths. Empty files are not compared (they all hash alike)."""
    by_hash: dict[str, list[str]] = {}
    for path, digest, size in entries:
        if digest and size > 0:
            by_hash.setdefault(digest, []).append(path)
    problems, groups = [], []
    for digest, paths in sorted((d, p) for d, p in by_hash.items() if len(p) > 1):  # (few: sorted alone)
        paths = sorted(paths)
        groups.append(paths)
        for p in paths[1:]:
            problems.append({"path": p, "reason": f"identical to {paths[0]} (same sha256 {digest[:16]}…): the "
                                                  "same recording under two names? On both sides of a split, "
                                                  "the test side would hold training data"})
    return problems, groups
