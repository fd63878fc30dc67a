"""Layers for the pose regressor: an affine map, softmax along an axis, and single-head attention.

Everything is float64 and computed by serial Numba loops in a fixed, documented summation order, with no
BLAS (NumPy's matrix product picks CPU-specific kernels whose rounding differs between machines) and no
libm transcendental function: :func:`exp` is rfbench's own, built from ``+ - * /`` and an exact power-of-two
scaling, so it returns the same bits on every x86-64 CPU (glibc's ``exp`` chooses an FMA or a non-FMA
variant at run time, and versions differ in the last bit).

Summation orders (each output element, terms added left to right starting from ``0.0``):

- ``linear``: ``out[m, o] = (sum over i of x[m, i]*w[i, o]) + b[o]``; its weight and bias gradients sum over
  rows ``m`` in order, its input gradient over ``o`` in order.
- ``softmax``: the row maximum is subtracted, ``exp`` taken, the row summed left to right, each term divided
  by the sum.
- attention: scores sum over the key dimension in order, then multiply by ``1/sqrt(d_k)``; the context sums
  over keys ``j`` in order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rfbench._jit import njit
from rfbench.errors import ValidationError

__all__ = [
    "exp",
    "softmax",
    "linear",
    "linear_backward",
    "AttentionParams",
    "attention",
    "attention_backward",
    "ATTENTION_PARAM_NAMES",
]

# Cody-Waite split of ln 2: LN2_HI has its low 32 bits zero, so k*LN2_HI is exact for |k| < 2**20.
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e00
_EXP_OVERFLOW = 709.782712893384  # above: exp overflows
_EXP_UNDERFLOW = -745.1332191019412  # below: exp rounds to 0
# 1/n! for n = 0..13, written out so the coefficients do not depend on any library routine.
_INV_FACT = (
    1.0, 1.0, 0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0, 1.0 / 40320.0,
    1.0 / 362880.0, 1.0 / 3628800.0, 1.0 / 39916800.0, 1.0 / 479001600.0, 1.0 / 6227020800.0,
)
_C2, _C3, _C4, _C5, _C6, _C7 = _INV_FACT[2:8]
_C8, _C9, _C10, _C11, _C12, _C13 = _INV_FACT[8:14]


@njit
def _exp(x):
    """exp(x) from + - * / and ldexp only: reduce x = k*ln2 + r with |r| <= ln2/2, Taylor to r**13, scale.

    The Taylor remainder is below r**14/14! < 5e-18 relative; the rounding error is a couple of ulp.
    """
    if x != x:
        return x
    if x > _EXP_OVERFLOW:
        return np.inf
    if x < _EXP_UNDERFLOW:
        return 0.0
    k = math.floor(x * _INV_LN2 + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = _C13
    p = p * r + _C12
    p = p * r + _C11
    p = p * r + _C10
    p = p * r + _C9
    p = p * r + _C8
    p = p * r + _C7
    p = p * r + _C6
    p = p * r + _C5
    p = p * r + _C4
    p = p * r + _C3
    p = p * r + _C2
    p = p * r + 1.0
    p = p * r + 1.0
    return math.ldexp(p, k)


@njit
def _exp_array(x, out):
    for i in range(x.shape[0]):
        out[i] = _exp(x[i])


@njit
def _softmax_rows(x, out):
    """Softmax of each row of a 2-D array: subtract the row max, exp, divide by the left-to-right sum.

    A row holding NaN or +inf, or only -inf, becomes NaN (there is no finite logit to normalise).
    """
    m_rows, k = x.shape
    for m in range(m_rows):
        top = -np.inf
        has_nan = False
        for j in range(k):
            v = x[m, j]
            if v != v:
                has_nan = True
            elif v > top:
                top = v
        if has_nan or top == np.inf or top == -np.inf:
            for j in range(k):
                out[m, j] = np.nan
            continue
        total = 0.0
        for j in range(k):
            e = _exp(x[m, j] - top)
            out[m, j] = e
            total += e
        for j in range(k):
            out[m, j] = out[m, j] / total


@njit
def _softmax_rows_backward(y, gy, gx):
    """Gradient through row softmax ``y``: ``gx = y * (gy - sum_j gy_j * y_j)``, the sum left to right."""
    m_rows, k = y.shape
    for m in range(m_rows):
        dot = 0.0
        for j in range(k):
            dot += gy[m, j] * y[m, j]
        for j in range(k):
            gx[m, j] = y[m, j] * (gy[m, j] - dot)


@njit
def _aligned(n):
    """A float64 buffer of ``n`` elements (uninitialised) starting on a 64-byte boundary.

    The kernels below add their sums up in such a buffer, then write them out: summed in the output array
    itself, a row that starts 16 bytes past a 32-byte boundary (as a large NumPy array often does, by where
    malloc put it in that process) split every vector load and store of the sums across two cache lines, and
    a kernel took twice as long in one process as in another. The order of every sum is unchanged."""
    buf = np.empty(n + 8)
    start = ((64 - buf.ctypes.data % 64) % 64) // 8
    return buf[start:start + n]


@njit
def _linear(x, w, b, out):
    """``out[m, o] = (sum_i x[m, i] * w[i, o]) + b[o]``, each sum over i in order (a row summed in
    :func:`_aligned`)."""
    n_rows, n_in = x.shape
    n_out = w.shape[1]
    acc = _aligned(n_out)
    for m in range(n_rows):
        for o in range(n_out):
            acc[o] = 0.0
        for i in range(n_in):
            xv = x[m, i]
            for o in range(n_out):
                acc[o] += xv * w[i, o]
        for o in range(n_out):
            out[m, o] = acc[o] + b[o]


@njit
def _linear_backward(x, w, gout, need_gx, gx, gw, gb):
    """Gradients of :func:`_linear`: gw and gb sum over rows m in order (in :func:`_aligned`), gx over outputs
    o in order."""
    n_rows, n_in = x.shape
    n_out = w.shape[1]
    acc = _aligned(n_in * n_out)
    for q in range(n_in * n_out):
        acc[q] = 0.0
    for o in range(n_out):
        gb[o] = 0.0
    for m in range(n_rows):
        for i in range(n_in):
            xv = x[m, i]
            row = i * n_out
            for o in range(n_out):
                acc[row + o] += xv * gout[m, o]
        for o in range(n_out):
            gb[o] += gout[m, o]
    for i in range(n_in):
        for o in range(n_out):
            gw[i, o] = acc[i * n_out + o]
    if need_gx:
        for m in range(n_rows):
            for i in range(n_in):
                acc = 0.0
                for o in range(n_out):
                    acc += gout[m, o] * w[i, o]
                gx[m, i] = acc


@njit
def _attention_scores(q, k, scale, s):
    """``s[b, i, j] = (sum_d q[b, i, d] * k[b, j, d]) * scale``."""
    n_b, n_q, d_k = q.shape
    n_k = k.shape[1]
    for b in range(n_b):
        for i in range(n_q):
            for j in range(n_k):
                acc = 0.0
                for d in range(d_k):
                    acc += q[b, i, d] * k[b, j, d]
                s[b, i, j] = acc * scale


@njit
def _attention_context(a, v, c):
    """``c[b, i, e] = sum_j a[b, i, j] * v[b, j, e]``, the sum over j in order (in :func:`_aligned`)."""
    n_b, n_q, n_k = a.shape
    d_v = v.shape[2]
    acc = _aligned(d_v)
    for b in range(n_b):
        for i in range(n_q):
            for e in range(d_v):
                acc[e] = 0.0
            for j in range(n_k):
                aw = a[b, i, j]
                for e in range(d_v):
                    acc[e] += aw * v[b, j, e]
            for e in range(d_v):
                c[b, i, e] = acc[e]


@njit
def _attention_context_backward(a, v, gc, ga, gv):
    """Gradients of :func:`_attention_context`: ga sums over e in order, gv over queries i in order (in
    :func:`_aligned`)."""
    n_b, n_q, n_k = a.shape
    d_v = v.shape[2]
    acc_v = _aligned(n_k * d_v)
    for b in range(n_b):
        for i in range(n_q):
            for j in range(n_k):
                acc = 0.0
                for e in range(d_v):
                    acc += gc[b, i, e] * v[b, j, e]
                ga[b, i, j] = acc
        for q in range(n_k * d_v):
            acc_v[q] = 0.0
        for i in range(n_q):
            for j in range(n_k):
                aw = a[b, i, j]
                row = j * d_v
                for e in range(d_v):
                    acc_v[row + e] += aw * gc[b, i, e]
        for j in range(n_k):
            for e in range(d_v):
                gv[b, j, e] = acc_v[j * d_v + e]


@njit
def _attention_scores_backward(q, k, gs, scale, gq, gk):
    """Gradients of :func:`_attention_scores`: gq sums over keys j in order, gk over queries i in order (both
    in :func:`_aligned`)."""
    n_b, n_q, d_k = q.shape
    n_k = k.shape[1]
    acc_q = _aligned(d_k)
    acc_k = _aligned(n_k * d_k)
    for b in range(n_b):
        for i in range(n_q):
            for d in range(d_k):
                acc_q[d] = 0.0
            for j in range(n_k):
                g = gs[b, i, j] * scale
                for d in range(d_k):
                    acc_q[d] += g * k[b, j, d]
            for d in range(d_k):
                gq[b, i, d] = acc_q[d]
        for t in range(n_k * d_k):
            acc_k[t] = 0.0
        for i in range(n_q):
            for j in range(n_k):
                g = gs[b, i, j] * scale
                row = j * d_k
                for d in range(d_k):
                    acc_k[row + d] += g * q[b, i, d]
        for j in range(n_k):
            for d in range(d_k):
                gk[b, j, d] = acc_k[j * d_k + d]


# ---------------------------------------------------------------------------------------------- wrappers


def _float64(name: str, arr) -> np.ndarray:
    arr = np.asarray(arr)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValidationError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    return arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)  # ascontiguousarray makes 0-d 1-d


def exp(x) -> np.ndarray:
    """Element-wise exponential, identical bits on every machine (see the module docstring).

    Parameters
    ----------
    x : array_like
        Real values; NaN stays NaN, above ~709.78 gives inf, below ~-745.13 gives 0.

    Returns
    -------
    numpy.ndarray, float64, the shape of ``x``
    """
    x = _float64("x", x)
    out = np.empty(x.size)
    _exp_array(x.reshape(-1), out)
    return out.reshape(x.shape)


def softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis`` (the maximum is subtracted before ``exp``).

    Parameters
    ----------
    x : array_like
        Real values, any number of dimensions (at least 1).
    axis : int
        The axis that sums to 1; negative values count from the end.

    Returns
    -------
    numpy.ndarray, float64, the shape of ``x``
        A slice holding NaN or +inf, or only -inf, is all NaN.

    Raises
    ------
    ValidationError
        ``x`` is 0-dimensional or ``axis`` is out of range.
    """
    x = _float64("x", x)
    if x.ndim == 0:
        raise ValidationError("softmax needs an array with at least one dimension, got a scalar")
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool) or not -x.ndim <= axis < x.ndim:
        raise ValidationError(
            f"axis {axis!r} is out of range for an array of {x.ndim} dimension(s); use -{x.ndim}..{x.ndim - 1}"
        )
    moved = np.ascontiguousarray(np.moveaxis(x, axis, -1))
    rows = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, moved.shape[-1])
    out = np.empty(rows.shape)
    _softmax_rows(rows, out)
    return np.ascontiguousarray(np.moveaxis(out.reshape(moved.shape), -1, axis))


