"""MM-Fi ingest: the E/S/A walk, ground-truth shape checks, empty frames, and no SciPy needed for the manifest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.datasets import mmfi
from rfbench.datasets.synthetic import make_mmfi_tree, mat_v5_bytes

ROOT = Path(__file__).resolve().parents[1]


def test_protocol_facts():
    # DESIGN.md §4: P1 has 14 daily actions, P2 13 rehabilitation ones, together all 27, no overlap
    p1, p2, p3 = (set(mmfi.ACTION_PROTOCOLS[k]) for k in ("p1", "p2", "p3"))
    assert len(p1) == 14 and len(p2) == 13 and not p1 & p2 and p1 | p2 == p3 == set(mmfi.ALL_ACTIONS)
    assert mmfi.ACTION_PROTOCOLS["p1"][:3] == ("A02", "A03", "A04")
    assert [mmfi.environment_of(s) for s in ("S01", "S10", "S11", "S30", "S31", "S40")] == [
        "E01", "E01", "E02", "E03", "E04", "E04"]
    assert mmfi.environment_of("S41") is None


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("mmfi")
    info = make_mmfi_tree(root, seed=2, frames=3)
    return root, info


def test_synthetic_tree_reports_every_planted_problem(tree):
    root, info = tree
    m = mmfi.ingest(root)
    assert m.dataset == "mmfi" and m.synthetic is True
    paths = {p["path"] for p in m.problems}
    for path, kind in info["damage"].items():
        assert path in paths, (path, kind)
    assert len(m.recordings) == info["recordings"]
    rec = {r["id"]: r for r in m.recordings}
    first = rec["E01/S01/A01"]
    # 3 frame files, frame002.mat emptied; frame_extra.mat is not a frame
    assert first["frames"] == 3 and first["empty_frames"] == [2] and first["gt_frames"] == 3
    assert first["subject"] == "S01" and first["room"] == "E01" and first["action"] == "A01"
    assert [f["path"] for f in first["files"]] == ["E01/S01/A01/ground_truth.npy"] + [
        f"E01/S01/A01/wifi-csi/frame{k:03d}.mat" for k in (1, 2, 3)]
    assert [f.get("kind") for f in first["files"]] == ["ground-truth"] + ["wifi-frame"] * 3
    assert [f.get("frame") for f in first["files"][1:]] == [1, 2, 3]
    # frame002.mat was emptied by the generator's damage; frame001.mat keeps its size
    assert first["files"][2]["bytes"] == 0
    assert first["files"][1]["bytes"] == (root / "E01/S01/A01/wifi-csi/frame001.mat").stat().st_size > 0
    assert rec["E02/S05/A01"]["room"] == "E02"  # kept where found, reported as a problem


def test_ground_truth_checks(tmp_path):
    folder = tmp_path / "E01" / "S01" / "A01"
    (folder / "wifi-csi").mkdir(parents=True)
    for k in (1, 2):
        (folder / "wifi-csi" / f"frame{k:03d}.mat").write_bytes(mat_v5_bytes({"CSIamp": np.ones((3, 114, 10))}))
    gt = np.zeros((2, 17, 3))
    gt[1, 4, 2] = np.nan
    np.save(folder / "ground_truth.npy", gt)
    other = tmp_path / "E01" / "S02" / "A01"
    (other / "wifi-csi").mkdir(parents=True)
    (other / "wifi-csi" / "frame001.mat").write_bytes(b"")
    (other / "wifi-csi" / "frame003.mat").write_bytes(b"")
    np.save(other / "ground_truth.npy", np.zeros((5, 17, 3)))
    (tmp_path / "E01" / "S02" / "A99").mkdir()
    (tmp_path / "E01" / "S02" / "A01" / "ground_truth.npy.bak").write_bytes(b"")
    m = mmfi.ingest(tmp_path)
    reasons = {p["path"]: p["reason"] for p in m.problems}
    assert reasons["E01/S01/A01/ground_truth.npy"] == "ground truth holds 1 NaN/inf value(s)"
    assert reasons["E01/S02/A01/ground_truth.npy"] == "ground truth has 5 frames but wifi-csi/ has 2 frame files"
    assert reasons["E01/S02/A01/wifi-csi"] == "frame numbers are not 1…N: missing 2"
    assert reasons["E01/S02/A99"].startswith("not an action folder")
    rec = {r["id"]: r for r in m.recordings}
    assert rec["E01/S02/A01"]["empty_frames"] == [1, 3]


def test_not_a_npy_and_missing_wifi_folder(tmp_path):
    folder = tmp_path / "E03" / "S21" / "A05"
    folder.mkdir(parents=True)
    (folder / "ground_truth.npy").write_bytes(b"garbage")
    m = mmfi.ingest(tmp_path)
    reasons = {p["path"]: p["reason"] for p in m.problems}
    assert reasons["E03/S21/A05/wifi-csi"].startswith("no wifi-csi folder")
    assert reasons["E03/S21/A05/ground_truth.npy"].startswith("not a .npy file")
    assert m.recordings[0]["frames"] == 0 and m.recordings[0]["gt_frames"] is None


def test_a_wrapping_folder_is_looked_through(tmp_path):
    folder = tmp_path / "MMFi_Dataset" / "E02" / "S12" / "A27"
    (folder / "wifi-csi").mkdir(parents=True)
    (folder / "wifi-csi" / "frame001.mat").write_bytes(mat_v5_bytes({"CSIamp": np.ones((3, 114, 10))}))
    np.save(folder / "ground_truth.npy", np.zeros((1, 17, 3)))
    m = mmfi.ingest(tmp_path)
    assert [r["id"] for r in m.recordings] == ["E02/S12/A27"] and m.problems == []
    assert m.recordings[0]["files"][0]["path"] == "MMFi_Dataset/E02/S12/A27/ground_truth.npy"


def test_manifest_and_frame_checks_need_no_scipy(tree, tmp_path):
    root, _ = tree
    code = (
        "import sys; sys.modules['scipy'] = None\n"
        "from rfbench.datasets import mmfi\n"
        f"m = mmfi.ingest({str(root)!r}, verify_frames=True)\n"
        "print(len(m.recordings), 'scipy.io' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(len(mmfi.ingest(root).recordings)), "False"]


def test_mat_writer_round_trips_through_scipy(tmp_path):
    scipy_io = pytest.importorskip("scipy.io")
    rng = np.random.default_rng(0)
    amp = rng.random((3, 114, 10))
    vec = np.arange(5.0)
    path = tmp_path / "f.mat"
    path.write_bytes(mat_v5_bytes({"CSIamp": amp, "v": vec}))
    got = scipy_io.loadmat(path)
    assert np.array_equal(got["CSIamp"], amp) and got["CSIamp"].dtype == np.float64
    assert np.array_equal(got["v"], vec.reshape(1, 5))
    assert np.array_equal(mmfi.read_wifi_frame(path)["CSIamp"], amp)


def test_verify_frames_reads_every_frame(tree, tmp_path):
    root, _ = tree
    m = mmfi.ingest(root, verify_frames=True)
    # the planted odd frame name is skipped; the real frames are (3, 114, 10) → no extra problems
    assert {p["path"] for p in m.problems} == {p["path"] for p in mmfi.ingest(root).problems}
    bad = tmp_path / "E04" / "S31" / "A01" / "wifi-csi"
    bad.mkdir(parents=True)
    (bad / "frame001.mat").write_bytes(b"not a mat file at all, sorry" * 10)
    (bad / "frame002.mat").write_bytes(mat_v5_bytes({"CSIamp": np.ones((2, 2))}))
    reasons = {p["path"]: p["reason"] for p in mmfi.ingest(tmp_path, verify_frames=True).problems}
    assert "not a readable .mat file" in reasons["E04/S31/A01/wifi-csi/frame001.mat"]
    assert reasons["E04/S31/A01/wifi-csi/frame002.mat"] == "CSIamp has shape (2, 2); expected (3, 114, 10)"


def test_cli_ingest_mmfi(runner, tree, tmp_path):
    root, info = tree
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", "mmfi", str(root), "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["recordings"] == info["recordings"] and summary["dataset"] == "mmfi"
    assert json.loads(out.read_text())["synthetic"] is True
    r = runner.invoke(app, ["ingest", "mmfi", str(root / "notes.txt"), "-o", str(tmp_path / "y.json")])
    assert r.exit_code == 2 and "not a folder" in r.stderr
    r = runner.invoke(app, ["split", str(out), "-p", "mmfi-s3", "--actions", "p3", "-o", str(tmp_path / "s.json")])
    # the planted S05 under E02 stays in train with E02, so S3's subject and room claims still hold
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "s.json").read_text())
    assert {i.split("/")[0] for i in doc["test"]} == {"E04"} and doc["synthetic"] is True


@pytest.mark.parametrize("verify_frames", [False, True])
def test_generated_frames_are_synthetic_without_the_marker_file(tmp_path, verify_frames):
    """The marker file deleted (or renamed) before ingest: the manifest said synthetic: false, and the pose chain
    scored MEASURED and verified MATCH, even with --dataset — while every generated WiFi frame's MAT header text
    still read 'rfbench synthetic' (found by an adversarial probe; BVP profiles were read so already). A frame
    that says the generator wrote it makes the tree SYNTHETIC; the same frames under another header text are
    not."""
    from rfbench.datasets.mmfi import ingest
    from rfbench.datasets.synthetic import MARKER, make_mmfi_tree

    tree = tmp_path / "tree"
    make_mmfi_tree(tree, subjects=("S01",), actions=("A01", "A02"), frames=3, damage=False)
    for m in tree.rglob(MARKER):
        m.rename(m.with_name("rfbench_synthetic.JSON"))
    manifest = ingest(tree, verify_frames=verify_frames, workers=2)
    assert manifest.synthetic is True
    marker = manifest.extra["synthetic_marker"]
    assert marker["path"] == "E01/S01/A01/wifi-csi/frame001.mat" and marker["found_in"] == "the file's MAT header text"
    listed = {f["path"]: f["sha256"] for r in manifest.recordings for f in r["files"]}
    assert marker["sha256"] == listed[marker["path"]]
    for path in tree.rglob("frame*.mat"):
        data = bytearray(path.read_bytes())
        data[:116] = b"MATLAB 5.0 MAT-file, Platform: PCWIN64, Created on: Mon Jan 01 00:00:00 2018".ljust(116)
        path.write_bytes(bytes(data))
    assert ingest(tree, verify_frames=verify_frames, workers=2).synthetic is False
