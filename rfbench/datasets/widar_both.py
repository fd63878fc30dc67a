"""Both Widar3.0 releases in one manifest: the CSI logs and the BVP profiles computed from them.

Widar3.0 publishes each gesture instance twice: its receivers' CSI logs (``CSI/<date>/…-r<N>.dat``) and the
body-coordinate velocity profiles computed from those logs (``BVP/<date>-VS/…-L<link>.mat``). A study that trains
on one release and tests on the other, or mixes them, must keep a capture on one side: otherwise the test side
holds a transform of a training example. :func:`ingest_both` reads a folder holding ``CSI/`` and ``BVP/`` into
one manifest (``kind: "csi+bvp"``) in which

- every recording names its ``release`` (``csi`` or ``bvp``) and its ``capture``: a CSI recording's is its own
  id (``<date>/<user>-<gesture>-<location>-<orientation>-<repetition>``), a BVP recording's the id of the CSI
  recording of the same capture (the date's CSI gesture table: ``20181205-VS``'s user2 and user3 name
  ``20181205_2`` and ``20181205_3``), so the two are one ``capture`` value;
- the split's draws keep a capture's recordings together (``in-domain`` draws captures) and the audit's
  ``captures-disjoint`` check fails a split with one capture on both sides, whatever the protocol claims;
- ``manifest.extra["captures"]`` counts the captures found in both releases, in the CSI release only and in the
  BVP release only.

``rfbench windows --release csi|bvp`` builds one release's rows from such a split (a row is a CSI window or a
BVP profile, never both). Every file path is relative to the one root; problems of both walks are kept.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from rfbench.datasets.manifest import Manifest
from rfbench.datasets.tree import display_path
from rfbench.errors import ValidationError

__all__ = ["ingest_widar_tree", "ingest_both", "one_release", "KIND", "is_both"]

#: ``manifest.extra["kind"]`` of a manifest holding both releases.
KIND = "csi+bvp"


def is_both(manifest) -> bool:
    """Whether ``manifest`` holds both Widar3.0 releases (made by :func:`ingest_both`)."""
    return manifest.dataset == "widar3" and manifest.extra.get("kind") == KIND


def ingest_widar_tree(root: str | os.PathLike, kind: str | None = None, *, workers: int | None = None,
                      receivers_expected=None, follow_symlinks: bool = False,
                      progress: Callable[[int], None] | None = None,
                      on_total: Callable[[int], None] | None = None) -> Manifest:
    """The manifest of a Widar3.0 folder, what ``rfbench ingest widar`` writes: ``kind`` ``both``
    (:func:`ingest_both`), ``bvp`` (:func:`~rfbench.datasets.widar_bvp.ingest_bvp`), ``csi``
    (:func:`~rfbench.datasets.widar.ingest`), or None for the one
    :func:`~rfbench.datasets.widar_bvp.release_kind` finds.

    Raises
    ------
    ValidationError
        An unknown ``kind``, ``receivers_expected`` for the BVP release, or what the chosen ingest raises.
    """
    from rfbench.datasets import widar, widar_bvp

    options = dict(workers=workers, follow_symlinks=follow_symlinks, progress=progress, on_total=on_total)
    if kind == "both":
        return ingest_both(root, receivers_expected=receivers_expected, **options)
    if kind is not None and kind not in ("csi", "bvp"):
        raise ValidationError(f"`kind` {kind!r}: expected csi, bvp or both")
    if widar_bvp.release_kind(root, kind) == "bvp":
        if receivers_expected is not None:
            raise ValidationError("`receivers` applies to the CSI release only; a BVP file is one recording")
        return widar_bvp.ingest_bvp(root, **options)
    return widar.ingest(root, receivers_expected=receivers_expected, **options)


def ingest_both(root: str | os.PathLike, *, workers: int | None = None, receivers_expected=None,
                follow_symlinks: bool = False, progress: Callable[[int], None] | None = None,
                on_total: Callable[[int], None] | None = None) -> Manifest:
    """Read a Widar3.0 folder holding both ``CSI/`` and ``BVP/`` into one manifest (see the module docstring).

    Parameters
    ----------
    root : path-like
        The folder holding ``CSI/`` and ``BVP/``.
    workers, receivers_expected, follow_symlinks
        As for :func:`rfbench.datasets.widar.ingest` (``receivers_expected`` applies to the CSI release).
    progress, on_total : callable, optional
        ``on_total(n)`` once per release with the number of its files, ``progress(k)`` as they are read.

    Raises
    ------
    ValidationError
        ``root`` does not hold both trees, or either holds no recording.
    """
    from rfbench.datasets import widar, widar_bvp

    root = Path(root)
    if not (root / "CSI").is_dir() or not (root / "BVP").is_dir():
        raise ValidationError(f"{display_path(str(root))}: both releases need the folder holding CSI/ and BVP/ "
                              "(found " + (", ".join(n + "/" for n in ("CSI", "BVP") if (root / n).is_dir())
                                           or "neither") + ")")
    csi = widar.ingest(root, workers=workers, receivers_expected=receivers_expected,
                       follow_symlinks=follow_symlinks, progress=progress, on_total=on_total)
    bvp = widar_bvp.ingest_bvp(root, workers=workers, follow_symlinks=follow_symlinks, progress=progress,
                               on_total=on_total)
    recordings = [{**rec, "release": "csi", "capture": rec["id"]} for rec in csi.recordings]
    recordings += [{**rec, "release": "bvp"} for rec in bvp.recordings]
    recordings.sort(key=lambda rec: rec["id"])  # ids cannot collide: a BVP date folder ends in -VS
    csi_captures = {rec["capture"] for rec in recordings if rec["release"] == "csi"}
    bvp_captures = {rec["capture"] for rec in recordings if rec["release"] == "bvp"}
    problems = sorted(csi.problems + bvp.problems, key=lambda p: (p["path"], p["reason"]))
    extra: dict = {"kind": KIND, "receivers_expected": csi.extra.get("receivers_expected"),
                   "bvp": bvp.extra["bvp"],
                   "captures": {"both": len(csi_captures & bvp_captures), "csi_only": len(csi_captures - bvp_captures),
                                "bvp_only": len(bvp_captures - csi_captures)}}
    marker = csi.extra.get("synthetic_marker") or bvp.extra.get("synthetic_marker")
    if marker is not None:
        extra["synthetic_marker"] = marker
    if follow_symlinks:
        extra["follow_symlinks"] = True
    return Manifest(dataset="widar3", root=os.path.abspath(root), recordings=recordings, problems=problems,
                    synthetic=csi.synthetic or bvp.synthetic, extra=extra)


def one_release(manifest, release: str | None):
    """The manifest of one release of a both-releases manifest (the same root; its recordings of ``release``);
    ``manifest`` itself for any other manifest, which must then not be given a ``release``.

    Raises
    ------
    ValidationError
        A both-releases manifest without ``release``, or ``release`` for a manifest of one release.
    """
    if not is_both(manifest):
        if release is not None:
            raise ValidationError(f"window setting release picks one release of a Widar3.0 manifest of both (rfbench "
                                  f"ingest widar --kind both); this manifest ({manifest.dataset}) holds one")
        return manifest
    if release is None:
        raise ValidationError("this manifest holds both Widar3.0 releases (CSI logs and BVP profiles): give "
                              "--release csi or --release bvp for the rows to build")
    recordings = [rec for rec in manifest.recordings if rec.get("release") == release]
    extra = {k: v for k, v in manifest.extra.items() if k not in ("kind", "bvp", "receivers_expected")}
    if release == "bvp":
        from rfbench.datasets.widar_bvp import DATASET as dataset

        extra.update(kind="bvp", bvp=manifest.extra.get("bvp"))
    else:
        extra["receivers_expected"] = manifest.extra.get("receivers_expected")
        dataset = "widar3"
    return Manifest(dataset=dataset, root=manifest.root, recordings=recordings, problems=manifest.problems,
                    synthetic=manifest.synthetic, extra=extra)
