"""The windows index (``index.json``, ``rfbench.windows/1``): what ``X.npy`` and ``y.npy`` hold and where every
row came from.

Required keys (other stages build on exactly these; more may be added, none renamed):

- ``schema``, ``rfbench_version``;
- ``split`` and ``manifest``: ``{path, sha256}``, ``path`` relative to the index's folder;
- ``dataset`` (the manifest's), ``side`` (``train`` | ``test``), ``task`` (``pose`` | ``gesture``);
- ``settings``: every :class:`WindowSettings` field, resolved (None where it does not apply);
- ``x``: ``{file: "X.npy", dtype, shape, axes, bytes, sha256}`` (plus ``features``);
- ``y``: ``{file: "y.npy", dtype, shape, kind: "pose" | "label", bytes, sha256}``;
- ``labels``: ``{names, source, sha256}`` (plus ``key``, and ``path``/``file_sha256`` for a label-set file), or
  null for pose;
- ``rows``: one ``{id, start, stop}`` per row of X/y, in row order (Intel 5300 packet windows add ``receiver``;
  resampled rows add ``packets``);
- ``excluded``: ``[{id, kind, reason}]``, one per recording of the side that gave no row, in the side's
  order: ``kind`` is one of :data:`EXCLUSION_KINDS` (what summaries count), ``reason`` one line saying what was
  found (``label '12' is not in the label set``, ``missing receiver r6``);
- ``dropped``: ``[{recording, file, reason, ...}]``, one per part of a **kept** recording that was left out, in
  row order: the recording's id, the dataset file (relative to the dataset root) the part comes from, the reason
  in words, and what was dropped —

  - ``record``: an Intel 5300 record, by its 0-based position among the file's valid CSI records (the index
    into ``rfbench.io.intel5300.read(file).csi``), left out of its receiver's packet sequence before windows
    are cut (``odd_records="drop-records"``; reason ``antenna shape 3x2, not 3x1``);
  - ``window``: ``{start, stop}``, a window that was not made (MM-Fi: it holds an empty frame, ``file``);

  readers must accept entries with other keys (another kind of part) and group them by ``reason``. A recording
  that is excluded lists no dropped part: its exclusion says why it gave nothing;
- ``files``: ``{path, bytes, sha256}`` of every dataset file read, ``path`` relative to the dataset root, sorted by
  path.

Every value is a function of the split, its manifest, the dataset files and the settings (no time, no absolute
path, nothing of the machine): building the same side again gives the same index, byte for byte, which is what
``rfbench verify`` compares.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from rfbench.datasets.windows.settings import WindowSettings
from rfbench.errors import FormatError, ValidationError

__all__ = ["WindowIndex", "load_index", "validate_index", "check_index_files", "dumps_index", "iter_index",
           "INDEX_KEYS", "X_FILE", "Y_FILE", "INDEX_FILE", "EXCLUSION_KINDS", "dropped_counts", "dropped_summary",
           "excluded_counts", "excluded_summary"]

X_FILE, Y_FILE, INDEX_FILE = "X.npy", "y.npy", "index.json"

#: The kinds of exclusion an index records (``excluded[].kind``), with the words summaries count them under.
EXCLUSION_KINDS = {
    "label": "no label or a label outside the label set",
    "missing-part": "a receiver, frame or ground truth missing",
    "empty-part": "an empty log or frame",
    "odd-records": "records of another antenna shape",
    "too-short": "too short for one window",
    "ground-truth": "ground truth that does not fit the frames",
    "frames": "frames that do not follow the ground truth",
}


def _unit(entry: Mapping) -> str:
    return "record" if "record" in entry else ("window" if "window" in entry else "part")


def dropped_counts(dropped) -> list[dict]:
    """``[{what, reason, count, recordings}]``: the index's ``dropped`` grouped by what was dropped (``record``,
    ``window``) and reason, largest first (ties by reason)."""
    groups: dict = {}
    for e in dropped:
        g = groups.setdefault((_unit(e), str(e.get("reason"))), [0, set()])
        g[0] += 1
        g[1].add(str(e.get("recording")))
    out = [{"what": w, "reason": r, "count": n, "recordings": len(ids)} for (w, r), (n, ids) in groups.items()]
    return sorted(out, key=lambda g: (-g["count"], g["what"], g["reason"]))


def dropped_summary(dropped) -> str:
    """``47 records (antenna shape 3x2, not 3x1) in 40 recordings``, or ``none``."""
    parts = [f"{g['count']} {g['what']}{'s' if g['count'] != 1 else ''} ({g['reason']}) in {g['recordings']} "
             f"recording{'s' if g['recordings'] != 1 else ''}" for g in dropped_counts(dropped)]
    return "; ".join(parts) or "none"


def excluded_counts(excluded) -> list[dict]:
    """``[{kind, what, count}]``: the index's ``excluded`` grouped by kind, largest first."""
    counts: dict = {}
    for e in excluded:
        kind = str(e.get("kind") or "other")
        counts[kind] = counts.get(kind, 0) + 1
    return [{"kind": k, "what": EXCLUSION_KINDS.get(k, k), "count": n}
            for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


def excluded_summary(excluded) -> str:
    """``30 (no label or a label outside the label set), 4 (too short for one window)``, or ``none``."""
    return ", ".join(f"{g['count']} ({g['what']})" for g in excluded_counts(excluded)) or "none"
INDEX_KEYS = ("schema", "rfbench_version", "split", "manifest", "dataset", "side", "task", "settings", "x", "y",
              "labels", "rows", "excluded", "dropped", "files")


@dataclass(frozen=True)
class WindowIndex:
    """A validated index document and where it was read from."""

    doc: Mapping[str, Any]
    path: Path
    #: the sha256 of the bytes ``doc`` was read from (None for a document given already parsed)
    sha256: str | None = None

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def side(self) -> str:
        return self.doc["side"]

    @property
    def task(self) -> str:
        return self.doc["task"]

    @property
    def rows(self) -> list:
        return self.doc["rows"]

    @property
    def x_path(self) -> Path:
        return self.folder / self.doc["x"]["file"]

    @property
    def y_path(self) -> Path:
        return self.folder / self.doc["y"]["file"]

    @property
    def manifest_path(self) -> Path:
        return self.folder / self.doc["manifest"]["path"]

    @property
    def split_path(self) -> Path:
        return self.folder / self.doc["split"]["path"]

    def window_settings(self) -> WindowSettings:
        """The settings the rows were made with (a label-set path made relative to the current folder again)."""
        values = dict(self.doc["settings"])
        if values.get("label_set"):
            values["label_set"] = str(self.folder / values["label_set"])
        return WindowSettings.from_dict(values, f"{self.path}: settings")


_ONE_LINE_EACH = ("rows", "files", "excluded", "dropped")


def dumps_index(doc: Mapping[str, Any]) -> str:
    """The index as canonical JSON text: sorted keys and a two-space indent like
    :func:`rfbench.io.files.dumps_json`, except that each element of the long lists (``rows``, ``files``,
    ``excluded``) takes one line, which keeps a 100,000-row index readable and fast to write.

    The document must hold JSON values only (no NaN, no NumPy scalars): anything else raises."""
    return "".join(iter_index(doc))


def iter_index(doc: Mapping[str, Any], lines_per_piece: int = 4096):
    """:func:`dumps_index` in pieces of at most ``lines_per_piece`` list elements, to write a large index without
    holding its text in memory."""
    import json

    keys = sorted(doc)
    yield "{\n"
    for n, key in enumerate(keys):
        value = doc[key]
        yield f"  {json.dumps(key, ensure_ascii=False)}: "
        if key in _ONE_LINE_EACH and isinstance(value, list) and value:
            yield "[\n"
            for start in range(0, len(value), lines_per_piece):
                lines = _lines(value[start:start + lines_per_piece])
                yield ",\n".join(lines) + (",\n" if start + lines_per_piece < len(value) else "\n")
            yield "  ]"
        else:
            yield json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False).replace("\n", "\n  ")
        yield ",\n" if n + 1 < len(keys) else "\n"
    yield "}\n"


