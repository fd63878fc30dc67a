"""What verify leaves uncompared is named by field, and a field is a path of keys, never dotted text: before, a
key holding a dot (``"reproducer.evidence"``, ``"root.note"``, ``"model.path.trained_on"``) read as a field
below one verify does not compare, and a report, index, prediction record or manifest carrying such a key
verified as MATCH. The reproducer itself is not compared with the re-run's, so it must be exactly what rfbench
writes, argv and cwd: before, any other key rode along. And report.md shows control characters escaped: a
working folder holding terminal escape sequences was written raw into the "Recorded as run in" line, so ``cat
report.md`` ran them. A re-run that met the memory limit is named as such. (Found by an adversarial probe; each
test of a fix fails on the code before.)"""

from __future__ import annotations

import json
import re

import pytest

from rfbench.cli import app
from rfbench.datasets.reingest import ROOT_FIELD
from rfbench.report.render import render_markdown
from rfbench.report.verify import ENVIRONMENT, INDEX_ENVIRONMENT, RECORD_ENVIRONMENT, diff_documents
from tests.test_verify_forms import _report

ARGS = ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--skeleton", "coco17", "--units", "m", "--norm", "bbox",
        "--k", "0.2", "--bootstrap", "0", "-o", "report.json"]


@pytest.mark.parametrize("environment, key", [
    (ENVIRONMENT, "reproducer.evidence"),
    (ENVIRONMENT, "rfbench_version.audit"),
    (INDEX_ENVIRONMENT, "rfbench_version.reviewed"),
    (INDEX_ENVIRONMENT, "split.path.note"),
    (RECORD_ENVIRONMENT, "model.path.trained_on"),
    (RECORD_ENVIRONMENT, "runtime.checked"),
    ({ROOT_FIELD: "the dataset's folder"}, "root.note"),
])
def test_a_key_holding_a_dot_is_compared(environment, key):
    stored = {"schema": "x", key: "MEASURED and audited by hand"}
    diffs, _ = diff_documents(stored, {"schema": "x"}, environment)
    assert [d["path"] for d in diffs] == [f'["{key}"]']


def test_a_key_holding_a_dot_inside_a_list_entry_is_compared():
    stored = {"inputs": [{"role": "pred", "path": "a.npy", "path.note": "checked"}]}
    rerun = {"inputs": [{"role": "pred", "path": "elsewhere/a.npy"}]}
    diffs, _ = diff_documents(stored, rerun, ENVIRONMENT)
    assert [d["path"] for d in diffs] == ['inputs[0]["path.note"]']  # (the path itself still uncompared)


def test_the_fields_verify_leaves_out_are_still_left_out():
    stored = {"reproducer": {"argv": ["a"]}, "rfbench_version": "0.1", "inputs": [{"path": "a", "sha256": "1"}],
              "chain": [{"argv": ["x"], "step": "windows"}], "value": 1}
    rerun = {"reproducer": {"argv": ["b"]}, "rfbench_version": "0.2", "inputs": [{"path": "b", "sha256": "1"}],
             "chain": [{"argv": ["y"], "step": "windows"}], "value": 1}
    assert diff_documents(stored, rerun, ENVIRONMENT) == ([], 3)


def test_a_reproducer_holding_more_than_argv_and_cwd_is_a_mismatch(runner, tmp_path):
    folder = tmp_path / "r"
    rep = _report(runner, folder, ARGS)
    rep["reproducer"]["verified"] = {"by": "an independent auditor", "status": "MATCH"}
    (folder / "report.json").write_text(json.dumps(rep))
    (folder / "report.md").write_text(render_markdown(rep))
    result = runner.invoke(app, ["verify", str(folder / "report.json")])
    assert result.exit_code == 1, result.output
    assert "the reproducer holds 'verified', which rfbench never writes" in " ".join(result.output.split())


def test_report_md_shows_control_characters_escaped(runner, tmp_path):
    rep = _report(runner, tmp_path / "r", ARGS)
    rep["reproducer"]["cwd"] = "ok\x1b[2J\x1b]8;;https://example.invalid\x07click\x1b]8;;\x07\x9b1A"
    rep["notes"] = rep.get("notes", []) + ["a note \x1b[31mred\x1b[0m"]
    md = render_markdown(rep)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", md)
    assert "\\u001b[2J" in md


@pytest.mark.parametrize("line, out_of_memory", [
    ("OpenBLAS error: Memory allocation still failed after 10 retries, giving up.", True),
    ("OSError: /x/libllvmlite.so: failed to map segment from shared object", True),
    ("MemoryError", True),
    ("error: report.json: the split's sides are not what its protocol gives", False),
    ("ValueError: shapes (3,) and (4,) not aligned", False),
    ("LLVM ERROR: Unable to allocate section memory!", True),  # Numba compiling, at 550 MiB
])
def test_a_re_run_that_met_the_memory_limit_is_named_as_such(line, out_of_memory):
    """A re-run that failed because of `memory_mb` (at 200 MiB: the dynamic loader, OpenBLAS) was reported as a
    failed step with its last line; the verdict now names the limit to raise, as it does for a timeout."""
    from rfbench.report.verify import _OUT_OF_MEMORY

    assert bool(_OUT_OF_MEMORY.search(f"Traceback (most recent call last):\n{line}\n")) is out_of_memory


