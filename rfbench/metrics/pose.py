"""Pose metrics under a declared :class:`MetricSpec` (DESIGN.md §5).

Every number this module returns is a :class:`Score`, which carries the full spec that defines it — skeleton
layout, normalization (and the joints it measures), threshold, comparison, averaging, units — and its
one-line label, e.g. ``PCK@0.20 torso(left_shoulder–right_hip) coco17 <= micro``. There is no function that
returns a bare float.

Semantics (each pinned by a hand-computed test):

- **Scoreable joint**: visible in the ground truth, in a sample whose normalizer is usable. A sample with no
  visible joint, or whose normalizer is degenerate, is *unscoreable*: counted as such, never counted correct
  (nor wrong). A metric with no scoreable joint has value None.
- **Normalizers**: ``hip-width`` = |left_hip - right_hip|, ``torso`` = |left_shoulder - right_hip| (joints by
  role from the skeleton, both must be visible); ``bbox`` = diagonal and ``bbox-max-side`` = longest side of
  the box around the sample's visible ground-truth joints (a 3D box for 3D poses); ``abs:T`` = T in coordinate
  units. A joint-pair normalizer is degenerate when below 1e-6 of the box diagonal (or the diagonal is 0); a
  box normalizer when it is 0.
- **PCK@k**: a joint is correct when ``distance / normalizer <= k`` (or ``<`` when declared). ``micro`` =
  correct / scoreable over all joints; ``macro`` = mean over joints of each joint's PCK (joints with no
  scoreable instance are left out). Under ``abs:T`` the threshold is k·T.
- **PCK-AUC**: mean PCK over the n thresholds ``k_max * i / n``, i = 0..n-1 (mmpose: n = 20, k_max = 1).
- **OKS** (2D only): pycocotools ``computeOks`` — mean over visible joints of
  ``exp(-d^2 / (2 s^2 (2 sigma)^2))`` with ``s^2`` the area: declared, or 0.53 x width x height of the
  visible joints' box. Averaged over scoreable samples; a sample with zero area is unscoreable.
- **MPJPE**: mean Euclidean error over visible joints, in the declared units. **PA-MPJPE**: each frame's
  prediction is first aligned to its ground truth by the similarity transform (rotation with reflection
  correction, uniform scale, translation) fitted on its visible joints; frames with fewer than 3 visible
  joints or a single-point ground truth are unscoreable.
- **Ground truth** must be finite at visible joints and within ±:data:`MAX_COORDINATE` (1e100, in any unit
  system far beyond a body; squares of larger values overflow), else it is refused naming the first joint.
- **NaN/inf predictions** are wrong, never an exception: PCK miss, OKS term 0, error +inf. A frame whose
  Procrustes alignment cannot be computed in floating point (its moments, the SVD or the fitted transform
  overflow or are not finite, e.g. predictions near 1e308) is wrong the same way: every visible joint's
  PA error is +inf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from rfbench._jit import serial_below
from rfbench.errors import ValidationError
from rfbench.metrics import kernels as _k
from rfbench.metrics.skeletons import Skeleton, check_layout, get_skeleton, validate_sigmas
from rfbench.metrics.stats import BLOCK_ROWS, Segments, column_totals, make_segments
from rfbench.metrics.stats import mean_defined as _mean_defined
from rfbench.metrics.stats import ratio as _ratio

__all__ = [
    "MetricSpec",
    "Score",
    "Segments",
    "PosePlan",
    "PoseEvaluation",
    "evaluate_pose",
    "pck",
    "pck_auc",
    "oks",
    "oks_per_sample",
    "mpjpe",
    "pa_mpjpe",
    "make_segments",
    "validate_poses",
    "enforce_layout",
    "METRICS",
    "NORMALIZATIONS",
    "REL_FLOOR",
    "BLOCK_ROWS",
]

METRICS = ("pck", "pck-auc", "oks", "mpjpe", "pa-mpjpe")
NORMALIZATIONS = ("hip-width", "torso", "bbox", "bbox-max-side", "abs:T")
COMPARISONS = ("<=", "<")
AVERAGINGS = ("micro", "macro")
#: Largest ground-truth coordinate magnitude accepted at a visible joint (distances of larger ones overflow).
MAX_COORDINATE = 1e100
#: A joint-pair normalizer below this fraction of the box diagonal is degenerate.
REL_FLOOR = 1e-6
HIGHER_IS_BETTER = {"pck": True, "pck-auc": True, "oks": True, "mpjpe": False, "pa-mpjpe": False}
_LAYOUT_NORMS = ("hip-width", "torso")


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
        ``micro`` (over all scoreable joints), ``macro`` (mean of per-joint values) or ``sample`` (OKS:
        mean over scoreable samples).
    dims : int
        2 or 3.
    normalization : str, optional
        ``hip-width``, ``torso``, ``bbox``, ``bbox-max-side`` or ``abs:T`` (PCK and PCK-AUC).
    normalizer_joints : tuple of str, optional
        The two joints a pair normalization measures.
    k : float, optional
        PCK threshold as a fraction of the normalizer.
    comparison : str, optional
        ``<=`` or ``<``.
    auc_n, auc_max : optional
        PCK-AUC thresholds ``auc_max * i / auc_n``, i = 0..auc_n-1.
    oks_area : str, optional
        ``0.53*bbox`` or the declared constant area (units²).
    sigmas : str, optional
        Where the OKS sigmas come from (a layout name or ``declared``).
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

    @property
    def higher_is_better(self) -> bool:
        return HIGHER_IS_BETTER[self.metric]

    def _norm_text(self) -> str:
        if self.normalization is None:
            return ""
        if self.normalizer_joints:
            return f"{self.normalization}({self.normalizer_joints[0]}–{self.normalizer_joints[1]})"
        if self.normalization.startswith("abs:"):
            return f"abs(T={self.normalization[4:]} {self.units})"
        return self.normalization

    @property
    def label(self) -> str:
        """One line rendering the whole spec."""
        if self.metric == "pck":
            return f"PCK@{_fmt(self.k)} {self._norm_text()} {self.skeleton} {self.comparison} {self.averaging}"
        if self.metric == "pck-auc":
            return (f"PCK-AUC[0,{_fmt(self.auc_max)}) n={self.auc_n} {self._norm_text()} {self.skeleton} "
                    f"{self.comparison} {self.averaging}")
        if self.metric == "oks":
            return f"OKS area={self.oks_area} sigmas={self.sigmas} {self.skeleton} mean over samples"
        if self.metric == "mpjpe":
            return f"MPJPE ({self.units}) {self.skeleton} {self.averaging}"
        return f"PA-MPJPE ({self.units}) similarity-Procrustes {self.skeleton} {self.averaging}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "skeleton": self.skeleton,
            "units": self.units,
            "averaging": self.averaging,
            "dims": self.dims,
            "normalization": self.normalization,
            "normalizer_joints": list(self.normalizer_joints) if self.normalizer_joints else None,
            "normalizer_floor": (f"{REL_FLOOR:g} x box diagonal" if self.normalizer_joints else
                                 "> 0" if self.normalization else None),
            "k": self.k,
            "comparison": self.comparison,
            "auc_n": self.auc_n,
            "auc_max": self.auc_max,
            "oks_area": self.oks_area,
            "sigmas": self.sigmas,
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


def _as_float(name: str, arr) -> np.ndarray:
    a = np.asarray(arr)
    if a.dtype.kind not in "fiu" or a.dtype.kind == "b":
        raise ValidationError(f"{name} must hold numbers, found dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.float64)


def validate_poses(pred, gt, vis=None, n_joints: int | None = None, check_finite: bool = True):
    """Check and convert pose arrays; returns ``(pred, gt, vis)`` as float64, float64, uint8, C-contiguous.

    ``pred`` and ``gt`` are (N, K, D) with D = 2 or 3 and equal shapes; ``vis`` is (N, K) (non-zero or True =
    visible, like COCO's v > 0), default all visible. Ground truth must be finite at visible joints;
    predictions may hold NaN/inf (scored as wrong). ``check_finite=False`` leaves the ground-truth check to
    :meth:`PosePlan.table`, which makes it during its own pass over the data.
    """
    gt = _as_float("ground truth", gt)
    if gt.ndim != 3 or gt.shape[2] not in (2, 3):
        raise ValidationError(f"ground truth must have shape (samples, joints, 2 or 3), got {gt.shape}")
    pred = _as_float("predictions", pred)
    if pred.shape != gt.shape:
        raise ValidationError(f"predictions have shape {pred.shape} but ground truth has {gt.shape}; "
                              f"they must match row for row and joint for joint")
    n, k = gt.shape[0], gt.shape[1]
    if n_joints is not None and k != n_joints:
        raise ValidationError(f"the poses have {k} joints but the skeleton has {n_joints}")
    if vis is None:
        vis = np.ones((n, k), dtype=np.uint8)
    else:
        v = np.asarray(vis)
        if v.shape != (n, k):
            raise ValidationError(f"visibility must have shape {(n, k)} (samples, joints), got {v.shape}")
        if v.dtype.kind not in "biuf":
            raise ValidationError(f"visibility must be boolean or numeric, found dtype {v.dtype}")
        if v.dtype.kind == "f" and not np.isfinite(v).all():
            raise ValidationError("visibility holds NaN or inf; use 0 for invisible and 1 (or 2) for visible")
        if v.dtype == np.bool_:
            vis = np.ascontiguousarray(v).view(np.uint8)
        else:
            vis = np.ascontiguousarray(v > 0, dtype=np.uint8)
    if check_finite and not (np.abs(gt) <= MAX_COORDINATE).all():  # False for NaN too
        _refuse_nonfinite(gt, vis)
    return pred, gt, vis


def _refuse_nonfinite(gt, vis) -> None:
    bad = ~np.isfinite(gt).all(axis=2) & (vis != 0)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValidationError(
            f"ground truth holds NaN or inf at {int(bad.sum())} visible joint(s), first at row {int(i)} joint "
            f"{int(j)}; fix the ground truth or mark those joints invisible"
        )
    huge = ~(np.abs(gt) <= MAX_COORDINATE).all(axis=2) & (vis != 0)
    if huge.any():
        i, j = np.argwhere(huge)[0]
        raise ValidationError(
            f"ground truth has coordinates beyond ±{MAX_COORDINATE:g} at {int(huge.sum())} visible joint(s), "
            f"first at row {int(i)} joint {int(j)}; check its units"
        )


def _parse_norm(text: str, skeleton: Skeleton) -> tuple[str, int, int, int, float, tuple[str, str] | None]:
    """``(name, kind, a, b, T, joints)`` of a normalization string."""
    text = str(text).strip()
    if text in ("hip-width", "torso"):
        a, b = skeleton.pair(text)
        return text, _k.NORM_PAIR, a, b, 0.0, (skeleton.joints[a], skeleton.joints[b])
    if text == "bbox":
        return text, _k.NORM_BBOX, 0, 0, 0.0, None
    if text == "bbox-max-side":
        return text, _k.NORM_BBOX_MAX_SIDE, 0, 0, 0.0, None
    if text.startswith("abs:"):
        try:
            t = float(text[4:])
        except ValueError:
            t = float("nan")
        if not (math.isfinite(t) and t > 0):
            raise ValidationError(f"normalization {text!r}: abs:T needs a positive number T, e.g. abs:0.05")
        return f"abs:{text[4:]}", _k.NORM_ABS, 0, 0, t, None
    raise ValidationError(f"unknown normalization {text!r}; use hip-width, torso, bbox, bbox-max-side or abs:T")


class _Columns:
    """Named blocks of columns in a per-segment table."""

    def __init__(self):
        self.blocks: dict[str, np.ndarray] = {}
        self.width = 0

    def add(self, name: str, shape: tuple[int, ...]) -> None:
        size = int(np.prod(shape, dtype=np.int64)) if shape else 1
        self.blocks[name] = np.arange(self.width, self.width + size).reshape(shape)
        self.width += size

    def __getitem__(self, name: str) -> np.ndarray:
        return self.blocks[name]


@dataclass
class PosePlan:
    """Validated settings: which numbers to compute and how. Build with :func:`PosePlan.create`."""

    skeleton: Skeleton
    units: str
    dims: int
    metrics: tuple[str, ...]
    norms: tuple[tuple, ...]  # (name, kind, a, b, T, joints)
    ks: tuple[float, ...]
    comparison: str
    averaging: tuple[str, ...]
    auc_n: int
    auc_max: float
    oks_area: float  # < 0: 0.53 * bbox
    sigmas: tuple[float, ...] | None
    sigmas_source: str | None
    notes: list[str] = field(default_factory=list)
    specs: list[MetricSpec] = field(default_factory=list)
    columns: _Columns = field(default_factory=_Columns)
    _stats: list = field(default_factory=list)

    @classmethod
    def create(cls, *, skeleton, units: str, dims: int, metrics: Iterable[str] | None = None,
               normalizations: Sequence[str] = ("torso",), ks: Sequence[float] = (0.05, 0.1, 0.2, 0.5),
               comparison: str = "<=", averaging: Sequence[str] = AVERAGINGS, auc_n: int = 20,
               auc_max: float = 1.0, oks_area: str | float = "bbox", sigmas=None) -> "PosePlan":
        skeleton = get_skeleton(skeleton)
        if not isinstance(units, str) or not units.strip():
            raise ValidationError("units must be declared (e.g. m, mm, px, normalized): MPJPE and abs:T depend on them")
        if dims not in (2, 3):
            raise ValidationError(f"poses must be 2D or 3D, got {dims} coordinates per joint")
        if comparison not in COMPARISONS:
            raise ValidationError(f"comparison must be '<=' or '<', got {comparison!r}")
        averaging = tuple(dict.fromkeys(averaging))
        if not averaging or any(a not in AVERAGINGS for a in averaging):
            raise ValidationError(f"averaging must be micro and/or macro, got {', '.join(map(str, averaging))}")
        notes = []
        if sigmas is not None:
            sigmas = validate_sigmas(sigmas, skeleton.n_joints, "sigmas")
            sigmas_source = "declared"
        elif skeleton.sigmas is not None:
            sigmas, sigmas_source = skeleton.sigmas, skeleton.name
        else:
            sigmas_source = None
        if metrics is None:
            metrics = ["pck", "pck-auc", "mpjpe", "pa-mpjpe"]
            if dims == 2 and sigmas is not None:
                metrics.insert(2, "oks")
            elif dims == 3:
                notes.append("OKS not computed: it is defined for 2D poses only")
            else:
                notes.append(f"OKS not computed: skeleton {skeleton.name} has no OKS sigmas and none were given")
        metrics = tuple(dict.fromkeys(str(m).strip() for m in metrics))
        for m in metrics:
            if m not in METRICS:
                raise ValidationError(f"unknown metric {m!r}; choose from {', '.join(METRICS)}")
        if not metrics:
            raise ValidationError("no metric requested")
        if "oks" in metrics:
            if dims != 2:
                raise ValidationError("OKS is defined for 2D poses only; drop oks for 3D poses")
            if sigmas is None:
                raise ValidationError(f"skeleton {skeleton.name} has no published OKS sigmas: pass one sigma per "
                                      f"joint (--sigmas) or drop oks from the metrics")
        area = -1.0
        area_text = None
        if "oks" in metrics:
            if isinstance(oks_area, str) and oks_area.strip() == "bbox":
                area_text = "0.53*bbox"
            else:
                try:
                    area = float(oks_area)
                except (TypeError, ValueError):
                    area = float("nan")
                if not (math.isfinite(area) and area > 0):
                    raise ValidationError(f"OKS area must be 'bbox' or a positive number (units²), got {oks_area!r}")
                area_text = repr(area)
        norms: tuple = ()
        kvals: tuple = ()
        if "pck" in metrics or "pck-auc" in metrics:
            if isinstance(normalizations, str):
                normalizations = [normalizations]
            norms = tuple(_parse_norm(n, skeleton) for n in normalizations)
            if not norms:
                raise ValidationError("PCK needs at least one normalization")
            names = [n[0] for n in norms]
            if len(set(names)) != len(names):
                raise ValidationError("a normalization is listed twice")
        if "pck" in metrics:
            try:
                kvals = tuple(float(k) for k in ks)
            except (TypeError, ValueError):
                raise ValidationError(f"thresholds k must be numbers, got {ks!r}") from None
            if not kvals:
                raise ValidationError("PCK needs at least one threshold k")
            if not all(math.isfinite(k) and k >= 0 for k in kvals):
                raise ValidationError("every threshold k must be a finite number >= 0 (a fraction: 0.2 for PCK@0.2)")
            if len(set(kvals)) != len(kvals):
                raise ValidationError("a threshold k is listed twice")
        if "pck-auc" in metrics:
            if isinstance(auc_n, bool) or not isinstance(auc_n, (int, np.integer)) or auc_n < 1:
                raise ValidationError(f"PCK-AUC needs a positive integer number of thresholds, got {auc_n!r}")
            if not (isinstance(auc_max, (int, float)) and math.isfinite(auc_max) and auc_max > 0):
                raise ValidationError(f"PCK-AUC needs a positive k_max, got {auc_max!r}")
        plan = cls(skeleton=skeleton, units=units.strip(), dims=int(dims), metrics=metrics, norms=norms, ks=kvals,
                   comparison=comparison, averaging=averaging, auc_n=int(auc_n), auc_max=float(auc_max),
                   oks_area=area, sigmas=sigmas if "oks" in metrics else None,
                   sigmas_source=sigmas_source if "oks" in metrics else None, notes=notes)
        plan._build(area_text)
        return plan

    # -- layout -------------------------------------------------------------------------------------------
    @property
    def layout_dependent(self) -> list[str]:
        """The requested numbers that depend on the joint order (pair normalizations, OKS with layout sigmas)."""
        out = [n[0] for n in self.norms if n[0] in _LAYOUT_NORMS]
        if "oks" in self.metrics and self.sigmas_source != "declared":
            out.append(f"oks (sigmas of {self.skeleton.name})")
        return out

    # -- columns and statistics ---------------------------------------------------------------------------
    def _build(self, area_text) -> None:
        c = self.columns
        m, t, k = len(self.norms), len(self.ks), self.skeleton.n_joints
        c.add("rows", ())
        c.add("novis", ())
        c.add("norm_bad", (m,))
        c.add("pck_n", (m, k))
        c.add("pck_hit", (m, t, k))
        c.add("auc_pass", (m, k))
        c.add("err_sum", (k,))
        c.add("err_n", (k,))
        c.add("oks_sum", ())
        c.add("oks_n", ())
        c.add("oks_bad", ())
        c.add("pa_sum", (k,))
        c.add("pa_n", (k,))
        c.add("pa_bad", ())
        sk = self.skeleton.name
        base = dict(skeleton=sk, units=self.units, dims=self.dims)
        for mi, (name, kind, a, b, T, joints) in enumerate(self.norms):
            if "pck" not in self.metrics:
                break
            for ti, kv in enumerate(self.ks):
                for avg in self.averaging:
                    spec = MetricSpec("pck", averaging=avg, normalization=name, normalizer_joints=joints, k=kv,
                                      comparison=self.comparison, **base)
                    self._add(spec, "pck", mi=mi, ti=ti)
        for mi, (name, kind, a, b, T, joints) in enumerate(self.norms):
            if "pck-auc" not in self.metrics:
                break
            for avg in self.averaging:
                spec = MetricSpec("pck-auc", averaging=avg, normalization=name, normalizer_joints=joints,
                                  comparison=self.comparison, auc_n=self.auc_n, auc_max=self.auc_max, **base)
                self._add(spec, "auc", mi=mi)
        if "oks" in self.metrics:
            self._add(MetricSpec("oks", averaging="sample", oks_area=area_text, sigmas=self.sigmas_source, **base),
                      "oks")
        for metric, prefix in (("mpjpe", "err"), ("pa-mpjpe", "pa")):
            if metric in self.metrics:
                for avg in self.averaging:
                    self._add(MetricSpec(metric, averaging=avg, **base), prefix)

    def _add(self, spec: MetricSpec, family: str, mi: int = 0, ti: int = 0) -> None:
        self.specs.append(spec)
        self._stats.append((family, mi, ti))

    def statistic(self, index: int):
        """The statistic of ``specs[index]`` as a function of column totals ``(..., C) -> (...)``."""
        family, mi, ti = self._stats[index]
        spec = self.specs[index]
        c = self.columns
        macro = spec.averaging == "macro"
        if family == "pck":
            hit, n = c["pck_hit"][mi, ti], c["pck_n"][mi]
            if macro:
                return lambda x: _mean_defined(x[..., hit], x[..., n])
            return lambda x: _ratio(x[..., hit].sum(-1), x[..., n].sum(-1))
        if family == "auc":
            passed, n, nt = c["auc_pass"][mi], c["pck_n"][mi], float(self.auc_n)
            if macro:
                return lambda x: _mean_defined(x[..., passed], nt * x[..., n])
            return lambda x: _ratio(x[..., passed].sum(-1), nt * x[..., n].sum(-1))
        if family == "oks":
            s, n = c["oks_sum"], c["oks_n"]
            return lambda x: _ratio(x[..., s], x[..., n])
        s, n = c[f"{family}_sum"], c[f"{family}_n"]
        if macro:
            return lambda x: _mean_defined(x[..., s], x[..., n])
        return lambda x: _ratio(x[..., s].sum(-1), x[..., n].sum(-1))

    def _per_joint(self, index: int, totals: np.ndarray) -> dict[str, float | None] | None:
        family, mi, ti = self._stats[index]
        if self.specs[index].averaging != "macro":
            return None
        c = self.columns
        if family == "pck":
            per = _ratio(totals[c["pck_hit"][mi, ti]], totals[c["pck_n"][mi]])
        elif family == "auc":
            per = _ratio(totals[c["auc_pass"][mi]], self.auc_n * totals[c["pck_n"][mi]])
        else:
            per = _ratio(totals[c[f"{family}_sum"]], totals[c[f"{family}_n"]])
        return {j: (None if math.isnan(v) else float(v)) for j, v in zip(self.skeleton.joints, per)}

    def _counts(self, index: int, totals: np.ndarray) -> tuple[int, str, int]:
        family, mi, ti = self._stats[index]
        c = self.columns
        novis = int(totals[c["novis"]])
        if family in ("pck", "auc"):
            return int(totals[c["pck_n"][mi]].sum()), "joints", novis + int(totals[c["norm_bad"][mi]])
        if family == "oks":
            return int(totals[c["oks_n"]]), "samples", novis + int(totals[c["oks_bad"]])
        if family == "err":
            return int(totals[c["err_n"]].sum()), "joints", novis
        return int(totals[c["pa_n"]].sum()), "joints", int(totals[c["pa_bad"]])

    def scores(self, table: np.ndarray) -> list[Score]:
        """Point estimates from a per-segment table (see :meth:`table`)."""
        totals = column_totals(table)
        out = []
        for i, spec in enumerate(self.specs):
            value = float(self.statistic(i)(totals))
            scoreable, unit, unscoreable = self._counts(i, totals)
            out.append(Score(spec, None if math.isnan(value) else value, scoreable, unit, unscoreable,
                             int(totals[self.columns["rows"]]), self._per_joint(i, totals)))
        return out

    # -- the pass over the data ---------------------------------------------------------------------------
    def table(self, pred: np.ndarray, gt: np.ndarray, vis: np.ndarray, segments: Segments) -> np.ndarray:
        """Per-segment sufficient statistics ``(segments, columns)`` for arrays from :func:`validate_poses`.
        ``pred`` may have one row, scored against every ground-truth row. Raises ValidationError when the
        ground truth is not finite at a visible joint."""
        s = segments.count
        m, t, k = len(self.norms), len(self.ks), self.skeleton.n_joints
        norm_kind = np.array([n[1] for n in self.norms], dtype=np.int64)
        norm_a = np.array([n[2] for n in self.norms], dtype=np.int64)
        norm_b = np.array([n[3] for n in self.norms], dtype=np.int64)
        norm_abs = np.array([n[4] for n in self.norms], dtype=np.float64)
        k_order = np.argsort(np.array(self.ks, dtype=np.float64), kind="stable")
        ks = np.array(self.ks, dtype=np.float64)[k_order]  # ascending, as the kernel needs
        auc_thr = (np.array([self.auc_max * i / self.auc_n for i in range(self.auc_n)], dtype=np.float64)
                   if "pck-auc" in self.metrics else np.empty(0))
        oks_var = ((np.array(self.sigmas, dtype=np.float64) * 2.0) ** 2 if "oks" in self.metrics
                   else np.empty(0))
        n_rows = np.zeros(s, np.int64)
        n_novis = np.zeros(s, np.int64)
        norm_bad = np.zeros((s, m), np.int64)
        pck_first = np.zeros((s, m, t + 1, k), np.int64)
        auc_pass = np.zeros((s, m, k), np.int64)
        err_sum = np.zeros((s, k), np.float64)
        err_n = np.zeros((s, k), np.int64)
        oks_sum = np.zeros(s, np.float64)
        oks_n = np.zeros(s, np.int64)
        oks_bad = np.zeros(s, np.int64)
        gt_bad = np.zeros(s, np.int64)
        with serial_below(gt.shape[0] * gt.shape[1]):
            _k._pose_sums(pred, gt, vis, segments.order, segments.start, norm_kind, norm_a, norm_b, norm_abs,
                          REL_FLOOR, ks, auc_thr, self.comparison == "<", oks_var, self.oks_area, n_rows, n_novis,
                          norm_bad, pck_first, auc_pass, err_sum, err_n, oks_sum, oks_n, oks_bad, gt_bad)
        if gt_bad.any():
            _refuse_nonfinite(gt, vis)
        # A joint whose first passed (ascending) threshold is q is correct at every threshold from q on.
        pck_n = pck_first.sum(axis=2)
        pck_hit = np.empty((s, m, t, k), np.int64)
        pck_hit[:, :, k_order, :] = np.cumsum(pck_first[:, :, :t, :], axis=2)
        pa_sum = np.zeros((s, k), np.float64)
        pa_n = np.zeros((s, k), np.int64)
        pa_bad = np.zeros(s, np.int64)
        if "pa-mpjpe" in self.metrics:
            _pa_sums(pred, gt, vis, segments, pa_sum, pa_n, pa_bad)
        parts = [n_rows, n_novis, norm_bad, pck_n, pck_hit, auc_pass, err_sum, err_n, oks_sum, oks_n, oks_bad,
                 pa_sum, pa_n, pa_bad]
        return np.hstack([np.asarray(p, dtype=np.float64).reshape(s, int(np.prod(p.shape[1:], dtype=np.int64)))
                          for p in parts])


def _pa_sums(pred, gt, vis, segments, pa_sum, pa_n, pa_bad) -> None:
    """PA-MPJPE sums: per-row moments (kernel), batched SVD (NumPy/LAPACK), aligned errors (kernel)."""
    n, _, d = gt.shape
    if pred.shape[0] != n:
        pred = np.ascontiguousarray(np.broadcast_to(pred, gt.shape))
    mu_p = np.empty((n, d))
    mu_g = np.empty((n, d))
    var_p = np.empty(n)
    var_g = np.empty(n)
    cov = np.empty((n, d, d))
    n_vis = np.empty(n, np.int64)
    finite = np.empty(n, np.uint8)
    with serial_below(gt.shape[0] * gt.shape[1]):
        _k._procrustes_moments(pred, gt, vis, mu_p, mu_g, var_p, var_g, cov, n_vis, finite)
    # A frame whose moments overflowed cannot be aligned: it is wrong (error +inf) like a NaN prediction, and
    # the SVD never sees a non-finite matrix.
    overflow = ~(np.isfinite(mu_p).all(axis=1) & np.isfinite(mu_g).all(axis=1) & np.isfinite(var_p)
                 & np.isfinite(cov).all(axis=(1, 2)))
    if overflow.any():
        finite[overflow] = 0
        mu_p[overflow] = 0.0
        mu_g[overflow] = 0.0
        var_p[overflow] = 0.0
        cov[overflow] = 0.0
    rot, scale, trans, aligned = _similarity(cov, mu_p, mu_g, var_p)
    finite[~aligned] = 0
    scoreable = ((n_vis >= 3) & (var_g > 0)).astype(np.uint8)
    with serial_below(gt.shape[0] * gt.shape[1]):
        _k._aligned_error_sums(pred, gt, vis, rot, scale, trans, scoreable, finite, segments.order,
                               segments.start, pa_sum, pa_n, pa_bad)


def _similarity(cov, mu_p, mu_g, var_p):
    """Rotation (reflection-corrected), scale and translation mapping centred predictions onto ground
    truth, from the cross-covariance (Umeyama 1991; the same as mmpose's ``batch_compute_similarity_transform``).
    A prediction collapsed to one point (var_p = 0) gets scale 0: it is moved to the ground-truth centroid.

    Returns ``(rot, scale, trans, aligned)``; ``aligned[i]`` is False when frame i's SVD failed or its
    transform is not finite (its values are then zeros and the frame must count as wrong)."""
    n, d = mu_p.shape
    if n == 0:
        return np.empty((0, d, d)), np.empty(0), np.empty((0, d)), np.ones(0, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return _fit_similarity(cov, mu_p, mu_g, var_p)


def _fit_similarity(cov, mu_p, mu_g, var_p):
    n, d = mu_p.shape
    aligned = np.ones(n, dtype=bool)
    try:
        u, sv, vh = np.linalg.svd(cov)
    except np.linalg.LinAlgError:  # one frame did not converge: find it, the others keep their exact result
        u, sv, vh = np.zeros((n, d, d)), np.zeros((n, d)), np.zeros((n, d, d))
        for i in range(n):
            try:
                u[i], sv[i], vh[i] = np.linalg.svd(cov[i])
            except np.linalg.LinAlgError:
                aligned[i] = False
    v = np.swapaxes(vh, 1, 2)
    ut = np.swapaxes(u, 1, 2)
    sign = np.sign(np.linalg.det(u) * np.linalg.det(v))
    sign[sign == 0] = 1.0
    z = np.ones((n, d))
    z[:, -1] = sign
    rot = np.ascontiguousarray(np.matmul(v * z[:, None, :], ut))
    trace = (sv * z).sum(axis=1)
    scale = np.zeros(n)
    np.divide(trace, var_p, out=scale, where=var_p > 0)
    trans = np.ascontiguousarray(mu_g - scale[:, None] * np.einsum("nij,nj->ni", rot, mu_p))
    aligned &= np.isfinite(rot).all(axis=(1, 2)) & np.isfinite(scale) & np.isfinite(trans).all(axis=1)
    rot[~aligned] = 0.0
    scale[~aligned] = 0.0
    trans[~aligned] = 0.0
    return rot, np.ascontiguousarray(scale), trans, aligned


@dataclass
class PoseEvaluation:
    """The result of :func:`evaluate_pose`.

    Attributes
    ----------
    scores : list of Score
        One per spec, in the plan's order.
    plan : PosePlan
    layout : dict
        The plausibility check of the declared skeleton on the ground truth (:func:`check_layout`); run only
        when a requested number depends on the joint order (``rfbench score`` always runs it).
    layout_overridden : bool
        True when the check did not pass and layout-dependent numbers were computed anyway on request.
    segments : Segments
    table : ndarray
        Per-segment sufficient statistics (the bootstrap's input).
    """

    scores: list[Score]
    plan: PosePlan
    layout: dict
    layout_overridden: bool
    segments: Segments
    table: np.ndarray

    def find(self, metric: str, **spec) -> Score:
        """The one score whose spec has ``metric`` and the given fields (e.g. ``normalization="torso", k=0.2,
        averaging="micro"``)."""
        hits = [s for s in self.scores if s.spec.metric == metric
                and all(getattr(s.spec, key) == val for key, val in spec.items())]
        if len(hits) != 1:
            raise ValidationError(f"{len(hits)} scores match {metric} {spec}; name the spec fully")
        return hits[0]


def evaluate_pose(pred, gt, vis=None, *, skeleton, units: str, metrics: Iterable[str] | None = None,
                  normalizations: Sequence[str] = ("torso",), ks: Sequence[float] = (0.05, 0.1, 0.2, 0.5),
                  comparison: str = "<=", averaging: Sequence[str] = AVERAGINGS, auc_n: int = 20,
                  auc_max: float = 1.0, oks_area: str | float = "bbox", sigmas=None, trust_layout: bool = False,
                  clusters=None) -> PoseEvaluation:
    """Score predicted poses against ground truth under declared specs.

    Parameters
    ----------
    pred, gt : array_like, (N, K, D)
        Predicted and ground-truth joints, D = 2 or 3, K = the skeleton's joint count.
    vis : array_like, (N, K), optional
        Ground-truth visibility (True or > 0 = visible); default all visible.
    skeleton : str, Path or Skeleton
        ``coco17``, ``h36m17`` or a layout file.
    units : str
        Coordinate units (``m``, ``mm``, ``px``, ``normalized``...).
    metrics : iterable of str, optional
        Subset of ``pck``, ``pck-auc``, ``oks``, ``mpjpe``, ``pa-mpjpe``; default all that apply (OKS only
        for 2D poses with sigmas).
    normalizations : sequence of str
        PCK normalizers: ``hip-width``, ``torso``, ``bbox``, ``bbox-max-side``, ``abs:T``.
    ks : sequence of float
        PCK thresholds (fractions of the normalizer).
    comparison : {"<=", "<"}
    averaging : sequence of {"micro", "macro"}
    auc_n, auc_max : int, float
        PCK-AUC thresholds ``auc_max * i / auc_n``, i = 0..auc_n-1.
    oks_area : "bbox" or float
        OKS area: 0.53 x the visible joints' box width x height, or a constant (units²).
    sigmas : sequence of float, optional
        OKS sigmas per joint (required for layouts without published sigmas).
    trust_layout : bool
        Compute layout-dependent numbers even when the skeleton's plausibility check does not pass.
    clusters : array_like of str, (N,), optional
        Recording (or subject) id per row: the segments of the bootstrap.

    Raises
    ------
    ValidationError
        Bad shapes or settings, NaN in visible ground truth, or a layout that fails its check while a
        layout-dependent number is requested without ``trust_layout``.
    """
    gt_arr = np.asarray(gt)
    dims = gt_arr.shape[-1] if gt_arr.ndim == 3 else 0
    skel = get_skeleton(skeleton)
    pred, gt, vis = validate_poses(pred, gt, vis, skel.n_joints, check_finite=False)
    plan = PosePlan.create(skeleton=skel, units=units, dims=dims, metrics=metrics, normalizations=normalizations,
                           ks=ks, comparison=comparison, averaging=averaging, auc_n=auc_n, auc_max=auc_max,
                           oks_area=oks_area, sigmas=sigmas)
    segments = make_segments(gt.shape[0], clusters)
    table = plan.table(pred, gt, vis, segments)  # also refuses non-finite visible ground truth
    if plan.layout_dependent:
        layout, overridden = enforce_layout(plan, gt, vis, trust_layout)
    else:
        layout, overridden = {"passed": None, "checks": [],
                              "reason": "not run: no requested number depends on the joint order"}, False
    return PoseEvaluation(plan.scores(table), plan, layout, overridden, segments, table)


#: Frames the plausibility check looks at (evenly spaced): a median over this many is plenty.
LAYOUT_CHECK_FRAMES = 10_000


def enforce_layout(plan: PosePlan, gt, vis, trust: bool) -> tuple[dict, bool]:
    """Run the skeleton's plausibility check on (a sample of) the ground truth; raise when it fails and the
    plan asks for layout-dependent numbers, unless ``trust``. Returns ``(check, overridden)``.

    A check that cannot be evaluated (no frame shows the joints it needs, or a custom layout declares no
    check) does not refuse: the layout is then *unverified*, which the report states next to the numbers.
    """
    step = max(1, -(-gt.shape[0] // LAYOUT_CHECK_FRAMES))
    layout = check_layout(plan.skeleton, gt[::step], vis[::step] != 0)
    layout["sampled_every"] = step
    dependent = plan.layout_dependent
    if layout["passed"] is not False or not dependent:
        return layout, False
    if not trust:
        raise ValidationError(
            f"skeleton {plan.skeleton.name} does not fit the ground truth ({layout['reason']}); "
            f"{', '.join(dependent)} {'depends' if len(dependent) == 1 else 'depend'} on the joint order: "
            f"declare the right skeleton, use bbox, "
            f"bbox-max-side or abs:T, or override with --trust-layout (trust_layout=True), which the report records"
        )
    return layout, True


def _single(pred, gt, vis, metric: str, averaging: str, **kw) -> Score:
    ev = evaluate_pose(pred, gt, vis, metrics=[metric], averaging=[averaging] if averaging != "sample" else ["micro"],
                       **kw)
    return ev.scores[0]


def pck(pred, gt, vis=None, *, skeleton, units: str, normalization: str, k: float, comparison: str = "<=",
        averaging: str = "micro", trust_layout: bool = False) -> Score:
    """PCK@k under one normalization (see the module docstring). Returns a :class:`Score`."""
    return _single(pred, gt, vis, "pck", averaging, skeleton=skeleton, units=units, normalizations=[normalization],
                   ks=[k], comparison=comparison, trust_layout=trust_layout)


def pck_auc(pred, gt, vis=None, *, skeleton, units: str, normalization: str, n: int = 20, k_max: float = 1.0,
            comparison: str = "<=", averaging: str = "micro", trust_layout: bool = False) -> Score:
    """Mean PCK over the thresholds ``k_max * i / n``, i = 0..n-1. Returns a :class:`Score`."""
    return _single(pred, gt, vis, "pck-auc", averaging, skeleton=skeleton, units=units,
                   normalizations=[normalization], auc_n=n, auc_max=k_max, comparison=comparison,
                   trust_layout=trust_layout)


def oks(pred, gt, vis=None, *, skeleton, units: str, sigmas=None, area: str | float = "bbox",
        trust_layout: bool = False) -> Score:
    """Mean OKS over scoreable samples (pycocotools ``computeOks`` per sample). Returns a :class:`Score`."""
    return _single(pred, gt, vis, "oks", "sample", skeleton=skeleton, units=units, sigmas=sigmas, oks_area=area,
                   trust_layout=trust_layout)


def oks_per_sample(pred, gt, vis=None, *, skeleton, units: str, sigmas=None, area: str | float = "bbox",
                   trust_layout: bool = False) -> np.ndarray:
    """OKS of each sample, (N,) float64; NaN for an unscoreable sample (no visible joint, zero area)."""
    skel = get_skeleton(skeleton)
    pred, gt, vis = validate_poses(pred, gt, vis, skel.n_joints)
    plan = PosePlan.create(skeleton=skel, units=units, dims=gt.shape[2], metrics=["oks"], sigmas=sigmas,
                           oks_area=area, averaging=["micro"])
    enforce_layout(plan, gt, vis, trust_layout)
    n = gt.shape[0]
    table = plan.table(pred, gt, vis, Segments(np.empty(0, np.int64), np.arange(n + 1, dtype=np.int64), None))
    return _ratio(table[:, plan.columns["oks_sum"]], table[:, plan.columns["oks_n"]])


def mpjpe(pred, gt, vis=None, *, skeleton, units: str, averaging: str = "micro") -> Score:
    """Mean per-joint position error over visible joints, in ``units``. Returns a :class:`Score`."""
    return _single(pred, gt, vis, "mpjpe", averaging, skeleton=skeleton, units=units)


def pa_mpjpe(pred, gt, vis=None, *, skeleton, units: str, averaging: str = "micro") -> Score:
    """MPJPE after per-frame similarity Procrustes alignment (with scale and reflection correction)."""
    return _single(pred, gt, vis, "pa-mpjpe", averaging, skeleton=skeleton, units=units)
