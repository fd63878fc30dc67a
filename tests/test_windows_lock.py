"""Two ``rfbench windows`` writing one output folder at once: the second is refused (exit 2), nothing of the first
is touched. Before, both wrote, and the files renamed last won one by one — one run's X.npy could end beside the
other's index.json, whose sha256 is not that X's."""

from __future__ import annotations

import contextlib
import fcntl
import os

import numpy as np

from rfbench.cli import app
from windowsdata import mmfi_case


def _run(runner, *args):
    return runner.invoke(app, ["windows", *map(str, args)], env={"COLUMNS": "200"})


@contextlib.contextmanager
def _held(folder):
    """The folder's lock, as a run writing into it holds it."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        os.close(fd)


def test_a_folder_another_run_is_writing_into_is_refused(runner, tmp_path):
    _, _, split = mmfi_case(tmp_path)
    out = tmp_path / "out"
    assert _run(runner, split, "--side", "test", "-o", out).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with _held(out):
        result = _run(runner, split, "--side", "test", "-o", out, "--force", "--features", "amp")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0] == f"error: {out}: another rfbench windows is writing into this folder " \
                                           "now; wait for it to end, or write elsewhere"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no temporary left, nothing replaced
    # once it is free, the same command runs
    assert _run(runner, split, "--side", "test", "-o", out, "--force", "--features", "amp").exit_code == 0
    assert np.load(out / "X.npy").shape[1] == 1


def test_both_sides_lock_both_folders_and_a_refused_run_removes_no_folder(runner, tmp_path):
    _, _, split = mmfi_case(tmp_path)
    out = tmp_path / "out"
    (out / "test").mkdir(parents=True)
    with _held(out / "test"):
        result = _run(runner, split, "--side", "both", "-o", out)
        assert result.exit_code == 2 and "another rfbench windows is writing" in result.output
        assert (out / "test").is_dir()  # the other run's folder stays
    assert sorted(p.name for p in out.iterdir()) == ["test"] and list((out / "test").iterdir()) == []


def test_outputs_written_while_the_run_waited_for_its_lock_are_not_replaced(runner, tmp_path, monkeypatch):
    """A run that held the lock may have written the outputs after this one checked them: they are checked
    again under the lock (without --force, refused)."""
    from rfbench.datasets.windows import api

    _, _, split = mmfi_case(tmp_path)
    out = tmp_path / "out"
    real = api.folder_lock

    @contextlib.contextmanager
    def meanwhile(folder, what="rfbench"):
        (folder / "X.npy").write_bytes(b"the other run's")
        with real(folder, what):
            yield

    monkeypatch.setattr(api, "folder_lock", meanwhile)
    result = _run(runner, split, "--side", "test", "-o", out)
    assert result.exit_code == 2 and "already exists" in result.output, result.output
    assert (out / "X.npy").read_bytes() == b"the other run's" and sorted(p.name for p in out.iterdir()) == ["X.npy"]
