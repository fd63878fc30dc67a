"""``parse DIR`` says what it could not search: a folder under DIR that cannot be listed, and a name matching
the pattern that is not a regular file (a FIFO ``c.dat``), were dropped without a word (exit 0, "1 written"),
so part of a corpus went unconverted while the job reported success."""

from __future__ import annotations

import json
import os

import pytest

from rfbench.cli import app
from rfbench.io import parse_files
from rfbench.io.writer import synthetic_log


def _tree(tmp_path):
    root = tmp_path / "in"
    (root / "x").mkdir(parents=True)
    (root / "y").mkdir()
    (root / "x" / "a.dat").write_bytes(synthetic_log(3, seed=1))
    (root / "y" / "b.dat").write_bytes(synthetic_log(3, seed=2))
    return root


def _unlistable(monkeypatch, folder):
    real = os.scandir

    def scandir(path):
        if os.fspath(path) == os.fspath(folder):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(parse_files.os, "scandir", scandir)


def test_a_folder_that_cannot_be_listed_is_reported_and_fails_the_job(runner, tmp_path, monkeypatch):
    root = _tree(tmp_path)
    _unlistable(monkeypatch, root / "x")
    found = parse_files.find_inputs([root])
    assert [p.name for p, _ in found.files] == ["b.dat"]
    assert found.unlisted == [(root / "x", "permission denied")]
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 2, result.output
    doc = json.loads(result.stdout)
    assert doc["written"] == 1 and doc["unlisted_folders"] == [{"path": str(root / "x"),
                                                                "reason": "permission denied"}]
    assert f"error: {root / 'x'}: cannot list this folder (permission denied); its files were not searched" in \
        " ".join(result.output.split())
    table = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "out2")])
    assert table.exit_code == 2 and "1 folder(s) could not be listed, their files not searched" in table.output


def test_only_unlistable_folders_is_still_one_line_and_exit_2(runner, tmp_path, monkeypatch):
    root = tmp_path / "in"
    (root / "x").mkdir(parents=True)
    (root / "x" / "a.dat").write_bytes(synthetic_log(3, seed=1))
    _unlistable(monkeypatch, root / "x")
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and "cannot list this folder" in result.output, result.output
    assert "Traceback" not in result.output


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_named_like_a_log_is_a_failed_input_not_dropped(runner, tmp_path):
    root = _tree(tmp_path)
    os.mkfifo(root / "y" / "c.dat")
    result = runner.invoke(app, ["parse", str(root), "-o", str(tmp_path / "out"), "--json"])
    assert result.exit_code == 2, result.output
    doc = json.loads(result.stdout)
    assert doc["written"] == 2 and doc["failed"] == 1
    failed = [f for f in doc["files"] if f["status"] == "failed"]
    assert [os.path.basename(f["input"]) for f in failed] == ["c.dat"]
    assert "not a regular file" in failed[0]["error"]


def test_a_linked_folder_under_out_is_never_written_through_even_with_force(runner, tmp_path):
    """``OUT/day1`` a link to a folder elsewhere: ``parse in -o OUT --force`` replaced a foreign ``a.npz`` there."""
    root = tmp_path / "in"
    (root / "day1").mkdir(parents=True)
    (root / "day2").mkdir()
    (root / "day1" / "a.dat").write_bytes(synthetic_log(3, seed=1))
    (root / "day2" / "b.dat").write_bytes(synthetic_log(3, seed=2))
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "a.npz").write_text("foreign")
    out = tmp_path / "out"
    out.mkdir()
    (out / "day1").symlink_to(victim)
    for extra in ([], ["--force"]):
        result = runner.invoke(app, ["parse", str(root), "-o", str(out), "--json", *extra])
        assert result.exit_code == 2, result.output
        assert (victim / "a.npz").read_text() == "foreign" and sorted(os.listdir(victim)) == ["a.npz"]
        doc = json.loads(result.stdout)
        failed = {os.path.basename(f["input"]): f["error"] for f in doc["files"] if f["status"] == "failed"}
        assert list(failed) == ["a.dat"] and "is a symbolic link" in failed["a.dat"], failed
        assert (out / "day2" / "b.npz").is_file()  # the other input is written
