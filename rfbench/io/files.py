"""Atomic outputs, stage-to-stage JSON files, and input hashing.

Every file rfbench writes goes to a temporary file in the destination folder and is renamed over the
target only once complete (DESIGN.md §10), so a crash or a refused input never leaves a half-written
output. An existing target is refused unless ``force=True``.

JSON files that pass between stages carry ``"schema": "rfbench.<kind>/<major>"`` (DESIGN.md §11);
:func:`read_json` refuses a missing schema, another kind, or an unknown major version.

Untrusted input is bounded before it is parsed: JSON (and TOML, :func:`check_nesting`) may nest arrays and
objects at most :data:`MAX_NESTING` levels deep, so a file of ``[[[[...`` is one clear error, not a
``RecursionError``; a ``.npy`` array (:func:`load_npy`) or ``.npz`` member (:func:`load_npz_member`) is read
only after the size its header declares has been checked against the bytes the file (or the member's
compressed data) can hold and against :func:`max_array_bytes`, and only what is needed is inflated.
"""

from __future__ import annotations

import bisect
import contextlib
import contextvars
import hashlib
import io
import json
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from rfbench.errors import FILE_TOO_LARGE, FormatError, OutputError, OutputExistsError, RfbenchError, SchemaError
from rfbench.io.documents import (
    MAX_JSON_BYTES,
    MAX_NESTING,
    check_nesting,
    parse_json_bytes,
    parse_json_text,
    without_escapes,
)

__all__ = [
    "READ_FLAGS",
    "own_file_digest",
    "file_mode",
    "new_temporary",
    "NotRegularFile",
    "open_regular",
    "read_regular",
    "open_input",
    "atomic_write",
    "write_bytes",
    "write_text",
    "write_json",
    "save_npz",
    "read_json",
    "schema_id",
    "check_schema",
    "check_writable",
    "refuse_folder_name",
    "refuse_inputs",
    "dumps_json",
    "sha256_file",
    "input_errors",
    "check_regular",
    "read_input_bytes",
    "load_npy",
    "npz_members",
    "load_npz_member",
    "max_array_bytes",
    "MAX_ARRAY_BYTES",
    "check_nesting",
    "parse_json_text",
    "SCHEMA_MAJOR",
    "MAX_NESTING",
]

#: Current major version of each JSON kind rfbench writes.
SCHEMA_MAJOR = {"manifest": 1, "split": 1, "report": 1, "windows": 1, "prediction": 1, "robustness": 1}

#: Largest array (in bytes) rfbench reads from one ``.npy`` file or ``.npz`` member, unless the environment
#: variable ``RFBENCH_MAX_ARRAY_BYTES`` sets another limit (:func:`max_array_bytes`).
MAX_ARRAY_BYTES = 4 * 1024**3

#: Deflate expands data by at most about 1032:1; an ``.npz`` member claiming more is not a deflate stream.
_MAX_DEFLATE_RATIO = 1032



def check_writable(path: str | os.PathLike, force: bool = False) -> Path:
    """Refuse an existing ``path`` unless ``force``, and whatever rfbench never replaces even with it (a folder,
    a device, a FIFO, a socket: see :func:`check_replaceable`); return it as a Path. Call before doing expensive
    work. A path written with a trailing ``/`` names a folder: refused (``Path`` would drop the slash and write a
    file of that name)."""
    refuse_folder_name(path)
    path = Path(path)
    check_replaceable(path)
    if path.is_dir():  # first: `force` would not help
        raise OutputExistsError(f"{path} is a directory, not a file")
    if os.path.lexists(path) and not force:  # a link to nothing is the user's too: not absent
        raise OutputExistsError(f"{path} already exists; pass `force` to overwrite it")
    return path


def refuse_folder_name(path: str | os.PathLike) -> None:
    """Refuse an output file written with a trailing ``/``: it names a folder (``Path`` would drop the slash and
    write a file of that name). Call on the text as given, before it becomes a ``Path``."""
    text = os.fspath(path)
    if isinstance(text, str) and text.endswith(("/", os.sep)) and text.strip("/" + os.sep):
        raise OutputExistsError(f"{text} ends with '/': it names a folder, not the file to write; give the file's "
                                "name")


def refuse_inputs(outputs: Iterable, inputs: Iterable) -> None:
    """Refuse to write any of ``outputs`` over one of ``inputs``, the same file under any name (a hard link, a
    link to it, another spelling): ``force`` replaces a job's earlier outputs, never what the job reads. An output
    that is itself a symbolic link is not its target (rfbench replaces the link, never follows it). Call before
    writing anything."""

    def key(path, follow: bool):
        try:
            info = os.stat(path) if follow else os.lstat(path)
        except (OSError, ValueError):
            return ("path", os.path.normcase(os.path.abspath(os.fspath(path))))
        return ("file", info.st_dev, info.st_ino)

    read = {key(p, True): p for p in inputs if p is not None}
    for out in outputs:
        given = read.get(key(out, False)) if out is not None else None
        if given is not None:
            alias = "" if os.fspath(given) == os.fspath(out) else f" (as {given})"
            raise OutputExistsError(f"{out} is an input of this job{alias}: rfbench never writes over what it reads, "
                                    "`force` or not; write elsewhere")


def refuse_inside_tree(outputs: Iterable, root: str | os.PathLike, *, folders: bool = False,
                       what: str = "a file written there", parts: Iterable[str] | None = None) -> None:
    """Refuse an output that is, or lies inside, the dataset tree ``root`` a manifest describes, links resolved:
    written there it changes that tree — an ingest of it, verify's too, finds a file the manifest does not list —
    so a report made from the tree would fail verify though nothing was forged. ``folders``: the outputs are
    folders written into (one that is a link into the tree is refused); else files, each replaced where it is (a
    file that is a link is replaced, not followed: its folder decides). ``parts``: only the outputs under these
    first parts of a path inside the tree count (``""``: a file at its top), the places ingest read
    (:meth:`rfbench.datasets.manifest.Manifest.read_parts`); None: the whole tree. ``what`` names what would be
    written, for the message. Call before writing anything."""
    try:
        real_root = os.path.realpath(root)
    except (OSError, ValueError):
        return
    inside = real_root.rstrip(os.sep) + os.sep
    counted = None if parts is None else set(parts)
    for out in outputs:
        if out is None:
            continue
        try:
            given = os.path.abspath(out)
            real = os.path.realpath(given) if folders else os.path.join(os.path.realpath(os.path.dirname(given)),
                                                                        os.path.basename(given))
        except (OSError, ValueError):
            continue
        if real != real_root and not real.startswith(inside):
            continue
        if counted is not None:
            rel = real[len(inside):].split(os.sep) if real != real_root else []
            if not (len(rel) > 1 and rel[0] in counted) and not (len(rel) == 1 and "" in counted):
                continue
        where = "is" if real == real_root else "lies inside"
        linked = "" if given == real else f" (it is {real})"
        kind = "folder" if folders else "file"
        raise OutputError(f"{out}: {where} the dataset tree {real_root} the manifest describes{linked}; {what} "
                          "would change that tree, which verify ingests again to check every report made from "
                          f"it: choose an output {kind} outside it")


