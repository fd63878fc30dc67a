"""``rfbench compare`` of a BVP report against ``claims:widar3-bvp``: part by part, what matches (dataset,
protocol, gestures, metric, leakage status) and what the paper did not state (the setting)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.datasets.synthetic_bvp import make_widar_bvp_tree
from rfbench.datasets.widar_bvp import ingest_bvp
from rfbench.datasets.windows import write_windows
from rfbench.protocols.split import write_splits
from rfbench.report.claims import load_claims


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bvpc")
    make_widar_bvp_tree(root / "tree", frames=(1, 3), damage=False)
    ingest_bvp(root / "tree", workers=1).write(root / "manifest.json")
    write_splits(root / "manifest.json", "cross-location", root / "split.json", test=["3"], gestures="common6")
    for side in ("train", "test"):
        write_windows(root / "split.json", side, root / side)
    y = np.load(root / "test" / "y.npy")
    np.save(root / "pred.npy", np.where(np.arange(len(y)) % 4 == 0, (y + 1) % 6, y))  # 75 % right
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["score", "--pred", str(root / "pred.npy"), "--rows",
                                      str(root / "test" / "index.json"), "--split", str(root / "split.json"),
                                      "--task", "gesture", "--bootstrap", "0", "-o", str(root / "report.json")])
    assert result.exit_code == 0, result.output
    return root / "report.json"


def test_the_claims_file_states_the_papers_figures():
    claims = {c.id: c for f in load_claims(["claims:widar3-bvp"]) for c in f.claims}
    assert claims["widar3-bvp-in-domain"].value == 92.7 and claims["widar3-bvp-in-domain"].protocol == "in-domain"
    for key, protocol in (("cross-location", "cross-location"), ("cross-orientation", "cross-orientation"),
                          ("cross-environment", "cross-room")):
        c = claims[f"widar3-bvp-{key}"]
        assert c.value == (82.6, 92.4) and c.protocol == protocol and c.leakage_prone is False
    assert all(c.gestures.count(",") == 5 for c in claims.values())


def test_compare_says_part_by_part_what_matches(runner, report):
    result = runner.invoke(app, ["compare", str(report), "claims:widar3-bvp", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    by_id = {c["claim"]["id"]: {p["part"]: p["status"] for p in c["parts"]} for c in doc["comparisons"]}
    loc = by_id["widar3-bvp-cross-location"]
    assert loc["metric"] == loc["protocol"] == loc["gestures"] == loc["leakage status"] == "same"
    # the tree is generated (its files carry the generators' marker): its data is never the release's
    # (tests/test_compare_generated.py); a report of the release names the claim's dataset
    assert loc["dataset"] == "differs"
    assert loc["setting"] == "unknown"  # the abstract does not say which locations were held out
    assert by_id["widar3-bvp-cross-orientation"]["protocol"] == "differs"
    inside = by_id["widar3-bvp-in-domain"]
    assert inside["protocol"] == "differs" and inside["leakage status"] == "differs"


def test_a_report_without_the_gesture_filter_differs_on_gestures(report):
    from rfbench.report.compare import _data_parts

    doc = json.loads(report.read_text())
    del doc["split"]["params"]["gestures"]
    doc["classes"].append({"class": "Draw-1", "support": 3})  # scored on every gesture: more than the six
    (claim,) = [c for f in load_claims(["claims:widar3-bvp"]) for c in f.claims
                if c.id == "widar3-bvp-cross-location"]
    parts = {p.name: p for p in _data_parts(doc, claim)}
    shown = parts["gestures"].report
    assert parts["gestures"].status == "differs"
    assert shown.startswith("every gesture of the manifest: ") and "Draw-1" in shown


def test_compare_judges_the_gestures_scored_the_k_the_dataset_and_the_leakage_of_the_report(report):
    """A probe of compare: a preset two of whose gestures the data did not hold, a top-1 claim beside top-3, a
    template corpus named like the release, and a report scored with shared files were all called the same as
    the published figure's."""
    from rfbench.report.compare import _compare_one, _data_parts

    doc = json.loads(report.read_text())
    (claim,) = [c for f in load_claims(["claims:widar3-bvp"]) for c in f.claims
                if c.id == "widar3-bvp-cross-location"]
    assert {p.name: p for p in _data_parts(doc, claim)}["gestures"].status == "same"
    four = json.loads(report.read_text())
    four["classes"] = [c for c in four["classes"] if not str(c["class"]).startswith("Draw")]
    assert {p.name: p for p in _data_parts(four, claim)}["gestures"].status == "differs"
    named = json.loads(report.read_text())
    named["split"]["dataset"] = "Widar3.0 BVP"
    part = {p.name: p for p in _data_parts(named, claim)}["dataset"]
    assert part.status == "differs" and "ingest files" in part.report
    leaky = json.loads(report.read_text())
    leaky["split"]["audit"]["passed"] = False
    assert {p.name: p for p in _data_parts(leaky, claim)}["leakage status"].status == "differs"
    doc["results"] += [{"metric": "top-k", "spec": {"k": k}, "model": {"value": v}} for k, v in ((3, 0.9), (5, 1.0))]
    top1 = dataclasses.replace(claim, metric="top-k", spec={"k": 1})
    parts = {p.name: p for p in _compare_one(doc, report, top1, None, {}).parts}
    assert parts["k"].status == "differs" and (parts["k"].report, parts["k"].claim) == ("3, 5", "1")
    top5 = dataclasses.replace(claim, metric="top-k", spec={"k": 5})
    compared = _compare_one(doc, report, top5, None, {})
    assert {p.name: p for p in compared.parts}["k"].status == "same" and compared.result["spec"]["k"] == 5
