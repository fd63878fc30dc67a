"""Evidence tags and their rules (DESIGN.md §7).

``MEASURED``
    rfbench computed the numbers here and anyone can check them: the report holds the exact reproducer
    (argv and working folder), the sha256 and size of every input, and the rfbench version.
``SYNTHETIC``
    The numbers derive from generated data (the split's manifest says ``synthetic: true``, or the user said
    so): useful for testing a pipeline, never evidence about real sensing.
``CLAIMED``
    Numbers without a reproducer — typed in from a paper, or built through the API without one. Never mixed
    with measured numbers unlabeled.

The tag is *decided* from the facts (:func:`decide_evidence`), never merely asserted: asking for MEASURED
without a reproducer, an input hash or the version raises, and so does asking for anything but SYNTHETIC on
generated data.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from rfbench.errors import ValidationError

__all__ = [
    "MEASURED",
    "SYNTHETIC",
    "CLAIMED",
    "EVIDENCE",
    "RULES",
    "Reproducer",
    "input_record",
    "decide_evidence",
    "evidence_problems",
]

MEASURED = "MEASURED"
SYNTHETIC = "SYNTHETIC"
CLAIMED = "CLAIMED"
EVIDENCE = (MEASURED, SYNTHETIC, CLAIMED)

RULES = {
    MEASURED: "computed by rfbench; the reproducer, the sha256 and size of every input and the rfbench version "
              "are recorded, so `rfbench verify` can re-run it",
    SYNTHETIC: "derived from generated data: it tests the pipeline, it is not evidence about real sensing",
    CLAIMED: "no reproducer: numbers stated, not re-runnable",
}

_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Reproducer:
    """The command that produced a report: ``argv`` (starting with ``rfbench``) run in folder ``cwd``."""

    argv: tuple[str, ...]
    cwd: str

    def to_dict(self) -> dict[str, Any]:
        return {"argv": list(self.argv), "cwd": self.cwd}

    @classmethod
    def from_dict(cls, obj: Any) -> "Reproducer | None":
        if obj is None:
            return None
        if isinstance(obj, Reproducer):
            return obj
        if not isinstance(obj, Mapping):
            raise ValidationError("reproducer must be {argv: [...], cwd: '...'}")
        argv, cwd = obj.get("argv"), obj.get("cwd")
        if not isinstance(argv, (list, tuple)) or not argv or not all(isinstance(a, str) for a in argv):
            raise ValidationError("reproducer argv must be a non-empty list of strings")
        if not isinstance(cwd, str) or not cwd:
            raise ValidationError("reproducer cwd must be a folder path")
        return cls(tuple(argv), cwd)


def input_record(role: str, path: str | os.PathLike, *, base: str | os.PathLike | None = None,
                 option: str | None = None) -> dict[str, Any]:
    """``{role, path, bytes, sha256, option}`` for one input file: the sha256 and size of the bytes this command read
    of it (under :func:`rfbench.io.files.reads_recorded`), else of the file as it is now.

    ``path`` is stored relative to ``base`` when given (the report's folder), so a folder moved with its
    report still verifies; ``option`` is the command-line option that passes the file (or None).
    """
    from rfbench.io.files import digest_read, sha256_file

    path = Path(path)
    # a file this command read whole (under rfbench.io.files.reads_recorded): the digest of the bytes it used
    read = digest_read(path)
    digest, size = read if read is not None else sha256_file(path)
    shown = Path(os.path.relpath(path.resolve(), Path(base).resolve())) if base is not None else path
    return {"role": role, "path": shown.as_posix(), "bytes": size, "sha256": digest, "option": option}


def evidence_problems(reproducer: Any, inputs: Sequence[Mapping[str, Any]] | None, version: Any) -> list[str]:
    """What keeps these facts from supporting MEASURED (empty when nothing does)."""
    problems = []
    if reproducer is None:
        problems.append("no reproducer")
    else:
        try:
            Reproducer.from_dict(reproducer)
        except ValidationError as exc:
            problems.append(str(exc))
    if not inputs:
        problems.append("no input recorded")
    for n, item in enumerate(inputs or []):
        if not isinstance(item, Mapping):
            problems.append(f"input {n} is not a record")
            continue
        name = item.get("role") or f"input {n}"
        if not isinstance(item.get("path"), str) or not item.get("path"):
            problems.append(f"{name}: no path")
        if not isinstance(item.get("sha256"), str) or not _SHA256.match(item["sha256"]):
            problems.append(f"{name}: no sha256")
        size = item.get("bytes")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            problems.append(f"{name}: no size in bytes")
    if not isinstance(version, str) or not version:
        problems.append("no rfbench version")
    return problems


def decide_evidence(reproducer: Any, inputs: Iterable[Mapping[str, Any]] | None, version: Any,
                    synthetic: bool, requested: str | None = None) -> str:
    """The evidence tag these facts support, checked against ``requested`` when given.

    SYNTHETIC when ``synthetic``; otherwise MEASURED when the reproducer, every input's sha256 and size and
    the version are present; otherwise CLAIMED — except that a reproducer given with an incomplete input
    record is an error (it would be a MEASURED-looking report without hashes).

    Raises
    ------
    ValidationError
        ``requested`` is not what the facts support, or a reproducer comes with incomplete input records.
    """
    inputs = list(inputs or [])
    if requested is not None and requested not in EVIDENCE:
        raise ValidationError(f"unknown evidence tag {requested!r}; use MEASURED, SYNTHETIC or CLAIMED")
    problems = evidence_problems(reproducer, inputs, version)
    if reproducer is not None and problems:
        raise ValidationError("a reproducer was given but the evidence is incomplete: " + "; ".join(problems)
                              + " (hash inputs with rfbench.report.evidence.input_record)")
    if synthetic:
        decided = SYNTHETIC
    elif not problems:
        decided = MEASURED
    else:
        decided = CLAIMED
    if requested is not None and requested != decided:
        why = {SYNTHETIC: "the data is synthetic", MEASURED: "the reproducer, input hashes and version are all present",
               CLAIMED: "; ".join(problems) or "no reproducer"}[decided]
        raise ValidationError(f"evidence {requested} was requested but the facts support {decided} ({why})")
    return decided
