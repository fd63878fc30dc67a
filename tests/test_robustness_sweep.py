"""rfbench robustness: the sweep's settings, what it takes from a score-like report, the summary and its cells
(the sweeps themselves are long tests)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rfbench.cli import app
from rfbench.errors import ValidationError
from rfbench.report.robustness import _parse_score_argv
from rfbench.report.robustness_settings import RobustnessSettings, cell_name, parse_severities
from rfbench.report.settings import BootstrapSettings, PoseSettings, ReportOptions


def test_severities_are_a_range_or_a_list():
    assert parse_severities("1-5") == (1, 2, 3, 4, 5)
    assert parse_severities("2-3") == (2, 3)
    assert parse_severities("5,1,3") == (1, 3, 5)
    assert parse_severities("4") == (4,)
    for bad in ("", "0-2", "3-1", "1-6", "1,1", "1,,2", "a", "1.5", "6"):
        with pytest.raises(ValidationError):
            parse_severities(bad)


def test_settings_list_their_cells_in_sweep_order():
    s = RobustnessSettings(corruptions=("noise", "dead-antenna"), severities="1,5", seeds=2)
    assert s.cells() == [("noise", 1, 0), ("noise", 1, 1), ("noise", 5, 0), ("noise", 5, 1),
                         ("dead-antenna", 1, 0), ("dead-antenna", 1, 1), ("dead-antenna", 5, 0),
                         ("dead-antenna", 5, 1)]
    assert len(RobustnessSettings().cells()) == 8 * 5
    assert cell_name("burst-loss", 3, 0) == "burst-loss-3-seed0"
    for bad in (dict(corruptions=("fog",)), dict(corruptions=("noise", "noise")), dict(severities="0"),
                dict(seeds=0), dict(seeds=26)):
        with pytest.raises(ValidationError):
            RobustnessSettings(**bad)


def test_the_score_settings_come_back_from_the_reproducer():
    argv = ["rfbench", "score", "--task", "pose", "--pred", "p.npy", "--rows", "w/index.json", "--skeleton",
            "h36m17", "--units", "m", "--norm", "hip-width,bbox", "--k", "0.05,0.2", "--auc-n", "20", "--auc-max",
            "1.0", "--split", "s.json", "--cluster-by", "recording", "--bootstrap", "200", "--confidence", "0.9",
            "--seed", "3", "-o", "r.json", "--plots", "--synthetic"]
    spec, boot, options = _parse_score_argv(argv, "pose")
    assert spec == PoseSettings(skeleton="h36m17", units="m", norm=("hip-width", "bbox"), k=(0.05, 0.2))
    assert boot == BootstrapSettings(replicates=200, confidence=0.9, seed=3)
    assert options == ReportOptions(synthetic=True)


def test_a_score_like_file_that_is_not_a_rows_report_is_one_line_exit_2(tmp_path):
    report = tmp_path / "r.json"
    report.write_text(json.dumps({"schema": "rfbench.report/1", "task": "pose", "inputs": [], "results": []}))
    result = CliRunner().invoke(app, ["robustness", "m.onnx", "--split", "s.json", "--score-like", str(report),
                                      "-o", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "score --rows" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()
    bad = CliRunner().invoke(app, ["robustness", "m.onnx", "--split", "s.json", "--score-like", str(report),
                                   "-o", str(tmp_path / "out"), "--severities", "0-9"])
    assert bad.exit_code == 2 and "severities" in bad.output


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _score_like(d, bootstrap: int) -> None:
    """``d/pose/like.json``: the demo pose model's score report, the sweep's --score-like."""
    like = CliRunner().invoke(app, ["score", "--task", "pose", "--pred", str(d / "pose" / "pred.npy"), "--rows",
                                    str(d / "windows" / "mmfi-test" / "index.json"), "--split",
                                    str(d / "mmfi-split.json"), "--skeleton", "h36m17", "--units", "m", "--norm",
                                    "hip-width", "--k", "0.2", "--metrics", "pck", "--bootstrap", str(bootstrap),
                                    "-o", str(d / "pose" / "like.json")])
    assert like.exit_code == 0, like.output


@pytest.fixture(scope="module")
def sweep(tiny_demo, tmp_path_factory):
    """A 2 × 2 sweep of the tiny demo's pose model, in a copy of the demo."""
    pytest.importorskip("onnxruntime")
    d = tmp_path_factory.mktemp("sweep") / "d"
    shutil.copytree(tiny_demo, d)
    _score_like(d, bootstrap=100)
    result = CliRunner().invoke(app, ["robustness", str(d / "pose" / "ridge.onnx"), "--split",
                                      str(d / "mmfi-split.json"), "--score-like", str(d / "pose" / "like.json"),
                                      "--corruptions", "noise,dead-antenna", "--severities", "1,5", "-o",
                                      str(d / "sweep"), "--json"])
    assert result.exit_code == 0, result.output
    return d, json.loads(result.stdout)


