"""Classification metrics (gesture, activity) under a declared label set (DESIGN.md §5).

Every number is a :class:`ClassScore` carrying its :class:`ClassificationSpec` — the metric, how it averages,
the label set it was computed over (size, where it came from, sha256 of its names) — and a one-line label,
e.g. ``macro-F1 over classes in test truth or predictions (6 classes, declared)``.

**Label set.** A :class:`LabelSet` is the ordered list of class names: declared (a ``names.txt`` file, one name
per line) or inferred (the sorted union of the string labels seen). It fixes the class order of the confusion
matrix and of score columns. Labels are names (strings) or indices into the label set (integers);
a label outside the set is an error, never silently dropped, and a class of the set that appears nowhere is
still reported (with undefined precision, recall and F1).

**Conventions** (sufficient statistics per class c: ``tp_c`` rows with true = predicted = c, ``support_c``
rows with true = c, ``predicted_c`` rows predicted c):

- *accuracy* = sum tp / rows.
- *precision_c* = tp_c / predicted_c, undefined (None) when predicted_c = 0; *recall_c* = tp_c / support_c,
  undefined when support_c = 0; *F1_c* = 2 tp_c / (support_c + predicted_c), undefined when both are 0 — so
  a class with support but no prediction (or the reverse) has F1 = 0, and precision (or recall) undefined.
- *balanced accuracy* = mean recall over the classes with support (test truth).
- *macro-F1* = mean F1 over the classes with a defined F1: those in the test truth or the predictions.
  Declared classes absent from both do not enter the average (they are listed as absent).
- *weighted-F1* = sum over classes of support_c x F1_c / rows.
- *top-k accuracy* (from an (N, C) score array) = share of rows whose true class ranks among the k highest
  scores; ties are broken toward the lower class index (the same rule as ``argmax``, so top-1 accuracy equals
  the accuracy of the argmax predictions).

These are scikit-learn's ``accuracy_score``, ``balanced_accuracy_score``, ``f1_score(average="macro")`` and
``f1_score(average="weighted")`` with their default ``labels=None`` (the classes present in truth or
predictions) and ``precision_recall_fscore_support`` with undefined values reported as None instead of
``zero_division``; its ``top_k_accuracy_score`` differs only on exactly tied scores (it ranks the higher
index first). Metrics of zero rows are refused.

Arguments come in the order of the pose metrics, ``(pred, gt, ...)``: predictions first, unlike
scikit-learn's ``(y_true, y_pred)``; pass them by keyword when in doubt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from rfbench._jit import serial_below
from rfbench.errors import ValidationError
from rfbench.metrics import kernels as _k
from rfbench.metrics.labelset import LabelSet, as_label_set  # kept apart: windows load it without the kernels
from rfbench.metrics.stats import Segments, column_totals, make_segments, mean_defined, ratio

__all__ = [
    "LabelSet",
    "ClassificationSpec",
    "ClassScore",
    "ClassPlan",
    "ClassEvaluation",
    "Labels",
    "prepare_labels",
    "evaluate_classification",
    "confusion_matrix",
    "accuracy",
    "balanced_accuracy",
    "macro_f1",
    "weighted_f1",
    "top_k_accuracy",
    "per_class",
    "class_table",
    "totals_table",
    "confusion_counts",
    "row_blocks",
    "as_label_set",
    "majority_table",
    "prior_table",
    "METRICS",
    "DEFAULT_TOP_K",
    "MAX_BLOCKS",
]

from rfbench.metrics.limits import CLASSIFY_METRICS as METRICS  # noqa: E402
from rfbench.metrics.limits import DEFAULT_TOP_K  # noqa: E402

#: Unclustered rows are counted in at most this many fixed blocks (counts are integers: any grouping gives
#: the same totals; blocks only let threads share the work).
MAX_BLOCKS = 64
_MIN_BLOCK = 1 << 16

_AVERAGING = {"accuracy": "micro", "balanced-accuracy": "macro-recall", "macro-f1": "macro", "weighted-f1": "weighted",
              "top-k": "micro"}
_UNDEFINED = {
    "accuracy": None,
    "balanced-accuracy": "mean recall over the classes with test support; classes without support are left out",
    "macro-f1": "mean F1 over the classes in the test truth or the predictions; a class in neither has no F1 and "
                "is left out; F1 = 0 for a class with support but no prediction or the reverse",
    "weighted-f1": "F1 weighted by test support; classes without support weigh 0",
    "top-k": None,
}


# -- specs and scores ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClassificationSpec:
    """The full definition of one classification number.

    Attributes
    ----------
    metric : str
        ``accuracy``, ``balanced-accuracy``, ``macro-f1``, ``weighted-f1`` or ``top-k``.
    n_classes : int
        Size of the label set.
    label_set : str
        ``declared`` or ``inferred``.
    label_set_sha256 : str
        sha256 of the label set's names (:attr:`LabelSet.sha256`).
    k : int, optional
        Top-k only.
    """

    metric: str
    n_classes: int
    label_set: str
    label_set_sha256: str
    k: int | None = None

    higher_is_better = True

    @property
    def averaging(self) -> str:
        return _AVERAGING[self.metric]

    @property
    def label(self) -> str:
        """One line rendering the whole spec."""
        tail = f"({self.n_classes} classes, {self.label_set})"
        if self.metric == "accuracy":
            return f"accuracy {tail}"
        if self.metric == "balanced-accuracy":
            return f"balanced accuracy = mean recall over classes with test support {tail}"
        if self.metric == "macro-f1":
            return f"macro-F1 over classes in test truth or predictions {tail}"
        if self.metric == "weighted-f1":
            return f"weighted-F1 by test support {tail}"
        return f"top-{self.k} accuracy, ties to the lower class index {tail}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "task": "classification",
            "averaging": self.averaging,
            "k": self.k,
            "ties": "lower class index first" if self.metric == "top-k" else None,
            "n_classes": self.n_classes,
            "label_set": self.label_set,
            "label_set_sha256": self.label_set_sha256,
            "undefined": _UNDEFINED[self.metric],
            "higher_is_better": True,
        }


@dataclass(frozen=True)
class ClassScore:
    """One classification number with its spec.

    Attributes
    ----------
    spec : ClassificationSpec
    value : float or None
        None when undefined (no class to average over).
    rows : int
        Rows scored.
    classes_averaged : int or None
        Classes that entered a macro or weighted average (None for accuracy and top-k).
    """

    spec: ClassificationSpec
    value: float | None
    rows: int
    classes_averaged: int | None = None

    @property
    def label(self) -> str:
        return self.spec.label

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "scoreable": self.rows, "scoreable_unit": "rows", "unscoreable_samples": 0,
                "samples": self.rows, "classes_averaged": self.classes_averaged}

    def __str__(self) -> str:
        v = "undefined" if self.value is None else f"{self.value:.6g}"
        return f"{self.label}: {v}"


# -- labels in, class indices out -------------------------------------------------------------------------


@dataclass(frozen=True)
class Labels:
    """Validated labels: class indices of the ground truth and predictions, the rank of the true class
    (empty unless scores were given), the label set, and the counts of one pass over them: the confusion
    matrix (rows = true class) and the histogram of true-class ranks (top-k hits = ``rank_hist[:k].sum()``)."""

    true: np.ndarray
    pred: np.ndarray
    rank: np.ndarray
    label_set: LabelSet
    from_scores: bool
    confusion: np.ndarray
    rank_hist: np.ndarray

    @property
    def rows(self) -> int:
        return int(self.true.shape[0])


def _as_scores(pred: np.ndarray, n_rows: int, n_classes: int) -> np.ndarray:
    if pred.dtype.kind not in "fiu" or pred.dtype.kind == "b":
        raise ValidationError(f"scores must be numbers, found dtype {pred.dtype}")
    if pred.shape != (n_rows, n_classes):
        raise ValidationError(f"scores have shape {pred.shape} but the ground truth has {n_rows} rows and the label "
                              f"set {n_classes} classes; give one score per class, in label-set order")
    scores = np.ascontiguousarray(pred, dtype=np.float64)
    nan = np.isnan(scores)
    if nan.any():
        i, c = np.argwhere(nan)[0]
        raise ValidationError(f"scores hold NaN at {int(nan.sum())} place(s), first at row {int(i)} class {int(c)}; a "
                              f"NaN score cannot be ranked — fix the model output")
    return scores


def prepare_labels(pred, gt, labels=None, *, extra=(), need_rank: bool = True) -> Labels:
    """Check and encode predictions and ground truth (the argument order of the pose metrics: ``pred, gt``).

    Parameters
    ----------
    pred : array_like, (N,) or (N, C)
        Predicted labels like ``gt``, or scores (floats, one column per class in label-set order; the
        prediction is the argmax, ties to the lower index).
    gt : array_like, (N,)
        True labels: class names (strings) or indices into ``labels`` (integers).
    labels : LabelSet, sequence of str or path, optional
        The label set; without it, it is inferred from the string labels of ``gt``, ``pred`` and ``extra``
        (integer labels and scores then are refused).
    extra : sequence of array_like
        Further label arrays (e.g. training labels) that contribute to an inferred label set.
    need_rank : bool
        Compute the true class's rank from scores (for top-k).
    """
    gt = np.asarray(gt)
    pred = np.asarray(pred)
    if gt.ndim != 1:
        raise ValidationError(f"ground truth must be one label per row (1-D), got shape {gt.shape}")
    n = gt.shape[0]
    if n == 0:
        raise ValidationError("the ground truth has no rows; there is nothing to score")
    if pred.ndim not in (1, 2):
        raise ValidationError(f"predictions must be labels (N,) or scores (N, C), got shape {pred.shape}")
    if pred.shape[0] != n:
        raise ValidationError(f"predictions have {pred.shape[0]} rows but the ground truth has {n}; they must match "
                              f"row for row")
    label_set = as_label_set(labels)
    from_scores = pred.ndim == 2
    if label_set is None:
        if from_scores:
            raise ValidationError("scores need a declared label set (`label_set`, e.g. names.txt) saying which "
                                  "column is which class")
        label_set = LabelSet.infer(gt, pred, *extra)
    c = label_set.size
    true = label_set.encode(gt, "ground truth", check_range=from_scores)
    if from_scores:
        scores = _as_scores(pred, n, c)
        pred_idx = np.empty(n, dtype=np.int64)
        rank = np.empty(n, dtype=np.int64)
        with serial_below(scores.size):
            _k._argmax_rank(scores, true, pred_idx, rank)
        if not need_rank:
            rank = np.empty(0, dtype=np.int64)
    else:
        pred_idx = label_set.encode(pred, "predictions", check_range=False)
        rank = np.empty(0, dtype=np.int64)
    # One counting pass: the confusion matrix, the rank histogram, and the range check of integer labels.
    blocks = row_blocks(n)
    conf = np.zeros((blocks.count, c, c), np.int64)
    hist = np.zeros((blocks.count, c if rank.size else 0), np.int64)
    bad = np.zeros(blocks.count, np.int64)
    with serial_below(n):
        _k._confusion_blocks(true, pred_idx, rank, c, blocks.start, conf, hist, bad)
    if bad.any():
        label_set.encode(gt, "ground truth")  # raise with the first out-of-range label
        label_set.encode(pred, "predictions")
    return Labels(true, pred_idx, rank, label_set, from_scores, conf.sum(axis=0), hist.sum(axis=0))


# -- the plan: which numbers, which columns ---------------------------------------------------------------


@dataclass
class ClassPlan:
    """Validated settings and the column layout of a per-segment table.

    Columns: ``rows``, then ``tp`` (C), ``support`` (C), ``predicted`` (C), then one top-k hit count per k.
    Every statistic is a function of column totals, so the cluster bootstrap
    (:func:`rfbench.metrics.stats.cluster_bootstrap`) works on the same table.
    """

    label_set: LabelSet
    metrics: tuple[str, ...]
    ks: tuple[int, ...]
    specs: list[ClassificationSpec] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @classmethod
    def create(cls, label_set: LabelSet, *, metrics: Iterable[str] | None = None, top_k: Sequence[int] | None = None,
               has_scores: bool = False) -> "ClassPlan":
        c = label_set.size
        notes = []
        if metrics is None:
            metrics = [m for m in METRICS if m != "top-k" or has_scores]
        metrics = tuple(dict.fromkeys(str(m).strip() for m in metrics))
        if not metrics:
            raise ValidationError("no metric requested")
        for m in metrics:
            if m not in METRICS:
                raise ValidationError(f"unknown metric {m!r}; choose from {', '.join(METRICS)}")
        ks: tuple[int, ...] = ()
        if top_k is not None and "top-k" not in metrics:
            if not has_scores:
                raise ValidationError("top-k accuracy needs scores: give `pred` as an (N, C) float array, one column "
                                      "per class of the label set")
            raise ValidationError("top-k thresholds were given but top-k is not among the requested metrics")
        if "top-k" in metrics:
            if not has_scores:
                raise ValidationError("top-k accuracy needs scores: give `pred` as an (N, C) float array, one column "
                                      "per class of the label set")
            if top_k is None:
                ks = tuple(k for k in DEFAULT_TOP_K if k < c)
                if not ks:
                    defaults = ", ".join(map(str, DEFAULT_TOP_K))
                    notes.append(f"top-k not computed: with {c} classes every default k ({defaults}) is trivially 1; "
                                 "ask for one with --top-k")
                    metrics = tuple(m for m in metrics if m != "top-k")
            else:
                top_k = list(top_k)
                if not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in top_k):
                    raise ValidationError(f"top-k thresholds must be integers, got {top_k!r}")
                ks = tuple(dict.fromkeys(int(k) for k in top_k))
                bad = [k for k in ks if not 1 <= k <= c]
                if bad:
                    raise ValidationError(f"top-k: k = {bad[0]} is outside 1..{c} (the label set has {c} classes)")
                if not ks:
                    raise ValidationError("top-k needs at least one k")
        plan = cls(label_set, metrics, ks, notes=notes)
        for m in metrics:
            if m == "top-k":
                plan.specs += [ClassificationSpec("top-k", c, label_set.source, label_set.sha256, k) for k in ks]
            else:
                plan.specs.append(ClassificationSpec(m, c, label_set.source, label_set.sha256))
        return plan

    @property
    def n_classes(self) -> int:
        return self.label_set.size

    @property
    def width(self) -> int:
        return 1 + 3 * self.n_classes + len(self.ks)

    def cols(self, name: str) -> slice:
        """Column slice of ``rows``, ``tp``, ``support``, ``predicted`` or ``topk``."""
        c = self.n_classes
        return slice(*{"rows": (0, 1), "tp": (1, 1 + c), "support": (1 + c, 1 + 2 * c),
                       "predicted": (1 + 2 * c, 1 + 3 * c), "topk": (1 + 3 * c, 1 + 3 * c + len(self.ks))}[name])

    def statistic(self, index: int):
        """The statistic of ``specs[index]`` as a function of column totals ``(..., W) -> (...)``."""
        return _statistic(self.specs[index], self.cols, self.ks)

    def table(self, labels: Labels, segments: Segments) -> np.ndarray:
        """Per-segment sufficient statistics ``(segments, W)`` (float64; counts are exact)."""
        return class_table(labels.true, labels.pred, labels.rank, self.ks, segments, self.n_classes)

    def scores(self, table: np.ndarray) -> list[ClassScore]:
        """Point estimates from a table (see :meth:`table`), or from its column totals."""
        totals = _totals(table)
        rows = int(totals[0])
        sup = totals[self.cols("support")]
        pred = totals[self.cols("predicted")]
        out = []
        for i, spec in enumerate(self.specs):
            v = float(self.statistic(i)(totals))
            averaged = None
            if spec.metric == "balanced-accuracy":
                averaged = int(np.count_nonzero(sup > 0))
            elif spec.metric == "macro-f1":
                averaged = int(np.count_nonzero(sup + pred > 0))
            elif spec.metric == "weighted-f1":
                averaged = int(np.count_nonzero(sup > 0))
            out.append(ClassScore(spec, None if math.isnan(v) else v, rows, averaged))
        return out


def _totals(table) -> np.ndarray:
    """Column totals of a table ``(S, W)`` (exactly rounded sums), or a totals row ``(W,)`` as it is."""
    table = np.asarray(table, dtype=np.float64)
    if table.ndim == 1:
        return table
    if table.shape[0] == 1:
        return table[0]
    return column_totals(table)


def _statistic(spec: ClassificationSpec, cols, ks):
    rows, tp, sup, pred = cols("rows"), cols("tp"), cols("support"), cols("predicted")
    if spec.metric == "accuracy":
        return lambda x: ratio(x[..., tp].sum(-1), x[..., rows][..., 0])
    if spec.metric == "balanced-accuracy":
        return lambda x: mean_defined(x[..., tp], x[..., sup])
    if spec.metric == "macro-f1":
        return lambda x: mean_defined(2.0 * x[..., tp], x[..., sup] + x[..., pred])
    if spec.metric == "weighted-f1":
        def weighted(x):
            f1 = ratio(2.0 * x[..., tp], x[..., sup] + x[..., pred])
            s = x[..., sup]
            return ratio(np.where(s > 0, s * f1, 0.0).sum(-1), s.sum(-1))
        return weighted
    q = cols("topk").start + ks.index(spec.k)
    return lambda x: ratio(x[..., q], x[..., rows][..., 0])


def class_table(true, pred, rank, ks, segments: Segments, n_classes: int) -> np.ndarray:
    """Per-segment ``[rows, tp (C), support (C), predicted (C), top-k hits (K)]`` as float64 (see
    :class:`ClassPlan`); ``rank`` may be empty (no top-k). Indices must lie in ``0..n_classes-1``."""
    s = segments.count
    n_rows = np.zeros(s, np.int64)
    tp = np.zeros((s, n_classes), np.int64)
    support = np.zeros((s, n_classes), np.int64)
    predicted = np.zeros((s, n_classes), np.int64)
    ks_arr = np.asarray(ks, dtype=np.int64) if len(rank) else np.empty(0, np.int64)
    topk = np.zeros((s, len(ks)), np.int64)
    with serial_below(int(true.shape[0])):
        _k._class_sums(true, pred, rank, ks_arr, segments.order, segments.start, n_rows, tp, support, predicted, topk)
    return np.hstack([n_rows[:, None], tp, support, predicted, topk]).astype(np.float64)


def row_blocks(n_rows: int) -> Segments:
    """At most :data:`MAX_BLOCKS` fixed blocks of rows (for unclustered counting)."""
    block = max(_MIN_BLOCK, -(-n_rows // MAX_BLOCKS))
    return make_segments(n_rows, None, block=block)


def totals_table(labels: Labels, plan: "ClassPlan") -> np.ndarray:
    """The one-row table ``(1, W)`` of all rows, from the counts :func:`prepare_labels` made (no pass over the
    rows)."""
    conf = labels.confusion
    topk = [labels.rank_hist[:k].sum() for k in plan.ks]
    row = np.concatenate([[labels.rows], np.diagonal(conf), conf.sum(axis=1), conf.sum(axis=0), topk])
    return row.astype(np.float64)[None, :]


def confusion_counts(true, pred, n_classes: int) -> np.ndarray:
    """The (C, C) int64 confusion matrix of class indices: rows = true class, columns = predicted class."""
    true = np.ascontiguousarray(true, dtype=np.int64)
    pred = np.ascontiguousarray(pred, dtype=np.int64)
    blocks = row_blocks(int(true.shape[0]))
    out = np.zeros((blocks.count, n_classes, n_classes), np.int64)
    bad = np.zeros(blocks.count, np.int64)
    with serial_below(int(true.shape[0])):
        _k._confusion_blocks(true, pred, np.empty(0, np.int64), n_classes, blocks.start, out,
                             np.zeros((blocks.count, 0), np.int64), bad)
    if bad.any():
        raise ValidationError(f"{int(bad.sum())} label(s) lie outside the class indices 0..{n_classes - 1}")
    return out.sum(axis=0)


# -- baselines as tables ----------------------------------------------------------------------------------


def majority_table(table: np.ndarray, plan: ClassPlan, majority: int, class_rank: np.ndarray) -> np.ndarray:
    """The table a constant prediction ``majority`` would give on the same rows (same support per segment).

    As a scorer it ranks classes by ``class_rank`` (0 = the majority class): top-k counts the rows whose
    true class has ``class_rank < k``.
    """
    out = np.zeros_like(table)
    rows, tp, sup, pred = plan.cols("rows"), plan.cols("tp"), plan.cols("support"), plan.cols("predicted")
    out[:, rows] = table[:, rows]
    out[:, sup] = table[:, sup]
    out[:, tp.start + majority] = table[:, sup.start + majority]
    out[:, pred.start + majority] = table[:, rows.start]
    for q, k in enumerate(plan.ks):
        hit = np.asarray(class_rank) < k
        out[:, plan.cols("topk").start + q] = table[:, sup][:, hit].sum(axis=1)
    return out


def prior_table(table: np.ndarray, plan: ClassPlan, prior: np.ndarray) -> np.ndarray:
    """The *expected* table of a classifier drawing each prediction independently from ``prior`` (the
    training class frequencies): ``E[tp_c] = support_c * prior_c``, ``E[predicted_c] = rows * prior_c``.

    Accuracy and balanced accuracy of these counts are the expected values of a random draw (they are linear
    in the counts); F1 values are the F1 of the expected confusion matrix, not the mean F1 of random draws.
    Top-k columns are NaN (a drawn label has no ranking).
    """
    prior = np.asarray(prior, dtype=np.float64)
    out = np.zeros_like(table)
    rows, tp, sup, pred = plan.cols("rows"), plan.cols("tp"), plan.cols("support"), plan.cols("predicted")
    out[:, rows] = table[:, rows]
    out[:, sup] = table[:, sup]
    out[:, tp] = table[:, sup] * prior[None, :]
    out[:, pred] = table[:, rows.start][:, None] * prior[None, :]
    out[:, plan.cols("topk")] = np.nan
    return out


# -- evaluation -------------------------------------------------------------------------------------------


def per_class(totals: np.ndarray, plan: ClassPlan) -> list[dict[str, Any]]:
    """Per class, in label-set order: ``class``, ``index``, ``support``, ``predicted``, ``tp``, ``precision``,
    ``recall``, ``f1`` (None when undefined, see the module docstring)."""
    totals = np.asarray(totals, dtype=np.float64)
    tp = totals[plan.cols("tp")]
    sup = totals[plan.cols("support")]
    pred = totals[plan.cols("predicted")]
    def num(x):
        return [None if math.isnan(v) else v for v in x.tolist()]

    prec, rec, f1 = num(ratio(tp, pred)), num(ratio(tp, sup)), num(ratio(2.0 * tp, sup + pred))
    return [{"class": name, "index": c, "support": s, "predicted": p, "tp": t, "precision": pr, "recall": r, "f1": f}
            for c, (name, s, p, t, pr, r, f) in enumerate(zip(plan.label_set.names, sup.astype(np.int64).tolist(),
                                                               pred.astype(np.int64).tolist(),
                                                               tp.astype(np.int64).tolist(), prec, rec, f1))]


@dataclass
class ClassEvaluation:
    """The result of :func:`evaluate_classification`.

    Attributes
    ----------
    scores : list of ClassScore
        One per spec, in the plan's order.
    plan : ClassPlan
    labels : Labels
    confusion : ndarray, (C, C) int64
        Rows = true class, columns = predicted class, in label-set order.
    classes : list of dict
        Per-class counts, precision, recall and F1 (:func:`per_class`).
    segments : Segments
        The clusters, or one segment of all rows.
    table : ndarray
        Per-segment sufficient statistics (the bootstrap's input).
    """

    scores: list[ClassScore]
    plan: ClassPlan
    labels: Labels
    confusion: np.ndarray
    classes: list[dict[str, Any]]
    segments: Segments
    table: np.ndarray

    def find(self, metric: str, k: int | None = None) -> ClassScore:
        hits = [s for s in self.scores if s.spec.metric == metric and (k is None or s.spec.k == k)]
        if len(hits) != 1:
            raise ValidationError(f"{len(hits)} scores match {metric} k={k}")
        return hits[0]


def evaluate_classification(pred, gt, labels=None, *, metrics: Iterable[str] | None = None,
                            top_k: Sequence[int] | None = None, clusters=None) -> ClassEvaluation:
    """Score predicted classes (or scores) against true classes over a declared label set.

    Parameters
    ----------
    pred : array_like, (N,) or (N, C)
        Predicted labels like ``gt``, or scores with one column per class (argmax = prediction; enables top-k).
    gt : array_like, (N,)
        True labels: names (strings) or indices into ``labels`` (integers).
    labels : LabelSet, sequence of str or path to names.txt, optional
        The label set (class order); inferred from string labels when omitted.
    metrics : iterable of str, optional
        Subset of ``accuracy``, ``balanced-accuracy``, ``macro-f1``, ``weighted-f1``, ``top-k``; default all
        that apply (top-k only with scores).
    top_k : sequence of int, optional
        Top-k thresholds (default: 3 and 5 where below the number of classes).
    clusters : array_like, (N,), optional
        Recording (or subject) id per row: the segments of the table, for a cluster bootstrap.

    Raises
    ------
    ValidationError
        Unknown labels, length mismatch, NaN scores, integer labels without a label set, no rows.
    """
    lab = prepare_labels(pred, gt, labels)
    plan = ClassPlan.create(lab.label_set, metrics=metrics, top_k=top_k, has_scores=lab.from_scores)
    if clusters is not None:
        segments = make_segments(lab.rows, clusters)
        table = plan.table(lab, segments)
    else:
        segments = make_segments(lab.rows, None, block=max(1, lab.rows))
        table = totals_table(lab, plan)
    totals = _totals(table)
    return ClassEvaluation(plan.scores(totals), plan, lab, lab.confusion, per_class(totals, plan), segments, table)


def _single(pred, gt, labels, metric: str, k: int | None = None) -> ClassScore:
    ev = evaluate_classification(pred, gt, labels, metrics=[metric], top_k=[k] if k is not None else None)
    return ev.scores[0]


def accuracy(pred, gt, labels=None) -> ClassScore:
    """Share of rows whose prediction is the true class. Returns a :class:`ClassScore`."""
    return _single(pred, gt, labels, "accuracy")


def balanced_accuracy(pred, gt, labels=None) -> ClassScore:
    """Mean recall over the classes with test support. Returns a :class:`ClassScore`."""
    return _single(pred, gt, labels, "balanced-accuracy")


def macro_f1(pred, gt, labels=None) -> ClassScore:
    """Mean F1 over the classes in the test truth or the predictions. Returns a :class:`ClassScore`."""
    return _single(pred, gt, labels, "macro-f1")


def weighted_f1(pred, gt, labels=None) -> ClassScore:
    """F1 per class weighted by test support. Returns a :class:`ClassScore`."""
    return _single(pred, gt, labels, "weighted-f1")


def top_k_accuracy(scores, gt, k: int, labels) -> ClassScore:
    """Share of rows whose true class is among the ``k`` highest of ``scores`` (N, C) (ties to the lower class
    index). ``labels`` is the label set naming the columns. Returns a :class:`ClassScore`."""
    if np.ndim(scores) != 2:
        raise ValidationError("top-k accuracy needs scores: an (N, C) array, one column per class")
    return _single(scores, gt, labels, "top-k", k)


def confusion_matrix(pred, gt, labels=None) -> np.ndarray:
    """The (C, C) int64 confusion matrix in label-set order: rows = true class, columns = predicted class."""
    return prepare_labels(pred, gt, labels, need_rank=False).confusion
