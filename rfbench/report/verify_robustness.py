"""``rfbench verify DIR/summary.json``: a robustness sweep's summary checked against its cells.

What the summary says is checked against the files it names, each resolved under the verify root and hashed
once within verify's ``timeout`` and ``max_gb``:

- **the grid**: its cells are exactly the cells of its settings (every corruption × severity × seed, none twice,
  none other), and the settings are ones ``rfbench robustness`` takes;
- **its inputs**: the model, split and score-like report hash to the sha256 it records;
- **every cell report** (and the clean one): it hashes to the recorded sha256, was scored on the summary's model
  and split, over a windows index (hashed as the report recorded it) built with the cell's own corruption,
  severity and seed (clean: none), with the summary's metric; the value and interval the summary copies from its
  first result, and its drop from clean, are the report's; it was built and scored as the clean cell was (its
  windows index's settings but the corruption, and its score settings: every option of its reproducer and the
  bootstrap its report records, are the clean report's);
- **what it derives**: the task and metric (from the clean report), the baseline value (the clean report's),
  the evidence tag, its rule and the warnings (from every cell report's tag, warning notes and score settings:
  :func:`~rfbench.report.robustness.sweep_evidence`), the corruption errors (CE, mCE, recomputed from the
  cells), the reproducer (the command rfbench writes for the recorded paths and settings), the notes (rfbench's
  own); the version must read as one;
- **the reference** sweep, when named: checked the same way (without a reference of its own), a reference for
  this sweep as ``rfbench robustness`` takes one (:func:`~rfbench.report.robustness.reference_differs`: the
  same task, metric, split, cells and windows — its clean cell's windows settings, but the corruption, are this
  clean cell's), and its cells re-run with the summary's own (below), so the CE and mCE it
  scales rest on re-run cells too;
- **the score-like report** is the one the cells were scored like (the clean cell's score settings and windows
  settings, but the corruption, are its);
- **the whole summary**, every key at every level, is the document rfbench writes for what the checks above
  found: a key it does not write, or a cell report file other than ``cells/NAME/report.json``, is a difference;
- **the pictures** beside it, when matplotlib is installed: drawn again from the summary and compared byte for
  byte.

Then every cell, clean included, and every cell of the reference is verified as the report it is: its chain
re-run from the dataset, bit for bit. The report re-run is the one the checks above read (its bytes hash to the
sha256 they read; a report put in its place since is refused), and a reference summary is checked as parsed
from the bytes hashed. Until every cell is re-run, a cell's numbers rest on its report's sha256
alone — and whoever edits a cell report can record its new sha256 — so that is the default. ``cells`` (folder
names such as ``noise-3-seed0``) narrows the re-runs to those named; every cell left out, and the reference's
cells, are then named in the verdict as not compared.
Last, each drop's paired interval is computed again as the sweep computed it (:func:`_recompute_drops`): the
bootstrap of the clean report's metric over the clean cell's ground truth, read from the dataset in a closed world,
and the predictions the clean report and the cell's report scored (their ``pred.npy``, the bytes hashed), drawn
with the clean report's bootstrap settings; every bound and level must be the one recomputed (a sweep's
reference too). Before that, each is held to be an interval as rfbench writes one (both bounds or neither,
``low <= high``) at the cells' bootstrap level, so a malformed one is named as such.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
from pathlib import Path
from typing import Any, Callable, Collection, Mapping, Sequence

from rfbench.errors import FormatError, RfbenchError, ValidationError, VerificationError, malformed_as_format_error

__all__ = ["is_summary", "verify_summary"]


def is_summary(doc: Any) -> bool:
    """Whether a JSON document is a robustness summary (its schema names the kind)."""
    return isinstance(doc, dict) and str(doc.get("schema", "")).startswith("rfbench.robustness/")


def _close(a, b) -> bool:
    """Whether a number of the summary is the one re-derived: exactly, in value and in kind (as a score report is
    compared) — the cells re-run give the same floats, so there is nothing to forgive. (Until 2026-12-07 floats
    were equal within a relative 1e-12 and an integer equal to its float: a cell's value moved in its 13th digit,
    or ``30`` for ``30.0``, verified MATCH under "identical", found by an adversarial probe.)"""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool) or type(a) is not type(b):
        return False
    if isinstance(a, float) and math.copysign(1.0, a) != math.copysign(1.0, b):
        return False  # -0.0 == 0.0, but report.md shows -0.0000
    return a == b


class _Files:
    """Files resolved under the root and hashed once each (by identity), within the budget."""

    def __init__(self, root: Path, budget):
        self.root, self.budget, self.digests = root, budget, {}

    def resolve(self, ref: Any, base: Path, what: str):
        from rfbench.io.paths import resolve

        if not isinstance(ref, str) or not ref:
            raise FormatError(f"{what}: no path recorded")
        return resolve(ref, base, what=what, root=self.root)

    def sha256(self, item, what: str) -> str:
        from rfbench.report.closed_world import hash_resolved

        self.budget.left()
        digest = self.digests.get(item.identity)
        if digest is None:
            digest = self.digests[item.identity] = hash_resolved(item, self.budget, what)
        return digest

    def document(self, item, kind: str, what: str) -> dict:
        """The JSON document of ``item`` parsed from the very bytes hashed (read once, whole, checked against
        the sha256): never a second read by path that a file rewritten in place could answer differently."""
        from rfbench.report.closed_world import check_document_size, parse_document, read_checked

        check_document_size(item, what)
        data = read_checked(item, self.sha256(item, what), what)
        self.budget.left()
        return parse_document(data, item, kind)


def verify_summary(path: Path, root: Path | None, verify_cell: Callable[[Path, str], Any], result_type, *,
                   cells: Sequence[str] = (), all_cells: bool = False, limits=None,
                   bounded: Callable[[], Any] = contextlib.nullcontext, routine: Collection[str] = ()):
    """Check a summary (see the module docstring) and verify the cells asked for with ``verify_cell(report,
    sha256)``: ``sha256`` is the digest of the bytes the summary's checks read, and the cell verified must be those
    very bytes (a report put in its place once the checks are done is refused, never re-run as the checked one).
    ``bounded()``: the context verify's own process reads the cells' predictions and the ground truth in (its
    memory bound). Each cell's own "not compared" entries and notes are the verdict's too, named by the cell,
    but the fields in ``routine`` (those every report's verdict leaves out) and its routine notes.

    Returns ``result_type(report=..., status="match", compared=..., notes=..., uncompared=...)``.

    Raises
    ------
    FormatError
        A malformed summary, or a file it names missing or outside the root (exit 2).
    VerificationError
        Anything the summary says that its files do not; a cell re-run that does not match (exit 1).
    """
    from rfbench.report.closed_world import Budget
    from rfbench.report.robustness import evidence_lines

    timeout = getattr(limits, "timeout", 3600.0)
    max_gb = getattr(limits, "max_gb", 1024.0)
    files = _Files(Path(os.path.realpath(root if root is not None else path.parent)), Budget(timeout,
                                                                                            int(max_gb * 2**30)))
    files.resolve(path.name, path.parent, "the summary")  # the summary too is a file under the root
    with malformed_as_format_error(f"{path}: not a robustness summary rfbench writes"):
        checked = _check(path, files, reference_allowed=True, pictures=(unchecked := []))
    names, reports, compared, version, reference_cells, evidence, _, drops = checked
    unknown = [c for c in cells if c not in names and c != "clean"]
    if unknown:
        raise ValidationError(f"{path}: no cell {unknown[0]!r}; the cells are clean, "
                              + ", ".join(list(names)[:8]) + (" …" if len(names) > 8 else ""))
    # what the numbers are first, so a SYNTHETIC sweep, or one with warnings, never reads as a plain measured one
    notes = [f"{kind}: {text}" for kind, text in evidence_lines({**evidence, "cells": names})]
    notes += [f"{len(names)} cell(s) and clean: hashes, grid, inputs, corruptions, values, drop values, evidence "
              "tag, warnings, corruption errors, reproducer and each picture beside it agree with the files they "
              "name", f"made with rfbench {version}"]
    every = ["clean", *names]
    wanted = every if all_cells or not cells else list(dict.fromkeys(cells))
    # the reference's cells decide the CE and mCE this summary scales by: re-run with the summary's own (a cell
    # not re-run rests on its report's sha256 alone, which whoever edits the report can record again)
    runs = [(name, *reports[name], "cell") for name in wanted]
    if all_cells or not cells:
        runs += [(name, *report, "reference cell") for name, report in reference_cells.items()]
    trees: dict = {}
    reruns: dict[str, dict] = {"cell": {}, "reference cell": {}}  # the re-run's own predictions, when not bit-exact
    cell_uncompared: list[dict] = []
    for name, report, digest, kind in runs:
        try:
            result = verify_cell(report, digest)
        except VerificationError as exc:
            raise VerificationError(f"{path}: {kind} {name}: {exc}", differences=exc.differences) from None
        compared += result.compared
        notes.append(f"{kind} {name} re-run: MATCH ({result.compared} values)")
        # what the cell's own verdict says it did not compare, or warns of, is this verdict's too
        notes += [f"{kind} {name}: {n}" for n in result.notes if not _routine_note(n)]
        cell_uncompared += [{"field": f"{kind} {name}: {u['field']}", "why": u["why"]} for u in result.uncompared
                            if u.get("field") not in routine]
        reruns[kind][name] = getattr(result, "rerun_pred", None)
        for t in result.datasets:  # the cells share the clean run's chain: each tree named once
            trees.setdefault((t["tree"], t["manifest"]), t)
    everything = all_cells or not cells
    # a drop is clean minus the cell: recomputed for the cells re-run, and only once clean is re-run too
    only = None if everything else (set(wanted) if "clean" in wanted else set())
    with bounded(), \
            malformed_as_format_error(f"{path}: a cell's predictions or the clean cell's chain are malformed"):
        # the arrays are read in this process
        for k, (prefix, entries, docs) in enumerate(drops):
            if k == 0 or everything:  # the reference's: when its cells were re-run
                compared += _recompute_drops(path, prefix, entries, docs, files, limits, only,
                                             reruns["cell" if k == 0 else "reference cell"])
    recomputed = [name for name in names if only is None or name in only]
    if recomputed:
        whose = " (and every cell of the reference)" if everything and len(drops) > 1 else ""
        notes.append(f"{len(recomputed)} drop(s){whose}: the paired interval recomputed from the cell's and clean's "
                     "predictions and the clean cell's ground truth, read from the dataset again")
    skipped = [name for name in every if name not in wanted]
    uncompared = []
    if not everything and "clean" not in wanted:
        uncompared.append({"field": "cells[].drop (value, low, high)",
                           "why": "each drop is clean minus the cell, and the clean cell was not re-run (--cell "
                                  "named others): every drop rests on the clean report's sha256; add --cell clean "
                                  "to re-run it and recompute the drops of the cells named"})
    elif not everything and [name for name in names if name not in wanted]:
        uncompared.append({"field": "cells[].drop.low, .high of the cells not re-run",
                           "why": "each drop's paired interval is recomputed for the cells re-run only (--cell "
                                  "named others); leave out --cell to recompute every one"})
    if skipped:
        uncompared.append({"field": f"cells {', '.join(skipped[:8])}{' …' if len(skipped) > 8 else ''} "
                                    f"({len(skipped)} of {len(every)})",
                           "why": "not re-run (--cell named others): their numbers rest on their reports' sha256, "
                                  "not on a re-run; leave out --cell to re-run every cell"})
    uncompared += unchecked + cell_uncompared
    if reference_cells and not (all_cells or not cells):
        uncompared.append({"field": f"reference cells ({len(reference_cells)})",
                           "why": "not re-run (--cell named cells of the summary): the CE and mCE rest on the "
                                  "reference's cell reports' sha256, not on a re-run; leave out --cell to re-run "
                                  "them"})
    return result_type(report=str(path), status="match", compared=compared, notes=notes, markdown="absent",
                       uncompared=uncompared, datasets=list(trees.values()))


def _check(path: Path, files: _Files, reference_allowed: bool, doc: Mapping | None = None,
           pictures: list | None = None):
    """Every check of the module docstring but the cell re-runs; ``(cell names, {cell: (report path, sha256 of
    the bytes checked)}, values compared, version, the reference's cell reports (the same pairs), the summary's
    evidence, evidence_rule and warnings, the clean cell's windows settings as a reference is compared by
    them)``. ``doc``: the summary already parsed (a reference: from the bytes hashed), else read from ``path``.
    ``pictures``: a list to which each "not compared" entry of the pictures is added (:func:`_pictures`).
    Raises VerificationError listing every difference found."""
    from rfbench.io.files import read_json
    from rfbench.report.robustness import NOTES, _first, aggregate, cell_marks, reproducer_argv, sweep_evidence
    from rfbench.report.robustness_settings import RobustnessSettings, cell_name

    if doc is None:
        doc = read_json(path, "robustness")
    base = path.parent
    differences: list[dict] = []
    compared = 0

    def differ(where: str, recorded, found) -> None:
        differences.append({"path": where, "report": recorded, "rerun": found})

    from rfbench.report.common import is_version

    version = doc["rfbench_version"]
    if not is_version(version):
        raise FormatError(f"{path}: rfbench_version {str(version)[:60]!r} is not a version rfbench writes")
    # the grid
    s = doc["settings"]
    if not isinstance(s, Mapping) or not isinstance(s.get("severities"), list):
        raise FormatError(f"{path}: settings is not the settings of a sweep")
    try:
        settings = RobustnessSettings(corruptions=tuple(s["corruptions"]),
                                      severities=",".join(str(int(v)) for v in s["severities"]),
                                      seeds=s["seeds"])
    except (RfbenchError, TypeError, ValueError) as exc:
        raise FormatError(f"{path}: settings are not ones rfbench robustness takes ({exc})") from None
    if (list(settings.severity_list) != s["severities"] or list(settings.corruptions) != s["corruptions"]
            or not all(type(v) is int for v in s["severities"])):  # 1.0 == 1 in Python, not in what rfbench writes
        raise FormatError(f"{path}: settings are not written as rfbench robustness writes them")
    entries = list(doc["cells"])
    grid = [(e["corruption"], e["severity"], e["seed"]) for e in entries]
    compared += 1
    if grid != settings.cells() or not all(type(v) is int for _, sev, seed in grid for v in (sev, seed)):
        seen: set = set()
        twice = [g for g in grid if g in seen or seen.add(g)]
        differ("cells", f"{len(grid)} cell(s)" + (f", {cell_name(*twice[0])} twice" if twice else ""),
               f"the {len(settings.cells())} cells of the settings, each once, in sweep order")
        raise VerificationError(f"{path}: its cells are not the cells of its settings", differences=differences)
    names = {cell_name(*g): e for g, e in zip(grid, entries)}
    # its inputs
    digests = {}
    for key in ("model", "split", "score_like"):
        item = files.resolve(doc[key]["path"], base, f"the summary's {key}")
        digests[key] = files.sha256(item, f"the summary's {key}")
        compared += 1
        if digests[key] != doc[key]["sha256"]:
            differ(f"{key}.sha256", doc[key]["sha256"], digests[key])
    # every cell report
    reports: dict[str, tuple[Path, str]] = {}
    clean = dict(doc["clean"])
    firsts: dict[str, dict] = {}
    docs: dict[str, tuple[dict, Path]] = {}  # each report as parsed from the bytes hashed, and its real path
    models: dict[str, dict] = {}  # each report's first result as a summary copies it ({value, low, high})
    marks: dict[str, tuple] = {}  # each report's evidence tag and warnings
    clean_bound = None  # the clean report's windows settings (but the corruption) and score settings
    for name, entry in [("clean", clean), *names.items()]:
        where = f"cells[{name}]" if name != "clean" else "clean"
        item = files.resolve(entry["report"], base, f"the summary's {name} report")
        digest = files.sha256(item, f"the summary's {name} report")
        reports[name] = (item.path, digest)
        compared += 1
        if digest != entry["sha256"]:
            differ(f"{where}.sha256", entry["sha256"], digest)
            continue
        report = files.document(item, "report", f"the summary's {name} report")
        docs[name] = (report, item.path)
        first = report["results"][0]
        firsts[name] = first
        try:
            marks[name] = cell_marks(report)
        except FormatError as exc:
            raise FormatError(f"{path}: the {name} report {item.path}: {exc}") from None
        n, bound = _bind(report, item.path, entry if name != "clean" else None, digests, files, where, differ)
        compared += n
        if name == "clean":
            clean_bound = bound
        elif clean_bound is not None:  # windows (but the corruption) and scoring: the clean cell's, as the sweep ran
            compared += _same_as_clean(bound, clean_bound, where, differ)
        now = models[name] = _first(report)
        for key in ("value", "low", "high"):
            compared += 1
            if not _close(entry["model"].get(key), now[key]):
                differ(f"{where}.model.{key}", entry["model"].get(key), now[key])
        if name == "clean":
            clean_report = report
        else:
            compared += 1
            clean_value = clean["model"]["value"]
            drop = None if now["value"] is None or clean_value is None else clean_value - now["value"]
            if not _close(entry["drop"].get("value"), drop):
                differ(f"{where}.drop.value", entry["drop"].get("value"), drop)
    if differences:
        raise VerificationError(f"{path}: {len(differences)} value(s) of the summary differ from its files (first: "
                                f"{differences[0]['path']})", differences=differences)
    # what it derives from them
    first = firsts["clean"]
    better = first.get("better")
    metric = {"label": first.get("label"), "better": better,
              "error": "1 − value" if better == "higher" else "the value"}
    derived = {"task": clean_report.get("task"), "metric": metric,
               "baseline": {"value": (first.get("baseline") or {}).get("value")}, "notes": list(NOTES),
               **sweep_evidence([marks[name] for name in ("clean", *names)])}
    for name, f in firsts.items():
        compared += 1
        if (f.get("label"), f.get("better")) != (metric["label"], better):
            differ(f"cells[{name}].metric", [metric["label"], better], [f.get("label"), f.get("better")])
    reference = None
    reference_digest = None
    reference_cells: dict = {}  # the reference's cell reports, clean first: verify re-runs them too
    drops = [("", entries, docs)]  # whose paired intervals verify recomputes: this sweep's, its reference's
    if doc.get("reference") is not None:
        if not reference_allowed:
            raise FormatError(f"{path}: a reference sweep that names a reference of its own; rfbench robustness "
                              "takes a reference's values from its cells only")
        item = files.resolve(doc["reference"]["path"], base, "the summary's reference")
        compared += 1
        digest = reference_digest = files.sha256(item, "the summary's reference")
        if digest != doc["reference"]["sha256"]:
            differ("reference.sha256", doc["reference"]["sha256"], digest)
        else:
            # checked as parsed from the bytes hashed, and scaled by the same document: never a second read
            reference = files.document(item, "robustness", "the summary's reference")
            try:
                ref_names, ref_reports, ref_compared, _, _, _, ref_windows, ref_drops = _check(
                    item.path, files, reference_allowed=False, doc=reference)
                compared += ref_compared
                drops += [("the reference's ", ref_entries, ref_docs) for _, ref_entries, ref_docs in ref_drops]
                reference_cells = {name: ref_reports[name] for name in ["clean", *ref_names]}
            except VerificationError as exc:
                raise VerificationError(f"{path}: its reference {item.path}: {exc}",
                                        differences=exc.differences) from None
            # a reference for this sweep, as rfbench robustness takes one (check_reference): the same task, metric,
            # split, cells and windows (its clean cell's windows settings but the corruption)
            from rfbench.report.robustness import reference_differs

            compared += 1
            ref_differs = reference_differs(reference, clean_report.get("task"), metric["label"], digests["split"],
                                            settings.record(), clean_bound.get("window_settings"), ref_windows)
            if ref_differs:
                differ("reference", f"{doc['reference']['path']}: " + "; ".join(ref_differs),
                       "a sweep of another model over the same cells (task, metric, split, corruptions × severities "
                       "× seeds, windows settings but the corruption)")
    derived.update(aggregate(better, clean, entries, derived["baseline"]["value"], reference))
    ref_path = doc["reference"]["path"] if doc.get("reference") is not None else None
    derived["reproducer"] = {"argv": reproducer_argv(doc["model"]["path"], doc["split"]["path"],
                                                     doc["score_like"]["path"], settings, ref_path)}
    for key, value in derived.items():
        compared += 1
        if not _same(doc.get(key), value):
            differ(key, doc.get(key), value)
    level = (clean_report.get("bootstrap") or {}).get("level")  # the level of the sweep's paired bootstrap too
    compared += _whole(doc, settings, digests, reference_digest, models, derived, level, differ)
    compared += _score_like_binds(doc, base, files, clean_report, reports["clean"][0], clean_bound, differ)
    compared += _pictures(doc, base, files, differ, pictures if pictures is not None else [])
    if differences:
        raise VerificationError(f"{path}: {len(differences)} value(s) of the summary differ from its files (first: "
                                f"{differences[0]['path']})", differences=differences)
    evidence = {key: derived[key] for key in ("evidence", "evidence_rule", "warnings")}
    return (names, reports, compared, version, reference_cells, evidence, clean_bound.get("window_settings"),
            drops)


def _routine_note(note: str) -> bool:
    """A cell verdict's note the summary's verdict need not repeat: the chain replayed bit for bit, a warning of
    the report (the summary's evidence lines name each one)."""
    return (note.startswith("chain replayed:") and "identical bit for bit" in note) or \
        note.startswith("the report warns:")


def _recompute_drops(path: Path, prefix: str, entries: Sequence[Mapping], docs: Mapping, files: _Files,
                     limits, only: set | None = None, reruns: Mapping | None = None) -> int:
    """Each drop's paired interval (``cells[i].drop.low/.high/.level``) computed again as ``rfbench robustness``
    computes it (:class:`~rfbench.report.robustness.Pairing`): the clean cell's ground truth read from the
    dataset in a closed world (the clean report's chain resolved and hashed as verify re-runs it:
    :func:`~rfbench.report.closed_world.close_world`, every file read the bytes hashed), the predictions each
    cell report scored (``pred.npy``, the bytes hashed and matching the report's record), the clean report's
    metric and bootstrap (its reproducer's; the checks above hold every cell to them). ``only``: the names of the
    cells re-run (``--cell``): the others' intervals are left as checked above (the verdict says so), as their
    values rest on their reports' sha256. ``reruns``: for a cell whose re-run gave predictions within tolerance of
    the scored ones (not bit for bit), those (``.npy`` bytes): the interval must come out the same from them too,
    as the cell's own numbers must. Raises VerificationError listing every interval that differs; returns values
    compared."""
    import io

    import numpy as np

    from rfbench.io.world import confined
    from rfbench.report.closed_world import Budget, close_world, read_resolved
    from rfbench.report.robustness import Pairing, _parse_score_argv, cell_name

    todo = [(i, e, cell_name(e["corruption"], e["severity"], e["seed"])) for i, e in enumerate(entries)]
    todo = [t for t in todo if only is None or t[2] in only]
    if not todo:
        return 0
    clean, clean_path = docs["clean"]
    spec, bootstrap, _ = _parse_score_argv(clean["reproducer"]["argv"], clean["task"])
    budget = Budget(getattr(limits, "timeout", 3600.0), int(getattr(limits, "max_gb", 1024.0) * 2**30))
    budget.deadline = min(budget.deadline, files.budget.deadline)
    world = close_world(clean, Path(clean_path), files.root, budget)
    if world.changed:
        raise VerificationError(
            f"{path}: {len(world.changed)} input(s) of the {prefix}clean report changed since it was made ("
            + ", ".join(f"{d['path']} {d['file']}" for d in world.changed[:3]) + "); its drops' intervals not "
            "recomputed", differences=world.changed)
    if "rows" not in world.inputs or "split" not in world.inputs:
        raise FormatError(f"{path}: the {prefix}clean report records no windows index or split")

    def predictions(name: str) -> np.ndarray:
        report, real = docs[name]
        what = f"the predictions of the {prefix}{name} report"
        record = next((i for i in report.get("inputs") or [] if isinstance(i, Mapping) and i.get("role") == "pred"),
                      None)
        if record is None:
            raise FormatError(f"{path}: the {prefix}{name} report records no predictions (input pred)")
        item = world.inputs["pred"] if name == "clean" else files.resolve(record.get("path"), Path(real).parent, what)
        files.budget.reserve(item.size, what)
        data = read_resolved(item, what)  # read once, hashed and parsed from the same bytes
        digest = hashlib.sha256(data).hexdigest()
        if digest != record.get("sha256"):
            raise VerificationError(f"{path}: {what} ({item.path}) changed since the report was made; its drop's "
                                    "interval not recomputed", differences=[
                                        {"path": f"{prefix}cells[{name}].inputs.pred.sha256",
                                         "report": record.get("sha256"), "rerun": digest}])
        try:
            arr = np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise FormatError(f"{path}: {what} ({item.path}) is not a plain .npy array ({exc})") from None
        budget.left()
        return arr

    differences: list[dict] = []
    n = 0
    def rerun(name: str) -> list:
        data = (reruns or {}).get(name)
        if data is None:
            return []
        try:
            return [np.load(io.BytesIO(data), allow_pickle=False)]
        except (ValueError, OSError, EOFError) as exc:
            raise FormatError(f"{path}: the re-run's predictions of the {prefix}{name} cell are not a plain .npy "
                              f"array ({exc})") from None

    clean_pred = predictions("clean")  # verify's own reads, outside the closed world (whose reads are a child's)
    with confined(world.files, world.digests):  # the ground truth: read as a re-run reads it
        pairing = Pairing(clean["task"], spec, bootstrap, world.inputs["split"].path, world.inputs["rows"].path,
                          clean_pred)
    del clean_pred
    pairings = [("", pairing)] + [(" (from the re-runs' own predictions)", pairing.rebased(p))
                                  for p in rerun("clean")]
    for i, e, name in todo:
        preds = [("", predictions(name))] + [(" (from the re-runs' own predictions)", p) for p in rerun(name)]
        drop = e["drop"] if isinstance(e.get("drop"), Mapping) else {}
        for (how_a, pair), (how_b, pred) in ((a, b) for a in pairings for b in preds):
            interval = pair.drop(pred) or {"low": None, "high": None}
            budget.left()
            found = []
            for key in ("low", "high", "level"):
                n += 1
                if not _same(drop.get(key), interval.get(key)) or (key == "level" and
                                                                     ("level" in drop) != ("level" in interval)):
                    found.append({"path": f"{prefix}cells[{i}].drop.{key}{how_a or how_b}",
                                  "report": _shown(drop.get(key)), "rerun": interval.get(key)})
            if found:
                differences += found
                break
    if differences:
        raise VerificationError(f"{path}: {len(differences)} bound(s) of the drops' paired intervals differ when "
                                f"recomputed from the cells' predictions (first: {differences[0]['path']}: "
                                f"{differences[0]['report']!r} in the summary, {differences[0]['rerun']!r} now)",
                                differences=differences)
    return n


def _whole(doc: Mapping, settings, digests: Mapping, reference_digest, models: Mapping, derived: Mapping, level,
           differ) -> int:
    """The whole summary, every key at every level, against the document rfbench robustness writes for what the
    checks above found (the paths it records, the files' digests, each cell's first result, what is derived):
    a key rfbench does not write (a headline, an ``evidence`` tag in a cell entry, a note in the settings) or a
    value of a cell entry no check above names is a difference. The bounds of the drops' paired intervals are
    taken as written here and held to be intervals at ``level`` (the cells' bootstrap level); their values are
    recomputed once the cells are re-run (:func:`_recompute_drops`). Returns values compared."""
    from rfbench.report.robustness import cell_name

    def entry(e: Mapping, name: str) -> dict:
        drop = e["drop"] if isinstance(e.get("drop"), Mapping) else {}
        kept = {k: drop[k] for k in ("low", "high", "level") if k in drop}  # recomputed later: _recompute_drops
        clean_value = models["clean"]["value"]
        value = models[name]["value"]
        return {"corruption": e["corruption"], "severity": e["severity"], "seed": e["seed"],
                "report": f"cells/{name}/report.json", "sha256": e["sha256"], "model": models[name],
                "drop": {"value": None if value is None or clean_value is None else clean_value - value, **kept}}

    ref = doc.get("reference")
    expected = {
        "schema": doc.get("schema"), "rfbench_version": doc.get("rfbench_version"),
        **{key: {"path": doc[key]["path"], "sha256": digests[key]} for key in ("model", "split", "score_like")},
        "settings": settings.record(),
        "reference": None if ref is None else {"path": ref["path"], "sha256": reference_digest},
        "clean": {"report": "clean/report.json", "sha256": doc["clean"]["sha256"], "model": models["clean"]},
        "cells": [entry(e, cell_name(e["corruption"], e["severity"], e["seed"])) for e in doc["cells"]],
        **derived,
    }
    n = _differ_tree("", doc, expected, differ)
    for i, (e, want) in enumerate(zip(doc["cells"], expected["cells"])):  # the intervals, recomputed later, are
        # first what rfbench writes: numbers, low <= high, at the level of the cells' bootstrap
        drop = e.get("drop") if isinstance(e, Mapping) else None
        drop = drop if isinstance(drop, Mapping) else {}
        typed = True
        for key in ("low", "high", "level"):
            value = drop.get(key)
            n += 1
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value) or (key == "level" and not 0 < value < 1)):
                differ(f"cells[{i}].drop.{key}", _shown(value), "a finite number or null (a level in (0, 1))")
                typed = False
        if typed:
            n += _interval(f"cells[{i}].drop", drop, want["drop"]["value"], level, differ)
    return n


