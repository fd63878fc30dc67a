"""``rfbench audit SPLIT [--manifest M]``: re-check a split for leaks; exit 1 on any."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from rfbench.commands._common import emit_json, fail, guard, stdout_console


def audit(
    split_file: Annotated[Path, typer.Argument(
        help="A split file from `rfbench split`, or a plain JSON {\"train\": [...], \"test\": [...]} of recording "
             "ids (or {id, start, stop} windows) made elsewhere.", show_default=False)],
    manifest: Annotated[Optional[Path], typer.Option(
        "--manifest", "-m", help="Manifest the split refers to (default: the one named in the split file; "
                                 "required for a plain file).")] = None,
    claim: Annotated[Optional[List[str]], typer.Option(
        "--claim", help="Also require this domain key disjoint (repeatable): subject, room, location, "
                        "orientation, …")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout instead of text.")] = False,
) -> None:
    """Re-check a split for leaks; exit 1 naming the offending groups.

    An rfbench split file is re-checked against its manifest (whose sha256 the split recorded): its sides must
    be exactly what its protocol, seed and parameters give (protocol-reproduces), no recording and no window
    may be on both sides, and every domain the protocol claims — taken from rfbench's protocol table, never from
    the file — must be disjoint, plus any --claim. A plain file is audited for recordings, windows and the
    --claim keys only.

    Exit 0 when every check passes, 1 on any leak (naming the offending groups), 2 on bad input.
    """
    with guard():
        from rfbench.protocols.audit import audit_split

        outcome = audit_split(split_file, manifest, claims=claim or ())
    result = outcome.result
    payload = {"split": str(split_file), "manifest": str(outcome.manifest), "plain": outcome.plain,
               "protocol": outcome.protocol, "leakage_prone": outcome.leakage_prone, **result.to_dict()}
    if json_out:
        emit_json(payload)
    else:
        from rich.markup import escape

        console = stdout_console()
        for check in result.checks:
            mark = "[green]PASS[/]" if check["passed"] else "[bold red]FAIL[/]"
            console.print(f"{mark} {check['name']}: {escape(check['detail'])}")
        shared = [s for s in result.shared if s["shared"]]
        if shared:
            console.print("not claimed, shared by both sides: " + ", ".join(
                f"{escape(str(s['key']))} {s['shared']}/{s['values']}" for s in shared))
        if outcome.leakage_prone:
            console.print(f"[bold yellow]protocol {escape(str(outcome.protocol))} is leakage-prone[/]")
        console.print("[green]audit passed[/]" if result.passed else "[bold red]audit FAILED[/]")
    if not result.passed:
        raise fail(str(result.error()), 1)
