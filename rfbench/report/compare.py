"""Can a report's number be lined up with a published one? (``rfbench compare``)

:func:`compare_report` takes a report (``rfbench.report/1``) and claims (:mod:`rfbench.report.claims`) and
answers, per claim: *comparable* or not, with every part that decides it listed point by point — metric,
normalization (and the joints it measures), k, PCK-AUC's k_max and threshold count, OKS's area and sigmas,
comparison, averaging, normalizer floor, visibility, per-axis normalisation, precision, Procrustes fit, skeleton,
dimensions, units, dataset, protocol, setting, leakage status and selection. A report of generated data (tagged
SYNTHETIC, or whose split or provenance says so) is never the release a claim was measured on: its dataset
differs from every claim's. A report whose layout is not
verified (``LAYOUT NOT VERIFIED``: a failed check overridden, a check not evaluable, a custom layout) never has
the claim's skeleton, nor a normalization or sigmas taken from the layout's joints. A part is ``same``,
``differs``, ``unknown`` (one side does not say: never guessed) or, for the
selection of the reported checkpoint, ``not recorded`` (rfbench scores the predictions it is given and cannot
know how they were chosen; that part is shown but does not decide comparability). A claim is comparable when
every other part is ``same``.

Where the report's inputs allow, the report's predictions are **re-scored under the claim's convention or
spec** (``rescore``): the user's number in the claim's terms, tagged with the report's evidence (MEASURED for
real data) beside the claim's value (CLAIMED). The tag, and every report field a part reads, are the report's own
word unless the report is verified first (``verify``): a report edited to read MEASURED, or with its
``shared_files`` deleted, says so only until then, and the comparison shows it as unverified. The report is
read once: verify re-runs those very bytes (by their sha256) and they are what is lined up, and the comparison
carries verify's result (the dataset trees the chain was ingested again from, its notes). Spec pieces the
claim does not give are taken at rfbench's defaults and listed as assumptions; a claim without its
normalization (PCK) cannot be re-scored.

Inputs are read under the rules ``rfbench verify`` follows: a path the report records is resolved inside the
report's folder, or a ``root`` given (absolute paths, escapes and symlinks leading out are refused), it must be a
regular file of the recorded size (checked before reading, at most :data:`MAX_INPUT_BYTES`) and its sha256 must be the
recorded one. Anything else makes the re-score *unavailable*, with the reason; it is never an error, and no path
outside the folder is opened.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from rfbench.errors import (
    FormatError,
    RfbenchError,
    ValidationError,
    VerificationError,
    malformed_as_format_error,
)
from rfbench.io.files import NotRegularFile, read_regular
from rfbench.report.build import validate_report
from rfbench.report.claims import MAX_BATCH_SIZE, OKS_BOX_AREAS, UNKNOWN, Claim, ClaimsFile
from rfbench.report.settings import PoseSettings
from rfbench.settings import options_of

__all__ = ["compare_report", "Comparison", "ClaimComparison", "Part", "MAX_INPUT_BYTES", "MAX_BATCH_SIZE",
           "read_report_inputs"]

#: Largest input file compare reads to re-score (the size is checked before reading).
MAX_INPUT_BYTES = 1 << 31
_ROLES = ("pred", "gt", "vis", "skeleton")
#: ``rfbench score``'s declaration of each setting compare shares with it (its bound, its default).
_SCORE_SETTINGS = {f.name: (f, o) for f, o in options_of(PoseSettings)}
_DEFAULTS = {"comparison": "<=", "averaging": "micro", "floor": "relative", "visibility": "used",
             "per_axis": False, "precision": "float64", "result_precision": "float64", "pa_fit": "visible"}


@dataclass(frozen=True)
class Part:
    """One part of the comparison: what the report and the claim say, and whether they agree."""

    name: str
    report: str
    claim: str
    status: str  # same | differs | unknown | not recorded

    def to_dict(self) -> dict[str, str]:
        return {"part": self.name, "report": self.report, "claim": self.claim, "status": self.status}


@dataclass
class ClaimComparison:
    """A claim beside the report: the result compared (the closest of the same metric), the parts, the verdict
    and the re-score."""

    claim: Claim
    result: Mapping[str, Any] | None
    parts: list[Part]
    rescore: dict[str, Any]

    @property
    def comparable(self) -> bool:
        return self.result is not None and all(p.status in ("same", "not recorded") for p in self.parts)

    @property
    def blocking(self) -> list[Part]:
        return [p for p in self.parts if p.status in ("differs", "unknown")]

    def to_dict(self) -> dict[str, Any]:
        res = None
        if self.result is not None:
            model = self.result.get("model") or {}
            res = {"label": self.result.get("label"), "value": model.get("value"), "spec": self.result.get("spec")}
        return {"claim": self.claim.to_dict(), "claim_value": self.claim.value_text(), "comparable": self.comparable,
                "result": res, "parts": [p.to_dict() for p in self.parts],
                "differs": [p.name for p in self.parts if p.status == "differs"],
                "unknown": [p.name for p in self.parts if p.status == "unknown"], "rescore": self.rescore}


@dataclass
class Comparison:
    """What :func:`compare_report` returns."""

    report: str
    evidence: str
    task: str
    items: list[ClaimComparison] = field(default_factory=list)
    claims_files: list[str] = field(default_factory=list)
    #: whether the report was verified (re-run, MATCH) before the comparison; if not, its evidence tag and the
    #: fields the parts read (its split, audit, leakage status, results) are the report's own word
    verified: bool = False
    #: ``LAYOUT NOT VERIFIED: ...`` when the report's skeleton is not shown to be its poses' joint order (a
    #: failed layout check scored with ``--trust-layout``, a check that could not run, a custom layout); None
    #: otherwise. Read from the report's ``skeleton`` and ``layout_check``, never from a claim.
    layout_warning: str | None = None
    #: with ``verify``, what verify returned (:meth:`rfbench.report.verify.VerifyResult.to_dict`): among others
    #: ``datasets``, each dataset tree the chain was ingested again from (and whether it is one given as
    #: ``datasets``), and ``notes`` (what the MATCH rests on: ground truth the scored party supplied, a template
    #: corpus read by the scored party's convention...); None without ``verify``
    verification: dict[str, Any] | None = None

    @property
    def comparable(self) -> int:
        return sum(1 for c in self.items if c.comparable)

    def to_dict(self) -> dict[str, Any]:
        return {"report": self.report, "evidence": self.evidence, "verified": self.verified, "task": self.task,
                "layout_warning": self.layout_warning, "verification": self.verification,
                "claims_files": list(self.claims_files), "claims": len(self.items), "comparable": self.comparable,
                "comparisons": [c.to_dict() for c in self.items]}


class _Unavailable(Exception):
    """The re-score cannot be made; the message says why."""


def _mapping(obj: Any) -> Mapping[str, Any]:
    """``obj`` when it is a mapping, else an empty one (a report's optional sections may be anything)."""
    return obj if isinstance(obj, Mapping) else {}


# -- the report's side -----------------------------------------------------------------------------------


def _fmt(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


#: The datasets rfbench reads itself (``ingest widar``, ``ingest mmfi``), by the names compare shows.
_BUILTIN_NAMES = {"widar3-bvp": "Widar3.0 BVP", "widar3": "Widar3.0 CSI", "mmfi": "MM-Fi"}
#: Of a manifest of both Widar3.0 releases (``ingest widar --kind both``), the release a report's rows come from.
_RELEASE_NAMES = {"bvp": _BUILTIN_NAMES["widar3-bvp"], "csi": _BUILTIN_NAMES["widar3"]}
#: How compare shows a corpus of ``rfbench ingest files`` (its name is the user's choice).
_OWN_CORPUS = " (a corpus of rfbench ingest files)"


def _report_dataset(report: Mapping[str, Any]) -> str:
    split = _mapping(report.get("split"))
    protocol = str(split.get("protocol") or "")
    if protocol.startswith("mmfi-"):
        return "MM-Fi"
    dataset = split.get("dataset")
    if dataset == "widar3" and split.get("release") in _RELEASE_NAMES:  # both releases ingested, one scored
        return _RELEASE_NAMES[split["release"]]
    if isinstance(dataset, str) and dataset:
        return _BUILTIN_NAMES.get(dataset, dataset + _OWN_CORPUS)
    return "not recorded in the report"


#: How compare shows the dataset of a report of generated data (see :func:`_generated`).
_GENERATED = "generated data (SYNTHETIC)"


def _generated(report: Mapping[str, Any]) -> bool:
    """Whether the report's numbers come from generated data: its evidence tag is SYNTHETIC, or its split or its
    provenance records that the data is generated (the generators' marker ingest found, or ``score
    --synthetic``). Any one is enough, so a report whose tag alone was edited is still generated; with ``verify``
    all three are re-made from the report's chain, not taken on its word. Generated data is never the release a
    claim's number was measured on, whatever dataset it imitates."""
    return (report.get("evidence") == "SYNTHETIC" or _mapping(report.get("split")).get("synthetic") is True
            or _mapping(report.get("provenance")).get("synthetic") is True)


def _dataset_part(report: Mapping[str, Any], claim: Claim) -> Part:
    name = _report_dataset(report)
    if _generated(report):  # differs from any claim's dataset, even one the claim leaves unknown
        ingested = "" if name.startswith("not recorded") else f" ingested as {name}"
        return Part("dataset", f"{_GENERATED}{ingested}, not the release", _fmt(claim.dataset), "differs")
    return _part("dataset", name, claim.dataset, _same_dataset)


def _same_dataset(report_text: str, claim_text: str) -> bool:
    """A dataset rfbench reads itself is the claim's when the claim names it (its shown name, then at most a
    remark in parentheses); a corpus of ``ingest files``, whose name anyone chooses, only when the claim names
    exactly that name."""
    if report_text.endswith(_OWN_CORPUS):
        from rfbench.datasets.files import reads_as_builtin

        own = report_text[:-len(_OWN_CORPUS)].strip()
        if reads_as_builtin(own) is not None:  # a template corpus named as a release is never the release
            return False
        return own.lower() == claim_text.strip().lower()
    # the name itself, before any remark in parentheses: "MM-Fi" is not "XRF55 (this is not MM-Fi)", and
    # "Widar3.0" (the CSI release) is not "Widar3.0 BVP (...)"
    return report_text.strip().lower() == claim_text.split("(")[0].strip().lower()


def _report_gestures(report: Mapping[str, Any]) -> str:
    """The gestures the report scored: those of its test labels (the classes with test support), after the
    split's filter (a preset's name, or the names listed) when it had one. A preset some of whose gestures the
    data does not hold is not the preset."""
    split = _mapping(report.get("split"))
    if not split:
        return "unknown (no split given)"
    gestures = _mapping(split.get("params")).get("gestures") if isinstance(split.get("params"), Mapping) else None
    classes = [c for c in report.get("classes") or [] if isinstance(c, Mapping)]
    scored = _scored_classes(report)
    clash = _unreadable_names(scored)
    if clash:
        return f"unknown (the class names {clash} cannot be told apart in a comma-separated list)"
    # classes without a test row the model still chose among (a label set of 11 scored on 6 gestures'
    # rows): another task than telling the 6 apart
    unseen = [str(c.get("class")) for c in classes if str(c.get("class")) not in scored]
    among = f" ({_CHOSE_AMONG} {len(classes)} classes: {', '.join(unseen)} had no test row)" if unseen and scored \
        else ""
    if gestures is None:
        return "every gesture of the manifest" + (f": {', '.join(scored)}" if scored else "") + among
    name = gestures.lower() if isinstance(gestures, str) else None
    filtered = ", ".join(str(g) for g in gestures) if isinstance(gestures, list) else str(gestures)
    return f"{name or filtered} filter, scored: " + ", ".join(scored) + among if scored else filtered


_CHOSE_AMONG = "the model chose among"


def _scored_classes(report: Mapping[str, Any]) -> list[str]:
    """The classes the report scored: those with test support, as it records them."""
    return [str(c.get("class")) for c in report.get("classes") or []
            if isinstance(c, Mapping) and isinstance(c.get("support"), int) and not isinstance(c.get("support"), bool)
            and c["support"] > 0]


def _gesture_key(name: str) -> str:
    return name.strip().lower()


def _unreadable_names(names: Sequence[str]) -> str:
    """The class names a claim's comma-separated list cannot name one by one (one holding ',' or ':', or two
    equal but for case and spaces), quoted; empty when there is none."""
    keys = [_gesture_key(n) for n in names]
    bad = [n for n, k in zip(names, keys) if "," in n or ":" in n or not k or keys.count(k) > 1]
    return ", ".join(repr(n) for n in dict.fromkeys(bad))


def _gestures_part(report: Mapping[str, Any], claim: Claim) -> Part:
    """The gestures part: the report's scored classes against the claim's list, name by name and as many."""
    scored = [_gesture_key(n) for n in _scored_classes(report)]

    def same(report_text: str, claim_text: str) -> bool:
        wanted = [_gesture_key(t) for t in claim_text.split(":", 1)[-1].split(",") if t.strip()]
        return _CHOSE_AMONG not in report_text and sorted(scored) == sorted(wanted)

    return _part("gestures", _report_gestures(report), claim.gestures, same)


def _report_setting(report: Mapping[str, Any]) -> str:
    split = _mapping(report.get("split"))
    actions = _mapping(split.get("params")).get("actions")
    return f"actions {actions}" if actions else "none"


_NOT_VERIFIED = "LAYOUT NOT VERIFIED"


def _layout_unverified(report: Mapping[str, Any]) -> tuple[str, str] | None:
    """Why the report's skeleton is not shown to be its poses' joint order, as ``(short, sentence)``, or None when
    it is (a built-in layout whose plausibility check passed). Read from the report's ``skeleton`` and
    ``layout_check`` (what ``rfbench score`` recorded, re-made by ``--verify``)."""
    if report.get("task") != "pose":
        return None
    sk = _mapping(report.get("skeleton"))
    name = sk.get("name")
    lay = report.get("layout_check")
    reason = None
    if not isinstance(lay, Mapping):
        short = "the report records no layout check"
    else:
        reason = lay.get("reason")
        if lay.get("overridden") is True:
            short = "its layout check failed, scored anyway with --trust-layout"
        elif lay.get("passed") is False:
            short = "its layout check failed"
        elif lay.get("passed") is not True:
            short = "its layout check could not be evaluated"
        elif sk.get("source") != "builtin":
            short, reason = "a custom layout, checked only by its own file", (
                "passing checks a layout file declares does not show that its joint names and roles are right")
        else:
            return None
    return short, (f"{_NOT_VERIFIED}: skeleton {name}: {short}" + (f" ({reason})" if reason else "")
                   + "; its skeleton, and a normalization or OKS sigmas taken from its joints, are not known to be "
                     "a claim's")


def _unverified_part(part: Part, short: str) -> Part:
    """``part`` (skeleton, or what depends on the layout's joints) under a layout that is not verified: never
    ``same`` — unknown, with the reason — unless it differs anyway."""
    if part.status == "differs":
        return part
    return Part(part.name, f"{part.report} ({_NOT_VERIFIED}: {short})", part.claim, "unknown")


def _norm_key(normalization: str | None, joints) -> tuple | str | None:
    """What a normalization measures, comparable across spellings: ``("pair", {a, b})``, ``("abs", T)`` or the
    box name."""
    if not normalization:
        return None
    if joints:
        return ("pair", frozenset(joints))
    if normalization.startswith("abs:"):
        try:
            return ("abs", float(normalization[4:]))
        except ValueError:
            return normalization
    return normalization


def _norm_text(normalization: str | None, joints, how: str = "") -> str:
    if not normalization:
        return "none"
    if joints:
        return f"{normalization} ({joints[0]}–{joints[1]}{how})"
    return normalization


# -- the claim's side ------------------------------------------------------------------------------------


def _claim_spec(claim: Claim) -> dict[str, Any]:
    """The claim's spec pieces for its metric: from its convention's rule (with the claim's k, batch size,
    skeleton) or from its spec table; a piece neither gives is ``unknown``."""
    from rfbench.metrics.conventions import get_convention

    out: dict[str, Any] = {key: UNKNOWN for key in ("normalization", "normalizer_joints", "k", "comparison",
                                                    "averaging", "batch_size", "floor", "visibility", "per_axis",
                                                    "precision", "result_precision", "pa_fit", "skeleton", "dims",
                                                    "auc_n", "auc_max", "oks_area", "sigmas")}
    spec = dict(claim.spec)
    if claim.has_convention:
        conv = get_convention(claim.convention)
        rule = conv.rules.get(claim.metric)
        if rule is None:
            return out | {"_missing": f"convention {conv.name} does not compute {claim.metric}"}
        out.update(normalization=rule.normalization, comparison=rule.comparison, averaging=rule.averaging,
                   floor=rule.floor, visibility=rule.visibility, per_axis=rule.per_axis, precision=rule.precision,
                   result_precision=rule.result_precision, pa_fit=rule.pa_fit, normalizer_joints=None)
        if rule.normalization and rule.normalization.startswith("pair:") and conv.own_skeleton:
            out["normalizer_joints"] = _pair_names(rule.normalization, conv.own_skeleton)
            out["_joints_how"] = f" under {conv.own_skeleton}, {conv.name}'s joint order" + (
                f"; its comment says '{conv.pair_comment}'" if conv.pair_comment else "")
        if rule.averaging != "batch-mean":
            out["batch_size"] = None
        if conv.own_skeleton:
            out["skeleton"] = conv.own_skeleton  # the source's indices refer to its own order
        if len(rule.dims) == 1:
            out["dims"] = rule.dims[0]  # the source takes poses of one dimension only
    for key, value in spec.items():
        out[key] = value
    norm = out["normalization"]
    if isinstance(norm, str) and norm != UNKNOWN and out["normalizer_joints"] in (UNKNOWN, None):
        out["normalizer_joints"] = _named_pair(norm, out["skeleton"])
    return out


def _pair_names(normalization: str, skeleton: str) -> tuple[str, str] | None:
    from rfbench.metrics.skeletons import BUILTIN

    refs = [r.strip() for r in normalization[5:].split(",")]
    skel = BUILTIN.get(skeleton)
    if skel is None:
        return None
    try:
        return tuple(skel.joints[int(r)] if r.isdigit() else r for r in refs)
    except IndexError:
        return None


def _named_pair(normalization: str, skeleton: Any):
    """The joints of a pair normalization when the claim says which (by name, by role, or by index under a
    built-in skeleton); None for a box or abs:T; ``unknown`` when indices have no known order."""
    if normalization == "hip-width":
        return ("left_hip", "right_hip")
    if normalization == "torso":
        return ("left_shoulder", "right_hip")
    if not normalization.startswith("pair:"):
        return None
    refs = [r.strip() for r in normalization[5:].split(",")]
    if all(not r.isdigit() for r in refs):
        return tuple(refs)
    names = _pair_names(normalization, skeleton) if isinstance(skeleton, str) else None
    return names or UNKNOWN


# -- the parts -------------------------------------------------------------------------------------------


def _part(name: str, report_value: Any, claim_value: Any, equal=None) -> Part:
    if claim_value == UNKNOWN or report_value == UNKNOWN or (
            isinstance(report_value, str) and report_value.startswith(("not recorded", "unknown"))):
        status = "unknown"
    else:
        same = equal(report_value, claim_value) if equal else report_value == claim_value
        status = "same" if same else "differs"
    return Part(name, _fmt(report_value) if report_value != UNKNOWN else "unknown",
                _fmt(claim_value) if claim_value != UNKNOWN else "unknown", status)


def _spec_parts(result: Mapping[str, Any], claim: Claim, cs: Mapping[str, Any],
                report: Mapping[str, Any] | None = None) -> list[Part]:
    spec = _mapping(result.get("spec"))
    metric = claim.metric
    layout = _layout_unverified(report) if report is not None else None
    parts = []
    if metric in ("pck", "pck-auc"):
        rn, rj = spec.get("normalization"), spec.get("normalizer_joints")
        cn, cj = cs["normalization"], cs["normalizer_joints"]
        report_text = _norm_text(rn, rj)
        if cn == UNKNOWN:
            parts.append(Part("normalization", report_text, "unknown", "unknown"))
        else:
            claim_text = _norm_text(cn, cj if cj not in (UNKNOWN, None) else None, cs.get("_joints_how", ""))
            if cj == UNKNOWN:
                parts.append(Part("normalization", report_text, claim_text + " (joint order unknown)", "unknown"))
            else:
                same = _norm_key(rn, rj) == _norm_key(cn, cj)
                parts.append(Part("normalization", report_text, claim_text, "same" if same else "differs"))
        if layout and rj:  # the joints it measures are named by a layout that is not verified
            parts[-1] = _unverified_part(parts[-1], layout[0])
        if metric == "pck":
            parts.append(_part("k", spec.get("k"), cs["k"], _close))
        else:  # [0, k_max) in n thresholds: another range or count is another number
            if not (isinstance(cn, str) and cn.startswith("abs:")):  # under abs:T the range is T itself
                parts.append(_part("AUC k_max", spec.get("auc_max"), cs["auc_max"], _close))
            parts.append(_part("AUC thresholds", spec.get("auc_n"), cs["auc_n"]))
        parts.append(_part("comparison", spec.get("comparison"), cs["comparison"]))
        avg_r = spec.get("averaging")
        if avg_r == "batch-mean":
            avg_r = f"batch-mean(B={spec.get('batch_size')})"
        avg_c = cs["averaging"]
        if avg_c == "batch-mean":
            avg_c = f"batch-mean(B={cs['batch_size'] if cs['batch_size'] != UNKNOWN else 'unknown'})"
            if cs["batch_size"] == UNKNOWN:
                parts.append(Part("averaging", _fmt(avg_r), avg_c, "unknown"))
                avg_c = None
        if avg_c is not None:
            parts.append(_part("averaging", avg_r, avg_c))
        if not (isinstance(cn, str) and cn.startswith("abs:")):
            parts.append(_part("normalizer floor", spec.get("floor") or "relative", cs["floor"]))
        parts.append(_part("per-axis normalisation", bool(spec.get("per_axis")), cs["per_axis"]))
        parts.append(_part("precision", spec.get("precision", "float64"), cs["precision"]))
        if metric == "pck":
            parts.append(_part("result precision", spec.get("result_precision", "float64"), cs["result_precision"]))
    else:
        parts.append(_part("averaging", spec.get("averaging"), cs["averaging"]))
        if metric == "pa-mpjpe":
            parts.append(_part("Procrustes fit", spec.get("pa_fit") or "visible", cs["pa_fit"]))
        if metric == "oks":
            parts.append(_oks_area_part(spec.get("oks_area"), cs["oks_area"]))
            parts.append(_sigmas_part(spec.get("sigmas"), cs["sigmas"], report or {}))
            if layout and spec.get("sigmas") != "declared":  # the layout's sigmas, one per joint it names
                parts[-1] = _unverified_part(parts[-1], layout[0])
    parts.append(_part("visibility", spec.get("visibility", "used"), cs["visibility"]))
    parts.append(_part("skeleton", spec.get("skeleton"), cs["skeleton"]))
    if layout:
        parts[-1] = _unverified_part(parts[-1], layout[0])
    dims = spec.get("dims")
    parts.append(_part("dimensions", f"{dims}D" if dims in (2, 3) else "not recorded in the result",
                       f"{cs['dims']}D" if cs["dims"] in (2, 3) else UNKNOWN))
    absolute = metric in ("pck", "pck-auc") and isinstance(cs["normalization"], str) and \
        cs["normalization"].startswith("abs:")
    if metric in ("mpjpe", "pa-mpjpe") or absolute:
        parts.append(_part("units", spec.get("units"), claim.units))
    return parts


def _close(a: Any, b: Any) -> bool:
    return a is not None and b is not None and math.isclose(float(a), float(b), abs_tol=1e-12)


def _oks_area_part(report_area: Any, claim_area: Any) -> Part:
    """The OKS area: the box's (``0.53*bbox``) or a constant (units²)."""
    def key(area):
        if area in OKS_BOX_AREAS:
            return "0.53*bbox"
        try:
            return float(area)
        except (TypeError, ValueError):
            return None

    shown = "0.53*bbox" if claim_area == "bbox" else claim_area
    if claim_area == UNKNOWN or key(report_area) is None:
        return _part("OKS area", report_area if key(report_area) is not None else f"unknown ({report_area!r})",
                     shown)
    r, c = key(report_area), key(claim_area)
    same = r == c if isinstance(r, str) or isinstance(c, str) else math.isclose(r, c, rel_tol=1e-12)
    return Part("OKS area", _fmt(report_area), _fmt(shown), "same" if same else "differs")


def _report_sigmas(name: Any, report: Mapping[str, Any]) -> tuple[float, ...] | None:
    """The sigmas of the report's OKS: those of its layout (the report's ``skeleton``), or those declared to
    score (``--sigmas`` of its reproducer, which verify re-runs); None when the report does not hold them."""
    values = None
    if name == "declared":
        argv = _mapping(report.get("reproducer")).get("argv")
        if isinstance(argv, list) and "--sigmas" in argv[:-1]:
            values = str(argv[argv.index("--sigmas") + 1]).split(",")
    else:
        sk = _mapping(report.get("skeleton"))
        if sk.get("name") == name:
            values = sk.get("sigmas")
    try:
        return tuple(float(v) for v in values) if isinstance(values, list) and values else None
    except (TypeError, ValueError):
        return None


def _sigmas_part(report_sigmas: Any, claim_sigmas: Any, report: Mapping[str, Any]) -> Part:
    """The OKS sigmas, compared by value: a built-in layout's name stands for its published sigmas."""
    from rfbench.metrics.skeletons import BUILTIN

    def shown(values):
        return ", ".join(f"{v:g}" for v in values[:4]) + (f", ... ({len(values)} values)" if len(values) > 4 else "")

    mine = _report_sigmas(report_sigmas, report)
    report_text = (f"{report_sigmas} ({shown(mine)})" if mine else f"{report_sigmas} (values not in the report)")
    if claim_sigmas == UNKNOWN:
        return Part("OKS sigmas", report_text, "unknown", "unknown")
    theirs = BUILTIN[claim_sigmas].sigmas if isinstance(claim_sigmas, str) else tuple(claim_sigmas)
    claim_text = claim_sigmas if isinstance(claim_sigmas, str) else shown(theirs)
    if mine is None:
        return Part("OKS sigmas", report_text, claim_text, "unknown")
    same = len(mine) == len(theirs) and all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(mine, theirs))
    return Part("OKS sigmas", report_text, claim_text, "same" if same else "differs")


def _report_leakage(report: Mapping[str, Any]) -> Any:
    """The report's leakage status: its protocol's, unless its split audit failed or it was scored although its
    sides share files or content (``--allow-shared-files``): then it is leakage-prone whatever the protocol."""
    split = _mapping(report.get("split"))
    if not split:
        return "unknown (no split given)"
    audit = _mapping(split.get("audit"))
    shared = _mapping(report.get("shared_files"))
    if audit.get("passed") is False or shared.get("count"):
        return "leakage-prone (its split audit failed or its sides share data)"
    return "leakage-prone" if split.get("leakage_prone") is True else \
        "not leakage-prone" if split.get("leakage_prone") is False else split.get("leakage_prone")


def _report_protocol(split: Mapping[str, Any]) -> Any:
    """The report's protocol, with the key leave-one-domain-out held out (``leave-one-domain-out --domain room``):
    over ``repetition`` it is another protocol than over a domain."""
    if not split:
        return "none (no split given)"
    protocol = split.get("protocol")
    domain = _mapping(split.get("params")).get("domain")
    if protocol == "leave-one-domain-out" and domain is not None:
        return f"{protocol} --domain {domain}"
    return protocol


def _same_protocol(report_text: Any, claim_text: Any) -> bool:
    """The claim's protocol is the report's: the same text, or ``leave-one-domain-out`` with no key beside a
    report holding out one of the keys a cross-domain claim is about (subject, room, location, orientation)."""
    from rfbench.protocols.split import CROSS_DOMAIN_KEYS

    if report_text == claim_text:
        return True
    return claim_text == "leave-one-domain-out" and report_text in {
        f"leave-one-domain-out --domain {k}" for k in CROSS_DOMAIN_KEYS}


def _data_parts(report: Mapping[str, Any], claim: Claim) -> list[Part]:
    split = _mapping(report.get("split"))
    protocol = _report_protocol(split)
    leak = _report_leakage(report)
    parts = [
        _dataset_part(report, claim),
        _part("protocol", protocol, claim.protocol, _same_protocol),
        _part("setting", _report_setting(report), claim.setting),
        *([_gestures_part(report, claim)] if claim.task == "gesture" else []),
        _part("leakage status", leak, "leakage-prone" if claim.leakage_prone is True else "not leakage-prone"
              if claim.leakage_prone is False else UNKNOWN),
        Part("selection", "not recorded (rfbench scores the predictions it is given)",
             claim.selection, "not recorded"),
    ]
    return parts


def _closest(report: Mapping[str, Any], claim: Claim, cs) -> tuple[Mapping[str, Any] | None, list[Part]]:
    candidates = [r for r in report.get("results", []) if r.get("metric") == claim.metric]
    if not candidates:
        have = ", ".join(dict.fromkeys(str(r.get("metric")) for r in report.get("results", []))) or "none"
        return None, [Part("metric", f"no {claim.metric} (the report has: {have})", claim.metric, "differs")]
    scored = []
    for r in candidates:
        parts = [Part("metric", claim.metric, claim.metric, "same")] + _spec_parts(r, claim, cs, report)
        scored.append((sum(p.status == "differs" for p in parts), sum(p.status == "unknown" for p in parts), parts, r))
    scored.sort(key=lambda t: (t[0], t[1]))
    return scored[0][3], scored[0][2]


# -- reading the report's inputs -------------------------------------------------------------------------


def _input_files(report: Mapping[str, Any], report_path: str | os.PathLike, roles: Sequence[str],
                 root: str | os.PathLike | None = None) -> dict[str, tuple[Path, bytes]]:
    """The real path and bytes of each input with one of ``roles``, checked under verify's rules (verify's own
    :func:`~rfbench.report.verify.resolve_input` and regular-file reader): the recorded path is relative to the
    report's folder and must resolve under ``root`` (default: that folder), be a regular file of the recorded
    size and have the recorded sha256. Raises ``_Unavailable`` with the reason."""
    from rfbench.report.verify import resolve_input

    folder = Path(os.path.realpath(Path(report_path).parent))
    base = Path(os.path.realpath(root)) if root is not None else folder
    outside = (f"the root {root}; it is not read" if root is not None else
               "the report's folder; it is not read (give a root that holds it: --root)")
    out = {}
    for item in report.get("inputs", []):
        item = _mapping(item)
        role = item.get("role")
        if role not in roles:
            continue
        rel = item.get("path")
        if not isinstance(rel, str) or not rel or os.path.isabs(rel):
            raise _Unavailable(f"input {role} is recorded as {rel!r}, not a path inside the report's folder")
        try:
            real = resolve_input(rel, folder, base, f"input {role}", outside=outside)
            data = read_regular(real, MAX_INPUT_BYTES, f"input {role}")
        except FormatError as exc:
            raise _Unavailable(str(exc)) from None
        except NotRegularFile:
            raise _Unavailable(f"input {role} ({rel}) is not a regular file") from None
        except OSError as exc:
            raise _Unavailable(f"input {role} ({rel}) cannot be read ({exc.strerror or exc})") from None
        if isinstance(item.get("bytes"), bool) or len(data) != item.get("bytes"):
            raise _Unavailable(f"input {role} ({rel}) has {len(data)} bytes, the report recorded {item.get('bytes')}: "
                               f"it changed since the report was made")
        if hashlib.sha256(data).hexdigest() != item.get("sha256"):
            raise _Unavailable(f"input {role} ({rel}) no longer has the sha256 the report recorded")
        out[role] = (real, data)
    return out


def read_report_inputs(report: Mapping[str, Any], report_path: str | os.PathLike,
                       roles: Sequence[str] = _ROLES, root: str | os.PathLike | None = None) -> dict[str, bytes]:
    """The bytes of the report's inputs with the given roles, read under verify's rules (see the module
    docstring). Raises an internal ``_Unavailable`` with the reason when one cannot be read."""
    return {role: data for role, (_, data) in _input_files(report, report_path, roles, root).items()}


def _truth_from_dataset(report: Mapping[str, Any], report_path: Path, root) -> Any:
    """The ground truth of a report scored with ``--rows``: read from the dataset again, as ``score`` read it,
    and accepted only when its files are the ones the report's provenance recorded."""
    files = _input_files(report, report_path, ("rows", "split", "manifest"), root)
    if "rows" not in files or "split" not in files:
        raise _Unavailable("the report records its windows index but not its split")
    from rfbench.datasets.windows import test_truth
    from rfbench.io.world import confined
    from rfbench.report.closed_world import Budget, close_world

    # the chain's files resolved and checked under the root as verify would, then read in a closed world: the
    # manifest a split names and the dataset files a manifest lists are read only when they lie under the root
    real = Path(os.path.realpath(Path(report_path).parent))
    try:
        world = close_world(report, Path(os.path.realpath(report_path)), Path(os.path.realpath(root)) if root
                            is not None else real, Budget(3600.0, 1 << 40))
    except RfbenchError as exc:
        raise _Unavailable(str(exc)) from None
    if world.changed:
        raise _Unavailable(f"the ground truth cannot be read from the dataset again: {len(world.changed)} input(s) "
                           f"or dataset file(s) changed since the report was made ("
                           + ", ".join(str(c.get("file")) for c in world.changed[:3]) + ")")
    try:
        with confined(world.files):
            truth = test_truth(files["split"][0], files["rows"][0])
    except RfbenchError as exc:
        raise _Unavailable(f"the ground truth cannot be read from the dataset again ({exc})") from None
    recorded = _mapping(report.get("provenance")).get("ground_truth_files")
    if recorded != truth.files:
        raise _Unavailable("the dataset files the ground truth is read from are not the ones the report recorded")
    return truth.y


def _array(data: bytes, role: str):
    import numpy as np

    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise _Unavailable(f"input {role} is not a plain .npy array ({exc})") from None
    if not isinstance(arr, np.ndarray):
        raise _Unavailable(f"input {role} is not a .npy array")
    return arr


def _skeleton(report: Mapping[str, Any], data: Mapping[str, bytes]):
    from rfbench.metrics.skeletons import BUILTIN, skeleton_from_dict

    sk = _mapping(report.get("skeleton"))
    name = sk.get("name")
    if sk.get("source") == "builtin" and name in BUILTIN:
        return BUILTIN[name]
    if "skeleton" not in data:
        raise _Unavailable(f"the report's skeleton {name!r} is a layout file that is not among its inputs")
    import hashlib

    from rfbench.io.documents import parse_json_text, parse_toml_text

    text = data["skeleton"].decode("utf-8", errors="replace")
    source = str(sk.get("source") or "skeleton")
    try:
        obj = parse_json_text(text, "layout file") if "JSON" in source else parse_toml_text(text, "layout file")
        if not isinstance(obj, dict):
            raise _Unavailable("the report's layout file holds no layout")
        return skeleton_from_dict(obj, source=source, digest=hashlib.sha256(data["skeleton"]).hexdigest())
    except (ValueError, RfbenchError) as exc:
        raise _Unavailable(f"the report's layout file cannot be read ({exc})") from None


# -- re-scoring ------------------------------------------------------------------------------------------


def _rescore(report: Mapping[str, Any], report_path: Path, claim: Claim, cs: Mapping[str, Any],
             batch_size: int | None, loaded: dict, root=None) -> dict[str, Any]:
    from rfbench.metrics.pose import evaluate_pose

    if claim.task != "pose" or report.get("task") != "pose":
        raise _Unavailable("only pose reports are re-scored")
    if claim.metric == UNKNOWN:
        raise _Unavailable("the claim does not say which metric")
    if cs.get("_missing"):
        raise _Unavailable(cs["_missing"])
    if claim.metric == "oks":
        raise _Unavailable("OKS claims are not re-scored (their sigmas and areas are not part of a claim)")
    assumed = []
    kw: dict[str, Any] = {"metrics": [claim.metric]}
    if claim.metric == "pck":
        if cs["k"] == UNKNOWN:
            raise _Unavailable("the claim does not say its threshold k")
        kw["ks"] = [float(cs["k"])]
    if claim.metric == "pck-auc":  # its thresholds: the claim's, or score's defaults said to be assumed
        absolute = isinstance(cs["normalization"], str) and cs["normalization"].startswith("abs:")
        for key in ("auc_n",) + (() if absolute or claim.has_convention else ("auc_max",)):
            if cs[key] == UNKNOWN:
                default = _SCORE_SETTINGS[key][0].default
                assumed.append(f"{key} {_fmt(default)} (rfbench's default; the claim does not say)")
                kw[key] = default
            else:
                kw[key] = cs[key]
    if claim.has_convention:
        kw["convention"] = claim.convention
    else:
        if claim.metric in ("pck", "pck-auc"):
            if cs["normalization"] == UNKNOWN:
                raise _Unavailable("the claim does not say its normalization")
            kw["normalizations"] = [cs["normalization"]]
        for key, option in (("comparison", "comparison"), ("floor", "normalizer_floor"),
                            ("visibility", "visibility"), ("per_axis", "per_axis"), ("precision", "precision"),
                            ("result_precision", "result_precision"), ("pa_fit", "pa_fit")):
            value = cs[key]
            if value == UNKNOWN:
                value = _DEFAULTS[key]
                if _relevant(key, claim.metric):
                    assumed.append(f"{key} {_fmt(value)} (rfbench's default; the claim does not say)")
            kw[option] = value
        avg = cs["averaging"]
        if avg == UNKNOWN:
            avg = "micro"
            assumed.append("averaging micro (rfbench's default; the claim does not say)")
        kw["averaging"] = [avg]
    if cs["averaging"] == "batch-mean":
        if isinstance(cs["batch_size"], int):
            kw["batch_size"] = cs["batch_size"]
        elif batch_size is not None:
            kw["batch_size"] = batch_size
            assumed.append(f"batch size {batch_size} (given to compare; the claim does not say)")
        else:
            from rfbench.metrics.conventions import get_convention

            hint = get_convention(claim.convention).batch_hint if claim.has_convention else None
            raise _Unavailable("the claim does not say its batch size; give one to compare (--batch-size)"
                               + (f" — {hint}" if hint else ""))
    if "arrays" not in loaded:
        try:
            data = read_report_inputs(report, report_path, root=root)
            arrays = {role: _array(data[role], role) for role in ("pred", "gt", "vis") if role in data}
            if "gt" not in arrays and any(_mapping(i).get("role") == "rows" for i in report.get("inputs", [])):
                arrays["gt"] = _truth_from_dataset(report, report_path, root)
            if "pred" not in arrays or "gt" not in arrays:
                raise _Unavailable("the report records no pred and gt inputs")
            loaded["arrays"] = (arrays, _skeleton(report, data))
        except _Unavailable as exc:
            loaded["arrays"] = exc
    if isinstance(loaded["arrays"], _Unavailable):
        raise loaded["arrays"]
    arrays, skeleton = loaded["arrays"]
    units = str(_mapping(report.get("data")).get("units") or "unspecified")
    trust = _mapping(report.get("layout_check")).get("overridden") is True
    try:
        ev = evaluate_pose(arrays["pred"], arrays["gt"], arrays.get("vis"), skeleton=skeleton, units=units,
                           trust_layout=trust, **kw)
    except RfbenchError as exc:
        raise _Unavailable(f"cannot score the report's predictions under the claim's spec: {exc}") from None
    score = ev.scores[0]
    scale = 100.0 if claim.value_scale == "percent" else 1.0
    shown = None if score.value is None else score.value * scale
    out = {"status": "done", "value": score.value, "value_in_claim_scale": shown, "claim_scale": claim.value_scale,
           "label": score.label, "spec": score.spec.to_dict(), "evidence": report.get("evidence"),
           "assumed": assumed, "scoreable": score.scoreable, "unscoreable_samples": score.unscoreable_samples}
    warning = _rescore_layout(ev, skeleton)
    if warning:
        out["layout_warning"] = warning
    return out


def _rescore_layout(ev, skeleton) -> str | None:
    """``LAYOUT NOT VERIFIED: ...`` when the re-score's number depends on the joint order of a layout its check
    did not verify (failed and overridden, not evaluable, or a custom layout's own checks); else None."""
    dependent = ev.plan.layout_dependent
    if not dependent:
        return None
    if ev.layout_overridden:
        why = f"did not pass its plausibility check ({ev.layout.get('reason')}); re-scored anyway, as the report was"
    elif ev.layout.get("passed") is not True:
        why = f"its plausibility check could not be evaluated ({ev.layout.get('reason')})"
    elif skeleton.source != "builtin":
        why = "is a custom layout whose plausibility checks are declared by its own file"
    else:
        return None
    return (f"{_NOT_VERIFIED}: skeleton {skeleton.name} {why}; {', '.join(dependent)} "
            f"{'depends' if len(dependent) == 1 else 'depend'} on its joint order")


def _relevant(key: str, metric: str) -> bool:
    if metric in ("mpjpe", "pa-mpjpe"):
        return key == "visibility" or (key == "pa_fit" and metric == "pa-mpjpe")
    return key not in ("pa_fit",) and not (key == "result_precision" and metric != "pck")


# -- the entry point -------------------------------------------------------------------------------------


def compare_report(report_path: str | os.PathLike, claims: Sequence[ClaimsFile], *,
                   batch_size: int | None = None, root: str | os.PathLike | None = None,
                   on_claim=None, verify: bool = False, limits=None, datasets: Sequence[str | os.PathLike] = (),
                   convention=None) -> Comparison:
    """Compare a report with claims: per claim the closest result, the parts, the verdict and the re-score.

    Parameters
    ----------
    report_path : path-like
        A ``report.json`` written by ``rfbench score`` (its inputs are looked up beside it).
    claims : sequence of ClaimsFile
        From :func:`rfbench.report.claims.load_claims`.
    batch_size : int, optional
        Batch size for re-scoring batch-mean claims that do not give one (recorded as an assumption).
    root : path-like, optional
        The folder the report's inputs must lie under (default: the report's folder), like
        ``rfbench verify --root``. A report scored with ``--rows`` has its ground truth read from the dataset
        again (the files its provenance records), so the dataset must lie under it too.
    on_claim : callable, optional
        Called once after each claim (a progress hook: the command's progress bar).
    verify : bool
        Verify the report first (:func:`rfbench.report.verify.verify_report`, under ``root`` and ``limits``):
        its evidence tag and the fields the comparison reads are then re-made from its chain, not taken on its
        word (``Comparison.verified``; verify's result, with the dataset trees the chain was ingested again
        from, in ``Comparison.verification``). The report is read once: verify re-runs those very bytes (their
        sha256), and they are what is lined up with the claims. Without it, they are the report's own word,
        and say so.
    limits : rfbench.report.verify.Limits, optional
        Verify's limits (default: its defaults).
    datasets, convention : optional
        Verify's ``datasets`` (your own copies of the dataset trees) and ``convention`` (the file-name
        convention you hold a template corpus to); only with ``verify``.

    Raises
    ------
    FormatError
        The report is unreadable or malformed (exit 2). Nothing comparable is not an error.
    ValidationError
        ``batch_size`` is not an integer in [1, :data:`MAX_BATCH_SIZE`], or ``datasets`` or ``convention``
        without ``verify`` (exit 2).
    VerificationError
        With ``verify``: a MISMATCH, or the report changed after it was read (exit 1); nothing is compared.
    """
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                   or not 1 <= batch_size <= MAX_BATCH_SIZE):
        raise ValidationError(f"`batch_size` for re-scoring must be a positive integer at most {MAX_BATCH_SIZE} (as "
                              f"rfbench score's), got {batch_size!r}")
    if (datasets or convention is not None) and not verify:
        raise ValidationError("`datasets` and `convention` (--dataset, --template) hold verify's re-run to your "
                              "copy of the data: give them with verify (--verify)")
    path = Path(report_path)
    data, report = _read_report(path)
    verification = None
    if verify:  # a MISMATCH raises VerificationError (exit 1): nothing is lined up with a claim
        verification = _verified(path, hashlib.sha256(data).hexdigest(), root, limits, datasets, convention)
    layout = _layout_unverified(report)
    out = Comparison(str(path), str(report.get("evidence")), str(report.get("task")),
                     claims_files=[cf.where for cf in claims], verified=verify,
                     layout_warning=layout[1] if layout else None,
                     verification=None if verification is None else verification.to_dict())
    loaded: dict = {}
    for cf in claims:
        for claim in cf.claims:
            # a field of a hand-edited report of another type than rfbench writes (a k of "0.2x"): one line
            with malformed_as_format_error(f"{path}: a result's fields are not what rfbench score writes", 120):
                item = _compare_one(report, path, claim, batch_size, loaded, root)
                _check_value(item.result)
                out.items.append(item)
            if on_claim is not None:
                on_claim()
    return out


