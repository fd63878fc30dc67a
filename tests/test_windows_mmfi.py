"""MM-Fi windows: frames mapped to ground-truth rows by number, windows and targets, empty frames, exclusions,
non-finite CSI (refused, or the toolbox's fill), labels, and what is read from the tree."""

from __future__ import annotations

import numpy as np
import pytest

import naive
from rfbench.datasets.windows import WindowSettings, build_windows, side_targets, toolbox_fill, write_windows
from rfbench.errors import FormatError, ValidationError
from rfbench.io.matv5 import read_mat
from tests.windowsdata import mmfi_case, write_frame


def _frame(root, rid, number):
    return read_mat(root / rid / "wifi-csi" / f"frame{number:03d}.mat")


def _expected_x(root, rid, start, stop, features=("CSIamp", "CSIphase")):
    return np.stack([np.stack([_frame(root, rid, k + 1)[v] for v in features]) for k in range(start, stop)]
                    ).astype(np.float32)


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    return mmfi_case(tmp_path_factory.mktemp("mmfi"))


def test_one_frame_windows_pair_each_frame_with_its_ground_truth_row(clean):
    root, _, split = clean
    w = build_windows(split, "test")
    # test side = S02 (A01, A02), 5 frames each: 10 one-frame windows
    assert w.x.shape == (10, 1, 2, 3, 114, 10) and w.x.dtype == np.float32
    assert w.index["x"]["axes"] == ["window", "frame", "feature", "antenna", "subcarrier", "packet"]
    assert [r["id"] for r in w.index["rows"]] == ["E01/S02/A01"] * 5 + ["E01/S02/A02"] * 5
    assert [(r["start"], r["stop"]) for r in w.index["rows"][:5]] == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)]
    for k, row in enumerate(w.index["rows"]):
        rid, start = row["id"], row["start"]
        np.testing.assert_array_equal(w.x[k], _expected_x(root, rid, start, start + 1))
        gt = np.load(root / rid / "ground_truth.npy")
        assert np.array_equal(w.y[k], gt[start]) and w.y.dtype == gt.dtype  # frame start+1 ↔ row start


def test_frames_are_matched_by_number_not_by_position_in_the_manifest(tmp_path):
    # The manifest lists the frame files in reverse: rows still pair frameNNN with ground-truth row NNN-1.
    def reverse(doc):
        for rec in doc["recordings"]:
            gt = [f for f in rec["files"] if f.get("kind") == "ground-truth"]
            frames = [f for f in rec["files"] if f.get("kind") == "wifi-frame"]
            rec["files"] = frames[::-1] + gt
    root, _, split = mmfi_case(tmp_path, edit=reverse)
    w = build_windows(split, "test")
    for k, row in enumerate(w.index["rows"]):
        first = _frame(root, row["id"], row["start"] + 1)["CSIamp"].astype(np.float32)
        np.testing.assert_array_equal(w.x[k, 0, 0], first)
        assert np.array_equal(w.y[k], np.load(root / row["id"] / "ground_truth.npy")[row["start"]])


@pytest.mark.parametrize("target, offset", [("last", 2), ("first", 0), ("center", 1)])
def test_longer_windows_and_their_target_frame(clean, target, offset):
    root, _, split = clean
    w = build_windows(split, "test", WindowSettings(length=3, stride=2, target=target))
    # 5 frames, length 3, stride 2: [0,3) [2,5) per recording
    assert [(r["start"], r["stop"]) for r in w.index["rows"]] == [(0, 3), (2, 5)] * 2
    assert w.x.shape == (4, 3, 2, 3, 114, 10)
    for k, row in enumerate(w.index["rows"]):
        np.testing.assert_array_equal(w.x[k], _expected_x(root, row["id"], row["start"], row["stop"]))
        gt = np.load(root / row["id"] / "ground_truth.npy")
        assert np.array_equal(w.y[k], gt[row["start"] + offset])
    assert w.index["settings"]["target"] == target


def test_amplitude_only_features(clean):
    root, _, split = clean
    w = build_windows(split, "test", WindowSettings(features="amp"))
    assert w.x.shape == (10, 1, 1, 3, 114, 10) and w.index["x"]["features"] == ["amp"]
    np.testing.assert_array_equal(w.x[3, 0, 0], _frame(root, "E01/S02/A01", 4)["CSIamp"].astype(np.float32))


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    # damage: S01/A01 frame002 empty, S01/A02 ground truth of 16 joints; test side S02 is intact.
    return mmfi_case(tmp_path_factory.mktemp("mmfi-damaged"), frames=6, damage=True, test=("S02",))


