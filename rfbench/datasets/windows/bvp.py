"""Widar3.0 BVP model inputs: one row per recording, its (20, 20, T) velocity profile as (T_max, 20, 20) float32.

Each recording's profile (``velocity_spectrum_ro``, MATLAB's ``v(i, j, t)``) becomes ``x[t, i, j]`` for
``t < min(T, T_max)``; rows of a shorter recording are zero after its last step (``x[t] = 0`` for
``T <= t < T_max``), a longer one is cut after step ``T_max`` — the rule the index records under
``x.padding``, with each row's true ``length`` (T) and the steps it holds (``stop = min(T, T_max)``).
``T_max`` is the ``t_max`` setting, by default the longest T of the split's **train** side (so both sides of one
split get the same width, and the test side never decides it); the index records the train side's longest T
too. ``y`` is the gesture's index in the label order.

Memory is O(batch): :func:`chunks` cuts a side into runs of rows of at most ``CHUNK_BYTES`` of X, and
:func:`chunk_x` reads one run (each file through the dataset door, checked against the manifest's size and
sha256, parsed by the bounded MAT reader) straight into its rows; only the padding tail of a row is zeroed.

This module holds the BVP-specific pieces only; :mod:`rfbench.datasets.windows.build` plans and produces a side
with them as it does for the other corpora.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from rfbench.errors import ValidationError

__all__ = ["default_t_max", "resolve_t_max", "row_of", "chunks", "chunk_x", "padding_record", "X_AXES", "GRID",
           "CHUNK_BYTES"]

GRID = 20
#: The axes of X (``x.axes`` in the index).
X_AXES = ("row", "time", "velocity_x", "velocity_y")
#: Upper bound of the X bytes one production chunk holds.
CHUNK_BYTES = 16 << 20
_RULE = "zeros after a recording's last time step; steps past t_max cut"


def default_t_max(manifest, train_ids) -> int:
    """The longest T (``frames``) of the recordings ``train_ids`` of ``manifest``."""
    ids = set(train_ids)
    longest = max((int(r.get("frames") or 0) for r in manifest.recordings if r["id"] in ids), default=0)
    if longest < 1:
        raise ValidationError("the split's train side has no BVP recording with a time step; t_max cannot be "
                              "taken from it (give `t_max`)")
    return longest


def resolve_t_max(settings, manifest, train_ids):
    """``settings`` with ``t_max`` set: as given, else :func:`default_t_max` of the train side — which must be at
    most :data:`~rfbench.datasets.windows.settings.MAX_T_MAX`, the most ``t_max`` may be when given: one file
    declaring a long profile would otherwise set every row's width (X's size on disk), a width nobody chose.

    Raises
    ------
    ValidationError
        The train side's longest T is past that bound (give ``t_max``).
    """
    import dataclasses

    from rfbench.datasets.windows.settings import MAX_T_MAX

    if settings.t_max is not None:
        return settings
    longest = default_t_max(manifest, train_ids)
    if longest > MAX_T_MAX:
        ids = set(train_ids)
        rid = next(r["id"] for r in manifest.recordings if r["id"] in ids and int(r.get("frames") or 0) == longest)
        raise ValidationError(f"the split's train side holds a BVP recording of {longest:,} time steps ({rid}), more "
                              f"than the {MAX_T_MAX:,} a row may hold: the default row width (the longest T) would "
                              "make every row that wide; give t_max (--t-max) to pad or cut the rows")
    return dataclasses.replace(settings, t_max=longest)


def padding_record(manifest, train_ids, t_max: int) -> dict:
    """What the index records of the padding: the rule, ``t_max`` and the train side's longest T."""
    return {"rule": _RULE, "t_max": int(t_max), "train_longest": default_t_max(manifest, train_ids)}


def row_of(rec: Mapping, t_max: int) -> dict | str:
    """The index row of one recording (``{id, start, stop, length}``), or why it gives none."""
    files = rec.get("files") or []
    if len(files) != 1:
        return f"a BVP recording is one .mat file; this one lists {len(files)}"
    frames = rec.get("frames")
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
        return f"no time step (frames {frames!r})"
    return {"id": rec["id"], "start": 0, "stop": min(frames, t_max), "length": frames}


