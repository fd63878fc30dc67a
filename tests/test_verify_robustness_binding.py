"""verify of a robustness summary: each cell re-run is the cell report the summary's checks read.

The summary's checks hashed each cell report and parsed it from those bytes, then handed the cell's re-run only
its path, and the re-run read, hashed and scored whatever was at that path by then. A cell report forged (its
number changed, its sha256 and every derived number and picture recorded again in the summary) and put back in
its honest version once the summary's checks were done: the summary agreed with the forged report, the re-run
with the honest one, and verify said MATCH on a number no re-run made.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from rfbench.errors import VerificationError
from rfbench.report import verify_robustness

CELL = "noise-3-seed0"


def _forge(sweep: Path, cell: str, value: float) -> bytes:
    """Cell ``cell``'s report given the first result ``value`` (and an interval around it), its sha256, value and
    drop recorded in the summary, every derived number recomputed and the pictures drawn again with rfbench's own
    functions. Returns the honest report's bytes."""
    from rfbench.report.robustness import _pictures, aggregate

    report = sweep / "cells" / cell / "report.json"
    honest = report.read_bytes()
    doc = json.loads(honest)
    first = doc["results"][0]
    first["model"]["value"] = value
    first["ci"]["model"].update(low=value - 0.03, high=value + 0.03)
    data = json.dumps(doc, indent=2, sort_keys=True).encode() + b"\n"
    report.write_bytes(data)
    path = sweep / "summary.json"
    summary = json.loads(path.read_text())
    for entry in summary["cells"]:
        if f"{entry['corruption']}-{entry['severity']}-seed{entry['seed']}" == cell:
            entry["sha256"] = hashlib.sha256(data).hexdigest()
            entry["model"] = {"value": value, "low": value - 0.03, "high": value + 0.03}
            moved = summary["clean"]["model"]["value"] - value - entry["drop"]["value"]  # the interval moves too
            entry["drop"].update(value=entry["drop"]["value"] + moved, low=entry["drop"]["low"] + moved,
                                 high=entry["drop"]["high"] + moved)
    summary.update(aggregate(summary["metric"]["better"], summary["clean"], summary["cells"],
                             summary["baseline"]["value"], None))
    path.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    if any(sweep.glob("robustness-*.png")):
        _pictures(summary, sweep)
    return honest


def test_a_cell_report_put_back_after_the_summary_checks_is_not_re_run_as_the_checked_one(tiny_demo, tmp_path,
                                                                                          monkeypatch):
    """The moment of the race, made deterministic: right after the summary's checks (which read the forged cell
    report its sha256 names), the honest report is put back in its place. Before: the cell's re-run read the
    honest report and MATCHed, and verify said MATCH on the forged 0.80."""
    from rfbench.report.verify import verify_report

    d = tmp_path / "d"
    shutil.copytree(tiny_demo, d, symlinks=True)
    sweep = d / "pose" / "robustness"
    honest = _forge(sweep, CELL, 0.80)
    report = sweep / "cells" / CELL / "report.json"
    real = verify_robustness._check
    swapped = []

    def check_then_swap(path, files, reference_allowed, *args, **kwargs):
        checked = real(path, files, reference_allowed, *args, **kwargs)
        if reference_allowed and not swapped:  # the summary's own checks are done: the honest bytes go back
            report.write_bytes(honest)
            swapped.append(path)
        return checked

    monkeypatch.setattr(verify_robustness, "_check", check_then_swap)
    forged = hashlib.sha256(report.read_bytes()).hexdigest()
    with pytest.raises(VerificationError, match=f"cell {CELL}: .*not the report the summary's checks read") as caught:
        verify_report(sweep / "summary.json", root=d, cells=(CELL,))
    assert swapped
    assert caught.value.differences == [{"path": "sha256", "report": forged,
                                         "rerun": hashlib.sha256(honest).hexdigest()}]


def test_the_honest_summary_still_verifies_cell_by_cell(tiny_demo, tmp_path):
    """The binding holds an untouched sweep to nothing new: its cells re-run as MATCH."""
    from rfbench.report.verify import verify_report

    d = tmp_path / "d"
    shutil.copytree(tiny_demo, d, symlinks=True)
    result = verify_report(d / "pose" / "robustness" / "summary.json", root=d, cells=(CELL, "clean"))
    assert result.status == "match"
    assert f"cell {CELL} re-run: MATCH" in " ".join(result.notes)
