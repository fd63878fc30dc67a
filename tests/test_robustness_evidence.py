"""A robustness sweep's evidence tag and warnings: derived from its cell reports, shown by rfbench robustness, and
rebuilt and compared by rfbench verify (a summary used to carry neither: a sweep of a SYNTHETIC report scored
with --trust-layout, --allow-partial and --allow-shared-files read as a plain MATCH)."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from rfbench.cli import app
from rfbench.errors import FormatError

LAYOUT = ("LAYOUT NOT VERIFIED: skeleton coco17 did not pass its plausibility check (face joints 0-4 close "
          "together: median 0.509 of body size, expected <= 0.25) and hip-width were computed anyway "
          "(--trust-layout)")


def _report(evidence="MEASURED", flags=(), notes=(), scored=20, shared=0, content_failed=False) -> dict:
    """A cell report as far as a summary reads it: its tag, reproducer, notes, coverage, split audit."""
    checks = [{"name": "recordings-disjoint", "passed": True}]
    if content_failed:
        checks.append({"name": "content-disjoint", "passed": False, "detail": "2 test recordings"})
    doc = {"task": "pose", "evidence": evidence, "notes": list(notes),
           "reproducer": {"argv": ["rfbench", "score", "--task", "pose", "--pred", "p.npy", "--rows", "i.json",
                                   "--skeleton", "h36m17", "--k", "0.2", *flags, "-o", "r.json"], "cwd": "."},
           "coverage": {"test_recordings": 20, "scored_recordings": scored, "missing_count": 20 - scored,
                        "allowed_partial": "--allow-partial" in flags},
           "split": {"audit": {"checks": checks, "passed": not content_failed}}}
    if shared:
        doc["shared_files"] = {"count": shared, "files": [], "allowed": "--allow-shared-files" in flags}
    return doc


def test_a_cell_report_s_tag_and_warnings():
    from rfbench.report.robustness import cell_marks

    assert cell_marks(_report()) == ("MEASURED", ())
    assert cell_marks(_report("SYNTHETIC", notes=[LAYOUT, "MM-Fi has no separate test set"])) == \
        ("SYNTHETIC", (LAYOUT,))
    leaky = "LEAKAGE-PRONE split (protocol x): the same subject can appear in train and test"
    assert cell_marks(_report(notes=[leaky]))[1] == (leaky,)
    assert cell_marks(_report(flags=["--allow-partial"], scored=18))[1] == (
        "PARTIAL SCORING ALLOWED (--allow-partial): 18 of 20 test recordings scored; a subset: these numbers do "
        "not cover the whole test side",)
    assert cell_marks(_report(flags=["--allow-partial"]))[1] == (
        "PARTIAL SCORING ALLOWED (--allow-partial): 20 of 20 test recordings scored",)
    assert cell_marks(_report(flags=["--allow-shared-files"]))[1] == (
        "SHARED FILES ALLOWED (--allow-shared-files): scored even where the split's sides share dataset files or "
        "content; none found",)
    assert cell_marks(_report(flags=["--allow-shared-files"], shared=3, content_failed=True))[1] == (
        "SHARED FILES ALLOWED (--allow-shared-files): 3 byte-identical dataset file(s) on both sides of the "
        "split; the same content on both sides under other names: these numbers partly measure memory of "
        "training data",)
    # generated data with byte copies on both sides is scored without the flag: still a warning
    assert cell_marks(_report("SYNTHETIC", shared=2))[1] == (
        "SHARED FILES: 2 byte-identical dataset file(s) on both sides of the split: these numbers partly measure "
        "memory of training data",)


def test_a_cell_report_without_a_tag_rfbench_writes_is_refused():
    from rfbench.report.robustness import cell_marks

    with pytest.raises(FormatError, match="evidence"):
        cell_marks(_report("VERIFIED"))
    doc = _report()
    doc["reproducer"] = None
    with pytest.raises(FormatError, match="reproducer"):
        cell_marks(doc)


def test_a_sweep_is_measured_only_when_every_cell_report_is():
    from rfbench.report.robustness import sweep_evidence

    measured = sweep_evidence([("MEASURED", ())] * 3)
    assert measured["evidence"] == "MEASURED" and measured["warnings"] == []
    assert "3 MEASURED" in measured["evidence_rule"]
    mixed = sweep_evidence([("MEASURED", ()), ("SYNTHETIC", ()), ("MEASURED", ())])
    assert mixed["evidence"] == "SYNTHETIC"
    assert "2 MEASURED, 1 SYNTHETIC" in mixed["evidence_rule"]
    assert sweep_evidence([("MEASURED", ()), ("CLAIMED", ())])["evidence"] == "CLAIMED"
    assert sweep_evidence([("CLAIMED", ()), ("SYNTHETIC", ())])["evidence"] == "SYNTHETIC"
    # each warning once, in the order first met (clean first), with the number of cell reports carrying it
    marks = [("SYNTHETIC", (LAYOUT, "PARTIAL")), ("SYNTHETIC", ("PARTIAL",)), ("SYNTHETIC", (LAYOUT, "PARTIAL"))]
    assert sweep_evidence(marks)["warnings"] == [{"warning": LAYOUT, "cell_reports": 2},
                                                 {"warning": "PARTIAL", "cell_reports": 3}]


# -- a sweep of a SYNTHETIC report scored with --trust-layout, --allow-partial and --allow-shared-files ----------


@pytest.fixture(scope="module")
def flagged(tiny_demo, tmp_path_factory):
    """The tiny demo's pose model swept (noise 1, one cell and clean) like a report scored with coco17 (whose
    layout check the demo's poses fail) and every permissive flag; ``(folder, summary, robustness output)``."""
    pytest.importorskip("onnxruntime")
    d = tmp_path_factory.mktemp("flagged") / "d"
    shutil.copytree(tiny_demo, d)
    like = CliRunner().invoke(app, ["score", "--task", "pose", "--pred", str(d / "pose" / "pred.npy"), "--rows",
                                    str(d / "windows" / "mmfi-test" / "index.json"), "--split",
                                    str(d / "mmfi-split.json"), "--skeleton", "coco17", "--trust-layout",
                                    "--allow-partial", "--allow-shared-files", "--units", "m", "--norm",
                                    "hip-width", "--k", "0.2", "--metrics", "pck", "--bootstrap", "20", "-o",
                                    str(d / "pose" / "coco.json")])
    assert like.exit_code == 0, like.output
    argv = ["robustness", str(d / "pose" / "ridge.onnx"), "--split", str(d / "mmfi-split.json"), "--score-like",
            str(d / "pose" / "coco.json"), "--corruptions", "noise", "--severities", "1"]
    shown = CliRunner().invoke(app, [*argv, "-o", str(d / "sweep")])
    assert shown.exit_code == 0, shown.output
    as_json = CliRunner().invoke(app, [*argv, "-o", str(d / "sweep"), "--force", "--json"])
    assert as_json.exit_code == 0, as_json.output
    summary = json.loads(as_json.stdout)
    assert summary == json.loads((d / "sweep" / "summary.json").read_text())
    return d, summary, shown.output


