"""Split protocols: recording metadata + seed → train/test, as a pure function (DESIGN.md §6).

Protocols (``PROTOCOLS``):

- ``random``: recordings (captures, where recordings name one) drawn at random (``--test-fraction``); subjects,
  rooms, … are shared across sides, so it is **leakage-prone** and needs ``allow_leaky``. It is
  recording-level: rfbench never splits one recording's windows across sides (that leak is what the audit's
  ``recordings-disjoint`` and ``windows-disjoint`` catch).
- ``cross-subject``, ``cross-room``, ``cross-location``, ``cross-orientation``: whole values of one key held out
  for test, listed (``test=[...]``) or drawn with ``test_fraction`` and the seed; the split claims that key
  disjoint.
- ``in-domain``: Widar3.0's in-domain evaluation, a seeded draw stratified by (room, subject, location,
  orientation, gesture): of each gesture's n captures, ordered by cell and shuffled within cells, a systematic
  sample of round(f·n) goes to test (f = ``test_fraction``, default 0.2; every n/m-th from a seeded start), so
  each gesture has exactly its share on test, spread evenly over the cells. Every person,
  room, place, orientation and gesture must end on both sides (else an error names the value). Labelled
  leakage-prone (it needs ``allow_leaky``): repetitions of one person, place and orientation sit on both sides.
  Recordings of one capture (``capture``) are drawn together.
- ``leave-one-domain-out`` (``domain=KEY``): one split per value of the key, that value held out; fold names
  (and files ``split-<key>-<value>.json``) are collision-free, see :func:`fold_names`. Over a key that is not
  a domain of a cross-domain claim (:data:`CROSS_DOMAIN_KEYS`, or a template field given one of those roles;
  not ``repetition``, ``date``, ``capture``, ``release`` or a field without such a role) every person, room,
  place and orientation can be on both sides: it needs ``allow_leaky`` and is tagged leakage-prone.
- ``mmfi-s1``, ``mmfi-s2``, ``mmfi-s3`` with ``actions="p1"|"p2"|"p3"``: the MM-Fi toolbox's settings, exactly.
  S1 is its per-action random subject split (leakage-prone: the same subject is in train for one action and in
  test for another); S2 holds out S05 S10 … S40; S3 trains on E01–E03 (S01–S30) and tests on E04 (S31–S40).
  MM-Fi calls the held-out side "val"; rfbench calls it ``test``. MM-Fi has no separate test set, so choosing a
  checkpoint on it and reporting on it is model selection on test data.

Every protocol takes ``gestures``: only recordings of these gestures (names, or a preset of
:data:`rfbench.datasets.widar_bvp.GESTURE_PRESETS` such as ``common6``, Widar3.0's six common gestures) are split;
the others are excluded, and the protocol runs on the rest as if they were the whole manifest.

Randomness comes only from ``numpy.random.default_rng(seed)`` (and, for S1, ``numpy.random.RandomState(rs)``,
which reproduces the toolbox's ``numpy.random.seed(rs); numpy.random.permutation(40)`` without touching global
state). Candidates are put in a canonical order first, so the manifest's order does not matter.

A split file (``rfbench.split/1``) holds ``manifest`` {path, sha256}, ``protocol``, ``seed``, ``params``,
``train``/``test`` (sorted recording ids), ``leakage_prone``, ``audit`` {passed, checks, shared},
``synthetic``, and also ``claims``, ``held_out``, ``excluded`` and ``dataset``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from rfbench.datasets import mmfi
from rfbench.datasets.manifest import CAPTURE_KEY, DomainColumn, Manifest, RecordingTable, class_key, load_manifest
from rfbench.datasets.values import value_sort_key
from rfbench.datasets.widar_bvp import GESTURE_PRESETS
from rfbench.errors import ValidationError
from rfbench.io.files import schema_id
from rfbench.protocols.leakage import AuditResult, audit_rows, audit_sides

__all__ = [
    "PROTOCOLS",
    "ProtocolSpec",
    "Assignment",
    "assign",
    "split_document",
    "make_splits",
    "write_splits",
    "split_targets",
    "split_filename",
    "fold_names",
    "side_counts",
    "ProtocolSplitter",
    "mmfi_s1_subjects",
    "gesture_set",
    "IN_DOMAIN_STRATA",
    "CROSS_DOMAIN_KEYS",
    "is_cross_domain_key",
    "TRAIN",
    "TEST",
    "EXCLUDED",
]

TRAIN, TEST, EXCLUDED = 0, 1, -1


@dataclass(frozen=True)
class ProtocolSpec:
    """A protocol's fixed properties: the domain keys it claims disjoint, whether it is leakage-prone, the
    parameters it takes, the key it holds values of out (``cross-*``), and the function that assigns sides."""

    name: str
    claims: tuple
    leakage_prone: bool
    summary: str
    assign: Any = field(repr=False, compare=False, default=None)
    params: tuple = ()
    key: str | None = None


_S1_RATIO = 0.8
_S1_RATIO = 0.8


@dataclass(frozen=True)
class Assignment:
    """One train/test assignment of a table's recordings.

    Attributes
    ----------
    protocol : str
    seed : int
    params : dict
        The protocol arguments (``domain``, ``test``, ``test_fraction``, ``actions``).
    claims : tuple of str
        Domain keys claimed disjoint.
    leakage_prone : bool
    side : ndarray of int8
        Per recording: 0 train, 1 test, −1 excluded (not covered by the protocol, or no value for its key).
    held_out : tuple
        The values held out for test (empty for ``random`` and ``mmfi-s1``).
    name : str or None
        ``"<key>-<value>"`` for a leave-one-domain-out fold (its file is ``split-<name>.json``).
    """

    protocol: str
    seed: int
    params: dict
    claims: tuple
    leakage_prone: bool
    side: np.ndarray
    held_out: tuple = ()
    name: str | None = None


def _held_count(n: int, fraction: float) -> int:
    """Values (or recordings) to hold out: ⌊fraction·n + ½⌋, at least 1 and at most n − 1."""
    return max(1, min(n - 1, int(math.floor(fraction * n + 0.5))))


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63:
        raise ValidationError(f"seed must be an integer in 0 … 2**63-1, not {seed!r}")
    return int(seed)


def _check_fraction(fraction: Any) -> float:
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0.0 < float(fraction) < 1.0:
        raise ValidationError(f"test fraction must be a number strictly between 0 and 1, not {fraction!r}")
    return float(fraction)


def mmfi_s1_subjects(action_list: Sequence[str], seed: int = 0) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """MM-Fi S1 exactly: ``{action: (train subjects, test subjects)}`` for the actions in their listed order.

    For each action in order: ``permutation(40)`` seeded with ``rs`` (starting at ``seed``), the first
    ⌊0.8·40⌋ = 32 subjects of S01…S40 in that order to train, the rest to test, then ``rs += 1``. Uses
    ``RandomState(rs).permutation``, which equals ``numpy.random.seed(rs); numpy.random.permutation(40)`` and
    leaves the global generator alone.
    """
    seed = _check_seed(seed)
    if seed + len(action_list) > 2**32 - 1:
        raise ValidationError(f"mmfi-s1 seeds NumPy's legacy generator with seed … seed+{len(action_list) - 1}; "
                              "each must be below 2**32")
    n = len(mmfi.ALL_SUBJECTS)
    cut = int(np.floor(_S1_RATIO * n))
    out = {}
    rs = seed
    for action in action_list:
        idx = np.random.RandomState(rs).permutation(n)
        out[action] = (tuple(mmfi.ALL_SUBJECTS[i] for i in idx[:cut]), tuple(mmfi.ALL_SUBJECTS[i] for i in idx[cut:]))
        rs += 1
    return out


def _match_values(col, values: Iterable, key: str) -> list[int]:
    codes = []
    for v in values:
        c = col.code_of(v)
        if c < 0:
            have = ", ".join(str(x) for x in col.values[:20]) + (" …" if len(col.values) > 20 else "")
            shown = repr(v) if isinstance(v, str) and (v != v.strip() or not v.isprintable()) else v  # ' 1' is not 1
            raise ValidationError(f"`test` {shown}: no recording has {key} {shown}; values present: {have}")
        if c not in codes:
            codes.append(c)
    return codes


def assign(table: RecordingTable, protocol: str, *, seed: int = 0, test: Sequence | None = None,
           test_fraction: float | None = None, domain: str | None = None, actions: str | None = None,
           allow_leaky: bool = False, gestures: str | Sequence[str] | None = None) -> list[Assignment]:
    """Assign recordings to train/test under ``protocol``; a pure function of the table's metadata and ``seed``.

    Parameters
    ----------
    table : RecordingTable
        The recordings (``Manifest.table()``).
    protocol : str
        One of :data:`PROTOCOLS`.
    seed : int
        Seeds the draw (``random``, the cross-* draw of held-out values, and MM-Fi S1's ``rs``).
    test : sequence, optional
        Values to hold out (cross-*; for leave-one-domain-out, the folds to make). Matched by text, so ``"3"``
        selects room 3.
    test_fraction : float, optional
        Fraction of recordings (``random``) or of the key's values (cross-*) drawn for test; default 0.2.
    domain : str, optional
        The key of ``leave-one-domain-out`` (``subject``, ``room``, ``location``, ``orientation``, …).
    actions : str, optional
        ``p1``, ``p2`` or ``p3`` for the MM-Fi protocols.
    allow_leaky : bool
        Needed for leakage-prone protocols (``random``, ``in-domain``, ``mmfi-s1``, and ``leave-one-domain-out``
        over a key not in :data:`CROSS_DOMAIN_KEYS`, see :func:`is_cross_domain_key`); they are tagged
        ``leakage_prone``.
    gestures : str or sequence of str, optional
        Split only the recordings of these gestures (names, or a preset name such as ``common6``); the others
        are excluded. Recorded in the assignment's ``params``.

    Returns
    -------
    list of Assignment
        One, or one per held-out value for ``leave-one-domain-out``.

    Raises
    ------
    ValidationError
        Unknown protocol, leakage-prone without ``allow_leaky``, missing or unknown key or value, a side left
        empty, arguments that do not apply to the protocol.
    """
    spec = PROTOCOLS.get(protocol)
    if spec is None:
        raise ValidationError(f"unknown protocol {protocol!r}; choose one of: {', '.join(PROTOCOLS)}")
    if spec.leakage_prone and not allow_leaky:
        raise ValidationError(
            f"protocol {protocol} is leakage-prone ({spec.summary}); pass `allow_leaky` to create it anyway — the "
            "split and every report made from it will be tagged leakage_prone")
    seed = _check_seed(seed)
    if test_fraction is not None:
        test_fraction = _check_fraction(test_fraction)
    if test is not None and not isinstance(test, (list, tuple)):
        test = [test]
    test = list(test) if test else None
    given = {"test": test, "test_fraction": test_fraction, "domain": domain, "actions": actions}
    if actions is not None and "actions" not in spec.params:
        raise ValidationError(f"`actions` applies only to the mmfi-* protocols, not {protocol}")
    if gestures is not None:
        names = gesture_set(gestures, table)
        keep = np.isin(table.column("gesture").codes,
                       [table.column("gesture").code_of(g) for g in names])
        sub = _subset(table, keep)
        if len(sub) < 2:
            raise ValidationError(f"`gestures` keeps {len(sub)} recording(s); a split needs at least 2")
        recorded = gestures if isinstance(gestures, str) else list(names)
        out = []
        for a in spec.assign(sub, spec, seed, **given):
            side = np.full(len(table), EXCLUDED, dtype=np.int8)
            side[keep] = a.side
            out.append(Assignment(a.protocol, a.seed, {**a.params, "gestures": recorded}, a.claims,
                                  a.leakage_prone, side, a.held_out, a.name))
        return _tag_lodo(out, table, protocol, domain, allow_leaky)
    if not protocol.startswith("mmfi-") and len(table) < 2:
        raise ValidationError(f"the manifest has {len(table)} recording(s); a split needs at least 2")
    return _tag_lodo(spec.assign(table, spec, seed, **given), table, protocol, domain, allow_leaky)


#: The keys a cross-domain claim holds out (the ``cross-*`` protocols'; MM-Fi's environment is its ``room``;
#: MM-Fi's ``action`` for pose, where the motion is the domain — for a gesture task the action is the class,
#: and leave-one-domain-out over the label's own field is refused in any case).
#: Leave-one-domain-out over any other key (``repetition``, ``date``, ``capture``, ``release``, a template field
#: without one of these roles) keeps every person, room, place and orientation on both sides: it is leakage-prone.
CROSS_DOMAIN_KEYS = ("subject", "room", "location", "orientation", "action")


def _same_grouping(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two columns' codes group the recordings alike (one value of ``a`` for each value of ``b``)."""
    if not np.array_equal(a < 0, b < 0):
        return False
    keep = a >= 0
    if not np.any(keep):
        return False
    pairs = np.unique(np.stack([a[keep], b[keep]]), axis=1)
    return pairs.shape[1] == np.unique(a[keep]).size == np.unique(b[keep]).size


def is_cross_domain_key(table: RecordingTable, key: str) -> bool:
    """Whether leave-one-domain-out over ``key`` holds out a domain of a cross-domain claim: ``key`` is one of
    :data:`CROSS_DOMAIN_KEYS`, or groups the recordings exactly as one of them does (a template field given that
    role, ``rfbench ingest files --subject FIELD``, is copied under the role's key)."""
    if key in CROSS_DOMAIN_KEYS:
        return True
    col = table.domains.get(key)
    return col is not None and any(_same_grouping(col.codes, table.domains[d].codes)
                                   for d in CROSS_DOMAIN_KEYS if d in table.domains)


def _tag_lodo(out: list[Assignment], table: RecordingTable, protocol: str, domain: str | None,
              allow_leaky: bool) -> list[Assignment]:
    """Leave-one-domain-out over a key that is not a domain (:func:`is_cross_domain_key`): refused without
    ``allow_leaky``, else tagged ``leakage_prone``."""
    from dataclasses import replace

    if protocol != "leave-one-domain-out" or domain is None or is_cross_domain_key(table, domain):
        return out
    if not allow_leaky:
        raise ValidationError(
            f"leave-one-domain-out over {domain} is leakage-prone: {domain} is not {', '.join(CROSS_DOMAIN_KEYS)} "
            "or a template field with one of those roles, so every person, room, place and orientation can be on "
            "both sides (the in-domain leak); pass `allow_leaky` to create it anyway — the split and every report "
            "made from it will be tagged leakage_prone")
    return [replace(a, leakage_prone=True) for a in out]


def refuse_unseen_classes(assignments: Sequence[Assignment], recordings: Sequence[Mapping], protocol: str,
                          dataset: str | None = None) -> None:
    """Refuse an assignment whose test side holds no class its train side holds: the class as ``windows`` reads
    it (:func:`rfbench.datasets.manifest.class_key`: the recordings' ``label``, else ``gesture``, else
    ``action``).

    Such a test side cannot be scored as classification: no class it holds was taught, so any number measures
    the protocol, not the model (a constant answer scores 1.000 on a test side of one unseen class). It comes
    from holding out a key that is the class under another name (a template field given the label and a
    domain role, leave-one-domain-out over the label's own field); the check is on the sides themselves, so any
    such key is caught. A manifest without a class is not concerned, nor MM-Fi's actions, which a pose model
    is tested across (a gesture report over such a side warns of every row: UNSEEN CLASSES SCORED); a test side
    sharing some classes with training is allowed (the report warns of the rows of the others).

    Raises
    ------
    ValidationError
        Naming the fold and the test side's classes.
    """
    key = class_key(recordings)
    if key is None or (key == "action" and dataset == "mmfi"):
        return
    labels = [r.get(key) for r in recordings]
    for a in assignments:
        train = {labels[i] for i in np.flatnonzero(a.side == TRAIN).tolist()} - {None}
        test = {labels[i] for i in np.flatnonzero(a.side == TEST).tolist()} - {None}
        if train and test and not train & test:
            what = f" (fold {a.name})" if a.name else ""
            shown = ", ".join(sorted(map(str, test))[:5]) + (" …" if len(test) > 5 else "")
            raise ValidationError(f"{protocol}{what}: the test side holds no class the train side holds (test "
                                  f"classes: {shown}); a classifier cannot name a class it never saw, so the "
                                  "held-out key stands for the class itself — hold out a domain of the recordings "
                                  "(subject, room, location, orientation, …), not one that follows the label")


def _assign_classes_first(table: RecordingTable, manifest: Manifest, protocol: str, kwargs: Mapping) -> list:
    """:func:`assign`, then :func:`refuse_unseen_classes`; a leave-one-domain-out key that holds classes out is
    named as such before the same key is refused as not a domain (``allow_leaky`` could not make it a split)."""
    lodo = protocol == "leave-one-domain-out" and not kwargs.get("allow_leaky")
    assignments = assign(table, protocol, **{**kwargs, "allow_leaky": True} if lodo else kwargs)
    refuse_unseen_classes(assignments, manifest.recordings, protocol, manifest.dataset)
    if lodo:
        _tag_lodo(assignments, table, protocol, kwargs.get("domain"), False)
    return assignments


def gesture_set(gestures: str | Sequence[str], table: RecordingTable | None = None) -> tuple[str, ...]:
    """The gesture names ``gestures`` stands for: a preset (``common6``) or names (a comma-separated text or a
    list). Listed names must each be a gesture of ``table``; a preset's names need not all be present."""
    if isinstance(gestures, str):
        if gestures.lower() in GESTURE_PRESETS:
            return GESTURE_PRESETS[gestures.lower()]
        gestures = [g for g in gestures.split(",")]
    names = tuple(dict.fromkeys(str(g).strip() for g in gestures if str(g).strip()))
    if not names:
        raise ValidationError("`gestures` is empty; give gesture names or a preset ("
                              + ", ".join(GESTURE_PRESETS) + ")")
    if table is not None:
        col = table.column("gesture")
        unknown = [g for g in names if col.code_of(g) < 0]
        if unknown:
            have = ", ".join(str(v) for v in col.values[:20]) + (" …" if len(col.values) > 20 else "")
            raise ValidationError(f"`gestures` {unknown[0]!r}: no recording has this gesture; gestures present: "
                                  f"{have}; presets: {', '.join(GESTURE_PRESETS)}")
    return names


def _subset(table: RecordingTable, keep: np.ndarray) -> RecordingTable:
    """The recordings of ``table`` where ``keep``, their columns holding only the values still present."""
    domains = {}
    for key, col in table.domains.items():
        codes = col.codes[keep]
        used = np.unique(codes[codes >= 0])
        if not used.size:
            continue
        remap = np.full(len(col.values), -1, dtype=np.int32)
        remap[used] = np.arange(used.size, dtype=np.int32)
        domains[key] = DomainColumn(codes=np.where(codes >= 0, remap[np.maximum(codes, 0)], -1).astype(np.int32),
                                    values=tuple(col.values[k] for k in used))
    ids = tuple(i for i, k in zip(table.ids, keep) if k)
    return RecordingTable(ids=ids, frames=table.frames[keep], domains=domains)


#: The keys Widar3.0's in-domain draw is stratified by (those the manifest has).
IN_DOMAIN_STRATA = ("room", "subject", "location", "orientation", "gesture")


def _assign_in_domain(table: RecordingTable, spec: ProtocolSpec, seed: int, *, test, test_fraction, domain,
                      actions) -> list[Assignment]:
    """A seeded draw of captures within each (room, subject, location, orientation, gesture) cell."""
    if test or domain is not None:
        raise ValidationError("in-domain draws within every domain cell; `test` and `domain` do not apply")
    fraction = 0.2 if test_fraction is None else test_fraction
    keys = [k for k in IN_DOMAIN_STRATA if k in table.domains]
    if not keys:
        raise ValidationError("in-domain stratifies by room, subject, location, orientation and gesture; the "
                              "manifest has none of them")
    n = len(table)
    cell = np.zeros(n, dtype=np.int64)
    for k in keys:
        col = table.domains[k]
        cell = cell * (len(col.values) + 1) + (col.codes.astype(np.int64) + 1)
    unit_col = table.domains.get(CAPTURE_KEY)
    units = [("capture", str(unit_col.values[unit_col.codes[i]])) if unit_col is not None and unit_col.codes[i] >= 0
             else ("id", table.ids[i]) for i in range(n)]
    rng = np.random.default_rng(seed)
    side = np.zeros(n, dtype=np.int8)
    gesture = table.domains["gesture"].codes if "gesture" in table.domains else np.zeros(n, dtype=np.int32)
    first: dict = {}  # unit → (gesture, cell) of its first recording
    for i in range(n):
        first.setdefault(units[i], (int(gesture[i]), int(cell[i])))
    by_gesture: dict[int, list] = {}
    for unit in sorted(first, key=lambda u: (first[u][1], u)):  # cells in canonical order
        by_gesture.setdefault(first[unit][0], []).append(unit)
    held: set = set()
    for g in sorted(by_gesture):
        # the gesture's captures in cell order, shuffled within each cell; then a systematic sample of
        # round(f·n) of them (every n/m-th from a random start): exactly that many per gesture, spread over cells
        ordered = by_gesture[g]
        key = rng.random(len(ordered))
        ordered = [ordered[k] for k in sorted(range(len(ordered)), key=lambda k: (first[ordered[k]][1], key[k]))]
        total = len(ordered)
        if total < 2:
            continue
        m = _held_count(total, fraction)
        start = rng.random()
        held.update(ordered[int(math.floor((k + start) * total / m))] for k in range(m))
    side[[i for i in range(n) if units[i] in held]] = TEST
    for k in keys:
        col = table.domains[k]
        on_test = np.zeros(len(col.values), dtype=bool)
        on_train = np.zeros(len(col.values), dtype=bool)
        on_test[col.codes[(side == TEST) & (col.codes >= 0)]] = True
        on_train[col.codes[(side == TRAIN) & (col.codes >= 0)]] = True
        lacking = [col.values[v] for v in range(len(col.values)) if not (on_test[v] and on_train[v])]
        if lacking:
            raise ValidationError(f"in-domain cannot keep {k} {lacking[0]} on both sides with this seed and "
                                  f"test fraction {fraction:g}: too few captures of it; try another seed or "
                                  "fraction, or a cross-domain protocol")
    return [Assignment(spec.name, seed, {"test_fraction": fraction}, spec.claims, True, side)]


def _assign_random(table: RecordingTable, spec: ProtocolSpec, seed: int, *, test, test_fraction, domain,
                   actions) -> list[Assignment]:
    """Recordings drawn at random: ``test_fraction`` of them (default 0.2), in canonical id order; where
    recordings name their capture (``capture``), captures are drawn instead (``test_fraction`` of them), each
    with all its recordings, a recording naming none being its own."""
    if test or domain is not None:
        raise ValidationError("random draws recordings; `test` and `domain` do not apply")
    n = len(table)
    fraction = 0.2 if test_fraction is None else test_fraction
    side = np.zeros(n, dtype=np.int8)
    unit_col = table.domains.get(CAPTURE_KEY)
    if unit_col is None:
        order = np.array(sorted(range(n), key=lambda k: table.ids[k]), dtype=np.int64)
        pick = np.random.default_rng(seed).permutation(n)[:_held_count(n, fraction)]
        side[order[pick]] = TEST
        return [Assignment(spec.name, seed, {"test_fraction": fraction}, spec.claims, True, side)]
    units = [("capture", str(unit_col.values[unit_col.codes[i]])) if unit_col.codes[i] >= 0
             else ("id", table.ids[i]) for i in range(n)]
    ordered = sorted(set(units))
    pick = np.random.default_rng(seed).permutation(len(ordered))[:_held_count(len(ordered), fraction)]
    held = {ordered[k] for k in pick.tolist()}
    side[[i for i in range(n) if units[i] in held]] = TEST
    return [Assignment(spec.name, seed, {"test_fraction": fraction}, spec.claims, True, side)]


def _assign_lodo(table: RecordingTable, spec: ProtocolSpec, seed: int, *, test, test_fraction, domain,
                 actions) -> list[Assignment]:
    """One assignment per value of ``domain`` (or per value listed in ``test``), that value held out."""
    if domain is None:
        raise ValidationError("leave-one-domain-out needs `domain` KEY (subject, room, location, orientation, …)")
    if test_fraction is not None:
        raise ValidationError("leave-one-domain-out holds out each value in turn; `test_fraction` does not apply")
    classes = next((k for k in ("label", "gesture") if k in table.domains), None)  # what a classifier is taught
    if domain in ("label", classes):
        raise ValidationError(f"leave-one-domain-out over {domain!r} holds out a class: each fold's test side would "
                              f"hold only a {domain} the model never saw in training, which no classifier can "
                              "name; hold out a domain of the recordings (subject, room, location, orientation, …)")
    col = table.column(domain)
    if len(col.values) < 2:
        raise ValidationError(f"leave-one-domain-out needs at least 2 values of {domain}; found {len(col.values)}")
    folds = _match_values(col, test, domain) if test else list(range(len(col.values)))
    names = fold_names(domain, col.values)  # over every value, so a fold's name does not depend on `test`
    out = []
    for code in sorted(folds):
        side = np.where(col.codes < 0, EXCLUDED, np.where(col.codes == code, TEST, TRAIN)).astype(np.int8)
        value = col.values[code]
        out.append(Assignment(spec.name, seed, {"domain": domain}, (domain,), False, side, (value,),
                              names[code]))
    return out


def _assign_cross(table: RecordingTable, spec: ProtocolSpec, seed: int, *, test, test_fraction, domain,
                  actions) -> list[Assignment]:
    """Whole values of ``spec.key`` held out: those listed in ``test``, or ``test_fraction`` of them drawn."""
    key = spec.key
    if domain is not None and domain != key:
        raise ValidationError(f"{spec.name} splits by {key}; `domain` does not apply")
    col = table.column(key)
    nv = len(col.values)
    if nv < 2:
        raise ValidationError(f"{spec.name} needs at least 2 values of {key}; the manifest has {nv}")
    if test:
        if test_fraction is not None:
            raise ValidationError("give either `test` values or `test_fraction`, not both")
        held = _match_values(col, test, key)
        if len(held) == nv:
            raise ValidationError(f"`test` lists every {key}; leave at least one for training")
        params = {"domain": key, "test": sorted((col.values[c] for c in held), key=value_sort_key)}
    else:
        fraction = 0.2 if test_fraction is None else test_fraction
        held = np.random.default_rng(seed).permutation(nv)[:_held_count(nv, fraction)].tolist()
        params = {"domain": key, "test_fraction": fraction}
    held_arr = np.zeros(nv, dtype=bool)
    held_arr[held] = True
    side = np.where(col.codes < 0, EXCLUDED, np.where(held_arr[np.maximum(col.codes, 0)], TEST, TRAIN)).astype(np.int8)
    held_values = tuple(sorted((col.values[c] for c in held), key=value_sort_key))
    return [Assignment(spec.name, seed, params, spec.claims, False, side, held_values)]


def _assign_mmfi_setting(table: RecordingTable, spec: ProtocolSpec, seed: int, *, test, test_fraction, domain,
                         actions) -> list[Assignment]:
    """MM-Fi's S1/S2/S3 over the action protocol ``actions`` (p1, p2, p3), exactly as its toolbox."""
    if actions is None or str(actions).lower() not in mmfi.ACTION_PROTOCOLS:
        raise ValidationError(f"{spec.name} needs `actions` p1, p2 or p3 (MM-Fi's action protocols)")
    if test or test_fraction is not None or domain is not None:
        raise ValidationError(f"{spec.name} fixes its own sides; `test`, `test_fraction` and `domain` do not apply")
    return [_assign_mmfi(table, spec.name, seed, str(actions).lower(), spec)]


def _assign_mmfi(table: RecordingTable, protocol: str, seed: int, actions: str, spec: ProtocolSpec) -> Assignment:
    subj = table.column("subject")
    act = table.column("action")
    action_list = mmfi.ACTION_PROTOCOLS[actions]
    in_protocol = np.array([v in action_list for v in act.values] + [False], dtype=bool)
    valid_subject = np.array([v in mmfi.ALL_SUBJECTS for v in subj.values] + [False], dtype=bool)
    scodes = np.where(subj.codes < 0, len(subj.values), subj.codes)
    acodes = np.where(act.codes < 0, len(act.values), act.codes)
    covered = in_protocol[acodes] & valid_subject[scodes]
    side = np.full(len(table), EXCLUDED, dtype=np.int8)
    held: tuple = ()
    if protocol == "mmfi-s1":
        lists = mmfi_s1_subjects(action_list, seed)
        subject_names = np.asarray([str(v) for v in subj.values] + [""], dtype=object)
        action_names = np.asarray([str(v) for v in act.values] + [""], dtype=object)
        for k in np.flatnonzero(covered):
            train_subjects = lists[action_names[acodes[k]]][0]
            side[k] = TRAIN if subject_names[scodes[k]] in train_subjects else TEST
    else:
        if protocol == "mmfi-s2":
            held = mmfi.S2_TEST_SUBJECTS
        else:  # the toolbox's cross_scene_split lists subjects: S01–S30 train, S31–S40 test
            held = tuple(s for s in mmfi.ALL_SUBJECTS if mmfi.environment_of(s) in mmfi.S3_TEST_ENVIRONMENTS)
        is_test = np.array([v in held for v in subj.values] + [False], dtype=bool)
        side[covered] = np.where(is_test[scodes[covered]], TEST, TRAIN)
        if protocol == "mmfi-s3":
            held = mmfi.S3_TEST_ENVIRONMENTS
    return Assignment(protocol, seed, {"actions": actions}, spec.claims, spec.leakage_prone, side, held)


_CROSS = ("test", "test_fraction", "domain")
#: Every protocol rfbench knows: its claims, leakage-proneness, parameters and assignment function.
PROTOCOLS: dict[str, ProtocolSpec] = {p.name: p for p in (
    ProtocolSpec("random", (), True, "recordings drawn at random, so subjects, rooms, locations and orientations "
                                    "are shared by both sides", _assign_random, ("test_fraction",)),
    ProtocolSpec("in-domain", (), True, "Widar3.0's in-domain evaluation: captures drawn within each (room, "
                                       "subject, location, orientation, gesture) cell, so every domain is on both "
                                       "sides and repetitions of one person, place and orientation are split",
                 _assign_in_domain, ("test_fraction",)),
    ProtocolSpec("cross-subject", ("subject",), False, "held-out subjects", _assign_cross, _CROSS, "subject"),
    ProtocolSpec("cross-room", ("room",), False, "held-out rooms (MM-Fi: environments)", _assign_cross, _CROSS,
                 "room"),
    ProtocolSpec("cross-location", ("location",), False, "held-out locations", _assign_cross, _CROSS, "location"),
    ProtocolSpec("cross-orientation", ("orientation",), False, "held-out orientations", _assign_cross, _CROSS,
                 "orientation"),
    ProtocolSpec("leave-one-domain-out", (), False, "one split per value of --domain, that value held out",
                 _assign_lodo, ("domain",)),
    ProtocolSpec("mmfi-s1", (), True, "MM-Fi S1 draws subjects per action, so a subject is in train for one "
                                     "action and in test for another", _assign_mmfi_setting, ("actions",)),
    ProtocolSpec("mmfi-s2", ("subject",), False, "MM-Fi S2: cross-subject (test S05 S10 … S40)",
                 _assign_mmfi_setting, ("actions",)),
    ProtocolSpec("mmfi-s3", ("subject", "room"), False, "MM-Fi S3: cross-environment (train E01–E03, test E04)",
                 _assign_mmfi_setting, ("actions",)),
)}


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _safe(value: Any) -> str:
    return _UNSAFE.sub("_", str(value)).strip("._") or "value"


#: Longest sanitised key or value kept whole in a fold name (longer ones are cut and get the hash suffix).
_NAME_PART_MAX = 64


def _digest8(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=True).encode()).hexdigest()[:8]


