"""Cross-checks against peers: pycocotools' COCOeval.computeOks, and mmpose 1.3.2's documented conventions
(keypoint_pck_accuracy, keypoint_auc, keypoint_epe) re-derived in tests/naive.py (mmpose itself needs torch
and mmcv, so it is not a dependency)."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import naive
from rfbench.metrics import pose
from rfbench.metrics.skeletons import COCO_SIGMAS


def _random_coco(seed, n, scale):
    rng = np.random.default_rng(seed)
    gt = rng.uniform(0, scale, size=(n, 17, 2))
    pred = gt + rng.normal(scale=0.05 * scale, size=gt.shape)
    vis = rng.random((n, 17)) > 0.3
    vis[:, 0] = True  # at least one visible joint per sample
    vis[:, 9] = True  # and a second one, so the box has an area
    return pred, gt, vis


def _pycocotools_oks(pred, gt, vis, area):
    cocotools = pytest.importorskip("pycocotools")
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    del cocotools
    n = gt.shape[0]
    images, anns, dets = [], [], []
    for i in range(n):
        kp = []
        for j in range(17):
            kp += [float(gt[i, j, 0]), float(gt[i, j, 1]), 2 if vis[i, j] else 0]
        v = vis[i]
        x0, y0 = gt[i, v, 0].min(), gt[i, v, 1].min()
        w, h = gt[i, v, 0].max() - x0, gt[i, v, 1].max() - y0
        images.append({"id": i + 1})
        anns.append({"id": i + 1, "image_id": i + 1, "category_id": 1, "keypoints": kp, "iscrowd": 0,
                     "num_keypoints": int(v.sum()), "area": float(area[i]), "bbox": [x0, y0, w, h]})
        dk = []
        for j in range(17):
            dk += [float(pred[i, j, 0]), float(pred[i, j, 1]), 1]
        dets.append({"image_id": i + 1, "category_id": 1, "keypoints": dk, "score": 1.0})
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO()
        coco_gt.dataset = {"images": images, "annotations": anns,
                           "categories": [{"id": 1, "name": "person", "keypoints": [str(j) for j in range(17)]}]}
        coco_gt.createIndex()
        coco_dt = coco_gt.loadRes(dets)
        ev = COCOeval(coco_gt, coco_dt, "keypoints")
        ev.params.imgIds = [i + 1 for i in range(n)]
        ev._prepare()
    assert np.allclose(ev.params.kpt_oks_sigmas, COCO_SIGMAS, rtol=0, atol=1e-15)
    return np.array([ev.computeOks(i + 1, 1)[0][0] for i in range(n)])


@pytest.mark.parametrize("seed,scale", [(0, 640.0), (1, 1.0), (2, 0.05)])
def test_oks_equals_pycocotools_computeoks(seed, scale):
    pred, gt, vis = _random_coco(seed, 40, scale)
    ours = pose.oks_per_sample(pred, gt, vis, skeleton="coco17", units="px", trust_layout=True)
    v = vis
    w = np.array([np.ptp(gt[i, v[i], 0]) for i in range(len(gt))])
    h = np.array([np.ptp(gt[i, v[i], 1]) for i in range(len(gt))])
    theirs = _pycocotools_oks(pred, gt, vis, 0.53 * w * h)
    assert np.max(np.abs(ours - theirs)) <= 1e-12
    # and the mean OKS is the mean of these per-sample values
    mean = pose.oks(pred, gt, vis, skeleton="coco17", units="px", trust_layout=True).value
    assert mean == pytest.approx(theirs.mean(), abs=1e-12)


def test_oks_with_declared_area_equals_pycocotools():
    pred, gt, vis = _random_coco(5, 25, 300.0)
    ours = pose.oks_per_sample(pred, gt, vis, skeleton="coco17", units="px", area=5000.0, trust_layout=True)
    theirs = _pycocotools_oks(pred, gt, vis, np.full(25, 5000.0))
    assert np.max(np.abs(ours - theirs)) <= 1e-12


def _mmpose_case(seed, n=40):
    rng = np.random.default_rng(seed)
    gt = rng.uniform(0, 200, size=(n, 17, 2))
    pred = gt + rng.normal(scale=15, size=gt.shape)
    mask = rng.random((n, 17)) > 0.25
    mask[3] = False  # a sample with no visible joint
    gt[4] = 50.0  # a sample whose joints all coincide: zero normalizer
    mask[:, 7] = False  # a joint never visible: mmpose leaves it out of the average
    return pred, gt, mask


@pytest.mark.parametrize("seed,thr", [(0, 0.05), (1, 0.2), (2, 0.5)])
def test_pck_bbox_max_side_strict_macro_equals_mmpose_convention(seed, thr):
    pred, gt, mask = _mmpose_case(seed)
    # mmpose's PCKAccuracy(norm_item='bbox') normalises by the box's longest side, the same on both axes.
    side = np.array([np.ptp(gt[i][mask[i]], axis=0).max() if mask[i].any() else 0.0 for i in range(len(gt))])
    acc, avg, cnt = naive.mmpose_keypoint_pck_accuracy(pred, gt, mask, thr, np.stack([side, side], axis=1))
    s = pose.pck(pred, gt, mask, skeleton="coco17", units="px", normalization="bbox-max-side", k=thr,
                 comparison="<", averaging="macro")
    assert s.value == pytest.approx(avg, abs=1e-12)
    per = [s.per_joint[j] for j in pose.get_skeleton("coco17").joints]
    for a, b in zip(acc, per):
        assert (b is None and a == -1) or b == pytest.approx(a, abs=1e-12)
    assert cnt == sum(p is not None for p in per) == 16
    assert s.unscoreable_samples == 2  # the invisible sample and the zero-normalizer one


def test_pck_auc_equals_mmpose_keypoint_auc():
    pred, gt, mask = _mmpose_case(7)
    want = naive.mmpose_keypoint_auc(pred, gt, mask, norm_factor=30.0, num_thrs=20)
    got = pose.pck_auc(pred, gt, mask, skeleton="coco17", units="px", normalization="abs:30", n=20, k_max=1.0,
                       comparison="<", averaging="macro")
    assert got.value == pytest.approx(want, abs=1e-12)


def test_epe_equals_mmpose_keypoint_epe():
    pred, gt, mask = _mmpose_case(8)
    want = naive.mmpose_keypoint_epe(pred, gt, mask)
    got = pose.mpjpe(pred, gt, mask, skeleton="coco17", units="px")
    assert got.value == pytest.approx(want, rel=1e-6)  # mmpose stores distances as float32


def test_where_rfbench_and_mmpose_conventions_differ_on_purpose():
    # Nothing scoreable: mmpose averages to 0.0, rfbench says "unscoreable" (None) — never a number.
    pred, gt, mask = _mmpose_case(9)
    mask[:] = False
    side = np.ones((len(gt), 2))
    assert naive.mmpose_keypoint_pck_accuracy(pred, gt, mask, 0.2, side)[1] == 0.0
    assert pose.pck(pred, gt, mask, skeleton="coco17", units="px", normalization="bbox-max-side", k=0.2,
                    comparison="<", averaging="macro").value is None
