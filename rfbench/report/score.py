"""Scoring as one library call: settings, inputs, the report with its reproducer, and the files it writes.

:func:`score_pose` and :func:`score_gesture` are the stage ``rfbench score`` runs (the command parses its
options into the settings below and calls one of them). Given **files**, they load and hash them, record the
equivalent ``rfbench score …`` command line (derived from the settings, every value explicit) and return a
MEASURED (or SYNTHETIC) report that ``rfbench verify`` re-runs. Given **arrays** in memory there is nothing
to hash or re-run: the report is CLAIMED and says why. With ``out`` they write ``report.json``, its
``report.md`` and (``plots=True``) its pictures, atomically.

The settings classes (:class:`ScoreInputs`, :class:`PoseSettings`, :class:`GestureSettings`,
:class:`BootstrapSettings`, :class:`ReportOptions`) declare every option once — flag, default, bounds and help
(:mod:`rfbench.settings`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from rfbench.errors import ValidationError
from rfbench.report.settings import (
    TASKS,
    BootstrapSettings,
    GestureSettings,
    PoseSettings,
    ReportOptions,
    ScoreInputs,
)

__all__ = ["TASKS", "ScoreInputs", "PoseSettings", "GestureSettings", "BootstrapSettings", "ReportOptions",
           "ScoreRun", "score_pose", "score_gesture", "reproducer_argv"]


@dataclass
class ScoreRun:
    """What one score run produced: the report, where it was written, the pictures drawn, the lines to show
    the user (pictures written or skipped) and the ``rfbench verify`` command that checks the report as
    written, from the current folder (``verify``: an argv, empty when nothing was written)."""

    report: dict
    out: Optional[Path] = None
    md_path: Optional[Path] = None
    pictures: list = field(default_factory=list)
    messages: list = field(default_factory=list)
    verify: list = field(default_factory=list)


def verify_command(report: dict, out: Path, also: list | tuple = ()) -> list[str]:
    """The ``rfbench verify`` argv that checks ``report`` written at ``out``, from the current folder: with
    ``--root`` the nearest common ancestor of the report's folder, its inputs and the folders in ``also`` (the
    dataset root, a label set) when they are not all inside the report's folder."""
    folder = Path(os.path.realpath(Path(out).parent))
    places = [folder] + [Path(os.path.realpath(folder / i["path"])) for i in report.get("inputs") or []]
    places += [Path(os.path.realpath(p)) for p in also]
    argv = ["rfbench", "verify", _shown(out, False)]
    try:
        common = Path(os.path.commonpath([str(p) for p in places]))
    except ValueError:  # another drive
        return argv
    if common != folder:
        argv += ["--root", _shown(common, False)]
    return argv


def _shown(path, absolute: bool) -> str:
    """A path as the reproducer records it: relative to the current folder (``absolute``: absolute)."""
    if absolute:
        return os.path.abspath(path)
    try:
        return Path(os.path.relpath(os.path.abspath(path), os.getcwd())).as_posix()
    except ValueError:  # another drive (Windows)
        return os.path.abspath(path)


def reproducer_argv(task: str, inputs: ScoreInputs, settings, bootstrap: BootstrapSettings,
                    options: ReportOptions, out: Path | None = None, plots: bool = False,
                    show_path=None) -> list[str]:
    """The canonical ``rfbench score`` command line of a run: every setting explicit (so a re-run does not
    depend on defaults), derived from the settings' fields; paths relative to the current folder unless
    ``options.absolute_paths`` (``show_path`` writes each path instead: verify's re-run passes them as they
    are)."""
    from rfbench.settings import flag_of, options_of

    def show(p):
        return show_path(p) if show_path is not None else _shown(p, options.absolute_paths)

    def inputs_of(group):
        out_ = []
        for f, o in options_of(ScoreInputs):
            value = getattr(inputs, f.name)
            if o.group == group and value is not None and (o.tasks is None or task in o.tasks):
                out_ += [flag_of(f), show(value)]
        return out_

    argv = ["rfbench", "score", "--task", task] + inputs_of("rows") + settings.argv() + inputs_of("split")
    argv += bootstrap.argv() + options.argv()
    if out is not None:
        argv += ["-o", show(out)]
    if plots:
        argv.append("--plots")
    return argv