def check_replaceable(path: str | os.PathLike) -> None:
    """Refuse an output ``path`` that exists as something other than a regular file or a symbolic link: a
    device, a FIFO or a socket is not rfbench's to replace, ``force`` or not (``-o /dev/null --force`` run as
    root would rename a regular file over the system's ``/dev/null``). A link is replaced, never followed.
    Called before the work and again right before each rename."""
    try:
        info = os.lstat(path)
    except OSError:  # absent (or unreachable: the write says why)
        return
    if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode) or stat.S_ISDIR(info.st_mode):
        return  # (a folder is refused where it is met, with its own words)
    kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode) else "a device"
    raise OutputExistsError(f"{path} is {kind}, not a regular file: rfbench writes only regular files and never "
                            "replaces anything else, even with `force`; write elsewhere")


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike, what: str = "rfbench") -> Iterator[None]:
    """Hold an exclusive lock on the output ``folder`` (``flock`` on the folder itself: no file is made in it, and
    the system releases the lock when the process ends, however it ends) while outputs are written into it.

    Raises
    ------
    OutputExistsError
        Another process holds the lock: ``what`` is writing into the folder now (two runs writing one folder
        would leave a mix of both: one's X beside the other's index).
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        yield
        return
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputExistsError(f"{folder}: another {what} is writing into this folder now; wait for it to end, "
                                    "or write elsewhere") from None
        yield
    finally:
        os.close(fd)  # (the lock goes with the descriptor)


def replace_output(tmp: str | os.PathLike, path: str | os.PathLike) -> None:
    """``os.replace(tmp, path)`` unless ``path`` is now something :func:`check_replaceable` refuses (it appeared
    while the job ran): then ``tmp`` is left for the caller to remove, and the refusal raised."""
    check_replaceable(path)
    os.replace(tmp, path)


def file_mode() -> int:
    """``0o666`` less the process's umask: the permissions :func:`open` gives a new file, and so ``numpy.save``;
    rfbench gives them to every file it writes (a temporary file is created ``0o600``, then set to these)."""
    try:  # Linux 4.7+: the umask without changing it
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: read it by setting it (and set it back at once)
    os.umask(mask)
    return 0o666 & ~mask


def new_temporary(folder: str | os.PathLike, name: str, mode: int | None = None) -> tuple[int, str]:
    """A new hidden temporary file ``.NAME.XXXXXXXX.tmp`` in ``folder`` for the output ``name``, with the
    permissions of :func:`file_mode` (or ``mode``): ``(descriptor, path)``. Raises the ``OSError``."""
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, file_mode() if mode is None else mode)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    return fd, tmp


def atomic_write(path: str | os.PathLike, write: Callable[[io.BufferedWriter], None], force: bool = False) -> Path:
    """Call ``write(fileobj)`` on a temporary file beside ``path``, then rename it to ``path``.

    Parameters
    ----------
    path : path-like
        Destination. Its parent folder is created if missing.
    write : callable
        Receives a binary file object open for writing.
    force : bool
        Overwrite an existing destination. Without it, an existing file raises :class:`OutputExistsError`
        and nothing is written.

    Raises
    ------
    OutputError
        The destination cannot be written (read-only folder, no space, a parent that is a file): one line
        naming ``path`` — never the temporary file — and why.
    """
    path = check_writable(path, force)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {output_reason(exc, path)}") from None
    try:
        fd, tmp = new_temporary(path.parent, path.name)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {output_reason(exc, path)}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        replace_output(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, RfbenchError):
            raise OutputError(f"cannot write {path}: {output_reason(exc, path)}") from None
        raise
    return path


def output_reason(exc: OSError, path: Path) -> str:
    """Why ``path`` could not be written, in words about the output (not the temporary file)."""
    import errno

    folder = path.parent if str(path.parent) else Path(".")
    if isinstance(exc, (FileExistsError, NotADirectoryError)) or exc.errno in (errno.EEXIST, errno.ENOTDIR):
        blocker = next((p for p in (path.parent, *path.parent.parents) if p.exists() and not p.is_dir()), None)
        return f"{blocker if blocker is not None else folder} is a file, not a folder"
    if exc.errno == errno.EROFS:
        return f"the folder {folder} is on a read-only file system"
    if isinstance(exc, PermissionError) or exc.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied: the folder {folder} is not writable"
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    if exc.errno == errno.EDQUOT:
        return "disk quota exceeded"
    if exc.errno == errno.EFBIG:
        return f"{FILE_TOO_LARGE} or of the file system"
    return exc.strerror or type(exc).__name__


def write_bytes(path, data: bytes, force: bool = False) -> Path:
    """Atomically write ``data`` to ``path``."""
    return atomic_write(path, lambda fh: fh.write(data), force)


def write_text(path, text: str, force: bool = False) -> Path:
    """Atomically write UTF-8 ``text`` to ``path``. A character UTF-8 cannot hold (a lone surrogate: a file
    name that is not valid UTF-8) is written as its ``\\udcXX`` escape, so the file stays UTF-8."""
    return write_bytes(path, text.encode("utf-8", "backslashreplace"), force)


def schema_id(kind: str, major: int | None = None) -> str:
    """``"rfbench.<kind>/<major>"`` for a JSON kind (the current major unless given)."""
    return f"rfbench.{kind}/{SCHEMA_MAJOR[kind] if major is None else major}"


def dumps_json(obj: Any) -> str:
    """Canonical JSON text: sorted keys, two-space indent, no NaN (NaN/inf become null), trailing newline.

    The same object always gives the same bytes, so split and report files are byte-identical across runs.
    A lone surrogate (how Python holds a file name that is not valid UTF-8) is written as a ``\\udcXX``
    escape, which JSON readers turn back into the same string, so the text is always valid UTF-8.

    The bytes are those of ``json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False)`` (NumPy scalars and
    arrays as their ``item()``/``tolist()``), which ``tests/test_json_canonical.py`` checks; it is written here
    because the standard library's indenting encoder is pure Python, about 15 times slower than this on a
    manifest of 4,000 recordings. A document without a float is written by orjson (:func:`_compiled_text`),
    another 10 times faster, with the same bytes.
    """
    text = _compiled_text(obj)
    if text is not None:
        return text
    text = _text(obj, "\n") + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")

try:  # a required dependency; without it (a broken install) every document goes through _text
    import orjson as _orjson
except ImportError:  # pragma: no cover
    _orjson = None
else:
    #: Dataclasses, datetimes and subclasses of str, int, dict and list are handed to the default (which refuses
    #: them) rather than written orjson's way: _text writes them, or refuses them, as the standard encoder does.
    _ORJSON_OPTIONS = (_orjson.OPT_INDENT_2 | _orjson.OPT_SORT_KEYS | _orjson.OPT_PASSTHROUGH_DATACLASS
                       | _orjson.OPT_PASSTHROUGH_DATETIME | _orjson.OPT_PASSTHROUGH_SUBCLASS)


def _compiled_text(obj: Any) -> str | None:
    """``dumps_json(obj)`` written by orjson, or None when orjson's bytes could differ from the standard encoder's.

    For dicts with string keys, lists, tuples, strings, integers of 64 bits, booleans and None, orjson's indented,
    key-sorted text is ``json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False)`` byte for byte (both escape
    the same characters the same way, and sort keys by code point; ``tests/test_json_canonical.py`` holds them to
    it). Anything else it refuses — a NumPy value, a larger integer, a lone surrogate, a non-string key, a
    subclass, nesting past its 255 levels — and :func:`_text` writes it. A float it writes its own way (``1e-7``
    where Python writes ``1e-07``), so a text holding a number with a fraction or an exponent is left to
    :func:`_text` too (:func:`_holds_float`). (orjson also writes an ``Enum`` or ``UUID`` member, which the
    standard encoder refuses; rfbench writes neither.)"""
    if _orjson is None:
        return None
    try:
        data = _orjson.dumps(obj, option=_ORJSON_OPTIONS)
    except (TypeError, _orjson.JSONEncodeError):
        return None
    if _holds_float(data):
        return None
    return data.decode("utf-8") + "\n"


#: Every byte but quotes, the characters of a float's text that are not digits, and the letters of ``true``,
#: ``false`` and ``null`` that tell their ``e`` from an exponent's.
_NOT_FLOAT_MARK = bytes(b for b in range(256) if b not in b'".eEusl')


def _holds_float(data: bytes) -> bool:
    """Whether the JSON text ``data`` holds a number with a fraction or an exponent: a ``.``, ``E``, or ``e`` outside
    its strings, other than the ``e`` of ``true`` and ``false``. Escapes are removed first
    (:func:`rfbench.io.documents.without_escapes`), so the quotes left alternate between opening a string and
    closing it. Outside strings, ``u``, ``s`` and ``l`` come from ``true`` (``u e``), ``false``
    (``l s e``) and ``null`` (``u l l``) alone, so an ``e`` right after a ``u`` or an ``s`` ends a ``true`` or a
    ``false``, and any other ``e`` is an exponent's."""
    import numpy as np

    m = np.frombuffer(without_escapes(data).translate(None, _NOT_FLOAT_MARK), np.uint8)
    quote = m == 0x22
    outside = ~quote & (np.bitwise_xor.accumulate(quote.view(np.uint8)) == 0)
    dot_or_exponent = outside & ((m == 0x2E) | (m == 0x45))
    e = np.flatnonzero(outside & (m == 0x65))
    after = m[e - 1]  # (for an e that is the first mark, the last: a quote, or the e or l ending a literal)
    return bool(dot_or_exponent.any() or ((after != 0x75) & (after != 0x73)).any())


