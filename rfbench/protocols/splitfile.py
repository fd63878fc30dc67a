"""Split files as later stages read them: ``rfbench.split/1`` documents re-checked against their manifest,
row → recording ids, and the manifest a split names (DESIGN.md §6, §7a, §11).

Nothing a split file says about itself is believed. :func:`check_split_file` reads the file and its manifest
(checking the manifest's sha256 against the one the split recorded), **recomputes** the protocol's assignment
from the manifest, the protocol, the seed and the parameters, and audits the file's sides with the claims of
rfbench's own protocol table (:data:`rfbench.protocols.split.PROTOCOLS`) — never the file's ``claims``,
``leakage_prone``, ``audit`` or ``synthetic`` keys. :func:`load_split` is what scoring uses: it refuses
(:class:`~rfbench.errors.LeakageError`, exit 1) a split whose sides are not what its protocol gives, or whose
audit fails, and returns a :class:`SplitInfo` whose every flag was derived here. Whether the data is
generated (SYNTHETIC) follows the manifest's provenance — the generators' marker recorded at ingest, or the
marker file in the dataset folder itself — and nothing downstream can remove it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

import numpy as np

from rfbench.errors import FormatError, LeakageError, ValidationError
from rfbench.io.files import load_npy, read_json, read_json_hashed

__all__ = [
    "SplitInfo",
    "SplitCheck",
    "check_split_file",
    "named_manifest",
    "load_split",
    "load_groups",
    "as_groups",
    "check_side",
    "manifest_records",
    "manifest_subjects",
    "data_provenance",
    "CHECK_REPRODUCES",
]

#: The audit check that a split file's sides are exactly what its protocol, seed and parameters give.
CHECK_REPRODUCES = "protocol-reproduces"
#: The generators' marker file (rfbench.datasets.synthetic); its presence in a dataset folder means SYNTHETIC.
SYNTHETIC_MARKER = "RFBENCH_SYNTHETIC.json"
_SHOW = 5


def data_provenance(manifest, manifest_file: Path | None) -> dict[str, Any]:
    """Where the data comes from, as far as rfbench can tell: ``{synthetic, data}``.

    Synthetic when the manifest records the generators' marker (``synthetic: true``, written by ingest) or
    when the marker file sits in the dataset folder the manifest names, its ``CSI`` folder or any folder above
    it, as written or as it really is (:func:`rfbench.datasets.tree.marker_folders`; checked without reading it):
    a generated tree ingested from a folder inside it (a date folder, by a template, or through a link to one)
    is still generated. A manifest edited to drop the flag still loses to the marker in the tree; a
    marker deleted before ingest cannot be detected (docs/verify.md, threat model).
    """
    from rfbench.datasets.tree import marker_folders

    root = manifest.root_dir(manifest_file)
    found = [p for p in (root, root / "CSI", *marker_folders(root)) if (p / SYNTHETIC_MARKER).is_file()]
    chosen = _selection(manifest)
    if manifest.synthetic:
        return {"synthetic": True, "data": "synthetic: the manifest records the generators' marker "
                                           f"({SYNTHETIC_MARKER}) found by ingest" + chosen}
    if found:
        return {"synthetic": True, "data": f"synthetic: the generators' marker ({SYNTHETIC_MARKER}) is in the "
                                           "dataset folder, although the manifest does not record it" + chosen}
    return {"synthetic": False, "data": f"no generators' marker recorded at ingest or present in the dataset "
                                        f"folder ({manifest.dataset} manifest)" + chosen}


def _selection(manifest) -> str:
    """Which of the tree's files the manifest holds, when ingest did not take them all: the template that named
    the recordings (``ingest files``) and which of its fields gave each role (subject, label, ...), how many of
    the tree's files it matched, and how many problems ingest
    recorded (files left out, or flagged). A template can pick a subset of a corpus (one repetition of each
    gesture), and the report must say so, not only its manifest."""
    template, tree = manifest.extra.get("template"), manifest.extra.get("tree")
    parts = []
    if isinstance(template, Mapping) and isinstance(template.get("text"), str):
        roles = manifest.extra.get("roles")
        roles = {k: v for k, v in roles.items() if isinstance(k, str) and isinstance(v, str)} \
            if isinstance(roles, Mapping) else {}
        # which field is the subject (or the label, the room...) is the ingesting party's choice: the report shows
        # it, so a subject taken from the repetition number reads as one
        said = f" ({', '.join(f'{role} from its field {field!r}' for role, field in sorted(roles.items()))})" \
            if roles else ""
        parts.append(f"recordings named by the template {template['text']!r}{said}")
    if isinstance(tree, Mapping) and all(isinstance(tree.get(k), int) and not isinstance(tree.get(k), bool)
                                         for k in ("files", "matched")):
        # the tree's own folder name: a manifest whose root is a subfolder of a corpus (one distance of WiAR) has
        # every file of its tree matched, and must not read as the whole corpus
        name = PurePosixPath(str(manifest.root).replace("\\", "/")).name if isinstance(manifest.root, str) else ""
        of = f"the {tree['files']} files of the tree {name!r}" if name and name not in (".", "..") else \
            f"the tree's {tree['files']} files"
        parts.append(f"{tree['matched']} of {of} matched")
    if manifest.problems:
        parts.append(f"{len(manifest.problems)} problem(s) recorded by ingest (files left out or flagged, listed "
                     f"in the manifest)")
    return "; " + ", ".join(parts) if parts else ""


@dataclass(frozen=True)
class SplitInfo:
    """A split re-checked against its manifest: every field derived by rfbench, none read from the file's own
    flags (see the module docstring)."""

    train: frozenset
    test: frozenset
    protocol: str
    seed: Any
    params: Mapping[str, Any]
    leakage_prone: bool
    audit: Mapping[str, Any]
    synthetic: bool
    manifest: Mapping[str, Any] | None
    path: Path | None = None
    held_out: tuple = ()
    manifest_file: Path | None = None
    recordings: Mapping[str, Mapping] = field(default_factory=dict, repr=False)
    provenance: Mapping[str, Any] = field(default_factory=dict)
    dataset: str | None = None  # the manifest's dataset name
    #: the Manifest the sides were recomputed and audited on (so a job builds from the very manifest checked,
    #: without reading it again)
    manifest_object: Any = field(default=None, repr=False, compare=False)
    #: of a manifest holding both Widar3.0 releases, the one a report's rows come from (its index's ``release``):
    #: the sides then hold that release's recordings only (set by score, never read from a file)
    release: str | None = None
    #: the sha256 of the bytes the split was read from (None for a split given as a document)
    sha256: str | None = None

    @property
    def held_out_key(self) -> str | None:
        """The domain key whose values the split holds out (``params.domain``), if any."""
        key = self.params.get("domain") if isinstance(self.params, Mapping) else None
        return key if isinstance(key, str) else None

    def to_report(self) -> dict[str, Any]:
        """The report's ``split`` section."""
        return {
            "protocol": self.protocol,
            "seed": self.seed,
            "params": dict(self.params),
            "leakage_prone": self.leakage_prone,
            "audit": {"passed": bool(self.audit.get("passed")), "checks": list(self.audit.get("checks", [])),
                      # the domains the protocol does not hold out, on both sides (from the audit rfbench ran)
                      "shared": [{"key": x["key"], "shared": x["shared"], "values": x["values"]}
                                 for x in self.audit.get("shared", []) if x.get("shared")]},
            "synthetic": self.synthetic,
            "train_recordings": len(self.train),
            "test_recordings": len(self.test),
            "manifest_sha256": (self.manifest or {}).get("sha256"),
            "dataset": self.dataset,
            "held_out": {"key": self.held_out_key, "values": list(self.held_out)},
            "checked": "sides recomputed from the manifest, protocol, seed and parameters, and audited with the "
                       "protocol's own claims",
            **({"release": self.release} if self.release is not None else {}),
        }


