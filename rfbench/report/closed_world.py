"""What ``rfbench verify`` checks before any re-run starts: every file the chain will read, resolved under the
verify root and bound to the report (DESIGN.md §7a, "a closed world").

:func:`close_world` walks the chain from the report, with the one resolver (:func:`rfbench.io.paths.resolve`,
each path relative to the file that names it, links resolved, under the root, regular files only, the size
known before anything is read):

- the report's **inputs** (relative to the report's folder): each distinct file hashed once, its size checked
  against ``fstat`` first — a changed input is a mismatch (exit 1) and nothing is re-run;
- the **manifest a split names** (relative to the split) and the **dataset root and files a manifest lists**
  (relative to the manifest; ``..`` and absolute file paths refused; each file's size checked against the
  manifest's, its sha256 checked by the re-run as it reads it);
- the **split, manifest and label set a windows index names** (relative to the index; each must be the file the
  index hashed);
- the **model, predictions and windows index a prediction record names** (relative to the record): they must be
  the report's own ``model``, ``pred`` and ``rows`` inputs — what the model replay is compared against is the file
  that was scored;
- the dataset files the ground truth was read from (``provenance.ground_truth_files``), hashed;
- every regular file under each manifest's dataset root, for verify's second ingest of the tree (it reads
  them all: :mod:`rfbench.datasets.reingest`); links admitted where they land under the root, or under the verify
  root for a manifest made following links.

Everything admitted is recorded by device and inode (:class:`ClosedWorld`): the re-run children receive that
list and may open nothing else (:mod:`rfbench.io.world`). The parent's own work is bounded
(:class:`Budget`): a wall-clock deadline (verify's ``timeout`` covers the whole command) and a cap on the bytes
it hashes, each distinct file counted once.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from rfbench.errors import FormatError, VerificationError
from rfbench.io.files import NotRegularFile, open_regular
from rfbench.io.paths import Resolved, resolve, resolve_folder, under

__all__ = ["Budget", "ClosedWorld", "close_world", "hash_resolved"]

_SHA256 = re.compile(r"[0-9a-f]{64}")


class Budget:
    """verify's own bounds: a deadline ``timeout`` seconds from now and at most ``max_bytes`` hashed."""

    def __init__(self, timeout: float, max_bytes: int):
        self.timeout = float(timeout)
        self.deadline = time.monotonic() + self.timeout
        self.max_bytes = int(max_bytes)
        self.hashed = 0

    def left(self) -> float:
        """Seconds left before the deadline (raises once it has passed)."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self.expired()
        return left

    def expired(self) -> VerificationError:
        return VerificationError(f"verify did not finish within {self.timeout:g} s (raise it with `timeout`)",
                                 differences=[{"path": "verify", "report": "finished",
                                               "rerun": f"stopped after {self.timeout:g} s"}])

    def reserve(self, size: int, what: str) -> None:
        if self.hashed + size > self.max_bytes:
            raise FormatError(f"{what}: verify would hash {_gib(self.hashed + size)} in all, more than its limit of "
                              f"{_gib(self.max_bytes)} (raise it with `max_gb`)")
        self.hashed += size


def _gib(n: int) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n} bytes"


def hash_resolved(item: Resolved, budget: Budget, what: str) -> str:
    """sha256 of a resolved file, read through the safe opener; its size must still be the resolved one (a file
    that changed in between is not hashed: a mismatch) and the deadline is checked every block."""
    budget.reserve(item.size, what)
    h = hashlib.sha256()
    for block in _blocks(item, what, 1 << 22):
        h.update(block)
        budget.left()
    return h.hexdigest()


def _blocks(item: Resolved, what: str, size: int):
    """The bytes of a resolved file in blocks of at most ``size``, through the safe opener: the descriptor must
    be the resolved file (device, inode, size), and all ``item.size`` bytes must be there."""
    try:
        fd = open_regular(item.path)
    except NotRegularFile:
        raise FormatError(f"{what} {item.path}: not a regular file; verify reads regular files only") from None
    except OSError as exc:
        raise FormatError(f"{what} {item.path}: cannot be read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino, info.st_size) != (item.dev, item.ino, item.size):
            raise VerificationError(f"{what} {item.path}: changed while verify was reading it",
                                    differences=[{"path": what, "report": f"{item.size} bytes",
                                                  "rerun": f"{info.st_size} bytes"}])
        left = item.size
        while left > 0:
            block = os.read(fd, min(size, left))
            if not block:
                break
            left -= len(block)
            yield block
        if left:
            raise VerificationError(f"{what} {item.path}: shorter than its size while verify read it",
                                    differences=[{"path": what, "report": f"{item.size} bytes",
                                                  "rerun": f"{item.size - left} bytes read"}])
    finally:
        os.close(fd)


@dataclass
class ClosedWorld:
    """Everything verify resolved and checked for one report.

    Attributes
    ----------
    root : Path
        The verify root (real path).
    inputs : dict
        Role → :class:`~rfbench.io.paths.Resolved` of each report input.
    files : dict
        ``(st_dev, st_ino)`` → size of every file a re-run may read.
    digests : dict
        ``(st_dev, st_ino)`` → sha256 of every file verify hashed itself.
    named : dict
        What the chain's files name, resolved: ``split-manifest``, ``index-split``, ``index-manifest``,
        ``label-set``, ``dataset-root``.
    manifests : list
        ``(manifest, dataset root, document)`` of each distinct manifest of the chain
        (:class:`~rfbench.io.paths.Resolved`, the real path, the document as read): verify ingests each tree
        again and compares (:mod:`rfbench.datasets.reingest`).
    changed : list
        Inputs whose size or sha256 differ from the report's (``{path, report, rerun, file}``).
    """

    root: Path
    inputs: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)
    digests: dict = field(default_factory=dict)
    named: dict = field(default_factory=dict)
    changed: list = field(default_factory=list)
    budget: Budget | None = None
    manifests: list = field(default_factory=list)

    def admit(self, item: Resolved) -> None:
        self.files[item.identity] = item.size

    def digest(self, item: Resolved, what: str) -> str:
        """sha256 of ``item``, hashed once per distinct file however many records name it."""
        digest = self.digests.get(item.identity)
        if digest is None:
            digest = self.digests[item.identity] = hash_resolved(item, self.budget, what)
        self.admit(item)
        return digest

    def same(self, a: Resolved, b: Resolved) -> bool:
        return a.identity == b.identity

    def read(self, item: Resolved, what: str) -> bytes:
        """The bytes of ``item``, read once, whole, and checked against the sha256 verify hashed it to (hashed
        now when it was not). verify's own checks parse these bytes and nothing else: a file rewritten in place
        between verify's hash and a later read by path (same inode, same size; honest bytes for the replay,
        forged ones for the score) would otherwise be checked in one version and scored in another."""
        expected = self.digests.get(item.identity)
        data = read_checked(item, expected, what)
        if expected is None:
            self.digests[item.identity] = hashlib.sha256(data).hexdigest()
            self.admit(item)
        if self.budget is not None:
            self.budget.left()
        return data

    def document(self, item: Resolved, kind: str, what: str) -> dict:
        """The JSON document ``item`` holds, parsed (strictly, bounded) from :meth:`read`'s bytes, its schema
        ``rfbench.<kind>/…`` checked."""
        check_document_size(item, what)
        return parse_document(self.read(item, what), item, kind)


def read_checked(item: Resolved, expected: str | None, what: str) -> bytes:
    """:func:`read_resolved`, and the bytes must hash to ``expected`` (when given): else the file changed since
    verify hashed it (a :class:`VerificationError`)."""
    data = read_resolved(item, what)
    if expected is not None:
        digest = hashlib.sha256(data).hexdigest()
        if digest != expected:
            raise VerificationError(f"{what} {item.path}: changed while verify ran (its sha256 is no longer the one "
                                    "verify hashed)", differences=[{"path": what, "report": expected,
                                                                    "rerun": digest}])
    return data


def check_document_size(item: Resolved, what: str) -> None:
    from rfbench.io.files import MAX_JSON_BYTES

    if item.size > MAX_JSON_BYTES:
        raise FormatError(f"{what} {item.path}: {item.size} bytes, more than a JSON document rfbench reads")


def parse_document(data: bytes, item: Resolved, kind: str) -> dict:
    """A stage JSON document from bytes verify read (strict, bounded parser), its schema checked."""
    from rfbench.io.documents import parse_json_bytes
    from rfbench.io.files import check_schema

    doc = parse_json_bytes(data, str(item.path))
    if not isinstance(doc, dict):
        raise FormatError(f"{item.path}: expected a JSON object, found {type(doc).__name__}")
    check_schema(doc, kind, str(item.path))
    return doc


def read_resolved(item: Resolved, what: str) -> bytes:
    """All ``item.size`` bytes of a resolved file, through the safe opener, the descriptor's identity and size
    checked against the resolved ones."""
    return b"".join(_blocks(item, what, max(item.size, 1)))


def check_input_records(report: Mapping, report_path: Path) -> None:
    """Every input record is ``{role, path, bytes, sha256[, option]}`` with values of the right types and roles
    distinct, before any of them is used (a report is untrusted: it may hold anything)."""
    inputs = report.get("inputs")
    if not isinstance(inputs, list):
        raise FormatError(f"{report_path}: inputs is not a list of input records")
    roles = set()
    for n, item in enumerate(inputs):
        where = f"{report_path}: inputs[{n}]"
        if not isinstance(item, dict):
            raise FormatError(f"{where} is not an input record")
        role, path, size, digest = item.get("role"), item.get("path"), item.get("bytes"), item.get("sha256")
        if not isinstance(role, str) or not role:
            raise FormatError(f"{where} has no role")
        if role in roles:
            raise FormatError(f"{where}: the role {role!r} is recorded twice")
        roles.add(role)
        if not isinstance(path, str) or not path:
            raise FormatError(f"{where} ({role}) records no usable path")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise FormatError(f"{where} ({role}) records no size")
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise FormatError(f"{where} ({role}) records no sha256")
        option = item.get("option")
        if option is not None and (not isinstance(option, str) or not option.startswith("--")):
            raise FormatError(f"{where} ({role}) records an option that is not a command-line option")


def close_world(report: Mapping, report_path: Path, root: Path, budget: Budget) -> ClosedWorld:
    """Resolve, size-check and hash everything the report's re-run will read (see the module docstring).

    Returns
    -------
    ClosedWorld
        With ``changed`` listing inputs whose size or sha256 differ (the caller refuses to re-run then).

    Raises
    ------
    FormatError
        A path that is missing, outside the root, not a regular file, or malformed; a chain whose files name
        other files than the report's inputs are (exit 2 — except as below).
    VerificationError
        A prediction record that describes other predictions than those scored, or another model or index
        than the report's (exit 1); the deadline passed.
    """
    check_input_records(report, report_path)
    world = ClosedWorld(root=root, budget=budget)
    base = report_path.parent
    for item in report["inputs"]:
        world.inputs[item["role"]] = resolve(item["path"], base, what=f"input {item['role']}", root=root)
    # sizes first, for every input, so a changed size is found without hashing anything
    shown_from = report_path.parent
    pending = []
    for item in report["inputs"]:
        r = world.inputs[item["role"]]
        if r.size != item["bytes"]:
            world.changed.append({"path": f"inputs[{item['role']}]", "report": f"{item['bytes']} bytes sha256 "
                                  f"{item['sha256']}", "rerun": f"{r.size} bytes (not hashed: the size differs)",
                                  "file": os.path.normpath(shown_from / item["path"])})
        else:
            pending.append((item, r))
    total = sum({r.identity: r.size for _, r in pending}.values())
    if budget.hashed + total > budget.max_bytes:  # refused before anything is read
        budget.reserve(total, "the report's inputs")
    for item, r in pending:
        digest = world.digest(r, f"input {item['role']}")
        if digest != item["sha256"]:
            world.changed.append({"path": f"inputs[{item['role']}]", "report": f"{item['bytes']} bytes sha256 "
                                  f"{item['sha256']}", "rerun": f"{r.size} bytes sha256 {digest}",
                                  "file": os.path.normpath(shown_from / item["path"])})
    if world.changed:
        return world
    _chain_files(report, world, report_path)
    return world


def _chain_files(report: Mapping, world: ClosedWorld, report_path: Path) -> None:
    from rfbench.datasets.manifest import Manifest

    inputs, root = world.inputs, world.root
    manifests: dict[tuple, Resolved] = {}
    if "manifest" in inputs:
        manifests[inputs["manifest"].identity] = inputs["manifest"]
    if "split" in inputs:
        split = inputs["split"]
        doc = world.document(split, "split", "the split")
        ref = doc.get("manifest")
        if isinstance(ref, Mapping) and isinstance(ref.get("path"), str):
            named = resolve(ref["path"], split.path.parent, what="the manifest the split names", root=root)
            world.digest(named, "the manifest the split names")
            world.named["split-manifest"] = named
            manifests.setdefault(named.identity, named)
    if "rows" in inputs:
        _index_files(world, inputs["rows"])
        for key in ("index-manifest",):
            if key in world.named:
                manifests.setdefault(world.named[key].identity, world.named[key])
    if "pred-record" in inputs:
        _record_files(world, inputs["pred-record"], report_path)
    for m in manifests.values():
        world.budget.left()
        doc = world.document(m, "manifest", "the manifest")
        _dataset_files(world, Manifest.from_dict(doc, str(m.path)), m, doc)
    gt = report.get("provenance")
    if gt is not None and not isinstance(gt, Mapping):
        raise FormatError(f"{report_path}: provenance is not an object")
    files = (gt or {}).get("ground_truth_files")
    if files:
        _ground_truth_files(world, files, manifests, report_path)


def _index_files(world: ClosedWorld, rows: Resolved) -> None:
    from rfbench.datasets.windows.index import load_index

    idx = load_index(rows.path, check_arrays=False, doc=world.document(rows, "windows", "the windows index"))
    doc = idx.doc
    for key, label in (("split", "the split the windows index names"),
                       ("manifest", "the manifest the windows index names")):
        named = resolve(doc[key]["path"], rows.path.parent, what=label, root=world.root)
        if world.digest(named, label) != doc[key]["sha256"]:
            raise VerificationError(f"{rows.path}: {label} ({named.path}) is not the file the index hashed",
                                    differences=[{"path": f"chain.windows.{key}.sha256", "report": doc[key]["sha256"],
                                                  "rerun": world.digests[named.identity]}])
        world.named[f"index-{key}"] = named
    label_set = (doc.get("settings") or {}).get("label_set")
    if label_set:
        named = resolve(label_set, rows.path.parent, what="the label set the windows index names", root=world.root)
        digest = world.digest(named, "the label set the windows index names")
        recorded = (doc.get("labels") or {}).get("file_sha256")
        if recorded is not None and digest != recorded:
            raise VerificationError(f"{rows.path}: the label set it names ({named.path}) is not the file it read",
                                    differences=[{"path": "chain.windows.labels.file_sha256", "report": recorded,
                                                  "rerun": digest}])
        world.named["label-set"] = named


def _record_files(world: ClosedWorld, record: Resolved, report_path: Path) -> None:
    """A prediction record must describe the report's own predictions, model and windows index."""
    doc = world.document(record, "prediction", "the prediction record")
    where = f"prediction record {record.path}"
    inputs = world.inputs
    for role, ref, what in (("model", _get(doc, "model", "path"), "the model"),
                            ("pred", _get(doc, "pred", "file"), "the predictions"),
                            ("rows", _get(doc, "windows", "index", "path"), "the windows index")):
        if ref is None:
            if role == "rows" and "rows" not in inputs:
                continue
            raise FormatError(f"{where}: records no path of {what}")
        named = resolve(ref, record.path.parent, what=f"{what} the prediction record names", root=world.root)
        if role not in inputs or not world.same(named, inputs[role]):
            raise VerificationError(
                f"{report_path}: the prediction record describes {what} {named.path}, not the report's "
                f"{role} input; the chain would replay one file and score another",
                differences=[{"path": f"chain.predict.{role}", "report": str(inputs[role].path) if role in inputs
                              else "<absent>", "rerun": str(named.path)}])
    recorded = _get(doc, "pred", "sha256")
    if "pred" in inputs and recorded != world.digests.get(inputs["pred"].identity):
        raise VerificationError(f"{report_path}: the prediction record describes predictions with another sha256 "
                                f"than the scored {inputs['pred'].path}",
                                differences=[{"path": "chain.predict.pred.sha256", "report": recorded,
                                              "rerun": world.digests.get(inputs["pred"].identity)}])


