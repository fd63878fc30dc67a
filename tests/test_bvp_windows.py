"""``rfbench windows`` on Widar3.0 BVP splits: X (rows, T_max, 20, 20) float32 zero-padded or cut to T_max (by
default the train side's longest T, for both sides), checked against what a user's script computes with
``scipy.io.loadmat`` and ``numpy.pad``; and the whole chain generate → ingest → split → windows → predict →
score → verify MATCH."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from rfbench.cli import app
from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
from rfbench.datasets.widar_bvp import ingest_bvp
from rfbench.datasets.windows import WindowSettings, write_windows
from rfbench.errors import ValidationError
from rfbench.protocols.split import write_splits


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> Path:
    """A small generated BVP tree (T 1–6), its manifest and a cross-subject split (test: user4)."""
    root = tmp_path_factory.mktemp("bvpw")
    make_widar_bvp_tree(root / "tree", frames=(1, 6), damage=False)
    ingest_bvp(root / "tree", workers=1).write(root / "manifest.json")
    write_splits(root / "manifest.json", "cross-subject", root / "split.json", test=["user4"], gestures="common6")
    return root


def _script_rows(tree: Path, rows: list, t_max: int) -> np.ndarray:
    """What a user's script gives: scipy.io.loadmat per file, (20, 20, T) → (T, 20, 20), numpy.pad / cut."""
    out = []
    for row in rows:
        v = scipy.io.loadmat(tree / row["path"])["velocity_spectrum_ro"]
        v = v.reshape(20, 20, -1).transpose(2, 0, 1)[:t_max]
        out.append(np.pad(v, ((0, t_max - v.shape[0]), (0, 0), (0, 0))).astype(np.float32))
    return np.stack(out)


def _paths(root: Path, ids: list) -> list:
    recs = {r["id"]: r for r in json.loads((root / "manifest.json").read_text())["recordings"]}
    return [{"path": recs[i]["files"][0]["path"], "frames": recs[i]["frames"], "label": recs[i]["label"]}
            for i in ids]


def test_x_is_the_padded_profile_and_t_max_defaults_to_the_train_side(chain):
    split = json.loads((chain / "split.json").read_text())
    recs = {r["id"]: r for r in json.loads((chain / "manifest.json").read_text())["recordings"]}
    train_longest = max(recs[i]["frames"] for i in split["train"])
    for side in ("train", "test"):
        doc = write_windows(chain / "split.json", side, chain / f"w-{side}")
        assert doc["settings"]["t_max"] == train_longest == 6
        assert doc["x"]["padding"] == {"rule": "zeros after a recording's last time step; steps past t_max cut",
                                       "t_max": 6, "train_longest": 6}
        ids = [r["id"] for r in doc["rows"]]
        info = _paths(chain, ids)
        assert [r["length"] for r in doc["rows"]] == [i["frames"] for i in info]
        assert [r["stop"] for r in doc["rows"]] == [min(i["frames"], 6) for i in info]
        x = np.load(chain / f"w-{side}" / "X.npy")
        assert x.shape == (len(ids), 6, 20, 20) and x.dtype == np.float32
        assert np.array_equal(x, _script_rows(chain / "tree", info, 6))
        y = np.load(chain / f"w-{side}" / "y.npy")
        names = doc["labels"]["names"]
        assert [names[k] for k in y] == [i["label"] for i in info]


def test_a_given_t_max_cuts_longer_rows(chain):
    doc = write_windows(chain / "split.json", "test", chain / "w-cut", WindowSettings(t_max=3))
    info = _paths(chain, [r["id"] for r in doc["rows"]])
    x = np.load(chain / "w-cut" / "X.npy")
    assert x.shape[1] == 3 and np.array_equal(x, _script_rows(chain / "tree", info, 3))
    assert doc["x"]["padding"]["train_longest"] == 6  # recorded whatever t_max is
    assert any(r["length"] > r["stop"] for r in doc["rows"])


def test_settings_of_other_corpora_are_refused(chain):
    with pytest.raises(ValidationError, match="t_max applies to bvp"):
        WindowSettings(t_max=3).resolved("intel5300")
    with pytest.raises(ValidationError, match="applies to mmfi and intel5300"):
        write_windows(chain / "split.json", "test", chain / "w-bad", WindowSettings(length=4))


def test_both_sides_at_once_are_the_files_of_one_call_per_side(chain, tmp_path):
    docs = write_windows(chain / "split.json", "both", tmp_path / "both")
    assert sorted(docs) == ["test", "train"]
    for side in ("train", "test"):
        write_windows(chain / "split.json", side, tmp_path / "one" / side)  # the same depth: the same paths
        for name in ("X.npy", "y.npy", "index.json"):
            assert (tmp_path / "both" / side / name).read_bytes() == (tmp_path / "one" / side / name).read_bytes()
    # the test side is padded to the train side's longest T, as when it is built alone
    assert docs["test"]["settings"]["t_max"] == docs["train"]["settings"]["t_max"]


