"""The plan of a pose evaluation: settings validated once (:meth:`PosePlan.create`, with a published
convention's settings applied), the specs they define, one kernel pass over the data into per-segment
sufficient statistics (:meth:`PosePlan.table`: the PCK, PCK-AUC, OKS and MPJPE families in one pass,
PA-MPJPE from :mod:`rfbench.metrics.procrustes`, batch-mean values from a second pass), and the numbers read
back from those statistics (:meth:`PosePlan.scores`: each spec's value, its counts and, for macro averages,
the per-joint breakdown)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from rfbench._jit import serial_below
from rfbench.errors import ValidationError
from rfbench.metrics import kernels as _k
from rfbench.metrics.conventions import Convention, get_convention
from rfbench.metrics.limits import (
    ALL_AVERAGINGS,
    AVERAGINGS,
    COMPARISONS,
    MAX_AUC_N,
    MAX_K,
    PA_FITS,
    PRECISIONS,
    VISIBILITIES,
    oks_area_value,
)
from rfbench.metrics.limits import POSE_METRICS as METRICS
from rfbench.metrics.pose_inputs import _refuse_nonfinite
from rfbench.metrics.pose_spec import REL_FLOOR, MetricSpec, Score
from rfbench.metrics.procrustes import _pa_sums
from rfbench.metrics.skeletons import Skeleton, get_skeleton, validate_sigmas
from rfbench.metrics.stats import Segments, column_totals, make_segments
from rfbench.metrics.stats import mean_defined as _mean_defined
from rfbench.metrics.stats import ratio as _ratio


def _pair_joint(ref: str, skeleton: Skeleton, text: str) -> int:
    ref = ref.strip()
    if ref.lstrip("-").isdigit():
        index = int(ref)
        if not 0 <= index < skeleton.n_joints:
            raise ValidationError(f"normalization {text!r}: joint index {index} is outside skeleton "
                                  f"{skeleton.name} (joints 0..{skeleton.n_joints - 1})")
        return index
    if ref not in skeleton.joints:
        raise ValidationError(f"normalization {text!r}: skeleton {skeleton.name} has no joint {ref!r}")
    return skeleton.joints.index(ref)


def _parse_norm(text: str, skeleton: Skeleton) -> tuple[str, int, int, int, float, tuple[str, str] | None]:
    """``(name, kind, a, b, T, joints)`` of a normalization string."""
    text = str(text).strip()
    if text in ("hip-width", "torso"):
        a, b = skeleton.pair(text)
        return text, _k.NORM_PAIR, a, b, 0.0, (skeleton.joints[a], skeleton.joints[b])
    if text.startswith("pair:"):
        refs = text[5:].split(",")
        if len(refs) != 2 or not all(r.strip() for r in refs):
            raise ValidationError(f"normalization {text!r}: pair:I,J names two joints, by index or name "
                                  f"(e.g. pair:5,12 or pair:left_shoulder,right_hip)")
        a, b = (_pair_joint(r, skeleton, text) for r in refs)
        if a == b:
            raise ValidationError(f"normalization {text!r}: the two joints of a pair must differ")
        name = "pair:" + ",".join(r.strip() for r in refs)
        return name, _k.NORM_PAIR, a, b, 0.0, (skeleton.joints[a], skeleton.joints[b])
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
    raise ValidationError(f"unknown normalization {text!r}; use hip-width, torso, bbox, bbox-max-side, abs:T or "
                          f"pair:I,J")


def _join_pairs(normalizations: Sequence[str]) -> list[str]:
    """Normalizations with ``pair:I`` + ``J`` rejoined: a comma-separated list (``--norm pair:5,12,bbox``) splits
    ``pair:I,J`` in two, and a bare joint index or name is never a normalization of its own."""
    out: list[str] = []
    for item in normalizations:
        text = str(item).strip()
        own = text in ("hip-width", "torso", "bbox", "bbox-max-side") or text.startswith(("abs:", "pair:"))
        if out and not own and out[-1].startswith("pair:") and "," not in out[-1]:
            out[-1] = f"{out[-1]},{text}"
        else:
            out.append(text)
    return out


def _parse_floor(text: Any) -> tuple[str, int, float]:
    """``(text, kind, value)`` of a normalizer floor: ``relative``, ``clamp:V`` or ``none``."""
    text = str(text).strip()
    if text == "relative":
        return text, _k.FLOOR_RELATIVE, 0.0
    if text == "none":
        return text, _k.FLOOR_NONE, 0.0
    if text.startswith("clamp:"):
        try:
            v = float(text[6:])
        except ValueError:
            v = float("nan")
        if math.isfinite(v) and v > 0:
            return text, _k.FLOOR_CLAMP, v
    raise ValidationError(f"normalizer floor {text!r}: use relative, none or clamp:V with V > 0 (e.g. clamp:0.01)")


def _choice(value: Any, allowed: Sequence[str], what: str) -> str:
    if value not in allowed:
        raise ValidationError(f"{what} must be one of {', '.join(allowed)}, got {value!r}")
    return value


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
    """Validated settings: which numbers to compute and how. Build with :func:`PosePlan.create`.

    ``norms`` are every normalization the kernel scores; ``pck_norms`` and ``auc_norms`` index the ones PCK and
    PCK-AUC report (a convention may use different ones: mmpose's PCK is normalised by the box, its AUC by a
    constant). ``averaging`` applies to PCK and PCK-AUC, ``err_averaging`` to MPJPE and PA-MPJPE.
    """

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
    pck_norms: tuple[int, ...] = ()
    auc_norms: tuple[int, ...] = ()
    err_averaging: tuple[str, ...] = AVERAGINGS
    floor: str = "relative"
    floor_kind: int = _k.FLOOR_RELATIVE
    floor_value: float = 0.0
    visibility: str = "used"
    per_axis: bool = False
    precision: str = "float64"
    result_precision: str = "float64"
    batch_size: int | None = None
    pa_fit: str = "visible"
    convention: Convention | None = None
    specs: list[MetricSpec] = field(default_factory=list)
    columns: _Columns = field(default_factory=_Columns)
    _stats: list = field(default_factory=list)

    @classmethod
    def create(cls, *, skeleton, units: str, dims: int, metrics: Iterable[str] | None = None,
               normalizations: Sequence[str] = ("torso",), ks: Sequence[float] = (0.05, 0.1, 0.2, 0.5),
               comparison: str = "<=", averaging: Sequence[str] = AVERAGINGS, auc_n: int = 20,
               auc_max: float = 1.0, oks_area: str | float = "bbox", sigmas=None,
               normalizer_floor: str = "relative", visibility: str = "used", per_axis: bool = False,
               precision: str = "float64", batch_size: int | None = None, pa_fit: str = "visible",
               convention: str | Convention | None = None, result_precision: str = "float64") -> "PosePlan":
        """Validate settings; see :func:`evaluate_pose` for each. With ``convention``, the convention sets the
        normalizations, comparison, averaging, floor, visibility, per-axis, precision and Procrustes fit of every
        metric its source computes (giving any of them too is an error); ``ks``, ``auc_n`` and ``batch_size``
        combine with it, and ``metrics`` defaults to what the source computes."""
        skeleton = get_skeleton(skeleton)
        if not isinstance(units, str) or not units.strip():
            raise ValidationError("units must be declared (e.g. m, mm, px, normalized): MPJPE and abs:T depend on them")
        if dims not in (2, 3):
            raise ValidationError(f"poses must be 2D or 3D, got {dims} coordinates per joint")
        notes: list[str] = []
        if isinstance(normalizations, str):
            normalizations = [normalizations]
        normalizations = _join_pairs(normalizations)
        averaging = tuple(dict.fromkeys(averaging if not isinstance(averaging, str) else [averaging]))
        conv = None
        if convention is not None:
            conv = get_convention(convention)
            settings = _convention_settings(conv, metrics, dims, tuple(normalizations), comparison, averaging,
                                            normalizer_floor, visibility, per_axis, precision, pa_fit,
                                            result_precision, notes)
            (metrics, normalizations, pck_names, auc_names, comparison, averaging, err_averaging, normalizer_floor,
             visibility, per_axis, precision, pa_fit, result_precision) = settings
        if comparison not in COMPARISONS:
            raise ValidationError(f"comparison must be '<=' or '<', got {comparison!r}")
        if not averaging or any(a not in ALL_AVERAGINGS for a in averaging):
            raise ValidationError(f"averaging must be micro, macro and/or batch-mean, got "
                                  f"{', '.join(map(str, averaging))}")
        floor, floor_kind, floor_value = _parse_floor(normalizer_floor)
        visibility = _choice(visibility, VISIBILITIES, "visibility")
        precision = _choice(precision, PRECISIONS, "precision")
        result_precision = _choice(result_precision, PRECISIONS, "the result precision")
        pa_fit = _choice(pa_fit, PA_FITS, "the Procrustes fit (pa_fit)")
        if not isinstance(per_axis, (bool, np.bool_)):
            raise ValidationError(f"per_axis must be True or False, got {per_axis!r}")
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
        if conv is None:
            err_averaging = tuple(a for a in averaging if a != "batch-mean")
            pck_names = auc_names = None
        if "oks" in metrics:
            if dims != 2:
                raise ValidationError("OKS is defined for 2D poses only; drop oks for 3D poses")
            if sigmas is None:
                raise ValidationError(f"skeleton {skeleton.name} has no published OKS sigmas: pass one sigma per "
                                      f"joint (--sigmas) or drop oks from the metrics")
        uses_pck = "pck" in metrics or "pck-auc" in metrics
        if "batch-mean" in averaging and uses_pck:
            if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
                hint = f" ({conv.batch_hint})" if conv is not None and conv.batch_hint else ""
                raise ValidationError(f"batch-mean averaging needs a batch size (rows per batch of consecutive rows; "
                                      f"--batch-size), got {batch_size!r}{hint}")
            batch_size = int(batch_size)
            notes.append(f"batch-mean: PCK is the mean of the micro values of batches of {batch_size} consecutive "
                         f"rows (a short last batch weighs like a full one); these values carry no bootstrap "
                         f"interval")
        elif batch_size is not None:
            what = f"convention {conv.name} does not average over batches" if conv is not None else \
                "a batch size applies to batch-mean averaging only"
            raise ValidationError(f"{what}; drop the batch size")
        if any(m in metrics for m in ("mpjpe", "pa-mpjpe")) and not err_averaging:
            raise ValidationError("batch-mean averages PCK and PCK-AUC only: add micro or macro for MPJPE/PA-MPJPE, "
                                  "or drop them from the metrics")
        area = -1.0
        area_text = None
        if "oks" in metrics:
            value = oks_area_value(oks_area)
            if value is None:
                area_text = "0.53*bbox"
            else:
                area = value
                area_text = repr(area)
        norms: tuple = ()
        kvals: tuple = ()
        pck_norms: tuple[int, ...] = ()
        auc_norms: tuple[int, ...] = ()
        if uses_pck:
            norms = tuple(_parse_norm(n, skeleton) for n in normalizations)
            if not norms:
                raise ValidationError("PCK needs at least one normalization")
            names = [n[0] for n in norms]
            if len(set(names)) != len(names):
                raise ValidationError("a normalization is listed twice")
            everything = tuple(range(len(norms)))
            pck_norms = tuple(names.index(n) for n in pck_names) if pck_names is not None else everything
            auc_norms = tuple(names.index(n) for n in auc_names) if auc_names is not None else everything
        if "pck" in metrics:
            try:
                kvals = tuple(float(k) for k in ks)
            except (TypeError, ValueError):
                raise ValidationError(f"thresholds k must be numbers, got {ks!r}") from None
            if not kvals:
                raise ValidationError("PCK needs at least one threshold k")
            if not all(math.isfinite(k) and 0 <= k <= MAX_K for k in kvals):
                raise ValidationError(f"every threshold k must be a number in 0..{MAX_K:g} (a fraction of the "
                                      "normalizer: 0.2 for PCK@0.2)")
            if len(set(kvals)) != len(kvals):
                raise ValidationError("a threshold k is listed twice")
        if "pck-auc" in metrics:
            if isinstance(auc_n, bool) or not isinstance(auc_n, (int, np.integer)) or not 1 <= auc_n <= MAX_AUC_N:
                raise ValidationError(f"PCK-AUC needs an integer number of thresholds in 1..{MAX_AUC_N}, got "
                                      f"{auc_n!r}")
            if not (isinstance(auc_max, (int, float)) and math.isfinite(auc_max) and 0 < auc_max <= MAX_K):
                raise ValidationError(f"PCK-AUC needs a k_max in (0, {MAX_K:g}], got {auc_max!r}")
        if conv is not None:
            if conv.own_skeleton is not None and conv.own_skeleton != skeleton.name and pck_names:
                joints = {n[0]: n[5] for n in norms}
                named = "; ".join(f"{n} is {joints[n][0]}–{joints[n][1]} under {skeleton.name}" for n in pck_names
                                  if joints.get(n))
                if named:
                    notes.append(f"{conv.name}'s joint indices refer to its own {conv.own_skeleton} order; {named}")
            notes.extend(f"{conv.name}: {n}" for n in conv.notes)
        plan = cls(skeleton=skeleton, units=units.strip(), dims=int(dims), metrics=metrics, norms=norms, ks=kvals,
                   comparison=comparison, averaging=averaging, auc_n=int(auc_n), auc_max=float(auc_max),
                   oks_area=area, sigmas=sigmas if "oks" in metrics else None,
                   sigmas_source=sigmas_source if "oks" in metrics else None, notes=notes, pck_norms=pck_norms,
                   auc_norms=auc_norms, err_averaging=err_averaging, floor=floor, floor_kind=floor_kind,
                   floor_value=floor_value, visibility=visibility, per_axis=bool(per_axis), precision=precision,
                   result_precision=result_precision,
                   batch_size=batch_size if "batch-mean" in averaging and uses_pck else None, pa_fit=pa_fit,
                   convention=conv)
        plan._build(area_text)
        return plan

    # -- layout -------------------------------------------------------------------------------------------
    @property
    def layout_dependent(self) -> list[str]:
        """The requested numbers that depend on the joint order (pair normalizations, OKS with layout sigmas)."""
        out = [n[0] for n in self.norms if n[1] == _k.NORM_PAIR]
        if "oks" in self.metrics and self.sigmas_source != "declared":
            out.append(f"oks (sigmas of {self.skeleton.name})")
        return out

    @property
    def batch_mean(self) -> bool:
        return self.batch_size is not None

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
        conv = self.convention
        name = conv.name if conv is not None else None

        def quirks(metric):
            return conv.rules[metric].quirks if conv is not None else ()

        base = dict(skeleton=self.skeleton.name, units=self.units, dims=self.dims, visibility=self.visibility,
                    convention=name)
        pck_like = dict(comparison=self.comparison, per_axis=self.per_axis, precision=self.precision)
        for mi in self.pck_norms:
            if "pck" not in self.metrics:
                break
            name_, kind, a, b, T, joints = self.norms[mi]
            floor = None if kind == _k.NORM_ABS else self.floor
            # Under abs:T the threshold is T itself: one result per T, whatever the ks.
            ks = [None] if kind == _k.NORM_ABS else self.ks
            for ti, kv in enumerate(ks):
                for avg in self.averaging:
                    spec = MetricSpec("pck", averaging=avg, normalization=name_, normalizer_joints=joints, k=kv,
                                      floor=floor, batch_size=self.batch_size if avg == "batch-mean" else None,
                                      result_precision=self.result_precision if avg == "micro" else "float64",
                                      quirks=quirks("pck"), **pck_like, **base)
                    self._add(spec, "pck", mi=mi, ti=ti)
        for mi in self.auc_norms:
            if "pck-auc" not in self.metrics:
                break
            name_, kind, a, b, T, joints = self.norms[mi]
            for avg in self.averaging:
                spec = MetricSpec("pck-auc", averaging=avg, normalization=name_, normalizer_joints=joints,
                                  auc_n=self.auc_n, auc_max=None if kind == _k.NORM_ABS else self.auc_max,
                                  floor=None if kind == _k.NORM_ABS else self.floor,
                                  batch_size=self.batch_size if avg == "batch-mean" else None,
                                  quirks=quirks("pck-auc"), **pck_like, **base)
                self._add(spec, "auc", mi=mi)
        if "oks" in self.metrics:
            self._add(MetricSpec("oks", averaging="sample", oks_area=area_text, sigmas=self.sigmas_source,
                                 skeleton=self.skeleton.name, units=self.units, dims=self.dims,
                                 visibility=self.visibility), "oks")
        for metric, prefix in (("mpjpe", "err"), ("pa-mpjpe", "pa")):
            if metric in self.metrics:
                for avg in self.err_averaging:
                    self._add(MetricSpec(metric, averaging=avg, pa_fit=self.pa_fit if metric == "pa-mpjpe" else None,
                                         quirks=quirks(metric), **base), prefix)
        # Batch-mean values: per spec, the sum of the defined batch values and their count (see table()).
        n_batch = sum(1 for sp in self.specs if sp.averaging == "batch-mean")
        c.add("batch_sum", (n_batch,))
        c.add("batch_n", (n_batch,))

    def _add(self, spec: MetricSpec, family: str, mi: int = 0, ti: int = 0) -> None:
        self.specs.append(spec)
        batch = sum(1 for sp in self.specs[:-1] if sp.averaging == "batch-mean") if spec.averaging == "batch-mean" \
            else -1
        self._stats.append((family, mi, ti, batch))

    def bootstrappable(self, index: int) -> bool:
        """Whether ``specs[index]`` gets a bootstrap interval (batch-mean values do not)."""
        return self.specs[index].bootstrappable

    def _micro(self, family: str, mi: int, ti: int, result_precision: str = "float64"):
        c = self.columns
        if family == "pck":
            hit, n = c["pck_hit"][mi, ti], c["pck_n"][mi]
            if result_precision == "float32":
                return lambda x: _ratio32(x[..., hit].sum(-1), x[..., n].sum(-1))
            return lambda x: _ratio(x[..., hit].sum(-1), x[..., n].sum(-1))
        passed, n, nt = c["auc_pass"][mi], c["pck_n"][mi], float(self.auc_n)
        return lambda x: _ratio(x[..., passed].sum(-1), nt * x[..., n].sum(-1))

    def statistic(self, index: int):
        """The statistic of ``specs[index]`` as a function of column totals ``(..., C) -> (...)``. A batch-mean
        value is its batch values' sum over their count (the table holds both; it is not a bootstrap statistic:
        see :meth:`bootstrappable`)."""
        family, mi, ti, batch = self._stats[index]
        spec = self.specs[index]
        c = self.columns
        macro = spec.averaging == "macro"
        if batch >= 0:
            bs, bn = c["batch_sum"][batch], c["batch_n"][batch]
            return lambda x: _ratio(x[..., bs], x[..., bn])
        if family == "pck":
            hit, n = c["pck_hit"][mi, ti], c["pck_n"][mi]
            if macro:
                return lambda x: _mean_defined(x[..., hit], x[..., n])
            return self._micro(family, mi, ti, spec.result_precision)
        if family == "auc":
            passed, n, nt = c["auc_pass"][mi], c["pck_n"][mi], float(self.auc_n)
            if macro:
                return lambda x: _mean_defined(x[..., passed], nt * x[..., n])
            return self._micro(family, mi, ti)
        if family == "oks":
            s, n = c["oks_sum"], c["oks_n"]
            return lambda x: _ratio(x[..., s], x[..., n])
        s, n = c[f"{family}_sum"], c[f"{family}_n"]
        if macro:
            return lambda x: _mean_defined(x[..., s], x[..., n])
        return lambda x: _ratio(x[..., s].sum(-1), x[..., n].sum(-1))

    def _per_joint(self, index: int, totals: np.ndarray) -> dict[str, float | None] | None:
        family, mi, ti, _batch = self._stats[index]
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
        family, mi, ti, _batch = self._stats[index]
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
    def _thresholds(self):
        """``(norm_value, pck_thr, auc_thr, k_order)`` for the kernel: per normalization the constant divisor of
        an absolute one and its ascending PCK and PCK-AUC thresholds. A relative normalizer (hip-width, bbox...)
        compares ``d / normalizer`` with the ks and ``k_max * i / n``; ``abs:T`` compares ``d`` itself (divisor 1)
        with T (every column: k does not apply) and ``T * i / n`` — or, per axis, divides each axis by T and
        compares with 1 and ``i / n`` (mmpose's ``keypoint_auc``). Under float32 the thresholds are rounded to
        float32, as the ratios are in the kernel."""
        m, t = len(self.norms), len(self.ks)
        k_order = np.argsort(np.array(self.ks, dtype=np.float64), kind="stable")
        ks = np.array(self.ks, dtype=np.float64)[k_order]  # ascending, as the kernel needs
        n_auc = self.auc_n if "pck-auc" in self.metrics else 0
        fractions = np.array([self.auc_max * i / self.auc_n for i in range(n_auc)], dtype=np.float64)
        norm_value = np.ones(m, dtype=np.float64)
        pck_thr = np.empty((m, t), dtype=np.float64)
        auc_thr = np.empty((m, n_auc), dtype=np.float64)
        for mi, (_name, kind, _a, _b, big_t, _joints) in enumerate(self.norms):
            if kind == _k.NORM_ABS and self.per_axis:
                norm_value[mi] = big_t
                pck_thr[mi] = 1.0
                auc_thr[mi] = [1.0 * i / self.auc_n for i in range(n_auc)]
            elif kind == _k.NORM_ABS:
                pck_thr[mi] = big_t
                auc_thr[mi] = [big_t * i / self.auc_n for i in range(n_auc)]
            else:
                pck_thr[mi] = ks
                auc_thr[mi] = fractions
        if self.precision == "float32":
            pck_thr = pck_thr.astype(np.float32).astype(np.float64)
            auc_thr = auc_thr.astype(np.float32).astype(np.float64)
        return norm_value, pck_thr, auc_thr, k_order

    def scored_visibility(self, vis: np.ndarray) -> np.ndarray:
        """The visibility the plan scores with: ``vis`` itself, or every joint when visibility is ignored."""
        if self.visibility == "ignored":
            return np.ones(vis.shape, dtype=np.uint8)
        return vis

    def _sums(self, pred, gt, vis, segments: Segments) -> dict[str, np.ndarray]:
        """One kernel pass: the per-segment sums of PCK, PCK-AUC, MPJPE and OKS."""
        s = segments.count
        m, t, k = len(self.norms), len(self.ks), self.skeleton.n_joints
        norm_kind = np.array([n[1] for n in self.norms], dtype=np.int64)
        norm_a = np.array([n[2] for n in self.norms], dtype=np.int64)
        norm_b = np.array([n[3] for n in self.norms], dtype=np.int64)
        norm_value, pck_thr, auc_thr, k_order = self._thresholds()
        oks_var = ((np.array(self.sigmas, dtype=np.float64) * 2.0) ** 2 if "oks" in self.metrics
                   else np.empty(0))
        out = {"n_rows": np.zeros(s, np.int64), "n_novis": np.zeros(s, np.int64),
               "norm_bad": np.zeros((s, m), np.int64), "pck_first": np.zeros((s, m, t + 1, k), np.int64),
               "auc_pass": np.zeros((s, m, k), np.int64), "err_sum": np.zeros((s, k), np.float64),
               "err_n": np.zeros((s, k), np.int64), "oks_sum": np.zeros(s, np.float64),
               "oks_n": np.zeros(s, np.int64), "oks_bad": np.zeros(s, np.int64), "gt_bad": np.zeros(s, np.int64)}
        with serial_below(gt.shape[0] * gt.shape[1]):
            _k._pose_sums(pred, gt, vis, segments.order, segments.start, norm_kind, norm_a, norm_b, norm_value,
                          self.floor_kind, self.floor_value, REL_FLOOR, self.per_axis, self.precision == "float32",
                          pck_thr, auc_thr, self.comparison == "<", oks_var, self.oks_area, out["n_rows"],
                          out["n_novis"], out["norm_bad"], out["pck_first"], out["auc_pass"], out["err_sum"],
                          out["err_n"], out["oks_sum"], out["oks_n"], out["oks_bad"], out["gt_bad"])
        if out["gt_bad"].any():
            _refuse_nonfinite(gt, vis, all_joints=self.visibility == "ignored")
        # A joint whose first passed (ascending) threshold is q is correct at every threshold from q on.
        out["pck_n"] = out["pck_first"].sum(axis=2)
        pck_hit = np.empty((s, m, t, k), np.int64)
        pck_hit[:, :, k_order, :] = np.cumsum(out["pck_first"][:, :, :t, :], axis=2)
        out["pck_hit"] = pck_hit
        return out

    def table(self, pred: np.ndarray, gt: np.ndarray, vis: np.ndarray, segments: Segments) -> np.ndarray:
        """Per-segment sufficient statistics ``(segments, columns)`` for arrays from :func:`validate_poses`.
        ``pred`` may have one row, scored against every ground-truth row. Raises ValidationError when the
        ground truth is not finite at a scored joint.

        Batch-mean values are computed here too: a second pass over batches of ``batch_size`` consecutive rows
        gives each batch's micro value; each batch's value is added to the row of the segment holding the batch's
        first row (so the column totals hold their sum and count)."""
        vis = self.scored_visibility(vis)
        s = segments.count
        k = self.skeleton.n_joints
        sums = self._sums(pred, gt, vis, segments)
        pa_sum = np.zeros((s, k), np.float64)
        pa_n = np.zeros((s, k), np.int64)
        pa_bad = np.zeros(s, np.int64)
        if "pa-mpjpe" in self.metrics:
            fit = vis
            if self.pa_fit == "all":
                fit = np.ones(vis.shape, dtype=np.uint8)
                if not np.isfinite(gt).all():
                    _refuse_nonfinite(gt, fit, all_joints=True)
            _pa_sums(pred, gt, vis, segments, pa_sum, pa_n, pa_bad, fit_vis=fit)
        batch_specs = [(i, st) for i, st in enumerate(self._stats) if st[3] >= 0]
        batch_sum = np.zeros((s, len(batch_specs)), np.float64)
        batch_n = np.zeros((s, len(batch_specs)), np.int64)
        if batch_specs:
            n = gt.shape[0]
            batches = make_segments(n, block=self.batch_size)
            b = self._sums(pred, gt, vis, batches)
            btable = np.hstack([b["n_rows"][:, None], b["n_novis"][:, None], b["norm_bad"],
                                b["pck_n"].reshape(batches.count, -1), b["pck_hit"].reshape(batches.count, -1),
                                b["auc_pass"].reshape(batches.count, -1)]).astype(np.float64)
            # btable's columns are laid out like the table's first ones (rows, novis, norm_bad, pck_n, pck_hit,
            # auc_pass), so the micro statistics index it directly.
            owner = _segment_of_rows(segments, n)[batches.start[:-1]] if n else np.empty(0, np.int64)
            for _i, (family, mi, ti, bi) in batch_specs:
                per_batch = self._micro(family, mi, ti)(btable)
                ok = ~np.isnan(per_batch)
                np.add.at(batch_sum[:, bi], owner[ok], per_batch[ok])
                np.add.at(batch_n[:, bi], owner[ok], 1)
        parts = [sums["n_rows"], sums["n_novis"], sums["norm_bad"], sums["pck_n"], sums["pck_hit"], sums["auc_pass"],
                 sums["err_sum"], sums["err_n"], sums["oks_sum"], sums["oks_n"], sums["oks_bad"], pa_sum, pa_n, pa_bad,
                 batch_sum, batch_n]
        return np.hstack([np.asarray(p, dtype=np.float64).reshape(s, int(np.prod(p.shape[1:], dtype=np.int64)))
                          for p in parts])


def _ratio32(hits, n):
    """hits / n divided in float32 (counts below 2**24 are exact in float32), as a float64 array; NaN where
    n == 0."""
    hits = np.asarray(hits, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    out = np.full(np.broadcast(hits, n).shape, np.nan)
    ok = n > 0
    np.divide(hits.astype(np.float32), n.astype(np.float32), out=out, where=ok, casting="unsafe")
    return out if out.ndim else float(out)


def _segment_of_rows(segments: Segments, n: int) -> np.ndarray:
    """The segment index of every row."""
    out = np.empty(n, dtype=np.int64)
    for s in range(segments.count):
        lo, hi = segments.start[s], segments.start[s + 1]
        rows = segments.order[lo:hi] if segments.order.shape[0] else np.arange(lo, hi)
        out[rows] = s
    return out


def _convention_settings(conv: Convention, metrics, dims: int, normalizations: tuple, comparison: str,
                         averaging: tuple, floor: str, visibility: str, per_axis: bool, precision: str, pa_fit: str,
                         result_precision: str, notes: list[str]):
    """The settings a convention fixes, after refusing the ones given with it and the metrics it lacks."""
    given = [name for name, value, default in (
        ("normalizations", normalizations, ("torso",)), ("comparison", comparison, "<="),
        ("averaging", averaging, AVERAGINGS), ("normalizer floor", floor, "relative"),
        ("visibility", visibility, "used"), ("per-axis normalisation", per_axis, False),
        ("precision", precision, "float64"), ("Procrustes fit", pa_fit, "visible"),
        ("result precision", result_precision, "float64")) if value != default]
    if given:
        raise ValidationError(f"convention {conv.name} sets the {', '.join(given)} itself; drop "
                              f"{'it' if len(given) == 1 else 'them'} or drop the convention")
    if metrics is None:
        metrics = [m for m, r in conv.rules.items() if dims in r.dims]
        skipped = [m for m, r in conv.rules.items() if dims not in r.dims]
        if skipped:
            notes.append(f"{conv.name}: {', '.join(skipped)} not computed: its source takes "
                         f"{' or '.join(f'{d}D' for d in conv.rules[skipped[0]].dims)} poses only")
    metrics = [str(m).strip() for m in metrics]
    for m in metrics:
        rule = conv.rule(m)
        if dims not in rule.dims:
            raise ValidationError(f"convention {conv.name} computes {m} for "
                                  f"{' or '.join(f'{d}D' for d in rule.dims)} poses only ({rule.function}); these are "
                                  f"{dims}D")
    pck_rules = [conv.rules[m] for m in ("pck", "pck-auc") if m in metrics]
    pck_names = [conv.rules["pck"].normalization] if "pck" in metrics else []
    auc_names = [conv.rules["pck-auc"].normalization] if "pck-auc" in metrics else []
    norms = tuple(dict.fromkeys(pck_names + auc_names)) or ("torso",)
    first = pck_rules[0] if pck_rules else None
    err = [conv.rules[m] for m in ("mpjpe", "pa-mpjpe") if m in metrics]
    return (tuple(metrics), norms, pck_names, auc_names,
            first.comparison if first else "<=",
            (first.averaging,) if first else ("micro",),
            tuple(dict.fromkeys(r.averaging for r in err)) or ("micro",),
            first.floor if first else "relative",
            conv.visibility,
            first.per_axis if first else False,
            first.precision if first else "float64",
            conv.rules["pa-mpjpe"].pa_fit if "pa-mpjpe" in metrics else "visible",
            conv.rules["pck"].result_precision if "pck" in metrics else "float64")