def _get(doc: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(doc, Mapping):
            return None
        doc = doc.get(k)
    return doc


def _dataset_files(world: ClosedWorld, manifest, m: Resolved, doc: Mapping) -> None:
    """Admit every file the manifest lists, resolved under its dataset root (itself under the verify root);
    ``doc`` is the manifest's document as read, kept for the second ingest's comparison."""
    root = resolve_folder(manifest.root, m.path.parent, what="the manifest's dataset root", root=world.root)
    world.named.setdefault("dataset-root", root)
    world.manifests.append((m, root, doc))
    _admit_tree(world, root, manifest.extra.get("follow_symlinks") is True)
    folders: dict[str, Path] = {}
    for rec in manifest.recordings:
        for entry in rec.get("files") or []:
            rel, size = entry.get("path"), entry.get("bytes")
            if not isinstance(rel, str) or not rel or isinstance(size, bool) or not isinstance(size, int):
                raise FormatError(f"{m.path}: a file entry of recording {rec.get('id')!r} has no path or size")
            parent, _, name = rel.rpartition("/")
            if rel.startswith("/") or "\x00" in rel or name in ("", ".", "..") or \
                    any(part in ("..", "") for part in parent.split("/") if parent):
                raise FormatError(f"{m.path}: dataset file {rel!r} is not a path inside the dataset root")
            folder = folders.get(parent)
            if folder is None:
                folder = folders[parent] = resolve_folder(parent or ".", root, what=f"dataset folder of {rel}",
                                                          root=root, outside=f"the dataset root {root}")
            path = folder / name
            try:
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode):  # a link: where it lands must lie under the dataset root
                    real = Path(os.path.realpath(path))
                    if not under(real, root):
                        raise FormatError(f"dataset file {rel}: a link to {real}, outside the dataset root {root}; "
                                          "verify reads only files under its root")
                    info = os.stat(real)
            except OSError:
                continue  # a missing dataset file is the re-run's to report (with the manifest's words)
            if stat.S_ISREG(info.st_mode):  # anything else is refused by the re-run's reader, unread
                world.files[(info.st_dev, info.st_ino)] = info.st_size
        world.budget.left()


