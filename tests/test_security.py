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


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory, tiny_demo):
    """A tiny demo for the module; tests work on copies (they damage them)."""
    home = tmp_path_factory.mktemp("secdemo")
    d = home / "d"
    shutil.copytree(tiny_demo, d, symlinks=True)  # the session's tiny demo (tests/conftest.py), copied
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
    md = render_markdown(json.loads(report.read_text()))
    (d / "pose" / "report.md").write_text(md)  # kept consistent
    result = rfbench(*verify_args(d, report))
    assert not sentinel.exists()
    assert result.returncode == 0, result.stdout + result.stderr
    # a folder nothing checks is shown as such: the reader of report.md is not told the number was made there
    shown = next(line for line in md.splitlines() if str(evil) in line)
    assert shown.startswith(f"Recorded as run in `{evil}`") and "nothing checks them" in shown


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


def test_verify_reads_no_report_outside_its_root(d, tmp_path):
    """The report is a file under the root like every other: a link to one elsewhere is refused before it is
    read (it was read, and only its inputs were then found outside)."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "report.json").symlink_to(d / "pose" / "report.json")
    result = rfbench("verify", home / "report.json", "--root", home)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "report report.json: resolves outside the verify root" in result.stderr


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


# == Round two: a closed world ===================================================================================
# Each test below reproduces one class of attack that made verify print MATCH (or made another command hang,
# exhaust memory or read a file outside its folder) before the closed-world verify.


def _hash(path: Path) -> tuple[str, int]:
    import hashlib

    data = path.read_bytes()
    return hashlib.sha256(data).hexdigest(), len(data)


def _render(report: Path) -> None:
    """report.md rendered from the (edited) report, as a forger would, so only the defence under test can fail."""
    from rfbench.report.render import render_markdown

    report.with_suffix(".md").write_text(render_markdown(json.loads(report.read_text())), encoding="utf-8")


def _rehash(report: Path, roles=None) -> None:
    """Record the inputs' current sizes and sha256 in the report (all of them, or ``roles``), as a forger would."""
    def change(doc):
        for item in doc["inputs"]:
            if roles is None or item["role"] in roles:
                item["sha256"], item["bytes"] = _hash(report.parent / item["path"])

    edit_json(report, change)
    _render(report)


def _rebind(d: Path, task: str) -> None:
    """After an edit of a split or an index: every hash down the chain recorded again, as a forger would."""
    side = "mmfi" if task == "pose" else "widar"
    index = d / "windows" / f"{side}-test" / "index.json"
    record = d / task / ("pred.json" if task == "pose" else "scores.json")
    edit_json(index, lambda i: i["split"].__setitem__("sha256", _hash(d / f"{side}-split.json")[0]))
    edit_json(record, lambda r: (r["windows"]["index"].__setitem__("sha256", _hash(index)[0]),
                                 r["windows"]["split"].__setitem__("sha256", _hash(d / f"{side}-split.json")[0])))
    _rehash(d / task / "report.json")


def _score_rows_argv(d: Path, out: Path, *extra) -> list:
    return ["score", "--task", "pose", "--pred", d / "pose" / "pred.npy", "--rows",
            d / "windows" / "mmfi-test" / "index.json", "--split", d / "mmfi-split.json", "--skeleton", "h36m17",
            "--units", "m", "--bootstrap", "20", "-o", out, *extra]


# -- 1. what score scores is what the chain replays ------------------------------------------------------------


def _hide_the_honest_predictions(d: Path) -> None:
    """pred.npy moved to a hidden name the record now points at, forged predictions (the ground truth itself)
    written as pred.npy."""
    pose = d / "pose"
    shutil.copy(pose / "pred.npy", pose / ".honest.npy")
    edit_json(pose / "pred.json", lambda r: r["pred"].__setitem__("file", ".honest.npy"))
    np.save(pose / "pred.npy", np.load(d / "windows" / "mmfi-test" / "y.npy"))