@pytest.mark.long
def test_the_summary_lists_every_cell_as_the_issue_asks(sweep):
    d, summary = sweep
    assert summary == json.loads((d / "sweep" / "summary.json").read_text())


@pytest.mark.long
def test_a_sweep_over_generated_data_is_synthetic(sweep):
    """Every cell report of the demo's data is SYNTHETIC (and carries no warning: h36m17 passes its layout check,
    no permissive flag); the summary had no tag, so the sweep read as measured."""
    d, summary = sweep
    reports = [summary["clean"]["report"]] + [c["report"] for c in summary["cells"]]
    assert {json.loads((d / "sweep" / r).read_text())["evidence"] for r in reports} == {"SYNTHETIC"}
    assert summary["evidence"] == "SYNTHETIC" and summary["warnings"] == []
    assert "5 SYNTHETIC" in summary["evidence_rule"]  # clean and the 2 × 2 cells
    assert summary["schema"] == "rfbench.robustness/1"
    assert [(c["corruption"], c["severity"], c["seed"]) for c in summary["cells"]] == [
        ("noise", 1, 0), ("noise", 5, 0), ("dead-antenna", 1, 0), ("dead-antenna", 5, 0)]
    clean = json.loads((d / "sweep" / "clean" / "report.json").read_text())
    clean_value = clean["results"][0]["model"]["value"]
    assert summary["clean"]["model"]["value"] == clean_value
    for cell in summary["cells"]:
        assert set(cell) == {"corruption", "severity", "seed", "report", "sha256", "model", "drop"}
        assert isinstance(cell["severity"], int)
        path = d / "sweep" / cell["report"]
        assert cell["sha256"] == _sha(path)
        report = json.loads(path.read_text())
        first = report["results"][0]
        assert cell["model"] == {"value": first["model"]["value"], "low": first["ci"]["model"]["low"],
                                 "high": first["ci"]["model"]["high"]}
        assert cell["drop"]["value"] == pytest.approx(clean_value - first["model"]["value"])
        assert cell["drop"]["low"] <= cell["drop"]["value"] <= cell["drop"]["high"]
        index = json.loads((path.parent / "windows" / "index.json").read_text())
        assert index["settings"]["corrupt"] == f"{cell['corruption']}:{cell['severity']}"
        assert report["chain"][0]["argv"][-4:] == ["--corrupt", index["settings"]["corrupt"], "--corrupt-seed",
                                                   "0"]
    assert {p.name for p in (d / "sweep").glob("*.png")} == {"robustness-noise.png", "robustness-dead-antenna.png"}
    for item in summary["corruptions"]:
        assert item["ce_vs_baseline"] is not None and item["ce"] is None
    # severity 5 of dead-antenna zeroes one antenna of every frame: the model's score moves
    dead5 = summary["cells"][3]
    assert dead5["model"]["value"] != clean_value


@pytest.mark.long
def test_a_cell_verifies_like_any_report_and_a_reference_gives_ce(sweep, tmp_path):
    d, summary = sweep
    from rfbench.report.verify import verify_report

    outcome = verify_report(d / "sweep" / summary["cells"][3]["report"], root=d)
    assert outcome.status == "match", outcome
    shutil.copy(d / "sweep" / "summary.json", tmp_path / "ref.json")
    result = CliRunner().invoke(app, ["robustness", str(d / "pose" / "ridge.onnx"), "--split",
                                      str(d / "mmfi-split.json"), "--score-like", str(d / "pose" / "like.json"),
                                      "--corruptions", "noise,dead-antenna", "--severities", "1,5", "-o",
                                      str(tmp_path / "again"), "--reference", str(tmp_path / "ref.json"), "--json"])
    assert result.exit_code == 0, result.output
    again = json.loads(result.stdout)
    # the same numbers (the reports' bytes differ: they name their own folder's paths)
    assert [(c["model"], c["drop"]) for c in again["cells"]] == [(c["model"], c["drop"]) for c in summary["cells"]]
    for item in again["corruptions"]:
        assert item["ce"] == pytest.approx(1.0)  # against itself
    assert again["mce"] == pytest.approx(1.0)


def _copied_sweep(sweep, tmp_path):
    """A copy of the sweep's folder, and ``verify(*options)`` of its summary (with the copy as --root)."""
    copy = tmp_path / "d"
    shutil.copytree(sweep[0], copy)

    def verify(*extra):
        return CliRunner().invoke(app, ["verify", str(copy / "sweep" / "summary.json"), "--root", str(copy),
                                        *extra])

    return copy, verify


