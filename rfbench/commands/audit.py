"""``rfbench audit SPLIT [--manifest M]``: re-check a split for leaks; exit 1 on any."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from rfbench.commands._common import emit_json, fail, guard, stderr_console, stdout_console


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

    Checks: no recording on both sides, no overlapping windows across sides, and every claimed domain (the split
    file's own claims plus --claim) disjoint.

    Exit 0 when every check passes, 1 on any leak (naming the offending groups), 2 on bad input.
    """
    with guard():
        from rfbench.datasets.manifest import read_manifest
        from rfbench.errors import ValidationError
        from rfbench.io.files import check_schema, read_json, sha256_file
        from rfbench.protocols.leakage import audit_document

        doc = read_json(split_file)
        plain = "schema" not in doc
        if not plain:
            check_schema(doc, "split", str(split_file))
        if manifest is None:
            ref = doc.get("manifest")
            if plain or not isinstance(ref, dict) or not isinstance(ref.get("path"), str):
                raise ValidationError(f"{split_file}: names no manifest; pass --manifest MANIFEST")
            manifest = split_file.parent / ref["path"]
        m = read_manifest(manifest)
        matches = None
        ref = doc.get("manifest") if not plain else None
        if isinstance(ref, dict) and isinstance(ref.get("sha256"), str):
            matches = sha256_file(manifest)[0] == ref["sha256"]
        result = audit_document(doc, m.table(), claims=claim or (), where=str(split_file))
    if matches is False:
        stderr_console().print(f"[yellow]warning:[/] {manifest} differs from the manifest the split was made "
                               "from (sha256); audited against the given one")
    payload = {"split": str(split_file), "manifest": str(manifest), "manifest_matches": matches,
               "plain": plain, "leakage_prone": doc.get("leakage_prone"), **result.to_dict()}
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
                f"{s['key']} {s['shared']}/{s['values']}" for s in shared))
        if doc.get("leakage_prone"):
            console.print("[bold yellow]this split is tagged leakage-prone[/]")
        console.print("[green]audit passed[/]" if result.passed else "[bold red]audit FAILED[/]")
    if not result.passed:
        raise fail(str(result.error()), 1)
