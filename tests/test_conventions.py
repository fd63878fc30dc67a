"""Normalizations and named conventions: ADR-173's key proof through the CLI, absolute thresholds, and each
convention against a transliteration of its source function."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rfbench.cli import app
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
    assert got == {
        "PCK@0.20 hip-width(left_hip–right_hip) adr173-four <= micro": 0.5,
        "PCK@0.20 bbox adr173-four <= micro": 1.0,
        "PCK abs(≤0.08 m) adr173-four micro": 0.75,
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
    assert got.spec.auc_max is None and got.label == "PCK-AUC abs[0,20 px) n=4 five < macro"
