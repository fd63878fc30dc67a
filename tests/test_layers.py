"""rfbench.nn.layers: exp, softmax(axis), linear and single-head attention against NumPy twins."""

from __future__ import annotations

import math

import numpy as np
import pytest

import naive
from rfbench.errors import ValidationError
from rfbench.nn import layers
from rfbench.nn.layers import attention, attention_backward, exp, linear, linear_backward, softmax

# --------------------------------------------------------------------------------------------------- exp


def test_exp_within_one_ulp_of_numpy():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-745.0, 709.7, 20000), rng.uniform(-1, 1, 20000), rng.uniform(-50, 0, 20000)])
    got, ref = exp(x), np.exp(x)
    ulps = np.abs(got - ref) / np.spacing(ref)
    assert ulps.max() <= 1.0


def test_exp_special_values():
    got = exp([0.0, 1.0, -np.inf, np.inf, np.nan, 710.0, -746.0, -745.0, math.log(2.0)])
    assert got[0] == 1.0  # r = 0 gives the polynomial's constant term exactly
    assert got[1] == pytest.approx(math.e, rel=2.3e-16)
    assert got[2] == 0.0 and got[3] == np.inf and np.isnan(got[4])
    assert got[5] == np.inf and got[6] == 0.0
    assert got[7] == 5e-324  # the smallest subnormal, as numpy.exp(-745.0)
    assert got[8] == pytest.approx(2.0, rel=2.3e-16)


# ----------------------------------------------------------------------------------------------- softmax


def test_softmax_hand_computed():
    # exp(0) : exp(ln 3) = 1 : 3  ->  1/4, 3/4
    np.testing.assert_allclose(softmax([0.0, math.log(3.0)]), [0.25, 0.75], rtol=1e-15)
    # large logits do not overflow: [1000, 1001] behaves like [0, 1] -> 1/(1+e), e/(1+e)
    e = math.e
    np.testing.assert_allclose(softmax([1000.0, 1001.0]), [1 / (1 + e), e / (1 + e)], rtol=1e-15)
    # -inf gets exactly zero weight
    np.testing.assert_array_equal(softmax([0.0, -np.inf, 0.0]), [0.5, 0.0, 0.5])


@pytest.mark.parametrize("shape, axis", [((4, 5), 0), ((4, 5), 1), ((4, 5), -1), ((2, 3, 4), 1), ((2, 3, 4), -3),
                                         ((7,), 0), ((3, 1), 1), ((0, 4), 1), ((3, 0), 1)])
def test_softmax_matches_numpy_twin_along_any_axis(shape, axis):
    x = np.random.default_rng(sum(shape) + axis).standard_normal(shape) * 5
    got = softmax(x, axis=axis)
    assert got.shape == x.shape
    if x.size:
        np.testing.assert_allclose(got, naive.softmax(x, axis), rtol=1e-14, atol=1e-300)
        np.testing.assert_allclose(got.sum(axis=axis), 1.0, rtol=1e-14)


def test_softmax_non_finite_rows_become_nan_and_leave_others_alone():
    x = np.array([[1.0, np.nan, 0.0], [-np.inf, -np.inf, -np.inf], [np.inf, 0.0, 1.0], [0.0, 0.0, 0.0]])
    got = softmax(x, axis=1)
    assert np.isnan(got[:3]).all()
    np.testing.assert_allclose(got[3], [1 / 3] * 3, rtol=1e-15)


def test_softmax_all_zero_is_uniform_and_single_element_is_one():
    np.testing.assert_array_equal(softmax(np.zeros(4)), [0.25] * 4)
    np.testing.assert_array_equal(softmax([[-3.0]], axis=0), [[1.0]])


@pytest.mark.parametrize("axis", [2, -3, 5, True, 1.0])
def test_softmax_out_of_range_axis_is_an_error_not_a_crash(axis):
    with pytest.raises(ValidationError, match="axis"):
        softmax(np.zeros((2, 3)), axis=axis)


def test_softmax_refuses_scalar():
    with pytest.raises(ValidationError, match="at least one dimension"):
        softmax(3.0)