def _interval(where: str, drop: Mapping, value, level, differ) -> int:
    """A drop's paired interval as rfbench writes it: both bounds or neither, ``low <= high``, ``level`` the cells'
    bootstrap level (given whenever the bounds are). Not checked: that it holds the drop ``value`` — a percentile
    interval of bootstrap drops need not hold the drop itself (a skewed statistic such as macro-F1, few
    clusters), and an honest summary is never a mismatch. Returns values compared."""
    low, high = drop.get("low"), drop.get("high")
    if (low is None) != (high is None):
        differ(f"{where}.{'high' if high is None else 'low'}", None, "both bounds of the interval or neither")
    elif low is not None:
        if not low <= high:
            differ(f"{where}.low", [low, high], "an interval [low, high] with low <= high")
        if "level" not in drop:
            differ(f"{where}.level", None, level)
    if "level" in drop and not _same(drop["level"], level):
        differ(f"{where}.level", drop["level"], level)
    return 3


def _differ_tree(where: str, found: Any, expected: Any, differ) -> int:
    """Each place ``found`` differs from ``expected``, named by its path (``cells[2].drop.evidence``); a key
    ``expected`` lacks is "not written by rfbench". Returns values compared."""
    if isinstance(found, Mapping) and isinstance(expected, Mapping):
        n = 0
        for key in sorted(set(found) | set(expected), key=str):
            at = f"{where}.{key}" if where else str(key)
            if key not in expected:
                differ(at, _shown(found[key]), "no such key in a summary rfbench writes")
                n += 1
            elif key not in found:
                differ(at, None, _shown(expected[key]))
                n += 1
            else:
                n += _differ_tree(at, found[key], expected[key], differ)
        return n
    if isinstance(found, list) and isinstance(expected, list) and len(found) == len(expected):
        return sum(_differ_tree(f"{where}[{i}]", a, b, differ) for i, (a, b) in enumerate(zip(found, expected)))
    if not _same(found, expected) or (type(expected) is int and type(found) is not int):  # 1.0 is not 1 written
        differ(where, _shown(found), _shown(expected))
    return 1


