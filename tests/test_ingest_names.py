"""File names an ingest may not turn into recordings: a Widar3.0 BVP name whose numbers are out of range (a link of
200 digits made a manifest ``rfbench split`` refused), and names holding a control character (recorded under
their escaped form, a path that does not exist, so ``rfbench windows`` found "no such dataset file")."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.datasets import files, mmfi, tree, widar, widar_both, widar_bvp
from rfbench.datasets.synthetic import mat_v5_bytes
from rfbench.datasets.synthetic_bvp import PARAMETERS, bvp_file_bytes, make_widar_bvp_tree
from rfbench.errors import ValidationError
from rfbench.io.writer import synthetic_log

NINES = "9" * 200


def put(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------------------------------------------------
# the numbers of a BVP file name
# ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "reason"), [
    (f"user1-1-1-1-1-{PARAMETERS}-L{NINES}.mat", f"link {NINES} is outside 0–99; file left out"),
    (f"user1-1-1-1-1-{PARAMETERS}-L100.mat", "link 100 is outside 0–99; file left out"),
    (f"user1-{NINES}-1-1-1-{PARAMETERS}-L0.mat", f"gesture {NINES} is outside 1–99; file left out"),
    (f"user1-1-0-1-1-{PARAMETERS}-L0.mat", "location 0 is outside 1–8; file left out"),
    (f"user1-1-1-6-1-{PARAMETERS}-L0.mat", "orientation 6 is outside 1–5; file left out"),
    (f"user1-1-1-1-100-{PARAMETERS}-L0.mat", "repetition 100 is outside 1–99; file left out"),
])
def test_every_number_of_a_bvp_name_is_ranged(name, reason):
    assert widar_bvp.parse_bvp_name(name) == reason


def test_the_ends_of_the_link_range_are_names():
    for link in (0, 99):
        parsed = widar_bvp.parse_bvp_name(f"user1-1-1-1-1-{PARAMETERS}-L{link}.mat")
        assert isinstance(parsed, widar_bvp.BvpName) and parsed.link == link


@pytest.fixture(scope="module")
def bvp_tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bvp") / "tree"
    make_widar_bvp_tree(root, frames=(2, 4), damage=False)
    return root


def test_a_200_digit_link_is_a_problem_and_split_reads_the_manifest(runner, bvp_tree, tmp_path):
    root = tmp_path / "tree"
    shutil.copytree(bvp_tree, root)
    user1 = root / "BVP" / "20181109-VS" / "6-link" / "user1"
    long = user1 / f"user1-1-1-1-1-p-L{NINES}.mat"
    shutil.copyfile(next(user1.glob("*-L0.mat")), long)
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", "widar", str(root), "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    shown = long.relative_to(root).as_posix()
    assert {"path": shown, "reason": f"link {NINES} is outside 0–99; file left out"} in doc["problems"]
    assert all(f["path"] != shown for rec in doc["recordings"] for f in rec["files"])
    r = runner.invoke(app, ["split", str(out), "-p", "cross-location", "--test", "3", "-o", str(tmp_path / "s.json")])
    assert r.exit_code == 0, r.output


# ---------------------------------------------------------------------------------------------------------
# control characters in names, for every ingest that walks a tree
# ---------------------------------------------------------------------------------------------------------

#: TAB, newline, ESC, DEL and NEL (a C1 control): each may sit in a name the file system accepts.
CONTROLS = ["\t", "\n", "\x1b", "\x7f", "\x85"]
MMFI_GT = np.zeros((1, 17, 3))


def widar_case(root: Path, c: str) -> tuple[Path, Callable]:
    put(root / "CSI/20181109/user1/user1-1-1-1-1-r1.dat", synthetic_log(5, seed=1))
    # the template reads the file name only: a user folder holding a control character used to be walked
    bad = put(root / f"CSI/20181109/us{c}er1/user1-2-1-1-1-r1.dat", synthetic_log(5, seed=2)).parent
    return bad, widar.ingest


def bvp_case(root: Path, c: str) -> tuple[Path, Callable]:
    folder = root / "BVP/20181109-VS/6-link/user1"
    put(folder / f"user1-1-1-1-1-{PARAMETERS}-L0.mat", bvp_file_bytes(np.ones((20, 20, 3))))
    # the parameter part is kept as text: a control character in it used to make a recording
    bad = put(folder / f"user1-1-1-1-1-a{c}b-L3.mat", bvp_file_bytes(np.ones((20, 20, 4))))
    return bad, widar_bvp.ingest_bvp


def both_case(root: Path, c: str) -> tuple[Path, Callable]:
    widar_case(root, c)
    bad, _ = bvp_case(root, c)
    return bad, lambda r: widar_both.ingest_widar_tree(r, "both")


def mmfi_case(root: Path, c: str) -> tuple[Path, Callable]:
    for act in ("A01", "A02"):
        folder = root / "E01" / "S01" / act
        put(folder / "wifi-csi" / "frame001.mat", mat_v5_bytes({"CSIamp": np.ones((3, 114, 10))}))
        np.save(folder / "ground_truth.npy", MMFI_GT)
    # a second frame, a control character after its name: the frame pattern's `$` matched before a final newline
    bad = put(root / "E01/S01/A02/wifi-csi" / f"frame002.mat{c}", mat_v5_bytes({"CSIamp": np.ones((3, 114, 10))}))
    return bad, mmfi.ingest


def files_case(root: Path, c: str) -> tuple[Path, Callable]:
    put(root / "kq_1_1.dat", synthetic_log(4, seed=1))
    bad = put(root / f"k{c}q_1_2.dat", synthetic_log(4, seed=2))  # the field {user} matches any text but "/"
    return bad, lambda r: files.ingest(r, "{user}_{gesture}_{repetition}.dat")


CASES = {"widar": widar_case, "bvp": bvp_case, "both": both_case, "mmfi": mmfi_case, "files": files_case}
REASON = "name holds a control character (shown with \\x escapes)"


def _check(manifest, root: Path, shown: str) -> None:
    """Every recorded path names a file of the tree; ``shown`` is a problem; no problem path holds a control."""
    paths = [f["path"] for rec in manifest.recordings for f in rec["files"]]
    assert paths and all((root / p).is_file() for p in paths), paths
    reasons = {p["path"]: p["reason"] for p in manifest.problems}
    assert reasons.get(shown, "").startswith(REASON), manifest.problems
    assert not any(tree._CONTROL.search(p["path"]) for p in manifest.problems)


@pytest.mark.parametrize("char", CONTROLS, ids=[f"{ord(c):02x}" for c in CONTROLS])
@pytest.mark.parametrize("kind", list(CASES))
def test_a_name_with_a_control_character_is_a_problem(tmp_path, kind, char):
    root = tmp_path / "tree"
    bad, ingest = CASES[kind](root, char)
    _check(ingest(root), root, bad.relative_to(root).as_posix().replace(char, f"\\x{ord(char):02x}"))


def _csi_inner(root: Path, c: str) -> Path:
    """A download unpacked into its own folder, that folder's name holding a control character."""
    inner = root / f"dl{c}x"
    put(inner / "CSI/20181109/user1/user1-1-1-1-1-r1.dat", synthetic_log(5, seed=1))
    return inner / "CSI"


