"""``rfbench robustness``: a model's score under seeded CSI corruptions × severities × seeds, each cell a verifiable
report, and the summary of the sweep (``DIR/summary.json``, ``rfbench.robustness/1``).

The sweep takes everything but the corruption from a report the model was already scored in (``score_like``, a
report of ``rfbench score --rows``): the window settings from its windows index, the prediction settings from its
prediction record, the metric spec, bootstrap and report options from its reproducer. It then runs, in this
process and in order, the clean cell and every (corruption, severity, seed) cell: ``windows`` (the test side,
with ``corrupt`` and ``corrupt_seed`` set) → ``predict`` (the model read once, X memory-mapped, batch by batch) →
``score`` into ``DIR/clean/`` and ``DIR/cells/<corruption>-<severity>-seed<seed>/``. The test side's dataset files
are read, checked and parsed once, by the clean run, which keeps what it decoded (each receiver log, WiFi frame,
ground truth) in a temporary folder inside ``DIR`` (a
:class:`~rfbench.datasets.windows.dataset_files.Reading`, removed when the sweep ends); every cell's windows are
built from it, the very bytes ``rfbench windows --corrupt`` writes alone. Each cell is an ordinary
report with its chain (``rfbench verify`` re-runs it like any other); the summary holds one entry per cell with
its report's path and sha256, the first result's value and interval, and its drop from clean, bootstrapped over
the same clusters and draws as clean (paired), plus each corruption's corruption error (CE) and the mean (mCE):

- ``ce_vs_baseline[c] = Σ_s E(c, s) / Σ_s E_baseline`` (the baseline does not see the CSI, so its error is the
  same for every cell);
- with a reference sweep (``reference``, a summary.json of another model over the same cells),
  ``ce[c] = Σ_s E(c, s) / Σ_s E_ref(c, s)`` and ``relative_ce[c] = Σ_s (E(c, s) − E(clean)) / Σ_s (E_ref(c, s)
  − E_ref(clean))`` (ImageNet-C's definitions),

where E is the error of the first result: ``1 − value`` for a metric where higher is better (PCK, accuracy),
the value itself otherwise (MPJPE). Seeds are averaged before the sums.

The summary carries what its cells' reports say their numbers are (:func:`cell_marks`, :func:`sweep_evidence`):
an evidence tag (SYNTHETIC when any cell report is, MEASURED only when every one is) and the warnings the cell
reports carry (a layout not verified, a leakage-prone split, partial scoring or shared files allowed by the score
settings the cells inherit from the score-like report), each with the number of cell reports that carry it.
"""

from __future__ import annotations

import math
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from rfbench.csi.corruption_table import corruption
from rfbench.errors import FormatError, OutputExistsError, RfbenchError, ValidationError
from rfbench.io.documents import MAX_JSON_BYTES
from rfbench.report.robustness_settings import RobustnessSettings, cell_name, parse_severities
from rfbench.settings import _kind, flag_of, options_of

__all__ = ["RobustnessSettings", "run_robustness", "parse_severities", "SUMMARY_FILE", "cell_name",
           "ScoreLike", "score_like", "aggregate", "read_reference", "check_reference", "reference_differs",
           "cell_marks", "sweep_evidence", "evidence_lines", "reference_windows", "windows_compared",
           "prediction_settings", "Pairing"]

SUMMARY_FILE = "summary.json"


# -- the score-like report ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreLike:
    """What a sweep takes from a report scored with ``--rows``: its task, window settings (corruption cleared),
    prediction settings and score settings (metric spec, bootstrap, report options)."""

    path: Path
    task: str
    windows: Any
    predict: Any
    spec: Any
    bootstrap: Any
    options: Any
    label: str
    better: str


def _parse_score_argv(argv: list, task: str):
    from rfbench.report.settings import BootstrapSettings, GestureSettings, PoseSettings, ReportOptions

    classes = [PoseSettings if task == "pose" else GestureSettings, BootstrapSettings, ReportOptions]
    by_flag = {flag_of(f): (cls, f) for cls in classes for f, _ in options_of(cls)}
    values: dict = {cls: {} for cls in classes}
    i = 2
    while i < len(argv):
        flag = argv[i]
        if flag in by_flag:
            cls, f = by_flag[flag]
            kind = _kind(f)
            if kind == "bool":
                values[cls][f.name] = True
                i += 1
                continue
            if i + 1 >= len(argv):
                raise ValidationError(f"the reproducer's {flag} has no value")
            text = argv[i + 1]
            try:
                values[cls][f.name] = int(text) if kind == "int" else float(text) if kind == "float" else text
            except ValueError:
                raise ValidationError(f"the reproducer's {flag} {text!r} is not a number") from None
            i += 2
        elif flag in ("--plots", "--force", "--no-plots"):
            i += 1
        else:  # an input or output path (--pred, --rows, --split, -o, ...) or the task: the sweep sets its own
            i += 2
    return tuple(cls(**values[cls]) for cls in classes)


def score_like(path) -> ScoreLike:
    """Read a report scored with ``--rows`` and what a sweep takes from it (see :class:`ScoreLike`).

    Raises
    ------
    ValidationError, FormatError
        A report without a windows index and prediction record (one not scored with ``--rows`` from
        ``rfbench predict``'s output), or whose reproducer does not parse.
    """
    from rfbench.datasets.windows import load_index
    from rfbench.io.files import read_json
    from rfbench.nn.prediction_record import load_prediction_record

    path = Path(path)
    doc = read_json(path, "report")
    task = doc.get("task")
    if task not in ("pose", "gesture"):
        raise ValidationError(f"{path}: not a pose or gesture report (task {task!r})")
    inputs = {i.get("role"): i for i in doc.get("inputs") or [] if isinstance(i, dict)}
    if "rows" not in inputs or "pred-record" not in inputs:
        raise ValidationError(f"{path}: the report was not scored from a windows index and rfbench predict's "
                              "record (score --rows); a sweep repeats that chain, so it needs one that was")
    argv = (doc.get("reproducer") or {}).get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or argv[:2] != ["rfbench", "score"]:
        raise ValidationError(f"{path}: the report has no rfbench score reproducer")
    from rfbench.io.paths import resolve

    base = path.parent
    index = load_index(resolve(inputs["rows"]["path"], base, what="the report's windows index").path,
                       check_arrays=False)
    windows = replace(index.window_settings(), corrupt=None, corrupt_seed=None)
    record = load_prediction_record(resolve(inputs["pred-record"]["path"], base,
                                            what="the report's prediction record").path)
    spec, bootstrap, options = _parse_score_argv(argv, task)
    results = doc.get("results") or []
    if not results or not isinstance(results[0], dict):
        raise ValidationError(f"{path}: the report has no result")
    return ScoreLike(path, task, windows, record.settings, spec, bootstrap, options, str(results[0].get("label")),
                     str(results[0].get("better")))


#: The prediction settings that bound a run's resources (address space, CPU time, wall-clock time): they decide
#: whether a run finishes, never what it predicts. Every other prediction setting (the input and output, the
#: flattening, batching, threads, sessions, tolerance, random operators) is the sweep's: each cell's is the clean
#: cell's, and the clean cell's is the score-like report's.
PREDICT_LIMITS = ("memory_mb", "cpu_seconds", "timeout")


