"""The re-run's command is rfbench's, not the report's: score records every option form the command line
accepts (``--opt=value``, ``-oFILE``) in one canonical form, and verify runs only a reproducer that is exactly
that form for the settings it records — anything else (another form, an unknown, repeated or output option,
``--``, ``--help``) is a MISMATCH and is never run."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from posedata import coco_poses
from rfbench.cli import app
from rfbench.errors import VerificationError
from rfbench.report.verify import rerun_plan


def _report(runner, folder: Path, args: list[str]) -> dict:
    folder.mkdir(parents=True)
    gt = coco_poses(6, seed=1)
    np.save(folder / "gt.npy", gt)
    np.save(folder / "pred.npy", gt + np.random.default_rng(2).normal(scale=0.02, size=gt.shape))
    old = Path.cwd()
    os.chdir(folder)
    try:
        result = runner.invoke(app, args)
    finally:
        os.chdir(old)
    assert result.exit_code == 0, result.output
    return json.loads((folder / "report.json").read_text())


def test_equals_forms_are_recorded_canonically(runner, tmp_path):
    rep = _report(runner, tmp_path / "a", ["score", "--pred=pred.npy", "--gt=gt.npy", "--skeleton=coco17",
                                           "--units=m", "--norm=bbox", "--k=0.2", "--bootstrap=0",
                                           "--out=report.json"])
    argv = rep["reproducer"]["argv"]
    assert argv[argv.index("--pred") + 1] == "pred.npy" and argv[argv.index("-o") + 1] == "report.json"
    assert not any("=" in a for a in argv if a.startswith("--"))


CANONICAL = ["rfbench", "score", "--task", "pose", "--pred", "p.npy", "--gt", "g.npy", "--skeleton", "coco17",
             "--units", "m", "--norm", "bbox", "--k", "0.2", "--comparison", "<=", "--averaging", "micro,macro",
             "--auc-n", "20", "--auc-max", "1.0", "--oks-area", "bbox", "--cluster-by", "recording", "--bootstrap",
             "0", "--confidence", "0.95", "--seed", "0", "-o", "report.json"]


def _plan(argv):
    return rerun_plan({"reproducer": {"argv": argv, "cwd": "."}})


def test_the_canonical_reproducer_is_parsed_back_into_its_settings():
    plan = _plan(CANONICAL)
    assert plan.task == "pose" and plan.settings.k == (0.2,) and str(plan.inputs.pred) == "p.npy"
    assert plan.bootstrap.replicates == 0 and plan.out == "report.json" and not plan.plots


@pytest.mark.parametrize("edit, why", [
    (lambda a: a.__setitem__(slice(4, 6), ["--pred=p.npy"]), "'--pred=p.npy' is not an option"),
    (lambda a: a.__setitem__(slice(-2, None), ["-oreport.json"]), "'-oreport.json' is not an option"),
    (lambda a: a.append("--force"), "'--force' is not an option"),
    (lambda a: a.append("--json"), "'--json' is not an option"),
    (lambda a: a.append("--help"), "'--help' is not an option"),
    (lambda a: a.extend(["--", "x"]), "'--' is not an option"),
    (lambda a: a.extend(["--k", "0.5"]), "it passes --k twice"),
    (lambda a: a.extend(["-o", "other.json"]), "it passes -o twice"),
    (lambda a: a.extend(["--shell", "rm"]), "'--shell' is not an option"),
    (lambda a: a.__setitem__(15, "0.20"), "at word 15 ('0.20', where rfbench writes '0.2')"),
    (lambda a: a.__delitem__(slice(20, 22)), "at word 20"),  # a default left implicit
    (lambda a: a.__setitem__(3, "classify"), "does not start with --task pose|gesture"),
    (lambda a: a.__setitem__(33, "-3"), "seed"),
])
def test_a_reproducer_that_is_not_the_canonical_command_is_a_mismatch(edit, why):
    argv = list(CANONICAL)
    edit(argv)
    with pytest.raises(VerificationError) as err:
        _plan(argv)
    assert why in str(err.value) and err.value.exit_code == 1


def test_a_reproducer_rewritten_in_other_forms_is_refused_and_not_run(runner, tmp_path):
    """Before, verify accepted any form it could map and re-ran it; now the recorded command must be exactly
    the one rfbench writes, so a reproducer edited by hand — even into an equivalent form — is a mismatch."""
    first = tmp_path / "first"
    rep = _report(runner, first, ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--skeleton", "coco17",
                                  "--units", "m", "--norm", "bbox", "--k", "0.2", "--bootstrap", "0", "-o",
                                  "report.json"])
    argv = rep["reproducer"]["argv"]
    typed = ["rfbench", "score"]
    i = 2
    while i < len(argv):
        if argv[i] == "-o":
            typed.append("-o" + argv[i + 1])
            i += 2
        elif argv[i].startswith("--") and i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            typed.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            typed.append(argv[i])
            i += 1
    typed += ["--plots", "--force"]
    rep["reproducer"]["argv"] = typed
    (first / "report.json").write_text(json.dumps(rep))
    from rfbench.report.render import render_markdown

    (first / "report.md").write_text(render_markdown(rep))  # the .md renders the report, reproducer included
    result = runner.invoke(app, ["verify", str(first / "report.json")])
    assert result.exit_code == 1, result.output
    assert "the reproducer is not a command verify runs" in result.output
    assert sorted(p.name for p in first.iterdir()) == ["gt.npy", "pred.npy", "report.json", "report.md"]


def test_a_moved_report_still_verifies(runner, tmp_path):
    first = tmp_path / "first"
    _report(runner, first, ["score", "--pred=pred.npy", "--gt=gt.npy", "--skeleton=coco17", "--units=m",
                            "--norm=bbox", "--k=0.2", "--bootstrap=0", "-oreport.json"])
    moved = tmp_path / "moved"
    shutil.move(first, moved)
    result = runner.invoke(app, ["verify", str(moved / "report.json")])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("MATCH")
    assert sorted(p.name for p in moved.iterdir()) == ["gt.npy", "pred.npy", "report.json", "report.md"]
