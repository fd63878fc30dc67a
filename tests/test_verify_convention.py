"""A template corpus's convention (what each part of a file name means) is the scored party's word unless the
verifier pins it: ``verify --template`` (with the roles, ``--recording-by``, ``--drop-duplicates``).

The same files ingested as ``{gesture}_{user}_{rep}`` where they are ``{user}_{gesture}_{rep}`` make a chain that
agrees with itself at every link: the second ingest over the verifier's own copy (``--dataset``) gives the
same manifest, so verify said MATCH on a "cross-subject" gesture accuracy that measured telling people apart.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from rfbench.cli import app
from rfbench.errors import ValidationError
from rfbench.report.verify import Convention

HONEST = ["-t", "{user}_{gesture}_{rep}.csv", "--label", "gesture", "--subject", "user"]
#: the first two parts' names swapped: 'gesture' is the person, 'user' the gesture
SWAPPED = ["-t", "{gesture}_{user}_{rep}.csv", "--label", "gesture", "--subject", "user"]


def _corpus(root):
    from rfbench.io.writer import make_hardware_log
    from rfbench.io.writer_settings import HardwareLogSettings

    seed = 0
    for user in ("ann", "bob", "cy"):
        for gesture in ("push", "wave"):
            for rep in (1, 2):
                seed += 1
                make_hardware_log(root / f"{user}_{gesture}_{rep}.csv",
                                  HardwareLogSettings(format="esp32", seed=seed, records=40))


def test_the_convention_given_is_the_one_a_manifest_records(tmp_path, runner):
    _corpus(tmp_path / "corpus")
    result = runner.invoke(app, ["ingest", "files", str(tmp_path / "corpus"), *HONEST, "--recording-by",
                                 "user,gesture,rep", "-o", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "m.json").read_text())
    given = Convention.given("{user}_{gesture}_{rep}.csv", ["user", "gesture", "rep"],
                             {"label": "gesture", "subject": "user", "room": None})
    assert Convention.of_manifest(doc) == given
    assert given.record() == {"template": "{user}_{gesture}_{rep}.csv", "roles": {"label": "gesture",
                                                                                   "subject": "user"},
                              "recording_by": ["user", "gesture", "rep"], "drop_duplicates": False}
    assert Convention.of_manifest(doc) != Convention.given("{gesture}_{user}_{rep}.csv", ["user", "gesture", "rep"],
                                                           {"label": "gesture", "subject": "user"})
    assert Convention.of_manifest({"dataset": "widar3", "recordings": []}) is None


def test_a_convention_ingest_would_refuse_is_refused():
    with pytest.raises(ValidationError, match="the subject role names field 'person'"):
        Convention.given("{user}_{gesture}.csv", None, {"subject": "person"})


def test_a_role_without_a_template_is_one_line(runner, tmp_path):
    result = runner.invoke(app, ["verify", str(tmp_path / "report.json"), "--label", "gesture"])
    assert result.exit_code == 2
    assert "--label is part of a template corpus's convention: give it with --template" in result.output


@pytest.mark.long
def test_verify_holds_a_template_chain_to_the_verifiers_convention(runner, tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from rfbench.io.files import write_bytes
    from rfbench.nn.onnx_export import FeatureMap, fit_nearest_centroid, nearest_centroid_model

    monkeypatch.chdir(tmp_path)
    _corpus(tmp_path / "corpus")

    def run(args, code=0):
        result = runner.invoke(app, [str(a) for a in args])
        assert result.exit_code == code, result.output
        return " ".join(result.output.split())

    def chain(name, convention, test):
        d = tmp_path / name
        d.mkdir()
        run(["ingest", "files", "corpus", *convention, "-o", d / "m.json"])
        run(["split", d / "m.json", "-p", "cross-subject", "--test", test, "-o", d / "split.json"])
        for side in ("train", "test"):
            run(["windows", d / "split.json", "--side", side, "-o", d / side, "--length", 32, "--antennas", "1x1",
                 "--subcarriers", 56])
        x, y = np.load(d / "train" / "X.npy"), np.load(d / "train" / "y.npy")
        features = FeatureMap(row_shape=x.shape[1:], take={1: 0}, mean_axes=(0,))
        classes = len(json.loads((d / "train" / "index.json").read_text())["labels"]["names"])
        write_bytes(d / "model.onnx", nearest_centroid_model(fit_nearest_centroid(features.apply(x), y, classes),
                                                             features))
        run(["predict", d / "model.onnx", "--windows", d / "test", "-o", d / "scores.npy"])
        run(["score", "--task", "gesture", "--pred", d / "scores.npy", "--rows", d / "test" / "index.json", "--split",
             d / "split.json", "-o", d / "report.json"])
        return d / "report.json"

    honest = chain("honest", HONEST, "cy")
    swapped = chain("swapped", SWAPPED, "wave")  # 'cross-subject' holding out a gesture, classes the people
    mine = ["--root", tmp_path, "--dataset", "corpus"]
    pinned = [*mine, "--template", "{user}_{gesture}_{rep}.csv", "--label", "gesture", "--subject", "user"]

    # the attack: the verifier's own copy pinned, the scored party's convention swapped (MATCH before)
    out = run(["verify", swapped, *mine], code=1)
    assert "reads its labels and domains from file names by the scored party's convention (template " \
           "'{gesture}_{user}_{rep}.csv'; label: gesture, subject: user), which --dataset does not pin" in out
    out = run(["verify", swapped, *pinned], code=1)
    assert "reads its names by another convention than the one given (template: '{gesture}_{user}_{rep}.csv' " \
           "in the manifest, '{user}_{gesture}_{rep}.csv' given)" in out
    assert "chain.ingest.template" in out
    # a role given otherwise is another convention too
    out = run(["verify", honest, *mine, "--template", "{user}_{gesture}_{rep}.csv", "--label", "gesture"], code=1)
    assert "roles: {'label': 'gesture', 'subject': 'user'} in the manifest, {'label': 'gesture'} given" in out

    # unpinned, a MATCH says whose convention it rests on
    doc = json.loads(run(["verify", swapped, "--root", tmp_path, "--json"]))
    assert doc["status"] == "match"
    (tree,) = doc["datasets"]
    assert tree["convention"]["template"] == "{gesture}_{user}_{rep}.csv" and tree["convention_pinned"] is False
    assert any("read from file names by the scored party's convention" in n for n in doc["notes"])

    # the honest chain, held to the verifier's own copy and convention
    out = run(["verify", honest, *pinned])
    assert out.startswith("MATCH") and "(yours (--template))" in out
    assert "scored party's convention" not in out