_STRING = json.encoder.encode_basestring  # the C encoder's string form without ASCII escaping
#: JSON's C encoder, compact, items joined by \x00 and keys from values by \x01: no string it writes holds
#: either raw (control characters are always escaped), so both mark the places indentation goes
_FLAT_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=("\x00", "\x01"))
if json.encoder.c_make_encoder is not None:  # the C encoder itself, without JSONEncoder.encode's set-up per call
    _C_FLAT = json.encoder.c_make_encoder(None, _FLAT_ENCODER.default, _STRING, None, "\x01", "\x00", True, False,
                                          True)

    def _FLAT(obj: Any) -> str:
        return "".join(_C_FLAT(obj, 0))
else:
    _FLAT = _FLAT_ENCODER.encode
_PLAIN = frozenset((str, int, float, bool, type(None)))  # exact types the C encoder writes as json.dumps does
_STR = {str}


def _plain(v: Any) -> bool:
    """Whether ``v`` is a scalar :data:`_FLAT` writes as canonical JSON (a finite float, not NaN/inf)."""
    t = type(v)
    return t in _PLAIN and (t is not float or v - v == 0)


def _text(obj: Any, newline: str) -> str:
    """``obj``'s indented JSON; ``newline`` is ``"\\n"`` and the current indent.

    Runs of plain scalars (a list of them, or a dict's scalar values) go through the C encoder in one call;
    only containers and the odd value (NaN, a NumPy scalar, a subclass) are walked here."""
    if _plain(obj):
        return _FLAT(obj)
    inner = newline + "  "
    if isinstance(obj, Mapping):
        if not obj:
            return "{}"
        items = obj if set(map(type, obj)) == _STR else {str(k): v for k, v in obj.items()}
        kinds = set(map(type, items.values()))
        if kinds <= _PLAIN and float not in kinds:
            odd = ()
        elif float in kinds:
            odd = sorted(k for k, v in items.items() if not _plain(v))
        else:
            odd = sorted(k for k, v in items.items() if type(v) not in _PLAIN)
        skip = set(odd)
        flat = _FLAT({k: v for k, v in items.items() if k not in skip} if odd else items)
        entries = flat[1:-1].replace("\x01", ": ").split("\x00") if len(flat) > 2 else []
        if odd:  # each in its sorted place among the plain ones
            keys = sorted(k for k in items if k not in skip)
            merged, done = [], 0
            for key in odd:
                upto = bisect.bisect_left(keys, key)
                merged += entries[done:upto]
                merged.append(_STRING(key) + ": " + _text(items[key], inner))
                done = upto
            entries = merged + entries[done:]
        return "{" + inner + ("," + inner).join(entries) + newline + "}"
    if isinstance(obj, (list, tuple)):
        if not obj:
            return "[]"
        kinds = set(map(type, obj))
        if kinds <= _PLAIN and (float not in kinds or all(map(_plain, obj))):
            return "[" + inner + _FLAT(list(obj))[1:-1].replace("\x00", "," + inner) + newline + "]"
        texts = _records(obj, inner) if kinds == _DICT and len(obj) >= _RECORDS_MIN else None
        if texts is None:
            texts = [_text(v, inner) for v in obj]
        return "[" + inner + ("," + inner).join(texts) + newline + "]"
    if isinstance(obj, float):  # NaN, inf or a float subclass
        return float.__repr__(obj) if obj - obj == 0 else "null"
    if isinstance(obj, str):  # a subclass: written as a str
        return _STRING(obj)
    if isinstance(obj, int):  # a subclass (an IntEnum...): written as its value
        return int.__repr__(obj)
    if hasattr(obj, "item") and hasattr(obj, "dtype"):  # a NumPy scalar (or one-value array), else array
        return _text(obj.item() if getattr(obj, "size", 1) == 1 else obj.tolist(), newline)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


