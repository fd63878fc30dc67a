"""A robustness summary's cells and reference are bound to the sweep, and a sweep never writes over what it reads.

- verify checked a summary's reference sweep on its own but never against the summary: a pose PCK sweep naming
  a gesture accuracy sweep as its reference (sha256 and mCE recorded again) verified MATCH, though
  ``rfbench robustness`` refuses such a reference.
- A cell's windows index was bound to the sweep by its corruption alone: a cell rebuilt with ``--stride 3``
  (scored over a third of the test frames) and hashed again into the summary verified MATCH.
- A cell's score settings were bound by its metric label alone: a cell scored again with ``--confidence 0.5
  --bootstrap 50 --seed 7`` verified MATCH.
- ``robustness --force --reference OUT/summary.json -o OUT`` read the earlier summary as its reference and wrote
  the new one over it (``--score-like OUT/clean/report.json`` likewise).
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
from robustdata import rehash

CELL = "noise-3-seed0"
SCORE = ["--skeleton", "h36m17", "--units", "m", "--norm", "hip-width", "--k", "0.2", "--comparison", "<=",
         "--averaging", "micro", "--auc-n", "20", "--auc-max", "1.0", "--oks-area", "bbox", "--metrics", "pck",
         "--cluster-by", "recording"]


@pytest.fixture
def demo(tiny_demo, tmp_path) -> Path:
    d = tmp_path / "d"
    shutil.copytree(tiny_demo, d, symlinks=True)
    return d


def _run(argv: list) -> None:
    result = CliRunner().invoke(app, [str(a) for a in argv], catch_exceptions=False)
    assert result.exit_code == 0, result.output


def _verify_clean(summary: Path, root: Path):
    from rfbench.report.verify import verify_report

    return verify_report(summary, root=root, cells=("clean",))


def _rebuild_cell(d: Path, *, stride: int = 1, bootstrap=("--bootstrap", "200", "--confidence", "0.95",
                                                          "--seed", "0")) -> Path:
    """Cell noise-3-seed0 of the demo's pose sweep built again with its own corruption but ``stride`` and scored
    with ``bootstrap``; the summary records it again. Returns the summary's path."""
    c = d / "pose" / "robustness" / "cells" / CELL
    shutil.rmtree(c)
    _run(["windows", d / "mmfi-split.json", "--side", "test", "-o", c / "windows", "--task", "pose", "--length", "1",
          "--stride", str(stride), "--target", "last", "--features", "amp,phase", "--nonfinite", "refuse",
          "--corrupt", "noise:3", "--corrupt-seed", "0"])
    _run(["predict", d / "pose" / "ridge.onnx", "--windows", c / "windows", "-o", c / "pred.npy", "--batch-size",
          "64", "--threads", "1", "--sessions", "1", "--tolerance", "1e-05", "--memory-mb", "4096",
          "--cpu-seconds", "3600", "--timeout", "3600.0"])
    _run(["score", "--task", "pose", "--pred", c / "pred.npy", "--rows", c / "windows" / "index.json", *SCORE,
          "--split", d / "mmfi-split.json", "--manifest", d / "mmfi-manifest.json", *bootstrap,
          "-o", c / "report.json"])
    summary = d / "pose" / "robustness" / "summary.json"
    rehash(summary, CELL)
    return summary


def _paths(caught) -> list[str]:
    return [x["path"] for x in caught.value.differences]


def test_a_cell_built_with_another_stride_is_a_mismatch(demo):
    summary = _rebuild_cell(demo, stride=3)
    with pytest.raises(VerificationError) as caught:
        _verify_clean(summary, demo)
    assert f"cells[{CELL}].windows" in _paths(caught), caught.value.differences
    (found,) = [x for x in caught.value.differences if x["path"] == f"cells[{CELL}].windows"]
    assert "stride 3, not 1" in str(found), found


