"""A generated Widar3.0 folder holding both releases: ``CSI/`` (as :func:`~rfbench.datasets.synthetic.make_widar_tree`
writes it) and ``BVP/`` (as :func:`~rfbench.datasets.synthetic_bvp.make_widar_bvp_tree` does), from one seed, with
one marker file at the top. The two plans share captures (date, user, gesture, location, orientation, repetition),
so ``rfbench ingest widar --kind both`` finds recordings of one capture in both releases."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from rfbench.datasets.synthetic import TreeSummary, _generate_tree, _marker, _widar_params, _write_widar
from rfbench.datasets.synthetic_bvp import _write_bvp, bvp_params
from rfbench.datasets.synthetic_settings import WidarTreeSettings

__all__ = ["make_widar_both_tree"]


def make_widar_both_tree(root: str | os.PathLike, *, seed: int = 0, repetitions: int = 1,
                         records: tuple[int, int] = (24, 48), frames: tuple[int, int] = (4, 12), damage: bool = True,
                         force: bool = False, progress: Callable[[int], None] | None = None,
                         on_total: Callable[[int], None] | None = None) -> TreeSummary:
    """Write ``root/CSI`` and ``root/BVP`` (see the module docstring); arguments as for the two trees' makers.

    Returns
    -------
    TreeSummary
        ``dataset`` ``"widar-both"``; counts and planted problems of both releases together.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> made = make_widar_both_tree(pathlib.Path(tempfile.mkdtemp()) / "w", records=(3, 4), frames=(2, 3),
    ...                             damage=False)
    >>> made.recordings
    349
    """
    csi = WidarTreeSettings(seed=seed, repetitions=repetitions, records=tuple(records), clean=not damage)
    bvp = WidarTreeSettings(seed=seed, repetitions=repetitions, frames=tuple(frames), clean=not damage, kind="bvp")
    params = {"kind": "both", "csi": _widar_params(csi), "bvp": bvp_params(bvp)}

    def write(tree: Path) -> tuple:
        n_csi, files, csi_damage = _write_widar(tree, csi, progress, on_total)
        n_bvp, bvp_damage = _write_bvp(tree, bvp, progress, on_total)
        _marker(tree, "make_widar_both_tree", params)  # the top marker names both (each writer left its own)
        return n_csi + n_bvp, files + n_bvp, {**csi_damage, **bvp_damage}

    recordings, files, damage_map, replaced, total_files, total_bytes = _generate_tree(root, force, write)
    return TreeSummary("widar-both", str(root), recordings, files, damage_map, params, total_files, total_bytes,
                       replaced)
