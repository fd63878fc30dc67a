"""``rfbench ingest widar|mmfi ROOT``: walk a dataset tree and write its manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rfbench.commands._common import emit_json, guard, progress, stdout_console

COMMAND_NAME = "ingest"
_CONTEXT = {"help_option_names": ["-h", "--help"]}

ingest = typer.Typer(
    help=(
        "Walk a dataset tree and write its manifest (recordings, files, frame counts, domain metadata, problems). "
        "Problems in the tree (odd names, empty files, unknown folders, missing receivers) are listed, never fatal."
    ),
    context_settings=_CONTEXT,
    no_args_is_help=True,
    rich_markup_mode="rich",
)

_Out = Annotated[Path, typer.Option("--out", "-o", help="Manifest file to write.")]
_Json = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout instead of tables.")]
_Force = Annotated[bool, typer.Option("--force", help="Overwrite an existing manifest.")]


@ingest.command("widar", context_settings=_CONTEXT)
def widar(
    root: Annotated[Path, typer.Argument(help="Widar3.0 folder holding CSI/ (or the CSI folder itself).",
                                         show_default=False)],
    out: _Out = Path("manifest.json"),
    workers: Annotated[Optional[int], typer.Option("--workers", min=1,
                                                   help="Threads parsing files (default: every core).")] = None,
    receivers: Annotated[Optional[int], typer.Option(
        "--receivers", min=1, max=6,
        help="Receivers r1…rN every recording should have (default: every receiver seen in the tree).")] = None,
    json_out: _Json = False,
    force: _Force = False,
) -> None:
    """Ingest a Widar3.0 CSI tree (CSI/<date>/<user>/<user>-<gesture>-<location>-<orientation>-<repetition>-r<N>.dat).

    The date folder gives the room (suffixed folders such as 20181205_2 included) and the gesture's name (numbers
    mean different gestures on different dates; the manifest keeps number, date and name). The receiver files
    of one recording are grouped; every file is parsed (packet counts, skipped records) in parallel.
    """
    with guard():
        from rfbench.datasets import widar as widar_mod
        from rfbench.io.files import check_writable

        check_writable(out, force)
        bar = _Bar(not json_out)
        with bar:
            manifest = widar_mod.ingest(root, workers=workers,
                                        receivers_expected=range(1, receivers + 1) if receivers else None,
                                        progress=bar.advance, on_total=bar.start)
        manifest.write(out, force=force)
    _report(manifest, out, json_out)


@ingest.command("mmfi", context_settings=_CONTEXT)
def mmfi(
    root: Annotated[Path, typer.Argument(help="MM-Fi folder holding E01 … E04.", show_default=False)],
    out: _Out = Path("manifest.json"),
    verify_frames: Annotated[bool, typer.Option(
        "--verify-frames", help="Also open every WiFi frame (.mat) and check CSIamp is (3, 114, 10); "
                                "needs SciPy: pip install 'rfbench[mat]'.")] = False,
    json_out: _Json = False,
    force: _Force = False,
) -> None:
    """Ingest an MM-Fi tree: E0x/Syy/Azz/{wifi-csi/frameNNN.mat, ground_truth.npy}.

    One recording per E/S/A folder (id E01/S01/A01; room = environment). Checks ground_truth.npy is
    (frames, 17, 3) and finite, counts WiFi frames and empty (0-byte) frame files. Needs no SciPy unless
    --verify-frames.
    """
    with guard():
        from rfbench.datasets import mmfi as mmfi_mod
        from rfbench.io.files import check_writable

        check_writable(out, force)
        bar = _Bar(not json_out)
        with bar:
            manifest = mmfi_mod.ingest(root, verify_frames=verify_frames, progress=bar.advance, on_total=bar.start)
        manifest.write(out, force=force)
    _report(manifest, out, json_out)


class _Bar:
    """A progress bar whose total is known only once the tree has been walked."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._ctx = None
        self._advance = None

    def __enter__(self):
        return self

    def start(self, total: int) -> None:
        self._ctx = progress(total, "ingesting", enabled=self.enabled)
        self._advance = self._ctx.__enter__()

    def advance(self, n: int = 1) -> None:
        if self._advance is not None:
            self._advance(n)

    def __exit__(self, *exc):
        if self._ctx is not None:
            self._ctx.__exit__(*exc)
        return False


def _report(manifest, out: Path, json_out: bool) -> None:
    recs = manifest.recordings
    summary = {
        "manifest": str(out),
        "dataset": manifest.dataset,
        "root": manifest.root,
        "synthetic": manifest.synthetic,
        "recordings": len(recs),
        "files": sum(len(r["files"]) for r in recs),
        "frames": sum(r["frames"] for r in recs),
        "problems": manifest.problems,
    }
    if json_out:
        emit_json(summary)
        return
    from rich.markup import escape
    from rich.table import Table

    console = stdout_console()
    keys = [k for k in ("room", "subject", "location", "orientation", "gesture", "action") if any(k in r for r in recs)]
    table = Table(title=f"rfbench ingest {manifest.dataset}" + (" [SYNTHETIC]" if manifest.synthetic else ""),
                  title_justify="left")
    table.add_column("key")
    table.add_column("values", justify="right")
    table.add_column("recordings per value")
    for key in keys:
        counts: dict = {}
        for r in recs:
            counts[r.get(key)] = counts.get(r.get(key), 0) + 1
        shown = sorted(counts.items(), key=lambda kv: (kv[0] is None, str(kv[0])))
        text = ", ".join(f"{'(none)' if v is None else v}: {n}" for v, n in shown[:12]) + (" …" if len(shown) > 12 else "")
        table.add_row(key, str(len(counts)), escape(text))
    console.print(table)
    console.print(f"{summary['recordings']} recordings, {summary['files']} files, {summary['frames']} frames "
                  f"→ {escape(str(out))}")
    if manifest.problems:
        console.print(f"[yellow]{len(manifest.problems)} problem(s)[/] (listed in the manifest too):")
        for p in manifest.problems:
            console.print(f"  {escape(p['path'])}: {escape(p['reason'])}")
    else:
        console.print("no problems found")