def _ground_truth_files(world: ClosedWorld, files: Any, manifests: Mapping, report_path: Path) -> None:
    if not isinstance(files, list):
        raise FormatError(f"{report_path}: provenance.ground_truth_files is not a list of file records")
    root = world.named.get("dataset-root")
    if root is None:
        raise FormatError(f"{report_path}: the ground truth was read from dataset files but the report records no "
                          "manifest")
    for n, item in enumerate(files):
        if not isinstance(item, Mapping) or not isinstance(item.get("path"), str) \
                or isinstance(item.get("bytes"), bool) or not isinstance(item.get("bytes"), int) \
                or not isinstance(item.get("sha256"), str):
            raise FormatError(f"{report_path}: provenance.ground_truth_files[{n}] is not a file record")
        r = resolve(item["path"], root, what="dataset file", root=world.root, outside=f"the dataset root {root}")
        if not under(r.path, root):
            raise FormatError(f"dataset file {item['path']}: resolves outside the dataset root {root}")
        if r.size != item["bytes"]:
            digest = None
        else:
            digest = world.digest(r, f"dataset file {item['path']}")
        if digest != item["sha256"]:
            world.changed.append({"path": f"provenance.ground_truth_files[{item['path']}]",
                                  "report": f"{item['bytes']} bytes sha256 {item['sha256']}",
                                  "rerun": f"{r.size} bytes" + (f" sha256 {digest}" if digest else " (not hashed)"),
                                  "file": item["path"], "dataset": True})