@dataclass
class SplitCheck:
    """What :func:`check_split_file` found: the file, its manifest, the recomputed assignment and the audits."""

    doc: dict
    where: str
    manifest: Any  # rfbench.datasets.manifest.Manifest
    manifest_file: Path
    manifest_sha256: str
    assignment: Any  # rfbench.protocols.split.Assignment
    file_side: np.ndarray
    differences: list[str]
    audit: Any  # AuditResult of the file's sides, claims from the protocol table, plus CHECK_REPRODUCES
    provenance: dict
    content: Any = None  # rfbench.protocols.content.ContentAudit when content was checked
    table: Any = None  # the manifest's RecordingTable the sides were recomputed on (built once)
    split_sha256: str | None = None  # of the bytes ``doc`` was parsed from (None when ``doc`` was given)

    @property
    def spec(self):
        from rfbench.protocols.split import PROTOCOLS

        return PROTOCOLS[self.assignment.protocol]

    def info(self, path: Path | None) -> SplitInfo:
        a = self.assignment
        ids = (self.table if self.table is not None else self.manifest.table()).ids
        from rfbench.protocols.split import TEST, TRAIN

        return SplitInfo(
            train=frozenset(ids[k] for k in np.flatnonzero(a.side == TRAIN)),
            test=frozenset(ids[k] for k in np.flatnonzero(a.side == TEST)),
            protocol=a.protocol, seed=a.seed, params=dict(a.params), leakage_prone=bool(a.leakage_prone),
            audit=self.audit.to_dict(), synthetic=bool(self.provenance["synthetic"]),
            manifest={"path": (self.doc.get("manifest") or {}).get("path"), "sha256": self.manifest_sha256},
            path=path, held_out=tuple(a.held_out), manifest_file=self.manifest_file,
            recordings={str(r["id"]): r for r in self.manifest.recordings}, provenance=dict(self.provenance),
            dataset=str(self.manifest.dataset), manifest_object=self.manifest, sha256=self.split_sha256)


