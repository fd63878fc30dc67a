"""``rfbench verify DIR/summary.json``: a robustness sweep's summary checked against its cells.

Every cell report (and the clean one) must hash to the sha256 the summary records, hold the value and interval
the summary copies from its first result, and give the recorded drop from clean; the corruption errors (CE,
mCE) are recomputed from the cells, and the reference summary, when named, must hash to its recorded sha256.
Cells named on request (``cells``: folder names such as ``noise-3-seed0``; ``all_cells``: every one, clean
included) are then verified as the reports they are: their chain re-run from the dataset, bit for bit.
The drops' paired intervals are not recomputed here (they need every cell's predictions and the clean ones
together): a re-run of the sweep (``rfbench robustness`` with the summary's reproducer) reproduces them.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Callable, Sequence

from rfbench.errors import FormatError, ValidationError, VerificationError

__all__ = ["is_summary", "verify_summary"]


def is_summary(doc: Any) -> bool:
    """Whether a JSON document is a robustness summary (its schema names the kind)."""
    return isinstance(doc, dict) and str(doc.get("schema", "")).startswith("rfbench.robustness/")


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isclose(a, b, rel_tol=1e-12,
                                                                                     abs_tol=1e-15))


def verify_summary(path: Path, root: Path | None, verify_cell: Callable[[Path], Any], result_type, *,
                   cells: Sequence[str] = (), all_cells: bool = False):
    """Check a summary (see the module docstring) and verify the cells asked for with ``verify_cell(report)``.

    Returns ``result_type(report=..., status="match", compared=..., notes=...)``.

    Raises
    ------
    FormatError
        A malformed summary, or a cell report missing or outside the root (exit 2).
    VerificationError
        A cell's hash, value or drop, or a recomputed corruption error, differs from the summary; a cell
        re-run does not match (exit 1).
    """
    from rfbench.io.files import read_json, sha256_file
    from rfbench.io.paths import resolve
    from rfbench.report.robustness import aggregate, cell_name, read_reference

    doc = read_json(path, "robustness")
    base = path.parent
    root = Path(os.path.realpath(root if root is not None else base))
    try:
        entries = list(doc["cells"])
        clean = dict(doc["clean"])
        better = doc["metric"]["better"]
        baseline_value = doc["baseline"]["value"]
    except (KeyError, TypeError) as exc:
        raise FormatError(f"{path}: not a robustness summary ({type(exc).__name__}: {exc})") from None
    names = {cell_name(e["corruption"], e["severity"], e["seed"]): e for e in entries}
    unknown = [c for c in cells if c not in names and c != "clean"]
    if unknown:
        raise ValidationError(f"{path}: no cell {unknown[0]!r}; the cells are clean, "
                              + ", ".join(list(names)[:8]) + (" …" if len(names) > 8 else ""))
    differences: list[dict] = []
    compared = 0
    reports: dict[str, Path] = {}
    clean_value = clean["model"]["value"]
    for name, entry in [("clean", clean), *names.items()]:
        where = f"cells[{name}]" if name != "clean" else "clean"
        real = resolve(entry["report"], base, what=f"the summary's {name} report", root=root).path
        reports[name] = real
        digest, _ = sha256_file(real)
        compared += 1
        if digest != entry["sha256"]:
            differences.append({"path": f"{where}.sha256", "report": entry["sha256"], "rerun": digest})
            continue
        report = read_json(real, "report")
        first = report["results"][0]
        ci = (first.get("ci") or {}).get("model") or {}
        now = {"value": first["model"]["value"], "low": ci.get("low"), "high": ci.get("high")}
        for key in ("value", "low", "high"):
            compared += 1
            if not _close(entry["model"].get(key), now[key]):
                differences.append({"path": f"{where}.model.{key}", "report": entry["model"].get(key),
                                    "rerun": now[key]})
        if name != "clean":
            compared += 1
            drop = None if now["value"] is None or clean_value is None else clean_value - now["value"]
            if not _close(entry["drop"].get("value"), drop):
                differences.append({"path": f"{where}.drop.value", "report": entry["drop"].get("value"),
                                    "rerun": drop})
    reference = None
    if doc.get("reference"):
        ref_real = resolve(doc["reference"]["path"], base, what="the summary's reference", root=root).path
        compared += 1
        if sha256_file(ref_real)[0] != doc["reference"]["sha256"]:
            differences.append({"path": "reference.sha256", "report": doc["reference"]["sha256"],
                                "rerun": sha256_file(ref_real)[0]})
        reference = read_reference(ref_real)
    again = aggregate(better, clean, entries, baseline_value, reference)
    for key, value in again.items():
        compared += 1
        if not _same(doc.get(key), value):
            differences.append({"path": key, "report": doc.get(key), "rerun": value})
    if differences:
        raise VerificationError(f"{path}: {len(differences)} value(s) of the summary differ from its cells (first: "
                                f"{differences[0]['path']})", differences=differences)
    notes = [f"{len(entries)} cell(s) and clean: hashes, values, drops and corruption errors agree with the "
             "cell reports"]
    wanted = ["clean", *names] if all_cells else list(cells)
    for name in wanted:
        try:
            result = verify_cell(reports[name])
        except VerificationError as exc:
            raise VerificationError(f"{path}: cell {name}: {exc}", differences=exc.differences) from None
        compared += result.compared
        notes.append(f"cell {name} re-run: MATCH ({result.compared} values)")
    if not wanted:
        notes.append("no cell re-run (name cells with --cell, or --all for every one)")
    return result_type(report=str(path), status="match", compared=compared, notes=notes, markdown="absent")


def _same(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return _close(float(a), float(b))
    return a == b
