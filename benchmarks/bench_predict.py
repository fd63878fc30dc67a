"""asv benchmarks of ``rfbench predict`` (rfbench.nn.predict): an ONNX model run by onnxruntime over a windows
folder, against the loop a user writes without rfbench.

The model is a small conv over the MM-Fi window (1 frame × amplitude/phase × 3 antennas × 114 subcarriers ×
10 packets → 2 × 342 × 10 image → 3×3 conv, 8 channels → ReLU → mean → linear head → 17 × 3 joints), built with
the ``onnx`` helper API; X is a memory-mapped ``X.npy`` in a windows folder written in ``setup``.

- ``Throughput``: the whole library call (index and X checked and hashed, model read and checked, session
  made, every batch run) at two batch sizes; ``track_windows_per_second``.
- ``Copy``: rfbench on a contiguous memory-mapped X (fed as views) and on a strided X (each batch copied);
  ``track_copy_over_view`` times a bare onnxruntime loop fed copies against the same loop fed views, on the
  MM-Fi window and on the [1, 256, 64, 64] input of ADR-155.
- ``Threads``: 1 or 2 intra-op threads × 1 or 2 sessions; ``track_windows_per_second``.
- ``Overhead``: ``track_overhead_vs_bare_loop`` (wall-clock) and ``track_cpu_overhead_vs_bare_loop`` (CPU time
  of every thread) = rfbench's whole call / a bare loop (session from the same bytes, the same batches of the
  same memory-mapped array, outputs concatenated), for the conv at 8 and 64 channels; goal ≤ 1.10.

onnxruntime and onnx are the ``onnx`` extra: without them (or on a commit without ``rfbench.nn.predict``) the
setups raise ``NotImplementedError``. ``RFBENCH_BENCH_LARGE=1`` adds 4096-window cases.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from .common import best_time

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
timer = time.process_time if os.environ.get("RFBENCH_BENCH_TIMER") == "cpu" else time.perf_counter

MMFI_ROW = (1, 2, 3, 114, 10)
ADR155_ROW = (256, 64, 64)


def _import():
    try:
        from rfbench.nn import predict as P
    except ImportError:
        raise NotImplementedError("rfbench.nn.predict is not available at this commit") from None
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        raise NotImplementedError("onnxruntime and onnx (the 'onnx' extra) are not installed") from None
    return P


def conv_model(row=MMFI_ROW, channels=8, seed=0) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    frames, feats, ant, sub, pk = row
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array(np.array([-1, frames * feats, ant * sub, pk], np.int64), "img_shape"),
             numpy_helper.from_array((rng.standard_normal((channels, frames * feats, 3, 3)) * 0.2)
                                     .astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(channels).astype(np.float32), "b"),
             numpy_helper.from_array(rng.standard_normal((channels, 51)).astype(np.float32), "head"),
             numpy_helper.from_array(np.array([-1, 17, 3], np.int64), "out_shape")]
    nodes = [helper.make_node("Reshape", ["x", "img_shape"], ["img"]),
             helper.make_node("Conv", ["img", "w", "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("ReduceMean", ["r"], ["pooled"], axes=[2, 3], keepdims=0),
             helper.make_node("MatMul", ["pooled", "head"], ["flat"]),
             helper.make_node("Reshape", ["flat", "out_shape"], ["y"])]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *row])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 17, 3])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def mean_model(row=ADR155_ROW) -> bytes:
    """x (N, *row) → mean over everything but the batch: the cheapest model that reads all of its input."""
    from onnx import TensorProto, helper

    axes = list(range(1, len(row) + 1))
    nodes = [helper.make_node("ReduceMean", ["x"], ["y"], axes=axes, keepdims=0)]
    graph = helper.make_graph(nodes, "mean", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", *row])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def write_windows(folder: Path, x: np.ndarray, joints: bool = True) -> Path:
    """A windows folder in the format ``rfbench windows`` writes (X.npy, y.npy, index.json)."""
    folder.mkdir(parents=True, exist_ok=True)
    y = np.zeros((x.shape[0], 17, 3) if joints else (x.shape[0],), np.float32)
    np.save(folder / "X.npy", x)
    np.save(folder / "y.npy", y)

    def entry(name, arr):
        data = (folder / name).read_bytes()
        return {"file": name, "dtype": str(arr.dtype), "shape": list(arr.shape), "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest()}

    axes = ["window", "frame", "feature", "antenna", "subcarrier", "packet"][:x.ndim] if x.ndim == 6 else \
        [f"axis{i}" for i in range(x.ndim)]
    index = {"schema": "rfbench.windows/1", "rfbench_version": "bench", "split": None, "manifest": None,
             "dataset": "bench", "side": "test", "task": "pose", "settings": {},
             "x": {**entry("X.npy", x), "axes": axes}, "y": {**entry("y.npy", y), "kind": "pose"}, "labels": None,
             "rows": [{"id": f"r{i}", "start": 0, "stop": 1} for i in range(x.shape[0])], "excluded": [],
             "dropped": 0, "files": []}
    (folder / "index.json").write_text(json.dumps(index))
    return folder


class _Folder:
    """Set-up shared by the suites: a windows folder of ``n`` MM-Fi windows and the conv model beside it."""

    def make(self, n, row=MMFI_ROW, model=None, joints=True):
        P = _import()
        self.tmp = tempfile.TemporaryDirectory(prefix="rfbench-bench-predict-")
        root = Path(self.tmp.name)
        x = np.random.default_rng(1).standard_normal((n, *row)).astype(np.float32)
        self.folder = write_windows(root / "win", x, joints=joints)
        self.model_bytes = model if model is not None else conv_model(row)
        self.model = root / "model.onnx"
        self.model.write_bytes(self.model_bytes)
        self.x = np.load(self.folder / "X.npy", mmap_mode="r")
        return P

    def teardown(self, *args):
        self.tmp.cleanup()

    def bare(self, batch, threads=1, x=None, copy=False):
        """The loop a user writes without rfbench: a session from the model's bytes, batches of the
        memory-mapped array (optionally copied first), outputs concatenated."""
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        session = ort.InferenceSession(self.model_bytes, so, providers=["CPUExecutionProvider"])
        x = self.x if x is None else x
        outs = []
        for start in range(0, x.shape[0], batch):
            b = x[start:start + batch]
            outs.append(session.run(None, {"x": b.copy() if copy else b})[0])
        return np.concatenate(outs)


class Throughput(_Folder):
    """The whole ``predict`` call over ``windows`` MM-Fi windows at two batch sizes (1 thread, 1 session)."""

    params = ([256] + ([4096] if LARGE else []), [16, 128])
    param_names = ["windows", "batch"]
    timeout = 600

    def setup(self, windows, batch):
        self.P = self.make(windows)
        self.settings = self.P.PredictSettings(batch_size=batch)
        got = self._rfbench()
        assert np.allclose(got.pred, self.bare(batch), rtol=1e-5, atol=1e-5)  # the same work as the peer

    def _rfbench(self):
        return self.P.predict(self.model, self.folder, self.settings)

    def time_predict(self, windows, batch):
        self._rfbench()

    def track_windows_per_second(self, windows, batch):
        return windows / best_time(self._rfbench)

    track_windows_per_second.unit = "windows/s"


class Copy(_Folder):
    """No copy (a contiguous memory-mapped X fed as views) against a copy of every batch."""

    params = (["mmfi", "adr155"],)
    param_names = ["input"]
    timeout = 600

    def setup(self, case):
        if case == "mmfi":
            self.P = self.make(512 if LARGE else 128, MMFI_ROW, mean_model(MMFI_ROW), joints=False)
            self.batch = 32
        else:  # ADR-155's [1, 256, 64, 64] input, one window per call
            self.P = self.make(64 if LARGE else 8, ADR155_ROW, mean_model(ADR155_ROW), joints=False)
            self.batch = 1
        self.settings = self.P.PredictSettings(batch_size=self.batch)
        # a strided view of a twice-as-long array: rfbench must copy each batch to make it contiguous
        doubled = np.empty((2 * self.x.shape[0],) + self.x.shape[1:], np.float32)
        doubled[::2] = self.x
        self.strided = doubled[::2]
        assert not self.strided.flags.c_contiguous
        self._view()

    def _view(self):
        return self.P.predict(self.model, self.x, self.settings)

    def _copied(self):
        return self.P.predict(self.model, self.strided, self.settings)

    def time_rfbench_view(self, case):
        self._view()

    def time_rfbench_copied(self, case):
        self._copied()

    def track_copy_over_view(self, case):
        """A bare onnxruntime loop fed a copy of each batch / the same loop fed views (ADR-155: 1.48×)."""
        self.bare(self.batch)  # warm
        return best_time(lambda: self.bare(self.batch, copy=True), 5) / best_time(lambda: self.bare(self.batch), 5)

    track_copy_over_view.unit = "x"


class Threads(_Folder):
    """Intra-op threads × concurrent sessions over the same windows (batch 32)."""

    params = ([256] + ([4096] if LARGE else []), ["1x1", "2x1", "1x2", "2x2"])
    param_names = ["windows", "threads_x_sessions"]
    timeout = 600

    def setup(self, windows, mode):
        self.P = self.make(windows)
        threads, sessions = (int(v) for v in mode.split("x"))
        self.settings = self.P.PredictSettings(batch_size=32, intra_op_threads=threads, sessions=sessions)
        self._rfbench()

    def _rfbench(self):
        return self.P.predict(self.model, self.folder, self.settings)

    def time_predict(self, windows, mode):
        self._rfbench()

    def track_windows_per_second(self, windows, mode):
        return windows / best_time(self._rfbench)

    track_windows_per_second.unit = "windows/s"


def best_cpu_time(fn, repeat: int = 5) -> float:
    """The smallest process CPU time (every thread) of ``repeat`` calls of ``fn()``."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


