"""rfbench robustness's outputs: never written through a symbolic link inside the sweep folder, pictures written
atomically, and ``--force`` removing exactly the earlier sweep's own outputs (those its summary lists, still as it
recorded them), so an honest re-run with fewer corruptions verifies."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rfbench.cli import app

pytestmark = pytest.mark.long


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _tree(root: Path) -> dict[str, str]:
    """``{relative path: sha256 of a file, or "link -> target", or "folder"}`` of everything under ``root``."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = f"link -> {os.readlink(p)}" if p.is_symlink() else "folder" if p.is_dir() else _sha(p)
    return out


def _argv(d: Path, corruptions: str, out: Path) -> list[str]:
    return ["robustness", str(d / "pose" / "ridge.onnx"), "--split", str(d / "mmfi-split.json"), "--score-like",
            str(d / "pose" / "like.json"), "--corruptions", corruptions, "--severities", "1", "-o", str(out)]


def _error_lines(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def sweep(tiny_demo, tmp_path_factory):
    """A sweep of the tiny demo's pose model over noise and dead-antenna at severity 1, in a copy of the demo."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("matplotlib")
    d = tmp_path_factory.mktemp("outputs") / "d"
    shutil.copytree(tiny_demo, d)
    like = CliRunner().invoke(app, ["score", "--task", "pose", "--pred", str(d / "pose" / "pred.npy"), "--rows",
                                    str(d / "windows" / "mmfi-test" / "index.json"), "--split",
                                    str(d / "mmfi-split.json"), "--skeleton", "h36m17", "--units", "m", "--norm",
                                    "hip-width", "--k", "0.2", "--metrics", "pck", "--bootstrap", "20",
                                    "-o", str(d / "pose" / "like.json")])
    assert like.exit_code == 0, like.output
    result = CliRunner().invoke(app, _argv(d, "noise,dead-antenna", d / "sweep"))
    assert result.exit_code == 0, result.output
    assert (d / "sweep" / "robustness-dead-antenna.png").is_file()
    return d


@pytest.fixture
def copy(sweep, tmp_path):
    d = tmp_path / "d"
    shutil.copytree(sweep, d, symlinks=True)
    return d


def test_force_never_writes_through_a_linked_cell_folder_or_picture(copy, tmp_path):
    """A linked cell folder and a linked picture in the sweep folder: --force replaced report.json and pred.npy in
    the folder the link named, gave its windows/ X.npy, y.npy and index.json, and turned the picture's target into
    a PNG (exit 0). Now the link is refused before anything is written or removed."""
    victim = tmp_path / "victim"
    (victim / "windows").mkdir(parents=True)
    (victim / "report.json").write_text("my report")
    (victim / "pred.npy").write_text("mine")
    (tmp_path / "victim2.txt").write_text("precious")
    sweep_dir = copy / "sweep"
    shutil.rmtree(sweep_dir / "cells" / "noise-1-seed0")
    os.symlink(victim, sweep_dir / "cells" / "noise-1-seed0")
    (sweep_dir / "robustness-noise.png").unlink()
    os.symlink(tmp_path / "victim2.txt", sweep_dir / "robustness-noise.png")
    before, victims = _tree(sweep_dir), _tree(victim)
    result = CliRunner().invoke(app, _argv(copy, "noise", sweep_dir) + ["--force"])
    assert result.exit_code == 2, result.output
    lines = _error_lines(result)
    assert len(lines) == 1 and lines[0].startswith("error:") and "symbolic link" in lines[0], result.output
    assert "cells/noise-1-seed0" in lines[0] or "robustness-noise.png" in lines[0], result.output
    assert _tree(victim) == victims and (tmp_path / "victim2.txt").read_text() == "precious"
    assert _tree(sweep_dir) == before  # nothing removed either


def test_force_never_removes_through_a_link_even_to_a_copy_of_the_earlier_cell(copy, tmp_path):
    """The earlier summary's stale cell is a link to a copy of that very cell elsewhere (every hash matches): its
    files are not the sweep's to remove."""
    sweep_dir = copy / "sweep"
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(sweep_dir / "cells" / "dead-antenna-1-seed0", elsewhere)
    shutil.rmtree(sweep_dir / "cells" / "dead-antenna-1-seed0")
    os.symlink(elsewhere, sweep_dir / "cells" / "dead-antenna-1-seed0")
    kept = _tree(elsewhere)
    result = CliRunner().invoke(app, _argv(copy, "noise", sweep_dir) + ["--force"])
    assert result.exit_code == 2, result.output
    assert "cells/dead-antenna-1-seed0" in result.output and "symbolic link" in result.output, result.output
    assert _tree(elsewhere) == kept


def test_a_link_made_during_the_sweep_is_refused_not_written_through(sweep, tmp_path):
    """A cell folder that becomes a link while the sweep runs (after the checks at its start) is refused before
    that cell writes anything."""
    from rfbench.errors import OutputExistsError
    from rfbench.report.robustness import run_robustness
    from rfbench.report.robustness_settings import RobustnessSettings

    victim = tmp_path / "victim"
    victim.mkdir()
    out = tmp_path / "fresh"

    def advance(name):
        if name == "clean":
            (out / "cells").mkdir()
            os.symlink(victim, out / "cells" / "noise-1-seed0")

    with pytest.raises(OutputExistsError, match="noise-1-seed0"):
        run_robustness(sweep / "pose" / "ridge.onnx", sweep / "mmfi-split.json", sweep / "pose" / "like.json", out,
                       RobustnessSettings(corruptions=("noise",), severities="1"), advance=advance)
    assert list(victim.iterdir()) == []
    assert not (out / "summary.json").exists()


def test_a_fifo_at_a_picture_s_path_is_one_line_naming_it_before_anything_is_written(copy):
    """A FIFO at a picture's path gave "error: file or stream is not seekable." (no file named) after the summary
    had been written without its picture."""
    sweep_dir = copy / "sweep"
    (sweep_dir / "robustness-noise.png").unlink()
    os.mkfifo(sweep_dir / "robustness-noise.png")
    before = _tree(sweep_dir / "cells")
    summary = (sweep_dir / "summary.json").read_bytes()
    result = CliRunner().invoke(app, _argv(copy, "noise", sweep_dir) + ["--force"])
    assert result.exit_code == 2, result.output
    lines = _error_lines(result)
    assert len(lines) == 1 and "robustness-noise.png" in lines[0] and "FIFO" in lines[0], result.output
    assert (sweep_dir / "summary.json").read_bytes() == summary
    assert _tree(sweep_dir / "cells") == before


def test_a_picture_that_cannot_be_written_leaves_no_summary(sweep, tmp_path, monkeypatch):
    """A FIFO that appears at a picture's path while the sweep runs: the error names the picture and the summary
    is not written without it."""
    from rfbench.report import robustness

    out = tmp_path / "fresh"
    drawn = robustness._picture_bytes

    def then_a_fifo(summary):
        pictures = drawn(summary)
        os.mkfifo(out / "robustness-noise.png")
        return pictures

    monkeypatch.setattr(robustness, "_picture_bytes", then_a_fifo)
    result = CliRunner().invoke(app, _argv(sweep, "noise", out))
    assert result.exit_code == 2, result.output
    assert "robustness-noise.png" in result.output and "FIFO" in result.output, result.output
    assert not (out / "summary.json").exists()


def test_an_honest_force_re_run_with_fewer_corruptions_verifies(copy):
    """The earlier dead-antenna cells and picture stayed beside the new summary, and verify called the new sweep
    a MISMATCH (pictures.robustness-dead-antenna.png). Now --force removes the earlier sweep's own outputs the new
    one does not replace; files of the user's stay."""
    sweep_dir = copy / "sweep"
    (sweep_dir / "notes.txt").write_text("mine")
    (sweep_dir / "cells" / "dead-antenna-1-seed0" / "notes.txt").write_text("mine too")
    result = CliRunner().invoke(app, _argv(copy, "noise", sweep_dir) + ["--force"])
    assert result.exit_code == 0, result.output
    assert not (sweep_dir / "robustness-dead-antenna.png").exists()
    assert (sweep_dir / "robustness-noise.png").is_file()
    assert sorted(p.relative_to(sweep_dir).as_posix() for p in (sweep_dir / "cells").rglob("*")) == [
        "cells/dead-antenna-1-seed0", "cells/dead-antenna-1-seed0/notes.txt", "cells/noise-1-seed0",
        "cells/noise-1-seed0/pred.json", "cells/noise-1-seed0/pred.npy", "cells/noise-1-seed0/report.json",
        "cells/noise-1-seed0/report.md", "cells/noise-1-seed0/windows", "cells/noise-1-seed0/windows/X.npy",
        "cells/noise-1-seed0/windows/index.json", "cells/noise-1-seed0/windows/y.npy"]
    assert (sweep_dir / "notes.txt").read_text() == "mine"
    assert [c["corruption"] for c in json.loads((sweep_dir / "summary.json").read_text())["cells"]] == ["noise"]
    ok = CliRunner().invoke(app, ["verify", str(sweep_dir / "summary.json"), "--root", str(copy)])
    assert ok.exit_code == 0 and "MATCH" in ok.output, ok.output


@pytest.mark.parametrize("changed", ["cells/dead-antenna-1-seed0/pred.npy", "cells/dead-antenna-1-seed0/report.md",
                                     "cells/dead-antenna-1-seed0/windows/X.npy", "robustness-dead-antenna.png",
                                     "cells/noise-1-seed0/report.json"])
def test_force_refuses_an_output_of_the_earlier_sweep_that_changed(copy, changed):
    """A file the earlier summary lists (directly or through its cells' reports and indexes, or a picture of its
    values) that is no longer what it recorded is not rfbench's to remove or replace: one line naming it, and
    nothing removed."""
    sweep_dir = copy / "sweep"
    with open(sweep_dir / changed, "ab") as fh:
        fh.write(b"\n")
    before = _tree(sweep_dir)
    result = CliRunner().invoke(app, _argv(copy, "noise", sweep_dir) + ["--force"])
    assert result.exit_code == 2, result.output
    lines = _error_lines(result)
    assert len(lines) == 1 and changed in lines[0], result.output
    assert _tree(sweep_dir) == before


def test_force_refuses_a_file_of_the_user_s_where_the_sweep_writes(copy):
    """A file the earlier summary does not list, at a path the new sweep writes (a cell the earlier sweep did not
    run), is not replaced."""
    sweep_dir = copy / "sweep"
    (sweep_dir / "cells" / "noise-2-seed0").mkdir()
    (sweep_dir / "cells" / "noise-2-seed0" / "report.json").write_text("my notes")
    before = _tree(sweep_dir)
    result = CliRunner().invoke(app, _argv(copy, "noise", sweep_dir)[:-3] + ["2", "-o", str(sweep_dir), "--force"])
    assert result.exit_code == 2, result.output
    assert "cells/noise-2-seed0/report.json" in result.output, result.output
    assert _tree(sweep_dir) == before


def test_pictures_are_the_bytes_savefig_writes_to_a_file(sweep, tmp_path, monkeypatch):
    """The pictures are rendered in memory and written atomically; their bytes are those ``savefig`` writes to
    the file itself (verify compares a picture's sha256 with one drawn again)."""
    import matplotlib.figure

    from rfbench.report.robustness import _pictures

    summary = json.loads((sweep / "sweep" / "summary.json").read_text())
    direct = []
    savefig = matplotlib.figure.Figure.savefig

    def also_to_a_file(fig, fname, **kwargs):
        if not isinstance(fname, (str, os.PathLike)):
            path = tmp_path / f"direct-{len(direct)}.png"
            savefig(fig, path, **{k: v for k, v in kwargs.items() if k != "format"})
            direct.append(path.read_bytes())
        return savefig(fig, fname, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", also_to_a_file)
    written = _pictures(summary, tmp_path)
    assert [p.name for p in written] == ["robustness-noise.png", "robustness-dead-antenna.png"]
    assert [p.read_bytes() for p in written] == direct
    assert [_sha(p) for p in written] == [_sha(sweep / "sweep" / p.name) for p in written]