def _name_part(value: Any, crowded: bool) -> str:
    text = str(value)
    safe = _safe(text)[:_NAME_PART_MAX]
    return safe if safe == text and not crowded else f"{safe}-{_digest8(value)}"


def fold_names(key: str, values: Sequence) -> list[str]:
    """The ``<key>-<value>`` name of the leave-one-domain-out fold of each value (its file is
    ``split-<name>.json``), distinct even on a case-insensitive file system.

    The rule: a key or value made only of letters, digits, ``_``, ``.`` and ``-`` (not starting or ending with
    ``.`` or ``_``, at most 64 characters) is kept as it is. Otherwise it is sanitised — each run of other
    characters becomes ``_``, leading and trailing ``.``/``_`` are dropped, it is cut to 64 characters — and
    gets ``-`` and the first 8 hex digits of the SHA-256 of its JSON text: ``a/b`` becomes ``a_b-<8 hex>`` and
    cannot meet the value ``a_b``, which keeps its name. Kept values that differ only by case (``Alice``,
    ``alice``) both get the suffix, so no two files differ only by case. A value's name depends only on the
    values of the key, never on the folds asked for; a remaining collision (astronomically unlikely) is an
    error, never an overwrite.
    """
    key_part = _name_part(key, False)
    kept = [str(v) for v in values if _safe(str(v))[:_NAME_PART_MAX] == str(v)]
    counts: dict[str, int] = {}
    for text in kept:
        counts[text.casefold()] = counts.get(text.casefold(), 0) + 1
    names = [f"{key_part}-{_name_part(v, counts.get(str(v).casefold(), 0) > 1)}" for v in values]
    seen: dict[str, Any] = {}
    for v, n in zip(values, names):
        if n.casefold() in seen:
            raise ValidationError(f"leave-one-domain-out: values {seen[n.casefold()]!r} and {v!r} of {key} would "
                                  f"share the file split-{n}.json; rename one of them in the manifest")
        seen[n.casefold()] = v
    return names


