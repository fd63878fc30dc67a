"""``rfbench demo``: the whole pipeline on generated corpora, ending in verified, SYNTHETIC-tagged reports."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Annotated

import typer

from rfbench.commands._common import emit_json, fail, guard, stdout_console
from rfbench.commands._progress import Bar

COMMAND_NAME = "demo"
SIZES = ("standard", "tiny")


def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for everything the demo makes.")]
    = Path("demo-out"),
    force: Annotated[bool, typer.Option("--force", help="Use a non-empty --out folder: the demo's own files there "
                                        "are replaced, nothing else is touched.")] = False,
    size: Annotated[str, typer.Option("--size", help="Corpus size: standard, or tiny (seconds; for tests).")]
    = "standard",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the generated corpora (>= 0).")] = 0,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout instead of the "
                                           "summary.")] = False,
) -> None:
    """Run the whole pipeline on generated data and show where everything is.

    Generates a Widar3.0-like tree of real Intel 5300 logs and an MM-Fi-like tree; parses the logs
    (rfbench parse); ingests both trees (rfbench ingest); splits them leakage-free (cross-room holding out
    room 3; MM-Fi's cross-subject setting mmfi-s2) with the audit; trains a ridge pose model and a
    nearest-centroid gesture classifier on the train side only; scores both beside their training-split
    baselines through rfbench score (pictures included when matplotlib is installed); and re-runs every
    report with rfbench verify.

    Everything is tagged SYNTHETIC: it shows how the pipeline works, not how well WiFi sensing works. Exit 0
    when every report verifies, 1 when one does not, 2 on bad usage (an existing non-empty --out needs
    --force).
    """
    started = time.perf_counter()
    from rfbench.commands._progress import signals_as_interrupt

    with guard(), signals_as_interrupt():  # SIGTERM stops it as Ctrl-C does: temporaries removed
        from rfbench.errors import ValidationError

        if size not in SIZES:
            raise ValidationError(f"--size must be standard or tiny, got {size!r}")
        if seed < 0:
            raise ValidationError(f"--seed must be >= 0, got {seed}")
        from rfbench.demo import run_demo

        with Bar("starting", enabled=not json_out) as bar:
            result = run_demo(out, force=force, size=size, seed=seed, progress=bar)
    result["seconds"] = round(time.perf_counter() - started, 2)
    failed = [r for r in result["reports"] if r["verify"]["status"] != "match"]
    if result.get("robustness") is not None and result["robustness"]["verify"]["status"] != "match":
        failed.append(result["robustness"])
    if json_out:
        emit_json(result)
    else:
        _render(result)
    if failed:
        for r in failed:
            fail(r["verify"]["error"], 1)
        raise typer.Exit(1)


def _num(x) -> str:
    return "—" if x is None else (x if isinstance(x, str) else f"{x:.3f}")


def _render(result: dict) -> None:
    from rich.markup import escape

    console = stdout_console()
    f = result["facts"]
    root = Path(result["out"])
    console.print(f"[bold]rfbench demo[/] ({result['size']}, seed {result['seed']}, {result['seconds']:.1f} s): "
                  f"[bold yellow]SYNTHETIC[/] — generated data; it shows the pipeline working, not WiFi sensing")
    rows: list[tuple[str, str]] = []
    g = f["generated"]
    rows.append(("generate", f"Widar-like tree: {g['widar']['recordings']} recordings, {g['widar']['files']} bfee "
                             f"logs; MM-Fi-like tree: {g['mmfi']['recordings']} recordings, "
                             f"{g['mmfi']['frames']} WiFi frames"
                             + (f"; BVP tree: {g['bvp']['recordings']} profiles" if "bvp" in g else "")))
    p = f["parse"]
    rows.append(("parse", f"{p['files']} logs, {p['records']} CSI records → "
                          f"{escape(str(root / 'archives' / 'widar'))}/"))
    i = f["ingest"]
    rows.append(("ingest", f"widar-manifest.json: {i['widar']['recordings']} recordings, {i['widar']['problems']} "
                           f"problems; mmfi-manifest.json: {i['mmfi']['recordings']} recordings, "
                           f"{i['mmfi']['problems']} problems"
                           + (f"; bvp-manifest.json: {i['bvp']['recordings']} recordings, {i['bvp']['problems']} "
                              "problems" if "bvp" in i else "")))
    for name in ("widar", "mmfi", "bvp"):
        s = f["split"].get(name)
        if s is None:
            continue
        gestures = f", gestures {s['gestures']}" if s.get("gestures") else ""
        rows.append(("split" if name == "widar" else "",
                     f"{name}-split.json: {s['protocol']}, test = {s['held_out']}{gestures} ({s['train']} train / "
                     f"{s['test']} test recordings), audit passed"))
    wi = f["windows"]
    rows.append(("windows", f"mmfi: {wi['mmfi']['train']} train / {wi['mmfi']['test']} test frames; widar: "
                            f"{wi['widar']['train']} train / {wi['widar']['test']} test recordings"
                            + (f"; bvp: {wi['bvp']['train']} train / {wi['bvp']['test']} test recordings (T_max "
                               f"{wi['bvp']['t_max']})" if "bvp" in wi else "")
                            + f" → {escape(str(root / 'windows'))}/"))
    rows.append(("train", f"pose: {f['pose']['model']} ({f['pose']['train_frames']} training frames)"))
    rows.append(("", f"gesture: {f['gesture']['model']} ({f['gesture']['train_recordings']} training recordings)"))
    if "bvp" in f:
        rows.append(("", f"BVP: {f['bvp']['model']} ({f['bvp']['train_recordings']} training recordings)"))
    pr = f["predict"]
    rows.append(("predict", "the models exported to ONNX and run over the test windows by rfbench predict"
                 if pr["onnx"] else escape(pr["note"])))
    for r in result["reports"]:
        for n, h in enumerate(r["headline"]):
            rows.append((f"score {r.get('name', r['task'])}" if n == 0 else "",
                         f"{escape(h['label'])}: model {_num(h['model'])} [{_num(h['low'])}, {_num(h['high'])}], "
                         f"{h['baseline_kind']} {_num(h['baseline'])}"))
    for n, r in enumerate(result["reports"]):
        v = r["verify"]
        rows.append(("verify" if n == 0 else "",
                     f"[green]MATCH[/] {escape(r['report'])}: {v['compared']} values identical on re-run"
                     if v["status"] == "match" else f"[bold red]MISMATCH[/] {escape(r['report'])}"))
    sweep = result.get("robustness")
    if sweep is not None:
        levels = "; ".join(f"{c} " + ", ".join(f"{sv}: {_num(v)}" for sv, v in lv) for c, lv in sweep["levels"].items())
        v = sweep.get("verify") or {}
        checked = "[green]MATCH[/]" if v.get("status") == "match" else "[bold red]MISMATCH[/]"
        rows.append(("robustness", f"pose {escape(sweep['label'].split(' h36m17')[0])}: clean {_num(sweep['clean'])}; "
                                   f"{escape(levels)}; mCE vs mean pose {_num(sweep['mce_vs_baseline'])}; "
                                   f"summary.json {checked}"))
    width = max(len(a) for a, _ in rows) + 2
    for step, text in rows:  # plain lines: a terminal wraps them, a file or pipe keeps them whole
        console.print(f"[bold]{step.ljust(width)}[/]{text}" if step else " " * width + text)
    console.print("[dim]The gesture CSI is generated without any gesture in it, so the classifier can only match "
                  "its baselines by chance; the pose CSI is a noisy linear function of the pose, so the model "
                  "beats the mean pose; the BVP profiles follow a path fixed by the gesture, so the BVP model "
                  "beats the majority class.[/]")
    if result["plots"] != "written":
        console.print(f"plots {escape(result['plots'])}")
    console.print()
    console.print(f"[bold]Where everything is[/] ({escape(str(root))}/):")
    width = max(len(a) for a, _ in result["tree"])
    for a, b in result["tree"]:
        console.print("  " + escape(f"{a.ljust(width)}  {b}"), soft_wrap=True)
    console.print()
    console.print("[bold]Re-run any step yourself[/] (from this folder; --force replaces the file the demo wrote):")
    for c in result["commands"]:
        console.print(escape(_wrapped(c)), soft_wrap=True)


def _wrapped(command: str, width: int = 100) -> str:
    """A long command as shell lines continued with a backslash, each option kept with its value."""
    words = shlex.split(command)
    parts: list[str] = []
    i = 0
    while i < len(words):
        part = [words[i]]
        if words[i].startswith("-") and i + 1 < len(words) and not words[i + 1].startswith("-"):
            part.append(words[i + 1])
            i += 1
        parts.append(shlex.join(part))
        i += 1
    lines, line = [], "  " + parts[0]
    for part in parts[1:]:
        if len(line) + 1 + len(part) > width - 2:
            lines.append(line + " \\")
            line = "      " + part
        else:
            line += " " + part
    return "\n".join(lines + [line])