def _ids(doc: Mapping, key: str, where: str) -> list[str]:
    ids = doc.get(key)
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise FormatError(f"{where}: split key {key!r} must be a list of recording ids (strings)")
    return ids


def _manifest_file(doc: Mapping, path: Path | None, manifest: str | os.PathLike | None, where: str) -> Path:
    if manifest is not None:
        return Path(manifest)
    ref = doc.get("manifest")
    if not isinstance(ref, Mapping) or not isinstance(ref.get("path"), str) or not ref["path"]:
        raise FormatError(f"{where}: the split names no manifest; pass the manifest it was made from")
    base = path.parent if path is not None else Path(".")
    return base / ref["path"]


def named_manifest(path: str | os.PathLike) -> Path:
    """The manifest a split file names (relative to the split's folder), without checking anything else."""
    path = Path(path)
    return _manifest_file(read_json(path, "split"), path, None, str(path))


def _reassign(doc: Mapping, table, where: str):
    """The assignment the split's protocol, seed and parameters give on ``table``."""
    from rfbench.protocols.split import PROTOCOLS, assign

    protocol = doc.get("protocol")
    if not isinstance(protocol, str) or protocol not in PROTOCOLS:
        raise FormatError(f"{where}: unknown protocol {protocol!r}; rfbench knows {', '.join(PROTOCOLS)}")
    seed = doc.get("seed")
    params = doc.get("params")
    if not isinstance(params, Mapping):
        raise FormatError(f"{where}: split key 'params' must be an object")
    allowed = PROTOCOLS[protocol].params + ("gestures",)
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise FormatError(f"{where}: protocol {protocol} takes no parameter {unknown[0]!r}")
    kwargs = {k: params[k] for k in allowed if k in params}
    if protocol == "leave-one-domain-out":
        held = doc.get("held_out")
        if not isinstance(held, list) or len(held) != 1:
            raise FormatError(f"{where}: a leave-one-domain-out split holds out exactly one value ('held_out')")
        kwargs["test"] = [held[0]]
    try:
        assignments = assign(table, protocol, seed=seed, allow_leaky=True, **kwargs)
    except ValidationError as exc:
        raise FormatError(f"{where}: its protocol and parameters do not apply to the manifest ({exc})") from None
    return assignments[0]