def split_filename(assignment: Assignment) -> str:
    """``split-<key>-<value>.json`` for a leave-one-domain-out fold (:func:`fold_names`), ``split.json``
    otherwise."""
    return f"split-{assignment.name}.json" if assignment.name else "split.json"


def side_counts(table: RecordingTable, side: np.ndarray) -> list[dict]:
    """Recordings and frames per side for every value of every domain key: ``[{key, value, train, test,
    train_frames, test_frames}]`` (values with no assigned recording are left out)."""
    rows = []
    side = np.asarray(side)
    for key, col in table.domains.items():
        if key == CAPTURE_KEY:  # one value per gesture instance: checked by the audit, not listed
            continue
        nv = len(col.values)
        counts = {}
        for name, s in (("train", TRAIN), ("test", TEST)):
            mask = (side == s) & (col.codes >= 0)
            counts[name] = np.bincount(col.codes[mask], minlength=nv)
            counts[name + "_frames"] = np.bincount(col.codes[mask], weights=table.frames[mask], minlength=nv)
        from rfbench._order import listing_key

        for v in sorted(range(nv), key=lambda v: listing_key(col.values[v])):  # listed in natural order
            if counts["train"][v] or counts["test"][v]:
                rows.append({"key": key, "value": col.values[v], "train": int(counts["train"][v]),
                             "test": int(counts["test"][v]), "train_frames": int(counts["train_frames"][v]),
                             "test_frames": int(counts["test_frames"][v])})
    return rows


