"""The leakage audit: is a train/test split disjoint in everything it claims to be? (DESIGN.md §6)

A split is audited as **rows**: each row is a recording, or a window of one (a frame range), assigned to a side
(0 = train, 1 = test; anything else = unused). Checks, each ``{name, passed, detail}``:

- ``recordings-disjoint``: no recording has rows on both sides (its receiver files or frames would leak);
- ``windows-disjoint``: no train row and test row of one recording share a frame (a whole-recording row spans
  ``[0, frames)``);
- ``<key>-disjoint`` for every key the protocol claims (``subject``, ``room``, ``location``, ``orientation``…):
  no value of that key on both sides. A recording on a side with no value for a claimed key fails the check
  (disjointness cannot be shown).

- ``captures-disjoint``, when recordings name the capture they come from (``capture``: a Widar3.0 BVP file and
  the CSI logs of the same gesture instance): no capture on both sides, whatever the protocol claims.

Unclaimed keys are reported too, as ``shared`` (how many values sit on both sides) — information, not a
verdict: that is how MM-Fi's S1 shows its 40 shared subjects. A failed audit raises :class:`LeakageError`
(exit 1) naming the offending groups.

Everything is linear in the number of rows: a few vectorised passes and one sweep kernel
(:func:`rfbench.protocols._sweep.overlap_sweep`) over rows sorted by (recording, start), run only over the
recordings with rows on both sides (a split of whole recordings has none, and imports no Numba).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np

from rfbench.datasets.manifest import CAPTURE_KEY, RecordingTable
from rfbench.errors import LeakageError, ValidationError

__all__ = [
    "AuditResult",
    "audit_rows",
    "audit_sides",
    "audit_document",
    "overlapping_recordings",
    "CHECK_RECORDINGS",
    "CHECK_WINDOWS",
    "CHECK_CAPTURES",
]

CHECK_RECORDINGS = "recordings-disjoint"
CHECK_WINDOWS = "windows-disjoint"
CHECK_CAPTURES = "captures-disjoint"
_SHOW = 8  # offending groups named in a detail line


def __getattr__(name):
    if name == "_overlap_sweep":  # the kernel, imported (and Numba with it) only when asked for
        from rfbench.protocols._sweep import overlap_sweep

        return overlap_sweep
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def overlapping_recordings(recording, start, stop, side, n_recordings: int) -> np.ndarray:
    """Boolean per recording: does a train row share a frame with a test row of that recording?

    Parameters
    ----------
    recording, start, stop : array-like of int
        One row each: the recording's index (``0 <= recording < n_recordings``) and its frame range
        ``[start, stop)`` with ``start >= 0``.
    side : array-like of int
        0 train, 1 test, anything else ignored.
    n_recordings : int
        Length of the result.
    """
    recording = np.ascontiguousarray(recording, dtype=np.int64)
    start = np.ascontiguousarray(start, dtype=np.int64)
    stop = np.ascontiguousarray(stop, dtype=np.int64)
    side = np.ascontiguousarray(side, dtype=np.int8)
    n = recording.shape[0]
    if not (recording.ndim == start.ndim == stop.ndim == side.ndim == 1) or not (
            start.shape[0] == stop.shape[0] == side.shape[0] == n):
        raise ValidationError("recording, start, stop and side must be 1-D arrays of one length")
    if n and (recording.min() < 0 or recording.max() >= n_recordings):
        raise ValidationError(f"recording indices must lie in 0…{n_recordings - 1}")
    if n and start.min() < 0:
        raise ValidationError("window starts must be non-negative")
    if n > 1:
        same = recording[1:] == recording[:-1]
        ordered = (recording[1:] > recording[:-1]) | (same & (start[1:] >= start[:-1]))
        if not ordered.all():
            order = np.lexsort((start, recording))
            recording, start, stop, side = recording[order], start[order], stop[order], side[order]
    out = np.zeros(n_recordings, dtype=np.uint8)
    # Only a recording with rows on both sides can hold a crossing pair: sweep the rows of those alone (the
    # kept rows stay in their order), and none at all — no kernel, no Numba — when there is no such recording.
    is_train, is_test = side == 0, side == 1
    both = (np.bincount(recording[is_train], minlength=n_recordings)[:n_recordings] > 0) & (
        np.bincount(recording[is_test], minlength=n_recordings)[:n_recordings] > 0)
    if not both.any():
        return out.astype(bool)
    keep = both[recording] & (is_train | is_test)
    if not keep.all():
        recording, start, stop, side = recording[keep], start[keep], stop[keep], side[keep]
    from rfbench.protocols._sweep import overlap_sweep

    overlap_sweep(recording, start, stop, side, out)
    return out.astype(bool)


@dataclass
class AuditResult:
    """Outcome of an audit: ``passed`` is True iff every check passed."""

    passed: bool
    checks: list[dict]
    shared: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        """``{"passed", "checks", "shared"}`` as stored in a split file."""
        return {"passed": self.passed, "checks": self.checks, "shared": self.shared}

    @property
    def failed(self) -> list[dict]:
        return [c for c in self.checks if not c["passed"]]

    def error(self) -> LeakageError:
        """The :class:`LeakageError` describing the failed checks (call only when not ``passed``)."""
        text = "; ".join(f"{c['name']} failed: {c['detail']}" for c in self.failed)
        return LeakageError(f"leak found: {text}", self.failed)

    def raise_if_failed(self) -> None:
        """Raise :class:`LeakageError` naming the offending groups unless every check passed."""
        if not self.passed:
            raise self.error()


def _names(items: Sequence[str], total: int | None = None) -> str:
    total = len(items) if total is None else total
    shown = ", ".join(str(i) for i in items[:_SHOW])
    return shown + (f", … ({total} in all)" if total > _SHOW else "")


def audit_rows(table: RecordingTable, recording, side, start=None, stop=None,
               claims: Iterable[str] = ()) -> AuditResult:
    """Audit rows (recordings or windows) assigned to train (0) and test (1).

    Parameters
    ----------
    table : RecordingTable
        The recordings and their domain columns.
    recording : array-like of int
        Each row's recording (index into ``table``).
    side : array-like of int
        0 train, 1 test, other values unused (e.g. −1 excluded).
    start, stop : array-like of int, optional
        Each row's frame range; default ``[0, frames)`` (the whole recording).
    claims : iterable of str
        Domain keys the split claims disjoint (``subject``, ``room``, …).

    Returns
    -------
    AuditResult
    """
    recording = np.asarray(recording, dtype=np.int64)
    side = np.asarray(side, dtype=np.int8)
    n_rec = len(table)
    if recording.shape != side.shape or recording.ndim != 1:
        raise ValidationError("recording and side must be 1-D arrays of one length")
    if recording.size and (recording.min() < 0 or recording.max() >= n_rec):
        raise ValidationError(f"recording indices must lie in 0…{n_rec - 1}")
    if start is None:
        start = np.zeros_like(recording)
    if stop is None:
        stop = table.frames[recording]
    is_train = side == 0
    is_test = side == 1
    has_train = np.bincount(recording[is_train], minlength=n_rec) > 0
    has_test = np.bincount(recording[is_test], minlength=n_rec) > 0
    checks = []

    both = np.flatnonzero(has_train & has_test)
    if both.size:
        checks.append({"name": CHECK_RECORDINGS, "passed": False, "detail": _both_detail(table, both)})
    else:
        checks.append({"name": CHECK_RECORDINGS, "passed": True,
                       "detail": f"{int(has_train.sum())} train and {int(has_test.sum())} test recordings, "
                                 "none on both sides"})

    overlap = np.flatnonzero(overlapping_recordings(recording, start, stop, side, n_rec))
    if overlap.size:
        checks.append({"name": CHECK_WINDOWS, "passed": False,
                       "detail": f"train and test frame ranges overlap in {overlap.size} recording(s): "
                                 + _names([table.ids[k] for k in overlap[:_SHOW]], overlap.size)})
    else:
        checks.append({"name": CHECK_WINDOWS, "passed": True,
                       "detail": f"{int(is_train.sum())} train and {int(is_test.sum())} test rows; "
                                 "no frame on both sides"})

    claims = list(dict.fromkeys(claims))
    for key in claims:
        checks.append(_domain_check(table, key, has_train, has_test))
    if CAPTURE_KEY in table.domains:
        checks.append(_capture_check(table, has_train, has_test))
    shared = [_shared_info(table, key, has_train, has_test) for key in table.domains
              if key not in claims and key != CAPTURE_KEY]
    return AuditResult(passed=all(c["passed"] for c in checks), checks=checks, shared=shared)


def _both_detail(table: RecordingTable, both: np.ndarray) -> str:
    return f"{both.size} recording(s) on both sides: " + _names([table.ids[k] for k in both[:_SHOW]], both.size)


def _side_counts(col, mask: np.ndarray, n_values: int) -> np.ndarray:
    codes = col.codes[mask]
    return np.bincount(codes[codes >= 0], minlength=n_values)


def _domain_check(table: RecordingTable, key: str, has_train: np.ndarray, has_test: np.ndarray) -> dict:
    name = f"{key}-disjoint"
    col = table.column(key)
    nv = len(col.values)
    train_n = _side_counts(col, has_train, nv)
    test_n = _side_counts(col, has_test, nv)
    missing = int(np.count_nonzero((has_train | has_test) & (col.codes < 0)))
    shared = np.flatnonzero((train_n > 0) & (test_n > 0))
    problems = []
    if shared.size:
        problems.append(f"{key} on both sides: " + _names(
            [f"{col.values[v]} (train {train_n[v]}, test {test_n[v]} recordings)" for v in shared[:_SHOW]],
            shared.size))
    alike = _alike_across(col.values, train_n, test_n)
    if alike:
        problems.append(f"{key} values a reader cannot tell apart (they differ only by case, Unicode form, spaces, "
                        f"invisible characters or look-alike letters, are a number and its text, or write one "
                        f"number with and without leading zeros) on both sides: "
                        + _names([f"{a!r} (train) and {b!r} (test)" for a, b in alike[:_SHOW]], len(alike)))
    if missing:
        problems.append(f"{missing} assigned recording(s) have no {key}, so disjointness cannot be shown")
    if problems:
        return {"name": name, "passed": False, "detail": "; ".join(problems)}
    return {"name": name, "passed": True,
            "detail": f"{int(np.count_nonzero(train_n))} train and {int(np.count_nonzero(test_n))} test "
                      f"{key} value(s), none shared"}


def _alike_across(values, train_n: np.ndarray, test_n: np.ndarray) -> list[tuple]:
    """``(train value, test value)`` pairs of distinct values, one only on the train side and one only on the test
    side, that read as one name (:func:`rfbench.names.read_alike`): ``kq`` and ``KQ`` are one person, and so are
    ``bob`` and ``bօb`` (Armenian ``օ``), and the integer ``5`` and the text ``"5"`` (a hand-edited manifest's),
    which print alike; a number is compared as its text. So are two names that write the same numbers, one with
    leading zeros (``7`` and ``07``, ``S1`` and ``S01``, ``user2`` and ``user002``): a numbering padded in one
    place and not in another names one person twice."""
    from rfbench.names import alike_pairs

    train_only, test_only = set(), set()
    for v, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            continue
        text = value if isinstance(value, str) else str(value)  # the number 5 and the text "5" print alike
        if train_n[v] > 0 and test_n[v] == 0:
            train_only.add(text)
        elif test_n[v] > 0 and train_n[v] == 0:
            test_only.add(text)
    pairs = [(t, t) for t in sorted(train_only & test_only)] + alike_pairs(sorted(train_only), sorted(test_only))
    seen = set(pairs)
    by_number: dict = {}
    for b in sorted(test_only):
        by_number.setdefault(_unpadded(b), []).append(b)
    pairs += [(a, b) for a in sorted(train_only) for b in by_number.get(_unpadded(a), ())
              if a != b and (a, b) not in seen]
    return pairs


_DIGITS = re.compile(r"[0-9]+")


def _unpadded(name: str) -> str:
    """``name`` as :func:`~rfbench.names.plain_name` reads it, each run of digits without its leading zeros
    (``S007`` → ``s7``; ``0`` stays ``0``): two names equal so write the same numbers."""
    from rfbench.names import plain_name

    return _DIGITS.sub(lambda m: m.group().lstrip("0") or "0", plain_name(name))


def _capture_check(table: RecordingTable, has_train: np.ndarray, has_test: np.ndarray) -> dict:
    """``captures-disjoint``: no capture (one gesture instance, e.g. a Widar3.0 BVP file and the CSI logs it was
    computed from) has recordings on both sides; recordings naming no capture are their own."""
    col = table.domains[CAPTURE_KEY]
    nv = len(col.values)
    train_n = _side_counts(col, has_train, nv)
    test_n = _side_counts(col, has_test, nv)
    shared = np.flatnonzero((train_n > 0) & (test_n > 0))
    if shared.size:
        return {"name": CHECK_CAPTURES, "passed": False,
                "detail": "one capture on both sides (recordings of one gesture instance are one source): "
                          + _names([str(col.values[v]) for v in shared[:_SHOW]], shared.size)}
    return {"name": CHECK_CAPTURES, "passed": True,
            "detail": f"{int(np.count_nonzero(train_n))} train and {int(np.count_nonzero(test_n))} test captures, "
                      "none on both sides"}


def _shared_info(table: RecordingTable, key: str, has_train: np.ndarray, has_test: np.ndarray) -> dict:
    col = table.domains[key]
    nv = len(col.values)
    train_n = _side_counts(col, has_train, nv)
    test_n = _side_counts(col, has_test, nv)
    shared = np.flatnonzero((train_n > 0) & (test_n > 0))
    used = int(np.count_nonzero((train_n > 0) | (test_n > 0)))
    return {"key": key, "shared": int(shared.size), "values": used,
            "examples": [col.values[v] for v in shared[:_SHOW]]}


def audit_sides(table: RecordingTable, side_per_recording, claims: Iterable[str] = ()) -> AuditResult:
    """Audit a recording-level assignment (one side per recording; −1 = not in the split)."""
    side = np.asarray(side_per_recording, dtype=np.int8)
    if side.shape != (len(table),):
        raise ValidationError(f"side has shape {side.shape}; expected ({len(table)},)")
    rows = np.flatnonzero((side == 0) | (side == 1))
    return audit_rows(table, rows, side[rows], claims=claims)


def _entries(doc: Mapping, key: str, where: str) -> list:
    value = doc.get(key)
    if not isinstance(value, list):
        raise ValidationError(f"{where}: {key!r} must be a list of recording ids (or {{id, start, stop}} windows)")
    return value


def audit_document(doc: Mapping, table: RecordingTable, claims: Iterable[str] = (),
                   where: str = "split") -> AuditResult:
    """Audit a split document: an rfbench split file, or plain ``{"train": [...], "test": [...]}``.

    Entries are recording ids, or windows ``{"id", "start", "stop"}`` (frames ``[start, stop)``). The claims
    audited are ``claims`` only: a document's own ``claims`` key is never believed (an rfbench split file is
    audited with its protocol's claims by :func:`rfbench.protocols.splitfile.check_split_file`).

    Raises
    ------
    ValidationError
        An entry is malformed or names a recording the manifest does not have.
    """
    index = table.index_of()
    rec, start, stop, side = [], [], [], []
    unknown: list[str] = []
    for s, key in enumerate(("train", "test")):
        for k, entry in enumerate(_entries(doc, key, where)):
            if isinstance(entry, str):
                rid, a, b = entry, None, None
            elif isinstance(entry, Mapping) and isinstance(entry.get("id"), str):
                rid, a, b = entry["id"], entry.get("start"), entry.get("stop")
                if not (_is_int(a) and _is_int(b) and 0 <= a <= b <= _FRAME_MAX):
                    raise ValidationError(f"{where}: {key}[{k}] window needs integer 0 <= start <= stop <= 2**63-1 "
                                          f"(frames), not start {_short(a)}, stop {_short(b)}")
            else:
                raise ValidationError(f"{where}: {key}[{k}] must be a recording id string or an {{id, start, stop}} "
                                      "window")
            row = index.get(rid)
            if row is None:
                unknown.append(rid)
                continue
            rec.append(row)
            start.append(0 if a is None else a)
            stop.append(int(table.frames[row]) if b is None else b)
            side.append(s)
    if unknown:
        raise ValidationError(f"{where}: {len(unknown)} recording id(s) not in the manifest: {_names(unknown)}; "
                              "audit against the manifest the split was made from (--manifest)")
    return audit_rows(table, np.asarray(rec, dtype=np.int64), np.asarray(side, dtype=np.int8),
                      np.asarray(start, dtype=np.int64), np.asarray(stop, dtype=np.int64), claims=list(claims))


#: The largest frame index a window may name (frames are 64-bit integers).
_FRAME_MAX = 2**63 - 1


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 24 else text[:21] + "..."


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)