def test_a_cell_scored_with_another_bootstrap_is_a_mismatch(demo):
    summary = _rebuild_cell(demo, bootstrap=("--bootstrap", "50", "--confidence", "0.5", "--seed", "7"))
    with pytest.raises(VerificationError) as caught:
        _verify_clean(summary, demo)
    assert f"cells[{CELL}].score" in _paths(caught), caught.value.differences
    (found,) = [x for x in caught.value.differences if x["path"] == f"cells[{CELL}].score"]
    assert "confidence 0.5, not 0.95" in str(found) and "replicates 50, not 200" in str(found), found


def test_a_cell_built_and_scored_as_clean_again_still_verifies(demo):
    """The rebuild itself is honest: the same settings as the sweep's, so the checks above name only what
    differs."""
    summary = _rebuild_cell(demo)
    result = _verify_clean(summary, demo)
    assert result.status == "match"


def _sweeps(d: Path) -> tuple[Path, Path]:
    """A pose sweep S and a gesture sweep R, one cell each."""
    _run(["robustness", d / "pose" / "ridge.onnx", "--split", d / "mmfi-split.json", "--score-like",
          d / "pose" / "pck20.json", "--corruptions", "noise", "--severities", "1", "-o", d / "S"])
    _run(["robustness", d / "gesture" / "centroid.onnx", "--split", d / "widar-split.json", "--score-like",
          d / "gesture" / "report.json", "--corruptions", "noise", "--severities", "1", "-o", d / "R"])
    return d / "S" / "summary.json", d / "R" / "summary.json"


def test_a_reference_of_another_task_metric_and_split_is_a_mismatch(demo):
    from rfbench.report.robustness import _pictures, aggregate, reproducer_argv
    from rfbench.report.robustness_settings import RobustnessSettings

    s_path, r_path = _sweeps(demo)
    _verify_clean(r_path, demo)  # the reference is an honest sweep of its own
    doc, ref = json.loads(s_path.read_text()), json.loads(r_path.read_text())
    assert (ref["task"], doc["task"]) == ("gesture", "pose")
    doc["reference"] = {"path": "../R/summary.json", "sha256": hashlib.sha256(r_path.read_bytes()).hexdigest()}
    doc.update(aggregate(doc["metric"]["better"], doc["clean"], doc["cells"], doc["baseline"]["value"], ref))
    sweep = doc["settings"]
    st = RobustnessSettings(corruptions=tuple(sweep["corruptions"]),
                            severities=",".join(map(str, sweep["severities"])), seeds=sweep["seeds"])
    doc["reproducer"] = {"argv": reproducer_argv(doc["model"]["path"], doc["split"]["path"],
                                                 doc["score_like"]["path"], st, "../R/summary.json")}
    s_path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    _pictures(doc, s_path.parent)
    with pytest.raises(VerificationError) as caught:
        _verify_clean(s_path, demo)
    (found,) = [x for x in caught.value.differences if x["path"] == "reference"]
    text = str(found)
    assert "task 'gesture'" in text and "metric 'accuracy" in text and "another split" in text, found


def _small_sweep(d: Path, out: Path, *extra) -> list:
    return ["robustness", d / "pose" / "ridge.onnx", "--split", d / "mmfi-split.json", "--corruptions", "noise",
            "--severities", "1", "-o", out, *extra]


@pytest.mark.parametrize("option, read", [("--reference", "summary.json"), ("--score-like", "clean/report.json")])
def test_a_sweep_never_writes_over_an_input_it_reads(demo, option, read):
    out = demo / "S"
    _run([*_small_sweep(demo, out, "--score-like", demo / "pose" / "pck20.json")])
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    like = [] if option == "--score-like" else ["--score-like", demo / "pose" / "pck20.json"]
    result = CliRunner().invoke(app, [str(a) for a in _small_sweep(demo, out, *like, option, out / read, "--force")])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "is an input of this job" in lines[0] and read.split("/")[-1] in lines[0], lines
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # nothing written or removed
