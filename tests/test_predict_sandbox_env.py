"""rfbench.nn.sandbox: what the model's child process takes from its surroundings, and what the parent reads back.

A model never sets its own onnxruntime session options (its ``ort_config`` metadata is not read, whatever the
environment says), and an output of a refused shape is refused from its header, before its bytes are read."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import predict_models as pm
from predict_models import TensorProto, helper, numpy_helper
from rfbench.errors import ValidationError
from rfbench.nn import predict as P
from rfbench.nn import sandbox as S


def _with_ort_config(data: bytes, session_options: dict) -> bytes:
    """The model with an ``ort_config`` metadata entry, which onnxruntime applies when asked to read the
    configuration from the model (``ORT_LOAD_CONFIG_FROM_MODEL=1``)."""
    m = pm.onnx.load_from_string(data)
    entry = m.metadata_props.add()
    entry.key, entry.value = "ort_config", json.dumps({"session_options": session_options})
    return m.SerializeToString()


def test_a_model_s_ort_config_is_never_read(tmp_path, monkeypatch):
    """With ORT_LOAD_CONFIG_FROM_MODEL=1 in rfbench's environment, onnxruntime set a model's own session options
    (threads, execution mode, optimisation, profiling) from its metadata while the record named rfbench's; an
    invalid one (-5 intra-op threads) made the load fail. The child ignores the metadata: the model runs as any."""
    folder, x = pm.pose_windows(tmp_path / "win", n=6)
    w, b = pm.linear_weights()
    model = pm.save(tmp_path / "cfg.onnx", _with_ort_config(pm.linear(w, b), {"intra_op_num_threads": -5}))
    monkeypatch.setenv("ORT_LOAD_CONFIG_FROM_MODEL", "1")
    out = P.predict(model, folder, P.PredictSettings(batch_size=4))
    want = (x.reshape(6, -1).astype(np.float64) @ w.astype(np.float64) + b).reshape(6, 17, 3)
    np.testing.assert_allclose(out.pred, want, rtol=1e-5, atol=1e-5)


def test_the_child_starts_without_any_ort_variable(tmp_path, monkeypatch):
    """onnxruntime reads ORT_* variables of its own; none of rfbench's environment reaches the model's child."""
    seen = []
    real = subprocess.Popen

    def popen(*args, **kw):
        seen.append(dict(kw["env"]))
        return real(*args, **kw)

    monkeypatch.setattr(S.subprocess, "Popen", popen)
    monkeypatch.setenv("ORT_LOAD_CONFIG_FROM_MODEL", "1")
    monkeypatch.setenv("ORT_SOMETHING_ELSE", "x")
    monkeypatch.setenv("RFBENCH_UNRELATED", "kept")
    folder, _ = pm.pose_windows(tmp_path / "win", n=4)
    w, b = pm.linear_weights()
    P.predict(pm.save(tmp_path / "lin.onnx", pm.linear(w, b)), folder)
    assert seen and [[k for k in env if k.startswith("ORT_")] for env in seen] == [[]] * len(seen)
    assert all(env.get("RFBENCH_UNRELATED") == "kept" for env in seen)  # the rest of the environment is kept


# --- an output of a refused shape costs its header, not its bytes ------------------------------------------------

def _wide_output(width: int) -> bytes:
    """A model whose output is declared without a shape and is (N, 5, width) float32: every row the mean of its
    input, repeated."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *pm.ROW])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Flatten", ["x"], ["f"], axis=1),
             helper.make_node("ReduceMean", ["f"], ["m"], axes=[1], keepdims=1),  # (N, 1)
             helper.make_node("Unsqueeze", ["m", "ax"], ["m3"]),  # (N, 1, 1)
             helper.make_node("Shape", ["m"], ["n"], start=0, end=1),
             helper.make_node("Concat", ["n", "tail"], ["shape"], axis=0),
             helper.make_node("Expand", ["m3", "shape"], ["y"])]
    inits = [numpy_helper.from_array(np.array([2], np.int64), "ax"),
             numpy_helper.from_array(np.array([5, width], np.int64), "tail")]
    return pm.model_bytes(nodes, [x], [y], inits)


class _Counting:
    """The child's standard output, counting the bytes the parent reads from it."""

    def __init__(self, fh):
        self.fh, self.count = fh, 0

    def read(self, n=-1):
        data = self.fh.read(n)
        self.count += len(data)
        return data

    def readinto(self, buf):
        k = self.fh.readinto(buf)
        self.count += k or 0
        return k

    def close(self):
        self.fh.close()