def _admit_tree(world: ClosedWorld, root: Path, follow: bool) -> None:
    """Admit every regular file under the dataset root, which verify's second ingest walks and reads whole (the
    files of recordings, and those ingest names as problems or reads as the generators' marker); their bytes
    count against ``max_gb``, refused before anything is read. A link is
    admitted where it lands under the root; one leading elsewhere is not followed by ingest (a problem it records
    unread) unless the manifest was made following links, and then it must land under the verify root."""
    seen: set = set()
    total = 0
    stack = [root]
    while stack:
        folder = stack.pop()
        world.budget.left()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue  # ingest reports an unreadable folder in its own words
        for entry in entries:
            try:
                info = os.stat(entry.path)
                link = entry.is_symlink()
            except OSError:
                continue  # a broken link: a problem ingest records
            if link:
                real = Path(os.path.realpath(entry.path))
                if not under(real, root):
                    if not follow:
                        continue
                    if not under(real, world.root):
                        raise FormatError(f"dataset link {entry.path}: leads to {real}, outside the verify root "
                                          f"{world.root}; the manifest was made following links, and verify reads "
                                          "only files under its root")
            if stat.S_ISDIR(info.st_mode):
                key = (info.st_dev, info.st_ino)
                if key not in seen:
                    seen.add(key)
                    stack.append(Path(entry.path))
            elif stat.S_ISREG(info.st_mode):
                key = (info.st_dev, info.st_ino)
                if key not in world.files:
                    total += info.st_size
                world.files[key] = info.st_size
    world.budget.reserve(total, f"the dataset tree {root}, ingested again")  # refused before anything is read
