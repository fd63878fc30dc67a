"""``rfbench verify``: re-runs a report's reproducer; exit 0 on a match, 1 on any difference, 2 on a broken
report or a missing input. It never writes, least of all over the report it checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from posedata import pose_files
from rfbench.cli import app
from rfbench.report.build import build_report

ARGS = ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--vis", "vis.npy", "--skeleton", "coco17", "--units", "m",
        "--norm", "torso,bbox", "--k", "0.1,0.2", "--bootstrap", "50", "--split", "split.json", "--groups",
        "groups.npy", "--train-gt", "train_gt.npy", "--train-groups", "train_groups.npy"]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A folder with inputs and a report written by rfbench score (with --force in its reproducer)."""
    from typer.testing import CliRunner

    folder = tmp_path_factory.mktemp("verify")
    pose_files(folder)
    import os

    old = os.getcwd()
    os.chdir(folder)
    try:
        result = CliRunner().invoke(app, ARGS + ["-o", "out/report.json", "--force"])
    finally:
        os.chdir(old)
    assert result.exit_code == 0, result.output
    return folder


@pytest.fixture
def work(made, tmp_path):
    """A private copy of the made folder (tests may damage it)."""
    dst = tmp_path / "copy"
    shutil.copytree(made, dst)
    return dst


def verify(runner, path, *extra):
    """``rfbench verify`` with the made folder as its root (the report sits in out/, its inputs beside out/)."""
    from pathlib import Path

    result = runner.invoke(app, ["verify", str(path), "--root", str(Path(path).parent.parent), *extra])
    assert "Traceback" not in result.output
    return result


def test_a_fresh_report_matches_and_is_not_touched(runner, work):
    report = work / "out" / "report.json"
    before = report.read_bytes()
    mtime = report.stat().st_mtime_ns
    result = verify(runner, report)
    assert result.exit_code == 0, result.output
    assert "MATCH" in result.output
    assert report.read_bytes() == before and report.stat().st_mtime_ns == mtime
    result = verify(runner, report, "--json")
    out = json.loads(result.stdout)
    assert out["status"] == "match" and out["compared"] > 500 and out["differences"] == []
    argv = out["rerun_argv"]
    assert "--force" not in argv and "--json" not in argv
    # the re-run writes only into verify's private temporary folder, which is gone afterwards
    written = Path(argv[argv.index("-o") + 1])
    assert not written.is_relative_to(work) and not written.parent.exists()
    # ground truth the scored party supplied: MEASURED, verified MATCH, and the verdict says what it rests on
    # (only report.md's table said so; the verdict and --json notes were silent)
    assert any(n.startswith("the ground truth is a file the scored party supplied (--gt, --train-gt): the same "
                            "arrays score the same, but nothing says they are the dataset's") for n in out["notes"])
    assert "note: the ground truth is a file the scored party supplied (--gt, --train-gt)" in \
        " ".join(verify(runner, report).output.split())


def test_a_moved_folder_still_verifies(runner, work, tmp_path):
    moved = tmp_path / "elsewhere"
    shutil.move(str(work), moved)
    result = verify(runner, moved / "out" / "report.json")
    assert result.exit_code == 0, result.output


def test_a_changed_input_is_exit_1(runner, work):
    pred = np.load(work / "pred.npy")
    pred[0, 0, 0] += 1e-9
    np.save(work / "pred.npy", pred)
    result = verify(runner, work / "out" / "report.json")
    assert result.exit_code == 1, result.output
    assert "1 input(s) changed" in result.output and "inputs[pred]" in result.output


def test_a_changed_number_is_exit_1_with_a_readable_diff(runner, work):
    report = work / "out" / "report.json"
    rep = json.loads(report.read_text())
    idx = next(i for i, r in enumerate(rep["results"]) if r["label"] == "MPJPE (m) coco17 micro")
    rep["results"][idx]["model"]["value"] += 1e-12  # a claim that is off in the 12th decimal
    report.write_text(json.dumps(rep))
    result = verify(runner, report)
    assert result.exit_code == 1, result.output
    assert "MISMATCH" in result.output and f"results[{idx}].model.value" in result.output
    assert "MPJPE (m) coco17 micro" in result.output
    result = verify(runner, report, "--json")
    out = json.loads(result.stdout)
    assert out["status"] == "mismatch" and len(out["differences"]) == 1
    assert out["differences"][0]["path"] == f"results[{idx}].model.value (MPJPE (m) coco17 micro)"


def test_a_changed_setting_is_caught(runner, work):
    # Someone edits the spec after the fact (claims <, the run used <=).
    report = work / "out" / "report.json"
    rep = json.loads(report.read_text())
    rep["results"][0]["spec"]["comparison"] = "<"
    report.write_text(json.dumps(rep))
    result = verify(runner, report)
    assert result.exit_code == 1 and "spec.comparison" in result.output


def test_a_missing_input_is_exit_2(runner, work):
    (work / "train_gt.npy").unlink()
    result = verify(runner, work / "out" / "report.json")
    assert result.exit_code == 2
    assert "input train-gt is missing" in result.output


@pytest.mark.parametrize("content,message", [
    ("not json", "not valid JSON"),
    ('{"schema": "rfbench.split/1"}', "not a report file"),
    ('{"schema": "rfbench.report/9"}', "major version 9"),
    ('{"schema": "rfbench.report/1", "task": "pose"}', "not a valid report"),
])
def test_an_unreadable_report_is_exit_2(runner, tmp_path, content, message):
    path = tmp_path / "r.json"
    path.write_text(content)
    result = verify(runner, path)
    assert result.exit_code == 2 and message in result.output
    assert verify(runner, tmp_path / "none.json").exit_code == 2


def test_a_claimed_report_cannot_be_verified(runner, tmp_path):
    rep = build_report(task="pose", results=[{"metric": "pck", "spec": {"k": 0.2}, "label": "PCK@0.20 from a paper",
                                              "better": "higher", "model": {"value": 0.96}, "baseline": None,
                                              "delta": None, "ci": None}])
    path = tmp_path / "claimed.json"
    path.write_text(json.dumps(rep))
    result = verify(runner, path)
    assert result.exit_code == 2 and "no reproducer" in result.output


def test_a_measured_tag_without_hashes_is_refused(runner, work):
    report = work / "out" / "report.json"
    rep = json.loads(report.read_text())
    del rep["inputs"][0]["sha256"]
    report.write_text(json.dumps(rep))
    result = verify(runner, report)
    assert result.exit_code == 2 and "tagged MEASURED but" in result.output


def test_a_missing_report_is_said_before_anything_about_the_root(runner, tmp_path):
    """`rfbench verify nope/report.json` complained about the root instead of naming the missing report."""
    result = runner.invoke(app, ["verify", str(tmp_path / "nope" / "report.json")])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == f"error: {tmp_path / 'nope' / 'report.json'}: no such report"
