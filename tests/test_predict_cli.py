"""``rfbench predict``: predictions and record written atomically, one-line errors with exit 2 and nothing
written, --json, --force, the recorded argv re-running the same prediction, and the install hint."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

import predict_models as pm
from rfbench.cli import app
from rfbench.nn import predict as P


def run(runner, args, cwd=None):
    old = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        return runner.invoke(app, ["predict", *map(str, args)])
    finally:
        os.chdir(old)


def one_error_line(result) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


@pytest.fixture
def setup(tmp_path):
    folder, x = pm.pose_windows(tmp_path / "win", n=10)
    w, b = pm.linear_weights()
    model = pm.save(tmp_path / "lin.onnx", pm.linear(w, b))
    return tmp_path, folder, model, x, w, b


def test_predict_writes_predictions_and_record(runner, setup):
    tmp, folder, model, x, w, b = setup
    result = run(runner, [model, "--windows", folder, "-o", tmp / "out" / "pred.npy", "--batch-size", "4"])
    assert result.exit_code == 0, result.output
    assert "out/pred.npy: float32 (10, 17, 3) (flattened)" in result.output
    assert "10 windows in 3 batch(es) of 4, 0 copied; onnxruntime" in result.output
    pred = np.load(tmp / "out" / "pred.npy")
    np.testing.assert_allclose(pred, (x.reshape(10, -1).astype(np.float64) @ w + b).reshape(10, 17, 3),
                               rtol=1e-5, atol=1e-5)
    record = P.load_prediction_record(tmp / "out" / "pred.json")
    assert record.settings == P.PredictSettings(batch_size=4)
    assert sorted(p.name for p in (tmp / "out").iterdir()) == ["pred.json", "pred.npy"]  # no temporary left


def test_json_output(runner, setup):
    tmp, folder, model, *_ = setup
    result = run(runner, [model, "--windows", folder, "-o", tmp / "pred.npy", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["rows"] == 10 and doc["pred_file"].endswith("pred.npy") and doc["windows_per_second"] > 0
    assert doc["record"] == json.loads((tmp / "pred.json").read_text())


def test_existing_output_needs_force(runner, setup):
    tmp, folder, model, *_ = setup
    args = [model, "--windows", folder, "-o", tmp / "pred.npy"]
    assert run(runner, args).exit_code == 0
    before = (tmp / "pred.npy").read_bytes(), (tmp / "pred.json").read_bytes()
    result = run(runner, args)
    assert result.exit_code == 2 and "already exists; pass --force" in one_error_line(result)
    assert ((tmp / "pred.npy").read_bytes(), (tmp / "pred.json").read_bytes()) == before
    (tmp / "pred.npy").unlink()  # only the record is left: still refused, before any work
    result = run(runner, args)
    assert result.exit_code == 2 and "pred.json already exists" in one_error_line(result)
    assert run(runner, args + ["--force"]).exit_code == 0


def test_recorded_argv_re_runs_the_same_prediction(runner, setup):
    tmp, folder, model, *_ = setup
    out = tmp / "a" / "pred.npy"
    assert run(runner, [model, "--windows", folder, "-o", out, "--batch-size", "3", "--threads", "2",
                        "--tolerance", "0.001"]).exit_code == 0
    first = P.load_prediction_record(out)
    argv = first.doc["argv"]
    assert argv[:2] == ["rfbench", "predict"]
    # replay in a copy of the record's folder: the recorded paths are relative to it
    replay = tmp / "a" / "replay"
    replay.mkdir()
    argv = [a if a != "pred.npy" else "replay/pred.npy" for a in argv[2:]]
    result = run(runner, argv, cwd=tmp / "a")
    assert result.exit_code == 0, result.output
    second = P.load_prediction_record(replay / "pred.npy")
    assert second.settings == first.settings == P.PredictSettings(batch_size=3, intra_op_threads=2,
                                                                  tolerance=0.001)
    assert second.doc["pred"]["sha256"] == first.doc["pred"]["sha256"]
    cmp = P.compare_predictions(first, first.load_pred(), second, second.load_pred())
    assert cmp.equal and cmp.rule == "identical bits"


@pytest.mark.parametrize("args,needle", [
    (["--batch-size", "0"], "--batch-size"),
    (["--threads", "65"], "--threads"),
    (["--sessions", "0"], "--sessions"),
    (["--tolerance", "2"], "--tolerance"),
])
def test_settings_out_of_bounds(runner, setup, args, needle):
    tmp, folder, model, *_ = setup
    result = run(runner, [model, "--windows", folder, "-o", tmp / "pred.npy", *args])
    assert result.exit_code == 2 and needle in result.output
    assert not (tmp / "pred.npy").exists()


def _bad_models(tmp):
    w, b = pm.linear_weights()
    w5, b5 = pm.linear_weights(outputs=5)
    from predict_models import TensorProto, helper

    two_inputs = pm.model_bytes([helper.make_node("Add", ["x", "z"], ["y"])],
                                [pm.tensor("x", ["N", *pm.ROW]), pm.tensor("z", ["N", *pm.ROW])],
                                [pm.tensor("y", ["N", *pm.ROW])])
    custom = pm.model_bytes([helper.make_node("Magic", ["x"], ["y"], domain="org.custom")],
                            [pm.tensor("x", ["N", *pm.ROW])], [pm.tensor("y", ["N", 51])],
                            opsets=[helper.make_opsetid("", 17), helper.make_opsetid("org.custom", 1)])
    m = pm.onnx.load_from_string(pm.linear(w, b))
    t = m.graph.initializer[0]
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "w.bin"
    return {
        "rank": (pm.linear(w, b, input_dims=["N", 2, 3, 8, 5]), "has rank 5"),
        "negative-dim": (pm.linear(w, b, input_dims=["N", 1, 2, -1, 8, 5]), "declares dimension -1"),
        "zero-dim": (pm.linear(w, b, input_dims=["N", 1, 0, 3, 8, 5]), "declares dimension 0"),
        "mismatched-dim": (pm.linear(w, b, input_dims=["N", 1, 2, 3, 8, 6]), "expects 6 on axis 5 (packet)"),
        "dtype": (pm.linear(w, b, elem=TensorProto.DOUBLE), "tensor(double) but X is float32"),
        "two-inputs": (two_inputs, "has 2 inputs"),
        "output-rows": (pm.linear(w5, b5), "rows of shape (5,)"),
        "external-data": (m.SerializeToString(), "keeps its data in an external file"),
        "custom-domain": (custom, "from domain 'org.custom'"),
        "not-onnx": (b"hello", "not an ONNX model"),
    }


@pytest.mark.parametrize("case", ["rank", "negative-dim", "zero-dim", "mismatched-dim", "dtype", "two-inputs",
                                  "output-rows", "external-data", "custom-domain", "not-onnx"])
def test_bad_models_exit_2_with_one_line_and_write_nothing(runner, setup, case):
    tmp, folder, *_ = setup
    data, needle = _bad_models(tmp)[case]
    model = pm.save(tmp / f"{case}.onnx", data)
    out = tmp / "out" / "pred.npy"
    result = run(runner, [model, "--windows", folder, "-o", out])
    assert result.exit_code == 2, result.output
    assert needle in one_error_line(result)
    assert not (tmp / "out").exists()


def test_bad_windows_folder_and_paths(runner, setup):
    tmp, folder, model, *_ = setup
    result = run(runner, [model, "--windows", tmp / "nowhere", "-o", tmp / "pred.npy"])
    assert result.exit_code == 2 and "no such folder" in one_error_line(result)
    result = run(runner, [tmp / "missing.onnx", "--windows", folder, "-o", tmp / "pred.npy"])
    assert result.exit_code == 2 and "missing.onnx: no such file" in one_error_line(result)
    result = run(runner, [model, "--windows", folder, "-o", tmp / "pred.txt"])
    assert result.exit_code == 2 and ".npy file" in one_error_line(result)
    np.save(folder / "X.npy", np.zeros((10, *pm.ROW), np.float32))
    result = run(runner, [model, "--windows", folder, "-o", tmp / "pred.npy"])
    assert result.exit_code == 2 and "changed since `rfbench windows` wrote it" in one_error_line(result)
    assert not (tmp / "pred.npy").exists() and not (tmp / "pred.json").exists()


def test_without_onnxruntime_it_says_how_to_install_it(runner, setup, monkeypatch):
    tmp, folder, model, *_ = setup
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # `import onnxruntime` now raises ImportError
    result = run(runner, [model, "--windows", folder, "-o", tmp / "pred.npy"])
    assert result.exit_code == 2, result.output
    line = one_error_line(result)
    assert "needs onnxruntime" in line and "pip install 'rfbench[onnx]'" in line
    assert not (tmp / "pred.npy").exists()


def test_onnxruntime_failures_are_one_line_even_at_the_file_descriptor(setup):
    # onnxruntime logs from C++ straight to fd 2; a real process shows whether anything besides our line got out
    import subprocess

    from predict_models import helper, numpy_helper

    tmp, folder, *_ = setup
    # a standard operator given an input too many: onnxruntime refuses the graph (an unknown operator is refused
    # by rfbench's own walk before onnxruntime sees it)
    unknown_op = pm.model_bytes([helper.make_node("Relu", ["x", "x"], ["y"])], [pm.tensor("x", ["N", *pm.ROW])],
                                [pm.tensor("y", ["N", 51])])
    bad_reshape = pm.model_bytes([helper.make_node("Reshape", ["x", "s"], ["y"])], [pm.tensor("x", ["N", *pm.ROW])],
                                 [pm.tensor("y", ["N", 51])], [numpy_helper.from_array(np.array([-1, 7], np.int64),
                                                                                       "s")])
    for name, data, needle in (("unknown.onnx", unknown_op, "onnxruntime cannot load it"),
                               ("reshape.onnx", bad_reshape, "onnxruntime failed on rows 0-9")):
        model = pm.save(tmp / name, data)
        proc = subprocess.run([sys.executable, "-m", "rfbench", "predict", str(model), "--windows", str(folder),
                               "-o", str(tmp / "out" / "pred.npy")], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], proc.stderr
        assert proc.stdout == "" and not (tmp / "out").exists()