@pytest.mark.long
def test_verify_checks_the_summary_against_its_cells(sweep, tmp_path):
    summary = sweep[1]
    copy, verify = _copied_sweep(sweep, tmp_path)

    ok = verify("--cell", "dead-antenna-5-seed0")
    assert ok.exit_code == 0, ok.output
    assert "cell dead-antenna-5-seed0 re-run: MATCH" in ok.output
    assert verify("--cell", "fog-1-seed0").exit_code == 2
    path = copy / "sweep" / "summary.json"
    doc = json.loads(path.read_text())
    doc["cells"][1]["model"]["value"] = 0.99  # a better number than the cell report holds
    path.write_text(json.dumps(doc))
    bad = verify()
    assert bad.exit_code == 1 and "cells[noise-5-seed0].model.value" in bad.output, bad.output
    doc["cells"][1]["model"]["value"] = summary["cells"][1]["model"]["value"]
    doc["mce_vs_baseline"] = 0.5  # a derived number that the cells do not give
    path.write_text(json.dumps(doc))
    assert verify().exit_code == 1
    path.write_text(json.dumps(summary))
    report = copy / "sweep" / summary["cells"][0]["report"]
    report.write_text(report.read_text().replace('"rows"', '"rows" '))  # any byte of a cell report
    bad = verify()
    assert bad.exit_code == 1 and "cells[noise-1-seed0].sha256" in bad.output, bad.output


# -- the sweep's one reading of the dataset ---------------------------------------------------------------------


def _side_copy(tiny_demo, home: Path) -> Path:
    d = home / "d"
    shutil.copytree(tiny_demo, d)
    return d


@pytest.mark.parametrize("name, corrupt", [("widar", "dead-antenna:5"), ("mmfi", "noise:3")])
def test_a_reading_builds_other_corruptions_from_the_first_build_alone_bit_for_bit(tiny_demo, tmp_path, name,
                                                                                    corrupt):
    """After the clean build through a Reading, a corrupted build through it reads no dataset file (they are
    gone), and writes the very bytes a build from the dataset writes."""
    from dataclasses import replace

    from rfbench.datasets.windows import load_index, write_windows
    from rfbench.datasets.windows.dataset_files import Reading

    kept, alone = _side_copy(tiny_demo, tmp_path / "kept"), _side_copy(tiny_demo, tmp_path / "alone")
    split = f"{name}-split.json"
    clean = replace(load_index(kept / "windows" / f"{name}-test" / "index.json", check_arrays=False)
                    .window_settings(), corrupt=None, corrupt_seed=None)
    cell = replace(clean, corrupt=corrupt, corrupt_seed=2)
    (tmp_path / "units").mkdir()
    reading = Reading(tmp_path / "units")
    write_windows(kept / split, "test", kept / "out" / "clean", clean, reading=reading)
    assert len(reading) > 0
    gone = [p for p in (kept / "data" / name).rglob("*") if p.is_file() and p.stat().st_size > 0]
    assert gone
    for p in gone:  # the test side's files (and every other): a second build must not need them
        p.unlink()
    write_windows(kept / split, "test", kept / "out" / "cell", cell, reading=reading)
    write_windows(alone / split, "test", alone / "out" / "cell", cell)
    write_windows(alone / split, "test", alone / "out" / "clean", clean)
    for folder in ("clean", "cell"):
        for file in ("X.npy", "y.npy", "index.json"):
            assert (kept / "out" / folder / file).read_bytes() == (alone / "out" / folder / file).read_bytes(), \
                (folder, file)
    index = json.loads((kept / "out" / "cell" / "index.json").read_text())
    assert index["settings"]["corrupt"] == corrupt and index["files"]  # the dataset files, named and hashed
    # without the reading, the same build reads the dataset, and finds it gone
    with pytest.raises(ValidationError, match="no such dataset file"):
        write_windows(kept / split, "test", kept / "out" / "again", cell)


def test_a_reading_reuses_a_side_only_for_another_corruption(tiny_demo, tmp_path):
    from dataclasses import replace

    from rfbench.datasets.windows import load_index
    from rfbench.datasets.windows.build import open_side
    from rfbench.datasets.windows.dataset_files import Reading

    split = tiny_demo / "widar-split.json"
    clean = replace(load_index(tiny_demo / "windows" / "widar-test" / "index.json", check_arrays=False)
                    .window_settings(), corrupt=None, corrupt_seed=None)
    reading = Reading(tmp_path)
    first = open_side(split, "test", clean, reading=reading)
    again = open_side(split, "test", replace(clean, corrupt="noise:1", corrupt_seed=4), reading=reading)
    assert again.split is first.split and again.manifest is first.manifest and again.labels == first.labels
    assert again.settings.corrupt == "noise:1" and again.files is not first.files
    other = open_side(split, "test", replace(clean, resample=16), reading=reading)
    assert other.manifest is not first.manifest and other.settings.resample == 16
    assert open_side(split, "train", clean, reading=reading).side == "train"