def split_document(assignment: Assignment, table: RecordingTable, audit: AuditResult, *,
                   manifest_ref: Mapping | None = None, synthetic: bool = False, dataset: str | None = None) -> dict:
    """The split file's content (``rfbench.split/1``); canonical JSON of it is byte-identical across runs."""
    side = assignment.side
    ids = table.ids
    return {
        "schema": schema_id("split"),
        "manifest": dict(manifest_ref) if manifest_ref is not None else None,
        "dataset": dataset,
        "protocol": assignment.protocol,
        "seed": assignment.seed,
        "params": assignment.params,
        "claims": list(assignment.claims),
        "held_out": list(assignment.held_out),
        "train": sorted(ids[k] for k in np.flatnonzero(side == TRAIN)),
        "test": sorted(ids[k] for k in np.flatnonzero(side == TEST)),
        "excluded": sorted(ids[k] for k in np.flatnonzero(side == EXCLUDED)),
        "leakage_prone": bool(assignment.leakage_prone),
        "synthetic": bool(synthetic),
        "audit": audit.to_dict(),
    }


@dataclass
class SplitOutcome:
    """One split made by :func:`make_splits`: its assignment, audit, document and per-value counts."""

    assignment: Assignment
    audit: AuditResult
    document: dict
    counts: list[dict] = field(default_factory=list)

    @property
    def filename(self) -> str:
        return split_filename(self.assignment)


