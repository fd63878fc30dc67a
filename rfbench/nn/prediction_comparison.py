"""Comparing a re-run prediction with the recorded one (what ``verify`` does when it re-runs ``rfbench
predict``): identical bits when the two runs' onnxruntime version, CPU tier and settings agree, the recorded
run's tolerance otherwise (:func:`compare_predictions`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from rfbench.errors import VerificationError
from rfbench.nn.predict_settings import PredictSettings
from rfbench.nn.prediction_record import PredictionRecord

# --- comparing a re-run with the recorded run ----------------------------------------------------------------

@dataclass(frozen=True)
class PredictionComparison:
    """The outcome of :func:`compare_predictions`.

    Attributes
    ----------
    equal : bool
        The predictions agree under the rule that applies.
    rule : str
        ``"identical bits"`` (same onnxruntime version, CPU tier and run settings) or ``"tolerance"``.
    differences : tuple of str
        What differs between the two runs' environments, e.g. ``"onnxruntime 1.32.0 -> 1.31.0"``.
    tolerance : float
        The recorded run's declared tolerance.
    max_difference : float or None
        Largest ``|a - b| / max(1, |a|)`` over finite pairs (None when shapes or dtypes differ).
    detail : str
        One line for the user.
    """

    equal: bool
    rule: str
    differences: tuple
    tolerance: float
    max_difference: float | None
    detail: str

    def raise_if_different(self) -> None:
        """:class:`VerificationError` (exit 1) unless :attr:`equal`."""
        if not self.equal:
            raise VerificationError(self.detail, differences=[self.detail])


def _doc(record: PredictionRecord | Mapping) -> Mapping:
    return record.doc if isinstance(record, PredictionRecord) else record


def _environment_differences(a: Mapping, b: Mapping) -> list[str]:
    out = []
    ra, rb = a.get("runtime") or {}, b.get("runtime") or {}
    if ra.get("version") != rb.get("version"):
        out.append(f"onnxruntime {ra.get('version')} -> {rb.get('version')}")
    ca, cb = a.get("cpu") or {}, b.get("cpu") or {}
    for key, label in (("level", "instruction-set level"), ("mlas", "onnxruntime kernel tier")):
        if ca.get(key) != cb.get(key):
            out.append(f"{label} {ca.get(key)} -> {cb.get(key)}")
    if sorted(ca.get("flags") or []) != sorted(cb.get("flags") or []):
        gone = sorted(set(ca.get("flags") or []) - set(cb.get("flags") or []))
        new = sorted(set(cb.get("flags") or []) - set(ca.get("flags") or []))
        out.append("CPU features" + (f" without {', '.join(gone)}" if gone else "") +
                   (f" with {', '.join(new)}" if new else ""))
    sa, sb = dict(a.get("settings") or {}), dict(b.get("settings") or {})
    sa.pop("tolerance", None)
    sb.pop("tolerance", None)
    for key in sorted(set(sa) | set(sb)):
        if sa.get(key) != sb.get(key):
            out.append(f"setting {key} {sa.get(key)} -> {sb.get(key)}")
    return out


def compare_predictions(recorded: PredictionRecord | Mapping, recorded_pred: np.ndarray,
                        rerun: PredictionRecord | Mapping, rerun_pred: np.ndarray) -> PredictionComparison:
    """Compare a re-run's predictions with the recorded ones.

    Same onnxruntime version, CPU instruction-set level, kernel tier and features, and run settings: the
    arrays must be identical bit for bit. Otherwise (the comparison says what differs) floating-point
    predictions must agree within the recorded run's tolerance ``t``: for every element
    ``|a - b| <= t · max(1, |a|)``, with NaN where the recorded run has NaN and infinities equal; integer
    predictions (labels) must still be identical. Shapes and dtypes must always match.

    Parameters
    ----------
    recorded, rerun : PredictionRecord or mapping
        The two runs' records (``pred.json`` contents).
    recorded_pred, rerun_pred : numpy.ndarray
        Their predictions.
    """
    a_doc, b_doc = _doc(recorded), _doc(rerun)
    tol = float((a_doc.get("settings") or {}).get("tolerance", PredictSettings().tolerance))
    diffs = tuple(_environment_differences(a_doc, b_doc))
    a, b = np.asarray(recorded_pred), np.asarray(rerun_pred)
    rule = "tolerance" if diffs else "identical bits"
    where = ("re-run under " + "; ".join(diffs)) if diffs else "re-run in the same environment"
    if a.shape != b.shape or a.dtype != b.dtype:
        return PredictionComparison(False, rule, diffs, tol, None,
                                    f"predictions differ: recorded {a.dtype} {list(a.shape)}, {where} "
                                    f"{b.dtype} {list(b.shape)}")
    if not np.issubdtype(a.dtype, np.floating):
        rule = "identical bits"
    if rule == "identical bits":
        same = a.tobytes() == b.tobytes()
        worst = _worst(a, b) if np.issubdtype(a.dtype, np.floating) else (0.0 if same else None)
        if same:
            return PredictionComparison(True, rule, diffs, tol, 0.0, f"predictions identical bit for bit ({where})")
        n = int(np.count_nonzero(_bit_differs(a, b)))
        return PredictionComparison(False, rule, diffs, tol, worst,
                                    f"predictions differ in {n} of {a.size} values ({where}; identical bits are "
                                    f"required there)" + (f", largest relative difference {worst:.3g}"
                                                          if worst is not None else ""))
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    inf_ok = np.array_equal(a[np.isinf(a)], b[np.isinf(a)]) and np.array_equal(np.isinf(a), np.isinf(b))
    worst = _worst(a, b)
    ok = bool(np.array_equal(nan_a, nan_b) and inf_ok and (worst is None or worst <= tol))
    detail = (f"predictions agree within tolerance {tol:g} ({where}; largest relative difference {worst or 0.0:.3g})"
              if ok else f"predictions differ beyond tolerance {tol:g} ({where}; largest relative difference "
                         f"{worst if worst is not None else float('nan'):.3g}"
                         + ("; NaN or infinity positions differ" if not (np.array_equal(nan_a, nan_b) and inf_ok)
                            else "") + ")")
    return PredictionComparison(ok, rule, diffs, tol, worst, detail)


def _bit_differs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    width = a.dtype.itemsize
    av = np.ascontiguousarray(a).view(np.uint8).reshape(-1, width)
    bv = np.ascontiguousarray(b).view(np.uint8).reshape(-1, width)
    return (av != bv).any(axis=1)


def _worst(a: np.ndarray, b: np.ndarray) -> float | None:
    finite = np.isfinite(a) & np.isfinite(b)
    if not finite.any():
        return None
    a64, b64 = a[finite].astype(np.float64), b[finite].astype(np.float64)
    return float((np.abs(a64 - b64) / np.maximum(1.0, np.abs(a64))).max())