@pytest.mark.parametrize("line, likely", [
    ("RuntimeError: can't start new thread", True),  # a thread's stack, at 500 MiB
    ("error: could not find/load shared object file 'libllvmlite.so' from resource location: 'llvmlite.binding'. "
     "this could mean that the library literally cannot be found", True),  # llvmlite's library, at 300-400 MiB
    ("error: report.json: the split's sides are not what its protocol gives", False),
    ("FileNotFoundError: [Errno 2] No such file or directory: 'x.so'", False),
])
def test_a_re_run_that_could_not_start_under_a_small_memory_limit_names_the_limit(line, likely):
    """A re-run under --memory-mb 300-500 failed at start-up with a line that does not say memory (a thread not
    started, llvmlite's library not loaded), and the verdict named only that line; it now names the limit as the
    likely cause."""
    from rfbench.report.verify import _OUT_OF_MEMORY, _START_UP_UNDER_LIMIT

    err = f"Traceback (most recent call last):\n{line}\n"
    assert not _OUT_OF_MEMORY.search(err)
    assert bool(_START_UP_UNDER_LIMIT.search(err)) is likely


@pytest.mark.long
@pytest.mark.parametrize("name, rename", [("report.md.json", None), ("report.json", "final.json")])
def test_markdown_beside_the_report_that_verify_did_not_check_is_named(runner, tmp_path, name, rename):
    """verify checks the Markdown where score writes it (the report's name, .md for .json): a report named
    report.md.json has it at report.md.md, and a report renamed has none. A report.md beside it, whatever it shows,
    was not checked, and the verdict said nothing of it — or said "no report.md beside the report" while there was
    one (found by an adversarial probe: a forged accuracy in report.md under a MATCH)."""
    folder = tmp_path / "r"
    _report(runner, folder, ARGS)  # (written as report.json, then renamed to the name score was given)
    if name != "report.json":
        (folder / "report.json").rename(folder / name)
        (folder / "report.md").rename((folder / name).with_suffix(".md"))
    if rename:
        (folder / name).rename(folder / rename)
        (folder / name).with_suffix(".md").rename(folder / "report.md")
    report = folder / (rename or name)
    forged = (folder / "report.md").read_text() if rename else render_markdown(json.loads(report.read_text()))
    (folder / "report.md").write_text(forged.replace("| PCK@0.2", "| PCK@0.2 (0.99)"))
    # another "report" beside it: its Markdown is listed too (a report.json of {} beside report.md hid the
    # forged report.md from the listing: whose a Markdown file is, is only what the names say)
    (folder / "other.json").write_text("{}")
    (folder / "other.md").write_text("# another report\n")
    (folder / "other.markdown").write_text("# a forged report\n")
    result = runner.invoke(app, ["verify", str(report), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    notes = doc["notes"]
    checked = report.with_suffix(".md").name
    assert any(n.startswith("Markdown beside the report that verify did not check")
               and n.endswith(": other.markdown, other.md, report.md") for n in notes), notes
    assert doc["markdown_file"] == checked
    assert not any(n.startswith("no report.md beside") for n in notes), notes
    if rename:
        assert f"no {checked} beside the report (where score writes its Markdown): only the JSON was checked" in notes


@pytest.mark.long
def test_the_verdict_names_the_markdown_it_checked_and_says_when_it_stopped_listing(runner, tmp_path, monkeypatch):
    """A report renamed with its Markdown (final.json, final.md) verified as "report.md renders from it" while a
    forged report.md lay beside it, and in a folder of more than 100,000 entries the listing of Markdown verify did
    not check stopped without a word (found by an adversarial probe; the test fails on the code before)."""
    import rfbench.report.verify as V

    folder = tmp_path / "r"
    _report(runner, folder, ARGS)
    (folder / "report.json").rename(folder / "final.json")
    (folder / "report.md").rename(folder / "final.md")
    (folder / "report.md").write_text("# PCK@0.2 0.99\n")
    (folder / "report.json").write_text("{}")
    for k in range(4):
        (folder / f"{k}.txt").write_text("")
    monkeypatch.setattr(V, "_LIST_AT_MOST", 3)
    result = runner.invoke(app, ["verify", str(folder / "final.json")])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "final.md renders from it" in text and "report.md renders from it" not in text
    assert "the folder holds more than 3 entries, and Markdown among the rest was not looked for" in text


@pytest.mark.parametrize("lookalike", ["report.md\u200b", "report.md ", "report.mdown", "report.html"])
def test_markdown_under_a_look_alike_name_is_named_too(runner, tmp_path, lookalike):
    """A forged report.md followed by a zero-width space (or a space), or under another suffix a reader opens as a
    rendered report, lay beside the honest one under a MATCH that named only report.md (found by an adversarial
    probe: only names ending in .md or .markdown were listed; the test fails on the code before)."""
    folder = tmp_path / "r"
    _report(runner, folder, ARGS)
    (folder / lookalike).write_text("# Evidence: MEASURED\n\nPCK@0.2 0.99\n")
    result = runner.invoke(app, ["verify", str(folder / "report.json"), "--json"])
    assert result.exit_code == 0, result.output
    notes = json.loads(result.stdout)["notes"]
    listed = [n for n in notes if n.startswith("Markdown beside the report that verify did not check")]
    assert listed and listed[0].endswith(": " + lookalike), notes
