"""``rfbench ingest files``: any corpus named by a template → the manifest every later stage reads.

Hand-made trees of real bfee logs (the encoder in rfbench.io.writer) cover every rule; the two real public
corpora in ../shared/conformance are ingested too when present (skipped otherwise).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.datasets import files
from rfbench.datasets.manifest import Manifest, read_manifest
from rfbench.errors import ValidationError
from rfbench.io.writer import synthetic_log
from tests.conftest import conformance_path

WIAR = "{distance}_alldata/csi_a{activity}_{sample}.dat"


def put(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def wiar_like(root: Path) -> dict[str, int]:
    """Distances 1 and 3, activities 1, 2 and 12, samples 1 and 2; every log a different length."""
    records = {}
    k = 0
    for d in (1, 3):
        for a in (1, 2, 12):
            for s in (1, 2):
                k += 1
                rel = f"{d}_alldata/csi_a{a}_{s}.dat"
                records[rel] = 3 + k
                put(root / rel, synthetic_log(3 + k, seed=k))
    put(root / "1_alldata" / "16_160_sample_A.txt", b"1 2 3\n")
    return records


def test_one_recording_per_file_with_roles_and_integer_columns(tmp_path):
    records = wiar_like(tmp_path)
    m = files.ingest(tmp_path, WIAR, roles={"label": "activity", "location": "distance"}, dataset="wiar")
    assert m.dataset == "wiar" and m.synthetic is False
    assert [r["id"] for r in m.recordings] == sorted(records)
    rec = {r["id"]: r for r in m.recordings}["3_alldata/csi_a12_2.dat"]
    assert (rec["distance"], rec["activity"], rec["sample"]) == (3, 12, 2)  # canonical decimals → integers
    assert rec["location"] == 3 and rec["label"] == "12"  # the class is text, never an index
    assert rec["frames"] == records["3_alldata/csi_a12_2.dat"] == rec["files"][0]["records"]
    f = rec["files"][0]
    assert f["path"] == "3_alldata/csi_a12_2.dat" and f["bytes"] == (tmp_path / f["path"]).stat().st_size
    assert f["sha256"] == hashlib.sha256((tmp_path / f["path"]).read_bytes()).hexdigest()
    assert m.problems == [{"path": "1_alldata/16_160_sample_A.txt",
                           "reason": f"does not match the template {WIAR!r}; left out"}]
    assert m.extra["template"] == {"text": WIAR, "fields": [{"name": "distance", "type": "int"},
                                                            {"name": "activity", "type": "int"},
                                                            {"name": "sample", "type": "int"}],
                                   "recording_by": None}
    assert m.extra["roles"] == {"label": "activity", "location": "distance"}
    assert m.extra["tree"] == {"files": 13, "matched": 12}
    # every template field is a domain column protocols can use
    table = m.table()
    assert {"distance", "activity", "sample", "location"} <= set(table.domains)
    assert table.column("distance").values == (1, 3)


def test_recordings_grouped_by_fields_with_receivers(tmp_path):
    template = "{date}/{user}-{gesture}-r{receiver}.dat"
    put(tmp_path / "20181109/user1-1-r1.dat", synthetic_log(9, seed=1))
    put(tmp_path / "20181109/user1-1-r2.dat", synthetic_log(5, seed=2))
    put(tmp_path / "20181109/user1-1-r3.dat", b"")
    put(tmp_path / "20181205_2/user1-1-r1.dat", synthetic_log(7, seed=3))
    put(tmp_path / "20181205_2/user1-1-r2.dat", synthetic_log(8, seed=4))
    m = files.ingest(tmp_path, template, recording_by=["date", "user", "gesture"],
                     roles={"subject": "user", "label": "gesture"})
    assert [r["id"] for r in m.recordings] == ["20181109/user1-1-r*.dat", "20181205_2/user1-1-r*.dat"]
    first, second = m.recordings
    # 20181205_2 is not a canonical decimal, so the whole date column is text
    assert first["date"] == "20181109" and second["date"] == "20181205_2"
    assert first["gesture"] == 1 and first["label"] == "1" and first["subject"] == "user1"
    assert "receiver" not in first  # a part field lives on the files
    assert [f["receiver"] for f in first["files"]] == [1, 2, 3]
    # r3 is empty: receivers with data are r1 (9 records) and r2 (5) → frames = min(9, 5) = 5
    assert first["receivers"] == [1, 2] and first["frames"] == 5
    assert second["receivers"] == [1, 2] and second["frames"] == 7
    reasons = {p["path"]: p["reason"] for p in m.problems}
    assert reasons["20181109/user1-1-r3.dat"] == "empty file (0 bytes); receiver 3 has no data"
    assert reasons["20181205_2/user1-1-r*.dat"] == "missing part(s) receiver=3 (found in other recordings)"
    assert m.extra["template"]["recording_by"] == ["date", "user", "gesture"]
    assert {"name": "receiver", "type": "int"} in m.extra["template"]["fields"]
    # the receiver is not a recording-level domain column; the recording fields are
    assert "receiver" not in m.domain_keys and "date" in m.domain_keys
    assert first["files"][2]["sha256"] == hashlib.sha256(b"").hexdigest()


def test_every_kind_of_problem_is_reported_and_counted(tmp_path):
    template = "{user}/{user}_{gesture}_{repetition}.dat"
    put(tmp_path / "kq/kq_1_1.dat", synthetic_log(6, seed=1))
    put(tmp_path / "kq/mj_1_2.dat", synthetic_log(6, seed=2))  # {user} twice, two texts
    put(tmp_path / "kq/kq_1_2_3.dat", synthetic_log(6, seed=3))  # two readings
    put(tmp_path / "kq/kq_2_1.dat", b"")
    put(tmp_path / "kq/kq_2_2.dat", b"\x00\x07garbage that holds no record")
    put(tmp_path / "kq/kq_3_1.dat", synthetic_log(6, seed=4)[:-5])  # last record cut short
    put(tmp_path / "kq/deeper/kq_4_1.dat", synthetic_log(6, seed=5))
    put(tmp_path / "kq/deeper/kq_4_2.dat", synthetic_log(6, seed=6))
    put(tmp_path / "notes.txt", b"x")
    put(tmp_path / ".hidden/kq_1_1.dat", b"x")
    m = files.ingest(tmp_path, template, roles={"subject": "user", "label": "gesture"})
    reasons = {p["path"]: p["reason"] for p in m.problems}
    assert reasons["kq/mj_1_2.dat"].startswith("field {user} is 'kq' in one place and 'mj' in another")
    assert reasons["kq/kq_1_2_3.dat"].startswith("ambiguous")
    assert reasons["kq/kq_2_1.dat"] == "empty file (0 bytes); the recording has no data"
    assert reasons["kq/kq_2_2.dat"] == "no valid Intel 5300 CSI record; the recording has no data"
    assert reasons["kq/kq_3_1.dat"] == "1 record(s) skipped (truncated 1); the other 5 are used"
    assert reasons["kq/deeper"] == ("folder left out (the template expects a file name here); its 2 file(s) are "
                                    "not read")
    assert reasons["notes.txt"].startswith("does not match the template")
    assert not any(".hidden" in p for p in reasons)
    assert [r["id"] for r in m.recordings] == ["kq/kq_1_1.dat", "kq/kq_2_1.dat", "kq/kq_2_2.dat", "kq/kq_3_1.dat"]
    assert [r["frames"] for r in m.recordings] == [6, 0, 0, 5]
    # 9 files: 4 read, 2 names the template cannot read, 2 in deeper/, notes.txt
    assert m.extra["tree"] == {"files": 9, "matched": 4}


def test_a_folder_that_cannot_match_its_segment_is_one_problem(tmp_path):
    put(tmp_path / "1_alldata/csi_a1_1.dat", synthetic_log(4, seed=1))
    put(tmp_path / "extras/a.dat", b"x")
    put(tmp_path / "extras/b/c.dat", b"x")
    m = files.ingest(tmp_path, WIAR)
    assert m.problems == [{"path": "extras", "reason": "folder left out (the name does not match "
                                                       "'{distance}_alldata' of the template); its 2 file(s) are "
                                                       "not read"}]


def test_identical_files_are_problems_and_can_be_dropped(tmp_path):
    same = synthetic_log(5, seed=9)
    put(tmp_path / "1_alldata/csi_a12_1.dat", same)
    put(tmp_path / "3_alldata/csi_a12_1.dat", same)
    put(tmp_path / "1_alldata/csi_a1_1.dat", synthetic_log(5, seed=1))
    put(tmp_path / "3_alldata/csi_a1_1.dat", synthetic_log(5, seed=2))
    digest = hashlib.sha256(same).hexdigest()
    m = files.ingest(tmp_path, WIAR)
    assert len(m.recordings) == 4
    assert m.problems == [{"path": "3_alldata/csi_a12_1.dat", "reason": f"identical to 1_alldata/csi_a12_1.dat (same "
                           f"sha256 {digest[:16]}…): the same recording under two names? On both sides of a split, "
                           "the test side would hold training data"}]
    d = files.ingest(tmp_path, WIAR, drop_duplicates=True)
    assert [r["id"] for r in d.recordings] == ["1_alldata/csi_a1_1.dat", "3_alldata/csi_a1_1.dat"]
    left = [p["path"] for p in d.problems if p["reason"].startswith("recording left out")]
    assert left == ["1_alldata/csi_a12_1.dat", "3_alldata/csi_a12_1.dat"]
    assert d.extra["drop_duplicates"] is True and "drop_duplicates" not in m.extra


@pytest.mark.parametrize("kw, match", [
    ({"template": "{id}_{b}.dat"}, "overwrite the recording's 'id'"),
    ({"template": "{label}_{b}.dat"}, "overwrite the recording's 'label'"),
    ({"recording_by": ["user"]}, "recording_by names field 'user'"),
    ({"roles": {"subject": "usr"}}, "the subject role names field 'usr', which the template does not have"),
    ({"roles": {"label": "b"}, "recording_by": ["a"]}, "varies within a recording"),
    ({"roles": {"colour": "a"}}, "unknown role"),
    ({"template": "{subject}_{b}.dat", "roles": {"subject": "b"}}, "would both be the recording's 'subject'"),
])
def test_spec_errors(kw, match):
    args = {"template": "{a}_{b}.dat", **kw}
    with pytest.raises(ValidationError, match=match):
        files.check_spec(args["template"], args.get("recording_by"), args.get("roles"))


def test_a_field_named_like_its_role_is_fine(tmp_path):
    put(tmp_path / "kq_1.dat", synthetic_log(3, seed=1))
    put(tmp_path / "mj_1.dat", synthetic_log(3, seed=2))
    m = files.ingest(tmp_path, "{subject}_{g}.dat", roles={"subject": "subject"})
    assert [r["subject"] for r in m.recordings] == ["kq", "mj"]


def test_ingest_is_identical_across_worker_counts(tmp_path):
    wiar_like(tmp_path / "tree")
    a = files.ingest(tmp_path / "tree", WIAR, workers=1).write(tmp_path / "a.json")
    b = files.ingest(tmp_path / "tree", WIAR, workers=2).write(tmp_path / "b.json")
    assert a.read_bytes() == b.read_bytes()


# ---------------------------------------------------------------------------------------------------------
# the command, and every protocol, the audit and the baselines on its manifest
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, match", [
    (["-t", "csi.dat"], "has no {field}"),
    (["-t", "{distance}{activity}.dat"], "adjacent"),
    (["-t", WIAR, "--subject", "user"], "the subject role names field 'user'"),
    (["-t", "{a}_alldata/x_{b}.mat"], "no file matches the template"),
    (["-t", WIAR, "--recording-by", "distance,nope"], "recording_by names field 'nope'"),
    # an empty field name was read as no --recording-by at all (one recording per file), silently
    (["-t", WIAR, "--recording-by", ""], "names an empty field"),
    (["-t", WIAR, "--recording-by", "distance,,activity"], "names an empty field"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(runner, tmp_path, args, match):
    wiar_like(tmp_path / "tree")
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", "files", str(tmp_path / "tree"), "-o", str(out)] + args)
    assert r.exit_code == 2, r.output
    assert match in r.stderr and r.stderr.count("\n") == 1 and r.stderr.startswith("error:")
    assert not out.exists()


def test_cli_protocols_audit_and_baseline(runner, tmp_path):
    wiar_like(tmp_path / "tree")
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", "files", str(tmp_path / "tree"), "-t", WIAR, "--label", "activity",
                            "--location", "distance", "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)
    assert summary["recordings"] == 12 and summary["files_looked_at"] == 13 and summary["files_matched"] == 12
    assert summary["root"] == "tree"  # relative to the manifest's folder
    doc = json.loads(out.read_text())
    assert doc["root"] == "tree" and doc["roles"] == {"label": "activity", "location": "distance"}
    assert read_manifest(out).root_dir(out) == tmp_path / "tree"

    def split(*args):
        return runner.invoke(app, ["split", str(out), *args])

    r = split("-p", "cross-location", "--test", "3", "-o", str(tmp_path / "cl.json"))
    assert r.exit_code == 0, r.output
    cl = json.loads((tmp_path / "cl.json").read_text())
    assert all(i.startswith("3_alldata") for i in cl["test"]) and cl["audit"]["passed"]
    r = split("-p", "leave-one-domain-out", "--domain", "distance", "-o", str(tmp_path / "lodo"))
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "lodo").iterdir()) == ["split-distance-1.json", "split-distance-3.json"]
    r = split("-p", "random", "-o", str(tmp_path / "r.json"))
    assert r.exit_code == 2 and "--allow-leaky" in r.stderr
    r = split("-p", "random", "--allow-leaky", "-o", str(tmp_path / "r.json"))
    assert r.exit_code == 0 and json.loads((tmp_path / "r.json").read_text())["leakage_prone"] is True
    r = runner.invoke(app, ["audit", str(tmp_path / "lodo" / "split-distance-1.json")])
    assert r.exit_code == 0, r.output

    # a baseline from the train side: labels are the manifest's text labels ("1", "2", "12")
    recs = {x["id"]: x for x in doc["recordings"]}
    train, test = cl["train"], cl["test"]
    g = tmp_path / "g"
    g.mkdir()
    np.save(g / "gt.npy", np.array([recs[i]["label"] for i in test]))
    np.save(g / "pred.npy", np.array(["1"] * len(test)))
    np.save(g / "groups.npy", np.array(test))
    np.save(g / "train_gt.npy", np.array([recs[i]["label"] for i in train]))
    np.save(g / "train_groups.npy", np.array(train))
    (g / "names.txt").write_text("1\n2\n12\n")
    r = runner.invoke(app, ["score", "--task", "gesture", "--pred", str(g / "pred.npy"), "--gt", str(g / "gt.npy"),
                            "--label-set", str(g / "names.txt"), "--split", str(tmp_path / "cl.json"),
                            "--groups", str(g / "groups.npy"), "--train-gt", str(g / "train_gt.npy"),
                            "--train-groups", str(g / "train_groups.npy"), "-o", str(g / "report.json"),
                            "--bootstrap", "50"])
    assert r.exit_code == 0, r.output
    report = json.loads((g / "report.json").read_text())
    acc = next(x for x in report["results"] if x["metric"] == "accuracy")
    # test side: activities 1, 2, 12 twice each; predicting "1" everywhere is right on 2 of 6
    assert acc["model"]["value"] == pytest.approx(2 / 6) and acc["baseline"] is not None


def test_cli_table_output(runner, tmp_path):
    wiar_like(tmp_path / "tree")
    r = runner.invoke(app, ["ingest", "files", str(tmp_path / "tree"), "-t", WIAR, "--label", "activity",
                            "-o", str(tmp_path / "m.json")])
    assert r.exit_code == 0, r.output
    assert "12 of 13 file(s) match the template" in r.stdout and "the other 1 are problems" in r.stdout
    assert "1_alldata/16_160_sample_A.txt: does not match the template" in r.stdout


# ---------------------------------------------------------------------------------------------------------
# the two real public corpora (skipped without ../shared)
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.long
def test_gesture5x6_corpus():
    root = conformance_path("gesture5x6")
    m = files.ingest(root, "{user}_{gesture}_{repetition}.dat", roles={"subject": "user", "label": "gesture"})
    # README: 5 users × 6 gestures × repetitions 1–6 = 180 logs; README.md itself does not match
    assert len(m.recordings) == 180
    assert {r["subject"] for r in m.recordings} == {"kq", "mj", "zh", "zj", "zz"}
    assert {r["label"] for r in m.recordings} == {"1", "2", "3", "4", "5", "6"}
    assert m.problems == [{"path": "README.md",
                           "reason": "does not match the template '{user}_{gesture}_{repetition}.dat'; left out"}]
    assert all(r["frames"] > 0 for r in m.recordings)


@pytest.mark.long
def test_wiar_corpus_holds_identical_logs_at_both_distances():
    root = conformance_path("wiar", "distance_factor_activity_data")
    m = files.ingest(root, WIAR, roles={"label": "activity", "location": "distance"})
    assert len(m.recordings) == 320  # 2 distances × 16 activities × 10 samples
    same = sorted(p["path"] for p in m.problems if p["reason"].startswith("identical to"))
    # every sample of activity 12 (walk) at 3 m is byte for byte the one at 1 m
    assert same == sorted(f"3_alldata/csi_a12_{s}.dat" for s in range(1, 11))
    # README: csi_a12_4.dat ends in 2 stray bytes (a truncated tail), and so do others
    reasons = {p["path"]: p["reason"] for p in m.problems}
    assert reasons["1_alldata/csi_a12_4.dat"].startswith("1 record(s) skipped (truncated 1)")
    d = files.ingest(root, WIAR, roles={"label": "activity", "location": "distance"}, drop_duplicates=True)
    assert len(d.recordings) == 300 and not any(r["activity"] == 12 for r in d.recordings)


def test_cross_subject_on_a_files_manifest(runner, tmp_path):
    for k, user in enumerate(("kq", "mj", "zh")):
        for g in (1, 2):
            put(tmp_path / "tree" / f"{user}_{g}_1.dat", synthetic_log(3 + k + g, seed=10 * k + g))
    out = tmp_path / "m.json"
    r = runner.invoke(app, ["ingest", "files", str(tmp_path / "tree"), "-t", "{user}_{gesture}_{repetition}.dat",
                            "--subject", "user", "--label", "gesture", "-o", str(out)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["split", str(out), "-p", "cross-subject", "--test", "mj", "-o", str(tmp_path / "s.json")])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["test"] == ["mj_1_1.dat", "mj_2_1.dat"] and doc["audit"]["passed"]


def test_problems_are_counted_by_kind_on_the_console_and_in_json(tmp_path):
    from typer.testing import CliRunner

    wiar_like(tmp_path / "t")
    root = tmp_path / "t"
    (root / "3_alldata" / "csi_a1_1.dat").write_bytes((root / "1_alldata" / "csi_a1_1.dat").read_bytes())
    p = root / "1_alldata" / "csi_a2_1.dat"
    p.write_bytes(p.read_bytes() + b"\x00\x09")  # a truncated tail: one record skipped
    args = ["ingest", "files", str(root), "--template", WIAR, "--label", "activity", "-o", str(tmp_path / "m.json")]
    result = CliRunner().invoke(app, args + ["--json"])
    assert result.exit_code == 0, result.output
    counts = {c["kind"]: c["count"] for c in json.loads(result.output)["problem_counts"]}
    assert counts == {"identical": 1, "truncated": 1, "name": 1}
    result = CliRunner().invoke(app, args + ["--force"])
    assert "3 problem(s) (listed in the manifest too): 1 byte-identical files, 1 logs with skipped records" in \
        result.output
    assert "--drop-duplicates leaves every copy out" in result.output
    lines = result.output.splitlines()
    at = lines.index("byte-identical files (1):")
    assert lines[at + 1].startswith("  3_alldata/csi_a1_1.dat: identical to 1_alldata/csi_a1_1.dat")


@pytest.mark.parametrize("name", ["widar3", "widar3-bvp", "mmfi"])
def test_a_template_corpus_may_not_take_a_built_in_dataset_name(runner, tmp_path, name):
    """A report naming widar3 or mmfi rests on those releases' own naming rules; a template (any field as the
    label) must not borrow the name, given or taken from its folder's."""
    wiar_like(tmp_path / name)
    result = runner.invoke(app, ["ingest", "files", str(tmp_path / name), "--template", WIAR, "--label", "activity",
                                 "-o", str(tmp_path / "m.json")])
    assert result.exit_code == 2, result.output
    assert f"dataset name {name!r} is that of rfbench's own ingest" in result.output
    assert not (tmp_path / "m.json").exists()
    result = runner.invoke(app, ["ingest", "files", str(tmp_path / name), "--template", WIAR, "--dataset",
                                 "wiar", "-o", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    # a name that reads as the built-in one is the built-in one: capitals, a space, a Cyrillic i
    for alike in (name.upper(), name + " ", name.replace("i", "\u0456"), name.replace("i", "\u0269")):
        result = runner.invoke(app, ["ingest", "files", str(tmp_path / name), "--template", WIAR, "--dataset",
                                     alike, "-o", str(tmp_path / "a.json")])
        assert result.exit_code == 2 and f"(it reads as {name!r})" in result.output, (alike, result.output)


def test_a_template_that_picks_a_subset_of_the_tree_is_named_in_the_provenance(runner, tmp_path):
    """A template fixing one repetition takes 1 file of each 2 (the rest left out as problems): the report said
    nothing of it (Coverage: 3 of 3), only the manifest did. The provenance a report carries now names the
    template, how many of the tree's files it matched and the tree's folder (a subfolder of a corpus, each of
    whose files matched, must not read as the corpus)."""
    from rfbench.datasets.manifest import read_manifest
    from rfbench.protocols.splitfile import data_provenance

    root = tmp_path / "corpus"
    root.mkdir()
    for k, user in enumerate(("ann", "bob")):
        for rep in (1, 2):
            (root / f"{user}_push_{rep}.dat").write_bytes(synthetic_log(3, seed=10 * k + rep))
    result = runner.invoke(app, ["ingest", "files", str(root), "-t", "{user}_{gesture}_1.dat", "--label",
                                 "gesture", "--subject", "user", "-o", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    manifest = read_manifest(tmp_path / "m.json")
    data = data_provenance(manifest, tmp_path / "m.json")["data"]
    assert "recordings named by the template '{user}_{gesture}_1.dat' (label from its field 'gesture', subject " \
           "from its field 'user')" in data, data
    assert "2 of the 4 files of the tree 'corpus' matched" in data and "2 problem(s) recorded by ingest" in data, data
    whole = runner.invoke(app, ["ingest", "files", str(root), "-t", "{user}_{gesture}_{rep}.dat", "--label",
                                "gesture", "--subject", "user", "-o", str(tmp_path / "all.json")])
    assert whole.exit_code == 0, whole.output
    data = data_provenance(read_manifest(tmp_path / "all.json"), tmp_path / "all.json")["data"]
    assert "4 of the 4 files of the tree 'corpus' matched" in data and "problem" not in data, data
    # the subject taken from the repetition number (every person on both sides of a cross-subject split) is shown
    swapped = runner.invoke(app, ["ingest", "files", str(root), "-t", "{user}_{gesture}_{rep}.dat", "--label",
                                  "gesture", "--subject", "rep", "-o", str(tmp_path / "swapped.json")])
    assert swapped.exit_code == 0, swapped.output
    data = data_provenance(read_manifest(tmp_path / "swapped.json"), tmp_path / "swapped.json")["data"]
    assert "subject from its field 'rep'" in data, data


def test_a_generated_tree_ingested_from_a_folder_inside_it_is_synthetic(runner, tmp_path):
    """The generators' marker sits at the tree's top: a template ingest of one date folder two levels below it
    (whose own walk never meets the marker) still gives a SYNTHETIC split."""
    from rfbench.datasets.manifest import read_manifest
    from rfbench.protocols.splitfile import data_provenance

    assert runner.invoke(app, ["generate", "widar", str(tmp_path / "t"), "--repetitions", "1"]).exit_code == 0
    date = tmp_path / "t" / "CSI" / "20181109"
    result = runner.invoke(app, ["ingest", "files", str(date), "--template",
                                 "{user}/{u2}-{gesture}-{location}-{orientation}-{rep}-r{rx}.dat", "--recording-by",
                                 "user,u2,gesture,location,orientation,rep", "--label", "gesture", "--dataset",
                                 "dates", "-o", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    manifest = read_manifest(tmp_path / "m.json")
    assert manifest.synthetic is True  # the marker two folders above the date folder, found by ingest
    assert manifest.extra["synthetic_marker"]["path"] == "../../RFBENCH_SYNTHETIC.json"
    edited = {**manifest.to_dict(), "synthetic": False}  # a manifest edited to drop it still loses to the tree
    edited.pop("synthetic_marker", None)
    provenance = data_provenance(Manifest.from_dict(edited), tmp_path / "m.json")
    assert provenance["synthetic"] is True, provenance


@pytest.mark.parametrize("command", ["widar", "files"])
def test_a_link_to_a_folder_inside_a_generated_tree_is_synthetic(runner, tmp_path, command):
    """A link to a generated tree's CSI folder (the marker one folder above the folder the link names): ingest
    looked in the link's own folders, the split walked up the link's path, never the tree's, so the manifest
    said synthetic: false, the report MEASURED and verify MATCH, naming the generated folder itself."""
    from rfbench.datasets.manifest import read_manifest
    from rfbench.protocols.splitfile import data_provenance

    assert runner.invoke(app, ["generate", "widar", str(tmp_path / "t"), "--repetitions", "1"]).exit_code == 0
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "tree").symlink_to(tmp_path / "t" / "CSI")
    args = ["ingest", "widar", "f/tree"] if command == "widar" else \
        ["ingest", "files", "f/tree", "--template", "{date}/{user}/{u2}-{gesture}-{location}-{orientation}-{rep}-r{rx}"
         ".dat", "--recording-by", "date,user,u2,gesture,location,orientation,rep", "--label", "gesture"]
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        result = runner.invoke(app, [*args, "-o", "f/m.json"])
    assert result.exit_code == 0, result.output
    manifest = read_manifest(tmp_path / "f" / "m.json")
    assert manifest.synthetic is True
    assert manifest.extra["synthetic_marker"]["path"] == "../RFBENCH_SYNTHETIC.json"
    edited = {**manifest.to_dict(), "synthetic": False}
    edited.pop("synthetic_marker", None)
    provenance = data_provenance(Manifest.from_dict(edited), tmp_path / "f" / "m.json")
    assert provenance["synthetic"] is True, provenance


@pytest.mark.parametrize("name, builtin", [("Widar3.0", "widar3"), ("Widar3.0 BVP", "widar3-bvp"), ("MM-Fi", "mmfi"),
                                           ("mm_fi", "mmfi"), ("widar_3", "widar3")])
def test_a_template_corpus_may_not_take_a_releases_display_name(runner, tmp_path, name, builtin):
    """The names compare and papers call the releases by: a gesture5x6 report ingested as 'Widar3.0' was
    COMPARABLE with Widar3.0's published in-domain figure, its dataset 'same'."""
    from rfbench.report.compare import _OWN_CORPUS, _same_dataset

    wiar_like(tmp_path / "c")
    result = runner.invoke(app, ["ingest", "files", str(tmp_path / "c"), "--template", WIAR, "--dataset", name,
                                 "-o", str(tmp_path / "m.json")])
    assert result.exit_code == 2 and f"(it reads as {builtin!r})" in result.output, result.output
    assert not _same_dataset(name + _OWN_CORPUS, name)  # a manifest written before the refusal
    assert _same_dataset("wiar" + _OWN_CORPUS, "WiAR")