def _reproducer(argv: list[str], options: ReportOptions, base: Path) -> dict:
    """``{argv, cwd}``: the folder the command ran in, relative to the report's folder (absolute on request)."""
    cwd = os.getcwd()
    if not options.absolute_paths:
        try:
            cwd = Path(os.path.relpath(cwd, os.path.abspath(base))).as_posix()
        except ValueError:
            pass
    return {"argv": argv, "cwd": cwd}


def _is_array(x) -> bool:
    return x is not None and not isinstance(x, (str, os.PathLike))


def _prepare_output(out, plots: bool, force: bool, task: str) -> tuple[Path | None, Path | None, bool, list[str]]:
    from rfbench.io.files import check_writable, refuse_folder_name

    messages: list[str] = []
    if plots and out is None:
        raise ValidationError("`plots` writes PNG files beside the report: give `out` (report.json) as well")
    md_path = None
    if out is not None:
        refuse_folder_name(out)
        out = Path(out)
        if out.suffix.lower() == ".md":
            raise ValidationError("the output names the JSON report (e.g. report.json); the .md is written beside it")
        check_writable(out, force)
        from rfbench.report.render import markdown_path

        md_path = markdown_path(out)
        check_writable(md_path, force)
    draw = bool(plots)
    if draw:
        from rfbench.report.plots import PLOT_HINT, have_matplotlib, picture_paths, unlinkable_picture

        if not have_matplotlib():
            draw = False
            messages.append(f"plots skipped: {PLOT_HINT}")
        else:
            bad = unlinkable_picture(out, task)
            if bad is not None:
                raise ValidationError(f"`plots` would name a picture {bad!r}, which report.md does not link "
                                      "(a picture's name is letters, digits, '.', '_' and '-', a letter or digit "
                                      "first): name the report so, e.g. report.json")
            for p in picture_paths(out, task):
                check_writable(p, force)
    return out, md_path, draw, messages


def _write(report: dict, out: Path | None, md_path: Path | None, draw: bool, captured: dict, force: bool,
           messages: list[str], also: list | tuple = (), manifest: tuple | None = None) -> ScoreRun:
    from rfbench.io.files import dumps_json, write_json, write_text
    from rfbench.report.render import render_markdown

    pictures = []
    if out is not None:
        outputs = [out, md_path]
        if draw:
            from rfbench.report.plots import picture_paths

            outputs += picture_paths(out, report.get("task"))
        _refuse_read(report, outputs, manifest)
        if draw:
            from rfbench.io.files import sha256_file
            from rfbench.report.plots import plot_engine, write_pictures

            pictures = write_pictures(report, captured, out, force=force)
            messages += [f"wrote {p} ({caption})" for caption, p in pictures]
            engine = plot_engine()
            report["pictures"] = [dict(zip(("sha256", "bytes"), sha256_file(p)), caption=c, file=p.name,
                                       engine=engine) for c, p in pictures]
        write_json(out, report, force=force)
        # rendered from the document as verify will read it back, so the bytes match a re-rendering
        write_text(md_path, render_markdown(json.loads(dumps_json(report))), force=force)
    verify = verify_command(report, out, also) if out is not None and report.get("reproducer") else []
    return ScoreRun(report, out, md_path, [p for _, p in pictures], messages, verify)