def linear(x, weight, bias) -> np.ndarray:
    """Affine map of the last axis: ``x @ weight + bias`` summed in order, without BLAS.

    Parameters
    ----------
    x : array_like, (..., in_features)
    weight : array_like, (in_features, out_features)
    bias : array_like, (out_features,)

    Returns
    -------
    numpy.ndarray, (..., out_features), float64
    """
    x, weight, bias = _float64("x", x), _float64("weight", weight), _float64("bias", bias)
    _check_linear("weight", "bias", x.shape[-1] if x.ndim else None, weight, bias)
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty((rows.shape[0], weight.shape[1]))
    _linear(rows, weight, bias, out)
    return out.reshape(x.shape[:-1] + (weight.shape[1],))


def linear_backward(x, weight, grad_out, need_input_grad: bool = True):
    """Gradients of :func:`linear`: ``(grad_x or None, grad_weight, grad_bias)``.

    Parameters
    ----------
    x : array_like, (..., in_features)
        The forward input.
    weight : array_like, (in_features, out_features)
    grad_out : array_like, (..., out_features)
    need_input_grad : bool
        Compute the input gradient (skip it for a first layer).
    """
    x, weight, grad_out = _float64("x", x), _float64("weight", weight), _float64("grad_out", grad_out)
    _check_linear("weight", None, x.shape[-1] if x.ndim else None, weight, None)
    if grad_out.shape != x.shape[:-1] + (weight.shape[1],):
        raise ValidationError(f"grad_out must have shape {x.shape[:-1] + (weight.shape[1],)}, got {grad_out.shape}")
    rows = x.reshape(-1, x.shape[-1])
    gx = np.empty(rows.shape)
    gw = np.empty(weight.shape)
    gb = np.empty(weight.shape[1])
    _linear_backward(rows, weight, grad_out.reshape(-1, weight.shape[1]), need_input_grad, gx, gw, gb)
    return (gx.reshape(x.shape) if need_input_grad else None), gw, gb


