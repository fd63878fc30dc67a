"""``robustness --force`` reads an earlier sweep's own files within rfbench's bounds: a cell's report.json or
windows/index.json of more bytes than rfbench reads for a JSON document, or nested deeper than it parses, is one
line (exit 2), never a MemoryError or RecursionError; a summary whose settings rfbench could not have written is
refused before any picture is drawn; a file in the sweep's way that no summary lists names the interrupted run it
may come from."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest

import rfbench.report.robustness as robustness
from rfbench.errors import OutputExistsError, RfbenchError
from rfbench.io.files import schema_id


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _cell(corruption: str, severity: int) -> dict:
    name = f"{corruption}-{severity}-seed0"
    return {"corruption": corruption, "severity": severity, "seed": 0, "report": f"cells/{name}/report.json",
            "sha256": "0" * 64, "model": {"value": 0.5, "low": 0.4, "high": 0.6},
            "drop": {"value": 0.1, "low": 0.0, "high": 0.2, "level": 0.95}}


def _summary() -> dict:
    """A summary of a sweep of noise at severities 1 and 3, one seed, as rfbench writes its shape."""
    return {"schema": schema_id("robustness"), "rfbench_version": "0.0.0", "task": "pose",
            "metric": {"label": "PCK@0.2", "better": "higher", "error": "1 − value"},
            "settings": {"corruptions": ["noise"], "severities": [1, 3], "seeds": 1},
            "clean": {"report": "clean/report.json", "sha256": "0" * 64,
                      "model": {"value": 0.6, "low": 0.5, "high": 0.7}},
            "baseline": {"value": 0.3},
            "cells": [_cell("noise", 1), _cell("noise", 3)],
            "corruptions": [{"corruption": "noise", "unit": "SNR (dB)",
                             "levels": [{"severity": 1, "value": 0.5, "physical": 30.0},
                                        {"severity": 3, "value": 0.5, "physical": 10.0}],
                             "ce_vs_baseline": 0.7, "ce": None, "relative_ce": None}]}


def _folder(tmp_path: Path, doc: dict) -> Path:
    out = tmp_path / "sweep"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps(doc), encoding="utf-8")
    return out


def _no_drawing(monkeypatch) -> None:
    def refuse(summary):
        raise AssertionError("a picture was drawn")

    monkeypatch.setattr(robustness, "_picture_bytes", refuse)


def test_a_cell_report_larger_than_rfbench_reads_for_json_is_refused_unread(tmp_path, monkeypatch):
    data = json.dumps({"schema": schema_id("report"), "padding": "x" * 4000}).encode()
    doc = _summary()
    doc["clean"]["sha256"] = _sha(data)
    out = _folder(tmp_path, doc)
    (out / "clean").mkdir()
    (out / "clean" / "report.json").write_bytes(data)
    monkeypatch.setattr(robustness, "MAX_JSON_BYTES", 1000)
    _no_drawing(monkeypatch)
    with pytest.raises(OutputExistsError) as exc:
        robustness._earlier_outputs(out, doc)
    text = str(exc.value)
    assert "\n" not in text
    assert f"{len(data)} bytes" in text and "1000" in text and "clean/report.json" in text


def _deep() -> bytes:
    return b"[" * 200_000 + b"]" * 200_000


def test_a_deeply_nested_cell_report_is_one_line_not_a_recursion_error(tmp_path, monkeypatch):
    data = _deep()
    doc = _summary()
    doc["clean"]["sha256"] = _sha(data)
    out = _folder(tmp_path, doc)
    (out / "clean").mkdir()
    (out / "clean" / "report.json").write_bytes(data)
    _no_drawing(monkeypatch)
    with pytest.raises(RfbenchError) as exc:
        robustness._earlier_outputs(out, doc)
    assert exc.value.exit_code == 2
    assert "\n" not in str(exc.value) and "clean/report.json" in str(exc.value)
    assert "nest" in str(exc.value)


def test_a_deeply_nested_windows_index_is_one_line_not_a_recursion_error(tmp_path, monkeypatch):
    index = _deep()
    report = json.dumps({"schema": schema_id("report"),
                         "inputs": [{"role": "rows", "path": "windows/index.json", "sha256": _sha(index)}]}).encode()
    doc = _summary()
    doc["clean"]["sha256"] = _sha(report)
    out = _folder(tmp_path, doc)
    (out / "clean" / "windows").mkdir(parents=True)
    (out / "clean" / "report.json").write_bytes(report)
    (out / "clean" / "windows" / "index.json").write_bytes(index)
    import rfbench.report.render as render

    monkeypatch.setattr(render, "render_markdown", lambda report: "")  # (this report is not one to render)
    _no_drawing(monkeypatch)
    with pytest.raises(RfbenchError) as exc:
        robustness._earlier_outputs(out, doc)
    assert exc.value.exit_code == 2
    assert "\n" not in str(exc.value) and "windows/index.json" in str(exc.value)
    assert "nest" in str(exc.value)


def _crafted_many_corruptions(doc: dict) -> None:
    item = doc["corruptions"][0]
    doc["corruptions"] = [dict(item, corruption=f"x{i}") for i in range(300)]


def _crafted_huge_severities(doc: dict) -> None:
    for j, level in enumerate(doc["corruptions"][0]["levels"]):
        level["severity"] = [1e308, -1e308][j % 2]


def _crafted_unknown_corruption(doc: dict) -> None:
    doc["settings"]["corruptions"] = ["$\\frac{"]


def _crafted_float_severity(doc: dict) -> None:
    doc["settings"]["severities"] = [1.0, 3]


def _crafted_cells(doc: dict) -> None:
    doc["cells"] = doc["cells"] * 2


def _crafted_infinite_value(doc: dict) -> None:
    doc["baseline"]["value"] = "inf"


@pytest.mark.parametrize("craft", [_crafted_many_corruptions, _crafted_huge_severities, _crafted_unknown_corruption,
                                   _crafted_float_severity, _crafted_cells, _crafted_infinite_value])
def test_a_summary_rfbench_could_not_have_written_is_refused_before_any_picture(tmp_path, monkeypatch, craft):
    doc = _summary()
    craft(doc)
    out = _folder(tmp_path, doc)
    _no_drawing(monkeypatch)
    with pytest.raises(OutputExistsError) as exc:
        robustness._check_sweep_folder(out, out / "summary.json", True)
    text = str(exc.value)
    assert "\n" not in text and "summary.json" in text and "not one rfbench robustness writes" in text


def test_the_shape_rfbench_writes_is_taken(tmp_path, monkeypatch):
    doc = _summary()
    out = _folder(tmp_path, doc)
    _no_drawing(monkeypatch)
    assert robustness._check_sweep_folder(out, out / "summary.json", True) == doc


def test_a_file_no_summary_lists_names_an_interrupted_run(tmp_path, monkeypatch):
    doc = copy.deepcopy(_summary())
    out = _folder(tmp_path, doc)
    (out / "cells" / "noise-2-seed0").mkdir(parents=True)
    (out / "cells" / "noise-2-seed0" / "pred.json").write_text("{}", encoding="utf-8")
    monkeypatch.setattr(robustness, "_picture_bytes", lambda summary: {})
    with pytest.raises(OutputExistsError) as exc:
        robustness._stale_outputs(out, doc, ["clean", "cells/noise-2-seed0"], [])
    text = str(exc.value)
    assert "\n" not in text and "cells/noise-2-seed0/pred.json" in text
    assert "interrupted" in text
    assert f"remove {out}" in text


def test_a_picture_no_summary_draws_names_an_interrupted_run(tmp_path, monkeypatch):
    from rfbench.report.plots import have_matplotlib

    if not have_matplotlib():
        pytest.skip("pictures beside a summary are checked with matplotlib only")
    doc = _summary()
    out = _folder(tmp_path, doc)
    (out / "robustness-noise.png").write_bytes(b"\x89PNG not the summary's")
    monkeypatch.setattr(robustness, "_picture_bytes", lambda summary: {})
    with pytest.raises(OutputExistsError) as exc:
        robustness._stale_outputs(out, doc, ["clean"], [])
    text = str(exc.value)
    assert "\n" not in text and "robustness-noise.png" in text and "interrupted" in text
