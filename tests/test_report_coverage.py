"""What a report says about the test side it covers: recordings windows excluded count as not scored (they need
allow_partial and are listed with their reasons), records windows dropped are counted, and report.md shows both;
the Markdown neither repeats a macro row that reads as its micro row nor escapes rfbench's own code spans."""

from __future__ import annotations

import numpy as np
import pytest

from rfbench.datasets.windows import WindowSettings, write_windows
from rfbench.errors import ValidationError
from rfbench.report.render import _md, render_markdown, render_terminal
from rfbench.report.score import BootstrapSettings, ReportOptions, score_gesture
from tests.windowsdata import widar_case


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """A Widar-like split whose test side has one recording without a label and one holding records of
    another shape (2x1 records in one receiver log among its 3x1 ones)."""
    from rfbench.io.writer import synthetic_log

    tmp = tmp_path_factory.mktemp("coverage")

    def odd(root):
        p = sorted((root / "CSI" / "20181211" / "user1").glob("*-r2.dat"))[0]
        p.write_bytes(synthetic_log(10, seed=3) + synthetic_log(2, nrx=2, seed=4) + synthetic_log(10, seed=5))
    _, _, split = widar_case(tmp, damage=True, edit_tree=odd)
    out = tmp / "w"
    doc = write_windows(split, "test", out, WindowSettings(length=4))
    pred = tmp / "w" / "pred.npy"
    np.save(pred, np.zeros(len(doc["rows"]), dtype=np.int64))
    return split, out, pred, doc


def test_test_recordings_excluded_by_windows_are_not_scored(scored, tmp_path):
    split, out, pred, doc = scored
    assert doc["excluded"] and doc["dropped"]
    boot = BootstrapSettings(replicates=0)
    with pytest.raises(ValidationError, match=r"cover \d+ of \d+ test recordings .*1 of them excluded by windows: "
                                              r"1 \(no label or a label outside the label set\)"):
        score_gesture(pred, rows=out / "index.json", split=split, bootstrap=boot)
    run = score_gesture(pred, rows=out / "index.json", split=split, bootstrap=boot,
                        options=ReportOptions(allow_partial=True), out=tmp_path / "report.json")
    cov = run.report["coverage"]
    n_test = cov["test_recordings"]
    assert cov["scored_recordings"] == n_test - 1 == doc["recordings"]["with_rows"] and cov["missing_count"] == 1
    assert cov["excluded_by_windows"] == [{"id": "20181211/user4-7-1-1-1", "kind": "label",
                                           "reason": "no label (the manifest's 'label' is empty)"}]
    assert cov["dropped_by_windows"] == [{"what": "record", "reason": "antenna shape 2x1, not 3x1", "count": 2,
                                          "recordings": 1}]
    md = (tmp_path / "report.md").read_text()
    assert (f"| Coverage | {n_test - 1} of {n_test} test recordings scored; 1 excluded by windows: 1 (no label or "
            "a label outside the label set) (a subset") in md
    assert "| `20181211/user4-7-1-1-1` | label | no label (the manifest's 'label' is empty) |" in md
    assert "| record | antenna shape 2x1, not 3x1 | 2 | 1 |" in md
    from rich.console import Console

    console = Console(width=300, record=True)
    console.print(render_terminal(run.report))
    text = console.export_text()
    assert f"Coverage: {n_test - 1} of {n_test} test recordings scored; 1 excluded by windows" in text
    assert "Dropped: by windows, from scored test recordings: 2 records (antenna shape 2x1, not 3x1) in 1 recording" \
        in text


def _pose_result(averaging, value, low=0.1):
    spec = {"metric": "pck", "averaging": averaging, "k": 0.2, "normalization": "torso"}
    return {"metric": "pck", "spec": spec, "label": f"PCK@0.20 torso coco17 <= {averaging}", "better": "higher",
            "model": {"value": value, "scoreable": 10, "scoreable_unit": "joints", "unscoreable_samples": 0},
            "baseline": None, "delta": None, "ci": {"model": {"low": low, "high": 0.9}}}


def test_a_macro_row_that_reads_as_its_micro_row_is_not_repeated():
    report = {"task": "pose", "evidence": "CLAIMED", "results": [
        _pose_result("micro", 0.5), _pose_result("macro", 0.50000001),  # the same to the 4 decimals shown
        {**_pose_result("micro", 0.25), "spec": {"metric": "pck", "averaging": "micro", "k": 0.5}, "label": "k5 micro"},
        {**_pose_result("macro", 0.75), "spec": {"metric": "pck", "averaging": "macro", "k": 0.5}, "label": "k5 macro"},
    ]}
    md = render_markdown(report)
    rows = [line for line in md.splitlines() if line.startswith("| PCK") or line.startswith("| k5")]
    assert rows[0].startswith("| PCK@0.20 torso coco17 &lt;= micro = macro | 0.5000 |") and len(rows) == 3
    assert rows[1].startswith("| k5 micro | 0.2500") and rows[2].startswith("| k5 macro | 0.7500")
    assert "stands for both averagings" in md
    # an interval that differs keeps both rows
    report["results"][1] = _pose_result("macro", 0.5, low=0.2)
    assert "micro = macro" not in render_markdown(report)


def test_code_spans_in_notes_stay_code_and_other_backticks_are_escaped():
    assert _md("so `rfbench verify` can re-run it") == "so `rfbench verify` can re-run it"
    assert _md("a `b|c` d") == "a `b\\|c` d"
    assert _md("one ` alone") == "one \\` alone"
    assert _md("``x``") == "\\`\\`x\\`\\`"
    assert _md("`*not* emphasis`") == "`*not* emphasis`"


def test_report_md_says_how_the_scored_rows_were_windowed(tiny_demo):
    """The stride and target pick which test frames are scored (PCK@0.2 0.857-0.912 across strides on the demo),
    and report.md showed neither: "Coverage: 20 of 20 test recordings" read the same for every choice."""
    import json

    from rfbench.report.render import render_markdown

    report = json.loads((tiny_demo / "pose" / "report.json").read_text())
    md = (tiny_demo / "pose" / "report.md").read_text()
    assert "| Windows | the test side's rows as rfbench windows made them: --task pose --length 1 --stride 1" in md
    step = next(s for s in report["chain"] if s["step"] == "windows")
    step["argv"][step["argv"].index("--stride") + 1] = "10"
    assert "--stride 10" in render_markdown(report)
