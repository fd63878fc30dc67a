"""Pieces every task of ``rfbench score`` shares: loading and hashing inputs, checking the scored rows
against the split, choosing bootstrap clusters and running the paired cluster bootstrap.

A task (pose, gesture) reduces its rows to per-cluster tables whose column totals determine every number
(:mod:`rfbench.metrics.stats`); :func:`paired_intervals` puts the model's and each baseline's tables side by
side so that model, baseline and model − baseline are evaluated on the same draws.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from rfbench.errors import FormatError, ValidationError
from rfbench.io.files import load_npy
from rfbench.metrics.stats import MAX_CLUSTERS, MAX_REPLICATES, METHOD, cluster_bootstrap
from rfbench.protocols.splitfile import SplitInfo, as_groups, check_side, load_split
from rfbench.report.evidence import input_record

__all__ = [
    "CLUSTER_BY",
    "load_array",
    "check_bootstrap_settings",
    "check_scored_rows",
    "resolve_clusters",
    "paired_intervals",
    "bootstrap_section",
    "ci_entry",
    "check_input_files",
    "record_inputs",
    "split_notes",
    "load_split_input",
    "coverage_section",
    "shared_files",
    "check_shared",
    "provenance_section",
]

CLUSTER_BY = ("recording", "subject")


def load_array(path: str | os.PathLike, option: str) -> np.ndarray:
    """Load one ``.npy`` array without pickles; a clear error for anything else."""
    return load_npy(path, option)


def check_input_files(files: Sequence[tuple[str, str | None, Any]]) -> None:
    """Every ``(role, option, path)`` with a path must be an existing file (FormatError otherwise)."""
    for _role, option, path in files:
        if path is None:
            continue
        path = Path(path)
        if not path.exists():
            raise FormatError(f"{option} {path}: no such file")
        if path.is_dir():
            raise FormatError(f"{option} {path}: is a directory, expected a file")


def record_inputs(files: Sequence[tuple[str, str | None, Any]], base: Path | None) -> list[dict[str, Any]]:
    """:func:`~rfbench.report.evidence.input_record` of every ``(role, option, path)`` with a path."""
    return [input_record(role, path, base=base, option=option) for role, option, path in files if path is not None]


def check_bootstrap_settings(cluster_by: str, n_boot: Any, level: Any, seed: Any) -> None:
    """Validate ``cluster_by``, the number of replicates, the confidence level and the seed up front."""
    if cluster_by not in CLUSTER_BY:
        raise ValidationError(f"cluster_by must be recording or subject, got {cluster_by!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or not 0 <= n_boot <= MAX_REPLICATES:
        raise ValidationError(f"the number of bootstrap replicates must be an integer in 0..{MAX_REPLICATES}, got "
                              f"{n_boot!r}")
    if not (isinstance(level, (int, float)) and not isinstance(level, bool) and 0.0 < level < 1.0):
        raise ValidationError(f"the confidence level must lie strictly between 0 and 1, got {level!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValidationError(f"the bootstrap seed must be an integer >= 0, got {seed!r}")


def check_scored_rows(split: SplitInfo | None, groups, n_rows: int) -> np.ndarray | None:
    """The scored rows' recording ids as strings, checked to lie on the split's test side (when a split is
    given, ids are required)."""
    if split is not None and not isinstance(split, SplitInfo):
        raise ValidationError("split must be a SplitInfo (rfbench.protocols.splitfile.load_split)")
    if split is not None and groups is None:
        raise ValidationError("a split needs `groups` (the recording id of every scored row) to check that the "
                              "rows come from its test side")
    if groups is None:
        return None
    groups = as_groups(groups, n_rows, "`groups`")
    if split is not None:
        check_side(groups, split, "test", "`groups`")
    return groups


def resolve_clusters(groups: np.ndarray | None, cluster_by: str, subjects: Mapping[str, str] | None,
                     n_boot: int) -> tuple[np.ndarray | None, str | None]:
    """Cluster id per row for the bootstrap, or ``(None, why not)``."""
    if n_boot == 0:
        return None, "turned off (0 replicates)"
    if groups is None:
        return None, ("no recording ids (--groups): resampling single rows would understate the uncertainty of "
                      "correlated rows, so no interval is given")
    if cluster_by == "subject":
        if subjects is None:
            raise ValidationError("clustering by subject needs the recording → subject map (the split's manifest)")
        missing = sorted({g for g in np.unique(groups) if g not in subjects})
        if missing:
            raise ValidationError(f"{len(missing)} recording ids have no subject in the manifest (e.g. "
                                  f"{missing[0]!r}); cluster by recording instead")
        clusters = np.array([subjects[g] for g in groups])
    else:
        clusters = groups
    n = np.unique(clusters).size
    if n > MAX_CLUSTERS:
        raise ValidationError(f"{n} distinct {cluster_by} ids exceed the bootstrap's limit of {MAX_CLUSTERS}; pass "
                              f"recording ids, cluster by subject, or use `replicates` 0")
    return clusters, None


def paired_intervals(model: np.ndarray, baselines: Mapping[str, np.ndarray],
                     statistics: Sequence[Callable[[np.ndarray], np.ndarray]], *, n_boot: int, level: float,
                     seed: int, skip: Callable[[str, int], bool] = lambda name, i: False) -> dict:
    """Bootstrap intervals of every statistic for the model, each baseline, and model minus each baseline,
    all from one set of cluster draws over the tables placed side by side.

    Returns a dict keyed ``("model", i)``, ``(name, i)`` and ``("delta", name, i)`` of
    :class:`~rfbench.metrics.stats.Interval`; ``skip(name, i)`` leaves a baseline's statistic out.
    """
    width = model.shape[1]
    full = np.hstack([model] + [baselines[name] for name in baselines])
    offsets = {name: width * (k + 1) for k, name in enumerate(baselines)}
    stats = {}
    def columns(f, o):
        return lambda x: f(x[..., o:o + width])

    def delta(f, o):
        return lambda x: f(x[..., :width]) - f(x[..., o:o + width])

    for i, f in enumerate(statistics):
        stats[("model", i)] = columns(f, 0)
        for name, off in offsets.items():
            if skip(name, i):
                continue
            stats[(name, i)] = columns(f, off)
            stats[("delta", name, i)] = delta(f, off)
    return cluster_bootstrap(full, stats, n_boot=int(n_boot), level=level, seed=seed)


def bootstrap_section(n_boot: int, level: float, seed: int, cluster_by: str, clusters: int, paired: bool,
                      notes: list[str]) -> dict[str, Any]:
    """The report's ``bootstrap`` section; adds a note when there are too few clusters."""
    if clusters < 5:
        notes.append(f"only {clusters} {cluster_by} cluster(s): the bootstrap intervals are unreliable")
    return {"method": METHOD, "replicates": int(n_boot), "level": level, "seed": seed, "cluster_by": cluster_by,
            "clusters": clusters, "paired": paired}


