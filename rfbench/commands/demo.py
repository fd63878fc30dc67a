"""``rfbench demo``: the whole pipeline on generated corpora, ending in verified, SYNTHETIC-tagged reports."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Annotated

import typer

from rfbench.commands._common import emit_json, fail, guard, stderr_console, stdout_console

COMMAND_NAME = "demo"
SIZES = ("standard", "tiny")


def demo(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for everything the demo makes.")]
    = Path("demo-out"),
    force: Annotated[bool, typer.Option("--force", help="Use a non-empty --out folder: the files an earlier demo "
                                        "wrote there (listed in its RFBENCH_DEMO.json) are replaced, nothing else "
                                        "is touched; a folder with anything else and no such list is refused.")]
    = False,
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
    with guard():
        from rfbench.errors import ValidationError

        if size not in SIZES:
            raise ValidationError(f"--size must be standard or tiny, got {size!r}")
        if seed < 0:
            raise ValidationError(f"--seed must be >= 0, got {seed}")
        with _Progress(enabled=not json_out) as bar:
            result = _run(out, force, size, seed, bar)
    result["seconds"] = round(time.perf_counter() - started, 2)
    failed = [r for r in result["reports"] if r["verify"]["status"] != "match"]
    if json_out:
        emit_json(result)
    else:
        _render(result)
    if failed:
        for r in failed:
            fail(r["verify"]["error"], 1)
        raise typer.Exit(1)


def _run(out: Path, force: bool, size: str, seed: int, bar: "_Progress") -> dict:
    from rfbench.commands.score import run_score
    from rfbench.demo import STEPS, build_inputs, demo_folder
    from rfbench.errors import VerificationError
    from rfbench.report.plots import PLOT_HINT, have_matplotlib
    from rfbench.report.verify import verify_report

    bar.start(len(STEPS))
    plots = have_matplotlib()
    reports = []
    with demo_folder(out, force) as layout:  # records every file the run writes, for the next --force
        inputs = build_inputs(layout, size=size, seed=seed, step=bar.step, advance=bar.advance_detail)
        for task, options in (("pose", inputs.pose_options), ("gesture", inputs.gesture_options)):
            bar.step(f"score {task}")
            run = run_score(**options, plots=plots)
            reports.append({"task": task, "report": str(run.out), "markdown": str(run.md_path),
                            "pictures": [str(p) for p in run.pictures], "evidence": run.report["evidence"],
                            "argv": run.report["reproducer"]["argv"], "headline": _headline(run.report)})
    bar.step("verify")

    def check(r: dict) -> dict:
        try:
            v = verify_report(r["report"])
            return {"status": "match", "compared": v.compared}
        except VerificationError as exc:
            return {"status": "mismatch", "error": str(exc)}

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(reports)) as pool:  # each re-run is its own process
        for r, v in zip(reports, pool.map(check, reports)):
            r["verify"] = v
    lay = inputs.layout
    root = lay.root
    commands = [
        ["rfbench", "parse", str(lay.widar_tree / "CSI"), "-o", str(lay.archives), "--force"],
        ["rfbench", "ingest", "widar", str(lay.widar_tree), "-o", str(lay.manifest("widar")), "--force"],
        ["rfbench", "ingest", "mmfi", str(lay.mmfi_tree), "-o", str(lay.manifest("mmfi")), "--force"],
        ["rfbench", "split", str(lay.manifest("widar")), "--protocol", "cross-room", "--test", "3", "-o",
         str(lay.split("widar")), "--force"],
        ["rfbench", "split", str(lay.manifest("mmfi")), "--protocol", "mmfi-s2", "--actions", "p3", "-o",
         str(lay.split("mmfi")), "--force"],
        ["rfbench", "audit", str(lay.split("mmfi"))],
    ]
    for r in reports:
        commands.append(r["argv"] + ["--force"])
    for r in reports:
        commands.append(["rfbench", "verify", r["report"]])
    return {"out": str(root), "size": size, "seed": seed, "evidence": "SYNTHETIC", "facts": inputs.facts,
            "plots": "written" if plots else f"skipped: {PLOT_HINT}", "reports": reports,
            "commands": [shlex.join(c) for c in commands]}


def _find(report: dict, metric: str, **spec):
    for r in report["results"]:
        if r["metric"] == metric and all(r["spec"].get(k) == v for k, v in spec.items()):
            return r
    return None


def _headline(report: dict) -> list[dict]:
    """A few numbers for the summary: (label, model, interval, baseline name, baseline value)."""
    if report["task"] == "pose":
        picks = [_find(report, "pck", normalization="hip-width", k=0.2, averaging="micro"),
                 _find(report, "mpjpe", averaging="micro")]
    else:
        picks = [_find(report, "accuracy"), _find(report, "macro-f1")]
    out = []
    for r in picks:
        if r is None:
            continue
        ci = (r.get("ci") or {}).get("model") or {}
        out.append({"label": r["label"], "model": r["model"]["value"], "low": ci.get("low"), "high": ci.get("high"),
                    "baseline": (r.get("baseline") or {}).get("value"),
                    "baseline_kind": "mean pose" if report["task"] == "pose" else "majority class"})
    return out


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
                             f"{g['mmfi']['frames']} WiFi frames"))
    p = f["parse"]
    rows.append(("parse", f"{p['files']} logs, {p['records']} CSI records → "
                          f"{escape(str(root / 'archives' / 'widar'))}/"))
    i = f["ingest"]
    rows.append(("ingest", f"widar-manifest.json: {i['widar']['recordings']} recordings, {i['widar']['problems']} "
                           f"problems; mmfi-manifest.json: {i['mmfi']['recordings']} recordings, "
                           f"{i['mmfi']['problems']} problems"))
    for name in ("widar", "mmfi"):
        s = f["split"][name]
        rows.append(("split" if name == "widar" else "",
                     f"{name}-split.json: {s['protocol']}, test = {s['held_out']} ({s['train']} train / {s['test']} "
                     f"test recordings), audit passed"))
    rows.append(("train", f"pose: {f['pose']['model']} ({f['pose']['train_frames']} training frames)"))
    rows.append(("", f"gesture: {f['gesture']['model']} ({f['gesture']['train_recordings']} training recordings)"))
    for r in result["reports"]:
        for n, h in enumerate(r["headline"]):
            rows.append((f"score {r['task']}" if n == 0 else "",
                         f"{escape(h['label'])}: model {_num(h['model'])} [{_num(h['low'])}, {_num(h['high'])}], "
                         f"{h['baseline_kind']} {_num(h['baseline'])}"))
    for n, r in enumerate(result["reports"]):
        v = r["verify"]
        rows.append(("verify" if n == 0 else "",
                     f"[green]MATCH[/] {escape(r['report'])}: {v['compared']} values identical on re-run"
                     if v["status"] == "match" else f"[bold red]MISMATCH[/] {escape(r['report'])}"))
    width = max(len(a) for a, _ in rows) + 2
    for step, text in rows:  # plain lines: a terminal wraps them, a file or pipe keeps them whole
        console.print(f"[bold]{step.ljust(width)}[/]{text}" if step else " " * width + text)
    console.print("[dim]The gesture CSI is generated without any gesture in it, so the classifier can only match "
                  "its baselines by chance; the pose CSI is a noisy linear function of the pose, so the model "
                  "beats the mean pose.[/]")
    if result["plots"] != "written":
        console.print(f"plots {escape(result['plots'])}")
    console.print()
    console.print(f"[bold]Where everything is[/] ({escape(str(root))}/):")
    for line in _tree(root, result):
        console.print("  " + escape(line), soft_wrap=True)
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


def _tree(root: Path, result: dict) -> list[str]:
    rows = [
        ("data/widar/CSI/", "generated Widar3.0-like tree of Intel 5300 logs (<date>/<user>/*.dat)"),
        ("data/mmfi/", "generated MM-Fi-like tree (E0x/Syy/Azz/wifi-csi/*.mat, ground_truth.npy)"),
        ("archives/widar/", "one CSI archive (.npz) per log, from rfbench parse"),
        ("widar-manifest.json", "rfbench ingest widar"),
        ("mmfi-manifest.json", "rfbench ingest mmfi"),
        ("widar-split.json", "rfbench split: cross-room, room 3 held out, with its audit"),
        ("mmfi-split.json", "rfbench split: mmfi-s2 (cross-subject), with its audit"),
        ("RFBENCH_DEMO.json", "the list of every file the demo wrote here: --force replaces exactly these"),
    ]
    for r in result["reports"]:
        folder = Path(r["report"]).parent.name
        inputs = "pred, gt, groups, train_gt, train_groups" if r["task"] == "pose" else \
            "scores, gt, groups, train_gt, train_groups (+ names.txt)"
        rows.append((f"{folder}/*.npy", f"{r['task']} inputs: {inputs}"))
        rows.append((f"{folder}/report.json", f"the {r['task']} report ({r['evidence']}); report.md renders it"))
        for pic in r["pictures"]:
            rows.append((f"{folder}/{Path(pic).name}", "picture, embedded in report.md"))
    width = max(len(a) for a, _ in rows)
    return [f"{a.ljust(width)}  {b}" for a, b in rows]


class _Progress:
    """One bar over the demo's steps, on a terminal's stderr only; the current step (and file count) as text."""

    def __init__(self, enabled: bool):
        import sys

        self.enabled = enabled and sys.stderr.isatty()
        self._bar = None
        self._task = None
        self._name = ""
        self._count = 0

    def __enter__(self):
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=stderr_console(), transient=True)
            self._bar.__enter__()
        return self

    def start(self, total: int) -> None:
        if self._bar is not None:
            self._task = self._bar.add_task("starting", total=total)

    def step(self, name: str) -> None:
        if self._bar is None:
            return
        if self._name:
            self._bar.advance(self._task)
        self._name, self._count = name, 0
        self._bar.update(self._task, description=name)

    def advance_detail(self, n: int = 1) -> None:
        if self._bar is None:
            return
        self._count += n
        self._bar.update(self._task, description=f"{self._name} ({self._count})")

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.__exit__(*exc)
        return False
