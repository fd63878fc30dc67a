"""A digest rfbench records or checks is of the very bytes it used: each document is read once, hashed and parsed
from the same bytes. Before, the manifest a split is made from (and checked against), the split file an index
names, the label-set file an index names, the manifest ``check_index_files`` re-checks the dataset from, an
index scored against a prediction record, the predictions a report scores and the X ``predict`` maps were used
from one read (or open) and hashed by another; a file put in place between the two paired one file's content with
another's digest (a split checked against the recorded manifest while built from another, forged predictions
scored under the honest file's digest). Each test replaces the file right after rfbench first opens it (the
open descriptor still reads the old file, as with a rename by another process) and fails on the code before."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from rfbench.datasets.windows import WindowSettings, check_index_files, load_index, write_windows
from rfbench.errors import ValidationError
from rfbench.io import files
from rfbench.protocols.split import write_splits
from rfbench.protocols.splitfile import load_split
from tests.windowsdata import mmfi_case, widar_case


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def replace_after_first_open(monkeypatch, target: Path, replacement: bytes) -> dict:
    """Once rfbench has opened ``target`` (through :func:`rfbench.io.files.open_regular`, which every whole-file
    read and hash goes through, or :func:`rfbench.io.files.open_input`, which ``.npy`` reads go through), put
    ``replacement`` in its place by a rename."""
    state = {"replaced": False}

    def after(opener):
        def opening(path, *args, **kwargs):
            opened = opener(path, *args, **kwargs)
            if not state["replaced"] and os.path.realpath(path) == os.path.realpath(target):
                state["replaced"] = True
                staged = target.with_name(target.name + ".new")
                staged.write_bytes(replacement)
                os.replace(staged, target)
            return opened
        return opening

    monkeypatch.setattr(files, "open_regular", after(files.open_regular))
    monkeypatch.setattr(files, "open_input", after(files.open_input))
    return state


@pytest.fixture
def case(tmp_path):
    return mmfi_case(tmp_path)


def test_a_split_is_checked_against_the_manifest_it_is_built_from(case, monkeypatch):
    _, manifest, split = case
    recorded = manifest.read_bytes()  # the manifest the split was made from
    manifest.write_bytes(recorded + b" ")  # another file at its path, the recorded one put back once it is read
    state = replace_after_first_open(monkeypatch, manifest, recorded)
    with pytest.raises(ValidationError, match="not the manifest the split"):
        load_split(split)
    assert state["replaced"]


def test_a_split_records_the_digest_of_the_manifest_it_split(case, monkeypatch, tmp_path):
    _, manifest, _ = case
    used = manifest.read_bytes()
    state = replace_after_first_open(monkeypatch, manifest, used + b" ")
    ((path, _),) = write_splits(manifest, "cross-subject", tmp_path / "again.json", test=["S02"])
    assert state["replaced"]
    assert json.loads(path.read_text())["manifest"]["sha256"] == _sha(used)


def test_an_index_records_the_digest_of_the_split_it_was_built_from(case, monkeypatch):
    from rfbench.datasets.windows.build import _load_split

    _, _, split = case
    used = split.read_bytes()
    state = replace_after_first_open(monkeypatch, split, used + b" ")
    _, info, digest, _ = _load_split(split, split)  # what write_windows records in the index's "split"
    assert state["replaced"]
    assert digest == _sha(used)
    assert info.sha256 == digest


def test_an_index_records_the_digest_of_the_label_set_it_used(tmp_path, monkeypatch):
    _, _, split = widar_case(tmp_path)
    names = tmp_path / "names.txt"
    used = b"Sweep\nPush&Pull\nClap\n"
    names.write_bytes(used)
    state = replace_after_first_open(monkeypatch, names, b"Clap\nSweep\nPush&Pull\n")
    doc = write_windows(split, "test", tmp_path / "out", WindowSettings(length=8, label_set=str(names)))
    assert state["replaced"]
    assert doc["labels"]["names"] == ["Sweep", "Push&Pull", "Clap"]
    assert doc["labels"]["file_sha256"] == _sha(used)


def test_index_files_are_checked_from_the_manifest_that_was_hashed(case, monkeypatch, tmp_path):
    _, manifest, split = case
    write_windows(split, "test", tmp_path / "out", WindowSettings(length=2))
    recorded = manifest.read_bytes()
    other = json.loads(recorded)
    other["root"] = str(tmp_path / "elsewhere")  # a manifest whose dataset is somewhere else
    state = replace_after_first_open(monkeypatch, manifest, json.dumps(other).encode())
    assert check_index_files(tmp_path / "out" / "index.json") == []  # the recorded manifest's files: all there
    assert state["replaced"]


def test_a_loaded_index_carries_the_digest_of_its_bytes(case, monkeypatch, tmp_path):
    _, _, split = case
    write_windows(split, "test", tmp_path / "out", WindowSettings(length=2))
    index = tmp_path / "out" / "index.json"
    used = index.read_bytes()
    replace_after_first_open(monkeypatch, index, used + b" ")
    assert load_index(index, check_arrays=False).sha256 == _sha(used)  # what score compares with a record's


def test_a_report_records_the_digest_of_the_predictions_it_scored(tmp_path, monkeypatch):
    import numpy as np

    from rfbench.report.score import BootstrapSettings, score_gesture

    _, _, split = widar_case(tmp_path)
    doc = write_windows(split, "test", tmp_path / "w", WindowSettings(length=8))
    pred = tmp_path / "w" / "pred.npy"
    np.save(pred, np.zeros(len(doc["rows"]), dtype=np.int64))
    used = pred.read_bytes()
    np.save(tmp_path / "other.npy", np.ones(len(doc["rows"]), dtype=np.int64))
    state = replace_after_first_open(monkeypatch, pred, (tmp_path / "other.npy").read_bytes())
    run = score_gesture(pred, rows=tmp_path / "w" / "index.json", split=split,
                        bootstrap=BootstrapSettings(replicates=0), out=tmp_path / "report.json")
    assert state["replaced"]
    (entry,) = [i for i in run.report["inputs"] if i["role"] == "pred"]
    assert (entry["sha256"], entry["bytes"]) == (_sha(used), len(used))


def test_a_file_read_twice_with_other_bytes_is_refused(tmp_path):
    from rfbench.errors import FormatError
    from rfbench.io.files import digest_read, read_input_bytes, reads_recorded

    path = tmp_path / "names.txt"
    path.write_bytes(b"a\n")
    with reads_recorded():
        read_input_bytes(path)
        assert digest_read(path) == (_sha(b"a\n"), 2)
        read_input_bytes(path)  # the same bytes again: fine
        path.write_bytes(b"b\n")
        with pytest.raises(FormatError, match="changed while rfbench read it"):
            read_input_bytes(path)
    assert digest_read(path) is None  # (recorded only within)


def test_predict_checks_the_digest_of_the_x_it_maps(case, monkeypatch, tmp_path):
    from rfbench.nn.windows_folder import open_windows

    _, _, split = case
    write_windows(split, "test", tmp_path / "out", WindowSettings(length=2))
    x = tmp_path / "out" / "X.npy"
    legit = x.read_bytes()
    forged = bytearray(legit)
    forged[-4:] = b"\x00\x00\x80\x7f"  # the last value of X made +inf: the same size, another sha256
    x.write_bytes(bytes(forged))  # the forged X is mapped; the written one put back once it is opened
    state = replace_after_first_open(monkeypatch, x, legit)
    with pytest.raises(ValidationError, match="changed since `rfbench windows` wrote it"):
        open_windows(tmp_path / "out")
    assert state["replaced"]


def test_score_checks_the_prediction_record_against_the_predictions_it_scored(tiny_demo, tmp_path, monkeypatch,
                                                                             runner):
    import shutil

    import numpy as np

    from rfbench.cli import app

    chain = tmp_path / "d"
    shutil.copytree(tiny_demo, chain, symlinks=True)
    pred = chain / "pose" / "pred.npy"
    written = pred.read_bytes()  # the predictions the record describes
    forged = np.load(pred) + 0.01
    np.save(pred, forged)  # forged predictions scored; the written ones put back once they are opened
    state = replace_after_first_open(monkeypatch, pred, written)
    argv = ["score", "--task", "pose", "--pred", str(pred), "--rows",
            str(chain / "windows" / "mmfi-test" / "index.json"), "--skeleton", "h36m17", "--units", "m", "--norm",
            "hip-width", "--k", "0.2", "--metrics", "pck", "--split", str(chain / "mmfi-split.json"), "--manifest",
            str(chain / "mmfi-manifest.json"), "--bootstrap", "0", "-o", str(chain / "pose" / "again.json")]
    result = runner.invoke(app, argv)
    assert state["replaced"]
    assert result.exit_code == 2 and "not the array this record describes" in " ".join(result.output.split())
    assert not (chain / "pose" / "again.json").exists()
