"""``rfbench score`` as a user runs it: reports, refusals, exit codes, one-line errors."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from posedata import h36m_poses, pose_files, write_split
from rfbench.cli import app


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return pose_files(tmp_path)


BASE = ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--vis", "vis.npy", "--skeleton", "coco17", "--units", "m",
        "--bootstrap", "100"]
BASELINE = ["--split", "split.json", "--groups", "groups.npy", "--train-gt", "train_gt.npy", "--train-groups",
            "train_groups.npy"]


def run(runner, args):
    result = runner.invoke(app, args)
    assert "Traceback" not in result.output
    return result


def one_error_line(result):
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    return lines[0]


def test_full_run_writes_a_measured_report_and_markdown(runner, files, tmp_path):
    result = run(runner, BASE + BASELINE + ["--norm", "torso,bbox", "-o", "out/report.json"])
    assert result.exit_code == 0, result.output
    assert "Evidence: MEASURED" in result.output and "rfbench verify out/report.json" in result.output
    rep = json.loads((tmp_path / "out" / "report.json").read_text())
    assert rep["evidence"] == "MEASURED" and rep["task"] == "pose"
    # the folder it ran in, relative to the report's folder (a shared report names no user's folders)
    assert rep["reproducer"]["argv"][:2] == ["rfbench", "score"] and rep["reproducer"]["cwd"] == ".."
    assert str(tmp_path) not in json.dumps(rep)
    roles = {i["role"]: i for i in rep["inputs"]}
    assert set(roles) == {"pred", "gt", "vis", "split", "manifest", "groups", "train-gt", "train-groups"}
    for i in roles.values():
        data = (tmp_path / "out" / i["path"]).read_bytes()  # paths are relative to the report's folder
        assert i["sha256"] == hashlib.sha256(data).hexdigest() and i["bytes"] == len(data)
    assert rep["baseline"]["kind"] == "mean-pose" and rep["split"]["audit"]["passed"] is True
    assert rep["bootstrap"]["clusters"] == 3 and rep["bootstrap"]["replicates"] == 100
    labels = [r["label"] for r in rep["results"]]
    assert "PCK@0.20 torso(left_shoulder–right_hip) coco17 <= micro" in labels
    assert "PCK@0.50 bbox coco17 <= macro" in labels
    assert all(r["baseline"] is not None and r["ci"]["delta"] is not None for r in rep["results"])
    md = (tmp_path / "out" / "report.md").read_text()
    assert "**Evidence: MEASURED**" in md and "PCK@0.20 torso(left\\_shoulder–right\\_hip) coco17 &lt;= micro" in md


def test_json_prints_the_report(runner, files):
    result = run(runner, BASE + ["--json", "--metrics", "pck", "--norm", "bbox", "--k", "0.1"])
    assert result.exit_code == 0, result.output
    rep = json.loads(result.stdout)
    assert [r["label"] for r in rep["results"]] == ["PCK@0.10 bbox coco17 <= micro", "PCK@0.10 bbox coco17 <= macro"]
    assert rep["baseline"]["kind"] is None and "no split given" in rep["baseline"]["reason"]
    assert rep["bootstrap"]["method"] is None and "--groups" in rep["bootstrap"]["reason"]


def test_existing_output_needs_force(runner, files, tmp_path):
    (tmp_path / "report.json").write_text("keep me")
    result = run(runner, BASE + ["-o", "report.json"])
    assert result.exit_code == 2
    assert "already exists" in one_error_line(result)
    assert (tmp_path / "report.json").read_text() == "keep me" and not (tmp_path / "report.md").exists()
    result = run(runner, BASE + ["-o", "report.json", "--force"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "report.json").read_text())["schema"] == "rfbench.report/1"


def _save(tmp_path, name, arr):
    np.save(tmp_path / name, arr)
    return name


@pytest.mark.parametrize("case,message", [
    ("short-pred", "predictions have shape (59, 17, 2) but ground truth has (60, 17, 2)"),
    ("flat-gt", "ground truth must have shape"),
    ("nan-gt", "ground truth holds NaN or inf"),
    ("skeleton", "unknown skeleton 'mpii'"),
    ("norm", "unknown normalization 'shoulder'"),
    ("k", "--k: 'x' is not a number"),
    ("groups-length", "--groups: expected one recording id per row (60 rows)"),
    ("task", "--vis applies to --task pose only"),
    ("unknown-task", "unknown task 'hand'; use pose or gesture"),
    ("vis-shape", "visibility must have shape (60, 17)"),
    ("missing", "--pred nothing.npy: no such file"),
    ("pickle", "not a plain .npy array"),
    ("metric", "--metrics: 'pckh' is not one of pck, pck-auc, oks, mpjpe, pa-mpjpe"),
    ("sigmas", "2 sigmas given for 17 joints"),
    ("train-without-split", "a baseline needs --split"),
    ("split-without-groups", "a split needs --groups"),
    ("confidence", "--confidence: 95.0 is not allowed (0 < x < 1)"),
])
def test_bad_input_is_one_line_and_exit_2(runner, files, tmp_path, case, message):
    gt = np.load(tmp_path / "gt.npy")
    args = list(BASE)
    swap = {}
    if case == "short-pred":
        swap["--pred"] = _save(tmp_path, "short.npy", gt[:-1])
    elif case == "flat-gt":
        swap["--gt"] = _save(tmp_path, "flat.npy", gt.reshape(60, -1))
    elif case == "nan-gt":
        bad = gt.copy()
        bad[4, 2, 0] = np.nan
        swap["--gt"] = _save(tmp_path, "nan.npy", bad)
        swap["--vis"] = _save(tmp_path, "allvis.npy", np.ones((60, 17), bool))
    elif case == "skeleton":
        swap["--skeleton"] = "mpii"
    elif case == "norm":
        args += ["--norm", "shoulder"]
    elif case == "k":
        args += ["--k", "0.1,x"]
    elif case == "groups-length":
        args += ["--groups", _save(tmp_path, "g.npy", np.array(["r1"] * 59))]
    elif case == "task":
        args += ["--task", "gesture"]  # with pose options: refused, not silently ignored
    elif case == "unknown-task":
        args += ["--task", "hand"]
    elif case == "vis-shape":
        swap["--vis"] = _save(tmp_path, "v.npy", np.ones((60, 16), bool))
    elif case == "missing":
        swap["--pred"] = "nothing.npy"
    elif case == "pickle":
        np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
        swap["--pred"] = "obj.npy"
    elif case == "metric":
        args += ["--metrics", "pck,pckh"]
    elif case == "sigmas":
        args += ["--sigmas", "0.1,0.2"]
    elif case == "train-without-split":
        args += ["--train-gt", "train_gt.npy", "--train-groups", "train_groups.npy"]
    elif case == "split-without-groups":
        args += ["--split", "split.json"]
    elif case == "confidence":
        args += ["--confidence", "95"]
    for opt, val in swap.items():
        args[args.index(opt) + 1] = val
    result = run(runner, args + ["-o", "report.json"])
    assert result.exit_code == 2, result.output
    assert message in one_error_line(result).replace("\n", " ")
    assert not (tmp_path / "report.json").exists()


def test_failed_audit_split_is_refused_with_exit_1(runner, files, tmp_path):
    write_split(tmp_path / "split.json", ["r1", "r2", "r3", "r4"], ["r5", "r6", "r7"], passed=False)
    result = run(runner, BASE + BASELINE + ["-o", "report.json"])
    assert result.exit_code == 1, result.output
    assert "sides are not what its protocol gives" in one_error_line(result)
    assert not (tmp_path / "report.json").exists()


def test_baseline_from_test_rows_is_refused(runner, files, tmp_path):
    np.save(tmp_path / "train_groups.npy", np.array(["r1", "r5"] * 40))  # r5 is a test recording
    result = run(runner, BASE + BASELINE)
    assert result.exit_code == 2
    assert "'r5' is on the split's test side" in one_error_line(result)
    np.save(tmp_path / "train_groups.npy", np.array(["r1"] * 80))
    np.save(tmp_path / "groups.npy", np.array(["r5", "r2"] * 30))  # a scored row from a training recording
    result = run(runner, BASE + BASELINE)
    assert result.exit_code == 2
    assert "scored rows must come from the test side" in one_error_line(result)


def test_leakage_prone_split_is_tagged_everywhere(runner, files, tmp_path):
    write_split(tmp_path / "split.json", ["r1", "r2", "r3", "r4"], ["r5", "r6", "r7"], leakage_prone=True)
    result = run(runner, BASE + BASELINE + ["-o", "report.json"])
    assert result.exit_code == 0, result.output
    assert "WARNING: LEAKAGE-PRONE split (protocol random)" in result.output
    rep = json.loads((tmp_path / "report.json").read_text())
    assert rep["split"]["leakage_prone"] is True and rep["notes"][0].startswith("LEAKAGE-PRONE")
    assert "> **Warning:** LEAKAGE-PRONE split" in (tmp_path / "report.md").read_text()
    result = run(runner, BASE + BASELINE + ["--json"])
    assert json.loads(result.stdout)["split"]["leakage_prone"] is True


def test_synthetic_tags(runner, files, tmp_path):
    result = run(runner, BASE + ["--synthetic", "--json"])
    assert json.loads(result.stdout)["evidence"] == "SYNTHETIC"
    write_split(tmp_path / "split.json", ["r1", "r2", "r3", "r4"], ["r5", "r6", "r7"], synthetic=True)
    result = run(runner, BASE + BASELINE + ["--json"])
    assert json.loads(result.stdout)["evidence"] == "SYNTHETIC"


def test_integer_recording_ids(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pose_files(tmp_path, int_ids=True)
    result = run(runner, BASE + BASELINE + ["--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["data"]["recordings"] == 3


def test_wrong_layout_refused_unless_trusted(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    gt = h36m_poses(20, seed=0)  # h36m order declared as coco17
    np.save(tmp_path / "gt.npy", gt)
    np.save(tmp_path / "pred.npy", gt + 0.01)
    args = ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--skeleton", "coco17", "--units", "m", "--json"]
    result = run(runner, args + ["--norm", "torso"])
    assert result.exit_code == 2
    assert "does not fit the ground truth" in one_error_line(result)
    result = run(runner, args + ["--norm", "bbox", "--metrics", "pck,mpjpe"])  # layout-independent: fine
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["layout_check"]["passed"] is False
    result = run(runner, args + ["--norm", "torso", "--trust-layout"])
    assert result.exit_code == 0, result.output
    rep = json.loads(result.stdout)
    assert rep["layout_check"]["overridden"] is True
    assert any(n.startswith("LAYOUT NOT VERIFIED") for n in rep["notes"])
    result = run(runner, ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--skeleton", "h36m17", "--units", "m",
                          "--json"])
    assert result.exit_code == 0, result.output
    rep = json.loads(result.stdout)
    assert rep["layout_check"]["passed"] is True
    assert "OKS not computed: it is defined for 2D poses only" in rep["notes"]


def test_cluster_by_subject_reads_the_manifest(runner, files, tmp_path):
    subjects = {f"r{i}": f"S{(i + 1) // 2}" for i in range(1, 8)}  # r5/r6 -> S3, r7 -> S4; r4 -> S2
    subjects["r4"] = "S1"  # keep training subjects off the test side
    write_split(tmp_path / "split.json", ["r1", "r2", "r3", "r4"], ["r5", "r6", "r7"], subjects=subjects)
    result = run(runner, BASE + BASELINE + ["--cluster-by", "subject", "--json"])
    assert result.exit_code == 0, result.output
    rep = json.loads(result.stdout)
    assert rep["bootstrap"]["cluster_by"] == "subject" and rep["bootstrap"]["clusters"] == 2
    assert "manifest" in {i["role"] for i in rep["inputs"]}
    manifest = tmp_path / "manifest.json"
    manifest.write_text(manifest.read_text() + " ")
    result = run(runner, BASE + BASELINE + ["--cluster-by", "subject", "--json"])
    assert result.exit_code == 2
    assert "not the manifest the split" in one_error_line(result)


def test_help(runner):
    for cmd in ("score", "verify"):
        result = runner.invoke(app, [cmd, "-h"])
        assert result.exit_code == 0, result.output
        assert "Usage" in result.output


def test_docs_document_both_commands():
    from pathlib import Path

    docs = Path(__file__).resolve().parents[1] / "docs"
    for cmd in ("score", "verify"):
        assert (docs / f"{cmd}.md").read_text(encoding="utf-8").startswith(f"# rfbench {cmd}\n")


def test_units_not_given_are_declared_unspecified_in_every_label(runner, files, tmp_path):
    # The command line has no --units: the run works, and no number pretends to have units.
    result = run(runner, ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--vis", "vis.npy", "--skeleton", "coco17",
                          "--norm", "bbox", "--k", "0.2", "--json"])
    assert result.exit_code == 0, result.output
    rep = json.loads(result.stdout)
    assert {r["spec"]["units"] for r in rep["results"]} == {"unspecified"}
    mpjpe = [r["label"] for r in rep["results"] if r["metric"] == "mpjpe"]
    assert mpjpe and all("unspecified" in label for label in mpjpe)
    argv = rep["reproducer"]["argv"]
    assert argv[argv.index("--units") + 1] == "unspecified"


def test_a_custom_layout_that_passes_its_own_checks_is_still_not_verified(runner, tmp_path, monkeypatch):
    """A layout file declares its own plausibility checks, so passing them proves nothing about its names and
    roles: here the head is called left_hip, so hip-width grows and PCK with it. The report says so."""
    monkeypatch.chdir(tmp_path)
    gt = h36m_poses(20, seed=0)
    np.save(tmp_path / "gt.npy", gt)
    np.save(tmp_path / "pred.npy", gt + 0.05)
    joints = ["pelvis", "right_hip", "right_knee", "right_foot", "left_hip", "left_knee", "left_foot", "spine",
              "thorax", "neck_base", "head", "left_shoulder", "left_elbow", "left_wrist", "right_shoulder",
              "right_elbow", "right_wrist"]
    joints[10], joints[4] = "left_hip", "head"  # the head called a hip
    (tmp_path / "mine.toml").write_text(
        'name = "mine"\njoints = [' + ", ".join(f'"{j}"' for j in joints) + ']\n[roles]\nleft_hip = "left_hip"\n'
        'right_hip = "right_hip"\n[[checks]]\nname = "hips apart"\nkind = "spread"\n'
        'joints = ["left_hip", "right_hip"]\nbound = 100.0\n')
    args = ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--units", "m", "--norm", "hip-width", "--k", "0.2",
            "--metrics", "pck", "--json", "--skeleton"]
    honest = json.loads(run(runner, args + ["h36m17"]).stdout)
    assert not any(n.startswith("LAYOUT NOT VERIFIED") for n in honest["notes"])
    result = run(runner, args + ["mine.toml"])
    assert result.exit_code == 0, result.output
    forged = json.loads(result.stdout)
    assert forged["layout_check"]["passed"] is True  # its own check holds
    assert forged["results"][0]["model"]["value"] > honest["results"][0]["model"]["value"]
    assert any(n.startswith("LAYOUT NOT VERIFIED: skeleton mine@") and "custom layout" in n for n in forged["notes"])