def _read_report(path: Path) -> tuple[bytes, dict]:
    """The report's bytes, read once, and the report parsed from them (as :func:`~rfbench.io.files.read_json`
    reads a report): what verify re-runs (by their sha256) is what is lined up with the claims, never a second
    read of a file that may have been replaced in between."""
    from rfbench.io.documents import MAX_JSON_BYTES, parse_json_bytes
    from rfbench.io.files import check_schema, read_input_bytes

    data = read_input_bytes(path, cap=MAX_JSON_BYTES, expected="a JSON file")
    doc = parse_json_bytes(data, str(path))
    if not isinstance(doc, dict):
        raise FormatError(f"{path}: expected a JSON object, found {type(doc).__name__}")
    check_schema(doc, "report", str(path))
    return data, validate_report(doc, str(path))


def _verified(path: Path, sha256: str, root, limits, datasets, convention):
    """Verify's result for the report whose bytes hash to ``sha256`` (the ones compare read): a MISMATCH, or
    a file that is no longer those bytes, is a :class:`VerificationError` naming the trees verify had named."""
    from rfbench.report.verify import verify_report

    try:
        result = verify_report(path, root=root, limits=limits, datasets=tuple(datasets), convention=convention,
                               sha256=sha256)
        if not result.argv:  # every report's verify re-runs its reproducer; a robustness summary put in the
            # report's place before verify read it is checked as a summary (none of those bytes re-run)
            raise VerificationError(f"{path}: verify checked a robustness summary there, not the report compare read "
                                    "(it changed while verify ran); not compared",
                                    differences=[{"path": "sha256", "report": sha256, "rerun": "a summary"}])
    except VerificationError as exc:
        err = VerificationError(f"verify: MISMATCH, nothing compared: {exc}", exc.differences)
        err.datasets = exc.datasets
        raise err from None
    return result