_DICT = {dict}
#: Fewest dicts in a list for :func:`_records` (a shorter list is written one dict at a time).
_RECORDS_MIN = 8


def _records(items: list, newline: str) -> list[str] | None:
    """The texts of ``items`` (dicts), each as ``_text(item, newline)`` writes it, or None to have them written
    one by one: a list of records (a manifest's recordings) in a few C-level calls.

    Dicts whose keys are strings and whose values are plain scalars (finite floats) or lists share a layout per
    key set and value types: a layout's text is laid out once, as a ``%`` template with the keys and the
    indentation; each record's values are taken in key order by ``operator.itemgetter``; every scalar of every
    record goes through the C encoder in one call, and the lists (a recording's files) are written together by
    :func:`_list_texts`. Anything else (a float that is not finite, a dict value, another type) leaves the list
    to the general walk."""
    layouts: dict = {}
    scalars: list = []
    plan: list = []  # per item: its layout and the index of its first list value in `nested`
    nested: list = []
    for d in items:
        sig = (tuple(d), tuple(map(type, d.values())))
        layout = layouts.get(sig)
        if layout is None:
            layout = _layout(sig, newline)
            if layout is None:
                return None
            layouts[sig] = layout
        template, n_scalars, get_scalars, get_lists, floats, list_at = layout
        if n_scalars:
            values = get_scalars(d)
            if floats and not all(v - v == 0 for v in floats(d)):
                return None
            scalars.extend(values)
        plan.append((layout, len(nested)))
        if list_at:
            nested.extend(get_lists(d))
    encoded = _FLAT(scalars)[1:-1].split("\x00") if scalars else []
    nested_texts = _list_texts(nested, newline + "  ") if nested else []
    out, at = [], 0
    for (template, n_scalars, _, _, _, list_at), first in plan:
        args = encoded[at:at + n_scalars]
        at += n_scalars
        for k, position in enumerate(list_at):
            args.insert(position, nested_texts[first + k])
        out.append(template % tuple(args))
    return out


def _layout(sig: tuple, newline: str) -> tuple | None:
    """``(template, number of scalars, scalars getter, lists getter, floats getter or None, list positions)`` of a
    dict layout for :func:`_records`, or None when it does not write it (a key that is not a string, a value of
    another type than a plain scalar or a list)."""
    from operator import itemgetter

    keys, types = sig
    if any(type(k) is not str for k in keys):
        return None
    by_key = dict(zip(keys, types))
    order = sorted(keys)
    if any(by_key[k] is not list and by_key[k] not in _PLAIN for k in order):
        return None
    if not order:
        return "{}", 0, None, None, None, ()
    inner = newline + "  "
    template = "{" + ",".join(inner + _STRING(k).replace("%", "%%") + ": %s" for k in order) + newline + "}"
    scalar_keys = [k for k in order if by_key[k] is not list]
    list_keys = [k for k in order if by_key[k] is list]
    float_keys = [k for k in order if by_key[k] is float]

    def getter(names):
        if not names:
            return None
        get = itemgetter(*names)
        return get if len(names) > 1 else (lambda d: (get(d),))

    list_at = tuple(i for i, k in enumerate(order) if by_key[k] is list)
    return template, len(scalar_keys), getter(scalar_keys), getter(list_keys), getter(float_keys), list_at


def _list_texts(lists: list, newline: str) -> list[str]:
    """The texts of ``lists`` (each as ``_text(v, newline)`` writes it); the dicts of the lists that hold only
    dicts are written together by :func:`_records` where it can."""
    inner = newline + "  "
    dicts = [x for v in lists if v and set(map(type, v)) == _DICT for x in v]
    written = _records(dicts, inner) if dicts else None
    texts_of_dicts = iter(written) if written is not None else None
    out = []
    for v in lists:
        if not v:
            out.append("[]")
            continue
        kinds = set(map(type, v))
        if kinds == _DICT:
            texts = [next(texts_of_dicts) for _ in v] if texts_of_dicts is not None else [_text(x, inner) for x in v]
        elif kinds <= _PLAIN and (float not in kinds or all(map(_plain, v))):
            out.append("[" + inner + _FLAT(list(v))[1:-1].replace("\x00", "," + inner) + newline + "]")
            continue
        else:
            texts = [_text(x, inner) for x in v]
        out.append("[" + inner + ("," + inner).join(texts) + newline + "]")
    return out