@pytest.mark.long
def test_the_summary_carries_its_cells_tag_and_warnings(flagged):
    d, summary, _ = flagged
    clean = json.loads((d / "sweep" / "clean" / "report.json").read_text())
    layout = [n for n in clean["notes"] if n.startswith("LAYOUT NOT VERIFIED")]
    assert clean["evidence"] == "SYNTHETIC" and len(layout) == 1  # what each cell report says
    assert summary["evidence"] == "SYNTHETIC"
    assert summary["evidence_rule"].startswith("derived from generated data")
    assert "2 SYNTHETIC" in summary["evidence_rule"]  # clean and the one cell
    assert summary["warnings"] == [
        {"warning": layout[0], "cell_reports": 2},
        {"warning": "PARTIAL SCORING ALLOWED (--allow-partial): 4 of 4 test recordings scored", "cell_reports": 2},
        {"warning": "SHARED FILES ALLOWED (--allow-shared-files): scored even where the split's sides share "
                    "dataset files or content; none found", "cell_reports": 2}]


@pytest.mark.long
def test_rfbench_robustness_shows_the_tag_and_warnings(flagged):
    _, _, output = flagged
    lines = output.splitlines()
    assert lines[1].startswith("Evidence: SYNTHETIC — derived from generated data"), output
    assert any(line.startswith("Warning: LAYOUT NOT VERIFIED: skeleton coco17") and
               line.endswith("(every cell report, clean included)") for line in lines), output
    assert any(line.startswith("Warning: PARTIAL SCORING ALLOWED (--allow-partial)") for line in lines), output
    assert any(line.startswith("Warning: SHARED FILES ALLOWED (--allow-shared-files)") for line in lines), output