def _check_linear(w_name, b_name, n_in, weight, bias):
    if n_in is None:
        raise ValidationError("the input must have at least one dimension (its last axis holds the features)")
    if weight.ndim != 2 or weight.shape[0] != n_in:
        raise ValidationError(f"{w_name} must have shape ({n_in}, out_features) for inputs with {n_in} "
                              f"features, got {weight.shape}")
    if bias is not None and bias.shape != (weight.shape[1],):
        raise ValidationError(f"{b_name} must have shape ({weight.shape[1]},) to match {w_name} "
                              f"{weight.shape}, got {bias.shape}")


#: Names of the attention parameters, in the canonical order.
ATTENTION_PARAM_NAMES = ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo")


@dataclass(frozen=True)
class AttentionParams:
    """Weights of single-head attention. Shapes: ``wq``/``wk`` (d_in, d_k), ``wv`` (d_in, d_v),
    ``wo`` (d_v, d_out), biases one per output column. Construct with :meth:`checked`."""

    wq: np.ndarray
    bq: np.ndarray
    wk: np.ndarray
    bk: np.ndarray
    wv: np.ndarray
    bv: np.ndarray
    wo: np.ndarray
    bo: np.ndarray

    @classmethod
    def checked(cls, d_in: int | None = None, **arrays) -> "AttentionParams":
        """Validate shapes (and ``d_in`` when given) and return float64 contiguous parameters.

        Raises
        ------
        ValidationError
            A missing or unknown name, or a weight or bias of the wrong shape; the message names it.
        """
        missing = [n for n in ATTENTION_PARAM_NAMES if n not in arrays]
        unknown = sorted(set(arrays) - set(ATTENTION_PARAM_NAMES))
        if missing or unknown:
            raise ValidationError(f"attention parameters: missing {missing}, unknown {unknown}; "
                                  f"expected exactly {list(ATTENTION_PARAM_NAMES)}")
        p = {n: _float64(n, arrays[n]) for n in ATTENTION_PARAM_NAMES}
        for name in ("wq", "wk", "wv", "wo"):
            if p[name].ndim != 2 or min(p[name].shape) < 1:
                raise ValidationError(f"attention {name} must be a non-empty 2-D matrix, got shape {p[name].shape}")
        d_in = p["wq"].shape[0] if d_in is None else d_in
        if p["wq"].shape[0] != d_in:
            raise ValidationError(f"attention wq must have {d_in} rows (the input features), got {p['wq'].shape}")
        if p["wk"].shape != p["wq"].shape:
            raise ValidationError(f"attention wk must have wq's shape {p['wq'].shape}, got {p['wk'].shape}")
        if p["wv"].shape[0] != d_in:
            raise ValidationError(f"attention wv must have {d_in} rows (the input features), got {p['wv'].shape}")
        if p["wo"].shape[0] != p["wv"].shape[1]:
            raise ValidationError(f"attention wo must have {p['wv'].shape[1]} rows (wv's columns), "
                                  f"got {p['wo'].shape}")
        for b_name, w_name in (("bq", "wq"), ("bk", "wk"), ("bv", "wv"), ("bo", "wo")):
            if p[b_name].shape != (p[w_name].shape[1],):
                raise ValidationError(f"attention {b_name} must have shape ({p[w_name].shape[1]},) to match "
                                      f"{w_name} {p[w_name].shape}, got {p[b_name].shape}")
        return cls(**p)

    def as_dict(self) -> dict:
        """The parameters by name, in :data:`ATTENTION_PARAM_NAMES` order."""
        return {n: getattr(self, n) for n in ATTENTION_PARAM_NAMES}