def _shown(value: Any) -> Any:
    text = repr(value)
    return value if len(text) <= 200 else text[:200] + " …"


def _score_like_binds(doc: Mapping, base: Path, files: _Files, clean_report: Mapping, clean_path: Path,
                      clean_bound: Mapping, differ) -> int:
    """The score-like report the summary names is the one the cells were scored like: the clean cell's score
    settings (metric, bootstrap, report options, parsed from its reproducer) are the score-like report's, its
    windows (but the corruption) are built as the score-like report's were, and its prediction settings (but the
    resource limits: ``clean_bound["predict"]``) are those of the score-like report's prediction record. (The
    sweep takes them from it: a summary naming another report would carry a reproducer that does not make its
    numbers.) Returns values compared."""
    from dataclasses import replace

    from rfbench.datasets.windows import load_index
    from rfbench.report.robustness import _parse_score_argv

    item = files.resolve(doc["score_like"]["path"], base, "the summary's score_like")
    like = files.document(item, "report", "the summary's score_like")

    def settings_of(report: Mapping, report_path: Path, what: str):
        argv = (report.get("reproducer") or {}).get("argv")
        if not isinstance(argv, list) or argv[:2] != ["rfbench", "score"]:
            return None, None
        inputs = {i.get("role"): i for i in report.get("inputs") or [] if isinstance(i, Mapping)}
        rows = inputs.get("rows")
        windows = None
        if rows is not None:
            index = files.resolve(rows.get("path"), report_path.parent, f"the windows index of {what}")
            files.sha256(index, f"the windows index of {what}")
            doc = files.document(index, "windows", f"the windows index of {what}")
            windows = replace(load_index(index.path, check_arrays=False, doc=doc).window_settings(), corrupt=None,
                              corrupt_seed=None)
        try:
            return _parse_score_argv(argv, str(report.get("task"))), windows
        except RfbenchError:
            return None, windows

    (like_spec, like_windows), (clean_spec, clean_windows) = (settings_of(like, item.path, "the score-like report"),
                                                              settings_of(clean_report, clean_path, "clean"))
    if like.get("task") != clean_report.get("task") or like_spec is None or like_spec != clean_spec:
        differ("score_like", f"{doc['score_like']['path']} (scored {like.get('task')!r}, "
               f"{_spec_text(like_spec)})", f"a report scored as the cells were ({_spec_text(clean_spec)})")
    if like_windows != clean_windows:
        differ("score_like.windows", f"{doc['score_like']['path']}'s windows index settings",
               "the clean cell's windows settings (but the corruption)")
    inputs = {i.get("role"): i for i in like.get("inputs") or [] if isinstance(i, Mapping)}
    n, like_predict = _predict_of(inputs, item.path, files, "score_like", differ)
    clean_predict = clean_bound.get("predict")
    if like_predict is not None and clean_predict is not None:
        differs = _differing(like_predict, clean_predict)
        if differs:
            differ("score_like.predict", f"{doc['score_like']['path']}'s prediction settings: " + "; ".join(differs),
                   "the clean cell's prediction settings (but the resource limits)")
    return 2 + n