def _verify(d, *extra):
    return CliRunner().invoke(app, ["verify", str(d / "sweep" / "summary.json"), "--root", str(d), "--cell",
                                    "clean", *extra])


@pytest.mark.long
def test_verify_s_match_on_a_summary_names_its_tag_and_warnings(flagged):
    d, _, _ = flagged
    ok = _verify(d)
    assert ok.exit_code == 0, ok.output
    assert "note: evidence: SYNTHETIC — derived from generated data" in ok.output, ok.output
    assert "note: warning: LAYOUT NOT VERIFIED: skeleton coco17" in ok.output, ok.output
    assert "note: warning: PARTIAL SCORING ALLOWED" in ok.output and "note: warning: SHARED FILES ALLOWED" in \
        ok.output, ok.output
    as_json = _verify(d, "--json")
    assert as_json.exit_code == 0, as_json.output
    notes = json.loads(as_json.stdout)["notes"]
    assert notes[0].startswith("evidence: SYNTHETIC")


@pytest.mark.long
@pytest.mark.parametrize("change, named", [
    (lambda doc: doc.__setitem__("evidence", "MEASURED"), "evidence"),
    (lambda doc: doc.pop("evidence"), "evidence"),
    (lambda doc: doc.__setitem__("evidence_rule", "computed by rfbench"), "evidence_rule"),
    (lambda doc: doc["warnings"].pop(0), "warnings"),
    (lambda doc: doc.__setitem__("warnings", []), "warnings"),
    (lambda doc: doc["warnings"][1].__setitem__("cell_reports", 1), "warnings[1].cell_reports"),
    (lambda doc: doc.pop("warnings"), "warnings"),
    # an integer written as a float is not the document rfbench writes (it MATCHed: found by an adversarial probe)
    (lambda doc: doc["corruptions"][0]["levels"][0].__setitem__("severity", 1.0), "corruptions[0].levels[0].severity"),
    (lambda doc: doc["warnings"][1].__setitem__("cell_reports", 2.0), "warnings[1].cell_reports"),
])
def test_an_edited_tag_or_a_deleted_warning_is_a_mismatch(flagged, tmp_path, change, named):
    d, summary, _ = flagged
    copy = tmp_path / "d"
    shutil.copytree(d, copy)
    doc = json.loads(json.dumps(summary))
    change(doc)
    (copy / "sweep" / "summary.json").write_text(json.dumps(doc))
    bad = _verify(copy)
    assert bad.exit_code == 1, bad.output
    assert named in bad.output and "MATCH " not in bad.output, bad.output


@pytest.mark.long
def test_verify_s_match_on_a_report_repeats_its_warnings(flagged):
    """A report's MATCH said nothing of the warnings the report carries (a summary's MATCH names them)."""
    d, _, _ = flagged
    ok = CliRunner().invoke(app, ["verify", str(d / "pose" / "coco.json"), "--root", str(d)])
    assert ok.exit_code == 0, ok.output
    assert "note: the report warns: LAYOUT NOT VERIFIED: skeleton coco17" in " ".join(ok.output.split())


@pytest.mark.long
def test_a_missing_picture_is_named_as_not_compared(flagged, tmp_path):
    """With the sweep's picture deleted, a MATCH's note said the pictures agreed with the files they name and the
    verdict listed nothing about them (found by an adversarial probe; the test fails on the code before)."""
    pytest.importorskip("matplotlib")
    d, _, _ = flagged
    copy = tmp_path / "d"
    shutil.copytree(d, copy)
    (copy / "sweep" / "robustness-noise.png").unlink()
    ok = _verify(copy)
    assert ok.exit_code == 0, ok.output
    text = " ".join(ok.output.split())
    assert "not compared: pictures robustness-noise.png: not beside the summary" in text, ok.output
    assert "reproducer and each picture beside it agree" in text, ok.output
