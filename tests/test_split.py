"""Split protocols: purity, the cross-* and leave-one-domain-out rules, MM-Fi S1/S2/S3 × P1/P2/P3 against the
toolbox's algorithm, the scikit-learn-compatible splitter, and `rfbench split` on the command line."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import naive
from rfbench.cli import app
from rfbench.datasets import mmfi
from rfbench.datasets.manifest import Manifest, RecordingTable
from rfbench.errors import LeakageError, ValidationError
from rfbench.protocols.split import PROTOCOLS, ProtocolSplitter, assign, make_splits, mmfi_s1_subjects


def widar_like(n_users=4, rooms=(1, 2, 3), locations=(1, 2, 3, 4, 5), frames=20):
    recs = []
    for u in range(1, n_users + 1):
        for room in rooms:
            for loc in locations:
                for ori in (1, 2):
                    recs.append({"id": f"{room}/user{u}-{loc}-{ori}", "subject": f"user{u}", "room": room,
                                 "location": loc, "orientation": ori, "gesture": "Clap", "frames": frames,
                                 "files": [{"path": "x.dat", "bytes": 1}]})
    return recs


def mmfi_all(frames=297):
    return [{"id": f"{mmfi.environment_of(s)}/{s}/{a}", "subject": s, "room": mmfi.environment_of(s), "action": a,
             "frames": frames, "files": []} for s in mmfi.ALL_SUBJECTS for a in mmfi.ALL_ACTIONS]


def sides(table, assignment):
    train = {table.ids[k] for k in np.flatnonzero(assignment.side == 0)}
    test = {table.ids[k] for k in np.flatnonzero(assignment.side == 1)}
    return train, test


# ---------------------------------------------------------------------------------------------------------
# purity and determinism
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol, kw", [
    ("random", {"allow_leaky": True}),
    ("cross-subject", {}),
    ("cross-room", {}),
    ("cross-location", {"test_fraction": 0.4}),
    ("cross-orientation", {}),
])
def test_assignment_ignores_manifest_order_and_global_rng(protocol, kw):
    recs = widar_like()
    t1 = RecordingTable.from_recordings(recs)
    shuffled = recs[:]
    random.Random(5).shuffle(shuffled)
    t2 = RecordingTable.from_recordings(shuffled)
    np.random.seed(123)
    a1 = assign(t1, protocol, seed=7, **kw)[0]
    np.random.seed(999)
    a2 = assign(t2, protocol, seed=7, **kw)[0]
    assert sides(t1, a1) == sides(t2, a2)
    # and the global generator was not touched
    np.random.seed(1)
    before = np.random.random()
    np.random.seed(1)
    assign(t1, protocol, seed=7, **kw)
    assert np.random.random() == before


def test_different_seeds_differ_somewhere():
    t = RecordingTable.from_recordings(widar_like(n_users=10))
    held = {assign(t, "cross-subject", seed=s)[0].held_out for s in range(8)}
    assert len(held) > 1


# ---------------------------------------------------------------------------------------------------------
# cross-* and random
# ---------------------------------------------------------------------------------------------------------


def test_cross_room_with_listed_value():
    t = RecordingTable.from_recordings(widar_like())
    a = assign(t, "cross-room", test=["3"])[0]  # matched by text: "3" selects room 3
    train, test = sides(t, a)
    assert test == {r for r in t.ids if r.startswith("3/")}
    assert len(test) == 4 * 5 * 2 and len(train) == 2 * 4 * 5 * 2
    assert a.claims == ("room",) and a.held_out == (3,) and not a.leakage_prone
    assert a.params == {"domain": "room", "test": [3]}


def test_cross_subject_fraction_counts():
    # 10 subjects, fraction 0.25 → ⌊2.5 + 0.5⌋ = 3 held out; fraction 0.01 → at least 1; 0.99 → at most 9.
    t = RecordingTable.from_recordings(widar_like(n_users=10))
    assert len(assign(t, "cross-subject", test_fraction=0.25)[0].held_out) == 3
    assert len(assign(t, "cross-subject", test_fraction=0.01)[0].held_out) == 1
    assert len(assign(t, "cross-subject", test_fraction=0.99)[0].held_out) == 9


def test_cross_subject_default_draw_is_seeded_permutation_of_sorted_values():
    # 5 subjects, default fraction 0.2 → 1 held out: index permutation(5)[0] of the sorted values.
    t = RecordingTable.from_recordings(widar_like(n_users=5))
    first = int(np.random.default_rng(11).permutation(5)[0])
    assert assign(t, "cross-subject", seed=11)[0].held_out == (f"user{first + 1}",)


def test_random_is_recording_level_and_tagged():
    t = RecordingTable.from_recordings(widar_like())
    a = assign(t, "random", allow_leaky=True, test_fraction=0.25, seed=3)[0]
    train, test = sides(t, a)
    assert len(test) == round(0.25 * len(t)) and not (train & test) and len(train) + len(test) == len(t)
    assert a.leakage_prone and a.claims == ()


def test_leakage_prone_protocols_need_allow_leaky():
    t = RecordingTable.from_recordings(mmfi_all())
    for protocol, kw in (("random", {}), ("mmfi-s1", {"actions": "p1"})):
        with pytest.raises(ValidationError, match="`allow_leaky`"):
            assign(t, protocol, **kw)


@pytest.mark.parametrize("protocol, kw, match", [
    ("nope", {}, "unknown protocol"),
    ("cross-room", {"test": ["9"]}, "no recording has room 9"),
    ("cross-room", {"test": ["1", "2", "3"]}, "leave at least one"),
    ("cross-room", {"test": ["1"], "test_fraction": 0.5}, "either `test`"),
    ("cross-room", {"test_fraction": 1.0}, "strictly between"),
    ("cross-room", {"seed": -1}, "seed"),
    ("cross-room", {"actions": "p1"}, "`actions` applies only"),
    ("cross-gesture", {}, "unknown protocol"),
    ("leave-one-domain-out", {}, "`domain`"),
    ("leave-one-domain-out", {"domain": "gesture"}, "holds out a class"),
    ("leave-one-domain-out", {"domain": "action"}, "no recording in the manifest has a 'action'"),
    ("mmfi-s2", {}, "`actions`"),
])
def test_bad_arguments_are_validation_errors(protocol, kw, match):
    t = RecordingTable.from_recordings(widar_like())
    with pytest.raises(ValidationError, match=match):
        assign(t, protocol, **kw)


def test_leave_one_domain_out_needs_two_values():
    t = RecordingTable.from_recordings(widar_like(rooms=(1,)))
    with pytest.raises(ValidationError, match="at least 2 values of room"):
        assign(t, "leave-one-domain-out", domain="room")


def test_leave_one_domain_out_makes_one_fold_per_value():
    t = RecordingTable.from_recordings(widar_like())
    folds = assign(t, "leave-one-domain-out", domain="room")
    assert [f.name for f in folds] == ["room-1", "room-2", "room-3"]
    for f, room in zip(folds, (1, 2, 3)):
        train, test = sides(t, f)
        assert test == {r for r in t.ids if r.startswith(f"{room}/")}
        assert f.claims == ("room",)
    only = assign(t, "leave-one-domain-out", domain="subject", test=["user2"])
    assert [f.name for f in only] == ["subject-user2"]


def test_recordings_without_the_key_are_excluded():
    recs = widar_like()
    recs[0]["subject"] = None
    t = RecordingTable.from_recordings(recs)
    a = assign(t, "cross-subject", test=["user1"])[0]
    assert a.side[0] == -1


# ---------------------------------------------------------------------------------------------------------
# MM-Fi S1/S2/S3 × P1/P2/P3 against the toolbox's algorithm
# ---------------------------------------------------------------------------------------------------------


def test_randomstate_permutation_equals_global_seed_then_permutation():
    state = np.random.get_state()
    try:
        for rs in (0, 1, 7, 26, 12345):
            np.random.seed(rs)
            expected = np.random.permutation(40)
            assert np.array_equal(np.random.RandomState(rs).permutation(40), expected)
    finally:
        np.random.set_state(state)


def test_s1_seed_0_first_action_literal():
    # NumPy's legacy generator is frozen (NEP 19): seed(0); permutation(40) is
    # [22, 20, 25, 4, 10, 15, 28, 11, ..., 31, 24 | 6, 23, 21, 19, 9, 38, 3, 0]: the first 32 indices train, the
    # last 8 (0-based) test → S07 S24 S22 S20 S10 S39 S04 S01 are MM-Fi's "val" subjects of the first action.
    train, test = mmfi_s1_subjects(["A01"], 0)["A01"]
    assert train[:8] == ("S23", "S21", "S26", "S05", "S11", "S16", "S29", "S12")
    assert test == ("S07", "S24", "S22", "S20", "S10", "S39", "S04", "S01")
    assert len(train) == 32 and not set(train) & set(test)
    # the second action of a protocol uses rs = seed + 1
    assert mmfi_s1_subjects(["A01", "A02"], 0)["A02"] == mmfi_s1_subjects(["A02"], 1)["A02"]


def _toolbox_pairs(protocol, split, seed):
    train_form, val_form = naive.naive_mmfi_decode_config(protocol, split, seed)
    train = {f"{mmfi.environment_of(s)}/{s}/{a}" for s, acts in train_form.items() for a in acts}
    test = {f"{mmfi.environment_of(s)}/{s}/{a}" for s, acts in val_form.items() for a in acts}
    return train, test


@pytest.mark.parametrize("actions", ["p1", "p2", "p3"])
@pytest.mark.parametrize("setting, split, seeds", [
    ("mmfi-s1", "random_split", (0, 1, 41)),
    ("mmfi-s2", "cross_subject_split", (0,)),
    ("mmfi-s3", "cross_scene_split", (0,)),
])
def test_mmfi_settings_reproduce_the_toolbox(actions, setting, split, seeds):
    t = RecordingTable.from_recordings(mmfi_all())
    protocol = {"p1": "protocol1", "p2": "protocol2", "p3": "protocol3"}[actions]
    for seed in seeds:
        a = assign(t, setting, actions=actions, seed=seed, allow_leaky=True)[0]
        assert sides(t, a) == _toolbox_pairs(protocol, split, seed)
        n_actions = len(mmfi.ACTION_PROTOCOLS[actions])
        assert int(np.sum(a.side >= 0)) == 40 * n_actions  # other actions excluded
        assert a.leakage_prone == (setting == "mmfi-s1")


def test_mmfi_fixed_lists():
    # hand-checked: S2 holds out every fifth subject, S3 the 10 subjects of E04.
    t = RecordingTable.from_recordings(mmfi_all())
    _, test = sides(t, assign(t, "mmfi-s2", actions="p3")[0])
    assert {r.split("/")[1] for r in test} == {"S05", "S10", "S15", "S20", "S25", "S30", "S35", "S40"}
    train, test = sides(t, assign(t, "mmfi-s3", actions="p2")[0])
    assert {r.split("/")[0] for r in test} == {"E04"} and {r.split("/")[0] for r in train} == {"E01", "E02", "E03"}
    assert {r.split("/")[2] for r in train} == set(mmfi.ACTION_PROTOCOLS["p2"])


def test_mmfi_s1_shares_subjects_and_the_audit_reports_it():
    m = Manifest("mmfi", "/m", mmfi_all())
    out = make_splits(m, "mmfi-s1", actions="p3", allow_leaky=True)[0]
    assert out.audit.passed  # S1 claims nothing beyond recording/window disjointness...
    shared = {s["key"]: s for s in out.audit.shared}
    assert shared["subject"]["shared"] == 40  # ...and every subject sits on both sides over 27 actions
    assert out.document["leakage_prone"] is True


def test_mmfi_s3_on_a_tree_without_e04_leaves_test_empty():
    m = Manifest("mmfi", "/m", [r for r in mmfi_all() if r["room"] != "E04"])
    with pytest.raises(ValidationError, match="test side empty"):
        make_splits(m, "mmfi-s3", actions="p1")


def test_mmfi_s3_with_a_misplaced_subject_fails_its_room_claim():
    recs = mmfi_all()
    for r in recs:
        if r["subject"] == "S05":
            r["room"] = "E04"  # S05 found under E04: subject lists put it in train, E04 is the test room
    out = make_splits(Manifest("mmfi", "/m", recs), "mmfi-s3", actions="p1")[0]
    failed = [c for c in out.audit.checks if not c["passed"]]
    assert [c["name"] for c in failed] == ["room-disjoint"] and "E04" in failed[0]["detail"]
    with pytest.raises(LeakageError):
        out.audit.raise_if_failed()


# ---------------------------------------------------------------------------------------------------------
# the scikit-learn-compatible splitter
# ---------------------------------------------------------------------------------------------------------


def test_splitter_over_windows():
    recs = widar_like(n_users=2, rooms=(1, 2), locations=(1,), frames=10)
    # 2 users × 2 rooms × 1 location × 2 orientations = 8 recordings of 10 frames; windows of 4 stride 2 →
    # starts 0, 2, 4, 6 → 4 windows each, 32 in all.
    sp = ProtocolSplitter(Manifest("toy", "/", recs), "cross-room", window=4, stride=2, test=["2"])
    X = np.zeros((32, 3))
    assert sp.get_n_splits() == 1
    [(train, test)] = list(sp.split(X))
    assert len(train) == 16 and len(test) == 16
    ids = sp.windows.recording_ids()
    assert all(i.startswith("2/") for i in ids[test]) and all(i.startswith("1/") for i in ids[train])
    with pytest.raises(ValidationError, match="31 rows"):
        list(sp.split(np.zeros((31, 3))))


def test_splitter_leave_one_domain_out_and_groups():
    recs = widar_like(n_users=3, rooms=(1,), locations=(1, 2))
    m = Manifest("toy", "/", recs)
    sp = ProtocolSplitter(m, "leave-one-domain-out", domain="subject")
    assert sp.get_n_splits() == 3
    # rows in any order, mapped by groups = recording id per row
    groups = np.array([r["id"] for r in recs][::-1] * 2)
    folds = list(sp.split(np.zeros(len(groups)), groups=groups))
    assert len(folds) == 3
    for (train, test), user in zip(folds, ("user1", "user2", "user3")):
        assert {g.split("-")[0].split("/")[1] for g in groups[test]} == {user}
        assert user not in {g.split("-")[0].split("/")[1] for g in groups[train]}
        assert len(train) + len(test) == len(groups)
    with pytest.raises(ValidationError, match="not in the manifest"):
        list(sp.split(None, groups=["nope"]))


def test_splitter_recording_rows_and_sklearn_protocol():
    m = Manifest("toy", "/", widar_like(n_users=2, rooms=(1, 2), locations=(1,)))
    sp = ProtocolSplitter(m, "cross-subject", test=["user1"])
    # duck-typed like sklearn's BaseCrossValidator: split is a generator, get_n_splits takes X, y, groups
    [(train, test)] = list(sp.split(np.zeros(len(m.recordings)), np.zeros(len(m.recordings))))
    assert sorted(np.concatenate([train, test]).tolist()) == list(range(len(m.recordings)))
    assert sp.get_n_splits(None, None, None) == 1
    with pytest.raises(ValidationError, match="pass window= or groups="):
        list(sp.split(np.zeros(3)))


def test_protocol_table_is_complete():
    assert set(PROTOCOLS) == {"random", "in-domain", "cross-subject", "cross-room", "cross-location",
                              "cross-orientation", "leave-one-domain-out", "mmfi-s1", "mmfi-s2", "mmfi-s3"}


# ---------------------------------------------------------------------------------------------------------
# rfbench split on the command line
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def widar_manifest(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(Manifest("widar3", "/w", widar_like(), synthetic=True).to_dict()))
    return path


def test_cli_split_is_byte_identical_across_runs(runner, widar_manifest, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for out in (a, b):
        r = runner.invoke(app, ["split", str(widar_manifest), "-p", "cross-orientation", "--seed", "4", "-o", str(out)])
        assert r.exit_code == 0, r.output
    assert a.read_bytes() == b.read_bytes()
    doc = json.loads(a.read_text())
    for key in ("schema", "manifest", "protocol", "seed", "params", "train", "test", "leakage_prone", "audit",
                "synthetic"):
        assert key in doc
    assert doc["schema"] == "rfbench.split/1" and doc["synthetic"] is True and doc["leakage_prone"] is False
    assert doc["manifest"]["path"] == "manifest.json" and len(doc["manifest"]["sha256"]) == 64
    assert doc["audit"]["passed"] is True and doc["train"] == sorted(doc["train"])


def test_cli_split_refuses_existing_output_and_leaky_protocols(runner, widar_manifest, tmp_path):
    out = tmp_path / "s.json"
    assert runner.invoke(app, ["split", str(widar_manifest), "-p", "cross-room", "-o", str(out)]).exit_code == 0
    before = out.read_bytes()
    r = runner.invoke(app, ["split", str(widar_manifest), "-p", "cross-room", "--seed", "9", "-o", str(out)])
    assert r.exit_code == 2 and "--force" in r.stderr and out.read_bytes() == before
    r = runner.invoke(app, ["split", str(widar_manifest), "-p", "random", "-o", str(tmp_path / "r.json")])
    assert r.exit_code == 2 and "--allow-leaky" in r.stderr and not (tmp_path / "r.json").exists()
    r = runner.invoke(app, ["split", str(widar_manifest), "-p", "random", "--allow-leaky", "--json",
                            "-o", str(tmp_path / "r.json")])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["splits"][0]["leakage_prone"] is True


def test_cli_leave_one_domain_out_writes_one_file_per_value(runner, widar_manifest, tmp_path):
    folder = tmp_path / "lodo"
    r = runner.invoke(app, ["split", str(widar_manifest), "-p", "leave-one-domain-out", "--domain", "room",
                            "-o", str(folder), "--json"])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in folder.iterdir()) == ["split-room-1.json", "split-room-2.json", "split-room-3.json"]
    doc = json.loads((folder / "split-room-3.json").read_text())
    assert doc["held_out"] == [3] and doc["manifest"]["path"] == "../manifest.json"
    assert runner.invoke(app, ["audit", str(folder / "split-room-3.json")]).exit_code == 0
    r = runner.invoke(app, ["split", str(widar_manifest), "-p", "leave-one-domain-out", "--domain", "room",
                            "-o", str(tmp_path / "x.json")])
    assert r.exit_code == 2 and "give a folder" in r.stderr


def test_cli_split_table_and_verdict(runner, widar_manifest, tmp_path):
    r = runner.invoke(app, ["split", str(widar_manifest), "-p", "cross-subject", "--test", "user2",
                            "-o", str(tmp_path / "s.json")])
    assert r.exit_code == 0, r.output
    assert "PASS subject-disjoint" in r.stdout and "audit passed" in r.stdout and "SYNTHETIC" in r.stdout


@pytest.mark.parametrize("args, match", [
    (["-p", "cross-room", "--test", "7"], "no recording has room 7"),
    (["-p", "mmfi-s1", "--actions", "p1"], "--allow-leaky"),
    (["-p", "bogus"], "unknown protocol"),
    (["-p", "cross-room", "--seed", "-3"], ""),
])
def test_cli_split_bad_input_exit_2(runner, widar_manifest, tmp_path, args, match):
    r = runner.invoke(app, ["split", str(widar_manifest), "-o", str(tmp_path / "s.json"), *args])
    assert r.exit_code == 2, r.output
    assert match in r.stderr
    assert not (tmp_path / "s.json").exists()


def test_cli_split_rejects_a_malformed_manifest(runner, tmp_path):
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"schema": "rfbench.manifest/1", "dataset": "x", "root": "/", "problems": [],
                               "recordings": [{"id": "a", "files": [], "frames": -1}]}))
    r = runner.invoke(app, ["split", str(bad), "-p", "cross-room", "-o", str(tmp_path / "s.json")])
    assert r.exit_code == 2 and "'frames' must be an integer in 0..2**63-1" in r.stderr


def test_cli_split_exits_1_and_keeps_the_evidence_when_the_audit_fails(runner, tmp_path):
    recs = mmfi_all(frames=3)
    for r in recs:
        if r["subject"] == "S05":
            r["room"] = "E04"
    path = tmp_path / "m.json"
    path.write_text(json.dumps(Manifest("mmfi", "/m", recs).to_dict()))
    out = tmp_path / "s.json"
    r = runner.invoke(app, ["split", str(path), "-p", "mmfi-s3", "--actions", "p1", "-o", str(out)])
    assert r.exit_code == 1, r.output
    assert "room-disjoint" in r.stderr and "E04" in r.stderr
    assert json.loads(out.read_text())["audit"]["passed"] is False


def test_the_header_names_only_held_out_values_the_corpus_has(tmp_path):
    from typer.testing import CliRunner

    from rfbench.cli import app
    from tests.windowsdata import mmfi_case

    _, manifest, _ = mmfi_case(tmp_path, subjects=("S01", "S05", "S10"), actions=("A01",), test=("S05",))
    r = CliRunner().invoke(app, ["split", str(manifest), "--protocol", "mmfi-s2", "--actions", "p3", "-o",
                                 str(tmp_path / "s2.json")])
    assert r.exit_code == 0, r.output
    first = r.output.splitlines()[0]
    assert "(test: S05, S10; the protocol's other 6 held-out value(s), S15, S20, S25, S30 …, are not in this corpus)" \
        in first