def test_a_changed_file_is_refused(chain, tmp_path):
    import shutil

    copy = tmp_path / "c"
    shutil.copytree(chain, copy)
    first = json.loads((copy / "split.json").read_text())["test"][0]
    path = copy / "tree" / _paths(copy, [first])[0]["path"]
    data = bytearray(path.read_bytes())
    data[-9] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(ValidationError, match="changed since"):
        write_windows(copy / "split.json", "test", copy / "w")


@pytest.mark.long
def test_an_honest_bvp_chain_verifies_match(chain, runner, tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    import shutil

    from rfbench.nn.onnx_export import FeatureMap, fit_nearest_centroid, nearest_centroid_model

    root = tmp_path / "run"
    shutil.copytree(chain, root, ignore=shutil.ignore_patterns("w-*"))
    for side in ("train", "test"):
        result = runner.invoke(app, ["windows", str(root / "split.json"), "--side", side, "-o",
                                     str(root / side)])
        assert result.exit_code == 0, result.output
    x = np.load(root / "train" / "X.npy")
    y = np.load(root / "train" / "y.npy")
    names = json.loads((root / "train" / "index.json").read_text())["labels"]["names"]
    features = FeatureMap(row_shape=x.shape[1:], mean_axes=(0,))  # the mean velocity grid over time
    model = nearest_centroid_model(fit_nearest_centroid(features.apply(x), y, len(names)), features)
    (root / "centroid.onnx").write_bytes(model)
    result = runner.invoke(app, ["predict", str(root / "centroid.onnx"), "--windows", str(root / "test"), "-o",
                                 str(root / "scores.npy")])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["score", "--pred", str(root / "scores.npy"), "--rows",
                                 str(root / "test" / "index.json"), "--split", str(root / "split.json"), "--task",
                                 "gesture", "-o", str(root / "report.json"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads((root / "report.json").read_text())
    assert report["evidence"] == "SYNTHETIC"
    accuracy = next(r for r in report["results"] if r["metric"] == "accuracy")
    assert accuracy["model"]["value"] > accuracy["baseline"]["value"]  # the profiles carry the gesture
    result = runner.invoke(app, ["verify", str(root / "report.json"), "--root", str(root)])
    assert result.exit_code == 0, result.output
    assert "MATCH" in result.output


def test_a_default_row_width_past_the_bound_is_refused(tmp_path):
    """One train-side file declaring 5,000 time steps (stored as uint8: 2 MB, a file ingest takes) would make
    every row 5,000 steps wide by default: refused with the recording named; a t_max the user gives still works."""
    make_widar_bvp_tree(tmp_path / "tree", frames=(1, 4), damage=False)
    victim = sorted((tmp_path / "tree").rglob("user1-*.mat"))[0]
    scipy.io.savemat(victim, {"velocity_spectrum_ro": np.ones((20, 20, 5000), dtype=np.uint8)})
    ingest_bvp(tmp_path / "tree", workers=1).write(tmp_path / "manifest.json")
    write_splits(tmp_path / "manifest.json", "cross-subject", tmp_path / "split.json", test=["user4"])
    with pytest.raises(ValidationError, match=r"5,000 time steps \(.*user1-.*\), more than the 4,096") as info:
        write_windows(tmp_path / "split.json", "train", tmp_path / "w")
    assert "--t-max" in str(info.value) and not (tmp_path / "w").exists()
    doc = write_windows(tmp_path / "split.json", "train", tmp_path / "w", WindowSettings(t_max=4))
    assert doc["x"]["padding"]["train_longest"] == 5000 and np.load(tmp_path / "w" / "X.npy").shape[1] == 4


def test_sides_that_would_not_fit_are_refused_before_any_file(chain, tmp_path, monkeypatch):
    """X's size is known before a BVP side is read: sides that would not fit in the space free where they go are
    refused at once, with the sizes, and nothing is left (not even the folders made for them)."""
    import os

    from rfbench.errors import OutputError

    real = os.statvfs

    class Full:
        f_bavail, f_frsize, f_blocks = 3, 4096, 1000

    monkeypatch.setattr(os, "statvfs", lambda path: Full())
    with pytest.raises(OutputError, match=r"cannot write .*: X would take [0-9.]+ [kM]B, but 12.3 kB is free"):
        write_windows(chain / "split.json", "both", tmp_path / "full" / "out")
    assert not (tmp_path / "full").exists()
    Full.f_blocks = 0  # a file system that reports no size: not checked
    write_windows(chain / "split.json", "both", tmp_path / "full" / "out")
    monkeypatch.setattr(os, "statvfs", real)
    assert (tmp_path / "full" / "out" / "train" / "X.npy").exists()