def _check_value(result: Mapping[str, Any] | None) -> None:
    """The value a comparison shows beside a claim is a number or null, as rfbench score writes it (a list there
    was a traceback when rendered)."""
    if result is None:
        return
    value = (_mapping(result.get("model"))).get("value")
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise TypeError(f"the model's value {str(value)[:40]!r} is not a number")


def _compare_one(report, path, claim: Claim, batch_size, loaded, root=None) -> ClaimComparison:
    if claim.task != report.get("task"):
        parts = [Part("task", str(report.get("task")), claim.task, "differs")]
        return ClaimComparison(claim, None, parts + _data_parts(report, claim),
                               {"status": "unavailable", "reason": f"a {claim.task} claim beside a "
                                                                   f"{report.get('task')} report"})
    if claim.task == "gesture":
        candidates = [r for r in report.get("results", []) if r.get("metric") == claim.metric]
        k_parts = []
        if claim.metric == "top-k":  # which k is the whole metric: top-1 is accuracy, top-5 is not top-3
            k = dict(claim.spec).get("k", UNKNOWN)
            same_k = [r for r in candidates if k != UNKNOWN and _mapping(r.get("spec")).get("k") == k]
            shown = ", ".join(str(_mapping(r.get("spec")).get("k")) for r in candidates) or "none"
            k_parts = [Part("k", shown if not same_k else str(k), "unknown" if k == UNKNOWN else str(k),
                            "unknown" if k == UNKNOWN else "same" if same_k else "differs")]
            candidates = same_k or candidates
        stated = {key: value for key, value in dict(claim.spec).items() if key != "k"}
        agreeing = [r for r in candidates if all(_mapping(r.get("spec")).get(key) == value
                                                 for key, value in stated.items())]
        result = (agreeing or candidates or [None])[0]
        metric_part = Part("metric", claim.metric if result else f"no {claim.metric}", claim.metric,
                           "same" if result else "differs")
        # the rest of the claim's spec (averaging: a macro-averaged accuracy is another number than a micro one)
        spec_parts = [Part(key, str(_mapping(result.get("spec")).get(key, "—")) if result else "—", str(value),
                           "unknown" if value == UNKNOWN else "same"
                           if result and _mapping(result.get("spec")).get(key) == value else "differs")
                      for key, value in sorted(stated.items())]
        if claim.units != UNKNOWN:  # a class metric is a fraction: a claim in units is of something else
            spec_parts.append(Part("units", "none (a fraction)", claim.units, "differs"))
        return ClaimComparison(claim, result, [metric_part, *k_parts, *spec_parts] + _data_parts(report, claim),
                               {"status": "unavailable", "reason": "gesture claims are compared, not re-scored"})
    cs = _claim_spec(claim)
    if claim.metric == UNKNOWN:
        result, parts = None, [Part("metric", "—", "unknown", "unknown")]
    else:
        result, parts = _closest(report, claim, cs)
    parts = parts + _data_parts(report, claim)
    try:
        rescore = _rescore(report, path, claim, cs, batch_size, loaded, root)
        spec_names = {"metric", "normalization", "k", "comparison", "averaging", "normalizer floor",
                      "per-axis normalisation", "precision", "result precision", "Procrustes fit", "visibility",
                      "AUC k_max", "AUC thresholds"}
        if rescore.get("layout_warning"):  # its normalization's joints are the unverified layout's
            spec_names.discard("normalization")
        rescore["still_differs"] = [p.name for p in parts if p.status in ("differs", "unknown")
                                    and p.name not in spec_names]
    except _Unavailable as exc:
        rescore = {"status": "unavailable", "reason": str(exc)}
    return ClaimComparison(claim, result, parts, rescore)
