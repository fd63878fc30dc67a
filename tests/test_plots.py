"""Pictures of reports: the PCK curve's numbers by hand, the files written beside the report and embedded in
its Markdown, the JSON unchanged by them, and a clear message without matplotlib."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from posedata import COCO_TEMPLATE, coco_poses
from rfbench.cli import app
from rfbench.metrics.pose_inputs import validate_poses
from rfbench.metrics.skeletons import get_skeleton
from rfbench.report.plots import pck_curves

pytest.importorskip("matplotlib")


def _captured(pred, gt, clusters=None, baseline=None):
    skel = get_skeleton("coco17")
    p, g, v = validate_poses(pred, gt, None, skel.n_joints)
    return {"pred": p, "gt": g, "vis": v, "skeleton": skel, "clusters": clusters, "baseline_pose": baseline}


def _report(norm="bbox-max-side", k=0.2, boot=None):
    spec = {"metric": "pck", "normalization": norm, "normalizer_joints": None, "k": k, "comparison": "<=",
            "units": "m", "skeleton": "coco17", "averaging": "micro"}
    return {"results": [{"metric": "pck", "spec": spec}], "bootstrap": boot or {"method": None}}


def test_curve_values_by_hand():
    # One pose, the template scaled to a box 0.75 x 1.0: its longest side (bbox-max-side) is 1, so the threshold
    # is k itself. Joint j is off by d_j = 0.025 + 0.03 j along x (0.025, 0.055, ..., 0.505), never on a grid
    # point. The model never reaches 0.995 below k_max = 0.5, so the grid is 0, 0.01, ..., 0.5 (51 points) and
    # PCK(k) = #{j : d_j <= k} / 17:
    #   k = 0    -> 0;   k = 0.03 -> 1/17 (0.025);   k = 0.06 -> 2/17 (+0.055);   k = 0.5 -> 16/17 (up to 0.475)
    # The baseline pose equals the ground truth: PCK 1 at every k (distance 0 <= k).
    gt = COCO_TEMPLATE[None] / 1.2
    pred = gt.copy()
    pred[0, :, 0] += 0.025 + 0.03 * np.arange(17)
    (c,) = pck_curves(_report(), _captured(pred, gt, baseline=gt[0]))
    assert c.ks.size == 51 and c.ks[0] == 0 and abs(c.ks[-1] - 0.5) < 1e-15
    at = {round(float(k), 2): float(v) for k, v in zip(c.ks, c.model)}
    assert at[0.0] == 0 and at[0.03] == 1 / 17 and at[0.06] == 2 / 17 and at[0.5] == 16 / 17
    assert np.all(c.baseline == 1.0)
    assert c.level is None and np.all(np.isnan(c.model_low))  # no clusters: no band
    assert c.label == "PCK@k bbox-max-side coco17 <= micro, units m"


def test_curve_range_shrinks_to_where_the_curves_saturate():
    # Same errors on a body whose longest side is 10 (threshold 10 k): every joint is within 0.505 once
    # k >= 0.0505. On the coarse grid (step 0.01) both curves first reach 0.995 at k = 0.06, so the drawn range
    # ends at 1.25 x 0.06.
    gt = COCO_TEMPLATE[None] * (10 / 1.2)
    pred = gt.copy()
    pred[0, :, 0] += 0.025 + 0.03 * np.arange(17)
    (c,) = pck_curves(_report(), _captured(pred, gt, baseline=gt[0]))
    assert abs(c.ks[-1] - 0.075) < 1e-12
    assert c.model[-1] == 1.0


def test_absolute_thresholds_have_no_curve():
    # abs:T has no k (its threshold is T itself): it is left to the table, and a report with only abs:T
    # draws no PCK-vs-k curve.
    gt = COCO_TEMPLATE[None].copy()
    report = _report("abs:0.1", k=None)
    assert pck_curves(report, _captured(gt + 0.01, gt)) == []


def test_bands_bracket_the_curves_with_clusters():
    gt = coco_poses(40, seed=3)
    pred = gt + np.random.default_rng(4).normal(scale=0.03, size=gt.shape)
    clusters = np.repeat([f"r{i}" for i in range(8)], 5)
    boot = {"method": "cluster", "replicates": 200, "level": 0.9, "seed": 0, "clusters": 8, "cluster_by": "recording"}
    (c,) = pck_curves(_report("bbox", boot=boot), _captured(pred, gt, clusters, gt.mean(axis=0)))
    ok = ~np.isnan(c.model_low)
    assert ok.sum() > 40
    assert np.all(c.model_low[ok] <= c.model[ok] + 1e-12) and np.all(c.model[ok] <= c.model_high[ok] + 1e-12)
    assert np.any(c.model_high - c.model_low > 0)


@pytest.fixture
def pose_files(tmp_path):
    gt = coco_poses(30, seed=5)
    np.save(tmp_path / "gt.npy", gt)
    np.save(tmp_path / "pred.npy", gt + np.random.default_rng(6).normal(scale=0.03, size=gt.shape))
    np.save(tmp_path / "groups.npy", np.repeat([f"rec-{i}" for i in range(6)], 5))
    return tmp_path


ARGS = ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--skeleton", "coco17", "--units", "m", "--norm",
        "bbox,torso", "--groups", "groups.npy", "--bootstrap", "100"]


def _run(runner, folder, args):
    old = Path.cwd()
    os.chdir(folder)
    try:
        return runner.invoke(app, args)
    finally:
        os.chdir(old)


def test_plots_are_written_beside_and_embedded_and_leave_the_json_alone(runner, pose_files):
    result = _run(runner, pose_files, ARGS + ["-o", "r/report.json", "--plots"])
    assert result.exit_code == 0, result.output
    assert "wrote r/report-pck.png" in result.output and "wrote r/report-joints.png" in result.output
    md = (pose_files / "r" / "report.md").read_text()
    assert "![PCK against the threshold k" in md and "(report-pck.png)" in md and "(report-joints.png)" in md
    with_plots = json.loads((pose_files / "r" / "report.json").read_text())
    plain = _run(runner, pose_files, ARGS + ["-o", "r/plain.json"])
    assert plain.exit_code == 0, plain.output
    without = json.loads((pose_files / "r" / "plain.json").read_text())
    import hashlib

    import matplotlib

    pictures = with_plots.pop("pictures")
    assert [(p["caption"], p["file"]) for p in pictures] == [
        ("PCK against the threshold k, model and mean-pose baseline", "report-pck.png"),
        ("PCK per joint (macro entry), model and mean-pose baseline", "report-joints.png")]
    for p in pictures:  # each picture is an output bound to the report: its bytes, sha256 and who drew it
        data = (pose_files / "r" / p["file"]).read_bytes()
        assert p["sha256"] == hashlib.sha256(data).hexdigest() and p["bytes"] == len(data)
        assert p["engine"] == f"matplotlib {matplotlib.__version__}"
    for rep in (with_plots, without):
        rep.pop("reproducer")
    assert with_plots == without  # the pictures add nothing to the numbers verify compares
    assert "## Pictures" not in (pose_files / "r" / "plain.md").read_text()
    again = _run(runner, pose_files, ARGS + ["-o", "r/report.json", "--plots"])
    assert again.exit_code == 2 and "already exists" in again.output  # no silent overwrite


@pytest.mark.long
def test_a_report_with_pictures_verifies_under_any_name_score_accepts(runner, pose_files):
    """An honest report written with --plots under another name than report.json was a MISMATCH: verify's re-run
    wrote report.json, whose pictures are named report-*.png, not final.v2-*.png (found by an adversarial probe;
    the test fails on the code before)."""
    result = _run(runner, pose_files, ARGS + ["-o", "r/final.v2.json", "--plots"])
    assert result.exit_code == 0, result.output
    checked = runner.invoke(app, ["verify", str(pose_files / "r" / "final.v2.json"), "--root", str(pose_files)])
    assert checked.exit_code == 0, checked.output
    assert checked.output.startswith("MATCH")


@pytest.mark.parametrize("name", ["sp ace/my rep(1).json", "-lead.json", "été.json"])
def test_plots_refuse_a_report_name_no_picture_can_be_named_after(runner, pose_files, name):
    """A picture is named after the report; a name report.md does not link (a space, a bracket, a non-ASCII
    letter, a leading '-') made a report whose pictures verify refuses: score now says so before writing."""
    result = _run(runner, pose_files, ARGS + ["-o", name, "--plots"])
    assert result.exit_code == 2, result.output
    assert "which report.md does not link" in " ".join(result.output.split())
    assert not list(pose_files.rglob("*.png")) and not list(pose_files.rglob("*.json"))


def test_plots_need_an_output(runner, pose_files):
    result = _run(runner, pose_files, ARGS + ["--plots"])
    assert result.exit_code == 2
    assert result.output.strip() == ("error: --plots writes PNG files beside the report: give --out (report.json) "
                                     "as well")


def test_without_matplotlib_the_report_is_written_and_plots_are_skipped(runner, pose_files, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    result = _run(runner, pose_files, ARGS + ["-o", "report.json", "--plots"])
    assert result.exit_code == 0, result.output
    assert ("plots skipped: matplotlib is not installed; pictures need the plot extra: pip install "
            "'rfbench[plot]'") in result.output
    assert "Traceback" not in result.output
    assert (pose_files / "report.json").exists() and not list(pose_files.glob("*.png"))


def test_pictures_are_drawn_with_matplotlibs_defaults_whatever_the_users_settings(tiny_demo, tmp_path):
    """A verifier's matplotlibrc (a font size, a style) changed the redrawn picture's bytes: an honest report
    was a MISMATCH on pictures[0].bytes."""
    import json

    import matplotlib

    from rfbench.report.plots import write_pictures

    report = json.loads((tiny_demo / "gesture" / "report.json").read_text())
    plain = write_pictures(report, None, tmp_path / "a" / "report.json")
    with matplotlib.rc_context({"font.size": 23, "axes.facecolor": "#ffeedd", "figure.dpi": 72}):
        styled = write_pictures(report, None, tmp_path / "b" / "report.json")
    assert [c for c, _ in plain] == [c for c, _ in styled] and plain
    for (_, a), (_, b) in zip(plain, styled):
        assert a.read_bytes() == b.read_bytes()
    assert (tiny_demo / "gesture" / plain[0][1].name).read_bytes() == plain[0][1].read_bytes()
