"""``rfbench generate ... --force`` removes only the files the earlier generation wrote, as it wrote them: its
marker records each file's size and sha256, and a listed file that changed since (a file of the user's saved at
a listed name, a link, anything but a regular file) makes ``--force`` refuse before anything is removed."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rfbench.cli import app
from rfbench.datasets.synthetic import MARKER
from rfbench.errors import OutputExistsError

MMFI = ["--frames", "3", "--subjects", "S01", "--actions", "A01"]
FRAME = "E01/S01/A01/wifi-csi/frame001.mat"


@pytest.fixture
def runner():
    return CliRunner()


def _lines(output: str) -> list[str]:
    return [x for x in output.splitlines() if x.strip()]


def _snapshot(root: Path) -> dict[str, bytes | str | None]:
    out: dict[str, bytes | str | None] = {}
    for p in root.rglob("*"):
        rel = p.relative_to(root).as_posix()
        out[rel] = ("-> " + os.readlink(p)) if p.is_symlink() else (p.read_bytes() if p.is_file() else None)
    return out


def _changed_line(root: Path, rel: str) -> str:
    return (f"error: {root} holds {rel}, which changed since rfbench generate wrote it (its size or sha256 is not "
            f"the one {MARKER} records), so it may be yours; --force removes nothing: move it, or choose an empty "
            "or new folder")


def test_mmfi_force_keeps_a_users_file_saved_at_a_listed_name(runner, tmp_path):
    """The user removed a generated frame and saved a file of their own at its name: --force exited 0 and
    deleted it (the marker listed names only)."""
    root = tmp_path / "gw"
    assert runner.invoke(app, ["generate", "mmfi", str(root), *MMFI]).exit_code == 0
    (root / FRAME).unlink()
    (root / FRAME).write_bytes(b"MY OWN FILE, not written by rfbench\n")
    before = _snapshot(root)
    result = runner.invoke(app, ["generate", "mmfi", str(root), *MMFI, "--seed", "1", "--force"])
    assert result.exit_code == 2, result.output
    assert _lines(result.output) == [_changed_line(root, FRAME)]
    assert _snapshot(root) == before  # nothing removed, the old tree as it was
    assert sorted(os.listdir(tmp_path)) == ["gw"]  # no staging folder left beside it


def test_a_listed_file_of_the_same_size_with_other_bytes_is_refused(runner, tmp_path):
    root = tmp_path / "gw"
    assert runner.invoke(app, ["generate", "mmfi", str(root), *MMFI]).exit_code == 0
    data = bytearray((root / FRAME).read_bytes())
    data[-1] ^= 0xFF
    (root / FRAME).write_bytes(bytes(data))
    before = _snapshot(root)
    result = runner.invoke(app, ["generate", "mmfi", str(root), *MMFI, "--force"])
    assert result.exit_code == 2, result.output
    assert _lines(result.output) == [_changed_line(root, FRAME)]
    assert _snapshot(root) == before


@pytest.mark.parametrize("kind", ["csi", "bvp", "both"])
def test_every_widar_kind_refuses_a_replaced_listed_file(runner, tmp_path, kind):
    root = tmp_path / kind
    args = ["generate", "widar", str(root), "--kind", kind, "--clean"]
    args += [] if kind == "bvp" else ["--records", "2,3"]
    args += [] if kind == "csi" else ["--frames", "1,2"]
    assert runner.invoke(app, args).exit_code == 0
    listed = json.loads((root / MARKER).read_text())["files"]
    victim = listed[len(listed) // 2]
    (root / victim).unlink()
    (root / victim).write_text("mine")
    before = _snapshot(root)
    result = runner.invoke(app, [*args, "--seed", "2", "--force"])
    assert result.exit_code == 2, result.output
    assert _lines(result.output) == [_changed_line(root, victim)]
    assert _snapshot(root) == before


def test_the_marker_records_each_files_size_and_sha256(tmp_path):
    from rfbench.datasets.synthetic import make_mmfi_tree

    root = tmp_path / "m"
    make_mmfi_tree(root, subjects=["S01"], actions=["A01", "A02"], frames=2)
    marker = json.loads((root / MARKER).read_text())
    on_disk = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
               if p.is_file() and p.name != MARKER}
    assert marker["files"] == sorted(on_disk)
    assert marker["contents"] == {rel: {"size": len(b), "sha256": hashlib.sha256(b).hexdigest()}
                                  for rel, b in on_disk.items()}
    assert marker["contents"]["notes.txt"] == {"size": 1, "sha256": hashlib.sha256(b"x").hexdigest()}


def test_an_untouched_tree_and_one_missing_a_listed_file_are_replaced(runner, tmp_path):
    root = tmp_path / "gw"
    assert runner.invoke(app, ["generate", "mmfi", str(root), *MMFI]).exit_code == 0
    (root / FRAME).unlink()  # gone: nothing to remove, nothing of the user's
    result = runner.invoke(app, ["generate", "mmfi", str(root), *MMFI, "--seed", "1", "--force"])
    assert result.exit_code == 0, result.output
    assert json.loads((root / MARKER).read_text())["params"]["seed"] == 1
    assert (root / FRAME).is_file()
    assert sorted(os.listdir(tmp_path)) == ["gw"]


def test_a_marker_without_sizes_and_hashes_is_refused(runner, tmp_path):
    """A tree from an older rfbench lists names only: --force cannot tell its files from the user's."""
    root = tmp_path / "gw"
    assert runner.invoke(app, ["generate", "mmfi", str(root), *MMFI]).exit_code == 0
    marker = json.loads((root / MARKER).read_text())
    del marker["contents"]
    (root / MARKER).write_text(json.dumps(marker))
    before = _snapshot(root)
    result = runner.invoke(app, ["generate", "mmfi", str(root), *MMFI, "--force"])
    assert result.exit_code == 2, result.output
    assert _lines(result.output) == [
        f"error: {root}/{MARKER} records no size and sha256 of the files it lists (a tree from an older rfbench, or "
        "not one rfbench wrote), so --force cannot tell its files from yours saved at the same names; it is left "
        "alone: remove it yourself, or choose an empty or new folder"]
    assert _snapshot(root) == before