def _refuse_read(report: dict, outputs: list, manifest: tuple | None = None) -> None:
    """Refuse any of ``outputs`` (the report, its .md, its pictures; the report first) over a file the run read:
    an input it records, the X and y beside the index it scored, or a dataset file the manifest lists (ground
    truth, the training side's for the baseline). ``manifest``: ``(Manifest, its file)`` when the run has it
    loaded (:func:`_split_manifest`), else the one the report records is read."""
    from rfbench.datasets.manifest import read_manifest
    from rfbench.io.files import refuse_inputs

    out = outputs[0]
    inputs = {i.get("role"): out.parent / str(i["path"]) for i in report.get("inputs") or ()
              if isinstance(i, dict) and i.get("path")}
    read = list(inputs.values())
    if "rows" in inputs:
        read += [inputs["rows"].parent / name for name in ("X.npy", "y.npy")]
    refuse_inputs(outputs, read)
    if "manifest" in inputs:
        loaded, path = manifest if manifest is not None else (read_manifest(inputs["manifest"]), inputs["manifest"])
        loaded.refuse_listed(outputs, loaded.root_dir(path))


def _claimed_note() -> str:
    return ("CLAIMED: scored from arrays passed in memory — there is no input file to hash and no command to "
            "re-run, so rfbench verify cannot check these numbers; score files to get a MEASURED report")


def score_pose(pred, gt=None, *, rows=None, vis=None, split=None, manifest=None, groups=None, train_gt=None,
               train_groups=None, train_vis=None, settings: PoseSettings | None = None,
               bootstrap: BootstrapSettings | None = None, options: ReportOptions | None = None, out=None,
               plots: bool = False, force: bool = False) -> ScoreRun:
    """Score pose predictions under a declared metric spec, beside the mean training pose.

    Parameters
    ----------
    pred, gt : path-like or array_like
        Predictions and ground truth, ``(N, K, 2|3)``: ``.npy`` files, or arrays in memory.
    rows : path-like, optional
        The test side's ``index.json`` from ``rfbench windows`` (instead of ``gt``, ``vis``, ``groups`` and the
        training inputs): the ground truth is read from the dataset files the split's manifest names, the
        baseline from the train side's targets under the same window settings, and ``pred`` has one row per
        index row, in order. The report says its ground truth was read from the dataset, with those files'
        sha256.
    vis, groups, train_gt, train_groups, train_vis : path-like or array_like, optional
        Visibility, row → recording ids, and the training ground truth with its ids (for the baseline).
    split : path-like, optional
        The split file the rows come from (re-checked against its manifest); ``manifest`` is that manifest
        (default: the one the split names).
    settings : PoseSettings
        The metric spec (skeleton, normalizations, thresholds...). Required: it names the skeleton.
    bootstrap : BootstrapSettings, optional
    options : ReportOptions, optional
        ``synthetic``, ``allow_partial``, ``absolute_paths``.
    out : path-like, optional
        Write the report there (JSON), its Markdown beside it, and with ``plots`` its pictures.
    force : bool
        Replace existing output files.

    Returns
    -------
    ScoreRun
        ``report`` is MEASURED (or SYNTHETIC) when every input is a file — it then carries the equivalent
        ``rfbench score`` command and the inputs' hashes, and ``rfbench verify`` re-runs it — and CLAIMED
        when any input is an array in memory (the report's notes say why).

    Examples
    --------
    Arrays in memory give a CLAIMED report (files give a MEASURED one that ``rfbench verify`` re-runs):

    >>> import numpy as np
    >>> import rfbench
    >>> gt = np.random.default_rng(0).normal(size=(8, 17, 2))
    >>> spec = rfbench.PoseSettings(skeleton="coco17", units="m", norm=("bbox",), k=(0.2,), metrics=("pck",))
    >>> run = rfbench.score_pose(gt + 0.001, gt, settings=spec)
    >>> run.report["evidence"], run.report["results"][0]["label"], run.report["results"][0]["model"]["value"]
    ('CLAIMED', 'PCK@0.20 bbox coco17 <= micro', 1.0)
    """
    return _score("pose", dict(pred=pred, gt=gt, rows=rows, vis=vis, split=split, manifest=manifest, groups=groups,
                               train_gt=train_gt, train_groups=train_groups, train_vis=train_vis),
                  settings, bootstrap, options, out, plots, force)


