"""``rfbench compare --verify`` lines up with claims the very report verify re-ran, and says what it rests on.

Two ways a MEASURED number was forged through it:

- compare read report.json, verify read it again and re-ran it, then compare read it a third time and lined
  that up with the claims: a report.json swapped while verify's re-runs ran was shown as verified (an accuracy
  of 0.95 the model never made, exit 0). Now the bytes are read once, verify re-runs those bytes (their
  sha256), and a file that changed in between is a MISMATCH.
- compare threw verify's result away: it never named the dataset tree the chain was ingested again from and had
  no ``--dataset``/``--template``, so a doctored copy of the dataset beside the real one passed as
  ``dataset: same``. Now it names each tree (and verify's notes) and holds the chain to ``--dataset`` and
  ``--template`` as ``rfbench verify`` does.
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from rfbench.cli import app

CLAIM = """
[[claim]]
id = "lab"
task = "gesture"
metric = "accuracy"
value = 85.0
value_scale = "percent"
protocol = "cross-location"
source = { citation = "a lab's baseline" }
"""


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    """A gesture report scored from the dataset (--rows) over a generated BVP tree ``gen``: its chain has a
    manifest, so verify ingests ``gen`` again. Read-only; each test works on a copy."""
    from typer.testing import CliRunner

    home = tmp_path_factory.mktemp("chain")
    runner = CliRunner()

    def run(*args):
        result = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
        assert result.exit_code == 0, result.output

    run("generate", "widar", home / "gen", "--kind", "bvp", "--frames", "2,12")
    run("ingest", "widar", home / "gen", "-o", home / "m.json")
    run("split", home / "m.json", "-p", "cross-location", "--test", "3", "--gestures", "common6", "-o",
        home / "split.json")
    run("windows", home / "split.json", "--side", "test", "-o", home / "test")
    index = json.loads((home / "test" / "index.json").read_text())
    shape = (len(index["rows"]), len(index["labels"]["names"]))
    np.save(home / "scores.npy", np.random.default_rng(0).normal(size=shape).astype(np.float32))
    run("score", "--pred", home / "scores.npy", "--rows", home / "test" / "index.json", "--split",
        home / "split.json", "--task", "gesture", "-o", home / "report.json")
    (home / "claim.toml").write_text(CLAIM)
    return home


@pytest.fixture
def d(chain, tmp_path, monkeypatch):
    out = tmp_path / "d"
    shutil.copytree(chain, out)
    monkeypatch.chdir(out)
    return out


def _forged(report_text: str, value: float = 0.95) -> str:
    doc = json.loads(report_text)
    for r in doc["results"]:
        if r["metric"] == "accuracy":
            r["model"]["value"] = value
    return json.dumps(doc)


def _accuracy(report_text: str) -> float:
    (value,) = [r["model"]["value"] for r in json.loads(report_text)["results"] if r["metric"] == "accuracy"]
    return value


def _tree_files(d) -> tuple[int, int]:
    """The files the manifest lists and the problems it records (what verify's tree line counts)."""
    m = json.loads((d / "m.json").read_text())
    return sum(len(r["files"]) for r in m["recordings"]), len(m["problems"])


def _flat(text: str) -> str:
    return " ".join(text.split())


# -- one read: the report lined up is the report verify re-ran -----------------------------------------------


def test_a_report_swapped_once_verify_has_read_it_is_not_what_compare_lines_up(d, runner, monkeypatch):
    """The swap of the reproduction: verify reads the honest report and re-runs it (MATCH); meanwhile the file
    becomes a forged copy. compare shows the honest bytes it read and verify re-ran, never the forged ones."""
    import rfbench.report.verify as V

    honest = (d / "report.json").read_text()
    assert _accuracy(honest) != 0.95
    real = V.verify_report

    def verify_then_swap(*args, **kwargs):
        result = real(*args, **kwargs)
        (d / "report.json").write_text(_forged(honest))  # while the re-runs ran
        return result

    monkeypatch.setattr(V, "verify_report", verify_then_swap)
    out = runner.invoke(app, ["compare", "report.json", "claim.toml", "--verify", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    (item,) = doc["comparisons"]
    assert doc["verified"] is True
    assert item["result"]["value"] == _accuracy(honest)  # what score wrote, which verify re-ran


def test_a_report_changed_before_verify_reads_it_is_a_mismatch(d, runner, monkeypatch):
    """compare read a forged report; verify was shown the honest one (MATCH), and the forged one put back:
    verify now re-runs the bytes compare read (their sha256), so the change is a MISMATCH and nothing is
    compared (before: the forged accuracy of 0.95 as verified MEASURED, exit 0)."""
    import rfbench.report.verify as V

    honest = (d / "report.json").read_text()
    forged = _forged(honest)
    (d / "report.json").write_text(forged)
    real = V.verify_report

    def honest_while_verify_reads(*args, **kwargs):
        (d / "report.json").write_text(honest)
        try:
            return real(*args, **kwargs)
        finally:
            (d / "report.json").write_text(forged)

    monkeypatch.setattr(V, "verify_report", honest_while_verify_reads)
    out = runner.invoke(app, ["compare", "report.json", "claim.toml", "--verify"])
    assert out.exit_code == 1, out.output
    text = _flat(out.output)
    assert "MISMATCH" in text and "it changed while verify ran" in text, text
    assert "COMPARABLE" not in text and "0.95" not in text


def test_a_report_that_became_a_robustness_summary_while_verify_read_it_is_a_mismatch(d, runner, monkeypatch):
    """A summary in the report's place when verify reads it is verified as a summary (its own checks, its cells):
    a MATCH of something else than the report compare read. compare refuses it (before: the forged report read
    before and after it was lined up as verified)."""
    import rfbench.report.verify as V
    import rfbench.report.verify_robustness as R

    honest = (d / "report.json").read_text()
    forged = _forged(honest)
    (d / "report.json").write_text(forged)
    summary = json.dumps({"schema": "rfbench.robustness/1", "marker": "a summary that verifies"})
    real = V.verify_report

    def summary_while_verify_reads(*args, **kwargs):
        (d / "report.json").write_text(summary)
        try:
            return real(*args, **kwargs)
        finally:
            (d / "report.json").write_text(forged)

    def a_summary_that_verifies(path, root, verify_cell, result_type, **kwargs):  # as verify_summary returns
        return result_type(report=str(path), status="match", compared=12, notes=[], markdown="absent",
                           uncompared=[], datasets=[])

    monkeypatch.setattr(R, "is_summary", lambda doc: doc.get("marker") == "a summary that verifies")
    monkeypatch.setattr(R, "verify_summary", a_summary_that_verifies)
    monkeypatch.setattr(V, "verify_report", summary_while_verify_reads)
    out = runner.invoke(app, ["compare", "report.json", "claim.toml", "--verify"])
    assert out.exit_code == 1, out.output
    text = _flat(out.output)
    assert "MISMATCH" in text and "not the report" in text and "read" in text, text
    assert "COMPARABLE" not in text and "0.95" not in text


def test_verify_report_given_a_digest_refuses_a_summary_in_the_reports_place(tmp_path, monkeypatch):
    """verify_report(sha256=...) binds the re-run to the caller's bytes; a robustness summary found in their place
    was verified as a summary, the digest unused (its cells' own digests shadowed it)."""
    import rfbench.report.verify as V
    import rfbench.report.verify_robustness as R
    from rfbench.errors import VerificationError

    path = tmp_path / "report.json"
    path.write_text(json.dumps({"schema": "rfbench.robustness/1", "marker": "a summary that verifies"}))
    monkeypatch.setattr(R, "is_summary", lambda doc: doc.get("marker") == "a summary that verifies")
    monkeypatch.setattr(R, "verify_summary", lambda p, root, cell, result_type, **kw: result_type(
        report=str(p), status="match", compared=1, notes=[], markdown="absent", uncompared=[], datasets=[]))
    assert V.verify_report(path).status == "match"  # a summary verified as one: no digest given
    with pytest.raises(VerificationError, match="a robustness summary is in its place"):
        V.verify_report(path, sha256="0" * 64)


# -- what the verdict rests on: the dataset tree, and --dataset / --template ---------------------------------


def test_compare_verify_names_the_tree_the_chain_was_ingested_again_from(d, runner):
    tree = str((d / "gen").resolve())
    files, left_out = _tree_files(d)
    out = runner.invoke(app, ["compare", "report.json", "claim.toml", "--verify"])
    assert out.exit_code == 0, out.output
    text = _flat(out.output)
    line = f"dataset tree: {tree} (ingested again: {files} files in the manifest, {left_out} left out as problems;"
    assert line in text, text
    assert "the folder the manifest names; pin it with --dataset DIR" in text
    doc = json.loads(runner.invoke(app, ["compare", "report.json", "claim.toml", "--verify", "--json"]).stdout)
    (t,) = doc["verification"]["datasets"]
    assert t["tree"] == tree and t["pinned"] is False and t["files"] == files
    assert doc["verification"]["status"] == "match"
    plain = json.loads(runner.invoke(app, ["compare", "report.json", "claim.toml", "--json"]).stdout)
    assert plain["verification"] is None and plain["verified"] is False


@pytest.mark.long  # two full re-runs of the chain
def test_compare_verify_holds_the_chain_to_your_copy_of_the_dataset(d, runner):
    """The chain rests on a copy of the tree beside the verifier's own (the doctored-copy attack): with
    ``--dataset`` naming the verifier's, compare refuses it as verify does; naming the chain's, it says so."""
    shutil.copytree(d / "gen", d / "mine")
    out = runner.invoke(app, ["compare", "report.json", "claim.toml", "--verify", "--dataset", "mine"])
    assert out.exit_code == 1, out.output
    text = _flat(out.output)
    assert "MISMATCH" in text and f"names the dataset tree {(d / 'gen').resolve()}, not the one given" in text, text
    assert "COMPARABLE" not in text
    ok = runner.invoke(app, ["compare", "report.json", "claim.toml", "--verify", "--dataset", "gen"])
    assert ok.exit_code == 0, ok.output
    files, left_out = _tree_files(d)
    assert (f"(ingested again: {files} files in the manifest, {left_out} left out as problems; your --dataset)"
            in _flat(ok.output)), ok.output


def test_compare_verify_passes_the_convention_to_verify(d, runner):
    """--template (with its roles) is verify's: a Widar manifest is rfbench's own ingest, not a template corpus."""
    out = runner.invoke(app, ["compare", "report.json", "claim.toml", "--verify", "--dataset", "gen", "--template",
                              "{user}_{gesture}.csv", "--label", "gesture"])
    assert out.exit_code == 1, out.output
    assert "not a template corpus: --template holds nothing there" in _flat(out.output), out.output


@pytest.mark.long  # a full re-run of the chain
def test_compare_shows_verify_s_notes(d, runner):
    """What verify notes beside its MATCH (here: no report.md to check) is said by compare too."""
    (d / "report.md").unlink()
    out = runner.invoke(app, ["compare", "report.json", "claim.toml", "--verify"])
    assert out.exit_code == 0, out.output
    assert ("note: no report.md beside the report (where score writes its Markdown): only the JSON was checked"
            in _flat(out.output)), out.output


@pytest.mark.parametrize("extra, named", [
    (["--dataset", "gen"], "--dataset"),
    (["--template", "{user}_{gesture}.csv"], "--template"),
    (["--label", "gesture"], "--label"),
    (["--drop-duplicates"], "--drop-duplicates"),
])
def test_verify_s_options_without_verify_are_one_line(d, runner, extra, named):
    out = runner.invoke(app, ["compare", "report.json", "claim.toml", *extra])
    assert out.exit_code == 2, out.output
    lines = [ln for ln in out.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), out.output
    assert f"{named} holds the re-run of --verify" in lines[0] and "give it with --verify" in lines[0], lines[0]


def test_a_role_without_a_template_is_one_line(d, runner):
    out = runner.invoke(app, ["compare", "report.json", "claim.toml", "--verify", "--label", "gesture"])
    assert out.exit_code == 2, out.output
    assert "--label is part of a template corpus's convention: give it with --template" in out.output


def test_the_library_refuses_datasets_without_verify(d):
    from rfbench.errors import ValidationError
    from rfbench.report.claims import load_claims
    from rfbench.report.compare import compare_report

    with pytest.raises(ValidationError, match="give them with verify"):
        compare_report(d / "report.json", load_claims([str(d / "claim.toml")]), datasets=[d / "gen"])


# -- the process verify's re-runs start from -------------------------------------------------------------------


def test_compare_verify_prepares_its_process_as_verify_does(runner, monkeypatch, tmp_path):
    """compare --verify runs verify in its own process: the variables verify drops go first, and a loader variable
    reaching the report's folder is refused before anything loads a library (as rfbench verify does)."""
    import os

    from rfbench.report import verify as V

    claim = tmp_path / "claim.toml"
    claim.write_text("")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "party-cache"))
    result = runner.invoke(app, ["compare", str(tmp_path / "missing.json"), str(claim), "--verify"])
    assert result.exit_code == 2, result.output
    assert "NUMBA_CACHE_DIR" not in os.environ
    monkeypatch.setenv("LD_LIBRARY_PATH", ":/usr/local/lib")  # an empty entry: the current folder
    refused = runner.invoke(app, ["compare", str(tmp_path / "missing.json"), str(claim), "--verify"])
    assert refused.exit_code == 2 and "LD_LIBRARY_PATH" in refused.output, refused.output
    monkeypatch.delenv("LD_LIBRARY_PATH")
    monkeypatch.setenv(V.LIMITS_ENV, '{"cpu_seconds": 60, "memory_mb": 4096, "parent": 1, "world": "/nowhere"}')
    marker = runner.invoke(app, ["compare", str(tmp_path / "missing.json"), str(claim), "--verify"])
    assert marker.exit_code == 2 and V.LIMITS_ENV in " ".join(marker.output.split()), marker.output
