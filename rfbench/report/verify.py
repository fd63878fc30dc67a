"""``rfbench verify``: re-run a report's reproducer and compare every number exactly (DESIGN.md §7).

Steps: read and check the report (unreadable or malformed → exit 2); check that every input exists (missing →
exit 2) and still has its recorded sha256 and size (changed → exit 1, nothing re-run); re-run the reproducer
in a fresh ``python -m rfbench`` process with ``--json`` in place of ``-o``/``--force`` — so verify never
writes, least of all over the report it checks — with each input option pointed at the file found beside
the report; then compare the two documents key by key (exit 1 on any difference, listed readably).

What is compared: everything except ``reproducer`` (the re-run's own command differs by construction) and
the inputs' ``path`` (recorded relative to the report's folder); the inputs' roles, sizes and hashes are
compared. A different rfbench version is reported as a note; the numbers decide.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rfbench.errors import FormatError, VerificationError
from rfbench.io.files import read_json, sha256_file
from rfbench.report.build import validate_report

__all__ = ["verify_report", "VerifyResult", "diff_reports", "rerun_argv", "RERUNNABLE"]

#: Commands whose reports can be re-run.
RERUNNABLE = ("score",)
#: Flags that write files or change the output's form: the re-run prints one JSON report and writes nothing.
_DROP_FLAGS = ("--force", "--json", "--plots")
_DROP_WITH_VALUE = ("-o", "--out")


@dataclass
class VerifyResult:
    """Outcome of :func:`verify_report`: ``status`` is ``match``; mismatches raise VerificationError."""

    report: str
    status: str
    compared: int
    notes: list[str] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"report": self.report, "status": self.status, "compared": self.compared, "notes": self.notes,
                "differences": [], "rerun_argv": self.argv}


def _resolve_inputs(report: dict, report_path: Path) -> dict[str, Path]:
    """Role → path of each input, relative to the report's folder (or the reproducer's cwd when the path
    was recorded relative to it)."""
    base = report_path.parent
    cwd = Path((report.get("reproducer") or {}).get("cwd") or base)
    found = {}
    for item in report["inputs"]:
        rel = Path(item["path"])
        candidates = [rel] if rel.is_absolute() else [base / rel, cwd / rel]
        path = next((c for c in candidates if c.exists()), None)
        if path is None:
            raise FormatError(f"input {item.get('role')} is missing: {candidates[0]} (recorded as {item['path']}); "
                              f"restore it to verify the report")
        found[item["role"]] = path
    return found


def _changed_inputs(report: dict, paths: dict[str, Path]) -> list[dict[str, Any]]:
    diffs = []
    for item in report["inputs"]:
        digest, size = sha256_file(paths[item["role"]])
        if digest != item.get("sha256") or size != item.get("bytes"):
            diffs.append({"path": f"inputs[{item['role']}]", "report": f"{item.get('bytes')} bytes sha256 "
                          f"{item.get('sha256')}", "rerun": f"{size} bytes sha256 {digest}",
                          "file": str(paths[item["role"]])})
    return diffs


def rerun_argv(report: dict, paths: dict[str, Path]) -> list[str]:
    """The reproducer's arguments (after ``rfbench``) with outputs dropped, ``--json`` added and every input
    option pointing at the resolved input file.

    Options are recognised in every form the command line accepts: ``--opt value``, ``--opt=value`` and, for
    ``-o``, ``-o value`` and ``-oVALUE``. Dropped: ``-o``/``--out`` with its value, ``--force``, ``--json`` and
    ``--plots`` (the re-run writes nothing and prints one JSON report).
    """
    rep = report.get("reproducer")
    if not rep:
        raise FormatError("the report has no reproducer (evidence CLAIMED): there is nothing to re-run")
    argv = list(rep["argv"])
    if len(argv) < 2 or argv[0] != "rfbench" or argv[1] not in RERUNNABLE:
        raise FormatError(f"the reproducer {argv[:2]} is not an rfbench command verify can re-run "
                          f"({', '.join(RERUNNABLE)})")
    by_option = {i["option"]: i["role"] for i in report["inputs"] if i.get("option")}
    out = [argv[1]]
    tail: list[str] = []
    i = 2
    while i < len(argv):
        a = argv[i]
        if a == "--":  # everything after it is positional: keep it last, after --json
            tail = argv[i:]
            break
        name, eq, _value = a.partition("=") if a.startswith("--") else (a, "", "")
        if a.startswith("-o") and len(a) > 2:
            name, eq = "-o", "="  # -oFILE: the short option with its value attached
        if name in _DROP_FLAGS and not eq:
            i += 1
            continue
        if name in _DROP_WITH_VALUE:
            i += 1 if eq else 2
            continue
        if name in by_option:
            if eq:
                out.append(f"{name}={paths[by_option[name]].resolve()}")
                i += 1
                continue
            if i + 1 < len(argv):
                out += [name, str(paths[by_option[name]].resolve())]
                i += 2
                continue
        out.append(a)
        i += 1
    return out + ["--json"] + tail


def _walk(a: Any, b: Any, path: str, out: list) -> int:
    """Append differences between a and b to out; return the number of leaf values compared."""
    if isinstance(a, dict) and isinstance(b, dict):
        n = 0
        for k in sorted(set(a) | set(b)):
            sub = f"{path}.{k}" if path else k
            if k not in a or k not in b:
                out.append({"path": sub, "report": a.get(k, "<absent>"), "rerun": b.get(k, "<absent>")})
                continue
            n += _walk(a[k], b[k], sub, out)
        return n
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append({"path": f"{path} (length)", "report": len(a), "rerun": len(b)})
        n = 0
        for i, (x, y) in enumerate(zip(a, b)):
            n += _walk(x, y, f"{path}[{i}]", out)
        return n
    if type(a) is not type(b) or a != b:
        out.append({"path": path, "report": a, "rerun": b})
    return 1


def _comparable(report: dict) -> dict:
    doc = {k: v for k, v in report.items() if k not in ("reproducer",)}
    doc["inputs"] = sorted(({k: v for k, v in i.items() if k != "path"} for i in report.get("inputs", [])),
                           key=lambda i: str(i.get("role")))
    return doc


def diff_reports(report: dict, rerun: dict) -> tuple[list[dict[str, Any]], int]:
    """Differences between two reports (excluding the reproducer and input paths), and how many values were
    compared. Results are matched by position and their labels compared too."""
    out: list = []
    n = _walk(_comparable(report), _comparable(rerun), "", out)
    return out, n


def _label(report: dict, path: str) -> str:
    """Add the result's label to a results[i] path, for a readable diff."""
    if path.startswith("results["):
        try:
            idx = int(path[len("results["):path.index("]")])
            return f"{path} ({report['results'][idx]['label']})"
        except (ValueError, IndexError, KeyError, TypeError):
            return path
    return path