def _spec_text(spec) -> str:
    if spec is None:
        return "no rfbench score reproducer"
    from dataclasses import asdict

    shown = ("k", "norm", "averaging", "metrics", "top_k", "domains")
    return ", ".join(f"{k}={v}" for k, v in asdict(spec[0]).items() if k in shown)


def _bind(report: Mapping, report_path: Path, entry: Mapping | None, digests: Mapping, files: _Files, where: str,
          differ) -> tuple[int, dict]:
    """A cell report must have been scored on the summary's model and split, over a windows index built with
    the cell's corruption, severity and seed (``entry``; None: clean, no corruption). Returns values compared
    and what :func:`_same_as_clean` compares: ``{"windows": the index's settings but the corruption (None when
    not read), "score": the score settings (:func:`_score_of`)}``."""
    from rfbench.datasets.windows import load_index

    inputs = {i.get("role"): i for i in report.get("inputs") or [] if isinstance(i, Mapping)}
    n = 0
    bound: dict = {"windows": None, "score": _score_of(report)}
    n_predict, bound["predict"] = _predict_of(inputs, report_path, files, where, differ)
    n += n_predict
    for role, key in (("model", "model"), ("split", "split")):
        n += 1
        if (inputs.get(role) or {}).get("sha256") != digests[key]:
            differ(f"{where}.inputs.{role}.sha256", (inputs.get(role) or {}).get("sha256"), digests[key])
    rows = inputs.get("rows")
    if rows is None:
        differ(f"{where}.inputs.rows", None, "the windows index the cell was scored on")
        return n + 1, bound
    item = files.resolve(rows.get("path"), report_path.parent, f"the windows index of the {where} report")
    digest = files.sha256(item, f"the windows index of the {where} report")
    n += 1
    if digest != rows.get("sha256"):
        differ(f"{where}.inputs.rows.sha256", rows.get("sha256"), digest)
        return n, bound
    index = load_index(item.path, check_arrays=False,
                       doc=files.document(item, "windows", f"the windows index of the {where} report"))
    settings = index.doc.get("settings") or {}
    want = (None, None) if entry is None else (f"{entry['corruption']}:{entry['severity']}", entry["seed"])
    got = (settings.get("corrupt"), settings.get("corrupt_seed") if settings.get("corrupt") is not None else None)
    n += 1
    if got != want:
        differ(f"{where}.windows.corrupt", f"{want[0]} seed {want[1]}" if want[0] else "none",
               f"{got[0]} seed {got[1]}" if got[0] else "none")
    bound["windows"] = {k: v for k, v in settings.items() if k not in ("corrupt", "corrupt_seed")}
    if entry is None:  # clean's, as a reference sweep is compared by them (robustness.reference_differs)
        from rfbench.report.robustness import windows_compared

        bound["window_settings"] = windows_compared(index.window_settings())
    return n, bound


