"""``rfbench score``: accuracy under a declared metric, beside a training-split baseline, as a report."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from dataclasses import dataclass, field

from rfbench.commands._common import emit_json, finite_float, guard, stderr_console, stdout_console

COMMAND_NAME = "score"
TASKS = ("pose", "gesture")
_COMPARISONS = {"<=": "<=", "le": "<=", "<": "<", "lt": "<"}


def _list(text: str, what: str) -> list[str]:
    from rfbench.errors import ValidationError

    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise ValidationError(f"{what} is empty; give a comma-separated list")
    return items


def _floats(text: str, what: str) -> list[float]:
    from rfbench.errors import ValidationError

    out = []
    for t in _list(text, what):
        try:
            out.append(float(t))
        except ValueError:
            raise ValidationError(f"{what}: {t!r} is not a number") from None
    return out


def score(
    pred: Annotated[Path, typer.Option("--pred", help="Predictions .npy. pose: (N, K, 2|3) joints; gesture: labels "
                                       "(N,) (names, or label-set indices) or scores (N, C) in label-set order.",
                                       show_default=False)],
    gt: Annotated[Path, typer.Option("--gt", help="Ground truth .npy. pose: same shape as --pred; gesture: labels "
                                     "(N,).", show_default=False)],
    skeleton: Annotated[Optional[str], typer.Option("--skeleton", help="pose: joint layout: coco17, h36m17, or a "
                                                    ".toml/.json layout file (required).", show_default=False)]
    = None,
    units: Annotated[Optional[str], typer.Option("--units", help="pose: coordinate units of --pred/--gt (m, mm, px, "
                                                 "normalized...), part of every label. Not given: every label "
                                                 "says 'units unspecified'.", show_default=False)] = None,
    task: Annotated[str, typer.Option("--task", help="What is scored: pose (joints) or gesture (class labels).")]
    = "pose",
    label_set: Annotated[Optional[Path], typer.Option("--label-set", help="gesture: names.txt, one class name per "
                                                      "line: fixes the class order; integer labels index it (from "
                                                      "0). Default: the sorted names seen.")] = None,
    top_k: Annotated[Optional[str], typer.Option("--top-k", help="gesture, with scores: top-k thresholds, "
                                                 "comma-separated. Default: 3,5 where below the class count.")]
    = None,
    domains: Annotated[str, typer.Option("--domains", help="gesture: per-domain breakdown keys from the split's "
                                         "manifest (room, location, orientation, subject), auto (those present) or "
                                         "none.")] = "auto",
    vis: Annotated[Optional[Path], typer.Option("--vis", help="Ground-truth visibility .npy (N, K): >0 or true = "
                                                "visible. Default: all visible.")] = None,
    norm: Annotated[str, typer.Option("--norm", help="PCK normalizations, comma-separated: hip-width, torso, bbox, "
                                      "bbox-max-side, abs:T.")] = "torso",
    k: Annotated[str, typer.Option("--k", help="PCK thresholds (fractions of the normalizer), comma-separated.")]
    = "0.05,0.1,0.2,0.5",
    comparison: Annotated[str, typer.Option("--comparison", help="A joint is correct when distance/normalizer <= k "
                                            "('<=' or 'le') or < k ('<' or 'lt').")] = "<=",
    metrics: Annotated[Optional[str], typer.Option("--metrics", help="Comma-separated subset; pose: pck, pck-auc, "
                                                   "oks, mpjpe, pa-mpjpe; gesture: accuracy, balanced-accuracy, "
                                                   "macro-f1, weighted-f1, top-k. Default: all that apply.")] = None,
    averaging: Annotated[str, typer.Option("--averaging", help="micro (over joints) and/or macro (per joint).")]
    = "micro,macro",
    auc_n: Annotated[int, typer.Option("--auc-n", help="PCK-AUC: number of thresholds k_max*i/n, i=0..n-1.")] = 20,
    auc_max: Annotated[float, typer.Option("--auc-max", parser=finite_float(), help="PCK-AUC: k_max.")] = 1.0,
    oks_area: Annotated[str, typer.Option("--oks-area", help="OKS area: bbox (0.53 x box w x h) or a constant in "
                                          "units².")] = "bbox",
    sigmas: Annotated[Optional[str], typer.Option("--sigmas", help="OKS sigmas, one per joint, comma-separated "
                                                  "(needed for layouts without published sigmas).")] = None,
    trust_layout: Annotated[bool, typer.Option("--trust-layout", help="Compute layout-dependent numbers even if the "
                                               "skeleton fails its plausibility check (recorded in the report).")]
    = False,
    split: Annotated[Optional[Path], typer.Option("--split", help="split.json the rows come from (needs "
                                                  "--groups).")] = None,
    groups: Annotated[Optional[Path], typer.Option("--groups", help="Recording id per scored row .npy (strings or "
                                                   "integers); all on the split's test side.")] = None,
    train_gt: Annotated[Optional[Path], typer.Option("--train-gt", help="Training-split ground truth .npy, for the "
                                                     "baseline (pose: mean training pose; gesture: majority class "
                                                     "and class prior).")] = None,
    train_groups: Annotated[Optional[Path], typer.Option("--train-groups", help="Recording id per --train-gt row "
                                                         ".npy; all on the split's train side.")] = None,
    train_vis: Annotated[Optional[Path], typer.Option("--train-vis", help="Visibility of --train-gt (N, K).")] = None,
    cluster_by: Annotated[str, typer.Option("--cluster-by", help="Bootstrap clusters: recording, or subject (from "
                                            "the split's manifest).")] = "recording",
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Cluster-bootstrap replicates (0 = no intervals).")]
    = 1000,
    confidence: Annotated[float, typer.Option("--confidence", parser=finite_float(), help="Confidence level of the intervals.")] = 0.95,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    synthetic: Annotated[bool, typer.Option("--synthetic", help="The data is generated: tag the report "
                                            "SYNTHETIC.")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the report JSON here, and its Markdown "
                                                "rendering beside it (.md).")] = None,
    plots: Annotated[bool, typer.Option("--plots", help="With -o: also draw PNG pictures beside the report "
                                        "(pose: PCK-vs-threshold curve and per-joint bars; gesture: confusion "
                                        "matrix) and embed them in the .md. Needs the plot extra "
                                        "(pip install 'rfbench[plot]'); without it the report is still written "
                                        "and the pictures are skipped with a message.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing report files.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report JSON on stdout instead of a "
                                           "table.")] = False,
) -> None:
    """Score predictions under a declared metric, beside a baseline from the training split.

    pose: every number carries its full spec (skeleton, normalization and its joints, k, comparison,
    averaging, units) and label. The skeleton is checked on the ground truth; hip-width, torso and OKS are
    refused when it does not fit, unless --trust-layout. The baseline is the mean training pose.

    gesture: accuracy, balanced accuracy, macro- and weighted-F1, per-class precision/recall/F1, the confusion
    matrix and (from scores) top-k, over a label set (--label-set; labels outside it are an error, declared
    classes absent from the data are reported). The baselines are the majority class and the class prior of
    the training labels; with a split whose manifest is at hand, accuracy and macro-F1 are broken down by room,
    location, orientation and subject, and every label is checked against its recording's gesture name.

    With --split, --groups, --train-gt and --train-groups the report holds the baseline (training ids must lie
    on the split's train side, scored ids on its test side; a split whose audit failed is refused with exit 1).
    With --groups, a seeded cluster bootstrap gives an interval for every number and for model minus baseline.
    The report (-o) is tagged MEASURED (or SYNTHETIC) with its reproducer and input hashes: re-check it with
    rfbench verify. With --plots it also gets PNG pictures beside it, embedded in its .md (pose: PCK against
    the threshold with bootstrap bands, per-joint bars; gesture: the confusion matrix); they need matplotlib
    (pip install 'rfbench[plot]') and are not part of the JSON that verify compares.
    """
    options = dict(locals())
    with guard():
        run = run_score(**options)
    report, out = run.report, run.out
    if json_out:
        emit_json(report)
        for line in run.messages:
            stderr_console().print(line, markup=False)
        return
    console = stdout_console()
    if not console.is_terminal:
        console.width = 200  # piped or captured: keep each result on one line
    console.print(_render_terminal(report))
    for line in run.messages:
        console.print(line, markup=False)
    if out is not None:
        console.print(f"wrote {out} and {run.md_path} ({report['evidence']}); check with: rfbench verify {out}",
                      markup=False)


def _render_terminal(report):
    from rfbench.report.render import render_terminal

    return render_terminal(report)


@dataclass
class ScoreRun:
    """What one ``rfbench score`` run produced: the report, where it was written, the pictures drawn and the
    lines to show the user (pictures written or skipped)."""

    report: dict
    out: Optional[Path] = None
    md_path: Optional[Path] = None
    pictures: list = field(default_factory=list)
    messages: list = field(default_factory=list)


def run_score(**options) -> ScoreRun:
    """Run ``rfbench score`` with the given options (the command's parameter names; unnamed ones take the
    command's defaults): score, write the report, its Markdown and (``plots=True``) its pictures.

    This is the command's own code path, for callers such as ``rfbench demo`` that must produce exactly what
    the command line would, reproducer included. Raises RfbenchError subclasses for bad input.
    """
    import inspect

    from rfbench.errors import ValidationError
    from rfbench.io.files import check_writable, write_json, write_text

    opts = {name: p.default for name, p in inspect.signature(score).parameters.items()}
    unknown = set(options) - set(opts)
    if unknown:
        raise ValidationError(f"unknown score option(s): {', '.join(sorted(unknown))}")
    opts.update(options)
    task, out, force = opts["task"], opts["out"], opts["force"]
    if task not in TASKS:
        raise ValidationError(f"unknown task {task!r}; use pose or gesture")
    _check_task_options(task, opts)
    md_path = None
    if opts["plots"] and out is None:
        raise ValidationError("--plots writes PNG files beside the report: give -o report.json as well")
    if out is not None:
        out = Path(out)
        if out.suffix.lower() == ".md":
            raise ValidationError("-o names the JSON report (e.g. report.json); the .md is written beside it")
        check_writable(out, force)
        md_path = out.with_suffix(".md")
        check_writable(md_path, force)
    draw = bool(opts["plots"])
    messages = []
    if draw:
        from rfbench.report.plots import PLOT_HINT, have_matplotlib, picture_paths

        if not have_matplotlib():
            draw = False
            messages.append(f"plots skipped: {PLOT_HINT}")
        else:
            for p in picture_paths(out, task):
                check_writable(p, force)
    base = out.parent if out is not None else Path.cwd()
    captured: dict = {}
    if task == "pose":
        report = _score_pose(opts, base, captured if draw else None)
    else:
        report = _score_gesture(opts, base)
    from rfbench.report.render import render_markdown

    pictures = []
    if out is not None:
        if draw:
            from rfbench.report.plots import write_pictures

            pictures = write_pictures(report, captured, out, force=force)
            messages += [f"wrote {p} ({caption})" for caption, p in pictures]
        write_json(out, report, force=force)
        write_text(md_path, render_markdown(report, [(c, p.name) for c, p in pictures]), force=force)
    return ScoreRun(report, out, md_path, [p for _, p in pictures], messages)


#: Options of one task only, with their defaults: giving them to the other task is an error.
_POSE_ONLY = {"vis": None, "skeleton": None, "units": None, "norm": "torso", "k": "0.05,0.1,0.2,0.5",
              "comparison": "<=", "averaging": "micro,macro", "auc_n": 20, "auc_max": 1.0, "oks_area": "bbox",
              "sigmas": None, "trust_layout": False, "train_vis": None}
_GESTURE_ONLY = {"label_set": None, "top_k": None, "domains": "auto"}


def _check_task_options(task: str, opts: dict) -> None:
    from rfbench.errors import ValidationError

    other, name = (_GESTURE_ONLY, "gesture") if task == "pose" else (_POSE_ONLY, "pose")
    for key, default in other.items():
        if opts[key] != default:
            raise ValidationError(f"--{key.replace('_', '-')} applies to --task {name} only")
    if task == "pose":
        if opts["skeleton"] is None:
            raise ValidationError("--task pose needs --skeleton (coco17, h36m17, or a layout file)")
        if opts["units"] is None:
            opts["units"] = "unspecified"  # declared as such in every label, never silently assumed


def _score_pose(opts: dict, base: Path, capture: dict | None = None) -> dict:
    from rfbench.errors import ValidationError
    from rfbench.report.pose import score_pose_files

    cmp = _COMPARISONS.get(opts["comparison"].strip())
    if cmp is None:
        raise ValidationError(f"--comparison must be '<=' (le) or '<' (lt), got {opts['comparison']!r}")
    argv = _pose_argv(opts)
    sigmas = opts["sigmas"]
    return score_pose_files(
        pred=opts["pred"], gt=opts["gt"], vis=opts["vis"], skeleton=opts["skeleton"], units=opts["units"],
        split=opts["split"], groups=opts["groups"], train_gt=opts["train_gt"], train_groups=opts["train_groups"],
        train_vis=opts["train_vis"], reproducer={"argv": argv, "cwd": os.getcwd()}, base=base,
        cluster_by=opts["cluster_by"],
        metrics=_list(opts["metrics"], "--metrics") if opts["metrics"] is not None else None,
        normalizations=_list(opts["norm"], "--norm"), ks=_floats(opts["k"], "--k"), comparison=cmp,
        averaging=_list(opts["averaging"], "--averaging"), auc_n=opts["auc_n"], auc_max=opts["auc_max"],
        oks_area=opts["oks_area"].strip(), sigmas=_floats(sigmas, "--sigmas") if sigmas is not None else None,
        trust_layout=opts["trust_layout"], n_boot=opts["bootstrap"], level=opts["confidence"], seed=opts["seed"],
        synthetic=opts["synthetic"], capture=capture,
    )


def _ints(text: str, what: str) -> list[int]:
    from rfbench.errors import ValidationError

    out = []
    for t in _list(text, what):
        try:
            out.append(int(t))
        except ValueError:
            raise ValidationError(f"{what}: {t!r} is not an integer") from None
    return out


def _score_gesture(opts: dict, base: Path) -> dict:
    from rfbench.report.gesture import score_gesture_files

    argv = _gesture_argv(opts)
    domains = opts["domains"].strip()
    return score_gesture_files(
        pred=opts["pred"], gt=opts["gt"], label_set=opts["label_set"], split=opts["split"], groups=opts["groups"],
        train_gt=opts["train_gt"], train_groups=opts["train_groups"], reproducer={"argv": argv, "cwd": os.getcwd()},
        base=base, cluster_by=opts["cluster_by"],
        domains=domains if domains in ("auto", "none") else _list(domains, "--domains"),
        metrics=_list(opts["metrics"], "--metrics") if opts["metrics"] is not None else None,
        top_k=_ints(opts["top_k"], "--top-k") if opts["top_k"] is not None else None,
        n_boot=opts["bootstrap"], level=opts["confidence"], seed=opts["seed"], synthetic=opts["synthetic"],
    )


def _gesture_argv(opts: dict) -> list[str]:
    """The canonical command line of a gesture run (every setting explicit; paths as given)."""
    argv = ["rfbench", "score", "--task", "gesture", "--pred", str(opts["pred"]), "--gt", str(opts["gt"])]
    if opts["label_set"] is not None:
        argv += ["--label-set", str(opts["label_set"])]
    if opts["metrics"] is not None:
        argv += ["--metrics", opts["metrics"]]
    if opts["top_k"] is not None:
        argv += ["--top-k", opts["top_k"]]
    argv += ["--domains", opts["domains"]]
    return argv + _baseline_and_output_argv(opts, ("split", "groups", "train_gt", "train_groups"))


def _pose_argv(opts: dict) -> list[str]:
    """The canonical command line of a pose run: every setting explicit, so a re-run does not depend on
    defaults; paths as given (verify points them at the files beside the report)."""
    argv = ["rfbench", "score", "--task", opts["task"], "--pred", str(opts["pred"]), "--gt", str(opts["gt"])]
    if opts["vis"] is not None:
        argv += ["--vis", str(opts["vis"])]
    argv += ["--skeleton", opts["skeleton"], "--units", opts["units"], "--norm", opts["norm"], "--k", opts["k"],
             "--comparison", _COMPARISONS[opts["comparison"].strip()], "--averaging", opts["averaging"],
             "--auc-n", str(opts["auc_n"]), "--auc-max", repr(float(opts["auc_max"])), "--oks-area",
             opts["oks_area"]]
    if opts["metrics"] is not None:
        argv += ["--metrics", opts["metrics"]]
    if opts["sigmas"] is not None:
        argv += ["--sigmas", opts["sigmas"]]
    if opts["trust_layout"]:
        argv.append("--trust-layout")
    return argv + _baseline_and_output_argv(opts, ("split", "groups", "train_gt", "train_groups", "train_vis"))


def _baseline_and_output_argv(opts: dict, files: tuple[str, ...]) -> list[str]:
    """The end of both tasks' canonical command lines: the split and baseline files given (``files``), the
    bootstrap settings, then the output options."""
    argv = []
    for name in files:
        if opts[name] is not None:
            argv += ["--" + name.replace("_", "-"), str(opts[name])]
    argv += ["--cluster-by", opts["cluster_by"], "--bootstrap", str(opts["bootstrap"]), "--confidence",
             repr(float(opts["confidence"])), "--seed", str(opts["seed"])]
    if opts["synthetic"]:
        argv.append("--synthetic")
    if opts["out"] is not None:
        argv += ["-o", str(opts["out"])]
    if opts["plots"]:
        argv.append("--plots")
    return argv