def test_softmax_backward_matches_jacobian_twin():
    rng = np.random.default_rng(5)
    y = softmax(rng.standard_normal((6, 5)), axis=1)
    gy = rng.standard_normal((6, 5))
    gx = np.empty_like(y)
    layers._softmax_rows_backward(y, gy, gx)
    np.testing.assert_allclose(gx, naive.softmax_rows_backward(y, gy), rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------------------------------------------ linear


def test_linear_hand_computed_and_exact_against_loop_twin():
    # [1, 2] @ [[1, 0, 2], [3, -1, 0]] + [0.5, 0, -1] = [7.5, -2, 1]
    np.testing.assert_array_equal(linear([[1.0, 2.0]], [[1.0, 0.0, 2.0], [3.0, -1.0, 0.0]], [0.5, 0.0, -1.0]),
                                  [[7.5, -2.0, 1.0]])
    rng = np.random.default_rng(11)
    x, w, b = rng.standard_normal((9, 6)), rng.standard_normal((6, 4)), rng.standard_normal(4)
    np.testing.assert_array_equal(linear(x, w, b), naive.linear(x, w, b))
    np.testing.assert_allclose(linear(x[None], w, b)[0], x @ w + b, rtol=1e-13)


def test_linear_backward_against_numpy():
    rng = np.random.default_rng(12)
    x, w, g = rng.standard_normal((2, 5, 3)), rng.standard_normal((3, 4)), rng.standard_normal((2, 5, 4))
    gx, gw, gb = linear_backward(x, w, g)
    np.testing.assert_allclose(gx, g @ w.T, rtol=1e-13)
    np.testing.assert_allclose(gw, x.reshape(-1, 3).T @ g.reshape(-1, 4), rtol=1e-13)
    np.testing.assert_allclose(gb, g.reshape(-1, 4).sum(axis=0), rtol=1e-13)
    assert linear_backward(x, w, g, need_input_grad=False)[0] is None


def test_linear_refuses_mismatched_shapes():
    with pytest.raises(ValidationError, match="weight must have shape"):
        linear(np.zeros((2, 3)), np.zeros((4, 2)), np.zeros(2))
    with pytest.raises(ValidationError, match="bias must have shape"):
        linear(np.zeros((2, 3)), np.zeros((3, 2)), np.zeros(3))


# --------------------------------------------------------------------------------------------- attention


def _params(rng, d_in=5, d_k=4, d_v=3, d_out=6, scale=1.0):
    return {"wq": rng.standard_normal((d_in, d_k)) * scale, "bq": rng.standard_normal(d_k),
            "wk": rng.standard_normal((d_in, d_k)) * scale, "bk": rng.standard_normal(d_k),
            "wv": rng.standard_normal((d_in, d_v)), "bv": rng.standard_normal(d_v),
            "wo": rng.standard_normal((d_v, d_out)), "bo": rng.standard_normal(d_out)}


def test_attention_matches_numpy_twin():
    rng = np.random.default_rng(21)
    p = _params(rng)
    for x in (rng.standard_normal((3, 7, 5)), rng.standard_normal((7, 5)), rng.standard_normal((1, 1, 5))):
        out, weights = attention(x, p, return_weights=True)
        ref_out, ref_weights = naive.attention(x, p)
        np.testing.assert_allclose(out, ref_out, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(weights, ref_weights, rtol=1e-12, atol=1e-15)


def test_attention_is_neither_uniform_nor_the_identity():
    rng = np.random.default_rng(22)
    x = rng.standard_normal((8, 4))
    p = _params(rng, d_in=4, d_k=4, d_v=4, d_out=4)
    out, weights = attention(x, p, return_weights=True)
    # not uniform: uniform weights (1/8 each) would give every token the same output row
    assert np.abs(weights - 1 / 8).max() > 0.05
    assert np.ptp(out, axis=0).min() > 1e-3
    # not the identity: no token attends only to itself, and the output is not the input
    assert np.abs(weights - np.eye(8)).max() > 0.05
    assert np.abs(out - x).max() > 1e-3
    # and the weights of each row are a distribution
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-14)


def test_attention_backward_matches_finite_differences():
    rng = np.random.default_rng(23)
    x = rng.standard_normal((2, 4, 3))
    p = _params(rng, d_in=3, d_k=2, d_v=3, d_out=2, scale=0.7)
    gout = rng.standard_normal((2, 4, 2))
    gx, grads = attention_backward(x, p, gout)

    def loss(x_, p_):
        return float(np.sum(gout * attention(x_, p_)))

    h = 1e-6
    for flat in range(x.size):
        idx = np.unravel_index(flat, x.shape)
        up, dn = x.copy(), x.copy()
        up[idx] += h
        dn[idx] -= h
        assert gx[idx] == pytest.approx((loss(up, p) - loss(dn, p)) / (2 * h), rel=1e-6, abs=1e-8)
    for name, value in p.items():
        for flat in range(value.size):
            idx = np.unravel_index(flat, value.shape)
            up = {k: v.copy() for k, v in p.items()}
            dn = {k: v.copy() for k, v in p.items()}
            up[name][idx] += h
            dn[name][idx] -= h
            fd = (loss(x, up) - loss(x, dn)) / (2 * h)
            assert grads[name][idx] == pytest.approx(fd, rel=1e-6, abs=1e-8), name


@pytest.mark.parametrize(
    "name, shape, message",
    [
        ("wq", (4, 4), "wq must have 5 rows"),
        ("wk", (5, 3), "wk must have wq's shape"),
        ("wv", (2, 3), "wv must have 5 rows"),
        ("wo", (4, 6), "wo must have 3 rows"),
        ("bq", (3,), "bq must have shape"),
        ("bv", (3, 1), "bv must have shape"),
        ("bo", (5,), "bo must have shape"),
        ("wq", (5,), "wq must be a non-empty 2-D matrix"),
    ],
)
def test_attention_rejects_mis_shaped_weights(name, shape, message):
    rng = np.random.default_rng(24)
    p = _params(rng)
    p[name] = np.zeros(shape)
    with pytest.raises(ValidationError, match=message):
        attention(rng.standard_normal((2, 3, 5)), p)


def test_attention_rejects_missing_or_unknown_names_and_bad_input():
    p = _params(np.random.default_rng(25))
    with pytest.raises(ValidationError, match="missing \\['bo'\\]"):
        attention(np.zeros((3, 5)), {k: v for k, v in p.items() if k != "bo"})
    with pytest.raises(ValidationError, match="unknown \\['extra'\\]"):
        attention(np.zeros((3, 5)), {**p, "extra": np.zeros(1)})
    with pytest.raises(ValidationError, match="attention input must be"):
        attention(np.zeros(5), p)
    with pytest.raises(ValidationError, match="grad_out must have"):
        attention_backward(np.zeros((1, 3, 5)), p, np.zeros((1, 3, 5)))