def score_gesture(pred, gt=None, *, rows=None, label_set=None, split=None, manifest=None, groups=None, train_gt=None,
                  train_groups=None, settings: GestureSettings | None = None,
                  bootstrap: BootstrapSettings | None = None, options: ReportOptions | None = None, out=None,
               plots: bool = False, force: bool = False) -> ScoreRun:
    """Score class predictions (gesture, activity) over a label set, beside the majority-class and class-prior
    baselines from the training split.

    Parameters
    ----------
    pred : path-like or array_like
        Labels ``(N,)`` (names, or label-set indices) or scores ``(N, C)`` in label-set order.
    gt : path-like or array_like
        True labels ``(N,)``.
    rows : path-like, optional
        The test side's windows index (see :func:`score_pose`): labels from the manifest, the majority and prior
        baselines from the train side's windows, the index's label set.
    label_set : path-like or sequence of str, optional
        The declared label set (``names.txt``), default the sorted names seen.
    split, manifest, groups, train_gt, train_groups
        As :func:`score_pose`.
    settings : GestureSettings, optional
    bootstrap, options, out, plots, force
        As :func:`score_pose`.

    Returns
    -------
    ScoreRun
        MEASURED (or SYNTHETIC) from files, CLAIMED from arrays in memory (see :func:`score_pose`).

    Examples
    --------
    >>> import numpy as np
    >>> import rfbench
    >>> truth = np.array(["wave", "push", "wave", "clap"])
    >>> run = rfbench.score_gesture(np.array(["wave", "push", "clap", "clap"]), truth)
    >>> run.report["evidence"], run.report["results"][0]["metric"], run.report["results"][0]["model"]["value"]
    ('CLAIMED', 'accuracy', 0.75)
    """
    return _score("gesture", dict(pred=pred, gt=gt, rows=rows, label_set=label_set, split=split, manifest=manifest,
                                  groups=groups, train_gt=train_gt, train_groups=train_groups),
                  settings, bootstrap, options, out, plots, force)