def test_windows_holding_an_empty_frame_are_dropped_and_counted(damaged):
    root, _, split = damaged
    w = build_windows(split, "train", WindowSettings(length=3))
    # S01/A01 has 6 frames with frame002 (position 1) empty: windows [0,3) [1,4) [2,5) [3,6); the first two hold it
    a01 = [(r["start"], r["stop"]) for r in w.index["rows"] if r["id"] == "E01/S01/A01"]
    assert a01 == [(2, 5), (3, 6)]
    assert w.index["dropped"] == [
        {"recording": "E01/S01/A01", "file": "E01/S01/A01/wifi-csi/frame002.mat", "window": {"start": a, "stop": b},
         "reason": "holds an empty (0-byte) frame"} for a, b in ((0, 3), (1, 4))]
    empty = [f for f in w.index["files"] if f["path"].endswith("E01/S01/A01/wifi-csi/frame002.mat")]
    assert empty == [{"path": "E01/S01/A01/wifi-csi/frame002.mat", "bytes": 0,
                      "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}]


def test_recordings_that_cannot_give_pose_rows_are_excluded_with_their_reason(damaged):
    _, _, split = damaged
    w = build_windows(split, "train")
    reasons = {e["id"]: e["reason"] for e in w.index["excluded"]}
    assert reasons["E01/S01/A02"] == "ground truth has shape (6, 16, 3); expected (6, 17, 3)"
    assert "E01/S01/A02" not in {r["id"] for r in w.index["rows"]}


def test_ground_truth_rows_must_match_the_frames(tmp_path):
    def short_gt(root):
        gt = np.load(root / "E01/S01/A01/ground_truth.npy")
        np.save(root / "E01/S01/A01/ground_truth.npy", gt[:4])  # 4 rows for 5 frames
    _, _, split = mmfi_case(tmp_path, edit_tree=short_gt)
    w = build_windows(split, "train")
    assert w.index["excluded"] == [{"id": "E01/S01/A01", "kind": "ground-truth",
                                    "reason": "ground truth has 4 rows but the recording has 5 WiFi frames"}]
    assert {r["id"] for r in w.index["rows"]} == {"E01/S01/A02"}


def test_ground_truth_keeps_its_own_dtype_exactly(tmp_path):
    def as_float32(root):
        for gt in root.glob("E0*/S*/A*/ground_truth.npy"):
            np.save(gt, np.load(gt).astype(np.float32) + np.float32(1e-7))
    root, _, split = mmfi_case(tmp_path, edit_tree=as_float32)
    t = side_targets(split, "test")
    gt = np.load(root / "E01/S02/A01/ground_truth.npy")
    assert t.y.dtype == np.float32
    assert t.y[:5].tobytes() == gt.tobytes()


def test_ground_truths_of_different_dtypes_are_refused(tmp_path):
    def one_float32(root):
        p = root / "E01/S01/A02/ground_truth.npy"
        np.save(p, np.load(p).astype(np.float32))
    _, _, split = mmfi_case(tmp_path, edit_tree=one_float32)
    with pytest.raises(ValidationError, match="ground truths of different dtypes"):
        build_windows(split, "train")


def _put_nan(path, where, value=np.nan, var="CSIamp"):
    m = read_mat(path)
    m[var][where] = value
    write_frame(path, m["CSIamp"], m["CSIphase"])


def test_non_finite_csi_is_refused_naming_the_frame(tmp_path):
    _, _, split = mmfi_case(tmp_path, edit_tree=lambda r: _put_nan(r / "E01/S02/A01/wifi-csi/frame003.mat",
                                                                    (0, 5, 2)))
    with pytest.raises(ValidationError, match=r"E01/S02/A01/wifi-csi/frame003\.mat: CSIamp holds 1 non-finite"):
        build_windows(split, "test")
    with pytest.raises(ValidationError, match="frame003.mat"):
        write_windows(split, "test", tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_toolbox_fill_reproduces_the_toolbox_and_is_recorded(tmp_path):
    def damage(root):
        p = root / "E01/S02/A01/wifi-csi/frame002.mat"
        _put_nan(p, (0, slice(3, 6), 4))
        _put_nan(p, (2, 100, 4), np.inf)
        _put_nan(p, (1, 7, 9), -np.inf)
    root, _, split = mmfi_case(tmp_path, edit_tree=damage)
    w = build_windows(split, "test", WindowSettings(nonfinite="toolbox-fill"))
    raw = _frame(root, "E01/S02/A01", 2)["CSIamp"]
    expected = naive.mmfi_toolbox_fill(raw).astype(np.float32)
    np.testing.assert_array_equal(w.x[1, 0, 0], expected)
    assert np.isfinite(w.x).all()
    assert w.index["filled"] == {"frames": 1, "values": 5}
    # the filled packet 4 holds the mean of its 337 finite values at the 4 replaced places
    assert w.x[1, 0, 0, 0, 3, 4] == np.float32(np.mean(raw[:, :, 4][np.isfinite(raw[:, :, 4])]))


def test_toolbox_fill_never_fills_phase_or_an_all_nan_packet(tmp_path):
    _, _, split = mmfi_case(tmp_path, edit_tree=lambda r: _put_nan(r / "E01/S02/A01/wifi-csi/frame001.mat",
                                                                    (0, 0, 0), var="CSIphase"))
    with pytest.raises(ValidationError, match="CSIamp only"):
        build_windows(split, "test", WindowSettings(nonfinite="toolbox-fill"))
    assert len(build_windows(split, "test", WindowSettings(nonfinite="toolbox-fill", features="amp"))) == 10
    _, _, split2 = mmfi_case(tmp_path / "b", edit_tree=lambda r: _put_nan(r / "E01/S02/A01/wifi-csi/frame001.mat",
                                                                           (slice(None), slice(None), 3)))
    with pytest.raises(ValidationError, match="no finite value"):
        build_windows(split2, "test", WindowSettings(nonfinite="toolbox-fill"))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_toolbox_fill_matches_the_transliteration_on_random_frames(seed):
    rng = np.random.default_rng(seed)
    amp = rng.normal(10, 2, size=(3, 114, 10))
    amp[rng.random(amp.shape) < 0.05] = np.nan
    amp[rng.random(amp.shape) < 0.01] = np.inf
    amp[:, :, 7] = np.nan  # an all-NaN packet stays NaN in both
    ours, count = toolbox_fill(amp)
    theirs = naive.mmfi_toolbox_fill(amp)
    np.testing.assert_array_equal(ours, theirs)
    assert count == int(np.sum(~np.isfinite(amp[:, :, [k for k in range(10) if k != 7]])))


def test_a_frame_without_csiamp_is_a_format_error(tmp_path):
    from rfbench.datasets.synthetic import mat_v5_bytes

    def strip(root):
        (root / "E01/S02/A01/wifi-csi/frame001.mat").write_bytes(mat_v5_bytes({"other": np.zeros((3, 114, 10))}))
    _, _, split = mmfi_case(tmp_path, edit_tree=strip)
    with pytest.raises(FormatError, match="frame001.mat: no CSIamp variable"):
        build_windows(split, "test")


def test_frames_of_another_layout_read_exactly_like_the_parser(tmp_path):
    # Compressed (scipy's writer) frames take the parser's path; values must be the same as read_mat's.
    scipy_io = pytest.importorskip("scipy.io")

    def recompress(root):
        for p in sorted((root / "E01/S02/A01/wifi-csi").glob("frame*.mat"))[::2]:
            m = read_mat(p)
            scipy_io.savemat(p, {"CSIamp": m["CSIamp"], "CSIphase": m["CSIphase"]}, do_compression=True)
    root, _, split = mmfi_case(tmp_path, edit_tree=recompress)
    w = build_windows(split, "test")
    for k in range(5):
        np.testing.assert_array_equal(w.x[k], _expected_x(root, "E01/S02/A01", k, k + 1))


def test_action_labels_index_the_sorted_actions_of_the_whole_manifest(clean):
    _, _, split = clean
    w = build_windows(split, "test", WindowSettings(task="gesture"))
    assert w.index["labels"]["names"] == ["A01", "A02"] and w.index["labels"]["key"] == "action"
    assert w.y.dtype == np.int64 and w.y.tolist() == [0] * 5 + [1] * 5
    assert w.index["y"]["kind"] == "label"


def test_only_the_frames_of_kept_windows_are_read_and_every_one_is_listed(clean):
    _, _, split = clean
    w = build_windows(split, "test", WindowSettings(length=2, stride=3))
    # 5 frames, length 2, stride 3: [0,2) [3,5): frame003 (position 2) is never read
    paths = [f["path"] for f in w.index["files"]]
    assert paths == sorted(paths)
    a01 = [p for p in paths if p.startswith("E01/S02/A01/")]
    assert a01 == ["E01/S02/A01/ground_truth.npy"] + [f"E01/S02/A01/wifi-csi/frame00{k}.mat" for k in (1, 2, 4, 5)]


def test_workers_do_not_change_the_result(clean):
    _, _, split = clean
    one = build_windows(split, "train", WindowSettings(length=2), workers=1)
    four = build_windows(split, "train", WindowSettings(length=2), workers=4)
    assert one.x.tobytes() == four.x.tobytes() and one.index == four.index
