"""Pose metric semantics pinned by hand-computed cases, and the kernels against their naive twins."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import naive
from posedata import COCO_TEMPLATE, coco_poses
from rfbench.errors import ValidationError
from rfbench.metrics import pose
from rfbench.metrics.skeletons import COCO_SIGMAS, skeleton_from_dict

GT = COCO_TEMPLATE[None].copy()  # one coco17 pose: hip width 0.2, box 0.9 x 1.2 (diagonal 1.5)


def shifted(errors):
    """Prediction = GT with joint j moved by errors[j] along x."""
    pred = GT.copy()
    pred[0, :, 0] += np.asarray(errors, dtype=float)
    return pred


def value(metric, pred, gt=GT, vis=None, **kw):
    kw.setdefault("skeleton", "coco17")
    kw.setdefault("units", "m")
    return getattr(pose, metric)(pred, gt, vis, **kw)


# -- hand-computed cases ---------------------------------------------------------------------------------


def test_three_normalizations_give_three_hand_derived_values():
    # Errors: face joints 0-4 0.02, joints 5-8 0.07, joints 9-12 0.2, joints 13-16 0.5. k = 0.2:
    #   hip-width: |l_hip - r_hip| = 0.2, threshold 0.2*0.2 = 0.04 -> joints 0-4 pass  -> 5/17
    #   abs:0.1:   threshold T = 0.1 itself (k does not scale it)  -> joints 0-8 pass  -> 9/17
    #   bbox:      diagonal sqrt(0.9² + 1.2²) = 1.5, threshold 0.3 -> joints 0-12    -> 13/17
    pred = shifted([0.02] * 5 + [0.07] * 4 + [0.2] * 4 + [0.5] * 4)
    got = {n: value("pck", pred, normalization=n, k=0.2).value for n in ("hip-width", "abs:0.1", "bbox")}
    assert got == {"hip-width": 5 / 17, "abs:0.1": 9 / 17, "bbox": 13 / 17}
    # abs:0.5 is the threshold 0.5 whatever k: every error (at most 0.5) passes, at k = 0.2 as at k = 0.05.
    assert value("pck", pred, normalization="abs:0.5", k=0.2).value == 1.0
    assert value("pck", pred, normalization="abs:0.5", k=0.05).value == 1.0


def test_abs_threshold_is_t_itself_with_one_result_per_t():
    # Joint j off by j/100 (0.00 .. 0.16). abs:0.085 counts errors <= 0.085: joints 0..8 -> 9/17, for any ks
    # (k·T would be 0.0425 at k = 0.5: joints 0..4 only).
    pred = shifted([j / 100 for j in range(17)])
    ev = pose.evaluate_pose(pred, GT, skeleton="coco17", units="m", metrics=["pck"], normalizations=["abs:0.085"],
                            ks=[0.05, 0.1, 0.2, 0.5], averaging=["micro"])
    assert len(ev.scores) == 1
    s = ev.scores[0]
    assert s.value == 9 / 17
    assert s.spec.normalization == "abs:0.085" and s.spec.k is None
    assert s.label == "PCK abs(≤0.085 m) coco17 micro"
    strict = pose.pck(pred, GT, skeleton="coco17", units="m", normalization="abs:0.085", k=0.2, comparison="<")
    assert strict.label == "PCK abs(<0.085 m) coco17 micro" and strict.value == 9 / 17


def test_labels_render_the_whole_spec():
    pred = shifted([0.0] * 17)
    assert value("pck", pred, normalization="torso", k=0.2).label == \
        "PCK@0.20 torso(left_shoulder–right_hip) coco17 <= micro"
    assert value("pck", pred, normalization="hip-width", k=0.05, comparison="<", averaging="macro").label == \
        "PCK@0.05 hip-width(left_hip–right_hip) coco17 < macro"
    assert value("pck", pred, normalization="abs:0.1", k=0.125).label == "PCK abs(≤0.1 m) coco17 micro"
    assert value("mpjpe", pred).label == "MPJPE (m) coco17 micro"
    spec = value("pck", pred, normalization="torso", k=0.2).spec.to_dict()
    assert spec["normalizer_joints"] == ["left_shoulder", "right_hip"]
    assert spec["comparison"] == "<=" and spec["averaging"] == "micro" and spec["units"] == "m"


def test_comparison_at_the_exact_boundary():
    # Hips at x = +-0.5: hip width exactly 1.0. The nose moves exactly 0.25 (0.25 - 0 is exact), so
    # d / norm = 0.25 = k: counted with <=, not with <. Every other joint has d = 0.
    gt = GT.copy()
    gt[0, 11, 0], gt[0, 12, 0] = 0.5, -0.5
    pred = gt.copy()
    pred[0, 0, 0] = 0.25
    assert value("pck", pred, gt, normalization="hip-width", k=0.25).value == 1.0
    assert value("pck", pred, gt, normalization="hip-width", k=0.25, comparison="<").value == 16 / 17


def test_micro_and_macro_averages_differ_as_computed_by_hand():
    # abs:0.5 (correct when d <= 0.5). Sample A: all 17 visible, joint 0 off by 1.0 (wrong).
    # Sample B: only joint 0 visible, exact. micro = 17 correct / 18 scoreable.
    # macro: joint 0 is 1/2, joints 1-16 are 1 each: (0.5 + 16) / 17.
    gt = np.concatenate([GT, GT])
    pred = gt.copy()
    pred[0, 0, 0] += 1.0
    vis = np.ones((2, 17), bool)
    vis[1, 1:] = False
    micro = value("pck", pred, gt, vis, normalization="abs:0.5", k=0.5)
    macro = value("pck", pred, gt, vis, normalization="abs:0.5", k=0.5, averaging="macro")
    assert micro.value == pytest.approx(17 / 18, abs=1e-15)
    assert macro.value == pytest.approx(16.5 / 17, abs=1e-15)
    assert macro.per_joint["nose"] == 0.5 and macro.per_joint["left_eye"] == 1.0
    assert micro.scoreable == 18 and micro.unscoreable_samples == 0


def test_no_visible_joint_is_unscoreable_never_correct():
    pred = shifted([0.0] * 17)  # a perfect prediction...
    vis = np.zeros((1, 17), bool)  # ...of a sample with nothing visible
    s = value("pck", pred, vis=vis, normalization="bbox", k=0.2)
    assert s.value is None and s.scoreable == 0 and s.unscoreable_samples == 1 and s.samples == 1
    assert value("oks", pred, vis=vis).value is None
    assert value("mpjpe", pred, vis=vis).value is None
    # Mixed: the invisible sample is counted as unscoreable and does not enter the value.
    gt = np.concatenate([GT, GT])
    pred2 = gt.copy()
    pred2[0, :, 0] += 1.0  # sample 0 entirely wrong under bbox@0.2 (1.0 > 0.3)
    vis2 = np.ones((2, 17), bool)
    vis2[1] = False  # sample 1 (perfect) invisible
    s2 = value("pck", pred2, gt, vis2, normalization="bbox", k=0.2)
    assert s2.value == 0.0 and s2.unscoreable_samples == 1 and s2.scoreable == 17


def test_zero_and_tiny_normalizers_are_unscoreable():
    gt = GT.copy()
    gt[0, 12] = gt[0, 11]  # both hips at one point: hip width 0
    pred = gt.copy()
    s = value("pck", pred, gt, normalization="hip-width", k=0.2)
    assert s.value is None and s.unscoreable_samples == 1
    # Tiny: 1e-9 of the 1.5 diagonal apart is below the documented floor (1e-6 x diagonal)...
    gt[0, 12, 0] = gt[0, 11, 0] - 1.5e-9
    assert value("pck", gt.copy(), gt, normalization="hip-width", k=0.2).value is None
    # ...1e-5 x diagonal apart is above it (and a perfect prediction scores 1).
    gt[0, 12, 0] = gt[0, 11, 0] - 1.5e-5
    assert value("pck", gt.copy(), gt, normalization="hip-width", k=0.2).value == 1.0
    # A hip that is not visible leaves no hip width either; bbox still scores the sample.
    vis = np.ones((1, 17), bool)
    vis[0, 12] = False
    assert value("pck", GT.copy(), vis=vis, normalization="hip-width", k=0.2).value is None
    assert value("pck", GT.copy(), vis=vis, normalization="bbox", k=0.2).value == 1.0
    # All joints at one point: the box is degenerate.
    flat = np.zeros((1, 17, 2))
    assert value("pck", flat, flat, normalization="bbox", k=0.2).value is None
    assert value("pck", flat, flat, normalization="bbox-max-side", k=0.2).value is None


def test_nan_and_inf_predictions_are_wrong_without_exception():
    pred = shifted([0.0] * 17)
    pred[0, 0, 0] = np.nan
    pred[0, 1, 1] = np.inf
    # 15 of 17 joints exact: PCK 15/17; their OKS terms are exp(0) = 1 and the bad ones 0: OKS 15/17.
    assert value("pck", pred, normalization="bbox", k=0.2).value == 15 / 17
    assert value("oks", pred).value == pytest.approx(15 / 17, abs=1e-15)
    assert value("mpjpe", pred).value == math.inf
    assert value("pa_mpjpe", pred).value == math.inf


def test_oks_small_person_uses_the_area_not_a_fixed_scale():
    # GT box 0.1 x 0.2 on [0,1] coordinates; area s² = 0.53 * 0.1 * 0.2 = 0.0106. Every joint predicted
    # 0.035 away (along (0.6, 0.8)). Per joint: exp(-0.035² / (2 * 0.0106 * (2 sigma)²)).
    #   sigma 0.079 (shoulders): 0.001225 / (0.0212 * 0.024964) = 2.3147 -> 0.0988
    #   sigma 0.107 (hips):      0.001225 / (0.0212 * 0.045796) = 1.2618 -> 0.2831
    #   face sigmas 0.025-0.035 give ~0; mean over 17 joints = 1.553 / 17 = 0.0913.
    # A fixed scale s = 1 instead gives exp(-0.001225 / (2 * 4 sigma²)) -> mean 0.93.
    gt = COCO_TEMPLATE[None] * np.array([0.1 / 0.9, 0.2 / 1.2]) + 0.4
    pred = gt + np.array([0.021, 0.028])
    by_hand = np.mean([math.exp(-0.035 ** 2 / (2 * 0.0106 * (2 * s) ** 2)) for s in COCO_SIGMAS])
    fixed_scale = np.mean([math.exp(-0.035 ** 2 / (2 * 1.0 * (2 * s) ** 2)) for s in COCO_SIGMAS])
    got = value("oks", pred, gt).value
    assert got == pytest.approx(by_hand, rel=1e-9)
    assert got == pytest.approx(0.0913, abs=5e-4)
    assert fixed_scale == pytest.approx(0.93, abs=0.01)
    assert abs(got - fixed_scale) > 0.8
    # A declared constant area is used as given: with area 1 we get the fixed-scale number.
    assert value("oks", pred, gt, area=1.0).value == pytest.approx(fixed_scale, rel=1e-9)


def test_pck_auc_by_hand():
    # abs:1, n = 4: thresholds T*i/n = 0, 0.25, 0.5, 0.75. Joints 0-8 exact (d = 0), joints 9-16 off by 0.6.
    # <=: exact joints pass all 4, the others only 0.75 -> (9*4 + 8*1) / (17*4) = 44/68.
    # < : d = 0 fails threshold 0 -> (9*3 + 8*1) / 68 = 35/68.
    pred = shifted([0.0] * 9 + [0.6] * 8)
    kw = dict(normalization="abs:1", n=4, k_max=1.0)
    assert value("pck_auc", pred, **kw).value == pytest.approx(44 / 68, abs=1e-15)
    assert value("pck_auc", pred, comparison="<", **kw).value == pytest.approx(35 / 68, abs=1e-15)
    assert value("pck_auc", pred, **kw).label == "PCK-AUC abs[0,1 m) n=4 coco17 <= micro"
    # k_max does not apply under abs:T: the thresholds are T*i/n whatever it is.
    assert value("pck_auc", pred, **{**kw, "k_max": 0.5}).value == pytest.approx(44 / 68, abs=1e-15)
    # abs:2: thresholds 0, 0.5, 1.0, 1.5 -> exact joints pass 4, the others (0.6) pass 2: (36 + 16) / 68.
    assert value("pck_auc", pred, normalization="abs:2", n=4).value == pytest.approx(52 / 68, abs=1e-15)


def test_mpjpe_by_hand_and_macro():
    # Every joint off by (0.3, 0.4): 0.5 each. Then hide joint 0 in a second sample that has error 1.0
    # elsewhere: micro = (17*0.5 + 16*1.0) / 33, macro = (0.5 + 16 * 0.75) / 17.
    pred = GT + np.array([0.3, 0.4])
    assert value("mpjpe", pred).value == pytest.approx(0.5, abs=1e-12)
    gt = np.concatenate([GT, GT])
    p2 = np.concatenate([pred, GT + np.array([0.6, 0.8])])
    vis = np.ones((2, 17), bool)
    vis[1, 0] = False
    assert value("mpjpe", p2, gt, vis).value == pytest.approx((17 * 0.5 + 16) / 33, abs=1e-12)
    assert value("mpjpe", p2, gt, vis, averaging="macro").value == pytest.approx((0.5 + 16 * 0.75) / 17, abs=1e-12)


def _rotation(rng, dims):
    q, r = np.linalg.qr(rng.normal(size=(dims, dims)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


@pytest.mark.parametrize("dims", [2, 3])
def test_pa_mpjpe_removes_similarity_but_not_reflection(dims):
    rng = np.random.default_rng(3)
    gt = rng.normal(size=(4, 17, dims))
    rot = _rotation(rng, dims)
    pred = 2.5 * gt @ rot.T + rng.normal(size=(1, 1, dims))
    assert value("pa_mpjpe", pred, gt).value < 1e-12
    assert value("mpjpe", pred, gt).value > 1.0
    # A mirror image is not a rotation: with reflection correction it keeps a clear error.
    mirrored = gt.copy()
    mirrored[..., 0] *= -1
    got = value("pa_mpjpe", mirrored, gt).value
    errors = [e for frame in naive.naive_pa_errors(mirrored, gt, np.ones((4, 17))) for e in frame]
    assert got == pytest.approx(np.mean(errors), rel=1e-10)
    assert got > 0.1


def test_pa_mpjpe_unscoreable_frames():
    gt = np.concatenate([GT, GT, np.zeros((1, 17, 2))])
    vis = np.ones((3, 17), bool)
    vis[1, 2:] = False  # only 2 visible joints: a similarity fits them exactly, so not scoreable
    s = value("pa_mpjpe", gt + 0.01, gt, vis)
    assert s.unscoreable_samples == 2  # frame 1 (2 joints) and frame 2 (all joints at one point)
    assert s.scoreable == 17 and s.value == pytest.approx(0.0, abs=1e-12)


def test_oks_is_2d_only_and_h36m_needs_sigmas():
    with pytest.raises(ValidationError, match="2D poses only"):
        pose.oks(np.zeros((1, 17, 3)), np.ones((1, 17, 3)), skeleton="coco17", units="m")
    with pytest.raises(ValidationError, match="no published OKS sigmas"):
        pose.oks(np.zeros((1, 17, 2)), np.ones((1, 17, 2)), skeleton="h36m17", units="m", trust_layout=True)


def test_bad_inputs_raise_validation_errors():
    ok = GT.copy()
    with pytest.raises(ValidationError, match="must match"):
        value("mpjpe", ok[:, :16], ok)
    with pytest.raises(ValidationError, match="skeleton has 17"):
        value("mpjpe", ok[:, :16], ok[:, :16])
    with pytest.raises(ValidationError, match="shape"):
        value("mpjpe", ok[0], ok[0])
    bad = ok.copy()
    bad[0, 3, 1] = np.nan
    with pytest.raises(ValidationError, match="NaN or inf at 1 visible joint"):
        value("mpjpe", ok, bad)
    vis = np.ones((1, 17), bool)
    vis[0, 3] = False
    assert value("mpjpe", ok, bad, vis).value == 0.0  # NaN at an invisible joint is fine
    with pytest.raises(ValidationError, match="unknown normalization"):
        value("pck", ok, normalization="shoulder", k=0.2)
    with pytest.raises(ValidationError, match="abs:T needs a positive"):
        value("pck", ok, normalization="abs:-1", k=0.2)
    with pytest.raises(ValidationError, match="unknown skeleton"):
        value("mpjpe", ok, skeleton="mpii")
    with pytest.raises(ValidationError, match="units must be declared"):
        value("mpjpe", ok, units=" ")
    with pytest.raises(ValidationError, match="comparison"):
        value("pck", ok, normalization="bbox", k=0.2, comparison="=<")
    with pytest.raises(ValidationError, match="k must be a number in 0..100"):
        value("pck", ok, normalization="bbox", k=float("nan"))


def test_layout_dependent_normalizations_refused_on_a_wrong_layout():
    # h36m-ordered data declared as coco17: joints 0-4 are pelvis, right leg and left hip, far apart.
    from posedata import h36m_poses

    gt = h36m_poses(20, seed=1)
    with pytest.raises(ValidationError, match="does not fit the ground truth.*torso"):
        pose.pck(gt, gt, skeleton="coco17", units="m", normalization="torso", k=0.2)
    # Layout-independent normalizations still score; an explicit override scores and is recorded.
    assert pose.pck(gt, gt, skeleton="coco17", units="m", normalization="bbox", k=0.2).value == 1.0
    ev = pose.evaluate_pose(gt, gt, skeleton="coco17", units="m", metrics=["pck"], trust_layout=True)
    assert ev.layout_overridden and ev.layout["passed"] is False
    # Declared correctly, no override is needed.
    ev = pose.evaluate_pose(gt, gt, skeleton="h36m17", units="m", metrics=["pck"])
    assert ev.layout["passed"] is True and not ev.layout_overridden


def test_evaluate_pose_find_and_counts():
    gt = coco_poses(30, seed=4)
    pred = gt + np.random.default_rng(0).normal(scale=0.02, size=gt.shape)
    ev = pose.evaluate_pose(pred, gt, skeleton="coco17", units="m", normalizations=["torso", "bbox"])
    s = ev.find("pck", normalization="bbox", k=0.1, averaging="micro")
    assert s.scoreable == 30 * 17 and s.samples == 30
    assert {sc.spec.metric for sc in ev.scores} == {"pck", "pck-auc", "oks", "mpjpe", "pa-mpjpe"}
    with pytest.raises(ValidationError, match="2 scores match"):
        ev.find("pck", normalization="bbox", k=0.1)


# -- kernels against the naive twins -------------------------------------------------------------------


def _kernel_totals(plan, pred, gt, vis, segments):
    table = plan.table(pred, gt, vis, segments)
    tot = table.sum(axis=0)
    c = plan.columns
    return {name: tot[c[name]] for name in c.blocks}


def _spec_norms(norms):
    """The old-style norm tuples with the default floor, as naive_pose_spec_totals takes them."""
    return [n if n[0] == "abs" else n + (("relative",),) for n in norms]


def _compare(plan, pred, gt, vis, segments, norms, ks, strict, auc_thr, sigmas, area=None):
    got = _kernel_totals(plan, pred, gt, vis, segments)
    want = naive.naive_pose_totals(pred, gt, vis, norms, ks, strict, auc_thr, sigmas, area)
    counts = naive.naive_pose_spec_totals(pred, gt, vis, _spec_norms(norms), ks, strict, auc_n=len(auc_thr),
                                          auc_max=plan.auc_max)
    assert got["rows"] == counts["rows"] and got["novis"] == counts["novis"]
    np.testing.assert_array_equal(got["norm_bad"], counts["norm_bad"])
    np.testing.assert_array_equal(got["pck_n"], counts["pck_n"])
    np.testing.assert_array_equal(got["pck_hit"], counts["pck_hit"])
    np.testing.assert_array_equal(got["auc_pass"], counts["auc_pass"])
    np.testing.assert_array_equal(got["err_n"], want["err_n"])
    np.testing.assert_allclose(got["err_sum"], want["err_sum"], rtol=1e-12)
    if sigmas is not None:
        oks = [o for o in want["oks"] if o is not None]
        assert got["oks_n"] == len(oks) and got["oks_bad"] == want["oks_bad"]
        assert got["oks_sum"] == pytest.approx(sum(oks), rel=1e-12, abs=1e-300)


def _plan(dims, strict, sigmas=True, area="bbox", auc_n=7, ks=(0.0, 0.05, 0.2, 0.5)):
    metrics = ["pck", "pck-auc", "mpjpe"] + (["oks"] if sigmas and dims == 2 else [])
    return pose.PosePlan.create(skeleton="coco17", units="m", dims=dims, metrics=metrics,
                                normalizations=["hip-width", "torso", "bbox", "bbox-max-side", "abs:0.3"],
                                ks=list(ks), comparison="<" if strict else "<=", auc_n=auc_n,
                                auc_max=0.8, oks_area=area)


_NORMS = [("pair", 11, 12), ("pair", 5, 12), ("bbox",), ("max",), ("abs", 0.3)]


@pytest.mark.parametrize("dims,strict,seed", [(2, False, 0), (2, True, 1), (3, False, 2), (3, True, 3)])
def test_kernel_matches_naive_on_seeded_random_poses(dims, strict, seed):
    rng = np.random.default_rng(seed)
    n = 37
    gt = rng.normal(size=(n, 17, dims))
    pred = gt + rng.normal(scale=0.3, size=gt.shape)
    vis = (rng.random((n, 17)) > 0.3).astype(np.uint8)
    vis[3] = 0  # a sample with nothing visible
    vis[5, :] = 0
    vis[5, 11] = 1  # one joint only: degenerate box and pair
    pred[7, 2] = np.nan
    pred[8, 4, 0] = -np.inf
    gt[9, 5] = gt[9, 12]  # zero torso
    plan = _plan(dims, strict)
    auc_thr = [0.8 * i / 7 for i in range(7)]
    sig = list(COCO_SIGMAS) if dims == 2 else None
    clusters = rng.integers(0, 5, size=n).astype(str)
    for segments in (pose.make_segments(n), pose.make_segments(n, block=6), pose.make_segments(n, clusters)):
        _compare(plan, pred, gt, vis, segments, _NORMS, [0.0, 0.05, 0.2, 0.5], strict, auc_thr, sig)


def test_kernel_matches_naive_with_thresholds_in_any_order():
    rng = np.random.default_rng(12)
    gt = rng.normal(size=(20, 17, 2))
    pred = gt + rng.normal(scale=0.3, size=gt.shape)
    vis = np.ones((20, 17), np.uint8)
    ks = [0.5, 0.0, 0.2, 0.05]
    for strict in (False, True):
        _compare(_plan(2, strict, ks=ks), pred, gt, vis, pose.make_segments(20, block=3), _NORMS, ks, strict,
                 [0.8 * i / 7 for i in range(7)], list(COCO_SIGMAS))


def test_kernel_matches_naive_with_a_single_broadcast_prediction_and_constant_area():
    rng = np.random.default_rng(11)
    gt = rng.normal(size=(12, 17, 2))
    vis = np.ones((12, 17), np.uint8)
    mean = np.ascontiguousarray(gt.mean(axis=0)[None])
    plan = _plan(2, False, area=0.7)
    _compare(plan, mean, gt, vis, pose.make_segments(12, block=5), _NORMS, [0.0, 0.05, 0.2, 0.5], False,
             [0.8 * i / 7 for i in range(7)], list(COCO_SIGMAS), area=0.7)


@pytest.mark.parametrize("case", ["empty", "zeros", "one-row", "nan-pred", "inf-pred"])
def test_kernel_matches_naive_on_awkward_inputs(case):
    n = {"empty": 0, "zeros": 3, "one-row": 1, "nan-pred": 2, "inf-pred": 2}[case]
    rng = np.random.default_rng(5)
    gt = np.zeros((n, 17, 2)) if case == "zeros" else rng.normal(size=(n, 17, 2))
    pred = gt.copy()
    if case == "nan-pred":
        pred[:] = np.nan
    if case == "inf-pred":
        pred[:, ::2] = np.inf
    vis = np.ones((n, 17), np.uint8)
    _compare(_plan(2, False), pred, gt, vis, pose.make_segments(n), _NORMS, [0.0, 0.05, 0.2, 0.5], False,
             [0.8 * i / 7 for i in range(7)], list(COCO_SIGMAS))


def test_single_joint_skeleton():
    one = skeleton_from_dict({"name": "one", "joints": ["a"], "sigmas": [0.1]})
    gt = np.array([[[0.0, 0.0]], [[1.0, 1.0]]])
    pred = gt + np.array([[[0.3, 0.4]], [[0.0, 0.0]]])
    ev = pose.evaluate_pose(pred, gt, skeleton=one, units="px", normalizations=["bbox", "abs:1"], ks=[0.5])
    assert ev.find("pck", normalization="bbox", averaging="micro").value is None  # one joint: no box
    assert ev.find("pck", normalization="abs:1", averaging="micro").value == 1.0  # 0.5 <= 0.5 and 0 <= 0.5
    assert ev.find("mpjpe", averaging="micro").value == pytest.approx(0.25)
    assert ev.find("oks").value is None  # zero area
    assert ev.find("pa-mpjpe", averaging="micro").value is None


@pytest.mark.parametrize("dims", [2, 3])
def test_pa_mpjpe_matches_naive_svd(dims):
    rng = np.random.default_rng(20 + dims)
    n = 25
    gt = rng.normal(size=(n, 17, dims))
    pred = gt @ _rotation(rng, dims).T * 0.7 + rng.normal(scale=0.2, size=gt.shape)
    vis = rng.random((n, 17)) > 0.2
    vis[0, :3] = True
    vis[0, 3:] = False  # scoreable: 3 joints is the minimum
    vis[1, 2:] = False  # unscoreable: 2 joints
    pred[2, 0] = np.nan
    pred[3] = 1.0  # all predicted joints at one point: scale 0, moved to the GT centroid
    frames = naive.naive_pa_errors(pred, gt, vis)
    flat = [e for f in frames if f is not None for e in f]
    finite = [e for f in frames if f is not None and math.isfinite(f[0]) for e in f]
    s = value("pa_mpjpe", pred, gt, vis)
    assert s.value == math.inf and s.scoreable == len(flat)
    assert s.unscoreable_samples == sum(f is None for f in frames) == 1
    ok = np.ones(n, bool)
    ok[2] = False
    s2 = value("pa_mpjpe", pred[ok], gt[ok], vis[ok])
    assert s2.value == pytest.approx(np.mean(finite), rel=1e-10)


def test_kernels_run_without_the_jit():
    """The same small case under NUMBA_DISABLE_JIT=1 (plain Python kernels) gives the same table."""
    code = r"""