def check_split_file(path: str | os.PathLike | None, manifest: str | os.PathLike | None = None, *,
                     doc: Mapping | None = None, claims=(), content: bool = False, min_shared: int | None = None,
                     progress=None, on_total=None) -> SplitCheck:
    """Read a split file and its manifest, recompute the assignment and audit the file's sides.

    Parameters
    ----------
    path : path-like
        The ``rfbench.split/1`` file (``doc`` may be given instead, already read).
    manifest : path-like, optional
        The manifest to check against; default the one the split names (relative to the split's folder).
        Its sha256 must be the one the split recorded.
    claims : iterable of str
        Further domain keys to require disjoint, beside the protocol's own claims.
    content : bool
        Also fingerprint both sides' files (:mod:`rfbench.protocols.content`): the same content on both sides
        under any ids fails the audit. Done too whenever the split was made with a content audit (its
        ``audit.content``), at the default threshold — a check the file asked for is redone, never trusted.
    min_shared, progress, on_total
        The content check's threshold (default :data:`rfbench.protocols.content.DEFAULT_MIN_SHARED`) and
        progress callbacks: ``on_total(n_files)`` once, then ``progress(n_files)``.

    Raises
    ------
    FormatError, SchemaError, ValidationError
        Unreadable or malformed split or manifest, a manifest other than the split's, parameters that do not
        apply (exit 2).
    """
    from rfbench.datasets.manifest import read_manifest_hashed
    from rfbench.protocols.leakage import audit_rows
    from rfbench.protocols.split import EXCLUDED, TEST, TRAIN, refuse_unseen_classes

    path = Path(path) if path is not None else None
    where = str(path) if path is not None else "split"
    split_sha256 = None
    if doc is None:
        doc, split_sha256 = read_json_hashed(path, "split")
    train, test = _ids(doc, "train", where), _ids(doc, "test", where)
    mfile = _manifest_file(doc, path, manifest, where)
    m, digest = read_manifest_hashed(mfile)  # (one read: the digest checked is of the recordings used)
    recorded = (doc.get("manifest") or {}).get("sha256") if isinstance(doc.get("manifest"), Mapping) else None
    if recorded is not None and recorded != digest:
        raise ValidationError(f"{mfile}: not the manifest the split {where} was made from (its sha256 differs from "
                              f"the one the split recorded); give that manifest, or rebuild the split")
    table = m.table()
    index = table.index_of()
    unknown = [i for i in train + test if i not in index]
    if unknown:
        raise FormatError(f"{where}: {len(unknown)} recording id(s) are not in the manifest (e.g. {unknown[0]!r})")
    a = _reassign(doc, table, where)
    try:
        refuse_unseen_classes([a], m.recordings, str(doc.get("protocol")), m.dataset)
    except ValidationError as exc:
        raise ValidationError(f"{where}: {exc}") from None
    file_side = np.full(len(table), EXCLUDED, dtype=np.int8)
    rows = np.array([index[i] for i in train] + [index[i] for i in test], dtype=np.int64)
    sides = np.array([TRAIN] * len(train) + [TEST] * len(test), dtype=np.int8)
    file_side[rows[sides == TRAIN]] = TRAIN
    file_side[rows[sides == TEST]] = TEST
    names = {TRAIN: "train", TEST: "test", EXCLUDED: "neither side"}
    differences = [f"{table.ids[k]} is on {names[int(file_side[k])]} in the file but on {names[int(a.side[k])]} "
                   f"under the protocol" for k in np.flatnonzero(file_side != a.side)]
    both = len(set(train) & set(test))
    if both:
        differences.insert(0, f"{both} recording(s) are listed on both sides")
    for side, ids in (("test", test), ("train", train)):  # rfbench lists each once: the audit would count copies
        again = len(ids) - len(set(ids))
        if again:
            differences.insert(0, f"{again} recording id(s) are listed again on the {side} side")
    claimed = list(dict.fromkeys(list(a.claims) + list(claims)))
    audit = audit_rows(table, rows, sides, claims=claimed)
    detail = (f"the file's sides are what {a.protocol} with seed {a.seed} and its parameters give on this manifest"
              if not differences else
              f"{len(differences)} difference(s) from what {a.protocol} with seed {a.seed} gives on this manifest: "
              + "; ".join(differences[:_SHOW]) + (" …" if len(differences) > _SHOW else ""))
    audit.checks.insert(0, {"name": CHECK_REPRODUCES, "passed": not differences, "detail": detail})
    audit.passed = audit.passed and not differences
    stored = doc.get("audit")
    if content or (isinstance(stored, Mapping) and stored.get("content") is not None):
        from rfbench.protocols.content import DEFAULT_MIN_SHARED, audit_content, with_content

        found = audit_content(m, train, test, manifest_path=mfile, progress=progress, on_total=on_total,
                              min_shared=DEFAULT_MIN_SHARED if min_shared is None else min_shared)
        audit = with_content(audit, found)
    else:
        found = None
    return SplitCheck(dict(doc), where, m, mfile, digest, a, file_side, differences, audit,
                      data_provenance(m, mfile), found, table, split_sha256)


def declared_split(path: str | os.PathLike) -> dict | None:
    """A split file's document, unchecked; None when the file does not read.

    Only for choosing what to load or start ahead of a job (a wrong word costs time, never a result): everything
    a result depends on comes from :func:`load_split`.
    """
    try:
        return read_json(path, "split")
    except (FormatError, ValidationError):
        return None


def declared_dataset(path: str | os.PathLike) -> str | None:
    """The dataset name a split file declares (``dataset``), unchecked (:func:`declared_split`)."""
    name = (declared_split(path) or {}).get("dataset")
    return name if isinstance(name, str) else None


