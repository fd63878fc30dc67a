"""asv benchmarks of the model path: the naive conv kernel against a NumPy im2col formulation, the training
proof's wall time and one adaptation step.

The im2col peer (zero-pad, gather patches, one BLAS matrix product) is measured in the same process, so the
``track_*`` ratios (peer time / rfbench time, > 1 means rfbench is faster) do not depend on the machine's
speed. Shapes: ``ci`` is small enough for CI; ``conv1``/``conv2`` are the proof model's two layers on a
batch of 64 windows (3 antennas × 30 subcarriers × 16 frames). The regression gate compares the CI-sized
cases (``ci``, ``conv1``, ``AdaptStep`` at 16x8, the proof); ``conv2`` and ``AdaptStep`` at 64x90 run only with
``RFBENCH_BENCH_LARGE=1`` (``make bench-large``).

``ConvKernels``, ``LayerKernels``, ``ModelKernels`` and ``TrainKernels`` time every Numba kernel of the model
path alone, each called as the public code calls it (its arguments recorded from one public call in setup,
at a size where one call takes 0.05-5 ms); ``KERNELS`` names which benchmark times which kernel.
"""

from __future__ import annotations

import os
import time
import timeit

import numpy as np

from .common import cached, call_recorded, record_kernel_calls

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
# The gate sets RFBENCH_BENCH_TIMER=cpu: time_* then count this process's CPU time, not the time it waited for a
# core that other work held (benchmarks/README.md).
timer = time.process_time if os.environ.get("RFBENCH_BENCH_TIMER") == "cpu" else time.perf_counter

#: The Numba kernel each benchmark below times alone (benchmarks/README.md, "One kernel, one benchmark").
KERNELS = {
    "rfbench.nn.conv._conv2d_forward": "ConvKernels.time_conv2d_forward",
    "rfbench.nn.conv._conv2d_backward_params": "ConvKernels.time_conv2d_backward_params",
    "rfbench.nn.conv._conv2d_backward_input": "ConvKernels.time_conv2d_backward_input",
    "rfbench.nn.layers._exp_array": "LayerKernels.time_exp_array",
    "rfbench.nn.layers._softmax_rows": "LayerKernels.time_softmax_rows",
    "rfbench.nn.layers._softmax_rows_backward": "LayerKernels.time_softmax_rows_backward",
    "rfbench.nn.layers._linear": "LayerKernels.time_linear",
    "rfbench.nn.layers._linear_backward": "LayerKernels.time_linear_backward",
    "rfbench.nn.layers._attention_scores": "LayerKernels.time_attention_scores",
    "rfbench.nn.layers._attention_context": "LayerKernels.time_attention_context",
    "rfbench.nn.layers._attention_scores_backward": "LayerKernels.time_attention_scores_backward",
    "rfbench.nn.layers._attention_context_backward": "LayerKernels.time_attention_context_backward",
    "rfbench.nn.model._symmetric": "ModelKernels.time_symmetric",
    "rfbench.nn.model._relu": "ModelKernels.time_relu",
    "rfbench.nn.model._relu_backward": "ModelKernels.time_relu_backward",
    "rfbench.nn.model._residual_mean": "ModelKernels.time_residual_mean",
    "rfbench.nn.model._mse": "ModelKernels.time_mse",
    "rfbench.nn.model._mse_backward": "ModelKernels.time_mse_backward",
    "rfbench.train.proof._synthetic": "TrainKernels.time_proof_synthetic",
    "rfbench.train.proof._sgd_step": "TrainKernels.time_sgd_step",
    "rfbench.train.adapt._apply": "TrainKernels.time_adapter_apply",
    "rfbench.train.adapt._unit_rows": "TrainKernels.time_unit_rows",
    "rfbench.train.adapt._temporal_contrastive": "TrainKernels.time_temporal_contrastive",
    "rfbench.train.adapt._entropy": "TrainKernels.time_entropy",
    "rfbench.train.adapt._objective": "TrainKernels.time_adapt_objective",
    "rfbench.train.adapt._fd_gradient": "TrainKernels.time_fd_gradient",
}

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
            raise NotImplementedError(f"rfbench.nn.conv is not available at this commit ({exc})") from None
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
            raise NotImplementedError(f"rfbench.train.proof is not available at this commit ({exc})") from None
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
            raise NotImplementedError(f"rfbench.train.adapt is not available at this commit ({exc})") from None
        frames, dims = (int(v) for v in frames_dims.split("x"))
        self.A = A
        self.features = A.synthetic_features(frames, dims, 0)
        self.settings = A.AdaptSettings(rank=2, steps=1, prototypes=8)
        A.adapt(self.features[:4, :3], A.AdaptSettings(rank=1, steps=1, prototypes=2))  # compile

    def time_adapt_step(self, frames_dims):
        self.A.adapt(self.features, self.settings)