def ci_entry(intervals: dict | None, key) -> dict[str, Any] | None:
    """``intervals[key].to_dict()``, or None when absent."""
    if intervals is None or key not in intervals:
        return None
    return intervals[key].to_dict()


def split_notes(split: SplitInfo | None) -> list[str]:
    """Notes a split's protocol calls for (MM-Fi: its "val" side is the test side)."""
    if split is not None and split.protocol.startswith("mmfi"):
        return ["MM-Fi has no separate test set: its 'val' side is this report's test side; choosing a checkpoint "
                "on it and reporting on it is model selection on test data"]
    return []


def load_split_input(split: Path | None, manifest: Path | None, files: list) -> SplitInfo | None:
    """Load and re-check ``split`` against ``manifest`` (default: the one the split names) and add the manifest
    to ``files`` as an input of the report (``(role, option, path)``), so that verify hashes it too."""
    if split is None:
        if manifest is not None:
            raise ValidationError("`manifest` is the manifest of `split`: give the split as well")
        return None
    info = load_split(split, manifest)
    files.append(("manifest", "--manifest", info.manifest_file))
    return info


def coverage_section(split: SplitInfo | None, groups: np.ndarray | None, allow_partial: bool,
                     excluded: Sequence[Mapping[str, Any]] = (),
                     dropped: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any] | None:
    """Which of the split's test recordings the scored rows cover (``None`` without a split).

    Every test recording with at least one frame must be scored; fewer is refused unless ``allow_partial``, and
    then the section (and the report's headline) says how many were scored. ``excluded`` (``[{id, kind,
    reason}]``, from a windows index) are test recordings windows gave no row — an odd record, a missing
    receiver, a label outside the label set: they count as **not scored**, listed with their reasons (a
    recording left out is a number that does not cover the test side, whatever left it out). ``dropped`` (the
    index's ``dropped``: records and windows left out of kept recordings) is counted by reason.

    Raises
    ------
    ValidationError
        Some test recordings are not scored and ``allow_partial`` is false.
    """
    if split is None:
        return None
    from rfbench.datasets.windows.index import dropped_counts, excluded_counts, excluded_summary

    test = sorted(split.test)
    out_of_reach = {str(e.get("id")): e for e in excluded}
    required = [r for r in test if int((split.recordings.get(r) or {}).get("frames", 1) or 0) > 0
                or r in out_of_reach]
    scored = set(np.unique(groups).tolist()) if groups is not None else set()
    missing = [r for r in required if r not in scored]
    done = len(required) - len(missing)
    by_windows = [out_of_reach[r] for r in missing if r in out_of_reach]
    if missing and not allow_partial:
        shown = ", ".join(missing[:3]) + (" …" if len(missing) > 3 else "")
        why = (f"; {len(by_windows)} of them excluded by windows: {excluded_summary(by_windows)}"
               if by_windows else "")
        raise ValidationError(f"the scored rows cover {done} of {len(required)} test recordings of the split "
                              f"(missing: {shown}{why}); score every test recording, or pass `allow_partial` to "
                              f"report on a subset — the report then says how many were scored and why")
    out = {"test_recordings": len(required), "scored_recordings": done, "missing_count": len(missing),
           "missing": missing[:50], "allowed_partial": bool(allow_partial),
           "test_recordings_without_frames": len(test) - len(required)}
    if excluded:
        out["excluded_by_windows"] = [{"id": str(e.get("id")), "kind": str(e.get("kind") or "other"),
                                       "reason": str(e.get("reason"))}
                                      for e in sorted(out_of_reach.values(), key=lambda e: str(e.get("id")))]
        out["excluded_by_windows_counts"] = excluded_counts(excluded)
    if dropped:
        out["dropped_by_windows"] = dropped_counts(dropped)
    return out


