"""asv benchmarks of the pose metrics: PCK + OKS + MPJPE in one call, against NumPy and pycocotools.

``frames`` = 10_000 is the CI-sized case the regression gate compares; 1_000_000 x 17 joints, the scale the
performance targets are stated at (>= 3x a vectorised NumPy implementation of the same semantics, >= 200x
pycocotools' OKS per pose; memory O(N x K)), runs only with ``RFBENCH_BENCH_LARGE=1`` (``make bench-large``).
Peers are timed in the same process; ``track_*`` return speed-up factors.

``MetricKernels`` times each Numba kernel alone, called exactly as the public code calls it at the commit
being measured (the arguments are recorded from one public call in ``setup``), on one thread: a 2x slowdown
of one kernel shows as 2x there, whatever the wrappers around it cost.
"""

from __future__ import annotations

import importlib
import os
import time

import numpy as np

from .common import best_time

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
# The gate sets RFBENCH_BENCH_TIMER=cpu: time_* then count this process's CPU time, not the time it waited for a
# core that other work held (benchmarks/README.md).
timer = time.process_time if os.environ.get("RFBENCH_BENCH_TIMER") == "cpu" else time.perf_counter
FRAMES = [10_000] + ([1_000_000] if LARGE else [])

KS = (0.05, 0.1, 0.2, 0.5)
JOINTS = 17

#: The Numba kernel each benchmark below times alone (benchmarks/README.md, "One kernel, one benchmark").
KERNELS = {
    "rfbench.metrics.kernels._pose_sums": "MetricKernels.time_pose_sums",
    "rfbench.metrics.kernels._procrustes_moments": "MetricKernels.time_procrustes_moments",
    "rfbench.metrics.kernels._aligned_error_sums": "MetricKernels.time_aligned_error_sums",
    "rfbench.metrics.kernels._replicate_sums": "MetricKernels.time_bootstrap_replicate_sums",
    "rfbench.metrics.kernels._segment_sums": "MetricKernels.time_segment_sums",
}


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    gt = rng.uniform(0.0, 1.0, size=(n, JOINTS, 2))
    pred = gt + rng.normal(scale=0.02, size=gt.shape)
    vis = rng.random((n, JOINTS)) > 0.1
    vis[:, :2] = True
    return pred, gt, vis


def _rfbench(pred, gt, vis):
    from rfbench.metrics.pose import evaluate_pose
    from rfbench.metrics.skeletons import COCO_SIGMAS

    # Explicit sigmas and a box normalization: nothing depends on the joint order of random data.
    return evaluate_pose(pred, gt, vis, skeleton="coco17", units="normalized", metrics=["pck", "oks", "mpjpe"],
                         normalizations=["bbox"], ks=KS, sigmas=COCO_SIGMAS)


def numpy_pck_oks_mpjpe(pred, gt, vis, sigmas):
    """The same three metrics, vectorised in NumPy: PCK@KS under the box diagonal (micro and per joint),
    mean OKS with area 0.53 x box width x height, and MPJPE (micro and per joint)."""
    d2 = ((pred - gt) ** 2).sum(axis=-1)
    d = np.sqrt(d2)
    vv = vis[..., None]
    lo = np.where(vv, gt, np.inf).min(axis=1)
    hi = np.where(vv, gt, -np.inf).max(axis=1)
    side = hi - lo
    diag = np.sqrt((side ** 2).sum(axis=-1))
    scoreable = vis & (diag > 0)[:, None]
    r = d / np.where(diag > 0, diag, 1.0)[:, None]
    n_joint = scoreable.sum(axis=0)
    pck = []
    for k in KS:
        hit = (scoreable & (r <= k)).sum(axis=0)
        pck.append((hit.sum() / n_joint.sum(), hit / n_joint))
    area = 0.53 * side[:, 0] * side[:, 1]
    var = (2.0 * np.asarray(sigmas)) ** 2
    ok = area > 0
    e = d2[ok] / var / area[ok, None] / 2.0
    oks = (np.exp(-e) * vis[ok]).sum(axis=1) / vis[ok].sum(axis=1)
    err = np.where(vis, d, 0.0)
    mpjpe = (err.sum() / vis.sum(), err.sum(axis=0) / vis.sum(axis=0))
    return pck, oks.mean(), mpjpe