def _modules(*names):
    import importlib

    try:
        return [importlib.import_module(n) for n in names]
    except ImportError as exc:
        raise NotImplementedError(f"{exc} at this commit") from None


class ConvKernels:
    """The three convolution kernels alone, as ``conv2d`` / ``conv2d_backward`` call them on the ``conv1``
    shape (the proof model's first layer on 64 windows)."""

    timeout = 300

    def setup(self):
        self.calls = cached("ConvKernels", self._record)

    @staticmethod
    def _record():
        (conv,) = _modules("rfbench.nn.conv")
        x_shape, w_shape, stride, padding, dilation = SHAPES["conv1"]
        rng = np.random.default_rng(0)
        x, w, b = rng.standard_normal(x_shape), rng.standard_normal(w_shape), rng.standard_normal(w_shape[0])

        def run():
            out = conv.conv2d(x, w, b, stride, padding, dilation)
            conv.conv2d_backward(x, w, np.ones_like(out), stride, padding, dilation)

        m = "rfbench.nn.conv"
        return record_kernel_calls({"forward": (m, "_conv2d_forward"),
                                    "backward_params": (m, "_conv2d_backward_params"),
                                    "backward_input": (m, "_conv2d_backward_input")}, run)

    def time_conv2d_forward(self):
        call_recorded(self.calls, "forward")

    def time_conv2d_backward_params(self):
        call_recorded(self.calls, "backward_params")

    def time_conv2d_backward_input(self):
        call_recorded(self.calls, "backward_input")


class LayerKernels:
    """The layer kernels alone, as the public layer functions call them: exp of 50,000 values, softmax of
    1,000 rows of 64, a 1,000 x 48 -> 48 linear map and its gradients, and single-head attention over 32
    sequences of 64 tokens of 32 features (forward and backward)."""

    timeout = 300

    def setup(self):
        self.calls = cached("LayerKernels", self._record)

    @staticmethod
    def _record():
        (layers,) = _modules("rfbench.nn.layers")
        rng = np.random.default_rng(1)
        x_exp = rng.uniform(-20.0, 20.0, 50_000)
        x_soft = rng.standard_normal((1000, 64))
        x_lin, w_lin, b_lin = rng.standard_normal((1000, 48)), rng.standard_normal((48, 48)), rng.standard_normal(48)
        g_lin = rng.standard_normal((1000, 48))
        tokens = rng.standard_normal((32, 64, 32))
        params = {n: rng.standard_normal((32, 32) if n.startswith("w") else 32) / 6.0
                  for n in layers.ATTENTION_PARAM_NAMES}
        g_att = rng.standard_normal((32, 64, 32))
        m = "rfbench.nn.layers"
        calls = record_kernel_calls({"exp_array": (m, "_exp_array")}, lambda: layers.exp(x_exp))
        calls.update(record_kernel_calls({"softmax_rows": (m, "_softmax_rows")}, lambda: layers.softmax(x_soft)))
        calls.update(record_kernel_calls({"linear": (m, "_linear"), "linear_backward": (m, "_linear_backward")},
                                         lambda: (layers.linear(x_lin, w_lin, b_lin),
                                                  layers.linear_backward(x_lin, w_lin, g_lin))))
        calls.update(record_kernel_calls({
            "attention_scores": (m, "_attention_scores"), "attention_context": (m, "_attention_context"),
            "attention_scores_backward": (m, "_attention_scores_backward"),
            "attention_context_backward": (m, "_attention_context_backward"),
            "softmax_rows_backward": (m, "_softmax_rows_backward")},
            lambda: layers.attention_backward(tokens, params, g_att)))
        return calls

    def time_exp_array(self):
        call_recorded(self.calls, "exp_array")

    def time_softmax_rows(self):
        call_recorded(self.calls, "softmax_rows")

    def time_softmax_rows_backward(self):
        call_recorded(self.calls, "softmax_rows_backward")

    def time_linear(self):
        call_recorded(self.calls, "linear")

    def time_linear_backward(self):
        call_recorded(self.calls, "linear_backward")

    def time_attention_scores(self):
        call_recorded(self.calls, "attention_scores")

    def time_attention_context(self):
        call_recorded(self.calls, "attention_context")

    def time_attention_scores_backward(self):
        call_recorded(self.calls, "attention_scores_backward")

    def time_attention_context_backward(self):
        call_recorded(self.calls, "attention_context_backward")