#: What an rfbench version looks like (``0.1.0``, ``1.2.3rc1``, ``1.2.3.dev4+g1a2b3c.d20261207``): a release,
#: pre-release, post- or development release, and a build's local label as setuptools-scm writes one (``+g`` and
#: a commit, maybe ``.d`` and a date). A report, index or summary naming anything else as its version was not
#: written by rfbench, and verify refuses it (it is shown to readers): a local label is no place for words
#: (``0.1.0+independently.audited`` read as a claim in report.md).
VERSION = re.compile(r"[0-9]{1,9}(\.[0-9]{1,9}){0,3}((a|b|rc)[0-9]{1,9})?(\.post[0-9]{1,9})?(\.dev[0-9]{1,9})?"
                     r"(\+g[0-9a-f]{4,40}(\.d[0-9]{8})?)?")


def is_version(text: Any) -> bool:
    """Whether ``text`` reads as an rfbench version (:data:`VERSION`)."""
    return isinstance(text, str) and VERSION.fullmatch(text) is not None


def shared_files(split: SplitInfo | None) -> list[dict[str, str]]:
    """The dataset files a split's train and test sides share byte for byte, from the sha256 the manifest
    records (empty files, which hold nothing, are left out): ``[{sha256, train, test}]`` with one path of each
    side, sorted."""
    if split is None:
        return []

    def by_digest(ids) -> dict:
        out: dict = {}
        for rid in sorted(ids):
            for f in (split.recordings.get(rid) or {}).get("files") or []:
                if isinstance(f, Mapping) and isinstance(f.get("sha256"), str) and f.get("bytes"):
                    out.setdefault(f["sha256"], f.get("path"))
        return out

    train, test = by_digest(split.train), by_digest(split.test)
    return [{"sha256": d, "train": str(train[d]), "test": str(test[d])} for d in sorted(set(train) & set(test))]


