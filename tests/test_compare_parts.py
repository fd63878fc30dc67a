"""``rfbench compare``: the parts that decide comparability beyond the metric's name — a layout that was not
verified (never the claim's skeleton), PCK-AUC's range and threshold count, OKS's area and sigmas, 2D against 3D
— and the bound on ``--batch-size``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from posedata import coco_poses, h36m_poses
from rfbench.cli import app
from rfbench.errors import FormatError, ValidationError
from rfbench.metrics.skeletons import BUILTIN
from rfbench.report.claims import parse_claims
from rfbench.report.compare import compare_report


def _score(runner, *args):
    result = runner.invoke(app, ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--units", "m", "--bootstrap", "0",
                                 "-o", "report.json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(Path("report.json").read_text())


def _claim(metric: str, spec: dict, **fields) -> str:
    """A claims file of one claim with the given spec (TOML inline table, written by hand)."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(v)

    inline = ", ".join(f"{k} = {value(v)}" for k, v in spec.items())
    extra = "".join(f"{k} = {value(v)}\n" for k, v in fields.items())
    return (f'[[claim]]\nid = "c"\nmodel = "m"\nmetric = "{metric}"\nvalue = 0.5\nvalue_scale = "fraction"\n'
            f"{extra}spec = {{ {inline} }}\nsource = {{ citation = \"x\" }}\n")


def _compare(runner, claim_text: str, *extra):
    with open("claim.toml", "w") as fh:
        fh.write(claim_text)
    result = runner.invoke(app, ["compare", "report.json", "claim.toml", "--json", *extra])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    (item,) = doc["comparisons"]
    return doc, item, {p["part"]: p for p in item["parts"]}


# Every PCK spec piece a claim can state, at what rfbench score writes by default.
PCK_SPEC = {"normalization": "hip-width", "k": 0.2, "comparison": "<=", "averaging": "micro", "floor": "relative",
            "visibility": "used", "per_axis": False, "precision": "float64", "result_precision": "float64"}


# -- a layout that is not verified ----------------------------------------------------------------------


def _custom_layout(checks: bool) -> str:
    layout = BUILTIN["coco17"].to_dict()
    layout = {"name": "mycoco", "joints": layout["joints"], "roles": layout["roles"],
              "checks": layout["checks"] if checks else []}
    with open("mycoco.json", "w") as fh:
        json.dump(layout, fh)
    return "mycoco.json"


@pytest.mark.parametrize("case", ["trust-layout", "custom-checked", "custom-unchecked"])
def test_an_unverified_layout_is_never_the_claim_s_skeleton(runner, tmp_path, monkeypatch, case):
    """A report scored with --trust-layout over a failed layout check, or under a custom layout (whose checks are
    its own file's, or none), carries LAYOUT NOT VERIFIED; compare showed it COMPARABLE with skeleton and
    normalization 'same' and never said so. Its skeleton, and a normalization measured between the layout's
    joints, can never be 'same', and compare repeats the warning."""
    monkeypatch.chdir(tmp_path)
    if case == "trust-layout":  # Human3.6M-ordered poses declared as COCO: the face check fails
        gt = h36m_poses(40, seed=3)
        skeleton = ["--skeleton", "coco17", "--trust-layout"]
    else:
        gt = coco_poses(40, seed=3)
        skeleton = ["--skeleton", _custom_layout(checks=case == "custom-checked")]
    np.save("gt.npy", gt)
    np.save("pred.npy", gt + np.random.default_rng(4).normal(scale=0.03, size=gt.shape))
    report = _score(runner, *skeleton, "--norm", "hip-width", "--k", "0.2", "--metrics", "pck",
                    "--averaging", "micro")
    assert any(n.startswith("LAYOUT NOT VERIFIED") for n in report["notes"])
    name = report["results"][0]["spec"]["skeleton"]  # coco17, or mycoco@SHA8: the claim names it exactly
    doc, item, parts = _compare(runner, _claim("pck", PCK_SPEC | {"skeleton": name}), "--verify")
    assert doc["verified"] is True
    assert item["comparable"] is False and doc["comparable"] == 0
    for part in ("skeleton", "normalization"):
        assert parts[part]["status"] == "unknown", parts[part]
        assert "LAYOUT NOT VERIFIED" in parts[part]["report"], parts[part]
    assert doc["layout_warning"].startswith("LAYOUT NOT VERIFIED: skeleton " + name)
    # the re-score is made under the same layout: its warning says so, and its normalization still counts
    assert item["rescore"]["status"] == "done", item["rescore"]
    assert item["rescore"]["layout_warning"].startswith("LAYOUT NOT VERIFIED")
    assert {"skeleton", "normalization"} <= set(item["rescore"]["still_differs"])
    text = runner.invoke(app, ["compare", "report.json", "claim.toml", "--verify"])
    assert text.exit_code == 0, text.output
    assert "NOT COMPARABLE" in text.output and "\n  COMPARABLE" not in text.output
    header = text.output.splitlines()[1]
    assert header.startswith("  LAYOUT NOT VERIFIED: skeleton " + name), text.output


