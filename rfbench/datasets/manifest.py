"""Dataset manifests: the recordings of a dataset tree, their files, frame counts and domain metadata.

A manifest (``rfbench.manifest/1``, DESIGN.md §11) is what ``rfbench ingest`` writes and what ``rfbench split``
reads. Required keys: ``schema``, ``dataset``, ``root``, ``recordings`` and ``problems``. Each recording has
``id`` (unique and stable across runs), ``files`` (``[{path, bytes, sha256}]``, POSIX paths relative to
``root``; a receiver log also has ``receiver``, an MM-Fi file ``kind`` and ``frame``), ``frames`` (packets or
frames usable for windows), the domain keys that apply (``subject``, ``room``, ``location``, ``orientation``,
``gesture``, ``action``, ``repetition``, ``receivers``) and ``label``, the class as a **string** (never a
label-set index); more keys are allowed. A manifest made from a name template (``rfbench ingest files``) records
it as ``template`` (``{text, fields: [{name, type: "int" | "str"}], recording_by}``) and its ``roles``; every
recording-level template field is then a domain column too. A generated corpus carries ``"synthetic": true``
and ``synthetic_marker`` (``{path, sha256}`` of the generator's marker file).

``root`` is written relative to the manifest file's own folder (:meth:`Manifest.write`), so a manifest shared
with its tree names no user's folders; readers resolve it with :meth:`Manifest.root_dir`.

:class:`RecordingTable` is the columnar view protocols and the audit work on: one integer code per recording
and domain key, so that splitting and auditing a million windows stays a handful of vectorised passes.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from rfbench._order import listing_key
from rfbench.datasets.values import sorted_values, value_sort_key
from rfbench.errors import RfbenchError, ValidationError
from rfbench.io.files import check_schema, read_json, read_json_hashed, schema_id, write_json

__all__ = [
    "Manifest",
    "RecordingTable",
    "DomainColumn",
    "read_manifest",
    "read_manifest_hashed",
    "load_manifest",
    "DOMAIN_KEYS",
    "SPLIT_KEYS",
    "CAPTURE_KEY",
    "value_sort_key",
    "template_fields",
]

#: Domain keys a recording may carry (DESIGN.md §11).
DOMAIN_KEYS = ("subject", "room", "location", "orientation", "gesture", "action", "repetition", "receivers")
#: The key naming the capture a recording was made from (a Widar3.0 BVP file names its CSI recording): recordings
#: of one capture are one source, so the audit keeps each capture on one side (``captures-disjoint``).
CAPTURE_KEY = "capture"
#: Scalar metadata a protocol may split or group by (``receivers`` is a list, so it is not one of them).
SPLIT_KEYS = ("subject", "room", "location", "orientation", "gesture", "action", "repetition", "date")
#: Where a recording's class is read from, in this order: the first key any recording holds is the manifest's
#: class (``windows`` labels rows by it, ``score`` checks ground truth against it, ``split`` refuses a test side
#: holding none of the training side's classes by it).
CLASS_KEYS = ("label", "gesture", "action")


def class_key(recordings: Sequence[Mapping]) -> str | None:
    """The first of :data:`CLASS_KEYS` that any of ``recordings`` holds, or None."""
    return next((k for k in CLASS_KEYS if any(r.get(k) is not None for r in recordings)), None)


#: The kinds of ingest problem, in the order summaries list them: ``(kind, words, test)``, the first whose test
#: the reason passes is the problem's kind (a problem is ``{path, reason}`` in the manifest; the kind is derived
#: from the reason's wording, which each ingest writes from a fixed set of phrases).
PROBLEM_KINDS = (
    ("duplicate-dropped", "recordings left out as duplicates", lambda r: r.startswith("recording left out (duplic")),
    ("identical", "byte-identical files", lambda r: r.startswith("identical to ")),
    ("truncated", "logs with skipped records (a truncated tail, a bad length)", lambda r: "record(s) skipped" in r),
    ("empty", "empty files", lambda r: r.startswith(("empty file", "empty WiFi frame"))),
    ("unreadable", "unreadable files or files with no data", lambda r: r.startswith(("cannot read", "no valid"))
        or "more than the" in r or "has shape" in r),
    ("missing", "missing parts (receivers, frames, ground truth)", lambda r: r.startswith(("missing", "no "))),
    ("name", "names that do not fit the layout (left out)", lambda r: ("does not match" in r or r.startswith(
        ("not a", "not an", "ambiguous", "field {", "unknown", "file outside", "folder left out", "second file",
         "file name says", "its recording id")) or " is outside " in r) and not r.startswith("not a regular file")),
    ("link", "links and special files", lambda r: "symbolic link" in r or "reached a second time" in r
        or "not a regular file" in r or "not valid UTF-8" in r or r.startswith("cannot stat")),
)


def problem_kind(reason: str) -> str:
    """The kind of an ingest problem (one of :data:`PROBLEM_KINDS`, else ``other``), from its reason."""
    for kind, _, test in PROBLEM_KINDS:
        if test(reason):
            return kind
    return "other"


def problem_counts(problems) -> list[dict]:
    """``[{kind, what, count}]`` of ``problems`` (``{path, reason}``), in :data:`PROBLEM_KINDS` order."""
    counts: dict = {}
    for p in problems:
        k = problem_kind(str(p.get("reason", "")))
        counts[k] = counts.get(k, 0) + 1
    words = {k: w for k, w, _ in PROBLEM_KINDS} | {"other": "other problems"}
    order = [k for k, _, _ in PROBLEM_KINDS] + ["other"]
    return [{"kind": k, "what": words[k], "count": counts[k]} for k in order if k in counts]


@dataclass
class Manifest:
    """The recordings of one dataset tree.

    Attributes
    ----------
    dataset : str
        ``"widar3"``, ``"mmfi"`` or another name.
    root : str
        The folder the file paths are relative to.
    recordings : list of dict
        One dict per recording (see the module docstring), sorted by ``id``.
    problems : list of dict
        ``{"path", "reason"}`` for everything ingest could not use or found suspicious.
    synthetic : bool
        True for a generated corpus; everything derived from it is tagged SYNTHETIC.
    extra : dict
        Further top-level keys (e.g. ``receivers_expected``), written as they are.

    Examples
    --------
    >>> import rfbench
    >>> m = rfbench.Manifest(dataset="mine", root=".", recordings=[{"id": "r1", "files": [], "frames": 3}])
    >>> m.to_dict()["schema"], m.ids
    ('rfbench.manifest/1', ['r1'])
    """

    dataset: str
    root: str
    recordings: list[dict]
    problems: list[dict] = field(default_factory=list)
    synthetic: bool = False
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The JSON document (``rfbench.manifest/1``)."""
        doc = dict(self.extra)
        doc.update(
            schema=schema_id("manifest"),
            dataset=self.dataset,
            root=self.root,
            recordings=self.recordings,
            problems=self.problems,
            synthetic=bool(self.synthetic),
        )
        return doc

    def summary(self, path: str | os.PathLike, absolute_root: bool = False) -> dict:
        """What ``rfbench ingest`` reports of this manifest written to ``path``: counts, problems, and for each
        domain key shown (the usual keys, the template's fields, the label) its values with their recording
        counts (``values``: key → ``[(value, recordings)]`` in canonical value order)."""
        from rfbench.datasets.tree import display_path

        recs = self.recordings
        out = {"manifest": display_path(str(path)), "dataset": self.dataset,
               "root": self.recorded_root(path, absolute_root), "synthetic": self.synthetic,
               "recordings": len(recs), "files": sum(len(r["files"]) for r in recs),
               "frames": sum(r["frames"] for r in recs),
               "problems": [dict(p, kind=problem_kind(str(p.get("reason", "")))) for p in self.problems],
               "problem_counts": problem_counts(self.problems)}
        tree = self.extra.get("tree")
        if tree:
            out["files_looked_at"], out["files_matched"] = tree["files"], tree["matched"]
        keys = [k for k in ("release", "room", "subject", "location", "orientation", "gesture", "action")
                if any(k in r for r in recs)]
        template = self.extra.get("template") or {}
        keys += [f["name"] for f in template.get("fields", [])
                 if f["name"] not in keys and any(f["name"] in r for r in recs)]
        if "label" in self.extra.get("roles", {}):
            keys.append("label")
        values = {}
        for key in keys:
            counts: dict = {}
            for r in recs:
                counts[r.get(key)] = counts.get(r.get(key), 0) + 1
            values[key] = sorted(counts.items(), key=lambda kv: listing_key(kv[0]))
        out["values"] = values
        if isinstance(self.extra.get("captures"), Mapping):  # both Widar3.0 releases: captures in each
            out["captures"] = dict(self.extra["captures"])
        return out

    def recorded_root(self, path: str | os.PathLike, absolute: bool = False) -> str:
        """``root`` as :meth:`write` records it in a manifest written to ``path``: relative to that file's folder
        (POSIX), or absolute when ``absolute``. A relative ``root`` is taken as it is (it is already relative to
        wherever this manifest came from); a root on another drive stays absolute."""
        root = self.root
        if not os.path.isabs(root):
            return root
        if absolute:
            return os.path.abspath(root)
        folder = os.path.dirname(os.path.abspath(path))
        try:
            rel = os.path.relpath(os.path.abspath(root), folder)
        except ValueError:  # another drive (Windows)
            return os.path.abspath(root)
        return Path(rel).as_posix()

    def write(self, path: str | os.PathLike, force: bool = False, absolute_root: bool = False) -> Path:
        """Write the manifest atomically as canonical JSON; an existing file is refused unless ``force``.

        ``root`` is recorded relative to the manifest's folder (:meth:`recorded_root`), absolute only when
        ``absolute_root``; the in-memory manifest is unchanged.
        """
        self._refuse_own_file(path)
        doc = self.to_dict()
        doc["root"] = self.recorded_root(path, absolute_root)
        try:
            doc["root"].encode("utf-8")
        except UnicodeEncodeError:
            from rfbench.datasets.tree import display_path

            raise ValidationError(f"the dataset folder's path '{display_path(doc['root'])}' is not valid UTF-8, so a "
                                  "manifest cannot record it; rename the folder (or a folder above it)") from None
        return write_json(path, doc, force=force)

    def _refuse_own_file(self, path) -> None:
        """Refuse a manifest written over one of the dataset files it lists (``-o TREE/labels.csv --force``), or
        over the generator's marker the ingest read (``-o TREE/RFBENCH_SYNTHETIC.json --force`` left the tree
        without the file that says it is generated)."""
        if os.path.isabs(self.root):  # (relative: to another manifest's folder, not this process's to resolve)
            self.refuse_listed([path], self.root)
            marker = self.extra.get("synthetic_marker")
            if _is_mapping(marker) and isinstance(marker.get("path"), str):
                from rfbench.io.files import refuse_inputs

                refuse_inputs([path], [os.path.join(self.root, marker["path"])])

    def refuse_listed(self, outputs, root: str | os.PathLike) -> None:
        """Refuse to write any of ``outputs`` over a dataset file this manifest lists under ``root`` (the dataset
        folder, :meth:`root_dir`): a job that read the dataset never writes over it, ``force`` or not; nor
        in a part of that tree ingest read (:meth:`read_parts`, :func:`rfbench.io.files.refuse_inside_tree`)."""
        from rfbench.io.files import refuse_inputs, refuse_inside_tree

        outputs = list(outputs)
        try:
            real_root = os.path.realpath(root)
        except (OSError, ValueError):
            return
        listed: set | None = None
        for out in outputs:
            if out is None:
                continue
            try:
                rel = os.path.relpath(os.path.realpath(os.path.dirname(os.path.abspath(out))), real_root)
            except (OSError, ValueError):
                continue
            if rel == ".." or rel.startswith(".." + os.sep):
                continue
            name = os.path.basename(out)
            rel = name if rel == "." else rel.replace(os.sep, "/") + "/" + name
            if listed is None:
                listed = {f.get("path") for r in self.recordings for f in r.get("files") or ()}
            if rel in listed:
                refuse_inputs([out], [os.path.normpath(os.path.join(root, rel))])
        if listed is not None:  # some output lies inside the tree (the parts are a pass over every recording)
            refuse_inside_tree(outputs, root, parts=self.read_parts())

    def read_parts(self) -> set[str] | None:
        """The first parts of the paths of the files this manifest lists and of its problems (``""`` for one at
        the tree's top): the parts of its tree ingest read, where a file written would be found by the next
        ingest (:func:`rfbench.io.files.refuse_inside_tree`); None, the whole tree, for an ``ingest files``
        corpus, whose ingest reads every file under its root, and for a tree whose ingest lists every entry at its
        top (MM-Fi's, a Widar3.0 release folder given as the tree)."""
        return _read_parts(self.recordings, self.problems, self.extra.get("template"), self.dataset)

    @classmethod
    def from_dict(cls, doc: Mapping, where: str = "manifest") -> "Manifest":
        """Validate a manifest document and wrap it.

        Raises
        ------
        SchemaError
            Missing or wrong ``schema``.
        ValidationError
            A required key is missing or has the wrong type, an id repeats, a frame count is negative...
        """
        check_schema(doc, "manifest", where)
        for key in ("dataset", "root", "recordings", "problems"):
            if key not in doc:
                raise ValidationError(f"{where}: missing key {key!r}; re-create it with `rfbench ingest`")
        if not isinstance(doc["recordings"], list):
            raise ValidationError(f"{where}: 'recordings' must be a list")
        if not isinstance(doc["problems"], list):
            raise ValidationError(f"{where}: 'problems' must be a list")
        seen: set[str] = set()
        keys = SPLIT_KEYS + tuple(k for k in template_fields(doc.get("template")) if k not in SPLIT_KEYS)
        for k, rec in enumerate(doc["recordings"]):
            _check_recording(rec, f"{where}: recordings[{k}]", keys)
            if rec["id"] in seen:
                raise ValidationError(f"{where}: recording id {rec['id']!r} appears twice; ids must be unique")
            seen.add(rec["id"])
        for k, prob in enumerate(doc["problems"]):
            if not _is_mapping(prob) or not isinstance(prob.get("path"), str) \
                    or not isinstance(prob.get("reason"), str):
                raise ValidationError(f"{where}: problems[{k}] must be an object with string 'path' and 'reason'")
        extra = {k: v for k, v in doc.items()
                 if k not in ("schema", "dataset", "root", "recordings", "problems", "synthetic")}
        return cls(dataset=str(doc["dataset"]), root=str(doc["root"]), recordings=list(doc["recordings"]),
                   problems=list(doc["problems"]), synthetic=bool(doc.get("synthetic", False)), extra=extra)

    def root_dir(self, manifest_path: str | os.PathLike | None = None) -> Path:
        """The dataset folder the file paths are relative to.

        ``root`` is recorded relative to the manifest's own folder (so a manifest shared with its tree names no
        user's folders); an absolute ``root`` (older manifests, or one written on request) is used as it is.
        ``manifest_path`` is where this manifest was read from; without it a relative root is taken relative
        to the current folder.
        """
        return _root_dir(self.root, manifest_path)

    @property
    def domain_keys(self) -> tuple:
        """The keys protocols may split or group by: :data:`SPLIT_KEYS` plus the recording-level fields of the
        manifest's name template (``rfbench ingest files``), in template order, then ``capture`` and ``release``
        where recordings carry them."""
        keys = SPLIT_KEYS + tuple(k for k in template_fields(self.extra.get("template")) if k not in SPLIT_KEYS)
        if any("capture" in r for r in self.recordings):
            keys += (CAPTURE_KEY,)
        if any("release" in r for r in self.recordings):  # both Widar3.0 releases in one manifest
            keys += ("release",)
        return keys

    def table(self) -> "RecordingTable":
        """The columnar view of the recordings (in manifest order), with a column per :attr:`domain_keys`."""
        return RecordingTable.from_recordings(self.recordings, keys=self.domain_keys)

    @property
    def ids(self) -> list[str]:
        return [r["id"] for r in self.recordings]


