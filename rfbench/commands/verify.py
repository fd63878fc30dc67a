"""``rfbench verify``: re-run a report's reproducer and compare every number exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from rfbench.commands._common import emit_json, guard, stdout_console

COMMAND_NAME = "verify"


def verify(
    report: Annotated[Path, typer.Argument(help="A report.json written by rfbench score.", show_default=False)],
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
) -> None:
    """Re-run REPORT's reproducer and compare every number, hash and setting exactly.

    The inputs are looked up beside the report (paths are recorded relative to its folder) and must still
    have their recorded sha256. The re-run prints to a pipe and writes no file, so the report is never
    overwritten. Exit 0: identical. Exit 1: an input changed, the re-run failed, or a value differs (each
    difference is listed). Exit 2: the report is unreadable or malformed, has no reproducer, or an input is
    missing.
    """
    from rfbench.errors import VerificationError

    with guard():
        from rfbench.report.verify import verify_report

        try:
            result = verify_report(report)
        except VerificationError as exc:
            _mismatch(report, exc, json_out)
            raise
    if json_out:
        emit_json(result.to_dict())
        return
    console = stdout_console()
    console.print(f"[bold green]MATCH[/] {report}: {result.compared} values identical on re-run")
    for note in result.notes:
        console.print(f"[dim]note:[/] {note}")


def _mismatch(report: Path, exc, json_out: bool) -> None:
    if json_out:
        emit_json({"report": str(report), "status": "mismatch", "error": str(exc), "differences": exc.differences})
        return
    from rich.markup import escape
    from rich.table import Table

    console = stdout_console()
    if not console.is_terminal:
        console.width = 200
    table = Table(title=f"rfbench verify {escape(str(report))}: MISMATCH", title_justify="left")
    table.add_column("where")
    table.add_column("in the report")
    table.add_column("on re-run")
    for d in exc.differences[:200]:
        table.add_row(escape(str(d["path"])), escape(repr(d["report"])), escape(repr(d["rerun"])))
    console.print(table)
    if len(exc.differences) > 200:
        console.print(f"... and {len(exc.differences) - 200} more")

