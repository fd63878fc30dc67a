"""Content-level leakage: the same data on both sides of a split under different names (DESIGN.md §6).

The id audit (:mod:`rfbench.protocols.leakage`) checks recordings, windows and domain keys. It cannot see the
same bytes filed under two names: a log copied under another user, a log spliced from two recordings, an MM-Fi
frame duplicated across subjects, a recording re-exported under a new name. This module fingerprints the files
of both sides and finds what they share, whatever the ids say.

What is fingerprinted
---------------------
Every file a recording of the split lists in the manifest (``files: [{path, bytes, ...}]``, relative to the
manifest's ``root``, see :meth:`Manifest.root_dir`):

- **whole files**: the ``sha256`` recorded at ingest in the file entry, or computed from the file when the entry
  has none. Empty (0-byte) files are not fingerprinted (they would all match); they are counted.
- **Intel 5300 records**, for files ending in ``.dat``, every file of an ``ingest files`` corpus (each framed as
  a log whatever its name), and files of ``kind`` ``intel5300``/``bfee``: each valid bfee record's CSI values
  in the parser's order (after its antenna permutation), each by its squared magnitude (not its header, whose
  timestamp a copier can move, nor the payload bits the parser does not read; a copy with real and imaginary
  parts swapped, a sign flipped or conjugated gives a model the same amplitudes and is the same record:
  :func:`~rfbench.protocols.fingerprints.bfee_content`), found by the parser's own framing kernel
  (:func:`rfbench.io.intel5300.record_spans`), so the records are exactly those ``rfbench parse`` returns.
- **MM-Fi frames**, for file entries of ``kind: "wifi-frame"``: the frame's ``CSIamp`` array read through
  :mod:`rfbench.io.matv5` — the array, not the file bytes, so a frame re-saved (compressed, another MATLAB
  version) is still recognised, and not ``CSIphase``, so a copy with its phase changed is too. Values are
  hashed as little-endian float64 in C order with ``-0.0`` written as ``0.0`` and every NaN as the one quiet
  NaN, so equal arrays hash equally.

Each record and frame also has a **phase fingerprint** — an Intel 5300 record's values' directions (each pair
divided by the greatest common divisor of its parts), another hardware's record's phases as ``windows`` computes
them (float32), an MM-Fi frame's ``CSIphase`` as float32 — since a model given ``--features phase`` sees the same
input in a copy whose amplitudes were scaled. Two units equal by their amplitudes **or** by their phases are one
content (:func:`~rfbench.protocols.content_matches._joined`); units whose values all point one way have no phase
fingerprint.

Records and frames in which no value is both finite and non-zero (all-zero CSI, all-NaN frames) are **not**
fingerprinted — they would all match one another — and are counted as ``zero`` or ``non_finite``; nor is the
file of such a frame (blank frames written by one program are byte-identical without being copies; a bfee
log keeps its whole-file fingerprint, since its headers hold timestamps). A frame file that cannot be parsed
keeps its whole-file fingerprint and is counted (``unparsed``) and listed.

The hash
--------
XXH64 (xxHash's 64-bit hash, ``doc/xxhash_spec.md`` of the xxHash repository, seed 0), computed by a Numba
kernel over every record of a batch of files at once, on several threads only for batches of at least
:data:`~rfbench.protocols.fingerprints.PARALLEL_MIN_BYTES` (:func:`hash_spans`, :func:`bfee_fingerprints`). A
64-bit hash only proposes matches: every match is **confirmed by comparing the bytes** (records, whole files)
or the arrays (frames) before it counts, so a hash collision can never become a leak verdict (collisions are
counted instead). Whole-file digests recorded in the manifest are confirmed the same way.

Verdict
-------
Two recordings on opposite sides **leak** when they share a file (identical bytes, any file) or at least
``min_shared`` records or frames (distinct contents present in both). The default, 1
(:data:`DEFAULT_MIN_SHARED`), is justified in ``docs/content-leakage.md``: a bfee record (what
is hashed: not its header, whose timestamp a copier can move) holds at least 30 noisy CSI values, an
MM-Fi frame 6,840 float64 values; degenerate ones
are excluded; so one shared record is already a copy, not chance, and one MM-Fi frame is one scored sample.
Shares below the threshold are listed as information. Content shared by two recordings of one side (or twice
inside one recording) is reported under ``within`` — it inflates sample counts and narrows bootstrap
intervals — but is not a leak.

A content class (one file content, record or frame) found in more than :data:`WIDESPREAD_RECORDINGS`
recordings is reported per recording (``widespread``) instead of per pair, so the work stays linear in the
number of records whatever the input; it is a leak when a recording shares ``min_shared`` such classes (or one
such file) with the other side.

Memory: about 17 bytes per record or frame (its hash, status and file), twice that while sorting the hashes,
plus the batch being read (16 MiB of files); candidates are confirmed in chunks of about
:data:`~rfbench.protocols.content_matches.CONFIRM_BYTES` of their content, re-read from the files.

Where each part lives (the public names are importable from here): :mod:`rfbench.protocols.fingerprints`
(XXH64, bfee record bodies, MM-Fi frame values), :mod:`rfbench.protocols.content_index` (the pass over a
manifest, :func:`fingerprint`, :class:`ContentIndex`), :mod:`rfbench.protocols.content_matches` (hash matches
confirmed into content classes, and which recordings hold each), :mod:`rfbench.protocols.content_findings`
(judging one assignment of recordings to sides: :class:`ContentAudit`). This module holds the entry points
on split documents: :func:`audit_content`, :func:`audit_split_content`, :func:`add_content`.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Mapping

from rfbench.protocols.content_findings import CHECK_CONTENT, ContentAudit
from rfbench.protocols.content_index import (
    DEFAULT_MIN_SHARED,
    MAX_MIN_SHARED,
    ContentIndex,
    check_min_shared,
    fingerprint,
)
from rfbench.protocols.content_matches import WIDESPREAD_RECORDINGS
from rfbench.protocols.fingerprints import bfee_fingerprints, frame_values, hash_spans, xxh64

__all__ = [
    "DEFAULT_MIN_SHARED",
    "MAX_MIN_SHARED",
    "WIDESPREAD_RECORDINGS",
    "CHECK_CONTENT",
    "xxh64",
    "hash_spans",
    "bfee_fingerprints",
    "frame_values",
    "ContentIndex",
    "ContentAudit",
    "fingerprint",
    "audit_content",
    "audit_split_content",
    "with_content",
    "add_content",
    "document_sides",
    "check_min_shared",
]


# ----------------------------------------------------------------------------------------------------------
# Split documents
# ----------------------------------------------------------------------------------------------------------


def document_sides(doc: Mapping) -> tuple[list[str], list[str]]:
    """The recording ids of a split document's ``train`` and ``test`` sides (window entries ``{id, start,
    stop}`` count as their recording), each in first-seen order."""
    out = []
    for key in ("train", "test"):
        seen: dict[str, None] = {}
        for entry in doc.get(key) or []:
            rid = entry if isinstance(entry, str) else entry.get("id") if isinstance(entry, Mapping) else None
            if isinstance(rid, str):
                seen.setdefault(rid)
        out.append(list(seen))
    return out[0], out[1]


def _split_sides(split_file, manifest_path) -> tuple[Any, list[str], list[str]]:
    from rfbench.datasets.manifest import read_manifest
    from rfbench.io.files import read_json

    train, test = document_sides(read_json(split_file))
    return read_manifest(manifest_path), train, test


def audit_split_content(split_file: str | os.PathLike, manifest_path: str | os.PathLike, *,
                        min_shared: int = DEFAULT_MIN_SHARED,
                        progress: Callable[[int], None] | None = None,
                        on_total: Callable[[int], None] | None = None) -> ContentAudit:
    """:func:`audit_content` of a split file's two sides (an rfbench split or a plain ``{"train", "test"}``
    document; windows count as their recording) against the manifest at ``manifest_path``."""
    m, train, test = _split_sides(split_file, manifest_path)
    return audit_content(m, train, test, manifest_path=manifest_path, min_shared=min_shared, progress=progress,
                         on_total=on_total)


def audit_content(manifest, train: Iterable[str], test: Iterable[str], *,
                  manifest_path: str | os.PathLike | None = None, min_shared: int = DEFAULT_MIN_SHARED,
                  progress: Callable[[int], None] | None = None,
                  on_total: Callable[[int], None] | None = None) -> ContentAudit:
    """Fingerprint the recordings of both sides and judge them (:func:`fingerprint`, then
    :meth:`ContentIndex.audit`)."""
    min_shared = check_min_shared(min_shared)
    train, test = list(train), list(test)
    index = fingerprint(manifest, manifest_path, recordings=set(train) | set(test), progress=progress,
                        on_total=on_total)
    return index.audit(train, test, min_shared)


def with_content(result, content: ContentAudit):
    """The id audit ``result`` (:class:`~rfbench.protocols.leakage.AuditResult`) with the content check added:
    it passes only if both do."""
    from rfbench.protocols.leakage import AuditResult

    checks = [c for c in result.checks if c.get("name") != CHECK_CONTENT] + [content.check()]
    return AuditResult(passed=all(c["passed"] for c in checks), checks=checks, shared=list(result.shared))


def add_content(outcomes, manifest, *, manifest_path: str | os.PathLike | None = None,
                min_shared: int = DEFAULT_MIN_SHARED, progress: Callable[[int], None] | None = None,
                on_total: Callable[[int], None] | None = None) -> ContentIndex:
    """Add the content check to splits made by :func:`rfbench.protocols.split.make_splits`: the recordings they
    assign are fingerprinted once, each split judged; every outcome's ``audit`` gains the ``content-disjoint``
    check and its document's ``audit`` the ``content`` findings. Returns the fingerprints."""
    min_shared = check_min_shared(min_shared)
    ids = {rid for o in outcomes for side in ("train", "test") for rid in o.document[side]}
    index = fingerprint(manifest, manifest_path, recordings=ids, progress=progress, on_total=on_total)
    for o in outcomes:
        found = index.audit(o.document["train"], o.document["test"], min_shared)
        o.audit = with_content(o.audit, found)
        o.document["audit"] = {**o.audit.to_dict(), "content": found.to_dict()}
    return index