def _coerce_params(params, d_in) -> AttentionParams:
    if isinstance(params, AttentionParams):
        params = params.as_dict()
    if not isinstance(params, dict):
        raise ValidationError("attention parameters must be an AttentionParams or a dict of arrays")
    return AttentionParams.checked(d_in=d_in, **params)


def _tokens(x) -> tuple[np.ndarray, bool]:
    x = _float64("x", x)
    if x.ndim == 2:
        return x[None], True
    if x.ndim != 3:
        raise ValidationError(f"attention input must be (tokens, features) or (batch, tokens, features), "
                              f"got shape {x.shape}")
    return x, False


def _attention_forward(x: np.ndarray, p: AttentionParams) -> dict:
    """All intermediate arrays of the forward pass (used again by the backward pass)."""
    n_b, n_t, d_in = x.shape
    rows = x.reshape(n_b * n_t, d_in)
    d_k, d_v, d_out = p.wq.shape[1], p.wv.shape[1], p.wo.shape[1]
    q, k, v = np.empty((n_b * n_t, d_k)), np.empty((n_b * n_t, d_k)), np.empty((n_b * n_t, d_v))
    _linear(rows, p.wq, p.bq, q)
    _linear(rows, p.wk, p.bk, k)
    _linear(rows, p.wv, p.bv, v)
    q, k, v = q.reshape(n_b, n_t, d_k), k.reshape(n_b, n_t, d_k), v.reshape(n_b, n_t, d_v)
    scale = 1.0 / math.sqrt(d_k)
    scores = np.empty((n_b, n_t, n_t))
    _attention_scores(q, k, scale, scores)
    weights = np.empty((n_b * n_t, n_t))
    _softmax_rows(scores.reshape(n_b * n_t, n_t), weights)
    weights = weights.reshape(n_b, n_t, n_t)
    context = np.empty((n_b, n_t, d_v))
    _attention_context(weights, v, context)
    out = np.empty((n_b * n_t, d_out))
    _linear(context.reshape(n_b * n_t, d_v), p.wo, p.bo, out)
    return {"q": q, "k": k, "v": v, "scale": scale, "weights": weights, "context": context,
            "out": out.reshape(n_b, n_t, d_out)}


