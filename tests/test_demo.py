"""rfbench demo end to end (tiny corpus): reports written, SYNTHETIC, verified; a report edited by hand fails
verification while the untouched ones pass; the demo's folder rules; its predictors see the train side only."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from rfbench.cli import app


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """One tiny demo, run once for the module, in its own folder (the paths it records are relative)."""
    from typer.testing import CliRunner

    home = tmp_path_factory.mktemp("demo")
    old = Path.cwd()
    import os

    os.chdir(home)
    try:
        result = CliRunner().invoke(app, ["demo", "--size", "tiny", "--json"], catch_exceptions=False)
    finally:
        os.chdir(old)
    assert result.exit_code == 0, result.output
    return home, json.loads(result.stdout)


def in_dir(path: Path):
    import contextlib
    import os

    @contextlib.contextmanager
    def cm():
        old = Path.cwd()
        os.chdir(path)
        try:
            yield
        finally:
            os.chdir(old)

    return cm()


def test_demo_writes_verified_synthetic_reports_with_pictures(demo_run):
    home, out = demo_run
    assert out["evidence"] == "SYNTHETIC" and out["size"] == "tiny"
    assert [r["task"] for r in out["reports"]] == ["pose", "gesture", "gesture"]
    assert [r["name"] for r in out["reports"]] == ["pose", "gesture", "BVP"]
    for r in out["reports"]:
        assert r["verify"]["status"] == "match" and r["verify"]["compared"] > 100
        report = json.loads((home / r["report"]).read_text())
        assert report["evidence"] == "SYNTHETIC"
        assert report["split"]["audit"]["passed"] is True
        assert report["baseline"]["kind"] is not None  # a baseline from the training split was built
        md = (home / r["markdown"]).read_text()
        for pic in r["pictures"]:
            data = (home / pic).read_bytes()
            assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
            assert f"]({Path(pic).name})" in md  # embedded with a relative link
        # the pictures are listed (for report.md) and appear nowhere else in the JSON
        assert [p["file"] for p in report["pictures"]] == [Path(pic).name for pic in r["pictures"]]
        assert not any("png" in json.dumps(v) for k, v in report.items() if k not in ("reproducer", "pictures"))
    assert len(out["reports"][0]["pictures"]) == 2 and len(out["reports"][1]["pictures"]) == 1
    assert len(out["reports"][2]["pictures"]) == 1
    assert out["plots"] == "written"
    # The reproducer is a command a user can type from the folder the demo ran in.
    argv = out["reports"][0]["argv"]
    assert argv[:2] == ["rfbench", "score"] and "demo-out/pose/pred.npy" in argv


def test_pose_model_beats_the_mean_pose_and_gesture_stays_near_its_baseline(demo_run):
    # The generated pose CSI is a noisy linear function of the pose, the Widar-like CSI random: a model that
    # learns on the train side must beat the mean pose on PCK, and nothing can be learnt about gestures.
    home, out = demo_run
    pose = json.loads((home / out["reports"][0]["report"]).read_text())
    pck = next(r for r in pose["results"] if r["metric"] == "pck" and r["spec"]["k"] == 0.2
               and r["spec"]["normalization"] == "hip-width" and r["spec"]["averaging"] == "micro")
    assert pck["delta"] > 0 and pck["ci"]["delta"]["low"] > 0
    gesture = json.loads((home / out["reports"][1]["report"]).read_text())
    acc = next(r for r in gesture["results"] if r["metric"] == "accuracy")
    assert acc["ci"]["delta"]["low"] <= 0 <= acc["ci"]["delta"]["high"]


def test_the_bvp_run_beats_the_majority_class_on_a_cross_location_split(demo_run):
    # The generated BVP profiles carry the gesture: a centroid on the train side's mean profiles beats the
    # majority class on the held-out location, and the split is Widar3.0's cross-location on common6.
    home, out = demo_run
    report = json.loads((home / out["reports"][2]["report"]).read_text())
    acc = next(r for r in report["results"] if r["metric"] == "accuracy")
    assert acc["baseline"]["kind"] == "majority-class" and acc["ci"]["delta"]["low"] > 0
    assert report["split"]["protocol"] == "cross-location" and report["split"]["params"]["gestures"] == "common6"
    assert report["split"]["dataset"] == "widar3-bvp"
    index = json.loads((home / "demo-out" / "windows" / "bvp-test" / "index.json").read_text())
    assert index["x"]["shape"][1:] == [index["settings"]["t_max"], 20, 20]


def test_predictors_saw_the_train_side_only(demo_run):
    """The models are fitted on the train side's windows and predict the test side's, as the indexes say."""
    home, out = demo_run
    for k, split in enumerate(("mmfi", "widar", "bvp")):
        doc = json.loads((home / "demo-out" / f"{split}-split.json").read_text())
        train = {r["id"] for r in json.loads((home / "demo-out" / "windows" / f"{split}-train" / "index.json")
                                             .read_text())["rows"]}
        test = {r["id"] for r in json.loads((home / "demo-out" / "windows" / f"{split}-test" / "index.json")
                                            .read_text())["rows"]}
        assert train <= set(doc["train"]) and test <= set(doc["test"]) and not train & test
        report = json.loads((home / out["reports"][k]["report"]).read_text())
        assert "read from the dataset" in report["provenance"]["ground_truth"]
        assert [c["step"] for c in report["chain"]] == ["windows", "predict", "score"]


def test_printed_commands_rebuild_the_same_files(demo_run, runner):
    # The split and ingest commands the demo prints give byte-identical files.
    home, out = demo_run
    split_cmds = [c for c in out["commands"] if c.startswith("rfbench split") or c.startswith("rfbench ingest")]
    assert len(split_cmds) == 6
    before = {p: (home / "demo-out" / p).read_bytes() for p in
              ("widar-manifest.json", "mmfi-manifest.json", "widar-split.json", "mmfi-split.json",
               "bvp-manifest.json", "bvp-split.json")}
    with in_dir(home):
        for c in split_cmds:
            result = runner.invoke(app, c.split()[1:] + ["--json"])
            assert result.exit_code == 0, (c, result.output)
    for p, data in before.items():
        assert (home / "demo-out" / p).read_bytes() == data, p


@pytest.mark.long
def test_a_report_edited_by_hand_fails_verification_the_others_pass(demo_run, runner, tmp_path):
    home, _ = demo_run
    copy = tmp_path / "copy"
    shutil.copytree(home / "demo-out", copy / "demo-out")
    path = copy / "demo-out" / "gesture" / "report.json"
    report = json.loads(path.read_text())
    report["results"][0]["model"]["value"] = 0.999
    path.write_text(json.dumps(report))
    with in_dir(copy):
        result = runner.invoke(app, ["verify", "demo-out/gesture/report.json", "--root", "demo-out"])
        assert result.exit_code == 1, result.output
        assert "differ on re-run" in result.output and "0.999" in result.output
        for untouched in ("demo-out/pose/report.json",):
            ok = runner.invoke(app, ["verify", untouched, "--root", "demo-out"])
            assert ok.exit_code == 0, ok.output
            assert ok.output.startswith("MATCH")


def test_an_existing_folder_needs_force(runner, tmp_path):
    with in_dir(tmp_path):
        Path("mine").mkdir()
        Path("mine/notes.txt").write_text("keep me")
        result = runner.invoke(app, ["demo", "--out", "mine", "--size", "tiny"])
        assert result.exit_code == 2
        lines = [x for x in result.output.splitlines() if x.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: mine is not empty; pass --force")
        assert not Path("mine/pose").exists()


def test_force_refuses_a_folder_holding_the_users_own_data(runner, tmp_path):
    # `rfbench demo --out . --force` in a project whose data/ is the user's: refused, nothing deleted.
    with in_dir(tmp_path):
        Path("data").mkdir()
        Path("data/my_real_dataset.csv").write_text("subject,value\n1,2\n")
        Path("pose").mkdir()
        Path("pose/pred.npy").write_text("looks like the demo's, is in a folder that is not")
        result = runner.invoke(app, ["demo", "--out", ".", "--force", "--size", "tiny"])
    assert result.exit_code == 2, result.output
    lines = [x for x in result.output.splitlines() if x.strip()]
    assert lines == ["error: . is not empty and holds no RFBENCH_DEMO.json (the list of the files an earlier demo "
                     "wrote there), so --force cannot tell the demo's files from yours; it is left alone: choose an "
                     "empty or new --out"]
    assert (tmp_path / "data" / "my_real_dataset.csv").read_text() == "subject,value\n1,2\n"
    assert (tmp_path / "pose" / "pred.npy").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "pose"]


def test_the_marker_lists_every_file_the_demo_wrote(demo_run):
    import hashlib

    from rfbench.demo import MARKER

    home, _ = demo_run
    root = home / "demo-out"
    marker = json.loads((root / MARKER).read_text())
    assert marker["schema"] == "rfbench.demo-files/2"
    files = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()} - {MARKER}
    folders = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir()}
    assert set(marker["files"]) == files and set(marker["folders"]) == folders
    assert {"pose/report.json", "gesture/report.md", "mmfi-split.json", "data/mmfi/RFBENCH_SYNTHETIC.json"} <= files
    for rel in ("pose/report.json", "mmfi-split.json"):
        body = (root / rel).read_bytes()
        assert marker["contents"][rel] == {"size": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    assert set(marker["contents"]) == files


def test_force_with_a_marker_removes_exactly_the_listed_files(demo_run, tmp_path):
    from rfbench.demo import MARKER, prepare_folder

    home, _ = demo_run
    root = tmp_path / "demo-out"
    shutil.copytree(home / "demo-out", root)
    (root / "data" / "my_real_dataset.csv").write_text("mine")  # inside a folder the demo created
    (root / "notes.txt").write_text("mine too")
    (root / "pose" / "extra.npy").write_text("mine as well")
    listed = json.loads((root / MARKER).read_text())
    prepare_folder(root, force=True)
    left = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    assert left == ["data", "data/my_real_dataset.csv", "notes.txt", "pose", "pose/extra.npy"]
    assert not any((root / f).exists() for f in listed["files"])


def test_force_without_a_marker_refuses_even_a_folder_of_demo_names_only(demo_run, tmp_path):
    """The demo's names copy the real MM-Fi and Widar3.0 layouts: without the list, a name says nothing about who
    wrote the file, so even an unmarked copy of a demo folder is left alone."""
    from rfbench.demo import MARKER, prepare_folder
    from rfbench.errors import OutputExistsError

    home, _ = demo_run
    root = tmp_path / "old-demo-out"
    shutil.copytree(home / "demo-out", root)
    (root / MARKER).unlink()
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    with pytest.raises(OutputExistsError, match="holds no RFBENCH_DEMO.json"):
        prepare_folder(root, force=True)
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before


@pytest.mark.parametrize("entry", ["../outside.txt", "/etc/hostname", "notes.txt", "data/../../outside.txt",
                                   "data/my_real_dataset.csv"])
def test_a_marker_listing_what_the_demo_does_not_write_is_refused(tmp_path, entry):
    from rfbench.demo import MARKER, prepare_folder
    from rfbench.errors import FormatError

    root = tmp_path / "d"
    (root / "data").mkdir(parents=True)
    (root / "data" / "my_real_dataset.csv").write_text("mine")
    (root / "notes.txt").write_text("mine")
    (tmp_path / "outside.txt").write_text("not even in the folder")
    (root / MARKER).write_text(json.dumps({"schema": "rfbench.demo-files/2", "files": [entry], "folders": [],
                                           "contents": {}}))
    with pytest.raises(FormatError, match="which is not a path rfbench demo writes"):
        prepare_folder(root, force=True)
    assert (root / "data" / "my_real_dataset.csv").exists() and (root / "notes.txt").exists()
    assert (tmp_path / "outside.txt").exists()


def test_a_link_in_the_demo_folder_is_foreign(tmp_path):
    from rfbench.demo import prepare_folder
    from rfbench.errors import OutputExistsError

    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "widar").mkdir(parents=True)
    (elsewhere / "widar" / "precious.dat").write_text("mine")
    root = tmp_path / "d"
    root.mkdir()
    (root / "data").symlink_to(elsewhere)
    with pytest.raises(OutputExistsError, match="d is not empty and holds no RFBENCH_DEMO.json"):
        prepare_folder(root, force=True)
    assert (elsewhere / "widar" / "precious.dat").exists()


@pytest.mark.long
def test_demo_force_rewrites_its_own_files_and_keeps_the_users(demo_run, runner, tmp_path):
    home, _ = demo_run
    shutil.copytree(home / "demo-out", tmp_path / "demo-out")
    (tmp_path / "demo-out" / "data" / "my_real_dataset.csv").write_text("mine")
    (tmp_path / "demo-out" / "pose" / "report.md").unlink()  # a listed file removed by hand: nothing to remove
    with in_dir(tmp_path):
        result = runner.invoke(app, ["demo", "--size", "tiny", "--force", "--json"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "demo-out" / "data" / "my_real_dataset.csv").read_text() == "mine"
    assert json.loads((tmp_path / "demo-out" / "pose" / "report.json").read_text())["evidence"] == "SYNTHETIC"
    marker = json.loads((tmp_path / "demo-out" / "RFBENCH_DEMO.json").read_text())
    assert "data/my_real_dataset.csv" not in marker["files"] and "pose/report.json" in marker["files"]
    assert "data" not in marker["folders"]  # it held the user's file, so this run did not create it


@pytest.mark.parametrize("args, words", [
    (["--size", "huge"], "--size must be standard or tiny, got 'huge'"),
    (["--seed", "-1"], "--seed must be >= 0, got -1"),
])
def test_bad_usage_is_exit_2(runner, tmp_path, args, words):
    with in_dir(tmp_path):
        result = runner.invoke(app, ["demo", *args])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {words}"  # one line, nothing else
    assert not (tmp_path / "demo-out").exists()


@pytest.mark.long
def test_demo_without_matplotlib_says_plots_were_skipped(runner, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with in_dir(tmp_path):
        result = runner.invoke(app, ["demo", "--size", "tiny"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert "plots skipped: matplotlib is not installed; pictures need the plot extra: pip install 'rfbench[plot]'" \
        in result.output
    assert "Traceback" not in result.output
    assert not list(tmp_path.rglob("*.png"))
    md = (tmp_path / "demo-out" / "pose" / "report.md").read_text()
    assert "## Pictures" not in md
    assert "MATCH demo-out/pose/report.json" in result.output


@pytest.mark.long
def test_a_report_that_does_not_verify_makes_the_demo_exit_1(runner, tmp_path, monkeypatch):
    import rfbench.report.verify as verify_mod
    from rfbench.errors import VerificationError

    def mismatch(path, **kw):
        raise VerificationError(f"{path}: 1 value(s) differ on re-run (made up for this test)", differences=[])

    monkeypatch.setattr(verify_mod, "verify_report", mismatch)
    with in_dir(tmp_path):
        result = runner.invoke(app, ["demo", "--size", "tiny"], env={"COLUMNS": "100"})
    assert result.exit_code == 1, result.output
    assert "MISMATCH demo-out/pose/report.json" in result.output
    errors = [x for x in result.output.splitlines() if x.startswith("error:")]
    # the three reports, and the robustness summary (checked by the same verify)
    assert errors == [f"error: demo-out/{t}: 1 value(s) differ on re-run (made up for this test)"
                      for t in ("pose/report.json", "gesture/report.json", "bvp/report.json",
                                "pose/robustness/summary.json")]


def test_an_interrupted_demo_s_folder_says_it_did_not_finish(tmp_path):
    """Ctrl-C (or SIGTERM) mid-run left a marker like a finished run's: the folder read as a complete demo."""
    from rfbench.demo import MARKER, demo_folder
    from rfbench.errors import OutputExistsError

    out = tmp_path / "demo-out"
    with pytest.raises(KeyboardInterrupt):
        with demo_folder(out) as lay:
            (lay.root / "widar-manifest.json").write_text("{}")
            raise KeyboardInterrupt
    marker = json.loads((out / MARKER).read_text())
    assert marker["complete"] is False and marker["stopped_by"] == "KeyboardInterrupt"
    assert marker["files"] == ["widar-manifest.json"]
    with pytest.raises(OutputExistsError, match="interrupted demo run"):
        with demo_folder(out):
            pass
    with demo_folder(out, force=True) as lay:
        (lay.root / "widar-manifest.json").write_text("{}")
    marker = json.loads((out / MARKER).read_text())
    assert marker["complete"] is True and "stopped_by" not in marker


def test_force_refuses_a_listed_folder_replaced_by_a_link_before_removing_anything(demo_run, tmp_path):
    """The demo's windows/ folder replaced by a link to a copy (plus a file of the user's): --force removed the
    demo's other outputs, then stopped on windows/mmfi-train/X.npy with "pass --force" — given already, and of no
    help. It is refused before anything is removed now, naming the link; the link's target is left alone."""
    from rfbench.demo import MARKER, prepare_folder
    from rfbench.errors import OutputExistsError

    home, _ = demo_run
    root = tmp_path / "demo-out"
    shutil.copytree(home / "demo-out", root)
    victim = tmp_path / "victim"
    shutil.copytree(root / "windows", victim)
    (victim / "mine.txt").write_text("mine")
    shutil.rmtree(root / "windows")
    (root / "windows").symlink_to(victim)
    before = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    with pytest.raises(OutputExistsError, match=r"demo-out/windows is a link, which rfbench demo never writes; "
                                                r"--force does not remove it"):
        prepare_folder(root, force=True)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == before
    assert (root / MARKER).exists()
