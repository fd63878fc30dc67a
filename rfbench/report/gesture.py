"""The gesture (classification) task of ``rfbench score``: labels or scores in, a checked report out.

:func:`gesture_report` scores the model over a label set, builds the majority-class and class-prior baselines
from the training split (when given), runs the paired cluster bootstrap, breaks accuracy and macro-F1 down by
domain value (room, location, orientation, subject) from the split's manifest and assembles the report,
through the steps every task shares (:mod:`rfbench.report.common`). :func:`rfbench.report.score.score_gesture`
is the stage: it loads and hashes input files, records the reproducer and writes the report.

Each result holds, beside the schema's ``model``, ``baseline``, ``delta`` and ``ci`` (whose baseline is the
majority class), a ``baselines`` list with both trivial baselines — ``{kind, value, delta, ci: {value,
delta}}`` for ``majority-class`` and ``class-prior`` — all from the same paired bootstrap draws. Task sections:
``labels`` (the label set, its sha256, classes absent from test/training), ``classes`` (per-class counts,
precision, recall, F1, training count), ``confusion`` (rows = true class), ``domains`` (accuracy and macro-F1
per domain value for the model and both baselines; the split's held-out key and values are flagged) and
``data``.

Labels are class names; with the split's manifest at hand, each scored (and training) row's label must equal
the manifest's gesture name of its recording — Widar3.0 gesture *numbers* mean different gestures on different
dates, so the manifest names them from the per-date table and rfbench refuses labels that disagree.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from rfbench.datasets.manifest import CLASS_KEYS, class_key
from rfbench.datasets.values import value_sort_key
from rfbench.errors import ValidationError
from rfbench.metrics.classify import (
    ClassPlan,
    LabelSet,
    as_label_set,
    class_table,
    majority_table,
    per_class,
    prepare_labels,
    prior_table,
    totals_table,
)
from rfbench.metrics.stats import Segments, column_totals, make_segments
from rfbench.protocols.splitfile import SplitInfo
from rfbench.report.baseline import class_baselines
from rfbench.report.common import (
    GT_SUPPLIED,
    baseline_coverage_note,
    bootstrap_for,
    check_baseline_request,
    check_bootstrap_settings,
    check_scored_rows,
    ci_entry,
    ci_triple,
    coverage_section,
    finish_report,
    no_baseline_section,
    provenance_section,
    resolve_clusters,
)
from rfbench.report.render import UNSEEN_WARNING

__all__ = ["gesture_report", "DOMAIN_KEYS", "BASELINES", "LABEL_KEYS"]

#: Domain keys of the per-domain breakdown, in display order (``subject`` is Widar's user).
DOMAIN_KEYS = ("room", "location", "orientation", "subject")
#: The two trivial baselines, in report order; the first is the report's ``baseline``.
BASELINES = ("majority-class", "class-prior")
#: Manifest keys a recording's class name is read from (Widar gestures, MM-Fi actions), in that order.
LABEL_KEYS = CLASS_KEYS  # (the manifest's own label first, as windows reads it)


def _parse_domains(domains) -> tuple[str, tuple[str, ...]]:
    """``("auto" | "list" | "none", keys)``."""
    if domains is None or domains == "auto":
        return "auto", DOMAIN_KEYS
    if domains == "none":
        return "none", ()
    keys = tuple(dict.fromkeys(str(k).strip() for k in domains))
    for k in keys:
        if k not in DOMAIN_KEYS:
            raise ValidationError(f"unknown domain key {k!r}; choose from {', '.join(DOMAIN_KEYS)} (or auto, none)")
    if not keys:
        raise ValidationError("no domain key given; use auto, none, or a list of room, location, orientation, subject")
    return "list", keys


def _label_key(recordings: Mapping[str, Mapping], ids) -> str | None:
    """The class key (:func:`rfbench.datasets.manifest.class_key`) of the recordings ``ids``."""
    return class_key([recordings.get(g, {}) for g in ids])


def check_labels_against_manifest(codes: np.ndarray, groups: np.ndarray, recordings: Mapping[str, Mapping],
                                  label_set: LabelSet, key: str, option: str) -> int:
    """Each row's class name must be the manifest's ``key`` (``gesture``/``action``) of its recording.

    Returns the number of rows checked (rows whose recording has no name are not checked).

    Raises
    ------
    ValidationError
        A row's label differs from its recording's name, or that name is not in the label set.
    """
    unique, inverse = np.unique(groups, return_inverse=True)
    index = {n: i for i, n in enumerate(label_set.names)}
    expected = np.full(unique.size, -1, dtype=np.int64)
    for u, rid in enumerate(unique):
        name = recordings.get(str(rid), {}).get(key)
        if name is None:
            continue
        if str(name) not in index:
            raise ValidationError(f"{option}: the manifest names {key} {name!r} for recording {str(rid)!r}, which "
                                  "is not in the label set; add it to `label_set`")
        expected[u] = index[str(name)]
    want = expected[inverse]
    checked = want >= 0
    bad = checked & (want != codes)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        rid = str(groups[i])
        rec = recordings.get(rid, {})
        number = ""
        if rec.get("gesture_number") is not None:
            number = f" (gesture number {rec['gesture_number']} on {rec.get('date')})"
        raise ValidationError(
            f"{option}: {int(bad.sum())} row(s) disagree with the manifest, e.g. row {i} is labelled "
            f"{label_set.names[codes[i]]!r} but recording {rid!r} is {label_set.names[want[i]]!r}{number}; Widar3.0 "
            f"gesture numbers mean different gestures on different dates — label rows with the manifest's {key} "
            f"names")
    return int(checked.sum())


def _value_key(value) -> str:
    return f"{type(value).__name__}:{value}"


def _domain_breakdown(keys, mode: str, labels, groups: np.ndarray, recordings: Mapping[str, Mapping], split,
                      baselines, notes: list[str]) -> list[dict[str, Any]]:
    """Accuracy and macro-F1 per value of each domain key, for the model and the baselines."""
    dplan = ClassPlan.create(labels.label_set, metrics=["accuracy", "macro-f1"])
    held_key = split.held_out_key if split is not None else None
    held_values = {_value_key(v) for v in (split.held_out if split is not None else ())}
    out = []
    for key in keys:
        values = [recordings.get(g, {}).get(key) for g in groups.tolist()]
        has = np.array([v is not None for v in values], dtype=bool)
        if not has.any():
            if mode == "list":
                notes.append(f"no per-domain breakdown by {key}: the manifest's test recordings carry no {key}")
            continue
        rows = np.flatnonzero(has)
        raw = {}
        for i in rows:
            raw.setdefault(_value_key(values[i]), values[i])
        vkeys = np.array([_value_key(values[i]) for i in rows])
        segs = make_segments(rows.size, vkeys)
        # Segments index the selected rows; map them back to row numbers of the full arrays.
        segs_full = Segments(np.ascontiguousarray(rows[segs.order], dtype=np.int64), segs.start, segs.labels)
        table = class_table(labels.true, labels.pred, np.empty(0, np.int64), (), segs_full, dplan.n_classes)
        sides = {"model": table}
        if baselines is not None:
            sides["majority-class"] = majority_table(table, dplan, baselines.majority, baselines.class_rank)
            sides["class-prior"] = prior_table(table, dplan, baselines.prior)
        entries = []
        for s, vk in enumerate(segs.labels):
            members = segs_full.order[segs.start[s]:segs.start[s + 1]]
            entry = {"value": raw[vk], "held_out": (key == held_key and vk in held_values),
                     "rows": int(members.size), "recordings": int(np.unique(groups[members]).size)}
            for side, tab in sides.items():
                acc, mf1 = dplan.scores(tab[s])
                entry[side] = {"accuracy": acc.value, "macro_f1": mf1.value, "classes_averaged": mf1.classes_averaged}
            entries.append(entry)
        entries.sort(key=lambda e: value_sort_key(e["value"]))
        out.append({"key": key, "held_out": key == held_key, "values": entries,
                    "rows_without_value": int((~has).sum())})
    return out


def _sub(score, kind: str | None = None) -> dict[str, Any] | None:
    if score is None:
        return None
    d = score.to_dict()
    if kind is not None:
        d["kind"] = kind
    return d


def gesture_report(pred, gt, *, labels=None, metrics: Sequence[str] | None = None,
                   top_k: Sequence[int] | None = None, split: SplitInfo | None = None, groups=None, train_gt=None,
                   train_groups=None, cluster_by: str = "recording", recordings: Mapping[str, Mapping] | None = None,
                   domains="auto", n_boot: int = 1000, level: float = 0.95, seed: int = 0, synthetic: bool = False,
                   reproducer: Mapping | None = None, inputs: Sequence[Mapping[str, Any]] | None = None,
                   evidence: str | None = None, extra_notes: Sequence[str] = (),
                   allow_partial: bool = False, ground_truth: str = GT_SUPPLIED,
                   ground_truth_files=None, excluded=(), dropped=(), chain=None) -> dict[str, Any]:
    """Score class predictions and build a ``rfbench.report/1`` document (task ``gesture``).

    Parameters
    ----------
    pred : array_like, (N,) or (N, C)
        Predicted labels (names or label-set indices) or scores (one column per class, label-set order).
    gt : array_like, (N,)
        True labels (names or label-set indices).
    labels : LabelSet, sequence of str or path, optional
        The declared label set; inferred from string labels (scored, predicted and training) when omitted.
    metrics, top_k
        As :func:`rfbench.metrics.classify.evaluate_classification`.
    split : SplitInfo, optional
        The split the rows come from (:func:`rfbench.protocols.splitfile.load_split`); needs ``groups``.
    groups : array_like, (N,), optional
        Recording id of each scored row; all on the split's test side.
    train_gt, train_groups : array_like, optional
        Training labels and their recording ids (all on the split's train side) for the majority-class and
        class-prior baselines; a baseline cannot be built from anything else.
    cluster_by : {"recording", "subject"}
        Bootstrap clusters; ``subject`` reads subjects from ``recordings``.
    recordings : mapping, optional
        Recording id → manifest recording (:func:`rfbench.protocols.splitfile.manifest_records`): domain values
        for the breakdown, subjects, and the class name each row's label is checked against.
    domains : "auto", "none" or sequence of str
        Keys of the per-domain breakdown (``room``, ``location``, ``orientation``, ``subject``); ``auto`` = those
        the test recordings carry.
    n_boot, level, seed : int, float, int
        Bootstrap replicates (0 turns it off), confidence level and seed.
    synthetic : bool
        The data is generated (also implied by ``split.synthetic``): the report is tagged SYNTHETIC.
    reproducer, inputs : optional
        ``{argv, cwd}`` and the input records; without a reproducer the report is CLAIMED.
    evidence : str, optional
        Expected tag; an error unless the facts support it.
    allow_partial : bool
        Allow scoring a subset of the split's test recordings (refused otherwise); the report's ``coverage``
        says how many were scored.
    ground_truth, ground_truth_files, excluded, dropped
        Where the ground truth comes from (the report's ``provenance``; default: supplied by the user), the
        dataset files it was read from, the test recordings a windows index excluded (with reasons: they count
        as not scored) and what it dropped of the others (records, windows).
    """
    check_bootstrap_settings(cluster_by, n_boot, level, seed)
    mode, domain_keys = _parse_domains(domains)
    want_baseline = check_baseline_request(split, train_gt, train_groups)
    extra = ()
    if train_gt is not None and as_label_set(labels) is None:
        extra = (train_gt,)
    lab = prepare_labels(pred, gt, labels, extra=extra)
    label_set = lab.label_set
    plan = ClassPlan.create(label_set, metrics=metrics, top_k=top_k, has_scores=lab.from_scores)
    n_rows = lab.rows
    groups = check_scored_rows(split, groups, n_rows)
    coverage = coverage_section(split, groups, allow_partial, excluded, dropped)
    train_idx = label_set.encode(train_gt, "training labels") if train_gt is not None else None
    provenance = provenance_section(split, synthetic, ground_truth, ground_truth_files)
    notes = list(plan.notes)

    checked_key = None
    if recordings is not None and groups is not None:
        checked_key = _label_key(recordings, np.unique(groups).tolist())
        if checked_key is not None:
            n_checked = check_labels_against_manifest(lab.true, groups, recordings, label_set, checked_key, "`gt`")
            if n_checked < n_rows:
                notes.append(f"{n_rows - n_checked} scored row(s) come from recordings without a {checked_key} name "
                             f"in the manifest: their labels could not be checked")
            if train_idx is not None and train_groups is not None:
                tg = np.asarray(train_groups).astype(str)
                if tg.shape == (train_idx.shape[0],):
                    check_labels_against_manifest(train_idx, tg, recordings, label_set, checked_key, "`train_gt`")

    subjects = None
    if cluster_by == "subject" and recordings is not None:
        subjects = {rid: str(r["subject"]) for rid, r in recordings.items() if r.get("subject") is not None}
    clusters, boot_off_reason = resolve_clusters(groups, cluster_by, subjects, n_boot)
    if clusters is not None:
        segments = make_segments(n_rows, clusters)
        table = plan.table(lab, segments)
    else:
        segments = None
        table = totals_table(lab, plan)
    totals = column_totals(table)
    model_scores = plan.scores(totals)

    baselines = None
    tables: dict[str, np.ndarray] = {}
    base_scores: dict[str, list] = {}
    if want_baseline:
        baselines = class_baselines(train_idx, train_groups, split, groups, label_set.names)
        partial = baseline_coverage_note(split, baselines.train_recordings)
        if partial:
            notes.append(partial)
        tables = {"majority-class": majority_table(table, plan, baselines.majority, baselines.class_rank),
                  "class-prior": prior_table(table, plan, baselines.prior)}
        base_scores = {name: plan.scores(t) for name, t in tables.items()}
        baseline_section = baselines.to_report()
    else:
        baseline_section = no_baseline_section(split, "labels")

    def undefined_for(name: str, i: int) -> bool:
        return name == "class-prior" and plan.specs[i].metric == "top-k"

    intervals, boot = bootstrap_for(table, tables, [plan.statistic(i) for i in range(len(plan.specs))], clusters,
                                    segments.count if segments is not None else 0, boot_off_reason,
                                    cluster_by=cluster_by, n_boot=n_boot, level=level, seed=seed, notes=notes,
                                    skip=undefined_for)

    results = []
    for i, (spec, ms) in enumerate(zip(plan.specs, model_scores)):
        entries = []
        for name in BASELINES if base_scores else ():
            bs = base_scores[name][i]
            value = None if undefined_for(name, i) else bs.value
            delta = None if value is None or ms.value is None else ms.value - value
            entry = {"kind": name, "value": value, "delta": delta,
                     "ci": None if intervals is None else {"value": ci_entry(intervals, (name, i)),
                                                           "delta": ci_entry(intervals, ("delta", name, i))}}
            if undefined_for(name, i):
                entry["reason"] = "a label drawn from the class prior has no ranking, so no top-k"
            entries.append(entry)
        primary = base_scores[BASELINES[0]][i] if base_scores else None
        delta = entries[0]["delta"] if entries else None
        results.append({"metric": spec.metric, "spec": spec.to_dict(), "label": spec.label, "better": "higher",
                        "model": _sub(ms), "baseline": _sub(primary, BASELINES[0]), "delta": delta,
                        "ci": ci_triple(intervals, i, BASELINES[0]), "baselines": entries})

    # Classes: per-class numbers, and which declared classes the data never shows.
    classes = per_class(totals, plan)
    train_counts = baselines.counts if baselines is not None else None
    for c, entry in enumerate(classes):
        entry["train"] = int(train_counts[c]) if train_counts is not None else None
    absent_test = [e["class"] for e in classes if e["support"] == 0 and e["predicted"] == 0]
    absent_train = [e["class"] for e in classes if e["train"] == 0] if train_counts is not None else None
    nowhere = ([e["class"] for e in classes if e["support"] == 0 and e["train"] == 0]
               if train_counts is not None else None)
    unseen = [e for e in classes if e["train"] == 0 and e["support"] > 0] if train_counts is not None else []
    if unseen:  # a closed-set classifier is scored on rows of classes it was never taught
        k = sum(e["support"] for e in unseen)
        notes.append(f"{UNSEEN_WARNING}: {k} of {int(n_rows)} scored rows ({k / max(int(n_rows), 1):.1%}) are of "
                     f"class(es) absent from the training side ({', '.join(e['class'] for e in unseen)}): no model "
                     "trained on this split can have learnt them, so the numbers over them measure the protocol (a "
                     "held-out key that follows the class), not learning; score the classes both sides hold (split "
                     "--gestures) to compare models")
    if absent_test:
        notes.append(f"{len(absent_test)} declared class(es) appear in neither the test labels nor the predictions "
                     f"({', '.join(absent_test)}): reported with undefined precision, recall and F1 and left out of "
                     f"the macro averages")
    if nowhere:
        notes.append(f"{len(nowhere)} declared class(es) appear in neither the training nor the test labels "
                     f"({', '.join(nowhere)})")
    present = [e["class"] for e in classes if e["support"] > 0]
    if len(present) == 1:
        notes.append(f"every scored row is of one class ({present[0]}): a model that always predicts it scores "
                     "accuracy 1.0, so these numbers say nothing about telling classes apart")
    confusion = lab.confusion

    # Per-domain breakdown.
    if mode == "none":
        domain_section = {"keys": [], "reason": "turned off (--domains none)"}
    elif groups is None or recordings is None:
        if groups is None:
            why = "no recording ids (--groups)"
        elif split is None:
            why = "no split given (--split): domain values come from its manifest"
        else:
            why = "the split's manifest is not available"
        if mode == "list":
            raise ValidationError(f"a per-domain breakdown needs the split's manifest and `groups`; {why}")
        domain_section = {"keys": [], "reason": why}
    else:
        domain_section = {"source": "the split's manifest",
                          "keys": _domain_breakdown(domain_keys, mode, lab, groups, recordings, split, baselines,
                                                    notes)}

    sections = {
        "labels": {**label_set.to_dict(), "checked_against_manifest": checked_key,
                   "absent_from_test_and_predictions": absent_test, "absent_from_training": absent_train,
                   "absent_from_training_and_test": nowhere},
        "classes": classes,
        "confusion": {"rows": "true class", "columns": "predicted class", "classes": list(label_set.names),
                      "matrix": confusion.tolist()},
        "domains": domain_section,
        "data": {"rows": int(n_rows), "classes": label_set.size,
                 "predictions": "scores (argmax; ties to the lower class index)" if lab.from_scores else "labels",
                 "recordings": int(np.unique(groups).size) if groups is not None else None},
    }
    return finish_report("gesture", results=results, split=split, provenance=provenance, coverage=coverage,
                         notes=notes, extra_notes=extra_notes, sections=sections, baseline=baseline_section,
                         bootstrap=boot, reproducer=reproducer, inputs=inputs, evidence=evidence,
                         chain=chain)