@pytest.mark.long
def test_a_cell_s_windows_are_the_bytes_rfbench_windows_writes_alone(sweep):
    """The sweep built the cell from its one reading; rfbench windows with the cell's own command line (its
    report's chain), run alone from the dataset into a folder as deep, writes the same X, y and index."""
    d, summary = sweep
    cell = d / "sweep" / summary["cells"][3]["report"]
    argv = json.loads(cell.read_text())["chain"][0]["argv"]
    assert argv[:2] == ["rfbench", "windows"] and "--corrupt" in argv
    alone = d / "alone" / "cells" / "dead-antenna-5-seed0" / "windows"
    argv = argv[1:]
    argv[1] = str(d / "mmfi-split.json")
    argv[argv.index("-o") + 1] = str(alone)
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    for name in ("X.npy", "y.npy", "index.json"):
        assert (alone / name).read_bytes() == (cell.parent / "windows" / name).read_bytes(), name
    assert not list((d / "sweep").glob(".reading-*"))  # the sweep's reading is gone with the sweep


@pytest.mark.long
def test_a_sweep_reads_each_dataset_file_once_and_leaves_no_reading_behind(tiny_demo, tmp_path, monkeypatch):
    """Every non-empty dataset file (the test side's CSI and ground truth, the train side's ground truth for the
    baseline) is read once for the whole sweep, by the clean run; an interrupted sweep removes its reading."""
    pytest.importorskip("onnxruntime")
    from rfbench.datasets.windows.dataset_files import DatasetFiles
    from rfbench.report.robustness import RobustnessSettings, run_robustness

    d = _side_copy(tiny_demo, tmp_path)
    _score_like(d, bootstrap=20)
    reads: dict = {}
    real = DatasetFiles.read

    def counted(self, entry):
        if entry.get("bytes"):
            reads[entry["path"]] = reads.get(entry["path"], 0) + 1
        return real(self, entry)

    monkeypatch.setattr(DatasetFiles, "read", counted)
    settings = RobustnessSettings(corruptions=("noise", "truncation"), severities="2,4", seeds=2)
    sweep = run_robustness(d / "pose" / "ridge.onnx", d / "mmfi-split.json", d / "pose" / "like.json",
                           d / "sweep", settings)
    assert len(sweep.summary["cells"]) == 8
    frames = [p for p in reads if p.endswith(".mat")]
    assert frames and any(p.endswith(".npy") for p in reads)
    assert set(reads.values()) == {1}, sorted(p for p, n in reads.items() if n > 1)[:3]
    assert not list((d / "sweep").glob(".reading-*"))

    from rfbench.nn import predict as predict_module

    calls = []
    real_predict = predict_module.predict

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_predict(*args, **kwargs)

    monkeypatch.setattr(predict_module, "predict", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_robustness(d / "pose" / "ridge.onnx", d / "mmfi-split.json", d / "pose" / "like.json", d / "cut",
                       settings)
    assert (d / "cut" / "clean" / "report.json").exists()
    assert not list((d / "cut").glob(".reading-*"))


@pytest.mark.long
def test_verify_all_re_runs_every_cell_and_a_changed_cell_fails_its_re_run(sweep, tmp_path):
    import numpy as np

    summary = sweep[1]
    copy, verify = _copied_sweep(sweep, tmp_path)

    every = verify("--all")
    assert every.exit_code == 0, every.output
    names = ["clean"] + [cell_name(c["corruption"], c["severity"], c["seed"]) for c in summary["cells"]]
    for name in names:
        assert f"cell {name} re-run: MATCH" in every.output, name
    pred = copy / "sweep" / "cells" / "noise-5-seed0" / "pred.npy"
    changed = np.load(pred)
    changed.flat[0] += 1.0
    np.save(pred, changed)
    assert verify().exit_code == 1  # every cell is re-run by default: the re-run finds the predictions changed
    one = verify("--cell", "noise-5-seed0")
    assert one.exit_code == 1 and "cell noise-5-seed0" in one.output and "inputs[pred]" in one.output, one.output
    assert verify("--all").exit_code == 1
    other = verify("--cell", "noise-1-seed0")  # the summary and the reports agree; the cells left out are named
    assert other.exit_code == 0 and "not compared: cells clean, noise-5-seed0, dead-antenna-1-seed0, " \
        "dead-antenna-5-seed0 (4 of 5): not re-run" in " ".join(other.output.split()), other.output


@pytest.mark.long
def test_a_cell_report_forged_with_its_sha256_recorded_is_a_mismatch_by_default(sweep, tmp_path):
    """A cell report's number changed, its report.md rendered again, its new sha256 and value written into the
    summary, every derived number and picture made again: the summary agrees with every file it names, and verify
    without --cell or --all said MATCH. Every cell is now re-run unless --cell names some."""

    from rfbench.report.robustness import _pictures

    copy, verify = _copied_sweep(sweep, tmp_path)
    path = copy / "sweep" / "summary.json"
    _pictures(_forge(path, _forged_cell(path, 1, 0.8)), path.parent)
    one = verify("--cell", "clean")  # the summary's own checks pass: only a re-run of the cell finds it
    assert one.exit_code == 0 and "noise-5-seed0" in one.output.split("not compared: cells ")[1], one.output
    bad = verify()
    assert bad.exit_code == 1 and "cell noise-5-seed0" in bad.output and "0.8 in the report" in bad.output, \
        bad.output


def _forged_cell(path: Path, k: int, value: float):
    """Cell ``k``'s report of the summary at ``path`` given the number ``value`` (its report.md rendered again),
    and the change that records its new sha256, value and drop in the summary (for :func:`_forge`)."""
    import hashlib

    from rfbench.report.render import render_markdown

    report = path.parent / json.loads(path.read_text())["cells"][k]["report"]
    doc = json.loads(report.read_text())
    doc["results"][0]["model"]["value"] = value
    report.write_text(json.dumps(doc, indent=2, sort_keys=True))
    report.with_suffix(".md").write_text(render_markdown(doc), encoding="utf-8")

    def forged(summary):
        summary["cells"][k]["sha256"] = hashlib.sha256(report.read_bytes()).hexdigest()
        summary["cells"][k]["model"]["value"] = value
        drop = summary["cells"][k]["drop"]
        moved = summary["clean"]["model"]["value"] - value - drop["value"]  # the interval moved with its drop
        drop.update(value=drop["value"] + moved, low=drop["low"] + moved, high=drop["high"] + moved)

    return forged


def _forge(path: Path, change) -> dict:
    """Edit a summary as a forger would: the change, then every derived number recomputed with rfbench's own
    functions, so only the check under test can fail."""
    from rfbench.report.robustness import aggregate

    doc = json.loads(path.read_text())
    change(doc)
    reference = None
    if doc.get("reference"):
        reference = json.loads((path.parent / doc["reference"]["path"]).read_text())
    doc.update(aggregate(doc["metric"]["better"], doc["clean"], doc["cells"], doc["baseline"]["value"], reference))
    path.write_text(json.dumps(doc))
    return doc


@pytest.mark.long
def test_verify_ties_each_cell_to_its_corruption_and_the_grid_to_the_settings(sweep, tmp_path):
    """A cell filed under a corruption it was not built with (the clean report, drop 0), or a cell listed again,
    verified as MATCH while moving mCE; each is now a MISMATCH naming what differs."""
    copy, verify = _copied_sweep(sweep, tmp_path)
    path = copy / "sweep" / "summary.json"
    honest = path.read_text()

    def clean_as_dead5(doc):
        doc["cells"][3].update(report="clean/report.json", sha256=doc["clean"]["sha256"], model=doc["clean"]["model"],
                               drop={"value": 0.0, "low": 0.0, "high": 0.0, "level": 0.95})

    _forge(path, clean_as_dead5)
    bad = verify()
    assert bad.exit_code == 1 and "cells[dead-antenna-5-seed0].windows.corrupt" in bad.output, bad.output
    path.write_text(honest)
    _forge(path, lambda doc: doc["cells"].insert(0, dict(doc["cells"][1])))
    bad = verify()
    assert bad.exit_code == 1 and "not the cells of its settings" in bad.output, bad.output
    assert "noise-5-seed0 twice" in bad.output


@pytest.mark.long
@pytest.mark.parametrize("field, value, named", [
    ("notes", ["MEASURED on real hardware"], "notes"),
    ("metric", {"label": "PCK@0.5 (a kinder threshold)", "better": "higher", "error": "1 − value"}, "metric"),
    ("task", "gesture", "task"),
    ("model", {"path": "../pose/ridge.onnx", "sha256": "0" * 64}, "model.sha256"),
    ("rfbench_version", "0.1.0 independently audited", None),
])
def test_verify_compares_every_field_of_the_summary(sweep, tmp_path, field, value, named):
    """Fields verify did not compare (they verified as MATCH whatever they said): now each is rebuilt from the
    files and compared, or (the version) must read as a version."""
    copy, verify = _copied_sweep(sweep, tmp_path)
    _forge(copy / "sweep" / "summary.json", lambda doc: doc.__setitem__(field, value))
    bad = verify()
    if named is None:
        assert bad.exit_code == 2 and "is not a version" in bad.output, bad.output
    else:
        assert bad.exit_code == 1 and named in bad.output, bad.output


def _extra_key(where: str):
    def change(doc):
        {"top": doc, "settings": doc["settings"], "clean": doc["clean"], "cell": doc["cells"][0],
         "cell-model": doc["cells"][0]["model"], "drop": doc["cells"][0]["drop"], "inputs": doc["model"]}[where][
            "evidence"] = "MEASURED"
    return change


@pytest.mark.long
@pytest.mark.parametrize("where", ["top", "settings", "clean", "cell", "cell-model", "drop", "inputs"])
def test_a_key_rfbench_does_not_write_anywhere_in_the_summary_is_a_mismatch(sweep, tmp_path, where):
    """Only a fixed list of fields was compared: a summary carrying `"evidence": "MEASURED"` at its top, in its
    settings or in a cell entry (or a headline, a note) verified as MATCH with every cell re-run. (A summary now
    has a tag at its top, SYNTHETIC here: MEASURED there is an edited tag, rebuilt from the cell reports.)"""
    copy, verify = _copied_sweep(sweep, tmp_path)
    _forge(copy / "sweep" / "summary.json", _extra_key(where))
    bad = verify("--cell", "clean")
    assert bad.exit_code == 1 and "evidence" in bad.output and "MATCH " not in bad.output, bad.output


@pytest.mark.long
@pytest.mark.parametrize("change, named", [
    (lambda doc: doc["cells"][3]["drop"].update(high="\u001b[2J 99.9", level="approved", low=[]), "drop.high"),
    (lambda doc: doc["corruptions"][1]["levels"][0].update(severity=True), "severity"),
])
def test_what_verify_does_not_recompute_is_still_what_rfbench_writes(sweep, tmp_path, change, named):
    """The drop intervals (then not recomputed) took any value — text with a terminal escape, a list — and a severity
    of `true` read as 1: both MATCHed."""
    copy, verify = _copied_sweep(sweep, tmp_path)
    path = copy / "sweep" / "summary.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    bad = verify("--cell", "clean")
    assert bad.exit_code == 1 and named in bad.output and "MATCH " not in bad.output, bad.output


@pytest.mark.long
def test_a_cell_entry_naming_another_report_path_is_a_mismatch(sweep, tmp_path):
    copy, verify = _copied_sweep(sweep, tmp_path)
    report = copy / "sweep" / sweep[1]["cells"][0]["report"]
    shutil.copyfile(report, report.with_name("copy.json"))  # (beside it: its relative paths still resolve)
    _forge(copy / "sweep" / "summary.json",
           lambda doc: doc["cells"][0].update(report=doc["cells"][0]["report"].replace("report.json", "copy.json")))
    bad = verify("--cell", "clean")
    assert bad.exit_code == 1 and "cells[0].report" in " ".join(bad.output.split()), bad.output


@pytest.mark.long
def test_the_score_like_report_must_be_the_one_the_cells_were_scored_like(sweep, tmp_path):
    """A summary whose score_like (and reproducer) names another report of the same model, scored under another
    metric (the demo's pose report: PCK@0.05, two averagings), its sha256 recorded: a MATCH whose reproducer would
    not make its numbers."""
    copy, verify = _copied_sweep(sweep, tmp_path)
    other = copy / "pose" / "report.json"

    def swap(doc):
        doc["score_like"] = {"path": "../pose/report.json", "sha256": _sha(other)}
        doc["reproducer"]["argv"] = ["../pose/report.json" if a == "../pose/like.json" else a
                                     for a in doc["reproducer"]["argv"]]

    doc = _forge(copy / "sweep" / "summary.json", swap)
    assert "../pose/report.json" in doc["reproducer"]["argv"]
    bad = verify("--cell", "clean")
    assert bad.exit_code == 1 and "score_like" in bad.output and "MATCH " not in bad.output, bad.output


@pytest.mark.long
def test_verify_checks_the_reference_sweep_and_the_pictures(sweep, tmp_path):
    """The reference's values scale CE and mCE: a reference is now checked against its own cells; a picture
    beside the summary is drawn again and compared; the drops' intervals of the cells --cell leaves out are named
    as not compared."""
    pytest.importorskip("matplotlib")
    from rfbench.report.robustness import reproducer_argv
    from rfbench.report.robustness_settings import RobustnessSettings

    copy, verify = _copied_sweep(sweep, tmp_path)
    shutil.copytree(copy / "sweep", copy / "ref")  # another sweep beside it: the same cells, its own reports
    ref = copy / "ref" / "summary.json"

    def with_reference(doc):
        s = doc["settings"]
        settings = RobustnessSettings(corruptions=tuple(s["corruptions"]),
                                      severities=",".join(map(str, s["severities"])), seeds=s["seeds"])
        doc["reference"] = {"path": "../ref/summary.json", "sha256": _sha(ref)}
        doc["reproducer"]["argv"] = reproducer_argv(doc["model"]["path"], doc["split"]["path"],
                                                    doc["score_like"]["path"], settings, "../ref/summary.json")

    path = copy / "sweep" / "summary.json"
    doc = _forge(path, with_reference)
    assert doc["mce"] == pytest.approx(1.0)
    honest, honest_ref = path.read_text(), ref.read_text()
    ok = verify("--cell", "clean")  # the summary's own checks (every cell re-run: above)
    assert ok.exit_code == 0, ok.output
    assert "not compared: cells[].drop" in ok.output
    # a made-up reference: its cells' values changed (and its own aggregate with them)
    _forge(ref, lambda r: r["cells"][0]["model"].__setitem__("value", 0.0))
    _forge(path, lambda d: d["reference"].__setitem__("sha256", _sha(ref)))
    bad = verify()
    assert bad.exit_code == 1 and "its reference" in bad.output and "cells[noise-1-seed0].model.value" in bad.output
    # pictures: the two swapped
    path.write_text(honest)
    ref.write_text(honest_ref)
    assert verify("--cell", "clean").exit_code == 0
    a, b = copy / "sweep" / "robustness-noise.png", copy / "sweep" / "robustness-dead-antenna.png"
    data = a.read_bytes()
    a.write_bytes(b.read_bytes())
    b.write_bytes(data)
    bad = verify()
    assert bad.exit_code == 1 and "pictures.robustness-noise.png" in bad.output, bad.output


@pytest.mark.long
def test_the_timeout_bounds_the_whole_verify_of_a_summary_its_cells_included(sweep, tmp_path):
    """--timeout is the whole command's: each cell's re-run was given the whole timeout afresh, so a summary of
    n cells could run n times as long (five re-runs of three processes each cannot all fit in 3 s)."""
    copy, verify = _copied_sweep(sweep, tmp_path)
    bad = verify("--timeout", "3")
    assert bad.exit_code == 1 and "did not finish within 3 s" in bad.output, bad.output


@pytest.mark.long
def test_a_reference_cell_forged_with_its_sha256_recorded_is_a_mismatch_by_default(sweep, tmp_path):
    """The reference sweep's cells scale CE and mCE, but they were only checked against the reference summary:
    a reference cell's number changed, its sha256 and the reference's aggregate recorded again, then the
    summary's reference sha256 and its CE and mCE — verify said MATCH on a made-up mCE. The reference's cells are
    now re-run like the summary's own, and named as not compared when --cell narrows the re-runs."""

    from rfbench.report.robustness import reproducer_argv
    from rfbench.report.robustness_settings import RobustnessSettings

    copy, verify = _copied_sweep(sweep, tmp_path)
    shutil.copytree(copy / "sweep", copy / "ref")
    ref = copy / "ref" / "summary.json"
    ref_doc = _forge(ref, _forged_cell(ref, 1, 0.01))
    if any(p.suffix == ".png" for p in ref.parent.iterdir()):  # its pictures drawn again from the forged values
        pytest.importorskip("rfbench.report.robustness")._pictures(ref_doc, ref.parent)

    def with_reference(d):
        s = d["settings"]
        settings = RobustnessSettings(corruptions=tuple(s["corruptions"]),
                                      severities=",".join(map(str, s["severities"])), seeds=s["seeds"])
        d["reference"] = {"path": "../ref/summary.json", "sha256": _sha(ref)}
        d["reproducer"]["argv"] = reproducer_argv(d["model"]["path"], d["split"]["path"], d["score_like"]["path"],
                                                  settings, "../ref/summary.json")

    path = copy / "sweep" / "summary.json"
    pictures = pytest.importorskip("rfbench.report.robustness")._pictures
    summary = _forge(path, with_reference)
    if any(p.suffix == ".png" for p in path.parent.iterdir()):
        pictures(summary, path.parent)
    narrow = verify("--cell", "clean")  # every check of the summary and its reference holds
    assert narrow.exit_code == 0, narrow.output
    assert "not compared: reference cells" in " ".join(narrow.output.split()), narrow.output
    bad = verify()
    assert bad.exit_code == 1, bad.output
    assert "reference cell noise-5-seed0" in bad.output and "0.01 in the report" in bad.output, bad.output


def test_a_sweep_never_writes_into_a_folder_of_the_user_s(sweep, tmp_path):
    """Only summary.json and clean/ were checked: a user's cells/noise-1-seed0/report.json and pictures in the
    folder were overwritten without --force, and with --force a folder that never held a sweep was written into.
    Now the folder must be new or empty, or (--force) hold a summary rfbench wrote."""
    d, _ = sweep
    mine = tmp_path / "mine"
    (mine / "cells" / "noise-1-seed0").mkdir(parents=True)
    (mine / "cells" / "noise-1-seed0" / "report.json").write_text("my notes")
    (mine / "summary.json").write_text('{"my": "own"}')
    argv = ["robustness", str(d / "pose" / "ridge.onnx"), "--split", str(d / "mmfi-split.json"), "--score-like",
            str(d / "pose" / "like.json"), "--corruptions", "noise", "--severities", "1", "-o", str(mine)]
    for extra, message in (([], "is not empty"), (["--force"], "no robustness summary rfbench wrote")):
        result = CliRunner().invoke(app, argv + extra)
        assert result.exit_code == 2 and message in result.output, result.output
    assert (mine / "cells" / "noise-1-seed0" / "report.json").read_text() == "my notes"
    assert (mine / "summary.json").read_text() == '{"my": "own"}'
    assert sorted(p.name for p in mine.rglob("*")) == ["cells", "noise-1-seed0", "report.json", "summary.json"]


def test_a_reference_of_another_task_metric_split_or_cells_is_refused(tmp_path):
    """A gesture sweep (accuracy, another split) given as the reference of a pose sweep (PCK@0.20): robustness
    printed an mCE scaled by it and verify said MATCH; a reference missing cells left CE undefined without a
    word. A reference is another model's sweep over the same cells, or it is refused, naming how it differs."""
    from types import SimpleNamespace

    from rfbench.report.robustness import _sha256, check_reference

    split = tmp_path / "split.json"
    split.write_text("{}")
    other = tmp_path / "other.json"
    other.write_text("{ }")
    settings = RobustnessSettings(corruptions=("noise", "dead-antenna"), severities="1,3", seeds=1)
    like = SimpleNamespace(task="pose", label="PCK@0.20 hip-width(left_hip–right_hip) h36m17 <= micro")
    same = {"task": "pose", "metric": {"label": like.label, "better": "higher"},
            "split": {"path": "s.json", "sha256": _sha256(split)},
            "settings": {"corruptions": ["noise", "dead-antenna"], "severities": [1, 3], "seeds": 1}}
    check_reference(same, "ref.json", like, split, settings)  # the same cells: taken
    for edit, needle in [
        (dict(task="gesture", metric={"label": "accuracy"}), "task 'gesture', not 'pose'; metric 'accuracy', not"),
        (dict(metric={"label": "PCK@0.05 hip-width(left_hip–right_hip) h36m17 <= micro"}), "metric 'PCK@0.05"),
        (dict(split={"path": "s.json", "sha256": _sha256(other)}), "another split"),
        (dict(settings={"corruptions": ["noise"], "severities": [1, 3], "seeds": 1}), "other cells"),
    ]:
        with pytest.raises(ValidationError, match="not a reference for this sweep") as info:
            check_reference({**same, **edit}, "ref.json", like, split, settings)
        assert needle in str(info.value), str(info.value)


@pytest.mark.long
def test_robustness_refuses_a_reference_of_another_metric_before_any_cell(sweep, tmp_path):
    d, summary = sweep
    ref = dict(summary, metric={**summary["metric"], "label": "accuracy"}, task="gesture")
    (tmp_path / "ref.json").write_text(json.dumps(ref))
    result = CliRunner().invoke(app, ["robustness", str(d / "pose" / "ridge.onnx"), "--split",
                                      str(d / "mmfi-split.json"), "--score-like", str(d / "pose" / "like.json"),
                                      "--corruptions", "noise,dead-antenna", "--severities", "1,5", "-o",
                                      str(tmp_path / "again"), "--reference", str(tmp_path / "ref.json")])
    assert result.exit_code == 2, result.output
    assert "not a reference for this sweep" in result.output and "task 'gesture', not 'pose'" in result.output
    assert not (tmp_path / "again").exists()
