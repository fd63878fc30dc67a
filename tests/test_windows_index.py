"""The written index (keys, paths, validation), re-checking its dataset files, and the targets score reads from
the dataset for an index (test side) and for its train side."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from rfbench.datasets.windows import (
    WindowSettings,
    build_windows,
    check_index_files,
    load_index,
    side_targets,
    test_truth,
    train_targets,
    write_windows,
)
from rfbench.datasets.windows.index import INDEX_KEYS
from rfbench.errors import FormatError, SchemaError, ValidationError
from rfbench.io.files import SCHEMA_MAJOR, sha256_file
from tests.windowsdata import mmfi_case, widar_case, write_split


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("index")
    root, manifest, split = mmfi_case(tmp, frames=6, damage=True)
    out = tmp / "runs" / "test"
    doc = write_windows(split, "test", out, WindowSettings(length=2))
    return tmp, root, manifest, split, out, doc


def _edit(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_the_index_has_every_key_and_relative_paths(written):
    tmp, root, manifest, split, out, doc = written
    assert SCHEMA_MAJOR["windows"] == 1 and doc["schema"] == "rfbench.windows/1"
    assert set(INDEX_KEYS) <= set(doc)
    assert doc["split"] == {"path": "../../split.json", "sha256": sha256_file(split)[0]}
    assert doc["manifest"] == {"path": "../../manifest.json", "sha256": sha256_file(manifest)[0]}
    assert (doc["dataset"], doc["side"], doc["task"]) == ("mmfi", "test", "pose")
    assert doc["x"]["file"] == "X.npy" and doc["y"]["file"] == "y.npy" and doc["y"]["kind"] == "pose"
    for key, name in (("x", "X.npy"), ("y", "y.npy")):
        assert doc[key]["sha256"] == sha256_file(out / name)[0]
        assert doc[key]["bytes"] == (out / name).stat().st_size
        assert list(np.load(out / name, mmap_mode="r").shape) == doc[key]["shape"]
    assert doc["settings"] == WindowSettings(length=2).resolved("mmfi").to_dict()
    for f in doc["files"]:
        assert not os.path.isabs(f["path"]) and sha256_file(root / f["path"])[0] == f["sha256"]
    assert json.loads((out / "index.json").read_text()) == doc
    assert load_index(out / "index.json", hash_arrays=True).rows == doc["rows"]


def test_written_and_in_memory_windows_are_the_same(written):
    tmp, root, manifest, split, out, doc = written
    w = build_windows(split, "test", WindowSettings(length=2))
    assert np.load(out / "X.npy").tobytes() == w.x.tobytes()
    assert np.load(out / "y.npy").tobytes() == w.y.tobytes()
    assert w.index["rows"] == doc["rows"] and w.index["files"] == doc["files"]


@pytest.mark.parametrize("change, error, words", [
    (lambda d: d.update(schema="rfbench.windows/2"), SchemaError, "major version 2"),
    (lambda d: d.pop("rows"), FormatError, "missing key"),
    (lambda d: d["rows"].pop(), FormatError, "rows but X has"),
    (lambda d: d["x"].update(file="../X.npy"), FormatError, "x.file must be 'X.npy'"),
    (lambda d: d.update(side="val"), FormatError, "side must be train or test"),
    (lambda d: d["settings"].update(length=0), FormatError, "length must be at least 1"),
    (lambda d: d["settings"].update(window=3), FormatError, "unknown window setting"),
    (lambda d: d["rows"][0].update(stop=0), FormatError, r"rows\[0\]"),
    (lambda d: d["files"].reverse(), FormatError, "sorted by path"),
    (lambda d: d.update(labels={"names": ["a"], "source": "manifest", "sha256": "x"}), FormatError, "labels: null"),
    (lambda d: d["x"].update(shape=[d["x"]["shape"][0], 9]), FormatError, "x.axes must name every axis"),
])
def test_a_malformed_index_is_refused(written, tmp_path, change, error, words):
    *_, out, doc = written
    bad = json.loads(json.dumps(doc))
    change(bad)
    for name in ("X.npy", "y.npy"):
        (tmp_path / name).symlink_to(out / name)
    (tmp_path / "index.json").write_text(json.dumps(bad))
    with pytest.raises(error, match=words):
        load_index(tmp_path / "index.json")


def test_arrays_that_do_not_match_the_index_are_refused(written, tmp_path):
    *_, out, doc = written
    (tmp_path / "index.json").write_text(json.dumps(doc))
    with pytest.raises(FormatError, match="X.npy: missing"):
        load_index(tmp_path / "index.json")
    y = np.load(out / "y.npy")
    np.save(tmp_path / "X.npy", np.load(out / "X.npy"))
    np.save(tmp_path / "y.npy", y[:-1])
    with pytest.raises(FormatError, match="y.npy: holds float64"):
        load_index(tmp_path / "index.json")
    changed = y.copy()
    changed[0, 0, 0] += 1
    np.save(tmp_path / "y.npy", changed)
    assert load_index(tmp_path / "index.json").rows == doc["rows"]  # headers and sizes agree...
    with pytest.raises(FormatError, match="sha256 differs"):
        load_index(tmp_path / "index.json", hash_arrays=True)  # ...the content does not


def test_check_index_files_names_a_changed_ground_truth(tmp_path):
    root, manifest, split = mmfi_case(tmp_path)
    write_windows(split, "test", tmp_path / "out")
    assert check_index_files(tmp_path / "out" / "index.json") == []
    gt = root / "E01/S02/A01/ground_truth.npy"
    arr = np.load(gt)
    arr[0, 0, 0] += 0.001
    np.save(gt, arr)  # same size, other values
    assert check_index_files(tmp_path / "out" / "index.json") == [
        {"path": "E01/S02/A01/ground_truth.npy", "reason": "sha256 differs"}]
    (root / "E01/S02/A02/wifi-csi/frame003.mat").unlink()
    problems = check_index_files(load_index(tmp_path / "out" / "index.json"))
    assert [p["path"] for p in problems] == ["E01/S02/A01/ground_truth.npy", "E01/S02/A02/wifi-csi/frame003.mat"]


def test_test_truth_reads_the_ground_truth_from_the_dataset(written):
    tmp, root, manifest, split, out, doc = written
    (out / "y.npy").replace(out / "y.saved")  # the truth never comes from y.npy (nor needs X.npy)
    (out / "X.npy").replace(out / "X.saved")
    try:
        t = test_truth(split, out / "index.json")
    finally:
        (out / "y.saved").replace(out / "y.npy")
        (out / "X.saved").replace(out / "X.npy")
    assert t.rows == doc["rows"] and t.kind == "pose" and t.side == "test"
    for k, row in enumerate(t.rows):
        assert np.array_equal(t.y[k], np.load(root / row["id"] / "ground_truth.npy")[row["stop"] - 1])
    assert [f["path"] for f in t.files] == sorted({f"{r['id']}/ground_truth.npy" for r in t.rows})
    assert t.ids.tolist() == [r["id"] for r in doc["rows"]]
    assert (t.recordings, t.recordings_with_rows) == (doc["recordings"]["side"], doc["recordings"]["with_rows"])


def test_train_targets_follow_the_index_settings(written):
    tmp, root, manifest, split, out, doc = written
    t = train_targets(split, out / "index.json")
    w = build_windows(split, "train", WindowSettings(length=2))
    assert t.side == "train" and t.rows == w.index["rows"] and np.array_equal(t.y, w.y)
    assert t.excluded == w.index["excluded"] and t.dropped == w.index["dropped"]
    assert [d["window"] for d in t.dropped] == [{"start": 0, "stop": 2}, {"start": 1, "stop": 3}]


def test_truth_refuses_an_index_of_another_split_side_or_rows(written, tmp_path):
    tmp, root, manifest, split, out, doc = written
    other = tmp_path / "other-split.json"
    write_split(manifest, other, "cross-subject", test=["S01"])
    with pytest.raises(ValidationError, match="built from another split"):
        test_truth(other, out / "index.json")
    with pytest.raises(ValidationError, match="built from another split"):
        train_targets(other, out / "index.json")
    train_out = tmp / "runs" / "train"
    write_windows(split, "train", train_out, WindowSettings(length=2), force=True)
    with pytest.raises(ValidationError, match="scoring needs the test side"):
        test_truth(split, train_out / "index.json")
    edited = tmp_path / "edited"
    edited.mkdir()
    for name in ("X.npy", "y.npy"):
        (edited / name).symlink_to(out / name)
    bad = json.loads(json.dumps(doc))
    bad["split"]["path"] = os.path.relpath(split, edited)
    bad["manifest"]["path"] = os.path.relpath(manifest, edited)
    bad["rows"][3]["start"] += 1  # a window moved by one frame
    bad["rows"][3]["stop"] += 1
    (edited / "index.json").write_text(json.dumps(bad))
    with pytest.raises(ValidationError, match="first difference at row 3"):
        test_truth(split, edited / "index.json")
    bad = json.loads(json.dumps(doc))
    bad["settings"]["stride"] = 2  # another window setting, rows kept
    (edited / "index.json").write_text(json.dumps(bad))
    with pytest.raises(ValidationError, match="rows differ"):
        test_truth(split, edited / "index.json")


def test_an_empty_side_is_an_error_and_writes_nothing(tmp_path):
    _, _, split = mmfi_case(tmp_path, frames=3)
    with pytest.raises(ValidationError, match="gives no row .*fewer than the window length 4"):
        write_windows(split, "test", tmp_path / "out", WindowSettings(length=4))
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValidationError, match="gives no row"):
        side_targets(split, "train", WindowSettings(length=4))


def test_gesture_truth_is_label_indices_of_the_shared_label_set(tmp_path):
    _, manifest, split = widar_case(tmp_path)
    out = tmp_path / "out"
    doc = write_windows(split, "test", out, WindowSettings(resample=8))
    t = test_truth(split, out / "index.json")
    assert t.kind == "label" and t.labels["names"] == doc["labels"]["names"]
    assert t.y.tolist() == np.load(out / "y.npy").tolist()
    assert len(t.files) == 6 * len(doc["rows"])  # the logs decide the rows, so they are read and hashed
    tr = train_targets(split, out / "index.json")
    assert tr.labels["names"] == t.labels["names"] and tr.y.dtype == np.int64


def test_a_label_set_file_is_found_again_from_the_index(tmp_path):
    _, manifest, split = widar_case(tmp_path)
    names = tmp_path / "sets" / "names.txt"
    names.parent.mkdir()
    names.write_text("Sweep\nPush&Pull\nClap\n")
    out = tmp_path / "runs" / "out"
    doc = write_windows(split, "test", out, WindowSettings(length=8, label_set=str(names)))
    assert doc["settings"]["label_set"] == "../../sets/names.txt" and doc["labels"]["path"] == "../../sets/names.txt"
    assert doc["labels"]["file_sha256"] == sha256_file(names)[0]
    cwd = os.getcwd()
    os.chdir(tmp_path / "sets")
    try:
        t = test_truth(split, out / "index.json")
    finally:
        os.chdir(cwd)
    assert t.labels["names"] == ["Sweep", "Push&Pull", "Clap"]


@pytest.mark.parametrize("odd", ["plain", "caf\u00e9 \u00fc", 'quote " and \\ back', "tab\tnew\nline\x01",
                                 "lone \udcff", "\u2028sep", "emoji \U0001F600"])
def test_index_lines_are_the_standard_encoders_lines(odd):
    """Each row and file line of an index is the line the standard library's encoder writes for it (sorted keys,
    ``", "`` and ``": "``, non-ASCII kept), whatever its strings hold."""
    import json

    from rfbench.datasets.windows.index import dumps_index

    rows = [{"id": odd, "start": 0, "stop": 3}, {"id": odd, "receiver": 2, "start": 1, "stop": 4},
            {"id": odd + "x", "length": 5, "start": 2, "stop": 9}]
    files = [{"bytes": 7, "path": odd + "/a.mat", "sha256": "ab" * 32}, {"bytes": 1, "path": odd, "sha256": "0" * 64}]
    text = dumps_index({"rows": rows, "files": files, "kind": "windows"})
    expected = ["    " + json.dumps(item, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))
                for item in files + rows]  # "files" sorts before "rows"
    lines = [line.rstrip(",") for line in text.split("\n") if line.startswith("    {")]
    assert lines == [e.replace("\n", "") for e in expected]