import json, numpy as np
from rfbench.metrics import pose
rng = np.random.default_rng(7)
gt = rng.normal(size=(9, 17, 2)); pred = gt + rng.normal(scale=0.2, size=gt.shape); pred[1, 1] = np.nan
vis = rng.random((9, 17)) > 0.2
ev = pose.evaluate_pose(pred, gt, vis, skeleton="coco17", units="m", normalizations=["bbox", "torso"],
                        trust_layout=True, clusters=np.arange(9) % 3)
from rfbench.metrics import stats
iv = stats.cluster_bootstrap(stats.segment_sums(np.stack([np.arange(9.0), np.ones(9)], 1), np.arange(9) % 3, 3),
                             {"m": lambda x: x[..., 0] / x[..., 1]}, n_boot=50, seed=1)["m"]
print(json.dumps({"table": ev.table.tolist(), "ci": [iv.low, iv.high],
                  "jit": __import__("numba").config.DISABLE_JIT}))
"""
    env = dict(os.environ)
    runs = {}
    for flag in ("0", "1"):
        env["NUMBA_DISABLE_JIT"] = flag
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        runs[flag] = json.loads(proc.stdout)
    assert runs["1"]["jit"] == 1 and runs["0"]["jit"] == 0
    with_jit = np.array(runs["0"]["table"], dtype=float)
    without = np.array(runs["1"]["table"], dtype=float)
    np.testing.assert_allclose(without, with_jit, rtol=1e-13)
    assert runs["1"]["ci"] == runs["0"]["ci"]


def test_results_do_not_depend_on_the_thread_count(monkeypatch):
    """Each segment is accumulated by one thread in row order: one thread and all threads agree bit for bit."""
    import numba

    import rfbench._jit as jit

    rng = np.random.default_rng(13)
    gt = rng.normal(size=(3000, 17, 2))
    pred = gt + rng.normal(scale=0.2, size=gt.shape)
    kw = dict(skeleton="coco17", units="m", normalizations=["bbox", "torso"], trust_layout=True,
              clusters=np.arange(3000) % 11)
    monkeypatch.setattr(jit, "PARALLEL_MIN_WORK", 1 << 60)  # always one thread
    serial = pose.evaluate_pose(pred, gt, **kw)
    monkeypatch.setattr(jit, "PARALLEL_MIN_WORK", 0)  # always the whole pool
    parallel = pose.evaluate_pose(pred, gt, **kw)
    assert numba.get_num_threads() >= 1
    np.testing.assert_array_equal(serial.table, parallel.table)
    assert [s.value for s in serial.scores] == [s.value for s in parallel.scores]


@pytest.mark.parametrize("factor", [1e308, 1e200, 1e160])
def test_pa_mpjpe_counts_an_overflowing_alignment_wrong_like_the_twin(factor):
    # A frame of finite predictions near 1e308 overflows the Procrustes moments (and the SVD would not
    # converge): it is wrong, error +inf on each visible joint, never an exception; the other frames keep
    # their exact value.
    rng = np.random.default_rng(7)
    gt = rng.normal(size=(6, 17, 3))
    pred = gt + rng.normal(scale=0.1, size=gt.shape)
    pred[1] = gt[1] / np.abs(gt[1]).max() * factor
    assert np.isfinite(pred).all()
    vis = np.ones((6, 17), bool)
    frames = naive.naive_pa_errors(pred, gt, vis)
    assert frames[1] == [math.inf] * 17
    assert all(math.isfinite(e) for f in frames[:1] + frames[2:] for e in f)
    s = value("pa_mpjpe", pred, gt)
    assert s.value == math.inf and s.scoreable == 6 * 17 and s.unscoreable_samples == 0
    keep = np.arange(6) != 1
    finite = [e for f in frames[:1] + frames[2:] for e in f]
    assert value("pa_mpjpe", pred[keep], gt[keep]).value == pytest.approx(np.mean(finite), rel=1e-10)


def test_pa_mpjpe_survives_an_svd_that_does_not_converge(monkeypatch):
    # LAPACK refusing one frame's matrix: the batched call fails, each frame is retried alone, the refused one
    # (frame 2) counts wrong and the others keep their value.
    rng = np.random.default_rng(8)
    gt = rng.normal(size=(4, 17, 3))
    pred = gt + rng.normal(scale=0.1, size=gt.shape)
    real_svd = np.linalg.svd
    calls = []

    def flaky_svd(a, *args, **kw):
        calls.append(np.ndim(a))
        if np.ndim(a) == 3 or len(calls) == 4:  # the batch, then frame 2 alone (calls: batch, 0, 1, 2, 3)
            raise np.linalg.LinAlgError("SVD did not converge")
        return real_svd(a, *args, **kw)

    monkeypatch.setattr(np.linalg, "svd", flaky_svd)
    s = value("pa_mpjpe", pred, gt)
    monkeypatch.setattr(np.linalg, "svd", real_svd)
    assert calls == [3, 2, 2, 2, 2] and s.value == math.inf and s.scoreable == 4 * 17
    frames = naive.naive_pa_errors(pred, gt, np.ones((4, 17)))
    keep = np.arange(4) != 2
    assert value("pa_mpjpe", pred[keep], gt[keep]).value == pytest.approx(
        np.mean([e for i, f in enumerate(frames) if i != 2 for e in f]), rel=1e-10)


@pytest.mark.parametrize("kw, message", [
    (dict(metrics=["pck"], ks=(0.2, 1e308)), "threshold k must be a number in 0..100"),
    (dict(metrics=["pck"], ks=(101,)), "threshold k must be a number in 0..100"),
    (dict(metrics=["pck-auc"], auc_max=1e308), "k_max in (0, 100]"),
])
def test_a_threshold_past_any_body_is_refused(kw, message):
    """k = 1e308 scored 1.0 for model and baseline alike under a 309-digit label (PCK@1000000…00.00)."""
    gt = GT
    with pytest.raises(ValidationError, match=re.escape(message)):
        pose.evaluate_pose(gt, gt, skeleton="coco17", units="m", normalizations=["bbox"], **kw)
    ev = pose.evaluate_pose(gt, gt, skeleton="coco17", units="m", metrics=["pck"], normalizations=["bbox"], ks=(100,))
    assert ev.scores[0].value == 1.0
