"""verify of a robustness summary: the drops' intervals, the settings' types, and why a summary is refused.

- A drop's paired interval was only held to be a finite number (its level in (0, 1)): bounds that exclude the
  drop, low above high, or a level other than the bootstrap's verified as MATCH, under a note saying the drops
  agree with the files they name. Then it was held to be an interval, not recomputed: a bound moved within what
  is an interval verified as MATCH. Now it is recomputed from the cells' predictions.
- ``settings.severities`` of floats (``[1.0, 3.0]``, where rfbench writes integers) verified as MATCH.
- With ``--cell``, a summary that could not be read (a key twice, a NaN, deep nesting, bytes not UTF-8) was
  called "not a summary" instead of what is wrong with it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rfbench.cli import app
from rfbench.errors import FormatError, VerificationError


@pytest.fixture
def demo(tiny_demo, tmp_path) -> Path:
    d = tmp_path / "d"
    shutil.copytree(tiny_demo, d, symlinks=True)
    return d


def _summary_path(d: Path) -> Path:
    return d / "pose" / "robustness" / "summary.json"


def _edit(d: Path, change) -> dict:
    path = _summary_path(d)
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return doc


def _verify(d: Path, *cells: str):
    from rfbench.report.verify import verify_report

    return verify_report(_summary_path(d), root=d, cells=cells or ("clean",))


# -- the drops' intervals -----------------------------------------------------------------------------------------


def _drop(doc: dict) -> dict:
    return doc["cells"][0]["drop"]


@pytest.mark.parametrize("edit, named", [
    (lambda drop: drop.update(low=0.5, high=-0.4, level=0.999999), "cells[0].drop"),  # the probe's edit
    (lambda drop: drop.update(low=drop["high"], high=drop["low"]), "cells[0].drop.low"),  # low above high
    (lambda drop: drop.update(level=0.99), "cells[0].drop.level"),  # not the bootstrap's 0.95
    (lambda drop: drop.pop("level"), "cells[0].drop.level"),  # bounds without their level
    (lambda drop: drop.update(high=None), "cells[0].drop.high"),  # one bound
])
def test_a_drop_interval_that_is_not_one_at_the_bootstrap_level_is_a_mismatch(demo, edit, named):
    clean = json.loads((_summary_path(demo).parent / "clean" / "report.json").read_text())
    assert clean["bootstrap"]["level"] == 0.95  # what the sweep's paired bootstrap used (the cells' score settings)
    drop = _drop(_edit(demo, lambda doc: edit(_drop(doc))))
    with pytest.raises(VerificationError) as caught:
        _verify(demo)
    paths = [d["path"] for d in caught.value.differences]
    assert any(p.startswith(named) for p in paths), (paths, drop)


def _first_cell(d: Path) -> str:
    from rfbench.report.robustness import cell_name

    e = json.loads(_summary_path(d).read_text())["cells"][0]
    return cell_name(e["corruption"], e["severity"], e["seed"])


def test_the_match_note_names_what_was_compared_of_the_drops(demo):
    """The note said the drops agree with the files they name; their bounds are now recomputed for the cells
    re-run, and named as not compared for the cells --cell leaves out."""
    result = _verify(demo, "clean", _first_cell(demo))
    assert result.status == "match"
    note = next(n for n in result.notes if "agree with the files they name" in n)
    assert "drop values" in note, note
    assert any(n.startswith("1 drop(s): the paired interval recomputed from the cell's and clean's predictions")
               for n in result.notes), result.notes
    fields = [u["field"] for u in result.uncompared]
    assert "cells[].drop.low, .high of the cells not re-run" in fields, fields


def test_a_drop_is_named_not_compared_when_clean_is_not_re_run(demo):
    """`--cell NAME` without clean: NAME's drop (clean minus the cell) rested on the clean report, not re-run, yet
    the verdict said each drop was recomputed (found by an adversarial probe: clean's predictions replaced by the
    ground truth, every drop inflated, MATCH). Now every drop is named as not compared, and naming clean too
    re-runs it."""
    result = _verify(demo, _first_cell(demo))
    assert not any("drop(s): the paired interval recomputed" in n for n in result.notes), result.notes
    named = [u for u in result.uncompared if u["field"] == "cells[].drop (value, low, high)"]
    assert named and "the clean cell was not re-run" in named[0]["why"], result.uncompared


@pytest.mark.parametrize("key, delta", [("low", -0.001), ("high", 0.002), ("low", 0.0005)])
def test_a_drop_interval_moved_within_what_is_an_interval_is_a_mismatch(demo, key, delta):
    """A bound moved a little — still a finite interval, low <= high, at the bootstrap's level — verified MATCH
    (the bounds were only held to be an interval): each drop's paired interval is now recomputed from the cell's
    and clean's predictions once the cell is re-run."""
    before = _drop(json.loads(_summary_path(demo).read_text()))
    drop = _drop(_edit(demo, lambda doc: _drop(doc).update({key: _drop(doc)[key] + delta})))
    assert drop["low"] <= drop["high"] and drop["level"] == before["level"], drop
    assert _verify(demo).status == "match"  # the cell not re-run (--cell clean): its interval is not recomputed
    with pytest.raises(VerificationError) as caught:
        _verify(demo, "clean", _first_cell(demo))
    paths = [d["path"] for d in caught.value.differences]
    assert paths == [f"cells[0].drop.{key}"], paths
    assert "recomputed from the cells' predictions" in str(caught.value)


