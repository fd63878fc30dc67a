"""Synthetic corpora: deterministic by seed, real bfee files, every domain factor covered, tagged SYNTHETIC."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rfbench.datasets import widar
from rfbench.datasets.synthetic import H36M_TEMPLATE, MARKER, make_mmfi_tree, make_widar_tree
from rfbench.errors import OutputExistsError, ValidationError
from rfbench.io import intel5300


def tree_bytes(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_widar_tree_is_deterministic_by_seed(tmp_path):
    make_widar_tree(tmp_path / "a", seed=5, records=(3, 6))
    make_widar_tree(tmp_path / "b", seed=5, records=(3, 6))
    make_widar_tree(tmp_path / "c", seed=6, records=(3, 6))
    a, b, c = (tree_bytes(tmp_path / k) for k in "abc")
    assert a == b
    assert a.keys() == c.keys() and a != c


def test_widar_tree_files_are_real_bfee_logs_covering_every_factor(tmp_path):
    info = make_widar_tree(tmp_path, seed=0, records=(10, 12), damage=False)
    files = sorted((tmp_path / "CSI").rglob("*.dat"))
    assert len(files) == info["files"] == info["recordings"] * 6
    log = intel5300.read(files[0])
    assert 10 <= log.n_records <= 12 and log.shape[1:] == (30, 3, 1) and log.n_skipped == 0
    m = widar.ingest(tmp_path)
    assert m.problems == []
    recs = m.recordings
    assert {r["room"] for r in recs} == {1, 2, 3}
    assert {r["location"] for r in recs} == {1, 2, 3, 4, 5, 6}
    assert {r["orientation"] for r in recs} == {1, 2, 3, 4, 5}
    assert "20181205_2" in {r["date"] for r in recs}
    rooms_of = {}
    for r in recs:
        rooms_of.setdefault(r["subject"], set()).add(r["room"])
    assert any(len(v) > 1 for v in rooms_of.values())  # some users appear in more than one room
    # gesture 1 means Push&Pull on 20181109 but Draw-O(Horizontal) on 20181205_2
    names = {(r["date"], r["gesture_number"]): r["gesture"] for r in recs}
    assert names[("20181109", 1)] == "Push&Pull" and names[("20181205_2", 1)] == "Draw-O(Horizontal)"
    assert all(r["receivers"] == [1, 2, 3, 4, 5, 6] for r in recs)
    marker = json.loads((tmp_path / MARKER).read_text())
    assert marker["synthetic"] is True and marker["params"]["seed"] == 0


def test_refuses_a_non_empty_folder(tmp_path):
    (tmp_path / "x").write_text("keep me")
    with pytest.raises(OutputExistsError, match="not empty"):
        make_widar_tree(tmp_path)
    with pytest.raises(OutputExistsError):
        make_mmfi_tree(tmp_path / "x")
    with pytest.raises(ValidationError):
        make_widar_tree(tmp_path / "y", records=(5, 2))
    with pytest.raises(ValidationError):
        make_mmfi_tree(tmp_path / "z", subjects=["S99"])


def test_mmfi_tree_is_deterministic_and_pose_like(tmp_path):
    make_mmfi_tree(tmp_path / "a", seed=1, subjects=["S01", "S40"], actions=["A01"], frames=2, damage=False)
    make_mmfi_tree(tmp_path / "b", seed=1, subjects=["S01", "S40"], actions=["A01"], frames=2, damage=False)
    assert tree_bytes(tmp_path / "a") == tree_bytes(tmp_path / "b")
    gt = np.load(tmp_path / "a" / "E04" / "S40" / "A01" / "ground_truth.npy")
    assert gt.shape == (2, 17, 3)
    # H36M layout: joint 0 is the midpoint of the hips (joints 1 and 4), exactly
    assert np.array_equal(gt[:, 0], (gt[:, 1] + gt[:, 4]) / 2)
    assert np.abs(gt - H36M_TEMPLATE).max() <= 0.1  # small motion around a standing pose, in metres
    scipy_io = pytest.importorskip("scipy.io")
    frame = scipy_io.loadmat(tmp_path / "a" / "E01" / "S01" / "A01" / "wifi-csi" / "frame001.mat")
    assert frame["CSIamp"].shape == frame["CSIphase"].shape == (3, 114, 10)
    assert np.all(frame["CSIamp"] >= 0) and np.all(np.abs(frame["CSIphase"]) <= np.pi)
