"""A naive 2D convolution (cross-correlation, like ``torch.nn.functional.conv2d``) with its backward pass.

Layout is NCHW: input ``(batch, in_channels, height, width)``, weight ``(out_channels, in_channels,
kernel_h, kernel_w)``, bias ``(out_channels,)``. For stride ``s``, padding ``p`` and dilation ``d`` (each per
axis)::

    out[n, co, oh, ow] = sum over ci, kh, kw of  w[co, ci, kh, kw] * x[n, ci, oh*s_h - p_h + kh*d_h,
                                                                         ow*s_w - p_w + kw*d_w]
                         + bias[co]
    out_h = (height + 2*p_h - d_h*(kernel_h - 1) - 1) // s_h + 1     (the same for the width)

Numerical contract (what makes results reproducible bit for bit):

- Every output is accumulated from ``0.0`` over ``(ci, kh, kw)`` in lexicographic order, then the bias is
  added once. Padded positions are *skipped*, not multiplied by zero (so an infinite weight over padding
  does not create a NaN). Without a bias, ``0.0`` is added.
- Each weight-gradient and bias-gradient element sums over ``(oh, ow, n)`` in lexicographic order; each
  input-gradient element sums its contributions over ``(co, kh, kw)`` in lexicographic order.
- Inside, the kernels work on batch-last copies ``(channels, height, width, batch)``, so the innermost
  loop runs over independent batch elements in contiguous memory; the per-element orders above hold.
- Kernels are serial and compiled without fastmath, so no reassociation and no fused multiply-add: the
  order above is the order the CPU executes, whatever its vector width.

All arithmetic is float64. ``tests/naive.py`` holds the slow obvious twin of each kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rfbench._jit import njit
from rfbench.errors import ValidationError

__all__ = ["conv2d", "conv2d_backward", "conv2d_output_shape", "ConvGrads"]


@njit
def _valid_range(out_len, in_len, stride, offset):
    """Output indices ``o`` in ``[lo, hi)`` with ``0 <= o*stride + offset < in_len``."""
    # o*stride >= -offset  ->  o >= ceil(-offset / stride)
    lo = -(offset // stride)
    if lo < 0:
        lo = 0
    # o*stride <= in_len - 1 - offset  ->  o <= floor((in_len - 1 - offset) / stride)
    hi = (in_len - 1 - offset) // stride + 1
    if hi > out_len:
        hi = out_len
    if hi < lo:
        hi = lo
    return lo, hi


@njit
def _conv2d_forward(x, w, b, sh, sw, ph, pw, dh, dw, out):
    """``out = conv2d(x, w) + b`` on batch-last arrays. Validates nothing.

    ``x`` is ``(in_channels, height, width, batch)`` and ``out`` ``(out_channels, out_h, out_w, batch)``:
    with the batch innermost, every weight is applied to a contiguous run of independent outputs, while each
    output still receives its terms in (ci, kh, kw) order.
    """
    c_in, h_in, w_in, n_batch = x.shape
    c_out, _, k_h, k_w = w.shape
    h_out = out.shape[1]
    w_out = out.shape[2]
    for co in range(c_out):
        for oh in range(h_out):
            for ow in range(w_out):
                for n in range(n_batch):
                    out[co, oh, ow, n] = 0.0
    for ci in range(c_in):
        for kh in range(k_h):
            off_h = kh * dh - ph
            oh_lo, oh_hi = _valid_range(h_out, h_in, sh, off_h)
            for kw in range(k_w):
                off_w = kw * dw - pw
                ow_lo, ow_hi = _valid_range(w_out, w_in, sw, off_w)
                for co in range(c_out):
                    wv = w[co, ci, kh, kw]
                    for oh in range(oh_lo, oh_hi):
                        ih = oh * sh + off_h
                        for ow in range(ow_lo, ow_hi):
                            iw = ow * sw + off_w
                            for n in range(n_batch):
                                out[co, oh, ow, n] += wv * x[ci, ih, iw, n]
    for co in range(c_out):
        bv = b[co]
        for oh in range(h_out):
            for ow in range(w_out):
                for n in range(n_batch):
                    out[co, oh, ow, n] = out[co, oh, ow, n] + bv


@njit
def _conv2d_backward_params(x, gout, sh, sw, ph, pw, dh, dw, gw, gb):
    """Weight and bias gradients on batch-last arrays; each sums over (oh, ow, n) in order."""
    c_in, h_in, w_in, n_batch = x.shape
    c_out, _, k_h, k_w = gw.shape
    h_out = gout.shape[1]
    w_out = gout.shape[2]
    for co in range(c_out):
        acc_b = 0.0
        for oh in range(h_out):
            for ow in range(w_out):
                for n in range(n_batch):
                    acc_b += gout[co, oh, ow, n]
        gb[co] = acc_b
        for ci in range(c_in):
            for kh in range(k_h):
                off_h = kh * dh - ph
                oh_lo, oh_hi = _valid_range(h_out, h_in, sh, off_h)
                for kw in range(k_w):
                    off_w = kw * dw - pw
                    ow_lo, ow_hi = _valid_range(w_out, w_in, sw, off_w)
                    acc = 0.0
                    for oh in range(oh_lo, oh_hi):
                        ih = oh * sh + off_h
                        for ow in range(ow_lo, ow_hi):
                            iw = ow * sw + off_w
                            for n in range(n_batch):
                                acc += gout[co, oh, ow, n] * x[ci, ih, iw, n]
                    gw[co, ci, kh, kw] = acc


@njit
def _conv2d_backward_input(gout, w, sh, sw, ph, pw, dh, dw, gx):
    """Input gradient on batch-last arrays: each element sums ``gout * w`` over (co, kh, kw) in order."""
    c_in, h_in, w_in, n_batch = gx.shape
    c_out, _, k_h, k_w = w.shape
    h_out = gout.shape[1]
    w_out = gout.shape[2]
    for ci in range(c_in):
        for ih in range(h_in):
            for iw in range(w_in):
                for n in range(n_batch):
                    gx[ci, ih, iw, n] = 0.0
    for co in range(c_out):
        for ci in range(c_in):
            for kh in range(k_h):
                off_h = kh * dh - ph
                oh_lo, oh_hi = _valid_range(h_out, h_in, sh, off_h)
                for kw in range(k_w):
                    off_w = kw * dw - pw
                    ow_lo, ow_hi = _valid_range(w_out, w_in, sw, off_w)
                    wv = w[co, ci, kh, kw]
                    for oh in range(oh_lo, oh_hi):
                        ih = oh * sh + off_h
                        for ow in range(ow_lo, ow_hi):
                            iw = ow * sw + off_w
                            for n in range(n_batch):
                                gx[ci, ih, iw, n] += gout[co, oh, ow, n] * wv


def _batch_last(arr: np.ndarray) -> np.ndarray:
    """(batch, c, h, w) -> contiguous (c, h, w, batch): a copy, so values are unchanged bit for bit."""
    return np.ascontiguousarray(arr.transpose(1, 2, 3, 0))


def _batch_first(arr: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(arr.transpose(3, 0, 1, 2))


def _pair(name: str, value, minimum: int) -> tuple[int, int]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        pair = (int(value), int(value))
    else:
        try:
            items = tuple(value)
        except TypeError:
            raise ValidationError(f"{name} must be an int or a pair of ints, got {value!r}") from None
        if len(items) != 2 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
            raise ValidationError(f"{name} must be an int or a pair of ints, got {value!r}")
        pair = (int(items[0]), int(items[1]))
    if min(pair) < minimum:
        raise ValidationError(f"{name} must be >= {minimum} on both axes, got {pair}")
    return pair


def _as_float64(name: str, arr, ndim: int) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.ndim != ndim:
        raise ValidationError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValidationError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.float64)


def conv2d_output_shape(input_hw, kernel_hw, stride=1, padding=0, dilation=1) -> tuple[int, int]:
    """Output height and width of :func:`conv2d`; raise :class:`ValidationError` when either would be < 1.

    Parameters
    ----------
    input_hw, kernel_hw : pair of int
        Input and kernel (height, width).
    stride, padding, dilation : int or pair of int
        As in :func:`conv2d`.
    """
    sh, sw = _pair("stride", stride, 1)
    ph, pw = _pair("padding", padding, 0)
    dh, dw = _pair("dilation", dilation, 1)
    (h, w), (kh, kw) = input_hw, kernel_hw
    h_out = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    w_out = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if h_out < 1 or w_out < 1:
        raise ValidationError(
            f"input {h}x{w} with padding {(ph, pw)} is smaller than the dilated kernel "
            f"{dh * (kh - 1) + 1}x{dw * (kw - 1) + 1}; pad more or use a smaller kernel or dilation"
        )
    return h_out, w_out


def _check(x, weight, stride, padding, dilation):
    x = _as_float64("input", x, 4)
    weight = _as_float64("weight", weight, 4)
    if weight.shape[1] != x.shape[1]:
        raise ValidationError(
            f"weight expects {weight.shape[1]} input channels but the input has {x.shape[1]} "
            f"(input {x.shape}, weight {weight.shape})"
        )
    if min(weight.shape) < 1:
        raise ValidationError(f"weight must have every dimension >= 1, got {weight.shape}")
    geometry = _pair("stride", stride, 1) + _pair("padding", padding, 0) + _pair("dilation", dilation, 1)
    out_hw = conv2d_output_shape(x.shape[2:], weight.shape[2:], stride, padding, dilation)
    return x, weight, geometry, out_hw


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1) -> np.ndarray:
    """2D convolution (cross-correlation) of a batch, computed in a fixed summation order.

    Parameters
    ----------
    x : array_like, (batch, in_channels, height, width)
        Input; converted to float64. A batch of 0 gives an empty output.
    weight : array_like, (out_channels, in_channels, kernel_h, kernel_w)
        Filters.
    bias : array_like, (out_channels,), optional
        Added after the sum; none means 0.
    stride, padding, dilation : int or pair of int
        Per-axis step (>= 1), zero padding on both sides (>= 0) and kernel dilation (>= 1).

    Returns
    -------
    numpy.ndarray, (batch, out_channels, out_h, out_w), float64

    Raises
    ------
    ValidationError
        Wrong number of dimensions, mismatched channels or bias, stride/dilation < 1, padding < 0, or an
        input too small for the dilated kernel.
    """
    x, weight, (sh, sw, ph, pw, dh, dw), (h_out, w_out) = _check(x, weight, stride, padding, dilation)
    c_out = weight.shape[0]
    if bias is None:
        bias = np.zeros(c_out)
    else:
        bias = _as_float64("bias", bias, 1)
        if bias.shape != (c_out,):
            raise ValidationError(f"bias must have shape ({c_out},) to match the weight, got {bias.shape}")
    out = np.empty((c_out, h_out, w_out, x.shape[0]))
    _conv2d_forward(_batch_last(x), weight, bias, sh, sw, ph, pw, dh, dw, out)
    return _batch_first(out)


@dataclass(frozen=True)
class ConvGrads:
    """Gradients of a scalar loss through :func:`conv2d`.

    Attributes
    ----------
    input : numpy.ndarray or None
        d loss / d x, shape of the input (None when not requested).
    weight : numpy.ndarray
        d loss / d weight.
    bias : numpy.ndarray
        d loss / d bias.
    """

    input: np.ndarray | None
    weight: np.ndarray
    bias: np.ndarray


def conv2d_backward(x, weight, grad_out, stride=1, padding=0, dilation=1, need_input_grad=True) -> ConvGrads:
    """Backward pass of :func:`conv2d`: gradients with respect to input, weight and bias.

    Parameters
    ----------
    x, weight : array_like
        The forward pass's input and weight.
    grad_out : array_like, (batch, out_channels, out_h, out_w)
        d loss / d output.
    stride, padding, dilation : int or pair of int
        The forward pass's geometry.
    need_input_grad : bool
        Skip the input gradient (a first layer does not need it).

    Returns
    -------
    ConvGrads
    """
    x, weight, (sh, sw, ph, pw, dh, dw), (h_out, w_out) = _check(x, weight, stride, padding, dilation)
    grad_out = _as_float64("grad_out", grad_out, 4)
    expected = (x.shape[0], weight.shape[0], h_out, w_out)
    if grad_out.shape != expected:
        raise ValidationError(f"grad_out must have the output's shape {expected}, got {grad_out.shape}")
    x_t = _batch_last(x)
    g_t = _batch_last(grad_out)
    gw = np.empty(weight.shape)
    gb = np.empty(weight.shape[0])
    _conv2d_backward_params(x_t, g_t, sh, sw, ph, pw, dh, dw, gw, gb)
    gx = None
    if need_input_grad:
        gx_t = np.empty(x_t.shape)
        _conv2d_backward_input(g_t, weight, sh, sw, ph, pw, dh, dw, gx_t)
        gx = _batch_first(gx_t)
    return ConvGrads(gx, gw, gb)