def test_a_drop_interval_written_where_the_sweep_had_none_is_a_mismatch(demo):
    """A cell whose interval was null in the summary (no bootstrap) given one, or the reverse, is a difference
    too: the recomputed interval decides."""
    _edit(demo, lambda doc: _drop(doc).update(low=None, high=None) or _drop(doc).pop("level"))
    with pytest.raises(VerificationError) as caught:
        _verify(demo, "clean", _first_cell(demo))
    paths = {d["path"] for d in caught.value.differences}
    assert {"cells[0].drop.low", "cells[0].drop.high", "cells[0].drop.level"} <= paths, paths


# -- the settings, typed as rfbench writes them -----------------------------------------------------------------


@pytest.mark.parametrize("change, named", [
    (lambda doc: doc["settings"].__setitem__("severities", [1.0, 3.0]), "settings"),  # the probe's edit
    (lambda doc: doc["settings"].__setitem__("severities", [1, 3.0]), "settings"),
    (lambda doc: doc["cells"][0].__setitem__("severity", 1.0), "cells"),
    (lambda doc: doc["cells"][0].__setitem__("seed", 0.0), "cells"),
])
def test_a_severity_or_seed_written_as_a_float_is_refused(demo, change, named):
    """rfbench writes severities and seeds as integers: 1.0 for 1 is not the summary it writes."""
    _edit(demo, change)
    with pytest.raises((VerificationError, FormatError)) as caught:
        _verify(demo)
    assert named in str(caught.value), caught.value


# -- why a summary is refused, with --cell as without ---------------------------------------------------------


@pytest.mark.parametrize("bad, why", [
    (b'{"schema": "rfbench.robustness/1", "schema": "rfbench.robustness/1"}', "twice"),  # a key twice
    (b'{"schema": "rfbench.robustness/1", "mce": NaN}', "NaN"),
    (b'{"schema": "rfbench.robustness/1", "x": ' + b"[" * 400 + b"]" * 400 + b"}", "nest"),
    (b'{"schema": "rfbench.robustness/1", "x": "\xff"}', "UTF-8"),
])
def test_a_summary_verify_cannot_read_gets_the_same_reason_with_cell(tmp_path, bad, why):
    path = tmp_path / "summary.json"
    path.write_bytes(bad)
    plain = CliRunner().invoke(app, ["verify", str(path)])
    cell = CliRunner().invoke(app, ["verify", str(path), "--cell", "clean"])
    assert plain.exit_code == 2 and cell.exit_code == 2, (plain.output, cell.output)
    assert why in plain.output, plain.output
    assert " ".join(cell.output.split()) == " ".join(plain.output.split()), (plain.output, cell.output)
    assert "not a report" not in cell.output and "Traceback" not in cell.output