def prediction_settings(settings) -> dict:
    """``settings`` (a :class:`~rfbench.nn.predict_settings.PredictSettings`) as a dict, but the resource limits
    (:data:`PREDICT_LIMITS`): what a sweep holds every cell's prediction run to."""
    from dataclasses import asdict

    return {k: v for k, v in asdict(settings).items() if k not in PREDICT_LIMITS}


def windows_compared(settings) -> dict:
    """A :class:`~rfbench.datasets.windows.WindowSettings` as sweeps are compared by it: every field but the
    corruption (``corrupt``, ``corrupt_seed``), a label set by its real path."""
    from dataclasses import asdict

    values = {k: v for k, v in asdict(settings).items() if k not in ("corrupt", "corrupt_seed")}
    if values.get("label_set"):
        values["label_set"] = os.path.realpath(values["label_set"])
    return values


def differing_fields(mine: Mapping, theirs: Mapping) -> list[str]:
    """``"KEY MINE, not THEIRS"`` for each key whose values differ, in key order."""
    return [f"{k} {mine.get(k)!r}, not {theirs.get(k)!r}" for k in sorted(set(mine) | set(theirs), key=str)
            if mine.get(k) != theirs.get(k) or type(mine.get(k)) is not type(theirs.get(k))]


# -- paired drops -------------------------------------------------------------------------------------------


class Pairing:
    """The first result's statistic over rows, for the clean predictions and any cell's, from one set of cluster
    draws (the report's bootstrap settings and clusters): the drop ``clean − cell`` with its interval.
    ``task``, ``spec`` and ``bootstrap`` are the clean report's score settings (a :class:`ScoreLike`'s, or those
    verify parses from a clean report's reproducer); ``split`` and ``index_path`` the clean cell's split and test
    index (the ground truth is read from the dataset: :func:`~rfbench.datasets.windows.test_truth`)."""

    def __init__(self, task: str, spec, bootstrap, split, index_path: Path, clean_pred: np.ndarray):
        from rfbench.datasets.windows import test_truth
        from rfbench.protocols.splitfile import load_split
        from rfbench.report.common import resolve_clusters

        truth = test_truth(split, index_path)
        info = load_split(split)
        groups = np.asarray([r["id"] for r in truth.rows])
        subjects = {rid: str(r["subject"]) for rid, r in info.recordings.items() if r.get("subject") is not None}
        b = bootstrap
        self.task, self.spec, self.bootstrap = task, spec, bootstrap
        self.clusters, _ = resolve_clusters(groups, b.cluster_by, subjects, b.replicates)
        self.gt = truth.y
        self.names = tuple((truth.labels or {}).get("names") or ())
        self.clean = self._table(clean_pred)

    def _table(self, pred: np.ndarray):
        from rfbench.metrics.stats import make_segments

        n = self.gt.shape[0]
        segments = make_segments(n, self.clusters)
        s = self.spec
        if self.task == "pose":
            from rfbench.metrics.pose_inputs import validate_poses
            from rfbench.metrics.pose_plan import PosePlan
            from rfbench.metrics.skeletons import get_skeleton

            skel = get_skeleton(s.skeleton)
            p, gt, vis = validate_poses(pred, self.gt, None, skel.n_joints)
            plan = PosePlan.create(skeleton=skel, units=s.units, dims=gt.shape[2], metrics=s.metrics,
                                   normalizations=s.norm, ks=s.k, comparison=s.comparison, averaging=s.averaging,
                                   auc_n=s.auc_n, auc_max=s.auc_max, oks_area=s.oks_area, sigmas=s.sigmas,
                                   convention=s.convention, batch_size=s.batch_size)
            ok = plan.bootstrappable(0)
            return plan, plan.table(p, gt, vis, segments), ok
        from rfbench.metrics.classify import ClassPlan, LabelSet, prepare_labels

        lab = prepare_labels(pred, self.gt, LabelSet(self.names))
        plan = ClassPlan.create(lab.label_set, metrics=s.metrics, top_k=s.top_k, has_scores=lab.from_scores)
        return plan, plan.table(lab, segments), True

    def rebased(self, clean_pred: np.ndarray) -> "Pairing":
        """The same ground truth and cluster draws over other clean predictions (verify: the re-run's own)."""
        import copy

        other = copy.copy(self)
        other.clean = self._table(clean_pred)
        return other

    def drop(self, pred: np.ndarray) -> dict | None:
        """``{value, low, high}`` of clean minus the cell, or None without a bootstrap."""
        from rfbench.report.common import paired_intervals

        plan, clean, ok = self.clean
        _, table, _ = self._table(pred)
        b = self.bootstrap
        if self.clusters is None or not ok or b.replicates == 0:
            return None
        iv = paired_intervals(clean, {"cell": table}, [plan.statistic(0)], n_boot=b.replicates,
                              level=b.confidence, seed=b.seed)
        d = iv[("delta", "cell", 0)].to_dict()
        return {"low": d.get("low"), "high": d.get("high"), "level": d.get("level")}


# -- the sweep ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sweep:
    """What a sweep wrote: the summary document and its path, the cells' count, the pictures."""

    summary: dict
    path: Path
    pictures: list


def _sha256(path: Path) -> str:
    from rfbench.io.files import sha256_file

    return sha256_file(path)[0]


def _first(report: dict) -> dict:
    r = report["results"][0]
    ci = ((r.get("ci") or {}).get("model")) or {}
    return {"value": r["model"]["value"], "low": ci.get("low"), "high": ci.get("high")}


def _error(value, better: str):
    if value is None:
        return None
    return 1.0 - value if better == "higher" else value


def _ratio(num, den):
    if num is None or den is None or den == 0 or not math.isfinite(num) or not math.isfinite(den):
        return None
    return num / den


