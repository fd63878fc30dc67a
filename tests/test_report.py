"""Reports through the Python API: evidence rules, the mean-pose baseline's guards, the schema, renderings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from posedata import coco_poses, write_split
from rfbench.errors import FormatError, LeakageError, ValidationError
from rfbench.io.files import dumps_json
from rfbench.protocols import splitfile as sf
from rfbench.report import baseline as bl
from rfbench.report.build import build_report, validate_report
from rfbench.report.evidence import decide_evidence, input_record
from rfbench.report.pose import pose_report
from rfbench.report.render import render_markdown, render_terminal

SHA = "a" * 64


def _inputs():
    return [{"role": "pred", "path": "pred.npy", "bytes": 10, "sha256": SHA, "option": "--pred"}]


REPRO = {"argv": ["rfbench", "score", "--pred", "pred.npy"], "cwd": "/tmp"}


# -- evidence ------------------------------------------------------------------------------------------


def test_evidence_is_decided_from_the_facts():
    assert decide_evidence(REPRO, _inputs(), "0.1.0", synthetic=False) == "MEASURED"
    assert decide_evidence(REPRO, _inputs(), "0.1.0", synthetic=True) == "SYNTHETIC"
    assert decide_evidence(None, [], "0.1.0", synthetic=False) == "CLAIMED"
    assert decide_evidence(None, [], "0.1.0", synthetic=True) == "SYNTHETIC"


@pytest.mark.parametrize("broken", [
    {"sha256": None}, {"sha256": "abc"}, {"bytes": None}, {"bytes": -1}, {"path": ""},
])
def test_measured_is_impossible_without_hashes_and_sizes(broken):
    inputs = [{**_inputs()[0], **broken}]
    with pytest.raises(ValidationError, match="evidence is incomplete"):
        decide_evidence(REPRO, inputs, "0.1.0", synthetic=False)
    with pytest.raises(ValidationError):
        decide_evidence(None, inputs, "0.1.0", synthetic=False, requested="MEASURED")


def test_requested_tags_must_match_the_facts():
    with pytest.raises(ValidationError, match="MEASURED was requested but the facts support CLAIMED"):
        decide_evidence(None, [], "0.1.0", synthetic=False, requested="MEASURED")
    with pytest.raises(ValidationError, match="the data is synthetic"):
        decide_evidence(REPRO, _inputs(), "0.1.0", synthetic=True, requested="MEASURED")
    with pytest.raises(ValidationError, match="incomplete"):
        decide_evidence(REPRO, [], "0.1.0", synthetic=False)  # a reproducer without any input record
    with pytest.raises(ValidationError, match="no rfbench version"):
        decide_evidence(REPRO, _inputs(), "", synthetic=False)


def test_input_record_hashes_the_file(tmp_path):
    f = tmp_path / "sub" / "x.npy"
    f.parent.mkdir()
    f.write_bytes(b"abc")
    rec = input_record("pred", f, base=tmp_path, option="--pred")
    # sha256("abc") is the FIPS 180-2 test vector.
    assert rec == {"role": "pred", "path": "sub/x.npy", "bytes": 3, "option": "--pred",
                   "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}


# -- the report document -------------------------------------------------------------------------------


def _result(**over):
    r = {"metric": "pck", "spec": {"metric": "pck", "k": 0.2}, "label": "PCK@0.20 bbox coco17 <= micro",
         "better": "higher", "model": {"value": 0.5}, "baseline": None, "delta": None, "ci": None}
    r.update(over)
    return r


def test_an_unlabeled_number_cannot_enter_a_report():
    for broken in ({"label": ""}, {"spec": {}}, {"label": None}):
        with pytest.raises(ValidationError, match="label|spec"):
            build_report(task="pose", results=[_result(**broken)])
    r = _result()
    del r["spec"]
    with pytest.raises(ValidationError, match="lacks spec"):
        build_report(task="pose", results=[r])


def test_build_report_tags_and_encodes():
    rep = build_report(task="pose", results=[_result(model={"value": float("inf")})], reproducer=REPRO,
                       inputs=_inputs())
    assert rep["schema"] == "rfbench.report/1" and rep["evidence"] == "MEASURED"
    assert rep["results"][0]["model"]["value"] == "inf"  # valid, exact JSON
    assert validate_report(json.loads(dumps_json(rep)))["evidence"] == "MEASURED"
    claimed = build_report(task="pose", results=[_result()])
    assert claimed["evidence"] == "CLAIMED" and claimed["reproducer"] is None
    leaky = build_report(task="pose", results=[_result()], split={"protocol": "random", "leakage_prone": True})
    assert leaky["notes"][0].startswith("LEAKAGE-PRONE split (protocol random)")


def test_validate_report_refuses_a_measured_tag_without_hashes():
    rep = build_report(task="pose", results=[_result()], reproducer=REPRO, inputs=_inputs())
    rep["inputs"][0]["sha256"] = None
    with pytest.raises(FormatError, match="tagged MEASURED but pred: no sha256"):
        validate_report(rep)
    with pytest.raises(FormatError, match="schema"):
        validate_report({"task": "pose"})


# -- splits, ids and the baseline ----------------------------------------------------------------------


def test_split_with_failed_audit_or_shared_recording_is_refused(tmp_path):
    # a test recording copied onto the train side by hand: not what the protocol gives, and a leak
    bad = write_split(tmp_path / "bad.json", ["a"], ["b"], passed=False)
    with pytest.raises(LeakageError, match="not what its protocol gives.*listed on both sides") as info:
        sf.load_split(bad)
    assert info.value.exit_code == 1
    assert [c["name"] for c in info.value.checks][:2] == ["protocol-reproduces", "recordings-disjoint"]
    doc = json.loads(bad.read_text())
    assert doc["audit"]["passed"] is True  # the file still says so: it is not believed
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"schema": "rfbench.manifest/1"}))
    with pytest.raises(FormatError, match="not a split file"):
        sf.load_split(wrong)
    ok = sf.load_split(write_split(tmp_path / "ok.json", ["a"], ["b"], synthetic=True, leakage_prone=True))
    assert ok.synthetic and ok.leakage_prone and ok.train == {"a"}
    assert ok.protocol == "random" and ok.audit["passed"] is True


@pytest.mark.parametrize("side", ["train", "test"])
def test_a_split_listing_a_recording_twice_is_refused(tmp_path, side):
    """An id appended again to one side: the sides as sets are still the protocol's, so the split was scored and
    verified as MATCH, while its audit counted the copy ("32 train rows" of 31). rfbench lists each id once."""
    path = write_split(tmp_path / "s.json", ["a", "b"], ["c", "d"])
    doc = json.loads(path.read_text())
    doc[side].append(doc[side][0])
    path.write_text(json.dumps(doc))
    with pytest.raises(LeakageError, match=f"1 recording id\\(s\\) are listed again on the {side} side"):
        sf.load_split(path)


def test_split_flags_are_derived_not_read(tmp_path):
    """synthetic, leakage_prone, claims and audit in the file are ignored; the manifest and the protocol decide."""
    path = write_split(tmp_path / "s.json", ["a", "c"], ["b"], synthetic=True)
    doc = json.loads(path.read_text())
    doc.update(synthetic=False, leakage_prone=True, claims=[], audit={"passed": False, "checks": []})
    path.write_text(json.dumps(doc))
    info = sf.load_split(path)
    assert info.synthetic is True and info.leakage_prone is False
    assert "subject-disjoint" in [c["name"] for c in info.audit["checks"]]


def _split(tmp_path, **kw):
    return sf.load_split(write_split(tmp_path / "split.json", ["r1", "r2"], ["r3", "r4"], **kw))


def test_baseline_from_test_data_cannot_be_built(tmp_path):
    split = _split(tmp_path)
    train = coco_poses(6, seed=1)
    test_ids = np.array(["r3", "r4"])
    with pytest.raises(ValidationError, match="'r3' is on the split's test side.*training data only"):
        bl.mean_pose_baseline(train, np.array(["r1", "r3"] * 3), split, test_ids)
    with pytest.raises(ValidationError, match="'r9' is in neither side"):
        bl.mean_pose_baseline(train, np.array(["r1", "r9"] * 3), split, test_ids)
    with pytest.raises(ValidationError, match="scored rows must come from the test side"):
        bl.mean_pose_baseline(train, np.array(["r1", "r2"] * 3), split, np.array(["r3", "r1"]))
    with pytest.raises(ValidationError, match="needs a split"):
        bl.mean_pose_baseline(train, np.array(["r1", "r2"] * 3), None, test_ids)


def test_mean_pose_by_hand(tmp_path):
    split = _split(tmp_path)
    train = np.zeros((3, 17, 2))
    train[:, 0] = [[0.0, 0.0], [3.0, 6.0], [6.0, 0.0]]  # joint 0: mean (3, 2)
    vis = np.ones((3, 17), bool)
    vis[2, 0] = False  # ...but row 2's joint 0 is invisible: mean of (0,0) and (3,6) = (1.5, 3)
    vis[:, 5] = False  # joint 5 never visible: NaN
    b = bl.mean_pose_baseline(train, np.array(["r1", "r2", "r1"]), split, np.array(["r3"]), vis, ["j"] * 17)
    assert b.pose[0].tolist() == [1.5, 3.0] and np.isnan(b.pose[5]).all()
    assert b.train_rows == 3 and b.train_recordings == 2 and b.never_visible == ("j",)


def test_groups_accept_strings_and_integers(tmp_path):
    np.save(tmp_path / "s.npy", np.array(["r1", "r2"]))
    np.save(tmp_path / "i.npy", np.array([1, 2]))
    np.save(tmp_path / "f.npy", np.array([1.0, 2.0]))
    np.save(tmp_path / "o.npy", np.array(["a", None], dtype=object), allow_pickle=True)
    assert sf.load_groups(tmp_path / "s.npy", 2).tolist() == ["r1", "r2"]
    assert sf.load_groups(tmp_path / "i.npy", 2).tolist() == ["1", "2"]
    with pytest.raises(FormatError, match="dtype float64"):
        sf.load_groups(tmp_path / "f.npy", 2)
    with pytest.raises(FormatError, match="not a plain .npy"):
        sf.load_groups(tmp_path / "o.npy", 2)
    with pytest.raises(ValidationError, match="one recording id per row"):
        sf.load_groups(tmp_path / "s.npy", 3)


# -- pose reports through the API ----------------------------------------------------------------------


def _arrays(seed=0, n=30):
    rng = np.random.default_rng(seed)
    gt = coco_poses(n, seed=seed)
    pred = gt + rng.normal(scale=0.03, size=gt.shape)
    groups = np.array(["r3", "r4", "r4"] * (n // 3))
    return pred, gt, groups


def test_api_report_without_reproducer_is_claimed_and_has_no_baseline_without_split():
    pred, gt, groups = _arrays()
    rep = pose_report(pred, gt, skeleton="coco17", units="m", groups=groups, n_boot=50)
    assert rep["evidence"] == "CLAIMED" and rep["reproducer"] is None
    assert rep["baseline"]["kind"] is None and "no split given" in rep["baseline"]["reason"]
    assert all(r["baseline"] is None and r["delta"] is None for r in rep["results"])
    assert all(r["ci"]["model"]["low"] is not None for r in rep["results"])
    with pytest.raises(ValidationError, match="MEASURED was requested"):
        pose_report(pred, gt, skeleton="coco17", units="m", evidence="MEASURED")
    with pytest.raises(ValidationError, match="evidence is incomplete"):
        pose_report(pred, gt, skeleton="coco17", units="m", reproducer=REPRO, inputs=[{"role": "pred"}])


def test_api_report_with_baseline_and_paired_intervals(tmp_path):
    pred, gt, groups = _arrays()
    split = _split(tmp_path, leakage_prone=True)
    train = coco_poses(20, seed=9)
    train_groups = np.array(["r1", "r2"] * 10)
    rep = pose_report(pred, gt, skeleton="coco17", units="m", normalizations=["bbox"], ks=[0.1], split=split,
                      groups=groups, train_gt=train, train_groups=train_groups, n_boot=200, seed=3)
    r = next(x for x in rep["results"] if x["label"] == "MPJPE (m) coco17 micro")
    assert r["delta"] == pytest.approx(r["model"]["value"] - r["baseline"]["value"], abs=1e-15)
    assert r["ci"]["delta"]["low"] <= r["delta"] <= r["ci"]["delta"]["high"]
    assert rep["baseline"]["kind"] == "mean-pose" and rep["baseline"]["train_rows"] == 20
    assert rep["bootstrap"]["paired"] and rep["bootstrap"]["clusters"] == 2
    assert rep["split"]["leakage_prone"] is True
    assert any(n.startswith("LEAKAGE-PRONE") for n in rep["notes"])
    # The baseline predicts the mean training pose for every row: check MPJPE against NumPy directly.
    mean = train.mean(axis=0)
    assert r["baseline"]["value"] == pytest.approx(np.linalg.norm(gt - mean, axis=-1).mean(), rel=1e-12)
    # Rerunning gives the very same document (seeded bootstrap, deterministic kernels).
    again = pose_report(pred, gt, skeleton="coco17", units="m", normalizations=["bbox"], ks=[0.1], split=split,
                        groups=groups, train_gt=train, train_groups=train_groups, n_boot=200, seed=3)
    assert dumps_json(again) == dumps_json(rep)


def test_api_refuses_baseline_without_split_or_ids(tmp_path):
    pred, gt, groups = _arrays()
    train = coco_poses(4, seed=2)
    with pytest.raises(ValidationError, match="a baseline needs `split`"):
        pose_report(pred, gt, skeleton="coco17", units="m", train_gt=train, train_groups=np.array(["r1"] * 4))
    with pytest.raises(ValidationError, match="a split needs `groups`"):
        pose_report(pred, gt, skeleton="coco17", units="m", split=_split(tmp_path), train_gt=train,
                    train_groups=np.array(["r1"] * 4))
    with pytest.raises(ValidationError, match="r3.*test side"):
        pose_report(pred, gt, skeleton="coco17", units="m", split=_split(tmp_path), groups=groups, train_gt=train,
                    train_groups=np.array(["r1", "r3"] * 2))


def test_synthetic_split_tags_the_report(tmp_path):
    pred, gt, groups = _arrays()
    split = _split(tmp_path, synthetic=True)
    rep = pose_report(pred, gt, skeleton="coco17", units="m", split=split, groups=groups, n_boot=0)
    assert rep["evidence"] == "SYNTHETIC" and rep["bootstrap"]["method"] is None


def test_renderings_show_tag_warnings_and_labels(tmp_path):
    pred, gt, groups = _arrays()
    split = _split(tmp_path, leakage_prone=True)
    rep = pose_report(pred, gt, skeleton="coco17", units="m", split=split, groups=groups,
                      train_gt=coco_poses(8, seed=3), train_groups=np.array(["r1", "r2"] * 4), n_boot=20,
                      reproducer=REPRO, inputs=_inputs())
    md = render_markdown(rep)
    assert "**Evidence: MEASURED**" in md
    assert "> **Warning:** LEAKAGE-PRONE split" in md
    for r in rep["results"]:
        # labels appear with Markdown punctuation escaped: `_` and `<` would otherwise be emphasis and HTML
        escaped = r["label"]
        for ch, esc in (("_", "\\_"), ("*", "\\*"), ("|", "\\|"), ("[", "\\["), ("]", "\\]"), ("<", "&lt;")):
            escaped = escaped.replace(ch, esc)
        assert escaped in md, escaped
    assert "rfbench score --pred pred.npy" in md and SHA in md
    from rich.console import Console

    console = Console(record=True, width=250)
    console.print(render_terminal(rep))
    text = console.export_text()
    assert "Evidence: MEASURED" in text and "WARNING: LEAKAGE-PRONE" in text
    assert "PCK@0.20 torso(left_shoulder–right_hip) coco17 <= micro" in text


def test_split_line_names_what_was_held_out_and_the_gestures_kept(tmp_path):
    from rfbench.report.render import headline

    split = {"protocol": "cross-subject", "seed": 0, "params": {"domain": "subject", "test": ["user4"],
                                                                 "gestures": "common6"},
             "held_out": {"key": "subject", "values": ["user4"]}, "audit": {"passed": True, "checks": []},
             "train_recordings": 10, "test_recordings": 2}
    line = dict(headline({"split": split}))["Split"]
    assert line.startswith("protocol cross-subject (subject user4 held out), gestures common6, seed 0")
    assert "on both sides" not in line
    # what the protocol does not hold out, from the audit rfbench ran: the same rooms on both sides
    split["audit"]["shared"] = [{"key": "room", "shared": 3, "values": 3}, {"key": "date", "shared": 1, "values": 5}]
    assert dict(headline({"split": split}))["Split"].endswith(
        "2 test recordings; on both sides: room 3/3, date 1/5")
    split["params"]["gestures"] = ["Push&Pull", "Clap"]
    split["held_out"] = {"key": None, "values": []}  # in-domain: nothing held out
    assert dict(headline({"split": split}))["Split"].startswith("protocol cross-subject, gestures Push&Pull, Clap,")
    # the values come from the manifest: the Markdown rendering escapes them as it does every cell
    pred, gt, groups = _arrays()
    rep = pose_report(pred, gt, skeleton="coco17", units="m", split=_split(tmp_path), groups=groups, n_boot=0)
    rep["split"]["held_out"] = {"key": "subject", "values": ["a|b"]}
    assert "(subject a\\|b held out)" in render_markdown(rep)


def test_the_report_carries_what_the_split_shares_across_its_sides(tmp_path):
    """The split's audit lists the domains on both sides that its protocol does not claim (the report had only
    the checks): a cross-location split with every subject on both sides now says so in report.json and
    report.md."""
    rooms = {"r1": {"room": "A"}, "r2": {"room": "B"}, "r3": {"room": "A"}, "r4": {"room": "C"}}
    split = sf.load_split(write_split(tmp_path / "split.json", ["r1", "r2"], ["r3", "r4"], extra=rooms))
    pred, gt, groups = _arrays()
    rep = pose_report(pred, gt, skeleton="coco17", units="m", split=split, groups=groups, n_boot=0)
    assert rep["split"]["audit"]["shared"] == [{"key": "room", "shared": 1, "values": 3}]
    assert "; on both sides: room 1/3 |" in render_markdown(rep)