def test_what_a_cell_s_verdict_does_not_compare_is_named_in_the_sweep_s(demo):
    """A cell's prediction record claiming another CPU (its sha256 recorded again up the chain) has its
    predictions compared within tolerance, not bit for bit: verifying the cell as a report named that as not
    compared, but the sweep's verdict kept only the cell's count of values (found by an adversarial probe). Its
    drop is now recomputed from the re-run's own predictions too."""
    import hashlib

    from rfbench.io.files import dumps_json

    def sha(p: Path) -> str:
        return hashlib.sha256(p.read_bytes()).hexdigest()

    name = _first_cell(demo)
    cell = _summary_path(demo).parent / "cells" / name
    record = json.loads((cell / "pred.json").read_text())
    record["cpu"].update(level="x86-64-v2", mlas="sse4")
    (cell / "pred.json").write_text(dumps_json(record))
    report = json.loads((cell / "report.json").read_text())
    for item in report["inputs"]:
        if item["role"] == "pred-record":
            item.update(sha256=sha(cell / "pred.json"), bytes=(cell / "pred.json").stat().st_size)
    (cell / "report.json").write_text(dumps_json(report))
    (cell / "report.md").unlink()  # (its rendering would name the old sha256; verify then says it is absent)
    _edit(demo, lambda doc: doc["cells"][0].update(sha256=sha(cell / "report.json")))
    result = _verify(demo, "clean", name)
    fields = [u["field"] for u in result.uncompared]
    assert f"cell {name}: predictions" in fields, fields
    assert any(n.startswith(f"cell {name}: chain replayed") and "within tolerance" in n for n in result.notes)
    assert any(n.startswith("1 drop(s): the paired interval recomputed") for n in result.notes), result.notes


@pytest.mark.long
def test_scored_predictions_past_verify_s_memory_bound_are_one_line(demo):
    """A report's pred.npy grown to 2.5 GB (sparse; its sha256 recorded again in pred.json and the report) was read
    whole, and copied, in verify's own process outside its memory bound (found by an adversarial probe): with a
    memory_mb of 2,000 the read is now a FormatError naming the limit (before: read, then a mismatch)."""
    import hashlib

    from rfbench.io.files import dumps_json
    from rfbench.report.verify import Limits, verify_report

    def sha(p: Path) -> str:
        h = hashlib.sha256()
        with open(p, "rb") as fh:
            while block := fh.read(1 << 24):
                h.update(block)
        return h.hexdigest()

    folder = demo / "pose"
    report_path = folder / "report.json"
    report = json.loads(report_path.read_text())
    pred = next(folder / i["path"] for i in report["inputs"] if i["role"] == "pred")
    record_path = next(folder / i["path"] for i in report["inputs"] if i["role"] == "pred-record")
    with open(pred, "r+b") as fh:
        fh.truncate(2_500_000_000)
    record = json.loads(record_path.read_text())
    record["pred"].update(sha256=sha(pred), bytes=pred.stat().st_size)
    record_path.write_text(dumps_json(record))
    for item in report["inputs"]:
        if item["role"] in ("pred", "pred-record"):
            path = pred if item["role"] == "pred" else record_path
            item.update(sha256=sha(path), bytes=path.stat().st_size)
    report_path.write_text(dumps_json(report))
    with pytest.raises(FormatError, match="memory"):
        verify_report(report_path, root=demo, limits=Limits(memory_mb=2000))


