"""``rfbench score``: accuracy under a declared metric, beside a training-split baseline, as a report."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from rfbench.commands._common import emit_json, guard, stdout_console

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
    pred: Annotated[Path, typer.Option("--pred", help="Predictions .npy: (N, K, 2|3) joints.", show_default=False)],
    gt: Annotated[Path, typer.Option("--gt", help="Ground truth .npy, same shape as --pred.", show_default=False)],
    skeleton: Annotated[str, typer.Option("--skeleton", help="Joint layout: coco17, h36m17, or a .toml/.json "
                                          "layout file.", show_default=False)],
    units: Annotated[str, typer.Option("--units", help="Coordinate units of --pred/--gt (m, mm, px, "
                                       "normalized...): part of every label.", show_default=False)],
    task: Annotated[str, typer.Option("--task", help="What is scored: pose (gesture is planned).")] = "pose",
    vis: Annotated[Optional[Path], typer.Option("--vis", help="Ground-truth visibility .npy (N, K): >0 or true = "
                                                "visible. Default: all visible.")] = None,
    norm: Annotated[str, typer.Option("--norm", help="PCK normalizations, comma-separated: hip-width, torso, bbox, "
                                      "bbox-max-side, abs:T.")] = "torso",
    k: Annotated[str, typer.Option("--k", help="PCK thresholds (fractions of the normalizer), comma-separated.")]
    = "0.05,0.1,0.2,0.5",
    comparison: Annotated[str, typer.Option("--comparison", help="A joint is correct when distance/normalizer <= k "
                                            "('<=' or 'le') or < k ('<' or 'lt').")] = "<=",
    metrics: Annotated[Optional[str], typer.Option("--metrics", help="Comma-separated subset of pck, pck-auc, oks, "
                                                   "mpjpe, pa-mpjpe. Default: all that apply.")] = None,
    averaging: Annotated[str, typer.Option("--averaging", help="micro (over joints) and/or macro (per joint).")]
    = "micro,macro",
    auc_n: Annotated[int, typer.Option("--auc-n", help="PCK-AUC: number of thresholds k_max*i/n, i=0..n-1.")] = 20,
    auc_max: Annotated[float, typer.Option("--auc-max", help="PCK-AUC: k_max.")] = 1.0,
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
                                                     "mean-pose baseline.")] = None,
    train_groups: Annotated[Optional[Path], typer.Option("--train-groups", help="Recording id per --train-gt row "
                                                         ".npy; all on the split's train side.")] = None,
    train_vis: Annotated[Optional[Path], typer.Option("--train-vis", help="Visibility of --train-gt (N, K).")] = None,
    cluster_by: Annotated[str, typer.Option("--cluster-by", help="Bootstrap clusters: recording, or subject (from "
                                            "the split's manifest).")] = "recording",
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Cluster-bootstrap replicates (0 = no intervals).")]
    = 1000,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence level of the intervals.")] = 0.95,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    synthetic: Annotated[bool, typer.Option("--synthetic", help="The data is generated: tag the report "
                                            "SYNTHETIC.")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the report JSON here, and its Markdown "
                                                "rendering beside it (.md).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing report files.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the report JSON on stdout instead of a "
                                           "table.")] = False,
) -> None:
    """Score predictions under a declared metric, beside a mean-pose baseline from the training split.

    Every number carries its full spec (skeleton, normalization and its joints, k, comparison, averaging,
    units) and label. The skeleton is checked on the ground truth; hip-width, torso and OKS are refused when
    it does not fit, unless --trust-layout. With --split, --groups, --train-gt and --train-groups the report
    holds the mean training pose as a baseline (training ids must lie on the split's train side, scored ids
    on its test side; a split whose audit failed is refused with exit 1). With --groups, a seeded cluster
    bootstrap gives an interval for every number and for model minus baseline. The report (-o) is tagged
    MEASURED (or SYNTHETIC) with its reproducer and input hashes: re-check it with rfbench verify.
    """
    with guard():
        from rfbench.errors import ValidationError
        from rfbench.io.archive import check_writable, write_json, write_text

        if task not in TASKS:
            raise ValidationError(f"unknown task {task!r}; use pose")
        if task == "gesture":
            raise ValidationError("task gesture is not available in this version of rfbench; use --task pose")
        cmp = _COMPARISONS.get(comparison.strip())
        if cmp is None:
            raise ValidationError(f"--comparison must be '<=' (le) or '<' (lt), got {comparison!r}")
        md_path = None
        if out is not None:
            if out.suffix.lower() == ".md":
                raise ValidationError("-o names the JSON report (e.g. report.json); the .md is written beside it")
            check_writable(out, force)
            md_path = out.with_suffix(".md")
            check_writable(md_path, force)
        argv = _reproducer_argv(locals())
        from rfbench.report.pose import score_pose_files
        from rfbench.report.render import render_markdown, render_terminal

        report = score_pose_files(
            pred=pred, gt=gt, vis=vis, skeleton=skeleton, units=units, split=split, groups=groups,
            train_gt=train_gt, train_groups=train_groups, train_vis=train_vis,
            reproducer={"argv": argv, "cwd": os.getcwd()},
            base=(out.parent if out is not None else Path.cwd()), cluster_by=cluster_by,
            metrics=_list(metrics, "--metrics") if metrics is not None else None,
            normalizations=_list(norm, "--norm"), ks=_floats(k, "--k"), comparison=cmp,
            averaging=_list(averaging, "--averaging"), auc_n=auc_n, auc_max=auc_max, oks_area=oks_area.strip(),
            sigmas=_floats(sigmas, "--sigmas") if sigmas is not None else None, trust_layout=trust_layout,
            n_boot=bootstrap, level=confidence, seed=seed, synthetic=synthetic,
        )
        if out is not None:
            write_json(out, report, force=force)
            write_text(md_path, render_markdown(report), force=force)
    if json_out:
        emit_json(report)
        return
    console = stdout_console()
    if not console.is_terminal:
        console.width = 200  # piped or captured: keep each result on one line
    console.print(render_terminal(report))
    if out is not None:
        console.print(f"wrote {out} and {md_path} ({report['evidence']}); check with: rfbench verify {out}")


def _reproducer_argv(opts: dict) -> list[str]:
    """The canonical command line of this run: every setting explicit, so a re-run does not depend on
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
    for name in ("split", "groups", "train_gt", "train_groups", "train_vis"):
        if opts[name] is not None:
            argv += ["--" + name.replace("_", "-"), str(opts[name])]
    argv += ["--cluster-by", opts["cluster_by"], "--bootstrap", str(opts["bootstrap"]), "--confidence",
             repr(float(opts["confidence"])), "--seed", str(opts["seed"])]
    if opts["synthetic"]:
        argv.append("--synthetic")
    if opts["out"] is not None:
        argv += ["-o", str(opts["out"])]
    return argv