def _score(task, given: dict, settings, bootstrap, options, out, plots, force) -> ScoreRun:
    from rfbench.report.gesture import gesture_report
    from rfbench.report.pose import pose_report

    settings = settings if settings is not None else (PoseSettings if task == "pose" else GestureSettings)()
    expected = PoseSettings if task == "pose" else GestureSettings
    if not isinstance(settings, expected):
        raise ValidationError(f"{task} scoring takes {expected.__name__}, not {type(settings).__name__}")
    bootstrap = bootstrap or BootstrapSettings()
    options = options or ReportOptions()
    out, md_path, draw, messages = _prepare_output(out, plots, force, task)
    captured: dict = {}
    common = dict(cluster_by=bootstrap.cluster_by, n_boot=bootstrap.replicates, level=bootstrap.confidence,
                  seed=bootstrap.seed, synthetic=options.synthetic, allow_partial=options.allow_partial)
    if task == "pose":
        spec = dict(units=settings.units, metrics=settings.metrics, normalizations=settings.norm, ks=settings.k,
                    comparison=settings.comparison, averaging=settings.averaging, auc_n=settings.auc_n,
                    auc_max=settings.auc_max, oks_area=settings.oks_area, sigmas=settings.sigmas,
                    trust_layout=settings.trust_layout, convention=settings.convention,
                    batch_size=settings.batch_size)
    else:
        spec = dict(metrics=settings.metrics, top_k=settings.top_k, domains=settings.domain_keys())
    arrays = [k for k, v in given.items() if _is_array(v) and not (k == "label_set" and isinstance(v, (list, tuple)))]
    if arrays:
        split = given.get("split")
        if split is not None and not hasattr(split, "train"):
            from rfbench.protocols.splitfile import load_split

            split = load_split(split, given.get("manifest"))
        loaded = {k: _load_if_path(v, k) for k, v in given.items() if k not in ("split", "manifest")}
        if task == "pose":
            subjects = None
            if split is not None:
                subjects = {rid: str(r["subject"]) for rid, r in split.recordings.items()
                            if r.get("subject") is not None}
            report = pose_report(loaded["pred"], loaded["gt"], loaded.get("vis"), skeleton=settings.skeleton,
                                 split=split, groups=loaded.get("groups"), train_gt=loaded.get("train_gt"),
                                 train_groups=loaded.get("train_groups"), train_vis=loaded.get("train_vis"),
                                 subjects=subjects, extra_notes=[_claimed_note()],
                                 capture=captured if draw else None, **spec, **common)
        else:
            recordings = dict(split.recordings) if split is not None and loaded.get("groups") is not None else None
            report = gesture_report(loaded["pred"], loaded["gt"], labels=given.get("label_set"), split=split,
                                    groups=loaded.get("groups"), train_gt=loaded.get("train_gt"),
                                    train_groups=loaded.get("train_groups"), recordings=recordings,
                                    extra_notes=[_claimed_note()], **spec, **common)
        return _write(report, out, md_path, draw, captured, force, messages)
    inputs = ScoreInputs(**{k: v for k, v in given.items() if v is not None})
    _check_task_inputs(task, inputs)
    if inputs.split is not None and inputs.manifest is None:
        from dataclasses import replace

        from rfbench.protocols.splitfile import named_manifest

        inputs = replace(inputs, manifest=named_manifest(inputs.split))  # recorded, so verify hashes and passes it
    if inputs.pred is None or (inputs.gt is None and inputs.rows is None):
        raise ValidationError("scoring needs predictions, and ground truth (`gt`) or a windows index (`rows`)")
    base = out.parent if out is not None else Path.cwd()
    argv = reproducer_argv(task, inputs, settings, bootstrap, options, out, plots)
    from rfbench.io.files import reads_recorded

    with reads_recorded():  # each input's recorded sha256 is of the bytes scored (one read), not of a second read
        loaded = _load_files(task, inputs, settings, base)
    reproducer = _reproducer(argv, options, base)
    common.update(loaded.provenance)
    if loaded.chain is not None:
        common["chain"] = loaded.chain + [{"step": "score", "argv": argv}]
    from rfbench.report.common import check_shared

    synthetic = bool(options.synthetic or (loaded.split is not None and loaded.split.provenance.get("synthetic")))
    shared, content = check_shared(loaded.split, synthetic, options.allow_shared_files)
    if task == "pose":
        report = pose_report(loaded.arrays["pred"], loaded.arrays["gt"], loaded.arrays.get("vis"),
                             skeleton=loaded.skeleton, split=loaded.split, groups=loaded.groups,
                             train_gt=loaded.arrays.get("train-gt"), train_groups=loaded.train_groups,
                             train_vis=loaded.arrays.get("train-vis"), subjects=loaded.subjects,
                             reproducer=reproducer, inputs=loaded.inputs, capture=captured if draw else None,
                             **spec, **common)
    else:
        report = gesture_report(loaded.arrays["pred"], loaded.arrays["gt"], labels=loaded.labels, split=loaded.split,
                                groups=loaded.groups, train_gt=loaded.arrays.get("train-gt"),
                                train_groups=loaded.train_groups, recordings=loaded.recordings,
                                reproducer=reproducer, inputs=loaded.inputs, **spec, **common)
    if content is not None:  # the split's audit as this report shows it gains the content check made here
        audit = report["split"]["audit"]
        audit["checks"].append(content)
        audit["passed"] = bool(audit["passed"] and content["passed"])
        if not content["passed"]:
            report["notes"].append(f"content shared across the split's sides: {content['detail']}; these numbers "
                                   "partly measure memory of training data (scored anyway: --allow-shared-files)")
    if shared:
        report["shared_files"] = {"count": len(shared), "files": shared, "allowed": bool(options.allow_shared_files)}
        report["notes"].append(f"the split's train and test sides share {len(shared)} byte-identical dataset "
                               "file(s) (listed under shared_files): these numbers partly measure memory of "
                               "training data" + (" (scored anyway: --allow-shared-files)"
                                                  if options.allow_shared_files else ""))
    manifest = _split_manifest(loaded.split)
    return _write(report, out, md_path, draw, captured, force, messages, _places(loaded, manifest), manifest)