class ModelKernels:
    """The model's own kernels alone, as ``loss_and_grads`` calls them on 64 windows of a wider model (32 and
    64 conv channels, 1,000 keypoints, so each array holds ~10^5 values), and the weight initialiser as the
    proof's data generator calls it (200 windows of noise)."""

    timeout = 300

    def setup(self):
        self.calls = cached("ModelKernels", self._record)

    @staticmethod
    def _record():
        model, proof = _modules("rfbench.nn.model", "rfbench.train.proof")
        spec = model.ModelSpec(conv1_channels=32, conv2_channels=64, attention_dim=16, keypoints=1000)
        rng = np.random.default_rng(2)
        params = model.init_params(spec, 0)
        x = rng.standard_normal((64, spec.antennas, spec.subcarriers, spec.frames))
        target = rng.standard_normal((64, spec.keypoints, spec.coords))
        m = "rfbench.nn.model"
        calls = record_kernel_calls({
            "relu": (m, "_relu"), "relu_backward": (m, "_relu_backward"), "residual_mean": (m, "_residual_mean"),
            "mse": (m, "_mse"), "mse_backward": (m, "_mse_backward")},
            lambda: model.loss_and_grads(params, x, target, spec))
        calls.update(record_kernel_calls({"symmetric": (m, "_symmetric")},
                                         lambda: proof.synthetic_pose_data(200, proof.PROOF_SPEC, 0)))
        return calls

    def time_symmetric(self):
        call_recorded(self.calls, "symmetric")

    def time_relu(self):
        call_recorded(self.calls, "relu")

    def time_relu_backward(self):
        call_recorded(self.calls, "relu_backward")

    def time_residual_mean(self):
        call_recorded(self.calls, "residual_mean")

    def time_mse(self):
        call_recorded(self.calls, "mse")

    def time_mse_backward(self):
        call_recorded(self.calls, "mse_backward")


class TrainKernels:
    """The training proof's and the adapter's kernels alone, as their public functions call them: the proof's
    data generator (200 windows), one SGD step of a model with an 8 x 60,000 head, and the adapter's
    kernels on 128 frames x 30 dims (the finite-difference gradient on 24 x 12, rank 2: 96 objective
    evaluations; the entropy on 1,000 x 64), its row normalisation on 4,000 prototypes of 64 dims and its
    map on 4,000 x 64."""

    timeout = 300

    def setup(self):
        self.calls = cached("TrainKernels", self._record)

    @staticmethod
    def _record():
        model, proof, adapt = _modules("rfbench.nn.model", "rfbench.train.proof", "rfbench.train.adapt")
        spec = model.ModelSpec(keypoints=20_000)  # a head of 8 x 60,000 weights: the largest SGD update
        x, y = proof.synthetic_pose_data(1, spec, 0)
        params = model.init_params(spec, 0)
        f = adapt.synthetic_features(128, 30, 0)
        big = adapt.synthetic_features(4000, 64, 1)
        small = adapt.synthetic_features(24, 12, 2)
        rng = np.random.default_rng(3)

        def adapter(d):
            return rng.uniform(-0.1, 0.1, (d, 2)), rng.uniform(-0.1, 0.1, (2, d))

        (a, b), (a_big, b_big), (a_small, b_small) = adapter(30), adapter(64), adapter(12)
        protos = adapt.choose_prototypes(f, 8)
        protos_small = adapt.choose_prototypes(small, 8)
        m = "rfbench.train.adapt"
        calls = record_kernel_calls({"synthetic": ("rfbench.train.proof", "_synthetic")},
                                    lambda: proof.synthetic_pose_data(200, proof.PROOF_SPEC, 0))
        calls.update(record_kernel_calls({"sgd_step": ("rfbench.train.proof", "_sgd_step")},
                                         lambda: proof.train(params, x, y, spec, steps=1, lr=0.01)))
        calls.update(record_kernel_calls({
            "temporal_contrastive": (m, "_temporal_contrastive"), "objective": (m, "_objective")},
            lambda: (adapt.objective(f, a, b, protos, 0.5, 0.1),
                     adapt.temporal_contrastive(adapt.apply_adapter(f, a, b), 0.5))))
        calls.update(record_kernel_calls({"entropy": (m, "_entropy")},
                                         lambda: adapt.entropy(big[:1000], adapt.choose_prototypes(big, 8), 0.5)))
        calls.update(record_kernel_calls({"fd_gradient": (m, "_fd_gradient")},
                                         lambda: adapt.fd_gradient(small, a_small, b_small, protos_small, 0.5, 0.1,
                                                                   1e-5)))
        calls.update(record_kernel_calls({"apply": (m, "_apply"), "unit_rows": (m, "_unit_rows")},
                                         lambda: (adapt.apply_adapter(big, a_big, b_big),
                                                  adapt.choose_prototypes(big, 4000))))
        return calls

    def time_proof_synthetic(self):
        call_recorded(self.calls, "synthetic")

    def time_sgd_step(self):
        call_recorded(self.calls, "sgd_step")

    def time_adapter_apply(self):
        call_recorded(self.calls, "apply")

    def time_unit_rows(self):
        call_recorded(self.calls, "unit_rows")

    def time_temporal_contrastive(self):
        call_recorded(self.calls, "temporal_contrastive")

    def time_entropy(self):
        call_recorded(self.calls, "entropy")

    def time_adapt_objective(self):
        call_recorded(self.calls, "objective")

    def time_fd_gradient(self):
        call_recorded(self.calls, "fd_gradient")
