"""Small dataset trees, manifests and splits for the windows tests (generated, seeded, a few MB at most)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from rfbench.datasets import mmfi, widar
from rfbench.datasets.synthetic import make_mmfi_tree, make_widar_tree, mat_v5_bytes
from rfbench.io.files import sha256_file, write_json
from rfbench.protocols.split import make_splits


def write_split(manifest_path: Path, split_path: Path, protocol: str, **kwargs) -> dict:
    """A split made and audited by rfbench's own protocols (as ``rfbench split`` writes it)."""
    digest, _ = sha256_file(manifest_path)
    ref = {"path": Path(os.path.relpath(manifest_path.resolve(), split_path.parent.resolve())).as_posix(),
           "sha256": digest}
    (outcome,) = make_splits(manifest_path, protocol, manifest_ref=ref, **kwargs)
    outcome.audit.raise_if_failed()
    write_json(split_path, outcome.document, force=True)
    return outcome.document


def edit_manifest(path: Path, change) -> None:
    """Rewrite a manifest after ``change(doc)`` edits its JSON document in place."""
    doc = json.loads(path.read_text())
    change(doc)
    write_json(path, doc, force=True)


def mmfi_case(tmp: Path, *, subjects=("S01", "S02"), actions=("A01", "A02"), frames=5, damage=False, seed=0,
              edit_tree=None, edit=None, test=("S02",)):
    """An MM-Fi-like tree under ``tmp/tree`` with its manifest and a cross-subject split (test = ``test``).
    ``edit_tree(root)`` changes files before ingest, ``edit(doc)`` the manifest after."""
    root = tmp / "tree"
    make_mmfi_tree(root, seed=seed, subjects=subjects, actions=actions, frames=frames, damage=damage)
    if edit_tree is not None:
        edit_tree(root)
    manifest = tmp / "manifest.json"
    mmfi.ingest(root).write(manifest, force=True)
    if edit is not None:
        edit_manifest(manifest, edit)
    split = tmp / "split.json"
    write_split(manifest, split, "cross-subject", test=list(test))
    return root, manifest, split


def widar_case(tmp: Path, *, records=(12, 20), damage=False, seed=0, edit_tree=None, edit=None, test=("3",),
               protocol="cross-room"):
    """A Widar-like tree of real bfee logs with its manifest and a split (default: room 3 held out)."""
    root = tmp / "wtree"
    make_widar_tree(root, seed=seed, records=records, damage=damage)
    if edit_tree is not None:
        edit_tree(root)
    manifest = tmp / "wmanifest.json"
    widar.ingest(root, workers=1).write(manifest, force=True)
    if edit is not None:
        edit_manifest(manifest, edit)
    split = tmp / "wsplit.json"
    write_split(manifest, split, protocol, test=list(test))
    return root, manifest, split


def write_frame(path: Path, amp: np.ndarray, phase: np.ndarray) -> None:
    """An MM-Fi WiFi frame (MAT v5) with these CSIamp and CSIphase arrays."""
    path.write_bytes(mat_v5_bytes({"CSIamp": amp, "CSIphase": phase}))