def make_splits(manifest: "Manifest | Mapping | str | os.PathLike", protocol: str, *,
                manifest_ref: Mapping | None = None, **kwargs) -> list[SplitOutcome]:
    """Assign, audit and build the split document(s) for a manifest.

    Each side must hold at least one recording. The audit result is stored in each document; raising on a failed
    audit is the caller's choice (``outcome.audit.raise_if_failed()``), so the evidence can be written first.

    Parameters
    ----------
    manifest : Manifest, dict or path-like
        The recordings to split.
    protocol : str
        One of :data:`PROTOCOLS`.
    manifest_ref : mapping, optional
        ``{path, sha256}`` of the manifest file, stored in each document (``rfbench split`` records the path
        relative to the split file).
    **kwargs
        ``seed``, ``test``, ``test_fraction``, ``domain``, ``actions``, ``allow_leaky``, ``gestures``, as for
        :func:`assign`.

    Returns
    -------
    list of SplitOutcome
        One, or one per held-out value for ``leave-one-domain-out``: the assignment, its audit, the split
        document and the per-value counts.

    Examples
    --------
    >>> import rfbench
    >>> recordings = [{"id": f"r{i}", "files": [], "frames": 10, "subject": f"s{i % 4}"} for i in range(8)]
    >>> manifest = rfbench.Manifest(dataset="mine", root=".", recordings=recordings)
    >>> (outcome,) = rfbench.make_splits(manifest, "cross-subject", test=["s3"])
    >>> outcome.document["test"], outcome.audit.passed
    (['r3', 'r7'], True)
    """
    manifest = load_manifest(manifest)
    table = manifest.table()
    outcomes = []
    assignments = _assign_classes_first(table, manifest, protocol, kwargs)
    for a in assignments:
        for name, s in (("train", TRAIN), ("test", TEST)):
            if not np.any(a.side == s):
                what = f" (fold {a.name})" if a.name else ""
                raise ValidationError(f"{protocol}{what} leaves the {name} side empty; the manifest has "
                                      f"{len(table)} recording(s), {int(np.sum(a.side == EXCLUDED))} not covered")
        audit = audit_sides(table, a.side, a.claims)
        doc = split_document(a, table, audit, manifest_ref=manifest_ref, synthetic=manifest.synthetic,
                             dataset=manifest.dataset)
        outcomes.append(SplitOutcome(a, audit, doc, side_counts(table, a.side)))
    return outcomes