def verify_report(path: str | os.PathLike, *, python: str | None = None, timeout: float | None = 3600) -> VerifyResult:
    """Re-run a report and compare.

    Returns
    -------
    VerifyResult
        When every compared value is identical.

    Raises
    ------
    FormatError
        Unreadable or malformed report, no reproducer, or a missing input (exit 2).
    VerificationError
        An input's hash changed, the re-run failed, or a value differs (exit 1); ``differences`` lists them.
    """
    path = Path(path)
    report = validate_report(read_json(path, "report"), str(path))
    paths = _resolve_inputs(report, path)
    changed = _changed_inputs(report, paths)
    if changed:
        raise VerificationError(
            f"{path}: {len(changed)} input(s) changed since the report was made ("
            + ", ".join(f"{d['path']} {d['file']}" for d in changed) + "); numbers not re-computed",
            differences=changed,
        )
    args = rerun_argv(report, paths)
    cmd = [python or sys.executable, "-m", "rfbench", *args]
    rep_cwd = Path(report["reproducer"].get("cwd") or path.parent)
    cwd = rep_cwd if rep_cwd.is_dir() else path.parent
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise VerificationError(f"{path}: the re-run did not finish within {timeout} s") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise VerificationError(f"{path}: the re-run failed with exit code {proc.returncode}: {last}",
                                differences=[{"path": "rerun", "report": "exit 0", "rerun": f"exit {proc.returncode}"}])
    try:
        rerun = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise VerificationError(f"{path}: the re-run did not print a report") from None
    diffs, compared = diff_reports(report, rerun)
    notes = []
    version_diffs = [d for d in diffs if d["path"] == "rfbench_version"]
    if version_diffs:
        notes.append(f"made with rfbench {report['rfbench_version']}, re-run with {rerun.get('rfbench_version')}")
        diffs = [d for d in diffs if d["path"] != "rfbench_version"]
    for d in diffs:
        d["path"] = _label(report, d["path"])
    if diffs:
        raise VerificationError(f"{path}: {len(diffs)} value(s) differ on re-run (first: {diffs[0]['path']}: "
                                f"{diffs[0]['report']!r} in the report, {diffs[0]['rerun']!r} now)", differences=diffs)
    return VerifyResult(str(path), "match", compared, notes, cmd[3:])