def write_json(path, obj: Mapping[str, Any], force: bool = False) -> Path:
    """Atomically write ``obj`` as canonical JSON (see :func:`dumps_json`)."""
    return write_text(path, dumps_json(obj), force)


@contextlib.contextmanager
def input_errors(path: str | os.PathLike, what: str = "", error: type = FormatError, expected: str = "a file"):
    """Turn an ``OSError`` raised while opening or reading the input ``path`` into ``error`` with one line
    saying why: ``"<what> <path>: no such file"`` (or ``is a directory, expected <expected>``, ``permission
    denied``, ``cannot read (...)``); ``what`` names the input (``"--label-set"``, ``"skeleton file"``...)."""
    where = f"{what} {path}" if what else str(path)
    try:
        yield
    except FileNotFoundError:
        raise error(f"{where}: no such file") from None
    except IsADirectoryError:
        raise error(f"{where}: is a directory, expected {expected}") from None
    except PermissionError:
        raise error(f"{where}: permission denied") from None
    except OSError as exc:
        raise error(f"{where}: cannot read ({exc.strerror or exc})") from None


def check_regular(info: os.stat_result, where: str, expected: str, error: type = FormatError) -> None:
    """Refuse what ``os.stat`` or ``os.fstat`` says is not a regular file (a folder, a FIFO, a device): reading
    one could block or never end."""
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{where}: is a directory, expected {expected}")
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{where}: not a regular file, expected {expected}")


#: How rfbench opens a file it must not be fooled by: read-only, never through a symbolic link as the last
#: component (ELOOP), never waiting (a FIFO opened for reading would wait for a writer; it is refused right after
#: as not a regular file), never inherited by a child process.
READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def check_path_text(path: str | os.PathLike) -> None:
    """Refuse a path no file name can be: one holding NUL, or an unpaired surrogate that is not a byte of a
    non-UTF-8 name (``\udc80``-``\udcff`` are; ``\ud800`` is not). Such a path comes from a document (a JSON
    ``"\u0000"``), and ``os`` would refuse it with a ``ValueError`` or ``UnicodeEncodeError``.

    Raises
    ------
    FormatError
        Naming the path, escaped.
    """
    text = os.fspath(path)
    if isinstance(text, bytes):
        if b"\0" in text:
            raise FormatError(f"{text!r}: a path holding a NUL byte; no file name can")
        return
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        raise FormatError(f"{text!r}: a path holding an unpaired surrogate; no file name can") from None
    if "\0" in text:
        raise FormatError(f"{text!r}: a path holding a NUL byte; no file name can")


class NotRegularFile(OSError):
    """What :func:`open_regular` raises for a folder, a FIFO, a device or a socket (its descriptor closed)."""


def open_regular(path: str | os.PathLike, follow: bool = False) -> int:
    """A descriptor of the regular file at ``path``, opened with :data:`READ_FLAGS`; anything else is refused
    after it was opened, without reading (:class:`NotRegularFile`). Other failures raise their ``OSError``.

    ``follow`` resolves symbolic links first (an input the user names through a link); without it a final
    link is refused (ELOOP). In a verify re-run the file must also be one verify checked
    (:func:`rfbench.io.world.admit`, a :class:`~rfbench.errors.FormatError` otherwise)."""
    from rfbench.io.world import admit

    check_path_text(path)
    fd = os.open(os.path.realpath(path) if follow else path, READ_FLAGS)
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
        if regular:
            fd = admit(fd, path)  # (in a verify re-run, maybe a checked copy of the bytes verify hashed)
    except BaseException:
        os.close(fd)  # (the file opened: admit leaves it open when it raises)
        raise
    if not regular:
        os.close(fd)
        raise NotRegularFile(f"{os.fspath(path)}: not a regular file")
    return fd


def open_input(path: str | os.PathLike, where: str, expected: str, error: type = FormatError):
    """A binary file object of the input ``path`` (links followed), opened with :data:`READ_FLAGS` and checked
    on the descriptor: anything but a regular file is ``error`` with :func:`check_regular`'s line (a FIFO never
    blocks the open), and so is a file a verify re-run may not read (:func:`rfbench.io.world.admit`). Other
    ``OSError`` propagate (wrap the call in :func:`input_errors`)."""
    from rfbench.io.world import admit

    check_path_text(path)
    fd = os.open(os.path.realpath(path), READ_FLAGS)
    try:
        check_regular(os.fstat(fd), where, expected, error)
        fd = admit(fd, path)  # (in a verify re-run, maybe a checked copy of the bytes verify hashed)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)  # (the file opened: admit leaves it open when it raises)
        raise


def read_regular(path: str | os.PathLike, cap: int, what: str, error: type = FormatError,
                 follow: bool = False) -> bytes:
    """The bytes of the regular file at ``path`` (:func:`open_regular`, ``follow`` as there), refused with
    ``error`` before anything is read when it holds more than ``cap`` bytes. ``OSError`` (and
    :class:`NotRegularFile`) propagate."""
    fd = open_regular(path, follow)
    try:
        size = os.fstat(fd).st_size
        if size > cap:
            raise error(f"{what} {os.fspath(path)}: {size} bytes, more than the {cap} rfbench reads for it")
        data = read_fd(fd, size)
    finally:
        os.close(fd)
    if _READS.get() is not None:
        _record_read(path, hashlib.sha256(data).hexdigest(), len(data))
    return data


#: The files read whole under :func:`reads_recorded`: real path → (sha256, size) of the bytes read.
_READS: contextvars.ContextVar = contextvars.ContextVar("rfbench_reads", default=None)


@contextlib.contextmanager
def reads_recorded():
    """Within it, every input file read whole (:func:`read_regular`, :func:`load_npy`) is recorded by its real path
    with the sha256 and size of the very bytes read; :func:`digest_read` gives them back. A command that records
    its inputs' digests takes them from here, so each is of the bytes the command used (a second read, to hash,
    may find another file in the place of the first); a file read twice with different bytes is an error."""
    token = _READS.set({})
    try:
        yield
    finally:
        _READS.reset(token)


def digest_read(path: str | os.PathLike) -> tuple[str, int] | None:
    """``(sha256, size)`` of the bytes read from ``path`` under :func:`reads_recorded`, or None."""
    reads = _READS.get()
    return None if reads is None else reads.get(os.path.realpath(path))