def split_targets(protocol: str, out: str | os.PathLike | None = None) -> tuple[Path, Path | None]:
    """Where :func:`write_splits` writes: ``(folder, file)``. One split goes to ``out`` (default ``split.json``);
    ``leave-one-domain-out`` writes one file per held-out value into the folder ``out`` (default ``.``), and
    ``file`` is None."""
    if protocol == "leave-one-domain-out":
        folder = Path(".") if out is None else Path(out)
        if folder.suffix == ".json" or (folder.exists() and not folder.is_dir()):
            raise ValidationError(f"`out` {folder}: leave-one-domain-out writes one file per held-out value; "
                                  "give a folder")
        return folder, None
    if out is not None:
        from rfbench.io.files import refuse_folder_name

        refuse_folder_name(out)
    target = Path("split.json") if out is None else Path(out)
    return target.parent, target


def _check_targets(targets: Sequence[Path], manifest: Path) -> None:
    """Every split file distinct (also on a case-insensitive file system) and none of them the manifest, checked
    before anything is written."""

    def key(p: Path) -> str:
        return os.path.normcase(os.path.abspath(p)).casefold()

    own = key(manifest)
    seen: dict[str, Path] = {}
    for t in targets:
        k = key(t)
        if k == own:
            raise ValidationError(f"{t} is the manifest itself; write the splits elsewhere (`out`); nothing was "
                                  "written")
        if k in seen:
            raise ValidationError(f"{seen[k]} and {t} are the same file; nothing was written")
        seen[k] = t


