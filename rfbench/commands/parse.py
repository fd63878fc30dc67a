"""``rfbench parse``: Intel 5300 bfee logs to CSI archives (.npz)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from rfbench.commands._common import emit_json, fail, guard, progress, stdout_console


def parse(
    inputs: Annotated[
        List[Path],
        typer.Argument(help="bfee log files, or folders searched recursively for *.dat files.", show_default=False),
    ],
    out: Annotated[
        Optional[Path],
        typer.Option("--out", "-o", help="Folder for the .npz archives (default: beside each input)."),
    ] = None,
    scaled: Annotated[bool, typer.Option("--scaled", help="Also store csi_scaled (complex128, absolute units).")] = False,
    raw_int8: Annotated[
        bool, typer.Option("--raw-int8", help="Store csi_int8 (records, 30, Nrx, Ntx, 2) instead of complex64 csi.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout instead of tables.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing .npz outputs.")] = False,
) -> None:
    """Parse Intel 5300 CSI logs exactly like the reference MATLAB tools, one .npz per input.

    Each archive holds plain NumPy arrays (load with numpy.load alone): csi (records, 30, Nrx, Ntx)
    complex64 (or csi_int8 with --raw-int8), the header fields timestamp_low, bfee_count, nrx, ntx, rssi_a,
    rssi_b, rssi_c, noise, agc, antenna_sel, rate, perm (records, 3, 0-based), perm_applied, and csi_scaled
    with --scaled. Corrupt records are skipped and counted by reason, never fatal. Inputs are independent:
    one that cannot be read or holds no valid record is listed and the exit code is 2.
    """
    with guard():
        from rfbench.io import parse_files

        files = parse_files.expand_inputs(inputs)
        if out is not None and out.exists() and not out.is_dir():
            raise fail(f"--out {out} exists and is not a folder")
        results = []
        seen: set = set()
        with progress(len(files), "parsing", enabled=not json_out) as advance:
            for path, found_under in files:
                results.append(parse_files.parse_one(path, found_under, out_dir=out, scaled=scaled,
                                                     raw_int8=raw_int8, force=force, outputs_seen=seen))
                advance()
    failed = [r for r in results if r["error"] is not None]
    if json_out:
        emit_json({"files": results, "parsed": len(results) - len(failed), "failed": len(failed)})
    else:
        _render(results)
    if failed:
        if not json_out:
            for r in failed:
                fail(f"{r['input']}: {r['error']}", 2)
        raise typer.Exit(2)


def _render(results: list[dict]) -> None:
    from rich.table import Table

    table = Table(title="rfbench parse", title_justify="left", show_lines=False)
    table.add_column("file", overflow="fold")
    table.add_column("records", justify="right")
    table.add_column("shapes")
    table.add_column("skipped")
    table.add_column("non-CSI")
    table.add_column("span s", justify="right")
    table.add_column("Hz", justify="right")
    for r in results:
        s = r.get("summary") or {}
        if r["error"] is not None:
            table.add_row(str(r["input"]), "[red]failed[/]", "-", "-", "-", "-", "-")
            continue
        skipped = "\n".join(f"{k} {v}" for k, v in s["skipped"].items() if v) or "-"
        rate = s.get("packet_rate_hz")
        table.add_row(
            str(r["input"]),
            str(s["records"]),
            "\n".join(f"{k}: {v}" for k, v in s["shapes"].items()),
            skipped,
            "\n".join(f"{k}: {v}" for k, v in s["non_csi"].items()) or "-",
            f"{s['time_span_s']:.3f}",
            f"{rate:.1f}" if rate else "-",
        )
    console = stdout_console()
    console.print(table)
    for r in results:
        if r["output"]:
            console.print(f"wrote {r['output']}", soft_wrap=True)
