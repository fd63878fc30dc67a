"""rfbench.nn.conv: the naive conv kernel against its loop twin, an im2col formulation and finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import naive
from rfbench.errors import ValidationError
from rfbench.nn.conv import conv2d, conv2d_backward, conv2d_output_shape

X3 = np.arange(1.0, 10.0).reshape(1, 1, 3, 3)  # [[1 2 3] [4 5 6] [7 8 9]]


def test_hand_computed_stride_one():
    # w = [[1, 0], [0, -1]]: every output is x[i, j] - x[i+1, j+1] + 0.5 = -4 + 0.5 = -3.5
    w = np.array([[[[1.0, 0.0], [0.0, -1.0]]]])
    out = conv2d(X3, w, [0.5])
    assert out.shape == (1, 1, 2, 2)
    np.testing.assert_array_equal(out, np.full((1, 1, 2, 2), -3.5))


def test_hand_computed_padding_and_stride():
    # padding 1, stride 2: out is 2x2 = ((3 + 2 - 2)//2 + 1)^2; input row/col = 2*o - 1 + k.
    # out[0,0]: only k=(1,1) lands inside, on x[0,0]=1: -1*1 + 0.5 = -0.5
    # out[0,1]: k=(1,0) on x[0,1]=2 (weight 0) and k=(1,1) on x[0,2]=3: -3 + 0.5 = -2.5
    # out[1,0]: k=(0,1) on x[1,0]=4 (weight 0) and k=(1,1) on x[2,0]=7: -7 + 0.5 = -6.5
    # out[1,1]: 1*x[1,1] - 1*x[2,2] = 5 - 9, + 0.5 = -3.5
    w = np.array([[[[1.0, 0.0], [0.0, -1.0]]]])
    out = conv2d(X3, w, [0.5], stride=2, padding=1)
    np.testing.assert_array_equal(out[0, 0], [[-0.5, -2.5], [-6.5, -3.5]])


def test_hand_computed_dilation():
    # a 2x2 kernel of ones dilated by 2 covers the four corners: 1 + 3 + 7 + 9 = 20
    out = conv2d(X3, np.ones((1, 1, 2, 2)), dilation=2)
    np.testing.assert_array_equal(out, [[[[20.0]]]])


def test_hand_computed_backward():
    # out = x[0,0]*w0 + x[0,1]*w1 (1x2 kernel on a 1x2 input): d/dx = w, d/dw = x, d/db = 1
    x = np.array([[[[2.0, 3.0]]]])
    w = np.array([[[[5.0, 7.0]]]])
    g = conv2d_backward(x, w, np.ones((1, 1, 1, 1)))
    np.testing.assert_array_equal(g.input, [[[[5.0, 7.0]]]])
    np.testing.assert_array_equal(g.weight, [[[[2.0, 3.0]]]])
    np.testing.assert_array_equal(g.bias, [1.0])


def _random_case(rng):
    n, c_in, c_out = rng.integers(1, 4), rng.integers(1, 4), rng.integers(1, 4)
    kh, kw = rng.integers(1, 4, 2)
    stride = tuple(int(v) for v in rng.integers(1, 4, 2))
    padding = tuple(int(v) for v in rng.integers(0, 3, 2))
    dilation = tuple(int(v) for v in rng.integers(1, 3, 2))
    h = int(rng.integers(dilation[0] * (kh - 1) + 1, 9))
    w = int(rng.integers(dilation[1] * (kw - 1) + 1, 9))
    x = rng.standard_normal((n, c_in, h, w))
    weight = rng.standard_normal((c_out, c_in, kh, kw))
    bias = rng.standard_normal(c_out)
    return x, weight, bias, stride, padding, dilation


def test_random_shapes_match_naive_exactly_and_im2col_closely():
    rng = np.random.default_rng(20240501)
    for _ in range(40):
        x, w, b, s, p, d = _random_case(rng)
        out = conv2d(x, w, b, s, p, d)
        # same summation order as the loop twin: bit-for-bit equal
        np.testing.assert_array_equal(out, naive.conv2d(x, w, b, s, p, d))
        # an independent formulation (BLAS matrix product): equal to float tolerance
        np.testing.assert_allclose(out, naive.conv2d_im2col(x, w, b, s, p, d), rtol=1e-12, atol=1e-12)


def test_random_backward_matches_naive_exactly():
    rng = np.random.default_rng(7)
    for _ in range(25):
        x, w, b, s, p, d = _random_case(rng)
        gout = rng.standard_normal(conv2d(x, w, b, s, p, d).shape)
        got = conv2d_backward(x, w, gout, s, p, d)
        gx, gw, gb = naive.conv2d_backward(x, w, gout, s, p, d)
        np.testing.assert_array_equal(got.input, gx)
        np.testing.assert_array_equal(got.weight, gw)
        np.testing.assert_array_equal(got.bias, gb)


def test_backward_matches_central_finite_differences():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 6, 5))
    w = rng.standard_normal((3, 2, 3, 2))
    b = rng.standard_normal(3)
    geometry = dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2))
    gout = rng.standard_normal(conv2d(x, w, b, **geometry).shape)

    def loss(x_, w_, b_):
        return float(np.sum(gout * conv2d(x_, w_, b_, **geometry)))

    grads = conv2d_backward(x, w, gout, **geometry)
    h = 1e-6
    for arr, grad, which in ((x, grads.input, 0), (w, grads.weight, 1), (b, grads.bias, 2)):
        for flat in rng.choice(arr.size, size=min(arr.size, 12), replace=False):
            idx = np.unravel_index(flat, arr.shape)
            args_up = [x.copy(), w.copy(), b.copy()]
            args_dn = [x.copy(), w.copy(), b.copy()]
            args_up[which][idx] += h
            args_dn[which][idx] -= h
            fd = (loss(*args_up) - loss(*args_dn)) / (2 * h)
            assert grad[idx] == pytest.approx(fd, rel=1e-6, abs=1e-7)


def test_empty_batch_and_single_element():
    out = conv2d(np.zeros((0, 2, 4, 4)), np.ones((3, 2, 3, 3)), padding=1)
    assert out.shape == (0, 3, 4, 4)
    g = conv2d_backward(np.zeros((0, 2, 4, 4)), np.ones((3, 2, 3, 3)), np.zeros((0, 3, 4, 4)), padding=1)
    np.testing.assert_array_equal(g.weight, np.zeros((3, 2, 3, 3)))
    np.testing.assert_array_equal(g.bias, np.zeros(3))
    # 1x1x1x1 input and kernel: 3 * -2 + 1 = -5
    np.testing.assert_array_equal(conv2d([[[[3.0]]]], [[[[-2.0]]]], [1.0]), [[[[-5.0]]]])


def test_all_zero_input_gives_bias():
    out = conv2d(np.zeros((2, 3, 5, 5)), np.ones((4, 3, 3, 3)), [1.0, -2.0, 0.0, 4.0], stride=2, padding=1)
    np.testing.assert_array_equal(out, np.broadcast_to(np.array([1.0, -2.0, 0.0, 4.0])[None, :, None, None],
                                                       out.shape))


def test_nan_reaches_only_its_receptive_field_and_padding_is_skipped():
    x = np.zeros((1, 1, 5, 5))
    x[0, 0, 0, 0] = np.nan
    out = conv2d(x, np.ones((1, 1, 3, 3)), padding=1)
    # with padding 1 and a 3x3 kernel, input (0, 0) is read by outputs (0..1, 0..1) only
    expected_nan = np.zeros((5, 5), bool)
    expected_nan[:2, :2] = True
    np.testing.assert_array_equal(np.isnan(out[0, 0]), expected_nan)
    # an infinite weight over padding adds nothing (0 * inf would be NaN if padding were multiplied)
    w = np.zeros((1, 1, 3, 3))
    w[0, 0, 0, 0] = np.inf
    out = conv2d(np.ones((1, 1, 2, 2)), w, padding=1)
    assert out[0, 0, 0, 0] == 0.0  # its only inf tap falls on padding
    assert out[0, 0, 1, 1] == np.inf  # the inf tap reads x[0, 0] = 1
    np.testing.assert_array_equal(out, naive.conv2d(np.ones((1, 1, 2, 2)), w, [0.0], (1, 1), (1, 1), (1, 1)))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(x=np.zeros((1, 3, 4)), weight=np.zeros((1, 3, 2, 2))), "input must be 4-D"),
        (dict(x=np.zeros((1, 3, 4, 4)), weight=np.zeros((1, 2, 2, 2))), "input channels"),
        (dict(x=np.zeros((1, 3, 4, 4)), weight=np.zeros((2, 3, 2, 2)), bias=np.zeros(3)), "bias must have shape"),
        (dict(x=np.zeros((1, 3, 4, 4)), weight=np.zeros((2, 3, 2, 2)), stride=0), "stride must be >= 1"),
        (dict(x=np.zeros((1, 3, 4, 4)), weight=np.zeros((2, 3, 2, 2)), padding=-1), "padding must be >= 0"),
        (dict(x=np.zeros((1, 3, 4, 4)), weight=np.zeros((2, 3, 2, 2)), dilation=(1, 0)), "dilation must be >= 1"),
        (dict(x=np.zeros((1, 3, 2, 2)), weight=np.zeros((2, 3, 3, 3))), "smaller than the dilated kernel"),
        (dict(x=np.zeros((1, 3, 4, 4)), weight=np.zeros((2, 3, 2, 2)), stride=(1, 2, 3)), "pair of ints"),
        (dict(x=np.zeros((1, 3, 4, 4), complex), weight=np.zeros((2, 3, 2, 2))), "real numbers"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(ValidationError, match=message):
        conv2d(**kwargs)


def test_backward_refuses_wrong_grad_shape():
    with pytest.raises(ValidationError, match="grad_out must have the output's shape"):
        conv2d_backward(np.zeros((1, 1, 4, 4)), np.zeros((1, 1, 3, 3)), np.zeros((1, 1, 4, 4)))


def test_output_shape_formula():
    # (30 + 2*1 - 1*(3-1) - 1)//2 + 1 = 15 ; (16 + 2 - 2 - 1)//2 + 1 = 8
    assert conv2d_output_shape((30, 16), (3, 3), 2, 1, 1) == (15, 8)
    # dilation 2 makes a 3-tap kernel span 5: (7 - 5)//1 + 1 = 3
    assert conv2d_output_shape((7, 7), (3, 3), 1, 0, 2) == (3, 3)
