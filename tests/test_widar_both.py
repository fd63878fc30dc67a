"""Both Widar3.0 releases in one manifest (``rfbench ingest widar --kind both``): a CSI recording and the BVP
profile of the same capture are one source — a split keeps them on one side, the audit fails one that does not,
and ``rfbench windows --release`` builds one release's rows, the same as from that release's own manifest."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.datasets.synthetic_both import make_widar_both_tree
from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
from rfbench.datasets.widar_both import ingest_both
from rfbench.datasets.widar_bvp import ingest_bvp
from rfbench.datasets.windows import WindowSettings, write_windows
from rfbench.errors import LeakageError, ValidationError
from rfbench.protocols.split import write_splits

_CSI = re.compile(r"CSI/(\d{8}(?:_\d)?)/user\d+/(user\d+-\d+-\d+-\d+-\d+)-r\d\.dat$")
_BVP = re.compile(r"BVP/(\d{8})-VS/(?:6-link/)?(user\d+)/(user\d+-\d+-\d+-\d+-\d+)-.*-L\d+\.mat$")


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> Path:
    """A generated folder of both releases (no damage) and its manifest."""
    root = tmp_path_factory.mktemp("both")
    make_widar_both_tree(root / "tree", records=(70, 90), frames=(1, 6), damage=False)
    ingest_both(root / "tree", workers=1).write(root / "manifest.json")
    return root


def _manifest(root: Path) -> dict:
    return json.loads((root / "manifest.json").read_text())


def test_every_recording_names_its_release_and_capture(both):
    m = _manifest(both)
    assert m["dataset"] == "widar3" and m["kind"] == "csi+bvp"
    # the captures as the file names give them, parsed here: a CSI log's date and stem; a BVP file's date
    # folder (20181205-VS's user2 and user3 follow the tables 20181205_2 and _3) and stem
    csi, bvp = set(), set()
    for path in (p.relative_to(both / "tree").as_posix() for p in (both / "tree").rglob("*") if p.is_file()):
        if (c := _CSI.match(path)):
            csi.add(f"{c[1]}/{c[2]}")
        elif (b := _BVP.match(path)):
            date = b[1] if not (b[1] == "20181205" and b[2] in ("user2", "user3")) else f"20181205_{b[2][-1]}"
            bvp.add(f"{date}/{b[3]}")
    by_release = {"csi": set(), "bvp": set()}
    for rec in m["recordings"]:
        by_release[rec["release"]].add(rec["capture"])
        if rec["release"] == "csi":
            assert rec["capture"] == rec["id"]
    assert by_release == {"csi": csi, "bvp": bvp}
    assert csi & bvp  # the generated trees share captures, or this test would prove nothing
    assert m["captures"] == {"both": len(csi & bvp), "csi_only": len(csi - bvp), "bvp_only": len(bvp - csi)}


def test_a_random_split_draws_captures_whole(both, tmp_path):
    write_splits(both / "manifest.json", "random", tmp_path / "split.json", allow_leaky=True, seed=3)
    split = json.loads((tmp_path / "split.json").read_text())
    capture = {r["id"]: r["capture"] for r in _manifest(both)["recordings"]}
    train = {capture[i] for i in split["train"]}
    test = {capture[i] for i in split["test"]}
    assert train and test and not train & test
    check = next(c for c in split["audit"]["checks"] if c["name"] == "captures-disjoint")
    assert check["passed"] is True


def test_a_split_with_a_capture_on_both_sides_is_a_leak(both, tmp_path, runner):
    """Train on one release, test on the other (leave-one-domain-out by release): the recording ids differ, but
    a capture's CSI log and its BVP profile are one gesture instance, so the audit fails and windows refuses."""
    result = runner.invoke(app, ["split", str(both / "manifest.json"), "-p", "leave-one-domain-out", "--domain",
                                 "release", "--allow-leaky", "-o", str(tmp_path / "lodo")])
    assert result.exit_code == 1, result.output
    assert "FAIL captures-disjoint" in result.output and "PASS release-disjoint" in result.output
    split = json.loads((tmp_path / "lodo" / "split-release-bvp.json").read_text())
    assert split["audit"]["passed"] is False
    with pytest.raises(LeakageError, match="captures-disjoint"):
        write_windows(tmp_path / "lodo" / "split-release-bvp.json", "train", tmp_path / "w",
                      WindowSettings(release="csi"))
    result = runner.invoke(app, ["windows", str(tmp_path / "lodo" / "split-release-bvp.json"), "--side", "test",
                                 "--release", "bvp", "-o", str(tmp_path / "w2")])
    assert result.exit_code != 0 and "captures-disjoint" in result.output
    assert not (tmp_path / "w2").exists()


