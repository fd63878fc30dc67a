"""asv benchmarks of the model path: the naive conv kernel against a NumPy im2col formulation, the training
proof's wall time and one adaptation step.

The im2col peer (zero-pad, gather patches, one BLAS matrix product) is measured in the same process, so the
``track_*`` ratios (peer time / rfbench time, > 1 means rfbench is faster) do not depend on the machine's
speed. Shapes: ``ci`` is small enough for CI; ``conv1``/``conv2`` are the proof model's two layers on a
batch of 64 windows (3 antennas × 30 subcarriers × 16 frames). The regression gate compares the CI-sized
cases (``ci``, ``conv1``, ``AdaptStep`` at 16x8, the proof); ``conv2`` and ``AdaptStep`` at 64x90 run only with
``RFBENCH_BENCH_LARGE=1`` (``make bench-large``).
"""

from __future__ import annotations

import os
import time
import timeit

import numpy as np

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
# The gate sets RFBENCH_BENCH_TIMER=cpu: time_* then count this process's CPU time, not the time it waited for a
# core that other work held (benchmarks/README.md).
timer = time.process_time if os.environ.get("RFBENCH_BENCH_TIMER") == "cpu" else time.perf_counter

# name: (input shape, weight shape, stride, padding, dilation)
SHAPES = {
    "ci": ((4, 3, 12, 8), (4, 3, 3, 3), 1, 1, 1),
    "conv1": ((64, 3, 30, 16), (4, 3, 3, 3), 2, 1, 1),
}
if LARGE:
    SHAPES["conv2"] = ((64, 4, 15, 8), (8, 4, 3, 3), 2, 1, 1)


def _im2col_forward(x, w, b, stride, padding, dilation):
    n, c, h, wd = x.shape
    co, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ho = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    wo = (wd + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    rows = np.arange(ho)[:, None] * stride + np.arange(kh)[None, :] * dilation
    cols = np.arange(wo)[:, None] * stride + np.arange(kw)[None, :] * dilation
    patches = xp[:, :, rows[:, None, :, None], cols[None, :, None, :]]
    patches = patches.transpose(0, 2, 3, 1, 4, 5).reshape(n * ho * wo, c * kh * kw)
    out = patches @ w.reshape(co, -1).T + b
    return out.reshape(n, ho, wo, co).transpose(0, 3, 1, 2), patches


def _im2col_backward(x, w, gout, stride, padding, dilation):
    """Weight, bias and input gradients through the im2col formulation (col2im by np.add.at)."""
    n, c, h, wd = x.shape
    co, _, kh, kw = w.shape
    _, patches = _im2col_forward(x, w, np.zeros(co), stride, padding, dilation)
    ho, wo = gout.shape[2], gout.shape[3]
    g2 = gout.transpose(0, 2, 3, 1).reshape(-1, co)
    gw = (g2.T @ patches).reshape(w.shape)
    gb = g2.sum(axis=0)
    gcols = (g2 @ w.reshape(co, -1)).reshape(n, ho, wo, c, kh, kw).transpose(0, 3, 1, 2, 4, 5)
    gxp = np.zeros((n, c, h + 2 * padding, wd + 2 * padding))
    rows = np.arange(ho)[:, None] * stride + np.arange(kh)[None, :] * dilation
    cols = np.arange(wo)[:, None] * stride + np.arange(kw)[None, :] * dilation
    np.add.at(gxp, (slice(None), slice(None), rows[:, None, :, None], cols[None, :, None, :]), gcols)
    return gxp[:, :, padding:padding + h, padding:padding + wd], gw, gb


def _best(fn, number=20, repeat=5):
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


class _ConvCase:
    params = list(SHAPES)
    param_names = ["shape"]

    def setup(self, shape):
        try:
            from rfbench.nn.conv import conv2d, conv2d_backward
        except ImportError as exc:
            raise NotImplementedError(f"rfbench.nn.conv is not available at this commit ({exc})")
        self.conv2d, self.conv2d_backward = conv2d, conv2d_backward
        x_shape, w_shape, self.stride, self.padding, self.dilation = SHAPES[shape]
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal(x_shape)
        self.w = rng.standard_normal(w_shape)
        self.b = rng.standard_normal(w_shape[0])
        out = conv2d(self.x, self.w, self.b, self.stride, self.padding, self.dilation)  # compiles (or loads)
        self.gout = rng.standard_normal(out.shape)
        conv2d_backward(self.x, self.w, self.gout, self.stride, self.padding, self.dilation)

    def _forward(self):
        return self.conv2d(self.x, self.w, self.b, self.stride, self.padding, self.dilation)

    def _peer_forward(self):
        return _im2col_forward(self.x, self.w, self.b, self.stride, self.padding, self.dilation)[0]

    def _backward(self):
        return self.conv2d_backward(self.x, self.w, self.gout, self.stride, self.padding, self.dilation)

    def _peer_backward(self):
        return _im2col_backward(self.x, self.w, self.gout, self.stride, self.padding, self.dilation)


class ConvForward(_ConvCase):
    """Forward pass: rfbench's serial kernel vs im2col + BLAS. Acceptance: track_speedup >= 1 on conv1/conv2."""

    def time_rfbench(self, shape):
        self._forward()

    def time_numpy_im2col(self, shape):
        self._peer_forward()

    def peakmem_rfbench(self, shape):
        self._forward()

    def peakmem_numpy_im2col(self, shape):
        self._peer_forward()

    def track_speedup(self, shape):
        """im2col time / rfbench time, measured now in this process (> 1: rfbench is faster)."""
        return _best(self._peer_forward) / _best(self._forward)

    track_speedup.unit = "ratio"


class ConvBackward(_ConvCase):
    """Backward pass (input, weight and bias gradients) vs the im2col formulation."""

    def time_rfbench(self, shape):
        self._backward()

    def time_numpy_im2col(self, shape):
        self._peer_backward()

    def track_speedup(self, shape):
        """im2col backward time / rfbench backward time (> 1: rfbench is faster)."""
        return _best(self._peer_backward, number=5) / _best(self._backward, number=5)

    track_speedup.unit = "ratio"


class Proof:
    """Wall time of ``rfbench proof``'s training run at its baseline settings (JIT warmed in setup)."""

    timeout = 120

    def setup(self):
        try:
            from rfbench.train.proof import run_proof
        except ImportError as exc:
            raise NotImplementedError(f"rfbench.train.proof is not available at this commit ({exc})")
        self.run_proof = run_proof
        run_proof(steps=1, samples=2)

    def time_proof_default_run(self):
        self.run_proof()

    def time_proof_one_step(self):
        self.run_proof(steps=1)


class AdaptStep:
    """One adaptation step (finite-difference gradient + line search) on features (frames × dims)."""

    params = ["16x8"] + (["64x90"] if LARGE else [])
    param_names = ["frames_dims"]
    timeout = 120

    def setup(self, frames_dims):
        try:
            from rfbench.train import adapt as A
        except ImportError as exc:
            raise NotImplementedError(f"rfbench.train.adapt is not available at this commit ({exc})")
        frames, dims = (int(v) for v in frames_dims.split("x"))
        self.A = A
        self.features = A.synthetic_features(frames, dims, 0)
        self.settings = A.AdaptSettings(rank=2, steps=1, prototypes=8)
        A.adapt(self.features[:4, :3], A.AdaptSettings(rank=1, steps=1, prototypes=2))  # compile

    def time_adapt_step(self, frames_dims):
        self.A.adapt(self.features, self.settings)
