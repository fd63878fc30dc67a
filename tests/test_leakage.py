"""The leakage audit: the sweep kernel against its naive twin, and every kind of leak injected and caught."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import naive
from rfbench.cli import app
from rfbench.datasets.manifest import Manifest, RecordingTable
from rfbench.errors import LeakageError, ValidationError
from rfbench.protocols.leakage import _overlap_sweep, audit_document, audit_rows, audit_sides, overlapping_recordings

ROOT = Path(__file__).resolve().parents[1]

# Six recordings over two rooms, three subjects, locations and orientations:
#   id  subject room location orientation frames
RECS = [
    ("a", "u1", 1, 1, 1, 10),
    ("b", "u1", 1, 2, 2, 10),
    ("c", "u2", 1, 3, 3, 10),
    ("d", "u2", 2, 1, 4, 10),
    ("e", "u3", 2, 2, 5, 10),
    ("f", "u3", 2, 3, 1, 10),
]


def recordings():
    return [{"id": i, "subject": s, "room": r, "location": loc, "orientation": o, "frames": n,
             "files": [{"path": f"{i}.dat", "bytes": 1}]} for i, s, r, loc, o, n in RECS]


def manifest_doc():
    return Manifest("toy", "/toy", recordings()).to_dict()


def table():
    return RecordingTable.from_recordings(recordings())


def by_name(result):
    return {c["name"]: c for c in result.checks}


# ---------------------------------------------------------------------------------------------------------
# the sweep kernel
# ---------------------------------------------------------------------------------------------------------


def test_overlap_hand_made_cases():
    rows = [
        # recording 0: train [0,5) and test [5,10) only touch → no shared frame
        (0, 0, 5, 0), (0, 5, 10, 1),
        # recording 1: train [0,5) and test [4,6) share frame 4
        (1, 0, 5, 0), (1, 4, 6, 1),
        # recording 2: an empty test range [1,1) inside a train window shares nothing
        (2, 0, 2, 0), (2, 1, 1, 1),
        # recording 3: excluded rows (side -1) never count
        (3, 0, 9, -1), (3, 0, 9, 0),
        # recording 4: a long early train window must be remembered past a short one: [0,100), [1,2), test [50,51)
        (4, 0, 100, 0), (4, 1, 2, 0), (4, 50, 51, 1),
        # recording 5: test first, train later inside it
        (5, 0, 10, 1), (5, 9, 12, 0),
    ]
    rec, start, stop, side = (list(x) for x in zip(*rows))
    got = overlapping_recordings(rec, start, stop, side, 7)
    assert got.tolist() == [False, True, False, False, True, True, False]
    assert got.tolist() == naive.naive_overlapping_recordings(rec, start, stop, side, 7)


@pytest.mark.parametrize("seed", range(4))
def test_overlap_matches_naive_on_random_unsorted_rows(seed):
    rng = np.random.default_rng(seed)
    n = 60
    rec = rng.integers(0, 6, n)
    start = rng.integers(0, 40, n)
    stop = start + rng.integers(0, 8, n)  # includes empty ranges
    side = rng.integers(-1, 2, n)
    got = overlapping_recordings(rec, start, stop, side, 6)
    assert got.tolist() == naive.naive_overlapping_recordings(rec.tolist(), start.tolist(), stop.tolist(),
                                                              side.tolist(), 6)


def test_overlap_awkward_inputs():
    assert overlapping_recordings([], [], [], [], 3).tolist() == [False] * 3
    assert overlapping_recordings([0], [0], [1], [0], 1).tolist() == [False]
    assert overlapping_recordings([0, 0], [0, 0], [4, 4], [1, 1], 1).tolist() == [False]  # one side only
    assert overlapping_recordings([], [], [], [], 0).tolist() == []


def test_overlap_kernel_directly_on_sorted_rows():
    out = np.zeros(2, dtype=np.uint8)
    _overlap_sweep(np.array([0, 0, 1, 1]), np.array([0, 2, 0, 3]), np.array([3, 4, 3, 5]),
                   np.array([0, 1, 0, 1], dtype=np.int8), out)
    # recording 0: [0,3) & [2,4) share frame 2; recording 1: [0,3) & [3,5) touch only
    assert out.tolist() == [1, 0]


@pytest.mark.parametrize("bad", [
    dict(recording=[0], start=[-1], stop=[2], side=[0]),
    dict(recording=[5], start=[0], stop=[2], side=[0]),
    dict(recording=[0, 1], start=[0], stop=[2], side=[0]),
])
def test_overlap_validates(bad):
    with pytest.raises(ValidationError):
        overlapping_recordings(n_recordings=2, **bad)


def test_kernel_runs_without_jit():
    code = (
        "from rfbench.protocols.leakage import overlapping_recordings as f;"
        "print(f([0,0,1,1],[0,2,0,3],[3,4,3,5],[0,1,0,1],2).tolist())"
    )
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[True, False]"


# ---------------------------------------------------------------------------------------------------------
# audits that pass, and every injected leak
# ---------------------------------------------------------------------------------------------------------


def test_clean_cross_room_assignment_passes():
    # rooms: a b c in room 1 (train), d e f in room 2 (test)
    result = audit_sides(table(), [0, 0, 0, 1, 1, 1], claims=["room"])
    assert result.passed, result.checks
    assert [c["name"] for c in result.checks] == ["recordings-disjoint", "windows-disjoint", "room-disjoint"]
    shared = {s["key"]: s["shared"] for s in result.shared}
    # unclaimed: subject u2 spans rooms 1 and 2 → 1 shared; locations 1, 2, 3 on both sides; orientation 1 (a, f)
    assert shared == {"subject": 1, "location": 3, "orientation": 1}


@pytest.mark.parametrize("train_name, test_name", [
    ("KQ", "kq"),  # case
    ("jos\u00e9", "jose\u0301"),  # composed and decomposed é
    ("kq\u200b", "kq"),  # a zero-width space
    ("kq ", "kq"),  # a trailing space
])
def test_one_subject_under_two_names_a_reader_cannot_tell_apart_fails_the_audit(train_name, test_name):
    """A person filed as 'KQ' in training and 'kq' in test (or é composed and decomposed): the values differ as
    text, so the subject-disjoint check passed while one person sat on both sides."""
    recs = recordings()
    for rec, subject in zip(recs, [train_name, train_name, "u2", test_name, test_name, "u3"]):
        rec["subject"] = subject
    result = audit_sides(RecordingTable.from_recordings(recs), [0, 0, 0, 1, 1, 1], claims=["subject"])
    check = by_name(result)["subject-disjoint"]
    assert not check["passed"] and not result.passed
    assert "a reader cannot tell apart" in check["detail"] and repr(train_name) in check["detail"], check
    for rec in recs[3:5]:  # another person's name: the same assignment passes
        rec["subject"] = "kz"
    assert audit_sides(RecordingTable.from_recordings(recs), [0, 0, 0, 1, 1, 1], claims=["subject"]).passed


def test_leak_same_recording_on_both_sides():
    result = audit_document({"train": ["a", "b"], "test": ["b", "d"]}, table())
    checks = by_name(result)
    assert not result.passed
    assert not checks["recordings-disjoint"]["passed"] and "b" in checks["recordings-disjoint"]["detail"]
    # the whole recording [0, 10) on both sides shares frames too
    assert not checks["windows-disjoint"]["passed"]
    with pytest.raises(LeakageError) as err:
        result.raise_if_failed()
    assert "recordings-disjoint" in str(err.value) and err.value.exit_code == 1
    assert {c["name"] for c in err.value.checks} == {"recordings-disjoint", "windows-disjoint"}


def test_leak_windows_of_one_recording_split_without_overlap():
    doc = {"train": [{"id": "a", "start": 0, "stop": 5}], "test": [{"id": "a", "start": 5, "stop": 10}]}
    checks = by_name(audit_document(doc, table()))
    assert not checks["recordings-disjoint"]["passed"]
    assert checks["windows-disjoint"]["passed"]  # [0,5) and [5,10) share no frame


def test_leak_overlapping_windows():
    doc = {"train": [{"id": "c", "start": 0, "stop": 6}], "test": [{"id": "c", "start": 4, "stop": 10}]}
    checks = by_name(audit_document(doc, table()))
    assert not checks["windows-disjoint"]["passed"]
    assert "c" in checks["windows-disjoint"]["detail"]


@pytest.mark.parametrize("key, train, test, culprit", [
    ("subject", ["a", "c"], ["b", "e"], "u1"),        # a and b are both u1
    ("room", ["a", "d"], ["b", "e"], "1"),            # a (room 1) train, b (room 1) test
    ("location", ["a", "b"], ["d", "c"], "1"),        # a and d are both location 1
    ("orientation", ["a", "b"], ["f", "c"], "1"),     # a and f are both orientation 1
])
def test_leak_of_each_claimed_domain(key, train, test, culprit):
    result = audit_document({"train": train, "test": test}, table(), claims=[key])
    check = by_name(result)[f"{key}-disjoint"]
    assert not check["passed"]
    assert check["detail"].startswith(f"{key} on both sides: {culprit} (train 1, test 1 recordings)")
    assert by_name(result)["recordings-disjoint"]["passed"]
    expected = naive.naive_audit({r["id"]: r for r in recordings()}, train, test, [key])
    assert {c["name"]: c["passed"] for c in result.checks} == expected


def test_claimed_key_missing_on_an_assigned_recording_fails():
    recs = recordings()
    del recs[4]["subject"]  # e has no subject
    t = RecordingTable.from_recordings(recs)
    check = by_name(audit_document({"train": ["a"], "test": ["e"]}, t, claims=["subject"]))["subject-disjoint"]
    assert not check["passed"] and "have no subject" in check["detail"]


@pytest.mark.parametrize("seed", range(5))
def test_audit_matches_naive_on_random_window_splits(seed):
    rng = np.random.default_rng(seed)
    recs = {r["id"]: r for r in recordings()}
    train, test = [], []
    for _ in range(8):
        rid = str(rng.choice(list(recs)))
        a = int(rng.integers(0, 8))
        w = (rid, a, a + int(rng.integers(1, 4)))
        (train if rng.random() < 0.5 else test).append(w)
    claims = ["subject", "room"]
    doc = {"train": [{"id": r, "start": a, "stop": b} for r, a, b in train],
           "test": [{"id": r, "start": a, "stop": b} for r, a, b in test]}
    got = {c["name"]: c["passed"] for c in audit_document(doc, table(), claims=claims).checks}
    assert got == naive.naive_audit(recs, train, test, claims)


def test_audit_rows_validates_shapes_and_indices():
    with pytest.raises(ValidationError):
        audit_rows(table(), [0, 1], [0])
    with pytest.raises(ValidationError):
        audit_rows(table(), [9], [0])
    with pytest.raises(ValidationError):
        audit_sides(table(), [0, 1])
    with pytest.raises(ValidationError, match="no recording in the manifest has a 'gesture'"):
        audit_sides(table(), [0, 0, 0, 1, 1, 1], claims=["gesture"])


@pytest.mark.parametrize("doc, match", [
    ({"train": ["a"], "test": ["zz"]}, "not in the manifest"),
    ({"train": "a", "test": []}, "must be a list"),
    ({"train": [3], "test": []}, "recording id string"),
    ({"train": [{"id": "a", "start": 5, "stop": 2}], "test": []}, "start <= stop"),
])
def test_malformed_documents_are_validation_errors(doc, match):
    with pytest.raises(ValidationError, match=match):
        audit_document(doc, table())


# ---------------------------------------------------------------------------------------------------------
# rfbench audit on the command line
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def toy(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest_doc()))
    return path


def test_cli_plain_split_with_subject_leak_exits_1_naming_the_subject(runner, toy, tmp_path):
    plain = tmp_path / "theirs.json"
    plain.write_text(json.dumps({"train": ["a", "c"], "test": ["b", "e"]}))
    result = runner.invoke(app, ["audit", str(plain), "--manifest", str(toy), "--claim", "subject"])
    assert result.exit_code == 1, result.output
    assert "FAIL subject-disjoint" in result.stdout
    assert "u1" in result.stderr and "leak found" in result.stderr


def test_cli_plain_split_without_leak_passes_json(runner, toy, tmp_path):
    plain = tmp_path / "theirs.json"
    plain.write_text(json.dumps({"train": ["a", "b", "c"], "test": ["d", "e", "f"]}))
    result = runner.invoke(app, ["audit", str(plain), "-m", str(toy), "--claim", "room", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["passed"] is True and out["plain"] is True
    assert [c["name"] for c in out["checks"]] == ["recordings-disjoint", "windows-disjoint", "room-disjoint"]


def test_cli_tampered_rfbench_split_is_caught(runner, toy, tmp_path):
    out = tmp_path / "split.json"
    result = runner.invoke(app, ["split", str(toy), "-p", "cross-subject", "--test", "u3", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["audit", str(out)]).exit_code == 0
    doc = json.loads(out.read_text())
    assert doc["test"] == ["e", "f"]
    doc["train"].append("e")  # inject: move e (u3) to train, so u3 is on both sides
    doc["test"].remove("e")
    doc["train"].remove("b")  # and move u1's b to test
    doc["test"].append("b")
    out.write_text(json.dumps(doc))
    result = runner.invoke(app, ["audit", str(out), "--json"])
    assert result.exit_code == 1, result.output
    verdict = json.loads(result.stdout)
    failed = {c["name"]: c["detail"] for c in verdict["checks"] if not c["passed"]}
    assert set(failed) == {"protocol-reproduces", "subject-disjoint"}
    assert "e is on train in the file but on test under the protocol" in failed["protocol-reproduces"]
    assert "u1 (train 1, test 1" in failed["subject-disjoint"] and "u3 (train 1, test 1" in failed["subject-disjoint"]


def test_cli_audit_bad_inputs_exit_2(runner, toy, tmp_path):
    plain = tmp_path / "theirs.json"
    plain.write_text(json.dumps({"train": ["a"], "test": ["nope"]}))
    r = runner.invoke(app, ["audit", str(plain), "-m", str(toy)])
    assert r.exit_code == 2 and "not in the manifest" in r.stderr
    r = runner.invoke(app, ["audit", str(plain)])
    assert r.exit_code == 2 and "names no manifest" in r.stderr
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"schema": "rfbench.split/9", "train": [], "test": []}))
    r = runner.invoke(app, ["audit", str(wrong), "-m", str(toy)])
    assert r.exit_code == 2 and "major version" in r.stderr
    r = runner.invoke(app, ["audit", str(tmp_path / "missing.json"), "-m", str(toy)])
    assert r.exit_code == 2 and "no such file" in r.stderr
    r = runner.invoke(app, ["audit", str(plain), "-m", str(toy), "--claim", "gesture"])
    assert r.exit_code == 2


def test_cli_audit_refuses_a_manifest_other_than_the_splits(runner, toy, tmp_path):
    """The split is recomputed from its manifest: a manifest edited since the split was made is refused."""
    out = tmp_path / "split.json"
    assert runner.invoke(app, ["split", str(toy), "-p", "cross-room", "--test", "2", "-o", str(out)]).exit_code == 0
    doc = json.loads(toy.read_text())
    doc["problems"].append({"path": "x", "reason": "edited later"})
    toy.write_text(json.dumps(doc))
    result = runner.invoke(app, ["audit", str(out), "--json"])
    assert result.exit_code == 2, result.output
    assert "not the manifest the split" in result.stderr


def test_a_documents_own_claims_are_not_believed(runner, toy, tmp_path):
    """A plain document's `claims` key is ignored: only --claim keys are audited."""
    plain = tmp_path / "theirs.json"
    plain.write_text(json.dumps({"train": ["a"], "test": ["e"], "claims": ["subject", "room"]}))
    result = runner.invoke(app, ["audit", str(plain), "-m", str(toy), "--json"])
    assert result.exit_code == 0, result.output
    assert [c["name"] for c in json.loads(result.stdout)["checks"]] == ["recordings-disjoint", "windows-disjoint"]