def _predict_of(inputs: Mapping, report_path: Path, files: _Files, where: str, differ) -> tuple[int, dict | None]:
    """The prediction settings of the run a report was scored from, from its prediction record (``pred.json``,
    the ``pred-record`` input, read from the bytes its recorded sha256 names) but the resource limits
    (:func:`~rfbench.report.robustness.prediction_settings`); None when not read (a difference is named then).
    Returns values compared and the settings."""
    from rfbench.nn.predict_settings import settings_from_dict
    from rfbench.report.robustness import prediction_settings

    record = inputs.get("pred-record")
    if not isinstance(record, Mapping):
        differ(f"{where}.inputs.pred-record", None, "the prediction record (pred.json) the report was scored from")
        return 1, None
    what = f"the prediction record of the {where} report"
    item = files.resolve(record.get("path"), report_path.parent, what)
    digest = files.sha256(item, what)
    if digest != record.get("sha256"):
        differ(f"{where}.inputs.pred-record.sha256", record.get("sha256"), digest)
        return 1, None
    doc = files.document(item, "prediction", what)
    return 1, prediction_settings(settings_from_dict(doc.get("settings"), f"{item.path}: settings"))


def _score_of(report: Mapping) -> dict | None:
    """A report's score settings: every option of its ``rfbench score`` reproducer (metric, bootstrap, report
    options) and the bootstrap its report records; None when it has no reproducer rfbench writes."""
    from dataclasses import asdict

    from rfbench.report.robustness import _parse_score_argv

    argv = (report.get("reproducer") or {}).get("argv") if isinstance(report.get("reproducer"), Mapping) else None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or argv[:2] != ["rfbench", "score"]:
        return None
    try:
        parsed = _parse_score_argv(argv, str(report.get("task")))
    except (RfbenchError, TypeError, ValueError):
        return None
    score = {"task": report.get("task")}
    for part in parsed:
        score.update(asdict(part))
    score["report.bootstrap"] = report.get("bootstrap")
    return score