def check_shared(split: SplitInfo | None, synthetic: bool, allowed: bool) -> tuple[list[dict[str, str]], dict | None]:
    """The leakage checks of a split's two sides that ``score`` makes itself, each refused
    (:class:`~rfbench.errors.LeakageError`, exit 1) for a report that would be MEASURED unless ``allowed``: byte
    copies first (:func:`_check_shared_files`: cheap, and they name the files), then shared content
    (:func:`_check_shared_content`). Returns ``(shared files, content check or None)``."""
    shared = _check_shared_files(split, synthetic, allowed)
    return shared, _check_shared_content(split, synthetic, allowed)


def _check_shared_files(split: SplitInfo | None, synthetic: bool, allowed: bool) -> list[dict[str, str]]:
    """:func:`shared_files`, refused (:class:`~rfbench.errors.LeakageError`, exit 1) for a report that would be
    MEASURED unless ``allowed``: a test side holding byte copies of training files measures memory, not
    generalisation."""
    from rfbench.errors import LeakageError

    shared = shared_files(split)
    if shared and not synthetic and not allowed:
        names = "; ".join(f"{s['train']} (train) = {s['test']} (test)" for s in shared[:3])
        raise LeakageError(f"the split's train and test sides share {len(shared)} byte-identical dataset file(s) "
                           f"({names}{'; ...' if len(shared) > 3 else ''}): the test side repeats training data. "
                           f"Drop the duplicates (rfbench ingest ... --drop-duplicates, or rfbench audit SPLIT "
                           f"--content to see them all), or pass `allow_shared_files` to score anyway (the report "
                           f"then says so)")
    return shared


def _check_shared_content(split: SplitInfo | None, synthetic: bool, allowed: bool) -> dict | None:
    """The content check (:mod:`rfbench.protocols.content`) of a split's two sides for a report that would be
    MEASURED: a test recording holding a training recording's records or frames under another name — a copy
    with a byte changed, a log re-saved, a profile under another header — measures memory, not generalisation,
    like a byte copy (:func:`_check_shared_files`), and is refused the same way (:class:`~rfbench.errors.
    LeakageError`, exit 1) unless ``allowed``.

    Returns the check (``{name: "content-disjoint", passed, detail}``) for the report's split audit, or None when
    it was not run here: generated data, no split or manifest, or a split whose own audit checked content (made
    with ``--content``: it was checked again when the split was loaded, and a failure refused there)."""
    from rfbench.errors import LeakageError
    from rfbench.protocols.content import CHECK_CONTENT, audit_content

    if split is None or synthetic or split.manifest_object is None:
        return None
    if any(isinstance(c, Mapping) and c.get("name") == CHECK_CONTENT for c in split.audit.get("checks") or []):
        return None
    found = audit_content(split.manifest_object, sorted(split.train), sorted(split.test),
                          manifest_path=split.manifest_file)
    if not found.passed and not allowed:
        raise LeakageError(f"the split's train and test sides hold the same content under different names "
                           f"({found.detail()}): the test side repeats training data. See them all with rfbench "
                           f"audit SPLIT --content; drop them from the dataset, or pass `allow_shared_files` to score "
                           f"anyway (the report then says so)", checks=[found.check()])
    return found.check()


