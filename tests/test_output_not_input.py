"""No command writes over a file it reads, ``--force`` or not.

``score -o pred.json --force`` replaced the prediction record it had just read with the report (exit 0: the
report then named a record that no longer existed), and ``-o WINDOWS/y.npy`` or ``-o`` a training ground-truth
file the manifest lists (read for the baseline) replaced those; ``predict -o WINDOWS/X.npy --force`` replaced
the X it ran the model on, and ``-o WINDOWS/index.npy`` the windows index (the record goes beside the
predictions, as index.json); ``adapt f.npy -o f.npy --force`` replaced its features with the adapter; ``ingest
-o`` naming one of the dataset files it lists replaced that file with the manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.errors import OutputExistsError
from rfbench.io.files import refuse_inputs

MESSAGE = "an input of this job"


def _digest(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture()
def chain(tiny_demo, tmp_path):
    shutil.copytree(tiny_demo, tmp_path / "d", symlinks=True)
    return tmp_path / "d"


def _refused(result, *kept):
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and MESSAGE in text and "write elsewhere" in text, result.output
    return kept


def test_score_never_writes_its_report_over_an_input(runner, chain):
    base = ["score", "--task", "gesture", "--pred", str(chain / "bvp" / "scores.npy"), "--rows",
            str(chain / "windows" / "bvp-test" / "index.json"), "--split", str(chain / "bvp-split.json")]
    for target in (chain / "bvp" / "scores.json", chain / "bvp-split.json"):  # the prediction record, the split
        before = _digest(target)
        _refused(runner.invoke(app, [*base, "-o", str(target), "--force"]))
        assert _digest(target) == before
        assert not target.with_suffix(".md").exists()
    ok = runner.invoke(app, [*base, "-o", str(chain / "bvp" / "again.json")])
    assert ok.exit_code == 0, ok.output


def test_score_never_writes_over_the_windows_or_a_dataset_file_it_read(runner, chain):
    argv = ["score", "--task", "pose", "--pred", str(chain / "pose" / "pred.npy"), "--rows",
            str(chain / "windows" / "mmfi-test" / "index.json"), "--skeleton", "h36m17", "--units", "m", "--norm",
            "hip-width", "--k", "0.2", "--metrics", "pck", "--split", str(chain / "mmfi-split.json"), "--manifest",
            str(chain / "mmfi-manifest.json"), "--bootstrap", "50"]
    manifest = json.loads((chain / "mmfi-manifest.json").read_text())
    root = (chain / manifest["root"]).resolve()
    split = json.loads((chain / "mmfi-split.json").read_text())
    train = set(split["train"])
    listed = next(f["path"] for r in manifest["recordings"] if r["id"] in train for f in r["files"]
                  if f["path"].endswith("ground_truth.npy"))  # read for the mean training pose, the baseline
    targets = [chain / "windows" / "mmfi-test" / "y.npy", root / listed]
    for target in targets:
        before = _digest(target)
        _refused(runner.invoke(app, [*argv, "-o", str(target), "--force"]))
        assert _digest(target) == before, target
    ok = runner.invoke(app, [*argv, "-o", str(chain / "pose" / "again.json")])
    assert ok.exit_code == 0, ok.output


def test_predict_never_writes_over_the_windows_it_runs_on(runner, chain):
    windows = chain / "windows" / "bvp-test"
    model = str(chain / "bvp" / "centroid.onnx")
    for out, hit in (("X.npy", "X.npy"), ("index.npy", "index.json"), ("y.npy", "y.npy")):
        before = _digest(windows / hit)
        _refused(runner.invoke(app, ["predict", model, "--windows", str(windows), "-o", str(windows / out),
                                     "--force"]))
        assert _digest(windows / hit) == before, out
    assert sorted(os.listdir(windows)) == ["X.npy", "index.json", "y.npy"]


@pytest.mark.parametrize("name", ["bvp-split", "bvp-manifest"])
def test_predict_never_writes_its_record_over_the_split_or_manifest_the_index_names(runner, chain, name):
    """The record goes beside the predictions (``-o NAME.npy`` writes NAME.json): ``-o bvp-split.npy --force``
    replaced the split the windows index names (and the record pins) with the record (found by an adversarial
    probe)."""
    target = chain / f"{name}.json"
    before = _digest(target)
    _refused(runner.invoke(app, ["predict", str(chain / "bvp" / "centroid.onnx"), "--windows",
                                 str(chain / "windows" / "bvp-test"), "-o", str(chain / f"{name}.npy"), "--force"]))
    assert _digest(target) == before
    assert not (chain / f"{name}.npy").exists()


def test_adapt_never_writes_over_its_features(runner, tmp_path):
    features = tmp_path / "f.npy"
    np.save(features, np.random.default_rng(0).normal(size=(80, 12)))
    before = _digest(features)
    _refused(runner.invoke(app, ["adapt", str(features), "-o", str(features), "--force", "--steps", "2"]))
    assert _digest(features) == before


def test_ingest_never_writes_the_manifest_over_a_file_it_lists(runner, chain, tmp_path):
    tree = chain / "data" / "bvp"
    listed = sorted(tree.rglob("*.mat"))[0]
    before = _digest(listed)
    _refused(runner.invoke(app, ["ingest", "widar", str(tree), "-o", str(listed), "--force"]))
    assert _digest(listed) == before
    ok = runner.invoke(app, ["ingest", "widar", str(tree), "-o", str(tree / "manifest.json"), "--json"])
    assert ok.exit_code == 0, ok.output  # a manifest at the top of a tree whose files lie in BVP/: fine
    assert json.loads(ok.stdout)["recordings"] > 0


def test_split_never_writes_over_a_dataset_file_its_manifest_lists(runner, chain):
    """``split -o`` a dataset file the manifest lists, with ``--force``, replaced that file with the split (the
    manifest itself was refused, its files were not; found by an adversarial review)."""
    listed = sorted((chain / "data" / "bvp").rglob("*.mat"))[0]
    before = _digest(listed)
    argv = ["split", str(chain / "bvp-manifest.json"), "-p", "cross-location", "--test", "3", "--force"]
    _refused(runner.invoke(app, [*argv, "-o", str(listed)]))
    assert _digest(listed) == before
    ok = runner.invoke(app, [*argv, "-o", str(chain / "again.json")])
    assert ok.exit_code == 0, ok.output


@pytest.mark.parametrize("kind", ["bvp", "widar", "mmfi"])
def test_ingest_never_writes_the_manifest_over_the_tree_s_synthetic_marker(runner, chain, kind):
    """``ingest -o TREE/RFBENCH_SYNTHETIC.json --force`` replaced the generator's marker it had just read with the
    manifest: the tree no longer said it was generated (found by an adversarial review)."""
    tree = chain / "data" / kind
    marker = tree / "RFBENCH_SYNTHETIC.json"
    before = _digest(marker)
    command = "widar" if kind == "bvp" else kind
    result = runner.invoke(app, ["ingest", command, str(tree), "-o", str(marker), "--force"])
    if kind == "mmfi":  # (an MM-Fi tree is refused whole first: its ingest lists every entry at the top)
        assert result.exit_code == 2 and "lies inside the dataset tree" in " ".join(result.output.split())
    else:
        _refused(result)
    assert _digest(marker) == before


def test_the_same_file_under_another_name_is_still_an_input(tmp_path):
    data = tmp_path / "a.json"
    data.write_text("{}")
    os.link(data, tmp_path / "hard.json")
    (tmp_path / "soft.json").symlink_to(data)
    with pytest.raises(OutputExistsError, match="hard.json is an input of this job \\(as .*soft.json\\)"):
        refuse_inputs([tmp_path / "hard.json"], [tmp_path / "soft.json"])
    (tmp_path / "sub").mkdir()
    with pytest.raises(OutputExistsError, match=MESSAGE):
        refuse_inputs([tmp_path / "sub" / ".." / "a.json"], [data])
    with pytest.raises(OutputExistsError, match=MESSAGE):  # neither there yet: the same spelling after all
        refuse_inputs([tmp_path / "sub" / ".." / "b.json"], [tmp_path / "b.json"])
    refuse_inputs([tmp_path / "soft.json"], [data])  # an output link is replaced, never followed: not the input
    refuse_inputs([tmp_path / "new.json", None], [data, None])


def test_score_checks_its_outputs_against_the_manifest_it_already_read(runner, chain, monkeypatch):
    """The listed-file check uses the manifest the split was recomputed on: score reads it once (a 60 MB MM-Fi
    manifest took a second per extra read)."""
    import rfbench.datasets.manifest as manifest_module

    reads = []
    for name in ("read_manifest", "read_manifest_hashed"):  # (a split's check reads it with its digest)
        real = getattr(manifest_module, name)
        monkeypatch.setattr(manifest_module, name, lambda path, real=real: reads.append(path) or real(path))
    argv = ["score", "--task", "pose", "--pred", str(chain / "pose" / "pred.npy"), "--rows",
            str(chain / "windows" / "mmfi-test" / "index.json"), "--skeleton", "h36m17", "--units", "m", "--norm",
            "hip-width", "--k", "0.2", "--metrics", "pck", "--split", str(chain / "mmfi-split.json"), "--manifest",
            str(chain / "mmfi-manifest.json"), "--bootstrap", "50", "-o", str(chain / "pose" / "again.json")]
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert len(reads) == 1, reads


def test_score_never_writes_a_picture_over_an_input(runner, chain):
    """``score --plots`` checked its report and report.md against what it read, not the pictures beside them:
    ``-o r.json --plots --force`` wrote r-confusion.png over a split named so (found by an adversarial probe)."""
    pytest.importorskip("matplotlib")
    split = chain / "r-confusion.png"  # the split, under the name the report's picture takes
    shutil.copy(chain / "bvp-split.json", split)
    before = _digest(split)
    argv = ["score", "--task", "gesture", "--pred", str(chain / "bvp" / "scores.npy"), "--rows",
            str(chain / "windows" / "bvp-test" / "index.json"), "--split", str(split), "--plots", "--force"]
    _refused(runner.invoke(app, [*argv, "-o", str(chain / "r.json")]))
    assert _digest(split) == before
    assert not (chain / "r.json").exists() and not (chain / "r.md").exists()
    ok = runner.invoke(app, [*argv, "-o", str(chain / "elsewhere.json")])
    assert ok.exit_code == 0, ok.output
    assert (chain / "elsewhere-confusion.png").is_file()


@pytest.mark.parametrize("which", ["split", "manifest"])
def test_windows_never_writes_over_its_split_or_manifest(runner, chain, which):
    """``windows SPLIT -o DIR --force`` checked none of X.npy, y.npy and index.json against what it read: a split
    (or its manifest) named DIR/index.json was replaced by the index (found by an adversarial probe)."""
    folder = chain / "w"
    folder.mkdir()
    doc = json.loads((chain / "bvp-split.json").read_text())
    if which == "split":
        doc["manifest"]["path"] = "../bvp-manifest.json"
        split = folder / "index.json"
    else:
        manifest = json.loads((chain / "bvp-manifest.json").read_text())
        manifest["root"] = "../" + manifest["root"]  # (relative to the manifest's folder)
        (folder / "index.json").write_text(json.dumps(manifest))
        doc["manifest"] = {"path": "w/index.json", "sha256": _digest(folder / "index.json")}
        split = chain / "s.json"
    split.write_text(json.dumps(doc))
    before = _digest(folder / "index.json")
    _refused(runner.invoke(app, ["windows", str(split), "--side", "test", "-o", str(folder), "--force"]))
    assert _digest(folder / "index.json") == before
    assert sorted(os.listdir(folder)) == ["index.json"]
    ok = runner.invoke(app, ["windows", str(split), "--side", "test", "-o", str(chain / "w2")])
    assert ok.exit_code == 0, ok.output


@pytest.mark.parametrize("how", ["inside", "linked"])
def test_windows_never_writes_into_the_dataset_tree(runner, chain, how):
    """``windows --side both -o OUT`` with OUT/train a link to the dataset tree (or ``-o`` a folder inside it) wrote
    X.npy, y.npy and index.json into the tree it had just read: ingest then found files it did not list, and every
    report over that tree failed verify (found by an adversarial probe; the test fails on the code before)."""
    tree = chain / "data" / "bvp"
    before = sorted(p.relative_to(tree) for p in tree.rglob("*"))
    out = chain / "o"
    if how == "inside":
        args = ["--side", "test", "-o", str(tree / "BVP" / "windows")]
    else:
        out.mkdir()
        (out / "train").symlink_to(tree / "BVP", target_is_directory=True)
        args = ["--side", "both", "-o", str(out)]
    result = runner.invoke(app, ["windows", str(chain / "bvp-split.json"), *args, "--force"])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "the dataset tree" in text and "choose an output folder outside it" in text
    assert sorted(p.relative_to(tree) for p in tree.rglob("*")) == before



def _bvp_argv(chain: Path, out: Path) -> dict[str, list[str]]:
    """Each command of the BVP chain (and the pose sweep), writing ``out`` (a path inside ``data/``)."""
    return {
        "ingest": ["ingest", "widar", str(chain / "data" / "bvp"), "-o", str(out / "manifest.json")],
        "split": ["split", str(chain / "bvp-manifest.json"), "-p", "cross-subject", "--test", "user2",
                  "-o", str(out / "split.json")],
        "predict": ["predict", str(chain / "bvp" / "centroid.onnx"), "--windows", str(chain / "windows" / "bvp-test"),
                    "-o", str(out / "scores.npy")],
        "score": ["score", "--task", "gesture", "--pred", str(chain / "bvp" / "scores.npy"), "--rows",
                  str(chain / "windows" / "bvp-test" / "index.json"), "--split", str(chain / "bvp-split.json"),
                  "-o", str(out / "report.json")],
    }


@pytest.mark.parametrize("how", ["inside", "linked"])
@pytest.mark.parametrize("command", ["ingest", "split", "predict", "score"])
def test_no_command_of_the_chain_writes_into_the_dataset_tree(runner, chain, command, how):
    """ingest, split, predict and score wrote their outputs into the dataset tree they (or their chain) read when
    told to (``-o TREE/BVP/m.json``, or into a folder that is a link into it): the files changed the tree the
    manifest describes, verify's ingest found them, and the honest chain's report was a MISMATCH blamed on an edit
    (found by an adversarial probe; ``windows`` alone refused, and this test fails on the code before)."""
    tree = chain / "data" / "bvp"
    before = sorted(p.relative_to(tree) for p in tree.rglob("*"))
    if how == "inside":
        out = tree / "BVP"
    else:
        out = chain / "elsewhere"
        out.symlink_to(tree / "BVP", target_is_directory=True)
    result = runner.invoke(app, _bvp_argv(chain, out)[command])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "lies inside the dataset tree" in text and "choose an output file outside it" in text, text
    assert sorted(p.relative_to(tree) for p in tree.rglob("*")) == before


def test_robustness_never_sweeps_into_the_dataset_tree(runner, chain):
    """``robustness -o`` a folder inside the MM-Fi tree its split's manifest describes: refused, and the tree left as
    it was (the sweep's windows, predictions and reports would change it). Before, the first cell's ``windows``
    refused its folder; now the sweep refuses its own before any cell, naming it."""
    tree = chain / "data" / "mmfi"
    before = sorted(p.relative_to(tree) for p in tree.rglob("*"))
    result = runner.invoke(app, ["robustness", str(chain / "pose" / "ridge.onnx"), "--split",
                                 str(chain / "mmfi-split.json"), "--score-like", str(chain / "pose" / "report.json"),
                                 "--corruptions", "noise", "--severities", "1", "-o", str(tree / "E01" / "sweep")])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "lies inside the dataset tree" in text and "choose an output folder outside it" in text, text
    assert "the sweep's windows" in text, text
    assert sorted(p.relative_to(tree) for p in tree.rglob("*")) == before


def test_nothing_is_written_at_the_top_of_an_ingest_files_corpus(runner, tmp_path):
    """An `ingest files` corpus is read whole (every file under its root is a recording or a problem), so a manifest
    or split written at its top changed it: the next ingest listed the file as a problem and every report made from
    the tree failed verify (found by an adversarial probe; the test fails on the code before)."""
    from rfbench.io.writer import synthetic_log

    tree = tmp_path / "lab"
    for k, user in enumerate(("ann", "bob")):
        (tree / user).mkdir(parents=True)
        for gesture in (1, 2):
            (tree / user / f"{user}_{gesture}.dat").write_bytes(synthetic_log(10, seed=k * 2 + gesture))
    base = ["ingest", "files", str(tree), "--template", "{user}/{user}_{gesture}.dat", "--subject", "user",
            "--label", "gesture"]
    before = sorted(p.relative_to(tree) for p in tree.rglob("*"))
    refused = runner.invoke(app, [*base, "-o", str(tree / "manifest.json")])
    assert refused.exit_code == 2 and "lies inside the dataset tree" in " ".join(refused.output.split())
    ok = runner.invoke(app, [*base, "-o", str(tmp_path / "manifest.json")])
    assert ok.exit_code == 0, ok.output
    split = runner.invoke(app, ["split", str(tmp_path / "manifest.json"), "-p", "cross-subject", "--test", "bob",
                                "-o", str(tree / "split.json")])
    assert split.exit_code == 2 and "lies inside the dataset tree" in " ".join(split.output.split()), split.output
    assert sorted(p.relative_to(tree) for p in tree.rglob("*")) == before


@pytest.mark.parametrize("where", ["manifest.json", "out/split.json"])
def test_nothing_is_written_anywhere_in_an_mmfi_tree_or_a_widar_release_folder(runner, chain, where):
    """MM-Fi's ingest lists every entry at the top of its tree (an environment folder or a problem), and so does
    Widar3.0's given a release folder (CSI/) as the tree: a manifest or split written at the top, or in a new
    folder there, was written (only the folders holding listed files were refused), and the next ingest listed it
    as a problem, so every report made from the tree failed verify (the test fails on the code before). Beside a
    Widar tree's CSI/ folder, where ingest does not look, a manifest is still written."""
    for tree, dataset in ((chain / "data" / "mmfi", "mmfi"), (chain / "data" / "widar" / "CSI", "widar")):
        before = sorted(p.relative_to(tree) for p in tree.rglob("*"))
        manifest = chain / f"{dataset}-top.json"
        assert runner.invoke(app, ["ingest", dataset, str(tree), "-o", str(manifest)]).exit_code == 0
        if where == "manifest.json":
            result = runner.invoke(app, ["ingest", dataset, str(tree), "-o", str(tree / where)])
        else:
            test = "S01" if dataset == "mmfi" else "user1"
            result = runner.invoke(app, ["split", str(manifest), "-p", "cross-subject", "--test", test, "-o",
                                         str(tree / where)])
        assert result.exit_code == 2, result.output
        assert "lies inside the dataset tree" in " ".join(result.output.split()), result.output
        assert sorted(p.relative_to(tree) for p in tree.rglob("*")) == before
    beside = runner.invoke(app, ["ingest", "widar", str(chain / "data" / "widar"), "-o",
                                 str(chain / "data" / "widar" / "manifest.json")])
    assert beside.exit_code == 0, beside.output
