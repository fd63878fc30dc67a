"""``rfbench robustness MODEL.onnx --split SPLIT --score-like REPORT -o DIR``: a model's score under seeded CSI
corruptions × severities × seeds, each cell a verifiable report, summarised in DIR/summary.json.

The sweep's options are the fields of :class:`rfbench.report.robustness_settings.RobustnessSettings`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rfbench.commands._common import emit_json, guard, stdout_console, with_settings
from rfbench.report.robustness_settings import RobustnessSettings


def _robustness(
    model: Annotated[Path, typer.Argument(help="The ONNX model the score-like report scored.", show_default=False)],
    split: Annotated[Path, typer.Option("--split", help="The split whose test side is swept (the one the score-like "
                                        "report's windows were built from).", show_default=False)],
    score_like: Annotated[Path, typer.Option("--score-like", help="A report of rfbench score --rows of this model: "
                                             "the window, predict and score settings of every cell come from it.",
                                             show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder of the sweep: `clean/`, `cells/<corruption>-"
                                      "<severity>-seed<seed>/`, summary.json and a picture per corruption.",
                                      show_default=False)],
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, max=64, help="Threads reading dataset files "
                                                   "(default: one per core, at most 4); results do not depend on "
                                                   "it.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a sweep written in DIR before: only its own files, "
                                        "each still as its summary records them, are replaced or removed; anything "
                                        "else in the way (a link, a changed file) is refused.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object on stdout.")] = False,
    **options,
) -> None:
    """Sweep seeded CSI corruptions × severities × seeds over a split's test side and score each cell.

    The clean cell runs first, then every (corruption, severity, seed): rfbench windows with --corrupt and
    --corrupt-seed, rfbench predict (the model read once, X memory-mapped batch by batch) and rfbench score, each
    into its own folder, each report verifiable by rfbench verify like any other. The dataset files are read,
    checked and parsed once, by the clean run, which keeps what it decoded in a temporary folder inside DIR
    (removed at the end); every cell is built from that one reading, byte for byte what rfbench windows
    --corrupt writes alone. DIR/summary.json
    (rfbench.robustness/1) lists every cell (corruption, severity, seed, report, sha256, the first result's value
    and interval, its drop from clean with a paired cluster-bootstrap interval), each corruption's corruption
    error against the baseline (and, with --reference, CE and relative CE against a reference sweep), their means
    (mCE), the command that reproduces it, and the cell reports' evidence tag (SYNTHETIC when any is, MEASURED
    only when every one is) and warnings (layout not verified, partial scoring or shared files allowed), which
    the output shows first. rfbench verify DIR/summary.json checks the cells' hashes (and
    re-runs cells on request). The corruptions and severities are defined in docs/robustness-suite.md.
    """
    with guard():
        from rfbench._process import collector_paused, load_kernels
        from rfbench.commands._progress import Bar, signals_as_interrupt
        from rfbench.report.robustness import run_robustness

        settings = RobustnessSettings.from_cli(**options)
        settings.cells()
        load_kernels()
        bar = Bar("robustness", enabled=not json_out)
        with bar, signals_as_interrupt(), collector_paused():
            sweep = run_robustness(model, split, score_like, out, settings, force=force, workers=workers,
                                   on_total=bar.start, advance=bar.step)
    if json_out:
        emit_json(sweep.summary)
        return
    _render(sweep)


def _fmt(v) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _render(sweep) -> None:
    from rich.markup import escape

    from rfbench.report.robustness import evidence_lines

    s = sweep.summary
    console = stdout_console()
    console.print(escape(f"rfbench robustness: {s['metric']['label']} ({s['task']}), {len(s['cells'])} cell(s) + "
                         f"clean"))
    for kind, text in evidence_lines(s):  # what the numbers are, before any number
        console.print(escape(f"{kind.capitalize()}: {text}"))
    clean = s["clean"]["model"]
    console.print(escape(f"clean        {_fmt(clean['value'])} [{_fmt(clean['low'])}, {_fmt(clean['high'])}]; "
                         f"baseline {_fmt(s['baseline']['value'])}"))
    for item in s["corruptions"]:
        values = ", ".join(f"{lv['severity']}: {_fmt(lv['value'])}" for lv in item["levels"])
        extra = "" if item["ce"] is None else f", CE {_fmt(item['ce'])}, relative CE {_fmt(item['relative_ce'])}"
        console.print(escape(f"{item['corruption']:<19}{values} (CE vs baseline {_fmt(item['ce_vs_baseline'])}"
                             f"{extra})"))
    line = f"mCE vs baseline {_fmt(s['mce_vs_baseline'])}"
    if s["mce"] is not None:
        line += f"; mCE {_fmt(s['mce'])}, relative mCE {_fmt(s['relative_mce'])} vs the reference"
    console.print(escape(line))
    console.print(escape(f"wrote {sweep.path}" + (f" and {len(sweep.pictures)} picture(s)" if sweep.pictures else "")
                         + f"; check with: rfbench verify {sweep.path}"))


def robustness(**values) -> None:
    _robustness(**values)


with_settings(robustness, _robustness, RobustnessSettings)