def provenance_section(split: SplitInfo | None, synthetic_declared: bool, ground_truth: str,
                       ground_truth_files: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """Where the data and the ground truth come from, as far as rfbench can tell (the report's
    ``provenance``)."""
    if split is None:
        out = {"synthetic": bool(synthetic_declared),
               "data": "input provenance unknown: no split (and so no manifest) was given"}
    else:
        out = {"synthetic": bool(split.provenance.get("synthetic")), "data": str(split.provenance.get("data"))}
    if synthetic_declared and not out["synthetic"]:
        out["synthetic"] = True
        out["data"] += "; declared synthetic by the user (--synthetic)"
    out["ground_truth"] = ground_truth
    if ground_truth_files is not None:
        out["ground_truth_files"] = [dict(f) for f in ground_truth_files]
    return out


#: ``provenance.ground_truth`` when rfbench read it from the dataset itself (``rfbench score --rows``).
GT_FROM_DATASET = ("read from the dataset by rfbench (score --rows: the test side's windows index, its targets taken "
                   "from the dataset files the manifest names, never from a file the user made)")


#: ``provenance.ground_truth`` when the ground truth comes in a file the user made.
GT_SUPPLIED = ("supplied by the user (--gt): rfbench checked its shape and values against the predictions, not "
               "where it came from")


# -- the orchestration both tasks share --------------------------------------------------------------------


def baseline_coverage_note(split: SplitInfo | None, train_recordings: int) -> str | None:
    """A note when the baseline's training rows come from fewer recordings than the split's train side: a
    baseline made from a subset (one class, a few recordings) is weaker than the side's, and a model's lead over
    it larger, so the report says so wherever the subset came from."""
    if split is None or train_recordings >= len(split.train):
        return None
    return (f"the baseline was built from {train_recordings} of the split's {len(split.train)} train recordings: a "
            f"baseline from part of the train side can be weaker than the whole side's, and the model's lead over "
            f"it larger")


def check_baseline_request(split: SplitInfo | None, train_gt, train_groups, *also) -> bool:
    """Whether a baseline was asked for (any training input given, ``also`` included); a baseline needs the
    split and both the training ground truth and its row → recording ids.

    Raises
    ------
    ValidationError
        Training inputs without a split, or one of ``train_gt`` / ``train_groups`` without the other.
    """
    want = train_gt is not None or train_groups is not None or any(x is not None for x in also)
    if want and split is None:
        raise ValidationError("a baseline needs `split`: the training rows' recording ids must be checked against "
                              "the split's train side")
    if want and (train_gt is None or train_groups is None):
        raise ValidationError("a baseline needs both `train_gt` and `train_groups`")
    return want


def no_baseline_section(split: SplitInfo | None, what: str) -> dict[str, Any]:
    """The report's ``baseline`` when none was built: why not (``what``: "ground truth", "labels")."""
    if split is None:
        return {"kind": None, "reason": f"no split given: a baseline needs the training split's {what} (--split, "
                                        f"--train-gt, --train-groups)"}
    return {"kind": None, "reason": f"no training {what} given (--train-gt, --train-groups)"}


def bootstrap_for(table: np.ndarray, baseline_tables: Mapping[str, np.ndarray], statistics, clusters,
                  n_clusters: int, boot_off_reason: str | None, *, cluster_by: str, n_boot: int, level: float,
                  seed: int, notes: list[str], skip: Callable[[str, int], bool] = lambda name, i: False):
    """``(intervals or None, the report's bootstrap section)``: the paired cluster bootstrap of every statistic
    for the model, each baseline and their differences, or why there is none."""
    if clusters is None:
        return None, {"method": None, "reason": boot_off_reason}
    intervals = paired_intervals(table, baseline_tables, statistics, n_boot=n_boot, level=level, seed=seed,
                                 skip=skip)
    return intervals, bootstrap_section(n_boot, level, seed, cluster_by, n_clusters, bool(baseline_tables), notes)


def ci_triple(intervals: dict | None, i: int, baseline: str) -> dict[str, Any] | None:
    """A result's ``ci``: the model's interval, the (primary) baseline's and their difference's."""
    if intervals is None:
        return None
    return {"model": ci_entry(intervals, ("model", i)), "baseline": ci_entry(intervals, (baseline, i)),
            "delta": ci_entry(intervals, ("delta", baseline, i))}


def finish_report(task: str, *, results: list, split: SplitInfo | None, provenance: dict, coverage: dict | None,
                  notes: list[str], extra_notes: Sequence[str], sections: Mapping[str, Any], baseline: dict,
                  bootstrap: dict, reproducer: Mapping | None, inputs, evidence: str | None,
                  chain: list | None = None) -> dict[str, Any]:
    """The report document of a task (:func:`rfbench.report.build.build_report`), with the sections every task
    shares — provenance and coverage first — and the split's notes after the task's own."""
    from rfbench.report.build import build_report

    notes = list(notes) + split_notes(split) + list(extra_notes)
    all_sections = {"provenance": provenance, "coverage": coverage, **sections}
    if chain is not None:
        all_sections["chain"] = chain
    return build_report(task=task, results=results, reproducer=reproducer, inputs=inputs,
                        synthetic=provenance["synthetic"], split=split.to_report() if split is not None else None,
                        baseline=baseline, bootstrap=bootstrap, notes=notes, sections=all_sections, evidence=evidence)
