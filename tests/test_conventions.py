"""Normalizations and named conventions: ADR-173's key proof through the CLI, absolute thresholds, and each
convention against a transliteration of its source function."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.errors import ValidationError
from rfbench.metrics import pose
from rfbench.metrics.skeletons import skeleton_from_dict

# ADR-173's four joints: a nose, a shoulder and the two hips, in a box 0.20 wide and 0.80 high.
FOUR_TOML = """\
name = "adr173-four"
joints = ["nose", "shoulder", "left_hip", "right_hip"]
[roles]
left_hip = "left_hip"
right_hip = "right_hip"
"""


def _adr173_arrays():
    """Ground truth and identical predictions of ADR-173's key proof, built by hand.

    Ground truth (x, y) in metres: nose (0.10, 0.80), shoulder (0.00, 0.60), left hip (0.00, 0.00), right hip
    (0.20, 0.00). Box 0.20 x 0.80: diagonal sqrt(0.20² + 0.80²) = 0.8246. Hip width 0.20.
    Prediction: the nose 0.06 off (x 0.16), the shoulder 0.10 off (x 0.10), the hips exact.
    At k = 0.2:
      hip-width: threshold 0.2 x 0.20 = 0.040: nose (0.06) and shoulder (0.10) fail, hips pass -> 2/4 = 0.50
      bbox:      threshold 0.2 x 0.8246 = 0.165: every joint passes                       -> 4/4 = 1.00
      abs:0.08:  threshold 0.08 itself: nose passes, shoulder fails, hips pass           -> 3/4 = 0.75
    (With k x T instead, abs:0.08 would be 0.016: the hips only, 0.50.)
    """
    gt = np.array([[[0.10, 0.80], [0.00, 0.60], [0.00, 0.00], [0.20, 0.00]]])
    pred = gt.copy()
    pred[0, 0, 0] += 0.06
    pred[0, 1, 0] += 0.10
    return pred, gt


def test_adr173_key_proof_in_one_score_command(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pred, gt = _adr173_arrays()
    np.save("pred.npy", pred)
    np.save("gt.npy", gt)
    (tmp_path / "four.toml").write_text(FOUR_TOML)
    result = runner.invoke(app, ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--skeleton", "four.toml",
                                 "--units", "m", "--norm", "hip-width,bbox,abs:0.08", "--k", "0.2", "--metrics", "pck",
                                 "--averaging", "micro", "--bootstrap", "0", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    got = {r["label"]: r["model"]["value"] for r in report["results"]}
    import hashlib

    name = f"adr173-four@{hashlib.sha256(FOUR_TOML.encode()).hexdigest()[:8]}"  # a layout file's sha256 prefix
    assert got == {
        f"PCK@0.20 hip-width(left_hip–right_hip) {name} <= micro": 0.5,
        f"PCK@0.20 bbox {name} <= micro": 1.0,
        f"PCK abs(≤0.08 m) {name} micro": 0.75,
    }
    absolute = next(r for r in report["results"] if r["spec"]["normalization"] == "abs:0.08")
    assert absolute["spec"]["k"] is None  # k does not apply to an absolute threshold


def test_mmpose_unit_test_auc_is_kept():
    # mmpose tests/test_evaluation/test_functional/test_keypoint_eval.py, test_keypoint_auc: one sample, five
    # joints, joint 2 masked; keypoint_auc(output, target, mask, norm_factor=20, num_thrs=4) = 0.375.
    # Distances of the visible joints: 4, 8, sqrt(200) = 14.14, 20; thresholds 20 x (0, 0.25, 0.5, 0.75) =
    # 0, 5, 10, 15 with '<': 0, 1, 2 and 3 of the 4 joints -> (0 + 1/4 + 2/4 + 3/4) / 4 = 0.375.
    output = np.zeros((1, 5, 2))
    target = np.zeros((1, 5, 2))
    mask = np.array([[True, True, False, True, True]])
    output[0, 0], target[0, 0] = [10, 4], [10, 0]
    output[0, 1], target[0, 1] = [10, 18], [10, 10]
    output[0, 2], target[0, 2] = [0, 0], [0, -1]
    output[0, 3], target[0, 3] = [40, 40], [30, 30]
    output[0, 4], target[0, 4] = [20, 10], [0, 10]
    five = skeleton_from_dict({"name": "five", "joints": ["a", "b", "c", "d", "e"]})
    got = pose.pck_auc(output, target, mask, skeleton=five, units="px", normalization="abs:20", n=4,
                       comparison="<", averaging="macro")
    assert got.value == pytest.approx(0.375, abs=1e-15)
    assert got.spec.auc_max is None and got.label == f"PCK-AUC abs[0,20 px) n=4 {five.name} < macro"


# -- spec pieces, each on its own, by hand --------------------------------------------------------------


def _line(errors, gt=None):
    """A 4-joint pose (ADR-173's) with joint j moved by errors[j] along x."""
    _, g = _adr173_arrays()
    g = g if gt is None else gt
    p = g.copy()
    p[0, :, 0] += np.asarray(errors, dtype=float)
    return p, g


FOUR = skeleton_from_dict({"name": "four", "joints": ["nose", "shoulder", "left_hip", "right_hip"],
                           "roles": {"left_hip": "left_hip", "right_hip": "right_hip"}})


def test_pair_by_index_or_name_is_a_normalization():
    # pair:2,3 is the hips (hip width 0.20): at k = 0.2 the threshold is 0.04 -> nose (0.06) and shoulder (0.10)
    # fail: 2/4, as hip-width. By name it is the same pair.
    pred, gt = _adr173_arrays()
    by_index = pose.pck(pred, gt, skeleton=FOUR, units="m", normalization="pair:2,3", k=0.2)
    by_name = pose.pck(pred, gt, skeleton=FOUR, units="m", normalization="pair:left_hip,right_hip", k=0.2)
    assert by_index.value == by_name.value == 0.5
    assert by_index.label == f"PCK@0.20 pair:2,3(left_hip–right_hip) {FOUR.name} <= micro"
    assert by_index.spec.normalizer_joints == ("left_hip", "right_hip")
    # pair:0,1 (nose–shoulder, |(0.1, 0.2)| = 0.2236): threshold 0.0447 -> 2/4 too, but another pair.
    with pytest.raises(ValidationError, match="outside skeleton four"):
        pose.pck(pred, gt, skeleton=FOUR, units="m", normalization="pair:0,4", k=0.2)
    with pytest.raises(ValidationError, match="must differ"):
        pose.pck(pred, gt, skeleton=FOUR, units="m", normalization="pair:1,1", k=0.2)
    with pytest.raises(ValidationError, match="has no joint 'knee'"):
        pose.pck(pred, gt, skeleton=FOUR, units="m", normalization="pair:knee,nose", k=0.2)


def test_normalizer_floors_clamp_and_none():
    # Hips 0.001 apart (x 0.0 and 0.001): the relative floor (1e-6 of the 0.8 diagonal) still accepts it.
    gt = np.array([[[0.10, 0.80], [0.00, 0.60], [0.00, 0.00], [0.001, 0.00]]])
    pred = gt.copy()
    pred[0, :, 0] += [0.06, 0.10, 0.0, 0.0]
    kw = dict(skeleton=FOUR, units="m", normalization="hip-width", k=0.2)
    # relative: threshold 0.2 x 0.001 = 0.0002 -> only the exact hips pass: 2/4
    assert pose.pck(pred, gt, **kw).value == 0.5
    # clamp:0.5: the normalizer is max(0.001, 0.5) = 0.5, threshold 0.1 -> nose, shoulder (0.10), hips: 4/4
    clamped = pose.pck(pred, gt, normalizer_floor="clamp:0.5", **kw)
    assert clamped.value == 1.0 and "clamped≥0.5" in clamped.label
    assert clamped.spec.to_dict()["normalizer_floor"] == "clamped to >= 0.5 m"
    # Coincident hips: relative -> unscoreable; none -> the sample counts, every joint wrong (0/0 and d/0).
    gt[0, 3] = gt[0, 2]
    assert pose.pck(gt.copy(), gt, **kw).value is None
    none = pose.pck(gt.copy(), gt, normalizer_floor="none", **kw)
    assert none.value == 0.0 and none.scoreable == 4 and none.unscoreable_samples == 0
    assert "unclamped" in none.label
    with pytest.raises(ValidationError, match="normalizer floor"):
        pose.pck(gt.copy(), gt, normalizer_floor="clamp:-1", **kw)


def test_visibility_ignored_scores_every_joint():
    # The shoulder (0.10 off) marked invisible. Used: 3 scoreable joints under abs:0.08 (nose 0.06, hips 0),
    # all pass: 3/3. Ignored: 4 joints, the shoulder fails: 3/4.
    pred, gt = _adr173_arrays()
    vis = np.array([[True, False, True, True]])
    kw = dict(skeleton=FOUR, units="m", normalization="abs:0.08", k=0.2)
    assert pose.pck(pred, gt, vis, **kw).value == 1.0
    ignored = pose.pck(pred, gt, vis, visibility="ignored", **kw)
    assert ignored.value == 0.75 and ignored.scoreable == 4 and "no-visibility" in ignored.label
    # MPJPE likewise: (0.06 + 0 + 0) / 3 with visibility, (0.06 + 0.10) / 4 without.
    assert pose.mpjpe(pred, gt, vis, skeleton=FOUR, units="m").value == pytest.approx(0.02, abs=1e-15)
    assert pose.mpjpe(pred, gt, vis, skeleton=FOUR, units="m", visibility="ignored").value == \
        pytest.approx(0.04, abs=1e-15)
    # NaN ground truth at an invisible joint is refused once every joint is scored.
    bad = gt.copy()
    bad[0, 1, 0] = np.nan
    assert pose.pck(pred, bad, vis, **kw).value == 1.0
    with pytest.raises(ValidationError, match="uses every joint"):
        pose.pck(pred, bad, vis, visibility="ignored", **kw)


def test_per_axis_and_float32_and_batch_mean_by_hand():
    # Per axis with a box normalizer: |(dx, dy) / z| = |(dx, dy)| / z exactly here (z = 0.8, the longest side):
    # nose 0.06 / 0.8 = 0.075, shoulder 0.125, hips 0 -> at k = 0.1 with '<': 3/4.
    pred, gt = _adr173_arrays()
    kw = dict(skeleton=FOUR, units="m", normalization="bbox-max-side", k=0.1, comparison="<")
    plain = pose.pck(pred, gt, **kw)
    per = pose.pck(pred, gt, per_axis=True, precision="float32", **kw)
    assert plain.value == per.value == 0.75
    assert per.label == f"PCK@0.10 bbox-max-side {FOUR.name} < micro per-axis float32"
    # float32 matters at a boundary: a ratio just above 0.1 in float64 that rounds to float32(0.1) passes '<='.
    g = np.array([[[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]]])  # box 1 x 1
    p = g.copy()
    p[0, 0, 0] = 0.1 + 1e-12  # ratio 0.100000000001 > 0.1, but float32 of it == float32(0.1)
    kw2 = dict(skeleton=FOUR, units="m", normalization="bbox-max-side", k=0.1)
    assert pose.pck(p, g, **kw2).value == 0.75
    assert pose.pck(p, g, precision="float32", **kw2).value == 1.0
    # batch-mean: three rows, batches of 2: [A, B] and [C]. A and B perfect (4/4 each) -> 1; C all wrong -> 0.
    # batch-mean = (1 + 0) / 2 = 0.5; micro over rows = 8/12.
    rows = np.concatenate([g, g, g])
    pr = rows.copy()
    pr[2] += 5.0
    kw3 = dict(skeleton=FOUR, units="m", normalization="abs:0.5", k=0.2)
    assert pose.pck(pr, rows, **kw3).value == pytest.approx(8 / 12, abs=1e-15)
    bm = pose.pck(pr, rows, averaging="batch-mean", batch_size=2, **kw3)
    assert bm.value == 0.5 and bm.label == f"PCK abs(≤0.5 m) {FOUR.name} batch-mean(B=2)"
    assert not bm.spec.bootstrappable
    with pytest.raises(ValidationError, match="needs a batch size"):
        pose.pck(pr, rows, averaging="batch-mean", **kw3)
    with pytest.raises(ValidationError, match="batch-mean averaging only"):
        pose.pck(pr, rows, batch_size=2, **kw3)


def test_result_float32_divides_in_float32():
    # 1 hit of 3 joints: float64 1/3 = 0.333...3315, float32 1/3 = 0.3333333432674408.
    g = np.array([[[0.0, 0.0], [0.0, 1.0], [1.0, 0.0]]])
    p = g.copy()
    p[0, 1:, 0] += 1.0
    three = skeleton_from_dict({"name": "three", "joints": ["a", "b", "c"]})
    kw = dict(skeleton=three, units="m", normalization="abs:0.5", k=0.2)
    assert pose.pck(p, g, **kw).value == 1 / 3
    r32 = pose.pck(p, g, result_precision="float32", **kw)
    assert r32.value == float(np.float32(1) / np.float32(3)) != 1 / 3
    assert "result-float32" in r32.label


def test_pa_fit_on_all_joints_reproduces_mmposes_unit_test():
    # mmpose test_keypoint_eval.py test_keypoint_mpjpe: 2 frames x 5 joints (3D), joint 2 masked.
    # mmpose: p_mpjpe 1.0047897634604497 (alignment fitted on all 5 joints); rfbench's default fits the 4 visible
    # ones and gets 0.7385.
    output, target, mask = _mmpose_mpjpe_case()
    five = skeleton_from_dict({"name": "five", "joints": ["a", "b", "c", "d", "e"]})
    visible_fit = pose.pa_mpjpe(output, target, mask, skeleton=five, units="m")
    all_fit = pose.pa_mpjpe(output, target, mask, skeleton=five, units="m", pa_fit="all")
    conv = pose.pa_mpjpe(output, target, mask, skeleton=five, units="m", convention="mmpose")
    assert all_fit.value == pytest.approx(1.0047897634604497, abs=1e-12)
    assert conv.value == pytest.approx(1.0047897634604497, abs=1e-12)
    assert visible_fit.value == pytest.approx(0.7385, abs=5e-5)
    assert "fit-all-joints" in all_fit.label and "[mmpose" in conv.label
    assert pose.mpjpe(output, target, mask, skeleton=five, units="m").value == \
        pytest.approx(0.9625211990796929, abs=1e-12)


def _mmpose_mpjpe_case():
    output = np.zeros((2, 5, 3))
    target = np.zeros((2, 5, 3))
    mask = np.array([[True, True, False, True, True], [True, True, False, True, True]])
    output[0, 0], target[0, 0] = [1, 0, 0], [1, 0, 0]
    output[1, 0], target[1, 0] = [1, 0, 0], [1, 1, 0]
    output[0, 1], target[0, 1] = [2, 2, 0], [1, 1, 1]
    output[1, 1], target[1, 1] = [2, 2, 1], [1, 0, 1]
    output[0, 2], target[0, 2] = [0, 0, -1], [-1, 0, 0]
    output[1, 2], target[1, 2] = [-1, 0, 0], [-1, 0, 0]
    output[0, 3], target[0, 3] = [3, 3, 1], [3, 3, 1]
    output[1, 3], target[1, 3] = [0, 0, 3], [0, 0, 3]
    output[0, 4], target[0, 4] = [0, 1, 1], [0, 1, 0]
    output[1, 4], target[1, 4] = [0, 0, 1], [1, 1, 0]
    return output, target, mask


# -- each convention against a transliteration of its source, on seeded random poses -----------------------

import transliterations as tr  # noqa: E402
from posedata import h36m_poses  # noqa: E402


def _noisy(gt, seed, scale):
    return gt + np.random.default_rng(seed).normal(scale=scale, size=gt.shape)


@pytest.mark.parametrize("seed,n,batch", [(0, 100, 32), (1, 64, 64), (2, 37, 8)])
def test_graphpose_fi_equals_its_validation_loop(seed, n, batch):
    # h36m17 3D poses (GraphPose-Fi's own order); a short last batch when n % batch != 0.
    gt = h36m_poses(n, seed=seed)
    pred = _noisy(gt, seed + 10, 0.08)
    ks = (0.5, 0.4, 0.3, 0.2, 0.1)
    want_pck, want_mpjpe, want_pa = tr.gpf_validation(pred, gt, batch, thresholds=ks)
    ev = pose.evaluate_pose(pred, gt, skeleton="h36m17", units="m", ks=ks, convention="graphpose-fi",
                            batch_size=batch)
    for k in ks:
        got = ev.find("pck", k=k).value
        assert abs(got - want_pck[k] / 100) <= 1e-12  # rfbench reports the fraction, the source percent
    assert abs(ev.find("mpjpe").value - want_mpjpe) <= 1e-12
    assert abs(ev.find("pa-mpjpe").value - want_pa) <= 1e-12


def test_graphpose_fi_batch_mean_differs_from_micro_with_a_short_last_batch():
    # 40 rows in batches of 32: the last 8 rows weigh like the first 32.
    gt = h36m_poses(40, seed=4)
    pred = _noisy(gt, 5, 0.08)
    pred[32:] += 0.5  # the short last batch is far off
    want, _, _ = tr.gpf_validation(pred, gt, 32, thresholds=(0.2,))
    bm = pose.pck(pred, gt, skeleton="h36m17", units="m", k=0.2, convention="graphpose-fi", batch_size=32)
    micro = pose.pck(pred, gt, skeleton="h36m17", units="m", normalization="pair:5,12", k=0.2,
                     normalizer_floor="none", visibility="ignored")
    assert abs(bm.value - want[0.2] / 100) <= 1e-12
    assert abs(bm.value - micro.value) > 0.05


def test_graphpose_fi_on_random_poses_with_a_zero_normalizer():
    # Pure noise (trust_layout: it fits no layout) and one frame whose joints 5 and 12 coincide: the source
    # divides by 0 and counts every joint of that frame wrong; so does rfbench's unclamped floor.
    rng = np.random.default_rng(6)
    gt = rng.normal(size=(50, 17, 3))
    gt[7, 12] = gt[7, 5]
    pred = gt + rng.normal(scale=0.3, size=gt.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        want, want_mpjpe, _ = tr.gpf_validation(pred, gt, 16, thresholds=(0.5, 0.2))
    ev = pose.evaluate_pose(pred, gt, skeleton="h36m17", units="m", ks=[0.5, 0.2], convention="graphpose-fi",
                            batch_size=16, metrics=["pck", "mpjpe"], trust_layout=True)
    for k in (0.5, 0.2):
        assert abs(ev.find("pck", k=k).value - want[k] / 100) <= 1e-12
    assert ev.find("pck", k=0.5).unscoreable_samples == 0
    assert abs(ev.find("mpjpe").value - want_mpjpe) <= 1e-12


@pytest.mark.parametrize("dims,seed", [(3, 0), (2, 1), (3, 2)])
def test_mmfi_toolbox_equals_calulate_error(dims, seed):
    rng = np.random.default_rng(seed)
    gt = h36m_poses(60, seed=seed)[..., :dims] if dims == 3 else rng.normal(size=(60, 17, 2))
    pred = _noisy(gt, seed + 3, 0.1)
    vis = rng.random((60, 17)) > 0.3  # ignored: the toolbox has no visibility
    want_mpjpe, want_pa = tr.mmfi_calulate_error(pred, gt)
    ev = pose.evaluate_pose(pred, gt, vis, skeleton="h36m17", units="m", convention="mmfi-toolbox")
    assert {s.spec.metric for s in ev.scores} == {"mpjpe", "pa-mpjpe"}
    assert abs(ev.find("mpjpe").value - want_mpjpe) <= 1e-12
    assert abs(ev.find("pa-mpjpe").value - want_pa) <= 1e-12


def _wiflow_poses(n, seed):
    """Random 2D poses in wiflow15 order on WiFlow-like scales (its labels are pixel coordinates / 1000)."""
    rng = np.random.default_rng(seed)
    gt = rng.uniform(0.1, 0.6, size=(n, 15, 2))
    pred = gt + rng.normal(scale=0.03, size=gt.shape)
    gt[3, 12] = gt[3, 2] + 0.001  # a normaliser below the clamp: 0.01 is used
    gt[4, 12] = gt[4, 2]  # a zero normaliser: clamped too
    return pred, gt


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_wiflow_equals_calculate_pck_and_calculate_mpjpe(seed):
    pred, gt = _wiflow_poses(90, seed)
    ks = (0.1, 0.2, 0.3, 0.4, 0.5)
    want = tr.wiflow_calculate_pck(pred, gt, thresholds=list(ks))
    ev = pose.evaluate_pose(pred, gt, skeleton="wiflow15", units="normalized", ks=ks, convention="wiflow")
    for k in ks:
        assert abs(ev.find("pck", k=k).value - want[k]) <= 1e-12
    assert abs(ev.find("mpjpe").value - tr.wiflow_calculate_mpjpe(pred, gt)) <= 1e-12
    assert ev.find("pck", k=0.2).label == ("PCK@0.20 pair:2,12(left_shoulder–right_hip) wiflow15 <= micro "
                                           "clamped≥0.01 result-float32 no-visibility [wiflow]")


def test_wiflow_training_script_differs_by_float32_rounding_and_dropped_rows():
    # train.py weighs each batch's float32 fraction by its size and drops the last partial batch. With 96 rows
    # in batches of 32 nothing is dropped: the two agree to float32 rounding (< 1e-7), not exactly.
    pred, gt = _wiflow_poses(96, 3)
    script, script_mpe = tr.wiflow_test(pred, gt, 32, thresholds=(0.2,))
    got = pose.pck(pred, gt, skeleton="wiflow15", units="normalized", k=0.2, convention="wiflow").value
    assert abs(got - script[0.2]) < 1e-7
    assert abs(pose.mpjpe(pred, gt, skeleton="wiflow15", units="normalized", convention="wiflow").value
               - script_mpe) <= 1e-12
    # With 100 rows the script scores 96 of them.
    pred2 = np.concatenate([pred, pred[:4] + 1.0])
    gt2 = np.concatenate([gt, gt[:4]])
    script2, _ = tr.wiflow_test(pred2, gt2, 32, thresholds=(0.2,))
    assert script2 == script
    assert pose.pck(pred2, gt2, skeleton="wiflow15", units="normalized", k=0.2, convention="wiflow").value < got


def _mmpose_random(seed, n=40):
    rng = np.random.default_rng(seed)
    gt = rng.uniform(0, 200, size=(n, 17, 2))
    pred = gt + rng.normal(scale=15, size=gt.shape)
    mask = rng.random((n, 17)) > 0.25
    mask[3] = False  # a sample with no visible joint
    gt[4] = 50.0  # a sample whose joints coincide: zero box, masked
    mask[:, 7] = False  # a joint never visible: left out of mmpose's average
    return pred, gt, mask


@pytest.mark.parametrize("seed,thr", [(0, 0.05), (1, 0.2), (2, 0.5)])
def test_mmpose_pck_equals_keypoint_pck_accuracy(seed, thr):
    pred, gt, mask = _mmpose_random(seed)
    side = np.array([np.ptp(gt[i][mask[i]], axis=0).max() if mask[i].any() else 0.0 for i in range(len(gt))])
    acc, avg, cnt = tr.mmpose_keypoint_pck_accuracy(pred, gt, mask, thr, np.stack([side, side], axis=1))
    got = pose.pck(pred, gt, mask, skeleton="coco17", units="px", k=thr, convention="mmpose", trust_layout=True)
    assert abs(got.value - avg) <= 1e-12
    per = [got.per_joint[j] for j in pose.get_skeleton("coco17").joints]
    for a, b in zip(acc, per):
        assert (b is None and a == -1) or abs(b - a) <= 1e-12
    assert cnt == sum(p is not None for p in per) == 16
    assert got.label.startswith("PCK@") and "bbox-max-side coco17 < macro per-axis float32 [mmpose" in got.label


@pytest.mark.parametrize("seed", [3, 4])
def test_mmpose_auc_equals_keypoint_auc(seed):
    pred, gt, mask = _mmpose_random(seed)
    want = tr.mmpose_keypoint_auc(pred, gt, mask, 30, num_thrs=20)
    got = pose.pck_auc(pred, gt, mask, skeleton="coco17", units="px", n=20, convention="mmpose", trust_layout=True)
    assert abs(got.value - want) <= 1e-12
    assert got.label.startswith("PCK-AUC abs[0,30 px) n=20 coco17 < macro per-axis float32 [mmpose")


@pytest.mark.parametrize("seed", [5, 6])
def test_mmpose_mpjpe_and_procrustes_equal_keypoint_mpjpe(seed):
    rng = np.random.default_rng(seed)
    gt = h36m_poses(30, seed=seed)
    pred = _noisy(gt, seed, 0.1)
    mask = rng.random((30, 17)) > 0.2
    mask[:, 0] = True
    ev = pose.evaluate_pose(pred, gt, mask, skeleton="h36m17", units="m", convention="mmpose")
    assert abs(ev.find("mpjpe").value - tr.mmpose_keypoint_mpjpe(pred, gt, mask)) <= 1e-12
    assert abs(ev.find("pa-mpjpe").value - tr.mmpose_keypoint_mpjpe(pred, gt, mask, "procrustes")) <= 1e-12


# -- what a convention refuses ---------------------------------------------------------------------------


def test_a_metric_the_source_does_not_compute_is_an_error():
    gt = h36m_poses(5, seed=0)
    with pytest.raises(ValidationError, match="mmfi-toolbox does not define pck.*computes mpjpe, pa-mpjpe only"):
        pose.evaluate_pose(gt, gt, skeleton="h36m17", units="m", metrics=["pck"], convention="mmfi-toolbox")
    with pytest.raises(ValidationError, match="graphpose-fi does not define pck-auc"):
        pose.evaluate_pose(gt, gt, skeleton="h36m17", units="m", metrics=["pck-auc"], convention="graphpose-fi")
    with pytest.raises(ValidationError, match="computes pa-mpjpe for 3D poses only"):
        pose.evaluate_pose(gt[..., :2], gt[..., :2], skeleton="h36m17", units="m", metrics=["pa-mpjpe"],
                           convention="mmpose", trust_layout=True)
    with pytest.raises(ValidationError, match="unknown convention 'openpose'"):
        pose.evaluate_pose(gt, gt, skeleton="h36m17", units="m", convention="openpose")


def test_a_convention_refuses_the_settings_it_fixes_and_needs_its_batch_size():
    gt = h36m_poses(5, seed=0)
    kw = dict(skeleton="h36m17", units="m")
    with pytest.raises(ValidationError, match="sets the normalizations itself"):
        pose.evaluate_pose(gt, gt, normalizations=["bbox"], convention="wiflow", **kw)
    with pytest.raises(ValidationError, match="sets the comparison, averaging itself"):
        pose.evaluate_pose(gt, gt, comparison="<", averaging=["micro"], convention="wiflow", **kw)
    with pytest.raises(ValidationError, match="sets the visibility itself"):
        pose.evaluate_pose(gt, gt, visibility="ignored", convention="mmpose", **kw)
    with pytest.raises(ValidationError, match="needs a batch size.*default 256"):
        pose.evaluate_pose(gt, gt, convention="graphpose-fi", **kw)
    with pytest.raises(ValidationError, match="wiflow does not average over batches"):
        pose.evaluate_pose(gt, gt, convention="wiflow", batch_size=8, **kw)
    # ks and the batch size combine with a convention.
    ev = pose.evaluate_pose(gt, gt, convention="graphpose-fi", batch_size=2, ks=[0.1, 0.3], metrics=["pck"], **kw)
    assert [s.spec.k for s in ev.scores] == [0.1, 0.3] and all(s.value == 1.0 for s in ev.scores)


def test_every_convention_names_a_stored_source_and_consistent_rules():
    from rfbench.metrics.conventions import CONVENTIONS

    assert set(CONVENTIONS) == {"graphpose-fi", "mmfi-toolbox", "wiflow", "mmpose"}
    for conv in CONVENTIONS.values():
        assert len(conv.commit) == 40 and "/" in conv.repository and conv.files
        assert len({r.visibility for r in conv.rules.values()}) == 1
        pck = [conv.rules[m] for m in ("pck", "pck-auc") if m in conv.rules]
        for field in ("comparison", "floor", "per_axis", "precision"):
            assert len({getattr(r, field) for r in pck}) <= 1, (conv.name, field)


# -- the kernel's new paths against the naive twin ---------------------------------------------------------

import naive  # noqa: E402

_SPEC_NORMS = ["hip-width", "pair:5,12", "bbox", "bbox-max-side", "abs:0.3"]


def _naive_norms(floor):
    f = ("relative",) if floor == "relative" else ("none",) if floor == "none" else ("clamp", float(floor[6:]))
    return [("pair", 11, 12, f), ("pair", 5, 12, f), ("bbox", f), ("max", f), ("abs", 0.3)]


def _spec_counts(plan, pred, gt, vis, segments):
    table = plan.table(pred, gt, vis, segments)
    tot = table.sum(axis=0)
    c = plan.columns
    return {name: tot[c[name]] for name in ("rows", "novis", "norm_bad", "pck_n", "pck_hit", "auc_pass")}


@pytest.mark.parametrize("floor", ["relative", "clamp:0.4", "none"])
@pytest.mark.parametrize("per_axis,single,strict", [(False, False, False), (True, False, True), (False, True, False),
                                                    (True, True, True)])
@pytest.mark.parametrize("dims", [2, 3])
def test_kernel_spec_paths_match_naive_twin(floor, per_axis, single, strict, dims):
    rng = np.random.default_rng(hash((floor, per_axis, single, dims)) % 2**32)
    n = 29
    gt = rng.normal(size=(n, 17, dims))
    pred = gt + rng.normal(scale=0.3, size=gt.shape)
    vis = (rng.random((n, 17)) > 0.3).astype(np.uint8)
    vis[3] = 0  # nothing visible
    vis[5, :] = 0
    vis[5, 11] = 1  # one joint: zero box and no pair
    pred[7, 2] = np.nan
    pred[8, 4, 0] = -np.inf
    gt[9, 5] = gt[9, 12]  # zero pair:5,12
    vis[9, [5, 12]] = 1
    gt[10] = gt[10, 0]  # all joints at one point: zero box
    ks = [0.0, 0.05, 0.2, 0.5]
    plan = pose.PosePlan.create(skeleton="coco17", units="m", dims=dims, metrics=["pck", "pck-auc"],
                                normalizations=_SPEC_NORMS, ks=ks, comparison="<" if strict else "<=", auc_n=6,
                                auc_max=0.8, normalizer_floor=floor, per_axis=per_axis,
                                precision="float32" if single else "float64")
    with np.errstate(divide="ignore", invalid="ignore"):
        want = naive.naive_pose_spec_totals(pred, gt, vis, _naive_norms(floor), ks, strict, auc_n=6, auc_max=0.8,
                                            per_axis=per_axis, single=single)
        for segments in (pose.make_segments(n), pose.make_segments(n, block=4),
                         pose.make_segments(n, rng.integers(0, 4, size=n).astype(str))):
            got = _spec_counts(plan, pred, gt, vis, segments)
            assert got["rows"] == want["rows"] and got["novis"] == want["novis"]
            for key in ("norm_bad", "pck_n", "pck_hit", "auc_pass"):
                np.testing.assert_array_equal(got[key], want[key], err_msg=key)


@pytest.mark.parametrize("case", ["empty", "one-row", "all-nan", "zeros"])
def test_kernel_spec_paths_on_awkward_inputs(case):
    n = {"empty": 0, "one-row": 1, "all-nan": 3, "zeros": 3}[case]
    rng = np.random.default_rng(8)
    gt = np.zeros((n, 17, 2)) if case == "zeros" else rng.normal(size=(n, 17, 2))
    pred = np.full_like(gt, np.nan) if case == "all-nan" else gt + 0.01
    vis = np.ones((n, 17), np.uint8)
    for floor in ("relative", "clamp:0.4", "none"):
        plan = pose.PosePlan.create(skeleton="coco17", units="m", dims=2, metrics=["pck", "pck-auc"],
                                    normalizations=_SPEC_NORMS, ks=[0.1, 0.5], auc_n=4, normalizer_floor=floor,
                                    per_axis=True, precision="float32")
        with np.errstate(divide="ignore", invalid="ignore"):
            want = naive.naive_pose_spec_totals(pred, gt, vis, _naive_norms(floor), [0.1, 0.5], False, auc_n=4,
                                                per_axis=True, single=True)
            got = _spec_counts(plan, pred, gt, vis, pose.make_segments(n))
        for key in ("norm_bad", "pck_n", "pck_hit", "auc_pass"):
            np.testing.assert_array_equal(got[key], want[key], err_msg=f"{case} {floor} {key}")


# -- rfbench score --convention ----------------------------------------------------------------------------


@pytest.fixture
def h36m_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    gt = h36m_poses(48, seed=3)
    np.save("gt.npy", gt)
    np.save("pred.npy", _noisy(gt, 4, 0.05))
    np.save("groups.npy", np.repeat(["r1", "r2", "r3", "r4"], 12))
    return tmp_path


SCORE = ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--skeleton", "h36m17", "--units", "m"]


def _one_error_line(result):
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    return lines[0]


def test_score_with_a_convention_reports_its_spec_and_verifies(runner, h36m_files):
    result = runner.invoke(app, SCORE + ["--convention", "graphpose-fi", "--batch-size", "16", "--k", "0.2",
                                         "--groups", "groups.npy", "--bootstrap", "50", "-o", "report.json"])
    assert result.exit_code == 0, result.output
    report = json.loads((h36m_files / "report.json").read_text())
    by_metric = {r["metric"]: r for r in report["results"]}
    assert set(by_metric) == {"pck", "mpjpe", "pa-mpjpe"}  # what GraphPose-Fi's source computes
    pck = by_metric["pck"]
    assert pck["label"] == ("PCK@0.20 pair:5,12(left_knee–left_elbow) h36m17 <= batch-mean(B=16) unclamped "
                            "no-visibility [graphpose-fi: source in percent]")
    assert pck["spec"]["convention"] == "graphpose-fi" and pck["spec"]["batch_size"] == 16
    assert pck["ci"] is None  # batch-mean: no bootstrap interval
    assert by_metric["mpjpe"]["ci"]["model"]["low"] is not None
    assert any("batch-mean" in n and "no bootstrap interval" in n for n in report["notes"])
    argv = report["reproducer"]["argv"]
    assert argv[argv.index("--convention") + 1] == "graphpose-fi" and argv[argv.index("--batch-size") + 1] == "16"
    verified = runner.invoke(app, ["verify", "report.json"])
    assert verified.exit_code == 0, verified.output


@pytest.mark.parametrize("extra,message", [
    (["--convention", "mmfi-toolbox", "--metrics", "pck"], "mmfi-toolbox does not define pck"),
    (["--convention", "wiflow", "--norm", "bbox"], "wiflow sets the normalizations itself"),
    (["--convention", "wiflow", "--comparison", "<"], "wiflow sets the comparison itself"),
    (["--convention", "mmpose", "--averaging", "micro"], "mmpose sets the averaging itself"),
    (["--convention", "graphpose-fi"], "needs a batch size.*train.py.*default 256"),
    (["--convention", "wiflow", "--batch-size", "8"], "wiflow does not average over batches"),
    (["--convention", "openpose"], "--convention: 'openpose' is not one of graphpose-fi, mmfi-toolbox, wiflow"),
])
def test_score_refuses_what_a_convention_does_not_allow(runner, h36m_files, extra, message):
    import re

    result = runner.invoke(app, SCORE + extra)
    assert result.exit_code == 2, result.output
    assert re.search(message, _one_error_line(result)), result.output


def test_convention_is_a_pose_option(runner, h36m_files):
    np.save("labels.npy", np.array(["a", "b"]))
    result = runner.invoke(app, ["score", "--task", "gesture", "--pred", "labels.npy", "--gt", "labels.npy",
                                 "--convention", "wiflow"])
    assert result.exit_code == 2 and "--convention applies to --task pose only" in _one_error_line(result)


def test_spec_pieces_from_the_command_line(runner, h36m_files):
    # --norm is comma-separated: pair:5,12 is rejoined; batch-mean with --batch-size needs no convention.
    result = runner.invoke(app, SCORE + ["--norm", "pair:5,12,bbox", "--k", "0.2", "--metrics", "pck", "--averaging",
                                         "batch-mean,micro", "--batch-size", "16", "--groups", "groups.npy",
                                         "--bootstrap", "50", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    labels = {r["label"]: r for r in report["results"]}
    assert set(labels) == {"PCK@0.20 pair:5,12(left_knee–left_elbow) h36m17 <= batch-mean(B=16)",
                           "PCK@0.20 pair:5,12(left_knee–left_elbow) h36m17 <= micro",
                           "PCK@0.20 bbox h36m17 <= batch-mean(B=16)", "PCK@0.20 bbox h36m17 <= micro"}
    assert all((r["ci"] is None) == (r["spec"]["averaging"] == "batch-mean") for r in report["results"])