def _split_manifest(split) -> tuple | None:
    """``(Manifest, its file)`` of a checked split: the manifest its sides were recomputed on, not read again."""
    if split is None or split.manifest_file is None:
        return None
    manifest = split.manifest_object
    if manifest is None:
        from rfbench.datasets.manifest import read_manifest

        manifest = read_manifest(split.manifest_file)
    return manifest, split.manifest_file


def _places(loaded, manifest: tuple | None) -> list[Path]:
    """Folders verify will read beside the inputs: the split's dataset root, and the label set a windows index
    names."""
    out = []
    if manifest is not None:
        out.append(manifest[0].root_dir(manifest[1]))
    if loaded.label_file is not None:
        out.append(loaded.label_file)
    return out


#: The units of the pose ground truth rfbench reads from a dataset (MM-Fi's joints: metres).
DATASET_POSE_UNITS = "m"


@dataclass
class _Loaded:
    arrays: dict
    split: Any
    groups: Any
    train_groups: Any
    inputs: list
    skeleton: Any = None
    labels: Any = None
    subjects: dict | None = None
    recordings: dict | None = None
    provenance: dict = field(default_factory=dict)  # ground_truth(_files), excluded, dropped (with `rows`)
    chain: list | None = None  # windows and predict steps, when rfbench predict made the predictions
    label_file: Path | None = None  # the label set a windows index names (verify reads it to replay windows)


def _load_files(task: str, inputs: ScoreInputs, settings, base: Path) -> _Loaded:
    """Check, load and hash the input files of a run (both tasks): arrays without pickles, the split re-checked
    against its manifest (which joins the inputs), row → recording ids sized by the ground truth."""
    from rfbench.metrics.skeletons import BUILTIN, get_skeleton
    from rfbench.protocols.splitfile import load_groups
    from rfbench.report.common import check_input_files, load_array, load_split_input, record_inputs

    files = [(role, flag, path) for role, flag, path in inputs.files(task) if role != "manifest"]
    skeleton = labels = None
    if task == "pose":
        if str(settings.skeleton) not in BUILTIN:
            if Path(settings.skeleton).suffix.lower() not in (".toml", ".json"):
                get_skeleton(settings.skeleton)  # raises: unknown name
            files.append(("skeleton", "--skeleton", Path(settings.skeleton)))
    check_input_files(files)
    if task == "pose":
        skeleton = get_skeleton(settings.skeleton)
    elif inputs.label_set is not None:
        from rfbench.metrics.classify import LabelSet

        labels = LabelSet.from_file(inputs.label_set)
    npy_roles = ("pred", "gt", "vis", "train-gt", "train-vis")
    arrays = {role: load_array(path, flag) for role, flag, path in files if path is not None and role in npy_roles}
    split = load_split_input(inputs.split, inputs.manifest, files)
    if inputs.rows is not None:
        if task == "pose" and settings.units not in (DATASET_POSE_UNITS, "unspecified"):
            raise ValidationError(f"--units {settings.units!r}: the ground truth --rows reads from the dataset "
                                  f"(MM-Fi's joints) is in metres, so every distance would be named in the wrong "
                                  f"unit; use --units {DATASET_POSE_UNITS}")
        return _from_dataset(task, inputs, split, arrays, files, base, skeleton)
    n_rows = arrays["gt"].shape[0] if arrays["gt"].ndim >= 1 else 0
    groups = load_groups(inputs.groups, n_rows, "`groups`") if inputs.groups is not None else None
    train_groups = None
    if inputs.train_groups is not None:
        n_train = arrays["train-gt"].shape[0] if arrays["train-gt"].ndim else 0
        train_groups = load_groups(inputs.train_groups, n_train, "`train_groups`")
    subjects = recordings = None
    if split is not None:
        subjects = {rid: str(r["subject"]) for rid, r in split.recordings.items() if r.get("subject") is not None}
        recordings = dict(split.recordings) if groups is not None else None
    return _Loaded(arrays, split, groups, train_groups, record_inputs(files, base), skeleton, labels, subjects,
                   recordings)


