"""asv benchmarks of the classification metrics (rfbench.metrics.classify) against vectorised NumPy.

``ClassifyLabels``: accuracy, balanced accuracy, macro-/weighted-F1, per-class numbers and the confusion matrix
from predicted labels; 10_000 rows is the CI-sized case, 10_000_000 (with ``RFBENCH_BENCH_LARGE=1``) the
scale the target is stated at.
``ClassifyScores``: the same plus top-1/3/5 from an (N, 22) score array. ``ClassifyBootstrap``: a gesture
report with a 1000-replicate cluster bootstrap paired with both baselines. Peers are timed in the same
process; ``track_*`` return speed-up factors. ``ClassifyKernels`` times each classification kernel alone.
"""

from __future__ import annotations

import os
import time

import numpy as np

from .common import best_time, cached, call_recorded, record_kernel_calls

LARGE = os.environ.get("RFBENCH_BENCH_LARGE") == "1"  # CI sizes only unless set (benchmarks/README.md)
timer = time.process_time if os.environ.get("RFBENCH_BENCH_TIMER") == "cpu" else time.perf_counter

CLASSES = 22  # the distinct Widar3.0 gesture names
KS = (1, 3, 5)

#: The Numba kernel each benchmark below times alone (benchmarks/README.md, "One kernel, one benchmark").
KERNELS = {
    "rfbench.metrics.kernels._argmax_rank": "ClassifyKernels.time_argmax_rank",
    "rfbench.metrics.kernels._confusion_blocks": "ClassifyKernels.time_confusion_blocks",
    "rfbench.metrics.kernels._class_sums": "ClassifyKernels.time_class_sums",
}


def _labels(n, seed=0):
    rng = np.random.default_rng(seed)
    gt = rng.integers(0, CLASSES, n)
    pred = np.where(rng.random(n) < 0.8, gt, rng.integers(0, CLASSES, n))
    return gt, pred


def _names():
    return [f"gesture-{i:02d}" for i in range(CLASSES)]


def numpy_label_metrics(gt, pred, c):
    """Vectorised NumPy, same semantics: confusion by bincount, then accuracy, balanced accuracy (classes
    with support), macro-F1 (classes in truth or predictions), weighted-F1, per-class precision/recall/F1."""
    conf = np.bincount(gt * c + pred, minlength=c * c).reshape(c, c)
    tp = np.diagonal(conf).astype(np.float64)
    sup = conf.sum(axis=1).astype(np.float64)
    prd = conf.sum(axis=0).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = tp / prd
        recall = tp / sup
        f1 = 2.0 * tp / (sup + prd)
    accuracy = tp.sum() / gt.size
    balanced = recall[sup > 0].mean()
    macro = f1[(sup + prd) > 0].mean()
    weighted = (sup[sup > 0] * f1[sup > 0]).sum() / sup.sum()
    return accuracy, balanced, macro, weighted, precision, recall, f1, conf


def numpy_topk(gt, scores, ks):
    """Argmax prediction and top-k by the rank of the true class (ties to the lower class index)."""
    pred = scores.argmax(axis=1)
    s_true = np.take_along_axis(scores, gt[:, None], axis=1)
    cols = np.arange(scores.shape[1])[None, :]
    rank = (scores > s_true).sum(axis=1) + ((scores == s_true) & (cols < gt[:, None])).sum(axis=1)
    return pred, [float((rank < k).mean()) for k in ks]


def _import():
    try:
        from rfbench.metrics import classify
    except ImportError:
        raise NotImplementedError("rfbench.metrics.classify is not available at this commit") from None
    return classify


class ClassifyLabels:
    """Every label metric, per-class numbers and the confusion matrix on ``rows`` predicted labels."""

    params = [10_000] + ([10_000_000] if LARGE else [])
    param_names = ["rows"]
    timeout = 600

    def setup(self, rows):
        cl = _import()
        self.labels = cl.LabelSet(tuple(_names()))
        self.gt, self.pred = _labels(rows)
        gt, pred = _labels(500, seed=1)
        ev = cl.evaluate_classification(pred, gt, self.labels)  # compile (or load) outside the timed region
        ref = numpy_label_metrics(gt, pred, CLASSES)
        # Same semantics, or the ratio below would compare different work.
        for metric, want in zip(("accuracy", "balanced-accuracy", "macro-f1", "weighted-f1"), ref[:4]):
            assert abs(ev.find(metric).value - want) < 1e-12
        assert (ev.confusion == ref[7]).all()

    def _rfbench(self):
        from rfbench.metrics.classify import evaluate_classification

        return evaluate_classification(self.pred, self.gt, self.labels)

    def time_label_metrics(self, rows):
        self._rfbench()

    def peakmem_label_metrics(self, rows):
        self._rfbench()

    def time_numpy_reference(self, rows):
        numpy_label_metrics(self.gt, self.pred, CLASSES)

    def track_speedup_vs_numpy(self, rows):
        ours = best_time(self._rfbench)
        theirs = best_time(lambda: numpy_label_metrics(self.gt, self.pred, CLASSES))
        return theirs / ours

    track_speedup_vs_numpy.unit = "x"


