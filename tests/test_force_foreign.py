"""``--force`` never deletes a file rfbench did not write: ``rfbench demo`` in a folder without its file list
(however demo-like its names), a listed demo file changed since, and ``rfbench generate`` when a file appears in
the old tree while the new one is generated."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rfbench.cli import app


@pytest.fixture
def runner():
    return CliRunner()


def _lines(output: str) -> list[str]:
    return [x for x in output.splitlines() if x.strip()]


def _snapshot(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


# --- rfbench demo ----------------------------------------------------------------------------------------------

def test_demo_force_refuses_real_dataset_names_without_the_file_list(runner, tmp_path):
    """A user's MM-Fi and Widar3.0 files, laid out as the releases are (the demo's generated trees copy those
    layouts): every name matched the demo's, so --force removed them all and the demo exited 0."""
    root = tmp_path / "victim"
    gt = root / "data/mmfi/E01/S01/A01/ground_truth.npy"
    frame = root / "data/mmfi/E01/S01/A01/wifi-csi/frame001.mat"
    log = root / "data/widar/CSI/20181109/user1/user1-1-1-1-1-r1.dat"
    for path, text in ((gt, "MY REAL MM-FI GROUND TRUTH"), (frame, "my real capture"), (log, "my real widar log")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    before = _snapshot(root)
    result = runner.invoke(app, ["demo", "--out", str(root), "--size", "tiny", "--force"])
    assert result.exit_code == 2, result.output
    assert _lines(result.output) == [
        f"error: {root} is not empty and holds no RFBENCH_DEMO.json (the list of the files an earlier demo wrote "
        "there), so --force cannot tell the demo's files from yours; it is left alone: choose an empty or new "
        "--out"]
    assert _snapshot(root) == before


def test_demo_force_refuses_a_folder_of_only_demo_outputs_without_the_list(tmp_path):
    """Even a folder holding nothing but files named like the demo's outputs: without the list nothing says
    rfbench wrote them."""
    from rfbench.demo import prepare_folder
    from rfbench.errors import OutputExistsError

    root = tmp_path / "d"
    (root / "pose").mkdir(parents=True)
    (root / "pose" / "report.json").write_text("{}")
    (root / "widar-manifest.json").write_text("{}")
    before = _snapshot(root)
    with pytest.raises(OutputExistsError, match="holds no RFBENCH_DEMO.json"):
        prepare_folder(root, force=True)
    assert _snapshot(root) == before


def _small_demo_folder(root: Path) -> None:
    """A folder as a demo run leaves it (two of its outputs and the list), written through ``demo_folder``."""
    from rfbench.demo import demo_folder

    with demo_folder(root) as lay:
        (lay.root / "widar-manifest.json").write_text('{"recordings": []}')
        lay.pose.mkdir()
        (lay.pose / "report.json").write_text('{"evidence": "SYNTHETIC"}')


def test_demo_list_records_each_file_s_size_and_sha256(tmp_path):
    import hashlib

    from rfbench.demo import MARKER

    root = tmp_path / "d"
    _small_demo_folder(root)
    marker = json.loads((root / MARKER).read_text())
    assert marker["schema"] == "rfbench.demo-files/2"
    assert marker["files"] == ["pose/report.json", "widar-manifest.json"]
    body = b'{"evidence": "SYNTHETIC"}'
    assert marker["contents"]["pose/report.json"] == {"size": 25, "sha256": hashlib.sha256(body).hexdigest()}
    assert set(marker["contents"]) == set(marker["files"])


@pytest.mark.parametrize("new_text", ['{"evidence": "MEASURED!"}',  # same size (25 bytes), other bytes
                                      "my own report, written over the demo's"])
def test_demo_force_refuses_a_listed_file_that_changed(runner, tmp_path, new_text):
    """A file of the user's at a listed name (or the demo's file edited) was deleted by name."""
    root = tmp_path / "d"
    _small_demo_folder(root)
    (root / "pose" / "report.json").write_text(new_text)
    before = _snapshot(root)
    result = runner.invoke(app, ["demo", "--out", str(root), "--size", "tiny", "--force"])
    assert result.exit_code == 2, result.output
    assert _lines(result.output) == [
        f"error: {root}/pose/report.json changed since rfbench demo wrote it (its size or sha256 is not the one "
        "RFBENCH_DEMO.json records), so it may be yours; --force removes nothing: move it, or choose another --out"]
    assert _snapshot(root) == before


def test_demo_force_refuses_a_link_at_a_listed_name(tmp_path):
    from rfbench.demo import prepare_folder
    from rfbench.errors import OutputExistsError

    root = tmp_path / "d"
    _small_demo_folder(root)
    mine = tmp_path / "mine.json"
    mine.write_text("mine")
    (root / "widar-manifest.json").unlink()
    (root / "widar-manifest.json").symlink_to(mine)
    with pytest.raises(OutputExistsError, match="widar-manifest.json changed since rfbench demo wrote it"):
        prepare_folder(root, force=True)
    assert (root / "widar-manifest.json").is_symlink() and (root / "pose" / "report.json").exists()


def test_demo_force_removes_unchanged_listed_files_and_tolerates_missing_ones(tmp_path):
    from rfbench.demo import prepare_folder

    root = tmp_path / "d"
    _small_demo_folder(root)
    (root / "widar-manifest.json").unlink()  # removed by hand: nothing to check, nothing to remove
    (root / "notes.txt").write_text("mine")
    prepare_folder(root, force=True)
    assert _snapshot(root) == {"notes.txt": b"mine"}


def test_demo_force_refuses_a_list_without_sizes_and_hashes(tmp_path):
    """A list from an older rfbench (schema /1) names files only: which of them are still the demo's is unknown."""
    from rfbench.demo import MARKER, prepare_folder
    from rfbench.errors import OutputExistsError

    root = tmp_path / "d"
    root.mkdir()
    (root / "widar-manifest.json").write_text("my own manifest")
    (root / MARKER).write_text(json.dumps({"schema": "rfbench.demo-files/1", "files": ["widar-manifest.json"],
                                           "folders": []}))
    before = _snapshot(root)
    with pytest.raises(OutputExistsError, match="records no sizes or hashes"):
        prepare_folder(root, force=True)
    assert _snapshot(root) == before


# --- rfbench generate ----------------------------------------------------------------------------------------------

def _write_into_old_tree_during_the_run(monkeypatch, root: Path, name: str = "notes.txt") -> None:
    """Make the generator write a file of the user's into the old tree at ``root`` while it generates."""
    import rfbench.datasets.synthetic as synthetic

    real = synthetic._write_widar

    def write(tree, *args, **kwargs):
        (root / name).write_text("my notes")
        return real(tree, *args, **kwargs)

    monkeypatch.setattr(synthetic, "_write_widar", write)


def test_generate_force_keeps_a_file_written_into_the_old_tree_during_the_run(runner, tmp_path, monkeypatch):
    root = tmp_path / "gen1"
    first = runner.invoke(app, ["generate", "widar", str(root), "--records", "3,5"])
    assert first.exit_code == 0, first.output
    old = _snapshot(root)
    _write_into_old_tree_during_the_run(monkeypatch, root)
    result = runner.invoke(app, ["generate", "widar", str(root), "--records", "3,5", "--seed", "1", "--force"])
    assert result.exit_code == 2, result.output
    assert _lines(result.output) == [
        f"error: {root} holds notes.txt, which rfbench generate did not write there (it appeared while the new "
        "tree was generated); --force replaces only a generated tree, so it is left alone and the new tree is "
        "discarded: move that out, or choose an empty or new folder"]
    assert _snapshot(root) == {**old, "notes.txt": b"my notes"}  # the old tree, as it was, and the user's file
    assert sorted(os.listdir(tmp_path)) == ["gen1"]  # no staging or set-aside folder left beside it


def test_generate_force_still_replaces_an_untouched_tree(tmp_path):
    from rfbench.datasets.synthetic import MARKER, make_widar_tree

    root = tmp_path / "w"
    make_widar_tree(root, records=(3, 5), damage=False)
    made = make_widar_tree(root, records=(3, 5), damage=False, seed=1, force=True)
    assert made.replaced is True
    assert json.loads((root / MARKER).read_text())["params"]["seed"] == 1
    assert sorted(os.listdir(tmp_path)) == ["w"]


def test_removing_the_replaced_tree_keeps_what_its_marker_does_not_list(tmp_path):
    """The last step removes the old tree by its list, not as a whole: a file that reached it after the check
    stays, in the tree kept under a visible name, and the run says so."""
    from rfbench.datasets.synthetic import _remove_old_tree, make_widar_tree
    from rfbench.errors import OutputExistsError

    old = tmp_path / ".w.old-0000.tmp"
    make_widar_tree(old, records=(3, 5), damage=False)
    (old / "CSI" / "notes.txt").write_text("my notes")
    with pytest.raises(OutputExistsError, match=r"w\.previous-[0-9a-f]{8} holds CSI/notes\.txt, which appeared"):
        _remove_old_tree(old, tmp_path / "w")
    (kept,) = tmp_path.iterdir()
    assert kept.name.startswith("w.previous-")
    assert _snapshot(kept) == {"CSI": None, "CSI/notes.txt": b"my notes"}
