"""Widar3.0 BVP trees: ``rfbench generate widar --kind bvp`` and ``rfbench ingest widar`` on them.

The reader is checked against ``scipy.io.loadmat`` (the peer), the tables against the issue's statement of the
release (``20181205-VS``: user2 follows ``20181205_2``, user3 ``20181205_3``), and every planted problem must be
reported, never kept as a recording and never fatal.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from rfbench.cli import app
from rfbench.datasets.synthetic_bvp import COMMON6, bvp_file_bytes, make_widar_bvp_tree
from rfbench.datasets.widar_bvp import (
    MAX_BVP_BYTES,
    ingest_bvp,
    parse_bvp_name,
    read_bvp,
    release_kind,
)
from rfbench.errors import FormatError, ValidationError

NAME = "user1-6-3-5-14-1-1e-07-100-20-100000-L0.mat"


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> tuple[Path, object]:
    root = tmp_path_factory.mktemp("bvp") / "widar"
    return root, make_widar_bvp_tree(root, frames=(1, 3))


@pytest.fixture(scope="module")
def manifest(tree):
    return ingest_bvp(tree[0], workers=2)


def test_name_parses_with_the_parameters_as_text():
    n = parse_bvp_name(NAME)
    assert (n.user, n.gesture, n.location, n.orientation, n.repetition, n.parameters, n.link) == \
        ("user1", 6, 3, 5, 14, "1-1e-07-100-20-100000", 0)
    assert isinstance(parse_bvp_name("user1-6-3-5-14-r1.dat"), str)
    assert isinstance(parse_bvp_name("user1-6-9-5-14-1-L0.mat"), str)  # location 9 is out of range


@pytest.mark.parametrize("shape,compress", [((20, 20, 5), False), ((20, 20, 5), True), ((20, 20, 1), False)])
def test_reader_agrees_with_scipy(tmp_path, shape, compress):
    value = np.random.default_rng(1).random(shape)
    path = tmp_path / NAME
    scipy.io.savemat(path, {"velocity_spectrum_ro": value}, do_compression=compress)
    expected = scipy.io.loadmat(path)["velocity_spectrum_ro"]
    got = read_bvp(path)
    assert got.shape == shape and np.array_equal(got.reshape(expected.shape), expected)
    # and the generator's own files read back by scipy as written
    path.write_bytes(bvp_file_bytes(value, compress))
    back = scipy.io.loadmat(path)["velocity_spectrum_ro"]
    assert np.array_equal(back.reshape(shape), value)


def test_reader_is_bounded_against_a_zlib_bomb(tmp_path):
    raw = bvp_file_bytes(np.zeros((20, 20, 1700)))  # 5.4 MB inflated, past the 4 MiB bound
    assert len(raw) > MAX_BVP_BYTES
    body = zlib.compress(raw[128:], 9)
    bomb = raw[:128] + struct.pack("<II", 15, len(body)) + body
    path = tmp_path / NAME
    path.write_bytes(bomb)
    assert len(bomb) < 100_000
    with pytest.raises(FormatError, match="inflates past"):
        read_bvp(path)


def test_every_well_formed_file_is_one_recording_with_its_hash_and_t(tree, manifest):
    root, made = tree
    assert manifest.dataset == "widar3-bvp" and manifest.synthetic
    assert len(manifest.recordings) == made.recordings == 306
    for rec in manifest.recordings[::17]:
        (entry,) = rec["files"]
        data = (root / entry["path"]).read_bytes()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest() and entry["bytes"] == len(data)
        value = scipy.io.loadmat(root / entry["path"])["velocity_spectrum_ro"]
        assert rec["frames"] == (value.shape[2] if value.ndim == 3 else 1)
        assert rec["bvp_parameters"] == "1-1e-07-100-20-100000" and rec["link"] == 0
    assert {r["gesture"] for r in manifest.recordings} == set(COMMON6)
    layouts = {r["files"][0]["path"].split("/")[2] == "6-link" for r in manifest.recordings}
    assert layouts == {True, False}  # both folder variants were read


def test_dates_and_users_pick_their_gesture_tables(manifest):
    by_id = {r["id"]: r for r in manifest.recordings}
    # 20181205-VS: user2 follows 20181205_2 (gesture 1 = Draw-O(Horizontal)), user3 20181205_3 (1 = Slide)
    assert by_id["20181205-VS/user2-1-1-1-1-L0"]["gesture"] == "Draw-O(Horizontal)"
    assert by_id["20181205-VS/user3-1-1-1-1-L0"]["gesture"] == "Slide"
    assert by_id["20181205-VS/user3-1-1-1-1-L0"]["capture"] == "20181205_3/user3-1-1-1-1"
    assert by_id["20181205-VS/user2-1-1-1-1-L0"]["room"] == 2
    # 20181109: gesture 4 is Slide; 20181130: gesture 5 is Draw-O(Horizontal); room 3 is 20181211
    assert by_id["20181109-VS/user1-4-1-1-1-L0"]["gesture"] == "Slide"
    assert by_id["20181130-VS/user1-5-1-1-1-L0"]["gesture"] == "Draw-O(Horizontal)"
    assert by_id["20181211-VS/user4-1-1-1-1-L0"]["room"] == 3


def test_every_planted_problem_is_reported_and_none_is_a_recording(tree, manifest):
    _, made = tree
    paths = {p["path"] for p in manifest.problems}
    assert set(made.damage) <= paths, set(made.damage) - paths
    kept = {f["path"] for r in manifest.recordings for f in r["files"]}
    assert not kept & set(made.damage)
    reasons = {p["path"].rsplit("/", 1)[-1]: p["reason"] for p in manifest.problems}
    t0 = next(k for k, v in made.damage.items() if v == "T = 0").rsplit("/", 1)[-1]
    assert "20×20×0" in reasons[t0]


def test_bvp_folder_itself_as_root_gives_the_same_recordings(tree, manifest):
    inner = ingest_bvp(tree[0] / "BVP", workers=1)
    assert [r["id"] for r in inner.recordings] == [r["id"] for r in manifest.recordings]
    assert [r["frames"] for r in inner.recordings] == [r["frames"] for r in manifest.recordings]
    assert inner.synthetic  # the marker one level up is found


def test_a_tree_without_recordings_is_one_error(tmp_path):
    (tmp_path / "BVP" / "20181109-VS" / "user1").mkdir(parents=True)
    (tmp_path / "BVP" / "20181109-VS" / "user1" / NAME).write_bytes(b"")
    with pytest.raises(ValidationError, match="no Widar3.0 BVP recording"):
        ingest_bvp(tmp_path)


def test_release_kind_detects_and_can_be_forced(tree, tmp_path):
    root = tree[0]
    assert release_kind(root) == "bvp" and release_kind(root / "BVP") == "bvp"
    assert release_kind(root, "csi") == "csi"
    (tmp_path / "CSI" / "20181109").mkdir(parents=True)
    (tmp_path / "BVP" / "20181109-VS").mkdir(parents=True)
    assert release_kind(tmp_path) == "csi" and release_kind(tmp_path, "bvp") == "bvp"
    with pytest.raises(ValidationError):
        release_kind(tmp_path, "wav")


def test_cli_ingests_a_bvp_tree_and_forcing_csi_fails_cleanly(runner, tree, tmp_path):
    root = tree[0]
    out = tmp_path / "m.json"
    result = runner.invoke(app, ["ingest", "widar", str(root), "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["recordings"] == 306
    doc = json.loads(out.read_text())
    assert doc["dataset"] == "widar3-bvp" and doc["kind"] == "bvp"
    result = runner.invoke(app, ["ingest", "widar", str(root), "-o", str(tmp_path / "c.json"), "--kind", "csi"])
    assert result.exit_code == 2 and "no Widar3.0 recording" in result.output
    result = runner.invoke(app, ["ingest", "widar", str(root), "-o", str(tmp_path / "r.json"), "--receivers", "3"])
    assert result.exit_code == 2 and "--receivers" in result.output


def test_generator_is_deterministic_and_lists_its_damage(tmp_path):
    a = make_widar_bvp_tree(tmp_path / "a", seed=3, frames=(2, 2), damage=False)
    b = make_widar_bvp_tree(tmp_path / "b", seed=3, frames=(2, 2), damage=False)
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.mat"))
    assert files_a == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*.mat"))
    assert all((tmp_path / "a" / p).read_bytes() == (tmp_path / "b" / p).read_bytes() for p in files_a)
    assert a.damage == {} and len(files_a) == a.recordings == b.recordings
    marker = json.loads((tmp_path / "a" / "RFBENCH_SYNTHETIC.json").read_text())
    assert marker["params"] == {"kind": "bvp", "seed": 3, "repetitions": 1, "frames": [2, 2], "damage": False}


def test_the_release_s_5x5_positions_are_all_recordings(tmp_path):
    # the benchmark's release-size tree is 51 repetitions at 5 x 5 positions: every file must be a recording
    # (a tree of 143 repetitions at 3 x 3 had 13,468 names past repetition 99, left out as problems)
    made = make_widar_bvp_tree(tmp_path / "w", positions=5, frames=(1, 1), damage=False)
    assert made.recordings == 34 * 25
    m = ingest_bvp(tmp_path / "w", workers=1)
    assert m.problems == [] and len(m.ids) == 34 * 25
    recs = m.to_dict()["recordings"]
    assert {(r["location"], r["orientation"]) for r in recs} == {(lo, o) for lo in range(1, 6) for o in range(1, 6)}
    marker = json.loads((tmp_path / "w" / "RFBENCH_SYNTHETIC.json").read_text())
    assert marker["params"]["positions"] == 5
    with pytest.raises(ValidationError, match="positions must be 1..5"):
        make_widar_bvp_tree(tmp_path / "x", positions=6)
    assert not (tmp_path / "x").exists()


def test_the_largest_repetition_the_generator_writes_is_one_ingest_reads():
    from rfbench.datasets.synthetic_settings import MAX_WIDAR_REPETITIONS

    name = f"user1-6-3-5-{MAX_WIDAR_REPETITIONS}-1e-07-100-20-100000-L0.mat"
    assert parse_bvp_name(name).repetition == MAX_WIDAR_REPETITIONS
    past = parse_bvp_name(name.replace(f"-{MAX_WIDAR_REPETITIONS}-", f"-{MAX_WIDAR_REPETITIONS + 1}-"))
    assert past == f"repetition {MAX_WIDAR_REPETITIONS + 1} is outside 1–99; file left out"


def test_the_summary_lists_fifty_problems_of_a_kind_and_counts_the_rest(runner, tmp_path):
    root = tmp_path / "w"
    make_widar_bvp_tree(root, frames=(1, 1), damage=False)
    folder = root / "BVP" / "20181130-VS" / "user1"
    data = bvp_file_bytes(np.zeros((20, 20, 2)))
    for k in range(1, 54):  # 53 names past repetition 99: one kind of problem
        (folder / f"user1-1-1-1-{99 + k}-1e-07-100-20-100000-L0.mat").write_bytes(data)
    out = tmp_path / "m.json"
    result = runner.invoke(app, ["ingest", "widar", str(root), "-o", str(out)])
    assert result.exit_code == 0, result.output
    listed = [line for line in result.stdout.splitlines() if "is outside 1–99; file left out" in line]
    assert len(listed) == 50
    assert "  … and 3 more (every problem is in the manifest's 'problems', and in --json)" in result.stdout
    assert len(json.loads(out.read_text())["problems"]) == 53
    result = runner.invoke(app, ["ingest", "widar", str(root), "-o", str(out), "--force", "--json"])
    assert len(json.loads(result.stdout)["problems"]) == 53


@pytest.mark.parametrize("kind", ["bvp", "mmfi", "files"])
def test_a_generator_s_marker_anywhere_in_the_tree_makes_it_synthetic(tmp_path, kind):
    """A generated date folder merged into a corpus, its RFBENCH_SYNTHETIC.json with it (the top markers gone):
    ingest filed the marker as a layout problem, wrote synthetic: false, and the chain scored MEASURED and
    verified MATCH."""
    import shutil

    from rfbench.datasets.files import ingest as ingest_files
    from rfbench.datasets.mmfi import ingest as ingest_mmfi
    from rfbench.datasets.synthetic import MARKER, make_mmfi_tree
    from rfbench.datasets.widar_bvp import ingest_bvp

    tree = tmp_path / "tree"
    if kind == "bvp":
        make_widar_bvp_tree(tree, repetitions=1, damage=False)
    elif kind == "mmfi":
        make_mmfi_tree(tree, subjects=["S01", "S02"], actions=["A01"], frames=2, damage=False)
    else:
        (tree / "a").mkdir(parents=True)
        for u in ("u1", "u2"):
            (tree / "a" / f"{u}_clap_1.dat").write_bytes(b"x")
    markers = sorted(tree.rglob(MARKER))
    keep = markers[0].read_bytes() if markers else b'{"synthetic": true}'
    for m in markers:
        m.unlink()
    deep = next(p for p in sorted(tree.rglob("*")) if p.is_dir() and len(p.relative_to(tree).parts) >= 2) \
        if kind != "files" else tree / "a"
    (deep / MARKER).write_bytes(keep)
    if kind == "bvp":
        manifest = ingest_bvp(tree)
    elif kind == "mmfi":
        manifest = ingest_mmfi(tree)
    else:
        manifest = ingest_files(tree, "a/{user}_{gesture}_{repetition}.dat", roles={"label": "gesture"}, dataset="toy")
    assert manifest.synthetic is True
    assert manifest.extra["synthetic_marker"]["path"] == (deep / MARKER).relative_to(tree).as_posix()
    shutil.rmtree(tree)


@pytest.mark.parametrize("n_files", ["threads", "processes"])
def test_generated_profiles_are_synthetic_without_the_marker_file(tmp_path, monkeypatch, n_files):
    """Every marker file deleted before ingest: the manifest said synthetic: false, the chain scored MEASURED,
    verified MATCH and compare showed it beside the paper's figures — while every profile's MAT header text still
    read 'rfbench synthetic BVP'. A profile that says the generator wrote it makes the tree SYNTHETIC."""
    from rfbench.datasets import bvp_readers
    from rfbench.datasets.synthetic import MARKER
    from rfbench.datasets.widar_bvp import ingest_bvp

    tree = tmp_path / "tree"
    make_widar_bvp_tree(tree, repetitions=1, damage=False)
    for m in tree.rglob(MARKER):
        m.unlink()
    if n_files == "processes":  # the reader processes answer the same
        monkeypatch.setattr(bvp_readers, "MIN_FILES", 1)
    manifest = ingest_bvp(tree, workers=2)
    assert manifest.synthetic is True
    marker = manifest.extra["synthetic_marker"]
    assert marker["path"].endswith(".mat") and marker["found_in"] == "the file's MAT header text"
    first = next(r for r in manifest.recordings if r["files"][0]["path"] == marker["path"])
    assert marker["sha256"] == first["files"][0]["sha256"]
    # the same profiles under another header text (a real capture's) are not
    for path in tree.rglob("*.mat"):
        data = bytearray(path.read_bytes())
        if data[:20] == b"MATLAB 5.0 MAT-file,":
            data[:116] = b"MATLAB 5.0 MAT-file, Platform: PCWIN64, Created on: Mon Jan 01 00:00:00 2018".ljust(116)
            path.write_bytes(bytes(data))
    assert ingest_bvp(tree, workers=2).synthetic is False


def test_a_user_number_with_a_leading_zero_is_a_problem(tmp_path):
    """user01 beside user1: the subject is the name as written, so one person was two — a cross-subject split
    with --test user1 kept user01's profiles in train, and CSI and BVP recordings of one capture no longer shared
    a capture id. Such a name is a problem now, in both releases."""
    from rfbench.datasets.widar import parse_name
    from rfbench.datasets.widar_bvp import ingest_bvp

    assert "not a Widar3.0 user name" in parse_name("user01-1-1-1-1-r1.dat")
    assert "not a Widar3.0 user name" in parse_name("user0-1-1-1-1-r1.dat")
    assert parse_name("user10-1-1-1-1-r1.dat").user == "user10"
    tree = tmp_path / "tree"
    make_widar_bvp_tree(tree, repetitions=1, damage=False)
    folder = next(p for p in sorted(tree.rglob("user1")) if p.is_dir())
    renamed = []
    for f in sorted(folder.glob("user1-*.mat")):
        target = f.with_name(f.name.replace("user1-", "user01-", 1))
        f.rename(target)
        renamed.append(target)
    folder.rename(folder.with_name("user01"))
    manifest = ingest_bvp(tree)
    assert renamed and not any(r["subject"] == "user01" for r in manifest.recordings)
    reasons = [p["reason"] for p in manifest.problems if "/user01/" in p["path"]]
    assert len(reasons) == len(renamed) and all(r.startswith("user01: not a Widar3.0 user name") for r in reasons)


@pytest.mark.parametrize("release", ["bvp", "csi"])
def test_a_date_folder_link_named_as_another_date_is_left_out(tmp_path, release):
    """BVP/20181109-VS -> 20181204-VS inside the tree: the link sorted first, so 20181204's files were ingested
    as 20181109's (room and gesture names from 20181109's table) and the real folder was left out as reached a
    second time. The link is a problem now, and the real folder is walked under its own name."""
    import os
    import shutil

    from rfbench.datasets.synthetic import make_widar_tree
    from rfbench.datasets.widar import ingest as ingest_csi
    from rfbench.datasets.widar_bvp import ingest_bvp

    tree = tmp_path / "tree"
    if release == "bvp":
        make_widar_bvp_tree(tree, repetitions=1, damage=False)
        data, first, target = tree / "BVP", "20181109-VS", "20181211-VS"
    else:
        make_widar_tree(tree, records=(3, 4), damage=False)
        data = tree / "CSI"
        first = "20181109"
        target = sorted(p.name for p in data.iterdir() if p.is_dir() and p.name > first)[0]
    ingest = ingest_bvp if release == "bvp" else ingest_csi
    before = ingest(tree, workers=1)
    dates = {r["date"] for r in before.recordings}
    shutil.rmtree(data / first)
    os.symlink(target, data / first)  # a relative link inside the tree
    manifest = ingest(tree, workers=1)
    want = target.removesuffix("-VS")
    assert {r["date"] for r in manifest.recordings} == dates - {first.removesuffix("-VS")}
    assert len([r for r in manifest.recordings if r["date"] == want]) == \
        len([r for r in before.recordings if r["date"] == want])
    reasons = [p["reason"] for p in manifest.problems if p["path"].endswith(first)]
    assert reasons and reasons[0].startswith(f"a link to the folder '{target}'"), manifest.problems[:5]