def test_a_bbox_normalization_does_not_depend_on_the_layout(runner, tmp_path, monkeypatch):
    """A box normalization measures no named joints: only the skeleton is unknown under an unverified layout."""
    monkeypatch.chdir(tmp_path)
    gt = coco_poses(30, seed=5)
    np.save("gt.npy", gt)
    np.save("pred.npy", gt + 0.01)
    _score(runner, "--skeleton", _custom_layout(checks=False), "--norm", "bbox", "--k", "0.2", "--metrics", "pck",
           "--averaging", "micro")
    _, item, parts = _compare(runner, _claim("pck", PCK_SPEC | {"normalization": "bbox", "skeleton": "coco17"}))
    assert parts["normalization"]["status"] == "same"
    assert parts["skeleton"]["status"] == "differs"  # mycoco@SHA8 is not coco17, whatever its check says


def test_a_verified_builtin_layout_is_the_claim_s_skeleton(runner, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    gt = coco_poses(30, seed=5)
    np.save("gt.npy", gt)
    np.save("pred.npy", gt + 0.01)
    report = _score(runner, "--skeleton", "coco17", "--norm", "hip-width", "--k", "0.2", "--metrics", "pck",
                    "--averaging", "micro")
    assert report["layout_check"]["passed"] is True
    doc, item, parts = _compare(runner, _claim("pck", PCK_SPEC | {"skeleton": "coco17", "dims": 2}))
    assert parts["skeleton"]["status"] == "same" and parts["normalization"]["status"] == "same"
    assert parts["dimensions"] == {"part": "dimensions", "report": "2D", "claim": "2D", "status": "same"}
    assert doc["layout_warning"] is None and "layout_warning" not in item["rescore"]
    text = runner.invoke(app, ["compare", "report.json", "claim.toml"])
    assert "LAYOUT NOT VERIFIED" not in text.output


# -- PCK-AUC's range and threshold count ----------------------------------------------------------------


AUC_SPEC = {key: value for key, value in PCK_SPEC.items() if key not in ("k", "result_precision")} | {
    "skeleton": "coco17", "dims": 2}


@pytest.fixture
def auc_report(runner, tmp_path, monkeypatch):
    """A coco17 report with PCK-AUC over [0, 1) in 20 thresholds (rfbench's default) and MPJPE."""
    monkeypatch.chdir(tmp_path)
    gt = coco_poses(30, seed=7)
    np.save("gt.npy", gt)
    np.save("pred.npy", gt + np.random.default_rng(8).normal(scale=0.05, size=gt.shape))
    report = _score(runner, "--skeleton", "coco17", "--norm", "hip-width", "--metrics", "pck-auc,mpjpe",
                    "--averaging", "micro")
    auc = next(r for r in report["results"] if r["metric"] == "pck-auc")
    assert (auc["spec"]["auc_max"], auc["spec"]["auc_n"]) == (1.0, 20)
    return tmp_path


@pytest.mark.parametrize("stated,k_max,thresholds", [
    ({"auc_max": 0.25, "auc_n": 5}, "differs", "differs"),  # [0, 0.25) in 5 is another number than [0, 1) in 20
    ({"auc_max": 1.0, "auc_n": 5}, "same", "differs"),
    ({"auc_max": 0.25, "auc_n": 20}, "differs", "same"),
    ({"auc_max": 1, "auc_n": 20}, "same", "same"),
    ({}, "unknown", "unknown"),  # not stated: never taken to be rfbench's default
    ({"auc_max": "unknown", "auc_n": "unknown"}, "unknown", "unknown"),
])
def test_pck_auc_range_and_threshold_count_are_parts(runner, auc_report, stated, k_max, thresholds):
    _, item, parts = _compare(runner, _claim("pck-auc", AUC_SPEC | stated))
    assert parts["AUC k_max"]["status"] == k_max, parts["AUC k_max"]
    assert parts["AUC thresholds"]["status"] == thresholds, parts["AUC thresholds"]
    assert parts["AUC k_max"]["report"] == "1" and parts["AUC thresholds"]["report"] == "20"
    if k_max == thresholds == "same":
        assert set(item["differs"]) == set() and set(item["unknown"]) <= {"dataset", "protocol", "setting",
                                                                          "leakage status"}
    # the re-score is made over the claim's thresholds; those it does not state are assumptions, said so
    r = item["rescore"]
    assert r["status"] == "done", r
    assert r["spec"]["auc_n"] == (stated.get("auc_n") if isinstance(stated.get("auc_n"), int) else 20)
    assert r["spec"]["auc_max"] == (stated.get("auc_max") if isinstance(stated.get("auc_max"), (int, float))
                                    else 1.0)
    assumed = " ".join(r["assumed"])
    assert ("auc_n 20" in assumed) == (thresholds == "unknown") and ("auc_max 1" in assumed) == (k_max == "unknown")


def test_the_claim_s_range_is_what_the_report_is_compared_on_not_its_label(runner, auc_report):
    """The repro: a claim over [0, 0.25) in 5 thresholds beside the report's [0, 1) in 20 was COMPARABLE (every
    data part stated): the two parts differ now, and the re-score is the claim's [0, 0.25) n=5."""
    spec = AUC_SPEC | {"auc_max": 0.25, "auc_n": 5}
    doc, item, parts = _compare(runner, _claim("pck-auc", spec))
    assert {"AUC k_max", "AUC thresholds"} <= set(item["differs"]) and item["comparable"] is False
    assert item["rescore"]["label"].startswith("PCK-AUC[0,0.25) n=5 ")


# -- dimensions -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims,status", [(2, "differs"), (3, "same"), (None, "unknown"), ("unknown", "unknown")])
def test_a_2d_claim_is_not_a_3d_report(runner, tmp_path, monkeypatch, dims, status):
    """A 2D MPJPE claim was COMPARABLE with a 3D MPJPE: the dimensions are a part, unknown unless stated."""
    monkeypatch.chdir(tmp_path)
    gt = h36m_poses(30, seed=9)
    np.save("gt.npy", gt)
    np.save("pred.npy", gt + 0.01)
    _score(runner, "--skeleton", "h36m17", "--metrics", "mpjpe", "--averaging", "micro")
    spec = {"averaging": "micro", "visibility": "used", "skeleton": "h36m17"} | (
        {"dims": dims} if dims is not None else {})
    _, item, parts = _compare(runner, _claim("mpjpe", spec, units="m"))
    assert parts["dimensions"]["status"] == status and parts["dimensions"]["report"] == "3D", parts["dimensions"]
    assert parts["dimensions"]["claim"] == {2: "2D", 3: "3D"}.get(dims, "unknown")
    # the re-score is the report's own poses: their dimensions are not the claim's for the asking
    if status != "same":
        assert "dimensions" in item["rescore"]["still_differs"]


def test_a_convention_that_takes_one_dimension_states_it(runner, tmp_path, monkeypatch):
    """mmpose's PCK takes 2D keypoints only (its rule's dims): a claim under it is a 2D claim."""
    monkeypatch.chdir(tmp_path)
    gt = h36m_poses(30, seed=9)
    np.save("gt.npy", gt)
    np.save("pred.npy", gt + 0.01)
    _score(runner, "--skeleton", "h36m17", "--metrics", "pck", "--norm", "bbox-max-side", "--k", "0.2")
    _, _, parts = _compare(runner, '[[claim]]\nid = "c"\nmetric = "pck"\nvalue = 0.5\nconvention = "mmpose"\n'
                                    'spec = { k = 0.2 }\nsource = { citation = "x" }\n')
    assert parts["dimensions"]["status"] == "differs" and parts["dimensions"]["claim"] == "2D"
    with pytest.raises(FormatError, match=re.escape("convention mmpose computes pck on 2D poses only")):
        parse_claims('[[claim]]\nmetric = "pck"\nvalue = 0.5\nconvention = "mmpose"\nspec = { dims = 3 }\n'
                     'source = { citation = "x" }\n', "c.toml")


# -- OKS's area and sigmas ------------------------------------------------------------------------------


@pytest.fixture
def oks_reports(runner, tmp_path, monkeypatch):
    """Two coco17 OKS reports: the layout's sigmas over 0.53 x box (report.json), and declared sigmas of 0.05
    over a constant area of 2.5 (declared/report.json)."""
    monkeypatch.chdir(tmp_path)
    gt = coco_poses(30, seed=11)
    np.save("gt.npy", gt)
    np.save("pred.npy", gt + np.random.default_rng(12).normal(scale=0.02, size=gt.shape))
    _score(runner, "--skeleton", "coco17", "--metrics", "oks")
    result = runner.invoke(app, ["score", "--pred", "pred.npy", "--gt", "gt.npy", "--units", "m", "--bootstrap", "0",
                                 "--skeleton", "coco17", "--metrics", "oks", "--oks-area", "2.5",
                                 "--sigmas", ",".join(["0.05"] * 17), "-o", "declared.json"])
    assert result.exit_code == 0, result.output
    return tmp_path


OKS_SPEC = {"averaging": "sample", "visibility": "used", "skeleton": "coco17", "dims": 2}
COCO_SIGMAS = list(BUILTIN["coco17"].sigmas)


@pytest.mark.parametrize("report,stated,area,sigmas", [
    ("report.json", {"oks_area": "bbox", "sigmas": "coco17"}, "same", "same"),
    ("report.json", {"oks_area": "0.53*bbox", "sigmas": COCO_SIGMAS}, "same", "same"),
    ("report.json", {"oks_area": 2.5, "sigmas": [0.05] * 17}, "differs", "differs"),
    ("report.json", {}, "unknown", "unknown"),
    ("declared.json", {"oks_area": 2.5, "sigmas": [0.05] * 17}, "same", "same"),
    ("declared.json", {"oks_area": "bbox", "sigmas": "coco17"}, "differs", "differs"),
])
def test_oks_area_and_sigmas_are_parts(runner, oks_reports, report, stated, area, sigmas):
    with open("claim.toml", "w") as fh:
        fh.write(_claim("oks", OKS_SPEC | stated))
    result = runner.invoke(app, ["compare", report, "claim.toml", "--json"])
    assert result.exit_code == 0, result.output
    (item,) = json.loads(result.stdout)["comparisons"]
    parts = {p["part"]: p for p in item["parts"]}
    assert parts["OKS area"]["status"] == area, parts["OKS area"]
    assert parts["OKS sigmas"]["status"] == sigmas, parts["OKS sigmas"]
    assert parts["averaging"]["status"] == "same"  # an OKS is a mean over samples, and a claim may say so


# -- the claim fields' validation -----------------------------------------------------------------------


@pytest.mark.parametrize("spec,message", [
    ("dims = 4", "spec.dims must be 2 or 3"),
    ("dims = '3'", "spec.dims must be 2 or 3"),
    ("dims = true", "spec.dims must be 2 or 3"),
    ("dims = 2.0", "spec.dims must be 2 or 3"),
    ("sigmas = 'uniform 0.5'", "spec.sigmas must be"),
    ("sigmas = 'h36m17'", "spec.sigmas must be"),  # h36m17 has no published sigmas
    ("sigmas = [0.1, -0.2]", "spec.sigmas must be"),
    ("sigmas = []", "spec.sigmas must be"),
    ("oks_area = '0.1*bbox'", "spec.oks_area must be"),
    ("oks_area = -2", "spec.oks_area must be"),
    ("oks_area = nan", "spec.oks_area must be"),
    ("auc_max = 0", "spec.auc_max must be"),
    ("averaging = 'sample'", "spec averaging must be one of"),  # only an OKS averages over samples
])
def test_the_new_spec_fields_are_validated_strictly(spec, message):
    with pytest.raises(FormatError, match=re.escape(message)):
        parse_claims(f'[[claim]]\nmetric = "pck"\nvalue = 0.5\nspec = {{ {spec} }}\nsource = {{ citation = "x" }}\n',
                     "bad.toml")


def test_dims_combines_with_a_convention():
    (cf,) = [parse_claims('[[claim]]\nmetric = "mpjpe"\nvalue = 0.5\nconvention = "wiflow"\nspec = { dims = 2 }\n'
                          'source = { citation = "x" }\n', "ok.toml")]
    assert cf.claims[0].spec == {"dims": 2}


# -- --batch-size ---------------------------------------------------------------------------------------


def test_batch_size_is_bounded_as_score_bounds_it(runner, auc_report):
    """compare --batch-size 2**63 was an OverflowError traceback (exit 1): it is bounded by score's declaration
    of --batch-size, one line, exit 2."""
    from rfbench.report.settings import PoseSettings
    from rfbench.settings import options_of

    bound = int(next(o for f, o in options_of(PoseSettings) if f.name == "batch_size").max)
    with open("claim.toml", "w") as fh:
        fh.write(_claim("pck-auc", {"normalization": "hip-width", "averaging": "batch-mean"}))
    for value in (str(2**63), str(bound + 1)):
        result = runner.invoke(app, ["compare", "report.json", "claim.toml", "--batch-size", value])
        lines = [ln for ln in result.output.splitlines() if ln.strip()]
        assert result.exit_code == 2, result.output
        assert len(lines) == 1 and lines[0].startswith("error: --batch-size ") and f"at most {bound}" in lines[0], lines
        assert "Traceback" not in result.output
    ok = runner.invoke(app, ["compare", "report.json", "claim.toml", "--batch-size", str(bound), "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["comparisons"][0]["rescore"]["status"] == "done"
    files = [parse_claims(Path("claim.toml").read_text(), "claim.toml")]
    with pytest.raises(ValidationError, match=f"at most {bound}"):
        compare_report("report.json", files, batch_size=2**63)


# -- one release of a manifest of both Widar3.0 releases ------------------------------------------------------


@pytest.mark.parametrize("release, bvp_same, csi_same", [("bvp", True, False), ("csi", False, True),
                                                         (None, False, True)])
def test_the_scored_release_of_a_both_releases_manifest_is_the_dataset(release, bvp_same, csi_same):
    """A report whose rows come from one release of an ``ingest widar --kind both`` manifest (``windows
    --release``) records it (``split.release``, set by score): compare names that release's dataset, so BVP rows
    are never "Widar3.0 CSI" and can be the BVP claims' dataset."""
    from rfbench.report.claims import _builtin
    from rfbench.report.compare import _dataset_part

    split = {"dataset": "widar3", "protocol": "cross-subject", **({"release": release} if release else {})}
    report = {"evidence": "MEASURED", "split": split}
    bvp_claim = _builtin("widar3-bvp").claims[0]
    assert (_dataset_part(report, bvp_claim).status == "same") is bvp_same
    assert ("BVP" in _dataset_part(report, bvp_claim).report) is bvp_same
    assert ("CSI" in _dataset_part(report, bvp_claim).report) is csi_same


def test_score_records_the_release_of_its_rows():
    from rfbench.protocols.splitfile import SplitInfo

    info = SplitInfo(train=frozenset(), test=frozenset(), protocol="cross-subject", seed=0, params={},
                     leakage_prone=False, audit={}, synthetic=False, manifest=None, dataset="widar3")
    assert "release" not in info.to_report()
    import dataclasses

    assert dataclasses.replace(info, release="bvp").to_report()["release"] == "bvp"
