"""What one pose number is: :class:`MetricSpec`, the full definition of a number (metric, skeleton, units,
normalization, threshold, comparison, averaging and every non-default spec piece) and its one-line label,
and :class:`Score`, a value that always carries its spec. The semantics of each piece are in
:mod:`rfbench.metrics.pose`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

#: A joint-pair normalizer below this fraction of the box diagonal is degenerate.
REL_FLOOR = 1e-6
HIGHER_IS_BETTER = {"pck": True, "pck-auc": True, "oks": True, "mpjpe": False, "pa-mpjpe": False}


def _fmt(x: float) -> str:
    """Shortest faithful text of a threshold: two decimals when exact (0.20), else repr (0.125)."""
    s = f"{x:.2f}"
    return s if float(s) == x else repr(float(x))


@dataclass(frozen=True)
class MetricSpec:
    """The full definition of one pose number.

    Attributes
    ----------
    metric : str
        ``pck``, ``pck-auc``, ``oks``, ``mpjpe`` or ``pa-mpjpe``.
    skeleton : str
        Layout name (``coco17``, ``h36m17`` or a custom layout's name).
    units : str
        Coordinate units of the inputs (``m``, ``mm``, ``px``, ``normalized``...).
    averaging : str
        ``micro`` (over all scoreable joints), ``macro`` (mean of per-joint values), ``batch-mean`` (PCK and
        PCK-AUC: the micro value of each batch of ``batch_size`` consecutive rows, averaged over batches, a short
        last batch weighing like a full one) or ``sample`` (OKS: mean over scoreable samples).
    dims : int
        2 or 3.
    normalization : str, optional
        ``hip-width``, ``torso``, ``bbox``, ``bbox-max-side``, ``abs:T`` or ``pair:I,J`` (joints by index or
        name) (PCK and PCK-AUC).
    normalizer_joints : tuple of str, optional
        The two joints a pair normalization measures.
    k : float, optional
        PCK threshold as a fraction of the normalizer (None under ``abs:T``, whose threshold is T).
    comparison : str, optional
        ``<=`` or ``<``.
    auc_n, auc_max : optional
        PCK-AUC thresholds ``auc_max * i / auc_n``, i = 0..auc_n-1 (under ``abs:T``: ``T * i / auc_n``, and
        ``auc_max`` is None).
    oks_area : str, optional
        ``0.53*bbox`` or the declared constant area (units²).
    sigmas : str, optional
        Where the OKS sigmas come from (a layout name or ``declared``).
    floor : str, optional
        What a small relative normalizer does (PCK and PCK-AUC): ``relative`` (below 1e-6 of the box diagonal,
        or a zero box, the sample is unscoreable), ``clamp:V`` (the normalizer is at least V units) or ``none``
        (used as it is; a zero normalizer makes every joint of its sample wrong, and they still count).
    visibility : str
        ``used`` (only visible joints are scored) or ``ignored`` (every joint is scored, as sources without a
        visibility input do).
    per_axis : bool
        PCK and PCK-AUC: each axis of the error is divided by the normalizer before the norm (mmpose).
    precision : str
        ``float32``: normalised distances and thresholds are rounded to float32 before comparing (mmpose).
    result_precision : str
        ``float32``: a micro PCK fraction is returned rounded to float32, hits / scoreable divided in float32
        (WiFlow's ``.float().mean()``).
    batch_size : int, optional
        Rows per batch under ``batch-mean``.
    pa_fit : str, optional
        PA-MPJPE: the joints the alignment is fitted on, ``visible`` or ``all`` (mmpose; errors are averaged over
        the visible ones either way).
    convention : str, optional
        The named convention that set this spec (:mod:`rfbench.metrics.conventions`).
    quirks : tuple of str
        The convention's quirks, rendered in the label.
    """

    metric: str
    skeleton: str
    units: str
    averaging: str
    dims: int
    normalization: str | None = None
    normalizer_joints: tuple[str, str] | None = None
    k: float | None = None
    comparison: str | None = None
    auc_n: int | None = None
    auc_max: float | None = None
    oks_area: str | None = None
    sigmas: str | None = None
    floor: str | None = None
    visibility: str = "used"
    per_axis: bool = False
    precision: str = "float64"
    result_precision: str = "float64"
    batch_size: int | None = None
    pa_fit: str | None = None
    convention: str | None = None
    quirks: tuple[str, ...] = ()

    @property
    def higher_is_better(self) -> bool:
        return HIGHER_IS_BETTER[self.metric]

    @property
    def bootstrappable(self) -> bool:
        """False for batch-mean values: a mean over fixed batches is not a function of cluster totals, so it
        gets no bootstrap interval."""
        return self.averaging != "batch-mean"

    def _norm_text(self) -> str:
        if self.normalization is None:
            return ""
        if self.normalizer_joints:
            return f"{self.normalization}({self.normalizer_joints[0]}–{self.normalizer_joints[1]})"
        if self.normalization.startswith("abs:"):
            return f"abs(T={self.normalization[4:]} {self.units})"
        return self.normalization

    @property
    def is_absolute(self) -> bool:
        """True under ``abs:T``: the threshold is T in coordinate units, not a fraction k of a normalizer."""
        return bool(self.normalization) and self.normalization.startswith("abs:")

    def _averaging_text(self) -> str:
        if self.averaging == "batch-mean":
            return f"batch-mean(B={self.batch_size})"
        return self.averaging

    def _tail(self) -> str:
        """The non-default spec pieces and the convention's quirks, as label tokens."""
        tokens = []
        if self.floor and self.floor.startswith("clamp:"):
            tokens.append(f"clamped≥{self.floor[6:]}")
        elif self.floor == "none":
            tokens.append("unclamped")
        if self.per_axis:
            tokens.append("per-axis")
        if self.precision == "float32":
            tokens.append("float32")
        if self.result_precision == "float32":
            tokens.append("result-float32")
        if self.visibility == "ignored":
            tokens.append("no-visibility")
        if self.pa_fit == "all":
            tokens.append("fit-all-joints")
        if self.convention:
            tokens.append(f"[{self.convention}" + (f": {'; '.join(self.quirks)}]" if self.quirks else "]"))
        return "".join(" " + t for t in tokens)

    @property
    def label(self) -> str:
        """One line rendering the whole spec."""
        avg, tail = self._averaging_text(), self._tail()
        if self.metric == "pck" and self.is_absolute:
            cmp = "≤" if self.comparison == "<=" else "<"
            return f"PCK abs({cmp}{self.normalization[4:]} {self.units}) {self.skeleton} {avg}{tail}"
        if self.metric == "pck":
            return f"PCK@{_fmt(self.k)} {self._norm_text()} {self.skeleton} {self.comparison} {avg}{tail}"
        if self.metric == "pck-auc" and self.is_absolute:
            return (f"PCK-AUC abs[0,{self.normalization[4:]} {self.units}) n={self.auc_n} {self.skeleton} "
                    f"{self.comparison} {avg}{tail}")
        if self.metric == "pck-auc":
            return (f"PCK-AUC[0,{_fmt(self.auc_max)}) n={self.auc_n} {self._norm_text()} {self.skeleton} "
                    f"{self.comparison} {avg}{tail}")
        if self.metric == "oks":
            return f"OKS area={self.oks_area} sigmas={self.sigmas} {self.skeleton} mean over samples"
        if self.metric == "mpjpe":
            return f"MPJPE ({self.units}) {self.skeleton} {avg}{tail}"
        return f"PA-MPJPE ({self.units}) similarity-Procrustes {self.skeleton} {avg}{tail}"

    def _floor_text(self) -> str | None:
        if not self.normalization or self.is_absolute:
            return None
        if self.floor and self.floor.startswith("clamp:"):
            return f"clamped to >= {self.floor[6:]} {self.units}"
        if self.floor == "none":
            return "none (a zero normalizer makes every joint of its sample wrong, counted)"
        return f"{REL_FLOOR:g} x box diagonal" if self.normalizer_joints else "> 0"

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "skeleton": self.skeleton,
            "units": self.units,
            "averaging": self.averaging,
            "dims": self.dims,
            "normalization": self.normalization,
            "normalizer_joints": list(self.normalizer_joints) if self.normalizer_joints else None,
            "normalizer_floor": self._floor_text(),
            "floor": self.floor,
            "k": self.k,
            "comparison": self.comparison,
            "auc_n": self.auc_n,
            "auc_max": self.auc_max,
            "oks_area": self.oks_area,
            "sigmas": self.sigmas,
            "visibility": self.visibility,
            "per_axis": self.per_axis,
            "precision": self.precision,
            "result_precision": self.result_precision,
            "batch_size": self.batch_size,
            "pa_fit": self.pa_fit,
            "convention": self.convention,
            "quirks": list(self.quirks),
            "higher_is_better": self.higher_is_better,
        }


@dataclass(frozen=True)
class Score:
    """One pose number with its spec.

    Attributes
    ----------
    spec : MetricSpec
    value : float or None
        None when nothing was scoreable (never 1.0, never 0.0).
    scoreable : int
        Scoreable joints (samples for OKS).
    scoreable_unit : str
        ``joints`` or ``samples``.
    unscoreable_samples : int
        Samples left out (no visible joint, degenerate normalizer, ...).
    samples : int
        All samples.
    per_joint : dict or None
        Joint name to per-joint value (macro scores only).
    """

    spec: MetricSpec
    value: float | None
    scoreable: int
    scoreable_unit: str
    unscoreable_samples: int
    samples: int
    per_joint: Mapping[str, float | None] | None = None

    @property
    def label(self) -> str:
        return self.spec.label

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "scoreable": self.scoreable, "scoreable_unit": self.scoreable_unit,
                "unscoreable_samples": self.unscoreable_samples, "samples": self.samples,
                "per_joint": dict(self.per_joint) if self.per_joint is not None else None}

    def __str__(self) -> str:
        v = "unscoreable" if self.value is None else f"{self.value:.6g}"
        return f"{self.label}: {v}"