def _record_read(path, digest: str, size: int) -> None:
    reads = _READS.get()
    first = reads.setdefault(os.path.realpath(path), (digest, size))
    if first != (digest, size):
        raise FormatError(f"{os.fspath(path)}: changed while rfbench read it (two reads gave different bytes); read "
                          "nothing while the file is being written")


def read_fd(fd: int, size: int) -> bytes:
    """At most ``size`` bytes from the open file ``fd`` (fewer when it ends sooner: a file that shrank since its
    ``fstat``), in as few reads as the system allows; a single read's bytes are returned as they are."""
    chunks, left = [], size
    while left > 0:
        block = os.read(fd, left)
        if not block:
            break
        chunks.append(block)
        left -= len(block)
    return b"".join(chunks)  # (one chunk: that very bytes object, no copy)


#: Largest file :func:`read_input_bytes` reads whole unless told otherwise.
MAX_INPUT_BYTES = 1 << 30


def read_input_bytes(path: str | os.PathLike, what: str = "", error: type = FormatError, cap: int = MAX_INPUT_BYTES,
                     expected: str = "a file") -> bytes:
    """The bytes of an input file, or ``error`` with one line saying why not (see :func:`input_errors`): it must
    be a regular file (:func:`open_regular`: a FIFO or a device is refused unread) of at most ``cap`` bytes."""
    where = f"{what} {path}" if what else str(path)
    with input_errors(path, what, error, expected):
        try:
            return read_regular(path, cap, what or "input", error, follow=True)
        except NotRegularFile:
            raise error(f"{where}: not a regular file, expected {expected}") from None


def max_array_bytes() -> int:
    """The per-array read limit: ``RFBENCH_MAX_ARRAY_BYTES`` (an integer number of bytes) if set, else
    :data:`MAX_ARRAY_BYTES` (4 GiB)."""
    text = os.environ.get("RFBENCH_MAX_ARRAY_BYTES", "").strip()
    if not text:
        return MAX_ARRAY_BYTES
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise FormatError(f"RFBENCH_MAX_ARRAY_BYTES={text!r}: expected a number of bytes >= 0")
    return value