def test_score_refuses_predictions_that_are_not_the_file_their_record_describes(d, tmp_path):
    _hide_the_honest_predictions(d)
    result = rfbench(*_score_rows_argv(d, tmp_path / "forged.json"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert ".honest.npy, not --pred" in result.stderr
    assert not (tmp_path / "forged.json").exists()


def test_score_refuses_a_record_that_is_a_dangling_link(d, tmp_path):
    """A pred.json that is a link to nothing is not "no record": scoring on as plain predictions would drop the
    chain the name promises without a word."""
    (d / "pose" / "pred.json").unlink()
    (d / "pose" / "pred.json").symlink_to(tmp_path / "nowhere.json")
    result = rfbench(*_score_rows_argv(d, tmp_path / "r.json"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "pred.json" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("field,value", [("model.path", "a" * 300), ("pred.file", "loop/x"),
                                         ("model.path", "pred.npy/x")], ids=["too-long", "link-loop", "not-a-folder"])
def test_a_record_naming_an_unopenable_path_is_one_line_exit_2(d, tmp_path, field, value):
    """A model path of 300 characters or one through a link loop raised OSError (ENAMETOOLONG, ELOOP) through
    score: a traceback and exit 1, which reads as a failed check."""
    (d / "pose" / "loop").symlink_to("loop")
    key, sub = field.split(".")
    edit_json(d / "pose" / "pred.json", lambda r: r[key].__setitem__(sub, value))
    result = rfbench(*_score_rows_argv(d, tmp_path / "r.json"))
    assert result.returncode == 2, result.stdout + result.stderr
    _one_error_line(result)
    assert not (tmp_path / "r.json").exists()


def test_score_refuses_a_record_naming_another_windows_index(d, tmp_path):
    """A record whose windows index is a copy elsewhere (or nothing at all) was scored, and verify, which replays
    the chain from the index the record names, then refused the report (exit 2)."""
    shutil.copytree(d / "windows" / "mmfi-test", d / "windows" / "elsewhere")
    edit_json(d / "pose" / "pred.json",
              lambda r: r["windows"]["index"].__setitem__("path", "../windows/elsewhere/index.json"))
    result = rfbench(*_score_rows_argv(d, tmp_path / "r.json"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "the record names the windows index" in result.stderr and not (tmp_path / "r.json").exists()


def test_verify_replays_the_model_against_the_very_file_that_was_scored(d, tmp_path):
    """A report assembled by hand: the forged predictions' numbers, with the honest run's chain, model and record
    (whose pred.file names the hidden honest file). Verify replayed the model against the record's file
    ("identical bit for bit") and re-scored the forged one: MATCH for a PCK the model does not reach."""
    pose = d / "pose"
    honest = json.loads((pose / "report.json").read_text())
    _hide_the_honest_predictions(d)
    shutil.move(pose / "pred.json", tmp_path / "pred.json")  # no record: scored as plain predictions
    made = rfbench(*_score_rows_argv(d, pose / "forged.json"))
    assert made.returncode == 0, made.stdout + made.stderr
    shutil.move(tmp_path / "pred.json", pose / "pred.json")
    report = pose / "forged.json"
    forged = json.loads(report.read_text())
    forged["inputs"] += [i for i in honest["inputs"] if i["role"] in ("model", "pred-record")]
    forged["chain"] = honest["chain"][:2] + [{"step": "score", "argv": forged["reproducer"]["argv"]}]
    report.write_text(json.dumps(forged))
    _rehash(report, {"pred-record"})
    result = rfbench("verify", report, "--root", d)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the chain would replay one file and score another" in result.stderr


# -- 2. a different environment compares everything ----------------------------------------------------------


def test_another_environment_changes_only_how_the_predictions_are_compared(d):
    from rfbench.report.evidence import RULES

    pose = d / "pose"
    edit_json(pose / "pred.json", lambda r: r["runtime"].__setitem__("version", "0.0.1"))
    edit_json(pose / "report.json", lambda r: (r.update(evidence="MEASURED", evidence_rule=RULES["MEASURED"]),
                                              r["provenance"].update(data="real captures", synthetic=False)))
    _rehash(pose / "report.json", {"pred-record"})
    result = rfbench(*verify_args(d, pose / "report.json"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "evidence" in result.stdout and "provenance.data" in result.stdout


@pytest.mark.long
def test_under_tolerance_the_whole_report_is_scored_again_from_the_re_run(d):
    """A model whose scores tie exactly on two classes; predictions forged by 1e-6 (every argmax moves to the
    other tied class) and a record claiming another onnxruntime, so predictions are compared within tolerance.
    Only the results were compared when scored again from the re-run's predictions: the per-class table, the
    confusion matrix and the notes of the forged report verified as MATCH."""
    import hashlib

    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper

    g = d / "gesture"
    model = onnx.load(str(g / "centroid.onnx"))
    for k, init in enumerate(model.graph.initializer):
        if init.name == "place":
            a = numpy_helper.to_array(init)
            tied = np.tile(np.array([0.3, 0.3, 0.2, 0.1, 0.1], dtype=a.dtype), (a.shape[0], 1))
            model.graph.initializer[k].CopyFrom(numpy_helper.from_array(tied, "place"))
    onnx.save(model, str(g / "centroid.onnx"))
    score = ["score", "--task", "gesture", "--pred", "gesture/scores.npy", "--rows", "windows/widar-test/index.json",
             "--split", "widar-split.json", "--bootstrap", "200", "-o", "gesture/report.json", "--plots"]
    assert rfbench("predict", "gesture/centroid.onnx", "--windows", "windows/widar-test", "-o", "gesture/scores.npy",
                   "--force", cwd=d).returncode == 0
    assert rfbench(*score, "--force", cwd=d).returncode == 0
    assert rfbench(*verify_args(d, g / "report.json")).returncode == 0  # the honest report
    scores = np.load(g / "scores.npy")
    scores[:, 1] += 1e-6
    np.save(g / "scores.npy", scores)
    data = (g / "scores.npy").read_bytes()
    edit_json(g / "scores.json", lambda r: (r["runtime"].__setitem__("version", "1.31.0"),
                                            r["pred"].update(sha256=hashlib.sha256(data).hexdigest(),
                                                             bytes=len(data))))
    assert rfbench(*score, "--force", cwd=d).returncode == 0
    result = rfbench(*verify_args(d, g / "report.json"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "scored from the re-run's own predictions" in result.stdout + result.stderr


def test_a_report_naming_another_plotting_version_still_has_its_pictures_compared(d):
    """A picture swapped for another, its sha256 and size recorded, and its engine set to another matplotlib:
    the recorded engine turned the re-drawing off and verify said MATCH."""
    g = d / "gesture"
    shutil.copy(d / "pose" / "report-pck.png", g / "report-confusion.png")
    data = (g / "report-confusion.png").read_bytes()
    edit_json(g / "report.json", lambda r: [p.update(engine="matplotlib 3.9.0", bytes=len(data),
                                                     sha256=_hash(g / "report-confusion.png")[0])
                                            for p in r["pictures"] if p["file"] == "report-confusion.png"])
    _render(g / "report.json")
    result = rfbench(*verify_args(d, g / "report.json"))
    assert result.returncode == 1 and "pictures[0]" in result.stdout + result.stderr, result.stdout + result.stderr


def test_an_index_s_excluded_and_dropped_lists_are_recomputed(d):
    """Scored from plain predictions (no record, so no chain to replay), an index whose excluded and dropped
    lists were edited put a made-up exclusion and drop reason into a report that verified."""
    g = d / "gesture"
    (g / "scores.json").unlink()
    index = d / "windows" / "widar-test" / "index.json"

    def edit(doc):
        doc["excluded"] = [{"id": doc["rows"][1]["id"], "kind": "label", "reason": "reviewed by a third party"}]

    edit_json(index, edit)
    result = rfbench("score", "--task", "gesture", "--pred", g / "scores.npy", "--rows", index, "--split",
                     d / "widar-split.json", "-o", d / "r.json")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "excluded list" in result.stderr and not (d / "r.json").exists()


# -- 3. what report.md shows is bound ------------------------------------------------------------------------


@pytest.mark.parametrize("edit", ["caption", "link", "swapped picture"])
def test_every_picture_report_md_shows_is_bound_to_the_report(d, edit):
    report = d / "pose" / "report.json"
    if edit == "swapped picture":
        (d / "pose" / "report-pck.png").write_bytes((d / "pose" / "report-joints.png").read_bytes())
    else:
        edit_json(report, lambda r: r["pictures"][0].__setitem__(
            "caption" if edit == "caption" else "file",
            "verified PCK 0.98 on real MM-Fi" if edit == "caption" else "//host/badge.png"))
        _render(report)
    assert "//host" not in (d / "pose" / "report.md").read_text().replace("`//host/badge.png`", "")
    result = rfbench(*verify_args(d, report))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "pictures[0]" in result.stdout + result.stderr


def test_an_edited_report_md_is_a_mismatch_whatever_version_the_report_names(d):
    report = d / "pose" / "report.json"
    edit_json(report, lambda r: r.update(rfbench_version="0.0.1"))
    _render(report)
    md = report.with_suffix(".md")
    value = f"{json.loads(report.read_text())['results'][0]['model']['value']:.4f}"
    md.write_text(md.read_text().replace(value, "0.9999", 1))
    result = rfbench(*verify_args(d, report))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "report.md does not render from report.json" in result.stderr
    assert "made with rfbench 0.0.1" in result.stderr  # the verdict line itself names the other version


# -- 4. every path the chain reads is resolved by one resolver under the root ------------------------------------


def _split_names_an_outside_copy(d: Path, tmp_path: Path) -> None:
    """The MM-Fi split names a copy of its manifest and dataset outside the root; every hash rebound."""
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copytree(d / "data", outside / "data")
    shutil.copy(d / "mmfi-manifest.json", outside / "mmfi-manifest.json")
    edit_json(d / "mmfi-split.json", lambda s: s["manifest"].__setitem__("path", "../outside/mmfi-manifest.json"))
    _rebind(d, "pose")


def test_the_split_cannot_send_the_re_run_outside_the_root(d, tmp_path):
    """The split names a copy of the manifest and dataset outside the root: the re-run's windows step followed it
    (the report's own manifest input, inside the root, was never what the child read)."""
    _split_names_an_outside_copy(d, tmp_path)
    result = rfbench(*verify_args(d, d / "pose" / "report.json"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "the manifest the split names" in result.stderr and "outside the verify root" in result.stderr


def test_compare_re_scores_only_from_files_under_its_root(d, tmp_path):
    """compare re-reads a report's ground truth from the dataset in its own process: the split there names a
    manifest (and so a dataset) outside the root, which it followed before."""
    from rfbench.report.claims import load_claims
    from rfbench.report.compare import compare_report

    _split_names_an_outside_copy(d, tmp_path)
    claims = tmp_path / "claims.toml"
    claims.write_text('[[claim]]\nid = "c"\nmetric = "pck"\nvalue = 0.5\nunits = "m"\n'
                      'spec = { normalization = "bbox", k = 0.2, comparison = "<=", averaging = "micro" }\n'
                      'source = { citation = "a test" }\n')
    rescore = compare_report(d / "pose" / "report.json", load_claims([str(claims)]), root=d).to_dict()[
        "comparisons"][0]["rescore"]
    assert rescore["status"] == "unavailable" and "outside the verify root" in rescore["reason"], rescore


def test_a_label_set_an_index_names_reads_no_secret(d, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("".join(f"TOPSECRET-{k}\n" for k in range(5)))
    index = d / "windows" / "widar-test" / "index.json"
    edit_json(index, lambda i: i["settings"].__setitem__("label_set", str(secret)))
    _rebind(d, "gesture")
    result = rfbench(*verify_args(d, d / "gesture" / "report.json"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "TOPSECRET" not in result.stdout + result.stderr and "outside the verify root" in result.stderr
    scored = rfbench("score", "--task", "gesture", "--pred", d / "gesture" / "scores.npy", "--rows", index,
                     "--split", d / "widar-split.json", "--bootstrap", "20", "--json")
    assert "TOPSECRET" not in scored.stdout + scored.stderr
    assert scored.returncode == 0, scored.stdout + scored.stderr  # scored with the label set the index recorded


def test_an_honest_report_made_with_a_label_set_verifies(d):
    names = json.loads((d / "windows" / "widar-test" / "index.json").read_text())["labels"]["names"]
    (d / "labels.txt").write_text("\n".join(names) + "\n")
    for side in ("train", "test"):
        made = rfbench("windows", "widar-split.json", "--side", side, "-o", f"ls-{side}", "--resample", "32",
                       "--label-set", "labels.txt", cwd=d)
        assert made.returncode == 0, made.stdout + made.stderr
    steps = [("predict", "gesture/centroid.onnx", "--windows", "ls-test", "-o", "ls/scores.npy"),
             ("score", "--task", "gesture", "--pred", "ls/scores.npy", "--rows", "ls-test/index.json", "--split",
              "widar-split.json", "--bootstrap", "20", "-o", "ls/report.json")]
    for args in steps:
        made = rfbench(*args, cwd=d)
        assert made.returncode == 0, made.stdout + made.stderr
    assert "rfbench verify ls/report.json --root ." in made.stdout  # the printed command works as printed
    result = rfbench("verify", "ls/report.json", "--root", ".", cwd=d)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_honest_report_scored_with_a_layout_file_verifies(d):
    from rfbench.metrics.skeletons import H36M17

    roles = "".join(f'{r} = "{H36M17.joints[i]}"\n' for r, i in sorted(H36M17.roles.items()))
    (d / "layout.toml").write_text(f'name = "h36m-mine"\njoints = {json.dumps(list(H36M17.joints))}\n[roles]\n'
                                   f'{roles}')
    made = rfbench("score", "--task", "pose", "--pred", "pose/pred.npy", "--rows", "windows/mmfi-test/index.json",
                   "--split", "mmfi-split.json", "--skeleton", "layout.toml", "--units", "m", "--bootstrap", "20",
                   "-o", "lay/report.json", cwd=d)
    assert made.returncode == 0, made.stdout + made.stderr
    assert "h36m-mine@" in made.stdout
    result = rfbench("verify", "lay/report.json", "--root", ".", cwd=d)
    assert result.returncode == 0, result.stdout + result.stderr


# -- 5. verify's own work is bounded before any re-run --------------------------------------------------------


def _add_input(report: Path, path: str, size: int, role: str = "extra") -> None:
    edit_json(report, lambda r: r["inputs"].append({"role": role, "path": path, "bytes": size, "sha256": "0" * 64,
                                                    "option": None}))


@pytest.mark.parametrize("limits, message", [([], "--max-gb"), (["--max-gb", "1000000"], "within 3 s")])
def test_a_huge_sparse_input_does_not_hold_verify(d, limits, message):
    big = d / "pose" / "big.bin"
    try:
        with open(big, "wb") as fh:
            fh.truncate(15 * 2**40)  # 15 TiB that take no disk
    except OSError:
        pytest.skip("this file system cannot hold a 15 TiB sparse file")
    _add_input(d / "pose" / "report.json", "big.bin", 15 * 2**40)
    result = rfbench(*verify_args(d, d / "pose" / "report.json"), "--timeout", "3", "--cpu-seconds", "5",
                     *limits, timeout=120)
    assert result.returncode in (1, 2), result.stdout + result.stderr
    assert message in result.stderr


def test_each_distinct_file_is_hashed_once_however_many_records_name_it(d, monkeypatch):
    from rfbench.errors import RfbenchError
    from rfbench.report.verify import verify_report

    report = d / "pose" / "report.json"
    pred = d / "pose" / "pred.npy"
    read = {"bytes": 0}
    real_read = os.read

    def counting(fd, n):
        data = real_read(fd, n)
        read["bytes"] += len(data)
        return data

    def parent_reads() -> int:
        read["bytes"] = 0
        monkeypatch.setattr(os, "read", counting)
        try:
            verify_report(report, root=d)
        except RfbenchError:
            pass
        finally:
            monkeypatch.setattr(os, "read", real_read)
        return read["bytes"]

    alone = parent_reads()
    digest, size = _hash(pred)
    edit_json(report, lambda r: r["inputs"].extend({"role": f"copy-{k}", "path": "pred.npy", "bytes": size,
                                                    "sha256": digest, "option": None} for k in range(30)))
    assert parent_reads() < alone + 2 * size  # 30 more records of pred.npy, read once


def test_a_huge_report_is_refused_within_bounded_memory(tmp_path):
    import resource

    report = tmp_path / "report.json"
    with open(report, "w") as fh:  # 120 MB of empty lists: billions of bytes once parsed
        fh.write("[" + "[]," * (40 * 2**20) + "[]]")

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    result = subprocess.run([sys.executable, "-I", "-m", "rfbench", "verify", str(report)], capture_output=True,
                            text=True, timeout=120, preexec_fn=cap, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_a_report_of_many_values_is_refused_before_it_is_parsed(tmp_path):
    from rfbench.io.documents import MAX_JSON_VALUES

    report = tmp_path / "report.json"
    report.write_text("[" + "0," * MAX_JSON_VALUES + "0]")
    result = rfbench("verify", report)
    assert result.returncode == 2 and "JSON values" in result.stderr, result.stdout + result.stderr


# -- 6. every reader of a file someone else named is the safe opener --------------------------------------------


@pytest.mark.parametrize("command", ["audit", "score", "windows"])
@pytest.mark.parametrize("kind", ["dev-zero", "fifo"])
def test_a_manifest_path_that_is_no_file_is_refused_without_hanging(d, tmp_path, command, kind):
    target = "/dev/zero"
    if kind == "fifo":
        os.mkfifo(d / "manifest-fifo.json")
        target = "manifest-fifo.json"
    split = d / "mmfi-split.json"
    edit_json(split, lambda s: s["manifest"].__setitem__("path", target))
    args = {"audit": ["audit", split],
            "score": [a for a in _score_pose_argv(d, tmp_path / "r.json")],
            "windows": ["windows", split, "--side", "test", "-o", tmp_path / "w"]}[command]
    result = rfbench(*args, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "regular file" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "secret"])
def test_score_rows_never_reads_the_label_set_an_index_names(d, tmp_path, kind):
    index = d / "windows" / "widar-test" / "index.json"
    target = {"dev-zero": "/dev/zero", "fifo": str(tmp_path / "fifo"), "secret": str(tmp_path / "secret")}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "secret":
        Path(target).write_text("TOPSECRET-A\nTOPSECRET-B\n")
    edit_json(index, lambda i: i["settings"].__setitem__("label_set", target))
    edit_json(d / "gesture" / "scores.json", lambda r: r["windows"]["index"].__setitem__("sha256", _hash(index)[0]))
    result = rfbench("score", "--task", "gesture", "--pred", d / "gesture" / "scores.npy", "--rows", index,
                     "--split", d / "widar-split.json", "--bootstrap", "20", "--json", timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "TOPSECRET" not in result.stdout + result.stderr


# -- 8. smaller holes ----------------------------------------------------------------------------------------------


def _one_error_line(result) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert len([ln for ln in result.stderr.splitlines() if ln.startswith("error:")]) == 1, result.stderr


def test_a_key_given_twice_is_refused(d):
    report = d / "pose" / "report.json"
    text = report.read_text().rstrip()
    report.write_text(text[:-1] + ', "evidence": "MEASURED"}\n')  # Python keeps the last, other readers the first
    result = rfbench(*verify_args(d, report))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "'evidence' appears twice" in result.stderr
    split = d / "mmfi-split.json"
    split.write_text(split.read_text().rstrip()[:-1] + ', "protocol": "random"}\n')
    audit = rfbench("audit", split)
    assert audit.returncode == 2 and "'protocol' appears twice" in audit.stderr, audit.stdout + audit.stderr


def test_a_short_number_past_the_float_range_is_refused_not_read_as_infinity():
    """``1e999`` is five characters, yet read as a float it is infinity: the value the reader refuses when it is
    written ``Infinity``. It read as inf (and every check downstream had to catch it)."""
    from rfbench.errors import FormatError
    from rfbench.io.documents import parse_json_text

    for text in ('{"seed": 1e999}', '[-1E+400]', '{"a": [0.5, 2.5e308]}'):
        with pytest.raises(FormatError, match="too large for a float"):
            parse_json_text(text, "x.json")
    assert parse_json_text('[1e308, 2e-999, 0.25]', "x.json") == [1e308, 0.0, 0.25]  # finite: as written


def test_a_five_thousand_digit_number_is_one_line(d):
    report = d / "pose" / "report.json"
    edit_json(report, lambda r: r["bootstrap"].__setitem__("seed", 0))
    report.write_text(report.read_text().replace('"seed": 0', '"seed": ' + "7" * 5000, 1))
    result = rfbench(*verify_args(d, report))
    assert result.returncode == 2, result.stdout + result.stderr
    _one_error_line(result)
    assert "5000 characters" in result.stderr


@pytest.mark.parametrize("shape", ["arrays", "dotted keys"])
def test_a_claims_file_nested_200000_deep_is_one_line(d, tmp_path, shape):
    claims = tmp_path / "claims.toml"
    depth = 200_000
    claims.write_text("x = " + "[" * depth + "]" * depth + "\n" if shape == "arrays" else
                      "a" + ".a" * depth + " = 1\n")
    result = rfbench("compare", d / "pose" / "report.json", claims, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    _one_error_line(result)
    assert "levels" in result.stderr


def _edit_index(d: Path, change) -> None:
    edit_json(d / "windows" / "mmfi-test" / "index.json", change)
    _rebind(d, "pose")


@pytest.mark.parametrize("damage", ["index.x a string", "index.y missing", "cpu.flags a number", "no split input",
                                    "provenance a list"])
def test_hashed_but_malformed_fields_are_one_line(d, damage):
    report = d / "pose" / "report.json"
    if damage == "index.x a string":
        _edit_index(d, lambda i: i.__setitem__("x", "X.npy"))
    elif damage == "index.y missing":
        _edit_index(d, lambda i: i.pop("y"))
    elif damage == "cpu.flags a number":
        edit_json(d / "pose" / "pred.json", lambda r: r["cpu"].__setitem__("flags", 7))
        _rehash(report, {"pred-record"})
    elif damage == "no split input":
        edit_json(report, lambda r: r.__setitem__("inputs", [i for i in r["inputs"] if i["role"] != "split"]))
        _render(report)
    else:
        edit_json(report, lambda r: r.__setitem__("provenance", [r["provenance"]]))
    result = rfbench(*verify_args(d, report))
    assert result.returncode in (1, 2), result.stdout + result.stderr
    _one_error_line(result)


@pytest.mark.parametrize("name", ["h36m17 ", "H36M17", "h36m\u200b17", "ｈ36m17"])
def test_a_custom_layout_cannot_pass_as_a_built_in(d, tmp_path, name):
    from rfbench.metrics.skeletons import H36M17

    layout = tmp_path / "layout.json"
    layout.write_text(json.dumps({"name": name, "joints": list(H36M17.joints)}))
    argv = _score_pose_argv(d, tmp_path / "r.json")
    argv[argv.index("--skeleton") + 1] = layout
    result = rfbench(*argv)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "reads as the built-in layout 'h36m17'" in result.stderr


def test_terminal_escape_codes_from_files_are_shown_not_obeyed(d, tmp_path):
    report = d / "pose" / "report.json"
    edit_json(report, lambda r: r.update(rfbench_version="0.1.0\x1b[2J\x1b[1A"))
    _render(report)
    result = rfbench(*verify_args(d, report))
    assert "\x1b" not in result.stdout + result.stderr
    assert "\\x1b[2J" in result.stdout + result.stderr
    claims = tmp_path / "claims.toml"
    claims.write_text('[[claim]]\nid = "x"\nmetric = "pck"\nvalue = 0.5\nunits = "m"\n'
                      'source = { citation = "a paper \\u001b[2K\\u001b[1A erased" }\n')
    compared = rfbench("compare", d / "pose" / "report.json", claims)
    assert "\x1b" not in compared.stdout + compared.stderr, compared.stdout + compared.stderr


def test_verify_leaves_no_temporary_file_on_any_exit_path(d, tmp_path):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    report = d / "pose" / "report.json"
    done = subprocess.run([sys.executable, "-I", "-m", "rfbench", *map(str, verify_args(d, report))],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr

    def ours():  # (onnxruntime's import leaves a .ses file of its own there)
        return [p.name for p in scratch.iterdir() if p.name.startswith("rfbench")]

    assert ours() == []
    proc = subprocess.Popen([sys.executable, "-I", "-m", "rfbench", *map(str, verify_args(d, report))],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 120
    while not ours() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ours(), "verify made no temporary folder"
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM
    assert ours() == []


def test_a_test_side_of_byte_copies_of_training_files_is_refused(d, tmp_path):
    """A MEASURED report whose test side holds a byte copy of a training file: scored before without a word
    (unless --content was asked for)."""
    manifest = d / "mmfi-manifest.json"
    split = json.loads((d / "mmfi-split.json").read_text())

    def copy_one(m):
        m.update(synthetic=False)
        m.pop("synthetic_marker", None)
        recs = {r["id"]: r for r in m["recordings"]}
        train_file = recs[split["train"][0]]["files"][0]
        test_rec = recs[split["test"][0]]
        test_rec["files"][0].update(sha256=train_file["sha256"], bytes=train_file["bytes"])

    edit_json(manifest, copy_one)
    (d / "data" / "mmfi" / "RFBENCH_SYNTHETIC.json").unlink(missing_ok=True)
    made = rfbench("split", manifest, "--protocol", "mmfi-s2", "--actions", "p3", "-o", d / "split2.json")
    assert made.returncode == 0, made.stdout + made.stderr
    argv = _score_pose_argv(d, tmp_path / "r.json")
    argv[argv.index("--split") + 1] = d / "split2.json"
    argv.remove("--json")
    result = rfbench(*argv)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "byte-identical" in result.stderr and "--allow-shared-files" in result.stderr
    allowed = rfbench(*argv, "--allow-shared-files")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["evidence"] == "MEASURED" and report["shared_files"]["count"] == 1
    assert "Shared files" in allowed.stdout and "1 byte-identical dataset file(s)" in allowed.stdout


@pytest.mark.parametrize("units", ["mm", "furlongs"])
def test_pose_units_must_be_those_of_the_ground_truth_read_from_the_dataset(d, tmp_path, units):
    """MM-Fi's joints, read from the dataset by --rows, are in metres: --units mm named an MPJPE of 53.8 mm
    "0.0538 mm" (and compare called it the same unit as a published figure in mm) and verified as MATCH."""
    argv = ["score", "--task", "pose", "--pred", d / "pose" / "pred.npy", "--rows",
            d / "windows" / "mmfi-test" / "index.json", "--split", d / "mmfi-split.json", "--skeleton", "h36m17",
            "--metrics", "mpjpe", "--bootstrap", "20", "-o", tmp_path / "r.json"]
    result = rfbench(*argv, "--units", units)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "is in metres" in result.stderr and "use --units m" in result.stderr
    assert not (tmp_path / "r.json").exists()
    assert rfbench(*argv, "--units", "m").returncode == 0


def test_report_md_is_compared_byte_for_byte(d, tmp_path):
    """report.md bytes that are not UTF-8 were decoded with U+FFFD in their place, so a file holding other bytes
    where the rendering has U+FFFD (a unit typed with it) passed as identical."""
    argv = _score_pose_argv(d, d / "pose" / "f.json")
    argv[argv.index("--units") + 1] = "m\ufffd"
    assert rfbench(*argv).returncode == 0
    md = d / "pose" / "f.md"
    assert rfbench(*verify_args(d, d / "pose" / "f.json")).returncode == 0
    md.write_bytes(md.read_bytes().replace("\ufffd".encode(), b"\x80"))
    result = rfbench(*verify_args(d, d / "pose" / "f.json"))
    assert result.returncode == 1 and "report.md" in result.stdout + result.stderr, result.stdout + result.stderr


def test_a_version_that_is_not_one_is_refused(d):
    """rfbench_version is shown in report.md and the verdict and was not compared: a report naming itself
    "0.1.0 - independently audited; evidence upgraded to MEASURED" verified as MATCH."""
    report = d / "pose" / "report.json"
    edit_json(report, lambda doc: doc.__setitem__("rfbench_version", "0.1.0 - independently audited; evidence "
                                                                      "upgraded to MEASURED"))
    _render(report)
    result = rfbench(*verify_args(d, report))
    assert result.returncode == 2 and "is not a version rfbench writes" in result.stderr, result.stdout + result.stderr


@pytest.mark.parametrize("version", ["0.1.0+independently.audited", "0.1.0.audited", "0.1.0-MEASURED"])
def test_a_version_whose_label_carries_words_is_refused(d, version):
    """A version's local label (after +) took any text: "0.1.0+independently.audited" verified as MATCH and showed
    in report.md's last line (found by an adversarial probe; the test fails on the code before). A local label is
    now a commit as setuptools-scm writes one."""
    report = d / "pose" / "report.json"
    edit_json(report, lambda doc: doc.__setitem__("rfbench_version", version))
    _render(report)
    result = rfbench(*verify_args(d, report))
    assert result.returncode == 2 and "is not a version rfbench writes" in result.stderr, result.stdout + result.stderr


def test_a_zero_written_as_minus_zero_is_a_mismatch(d):
    """-0.0 == 0.0 in Python, so a report whose zeros were rewritten as -0.0 (report.md then shows -0.0000, a
    model "below" a baseline that is not) verified as MATCH."""
    report = d / "gesture" / "report.json"
    edit_json(report, lambda doc: doc["domains"]["keys"][1]["values"][0]["model"].__setitem__("accuracy", -0.0))
    assert json.loads(report.read_text())["domains"]["keys"][1]["values"][0]["model"]["accuracy"] == 0.0
    _render(report)
    assert "-0.0000" in report.with_suffix(".md").read_text()
    result = rfbench(*verify_args(d, report))
    assert result.returncode == 1 and "-0.0 in the report, 0.0 now" in result.stderr, result.stdout + result.stderr


def test_a_robustness_summary_value_of_minus_zero_is_not_its_rebuilt_zero():
    """The summary's rebuilt fields are compared by ``_close``, which took -0.0 for 0.0 as ``==`` does (and, until
    2026-12-07, floats within a relative 1e-12 and an integer for its float: exactly now)."""
    from rfbench.report.verify import same_value
    from rfbench.report.verify_robustness import _close

    assert not _close(-0.0, 0.0) and not _close(0.0, -0.0) and _close(-0.0, -0.0) and _close(0.5, 0.5)
    assert not _close(0.5, 0.5 + 1e-16) and not _close(30, 30.0) and not _close(True, 1)
    assert not same_value(-0.0, 0.0) and same_value(0.0, 0.0) and not same_value(1, 1.0) and not same_value(True, 1)


def test_a_report_reached_through_a_symbolic_link_is_refused(d):
    """pose/report.json a link to pose/.real/report.json (its inputs one folder further up): verify checked the
    report.md and pictures beside the link's target, while a reader opens those beside the link — a forged
    report.md there verified as MATCH."""
    pose = d / "pose"
    real = pose / ".real"
    real.mkdir()
    doc = json.loads((pose / "report.json").read_text())
    for item in doc["inputs"]:
        item["path"] = "../" + item["path"]
    (real / "report.json").write_text(json.dumps(doc, indent=2, sort_keys=True))
    _render(real / "report.json")
    for picture in doc.get("pictures") or []:
        shutil.copy(pose / picture["file"], real / picture["file"])
    md = (pose / "report.md").read_text()
    value = f"{doc['results'][0]['model']['value']:.4f}"
    assert value in md
    (pose / "report.md").write_text(md.replace(value, "0.9900", 1))
    (pose / "report.json").unlink()
    (pose / "report.json").symlink_to(".real/report.json")
    assert rfbench(*verify_args(d, real / "report.json")).returncode == 0  # the real file, with its own report.md
    result = rfbench(*verify_args(d, pose / "report.json"))
    assert result.returncode == 2 and "a symbolic link" in result.stderr, result.stdout + result.stderr


def test_a_report_padded_with_made_up_keys_is_a_mismatch_listing_a_bounded_number(d):
    """Millions of made-up keys in a section (50 MB, under the report's size cap) made verify list every one as a
    difference, well past --timeout; the comparison now stops after MAX_DIFFERENCES and checks the deadline."""
    from rfbench.report.verify import MAX_DIFFERENCES

    report = d / "pose" / "report.json"
    edit_json(report, lambda doc: doc["coverage"].update({f"k{i}": i for i in range(3 * MAX_DIFFERENCES)}))
    _render(report)
    result = rfbench(*verify_args(d, report), "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    verdict = json.loads(result.stdout)
    assert len(verdict["differences"]) == MAX_DIFFERENCES + 1
    assert verdict["differences"][-1]["report"] == f"more than {MAX_DIFFERENCES} differences"


def test_a_model_that_reads_its_answers_off_the_batch_is_refused(d, tmp_path):
    """A model holding the test side's labels as a table, cut to its batch's row count (its input unused): predict
    ran it, score gave accuracy 1.0 and verify, replaying the recorded batch size, said MATCH. A row's output must
    now be the model's answer to that row alone, in predict and so in verify's replay of it."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    windows = d / "windows" / "bvp-test"  # 102 rows of 6 classes: no random draw of 8 keeps every label
    x = np.load(windows / "X.npy", mmap_mode="r")
    y = np.load(windows / "y.npy")
    k = len(json.loads((windows / "index.json").read_text())["labels"]["names"])
    table = np.zeros((len(y), k), np.float32)
    table[np.arange(len(y)), y] = 1.0
    zero, axis = numpy_helper.from_array(np.array([0], np.int64), "zero"), numpy_helper.from_array(
        np.array([0], np.int64), "axis")
    graph = helper.make_graph(
        [helper.make_node("Shape", ["x"], ["shape"], end=1),
         helper.make_node("Slice", ["table", "zero", "shape", "axis"], ["scores"])],
        "table", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *x.shape[1:]])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N", k])],
        [numpy_helper.from_array(table, "table"), zero, axis])
    model = tmp_path / "table.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), model)
    result = rfbench("predict", model, "--windows", windows, "-o", tmp_path / "scores.npy")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "depends on the other rows of its batch" in result.stderr, result.stderr
    assert not (tmp_path / "scores.npy").exists()


def test_invisible_and_bidi_characters_are_shown_in_report_md():
    """A class or joint name holding a right-to-left override (or a zero-width space) reorders or hides what a
    reader of report.md sees: such characters are written as their escapes, in text and in code spans."""
    from rfbench.report.render import _code, _md

    assert _md("Clap\u202e5.0") == "Clap\\\\u202e5.0" and "\u202e" not in _md("Clap\u202e5.0")
    assert _code("a\u200bb") == "`a\\u200bb`"
    assert "\u2066" not in _md("x\u2066y") and "\ufeff" not in _code("\ufeffz")


def test_the_terminal_escapes_every_character_report_md_escapes():
    """One set of invisible characters, declared once: each character report.md writes as an escape is written as
    one on the terminal too (the soft hyphen was missing there), besides the control characters."""
    from rfbench.commands._common import clean_text
    from rfbench.report.render import _md

    hidden = [chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF and f"\\u{c:04x}" in _md(chr(c))]
    assert "\u00ad" in hidden and "\u202e" in hidden and "\u200b" in hidden
    assert [ch for ch in hidden if ch in clean_text(ch)] == []
    assert clean_text("\x1b[2J") == "\\x1b[2J" and clean_text("\ud800") == "\\ud800"


def strip_generated_records(tree) -> None:
    """Take the generator's first record off every log under ``tree``: logs as a real capture has them."""
    from rfbench.io.intel5300 import GENERATED_RECORD

    for path in tree.rglob("*.dat"):
        data = path.read_bytes()
        if data.startswith(GENERATED_RECORD):
            path.write_bytes(data[len(GENERATED_RECORD):])


def test_a_test_side_of_near_copies_of_training_logs_is_refused(d, tmp_path):
    """Every test recording replaced by a training recording of its label, each log with one bit of its first
    record's time stamp flipped: no file is byte-identical and every id check passes, and score made a MEASURED
    report of accuracy 1.0 that verified as MATCH. Score now checks the sides' content itself."""
    import itertools

    tree = tmp_path / "widar"
    shutil.copytree(d / "data" / "widar" / "CSI", tree / "CSI")  # without the generators' marker: "real" data
    strip_generated_records(tree)
    manifest = json.loads((d / "widar-manifest.json").read_text())
    split = json.loads((d / "widar-split.json").read_text())
    recs = {r["id"]: r for r in manifest["recordings"]}
    pools: dict = {}
    for rid in split["train"]:
        pools.setdefault(recs[rid]["label"], []).append(recs[rid])
    cycle = {label: itertools.cycle(v) for label, v in pools.items()}
    for rid in split["test"]:
        source = {f["receiver"]: f["path"] for f in next(cycle[recs[rid]["label"]])["files"]}
        for f in recs[rid]["files"]:
            data = bytearray((tree / source[f["receiver"]]).read_bytes())
            data[3] ^= 1  # the first record's time stamp (after its 2-byte length and 1-byte code)
            (tree / f["path"]).write_bytes(bytes(data))
    assert rfbench("ingest", "widar", tree, "-o", tmp_path / "m.json").returncode == 0
    made = rfbench("split", tmp_path / "m.json", "-p", "cross-room", "--test", "3", "-o", tmp_path / "s.json")
    assert made.returncode == 0, made.stdout + made.stderr
    test = json.loads((tmp_path / "s.json").read_text())["test"]
    labels = {r["id"]: r["label"] for r in json.loads((tmp_path / "m.json").read_text())["recordings"]}
    np.save(tmp_path / "gt.npy", np.array([labels[t] for t in test]))
    np.save(tmp_path / "groups.npy", np.array(test))
    argv = ["score", "--task", "gesture", "--pred", tmp_path / "gt.npy", "--gt", tmp_path / "gt.npy", "--groups",
            tmp_path / "groups.npy", "--split", tmp_path / "s.json", "-o", tmp_path / "r.json"]
    result = rfbench(*argv)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "hold the same content under different names" in result.stderr
    assert not (tmp_path / "r.json").exists()
    allowed = rfbench(*argv, "--allow-shared-files")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["evidence"] == "MEASURED" and report["split"]["audit"]["passed"] is False
    assert [c["passed"] for c in report["split"]["audit"]["checks"] if c["name"] == "content-disjoint"] == [False]
    assert any(n.startswith("content shared across the split's sides") for n in report["notes"])
    assert "audit FAILED" in (tmp_path / "r.md").read_text()


# -- 7. the manifest is what ingest makes of the tree ----------------------------------------------------------

_BVP_SCORE = ["score", "--task", "gesture", "--pred", "bvp/scores.npy", "--rows", "windows/bvp-test/index.json",
              "--domains", "auto", "--split", "bvp-split.json", "--manifest", "bvp-manifest.json", "--cluster-by",
              "recording", "--bootstrap", "1000", "--confidence", "0.95", "--seed", "0", "-o", "bvp/report.json",
              "--plots", "--force"]


def _bvp_rechain(d: Path) -> dict:
    """The demo's BVP chain made again in ``d`` over its (edited) manifest: split, both windows, predict, score;
    returns the new report."""
    steps = [["split", "bvp-manifest.json", "-p", "cross-location", "--test", "3", "--gestures", "common6", "-o",
              "bvp-split.json", "--force"],
             ["windows", "bvp-split.json", "--side", "train", "-o", "windows/bvp-train", "--force"],
             ["windows", "bvp-split.json", "--side", "test", "-o", "windows/bvp-test", "--force"],
             ["predict", "bvp/centroid.onnx", "--windows", "windows/bvp-test", "-o", "bvp/scores.npy", "--force"],
             _BVP_SCORE]
    for step in steps:
        proc = rfbench(*step, cwd=d)
        assert proc.returncode == 0, (step, proc.stdout, proc.stderr)
    return json.loads((d / "bvp" / "report.json").read_text())


def _accuracy(report: dict) -> float:
    return next(r["model"]["value"] for r in report["results"] if r["metric"] == "accuracy")


def _misclassified(d: Path) -> tuple[dict, list]:
    """The demo's BVP manifest and, for each test row the model gets wrong, (recording id, predicted name)."""
    index = json.loads((d / "windows" / "bvp-test" / "index.json").read_text())
    names = index["labels"]["names"]
    pred = np.load(d / "bvp" / "scores.npy").argmax(1)
    y = np.load(d / "windows" / "bvp-test" / "y.npy")
    wrong = [(row["id"], names[p]) for row, p, t in zip(index["rows"], pred, y) if p != t]
    return json.loads((d / "bvp-manifest.json").read_text()), wrong


def _relabel(doc: dict, wrong: list) -> None:
    """Each misclassified test recording's label set to what the model predicted."""
    by = {r["id"]: r for r in doc["recordings"]}
    for rid, name in wrong:
        by[rid]["label"] = by[rid]["gesture"] = name


def _list_twice(doc: dict, wrong: list) -> None:
    """Every correctly classified test recording listed twice more, under new ids, with the same file."""
    bad = {rid for rid, _ in wrong}
    test = json.loads((Path(doc["_d"]) / "bvp-split.json").read_text())["test"]
    for rec in [r for r in doc["recordings"] if r["id"] in test and r["id"] not in bad]:
        for k in (1, 2):
            doc["recordings"].append(dict(rec, id=f"{rec['id']}-copy{k}", capture=f"{rec['capture']}-copy{k}"))
    doc["recordings"].sort(key=lambda r: r["id"])


def _hide_as_empty(doc: dict, wrong: list) -> None:
    """Each misclassified test recording's frames set to 0 (windows then excludes it unread)."""
    bad = {rid for rid, _ in wrong}
    for rec in doc["recordings"]:
        if rec["id"] in bad:
            rec["frames"] = 0


@pytest.mark.long
@pytest.mark.parametrize("edit", [_relabel, _list_twice, _hide_as_empty], ids=["relabel", "list-twice", "hide"])
def test_a_manifest_edited_and_the_chain_made_again_is_a_mismatch(d, edit):
    """The manifest is a file the scored party writes: with its labels set to the model's predictions, its
    correct recordings listed again, or its wrong ones declared empty, and split, windows, predict and score run
    again over it, every later link agrees with it and the number goes up. verify ingests the tree again."""
    doc, wrong = _misclassified(d)
    assert wrong, "the tiny demo's BVP model gets some test recordings wrong"
    before = _accuracy(json.loads((d / "bvp" / "report.json").read_text()))
    doc["_d"] = str(d)
    edit(doc, wrong)
    del doc["_d"]
    (d / "bvp-manifest.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
    if edit is _hide_as_empty:
        _BVP_SCORE.append("--allow-partial")
    try:
        report = _bvp_rechain(d)
    finally:
        if edit is _hide_as_empty:
            _BVP_SCORE.remove("--allow-partial")
    assert _accuracy(report) > before  # the forgery works on every link but verify
    proc = rfbench(*verify_args(d, d / "bvp" / "report.json"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "bvp-manifest.json is not what ingest makes of its dataset tree" in proc.stderr
    assert "MATCH " not in proc.stdout


def test_verify_ingests_the_tree_again_and_finds_deleted_training_files(d):
    """The training side's files are never read by the test side's replay, yet the baseline and the default
    T_max come from its recordings: deleting them leaves the scored report unchanged, but not the tree."""
    split = json.loads((d / "bvp-split.json").read_text())
    doc = json.loads((d / "bvp-manifest.json").read_text())
    train = [r for r in doc["recordings"] if r["id"] in set(split["train"])][:3]
    for rec in train:
        (d / "data" / "bvp" / rec["files"][0]["path"]).unlink()
    proc = rfbench(*verify_args(d, d / "bvp" / "report.json"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "is not what ingest makes of its dataset tree" in proc.stderr


def test_max_gb_covers_the_tree_ingested_again(d):
    """verify ingests the whole dataset tree again: a 50 GB sparse file dropped into it is refused by --max-gb
    before anything is read, not hashed until the timeout."""
    big = d / "data" / "mmfi" / "E01" / "big.bin"
    with open(big, "wb") as fh:
        fh.truncate(50 << 30)
    started = time.monotonic()
    proc = rfbench(*verify_args(d, d / "pose" / "report.json"), "--max-gb", "1", timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ingested again: verify would hash" in proc.stderr and "more than its limit of 1" in proc.stderr
    assert time.monotonic() - started < 30


# -- 8. which dataset: the manifest's root is the scored party's word -------------------------------------------


def test_verify_names_the_dataset_tree_and_holds_it_to_the_one_given(d, tmp_path):
    report = d / "bvp" / "report.json"
    plain = rfbench(*verify_args(d, report))
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert f"dataset tree: {d / 'data' / 'bvp'} (ingested again: " in " ".join(plain.stdout.split()), plain.stdout
    assert "pin it with --dataset DIR" in " ".join(plain.stdout.split())
    pinned = rfbench(*verify_args(d, report), "--dataset", d / "data" / "bvp", "--json")
    assert pinned.returncode == 0, pinned.stdout + pinned.stderr
    (tree,) = json.loads(pinned.stdout)["datasets"]
    assert tree["tree"] == str(d / "data" / "bvp") and tree["pinned"] is True and tree["files"] > 0
    # another folder, a subfolder of the real one included, is not the tree the chain rests on
    for other in (d / "data" / "widar", d / "data" / "bvp" / "BVP"):
        proc = rfbench(*verify_args(d, report), "--dataset", other)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "not the one given" in proc.stderr and "MATCH " not in proc.stdout
        # the MISMATCH names the tree the chain rests on, as a MATCH does (--json too)
        assert f"dataset tree: {d / 'data' / 'bvp'} (" in " ".join(proc.stdout.split()), proc.stdout
    proc = rfbench(*verify_args(d, report), "--dataset", d / "data" / "widar", "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["status"] == "mismatch" and [t["tree"] for t in out["datasets"]] == [str(d / "data" / "bvp")]
    assert out["datasets"][0]["pinned"] is False and out["datasets"][0]["files"] == tree["files"]
    # a report scored from arrays (no split, no manifest) rests on no tree: it cannot be held to one
    import rfbench as rb

    plain_dir = d / "arrays"
    plain_dir.mkdir()
    gt = np.random.default_rng(0).normal(size=(8, 17, 2))
    np.save(plain_dir / "gt.npy", gt)
    np.save(plain_dir / "pred.npy", gt + 0.001)
    rb.score_pose(plain_dir / "pred.npy", plain_dir / "gt.npy", out=plain_dir / "report.json",
                  settings=rb.PoseSettings(skeleton="coco17", units="m", norm=("bbox",), k=(0.2,), metrics=("pck",)))
    assert rfbench(*verify_args(d, plain_dir / "report.json")).returncode == 0
    proc = rfbench(*verify_args(d, plain_dir / "report.json"), "--dataset", d / "data" / "mmfi")
    assert proc.returncode == 1 and "rests on no dataset tree" in proc.stderr, proc.stdout + proc.stderr
    # ground truth the scored party supplied (--gt) rests on their file, not on the tree
    gt_report = d / "pose" / "gt-report.json"
    made = rfbench(*_score_pose_argv(d, gt_report))
    assert made.returncode == 0, made.stdout + made.stderr
    assert rfbench(*verify_args(d, gt_report)).returncode == 0  # it does verify: from their own files
    proc = rfbench(*verify_args(d, gt_report), "--dataset", d / "data" / "mmfi")
    assert proc.returncode == 1 and "a file the scored party supplied (--gt)" in proc.stderr, \
        proc.stdout + proc.stderr
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for bad, message in ((outside, "outside the verify root"), (d / "bvp-manifest.json", "not a folder")):
        proc = rfbench(*verify_args(d, report), "--dataset", bad)
        assert proc.returncode == 2 and message in proc.stderr, proc.stdout + proc.stderr


@pytest.mark.long
def test_a_doctored_copy_of_the_dataset_handed_over_beside_it_is_named_and_refused_under_dataset(d):
    """The scored party copies the corpus beside the real one, renames each test file the model gets wrong to
    the gesture it predicted, points the manifest at the copy and makes the chain again: every link agrees with
    the copy, the accuracy goes up, and verify MATCHed without saying which tree it had ingested."""
    doc, wrong = _misclassified(d)
    assert wrong, "the tiny demo's BVP model gets some test recordings wrong"
    before = _accuracy(json.loads((d / "bvp" / "report.json").read_text()))
    copy = d / "data" / ".copy"
    shutil.copytree(d / "data" / "bvp", copy)
    number = {(r["date"], r["gesture"]): r["gesture_number"] for r in doc["recordings"]}
    by = {r["id"]: r for r in doc["recordings"]}
    taken = {f["path"] for r in doc["recordings"] for f in r["files"]}
    renamed = 0
    for rid, name in wrong:
        rec = by[rid]
        if (rec["date"], name) not in number:
            continue
        folder, _, base = rec["files"][0]["path"].rpartition("/")
        parts = base.split("-")  # user, gesture, location, orientation, repetition, parameters..., link
        parts[1] = str(number[rec["date"], name])
        for rep in [parts[4], *map(str, range(90, 100))]:
            new = f"{folder}/{'-'.join(parts[:4] + [rep] + parts[5:])}"
            if new not in taken:
                break
        taken.add(new)
        (copy / rec["files"][0]["path"]).rename(copy / new)
        renamed += 1
    assert renamed
    proc = rfbench("ingest", "widar", "data/.copy", "-o", "bvp-manifest.json", "--force", cwd=d)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _accuracy(_bvp_rechain(d)) > before  # the forgery holds on every link
    plain = rfbench(*verify_args(d, d / "bvp" / "report.json"))
    assert plain.returncode == 0, plain.stdout + plain.stderr  # the chain does follow from the copy...
    assert f"dataset tree: {copy} (" in " ".join(plain.stdout.split()), plain.stdout  # ...and the verdict says so
    held = rfbench(*verify_args(d, d / "bvp" / "report.json"), "--dataset", d / "data" / "bvp")
    assert held.returncode == 1, held.stdout + held.stderr
    assert f"names the dataset tree {copy}, not the one given" in held.stderr and "MATCH " not in held.stdout


def test_under_dataset_a_tree_ingested_following_links_is_refused(tmp_path):
    """A manifest ingested with --follow-symlinks admits link targets anywhere under the verify root: under
    --dataset they are data outside the verifier's copy. (The flag is the manifest's own, but the tree is ingested
    again with it and compared, so it is what ingest did; it cannot be held to one folder.)"""
    from types import SimpleNamespace

    from rfbench.errors import VerificationError
    from rfbench.report.closed_world import ClosedWorld
    from rfbench.report.verify import _dataset_trees, _hold_to_pinned

    tree = tmp_path / "tree"
    tree.mkdir()
    doc = {"recordings": [{"id": "a", "files": [{"path": "a.dat"}]}], "problems": [{"path": "x", "reason": "r"}]}
    world = ClosedWorld(root=tmp_path)
    world.manifests = [(SimpleNamespace(path=tmp_path / "m.json"), tree, doc)]

    def held_to(pinned):
        trees = _dataset_trees(world)
        _hold_to_pinned(trees, world, pinned, "r.json", {"inputs": []})
        return trees

    (held,) = held_to([tree])
    assert held == {"tree": str(tree), "manifest": str(tmp_path / "m.json"), "files": 1, "left_out": 1,
                    "pinned": True, "convention": None, "convention_pinned": False}
    doc["follow_symlinks"] = True
    assert held_to(None)[0]["pinned"] is False  # named, unpinned
    with pytest.raises(VerificationError, match="ingested following links"):
        held_to([tree])


# -- 9. time of check, time of use: a file rewritten in place while verify runs ------------------------------------


def test_a_re_run_reads_the_bytes_verify_hashed_or_nothing(tmp_path, monkeypatch):
    """A file rewritten in place keeps its device, inode and size, the world's whole identity check: a watcher
    writing forged predictions into pred.npy while the re-run read it, and the honest bytes back before verify's
    own reads, gave a forged accuracy of 1.0 with MATCH. A re-run child now reads a private copy of the bytes,
    checked against the sha256 verify hashed, or refuses the file."""
    import hashlib

    import rfbench.io.world as world_module
    from rfbench.datasets.windows.dataset_files import DatasetFiles
    from rfbench.io.files import open_input, open_regular, read_regular
    from rfbench.io.world import NotAdmitted, World

    path = tmp_path / "pred.npy"
    path.write_bytes(b"honest!!")
    info = os.stat(path)
    key = (info.st_dev, info.st_ino)
    monkeypatch.setattr(world_module, "_active", World(str(tmp_path / "scratch"), {key: 8},
                                                       {key: hashlib.sha256(b"honest!!").hexdigest()}))
    fd = open_regular(path)
    fh = open_input(path, "pred", "an array")
    with open(path, "r+b") as w:  # in place: the same inode and size
        w.write(b"forged!!")
    assert os.stat(path).st_ino == info.st_ino
    assert os.read(fd, 100) == b"honest!!" and fh.read() == b"honest!!"  # what was opened stays what was hashed
    os.close(fd)
    fh.close()
    with pytest.raises(NotAdmitted, match="changed since verify hashed"):
        read_regular(path, 100, "pred")
    with pytest.raises(NotAdmitted, match="changed since verify hashed"):
        DatasetFiles(tmp_path).read({"path": "pred.npy", "bytes": 8})
    path.write_bytes(b"honest!!")  # the bytes verify hashed again: read (a copy)
    assert read_regular(path, 100, "pred") == b"honest!!"


@pytest.mark.long
def test_a_chain_through_a_link_into_a_generated_tree_is_synthetic_and_verifies(d):
    """A link to the generated tree's CSI folder, whose marker sits one folder above: the chain scored MEASURED
    and verify said MATCH. Ingest finds the marker above the folder the link names now — by looking, not
    reading: a verify re-run reads only files under the tree, and reading it made the re-run fail."""
    (d / "f").mkdir()
    (d / "f" / "tree").symlink_to(d / "data" / "widar" / "CSI")
    steps = [["ingest", "widar", "f/tree", "-o", "f/manifest.json"],
             ["split", "f/manifest.json", "--protocol", "cross-room", "--test", "3", "-o", "f/split.json"],
             ["windows", "f/split.json", "--side", "test", "-o", "f/win-test", "--resample", "32"],
             ["predict", "gesture/centroid.onnx", "--windows", "f/win-test", "-o", "f/scores.npy"],
             ["score", "--task", "gesture", "--pred", "f/scores.npy", "--rows", "f/win-test/index.json", "--split",
              "f/split.json", "--manifest", "f/manifest.json", "--bootstrap", "20", "-o", "f/report.json"]]
    for step in steps:
        proc = rfbench(*step, cwd=d)
        assert proc.returncode == 0, (step, proc.stdout, proc.stderr)
    report = json.loads((d / "f" / "report.json").read_text())
    assert report["evidence"] == "SYNTHETIC", report["provenance"]
    proc = rfbench(*verify_args(d, d / "f" / "report.json"), timeout=600)
    assert proc.returncode == 0 and "MATCH" in proc.stdout, proc.stdout + proc.stderr