class Overhead(_Folder):
    """rfbench's whole call (index and X.npy checked, X hashed, model read and checked, session, batches) against
    the bare loop over the same memory-mapped array, 1 thread, 1 session, batch 16, for the conv model with 8
    or 64 channels (the cost of the checks is fixed per byte of X; the model's grows with its channels)."""

    params = ([256] + ([4096] if LARGE else []), [8, 64])
    param_names = ["windows", "channels"]
    timeout = 600

    def setup(self, windows, channels):
        self.P = self.make(windows, model=conv_model(channels=channels))
        self.settings = self.P.PredictSettings(batch_size=16)
        self._rfbench()
        self.bare(16)

    def _rfbench(self):
        return self.P.predict(self.model, self.folder, self.settings)

    def track_overhead_vs_bare_loop(self, windows, channels):
        """Wall-clock: the hash of X runs on a second thread beside the model."""
        return best_time(self._rfbench, 5) / best_time(lambda: self.bare(16), 5)

    track_overhead_vs_bare_loop.unit = "x"

    def track_cpu_overhead_vs_bare_loop(self, windows, channels):
        """CPU time of every thread: what the checks cost whether or not a core was free for them."""
        return best_cpu_time(self._rfbench) / best_cpu_time(lambda: self.bare(16))

    track_cpu_overhead_vs_bare_loop.unit = "x"


