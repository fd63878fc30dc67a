"""``rfbench windows``: JSON output, exit codes with one error line, --force, and outputs that are complete or
absent (errors, Ctrl-C and SIGTERM leave the folder as it was)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.datasets.windows import build as build_module
from tests.windowsdata import edit_manifest, mmfi_case


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return mmfi_case(tmp_path_factory.mktemp("cli"))


def _run(runner, *args):
    return runner.invoke(app, ["windows", *map(str, args)], env={"COLUMNS": "200"})


def _one_error_line(result, words):
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], result.output


def test_json_output_describes_what_was_written(runner, case, tmp_path):
    _, _, split = case
    out = tmp_path / "out"
    result = _run(runner, split, "--side", "test", "-o", out, "--length", "2", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["rows"] == 8 and summary["x_shape"] == [8, 2, 2, 3, 114, 10] and summary["task"] == "pose"
    assert summary["settings"]["length"] == 2 and summary["settings"]["target"] == "last"
    assert summary["files_read"] == 2 + 10 and summary["excluded"] == []
    assert sorted(os.listdir(out)) == ["X.npy", "index.json", "y.npy"]
    index = json.loads((out / "index.json").read_text())
    assert len(index["rows"]) == 8 and np.load(out / "X.npy").shape == (8, 2, 2, 3, 114, 10)


def test_text_output_names_the_outputs(runner, case, tmp_path):
    _, _, split = case
    result = _run(runner, split, "--side", "train", "-o", tmp_path / "o")
    assert result.exit_code == 0, result.output
    assert "rows       10 from 2 of 2 recordings; 0 excluded" in result.output
    assert f"wrote {tmp_path / 'o' / 'X.npy'}" in result.output


def test_existing_outputs_need_force_and_other_files_are_left_alone(runner, case, tmp_path):
    _, _, split = case
    out = tmp_path / "out"
    assert _run(runner, split, "--side", "test", "-o", out).exit_code == 0
    (out / "notes.txt").write_text("mine")
    result = _run(runner, split, "--side", "test", "-o", out, "--length", "2")
    assert result.exit_code == 2
    _one_error_line(result, "X.npy already exists; pass --force")
    assert np.load(out / "X.npy").shape[1] == 1
    result = _run(runner, split, "--side", "test", "-o", out, "--length", "2", "--force")
    assert result.exit_code == 0, result.output
    assert np.load(out / "X.npy").shape[1] == 2 and (out / "notes.txt").read_text() == "mine"
    assert sorted(os.listdir(out)) == ["X.npy", "index.json", "notes.txt", "y.npy"]


def _files(folder):
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}


def test_both_sides_are_the_files_of_one_run_per_side_from_one_split_load(runner, case, tmp_path, monkeypatch):
    _, _, split = case
    for side in ("train", "test"):
        assert _run(runner, split, "--side", side, "-o", tmp_path / "one" / side, "--length", "2").exit_code == 0
    from rfbench.protocols import splitfile

    real, loads = splitfile.load_split, []
    monkeypatch.setattr(splitfile, "load_split", lambda path: loads.append(path) or real(path))
    result = _run(runner, split, "--side", "both", "-o", tmp_path / "both", "--length", "2", "--json")
    assert result.exit_code == 0, result.output
    assert len(loads) == 1  # the split (and its manifest) loaded and re-checked once, not once per side
    assert sorted(os.listdir(tmp_path / "both")) == ["test", "train"]
    for side in ("train", "test"):
        assert _files(tmp_path / "both" / side) == _files(tmp_path / "one" / side)
    summary = json.loads(result.stdout)
    assert sorted(summary) == ["test", "train"]
    assert summary["train"]["side"] == "train" and summary["train"]["rows"] == 8
    assert summary["test"]["side"] == "test" and summary["test"]["rows"] == 8
    assert summary["test"]["index"] == str(tmp_path / "both" / "test" / "index.json")
    text = _run(runner, split, "--side", "both", "-o", tmp_path / "both", "--length", "2", "--force")
    assert text.exit_code == 0, text.output
    assert "train side of" in text.output and "test side of" in text.output
    assert f"wrote {tmp_path / 'both' / 'test' / 'X.npy'}" in text.output


def test_both_sides_are_written_together_or_not_at_all(runner, tmp_path, monkeypatch):
    _, _, split = mmfi_case(tmp_path)
    out = tmp_path / "out"
    real = build_module._read_mmfi_frame

    def failing(job, entry, *args):
        if job.side == "test":  # the train side is complete (under temporary names) by now
            from rfbench.errors import FormatError

            raise FormatError(f"{entry['path']}: broken")
        return real(job, entry, *args)

    monkeypatch.setattr(build_module, "_read_mmfi_frame", failing)
    result = _run(runner, split, "--side", "both", "-o", out, "--workers", "1")
    assert result.exit_code == 2
    _one_error_line(result, "broken")
    assert not out.exists()  # no train side without its test side, and the folders the run made are gone
    # outputs already there stay as they were (no temporary file left beside them)
    monkeypatch.setattr(build_module, "_read_mmfi_frame", real)
    assert _run(runner, split, "--side", "both", "-o", out).exit_code == 0
    before = {side: _files(out / side) for side in ("train", "test")}
    monkeypatch.setattr(build_module, "_read_mmfi_frame", failing)
    result = _run(runner, split, "--side", "both", "-o", out, "--force", "--length", "2", "--workers", "1")
    assert result.exit_code == 2
    assert {side: _files(out / side) for side in ("train", "test")} == before
    # an existing side needs --force before anything is read
    monkeypatch.setattr(build_module, "_read_mmfi_frame", real)
    result = _run(runner, split, "--side", "both", "-o", out, "--length", "2")
    assert result.exit_code == 2
    _one_error_line(result, "X.npy already exists; pass --force")


@pytest.mark.parametrize("args, code, words", [
    (["--side", "val"], 2, "--side must be train, test or both"),
    (["--side", "test", "--resample", "8"], 2, "applies to intel5300"),
    (["--side", "test", "--target", "middle"], 2, "target must be one of last, first, center"),
    (["--side", "test", "--length", "6"], 2, "gives no row"),
])
def test_bad_settings_are_one_error_line(runner, case, tmp_path, args, code, words):
    _, _, split = case
    result = _run(runner, split, "-o", tmp_path / "out", *args)
    assert result.exit_code == code, result.output
    _one_error_line(result, words)
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []


def test_an_out_of_range_option_is_a_usage_error(runner, case, tmp_path):
    _, _, split = case
    result = _run(runner, split, "--side", "test", "-o", tmp_path / "o", "--length", "0")
    assert result.exit_code == 2 and "--length" in result.output


def test_a_manifest_changed_since_the_split_is_refused(runner, tmp_path):
    _, manifest, split = mmfi_case(tmp_path)
    edit_manifest(manifest, lambda doc: doc["recordings"][0].update(frames=4))
    result = _run(runner, split, "--side", "test", "-o", tmp_path / "out")
    assert result.exit_code == 2
    _one_error_line(result, "not the manifest the split")


def test_a_failure_midway_leaves_the_previous_outputs_untouched(runner, tmp_path, monkeypatch):
    _, _, split = mmfi_case(tmp_path)
    out = tmp_path / "out"
    assert _run(runner, split, "--side", "test", "-o", out).exit_code == 0
    before = {name: (out / name).read_bytes() for name in os.listdir(out)}
    real = build_module._read_mmfi_frame
    calls = []

    def failing(job, entry, *args):
        calls.append(entry["path"])
        if len(calls) == 6:
            from rfbench.errors import FormatError

            raise FormatError(f"{entry['path']}: broken")
        return real(job, entry, *args)

    monkeypatch.setattr(build_module, "_read_mmfi_frame", failing)
    result = _run(runner, split, "--side", "test", "-o", out, "--force", "--workers", "1")
    assert result.exit_code == 2
    _one_error_line(result, "broken")
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == before  # no temporary file left


@pytest.mark.parametrize("how", ["ctrl-c", "SIGTERM", "SIGQUIT", "SIGUSR1"])
def test_an_interruption_leaves_nothing_half_written(runner, tmp_path, monkeypatch, how):
    """Ctrl-C and SIGTERM left nothing; SIGQUIT (Ctrl-\\), SIGUSR1 and the other signals whose default ends the
    process left the temporary files of X, y and the index in the output folder (found by an adversarial probe),
    and SIGTERM exited 130 as Ctrl-C does: each now stops the command cleanly, exit 128 + its number."""
    _, _, split = mmfi_case(tmp_path)
    code = 130 if how == "ctrl-c" else 128 + getattr(signal, how)
    real = build_module._read_mmfi_frame
    calls = []

    def interrupted(job, entry, *args):
        calls.append(1)
        if len(calls) == 4:
            if how == "ctrl-c":
                raise KeyboardInterrupt
            os.kill(os.getpid(), getattr(signal, how))  # the command turns it into an interruption
        return real(job, entry, *args)

    monkeypatch.setattr(build_module, "_read_mmfi_frame", interrupted)
    out = tmp_path / "out"
    result = _run(runner, split, "--side", "test", "-o", out, "--workers", "1")
    assert result.exit_code == code, result.output
    _one_error_line(result, "interrupted")
    assert not out.exists()  # the folder it made for the outputs is gone, not left empty
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL and signal.getsignal(signal.SIGQUIT) is signal.SIG_DFL
    # a folder that was there before stays, and so does whatever it holds
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    calls.clear()
    result = _run(runner, split, "--side", "test", "-o", out, "--workers", "1")
    assert result.exit_code == code, result.output
    assert os.listdir(out) == ["notes.txt"]
    # nested folders made by the run go too, up to the first that existed
    deep = tmp_path / "a" / "b" / "c"
    calls.clear()
    result = _run(runner, split, "--side", "test", "-o", deep, "--workers", "1")
    assert result.exit_code == code, result.output
    assert not (tmp_path / "a").exists()


def test_help_runs_in_a_fresh_interpreter_without_numpy(tmp_path):
    code = ("import sys; from rfbench.cli import app; import typer.main; typer.main.get_command(app); "
            "print('numpy' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