def _from_dataset(task: str, inputs: ScoreInputs, split, arrays: dict, files: list, base: Path,
                  skeleton) -> _Loaded:
    """``rows`` given: the test side's targets and row ids from the dataset (checked against the index), the
    train side's under the same window settings; ``pred`` must have one row per index row."""
    import numpy as np

    from rfbench.datasets.windows import load_index, test_truth, train_targets
    from rfbench.report.common import GT_FROM_DATASET, record_inputs

    index = load_index(inputs.rows, check_arrays=False)
    if index.task != task:
        raise ValidationError(f"{inputs.rows}: the index holds {index.task} windows, not {task}")
    truth = test_truth(split, index)  # the split checked above: not read, recomputed and audited again
    train = train_targets(split, index)
    pred = arrays["pred"]
    n_rows = len(truth.rows)
    if pred.ndim < 1 or pred.shape[0] != n_rows:
        raise ValidationError(f"`pred` has {pred.shape[0] if pred.ndim else 0} rows but the index has {n_rows}: "
                              f"predictions follow the index's rows, one each, in its order")
    gt, train_gt, labels = truth.y, train.y, None
    if task == "gesture":
        names = np.asarray(truth.labels["names"])
        labels = list(truth.labels["names"])
        gt, train_gt = names[truth.y], names[train.y]
    arrays = dict(arrays, gt=gt, **{"train-gt": train_gt})
    recordings = dict(split.recordings)
    subjects = {rid: str(r["subject"]) for rid, r in recordings.items() if r.get("subject") is not None}
    source = GT_FROM_DATASET + (_label_source(index, split) if task == "gesture" else "")
    release = index.doc["settings"].get("release")
    if release is not None:  # both Widar3.0 releases in the split: the index's release is what it covers
        import dataclasses

        def of(ids):
            return frozenset(r for r in ids if (recordings.get(r) or {}).get("release") == release)

        other = len(split.test) - len(of(split.test))
        split = dataclasses.replace(split, train=of(split.train), test=of(split.test), release=release)
        source += (f"; the {release} release's recordings only (windows --release {release}): the split's {other} "
                   "test recording(s) of the other release are not this report's")
    provenance = {"ground_truth": source, "ground_truth_files": truth.files, "excluded": truth.excluded,
                  "dropped": truth.dropped}  # recomputed from the dataset (test_truth checks the index's agree)
    record = _prediction_record(inputs, files, index)
    loaded = _Loaded(arrays, split, truth.ids, train.ids, record_inputs(files, base), skeleton, labels, subjects,
                     recordings, provenance)
    if record is not None:
        loaded.chain = _chain(inputs, index, record)
    if index.doc["settings"].get("label_set"):
        loaded.label_file = index.folder / index.doc["settings"]["label_set"]
    return loaded


def _label_source(index, split) -> str:
    """Where a gesture index's labels come from, for the report's ground truth: the manifest's field, and for a
    corpus ingested with a file-name template the template field ``ingest files`` took it from (the reader of a
    report must be able to see that the "label" was the gesture, not the repetition number)."""
    key = str((index.doc["labels"] or {}).get("key") or "label")
    text = f"; labels from the manifest's recordings (their {key!r})"
    manifest = getattr(split, "manifest_object", None)
    extra = getattr(manifest, "extra", None) or {}
    roles = extra.get("roles") if isinstance(extra.get("roles"), Mapping) else {}
    if key == "label" and extra.get("template") is not None and isinstance(roles.get("label"), str):
        text += f", which ingest took from the file-name template's field {roles['label']!r}"
    return text