def attention(x, params, return_weights: bool = False):
    """Single-head scaled dot-product attention with Q/K/V/output projections.

    ``Q = x wq + bq``, ``K = x wk + bk``, ``V = x wv + bv``; ``A = softmax(Q Kᵀ / sqrt(d_k))`` over keys;
    ``out = (A V) wo + bo``. Every token attends to every token of its own sequence.

    Parameters
    ----------
    x : array_like, (batch, tokens, d_in) or (tokens, d_in)
    params : AttentionParams or dict
        ``wq``, ``bq``, ``wk``, ``bk``, ``wv``, ``bv``, ``wo``, ``bo``.
    return_weights : bool
        Also return the attention weights ``A`` (batch, tokens, tokens).

    Raises
    ------
    ValidationError
        A mis-shaped input, weight or bias (the message names which).
    """
    x, single = _tokens(x)
    p = _coerce_params(params, x.shape[2])
    cache = _attention_forward(x, p)
    out, weights = cache["out"], cache["weights"]
    if single:
        out, weights = out[0], weights[0]
    return (out, weights) if return_weights else out


def attention_backward(x, params, grad_out):
    """Gradients of :func:`attention`: ``(grad_x, grads)`` with ``grads`` a dict by parameter name.

    Parameters
    ----------
    x : array_like, (batch, tokens, d_in) or (tokens, d_in)
    params : AttentionParams or dict
    grad_out : array_like, the shape of the attention output
    """
    x, single = _tokens(x)
    p = _coerce_params(params, x.shape[2])
    grad_out = _float64("grad_out", grad_out)
    if single:
        grad_out = grad_out[None] if grad_out.ndim == 2 else grad_out
    expected = (x.shape[0], x.shape[1], p.wo.shape[1])
    if grad_out.shape != expected:
        raise ValidationError(f"grad_out must have the attention output's shape {expected}, got {grad_out.shape}")
    gx, grads = _attention_backward(x, p, _attention_forward(x, p), grad_out)
    return (gx[0] if single else gx), grads