class PoseMetrics:
    """PCK (4 thresholds) + OKS + MPJPE on ``frames`` x 17 joints, 2D."""

    params = FRAMES
    param_names = ["frames"]
    timeout = 900

    def setup(self, frames):
        try:
            from rfbench.metrics import pose  # noqa: F401
        except ImportError:
            raise NotImplementedError("rfbench.metrics.pose is not available at this commit") from None
        self.pred, self.gt, self.vis = _data(frames)
        small = _data(64, seed=1)
        ev = _rfbench(*small)  # compile (or load) the kernels outside the timed region
        from rfbench.metrics.skeletons import COCO_SIGMAS

        pck, oks, mpjpe = numpy_pck_oks_mpjpe(*small, COCO_SIGMAS)
        # Same semantics, or the ratios below would compare different work.
        assert abs(ev.find("oks").value - oks) < 1e-12
        assert abs(ev.find("mpjpe", averaging="micro").value - mpjpe[0]) < 1e-12
        assert abs(ev.find("pck", k=0.1, averaging="micro").value - pck[1][0]) < 1e-12

    def time_pck_oks_mpjpe(self, frames):
        _rfbench(self.pred, self.gt, self.vis)

    def peakmem_pck_oks_mpjpe(self, frames):
        _rfbench(self.pred, self.gt, self.vis)

    def time_numpy_reference(self, frames):
        from rfbench.metrics.skeletons import COCO_SIGMAS

        numpy_pck_oks_mpjpe(self.pred, self.gt, self.vis, COCO_SIGMAS)

    def track_speedup_vs_numpy(self, frames):
        from rfbench.metrics.skeletons import COCO_SIGMAS

        ours = best_time(lambda: _rfbench(self.pred, self.gt, self.vis))
        theirs = best_time(lambda: numpy_pck_oks_mpjpe(self.pred, self.gt, self.vis, COCO_SIGMAS))
        return theirs / ours

    track_speedup_vs_numpy.unit = "x"


class PoseVsPycocotools:
    """Time per pose: rfbench's PCK + OKS + MPJPE over ``frames`` poses against pycocotools' computeOks on a
    500-pose subsample (its per-pose cost does not depend on how many poses there are)."""

    params = FRAMES
    param_names = ["frames"]
    timeout = 900
    subsample = 500

    def setup(self, frames):
        try:
            from rfbench.metrics import pose  # noqa: F401
        except ImportError:
            raise NotImplementedError("rfbench.metrics.pose is not available at this commit") from None
        try:
            from pycocotools.coco import COCO
            from pycocotools.cocoeval import COCOeval
        except ImportError:
            raise NotImplementedError("pycocotools is not installed") from None
        import contextlib
        import io

        self.pred, self.gt, self.vis = _data(frames)
        _rfbench(*_data(64, seed=1))
        n = self.subsample
        images, anns, dets = [], [], []
        for i in range(n):
            g, p, v = self.gt[i], self.pred[i], self.vis[i]
            kp = np.column_stack([g, np.where(v, 2, 0)]).ravel().tolist()
            w, h = np.ptp(g[v], axis=0)
            images.append({"id": i + 1})
            anns.append({"id": i + 1, "image_id": i + 1, "category_id": 1, "keypoints": kp, "iscrowd": 0,
                         "num_keypoints": int(v.sum()), "area": 0.53 * w * h,
                         "bbox": [*g[v].min(axis=0).tolist(), float(w), float(h)]})
            dets.append({"image_id": i + 1, "category_id": 1, "score": 1.0,
                         "keypoints": np.column_stack([p, np.ones(JOINTS)]).ravel().tolist()})
        with contextlib.redirect_stdout(io.StringIO()):
            coco = COCO()
            coco.dataset = {"images": images, "annotations": anns,
                            "categories": [{"id": 1, "name": "person", "keypoints": [str(j) for j in range(JOINTS)]}]}
            coco.createIndex()
            self.cocoeval = COCOeval(coco, coco.loadRes(dets), "keypoints")
            self.cocoeval.params.imgIds = [i + 1 for i in range(n)]
            self.cocoeval._prepare()

    def _coco(self):
        for i in range(self.subsample):
            self.cocoeval.computeOks(i + 1, 1)

    def time_pycocotools_oks_subsample(self, frames):
        self._coco()

    def track_speedup_vs_pycocotools_per_pose(self, frames):
        ours = best_time(lambda: _rfbench(self.pred, self.gt, self.vis), repeat=7) / self.pred.shape[0]
        theirs = best_time(self._coco, repeat=7) / self.subsample
        return theirs / ours

    track_speedup_vs_pycocotools_per_pose.unit = "x"

    def track_oks_speedup_vs_pycocotools_per_pose(self, frames):
        """Like for like: rfbench's OKS alone (``metrics=["oks"]``, the work ``computeOks`` does) per pose."""
        from rfbench.metrics.pose import evaluate_pose
        from rfbench.metrics.skeletons import COCO_SIGMAS

        def oks():
            evaluate_pose(self.pred, self.gt, self.vis, skeleton="coco17", units="normalized", metrics=["oks"],
                          sigmas=COCO_SIGMAS)

        ours = best_time(oks, repeat=7) / self.pred.shape[0]
        theirs = best_time(self._coco, repeat=7) / self.subsample
        return theirs / ours

    track_oks_speedup_vs_pycocotools_per_pose.unit = "x"