_ROW3 = frozenset(("id", "start", "stop"))
_ROW_LENGTH = frozenset(("id", "length", "start", "stop"))  # a BVP row
_ROW4 = frozenset(("id", "receiver", "start", "stop"))
_FILE = frozenset(("bytes", "path", "sha256"))


def _lines(items: list) -> list[str]:
    """One compact JSON object per item, keys sorted: window rows and file records (strings and integers only)
    are formatted directly, each distinct string encoded once; anything else through the JSON encoder."""
    import json

    encode = json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False, separators=(", ", ": ")).encode
    # the very functions json.dumps(v, ensure_ascii=False) and json.dumps(v) call for a str, without the
    # encoder's set-up per call (130,000 strings in the index of a full BVP release)
    string, ascii_string = json.encoder.encode_basestring, json.encoder.encode_basestring_ascii
    strings: dict = {}

    def text(v):
        t = strings.get(v)
        if t is None:
            t = strings[v] = string(v)
        return t

    out = []
    append = out.append
    for item in items:
        keys = item.keys()
        if keys == _ROW3 and type(item["id"]) is str and type(item["start"]) is int and type(item["stop"]) is int:
            append(f'    {{"id": {text(item["id"])}, "start": {item["start"]}, "stop": {item["stop"]}}}')
        elif keys == _ROW4 and type(item["id"]) is str and type(item["receiver"]) is int \
                and type(item["start"]) is int and type(item["stop"]) is int:
            append(f'    {{"id": {text(item["id"])}, "receiver": {item["receiver"]}, "start": {item["start"]}, '
                   f'"stop": {item["stop"]}}}')
        elif keys == _ROW_LENGTH and type(item["id"]) is str and type(item["length"]) is int \
                and type(item["start"]) is int and type(item["stop"]) is int:
            append(f'    {{"id": {text(item["id"])}, "length": {item["length"]}, "start": {item["start"]}, '
                   f'"stop": {item["stop"]}}}')
        elif keys == _FILE and type(item["path"]) is str and type(item["bytes"]) is int \
                and type(item["sha256"]) is str:
            append(f'    {{"bytes": {item["bytes"]}, "path": {string(item["path"])}, '
                   f'"sha256": {ascii_string(item["sha256"])}}}')
        else:
            append("    " + encode(item))
    return out