def _size_text(n: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


#: Longest ``.npy`` header read (the length its header declares, after the magic, version and length fields):
#: NumPy's own default for the headers it accepts (``max_header_size`` of ``numpy.lib.format``); a plain
#: array's is about 120 bytes.
MAX_NPY_HEADER_BYTES = 10_000


def _bytes_left(fh) -> int | None:
    """Bytes of ``fh`` after its position, or None when that cannot be known without reading them."""
    import io

    try:
        return os.fstat(fh.fileno()).st_size - fh.tell()
    except (AttributeError, OSError, io.UnsupportedOperation):
        pass
    if isinstance(fh, io.BytesIO):
        return len(fh.getbuffer()) - fh.tell()
    return None


def parse_npy_header(fh, where: str):
    """``(shape, fortran_order, dtype)`` from the ``.npy`` header at the stream's position (no data read): the one
    reader of untrusted ``.npy`` headers (any failure to parse one, a deeply nested shape's RecursionError
    included, is a FormatError naming ``where``; format 3.0, whose only use is non-Latin-1 field names of a
    structured dtype, is refused; so are negative dimensions and Python objects)."""
    import io

    from numpy.lib import format as npy_format

    magic = fh.read(8)
    if len(magic) < 8 or magic[:6] != b"\x93NUMPY":  # said without echoing the file's bytes
        raise FormatError(f"{where}: not a plain .npy array (no NumPy header)")
    version = (magic[6], magic[7])
    if version not in ((1, 0), (2, 0)):
        raise FormatError(f"{where}: not a plain .npy array (format version {version[0]}.{version[1]}; rfbench reads "
                          "1.0 and 2.0)")
    field = 2 if version == (1, 0) else 4
    length_bytes = fh.read(field)
    if len(length_bytes) < field:
        raise FormatError(f"{where}: not a plain .npy array (the file ends inside its header)")
    length = int.from_bytes(length_bytes, "little")
    left = _bytes_left(fh)
    if length > MAX_NPY_HEADER_BYTES or (left is not None and length > left):
        why = (f"more than the {left:,} bytes the file has left" if left is not None and length > left
               else f"above rfbench's limit of {MAX_NPY_HEADER_BYTES:,} bytes")
        raise FormatError(f"{where}: not a plain .npy array (its header declares a {length:,}-byte header, {why}: "
                          "truncated, or a forged header)")
    text = fh.read(length)  # at most MAX_NPY_HEADER_BYTES
    if len(text) < length:
        raise FormatError(f"{where}: not a plain .npy array (the file ends inside its {length:,}-byte header)")
    try:
        read = npy_format.read_array_header_1_0 if version == (1, 0) else npy_format.read_array_header_2_0
        shape, fortran, dtype = read(io.BytesIO(length_bytes + text), max_header_size=MAX_NPY_HEADER_BYTES)
    except Exception as exc:  # any failure to parse an untrusted header means the same thing  # noqa: BLE001
        raise FormatError(f"{where}: not a plain .npy array ({_reason(exc)})") from None
    if any(type(d) is not int for d in shape):  # a bool passes NumPy's isinstance(d, int), and no reshape takes it
        raise FormatError(f"{where}: not a plain .npy array (a dimension that is not an integer in shape {shape})")
    if any(d < 0 for d in shape):
        raise FormatError(f"{where}: not a plain .npy array (negative dimension in shape {shape})")
    nonzero = 1
    for d in shape:
        nonzero *= d or 1
    if nonzero * dtype.itemsize >= 1 << 62:  # no array of it could be made, even with a zero dimension
        raise FormatError(f"{where}: its header declares shape {shape}, which no array can have")
    if dtype.hasobject:
        raise FormatError(f"{where}: not a plain .npy array (it holds Python objects, dtype {dtype}; rfbench "
                          "reads no pickles)")
    return shape, fortran, dtype


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _read_npy_data(fh, where: str, available: int, max_rows: int | None, inflated: str = "holds"):
    """The array whose header starts at the stream's position, after checking its declared size against the
    ``available`` data bytes and :func:`max_array_bytes`; with ``max_rows``, only the first rows are read."""
    import numpy as np

    shape, fortran, dtype = parse_npy_header(fh, where)
    available -= fh.tell()
    count = 1
    for d in shape:
        count *= d
    declared = count * dtype.itemsize
    if declared > max(available, 0):
        raise FormatError(f"{where}: its header declares a {'x'.join(map(str, shape)) or 'scalar'} {dtype} array "
                          f"({_size_text(declared)}) but the file {inflated} only {_size_text(max(available, 0))} "
                          "of data (truncated, or a forged header)")
    if max_rows is not None and shape and shape[0] > max_rows and not fortran:
        shape = (max_rows,) + tuple(shape[1:])
        count = 1
        for d in shape:
            count *= d
    wanted = count * dtype.itemsize
    limit = max_array_bytes()
    if wanted > limit:
        raise FormatError(f"{where}: a {'x'.join(map(str, shape))} {dtype} array is {_size_text(wanted)}, above "
                          f"rfbench's limit of {_size_text(limit)} per array (set RFBENCH_MAX_ARRAY_BYTES to "
                          "change it)")
    try:
        if wanted == 0:
            return np.empty(shape, dtype=dtype, order="F" if fortran else "C")
        buf = bytearray(wanted)
    except ValueError:  # e.g. (0, 2**62): no data, but a shape numpy cannot index
        raise FormatError(f"{where}: its header declares shape {shape}, which no array can have") from None
    except MemoryError:
        raise FormatError(f"{where}: not enough memory to read {_size_text(wanted)}") from None
    view = memoryview(buf)
    got = 0
    while got < wanted:
        n = fh.readinto(view[got:got + (1 << 24)])
        if not n:
            raise FormatError(f"{where}: the data ends after {got} of {wanted} bytes (truncated)")
        got += n
    arr = np.frombuffer(buf, dtype=dtype, count=count).reshape(shape, order="F" if fortran else "C")
    if max_rows is not None and arr.ndim and arr.shape[0] > max_rows:  # Fortran order: read whole, keep rows
        arr = np.array(arr[:max_rows])
    return arr


def load_npy(path: str | os.PathLike, what: str = "", max_rows: int | None = None):
    """One plain ``.npy`` array (no pickles, not an ``.npz``), or :class:`FormatError` with one line.

    The header is read first (``numpy.lib.format``) and the array is allocated only when the size it declares
    fits in the file and in :func:`max_array_bytes`, so a 128-byte file declaring 10**12 elements is an error,
    not a MemoryError. ``max_rows`` reads only the first rows (of a C-ordered array; a Fortran-ordered one is
    read whole, within the limit, and cut).
    """
    where = f"{what} {path}" if what else str(path)
    with input_errors(path, what, expected="a .npy file"):
        with open_input(path, where, "a .npy file") as fh:
            head = fh.read(6)
            if head[:4] == b"PK\x03\x04":
                raise FormatError(f"{where}: expected a .npy array, not an .npz archive")
            fh.seek(0)
            size = os.fstat(fh.fileno()).st_size
            if _READS.get() is None:
                return _read_npy_data(fh, where, size, max_rows)
            hashing = _Hashed(fh)  # (under reads_recorded: the file's sha256 from this very read)
            arr = _read_npy_data(hashing, where, size, max_rows)
            digest, n = hashing.finish()
    _record_read(path, digest, n)
    return arr


def load_npy_bytes(data: bytes, what: str):
    """:func:`load_npy` of a ``.npy`` file's bytes already read (and hashed) by the caller: the same checks, no
    second read of the file."""
    import io

    if bytes(data[:4]) == b"PK\x03\x04":
        raise FormatError(f"{what}: expected a .npy array, not an .npz archive")
    return _read_npy_data(io.BytesIO(data), what, len(data), None)


def _open_npz(path, where: str):
    import zipfile

    try:
        fh = open_input(path, where, "an .npz archive")
        try:
            zf = zipfile.ZipFile(fh)
        except BaseException:
            fh.close()
            raise
        zf._rfbench_file = fh  # a ZipFile never closes a file object it was given: _ClosingZip does
        return _ClosingZip(zf)
    except FileNotFoundError:
        raise FormatError(f"{where}: no such file") from None
    except PermissionError:
        raise FormatError(f"{where}: permission denied") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError) as exc:
        raise FormatError(f"{where}: not an .npz archive ({_reason(exc)})") from None


class _ClosingZip:
    """An open archive that, used as a context manager, closes its file object with it."""

    def __init__(self, zf):
        self.zf = zf

    def __enter__(self):
        return self.zf

    def __exit__(self, *exc):
        try:
            self.zf.close()
        finally:
            self.zf._rfbench_file.close()
        return False


def npz_members(path: str | os.PathLike, what: str = "") -> list[str]:
    """The array names of an ``.npz`` archive (``csi`` for the member ``csi.npy``), read from its directory."""
    where = f"{what} {path}" if what else str(path)
    with _open_npz(path, where) as zf:
        return [n[:-4] if n.endswith(".npy") else n for n in zf.namelist()]


def load_npz_member(path: str | os.PathLike, name: str, what: str = "", max_rows: int | None = None):
    """One array of an ``.npz`` archive, inflating no more than it needs.

    The member's size in the zip directory must be one a stored or deflated member of its compressed size can
    have (deflate expands at most ~1032:1), the ``.npy`` header inside it must declare no more than that, and
    what is read must fit in :func:`max_array_bytes`; ``max_rows`` reads (and inflates) only the first rows.
    Object arrays are refused. Every problem is a :class:`FormatError` naming the archive and the member.
    """
    import zipfile
    import zlib

    where = f"{what} {path}" if what else str(path)
    member = f"{where} [{name}]"
    with _open_npz(path, where) as zf:
        try:
            info = zf.getinfo(f"{name}.npy")
        except KeyError:
            try:
                info = zf.getinfo(name)
            except KeyError:
                raise FormatError(f"{where}: no array {name!r}") from None
        if info.flag_bits & 0x1:
            raise FormatError(f"{member}: encrypted members are not read")
        if info.compress_type == zipfile.ZIP_STORED:
            if info.file_size != info.compress_size:
                raise FormatError(f"{member}: a stored member of {info.compress_size} bytes claims "
                                  f"{info.file_size} bytes")
        elif info.compress_type == zipfile.ZIP_DEFLATED:
            if info.file_size > _MAX_DEFLATE_RATIO * max(info.compress_size, 1):
                raise FormatError(f"{member}: claims {_size_text(info.file_size)} from "
                                  f"{_size_text(info.compress_size)} of deflated data, more than deflate can "
                                  "expand (a forged or bombed archive)")
        else:
            raise FormatError(f"{member}: compression method {info.compress_type} is not one numpy writes "
                              "(stored or deflated)")
        try:
            with zf.open(info) as fh:
                return _read_npy_data(_Counted(fh), member, info.file_size, max_rows, inflated="inflates to")
        except FormatError:
            raise
        except (zipfile.BadZipFile, zlib.error, ValueError, EOFError, OSError, RuntimeError) as exc:
            raise FormatError(f"{member}: damaged ({_reason(exc)})") from None


