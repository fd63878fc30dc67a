"""A small CSI-window → 17-keypoint regressor built from :mod:`rfbench.nn.conv` and :mod:`rfbench.nn.layers`.

Input: CSI amplitude windows ``(batch, antennas, subcarriers, frames)``; output: keypoints
``(batch, keypoints, coords)``. The network::

    conv(k×k, stride s, padding k//2) → ReLU → conv(k×k, stride s, padding k//2) → ReLU
    → tokens (one per remaining subcarrier×frame cell, conv2_channels features each)
    → tokens + single-head attention(tokens) → mean over tokens → linear → keypoints

It is meant for the training proof (a deterministic, checkable optimisation), not for accuracy.
Parameters live in a ``dict`` in the canonical order of :func:`param_shapes`; :func:`init_params` draws them
deterministically from a seed. All arithmetic runs in rfbench's serial kernels (see :mod:`rfbench.nn`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from rfbench._jit import njit
from rfbench.errors import ValidationError
from rfbench.nn import conv as _conv
from rfbench.nn import layers as _layers

__all__ = ["ModelSpec", "param_shapes", "param_count", "init_params", "forward", "loss_and_grads"]


@dataclass(frozen=True)
class ModelSpec:
    """Sizes of the regressor. Every field is a positive int; ``conv_stride`` and ``kernel_size`` ≥ 1."""

    antennas: int = 3
    subcarriers: int = 30
    frames: int = 16
    conv1_channels: int = 4
    conv2_channels: int = 8
    kernel_size: int = 3
    conv_stride: int = 2
    attention_dim: int = 8
    keypoints: int = 17
    coords: int = 3

    def __post_init__(self):
        for name, value in asdict(self).items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValidationError(f"ModelSpec.{name} must be a positive integer, got {value!r}")
        self.feature_map()  # raises when the window is too small for the two convolutions

    @property
    def padding(self) -> int:
        return self.kernel_size // 2

    def feature_map(self) -> tuple[int, int, int, int]:
        """(h1, w1, h2, w2): spatial sizes after the first and the second convolution."""
        k, s, p = self.kernel_size, self.conv_stride, self.padding
        h1, w1 = _conv.conv2d_output_shape((self.subcarriers, self.frames), (k, k), s, p, 1)
        h2, w2 = _conv.conv2d_output_shape((h1, w1), (k, k), s, p, 1)
        return h1, w1, h2, w2

    @property
    def tokens(self) -> int:
        _, _, h2, w2 = self.feature_map()
        return h2 * w2


def param_shapes(spec: ModelSpec) -> dict[str, tuple[int, ...]]:
    """Parameter names and shapes in the canonical order (the order the proof hashes them in)."""
    k, c1, c2, d = spec.kernel_size, spec.conv1_channels, spec.conv2_channels, spec.attention_dim
    return {
        "conv1.weight": (c1, spec.antennas, k, k),
        "conv1.bias": (c1,),
        "conv2.weight": (c2, c1, k, k),
        "conv2.bias": (c2,),
        "attn.wq": (c2, d), "attn.bq": (d,),
        "attn.wk": (c2, d), "attn.bk": (d,),
        "attn.wv": (c2, d), "attn.bv": (d,),
        "attn.wo": (d, c2), "attn.bo": (c2,),
        "head.weight": (c2, spec.keypoints * spec.coords),
        "head.bias": (spec.keypoints * spec.coords,),
    }


def param_count(spec: ModelSpec) -> int:
    """Number of scalar parameters."""
    return sum(math.prod(s) for s in param_shapes(spec).values())


def _fans(shape: tuple[int, ...]) -> tuple[int, int]:
    if len(shape) == 4:  # conv (out, in, kh, kw)
        return shape[1] * shape[2] * shape[3], shape[0] * shape[2] * shape[3]
    return shape[0], shape[1]


@njit
def _symmetric(u, bound, out):
    """Map uniforms in [0, 1) to [-bound, bound): ``(2u - 1) * bound``."""
    for i in range(u.shape[0]):
        out[i] = (2.0 * u[i] - 1.0) * bound


def init_params(spec: ModelSpec, seed: int) -> dict[str, np.ndarray]:
    """Deterministic Glorot-uniform weights and zero biases from ``seed``.

    Uniforms come from NumPy's PCG64 stream (``Generator.random``: 53 random bits times 2⁻⁵³, exact), drawn
    for the weights in canonical order; each is mapped to ``(2u - 1) * sqrt(6 / (fan_in + fan_out))``.

    Parameters
    ----------
    spec : ModelSpec
    seed : int
        Any non-negative integer.
    """
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValidationError(f"seed must be a non-negative integer, got {seed!r}")
    rng = np.random.Generator(np.random.PCG64(int(seed)))
    params = {}
    for name, shape in param_shapes(spec).items():
        if len(shape) == 1:  # the biases
            params[name] = np.zeros(shape)
            continue
        fan_in, fan_out = _fans(shape)
        u = rng.random(math.prod(shape))
        out = np.empty(u.shape)
        _symmetric(u, math.sqrt(6.0 / (fan_in + fan_out)), out)
        params[name] = out.reshape(shape)
    return params


@njit
def _relu(x, out):
    """``max(x, 0)`` that keeps NaN (``x <= 0`` is False for NaN)."""
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = 0.0 if v <= 0.0 else v


@njit
def _relu_backward(pre, gout, gx):
    for i in range(pre.shape[0]):
        gx[i] = gout[i] if pre[i] > 0.0 else 0.0


@njit
def _residual_mean(tokens, attended, pooled):
    """``pooled[b, c] = (sum over t of (tokens + attended)[b, t, c]) / n_tokens``, t in order."""
    n_b, n_t, n_c = tokens.shape
    for b in range(n_b):
        for c in range(n_c):
            acc = 0.0
            for t in range(n_t):
                acc += tokens[b, t, c] + attended[b, t, c]
            pooled[b, c] = acc / n_t


@njit
def _mse(pred, target):
    """Mean of squared differences, summed in flat order."""
    acc = 0.0
    for i in range(pred.shape[0]):
        d = pred[i] - target[i]
        acc += d * d
    return acc / pred.shape[0]


@njit
def _mse_backward(pred, target, grad):
    scale = 2.0 / pred.shape[0]
    for i in range(pred.shape[0]):
        grad[i] = (pred[i] - target[i]) * scale


def _relu_arr(x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape)
    _relu(x.reshape(-1), out.reshape(-1))
    return out


def _check_params(params, spec: ModelSpec) -> dict[str, np.ndarray]:
    shapes = param_shapes(spec)
    if not isinstance(params, dict) or list(params) != list(shapes):
        names = list(params) if isinstance(params, dict) else type(params).__name__
        raise ValidationError(f"model parameters must be a dict with keys {list(shapes)} in that order, got {names}")
    out = {}
    for name, shape in shapes.items():
        arr = np.ascontiguousarray(params[name], dtype=np.float64)
        if arr.shape != shape:
            raise ValidationError(f"parameter {name} must have shape {shape}, got {arr.shape}")
        out[name] = arr
    return out


def _check_input(x, spec: ModelSpec) -> np.ndarray:
    x = np.asarray(x)
    expected = (spec.antennas, spec.subcarriers, spec.frames)
    if x.ndim != 4 or x.shape[1:] != expected:
        raise ValidationError(f"model input must have shape (batch, {', '.join(map(str, expected))}) "
                              f"(antennas, subcarriers, frames), got {x.shape}")
    if not np.issubdtype(x.dtype, np.floating):
        raise ValidationError(f"model input must be floating point, got dtype {x.dtype}")
    return np.ascontiguousarray(x, dtype=np.float64)


def _forward(p: dict, x: np.ndarray, spec: ModelSpec) -> dict:
    s, pad = spec.conv_stride, spec.padding
    pre1 = _conv.conv2d(x, p["conv1.weight"], p["conv1.bias"], s, pad)
    act1 = _relu_arr(pre1)
    pre2 = _conv.conv2d(act1, p["conv2.weight"], p["conv2.bias"], s, pad)
    act2 = _relu_arr(pre2)
    n_b, n_c = act2.shape[:2]
    tokens = np.ascontiguousarray(act2.reshape(n_b, n_c, -1).transpose(0, 2, 1))  # (batch, tokens, channels)
    attn = _layers.AttentionParams(**{n: p["attn." + n] for n in _layers.ATTENTION_PARAM_NAMES})
    cache = _layers._attention_forward(tokens, attn)
    pooled = np.empty((n_b, n_c))
    _residual_mean(tokens, cache["out"], pooled)
    pred = _layers.linear(pooled, p["head.weight"], p["head.bias"])
    return {"pre1": pre1, "act1": act1, "pre2": pre2, "tokens": tokens, "attn": attn, "attn_cache": cache,
            "pooled": pooled, "pred": pred.reshape(n_b, spec.keypoints, spec.coords)}


def forward(params: dict, x, spec: ModelSpec) -> np.ndarray:
    """Predicted keypoints ``(batch, keypoints, coords)`` for CSI windows ``x``.

    Parameters
    ----------
    params : dict
        As returned by :func:`init_params` (names and shapes of :func:`param_shapes`).
    x : array_like, (batch, antennas, subcarriers, frames), floating point
    spec : ModelSpec
    """
    return _forward(_check_params(params, spec), _check_input(x, spec), spec)["pred"]


def loss_and_grads(params: dict, x, target, spec: ModelSpec) -> tuple[float, dict[str, np.ndarray]]:
    """Mean squared error of :func:`forward` against ``target`` and its gradient for every parameter.

    Parameters
    ----------
    params, x, spec
        As in :func:`forward`.
    target : array_like, (batch, keypoints, coords)

    Returns
    -------
    (float, dict)
        The loss and the gradients, keyed and ordered like ``params``.
    """
    p, x = _check_params(params, spec), _check_input(x, spec)
    target = np.ascontiguousarray(target, dtype=np.float64)
    if target.shape != (x.shape[0], spec.keypoints, spec.coords):
        raise ValidationError(f"target must have shape {(x.shape[0], spec.keypoints, spec.coords)}, "
                              f"got {target.shape}")
    if x.shape[0] == 0:
        raise ValidationError("the batch is empty: the loss needs at least one sample")
    f = _forward(p, x, spec)
    pred = f["pred"].reshape(-1)
    loss = float(_mse(pred, target.reshape(-1)))
    g_pred = np.empty(pred.shape)
    _mse_backward(pred, target.reshape(-1), g_pred)
    n_b, n_t, n_c = f["tokens"].shape
    grads = {}
    g_pooled, grads["head.weight"], grads["head.bias"] = _layers.linear_backward(
        f["pooled"], p["head.weight"], g_pred.reshape(n_b, -1))
    # pooled = mean over tokens of (tokens + attention(tokens)): each token gets g_pooled / n_tokens.
    g_sum = np.ascontiguousarray(np.broadcast_to((g_pooled / n_t)[:, None, :], (n_b, n_t, n_c)))
    g_tokens_attn, g_attn = _layers._attention_backward(f["tokens"], f["attn"], f["attn_cache"], g_sum)
    g_tokens = g_sum + g_tokens_attn
    g_act2 = np.ascontiguousarray(g_tokens.transpose(0, 2, 1)).reshape(f["pre2"].shape)
    g_pre2 = np.empty(g_act2.shape)
    _relu_backward(f["pre2"].reshape(-1), g_act2.reshape(-1), g_pre2.reshape(-1))
    s, pad = spec.conv_stride, spec.padding
    c2 = _conv.conv2d_backward(f["act1"], p["conv2.weight"], g_pre2, s, pad)
    g_pre1 = np.empty(c2.input.shape)
    _relu_backward(f["pre1"].reshape(-1), c2.input.reshape(-1), g_pre1.reshape(-1))
    c1 = _conv.conv2d_backward(x, p["conv1.weight"], g_pre1, s, pad, need_input_grad=False)
    grads["conv1.weight"], grads["conv1.bias"] = c1.weight, c1.bias
    grads["conv2.weight"], grads["conv2.bias"] = c2.weight, c2.bias
    for name in _layers.ATTENTION_PARAM_NAMES:
        grads["attn." + name] = g_attn[name]
    return loss, {name: grads[name] for name in p}