def _counting_sessions(monkeypatch) -> list[_Counting]:
    streams = []
    real = P._make_session

    def make(*a):
        session = real(*a)
        session.proc.stdout = _Counting(session.proc.stdout)
        streams.append(session.proc.stdout)
        return session

    monkeypatch.setattr(P, "_make_session", make)
    return streams


def test_an_output_of_a_refused_row_shape_is_refused_before_its_bytes_are_read(tmp_path, monkeypatch):
    """A 12-row gesture model giving (N, 5, K) rows (declared without a shape): the parent read the whole output
    (12·5·K float32) into its own memory before refusing its shape (1.44 GB at K = 6,000,000). The header's shape is
    checked first: the parent reads only headers."""
    folder, _ = pm.gesture_windows(tmp_path / "win", n=12, classes=4)
    width = 5_000  # 12 · 5 · 5,000 · 4 bytes = 1,200,000 bytes of output
    model = pm.save(tmp_path / "wide.onnx", _wide_output(width))
    streams = _counting_sessions(monkeypatch)
    with pytest.raises(ValidationError) as info:
        P.predict(model, folder, P.PredictSettings(batch_size=64))
    text = str(info.value)
    assert text == (f"model {model}: output 'y' has rows of shape (5, 5000), expected (4,) (the class count)"), text
    assert len(streams) == 1 and 0 < streams[0].count < 64 * 1024, [s.count for s in streams]


def test_an_output_of_the_wrong_row_count_is_refused_before_its_bytes_are_read(tmp_path, monkeypatch):
    """The rows of a batch are known before its output comes back: (N + 1) rows are refused from the header."""
    folder, _ = pm.gesture_windows(tmp_path / "win", n=12, classes=4)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *pm.ROW])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    # pad the (N, 4) zero scores with one more row of 4 · 5,000 values: (N + 1, 20,000)
    nodes = [helper.make_node("Flatten", ["x"], ["f"], axis=1),
             helper.make_node("Slice", ["f", "zero", "four", "one"], ["s"]),  # (N, 4)
             helper.make_node("Mul", ["s", "nought"], ["z"]),
             helper.make_node("Pad", ["z", "pads"], ["p"]),  # (N + 1, 4)
             helper.make_node("Tile", ["p", "reps"], ["y"])]  # (N + 1, 20,000)
    inits = [numpy_helper.from_array(np.array([0], np.int64), "zero"),
             numpy_helper.from_array(np.array([4], np.int64), "four"),
             numpy_helper.from_array(np.array([1], np.int64), "one"),
             numpy_helper.from_array(np.array(0, np.float32), "nought"),
             numpy_helper.from_array(np.array([0, 0, 1, 0], np.int64), "pads"),
             numpy_helper.from_array(np.array([1, 5_000], np.int64), "reps")]
    model = pm.save(tmp_path / "rows.onnx", pm.model_bytes(nodes, [x], [y], inits))
    streams = _counting_sessions(monkeypatch)
    with pytest.raises(ValidationError) as info:
        P.predict(model, folder, P.PredictSettings(batch_size=64))
    text = str(info.value)
    assert text == (f"model {model}: output 'y' has shape [13, 20000] for a batch of 12 rows; it must give one "
                    "row per input row"), text
    assert len(streams) == 1 and 0 < streams[0].count < 64 * 1024, [s.count for s in streams]


def test_an_output_of_the_accepted_shape_is_still_read_whole(tmp_path, monkeypatch):
    """The check costs nothing to a model that answers as it should: its rows come back, all of them."""
    folder, x = pm.gesture_windows(tmp_path / "win", n=12, classes=4)
    w, b = pm.linear_weights(outputs=4)
    model = pm.save(tmp_path / "lin.onnx", pm.linear(w, b))
    streams = _counting_sessions(monkeypatch)
    out = P.predict(model, folder, P.PredictSettings(batch_size=5))
    want = x.reshape(12, -1).astype(np.float64) @ w.astype(np.float64) + b
    np.testing.assert_allclose(out.pred, want, rtol=1e-5, atol=1e-5)
    assert streams[0].count >= 12 * 4 * 4  # 12 rows of 4 float32 scores, at least