def _same_as_clean(bound: Mapping, clean: Mapping, where: str, differ) -> int:
    """A cell's windows settings (but the corruption), prediction settings (but the resource limits) and score
    settings are the clean cell's: the sweep builds, predicts and scores every cell as it does clean, so a cell
    made over another stride (a subset of the frames), predicted from another output of the model (``--output``,
    ``--input``, ``--flatten``, ...) or scored with another bootstrap is not a cell of this sweep. Returns values
    compared."""
    for key, what in (("windows", "windows index settings (but the corruption)"),
                      ("predict", "prediction settings (but the resource limits)"), ("score", "score settings")):
        mine, theirs = bound[key], clean[key]
        if mine is None or theirs is None:
            if mine is not theirs:
                differ(f"{where}.{key}", "none read" if mine is None else "read",
                       f"the clean cell's {what}")
            continue
        differs = _differing(mine, theirs)
        if differs:
            differ(f"{where}.{key}", "; ".join(differs), f"the clean cell's {what}")
    return 3


def _differing(mine: Mapping, theirs: Mapping) -> list[str]:
    """``"KEY MINE, not THEIRS"`` for each key of two settings whose values are not the same (:func:`_same`)."""
    return [f"{k} {_shown(mine.get(k))!r}, not {_shown(theirs.get(k))!r}"
            for k in sorted(set(mine) | set(theirs), key=str) if not _same(mine.get(k), theirs.get(k))]


