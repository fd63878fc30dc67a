"""``rfbench score --task gesture`` as a user runs it: reports, verification, refusals, exit codes, one-line
errors, and a synthetic Widar3.0 tree from ingest to verify."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from rfbench.cli import app
from test_classify_report import NAMES, gesture_files, write_gesture_split
from test_score_cli import one_error_line, run

BASE = ["score", "--task", "gesture", "--pred", "pred.npy", "--gt", "gt.npy", "--label-set", "names.txt",
        "--bootstrap", "100"]
BASELINE = ["--split", "split.json", "--groups", "groups.npy", "--train-gt", "train_gt.npy", "--train-groups",
            "train_groups.npy"]


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return gesture_files(tmp_path)


def test_full_run_writes_a_measured_report_that_verifies(runner, files, tmp_path):
    result = run(runner, BASE + BASELINE + ["-o", "out/report.json"])
    assert result.exit_code == 0, result.output
    assert "Evidence: MEASURED" in result.output and "rfbench verify out/report.json" in result.output
    assert "room" in result.output and "3 (held out)" in result.output
    rep = json.loads((tmp_path / "out" / "report.json").read_text())
    assert rep["task"] == "gesture" and rep["evidence"] == "MEASURED"
    assert rep["reproducer"]["argv"][:4] == ["rfbench", "score", "--task", "gesture"]
    roles = {i["role"]: i for i in rep["inputs"]}
    assert set(roles) == {"pred", "gt", "label-set", "split", "groups", "train-gt", "train-groups", "manifest"}
    for i in roles.values():
        data = (tmp_path / "out" / i["path"]).read_bytes()
        assert i["sha256"] == hashlib.sha256(data).hexdigest() and i["bytes"] == len(data)
    assert rep["labels"]["names"] == NAMES and rep["labels"]["checked_against_manifest"] == "gesture"
    assert rep["baseline"]["kinds"] == ["majority-class", "class-prior"]
    assert [r["metric"] for r in rep["results"]] == ["accuracy", "balanced-accuracy", "macro-f1", "weighted-f1"]
    assert all(r["ci"]["delta"] is not None for r in rep["results"])
    md = (tmp_path / "out" / "report.md").read_text()
    assert "**Evidence: MEASURED**" in md and "accuracy (6 classes, declared)" in md
    # verify re-runs it: a match; then a tampered number and a changed label set are caught.
    result = run(runner, ["verify", "out/report.json", "--root", "."])
    assert result.exit_code == 0, result.output
    assert "MATCH" in result.output
    rep["domains"]["keys"][0]["values"][0]["model"]["accuracy"] = 0.9
    (tmp_path / "out" / "report.json").write_text(json.dumps(rep))
    result = run(runner, ["verify", "out/report.json", "--root", "."])
    assert result.exit_code == 1 and "domains.keys[0].values[0].model.accuracy" in result.output
    (tmp_path / "names.txt").write_text("\n".join(reversed(NAMES)) + "\n")
    result = run(runner, ["verify", "out/report.json", "--root", "."])
    assert result.exit_code == 1 and "inputs[label-set]" in result.output


def test_json_without_split_has_no_baseline(runner, files):
    result = run(runner, BASE + ["--json"])
    assert result.exit_code == 0, result.output
    rep = json.loads(result.stdout)
    assert rep["baseline"]["kind"] is None and "no split given" in rep["baseline"]["reason"]
    assert rep["results"][0]["model"]["value"] == pytest.approx(6 / 9)


def test_integer_labels_map_to_names_through_the_label_set(runner, files, tmp_path):
    named = json.loads(run(runner, BASE + BASELINE + ["--json"]).stdout)
    idx = {n: i for i, n in enumerate(NAMES)}
    for name in ("pred", "gt", "train_gt"):
        arr = np.load(tmp_path / f"{name}.npy")
        np.save(tmp_path / f"{name}.npy", np.array([idx[x] for x in arr], dtype=np.int32))
    result = run(runner, BASE + BASELINE + ["--json"])
    assert result.exit_code == 0, result.output
    numbered = json.loads(result.stdout)
    assert numbered["results"] == named["results"] and numbered["confusion"] == named["confusion"]
    assert numbered["domains"] == named["domains"]


def test_scores_give_top_k(runner, files, tmp_path):
    gt = np.load(tmp_path / "gt.npy")
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(gt.size, len(NAMES)))
    np.save(tmp_path / "scores.npy", scores)
    args = [a if a != "pred.npy" else "scores.npy" for a in BASE] + BASELINE + ["--top-k", "1,2", "--json"]
    result = run(runner, args)
    assert result.exit_code == 0, result.output
    rep = json.loads(result.stdout)
    topk = [r for r in rep["results"] if r["metric"] == "top-k"]
    assert [r["spec"]["k"] for r in topk] == [1, 2]
    idx = {n: i for i, n in enumerate(NAMES)}
    true = np.array([idx[x] for x in gt])
    order = np.argsort(-scores, axis=1, kind="stable")  # no ties in normal draws
    assert topk[1]["model"]["value"] == pytest.approx((order[:, :2] == true[:, None]).any(axis=1).mean())
    assert topk[0]["model"]["value"] == rep["results"][0]["model"]["value"]
    assert "scores" in rep["data"]["predictions"]


def _save(tmp_path, name, arr):
    np.save(tmp_path / name, arr)
    return name


@pytest.mark.parametrize("case,message", [
    ("unknown-label", "predictions: 1 label(s) not in the label set (e.g. 'Wave')"),
    ("length", "predictions have 8 rows but the ground truth has 9"),
    ("nan-scores", "scores hold NaN at 1 place(s), first at row 2 class 4"),
    ("scores-columns", "scores have shape (9, 5) but the ground truth has 9 rows and the label set 6 classes"),
    ("int-without-label-set", "integer labels need a declared label set"),
    ("index-out-of-range", "ground truth: label index 6 is outside the label set's 0..5"),
    ("float-labels", "found floats"),
    ("top-k-without-scores", "top-k accuracy needs scores"),
    ("top-k-too-large", "k = 7 is outside 1..6"),
    ("pose-option", "--vis applies to --task pose only"),
    ("skeleton", "--skeleton applies to --task pose only"),
    ("domain-key", "unknown domain key 'user'"),
    ("duplicate-name", "class 'Sweep' appears twice in the label set"),
    # composed and decomposed é: two classes every table showed alike
    ("names-alike", "classes 'lev\u00e9' and 'leve\u0301' read as one name"),
    ("missing-label-set", "--label-set nothing.txt: no such file"),
    ("groups-length", "--groups: expected one recording id per row (9 rows)"),
    ("train-from-test", "'r5' is on the split's test side"),
    ("label-vs-manifest", "1 row(s) disagree with the manifest"),
    ("metric", "--metrics: 'f1' is not one of accuracy"),
])
def test_bad_input_is_one_line_and_exit_2(runner, files, tmp_path, case, message):
    args = list(BASE) + list(BASELINE)
    swap = {}
    gt = np.load(tmp_path / "gt.npy")
    pred = np.load(tmp_path / "pred.npy")
    if case == "unknown-label":
        bad = pred.copy()
        bad[1] = "Wave"
        swap["--pred"] = _save(tmp_path, "p2.npy", bad)
    elif case == "length":
        swap["--pred"] = _save(tmp_path, "p2.npy", pred[:-1])
    elif case == "nan-scores":
        scores = np.zeros((9, 6))
        scores[2, 4] = np.nan
        swap["--pred"] = _save(tmp_path, "s.npy", scores)
    elif case == "scores-columns":
        swap["--pred"] = _save(tmp_path, "s.npy", np.zeros((9, 5)))
    elif case == "int-without-label-set":
        i = args.index("--label-set")
        del args[i:i + 2]
        swap["--gt"] = _save(tmp_path, "g2.npy", np.arange(9) % 3)
        args = [a for a in args if a not in BASELINE]
    elif case == "index-out-of-range":
        swap["--gt"] = _save(tmp_path, "g2.npy", np.array([0, 1, 2, 3, 4, 5, 6, 0, 0]))
        args = [a for a in args if a not in BASELINE]
    elif case == "float-labels":
        swap["--gt"] = _save(tmp_path, "g2.npy", np.arange(9.0))
    elif case == "top-k-without-scores":
        args += ["--top-k", "2"]
    elif case == "top-k-too-large":
        swap["--pred"] = _save(tmp_path, "s.npy", np.zeros((9, 6)))
        args += ["--top-k", "3,7"]
    elif case == "pose-option":
        args += ["--vis", "gt.npy"]
    elif case == "skeleton":
        args += ["--skeleton", "coco17"]
    elif case == "domain-key":
        args += ["--domains", "room,user"]
    elif case == "duplicate-name":
        (tmp_path / "dup.txt").write_text("Sweep\nClap\nSweep\n")
        swap["--label-set"] = "dup.txt"
    elif case == "names-alike":
        (tmp_path / "alike.txt").write_text("lev\u00e9\nClap\nleve\u0301\n", encoding="utf-8")
        swap["--label-set"] = "alike.txt"
    elif case == "missing-label-set":
        swap["--label-set"] = "nothing.txt"
    elif case == "groups-length":
        swap["--groups"] = _save(tmp_path, "g3.npy", np.array(["r5"] * 8))
    elif case == "train-from-test":
        swap["--train-gt"] = "gt.npy"
        swap["--train-groups"] = "groups.npy"
    elif case == "label-vs-manifest":
        bad = gt.copy()
        bad[4] = "Slide"  # a row of recording r6 (Push&Pull)
        swap["--gt"] = _save(tmp_path, "g2.npy", bad)
    elif case == "metric":
        args += ["--metrics", "accuracy,f1"]
    for opt, val in swap.items():
        args[args.index(opt) + 1] = val
    result = run(runner, args + ["-o", "report.json"])
    assert result.exit_code == 2, result.output
    assert message in one_error_line(result).replace("\n", " ")
    assert not (tmp_path / "report.json").exists() and not (tmp_path / "report.md").exists()


def test_gesture_options_are_refused_for_pose(runner, files):
    result = run(runner, ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--skeleton", "coco17", "--units", "m",
                          "--label-set", "names.txt"])
    assert result.exit_code == 2 and "--label-set applies to --task gesture only" in one_error_line(result)
    result = run(runner, ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--units", "m"])
    assert result.exit_code == 2 and "--task pose needs --skeleton" in one_error_line(result)


def test_failed_audit_is_exit_1_and_writes_nothing(runner, files, tmp_path):
    write_gesture_split(tmp_path / "split.json", passed=False)
    result = run(runner, BASE + BASELINE + ["-o", "report.json"])
    assert result.exit_code == 1, result.output
    assert "not what its protocol gives" in one_error_line(result)
    assert not (tmp_path / "report.json").exists()


def test_leakage_prone_split_is_tagged_everywhere(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    gesture_files(tmp_path, leakage_prone=True)
    result = run(runner, BASE + BASELINE + ["-o", "report.json"])
    assert result.exit_code == 0, result.output
    assert "WARNING: LEAKAGE-PRONE split (protocol random)" in result.output
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["split"]["leakage_prone"] is True and rep["notes"][0].startswith("LEAKAGE-PRONE")
    assert "> **Warning:** LEAKAGE-PRONE split (protocol random)" in (tmp_path / "report.md").read_text()
    result = run(runner, BASE + BASELINE + ["--json"])
    assert json.loads(result.stdout)["notes"][0].startswith("LEAKAGE-PRONE")


def test_a_split_without_its_manifest_is_not_scored(runner, tmp_path, monkeypatch):
    """The split is recomputed from its manifest: without the manifest there is nothing to check it against."""
    monkeypatch.chdir(tmp_path)
    gesture_files(tmp_path, with_manifest=False)
    result = run(runner, BASE + BASELINE + ["--json"])
    assert result.exit_code == 2, result.output
    assert "manifest.json: no such file" in one_error_line(result)
    result = run(runner, BASE + ["--domains", "none", "--json"])  # no split: scored without breakdown
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["domains"]["reason"] == "turned off (--domains none)"


def test_existing_output_needs_force(runner, files, tmp_path):
    (tmp_path / "report.json").write_text("keep me")
    result = run(runner, BASE + ["-o", "report.json"])
    assert result.exit_code == 2 and "already exists" in one_error_line(result)
    assert (tmp_path / "report.json").read_text() == "keep me"


def test_widar_tree_from_ingest_to_verify(runner, tmp_path, monkeypatch):
    """A synthetic Widar3.0 tree: ingest names gestures per date; labels taken from the manifest score and
    verify; the report is SYNTHETIC and broken down by the held-out room."""
    from rfbench.datasets.synthetic import make_widar_tree
    from rfbench.datasets.widar import GESTURE_NAMES

    monkeypatch.chdir(tmp_path)
    make_widar_tree(tmp_path / "widar", seed=1, damage=False, records=(4, 6))
    assert run(runner, ["ingest", "widar", "widar", "-o", "widar.json"]).exit_code == 0
    result = run(runner, ["split", "widar.json", "--protocol", "cross-room", "--test", "3", "-o", "split.json"])
    assert result.exit_code == 0, result.output
    man = {r["id"]: r for r in json.loads((tmp_path / "widar.json").read_text())["recordings"]}
    split = json.loads((tmp_path / "split.json").read_text())
    names = sorted({n for v in GESTURE_NAMES.values() for n in v})
    (tmp_path / "names.txt").write_text("\n".join(names) + "\n")
    test_ids = [i for i in split["test"] if man[i]["gesture"]]
    train_ids = [i for i in split["train"] if man[i]["gesture"]]
    gt = np.array([man[i]["gesture"] for i in test_ids])
    np.save(tmp_path / "gt.npy", gt)
    np.save(tmp_path / "pred.npy", np.where(np.arange(gt.size) % 3 == 0, "Clap", gt))
    np.save(tmp_path / "groups.npy", np.array(test_ids))
    np.save(tmp_path / "train_gt.npy", np.array([man[i]["gesture"] for i in train_ids]))
    np.save(tmp_path / "train_groups.npy", np.array(train_ids))
    result = run(runner, BASE + BASELINE + ["-o", "report.json"])
    assert result.exit_code == 0, result.output
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["evidence"] == "SYNTHETIC" and rep["labels"]["checked_against_manifest"] == "label"
    room = rep["domains"]["keys"][0]
    assert room["key"] == "room" and [v["value"] for v in room["values"]] == [3] and room["values"][0]["held_out"]
    assert run(runner, ["verify", "report.json"]).exit_code == 0
    # Bare gesture numbers are refused: without a label set nothing says which gesture a number is.
    np.save(tmp_path / "gt.npy", np.array([man[i]["gesture_number"] for i in test_ids]))
    result = run(runner, ["score", "--task", "gesture", "--pred", "gt.npy", "--gt", "gt.npy"])
    assert result.exit_code == 2 and "Widar3.0 gesture number" in one_error_line(result)


def test_help_and_readme():
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["score", "-h"])
    assert result.exit_code == 0 and "--label-set" in result.output and "gesture" in result.output
    page = (Path(__file__).resolve().parents[1] / "docs" / "score.md").read_text(encoding="utf-8")
    assert "\n## Gesture\n" in page and "rfbench score --task gesture" in page


def test_a_baseline_from_part_of_the_train_side_is_named(runner, files, tmp_path):
    """Training ground truth cut to a few recordings of one class made a weaker baseline (and a larger lead),
    MEASURED and verified, with nothing said but a count in the Baseline line."""
    full = run(runner, BASE + BASELINE + ["-o", "full/report.json"])
    assert full.exit_code == 0, full.output
    assert not any("train recordings" in n for n in json.loads((tmp_path / "full" / "report.json").read_text())
                   ["notes"])
    tg, groups = np.load(tmp_path / "train_gt.npy"), np.load(tmp_path / "train_groups.npy")
    keep = groups == groups[0]
    np.save(tmp_path / "tg_sub.npy", tg[keep])
    np.save(tmp_path / "tgroups_sub.npy", groups[keep])
    argv = [a.replace("train_gt.npy", "tg_sub.npy").replace("train_groups.npy", "tgroups_sub.npy") for a in BASELINE]
    part = run(runner, BASE + argv + ["-o", "part/report.json"])
    assert part.exit_code == 0, part.output
    notes = json.loads((tmp_path / "part" / "report.json").read_text())["notes"]
    n_train = len(json.loads((tmp_path / "split.json").read_text())["train"])
    assert f"the baseline was built from 1 of the split's {n_train} train recordings" in " ".join(notes)
    assert "the baseline was built from 1 of" in (tmp_path / "part" / "report.md").read_text()
