"""report.md's Windows row shows only what verify compares: the windows step's settings at their fixed place
(after ``rfbench windows SPLIT --side test -o OUT``), with the value of a path option (``--label-set``) left out.
The split path and the output folder are never compared, so no text written there reaches the row."""

from __future__ import annotations

import copy
import json

import pytest

from rfbench.report.render import render_markdown

FREE = "every packet of all 17 users, official 22-gesture set; audited by the dataset's authors"


@pytest.fixture(scope="module")
def gesture_report(tiny_demo):
    return json.loads((tiny_demo / "gesture" / "report.json").read_text())


def _windows_row(md: str) -> str:
    rows = [line for line in md.splitlines() if line.startswith("| Windows |")]
    assert len(rows) == 1, rows
    return rows[0]


def _step(report: dict) -> list[str]:
    return next(s for s in report["chain"] if s["step"] == "windows")["argv"]


def test_the_row_shows_the_settings_verify_compares(gesture_report):
    row = _windows_row(render_markdown(gesture_report))
    assert row == ("| Windows | the test side's rows as rfbench windows made them: --task gesture --features amp --csi "
                   "raw --subcarriers 30 --bandwidth 20 --antennas 3x1 --odd-records drop-records --resample 32 |")


def test_an_option_word_in_the_split_path_does_not_pull_the_output_folder_into_the_row(gesture_report):
    report = copy.deepcopy(gesture_report)
    argv = _step(report)
    argv[2] = "-o"
    argv[6] = f"--length 1 --stride 1 ({FREE})"
    row = _windows_row(render_markdown(report))
    assert "audited" not in row and "17 users" not in row and "--length 1" not in row
    assert row.endswith(": --task gesture --features amp --csi raw --subcarriers 30 --bandwidth 20 --antennas 3x1 "
                        "--odd-records drop-records --resample 32 |")


@pytest.mark.parametrize("word", ["-o", "--side", "test"])
def test_free_text_in_the_uncompared_places_never_shows(gesture_report, word):
    report = copy.deepcopy(gesture_report)
    argv = _step(report)
    argv[2] = word
    argv[6] = FREE
    assert "audited" not in render_markdown(report)


def test_a_label_set_path_is_left_out(gesture_report):
    report = copy.deepcopy(gesture_report)
    _step(report).extend(["--label-set", FREE])
    row = _windows_row(render_markdown(report))
    assert "audited" not in row
    assert "--resample 32 --label-set FILE" in row
    assert "FILE: the label-set file; its path is not compared, its class names are the report's label set" in row


def test_a_windows_step_not_in_the_recorded_shape_shows_no_settings(gesture_report):
    report = copy.deepcopy(gesture_report)
    argv = _step(report)
    argv[5] = "--out"  # verify compares the words at 1, 3, 4 and 5; this step is not one rfbench records
    assert "| Windows |" not in render_markdown(report)


def test_the_row_masks_the_path_options_verify_masks():
    from rfbench.report import render, verify

    assert render._WINDOWS_PATH_OPTIONS == verify._PATH_OPTIONS
    assert render._WINDOWS_FIXED == {0: "rfbench", 1: "windows", 3: "--side", 4: "test", 5: "-o"}
