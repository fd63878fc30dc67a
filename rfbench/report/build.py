"""The report document (``rfbench.report/1``, DESIGN.md §7 and §11), task-independent.

A report is a JSON object::

    schema           "rfbench.report/1"
    task             "pose" | "gesture"
    evidence         MEASURED | SYNTHETIC | CLAIMED  (decided by rfbench.report.evidence)
    evidence_rule    what the tag means
    reproducer       {argv, cwd} or null (null only for CLAIMED)
    inputs           [{role, path, bytes, sha256, option}]   paths relative to the report's folder
    rfbench_version  "x.y.z"
    split            {protocol, seed, params, leakage_prone, audit: {passed, checks, shared}, synthetic, ...} or null
    baseline         {kind, ...} when a baseline was built, else {kind: null, reason}
    bootstrap        {method, replicates, level, seed, cluster_by, clusters} or {method: null, reason}
    results          [{metric, spec, label, better, model, baseline, delta, ci}]
    notes            [str]   (leakage-prone split, layout override, omitted metrics, ...)
    ... task sections (pose: skeleton, layout_check, data)

Every number in ``results`` sits beside its ``spec`` and one-line ``label``; :func:`build_report` refuses a
result without them. Non-finite numbers (an MPJPE of +inf when a prediction was NaN) are stored as the
strings ``"inf"``, ``"-inf"``, ``"nan"`` so that the JSON stays valid and exact.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

from rfbench import __version__
from rfbench.errors import FormatError, ValidationError
from rfbench.io.files import check_schema, schema_id
from rfbench.report.evidence import CLAIMED, EVIDENCE, RULES, decide_evidence, evidence_problems

__all__ = ["build_report", "validate_report", "encode_numbers", "as_number", "TASKS", "RESULT_KEYS"]

TASKS = ("pose", "gesture")
RESULT_KEYS = ("metric", "spec", "label", "better", "model", "baseline", "delta", "ci")


def encode_numbers(obj: Any) -> Any:
    """Copy of ``obj`` with non-finite floats as ``"inf"``/``"-inf"``/``"nan"`` and NumPy scalars as Python."""
    if hasattr(obj, "dtype") and hasattr(obj, "item") and getattr(obj, "shape", None) == ():
        obj = obj.item()
    if isinstance(obj, float):
        if math.isnan(obj):
            return "nan"
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
        return obj
    if isinstance(obj, Mapping):
        return {str(k): encode_numbers(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode_numbers(v) for v in obj]
    return obj


def as_number(x: Any) -> float | None:
    """A report number back as float (``"inf"`` → inf); None stays None."""
    return None if x is None else float(x)  # float("inf") reads the stored strings back


def _check_result(n: int, r: Any) -> None:
    if not isinstance(r, Mapping):
        raise ValidationError(f"result {n} must be a mapping with {', '.join(RESULT_KEYS)}")
    missing = [k for k in RESULT_KEYS if k not in r]
    if missing:
        raise ValidationError(f"result {n} lacks {', '.join(missing)}: every number needs its spec and label")
    if not isinstance(r["spec"], Mapping) or not r["spec"]:
        raise ValidationError(f"result {n}: spec must be the full metric spec (a non-empty mapping)")
    if not isinstance(r["label"], str) or not r["label"].strip():
        raise ValidationError(f"result {n}: label must be the one-line rendering of its spec")
    if not isinstance(r["model"], Mapping) or "value" not in r["model"]:
        raise ValidationError(f"result {n}: model must be a mapping with a value")
    if r["better"] not in ("higher", "lower"):
        raise ValidationError(f"result {n}: better must be 'higher' or 'lower'")


def build_report(*, task: str, results: Sequence[Mapping[str, Any]], reproducer: Mapping | None = None,
                 inputs: Iterable[Mapping[str, Any]] | None = None, synthetic: bool = False,
                 split: Mapping[str, Any] | None = None, baseline: Mapping[str, Any] | None = None,
                 bootstrap: Mapping[str, Any] | None = None, notes: Sequence[str] = (),
                 sections: Mapping[str, Any] | None = None, evidence: str | None = None,
                 version: str = __version__) -> dict[str, Any]:
    """Assemble and check a report.

    Parameters
    ----------
    task : {"pose", "gesture"}
    results : sequence of mapping
        Each with ``metric, spec, label, better, model, baseline, delta, ci``.
    reproducer : mapping, optional
        ``{argv, cwd}``; without it the report can only be CLAIMED (or SYNTHETIC).
    inputs : iterable of mapping, optional
        :func:`rfbench.report.evidence.input_record` of every input.
    synthetic : bool
        The data is generated: the tag is SYNTHETIC.
    split, baseline, bootstrap : mapping, optional
        Sections as described in the module docstring.
    notes : sequence of str
    sections : mapping, optional
        Task-specific top-level sections (they may not replace the common keys).
    evidence : str, optional
        The tag the caller expects; an error unless the facts support exactly that tag.

    Returns
    -------
    dict
        The report, numbers encoded by :func:`encode_numbers`.
    """
    if task not in TASKS:
        raise ValidationError(f"unknown task {task!r}; use {' or '.join(TASKS)}")
    inputs = [dict(i) for i in (inputs or [])]
    tag = decide_evidence(reproducer, inputs, version, synthetic, evidence)
    results = list(results)
    for n, r in enumerate(results):
        _check_result(n, r)
    notes = list(notes)
    if split and split.get("leakage_prone"):
        msg = (f"LEAKAGE-PRONE split (protocol {split.get('protocol')}): the same subject or recording context can "
               f"appear in train and test, so these numbers overstate generalisation")
        if msg not in notes:
            notes.insert(0, msg)
    report = {
        "schema": schema_id("report"),
        "task": task,
        "evidence": tag,
        "evidence_rule": RULES[tag],
        "reproducer": dict(reproducer) if reproducer is not None else None,
        "inputs": inputs,
        "rfbench_version": version,
        "split": dict(split) if split is not None else None,
        "baseline": dict(baseline) if baseline is not None else {"kind": None, "reason": "no baseline requested"},
        "bootstrap": dict(bootstrap) if bootstrap is not None else {"method": None, "reason": "not requested"},
        "results": [dict(r) for r in results],
        "notes": notes,
    }
    for key, value in (sections or {}).items():
        if key in report:
            raise ValidationError(f"task section {key!r} would replace a common report key")
        report[key] = value
    return encode_numbers(report)


def validate_report(obj: Any, where: str = "report") -> dict[str, Any]:
    """Check a loaded report's structure and evidence rules; returns it, or raises :class:`FormatError`."""
    if not isinstance(obj, Mapping):
        raise FormatError(f"{where}: not a report (expected a JSON object)")
    check_schema(obj, "report", where)
    for key in ("task", "evidence", "reproducer", "inputs", "rfbench_version", "split", "results"):
        if key not in obj:
            raise FormatError(f"{where}: not a valid report: no {key!r} key")
    if obj["task"] not in TASKS:
        raise FormatError(f"{where}: unknown task {obj['task']!r}")
    if obj["evidence"] not in EVIDENCE:
        raise FormatError(f"{where}: unknown evidence tag {obj['evidence']!r}")
    if not isinstance(obj["results"], list) or not isinstance(obj["inputs"], list):
        raise FormatError(f"{where}: results and inputs must be lists")
    try:
        for n, r in enumerate(obj["results"]):
            _check_result(n, r)
    except ValidationError as exc:
        raise FormatError(f"{where}: {exc}") from None
    if obj["evidence"] != CLAIMED:
        problems = evidence_problems(obj["reproducer"], obj["inputs"], obj["rfbench_version"])
        if obj["evidence"] == "MEASURED" and problems:
            raise FormatError(f"{where}: tagged MEASURED but " + "; ".join(problems))
    return dict(obj)