def _pictures(doc: Mapping, base: Path, files: _Files, differ, unchecked: list) -> int:
    """The pictures beside the summary, drawn again from it (when matplotlib is installed) and compared byte for
    byte; a picture of one of its corruptions that is not there (a sweep run without matplotlib draws none), or
    every picture when matplotlib is not installed here, is added to ``unchecked`` as not compared. Returns values
    compared."""
    import tempfile

    from rfbench.report.plots import PLOT_HINT, have_matplotlib
    from rfbench.report.robustness import _picture_name
    from rfbench.report.robustness import _pictures as draw

    beside = sorted(p.name for p in base.glob("robustness-*.png"))
    absent = [name for name in (_picture_name(str(c.get("corruption"))) for c in doc.get("corruptions") or ()
                                if isinstance(c, Mapping)) if name not in beside]
    alike = _alike_pictures(base, set(beside))
    if alike:  # a reader opening the folder sees these as the sweep's pictures: say they are not
        shown = ", ".join(repr(n) for n in alike[:4]) + (f" and {len(alike) - 4} more" if len(alike) > 4 else "")
        unchecked.append({"field": f"files named like the pictures ({shown})",
                          "why": "beside the summary but not a picture of it (their names differ from "
                                 "robustness-<corruption>.png in case, spaces or invisible characters): not "
                                 "compared; only the pictures named exactly so are the sweep's"})
    if beside and not have_matplotlib():
        unchecked.append({"field": f"pictures ({len(beside)})",
                          "why": "not drawn again: " + PLOT_HINT})
        return 0
    if absent:
        unchecked.append({"field": f"pictures {', '.join(absent[:4])}{' …' if len(absent) > 4 else ''}",
                          "why": "not beside the summary (a sweep run without matplotlib draws none): not compared"})
    if not beside:
        return 0
    with tempfile.TemporaryDirectory(prefix="rfbench-verify-") as tmp:
        drawn = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in draw(doc, Path(tmp))}
    for name in beside:
        item = files.resolve(name, base, "a picture beside the summary")
        if drawn.get(name) != files.sha256(item, "a picture beside the summary"):
            differ(f"pictures.{name}", "the picture beside the summary", "not the picture of the summary's values")
    return len(beside)


#: Most entries of the summary's folder looked at for files named like its pictures.
_LIST_AT_MOST = 100_000


def _alike_pictures(base: Path, exact: set) -> list[str]:
    """The names in ``base`` (the first :data:`_LIST_AT_MOST` entries) that read as a sweep's picture's —
    ``robustness-….png`` once case, spaces and invisible characters are left out
    (:func:`rfbench.names.plain_name`) — but are not one of the ``exact`` names verify compares: a
    ``Robustness-Noise.PNG``, or ``robustness-noise.png`` followed by a zero-width space, holding another picture,
    sat beside a MATCH unmentioned (found by an adversarial probe)."""
    from rfbench.names import plain_name

    found = []
    try:
        with os.scandir(base) as it:
            for k, e in enumerate(it):
                if k >= _LIST_AT_MOST:
                    break
                plain = plain_name(e.name)
                if e.name not in exact and plain.startswith("robustness") and plain.endswith(".png"):
                    found.append(e.name)
    except OSError:
        return []
    return sorted(found)


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):  # true is not 1 (Python's == says it is)
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return _close(a, b)
    return a == b