def _prediction_record(inputs: ScoreInputs, files: list, index):
    """The ``pred.json`` beside ``pred`` when ``rfbench predict`` made the predictions (or None): checked
    against ``pred.npy`` and the index, and its model and record joined to the inputs.

    The chain a report then carries is replayed by verify against the very file scored, so the record must
    describe exactly that file (the same file, not one of the same name elsewhere) and exactly the windows
    ``rows`` indexes (the index's sha256, and its X's)."""
    from rfbench.io.files import sha256_file
    from rfbench.nn.prediction_record import load_prediction_record, record_path_for

    path = record_path_for(inputs.pred)
    if not os.path.lexists(path):  # a dangling link is not "no record": load it to say what is wrong
        return None
    record = load_prediction_record(path)
    if not os.path.samefile(record.pred_path, inputs.pred):
        raise ValidationError(f"{path}: the record describes the predictions {record.pred_path}, not `pred` "
                              f"({inputs.pred}); score the file rfbench predict wrote (or move the record away to "
                              "score other predictions without a chain)")
    if record.index_path is not None and not (os.path.exists(record.index_path)
                                              and os.path.samefile(record.index_path, inputs.rows)):
        # verify replays the chain from the index the record names: it must be `rows` itself, not a copy
        raise ValidationError(f"{path}: the record names the windows index {record.index_path}, not `rows` "
                              f"({inputs.rows}); score with the index rfbench predict read")
    recorded = (record.doc.get("windows") or {}).get("index", {}).get("sha256")
    # the digest of the index read (a second read of `rows` may find another file in its place)
    if recorded != (index.sha256 or sha256_file(inputs.rows)[0]):
        raise ValidationError(f"{path}: the predictions were made over another windows index than `rows` "
                              f"({inputs.rows}); score them with the index rfbench predict read")
    if (record.doc.get("x") or {}).get("sha256") != index.doc["x"]["sha256"]:
        raise ValidationError(f"{path}: the predictions were made over another X than the one `rows` "
                              f"({inputs.rows}) describes (its sha256 differs); run rfbench predict on that folder")
    files += [("model", None, record.model_path), ("pred-record", None, record.path)]
    return record


def _chain(inputs: ScoreInputs, index, record) -> list[dict]:
    """The steps from dataset files to numbers (``rfbench verify`` replays them): the windows the predictions
    were made over, the model run, then the score itself (its argv is the report's reproducer)."""
    from dataclasses import replace

    from rfbench.datasets.windows import WindowSettings

    settings = WindowSettings.from_dict(index.doc["settings"])
    if settings.label_set is not None:  # recorded relative to the index; shown as one would type it here
        settings = replace(settings, label_set=_shown(index.folder / settings.label_set, False))
    windows = ["rfbench", "windows", _shown(inputs.split, False), "--side", "test", "-o",
               _shown(Path(inputs.rows).parent, False), *settings.to_argv()]
    predict = ["rfbench", "predict", _shown(record.model_path, False), "--windows",
               _shown(Path(inputs.rows).parent, False), "-o", _shown(inputs.pred, False),
               *record.settings.argv()]
    return [{"step": "windows", "argv": windows}, {"step": "predict", "argv": predict}]


def _check_task_inputs(task: str, inputs: ScoreInputs) -> None:
    from rfbench.settings import flag_of, options_of

    for f, o in options_of(ScoreInputs):
        if o.tasks is not None and task not in o.tasks and getattr(inputs, f.name) is not None:
            raise ValidationError(f"{flag_of(f)} applies to {' and '.join(o.tasks)} scoring only")


def _load_if_path(value, name: str):
    if value is None or _is_array(value):
        return value
    if name == "label_set":
        return value
    from rfbench.io.files import load_npy

    return load_npy(value, name)
