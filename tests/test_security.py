"""rfbench verify and rfbench score as a hostile colleague tries them (the threat model in docs/verify.md).

Each test reproduces one attack on a tiny demo folder and checks the defence:

1. code planted beside a report (an ``rfbench`` package, ``numpy.py``) is never imported by verify's re-run,
   whatever ``reproducer.cwd`` says, and a forged number is a mismatch;
2. input paths chosen by the report are confined to the verify root, regular files only: ``/etc/passwd``, a
   symlink out of the folder, ``/dev/zero`` and a FIFO are refused without being read (no hang);
3. score believes nothing the split file says about itself: a recording moved to the other side, a forged
   ``synthetic``, ``claims`` or ``leakage_prone``;
4. report.md is re-rendered and compared, and free text is escaped in it;
5. a killed verify takes its re-run with it; counts have upper bounds;
6. scoring a subset of the split's test recordings is refused unless asked for, and then shown.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rfbench.cli import app


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory):
    """A tiny demo run once for the module; tests work on copies (they damage them)."""
    from typer.testing import CliRunner

    home = tmp_path_factory.mktemp("secdemo")
    result = CliRunner().invoke(app, ["demo", "--size", "tiny", "--out", str(home / "d"), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    d = home / "d"
    # the files a user's own export script writes (the attacks below edit them): ground truth and row ids of
    # both sides, taken from the demo's windows
    for side, prefix in (("test", ""), ("train", "train_")):
        folder = d / "windows" / f"mmfi-{side}"
        np.save(d / "pose" / f"{prefix}gt.npy", np.load(folder / "y.npy"))
        np.save(d / "pose" / f"{prefix}groups.npy",
                np.array([r["id"] for r in json.loads((folder / "index.json").read_text())["rows"]]))
    return d


@pytest.fixture
def d(demo_home, tmp_path):
    dst = tmp_path / "d"
    shutil.copytree(demo_home, dst, symlinks=True)
    return dst


def rfbench(*args, cwd=None, timeout=120):
    """Run the installed rfbench as a real process, as the console script does (``-I``: the folder it runs in
    is not on ``sys.path``); verify's isolation is about the processes it starts."""
    return subprocess.run([sys.executable, "-I", "-m", "rfbench", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def edit_json(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True))


def verify_args(d: Path, report: Path) -> list:
    return ["verify", report, "--root", d]


# -- 1. foreign code ------------------------------------------------------------------------------------


def test_verify_never_imports_code_planted_beside_the_report(d, tmp_path):
    pose = d / "pose"
    sentinel = tmp_path / "planted-code-ran"
    pkg = pose / "rfbench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"open({str(sentinel)!r}, 'w').write('ran')\n")
    (pkg / "__main__.py").write_text(f"print(open({str(pose / 'report.json')!r}).read())\n")
    for name in ("numpy.py", "typing_extensions.py", "typer.py"):
        (pose / name).write_text(f"open({str(sentinel)!r}, 'w').write('ran')\n")

    def forge(doc):
        doc["reproducer"]["cwd"] = "/nonexistent"
        doc["results"][0]["model"]["value"] = 0.999

    edit_json(pose / "report.json", forge)
    result = rfbench(*verify_args(d, pose / "report.json"), cwd=pose)
    assert not sentinel.exists(), "verify imported code found beside the report"
    assert result.returncode == 1, result.stdout + result.stderr
    assert "MATCH" not in result.stdout.replace("MISMATCH", "")
    assert "results[0]" in result.stdout + result.stderr


def test_verify_ignores_a_reproducer_cwd_holding_planted_code(d, tmp_path):
    """cwd pointing at a folder with an rfbench package: never changed into, never imported from."""
    evil = tmp_path / "evil"
    (evil / "rfbench").mkdir(parents=True)
    sentinel = tmp_path / "ran"
    (evil / "rfbench" / "__init__.py").write_text(f"open({str(sentinel)!r}, 'w').write('ran')\n")
    (evil / "rfbench" / "__main__.py").write_text("print('{}')\n")
    from rfbench.report.render import render_markdown

    report = d / "pose" / "report.json"
    edit_json(report, lambda doc: doc["reproducer"].update(cwd=str(evil)))
    (d / "pose" / "report.md").write_text(render_markdown(json.loads(report.read_text())))  # kept consistent
    result = rfbench(*verify_args(d, report))
    assert not sentinel.exists()
    assert result.returncode == 0, result.stdout + result.stderr


# -- 2. paths chosen by the report -------------------------------------------------------------------------


def _point_input(report: Path, role: str, path: str) -> None:
    def change(doc):
        for item in doc["inputs"]:
            if item["role"] == role:
                item["path"] = path

    edit_json(report, change)


@pytest.mark.parametrize("target", ["/etc/passwd", "../../../../../../../../etc/passwd"])
def test_verify_refuses_inputs_outside_its_root_without_reading_them(d, target):
    report = d / "pose" / "report.json"
    _point_input(report, "pred", target)
    result = rfbench(*verify_args(d, report))
    assert result.returncode == 2, result.stdout + result.stderr
    text = result.stdout + result.stderr
    assert "outside" in text
    size = str(Path("/etc/passwd").stat().st_size)
    assert "sha256" not in text and f" {size} " not in text
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("damage, message", [
    (lambda i: i.__setitem__(1, None), "inputs[1] is not an input record"),
    (lambda i: i[1].__setitem__("path", None), "records no usable path"),
    (lambda i: i[1].__setitem__("path", ["pred.npy"]), "records no usable path"),
    (lambda i: i[1].__setitem__("option", [None]), "records an option that is not a command-line option"),
    (lambda i: i[1].__setitem__("role", i[0]["role"]), "is recorded twice"),
    (lambda i: i[1].__setitem__("bytes", "12"), "records no size"),
    (lambda i: i[1].__setitem__("sha256", None), "records no sha256"),
])
def test_verify_checks_every_input_record_before_using_it(d, damage, message):
    """A report is untrusted: a record that is not one (a list as option raised TypeError before) is one line,
    exit 2, and nothing is re-run."""
    report = d / "pose" / "report.json"
    edit_json(report, lambda doc: damage(doc["inputs"]))
    result = rfbench(*verify_args(d, report))
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_verify_refuses_a_symlink_leading_out_of_its_root(d, tmp_path):
    secret = tmp_path / "secret.npy"
    np.save(secret, np.zeros(3))
    pred = d / "pose" / "pred.npy"
    pred.unlink()
    pred.symlink_to(secret)
    result = rfbench(*verify_args(d, d / "pose" / "report.json"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "outside" in result.stderr


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "folder"])
def test_verify_refuses_non_regular_files_without_hanging(d, kind):
    report = d / "pose" / "report.json"
    pred = d / "pose" / "pred.npy"
    pred.unlink()
    if kind == "dev-zero":
        pred.symlink_to("/dev/zero")
        result = rfbench("verify", report, "--root", "/", timeout=60)
    elif kind == "fifo":
        os.mkfifo(pred)
        result = rfbench(*verify_args(d, report), timeout=60)
    else:
        pred.mkdir()
        result = rfbench(*verify_args(d, report), timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "regular file" in result.stderr


def test_the_demo_reports_verify_with_the_demo_folder_as_root(d):
    for task in ("pose", "gesture"):
        result = rfbench(*verify_args(d, d / task / "report.json"))
        assert result.returncode == 0, result.stdout + result.stderr
    # the report's own folder is the default root: the split beside the folder is outside it
    result = rfbench("verify", d / "pose" / "report.json")
    assert result.returncode == 2 and "--root" in result.stderr, result.stdout + result.stderr


# -- 3. the split's claims about itself ------------------------------------------------------------------


def _score_pose_argv(d: Path, out: Path) -> list:
    p = d / "pose"
    return ["score", "--task", "pose", "--pred", p / "pred.npy", "--gt", p / "gt.npy", "--skeleton", "h36m17",
            "--units", "m", "--split", d / "mmfi-split.json", "--groups", p / "groups.npy", "--train-gt",
            p / "train_gt.npy", "--train-groups", p / "train_groups.npy", "--bootstrap", "20", "--json",
            "-o", out]


def test_score_refuses_a_split_whose_sides_were_edited(d, tmp_path):
    """Move one test recording to train and drop its rows: audit fails, and score must refuse too."""
    split_path = d / "mmfi-split.json"
    doc = json.loads(split_path.read_text())
    moved = doc["test"][0]
    doc["test"].remove(moved)
    doc["train"] = sorted(doc["train"] + [moved])
    split_path.write_text(json.dumps(doc, indent=2, sort_keys=True))
    p = d / "pose"
    groups = np.load(p / "groups.npy")
    keep = groups != moved
    for name in ("pred", "gt", "groups"):
        np.save(p / f"{name}.npy", np.load(p / f"{name}.npy")[keep])
    audit = rfbench("audit", split_path)
    assert audit.returncode == 1, audit.stdout + audit.stderr
    result = rfbench(*_score_pose_argv(d, tmp_path / "r.json"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "audit passed" not in result.stdout
    assert moved in result.stderr and "seed" in result.stderr
    assert not (tmp_path / "r.json").exists()


def test_a_forged_synthetic_false_does_not_make_generated_data_measured(d, tmp_path):
    edit_json(d / "mmfi-split.json", lambda doc: doc.update(synthetic=False))
    result = rfbench(*_score_pose_argv(d, tmp_path / "r.json"))
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["evidence"] == "SYNTHETIC"


def test_score_records_the_manifest_as_an_input_and_reads_provenance_from_it(d, tmp_path):
    result = rfbench(*_score_pose_argv(d, tmp_path / "r.json"))
    report = json.loads(result.stdout)
    roles = {i["role"]: i for i in report["inputs"]}
    assert "manifest" in roles and roles["manifest"]["option"] == "--manifest"
    assert report["provenance"]["synthetic"] is True
    assert "marker" in report["provenance"]["data"]


def test_the_split_file_cannot_declare_its_own_claims_or_leakage(d, tmp_path):
    """`claims` deleted and `leakage_prone` flipped in the file: the protocol's own claims and leakage-proneness
    are what audit and score use."""
    split_path = d / "mmfi-split.json"
    edit_json(split_path, lambda doc: doc.update(claims=[], leakage_prone=True))
    audit = rfbench("audit", split_path, "--json")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    checks = {c["name"] for c in json.loads(audit.stdout)["checks"]}
    assert "subject-disjoint" in checks, "claims must come from the protocol, not the file"
    assert json.loads(audit.stdout)["leakage_prone"] is False
    result = rfbench(*_score_pose_argv(d, tmp_path / "r.json"))
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["split"]["leakage_prone"] is False  # mmfi-s2 is cross-subject, whatever the file says
    assert "subject-disjoint" in {c["name"] for c in report["split"]["audit"]["checks"]}


def test_a_subject_leak_with_claims_deleted_still_fails_the_audit(d):
    split_path = d / "mmfi-split.json"
    doc = json.loads(split_path.read_text())
    leak = doc["test"].pop(0)
    doc["train"] = sorted(doc["train"] + [leak])
    doc["claims"] = []
    split_path.write_text(json.dumps(doc, indent=2, sort_keys=True))
    result = rfbench("audit", split_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert leak.split("/")[1] in result.stdout + result.stderr  # the held-out subject on both sides


# -- 4. report.md ---------------------------------------------------------------------------------------


def test_an_edited_number_in_report_md_fails_verify(d):
    md = d / "pose" / "report.md"
    text = md.read_text()
    report = json.loads((d / "pose" / "report.json").read_text())
    value = report["results"][0]["model"]["value"]
    shown = f"{value:.4f}"
    assert shown in text
    md.write_text(text.replace(shown, "0.9999", 1))
    result = rfbench(*verify_args(d, d / "pose" / "report.json"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "report.md" in result.stdout + result.stderr


def test_free_text_is_escaped_in_markdown(d, tmp_path):
    units = "m |\n# Injected heading <img src=x onerror=alert(1)> **bold**"
    argv = _score_pose_argv(d, tmp_path / "r.json")
    argv[argv.index("--units") + 1] = units
    argv.remove("--json")
    result = rfbench(*argv)
    assert result.returncode == 0, result.stdout + result.stderr
    md = (tmp_path / "r.md").read_text()
    assert "\n# Injected" not in md
    # outside the reproducer's code block (where text is inert), no HTML and no emphasis survive
    outside = md.split("\n```\n")
    prose = "".join(outside[0::2])
    assert len(outside) == 3, "the reproducer block must stay one intact fenced block"
    assert "<img" not in prose
    assert "**bold**" not in prose
    assert "$'m |\\n# Injected" in outside[1]  # the command line keeps the unit, on one line
    for line in md.splitlines():
        if line.startswith("| PCK") or line.startswith("| MPJPE"):
            assert line.count(" | ") == 9, line  # the table keeps its columns


# -- 5. bounded re-runs ---------------------------------------------------------------------------------


def test_killing_verify_kills_its_re_run(d):
    """SIGTERM to verify while its re-run runs: the re-run is killed too, no orphan is left."""
    report = d / "pose" / "report.json"
    proc = subprocess.Popen([sys.executable, "-I", "-m", "rfbench", "verify", str(report), "--root", str(d)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    child = None
    deadline = time.time() + 60
    while time.time() < deadline and child is None:
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        child = int(out[0]) if out else None
        time.sleep(0.02)
    assert child is not None, "verify never started its re-run"
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    time.sleep(0.5)
    assert not Path(f"/proc/{child}").exists() or "zombie" in Path(f"/proc/{child}/status").read_text().lower()
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "interrupted" in err


@pytest.mark.parametrize("option,value", [("--bootstrap", "1000000000"), ("--auc-n", "10000000"),
                                          ("--top-k", "1000000")])
def test_count_options_have_upper_bounds(d, tmp_path, option, value):
    if option == "--top-k":
        g = d / "gesture"
        argv = ["score", "--task", "gesture", "--pred", g / "scores.npy", "--gt", g / "gt.npy", "--label-set",
                g / "names.txt", option, value]
    else:
        argv = _score_pose_argv(d, tmp_path / "r.json")
        if option in argv:
            argv[argv.index(option) + 1] = value
        else:
            argv += [option, value]
    result = rfbench(*argv, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert option.lstrip("-") in result.stderr


def test_a_report_asking_for_a_huge_bootstrap_is_not_re_run(d):
    def change(doc):
        argv = doc["reproducer"]["argv"]
        argv[argv.index("--bootstrap") + 1] = "1000000000"
        doc["bootstrap"]["replicates"] = 1000000000

    edit_json(d / "pose" / "report.json", change)
    start = time.time()
    result = rfbench(*verify_args(d, d / "pose" / "report.json"), timeout=120)
    assert result.returncode in (1, 2), result.stdout + result.stderr
    assert time.time() - start < 60


# -- 6. partial scoring -----------------------------------------------------------------------------------


def _only_one_recording(d: Path) -> str:
    p = d / "pose"
    groups = np.load(p / "groups.npy")
    first = groups[0]
    keep = groups == first
    for name in ("pred", "gt", "groups"):
        np.save(p / f"{name}.npy", np.load(p / f"{name}.npy")[keep])
    return str(first)


def test_scoring_part_of_the_test_side_is_refused(d, tmp_path):
    _only_one_recording(d)
    result = rfbench(*_score_pose_argv(d, tmp_path / "r.json"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--allow-partial" in result.stderr and "of 4 test recordings" in result.stderr


def test_partial_scoring_when_allowed_is_recorded_and_shown(d, tmp_path):
    _only_one_recording(d)
    argv = _score_pose_argv(d, tmp_path / "r.json") + ["--allow-partial"]
    argv.remove("--json")
    result = rfbench(*argv)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 of 4 test recordings scored" in result.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["coverage"]["scored_recordings"] == 1 and report["coverage"]["test_recordings"] == 4
    assert report["coverage"]["allowed_partial"] is True
    assert "--allow-partial" in report["reproducer"]["argv"]
    assert "1 of 4 test recordings scored" in (tmp_path / "r.md").read_text()
    verify = rfbench("verify", tmp_path / "r.json", "--root", tmp_path)
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_the_library_bounds_counts_too():
    """The bounds hold for library callers, not only on the command line."""
    from rfbench.errors import ValidationError
    from rfbench.metrics.limits import MAX_AUC_N
    from rfbench.metrics.pose_plan import PosePlan
    from rfbench.metrics.stats import MAX_REPLICATES
    from rfbench.report.common import check_bootstrap_settings

    with pytest.raises(ValidationError, match="0..100000"):
        check_bootstrap_settings("recording", MAX_REPLICATES + 1, 0.95, 0)
    check_bootstrap_settings("recording", MAX_REPLICATES, 0.95, 0)
    with pytest.raises(ValidationError, match="1..1000"):
        PosePlan.create(skeleton="coco17", units="m", dims=2, metrics=["pck-auc"], auc_n=MAX_AUC_N + 1)