def _fail(where: str, what: str) -> FormatError:
    return FormatError(f"{where}: {what}; re-create the index with rfbench windows")


def _ref(doc: Mapping, key: str, where: str) -> None:
    ref = doc[key]
    if not isinstance(ref, Mapping) or not isinstance(ref.get("path"), str) or not isinstance(ref.get("sha256"), str):
        raise _fail(where, f"{key!r} must be an object {{path, sha256}}")


def _count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _array_entry(doc: Mapping, key: str, name: str, where: str) -> None:
    entry = doc[key]
    if not isinstance(entry, Mapping):
        raise _fail(where, f"{key!r} must be an object")
    if entry.get("file") != name:
        raise _fail(where, f"{key}.file must be {name!r} (the arrays sit beside the index)")
    shape = entry.get("shape")
    if not isinstance(shape, list) or not shape or not all(_count(s) for s in shape):
        raise _fail(where, f"{key}.shape must be a list of sizes")
    if not isinstance(entry.get("dtype"), str) or not _count(entry.get("bytes")) \
            or not isinstance(entry.get("sha256"), str):
        raise _fail(where, f"{key} needs dtype, bytes and sha256")


def validate_index(doc: Mapping, where: str = "index") -> None:
    """Check an index document's schema, keys and internal consistency (rows = X rows = y rows).

    Raises
    ------
    SchemaError, FormatError
    """
    from rfbench.io.files import check_schema
    from rfbench.metrics.labelset import LabelSet

    check_schema(doc, "windows", where)
    missing = [k for k in INDEX_KEYS if k not in doc]
    if missing:
        raise _fail(where, f"missing key(s) {', '.join(missing)}")
    _ref(doc, "split", where)
    _ref(doc, "manifest", where)
    if doc["side"] not in ("train", "test"):
        raise _fail(where, f"side must be train or test, not {doc['side']!r}")
    if doc["task"] not in ("pose", "gesture"):
        raise _fail(where, f"task must be pose or gesture, not {doc['task']!r}")
    try:
        settings = WindowSettings.from_dict(doc["settings"], f"{where}: settings")
    except ValidationError as exc:
        raise FormatError(str(exc)) from None
    if settings.task != doc["task"]:
        raise _fail(where, f"settings.task {settings.task!r} differs from task {doc['task']!r}")
    _array_entry(doc, "x", X_FILE, where)
    _array_entry(doc, "y", Y_FILE, where)
    if not isinstance(doc["x"].get("axes"), list) or len(doc["x"]["axes"]) != len(doc["x"]["shape"]):
        raise _fail(where, "x.axes must name every axis of x.shape")
    kind = doc["y"].get("kind")
    if kind != ("pose" if doc["task"] == "pose" else "label"):
        raise _fail(where, f"y.kind {kind!r} does not fit task {doc['task']!r}")
    labels = doc["labels"]
    if doc["task"] == "pose":
        if labels is not None:
            raise _fail(where, "a pose index has labels: null")
    else:
        if not isinstance(labels, Mapping) or not isinstance(labels.get("names"), list) \
                or not isinstance(labels.get("sha256"), str) or not isinstance(labels.get("source"), str):
            raise _fail(where, "labels must be an object {names, source, sha256}")
        try:
            ls = LabelSet(tuple(labels["names"]))
        except ValidationError as exc:
            raise _fail(where, f"labels.names: {exc}") from None
        if ls.sha256 != labels["sha256"]:
            raise _fail(where, "labels.sha256 does not match labels.names")
    rows = doc["rows"]
    if not isinstance(rows, list):
        raise _fail(where, "rows must be a list")
    for k, r in enumerate(rows):
        if not isinstance(r, Mapping) or not isinstance(r.get("id"), str) or not _count(r.get("start")) \
                or not _count(r.get("stop")) or r["stop"] <= r["start"]:
            raise _fail(where, f"rows[{k}] must be {{id, start, stop}} with 0 <= start < stop")
    n = len(rows)
    if doc["x"]["shape"][0] != n or doc["y"]["shape"][0] != n:
        raise _fail(where, f"{n} rows but X has {doc['x']['shape'][0]} and y {doc['y']['shape'][0]}")
    if not isinstance(doc["excluded"], list) or not all(
            isinstance(e, Mapping) and isinstance(e.get("id"), str) and isinstance(e.get("reason"), str)
            and isinstance(e.get("kind", ""), str) for e in doc["excluded"]):
        raise _fail(where, "excluded must be a list of {id, kind, reason}")
    if not isinstance(doc["dropped"], list) or not all(_dropped_entry(e) for e in doc["dropped"]):
        raise _fail(where, "dropped must be a list of {recording, file, reason} entries, each with its record "
                           "(an integer) or window ({start, stop})")
    files = doc["files"]
    if not isinstance(files, list) or not all(
            isinstance(f, Mapping) and isinstance(f.get("path"), str) and _count(f.get("bytes"))
            and isinstance(f.get("sha256"), str) for f in files):
        raise _fail(where, "files must be a list of {path, bytes, sha256}")
    paths = [f["path"] for f in files]
    if paths != sorted(set(paths)):
        raise _fail(where, "files must be sorted by path, each once")


