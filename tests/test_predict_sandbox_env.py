"""rfbench.nn.sandbox: what the model's child process takes from its surroundings, and what the parent reads back.

A model never sets its own onnxruntime session options (its ``ort_config`` metadata is not read, whatever the
environment says)."""

from __future__ import annotations

import json
import subprocess

import numpy as np

import predict_models as pm
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