def _root_dir(recorded: str, manifest_path: str | os.PathLike | None) -> Path:
    """:meth:`Manifest.root_dir` of a recorded ``root``."""
    root = Path(recorded)
    if root.is_absolute() or manifest_path is None:
        return root
    return Path(manifest_path).parent / root


def template_fields(template: Any) -> tuple:
    """The recording-level fields of a manifest's ``template`` record (those of ``recording_by`` when it is
    given, else every field); empty for a manifest without one."""
    if not isinstance(template, Mapping) or not isinstance(template.get("fields"), list):
        return ()
    fields = tuple(str(f["name"]) for f in template["fields"] if isinstance(f, Mapping) and "name" in f)
    by = template.get("recording_by")
    if isinstance(by, list) and by:
        return tuple(f for f in fields if f in by)
    return fields


_HEX = frozenset("0123456789abcdef")


def _is_mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)  # a parsed document's objects are dicts: no ABC check


def _check_recording(rec: Any, where: str, keys: Sequence[str] = SPLIT_KEYS) -> None:
    if not _is_mapping(rec):
        raise ValidationError(f"{where}: each recording must be an object")
    rid = rec.get("id")
    if not isinstance(rid, str) or not rid:
        raise ValidationError(f"{where}: 'id' must be a non-empty string")
    files = rec.get("files")
    if not isinstance(files, list):
        raise ValidationError(f"{where} ({rid}): 'files' must be a list of {{path, bytes}} objects")
    for f in files:
        if not _is_mapping(f) or not isinstance(f.get("path"), str) or not _is_count(f.get("bytes")):
            raise ValidationError(f"{where} ({rid}): each file needs a string 'path' and an int 'bytes' in "
                                  "0..2**63-1")
        digest = f.get("sha256")
        if digest is not None and not (isinstance(digest, str) and len(digest) == 64 and _HEX.issuperset(digest)):
            raise ValidationError(f"{where} ({rid}): a file's 'sha256' must be 64 lower-case hex digits or null")
    if not _is_count(rec.get("frames")):
        raise ValidationError(f"{where} ({rid}): 'frames' must be an integer in 0..2**63-1")
    label = rec.get("label")
    if label is not None and not isinstance(label, str):
        raise ValidationError(f"{where} ({rid}): 'label' must be a string (the class name), not "
                              f"{type(label).__name__}; integer-looking classes are stored as text")
    for key in keys:
        value = rec.get(key)
        if value is None:
            continue
        kind = type(value)
        if kind is str or kind is int:  # the usual values, settled without the general checks below
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValidationError(f"{where} ({rid}): {key!r} must be a string or a number, not {type(value).__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValidationError(f"{where} ({rid}): {key!r} must be finite")
    receivers = rec.get("receivers")
    if receivers is not None and (not isinstance(receivers, list) or not all(_is_count(r) for r in receivers)):
        raise ValidationError(f"{where} ({rid}): 'receivers' must be a list of receiver numbers")


#: The most a count of a manifest (a file's bytes, a recording's frames, a receiver) may be: one that fits a signed
#: 64-bit integer, as the columns built from it (a frame count of 2**63 ended split and audit with an
#: OverflowError and exit 1, the code of a leak).
MAX_COUNT = 2**63 - 1


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def read_manifest(path: str | os.PathLike) -> Manifest:
    """Read and validate a manifest file.

    Parameters
    ----------
    path : path-like
        A ``rfbench.manifest/1`` file (written by ``rfbench ingest``).

    Returns
    -------
    Manifest
        Its ``root`` may be relative to the file's folder: :meth:`Manifest.root_dir` resolves it.

    Raises
    ------
    FormatError, SchemaError, ValidationError
        Unreadable file, wrong schema, or malformed content (the message names the key).

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> import rfbench
    >>> path = Path(tempfile.mkdtemp()) / "manifest.json"
    >>> _ = path.write_text(json.dumps({"schema": "rfbench.manifest/1", "dataset": "mine", "root": ".",
    ...     "problems": [], "recordings": [{"id": "r1", "files": [], "frames": 10, "subject": "ann"}]}))
    >>> manifest = rfbench.read_manifest(path)
    >>> manifest.ids, manifest.root_dir(path) == path.parent
    (['r1'], True)
    """
    return Manifest.from_dict(read_json(path, "manifest"), str(path))


def dataset_tree_of(path: str | os.PathLike) -> tuple[Path, set[str] | None] | None:
    """The dataset folder the manifest file ``path`` describes (:meth:`Manifest.root_dir`) and the parts of it
    ingest read (:meth:`Manifest.read_parts`), from the document as it is; None when it cannot be read or names
    no root. For a job that does not otherwise read the manifest (``predict``, ``robustness``) to keep its
    outputs out of the tree (:func:`rfbench.io.files.refuse_inside_tree`)."""
    from rfbench.io.files import read_json

    try:
        doc = read_json(path)
    except (RfbenchError, OSError, ValueError):
        return None
    root, recordings, problems = doc.get("root"), doc.get("recordings"), doc.get("problems")
    if not isinstance(root, str) or not root or "\x00" in root:
        return None
    return _root_dir(root, path), _read_parts(recordings if isinstance(recordings, list) else [],
                                              problems if isinstance(problems, list) else [], doc.get("template"),
                                              doc.get("dataset"))


#: Datasets whose ingest lists every entry at the top of the tree it is given (MM-Fi: each is an environment
#: folder or a problem): anything written anywhere in the tree is found by the next ingest.
_TOP_READ = ("mmfi",)
#: The release folders of a Widar3.0 tree: given the folder above them, ingest reads those alone (a report beside
#: them is not seen); given a release folder itself, it lists every entry at its top, as MM-Fi's does.
_WIDAR_DATASETS, _WIDAR_RELEASES = ("widar3", "widar3-bvp"), ("CSI", "BVP")


def _read_parts(recordings: list, problems: list, template: Any = None, dataset: Any = None) -> set[str] | None:
    if template is not None or dataset in _TOP_READ:
        return None
    paths = [f.get("path") for r in recordings if isinstance(r, dict) for f in (r.get("files") or ())
             if isinstance(r.get("files"), list) and isinstance(f, dict)]
    paths += [p.get("path") for p in problems if isinstance(p, dict)]
    parts = {p.split("/", 1)[0] if "/" in p else "" for p in paths if isinstance(p, str) and p}
    if dataset in _WIDAR_DATASETS and any(part not in _WIDAR_RELEASES for part in parts):
        return None  # the tree is a release folder, its top walked
    return parts


def read_manifest_hashed(path: str | os.PathLike) -> tuple[Manifest, str]:
    """:func:`read_manifest` and the sha256 of the bytes it was read from (one read: the digest a split or an
    index records is then of the manifest whose recordings were used, never of a file put in place after)."""
    doc, digest = read_json_hashed(path, "manifest")
    return Manifest.from_dict(doc, str(path)), digest


def load_manifest(source: "Manifest | Mapping | str | os.PathLike") -> Manifest:
    """Accept a :class:`Manifest`, a manifest document, or a path to one."""
    if isinstance(source, Manifest):
        return source
    if isinstance(source, Mapping):
        return Manifest.from_dict(source)
    if isinstance(source, (str, os.PathLike)):
        return read_manifest(source)
    raise TypeError(f"expected a Manifest, a dict or a path, not {type(source).__name__}")


@dataclass(frozen=True)
class DomainColumn:
    """One domain key as integer codes: ``values[codes[i]]`` is recording i's value; code −1 means missing."""

    codes: np.ndarray
    values: tuple

    def code_of(self, value: Any) -> int:
        """The code of ``value``, matching by its text (``"3"`` finds room 3); −1 if absent."""
        text = str(value)
        for k, v in enumerate(self.values):
            if str(v) == text:
                return k
        return -1


@dataclass(frozen=True)
class RecordingTable:
    """Recordings as columns: ``ids``, ``frames`` and one :class:`DomainColumn` per domain key present.

    Protocols and the audit work on this view; it is built once per manifest.
    """

    ids: tuple
    frames: np.ndarray
    domains: Mapping[str, DomainColumn]

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_recordings(cls, recordings: Sequence[Mapping], keys: Sequence[str] = SPLIT_KEYS) -> "RecordingTable":
        """Build from manifest recording dicts (order kept), one column per key of ``keys`` that is present."""
        ids = tuple(map(itemgetter("id"), recordings))
        # dict.get mapped in C over plain dicts (a manifest's); other mappings through their own get
        get = dict.get if set(map(type, recordings)) <= {dict} else (lambda r, key, default=None: r.get(key, default))
        frames = np.fromiter(map(int, map(get, recordings, repeat("frames"), repeat(0))), dtype=np.int64,
                             count=len(ids))
        domains: dict[str, DomainColumn] = {}
        for key in keys:
            raw = list(map(get, recordings, repeat(key)))
            present = set(raw)
            present.discard(None)
            present = sorted_values(present)
            if not present:
                continue
            index = {v: k for k, v in enumerate(present)}
            codes = np.fromiter(map(index.get, raw, repeat(-1)), dtype=np.int32, count=len(raw))  # None: -1
            domains[key] = DomainColumn(codes=codes, values=tuple(present))
        return cls(ids=ids, frames=frames, domains=domains)

    @classmethod
    def from_arrays(cls, ids: Iterable[str], frames: Iterable[int], **columns: Iterable) -> "RecordingTable":
        """Build from arrays (one value per recording per domain key), e.g. for large generated metadata.

        Every value of a column must be present (no missing values) and of one type.
        """
        ids = tuple(str(i) for i in ids)
        frames = np.asarray(frames, dtype=np.int64)
        if frames.shape != (len(ids),):
            raise ValidationError(f"frames has shape {frames.shape}; expected ({len(ids)},)")
        domains = {}
        for key, col in columns.items():
            arr = np.asarray(col)
            if arr.shape != (len(ids),):
                raise ValidationError(f"column {key!r} has shape {arr.shape}; expected ({len(ids)},)")
            values, codes = np.unique(arr, return_inverse=True)
            domains[key] = DomainColumn(codes=codes.astype(np.int32).reshape(-1),
                                        values=tuple(v.item() for v in values))
        if len(set(ids)) != len(ids):
            raise ValidationError("recording ids must be unique")
        return cls(ids=ids, frames=frames, domains=domains)

    def column(self, key: str) -> DomainColumn:
        """The column of ``key``; a :class:`ValidationError` names the keys available when it is absent."""
        try:
            return self.domains[key]
        except KeyError:
            have = ", ".join(sorted(self.domains)) or "none"
            raise ValidationError(
                f"no recording in the manifest has a {key!r}; domain keys available: {have}"
            ) from None

    def index_of(self) -> dict[str, int]:
        """Map recording id → row."""
        return {rid: k for k, rid in enumerate(self.ids)}