class _Counted:
    """A read-only stream that knows how many bytes it has given (``tell``), whatever the stream below."""

    def __init__(self, fh):
        self._fh = fh
        self._pos = 0

    def read(self, n: int = -1) -> bytes:
        data = self._fh.read(n)
        self._pos += len(data)
        return data

    def readinto(self, view) -> int:
        n = self._fh.readinto(view)
        self._pos += n or 0
        return n

    def tell(self) -> int:
        return self._pos


class _Hashed(_Counted):
    """A :class:`_Counted` stream, read from its start, that also hashes every byte it gives; :meth:`finish` reads
    the rest and gives ``(sha256, size)`` of the whole file as read through it."""

    def __init__(self, fh):
        super().__init__(fh)
        self._h = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = super().read(n)
        self._h.update(data)
        return data

    def readinto(self, view) -> int:
        n = super().readinto(view) or 0
        self._h.update(view[:n])
        return n

    def finish(self) -> tuple[str, int]:
        while self.read(1 << 20):
            pass
        return self._h.hexdigest(), self._pos


def read_json(path: str | os.PathLike, kind: str | None = None, cap: int = MAX_JSON_BYTES) -> dict:
    """Read a stage JSON file and check its schema.

    Parameters
    ----------
    path : path-like
        The file: a regular file (a FIFO, a device or a folder is refused unread) of at most ``cap`` bytes.
    kind : str, optional
        Expected kind (``"manifest"``, ``"split"``, ``"report"``). The file's ``schema`` must be
        ``rfbench.<kind>/<major>`` with the major this version of rfbench reads.

    Raises
    ------
    FormatError
        The file is missing, unreadable, not a regular file, too large, not a JSON object, or outside the
        bounds of :mod:`rfbench.io.documents` (nesting, values, numbers, repeated keys).
    SchemaError
        Wrong or missing schema, or an unknown major version.
    """
    path = Path(path)
    return json_document(read_input_bytes(path, cap=cap, expected="a JSON file"), path, kind)


def read_json_hashed(path: str | os.PathLike, kind: str | None = None, cap: int = MAX_JSON_BYTES) -> tuple[dict, str]:
    """:func:`read_json`'s document and the sha256 of the very bytes it was parsed from, in one read: a digest
    taken by a second read (:func:`sha256_file`) may be of another file, one put in place between the two."""
    path = Path(path)
    data = read_input_bytes(path, cap=cap, expected="a JSON file")
    return json_document(data, path, kind), hashlib.sha256(data).hexdigest()


def json_document(data: bytes, path: str | os.PathLike, kind: str | None = None) -> dict:
    """:func:`read_json` of bytes already read from ``path`` (named in its errors)."""
    obj = parse_json_bytes(data, str(path))
    if not isinstance(obj, dict):
        raise FormatError(f"{path}: expected a JSON object, found {type(obj).__name__}")
    if kind is not None:
        check_schema(obj, kind, str(path))
    return obj


def check_schema(obj: Mapping, kind: str, where: str = "input") -> None:
    """Raise :class:`SchemaError` unless ``obj["schema"]`` is this version's ``rfbench.<kind>/<major>``."""
    schema = obj.get("schema")
    if not isinstance(schema, str) or "/" not in schema:
        raise SchemaError(f"{where}: no 'schema' key; expected {schema_id(kind)!r}")
    name, _, major = schema.partition("/")
    if name != f"rfbench.{kind}":
        raise SchemaError(f"{where}: schema {schema!r} is not a {kind} file (expected {schema_id(kind)!r})")
    if major != str(SCHEMA_MAJOR[kind]):
        raise SchemaError(
            f"{where}: schema {schema!r} has major version {major}; this rfbench reads {schema_id(kind)!r}"
        )


def save_npz(path, arrays: Mapping[str, Any], force: bool = False, compress: bool = False) -> Path:
    """Atomically write ``arrays`` as an ``.npz`` loadable with :func:`numpy.load` alone (no pickles)."""
    import numpy as np

    saver = np.savez_compressed if compress else np.savez
    return atomic_write(path, lambda fh: saver(fh, **{k: np.asarray(v) for k, v in arrays.items()}), force)


def own_file_digest(path: str | os.PathLike) -> dict | None:
    """``{"size", "sha256"}`` of the regular file at ``path`` as it is now (no link followed, never a FIFO's
    wait), or None when there is none: what ``demo --force`` and ``generate --force`` compare with the sizes
    and hashes they recorded before they remove a file they wrote."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        h = hashlib.sha256()
        size = 0
        while block := f.read(1 << 20):
            h.update(block)
            size += len(block)
    return {"size": size, "sha256": h.hexdigest()}


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 20) -> tuple[str, int]:
    """Return ``(sha256 hex digest, size in bytes)`` of a regular file (links followed; a FIFO or a device is
    refused unread with :class:`~rfbench.errors.FormatError`), reading it in chunks."""
    h = hashlib.sha256()
    size = 0
    try:
        fd = open_regular(path, follow=True)
    except NotRegularFile:
        raise FormatError(f"{path}: not a regular file; rfbench reads regular files only (no FIFO or device)") from None
    with os.fdopen(fd, "rb") as fh:
        while True:
            block = fh.read(chunk)
            if not block:
                break
            h.update(block)
            size += len(block)
    return h.hexdigest(), size