def _dropped_entry(e) -> bool:
    if not isinstance(e, Mapping) or not all(isinstance(e.get(k), str) for k in ("recording", "file", "reason")):
        return False
    if "record" in e and not _count(e["record"]):
        return False
    w = e.get("window")
    if "window" in e and not (isinstance(w, Mapping) and _count(w.get("start")) and _count(w.get("stop"))
                              and w["stop"] > w["start"]):
        return False
    return True


def load_index(path: str | os.PathLike, *, check_arrays: bool = True, hash_arrays: bool = False,
               doc: Mapping | None = None) -> WindowIndex:
    """Read and validate a windows index and the arrays beside it.

    Checks the schema and keys (:func:`validate_index`); with ``check_arrays`` (the default) that ``X.npy`` and
    ``y.npy`` exist with the dtype, shape and size the index records (read from their headers: nothing is
    loaded), and with ``hash_arrays`` also their sha256. Scoring an index's rows needs neither array
    (``check_arrays=False``): the targets are read from the dataset. ``doc``: the index document already parsed
    from the bytes the caller read (verify, from the bytes it hashed); its schema is checked here as a read's.

    Raises
    ------
    FormatError, SchemaError
        Unreadable or malformed index, or arrays that do not match it (exit 2).
    """
    from rfbench.datasets.windows.npy import read_npy_header
    from rfbench.io.files import check_schema, read_json_hashed, sha256_file

    path = Path(path)
    digest = None
    if doc is None:
        doc, digest = read_json_hashed(path, "windows")
    else:
        check_schema(doc, "windows", str(path))
    validate_index(doc, str(path))
    idx = WindowIndex(doc, path, digest)
    if not check_arrays:
        return idx
    for key, file in (("x", idx.x_path), ("y", idx.y_path)):
        entry = doc[key]
        if not file.is_file():
            raise FormatError(f"{file}: missing; the index {path} needs it beside itself")
        try:
            shape, dtype, _ = read_npy_header(file)
        except (ValueError, OSError, EOFError) as exc:
            raise FormatError(f"{file}: not a readable .npy file ({exc})") from None
        if list(shape) != entry["shape"] or dtype.str != _dtype_str(entry["dtype"]):
            raise FormatError(f"{file}: holds {dtype} {shape}, but the index records {entry['dtype']} "
                              f"{tuple(entry['shape'])}")
        size = file.stat().st_size
        if size != entry["bytes"]:
            raise FormatError(f"{file}: {size} bytes, but the index records {entry['bytes']}")
        if hash_arrays:
            digest, _ = sha256_file(file)
            if digest != entry["sha256"]:
                raise FormatError(f"{file}: sha256 differs from the index's; the array was changed after it was "
                                  "written")
    return idx


