"""A reference sweep is one over the same windows: its clean cell's windows settings (stride, length, target,
features, ... but the corruption) are the sweep's.

``reference_differs`` compared a reference's task, metric label, split sha256 and cells, not its windows: a
reference scored with ``--stride 4`` (a quarter of the test frames) was taken by ``rfbench robustness --reference``
and verified MATCH, its errors scaling the CE and mCE of a sweep over every frame.
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

SCORE = ["--skeleton", "h36m17", "--units", "m", "--norm", "hip-width", "--k", "0.2", "--comparison", "<=",
         "--averaging", "micro", "--auc-n", "20", "--auc-max", "1.0", "--oks-area", "bbox", "--metrics", "pck",
         "--cluster-by", "recording", "--bootstrap", "200", "--confidence", "0.95", "--seed", "0"]


def _run(argv: list):
    return CliRunner().invoke(app, [str(a) for a in argv], catch_exceptions=False)


def _ok(argv: list) -> None:
    result = _run(argv)
    assert result.exit_code == 0, result.output


def _sweep(d: Path, like: Path, out: Path, *extra) -> list:
    return ["robustness", d / "pose" / "ridge.onnx", "--split", d / "mmfi-split.json", "--score-like", like,
            "--corruptions", "noise", "--severities", "1", "-o", out, *extra]


@pytest.fixture(scope="module")
def sweeps(tiny_demo, tmp_path_factory) -> Path:
    """``S``: a one-cell sweep over the demo's test windows (stride 1); ``R4``: the same cell over windows built
    with ``--stride 4``."""
    d = tmp_path_factory.mktemp("reference-windows") / "d"
    shutil.copytree(tiny_demo, d, symlinks=True)
    _ok(_sweep(d, d / "pose" / "pck20.json", d / "S"))
    _ok(["windows", d / "mmfi-split.json", "--side", "test", "-o", d / "w4", "--task", "pose", "--stride", "4"])
    _ok(["predict", d / "pose" / "ridge.onnx", "--windows", d / "w4", "-o", d / "pred4.npy"])
    _ok(["score", "--task", "pose", "--pred", d / "pred4.npy", "--rows", d / "w4" / "index.json", *SCORE,
         "--split", d / "mmfi-split.json", "--manifest", d / "mmfi-manifest.json", "-o", d / "like4.json"])
    _ok(_sweep(d, d / "like4.json", d / "R4"))
    return d


@pytest.fixture
def demo(sweeps, tmp_path) -> Path:
    d = tmp_path / "d"
    shutil.copytree(sweeps, d, symlinks=True)
    return d


def test_robustness_refuses_a_reference_over_other_windows(demo):
    result = _run(_sweep(demo, demo / "pose" / "pck20.json", demo / "X", "--reference", demo / "R4" / "summary.json"))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "not a reference for this sweep" in lines[0], result.output
    assert "other windows (stride 4, not 1)" in lines[0], result.output
    assert not (demo / "X").exists()


def test_verify_calls_a_reference_over_other_windows_a_mismatch(demo):
    from rfbench.report.robustness import _pictures, aggregate, reproducer_argv
    from rfbench.report.robustness_settings import RobustnessSettings
    from rfbench.report.verify import verify_report

    s_path, r_path = demo / "S" / "summary.json", demo / "R4" / "summary.json"
    doc, ref = json.loads(s_path.read_text()), json.loads(r_path.read_text())
    doc["reference"] = {"path": "../R4/summary.json", "sha256": hashlib.sha256(r_path.read_bytes()).hexdigest()}
    doc.update(aggregate(doc["metric"]["better"], doc["clean"], doc["cells"], doc["baseline"]["value"], ref))
    assert doc["mce"] is not None
    s = doc["settings"]
    st = RobustnessSettings(corruptions=tuple(s["corruptions"]), severities=",".join(map(str, s["severities"])),
                            seeds=s["seeds"])
    doc["reproducer"] = {"argv": reproducer_argv(doc["model"]["path"], doc["split"]["path"],
                                                 doc["score_like"]["path"], st, "../R4/summary.json")}
    s_path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    _pictures(doc, s_path.parent)
    with pytest.raises(VerificationError) as caught:
        verify_report(s_path, root=demo, cells=("clean",))
    assert [x["path"] for x in caught.value.differences] == ["reference"], caught.value.differences
    assert "other windows (stride 4, not 1)" in str(caught.value.differences[0])


def test_a_reference_over_the_same_windows_is_still_taken_and_verifies(demo):
    from rfbench.report.verify import verify_report

    _ok(_sweep(demo, demo / "pose" / "pck20.json", demo / "S2", "--reference", demo / "S" / "summary.json"))
    doc = json.loads((demo / "S2" / "summary.json").read_text())
    assert doc["mce"] is not None
    assert verify_report(demo / "S2" / "summary.json", root=demo, cells=("clean",)).status == "match"