@pytest.mark.long
def test_a_gesture_sweep_s_drop_intervals_are_recomputed_too(demo):
    """The drops of a gesture sweep (accuracy over Widar3.0 CSI windows, labels read from the manifest) are
    recomputed as a pose sweep's are: MATCH as written, a bound moved by a hundredth a MISMATCH naming it."""
    from rfbench.cli import app as cli

    runner = CliRunner()
    made = runner.invoke(cli, ["robustness", str(demo / "gesture" / "centroid.onnx"), "--split",
                               str(demo / "widar-split.json"), "--score-like", str(demo / "gesture" / "report.json"),
                               "--corruptions", "noise", "--severities", "3", "-o", str(demo / "gsweep")])
    assert made.exit_code == 0, made.output
    from rfbench.report.verify import verify_report

    path = demo / "gsweep" / "summary.json"
    result = verify_report(path, root=demo)
    assert any(n.startswith("1 drop(s): the paired interval recomputed") for n in result.notes), result.notes
    doc = json.loads(path.read_text())
    assert doc["task"] == "gesture" and doc["cells"][0]["drop"]["high"] is not None, doc["cells"][0]
    doc["cells"][0]["drop"]["high"] += 0.01
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    with pytest.raises(VerificationError) as caught:
        verify_report(path, root=demo, cells=("clean", "noise-3-seed0"))
    assert [d["path"] for d in caught.value.differences] == ["cells[0].drop.high"], caught.value.differences


# -- numbers compared exactly, pictures named as a reader sees them -----------------------------------------------


def _a_cell_value(doc: dict, value) -> None:
    cell = doc["cells"][0]
    for c in doc["corruptions"]:
        for level in c["levels"]:
            if level["value"] == cell["model"]["value"]:
                level["value"] = value
    cell["model"]["value"] = value


def test_a_summary_number_moved_below_a_tolerance_is_a_mismatch(demo):
    """The summary's numbers were compared within a relative 1e-12, where a score report is compared exactly: a
    cell's value moved in its 13th digit (here and in its corruption's levels) verified MATCH under "identical"
    (found by an adversarial probe). Now exactly."""
    value = json.loads(_summary_path(demo).read_text())["cells"][0]["model"]["value"]
    new = value * (1 + 4e-13)
    assert new == pytest.approx(value, rel=1e-12) and new != value
    _edit(demo, lambda doc: _a_cell_value(doc, new))
    with pytest.raises(VerificationError) as caught:
        _verify(demo, "clean", _first_cell(demo))
    assert f"cells[{_first_cell(demo)}].model.value" in [d["path"] for d in caught.value.differences]


def test_a_physical_value_written_as_an_integer_is_a_mismatch(demo):
    """rfbench writes a corruption level's physical value as a float (``30.0``): ``30`` verified MATCH (an
    integer was equal to its float)."""
    level = json.loads(_summary_path(demo).read_text())["corruptions"][0]["levels"][0]
    assert isinstance(level["physical"], float) and level["physical"] == int(level["physical"]), level
    _edit(demo, lambda d: d["corruptions"][0]["levels"][0].update(physical=int(level["physical"])))
    with pytest.raises(VerificationError) as caught:
        _verify(demo)
    assert any("physical" in d["path"] or d["path"].startswith("corruptions") for d in caught.value.differences), \
        caught.value.differences


@pytest.mark.parametrize("name", ["robustness-noise.PNG", "Robustness-Noise.png", "robustness-noise.png\u200b"])
def test_a_file_named_like_a_sweep_picture_is_named_as_not_compared(demo, name):
    """A picture beside the summary under a name that reads as one of the sweep's — another case, an invisible
    character — was neither compared nor mentioned, under a MATCH saying each picture agrees (found by an
    adversarial probe); with the real one removed, the verdict said it was "not beside the summary". Now it is
    named as not compared."""
    folder = _summary_path(demo).parent
    pictures = sorted(folder.glob("robustness-*.png"))
    if not pictures:
        pytest.skip("no pictures drawn (matplotlib not installed)")
    shutil.copyfile(pictures[0], folder / name)
    result = _verify(demo)
    assert result.status == "match"
    named = [u for u in result.uncompared if u["field"].startswith("files named like the pictures")]
    assert named and repr(name) in named[0]["field"], result.uncompared
