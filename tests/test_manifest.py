"""The manifest file (DESIGN.md §11) and its columnar view."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from rfbench.datasets.manifest import Manifest, RecordingTable, load_manifest, read_manifest, value_sort_key
from rfbench.errors import SchemaError, ValidationError


def doc(**over):
    base = {
        "schema": "rfbench.manifest/1",
        "dataset": "toy",
        "root": "/data",
        "recordings": [
            {"id": "r2", "files": [{"path": "b.dat", "bytes": 10}], "frames": 5, "subject": "u2", "room": 3},
            {"id": "r1", "files": [{"path": "a.dat", "bytes": 0}], "frames": 0, "subject": "u10", "room": 1,
             "receivers": [1, 2]},
        ],
        "problems": [{"path": "a.dat", "reason": "empty file"}],
    }
    base.update(over)
    return base


def test_round_trip_keeps_required_and_extra_keys(tmp_path):
    m = Manifest.from_dict(doc(receivers_expected=[1, 2, 3]))
    assert m.extra == {"receivers_expected": [1, 2, 3]} and m.synthetic is False
    path = m.write(tmp_path / "m.json")
    back = read_manifest(path)
    # root is recorded relative to the manifest's folder and resolves back to the same folder
    assert not back.root.startswith("/") and os.path.abspath(back.root_dir(path)) == os.path.abspath("/data")
    assert {**back.to_dict(), "root": "/data"} == m.to_dict()
    written = json.loads(path.read_text())
    assert set(written) == {"schema", "dataset", "root", "recordings", "problems", "synthetic", "receivers_expected"}
    assert load_manifest(path).ids == ["r2", "r1"] and load_manifest(written).dataset == "toy"
    with pytest.raises(Exception, match="pass `force` to overwrite"):
        m.write(path)


@pytest.mark.parametrize("change, match", [
    ({"recordings": "x"}, "'recordings' must be a list"),
    ({"problems": [{"path": 1}]}, "problems\\[0\\]"),
    ({"recordings": [{"id": "", "files": [], "frames": 1}]}, "'id' must be a non-empty string"),
    ({"recordings": [{"id": "a", "files": [], "frames": 1}, {"id": "a", "files": [], "frames": 1}]}, "appears twice"),
    ({"recordings": [{"id": "a", "files": [{"path": "x"}], "frames": 1}]}, "an int 'bytes' in 0\\.\\.2\\*\\*63-1"),
    # past a 64-bit integer: split and audit ended with an OverflowError traceback and exit 1 (found by an
    # adversarial probe; fails on the code before)
    ({"recordings": [{"id": "a", "files": [], "frames": 2**63}]}, "'frames' must be an integer in 0\\.\\.2"),
    ({"recordings": [{"id": "a", "files": [{"path": "x", "bytes": 10**30}], "frames": 1}]}, "an int 'bytes' in 0"),
    ({"recordings": [{"id": "a", "files": [], "frames": 1.5}]}, "'frames' must be"),
    ({"recordings": [{"id": "a", "files": [], "frames": True}]}, "'frames' must be"),
    ({"recordings": [{"id": "a", "files": [], "frames": 1, "room": [1]}]}, "'room' must be a string or a number"),
    ({"recordings": [{"id": "a", "files": [], "frames": 1, "receivers": ["r1"]}]}, "'receivers' must be"),
])
def test_malformed_manifests_are_named(change, match):
    with pytest.raises(ValidationError, match=match):
        Manifest.from_dict(doc(**change))


def test_missing_key_and_wrong_schema():
    d = doc()
    del d["root"]
    with pytest.raises(ValidationError, match="missing key 'root'"):
        Manifest.from_dict(d)
    with pytest.raises(SchemaError):
        Manifest.from_dict(doc(schema="rfbench.split/1"))
    with pytest.raises(SchemaError, match="major version 2"):
        Manifest.from_dict(doc(schema="rfbench.manifest/2"))


def test_value_order_is_numbers_then_text():
    values = ["b", 10, "a", 2, 1.5]
    assert sorted(values, key=value_sort_key) == [1.5, 2, 10, "a", "b"]


def test_recording_table_codes_by_hand():
    t = Manifest.from_dict(doc()).table()
    assert t.ids == ("r2", "r1") and t.frames.tolist() == [5, 0]
    # subject values sorted as text: "u10" < "u2"; r2 is u2 → code 1, r1 is u10 → code 0
    assert t.domains["subject"].values == ("u10", "u2") and t.domains["subject"].codes.tolist() == [1, 0]
    # room values sorted as numbers: 1 < 3
    assert t.domains["room"].values == (1, 3) and t.domains["room"].codes.tolist() == [1, 0]
    assert t.domains["room"].code_of("3") == 1 and t.domains["room"].code_of(7) == -1
    assert "location" not in t.domains
    with pytest.raises(ValidationError, match="domain keys available: room, subject"):
        t.column("location")
    assert t.index_of() == {"r2": 0, "r1": 1}


def test_missing_values_get_code_minus_one():
    t = RecordingTable.from_recordings([{"id": "a", "frames": 1, "room": 2}, {"id": "b", "frames": 1}])
    assert t.domains["room"].codes.tolist() == [0, -1]


def test_from_arrays_matches_from_recordings():
    rng = np.random.default_rng(0)
    subjects = rng.choice(["s1", "s2", "s3"], 50)
    rooms = rng.integers(1, 4, 50)
    ids = [f"r{k:02d}" for k in range(50)]
    frames = rng.integers(0, 100, 50)
    a = RecordingTable.from_arrays(ids, frames, subject=subjects, room=rooms)
    b = RecordingTable.from_recordings([{"id": i, "frames": int(f), "subject": str(s), "room": int(r)}
                                        for i, f, s, r in zip(ids, frames, subjects, rooms)])
    for key in ("subject", "room"):
        assert a.domains[key].values == b.domains[key].values
        assert a.domains[key].codes.tolist() == b.domains[key].codes.tolist()
    with pytest.raises(ValidationError):
        RecordingTable.from_arrays(["a", "a"], [1, 1])
    with pytest.raises(ValidationError):
        RecordingTable.from_arrays(["a"], [1], room=[1, 2])


def test_sorted_values_is_the_canonical_order():
    """A table's column values are put in value_sort_key's order; all-string columns take the direct sort,
    which must be that same order (strings with digits, case, non-ASCII, empty), and mixed ones the key."""
    import random

    from rfbench.datasets.values import sorted_values, value_sort_key

    rng = random.Random(7)
    alphabet = "aZ09-_/ é\u00ff\u4e00"
    for _ in range(300):
        strings = {"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))) for _ in range(rng.randint(0, 30))}
        assert sorted_values(strings) == sorted(strings, key=value_sort_key)
        mixed = list(strings) + [rng.randint(-5, 5) for _ in range(3)] + [rng.random(), True]
        assert sorted_values(mixed) == sorted(mixed, key=value_sort_key)
    assert sorted_values(["10", "9", 10, 9, 2.5]) == [2.5, 9, 10, "10", "9"]


def test_a_special_file_is_counted_as_one_not_as_a_name():
    """A FIFO named like a recording was counted under "names that do not fit the layout": its reason begins "not a"
    (found by an adversarial probe; the test fails on the code before)."""
    from rfbench.datasets.manifest import problem_kind

    assert problem_kind("not a regular file (a FIFO, socket, device or kernel pseudo-file); left out") == "link"
    assert problem_kind("not a Widar BVP file name (user-gesture-...-L<link>.mat); left out") == "name"
    assert problem_kind("cannot read: not a MATLAB v5 MAT-file (no byte-order mark at bytes 126-127); left out") \
        == "unreadable"