def _mmfi_inner(root: Path, c: str) -> Path:
    inner = root / f"MM{c}Fi"
    folder = inner / "E01" / "S01" / "A01"
    put(folder / "wifi-csi" / "frame001.mat", mat_v5_bytes({"CSIamp": np.ones((3, 114, 10))}))
    np.save(folder / "ground_truth.npy", MMFI_GT)
    return inner


@pytest.mark.parametrize("char", ["\t", "\x1b"], ids=["09", "1b"])
@pytest.mark.parametrize(("make", "ingest"), [(_csi_inner, widar.ingest), (_mmfi_inner, mmfi.ingest)],
                         ids=["widar", "mmfi"])
def test_a_discovered_folder_with_a_control_character_is_a_problem(tmp_path, make, ingest, char):
    """An ingest finds the data folder in the one sub-folder holding it; its name is part of every path."""
    root = tmp_path / "tree"
    inner = make(root, char)
    with pytest.raises(ValidationError, match="found"):  # its files are no recordings: there is none
        ingest(root)
    walk = tree.TreeWalk(root)
    assert not walk.enter(inner)
    shown = inner.relative_to(root).as_posix().replace(char, f"\\x{ord(char):02x}")
    assert walk.problems and walk.problems[0]["path"] == shown
    assert walk.problems[0]["reason"].startswith(REASON), walk.problems


def test_a_discovered_folder_whose_name_is_not_utf8_is_a_problem(tmp_path):
    root = tmp_path / "tree"
    inner = _csi_inner(root, os.fsdecode(b"\xe9"))
    with pytest.raises(ValidationError, match="found"):
        widar.ingest(root)
    walk = tree.TreeWalk(root)
    assert not walk.enter(inner)
    assert walk.problems == [{"path": "dl\\xe9x/CSI", "reason": "name is not valid UTF-8 (shown with \\x escapes); "
                              "a manifest cannot name the files under it exactly, so its contents are left out"}]


def test_the_chain_runs_on_a_tree_holding_a_name_with_a_tab(runner, bvp_tree, tmp_path):
    root = tmp_path / "tree"
    shutil.copytree(bvp_tree, root)
    user1 = root / "BVP" / "20181109-VS" / "6-link" / "user1"
    shutil.copyfile(next(user1.glob("user1-1-1-2-1-*-L0.mat")), user1 / "user1-1-1-1-1-a\tb-L3.mat")
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", "widar", str(root), "-o", str(out)])
    assert r.exit_code == 0, r.output
    shown = "BVP/20181109-VS/6-link/user1/user1-1-1-1-1-a\\x09b-L3.mat"
    assert f"{shown}: {REASON}" in r.stdout and "\t" not in r.stdout
    split = tmp_path / "s.json"
    r = runner.invoke(app, ["split", str(out), "-p", "cross-location", "--test", "1", "-o", str(split)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["windows", str(split), "--side", "test", "-o", str(tmp_path / "test")])
    assert r.exit_code == 0, r.output


def test_display_path_escapes_c1_controls_too():
    # NEL (U+0085) and CSI (U+009B, which a terminal may read as ESC [) are control characters as ESC is
    assert tree.display_path("a\x85b\x9bc.dat") == "a\\x85b\\x9bc.dat"
    assert tree.display_path("é\x7f.dat") == "é\\x7f.dat"


@pytest.mark.parametrize("pattern, name", [
    ("_ENV", "E\u0660\u0661"), ("_SUBJECT", "S\u0660\u0661"), ("_ACTION", "A\u0661\u0662"),
    ("_FRAME", "frame\u0661.mat"), ("_FRAME", "frame001.mat\n"), ("_SUBJECT", "S01\n")])
def test_mmfi_folder_and_frame_names_take_ascii_digits_and_end_where_they_end(pattern, name):
    """``\\d`` matched any Unicode digit (``int`` reads them too: "S٠١" was subject 1's folder twice over) and
    ``$`` matched before a final newline."""
    assert getattr(mmfi, pattern).match(name) is None


@pytest.mark.parametrize("name", ["2018\u0661\u0661\u0660\u0669", "20181109\n"])
def test_widar_date_folders_take_ascii_digits_only(name):
    assert widar._DATE_LIKE.match(name) is None