def _capture(module_name, attr, run):
    """Run ``run()`` with ``module_name.attr`` replaced by a recorder; return the kernel and the
    ``(args, kwargs)`` of its first call. Raises NotImplementedError when this commit has no such kernel or
    the public path does not call it."""
    try:
        module = importlib.import_module(module_name)
        kernel = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise NotImplementedError(f"{module_name}.{attr} is not available at this commit ({exc})") from None
    calls = []

    def recorder(*args, **kwargs):
        calls.append((args, kwargs))
        return kernel(*args, **kwargs)

    setattr(module, attr, recorder)
    try:
        run()
    finally:
        setattr(module, attr, kernel)
    if not calls:
        raise NotImplementedError(f"the public path does not call {module_name}.{attr} at this commit")
    return kernel, calls[0]


_KERNEL_CALLS = {}  # frames -> recorded kernel calls, kept for the process (asv re-runs setup before each sample)


class MetricKernels:
    """Each metrics kernel alone on one thread: the PCK/OKS/MPJPE pass over ``frames`` x 17 2D joints, the
    two PA-MPJPE passes over ``frames`` x 17 3D joints, the cluster bootstrap's replicate sums (1,000
    replicates of a ``frames // 50`` clusters x 64 columns table) and the per-cluster sums of ``frames`` x 8
    values."""

    params = FRAMES
    param_names = ["frames"]
    timeout = 300

    def setup(self, frames):
        try:
            import numba

            from rfbench.metrics import stats
            from rfbench.metrics.pose import evaluate_pose
        except ImportError as exc:
            raise NotImplementedError(f"the pose metrics are not available at this commit ({exc})") from None
        self.threads = numba.get_num_threads()
        numba.set_num_threads(1)  # the kernels' own cost; wrappers run these sizes on one thread as well
        if frames not in _KERNEL_CALLS:
            _KERNEL_CALLS[frames] = self._record(frames, stats, evaluate_pose)
        self.calls = _KERNEL_CALLS[frames]

    @staticmethod
    def _record(frames, stats, evaluate_pose):
        calls = {}
        pred, gt, vis = _data(frames)
        calls["pose_sums"] = _capture("rfbench.metrics.kernels", "_pose_sums", lambda: _rfbench(pred, gt, vis))
        rng = np.random.default_rng(3)
        gt3 = rng.uniform(-1.0, 1.0, size=(frames, JOINTS, 3))
        pred3 = gt3 @ np.array([[0.96, -0.28, 0.0], [0.28, 0.96, 0.0], [0.0, 0.0, 1.0]]) * 1.1 + 0.3
        pred3 += rng.normal(scale=0.02, size=gt3.shape)

        def pa():
            evaluate_pose(pred3, gt3, vis, skeleton="coco17", units="m", metrics=["pa-mpjpe"])

        calls["moments"] = _capture("rfbench.metrics.kernels", "_procrustes_moments", pa)
        calls["aligned"] = _capture("rfbench.metrics.kernels", "_aligned_error_sums", pa)
        table = rng.random((max(2, frames // 50), 64))
        calls["replicates"] = _capture("rfbench.metrics.stats", "_replicate_sums",
                                       lambda: stats.cluster_bootstrap(table, {"c0": lambda t: t[:, 0]}, n_boot=1000))
        values, segment = rng.random((frames, 8)), np.arange(frames) // 50
        calls["segments"] = _capture("rfbench.metrics.stats", "_segment_sums",
                                     lambda: stats.segment_sums(values, segment, int(segment[-1]) + 1))
        for kernel, (args, kwargs) in calls.values():
            kernel(*args, **kwargs)  # one untimed call each on one thread before timing
        return calls

    def teardown(self, frames):
        if hasattr(self, "threads"):
            import numba

            numba.set_num_threads(self.threads)

    def _call(self, name):
        kernel, (args, kwargs) = self.calls[name]
        kernel(*args, **kwargs)

    def time_pose_sums(self, frames):
        self._call("pose_sums")

    def time_procrustes_moments(self, frames):
        self._call("moments")

    def time_aligned_error_sums(self, frames):
        self._call("aligned")

    def time_bootstrap_replicate_sums(self, frames):
        self._call("replicates")

    def time_segment_sums(self, frames):
        self._call("segments")


def _convention(pred, gt, vis, convention):
    """One public call under a named convention (2D data: PCK and MPJPE; graphpose-fi in batches of 256)."""
    from rfbench.metrics.pose import evaluate_pose

    metrics = {"graphpose-fi": ["pck", "mpjpe"], "wiflow": ["pck", "mpjpe"], "mmpose": ["pck", "pck-auc", "mpjpe"]}
    return evaluate_pose(pred, gt, vis, skeleton="coco17", units="normalized", metrics=metrics[convention],
                         ks=KS, convention=convention, batch_size=256 if convention == "graphpose-fi" else None,
                         trust_layout=True)


class ConventionMetrics:
    """The public pose scoring under each named convention on ``frames`` x 17 2D joints: graphpose-fi
    (unclamped pair normaliser, no visibility, batch-mean: a second kernel pass over batches of 256 rows),
    wiflow (clamped pair, float32 result) and mmpose (per-axis, float32 distances, macro; PCK-AUC too)."""

    params = (FRAMES, ["graphpose-fi", "wiflow", "mmpose"])
    param_names = ["frames", "convention"]
    timeout = 300

    def setup(self, frames, convention):
        try:
            from rfbench.metrics.conventions import get_convention
        except ImportError as exc:
            raise NotImplementedError(f"named conventions are not available at this commit ({exc})") from None
        get_convention(convention)
        self.pred, self.gt, self.vis = _data(frames)
        _convention(*_data(64, seed=1), convention)  # compile (or load) the kernels outside the timed region

    def time_evaluate_pose_convention(self, frames, convention):
        _convention(self.pred, self.gt, self.vis, convention)


_CONVENTION_CALLS = {}


class ConventionKernels:
    """The pose kernel alone, on one thread, on the paths the conventions added: per-axis normalisation with
    float32 distances (mmpose's PCK) and the unclamped floor without visibility (graphpose-fi), ``frames`` x 17
    2D joints; called exactly as the public code calls it at the commit being measured."""

    params = FRAMES
    param_names = ["frames"]
    timeout = 300

    def setup(self, frames):
        try:
            import numba

            from rfbench.metrics.conventions import get_convention  # noqa: F401
        except ImportError as exc:
            raise NotImplementedError(f"named conventions are not available at this commit ({exc})") from None
        self.threads = numba.get_num_threads()
        numba.set_num_threads(1)
        if frames not in _CONVENTION_CALLS:
            pred, gt, vis = _data(frames)
            calls = {name: _capture("rfbench.metrics.kernels", "_pose_sums",
                                    lambda name=name: _convention(pred, gt, vis, name))
                     for name in ("mmpose", "graphpose-fi")}
            for kernel, (args, kwargs) in calls.values():
                kernel(*args, **kwargs)
            _CONVENTION_CALLS[frames] = calls
        self.calls = _CONVENTION_CALLS[frames]

    def teardown(self, frames):
        if hasattr(self, "threads"):
            import numba

            numba.set_num_threads(self.threads)

    def time_pose_sums_per_axis_float32(self, frames):
        kernel, (args, kwargs) = self.calls["mmpose"]
        kernel(*args, **kwargs)

    def time_pose_sums_unclamped_no_visibility(self, frames):
        kernel, (args, kwargs) = self.calls["graphpose-fi"]
        kernel(*args, **kwargs)
