"""What every ingest shares: path display, counting and hashing logs in one read, file entries, duplicates."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from rfbench.datasets import tree
from rfbench.io import intel5300
from rfbench.io.writer import synthetic_log


def test_display_path_escapes_undecodable_bytes_and_control_characters():
    assert tree.display_path("plain/é.dat") == "plain/é.dat"
    assert tree.display_path(os.fsdecode(b"a\xff/b\xe9.dat")) == "a\\xff/b\\xe9.dat"
    assert tree.display_path("two\nlines\t.dat") == "two\\x0alines\\x09.dat"
    assert tree.is_utf8("é") and not tree.is_utf8(os.fsdecode(b"\xff"))


def test_entries_show_their_path_from_the_root(tmp_path):
    """An entry's shown path is its folder's, "/" and its name; a name holding a control character is never an
    entry but a problem, its path escaped as display_path escapes the whole."""
    deep = tmp_path / "a b" / "c d"
    deep.mkdir(parents=True)
    (deep / "e\x1bf.dat").write_bytes(b"x")
    (deep / "é.dat").write_bytes(b"x")
    (tmp_path / "a\tb").mkdir()
    (tmp_path / "top.dat").write_bytes(b"y")
    walk = tree.TreeWalk(tmp_path)
    top = walk.entries(tmp_path)
    assert [e.rel for e in top] == ["a b", "top.dat"]
    mid = walk.entries(top[0].path)
    assert [e.rel for e in mid] == ["a b/c d"]
    assert [e.rel for e in walk.entries(mid[0].path)] == ["a b/c d/é.dat"]
    assert walk.problems == [{"path": "a\\x09b", "reason": tree.CONTROL_REASON.format(what="it is")},
                             {"path": "a b/c d/e\\x1bf.dat", "reason": tree.CONTROL_REASON.format(what="it is")}]


def test_count_files_hashes_in_the_same_read(tmp_path):
    paths = []
    for k in range(5):
        p = tmp_path / f"{k}.dat"
        p.write_bytes(synthetic_log(3 + k, seed=k))
        paths.append(p)
    paths.insert(2, tmp_path / "missing.dat")
    got = intel5300.count_files(paths, sha256=True)
    for p, r in zip(paths, got):
        if p.name == "missing.dat":
            assert isinstance(r, intel5300.FormatError)
            continue
        assert r.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
        assert r.n_records == intel5300.count_records(p).n_records
    assert all(r.sha256 is None for r in intel5300.count_files(paths[:2]))  # hashing is asked for
    data = synthetic_log(4, seed=9)
    assert intel5300.count_records(data, sha256=True).sha256 == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_count_logs_does_not_depend_on_workers_or_batches(tmp_path, monkeypatch, workers):
    monkeypatch.setattr(tree, "BATCH_FILES", 3)  # several batches even for a few files
    files = []
    for k in range(11):
        p = tmp_path / f"{k}.dat"
        p.write_bytes(synthetic_log(2 + k, seed=k)[: None if k % 4 else -7])
        files.append((str(p), p.stat().st_size))
    files.append((str(tmp_path / "gone.dat"), 10))
    seen = []
    got = tree.count_logs(files, workers=workers, progress=seen.append)
    assert sum(seen) == len(files)
    for path, _ in files[:-1]:
        data = Path(path).read_bytes()
        c = intel5300.count_records(data)
        assert got[path] == tree.LogCount(c.n_records, {k: v for k, v in c.skipped.items() if v},
                                          hashlib.sha256(data).hexdigest(), None)
    # the error names no path (the manifest entry already does, relative to the root)
    assert got[str(tmp_path / "gone.dat")] == tree.LogCount(0, {}, None, "no such file")


def test_log_entry_problems():
    problems = []
    entry, n = tree.log_entry("a.dat", 0, None, "receiver r3", problems)
    assert n is None and entry["sha256"] == hashlib.sha256(b"").hexdigest()
    assert problems == [{"path": "a.dat", "reason": "empty file (0 bytes); receiver r3 has no data"}]
    problems = []
    entry, n = tree.log_entry("b.dat", 9, tree.LogCount(4, {"truncated": 1, "invalid_perm": 2}, "ab" * 32, None),
                              "the recording", problems)
    assert n == 4 and entry == {"path": "b.dat", "bytes": 9, "sha256": "ab" * 32, "records": 4,
                                "skipped": {"truncated": 1, "invalid_perm": 2}}
    # invalid_perm records are kept, so they are not reported as skipped
    assert problems == [{"path": "b.dat", "reason": "1 record(s) skipped (truncated 1); the other 4 are used"}]


def test_duplicates_are_found_by_hash_not_by_name():
    problems, groups = tree.duplicate_problems([("b", "h1", 5), ("a", "h1", 5), ("c", "h2", 5), ("e1", "h0", 0),
                                                ("e2", "h0", 0), ("x", None, 3), ("y", None, 3)])
    assert groups == [["a", "b"]]  # empty files and unhashed ones are not compared
    assert [p["path"] for p in problems] == ["b"] and problems[0]["reason"].startswith("identical to a (same sha256")


@pytest.mark.parametrize("folder", [".", "/", "a", "a/b", "/abs/c", "../up", "dir with space"])
@pytest.mark.parametrize("name", ["f.mat", "user1-1-1-1-1-x-L0.mat", "caf\u00e9", "bad\udcff"])
def test_path_text_is_the_text_of_the_path(folder, name):
    """A reader process gets each file's path as text (``path_text``, built without a Path object): the very
    text ``str(entry.path)`` gives, for a walk's entry (folder only) and for one given its path."""
    walked = tree.Entry(name, None, name, "/real/" + name, False, 1, folder=Path(folder))
    given = tree.Entry(name, Path(folder) / name, name, "/real/" + name, False, 1)
    assert walked.path_text() == str(Path(folder) / name)
    assert given.path_text() == str(Path(folder) / name)


def test_path_text_of_a_walk_matches_its_paths(tmp_path, monkeypatch):
    (tmp_path / "d" / "e").mkdir(parents=True)
    for rel in ("top.mat", "d/one.mat", "d/e/two.mat"):
        (tmp_path / rel).write_bytes(b"x")
    monkeypatch.chdir(tmp_path)
    for root in (Path("."), tmp_path, Path("d")):
        files = tree.TreeWalk(root).files(root)
        assert files and [f.path_text() for f in files] == [str(f.path) for f in files]
