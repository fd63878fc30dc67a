"""``rfbench verify``: re-run a report's reproducer and compare every number exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from rfbench.commands._common import emit_json, guard, stdout_console, with_settings
from rfbench.report.verify import Limits

COMMAND_NAME = "verify"


def _verify(
    report: Annotated[Path, typer.Argument(help="A report.json written by rfbench score.", show_default=False)],
    root: Annotated[Optional[Path], typer.Option("--root", help="The verify root: inputs are read only from "
                                                 "under this folder (default: the report's folder). E.g. the "
                                                 "demo's folder, whose reports use the split beside them.")]
    = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")] = False,
    **limit_values,
) -> None:
    """Re-run REPORT's reproducer and compare every number, hash and setting exactly.

    Inputs are read only from under the verify root (--root; default the report's folder): paths are recorded
    relative to the report, symlinks are resolved and must stay under the root, and only regular files are
    read, each size-checked before it is hashed. The re-run is the installed rfbench (python -I -m rfbench),
    started in an empty temporary folder in its own process group under --timeout, --cpu-seconds and
    --memory-mb, and killed if verify is stopped; nothing found beside the report is ever imported. It prints
    to a pipe and writes no file. report.md must render from report.json. Exit 0: identical. Exit 1: an input
    changed, the re-run failed, a value differs, or report.md was edited (each difference is listed). Exit 2:
    the report is unreadable or malformed, has no reproducer, or an input is missing, outside the root or not
    a regular file.
    """
    from rfbench.errors import VerificationError

    with guard():
        from rfbench.report.verify import rerun_guard, verify_report

        limits = Limits(**limit_values)
        try:
            with rerun_guard():
                result = verify_report(report, root=root, limits=limits)
        except VerificationError as exc:
            _mismatch(report, exc, json_out)
            raise
    if json_out:
        emit_json(result.to_dict())
        return
    console = stdout_console()
    from rich.markup import escape

    md = {"identical": "; report.md renders from it", "absent": ""}.get(result.markdown, "")
    console.print(f"[bold green]MATCH[/] {escape(str(report))}: {result.compared} values identical on re-run{md}")
    for note in result.notes:
        console.print(f"[dim]note:[/] {escape(note)}")




def verify(**values) -> None:
    _verify(**values)


with_settings(verify, _verify, Limits)

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

