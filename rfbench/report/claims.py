"""Claims files: published numbers with the spec they were computed under, as far as it is known.

A claims file (TOML, DESIGN.md §11) holds one ``[[claim]]`` table per published number. Every field but
``value`` and ``source`` may be left out or written ``"unknown"``: a field not given is *unknown*, never
guessed, and :mod:`rfbench.report.compare` says so. Their evidence is CLAIMED. ::

    schema = "rfbench.claims/1"          # optional
    title = "WiFlow's README"            # optional

    [[claim]]
    id = "wiflow-s1-pck20"               # default: <file stem>-<n>
    model = "WiFlow"
    task = "pose"                        # pose (default) or gesture
    metric = "pck"                       # pck, pck-auc, oks, mpjpe, pa-mpjpe; gesture: accuracy, ...
    value = 97.25                        # a number, or [low, high] for a stated range
    value_scale = "percent"              # fraction or percent
    convention = "wiflow"                # a named convention (rfbench.metrics.conventions), or a [claim.spec]
    units = "unknown"
    dataset = "WiFlow (Kaggle release, 5 subjects)"
    protocol = "random"
    setting = "Setting 1 (random split)"
    gestures = "unknown"                 # gesture claims: the classes scored ("Push&Pull, Sweep, ...")
    leakage_prone = "unknown"            # true, false or "unknown"
    selection = "unknown"                # how the reported checkpoint was chosen
    notes = "..."
    [claim.spec]                         # MetricSpec fields (k, skeleton, normalization, comparison, ...)
    k = 0.2
    skeleton = "wiflow15"
    [claim.source]                       # where the number was read
    citation = "DY2434/WiFlow-... README.md @ 2c155eb9"
    table = "Performance Comparison under Setting 1 (Random Split)"
    url = "https://github.com/..."

With a ``convention`` the spec may add only what combines with it (``k``, ``batch_size``, ``auc_n``,
``skeleton``, ``dims``); the convention sets the rest. ``dims`` (2 or 3) says whether the poses were 2D or 3D;
``sigmas`` is a built-in layout's name (its published sigmas) or one number per joint; ``oks_area`` is ``bbox``
or a constant. A bad file is a :class:`~rfbench.errors.FormatError` naming the
file, the claim and the field (exit 2 on the command line).

The curated set shipped with rfbench lives in the package's ``claims/`` folder: ``claims:NAME`` names one
file of it, :func:`builtin_claims` reads them all.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from rfbench.errors import FormatError
from rfbench.report.settings import PoseSettings
from rfbench.settings import options_of

__all__ = ["Claim", "ClaimsFile", "UNKNOWN", "read_claims", "parse_claims", "load_claims", "builtin_claims",
           "builtin_names", "MAX_CLAIMS_BYTES", "MAX_BATCH_SIZE", "CLAIM_FIELDS", "SPEC_FIELDS", "POSE_METRICS",
           "GESTURE_METRICS"]

UNKNOWN = "unknown"
SCHEMA = "rfbench.claims/1"
#: A claims file is typed by people: anything larger is refused before it is read.
MAX_CLAIMS_BYTES = 1 << 20
MAX_CLAIMS = 1000
#: The largest ``spec.batch_size`` a claim may give: ``rfbench score --batch-size``'s bound, declared once there
#: (:class:`rfbench.report.settings.PoseSettings`), so a claim re-scores only what score itself would.
MAX_BATCH_SIZE = int(dict((f.name, o) for f, o in options_of(PoseSettings))["batch_size"].max)
POSE_METRICS = ("pck", "pck-auc", "oks", "mpjpe", "pa-mpjpe")
GESTURE_METRICS = ("accuracy", "balanced-accuracy", "macro-f1", "weighted-f1", "top-k")
CLAIM_FIELDS = ("id", "model", "task", "metric", "value", "value_scale", "convention", "spec", "units", "dataset",
                "protocol", "setting", "gestures", "leakage_prone", "selection", "source", "notes")
SPEC_FIELDS = ("skeleton", "dims", "averaging", "normalization", "normalizer_joints", "k", "comparison", "auc_n",
               "auc_max", "oks_area", "sigmas", "floor", "visibility", "per_axis", "precision", "result_precision",
               "batch_size", "pa_fit")
#: The spec fields a convention leaves to the claim.
CONVENTION_SPEC_FIELDS = ("k", "batch_size", "auc_n", "skeleton", "dims")
#: How an OKS claim says its area is the box's (``rfbench score`` writes ``0.53*bbox``).
OKS_BOX_AREAS = ("bbox", "0.53*bbox")
SOURCE_FIELDS = ("citation", "table", "url", "commit", "read_at", "page", "notes")
_TEXT_FIELDS = ("id", "model", "units", "dataset", "protocol", "setting", "gestures", "selection", "notes")
_SCALES = ("fraction", "percent")


@dataclass(frozen=True)
class Claim:
    """One published number. Text fields hold ``"unknown"`` when the file does not give them.

    ``value`` is a float, or a ``(low, high)`` pair for a stated range; ``spec`` maps MetricSpec field names to
    values (``"unknown"`` allowed); ``source`` maps ``citation``, ``table``, ``url``... to text.
    """

    id: str
    value: float | tuple[float, float]
    source: Mapping[str, str]
    where: str
    model: str = UNKNOWN
    task: str = "pose"
    metric: str = UNKNOWN
    value_scale: str = UNKNOWN
    convention: str = UNKNOWN
    spec: Mapping[str, Any] = field(default_factory=dict)
    units: str = UNKNOWN
    dataset: str = UNKNOWN
    protocol: str = UNKNOWN
    setting: str = UNKNOWN
    gestures: str = UNKNOWN
    leakage_prone: bool | str = UNKNOWN
    selection: str = UNKNOWN
    notes: str = ""

    @property
    def has_convention(self) -> bool:
        return self.convention != UNKNOWN

    def value_text(self) -> str:
        """The value as the source states it: ``97.25%``, ``0.007`` or ``82.6–92.4%``."""
        suffix = "%" if self.value_scale == "percent" else ""
        if isinstance(self.value, tuple):
            return f"{self.value[0]:g}–{self.value[1]:g}{suffix}"
        return f"{self.value:g}{suffix}"

    @property
    def title(self) -> str:
        names = {"pck": "PCK", "pck-auc": "PCK-AUC", "oks": "OKS", "mpjpe": "MPJPE", "pa-mpjpe": "PA-MPJPE"}
        what = names.get(self.metric, self.metric) if self.metric != UNKNOWN else "a metric"
        k = self.spec.get("k")
        if self.metric == "pck" and isinstance(k, (int, float)):
            what = f"PCK@{round(100 * k):d}" if abs(100 * k - round(100 * k)) < 1e-9 else f"PCK@{k:g}"
        return f"{self.model if self.model != UNKNOWN else 'unknown model'} {what} = {self.value_text()}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "model": self.model, "task": self.task, "metric": self.metric,
                "value": list(self.value) if isinstance(self.value, tuple) else self.value,
                "value_scale": self.value_scale, "convention": self.convention, "spec": dict(self.spec),
                "units": self.units, "dataset": self.dataset, "protocol": self.protocol, "setting": self.setting,
                "gestures": self.gestures, "leakage_prone": self.leakage_prone, "selection": self.selection,
                "source": dict(self.source),
                "notes": self.notes, "evidence": "CLAIMED", "file": self.where}


@dataclass(frozen=True)
class ClaimsFile:
    """A parsed claims file: its title and claims."""

    where: str
    title: str
    claims: tuple[Claim, ...]


def _toml():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    return tomllib


def _fail(where: str, what: str) -> FormatError:
    return FormatError(f"{where}: {what}")


def _text(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, f"'{name}' must be a non-empty string (or \"unknown\")")
    if len(value) > 2000:
        raise _fail(where, f"'{name}' is longer than 2000 characters")
    return value.strip()


def _number(value: Any, where: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _fail(where, f"'{name}' must be a finite number")
    return float(value)


def _spec(raw: Any, where: str, convention: str, metric: str = UNKNOWN) -> dict[str, Any]:
    from rfbench.metrics.limits import ALL_AVERAGINGS, COMPARISONS, MAX_K, MAX_TOP_K, PA_FITS, PRECISIONS, VISIBILITIES

    if not isinstance(raw, dict):
        raise _fail(where, "'spec' must be a table of MetricSpec fields")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in SPEC_FIELDS:
            raise _fail(where, f"unknown spec field {key!r}; spec fields are {', '.join(SPEC_FIELDS)}")
        if convention != UNKNOWN and key not in CONVENTION_SPEC_FIELDS:
            raise _fail(where, f"convention {convention} sets the spec's {key} itself; give only "
                               f"{', '.join(CONVENTION_SPEC_FIELDS)} with a convention")
        if value == UNKNOWN:
            out[key] = UNKNOWN
            continue
        # an OKS is a mean over samples (what rfbench score writes as its averaging), and nothing else is
        averagings = ("sample",) if metric == "oks" else ALL_AVERAGINGS
        choices = {"averaging": averagings, "comparison": COMPARISONS, "visibility": VISIBILITIES,
                   "precision": PRECISIONS, "result_precision": PRECISIONS, "pa_fit": PA_FITS}
        if key in choices:
            if value not in choices[key]:
                raise _fail(where, f"spec {key} must be one of {', '.join(choices[key])} or \"unknown\", got {value!r}")
            out[key] = value
        elif key == "k" and metric == "top-k":  # a count of classes, as score's --top-k takes it
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOP_K:
                raise _fail(where, f"spec.k of a top-k claim must be an integer in [1, {MAX_TOP_K}] (the number "
                                   "of best-scored classes) or \"unknown\"")
            out[key] = value
        elif key == "k":  # score's own bound (a threshold past it is refused there: no report has one)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_K:
                raise _fail(where, f"spec.k must be a number in [0, {MAX_K:g}] (a fraction of the normaliser) or "
                                   "\"unknown\"")
            out[key] = float(value)
        elif key == "auc_max":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_K:
                raise _fail(where, f"spec.auc_max must be a number in (0, {MAX_K:g}] (PCK-AUC's k_max) or "
                                   f"\"unknown\"")
            out[key] = float(value)
        elif key == "dims":
            if isinstance(value, bool) or value not in (2, 3) or not isinstance(value, int):
                raise _fail(where, "spec.dims must be 2 or 3 (the coordinates per joint) or \"unknown\"")
            out[key] = value
        elif key == "oks_area":
            out[key] = _oks_area(value, where)
        elif key == "sigmas":
            out[key] = _sigmas(value, where)
        elif key in ("auc_n", "batch_size"):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise _fail(where, f"spec.{key} must be a positive integer or \"unknown\"")
            if key == "batch_size" and value > MAX_BATCH_SIZE:  # as score's --batch-size: re-scored with it
                raise _fail(where, f"spec.batch_size {str(value)[:30]} is past rfbench score's bound: a batch size is "
                                   f"at most {MAX_BATCH_SIZE} rows (or \"unknown\")")
            out[key] = value
        elif key == "per_axis":
            if not isinstance(value, bool):
                raise _fail(where, "spec.per_axis must be true, false or \"unknown\"")
            out[key] = value
        elif key == "normalizer_joints":
            if not (isinstance(value, list) and len(value) == 2 and all(isinstance(j, str) and j for j in value)):
                raise _fail(where, "spec.normalizer_joints must be a list of two joint names")
            out[key] = tuple(value)
        else:
            out[key] = _text(value, where, f"spec.{key}")
    return out


def _oks_area(value: Any, where: str) -> str | float:
    """An OKS area as rfbench score takes it: the box's (``bbox``, or ``0.53*bbox`` as reports write it) or a
    positive constant in units²."""
    if isinstance(value, str) and value.strip() in OKS_BOX_AREAS:
        return "bbox"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise _fail(where, f"spec.oks_area must be \"bbox\" (0.53 x the box's w x h), a positive number (units²) or "
                           f"\"unknown\", got {value!r}")
    return float(value)


def _sigmas(value: Any, where: str) -> str | tuple[float, ...]:
    """OKS sigmas: the name of a built-in layout with published sigmas, or one positive number per joint."""
    from rfbench.metrics.skeletons import BUILTIN

    named = sorted(name for name, skel in BUILTIN.items() if skel.sigmas is not None)
    if isinstance(value, str) and value.strip() in named:
        return value.strip()
    if (isinstance(value, list) and value and all(not isinstance(v, bool) and isinstance(v, (int, float))
                                                  and math.isfinite(v) and v > 0 for v in value)):
        return tuple(float(v) for v in value)
    raise _fail(where, f"spec.sigmas must be {' or '.join(named)} (its published sigmas), a list of positive numbers "
                       f"(one per joint) or \"unknown\", got {str(value)[:60]!r}")


def _claim(raw: Any, where: str, default_id: str) -> Claim:
    from rfbench.metrics.conventions import NAMES

    if not isinstance(raw, dict):
        raise _fail(where, "each [[claim]] must be a table")
    unknown = [k for k in raw if k not in CLAIM_FIELDS]
    if unknown:
        raise _fail(where, f"unknown field {unknown[0]!r}; claim fields are {', '.join(CLAIM_FIELDS)}")
    if "value" not in raw:
        raise _fail(where, "'value' is required: the number as published")
    value = raw["value"]
    if isinstance(value, list):
        if len(value) != 2:
            raise _fail(where, "a value range is [low, high]")
        lo, hi = (_number(v, where, "value") for v in value)
        if lo > hi:
            raise _fail(where, "a value range is [low, high] with low <= high")
        value = (lo, hi)
    else:
        value = _number(value, where, "value")
    source = raw.get("source")
    if not isinstance(source, dict) or not source.get("citation"):
        raise _fail(where, "'source' is required: a table with at least a citation (where the number was read)")
    for key in source:
        if key not in SOURCE_FIELDS:
            raise _fail(where, f"unknown source field {key!r}; source fields are {', '.join(SOURCE_FIELDS)}")
    source = {k: _text(v, where, f"source.{k}") for k, v in source.items()}
    task = raw.get("task", "pose")
    if task not in ("pose", "gesture"):
        raise _fail(where, f"'task' must be pose or gesture, got {task!r}")
    metric = raw.get("metric", UNKNOWN)
    allowed = POSE_METRICS if task == "pose" else GESTURE_METRICS
    if metric != UNKNOWN and metric not in allowed:
        raise _fail(where, f"'metric' must be one of {', '.join(allowed)} for a {task} claim, or \"unknown\"; "
                           f"got {metric!r}")
    scale = raw.get("value_scale", UNKNOWN)
    if scale != UNKNOWN and scale not in _SCALES:
        raise _fail(where, f"'value_scale' must be fraction, percent or \"unknown\", got {scale!r}")
    _check_range(value, task, metric, scale, where)
    convention = raw.get("convention", UNKNOWN)
    if convention != UNKNOWN:
        if task != "pose" or convention not in NAMES:
            raise _fail(where, f"unknown convention {convention!r}; pose conventions are {', '.join(NAMES)}")
    spec = _spec(raw.get("spec", {}), where, convention, metric)
    if convention != UNKNOWN and isinstance(spec.get("dims"), int):
        from rfbench.metrics.conventions import get_convention

        rule = get_convention(convention).rules.get(metric)
        if rule is not None and spec["dims"] not in rule.dims:
            raise _fail(where, f"convention {convention} computes {metric} on "
                               f"{' or '.join(f'{d}D' for d in rule.dims)} poses only; spec.dims is {spec['dims']}")
    leak = raw.get("leakage_prone", UNKNOWN)
    if leak != UNKNOWN and not isinstance(leak, bool):
        raise _fail(where, "'leakage_prone' must be true, false or \"unknown\"")
    text = {k: _text(raw[k], where, k) if k in raw else UNKNOWN for k in _TEXT_FIELDS}
    return Claim(id=text["id"] if "id" in raw else default_id, value=value, source=source, where=where,
                 model=text["model"], task=task, metric=metric, value_scale=scale, convention=convention, spec=spec,
                 units=text["units"], dataset=text["dataset"], protocol=text["protocol"], setting=text["setting"],
                 gestures=text["gestures"], leakage_prone=leak, selection=text["selection"],
                 notes=raw.get("notes", "") and text["notes"])


def _check_range(value, task: str, metric: str, scale: str, where: str) -> None:
    """A published number the metric cannot take is refused: every metric here is >= 0, and the bounded ones
    (PCK, its AUC, OKS, every gesture metric) are at most 1 as a fraction and 100 as a percent (100 when the
    scale is unknown)."""
    values = value if isinstance(value, tuple) else (value,)
    if any(v < 0 for v in values):
        raise _fail(where, f"'value' {values[0] if len(values) == 1 else list(values)} is negative; no metric here "
                           "takes a negative value")
    bounded = task == "gesture" or metric in ("pck", "pck-auc", "oks")
    top = 1.0 if scale == "fraction" else 100.0
    if bounded and any(v > top for v in values):
        raise _fail(where, f"'value' {max(values)} is past {top:g}, the most a{'n' if metric[:1] in 'aeiou' else ''} "
                           f"{metric if metric != UNKNOWN else task + ' metric'} can be as a "
                           f"{scale if scale != UNKNOWN else 'percent'}")


def parse_claims(text: str, where: str = "claims") -> ClaimsFile:
    """Parse the TOML text of a claims file (see the module docstring)."""
    from rfbench.io.documents import parse_toml_text

    data = parse_toml_text(text, where)
    allowed = ("schema", "title", "claim")
    unknown = [k for k in data if k not in allowed]
    if unknown:
        raise _fail(where, f"unknown top-level key {unknown[0]!r}; a claims file holds schema, title and [[claim]] "
                           f"tables")
    schema = data.get("schema", SCHEMA)
    if schema != SCHEMA:
        raise _fail(where, f"schema {schema!r}: this rfbench reads {SCHEMA!r}")
    claims = data.get("claim")
    if not isinstance(claims, list) or not claims:
        raise _fail(where, "no [[claim]] table: a claims file holds one [[claim]] per published number")
    if len(claims) > MAX_CLAIMS:
        raise _fail(where, f"{len(claims)} claims; at most {MAX_CLAIMS} per file")
    stem = Path(where).stem
    out = []
    for n, raw in enumerate(claims, 1):
        label = f"claim {n}" + (f" ({raw['id']})" if isinstance(raw, dict) and isinstance(raw.get("id"), str) else "")
        out.append(_claim(raw, f"{where}: {label}", f"{stem}-{n}"))
    ids = [c.id for c in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise _fail(where, f"claim ids must be unique; repeated: {', '.join(dup)}")
    title = data.get("title", stem)
    return ClaimsFile(where=where, title=_text(title, where, "title"), claims=tuple(out))


def read_claims(path: str | os.PathLike) -> ClaimsFile:
    """Read a claims file from disk: a regular file, at most :data:`MAX_CLAIMS_BYTES`, UTF-8 TOML."""
    path = Path(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise _fail(str(path), "no such file") from None
    except OSError as exc:
        raise _fail(str(path), f"cannot read ({exc.strerror or exc})") from None
    import stat as stat_

    if not stat_.S_ISREG(st.st_mode):
        raise _fail(str(path), "not a regular file")
    if st.st_size > MAX_CLAIMS_BYTES:
        raise _fail(str(path), f"{st.st_size} bytes; a claims file is at most {MAX_CLAIMS_BYTES} bytes")
    from rfbench.io.files import read_input_bytes

    raw = read_input_bytes(path, "claims file", cap=MAX_CLAIMS_BYTES, expected="a TOML claims file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(str(path), "not UTF-8 text, expected a TOML claims file") from None
    return parse_claims(text, str(path))


def _builtin_dir():
    from importlib.resources import files

    return files("rfbench").joinpath("claims")


def builtin_names() -> list[str]:
    """Names of the curated claims files shipped with rfbench (``claims:NAME``)."""
    return sorted(p.name[:-5] for p in _builtin_dir().iterdir() if p.name.endswith(".toml"))


def _builtin(name: str) -> ClaimsFile:
    names = builtin_names()
    if name not in names:
        raise FormatError(f"claims:{name}: no such built-in claims set; built-in sets are {', '.join(names)}")
    res = _builtin_dir().joinpath(f"{name}.toml")
    return parse_claims(res.read_text(encoding="utf-8"), f"claims:{name}")


def builtin_claims() -> list[ClaimsFile]:
    """Every curated claims file shipped with rfbench."""
    return [_builtin(n) for n in builtin_names()]


def load_claims(refs: Iterable[str | os.PathLike] = (), builtin: bool = False) -> list[ClaimsFile]:
    """Claims files by path or ``claims:NAME`` (a built-in set), plus every built-in set when ``builtin``.
    Claim ids must be unique across them all."""
    out = builtin_claims() if builtin else []
    for ref in refs:
        text = str(ref)
        if text.startswith("claims:") and any(cf.where == text for cf in out):
            continue  # already read with the built-in sets
        out.append(_builtin(text[len("claims:"):]) if text.startswith("claims:") else read_claims(ref))
    seen: dict[str, str] = {}
    for cf in out:
        for c in cf.claims:
            if c.id in seen and seen[c.id] != cf.where:
                raise FormatError(f"{cf.where}: claim id {c.id!r} is also in {seen[c.id]}; ids must be unique")
            seen[c.id] = cf.where
    return out