def load_split(path: str | os.PathLike, manifest: str | os.PathLike | None = None) -> SplitInfo:
    """Read a split file, re-check it against its manifest (:func:`check_split_file`) and return what scoring
    may rely on.

    Parameters
    ----------
    path : path-like
        The ``rfbench.split/1`` file.
    manifest : path-like, optional
        The manifest it was made from (default: the one it names, relative to its folder).

    Returns
    -------
    SplitInfo
        Its sides, protocol, parameters, audit, leakage-proneness and provenance — all recomputed from the
        manifest and rfbench's protocol table, none read from the file's own flags.

    Raises
    ------
    LeakageError
        The file's sides are not what its protocol gives (a recording moved, added or removed), or the audit
        of those sides fails (exit 1).
    FormatError, SchemaError, ValidationError
        As :func:`check_split_file` (exit 2).

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> import rfbench
    >>> from rfbench.io.files import sha256_file
    >>> d = Path(tempfile.mkdtemp())
    >>> recordings = [{"id": f"r{i}", "files": [], "frames": 10, "subject": f"s{i % 4}"} for i in range(8)]
    >>> rfbench.Manifest("mine", ".", recordings).write(d / "manifest.json")
    PosixPath(...)
    >>> ref = {"path": "manifest.json", "sha256": sha256_file(d / "manifest.json")[0]}
    >>> (outcome,) = rfbench.make_splits(d / "manifest.json", "cross-subject", test=["s3"], manifest_ref=ref)
    >>> _ = (d / "split.json").write_text(json.dumps(outcome.document))
    >>> split = rfbench.load_split(d / "split.json")
    >>> sorted(split.test), split.leakage_prone, split.audit["passed"]
    (['r3', 'r7'], False, True)
    """
    path = Path(path)
    check = check_split_file(path, manifest)
    if check.differences:
        raise LeakageError(f"{path}: the split's sides are not what its protocol gives ("
                           + check.audit.checks[0]["detail"] + "); a split edited by hand is not scored — rebuild "
                           "it with rfbench split", checks=check.audit.failed)
    if not check.audit.passed:
        raise LeakageError(f"{path}: {check.audit.error()}; a leaked split is not scored", checks=check.audit.failed)
    return check.info(path)


def as_groups(ids, n_rows: int, option: str = "`groups`") -> np.ndarray:
    """Row → recording ids as a unicode array; integers are compared as their decimal strings."""
    ids = np.asarray(ids)
    if ids.dtype.kind not in "Uiu":
        raise FormatError(f"{option}: recording ids must be a unicode string or integer array, found dtype {ids.dtype}")
    if ids.ndim != 1 or ids.shape[0] != n_rows:
        raise ValidationError(f"{option}: expected one recording id per row ({n_rows} rows), got shape {ids.shape}")
    return ids.astype(str)


def load_groups(path: str | os.PathLike, n_rows: int, option: str = "`groups`") -> np.ndarray:
    """Load a ``.npy`` of recording ids (no pickles) and check it has one id per row."""
    return as_groups(load_npy(path, option), n_rows, option)


def check_side(ids: np.ndarray, split: SplitInfo, side: str, option: str) -> None:
    """Every id in ``ids`` must be on the split's ``side`` (``train`` or ``test``)."""
    allowed = split.train if side == "train" else split.test
    other = split.test if side == "train" else split.train
    unique = np.unique(ids)
    outside = [str(u) for u in unique if str(u) not in allowed]
    if outside:
        where = ("on the split's " + ("test" if side == "train" else "train") + " side"
                 if outside[0] in other else "in neither side of the split")
        purpose = ("a baseline must come from training data only" if side == "train"
                   else "scored rows must come from the test side")
        raise ValidationError(f"{option}: {len(outside)} of {len(unique)} recording ids are not on the split's "
                              f"{side} side (e.g. {outside[0]!r} is {where}); {purpose}")


def manifest_records(split: SplitInfo, purpose: str = "") -> tuple[dict[str, dict], Path]:
    """Recording id → recording (the manifest's dict) of the split's manifest, checked when the split was
    loaded; and the manifest's path (an input of the report)."""
    if split.manifest_file is None:
        raise ValidationError(f"{purpose or 'this'} needs the split's manifest, but the split was built without one")
    return dict(split.recordings), split.manifest_file


def manifest_subjects(split: SplitInfo) -> tuple[dict[str, str], Path]:
    """Recording id → subject from the split's manifest; and the manifest's path."""
    recs, path = manifest_records(split, "clustering by subject")
    return {rid: str(r["subject"]) for rid, r in recs.items() if r.get("subject") is not None}, path