def chunks(n_rows: int, t_max: int) -> list[tuple[int, int]]:
    """``(a, b)`` runs of rows holding at most :data:`CHUNK_BYTES` of X each (at least one row)."""
    per = max(1, CHUNK_BYTES // (4 * GRID * GRID * t_max))
    return [(a, min(n_rows, a + per)) for a in range(0, n_rows, per)]


def chunk_x(recordings: Sequence[Mapping], t_max: int, read: Callable[[Mapping], bytes],
            out: np.ndarray | None = None) -> np.ndarray:
    """X rows of ``recordings`` (one each): ``read(entry)`` gives a file's checked bytes. ``out``: the
    ``(len(recordings), t_max, 20, 20)`` float32 array to fill (default: a new one).

    Raises
    ------
    ValidationError, FormatError
        A file that does not hold a (20, 20, T) ``velocity_spectrum_ro``, a T other than the manifest's, or a
        non-finite value.
    """
    from rfbench.datasets.bvp_mat import read_bvp_bytes

    if out is None:
        out = np.empty((len(recordings), t_max, GRID, GRID), dtype=np.float32)
    k = 0
    try:
        for k, rec in enumerate(recordings):
            entry = rec["files"][0]
            buf = read(entry)
            value = read_bvp_bytes(buf, entry["path"])
            t = value.shape[2]
            if t != rec["frames"]:
                raise ValidationError(_t_mismatch(entry, t, rec["frames"], buf))
            used = min(t, t_max)
            np.copyto(out[k, :used], value[:, :, :used].transpose(2, 0, 1), casting="same_kind")
            if used < t_max:
                out[k, used:] = 0.0
        k = len(recordings)
    finally:  # rows are checked finite together (at once, or up to the row that failed): the first in row order
        _check_finite(recordings, out, k)  # that is not stops the side, before any later row's error
    return out


def _t_mismatch(entry: Mapping, t: int, recorded, buf) -> str:
    """Why a file's T (from its whole contents) differs from the one the manifest records. ``read`` checked its
    sha256 when the manifest has one: these are the bytes ingest read, and ingest took T from their MAT header
    (:func:`rfbench.datasets.bvp_mat.bvp_frames`). When that header gives the recorded T, header and contents
    disagree (a damaged or forged file, which re-running ingest does not change); when it gives another, the
    manifest's T is not ingest's: the manifest was edited."""
    from rfbench.datasets.bvp_mat import bvp_frames
    from rfbench.errors import RfbenchError

    path = entry["path"]
    if entry.get("sha256"):
        try:
            header = bvp_frames(buf, path)
        except RfbenchError:  # (the whole read parsed these bytes: the header read does too)
            header = None
        if header != recorded:
            return (f"{path}: T = {t}, but the manifest records {recorded} for the same bytes (the sha256 matches) and "
                    f"ingest takes {header if header is not None else 'another T'} from them: the manifest was edited "
                    "after ingest; re-run rfbench ingest (and rfbench split)")
        return (f"{path}: T = {t}, but ingest recorded {recorded} from the same bytes (the sha256 matches the "
                "manifest's): the file's MAT header and its contents disagree (a damaged or forged file, which "
                "re-running ingest does not change)")
    return (f"{path}: T = {t}, but ingest recorded {recorded}: the dataset changed since ingest; re-run "
            "rfbench ingest (and rfbench split)")


def _check_finite(recordings: Sequence[Mapping], out: np.ndarray, n: int) -> None:
    """Raise for the first of the first ``n`` rows of ``out`` holding a non-finite value (padding is zero)."""
    if n == 0 or np.isfinite(out[:n]).all():
        return
    k = int(np.flatnonzero(~np.isfinite(out[:n]).reshape(n, -1).all(axis=1))[0])
    raise ValidationError(f"{recordings[k]['files'][0]['path']}: velocity_spectrum_ro holds non-finite values; a BVP "
                          "row must be finite")