def _dtype_str(name: str) -> str:
    import numpy as np

    try:
        return np.dtype(name).str
    except TypeError:
        return name


def check_index_files(index: "WindowIndex | str | os.PathLike") -> list[dict]:
    """Re-check the dataset files an index was read from: each must still be a regular file inside the dataset
    root with the size and sha256 the index records.

    The root comes from the index's manifest (whose sha256 must still match the index's). Returns
    ``[{path, reason}]`` for every file that is missing or changed (empty when all hold); callers decide what
    that means (``verify``: exit 1; ``score --rows``: exit 2).
    """
    import hashlib

    from rfbench.datasets.manifest import Manifest
    from rfbench.datasets.windows.dataset_files import DatasetFiles
    from rfbench.io.documents import MAX_JSON_BYTES
    from rfbench.io.files import json_document, read_input_bytes

    idx = index if isinstance(index, WindowIndex) else load_index(index)
    mpath = idx.manifest_path
    if not mpath.is_file():
        return [{"path": str(mpath), "reason": "the manifest is missing"}]
    changed = [{"path": str(mpath), "reason": "the manifest's sha256 differs from the index's"}]
    if mpath.stat().st_size > MAX_JSON_BYTES:  # more than rfbench reads: not the manifest the index was made from
        return changed
    data = read_input_bytes(mpath, cap=MAX_JSON_BYTES, expected="a JSON file")
    if hashlib.sha256(data).hexdigest() != idx.doc["manifest"]["sha256"]:
        return changed
    # the manifest parsed is the one hashed (one read: a file put in place after the hash is never the one used)
    manifest = Manifest.from_dict(json_document(data, mpath, "manifest"), str(mpath))
    try:
        files = DatasetFiles(manifest.root_dir(mpath))
    except ValidationError as exc:
        return [{"path": manifest.root, "reason": str(exc)}]
    return [p for p in (files.check(entry) for entry in idx.doc["files"]) if p]


def summary_of(doc: dict, split, out) -> dict:
    """What ``rfbench windows --json`` prints about an index it wrote to the folder ``out``: the files, the
    settings, the shapes and the counts (``doc`` is the index document)."""
    out = Path(out)
    files = doc["files"]
    return {
        "index": str(out / "index.json"),
        "x": str(out / doc["x"]["file"]),
        "y": str(out / doc["y"]["file"]),
        "split": str(split),
        "dataset": doc["dataset"],
        "synthetic": doc.get("synthetic", False),
        "side": doc["side"],
        "task": doc["task"],
        "settings": doc["settings"],
        "rows": len(doc["rows"]),
        "x_shape": doc["x"]["shape"],
        "x_axes": doc["x"]["axes"],
        "y_shape": doc["y"]["shape"],
        "y_dtype": doc["y"]["dtype"],
        "labels": doc["labels"]["names"] if doc["labels"] else None,
        "recordings": doc["recordings"],
        "excluded": doc["excluded"],
        "excluded_counts": excluded_counts(doc["excluded"]),
        "dropped": dropped_counts(doc["dropped"]),
        "files_read": len(files),
        "bytes_read": sum(f["bytes"] for f in files),
    }