def _quick_look(rounds: int) -> None:
    """Every case set up once, then timed in ``rounds`` interleaved rounds (so load hits them alike); prints the
    best and the median of each, wall-clock and CPU time (every thread of this process and of the child
    processes rfbench runs the model in, counted once they have exited)."""
    import resource

    def cpu_now() -> float:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + children.ru_utime + children.ru_stime

    def clock(fn):
        w, c = time.perf_counter(), cpu_now()
        fn()
        return time.perf_counter() - w, cpu_now() - c

    cases = []
    for cls, args in ((Throughput, (256, 16)), (Throughput, (256, 128)), (Threads, (256, "1x1")),
                      (Threads, (256, "2x1")), (Threads, (256, "1x2")), (Threads, (256, "2x2"))):
        b = cls()
        b.setup(*args)
        cases.append((f"{cls.__name__}{args}", b, b._rfbench, args[0]))
    for case in ("mmfi", "adr155"):
        b = Copy()
        b.setup(case)
        cases.append((f"Copy({case!r}) bare loop, views", b, lambda b=b: b.bare(b.batch), b.x.shape[0]))
        cases.append((f"Copy({case!r}) bare loop, copies", b, lambda b=b: b.bare(b.batch, copy=True), b.x.shape[0]))
        cases.append((f"Copy({case!r}) rfbench, views", b, b._view, b.x.shape[0]))
        cases.append((f"Copy({case!r}) rfbench, copied", b, b._copied, b.x.shape[0]))
    for channels in (8, 64):
        b = Overhead()
        b.setup(256, channels)
        cases.append((f"Overhead(256, {channels}) rfbench", b, b._rfbench, 256))
        cases.append((f"Overhead(256, {channels}) bare loop", b, lambda b=b: b.bare(16), 256))
    samples = {name: [] for name, *_ in cases}
    for _ in range(rounds):
        for name, _b, fn, _n in cases:
            samples[name].append(clock(fn))
    print(f"{rounds} interleaved rounds; os.getloadavg() at the end: {os.getloadavg()[0]:.2f}")
    print(f"{'case':48s} {'wall best':>10s} {'wall median':>12s} {'windows/s':>10s} {'CPU best':>10s}")
    for name, _b, _fn, n in cases:
        wall = sorted(w for w, _ in samples[name])
        cpu = min(c for _, c in samples[name])
        print(f"{name:48s} {wall[0] * 1e3:8.1f}ms {wall[len(wall) // 2] * 1e3:10.1f}ms {n / wall[0]:10.0f} "
              f"{cpu * 1e3:8.1f}ms")
    for b in {id(b): b for _, b, *_ in cases}.values():
        b.teardown()


if __name__ == "__main__":  # a quick look without asv: python -m benchmarks.bench_predict [ROUNDS]
    import sys

    _quick_look(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
