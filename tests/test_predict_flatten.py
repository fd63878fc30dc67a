"""Models of flat feature vectors (``--flatten``) and error messages that name the flag and the fix."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import tests.predict_models as pm
from rfbench.cli import app
from rfbench.errors import ValidationError
from rfbench.nn import predict as P

pytest.importorskip("onnxruntime")
F = int(np.prod(pm.ROW))


@pytest.fixture()
def pose(tmp_path):
    return pm.pose_windows(tmp_path / "w")


def _flat_model(tmp_path, **kw):
    w, b = pm.linear_weights()
    return pm.save(tmp_path / "flat.onnx", pm.linear(w, b, input_dims=["N", F], **kw)), w, b


def test_flatten_feeds_each_row_as_one_vector_and_is_recorded(tmp_path, pose):
    folder, x = pose
    model, w, b = _flat_model(tmp_path)
    with pytest.raises(ValidationError, match=rf"has rank 2 \[N, {F}\] but X has rank 6 .*flattened to {F} values: "
                                              r"pass `flatten`"):
        P.predict(model, folder)
    out = P.predict(model, folder, P.PredictSettings(flatten=True))
    np.testing.assert_allclose(out.pred.reshape(10, -1), x.reshape(10, -1).astype(np.float64) @ w + b, rtol=1e-5,
                               atol=1e-5)
    assert out.copied_batches == 0 and out.x["shape"] == [10, *pm.ROW]  # X as it is on disk, fed as views
    r = CliRunner().invoke(app, ["predict", str(model), "--windows", str(folder), "-o", str(tmp_path / "p.npy"),
                                 "--flatten"])
    assert r.exit_code == 0, r.output
    record = json.loads((tmp_path / "p.json").read_text())
    assert record["settings"]["flatten"] is True and "--flatten" in record["argv"]
    assert P.load_prediction_record(tmp_path / "p.json").settings.flatten is True
    # a record from before the setting existed reads as flatten off
    from rfbench.nn.predict_settings import settings_from_dict

    old = {k: v for k, v in record["settings"].items() if k != "flatten"}
    assert settings_from_dict(old).flatten is False


def test_errors_name_the_flag_and_the_fix(tmp_path, pose):
    folder, _ = pose
    runner = CliRunner()

    def run(model, *extra):
        r = runner.invoke(app, ["predict", str(model), "--windows", str(folder), "-o", str(tmp_path / "o.npy"),
                                *extra])
        assert r.exit_code == 2, r.output
        return r.stderr.strip()

    flat, _, _ = _flat_model(tmp_path)
    assert run(flat).endswith(f"flattened to {F} values: pass --flatten")
    fixed = pm.save(tmp_path / "fixed.onnx", pm.linear(*pm.linear_weights(), input_dims=[4, *pm.ROW]))
    assert "run it with --batch-size 4, or export it with a dynamic batch axis" in run(fixed)
    # two outputs: name one with --output
    w, b = pm.linear_weights()
    two = pm.onnx.load_from_string(pm.linear(w, b))
    two.graph.node.append(pm.helper.make_node("Identity", ["y"], ["y2"]))
    two.graph.output.append(pm.tensor("y2", ["N", 51]))
    path = pm.save(tmp_path / "two.onnx", two.SerializeToString())
    assert "has 2 outputs ('y', 'y2'); name the one to write as predictions with --output NAME" in run(path)


def test_the_summary_says_score_columns_are_the_index_label_order(tmp_path):
    folder, _ = pm.gesture_windows(tmp_path / "g", classes=4)
    w, b = pm.linear_weights(outputs=4)
    model = pm.save(tmp_path / "scores.onnx", pm.linear(w, b))
    r = CliRunner().invoke(app, ["predict", str(model), "--windows", str(folder), "-o", str(tmp_path / "s.npy")])
    assert r.exit_code == 0, r.output
    assert ("score columns are the index's classes in its label order: 0 gesture-0, 1 gesture-1, 2 gesture-2, "
            "3 gesture-3") in r.output
    assert "label order" in CliRunner().invoke(app, ["predict", "--help"]).output