@pytest.mark.parametrize("release", ["bvp", "csi"])
def test_windows_of_one_release_equal_that_release_alone(both, tmp_path, release):
    """--release R over the both-releases split gives the X, y and rows that R's own manifest's split gives."""
    from rfbench.datasets.widar import ingest

    write_splits(both / "manifest.json", "cross-subject", tmp_path / "split.json", test=["user4"],
                 gestures="common6")
    alone = ingest_bvp(both / "tree", workers=1) if release == "bvp" else ingest(both / "tree", workers=1)
    alone.write(tmp_path / "alone.json")
    write_splits(tmp_path / "alone.json", "cross-subject", tmp_path / "alone-split.json", test=["user4"],
                 gestures="common6")
    for side in ("train", "test"):
        write_windows(tmp_path / "split.json", side, tmp_path / f"both-{side}", WindowSettings(release=release))
        write_windows(tmp_path / "alone-split.json", side, tmp_path / f"alone-{side}")
        for name in ("X.npy", "y.npy"):
            assert (tmp_path / f"both-{side}" / name).read_bytes() == \
                (tmp_path / f"alone-{side}" / name).read_bytes()
        index = json.loads((tmp_path / f"both-{side}" / "index.json").read_text())
        other = json.loads((tmp_path / f"alone-{side}" / "index.json").read_text())
        assert index["settings"]["release"] == release and other["settings"]["release"] is None
        assert index["rows"] == other["rows"] and index["labels"] == other["labels"]
        assert len(index["rows"]) > 0


def test_release_is_required_for_both_and_refused_for_one(both, tmp_path, runner):
    write_splits(both / "manifest.json", "cross-subject", tmp_path / "split.json", test=["user4"])
    result = runner.invoke(app, ["windows", str(tmp_path / "split.json"), "--side", "train", "-o",
                                 str(tmp_path / "w")])
    assert result.exit_code == 2 and "--release csi or --release bvp" in result.output
    ingest_bvp(both / "tree", workers=1).write(tmp_path / "bvp.json")
    write_splits(tmp_path / "bvp.json", "cross-subject", tmp_path / "bvp-split.json", test=["user4"])
    with pytest.raises(ValidationError, match="holds one"):
        write_windows(tmp_path / "bvp-split.json", "train", tmp_path / "w3", WindowSettings(release="bvp"))


def test_kind_both_needs_both_folders(tmp_path, runner):
    make_widar_bvp_tree(tmp_path / "bvp", frames=(1, 2), damage=False)
    result = runner.invoke(app, ["ingest", "widar", str(tmp_path / "bvp"), "--kind", "both", "-o",
                                 str(tmp_path / "m.json")])
    assert result.exit_code == 2
    assert "both releases need the folder holding CSI/ and BVP/ (found BVP/)" in result.output
    assert not (tmp_path / "m.json").exists()


@pytest.mark.long
def test_the_cli_ingests_both_and_a_bvp_chain_verifies_match(both, tmp_path, runner):
    pytest.importorskip("onnxruntime")
    from rfbench.nn.onnx_export import FeatureMap, fit_nearest_centroid, nearest_centroid_model

    root = tmp_path / "run"
    result = runner.invoke(app, ["generate", "widar", str(root / "tree"), "--kind", "both", "--records", "70,90",
                                 "--frames", "1,6", "--clean"])
    assert result.exit_code == 0 and "CSI + BVP tree" in result.output, result.output
    result = runner.invoke(app, ["ingest", "widar", str(root / "tree"), "--kind", "both", "-o",
                                 str(root / "manifest.json"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads((root / "manifest.json").read_text())["recordings"] == _manifest(both)["recordings"]
    captures = json.loads(result.output)["captures"]
    assert captures == _manifest(both)["captures"] and captures["both"] > 0
    result = runner.invoke(app, ["split", str(root / "manifest.json"), "-p", "cross-subject", "--test", "user4",
                                 "--gestures", "common6", "-o", str(root / "split.json")])
    assert result.exit_code == 0, result.output
    for side in ("train", "test"):
        result = runner.invoke(app, ["windows", str(root / "split.json"), "--side", side, "--release", "bvp",
                                     "-o", str(root / side)])
        assert result.exit_code == 0, result.output
    x, y = np.load(root / "train" / "X.npy"), np.load(root / "train" / "y.npy")
    names = json.loads((root / "train" / "index.json").read_text())["labels"]["names"]
    features = FeatureMap(row_shape=x.shape[1:], mean_axes=(0,))
    (root / "m.onnx").write_bytes(nearest_centroid_model(fit_nearest_centroid(features.apply(x), y, len(names)),
                                                         features))
    result = runner.invoke(app, ["predict", str(root / "m.onnx"), "--windows", str(root / "test"), "-o",
                                 str(root / "scores.npy")])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["score", "--pred", str(root / "scores.npy"), "--rows",
                                 str(root / "test" / "index.json"), "--split", str(root / "split.json"), "--task",
                                 "gesture", "-o", str(root / "report.json")])
    assert result.exit_code == 0, result.output
    assert json.loads((root / "report.json").read_text())["split"]["release"] == "bvp"  # compare names BVP
    result = runner.invoke(app, ["verify", str(root / "report.json"), "--root", str(root)])
    assert result.exit_code == 0 and "MATCH" in result.output, result.output
    # the recorded release is compared: an index claiming the CSI release no longer verifies
    index = json.loads((root / "test" / "index.json").read_text())
    index["settings"]["release"] = "csi"
    (root / "test" / "index.json").write_text(json.dumps(index))
    result = runner.invoke(app, ["verify", str(root / "report.json"), "--root", str(root)])
    assert result.exit_code != 0
