"""rfbench.nn.model: shapes, deterministic init, gradients; and every model-path kernel with the JIT off."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import naive
from rfbench.errors import ValidationError
from rfbench.nn.model import ModelSpec, forward, init_params, loss_and_grads, param_count, param_shapes

SPEC = ModelSpec()


def test_sizes_hand_computed():
    # (30 + 2 - 3)//2 + 1 = 15, (16 + 2 - 3)//2 + 1 = 8, then (15 + 2 - 3)//2 + 1 = 8, (8 + 2 - 3)//2 + 1 = 4
    assert SPEC.feature_map() == (15, 8, 8, 4)
    assert SPEC.tokens == 32
    # conv1 4*3*3*3 + 4 = 112; conv2 8*4*3*3 + 8 = 296; attention 4 * (8*8 + 8) = 288; head 8*51 + 51 = 459
    assert param_count(SPEC) == 112 + 296 + 288 + 459 == 1155


def test_init_is_deterministic_and_seed_dependent():
    a, b, c = init_params(SPEC, 5), init_params(SPEC, 5), init_params(SPEC, 6)
    assert list(a) == list(param_shapes(SPEC))
    for name in a:
        assert a[name].tobytes() == b[name].tobytes()
    assert any(a[n].tobytes() != c[n].tobytes() for n in a)
    for name, value in a.items():
        if name.split(".")[-1].startswith("b"):
            np.testing.assert_array_equal(value, 0.0)
    # Glorot bound of conv1: sqrt(6 / (3*9 + 4*9)) = sqrt(6/63)
    w = a["conv1.weight"]
    assert np.abs(w).max() < math.sqrt(6 / 63) and np.abs(w).max() > 0.5 * math.sqrt(6 / 63)


def test_forward_matches_the_twin_built_from_naive_layers():
    rng = np.random.default_rng(0)
    params = init_params(SPEC, 1)
    for name in params:  # non-zero biases so every term is exercised
        if params[name].ndim == 1:
            params[name] = rng.standard_normal(params[name].shape) * 0.1
    x = rng.standard_normal((3, 3, 30, 16))
    out = forward(params, x, SPEC)
    assert out.shape == (3, 17, 3)
    np.testing.assert_allclose(out, naive.model_forward(params, x, SPEC), rtol=1e-11, atol=1e-12)


def test_gradients_match_central_finite_differences():
    spec = ModelSpec(subcarriers=8, frames=6, conv1_channels=2, conv2_channels=3, attention_dim=2, keypoints=2)
    rng = np.random.default_rng(1)
    params = init_params(spec, 2)
    for name in params:
        if params[name].ndim == 1:
            params[name] = rng.standard_normal(params[name].shape) * 0.1
    x = rng.standard_normal((2, 3, 8, 6))
    y = rng.standard_normal((2, 2, 3))
    loss, grads = loss_and_grads(params, x, y, spec)
    assert list(grads) == list(params)
    h = 1e-6
    for name, value in params.items():
        for flat in rng.choice(value.size, size=min(value.size, 6), replace=False):
            idx = np.unravel_index(flat, value.shape)
            up = {k: v.copy() for k, v in params.items()}
            dn = {k: v.copy() for k, v in params.items()}
            up[name][idx] += h
            dn[name][idx] -= h
            fd = (loss_and_grads(up, x, y, spec)[0] - loss_and_grads(dn, x, y, spec)[0]) / (2 * h)
            assert grads[name][idx] == pytest.approx(fd, rel=1e-5, abs=1e-8), (name, idx)


def test_loss_is_mean_squared_error():
    params = init_params(SPEC, 0)
    x = np.random.default_rng(2).standard_normal((2, 3, 30, 16))
    pred = forward(params, x, SPEC)
    loss, _ = loss_and_grads(params, x, pred + 0.5, SPEC)  # every residual is -0.5: mean of 0.25
    assert loss == pytest.approx(0.25, rel=1e-12)


def test_bad_inputs_are_refused():
    params = init_params(SPEC, 0)
    with pytest.raises(ValidationError, match="model input must have shape"):
        forward(params, np.zeros((1, 3, 30, 15)), SPEC)
    with pytest.raises(ValidationError, match="parameter conv1.weight must have shape"):
        forward({**params, "conv1.weight": np.zeros((4, 3, 2, 2))}, np.zeros((1, 3, 30, 16)), SPEC)
    with pytest.raises(ValidationError, match="must be a dict with keys"):
        forward({k: v for k, v in params.items() if k != "head.bias"}, np.zeros((1, 3, 30, 16)), SPEC)
    with pytest.raises(ValidationError, match="target must have shape"):
        loss_and_grads(params, np.zeros((1, 3, 30, 16)), np.zeros((1, 17, 2)), SPEC)
    with pytest.raises(ValidationError, match="batch is empty"):
        loss_and_grads(params, np.zeros((0, 3, 30, 16)), np.zeros((0, 17, 3)), SPEC)
    with pytest.raises(ValidationError, match="positive integer"):
        ModelSpec(conv1_channels=0)
    with pytest.raises(ValidationError, match="seed"):
        init_params(SPEC, -1)


_NO_JIT_SCRIPT = r"""
import json, sys
import numpy as np
import numba
assert numba.config.DISABLE_JIT
sys.path.insert(0, sys.argv[1])
import naive
from rfbench.nn.conv import conv2d, conv2d_backward
from rfbench.nn.layers import softmax, attention, exp
from rfbench.csi.subcarrier import resample_subcarriers, grid
from rfbench.train import adapt as A
from rfbench.train.proof import run_proof
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 2, 5, 4)); w = rng.standard_normal((3, 2, 3, 2)); b = rng.standard_normal(3)
geo = ((2, 1), (1, 1), (1, 2))
out = conv2d(x, w, b, *geo)
assert np.array_equal(out, naive.conv2d(x, w, b, *geo))
g = rng.standard_normal(out.shape)
got = conv2d_backward(x, w, g, *geo)
ref = naive.conv2d_backward(x, w, g, *geo)
assert all(np.array_equal(a, r) for a, r in zip((got.input, got.weight, got.bias), ref))
s = rng.standard_normal((3, 4))
assert np.allclose(softmax(s, axis=0), naive.softmax(s, 0), rtol=1e-14)
assert np.all(np.abs(exp(s) - np.exp(s)) <= np.spacing(np.exp(s)))
p = {n: rng.standard_normal(sh) for n, sh in (("wq", (4, 2)), ("bq", (2,)), ("wk", (4, 2)), ("bk", (2,)),
     ("wv", (4, 3)), ("bv", (3,)), ("wo", (3, 4)), ("bo", (4,)))}