def test_a_listed_file_replaced_while_the_new_tree_is_generated_puts_the_old_tree_back(tmp_path):
    from rfbench.datasets.synthetic import make_mmfi_tree

    root = tmp_path / "gw"
    make_mmfi_tree(root, subjects=["S01"], actions=["A01"], frames=3)
    expected = {**_snapshot(root), FRAME: b"saved while generating"}

    def meanwhile(n=1):
        (root / FRAME).unlink()
        (root / FRAME).write_bytes(b"saved while generating")

    with pytest.raises(OutputExistsError, match="changed since rfbench generate wrote it") as err:
        make_mmfi_tree(root, subjects=["S01"], actions=["A01"], frames=3, seed=1, force=True, progress=meanwhile)
    assert "the new tree is discarded" in str(err.value)
    assert _snapshot(root) == expected
    assert sorted(os.listdir(tmp_path)) == ["gw"]


def test_removing_the_replaced_tree_keeps_a_listed_file_that_changed(tmp_path):
    """The last step removes a listed file only while it is as written; one that changed after the checks is
    kept, in the old tree under a visible name, and the run says so."""
    from rfbench.datasets.synthetic import _remove_old_tree, make_mmfi_tree

    old = tmp_path / ".gw.old-0000.tmp"
    make_mmfi_tree(old, subjects=["S01"], actions=["A01"], frames=3)
    (old / FRAME).write_bytes(b"mine")
    with pytest.raises(OutputExistsError, match="frame001.mat, which changed since rfbench generate wrote it"):
        _remove_old_tree(old, tmp_path / "gw")
    (kept,) = [p for p in tmp_path.iterdir() if p.name.startswith("gw.previous-")]
    assert _snapshot(kept) == {"E01": None, "E01/S01": None, "E01/S01/A01": None, "E01/S01/A01/wifi-csi": None,
                               FRAME: b"mine"}


def test_a_listed_file_replaced_by_a_link_is_refused(runner, tmp_path):
    root = tmp_path / "gw"
    assert runner.invoke(app, ["generate", "mmfi", str(root), *MMFI]).exit_code == 0
    mine = tmp_path / "mine.mat"
    mine.write_bytes((root / FRAME).read_bytes())
    (root / FRAME).unlink()
    (root / FRAME).symlink_to(mine)
    before = _snapshot(root)
    result = runner.invoke(app, ["generate", "mmfi", str(root), *MMFI, "--force"])
    assert result.exit_code == 2, result.output
    assert len(_lines(result.output)) == 1 and FRAME in result.output
    assert _snapshot(root) == before and mine.is_file()
