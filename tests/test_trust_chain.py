"""The chain from dataset files to a number: score --rows reads the ground truth from the dataset, predict's
record brings the model in, and verify replays windows → predict → score (issues: trust chain, predict)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def demo_home(tiny_demo):
    """The session's tiny demo (tests/conftest.py); tests that change it work on copies (``d``)."""
    return tiny_demo


@pytest.fixture
def d(demo_home, tmp_path):
    dst = tmp_path / "d"
    shutil.copytree(demo_home, dst)
    return dst


def rfbench(*args, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-I", "-m", "rfbench", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def score_rows(d: Path, out: Path, *extra, pred=None, rows=None, split=None):
    return rfbench("score", "--pred", pred or d / "pose" / "pred.npy", "--rows",
                   rows or d / "windows" / "mmfi-test" / "index.json", "--split", split or d / "mmfi-split.json",
                   "--skeleton", "h36m17", "--units", "m", "--bootstrap", "20", "-o", out, *extra)


def test_the_demos_reports_read_their_ground_truth_from_the_dataset(demo_home):
    for task, n_files in (("pose", 4), ("gesture", 72)):  # ground_truth.npy per recording; the logs (6 each)
        report = json.loads((demo_home / task / "report.json").read_text())
        prov = report["provenance"]
        assert prov["ground_truth"].startswith("read from the dataset by rfbench")
        assert len(prov["ground_truth_files"]) == n_files  # the rows of a log come from its packets
        roles = {i["role"] for i in report["inputs"]}
        assert {"pred", "rows", "split", "manifest", "model", "pred-record"} <= roles
        assert not roles & {"gt", "groups", "train-gt", "train-groups"}
        assert [c["step"] for c in report["chain"]] == ["windows", "predict", "score"]
        assert report["coverage"]["scored_recordings"] == report["coverage"]["test_recordings"]


@pytest.mark.parametrize("case, message", [
    ("gt-too", "drop --gt"),
    ("no-split", "--rows (a windows index) needs the --split"),
    ("train-index", "holds the train side"),
    ("other-split", "built from another split"),
    ("rows-count", "the index has 16"),
])
def test_score_rows_refuses_inputs_that_do_not_belong(d, tmp_path, case, message):
    out = tmp_path / "r.json"
    if case == "gt-too":
        np.save(tmp_path / "gt.npy", np.load(d / "windows" / "mmfi-test" / "y.npy"))
        result = score_rows(d, out, "--gt", tmp_path / "gt.npy")
    elif case == "no-split":
        result = rfbench("score", "--pred", d / "pose" / "pred.npy", "--rows", d / "windows/mmfi-test/index.json",
                         "--skeleton", "h36m17", "-o", out)
    elif case == "train-index":
        result = score_rows(d, out, rows=d / "windows" / "mmfi-train" / "index.json")
    elif case == "other-split":
        result = score_rows(d, out, split=d / "widar-split.json")
    else:
        np.save(tmp_path / "short.npy", np.load(d / "pose" / "pred.npy")[:-1])
        result = score_rows(d, out, pred=tmp_path / "short.npy")
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_a_dataset_file_changed_since_ingest_is_refused(d, tmp_path):
    gt = d / "data" / "mmfi" / "E01" / "S05" / "A02" / "ground_truth.npy"
    a = np.load(gt)
    a[0, 0, 0] += 1.0  # same size, other bytes
    np.save(gt, a)
    result = score_rows(d, tmp_path / "r.json")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "ground_truth.npy" in result.stderr and "changed" in result.stderr


def test_verify_names_a_ground_truth_file_edited_after_scoring(d):
    gt = d / "data" / "mmfi" / "E01" / "S05" / "A02" / "ground_truth.npy"
    a = np.load(gt)
    a[0, 0, 0] += 1.0
    np.save(gt, a)
    result = rfbench("verify", d / "pose" / "report.json", "--root", d)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "E01/S05/A02/ground_truth.npy" in result.stderr


@pytest.mark.long
def test_verify_replays_the_chain_and_catches_predictions_the_model_does_not_give(d):
    """Forged predictions with a record rewritten to match, and a report scored from them: every hash is
    consistent, but running the recorded model on the rebuilt windows gives other predictions."""
    ok = rfbench("verify", d / "pose" / "report.json", "--root", d, "--json")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert any("chain replayed" in n for n in json.loads(ok.stdout)["notes"])
    pred_path, record_path = d / "pose" / "pred.npy", d / "pose" / "pred.json"
    pred = np.load(pred_path)
    np.save(pred_path, pred * 0.5 + 0.5 * np.load(d / "windows" / "mmfi-test" / "y.npy"))  # "better" numbers
    import hashlib

    record = json.loads(record_path.read_text())
    record["pred"]["sha256"] = hashlib.sha256(pred_path.read_bytes()).hexdigest()
    record["pred"]["bytes"] = pred_path.stat().st_size
    record_path.write_text(json.dumps(record))
    forged = d / "pose" / "forged.json"
    result = score_rows(d, forged)
    assert result.returncode == 0, result.stdout + result.stderr
    verdict = rfbench("verify", forged, "--root", d)
    assert verdict.returncode == 1, verdict.stdout + verdict.stderr
    assert "the model run again gives other predictions" in verdict.stderr


def test_another_environment_compares_within_tolerance_and_rescores(d):
    """A record made under another onnxruntime version: the re-run's predictions are compared within the
    recorded tolerance, and every number must come out identical when scored from them."""
    record_path = d / "pose" / "pred.json"
    record = json.loads(record_path.read_text())
    record["runtime"]["version"] = "0.0.1"
    record_path.write_text(json.dumps(record))
    out = d / "pose" / "other-env.json"
    assert score_rows(d, out).returncode == 0
    result = rfbench("verify", out, "--root", d, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    notes = " ".join(json.loads(result.stdout)["notes"])
    assert "within the recorded tolerance" in notes and "0.0.1" in notes


def test_compare_rescores_a_report_whose_ground_truth_came_from_the_dataset(d, tmp_path):
    # The demo's pose report holds no gt input: compare reads the ground truth from the dataset again, under
    # the same root verify uses, and only when the files are those the report's provenance recorded.
    from rfbench.report.claims import load_claims
    from rfbench.report.compare import compare_report

    report = d / "pose" / "report.json"
    doc = json.loads(report.read_text())
    mine = next(r for r in doc["results"] if r["metric"] == "pck" and r["spec"]["normalization"] == "bbox"
                and r["spec"]["averaging"] == "micro" and r["spec"]["k"] == 0.2)
    claims_file = tmp_path / "same.toml"
    claims_file.write_text('[[claim]]\nid = "same-spec"\nmetric = "pck"\nvalue = 0.5\nunits = "m"\n'
                           'spec = { normalization = "bbox", k = 0.2, comparison = "<=", averaging = "micro" }\n'
                           'source = { citation = "a test" }\n')
    claims = load_claims([str(claims_file)])
    inside = compare_report(report, claims).to_dict()["comparisons"][0]["rescore"]
    assert inside["status"] == "unavailable" and "resolves outside the report's folder" in inside["reason"]
    rescore = compare_report(report, claims, root=d).to_dict()["comparisons"][0]["rescore"]
    assert rescore["status"] == "done" and rescore["value"] == mine["model"]["value"]
    # a ground-truth file changed since ingest: not re-scored, and the reason says why
    path = d / "data" / "mmfi" / doc["provenance"]["ground_truth_files"][0]["path"]
    np.save(path, np.load(path) + 0.01)
    changed = compare_report(report, claims, root=d).to_dict()["comparisons"][0]["rescore"]
    assert changed["status"] == "unavailable" and "cannot be read from the dataset again" in changed["reason"]


@pytest.mark.parametrize("edit, message", [
    (lambda c: c[0]["argv"].__setitem__(slice(7, 9), ["--task", "gesture"]), "its windows step shows settings"),
    (lambda c: c[1]["argv"].__setitem__(8, "8"), "its predict step shows settings"),
    (lambda c: c.pop(0), "its steps are not windows, predict and score"),
    (lambda c: c[2]["argv"].append("--seed"), "its score step is not the report's reproducer"),
    (lambda c: c.__setitem__(0, None), "its windows step is not the command rfbench records"),
])
def test_verify_refuses_a_chain_that_is_not_what_its_files_record(d, edit, message):
    """The chain is what a reader sees of how the predictions were made; before this check an edited chain
    (another window setting, another batch size, a step removed) still verified as MATCH."""
    path = d / "pose" / "report.json"
    report = json.loads(path.read_text())
    edit(report["chain"])
    path.write_text(json.dumps(report))
    (d / "pose" / "report.md").unlink()  # the Markdown is checked separately; here the JSON's chain alone
    result = rfbench("verify", path, "--root", d)
    assert result.returncode == 1, result.stdout + result.stderr
    assert message in result.stderr


def test_verify_refuses_a_chain_on_a_report_it_cannot_replay(d):
    gesture = json.loads((d / "gesture" / "report.json").read_text())
    report = json.loads((d / "pose" / "report.json").read_text())
    report["inputs"] = [i for i in report["inputs"] if i["role"] not in ("model", "pred-record")]
    report["chain"] = gesture["chain"]
    (d / "pose" / "report.json").write_text(json.dumps(report))
    result = rfbench("verify", d / "pose" / "report.json", "--root", d)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "carries a chain but not the windows index, model and prediction record" in result.stderr
