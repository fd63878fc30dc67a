"""Widar3.0 ingest: name parsing, the date→room and per-date gesture tables, and trees with every kind of mess."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import pytest

from rfbench.cli import app
from rfbench.datasets import widar
from rfbench.datasets.synthetic import make_widar_tree
from rfbench.io.intel5300 import GENERATED_RECORD
from rfbench.io.writer import synthetic_log
from tests.conftest import conformance_path


def put(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# ---------------------------------------------------------------------------------------------------------
# facts
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.long
def test_tables_agree_with_the_shared_widar_readme():
    text = conformance_path("widar3", "README.md").read_text(encoding="utf-8")
    rooms = {}
    for room, dates in re.findall(r"^\| ([123]) \| ([0-9_, ]+) \|$", text, flags=re.M):
        for d in dates.split(","):
            rooms[d.strip()] = int(room)
    assert rooms and all(widar.DATE_ROOMS[d] == r for d, r in rooms.items())
    gestures = {}
    for line in text.splitlines():
        m = re.match(r"^\| (\d{8}(?:_\d)?) \|(.*)\|$", line)
        if m:
            cells = [c.strip() for c in m.group(2).split("|")]
            gestures[m.group(1)] = tuple(c for c in cells if c)
    assert len(gestures) == 16
    assert gestures == widar.GESTURE_NAMES


def test_date_facts_by_hand():
    # DESIGN.md §4: six room-1 dates, 20181211 alone in room 3, suffixed 20181205 folders in room 2
    assert sorted(d for d, r in widar.DATE_ROOMS.items() if r == 1) == [
        "20181109", "20181112", "20181115", "20181116", "20181121", "20181130"]
    assert widar.DATE_ROOMS["20181211"] == 3
    assert widar.DATE_ROOMS["20181205_2"] == widar.DATE_ROOMS["20181205_3"] == 2
    # numbers mean different gestures on different dates
    assert widar.gesture_name("20181109", 4) == "Slide"
    assert widar.gesture_name("20181115", 4) == "Draw-O(Vertical)"
    assert widar.gesture_name("20181112", 10) == "Draw-0"
    assert widar.gesture_name("20181205_2", 1) == "Draw-O(Horizontal)"
    assert widar.gesture_name("20181205_3", 1) == "Slide"
    assert widar.gesture_name("20181208", 5) is None
    assert widar.gesture_name("20181205", 1) is None  # the unsuffixed folder has no table row


@pytest.mark.parametrize("name, expected", [
    ("user1-1-1-1-1-r1.dat", widar.WidarName("user1", 1, 1, 1, 1, 1)),
    ("user17-10-8-5-20-r6.dat", widar.WidarName("user17", 10, 8, 5, 20, 6)),
])
def test_parse_good_names(name, expected):
    assert widar.parse_name(name) == expected


@pytest.mark.parametrize("name, reason", [
    ("user1-1-1-1-r1.dat", "not a Widar CSI file name"),
    ("user1-1-1-1-1-r1 (1).dat", "not a Widar CSI file name"),
    ("User1-1-1-1-1-r1.dat", "not a Widar CSI file name"),
    ("user1-1-1-1-1-r1.DAT", "not a Widar CSI file name"),
    ("user1-1-1-1-1.dat", "not a Widar CSI file name"),
    ("user1-1-9-1-1-r1.dat", "location 9 is outside 1–8"),
    ("user1-1-1-6-1-r1.dat", "orientation 6 is outside 1–5"),
    ("user1-1-1-1-1-r7.dat", "receiver 7 is outside 1–6"),
    ("user1-0-1-1-1-r1.dat", "gesture 0"),
])
def test_parse_bad_names(name, reason):
    got = widar.parse_name(name)
    assert isinstance(got, str) and reason in got


# ---------------------------------------------------------------------------------------------------------
# hand-made trees
# ---------------------------------------------------------------------------------------------------------


def test_hand_made_tree_groups_receivers_and_counts_frames(tmp_path):
    d = tmp_path / "CSI" / "20181205_2" / "user3"
    put(d / "user3-1-2-3-1-r1.dat", synthetic_log(30, seed=1))
    put(d / "user3-1-2-3-1-r2.dat", synthetic_log(12, seed=2))
    put(d / "user3-1-2-3-1-r3.dat", b"")
    put(d / "user3-2-2-3-1-r1.dat", synthetic_log(7, seed=3))
    put(d / "user3-2-2-3-1-r2.dat", synthetic_log(9, seed=4))
    put(d / "user3-2-2-3-1-r3.dat", synthetic_log(8, seed=5))
    m = widar.ingest(tmp_path, workers=2)
    assert m.dataset == "widar3" and m.synthetic is False
    assert [r["id"] for r in m.recordings] == ["20181205_2/user3-1-2-3-1", "20181205_2/user3-2-2-3-1"]
    first, second = m.recordings
    # receivers with data: r1 (30 records) and r2 (12); r3 is empty → frames = min(30, 12) = 12
    assert first["receivers"] == [1, 2] and first["frames"] == 12
    assert [f["records"] for f in first["files"]] == [30, 12, 0]
    assert [f["bytes"] for f in first["files"]][2] == 0
    assert first["files"][0]["path"] == "CSI/20181205_2/user3/user3-1-2-3-1-r1.dat"
    # second: min(7, 9, 8) = 7
    assert second["frames"] == 7 and second["receivers"] == [1, 2, 3]
    assert first["room"] == 2 and first["gesture"] == "Draw-O(Horizontal)"
    assert second["gesture"] == "Draw-Zigzag(Horizontal)"
    assert (first["subject"], first["location"], first["orientation"], first["repetition"]) == ("user3", 2, 3, 1)
    assert first["gesture_number"] == 1 and first["date"] == "20181205_2"
    assert m.problems == [{"path": "CSI/20181205_2/user3/user3-1-2-3-1-r3.dat",
                           "reason": "empty file (0 bytes); receiver r3 has no data"}]


def test_csi_folder_given_directly_and_nested_date_folders(tmp_path):
    d = tmp_path / "CSI" / "20181211" / "20181211" / "user2"  # an archive extracted into its own folder
    put(d / "user2-4-1-2-3-r1.dat", synthetic_log(5, seed=1))
    m = widar.ingest(tmp_path / "CSI")
    assert [r["id"] for r in m.recordings] == ["20181211/user2-4-1-2-3"]
    assert m.recordings[0]["gesture"] == "Slide" and m.recordings[0]["room"] == 3
    assert m.recordings[0]["files"][0]["path"] == "20181211/20181211/user2/user2-4-1-2-3-r1.dat"


def test_a_wrapping_download_folder_is_looked_through(tmp_path):
    put(tmp_path / "Widar3.0ReleaseData" / "CSI" / "20181130" / "user5" / "user5-9-6-1-2-r4.dat",
        synthetic_log(3, seed=1))
    m = widar.ingest(tmp_path, receivers_expected=[4])
    assert [r["id"] for r in m.recordings] == ["20181130/user5-9-6-1-2"] and m.problems == []
    assert m.recordings[0]["gesture"] == "Draw-Rectangle(Horizontal)" and m.recordings[0]["location"] == 6
    assert m.recordings[0]["files"][0]["path"] == "Widar3.0ReleaseData/CSI/20181130/user5/user5-9-6-1-2-r4.dat"


def test_expected_receivers_and_folder_mismatch(tmp_path):
    d = tmp_path / "CSI" / "20181109" / "user1"
    put(d / "user1-1-1-1-1-r1.dat", synthetic_log(5, seed=1))
    put(tmp_path / "CSI" / "20181109" / "user5" / "user2-1-1-1-1-r1.dat", synthetic_log(5, seed=2))
    m = widar.ingest(tmp_path, receivers_expected=[1, 2])
    reasons = {p["path"]: p["reason"] for p in m.problems}
    assert reasons["CSI/20181109/user1/user1-1-1-1-1-r*.dat"].startswith("missing receiver file(s) r2")
    assert "file name says user2 but its folder is user5" in reasons["CSI/20181109/user5/user2-1-1-1-1-r1.dat"]
    assert {r["subject"] for r in m.recordings} == {"user1", "user2"}


def test_not_a_folder_is_a_validation_error(tmp_path):
    from rfbench.errors import ValidationError

    with pytest.raises(ValidationError, match="not a folder"):
        widar.ingest(tmp_path / "nope")


# ---------------------------------------------------------------------------------------------------------
# the synthetic tree: every planted problem is reported
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def synthetic_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("widar")
    info = make_widar_tree(root, seed=3)
    return root, info


def test_synthetic_tree_reports_every_planted_problem(synthetic_tree):
    root, info = synthetic_tree
    m = widar.ingest(root)
    assert m.synthetic is True
    paths = {p["path"] for p in m.problems}
    for path, kind in info["damage"].items():
        assert path in paths, (path, kind)
    assert not any(".DS_Store" in p for p in paths)  # hidden files are not problems
    assert len(m.recordings) == info["recordings"]
    assert sum(len(r["files"]) for r in m.recordings) == info["files"]
    assert {r["room"] for r in m.recordings} == {1, 2, 3}


def test_generated_logs_are_synthetic_without_the_marker_file(tmp_path):
    """The marker file deleted before ingest: the manifest said synthetic: false and the chain scored generated
    CSI as MEASURED, as it did for BVP profiles and MM-Fi frames before their header text was read — an Intel 5300
    log carries no header text. Each generated log now begins with a record the Intel 5300 tools skip that says
    who wrote it; a tree whose logs do is SYNTHETIC, and the same logs without it are not."""
    from rfbench.datasets.synthetic import MARKER
    from rfbench.io import intel5300

    tree = tmp_path / "tree"
    make_widar_tree(tree, seed=1, records=(3, 4), damage=False)
    (tree / MARKER).unlink()
    manifest = widar.ingest(tree, workers=2)
    assert manifest.synthetic is True
    marker = manifest.extra["synthetic_marker"]
    assert marker["found_in"] == "the log's first record"
    first = manifest.recordings[0]["files"][0]
    assert (marker["path"], marker["sha256"]) == (first["path"], first["sha256"])
    # the record is one the parser skips: the CSI records are those of the log without it
    log = (tree / first["path"]).read_bytes()
    assert log.startswith(intel5300.GENERATED_RECORD)
    with_record, without = intel5300.read(log), intel5300.read(log[len(intel5300.GENERATED_RECORD):])
    assert with_record.n_records == without.n_records == first["records"]
    assert dict(with_record.non_csi) == {intel5300.GENERATED_RECORD_CODE: 1} and not dict(without.non_csi)
    assert (with_record.csi == without.csi).all()
    # a template corpus of such logs (rfbench ingest files) is too
    from rfbench.datasets.files import ingest as ingest_files

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for k, rec in enumerate(manifest.recordings[:4]):
        (corpus / f"u{k % 2}_g{k}.dat").write_bytes((tree / rec["files"][0]["path"]).read_bytes())
    found = ingest_files(corpus, "u{user}_g{gesture}.dat", roles={"label": "gesture"}, dataset="toy")
    assert found.synthetic is True
    assert found.extra["synthetic_marker"]["path"] == "u0_g0.dat"
    # the same logs without the record (a real capture's) are not
    for path in [*tree.rglob("*.dat"), *corpus.iterdir()]:
        data = path.read_bytes()
        if data.startswith(intel5300.GENERATED_RECORD):
            path.write_bytes(data[len(intel5300.GENERATED_RECORD):])
    again = widar.ingest(tree, workers=2)
    assert again.synthetic is False and "synthetic_marker" not in again.extra
    assert ingest_files(corpus, "u{user}_g{gesture}.dat", roles={"label": "gesture"}, dataset="toy").synthetic is False


def test_ingest_is_byte_identical_across_runs_and_worker_counts(synthetic_tree, tmp_path):
    root, _ = synthetic_tree
    a = widar.ingest(root, workers=1).write(tmp_path / "a.json")
    b = widar.ingest(root, workers=2).write(tmp_path / "b.json")
    assert a.read_bytes() == b.read_bytes()


# ---------------------------------------------------------------------------------------------------------
# a randomly messy hidden tree: no crash, every file accounted for
# ---------------------------------------------------------------------------------------------------------


def messy_tree(root: Path, seed: int) -> list[str]:
    """A randomly messy Widar tree (odd names, wrong folders, empty, garbage and truncated logs); returns the
    paths written, relative to ``root``."""
    rnd = random.Random(seed)
    folders = ["20181109", "20181117/user1", "20181211/user2/deeper", "20181205_3/user3", "20190101/user1",
               "misc", "20181205"]
    names = ["user{u}-{g}-{l}-{o}-{r}-r{x}.dat", "user{u}-{g}-{l}-{o}-r{x}.dat", "user{u}-{g}-{l}-{o}-{r}-r{x}.txt",
             "USER{u}-{g}-{l}-{o}-{r}-r{x}.dat", "user{u}-{g}-{l}-{o}-{r}-r{x} copy.dat", "readme"]
    written = []
    for k in range(45):
        folder = rnd.choice(folders)
        name = rnd.choice(names[:1] * 4 + names[1:]).format(u=rnd.randint(1, 3), g=rnd.randint(1, 12),
                                                             l=rnd.randint(1, 9), o=rnd.randint(1, 6),
                                                             r=rnd.randint(1, 2), x=rnd.randint(1, 7))
        kind = rnd.choice(["valid", "valid", "empty", "garbage", "truncated"])
        data = {"valid": synthetic_log(rnd.randint(1, 6), seed=k), "empty": b"",
                "garbage": bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 300))),
                "truncated": synthetic_log(4, seed=k)[:-rnd.randint(1, 200)]}[kind]
        path = root / "CSI" / folder / name
        put(path, data)
        written.append(path.relative_to(root).as_posix())
    put(root / "CSI" / "stray.dat", b"x")
    written.append("CSI/stray.dat")
    return written


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_messy_tree_never_crashes_and_accounts_for_every_file(tmp_path, seed):
    written = messy_tree(tmp_path, seed)
    m = widar.ingest(tmp_path, workers=2)
    in_recordings = {f["path"]: f for r in m.recordings for f in r["files"]}
    problem_paths = [p["path"] for p in m.problems]
    for path in written:
        listed = path in problem_paths or any(path.startswith(p + "/") for p in problem_paths)
        assert path in in_recordings or listed, path
        if path in in_recordings and in_recordings[path]["records"] == 0:
            assert path in problem_paths, path  # an empty or unusable receiver file is always a problem
    for r in m.recordings:
        usable = [f["records"] for f in r["files"] if f["records"] > 0]
        assert r["frames"] == (min(usable) if usable else 0)
        assert r["receivers"] == sorted(f["receiver"] for f in r["files"] if f["records"] > 0)


# ---------------------------------------------------------------------------------------------------------
# the same manifests as before the ingest was rebuilt on the template machinery
# ---------------------------------------------------------------------------------------------------------

#: Manifests of generated trees written by the Widar ingest of commit 04e85d3 (before the name-template
#: machinery), ``root`` removed: {tree name: manifest}.
BEFORE = Path(__file__).parent / "data" / "widar_manifests_04e85d3.json.gz"


def test_manifests_are_unchanged_but_for_the_additions(tmp_path):
    import gzip

    before = json.loads(gzip.decompress(BEFORE.read_bytes()))
    make_widar_tree(tmp_path / "damaged", seed=3)
    make_widar_tree(tmp_path / "clean", seed=0, repetitions=2, damage=False)
    for seed in range(3):
        messy_tree(tmp_path / f"messy{seed}", seed)
    assert sorted(before) == ["clean", "damaged", "messy0", "messy1", "messy2"]
    for name, old in before.items():
        root = tmp_path / name
        doc = widar.ingest(root, workers=2).to_dict()
        del doc["root"]
        # the additions: sha256 per file, label per recording, the marker's record, and the generator's first
        # record in each log it writes (a record of a code the tools skip: the same records are counted)
        marker = doc.pop("synthetic_marker", None)
        assert (marker is not None) == doc["synthetic"]
        if marker is not None:
            assert marker["sha256"] == hashlib.sha256((root / marker["path"]).read_bytes()).hexdigest()
        for rec in doc["recordings"]:
            assert rec.pop("label") == rec["gesture"]
            for f in rec["files"]:
                data = (root / f["path"]).read_bytes()
                assert f.pop("sha256") == hashlib.sha256(data).hexdigest()
                generated = data.startswith(GENERATED_RECORD)
                # (in the damaged tree, all but the empty log and the one that is not a log)
                assert generated == (name == "clean" or (name == "damaged" and data[:4] not in (b"", b"not ")))
                if generated:
                    f["bytes"] -= len(GENERATED_RECORD)
        assert [r["id"] for r in doc["recordings"]] == [r["id"] for r in old["recordings"]], name
        assert doc == old, name


# ---------------------------------------------------------------------------------------------------------
# rfbench ingest widar
# ---------------------------------------------------------------------------------------------------------


def test_cli_ingest_widar(runner, synthetic_tree, tmp_path):
    root, info = synthetic_tree
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", "widar", str(root), "-o", str(out), "--json", "--receivers", "6"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["recordings"] == info["recordings"] and summary["synthetic"] is True
    assert len(summary["problems"]) >= len(info["damage"])
    written = json.loads(out.read_text())
    assert written["schema"] == "rfbench.manifest/1" and written["receivers_expected"] == [1, 2, 3, 4, 5, 6]
    r = runner.invoke(app, ["ingest", "widar", str(root), "-o", str(out)])
    assert r.exit_code == 2 and "--force" in r.stderr
    r = runner.invoke(app, ["ingest", "widar", str(root), "-o", str(out), "--force"])
    assert r.exit_code == 0 and "problem(s)" in r.stdout and "empty file" in r.stdout
    r = runner.invoke(app, ["ingest", "widar", str(tmp_path / "missing"), "-o", str(tmp_path / "x.json")])
    assert r.exit_code == 2 and "not a folder" in r.stderr and not (tmp_path / "x.json").exists()
    assert runner.invoke(app, ["ingest", "widar", "-h"]).exit_code == 0
