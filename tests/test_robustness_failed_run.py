"""A sweep that fails leaves nothing behind that blocks running it again.

``rfbench robustness`` with a two-output model whose score-like report names no ``--output`` exited 2 with a
correct line, but only after the clean cell's windows were written: ``DIR/clean/windows/{X.npy,y.npy,index.json}``
stayed, and the same command was then refused with and without ``--force`` (a folder not empty, holding no
summary). Now the model is checked against the score-like report's prediction settings before anything is
written, and a sweep begun in a new or empty folder removes the files it wrote when it fails.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rfbench.cli import app
from rfbench.errors import ValidationError
from robustdata import two_outputs


@pytest.fixture
def demo(tiny_demo, tmp_path) -> Path:
    d = tmp_path / "d"
    shutil.copytree(tiny_demo, d, symlinks=True)
    return d


def _sweep(d: Path, model: Path, out: Path, *extra) -> list:
    return [str(a) for a in ["robustness", model, "--split", d / "mmfi-split.json", "--score-like",
                             d / "pose" / "pck20.json", "--corruptions", "noise", "--severities", "1", "-o", out,
                             *extra]]


def test_a_model_the_prediction_settings_do_not_fit_writes_nothing(demo):
    model = two_outputs(demo / "pose" / "ridge.onnx", demo / "model2.onnx")
    out = demo / "S"
    for extra in ((), ("--force",)):
        result = CliRunner().invoke(app, _sweep(demo, model, out, *extra), catch_exceptions=False)
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "has 2 outputs ('y', 'z')" in lines[0], result.output
        assert not out.exists(), sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
        assert "score-like report" in lines[0], result.output


def test_a_sweep_that_fails_in_a_new_folder_removes_what_it_wrote(demo, monkeypatch):
    """Any failure after the first windows are written (here: the model fails on the first cell's data)."""
    import rfbench.nn.predict as predict_module

    out = demo / "S"
    out.mkdir()  # new and empty: a sweep may write there

    def failing(*args, **kwargs):
        raise ValidationError("the model failed")

    monkeypatch.setattr(predict_module, "predict", failing)
    args = _sweep(demo, demo / "pose" / "ridge.onnx", out)
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 2 and "the model failed" in result.output, result.output
    assert out.is_dir() and list(out.iterdir()) == []  # the folder was there before: it stays, empty
    monkeypatch.undo()
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (out / "summary.json").is_file()