def _attention_backward(x, p: AttentionParams, cache: dict, grad_out: np.ndarray):
    n_b, n_t, d_in = x.shape
    d_k, d_v, d_out = p.wq.shape[1], p.wv.shape[1], p.wo.shape[1]
    rows = x.reshape(n_b * n_t, d_in)
    grads = {}
    g_context = np.empty((n_b * n_t, d_v))
    grads["wo"], grads["bo"] = np.empty(p.wo.shape), np.empty(d_out)
    _linear_backward(cache["context"].reshape(n_b * n_t, d_v), p.wo, grad_out.reshape(n_b * n_t, d_out),
                     True, g_context, grads["wo"], grads["bo"])
    g_weights = np.empty((n_b, n_t, n_t))
    g_v = np.empty((n_b, n_t, d_v))
    _attention_context_backward(cache["weights"], cache["v"], g_context.reshape(n_b, n_t, d_v), g_weights, g_v)
    g_scores = np.empty((n_b * n_t, n_t))
    _softmax_rows_backward(cache["weights"].reshape(n_b * n_t, n_t), g_weights.reshape(n_b * n_t, n_t), g_scores)
    g_q, g_k = np.empty((n_b, n_t, d_k)), np.empty((n_b, n_t, d_k))
    _attention_scores_backward(cache["q"], cache["k"], g_scores.reshape(n_b, n_t, n_t), cache["scale"], g_q, g_k)
    gx = np.zeros((n_b * n_t, d_in))
    part = np.empty((n_b * n_t, d_in))
    for name, g in (("q", g_q), ("k", g_k), ("v", g_v)):
        w = getattr(p, "w" + name)
        grads["w" + name], grads["b" + name] = np.empty(w.shape), np.empty(w.shape[1])
        _linear_backward(rows, w, g.reshape(n_b * n_t, w.shape[1]), True, part, grads["w" + name],
                         grads["b" + name])
        gx += part  # element-wise, in the fixed order q, k, v
    return gx.reshape(n_b, n_t, d_in), {n: grads[n] for n in ATTENTION_PARAM_NAMES}
