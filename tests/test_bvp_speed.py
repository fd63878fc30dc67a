"""What keeps the BVP chain's processes short, and that each shortcut changes no result: the split audit sweeps
only recordings with rows on both sides (so a split of whole recordings starts no Numba), ``rfbench windows`` of
a BVP split loads no Intel 5300 kernel, and the split's declared dataset is read only as a hint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import naive
from rfbench.protocols.leakage import overlapping_recordings
from rfbench.protocols.splitfile import declared_dataset


@pytest.mark.parametrize("seed", range(4))
def test_overlap_over_mostly_one_sided_recordings_matches_naive(seed):
    # Most recordings have rows on one side only (left out of the sweep), a few on both, unsorted.
    rng = np.random.default_rng(seed)
    n_rec, n = 30, 200
    rec = rng.integers(0, n_rec, n)
    one_sided = rng.random(n_rec) < 0.8
    side = np.where(one_sided[rec], rec % 2, rng.integers(-1, 2, n))
    start = rng.integers(0, 30, n)
    stop = start + rng.integers(0, 8, n)
    got = overlapping_recordings(rec, start, stop, side, n_rec)
    assert got.tolist() == naive.naive_overlapping_recordings(rec.tolist(), start.tolist(), stop.tolist(),
                                                              side.tolist(), n_rec)
    assert not got[one_sided].any()


def test_overlap_found_among_one_sided_recordings():
    # Recording 1 overlaps; recordings 0 and 2 (one side each) and excluded rows of 1 are dropped before the sweep.
    rec = [0, 0, 1, 1, 1, 2]
    start = [0, 5, 0, 3, 0, 0]
    stop = [9, 9, 4, 6, 9, 9]
    side = [1, 1, 0, 1, -1, 0]
    assert overlapping_recordings(rec, start, stop, side, 3).tolist() == [False, True, False]


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_auditing_whole_recordings_imports_no_numba():
    code = """
import sys
from rfbench.datasets.manifest import RecordingTable
from rfbench.protocols.leakage import audit_rows
recs = [{"id": f"r{i}", "files": [], "frames": 5, "subject": f"s{i % 3}"} for i in range(9)]
table = RecordingTable.from_recordings(recs)
res = audit_rows(table, list(range(9)), [0 if i % 3 else 1 for i in range(9)], claims=["subject"])
assert res.passed, res.checks
print("numba" in sys.modules)
"""
    assert _run(code) == "False"


def test_a_crossing_pair_is_still_found_by_the_kernel():
    code = """
import sys
from rfbench.protocols.leakage import overlapping_recordings
print(overlapping_recordings([0, 0], [0, 2], [4, 6], [0, 1], 1).tolist(), "numba" in sys.modules)
"""
    assert _run(code) == "[True] True"


@pytest.fixture(scope="module")
def bvp_split(tmp_path_factory) -> Path:
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
    from rfbench.datasets.widar_bvp import ingest_bvp
    from rfbench.protocols.split import write_splits

    root = tmp_path_factory.mktemp("bvps")
    make_widar_bvp_tree(root / "tree", frames=(1, 4), damage=False)
    ingest_bvp(root / "tree", workers=1).write(root / "manifest.json")
    write_splits(root / "manifest.json", "cross-subject", root / "split.json", test=["user4"], gestures="common6")
    return root / "split.json"


def test_declared_dataset_is_a_hint_only(bvp_split, tmp_path):
    assert declared_dataset(bvp_split) == "widar3-bvp"
    assert declared_dataset(tmp_path / "missing.json") is None
    (tmp_path / "bad.json").write_text("{not json")
    assert declared_dataset(tmp_path / "bad.json") is None
    doc = json.loads(bvp_split.read_text())
    doc["dataset"] = ["widar3-bvp"]
    (tmp_path / "odd.json").write_text(json.dumps(doc))
    assert declared_dataset(tmp_path / "odd.json") is None


def test_windows_of_a_bvp_split_loads_no_intel5300_kernel(bvp_split, tmp_path):
    code = f"""
import runpy, sys
sys.argv = ["rfbench", "windows", {str(bvp_split)!r}, "--side", "train", "-o", {str(tmp_path / "w")!r}, "--json"]
try:
    runpy.run_module("rfbench", run_name="__main__")
except SystemExit as exc:
    assert not exc.code, exc.code
print("rfbench.io.intel5300" in sys.modules, file=sys.stderr)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().splitlines()[-1] == "False"
    assert np.load(tmp_path / "w" / "X.npy").shape[0] > 0


def test_split_declaring_bvp_over_intel_data_still_builds(tmp_path):
    """The declared name only picks what to load ahead: a split that lies about it gives the same side."""
    from rfbench.datasets.synthetic import make_widar_tree
    from rfbench.datasets.widar import ingest
    from rfbench.datasets.windows import WindowSettings, build_windows
    from rfbench.protocols.split import write_splits

    make_widar_tree(tmp_path / "tree", damage=False)
    ingest(tmp_path / "tree", workers=1).write(tmp_path / "manifest.json")
    write_splits(tmp_path / "manifest.json", "cross-subject", tmp_path / "split.json", test=["user2"])
    expected = build_windows(tmp_path / "split.json", "train", WindowSettings(length=8))
    code = f"""
import runpy, sys
sys.argv = ["rfbench", "windows", {str(tmp_path / "split.json")!r}, "--side", "train", "-o",
            {str(tmp_path / "w")!r}, "--length", "8", "--json"]
from rfbench.protocols import splitfile
splitfile.declared_dataset = lambda path: "widar3-bvp"
try:
    runpy.run_module("rfbench", run_name="__main__")
except SystemExit as exc:
    assert not exc.code, exc.code
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert np.array_equal(np.load(tmp_path / "w" / "X.npy"), expected.x)


def test_an_oversized_file_is_a_problem_without_the_absolute_path(tmp_path):
    from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
    from rfbench.datasets.widar_bvp import MAX_BVP_BYTES, ingest_bvp

    make_widar_bvp_tree(tmp_path / "tree", frames=(1, 3), damage=False)
    first = next((tmp_path / "tree").rglob("*-L0.mat"))
    big = first.with_name(first.name.replace("-L0.mat", "-L5.mat"))
    big.write_bytes(b"\0" * (MAX_BVP_BYTES + 1))
    problems = ingest_bvp(tmp_path / "tree", workers=2).problems
    (reason,) = [p["reason"] for p in problems if p["path"].endswith(big.name)]
    assert reason == (f"cannot read: {MAX_BVP_BYTES + 1} bytes, more than the {MAX_BVP_BYTES} rfbench reads for "
                      "it; left out")