def write_splits(manifest: str | os.PathLike, protocol: str, out: str | os.PathLike | None = None, *,
                 force: bool = False, content: bool = False, min_shared: int | None = None,
                 progress: Callable[[int], None] | None = None, on_total: Callable[[int], None] | None = None,
                 **kwargs) -> list[tuple[Path, SplitOutcome]]:
    """Make, audit and write the split file(s) of a manifest file — what ``rfbench split`` does.

    Each document records the manifest's path relative to the split file and its sha256. Every target is checked
    (distinct, not the manifest, absent unless ``force``) before anything is written. A split whose audit fails
    is still written, with ``audit.passed`` false, so the evidence can be inspected: check
    ``outcome.audit.passed`` (or call ``outcome.audit.raise_if_failed()``).

    Parameters
    ----------
    manifest : path-like
        A manifest written by ``rfbench ingest``.
    protocol : str
        One of :data:`PROTOCOLS`.
    out : path-like, optional
        The split file (default ``split.json``); for ``leave-one-domain-out`` a folder receiving
        ``split-<key>-<value>.json`` per held-out value (default ``.``).
    force : bool
        Overwrite existing split files.
    content : bool
        Also fingerprint both sides' files (:mod:`rfbench.protocols.content`); shared content fails the audit.
    min_shared : int, optional
        With ``content``: the records or frames two recordings must share to count as a leak (default 1).
    progress, on_total : callable, optional
        With ``content``: ``on_total(n)`` once (the distinct files to read), then ``progress(n)`` as they are.
    **kwargs
        ``seed``, ``test``, ``test_fraction``, ``domain``, ``actions``, ``allow_leaky``, ``gestures``, as for
        :func:`assign`.

    Returns
    -------
    list of (Path, SplitOutcome)
        Each file written and its split.

    Examples
    --------
    >>> import json, os, tempfile
    >>> import rfbench
    >>> folder = tempfile.mkdtemp()
    >>> recordings = [{"id": f"r{i}", "files": [], "frames": 10, "subject": f"s{i % 4}"} for i in range(8)]
    >>> with open(os.path.join(folder, "manifest.json"), "w") as f:
    ...     json.dump(rfbench.Manifest(dataset="mine", root=".", recordings=recordings).to_dict(), f)
    >>> ((path, outcome),) = rfbench.write_splits(os.path.join(folder, "manifest.json"), "cross-subject",
    ...                                           os.path.join(folder, "split.json"), test=["s3"])
    >>> path.name, outcome.audit.passed, json.loads(path.read_text())["manifest"]["path"]
    ('split.json', True, 'manifest.json')
    """
    from rfbench.datasets.manifest import read_manifest_hashed
    from rfbench.io.files import check_writable, write_json

    manifest = Path(manifest)
    if min_shared is not None and not content:
        raise ValidationError("`min_shared` applies only with `content`")
    m, digest = read_manifest_hashed(manifest)  # (one read: the digest the split records is of what it splits)
    folder, single = split_targets(protocol, out)
    ref = {"path": Path(os.path.relpath(manifest.resolve(), folder.resolve())).as_posix(), "sha256": digest}
    outcomes = make_splits(m, protocol, manifest_ref=ref, **kwargs)
    targets = [single if single is not None else folder / o.filename for o in outcomes]
    _check_targets(targets, manifest)
    m.refuse_listed(targets, m.root_dir(manifest))  # (a dataset file the split names, and --content reads)
    for t in targets:
        check_writable(t, force)
    if content:
        from rfbench.protocols.content import DEFAULT_MIN_SHARED, add_content, check_min_shared

        n = check_min_shared(DEFAULT_MIN_SHARED if min_shared is None else min_shared)
        add_content(outcomes, m, manifest_path=manifest, min_shared=n, progress=progress, on_total=on_total)
    for t, o in zip(targets, outcomes):
        write_json(t, o.document, force=force)
    return list(zip(targets, outcomes))

