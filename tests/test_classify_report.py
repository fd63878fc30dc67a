"""Gesture reports through the Python API (rfbench.report.gesture): baselines from the training split only,
the paired cluster bootstrap against an independent recomputation, the per-domain breakdown by hand, the
Widar label check, evidence and leakage tags in every rendering.

The small Widar-like data set below is shared with tests/test_score_gesture_cli.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rfbench.errors import LeakageError, ValidationError
from rfbench.io.files import dumps_json
from rfbench.metrics.stats import bootstrap_counts
from rfbench.protocols.splitfile import SplitInfo, load_split
from rfbench.report.gesture import gesture_report
from rfbench.report.render import render_markdown, render_terminal

#: Label set: Clap and Draw-N(Vertical) appear nowhere; Sweep is absent from training.
NAMES = ["Push&Pull", "Sweep", "Clap", "Slide", "Draw-O(Vertical)", "Draw-N(Vertical)"]
#: id: (date, subject, room, location, orientation, gesture number, gesture name from the per-date table)
RECORDINGS = {
    "r1": ("20181109", "user1", 1, 1, 1, 1, "Push&Pull"),
    "r2": ("20181109", "user1", 1, 2, 2, 4, "Slide"),
    "r3": ("20181115", "user2", 1, 1, 3, 4, "Draw-O(Vertical)"),  # gesture 4 is not Slide on this date
    "r4": ("20181117", "user2", 2, 3, 1, 1, "Push&Pull"),
    "r5": ("20181211", "user3", 3, 1, 1, 4, "Slide"),
    "r6": ("20181211", "user3", 3, 2, 2, 1, "Push&Pull"),
    "r7": ("20181211", "user4", 3, 1, 2, 2, "Sweep"),
}
TRAIN = ["r1", "r2", "r3", "r4"]
TEST = ["r5", "r6", "r7"]
ROWS = 3  # rows (windows) per recording
#: Model predictions per test recording (3 rows each).
PRED = {"r5": ["Slide", "Slide", "Push&Pull"], "r6": ["Push&Pull"] * 3, "r7": ["Slide", "Sweep", "Clap"]}


def manifest_doc():
    recs = []
    for rid, (date, subj, room, loc, ori, num, name) in RECORDINGS.items():
        recs.append({"id": rid, "date": date, "subject": subj, "room": room, "location": loc, "orientation": ori,
                     "gesture_number": num, "gesture": name, "files": [], "frames": 10})
    return {"schema": "rfbench.manifest/1", "dataset": "widar3", "root": ".", "problems": [], "recordings": recs}


def write_gesture_split(path, *, passed=True, leakage_prone=False, synthetic=False):
    """A real cross-room split (room 3 held out: r5, r6, r7 to test) of the manifest written beside it; or, with
    ``leakage_prone``, a ``random`` split with the first seed drawing the same sides. ``passed=False`` then
    copies a test recording onto the train side by hand (score refuses: not what the protocol gives)."""
    from rfbench.io.files import sha256_file
    from rfbench.protocols.split import make_splits

    path = Path(path)
    mpath = path.parent / "manifest.json"
    mpath.write_text(json.dumps(dict(manifest_doc(), synthetic=bool(synthetic))))
    ref = {"path": "manifest.json", "sha256": sha256_file(mpath)[0]}
    if leakage_prone:
        for seed in range(100_000):
            try:
                (out,) = make_splits(mpath, "random", manifest_ref=ref, seed=seed, allow_leaky=True,
                                     test_fraction=3 / 7)
            except ValidationError:  # a draw whose test side holds no training class is refused: draw again
                continue
            if out.document["test"] == TEST:
                break
    else:
        (out,) = make_splits(mpath, "cross-room", manifest_ref=ref, test=[3])
    doc = out.document
    assert doc["train"] == TRAIN and doc["test"] == TEST, doc
    if not passed:
        doc = dict(doc, train=sorted(TRAIN + ["r5"]))
    path.write_text(json.dumps(doc))
    return path


def arrays():
    """(pred, gt, groups, train_gt, train_groups) as NumPy arrays of names and ids."""
    groups = np.repeat(TEST, ROWS)
    gt = np.array([RECORDINGS[g][6] for g in groups])
    pred = np.array([p for g in TEST for p in PRED[g]])
    train_groups = np.repeat(TRAIN, ROWS)
    train_gt = np.array([RECORDINGS[g][6] for g in train_groups])
    return pred, gt, groups, train_gt, train_groups


def gesture_files(folder, *, with_manifest=True, **split_kw):
    """Write every input of a gesture run into ``folder``; return their paths."""
    folder = Path(folder)
    paths = {}
    pred, gt, groups, train_gt, train_groups = arrays()
    for name, arr in (("pred", pred), ("gt", gt), ("groups", groups), ("train_gt", train_gt),
                      ("train_groups", train_groups)):
        paths[name] = folder / f"{name}.npy"
        np.save(paths[name], arr)
    paths["names"] = folder / "names.txt"
    paths["names"].write_text("\n".join(NAMES) + "\n", encoding="utf-8")
    paths["split"] = write_gesture_split(folder / "split.json", **split_kw)
    paths["manifest"] = folder / "manifest.json"
    if not with_manifest:
        paths["manifest"].unlink()
    return paths


def recordings():
    return {r["id"]: r for r in manifest_doc()["recordings"]}


def _report(tmp_path, **kw):
    pred, gt, groups, train_gt, train_groups = arrays()
    split = load_split(write_gesture_split(tmp_path / "split.json", **kw.pop("split_kw", {})))
    args = dict(labels=NAMES, split=split, groups=groups, train_gt=train_gt, train_groups=train_groups,
                recordings=recordings(), n_boot=300, seed=2)
    args.update(kw)
    return gesture_report(pred, gt, **args)


def _result(rep, metric):
    return next(r for r in rep["results"] if r["metric"] == metric)


# -- numbers by hand -------------------------------------------------------------------------------------


def test_model_and_baselines_by_hand(tmp_path):
    rep = _report(tmp_path)
    # Model: correct rows r5 2, r6 3, r7 1 -> 6/9. Per class (tp / support / predicted): Push&Pull 3/3/4,
    # Sweep 1/3/1, Clap 0/0/1, Slide 2/3/3 -> F1 = 2tp/(support+predicted) = 6/7, 1/2, 0, 2/3; macro-F1 over
    # those four = (6/7 + 1/2 + 0 + 2/3)/4 = 85/168; balanced accuracy = (3/3 + 1/3 + 2/3)/3 = 2/3.
    acc = _result(rep, "accuracy")
    assert acc["model"]["value"] == pytest.approx(6 / 9)
    assert _result(rep, "macro-f1")["model"]["value"] == pytest.approx(85 / 168)
    assert _result(rep, "balanced-accuracy")["model"]["value"] == pytest.approx(2 / 3)
    # Majority class: training counts Push&Pull 6, Slide 3, Draw-O(Vertical) 3 -> always Push&Pull: 3/9 right.
    assert rep["baseline"]["majority_class"] == "Push&Pull"
    assert acc["baseline"] == {**acc["baseline"], "kind": "majority-class", "value": pytest.approx(3 / 9)}
    assert acc["delta"] == pytest.approx(6 / 9 - 3 / 9)
    # Class prior (6/12, 0, 0, 3/12, 3/12, 0): expected accuracy = (3*6/12 + 3*0 + 3*3/12) / 9 = 0.25.
    prior = next(b for b in acc["baselines"] if b["kind"] == "class-prior")
    assert prior["value"] == pytest.approx(0.25) and prior["delta"] == pytest.approx(6 / 9 - 0.25)
    assert rep["baseline"]["classes_absent_from_training"] == ["Sweep", "Clap", "Draw-N(Vertical)"]
    # Declared classes are reported even when nothing shows them.
    classes = {c["class"]: c for c in rep["classes"]}
    assert classes["Draw-N(Vertical)"] == {"class": "Draw-N(Vertical)", "index": 5, "support": 0, "predicted": 0,
                                          "tp": 0, "precision": None, "recall": None, "f1": None, "train": 0}
    assert classes["Clap"]["f1"] == 0.0 and classes["Clap"]["precision"] == 0.0 and classes["Clap"]["recall"] is None
    assert rep["labels"]["absent_from_test_and_predictions"] == ["Draw-O(Vertical)", "Draw-N(Vertical)"]
    assert rep["labels"]["absent_from_training_and_test"] == ["Clap", "Draw-N(Vertical)"]
    assert any("neither the training nor the test labels (Clap, Draw-N(Vertical))" in n for n in rep["notes"])
    assert rep["confusion"]["matrix"][3] == [1, 0, 0, 2, 0, 0]  # Slide rows: 2 right, 1 taken for Push&Pull


def test_per_domain_breakdown_by_hand(tmp_path):
    rep = _report(tmp_path)
    keys = {b["key"]: b for b in rep["domains"]["keys"]}
    assert list(keys) == ["room", "location", "orientation", "subject"]
    room = keys["room"]
    assert room["held_out"] is True and [v["value"] for v in room["values"]] == [3]
    assert room["values"][0]["held_out"] is True and room["values"][0]["model"]["accuracy"] == pytest.approx(6 / 9)
    loc = {v["value"]: v for v in keys["location"]["values"]}
    assert keys["location"]["held_out"] is False and not loc[1]["held_out"]
    # Location 1 = r5 + r7 (6 rows): right 2 + 1 -> 1/2. Classes: Slide tp 2 sup 3 pred 3 (F1 2/3), Sweep 1/3/1
    # (1/2), Push&Pull 0/0/1 (0), Clap 0/0/1 (0) -> macro-F1 (2/3 + 1/2)/4 = 7/24.
    assert (loc[1]["rows"], loc[1]["recordings"]) == (6, 2)
    assert loc[1]["model"]["accuracy"] == pytest.approx(0.5)
    assert loc[1]["model"]["macro_f1"] == pytest.approx(7 / 24) and loc[1]["model"]["classes_averaged"] == 4
    # Location 2 = r6, all Push&Pull and all right; the majority class (Push&Pull) is right there too.
    assert loc[2]["model"] == {"accuracy": 1.0, "macro_f1": 1.0, "classes_averaged": 1}
    assert loc[2]["majority-class"]["accuracy"] == 1.0 and loc[1]["majority-class"]["accuracy"] == 0.0
    subj = {v["value"]: v for v in keys["subject"]["values"]}
    assert subj["user4"]["model"]["accuracy"] == pytest.approx(1 / 3)
    # A recording without the key: its rows are counted apart. r5 has no orientation, so orientation 2 holds
    # r6 and r7 only: right 3 + 1 of 6.
    recs = recordings()
    del recs["r5"]["orientation"]
    rep = _report(tmp_path, recordings=recs, domains=["orientation"], n_boot=0)
    (ori,) = rep["domains"]["keys"]
    assert ori["rows_without_value"] == 3 and [v["value"] for v in ori["values"]] == [2]
    assert ori["values"][0]["model"]["accuracy"] == pytest.approx(4 / 6) and ori["values"][0]["recordings"] == 2
    with pytest.raises(ValidationError, match="unknown domain key 'date'"):
        _report(tmp_path, domains=["date"])
    with pytest.raises(ValidationError, match="needs the split's manifest"):
        _report(tmp_path, domains=["room"], recordings=None)
    assert _report(tmp_path, domains="none", n_boot=0)["domains"]["keys"] == []


def test_paired_bootstrap_matches_an_independent_recomputation(tmp_path):
    rep = _report(tmp_path, n_boot=400, seed=7)
    acc = _result(rep, "accuracy")
    # Clusters in sorted id order r5, r6, r7: model right 2, 3, 1 and majority (Push&Pull) right 0, 3, 0 of 3.
    model_hits, base_hits, rows = np.array([2, 3, 1.0]), np.array([0, 3, 0.0]), np.array([3, 3, 3.0])
    counts = np.vstack(list(bootstrap_counts(3, 400, seed=7)))
    m = counts @ model_hits / (counts @ rows)
    b = counts @ base_hits / (counts @ rows)
    for key, values in (("model", m), ("baseline", b), ("delta", m - b)):
        low, high = np.quantile(values, [0.025, 0.975], method="inverted_cdf")
        assert acc["ci"][key]["low"] == pytest.approx(low, abs=1e-12)
        assert acc["ci"][key]["high"] == pytest.approx(high, abs=1e-12)
    assert rep["bootstrap"]["paired"] is True and rep["bootstrap"]["clusters"] == 3
    prior = next(x for x in acc["baselines"] if x["kind"] == "class-prior")
    assert prior["ci"]["delta"]["low"] <= prior["delta"] <= prior["ci"]["delta"]["high"]
    # Same inputs and seed: the same document, bit for bit.
    assert dumps_json(_report(tmp_path, n_boot=400, seed=7)) == dumps_json(rep)


def test_the_majority_baseline_breaks_ties_by_name_not_by_the_label_set_s_order(tmp_path):
    """Slide and Draw-O(Vertical) are tied in training: the majority scorer's second class was the one the label
    set listed first, so a label-set file could choose, among tied classes, the one rarest on the test side — the
    weakest baseline beside the model (found by an adversarial probe). Any order of the same names gives the same
    baseline now."""
    pred, gt, groups, train_gt, train_groups = arrays()
    split = load_split(write_gesture_split(tmp_path / "split.json"))
    values = []
    for names in (NAMES, NAMES[::-1], sorted(NAMES, key=len)):
        idx = {n: i for i, n in enumerate(names)}
        scores = np.zeros((gt.size, len(names)))
        scores[np.arange(gt.size), [idx[p] for p in pred]] = 1.0
        rep = gesture_report(scores, gt, labels=list(names), split=split, groups=groups, train_gt=train_gt,
                             train_groups=train_groups, top_k=[2], n_boot=0)
        (top2,) = (r for r in rep["results"] if r["metric"] == "top-k")
        values.append(top2["baseline"]["value"])
        assert rep["baseline"]["majority_class"] == "Push&Pull"
    assert values == [pytest.approx(3 / 9)] * 3


def test_top_k_with_scores_and_the_prior_baseline_has_none(tmp_path):
    pred, gt, groups, train_gt, train_groups = arrays()
    idx = {n: i for i, n in enumerate(NAMES)}
    scores = np.zeros((gt.size, len(NAMES)))
    scores[np.arange(gt.size), [idx[p] for p in pred]] = 2.0
    scores[np.arange(gt.size), [idx[t] for t in gt]] += 1.0  # true class second (or first when right)
    split = load_split(write_gesture_split(tmp_path / "split.json"))
    rep = gesture_report(scores, gt, labels=NAMES, split=split, groups=groups, train_gt=train_gt,
                         train_groups=train_groups, top_k=[1, 2], n_boot=50)
    top1, top2 = (r for r in rep["results"] if r["metric"] == "top-k")
    assert top1["model"]["value"] == pytest.approx(6 / 9) and top2["model"]["value"] == 1.0
    # Majority scorer ranks by training frequency, ties by name: Push&Pull, then Draw-O(V) and Slide (tied: by
    # name, never by the label set's order), then Clap, Draw-N, Sweep.
    assert top2["baseline"]["value"] == pytest.approx(3 / 9)  # Push&Pull rows (Slide is third)
    prior = next(b for b in top2["baselines"] if b["kind"] == "class-prior")
    assert prior["value"] is None and prior["delta"] is None and "no ranking" in prior["reason"]


# -- baselines only from the training split -----------------------------------------------------------------


def test_a_baseline_from_test_labels_cannot_be_built(tmp_path):
    pred, gt, groups, train_gt, train_groups = arrays()
    split = load_split(write_gesture_split(tmp_path / "split.json"))
    with pytest.raises(ValidationError, match="a baseline needs `split`"):
        gesture_report(pred, gt, labels=NAMES, groups=groups, train_gt=gt, train_groups=groups)
    with pytest.raises(ValidationError, match="'r5' is on the split's test side.*training data only"):
        gesture_report(pred, gt, labels=NAMES, split=split, groups=groups, train_gt=gt, train_groups=groups)
    with pytest.raises(ValidationError, match="scored rows must come from the test side"):
        gesture_report(pred, gt, labels=NAMES, split=split, groups=np.repeat(["r5", "r1", "r7"], 3),
                       train_gt=train_gt, train_groups=train_groups, recordings=None)
    with pytest.raises(ValidationError, match="a split needs `groups`"):
        gesture_report(pred, gt, labels=NAMES, split=split, train_gt=train_gt, train_groups=train_groups)
    with pytest.raises(ValidationError, match="both `train_gt` and `train_groups`"):
        gesture_report(pred, gt, labels=NAMES, split=split, groups=groups, train_gt=train_gt)
    # A hand-made SplitInfo that puts the test recordings on both sides, or skips the audit, is refused too.
    forged = SplitInfo(frozenset(TRAIN + TEST), frozenset(TEST), "cross-room", 0, {}, False, {"passed": True}, False,
                       None)
    with pytest.raises(LeakageError, match="on both sides"):
        gesture_report(pred, gt, labels=NAMES, split=forged, groups=groups, train_gt=gt, train_groups=groups)
    unaudited = SplitInfo(frozenset(TRAIN), frozenset(TEST), "cross-room", 0, {}, False, {"passed": False}, False,
                          None)
    with pytest.raises(LeakageError, match="audit did not pass"):
        gesture_report(pred, gt, labels=NAMES, split=unaudited, groups=groups, train_gt=train_gt,
                       train_groups=train_groups)
    with pytest.raises(LeakageError, match="not what its protocol gives"):
        load_split(write_gesture_split(tmp_path / "bad.json", passed=False))


def test_without_a_split_there_is_no_baseline_and_the_report_is_claimed():
    pred, gt, groups, _, _ = arrays()
    rep = gesture_report(pred, gt, labels=NAMES, groups=groups, n_boot=20)
    assert rep["evidence"] == "CLAIMED" and rep["reproducer"] is None
    assert rep["baseline"]["kind"] is None and "no split given" in rep["baseline"]["reason"]
    assert all(r["baseline"] is None and r["delta"] is None and r["baselines"] == [] for r in rep["results"])
    assert rep["domains"]["keys"] == [] and "no split given" in rep["domains"]["reason"]
    with pytest.raises(ValidationError, match="MEASURED was requested"):
        gesture_report(pred, gt, labels=NAMES, evidence="MEASURED")
    rep = gesture_report(pred, gt, labels=NAMES, n_boot=20)
    assert "--groups" in rep["bootstrap"]["reason"]


# -- labels checked against the manifest (Widar gesture names per date) --------------------------------------


def test_labels_must_match_the_manifests_gesture_names(tmp_path):
    pred, gt, groups, train_gt, train_groups = arrays()
    split = load_split(write_gesture_split(tmp_path / "split.json"))
    rep = gesture_report(pred, gt, labels=NAMES, split=split, groups=groups, train_gt=train_gt,
                         train_groups=train_groups, recordings=recordings(), n_boot=0)
    assert rep["labels"]["checked_against_manifest"] == "gesture"
    # Gesture 4 read with 20181109's table for every date: r3 (20181115) becomes Slide, but it is Draw-O(Vertical).
    wrong_train = train_gt.copy()
    wrong_train[train_groups == "r3"] = "Slide"
    with pytest.raises(ValidationError, match=r"`train_gt`: 3 row\(s\) disagree with the manifest, e.g. row 6 is "
                                              r"labelled 'Slide' but recording 'r3' is 'Draw-O\(Vertical\)' \(gesture "
                                              r"number 4 on 20181115\)"):
        gesture_report(pred, gt, labels=NAMES, split=split, groups=groups, train_gt=wrong_train,
                       train_groups=train_groups, recordings=recordings(), n_boot=0)
    wrong = gt.copy()
    wrong[0] = "Sweep"
    with pytest.raises(ValidationError, match="`gt`: 1 row"):
        gesture_report(pred, wrong, labels=NAMES, split=split, groups=groups, recordings=recordings(), n_boot=0)
    short = [n for n in NAMES if n != "Draw-O(Vertical)"]
    with pytest.raises(ValidationError, match="not in the label set"):
        gesture_report(pred, gt, labels=short, split=split, groups=groups, train_gt=train_gt,
                       train_groups=train_groups, recordings=recordings(), n_boot=0)


def test_subject_clusters_come_from_the_manifest(tmp_path):
    rep = _report(tmp_path, cluster_by="subject", n_boot=50)
    assert rep["bootstrap"]["cluster_by"] == "subject" and rep["bootstrap"]["clusters"] == 2  # user3, user4


# -- tags in every rendering --------------------------------------------------------------------------------


def test_leakage_prone_split_is_tagged_in_json_markdown_and_terminal(tmp_path):
    rep = _report(tmp_path, split_kw={"leakage_prone": True}, n_boot=20,
                  reproducer={"argv": ["rfbench", "score", "--task", "gesture"], "cwd": str(tmp_path)},
                  inputs=[{"role": "pred", "path": "pred.npy", "bytes": 1, "sha256": "b" * 64, "option": "--pred"}])
    assert rep["evidence"] == "MEASURED"
    assert rep["split"]["leakage_prone"] is True and rep["notes"][0].startswith("LEAKAGE-PRONE split (protocol random)")
    md = render_markdown(rep)
    assert "> **Warning:** LEAKAGE-PRONE split (protocol random)" in md and "**Evidence: MEASURED**" in md
    for r in rep["results"]:
        assert r["label"] in md
    assert "## Per domain" in md and "## Confusion matrix" in md and "| Draw-N(Vertical) | 0 | 0 | 0 |" in md
    from rich.console import Console

    console = Console(record=True, width=250)
    console.print(render_terminal(rep))
    text = console.export_text()
    assert "WARNING: LEAKAGE-PRONE split (protocol random)" in text and "Evidence: MEASURED" in text
    assert "accuracy (6 classes, declared)" in text
    assert "(held out)" not in text  # a random split holds no room out, whatever room the test side has


def test_synthetic_split_tags_the_report(tmp_path):
    rep = _report(tmp_path, split_kw={"synthetic": True}, n_boot=0)
    assert rep["evidence"] == "SYNTHETIC" and rep["bootstrap"]["method"] is None
    assert "SYNTHETIC" in render_markdown(rep)


def test_a_test_side_of_one_class_is_named_in_the_notes():
    """A constant model scores 1.0 on a test side of one class; the report must not let that pass as skill."""
    one = gesture_report(np.array(["b", "b", "b"]), np.array(["b", "b", "b"]), labels=["a", "b"], n_boot=0)
    assert one["results"][0]["model"]["value"] == 1.0
    assert any(n.startswith("every scored row is of one class (b)") for n in one["notes"])
    two = gesture_report(np.array(["b", "b", "b"]), np.array(["a", "b", "b"]), labels=["a", "b"], n_boot=0)
    assert not any("of one class" in n for n in two["notes"])


def test_test_rows_of_a_class_absent_from_training_are_a_warning(tmp_path):
    """Sweep (r7's 3 of the 9 test rows) has no training row: a closed-set model cannot have learnt it. The
    report said so only in the baseline line's parenthesis; a protocol whose held-out key follows the class
    (most test rows of unseen classes) read like any other."""
    rep = _report(tmp_path)
    (note,) = [n for n in rep["notes"] if n.startswith("UNSEEN CLASSES SCORED")]
    assert note.startswith("UNSEEN CLASSES SCORED: 3 of 9 scored rows (33.3%) are of class(es) absent from the "
                           "training side (Sweep): ")
    md = render_markdown(rep)
    assert "> **Warning:** UNSEEN CLASSES SCORED: 3 of 9 scored rows" in md
    from rich.console import Console

    console = Console(width=300, record=True)
    console.print(render_terminal(rep))
    assert "WARNING: UNSEEN CLASSES SCORED: 3 of 9" in console.export_text()
    pred, gt, groups, train_gt, train_groups = arrays()
    keep = groups != "r7"  # the test rows of classes training holds: no warning
    (tmp_path / "seen").mkdir()
    seen = gesture_report(pred[keep], gt[keep], labels=NAMES, groups=groups[keep], train_gt=train_gt,
                          train_groups=train_groups, recordings=recordings(), n_boot=0,
                          split=load_split(write_gesture_split(tmp_path / "seen" / "split.json")),
                          allow_partial=True)
    assert not any(n.startswith("UNSEEN CLASSES SCORED") for n in seen["notes"])


def test_ground_truth_is_checked_against_the_manifests_own_label(tmp_path):
    """A template corpus's class is its recordings' 'label' (from the field --label names, here 'g'): supplied
    ground truth was checked only against 'gesture' or 'action', so all-zero files scored 1.000 unchecked."""
    pred, gt, groups, train_gt, train_groups = arrays()
    recs = {rid: {"id": rid, "label": r[6], "subject": r[1]} for rid, r in recordings().items()
            for r in [RECORDINGS[rid]]}
    wrong = np.full(gt.shape, "Push&Pull")
    with pytest.raises(ValidationError, match="row\\(s\\) disagree with the manifest.*manifest's label names"):
        gesture_report(wrong, wrong, labels=NAMES, groups=groups, recordings=recs, n_boot=0)
    rep = gesture_report(pred, gt, labels=NAMES, groups=groups, recordings=recs, n_boot=0)
    assert rep["labels"]["checked_against_manifest"] == "label"
