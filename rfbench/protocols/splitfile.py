"""Split files as later stages read them: ``rfbench.split/1`` documents, row → recording ids, and the
manifest a split names (DESIGN.md §6, §11).

:func:`load_split` reads and checks a split file into a :class:`SplitInfo`; :func:`check_side` checks that
row → recording ids lie on one side of it; :func:`manifest_records` reads the split's manifest after checking
its sha256.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from rfbench.errors import FormatError, LeakageError, ValidationError
from rfbench.io.files import load_npy, read_json, sha256_file

__all__ = [
    "SplitInfo",
    "load_split",
    "split_from_dict",
    "load_groups",
    "as_groups",
    "check_side",
    "manifest_path",
    "manifest_records",
    "manifest_subjects",
]


@dataclass(frozen=True)
class SplitInfo:
    """A split file's content that scoring needs (DESIGN.md §11)."""

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
            "audit": {"passed": bool(self.audit.get("passed")), "checks": list(self.audit.get("checks", []))},
            "synthetic": self.synthetic,
            "train_recordings": len(self.train),
            "test_recordings": len(self.test),
            "manifest_sha256": (self.manifest or {}).get("sha256"),
            "held_out": {"key": self.held_out_key, "values": list(self.held_out)},
        }


def load_split(path: str | os.PathLike) -> SplitInfo:
    """Read and check a ``rfbench.split/1`` file (see :func:`split_from_dict`)."""
    path = Path(path)
    return split_from_dict(read_json(path, "split"), str(path), path)


def split_from_dict(obj: Mapping[str, Any], where: str = "split", path: Path | None = None) -> SplitInfo:
    """Check a split's keys and its audit.

    Raises
    ------
    FormatError
        A required key is missing or has the wrong type.
    LeakageError
        The audit did not pass, or a recording is on both sides.
    """
    def need(key, types, what):
        if key not in obj or not isinstance(obj[key], types):
            raise FormatError(f"{where}: split key {key!r} must be {what}")
        return obj[key]

    train = need("train", list, "a list of recording ids")
    test = need("test", list, "a list of recording ids")
    for side, ids in (("train", train), ("test", test)):
        if not all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in ids):
            raise FormatError(f"{where}: split {side} must list recording ids (strings)")
    audit = need("audit", dict, "an object {passed, checks}")
    if not isinstance(audit.get("passed"), bool):
        raise FormatError(f"{where}: split audit.passed must be true or false")
    leaky = need("leakage_prone", (bool,), "true or false")
    protocol = need("protocol", str, "the protocol name")
    synthetic = obj.get("synthetic", False)
    if not isinstance(synthetic, bool):
        raise FormatError(f"{where}: split key 'synthetic' must be true or false")
    manifest = obj.get("manifest")
    if manifest is not None and not isinstance(manifest, dict):
        raise FormatError(f"{where}: split key 'manifest' must be an object {{path, sha256}}")
    checks = audit.get("checks", [])
    if not isinstance(checks, list) or not all(isinstance(c, dict) for c in checks):
        raise FormatError(f"{where}: split audit.checks must be a list of {{name, passed, detail}} objects")
    if not audit["passed"]:
        failed = [c for c in checks if isinstance(c, dict) and not c.get("passed")]
        detail = "; ".join(f"{c.get('name')}: {c.get('detail')}" for c in failed) or "no detail given"
        raise LeakageError(f"{where}: the split's audit did not pass ({detail}); a leaked split is not scored — "
                           f"rebuild it with rfbench split", checks=failed)
    train_set = frozenset(str(i) for i in train)
    test_set = frozenset(str(i) for i in test)
    both = sorted(train_set & test_set)
    if both:
        raise LeakageError(f"{where}: {len(both)} recording(s) are on both sides (e.g. {both[0]!r}) although the "
                           f"audit says passed; rebuild the split with rfbench split",
                           checks=[{"name": "recording-disjoint", "passed": False, "detail": f"{len(both)} shared"}])
    held_out = obj.get("held_out", [])
    if not isinstance(held_out, list):
        raise FormatError(f"{where}: split key 'held_out' must be a list of domain values")
    return SplitInfo(train_set, test_set, protocol, obj.get("seed"), dict(obj.get("params") or {}), leaky,
                     dict(audit), synthetic, manifest, path, tuple(held_out))


def as_groups(ids, n_rows: int, option: str = "--groups") -> np.ndarray:
    """Row → recording ids as a unicode array; integers are compared as their decimal strings."""
    ids = np.asarray(ids)
    if ids.dtype.kind not in "Uiu":
        raise FormatError(f"{option}: recording ids must be a unicode string or integer array, found dtype {ids.dtype}")
    if ids.ndim != 1 or ids.shape[0] != n_rows:
        raise ValidationError(f"{option}: expected one recording id per row ({n_rows} rows), got shape {ids.shape}")
    return ids.astype(str)


def load_groups(path: str | os.PathLike, n_rows: int, option: str = "--groups") -> np.ndarray:
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


def manifest_path(split: SplitInfo) -> Path | None:
    """Where the split's manifest should be (relative to the split file, or to its recorded ``root``), or None
    when the split names none."""
    if not split.manifest or not split.manifest.get("path"):
        return None
    base = split.path.parent if split.path is not None else Path(".")
    path = base / split.manifest["path"]
    if not path.exists() and "root" in split.manifest:
        path = Path(split.manifest["root"]) / split.manifest["path"]
    return path


def manifest_records(split: SplitInfo, purpose: str) -> tuple[dict[str, dict], Path]:
    """Recording id → recording (the manifest's dict) from the split's manifest, after checking its sha256.

    Returns the mapping and the manifest's path (an input of the report). ``purpose`` completes the error
    messages ("clustering by subject needs ...").
    """
    path = manifest_path(split)
    if path is None:
        raise ValidationError(f"{purpose} needs the split's manifest, but the split names none")
    if not path.exists():
        raise FormatError(f"{path}: the split's manifest is missing; {purpose} needs it")
    digest, _ = sha256_file(path)
    if split.manifest.get("sha256") and digest != split.manifest["sha256"]:
        raise ValidationError(f"{path}: the manifest changed since the split was made (sha256 differs); "
                              f"rebuild the split")
    man = read_json(path, "manifest")
    recs = man.get("recordings")
    if not isinstance(recs, list):
        raise FormatError(f"{path}: manifest has no recordings list")
    return {str(r["id"]): r for r in recs if isinstance(r, dict) and "id" in r}, path


def manifest_subjects(split: SplitInfo) -> tuple[dict[str, str], Path]:
    """Recording id → subject from the split's manifest, after checking the manifest's sha256.

    Returns the mapping and the manifest's path (an input of the report).
    """
    recs, path = manifest_records(split, "clustering by subject")
    return {rid: str(r["subject"]) for rid, r in recs.items() if r.get("subject") is not None}, path
