"""``rfbench score``: accuracy under a declared metric, beside a training-split baseline, as a report.

Thin: the options are derived from the settings classes of :mod:`rfbench.report.settings` (each declared
there once: flag, default, bounds, help); the command parses them into those settings, calls
:func:`rfbench.report.score.score_pose` or :func:`~rfbench.report.score.score_gesture`, and renders.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Optional

import typer

from rfbench.commands._common import emit_json, guard, output_file, stderr_console, stdout_console
from rfbench.report.settings import (
    TASKS,
    BootstrapSettings,
    GestureSettings,
    PoseSettings,
    ReportOptions,
    ScoreInputs,
)
from rfbench.settings import typer_parameters

COMMAND_NAME = "score"
_SETTINGS = (ScoreInputs, PoseSettings, GestureSettings, BootstrapSettings, ReportOptions)

HELP = """Score predictions under a declared metric, beside a baseline from the training split.

pose: every number carries its full spec (skeleton, normalization and its joints, k, comparison,
averaging, units) and label. The skeleton is checked on the ground truth; hip-width, torso and OKS are
refused when it does not fit, unless --trust-layout. The baseline is the mean training pose.

gesture: accuracy, balanced accuracy, macro- and weighted-F1, per-class precision/recall/F1, the confusion
matrix and (from scores) top-k, over a label set (--label-set; labels outside it are an error, declared
classes absent from the data are reported). The baselines are the majority class and the class prior of
the training labels; with a split, accuracy and macro-F1 are broken down by room, location, orientation and
subject from its manifest, and every label is checked against its recording's gesture name.

With --split, --groups, --train-gt and --train-groups the report holds the baseline (training ids must lie
on the split's train side, scored ids on its test side). The split is re-checked against its manifest: a
split whose sides are not what its protocol gives, or whose audit fails, is refused with exit 1; every test
recording must be scored unless --allow-partial. With --groups, a seeded cluster bootstrap gives an interval
for every number and for model minus baseline. The report (-o) is tagged MEASURED (or SYNTHETIC) with its
reproducer and input hashes: re-check it with rfbench verify. With --plots it also gets PNG pictures beside
it, embedded in its .md (pose: PCK against the threshold with bootstrap bands, per-joint bars; gesture: the
confusion matrix); they need matplotlib (pip install 'rfbench[plot]') and are not part of the JSON that
verify compares.
"""


def _score(ctx: typer.Context, **values) -> None:
    task = values.pop("task")
    out, plots, force, json_out = (values.pop(k) for k in ("out", "plots", "force", "json_out"))
    with guard():
        from rfbench.errors import ValidationError
        from rfbench.report.score import score_gesture, score_pose

        if task not in TASKS:
            raise ValidationError(f"unknown task {task!r}; use pose or gesture")
        from rfbench.settings import flag_of, options_of

        settings_cls, other = (PoseSettings, GestureSettings) if task == "pose" else (GestureSettings, PoseSettings)
        other_task = "gesture" if task == "pose" else "pose"
        stray = [f for f, o in options_of(ScoreInputs) if o.tasks and task not in o.tasks and values.get(f.name)]
        stray += [other.__dataclass_fields__[n] for n in other.given(values)
                  if n not in settings_cls.__dataclass_fields__]
        if stray:
            raise ValidationError(f"{flag_of(stray[0])} applies to --task {other_task} only")
        if task == "pose" and values.get("skeleton") is None:
            raise ValidationError("--task pose needs --skeleton (coco17, h36m17, or a layout file)")
        if values.get("convention") is not None:
            source = ctx.get_parameter_source
            explicit = [n for n in PoseSettings.SET_BY_CONVENTION if getattr(source(n), "name", "") == "COMMANDLINE"]
            if explicit:  # given on the command line, even at its default value
                word = {"norm": "normalizations"}.get(explicit[0], explicit[0])
                raise ValidationError(f"convention {values['convention']} sets the {word} itself; drop --{explicit[0]} "
                                      f"or drop the convention (see docs/metric-spec.md)")
        inputs = ScoreInputs.from_cli(**values)
        kwargs = dict(rows=inputs.rows, split=inputs.split, manifest=inputs.manifest, groups=inputs.groups,
                      train_gt=inputs.train_gt,
                      train_groups=inputs.train_groups, settings=settings_cls.from_cli(**values),
                      bootstrap=BootstrapSettings.from_cli(**values), options=ReportOptions.from_cli(**values),
                      out=out, plots=plots, force=force)
        if task == "pose":
            run = score_pose(inputs.pred, inputs.gt, vis=inputs.vis, train_vis=inputs.train_vis, **kwargs)
        else:
            run = score_gesture(inputs.pred, inputs.gt, label_set=inputs.label_set, **kwargs)
    report = run.report
    if json_out:
        emit_json(report)
        for line in run.messages:
            stderr_console().print(line, markup=False)
        return
    from rfbench.report.render import render_terminal

    console = stdout_console()
    if not console.is_terminal:
        console.width = 200  # piped or captured: keep each result on one line
    console.print(render_terminal(report))
    for line in run.messages:
        console.print(line, markup=False)
    if run.out is not None:
        import shlex

        check = f"; check with: {shlex.join(run.verify)}" if run.verify else ""
        console.print(f"wrote {run.out} and {run.md_path} ({report['evidence']}){check}", markup=False)


def _signature() -> inspect.Signature:
    P = inspect.Parameter
    task = P("task", P.KEYWORD_ONLY, default="pose",
             annotation=Annotated[str, typer.Option("--task", help="What is scored: pose (joints) or gesture (class "
                                                                   "labels).")])
    settings = typer_parameters(*_SETTINGS, required=("pred",))
    tail = [
        P("out", P.KEYWORD_ONLY, default=None, annotation=Annotated[Optional[Path], typer.Option(
            "--out", "-o", parser=output_file,
            help="Write the report JSON here, and its Markdown rendering beside it (.md).")]),
        P("plots", P.KEYWORD_ONLY, default=False, annotation=Annotated[bool, typer.Option(
            "--plots", help="With -o: also draw PNG pictures beside the report (pose: PCK-vs-threshold curve and "
                            "per-joint bars; gesture: confusion matrix) and embed them in the .md. Needs the plot "
                            "extra (pip install 'rfbench[plot]'); without it the report is still written and the "
                            "pictures are skipped with a message.")]),
        P("force", P.KEYWORD_ONLY, default=False, annotation=Annotated[bool, typer.Option(
            "--force", help="Overwrite existing report files.")]),
        P("json_out", P.KEYWORD_ONLY, default=False, annotation=Annotated[bool, typer.Option(
            "--json", help="Print the report JSON on stdout instead of a table.")]),
    ]
    ctx = P("ctx", P.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    return inspect.Signature([ctx, task] + settings + tail)


def score(ctx: typer.Context, **values) -> None:
    _score(ctx, **values)


score.__signature__ = _signature()
score.__doc__ = HELP
