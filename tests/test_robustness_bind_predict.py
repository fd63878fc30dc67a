"""verify of a robustness summary binds each cell's prediction settings to clean's, and clean's to the score-like
report's.

verify bound a cell to the clean cell by its windows settings and score settings only, never by the settings of
its prediction run (its ``pred.json``). A model with two outputs — ``y`` the pose, ``z`` the training mean pose
(the CSI ignored) — predicted clean (and the score-like report) with ``--output y`` and every corrupted cell with
``--output z``: each cell re-ran honestly under its own ``pred.json``, so verify said MATCH, yet every drop,
corruption error and mCE was forged. Now a cell's prediction settings (but the resource limits, which decide
whether a run finishes and never what it predicts) must be clean's, and clean's the score-like report's.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rfbench.cli import app
from rfbench.errors import VerificationError
from robustdata import rehash, two_outputs

CELL = "noise-1-seed0"
SCORE = ["--skeleton", "h36m17", "--units", "m", "--norm", "hip-width", "--k", "0.2", "--comparison", "<=",
         "--averaging", "micro", "--auc-n", "20", "--auc-max", "1.0", "--oks-area", "bbox", "--metrics", "pck",
         "--cluster-by", "recording", "--bootstrap", "200", "--confidence", "0.95", "--seed", "0"]
LIMITS = ["--memory-mb", "4096", "--cpu-seconds", "3600", "--timeout", "3600.0"]


def _run(argv: list) -> None:
    result = CliRunner().invoke(app, [str(a) for a in argv], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def _like(d: Path, model: Path, output: str, name: str) -> Path:
    """A score-like report of ``model`` over the demo's test windows, predicted with ``--output output``."""
    _run(["predict", model, "--windows", d / "windows" / "mmfi-test", "-o", d / f"{name}-pred.npy", "--output",
          output])
    _run(["score", "--task", "pose", "--pred", d / f"{name}-pred.npy", "--rows",
          d / "windows" / "mmfi-test" / "index.json", *SCORE, "--split", d / "mmfi-split.json", "--manifest",
          d / "mmfi-manifest.json", "-o", d / f"{name}.json"])
    return d / f"{name}.json"


@pytest.fixture(scope="module")
def sweep(tiny_demo, tmp_path_factory) -> Path:
    """An honest sweep (one cell) of the two-output model, clean and the score-like report predicted with
    ``--output y``, and a score-like report predicted with ``--output z`` beside it (``like-z.json``)."""
    d = tmp_path_factory.mktemp("bind-predict") / "d"
    shutil.copytree(tiny_demo, d, symlinks=True)
    model = two_outputs(d / "pose" / "ridge.onnx", d / "model2.onnx")
    like = _like(d, model, "y", "like")
    _like(d, model, "z", "like-z")
    _run(["robustness", model, "--split", d / "mmfi-split.json", "--score-like", like, "--corruptions", "noise",
          "--severities", "1", "-o", d / "S"])
    return d


@pytest.fixture
def demo(sweep, tmp_path) -> Path:
    d = tmp_path / "d"
    shutil.copytree(sweep, d, symlinks=True)
    return d


def _repredict_cell(d: Path, *predict_options, batch_size: int = 64) -> Path:
    """Cell CELL of the sweep predicted again from its own windows with ``predict_options``, scored as the sweep
    scores it, and recorded again in the summary. Returns the summary's path."""
    c = d / "S" / "cells" / CELL
    for name in ("pred.npy", "pred.json", "report.json", "report.md"):
        (c / name).unlink()
    _run(["predict", d / "model2.onnx", "--windows", c / "windows", "-o", c / "pred.npy", "--batch-size",
          str(batch_size), "--threads", "1", "--sessions", "1", "--tolerance", "1e-05", *predict_options])
    _run(["score", "--task", "pose", "--pred", c / "pred.npy", "--rows", c / "windows" / "index.json", *SCORE,
          "--split", d / "mmfi-split.json", "--manifest", d / "mmfi-manifest.json", "-o", c / "report.json"])
    summary = d / "S" / "summary.json"
    rehash(summary, CELL)
    return summary


def _verify_clean(summary: Path, root: Path):
    from rfbench.report.verify import verify_report

    return verify_report(summary, root=root, cells=("clean",))


def _found(caught, where: str) -> str:
    found = [x for x in caught.value.differences if x["path"] == where]
    assert found, caught.value.differences
    return str(found[0])


def test_a_cell_predicted_from_another_output_is_a_mismatch(demo):
    summary = _repredict_cell(demo, "--output", "z", *LIMITS)
    doc = json.loads(summary.read_text())
    assert doc["cells"][0]["model"]["value"] != doc["clean"]["model"]["value"]  # the forged cell scores otherwise
    with pytest.raises(VerificationError) as caught:
        _verify_clean(summary, demo)
    assert "output_name 'z', not 'y'" in _found(caught, f"cells[{CELL}].predict")


def test_a_cell_predicted_in_other_batches_is_a_mismatch(demo):
    """The batch size is not a resource limit: a model may compute across its batch."""
    summary = _repredict_cell(demo, "--output", "y", *LIMITS, batch_size=8)
    with pytest.raises(VerificationError) as caught:
        _verify_clean(summary, demo)
    assert "batch_size 8, not 64" in _found(caught, f"cells[{CELL}].predict")


def test_a_score_like_report_predicted_from_another_output_is_a_mismatch(demo):
    """The sweep takes its prediction settings from the score-like report: a summary naming one predicted with
    ``--output z`` (its sha256 and reproducer recorded again) names a report its cells were not predicted like."""
    from rfbench.report.robustness import reproducer_argv
    from rfbench.report.robustness_settings import RobustnessSettings

    summary = demo / "S" / "summary.json"
    doc = json.loads(summary.read_text())
    like_z = demo / "like-z.json"
    doc["score_like"] = {"path": "../like-z.json", "sha256": hashlib.sha256(like_z.read_bytes()).hexdigest()}
    s = doc["settings"]
    settings = RobustnessSettings(corruptions=tuple(s["corruptions"]), severities=",".join(map(str, s["severities"])),
                                  seeds=s["seeds"])
    doc["reproducer"] = {"argv": reproducer_argv(doc["model"]["path"], doc["split"]["path"], "../like-z.json",
                                                 settings, None)}
    summary.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    with pytest.raises(VerificationError) as caught:
        _verify_clean(summary, demo)
    assert [x["path"] for x in caught.value.differences] == ["score_like.predict"], caught.value.differences
    assert "output_name 'z', not 'y'" in _found(caught, "score_like.predict")


@pytest.mark.long
def test_the_honest_sweep_verifies_and_other_resource_limits_are_no_difference(demo):
    """The honest sweep of the two-output model verifies; a cell predicted again with other resource limits
    (which decide whether a run finishes, never what it predicts) is still a cell of the sweep."""
    assert _verify_clean(demo / "S" / "summary.json", demo).status == "match"
    summary = _repredict_cell(demo, "--output", "y", "--memory-mb", "8192", "--cpu-seconds", "7200",
                              "--timeout", "7200.0")
    assert json.loads((demo / "S" / "cells" / CELL / "pred.json").read_text())["settings"]["memory_mb"] == 8192
    assert _verify_clean(summary, demo).status == "match"