class ClassifyScores:
    """Argmax predictions, every label metric and top-1/3/5 from an (``rows``, 22) float64 score array."""

    params = [10_000] + ([1_000_000] if LARGE else [])
    param_names = ["rows"]
    timeout = 600

    def setup(self, rows):
        cl = _import()
        self.labels = cl.LabelSet(tuple(_names()))
        rng = np.random.default_rng(2)
        self.gt = rng.integers(0, CLASSES, rows)
        self.scores = rng.normal(size=(rows, CLASSES))
        self.scores[np.arange(rows), self.gt] += 1.0
        gt = self.gt[:300]
        sc = np.round(self.scores[:300], 1)  # ties included
        ev = cl.evaluate_classification(sc, gt, self.labels, top_k=KS)
        pred, topk = numpy_topk(gt, sc, KS)
        assert [ev.find("top-k", k=k).value for k in KS] == topk
        assert abs(ev.find("macro-f1").value - numpy_label_metrics(gt, pred, CLASSES)[2]) < 1e-12

    def _rfbench(self):
        from rfbench.metrics.classify import evaluate_classification

        return evaluate_classification(self.scores, self.gt, self.labels, top_k=KS)

    def _numpy(self):
        pred, _ = numpy_topk(self.gt, self.scores, KS)
        numpy_label_metrics(self.gt, pred, CLASSES)

    def time_scores_topk(self, rows):
        self._rfbench()

    def peakmem_scores_topk(self, rows):
        self._rfbench()

    def time_numpy_reference(self, rows):
        self._numpy()

    def track_speedup_vs_numpy(self, rows):
        return best_time(self._numpy) / best_time(self._rfbench)

    track_speedup_vs_numpy.unit = "x"


class ClassifyBootstrap:
    """A gesture report over 100_000 rows in ``recordings`` clusters: model, majority-class and class-prior
    tables, and a 1000-replicate paired cluster bootstrap of every metric."""

    params = [50] + ([2000] if LARGE else [])
    param_names = ["recordings"]
    timeout = 600

    def setup(self, recordings):
        _import()
        try:
            from rfbench.report.gesture import gesture_report  # noqa: F401
        except ImportError:
            raise NotImplementedError("rfbench.report.gesture is not available at this commit") from None
        try:
            from rfbench.protocols.splitfile import SplitInfo
        except ImportError:  # older commits
            from rfbench.report.baseline import SplitInfo

        rng = np.random.default_rng(3)
        n = 100_000
        self.gt, self.pred = _labels(n, seed=3)
        self.groups = np.array([f"t{i:05d}" for i in rng.integers(0, recordings, n)])
        self.train = rng.integers(0, CLASSES, 5000)
        self.train_groups = np.array([f"a{i:05d}" for i in rng.integers(0, 100, 5000)])
        # a checked split as load_split returns it (the report only needs its sides and flags)
        self.split = SplitInfo(frozenset(f"a{i:05d}" for i in range(100)),
                               frozenset(f"t{i:05d}" for i in range(recordings)), "cross-subject", 0, {}, False,
                               {"passed": True, "checks": []}, False, None)
        self._report(n_boot=10)

    def _report(self, n_boot=1000):
        from rfbench.report.gesture import gesture_report

        return gesture_report(self.pred, self.gt, labels=_names(), split=self.split, groups=self.groups,
                              train_gt=self.train, train_groups=self.train_groups, n_boot=n_boot)

    def time_report_with_bootstrap(self, recordings):
        self._report()


class ClassifyKernels:
    """Each classification kernel alone on one thread, called as the public code calls it (arguments recorded
    from one public call in setup): the argmax and true-class rank of ``rows`` x 22 scores, the blocked
    confusion counts of ``rows`` labels with their rank histogram, and the per-cluster counts (rows, true
    positives, support, predictions, top-1/3/5 hits) of ``rows`` labels in 200 clusters."""

    params = [500_000] + ([5_000_000] if LARGE else [])
    param_names = ["rows"]
    timeout = 300

    def setup(self, rows):
        import numba

        cl = _import()
        self.threads = numba.get_num_threads()
        numba.set_num_threads(1)  # the kernels' own cost
        self.calls = cached(("classify", rows), lambda: record_kernel_calls({
            "argmax_rank": ("rfbench.metrics.kernels", "_argmax_rank"),
            "confusion_blocks": ("rfbench.metrics.kernels", "_confusion_blocks"),
            "class_sums": ("rfbench.metrics.kernels", "_class_sums"),
        }, self._workload(cl, rows)))

    @staticmethod
    def _workload(cl, rows):
        try:
            from rfbench.metrics.stats import make_segments
        except ImportError as exc:
            raise NotImplementedError(str(exc)) from None
        rng = np.random.default_rng(4)
        gt = rng.integers(0, CLASSES, rows)
        scores = rng.normal(size=(rows, CLASSES))
        scores[np.arange(rows), gt] += 1.0
        segments = make_segments(rows, rng.integers(0, 200, rows))
        label_set = cl.LabelSet(tuple(_names()))

        def run():
            labels = cl.prepare_labels(scores, gt, label_set)
            cl.class_table(labels.true, labels.pred, labels.rank, KS, segments, CLASSES)

        return run

    def teardown(self, rows):
        if hasattr(self, "threads"):
            import numba

            numba.set_num_threads(self.threads)

    def time_argmax_rank(self, rows):
        call_recorded(self.calls, "argmax_rank")

    def time_confusion_blocks(self, rows):
        call_recorded(self.calls, "confusion_blocks")

    def time_class_sums(self, rows):
        call_recorded(self.calls, "class_sums")