class ProtocolSplitter:
    """A scikit-learn-compatible splitter running an rfbench protocol over a manifest's windows (or recordings).

    ``split(X, y=None, groups=None)`` yields ``(train_index, test_index)`` arrays — one pair per fold (one fold,
    or one per held-out value for ``leave-one-domain-out``) — and ``get_n_splits`` counts the folds, so it plugs
    into ``sklearn.model_selection.cross_validate(..., cv=splitter)`` or a hand-written loop. scikit-learn is
    not needed.

    Rows of ``X`` are, by default, the manifest's windows in :attr:`windows` order (recording order, then start),
    or its recordings when ``window`` is None. With ``groups`` (one recording id per row), rows may come in any
    order: each row follows its recording's side. Every fold is audited before it is yielded; a leak raises
    :class:`~rfbench.errors.LeakageError`.

    Parameters
    ----------
    manifest : Manifest, dict or path
    protocol : str
        See :data:`PROTOCOLS`.
    window, stride : int, optional
        Window length and stride in frames (stride defaults to ``window``).
    seed, test, test_fraction, domain, actions, allow_leaky
        As for :func:`assign`.

    Examples
    --------
    >>> import rfbench
    >>> recordings = [{"id": f"r{i}", "files": [], "frames": 10, "room": i % 3} for i in range(6)]
    >>> splitter = rfbench.ProtocolSplitter(rfbench.Manifest("mine", ".", recordings), "leave-one-domain-out",
    ...                                     domain="room")
    >>> [test.tolist() for _, test in splitter.split()]
    [[0, 3], [1, 4], [2, 5]]
    """

    def __init__(self, manifest, protocol: str, *, window: int | None = None, stride: int | None = None,
                 seed: int = 0, test: Sequence | None = None, test_fraction: float | None = None,
                 domain: str | None = None, actions: str | None = None, allow_leaky: bool = False,
                 gestures: str | Sequence[str] | None = None):
        from rfbench.csi.windows import make_windows

        self.manifest = load_manifest(manifest)
        self.protocol = protocol
        self.table = self.manifest.table()
        self.assignments = _assign_classes_first(
            self.table, self.manifest, protocol, dict(seed=seed, test=test, test_fraction=test_fraction,
                                                      domain=domain, actions=actions, allow_leaky=allow_leaky,
                                                      gestures=gestures))
        self.windows = make_windows(self.table, window, stride) if window is not None else None

    def get_n_splits(self, X=None, y=None, groups=None) -> int:
        """Number of folds (1, or one per held-out value for leave-one-domain-out)."""
        return len(self.assignments)

    def _rows(self, X, groups) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        if groups is not None:
            groups = np.asarray(groups)
            if groups.ndim != 1:
                raise ValidationError("groups must be one recording id per row (1-D)")
            if X is not None and _n_rows(X) != groups.shape[0]:
                raise ValidationError(f"X has {_n_rows(X)} rows but groups has {groups.shape[0]}")
            index = self.table.index_of()
            values, inverse = np.unique(groups.astype(str), return_inverse=True)
            rows = np.empty(values.shape[0], dtype=np.int64)
            for k, v in enumerate(values.tolist()):
                if v not in index:
                    raise ValidationError(f"groups names recording {v!r}, which is not in the manifest")
                rows[k] = index[v]
            return rows[inverse.reshape(-1)], None, None
        if self.windows is not None:
            n = len(self.windows)
            if X is not None and _n_rows(X) != n:
                raise ValidationError(f"X has {_n_rows(X)} rows but the manifest gives {n} windows of "
                                      f"{self.windows.length} (stride {self.windows.stride}); pass groups= to map "
                                      "rows to recordings")
            return self.windows.recording, self.windows.start, self.windows.stop
        n = len(self.table)
        if X is not None and _n_rows(X) != n:
            raise ValidationError(f"X has {_n_rows(X)} rows but the manifest has {n} recordings; pass window= or "
                                  "groups=")
        return np.arange(n, dtype=np.int64), None, None

    def split(self, X=None, y=None, groups=None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(train_index, test_index)`` per fold, each audited first."""
        rec, start, stop = self._rows(X, groups)
        for a in self.assignments:
            side = a.side[rec]
            audit = audit_rows(self.table, rec, side, start, stop, claims=a.claims)
            audit.raise_if_failed()
            yield np.flatnonzero(side == TRAIN), np.flatnonzero(side == TEST)

    def __repr__(self) -> str:
        return f"ProtocolSplitter(protocol={self.protocol!r}, n_splits={len(self.assignments)})"


def _n_rows(X) -> int:
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape):
        return int(shape[0])
    return len(X)