@contextmanager
def _kept_reading(out: Path) -> Iterator:
    """A :class:`~rfbench.datasets.windows.dataset_files.Reading` in a temporary folder inside ``out``, removed
    when the sweep ends, however it ends (``out`` too, when the sweep made it and it is left empty)."""
    import shutil
    import tempfile

    from rfbench.datasets.windows.dataset_files import Reading
    from rfbench.errors import OutputError

    made = [d for d in (out, *out.parents) if not d.exists()]
    try:
        out.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=".reading-", dir=out))
    except OSError as exc:
        raise OutputError(f"{out}: cannot make the sweep's folder ({exc.strerror or exc})") from None
    try:
        yield Reading(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        for d in made:
            try:
                d.rmdir()
            except OSError:
                break


def _refuse_inside_tree(out: Path, split) -> None:
    """Refuse a sweep folder in the dataset tree of the split's manifest (:func:`rfbench.io.files.refuse_inside_tree`;
    a split or manifest that cannot be read is left to the sweep's own checks)."""
    from rfbench.datasets.manifest import dataset_tree_of
    from rfbench.io.files import refuse_inside_tree
    from rfbench.protocols.splitfile import named_manifest

    try:
        manifest = named_manifest(split)
    except (RfbenchError, OSError):
        return
    tree = dataset_tree_of(manifest)
    if tree is not None:
        refuse_inside_tree([out], tree[0], folders=True, parts=tree[1],
                           what="the sweep's windows, predictions and reports written there")


def _check_sweep_folder(out: Path, summary_path: Path, force: bool) -> dict | None:
    """A sweep writes many files in ``out`` (each cell's windows, predictions and report, the pictures): without
    ``force`` the folder must be new or empty; with it, it must hold a sweep rfbench wrote (its summary.json a
    robustness summary) or be empty — a folder of the user's is never written into file by file. Returns the
    earlier sweep's summary (None for a new or empty folder)."""
    if os.path.lexists(out) and not os.path.isdir(out):
        raise OutputExistsError(f"{out} exists and is not a folder")
    try:
        held = os.listdir(out) if os.path.isdir(out) else []
    except OSError as exc:
        raise OutputExistsError(f"{out}: cannot list it ({exc.strerror or exc})") from None
    if not held:
        return None
    if not force:
        raise OutputExistsError(f"{out} is not empty; give an empty or new folder, or --force to replace a sweep "
                                "rfbench wrote there")
    from rfbench.io.files import read_json, schema_id

    try:
        doc = read_json(summary_path, "robustness") if os.path.isfile(summary_path) and \
            not os.path.islink(summary_path) else None
    except RfbenchError:
        doc = None
    ours = isinstance(doc, dict) and doc.get("schema") == schema_id("robustness")
    if not ours:
        raise OutputExistsError(f"{out} holds files but no robustness summary rfbench wrote ({SUMMARY_FILE}); "
                                "--force replaces a sweep, never a folder of your own: give an empty or new folder")
    why = _not_written_by_rfbench(doc)
    if why is not None:
        raise OutputExistsError(f"{summary_path}: not one rfbench robustness writes ({why}); --force replaces a "
                                "sweep rfbench wrote, never a folder of your own: nothing was written or removed, "
                                "give an empty or new folder")
    return doc


def _finite_or_none(value: Any) -> bool:
    return value is None or (type(value) in (int, float) and math.isfinite(value))


def _not_written_by_rfbench(doc: Mapping) -> str | None:
    """Why the earlier summary ``doc`` is not one rfbench robustness writes, None when its shape is: its settings
    are ones the command takes, written as it writes them (as ``rfbench verify`` checks them), its cells are
    their cells in sweep order, and the values its pictures are drawn from (each corruption's levels, the clean
    and baseline values, the metric's label) are the settings' corruptions and severities and finite numbers.
    Checked before anything of the earlier sweep is read or drawn."""
    s = doc.get("settings")
    if not isinstance(s, Mapping) or not isinstance(s.get("severities"), list) or \
            not isinstance(s.get("corruptions"), list):
        return "its settings are not the settings of a sweep"
    try:
        settings = RobustnessSettings(corruptions=tuple(s["corruptions"]),
                                      severities=",".join(str(int(v)) for v in s["severities"]),
                                      seeds=s.get("seeds"))
        grid = settings.cells()
    except (RfbenchError, TypeError, ValueError, OverflowError) as exc:
        return f"its settings are not ones rfbench robustness takes: {' '.join(str(exc).split())[:160]}"
    severities = list(settings.severity_list)
    if severities != s["severities"] or list(settings.corruptions) != s["corruptions"] or \
            not all(type(v) is int for v in s["severities"]):
        return "its settings are not written as rfbench robustness writes them"
    cells = doc.get("cells")
    if not isinstance(cells, list) or len(cells) != len(grid) or not all(
            isinstance(e, Mapping) and (e.get("corruption"), e.get("severity"), e.get("seed")) == g
            and type(e.get("severity")) is int and type(e.get("seed")) is int for e, g in zip(cells, grid)):
        return "its cells are not the cells of its settings, each once, in sweep order"
    items = doc.get("corruptions")
    if not isinstance(items, list) or len(items) != len(settings.corruptions):
        return "its corruptions are not the corruptions of its settings"
    for cid, item in zip(settings.corruptions, items):
        levels = item.get("levels") if isinstance(item, Mapping) else None
        if item.get("corruption") != cid or item.get("unit") != corruption(cid).unit or \
                not isinstance(levels, list) or len(levels) != len(severities):
            return "its corruptions are not the corruptions of its settings"
        if not all(isinstance(lv, Mapping) and type(lv.get("severity")) is int and lv.get("severity") == sev
                   and _finite_or_none(lv.get("value")) for lv, sev in zip(levels, severities)):
            return f"the levels of {cid} are not its settings' severities, each with a finite value or null"
    clean, baseline, metric = doc.get("clean"), doc.get("baseline"), doc.get("metric")
    model = clean.get("model") if isinstance(clean, Mapping) else None
    if not isinstance(model, Mapping) or not _finite_or_none(model.get("value")) or \
            not isinstance(baseline, Mapping) or not _finite_or_none(baseline.get("value")):
        return "its clean and baseline values are not finite numbers or null"
    if not isinstance(metric, Mapping) or not isinstance(metric.get("label"), str):
        return "its metric has no label"
    return None


# -- what a sweep writes, and what --force may replace -------------------------------------------------------

#: The files a sweep writes in each cell's folder (``clean/``, ``cells/<name>/``), relative to it.
CELL_FILES = ("windows/X.npy", "windows/y.npy", "windows/index.json", "pred.npy", "pred.json", "report.json",
              "report.md")

#: The folder of a cell a summary lists, from its report's path (a name of letters, digits, ``-`` and ``_``).
_CELL_REPORT = re.compile(r"(clean|cells/[A-Za-z0-9_-]+)/report\.json")
_PICTURE = re.compile(r"robustness-[A-Za-z0-9_-]+\.png")


def _kind_at(path: Path) -> str | None:
    """What is at ``path``, no link followed: None (nothing), ``folder``, ``file`` (a regular one), or what else
    it is (``a symbolic link``, ``a FIFO``, ...)."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"


def _on_the_way(out: Path, rel: str) -> tuple[str, str] | None:
    """The first folder on the way from ``out`` to ``out/rel`` that is there but not a real folder (a link, a
    file, ...): ``(its path relative to out, what it is)``; None when each is a real folder or absent."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        sub = "/".join(parts[:i])
        kind = _kind_at(out / sub)
        if kind is None:
            return None
        if kind != "folder":
            return sub, "a file" if kind == "file" else kind
    return None


def _not_a_real_folder(out: Path, rel: str) -> None:
    """Refuse to write ``out/rel`` when a folder on its way is a link (or anything but a real folder): a sweep
    writes only into real folders inside its own, never through a link out of it.

    Raises
    ------
    OutputExistsError
    """
    way = _on_the_way(out, rel)
    if way is not None:
        raise OutputExistsError(f"{out / way[0]} is {way[1]}, not a folder: a sweep writes only into real folders "
                                "inside its own, never through a link; remove it, or give an empty or new folder")


def _refuse(out: Path, rel: str, what: str, interrupted: bool = False) -> OutputExistsError:
    """The refusal of ``out/rel``; ``interrupted``: a file a run of the sweep may have written (in a cell's folder,
    a file no summary lists or that changed) — an earlier ``--force`` run stopped before it wrote its summary
    leaves such files, and the message says what to do then."""
    then = (f"; it may be a file of a --force run in {out} interrupted before it wrote its summary: if that "
            f"is what happened, remove {out} (or that cell's folder) and run again") if interrupted else ""
    return OutputExistsError(f"{out / rel} is {what}: --force replaces only what the earlier sweep wrote in {out}, "
                             "each file still as its summary records it, and never goes through a link; nothing "
                             f"was written or removed: move it away, or give an empty or new folder{then}")


def _recorded(out: Path, rel: str, sha256: Any, keep: bool = False) -> bytes | bool:
    """Whether the earlier sweep's file ``out/rel`` (its sha256 recorded) is there as recorded: False when it is
    absent; True (with ``keep``, its bytes) when it is.

    Raises
    ------
    OutputExistsError
        Something is there that is not the file as recorded (another content, a link on the way or at it, a FIFO).
    """
    import hashlib
    import stat

    way = _on_the_way(out, rel)
    if way is not None:
        raise _refuse(out, way[0], way[1])
    kind = _kind_at(out / rel)
    if kind is None:
        return False
    if kind != "file":
        raise _refuse(out, rel, "a folder" if kind == "folder" else kind)
    try:
        fd = os.open(out / rel, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _refuse(out, rel, f"unreadable ({exc.strerror or exc})") from None
    h = hashlib.sha256()
    kept = bytearray()
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(out, rel, "not a regular file")
        if keep and info.st_size > MAX_JSON_BYTES:  # (a JSON document of the earlier sweep's: read whole)
            raise _refuse(out, rel, f"{info.st_size} bytes, more than the {MAX_JSON_BYTES} rfbench reads for a JSON "
                          "document, so not the earlier sweep's")
        while block := fh.read(1 << 20):
            h.update(block)
            if keep:
                kept += block
                if len(kept) > MAX_JSON_BYTES:  # (it grew since)
                    raise _refuse(out, rel, f"more than the {MAX_JSON_BYTES} bytes rfbench reads for a JSON "
                                  "document, so not the earlier sweep's")
    if h.hexdigest() != sha256:
        raise _refuse(out, rel, "not what the earlier sweep's summary records there (it changed since)",
                      interrupted=rel.startswith(("clean/", "cells/")))
    return bytes(kept) if keep else True


def _earlier_json(out: Path, rel: str, data: bytes) -> Any:
    """The earlier sweep's JSON document ``out/rel`` (its bytes ``data``, as its sha256 was recorded) parsed
    within the bounds of :mod:`rfbench.io.documents` (nesting, values, numbers).

    Raises
    ------
    OutputExistsError
        It is outside them: not a document rfbench writes, whatever sha256 the summary records for it.
    """
    from rfbench.io.documents import parse_json_bytes

    try:
        return parse_json_bytes(data, str(out / rel))
    except FormatError as exc:
        raise OutputExistsError(f"{exc} — not a file rfbench writes, though the earlier sweep's summary records its "
                                "sha256; nothing was written or removed: give an empty or new folder") from None


def _earlier_outputs(out: Path, doc: Mapping) -> set[str]:
    """The files of the earlier sweep in ``out`` (whose summary ``doc`` is) that are still there as it recorded
    them, relative to ``out``: each cell's report (its sha256 in the summary) and its report.md (the report
    rendered), the predictions, prediction record and windows index the report names with their sha256, the
    X.npy and y.npy that index names with theirs, each picture of the summary's values (drawn again, byte for
    byte; with matplotlib), and the summary itself. Each is reached through real folders only.

    Raises
    ------
    OutputExistsError
        One of them is there but not as recorded (:func:`_recorded`), or a report or windows index is more than
        rfbench reads or parses as JSON (:func:`_earlier_json`), whatever sha256 the summary records for it.
    """
    import hashlib

    from rfbench.report.render import render_markdown

    own = {SUMMARY_FILE}
    cells = doc.get("cells") if isinstance(doc.get("cells"), list) else []
    for entry in (doc.get("clean"), *cells):
        rel = entry.get("report") if isinstance(entry, Mapping) else None
        match = _CELL_REPORT.fullmatch(rel) if isinstance(rel, str) else None
        if match is None:
            continue
        folder = match.group(1)
        data = _recorded(out, rel, entry.get("sha256"), keep=True)
        if not data:
            continue
        own.add(rel)
        report = _earlier_json(out, rel, data)
        try:
            page = render_markdown(report).encode("utf-8", "backslashreplace")
        except (ValueError, TypeError, KeyError, AttributeError, IndexError):  # (its sha256 says rfbench wrote it)
            continue
        if not isinstance(report, dict):
            continue
        if _recorded(out, f"{folder}/report.md", hashlib.sha256(page).hexdigest()):
            own.add(f"{folder}/report.md")
        inputs = report.get("inputs") if isinstance(report.get("inputs"), list) else []
        named = {i.get("role"): i for i in inputs if isinstance(i, dict)}
        for role, name in (("pred", "pred.npy"), ("pred-record", "pred.json"), ("rows", "windows/index.json")):
            record = named.get(role) or {}
            if record.get("path") != name:
                continue
            got = _recorded(out, f"{folder}/{name}", record.get("sha256"), keep=role == "rows")
            if not got:
                continue
            own.add(f"{folder}/{name}")
            if role == "rows":
                index = _earlier_json(out, f"{folder}/{name}", got)
                for key, array in (("x", "X.npy"), ("y", "y.npy")):
                    item = index.get(key) if isinstance(index, dict) else None
                    if isinstance(item, dict) and item.get("file") == array and \
                            _recorded(out, f"{folder}/windows/{array}", item.get("sha256")):
                        own.add(f"{folder}/windows/{array}")
    try:
        drawn = _picture_bytes(doc)
    except (ValueError, TypeError, KeyError, AttributeError, IndexError):  # (a summary rfbench wrote draws)
        drawn = {}
    for name, data in drawn.items():
        if _PICTURE.fullmatch(name) and _recorded(out, name, hashlib.sha256(data).hexdigest()):
            own.add(name)
    return own


def _outputs(cells: Sequence[str], pictures: Sequence[str]) -> set[str]:
    """Every file a sweep of these cell folders (``clean``, ``cells/<name>``) and pictures writes, relative to
    its folder."""
    return {SUMMARY_FILE, *pictures, *(f"{c}/{f}" for c in cells for f in CELL_FILES)}


def _stale_outputs(out: Path, doc: Mapping, cells: Sequence[str], pictures: Sequence[str]) -> list[str]:
    """What ``--force`` removes of the earlier sweep in ``out`` (whose summary ``doc`` is) before a sweep of
    ``cells`` and ``pictures`` runs: its own files (:func:`_earlier_outputs`) the new sweep does not write again.
    Checked before anything is written or removed: every path the new sweep writes is reached through real
    folders and holds nothing or the earlier sweep's own file; nothing under ``clean/`` and ``cells/`` is a link
    (or a FIFO, socket, device); every picture beside the summary is the earlier sweep's (verify would compare
    it). Files of the user's elsewhere stay, also inside the cells' folders.

    Raises
    ------
    OutputExistsError
        One line naming what is in the way.
    """
    from rfbench.report.plots import have_matplotlib

    own = _earlier_outputs(out, doc)
    writes = _outputs(cells, pictures)
    for rel in sorted(writes):
        way = _on_the_way(out, rel)
        if way is not None:
            raise _refuse(out, way[0], way[1])
        kind = _kind_at(out / rel)
        if kind is not None and rel not in own:
            raise _refuse(out, rel, "not a file the earlier sweep's summary lists" if kind == "file" else
                          "a folder" if kind == "folder" else kind, interrupted=kind == "file" and rel != SUMMARY_FILE)
    for top in ("clean", "cells"):
        kind = _kind_at(out / top)
        if kind not in (None, "folder"):
            raise _refuse(out, top, "a file" if kind == "file" else kind)
        for folder, dirs, files in os.walk(out / top):
            for name in sorted(dirs + files):
                kind = _kind_at(Path(folder) / name)
                if kind not in ("folder", "file"):
                    raise _refuse(out, (Path(folder) / name).relative_to(out).as_posix(), str(kind))
    if have_matplotlib():
        for name in sorted(os.listdir(out)):
            if name.startswith("robustness-") and name.endswith(".png") and name not in own:
                kind = _kind_at(out / name)
                raise _refuse(out, name, "not a picture of the earlier sweep's summary (verify compares every "
                              "picture beside a summary)" if kind == "file" else "a folder" if kind == "folder"
                              else str(kind), interrupted=kind == "file")
    return sorted(own - writes)


def _remove_stale(out: Path, stale: Sequence[str]) -> None:
    """Remove the earlier sweep's files ``stale`` (:func:`_stale_outputs`), then its cells' folders left empty."""
    from rfbench.errors import OutputError

    for rel in stale:
        _not_a_real_folder(out, rel)
        try:
            os.unlink(out / rel)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise OutputError(f"cannot remove {out / rel}, a file of the earlier sweep: "
                              f"{exc.strerror or exc}") from None
    _remove_empty_cell_folders(out, stale)


def _remove_empty_cell_folders(out: Path, files: Sequence[str]) -> None:
    """Remove the cells' folders holding ``files`` (paths under ``out``) that are left empty, deepest first."""
    folders = {p for rel in files for p in Path(rel).parents if p.parts and p.parts[0] in ("clean", "cells")}
    for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        if _kind_at(out / folder) == "folder":
            try:
                (out / folder).rmdir()
            except OSError:  # (not empty: a file of the user's is in it)
                pass


def _fits(model_file, like: ScoreLike) -> None:
    """The model has the input and output the score-like report's prediction settings name (or one of each when
    they name none), each a tensor: checked before the sweep writes or removes anything.

    Raises
    ------
    ValidationError
        One line naming what does not fit (as ``rfbench predict`` names it).
    """
    from rfbench.nn.model_check import _pick

    where = f"model {model_file.path}"
    for kind, items, name, feeds in (("input", model_file.inputs, like.predict.input_name, True),
                                     ("output", model_file.outputs, like.predict.output_name, False)):
        try:
            chosen = _pick(kind, items, name, where, feeds=feeds)
        except ValidationError as exc:
            raise ValidationError(f"{exc} — a sweep predicts with the prediction settings of its score-like report "
                                  f"{like.path}: predict and score it so") from None
        if chosen.kind != "tensor":
            raise ValidationError(f"{where}: {kind} {chosen.name!r} is a {chosen.kind}, not a tensor (the score-like "
                                  f"report {like.path} was predicted with other settings, or from another model)")


@contextmanager
def _removed_on_error(out: Path, folders: Sequence[str], new: bool) -> Iterator[None]:
    """When the sweep began in a new or empty folder (``new``) and fails with an error before its summary, remove
    the files it wrote there — each cell's :data:`CELL_FILES`, regular files reached through real folders only —
    and the cell folders left empty, so that the same command can run again. An interrupted sweep (Ctrl-C,
    SIGTERM) keeps the cells it ran, and a sweep over an earlier one (``--force``) its files: the next
    ``--force`` names them."""
    try:
        yield
    except Exception:
        if new:
            written = [f"{folder}/{name}" for folder in folders for name in CELL_FILES]
            for rel in written:
                if _on_the_way(out, rel) is None and _kind_at(out / rel) == "file":
                    try:
                        os.unlink(out / rel)
                    except OSError:
                        pass
            _remove_empty_cell_folders(out, written)
        raise


def run_robustness(model, split, score_like_report, out, settings: RobustnessSettings | None = None, *,
                   force: bool = False, workers: int | None = None,
                   on_total: Callable[[int], None] | None = None,
                   advance: Callable[[str], None] | None = None) -> Sweep:
    """Run a robustness sweep (see the module docstring) and write ``out/summary.json``.

    Parameters
    ----------
    model : path-like
        The ONNX model the score-like report scored.
    split : path-like
        The split whose test side is swept (the one the score-like report's index was built from).
    score_like_report : path-like
        A report of ``rfbench score --rows`` of this model: window, prediction and score settings come from it.
    out : path-like
        The folder of the sweep (created; ``force`` replaces a sweep written there before: the earlier sweep's
        own files the new one does not write again are removed first, see :func:`_stale_outputs`).
    settings : RobustnessSettings
    force : bool
        Replace the sweep in ``out``. Without it ``out`` must be new or empty.
    workers : int, optional
        Threads reading dataset files (the results do not depend on it).
    on_total, advance : callable, optional
        ``on_total(cells + 1)`` once, then ``advance(name)`` after the clean run and after each cell.

    Returns
    -------
    Sweep

    Raises
    ------
    OutputExistsError
        ``out`` is not empty (without ``force``), holds no summary rfbench wrote, or holds in the sweep's way
        something that is not the earlier sweep's own (a symbolic link, a FIFO, a file of the user's, a file of
        the earlier sweep that changed): nothing is written or removed then. A folder that becomes a link while
        the sweep runs is refused before that cell writes anything.
        A file the sweep reads (the model, split, score-like report, reference) that is one of the files it
        writes, under any name (an earlier summary named as the reference with ``force``): nothing is written.
    """
    from rfbench.datasets.windows import write_windows
    from rfbench.io.files import refuse_inputs, write_json
    from rfbench.nn.onnx_file import load_model
    from rfbench.nn.predict import predict
    from rfbench.nn.prediction_record import write_prediction
    from rfbench.nn.sandbox import Sandbox
    from rfbench.report.score import score_gesture, score_pose

    settings = settings if settings is not None else RobustnessSettings()
    if not isinstance(settings, RobustnessSettings):
        raise ValidationError("settings must be a RobustnessSettings")
    cells = settings.cells()
    out = Path(out)
    summary_path = out / SUMMARY_FILE
    earlier = _check_sweep_folder(out, summary_path, force)
    from rfbench.report.plots import have_matplotlib, write_picture

    folders = ["clean", *(f"cells/{cell_name(*cell)}" for cell in cells)]
    picture_names = [_picture_name(c) for c in dict.fromkeys(c for c, _, _ in cells)] if have_matplotlib() else []
    stale = _stale_outputs(out, earlier, folders, picture_names) if earlier is not None else []
    # what the sweep reads is never one of its outputs (an earlier summary named as the reference, its clean report
    # as the score-like report): --force replaces the earlier sweep's files, never what this one reads
    refuse_inputs([out / rel for rel in sorted(_outputs(folders, picture_names))],
                  [Path(model), Path(split), Path(score_like_report), settings.reference])
    _refuse_inside_tree(out, split)
    like = score_like(score_like_report)
    reference = read_reference(settings.reference) if settings.reference is not None else None
    if reference is not None:
        check_reference(reference, settings.reference, like, split, settings)
    model_file = load_model(model)
    _fits(model_file, like)
    score = score_pose if like.task == "pose" else score_gesture
    _remove_stale(out, stale)
    if on_total is not None:
        on_total(len(cells) + 1)

    def run_cell(folder: Path, windows_settings):
        _not_a_real_folder(out, folder.relative_to(out).as_posix() + "/windows/" + "index.json")
        w = folder / "windows"
        write_windows(split, "test", w, windows_settings, force=True, workers=workers, reading=reading)
        prediction = predict(model_file, w, like.predict, sandbox=box)
        pred_path = folder / "pred.npy"
        write_prediction(pred_path, prediction, force=True)
        run = score(pred_path, rows=w / "index.json", split=split, settings=like.spec, bootstrap=like.bootstrap,
                    options=like.options, out=folder / "report.json", force=True)
        return run.report, prediction.pred, w / "index.json"

    # one box of bounded children for the whole sweep: the model's session starts once, and the prediction
    # settings' limits (the wall-clock timeout included) bound every cell's predictions together; one reading of
    # the test side's files (the clean run's, kept in a temporary folder of the sweep's) for every cell's windows
    # (the scoring's ground truth and training targets too: the reading is in use for the whole sweep)
    with _kept_reading(out) as reading, reading.in_use(), Sandbox(like.predict, f"model {model_file.path}") as box, \
            _removed_on_error(out, folders, earlier is None):
        clean_report, clean_pred, clean_index = run_cell(out / "clean", like.windows)
        pairing = Pairing(like.task, like.spec, like.bootstrap, split, clean_index, clean_pred)
        del clean_pred
        if advance is not None:
            advance("clean")
        clean = {"report": "clean/report.json", "sha256": _sha256(out / "clean" / "report.json"),
                 "model": _first(clean_report)}
        marks = [cell_marks(clean_report)]
        entries = []
        for cid, severity, seed in cells:
            name = cell_name(cid, severity, seed)
            folder = out / "cells" / name
            report, pred, _ = run_cell(folder, replace(like.windows, corrupt=f"{cid}:{severity}", corrupt_seed=seed))
            first = _first(report)
            marks.append(cell_marks(report))
            drop = None if first["value"] is None or clean["model"]["value"] is None else \
                clean["model"]["value"] - first["value"]
            interval = pairing.drop(pred)
            entries.append({"corruption": cid, "severity": severity, "seed": seed,
                            "report": f"cells/{name}/report.json", "sha256": _sha256(folder / "report.json"),
                            "model": first, "drop": {"value": drop, **(interval or {"low": None, "high": None})}})
            if advance is not None:
                advance(name)
    baseline_value = ((clean_report["results"][0].get("baseline") or {}).get("value"))
    summary = _summary(like, settings, clean, entries, baseline_value, reference, model, split,
                       score_like_report, out, marks)
    # every picture drawn before any is written, the summary last: a picture that cannot be written (a FIFO where
    # it goes) leaves no summary without it
    pictures = [write_picture(out / name, data) for name, data in _picture_bytes(summary).items()]
    write_json(summary_path, summary, force=True)
    return Sweep(summary, summary_path, pictures)


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _by_level(entries) -> dict:
    """``{corruption: {severity: mean value over seeds}}``."""
    out: dict = {}
    for e in entries:
        out.setdefault(e["corruption"], {}).setdefault(e["severity"], []).append(e["model"]["value"])
    return {c: {s: _mean(v) for s, v in levels.items()} for c, levels in out.items()}


def _physical(cid: str, severity: int):
    """The severity's physical value; None for an infinite one (dead-antenna's 5: a dead antenna)."""
    value = corruption(cid).level(severity)
    return None if math.isinf(value) else value


def aggregate(better: str, clean: dict, cells: list, baseline_value, reference: dict | None) -> dict:
    """The corruption errors of a sweep from its cells (see the module docstring): ``corruptions`` (per
    corruption: levels, ``ce_vs_baseline``, ``ce``, ``relative_ce``), ``mce_vs_baseline``, ``mce`` and
    ``relative_mce`` (None where undefined: no reference, or an error sum of zero)."""
    e_clean = _error(clean["model"]["value"], better)
    e_base = _error(baseline_value, better)
    levels = _by_level(cells)
    per = []
    ref_levels = _by_level(reference["cells"]) if reference else None
    e_ref_clean = _error(reference["clean"]["model"]["value"], better) if reference else None
    for cid, by_s in levels.items():
        errors = [_error(v, better) for v in by_s.values()]
        total = None if any(e is None for e in errors) else sum(errors)
        item = {"corruption": cid, "unit": corruption(cid).unit,
                "levels": [{"severity": s, "value": by_s[s], "physical": _physical(cid, s)} for s in by_s],
                "ce_vs_baseline": _ratio(total, None if e_base is None else e_base * len(errors)),
                "ce": None, "relative_ce": None}
        if ref_levels is not None and cid in ref_levels and set(ref_levels[cid]) == set(by_s):
            ref_errors = [_error(ref_levels[cid][s], better) for s in by_s]
            if all(e is not None for e in ref_errors) and total is not None:
                item["ce"] = _ratio(total, sum(ref_errors))
                if e_clean is not None and e_ref_clean is not None:
                    item["relative_ce"] = _ratio(total - e_clean * len(errors),
                                                 sum(ref_errors) - e_ref_clean * len(errors))
        per.append(item)

    def mean_of(key):
        values = [p[key] for p in per]
        return None if any(v is None for v in values) or not values else sum(values) / len(values)

    return {"corruptions": per, "mce_vs_baseline": mean_of("ce_vs_baseline"),
            "mce": mean_of("ce") if reference else None,
            "relative_mce": mean_of("relative_ce") if reference else None}


def _summary(like: ScoreLike, settings: RobustnessSettings, clean: dict, entries: list, baseline_value,
             reference: dict | None, model, split, report_path, out: Path, marks: list) -> dict:
    from rfbench import __version__
    from rfbench.io.files import schema_id

    better = like.better

    def rel(p: Path | str) -> str:
        return Path(os.path.relpath(Path(p).resolve(), out.resolve())).as_posix()

    return {
        "schema": schema_id("robustness"),
        "rfbench_version": __version__,
        "task": like.task,
        **sweep_evidence(marks),
        "metric": {"label": like.label, "better": better,
                   "error": "1 − value" if better == "higher" else "the value"},
        "model": {"path": rel(model), "sha256": _sha256(Path(model))},
        "split": {"path": rel(split), "sha256": _sha256(Path(split))},
        "score_like": {"path": rel(report_path), "sha256": _sha256(Path(report_path))},
        "settings": settings.record(),
        "reference": None if reference is None else {"path": rel(settings.reference),
                                                     "sha256": _sha256(Path(settings.reference))},
        "clean": clean,
        "baseline": {"value": baseline_value},
        "cells": entries,
        **aggregate(better, clean, entries, baseline_value, reference),
        "reproducer": {"argv": reproducer_argv(rel(model), rel(split), rel(report_path), settings,
                                               None if settings.reference is None else rel(settings.reference))},
        "notes": list(NOTES),
    }


#: The notes of every summary (rfbench's own words: verify checks that a summary's are these).
NOTES = ("drop = clean − cell, in the metric's units; its interval is the paired cluster bootstrap of the cell "
         "against clean over the same clusters and draws (the score-like report's bootstrap)",
         "each cell is a report of its own with its chain (windows --corrupt → predict → score): rfbench verify "
         "checks it like any other",
         "every cell's windows were built from the sweep's one verified reading of the test side's dataset files "
         "(read, checked against the manifest's sizes and sha256 and parsed once, by the clean run): they are the "
         "bytes rfbench windows --corrupt writes alone, and each index names those dataset files and their sha256")


# -- what the cells' numbers are ------------------------------------------------------------------------------


def cell_marks(report: Mapping) -> tuple[str, tuple[str, ...]]:
    """A cell report's evidence tag and its warnings, as a summary counts them: the report's own warning notes
    (those its report.md shows as warnings: LAYOUT NOT VERIFIED, LEAKAGE-PRONE), and what its score settings
    (parsed from its reproducer) allowed — partial scoring (with the coverage it got) and shared files (with
    those found: byte-identical dataset files, a failed content check). Generated data whose split's sides share
    files is scored without ``--allow-shared-files``: that is a warning too.

    Raises
    ------
    FormatError
        A tag rfbench does not write, or no ``rfbench score`` reproducer.
    """
    from rfbench.protocols.content_findings import CHECK_CONTENT
    from rfbench.report.evidence import EVIDENCE
    from rfbench.report.render import _WARN_PREFIXES

    tag = report.get("evidence")
    if tag not in EVIDENCE:
        raise FormatError(f"the evidence tag {str(tag)[:40]!r} is not one rfbench writes ({', '.join(EVIDENCE)})")
    reproducer = report.get("reproducer")
    argv = reproducer.get("argv") if isinstance(reproducer, Mapping) else None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or argv[:2] != ["rfbench", "score"]:
        raise FormatError("no rfbench score reproducer (a cell is scored by rfbench score)")
    try:
        options = _parse_score_argv(argv, str(report.get("task")))[2]
    except RfbenchError as exc:
        raise FormatError(f"its reproducer does not parse ({exc})") from None
    notes = [n for n in report.get("notes") or [] if isinstance(n, str)]
    warnings = [n for n in notes if n.startswith(_WARN_PREFIXES)]
    coverage = report.get("coverage") if isinstance(report.get("coverage"), Mapping) else {}
    if options.allow_partial or coverage.get("missing_count"):
        text = (f"PARTIAL SCORING ALLOWED (--allow-partial): {coverage.get('scored_recordings')} of "
                f"{coverage.get('test_recordings')} test recordings scored")
        if coverage.get("missing_count"):
            text += "; a subset: these numbers do not cover the whole test side"
        warnings.append(text)
    shared = report.get("shared_files")
    count = shared.get("count") if isinstance(shared, Mapping) else None
    split = report.get("split") if isinstance(report.get("split"), Mapping) else {}
    audit = split.get("audit") if isinstance(split.get("audit"), Mapping) else {}
    found = [f"{count} byte-identical dataset file(s) on both sides of the split"] if count else []
    if any(isinstance(c, Mapping) and c.get("name") == CHECK_CONTENT and c.get("passed") is False
           for c in audit.get("checks") or []):
        found.append("the same content on both sides under other names")
    if options.allow_shared_files or found:
        head = "SHARED FILES ALLOWED (--allow-shared-files)" if options.allow_shared_files else "SHARED FILES"
        tail = ("; ".join(found) + ": these numbers partly measure memory of training data" if found else
                "scored even where the split's sides share dataset files or content; none found")
        warnings.append(f"{head}: {tail}")
    return tag, tuple(warnings)


def sweep_evidence(marks: Sequence[tuple[str, Sequence[str]]]) -> dict:
    """A summary's ``evidence``, ``evidence_rule`` and ``warnings`` from its cell reports' :func:`cell_marks`
    (clean first, then the cells in sweep order): the tag is SYNTHETIC when any cell report is, MEASURED only
    when every one is (CLAIMED otherwise); each warning once, in the order first met, with the number of cell
    reports that carry it (``{warning, cell_reports}``)."""
    from rfbench.report.evidence import CLAIMED, EVIDENCE, MEASURED, RULES, SYNTHETIC

    tags = [tag for tag, _ in marks]
    if not tags:
        raise ValidationError("a sweep has at least its clean cell")
    counts = {t: tags.count(t) for t in EVIDENCE if t in tags}
    tag = SYNTHETIC if SYNTHETIC in counts else CLAIMED if CLAIMED in counts else MEASURED
    rule = (f"{RULES[tag]} (the sweep's {len(tags)} cell reports, clean included: "
            + ", ".join(f"{n} {t}" for t, n in counts.items()) + "; a sweep is MEASURED only when every one is)")
    carried: dict[str, int] = {}
    for _, warnings in marks:
        for w in dict.fromkeys(warnings):
            carried[w] = carried.get(w, 0) + 1
    return {"evidence": tag, "evidence_rule": rule,
            "warnings": [{"warning": w, "cell_reports": n} for w, n in carried.items()]}


def evidence_lines(summary: Mapping) -> list[tuple[str, str]]:
    """``(kind, text)`` of a summary's tag (``evidence``: ``TAG — rule``) and of each warning (``warning``:
    its text and how many cell reports carry it), as ``rfbench robustness`` and verify show them."""
    total = len(summary["cells"]) + 1
    lines = [("evidence", f"{summary['evidence']} — {summary['evidence_rule']}")]
    for w in summary["warnings"]:
        n = w["cell_reports"]
        lines.append(("warning", f"{w['warning']} ("
                      + ("every cell report, clean included" if n == total else f"{n} of {total} cell reports")
                      + ")"))
    return lines


def _picture_tag(summary: Mapping) -> str:
    """The tag a picture's title shows: the evidence, and the lead words of each warning (LAYOUT NOT VERIFIED,
    PARTIAL SCORING ALLOWED, ...)."""
    import re
    import textwrap

    # verify draws the pictures of a summary it may find different: a field of another type draws as nothing
    warnings = summary.get("warnings") if isinstance(summary.get("warnings"), list) else []
    leads = [m.group(0) for w in warnings if isinstance(w, Mapping)
             if (m := re.match(r"[A-Z][A-Z -]*[A-Z]", str(w.get("warning")))) is not None]
    return str(summary.get("evidence")) + ("\n" + textwrap.fill(", ".join(dict.fromkeys(leads)), 48) if leads else "")


def reproducer_argv(model: str, split: str, score_like_path: str, settings: RobustnessSettings,
                    reference: str | None) -> list[str]:
    """The ``rfbench robustness`` command of a sweep, its paths as the summary records them (relative to its
    folder) and every setting explicit (the severities as the list they give)."""
    shown = replace(settings, severities=",".join(str(v) for v in settings.severity_list),
                    reference=None if reference is None else Path(reference))
    return ["rfbench", "robustness", model, "--split", split, "--score-like", score_like_path,
            *shown.argv(show_path=lambda p: reference if reference is not None else str(p)), "-o", "."]


def read_reference(path: Path) -> dict:
    from rfbench.io.files import read_json

    doc = read_json(path, "robustness")
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list) or not isinstance(doc.get("clean"), dict):
        raise ValidationError(f"{path}: not a robustness summary (rfbench robustness's summary.json)")
    for e in doc["cells"]:
        if not isinstance(e, dict) or not isinstance((e.get("model") or {}).get("value"), (int, float, type(None))):
            raise ValidationError(f"{path}: a cell without a model value")
    return doc


def reference_windows(reference: Mapping, where) -> dict | None:
    """The windows settings (:func:`windows_compared`) of a reference sweep's clean cell: its clean report (as the
    reference records it, its sha256 checked) names its windows index (its sha256 checked too). None when the
    reference names no clean report or it is not there (a summary.json copied alone: ``rfbench verify`` refuses
    a summary with such a reference, whose cells it cannot re-run).

    Raises
    ------
    ValidationError, FormatError
        A clean report there but not as the reference records it, or a windows index missing or not as that
        report records it.
    """
    from rfbench.datasets.windows import load_index
    from rfbench.io.files import read_json
    from rfbench.io.paths import resolve

    where = Path(where)
    clean = reference.get("clean")
    rel = clean.get("report") if isinstance(clean, Mapping) else None
    if not isinstance(rel, str) or not os.path.lexists(where.parent / rel):
        return None
    report_path = resolve(rel, where.parent, what="the reference's clean report").path
    if _sha256(report_path) != clean.get("sha256"):
        raise ValidationError(f"{where}: its clean report {report_path} is not the one it records (sha256 differs)")
    report = read_json(report_path, "report")
    rows = {i.get("role"): i for i in report.get("inputs") or [] if isinstance(i, dict)}.get("rows")
    if not isinstance(rows, dict):
        raise ValidationError(f"{report_path}: the reference's clean report names no windows index")
    index_path = resolve(rows.get("path"), report_path.parent, what="the reference's clean windows index").path
    if _sha256(index_path) != rows.get("sha256"):
        raise ValidationError(f"{index_path}: the reference's clean windows index is not the one its report records "
                              "(sha256 differs)")
    return windows_compared(load_index(index_path, check_arrays=False).window_settings())


def check_reference(reference: dict, where, like: ScoreLike, split, settings: RobustnessSettings) -> None:
    """A reference sweep is another model's over the same cells: the same task, metric (its full label: metric,
    normalisation, layout, averaging), split (the same file's sha256), corruptions × severities × seeds and
    windows (its clean cell's windows settings, every one but the corruption: stride, length, target,
    features, ...). A corruption error divides by the reference's errors, so a reference of another task, metric
    or data (a subset of the frames, other features, or one missing cells, which left CE undefined without a
    word) would scale a verified mCE by a number that means nothing here.

    Raises
    ------
    ValidationError
        Naming each way the reference differs.
    """
    differs = reference_differs(reference, like.task, like.label, _sha256(Path(split)), settings.record())
    if not differs:  # (only then are its files read)
        theirs = reference_windows(reference, where)
        if theirs is not None:
            differs = reference_differs(reference, like.task, like.label, _sha256(Path(split)), settings.record(),
                                        windows_compared(like.windows), theirs)
    if differs:
        raise ValidationError(f"{where}: not a reference for this sweep — a reference is another model's sweep over "
                              "the same cells (task, metric, split, corruptions × severities × seeds, windows); it "
                              "has " + "; ".join(differs))


def reference_differs(reference: Mapping, task, label, split_sha256: str, cells: Mapping,
                      windows: Mapping | None = None, reference_windows: Mapping | None = None) -> list[str]:
    """Each way ``reference`` is not a reference for a sweep of ``task`` and metric ``label`` over the split whose
    file hashes to ``split_sha256``, the cells ``cells`` (``RobustnessSettings.record()``) and the windows
    settings ``windows`` (:func:`windows_compared`; the reference's clean cell's are ``reference_windows``, both
    compared when given): what :func:`check_reference` refuses, and what ``rfbench verify`` calls a difference in
    a summary's reference. (The prediction settings are not compared: a reference is another model, which may
    well be fed another input, read from another output or flattened.)"""
    differs = []
    if reference.get("task") != task:
        differs.append(f"task {reference.get('task')!r}, not {task!r}")
    metric = reference.get("metric")
    theirs_label = metric.get("label") if isinstance(metric, dict) else None
    if theirs_label != label:
        differs.append(f"metric {theirs_label!r}, not {label!r}")
    split_entry = reference.get("split")
    if not isinstance(split_entry, dict) or split_entry.get("sha256") != split_sha256:
        differs.append("another split (its split file's sha256 differs from this one's)")
    theirs = reference.get("settings")
    if theirs != cells:
        differs.append(f"other cells ({theirs!r}, not {dict(cells)!r})")
    if windows is not None and reference_windows is not None:
        fields = differing_fields(reference_windows, windows)
        if fields:
            differs.append("other windows (" + "; ".join(fields) + ")")
    return differs


def _pictures(summary: dict, out: Path) -> list:
    """Draw the summary's pictures (:func:`_picture_bytes`) and write each atomically into ``out``; returns their
    paths."""
    from rfbench.report.plots import write_picture

    return [write_picture(out / name, data) for name, data in _picture_bytes(summary).items()]


def _picture_bytes(summary: Mapping) -> dict[str, bytes]:
    """``{robustness-<corruption>.png: its PNG}``: one picture per corruption, the metric (mean over seeds)
    against severity, clean and baseline as lines, rendered in memory; none without matplotlib."""
    from rfbench.report.plots import drawing_defaults, have_matplotlib

    if not have_matplotlib():
        return {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with drawing_defaults():
        return _draw_corruptions(plt, summary)


def _draw_corruptions(plt, summary: Mapping) -> dict[str, bytes]:
    from rfbench.report.plots import png_bytes

    drawn = {}
    for item in summary["corruptions"]:
        cid = item["corruption"]
        xs = [lv["severity"] for lv in item["levels"]]
        ys = [np.nan if lv["value"] is None else lv["value"] for lv in item["levels"]]
        fig, ax = plt.subplots(figsize=(4.5, 3.2))
        ax.plot(xs, ys, marker="o", label="model")
        if summary["clean"]["model"]["value"] is not None:
            ax.axhline(summary["clean"]["model"]["value"], ls="--", color="grey", label="clean")
        if summary["baseline"]["value"] is not None:
            ax.axhline(summary["baseline"]["value"], ls=":", color="black", label="baseline")
        ax.set_xticks(xs)
        ax.set_xlabel(f"severity ({item['unit']})")
        ax.set_ylabel(summary["metric"]["label"], fontsize=7)
        ax.set_title(f"{cid} — {_picture_tag(summary)}", fontsize=8)
        ax.legend(fontsize=7)
        fig.tight_layout()
        drawn[_picture_name(cid)] = png_bytes(plt, fig, dpi=100, metadata={"Software": None})
    return drawn


def _picture_name(corruption_id: str) -> str:
    return f"robustness-{corruption_id}.png"
