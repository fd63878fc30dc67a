"""rfbench verify re-runs reproducers written with every option form the command line accepts
(``--opt value``, ``--opt=value``, ``-o FILE``, ``-oFILE``) and never writes (``--plots``, ``--force`` dropped)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from posedata import coco_poses
from rfbench.cli import app
from rfbench.report.verify import rerun_argv


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


def test_rerun_argv_maps_and_drops_every_form(tmp_path):
    paths = {"pred": tmp_path / "p.npy", "gt": tmp_path / "g.npy"}
    report = {"reproducer": {"argv": ["rfbench", "score", "--pred=old/p.npy", "--gt", "old/g.npy", "--k=0.2",
                                      "-oout.json", "--plots", "--force", "--out=x.json", "-o", "y.json", "--json"]},
              "inputs": [{"role": "pred", "option": "--pred"}, {"role": "gt", "option": "--gt"}]}
    got = rerun_argv(report, paths)
    assert got == ["score", "--pred", str(paths["pred"]), "--gt", str(paths["gt"]), "--k=0.2", "--json"]


def test_a_moved_report_written_with_equals_forms_still_verifies(runner, tmp_path):
    first = tmp_path / "first"
    rep = _report(runner, first, ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--skeleton", "coco17",
                                  "--units", "m", "--norm", "bbox", "--k", "0.2", "--bootstrap", "0", "-o",
                                  "report.json"])
    # Rewrite the reproducer as a person might have typed it, then move the folder: the recorded relative
    # paths no longer resolve from the recorded cwd, so only the remapped options can find the inputs.
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
    assert "--pred=pred.npy" in typed and "-oreport.json" in typed
    rep["reproducer"]["argv"] = typed
    (first / "report.json").write_text(json.dumps(rep))
    from rfbench.report.render import render_markdown

    (first / "report.md").write_text(render_markdown(rep))  # the .md renders the report, reproducer included
    moved = tmp_path / "moved"
    shutil.move(first, moved)
    result = runner.invoke(app, ["verify", str(moved / "report.json")])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("MATCH")
    assert not (moved / "report.md").read_text().count("## Pictures")  # nothing was (re)written
    assert sorted(p.name for p in moved.iterdir()) == ["gt.npy", "pred.npy", "report.json", "report.md"]