t = rng.standard_normal((5, 4))
assert np.allclose(attention(t, p), naive.attention(t, p)[0], rtol=1e-12)
c = rng.standard_normal((2, 30))
assert np.array_equal(resample_subcarriers(c, "intel30-20", "ht20-56"),
                      naive.interp_rows(c, grid("intel30-20"), grid("ht20-56")))
f = rng.standard_normal((6, 3)); a = rng.standard_normal((3, 1)) * 0.3; bb = rng.standard_normal((1, 3)) * 0.3
pr = A.choose_prototypes(f, 2)
assert np.allclose(A.objective(f, a, bb, pr, 0.5, 0.1), naive.adapt_objective(f, a, bb, pr, 0.5, 0.1), rtol=1e-12)
run = run_proof(steps=2, samples=2)
print(json.dumps({"weights": run.weights_sha256, "data": run.data_sha256, "losses": run.losses}))
"""


def test_kernels_without_jit_and_the_proof_hash_is_the_same_as_compiled():
    """NUMBA_DISABLE_JIT=1 runs every kernel as plain Python (IEEE doubles, written order). The compiled
    kernels must give the same proof hash: no fused multiply-add, no reassociation, no CPU-specific rounding."""
    from rfbench.train.proof import run_proof

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-W", "error", "-c", _NO_JIT_SCRIPT, str(root / "tests")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    interpreted = json.loads(proc.stdout)
    compiled = run_proof(steps=2, samples=2)
    assert interpreted["data"] == compiled.data_sha256
    assert interpreted["losses"] == compiled.losses
    assert interpreted["weights"] == compiled.weights_sha256


def test_elementwise_kernels_match_their_twins():
    from rfbench.nn import model as M

    rng = np.random.default_rng(4)
    awkward = np.array([-1.5, -0.0, 0.0, 2.0, np.nan, np.inf, -np.inf])
    for x in (awkward, rng.standard_normal(50), np.zeros(3), np.array([7.0]), np.zeros(0)):
        out = np.empty_like(x)
        M._relu(x, out)
        np.testing.assert_array_equal(out, naive.relu(x))
        g = rng.standard_normal(x.shape)
        gx = np.empty_like(x)
        M._relu_backward(x, g, gx)
        np.testing.assert_array_equal(gx, naive.relu_backward(x, g))
    for shape in ((2, 5, 3), (1, 1, 1), (3, 4, 2)):
        t, a = rng.standard_normal(shape), rng.standard_normal(shape)
        pooled = np.empty((shape[0], shape[2]))
        M._residual_mean(t, a, pooled)
        np.testing.assert_array_equal(pooled, naive.residual_mean(t, a))
    # mse of [1, 2] against [0, 4]: (1 + 4) / 2 = 2.5; gradient 2*(p - t)/n = [1, -2]
    assert M._mse(np.array([1.0, 2.0]), np.array([0.0, 4.0])) == 2.5
    grad = np.empty(2)
    M._mse_backward(np.array([1.0, 2.0]), np.array([0.0, 4.0]), grad)
    np.testing.assert_array_equal(grad, [1.0, -2.0])
    p, t = rng.standard_normal(40), rng.standard_normal(40)
    assert M._mse(p, t) == pytest.approx(naive.mse(p, t), rel=1e-14)
    assert np.isnan(M._mse(np.array([np.nan]), np.array([0.0])))
    # uniforms 0, 0.5, 0.75 map to -b, 0, b/2 for b = 2
    out = np.empty(3)
    M._symmetric(np.array([0.0, 0.5, 0.75]), 2.0, out)
    np.testing.assert_array_equal(out, [-2.0, 0.0, 1.0])
