"""``rfbench adapt``: fit a low-rank test-time adapter to a self-supervised proxy objective."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rfbench.commands._common import emit_json, finite_float, guard, output_file, stdout_console
from rfbench.commands._progress import progress


def adapt(
    source: Annotated[
        Optional[Path],
        typer.Argument(help="A CSI archive from `rfbench parse` (.npz with csi or csi_int8), or a .npy of "
                            "features (frames, dims). Omit with --synthetic.", show_default=False),
    ] = None,
    synthetic: Annotated[
        bool, typer.Option("--synthetic", help="Adapt on seeded synthetic features (64 frames x 30 dims) instead.")
    ] = False,
    out: Annotated[
        Optional[Path], typer.Option("--out", "-o", parser=output_file, help="Write the adapter (.npz) here.",
                                     show_default=False)
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --out file.")] = False,
    config: Annotated[
        Optional[Path], typer.Option("--config", show_default=False, help=(
            "Config file (default: rfbench.toml, or pyproject.toml with a tool.rfbench table, from the current "
            "folder up)."))
    ] = None,
    rank: Annotated[Optional[int], typer.Option("--rank", help="Adapter rank (config key adapt.rank).")] = None,
    steps: Annotated[Optional[int], typer.Option("--steps", help="Steps (config key adapt.steps).")] = None,
    lr: Annotated[Optional[float], typer.Option("--lr", parser=finite_float(), help="First step length tried per step "
                                                             "(config key adapt.learning_rate).")] = None,
    fd_step: Annotated[Optional[float], typer.Option("--fd-step", parser=finite_float(), help="Finite-difference step "
                                                                       "(config key adapt.fd_step).")] = None,
    temperature: Annotated[Optional[float], typer.Option(
        "--temperature", parser=finite_float(), help="Softmax temperature (config key adapt.temperature).")] = None,
    entropy_weight: Annotated[Optional[float], typer.Option(
        "--entropy-weight", parser=finite_float(),
        help="Weight of the entropy term (config key adapt.entropy_weight).")] = None,
    prototypes: Annotated[Optional[int], typer.Option("--prototypes", help="Prototypes of the entropy term "
                                                                           "(config key adapt.prototypes).")] = None,
    max_frames: Annotated[Optional[int], typer.Option("--max-frames", help="Frames used, from the start "
                                                                          "(config key adapt.max_frames).")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of the adapter's initial weights "
                                                               "(config key adapt.seed).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
) -> None:
    """Fit a low-rank adapter g = f + (f A) B to CSI features by descending temporal-contrastive + entropy.

    The gradient is the central finite difference of exactly the reported objective; a step is kept only
    if it does not raise the objective (the step length is halved until it does not), so the final loss is
    never above the loss at 0 steps. The final loss is recomputed at the returned weights.

    No pose gain is claimed: a lower proxy objective says nothing about pose accuracy. Measure that on
    labelled data with `rfbench score`.

    Settings come from the adapt table of the config (rfbench config show); options given here override it, and
    are checked against the same bounds.
    """
    with guard():
        from rfbench import config as C
        from rfbench.train import adapt as A

        cfg = C.load_config(config)
        cfg = C.override(cfg, {"adapt.rank": rank, "adapt.steps": steps, "adapt.learning_rate": lr,
                               "adapt.fd_step": fd_step, "adapt.temperature": temperature,
                               "adapt.entropy_weight": entropy_weight, "adapt.prototypes": prototypes,
                               "adapt.max_frames": max_frames, "adapt.seed": seed})
        s = cfg.section("adapt")
        settings = A.AdaptSettings(**{k: s[k] for k in A.AdaptSettings.__dataclass_fields__})
        with progress(settings.steps, "adapting", enabled=not json_out) as advance:
            summary = A.adapt_file(source, settings, synthetic=synthetic, max_frames=s["max_frames"], out=out,
                                   force=force, config_source=cfg.source, advance=advance)
    if json_out:
        emit_json(summary)
    else:
        _render(summary)


def _render(summary: dict) -> None:
    from rich.markup import escape

    console = stdout_console()
    console.print(f"rfbench adapt: objective {summary['loss_initial']:.6f} -> {summary['loss_final']:.6f} "
                  f"({summary['steps_accepted']} of {summary['steps_requested']} steps accepted, "
                  f"{summary['evaluations']} evaluations)")
    console.print(f"  source          {escape(summary['source'])}: {summary['frames']} frames x {summary['dims']} dims")
    console.print(f"  adapter         rank {summary['settings']['rank']}, {summary['parameters']} parameters"
                  + (f", written to {escape(summary['out'])}" if summary["out"] else ""))
    console.print(f"  final terms     temporal-contrastive {summary['temporal_contrastive_final']:.6f}, "
                  f"entropy {summary['entropy_final']:.6f} (recomputed at the returned weights)")
    for note in summary["notes"]:
        console.print(escape(note))
