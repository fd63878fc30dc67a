"""rfbench.nn.onnx_export: the demo's ridge and nearest-centroid models as ONNX files give the demo's own NumPy
predictions (rfbench.demo.ridge_fit, nearest_centroid_scores), run through onnxruntime and through predict."""

from __future__ import annotations

import numpy as np
import pytest

import predict_models as pm
from rfbench import demo
from rfbench.errors import ValidationError
from rfbench.nn import onnx_export as E
from rfbench.nn import predict as P

ROW = (1, 2, 3, 12, 5)  # frame, amplitude/phase, antenna, subcarrier, packet
MMFI = E.FeatureMap(ROW, take={0: 0, 1: 0}, mean_axes=(4,))  # mean amplitude per antenna and subcarrier


def _x(n, seed):
    return np.random.default_rng(seed).standard_normal((n, *ROW)).astype(np.float32) + 2.0


def _run(model: bytes, x: np.ndarray) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def test_feature_map_by_hand():
    x = np.arange(2 * 1 * 2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 1, 2, 3, 2, 2)
    fm = E.FeatureMap(x.shape[1:], take={0: 0, 1: 0}, mean_axes=(4,))
    # x[i, 0, 0, a, s, p] = 24i + 4a + 2s + p: the mean over the two packets p is 24i + 4a + 2s + 0.5
    want = np.array([[0.5, 2.5, 4.5, 6.5, 8.5, 10.5], [24.5, 26.5, 28.5, 30.5, 32.5, 34.5]])
    np.testing.assert_array_equal(fm.apply(x), want)
    assert fm.n_features == 6
    np.testing.assert_array_equal(_run(E.ridge_model(E.RidgeParameters(np.zeros(6), np.ones(6), np.eye(6),
                                                                       np.zeros(6)), fm), x), want)


@pytest.mark.parametrize("bad", [dict(take={5: 0}), dict(take={1: 2}), dict(mean_axes=(1,), take={1: 0}),
                                 dict(mean_axes=(4, 4))])
def test_feature_map_refuses_axes_outside_the_row(bad):
    with pytest.raises(ValidationError):
        E.FeatureMap(ROW, **bad)


def test_ridge_model_equals_demo_ridge_fit():
    x_train, x_test = _x(40, 1), _x(15, 2)
    rng = np.random.default_rng(3)
    y_train = rng.standard_normal((40, 51))
    f_train, f_test = MMFI.apply(x_train), MMFI.apply(x_test)
    params = E.fit_ridge(f_train, y_train, demo.RIDGE_PENALTY)
    want = demo.ridge_fit(f_train, y_train)(f_test)
    out = _run(E.ridge_model(params, MMFI, target_shape=(17, 3)), x_test)
    assert out.shape == (15, 17, 3) and out.dtype == np.float64
    np.testing.assert_allclose(out.reshape(15, 51), want, rtol=1e-9, atol=1e-9)
    single = _run(E.ridge_model(params, MMFI, compute="float32"), x_test)  # flat (N, 51), float32 arithmetic
    assert single.dtype == np.float32
    np.testing.assert_allclose(single, want, rtol=1e-5, atol=1e-5)


def test_nearest_centroid_model_equals_demo_scores():
    x_train, x_test = _x(36, 4), _x(12, 5)
    labels = np.random.default_rng(6).integers(0, 6, 36)
    labels[labels == 2] = 0  # class 2 never seen in training: it must score exactly 0
    f_train, f_test = MMFI.apply(x_train), MMFI.apply(x_test)
    params = E.fit_nearest_centroid(f_train, labels, 6)
    want = demo.nearest_centroid_scores(f_train, labels, f_test, 6)
    out = _run(E.nearest_centroid_model(params, MMFI), x_test)
    assert out.shape == (12, 6)
    np.testing.assert_allclose(out, want, rtol=1e-9, atol=1e-12)
    assert (out[:, 2] == 0).all()
    np.testing.assert_array_equal(out.argmax(axis=1), want.argmax(axis=1))
    np.testing.assert_allclose(_run(E.nearest_centroid_model(params, MMFI, compute="float32"), x_test), want,
                               rtol=1e-5, atol=1e-5)


def test_exported_models_through_predict(tmp_path):
    # pose: ridge over a windows folder, predictions in y's (17, 3) rows
    x_train, x_test = _x(30, 7), _x(11, 8)
    y_train = np.random.default_rng(9).standard_normal((30, 17, 3))
    f_train = MMFI.apply(x_train)
    ridge = pm.save(tmp_path / "ridge.onnx", E.ridge_model(E.fit_ridge(f_train, y_train.reshape(30, -1), 10.0),
                                                           MMFI, target_shape=(17, 3)))
    folder = pm.write_windows(tmp_path / "pose", x_test, np.zeros((11, 17, 3), np.float32))
    out = P.predict(ridge, folder)
    want = demo.ridge_fit(f_train, y_train.reshape(30, -1))(MMFI.apply(x_test)).reshape(11, 17, 3)
    assert out.output_mode == "target"
    np.testing.assert_allclose(out.pred, want, rtol=1e-5, atol=1e-5)
    # gesture: nearest centroid over a windows folder with a 4-name label set
    labels = np.array([0, 1, 3] * 10)
    centroid = pm.save(tmp_path / "nc.onnx", E.nearest_centroid_model(E.fit_nearest_centroid(f_train, labels, 4),
                                                                      MMFI))
    folder = pm.write_windows(tmp_path / "gesture", x_test, np.zeros(11, np.int64), task="gesture",
                              labels=["a", "b", "c", "d"])
    out = P.predict(centroid, folder)
    assert out.output_mode == "scores" and out.pred.shape == (11, 4)
    np.testing.assert_allclose(out.pred, demo.nearest_centroid_scores(f_train, labels, MMFI.apply(x_test), 4),
                               rtol=1e-5, atol=1e-5)


def test_exports_are_plain_standard_onnx(tmp_path):
    from rfbench.nn.onnx_file import parse_model

    params = E.fit_ridge(np.random.default_rng(0).standard_normal((8, 36)), np.ones((8, 2)), 1.0)
    data = E.ridge_model(params, MMFI)
    parts = parse_model(data)
    assert parts["opsets"] == [("", E.OPSET)] and parts["ir_version"] == E.IR_VERSION
    assert {d for d, _, _ in parts["operators"]} == {""} and parts["external"] == []
    assert E.ridge_model(params, MMFI) == data  # the same parameters give the same bytes (the same sha256)


def test_parameter_checks():
    with pytest.raises(ValidationError, match="features"):
        E.ridge_model(E.fit_ridge(np.ones((4, 5)), np.ones((4, 2)), 1.0), MMFI)
    with pytest.raises(ValidationError, match="target_shape"):
        E.ridge_model(E.fit_ridge(np.ones((4, 36)), np.ones((4, 2)), 1.0), MMFI, target_shape=(3,))
    with pytest.raises(ValidationError, match="labels must lie"):
        E.fit_nearest_centroid(np.ones((3, 36)), np.array([0, 1, 5]), 3)
    with pytest.raises(ValidationError, match="compute"):
        E.ridge_model(E.fit_ridge(np.ones((4, 36)), np.ones((4, 2)), 1.0), MMFI, compute="float16")
